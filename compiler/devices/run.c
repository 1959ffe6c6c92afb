/* run.c: whole-array inputs and outputs, the devices' common ground, and
 * the comparison of a device's results with the float64 reference. */
#include "compiler/devices/run.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/check/draw.h"
#include "compiler/util/rng.h"

static void *xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n ? n : 1, sz ? sz : 1);
	if (!p)
		abort();
	return p;
}

/* ---- storage ---- */

size_t run_kind_size(TyKind k)
{
	switch (k) {
	case TY_BOOL: case TY_F8E4M3: return 1;
	case TY_F16: case TY_BF16: return 2;
	case TY_I32: case TY_F32: return 4;
	default: return 8;
	}
}

size_t run_thread_bytes(const Carrier *c)
{
	const Decl *g[] = {c->row, c->col, c->elem, c->state};
	const int ng[] = {c->nrow, c->ncol, c->nelem, c->nstate};
	size_t bytes = 0;
	for (int k = 0; k < 4; k++)
		for (int f = 0; f < ng[k]; f++) {
			TyKind t = g[k][f].ty.kind;
			bytes += (size_t)spec_decl_width(&g[k][f]) * (t == TY_F64 || t == TY_I64 ? 8 : 4);
		}
	return bytes;
}

int run_attn_rows(int *rows, int *heads, int kv_heads, char *msg, size_t n)
{
	int g = *heads / kv_heads;
	if ((long long)*rows * g > INT_MAX)
		return snprintf(msg, n, "%d rows of %d query heads a key/value head: a run of over 2^31 - 1 rows, which the "
				   "kernels and a grid's x count in 32 bits",
				*rows, g),
		       -1;
	*rows *= g, *heads = kv_heads;
	return 0;
}

int run_thread_fits(const Carrier *c, char *msg, size_t n)
{
	size_t bytes = run_thread_bytes(c);
	if (bytes <= RUN_THREAD_BYTES)
		return 0;
	char dims[256] = "";
	for (int k = 0; k < ir_ndims(c->ir) && strlen(dims) < sizeof dims - 64; k++)
		snprintf(dims + strlen(dims), sizeof dims - strlen(dims), "%s%s = %d", k ? ", " : "", ir_dim(c->ir, k)->name,
			 ir_dim(c->ir, k)->size);
	snprintf(msg, n, "a thread would hold %zu bytes of the carrier's state and inputs (%s); a GPU gives a thread at "
			 "most %d KiB of local memory",
		 bytes, dims, RUN_THREAD_BYTES / 1024);
	return -1;
}

uint16_t run_bf16_bits(double v)
{
	float f = (float)ir_round(TY_BF16, v);
	uint32_t u;
	memcpy(&u, &f, 4);
	if (isnan(f))
		return 0x7fc0;
	return (uint16_t)(u >> 16);
}

