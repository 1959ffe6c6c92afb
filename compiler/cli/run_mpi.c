/* run_mpi.c: `assoc run --mpi` under mpirun.  Every rank holds the run's
 * arrays (drawn from the same seed, or read from the same files) and folds
 * its own contiguous slice of every row's positions on its device; the
 * per-row states cross the ranks as the carrier's MPI datatype and op
 * (compiler/lib/assoc_mpi.h), rank 0 finalizes.
 *
 * Plain runs: a slice a rank, MPI_Reduce of the states (MPI_Exscan for a
 * scan, each rank's scan seeded with the prefix of the ranks before it).
 * --deterministic: every row is cut into RUN_MPI_SLICES slices whatever
 * the ranks; each slice's state is folded the same way wherever it runs,
 * and the slices' states are merged in one fixed order (a balanced tree
 * for a reduction, left to right for a scan's prefixes), so that the bits
 * do not depend on the number of ranks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/cli/run_mpi.h"

#ifdef ASSOC_NO_MPI
#ifndef ASSOC_NO_MPI_WHY
#define ASSOC_NO_MPI_WHY "no MPI at build time"
#endif
int run_mpi_init(char *msg, size_t n) { return snprintf(msg, n, "assoc was built without MPI: %s", ASSOC_NO_MPI_WHY), -1; }
int run_mpi_rank(void) { return 0; }
int run_mpi_agree(int rc) { return rc; }
int run_mpi_run(RunData *d, const Device *dv, const RunOpts *o, int reduce, RunMpiTimes *t, char *msg, size_t n)
{
	(void)d, (void)dv, (void)o, (void)reduce, (void)t;
	return run_mpi_init(msg, n);
}
int run_mpi_cuda(RunData *d, const Device *dv, const RunOpts *o, int reduce, RunMpiTimes *t, char *msg, size_t n)
{
	return run_mpi_run(d, dv, o, reduce, t, msg, n);
}
void run_mpi_end(void) {}
#else
#include <dirent.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "compiler/lib/assoc_mpi.h"
#include "compiler/lib/libassoc_int.h"
#include "compiler/llvm/llvm.h"

static int rank, ranks, started;

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* The GPUs the NVIDIA driver lists, before any CUDA call. */
static int nvidia_gpus(void)
{
	DIR *dir = opendir("/proc/driver/nvidia/gpus");
	int count = 0;
	for (struct dirent *e; dir && (e = readdir(dir));)
		count += e->d_name[0] != '.';
	if (dir)
		closedir(dir);
	return count;
}

/* Ranks on one node take its GPUs in turn (local rank modulo GPUs),
 * unless CUDA_VISIBLE_DEVICES says otherwise: the GPU device opens
 * device 0, which is then this rank's own.  Before the driver starts. */
static void gpu_per_rank(void)
{
	MPI_Comm node;
	int local = 0, locals = 1, gpus = nvidia_gpus();
	if (getenv("CUDA_VISIBLE_DEVICES") ||
	    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node) != MPI_SUCCESS)
		return;
	MPI_Comm_rank(node, &local);
	MPI_Comm_size(node, &locals);
	MPI_Comm_free(&node);
	if (locals > 1 && gpus > 1) {
		char v[16];
		snprintf(v, sizeof v, "%d", local % gpus);
		setenv("CUDA_VISIBLE_DEVICES", v, 1);
	}
}

int run_mpi_init(char *msg, size_t n)
{
	int inited = 0;
	MPI_Initialized(&inited);
	if (!inited && MPI_Init(NULL, NULL) != MPI_SUCCESS)
		return snprintf(msg, n, "MPI_Init failed"), -1;
	started = !inited;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &ranks);
	gpu_per_rank();
	if (rank) { /* rank 0 speaks for all; the rest fail together with it (run_mpi_agree) */
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0) {
			fflush(stdout), fflush(stderr);
			dup2(null, 1), dup2(null, 2);
			close(null);
		}
	}
	return 0;
}

int run_mpi_rank(void) { return rank; }

int run_mpi_agree(int rc)
{
	int worst = rc;
	MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	return worst;
}

