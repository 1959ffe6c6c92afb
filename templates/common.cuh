/* common.cuh: the prelude of every generated module, for NVRTC and for the
 * emulator alike (runtime/emu/emu.hpp defines the CUDA built-ins there).
 *
 * Args is the one kernel parameter: pointers to the inputs (element inputs,
 * then column inputs, then row inputs, in spec order), to the outputs
 * (finalize outputs, then map outputs), a workspace for split kernels, the
 * shape, and the runtime params as doubles.  Its layout is fixed so that a
 * host written in C can build it (compiler/cuda/cuda.h: CudaArgs). */
#ifndef ASSOC_EMU
#define ASC_DEV __device__ __forceinline__
/* A function compiled once per module and called from several kernels:
 * the row loops, whose code would otherwise be optimized again for every
 * kernel that inlines them (NVRTC's time grows with every copy).  They
 * reach the kernel's Args by its address (asc_uptr, so that the compiler
 * keeps a pointer and does not copy the whole struct at each call) and
 * copy what they use into registers. */
#define ASC_FN __device__ __noinline__
/* The kernel parameter, addressable in place (no copy to local memory
 * when its address is taken). */
#if defined(__CUDACC_VER_MAJOR__) && __CUDACC_VER_MAJOR__ * 100 + __CUDACC_VER_MINOR__ >= 1107
#define ASC_PARAM const __grid_constant__
#else
#define ASC_PARAM const
#endif
#define ASC_SHARED(T, name, n) __shared__ T name[n]
/* The launch's dynamic shared memory (16-byte aligned for cp.async and
 * ldmatrix); one such array per kernel: they all start at the same address. */
#define ASC_DYN_SHARED(T, name) extern __shared__ __align__(16) T name[]
/* Every ASC_LD and ASC_ST is to global memory: said to the compiler, so
 * that pointers read from Args inside an ASC_FN still give ld.global. */
template <class T> __device__ __forceinline__ T *asc_glob(T *p)
{
	__builtin_assume(__isGlobal(p));
	return p;
}
#define ASC_LD(p) (*asc_glob(p))
#define ASC_ST(p, v) (*asc_glob(p) = (v))
/* A load from L2, past this multiprocessor's L1: of what other blocks
 * wrote during the launch. */
#define ASC_LDCG(p) __ldcg(asc_glob(p))
typedef unsigned long long asc_uptr;
#endif

#define ASC_MAXIN 16
#define ASC_MAXOUT 16
#define ASC_MAXP 16
#define ASC_INF __int_as_float(0x7f800000)

struct Args {
	const void *in[ASC_MAXIN];
	void *out[ASC_MAXOUT];
	void *ws;
	int rows, len, split, chunk;
	double prm[ASC_MAXP];
	int heads, kv_heads; /* attention: query heads, key/value heads */
};

struct alignas(16) asc_f4 { float x, y, z, w; };
struct alignas(8) asc_h4 { unsigned short x, y, z, w; };

ASC_DEV float asc_f16(unsigned short h)
{
#ifdef ASSOC_EMU
	return emu_half_to_float(h);
#else
	float f;
	asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
	return f;
#endif
}

ASC_DEV float asc_bf16(unsigned short h) { return __int_as_float((int)((unsigned)h << 16)); }

/* OCP E4M3 "fn" (1 sign, 4 exponent bits of bias 7, 3 mantissa bits; no
 * infinities, S.1111.111 NaN) by bit operations, the same on a device and
 * in the emulator: a normal's exponent and mantissa shifted into float's
 * places with the bias moved from 7 to 127, a subnormal (m * 2^-9) by an
 * exact int-to-float conversion, so no float32 subnormal ever appears for
 * flush-to-zero to lose. */
ASC_DEV float asc_f8e4m3(unsigned char b)
{
	unsigned em = b & 0x7fu;
	float v = em >= 8 ? __int_as_float((int)((em << 20) + (120u << 23))) : (float)(int)em * 0.001953125f;
	v = em == 0x7fu ? __int_as_float(0x7fc00000) : v;
	return __int_as_float(__float_as_int(v) | (int)((unsigned)(b & 0x80u) << 24));
}

/* The spec's subtraction: (-inf) - (-inf) = -inf, so that rescaling an empty
 * state by exp(a.m - m) gives 0.  Used wherever no operand is proven to
 * differ from -inf. */
