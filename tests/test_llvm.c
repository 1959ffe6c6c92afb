/* test_llvm.c: the LLVM lowering: the vectorized exp, exp2 and log against
 * libm (float64, so the reference is correctly rounded to float32 nearly
 * always) over their whole input range, in vector and scalar lanes; the
 * emitted IR and assembly (vector types, no libm calls in the hot loops);
 * every bundled spec compiles and verifies. */
#include <float.h>
#include <glob.h>
#include <stdio.h>
#include <string.h>

#include "compiler/llvm/llvm.h"
#include "compiler/llvm/llvm_int.h"
#include "mathtest.h"
#include "testutil.h"

/* The bounds documented in compiler/llvm/llvm_math.c. */
Test(llvm, exp_within_1_5_ulp_everywhere)
{
	for (int lanes = 1; lanes <= 16; lanes *= 16) {
		Err e = sweep(EXPR_EXP, lanes, 127, exp);
		cr_log_info("exp, %d lanes: worst %.3f ulp at %a over %ld inputs", lanes, e.worst, e.at, e.n);
		cr_assert_leq(e.worst, 1.5, "exp: %.3f ulp at %a (%d lanes)", e.worst, e.at, lanes);
	}
}

Test(llvm, exp2_within_1_5_ulp_everywhere)
{
	for (int lanes = 1; lanes <= 16; lanes *= 16) {
		Err e = sweep(EXPR_EXP2, lanes, 127, exp2);
		cr_log_info("exp2, %d lanes: worst %.3f ulp at %a over %ld inputs", lanes, e.worst, e.at, e.n);
		cr_assert_leq(e.worst, 1.5, "exp2: %.3f ulp at %a (%d lanes)", e.worst, e.at, lanes);
	}
}

/* 16 lanes take the AVX-512 path on a host that has it, 4 and 8 the
 * portable one in vectors. */
Test(llvm, log_within_1_5_ulp_everywhere)
{
	for (int lanes = 1; lanes <= 16; lanes *= 2) {
		if (lanes == 2)
			continue;
		Err e = sweep(EXPR_LOG, lanes, 127, log);
		cr_log_info("log, %d lanes: worst %.3f ulp at %a over %ld inputs", lanes, e.worst, e.at, e.n);
		cr_assert_leq(e.worst, 1.5, "log: %.3f ulp at %a (%d lanes)", e.worst, e.at, lanes);
	}
}

/* expm1, log1p and tanh, in 1, 4, 8 and 16 lanes, within the 2 ulp of
 * compiler/llvm/llvm_math.c. */
Test(llvm, expm1_log1p_tanh_within_2_ulp_everywhere)
{
	static const struct {
		int op;
		double (*ref)(double);
		const char *name;
	} fs[] = {{EXPR_EXPM1, expm1, "expm1"}, {EXPR_LOG1P, log1p, "log1p"}, {EXPR_TANH, tanh, "tanh"}};
	for (size_t i = 0; i < sizeof fs / sizeof *fs; i++)
		for (int lanes = 1; lanes <= 16; lanes *= 2) {
			if (lanes == 2)
				continue;
			Err e = sweep(fs[i].op, lanes, 127, fs[i].ref);
			cr_log_info("%s, %d lanes: worst %.3f ulp at %a over %ld inputs", fs[i].name, lanes, e.worst, e.at,
				    e.n);
			cr_expect_leq(e.worst, 2, "%s: %.3f ulp at %a (%d lanes)", fs[i].name, e.worst, e.at, lanes);
		}
}

/* Their special values exactly, the sign of a zero included, in vector
 * lanes (the first 16) and the scalar tail: tanh +-inf -> +-1, saturating
 * from 9.01; log1p -1 -> -inf, under -1 -> NaN; expm1 -inf -> -1,
 * overflow -> +inf from 88.7228; each keeps a tiny x and -0. */
