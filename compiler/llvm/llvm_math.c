/* llvm_math.c: float32 exp, exp2, log, expm1, log1p and tanh emitted
 * inline, branch-free, in any number of lanes, so that hot loops
 * vectorize without libm calls.
 *
 * exp(x):  n = round(x log2 e) by the 1.5*2^23 trick (defined for NaN,
 *          unlike fptosi), r = x - n ln2 in two parts (Cody-Waite), e^r by
 *          a degree-6 polynomial fitted for relative error on [-ln2/2,
 *          ln2/2] (exp_poly), times 2^n applied as two powers of two so
 *          that 2^128 overflow and results down to the smallest
 *          subnormal (2^-149) come out right, each rounded once.  Inputs
 *          over 89 are clamped by compare-and-select, which keeps NaN.
 *          On AVX-512 hosts, in 16 lanes, a table of 2^(j/16) and a cubic
 *          instead (exp_avx512).
 * exp2(x): the same with r = x - n exact and Cephes' exp2f polynomial.
 * Results are subnormal where the exact value is, as interp, emu and
 * NVRTC without -ftz give them.  Where the result rounds to 0 (exp(x) for
 * x < EXP_ZERO = -103.97, exp2(x) for x < -150: -inf, a masked lane, a
 * value far under a row's maximum) the lane computes e^0 instead, and a
 * select gives 0: on x86 every step that makes a subnormal takes a
 * microcode assist, so only the lanes whose result is one make it (a
 * softmax row masked with -inf ran 6x slower when its lanes did).
 * log(x):  x = m 2^e with m in [sqrt(1/2), sqrt 2) (subnormals scaled by
 *          2^23 first), log(1 + f) by Cephes' logf polynomial, plus e ln2
 *          in two parts; 0 -> -inf, negative or NaN -> NaN, +inf -> +inf.
 *          On AVX-512 hosts, in 16 lanes, vgetmantps and vgetexpps split x
 *          and vfixupimmps sets 0 and +inf (log_avx512): the same m, e and
 *          polynomial, so the same bits, in 9 ops where those took 21.
 *
 * Error against the exact value, in float32 ulps of the result (2^-149
 * for subnormal results), measured by tests/test_llvm.c
 * over every 127th float32 bit pattern, every power of two and the
 * floats beside 1, 2, 0.5 and log's split at sqrt 2, and densely over
 * the finite range: exp 0.854 (16 lanes on AVX-512: 0.987; 0.998 over
 * every float32 in [-90, 89]), exp2 0.933, log 0.785 (with FMA, any
 * lanes, AVX-512 or not; compiled for a CPU without FMA,
 * tests/test_cpuhost.c: exp 1.167, exp2 1.191, log 0.785).  The documented and asserted bound
 * is 1.5 ulp.  log2 is log times log2(e), about one ulp more.
 *
 * expm1(x): x = j ln2 + f, |f| <= ln2/2, and e^x - 1 = 2^j (e^f - 1) +
 *          2^j - 1, e^f - 1 = f + f^2 P(f) with P of degree 4 (Arm's
 *          optimized-routines expm1f); 2^j enters as 2 * 2^(j-1), so
 *          that j = 128 scales without overflow and 2^(j-1) - 1/2 is
 *          exact.  x is clamped to [-25, 88.8] (e^x - 1 rounds to -1
 *          under -17.4, overflows over 88.73), and |x| < 2^-25 gives x
 *          itself (-0 included, which the polynomial makes +0).
 * log1p(x): 1 + x = 2^k (1 + m), m in [sqrt(1/2) - 1, sqrt 2 - 1), k
 *          read off the rounded 1 + x, and m = x 2^-k + (2^-k - 1) from
 *          x itself, so that the rounding of 1 + x is lost nowhere (m is
 *          x exactly where k = 0); then log's polynomial and k ln2.
 *          -1 -> -inf, under -1 or NaN -> NaN, +inf -> +inf, -0 -> -0.
 * tanh(x): of |x|, the sign copied from x: for |x| < 0.625 |x| +
 *          |x|^3 Q(x^2) (Cephes' tanhf), else q / (q + 2) with q =
 *          expm1(2|x|), |x| clamped to 10; both are computed and a
 *          select takes one.  Correctly rounded, tanh is 1 from 9.01;
 *          this one gives 1 first at 8.664 and between there and 9.01
 *          1 or the float below it (within an ulp, not monotone).
 * Error with FMA (any lanes) over every float32 in [2^-25, 16) of both
 * signs and in 32 to 512: expm1 1.509 ulp (at 0.386), log1p 1.394, tanh
 * 1.498; without FMA expm1 1.636, the others the same.  The tests
 * (tests/test_llvm.c, test_cpuhost.c) sweep every 127th bit pattern and
 * the special values; the documented and asserted bound is 2 ulp. */
