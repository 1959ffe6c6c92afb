/* cmd_bench.c: `assoc bench SPEC --device cpu --rows R --len N [--json]`:
 * throughput of the JIT kernel, measured in the same run as its ceiling (a
 * threaded memcpy moving the same number of bytes) and its floor (the
 * hand-written naive C of bench/naive.c for the carrier, compiled now with
 * cc -O3 -march=native).  Bytes are the arrays' sizes: inputs read once,
 * outputs written once.  Each figure is the median of several timed runs
 * after a warm-up run. */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "compiler/cli/cli.h"
#include "compiler/util/buf.h"
#include "compiler/util/cache.h"
#include "compiler/cuda/cuda.h"
#include "compiler/prove/prove.h"
#include "compiler/llvm/llvm.h"

extern const Device dev_cpu;

enum { RUNS = 7, SAMPLE_ROWS = 16, SAMPLE_LEN = 4096, CHECK_ROWS = 24, CHECK_LEN = 300, NAIVE_SLICES = 16 };

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

typedef void (*Body)(void *ctx);

static double cpu_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* Median seconds of fn over RUNS runs (after one warm-up); the mean
 * process CPU seconds per run in *cpu when asked (on a shared machine,
 * elements per CPU-second say what a core does when it runs). */
static double median_time(Body fn, void *ctx, double *cpu)
{
	double t[RUNS];
	fn(ctx);
	double c0 = cpu_now();
	for (int r = 0; r < RUNS; r++) {
		double t0 = now();
		fn(ctx);
		t[r] = now() - t0;
	}
	if (cpu)
		*cpu = (cpu_now() - c0) / RUNS;
	qsort(t, RUNS, sizeof *t, cmp_double);
	return t[RUNS / 2];
}

/* ---- inputs: a drawn sample, tiled ---- */

static void tile(Buffer *to, const Buffer *from, size_t rows, size_t len, size_t srows, size_t slen)
{
	size_t es = from->width * run_kind_size(from->kind);
	for (size_t r = 0; r < rows; r++)
		for (size_t j = 0; j < len; j += slen) {
			size_t n = len - j < slen ? len - j : slen;
			memcpy((char *)to->p + (r * len + j) * es, (char *)from->p + (r % srows) * slen * es, n * es);
		}
}

static int fill_inputs(RunData *d, Opts *o, char *msg, size_t n)
{
	Carrier *c = d->c;
	int sr = d->rows < SAMPLE_ROWS ? d->rows : SAMPLE_ROWS, sl = d->len < SAMPLE_LEN ? d->len : SAMPLE_LEN;
	RunData *s = rundata_new(c, sr ? sr : 1, sl ? sl : 1);
	if (rundata_draw(s, o->check.seed, o->params, o->nparams, msg, n)) {
		rundata_free(s);
		return -1;
	}
	for (int k = 0; k < c->nelem; k++)
		tile(&d->elem[k], &s->elem[k], d->rows, d->len, s->rows, s->len);
	for (int k = 0; k < c->ncol; k++)
		tile(&d->col[k], &s->col[k], 1, d->len, 1, s->len);
	for (int k = 0; k < c->nrow; k++)
		tile(&d->row[k], &s->row[k], d->rows, 1, s->rows, 1);
	memcpy(d->params, s->params, c->nparams * sizeof *d->params);
	rundata_free(s);
	return 0;
}

/* ---- the three contestants ---- */

/* The kernel's arguments, and what bench/naive.c's Args adds to them: the
 * components per element of each input (attention's head dims). */
typedef struct {
	CpuArgs a;
	const int64_t *width;
} Args;

typedef struct {
	RtPool *pool;
	LlvmKernel *k;
	CpuArgs *a;  /* the floor's views: a head each (a view of its key/value head's columns) */
	CpuArgs *va; /* the kernel's: cpu_heads packed, nview of them */
	int nview;
	const int64_t *width;
	int heads, kv_heads;
	int split;
	char *src, *dst;
	size_t copy_bytes;
	void (*naive)(const Args *a, int64_t lo, int64_t hi);
} Bench;

static void run_kernel(void *ctx)
{
	Bench *b = ctx;
	char msg[200];
	rt_cpu_run(b->pool, &b->k->k, b->va, b->nview, b->split, msg, sizeof msg);
}

static void copy_task(void *ctx, int64_t t)
{
	Bench *b = ctx;
	int64_t nt = rt_pool_threads(b->pool);
	size_t lo = b->copy_bytes * t / nt, hi = b->copy_bytes * (t + 1) / nt;
	memcpy(b->dst + lo, b->src + lo, hi - lo);
}

static void run_copy(void *ctx)
{
	Bench *b = ctx;
	rt_pool_run(b->pool, rt_pool_threads(b->pool), copy_task, b);
}

/* The floor's rows of each head in NAIVE_SLICES slices a thread, taken as
 * threads come free: rows of causal attention grow with their index, and
 * an even split of rows would leave the last thread with most of the work. */
