/* test_rows.c: the row templates' variants.  Their text (tiles of several
 * loads, un, and the transported fold, tf) reads back as written, and
 * the texts from before them read the same.  A carrier whose certificate
 * is proved folds its tiles in the certificate's coordinates (tf=1),
 * shifted by the tile's largest element, with no division an element in
 * Welford's loop: Welford at mean 1e4 and std 1, where the unshifted
 * power sums lose the variance to cancellation, and online softmax and
 * log-sum-exp at the same offset and at spreads past exp's range, stay
 * within the float64 reference's tolerance on the emulator; tiles holding
 * infinities fold the plain way; tiles of several loads an accumulator
 * and both together give the reference's results at odd shapes (no
 * element, fewer than a warp, not a multiple of a tile, one row, several
 * splits) with f32 and bf16 inputs.  A carrier without a proved
 * certificate has no transported fold, and a configuration that asks for
 * one says why.  The tuning space holds the new variants, which assemble
 * for sm_80 and sm_90a without spills, and emit --explain says what each
 * variant does. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/cuda/cuda.h"
#include "compiler/cuda/nvrtc.h"
#include "compiler/devices/emu.h"
#include "compiler/devices/run.h"
#include "cudatest.h"
#include "emutest.h"
#include "testutil.h"

/* N(mean, sd) by Box-Muller from a fixed LCG: the same rows on every run. */
static double normal(uint64_t *s, double mean, double sd)
{
	double u[2];
	for (int k = 0; k < 2; k++) {
		*s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
		u[k] = ((*s >> 11) + 0.5) / 9007199254740992.0;
	}
	return mean + sd * sqrt(-2 * log(u[0])) * cos(6.283185307179586 * u[1]);
}

/* Every element of d's first input N(mean, sd); columns (layer norm's
 * gamma and beta) and params as rundata_draw gave them. */
static void fill(RunData *d, double mean, double sd, uint64_t seed)
{
	char msg[512];
	cr_assert_eq(rundata_draw(d, seed, NULL, 0, msg, sizeof msg), 0, "%s", msg);
	for (size_t k = 0; k < d->elem[0].n; k++)
		run_buffer_set(&d->elem[0], k, normal(&seed, mean, sd));
}


/* un and tf read back as written; a text without them (as the tuning
 * cache holds from before them) reads and writes the same as ever. */
Test(rows, variant_text_of_tiles_and_transport)
{
	Variant v, w;
	char msg[512], buf[256];
	cr_assert_eq(variant_parse("rowmap:nt=256,acc=2,vec=4,warp=0,items=16", &v, msg, sizeof msg), 0, "%s", msg);
	cr_expect(v.un == 1 && v.tf == 0, "defaults: un %d, tf %d", v.un, v.tf);
	variant_str(&v, buf, sizeof buf);
	cr_expect_str_eq(buf, "rowmap:nt=256,acc=2,vec=4,warp=0,items=16");
	cr_assert_eq(variant_parse("splitk:nt=64,acc=2,vec=4,un=4,tf=1,split=3", &v, msg, sizeof msg), 0, "%s", msg);
	variant_str(&v, buf, sizeof buf);
	cr_expect_str_eq(buf, "splitk:nt=64,acc=2,vec=4,warp=0,items=0,un=4,tf=1,split=3");
	cr_assert_eq(variant_parse(buf, &w, msg, sizeof msg), 0, "%s", msg);
	cr_expect(!memcmp(&v, &w, sizeof v), "%s reads back as itself", buf);
	static const char *const bad[] = {"rowreduce:un=3", "rowreduce:un=0", "rowmap:tf=2", "scan:un=2", "scan:tf=1",
					  "attention:un=2", "attention:tf=1"};
	for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
		cr_expect_eq(variant_parse(bad[k], &v, msg, sizeof msg), -1, "%s", bad[k]);
		cr_expect(strstr(msg, k < 3 ? "un 1, 2 or 4" : "unknown key"), "%s: %s", bad[k], msg);
	}
}

Test(rows, bundled_certificates_transport_and_others_do_not)
{
	static const struct {
		const char *spec;
		int tf;
	} want[] = {{"specs/welford.yaml", 1},
		    {"specs/online_softmax.yaml", 1},
		    {"specs/logsumexp.yaml", 1},
		    {"specs/layer_norm.yaml", 1},
		    {"specs/sum.yaml", 0},
		    {"specs/cross_entropy.yaml", 0}};
	for (size_t k = 0; k < sizeof want / sizeof *want; k++) {
		Carrier *c = load_ok(want[k].spec);
		CudaModule m;
		char msg[1024];
		cr_assert_eq(cuda_module_space(c, &m, msg, sizeof msg), 0, "%s", msg);
		cr_expect_eq(m.tf, want[k].tf, "%s: transported fold %d (%s)", want[k].spec, m.tf, m.tf_why);
		int with = 0;
		for (int v = 0; v < m.nvar; v++)
			with += m.var[v].tf;
		cr_expect_eq(with > 0, want[k].tf, "%s: the tuning space has %d variants with tf=1", want[k].spec, with);
		if (want[k].tf)
			cr_expect(strstr(m.src, "#define ASC_TRANSPORT 1"), "%s: tile_fold in the module", want[k].spec);
		for (int v = 0; v < m.nvar; v++) { /* emit --explain's line */
			char why[768];
			cuda_variant_explain(&m, v, why, sizeof why);
			cr_expect(strstr(why, m.var[v].tf ? "folded in the certificate's coordinates" : "merged into its accumulator"),
				  "%s: %s", want[k].spec, why);
			if (m.var[v].un > 1)
				cr_expect(strstr(why, m.var[v].vec == 4 ? "16-byte loads in flight" : "element loads in flight"),
					  "%s: %s", want[k].spec, why);
		}
		cuda_module_free(&m);
		spec_carrier_free(c);
	}
	/* asked for where there is none: refused, with the reason */
	Carrier *c = load_ok("specs/sum.yaml");
	CudaModule m;
	char msg[1024];
	cr_expect_eq(cuda_module(c, "rowreduce:nt=128,acc=2,vec=4,tf=1", &m, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "tf=1") && strstr(msg, "no certificate"), "%s", msg);
	spec_carrier_free(c);
	/* and where it names a variant of the default module but for tf=1
	 * (nt=256,acc=4 is rowreduce's default): refused too, not run as
	 * the plain variant with tf dropped */
	char out[4096];
	static const char *const cfgs[] = {"rowreduce:nt=256,acc=4,vec=4,warp=0,items=0,tf=1",
					   "rowreduce:nt=128,acc=2,vec=4,warp=1,items=0,tf=1",
					   "splitk:nt=256,acc=2,vec=4,warp=0,items=0,tf=1"};
	for (int k = 0; k < 3; k++) {
		char cmd[512];
		snprintf(cmd, sizeof cmd, "build/asan/assoc run specs/sum.yaml --device emu --rows 2 --len 64 --config %s",
			 cfgs[k]);
		cr_expect_eq(sh(cmd, out, sizeof out, 1), 2, "%s: %s", cmd, out);
		cr_expect(strstr(out, "asks for the transported fold (tf=1), which sum cannot have: no certificate"), "%s: %s",
			  cmd, out);
	}
}