ASC_DEV float asc_sub(float x, float y) { return (x == -ASC_INF && y == -ASC_INF) ? -ASC_INF : x - y; }
ASC_DEV double asc_subd(double x, double y)
{
	return (x == -(double)ASC_INF && y == -(double)ASC_INF) ? -(double)ASC_INF : x - y;
}
/* exp(x - x) under the spec's rules: 0 for -inf, 1 for a finite x, NaN for
 * +inf and NaN (x - x); one select, so no branch. */
ASC_DEV float asc_one(float x) { return x == -ASC_INF ? 0.0f : x - x + 1.0f; }
ASC_DEV double asc_oned(double x) { return x == -(double)ASC_INF ? 0.0 : x - x + 1.0; }
/* exp of a guarded x - x: exp(where(x == inf, 0, x - x)) and
 * exp(where(x == x, 0, x - x)), 1 for +inf (and, the second, for -inf) */
ASC_DEV float asc_one_inf(float x) { return x == ASC_INF ? 1.0f : asc_one(x); }
ASC_DEV double asc_one_infd(double x) { return x == (double)ASC_INF ? 1.0 : asc_oned(x); }
ASC_DEV float asc_one_max(float x) { return x == x ? 1.0f : x; }
ASC_DEV double asc_one_maxd(double x) { return x == x ? 1.0 : x; }
ASC_DEV float asc_powi(float x, int k)
{
	float r = 1, b = x;
	unsigned n = k < 0 ? -(unsigned)k : (unsigned)k;
	for (; n; n >>= 1, b *= b)
		if (n & 1)
			r *= b;
	return k < 0 ? 1 / r : r;
}
ASC_DEV double asc_powid(double x, int k)
{
	double r = 1, b = x;
	unsigned n = k < 0 ? -(unsigned)k : (unsigned)k;
	for (; n; n >>= 1, b *= b)
		if (n & 1)
			r *= b;
	return k < 0 ? 1 / r : r;
}
/* An integer's power, wrapping on overflow as the CPU backend's and the
 * interpreter's integers do; the exponent is never negative (the spec
 * refuses that for an integer base). */
ASC_DEV long long asc_powll(long long x, int k)
{
	unsigned long long r = 1, b = (unsigned long long)x;
	for (unsigned n = (unsigned)k; n; n >>= 1, b *= b)
		if (n & 1)
			r *= b;
	return (long long)r;
}
/* The carrier's integer arithmetic wraps in two's complement (the spec
 * format's rule, and the interpreter's and the CPU backend's).  In C++ a
 * signed overflow is undefined, and an optimizer (NVRTC's, the emulator's
 * host compiler) may then fold `k + c < k` to false or `j * c > 0` to
 * `j > 0`.  So sums, differences, products, negations and absolute values are
 * computed on the unsigned type, whose arithmetic is modular,
 * and converted back: that conversion keeps the bits, as C++20 defines it
 * and as NVRTC, g++ and clang do in every dialect.  PTX's add, sub and mul
 * are the same instructions for both, so the code does not grow. */
ASC_DEV int asc_addi(int a, int b) { return (int)((unsigned)a + (unsigned)b); }
ASC_DEV long long asc_addl(long long a, long long b)
{
	return (long long)((unsigned long long)a + (unsigned long long)b);
}
ASC_DEV int asc_subi(int a, int b) { return (int)((unsigned)a - (unsigned)b); }
ASC_DEV long long asc_subl(long long a, long long b)
{
	return (long long)((unsigned long long)a - (unsigned long long)b);
}
ASC_DEV int asc_muli(int a, int b) { return (int)((unsigned)a * (unsigned)b); }
ASC_DEV long long asc_mull(long long a, long long b)
{
	return (long long)((unsigned long long)a * (unsigned long long)b);
}
ASC_DEV int asc_negi(int a) { return (int)(0u - (unsigned)a); }
ASC_DEV long long asc_negl(long long a) { return (long long)(0ull - (unsigned long long)a); }
/* abs of the most negative value is itself, as its negation wraps */
ASC_DEV int asc_absi(int a) { return a < 0 ? asc_negi(a) : a; }
ASC_DEV long long asc_absl(long long a) { return a < 0 ? asc_negl(a) : a; }
/* topk (ir/ops.def): whether (v, i) ranks before (w, j): values
 * descending, NaN after every number, equal values by ascending index
 * taken unsigned, so that an empty slot's -1 comes after every index. */