#include "compiler/llvm/llvm_int.h"

static LLVMValueRef fc(Lower *L, double v) { return lower_const(L, TY_F32, v); }
static LLVMValueRef ic(Lower *L, long v) { return lower_const(L, TY_I32, (double)v); }

static LLVMValueRef fmad(Lower *L, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c)
{
	LLVMValueRef args[3] = {a, b, c};
	return lower_intrinsic(L, "llvm.fmuladd", LLVMTypeOf(a), args, 3);
}

static LLVMValueRef poly(Lower *L, LLVMValueRef x, const double *c, int n)
{
	LLVMValueRef p = fc(L, c[0]);
	for (int i = 1; i < n; i++)
		p = fmad(L, p, x, fc(L, c[i]));
	return p;
}

/* x, or hi where x > hi (ordered: NaN stays) */
static LLVMValueRef clamp_over(Lower *L, LLVMValueRef x, double hi)
{
	LLVMBuilderRef b = L->b;
	return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOGT, x, fc(L, hi), ""), fc(L, hi), x, "");
}

static LLVMValueRef as_int(Lower *L, LLVMValueRef f) { return LLVMBuildBitCast(L->b, f, lower_vty(L, TY_I32), ""); }
static LLVMValueRef as_float(Lower *L, LLVMValueRef i) { return LLVMBuildBitCast(L->b, i, lower_vty(L, TY_F32), ""); }

/* y * 2^n for n in [-151, 128] (integer lanes), in two exact steps. */
static LLVMValueRef scale2(Lower *L, LLVMValueRef y, LLVMValueRef n)
{
	LLVMBuilderRef b = L->b;
	LLVMValueRef n1 = LLVMBuildAShr(b, n, ic(L, 1), "");
	LLVMValueRef n2 = LLVMBuildSub(b, n, n1, "");
	LLVMValueRef s1 = as_float(L, LLVMBuildShl(b, LLVMBuildAdd(b, n1, ic(L, 127), ""), ic(L, 23), ""));
	LLVMValueRef s2 = as_float(L, LLVMBuildShl(b, LLVMBuildAdd(b, n2, ic(L, 127), ""), ic(L, 23), ""));
	return LLVMBuildFMul(b, LLVMBuildFMul(b, y, s1, ""), s2, "");
}

/* round(t) as a float and as an integer, for |t| < 2^22 (garbage, but
 * defined, for NaN). */
static LLVMValueRef round_magic(Lower *L, LLVMValueRef t, LLVMValueRef *ni)
{
	LLVMBuilderRef b = L->b;
	LLVMValueRef magic = fc(L, 12582912.0); /* 1.5 * 2^23 */
	LLVMValueRef s = LLVMBuildFAdd(b, t, magic, "");
	*ni = LLVMBuildSub(b, as_int(L, s), as_int(L, magic), "");
	return LLVMBuildFSub(b, s, magic, "");
}

/* The least float x whose e^x rounds to a float over 0 (e^x > 2^-150):
 * from there down to the smallest normal float (-87.34) the results are
 * subnormal. */
