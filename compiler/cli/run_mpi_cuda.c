/* run_mpi_cuda.c: `assoc run --mpi` on the devices that run the carrier's
 * CUDA module: gpu, and emu (the same kernels on the CPU, host memory
 * standing in for the device's).
 *
 * Every rank holds the run's arrays (drawn from the same seed) and puts
 * them on its device once; it folds each of its slices of every row with
 * the module's split kernel (splitk_partial alone, one chunk a row, the
 * element and column inputs starting at the slice): per-row states in the
 * module's State layout, left in device memory.  The states cross the
 * ranks: on the gpu by ncclAllGather where every rank has NCCL, else
 * through the host over MPI (said once).  Rank 0 puts them in row order
 * and merges them with the module's combine kernel (splitk_combine) in
 * slice order, which also finalizes: deterministic for any carrier, and
 * with --deterministic (16 slices whatever the ranks) the same bits for
 * any number of ranks.  Attention takes its own kernels the same way:
 * each slice's keys in ATTN_PARTS splits of the attention kernel, whose
 * partial (m, l, o) states attn_combine merges and finalizes.
 *
 * --mpi-collective reduce, for (max, +) carriers: the states are split
 * into m and the sums, combined by an all-reduce MAX and an all-reduce
 * SUM (lib_mpi_maxplus_run), and rank 0 finalizes them with the
 * combine kernel over one state a row. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/cli/run_mpi.h"

#ifndef ASSOC_NO_MPI
#include <mpi.h>
#include <time.h>

#include "compiler/devices/emu.h"
#include "compiler/devices/gpu.h"
#include "compiler/lib/assoc_mpi_int.h"
#include "runtime/nccl.h"

/* Attention's partial states a slice: the attention kernel writes them
 * only when it splits the keys (with one split it finalizes). */
enum { ATTN_PARTS = 2 };

typedef struct {
	int gpu;
	int attn;    /* the attention template's kernels, not the split ones */
	size_t unit; /* bytes of a slice's states a row */
	Gpu g;         /* gpu: its module is g.m */
	CudaModule em; /* emu */
	EmuLib *lib;
	CudaModule *m;
	int v;   /* the split variant */
	RtNccl *nc; /* gpu, where every rank has NCCL */
	char *why;
	size_t n;
} Dev;

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* ---- device memory and launches, the gpu's or the emulator's ---- */

static int d_alloc(Dev *x, size_t bytes, RtPtr *p)
{
	if (x->gpu)
		return rt_alloc(x->g.rt, bytes ? bytes : 1, p, x->why, x->n) ? -1 : 0;
	void *h = calloc(1, bytes ? bytes : 1);
	if (!h)
		abort();
	*p = (RtPtr)(size_t)h;
	return 0;
}

static void d_free(Dev *x, RtPtr p)
{
	if (!p)
		return;
	if (x->gpu)
		rt_free(x->g.rt, p);
	else
		free((void *)(size_t)p);
}

static int d_up(Dev *x, RtPtr dst, const void *src, size_t bytes)
{
	if (x->gpu)
		return rt_upload(x->g.rt, dst, src, bytes, x->why, x->n) ? -1 : 0;
	memcpy((void *)(size_t)dst, src, bytes);
	return 0;
}

static int d_down(Dev *x, void *dst, RtPtr src, size_t bytes)
{
	if (x->gpu)
		return rt_download(x->g.rt, dst, src, bytes, x->why, x->n) ? -1 : 0;
	memcpy(dst, (const void *)(size_t)src, bytes);
	return 0;
}

static int d_sync(Dev *x) { return x->gpu && rt_sync(x->g.rt, x->why, x->n) ? -1 : 0; }