static int64_t naive_slices(const Bench *b)
{
	int64_t n = (int64_t)rt_pool_threads(b->pool) * NAIVE_SLICES, rows = b->a->rows;
	return n < rows ? n : rows;
}

static void naive_task(void *ctx, int64_t t)
{
	Bench *b = ctx;
	int64_t nt = naive_slices(b), s = t % nt, rows = b->a->rows;
	Args a = {b->a[t / nt], b->width};
	b->naive(&a, rows * s / nt, rows * (s + 1) / nt);
}

static void run_naive(void *ctx)
{
	Bench *b = ctx;
	rt_pool_run(b->pool, b->heads * naive_slices(b), naive_task, b);
}

/* Where the naive C is: $ASSOC_NAIVE_C, beside the executable's folder
 * (build/assoc or build/asan/assoc of a checkout: its bench/naive.c), or
 * where make install puts it (PREFIX/share/assoc/naive.c); NULL with the
 * places looked at in why.  Not the working directory's bench/naive.c:
 * it is compiled and loaded, and a bench run in someone else's checkout
 * would run their code. */
static const char *naive_source(char *buf, size_t bn, char *why, size_t n)
{
	if (getenv("ASSOC_NAIVE_C"))
		return snprintf(buf, bn, "%s", getenv("ASSOC_NAIVE_C")), buf;
	char exe[PATH_MAX];
	ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (k > 0) {
		exe[k] = 0;
		*strrchr(exe, '/') = 0;
		/* build/assoc, build/asan/assoc of a checkout; PREFIX/bin/assoc */
		static const char *const rel[] = {"../bench/naive.c", "../../bench/naive.c", "../share/assoc/naive.c"};
		for (int i = 0; i < 3; i++)
			if (snprintf(buf, bn, "%s/%s", exe, rel[i]) < (int)bn && !access(buf, R_OK))
				return buf;
	}
	snprintf(why, n, "bench/naive.c not found beside the executable or in PREFIX/share/assoc (set ASSOC_NAIVE_C)");
	return NULL;
}

/* Compile the naive C and find naive_<carrier>, with what was compiled in
 * used ("FILE, CC -O3 -march=native", for the report); NULL with the
 * reason in why. */
static void *load_naive(const char *carrier, void **lib, char *used, size_t un, char *why, size_t n)
{
	char buf[PATH_MAX + 64];
	const char *src = naive_source(buf, sizeof buf, why, n);
	const char *cc = getenv("CC") ? getenv("CC") : "cc";
	*lib = NULL;
	if (!src)
		return NULL;
	if (access(src, R_OK))
		return snprintf(why, n, "%.900s not found", src), NULL;
	if (strchr(src, '\''))
		return snprintf(why, n, "%.900s: a path with a quote is not passed to the shell", src), NULL;
	/* the object in TMPDIR, as the emulator's builds are, and gone if the
	 * process is interrupted while the compiler runs */
	const char *t = getenv("TMPDIR");
	char so[PATH_MAX], cmd[PATH_MAX * 2 + 1024];
	snprintf(so, sizeof so, "%s/assoc-naive-XXXXXX", t && *t && !strchr(t, '\'') ? t : "/tmp");
	int fd = mkstemp(so);
	if (fd < 0)
		return snprintf(why, n, "cannot create a temporary file (%.900s): %s", so, strerror(errno)), NULL;
	close(fd);
	int slot = cache_temp_register(so);
	snprintf(cmd, sizeof cmd, "%s -O3 -march=native -shared -fPIC -o '%s' '%s' -lm 2>&1", cc, so, src);
	if (system(cmd)) {
		unlink(so);
		cache_temp_forget(slot);
		return snprintf(why, n, "'%.1000s' failed", cmd), NULL;
	}
	*lib = dlopen(so, RTLD_NOW | RTLD_LOCAL);
	unlink(so);
	cache_temp_forget(slot);
	if (!*lib)
		return snprintf(why, n, "dlopen: %s", dlerror()), NULL;
	char sym[128];
	snprintf(sym, sizeof sym, "naive_%s", carrier);
	void *f = dlsym(*lib, sym);
	if (!f)
		snprintf(why, n, "no %s in %.900s", sym, src);
	/* the file as ASSOC_NAIVE_C names it; the one found beside the
	 * executable without its "build/.." */
	char real[PATH_MAX];
	snprintf(used, un, "%s, %s -O3 -march=native", getenv("ASSOC_NAIVE_C") || !realpath(src, real) ? src : real, cc);
	return f;
}

/* Whether the floor computes what the carrier does: run on a drawn sample
 * of at most CHECK_ROWS x CHECK_LEN and compared with the float64
 * reference, as `assoc run` checks a kernel.  A floor is found by the
 * carrier's name, so a spec that keeps the name and changes the mask or
 * the outputs would otherwise be timed against the wrong loop.  0 when it
 * meets the reference; -1 with the reason in why. */