#define EXP_ZERO (-0x1.9fe368p+6)

/* Lanes whose result is not 0: x >= lo, or NaN. */
static LLVMValueRef over(Lower *L, LLVMValueRef x, double lo)
{
	return LLVMBuildFCmp(L->b, LLVMRealUGE, x, fc(L, lo), "");
}

/* y in the lanes of keep, 0 elsewhere: as the argument of a lane whose
 * result is 0, so that it computes 1, never a subnormal, and as that
 * result.  With AVX-512 each is one zero-masked instruction (the
 * multiply of scale2 for the result), as the clamp and the flush under
 * 2^-126 were before. */
static LLVMValueRef keep_in(Lower *L, LLVMValueRef keep, LLVMValueRef y)
{
	return LLVMBuildSelect(L->b, keep, y, fc(L, 0), "");
}

static LLVMValueRef exp_clamped(Lower *L, LLVMValueRef x, double hi);

/* e^r for |r| <= ln2/2 (a little more, from rounding n): 1 + r + r^2 q(r)
 * with q of degree 4 fitted for the least maximum relative error
 * (3.1e-9, 2^-28.3: well under float32's rounding), by Horner's rule in
 * six fused multiply-adds from the top coefficient down to the two 1s. */
static LLVMValueRef exp_poly(Lower *L, LLVMValueRef r)
{
	static const double p[] = {0x1.6a2430p-10, 0x1.1239e4p-7, 0x1.5558f2p-5, 0x1.555492p-3, 0x1.fffffcp-2, 1.0, 1.0};
	return poly(L, r, p, 7);
}

LLVMValueRef math_exp(Lower *L, LLVMValueRef x) { return exp_clamped(L, x, 89.0); }

/* exp of an argument known to be <= 0, -inf or NaN (no overflow side) */
LLVMValueRef math_exp_nonpos(Lower *L, LLVMValueRef x) { return exp_clamped(L, x, 0); }

/* AVX-512, 16 lanes, by a table of 2^(j/16): e^x = 2^floor(k/16) *
 * 2^((k mod 16)/16) * e^r with k = round(16 x log2 e), r = x - (k/16) ln2,
 * |r| <= ln2/32, where a cubic suffices.  One fma rounds x log2 e to a
 * sixteenth (1.5 * 2^19 puts the unit in the last place there), so the
 * sum's low 4 bits are k mod 16, which vpermps takes as its index as they
 * are, and vscalefps applies 2^floor(k/16) to a float whose floor is
 * just that: no integer steps.  11 ops where the degree-6 polynomial took
 * 12, and fewer fmas (in L1, one core of this AVX-512 host, sum of exps:
 * 6.5 -> 7.1 G/s).
 * x86 min returns its second operand when either is NaN, so clamping with
 * x second keeps NaN in one instruction; vscalefps scales with one
 * rounding, with correct overflow and subnormal results, and zeroes the
 * lanes under EXP_ZERO through its mask.  That compare takes the place of
 * a lower clamp: what the zeroed lanes compute on the way (inf or NaN for
 * -inf) is never used. */
