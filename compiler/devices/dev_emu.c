/* dev_emu.c: the emulator as a device for `assoc run --device emu`: the
 * carrier's CUDA module, one variant picked for the shape (or named by
 * --config), its kernels run on CPU fibers. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/cuda/cuda.h"
#include "compiler/devices/emu.h"
#include "compiler/devices/paged.h"
#include "runtime/emu/emu_tmap.h"

static void fill_args(RunData *d, CudaArgs *a)
{
	Carrier *c = d->c;
	rundata_pointers(d, a->in, a->out);
	for (int p = 0; p < c->nparams; p++)
		a->prm[p] = d->params[p];
	a->rows = d->rows;
	a->len = d->len;
	a->heads = d->heads > 0 ? d->heads : 1;
	a->kv_heads = d->kv_heads > 0 ? d->kv_heads : 1;
	if (d->page.size) /* the block table after the inputs (ATTN_PI) */
		a->in[c->nelem + c->ncol + c->nrow] = d->page.table;
}

/* Paged keys for a module that does not read pages: gathered first. */
static int unpaged(RunData *d, const RunOpts *o, EmuStats *st, char *msg, size_t n)
{
	if (rundata_from_zero_ok(d, "the row templates", msg, n))
		return -1;
	RunData *u = rundata_unpaged(d);
	int rc = emu_run_data(u, o, st, msg, n);
	d->p_round = u->p_round;
	rundata_unpaged_free(u);
	return rc;
}

/* Heads through a template without them: one head at a time. */
static int by_head(RunData *d, const RunOpts *o, EmuStats *st, char *msg, size_t n)
{
	for (int h = 0; h < d->heads; h++) {
		RunData *v = rundata_head_view(d, h);
		int rc = emu_run_data(v, o, st, msg, n);
		rundata_view_free(v);
		if (rc)
			return -1;
	}
	return 0;
}