/* Welford's transported element loop divides nowhere (the merge's
 * division comes once a tile, in back and the merge of the tile), and
 * online softmax's takes one exp an element where its merge takes two. */
Test(rows, transported_element_loop_is_cheaper)
{
	const char *specs[] = {"specs/welford.yaml", "specs/online_softmax.yaml"};
	for (int k = 0; k < 2; k++) {
		Carrier *c = load_ok(specs[k]);
		CudaModule m;
		char msg[1024];
		cr_assert_eq(cuda_module(c, NULL, &m, msg, sizeof msg), 0, "%s", msg);
		const char *f = strstr(m.hooks, "ASC_DEV bool tile_fold");
		cr_assert(f, "%s: tile_fold", specs[k]);
		const char *loop = strstr(f, "E.e0 -= hi;"), *end = loop ? strstr(loop, "State r;") : NULL;
		cr_assert(loop && end, "%s: tile_fold's element loop", specs[k]);
		int divs = 0, exps = 0;
		for (const char *p = loop; p < end; p++)
			divs += *p == '/', exps += !strncmp(p, "exp", 3);
		cr_expect_eq(divs, 0, "%s: %d divisions an element", specs[k], divs);
		cr_expect_eq(exps, k == 1, "%s: %d exps an element", specs[k], exps);
		cuda_module_free(&m);
		spec_carrier_free(c);
	}
}

/* A certificate the prover cannot show (a merge that is a sum, a transport
 * into max): no transported fold, whatever the spec claims. */
Test(rows, unproved_certificate_gives_no_transport)
{
	Carrier *c = text_ok("carrier: s\nelement: {x: f32}\nstate: {s: f32}\nidentity: {s: 0}\nlift: {s: x}\n"
			     "merge: {s: a.s + b.s}\nfinalize: {t: s}\nreference: {t: sum(x)}\nlaws: [commutative]\n"
			     "certificate:\n  into: {u: s}\n  monoid: {u: max}\n  back: {s: u}\n");
	CudaModule m;
	char msg[1024];
	cr_assert_eq(cuda_module(c, NULL, &m, msg, sizeof msg), 0, "%s", msg);
	cr_expect_eq(m.tf, 0, "transported without a proof: %s", m.tf_why);
	cr_expect(strstr(m.src, "#define ASC_TRANSPORT 0"), "the module's tile_fold is the stub");
	cuda_module_free(&m);
	spec_carrier_free(c);
}

/* Welford at mean 1e4, std 1: (n, s1, s2) unshifted would leave the
 * variance to s2 - s1^2 / n, 1e8 - 1e8 in float32; shifted by the tile's
 * largest element it holds the reference's tolerance, in the 16-byte loop
 * (len a multiple of 4) and the scalar one, a row a block, a warp, and
 * split. */
Test(rows, transported_welford_holds_at_mean_1e4, .timeout = 300)
{
	static const struct {
		const char *cfg;
		int split;
	} runs[] = {{"rowreduce:nt=128,acc=2,vec=4,tf=1", 0},
		    {"rowreduce:nt=128,acc=2,vec=4,un=2,tf=1", 0},
		    {"rowreduce:nt=64,acc=1,vec=1,tf=1", 0},
		    {"rowreduce:nt=128,acc=2,vec=4,warp=1,tf=1", 0},
		    {"splitk:nt=64,acc=2,vec=4,un=4,tf=1", 3}};
	Carrier *c = load_ok("specs/welford.yaml");
	int lens[] = {4096, 4099};
	for (int l = 0; l < 2; l++) {
		RunData *d = rundata_new(c, 3, lens[l]);
		fill(d, 1e4, 1, 11 + l);
		for (size_t k = 0; k < sizeof runs / sizeof *runs; k++)
			emu_expect_ref(d, "welford", (RunOpts){.config = runs[k].cfg, .split = runs[k].split}, NULL);
		rundata_free(d);
	}
	spec_carrier_free(c);
}

/* Online softmax and log-sum-exp: at mean 1e4 (exp(x) itself overflows)
 * and at std 60, where a tile's elements lie further apart than exp's
 * range: shifted by the largest, no term overflows and none that matters
 * underflows. */