static LLVMValueRef exp_avx512(Lower *L, LLVMValueRef x, double hi)
{
	LLVMBuilderRef b = L->b;
	LLVMValueRef rnd = LLVMConstInt(LLVMInt32TypeInContext(L->ctx), 4, 0); /* current direction */
	LLVMValueRef a[5] = {fc(L, hi), x, rnd}, xc = x;
	if (hi > 0) /* an argument known <= 0 (or NaN) needs no upper clamp */
		xc = lower_intrinsic0(L, "llvm.x86.avx512.min.ps.512", a, 3);
	/* lanes at or over EXP_ZERO, or NaN: the others become 0 */
	LLVMValueRef keep = LLVMBuildFCmp(b, LLVMRealUGE, x, fc(L, EXP_ZERO), "");
	keep = LLVMBuildBitCast(b, keep, LLVMInt16TypeInContext(L->ctx), "");
	LLVMValueRef magic = fc(L, 786432.0); /* 1.5 * 2^19 */
	LLVMValueRef t = fmad(L, xc, fc(L, 1.44269504088896341), magic);
	LLVMValueRef kq = LLVMBuildFSub(b, t, magic, ""); /* k / 16 */
	/* ln2 in two parts, the first of 13 bits: kq (at most 11 bits) times
	 * it is exact, and so is x less that (Cody-Waite) */
	LLVMValueRef r = fmad(L, kq, fc(L, -0x1.62ep-1), xc);
	r = fmad(L, kq, fc(L, -0x1.0bfbe8p-15), r);
	LLVMValueRef tab[16];
	for (int j = 0; j < 16; j++)
		tab[j] = LLVMConstReal(LLVMFloatTypeInContext(L->ctx), (double)(float)exp2(j / 16.0));
	LLVMValueRef pa[2] = {LLVMConstVector(tab, 16), as_int(L, t)};
	LLVMValueRef T = lower_intrinsic0(L, "llvm.x86.avx512.permvar.sf.512", pa, 2);
	/* e^r - 1 = r + c2 r^2 + c3 r^3, the two fitted for the least maximum
	 * relative error on |r| <= ln2/32 (1.7e-9, 2^-29.2); T + T (e^r - 1)
	 * rounds once */
	LLVMValueRef q = fmad(L, fc(L, 0x1.5555ap-3), r, fc(L, 0x1.00022ap-1));
	q = LLVMBuildFMul(b, fmad(L, q, r, fc(L, 1.0)), r, "");
	LLVMValueRef y = fmad(L, T, q, T);
	a[0] = y, a[1] = kq, a[2] = LLVMConstNull(LLVMTypeOf(y)), a[3] = keep, a[4] = rnd;
	return lower_intrinsic0(L, "llvm.x86.avx512.mask.scalef.ps.512", a, 5);
}

static LLVMValueRef exp_clamped(Lower *L, LLVMValueRef x, double hi)
{
	if (L->avx512 && L->W == 16)
		return exp_avx512(L, x, hi);
	LLVMBuilderRef b = L->b;
	LLVMValueRef keep = over(L, x, EXP_ZERO), ni;
	LLVMValueRef xc = keep_in(L, keep, hi > 0 ? clamp_over(L, x, hi) : x);
	LLVMValueRef n = round_magic(L, LLVMBuildFMul(b, xc, fc(L, 1.44269504088896341), ""), &ni);
	LLVMValueRef r = fmad(L, n, fc(L, -0.693359375), xc);
	r = fmad(L, n, fc(L, 2.12194440e-4), r);
	return keep_in(L, keep, scale2(L, exp_poly(L, r), ni));
}

LLVMValueRef math_exp2(Lower *L, LLVMValueRef x)
{
	static const double p[] = {1.535336188319500E-4, 1.339887440266574E-3, 9.618437357674640E-3,
				   5.550332471162809E-2, 2.402264791363012E-1, 6.931472028550421E-1};
	LLVMBuilderRef b = L->b;
	/* 2^x rounds to 0 at -150 (a tie, to even) and under */
	LLVMValueRef keep = over(L, x, -150.0), ni;
	LLVMValueRef xc = keep_in(L, keep, clamp_over(L, x, 128.5));
	LLVMValueRef n = round_magic(L, xc, &ni);
	LLVMValueRef r = LLVMBuildFSub(b, xc, n, "");
	LLVMValueRef y = fmad(L, poly(L, r, p, 6), r, fc(L, 1.0));
	return keep_in(L, keep, scale2(L, y, ni));
}

/* Cephes' logf polynomial: log(1 + f) = f - f^2/2 + f^3 P(f) for f in
 * [sqrt(1/2) - 1, sqrt 2 - 1], plus e ln2 in two parts. */