void run_mpi_end(void)
{
	if (started)
		MPI_Finalize();
	started = 0;
}

/* ---- a device's states of a row's positions ---- */

typedef struct {
	RunData *d;
	int cpu;
	size_t bytes;
	int64_t rows; /* of every head: row R is row R % d->rows of head R / d->rows */
	/* cpu */
	LlvmKernel *k;
	CpuHeads h;
	RtPool *pool;
	/* interp: one machine, the row it holds loaded */
	Machine m;
	Row *row;
	RunData **views;
	int64_t loaded;
	int view_loaded;
	double *tmp, *out;
} Folder;

static void f_identity(Folder *f, void *st)
{
	if (f->cpu) {
		f->k->k.identity(&f->h.a[0], st);
		return;
	}
	eval_identity(&f->m, MODE_F32, st, (double *)st + f->m.sw);
	memset((double *)st + 2 * f->m.sw, 0, f->m.sw * sizeof(double));
}

static void f_merge(void *ctx, const void *x, const void *y, void *out)
{
	Folder *f = ctx;
	if (f->cpu) {
		f->k->k.merge(&f->h.a[0], x, y, out);
		return;
	}
	int sw = f->m.sw;
	const double *a = x, *b = y;
	double *o = f->tmp + 3 * sw;
	eval_merge_exact(&f->m, MODE_F32, a, a + sw, a + 2 * sw, b, b + sw, b + 2 * sw, o, o + sw, o + 2 * sw);
	memcpy(out, o, 3 * sw * sizeof *o);
}

static void load(Folder *f, int64_t R)
{
	int v = (int)(R / f->d->rows);
	if (f->view_loaded != v)
		rundata_load_cols(f->views[v], &f->m, f->row);
	if (f->view_loaded != v || f->loaded != R)
		rundata_load_row(f->views[v], &f->m, (int)(R % f->d->rows), f->row);
	f->view_loaded = v, f->loaded = R;
}

static void store(Buffer *b, int n, const int *off, const double *v, const double *rest, size_t at)
{
	for (int o = 0; o < n; o++)
		for (int t = 0; t < b[o].width; t++)
			run_buffer_set_exact(&b[o], at * b[o].width + t, v[off[o] + t], rest[off[o] + t]);
}

/* What a position range of row R becomes: 0 the state of [lo, hi) from
 * the identity; 1 the finalize outputs of st (lo, hi unused); 2 a scan of
 * [lo, hi) from st; 3 the map outputs of [lo, hi) with the row's st. */
static void f_do(Folder *f, int what, int64_t R, int64_t lo, int64_t hi, void *st)
{
	int64_t v = R / f->d->rows, i = R % f->d->rows;
	if (f->cpu) {
		const CpuArgs *a = &f->h.a[v];
		const CpuKernel *k = &f->k->k;
		if (what == 0)
			k->reduce(a, i, lo, hi, st);
		else if (what == 1)
			k->finalize(a, i, i, st);
		else if (what == 2)
			k->scan(a, i, lo, hi, st);
		else
			k->map(a, i, lo, hi, st);
		return;
	}
	Machine *m = &f->m;
	Carrier *c = f->d->c;
	RunData *d = f->views[v];
	int sw = m->sw;
	double *s = st, *l = f->tmp;
	load(f, R);
	double *outr = f->out + m->finw + m->mapw + 1; /* the outputs' rests */
	if (what == 0)
		f_identity(f, s);
	for (int64_t j = lo; j < hi && what != 1; j++) {
		if (what == 3) {
			eval_map_exact(m, MODE_F32, f->row, (int)j, s, s + sw, s + 2 * sw, f->out, NULL, outr);
			store(d->map, c->nmap, m->mapoff, f->out, outr, (size_t)i * d->len + j);
			continue;
		}
		if (!eval_masked(m, f->row, (int)j)) {
			eval_lift_exact(m, MODE_F32, f->row, (int)j, l, l + sw, l + 2 * sw);
			f_merge(f, s, l, s);
		}
		if (what == 2) {
			eval_finalize_exact(m, MODE_F32, f->row, s, s + sw, s + 2 * sw, f->out, NULL, outr);
			store(d->fin, c->nfinal, m->finoff, f->out, outr, (size_t)i * d->len + j);
		}
	}
	if (what == 1) {
		eval_finalize_exact(m, MODE_F32, f->row, s, s + sw, s + 2 * sw, f->out, NULL, outr);
		store(d->fin, c->nfinal, m->finoff, f->out, outr, (size_t)i);
	}
}