Test(llvm, expm1_log1p_tanh_special_values)
{
	static const float in[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-40f, -1e-40f, 0x1p-30f, -0x1p-30f,
				   -1.0f, -1.5f, 9.1f, -9.1f, 20.0f, -20.0f, 1e30f, -1e30f, 0x1.62e42ep+6f,
				   0x1.62e430p+6f, 100.0f, -100.0f, FLT_MAX, -FLT_MAX, 1e-8f};
	enum { N = sizeof in / sizeof *in };
	static const struct {
		int op;
		double (*ref)(double);
		const char *name;
	} fs[] = {{EXPR_EXPM1, expm1, "expm1"}, {EXPR_LOG1P, log1p, "log1p"}, {EXPR_TANH, tanh, "tanh"}};
	for (size_t i = 0; i < sizeof fs / sizeof *fs; i++) {
		LlvmKernel *k;
		LlvmMathFn fn = math_fn(fs[i].op, 16, &k);
		float x[2 * N], y[2 * N];
		for (int r = 0; r < 2; r++) /* 24 values: lanes and tail, then shifted into the other */
			for (int j = 0; j < N; j++)
				x[r * N + j] = in[(j + r * 7) % N];
		fn(x, y, 2 * N);
		for (int j = 0; j < 2 * N; j++) {
			float want = (float)fs[i].ref(x[j]);
			int ok = isnan(want) ? isnan(y[j]) : y[j] == want && !signbit(y[j]) == !signbit(want);
			if (fabs(want) > 0 && fabs(want) < 1e30 && fabs(want) != 1 && !ok) /* not special: within 2 ulp */
				ok = ulps(y[j], fs[i].ref(x[j])) <= 2;
			cr_expect(ok, "%s(%a) gives %a, not %a", fs[i].name, x[j], y[j], want);
		}
		llvm_kernel_free(k);
	}
}

/* log's AVX-512 path splits x as the portable one does and shares its
 * polynomial, so the two agree bit for bit, NaN's bits included (the same
 * default NaN for negatives and NaN): on every float in [0.5, 2) (each
 * mantissa on both sides of the split at sqrt 2, which repeats in every
 * binade), every subnormal, and every 61st bit pattern. */
Test(llvm, log_same_bits_in_every_path)
{
	LlvmKernel *k[2];
	LlvmMathFn fn[2] = {math_fn(EXPR_LOG, 1, &k[0]), math_fn(EXPR_LOG, 16, &k[1])};
	enum { N = 1 << 16 };
	static uint32_t x[N], y[2][N];
	static const struct {
		uint64_t from, to, stride;
	} runs[] = {{0x3f000000, 0x40000000, 1}, {0, 0x00800000, 1}, {0, 1ull << 32, 61}};
	long differ = 0, n = 0;
	uint32_t first = 0;
	for (size_t r = 0; r < sizeof runs / sizeof *runs; r++)
		for (uint64_t b = runs[r].from; b < runs[r].to;) {
			int m = 0;
			for (; m < N && b < runs[r].to; m++, b += runs[r].stride)
				x[m] = (uint32_t)b;
			fn[0]((float *)x, (float *)y[0], m);
			fn[1]((float *)x, (float *)y[1], m);
			for (int i = 0; i < m; i++)
				if (y[0][i] != y[1][i] && !differ++)
					first = x[i];
			n += m;
		}
	cr_log_info("log: %ld inputs, the same bits in 1 and 16 lanes", n);
	cr_assert_eq(differ, 0, "%ld of %ld inputs differ, the first 0x%08x", differ, n, first);
	llvm_kernel_free(k[0]);
	llvm_kernel_free(k[1]);
}

/* Dense sweep of the ranges where the results are finite, exp's
 * subnormal results and its 0s under them included. */
Test(llvm, exp_and_log_dense_in_range)
{
	LlvmKernel *k[2];
	LlvmMathFn fn[2] = {math_fn(EXPR_EXP, 0, &k[0]), math_fn(EXPR_LOG, 0, &k[1])};
	enum { N = 1 << 20 };
	float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
	double worst[2] = {0, 0};
	for (int i = 0; i < N; i++)
		x[i] = -110.0f + 199.0f * i / N;
	fn[0](x, y, N);
	for (int i = 0; i < N; i++)
		worst[0] = fmax(worst[0], ulps(y[i], exp(x[i])));
	for (int i = 0; i < N; i++)
		x[i] = 0.25f + 4.0f * i / N;
	fn[1](x, y, N);
	for (int i = 0; i < N; i++)
		worst[1] = fmax(worst[1], ulps(y[i], log(x[i])));
	cr_log_info("dense: exp %.3f ulp, log %.3f ulp", worst[0], worst[1]);
	cr_assert_leq(worst[0], 1.5);
	cr_assert_leq(worst[1], 1.5);
	free(x);
	free(y);
	llvm_kernel_free(k[0]);
	llvm_kernel_free(k[1]);
}