static int d_launch(Dev *x, const CudaLaunch *k, CudaArgs *a)
{
	if (!k->grid)
		return 0;
	if (!x->gpu) {
		unsigned long long bytes[2] = {0, 0};
		return emu_launch_kernel(x->lib, k->name, k->grid, k->block, k->smem, a, bytes, x->why, x->n) ? -1 : 0;
	}
	void *fn, *args[] = {a};
	unsigned grid[3] = {k->grid, 1, 1}, block[3] = {k->block, 1, 1};
	return gpu_function(&x->g, x->v, k->name, &fn, x->why, x->n) ||
			       rt_launch(x->g.rt, fn, grid, block, k->smem, args, x->why, x->n)
		       ? -1
		       : 0;
}

/* An attention variant of more than one tile a warp: its partial states
 * are merged by the combine kernel (one tile a warp merges inside the
 * kernel, by counters). */
static int pick_attention(Dev *x, Carrier *c, const RunOpts *o)
{
	x->v = -1;
	if (o->config)
		x->v = cuda_find_variant(x->m, c, o->config);
	for (int v = 0; v < x->m->nvar && x->v < 0 && !o->config; v++)
		if (x->m->var[v].fam == FAM_ATTN && x->m->var[v].mt > 1)
			x->v = v;
	if (x->v < 0 || x->m->var[x->v].fam != FAM_ATTN || x->m->var[x->v].mt < 2)
		return snprintf(x->why, x->n, "%s: with --mpi, an attention variant of more than one tile a warp (mt > 1), "
					      "whose partial states the combine kernel merges",
				o->config ? "--config" : "the module has none"),
		       o->config ? -1 : 1;
	x->attn = 1;
	x->unit = (size_t)ATTN_PARTS * (x->m->attn.dv + 2) * sizeof(float);
	return 0;
}

/* The module's split variant: --config's, or its first.  0; 1 with why
 * where the module has none (the cpu runs it); -1 with why. */
static int pick_split(Dev *x, Carrier *c, const RunOpts *o)
{
	x->v = -1;
	x->unit = x->m->state_size;
	if (x->m->base == FAM_ATTN)
		return pick_attention(x, c, o);
	if (o->config) {
		x->v = cuda_find_variant(x->m, c, o->config);
		if (x->v < 0 || x->m->var[x->v].fam != FAM_SPLITK)
			return snprintf(x->why, x->n, "--config: with --mpi, a split variant of the module (splitk:...), "
						      "which folds a slice of each row into a state"),
			       -1;
		return 0;
	}
	for (int v = 0; v < x->m->nvar && x->v < 0; v++)
		if (x->m->var[v].fam == FAM_SPLITK)
			x->v = v;
	if (x->v < 0)
		return snprintf(x->why, x->n, "the carrier's CUDA module (%s) has no split kernels to fold a slice into "
					      "states",
				variant_family_name(x->m->base)),
		       1;
	return 0;
}

static int is_position(void *ctx, Expr *e) { return e->op == EXPR_VAR && e->k == *(const int *)ctx; }

/* Whether the fold reads index var (j, len): a slice's fold numbers its
 * positions from its own start, and attention's sees the slice's length
 * as len (below). */
static int reads_index(Carrier *c, int var)
{
	for (int f = 0; f < c->nstate; f++)
		if (c->lift[f] && ir_contains(c->lift[f], is_position, &var))
			return 1;
	for (int k = 0; k < c->nlets; k++)
		if (c->lets[k].e && ir_contains(c->lets[k].e, is_position, &var))
			return 1;
	return c->mask && ir_contains(c->mask, is_position, &var);
}

/* The device and the module's kernels for d's slices: 0; 1 with why
 * where they do not take d's carrier, which the cpu then runs across the
 * ranks (run_mpi_run); -1 with why. */
