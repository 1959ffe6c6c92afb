/* paged.c: a batch of sequences over a paged key/value cache (paged.h):
 * the layout's checks, drawing, and each sequence gathered into a RunData
 * of its own for a device and for the float64 reference. */
#include "compiler/devices/paged.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void *xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n ? n : 1, sz ? sz : 1);
	if (!p)
		abort();
	return p;
}

int paged_page_size_ok(int page_size, char *msg, size_t n)
{
	if (page_size >= PAGED_MIN_PAGE && page_size <= PAGED_MAX_PAGE && !(page_size & (page_size - 1)))
		return 0;
	snprintf(msg, n, "a page holds a power of two from %d to %d keys (16, 32, 64, 128 or 256), not %d", PAGED_MIN_PAGE,
		 PAGED_MAX_PAGE, page_size);
	return -1;
}

int paged_carrier_ok(const Carrier *c, char *msg, size_t n)
{
	const char *why = spec_unpageable(c);
	if (!why)
		return 0;
	snprintf(msg, n, "carrier %s cannot read paged keys and values: %s", c->name, why);
	return -1;
}

int paged_layout_ok(int batch, int page_size, int pages, int max_pages, const int32_t *table, const int32_t *lens,
		    const int32_t *cu, char *msg, size_t n)
{
	if (batch < 1)
		return snprintf(msg, n, "a batch of %d sequences: at least 1", batch), -1;
	if (paged_page_size_ok(page_size, msg, n))
		return -1;
	if (pages < 1 || max_pages < 1)
		return snprintf(msg, n, "%d pages in the pool, %d in each block table row: at least 1 of each", pages,
				max_pages),
		       -1;
	for (int b = 0; b < batch; b++) {
		if (lens[b] < 0 || (int64_t)lens[b] > (int64_t)max_pages * page_size)
			return snprintf(msg, n,
					"seq_lens[%d] = %d: a sequence holds 0 to %lld keys (its block table row of %d pages "
					"of %d keys)",
					b, (int)lens[b], (long long)max_pages * page_size, max_pages, page_size),
			       -1;
		/* in 64 bits: a length near 2^31 and a page's keys past it */
		int64_t read = ((int64_t)lens[b] + page_size - 1) / page_size;
		for (int64_t t = 0; t < read; t++) {
			int32_t pg = table[(size_t)b * max_pages + t];
			int64_t last = (int64_t)lens[b] < (t + 1) * page_size ? lens[b] : (t + 1) * page_size;
			if (pg < 0 || pg >= pages)
				return snprintf(msg, n,
						"block_table[%d][%lld] = %d: sequence %d reads that page (its keys %lld to "
						"%lld), and the pool holds pages 0 to %d",
						b, (long long)t, (int)pg, b, (long long)t * page_size, (long long)last - 1,
						pages - 1),
				       -1;
		}
	}
	if (cu) {
		if (cu[0] != 0)
			return snprintf(msg, n, "cu_seqlens_q[0] = %d: the first sequence's queries start at row 0",
					(int)cu[0]),
			       -1;
		for (int b = 0; b < batch; b++)
			if (cu[b + 1] < cu[b])
				return snprintf(msg, n,
						"cu_seqlens_q[%d] = %d is less than cu_seqlens_q[%d] = %d: offsets never "
						"decrease",
						b + 1, (int)cu[b + 1], b, (int)cu[b]),
				       -1;
	}
	return 0;
}