static int folder_open(Folder *f, RunData *d, const Device *dv, const RunOpts *o, char *msg, size_t n)
{
	memset(f, 0, sizeof *f);
	f->d = d;
	f->rows = (int64_t)d->rows * (d->heads > 1 ? d->heads : 1);
	f->loaded = -1, f->view_loaded = -1;
	runcheck_round_p(d, 0, 0, 0, 0);
	if (!strcmp(dv->name, "cpu")) {
		f->cpu = 1;
		LlvmOpts lo = {.fit_rows = d->rows};
		if (cpu_parse_config(o->config, &lo, msg, n) || llvm_compile(d->c, &lo, &f->k, msg, n))
			return -1;
		if (rt_pool_open(&f->pool, o->threads, msg, n)) {
			llvm_kernel_free(f->k);
			return -1;
		}
		cpu_heads(d, 0, &f->h);
		f->bytes = f->k->k.state_bytes;
		return 0;
	}
	if (strcmp(dv->name, "interp"))
		return snprintf(msg, n, "--mpi runs on the cpu and interp devices, not %s", dv->name), -1;
	eval_init(&f->m, d->c);
	memcpy(f->m.params, d->params, d->c->nparams * sizeof *d->params);
	f->row = eval_row_new(&f->m, d->len);
	int heads = d->heads > 1 ? d->heads : 1;
	f->views = calloc(heads, sizeof *f->views);
	f->tmp = calloc(6 * f->m.sw + 2, sizeof *f->tmp);
	f->out = calloc(2 * (f->m.finw + f->m.mapw + 1), sizeof *f->out);
	if (!f->views || !f->tmp || !f->out)
		abort();
	for (int h = 0; h < heads; h++)
		f->views[h] = heads > 1 ? rundata_head_view(d, h) : d;
	f->bytes = 3 * f->m.sw * sizeof(double); /* values, bounds and rests (ir_int_exact) */
	return 0;
}

static void folder_close(Folder *f)
{
	if (f->cpu) {
		cpu_heads_free(&f->h);
		rt_pool_close(f->pool);
		llvm_kernel_free(f->k);
		return;
	}
	for (int h = 0; f->views && h < (f->d->heads > 1 ? f->d->heads : 1); h++)
		if (f->views[h] != f->d)
			rundata_view_free(f->views[h]);
	free(f->views);
	free(f->tmp);
	free(f->out);
	eval_row_free(f->row);
	eval_free(&f->m);
}

/* ---- the run ---- */

typedef struct {
	Folder *f;
	int what;
	int c0, slices; /* this rank's first slice, slices a row */
	unsigned char *st; /* [slice - c0][R] */
} Tasks;

static int64_t slice_lo(const Tasks *t, int c) { return (int64_t)c * t->f->d->len / t->slices; }

static void task(void *ctx, int64_t x)
{
	Tasks *t = ctx;
	int64_t R = x % t->f->rows;
	int c = t->c0 + (int)(x / t->f->rows);
	f_do(t->f, t->what, R, slice_lo(t, c), slice_lo(t, c + 1), t->st + (size_t)x * t->f->bytes);
}

/* what over each of this rank's slices of every row (states [slice][R]). */
static void over_slices(Tasks *t, int what, int nown)
{
	t->what = what;
	if (t->f->cpu)
		rt_pool_run(t->f->pool, (int64_t)nown * t->f->rows, task, t);
	else
		for (int64_t x = 0; x < (int64_t)nown * t->f->rows; x++)
			task(t, x);
}

/* Per-position outputs (a scan's finalize outputs, map outputs): each
 * rank's positions [lo, hi) of every row, gathered into rank 0's arrays. */
