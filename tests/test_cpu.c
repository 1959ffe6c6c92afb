/* test_cpu.c: the CPU device (LLVM JIT + threaded executor) against the
 * float64 reference on every bundled spec, over the odd-shape grid, with
 * 1 to 3 threads and split rows; determinism; order of non-commutative
 * merges; fully masked rows; .npy files through `assoc run --device cpu`. */
#include <dlfcn.h>
#include <float.h>
#include <glob.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "compiler/llvm/llvm.h"
#include "compiler/llvm/mask_live.h"
#include "compiler/llvm/llvm_int.h"
#include "compiler/devices/npy.h"
#include "compiler/devices/run.h"
#include "compiler/util/rng.h"
#include "cputest.h"
#include "testutil.h"

extern const Device dev_cpu; /* a strong reference links the device in */

#define SOFTMAX_STATE "state: {m: f32, l: f32}\nidentity: {m: -inf, l: 0}\nlift: {m: x, l: 1}\n"
#define SOFTMAX_MERGE "merge:\n  m: max(a.m, b.m)\n  l: a.l * exp(a.m - m) + b.l * exp(b.m - m)\n"

static RunData *drawn(Carrier *c, int rows, int len, uint64_t seed)
{
	RunData *d = rundata_new(c, rows, len);
	char msg[200];
	cr_assert_eq(rundata_draw(d, seed, NULL, 0, msg, sizeof msg), 0, "%s", msg);
	return d;
}

/* Rows 1 to 4 of d's first (float32) element input: all -inf, -inf at
 * every third position, a NaN, a +inf. */
static void special_rows(RunData *d, int len)
{
	float *x = d->elem[0].p;
	for (int j = 0; j < len; j++)
		x[(size_t)len + j] = -INFINITY;
	for (int j = 0; j < len; j += 3)
		x[(size_t)2 * len + j] = -INFINITY;
	x[(size_t)3 * len + len / 2] = NAN;
	x[(size_t)4 * len + len / 3] = INFINITY;
}

/* Pools of 1 to n threads: p[t] has t + 1. */
static void pools_open(RtPool **p, int n)
{
	char msg[200];
	for (int t = 0; t < n; t++)
		cr_assert_eq(rt_pool_open(&p[t], t + 1, msg, sizeof msg), 0, "%s", msg);
}

static void pools_close(RtPool **p, int n)
{
	for (int t = 0; t < n; t++)
		rt_pool_close(p[t]);
}

/* Run k on d with the given threads and split. */
static void run_kernel(LlvmKernel *k, RunData *d, RtPool *pool, int split)
{
	const void *in[64];
	void *out[64];
	CpuArgs a;
	cpu_args(d, &a, in, out);
	char msg[200];
	cr_assert_eq(rt_cpu_run(pool, &k->k, &a, 1, split, msg, sizeof msg), 0, "%s", msg);
}


/* A spec file with its dims set by defs. */
static Carrier *load_defined(const char *path, Define *defs, int n)
{
	Diag dg;
	diag_init(&dg, path);
	Carrier *c = spec_load_file(path, defs, n, &dg);
	cr_assert(c, "%s", dg.text ? dg.text : "");
	diag_free(&dg);
	return c;
}

/* Drawn rows of c run on the cpu device (2 threads), against the reference. */
static void cpu_meets_reference(Carrier *c, int rows, int len, uint64_t seed, const char *what)
{
	RunData *d = drawn(c, rows, len, seed);
	char msg[300];
	cr_assert_eq(dev_cpu.run(d, &(RunOpts){.threads = 2}, msg, sizeof msg), 0, "%s", msg);
	expect_ok(d, what);
	rundata_free(d);
}

/* The GPU tests' grid: rows 1, 3, 64; lengths 0, 1, 31, 32, 33, 1000,
 * 4099; threads 1 to 3; default and forced splits.  Attention's float64
 * reference is slow (d = 64 per key), so its longest rows are shorter. */
static void grid(const char *path)
{
	static const int rows[] = {1, 3, 64}, lens[] = {0, 1, 31, 32, 33, 1000, 4099};
	static const int splits[] = {0, 2, 3, 7};
	Carrier *c = load_ok(path);
	LlvmKernel *k = compiled(c, NULL);
	int heavy = !strcmp(c->name, "attention") || !strcmp(c->name, "o_lse");
	RtPool *pool[3];
	char msg[200];
	for (int t = 0; t < 3; t++)
		cr_assert_eq(rt_pool_open(&pool[t], t + 1, msg, sizeof msg), 0, "%s", msg);
	int n = 0;
	for (size_t r = 0; r < 3; r++)
		for (size_t l = 0; l < 7; l++, n++) {
			if (heavy && rows[r] * lens[l] > 20000)
				continue;
			RunData *d = drawn(c, rows[r], lens[l], 1 + n);
			int split = splits[n % 4];
			run_kernel(k, d, pool[n % 3], split);
			char what[200];
			snprintf(what, sizeof what, "%s rows %d len %d threads %d split %d", path, rows[r], lens[l],
				 n % 3 + 1, split);
			expect_ok(d, what);
			rundata_free(d);
		}
	for (int t = 0; t < 3; t++)
		rt_pool_close(pool[t]);
	llvm_kernel_free(k);
	spec_carrier_free(c);
}

#define SPEC_TEST(name) \
	Test(cpu, name) { grid("specs/" #name ".yaml"); }
#include "bundled.def"
#undef SPEC_TEST

#define SPEC_TEST(name) +1
static const size_t bundled_count = 0
#include "bundled.def"
	;
#undef SPEC_TEST

Test(cpu, every_bundled_spec_has_a_grid_test)
{
	glob_t g;
	cr_assert_eq(glob("specs/*.yaml", 0, NULL, &g), 0);
	cr_expect_eq(g.gl_pathc, bundled_count, "a new spec in specs/ needs its SPEC_TEST line in tests/bundled.def");
	globfree(&g);
}

/* Attention with query heads sharing key/value heads (grouped and
 * multi-query), each head against the float64 reference. */
Test(cpu, attention_heads_and_grouped_kv)
{
	Define defs[2] = {{"d", "32"}, {"dv", "32"}};
	Carrier *c = load_defined("specs/attention.yaml", defs, 2);
	static const int shape[][4] = {{33, 70, 4, 2}, {17, 129, 3, 1}, {5, 40, 2, 2}};
	for (int s = 0; s < 3; s++) {
		RunData *d = rundata_new_heads(c, shape[s][0], shape[s][1], shape[s][2], shape[s][3]);
		char msg[300];
		cr_assert_eq(rundata_draw(d, 5 + s, NULL, 0, msg, sizeof msg), 0, "%s", msg);
		runcheck_round_p(d, TY_F16, 0, 1, 2); /* as after a GPU run: the CPU's P is float32 again */
		cr_assert_eq(dev_cpu.run(d, &(RunOpts){.threads = 2}, msg, sizeof msg), 0, "%s", msg);
		cr_expect_eq(d->p_round.kind, 0, "the CPU run left P marked as rounded");
		char what[100];
		snprintf(what, sizeof what, "attention %d rows x %d keys, %d/%d heads", shape[s][0], shape[s][1],
			 shape[s][2], shape[s][3]);
		expect_ok(d, what);
		rundata_free(d);
	}
	spec_carrier_free(c);
}

/* A key/value head's query heads run as one view of their rows one after
 * another (cpu_heads packs, CpuArgs.period), so that a group of rows as
 * lanes loads each key once for all of them.  The spec's i is the row
 * within its head: in the group's lanes across a head's end, in the rows
 * after the last group, and in the mask's live blocks (a mask that holds
 * for large j, which a row index past the head's rows would rule out). */
Test(cpu, query_heads_share_a_view_of_their_key_value_head, .timeout = 120)
{
	Define defs[2] = {{"d", "16"}, {"dv", "16"}};
	Carrier *causal = load_defined("tests/attention/causal_bf16.yaml", defs, 2), *full = load_defined("specs/attention.yaml", defs, 2);
	Carrier *later = text_ok("carrier: later\ndims: {d: 16}\nrow:\n  q: f32[d]\ncolumn:\n  k: f32[d]\n  v: f32\n"
				 "let:\n  s: dot(q, k)\nmask: j >= i\n"
				 "state: {m: f32, l: f32, o: f32}\nidentity: {m: -inf, l: 0, o: 0}\nlift: {m: s, l: 1, o: v}\n"
				 "merge:\n  m: max(a.m, b.m)\n  l: a.l * exp(a.m - m) + b.l * exp(b.m - m)\n"
				 "  o: a.o * exp(a.m - m) + b.o * exp(b.m - m)\n"
				 "finalize: {out: o / l}\nreference:\n  out: sum(exp(s) * v) / sum(exp(s))\n");
	static const struct {
		int spec, rows, len, heads, kv, lanes; /* lanes: the group fit_rows picks */
	} cases[] = {
		{0, 3, 100, 8, 2, 8},   /* 12 rows a view: rows as lanes (a group of 8 or more below 256 components), a group of 8 across three heads, 4 rows alone */
		{1, 1, 5000, 8, 2, 4},  /* decoding: one group of the 4 query heads, in chunks */
		{2, 300, 700, 2, 1, 16}, /* live blocks; the group at rows 288 .. 303 crosses the heads */
		{2, 5, 600, 6, 2, 8},   /* a scalar v: rows as lanes, a group of 8 across two heads, 7 rows alone */
	};
	Carrier *cs[3] = {causal, full, later};
	for (size_t s = 0; s < sizeof cases / sizeof *cases; s++) {
		Carrier *c = cs[cases[s].spec];
		RunData *d = rundata_new_heads(c, cases[s].rows, cases[s].len, cases[s].heads, cases[s].kv);
		char msg[300], what[160];
		cr_assert_eq(rundata_draw(d, 40 + s, NULL, 0, msg, sizeof msg), 0, "%s", msg);
		int g = cases[s].heads / cases[s].kv;
		CpuHeads h;
		cpu_heads(d, 1, &h);
		cr_expect_eq(h.n, cases[s].kv);
		cr_expect_eq(h.a[0].rows, (int64_t)g * cases[s].rows);
		cr_expect_eq(h.a[0].period, cases[s].rows);
		if (h.n > 1) /* the second view starts at its first head's first row */
			cr_expect_eq((const char *)h.a[1].in[c->ncol] - (const char *)h.a[0].in[c->ncol],
				     (ptrdiff_t)g * cases[s].rows * d->row[0].width * run_kind_size(d->row[0].kind));
		cpu_heads_free(&h);
		cr_expect_eq(cpu_view_rows(d), (int64_t)g * cases[s].rows);
		LlvmKernel *k0 = compiled(c, &(LlvmOpts){0}), *k = compiled(c, &(LlvmOpts){.fit_rows = cpu_view_rows(d)});
		int want = cases[s].lanes < k0->rows ? cases[s].lanes : k0->rows; /* no wider than the host's default */
		cr_expect_eq(k->rows, want, "%s: %d rows side by side, not %d", c->name, k->rows, want);
		llvm_kernel_free(k0);
		llvm_kernel_free(k);
		for (int split = 0; split <= 3; split += 3) {
			cr_assert_eq(dev_cpu.run(d, &(RunOpts){.threads = 2, .split = split}, msg, sizeof msg), 0, "%s", msg);
			snprintf(what, sizeof what, "%s, %d rows x %d keys, %d/%d heads, split %d", c->name, cases[s].rows,
				 cases[s].len, cases[s].heads, cases[s].kv, split);
			expect_ok(d, what);
		}
		rundata_free(d);
	}
	spec_carrier_free(causal);
	spec_carrier_free(full);
	spec_carrier_free(later);
}

Test(cpu, device_runs_through_the_table)
{
	cr_assert_eq(run_device_find("cpu"), &dev_cpu);
	Carrier *c = load_ok("specs/online_softmax.yaml");
	RunData *d = drawn(c, 5, 300, 7);
	char msg[300];
	cr_assert_eq(dev_cpu.run(d, &(RunOpts){.threads = 2, .split = 3}, msg, sizeof msg), 0, "%s", msg);
	expect_ok(d, "softmax through dev_cpu");
	static const char *bad[][2] = {{"lanes=eight", "lanes needs a whole number from 1 to 64"},
				       {"lanes=0", "lanes needs a whole number from 1 to 64"},
				       {"accs=4x", "accs needs a whole number from 1 to 16"},
				       {"rows=4,wide=2", "unknown --config item 'wide=2'"},
				       {"unroll=17", "unroll needs a whole number from 0 to 16"},
				       {"tf=2", "tf needs a whole number from 0 to 1"},
				       /* decimal digits alone, as the CUDA keys take them */
				       {"lanes= 4", "in decimal digits alone (not ' 4')"},
				       {"lanes=+4", "in decimal digits alone (not '+4')"},
				       {"lanes=04", "in decimal digits alone (not '04')"},
				       {"lanes=0x4", "in decimal digits alone (not '0x4')"},
				       {"lanes=4,", "'lanes=4,' ends in a comma: an item is missing after it"},
				       {"tf=1", "tf=1 asks for the transported fold, which online_softmax cannot have on the "
						"cpu device: the tiles fold by the max-rescale merge"}};
	for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
		cr_assert_eq(dev_cpu.run(d, &(RunOpts){.config = bad[k][0]}, msg, sizeof msg), -1, "%s", bad[k][0]);
		cr_expect(strstr(msg, bad[k][1]), "%s: %s", bad[k][0], msg);
	}
	rundata_free(d);
	spec_carrier_free(c);
}

/* A run of fewer than 4096 positions in all stays on the calling thread
 * (waking a worker costs more than the work), with the pool's results;
 * a larger one wakes the workers. */
Test(cpu, small_runs_stay_on_the_calling_thread)
{
	Carrier *c = load_ok("specs/online_softmax.yaml");
	LlvmKernel *k = compiled(c, &(LlvmOpts){0});
	RtPool *p;
	char msg[200];
	cr_assert_eq(rt_pool_open(&p, 2, msg, sizeof msg), 0, "%s", msg);
	static const int shapes[][3] = {{1, 32, 0}, {3, 1000, 0}, {1, 4095, 3}, {2, 4096, 0}, {64, 1000, 3}};
	for (int s = 0; s < 5; s++) {
		RunData *d = drawn(c, shapes[s][0], shapes[s][1], 11);
		unsigned long before = rt_pool_jobs(p);
		run_kernel(k, d, p, shapes[s][2]);
		int small = shapes[s][0] * shapes[s][1] < 4096;
		char what[80];
		snprintf(what, sizeof what, "%d x %d, split %d", shapes[s][0], shapes[s][1], shapes[s][2]);
		if (small)
			cr_expect_eq(rt_pool_jobs(p), before, "%s: the workers were woken", what);
		else
			cr_expect_gt(rt_pool_jobs(p), before, "%s: the workers were not woken", what);
		expect_ok(d, what);
		rundata_free(d);
	}
	rt_pool_close(p);
	llvm_kernel_free(k);
	spec_carrier_free(c);
}

/* Other vector shapes of the reduce loop give correct results too. */
Test(cpu, lanes_and_accumulators)
{
	static const LlvmOpts shapes[] = {{.lanes = 1, .accs = 1}, {.lanes = 4, .accs = 1, .tile = 3}, {.lanes = 8, .accs = 2},
					  {.lanes = 16, .accs = 4, .tile = 2}, {.lanes = 32, .accs = 8}};
	const char *specs[] = {"specs/online_softmax.yaml", "specs/welford.yaml", "specs/argmax.yaml"};
	for (int s = 0; s < 3; s++) {
		Carrier *c = load_ok(specs[s]);
		RtPool *p;
		char msg[200];
		cr_assert_eq(rt_pool_open(&p, 2, msg, sizeof msg), 0);
		for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
			LlvmKernel *k = compiled(c, &shapes[i]);
			RunData *d = drawn(c, 4, 1237, 3);
			run_kernel(k, d, p, 0);
			char what[100];
			snprintf(what, sizeof what, "%s lanes %d accs %d", specs[s], shapes[i].lanes, shapes[i].accs);
			expect_ok(d, what);
			rundata_free(d);
			llvm_kernel_free(k);
		}
		rt_pool_close(p);
		spec_carrier_free(c);
	}
}

/* Chunks depend on the shape, never on the thread count: same bits. */
Test(cpu, results_do_not_depend_on_threads)
{
	Carrier *c = load_ok("specs/online_softmax.yaml");
	LlvmKernel *k = compiled(c, NULL);
	RunData *d[3];
	for (int t = 0; t < 3; t++) {
		RtPool *p;
		char msg[200];
		cr_assert_eq(rt_pool_open(&p, t + 1, msg, sizeof msg), 0);
		d[t] = drawn(c, 2, 300000, 5);
		run_kernel(k, d[t], p, 0);
		rt_pool_close(p);
	}
	cr_assert_gt(rt_cpu_split(&k->k, 2, 1, 300000, 0), 1, "long rows are split");
	for (int t = 1; t < 3; t++) {
		cr_assert(!memcmp(d[0]->fin[0].p, d[t]->fin[0].p, 2 * sizeof(float)), "lse, %d threads", t + 1);
		cr_assert(!memcmp(d[0]->map[0].p, d[t]->map[0].p, 600000 * sizeof(float)), "y, %d threads", t + 1);
	}
	expect_ok(d[2], "softmax 2 x 300000");
	for (int t = 0; t < 3; t++)
		rundata_free(d[t]);
	llvm_kernel_free(k);
	spec_carrier_free(c);
}

/* A non-commutative rowreduce (the first value) must keep operand order
 * across lanes and split chunks: the checker's basis is the left fold. */
Test(cpu, non_commutative_merge_keeps_order)
{
	Carrier *c = text_ok("carrier: first\nelement: {x: f32}\nstate: {v: f32, n: f32}\n"
			     "identity: {v: 0, n: 0}\nlift: {v: x, n: 1}\n"
			     "merge:\n  v: where(a.n > 0, a.v, b.v)\n  n: a.n + b.n\n");
	LlvmKernel *k = compiled(c, NULL);
	cr_assert_eq(k->lanes, 1, "no lanes for a non-commutative merge");
	RtPool *p;
	char msg[200];
	cr_assert_eq(rt_pool_open(&p, 3, msg, sizeof msg), 0);
	RunData *d = drawn(c, 3, 1000, 9);
	run_kernel(k, d, p, 7);
	for (int r = 0; r < 3; r++)
		cr_assert_eq(((float *)d->fin[0].p)[r], ((float *)d->elem[0].p)[r * 1000], "row %d", r);
	expect_ok(d, "first");
	rundata_free(d);
	rt_pool_close(p);
	llvm_kernel_free(k);
	spec_carrier_free(c);
}

/* Carriers written without a commutative claim fold in ordered lanes
 * (segments of the row, merged neighbour to neighbour), or in the
 * commutative ones where their merge commutes by its form (clipped_sum's
 * sums; xent_label's rescale, by the n-ary max-rescale fold) or by proof
 * (nan_minmax_mean, argmin_first: check_commutes): each meets its
 * reference (or its own left fold) at odd lengths, with every lane width
 * (16: on AVX-512 hosts the blocks load transposed, load_transposed16 in
 * llvm_kern.c), threads and splits, NaN and infinities in rows 1 to 4. */
Test(cpu, ordered_lanes_meet_the_left_fold, .timeout = 120)
{
	const char *specs[] = {"bench/carriers/argmax_first.yaml", "bench/carriers/clipped_sum.yaml",
			       "bench/carriers/nan_minmax_mean.yaml", "bench/carriers/xent_label.yaml",
			       "bench/carriers/argmin_first.yaml", "tests/rows/softmax_first.yaml"};
	static const int lens[] = {1, 17, 255, 256, 257, 1000, 4099, 20011};
	static const LlvmOpts widths[] = {{.lanes = 4}, {.lanes = 8}, {.lanes = 16}};
	RtPool *p[3];
	pools_open(p, 3);
	for (size_t s = 0; s < sizeof specs / sizeof *specs; s++) {
		Carrier *c = load_ok(specs[s]);
		/* sums, and xent's rescale and sum, commute by their form
		 * (merge_commutes); nan_minmax_mean's selects and argmin_first's
		 * index tie-break by proof (check_commutes); argmax_first keeps
		 * the earlier of equal values, which only its order says, and
		 * softmax_first its first value: its ordered lanes fold each run
		 * n-arily beside the lanes' state (fold_max_rescale) */
		int any_order = !strstr(specs[s], "argmax") && !strstr(specs[s], "softmax_first");
		for (size_t w = 0; w < sizeof widths / sizeof *widths; w++) {
			LlvmKernel *k = compiled(c, &widths[w]);
			if (any_order) {
				cr_assert_gt(k->lanes, 1, "%s: commutative lanes (%s)", specs[s], k->order);
			} else {
				cr_assert_eq(k->lanes, 1, "%s: no commutative lanes", specs[s]);
				cr_assert_gt(k->ordered, 1, "%s: ordered lanes", specs[s]);
			}
			/* xent_label's and softmax_first's merges are max-rescale by their form */
			cr_expect_eq(k->max_rescale, s == 3 || s == 5, "%s: the n-ary fold of each vector", specs[s]);
			for (size_t n = 0; n < sizeof lens / sizeof *lens; n++) {
				RunData *d = drawn(c, 6, lens[n], 11 + n);
				if (lens[n] > 3 && !strstr(specs[s], "xent"))
					special_rows(d, lens[n]);
				run_kernel(k, d, p[n % 3], n % 2 ? 3 : 0);
				char what[200];
				snprintf(what, sizeof what, "%s lanes %d len %d", specs[s], any_order ? k->lanes : k->ordered, lens[n]);
				expect_ok(d, what);
				rundata_free(d);
			}
			llvm_kernel_free(k);
		}
		spec_carrier_free(c);
	}
	pools_close(p, 3);
}

/* c compiled with o (ordered: in ordered lanes, else the commutative
 * ones) over 8 rows of len 1s holding NaN at scattered positions, and
 * among them a few smaller values (infs: +inf instead), against its left
 * fold. */
static void nan_rows_meet_the_left_fold(Carrier *c, const LlvmOpts *o, RtPool *p, int ordered, int len, int seed,
					int infs)
{
	enum { ROWS = 8 };
	LlvmKernel *k = compiled(c, o);
	cr_assert_gt(ordered ? k->ordered : k->lanes, 1, "%s: lanes", c->name);
	RunData *d = drawn(c, ROWS, len, seed);
	float *x = d->elem[0].p;
	uint32_t h = infs ? 777 : 12345;
	for (int j = 0; j < ROWS * len; j++) {
		h = h * 1103515245u + 12345u;
		x[j] = h >> 16 & (infs ? 15 : 31) ? 1.0f : NAN;
		if (!infs && (h >> 8 & 255) == 7)
			x[j] = -(float)(h >> 24 & 7) - 1;
		if (infs && (h >> 8 & 127) == 5)
			x[j] = INFINITY;
	}
	run_kernel(k, d, p, 0);
	char what[200];
	snprintf(what, sizeof what, "%s, %d lanes, rows of %d", c->name, o->lanes, len);
	expect_ok(d, what);
	rundata_free(d);
	llvm_kernel_free(k);
}

/* Rows of 1s holding NaN at scattered positions and a few smaller
 * values after them: a merge that skips a NaN on its right but keeps one
 * on its left (argmin_first's pos, a first minimum's where(b.v < a.v,
 * ...)) gives the left fold's answer only where every position is merged
 * on the right of a state.  The tiles of the commutative lanes (a tree
 * of merges; beside softmax's rescale, the fields folded apart) and the
 * ordered lanes' runs beside it each meet the left fold. */
Test(cpu, tiles_skip_a_nan_as_the_left_fold, .timeout = 120)
{
	static const char *texts[] = {
		"carrier: softmax_argmin\nelement: {x: f32}\nstate: {m: f32, l: f32, v: f32, k: i32}\n"
		"identity: {m: -inf, l: 0, v: inf, k: 2147483647}\nlift: {m: x, l: 1, v: x, k: j}\n"
		"merge:\n  m: max(a.m, b.m)\n"
		"  l: a.l * exp(where(a.m == inf, 0, a.m - m)) + b.l * exp(where(b.m == inf, 0, b.m - m))\n"
		"  v: where(b.v < a.v || (b.v == a.v && b.k < a.k), b.v, a.v)\n"
		"  k: where(b.v < a.v || (b.v == a.v && b.k < a.k), b.k, a.k)\n",
		"carrier: softmax_min_first\nelement: {x: f32}\nstate: {m: f32, l: f32, v: f32, k: i32}\n"
		"identity: {m: -inf, l: 0, v: inf, k: -1}\nlift: {m: x, l: 1, v: x, k: j}\n"
		"merge:\n  m: max(a.m, b.m)\n"
		"  l: a.l * exp(where(a.m == inf, 0, a.m - m)) + b.l * exp(where(b.m == inf, 0, b.m - m))\n"
		"  v: where(b.v < a.v, b.v, a.v)\n  k: where(b.v < a.v, b.k, a.k)\n"};
	static const LlvmOpts widths[] = {{.lanes = 4}, {.lanes = 8}, {.lanes = 16}};
	enum { LEN = 1024 };
	RtPool *p;
	pools_open(&p, 1);
	for (int s = 0; s < 3; s++) {
		Carrier *c = s ? text_ok(texts[s - 1]) : load_ok("bench/carriers/argmin_first.yaml");
		for (int w = 0; w < 3; w++)
			nan_rows_meet_the_left_fold(c, &widths[w], p, s == 2, LEN, 60 + w, 0);
		spec_carrier_free(c);
	}
	pools_close(&p, 1);
}

/* The commutative lanes read a row as 4 streams side by side, so an
 * accumulator's lane already holds positions of the later streams when
 * a tile of an earlier one comes: a lift merged on the right of that
 * state is no step of the left fold.  An argmax breaking ties by
 * min(a.k, b.k) commutes (and is judged to), yet with a NaN's lift on
 * the right of a state holding an inf it keeps the NaN's position, the
 * smaller, where the left fold reaches the inf with its own.  Rows of 1s
 * with NaN and inf scattered, at lengths of 4 streams and past them. */
Test(cpu, lanes_meet_a_nan_after_later_positions_as_the_left_fold, .timeout = 120)
{
	Carrier *c = text_ok("carrier: argmax_min\nelement: {x: f32}\nstate: {v: f32, k: i32}\n"
			     "identity: {v: -inf, k: 2147483647}\nlift: {v: x, k: j}\n"
			     "merge:\n  v: max(a.v, b.v)\n"
			     "  k: where(a.v > b.v, a.k, where(b.v > a.v, b.k, min(a.k, b.k)))\n");
	static const LlvmOpts widths[] = {{.lanes = 4}, {.lanes = 8}, {.lanes = 16}};
	static const int lens[] = {2048, 4099};
	RtPool *p;
	pools_open(&p, 1);
	for (int w = 0; w < 3; w++)
		for (int n = 0; n < 2; n++)
			nan_rows_meet_the_left_fold(c, &widths[w], p, 0, lens[n], 70 + w, 1);
	spec_carrier_free(c);
	pools_close(&p, 1);
}

/* A max written as a select, NaN not taken out: over the reals it
 * commutes (the prover shows a+b = b+a), but where(a > b, a, b) gives b
 * when either is NaN, so on a row holding one the order decides; it
 * folds in ordered lanes and says why, and meets its left fold there.
 * The same select with NaN taken out in lift (nan_minmax_mean) and an
 * argmin whose ties go by position take the commutative lanes. */