int paged_fits(const Carrier *c, int heads, int kv_heads, int batch, int page_size, int pages, const int32_t *lens,
	       const int32_t *cu, int rows, int own, char *msg, size_t n)
{
	double have = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
	Carrier *cc = (Carrier *)c;
	/* a query row's bytes (inputs and outputs, every head), a key's (every key/value head) */
	double row = rundata_need(cc, 1, 0, heads, kv_heads), key = rundata_need(cc, 0, 1, heads, kv_heads);
	double total = cu ? (double)cu[batch] : (double)batch * rows, need = 0, most = 0;
	int at = 0;
	for (int b = 0; b < batch; b++) {
		double q = cu ? (double)cu[b + 1] - cu[b] : rows, one = q * row + (double)lens[b] * key;
		need += own ? one : 0;
		if (one > most)
			most = one, at = b;
	}
	need += own ? total * row + (double)pages * page_size * key : most;
	if (have <= 0 || need <= have)
		return 0;
	int q = cu ? (int)(cu[at + 1] - cu[at]) : rows;
	const char *qs = q == 1 ? "y" : "ies";
	if (own)
		snprintf(msg, n,
			 "a batch of %.0f query rows over %d pages of %d keys, and its sequences gathered apart (the "
			 "largest: sequence %d, %d quer%s and %d keys), need %.1f GiB of arrays; this machine has %.1f "
			 "GiB of memory",
			 total, pages, page_size, at, q, qs, (int)lens[at], need / (1 << 30), have / (1 << 30));
	else
		snprintf(msg, n,
			 "sequence %d (%d quer%s, %d keys) gathered apart needs %.1f GiB of arrays; this machine has "
			 "%.1f GiB of memory",
			 at, q, qs, (int)lens[at], need / (1 << 30), have / (1 << 30));
	return -1;
}

/* The buffers of nd arrays of count elements, of inputs d or else of
 * outputs o; NULL where one cannot be had. */
static Buffer *arrays(const Decl *d, const Def *o, int nd, size_t count)
{
	Buffer *b = calloc(nd ? nd : 1, sizeof *b);
	for (int i = 0; b && i < nd; i++) {
		Ty t = d ? d[i].ty : o[i].e->ty;
		b[i] = (Buffer){d ? d[i].storage : (TyKind)t.kind, d ? spec_decl_width(&d[i]) : t.len ? t.len : 1, count,
				NULL};
		b[i].p = calloc(count ? count * b[i].width : 1, run_kind_size(b[i].kind));
		if (!b[i].p) {
			while (i--)
				free(b[i].p);
			free(b);
			return NULL;
		}
	}
	return b;
}

static Buffer *buffers(const Decl *d, int nd, size_t count) { return arrays(d, NULL, nd, count); }
static Buffer *out_buffers(const Def *d, int nd, size_t count) { return arrays(NULL, d, nd, count); }

Paged *paged_new(Carrier *c, int heads, int kv_heads, int batch, int page_size, int pages, int max_pages,
		 const int32_t *table, const int32_t *lens, const int32_t *cu, int rows, char *msg, size_t n)
{
	if (paged_carrier_ok(c, msg, n))
		return NULL;
	if (heads < 1 || kv_heads < 1 || kv_heads > heads || heads % kv_heads)
		return snprintf(msg, n, "%d query heads on %d key/value heads: heads must be a multiple of key/value heads",
				heads, kv_heads),
		       NULL;
	if (!cu && rows < 0)
		return snprintf(msg, n, "%d queries a sequence: at least 0", rows), NULL;
	if (paged_layout_ok(batch, page_size, pages, max_pages, table, lens, cu, msg, n) ||
	    paged_fits(c, heads, kv_heads, batch, page_size, pages, lens, cu, rows, 1, msg, n))
		return NULL;
	Paged *p = xcalloc(1, sizeof *p);
	*p = (Paged){.c = c, .heads = heads, .kv_heads = kv_heads, .batch = batch, .page_size = page_size, .pages = pages,
		     .max_pages = max_pages};
	p->table = xcalloc((size_t)batch * max_pages, sizeof *p->table);
	memcpy(p->table, table, (size_t)batch * max_pages * sizeof *p->table);
	p->lens = xcalloc(batch, sizeof *p->lens);
	memcpy(p->lens, lens, batch * sizeof *p->lens);
	p->cu = xcalloc(batch + 1, sizeof *p->cu);
	for (int b = 0; b <= batch; b++)
		p->cu[b] = cu ? cu[b] : (int32_t)((int64_t)b * rows);
	size_t total = (size_t)p->cu[batch];
	p->row = buffers(c->row, c->nrow, total * heads);
	p->col = buffers(c->col, c->ncol, (size_t)pages * page_size * kv_heads);
	p->fin = out_buffers(c->finalize, c->nfinal, total * heads);
	p->params = xcalloc(c->nparams, sizeof *p->params);
	if (!p->row || !p->col || !p->fin) { /* a limit of this process's (ulimit -v), not the machine's */
		snprintf(msg, n, "cannot allocate the arrays of %zu query rows over %d pages of %d keys: %s", total, pages,
			 page_size, strerror(ENOMEM));
		paged_free(p);
		return NULL;
	}
	return p;
}

