/* mathtest.h: the backend's float32 exp, exp2 and log against libm
 * (test_llvm.c on the host, test_cpuhost.c compiled for other CPUs). */
#ifndef ASSOC_MATHTEST_H
#define ASSOC_MATHTEST_H

#include <float.h>
#include <math.h>
#include <string.h>

#include <criterion/criterion.h>

#include "compiler/llvm/llvm.h"
#include "compiler/llvm/llvm_int.h"

/* Distance of y from the exact value r in float32 ulps at r (the spacing
 * of subnormals below 2^-126); a zero must be exact. */
static inline double ulps(float y, double r)
{
	if (isnan(r))
		return isnan(y) ? 0 : INFINITY;
	if (r == 0)
		return y == 0 ? 0 : INFINITY;
	if (isinf(r) || fabs(r) > FLT_MAX)
		return y == (r > 0 ? INFINITY : -INFINITY) ? 0 : INFINITY;
	if (isinf(y) || isnan(y))
		return INFINITY;
	int e;
	frexp(r, &e);
	double ulp = ldexp(1, (e - 24 < -149 ? -149 : e - 24));
	return fabs(y - r) / ulp;
}

/* The values where the functions change form or are exact, each also
 * negated: 0, infinities and NaN, exp's and exp2's thresholds, every
 * power of two (subnormals included), and 8 floats either side of 1, 2,
 * 0.5, sqrt 2 and sqrt(1/2) (log's range reduction splits there).
 * x holds 1000. */
static inline int special_inputs(float *x)
{
	static const float fixed[] = {0.0f, INFINITY, NAN, FLT_MAX, 88.72283f, 88.7229f, 87.33654f, 103.97208f,
				      0x1.9fe368p+6f, 0x1.9fe36ap+6f, 104.0f, 126.5f, 149.0f, 149.99998f, 150.0f, 150.00002f,
				      1e-40f};
	static const float near[] = {1.0f, 2.0f, 0.5f, 0x1.6a09e6p+0f, 0x1.6a09e6p-1f};
	int n = 0;
	for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
		x[n++] = fixed[i];
	for (int e = -149; e <= 127; e++)
		x[n++] = ldexpf(1.0f, e);
	for (size_t i = 0; i < sizeof near / sizeof *near; i++)
		for (int d = -8; d <= 8; d++) {
			uint32_t b;
			memcpy(&b, &near[i], 4);
			b += (uint32_t)d;
			memcpy(&x[n++], &b, 4);
		}
	for (int i = 0, m = n; i < m; i++)
		x[n++] = -x[i];
	return n;
}

typedef struct {
	double worst;
	float at;
	long n;
} Err;

/* op (EXPR_EXP, EXPR_LOG, ...) over float32 arrays in a kernel of lanes
 * lanes (0: the host's widest), *k to free; the test fails where it does
 * not compile. */
static inline LlvmMathFn math_fn(int op, int lanes, LlvmKernel **k)
{
	LlvmMathFn fn;
	char msg[300];
	cr_assert_eq(llvm_math_kernel(op, lanes, k, &fn, msg, sizeof msg), 0, "%s", msg);
	return fn;
}

/* Every float32 bit pattern with the given stride (both signs, all
 * exponents, NaN and infinities), plus the special values. */
static inline Err sweep(int op, int lanes, unsigned stride, double (*ref)(double))
{
	LlvmKernel *k;
	LlvmMathFn fn = math_fn(op, lanes, &k);
	enum { N = 1 << 16 };
	static float x[N], y[N];
	Err e = {0, 0, 0};
	uint64_t bits = 0;
	static float special[1000];
	int ns = special_inputs(special), first = 1;
	while (bits < (1ull << 32)) {
		int n = 0;
		if (first)
			for (; n < ns; n++)
				x[n] = special[n];
		first = 0;
		for (; n < N - 3 && bits < (1ull << 32); n++, bits += stride) {
			uint32_t b = (uint32_t)bits;
			memcpy(&x[n], &b, 4);
		}
		fn(x, y, n);
		for (int i = 0; i < n; i++) {
			double u = ulps(y[i], ref(x[i]));
			if (u > e.worst || (isnan(u) && !isnan(e.worst)))
				e.worst = u, e.at = x[i];
		}
		e.n += n;
	}
	llvm_kernel_free(k);
	return e;
}

#endif
