/* dev_gpu.c: the GPU device for `assoc run --device gpu` (see gpu.h). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compiler/devices/gpu.h"
#include "compiler/devices/paged.h"

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static void unload_all(Gpu *g)
{
	for (int i = 0; i < g->nmods; i++)
		rt_unload(g->rt, g->mods[i]);
	free(g->mods);
	free(g->vmod);
	g->mods = g->vmod = NULL;
	g->nmods = 0;
}

/* Keep what NVRTC said compiling for g->m (its warnings: a compile that
 * succeeds discards them otherwise), up to 16 KB. */
static void note_said(Gpu *g)
{
	const char *s = nvrtc_said(g->nv);
	size_t have = g->said ? strlen(g->said) : 0, add = strlen(s);
	if (!add || have + add > 16384)
		return;
	char *all = realloc(g->said, have + add + 2);
	if (!all)
		abort();
	memcpy(all + have, s, add + 1);
	if (all[have + add - 1] != '\n')
		memcpy(all + have + add, "\n", 2);
	g->said = all;
}

void gpu_print_said(const Gpu *g, FILE *f)
{
	if (g->said)
		fprintf(f, "gpu: NVRTC's warnings:\n%s", g->said);
}

/* Compile the variants of g->m that want marks as one NVRTC program and
 * load it: their kernels keep the names the whole module gives them. */
static int load_variants(Gpu *g, const unsigned char *want, char *msg, size_t n)
{
	char *src = cuda_module_src_of(&g->m, want), *ptx = NULL;
	RtModule *mod = NULL;
	int cached = 0;
	double t0 = now_ms();
	/* g's modules live in the primary context, whichever is current (a
	 * caller's, in gpu_run_device, loads the whole module there itself) */
	void *cur = NULL, *primary = rt_primary_ctx(g->rt);
	int rc = rt_enter_ctx(g->rt, &cur, msg, n) || (cur != primary && rt_set_ctx(g->rt, primary, msg, n)) ||
		 nvrtc_ptx(g->nv, src, g->arch, &ptx, &cached, msg, n) || rt_load_ptx(g->rt, ptx, &mod, msg, n);
	if (cur && cur != primary) {
		char why[256];
		if (rt_set_ctx(g->rt, cur, why, sizeof why) && !rc) {
			rt_unload(g->rt, mod);
			snprintf(msg, n, "%s", why);
			rc = -1;
		}
	}
	g->compile_ms += now_ms() - t0;
	free(src);
	free(ptx);
	if (rc)
		return -1;
	note_said(g);
	g->ptx_cached = (g->nmods == 0 || g->ptx_cached) && cached;
	g->mods[g->nmods++] = mod;
	for (int v = 0; v < g->m.nvar; v++)
		if (want[v]) {
			char names[3][64];
			g->vmod[v] = mod;
			g->compiled += cuda_kernel_names(&g->m, v, names);
		}
	return 0;
}

int gpu_ready(Gpu *g, int v, char *msg, size_t n)
{
	if (v < 0 || v >= g->m.nvar) {
		snprintf(msg, n, "no variant %d in a module of %d", v, g->m.nvar);
		return -1;
	}
	if (g->vmod[v])
		return 0;
	unsigned char *want = calloc(g->m.nvar, 1);
	if (!want)
		abort();
	want[v] = 1;
	int rc = load_variants(g, want, msg, n);
	free(want);
	return rc;
}

int gpu_function(Gpu *g, int v, const char *name, void **fn, char *msg, size_t n)
{
	return gpu_ready(g, v, msg, n) || rt_function(g->rt, g->vmod[v], name, fn, msg, n) ? -1 : 0;
}

/* Lower g's module: the tuning space (space), every variant the device
 * fits compiled and loaded at once;
 * the default variants, or the one variant config names, each compiled
 * when first needed.  Replaces a module made before. */
static int gpu_module(Gpu *g, const char *config, int space, char *msg, size_t n)
{
	unload_all(g);
	if (g->m.src)
		cuda_module_free(&g->m);
	g->gen++; /* modules loaded in other contexts are stale */
	g->compile_ms = 0;
	free(g->said);
	g->said = NULL;
	g->ptx_cached = 0;
	g->compiled = 0;
	g->custom = config != NULL;
	int smem = rt_device(g->rt)->smem_per_block_optin;
	if (space		 ? cuda_module_space_for(g->c, g->arch, smem, &g->m, msg, n)
	    : g->page_size ? cuda_module_paged(g->c, config, g->arch, smem, g->page_size, &g->m, msg, n)
			   : cuda_module_for(g->c, config, g->arch, smem, &g->m, msg, n))
		return -1;
	g->vmod = calloc(g->m.nvar, sizeof *g->vmod);
	g->mods = calloc(g->m.nvar, sizeof *g->mods);
	if (!g->vmod || !g->mods)
		abort();
	if (!space)
		return 0;
	/* every variant the device's shared memory takes: the tuner skips the
	 * others before it asks for their kernels, so compiling them (at head
	 * dim 256 most of the space under a 48 KB limit) would be time lost */
	unsigned char *fit = malloc(g->m.nvar);
	if (!fit)
		abort();
	int nfit = 0;
	for (int v = 0; v < g->m.nvar; v++) {
		char why[160];
		nfit += fit[v] = (unsigned char)cuda_fits(&g->m, v, why, sizeof why);
	}
	int rc = nfit ? load_variants(g, fit, msg, n) : 0;
	free(fit);
	return rc;
}

static int open_gpu(Gpu *g, Carrier *c, int space, int page_size, int aside, char *msg, size_t n)
{
	memset(g, 0, sizeof *g);
	g->c = c;
	g->page_size = page_size;
	if ((aside ? rt_open_aside : rt_open)(&g->rt, NULL, 0, msg, n))
		return -1;
	const RtDevice *dev = rt_device(g->rt);
	/* sm_90 is sm_90a: its arch-specific instructions (wgmma, setmaxnreg)
	 * are the Hopper attention template's, and code for it runs on this
	 * chip alone, as code here always does */
	snprintf(g->arch, sizeof g->arch, "sm_%d%d%s", dev->major, dev->minor, dev->major == 9 && dev->minor == 0 ? "a" : "");
	if (nvrtc_open(&g->nv, msg, n) || gpu_module(g, NULL, space, msg, n)) {
		gpu_close(g);
		return -1;
	}
	return 0;
}