static void free_buffers(Buffer *b, int nb)
{
	for (int i = 0; b && i < nb; i++)
		free(b[i].p);
	free(b);
}

void paged_free(Paged *p)
{
	if (!p)
		return;
	free_buffers(p->row, p->c->nrow);
	free_buffers(p->col, p->c->ncol);
	free_buffers(p->fin, p->c->nfinal);
	free(p->table), free(p->lens), free(p->cu), free(p->params);
	free(p);
}

/* ---- one sequence ---- */

/* Element `from` of a into element `to` of b (the same kind and width). */
static void copy_elem(Buffer *to_b, size_t to, const Buffer *from_b, size_t from)
{
	size_t sz = run_kind_size(from_b->kind) * from_b->width;
	memcpy((char *)to_b->p + to * sz, (const char *)from_b->p + from * sz, sz);
}

/* The pool's element holding sequence b's key j of key/value head g. */
static size_t key_at(const Paged *p, int b, int j, int g)
{
	size_t page = (size_t)p->table[(size_t)b * p->max_pages + j / p->page_size];
	return (page * p->page_size + (size_t)(j % p->page_size)) * p->kv_heads + g;
}

/* Sequence b: its queries gathered into [heads][rows]; its keys gathered
 * too, or with over_pages left in p's pool, RunData.page saying where. */
static RunData *sequence(const Paged *p, int b, int over_pages)
{
	Carrier *c = p->c;
	int rows = p->cu[b + 1] - p->cu[b], len = p->lens[b], H = p->heads, G = p->kv_heads;
	RunData *s = rundata_new_heads(c, rows, over_pages ? 0 : len, H, G);
	s->qpos = len - rows; /* the sequence's last positions */
	memcpy(s->params, p->params, c->nparams * sizeof *s->params);
	for (int k = 0; k < c->nrow; k++)
		for (int h = 0; h < H; h++)
			for (int r = 0; r < rows; r++)
				copy_elem(&s->row[k], (size_t)h * rows + r, &p->row[k], ((size_t)p->cu[b] + r) * H + h);
	if (over_pages) {
		for (int k = 0; k < c->ncol; k++) {
			free(s->col[k].p);
			s->col[k] = p->col[k];
		}
		s->len = len;
		s->page.table = p->table + (size_t)b * p->max_pages;
		s->page.size = p->page_size, s->page.pages = p->pages, s->page.kv = G;
		return s;
	}
	for (int k = 0; k < c->ncol; k++)
		for (int g = 0; g < G; g++)
			for (int j = 0; j < len; j++)
				copy_elem(&s->col[k], (size_t)g * len + j, &p->col[k], key_at(p, b, j, g));
	return s;
}

RunData *paged_sequence(const Paged *p, int b) { return sequence(p, b, 0); }

/* A sequence of sequence(), its columns p's own left alone. */
static void sequence_free(RunData *s)
{
	for (int k = 0; s && s->page.size && k < s->c->ncol; k++)
		s->col[k].p = NULL;
	rundata_free(s);
}