static int dev_open(Dev *x, RunData *d, const char *name, const RunOpts *o)
{
	Carrier *c = d->c;
	x->gpu = !strcmp(name, "gpu");
	if (d->heads > 1)
		return snprintf(x->why, x->n, "--mpi on the %s device takes one head, not %d", name, d->heads), 1;
	if (d->scan || c->nmap)
		return snprintf(x->why, x->n, "--mpi on the %s device folds reductions, and this carrier has %s", name,
				d->scan ? "a scan's outputs" : "map outputs"),
		       1;
	if (reads_index(c, c->idx[1]))
		return snprintf(x->why, x->n, "--mpi on the %s device: the lift reads the position j, and a slice's "
					      "kernel numbers positions from the slice's start",
				name),
		       1;
	if (x->gpu) {
		if (gpu_open(&x->g, c, 0, x->why, x->n))
			return -1;
		x->m = &x->g.m;
	} else {
		if (cuda_module(c, NULL, &x->em, x->why, x->n))
			return -1;
		x->m = &x->em;
	}
	int took = pick_split(x, c, o);
	if (took)
		return took;
	if (x->attn && reads_index(c, c->idx[2]))
		return snprintf(x->why, x->n, "--mpi on the %s device: the attention kernel of a slice sees the slice's "
					      "length as len, which the lift reads",
				name),
		       1;
	/* the reference rounds P as the variant does */
	if (x->attn)
		runcheck_round_p(d, cuda_p_round_kind(x->m, x->v), x->m->attn.fm, x->m->attn.fl, x->m->attn.fo);
	return x->gpu ? gpu_ready(&x->g, x->v, x->why, x->n) : emu_open(x->m->src, &x->lib, x->why, x->n);
}

static void dev_close(Dev *x)
{
	rt_nccl_close(x->nc);
	if (x->gpu)
		gpu_close(&x->g);
	else {
		emu_close(x->lib);
		if (x->em.src)
			cuda_module_free(&x->em);
	}
}

/* ---- slices of every row ---- */

static size_t buf_bytes(const Buffer *b) { return b->n * b->width * run_kind_size(b->kind); }

/* Slice s of S: positions [slice_at(s), slice_at(s + 1)), their starts a
 * multiple of 16 positions, so that a slice's arrays keep the 16-byte
 * alignment of the kernels' vector loads. */
static int slice_at(int s, int slices, int len)
{
	if (s >= slices)
		return len;
	int64_t at = (int64_t)s * len / slices / 16 * 16;
	return (int)at;
}

/* Upload d's inputs (into in[]) and point a at them, with d's shape. */
static int upload_inputs(Dev *x, const RunData *d, RtPtr *in, CudaArgs *a)
{
	Carrier *c = d->c;
	const Buffer *b[CUDA_MAXIN];
	int nin = 0;
	for (int k = 0; k < c->nelem; k++)
		b[nin++] = &d->elem[k];
	for (int k = 0; k < c->ncol; k++)
		b[nin++] = &d->col[k];
	for (int k = 0; k < c->nrow; k++)
		b[nin++] = &d->row[k];
	for (int k = 0; k < nin; k++) {
		if (d_alloc(x, buf_bytes(b[k]), &in[k]) || d_up(x, in[k], b[k]->p, buf_bytes(b[k])))
			return -1;
		a->in[k] = (const void *)(size_t)in[k];
	}
	for (int p = 0; p < c->nparams; p++)
		a->prm[p] = d->params[p];
	a->rows = d->rows, a->len = d->len, a->heads = 1, a->kv_heads = 1;
	return 0;
}

static void free_inputs(Dev *x, RtPtr *in)
{
	for (int k = 0; k < CUDA_MAXIN; k++)
		d_free(x, in[k]), in[k] = 0;
}

/* The state of positions [lo, hi) of every row into the device's states
 * at `at` (rows of them): the partial kernel alone, one chunk a row, its
 * element and column inputs starting at lo.  Rows keep their stride and
 * the carrier its len; the chunk is the slice. */