Test(rows, transported_softmax_and_logsumexp_hold, .timeout = 300)
{
	static const struct {
		const char *spec, *cfg;
		int split;
	} runs[] = {{"specs/online_softmax.yaml", "rowmap:nt=128,acc=2,vec=4,tf=1", 0},
		    {"specs/online_softmax.yaml", "rowmap:nt=256,acc=2,vec=4,items=16,un=2,tf=1", 0},
		    {"specs/online_softmax.yaml", "splitk:nt=64,acc=2,vec=4,tf=1", 4},
		    {"specs/logsumexp.yaml", "rowreduce:nt=256,acc=4,vec=4,un=2,tf=1", 0},
		    {"specs/logsumexp.yaml", "rowreduce:nt=64,acc=1,vec=1,tf=1", 0}};
	double sds[][2] = {{1e4, 1}, {0, 60}};
	for (size_t k = 0; k < sizeof runs / sizeof *runs; k++) {
		Carrier *c = load_ok(runs[k].spec);
		for (int s = 0; s < 2; s++) {
			RunData *d = rundata_new(c, 2, 2051 + 2 * s - 1); /* 2050: not the 16-byte loop; 2052: it */
			fill(d, sds[s][0], sds[s][1], 21 + s);
			emu_expect_ref(d, runs[k].spec, (RunOpts){.config = runs[k].cfg, .split = runs[k].split}, NULL);
			rundata_free(d);
		}
		spec_carrier_free(c);
	}
}

/* A carrier with no certificate, its fields kept relative to its maximum
 * (tests/rows/softmax_entropy.yaml), folds transported by a certificate
 * derived from the maximum (transport_frame, proved): tf=1 variants in the
 * tuning space, meeting the reference on the emulator at odd lengths (the
 * 16-byte loop and the scalar one), a warp a row, split, and at mean 1e4
 * (e^x past float32). */
Test(rows, derived_certificate_transports, .timeout = 300)
{
	Carrier *c = load_ok("tests/rows/softmax_entropy.yaml");
	CudaModule m;
	char msg[1024];
	cr_assert_eq(cuda_module_space(c, &m, msg, sizeof msg), 0, "%s", msg);
	cr_expect_eq(m.tf, 1, "%s", m.tf_why);
	cr_expect(strstr(m.tf_why, "derived from its maximum"), "%s", m.tf_why);
	cr_expect(strstr(m.src, "#define ASC_TRANSPORT 1"), "tile_fold in the module");
	cuda_module_free(&m);
	static const struct {
		const char *cfg;
		int split;
	} runs[] = {{"rowreduce:nt=256,acc=4,vec=4,un=1,tf=1", 0},
		    {"rowreduce:nt=128,acc=2,vec=4,warp=1,un=1,tf=1", 0},
		    {"rowreduce:nt=64,acc=1,vec=1,tf=1", 0},
		    {"splitk:nt=256,acc=2,vec=4,un=2,tf=1", 3}};
	double at[][2] = {{0, 1}, {1e4, 1}};
	int lens[] = {33, 4099, 4100};
	for (int s = 0; s < 2; s++)
		for (int l = 0; l < 3; l++) {
			RunData *d = rundata_new(c, 3, lens[l]);
			fill(d, at[s][0], at[s][1], 41 + l);
			for (size_t k = 0; k < sizeof runs / sizeof *runs; k++)
				emu_expect_ref(d, "softmax_entropy", (RunOpts){.config = runs[k].cfg, .split = runs[k].split}, NULL);
			rundata_free(d);
		}
	spec_carrier_free(c);
	/* a field merged by a max of rescaled values: not proved, none */
	c = load_ok("tests/rows/softmax_top_weight.yaml");
	cr_assert_eq(cuda_module_space(c, &m, msg, sizeof msg), 0, "%s", msg);
	cr_expect_eq(m.tf, 0, "%s", m.tf_why);
	cr_expect(strstr(m.tf_why, "derived from its maximum") && strstr(m.tf_why, "not proved"), "%s", m.tf_why);
	cuda_module_free(&m);
	spec_carrier_free(c);
}

/* A tile holding an infinity or a NaN folds the plain way: the results are
 * the reference's (NaN where it is NaN). */
Test(rows, tiles_with_infinities_fold_the_plain_way, .timeout = 120)
{
	const char *specs[] = {"specs/welford.yaml", "specs/logsumexp.yaml"};
	for (int s = 0; s < 2; s++) {
		Carrier *c = load_ok(specs[s]);
		RunData *d = rundata_new(c, 4, 1024);
		fill(d, 0, 1, 31);
		run_buffer_set(&d->elem[0], 5, INFINITY);             /* row 0 */
		run_buffer_set(&d->elem[0], 1024 + 700, -INFINITY);   /* row 1 */
		run_buffer_set(&d->elem[0], 2048 + 3, NAN);           /* row 2 */
		const char *cfg = s ? "rowreduce:nt=128,acc=2,vec=4,tf=1" : "rowreduce:nt=64,acc=2,vec=4,un=2,tf=1";
		emu_expect_ref(d, specs[s], (RunOpts){.config = cfg}, NULL);
		rundata_free(d);
		spec_carrier_free(c);
	}
}

/* Every row template with tiles of several loads (un) and the transported
 * fold, at odd shapes: no element, fewer than a warp, a few past a tile,
 * not a multiple of 4, one row; f32 and bf16 inputs (layer norm, and
 * Welford read from bf16); drawn by every family of `run`. */