void paged_store(Paged *p, int b, const RunData *s)
{
	int rows = p->cu[b + 1] - p->cu[b], H = p->heads;
	for (int k = 0; k < p->c->nfinal; k++)
		for (int h = 0; h < H; h++)
			for (int r = 0; r < rows; r++)
				copy_elem(&p->fin[k], ((size_t)p->cu[b] + r) * H + h, &s->fin[k], (size_t)h * rows + r);
}

/* The inputs of sequence s written into p's arrays (the inverse of
 * paged_sequence). */
static void put_sequence(Paged *p, int b, const RunData *s)
{
	Carrier *c = p->c;
	int rows = s->rows, len = s->len, H = p->heads, G = p->kv_heads;
	for (int k = 0; k < c->nrow; k++)
		for (int h = 0; h < H; h++)
			for (int r = 0; r < rows; r++)
				copy_elem(&p->row[k], ((size_t)p->cu[b] + r) * H + h, &s->row[k], (size_t)h * rows + r);
	for (int k = 0; k < c->ncol; k++)
		for (int g = 0; g < G; g++)
			for (int j = 0; j < len; j++)
				copy_elem(&p->col[k], key_at(p, b, j, g), &s->col[k], (size_t)g * len + j);
}

/* ---- drawing ---- */

static uint64_t next(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 33;
}

int paged_draw(Paged *p, uint64_t seed, const Define *params, int nparams, char *msg, size_t n)
{
	Carrier *c = p->c;
	/* a page no sequence reads holds NaN: a key read from the wrong page shows */
	for (int k = 0; k < c->ncol; k++)
		for (size_t x = 0; x < p->col[k].n * p->col[k].width; x++)
			run_buffer_set(&p->col[k], x, NAN);
	for (int b = 0; b < p->batch; b++) {
		RunData *s = rundata_new_heads(c, p->cu[b + 1] - p->cu[b], p->lens[b], p->heads, p->kv_heads);
		int rc = rundata_draw(s, rng_seed_at(seed, RNG_RUN_SEQUENCE, (uint64_t)b), params, nparams, msg, n);
		if (!rc) {
			put_sequence(p, b, s);
			if (b == 0)
				memcpy(p->params, s->params, c->nparams * sizeof *p->params);
		}
		rundata_free(s);
		if (rc)
			return -1;
	}
	return 0;
}

Paged *paged_drawn(Carrier *c, int heads, int kv_heads, int batch, int rows, int len, int page_size, uint64_t seed,
		   const Define *params, int nparams, char *msg, size_t n)
{
	if (paged_page_size_ok(page_size, msg, n))
		return NULL;
	if (batch < 1)
		return snprintf(msg, n, "a batch of %d sequences: at least 1", batch), NULL;
	uint64_t rng = rng_stream(seed, RNG_PAGED_LAYOUT);
	int32_t *lens = xcalloc(batch, sizeof *lens);
	int max_pages = (len + page_size - 1) / page_size, pages = 1;
	max_pages += !max_pages;
	for (int b = 0; b < batch; b++) {
		lens[b] = b ? (int32_t)(next(&rng) % ((uint64_t)len + 1)) : len;
		pages += (lens[b] + page_size - 1) / page_size;
	}
	/* pages 0 .. pages - 1 shuffled; the last of the shuffle is read by none */
	int32_t *order = xcalloc(pages, sizeof *order);
	for (int t = 0; t < pages; t++)
		order[t] = t;
	for (int t = pages - 1; t > 0; t--) {
		int u = (int)(next(&rng) % (uint64_t)(t + 1));
		int32_t x = order[t];
		order[t] = order[u], order[u] = x;
	}
	int32_t *table = xcalloc((size_t)batch * max_pages, sizeof *table);
	int used = 0;
	for (int b = 0; b < batch; b++)
		for (int t = 0; t < max_pages; t++)
			table[(size_t)b * max_pages + t] = t < (lens[b] + page_size - 1) / page_size ? order[used++] : -1;
	Paged *p = paged_new(c, heads, kv_heads, batch, page_size, pages, max_pages, table, lens, NULL, rows, msg, n);
	free(order), free(table), free(lens);
	if (p && paged_draw(p, seed, params, nparams, msg, n)) {
		paged_free(p);
		return NULL;
	}
	return p;
}