Test(cpu, lanes_where_the_merge_commutes_by_proof, .timeout = 120)
{
	const char *text = "carrier: where_max\n"
			   "element: {x: f32}\n"
			   "state: {hi: f32}\n"
			   "identity: {hi: -inf}\n"
			   "lift: {hi: x}\n"
			   "merge:\n  hi: where(a.hi > b.hi, a.hi, b.hi)\n";
	static const int lens[] = {17, 257, 4099};
	Carrier *c = text_ok(text);
	LlvmKernel *k = compiled(c, NULL);
	cr_assert_eq(k->lanes, 1);
	cr_assert_gt(k->ordered, 1);
	cr_assert(strstr(k->order, "over the reals, but not on this row: hi is NaN as"), "%s", k->order);
	RtPool *p;
	char msg[200];
	cr_assert_eq(rt_pool_open(&p, 2, msg, sizeof msg), 0, "%s", msg);
	for (size_t n = 0; n < sizeof lens / sizeof *lens; n++) {
		RunData *d = drawn(c, 6, lens[n], 70 + n);
		special_rows(d, lens[n]);
		/* a NaN row has no answer to meet: the select is not even
		 * associative there ((a + NaN) + c is c, a + (NaN + c) is max(a, c)) */
		((float *)d->elem[0].p)[(size_t)3 * lens[n] + lens[n] / 2] = 0.5f;
		run_kernel(k, d, p, n == 1 ? 3 : 0);
		char what[64];
		snprintf(what, sizeof what, "where_max len %d", lens[n]);
		expect_ok(d, what);
		rundata_free(d);
	}
	rt_pool_close(p);
	llvm_kernel_free(k);
	spec_carrier_free(c);
	const char *proved[] = {"bench/carriers/nan_minmax_mean.yaml", "bench/carriers/argmin_first.yaml"};
	for (int s = 0; s < 2; s++) {
		c = load_ok(proved[s]);
		k = compiled(c, NULL);
		cr_expect_gt(k->lanes, 1, "%s", proved[s]);
		cr_expect_eq(k->ordered, 0, "%s", proved[s]);
		cr_expect(strstr(k->order, "a+b = b+a proved") && strstr(k->order, "rows holding NaN"), "%s: %s", proved[s],
			  k->order);
		llvm_kernel_free(k);
		spec_carrier_free(c);
	}
}

/* A scan's long rows run as segments side by side, seeded by the folds
 * of the segments before them: each position's output still meets the
 * left fold, across the switch (4096), at odd lengths, with splits (a
 * chunk's incoming state) and threads. */
Test(cpu, scan_segments_meet_the_left_fold, .timeout = 120)
{
	const char *specs[] = {"bench/carriers/affine_scan.yaml", "specs/selective_scan.yaml"};
	static const int lens[] = {4095, 4096, 4097, 5003, 70001};
	RtPool *p[3];
	pools_open(p, 3);
	for (size_t s = 0; s < sizeof specs / sizeof *specs; s++) {
		Carrier *c = load_ok(specs[s]);
		LlvmKernel *k = compiled(c, NULL);
		for (size_t n = 0; n < sizeof lens / sizeof *lens; n++) {
			RunData *d = drawn(c, 3, lens[n], 31 + n);
			run_kernel(k, d, p[n % 3], n % 2 ? 3 : 0);
			char what[200];
			snprintf(what, sizeof what, "%s len %d", specs[s], lens[n]);
			expect_ok(d, what);
			rundata_free(d);
		}
		llvm_kernel_free(k);
		spec_carrier_free(c);
	}
	pools_close(p, 3);
}

/* First-index ties through ordered lanes: a row of equal values gives
 * position 0, a maximum repeated in several segments its first position;
 * the same bits with 1 to 3 threads. */
Test(cpu, ordered_lanes_keep_the_first_tie)
{
	Carrier *c = load_ok("bench/carriers/argmax_first.yaml");
	LlvmKernel *k = compiled(c, NULL);
	cr_assert_gt(k->ordered, 1);
	enum { LEN = 5003 };
	RtPool *p[3];
	pools_open(p, 3);
	int at[3][3];
	for (int t = 0; t < 3; t++) {
		RunData *d = drawn(c, 3, LEN, 4);
		float *x = d->elem[0].p;
		for (int j = 0; j < LEN; j++)
			x[j] = 2.5f, x[LEN + j] = (float)(j % 7), x[2 * LEN + j] = -1.0f;
		x[2 * LEN + 4000] = x[2 * LEN + 1234] = x[2 * LEN + 4999] = 3.0f;
		run_kernel(k, d, p[t], 0);
		for (int r = 0; r < 3; r++)
			at[t][r] = ((int32_t *)d->fin[1].p)[r];
		rundata_free(d);
	}
	cr_assert_eq(at[0][0], 0, "all equal: the first position");
	cr_assert_eq(at[0][1], 6, "j %% 7: the first 6");
	cr_assert_eq(at[0][2], 1234, "the first of three maxima");
	for (int t = 1; t < 3; t++)
		cr_assert(!memcmp(at[0], at[t], sizeof at[0]), "%d threads", t + 1);
	pools_close(p, 3);
	llvm_kernel_free(k);
	spec_carrier_free(c);
}

/* run --verbose and bench name each fold for what it is: ordered lanes
 * that each fold a run, and top-k lists chosen from candidates, not one
 * lane by a tree of merges; a --config whose lanes or tile the plan
 * cannot take says so. */
Test(cpu, folds_are_named)
{
	char out[8192];
	static const char *cmds[][3] = {
		{"build/asan/assoc run bench/carriers/argmax_first.yaml --device cpu --rows 3 --len 700 --verbose",
		 "(ordered lanes)", "(tree of merges)"},
		{"build/asan/assoc run bench/carriers/argmax_first.yaml --device cpu --rows 3 --len 700 --verbose",
		 "ordered lanes, the merge", "lanes=1,"}, /* the ordered lanes counted as lanes, as that line says */
		{"build/asan/assoc bench bench/carriers/argmax_first.yaml --device cpu --threads 1 --rows 3 --len 700",
		 " ordered lanes, ", "1 lanes x 1 accumulators"},
		{"build/asan/assoc run specs/moe_topk_routing.yaml --device cpu --rows 3 --len 256 --verbose",
		 "(top-k candidates)", "(tree of merges)"},
		{"build/asan/assoc bench specs/moe_topk_routing.yaml --device cpu --threads 1 --rows 3 --len 256",
		 "top-k candidates", "1 lanes x 1 accumulators"},
		{"build/asan/assoc run tests/attention/buggy_merge.yaml --device cpu --rows 2 --len 40 --verbose --config lanes=16",
		 "--config lanes=16 not taken: the reduce folds in one lane, for a vector input", "lanes=16,"},
		{"build/asan/assoc run specs/o_lse.yaml --device cpu --rows 2 --len 40 --verbose --config tile=4",
		 "--config tile=4 not taken: this reduce folds tiles of 16 positions", "tile=4,"},
		{"build/asan/assoc bench specs/o_lse.yaml --device cpu --threads 1 --rows 3 --len 70",
		 "one lane: the reduce folds in one lane, for a vector input or map output, in tiles of 16 positions "
		 "transported", "out of reach"},
		/* a certificate whose tiles are not transported: bench says why */
		{"build/asan/assoc bench specs/layer_norm.yaml --device cpu --threads 1 --rows 3 --len 700 --config tf=0",
		 "\n  not transported: turned off (tf=0)\n", "(transported)"},
		{"build/asan/assoc bench specs/layer_norm.yaml --device cpu --threads 1 --rows 3 --len 700",
		 "tiles of 16 (transported)", "not transported"},
		/* each component of a vector coordinate is summed: 64 adds, not one */
		{"build/asan/assoc bench specs/o_lse.yaml --device cpu --threads 1 --rows 3 --len 70",
		 "ops/byte (151 a position)", "(88 a position)"}};
	for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
		cr_assert_eq(sh(cmds[i][0], out, sizeof out, 1), 0, "%s: %s", cmds[i][0], out);
		cr_expect(strstr(out, cmds[i][1]), "%s: %s", cmds[i][0], out);
		cr_expect(!strstr(out, cmds[i][2]), "%s: %s", cmds[i][0], out);
	}
}

/* Row 0 is fully masked: the empty row's state, finalized. */
Test(cpu, fully_masked_rows)
{
	Carrier *c = text_ok("carrier: masked_softmax\nelement: {x: f32}\nmask: j < i\n" SOFTMAX_STATE SOFTMAX_MERGE
			     "finalize: {lse: m + log(l)}\nmap: {y: exp(x - m) / l}\n"
			     "reference:\n  lse: log(sum(exp(x)))\n  y: exp(x) / sum(exp(x))\nlaws: [commutative]\n");
	LlvmKernel *k = compiled(c, NULL);
	RtPool *p;
	char msg[200];
	cr_assert_eq(rt_pool_open(&p, 2, msg, sizeof msg), 0);
	for (int split = 0; split < 4; split += 3) {
		RunData *d = drawn(c, 70, 67, 11);
		run_kernel(k, d, p, split);
		cr_assert_eq(((float *)d->fin[0].p)[0], -INFINITY, "empty row: lse = -inf, not NaN");
		expect_ok(d, "masked softmax");
		rundata_free(d);
	}
	rt_pool_close(p);
	llvm_kernel_free(k);
	spec_carrier_free(c);
}

/* The spec's rule (-inf) - (-inf) = -inf: rows of -inf give lse = -inf. */
Test(cpu, minus_inf_rule)
{
	Carrier *c = load_ok("specs/logsumexp.yaml");
	LlvmKernel *k = compiled(c, NULL);
	RtPool *p;
	char msg[200];
	cr_assert_eq(rt_pool_open(&p, 1, msg, sizeof msg), 0);
	RunData *d = drawn(c, 2, 100, 1);
	for (int j = 0; j < 200; j++)
		((float *)d->elem[0].p)[j] = -INFINITY;
	run_kernel(k, d, p, 0);
	cr_assert_eq(((float *)d->fin[0].p)[0], -INFINITY);
	cr_assert_eq(((float *)d->fin[0].p)[1], -INFINITY);
	rundata_free(d);
	rt_pool_close(p);
	llvm_kernel_free(k);
	spec_carrier_free(c);
}

Test(cpu, npy_through_the_command_line)
{
	float x[2][5] = {{1, 2, 3, 4, 5}, {-1, 0, 1, 0.5f, 0}};
	x[1][4] = -INFINITY;
	Npy a = {.descr = "<f4", .ndim = 2, .shape = {2, 5}, .count = 10, .itemsize = 4, .data = x};
	char msg[300], out[8192];
	cr_assert_eq(npy_write("build/cpu_x.npy", &a, msg, sizeof msg), 0, "%s", msg);
	int rc = sh("build/asan/assoc run specs/online_softmax.yaml --device cpu --threads 2 "
		    "--input x=build/cpu_x.npy --output y=build/cpu_y.npy --output lse=build/cpu_lse.npy",
		    out, sizeof out, 1);
	cr_assert_eq(rc, 0, "%s", out);
	cr_assert(strstr(out, "on cpu, 2 rows x 5"), "%s", out);
	cr_assert(strstr(out, "  ok\n"), "%s", out);
	Npy y, lse;
	cr_assert_eq(npy_read("build/cpu_y.npy", &y, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(npy_read("build/cpu_lse.npy", &lse, msg, sizeof msg), 0, "%s", msg);
	cr_assert(y.ndim == 2 && y.shape[0] == 2 && y.shape[1] == 5);
	cr_assert(lse.ndim == 1 && lse.shape[0] == 2);
	double s = 0;
	for (int j = 0; j < 5; j++)
		s += exp(x[0][j]);
	cr_assert_float_eq(npy_get(&lse, 0), log(s), 1e-5);
	for (int j = 0; j < 5; j++)
		cr_assert_float_eq(npy_get(&y, j), exp(x[0][j]) / s, 1e-6);
	cr_assert_eq(npy_get(&y, 9), 0, "exp(-inf) = 0");
	npy_free(&y);
	npy_free(&lse);
}

/* ---- tiles of the reduce loop (compiler/llvm/llvm_tile.c, llvm_reduce.c) ---- */

/* Grid shapes around the tile sizes, odd tiles included, against the
 * float64 reference or (no reference) the carrier's own float64 fold. */
static void tiles_ok(Carrier *c, const char *what)
{
	static const int tiles[] = {0, 1, 2, 3, 5, 8, 32};
	static const int lens[] = {15, 16, 17, 511, 512, 513, 1000, 4099};
	RtPool *p;
	char msg[200];
	cr_assert_eq(rt_pool_open(&p, 2, msg, sizeof msg), 0);
	for (size_t t = 0; t < sizeof tiles / sizeof *tiles; t++) {
		/* the carriers here that claim no commutativity are not even
		 * associative (forgets_b, other_max): only a fold one position
		 * at a time, without ordered lanes, is their left fold */
		int comm = (c->laws & LAW_COMMUTATIVE) != 0;
		LlvmKernel *k = compiled(c, &(LlvmOpts){.tile = tiles[t], .lanes = comm ? 0 : 1});
		for (size_t l = 0; l < sizeof lens / sizeof *lens; l++) {
			RunData *d = drawn(c, 3, lens[l], 20 + l);
			run_kernel(k, d, p, l % 2 && (c->laws & LAW_COMMUTATIVE) ? 3 : 0); /* split: associative ones */
			char w[200];
			snprintf(w, sizeof w, "%s tile %d len %d", what, tiles[t], lens[l]);
			expect_ok(d, w);
			rundata_free(d);
		}
		llvm_kernel_free(k);
	}
	rt_pool_close(p);
}

/* Softmax, logsumexp and an exp2 variant take the n-ary max-rescale fold. */
Test(cpu, max_rescale_carriers_fold_tiles_at_once)
{
	const char *specs[] = {"specs/online_softmax.yaml", "specs/logsumexp.yaml"};
	for (int s = 0; s < 2; s++) {
		Carrier *c = load_ok(specs[s]);
		LlvmKernel *k = compiled(c, NULL);
		cr_expect(k->max_rescale && k->tile > 1, "%s: the n-ary fold", specs[s]);
		llvm_kernel_free(k);
		tiles_ok(c, specs[s]);
		spec_carrier_free(c);
	}
	Carrier *c = text_ok("carrier: softmax2\nelement: {x: f32}\n" SOFTMAX_STATE
			     "merge:\n  m: max(b.m, a.m)\n  l: exp2(b.m - m) * b.l + a.l * exp2(a.m - m)\n"
			     "finalize: {lse2: m + log2(l)}\nlaws: [commutative]\n");
	LlvmKernel *k = compiled(c, NULL);
	cr_expect(k->max_rescale, "exp2, operands swapped: still the pattern");
	llvm_kernel_free(k);
	tiles_ok(c, "softmax2");
	spec_carrier_free(c);
}

/* Attention's (m, l, o), o a vector, folds keys in tiles in its one
 * lane: lengths around the tile (8), key by key tails, causal and empty
 * rows (tiles of masked keys, a state still the identity), against the
 * reference; and with tiles of 1, 3 and 5 as well. */
Test(cpu, vector_states_fold_tiles_of_keys, .timeout = 120)
{
	static const char *specs[] = {"tests/attention/full.yaml", "specs/attention.yaml",
				      "tests/attention/empty_rows.yaml"};
	static const int lens[] = {1, 7, 8, 9, 17, 64, 127};
	static const int tiles[] = {0, 1, 3, 5};
	RtPool *p;
	char msg[200];
	cr_assert_eq(rt_pool_open(&p, 2, msg, sizeof msg), 0);
	for (int s = 0; s < 3; s++) {
		Carrier *c = load_ok(specs[s]);
		for (size_t t = 0; t < sizeof tiles / sizeof *tiles; t++) {
			LlvmKernel *k = compiled(c, &(LlvmOpts){.tile = tiles[t], .rows = 1});
			int want = tiles[t] ? tiles[t] : 8;
			cr_expect(k->lanes == 1 && k->tile == want && k->max_rescale == (want > 1),
				  "%s: one lane, tiles of %d (%d, %d)", specs[s], want, k->tile, k->max_rescale);
			for (size_t l = 0; l < sizeof lens / sizeof *lens; l++) {
				RunData *d = drawn(c, 9, lens[l], 40 + l);
				run_kernel(k, d, p, l % 2 ? 3 : 0);
				char w[200];
				snprintf(w, sizeof w, "%s tile %d len %d", specs[s], tiles[t], lens[l]);
				expect_ok(d, w);
				rundata_free(d);
			}
			llvm_kernel_free(k);
		}
		spec_carrier_free(c);
	}
	rt_pool_close(p);
}

/* A vector row input is the row's, the same at every position: it is
 * broadcast to the lanes as a scalar one is, and a short vector state
 * beside it folds in lanes (counts into a row's 8 bins went position by
 * position at 0.09 of a copy).  Lane widths, tiles, threads and splits
 * against the reference. */
Test(cpu, vector_row_inputs_fold_in_lanes, .timeout = 120)
{
	static const LlvmOpts shapes[] = {{0}, {.lanes = 4, .tile = 3}, {.lanes = 8, .accs = 2}, {.lanes = 16, .tile = 1}};
	static const int lens[] = {0, 1, 17, 255, 4099};
	Carrier *c = load_ok("tests/rows/row_bins.yaml");
	RtPool *p;
	char msg[200];
	cr_assert_eq(rt_pool_open(&p, 2, msg, sizeof msg), 0);
	for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
		LlvmKernel *k = compiled(c, &shapes[i]);
		cr_expect_gt(k->lanes, 1, "shape %zu: lanes (one lane: %s)", i, k->one_lane);
		for (size_t l = 0; l < sizeof lens / sizeof *lens; l++) {
			RunData *d = drawn(c, 5, lens[l], 60 + l);
			run_kernel(k, d, p, l % 2 ? 3 : 0);
			char w[100];
			snprintf(w, sizeof w, "row_bins shape %zu len %d", i, lens[l]);
			expect_ok(d, w);
			rundata_free(d);
		}
		llvm_kernel_free(k);
	}
	rt_pool_close(p);
	spec_carrier_free(c);
}

/* A tile of lanes holds its positions' lifted states at once: by
 * default it takes fewer positions for a larger state (16 components at
 * most, tiles of 2 at least), as many as asked where --config gives a
 * tile, and the max-rescale and transported tiles keep their own. */
Test(cpu, default_tiles_shrink_with_the_state)
{
	static const struct {
		const char *spec;
		int tile;
	} want[] = {{"specs/sum.yaml", 8},           {"bench/carriers/count_above.yaml", 8},
		    {"specs/nan_aware_stats.yaml", 4}, {"tests/rows/row_bins.yaml", 2},
		    {"specs/online_softmax.yaml", 8},  {"specs/welford.yaml", 16}};
	for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
		Carrier *c = load_ok(want[i].spec);
		LlvmKernel *k = compiled(c, &(LlvmOpts){.lanes = 16});
		cr_expect_eq(k->tile, want[i].tile, "%s: tiles of %d, not %d", want[i].spec, k->tile, want[i].tile);
		llvm_kernel_free(k);
		k = compiled(c, &(LlvmOpts){.lanes = 16, .tile = 8});
		cr_expect_eq(k->tile, 8, "%s: tiles of 8 as asked, not %d", want[i].spec, k->tile);
		llvm_kernel_free(k);
		spec_carrier_free(c);
	}
}

/* One row at a time (attention's rows left over beside the groups, one
 * row a head) at head dim 128: the tiles take q, k, v and o 16
 * components at a time in loops, not each component as its own value,
 * so assoc_reduce stays small (unrolled: 10230 lines of optimized IR,
 * 5.5 s to compile for f16 without a mask); masked, unmasked and bf16,
 * keys around the tile and key by key tails, against the reference. */
Test(cpu, one_lane_vectors_fold_in_chunks, .timeout = 120)
{
	static const char *specs[] = {"tests/attention/full.yaml", "specs/attention.yaml",
				      "tests/attention/causal_bf16.yaml"};
	static const int lens[] = {7, 8, 21, 70};
	RtPool *p;
	char msg[300];
	cr_assert_eq(rt_pool_open(&p, 2, msg, sizeof msg), 0);
	for (int s = 0; s < 3; s++) {
		Define defs[2] = {{"d", "128"}, {"dv", "128"}};
		Carrier *c = load_defined(specs[s], defs, 2);
		LlvmOpts o = {.rows = 1};
		char *ir = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&ir, &len);
		cr_assert_eq(llvm_emit(c, &o, 0, f, msg, sizeof msg), 0, "%s: %s", specs[s], msg);
		fclose(f);
		char *fn = strstr(ir, "@assoc_reduce("), *end = fn ? strstr(fn, "\n}\n") : NULL;
		cr_assert(end, "%s: no assoc_reduce", specs[s]);
		int lines = 0;
		for (char *q = fn; (q = strchr(q, '\n')) && q < end; q++)
			lines++;
		cr_expect_lt(lines, 6000, "%s: assoc_reduce has %d lines", specs[s], lines);
		free(ir);
		LlvmKernel *k = compiled(c, &o);
		for (size_t l = 0; l < sizeof lens / sizeof *lens; l++) {
			RunData *d = drawn(c, 5, lens[l], 70 + l);
			run_kernel(k, d, p, l % 2 ? 3 : 0);
			char w[200];
			snprintf(w, sizeof w, "%s d = 128 len %d", specs[s], lens[l]);
			expect_ok(d, w);
			rundata_free(d);
		}
		llvm_kernel_free(k);
		spec_carrier_free(c);
	}
	rt_pool_close(p);
}

/* Attention's rows side by side as lanes (assoc_reduce_rows): 37 rows are
 * groups and a few rows alone; keys around the tile, past a block the
 * mask skips (256), causal, a window, a soft cap, rows with no key; the
 * host's group and one of 4; against the reference, and the same bits
 * from 1 thread and 2 (groups start at multiples of their size). */
Test(cpu, rows_side_by_side_as_lanes, .timeout = 240)
{
	static const char *specs[] = {"tests/attention/full.yaml", "specs/attention.yaml", "tests/attention/window.yaml",
				      "tests/attention/softcap.yaml", "tests/attention/empty_rows.yaml"};
	static const int lens[] = {1, 9, 64, 300};
	RtPool *p[2];
	pools_open(p, 2);
	/* the host's float32 vector: the lanes of a scalar carrier's reduce */
	Carrier *sum = load_ok("specs/sum.yaml");
	LlvmKernel *ks = compiled(sum, NULL);
	int lanes = ks->lanes, avx512 = lanes >= 16;
	llvm_kernel_free(ks);
	spec_carrier_free(sum);
	for (int s = 0; s < 5; s++) {
		Carrier *c = load_ok(specs[s]);
		/* the host's defaults, 4 rows, tiles of 3; and on two specs, the
		 * components' vectors unrolled whole and loops unrolled 3 times */
		for (int g = 0; g < (s < 2 ? 5 : 3); g++) {
			LlvmKernel *k = compiled(c, &(LlvmOpts){.rows = g == 1 || g == 2 ? 4 : 0, .tile = g == 2 ? 3 : 0,
								.unroll = g == 3 ? -1 : g == 4 ? 3 : 0});
			if (g >= 3)
				cr_expect_eq(k->unroll, g == 3 ? 0 : 3, "%s: loops unrolled %d times", specs[s], k->unroll);
			else if (g == 0)
				cr_expect_eq(k->unroll, 2, "%s: the host's loops (past 16 components, on every host)", specs[s]);
			/* 16 rows where vectors hold 8 or 16 lanes, 4 in SSE's vectors of 4 */
			cr_expect_eq(k->rows, g == 1 || g == 2 ? 4 : lanes >= 8 ? 16 : 4, "%s: %d rows a group", specs[s], k->rows);
			/* tiles of 8 keys on AVX-512 (16 rows), 4 with AVX2's 16 registers (8 rows), or as asked */
			if (g != 1)
				cr_expect_eq(k->rows_tile, g == 2 ? 3 : avx512 ? 8 : 4, "%s: tiles of %d", specs[s], k->rows_tile);
			for (size_t l = 0; l < sizeof lens / sizeof *lens; l++) {
				RunData *d = drawn(c, 37, lens[l], 70 + l);
				run_kernel(k, d, p[0], 0);
				char w[200];
				snprintf(w, sizeof w, "%s, groups of %d, len %d", specs[s], k->rows, lens[l]);
				expect_ok(d, w);
				size_t bytes = d->fin[0].n * d->fin[0].width * run_kind_size(d->fin[0].kind);
				void *one = malloc(bytes);
				memcpy(one, d->fin[0].p, bytes);
				run_kernel(k, d, p[1], 0);
				cr_expect(!memcmp(one, d->fin[0].p, bytes), "%s: 1 thread and 2 differ", w);
				free(one);
				rundata_free(d);
			}
			llvm_kernel_free(k);
		}
		spec_carrier_free(c);
	}
	pools_close(p, 2);
}

/* Near misses take the tree of the spec's merges, and stay right: a merge
 * that forgets to rescale b (not commutative: its own left fold is the
 * basis), a max and a count with nothing rescaled, a rescale
 * guarded on one side only, and one guarded at 0 instead of +inf. */
Test(cpu, near_max_rescale_carriers_take_the_tree)
{
	static const char *texts[] = {
		"carrier: forgets_b\nelement: {x: f32}\n" SOFTMAX_STATE
		"merge:\n  m: max(a.m, b.m)\n  l: a.l * exp(a.m - m) + b.l\nfinalize: {s: m + log(l)}\n",
		"carrier: count_alone\nelement: {x: f32}\nstate: {m: f32, n: f32}\n"
		"identity: {m: -inf, n: 0}\nlift: {m: x, n: 1}\n"
		"merge:\n  m: max(a.m, b.m)\n  n: a.n + b.n\n"
		"finalize: {m: m, n: n}\nlaws: [commutative]\n",
		"carrier: other_max\nelement: {x: f32}\n" SOFTMAX_STATE
		"merge:\n  m: max(a.m, b.m)\n  l: a.l * exp(a.m - m) + b.l * exp(a.m - m)\nfinalize: {s: m + log(l)}\n",
		"carrier: one_side_guarded\nelement: {x: f32}\n" SOFTMAX_STATE
		"merge:\n  m: max(a.m, b.m)\n  l: a.l * exp(where(a.m == inf, 0, a.m - m)) + b.l * exp(b.m - m)\n"
		"finalize: {s: m + log(l)}\n",
		"carrier: guard_at_zero\nelement: {x: f32}\n" SOFTMAX_STATE
		"merge:\n  m: max(a.m, b.m)\n"
		"  l: a.l * exp(where(a.m == 0, 0, a.m - m)) + b.l * exp(where(b.m == 0, 0, b.m - m))\n"
		"finalize: {s: m + log(l)}\n",
	};
	for (int i = 0; i < 5; i++) {
		Carrier *c = text_ok(texts[i]);
		Op g;
		int guard;
		cr_expect_eq(tile_max_rescale(c, &g, &guard), -1, "%s", c->name);
		LlvmKernel *k = compiled(c, NULL);
		cr_expect(!k->max_rescale, "%s: not the n-ary fold", c->name);
		llvm_kernel_free(k);
		tiles_ok(c, c->name);
		spec_carrier_free(c);
	}
}

/* Fields that merge by themselves beside the rescale fold with it, as a
 * sum or a max over the tile: a count beside softmax's (m, l), and
 * cross-entropy's picked logit (by max, guarded rescale; by sum, plain
 * rescale)
 * with m after it; xent_label, which claims no commutativity but
 * commutes by its form, likewise (in one lane, tiles of at most VTILE).  Against the reference at odd lengths, on the path through
 * tiles and the two passes (rows up to TWO_PASS_BYTES) alike,
 * labels in the row, negative and past it (cross_entropy: loss 0, +inf),
 * rows of -inf,
 * a NaN, a +inf; the same bits from 1 thread and 2; and within the
 * tolerance of the spec's own merges (tiles of 1). */