static LLVMValueRef log_poly(Lower *L, LLVMValueRef f, LLVMValueRef ef)
{
	static const double p[] = {7.0376836292E-2, -1.1514610310E-1, 1.1676998740E-1,
				   -1.2420140846E-1, 1.4249322787E-1, -1.6668057665E-1,
				   2.0000714765E-1, -2.4999993993E-1, 3.3333331174E-1};
	LLVMBuilderRef b = L->b;
	LLVMValueRef z = LLVMBuildFMul(b, f, f, "");
	LLVMValueRef y = LLVMBuildFMul(b, LLVMBuildFMul(b, poly(L, f, p, 9), f, ""), z, "");
	y = fmad(L, ef, fc(L, -2.12194440e-4), y);
	y = fmad(L, z, fc(L, -0.5), y);
	LLVMValueRef r = LLVMBuildFAdd(b, f, y, "");
	return fmad(L, ef, fc(L, 0.693359375), r);
}

/* NaN where x < 0 or NaN: one NaN, the same bits in every path */
static LLVMValueRef log_nan(Lower *L, LLVMValueRef x, LLVMValueRef r)
{
	return LLVMBuildSelect(L->b, LLVMBuildFCmp(L->b, LLVMRealULT, x, fc(L, 0), ""), fc(L, NAN), r, "");
}

/* AVX-512, 16 lanes: vgetmantps and vgetexpps split x (subnormals
 * included) into m in [1, 2) and its exponent as a float, and one masked
 * multiply and add move m over sqrt 2 down to [sqrt(1/2), 1) with the
 * exponent up, which gives the f and e of the portable path bit for bit:
 * 6 ops where the bit operations, the subnormal scaling and the integer
 * conversion took 15.  vfixupimmps sets 0 -> -inf and +inf -> +inf from
 * x's class in one more, where two compares and selects did it. */
static LLVMValueRef log_avx512(Lower *L, LLVMValueRef x)
{
	LLVMBuilderRef b = L->b;
	LLVMTypeRef i16 = LLVMInt16TypeInContext(L->ctx), i32 = LLVMInt32TypeInContext(L->ctx);
	LLVMValueRef all = LLVMConstAllOnes(i16), cur = LLVMConstInt(i32, 4, 0), undef = LLVMGetUndef(LLVMTypeOf(x));
	/* interval [1, 2) with the sign of x (imm 0) */
	LLVMValueRef ma[5] = {x, LLVMConstInt(i32, 0, 0), undef, all, cur};
	LLVMValueRef m = lower_intrinsic0(L, "llvm.x86.avx512.mask.getmant.ps.512", ma, 5);
	LLVMValueRef ea[4] = {x, undef, all, cur};
	LLVMValueRef ef = lower_intrinsic0(L, "llvm.x86.avx512.mask.getexp.ps.512", ea, 4);
	LLVMValueRef hi = LLVMBuildFCmp(b, LLVMRealOGE, m, fc(L, 2 * 0.707106781186547524), "");
	m = LLVMBuildSelect(b, hi, LLVMBuildFMul(b, m, fc(L, 0.5), ""), m, "");
	ef = LLVMBuildSelect(b, hi, LLVMBuildFAdd(b, ef, fc(L, 1.0), ""), ef, "");
	LLVMValueRef r = log_poly(L, LLVMBuildFSub(b, m, fc(L, 1.0), ""), ef);
	/* token per class of x, 4 bits each from bit 0: QNaN, SNaN, 0, 1,
	 * -inf, +inf, negative, positive; 0 keeps r, 4 is -inf, 5 +inf */
	LLVMValueRef fa[6] = {r, x, lower_const(L, TY_I32, (double)0x00500400), LLVMConstInt(i32, 0, 0), all, cur};
	r = lower_intrinsic0(L, "llvm.x86.avx512.mask.fixupimm.ps.512", fa, 6);
	return log_nan(L, x, r);
}