double run_bf16_value(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

uint16_t run_f16_bits(double v)
{
	v = ir_round(TY_F16, v);
	uint16_t sign = signbit(v) ? 0x8000 : 0;
	double a = fabs(v);
	if (isnan(v))
		return 0x7e00;
	if (isinf(a))
		return sign | 0x7c00;
	if (a < 0x1p-14) /* subnormal or 0: a = k * 2^-24 */
		return sign | (uint16_t)(a * 0x1p24);
	uint64_t u;
	memcpy(&u, &a, 8);
	/* a = 1.m * 2^e, e in [-14, 15], m's top 10 bits all that a has */
	return sign | (uint16_t)(((int)(u >> 52) - 1023 + 15) << 10) | (uint16_t)((u >> 42) & 0x3ff);
}

double run_f16_value(uint16_t h)
{
	int e = (h >> 10) & 0x1f, m = h & 0x3ff;
	double v = e == 0 ? m * 0x1p-24 : e == 31 ? (m ? NAN : INFINITY) : (1024 + m) * ir_pow2(e - 25);
	return h & 0x8000 ? -v : v;
}

uint8_t run_f8e4m3_bits(double v)
{
	v = ir_round(TY_F8E4M3, v);
	uint8_t sign = signbit(v) ? 0x80 : 0;
	double a = fabs(v);
	if (isnan(v))
		return 0x7f;
	if (a < 0x1p-6) /* subnormal or 0: a = k * 2^-9 */
		return sign | (uint8_t)(a * 0x1p9);
	uint64_t u;
	memcpy(&u, &a, 8);
	/* a = 1.m * 2^e, e in [-6, 8], m's top 3 bits all that a has */
	return sign | (uint8_t)(((int)(u >> 52) - 1023 + 7) << 3) | (uint8_t)((u >> 49) & 7);
}

double run_f8e4m3_value(uint8_t h)
{
	int e = (h >> 3) & 0xf, m = h & 7;
	double v = e == 0 ? m * 0x1p-9 : e == 15 && m == 7 ? NAN : (8 + m) * ir_pow2(e - 10);
	return h & 0x80 ? -v : v;
}

int run_past_range(TyKind k, double v)
{
	/* saturating: past 448 and half its step, or an infinity; 464 itself
	 * is a tie that goes to the even 448 (1.110 x 2^8), not to 480 */
	if (k == TY_F8E4M3)
		return isinf(v) || fabs(v) > 464;
	return (k == TY_F16 || k == TY_BF16 || k == TY_F32) && isinf(ir_round(k, v)) && !isinf(v);
}

double run_buffer_get(const Buffer *b, size_t i)
{
	const void *p = (const char *)b->p + i * run_kind_size(b->kind);
	switch (b->kind) {
	case TY_BOOL: return *(const uint8_t *)p;
	case TY_I32: return *(const int32_t *)p;
	case TY_I64: return (double)*(const int64_t *)p;
	case TY_F16: return run_f16_value(*(const uint16_t *)p);
	case TY_BF16: return run_bf16_value(*(const uint16_t *)p);
	case TY_F8E4M3: return run_f8e4m3_value(*(const uint8_t *)p);
	case TY_F32: return *(const float *)p;
	default: return *(const double *)p;
	}
}

void run_buffer_get_n(const Buffer *b, size_t i, size_t n, double *dst)
{
	/* the kind's case outside the loop: attention's keys and values, read
	 * once a head for the reference, are millions of components */
	const char *p = (const char *)b->p + i * run_kind_size(b->kind);
	switch (b->kind) {
	case TY_F16:
		for (size_t t = 0; t < n; t++)
			dst[t] = run_f16_value(((const uint16_t *)p)[t]);
		return;
	case TY_BF16:
		for (size_t t = 0; t < n; t++)
			dst[t] = run_bf16_value(((const uint16_t *)p)[t]);
		return;
	case TY_F8E4M3:
		for (size_t t = 0; t < n; t++)
			dst[t] = run_f8e4m3_value(((const uint8_t *)p)[t]);
		return;
	case TY_F32:
		for (size_t t = 0; t < n; t++)
			dst[t] = ((const float *)p)[t];
		return;
	default:
		for (size_t t = 0; t < n; t++)
			dst[t] = run_buffer_get(b, i + t);
	}
}

double run_buffer_get_exact(const Buffer *b, size_t i, double *rest)
{
	if (b->kind != TY_I64) {
		*rest = 0;
		return run_buffer_get(b, i);
	}
	int64_t x = ((const int64_t *)b->p)[i];
	double v = (double)x;
	*rest = ir_int_rest(x, v);
	return v;
}

void run_buffer_set_exact(Buffer *b, size_t i, double v, double rest)
{
	if (b->kind == TY_I64)
		((int64_t *)b->p)[i] = ir_int_exact(v, rest);
	else
		run_buffer_set(b, i, v);
}

void run_buffer_set(Buffer *b, size_t i, double v)
{
	void *p = (char *)b->p + i * run_kind_size(b->kind);
	switch (b->kind) {
	case TY_BOOL: *(uint8_t *)p = v != 0; break;
	case TY_I32: *(int32_t *)p = (int32_t)ir_round(TY_I32, v); break;
	case TY_I64: *(int64_t *)p = ir_int_exact(v, 0); break; /* 2^63, INT64_MAX rounded, wraps as a cast did */
	case TY_F16: *(uint16_t *)p = run_f16_bits(v); break;
	case TY_BF16: *(uint16_t *)p = run_bf16_bits(v); break;
	case TY_F8E4M3: *(uint8_t *)p = run_f8e4m3_bits(v); break;
	case TY_F32: *(float *)p = (float)v; break;
	default: *(double *)p = v; break;
	}
}

static Buffer *buffers(const Decl *d, int n, size_t count)
{
	Buffer *b = xcalloc(n, sizeof *b);
	for (int i = 0; i < n; i++) {
		b[i] = (Buffer){d[i].storage, spec_decl_width(&d[i]), count, NULL};
		b[i].p = xcalloc(count * b[i].width, run_kind_size(b[i].kind));
	}
	return b;
}

static Buffer *out_buffers(const Def *d, int n, size_t count)
{
	Buffer *b = xcalloc(n, sizeof *b);
	for (int i = 0; i < n; i++) {
		Ty t = d[i].e->ty;
		b[i] = (Buffer){(TyKind)t.kind, t.len ? t.len : 1, count, NULL};
		b[i].p = xcalloc(count * b[i].width, run_kind_size(b[i].kind));
	}
	return b;
}

RunData *rundata_new(Carrier *c, int rows, int len) { return rundata_new_heads(c, rows, len, 1, 1); }

RunData *rundata_new_heads(Carrier *c, int rows, int len, int heads, int kv_heads)
{
	RunData *d = xcalloc(1, sizeof *d);
	size_t H = heads < 1 ? 1 : heads, G = kv_heads < 1 ? 1 : kv_heads, rl = (size_t)rows * len;
	d->c = c;
	d->rows = rows;
	d->len = len;
	d->heads = (int)H;
	d->kv_heads = (int)G;
	d->scan = c->tpl == FAM_SCAN;
	d->row = buffers(c->row, c->nrow, H * rows);
	d->col = buffers(c->col, c->ncol, G * len);
	d->elem = buffers(c->elem, c->nelem, H * rl);
	d->params = xcalloc(c->nparams, sizeof *d->params);
	d->fin = out_buffers(c->finalize, c->nfinal, H * (d->scan ? rl : (size_t)rows));
	d->map = out_buffers(c->map, c->nmap, H * rl);
	return d;
}

static double decls_bytes(const Decl *d, int n, double count)
{
	double s = 0;
	for (int i = 0; i < n; i++)
		s += count * spec_decl_width(&d[i]) * run_kind_size(d[i].storage);
	return s;
}

static double defs_bytes(const Def *d, int n, double count)
{
	double s = 0;
	for (int i = 0; i < n; i++)
		s += count * (d[i].e->ty.len ? d[i].e->ty.len : 1) * run_kind_size((TyKind)d[i].e->ty.kind);
	return s;
}

double rundata_need(const Carrier *c, int rows, int len, int heads, int kv_heads)
{
	double H = heads < 1 ? 1 : heads, G = kv_heads < 1 ? 1 : kv_heads, rl = (double)rows * len;
	return decls_bytes(c->row, c->nrow, H * rows) + decls_bytes(c->col, c->ncol, G * len) +
	       decls_bytes(c->elem, c->nelem, H * rl) +
	       defs_bytes(c->finalize, c->nfinal, H * (c->tpl == FAM_SCAN ? rl : rows)) + defs_bytes(c->map, c->nmap, H * rl);
}

static Buffer *view_bufs(const Buffer *b, int n, size_t count, size_t head)
{
	Buffer *v = xcalloc(n, sizeof *v);
	for (int i = 0; i < n; i++) {
		v[i] = b[i];
		v[i].n = count;
		v[i].p = (char *)b[i].p + head * count * b[i].width * run_kind_size(b[i].kind);
	}
	return v;
}

size_t rundata_col_at(const RunData *d, int j)
{
	if (!d->page.size)
		return (size_t)j;
	size_t page = (size_t)d->page.table[j / d->page.size];
	return (page * d->page.size + (size_t)(j % d->page.size)) * d->page.kv;
}

/* Key/value head kh of d's columns: its run of keys, or its component of
 * every slot of the pages. */
static Buffer *col_view(const RunData *d, size_t kh)
{
	if (!d->page.size)
		return view_bufs(d->col, d->c->ncol, d->len, kh);
	Buffer *v = view_bufs(d->col, d->c->ncol, 1, kh);
	for (int i = 0; i < d->c->ncol; i++)
		v[i].n = d->col[i].n - kh;
	return v;
}

RunData *rundata_head_view(const RunData *d, int h)
{
	Carrier *c = d->c;
	RunData *v = xcalloc(1, sizeof *v);
	size_t rl = (size_t)d->rows * d->len, kh = (size_t)h / (d->heads / d->kv_heads);
	*v = *d;
	v->heads = v->kv_heads = 1;
	v->row = view_bufs(d->row, c->nrow, d->rows, h);
	v->col = col_view(d, kh);
	v->elem = view_bufs(d->elem, c->nelem, rl, h);
	v->fin = view_bufs(d->fin, c->nfinal, d->scan ? rl : (size_t)d->rows, h);
	v->map = view_bufs(d->map, c->nmap, rl, h);
	return v;
}

RunData *rundata_rows_view(const RunData *d, int h, int r0, int rows)
{
	RunData *v = rundata_head_view(d, h);
	Carrier *c = d->c;
	size_t len = (size_t)d->len;
	for (int k = 0; k < c->nrow; k++)
		v->row[k] = (Buffer){v->row[k].kind, v->row[k].width, (size_t)rows,
				     (char *)v->row[k].p + (size_t)r0 * v->row[k].width * run_kind_size(v->row[k].kind)};
	for (int k = 0; k < c->nelem; k++)
		v->elem[k] = (Buffer){v->elem[k].kind, v->elem[k].width, (size_t)rows * len,
				      (char *)v->elem[k].p + (size_t)r0 * len * v->elem[k].width * run_kind_size(v->elem[k].kind)};
	size_t fin_per_row = d->scan ? len : 1;
	for (int k = 0; k < c->nfinal; k++)
		v->fin[k] = (Buffer){v->fin[k].kind, v->fin[k].width, (size_t)rows * fin_per_row,
				     (char *)v->fin[k].p +
					     (size_t)r0 * fin_per_row * v->fin[k].width * run_kind_size(v->fin[k].kind)};
	for (int k = 0; k < c->nmap; k++)
		v->map[k] = (Buffer){v->map[k].kind, v->map[k].width, (size_t)rows * len,
				     (char *)v->map[k].p + (size_t)r0 * len * v->map[k].width * run_kind_size(v->map[k].kind)};
	v->rows = rows;
	v->qpos = d->qpos + r0;
	return v;
}

RunData *rundata_unpaged(const RunData *d)
{
	Carrier *c = d->c;
	RunData *u = xcalloc(1, sizeof *u);
	size_t rl = (size_t)d->rows * d->len, H = (size_t)d->heads, G = (size_t)d->kv_heads;
	*u = *d;
	u->page.size = 0, u->page.table = NULL;
	u->row = view_bufs(d->row, c->nrow, H * d->rows, 0);
	u->elem = view_bufs(d->elem, c->nelem, H * rl, 0);
	u->fin = view_bufs(d->fin, c->nfinal, H * (d->scan ? rl : (size_t)d->rows), 0);
	u->map = view_bufs(d->map, c->nmap, H * rl, 0);
	u->col = buffers(c->col, c->ncol, G * d->len);
	for (size_t g = 0; g < G; g++)
		for (int k = 0; k < c->ncol; k++) {
			size_t sz = run_kind_size(d->col[k].kind) * d->col[k].width;
			for (int j = 0; j < d->len; j++)
				memcpy((char *)u->col[k].p + (g * d->len + j) * sz,
				       (const char *)d->col[k].p + (rundata_col_at(d, j) + g) * sz, sz);
		}
	return u;
}

void rundata_unpaged_free(RunData *u)
{
	if (!u)
		return;
	for (int k = 0; k < u->c->ncol; k++)
		free(u->col[k].p);
	rundata_view_free(u);
}

void rundata_view_free(RunData *v)
{
	if (!v)
		return;
	free(v->row), free(v->col), free(v->elem), free(v->fin), free(v->map);
	free(v);
}

static void free_buffers(Buffer *b, int n)
{
	for (int i = 0; b && i < n; i++)
		free(b[i].p);
	free(b);
}

void rundata_free(RunData *d)
{
	if (!d)
		return;
	Carrier *c = d->c;
	free_buffers(d->row, c->nrow);
	free_buffers(d->col, c->ncol);
	free_buffers(d->elem, c->nelem);
	free_buffers(d->fin, c->nfinal);
	free_buffers(d->map, c->nmap);
	free(d->params);
	free(d);
}

/* ---- rows for the interpreter ---- */

static double buffers_bytes(const Buffer *b, int n)
{
	double s = 0;
	for (int i = 0; i < n; i++)
		s += (double)b[i].n * b[i].width * run_kind_size(b[i].kind);
	return s;
}

static int is_i(void *ctx, Expr *e)
{
	return e->op == EXPR_VAR && e->k == *(const int *)ctx;
}

int run_reads_i(const Carrier *c)
{
	int i = c->idx[IDX_I];
	if (c->mask && ir_contains(c->mask, is_i, &i))
		return 1;
	for (int k = 0; c->lift && k < c->nstate; k++)
		if (c->lift[k] && ir_contains(c->lift[k], is_i, &i))
			return 1;
	return 0;
}

int rundata_from_zero_ok(const RunData *d, const char *kernels, char *msg, size_t n)
{
	if (!d->qpos || !run_reads_i(d->c))
		return 0;
	snprintf(msg, n,
		 "carrier %s reads i, and %s count i from 0 in every run, while a paged sequence's %d queries are its "
		 "last positions (%d to %d): the attention template, or the cpu and interp devices, run it",
		 d->c->name, kernels, d->rows, d->qpos, d->qpos + d->rows - 1);
	return -1;
}

int rundata_position_bytes(const RunData *d)
{
	size_t b = 0;
	for (int i = 0; i < d->c->nelem; i++)
		b += run_kind_size(d->elem[i].kind) * (size_t)d->elem[i].width;
	for (int i = 0; i < d->c->ncol; i++)
		b += run_kind_size(d->col[i].kind) * (size_t)d->col[i].width;
	return b ? (int)(b < 4096 ? b : 4096) : 4;
}

double rundata_bytes(const RunData *d)
{
	Carrier *c = d->c;
	return buffers_bytes(d->elem, c->nelem) + buffers_bytes(d->col, c->ncol) + buffers_bytes(d->row, c->nrow) +
	       buffers_bytes(d->fin, c->nfinal) + buffers_bytes(d->map, c->nmap);
}

void rundata_pointers(const RunData *d, const void **in, void **out)
{
	Carrier *c = d->c;
	int k = 0;
	for (int i = 0; i < c->nelem; i++)
		in[k++] = d->elem[i].p;
	for (int i = 0; i < c->ncol; i++)
		in[k++] = d->col[i].p;
	for (int i = 0; i < c->nrow; i++)
		in[k++] = d->row[i].p;
	for (int i = 0; i < c->nfinal; i++)
		out[i] = d->fin[i].p;
	for (int i = 0; i < c->nmap; i++)
		out[c->nfinal + i] = d->map[i].p;
}

void rundata_widths(const RunData *d, int64_t *width)
{
	Carrier *c = d->c;
	int k = 0;
	for (int i = 0; i < c->nelem; i++)
		width[k++] = d->elem[i].width;
	for (int i = 0; i < c->ncol; i++)
		width[k++] = d->col[i].width;
	for (int i = 0; i < c->nrow; i++)
		width[k++] = d->row[i].width;
}

/* The rests of the i64 components of the n inputs b at flat index at
 * (elements of width each) into rest + off[k] (run_buffer_get_exact);
 * where rest is NULL, the inputs have no i64. */
static void load_rests(const Buffer *b, int n, const int *off, size_t at, double *rest)
{
	for (int k = 0; rest && k < n; k++)
		for (int t = 0; t < b[k].width; t++)
			run_buffer_get_exact(&b[k], at * b[k].width + t, &rest[off[k] + t]);
}

void rundata_load_cols(const RunData *d, const Machine *m, Row *row)
{
	for (int j = 0; j < d->len; j++) {
		for (int k = 0; k < d->c->ncol; k++)
			run_buffer_get_n(&d->col[k], rundata_col_at(d, j) * d->col[k].width, d->col[k].width,
				     row->colv + (size_t)j * m->colw + m->coloff[k]);
		load_rests(d->col, d->c->ncol, m->coloff, rundata_col_at(d, j),
			   row->colrest ? row->colrest + (size_t)j * m->colw : NULL);
	}
}

void rundata_load_row(const RunData *d, const Machine *m, int r, Row *row)
{
	Carrier *c = d->c;
	row->i = d->qpos + r;
	for (int k = 0; k < c->nrow; k++)
		for (int t = 0; t < d->row[k].width; t++)
			row->rowv[m->rowoff[k] + t] = run_buffer_get(&d->row[k], (size_t)r * d->row[k].width + t);
	load_rests(d->row, c->nrow, m->rowoff, (size_t)r, row->rowrest);
	for (int j = 0; c->nelem && j < d->len; j++) {
		for (int k = 0; k < c->nelem; k++)
			for (int t = 0; t < d->elem[k].width; t++)
				row->elemv[(size_t)j * m->elemw + m->elemoff[k] + t] =
					run_buffer_get(&d->elem[k], ((size_t)r * d->len + j) * d->elem[k].width + t);
		load_rests(d->elem, c->nelem, m->elemoff, (size_t)r * d->len + j,
			   row->elemrest ? row->elemrest + (size_t)j * m->elemw : NULL);
	}
}

static void store_decls(int n, Buffer *b, const int *off, const double *src, size_t at)
{
	for (int k = 0; k < n; k++)
		for (int t = 0; t < b[k].width; t++)
			run_buffer_set(&b[k], at * b[k].width + t, src[off[k] + t]);
}

static int draw_one(RunData *d, uint64_t seed, const Define *params, int nparams, Row **cols, char *msg, size_t n);

/* With heads: each head drawn as its own one-head array, the columns of a
 * key/value head with the first of its query heads; params from head 0. */
int rundata_draw(RunData *d, uint64_t seed, const Define *params, int nparams, char *msg, size_t n)
{
	if (d->heads <= 1)
		return draw_one(d, seed, params, nparams, NULL, msg, n);
	double *keep = xcalloc(d->c->nparams + 1, sizeof *keep);
	int rc = 0;
	int g = d->heads / d->kv_heads;
	Row *cols = NULL; /* the key/value head's columns, as drawn */
	for (int h = 0; h < d->heads && !rc; h++) {
		/* the others keep them: drawn again for each, they cost G times
		 * as much, most of `run`'s time for decoding */
		if (h % g == 0)
			eval_row_free(cols), cols = NULL;
		RunData *v = rundata_head_view(d, h);
		rc = draw_one(v, rng_seed_at(seed, RNG_RUN_HEAD, (uint64_t)h), params, nparams, &cols, msg, n);
		if (h == 0)
			memcpy(keep, d->params, d->c->nparams * sizeof *keep);
		rundata_view_free(v);
	}
	eval_row_free(cols);
	memcpy(d->params, keep, d->c->nparams * sizeof *keep);
	free(keep);
	return rc;
}

/* cols: NULL; or where the Row of the columns goes, kept for the next
 * call, whose columns it holds when not NULL */
static int draw_one(RunData *d, uint64_t seed, const Define *params, int nparams, Row **cols, char *msg, size_t n)
{
	Carrier *c = d->c;
	Machine m;
	eval_init(&m, c);
	uint64_t rng = rng_stream(seed, RNG_RUN_INPUTS);
	int rc = draw_params(&m, params, nparams, &rng, msg, n);
	memcpy(d->params, m.params, c->nparams * sizeof *d->params);
	if (!rc && draw_params_break_assume(&m, NULL, msg, n))
		rc = -1;
	int keep_cols = cols && *cols;
	Row *row = keep_cols ? *cols : eval_row_new(&m, d->len);
	for (int r = 0; !rc && r < d->rows; r++) {
		if (draw_row_keep(&m, DRAW_NORMAL, row, keep_cols || r > 0, &rng)) {
			snprintf(msg, n, "could not draw inputs where 'assume' holds");
			rc = -1;
			break;
		}
		store_decls(c->nrow, d->row, m.rowoff, row->rowv, r);
		for (int j = 0; r == 0 && !keep_cols && j < d->len; j++)
			store_decls(c->ncol, d->col, m.coloff, row->colv + (size_t)j * m.colw, j);
		for (int j = 0; c->nelem && j < d->len; j++)
			store_decls(c->nelem, d->elem, m.elemoff, row->elemv + (size_t)j * m.elemw,
				    (size_t)r * d->len + j);
	}
	if (cols)
		*cols = row;
	else
		eval_row_free(row);
	eval_free(&m);
	return rc;
}

/* ---- assume on given data ---- */

/* The inputs assume reads, each as a var and a component (-1: all of it). */
typedef struct {
	const Ir *ir;
	int var[16], comp[16], n;
	int per_position; /* it reads an element or column input */
} AssumeUses;

static void use_add(AssumeUses *u, int var, int comp)
{
	for (int k = 0; k < u->n; k++)
		if (u->var[k] == var && (u->comp[k] == comp || u->comp[k] < 0))
			return;
	if (u->n < 16)
		u->var[u->n] = var, u->comp[u->n++] = comp;
}

static int note_use(void *ctx, Expr *e)
{
	AssumeUses *u = ctx;
	const Expr *v = e->op == EXPR_INDEX ? e->a[0] : e;
	if (v->op != EXPR_VAR)
		return 0;
	const Var *x = ir_var(u->ir, v->k);
	if (x->kind != VAR_ELEM && x->kind != VAR_COL && x->kind != VAR_ROW)
		return 0;
	u->per_position |= x->kind != VAR_ROW;
	use_add(u, v->k, e->op == EXPR_INDEX ? e->k : -1);
	return 0;
}

/* "w = -1", "q[2] = 0.5", "k = [1, 2, 3, ...]": the input as row holds it at j */
static void print_use(const Machine *m, const Row *row, int j, int var, int comp, char *out, size_t n)
{
	const Carrier *c = m->c;
	const Var *x = ir_var(c->ir, var);
	const double *v = x->kind == VAR_ROW   ? row->rowv + m->rowoff[x->slot]
			  : x->kind == VAR_COL ? row->colv + (size_t)j * m->colw + m->coloff[x->slot]
					       : row->elemv + (size_t)j * m->elemw + m->elemoff[x->slot];
	int w = x->ty.len ? x->ty.len : 1;
	char num[40];
	size_t at = strlen(out);
	if (comp >= 0 || w == 1) {
		ir_fmt_num(v[comp >= 0 ? comp : 0], num, sizeof num);
		if (comp >= 0)
			snprintf(out + at, n - at, "%s[%d] = %s", x->name, comp, num);
		else
			snprintf(out + at, n - at, "%s = %s", x->name, num);
		return;
	}
	snprintf(out + at, n - at, "%s = [", x->name);
	for (int t = 0; t < w && t < 4; t++) {
		ir_fmt_num(v[t], num, sizeof num);
		at = strlen(out);
		snprintf(out + at, n - at, "%s%s", t ? ", " : "", num);
	}
	at = strlen(out);
	snprintf(out + at, n - at, "%s]", w > 4 ? ", ..." : "");
}

/* d's inputs against assume, with m the carrier's machine at d's params. */
static int assume_one(const RunData *d, Machine *m, int head, char *msg, size_t n)
{
	Carrier *c = d->c;
	AssumeUses u = {.ir = c->ir};
	ir_contains(c->assume, note_use, &u);
	Row *row = eval_row_new(m, d->len);
	rundata_load_cols(d, m, row);
	int rc = 0;
	for (int r = 0; !rc && r < d->rows; r++) {
		rundata_load_row(d, m, r, row);
		for (int j = 0; !rc && j < (u.per_position ? d->len : 1); j++) {
			if (eval_assume(m, row, j))
				continue;
			char where[96] = "", vals[512] = "";
			if (head >= 0)
				snprintf(where, sizeof where, "head %d, ", head);
			size_t at = strlen(where);
			if (u.per_position)
				snprintf(where + at, sizeof where - at, "row %d, position %d", r, j);
			else
				snprintf(where + at, sizeof where - at, "row %d", r);
			for (int k = 0; k < u.n; k++) {
				if (k)
					snprintf(vals + strlen(vals), sizeof vals - strlen(vals), ", ");
				print_use(m, row, j, u.var[k], u.comp[k], vals, sizeof vals);
			}
			char *text = ir_str_max(c->ir, c->assume, 200);
			if (u.n)
				snprintf(msg, n, "%s: input%s %s break%s 'assume' (%s)", where, u.n > 1 ? "s" : "", vals,
					 u.n > 1 ? "" : "s", text);
			else
				snprintf(msg, n, "the params break 'assume' (%s)", text);
			free(text);
			rc = -1;
		}
	}
	eval_row_free(row);
	return rc;
}

int rundata_check_assume(const RunData *d, char *msg, size_t n)
{
	if (!d->c->assume)
		return 0;
	/* one machine at d's params for the params' part and every head */
	Machine m;
	eval_init(&m, d->c);
	memcpy(m.params, d->params, d->c->nparams * sizeof *d->params);
	/* a part over params alone that they break: theirs, whatever the
	 * inputs (it named the first position, or "the params") */
	int rc = draw_params_break_assume(&m, NULL, msg, n) ? -1 : 0;
	if (rc || d->rows <= 0) {
		eval_free(&m);
		return rc;
	}
	if (d->heads <= 1) {
		rc = assume_one(d, &m, -1, msg, n);
		eval_free(&m);
		return rc;
	}
	/* views of the inputs alone: a library run's outputs are not bound here */
	Carrier *c = d->c;
	for (int h = 0; h < d->heads && !rc; h++) {
		RunData v = *d;
		size_t kh = (size_t)h / (d->heads / d->kv_heads);
		v.heads = v.kv_heads = 1;
		v.row = view_bufs(d->row, c->nrow, d->rows, h);
		v.col = col_view(d, kh);
		v.elem = view_bufs(d->elem, c->nelem, (size_t)d->rows * d->len, h);
		v.fin = v.map = NULL;
		rc = assume_one(&v, &m, h, msg, n);
		free(v.row), free(v.col), free(v.elem);
	}
	eval_free(&m);
	return rc;
}

/* ---- devices ---- */

extern const Device dev_interp;
#define DEVICE(name) __attribute__((weak)) extern const Device name;
DEVICE(dev_emu)
DEVICE(dev_cpu)
DEVICE(dev_gpu)

const Device *run_device_find(const char *name)
{
	const Device *all[] = {&dev_interp, &dev_emu, &dev_cpu, &dev_gpu};
	for (size_t i = 0; i < sizeof all / sizeof *all; i++)
		if (all[i] && !strcmp(all[i]->name, name))
			return all[i];
	return NULL;
}

const char *run_device_names(void)
{
	static char buf[128];
	const Device *all[] = {&dev_interp, &dev_emu, &dev_cpu, &dev_gpu};
	buf[0] = 0;
	for (size_t i = 0; i < sizeof all / sizeof *all; i++)
		if (all[i]) {
			strcat(buf, buf[0] ? ", " : "");
			strcat(buf, all[i]->name);
		}
	return buf;
}

/* ---- a paged batch in one launch ---- */

static size_t buffer_bytes(const Buffer *b) { return b->n * b->width * run_kind_size(b->kind); }

size_t run_batch_row_bytes(const RunBatch *rb, int k)
{
	size_t s = 0;
	for (int b = 0; b < rb->batch; b++)
		s += buffer_bytes(&rb->seq[b]->row[k]);
	return s;
}

size_t run_batch_fin_bytes(const RunBatch *rb, int k)
{
	size_t s = 0;
	for (int b = 0; b < rb->batch; b++)
		s += buffer_bytes(&rb->seq[b]->fin[k]);
	return s;
}

/* Buffer b of [heads][rows] elements into to as [rows][heads], or with
 * back from to's [rows][heads] into b. */
static void heads_rows(const Buffer *b, int heads, int rows, char *to, int back)
{
	size_t sz = run_kind_size(b->kind) * b->width;
	char *p = b->p;
	heads += heads < 1; /* a run without heads: one */
	for (int r = 0; r < rows; r++)
		for (int h = 0; h < heads; h++) {
			char *x = p + ((size_t)h * rows + r) * sz, *y = to + ((size_t)r * heads + h) * sz;
			memcpy(back ? x : y, back ? y : x, sz);
		}
}

void *run_rows_major(const Buffer *b, int heads, int rows)
{
	char *all = malloc(buffer_bytes(b) + 1);
	if (!all)
		abort();
	heads_rows(b, heads, rows, all, 0);
	return all;
}

void run_rows_major_put(Buffer *b, int heads, int rows, const void *all)
{
	heads_rows(b, heads, rows, (char *)all, 1);
}

void *run_batch_rows(const RunBatch *rb, int k)
{
	char *all = malloc(run_batch_row_bytes(rb, k) + 1), *at = all;
	if (!all)
		abort();
	for (int b = 0; b < rb->batch; b++) {
		const RunData *s = rb->seq[b];
		heads_rows(&s->row[k], s->heads, s->rows, at, 0);
		at += buffer_bytes(&s->row[k]);
	}
	return all;
}

void run_batch_put_fin(RunBatch *rb, int k, const void *all)
{
	const char *at = all;
	for (int b = 0; b < rb->batch; b++) {
		RunData *s = rb->seq[b];
		heads_rows(&s->fin[k], s->heads, s->rows, (char *)at, 1);
		at += buffer_bytes(&s->fin[k]);
	}
}

int run_batch_uniform(const RunBatch *rb)
{
	for (int b = 1; b < rb->batch; b++)
		if (rb->seq[b]->rows != rb->seq[0]->rows)
			return 0;
	return 1;
}

double rundata_attention_flops(const RunData *d, int dq, int dv)
{
	Carrier *c = d->c;
	if (!c->nrow || d->rows < 1 || d->len < 1)
		return 0;
	Machine m;
	eval_init(&m, c);
	memcpy(m.params, d->params, c->nparams * sizeof *m.params);
	Row *r = eval_row_new(&m, d->len);
	uint64_t rng = 12345;
	int kept = 0, tries = 4096;
	for (int t = 0; t < tries; t++) {
		r->i = rng_int(&rng, 0, d->rows - 1);
		kept += !eval_masked(&m, r, rng_int(&rng, 0, d->len - 1));
	}
	eval_row_free(r);
	eval_free(&m);
	/* q k (dq wide) and P v (dv wide): a multiply and an add each */
	return 2.0 * d->rows * d->len * (dq + dv) * kept / tries * (d->heads > 0 ? d->heads : 1);
}