Test(rows, tiles_at_odd_shapes, .timeout = 600)
{
	static const char welford_bf16[] =
		WELFORD_BF16_SPEC
		"certificate:\n  into: {n: n, s1: n * mean, s2: m2 + n * mean^2}\n  monoid: {n: add, s1: add, s2: add}\n"
		"  back:\n    n: n\n    mean: where(n == 0, 0, s1 / n)\n    m2: where(n == 0, 0, s2 - s1^2 / n)\n";
	static const struct {
		const char *spec, *cfg[3];
	} runs[] = {
		{"specs/logsumexp.yaml", {"rowreduce:nt=128,acc=2,vec=4,un=4", "rowreduce:nt=64,acc=2,vec=4,warp=1,un=2,tf=1",
					  "splitk:nt=64,acc=2,vec=4,un=2,tf=1"}},
		{"specs/online_softmax.yaml", {"rowmap:nt=64,acc=2,vec=4,un=4,tf=1", "rowmap:nt=256,acc=2,vec=4,items=16,un=2",
					       "splitk:nt=64,acc=2,vec=4,un=4"}},
		{"specs/layer_norm.yaml", {"rowmap:nt=64,acc=2,vec=4,un=2,tf=1", "rowmap:nt=256,acc=2,vec=4,items=16,un=4",
					   "splitk:nt=64,acc=1,vec=4,un=2,tf=1"}},
		{NULL, {"rowreduce:nt=64,acc=2,vec=4,un=2,tf=1", "rowreduce:nt=128,acc=1,vec=1,warp=1,tf=1",
			"splitk:nt=64,acc=2,vec=4,un=4,tf=1"}},
	};
	static const int shapes[][2] = {{3, 0}, {1, 7}, {5, 33}, {2, 1030}, {1, 2052}};
	for (size_t k = 0; k < sizeof runs / sizeof *runs; k++) {
		Carrier *c = runs[k].spec ? load_ok(runs[k].spec) : text_ok(welford_bf16);
		const char *what = runs[k].spec ? runs[k].spec : "welford (bf16)";
		for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
			RunData *d = rundata_new(c, shapes[s][0], shapes[s][1]);
			char msg[512];
			cr_assert_eq(rundata_draw(d, 41 + s, NULL, 0, msg, sizeof msg), 0, "%s", msg);
			for (int v = 0; v < 3; v++) {
				int split = strncmp(runs[k].cfg[v], "splitk", 6) ? 0 : 3;
				emu_expect_ref(d, what, (RunOpts){.config = runs[k].cfg[v], .split = split}, NULL);
			}
			rundata_free(d);
		}
		spec_carrier_free(c);
	}
}

/* The 16-byte groups of rows of len cut into chunks of chunk positions:
 * each chunk's groups start past a head that reaches a position whose
 * index i * len + j in the buffers is a multiple of 4 (templates/blocks.cuh,
 * vec_head), and end before a tail of fewer than 4. */
static long vec_groups(int rows, int len, int chunk)
{
	long g = 0;
	for (int i = 0; i < rows; i++)
		for (int lo = 0; lo < len; lo += chunk) {
			int hi = len - lo > chunk ? lo + chunk : len;
			int h = (int)((4 - ((long)i * len + lo) % 4) % 4);
			h = h < hi - lo ? h : hi - lo;
			g += (hi - lo - h) / 4;
		}
	return g;
}

/* Rows of every length take the 16-byte loop where the carrier commutes:
 * the emulator counts one vector load of each element input a group
 * (every group of every row, rows 1 and 2 starting off 16 bytes at odd
 * lengths), twice where the map pass reads the row again, and every
 * output is the float64 reference's: lengths of every phase, f32 and
 * bf16 inputs and both together, maps kept on chip and read again, a
 * block and a warp a row, split rows whose chunks start at odd
 * positions.  An ordered carrier keeps its segments, by element. */
Test(rows, rows_of_any_length_load_16_bytes, .timeout = 900)
{
	static const char welford_bf16[] = WELFORD_BF16_SPEC, softmax_mixed[] = SOFTMAX_MIXED_SPEC;
	static const char ordered_sum[] = FIRST_SUM_SPEC;
	static const struct {
		const char *spec, *text, *cfg;
		int passes, maxlen; /* vector loads a group of one input; the longest row it keeps on chip */
	} runs[] = {
		{"specs/online_softmax.yaml", NULL, "rowmap:nt=128,acc=2,vec=4,items=64", 1, 8192},
		{"specs/online_softmax.yaml", NULL, "rowmap:nt=64,acc=2,vec=4,warp=1,items=64,un=2,tf=1", 1, 2048},
		{"specs/online_softmax.yaml", NULL, "rowmap:nt=64,acc=2,vec=4,un=2", 2, 0},
		{"specs/online_softmax.yaml", NULL, "rowmap:nt=64,acc=1,vec=4,warp=1", 2, 0},
		{"specs/online_softmax.yaml", NULL, "splitk:nt=64,acc=2,vec=4,un=2", 2, 0},
		{"specs/cross_entropy.yaml", NULL, "rowreduce:nt=64,acc=2,vec=4,un=2", 1, 0},
		{"specs/logsumexp.yaml", NULL, "rowreduce:nt=32,acc=2,vec=4,warp=1,tf=1", 1, 0},
		{"specs/logsumexp.yaml", NULL, "splitk:nt=32,acc=1,vec=4,tf=1", 1, 0},
		{NULL, welford_bf16, "rowreduce:nt=64,acc=2,vec=4,un=2", 1, 0},
		{NULL, softmax_mixed, "rowmap:nt=128,acc=2,vec=4,items=64", 2, 4096}, /* items 32: 48 KB */
		{NULL, softmax_mixed, "rowmap:nt=64,acc=2,vec=4,warp=1", 4, 0},
		{NULL, ordered_sum, "rowreduce:nt=64,acc=1,vec=4", 0, 0},
	};
	static const int lens[] = {1, 3, 5, 6, 7, 33, 129, 130, 131, 4097, 5003};
	for (size_t k = 0; k < sizeof runs / sizeof *runs; k++) {
		Carrier *c = runs[k].spec ? load_ok(runs[k].spec) : text_ok(runs[k].text);
		const char *what = runs[k].spec ? runs[k].spec : c->name;
		int split = strncmp(runs[k].cfg, "splitk", 6) ? 0 : 3;
		for (size_t l = 0; l < sizeof lens / sizeof *lens; l++) {
			int len = lens[l];
			if (runs[k].maxlen && len > runs[k].maxlen)
				continue;
			RunData *d = rundata_new(c, 3, len);
			char msg[512];
			cr_assert_eq(rundata_draw(d, 71 + l, NULL, 0, msg, sizeof msg), 0, "%s", msg);
			EmuStats st;
			emu_expect_ref(d, what, (RunOpts){.config = runs[k].cfg, .split = split}, &st);
			/* split: chunks of a multiple of 4 (cuda_plan), 3 at most */
			int chunk = split ? (int)(((len + split - 1) / split + 3) / 4 * 4) : len;
			long want = runs[k].passes * vec_groups(3, len, chunk);
			cr_expect_eq(st.vec_loads, (unsigned long long)want, "%s %s, 3 x %d: %llu vector loads, not %ld", what,
				     runs[k].cfg, len, st.vec_loads, want);
			rundata_free(d);
		}
		spec_carrier_free(c);
	}
}