static void gather_positions(Folder *f, Buffer *b, int nb, const int *first, int slices)
{
	int64_t len = f->d->len, rows = f->rows;
	int *count = calloc(ranks, sizeof *count), *disp = calloc(ranks, sizeof *disp);
	if (!count || !disp)
		abort();
	for (int o = 0; o < nb; o++) {
		size_t eb = run_kind_size(b[o].kind) * b[o].width;
		int64_t lo = first[rank] * len / slices, hi = first[rank + 1] * len / slices;
		size_t mine = (size_t)rows * (hi - lo) * eb, total = 0;
		for (int q = 0; q < ranks; q++) {
			int64_t ql = first[q] * len / slices, qh = first[q + 1] * len / slices;
			count[q] = (int)((size_t)rows * (qh - ql) * eb);
			disp[q] = (int)total;
			total += (size_t)count[q];
		}
		unsigned char *send = malloc(mine + 1), *all = rank ? NULL : malloc(total + 1), *p = b[o].p;
		if (!send || (!rank && !all))
			abort();
		for (int64_t R = 0; R < rows; R++)
			memcpy(send + (size_t)R * (hi - lo) * eb, p + ((size_t)R * len + lo) * eb, (size_t)(hi - lo) * eb);
		MPI_Gatherv(send, (int)mine, MPI_BYTE, all, count, disp, MPI_BYTE, 0, MPI_COMM_WORLD);
		for (int q = 0; !rank && q < ranks; q++) {
			int64_t ql = first[q] * len / slices, qh = first[q + 1] * len / slices;
			for (int64_t R = 0; R < rows; R++)
				memcpy(p + ((size_t)R * len + ql) * eb, all + disp[q] + (size_t)R * (qh - ql) * eb,
				       (size_t)(qh - ql) * eb);
		}
		free(send);
		free(all);
	}
	free(count);
	free(disp);
}