static int fold_slice(Dev *x, const RunData *d, const RtPtr *in, int lo, int hi, RtPtr at)
{
	Carrier *c = d->c;
	CudaArgs a = {0};
	CudaPlan p;
	cuda_plan_h(x->m, x->v, d->rows, x->attn ? hi - lo : d->len, 1, x->attn ? ATTN_PARTS : 1, &p);
	int k = 0;
	for (int e = 0; e < c->nelem; e++, k++)
		a.in[k] = (const char *)(size_t)in[k] + (size_t)lo * d->elem[e].width * run_kind_size(d->elem[e].kind);
	for (int e = 0; e < c->ncol; e++, k++)
		a.in[k] = (const char *)(size_t)in[k] + (size_t)lo * d->col[e].width * run_kind_size(d->col[e].kind);
	for (int e = 0; e < c->nrow; e++, k++)
		a.in[k] = (const void *)(size_t)in[k];
	for (int q = 0; q < c->nparams; q++)
		a.prm[q] = d->params[q];
	a.rows = d->rows, a.len = d->len, a.heads = 1, a.kv_heads = 1;
	a.split = 1, a.chunk = hi - lo, a.ws = (void *)(size_t)at;
	/* attention: the slice's keys as the whole of them, in ATTN_PARTS
	 * splits, each row's partial (m, l, o) at ws[row][split] */
	if (x->attn)
		a.len = hi - lo, a.split = p.split, a.chunk = p.chunk;
	return d_launch(x, &p.k[0], &a);
}

/* On rank 0: states ws[row][slice] (rows x (slices + 1) room) merged in
 * slice order and finalized by the combine kernel into d's outputs. */
static int combine(Dev *x, RunData *d, const RtPtr *in, const unsigned char *ws, int slices)
{
	Carrier *c = d->c;
	size_t sb = x->unit, room = (size_t)d->rows * (slices + 1) * sb;
	RtPtr out[CUDA_MAXOUT] = {0}, w = 0;
	CudaArgs a = {0};
	CudaPlan p;
	cuda_plan_h(x->m, x->v, d->rows, d->len, 1, x->attn ? ATTN_PARTS : 1, &p);
	for (int k = 0; k < c->nelem + c->ncol + c->nrow; k++)
		a.in[k] = (const void *)(size_t)in[k];
	for (int q = 0; q < c->nparams; q++)
		a.prm[q] = d->params[q];
	a.rows = d->rows, a.len = d->len, a.heads = 1, a.kv_heads = 1;
	int rc = d_alloc(x, room, &w) || d_up(x, w, ws, (size_t)d->rows * slices * sb);
	for (int o = 0; !rc && o < c->nfinal; o++) {
		rc = d_alloc(x, buf_bytes(&d->fin[o]), &out[o]);
		a.out[o] = (void *)(size_t)out[o];
	}
	a.split = x->attn ? slices * ATTN_PARTS : slices, a.chunk = 0, a.ws = (void *)(size_t)w;
	rc = rc || d_launch(x, &p.k[1], &a) || d_sync(x);
	for (int o = 0; !rc && o < c->nfinal; o++)
		rc = d_down(x, d->fin[o].p, out[o], buf_bytes(&d->fin[o]));
	for (int o = 0; o < CUDA_MAXOUT; o++)
		d_free(x, out[o]);
	d_free(x, w);
	return rc ? -1 : 0;
}

static int said_staged;

/* NCCL for the gpu's states where every rank has it and it makes a
 * communicator of them; otherwise none, said once.  Collective. */
static void nccl_or_host(Dev *x, int rank)
{
	char why[512] = "";
	int have = x->gpu && !rt_nccl_open(&x->nc, NULL, why, sizeof why), all = 0;
	MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	if (!all) {
		rt_nccl_close(x->nc);
		x->nc = NULL;
		if (x->gpu && !rank && !said_staged++)
			fprintf(stderr, "assoc: %s: device states staged through the host over MPI\n",
				have ? "NCCL is missing on another rank" : why);
		return;
	}
	/* ranks sharing a GPU, for one, are no communicator to NCCL */
	if (lib_mpi_nccl_comm(x->nc, MPI_COMM_WORLD, why, sizeof why)) {
		rt_nccl_close(x->nc);
		x->nc = NULL;
		if (!rank && !said_staged++)
			fprintf(stderr, "assoc: %s: device states staged through the host over MPI\n", why);
	}
}