Test(cpu, self_merging_fields_fold_beside_the_rescale, .timeout = 240)
{
	enum { N = TWO_PASS_BYTES / 4 };

	static const int lens[] = {0, 1, 31, 257, 4099, N, N + 1, 65537 * 2};
	Carrier *cs[4];
	cs[0] = load_ok("specs/cross_entropy.yaml");
	/* bench/carriers/xent_label.yaml, claimed commutative (tiles need it) */
	cs[1] = text_ok("carrier: xent_sum\nrow: {label: i32}\nelement: {z: f32}\n"
			"state: {top: f32, den: f32, pick: f32}\nidentity: {top: -inf, den: 0, pick: 0}\n"
			"lift: {top: z, den: 1, pick: 'where(j == label, z, 0)'}\n"
			"merge:\n  top: max(a.top, b.top)\n  den: a.den * exp(a.top - top) + b.den * exp(b.top - top)\n"
			"  pick: a.pick + b.pick\n"
			"finalize: {loss: top + log(den) - pick}\n"
			"reference: {loss: 'log(sum(exp(z))) - sum(where(j == label, z, 0))'}\nlaws: [commutative]\n");
	cs[2] = text_ok("carrier: xent_first\nrow: {label: i32}\nelement: {x: f32}\n"
			"state: {xl: f32, m: f32, l: f32, n: f32}\n"
			"identity: {xl: -inf, m: -inf, l: 0, n: 0}\n"
			"lift: {xl: 'where(j == label, x, -inf)', m: x, l: 1, n: 1}\n"
			"merge:\n  xl: max(b.xl, a.xl)\n  m: max(a.m, b.m)\n"
			"  l: exp(a.m - m) * a.l + b.l * exp(b.m - m)\n  n: b.n + a.n\n"
			"finalize: {loss: m + log(l) - xl, n: n}\n"
			"reference: {loss: 'log(sum(exp(x))) - max(where(j == label, x, -inf))', n: 'sum(1)'}\n"
			"laws: [commutative]\n");
	cs[3] = load_ok("bench/carriers/xent_label.yaml"); /* no claim: commutes by its form */
	RtPool *p[2];
	pools_open(p, 2);
	for (int s = 0; s < 4; s++) {
		Carrier *c = cs[s];
		Op g;
		int guard, want_m = s == 2 ? 1 : 0, xl = s == 2 ? 0 : 2;
		cr_expect_eq(tile_max_rescale(c, &g, &guard), want_m, "%s: m is the max field", c->name);
		cr_expect_eq(tile_extra_fold(c, xl), s % 2 ? EXPR_ADD : EXPR_MAX, "%s: the pick folds alone", c->name);
		cr_expect_eq(tile_extra_fold(c, want_m + 1), -1, "%s: l is rescaled", c->name);
		LlvmKernel *k = compiled(c, NULL), *tree = compiled(c, &(LlvmOpts){.tile = 1, .lanes = s == 3 ? 1 : 0});
		RunChecker *chk = kept_checker(c); /* the three runs of a length: one reference */
		cr_expect(k->max_rescale && k->tile > 1 && k->two_pass, "%s: the n-ary fold, two passes", c->name);
		cr_expect(!tree->max_rescale, "%s: tiles of 1, the spec's merges", c->name);
		for (size_t l = 0; l < sizeof lens / sizeof *lens; l++) {
			int len = lens[l], rows = 7;
			RunData *d = drawn(c, rows, len, 90 + l);
			if (len) {
				special_rows(d, len);
				int *label = d->row[0].p;
				label[0] = len / 2, label[1] = 0, label[2] = len - 1, label[3] = len / 2;
				label[4] = len / 3, label[5] = -1 - (int)l, label[6] = len + (int)l;
			}
			char w[200];
			size_t bytes = (size_t)rows * sizeof(float);
			float ref[7], first[7];
			run_kernel(tree, d, p[1], 0);
			memcpy(ref, d->fin[0].p, bytes);
			/* 1 thread, 2, and 2 with rows split in chunks */
			for (int t = 0; t < 3; t++) {
				run_kernel(k, d, p[t > 0], t == 2 ? 3 : 0);
				snprintf(w, sizeof w, "%s len %d threads %d%s", c->name, len, 1 + (t > 0), t == 2 ? " split" : "");
				expect_ok_by(chk, d, w);
				float *loss = d->fin[0].p;
				if (len && s == 0) {
					cr_expect_eq(loss[5], 0, "%s: a negative label: loss 0", w);
					cr_expect(isinf(loss[6]) && loss[6] > 0, "%s: a label past the row: +inf (%g)", w, loss[6]);
				}
				for (int r = 0; r < rows; r++) {
					float x = loss[r], y = ref[r];
					cr_expect((isnan(x) && isnan(y)) || x == y || fabsf(x - y) <= 1e-4f * (1 + fabsf(y)),
						  "%s row %d: %g, the spec's merges %g", w, r, x, y);
				}
				if (t == 0)
					memcpy(first, loss, bytes);
				else if (t == 1)
					cr_expect(!memcmp(first, loss, bytes), "%s: 1 thread and 2 differ", w);
			}
			rundata_free(d);
		}
		runchecker_free(chk);
		llvm_kernel_free(k);
		llvm_kernel_free(tree);
		tiles_ok(c, c->name);
		spec_carrier_free(c);
	}
	pools_close(p, 2);
}

/* ---- two passes over rows that fit in L2 (TWO_PASS_BYTES, llvm_reduce.c) ---- */

/* Rows of float32 just below, at and above the switch, whole (one thread)
 * and split into chunks (two threads: each chunk below the switch), with a
 * row of -inf and a row of -inf among finite values, against the float64
 * reference; in the host's lanes, or 8 (AVX2's). */
static void two_pass_lanes_ok(Carrier *c, RunChecker *chk, int expect_two_pass, int lanes)
{
	enum { N = TWO_PASS_BYTES / 4 };
	static const int lens[] = {N - 17, N, N + 1, N + 33, 1000};
	LlvmKernel *k = compiled(c, &(LlvmOpts){.lanes = lanes});
	cr_expect_eq(k->two_pass, expect_two_pass, "%s: two passes", c->name);
	RtPool *p[2];
	char msg[200];
	for (int t = 0; t < 2; t++)
		cr_assert_eq(rt_pool_open(&p[t], t + 1, msg, sizeof msg), 0, "%s", msg);
	for (size_t l = 0; l < sizeof lens / sizeof *lens; l++)
		for (int t = 0; t < 2; t++) {
			int len = lens[l];
			RunData *d = drawn(c, 4, len, 30 + l);
			float *x = d->elem[0].p;
			for (int j = 0; j < len; j++)
				x[len + j] = -INFINITY;
			for (int j = 0; j < len; j += 3)
				x[2 * len + j] = -INFINITY;
			run_kernel(k, d, p[t], t ? 3 : 0);
			char w[200];
			snprintf(w, sizeof w, "%s len %d threads %d", c->name, len, t + 1);
			expect_ok_by(chk, d, w);
			if (d->fin[0].p && c->nfinal)
				cr_expect_eq(((float *)d->fin[0].p)[1], -INFINITY, "%s: a row of -inf", w);
			rundata_free(d);
		}
	for (int t = 0; t < 2; t++)
		rt_pool_close(p[t]);
	llvm_kernel_free(k);
}

/* One checker for both: a length's rows, drawn alike for 1 thread and 2,
 * have their reference evaluated once. */
static void two_pass_ok(Carrier *c, int expect_two_pass)
{
	RunChecker *chk = kept_checker(c);
	two_pass_lanes_ok(c, chk, expect_two_pass, 0);
	two_pass_lanes_ok(c, chk, expect_two_pass, 8);
	runchecker_free(chk);
}

Test(cpu, two_pass_rows_around_the_switch, .timeout = 120)
{
	const char *specs[] = {"specs/online_softmax.yaml", "specs/logsumexp.yaml"};
	for (int s = 0; s < 2; s++) {
		Carrier *c = load_ok(specs[s]);
		two_pass_ok(c, 1);
		spec_carrier_free(c);
	}
}

/* Rows holding +inf through a guarded merge's n-ary fold, in tiles (one
 * pass) and in two passes, whole and split, in the host's lanes and in 8:
 * lse is +inf (NaN where the row holds a NaN, -inf for a row of -inf),
 * softmax's y NaN at every position, as PyTorch gives; every
 * output against the float64 reference.  logsumexp_inf's guard
 * (a.m == m) folds a row of -inf to -inf too. */
Test(cpu, rows_holding_inf_through_the_guarded_fold, .timeout = 300)
{
	enum { N = TWO_PASS_BYTES / 4, ROWS = 7 };
	static const char *specs[] = {"specs/logsumexp.yaml", "specs/online_softmax.yaml",
				      "tests/check/logsumexp_inf.yaml"};
	static const int lens[] = {1, 15, 17, 1000, 4099, N, N + 33};
	static const int lanes[] = {0, 8};
	RtPool *p[2];
	pools_open(p, 2);
	for (int s = 0; s < 3; s++) {
		Carrier *c = load_ok(specs[s]);
		RunChecker *chk = kept_checker(c); /* 1 thread and 2 on rows drawn alike: one reference */
		for (int ln = 0; ln < 2; ln++) {
			LlvmKernel *k = compiled(c, &(LlvmOpts){.lanes = lanes[ln]});
			cr_expect(k->max_rescale, "%s: the n-ary fold", specs[s]);
			for (size_t l = 0; l < sizeof lens / sizeof *lens; l++)
				for (int t = 0; t < 2; t++) {
					int len = lens[l];
					RunData *d = drawn(c, ROWS, len, 50 + l);
					float *x = d->elem[0].p;
					for (int j = 0; j < len; j++) {
						x[(size_t)1 * len + j] = INFINITY;
						x[(size_t)4 * len + j] = -INFINITY;
						if (j % 3 == 0)
							x[(size_t)5 * len + j] = -INFINITY;
					}
					x[(size_t)0 * len + len / 2] = INFINITY;
					x[(size_t)2 * len + len - 1] = INFINITY;
					x[(size_t)2 * len] = -INFINITY;
					x[(size_t)3 * len + len / 3] = INFINITY;
					x[(size_t)3 * len + len - 1] = NAN;
					x[(size_t)5 * len + len / 2] = INFINITY;
					run_kernel(k, d, p[t], t ? 3 : 0);
					char w[200];
					snprintf(w, sizeof w, "%s lanes %d len %d threads %d", c->name, lanes[ln], len, t + 1);
					expect_ok_by(chk, d, w);
					const float *lse = d->fin[0].p;
					const float want[ROWS - 1] = {INFINITY, INFINITY, INFINITY, NAN, -INFINITY, INFINITY};
					for (int r = 0; r < ROWS - 1; r++)
						if (len > 1 || r == 1 || r == 4)
							cr_expect(isnan(want[r]) ? isnan(lse[r]) : lse[r] == want[r],
								  "%s row %d: lse %g, not %g", w, r, lse[r], want[r]);
					cr_expect(isfinite(lse[ROWS - 1]), "%s: a finite row's lse %g", w, lse[ROWS - 1]);
					if (c->nmap) {
						const float *y = d->map[0].p;
						for (int j = 0; j < len; j++)
							cr_expect(isnan(y[j]), "%s: y[%d] = %g in a row holding +inf", w,
								  j, y[j]);
					}
					rundata_free(d);
				}
			llvm_kernel_free(k);
		}
		runchecker_free(chk);
		spec_carrier_free(c);
	}
	pools_close(p, 2);
}

/* Row 0 fully masked, row 1 partly, the rest not, around the switch. */
Test(cpu, two_pass_masked_rows, .timeout = 120)
{
	Carrier *c = text_ok("carrier: masked_lse\nelement: {x: f32}\nmask: j < i * 30000\n" SOFTMAX_STATE
			     SOFTMAX_MERGE
			     "finalize: {lse: m + log(l)}\nreference:\n  lse: log(sum(exp(x)))\nlaws: [commutative]\n");
	LlvmKernel *k = compiled(c, NULL);
	cr_expect(k->two_pass);
	RtPool *p;
	char msg[200];
	cr_assert_eq(rt_pool_open(&p, 2, msg, sizeof msg), 0);
	static const int lens[] = {TWO_PASS_BYTES / 4 - 1, TWO_PASS_BYTES / 4, TWO_PASS_BYTES / 4 + 1};
	for (int l = 0; l < 3; l++)
		for (int split = 0; split < 4; split += 3) {
			RunData *d = drawn(c, 4, lens[l], 40 + l);
			run_kernel(k, d, p, split);
			cr_expect_eq(((float *)d->fin[0].p)[0], -INFINITY, "empty row: lse = -inf, not NaN");
			expect_ok(d, "masked lse");
			rundata_free(d);
		}
	rt_pool_close(p);
	llvm_kernel_free(k);
	spec_carrier_free(c);
}

/* A plain count beside the rescaled sum folds by itself in both passes;
 * a max and a count with nothing rescaled is no max-rescale carrier and
 * keeps the online fold.  Both stay right around the switch. */
Test(cpu, counts_beside_the_rescale_take_two_passes, .timeout = 120)
{
	Carrier *c = text_ok("carrier: with_count\nelement: {x: f32}\nstate: {m: f32, l: f32, n: f32}\n"
			     "identity: {m: -inf, l: 0, n: 0}\nlift: {m: x, l: 1, n: 1}\n"
			     SOFTMAX_MERGE "  n: a.n + b.n\n"
			     "finalize: {lse: m + log(l), n: n}\nlaws: [commutative]\n");
	two_pass_ok(c, 1);
	spec_carrier_free(c);
	c = text_ok("carrier: count_alone\nelement: {x: f32}\nstate: {m: f32, n: f32}\n"
		    "identity: {m: -inf, n: 0}\nlift: {m: x, n: 1}\n"
		    "merge:\n  m: max(a.m, b.m)\n  n: a.n + b.n\n"
		    "finalize: {m: m, n: n}\nlaws: [commutative]\n");
	two_pass_ok(c, 0);
	spec_carrier_free(c);
}

/* Welford's tiles are trees of its own merge: the reference, any tile. */
Test(cpu, welford_tiles)
{
	Carrier *c = load_ok("specs/welford.yaml");
	tiles_ok(c, "welford");
	spec_carrier_free(c);
}

/* The transported fold of the lanes' tiles (llvm_tf.c) and the tree of
 * merges (tf=0): kernels of both, the plan as asked. */
static void transported_pair(Carrier *c, LlvmKernel *k[2])
{
	k[0] = compiled(c, &(LlvmOpts){.tf = 1});
	k[1] = compiled(c, &(LlvmOpts){.tf = -1});
	cr_assert_eq(k[0]->tf, 1, "%s: %s", c->name, k[0]->tf_why);
	cr_assert_eq(k[1]->tf, 0, "%s: %s", c->name, k[1]->tf_why);
	cr_expect(strstr(k[0]->tf_why, "shifted by their largest element"), "%s", k[0]->tf_why);
}

/* Welford with a mask of the element and the position: NaN and a
 * stretch of each row left out, lanes and positions of a tile among them. */
static Carrier *masked_welford_text(int masked)
{
	FILE *f = fopen("specs/welford.yaml", "r");
	cr_assert(f);
	char spec[4096], text[4200], err[300];
	size_t n = fread(spec, 1, sizeof spec - 1, f);
	fclose(f);
	spec[n] = 0;
	char *at = strstr(spec, "state:"), *laws = strstr(spec, "\nlaws:");
	cr_assert(at && laws);
	if (masked) {
		snprintf(text, sizeof text, "%.*smask: x == x && (j < 100 || j > 300)\n%s", (int)(at - spec), spec, at);
	} else { /* the claim's line taken out */
		char *end = strchr(laws + 1, '\n');
		snprintf(text, sizeof text, "%.*s%s", (int)(laws - spec), spec, end ? end : "\n");
	}
	Carrier *c = load_text(text, err, sizeof err);
	cr_assert(c, "%s", err);
	return c;
}

static Carrier *masked_welford(void) { return masked_welford_text(1); }

/* Welford written without laws: [commutative]: its merge commutes by
 * proof (lanes) and its certificate gives the transported tiles, which
 * meet the reference. */
Test(cpu, welford_without_the_claim_folds_transported)
{
	Carrier *c = masked_welford_text(0);
	LlvmKernel *k = compiled(c, NULL);
	cr_assert_eq(c->laws & LAW_COMMUTATIVE, 0);
	cr_expect_gt(k->lanes, 1, "%s", k->order);
	cr_expect_eq(k->tf, 1, "%s", k->tf_why);
	RtPool *p;
	char msg[200];
	cr_assert_eq(rt_pool_open(&p, 2, msg, sizeof msg), 0, "%s", msg);
	RunData *d = drawn(c, 3, 4099, 90);
	run_kernel(k, d, p, 0);
	expect_ok(d, "welford without the claim");
	rundata_free(d);
	rt_pool_close(p);
	llvm_kernel_free(k);
	spec_carrier_free(c);
}

/* Welford, layer norm, a masked Welford and softmax's entropy (by the
 * certificate derived from its maximum) fold their tiles transported, and
 * both paths meet the float64 reference at odd lengths, split or not. */
Test(cpu, transported_tiles_meet_the_reference, .timeout = 120)
{
	static const int lens[] = {0, 1, 15, 17, 255, 257, 1000, 4099};
	const char *specs[] = {"specs/welford.yaml", "specs/layer_norm.yaml", "masked", "tests/rows/softmax_entropy.yaml"};
	RtPool *p;
	char msg[200];
	cr_assert_eq(rt_pool_open(&p, 2, msg, sizeof msg), 0);
	for (int s = 0; s < 4; s++) {
		Carrier *c = s != 2 ? load_ok(specs[s]) : masked_welford();
		LlvmKernel *k[2];
		transported_pair(c, k);
		for (int v = 0; v < 2; v++)
			for (size_t l = 0; l < sizeof lens / sizeof *lens; l++) {
				RunData *d = drawn(c, 3, lens[l], 40 + l);
				for (int j = 5; s == 2 && j < 3 * lens[l]; j += 37)
					((float *)d->elem[0].p)[j] = NAN;
				run_kernel(k[v], d, p, l % 2 ? 3 : 0);
				char w[200];
				snprintf(w, sizeof w, "%s tf=%d len %d", specs[s], !v, lens[l]);
				expect_ok(d, w);
				rundata_free(d);
			}
		llvm_kernel_free(k[0]);
		llvm_kernel_free(k[1]);
		spec_carrier_free(c);
	}
	rt_pool_close(p);
}

/* Rows far from 0 (1e4 + N(0, 1), 1e8 + N(0, 1) as `assoc check` draws
 * them, -3e5 + N(0, 30)): unshifted, the power sums would lose the
 * variance to cancellation; shifted by the tile's largest element they
 * keep it within the tolerance. */
Test(cpu, transported_tiles_at_a_large_mean)
{
	static const double mean[] = {1e4, 1e8, -3e5}, sd[] = {1, 1, 30};
	static const int lens[] = {17, 257, 4099};
	Carrier *c = load_ok("specs/welford.yaml");
	LlvmKernel *k[2];
	transported_pair(c, k);
	RtPool *p;
	char msg[200];
	cr_assert_eq(rt_pool_open(&p, 2, msg, sizeof msg), 0);
	uint64_t rng = 11;
	for (int v = 0; v < 2; v++)
		for (size_t l = 0; l < sizeof lens / sizeof *lens; l++) {
			RunData *d = drawn(c, 3, lens[l], 60 + l);
			float *x = d->elem[0].p;
			for (int r = 0; r < 3; r++)
				for (int j = 0; j < lens[l]; j++)
					x[(size_t)r * lens[l] + j] = (float)(mean[r] + sd[r] * rng_normal(&rng));
			run_kernel(k[v], d, p, 0);
			char w[200];
			snprintf(w, sizeof w, "tf=%d len %d", !v, lens[l]);
			expect_ok(d, w);
			rundata_free(d);
		}
	llvm_kernel_free(k[0]);
	llvm_kernel_free(k[1]);
	rt_pool_close(p);
	spec_carrier_free(c);
}

/* A layer norm of x + r (a residual added first: two element inputs,
 * the lift's mean their sum through a let), as the pre-LN transformer
 * block takes it: %s the inputs' type, %s an assume. */
#define LN_RESIDUAL                                                                                                    \
	"carrier: ln_res\nparams: {eps: f32}\nelement: {x: %s, r: %s}\ncolumn: {gamma: f32, beta: f32}\n%s"           \
	"let:\n  h: x + r\nstate: {n: f32, mean: f32, m2: f32}\nidentity: {n: 0, mean: 0, m2: 0}\n"                    \
	"lift: {n: 1, mean: h, m2: 0}\nmerge:\n  let:\n    delta: b.mean - a.mean\n  n: a.n + b.n\n"                    \
	"  mean: where(n == 0, 0, a.mean + delta * (b.n / n))\n"                                                        \
	"  m2: where(n == 0, 0, a.m2 + b.m2 + delta * (delta * (a.n * b.n / n)))\n"                                     \
	"finalize:\n  mean: mean\n  rstd: rsqrt(m2 / n + eps)\nmap:\n  y: (h - mean) * rsqrt(m2 / n + eps) * gamma + beta\n" \
	"reference:\n  mean: sum(h) / count()\n  rstd: 1 / sqrt(sum((h - mean)^2) / count() + eps)\n"                   \
	"  y: (h - mean) * rstd * gamma + beta\nlaws: [commutative]\ncertificate:\n"                                    \
	"  into:   {n: n, s1: n * mean, s2: m2 + n * mean^2}\n  monoid: {n: add, s1: add, s2: add}\n"                    \
	"  back:\n    n: n\n    mean: where(n == 0, 0, s1 / n)\n    m2: where(n == 0, 0, s2 - s1^2 / n)\n"

static Carrier *ln_residual(const char *ty, const char *assume)
{
	char text[4096], err[300];
	snprintf(text, sizeof text, LN_RESIDUAL, ty, ty, assume);
	Carrier *c = load_text(text, err, sizeof err);
	cr_assert(c, "%s", err);
	return c;
}

/* Its tiles fold transported, shifted by their largest x + r (the vector
 * lanes shift the lifted states, so the sum of two inputs moves as one
 * input does), and meet the reference at odd lengths, split or not, f16
 * as drawn and f32 rows far from 0 (1e4 + N(0, 1) plus N(0, 1)), where
 * unshifted power sums would cancel; an assume on x keeps the tree of
 * merges, and tf=1 says why. */
Test(cpu, a_residual_before_layer_norm_folds_transported, .timeout = 120)
{
	static const int lens[] = {0, 1, 15, 17, 257, 4099};
	RtPool *p;
	char msg[300];
	cr_assert_eq(rt_pool_open(&p, 2, msg, sizeof msg), 0);
	uint64_t rng = 5;
	for (int t = 0; t < 2; t++) {
		Carrier *c = ln_residual(t ? "f32" : "f16", "");
		LlvmKernel *k[2] = {compiled(c, &(LlvmOpts){.tf = 1}), compiled(c, &(LlvmOpts){.tf = -1})};
		cr_assert_eq(k[0]->tf, 1, "%s", k[0]->tf_why);
		cr_expect(strstr(k[0]->tf_why, "shifted by their largest x + r on mean"), "%s", k[0]->tf_why);
		cr_expect_gt(k[0]->lanes, 1);
		cr_assert_eq(k[1]->tf, 0);
		for (int v = 0; v < 2; v++)
			for (size_t l = 0; l < sizeof lens / sizeof *lens; l++) {
				RunData *d = drawn(c, 3, lens[l], 70 + l);
				for (int j = 0; t && j < 3 * lens[l]; j++) {
					((float *)d->elem[0].p)[j] = (float)(1e4 + rng_normal(&rng));
					((float *)d->elem[1].p)[j] = (float)rng_normal(&rng);
				}
				run_kernel(k[v], d, p, l % 2 ? 3 : 0);
				char w[200];
				snprintf(w, sizeof w, "%s tf=%d len %d", t ? "f32 at 1e4" : "f16", !v, lens[l]);
				expect_ok(d, w);
				rundata_free(d);
			}
		llvm_kernel_free(k[0]);
		llvm_kernel_free(k[1]);
		spec_carrier_free(c);
	}
	rt_pool_close(p);
	Carrier *c = ln_residual("f16", "assume: x > -2\n");
	LlvmKernel *k;
	cr_assert_eq(llvm_compile(c, &(LlvmOpts){.tf = 1}, &k, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "which ln_res cannot have on the cpu device: assume (x > -2) reads an element input of "
			      "x + r, which the tile's shift moves"), "%s", msg);
	spec_carrier_free(c);
}

/* Rows holding infinities and NaN, and one whose transported state
 * overflows (d^2 past the float range): those tiles fold by the tree of
 * merges, so both paths give the spec's rules (an infinite or NaN mean,
 * a NaN variance) and the reference's classes. */
Test(cpu, transported_tiles_keep_special_values)
{
	Carrier *c = load_ok("specs/welford.yaml");
	LlvmKernel *k[2];
	transported_pair(c, k);
	RtPool *p;
	char msg[200];
	cr_assert_eq(rt_pool_open(&p, 1, msg, sizeof msg), 0);
	enum { R = 7, N = 1000 };
	RunData *d[2];
	float big[2][2];
	for (int v = 0; v < 2; v++) {
		d[v] = drawn(c, R, N, 5);
		float *x = d[v]->elem[0].p;
		x[0 * N + 500] = INFINITY;
		x[1 * N + 3] = -INFINITY;
		x[2 * N + 999] = NAN;
		x[3 * N + 10] = INFINITY, x[3 * N + 900] = -INFINITY;
		for (int j = 0; j < N; j += 3)
			x[4 * N + j] = -INFINITY;
		run_kernel(k[v], d[v], p, 0);
		expect_ok(d[v], v ? "tf=0" : "tf=1");
		/* both paths' merges overflow on it where the reference does
		 * not: compared between the paths only */
		x[5 * N + 321] = 1e20f;
		float *m = d[v]->fin[0].p, *s2 = d[v]->fin[1].p;
		float keep[2][R];
		memcpy(keep[0], m, sizeof keep[0]), memcpy(keep[1], s2, sizeof keep[1]);
		run_kernel(k[v], d[v], p, 0);
		big[v][0] = m[5], big[v][1] = s2[5];
		memcpy(m, keep[0], sizeof keep[0]), memcpy(s2, keep[1], sizeof keep[1]);
	}
	cr_expect(big[0][0] == big[1][0] || fabsf(big[0][0] - big[1][0]) <= 1e-5f * fabsf(big[1][0]), "mean %g vs %g",
		  big[0][0], big[1][0]);
	cr_expect(isinf(big[0][1]) == isinf(big[1][1]) && isnan(big[0][1]) == isnan(big[1][1]), "var %g vs %g",
		  big[0][1], big[1][1]);
	float *mean[2] = {d[0]->fin[0].p, d[1]->fin[0].p}, *var[2] = {d[0]->fin[1].p, d[1]->fin[1].p};
	for (int r = 0; r < R; r++) {
		cr_expect(isnan(mean[0][r]) == isnan(mean[1][r]) && isinf(mean[0][r]) == isinf(mean[1][r]),
			  "row %d: mean %g vs %g", r, mean[0][r], mean[1][r]);
		cr_expect(isnan(var[0][r]) == isnan(var[1][r]) && isinf(var[0][r]) == isinf(var[1][r]),
			  "row %d: var %g vs %g", r, var[0][r], var[1][r]);
	}
	cr_expect_eq(mean[0][0], INFINITY, "%g", mean[0][0]);
	cr_expect_eq(mean[0][1], -INFINITY, "%g", mean[0][1]);
	cr_expect(isnan(mean[0][2]) && isnan(mean[0][3]), "%g %g", mean[0][2], mean[0][3]);
	cr_expect(isnan(var[0][0]) && isnan(var[0][1]) && isnan(var[0][4]), "%g %g %g", var[0][0], var[0][1], var[0][4]);
	cr_expect(isfinite(mean[0][6]) && isfinite(var[0][6]), "a plain row: %g %g", mean[0][6], var[0][6]);
	for (int v = 0; v < 2; v++)
		rundata_free(d[v]), llvm_kernel_free(k[v]);
	rt_pool_close(p);
	spec_carrier_free(c);
}