static int naive_meets(Carrier *c, Opts *o, void (*naive)(const Args *, int64_t, int64_t), char *why, size_t n)
{
	int rows = o->rows < CHECK_ROWS ? (int)o->rows : CHECK_ROWS, len = o->len < CHECK_LEN ? (int)o->len : CHECK_LEN;
	RunData *d = rundata_new(c, rows, len);
	if (rundata_draw(d, o->check.seed, o->params, o->nparams, why, n)) {
		rundata_free(d);
		return -1;
	}
	const void **in = calloc(c->nelem + c->ncol + c->nrow + 1, sizeof *in);
	void **out = calloc(c->nfinal + c->nmap + 1, sizeof *out);
	int64_t *width = calloc(c->nelem + c->ncol + c->nrow + 1, sizeof *width);
	if (!in || !out || !width)
		abort();
	Args a = {.width = width};
	cpu_args(d, &a.a, in, out);
	rundata_widths(d, width);
	naive(&a, 0, rows);
	RunCheck chk;
	runcheck_run(d, &chk);
	int rc = chk.ok ? 0 : -1;
	for (int k = 0; k < chk.nout && !chk.ok; k++) {
		const OutCheck *x = &chk.out[k];
		if (x->worst_ratio > 1 || x->nan_mismatch) {
			snprintf(why, n, "naive_%s does not compute this spec: on %d rows x %d, its %s is %.3g times the tolerance from %s at %zu%s",
				 c->name, rows, len, x->name, x->worst_ratio, x->basis, x->at, x->nan_mismatch ? " (NaN where the reference has none, or the reverse)" : "");
			break;
		}
	}
	runcheck_free(&chk);
	free(in);
	free(out);
	free(width);
	rundata_free(d);
	return rc;
}

/* ---- arithmetic per byte ---- */

/* float32 lanes of the host's widest vectors */
static int host_lanes(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f"))
		return 16;
	if (__builtin_cpu_supports("avx2") || __builtin_cpu_supports("avx"))
		return 8;
#endif
	return 4;
}

/* What a libm call a lane costs, in vector operations: the call, the
 * function's own 20 to 40 instructions, and moving the lane out and
 * back (a tanhf a lane ran at 0.01 of a copy). */
#define SCALAR_CALL_OPS 40

/* The count's walk: nodes counted (by id), the memo of varies (NULL: the
 * row's nodes count too), the host's lanes, and the math functions that
 * are libm calls a lane (a bit per op). */
typedef struct {
	unsigned char *seen, *vary;
	int lanes;
	uint64_t scalar;
} Count;

static int is64(int k) { return k == TY_I64 || k == TY_F64; }

/* A rough cost of e's own operation: a float32 math function (exp, log:
 * a polynomial and its range reduction) about 20 vector operations, tanh
 * 30 (two ranges' and a division), a division or square root 4, a
 * constant or variable nothing, anything else 1; each a component of a
 * vector value, as the lanes take one component at a time (a dot product
 * a multiply and an add a component of its operands).  A math function
 * of f64 values other than sqrt is a libm call a lane (compiler/llvm's
 * float64 code), SCALAR_CALL_OPS a lane; any other operation on 64-bit
 * values counts twice, as a vector of them takes two registers (8 lanes
 * of 16 on AVX-512).  A top-k merge counts 1, as its lists are mostly
 * left as they are (docs/cpu.md). */
static double op_cost(const Expr *e, Count *n)
{
	if (e->op == EXPR_CONST || e->op == EXPR_VAR)
		return 0;
	if (e->op == EXPR_TOPK || e->op == EXPR_TOPK_IDX)
		return 1;
	int wide = is64(e->ty.kind) || (e->nargs && is64(e->a[0]->ty.kind));
	if (e->op == EXPR_DOT) {
		int w = 1;
		for (int i = 0; i < e->nargs; i++)
			w = e->a[i]->ty.len > w ? e->a[i]->ty.len : w;
		return 2.0 * w * (wide ? 2 : 1);
	}
	double w = e->ty.len > 1 ? e->ty.len : 1;
	int root = e->op == EXPR_SQRT || e->op == EXPR_RSQRT;
	if ((ir_ops[e->op].flags & F_MATH) && !root && e->ty.kind == TY_F64) {
		n->scalar |= 1ull << e->op;
		return w * SCALAR_CALL_OPS * n->lanes;
	}
	if (wide)
		w *= 2;
	if (ir_ops[e->op].flags & F_MATH)
		return w * (root ? 4 : e->op == EXPR_TANH ? 30 : 20);
	return w * (e->op == EXPR_DIV ? 4 : 1);
}

/* Whether e changes from position to position: it reads an element or
 * column input, or j.  What does not is the row's, worked out once.  memo
 * by node id: 0 not known yet, 1 no, 2 yes (the IR shares nodes, which a
 * walk without it would visit once a path). */