/* x = m 2^e with m in [sqrt(1/2), sqrt 2) by bit operations, subnormals
 * scaled by 2^23 first */
LLVMValueRef math_log(Lower *L, LLVMValueRef x)
{
	if (L->avx512 && L->W == 16)
		return log_avx512(L, x);
	LLVMBuilderRef b = L->b;
	LLVMValueRef sub = LLVMBuildFCmp(b, LLVMRealOLT, x, fc(L, 0x1p-126), "");
	LLVMValueRef xs = LLVMBuildSelect(b, sub, LLVMBuildFMul(b, x, fc(L, 0x1p23), ""), x, "");
	LLVMValueRef bias = LLVMBuildSelect(b, sub, ic(L, 126 + 23), ic(L, 126), "");
	LLVMValueRef bits = as_int(L, xs);
	LLVMValueRef e = LLVMBuildSub(b, LLVMBuildLShr(b, bits, ic(L, 23), ""), bias, "");
	LLVMValueRef m = as_float(L, LLVMBuildOr(b, LLVMBuildAnd(b, bits, ic(L, 0x007fffff), ""), ic(L, 0x3f000000), ""));
	/* m in [0.5, 1): below sqrt(1/2) use 2m - 1 and e - 1, else m - 1 */
	LLVMValueRef lo = LLVMBuildFCmp(b, LLVMRealOLT, m, fc(L, 0.707106781186547524), "");
	e = LLVMBuildSub(b, e, LLVMBuildZExt(b, lo, lower_vty(L, TY_I32), ""), "");
	LLVMValueRef f = LLVMBuildFSub(b, LLVMBuildSelect(b, lo, LLVMBuildFAdd(b, m, m, ""), m, ""), fc(L, 1.0), "");
	LLVMValueRef r = log_poly(L, f, LLVMBuildSIToFP(b, e, lower_vty(L, TY_F32), ""));
	/* special values */
	r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOEQ, x, fc(L, INFINITY), ""), fc(L, INFINITY), r, "");
	r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOEQ, x, fc(L, 0), ""), fc(L, -INFINITY), r, "");
	return log_nan(L, x, r);
}

/* e^x - 1 for x in [-25, 88.8] (or NaN), of any size: see the top. */
static LLVMValueRef expm1_core(Lower *L, LLVMValueRef x)
{
	static const double p[] = {0x1.6b55a2p-10, 0x1.12287cp-7, 0x1.555736p-5, 0x1.5554aep-3, 0x1.fffffep-2};
	LLVMBuilderRef b = L->b;
	LLVMValueRef magic = fc(L, 12582912.0); /* 1.5 * 2^23 */
	LLVMValueRef s = fmad(L, x, fc(L, 1.44269504088896341), magic);
	LLVMValueRef j = LLVMBuildFSub(b, s, magic, "");
	LLVMValueRef ni = LLVMBuildSub(b, as_int(L, s), as_int(L, magic), "");
	/* ln2 in two parts, the first of 14 bits: j (at most 8) times it is
	 * exact */
	LLVMValueRef f = fmad(L, j, fc(L, -0x1.62e4p-1), x);
	f = fmad(L, j, fc(L, -0x1.7f7d1cp-20), f);
	LLVMValueRef q = fmad(L, LLVMBuildFMul(b, f, f, ""), poly(L, f, p, 5), f);
	/* 2^(j-1) */
	LLVMValueRef h = as_float(L, LLVMBuildShl(b, LLVMBuildAdd(b, ni, ic(L, 126), ""), ic(L, 23), ""));
	LLVMValueRef y = fmad(L, q, h, LLVMBuildFSub(b, h, fc(L, 0.5), ""));
	return LLVMBuildFMul(b, y, fc(L, 2.0), "");
}