/* The split-KV combine (o_lse: a vector field, a vector element input
 * beside the lse that moves) folds tiles of positions transported in one
 * lane, fewer a tile for a wider state; with tf=0, and past the state
 * that keeps the SLP vectorizer out, position by position.  Both paths
 * meet the reference at odd lengths, split or not, with a position mask;
 * rows holding empty partials (lse -inf), all of them, +inf, or NaN in a
 * partial's output or lse take the spec's merges and agree in kind.  A
 * certificate whose power sums of an unshifted vector input would cancel
 * takes no tiles. */
Test(cpu, vector_fields_fold_transported_in_one_lane, .timeout = 120)
{
	static const int lens[] = {0, 1, 15, 16, 17, 33, 257, 1000};
	static const struct {
		const char *dv, *mask;
		int tile;
	} cases[] = {{"64", NULL, 16}, {"128", NULL, 8}, {"64", "j < 20 || j > 40", 16}, {"256", NULL, 0}};
	RtPool *p;
	char msg[200], err[300];
	cr_assert_eq(rt_pool_open(&p, 2, msg, sizeof msg), 0);
	for (size_t s = 0; s < sizeof cases / sizeof *cases; s++) {
		Define defs[1] = {{"dv", cases[s].dv}};
		Carrier *c = load_defined("specs/o_lse.yaml", defs, 1);
		if (cases[s].mask) {
			spec_carrier_free(c);
			FILE *f = fopen("specs/o_lse.yaml", "r");
			cr_assert(f);
			char spec[4096], text[4300];
			size_t n = fread(spec, 1, sizeof spec - 1, f);
			fclose(f);
			spec[n] = 0;
			char *at = strstr(spec, "state:");
			cr_assert(at);
			snprintf(text, sizeof text, "%.*smask: %s\n%s", (int)(at - spec), spec, cases[s].mask, at);
			c = load_text(text, err, sizeof err);
			cr_assert(c, "%s", err);
		}
		LlvmKernel *k[2] = {compiled(c, NULL), compiled(c, &(LlvmOpts){.tf = -1})};
		cr_expect_eq(k[0]->tf, cases[s].tile > 0, "dv = %s: %s", cases[s].dv, k[0]->tf_why);
		cr_expect_eq(k[1]->tf, 0);
		if (cases[s].tile) {
			cr_expect_eq(k[0]->tile, cases[s].tile, "dv = %s", cases[s].dv);
			cr_expect(strstr(k[0]->tf_why, "shifted by their largest element on lse"), "%s", k[0]->tf_why);
		} else {
			cr_expect(strstr(k[0]->tf_why, "257 components"), "%s", k[0]->tf_why);
		}
		int dv = atoi(cases[s].dv);
		for (int v = 0; v < 2; v++)
			for (size_t l = 0; l < sizeof lens / sizeof *lens; l++) {
				if (dv > 64 && lens[l] > 257)
					continue;
				RunData *d = drawn(c, 3, lens[l], 70 + l);
				run_kernel(k[v], d, p, l % 2 ? 3 : 0);
				char w[200];
				snprintf(w, sizeof w, "o_lse dv = %s%s%s tf=%d len %d", cases[s].dv, cases[s].mask ? " mask " : "",
					 cases[s].mask ? cases[s].mask : "", !v, lens[l]);
				expect_ok(d, w);
				rundata_free(d);
			}
		if (s == 0) { /* special values, both paths */
			enum { R = 6, N = 100 };
			float out[2][R][2];
			for (int v = 0; v < 2; v++) {
				RunData *d = drawn(c, R, N, 12);
				float *po = d->elem[0].p, *lse = d->elem[1].p;
				for (int j = 0; j < N; j += 7)
					lse[0 * N + j] = -INFINITY; /* empty partials among the others */
				for (int j = 0; j < N; j++)
					lse[1 * N + j] = -INFINITY; /* every partial empty */
				lse[2 * N + 40] = INFINITY;
				po[((size_t)3 * N + 50) * dv + 9] = NAN;
				lse[4 * N + 77] = NAN;
				run_kernel(k[v], d, p, 0);
				float *o = d->fin[0].p, *l = d->fin[1].p;
				for (int r = 0; r < R; r++)
					out[v][r][0] = o[(size_t)r * dv + 9], out[v][r][1] = l[r];
				if (!v) {
					char w[64];
					snprintf(w, sizeof w, "o_lse special values");
					expect_ok(d, w);
				}
				rundata_free(d);
			}
			for (int r = 0; r < R; r++)
				for (int q = 0; q < 2; q++) {
					float a = out[0][r][q], b = out[1][r][q];
					cr_expect(isnan(a) == isnan(b) && isinf(a) == isinf(b) &&
							  (!isfinite(b) || fabsf(a - b) <= 1e-5f * fmaxf(1, fabsf(b))),
						  "row %d %s: %g transported, %g by merges", r, q ? "lse" : "out", a, b);
				}
			cr_expect(out[0][1][1] == -INFINITY && out[0][1][0] == 0, "every partial empty: out %g lse %g",
				  out[0][1][0], out[0][1][1]);
			cr_expect(out[0][2][1] == INFINITY && isnan(out[0][3][0]) && isnan(out[0][4][1]), "%g %g %g",
				  out[0][2][1], out[0][3][0], out[0][4][1]);
			cr_expect(isfinite(out[0][5][0]) && isfinite(out[0][5][1]), "a plain row");
		}
		llvm_kernel_free(k[0]);
		llvm_kernel_free(k[1]);
		spec_carrier_free(c);
	}
	/* power sums of a vector input the tile does not shift cancel (a
	 * negative variance at a mean of 1e4): no tiles, and the rows right */
	Carrier *c = load_ok("tests/prove/wvar_power_sums.yaml");
	LlvmKernel *k = compiled(c, NULL);
	cr_expect_eq(k->tf, 0);
	cr_expect(strstr(k->tf_why, "not linear in it"), "%s", k->tf_why);
	RunData *d = drawn(c, 3, 1000, 21);
	float *v = d->elem[0].p;
	for (size_t i = 0; i < (size_t)3 * 1000 * 8; i++)
		v[i] += 1e4f;
	run_kernel(k, d, p, 0);
	expect_ok(d, "wvar at a mean of 1e4");
	rundata_free(d);
	llvm_kernel_free(k);
	spec_carrier_free(c);
	rt_pool_close(p);
}

/* A carrier with no certificate whose fields are kept relative to its
 * maximum (an entropy: s = sum e^(x - m) (x - m), rescaled with a term of
 * its own, which the max-rescale tiles do not match) folds transported by
 * a certificate derived from the maximum, proved as a written one is (its
 * odd lengths in transported_tiles_meet_the_reference): both paths agree
 * in kind on rows holding infinities and NaN.  Where a field merges by a
 * max of rescaled values, no sum in the maximum's frame holds it: the
 * derived certificate is not proved, and the tiles fold by merges. */
Test(cpu, maximum_derives_a_certificate, .timeout = 120)
{
	Carrier *c = load_ok("tests/rows/softmax_entropy.yaml");
	cr_assert_eq(c->has_cert, 0);
	LlvmKernel *k[2];
	transported_pair(c, k);
	cr_expect(strstr(k[0]->tf_why, "derived from its maximum"), "%s", k[0]->tf_why);
	RtPool *p;
	char msg[200];
	cr_assert_eq(rt_pool_open(&p, 2, msg, sizeof msg), 0);
	enum { R = 5, N = 1000 };
	float h[2][R];
	for (int v = 0; v < 2; v++) {
		RunData *d = drawn(c, R, N, 9);
		float *x = d->elem[0].p;
		x[0 * N + 500] = INFINITY;
		x[1 * N + 3] = -INFINITY;
		x[2 * N + 999] = NAN;
		for (int j = 0; j < N; j++)
			x[3 * N + j] = -INFINITY;
		run_kernel(k[v], d, p, 0);
		memcpy(h[v], d->fin[0].p, sizeof h[v]);
		rundata_free(d);
	}
	for (int r = 0; r < R; r++)
		cr_expect(isnan(h[0][r]) == isnan(h[1][r]) && isinf(h[0][r]) == isinf(h[1][r]) &&
				  (!isfinite(h[1][r]) || fabsf(h[0][r] - h[1][r]) <= 1e-5f * fmaxf(1, fabsf(h[1][r]))),
			  "row %d: h %g transported, %g by merges", r, h[0][r], h[1][r]);
	/* -inf gives (x - m) e^(x - m) = -inf * 0 in the spec's merge, NaN as the reference's */
	cr_expect(isnan(h[0][1]) && isfinite(h[0][4]), "a row holding -inf: %g; a plain row: %g", h[0][1], h[0][4]);
	llvm_kernel_free(k[0]);
	llvm_kernel_free(k[1]);
	spec_carrier_free(c);
	c = load_ok("tests/rows/softmax_top_weight.yaml");
	LlvmKernel *t = compiled(c, NULL);
	cr_expect_eq(t->tf, 0, "%s", t->tf_why);
	cr_expect(strstr(t->tf_why, "derived from its maximum") && strstr(t->tf_why, "not proved"), "%s", t->tf_why);
	RunData *d = drawn(c, 3, 4099, 3);
	run_kernel(t, d, p, 0);
	expect_ok(d, "softmax_top_weight");
	rundata_free(d);
	llvm_kernel_free(t);
	spec_carrier_free(c);
	rt_pool_close(p);
}

/* The plan as taken: the transported tile's loop divides nowhere (the
 * merge's divisions come once a tile, after the branch), and the command
 * line says which fold ran. */
Test(cpu, transported_tiles_are_taken_and_said, .timeout = 120)
{
	Carrier *c = load_ok("specs/welford.yaml");
	for (int v = 0; v < 2; v++) {
		char *buf = NULL, msg[300];
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		cr_assert_eq(llvm_emit(c, &(LlvmOpts){.tf = v ? -1 : 1}, 0, f, msg, sizeof msg), 0, "%s", msg);
		fclose(f);
		char *red = strstr(buf, "@assoc_reduce("), *end = red ? strstr(red, "\n}\n") : NULL;
		cr_assert(red && end);
		*end = 0;
		/* the block that branches to the transported merge: the loop's elements */
		char *br = strstr(red, "label %transported,");
		cr_assert_eq(br != NULL, !v, "tf=%d: %s", !v, br ? "a branch to the transported merge" : "none");
		if (br) {
			char *head = br;
			while (head > red && strncmp(head, "\n\n", 2))
				head--;
			cr_expect(!memmem(head, (size_t)(br - head), "fdiv", 4), "tf=1: a division in the tile's loop");
			cr_expect(memmem(head, (size_t)(br - head), "load <16 x float>", 17) || !strstr(red, "<16 x float>"),
				  "the block is the loop's: it loads the elements");
		}
		free(buf);
	}
	spec_carrier_free(c);
	char out[8192];
	static const char *cmds[][2] = {
		{"build/asan/assoc run specs/welford.yaml --device cpu --rows 3 --len 700 --verbose", "(transported tiles)"},
		{"build/asan/assoc run specs/welford.yaml --device cpu --rows 3 --len 700 --verbose --config tf=0",
		 "(tree of merges)"},
		{"build/asan/assoc bench specs/welford.yaml --device cpu --threads 1 --rows 3 --len 700",
		 "tiles of 16 (transported)"},
		{"build/asan/assoc bench specs/welford.yaml --device cpu --threads 1 --rows 3 --len 700 --json",
		 "\"transported\": 1"},
		{"build/asan/assoc bench specs/welford.yaml --device cpu --threads 1 --rows 3 --len 700 --json --config tf=0",
		 "\"transported\": 0"}};
	for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
		cr_assert_eq(sh(cmds[i][0], out, sizeof out, 1), 0, "%s: %s", cmds[i][0], out);
		cr_expect(strstr(out, cmds[i][1]), "%s: %s", cmds[i][0], out);
	}
}

/* Special values: the n-ary fold agrees bit for bit in kind (NaN, +-inf)
 * and within the tolerance in value with the running fold (tile 1):
 * rows of -inf, a NaN, a +inf, -inf among finite values. */
Test(cpu, max_rescale_tiles_keep_special_values)
{
	Carrier *c = load_ok("specs/logsumexp.yaml");
	LlvmKernel *k[2] = {compiled(c, NULL), compiled(c, &(LlvmOpts){.tile = 1})};
	RtPool *p;
	char msg[200];
	cr_assert_eq(rt_pool_open(&p, 1, msg, sizeof msg), 0);
	enum { R = 5, N = 2000 };
	RunData *d[2];
	for (int v = 0; v < 2; v++) {
		d[v] = drawn(c, R, N, 4);
		float *x = d[v]->elem[0].p;
		for (int j = 0; j < N; j++)
			x[j] = -INFINITY;
		x[N + 777] = NAN;
		x[2 * N + 1234] = INFINITY;
		for (int j = 0; j < N; j += 3)
			x[3 * N + j] = -INFINITY;
		x[4 * N + 5] = 1e30f;
		run_kernel(k[v], d[v], p, 0);
	}
	float *a = d[0]->fin[0].p, *b = d[1]->fin[0].p;
	for (int r = 0; r < R; r++) {
		cr_expect(isnan(a[r]) == isnan(b[r]) && isinf(a[r]) == isinf(b[r]), "row %d: %g vs %g", r, a[r], b[r]);
		if (isfinite(b[r]))
			cr_expect_float_eq(a[r], b[r], 1e-5f * fabsf(b[r]) + 1e-6f, "row %d", r);
	}
	cr_expect_eq(a[0], -INFINITY, "a row of -inf");
	cr_expect(isnan(a[1]), "a row holding NaN: NaN");
	cr_expect_eq(a[2], INFINITY, "a row holding +inf: +inf (the guarded rescale), %g", a[2]);
	for (int v = 0; v < 2; v++)
		rundata_free(d[v]), llvm_kernel_free(k[v]);
	rt_pool_close(p);
	spec_carrier_free(c);
}

/* The map's x / s multiplies by 1 / s only where 1 / s is normal, and
 * x - s skips the -inf rule only where s != -inf: rows with a subnormal,
 * a huge, a plain, a zero and a -inf s. */
Test(cpu, map_hoists_only_when_exact)
{
	Carrier *c = text_ok("carrier: scaled\nelement: {x: f32}\nrow: {s: f32}\nstate: {n: f32}\n"
			     "identity: {n: 0}\nlift: {n: 1}\nmerge: {n: a.n + b.n}\n"
			     "map: {y: x / s, z: x - s}\nlaws: [commutative]\n");
	LlvmKernel *k = compiled(c, NULL);
	RtPool *p;
	char msg[200];
	cr_assert_eq(rt_pool_open(&p, 1, msg, sizeof msg), 0);
	enum { R = 5, N = 100 };
	RunData *d = drawn(c, R, N, 6);
	float *s = d->row[0].p, *x = d->elem[0].p;
	s[0] = 0x1p-140f, s[1] = 0x1p127f, s[2] = 3.0f, s[3] = 0.0f, s[4] = -INFINITY;
	x[4 * N + 7] = -INFINITY;
	run_kernel(k, d, p, 0);
	float *y = d->map[0].p, *z = d->map[1].p;
	for (int r = 0; r < R; r++)
		for (int j = 0; j < N; j++) {
			float xv = x[r * N + j], want = xv / s[r], got = y[r * N + j];
			if (r != 2)
				cr_assert(got == want || (isnan(got) && isnan(want)), "row %d at %d: %g, not %g", r, j, got, want);
			else
				cr_assert_float_eq(got, want, 2e-7f * fabsf(want), "row 2 at %d", j);
			float zw = xv == -INFINITY && s[r] == -INFINITY ? -INFINITY : xv - s[r];
			cr_assert(z[r * N + j] == zw || (isnan(zw) && isnan(z[r * N + j])), "z row %d at %d: %g, not %g", r,
				  j, z[r * N + j], zw);
		}
	rundata_free(d);
	rt_pool_close(p);
	llvm_kernel_free(k);
	spec_carrier_free(c);
}

/* Outputs past 64 MiB stream out with non-temporal stores after a masked
 * run up to 64-byte alignment: odd rows and split chunks start anywhere.
 * y against exp(x - lse) in float64 (the full check is too slow here). */
Test(cpu, streamed_map_outputs)
{
	Carrier *c = load_ok("specs/online_softmax.yaml");
	LlvmKernel *k = compiled(c, NULL);
	RtPool *p;
	char msg[200];
	cr_assert_eq(rt_pool_open(&p, 2, msg, sizeof msg), 0);
	enum { R = 64, N = 262147 };
	RunData *d = drawn(c, R, N, 8);
	run_kernel(k, d, p, 0);
	const float *x = d->elem[0].p, *lse = d->fin[0].p, *y = d->map[0].p;
	double worst = 0;
	for (size_t r = 0; r < R; r++)
		for (size_t j = 0; j < N; j++) {
			double want = exp((double)x[r * N + j] - lse[r]);
			double err = fabs(y[r * N + j] - want) / (want + 1e-30);
			worst = err > worst ? err : worst;
		}
	cr_expect_lt(worst, 1e-4, "worst relative error %g", worst);
	rundata_free(d);
	rt_pool_close(p);
	llvm_kernel_free(k);
	spec_carrier_free(c);
}

/* ---- rowmaps: the map reads back the g that pass 2 kept (kern_build_rowmap) ---- */

/* d[0]'s outputs equal d[1]'s bit for bit. */
static void outputs_same(RunData *d[2], const char *what)
{
	Carrier *c = d[0]->c;
	for (int o = 0; o < c->nfinal + c->nmap; o++) {
		Buffer *x = o < c->nfinal ? &d[0]->fin[o] : &d[0]->map[o - c->nfinal];
		Buffer *y = o < c->nfinal ? &d[1]->fin[o] : &d[1]->map[o - c->nfinal];
		const float *a = x->p, *b = y->p;
		size_t n = x->n * x->width, bad = 0;
		while (bad < n && !memcmp(&a[bad], &b[bad], sizeof *a))
			bad++;
		cr_expect_eq(bad, n, "%s: output %d differs at %zu: %g, not %g", what, o, bad, bad < n ? a[bad] : 0.0,
			     bad < n ? b[bad] : 0.0);
	}
}

/* Views of one run (the heads of attention) give what each view's own run
 * gives, bit for bit, with 1 to 3 threads: whole rows (groups of rows as
 * lanes, the rowmap's pipeline across the views' boundaries, scans) and
 * chunks (groups reduced side by side in each chunk). */
Test(cpu, views_give_each_views_own_results, .timeout = 240)
{
	static const struct {
		const char *path;
		int rows, len, lanes16;
	} cases[] = {
		{"specs/attention.yaml", 37, 300, 0},  {"tests/attention/full.yaml", 16, 3000, 0},
		{"specs/online_softmax.yaml", 13, 0, 1}, {"specs/online_softmax.yaml", 5, 200000, 0},
		{"specs/linear_recurrence.yaml", 3, 5000, 0},
	};
	enum { V = 3 };
	RtPool *p[3];
	pools_open(p, 3);
	for (size_t s = 0; s < sizeof cases / sizeof *cases; s++) {
		Carrier *c = load_ok(cases[s].path);
		LlvmKernel *k = compiled(c, &(LlvmOpts){.lanes = cases[s].lanes16 ? 16 : 0});
		/* rows the pipeline takes (rowmap_next: 16 lanes, rows past pair_len) */
		int len = cases[s].lanes16 ? (int)k->k.rowmap_len - 5 : cases[s].len;
		cr_assert(!cases[s].lanes16 || (k->k.rowmap_next && len >= k->k.pair_len), "%s: the pipeline", cases[s].path);
		RunData *alone[V], *views[V];
		for (int v = 0; v < V; v++) {
			alone[v] = drawn(c, cases[s].rows, len, 500 + v);
			views[v] = drawn(c, cases[s].rows, len, 500 + v);
		}
		/* the automatic split: the views' rows are more, and split no finer here */
		cr_expect_eq(rt_cpu_split(&k->k, cases[s].rows, V, len, 0), rt_cpu_split(&k->k, cases[s].rows, 1, len, 0), "%s",
			     cases[s].path);
		for (int split = 0; split <= 3; split += split ? 2 : 1) {
			for (int v = 0; v < V; v++)
				run_kernel(k, alone[v], p[0], split);
			for (int t = 0; t < 3; t++) {
				const void *in[V][64];
				void *out[V][64];
				CpuArgs a[V];
				char msg[200], w[300];
				for (int v = 0; v < V; v++)
					cpu_args(views[v], &a[v], in[v], out[v]);
				cr_assert_eq(rt_cpu_run(p[t], &k->k, a, V, split, msg, sizeof msg), 0, "%s", msg);
				for (int v = 0; v < V; v++) {
					snprintf(w, sizeof w, "%s, %d x %d, view %d of %d, split %d, %d threads", cases[s].path,
						 cases[s].rows, len, v, V, split, t + 1);
					outputs_same((RunData *[2]){views[v], alone[v]}, w);
				}
			}
		}
		for (int v = 0; v < V; v++) {
			expect_ok(views[v], cases[s].path);
			rundata_free(alone[v]);
			rundata_free(views[v]);
		}
		llvm_kernel_free(k);
		spec_carrier_free(c);
	}
	pools_close(p, 3);
}

static atomic_int group_calls;
static void (*real_reduce_rows)(const CpuArgs *, int64_t, int64_t, int64_t, void *);
static void counted_reduce_rows(const CpuArgs *a, int64_t i, int64_t lo, int64_t hi, void *st)
{
	atomic_fetch_add(&group_calls, 1);
	real_reduce_rows(a, i, lo, hi, st);
}

/* Few rows are split into chunks, many rows are not (their fastest paths
 * take whole rows); a group of rows as lanes counts as one row, and chunks
 * of a large state are shorter.  Attention's few long rows, in chunks, are
 * still reduced side by side, and meet the reference. */
Test(cpu, few_rows_are_chunked_many_are_not)
{
	Carrier *sm = load_ok("specs/online_softmax.yaml"), *at = load_ok("tests/attention/full.yaml");
	LlvmKernel *ks = compiled(sm, NULL), *ka = compiled(at, NULL);
	cr_expect_eq(rt_cpu_split(&ks->k, 1, 1, 300000, 0), 4, "one row of 300000: chunks of 65536");
	cr_expect_eq(rt_cpu_split(&ks->k, 1, 1, 60000, 0), 1, "one row shorter than a chunk");
	cr_expect_eq(rt_cpu_split(&ks->k, 64, 1, 1 << 22, 0), 1, "64 rows fill the threads");
	cr_expect_eq(rt_cpu_split(&ks->k, 8, 8, 1 << 22, 0), 1, "8 views of 8 rows too");
	cr_expect_eq(rt_cpu_split(&ks->k, 8, 1, 1 << 22, 0), 8, "8 rows: 8 chunks each");
	cr_expect_eq(rt_cpu_split(&ks->k, 8, 1, 1 << 22, 5), 5, "a split asked for");
	int g = rt_cpu_group(&ka->k, 64);
	cr_assert_gt(g, 1, "attention's rows go side by side");
	cr_expect_eq(rt_cpu_split(&ka->k, 64 * g, 1, 1 << 20, 0), 1, "64 groups of rows");
	cr_expect_eq(rt_cpu_split(&ka->k, g, 1, 1 << 20, 0), 64, "one group: 64 chunks");
	cr_expect_gt(rt_cpu_split(&ka->k, 1, 1, 8192, 0), 1, "a decoding row of 8192 keys: chunks of a large state");
	RtPool *p;
	char msg[200];
	cr_assert_eq(rt_pool_open(&p, 2, msg, sizeof msg), 0, "%s", msg);
	RunData *d = drawn(at, g + 3, 5000, 9);
	int split = rt_cpu_split(&ka->k, g + 3, 1, 5000, 0);
	cr_expect_gt(split, 1);
	LlvmKernel counted = *ka;
	real_reduce_rows = ka->k.reduce_rows;
	counted.k.reduce_rows = counted_reduce_rows;
	atomic_store(&group_calls, 0);
	run_kernel(&counted, d, p, 0);
	cr_expect_eq(atomic_load(&group_calls), split, "the group's chunks reduce its rows side by side");
	expect_ok(d, "attention, a group and 3 rows in chunks");
	rundata_free(d);
	rt_pool_close(p);
	llvm_kernel_free(ks);
	llvm_kernel_free(ka);
	spec_carrier_free(sm);
	spec_carrier_free(at);
}

/* Run k on d through its rowmaps (the pipeline of rowmap_next where it
 * has one), then through rowmap alone, then through reduce, finalize and
 * map: outputs equal bit for bit, as the kept g is the very value the
 * map would compute. */
static void rowmap_same(LlvmKernel *k, RunData *d[2], RtPool *p, const char *what)
{
	LlvmKernel single = *k, plain = *k;
	single.k.rowmap_next = NULL;
	plain.k.rowmap = NULL, plain.k.rowmap_next = NULL;
	char w[300];
	run_kernel(k, d[0], p, 0);
	run_kernel(&plain, d[1], p, 0);
	snprintf(w, sizeof w, "%s%s", what, k->k.rowmap_next ? " (pipeline)" : "");
	outputs_same(d, w);
	if (k->k.rowmap_next) {
		run_kernel(&single, d[1], p, 0);
		snprintf(w, sizeof w, "%s (pipeline against rowmap)", what);
		outputs_same(d, w);
	}
}

/* The grid's lengths and the rowmap's limit, 1 to 3 threads: against the
 * float64 reference, and the same without the rowmap; then rows of -inf,
 * -inf among finite values, a NaN and a +inf, the same bit for bit. */
static void rowmap_ok(Carrier *c, const LlvmOpts *o)
{
	LlvmKernel *k = compiled(c, o);
	cr_assert(k->k.rowmap, "%s: a rowmap", c->name);
	int N = (int)k->k.rowmap_len;
	const int lens[] = {0, 1, 31, 32, 33, 1000, 4099, N - 1, N};
	RtPool *p[3];
	pools_open(p, 3);
	for (size_t l = 0; l < sizeof lens / sizeof *lens; l++)
		for (int special = 0; special < 2; special++) {
			int len = lens[l], rows = len > 5000 ? 5 : 7;
			RunData *d[2] = {drawn(c, rows, len, 50 + l), drawn(c, rows, len, 50 + l)};
			for (int v = 0; v < 2 && special && len; v++)
				special_rows(d[v], len);
			char w[200];
			snprintf(w, sizeof w, "%s lanes %d len %d threads %zu%s", c->name, k->lanes, len, l % 3 + 1,
				 special ? " special values" : "");
			rowmap_same(k, d, p[l % 3], w);
			if (!special)
				expect_ok(d[0], w);
			rundata_free(d[0]);
			rundata_free(d[1]);
		}
	pools_close(p, 3);
	llvm_kernel_free(k);
}