/* ---- running ---- */

/* The worst of x (sequence b's check of one output) into all, its flat
 * index mapped from the sequence's [heads][rows] into p's [rows][heads]. */
static size_t paged_index(const Paged *p, int b, int rows, int width, size_t flat)
{
	size_t elem = flat / width, comp = flat % width;
	size_t h = rows ? elem / rows : 0, r = rows ? elem % rows : 0;
	return (((size_t)p->cu[b] + r) * p->heads + h) * width + comp;
}

static void merge_check(const Paged *p, int b, int rows, int width, OutCheck *all, const OutCheck *x, int first)
{
	size_t at = paged_index(p, b, rows, width, x->at);
	if (first) {
		char *name = all->name;
		*all = *x;
		all->name = name;
		all->at = at;
		all->naive_at = paged_index(p, b, rows, width, x->naive_at);
		all->bound_at = paged_index(p, b, rows, width, x->bound_at);
		return;
	}
	if (x->naive_worst > all->naive_worst)
		all->naive_worst = x->naive_worst, all->naive_at = paged_index(p, b, rows, width, x->naive_at);
	if (x->bound_worst > all->bound_worst)
		all->bound_worst = x->bound_worst, all->bound_at = paged_index(p, b, rows, width, x->bound_at);
	all->want_scale = fmax(all->want_scale, x->want_scale);
	/* a NaN mismatch outranks any finite error, as runcheck ranks them */
	if ((x->nan_mismatch && !all->nan_mismatch) ||
	    (!x->nan_mismatch && !all->nan_mismatch && x->worst_ratio > all->worst_ratio))
		all->at = at;
	all->max_abs = fmax(all->max_abs, x->max_abs);
	all->max_rel = fmax(all->max_rel, x->max_rel);
	all->worst_ratio = fmax(all->worst_ratio, x->worst_ratio);
	all->nan_mismatch += x->nan_mismatch;
	all->compared += x->compared;
	all->out_of_range += x->out_of_range;
	all->nan_both += x->nan_both;
	all->inf_both += x->inf_both;
	all->empty_nan += x->empty_nan;
}

void paged_batch(const Paged *p, RunBatch *rb)
{
	RunData **seq = xcalloc(p->batch, sizeof *seq);
	for (int b = 0; b < p->batch; b++)
		seq[b] = sequence(p, b, 1);
	*rb = (RunBatch){seq, p->batch, p->max_pages, p->table, p->lens, p->cu, NULL, NULL};
}

void paged_batch_free(RunBatch *rb)
{
	for (int b = 0; rb->seq && b < rb->batch; b++)
		sequence_free(rb->seq[b]);
	free(rb->seq);
	memset(rb, 0, sizeof *rb);
}