template <class T> ASC_DEV bool asc_topk_before(T v, int i, T w, int j)
{
	bool vn = v != v, wn = w != w, ilt = (unsigned)i < (unsigned)j;
	if (vn || wn)
		return vn != wn ? wn : ilt;
	return v > w || (v == w && ilt);
}
/* One pair (x, xi) inserted into the sorted K slots (ov, oi), the last
 * slot's pair falling off: every slot a compare and two selects, so that
 * the list stays in registers once unrolled (no indexing by a value). */
template <int K, class T> ASC_DEV void asc_topk_insert(T *ov, int *oi, T x, int xi)
{
#pragma unroll
	for (int t = 0; t < K; t++) {
		bool c = asc_topk_before(x, xi, ov[t], oi[t]);
		T y = c ? ov[t] : x;
		int yi = c ? oi[t] : xi;
		ov[t] = c ? x : ov[t];
		oi[t] = c ? xi : oi[t];
		x = y, xi = yi;
	}
}
/* The K best of a sorted list a (K slots, as lift and merge make it) and
 * the NB pairs of the sorted list b, into (ov, oi): b's pairs inserted in
 * turn until one ranks after the last slot, as every pair after it does
 * too (the order is a strict weak one).  One insertion in a loop, not NB
 * unrolled: a fold's merge of a lifted pair (one pair and empty slots)
 * mostly stops at its first compare, and the module stays a size NVRTC
 * and ptxas take in a fraction of a second.  b's pairs move down a slot
 * each turn, so that they too are only ever indexed by constants. */
template <int K, int NB, class T>
ASC_DEV void asc_topk(const T *av, const int *ai, const T *bv, const int *bi, T *ov, int *oi)
{
#pragma unroll
	for (int t = 0; t < K; t++)
		ov[t] = av[t], oi[t] = ai[t];
	if (NB == 1) {
		asc_topk_insert<K>(ov, oi, bv[0], bi[0]);
		return;
	}
	T rv[NB];
	int ri[NB];
#pragma unroll
	for (int q = 0; q < NB; q++)
		rv[q] = bv[q], ri[q] = bi[q];
#pragma unroll 1
	for (int q = 0; q < NB; q++) {
		T x = rv[0];
		int xi = ri[0];
		if (!asc_topk_before(x, xi, ov[K - 1], oi[K - 1]))
			break;
#pragma unroll
		for (int u = 0; u + 1 < NB; u++)
			rv[u] = rv[u + 1], ri[u] = ri[u + 1];
		asc_topk_insert<K>(ov, oi, x, xi);
	}
}
/* [lo, hi] of a product of intervals, NaN-free: the generated attn_tile
 * (compiler/cuda/cuda_attn.c) bounds masks with it, ahead of the templates. */
ASC_DEV void asc_iv_mul(double a, double b, double c, double d, double &lo, double &hi)
{
	double p[4] = {a * c, a * d, b * c, b * d};
	lo = hi = p[0];
	for (int k = 1; k < 4; k++) {
		if (p[k] != p[k]) {
			lo = -(double)ASC_INF, hi = (double)ASC_INF;
			return;
		}
		lo = p[k] < lo ? p[k] : lo;
		hi = p[k] > hi ? p[k] : hi;
	}
	if (p[0] != p[0])
		lo = -(double)ASC_INF, hi = (double)ASC_INF;
}
/* An interval's final form at a node of attn_tile: past the range the
 * kernel's integers hold exactly (wide = 2^31 for int, 2^53 for long
 * long) unknown; a float node (wide = 0) widened by a relative 2^-20, far
 * past its float32 rounding, so that no tile is dropped by a comparison
 * the kernel rounds the other way (as compiler/llvm/mask_live.c does). */
ASC_DEV void asc_iv_settle(double &lo, double &hi, double wide)
{
	if (lo != lo || hi != hi || (wide && (fabs(lo) >= wide || fabs(hi) >= wide))) {
		lo = -(double)ASC_INF, hi = (double)ASC_INF;
		return;
	}
	if (!wide) {
		lo -= fabs(lo) * 9.5367431640625e-07 + 1.1754943508222875e-38;
		hi += fabs(hi) * 9.5367431640625e-07 + 1.1754943508222875e-38;
	}
}