Test(cpu, softmax_keeps_its_exps_for_the_map, .timeout = 120)
{
	Carrier *c = load_ok("specs/online_softmax.yaml");
	rowmap_ok(c, NULL);
	rowmap_ok(c, &(LlvmOpts){.lanes = 8});
	spec_carrier_free(c);
}

/* A one-pass reduce in lanes with a streamed map (layer norm: Welford,
 * then y per position) runs whole rows through the rowmap, and with
 * outputs of MAP_STREAM_BYTES and more a row's map along the next row's
 * vector loop (kern_build_rowmap_next): the same bits as reduce, finalize
 * and map one after the other, and the reference's values, at lengths
 * around the pairs' limit and the chunk's, on 1 to 3 threads; rows up to
 * the rowmap's limit meet the reference. */
Test(cpu, layer_norm_rows_through_the_rowmap, .timeout = 240)
{
	Carrier *c = load_ok("specs/layer_norm.yaml");
	LlvmKernel *k = compiled(c, &(LlvmOpts){.lanes = 16});
	cr_assert(k->k.rowmap && k->k.rowmap2 && k->k.rowmap_next, "layer norm: a rowmap and its pipeline");
	cr_assert_geq(k->k.rowmap_len, 65536);
	RtPool *p[3];
	pools_open(p, 3);
	const int lens[] = {0, 1, 33, 1000, 1023, 1024, 4099, 65536};
	for (size_t l = 0; l < sizeof lens / sizeof *lens; l++) {
		RunData *d[2] = {drawn(c, 7, lens[l], 70 + l), drawn(c, 7, lens[l], 70 + l)};
		char w[200];
		snprintf(w, sizeof w, "layer norm len %d threads %zu", lens[l], l % 3 + 1);
		rowmap_same(k, d, p[l % 3], w);
		expect_ok(d[0], w);
		rundata_free(d[0]);
		rundata_free(d[1]);
	}
	/* the pipeline: outputs of 64 MiB and more */
	int len = 65531, rows = (int)((64 << 20) / 4 / len) + 7;
	RunData *d[2] = {drawn(c, rows, len, 91), drawn(c, rows, len, 91)};
	for (int t = 0; t < 3; t++) {
		char w[200];
		snprintf(w, sizeof w, "layer norm, %d x %d, %d threads", rows, len, t + 1);
		rowmap_same(k, d, p[t], w);
	}
	/* the reference on the first rows: every row is the plain path's bit
	 * for bit above, and the reference over all of them took six
	 * sevenths of this test under AddressSanitizer */
	int all = d[0]->rows;
	d[0]->rows = 8;
	expect_ok(d[0], "layer norm, the pipeline");
	d[0]->rows = all;
	rundata_free(d[0]);
	rundata_free(d[1]);
	/* the rowmap's longest rows */
	RunData *e = drawn(c, 3, (int)k->k.rowmap_len, 92);
	run_kernel(k, e, p[1], 0);
	expect_ok(e, "layer norm, rows of the rowmap's limit");
	rundata_free(e);
	pools_close(p, 3);
	llvm_kernel_free(k);
	spec_carrier_free(c);
}

/* Outputs of MAP_STREAM_BYTES and more: a row's map goes along pass 2 of
 * the thread's next row (kern_build_rowmap_next), except after a row
 * whose m is -inf (its map is not hoisted).  Rows of -inf, NaN and +inf
 * among them, a row input, a mask; 1 to 3 threads, so that the rows
 * of a thread's tasks are not consecutive; the rowmap and the separate
 * functions give the same bits. */
Test(cpu, pipelined_rows_give_the_rowmaps_results, .timeout = 240)
{
	static const char *text[] = {
		NULL,
		"carrier: tempered_softmax\nrow: {t: f32}\nelement: {x: f32}\nmask: j < len - i\n"
		"state: {m: f32, l: f32}\nidentity: {m: -inf, l: 0}\nlift: {m: x * t, l: 1}\n" SOFTMAX_MERGE
		"finalize: {lse: m + log(l)}\nmap: {y: exp(x * t - m) / l}\nlaws: [commutative]\n",
	};
	RtPool *p[3];
	char err[300];
	pools_open(p, 3);
	for (int s = 0; s < 2; s++) {
		Carrier *c = s ? load_text(text[s], err, sizeof err) : load_ok("specs/online_softmax.yaml");
		cr_assert(c, "%s", err);
		/* the pipeline streams maps of 16 lanes: the default on AVX-512, asked for elsewhere */
		LlvmOpts lo = {.lanes = 16};
		LlvmKernel *k = compiled(c, &lo);
		cr_assert(k->k.rowmap_next, "%s: a pipeline", c->name);
		int len = (int)k->k.rowmap_len - 5, rows = (int)((64 << 20) / 4 / len) + 7;
		RunData *d[2] = {drawn(c, rows, len, 90 + s), drawn(c, rows, len, 90 + s)};
		for (int v = 0; v < 2; v++) {
			special_rows(d[v], len);
			float *x = d[v]->elem[0].p;
			for (int j = 0; j < len; j++) /* a task's last row but one */
				x[(size_t)(rows - 2) * len + j] = -INFINITY;
		}
		for (int t = 0; t < 3; t++) {
			char w[200];
			snprintf(w, sizeof w, "%s, %d x %d, %d threads", c->name, rows, len, t + 1);
			rowmap_same(k, d, p[t], w);
		}
		/* and the values: y = exp(x t - lse) where the row is finite */
		const float *x = d[0]->elem[0].p, *lse = d[0]->fin[0].p, *y = d[0]->map[0].p;
		const float *tt = s ? d[0]->row[0].p : NULL;
		double worst = 0;
		for (int i = 10; i < rows - 2; i += 7)
			for (int j = 0; j < len; j += 5) {
				size_t at = (size_t)i * len + j;
				double want = exp((double)x[at] * (tt ? tt[i] : 1) - lse[i]);
				double e = fabs(y[at] - want) / (want + 1e-30);
				worst = e > worst ? e : worst;
			}
		cr_expect_lt(worst, 1e-4, "%s: worst relative error %g", c->name, worst);
		rundata_free(d[0]);
		rundata_free(d[1]);
		llvm_kernel_free(k);
		spec_carrier_free(c);
	}
	pools_close(p, 3);
}

/* Masks (positions masked out still map: their g is the map's own, past
 * the row's max too; a fully masked row's m is -inf: the map computes),
 * exp2, and g inside a longer map expression. */
Test(cpu, rowmaps_of_other_maps, .timeout = 120)
{
	static const char *text[] = {
		"carrier: masked_softmax\nelement: {x: f32}\nmask: j < i * 700\n" SOFTMAX_STATE
		SOFTMAX_MERGE
		"finalize: {lse: m + log(l)}\nmap: {y: exp(x - m) / l}\nlaws: [commutative]\n",
		"carrier: softmax2\nelement: {x: f32}\n" SOFTMAX_STATE
		"merge:\n  m: max(b.m, a.m)\n  l: exp2(b.m - m) * b.l + a.l * exp2(a.m - m)\n"
		"finalize: {lse2: m + log2(l)}\nmap: {y: 1 - exp2(x - m) / l, z: x * 2}\nlaws: [commutative]\n",
	};
	for (int s = 0; s < 2; s++) {
		Carrier *c = text_ok(text[s]);
		rowmap_ok(c, NULL);
		spec_carrier_free(c);
	}
}

/* Positions masked out may lie far over the row's max: their kept g is
 * exp's overflow, +inf, as the map's own exp gives it (the upper clamp),
 * not the garbage of an argument outside exp's range (about 4.6e7 over
 * the max gave -inf without it).  Short rows go through rowmap2. */
Test(cpu, rowmap_masked_positions_far_over_the_max)
{
	Carrier *c = text_ok("carrier: masked_softmax\nelement: {x: f32}\nmask: j < 3\n" SOFTMAX_STATE SOFTMAX_MERGE
			     "finalize: {lse: m + log(l)}\nmap: {y: exp(x - m) / l}\nlaws: [commutative]\n");
	LlvmKernel *k = compiled(c, NULL);
	RtPool *p;
	char msg[200];
	cr_assert_eq(rt_pool_open(&p, 1, msg, sizeof msg), 0, "%s", msg);
	const int lens[] = {64, 2000};
	for (int l = 0; l < 2; l++) {
		int len = lens[l];
		RunData *d = drawn(c, 4, len, 7);
		float *x = d->elem[0].p;
		for (int i = 0; i < 4; i++)
			for (int j = 3; j < len; j++)
				x[(size_t)i * len + j] = i % 2 ? 4.4e7f + 4e6f * j / len : 1e9f * powf(1e29f, (float)j / len);
		run_kernel(k, d, p, 0);
		const float *y = d->map[0].p;
		int bad = 0;
		for (size_t j = 0; j < (size_t)4 * len; j++)
			bad += j % len >= 3 && !(isinf(y[j]) && y[j] > 0);
		cr_expect_eq(bad, 0, "len %d: %d masked positions are not +inf", len, bad);
		expect_ok(d, "masked positions far over the max");
		rundata_free(d);
	}
	rt_pool_close(p);
	llvm_kernel_free(k);
	spec_carrier_free(c);
}

/* A merge that does not commute reduces in one lane, while its map
 * keeps 16: the map's exp (512-bit on AVX-512 hosts) must be legal in the
 * kernel's functions, where it once stopped LLVM's code generator ("Do
 * not know how to split the result of this operator"). */
Test(cpu, map_lanes_without_reduce_lanes)
{
	Carrier *c = text_ok("carrier: first_in_order\nelement: {x: f32}\nstate: {v: f32, n: f32}\n"
			     "identity: {v: 0, n: 0}\nlift: {v: x, n: 1}\n"
			     "merge:\n  v: where(a.n > 0, a.v, b.v)\n  n: a.n + b.n\n"
			     "finalize: {first: v}\nmap: {y: exp(x - v), s: sigmoid(x)}\n");
	LlvmKernel *k = compiled(c, NULL);
	cr_expect_eq(k->lanes, 1, "no lanes in the reduce");
	RtPool *p;
	char msg[200];
	cr_assert_eq(rt_pool_open(&p, 2, msg, sizeof msg), 0, "%s", msg);
	const int lens[] = {1, 33, 1000};
	for (int l = 0; l < 3; l++) {
		RunData *d = drawn(c, 3, lens[l], 11);
		run_kernel(k, d, p, 0);
		expect_ok(d, "map lanes without reduce lanes");
		rundata_free(d);
	}
	rt_pool_close(p);
	llvm_kernel_free(k);
	spec_carrier_free(c);
}

/* No rowmap where the map's g is not the one pass 2 computes. */
Test(cpu, no_rowmap_for_other_exps)
{
	static const char *maps[] = {"{y: exp(x - m - 1) / l}", "{y: exp(m - x)}", "{y: x / l}"};
	for (int s = 0; s < 3; s++) {
		char text[600];
		snprintf(text, sizeof text,
			 "carrier: other\nelement: {x: f32}\n" SOFTMAX_STATE
			 SOFTMAX_MERGE
			 "finalize: {lse: m + log(l)}\nmap: %s\nlaws: [commutative]\n",
			 maps[s]);
		Carrier *c = text_ok(text);
		LlvmKernel *k = compiled(c, NULL);
		cr_expect(!k->k.rowmap, "%s: no rowmap", maps[s]);
		llvm_kernel_free(k);
		spec_carrier_free(c);
	}
}

/* ---- short rows two at a time (reduce2, rowmap2; PAIR_LEN in llvm_int.h) ---- */

/* Run k on d[0] as it is and on d[1] without its pair functions: outputs
 * equal bit for bit (a pair row takes the very operations of a lone row),
 * and d[0] right against the float64 reference unless special. */
static void pairs_same(LlvmKernel *k, RunData *d[2], RtPool *p, int special, const char *what)
{
	LlvmKernel lone = *k;
	lone.k.reduce2 = NULL, lone.k.rowmap2 = NULL;
	run_kernel(k, d[0], p, 0);
	run_kernel(&lone, d[1], p, 0);
	Carrier *c = d[0]->c;
	for (int o = 0; o < c->nfinal + c->nmap; o++) {
		Buffer *x = o < c->nfinal ? &d[0]->fin[o] : &d[0]->map[o - c->nfinal];
		Buffer *y = o < c->nfinal ? &d[1]->fin[o] : &d[1]->map[o - c->nfinal];
		size_t n = x->n * x->width * run_kind_size(x->kind);
		cr_expect(!n || !memcmp(x->p, y->p, n), "%s: output %d differs from the rows one at a time", what, o);
	}
	if (!special)
		expect_ok(d[0], what);
}

/* Lengths around the vector, the loops' strides and PAIR_LEN, odd and even
 * row counts, 1 to 3 threads; then -inf rows, -inf among finite values,
 * a NaN and a +inf. */
static void pairs_ok(Carrier *c, const LlvmOpts *o, int rowmap)
{
	static const int lens[] = {0, 1, 15, 16, 17, 63, 64, 65, 127, 128, 129, 255, 256, 257, 1000,
				   PAIR_LEN - 1, PAIR_LEN, PAIR_LEN + 1};
	static const int rows[] = {1, 2, 3, 7, 64};
	LlvmKernel *k = compiled(c, o);
	cr_assert(k->k.reduce2, "%s: a reduce2", c->name);
	cr_assert_eq(k->k.pair_len, PAIR_LEN, "%s", c->name);
	cr_assert(!rowmap || k->k.rowmap2, "%s: a rowmap2", c->name);
	if (!rowmap)
		k->k.rowmap = NULL, k->k.rowmap2 = NULL; /* reduce2, finalize and map */
	RtPool *p[3];
	char msg[200];
	for (int t = 0; t < 3; t++)
		cr_assert_eq(rt_pool_open(&p[t], t + 1, msg, sizeof msg), 0, "%s", msg);
	int n = 0;
	for (size_t l = 0; l < sizeof lens / sizeof *lens; l++)
		for (size_t r = 0; r < sizeof rows / sizeof *rows; r++, n++)
			for (int special = 0; special < 2; special++) {
				int len = lens[l], R = rows[r];
				if (special && R < 7)
					continue;
				RunData *d[2] = {drawn(c, R, len, 70 + n), drawn(c, R, len, 70 + n)};
				for (int v = 0; v < 2 && special && len && c->elem[0].storage == TY_F32; v++)
					special_rows(d[v], len);
				char w[200];
				snprintf(w, sizeof w, "%s lanes %d%s rows %d len %d threads %d%s", c->name, k->lanes,
					 rowmap ? " rowmap" : "", R, len, n % 3 + 1, special ? " special values" : "");
				pairs_same(k, d, p[n % 3], special, w);
				rundata_free(d[0]);
				rundata_free(d[1]);
			}
	for (int t = 0; t < 3; t++)
		rt_pool_close(p[t]);
	llvm_kernel_free(k);
}

Test(cpu, short_rows_in_pairs, .timeout = 240)
{
	Carrier *c = load_ok("specs/logsumexp.yaml");
	pairs_ok(c, NULL, 0);
	pairs_ok(c, &(LlvmOpts){.lanes = 8}, 0);
	spec_carrier_free(c);
	c = load_ok("specs/online_softmax.yaml");
	pairs_ok(c, NULL, 1);
	pairs_ok(c, NULL, 0);
	pairs_ok(c, &(LlvmOpts){.lanes = 8}, 1);
	spec_carrier_free(c);
	c = load_ok("specs/welford.yaml"); /* the vector loops, not two passes */
	pairs_ok(c, NULL, 0);
	pairs_ok(c, &(LlvmOpts){.lanes = 8, .accs = 2, .tile = 4}, 0);
	spec_carrier_free(c);
}

/* A mask that depends on the row (row 0 fully masked, row 1 partly, the
 * others not): each row of a pair takes its own. */
Test(cpu, short_rows_in_pairs_masked, .timeout = 120)
{
	Carrier *c = text_ok("carrier: masked_softmax\nelement: {x: f32}\nmask: j < i * 100\n" SOFTMAX_STATE
			     SOFTMAX_MERGE
			     "finalize: {lse: m + log(l)}\nmap: {y: exp(x - m) / l}\nlaws: [commutative]\n");
	pairs_ok(c, NULL, 1);
	pairs_ok(c, NULL, 0);
	spec_carrier_free(c);
	c = text_ok("carrier: masked_welford\nelement: {x: f32}\nmask: j < i * 100\nstate: {n: f32, mean: f32, m2: f32}\n"
		    "identity: {n: 0, mean: 0, m2: 0}\nlift: {n: 1, mean: x, m2: 0}\n"
		    "merge:\n  let:\n    delta: b.mean - a.mean\n  n: a.n + b.n\n"
		    "  mean: where(n == 0, 0, a.mean + delta * b.n / n)\n"
		    "  m2: where(n == 0, 0, a.m2 + b.m2 + delta^2 * a.n * b.n / n)\n"
		    "finalize: {mean: mean}\nreference:\n  mean: sum(x) / count()\nlaws: [commutative]\n");
	pairs_ok(c, NULL, 0);
	spec_carrier_free(c);
}

/* ---- the fence after non-temporal map stores (assoc_fence) ---- */

static atomic_int fences;
static void count_fence(void) { atomic_fetch_add(&fences, 1); }

/* A kernel whose map may stream has a fence, and every task that maps
 * (whole rows, rowmaps, pairs, chunks of split rows) ends with it. */
Test(cpu, map_tasks_end_with_the_fence, .timeout = 60)
{
	Carrier *c = load_ok("specs/online_softmax.yaml");
	/* 16 lanes stream their map's stores on any host (LLVM splits the
	 * vectors where the host has no 64-byte ones) */
	LlvmKernel *k = compiled(c, &(LlvmOpts){.lanes = 16});
	cr_assert(k->k.fence, "16 lanes of float32 stream, and need the fence");
	Carrier *lc = load_ok("specs/logsumexp.yaml");
	LlvmKernel *lse = compiled(lc, NULL);
	cr_expect(!lse->k.fence, "no map, no fence");
	llvm_kernel_free(lse);
	spec_carrier_free(lc);
	k->k.fence = count_fence;
	static const int shapes[][3] = {{64, 256, 0}, {64, 4099, 0}, {3, 1000, 3}, {7, 1000, 0}};
	RtPool *p;
	char msg[200];
	cr_assert_eq(rt_pool_open(&p, 3, msg, sizeof msg), 0, "%s", msg);
	for (int s = 0; s < 4; s++)
		for (int rowmap = 0; rowmap < 2; rowmap++) {
			LlvmKernel v = *k;
			if (!rowmap)
				v.k.rowmap = NULL, v.k.rowmap2 = NULL;
			RunData *d = drawn(c, shapes[s][0], shapes[s][1], 90 + s);
			atomic_store(&fences, 0);
			run_kernel(&v, d, p, shapes[s][2]);
			cr_expect_gt(atomic_load(&fences), 0, "rows %d len %d split %d rowmap %d", shapes[s][0],
				     shapes[s][1], shapes[s][2], rowmap);
			if (s == 0) /* 64 short rows in a few tasks: a fence per task, not per row */
				cr_expect_lt(atomic_load(&fences), 64, "%d fences for 64 rows (rowmap %d)",
					     atomic_load(&fences), rowmap);
			expect_ok(d, "softmax with a counted fence");
			rundata_free(d);
		}
	rt_pool_close(p);
	llvm_kernel_free(k);
	spec_carrier_free(c);
}

static atomic_int pair_calls;
static void (*real_reduce2)(const CpuArgs *, int64_t, void *);
static void counted_reduce2(const CpuArgs *a, int64_t i, void *st)
{
	atomic_fetch_add(&pair_calls, 1);
	real_reduce2(a, i, st);
}

/* Short rows go two at a time even where the tasks are small (few rows
 * per thread): tasks hold an even number of rows. */
Test(cpu, short_rows_pair_in_small_tasks, .timeout = 60)
{
	Carrier *c = load_ok("specs/logsumexp.yaml");
	LlvmKernel *k = compiled(c, NULL);
	cr_assert(k->k.reduce2, "logsumexp has a pair reduce");
	real_reduce2 = k->k.reduce2;
	k->k.reduce2 = counted_reduce2;
	RtPool *p;
	char msg[200];
	cr_assert_eq(rt_pool_open(&p, 3, msg, sizeof msg), 0, "%s", msg);
	for (int rows = 12; rows <= 13; rows++) { /* one or two rows per thread's task */
		RunData *d = drawn(c, rows, 100, 7);
		atomic_store(&pair_calls, 0);
		run_kernel(k, d, p, 0);
		cr_expect_geq(atomic_load(&pair_calls), rows / 2 - 1, "%d rows of 100: %d pair calls", rows,
			      atomic_load(&pair_calls));
		expect_ok(d, "logsumexp in pairs");
		rundata_free(d);
	}
	rt_pool_close(p);
	llvm_kernel_free(k);
	spec_carrier_free(c);
}

/* A state of hundreds of components keeps the SLP vectorizer out of its
 * module (noimplicitfloat), whose time grows faster than linearly with the
 * merge's block; o_lse at the bundled dv = 64 keeps it.  Both come out
 * right. */
Test(cpu, wide_states_keep_the_slp_vectorizer_out)
{
	static const char *dv[] = {"64", "256"};
	for (int w = 0; w < 2; w++) {
		Define defs[1] = {{"dv", dv[w]}};
		Carrier *c = load_defined("specs/o_lse.yaml", defs, 1);
		char *ir = NULL, msg[300];
		size_t len = 0;
		FILE *f = open_memstream(&ir, &len);
		cr_assert_eq(llvm_emit(c, NULL, 0, f, msg, sizeof msg), 0, "%s", msg);
		fclose(f);
		cr_expect_eq(strstr(ir, "noimplicitfloat") != NULL, w == 1, "dv = %s: noimplicitfloat %s", dv[w],
			     w ? "missing" : "where the state is narrow");
		free(ir);
		char what[64];
		snprintf(what, sizeof what, "o_lse at dv = %s", dv[w]);
		cpu_meets_reference(c, 5, 37, 3, what);
		spec_carrier_free(c);
	}
}

/* The float32 value of a 16-bit float pattern, from its fields. */
static double half_value(uint16_t h)
{
	int e = (h >> 10) & 31, m = h & 1023;
	double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
	return h >> 15 ? -v : v;
}

/* Every f16 pattern (zeros, subnormals, normals, infinities, NaNs of both
 * signs) converts exactly on load: 16 lanes at a time in a map, and one
 * component at a time in the scalar state of a vector-field carrier.
 * abs(x) and max(x, -x) of the converted value are exact too (each once
 * done on half values, a lane at a time). */
Test(cpu, every_f16_pattern_converts_exactly)
{
	static const char *specs[] = {
		"carrier: copy16\nelement: {x: f16}\nstate: {s: f32}\nidentity: {s: 0}\nlift: {s: 1}\n"
		"merge: {s: a.s + b.s}\nmap: {y: x, a: abs(x), m: 'max(x, -x)'}\n",
		"carrier: vec16\ndims: {d: 4}\nelement: {x: 'f16[d]'}\nstate: {s: 'f32[d]'}\nidentity: {s: 0}\n"
		"lift: {s: x}\nmerge: {s: a.s + b.s}\n",
	};
	RtPool *p;
	char msg[200];
	cr_assert_eq(rt_pool_open(&p, 2, msg, sizeof msg), 0, "%s", msg);
	for (int s = 0; s < 2; s++) {
		Carrier *c = text_ok(specs[s]);
		LlvmKernel *k = compiled(c, NULL);
		RunData *d = s ? rundata_new(c, 1 << 14, 1) : rundata_new(c, 1, 1 << 16);
		uint16_t *x = d->elem[0].p;
		for (int h = 0; h < 1 << 16; h++)
			x[h] = (uint16_t)h;
		run_kernel(k, d, p, 0);
		const float *y = s ? d->fin[0].p : d->map[0].p;
		int bad = 0;
		for (int h = 0; h < 1 << 16; h++) {
			double r = half_value((uint16_t)h) + (s ? 0.0 : -0.0); /* vec16 folds from its identity 0 */
			int ok = isnan(r) ? isnan(y[h]) : y[h] == r && !signbit(y[h]) == !signbit(r);
			if (!ok && bad++ < 5)
				cr_expect(0, "%s: pattern 0x%04x gives %a, not %a", c->name, h, y[h], r);
		}
		cr_expect_eq(bad, 0, "%s: %d patterns wrong", c->name, bad);
		for (int m = 1; !s && m < 3; m++) {
			const float *ya = d->map[m].p;
			for (int h = 0; h < 1 << 16; h++) {
				double r = fabs(half_value((uint16_t)h));
				/* max(-0, 0) may be either zero */
				int ok = isnan(r) ? isnan(ya[h]) : ya[h] == r && (m == 2 || !signbit(ya[h]));
				if (!ok && bad++ < 5)
					cr_expect(0, "%s of pattern 0x%04x gives %a, not %a", m == 1 ? "abs(x)" : "max(x, -x)",
						  h, ya[h], r);
			}
		}
		cr_expect_eq(bad, 0, "%s: %d patterns wrong in abs(x) or max(x, -x)", c->name, bad);
		rundata_free(d);
		llvm_kernel_free(k);
		spec_carrier_free(c);
	}
	rt_pool_close(p);
}

/* tanh, log1p and expm1 (the backend's vector code) in a map at odd
 * lengths, over values from 1e-30 to 1e30 of both signs and their special
 * values at every position mod 37 (so in vector lanes and the scalar
 * tail): within 2 ulp of float64, the special values exact, a zero's sign
 * included; and summed in a reduce, against the float64 reference. */
Test(cpu, expm1_log1p_tanh_meet_the_reference)
{
	static const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-40f, -1e-40f, 0x1p-30f, -1.0f, -1.5f,
					9.5f, -9.5f, 100.0f, -100.0f, 0x1.62e42ep+6f, 0x1.62e430p+6f, FLT_MAX, -FLT_MAX};
	enum { NS = sizeof special / sizeof *special };
	Carrier *c = text_ok("carrier: fns\nelement: {x: f32}\nstate: {n: i32}\nidentity: {n: 0}\nlift: {n: 1}\n"
			     "merge: {n: a.n + b.n}\nmap: {t: tanh(x), l: log1p(x), e: expm1(x)}\n");
	double (*ref[3])(double) = {tanh, log1p, expm1};
	static const char *name[3] = {"tanh", "log1p", "expm1"};
	LlvmKernel *k = compiled(c, NULL);
	RtPool *p;
	char msg[200];
	cr_assert_eq(rt_pool_open(&p, 2, msg, sizeof msg), 0, "%s", msg);
	static const int lens[] = {17, 37, 1003};
	uint64_t r = 7;
	for (int li = 0; li < 3; li++) {
		int len = lens[li];
		RunData *d = rundata_new(c, 3, len);
		float *x = d->elem[0].p;
		for (int i = 0; i < 3 * len; i++) {
			double m = exp(rng_unit(&r) * 138 - 69); /* 1e-30 to 1e30 */
			x[i] = (float)(rng_unit(&r) < 0.5 ? -m : m);
			if (i % 37 < NS)
				x[i] = special[(i / 37 + i % 37) % NS];
		}
		run_kernel(k, d, p, 0);
		for (int f = 0; f < 3; f++) {
			const float *y = d->map[f].p;
			int bad = 0;
			for (int i = 0; i < 3 * len; i++) {
				double want = ref[f](x[i]);
				float w = (float)want;
				int ok = isnan(w) ? isnan(y[i])
				       : w == 0 || isinf(w) || fabs(w) == 1 ? y[i] == w && !signbit(y[i]) == !signbit(w)
									   : fabs(y[i] - want) <= 2 * ldexp(1, ilogb(w) - 23);
				if (!ok && bad++ < 5)
					cr_expect(0, "%s(%a) gives %a, not %a (length %d)", name[f], x[i], y[i], w, len);
			}
			cr_expect_eq(bad, 0, "%s: %d values wrong at length %d", name[f], bad, len);
		}
		rundata_free(d);
	}
	rt_pool_close(p);
	llvm_kernel_free(k);
	spec_carrier_free(c);
	c = text_ok("carrier: fsum\nelement: {x: f32}\nstate: {s: f32}\nidentity: {s: 0}\n"
		    "lift: {s: 'tanh(x) + log1p(abs(x)) + expm1(-abs(x))'}\nmerge: {s: a.s + b.s}\n"
		    "reference: {s: 'sum(tanh(x) + log1p(abs(x)) + expm1(-abs(x)))'}\nlaws: [commutative]\n");
	static const int rl[][2] = {{3, 17}, {1, 1000}, {2, 4099}};
	for (int i = 0; i < 3; i++) {
		char what[64];
		snprintf(what, sizeof what, "sum of tanh, log1p, expm1 at %d x %d", rl[i][0], rl[i][1]);
		cpu_meets_reference(c, rl[i][0], rl[i][1], 60 + i, what);
	}
	spec_carrier_free(c);
}