/* Where each state field lies in the module's State (the C layout of its
 * fields in order); 0, or -1 where a field is not float32, which the
 * collectives' sums and the rescale take. */
static int state_layout(const Carrier *c, size_t *off)
{
	size_t at = 0;
	for (int f = 0; f < c->nstate; f++) {
		if (c->state[f].ty.kind != TY_F32)
			return -1;
		at = (at + 3) / 4 * 4;
		off[f] = at;
		at += 4 * (size_t)spec_decl_width(&c->state[f]);
	}
	return 0;
}

/* --mpi-collective reduce: each rank's one state a row (at mine) split
 * into m and the sums, combined by the two collectives, and on rank 0
 * put back into States (ws) for the combine kernel to finalize. */
static int reduce_maxplus(Dev *x, RunData *d, RtPtr mine, unsigned char *ws, char *msg, size_t n)
{
	Carrier *c = d->c;
	size_t off[64], sb = x->m->state_size, rows = (size_t)d->rows;
	int fm = lib_mpi_maxplus_field(c), width = 0;
	state_layout(c, off); /* reduce_ok has seen the fields float32 */
	for (int f = 0; f < c->nstate; f++)
		width += f == fm ? 0 : spec_decl_width(&c->state[f]);
	unsigned char *st = malloc(rows * sb + 1);
	float *h = malloc((rows * (width + 1) + 1) * sizeof *h);
	if (!st || !h)
		abort();
	float *hm = h, *hs = h + rows; /* m; every other component, l first */
	int rc = d_down(x, st, mine, rows * sb);
	for (size_t i = 0; !rc && i < rows; i++) {
		const unsigned char *p = st + i * sb;
		float *q = hs + i;
		memcpy(&hm[i], p + off[fm], 4);
		/* l, the first sum, is an array of its own; o the rest, a row's together */
		for (int f = 0, k = 0; f < c->nstate; f++)
			for (int t = 0; f != fm && t < spec_decl_width(&c->state[f]); t++, k++)
				memcpy(k ? &hs[rows + i * (width - 1) + k - 1] : q, p + off[f] + 4 * t, 4);
	}
	RtPtr dm = 0, dl = 0, dx = 0;
	if (!rc && x->nc)
		rc = d_alloc(x, rows * 4, &dm) || d_alloc(x, rows * 4, &dl) || d_alloc(x, rows * (width - 1) * 4 + 4, &dx) ||
		     d_up(x, dm, hm, rows * 4) || d_up(x, dl, hs, rows * 4) || d_up(x, dx, hs + rows, rows * (width - 1) * 4);
	/* every rank at the collectives, or none */
	int bad = !!rc, any = 0;
	MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (any && !rc)
		snprintf(msg, n, "another rank failed to ready its states");
	rc = any;
	if (!rc && x->nc) {
		rc = lib_mpi_maxplus_run(x->g.rt, x->nc, MPI_COMM_WORLD, (int64_t)rows, width - 1, dm, dl, dx, NULL, msg,
					   n) ||
		     d_down(x, hm, dm, rows * 4) || d_down(x, hs, dl, rows * 4) ||
		     d_down(x, hs + rows, dx, rows * (width - 1) * 4);
	} else if (!rc) {
		rc = lib_mpi_maxplus_run(NULL, NULL, MPI_COMM_WORLD, (int64_t)rows, width - 1, (RtPtr)(size_t)hm,
					   (RtPtr)(size_t)hs, (RtPtr)(size_t)(hs + rows), NULL, msg, n);
	}
	for (size_t i = 0; !rc && i < rows; i++) {
		unsigned char *p = ws + i * sb;
		memcpy(p, st + i * sb, sb);
		memcpy(p + off[fm], &hm[i], 4);
		for (int f = 0, k = 0; f < c->nstate; f++)
			for (int t = 0; f != fm && t < spec_decl_width(&c->state[f]); t++, k++)
				memcpy(p + off[f] + 4 * t, k ? &hs[rows + i * (width - 1) + k - 1] : &hs[i], 4);
	}
	d_free(x, dm), d_free(x, dl), d_free(x, dx);
	free(st);
	free(h);
	return rc ? -1 : 0;
}