static int varies(const Ir *ir, const Expr *e, unsigned char *memo)
{
	if (memo[e->id])
		return memo[e->id] == 2;
	int v = 0;
	if (e->op == EXPR_VAR) {
		const Var *x = ir_var(ir, e->k);
		v = x->kind == VAR_ELEM || x->kind == VAR_COL || (x->kind == VAR_IDX && x->slot == IDX_J);
	}
	for (int i = 0; !v && i < e->nargs; i++)
		v = varies(ir, e->a[i], memo);
	memo[e->id] = v ? 2 : 1;
	return v;
}

/* The cost of the nodes under e not counted yet; with vary, only those
 * that vary with the position (a map's row values are hoisted out of its
 * loop). */
static double ops_under(const Ir *ir, const Expr *e, Count *n, unsigned char *vary)
{
	if (!e || n->seen[e->id] || (vary && !varies(ir, e, vary)))
		return 0;
	n->seen[e->id] = 1;
	double c = op_cost(e, n);
	for (int i = 0; i < e->nargs; i++)
		c += ops_under(ir, e->a[i], n, vary);
	return c;
}

/* Merges a position: a scan in vectors takes log2(lanes) steps within
 * each vector, each a merge of whole vectors, then merges the vector onto
 * the state before it (docs/cpu.md); a scan in tiles of 16 blocks, 49
 * merges of whole vectors a tile of 16 vectors (16 in chains, 12 onto
 * the chains before, 5 across the lanes and onto the state before, 16
 * onto the blocks' prefixes), 3 a position; any other fold one. */
static int merges_a_position(const Carrier *c, const LlvmKernel *k)
{
	int m = 1;
	if (c->tpl == FAM_SCAN && k && k->scan_tiles)
		return 3;
	if (c->tpl == FAM_SCAN && k)
		for (int w = k->scan_lanes; w > 1; w /= 2)
			m++;
	return m;
}

/* Operations a position costs, as the kernel folds it: its lift and mask,
 * then one merge (a tree of merges; a scan in vectors its steps), or in a
 * max-rescale tile an exp and a multiply-add a field and a max, or in a
 * transported tile the certificate's coordinates and a monoid operation
 * each (a tile's one merge and conversion back left out); and what is
 * written at every position (a map, less what the row fixes and the exp
 * the rowmap keeps for it; a scan's finalize), each node once.  *scalar:
 * the ops that are libm calls a lane. */
static double ops_per_position(Carrier *c, const LlvmKernel *k, uint64_t *scalar)
{
	/* a certificate derived from the maximum, as the CPU backend takes
	 * it (its nodes made before the count's table is sized) */
	Carrier fr = {0};
	char why[160];
	const Carrier *cert = c;
	if (k && k->tf && !c->has_cert && transport_frame(c, &fr, why, sizeof why))
		cert = &fr;
	size_t nn = (size_t)ir_nnodes(c->ir) + 1;
	Count cn = {.seen = calloc(2 * nn, 1), .lanes = host_lanes()};
	if (!cn.seen)
		abort();
	unsigned char *vary = cn.seen + nn;
	const Ir *ir = c->ir;
	double n = ops_under(ir, c->mask, &cn, NULL);
	for (int f = 0; f < c->nstate; f++)
		n += ops_under(ir, c->lift[f], &cn, NULL);
	if (k && k->max_rescale) {
		/* a field a component: a multiply-add, the maximum's a max;
		 * a top-k list beside them one, as op_cost counts its merge */
		n += 20;
		for (int f = 0; f < c->nstate; f++) {
			Op m = c->merge[f]->op;
			n += m == EXPR_TOPK || m == EXPR_TOPK_IDX ? 1 : spec_decl_width(&c->state[f]);
		}
	}
	else if (k && k->tf && cert->has_cert) {
		n += 2; /* the shift by the tile's largest element, and that maximum */
		for (int i = 0; i < cert->ncert; i++) /* the monoid's operation on each component */
			n += ops_under(ir, cert->cert_into[i].e, &cn, NULL) +
			     (cert->cert_into[i].e->ty.len ? cert->cert_into[i].e->ty.len : 1);
	} else {
		double m = 0;
		for (int f = 0; c->merge && f < c->nstate; f++)
			m += ops_under(ir, c->merge[f], &cn, NULL);
		n += m * merges_a_position(c, k);
	}
	if (k && k->kept) /* read back from the rowmap's pass 2: a multiply */
		cn.seen[k->kept - 1] = 1, n += 1;
	for (int i = 0; i < c->nmap; i++)
		n += ops_under(ir, c->map[i].e, &cn, vary);
	for (int i = 0; c->tpl == FAM_SCAN && i < c->nfinal; i++)
		n += ops_under(ir, c->finalize[i].e, &cn, NULL);
	free(cn.seen);
	if (fr.has_cert)
		transport_frame_free(&fr);
	*scalar = cn.scalar;
	return n;
}