/* A pool of 0 threads takes the CPUs the process may run on (taskset,
 * a scheduler's cpuset), not every online one: their threads would only
 * take turns. */
Test(cpu, a_pool_of_any_threads_takes_the_cpus_it_may_use)
{
	cpu_set_t all, one;
	cr_assert_eq(sched_getaffinity(0, sizeof all, &all), 0);
	int first = 0;
	while (!CPU_ISSET(first, &all))
		first++;
	CPU_ZERO(&one);
	CPU_SET(first, &one);
	cr_assert_eq(sched_setaffinity(0, sizeof one, &one), 0);
	RtPool *p;
	char msg[200];
	cr_assert_eq(rt_pool_open(&p, 0, msg, sizeof msg), 0, "%s", msg);
	cr_expect_eq(rt_pool_threads(p), 1, "a process on one CPU took %d threads", rt_pool_threads(p));
	rt_pool_close(p);
	cr_assert_eq(sched_setaffinity(0, sizeof all, &all), 0);
	int usable = rt_cpus_usable();
	cr_expect(usable >= 1 && usable <= CPU_COUNT(&all), "%d usable of %d in the mask", usable, CPU_COUNT(&all));
}

/* A map's division by a value the row fixes (a param, a row input, the
 * row's state) is float32's own division at every position, as on every
 * other device: not x * (1 / y), an ulp off at one position in ten.  And
 * a `let` that the lift and the map both take has one value: a softmax
 * at a temperature gives its largest element a probability of at most 1
 * (exactly 1 on rows of one). */
Test(cpu, divisions_by_row_values_are_divisions)
{
	Carrier *c = text_ok("carrier: divs\nparams: {t: f32}\nrow: {c: f32}\nelement: {x: f32}\n"
			     "state: {m: f32}\nidentity: {m: -inf}\nlift: {m: x}\nmerge: {m: 'max(a.m, b.m)'}\n"
			     "map: {yt: x / t, yc: x / c, ym: x / m}\nlaws: [commutative]\n");
	LlvmKernel *k = compiled(c, NULL);
	RtPool *p;
	char msg[200];
	cr_assert_eq(rt_pool_open(&p, 2, msg, sizeof msg), 0, "%s", msg);
	static const int lens[] = {1, 17, 1003, 4099};
	uint64_t r = 11;
	for (int li = 0; li < 4; li++) {
		int len = lens[li], rows = 3;
		RunData *d = rundata_new(c, rows, len);
		float *x = d->elem[0].p, *cv = d->row[0].p;
		d->params[0] = (float)0.7;
		for (int i = 0; i < rows; i++)
			cv[i] = (float)(0.01 + rng_unit(&r) * 3);
		for (int i = 0; i < rows * len; i++)
			x[i] = (float)(rng_unit(&r) * 8 - 2);
		run_kernel(k, d, p, 0);
		int bad = 0;
		for (int i = 0; i < rows; i++) {
			float m = -INFINITY;
			for (int j = 0; j < len; j++)
				m = fmaxf(m, x[(size_t)i * len + j]);
			for (int j = 0; j < len; j++) {
				size_t at = (size_t)i * len + j;
				float want[3] = {x[at] / (float)0.7, x[at] / cv[i], x[at] / m};
				for (int f = 0; f < 3; f++) {
					float got = ((const float *)d->map[f].p)[at];
					if (memcmp(&got, &want[f], sizeof got) && bad++ < 5)
						cr_expect(0, "%s at row %d position %d (length %d): %a, not %a", c->map[f].name, i,
							  j, len, got, want[f]);
				}
			}
		}
		cr_expect_eq(bad, 0, "%d quotients differ from float32's at length %d", bad, len);
		rundata_free(d);
	}
	rt_pool_close(p);
	llvm_kernel_free(k);
	spec_carrier_free(c);
	c = text_ok("carrier: softmax_t\nparams: {temp: f32}\nelement: {x: f32}\nlet: {s: x / temp}\n"
		    "state: {m: f32, l: f32}\nidentity: {m: -inf, l: 0}\nlift: {m: s, l: 1}\n"
		    "merge: {m: 'max(a.m, b.m)', l: 'a.l * exp(a.m - m) + b.l * exp(b.m - m)'}\n"
		    "finalize: {lse: m + log(l)}\nmap: {p: exp(s - m) / l}\nlaws: [commutative]\n");
	k = compiled(c, NULL);
	cr_assert_eq(rt_pool_open(&p, 2, msg, sizeof msg), 0, "%s", msg);
	for (int len = 1; len <= 3; len++) {
		int rows = 4096;
		RunData *d = rundata_new(c, rows, len);
		float *x = d->elem[0].p;
		d->params[0] = (float)0.7;
		for (int i = 0; i < rows * len; i++)
			x[i] = (float)(rng_unit(&r) * 20 - 10);
		run_kernel(k, d, p, 0);
		const float *pr = d->map[0].p;
		int over = 0, unlike = 0;
		for (int i = 0; i < rows * len; i++) {
			over += pr[i] > 1;
			unlike += len == 1 && pr[i] != 1;
		}
		cr_expect_eq(over, 0, "%d probabilities over 1 at length %d", over, len);
		cr_expect_eq(unlike, 0, "%d rows of one element without a probability of 1", unlike);
		rundata_free(d);
	}
	rt_pool_close(p);
	llvm_kernel_free(k);
	spec_carrier_free(c);
}

/* abs(x) and max(x, -x) of f16 inputs in the any-order lanes, beside
 * min and max fields, at lengths around the lanes and tiles: against the
 * float64 reference. */
Test(cpu, f16_magnitudes_meet_the_reference)
{
	Carrier *c = text_ok("carrier: mag16\nparams: {t: f32}\nelement: {x: f16}\n"
			     "state: {n: i32, m: i32, s: f32, lo: f32, hi: f32}\n"
			     "identity: {n: 0, m: 0, s: 0, lo: inf, hi: -inf}\n"
			     "lift: {n: 'where(abs(x) > t, 1, 0)', m: 'where(max(x, -x) > t, 1, 0)', s: abs(x), lo: x, hi: abs(x)}\n"
			     "merge: {n: a.n + b.n, m: a.m + b.m, s: a.s + b.s, lo: 'min(a.lo, b.lo)', hi: 'max(a.hi, b.hi)'}\n"
			     "reference: {n: 'sum(where(abs(x) > t, 1, 0))', m: 'sum(where(abs(x) > t, 1, 0))', s: sum(abs(x)),"
			     " lo: 'where(count() == 0, inf, min(x))', hi: 'where(count() == 0, -inf, max(abs(x)))'}\n"
			     "laws: [commutative]\n");
	static const int lens[] = {1, 15, 17, 255, 1000, 4099};
	for (int i = 0; i < 6; i++) {
		char what[64];
		snprintf(what, sizeof what, "f16 magnitudes, length %d", lens[i]);
		cpu_meets_reference(c, 3, lens[i], 40 + i, what);
	}
	spec_carrier_free(c);
}

/* A dot product of 16 or more float32 components in the one-lane loop
 * (attention's q . k) sums 16-component chunks and then halves the lanes;
 * head dims with a partial last chunk (17, 40) and without (32, 64) keep
 * every component, against the float64 reference. */
Test(cpu, chunked_dot_products_keep_every_component)
{
	static const char *dims[] = {"16", "17", "40", "64"};
	for (int i = 0; i < 4; i++) {
		Define defs[2] = {{"d", dims[i]}, {"dv", "8"}};
		Carrier *c = load_defined("specs/attention.yaml", defs, 2);
		char what[64];
		snprintf(what, sizeof what, "attention, d = %s", dims[i]);
		cpu_meets_reference(c, 9, 70, 11 + i, what);
		spec_carrier_free(c);
	}
}

/* Lines of the optimized module of attention at head dim d (dv = 8). */
static int attention_ir_lines(const char *d)
{
	Define defs[2] = {{"d", d}, {"dv", "8"}};
	Carrier *c = load_defined("specs/attention.yaml", defs, 2);
	char *ir = NULL, msg[300];
	size_t len = 0;
	FILE *f = open_memstream(&ir, &len);
	cr_assert_eq(llvm_emit(c, NULL, 0, f, msg, sizeof msg), 0, "d = %s: %s", d, msg);
	fclose(f);
	int n = 0;
	for (const char *p = ir; (p = strchr(p, '\n')); p++)
		n++;
	free(ir);
	spec_carrier_free(c);
	return n;
}

/* Past LOOP_MIN components a dot product of inputs is a loop over their
 * memory (kern_wide_dot, and dots_loop where rows are lanes): head dims
 * above it, with a partial last chunk (300, 520) or none (1024), meet the
 * reference, and the module grows far less than the head dim (unrolled,
 * d = 256 took 56000 lines, four times d = 64's; 2080 was refused). */
Test(cpu, wide_dot_products_are_loops, .timeout = 240)
{
	static const char *dims[] = {"300", "520", "1024"};
	for (int i = 0; i < 3; i++) {
		Define defs[2] = {{"d", dims[i]}, {"dv", "8"}};
		Carrier *c = load_defined("specs/attention.yaml", defs, 2);
		char what[64];
		snprintf(what, sizeof what, "attention, d = %s", dims[i]);
		cpu_meets_reference(c, 5, 37, 21 + i, what);
		spec_carrier_free(c);
	}
	int small = attention_ir_lines("160"), big = attention_ir_lines("1040"), past = attention_ir_lines("2080");
	cr_expect_lt(big, 2 * small, "d = 160: %d lines, d = 1040: %d; not loops", small, big);
	/* past LLVM_MAX_WIDTH, inputs read only by dot products still compile */
	cr_expect_lt(past, 2 * small, "d = 160: %d lines, d = 2080: %d; not loops", small, past);
}

/* ---- masks that rule out whole blocks (compiler/llvm/mask_live.c) ---- */

static Carrier *masked_sum(const char *mask)
{
	char text[600], err[300];
	snprintf(text, sizeof text,
		 "carrier: msum\nparams: {w: f32, on: bool}\nelement: {x: f32}\nmask: '%s'\nstate: {s: f32}\n"
		 "identity: {s: 0}\nlift: {s: x}\nmerge: {s: a.s + b.s}\n",
		 mask);
	Carrier *c = load_text(text, err, sizeof err);
	cr_assert(c, "%s: %s", mask, err);
	return c;
}

typedef int (*MaskFn)(int64_t i, int64_t j, int64_t len, double w, int on);
static int m_causal(int64_t i, int64_t j, int64_t len, double w, int on) { return (void)len, (void)w, (void)on, j <= i; }
static int m_window(int64_t i, int64_t j, int64_t len, double w, int on)
{
	return (void)len, (void)on, j <= i && (float)j > (float)i - (float)w;
}
static int m_scaled(int64_t i, int64_t j, int64_t len, double w, int on)
{
	return (void)len, (void)w, (void)on, (float)j * 0.5f <= (float)i * 0.5f;
}
static int m_switch(int64_t i, int64_t j, int64_t len, double w, int on) { return (void)w, on ? j < i : j >= len - 3; }
static int m_abs(int64_t i, int64_t j, int64_t len, double w, int on) { return (void)len, (void)w, (void)on, llabs(i - j) <= 2; }

/* Sound (a block said dead has no position where the mask holds) and
 * useful (the blocks that causal, window, band and switch masks rule out
 * are said dead), over many boxes of rows and blocks. */
Test(cpu, mask_blocks_ruled_out_soundly)
{
	static const struct {
		const char *mask;
		MaskFn fn;
	} masks[] = {
		{"j <= i", m_causal},
		{"j <= i && j > i - w", m_window},
		{"j * 0.5 <= i * 0.5", m_scaled},
		{"(on && j < i) || (!on && j >= len - 3)", m_switch},
		{"abs(i - j) <= 2", m_abs},
	};
	for (size_t m = 0; m < sizeof masks / sizeof *masks; m++) {
		Carrier *c = masked_sum(masks[m].mask);
		LiveProg *p = mask_live_compile(c);
		cr_assert(p, "%s: a mask of the indices and params is taken", masks[m].mask);
		for (int on = 0; on < 2; on++) {
			double params[2] = {40, on};
			CpuArgs a = {NULL, NULL, params, 1000, 1000, 0, 0};
			long dead = 0, empty = 0;
			for (int64_t i = 0; i < 1000; i += 7)
				for (int64_t j0 = 0; j0 < 1000; j0 += 13) {
					int64_t j1 = j0 + 1 + (j0 * 7 + i) % 300;
					if (j1 > 1000)
						j1 = 1000;
					int any = 0;
					for (int64_t j = j0; j < j1 && !any; j++)
						any = masks[m].fn(i, j, 1000, params[0], on);
					int live = mask_live_eval(p, &a, i, j0, j1);
					cr_assert(live || !any, "%s (on %d): row %lld, [%lld, %lld) said dead, holds there",
						  masks[m].mask, on, (long long)i, (long long)j0, (long long)j1);
					dead += !live, empty += !any;
				}
			/* interval arithmetic loses only where the mask's terms depend on each other */
			cr_expect(dead >= empty * 9 / 10, "%s (on %d): %ld of %ld empty boxes ruled out", masks[m].mask,
				  on, dead, empty);
		}
		mask_live_free(p);
		spec_carrier_free(c);
	}
}

/* No program where no block can be ruled out from the indices: a mask of
 * an input, of i alone, none at all. */
Test(cpu, masks_of_inputs_rule_nothing_out)
{
	static const char *masks[] = {"x > 0", "j < i && x > 0", "i > 3"};
	for (int m = 0; m < 3; m++) {
		Carrier *c = masked_sum(masks[m]);
		cr_expect_null(mask_live_compile(c), "%s", masks[m]);
		spec_carrier_free(c);
	}
	Carrier *c = load_ok("specs/sum.yaml");
	cr_expect_null(mask_live_compile(c), "no mask");
	spec_carrier_free(c);
}

/* Causal attention skips the keys past the query: the kernel has the hook,
 * and its results are those of the kernel without it, bit for bit (a one-
 * lane fold: the masked keys it passed over lift to the identity), with
 * and without split rows; a windowed sum meets the reference. */
Test(cpu, masked_blocks_skipped_give_the_same_results)
{
	Carrier *c = load_ok("specs/attention.yaml");
	LlvmKernel *k = compiled(c, NULL);
	cr_assert(k->k.live, "causal attention rules out blocks");
	RtPool *p;
	char msg[200];
	cr_assert_eq(rt_pool_open(&p, 2, msg, sizeof msg), 0, "%s", msg);
	for (int split = 0; split <= 3; split += 3) {
		RunData *d[2] = {drawn(c, 40, 1100, 3), drawn(c, 40, 1100, 3)};
		/* rows past the keys too: the last 8 query rows see every key */
		run_kernel(k, d[0], p, split);
		CpuKernel all = k->k;
		all.live = NULL;
		LlvmKernel whole = *k;
		whole.k = all;
		run_kernel(&whole, d[1], p, split);
		for (int o = 0; o < c->nfinal; o++)
			cr_expect(!memcmp(d[0]->fin[o].p, d[1]->fin[o].p, d[0]->fin[o].n * d[0]->fin[o].width * sizeof(float)),
				  "output %d, split %d: the same bits", o, split);
		expect_ok(d[0], "causal attention, blocks skipped");
		rundata_free(d[0]);
		rundata_free(d[1]);
	}
	llvm_kernel_free(k);
	spec_carrier_free(c);
	/* one run of blocks a row; two, merged in order */
	static const char *masks[] = {"j <= i && j > i - w", "j < 300 || j > 3000"};
	for (int m = 0; m < 2; m++) {
		c = masked_sum(masks[m]);
		k = compiled(c, NULL);
		cr_assert(k->k.live);
		RunData *d = drawn(c, 64, 4099, 5);
		run_kernel(k, d, p, 0);
		expect_ok(d, masks[m]);
		rundata_free(d);
		llvm_kernel_free(k);
		spec_carrier_free(c);
	}
	rt_pool_close(p);
}

/* The floors `assoc bench` times (bench/naive.c) compute what the carrier
 * does: each naive_<carrier> of a bundled spec meets the float64
 * reference on drawn rows. */
Test(cpu, naive_floors_meet_the_reference, .timeout = 120)
{
	cr_assert_eq(system("cc -O2 -shared -fPIC -o build/naive_test.so bench/naive.c -lm"), 0, "bench/naive.c compiles");
	void *lib = dlopen("./build/naive_test.so", RTLD_NOW | RTLD_LOCAL);
	cr_assert(lib, "%s", dlerror());
	glob_t g;
	cr_assert_eq(glob("specs/*.yaml", 0, NULL, &g), 0);
	int found = 0;
	for (size_t s = 0; s < g.gl_pathc; s++) {
		Carrier *c = load_ok(g.gl_pathv[s]);
		char sym[80];
		snprintf(sym, sizeof sym, "naive_%s", c->name);
		void (*fn)(const void *, int64_t, int64_t);
		*(void **)&fn = dlsym(lib, sym);
		if (!fn) {
			spec_carrier_free(c);
			continue;
		}
		found++;
		RunData *d = drawn(c, 37, 300, 21);
		const void *in[64];
		void *out[64];
		int64_t width[64];
		struct {
			CpuArgs a;
			const int64_t *width;
		} na = {.width = width}; /* bench/naive.c's Args */
		cpu_args(d, &na.a, in, out);
		rundata_widths(d, width);
		fn(&na, 0, d->rows);
		expect_ok(d, sym);
		rundata_free(d);
		spec_carrier_free(c);
	}
	globfree(&g);
	cr_expect_geq(found, 8, "%d bundled carriers have a naive floor", found);
	dlclose(lib);
}

/* The number of objects under dir; the first's path and inode where there is one. */
static int cached_objects(const char *dir, char *path, size_t n, ino_t *ino)
{
	char pat[600];
	snprintf(pat, sizeof pat, "%s/assoc/cpu/*.o", dir);
	glob_t g;
	int k = glob(pat, 0, NULL, &g) == 0 ? (int)g.gl_pathc : 0;
	struct stat st;
	if (k && stat(g.gl_pathv[0], &st) == 0) {
		snprintf(path, n, "%s", g.gl_pathv[0]);
		*ino = st.st_ino;
	}
	if (k)
		globfree(&g);
	return k;
}

/* A kernel's object is kept on disk and loaded again, not rebuilt (the
 * file is not rewritten); a damaged one is compiled again and replaced;
 * ASSOC_NO_CPU_CACHE keeps none.  Each kernel meets the reference. */
Test(cpu, objects_come_back_from_the_cache, .timeout = 120)
{
	char dir[] = "/tmp/assoc-cpu-cache-XXXXXX";
	test_tmpdir(dir);
	test_xdg_cache(dir);
	Carrier *c = load_ok("specs/online_softmax.yaml");
	ino_t first = 0, again = 0;
	char obj[700];
	for (int pass = 0; pass < 3; pass++) {
		if (pass == 2) { /* flip a byte of the object, past the header */
			FILE *f = fopen(obj, "r+b");
			cr_assert(f, "%s", obj);
			fseek(f, 100, SEEK_SET);
			int ch = fgetc(f);
			fseek(f, 100, SEEK_SET);
			fputc(ch ^ 0x55, f);
			fclose(f);
		}
		LlvmKernel *k = compiled(c, NULL);
		cr_assert_eq(cached_objects(dir, obj, sizeof obj, pass ? &again : &first), 1, "pass %d: one object", pass);
		cpu_meets_reference(c, 5, 300, 7 + pass, "softmax from the cache");
		llvm_kernel_free(k);
		if (pass == 1)
			cr_expect_eq(again, first, "loaded, not written again");
		if (pass == 2)
			cr_expect_neq(again, first, "the damaged object is replaced");
	}
	spec_carrier_free(c);
	char other[] = "/tmp/assoc-cpu-cache-XXXXXX";
	test_tmpdir(other);
	test_xdg_cache(other);
	setenv("ASSOC_NO_CPU_CACHE", "1", 1);
	c = load_ok("specs/logsumexp.yaml");
	llvm_kernel_free(compiled(c, NULL));
	ino_t none;
	cr_expect_eq(cached_objects(other, obj, sizeof obj, &none), 0, "ASSOC_NO_CPU_CACHE: no object kept");
	spec_carrier_free(c);
	unsetenv("ASSOC_NO_CPU_CACHE");
}

/* ---- topk (compiler/llvm/llvm_topk.c) ---- */

/* Rows of ties (integers in [-2, 2]), of -inf among them, and of normal
 * values, at lengths around k, split so that lists of k merge (the
 * bitonic merge) as well as lists of one into them (the insertion). */
static void topk_rows(const char *path)
{
	static const int lens[] = {0, 1, 3, 4, 5, 7, 8, 9, 17, 31, 64, 255, 300};
	Carrier *c = load_ok(path);
	LlvmKernel *k = compiled(c, NULL);
	RtPool *pool[2];
	pools_open(pool, 2);
	for (size_t l = 0; l < sizeof lens / sizeof *lens; l++)
		for (int split = 0; split < 4; split += 3) {
			int len = lens[l];
			RunData *d = drawn(c, 3, len, 7 + l);
			float *x = d->elem[0].p;
			uint64_t s = 11 + l;
			for (int j = 0; j < len; j++) {
				s = s * 6364136223846793005ull + 1442695040888963407ull;
				x[j] = (float)((int)(s >> 61) % 5 - 2);
				x[len + j] = (s >> 40) % 4 == 0 ? -INFINITY : (float)((int)(s >> 50) % 3);
			}
			run_kernel(k, d, pool[l % 2], split);
			char what[200];
			snprintf(what, sizeof what, "%s len %d split %d", path, len, split);
			expect_ok(d, what);
			rundata_free(d);
		}
	pools_close(pool, 2);
	llvm_kernel_free(k);
	spec_carrier_free(c);
}

/* Row r of TOPK_ROWS at position j: distinct values, all -inf, ties
 * at the list's threshold (values in {0, 1}, a few 2), NaN among values,
 * ascending (every position enters the list), descending, zeros of
 * either sign among a few ones, distinct values among -inf and NaN, and
 * -0 (no +0) and a few +inf among negative values (the keys of
 * lower_topk_keys, which hold -0 below +0), and all equal (every list
 * the first positions: ties by index alone). */
enum { TOPK_ROWS = 10 };
static float topk_value(int r, int j, uint64_t s)
{
	switch (r) {
	case 0: return (float)(int)(s >> 40) / 65536.0f - 100.0f;
	case 1: return -INFINITY;
	case 2: return (s >> 58) == 0 ? 2.0f : (float)((s >> 50) & 1);
	case 3: return (s >> 59) == 0 ? NAN : (float)((s >> 52) % 7);
	case 4: return (float)j;
	case 5: return (float)-j;
	case 6: return (s >> 60) == 0 ? 1.0f : (s >> 50) & 1 ? -0.0f : 0.0f;
	case 7: return (s >> 62) == 0 ? NAN : (s >> 62) == 1 ? -INFINITY : (float)(int)(s >> 40) / 4096.0f;
	case 8: return (s >> 60) == 0 ? INFINITY : (s >> 58) & 1 ? -0.0f : -(float)((s >> 40) % 1000) - 1.0f;
	default: return 3.0f;
	}
}

/* Whether float32 outputs x and y of n values each agree: lists (width
 * over 1) bit for bit, other values as numbers (a max or min of zeros of
 * either sign may be either), NaN with NaN. */
static int same_floats(const float *x, const float *y, size_t n, int width)
{
	for (size_t t = 0; t < n; t++) {
		if (width > 1 ? memcmp(&x[t], &y[t], sizeof *x) != 0 : !(x[t] == y[t] || (isnan(x[t]) && isnan(y[t]))))
			return 0;
	}
	return 1;
}

/* The kernel (one and two threads, split and not) against the
 * interpreter on the rows of topk_value at every length 0 .. 96, every
 * 7th to 306, 127 to 129, 255 to 257, 5000, 8192 and 8193 (the longest
 * range reduce_selected takes, and one more) and 65543: the same indices, and where exact the same values
 * (same_floats). */
/* nan 0: NaN values replaced by -1 (a merge that is associative only
 * among numbers).  exact 2: the indices and the float32 outputs of more
 * than one component (lists) alike, a scalar's only as the reference
 * (the lists' lengths 1 .. 16 aside, these are a sum's or softmax's). */
static void topk_carrier_against_interp_with(Carrier *c, const char *path, int exact, int nan, const LlvmOpts *o)
{
	LlvmKernel *k = compiled(c, o);
	const Device *interp = run_device_find("interp");
	cr_assert(interp);
	RtPool *pool[2];
	pools_open(pool, 2);
	/* every length to 96, past a tile of 16 lanes of 4; from there every
	 * 7th (each remainder of 16 and 8 in turn) and the sides of 128 and
	 * 256 positions; then rows of several blocks, and past 65536 */
	static const int longer[] = {127, 128, 129, 255, 256, 257, 5000, 8192, 8193, 65543};
	for (int len = 0; len <= 96 + 30 + 10; len++) {
		int n = len <= 96 ? len : len <= 126 ? 96 + 7 * (len - 96) : longer[len - 127];
		RunData *d[2] = {drawn(c, TOPK_ROWS, n, 3), drawn(c, TOPK_ROWS, n, 3)};
		uint64_t s = 5 + (uint64_t)len;
		for (int r = 0; r < TOPK_ROWS; r++)
			for (int j = 0; j < n; j++) {
				s = s * 6364136223846793005ull + 1442695040888963407ull;
				float v = topk_value(r, j, s);
				((float *)d[0]->elem[0].p)[(size_t)r * n + j] = ((float *)d[1]->elem[0].p)[(size_t)r * n + j] =
					nan || v == v ? v : -1.0f;
			}
		RunOpts o = {.threads = 1};
		char msg[200];
		cr_assert_eq(interp->run(d[1], &o, msg, sizeof msg), 0, "%s", msg);
		for (int run = 0; run < 2; run++) {
			run_kernel(k, d[0], pool[run], run ? 3 : 0);
			for (int f = 0; f < c->nfinal; f++) {
				Buffer *x = &d[0]->fin[f], *y = &d[1]->fin[f];
				if ((!exact || (exact == 2 && x->width == 1)) && x->kind != TY_I32)
					continue;
				size_t bytes = x->n * x->width * run_kind_size(x->kind);
				int same = x->kind == TY_F32 ? same_floats(x->p, y->p, x->n * x->width, x->width)
							      : memcmp(x->p, y->p, bytes) == 0;
				cr_assert(same, "%s: len %d, %d threads: %s differs from the interpreter", path, n, run + 1,
					  c->finalize[f].name);
			}
		}
		rundata_free(d[0]);
		rundata_free(d[1]);
	}
	pools_close(pool, 2);
	llvm_kernel_free(k);
}