int emu_run_data(RunData *d, const RunOpts *o, EmuStats *st, char *msg, size_t n)
{
	CudaModule m;
	EmuLib *lib = NULL;
	void *ws = NULL, *tok_in[CUDA_MAXIN] = {0}, *tok_out[CUDA_MAXOUT] = {0};
	int rc = -1;
	int split = o->split > 0 ? o->split : 1, v = -1, said = o->split > 0;
	Variant cv;
	if (run_thread_fits(d->c, msg, n))
		return -1;
	if (o->config && !said && !variant_parse(o->config, &cv, msg, n) && cv.split > 0) { /* --split stands over it */
		char note[320];
		split = cuda_config_split(o->config, cv.split, d->len, note, sizeof note), said = 1;
		if (note[0])
			fprintf(stderr, "assoc: note: %s\n", note);
	}
	if (d->page.size ? cuda_module_paged(d->c, NULL, o->arch, 0, d->page.size, &m, msg, n)
			 : cuda_module_for(d->c, NULL, o->arch, 0, &m, msg, n))
		return -1;
	if (o->config && m.base == FAM_ATTN && strncmp(o->config, "attention", 9)) { /* the generic templates, asked for */
		cuda_module_free(&m);
		if (cuda_module_for(d->c, o->config, o->arch, 0, &m, msg, n))
			return -1;
	}
	if (d->page.size && !m.paged) {
		cuda_module_free(&m);
		return unpaged(d, o, st, msg, n);
	}
	if (d->heads > 1 && m.base != FAM_ATTN) {
		cuda_module_free(&m);
		return by_head(d, o, st, msg, n);
	}
	if (o->config) { /* one of the module's own variants keeps the module (and its cached build) */
		v = cuda_find_variant(&m, d->c, o->config);
		if (v < 0) {
			cuda_module_free(&m);
			if (d->page.size ? cuda_module_paged(d->c, o->config, o->arch, 0, d->page.size, &m, msg, n)
					 : cuda_module_for(d->c, o->config, o->arch, 0, &m, msg, n))
				return -1;
			v = 0;
		}
	}
	if (emu_open(m.src, &lib, msg, n))
		goto out;
	/* attention plans over runs of the query heads that share keys and values */
	int rows = d->rows, heads = d->heads;
	if (m.base == FAM_ATTN && d->kv_heads > 0 && run_attn_rows(&rows, &heads, d->kv_heads, msg, n))
		goto out;
	if (v < 0)
		v = cuda_pick(&m, rows, d->len, split);
	char note[640];
	if (cuda_config_note(&m, v, o->config, "running", note, sizeof note)) /* asked for by name: what runs instead, said */
		fprintf(stderr, "assoc: note: %s\n", note);
	const Variant *x = &m.var[v];
	if (x->fam == FAM_ATTN && !said)
		split = cuda_attn_split(&m, v, rows, d->len, heads, 0);
	if (!cuda_takes_len(&m, v, d->len, msg, n))
		goto out;
	int pk = cuda_p_round_kind(&m, v);
	if (m.attn.sum)
		runcheck_round_p_sum(d, pk, m.attn.fo, m.attn.v);
	else
		runcheck_round_p(d, pk, m.attn.fm, m.attn.fl, m.attn.fo);
	CudaPlan p;
	cuda_plan_h(&m, v, rows, d->len, heads,
		    x->fam == FAM_SPLITK || x->fam == FAM_SCAN || x->fam == FAM_ATTN ? split : 1, &p);
	CudaArgsTma at; /* the Hopper kernels' block; the others read its Args alone */
	memset(&at, 0, sizeof at);
	CudaArgs *a = &at.a;
	fill_args(d, a);
	/* paged kernels read q and write the outputs as [rows][heads] */
	for (int k = 0; m.paged && k < d->c->nrow; k++)
		a->in[d->c->nelem + d->c->ncol + k] = tok_in[k] = run_rows_major(&d->row[k], d->heads, d->rows);
	for (int k = 0; m.paged && k < d->c->nfinal; k++)
		a->out[k] = tok_out[k] = run_rows_major(&d->fin[k], d->heads, d->rows);
	a->split = p.split;
	a->chunk = p.chunk;
	ws = calloc(p.ws_bytes ? p.ws_bytes : 1, 1);
	if (!ws)
		abort();
	a->ws = ws;
	if (x->fam == FAM_ATTN && x->wg) { /* the Hopper template's tensor maps, in the emulator's encoding */
		CudaTmap tm[3];
		cuda_attn90_maps(&m, v, a, tm);
		for (int k = 0; k < 3; k++)
			if (emu_tmap_encode(at.maps[k], tm[k].elem_bytes, tm[k].rank, tm[k].base, tm[k].dims, tm[k].strides,
					    tm[k].box, tm[k].swizzle, msg, n))
				goto out;
	}
	unsigned long long bytes[2] = {0, 0}, vec0 = emu_vec_loads_of(lib);
	for (int k = 0; k < p.nk; k++) {
		if (!p.k[k].grid) /* no rows: skipped, as the GPU's launches are (a grid of 0 is refused) */
			continue;
		if (emu_launch_cluster(lib, p.k[k].name, p.k[k].grid, 1, p.k[k].block, p.k[k].smem,
				       p.k[k].cluster ? p.k[k].cluster : 1, &at, bytes, msg, n))
			goto out;
	}
	for (int k = 0; m.paged && k < d->c->nfinal; k++)
		run_rows_major_put(&d->fin[k], d->heads, d->rows, tok_out[k]);
	/* the GPU zeroes the plan's zero region once for a run of launches:
	 * the kernels must leave it as they found it */
	for (size_t k = 0; k < p.zero_bytes; k++)
		if (((unsigned char *)ws)[p.zero_at + k]) {
			snprintf(msg, n, "%s left byte %zu of the workspace's zero region (counters) at %d: the next launch "
				 "would start from it", p.k[0].name, k, ((unsigned char *)ws)[p.zero_at + k]);
			goto out;
		}
	if (st) {
		variant_str(x, st->config, sizeof st->config);
		st->bytes[0] = bytes[0], st->bytes[1] = bytes[1];
		st->vec_loads = emu_vec_loads_of(lib) - vec0;
		st->plan_loads = p.loads, st->plan_stores = p.stores;
	}
	if (o->verbose) {
		char cfg[128];
		variant_str(x, cfg, sizeof cfg);
		fprintf(stderr, "emu: %s, split %d, %llu bytes loaded, %llu stored\n", cfg, p.split, bytes[0], bytes[1]);
		if (m.explain[0]) /* a template's reasons; a family without them has none */
			fprintf(stderr, "emu: %s\n", m.explain);
	}
	rc = 0;
out:
	for (int k = 0; k < CUDA_MAXIN; k++)
		free(tok_in[k]);
	for (int k = 0; k < CUDA_MAXOUT; k++)
		free(tok_out[k]);
	free(ws);
	emu_close(lib);
	cuda_module_free(&m);
	return rc;
}