int run_mpi_run(RunData *d, const Device *dv, const RunOpts *o, int reduce, RunMpiTimes *tm, char *msg, size_t n)
{
	if (!strcmp(dv->name, "gpu") || !strcmp(dv->name, "emu")) {
		int took = run_mpi_cuda(d, dv, o, reduce, tm, msg, n);
		if (took <= 0)
			return took;
		/* the module's kernels do not take the carrier: the cpu's do */
		const Device *cpu = run_device_find("cpu");
		char why[512], cause[512];
		if (!cpu || !cpu->available(cause, sizeof cause)) {
			snprintf(why, sizeof why, "%s", msg);
			return snprintf(msg, n, "%s; the cpu, which would run it across the ranks, is not usable here: %s", why,
					cpu ? cause : "not in this build"),
			       -1;
		}
		fprintf(stderr, "assoc: %s: %s; the ranks run it on the cpu\n", dv->name, msg);
		dv = cpu;
	}
	int slices = o->deterministic ? RUN_MPI_SLICES : ranks;
	if (slices < ranks)
		return snprintf(msg, n, "--deterministic cuts each row into %d slices: at most %d ranks, not %d",
				RUN_MPI_SLICES, RUN_MPI_SLICES, ranks),
		       -1;
	Folder f;
	char mine[512] = "";
	int bad = folder_open(&f, d, dv, o, mine, sizeof mine) ? 1 : 0, any = 0;
	MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (any) {
		snprintf(msg, n, "%s", bad ? mine : "another rank failed to set up its device");
		if (!bad)
			folder_close(&f);
		return -1;
	}
	Carrier *c = d->c;
	int scan = d->scan;
	AssocMpi *m = NULL;
	double *pv = d->params;
	if (assoc_mpi_new(f.bytes, f_merge, &f, lib_mpi_commutes(c, pv), &m)) {
		folder_close(&f);
		return snprintf(msg, n, "MPI refused the carrier's datatype or op"), -1;
	}
	int *first = calloc(ranks + 1, sizeof *first); /* rank q folds slices [first[q], first[q + 1]) */
	if (!first)
		abort();
	for (int q = 0; q <= ranks; q++)
		first[q] = (int)((int64_t)q * slices / ranks);
	int c0 = first[rank], nown = first[rank + 1] - c0;
	size_t sb = f.bytes, R = (size_t)f.rows;
	unsigned char *own = malloc(((size_t)nown + 1) * R * sb + 1), *all = malloc((size_t)slices * R * sb + 1),
		      *fin = malloc(R * sb + 1);
	if (!own || !all || !fin)
		abort();
	Tasks t = {&f, 0, c0, slices, own};
	double t0 = now();
	over_slices(&t, 0, nown);
	double t1 = now(), comm = 0, merge = 0;
	if (o->deterministic) {
		/* every slice's state, slice after slice (ranks hold slices in order) */
		int *count = calloc(ranks, sizeof *count), *disp = calloc(ranks, sizeof *disp);
		if (!count || !disp)
			abort();
		for (int q = 0; q < ranks; q++)
			count[q] = (int)((first[q + 1] - first[q]) * R), disp[q] = (int)(first[q] * R);
		if (scan)
			MPI_Allgatherv(own, count[rank], assoc_mpi_type(m), all, count, disp, assoc_mpi_type(m), MPI_COMM_WORLD);
		else
			MPI_Gatherv(own, count[rank], assoc_mpi_type(m), all, count, disp, assoc_mpi_type(m), 0, MPI_COMM_WORLD);
		free(count);
		free(disp);
		double t2 = now();
		comm = t2 - t1;
		if (scan) { /* each of this rank's slices seeded with the prefix of those before it, left to right */
			for (size_t r = 0; r < R; r++) {
				unsigned char *acc = fin + r * sb;
				f_identity(&f, acc);
				for (int s = 0; s < first[rank + 1]; s++) {
					if (s >= c0)
						memcpy(own + ((size_t)(s - c0) * R + r) * sb, acc, sb);
					f_merge(&f, acc, all + ((size_t)s * R + r) * sb, acc);
				}
			}
		} else if (!rank) { /* a balanced tree over the slices, the same for any ranks */
			for (size_t r = 0; r < R; r++) {
				for (int step = 1; step < slices; step *= 2)
					for (int s = 0; s + step < slices; s += 2 * step)
						f_merge(&f, all + ((size_t)s * R + r) * sb, all + ((size_t)(s + step) * R + r) * sb,
							all + ((size_t)s * R + r) * sb);
				memcpy(fin + r * sb, all + r * sb, sb);
			}
		}
		merge = now() - t2;
	} else {
		if (scan) {
			MPI_Exscan(own, fin, (int)R, assoc_mpi_type(m), assoc_mpi_op(m), MPI_COMM_WORLD);
			if (!rank)
				for (size_t r = 0; r < R; r++)
					f_identity(&f, fin + r * sb);
			memcpy(own, fin, R * sb);
		} else {
			MPI_Reduce(own, fin, (int)R, assoc_mpi_type(m), assoc_mpi_op(m), 0, MPI_COMM_WORLD);
		}
		merge = assoc_mpi_merge_seconds(m);
		comm = now() - t1 - merge;
	}
	double t3 = now();
	if (scan) {
		over_slices(&t, 2, nown);
		gather_positions(&f, d->fin, c->nfinal, first, slices);
	} else {
		if (!rank)
			for (size_t r = 0; r < R; r++)
				f_do(&f, 1, (int64_t)r, 0, 0, fin + r * sb);
		if (c->nmap) { /* every rank maps its positions with the row's whole state */
			MPI_Bcast(fin, (int)R, assoc_mpi_type(m), 0, MPI_COMM_WORLD);
			for (int s = 0; s < nown; s++)
				memcpy(own + (size_t)s * R * sb, fin, R * sb);
			over_slices(&t, 3, nown);
			gather_positions(&f, d->map, c->nmap, first, slices);
		}
	}
	double t4 = now();
	double mine_t[3] = {t1 - t0 + (t4 - t3), comm, merge}, most[3] = {0};
	MPI_Reduce(mine_t, most, 3, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	*tm = (RunMpiTimes){ranks, slices, assoc_mpi_commutative(m), most[0], most[1], most[2], "", dv->name};
	assoc_mpi_free(m);
	free(first);
	free(own);
	free(all);
	free(fin);
	folder_close(&f);
	return 0;
}
#endif