Test(llvm, every_bundled_spec_compiles)
{
	glob_t g;
	cr_assert_eq(glob("specs/*.yaml", 0, NULL, &g), 0);
	for (size_t i = 0; i < g.gl_pathc; i++) {
		Carrier *c = load_ok(g.gl_pathv[i]);
		LlvmKernel *k;
		char msg[500];
		cr_expect_eq(llvm_compile(c, NULL, &k, msg, sizeof msg), 0, "%s: %s", g.gl_pathv[i], msg);
		cr_expect(k && k->k.reduce && k->k.merge && k->k.finalize, "%s", g.gl_pathv[i]);
		/* a scan only where the carrier is one: nothing else calls it */
		cr_expect_eq(k && k->k.scan != NULL, c->tpl == FAM_SCAN, "%s", g.gl_pathv[i]);
		cr_expect_eq(k && k->k.map != NULL, c->nmap > 0, "%s", g.gl_pathv[i]);
		llvm_kernel_free(k);
		spec_carrier_free(c);
	}
	globfree(&g);
}

static char *emitted_carrier(Carrier *c, int asm_)
{
	char *buf = NULL, msg[300];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	cr_assert_eq(llvm_emit(c, NULL, asm_, f, msg, sizeof msg), 0, "%s", msg);
	fclose(f);
	spec_carrier_free(c);
	return buf;
}

static char *emitted(const char *spec, int asm_) { return emitted_carrier(load_ok(spec), asm_); }

/* The text of function name in IR (from "define" to the closing brace). */
static char *function_text(char *ir, const char *name)
{
	char head[100];
	snprintf(head, sizeof head, "@%s(", name);
	char *s = strstr(ir, head);
	cr_assert(s, "no function %s", name);
	char *e = strstr(s, "\n}\n");
	cr_assert(e);
	e[1] = 0;
	return s;
}

/* An integer field lifted by a select of literals (where(x < -1, 1, 0))
 * converts its literals at compile time: no saturating conversion runs
 * per position. */
Test(llvm, integer_lift_of_literals_converts_no_floats)
{
	char *ir = emitted("bench/carriers/clipped_sum.yaml", 0);
	char *red = function_text(ir, "assoc_reduce");
	cr_assert(strstr(red, "x i32>"), "the counts are integer vectors");
	cr_assert_null(strstr(red, "fptosi"), "no float to integer conversion in the reduce");
	free(ir);
}

Test(llvm, softmax_reduce_is_vector_code_without_libm_calls)
{
	char *ir = emitted("specs/online_softmax.yaml", 0);
	cr_assert(strstr(ir, "define void @assoc_map("), "a map function");
	char *red = function_text(ir, "assoc_reduce");
	cr_assert(strstr(red, "x float>"), "vector float types in the reduce loop");
	cr_assert_null(strstr(red, "@expf"), "no libm exp");
	cr_assert_null(strstr(red, "@llvm.exp."), "no exp intrinsic (a libm call once lowered)");
	free(ir);
	char *as = emitted("specs/online_softmax.yaml", 1);
	cr_assert(strstr(as, "assoc_reduce:"), "assembly has the reduce function");
	cr_assert(strstr(as, "ymm") || strstr(as, "zmm") || strstr(as, "xmm"), "vector registers");
	cr_assert_null(strstr(as, "call\texpf"), "no calls to expf");
	free(as);
}

/* tanh, log1p and expm1 of float32 values are the backend's vector code
 * in the reduce and the map: no libm call (each one a lane, 0.01 of a
 * copy's speed). */