LLVMValueRef math_expm1(Lower *L, LLVMValueRef x)
{
	LLVMBuilderRef b = L->b;
	LLVMValueRef xc = clamp_over(L, x, 88.8);
	xc = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOLT, x, fc(L, -25.0), ""), fc(L, -25.0), xc, "");
	LLVMValueRef y = expm1_core(L, xc);
	LLVMValueRef tiny = LLVMBuildFCmp(b, LLVMRealOLT, lower_intrinsic(L, "llvm.fabs", LLVMTypeOf(x), &x, 1),
					  fc(L, 0x1p-25), "");
	return LLVMBuildSelect(b, tiny, x, y, "");
}

LLVMValueRef math_log1p(Lower *L, LLVMValueRef x)
{
	LLVMBuilderRef b = L->b;
	LLVMValueRef u = LLVMBuildFAdd(b, x, fc(L, 1.0), "");
	/* k in its exponent field: 1 + x over sqrt(1/2) 2^k */
	LLVMValueRef kb = LLVMBuildAnd(b, LLVMBuildSub(b, as_int(L, u), ic(L, 0x3f3504f3), ""), ic(L, (long)0xff800000u),
				       "");
	LLVMValueRef k = LLVMBuildSIToFP(b, LLVMBuildAShr(b, kb, ic(L, 23), ""), lower_vty(L, TY_F32), "");
	/* x 2^-k by its exponent (x is normal where k is not 0), and
	 * 2^-k - 1 as 2^(2-k) / 4 - 1, 2^(2-k) normal for k up to 128 */
	LLVMValueRef xs = as_float(L, LLVMBuildSub(b, as_int(L, x), kb, ""));
	LLVMValueRef s4 = as_float(L, LLVMBuildSub(b, ic(L, 0x40800000), kb, ""));
	LLVMValueRef m = LLVMBuildFAdd(b, xs, fmad(L, s4, fc(L, 0.25), fc(L, -1.0)), "");
	LLVMValueRef r = log_poly(L, m, k);
	r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOEQ, x, fc(L, INFINITY), ""), fc(L, INFINITY), r, "");
	r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOEQ, x, fc(L, 0), ""), x, r, "");
	r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOEQ, x, fc(L, -1.0), ""), fc(L, -INFINITY), r, "");
	return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealULT, x, fc(L, -1.0), ""), fc(L, NAN), r, "");
}

LLVMValueRef math_tanh(Lower *L, LLVMValueRef x)
{
	static const double p[] = {-5.70498872745E-3, 2.06390887954E-2, -5.37397155531E-2, 1.33314422036E-1,
				   -3.33332819422E-1};
	LLVMBuilderRef b = L->b;
	LLVMTypeRef t = LLVMTypeOf(x);
	LLVMValueRef ax = lower_intrinsic(L, "llvm.fabs", t, &x, 1);
	LLVMValueRef a2 = LLVMBuildFMul(b, clamp_over(L, ax, 10.0), fc(L, 2.0), "");
	LLVMValueRef q = expm1_core(L, a2);
	LLVMValueRef big = LLVMBuildFDiv(b, q, LLVMBuildFAdd(b, q, fc(L, 2.0), ""), "");
	LLVMValueRef z = LLVMBuildFMul(b, x, x, "");
	LLVMValueRef small = fmad(L, LLVMBuildFMul(b, poly(L, z, p, 5), z, ""), ax, ax);
	/* of |x|, then the sign: -0 + a product of zeros would be +0 */
	LLVMValueRef cs[2] = {LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOLT, ax, fc(L, 0.625), ""), small, big, ""), x};
	return lower_intrinsic(L, "llvm.copysign", t, cs, 2);
}

LLVMValueRef math_f32(Lower *L, int op, LLVMValueRef x)
{
	switch (op) {
	case EXPR_EXP: return math_exp(L, x);
	case EXPR_EXP2: return math_exp2(L, x);
	case EXPR_LOG: return math_log(L, x);
	case EXPR_EXPM1: return math_expm1(L, x);
	case EXPR_LOG1P: return math_log1p(L, x);
	case EXPR_TANH: return math_tanh(L, x);
	default: return NULL;
	}
}