/* Whether a carrier with a certificate folds its tiles otherwise than
 * transported (llvm_tf.c), where bench says why: its cost a position is
 * then the tree of merges, not the coordinates' sums. */
static int not_transported(const Carrier *c, const LlvmKernel *k)
{
	return c->has_cert && c->tpl != FAM_SCAN && !k->tf && !k->max_rescale;
}

/* A nominal compute ceiling: two vector operations a cycle per thread
 * (x86 cores since Haswell issue two or more a cycle), at 3 GHz.  At one
 * a cycle a clipped sum (11 operations a position) was called
 * compute-bound while it ran at 0.9 of the copy. */
#define NOMINAL_GHZ 3.0
#define NOMINAL_OPS_PER_CYCLE 2

/* The kernel timed over the first rows again and again, as many as stay
 * in the threads' L2 (CACHE_BYTES each), where the run's rows do not
 * (t 0 otherwise): the speed its arithmetic allows, measured, which an
 * operation count can miss by twice (an argmax with its value: 14
 * operations a position at two a cycle, 6.9 G elements a second a
 * thread, ran at 3.3 in cache, its compares into mask registers the
 * bound). */
enum { CACHE_BYTES = 512 << 10 };

typedef struct {
	double t;
	int64_t rows;
} InCache;

static void in_cache(Bench *b, double bytes, InCache *ic)
{
	int64_t rows = b->va->rows, per = rows > 0 ? (int64_t)(bytes / rows) : 0;
	ic->t = 0, ic->rows = per > 0 ? (int64_t)rt_pool_threads(b->pool) * CACHE_BYTES / per : 0;
	if (b->nview != 1 || b->heads != 1 || ic->rows < 1 || ic->rows >= rows)
		return;
	b->va->rows = ic->rows;
	ic->t = median_time(run_kernel, b, NULL);
	b->va->rows = rows;
}

typedef struct {
	double ops, per_byte;  /* a position's operations, and per byte moved */
	double allowed;        /* operations per byte the copy's bandwidth leaves time for */
	int lanes;
	uint64_t scalar;       /* the math functions that are libm calls a lane (a bit per op) */
} Intensity;

static Intensity intensity(Carrier *c, const LlvmKernel *k, double bytes, double positions, double copy_bps,
			   int threads)
{
	Intensity x = {.lanes = host_lanes()};
	x.ops = ops_per_position(c, k, &x.scalar);
	x.per_byte = bytes > 0 ? x.ops * positions / bytes : 0;
	x.allowed = copy_bps > 0 ? threads * NOMINAL_GHZ * 1e9 * NOMINAL_OPS_PER_CYCLE * x.lanes / copy_bps : 0;
	return x;
}