Test(llvm, tanh_log1p_expm1_are_vector_code)
{
	char *ir = emitted_carrier(text_ok("carrier: fns\nelement: {x: f32}\nstate: {s: f32}\nidentity: {s: 0}\n"
					   "lift: {s: 'tanh(x) + log1p(abs(x)) + expm1(-abs(x))'}\nmerge: {s: a.s + b.s}\n"
					   "map: {t: tanh(x), l: log1p(x), e: expm1(x)}\nlaws: [commutative]\n"),
				   0);
	cr_expect_null(strstr(ir, "call float @"), "no scalar call");
	cr_expect_null(strstr(ir, "@tanhf"), "no libm tanhf");
	cr_expect_null(strstr(ir, "@log1pf"), "no libm log1pf");
	cr_expect_null(strstr(ir, "@expm1f"), "no libm expm1f");
	char *red = function_text(ir, "assoc_reduce");
	cr_expect(strstr(red, "x float>"), "vector float types in the reduce");
	free(ir);
}

/* On an AVX-512 host a log in 16 lanes splits its argument by vgetmantps
 * and vgetexpps and fixes 0 and +inf by vfixupimmps. */
Test(llvm, log_in_16_lanes_takes_avx512_getmant)
{
	if (!lower_host_avx512())
		cr_skip("the host has no AVX-512");
	char *ir = emitted("bench/carriers/new/signed_logprod.yaml", 0);
	char *red = function_text(ir, "assoc_reduce");
	cr_expect(strstr(red, "@llvm.x86.avx512.mask.getmant.ps.512("), "vgetmantps");
	cr_expect(strstr(red, "@llvm.x86.avx512.mask.getexp.ps.512("), "vgetexpps");
	cr_expect(strstr(red, "@llvm.x86.avx512.mask.fixupimm.ps.512("), "vfixupimmps");
	free(ir);
}

/* Prefetches: the one-pass reduce loop brings its lines 4 KiB ahead into
 * L1; the two-pass row maps, whose rows stay in L2 for the second pass,
 * bring the next rows into L2 (llvm.prefetch's locality 3 and 2). */
Test(llvm, prefetches_into_l1_ahead_of_one_pass_and_l2_ahead_of_rows)
{
	char *ir = emitted("specs/welford.yaml", 0);
	char *red = function_text(ir, "assoc_reduce");
	cr_expect(strstr(red, ", i32 0, i32 3, i32 1)"), "one-pass reduce: prefetches into L1");
	cr_expect_null(strstr(red, ", i32 0, i32 2, i32 1)"), "one-pass reduce: none into L2");
	free(ir);
	ir = emitted("specs/online_softmax.yaml", 0);
	char *map = function_text(ir, "assoc_rowmap");
	cr_expect(strstr(map, ", i32 0, i32 2, i32 1)"), "row map: the next rows into L2");
	cr_expect_null(strstr(map, ", i32 0, i32 3, i32 1)"), "row map: none into L1");
	free(ir);
}

/* f16 inputs load as 16-bit patterns and convert through the half type
 * where the CPU compiled for has F16C (one vcvtph2ps), by bit manipulation
 * elsewhere: a half type there would call a conversion routine the JIT
 * lacks. */
Test(llvm, half_inputs_convert_on_load)
{
	char *ir = emitted("specs/attention.yaml", 0);
	int f16c = lower_host_has("+f16c");
	cr_expect(strstr(ir, "load i16") || strstr(ir, "x i16>"), "f16 inputs load as 16-bit patterns");
	if (f16c)
		cr_expect(strstr(ir, "fpext half") || strstr(ir, "x half>"), "converted by the F16C instruction");
	else
		cr_expect_null(strstr(ir, "half"), "converted by bit manipulation, not through a half type");
	free(ir);
	if (f16c) {
		char *s = emitted("specs/attention.yaml", 1);
		cr_expect(strstr(s, "vcvtph2ps"), "the host's conversion instruction");
		free(s);
	}
}

/* abs(x) and max(x, -x) of an f16 input stay on the f32 value F16C gives:
 * no conversion back to half (vcvtps2ph) and no lane by lane insert
 * (vpinsrw), which a fabs narrowed to half values took, 30 of each a
 * vector of 16. */