static void topk_carrier_against_interp(Carrier *c, const char *path, int exact, int nan)
{
	topk_carrier_against_interp_with(c, path, exact, nan, NULL);
}

static void topk_against_interp(const char *path, int exact)
{
	Carrier *c = load_ok(path);
	topk_carrier_against_interp(c, path, exact, 1);
	spec_carrier_free(c);
}

Test(cpu, topk_filtered_rows_as_interp, .timeout = 300)
{
	topk_against_interp("tests/check/topk_reference.yaml", 1);
	topk_against_interp("specs/moe_topk_routing.yaml", 0);
}

/* Lists of 1 (beside a min field), 8 and 16 (under a mask, beside the max
 * of the same lifted value) as the interpreter makes them. */
Test(cpu, topk_selected_rows_as_interp, .timeout = 300)
{
	topk_against_interp("tests/check/topk_one_min.yaml", 1);
	topk_against_interp("tests/check/topk_sixteen_masked.yaml", 1);
}

/* A list of 16 of the input itself, no mask: on AVX-512 its candidates
 * are kept as positions alone (16-bit offsets where the host compresses
 * them) and their values read back from the row, sorted as keys of 16
 * lanes; and a list of 5 of an expression of the input, whose values are
 * kept beside the positions.  Both as the interpreter makes them. */
Test(cpu, topk_direct_and_computed_lists_as_interp, .timeout = 300)
{
	static const char *texts[] = {
		"carrier: top16_direct\nelement: {x: f32}\nstate:\n  top: f32[16]\n  at: i32[16]\n"
		"identity: {top: -inf, at: -1}\nlift: {top: 'topk(x, j, 16)', at: 'topk_idx(x, j, 16)'}\n"
		"merge:\n  top: topk(a.top, a.at, b.top, b.at)\n  at: topk_idx(a.top, a.at, b.top, b.at)\n"
		"laws: [commutative]\n",
		"carrier: top5_computed\nelement: {x: f32}\nstate:\n  top: f32[5]\n  at: i32[5]\n"
		"identity: {top: -inf, at: -1}\nlift: {top: 'topk(0 - x, j, 5)', at: 'topk_idx(0 - x, j, 5)'}\n"
		"merge:\n  top: topk(a.top, a.at, b.top, b.at)\n  at: topk_idx(a.top, a.at, b.top, b.at)\n"
		"laws: [commutative]\n",
	};
	for (size_t t = 0; t < sizeof texts / sizeof *texts; t++) {
		Carrier *c = text_ok(texts[t]);
		topk_carrier_against_interp(c, t ? "top5_computed" : "top16_direct", 1, 1);
		spec_carrier_free(c);
	}
}

/* The positions of a direct list kept as 32-bit lanes, as a host without
 * AVX-512 VBMI2 keeps them, as the interpreter makes the lists. */
Test(cpu, topk_wide_positions_as_interp, .timeout = 300)
{
	LlvmOpts o = {.wide_positions = 1};
	static const char *paths[] = {"tests/check/topk_reference.yaml", "tests/check/topk_one_min.yaml"};
	for (size_t t = 0; t < sizeof paths / sizeof *paths; t++) {
		Carrier *c = load_ok(paths[t]);
		topk_carrier_against_interp_with(c, paths[t], 1, 1, &o);
		spec_carrier_free(c);
	}
}

/* On an AVX-512 host the carriers with topk lists are served by
 * reduce_selected (compiler/llvm/llvm_reduce.c), two rows at a time
 * (assoc_reduce2); a carrier with a field it does not take (topk_softmax's
 * sum) is not. */
Test(cpu, topk_selected_where_it_serves)
{
	if (!lower_host_avx512())
		cr_skip("the host has no AVX-512: reduce_selected is not built");
	static const char *serves[] = {"specs/moe_topk_routing.yaml", "tests/check/topk_reference.yaml",
				       "tests/check/topk_one_min.yaml", "tests/check/topk_sixteen_masked.yaml"};
	for (size_t t = 0; t < sizeof serves / sizeof *serves; t++) {
		Carrier *c = load_ok(serves[t]);
		cr_expect(kern_selects(c), "%s", serves[t]);
		LlvmKernel *k = compiled(c, NULL);
		cr_expect(k->k.reduce2 != NULL, "%s: no assoc_reduce2", serves[t]);
		llvm_kernel_free(k);
		spec_carrier_free(c);
	}
	Carrier *c = load_ok("tests/prove/topk_softmax.yaml");
	cr_expect(!kern_selects(c));
	spec_carrier_free(c);
}

Test(cpu, topk_ties_and_short_rows)
{
	topk_rows("tests/check/topk_reference.yaml");
	topk_rows("tests/prove/topk_softmax.yaml");
}

/* A topk list beside softmax's (m, l) reduces in lanes, the list kept
 * apart from them (kern_apart_lift in compiler/llvm/llvm_reduce.c), a
 * tile whose values all fall below the list's last slot left out of it:
 * the indices are the interpreter's at lengths 0 .. 306 and long
 * ones, with ties, NaN, infinities, ascending rows (every position
 * enters) and under a mask (lifts selected against the identity); the
 * sums meet the reference. */
Test(cpu, topk_lists_fold_apart_from_the_rescale, .timeout = 300)
{
	static const char *masks[] = {"", "mask: x == x\n"};
	for (int m = 0; m < 2; m++) {
		char text[1200];
		snprintf(text, sizeof text,
			 "carrier: topk_beside_softmax\nelement: {x: f32}\n%s"
			 "state:\n  m: f32\n  l: f32\n  top: f32[3]\n  at: i32[3]\n"
			 "identity: {m: -inf, l: 0, top: -inf, at: -1}\n"
			 "lift: {m: x, l: 1, top: 'topk(x, j, 3)', at: 'topk_idx(x, j, 3)'}\n"
			 "merge:\n  m: max(a.m, b.m)\n  l: a.l * exp(a.m - m) + b.l * exp(b.m - m)\n"
			 "  top: topk(a.top, a.at, b.top, b.at)\n  at: topk_idx(a.top, a.at, b.top, b.at)\n"
			 "laws: [commutative]\n",
			 masks[m]);
		Carrier *c = text_ok(text);
		LlvmKernel *k = compiled(c, NULL);
		cr_assert_gt(k->lanes, 1, "mask %d: lanes", m);
		cr_assert_eq(k->apart, 1, "mask %d: the list kept apart", m);
		cr_assert(k->max_rescale, "mask %d: the n-ary rescale", m);
		cr_assert(!k->two_pass, "mask %d: no two passes", m);
		llvm_kernel_free(k);
		topk_carrier_against_interp(c, masks[m], 0, 1);
		cpu_meets_reference(c, 5, 70001, 3 + m, "topk beside softmax");
		spec_carrier_free(c);
	}
	topk_rows("tests/prove/topk_softmax.yaml");
	/* a list of 8 beside (m, l): 18 components, still in lanes */
	Carrier *c = text_ok("carrier: top8_beside_softmax\nelement: {x: f32}\n"
			     "state:\n  m: f32\n  l: f32\n  top: f32[8]\n  at: i32[8]\n"
			     "identity: {m: -inf, l: 0, top: -inf, at: -1}\n"
			     "lift: {m: x, l: 1, top: 'topk(x, j, 8)', at: 'topk_idx(x, j, 8)'}\n"
			     "merge:\n  m: max(a.m, b.m)\n  l: a.l * exp(a.m - m) + b.l * exp(b.m - m)\n"
			     "  top: topk(a.top, a.at, b.top, b.at)\n  at: topk_idx(a.top, a.at, b.top, b.at)\n"
			     "laws: [commutative]\n");
	LlvmKernel *k = compiled(c, NULL);
	cr_assert_gt(k->lanes, 1, "a list of 8: lanes");
	llvm_kernel_free(k);
	topk_carrier_against_interp(c, "top8_beside_softmax", 0, 1);
	spec_carrier_free(c);
}

/* Topk lists kept apart from the lanes (kern_apart_lift in
 * compiler/llvm/llvm_reduce.c): one sorted list a range, each vector's
 * lifted pairs tested against its last slot and the ones that rank
 * before it inserted.  Lists of 16 beside softmax's (m, l) (34
 * components, over what the lanes hold), of an expression of the input
 * beside a count, two lists (16 and 8) under a mask, and indices that
 * fall as positions rise (a later position wins a tie: the test's ties
 * by index matter past the empty slots) are the interpreter's, bit for
 * bit, at lengths 0 .. 306 and long rows, on ties, NaN, zeros of
 * either sign, -inf, equal and ascending rows (topk_value). */
Test(cpu, topk_lists_kept_apart_as_interp, .timeout = 900)
{
	static const struct {
		const char *name, *text;
		int lists, exact;
	} cs[] = {
		{"softmax_top16", "state: {m: f32, l: f32, best: 'f32[16]', at: 'i32[16]'}\n"
				  "identity: {m: -inf, l: 0, best: -inf, at: -1}\n"
				  "lift: {m: x, l: 1, best: 'topk(x, j, 16)', at: 'topk_idx(x, j, 16)'}\n"
				  "merge:\n  m: max(a.m, b.m)\n  l: a.l * exp(a.m - m) + b.l * exp(b.m - m)\n"
				  "  best: topk(a.best, a.at, b.best, b.at)\n  at: topk_idx(a.best, a.at, b.best, b.at)\n"
				  "finalize:\n  lse: m + log(l)\n  best: best\n  at: at\n",
		 1, 2},
		{"count_top16_of_neg_abs", "state: {n: f32, top: 'f32[16]', at: 'i32[16]'}\n"
					   "identity: {n: 0, top: -inf, at: -1}\n"
					   "lift: {n: 1, top: 'topk(0 - abs(x), j, 16)', at: 'topk_idx(0 - abs(x), j, 16)'}\n"
					   "merge:\n  n: a.n + b.n\n  top: topk(a.top, a.at, b.top, b.at)\n"
					   "  at: topk_idx(a.top, a.at, b.top, b.at)\n",
		 1, 1},
		{"two_lists_masked", "mask: x == x\n"
				     "state: {n: f32, hi: 'f32[16]', hat: 'i32[16]', lo: 'f32[8]', lat: 'i32[8]'}\n"
				     "identity: {n: 0, hi: -inf, hat: -1, lo: -inf, lat: -1}\n"
				     "lift: {n: 1, hi: 'topk(x, j, 16)', hat: 'topk_idx(x, j, 16)', lo: 'topk(0 - x, j, 8)',\n"
				     "       lat: 'topk_idx(0 - x, j, 8)'}\n"
				     "merge:\n  n: a.n + b.n\n  hi: topk(a.hi, a.hat, b.hi, b.hat)\n"
				     "  hat: topk_idx(a.hi, a.hat, b.hi, b.hat)\n  lo: topk(a.lo, a.lat, b.lo, b.lat)\n"
				     "  lat: topk_idx(a.lo, a.lat, b.lo, b.lat)\n",
		 2, 1},
		{"falling_indices", "state: {n: f32, top: 'f32[12]', at: 'i32[12]'}\n"
				    "identity: {n: 0, top: -inf, at: -1}\n"
				    "lift: {n: 1, top: 'topk(x, 1000000 - j, 12)', at: 'topk_idx(x, 1000000 - j, 12)'}\n"
				    "merge:\n  n: a.n + b.n\n  top: topk(a.top, a.at, b.top, b.at)\n"
				    "  at: topk_idx(a.top, a.at, b.top, b.at)\n",
		 1, 1},
	};
	for (size_t t = 0; t < sizeof cs / sizeof *cs; t++) {
		char text[2000];
		snprintf(text, sizeof text, "carrier: %s\nelement: {x: f32}\n%slaws: [commutative]\n", cs[t].name, cs[t].text);
		Carrier *c = text_ok(text);
		LlvmKernel *k = compiled(c, NULL);
		cr_assert_gt(k->lanes, 1, "%s: lanes", cs[t].name);
		cr_assert_eq(k->apart, cs[t].lists, "%s: lists apart", cs[t].name);
		cr_assert_str_empty(k->one_lane, "%s", cs[t].name);
		llvm_kernel_free(k);
		topk_carrier_against_interp(c, cs[t].name, cs[t].exact, 1);
		spec_carrier_free(c);
	}
	Carrier *c = load_ok("bench/carriers/softmax_top16.yaml");
	cpu_meets_reference(c, 5, 70001, 7, "softmax_top16");
	spec_carrier_free(c);
	topk_rows("bench/carriers/softmax_top16.yaml");
}

/* Fields that fold apart in ordered lanes (no commutative claim): a
 * first-position argmax beside softmax's (m, l) keeps the earliest of
 * tied maxima, the accumulator (the earlier range) on the left of each
 * tile's fold, as the interpreter does (rows without NaN: with one, its
 * merge is not associative). */
Test(cpu, fields_apart_keep_order_in_ordered_lanes, .timeout = 120)
{
	Carrier *c = text_ok("carrier: softmax_argfirst\nelement: {x: f32}\n"
			     "state: {m: f32, l: f32, best: f32, at: i32}\n"
			     "identity: {m: -inf, l: 0, best: -inf, at: -1}\n"
			     "lift: {m: x, l: 1, best: x, at: j}\n"
			     "merge:\n  m: max(a.m, b.m)\n  l: a.l * exp(a.m - m) + b.l * exp(b.m - m)\n"
			     "  best: where(b.best > a.best, b.best, a.best)\n  at: where(b.best > a.best, b.at, a.at)\n");
	LlvmKernel *k = compiled(c, NULL);
	cr_assert_gt(k->ordered, 1);
	cr_assert(k->max_rescale);
	llvm_kernel_free(k);
	topk_carrier_against_interp(c, "softmax_argfirst", 0, 0);
	spec_carrier_free(c);
}

/* k's runs of c against the left fold at each of the n lengths (6 rows,
 * seeds from seed on, pools of 1 to 3 threads in turn, every other run
 * split in 3), special_rows in rows 1 to 4 where special. */
static void scan_lengths_meet_the_left_fold(Carrier *c, LlvmKernel *k, const int *lens, size_t n, uint64_t seed,
					    int special, RtPool **p)
{
	for (size_t i = 0; i < n; i++) {
		RunData *d = drawn(c, 6, lens[i], seed + i);
		if (lens[i] > 3 && special)
			special_rows(d, lens[i]);
		run_kernel(k, d, p[i % 3], i % 2 ? 3 : 0);
		char what[200];
		snprintf(what, sizeof what, "%s len %d", c->name, lens[i]);
		expect_ok(d, what);
		rundata_free(d);
	}
}

/* Scans of scalars run in vectors (scan_lanes in compiler/llvm/llvm_kern.c):
 * each position's outputs meet the left fold at lengths around the
 * vector (0, 1, under one, one and one more, not a multiple), with
 * threads and splits (a chunk's incoming state), infinities and a NaN in
 * rows 1 to 4; int32 and bool outputs, and a mask (NaN left out). */
Test(cpu, scans_in_vectors_meet_the_left_fold, .timeout = 240)
{
	static const char *texts[] = {
		"carrier: low_so_far\nelement: {x: f32}\nstate: {lo: f32, at: i32}\nidentity: {lo: inf, at: -1}\n"
		"lift: {lo: x, at: j}\nmerge:\n  lo: where(b.lo < a.lo, b.lo, a.lo)\n  at: where(b.lo < a.lo, b.at, a.at)\n"
		"finalize: {lo: lo, at: at, below: lo < 0}\ntemplate: scan\n",
		"carrier: numbers_so_far\nelement: {x: f32}\nmask: x == x\nstate: {s: f32, n: i32}\n"
		"identity: {s: 0, n: 0}\nlift: {s: x, n: 1}\nmerge:\n  s: a.s + b.s\n  n: a.n + b.n\n"
		"finalize: {mean: s / n}\ntemplate: scan\n",
		"carrier: decayed\nelement: {a: f32, x: f32}\nassume: a > -1 && a < 1\nstate: {p: f32, y: f32}\n"
		"identity: {p: 1, y: 0}\nlift: {p: a, y: x}\nmerge:\n  p: a.p * b.p\n  y: b.p * a.y + b.y\n"
		"finalize: {y: y}\ntemplate: scan\n"};
	static const int lens[] = {0, 1, 7, 15, 16, 17, 31, 33, 1000, 4097, 20011};
	RtPool *p[3];
	pools_open(p, 3);
	for (size_t s = 0; s < sizeof texts / sizeof *texts; s++) {
		Carrier *c = text_ok(texts[s]);
		LlvmKernel *k = compiled(c, NULL);
		cr_assert_gt(k->scan_lanes, 1, "%s: a scan in vectors", c->name);
		scan_lengths_meet_the_left_fold(c, k, lens, sizeof lens / sizeof *lens, 41, s < 2, p);
		llvm_kernel_free(k);
		spec_carrier_free(c);
	}
	pools_close(p, 3);
}

/* A scan whose merge keeps the earlier of equal values, on rows with a NaN
 * before a larger value: the lift of NaN, merged on the left of the next
 * position's, would keep its position (where(b.hi > a.hi, ...) is false
 * both ways); the left fold, and check's trees of one-position
 * accumulators, take it on the identity first and skip it.  Each lane of
 * a vector meets the left fold bit for bit, at 4, 8 and 16 lanes, and in
 * tiles of 16 blocks. */
Test(cpu, scan_in_vectors_skips_a_nan_as_the_left_fold)
{
	Carrier *c = text_ok("carrier: high_so_far\nelement: {x: f32}\nstate: {hi: f32, at: i32}\n"
			     "identity: {hi: -inf, at: -1}\nlift: {hi: x, at: j}\n"
			     "merge:\n  hi: max(a.hi, b.hi)\n  at: where(b.hi > a.hi, b.at, a.at)\n"
			     "finalize: {at: at}\ntemplate: scan\n");
	/* with a mean beside it, whose division sends 16 lanes to tiles of
	 * 256 positions (scan_tile): 600 holds two */
	Carrier *tiled = text_ok("carrier: high_so_far_mean\nelement: {x: f32}\n"
				 "state: {hi: f32, at: i32, n: f32, mean: f32}\n"
				 "identity: {hi: -inf, at: -1, n: 0, mean: 0}\nlift: {hi: x, at: j, n: 1, mean: x}\n"
				 "merge:\n  hi: max(a.hi, b.hi)\n  at: where(b.hi > a.hi, b.at, a.at)\n"
				 "  n: a.n + b.n\n  mean: where(n == 0, 0, a.mean + (b.mean - a.mean) * (b.n / n))\n"
				 "finalize: {at: at}\ntemplate: scan\n");
	static const int lanes[] = {4, 8, 16, 16};
	RtPool *p;
	pools_open(&p, 1);
	for (int w = 0; w < 4; w++) {
		int LEN = w < 3 ? 37 : 600;
		LlvmKernel *k = compiled(w < 3 ? c : tiled, &(LlvmOpts){.lanes = lanes[w]});
		cr_assert_gt(k->scan_lanes, 1, "a scan in vectors");
		cr_assert_eq(k->scan_tiles, w == 3);
		RunData *d = drawn(w < 3 ? c : tiled, 2, LEN, 90 + w);
		float *x = d->elem[0].p;
		for (int j = 0; j < 2 * LEN; j++)
			x[j] = j % 3 == 1 ? NAN : (float)(j % LEN); /* each NaN before a larger value */
		run_kernel(k, d, p, 0);
		const int32_t *at = d->fin[0].p;
		for (int r = 0; r < 2; r++)
			for (int j = 0, want = -1; j < LEN; j++) {
				if (x[r * LEN + j] == x[r * LEN + j]) /* rising: the last number so far */
					want = j;
				cr_expect_eq(at[r * LEN + j], want, "%d lanes, row %d, at %d: %d, not %d", lanes[w], r, j,
					     at[r * LEN + j], want);
			}
		rundata_free(d);
		llvm_kernel_free(k);
	}
	pools_close(&p, 1);
	spec_carrier_free(tiled);
	spec_carrier_free(c);
}

/* Scans whose merges divide or call exp take tiles of 16 blocks of 16
 * positions (scan_tile in compiler/llvm/llvm_kern.c): Welford's running
 * mean and deviation, a running log-sum-exp, and a masked running mean,
 * at lengths around the tile (255, 256, 257, 512 + 17, 4096, 20011), with threads and splits (a chunk's incoming
 * state), and infinities and a NaN in rows 1 to 4 of the log-sum-exp,
 * whose merge guards them (the means' merges take infinities by grouping,
 * as check warns): every position's outputs against the left fold and the
 * reference's prefixes. */
Test(cpu, scans_in_tiles_meet_the_left_fold, .timeout = 240)
{
	static const char *texts[] = {
		"carrier: running_sd\nelement: {x: f32}\nstate: {n: f32, mean: f32, m2: f32}\n"
		"identity: {n: 0, mean: 0, m2: 0}\nlift: {n: 1, mean: x, m2: 0}\nmerge:\n  let:\n"
		"    d: b.mean - a.mean\n  n: a.n + b.n\n  mean: where(n == 0, 0, a.mean + d * (b.n / n))\n"
		"  m2: where(n == 0, 0, a.m2 + b.m2 + d * (d * (a.n * b.n / n)))\n"
		"finalize: {mean: mean, sd: sqrt(m2 / n)}\ntemplate: scan\n",
		"carrier: running_lse\nelement: {x: f32}\nstate: {m: f32, l: f32}\nidentity: {m: -inf, l: 0}\n"
		"lift: {m: x, l: 1}\nmerge:\n  m: max(a.m, b.m)\n"
		"  l: a.l * exp(where(a.m == m, 0, a.m - m)) + b.l * exp(where(b.m == m, 0, b.m - m))\n"
		"finalize: {lse: m + log(l)}\ntemplate: scan\n",
		"carrier: running_mean_of_numbers\nelement: {x: f32}\nmask: x == x\nstate: {n: f32, mean: f32}\n"
		"identity: {n: 0, mean: 0}\nlift: {n: 1, mean: x}\nmerge:\n  n: a.n + b.n\n"
		"  mean: where(n == 0, 0, a.mean + (b.mean - a.mean) * (b.n / n))\n"
		"finalize: {mean: mean}\ntemplate: scan\n"};
	static const int lens[] = {0, 17, 255, 256, 257, 529, 4096, 20011};
	RtPool *p[3];
	pools_open(p, 3);
	for (size_t s = 0; s < sizeof texts / sizeof *texts; s++) {
		Carrier *c = text_ok(texts[s]);
		LlvmKernel *k = compiled(c, NULL);
		if (k->scan_lanes != 16) {
			int lanes = k->scan_lanes;
			llvm_kernel_free(k);
			spec_carrier_free(c);
			pools_close(p, 3);
			cr_skip_test("this host's vectors have %d lanes, not 16", lanes);
		}
		cr_assert(k->scan_tiles, "%s: a scan in tiles", c->name);
		/* the others' merges take infinities by grouping (check says so) */
		scan_lengths_meet_the_left_fold(c, k, lens, sizeof lens / sizeof *lens, 7, s == 1, p);
		llvm_kernel_free(k);
		spec_carrier_free(c);
	}
	pools_close(p, 3);
}

/* A running mean's merge takes a state of -inf on the left of the
 * identity to NaN (-inf + (0 - -inf) * 0), guarded against n = 0 or not;
 * the left fold never meets that.  A partial vector of a scan (the head
 * up to the outputs' alignment, where a row or a split's chunk starts
 * mid-vector; the tail) holds the identity's lift in its lanes past the
 * range, and carries on its last position's state, not its last lane's.
 * Rows of -inf and of drawn numbers at lengths 1 to 40 and past
 * SCAN_ALIGN_MIN, whole and split in 3, against the interpreter: the
 * same infinities and NaN, the numbers within rounding; and the state a
 * row of -inf leaves, -inf. */
Test(cpu, a_partial_vector_of_a_scan_carries_its_last_position, .timeout = 240)
{
	static const char *means[] = {"  mu: a.mu + (b.mu - a.mu) * b.n / (a.n + b.n)\n",
				      "  mu: where(n == 0, 0, a.mu + (b.mu - a.mu) * (b.n / n))\n"};
	static const int longs[] = {1024, 1031, 2100, 3100, 4099};
	enum { SHORT = 40, N = SHORT + sizeof longs / sizeof *longs };
	const Device *interp = run_device_find("interp");
	cr_assert(interp);
	RtPool *p[2];
	pools_open(p, 2);
	for (size_t m = 0; m < sizeof means / sizeof *means; m++) {
		char text[512];
		snprintf(text, sizeof text,
			 "carrier: running_mean\nelement: {x: f32}\nstate: {n: f32, mu: f32}\nidentity: {n: 0, mu: 0}\n"
			 "lift: {n: 1, mu: x}\nmerge:\n  n: a.n + b.n\n%sfinalize: {mean: mu}\ntemplate: scan\n",
			 means[m]);
		Carrier *c = text_ok(text);
		LlvmKernel *k = compiled(c, &(LlvmOpts){.lanes = 16});
		cr_assert_eq(k->scan_lanes, 16, "a scan in vectors of 16, whose outputs align");
		for (int i = 0; i < N; i++) {
			int len = i < SHORT ? i + 1 : longs[i - SHORT];
			for (int split = 0; split < 4; split += 3) {
				RunData *d[2] = {drawn(c, 4, len, 60 + i), drawn(c, 4, len, 60 + i)};
				for (int r = 0; r < 4; r += 2) /* rows 0 and 2 all -inf, 1 and 3 drawn */
					for (int j = 0; j < len; j++)
						for (int t = 0; t < 2; t++)
							((float *)d[t]->elem[0].p)[(size_t)r * len + j] = -INFINITY;
				char msg[200];
				cr_assert_eq(interp->run(d[1], &(RunOpts){.threads = 1}, msg, sizeof msg), 0, "%s", msg);
				run_kernel(k, d[0], p[split > 0], split);
				const float *x = d[0]->fin[0].p, *y = d[1]->fin[0].p;
				size_t bad = 0, first = 0;
				for (size_t q = 0; q < (size_t)4 * len; q++) {
					int same = isnan(y[q]) ? isnan(x[q])
						 : isinf(y[q]) ? x[q] == y[q]
							       : fabsf(x[q] - y[q]) <= 1e-4f * (1 + fabsf(y[q]));
					if (!same && !bad++)
						first = q;
				}
				cr_expect_eq(bad, 0, "mean %zu, len %d, split %d: %zu positions differ, the first %zu: %g, not %g",
					     m, len, split, bad, first, bad ? x[first] : 0.0, bad ? y[first] : 0.0);
				/* the state a run of row 0 from lo leaves (the tail's carry),
				 * finalized into its first position */
				for (int lo = 0; lo < len && lo < 4 && !split; lo += 3) {
					const void *in[64];
					void *out[64];
					CpuArgs a;
					_Alignas(64) unsigned char st[256];
					cpu_args(d[0], &a, in, out);
					cr_assert(k->k.state_bytes <= sizeof st);
					k->k.identity(&a, st);
					k->k.scan(&a, 0, lo, len, st);
					k->k.finalize(&a, 0, 0, st);
					cr_expect(x[0] == -INFINITY, "mean %zu, len %d: row 0 from %d leaves %g, not -inf", m, len,
						  lo, x[0]);
				}
				rundata_free(d[0]);
				rundata_free(d[1]);
			}
		}
		llvm_kernel_free(k);
		spec_carrier_free(c);
	}
	pools_close(p, 2);
}