static void report(Opts *o, Carrier *c, Bench *b, double bytes, double tk, double tc, double tn, double tcpu,
		   const InCache *ic, double flops, const char *nsrc, const char *nwhy)
{
	int th = rt_pool_threads(b->pool);
	double gb = bytes / tk / 1e9, cgb = bytes / tc / 1e9, ngb = tn > 0 ? bytes / tn / 1e9 : 0;
	long long rows = b->a->rows, len = b->a->len;
	/* the kernel's views: a key/value head's query heads' rows together */
	int g = rt_cpu_group(&b->k->k, b->va->rows), split = rt_cpu_split(&b->k->k, b->va->rows, b->nview, len, b->split);
	double ge = (double)rows * len * b->heads / tk / 1e9;
	double gcpu = tcpu > 0 ? (double)rows * len * b->heads / tcpu / 1e9 : 0;
	Intensity in = intensity(c, b->k, bytes, (double)rows * len * b->heads, bytes / tc, th);
	/* measured where it could be: the kernel over rows that stay in the
	 * cache, against the elements a second of the copy */
	double gcache = ic->t > 0 ? (double)ic->rows * len / ic->t / 1e9 : 0, cps = (double)rows * len * b->heads / tc / 1e9;
	int bound = gcache > 0 ? gcache < cps : in.per_byte > in.allowed;
	/* a scan's vectors hold consecutive positions, in order: no
	 * accumulators, and no order of positions to choose */
	int scan = c->tpl == FAM_SCAN;
	char calls[160] = "";
	for (int op = 0, m = 0; op < EXPR_NOPS && m + 16 < (int)sizeof calls; op++)
		if (in.scalar >> op & 1)
			m += snprintf(calls + m, sizeof calls - m, "%s%s", m ? ", " : "", ir_ops[op].printed);
	if (o->json) {
		printf("{\"spec\": \"%s\", \"carrier\": \"%s\", \"device\": \"cpu\", \"rows\": %lld, \"len\": %lld, "
		       "\"heads\": %d, \"kv_heads\": %d, \"threads\": %d, \"split\": %d, \"lanes\": %d, \"accs\": %d, \"tile\": %d, \"rows_as_lanes\": %d, \"rows_tile\": %d, \"keys_as_lanes\": %d, "
		       "\"max_rescale\": %d, \"transported\": %d, \"scan_lanes\": %d, \"scan_tiles\": %d, \"bytes\": %.0f, \"gbps\": %.3f, \"gelems\": %.3f, "
		       "\"gelems_per_thread\": %.3f, \"gelems_per_cpu_second\": %.3f, \"copy_gbps\": %.3f, "
		       "\"ratio_to_copy\": %.3f, \"cpu_target\": %s%s%s, ",
		       c->file, c->name, rows, len, b->heads, b->kv_heads, th, split, b->k->lanes, b->k->accs, b->k->tile, g,
		       b->k->rows_tile, b->k->keys && g < 16, b->k->max_rescale, b->k->tf, scan ? b->k->scan_lanes : 0, scan && b->k->scan_tiles, bytes, gb, ge,
		       ge / th, gcpu, cgb, gb / cgb, b->k->target[0] ? "\"" : "", b->k->target[0] ? b->k->target : "null",
		       b->k->target[0] ? "\"" : "");
		if (flops > 0)
			printf("\"gflops\": %.3f, ", flops / tk / 1e9);
		printf("\"ops_per_position\": %.0f, \"ops_per_byte\": %.3f, \"ops_per_byte_at_copy\": %.3f, "
		       "\"compute_bound\": %s, ",
		       in.ops, in.per_byte, in.allowed, bound ? "true" : "false");
		if (gcache > 0)
			printf("\"gelems_in_cache\": %.3f, ", gcache);
		else
			printf("\"gelems_in_cache\": null, ");
		if (calls[0])
			printf("\"scalar_calls\": \"%s\", ", calls);
		else
			printf("\"scalar_calls\": null, ");
		if (b->k->one_lane[0])
			printf("\"one_lane\": \"%s\", ", b->k->one_lane);
		else
			printf("\"one_lane\": null, ");
		Buf tb = {0};
		buf_json_str(&tb, b->k->tf_why);
		printf("\"not_transported\": %s, ", not_transported(c, b->k) ? tb.s : "null");
		free(tb.s);
		Buf ob = {0};
		buf_json_str(&ob, b->k->order);
		printf("\"ordered\": %d, \"order\": %s, ", scan ? 0 : b->k->ordered, scan ? "null" : ob.s);
		free(ob.s);
		Buf cb = {0};
		buf_json_str(&cb, b->k->chain_why);
		printf("\"lift_chains\": %d, \"chains\": %s, ", b->k->lift_chains, b->k->chain_why[0] ? cb.s : "null");
		free(cb.s);
		if (tn > 0)
			printf("\"naive_gbps\": %.3f, \"ratio_to_naive\": %.3f}\n", ngb, gb / ngb);
		else
			printf("\"naive_gbps\": null, \"ratio_to_naive\": null}\n");
		return;
	}
	char lanes[64] = "", heads[64] = "", chunks[48] = "";
	if (g > 1)
		snprintf(lanes, sizeof lanes, ", %d rows as lanes in tiles of %d%s", g, b->k->rows_tile,
			 b->nview < b->heads ? " (across query heads)" : "");
	cli_heads_clause(heads, sizeof heads, b->heads, b->kv_heads);
	if (split > 1)
		snprintf(chunks, sizeof chunks, ", rows in %d chunks", split);
	char target[96] = "";
	if (b->k->target[0])
		snprintf(target, sizeof target, " (compiled for %s, ASSOC_CPU)", b->k->target);
	char fold[96];
	if (scan && b->k->scan_tiles)
		snprintf(fold, sizeof fold, "a scan in tiles of %d blocks of %d positions, %d merges a position",
			 b->k->scan_lanes, b->k->scan_lanes, merges_a_position(c, b->k));
	else if (scan && b->k->scan_lanes > 1)
		snprintf(fold, sizeof fold, "a scan in vectors of %d positions, %d merges a position", b->k->scan_lanes,
			 merges_a_position(c, b->k));
	else if (scan)
		snprintf(fold, sizeof fold, "a scan, a position at a time");
	else if (b->k->ordered > 1) /* one lane a run of positions: no lanes, accumulators or tiles of the others */
		snprintf(fold, sizeof fold, "%d ordered lanes", b->k->ordered);
	else if (b->k->select)
		snprintf(fold, sizeof fold, "%s", llvm_fold_name(b->k));
	else
		snprintf(fold, sizeof fold, "%d lanes x %d accumulators, tiles of %d%s", b->k->lanes, b->k->accs, b->k->tile,
			 b->k->max_rescale ? " (max-rescale)" : b->k->tf ? " (transported)" : "");
	printf("%s: carrier %s on cpu%s, %lld rows x %lld%s, %d threads, %s%s%s, %.3g MB\n", c->file, c->name, target, rows,
	       len, heads, th, fold, lanes, chunks, bytes / 1e6);
	printf("  kernel %8.2f GB/s  %.3f G elements/s (%.3f per thread, %.3f per CPU-second)\n", gb, ge, ge / th, gcpu);
	if (flops > 0)
		printf("  attention %.2f GFLOP/s (%.2f per thread; pairs the mask keeps)\n", flops / tk / 1e9, flops / tk / 1e9 / th);
	printf("  copy   %8.2f GB/s  (memcpy of the same bytes, same threads)\n", cgb);
	printf("  arithmetic %.2f ops/byte (%.0f a position); at the copy's speed %d threads of %d lanes, %d a cycle at "
	       "%.0f GHz, do %.2f%s\n",
	       in.per_byte, in.ops, th, in.lanes, NOMINAL_OPS_PER_CYCLE, NOMINAL_GHZ, in.allowed,
	       bound && !gcache ? ": compute-bound, the copy's speed is out of reach" : "");
	if (gcache > 0)
		printf("  in cache %.3f G elements/s (%lld of its rows, %.2f MB, again and again): %.2f of the copy's "
		       "elements a second%s\n",
		       gcache, (long long)ic->rows, bytes / rows * ic->rows / 1e6, gcache / cps,
		       bound ? ": compute-bound, the copy's speed is out of reach" : "");
	if (calls[0])
		printf("  scalar: %s of f64 values %s a libm call a lane (counted %d operations a lane)\n", calls,
		       strchr(calls, ',') ? "are each" : "is", SCALAR_CALL_OPS);
	if (b->k->one_lane[0] && b->k->tf) /* tiles of positions at once: as fast as the lanes can be */
		printf("  one lane: the reduce folds in one lane, for %s, in tiles of %d positions transported\n",
		       b->k->one_lane, b->k->tile);
	else if (b->k->one_lane[0])
		printf("  one lane: the reduce folds in one lane, for %s; the copy's speed is out of reach\n", b->k->one_lane);
	if (scan)
		; /* positions in order by construction */
	else if (b->k->ordered > 1)
		printf("  ordered: %d lanes each fold a run of positions, merged in order: the merge is not known to "
		       "commute: %s\n", b->k->ordered, b->k->order);
	else if (b->k->lanes > 1 && b->k->order[0])
		printf("  any order: the merge commutes, %s\n", b->k->order);
	if (not_transported(c, b->k))
		printf("  not transported: %s\n", b->k->tf_why);
	if (b->k->chain_why[0])
		printf("  chains of merges start %s: %s\n", b->k->lift_chains ? "at a lift" : "at the identity",
		       b->k->chain_why);
	if (tn > 0)
		printf("  naive  %8.2f GB/s  (%s)\n", ngb, nsrc);
	else /* a carrier of the user's has no loop there: say what stands in for it */
		printf("  naive  unavailable: %s\n         (%s)\n", nwhy,
		       flops > 0 ? "the kernel is measured by its GFLOP/s above"
				 : "the kernel is compared with the copy alone: kernel/copy below");
	/* attention of many query rows computes far more than it moves: a
	 * copy's bandwidth is no yardstick for it, its GFLOP/s are; decoding
	 * (a row or a few a head) streams its keys and is held to the copy */
	if (flops > 0 && bound)
		printf("  attention is compute-bound: no kernel/copy ratio");
	else
		printf("  kernel/copy %.2f", gb / cgb);
	if (tn > 0)
		printf("   kernel/naive %.2f", gb / ngb);
	printf("   (median of %d runs each)\n", RUNS);
}