Test(llvm, f16_magnitudes_stay_in_f32)
{
	if (!lower_host_has("+f16c"))
		cr_skip("the host has no F16C");
	static const char *lifts[] = {"abs(x)", "max(x, -x)"};
	for (int i = 0; i < 2; i++) {
		char spec[400];
		snprintf(spec, sizeof spec,
			 "carrier: count16\nparams: {t: f32}\nelement: {x: f16}\nstate: {n: i32}\nidentity: {n: 0}\n"
			 "lift: {n: 'where(%s > t, 1, 0)'}\nmerge: {n: a.n + b.n}\nmap: {y: '%s'}\nlaws: [commutative]\n",
			 lifts[i], lifts[i]);
		char *as = emitted_carrier(text_ok(spec), 1);
		cr_expect(strstr(as, "vcvtph2ps"), "%s: converted by F16C", lifts[i]);
		cr_expect_null(strstr(as, "vcvtps2ph"), "%s: no conversion back to half", lifts[i]);
		cr_expect_null(strstr(as, "vpinsrw"), "%s: no lane by lane insert", lifts[i]);
		free(as);
	}
}

/* Attention's q . k (64 float32 products a key, one lane) is vector code:
 * chunks of 16 products, not one chain of 64 scalar adds.  The reduce
 * holds 9 of them (a tile of 8 keys and the key by key tail): summed one
 * by one they would take over 500 scalar adds; in chunks, a few each, and
 * the tile's sum of l.  Its inputs are float32: without F16C each f16
 * component converts with scalar adds of its own. */
Test(llvm, one_lane_dot_products_are_vector_code)
{
	char *ir = emitted_carrier(text_ok("carrier: attention_f32\ndims: {d: 64}\nparams: {scale: f32}\n"
					   "row: {q: 'f32[d]'}\ncolumn: {k: 'f32[d]', v: 'f32[d]'}\n"
					   "let: {s: 'dot(q, k) * scale'}\nmask: j <= i\n"
					   "state: {m: f32, l: f32, o: 'f32[d]'}\nidentity: {m: -inf, l: 0, o: 0}\n"
					   "lift: {m: s, l: 1, o: v}\n"
					   "merge:\n  m: max(a.m, b.m)\n  l: a.l * exp(a.m - m) + b.l * exp(b.m - m)\n"
					   "  o: a.o * exp(a.m - m) + b.o * exp(b.m - m)\n"
					   "finalize: {out: o / l}\n"),
				   0);
	char *red = function_text(ir, "assoc_reduce");
	int adds = 0;
	for (const char *p = red; (p = strstr(p, "fadd float ")); p++)
		adds++;
	cr_expect_lt(adds, 64, "%d scalar adds: the dots' 64 products are not summed one by one", adds);
	free(ir);
}

Test(llvm, unsupported_shapes_are_errors)
{
	Carrier *c = text_ok("carrier: big\ndims: {d: 5000}\nelement: {x: 'f32[d]'}\nstate: {s: 'f32[d]'}\n"
			     "identity: {s: 0}\nlift: {s: x}\nmerge: {s: a.s + b.s}\n");
	LlvmKernel *k;
	char msg[300];
	cr_assert_eq(llvm_compile(c, NULL, &k, msg, sizeof msg), -1);
	cr_assert(strstr(msg, "element input 'x' has 5000 components (dim d)"), "%s", msg);
	cr_assert_null(k);
	spec_carrier_free(c);
}

static float sub_rule(float x, float y) { return x == -INFINITY && y == -INFINITY ? -INFINITY : x - y; }

/* The merge shares one exp between exp(a.m - m) and exp(b.m - m) (m the
 * max of the two): on every pair of special and ordinary values it agrees
 * with the spec's semantics (NaN where they give NaN, within 2 ulp else).
 * Guarded (1: exp(where(a.m == inf, 0, a.m - m)), the bundled merge; 2:
 * where(a.m == m, ...)), the rescale is 1 where a side's m is +inf (2: is
 * the maximum), and the exp still shared. */