int emu_run_batch(RunBatch *rb, const RunOpts *o, EmuStats *st, char *msg, size_t n)
{
	RunData *d0 = rb->seq[0];
	Carrier *c = d0->c;
	CudaModule m;
	EmuLib *lib = NULL;
	void *ws = NULL, *rows_in[CUDA_MAXIN] = {0}, *outs[CUDA_MAXOUT] = {0};
	int rc = -1, v = -1, split = o->split > 0 ? o->split : 1, said = o->split > 0;
	Variant cv;
	if (run_thread_fits(c, msg, n))
		return -1;
	if ((long long)rb->batch * rb->max_pages * d0->page.size > INT_MAX)
		return 1; /* the kernels index the table's keys as one row in 32 bits */
	int config_split = 0;
	if (o->config && !said && !variant_parse(o->config, &cv, msg, n) && cv.split > 0)
		split = cv.split, said = 1, config_split = 1;
	if (cuda_module_paged(c, NULL, o->arch, 0, d0->page.size, &m, msg, n))
		return -1;
	/* the row templates, or the generic ones asked for: a sequence at a time */
	if (!m.paged || (o->config && strncmp(o->config, "attention", 9))) {
		cuda_module_free(&m);
		return 1;
	}
	if (o->config) {
		v = cuda_find_variant(&m, c, o->config);
		if (v < 0) {
			cuda_module_free(&m);
			if (cuda_module_paged(c, o->config, o->arch, 0, d0->page.size, &m, msg, n))
				return -1;
			v = 0;
		}
	}
	int rmax = 0, lmax = 0, total = 0, heads = d0->heads, kv = d0->kv_heads;
	for (int b = 0; b < rb->batch; b++) {
		rmax = rb->seq[b]->rows > rmax ? rb->seq[b]->rows : rmax;
		lmax = rb->seq[b]->len > lmax ? rb->seq[b]->len : lmax;
		total += rb->seq[b]->rows;
	}
	if (!total) { /* no queries: nothing to launch */
		cuda_module_free(&m);
		return 0;
	}
	if (config_split) {
		char note[320];
		split = cuda_config_split(o->config, split, lmax, note, sizeof note);
		if (note[0])
			fprintf(stderr, "assoc: note: %s\n", note);
	}
	if (emu_open(m.src, &lib, msg, n))
		goto out;
	/* planned for the longest sequence, its queries and its keys: the
	 * others' blocks past their own tiles or keys do nothing */
	int rows = rmax * (heads / kv);
	if (v < 0)
		v = cuda_paged_pick(&m, rows, lmax, split);
	if (v < 0 || !cuda_paged_batch(&m, v)) { /* none, or --config named one that runs a sequence a launch */
		rc = 1;
		goto out;
	}
	char note[640];
	if (cuda_config_note(&m, v, o->config, "running", note, sizeof note))
		fprintf(stderr, "assoc: note: %s\n", note);
	const Variant *x = &m.var[v];
	if (!said)
		split = cuda_attn_split(&m, v, rows, lmax, kv, 0);
	if (!cuda_takes_len(&m, v, lmax, msg, n))
		goto out;
	int pk = cuda_p_round_kind(&m, v);
	for (int b = 0; b < rb->batch; b++)
		if (m.attn.sum)
			runcheck_round_p_sum(rb->seq[b], pk, m.attn.fo, m.attn.v);
		else
			runcheck_round_p(rb->seq[b], pk, m.attn.fm, m.attn.fl, m.attn.fo);
	CudaPlan p;
	cuda_plan_h(&m, v, rows, lmax, kv, split, &p);
	CudaArgsTma at;
	memset(&at, 0, sizeof at);
	CudaArgs *a = &at.a;
	int nin = c->nelem;
	for (int k = 0; k < c->ncol; k++)
		a->in[nin++] = d0->col[k].p; /* the pool */
	for (int k = 0; k < c->nrow; k++)
		a->in[nin++] = rb->row ? rb->row[k].p : (rows_in[k] = run_batch_rows(rb, k));
	a->in[nin] = rb->table;
	a->in[nin + 1] = rb->lens;
	a->in[nin + 2] = run_batch_uniform(rb) ? NULL : rb->cu;
	for (int k = 0; k < c->nfinal && !rb->fin; k++) {
		outs[k] = calloc(run_batch_fin_bytes(rb, k) + 1, 1);
		if (!outs[k])
			abort();
		a->out[k] = outs[k];
	}
	for (int k = 0; k < c->nfinal && rb->fin; k++)
		a->out[k] = rb->fin[k].p;
	for (int q = 0; q < c->nparams; q++)
		a->prm[q] = d0->params[q];
	a->rows = rmax;
	a->len = rb->max_pages * d0->page.size;
	a->heads = heads, a->kv_heads = kv;
	a->split = p.split;
	a->chunk = p.chunk;
	size_t ws_words = cuda_paged_ws_words(&m, heads, kv, rmax, p.split);
	ws = calloc(ws_words * rb->batch + 1, 4);
	if (!ws)
		abort();
	a->ws = ws;
	unsigned long long bytes[2] = {0, 0};
	int launches = 0;
	for (int s0 = 0; s0 < rb->batch; s0 += PAGED_LAUNCH_SEQS) { /* as many sequences a launch as the GPU's grid takes */
		int seqs = rb->batch - s0 < PAGED_LAUNCH_SEQS ? rb->batch - s0 : PAGED_LAUNCH_SEQS;
		CudaArgsTma part = at;
		paged_args_from(c, a, s0, d0->page.size, ws_words, &part.a);
		for (int k = 0; k < p.nk; k++, launches++)
			if (emu_launch_grid(lib, p.k[k].name, p.k[k].grid ? p.k[k].grid : 1, (unsigned)seqs, p.k[k].block,
					    p.k[k].smem, &part, bytes, msg, n))
				goto out;
	}
	for (int k = 0; k < c->nfinal && !rb->fin; k++)
		run_batch_put_fin(rb, k, outs[k]);
	if (st) {
		variant_str(x, st->config, sizeof st->config);
		st->bytes[0] = bytes[0], st->bytes[1] = bytes[1];
		st->launches = launches;
	}
	if (o->verbose) {
		char cfg[128];
		variant_str(x, cfg, sizeof cfg);
		fprintf(stderr, "emu: %d sequences in %s: %s, split %d, %llu bytes loaded, %llu stored\n", rb->batch,
			launches > p.nk ? "launches of 65535" : "one launch", cfg, p.split, bytes[0], bytes[1]);
		if (m.explain[0]) /* the template's reasons, the Hopper one left out where it was */
			fprintf(stderr, "emu: %s\n", m.explain);
	}
	rc = 0;
out:
	for (int k = 0; k < CUDA_MAXIN; k++)
		free(rows_in[k]);
	for (int k = 0; k < CUDA_MAXOUT; k++)
		free(outs[k]);
	free(ws);
	emu_close(lib);
	cuda_module_free(&m);
	return rc;
}

static int run(RunData *d, const RunOpts *o, char *msg, size_t n) { return emu_run_data(d, o, NULL, msg, n); }
static int run_batch(RunBatch *rb, const RunOpts *o, char *msg, size_t n) { return emu_run_batch(rb, o, NULL, msg, n); }

const Device dev_emu = {"emu", emu_available, run, cuda_config_ok, 1, run_batch};