/* A scan's outputs past 64 MiB stream out with non-temporal stores after
 * a masked vector up to their 64-byte alignment (scan_lanes): rows of odd
 * length start anywhere, and so do the chunks of split rows.  Each
 * position's running maximum and its first position against a plain
 * loop (the full check is too slow here). */
Test(cpu, streamed_scan_outputs, .timeout = 120)
{
	Carrier *c = text_ok("carrier: high_so_far\nelement: {x: f32}\nstate: {hi: f32, at: i32}\n"
			     "identity: {hi: -inf, at: -1}\nlift: {hi: x, at: j}\nmerge:\n"
			     "  hi: where(b.hi > a.hi, b.hi, a.hi)\n  at: where(b.hi > a.hi, b.at, a.at)\n"
			     "finalize: {hi: hi, at: at}\ntemplate: scan\n");
	LlvmKernel *k = compiled(c, &(LlvmOpts){.lanes = 16});
	cr_assert_eq(k->scan_lanes, 16);
	cr_assert(k->k.fence, "a scan in 16 lanes may stream, and needs the fence");
	RtPool *p;
	char msg[200];
	cr_assert_eq(rt_pool_open(&p, 2, msg, sizeof msg), 0, "%s", msg);
	enum { R = 32, N = 262147 };
	for (int split = 0; split < 4; split += 3) {
		RunData *d = drawn(c, R, N, 12 + split);
		run_kernel(k, d, p, split);
		const float *x = d->elem[0].p, *hi = d->fin[0].p;
		const int32_t *at = d->fin[1].p;
		size_t bad = 0, first = 0;
		for (size_t r = 0; r < R; r++) {
			float m = -INFINITY;
			int32_t w = -1;
			for (size_t j = 0; j < N; j++) {
				size_t q = r * N + j;
				if (x[q] > m)
					m = x[q], w = (int32_t)j;
				if ((hi[q] != m || at[q] != w) && !bad++)
					first = q;
			}
		}
		cr_expect_eq(bad, 0, "split %d: %zu positions wrong, the first %zu: %g at %d", split, bad, first,
			     bad ? hi[first] : 0.0, bad ? at[first] : 0);
		rundata_free(d);
	}
	rt_pool_close(p);
	llvm_kernel_free(k);
	spec_carrier_free(c);
}

/* Every task that scans (whole rows, chunks of split rows) ends with the
 * fence after the non-temporal stores. */
Test(cpu, scan_tasks_end_with_the_fence, .timeout = 60)
{
	Carrier *c = load_ok("bench/carriers/running_max.yaml");
	LlvmKernel *k = compiled(c, &(LlvmOpts){.lanes = 16});
	cr_assert(k->k.fence);
	k->k.fence = count_fence;
	static const int shapes[][3] = {{64, 256, 0}, {3, 5000, 3}, {7, 1000, 0}};
	RtPool *p;
	char msg[200];
	cr_assert_eq(rt_pool_open(&p, 3, msg, sizeof msg), 0, "%s", msg);
	for (int s = 0; s < 3; s++) {
		RunData *d = drawn(c, shapes[s][0], shapes[s][1], 70 + s);
		atomic_store(&fences, 0);
		run_kernel(k, d, p, shapes[s][2]);
		cr_expect_gt(atomic_load(&fences), 0, "rows %d len %d split %d", shapes[s][0], shapes[s][1], shapes[s][2]);
		if (shapes[s][2])
			cr_expect_geq(atomic_load(&fences), shapes[s][0] * shapes[s][2], "a fence per chunk");
		expect_ok(d, "running_max with a counted fence");
		rundata_free(d);
	}
	rt_pool_close(p);
	llvm_kernel_free(k);
	spec_carrier_free(c);
}

/* Without a claim, a merge that is itself with a and b swapped takes the
 * commutative loops (sums, products, max, min, softmax's rescale, topk
 * lists, commutative operands in either order); one that commutes only
 * in value (a select on a comparison of the sides) keeps ordered lanes,
 * and so does a merge of the sides in different roles. */
Test(cpu, merges_that_commute_by_their_form)
{
	static const struct {
		const char *merge;
		int commutes;
	} cases[] = {
		{"  s: a.s + b.s\n  t: max(a.t, b.t)\n", 1},
		{"  s: b.s * a.s\n  t: min(b.t, a.t) + (a.t * b.t)\n", 1},
		{"  s: a.s + b.s\n  t: where(a.t > b.t, a.t, b.t)\n", 0},
		{"  s: a.s + b.s\n  t: a.t - b.t + a.t * 0\n", 0},
		{"  s: a.s * b.t + b.s * a.t\n  t: a.t * b.t\n", 1},
		{"  s: a.s * b.t + b.s\n  t: a.t * b.t\n", 0},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char text[600];
		snprintf(text, sizeof text,
			 "carrier: form\nelement: {x: f32}\nstate: {s: f32, t: f32}\n"
			 "identity: {s: 0, t: 0}\nlift: {s: x, t: x}\nmerge:\n%s",
			 cases[i].merge);
		/* only the form is read here: whether each merge is lawful is the checker's matter */
		Carrier *c = text_ok(text);
		LlvmKernel *k = compiled(c, NULL);
		if (cases[i].commutes)
			cr_expect_gt(k->lanes, 1, "%s: commutes by its form", cases[i].merge);
		else
			cr_expect_eq(k->lanes, 1, "%s: does not", cases[i].merge);
		llvm_kernel_free(k);
		spec_carrier_free(c);
	}
}

/* c's finalize outputs on the cpu device (kernel compiled with o) and on
 * the interpreter, from the same drawn inputs: integers bit for bit. */
static void ints_as_interp(Carrier *c, const LlvmOpts *o, RunData *d[2], const char *what)
{
	LlvmKernel *k = compiled(c, o);
	RtPool *pool;
	pools_open(&pool, 1);
	run_kernel(k, d[0], pool, 0);
	char msg[200];
	cr_assert_eq(run_device_find("interp")->run(d[1], &(RunOpts){.threads = 1}, msg, sizeof msg), 0, "%s", msg);
	for (int f = 0; f < c->nfinal; f++) {
		Buffer *x = &d[0]->fin[f], *y = &d[1]->fin[f];
		cr_assert(x->kind == TY_I32 || x->kind == TY_I64);
		cr_expect(!memcmp(x->p, y->p, x->n * x->width * run_kind_size(x->kind)), "%s: %s differs from the interpreter",
			  what, c->finalize[f].name);
	}
	pools_close(&pool, 1);
	llvm_kernel_free(k);
}

/* dot of integer vectors multiplies and adds in integers (the IR did not
 * verify with fmul on i32): in the lift, in lanes and in one lane, in the
 * finalize, of i64, and of a vector with a broadcast scalar. */
Test(cpu, integer_dot_products_as_interp)
{
	Carrier *c = text_ok("carrier: idot\nelement: {c: 'i32[3]', e: 'i64[4]'}\n"
			     "state: {t: i32, cnt: 'i32[3]', u: i64}\nidentity: {t: 0, cnt: 0, u: 0}\n"
			     "lift: {t: 'dot(c, c)', cnt: c, u: 'dot(e, 1) + dot(e, e)'}\n"
			     "merge: {t: a.t + b.t, cnt: a.cnt + b.cnt, u: a.u + b.u}\n"
			     "finalize: {t: t, q: 'dot(cnt, cnt)', u: u}\nlaws: [commutative]\n");
	static const LlvmOpts shapes[] = {{.lanes = 1}, {.lanes = 8}, {0}};
	for (int s = 0; s < 3; s++)
		for (int len = 1; len < 1000; len += 333) {
			RunData *d[2] = {drawn(c, 3, len, 9 + len), drawn(c, 3, len, 9 + len)};
			char what[64];
			snprintf(what, sizeof what, "lanes %d, len %d", shapes[s].lanes, len);
			ints_as_interp(c, &shapes[s], d, what);
			rundata_free(d[0]);
			rundata_free(d[1]);
		}
	spec_carrier_free(c);
	/* the products and their sum wrap in 32 bits, as + and * of i32 do:
	 * 2 * 50000^2 + 1 = 5000000001 is 705032705 */
	c = text_ok("carrier: idot\nelement: {c: 'i32[3]'}\nstate: {t: i32}\nidentity: {t: 0}\n"
		    "lift: {t: 'dot(c, c)'}\nmerge: {t: a.t + b.t}\nlaws: [commutative]\n");
	RunData *d = drawn(c, 1, 1, 1);
	int32_t *x = d->elem[0].p;
	x[0] = x[1] = 50000, x[2] = 1;
	char msg[200];
	cr_assert_eq(dev_cpu.run(d, &(RunOpts){.threads = 1}, msg, sizeof msg), 0, "%s", msg);
	cr_expect_eq(((int32_t *)d->fin[0].p)[0], 705032705);
	rundata_free(d);
	spec_carrier_free(c);
}

/* Sums of exps and exp2s whose terms, and some sums, are subnormal (under
 * 2^-126): rows of 1000 equal values, against the float64 reference, in
 * lanes as the host gives them (the AVX-512 form among them), in 8 and in
 * one.  The log of each sum is finite, -88.09, -93.09, -80.59 for exp
 * (the last sum normal, its terms not), within what 1.5 ulps of a term
 * give; they were -inf when exp gave 0 under 2^-126. */
Test(cpu, sums_of_subnormal_exps_meet_the_reference)
{
	static const struct {
		const char *fn, *log;
		double (*f)(double), (*logf)(double);
		float x[4];
	} cases[] = {
		{"exp", "log", exp, log, {-95.0f, -100.0f, -87.5f, -97.25f}},
		{"exp2", "log2", exp2, log2, {-140.0f, -149.0f, -127.5f, -135.25f}},
	};
	static const LlvmOpts shapes[] = {{0}, {.lanes = 8}, {.lanes = 1}};
	for (int i = 0; i < 2; i++) {
		char text[600];
		snprintf(text, sizeof text,
			 "carrier: sumexp\nelement: {x: f32}\nstate: {s: f32}\nidentity: {s: 0}\n"
			 "lift: {s: %s(x)}\nmerge: {s: a.s + b.s}\nfinalize: {lse: %s(s), s: s}\n"
			 "reference:\n  s: sum(%s(x))\n  lse: %s(sum(%s(x)))\nlaws: [commutative]\n",
			 cases[i].fn, cases[i].log, cases[i].fn, cases[i].log, cases[i].fn);
		Carrier *c = text_ok(text);
		RtPool *pool;
		pools_open(&pool, 1);
		for (int s = 0; s < 3; s++) {
			LlvmKernel *k = compiled(c, &shapes[s]);
			RunData *d = drawn(c, 4, 1000, 1);
			float *x = d->elem[0].p;
			for (int r = 0; r < 4; r++)
				for (int j = 0; j < 1000; j++)
					x[r * 1000 + j] = cases[i].x[r];
			run_kernel(k, d, pool, 0);
			char what[64];
			snprintf(what, sizeof what, "%s, lanes %d", cases[i].fn, k->lanes);
			expect_ok(d, what);
			for (int r = 0; r < 4; r++) {
				double term = cases[i].f(cases[i].x[r]), want = cases[i].logf(1000 * term);
				double tol = 1.5 * 0x1p-149 / term + 2e-4;
				float lse = ((float *)d->fin[0].p)[r];
				cr_expect(fabs(lse - want) <= tol, "%s: row %d: %s(sum) %g, not %g", what, r, cases[i].log, lse, want);
			}
			rundata_free(d);
			llvm_kernel_free(k);
		}
		pools_close(&pool, 1);
		spec_carrier_free(c);
	}
}

/* The top of --config lanes (1..64; powers of two, 48 is 32): a top-2 list
 * beside an i32 count (its insertions take a lane index from a 64-bit
 * mask there), a scan of five fields and selective_scan (a scan whose
 * reduce folds in ordered lanes), each compiled within seconds (at 64
 * the scan's shuffles kept LLVM's instruction selection over 10 minutes,
 * selective_scan's 17 s; SHUFFLED_LANES_MAX in llvm_kern.c), and their
 * results the reference's. */
Test(cpu, widest_lanes_compile_in_seconds, .timeout = 300)
{
	Carrier *cs[] = {
		text_ok("carrier: topk_n\nparams: {lo: f32}\nelement: {x: f32}\n"
			"state: {top: 'f32[2]', idx: 'i32[2]', n: i32}\nidentity: {top: -inf, idx: -1, n: 0}\n"
			"lift: {top: 'topk(x, j, 2)', idx: 'topk_idx(x, j, 2)', n: 1}\n"
			"merge:\n  top: topk(a.top, a.idx, b.top, b.idx)\n  idx: topk_idx(a.top, a.idx, b.top, b.idx)\n"
			"  n: a.n + b.n\nlaws: [commutative]\n"),
		text_ok("carrier: runs_scan\nelement: {x: f32}\nstate: {first: f32, last: f32, runs: i32, n: i32, up: i32}\n"
			"identity: {first: 0, last: 0, runs: 0, n: 0, up: 0}\nlift: {first: x, last: x, runs: 1, n: 1, up: 0}\n"
			"merge:\n  first: where(a.n == 0, b.first, a.first)\n  last: where(b.n == 0, a.last, b.last)\n"
			"  runs: a.runs + b.runs - where(a.n > 0 && b.n > 0 && a.last == b.first, 1, 0)\n  n: a.n + b.n\n"
			"  up: a.up + b.up + where(a.n > 0 && b.n > 0 && a.last < b.first, 1, 0)\n"
			"finalize: {runs: runs, up: up, last: last}\ntemplate: scan\n"),
		load_ok("specs/selective_scan.yaml"),
	};
	static const int lanes[] = {48, 64};
	setenv("ASSOC_NO_CPU_CACHE", "1", 1); /* each compile's own time, not an object's load */
	RtPool *pool;
	pools_open(&pool, 1);
	for (size_t i = 0; i < sizeof cs / sizeof *cs; i++) {
		Carrier *c = cs[i];
		for (int l = 0; l < 2; l++) {
			struct timespec t0, t1;
			clock_gettime(CLOCK_MONOTONIC, &t0);
			LlvmKernel *k = compiled(c, &(LlvmOpts){.lanes = lanes[l]});
			clock_gettime(CLOCK_MONOTONIC, &t1);
			double s = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
			cr_log_info("%s, lanes=%d: compiled in %.2f s", c->name, lanes[l], s);
			cr_expect_lt(s, 10, "%s, lanes=%d: %.1f s to compile", c->name, lanes[l], s);
			for (int len = 1; len < 300; len += 149) {
				RunData *d = drawn(c, 3, len, 4 + len);
				run_kernel(k, d, pool, 0);
				char what[80];
				snprintf(what, sizeof what, "%s, lanes=%d, len %d", c->name, lanes[l], len);
				expect_ok(d, what);
				rundata_free(d);
			}
			llvm_kernel_free(k);
		}
		spec_carrier_free(c);
	}
	pools_close(&pool, 1);
}

/* Decoding with keys as the lanes (llvm_keys.c): one row a head, and the
 * query heads of a key/value head as one group of up to 7 rows (8 or
 * more keep rows as lanes where keys have at most 128 components, and
 * take keys as lanes past that: compiled at d = 128 and 256); f16, bf16
 * with a row's own scale, and f32 with keys masked in some tiles and
 * whole tiles masked; keys not a multiple of 16; and (specs/attention.yaml
 * without its mask, whose finalize and reference take infinities) scores
 * of +inf, -inf and NaN, whose tiles fold by the spec's merge -- against
 * the float64 reference, and the same bits from 1 thread and 2. */
Test(cpu, decoding_takes_keys_as_lanes, .timeout = 300)
{
	Define defs[2] = {{"d", "32"}, {"dv", "48"}};
	enum { NC = 4 };
	Carrier *cs[NC] = {
		load_defined("tests/attention/full.yaml", defs, 2),
		load_defined("tests/attention/row_scaled.yaml", defs, 2),
		text_ok("carrier: holes\ndims: {d: 64, dv: 16}\nparams: {scale: f32}\nrow:\n  q: f32[d]\n"
			"column:\n  k: f32[d]\n  v: f32[dv]\nlet:\n  s: dot(q, k) * scale\n"
			"mask: (j < 3 || j > 9) && j != 40 && (j < 150 || j > 700)\n"
			"state:\n  m: f32\n  l: f32\n  o: f32[dv]\nidentity: {m: -inf, l: 0, o: 0}\nlift: {m: s, l: 1, o: v}\n"
			"merge:\n  m: max(a.m, b.m)\n  l: a.l * exp(a.m - m) + b.l * exp(b.m - m)\n"
			"  o: a.o * exp(a.m - m) + b.o * exp(b.m - m)\n"
			"finalize: {out: o / l, lse: m + log(l)}\n"
			"reference:\n  out: sum(exp(s) * v) / sum(exp(s))\n  lse: log(sum(exp(s)))\nlaws: [commutative]\n"),
		text_ok("carrier: special\ndims: {d: 32, dv: 32}\nparams: {scale: f32}\nrow:\n  q: f16[d]\n"
			"column:\n  k: f16[d]\n  v: f16[dv]\nlet:\n  s: dot(q, k) * scale\n"
			"state:\n  m: f32\n  l: f32\n  o: f32[dv]\nidentity: {m: -inf, l: 0, o: 0}\nlift: {m: s, l: 1, o: v}\n"
			"merge:\n  m: max(a.m, b.m)\n  l: a.l * exp(a.m - m) + b.l * exp(b.m - m)\n"
			"  o: a.o * exp(a.m - m) + b.o * exp(b.m - m)\n"
			"finalize:\n  out: o / where(l == 0, 1, l)\n  lse: where(m == inf, m, m + log(l))\n"
			"reference:\n  top: max(s)\n  peak: max(where(s == s, s, -inf))\n"
			"  out: where(top == -inf, 0, sum(exp(s - top) * v) / sum(exp(s - top)))\n"
			"  lse: where(peak == inf, inf, top + log(sum(exp(where(s == top, 0, s - top)))))\n"
			"laws: [commutative]\n"),
	};
	for (int wide = 0; wide < 2; wide++) {
		Define dd[2] = {{"d", wide ? "256" : "128"}, {"dv", wide ? "256" : "128"}};
		Carrier *c = load_defined("tests/attention/full.yaml", dd, 2);
		LlvmKernel *k = compiled(c, &(LlvmOpts){.fit_rows = 8});
		cr_expect_eq(k->keys, wide, "8 rows a group at d = %s: keys as lanes %d", dd[0].value, wide);
		llvm_kernel_free(k);
		spec_carrier_free(c);
	}
	static const int shapes[][4] = {
		/* rows, keys, heads, key/value heads */
		{1, 0, 4, 1}, {1, 1, 32, 8}, {1, 15, 7, 1}, {1, 17, 3, 1}, {1, 100, 4, 4}, {1, 1000, 32, 8}, {2, 333, 6, 2},
		{1, 15, 8, 1}, /* 8 rows a group keep rows as lanes at these widths */
	};
	for (int s = 0; s < NC; s++)
		for (size_t h = 0; h < sizeof shapes / sizeof *shapes; h++) {
			Carrier *c = cs[s];
			const int *x = shapes[h];
			RunData *d[2];
			char msg[300], what[160];
			for (int t = 0; t < 2; t++) {
				d[t] = rundata_new_heads(c, x[0], x[1], x[2], x[3]);
				cr_assert_eq(rundata_draw(d[t], 60 + h, NULL, 0, msg, sizeof msg), 0, "%s", msg);
				if (s == NC - 1 && x[1] >= 100) {
					/* +inf in a key of every key/value head: +inf or -inf
					 * scores, NaN where q is 0; a NaN in the last head's */
					int w = d[t]->col[0].width;
					for (int g = 0; g < x[3]; g++)
						run_buffer_set(&d[t]->col[0], ((size_t)g * x[1] + 20 + g) * w, INFINITY);
					run_buffer_set(&d[t]->col[0], ((size_t)(x[3] - 1) * x[1] + x[1] / 2) * w + 1, NAN);
				}
			}
			int view = cpu_view_rows(d[0]);
			LlvmKernel *k = compiled(c, &(LlvmOpts){.fit_rows = view});
			snprintf(what, sizeof what, "%s, %d rows x %d keys, %d/%d heads", c->name, x[0], x[1], x[2], x[3]);
			int keys = view < 8; /* keys of at most 128 components */
			cr_expect_eq(k->keys, keys, "%s: keys as lanes %d", what, keys);
			if (keys && view >= 2 && view < 16)
				cr_expect_eq(k->rows, view, "%s: a group of %d rows, not %d", what, view, k->rows);
			llvm_kernel_free(k);
			for (int t = 0; t < 2; t++)
				cr_assert_eq(dev_cpu.run(d[t], &(RunOpts){.threads = t + 1}, msg, sizeof msg), 0, "%s", msg);
			expect_ok(d[1], what);
			outputs_same(d, what);
			rundata_free(d[0]);
			rundata_free(d[1]);
		}
	for (int s = 0; s < NC; s++)
		spec_carrier_free(cs[s]);
}

/* Row r of the chain test at position j: ties of both signs everywhere
 * (r 0), all NaN (1), NaN at every 4th and 16th position, where chains
 * and vectors start (2, 3), the largest magnitude at every 64th position
 * with both signs (4), zeros of both signs and infinities (5), drawn (6). */
static float chain_value(int r, int j, uint64_t s)
{
	switch (r) {
	case 0: return (s >> 60) & 1 ? ((s >> 61) & 1 ? -2.0f : 2.0f) : (s >> 62) & 1 ? 1.0f : -1.0f;
	case 1: return NAN;
	case 2: return j % 4 == 0 ? NAN : (s >> 62) & 1 ? -3.0f : 3.0f;
	case 3: return j % 16 == 0 ? NAN : (float)((s >> 40) % 7) - 3.0f;
	case 4: return j % 64 == 0 ? ((s >> 61) & 1 ? -9.0f : 9.0f) : (float)((s >> 40) % 9) - 4.0f;
	case 5: return (s >> 61) == 0 ? INFINITY : (s >> 61) == 1 ? -INFINITY : (s >> 62) & 1 ? -0.0f : 0.0f;
	default: return (float)(int64_t)(s >> 40) / 65536.0f - 128.0f;
	}
}

/* c compiled with o, over rows of chain_value at lengths lens, against
 * the interpreter bit for bit (float32 outputs as numbers), one thread
 * and three with rows split. */
static void chains_meet_the_interpreter(Carrier *c, const LlvmOpts *o, const int *lens, int nlens, RtPool **pool)
{
	enum { ROWS = 7 };
	const Device *interp = run_device_find("interp");
	cr_assert(interp);
	LlvmKernel *k = compiled(c, o);
	cr_assert(k->lift_chains && (k->ordered > 1 || (k->lanes > 1 && k->tile > 1)),
		  "%s, tile %d: chains from a lift (%s)", c->name, k->tile, k->chain_why);
	cr_expect(strstr(k->chain_why, "e+a = a proved") && strstr(k->chain_why, "NaN, inf and -0"), "%s",
		  k->chain_why);
	for (int l = 0; l < nlens; l++) {
		int n = lens[l];
		RunData *d[2] = {drawn(c, ROWS, n, 3), drawn(c, ROWS, n, 3)};
		uint64_t s = 11 + (uint64_t)n;
		for (int r = 0; r < ROWS; r++)
			for (int j = 0; j < n; j++) {
				s = s * 6364136223846793005ull + 1442695040888963407ull;
				((float *)d[0]->elem[0].p)[(size_t)r * n + j] = ((float *)d[1]->elem[0].p)[(size_t)r * n + j] =
					chain_value(r, j, s);
			}
		char msg[200];
		cr_assert_eq(interp->run(d[1], &(RunOpts){.threads = 1}, msg, sizeof msg), 0, "%s", msg);
		for (int run = 0; run < 2; run++) {
			run_kernel(k, d[0], pool[run], run ? 3 : 0);
			for (int f = 0; f < c->nfinal; f++) {
				Buffer *x = &d[0]->fin[f], *y = &d[1]->fin[f];
				int same = x->kind == TY_F32 ? same_floats(x->p, y->p, x->n, 1)
							      : !memcmp(x->p, y->p, x->n * run_kind_size(x->kind));
				cr_assert(same, "%s, tile %d, %d lanes, len %d, %d threads: %s differs from the interpreter",
					  c->name, k->tile, k->lanes, n, run ? 3 : 1, c->finalize[f].name);
			}
		}
		rundata_free(d[0]);
		rundata_free(d[1]);
	}
	llvm_kernel_free(k);
}

/* Where the identity leaves every lift as it is, a tile's chains start at
 * their first lift (one merge a vector, not 1.25): an argmax of |x| with
 * its value, NaN masked.  Against the interpreter, bit for bit, at every
 * length to 70 and around 128, 256 and 1024 (past and short of a vector,
 * a tile, the 4 streams), on rows of ties, NaN at the chains' starts, all
 * NaN, zeros and infinities, in tiles of 4, 8 and 16 (chains folded by a
 * tree) and 8 lanes, one thread and three with rows split; and the
 * ordered lanes' second chain of a run (a first position above a
 * threshold), around their blocks of 256 and 2048.  A max that passes
 * NaN on (e+a is not a at a NaN) and a sum (0 + -0 is 0) keep their
 * chains at the identity, and say why. */
Test(cpu, chains_start_at_a_lift_where_the_identity_keeps_it, .timeout = 120)
{
	static const LlvmOpts opts[] = {{0}, {.tile = 8}, {.tile = 16}, {.lanes = 8}};
	static const int ordered[] = {0, 1, 17, 255, 256, 257, 2047, 2048, 2049, 4099, 8193};
	int lens[81];
	static const int longer[] = {127, 128, 129, 255, 256, 257, 1023, 1024, 1025, 4099};
	for (int l = 0; l < 81; l++)
		lens[l] = l <= 70 ? l : longer[l - 71];
	RtPool *pool[2];
	char msg[200];
	cr_assert_eq(rt_pool_open(&pool[0], 1, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(rt_pool_open(&pool[1], 3, msg, sizeof msg), 0, "%s", msg);
	Carrier *c = load_ok("tests/check/argmax_abs_value.yaml");
	for (size_t o = 0; o < sizeof opts / sizeof *opts; o++)
		chains_meet_the_interpreter(c, &opts[o], lens, 81, pool);
	spec_carrier_free(c);
	c = text_ok("carrier: first_over\nparams: {t: f32}\nelement: {x: f32}\nstate: {at: i32, n: i32}\n"
		    "identity: {at: -1, n: 0}\nlift: {at: 'where(x > t, j, -1)', n: 'where(x > t, 1, 0)'}\n"
		    "merge:\n  at: where(a.at >= 0, a.at, b.at)\n  n: a.n + b.n\n");
	chains_meet_the_interpreter(c, NULL, ordered, sizeof ordered / sizeof *ordered, pool);
	spec_carrier_free(c);
	rt_pool_close(pool[0]);
	rt_pool_close(pool[1]);
	static const char *kept[][2] = {{"specs/max.yaml", "m is -inf as e+a but NaN as a"},
					{"specs/sum.yaml", "s is 0 as e+a but -0 as a"}};
	for (int t = 0; t < 2; t++) {
		c = load_ok(kept[t][0]);
		LlvmKernel *k = compiled(c, NULL);
		cr_expect(k->lanes > 1 && k->tile > 1 && !k->lift_chains, "%s: chains from the identity", kept[t][0]);
		cr_expect(strstr(k->chain_why, kept[t][1]), "%s: %s", kept[t][0], k->chain_why);
		llvm_kernel_free(k);
		spec_carrier_free(c);
	}
}