/* Buffers off their alignment: an element input one element past 16
 * bytes (f32 and bf16) takes the scalar loop, its results the
 * reference's; a map output off 16 bytes leaves the fold its 16-byte loads
 * and writes its positions one at a time, from the stash or from the row
 * read again. */
Test(rows, buffers_off_alignment_take_the_scalar_loop, .timeout = 600)
{
	static const char welford_bf16[] = WELFORD_BF16_SPEC;
	static const struct {
		const char *spec, *text, *cfg;
		int shift_in, shift_out; /* bytes: the first element input's, the first map output's */
		int passes;              /* vector loads a group */
	} runs[] = {
		{"specs/online_softmax.yaml", NULL, "rowmap:nt=128,acc=2,vec=4,items=64", 4, 0, 0},
		{"specs/online_softmax.yaml", NULL, "rowmap:nt=64,acc=2,vec=4,un=2", 4, 0, 0},
		{"specs/online_softmax.yaml", NULL, "rowmap:nt=128,acc=2,vec=4,items=64", 0, 4, 1},
		{"specs/online_softmax.yaml", NULL, "rowmap:nt=64,acc=2,vec=4,un=2", 0, 8, 1},
		{"specs/logsumexp.yaml", NULL, "rowreduce:nt=64,acc=2,vec=4,un=2", 8, 0, 0},
		{NULL, welford_bf16, "rowreduce:nt=64,acc=2,vec=4", 2, 0, 0},
		{NULL, welford_bf16, "rowreduce:nt=64,acc=2,vec=4", 8, 0, 1}, /* 8 bytes: 4 bf16 elements, aligned */
	};
	static const int lens[] = {7, 131, 4097};
	for (size_t k = 0; k < sizeof runs / sizeof *runs; k++) {
		Carrier *c = runs[k].spec ? load_ok(runs[k].spec) : text_ok(runs[k].text);
		const char *what = runs[k].spec ? runs[k].spec : c->name;
		for (size_t l = 0; l < sizeof lens / sizeof *lens; l++) {
			RunData *d = rundata_new(c, 3, lens[l]);
			char msg[512];
			cr_assert_eq(rundata_draw(d, 81 + l, NULL, 0, msg, sizeof msg), 0, "%s", msg);
			Buffer *b = runs[k].shift_in ? &d->elem[0] : &d->map[0];
			int by = runs[k].shift_in ? runs[k].shift_in : runs[k].shift_out;
			size_t bytes = b->n * b->width * run_kind_size(b->kind);
			char *moved = aligned_alloc(16, (bytes + by + 15) / 16 * 16);
			cr_assert(moved);
			memcpy(moved + by, b->p, bytes);
			void *own = b->p;
			b->p = moved + by;
			EmuStats st;
			emu_expect_ref(d, what, (RunOpts){.config = runs[k].cfg}, &st);
			long want = runs[k].passes * vec_groups(3, lens[l], lens[l]);
			cr_expect_eq(st.vec_loads, (unsigned long long)want, "%s %s, 3 x %d, %s %d bytes off: %llu vector loads, "
				     "not %ld", what, runs[k].cfg, lens[l], runs[k].shift_in ? "input" : "output", by,
				     st.vec_loads, want);
			b->p = own;
			free(moved);
			rundata_free(d);
		}
		spec_carrier_free(c);
	}
}

/* The tuning space of the carriers the row templates are measured on, every
 * variant (tiles of 2 and 4 loads, the transported fold) in one program,
 * assembles for sm_80 and sm_90a without spills or stack. */
Test(rows, ptxas_tiles_without_spills, .timeout = 600)
{
	cuda_test_cache();
	Nvrtc *nv;
	char msg[8192];
	if (nvrtc_open(&nv, msg, sizeof msg))
		cr_skip_test("no NVRTC: %s", msg);
	/* each space is seconds of NVRTC: every carrier on one target, layer
	 * norm (the most registers) on both */
	const char *specs[] = {"specs/welford.yaml", "specs/online_softmax.yaml", "specs/logsumexp.yaml",
			       "specs/layer_norm.yaml"};
	const char *archs[] = {"sm_80", "sm_90a"};
	for (size_t i = 0; i < sizeof specs / sizeof *specs; i++)
		for (int a = 0; a < 2; a++) {
			if (i < 3 && (int)(i % 2) != a)
				continue;
			Carrier *c = load_ok(specs[i]);
			CudaModule m;
			cr_assert_eq(cuda_module_space_for(c, archs[a], 0, &m, msg, sizeof msg), 0, "%s", msg);
			char *ptx;
			int cached, tiles = 0;
			for (int v = 0; v < m.nvar; v++)
				tiles += m.var[v].un > 1 || m.var[v].tf;
			cr_expect_geq(tiles, 3, "%s: %d variants of tiles or transport in the space", specs[i], tiles);
			cr_assert_eq(nvrtc_ptx(nv, m.src, archs[a], &ptx, &cached, msg, sizeof msg), 0, "%s: %s", specs[i], msg);
			char what[160];
			snprintf(what, sizeof what, "%s %s", specs[i], archs[a]);
			int nks = cuda_expect_unspilled(ptx, archs[a], what, NULL, 0, msg, sizeof msg);
			if (nks < 0) {
				free(ptx);
				cuda_module_free(&m);
				spec_carrier_free(c);
				nvrtc_close(nv);
				cr_skip_test("%s", msg);
			}
			cr_assert_geq(nks, m.nvar, "%s %s: %s", specs[i], archs[a], msg);
			free(ptx);
			cuda_module_free(&m);
			spec_carrier_free(c);
		}
	nvrtc_close(nv);
}