/* The verdict run and emit reach, before anything is timed, on the cpu,
 * the gpu and paged alike: the speed of a merge whose laws fail is no
 * speed of its carrier (--trust-merge times it anyway, with a warning).
 * A device bench does not take is left to its usage error. */
static int bench_verdict(const Opts *o)
{
	if (strcmp(o->device, "cpu") && strcmp(o->device, "gpu") && strcmp(o->device, "auto"))
		return EXIT_OK;
	Carrier *c = cli_load(o, o->specs[0]);
	if (!c)
		return EXIT_USAGE;
	int rc = cli_run_verdict_as(c, o, "benchmarking", "time it");
	spec_carrier_free(c);
	return rc;
}

int cmd_bench(Opts *o)
{
	char why[1024];
	int gate = bench_verdict(o);
	if (gate)
		return gate;
	if (o->page_size)
		return cmd_paged_bench(o);
	/* auto: the GPU where one is usable, as run picks */
	const Device *gpu = run_device_find("gpu");
	if (!strcmp(o->device, "gpu") || (!strcmp(o->device, "auto") && gpu && gpu->available(why, sizeof why)))
		return cmd_bench_gpu(o);
	if (strcmp(o->device, "cpu") && strcmp(o->device, "auto"))
		return usage_error("bench runs on --device cpu or gpu (got '%s')", o->device);
	/* the CPU has no tuned choice to set aside */
	if (o->run.deterministic)
		return usage_error("--deterministic is an option of bench --device gpu only");
	char msg[1024];
	if (!dev_cpu.available(msg, sizeof msg)) {
		fprintf(stderr, "assoc: the cpu device is not usable here: %s\n", msg);
		return EXIT_UNABLE;
	}
	Carrier *c = cli_load(o, o->specs[0]);
	if (!c)
		return EXIT_USAGE;
	Npy arr[MAX_FILES] = {0}; /* real data where --input gives it; drawn data elsewhere */
	int rc = cli_inputs_read(o, c, arr);
	int heads = 1, kv = 1;
	if (!rc)
		rc = cli_bench_shape(o);
	if (!rc)
		rc = cli_heads(o, &heads, &kv);
	if (!rc)
		rc = cli_fits(o, c, 2); /* the arrays, and the copy's as many bytes again */
	RunData *d = rundata_new_heads(c, rc ? 0 : o->rows, rc ? 0 : o->len, heads, kv);
	if (!rc)
		cli_split_fit(o, d->len);
	Bench b = {.split = o->run.split, .heads = heads, .kv_heads = kv};
	LlvmOpts lo = {.fit_rows = rc ? 0 : cpu_view_rows(d)};
	if (!rc && cpu_parse_config(o->run.config, &lo, msg, sizeof msg))
		rc = usage_error("bench: %s", msg);
	for (int h = 0; h < heads && !rc; h++) { /* every head the same sample: the kernel's speed is what is timed */
		RunData *v = heads > 1 ? rundata_head_view(d, h) : d;
		if (fill_inputs(v, o, msg, sizeof msg))
			rc = usage_error("%s", msg);
		if (v != d)
			rundata_view_free(v);
	}
	if (!rc)
		rc = cli_inputs_load(o, d, arr);
	if (!rc)
		cli_busy("%s: compiling for the CPU", c->file);
	int failed = !rc && llvm_compile(c, &lo, &b.k, msg, sizeof msg);
	cli_busy_done();
	if (!rc && (failed || rt_pool_open(&b.pool, o->run.threads, msg, sizeof msg))) {
		fprintf(stderr, "assoc: %s\n", msg);
		rc = EXIT_UNABLE;
	}
	int64_t *width = calloc(c->nelem + c->ncol + c->nrow + 1, sizeof *width);
	if (!width)
		abort();
	CpuHeads hv = {0}, pv = {0};
	if (!rc) {
		cpu_heads(d, 0, &hv);
		cpu_heads(d, 1, &pv);
		b.a = hv.a, b.va = pv.a, b.nview = pv.n;
		rundata_widths(d, width);
		b.width = width;
		double bytes = rundata_bytes(d);
		b.copy_bytes = (size_t)(bytes / 2);
		b.src = malloc(b.copy_bytes + 1), b.dst = malloc(b.copy_bytes + 1);
		if (!b.src || !b.dst)
			abort();
		memset(b.src, 1, b.copy_bytes);
		memset(b.dst, 2, b.copy_bytes);
		/* a run that fails (out of memory for the partial states of all
		 * the heads) is not timed */
		if (rt_cpu_run(b.pool, &b.k->k, b.va, b.nview, b.split, msg, sizeof msg)) {
			fprintf(stderr, "assoc: cpu: %s\n", msg);
			rc = EXIT_UNABLE;
		}
	}
	if (!rc) {
		double tcpu = 0, bytes = rundata_bytes(d);
		cli_busy("%s: timing the kernel, a copy and the naive loop", c->file);
		double tk = median_time(run_kernel, &b, &tcpu);
		double tc = median_time(run_copy, &b, NULL);
		InCache ic = {0};
		if (c->tpl != FAM_ATTN)
			in_cache(&b, bytes, &ic);
		void *lib;
		char nwhy[1200] = "", nsrc[PATH_MAX + 128] = "";
		b.naive = (void (*)(const Args *, int64_t, int64_t))load_naive(c->name, &lib, nsrc, sizeof nsrc, nwhy,
									      sizeof nwhy);
		if (b.naive && naive_meets(c, o, b.naive, nwhy, sizeof nwhy))
			b.naive = NULL;
		double tn = b.naive ? median_time(run_naive, &b, NULL) : 0;
		if (lib)
			dlclose(lib);
		cli_busy_done();
		/* after the timings: matching the contract adds to the carrier's IR */
		CudaAttn at;
		char why[512];
		double flops = cuda_attn_match(c, &at, why, sizeof why) ? 0 : rundata_attention_flops(d, at.d, at.dv);
		report(o, c, &b, bytes, tk, tc, tn, tcpu, &ic, flops, nsrc, nwhy);
	}
	free(b.src);
	free(b.dst);
	free(width);
	cpu_heads_free(&hv);
	cpu_heads_free(&pv);
	cli_inputs_free(arr);
	rt_pool_close(b.pool);
	llvm_kernel_free(b.k);
	rundata_free(d);
	spec_carrier_free(c);
	return rc;
}