int paged_run(Paged *p, const Device *dv, const RunOpts *o, RunCheck *rc, double *seconds, char *msg, size_t n)
{
	Carrier *c = p->c;
	RunData **seq = xcalloc(p->batch, sizeof *seq);
	for (int b = 0; b < p->batch; b++)
		seq[b] = sequence(p, b, dv->paged);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int failed = 0, one = 1;
	if (dv->paged && dv->run_batch) { /* the whole batch in one launch, where the device's kernels take it */
		RunBatch rb = {seq, p->batch, p->max_pages, p->table, p->lens, p->cu, NULL, NULL};
		one = dv->run_batch(&rb, o, msg, n);
		failed = one < 0;
	}
	for (int b = 0; b < p->batch && !failed && one; b++) {
		if (!seq[b]->rows)
			continue;
		failed = dv->run(seq[b], o, msg, n);
		if (failed) {
			char why[768];
			snprintf(why, sizeof why, "%s", msg);
			snprintf(msg, n, "sequence %d (%d queries, %d keys): %s", b, seq[b]->rows, seq[b]->len, why);
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (seconds)
		*seconds = (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
	if (rc && !failed) {
		*rc = (RunCheck){xcalloc(c->nfinal, sizeof(OutCheck)), c->nfinal, 1};
		for (int k = 0; k < c->nfinal; k++)
			rc->out[k].name = strdup(c->finalize[k].name);
		int first = 1;
		RunChecker *k = runchecker_new(c);
		for (int b = 0; b < p->batch; b++) {
			if (!seq[b]->rows)
				continue;
			RunCheck one;
			runchecker_run(k, seq[b], &one);
			for (int k = 0; k < c->nfinal; k++)
				merge_check(p, b, seq[b]->rows, seq[b]->fin[k].width, &rc->out[k], &one.out[k], first);
			rc->ok &= one.ok;
			first = 0;
			runcheck_free(&one);
		}
		runchecker_free(k);
		if (first)
			for (int k = 0; k < c->nfinal; k++)
				rc->out[k].basis = "the float64 reference";
	}
	for (int b = 0; b < p->batch; b++) {
		if (!failed)
			paged_store(p, b, seq[b]);
		sequence_free(seq[b]);
	}
	free(seq);
	return failed ? -1 : 0;
}

void paged_args_from(const Carrier *c, const CudaArgs *all, int s0, int page_size, size_t ws_words, CudaArgs *a)
{
	*a = *all;
	if (s0 <= 0)
		return;
	int pi = c->nelem + c->ncol + c->nrow; /* the block table, then seq_lens and cu_seqlens_q */
	a->in[pi] = (const int32_t *)all->in[pi] + (size_t)s0 * (size_t)(all->len / page_size);
	a->in[pi + 1] = (const int32_t *)all->in[pi + 1] + s0;
	a->ws = (uint32_t *)all->ws + (size_t)s0 * ws_words;
	if (all->in[pi + 2]) { /* its offsets count from the batch's first query */
		a->in[pi + 2] = (const int32_t *)all->in[pi + 2] + s0;
		return;
	}
	size_t at = (size_t)s0 * (size_t)all->rows * (size_t)(all->heads > 0 ? all->heads : 1); /* [rows][heads] */
	for (int k = 0; k < c->nrow; k++)
		a->in[c->nelem + c->ncol + k] = (const char *)all->in[c->nelem + c->ncol + k] +
						at * run_kind_size(c->row[k].storage) * (size_t)spec_decl_width(&c->row[k]);
	for (int k = 0; k < c->nfinal; k++) {
		Ty t = c->finalize[k].e->ty;
		a->out[k] = (char *)all->out[k] + at * run_kind_size(t.kind) * (size_t)(t.len ? t.len : 1);
	}
}

double paged_kv_bytes(const Paged *p)
{
	double keys = 0, per_key = 0;
	for (int b = 0; b < p->batch; b++)
		keys += p->lens[b];
	for (int k = 0; k < p->c->ncol; k++)
		per_key += (double)p->col[k].width * run_kind_size(p->col[k].kind);
	return keys * p->kv_heads * per_key;
}

double paged_bytes(const Paged *p)
{
	double s = paged_kv_bytes(p);
	for (int k = 0; k < p->c->nrow; k++)
		s += (double)p->row[k].n * p->row[k].width * run_kind_size(p->row[k].kind);
	for (int k = 0; k < p->c->nfinal; k++)
		s += (double)p->fin[k].n * p->fin[k].width * run_kind_size(p->fin[k].kind);
	return s;
}