static void rescale_exact(Carrier *c, int guarded)
{
	LlvmKernel *k;
	char msg[300];
	cr_assert_eq(llvm_compile(c, NULL, &k, msg, sizeof msg), 0, "%s", msg);
	const float v[] = {-INFINITY, -80, -1, -0.0f, 0, 1e-30f, 2, 3, 88, INFINITY, NAN};
	int n = sizeof v / sizeof *v;
	CpuArgs a = {0};
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++) {
			double sa[2], sb[2], so[2];
			memcpy(&sa[0], &v[i], 4), memcpy(&sb[0], &v[j], 4);
			float al = 1.5f, bl = 2.0f;
			memcpy(&sa[1], &al, 4), memcpy(&sb[1], &bl, 4);
			k->k.merge(&a, sa, sb, so);
			float m, l;
			memcpy(&m, &so[0], 4), memcpy(&l, &so[1], 4);
			float wm = fmaxf(v[i], v[j]);
			float di = (guarded == 1 && v[i] == INFINITY) || (guarded == 2 && v[i] == wm) ? 0 : sub_rule(v[i], wm);
			float dj = (guarded == 1 && v[j] == INFINITY) || (guarded == 2 && v[j] == wm) ? 0 : sub_rule(v[j], wm);
			float wl = al * expf(di) + bl * expf(dj);
			cr_expect(m == wm || (isnan(m) && isnan(wm)), "%s: m of (%g, %g): %g, want %g", c->name, v[i], v[j],
				  m, wm);
			cr_expect((isnan(l) && isnan(wl)) || ulps(l, wl) <= 2, "%s: l of (%g, %g): %g, want %g", c->name,
				  v[i], v[j], l, wl);
		}
	llvm_kernel_free(k);
}

Test(llvm, shared_rescale_exp_is_exact_on_special_values)
{
	Carrier *c = text_ok("carrier: plain_softmax\nelement: {x: f32}\nstate: {m: f32, l: f32}\n"
			     "identity: {m: -inf, l: 0}\nlift: {m: x, l: 1}\n"
			     "merge:\n  m: max(a.m, b.m)\n  l: a.l * exp(a.m - m) + b.l * exp(b.m - m)\n"
			     "finalize: {lse: m + log(l)}\nlaws: [commutative]\n");
	rescale_exact(c, 0);
	spec_carrier_free(c);
	c = load_ok("specs/online_softmax.yaml");
	rescale_exact(c, 1);
	spec_carrier_free(c);
	c = load_ok("tests/check/logsumexp_inf.yaml");
	rescale_exact(c, 2);
	spec_carrier_free(c);
}

/* A max of state fields that no fold makes NaN (argmax's m: x with NaN
 * masked out, -inf for the identity) is a compare and select, one vmaxps
 * in 16 lanes, not maxnum, whose lowering adds a NaN test and a blend to
 * every merge.  Where a lift may be NaN (max.yaml, no mask; a product,
 * 0 * inf), maxnum stays. */
Test(llvm, max_of_fields_never_nan_takes_no_nan_test)
{
	char *ir = emitted("specs/argmax.yaml", 0);
	cr_expect_null(strstr(ir, "@llvm.maxnum"), "argmax: no maxnum");
	free(ir);
	ir = emitted("specs/max.yaml", 0);
	cr_expect(strstr(ir, "@llvm.maxnum"), "max of unmasked x: maxnum");
	free(ir);
	ir = emitted_carrier(text_ok("carrier: max_product\nelement: {x: f32, y: f32}\nmask: x == x && y == y\n"
				     "state: {m: f32}\nidentity: {m: -inf}\nlift: {m: x * y}\nmerge:\n  m: max(a.m, b.m)\n"),
			     0);
	cr_expect(strstr(ir, "@llvm.maxnum"), "max of products (0 * inf): maxnum");
	free(ir);
}

/* The vector loop's positions j come from a vector carried through the
 * loop, a constant added for each vector, not a broadcast of j each
 * (port 5 on Intel, beside the merges' compares). */
Test(llvm, positions_in_lanes_are_a_carried_vector)
{
	char *ir = emitted_carrier(text_ok("carrier: early_sum\nelement: {x: f32}\nstate: {s: f32}\nidentity: {s: 0}\n"
					   "lift: {s: 'where(j < 5, x, 0)'}\nmerge: {s: a.s + b.s}\nlaws: [commutative]\n"),
				   0);
	char *red = function_text(ir, "assoc_reduce");
	int carried = 0;
	for (char *l = strstr(red, "phi <"); l && !carried; l = strstr(l + 1, "phi <")) {
		char *e = strchr(l, '\n');
		char *t = strstr(l, " x i32>");
		carried = t && (!e || t < e);
	}
	cr_expect(carried, "a vector of i32 positions carried by the loop");
	free(ir);
}