/* A module of one variant, as a run compiles it, inlines its row loops
 * (ASC_LOOP_CALLS 0), where a module of several calls the copy they
 * share: kept as a call, odd_vectors' loop at 512 threads with one
 * accumulator was fitted to 40 registers, 8 bytes spilled; inlined it
 * assembles without spills or stack on sm_90a. */
Test(rows, one_variant_inlines_its_row_loops, .timeout = 300)
{
	cuda_test_cache();
	char msg[8192];
	Carrier *c = load_ok("tests/rows/odd_vectors.yaml");
	CudaModule m;
	cr_assert_eq(cuda_module_for(c, NULL, "sm_90a", 0, &m, msg, sizeof msg), 0, "%s", msg);
	cr_expect(strstr(m.src, "\n#define ASC_LOOP_CALLS 1\n"), "several variants: the row loops are calls");
	cuda_module_free(&m);
	cr_assert_eq(cuda_module_for(c, "rowreduce:nt=512,acc=1,vec=1", "sm_90a", 0, &m, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(m.nvar, 1);
	cr_expect(strstr(m.src, "\n#define ASC_LOOP_CALLS 0\n"), "one variant: the row loops inlined");
	int nks = cuda_src_unspilled(m.src, "sm_90a", "odd_vectors nt=512 acc=1", msg, sizeof msg);
	cuda_module_free(&m);
	spec_carrier_free(c);
	if (nks < 0)
		cr_skip_test("%s", msg);
}

/* Each variant of spec's tuning space for arch with blocks of at least
 * min_nt threads, compiled alone as a run compiles it, expected to
 * assemble without spills or stack.  The number of variants taken, or -1
 * where there is no ptxas, msg saying so. */
static int wide_unspilled(Nvrtc *nv, const char *spec, const char *arch, int min_nt, char *msg, size_t cap)
{
	Carrier *c = load_ok(spec);
	CudaModule m;
	cr_assert_eq(cuda_module_space_for(c, arch, 0, &m, msg, cap), 0, "%s: %s", spec, msg);
	int taken = 0, nks = 0;
	for (int v = 0; v < m.nvar && nks >= 0; v++) {
		if (m.var[v].nt < min_nt)
			continue;
		unsigned char want[64] = {0};
		want[v] = 1, taken++;
		char *src = cuda_module_src_of(&m, want), *ptx, what[256], cfg[128];
		int cached;
		cr_assert_eq(nvrtc_ptx(nv, src, arch, &ptx, &cached, msg, cap), 0, "%s: %s", spec, msg);
		variant_str(&m.var[v], cfg, sizeof cfg);
		snprintf(what, sizeof what, "%s %s %s", spec, arch, cfg);
		nks = cuda_expect_unspilled(ptx, arch, what, NULL, 0, msg, cap);
		free(ptx);
		free(src);
	}
	cuda_module_free(&m);
	spec_carrier_free(c);
	return nks < 0 ? -1 : taken;
}

/* Blocks of 512 threads and more hold a wide state's fold in the
 * registers they have (64 a thread, which ptxas keeps to at 512 as well):
 * the tuning space takes fewer accumulators there, then a narrower
 * block.  Those left assemble without spills or stack, where 4
 * accumulators of odd_vectors' state at 1024 threads spilled 420 bytes;
 * a state too wide for any of them (big_state's 51 words, o_lse's 65)
 * has none. */
Test(rows, wide_blocks_keep_to_their_registers, .timeout = 300)
{
	cuda_test_cache();
	Nvrtc *nv;
	char msg[8192];
	if (nvrtc_open(&nv, msg, sizeof msg))
		cr_skip_test("no NVRTC: %s", msg);
	const char *specs[] = {"tests/rows/odd_vectors.yaml", "tests/rows/odd_names.yaml"};
	const int min_nt[] = {512, 1024};
	for (int i = 0; i < 2; i++) {
		int n = wide_unspilled(nv, specs[i], "sm_90a", min_nt[i], msg, sizeof msg);
		if (n < 0) {
			nvrtc_close(nv);
			cr_skip_test("%s", msg);
		}
		cr_expect_gt(n, 0, "%s: blocks of %d threads in the space", specs[i], min_nt[i]);
	}
	nvrtc_close(nv);
	const char *wide[] = {"tests/rows/big_state.yaml", "specs/o_lse.yaml"};
	for (int i = 0; i < 2; i++) {
		Carrier *c = load_ok(wide[i]);
		CudaModule m;
		cr_assert_eq(cuda_module_space_for(c, "sm_90a", 0, &m, msg, sizeof msg), 0, "%s", msg);
		for (int v = 0; v < m.nvar; v++)
			cr_expect_lt(m.var[v].nt, 512, "%s: variant %d of %d threads", wide[i], v, m.var[v].nt);
		cuda_module_free(&m);
		spec_carrier_free(c);
	}
}

/* Blocks of 256 threads, for which ptxas keeps to 128 registers, take
 * tiles of loads (un > 1) only where the estimate fits those: the MoE
 * router's top-8 state (17 words) in 4 accumulators with tiles of 2
 * loads, an estimate of 158, spilled 16 bytes at 128 registers on sm_90a,
 * chan_cov's (4 f64) 16.  Asked for, they fold a load at a time and
 * assemble without spills or stack. */
Test(rows, load_tiles_fit_blocks_of_256, .timeout = 300)
{
	cuda_test_cache();
	char msg[8192];
	const char *specs[] = {"specs/moe_topk_routing.yaml", "tests/prove/chan_cov.yaml"};
	for (int i = 0; i < 2; i++) {
		Carrier *c = load_ok(specs[i]);
		CudaModule m;
		cr_assert_eq(cuda_module_for(c, "rowreduce:nt=256,acc=4,vec=4,un=2", "sm_90a", 0, &m, msg, sizeof msg), 0,
			     "%s", msg);
		cr_expect_eq(m.var[0].un, 1, "%s: tiles of %d loads", specs[i], m.var[0].un);
		int n = cuda_src_unspilled(m.src, "sm_90a", specs[i], msg, sizeof msg);
		cuda_module_free(&m);
		spec_carrier_free(c);
		if (n < 0)
			cr_skip_test("%s", msg);
	}
}

/* The split-K kernel folds its chunk inline rather than calling the
 * module's shared row loop, which ptxas fitted to 64 registers there:
 * odd_vectors' tuning space, all variants in one program as the tuner
 * compiles it, spilled 16 bytes in splitk at 256 threads on sm_90a.  Its
 * split-K kernels assemble without spills or stack for sm_90a and sm_80
 * (the space's other kernels still call the shared loop, and ptxas's
 * budget for those depends on the rest of the module). */
Test(rows, splitk_folds_its_chunk_inline, .timeout = 300)
{
	cuda_test_cache();
	Nvrtc *nv;
	char msg[8192];
	if (nvrtc_open(&nv, msg, sizeof msg))
		cr_skip_test("no NVRTC: %s", msg);
	Carrier *c = load_ok("tests/rows/odd_vectors.yaml");
	const char *archs[] = {"sm_90a", "sm_80"};
	for (int a = 0; a < 2; a++) {
		CudaModule m;
		cr_assert_eq(cuda_module_space_for(c, archs[a], 0, &m, msg, sizeof msg), 0, "%s", msg);
		char *ptx;
		int cached;
		cr_assert_eq(nvrtc_ptx(nv, m.src, archs[a], &ptx, &cached, msg, sizeof msg), 0, "%s", msg);
		CudaKStat ks[64];
		int nks = cuda_ptxas_stats(ptx, archs[a], ks, 64, msg, sizeof msg), seen = 0;
		free(ptx);
		if (nks < 0 && strstr(msg, "not found")) {
			cuda_module_free(&m);
			spec_carrier_free(c);
			nvrtc_close(nv);
			cr_skip_test("%s", msg);
		}
		cr_assert_gt(nks, 0, "odd_vectors %s: ptxas gave no kernels: %s", archs[a], msg);
		for (int v = 0; v < m.nvar; v++) {
			char names[3][64];
			int nk = m.var[v].fam == FAM_SPLITK ? cuda_kernel_names(&m, v, names) : 0;
			for (int k = 0; k < nk; k++)
				for (int j = 0; j < nks; j++)
					if (!strcmp(ks[j].name, names[k])) {
						seen++;
						cr_expect(ks[j].spill_st + ks[j].spill_ld == 0 && ks[j].stack == 0,
							  "odd_vectors %s %s: %d registers, %d/%d bytes spilled, %d of stack",
							  archs[a], ks[j].name, ks[j].regs, ks[j].spill_st, ks[j].spill_ld,
							  ks[j].stack);
					}
		}
		cr_expect_geq(seen, 2, "odd_vectors %s: %d split-K kernels", archs[a], seen);
		cuda_module_free(&m);
	}
	spec_carrier_free(c);
	nvrtc_close(nv);
}

/* A map variant compiled alone, as a run compiles the variant it takes
 * first: its module says whether its map pass keeps a stash
 * (ASC_MAP_STASH), so that NVRTC sees one of the map pass's two paths, and
 * it assembles without spills or stack, at sm_80 and sm_90a.  The space's
 * module, which mixes both, keeps the choice to run time. */
Test(rows, map_variants_alone_hold_one_path, .timeout = 600)
{
	cuda_test_cache();
	Nvrtc *nv;
	char msg[8192];
	if (nvrtc_open(&nv, msg, sizeof msg))
		cr_skip_test("no NVRTC: %s", msg);
	const char *specs[] = {"specs/online_softmax.yaml", "specs/layer_norm.yaml"};
	const char *archs[] = {"sm_90a", "sm_80"};
	for (int i = 0; i < 2; i++) {
		Carrier *c = load_ok(specs[i]);
		CudaModule m;
		cr_assert_eq(cuda_module_space_for(c, archs[i], 0, &m, msg, sizeof msg), 0, "%s", msg);
		char *all = cuda_module_src_of(&m, NULL);
		cr_expect(strstr(all, "\n#define ASC_MAP_STASH -1\n"), "%s: the space's module decides at run time", specs[i]);
		free(all);
		int kinds[2] = {0, 0};
		for (int v = 0; v < m.nvar; v++) {
			const Variant *x = &m.var[v];
			if (x->fam != FAM_ROWMAP && x->fam != FAM_SPLITK)
				continue;
			int st = x->fam == FAM_ROWMAP && x->items > 0;
			kinds[st]++;
			unsigned char want[64] = {0};
			want[v] = 1;
			char *src = cuda_module_src_of(&m, want), *ptx;
			cr_expect(strstr(src, st ? "\n#define ASC_MAP_STASH 1\n" : "\n#define ASC_MAP_STASH 0\n"),
				  "%s variant %d: stash %d", specs[i], v, st);
			int cached;
			cr_assert_eq(nvrtc_ptx(nv, src, archs[i], &ptx, &cached, msg, sizeof msg), 0, "%s: %s", specs[i], msg);
			char what[160];
			snprintf(what, sizeof what, "%s %s alone", specs[i], archs[i]);
			int nks = cuda_expect_unspilled(ptx, archs[i], what, NULL, 0, msg, sizeof msg);
			if (nks < 0) {
				free(ptx);
				free(src);
				cuda_module_free(&m);
				spec_carrier_free(c);
				nvrtc_close(nv);
				cr_skip_test("%s", msg);
			}
			free(ptx);
			free(src);
		}
		cr_expect(kinds[0] > 0 && kinds[1] > 0, "%s: map variants with and without a stash (%d, %d)", specs[i],
			  kinds[0], kinds[1]);
		cuda_module_free(&m);
		spec_carrier_free(c);
	}
	nvrtc_close(nv);
}

/* emit --explain: whether the carrier has the transported fold and why
 * not, and a line for each variant of the module. */
Test(rows, emit_explain_says_what_each_variant_does)
{
	char out[16384];
	/* the listing dropped, --explain's lines (standard error) kept */
	cr_assert_eq(sh("{ build/asan/assoc emit specs/welford.yaml --target cuda --explain "
			"--config rowreduce:nt=256,acc=2,vec=4,un=2,tf=1 2>&1 >/dev/null; }", out, sizeof out, 1), 0, "%s", out);
	cr_expect(strstr(out, "transported fold: tiles folded in (+, +, +), shifted by their largest element on mean"), "%s",
		  out);
	cr_expect(strstr(out, "variant rowreduce:nt=256,acc=2,vec=4,warp=0,items=0,un=2,tf=1: a block a row, 2 accumulators "
			      "a thread, 4 16-byte loads in flight a thread; tiles of 16 elements folded in the certificate's "
			      "coordinates, one merge a tile"), "%s", out);
	cr_assert_eq(sh("{ build/asan/assoc emit specs/sum.yaml --target cuda --explain 2>&1 >/dev/null; }", out, sizeof out, 1),
		     0, "%s", out);
	cr_expect(strstr(out, "transported fold: none, no certificate"), "%s", out);
	cr_expect(strstr(out, "variant rowreduce:nt=128,acc=2,vec=4,warp=1,items=0: a warp a row"), "%s", out);
}

/* Carriers as a new user writes them run on the row templates against
 * the reference at odd shapes: names that are C and CUDA words (float,
 * int, return, threadIdx, __syncthreads, State), which reach the
 * generated code only as the generator's own names, and vectors of odd
 * widths in three storage types as row, column and element inputs
 * beside a vector field.  The rule's variants: a warp a row for the
 * short rows, a block for the long one. */
Test(rows, new_users_carriers_on_the_emulator, .timeout = 300)
{
	char why[512];
	if (!emu_available(why, sizeof why))
		cr_skip_test("no host C++ compiler for the emulator: %s", why);
	static const char *const specs[] = {"tests/rows/odd_names.yaml", "tests/rows/odd_vectors.yaml"};
	static const int shapes[][2] = {{0, 5}, {3, 0}, {1, 1}, {1, 31}, {5, 33}, {3, 1000}};
	for (size_t s = 0; s < sizeof specs / sizeof *specs; s++) {
		Carrier *c = load_ok(specs[s]);
		for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++) {
			RunData *d = rundata_new(c, shapes[k][0], shapes[k][1]);
			char msg[2048];
			cr_assert_eq(rundata_draw(d, 7, NULL, 0, msg, sizeof msg), 0, "%s", msg);
			emu_expect_ref(d, specs[s], (RunOpts){0}, NULL);
			rundata_free(d);
		}
		spec_carrier_free(c);
	}
}

/* An assume on params alone holds whatever the tile's shift does to the
 * elements: logsumexp with a temperature tau > 0 keeps its transported
 * fold.  One on the element (x > -100, which x - t breaks) has none,
 * and the reason names the assume and what it reads. */
Test(rows, transport_under_an_assume_on_params_only)
{
	static const char *const text =
		"carrier: lse_tau\nparams: {tau: f32}\nassume: '%s'\nelement: {x: f32}\nstate: {m: f32, l: f32}\n"
		"identity: {m: -inf, l: 0}\nlift: {m: x, l: 1}\n"
		"merge:\n  m: max(a.m, b.m)\n"
		"  l: a.l * exp(where(a.m == inf, 0, a.m - m)) + b.l * exp(where(b.m == inf, 0, b.m - m))\n"
		"finalize: {lse: tau * (m + log(l))}\nlaws: [commutative]\n"
		"certificate:\n  into: {m: m, s: l * exp(m)}\n  monoid: {m: max, s: add}\n  back: {m: m, l: s * exp(-m)}\n";
	static const char *const assumes[] = {"tau > 0", "x > -100 && tau > 0"};
	for (int k = 0; k < 2; k++) {
		char spec[1024], msg[1024];
		snprintf(spec, sizeof spec, text, assumes[k]);
		Carrier *c = text_ok(spec);
		CudaModule m;
		cr_assert_eq(cuda_module_space(c, &m, msg, sizeof msg), 0, "%s", msg);
		cr_expect_eq(m.tf, !k, "assume %s: transported fold %d (%s)", assumes[k], m.tf, m.tf_why);
		if (k)
			cr_expect(strstr(m.tf_why, "assume (x > ") && strstr(m.tf_why, " && tau > 0) reads x, which the tile's "
											"shift moves"), "%s", m.tf_why);
		else
			cr_expect(strstr(m.src, "#define ASC_TRANSPORT 1"), "%s", m.tf_why);
		cuda_module_free(&m);
		spec_carrier_free(c);
	}
}

/* A proved certificate implies commutativity (phi into monoids that
 * commute, back its inverse): Welford without laws: [commutative] folds
 * transported all the same. */
Test(rows, transport_needs_no_commutative_claim)
{
	FILE *f = fopen("specs/welford.yaml", "r");
	cr_assert(f);
	char spec[4096], text[4096], msg[1024];
	size_t n = fread(spec, 1, sizeof spec - 1, f), len = 0;
	fclose(f);
	spec[n] = 0;
	for (char *line = strtok(spec, "\n"); line; line = strtok(NULL, "\n"))
		if (strncmp(line, "laws:", 5))
			len += snprintf(text + len, sizeof text - len, "%s\n", line);
	cr_assert_lt(len, sizeof text);
	Carrier *c = text_ok(text);
	cr_assert_eq(c->laws & LAW_COMMUTATIVE, 0);
	CudaModule m;
	cr_assert_eq(cuda_module_space(c, &m, msg, sizeof msg), 0, "%s", msg);
	cr_expect_eq(m.tf, 1, "%s", m.tf_why);
	cr_expect(strstr(m.src, "#define ASC_TRANSPORT 1"), "%s", m.tf_why);
	cuda_module_free(&m);
	spec_carrier_free(c);
}