int gpu_open(Gpu *g, Carrier *c, int space, char *msg, size_t n) { return open_gpu(g, c, space, 0, 0, msg, n); }

int gpu_open_paged(Gpu *g, Carrier *c, int page_size, char *msg, size_t n)
{
	return open_gpu(g, c, 0, page_size, 0, msg, n);
}

int gpu_open_aside(Gpu *g, Carrier *c, int page_size, char *msg, size_t n)
{
	return open_gpu(g, c, 0, page_size, 1, msg, n);
}

void gpu_close(Gpu *g)
{
	/* g's modules are unloaded from their own context, the primary one; a
	 * library's caller keeps its current one */
	void *was = NULL, *primary = g->rt ? rt_primary_ctx(g->rt) : NULL;
	char why[256];
	int moved = g->nmods && !rt_get_ctx(g->rt, &was, why, sizeof why) && was != primary &&
		    !rt_set_ctx(g->rt, primary, why, sizeof why);
	unload_all(g);
	if (moved)
		rt_set_ctx(g->rt, was, why, sizeof why);
	if (g->m.src)
		cuda_module_free(&g->m);
	nvrtc_close(g->nv);
	rt_close(g->rt);
	free(g->said);
	memset(g, 0, sizeof *g);
}

static size_t buf_bytes(const Buffer *b) { return b->n * b->width * run_kind_size(b->kind); }

/* The argument block's params and shape. */
static void args_rest(const RunData *d, GpuBufs *b)
{
	for (int p = 0; p < d->c->nparams; p++)
		b->a.prm[p] = d->params[p];
	b->a.rows = d->rows;
	b->a.len = d->len;
	b->a.heads = d->heads > 0 ? d->heads : 1;
	b->a.kv_heads = d->kv_heads > 0 ? d->kv_heads : 1;
}

int gpu_upload(Gpu *g, RunData *d, GpuBufs *b, char *msg, size_t n)
{
	Carrier *c = d->c;
	const Buffer *in[CUDA_MAXIN];
	int nin = 0;
	memset(b, 0, sizeof *b);
	for (int k = 0; k < c->nelem; k++)
		in[nin++] = &d->elem[k];
	for (int k = 0; k < c->ncol; k++)
		in[nin++] = &d->col[k];
	for (int k = 0; k < c->nrow; k++)
		in[nin++] = &d->row[k];
	/* paged columns: the run's row of the block table after the inputs
	 * (ATTN_PI), the pages it reads */
	Buffer table = {TY_I32, 1, 0, (void *)d->page.table};
	if (d->page.size) {
		table.n = d->len ? ((size_t)d->len + d->page.size - 1) / d->page.size : 1;
		in[nin++] = &table;
	}
	for (int k = 0; k < nin; k++) {
		/* paged kernels read the row inputs as [rows][heads] */
		int tok = d->page.size && k >= c->nelem + c->ncol && k < c->nelem + c->ncol + c->nrow;
		void *src = tok ? run_rows_major(in[k], d->heads, d->rows) : in[k]->p;
		int bad = rt_alloc(g->rt, buf_bytes(in[k]), &b->in[k], msg, n) ||
			  rt_upload(g->rt, b->in[k], src, buf_bytes(in[k]), msg, n);
		if (tok)
			free(src);
		if (bad)
			return -1;
	}
	for (int o = 0; o < c->nfinal + c->nmap; o++) {
		const Buffer *ob = o < c->nfinal ? &d->fin[o] : &d->map[o - c->nfinal];
		if (rt_alloc(g->rt, buf_bytes(ob), &b->out[o], msg, n))
			return -1;
	}
	for (int k = 0; k < nin; k++)
		b->a.in[k] = (const void *)(size_t)b->in[k];
	for (int o = 0; o < c->nfinal + c->nmap; o++)
		b->a.out[o] = (void *)(size_t)b->out[o];
	args_rest(d, b);
	return 0;
}

int gpu_download(Gpu *g, RunData *d, GpuBufs *b, char *msg, size_t n)
{
	Carrier *c = d->c;
	if (rt_sync(g->rt, msg, n))
		return -1;
	for (int o = 0; o < c->nfinal + c->nmap; o++) {
		Buffer *ob = o < c->nfinal ? &d->fin[o] : &d->map[o - c->nfinal];
		if (!buf_bytes(ob)) /* no rows: a caller's buffer of 0 bytes may be NULL */
			continue;
		/* paged kernels write the outputs as [rows][heads] */
		void *to = d->page.size ? malloc(buf_bytes(ob) + 1) : ob->p;
		if (!to)
			abort();
		int bad = rt_download(g->rt, to, b->out[o], buf_bytes(ob), msg, n);
		if (d->page.size) {
			if (!bad)
				run_rows_major_put(ob, d->heads, d->rows, to);
			free(to);
		}
		if (bad)
			return -1;
	}
	return 0;
}

void gpu_free_bufs(Gpu *g, GpuBufs *b)
{
	for (int k = 0; k < CUDA_MAXIN; k++)
		if (b->in[k])
			rt_free(g->rt, b->in[k]);
	for (int o = 0; o < CUDA_MAXOUT; o++)
		if (b->out[o])
			rt_free(g->rt, b->out[o]);
	if (b->ws)
		rt_free_now(g->rt, b->ws);
	memset(b, 0, sizeof *b);
}

/* TMA reads q, k and v from 16-byte aligned addresses only: a caller's
 * pointers that are not go to the mma.sync template's prefill variant
 * (its loads take any 4-byte aligned address, which the library asks of
 * them), v itself otherwise. */