/* Whether the two-collective form takes d's carrier: a proved (max, +)
 * certificate and float32 fields; 0, or -1 with why. */
static int reduce_ok(const RunData *d, char *msg, size_t n)
{
	size_t off[64];
	Carrier *c = d->c;
	if (!lib_mpi_maxplus_proved(c, d->params))
		return snprintf(msg, n, "--mpi-collective reduce takes a carrier whose proved certificate transports its "
					"merge into (max, +) (softmax, logsumexp, attention); %s's does not",
				c->name),
		       -1;
	if (c->nstate > 64 || c->nstate < 2 || state_layout(c, off))
		return snprintf(msg, n, "--mpi-collective reduce sums float32 states; %s's are not all float32", c->name),
		       -1;
	return 0;
}

int run_mpi_cuda(RunData *d, const Device *dv, const RunOpts *o, int reduce, RunMpiTimes *tm, char *msg, size_t n)
{
	int rank, ranks;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &ranks);
	int slices = o->deterministic ? RUN_MPI_SLICES : ranks;
	if (slices < ranks)
		return snprintf(msg, n, "--deterministic cuts each row into %d slices: at most %d ranks, not %d",
				RUN_MPI_SLICES, RUN_MPI_SLICES, ranks),
		       -1;
	Dev x = {.why = msg, .n = n};
	/* bad: 2 a failure, 1 a carrier the module's kernels do not take */
	int took = reduce && reduce_ok(d, msg, n) ? -1 : dev_open(&x, d, dv->name, o), bad = took < 0 ? 2 : took, any = 0;
	if (bad == 1 && (reduce || o->config)) { /* asked of the kernels that do not run */
		char why[512];
		snprintf(why, sizeof why, "%s", msg);
		snprintf(msg, n, "%s: %s, so the ranks would run it on the cpu", reduce ? "--mpi-collective reduce" : "--config",
			 why);
		bad = 2;
	}
	if (!bad && reduce && x.attn) {
		snprintf(msg, n, "--mpi-collective reduce: on the split kernels' states (logsumexp); attention's partial "
				 "states are merged by its combine kernel (--mpi-collective gather)");
		bad = 2;
	}
	MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (!any)
		nccl_or_host(&x, rank);
	if (any) {
		if (bad != any)
			snprintf(msg, n, "another rank failed to set up its device");
		dev_close(&x);
		return any == 1 ? 1 : -1;
	}
	int *first = calloc(ranks + 1, sizeof *first), most = 0;
	if (!first)
		abort();
	for (int q = 0; q <= ranks; q++)
		first[q] = (int)((int64_t)q * slices / ranks);
	for (int q = 0; q < ranks; q++)
		most = first[q + 1] - first[q] > most ? first[q + 1] - first[q] : most;
	/* every rank sends `most` slices' states (its own, then room), so that
	 * the gather is one of equal parts */
	size_t sb = x.unit, part = (size_t)most * d->rows * sb;
	unsigned char *all = malloc(part * ranks + 1), *ws = malloc((size_t)d->rows * slices * sb + 1);
	RtPtr mine = 0, gathered = 0;
	if (!all || !ws)
		abort();
	double t0 = now(), t1 = t0, t2 = t0, t3 = t0;
	RtPtr in[CUDA_MAXIN] = {0};
	CudaArgs whole = {0};
	bad = d_alloc(&x, part, &mine) || upload_inputs(&x, d, in, &whole);
	for (int s = first[rank]; !bad && s < first[rank + 1]; s++)
		bad = fold_slice(&x, d, in, slice_at(s, slices, d->len), slice_at(s + 1, slices, d->len),
				 mine + (size_t)(s - first[rank]) * d->rows * sb);
	bad = bad || d_sync(&x);
	t1 = now();
	MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (!any && reduce) {
		bad = reduce_maxplus(&x, d, mine, ws, msg, n) ? 1 : 0;
	} else if (!any && x.nc) {
		bad = d_alloc(&x, part * ranks, &gathered) ? 1 : 0;
		/* every rank at the collective, or none */
		MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
		bad = bad || (!any && (rt_nccl_allgather(x.nc, mine, gathered, part, NULL, msg, n) || d_sync(&x) ||
				       (!rank && d_down(&x, all, gathered, part * ranks))));
	} else if (!any) {
		unsigned char *own = malloc(part + 1);
		if (!own)
			abort();
		bad = d_down(&x, own, mine, part) ? 1 : 0;
		MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
		if (!any && part > INT32_MAX) {
			snprintf(msg, n, "%zu bytes of states a rank: more than one MPI message takes", part);
			bad = any = 1;
		}
		if (!any)
			MPI_Gather(own, (int)part, MPI_BYTE, all, (int)part, MPI_BYTE, 0, MPI_COMM_WORLD);
		free(own);
	}
	t2 = now();
	MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (!any && !rank && reduce) {
		bad = combine(&x, d, in, ws, 1);
	} else if (!any && !rank) {
		/* slice s of row i: from the rank that folded it, to ws[i][s] */
		for (int q = 0; q < ranks; q++)
			for (int s = first[q]; s < first[q + 1]; s++)
				for (int i = 0; i < d->rows; i++)
					memcpy(ws + ((size_t)i * slices + s) * sb,
					       all + q * part + ((size_t)(s - first[q]) * d->rows + i) * sb, sb);
		bad = combine(&x, d, in, ws, slices);
	}
	t3 = now();
	if (o->verbose && !rank) {
		char cfg[128];
		CudaPlan p;
		cuda_plan_h(x.m, x.v, d->rows, d->len, 1, 1, &p);
		variant_str(&x.m->var[x.v], cfg, sizeof cfg);
		fprintf(stderr, "%s: %s: %s folds each of %d slices a row, %s %s on rank 0\n", dv->name, cfg,
			p.k[0].name, slices, p.k[1].name, reduce ? "finalizes the reduced states" : "merges them");
	}
	MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (any && !bad)
		snprintf(msg, n, "another rank failed");
	double mine_t[3] = {t1 - t0, t2 - t1, t3 - t2}, top[3] = {0};
	MPI_Reduce(mine_t, top, 3, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	*tm = (RunMpiTimes){ranks, slices, 0, top[0], top[1], top[2], "", dv->name};
	if (reduce)
		snprintf(tm->how, sizeof tm->how, "all-reduce MAX of m, then SUM of the rescaled sums (%s%s; not "
						  "bit-deterministic)",
			 x.nc ? "NCCL " : "MPI", x.nc ? rt_nccl_version(x.nc) : "");
	else if (x.nc)
		snprintf(tm->how, sizeof tm->how, "states gathered by NCCL %s, merged by the combine kernel",
			 rt_nccl_version(x.nc));
	else
		snprintf(tm->how, sizeof tm->how, "states gathered %sover MPI, merged by the combine kernel",
			 x.gpu ? "through the host " : "");
	free_inputs(&x, in);
	d_free(&x, mine);
	d_free(&x, gathered);
	free(all);
	free(ws);
	free(first);
	dev_close(&x);
	return any ? -1 : 0;
}
#else
typedef int run_mpi_cuda_absent;
#endif