static int tma_aligned_or_fallback(const Gpu *g, const GpuBufs *b, int v)
{
	const CudaAttn *at = &g->m.attn;
	if (!g->m.var[v].wg || !(((size_t)b->a.in[at->qi] | (size_t)b->a.in[at->ki] | (size_t)b->a.in[at->vi]) & 15))
		return v;
	for (int k = 0; k < g->m.nvar; k++)
		if (g->m.var[k].fam == FAM_ATTN && !g->m.var[k].wg && g->m.var[k].ks <= 1 && cuda_fits(&g->m, k, NULL, 0))
			return k;
	return v;
}

int gpu_launch(Gpu *g, GpuBufs *b, int v, int split, int rows, int len, char *msg, size_t n)
{
	CudaPlan p;
	if (g->m.var[v].fam == FAM_ATTN)
		v = tma_aligned_or_fallback(g, b, v);
	const Variant *x = &g->m.var[v];
	if (!cuda_takes_len(&g->m, v, len, msg, n)) /* a kept row past the stash would overwrite shared memory */
		return -1;
	int heads = b->a.heads > 0 ? b->a.heads : 1;
	/* runs of the query heads that share keys and values */
	if (x->fam == FAM_ATTN && b->a.kv_heads > 0 && run_attn_rows(&rows, &heads, b->a.kv_heads, msg, n))
		return -1;
	cuda_plan_h(&g->m, v, rows, len, heads,
		    x->fam == FAM_SPLITK || x->fam == FAM_SCAN || x->fam == FAM_ATTN ? split : 1, &p);
	if (p.ws_bytes > b->ws_bytes) {
		/* a stream's workspace grows in the stream's order: the launches
		 * before it still read the old one */
		if (b->ws)
			b->stream_ws ? rt_free_async(g->rt, b->ws) : rt_free(g->rt, b->ws);
		b->ws = 0;
		b->ws_bytes = 0;
		if (b->stream_ws ? rt_alloc_async(g->rt, p.ws_bytes, &b->ws, msg, n) : rt_alloc(g->rt, p.ws_bytes, &b->ws, msg, n))
			return -1;
		b->ws_bytes = p.ws_bytes;
		b->zeroed_bytes = 0;
	}
	/* zeroed once for a run of launches with the same layout: another
	 * layout's launches may have written over it */
	if (p.zero_bytes && (b->zeroed_at != p.zero_at || b->zeroed_bytes != p.zero_bytes) &&
	    rt_memset(g->rt, b->ws + p.zero_at, 0, p.zero_bytes, msg, n))
		return -1;
	b->zeroed_at = p.zero_at, b->zeroed_bytes = p.zero_bytes;
	b->a.ws = (void *)(size_t)b->ws;
	b->a.split = p.split;
	b->a.chunk = p.chunk;
	/* the Hopper template's tensor maps, the fwd kernel's second parameter
	 * (encoding is host work of a few microseconds) */
	_Alignas(64) unsigned char maps[3][128];
	if (x->fam == FAM_ATTN && x->wg) {
		CudaTmap tm[3];
		CudaArgs sh = b->a;
		sh.len = len;
		sh.heads = b->a.heads > 0 ? b->a.heads : 1, sh.kv_heads = b->a.kv_heads > 0 ? b->a.kv_heads : 1;
		cuda_attn90_maps(&g->m, v, &sh, tm);
		for (int k = 0; k < 3; k++)
			if (rt_tensor_map(g->rt, maps[k], g->m.attn.f8 ? RT_TMAP_U8 : g->m.attn.bf16 ? RT_TMAP_BF16 : RT_TMAP_F16,
					  tm[k].swizzle, tm[k].rank, (RtPtr)(size_t)tm[k].base, tm[k].dims, tm[k].strides,
					  tm[k].box, msg, n))
				return -1;
	}
	void *args[] = {&b->a, maps};
	for (int k = 0; k < p.nk; k++) {
		void *fn;
		unsigned grid[3] = {p.k[k].grid, 1, 1}, block[3] = {p.k[k].block, 1, 1};
		if (!grid[0]) /* no rows: nothing to do, and a block of a kernel that does not look would */
			continue;
		if (gpu_function(g, v, p.k[k].name, &fn, msg, n) ||
		    rt_launch_cluster(g->rt, fn, grid, block, p.k[k].smem, p.k[k].cluster, args, msg, n))
			return -1;
	}
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double gpu_median_ms(Gpu *g, int (*fn)(void *, char *, size_t), void *ctx, RtPtr flush, size_t flush_bytes, int warmup, int runs,
		     char *msg, size_t n)
{
	double t[32];
	if (runs < 1 || runs > 32)
		runs = runs < 1 ? 1 : 32;
	for (int i = 0; i < warmup; i++)
		if (fn(ctx, msg, n) || rt_sync(g->rt, msg, n))
			return -1;
	for (int i = 0; i < runs; i++) {
		float ms;
		if (rt_memset(g->rt, flush, (unsigned char)i, flush_bytes, msg, n) || rt_time(g->rt, fn, ctx, &ms, msg, n))
			return -1;
		t[i] = ms;
	}
	qsort(t, runs, sizeof *t, cmp_double);
	return t[runs / 2];
}

/* Rows and lengths in power-of-two buckets: one tuning choice per bucket. */
static int bucket(int v)
{
	int b = 1;
	while (b < v && b < (1 << 30))
		b <<= 1;
	return b;
}

void gpu_tune_key(Gpu *g, const RunData *d, char *key, size_t n)
{
	const RtDevice *dev = rt_device(g->rt);
	int maj, min;
	nvrtc_version(g->nv, &maj, &min);
	char dtypes[128] = "";
	for (int k = 0; k < d->c->nelem; k++) {
		size_t l = strlen(dtypes);
		snprintf(dtypes + l, sizeof dtypes - l, "%s%s", l ? "," : "", ty_kind_name(d->c->elem[k].storage));
	}
	snprintf(key, n, "device=%s;cc=%d.%d;sms=%d;driver=%d;nvrtc=%d.%d;template=%s/%016llx;spec=%s;dtypes=%s;"
			 "rows=%d;len=%d",
		 dev->name, dev->major, dev->minor, dev->sms, dev->driver, maj, min, variant_family_name(g->m.base),
		 (unsigned long long)blob_templates_hash(), g->m.paged ? g->m.unpaged_prefix : g->m.prefix, dtypes,
		 bucket(d->rows), bucket(d->len));
	if (d->heads > 1) {
		size_t l = strlen(key);
		snprintf(key + l, n - l, ";heads=%d/%d", d->heads, d->kv_heads);
	}
}

/* The variant of g's module that config names; a configuration outside
 * the module (a tuned variant from the wider space, or one asked for by
 * --config) replaces the module by one of it alone.  -1 with msg. */
static int gpu_variant(Gpu *g, const char *config, int *v, char *msg, size_t n)
{
	*v = cuda_find_variant(&g->m, g->c, config);
	if (*v >= 0)
		return 0;
	Variant x;
	if (variant_parse(config, &x, msg, n) || gpu_module(g, config, 0, msg, n)) /* a bad text keeps the module */
		return -1;
	*v = cuda_find_variant(&g->m, g->c, config);
	if (*v < 0)
		snprintf(msg, n, "configuration '%s' gives no variant of this carrier", config);
	return *v < 0 ? -1 : 0;
}

int gpu_choose(Gpu *g, const RunData *d, const RunOpts *o, int *v, int *split, char *why, size_t n)
{
	Variant x;
	*split = o->split > 0 ? o->split : 1;
	if (o->config) {
		if (gpu_variant(g, o->config, v, why, n) || gpu_ready(g, *v, why, n))
			return -1;
		char note[640];
		if (cuda_config_note(&g->m, *v, o->config, "running", note, sizeof note)) /* what runs instead, said */
			fprintf(stderr, "assoc: note: %s\n", note);
		if (o->split <= 0 && !variant_parse(o->config, &x, why, n) && x.split > 0) { /* an explicit --split stands */
			*split = cuda_config_split(o->config, x.split, d->len, note, sizeof note);
			if (note[0])
				fprintf(stderr, "assoc: note: %s\n", note);
		}
		/* a configuration asked for by name may spill, which the rule's
		 * and the tuner's never do: said where the choice is */
		TuneResources r;
		if (!gpu_resources(g, *v, &r, why, n) && r.local > 0)
			snprintf(why, n, "--config; it takes %d bytes of local memory a thread (spills or a stack), which the rule's and the "
				 "tuner's variants do not", r.local);
		else
			snprintf(why, n, "--config");
		return 0;
	}
	if (!o->deterministic) {
		TuneCache tc;
		char key[1024], val[256], miss[128], err[256];
		gpu_tune_key(g, d, key, sizeof key);
		/* the tuner stores a variant with its split (variant_str); any other
		 * text, a damaged entry or one of an older format, is a miss */
		if (!tc_open(&tc, NULL, err, sizeof err) && tc_get(&tc, key, val, sizeof val, miss, sizeof miss) &&
		    !variant_parse(val, &x, err, sizeof err) && x.split > 0 && !gpu_variant(g, val, v, err, sizeof err) &&
		    !gpu_ready(g, *v, err, sizeof err)) {
			if (o->split <= 0) /* an explicit --split stands */
				*split = x.split;
			snprintf(why, n, "tuned (cache)");
			return 0;
		}
	}
	/* back to the defaults where a tuned configuration failed to build or
	 * an earlier choice left one configuration's module */
	if ((!g->m.src || g->custom) && gpu_module(g, NULL, 0, why, n))
		return -1;
	int rows = d->rows, heads = d->heads;
	if (g->m.base == FAM_ATTN && d->kv_heads > 0) /* runs of the query heads that share keys and values */
		rows *= d->heads / d->kv_heads, heads = d->kv_heads;
	*v = cuda_pick(&g->m, rows, d->len, *split);
	if (g->m.var[*v].fam == FAM_ATTN && o->split <= 0)
		*split = cuda_attn_split(&g->m, *v, rows, d->len, heads, rt_device(g->rt)->sms);
	if (gpu_ready(g, *v, why, n)) /* the chosen variant alone compiled: the others wait until needed */
		return -1;
	snprintf(why, n, o->deterministic ? "fixed (--deterministic)" : "rule (not tuned for this shape)");
	return 0;
}

/* Tell runcheck_run whether variant v rounds attention's P (RunData.p_round). */
static void mark_p(const Gpu *g, int v, RunData *d)
{
	const CudaAttn *at = &g->m.attn;
	int kind = cuda_p_round_kind(&g->m, v);
	if (at->sum)
		runcheck_round_p_sum(d, kind, at->fo, at->v);
	else
		runcheck_round_p(d, kind, at->fm, at->fl, at->fo);
}

/* k: NULL, or the checker to take (runchecker_keep) */
static int checked_by(RunChecker *k, RunData *d, char *msg, size_t n)
{
	RunCheck rc;
	if (k)
		runchecker_run(k, d, &rc);
	else
		runcheck_run(d, &rc);
	int bad = -1;
	for (int o = 0; o < rc.nout; o++)
		if (rc.out[o].worst_ratio > 1 || rc.out[o].nan_mismatch)
			bad = o;
	if (bad >= 0)
		snprintf(msg, n, "wrong result: %s off by %.3g (%.3g of tolerance)", rc.out[bad].name, rc.out[bad].max_abs,
			 rc.out[bad].worst_ratio);
	runcheck_free(&rc);
	return bad >= 0 ? -1 : 0;
}

static int checked(RunData *d, char *msg, size_t n) { return checked_by(NULL, d, msg, n); }

int gpu_validate_kept(Gpu *g, const RunData *d, int v, int split, RunData **small, RunChecker *k, char *msg, size_t n)
{
	/* two key/value heads at most, each with its query heads: the heads'
	 * offsets and grouping are exercised, and the float64 reference, which
	 * a checker that keeps rows evaluates for the first candidate alone,
	 * stays short (attention, 16 heads of 64 rows x 2048 keys at head dim
	 * 128: about 9 s) */
	if (!*small) {
		int kv = d->kv_heads > 2 ? 2 : d->kv_heads, heads = d->kv_heads > 2 ? d->heads / d->kv_heads * 2 : d->heads;
		*small = rundata_new_heads(d->c, d->rows < 64 ? d->rows : 64, d->len < 2048 ? d->len : 2048, heads, kv);
		memcpy((*small)->params, d->params, d->c->nparams * sizeof *d->params);
		if (rundata_draw(*small, 7, NULL, 0, msg, n)) {
			/* not kept: a later candidate would run on inputs never drawn */
			rundata_free(*small);
			*small = NULL;
			return -1;
		}
	}
	RunData *s = *small;
	/* no output of the candidate before stands in for one this one left unwritten */
	for (int o = 0; o < d->c->nfinal; o++)
		memset(s->fin[o].p, 0, s->fin[o].n * s->fin[o].width * run_kind_size(s->fin[o].kind));
	for (int o = 0; o < d->c->nmap; o++)
		memset(s->map[o].p, 0, s->map[o].n * s->map[o].width * run_kind_size(s->map[o].kind));
	GpuBufs b = {0};
	mark_p(g, v, s);
	int rc = gpu_upload(g, s, &b, msg, n) || gpu_launch(g, &b, v, split, s->rows, s->len, msg, n) ||
			 gpu_download(g, s, &b, msg, n)
		 ? -1
		 : checked_by(k, s, msg, n) ? 1
					    : 0;
	gpu_free_bufs(g, &b);
	return rc;
}

int gpu_validate(Gpu *g, const RunData *d, int v, int split, char *msg, size_t n)
{
	RunData *small = NULL;
	int rc = gpu_validate_kept(g, d, v, split, &small, NULL, msg, n);
	rundata_free(small);
	return rc;
}

int gpu_check_sample(const Gpu *g, RunData *d, int v, char *msg, size_t n)
{
	int heads = d->heads > 0 ? d->heads : 1, hs[3] = {0, heads / 2, heads - 1};
	for (int i = 0; i < 3; i++) {
		if (i && hs[i] == hs[i - 1])
			continue;
		for (int k = 0; k < GPU_SAMPLE_ROWS; k++) {
			int r = (int)((long long)k * (d->rows - 1) / (GPU_SAMPLE_ROWS - 1));
			if (k && r == (int)((long long)(k - 1) * (d->rows - 1) / (GPU_SAMPLE_ROWS - 1)))
				continue;
			RunData *one = rundata_rows_view(d, hs[i], r, 1);
			char why[512];
			mark_p(g, v, one);
			int bad = checked(one, why, sizeof why);
			rundata_view_free(one);
			if (bad) {
				snprintf(msg, n, "at %d rows x %d, row %d of head %d: %s", d->rows, d->len, r, hs[i], why);
				return 1;
			}
		}
	}
	return 0;
}

static int gpu_available(char *why, size_t n)
{
	/* no context: retaining the primary one here and releasing it would
	 * create it and reset it, and the run's open create it again */
	if (rt_probe(NULL, 0, why, n))
		return 0;
	/* a run follows, after the verdict: NVRTC loads meanwhile */
	nvrtc_preload();
	return 1;
}

static int run_open(Gpu *g, RunData *d, const RunOpts *o, char *msg, size_t n)
{
	GpuBufs b;
	int v, split, rc = -1;
	char why[512];
	if (gpu_choose(g, d, o, &v, &split, why, sizeof why)) {
		snprintf(msg, n, "%s", why);
		return -1;
	}
	/* a template without heads (the carrier's, or a generic one that
	 * --config built the module of): one head at a time */
	if (d->heads > 1 && g->m.base != FAM_ATTN) {
		for (int h = 0; h < d->heads; h++) {
			RunData *hv = rundata_head_view(d, h);
			rc = run_open(g, hv, o, msg, n);
			rundata_view_free(hv);
			if (rc)
				return rc;
		}
		return 0;
	}
	if (d->page.size && !g->m.paged) { /* a module that reads runs of keys: gathered */
		if (rundata_from_zero_ok(d, "the row templates", msg, n))
			return -1;
		RunData *u = rundata_unpaged(d);
		rc = run_open(g, u, o, msg, n);
		d->p_round = u->p_round;
		rundata_unpaged_free(u);
		return rc;
	}
	mark_p(g, v, d);
	if (!gpu_upload(g, d, &b, msg, n) && !gpu_launch(g, &b, v, split, d->rows, d->len, msg, n) &&
	    !gpu_download(g, d, &b, msg, n))
		rc = 0;
	if (o->verbose) {
		char cfg[128];
		variant_str(&g->m.var[v], cfg, sizeof cfg);
		fprintf(stderr, "gpu: %s (%s), split %d, %s, %d kernel%s %s in %.0f ms\n", cfg, why, split, g->arch,
			g->compiled, g->compiled == 1 ? "" : "s", g->ptx_cached ? "from the PTX cache" : "compiled",
			g->compile_ms);
		gpu_print_said(g, stderr);
	}
	gpu_free_bufs(g, &b);
	return rc;
}

/* A run on host arrays takes g's own context (its modules' and its
 * buffers'), whichever the thread had current, and gives that back. */
static int in_primary(Gpu *g, int (*run)(Gpu *, void *, const RunOpts *, char *, size_t), void *d,
		      const RunOpts *o, char *msg, size_t n)
{
	void *was, *primary = rt_primary_ctx(g->rt);
	if (rt_get_ctx(g->rt, &was, msg, n) || (was != primary && rt_set_ctx(g->rt, primary, msg, n)))
		return -1;
	int rc = run(g, d, o, msg, n);
	char why[256];
	if (was != primary && rt_set_ctx(g->rt, was, why, sizeof why) && rc >= 0) {
		snprintf(msg, n, "%s", why);
		rc = -1;
	}
	return rc;
}

static int run_open_any(Gpu *g, void *d, const RunOpts *o, char *msg, size_t n) { return run_open(g, d, o, msg, n); }

int gpu_run_open(Gpu *g, RunData *d, const RunOpts *o, char *msg, size_t n)
{
	return in_primary(g, run_open_any, d, o, msg, n);
}

/* g's module loaded in ctx, a context of the caller's other than g's
 * primary one (every variant, through the PTX cache after the first
 * time; again when g's changes), for the launches of run; g's own
 * modules back after. */
static int in_ctx(Gpu *g, RtModule **mod, unsigned *gen, int (*run)(Gpu *, void *, char *, size_t), void *ctx,
		  char *msg, size_t n)
{
	if (*mod && *gen != g->gen) {
		rt_unload(g->rt, *mod);
		*mod = NULL;
	}
	if (!*mod) {
		char *ptx = NULL;
		int cached = 0;
		int rc = nvrtc_ptx(g->nv, g->m.src, g->arch, &ptx, &cached, msg, n) || rt_load_ptx(g->rt, ptx, mod, msg, n);
		free(ptx);
		if (rc)
			return -1;
	}
	*gen = g->gen;
	RtModule **own = g->vmod, **there = malloc(g->m.nvar * sizeof *there);
	if (!there)
		abort();
	for (int i = 0; i < g->m.nvar; i++)
		there[i] = *mod;
	g->vmod = there;
	int rc = run(g, ctx, msg, n);
	g->vmod = own;
	free(there);
	return rc;
}

typedef struct {
	GpuBufs *b;
	int v, split, rows, len;
} PlainLaunch;

static int plain_launch(Gpu *g, void *ctx, char *msg, size_t n)
{
	PlainLaunch *l = ctx;
	return gpu_launch(g, l->b, l->v, l->split, l->rows, l->len, msg, n);
}

int gpu_run_device(Gpu *g, RunData *d, const RunOpts *o, GpuBufs *b, void *ctx, RtModule **mod, unsigned *gen,
		   char *msg, size_t n)
{
	int v, split;
	char why[512];
	void *primary = rt_primary_ctx(g->rt);
	/* the choice may build a module: in the primary context, g's own */
	if (ctx != primary && rt_set_ctx(g->rt, primary, msg, n))
		return -1;
	int rc = gpu_choose(g, d, o, &v, &split, why, sizeof why);
	if (ctx != primary && rt_set_ctx(g->rt, ctx, msg, n))
		return -1;
	if (rc) {
		snprintf(msg, n, "%s", why);
		return -1;
	}
	if (d->heads > 1 && g->m.base != FAM_ATTN) {
		for (int h = 0; h < d->heads; h++) {
			RunData *hv = rundata_head_view(d, h);
			rc = gpu_run_device(g, hv, o, b, ctx, mod, gen, msg, n);
			rundata_view_free(hv);
			if (rc)
				return rc;
		}
		return 0;
	}
	Carrier *c = d->c;
	int nin = 0;
	for (int k = 0; k < c->nelem; k++)
		b->a.in[nin++] = d->elem[k].p;
	for (int k = 0; k < c->ncol; k++)
		b->a.in[nin++] = d->col[k].p;
	for (int k = 0; k < c->nrow; k++)
		b->a.in[nin++] = d->row[k].p;
	for (int o2 = 0; o2 < c->nfinal + c->nmap; o2++)
		b->a.out[o2] = o2 < c->nfinal ? d->fin[o2].p : d->map[o2 - c->nfinal].p;
	args_rest(d, b);
	PlainLaunch pl = {b, v, split, d->rows, d->len};
	return ctx == primary ? plain_launch(g, &pl, msg, n) : in_ctx(g, mod, gen, plain_launch, &pl, msg, n);
}

/* The kernels of plan p over a paged batch whose arguments are all, a row
 * of the grid a sequence: a launch of each per PAGED_LAUNCH_SEQS sequences
 * (CUDA's most in y), the arguments narrowed to them (the driver copies
 * them at the launch). */
static int launch_batch(Gpu *g, int v, const CudaPlan *p, const CudaArgs *all, int batch, char *msg, size_t n)
{
	size_t ws_words = cuda_paged_ws_words(&g->m, all->heads, all->kv_heads, all->rows, all->split);
	for (int s0 = 0; s0 < batch; s0 += PAGED_LAUNCH_SEQS) {
		CudaArgs a;
		paged_args_from(g->c, all, s0, g->m.paged, ws_words, &a);
		void *args[] = {&a};
		unsigned seqs = (unsigned)(batch - s0 < PAGED_LAUNCH_SEQS ? batch - s0 : PAGED_LAUNCH_SEQS);
		for (int k = 0; k < p->nk; k++) {
			void *fn;
			unsigned grid[3] = {p->k[k].grid ? p->k[k].grid : 1, seqs, 1}, block[3] = {p->k[k].block, 1, 1};
			if (gpu_function(g, v, p->k[k].name, &fn, msg, n) ||
			    rt_launch(g->rt, fn, grid, block, p->k[k].smem, args, msg, n))
				return -1;
		}
	}
	return 0;
}

typedef struct {
	GpuBufs *b;
	int v, batch;
	CudaPlan p;
} PagedLaunch;

static int paged_launch(Gpu *g, void *ctx, char *msg, size_t n)
{
	PagedLaunch *pl = ctx;
	return launch_batch(g, pl->v, &pl->p, &pl->b->a, pl->batch, msg, n);
}

/* The shape a paged batch is chosen and planned for: the most queries,
 * and the keys a row of the table holds; the blocks past a sequence's
 * own do nothing. */
static RunData paged_shape(const GpuPaged *pd)
{
	RunData shape = {.c = (Carrier *)pd->c, .rows = pd->rows, .len = pd->max_pages * pd->page_size,
			 .heads = pd->heads, .kv_heads = pd->kv_heads};
	shape.page.size = pd->page_size;
	return shape;
}

int gpu_paged_choose(Gpu *g, const GpuPaged *pd, const RunOpts *o, int *v, int *split, char *why, size_t n)
{
	const Carrier *c = pd->c;
	if (!g->m.paged)
		return snprintf(why, n, "carrier %s runs on the row templates, which read no pages: a paged batch in one "
				"launch takes the attention template", c->name), -1;
	if ((long long)pd->batch * pd->max_pages * pd->page_size > INT_MAX)
		return snprintf(why, n, "%d sequences of %d pages of %d keys: the kernels index the table's keys in 32 bits",
				pd->batch, pd->max_pages, pd->page_size), -1;
	RunData shape = paged_shape(pd);
	int G = pd->heads / pd->kv_heads;
	if (gpu_choose(g, &shape, o, v, split, why, n))
		return -1;
	if (!cuda_paged_batch(&g->m, *v)) {
		*v = cuda_paged_pick(&g->m, shape.rows * G, shape.len, *split);
		if (*v < 0)
			return snprintf(why, n, "no kernel of carrier %s takes a paged batch in one launch%s", c->name,
					o->config ? " (--config names one that runs a sequence a launch)" : ""), -1;
		if (gpu_ready(g, *v, why, n))
			return -1;
		if (o->split <= 0)
			*split = cuda_attn_split(&g->m, *v, shape.rows * G, shape.len, pd->kv_heads, rt_device(g->rt)->sms);
		snprintf(why, n, "the rule's kernel of a batch");
	}
	return cuda_takes_len(&g->m, *v, shape.len, why, n) ? 0 : -1;
}

int gpu_paged_enqueue(Gpu *g, const GpuPaged *pd, int v, int split, int zero, GpuBufs *b, void *ctx, RtModule **mod,
		      unsigned *gen, char *msg, size_t n)
{
	const Carrier *c = pd->c;
	RunData shape = paged_shape(pd);
	PagedLaunch pl = {.b = b, .v = v, .batch = pd->batch};
	cuda_plan_h(&g->m, v, shape.rows * (pd->heads / pd->kv_heads), shape.len, pd->kv_heads, split, &pl.p);
	size_t ws = cuda_paged_ws_words(&g->m, pd->heads, pd->kv_heads, shape.rows, pl.p.split) * pd->batch * 4 + 16;
	if (ws > b->ws_bytes) { /* grown in the stream's order: the launches before still read the old one */
		if (b->ws)
			b->stream_ws ? rt_free_async(g->rt, b->ws) : rt_free(g->rt, b->ws);
		b->ws = 0, b->ws_bytes = 0;
		if (b->stream_ws ? rt_alloc_async(g->rt, ws, &b->ws, msg, n) : rt_alloc(g->rt, ws, &b->ws, msg, n))
			return -1;
		b->ws_bytes = ws;
		zero = 1;
	}
	if (zero && rt_memset(g->rt, b->ws, 0, ws, msg, n))
		return -1;
	b->zeroed_bytes = 0; /* an unpaged launch's zero region is this one's no longer */
	memset(&b->a, 0, sizeof b->a);
	int nin = c->nelem;
	for (int k = 0; k < c->ncol; k++)
		b->a.in[nin++] = (const void *)(size_t)pd->col[k];
	for (int k = 0; k < c->nrow; k++)
		b->a.in[nin++] = (const void *)(size_t)pd->row[k];
	b->a.in[nin] = (const void *)(size_t)pd->table;
	b->a.in[nin + 1] = (const void *)(size_t)pd->lens;
	b->a.in[nin + 2] = (const void *)(size_t)pd->cu;
	for (int k = 0; k < c->nfinal; k++)
		b->a.out[k] = (void *)(size_t)pd->fin[k];
	for (int p = 0; p < c->nparams; p++)
		b->a.prm[p] = pd->params[p];
	b->a.rows = pd->rows;
	b->a.len = shape.len; /* the keys a row of the block table holds */
	b->a.heads = pd->heads, b->a.kv_heads = pd->kv_heads;
	b->a.ws = (void *)(size_t)b->ws;
	b->a.split = pl.p.split;
	b->a.chunk = pl.p.chunk;
	return ctx == rt_primary_ctx(g->rt) ? paged_launch(g, &pl, msg, n) : in_ctx(g, mod, gen, paged_launch, &pl, msg, n);
}

int gpu_run_paged_device(Gpu *g, const GpuPaged *pd, const RunOpts *o, GpuBufs *b, void *ctx, RtModule **mod,
			 unsigned *gen, char *msg, size_t n)
{
	int v, split;
	void *primary = rt_primary_ctx(g->rt);
	/* the choice may build a module: in the primary context, g's own */
	if (ctx != primary && rt_set_ctx(g->rt, primary, msg, n))
		return -1;
	int rc = gpu_paged_choose(g, pd, o, &v, &split, msg, n);
	if (ctx != primary && rt_set_ctx(g->rt, ctx, msg, n))
		return -1;
	return rc ? -1 : gpu_paged_enqueue(g, pd, v, split, 1, b, ctx, mod, gen, msg, n);
}

static int gpu_run(RunData *d, const RunOpts *o, char *msg, size_t n)
{
	if (run_thread_fits(d->c, msg, n))
		return -1;
	Gpu g;
	if (d->page.size ? gpu_open_paged(&g, d->c, d->page.size, msg, n) : gpu_open(&g, d->c, 0, msg, n))
		return -1;
	int rc = gpu_run_open(&g, d, o, msg, n);
	gpu_close(&g);
	return rc;
}

static int batch_open(Gpu *g, RunBatch *rb, const RunOpts *o, char *msg, size_t n)
{
	RunData *d0 = rb->seq[0];
	Carrier *c = d0->c;
	if (!g->m.paged || (o->config && strncmp(o->config, "attention", 9)))
		return 1; /* the row templates, or the generic ones asked for: a sequence at a time */
	if ((long long)rb->batch * rb->max_pages * d0->page.size > INT_MAX)
		return 1; /* the kernels index the table's keys as one row in 32 bits */
	/* chosen, and planned, for the longest sequence: its queries and its
	 * keys; the others' blocks past their own tiles or keys do nothing */
	RunData shape = *d0;
	int total = 0, heads = d0->heads, kv = d0->kv_heads;
	shape.rows = shape.len = 0;
	for (int b = 0; b < rb->batch; b++) {
		shape.rows = rb->seq[b]->rows > shape.rows ? rb->seq[b]->rows : shape.rows;
		shape.len = rb->seq[b]->len > shape.len ? rb->seq[b]->len : shape.len;
		total += rb->seq[b]->rows;
	}
	if (!total)
		return 0;
	int v, split;
	char why[512];
	if (gpu_choose(g, &shape, o, &v, &split, why, sizeof why)) {
		snprintf(msg, n, "%s", why);
		return -1;
	}
	if (!cuda_paged_batch(&g->m, v)) {
		if (o->config)
			return 1; /* a variant asked for that runs a sequence a launch */
		v = cuda_paged_pick(&g->m, shape.rows * (heads / kv), shape.len, split);
		if (v < 0 || gpu_ready(g, v, msg, n))
			return v < 0 ? 1 : -1;
		if (o->split <= 0)
			split = cuda_attn_split(&g->m, v, shape.rows * (heads / kv), shape.len, kv, rt_device(g->rt)->sms);
	}
	if (!cuda_takes_len(&g->m, v, shape.len, msg, n))
		return -1;
	for (int b = 0; b < rb->batch; b++)
		mark_p(g, v, rb->seq[b]);
	int rows = shape.rows * (heads / kv), rc = -1;
	CudaPlan p;
	cuda_plan_h(&g->m, v, rows, shape.len, kv, split, &p);
	GpuBufs gb;
	memset(&gb, 0, sizeof gb);
	int nin = c->nelem;
	size_t lay[3] = {(size_t)rb->batch * rb->max_pages * 4, (size_t)rb->batch * 4, (size_t)(rb->batch + 1) * 4};
	const void *lay_p[3] = {rb->table, rb->lens, rb->cu};
	for (int k = 0; k < c->ncol; k++, nin++) /* the pool, once */
		if (rt_alloc(g->rt, buf_bytes(&d0->col[k]), &gb.in[nin], msg, n) ||
		    rt_upload(g->rt, gb.in[nin], d0->col[k].p, buf_bytes(&d0->col[k]), msg, n))
			goto out;
	for (int k = 0; k < c->nrow; k++, nin++) {
		size_t sz = run_batch_row_bytes(rb, k);
		void *all = rb->row ? NULL : run_batch_rows(rb, k);
		int bad = rt_alloc(g->rt, sz + 16, &gb.in[nin], msg, n) ||
			  rt_upload(g->rt, gb.in[nin], rb->row ? rb->row[k].p : all, sz, msg, n);
		free(all);
		if (bad)
			goto out;
	}
	for (int k = 0; k < 3 - run_batch_uniform(rb); k++) /* no cu_seqlens_q where every sequence has as many queries */
		if (rt_alloc(g->rt, lay[k], &gb.in[nin + k], msg, n) || rt_upload(g->rt, gb.in[nin + k], lay_p[k], lay[k], msg, n))
			goto out;
	for (int k = 0; k < c->nfinal; k++)
		if (rt_alloc(g->rt, run_batch_fin_bytes(rb, k) + 16, &gb.out[k], msg, n))
			goto out;
	size_t ws = cuda_paged_ws_words(&g->m, heads, kv, shape.rows, p.split) * rb->batch * 4 + 16;
	if (rt_alloc(g->rt, ws, &gb.ws, msg, n) || rt_memset(g->rt, gb.ws, 0, ws, msg, n))
		goto out;
	for (int k = 0; k < nin + 3; k++)
		gb.a.in[k] = (const void *)(size_t)gb.in[k];
	for (int k = 0; k < c->nfinal; k++)
		gb.a.out[k] = (void *)(size_t)gb.out[k];
	args_rest(d0, &gb);
	gb.a.rows = shape.rows;
	gb.a.len = rb->max_pages * d0->page.size; /* the keys a row of the block table holds */
	gb.a.ws = (void *)(size_t)gb.ws;
	gb.a.split = p.split;
	gb.a.chunk = p.chunk;
	if (launch_batch(g, v, &p, &gb.a, rb->batch, msg, n) || rt_sync(g->rt, msg, n))
		goto out;
	for (int k = 0; k < c->nfinal; k++) {
		size_t sz = run_batch_fin_bytes(rb, k);
		void *all = rb->fin ? rb->fin[k].p : malloc(sz + 1);
		if (!all)
			abort();
		int bad = rt_download(g->rt, all, gb.out[k], sz, msg, n);
		if (!bad && !rb->fin)
			run_batch_put_fin(rb, k, all);
		if (!rb->fin)
			free(all);
		if (bad)
			goto out;
	}
	if (o->verbose) {
		char cfg[128];
		variant_str(&g->m.var[v], cfg, sizeof cfg);
		fprintf(stderr, "gpu: %d sequences in %s: %s (%s), split %d, %s\n", rb->batch,
			rb->batch > PAGED_LAUNCH_SEQS ? "launches of 65535" : "one launch", cfg, why, p.split, g->arch);
		if (g->m.explain[0]) /* the template's reasons, the Hopper one left out where it was */
			fprintf(stderr, "gpu: %s\n", g->m.explain);
		gpu_print_said(g, stderr);
	}
	rc = 0;
out:
	gpu_free_bufs(g, &gb);
	return rc;
}

static int batch_open_any(Gpu *g, void *rb, const RunOpts *o, char *msg, size_t n)
{
	return batch_open(g, rb, o, msg, n);
}

int gpu_run_batch_open(Gpu *g, RunBatch *rb, const RunOpts *o, char *msg, size_t n)
{
	return in_primary(g, batch_open_any, rb, o, msg, n);
}

static int gpu_run_batch(RunBatch *rb, const RunOpts *o, char *msg, size_t n)
{
	if (run_thread_fits(rb->seq[0]->c, msg, n))
		return -1;
	Gpu g;
	if (gpu_open_paged(&g, rb->seq[0]->c, rb->seq[0]->page.size, msg, n))
		return -1;
	int rc = gpu_run_batch_open(&g, rb, o, msg, n);
	gpu_close(&g);
	return rc;
}

const Device dev_gpu = {"gpu", gpu_available, gpu_run, cuda_config_ok, 1, gpu_run_batch};
