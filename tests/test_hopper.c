/* test_hopper.c: the Hopper wrappers (templates/hopper.cuh) on the
 * emulator, through kernels written on them (tests/hopper/emu_kernels.cu):
 * TMA tile loads land their boxes swizzled, with zeros outside the tensor;
 * mbarrier phases and parities carry a ring of stages; wgmma gives the
 * plain product of operands laid out as attention lays them (K-major Q
 * and K, MN-major V, A in registers), with D written only at the wait;
 * and each misuse is reported: a read of a TMA destination before the
 * wait, a wrong parity (a deadlock naming the barrier), a missing
 * fence.proxy.async or wgmma.fence, D or an operand written while a wgmma
 * is in flight (the operands are read until the wait that retires it: a
 * store or TMA copy over them after a release before that wait races
 * with the wgmma), an exit before wgmma.wait_group, a warp left out of a
 * warpgroup's wgmma or setmaxnreg or issuing another wgmma, a wgmma
 * reading what TMA has not landed, a bad register count or one past the
 * SM's registers; named barriers order warpgroups' turns, and their
 * misuse is reported; a 1D bulk copy lands at the wait on its barrier,
 * and its misuse is reported; the blocks of a cluster read each other's shared
 * memory after a cluster barrier, and its misuse is reported (a write
 * between a thread's arrival and its wait is not ordered before its
 * peers' reads after theirs); accesses of a
 * word by threads of different warps race unless a chain of barriers orders
 * them, a named barrier ordering only its own threads (the report names
 * the named barrier both should join).  And the GPU side
 * of every wrapper compiles with NVRTC and assembles for sm_90a. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/cuda/cuda.h"
#include "compiler/cuda/nvrtc.h"
#include "compiler/devices/emu.h"
#include "compiler/devices/run.h"
#include "compiler/util/cache.h"
#include "cudatest.h"
#include "runtime/emu/emu_tmap.h"
#include "testutil.h"

/* templates/hopper.cuh's AscTmap */
typedef struct {
	_Alignas(64) unsigned long long w[16];
} Tmap;

typedef struct {
	Tmap m2, m3;
	unsigned *out;
	unsigned expect;
	int words;
	int mode;
} TmaArgs;

typedef struct {
	Tmap m;
	unsigned *out;
	int parity0;
} RingArgs;

typedef struct {
	Tmap q, k, v;
	const unsigned *p;
	float *s, *o;
	int nowait;
} MmaArgs;

typedef struct {
	int mode;
	float *out;
} WgArgs;

typedef struct {
	Tmap m;
	unsigned *out;
	int mode;
} WgRaceArgs;

/* The wrappers, then the kernels. */
static EmuLib *lib(void)
{
	cuda_test_cache();
	char *k = cache_read("tests/hopper/emu_kernels.cu", NULL);
	cr_assert(k, "tests/hopper/emu_kernels.cu");
	const Blob *h = blob_find("hopper");
	cr_assert(h);
	size_t n = h->len + strlen(k) + 2;
	char *src = malloc(n);
	snprintf(src, n, "%s\n%s", h->text, k);
	EmuLib *l;
	char msg[8192];
	cr_assert_eq(emu_open(src, &l, msg, sizeof msg), 0, "%s", msg);
	free(src);
	free(k);
	return l;
}

static void tmap2(Tmap *m, int eb, const void *base, unsigned long long d0, unsigned long long d1, unsigned b0, unsigned b1,
		  int swz)
{
	unsigned long long dims[2] = {d0, d1}, strides[1] = {d0 * (unsigned long long)eb};
	unsigned box[2] = {b0, b1};
	char msg[256];
	cr_assert_eq(emu_tmap_encode(m, eb, 2, base, dims, strides, box, swz, msg, sizeof msg), 0, "%s", msg);
}

/* The address a chunk at byte a lands at under a swizzle of span bytes. */
static unsigned swizzle(unsigned a, int span) { return span ? a ^ (((a >> 7) & (unsigned)(span / 16 - 1)) << 4) : a; }

/* The 16-bit element at byte b of words w (little-endian halves). */
static unsigned half_at(const unsigned *w, unsigned b) { return (w[b / 4] >> (8 * (b % 4))) & 0xffffu; }

/* tensor elements: distinct, never zero */
static unsigned short t2(int r, int c) { return (unsigned short)(1 + r * 97 + c); }
static unsigned short t3(int z, int r, int c) { return (unsigned short)(20000 + z * 1000 + r * 64 + c); }

/* Boxes of w x 16 and w x 8 x 2 elements, w = 64 or the swizzle span's worth. */
static int box_w(int swz) { return swz ? swz / 2 : 64; }

static void tma_args(TmaArgs *a, unsigned short *g2, unsigned short *g3, unsigned *out, int swz)
{
	for (int r = 0; r < 70; r++)
		for (int c = 0; c < 96; c++)
			g2[r * 96 + c] = t2(r, c);
	for (int z = 0; z < 3; z++)
		for (int r = 0; r < 10; r++)
			for (int c = 0; c < 64; c++)
				g3[(z * 10 + r) * 64 + c] = t3(z, r, c);
	memset(a, 0, sizeof *a);
	unsigned w = (unsigned)box_w(swz);
	tmap2(&a->m2, 2, g2, 96, 70, w, 16, swz);
	unsigned long long dims[3] = {64, 10, 3}, strides[2] = {128, 1280};
	unsigned box[3] = {w, 8, 2};
	char msg[256];
	cr_assert_eq(emu_tmap_encode(&a->m3, 2, 3, g3, dims, strides, box, swz, msg, sizeof msg), 0, "%s", msg);
	a->out = out;
	a->expect = 2 * w * 16 * 2;
	a->words = (int)(8 * w);
}

/* Each swizzle (and none): the 2D box at (48, 60) over 96 x 70 (columns
 * from 96 and rows from 70 zeros) and the 3D box at (-16, 5, 2) over 64 x
 * 10 x 3, at byte 2048, read back through the swizzle. */
Test(hopper, tma_boxes_land_swizzled_with_zeros_outside)
{
	EmuLib *l = lib();
	_Alignas(16) static unsigned short g2[70 * 96], g3[3 * 10 * 64];
	static unsigned out[1024];
	static const int swz[] = {128, 64, 32, 0};
	for (int k = 0; k < 4; k++) {
		TmaArgs a;
		tma_args(&a, g2, g3, out, swz[k]);
		int w = box_w(swz[k]);
		char msg[2048];
		unsigned long long bytes[2] = {0, 0};
		cr_assert_eq(emu_launch_kernel(l, "tma", 2, 64, 8192 + 16, &a, bytes, msg, sizeof msg), 0, "%s", msg);
		int bad = 0;
		for (int r = 0; r < 16; r++)
			for (int c = 0; c < w; c++) {
				unsigned want = 48 + c < 96 && 60 + r < 70 ? t2(60 + r, 48 + c) : 0;
				unsigned got = half_at(out, swizzle((unsigned)(r * w + c) * 2, swz[k]));
				if (got != want && bad++ < 5)
					cr_expect_eq(got, want, "swizzle %d, 2D box row %d column %d: %u, want %u", swz[k], r, c,
						     got, want);
			}
		for (int z = 0; z < 2; z++)
			for (int r = 0; r < 8; r++)
				for (int c = 0; c < w; c++) {
					int gc = c - 16, gr = 5 + r, gz = 2 + z;
					unsigned want = gc >= 0 && gr < 10 && gz < 3 ? t3(gz, gr, gc) : 0;
					unsigned got = half_at(out, swizzle(2048 + (unsigned)((z * 8 + r) * w + c) * 2, swz[k]));
					if (got != want && bad++ < 10)
						cr_expect_eq(got, want, "swizzle %d, 3D box plane %d row %d column %d: %u, want %u",
							     swz[k], z, r, c, got, want);
				}
		cr_expect_eq(bad, 0, "swizzle %d: %d elements differ", swz[k], bad);
		/* only the elements inside the tensors are loaded, twice (two blocks) */
		unsigned long long in2 = (unsigned long long)(w < 48 ? w : 48) * 10, in3 = (unsigned long long)(w > 16 ? w - 16 : 0) * 5;
		cr_expect_eq(bytes[0], 2 * (in2 + in3) * 2, "swizzle %d: bytes loaded %llu", swz[k], bytes[0]);
	}
	emu_close(l);
}

Test(hopper, tma_misuse_is_reported)
{
	EmuLib *l = lib();
	_Alignas(16) static unsigned short g2[70 * 96], g3[3 * 10 * 64];
	static unsigned out[1024];
	TmaArgs a;
	tma_args(&a, g2, g3, out, 128);
	char msg[2048];
	a.mode = 1;
	cr_assert_eq(emu_launch_kernel(l, "tma", 1, 64, 8192 + 16, &a, NULL, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "read of sm[") && strstr(msg, "while a TMA copy to it (issued by thread 0) is in flight "
							 "(missing mbarrier wait?)"), "%s", msg);
	cr_expect(strstr(msg, "(kernel tma, block 0, thread "), "%s", msg);
	a.mode = 2;
	cr_assert_eq(emu_launch_kernel(l, "tma", 1, 64, 8192 + 16, &a, NULL, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "mbarrier.init of sm[2048] by thread 0 and by this thread between barriers"), "%s", msg);
	a.mode = 3;
	cr_assert_eq(emu_launch_kernel(l, "tma", 1, 64, 8192 + 16, &a, NULL, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "read of sm[2048], a word of an mbarrier"), "%s", msg);
	a.mode = 4;
	cr_assert_eq(emu_launch_kernel(l, "tma", 1, 64, 8192 + 16, &a, NULL, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "mbarrier wait on sm[2048], which no thread initialized"), "%s", msg);
	a.mode = 5;
	cr_assert_eq(emu_launch_kernel(l, "tma", 1, 64, 8192 + 16, &a, NULL, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "mbarrier.arrive on sm[2048]: more arrivals than its count (1) in one phase"), "%s", msg);
	/* arrive.expect_tx announces 1024 bytes of the 4096 */
	a.mode = 0;
	a.expect = 1024;
	cr_assert_eq(emu_launch_kernel(l, "tma", 1, 64, 8192 + 16, &a, NULL, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "mbarrier at sm[2048]: its TMA copies completed 3072 bytes more than arrive.expect_tx "
			      "announced"), "%s", msg);
	/* and a good run after the failures left copies and barriers behind */
	a.expect = 4096;
	cr_assert_eq(emu_launch_kernel(l, "tma", 1, 64, 8192 + 16, &a, NULL, msg, sizeof msg), 0, "%s", msg);
	emu_close(l);
}

Test(hopper, tensor_maps_are_checked_as_the_driver_does)
{
	_Alignas(16) static unsigned short g[64 * 64];
	unsigned long long dims[3] = {64, 64, 1}, strides[2] = {128, 8192};
	unsigned box[3] = {64, 8, 1};
	Tmap m;
	char msg[256];
	cr_assert_eq(emu_tmap_encode(&m, 2, 2, g, dims, strides, box, 128, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(emu_tmap_encode(&m, 2, 6, g, dims, strides, box, 128, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "rank 6 outside [1, 5]"), "%s", msg);
	cr_assert_eq(emu_tmap_encode(&m, 2, 2, (char *)g + 8, dims, strides, box, 128, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "is not 16-byte aligned"), "%s", msg);
	unsigned long long odd[1] = {120};
	cr_assert_eq(emu_tmap_encode(&m, 2, 2, g, dims, odd, box, 128, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "stride of dimension 1 (120 bytes) is not a multiple of 16"), "%s", msg);
	unsigned wide[2] = {128, 8};
	cr_assert_eq(emu_tmap_encode(&m, 2, 2, g, dims, strides, wide, 128, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "inner dimension (256 bytes) exceeds the 128-byte swizzle span"), "%s", msg);
	unsigned narrow[2] = {4, 8};
	cr_assert_eq(emu_tmap_encode(&m, 2, 2, g, dims, strides, narrow, 0, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "inner dimension is 8 bytes, not a multiple of 16"), "%s", msg);
	unsigned big[2] = {64, 257};
	cr_assert_eq(emu_tmap_encode(&m, 2, 2, g, dims, strides, big, 128, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "box dimension 1 of 257 elements outside [1, 256]"), "%s", msg);
	cr_assert_eq(emu_tmap_encode(&m, 2, 2, g, dims, strides, box, 96, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "swizzle of 96 bytes"), "%s", msg);
	/* the map itself 64-byte aligned, as CUtensorMap is */
	_Alignas(64) static unsigned char off[192];
	cr_assert_eq(emu_tmap_encode(off + 16, 2, 2, g, dims, strides, box, 128, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "is not 64-byte aligned"), "%s", msg);
	cr_assert_eq(emu_tmap_encode(off + 64, 2, 2, g, dims, strides, box, 128, msg, sizeof msg), 0, "%s", msg);
}

static void ring_run(EmuLib *l, int parity0, char *msg, size_t n, int *rc, unsigned *out)
{
	_Alignas(16) static unsigned g[80 * 32];
	for (int r = 0; r < 80; r++)
		for (int c = 0; c < 32; c++)
			g[r * 32 + c] = (unsigned)(r * 1000 + c);
	RingArgs a;
	memset(&a, 0, sizeof a);
	tmap2(&a.m, 4, g, 32, 80, 32, 16, 128);
	a.out = out;
	a.parity0 = parity0;
	*rc = emu_launch_kernel(l, "ring", 1, 64, 4096 + 32, &a, NULL, msg, n);
}

Test(hopper, mbarrier_ring_of_two_stages)
{
	EmuLib *l = lib();
	static unsigned out[5 * 32];
	char msg[2048];
	int rc;
	ring_run(l, 1, msg, sizeof msg, &rc, out);
	cr_assert_eq(rc, 0, "%s", msg);
	for (int i = 0; i < 5; i++)
		for (int x = 0; x < 32; x++) {
			unsigned r = (unsigned)(16 * i + x % 16), want = 32 * 1000 * r + 31 * 32 / 2;
			cr_expect_eq(out[32 * i + x], want, "tile %d lane %d: %u, want %u", i, x, out[32 * i + x], want);
		}
	/* the producer waits on phase 0 of an empty stage, which needs the
	 * consumers to have freed it, who wait for its load */
	ring_run(l, 0, msg, sizeof msg, &rc, out);
	cr_assert_eq(rc, -1);
	cr_expect(strstr(msg, "deadlock: ") && strstr(msg, "33 in mbarrier wait for a phase that never completes"), "%s",
		  msg);
	cr_expect(strstr(msg, "mbarrier wait on sm[1024] for parity 0 (32 threads from thread 0; 1 of 1 arrivals"), "%s",
		  msg);
	cr_expect(strstr(msg, "mbarrier wait on sm[1028] for parity 0 (1 threads from thread 32; 32 of 32 arrivals"),
		  "%s", msg);
	emu_close(l);
}

/* bf16 or f16 bits of v, a multiple of 1/8 in [-4, 4] (exact in both) */
static unsigned short bits16(double v, int bf)
{
	float f = (float)v;
	unsigned u;
	memcpy(&u, &f, 4);
	if (bf)
		return (unsigned short)(u >> 16);
	if (v == 0)
		return 0;
	int e = (int)((u >> 23) & 0xff) - 127 + 15;
	return (unsigned short)((u >> 16 & 0x8000) | (unsigned)e << 10 | (u >> 13 & 0x3ff));
}

/* S (64 x bn) = Q K^T over 128 columns and O (64 x dv) = P V over bn keys,
 * P's rows pstride apart, each equal to its exact sum (every operand a
 * few bits: the sums are exact in float). */
static void products_match(const char *kernel, const float *s, const float *o, const double *qd, const double *kd,
			   const double *pd, int pstride, const double *vd, int bn, int dv)
{
	int bad = 0;
	for (int r = 0; r < 64; r++)
		for (int c = 0; c < bn; c++) {
			double want = 0;
			for (int x = 0; x < 128; x++)
				want += qd[r * 128 + x] * kd[c * 128 + x];
			if (s[r * bn + c] != (float)want && bad++ < 5)
				cr_expect_eq(s[r * bn + c], (float)want, "%s: S[%d][%d] = %g, want %g", kernel, r, c, s[r * bn + c],
					     want);
		}
	for (int r = 0; r < 64; r++)
		for (int c = 0; c < dv; c++) {
			double want = 0;
			for (int x = 0; x < bn; x++)
				want += pd[r * pstride + x] * vd[x * dv + c];
			if (o[r * dv + c] != (float)want && bad++ < 10)
				cr_expect_eq(o[r * dv + c], (float)want, "%s: O[%d][%d] = %g, want %g", kernel, r, c, o[r * dv + c],
					     want);
		}
	cr_expect_eq(bad, 0, "%s: %d elements differ", kernel, bad);
}

static double val(unsigned seed, int i) { return (double)((int)((seed * 2654435761u + (unsigned)i * 40503u) >> 7) % 65 - 32) / 8; }

/* S = Q K^T and O = P V with the wgmma of kernel mma_<kind>, against the
 * plain products; every value is exact in float. */
static void mma_check(EmuLib *l, const char *kernel, int bf, int bn, int dv)
{
	_Alignas(16) static unsigned short q[64 * 128], k[128 * 128], v[128 * 128], p[64 * 128];
	static double qd[64 * 128], kd[128 * 128], vd[128 * 128], pd[64 * 128];
	static float s[64 * 128], o[64 * 128];
	for (int i = 0; i < 64 * 128; i++)
		qd[i] = val(1, i), q[i] = bits16(qd[i], bf), pd[i] = val(4, i), p[i] = bits16(pd[i], bf);
	for (int i = 0; i < 128 * 128; i++)
		kd[i] = val(2, i), k[i] = bits16(kd[i], bf), vd[i] = val(3, i), v[i] = bits16(vd[i], bf);
	MmaArgs a;
	memset(&a, 0, sizeof a);
	tmap2(&a.q, 2, q, 128, 64, 64, 64, 128);
	tmap2(&a.k, 2, k, 128, (unsigned long long)bn, 64, (unsigned)bn, 128);
	tmap2(&a.v, 2, v, (unsigned long long)dv, (unsigned long long)bn, 64, (unsigned)bn, 128);
	/* P: 64 x bn, row-major */
	static unsigned short pp[64 * 128];
	for (int r = 0; r < 64; r++)
		for (int c = 0; c < bn; c++)
			pp[r * bn + c] = p[r * 128 + c];
	a.p = (const unsigned *)pp;
	a.s = s, a.o = o;
	char msg[2048];
	unsigned smem = 16384 + (unsigned)bn * 256 + (unsigned)(bn * 128 * (dv / 64)) + 16;
	cr_assert_eq(emu_launch_kernel(l, kernel, 1, 128, smem, &a, NULL, msg, sizeof msg), 0, "%s: %s", kernel, msg);
	products_match(kernel, s, o, qd, kd, pd, 128, vd, bn, dv);
	/* without the mbarrier wait, the first wgmma reads words TMA has not landed */
	a.nowait = 1;
	cr_assert_eq(emu_launch_kernel(l, kernel, 1, 128, smem, &a, NULL, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "wgmma.mma_async read of sm[") && strstr(msg, "while a TMA copy to it (issued by thread 0) "
									     "is in flight (missing mbarrier wait?)"),
		  "%s: %s", kernel, msg);
}

Test(hopper, wgmma_gives_the_plain_products, .timeout = 60)
{
	EmuLib *l = lib();
	mma_check(l, "mma_bf16_64_64", 1, 64, 64);
	mma_check(l, "mma_f16_64_128", 0, 64, 128);
	mma_check(l, "mma_bf16_128_128", 1, 128, 128);
	mma_check(l, "mma_f16_128_64", 0, 128, 64);
	emu_close(l);
}

/* A multiple of 1/4 in [-3.75, 3.75]: 4 significant bits at most, an
 * e4m3 value; products and their sums exact in float. */
static double val8(unsigned seed, int i)
{
	return (double)((int)((seed * 2654435761u + (unsigned)i * 40503u) >> 7) % 31 - 15) / 4;
}

/* The e4m3 wgmma of kernel mma_e4m3_<bn>_<dv> against the plain products
 * of its operands, every one distinct in its place: a fragment or shared
 * layout off by a register, a lane or a byte gives other sums. */
static void mma8_check(EmuLib *l, const char *kernel, int bn, int dv)
{
	_Alignas(16) static uint8_t q[64 * 128], k[128 * 128], vt[128 * 128], p[64 * 128];
	static double qd[64 * 128], kd[128 * 128], vd[128 * 128], pd[64 * 128];
	static float s[64 * 128], o[64 * 128];
	for (int i = 0; i < 64 * 128; i++)
		qd[i] = val8(1, i), q[i] = run_f8e4m3_bits(qd[i]);
	for (int i = 0; i < 64 * bn; i++)
		pd[i] = val8(4, i), p[i] = run_f8e4m3_bits(pd[i]);
	for (int i = 0; i < bn * 128; i++)
		kd[i] = val8(2, i), k[i] = run_f8e4m3_bits(kd[i]);
	for (int i = 0; i < bn * dv; i++) /* V: bn keys x dv, given as VT: dv x bn */
		vd[i] = val8(3, i), vt[(i % dv) * bn + i / dv] = run_f8e4m3_bits(vd[i]);
	MmaArgs a;
	memset(&a, 0, sizeof a);
	tmap2(&a.q, 1, q, 128, 64, 128, 64, 128);
	tmap2(&a.k, 1, k, 128, (unsigned long long)bn, 128, (unsigned)bn, 128);
	tmap2(&a.v, 1, vt, (unsigned long long)bn, (unsigned long long)dv, (unsigned)bn, (unsigned)dv, bn);
	a.p = (const unsigned *)p;
	a.s = s, a.o = o;
	char msg[2048];
	unsigned smem = 8192 + (unsigned)bn * 128 + (unsigned)(dv * bn) + 16;
	cr_assert_eq(emu_launch_kernel(l, kernel, 1, 128, smem, &a, NULL, msg, sizeof msg), 0, "%s: %s", kernel, msg);
	products_match(kernel, s, o, qd, kd, pd, bn, vd, bn, dv);
}

/* e4m3 operands, k = 32: the plain products at two tile shapes (128-byte
 * and 64-byte swizzles of V's rows); an MN-major 8-bit operand is
 * refused, as the instruction has no such form. */
Test(hopper, wgmma_e4m3_gives_the_plain_products, .timeout = 60)
{
	EmuLib *l = lib();
	mma8_check(l, "mma_e4m3_128_64", 128, 64);
	mma8_check(l, "mma_e4m3_64_128", 64, 128);
	char msg[1024];
	float out[4];
	cr_assert_eq(emu_launch_kernel(l, "mma_e4m3_mn_major", 1, 128, 8192, out, NULL, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "wgmma.mma_async m64n64k32 .e4m3: an MN-major (transposed) B operand (8-bit operands are "
			      "K-major only)"),
		  "%s", msg);
	emu_close(l);
}

static int wgfail(EmuLib *l, int mode, float *out, char *msg, size_t n)
{
	WgArgs a = {mode, out};
	return emu_launch_kernel(l, "wgfail", 1, 128, 4096, &a, NULL, msg, n);
}

Test(hopper, wgmma_writes_d_at_the_wait)
{
	EmuLib *l = lib();
	static float out[256];
	char msg[2048];
	cr_assert_eq(wgfail(l, 0, out, msg, sizeof msg), 0, "%s", msg);
	for (int x = 0; x < 128; x++) {
		cr_expect_eq(out[x], 7.0f, "thread %d: d[0] before the wait %g, want the old 7", x, out[x]);
		cr_expect_eq(out[128 + x], 16.0f, "thread %d: d[0] after the wait %g, want 16", x, out[128 + x]);
	}
	emu_close(l);
}

Test(hopper, wgmma_misuse_is_reported)
{
	EmuLib *l = lib();
	static float out[256];
	char msg[2048];
	cr_assert_eq(wgfail(l, 1, out, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "wgmma.mma_async reads sm[") && strstr(msg, "without fence.proxy.async after the write"),
		  "%s", msg);
	cr_assert_eq(wgfail(l, 2, out, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "wgmma.mma_async without wgmma.fence since the kernel's start"), "%s", msg);
	cr_expect(strstr(msg, "(kernel wgfail, block 0, thread "), "%s", msg);
	cr_assert_eq(wgfail(l, 3, out, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "accumulator d[3] written between the wgmma's issue and the wgmma.wait_group"), "%s", msg);
	cr_assert_eq(wgfail(l, 4, out, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "thread exited with 1 wgmma.mma_async in flight (missing wgmma.wait_group)"), "%s", msg);
	cr_assert_eq(wgfail(l, 5, out, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "shared-memory race on sm[1]: write over a word that a wgmma.mma_async of warpgroup 0 "
			      "(threads 0 to 127) reads until the wgmma.wait_group that retires it") &&
			  strstr(msg, "(kernel wgfail, block 0, thread 0)"), "%s", msg);
	cr_assert_eq(wgfail(l, 6, out, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "deadlock: ") && strstr(msg, "96 at wgmma.wait_group for a wgmma.mma_async that not every "
								  "thread of the warpgroup issues"), "%s", msg);
	cr_assert_eq(wgfail(l, 7, out, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "warpgroup 0: this thread's wgmma.mma_async #0 (m64n64k16 SS) is not thread ") &&
		  strstr(msg, "every thread of the warpgroup issues the same wgmma"), "%s", msg);
	/* and a good run after them */
	cr_assert_eq(wgfail(l, 0, out, msg, sizeof msg), 0, "%s", msg);
	emu_close(l);
}

static int wgrace(EmuLib *l, int mode, unsigned *out, char *msg, size_t n)
{
	_Alignas(16) static unsigned short twos[16 * 64];
	for (int i = 0; i < 16 * 64; i++)
		twos[i] = 0x4000; /* bf16 2.0 */
	WgRaceArgs a;
	memset(&a, 0, sizeof a);
	tmap2(&a.m, 2, twos, 64, 16, 64, 16, 0);
	a.out = out, a.mode = mode;
	memset(out, 0, 129 * sizeof *out);
	return emu_launch_kernel(l, "wgrace", 1, 160, 4096 + 16, &a, NULL, msg, n);
}

/* A wgmma reads its shared operands until the wgmma.wait_group that
 * retires it: B's words freed (an mbarrier arrival) before that wait and
 * written over by the thread that waited for them, by a store or a TMA
 * copy, race with the wgmma, and the report names the word and both
 * accesses; freed after the wait, the same writes are ordered, and the
 * product is of the words as they were. */
Test(hopper, wgmma_reads_its_operands_until_the_wait)
{
	EmuLib *l = lib();
	static unsigned out[129];
	char msg[2048];
	cr_assert_eq(wgrace(l, 1, out, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "shared-memory race on sm[512]: write over a word that a wgmma.mma_async of warpgroup 0 "
			      "(threads 0 to 127) reads until the wgmma.wait_group that retires it (missing "
			      "wgmma.wait_group before the words were released?) (kernel wgrace, block 0, thread 128)"),
		  "%s", msg);
	cr_assert_eq(wgrace(l, 3, out, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "shared-memory race on sm[512]: TMA copy over a word that a wgmma.mma_async of warpgroup 0 "
			      "(threads 0 to 127) reads until the wgmma.wait_group that retires it") &&
			  strstr(msg, "(kernel wgrace, block 0, thread 128)"), "%s", msg);
	const float sixteen = 16.0f;
	unsigned bits;
	memcpy(&bits, &sixteen, 4);
	for (int mode = 2; mode <= 4; mode += 2) {
		cr_assert_eq(wgrace(l, mode, out, msg, sizeof msg), 0, "mode %d: %s", mode, msg);
		for (int x = 0; x < 128; x++)
			cr_expect_eq(out[x], bits, "mode %d, thread %d: d[0] has bits 0x%x, want 16", mode, x, out[x]);
		cr_expect_eq(out[128], 0x40004000u, "mode %d: B's first word after the write: 0x%x", mode, out[128]);
	}
	emu_close(l);
}

Test(hopper, setmaxnreg_is_a_warpgroup_collective)
{
	EmuLib *l = lib();
	char msg[2048];
	int mode = 0;
	cr_assert_eq(emu_launch_kernel(l, "maxnreg", 1, 256, 0, &mode, NULL, msg, sizeof msg), 0, "%s", msg);
	mode = 1;
	cr_assert_eq(emu_launch_kernel(l, "maxnreg", 1, 256, 0, &mode, NULL, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "setmaxnreg.inc 100: the register count must be a multiple of 8 in [24, 256]"), "%s", msg);
	mode = 2;
	cr_assert_eq(emu_launch_kernel(l, "maxnreg", 1, 256, 0, &mode, NULL, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "deadlock: ") && strstr(msg, "at setmaxnreg, which not every thread of the warpgroup "
								  "reaches"), "%s", msg);
	mode = 3; /* 128 x 24 + 256 x 240 = 64512 registers */
	cr_assert_eq(emu_launch_kernel(l, "maxnreg", 1, 384, 0, &mode, NULL, msg, sizeof msg), 0, "%s", msg);
	mode = 4;
	cr_assert_eq(emu_launch_kernel(l, "maxnreg", 1, 384, 0, &mode, NULL, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "setmaxnreg.inc 256: the block's warpgroups come to 68608 registers after it, over the "
			      "64512 its 384 threads hold (168 each"), "%s", msg);
	mode = 6; /* 128 x 32 + 256 x 240 = 65536: the SM's, not the block's */
	cr_assert_eq(emu_launch_kernel(l, "maxnreg", 1, 384, 0, &mode, NULL, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "setmaxnreg.inc 240: the block's warpgroups come to 65536 registers after it, over the "
			      "64512 its 384 threads hold (168 each"), "%s", msg);
	mode = 5;
	cr_assert_eq(emu_launch_kernel(l, "maxnreg", 1, 128, 0, &mode, NULL, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "setmaxnreg.inc 32 in warpgroup 0, whose count is 40"), "%s", msg);
	emu_close(l);
}

typedef struct {
	int mode, turns;
	unsigned *out;
} BarArgs;

static int pingpong(EmuLib *l, int mode, unsigned *out, char *msg, size_t n)
{
	BarArgs a = {mode, 4, out};
	return emu_launch_kernel(l, "pingpong", 1, 256, 64, &a, NULL, msg, n);
}

/* Named barriers order two warpgroups' turns (each appends to a log in
 * shared memory, and the log alternates); a mismatched count, a phase
 * that never completes (a deadlock, or arrivals left at the block's end),
 * barrier 0, a count not a multiple of 32 and a thread arriving twice in
 * one phase are reported. */
Test(hopper, named_barriers_take_turns)
{
	EmuLib *l = lib();
	static unsigned out[8];
	char msg[2048];
	cr_assert_eq(pingpong(l, 0, out, msg, sizeof msg), 0, "%s", msg);
	for (int k = 0; k < 8; k++)
		cr_expect_eq(out[k], 10u * (k / 2) + k % 2, "entry %d of the log: %u", k, out[k]);
	cr_assert_eq(pingpong(l, 1, out, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "bar.arrive 1, 128: thread ") && strstr(msg, "with a count of 256 (differing thread counts)"),
		  "%s", msg);
	cr_assert_eq(pingpong(l, 2, out, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "deadlock: 128 threads wait at __syncthreads") &&
		  strstr(msg, "128 at bar.sync 1, whose phase too few threads reach (128 of 256 in)"), "%s", msg);
	cr_assert_eq(pingpong(l, 3, out, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "named barrier 1: 128 of 256 threads arrived in a phase that the block ended without"), "%s",
		  msg);
	cr_assert_eq(pingpong(l, 4, out, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "bar.sync 0, 256: named barriers are 1 to 15 (0 is __syncthreads')"), "%s", msg);
	cr_assert_eq(pingpong(l, 5, out, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "bar.arrive 1, 100: the thread count must be a multiple of 32"), "%s", msg);
	cr_assert_eq(pingpong(l, 6, out, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "bar.arrive 3, 256: this thread already arrived in this phase"), "%s", msg);
	cr_assert_eq(pingpong(l, 0, out, msg, sizeof msg), 0, "%s", msg);
	emu_close(l);
}

typedef struct {
	unsigned *out;
	int turns, write;
} ReadsArgs;

static unsigned reads_kept(EmuLib *l, int turns, int write, char *msg, size_t n)
{
	static unsigned out[1];
	ReadsArgs a = {out, turns, write};
	out[0] = 0;
	int rc = emu_launch_kernel(l, "reads", 1, 64, 0, &a, NULL, msg, n);
	cr_assert_eq(rc, write ? -1 : 0, "%d turns: %s", turns, msg);
	return out[0];
}

/* The reads of a word that later barriers order are not all kept until
 * the next __syncthreads: with 64 readers a turn, 256 turns keep no more
 * than 8 do (and fewer than two turns' reads), and a write after the
 * last turn, unordered, is still reported. */
Test(hopper, reads_ordered_by_named_barriers_are_not_kept)
{
	EmuLib *l = lib();
	char msg[2048];
	unsigned few = reads_kept(l, 8, 0, msg, sizeof msg), many = reads_kept(l, 256, 0, msg, sizeof msg);
	cr_expect_leq(many, few, "reads kept after 256 turns: %u, after 8: %u", many, few);
	cr_expect_lt(many, 128u, "reads kept after 256 turns of 64 readers: %u", many);
	reads_kept(l, 256, 1, msg, sizeof msg);
	cr_expect(strstr(msg, "shared-memory race on w[0]: write over a word thread ") &&
			  strstr(msg, "missing bar.sync 1, a named barrier both threads join, between the two accesses?") &&
			  strstr(msg, "(kernel reads, block 0, thread 0)"), "%s", msg);
	emu_close(l);
}

typedef struct {
	const unsigned *src;
	unsigned *out;
	int n, mode;
} BulkArgs;

static int bulk_run(EmuLib *l, int n, int mode, unsigned *out, char *msg, size_t size)
{
	_Alignas(16) static unsigned src[4 + 1024];
	for (int k = 0; k < 4 + 1024; k++)
		src[k] = 7u * (unsigned)k + 1;
	BulkArgs a = {src, out, n, mode};
	return emu_launch_kernel(l, "bulk", 1, 64, 4096 + 16, &a, NULL, msg, size);
}

/* A 1D bulk copy lands its words at the wait; read before it, from a
 * source not 16-byte aligned, of a size not a multiple of 16, or left in
 * flight when the block exits, it is reported. */
Test(hopper, bulk_copy_lands_at_the_wait)
{
	EmuLib *l = lib();
	static unsigned out[1024];
	char msg[2048];
	static const int ns[] = {4, 100, 1024};
	for (int k = 0; k < 3; k++) {
		memset(out, 0, sizeof out);
		cr_assert_eq(bulk_run(l, ns[k], 0, out, msg, sizeof msg), 0, "%s", msg);
		for (int w = 0; w < ns[k]; w++)
			cr_assert_eq(out[w], 7u * (unsigned)(w + 4) + 1, "word %d of %d", w, ns[k]);
	}
	cr_assert_eq(bulk_run(l, 100, 1, out, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "] while a TMA copy to it (issued by thread 0) is in flight (missing mbarrier wait?)"), "%s", msg);
	cr_assert_eq(bulk_run(l, 100, 2, out, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "cp.async.bulk: the source (global) is not 16-byte aligned"), "%s", msg);
	cr_assert_eq(bulk_run(l, 100, 3, out, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "cp.async.bulk of 20 bytes: the size is a multiple of 16"), "%s", msg);
	cr_assert_eq(bulk_run(l, 100, 4, out, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "block exited with 1 TMA or bulk copies in flight (the first issued by thread 0, completing "
			      "on the mbarrier at sm[1024]): they would land in shared memory the next block on the SM owns "
			      "(missing mbarrier wait?) (kernel bulk, block 0)"), "%s", msg);
	/* and a good run after it */
	cr_assert_eq(bulk_run(l, 100, 0, out, msg, sizeof msg), 0, "%s", msg);
	emu_close(l);
}

typedef struct {
	unsigned *out;
	int mode;
} ClusterArgs;

static int cluster_run(EmuLib *l, unsigned grid, unsigned cs, int mode, unsigned *out, char *msg, size_t n)
{
	ClusterArgs a = {out, mode};
	return emu_launch_cluster(l, "cluster", grid, 1, 128, 0, cs, &a, NULL, msg, n);
}

/* Clusters of 2, 4, 8 and 16 blocks over two clusters' grid: each block
 * reads its neighbours' shared memory, written before the cluster
 * barrier, and sees its rank and the cluster's size. */
Test(hopper, cluster_blocks_read_their_peers_shared_memory, .timeout = 60)
{
	EmuLib *l = lib();
	static unsigned out[32 * 128 * 4];
	static const unsigned sizes[] = {1, 2, 4, 8, 16};
	char msg[2048];
	for (int k = 0; k < 5; k++) {
		unsigned cs = sizes[k], grid = 2 * cs;
		memset(out, 0xff, sizeof out);
		cr_assert_eq(cluster_run(l, grid, cs, 0, out, msg, sizeof msg), 0, "cluster %u: %s", cs, msg);
		for (unsigned b = 0; b < grid; b++)
			for (unsigned x = 0; x < 128; x++) {
				const unsigned *o = out + 4 * (b * 128 + x);
				unsigned r = b % cs, base = b - r;
				cr_assert_eq(o[0], r);
				cr_assert_eq(o[1], cs);
				cr_assert_eq(o[2], (base + (r + 1) % cs) * 1000 + x, "cluster %u block %u thread %u", cs, b, x);
				cr_assert_eq(o[3], (base + (r + cs - 1) % cs) * 1000 + x);
			}
	}
	emu_close(l);
}

Test(hopper, cluster_misuse_is_reported, .timeout = 60)
{
	EmuLib *l = lib();
	static unsigned out[8 * 128 * 4];
	char msg[2048];
	cr_assert_eq(cluster_run(l, 4, 4, 1, out, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "ld.shared::cluster of words[0] in cluster rank 1: that block has not written it "
			      "(missing barrier.cluster between its write and this read?)"), "%s", msg);
	cr_assert_eq(cluster_run(l, 4, 4, 2, out, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "to rank 4, outside the cluster's 4 blocks"), "%s", msg);
	cr_assert_eq(cluster_run(l, 4, 4, 3, out, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "exited while rank") || strstr(msg, "whose block has exited"), "%s", msg);
	cr_expect(strstr(msg, "missing"), "%s", msg);
	cr_assert_eq(cluster_run(l, 4, 2, 4, out, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "thread exited while 32 threads of its cluster wait at barrier.cluster"), "%s", msg);
	cr_assert_eq(cluster_run(l, 2, 2, 5, out, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "barrier.cluster.arrive twice without a barrier.cluster.wait"), "%s", msg);
	cr_assert_eq(cluster_run(l, 2, 2, 6, out, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "barrier.cluster.wait without a barrier.cluster.arrive"), "%s", msg);
	/* a barrier orders each thread's accesses before its arrival, not
	 * between its arrival and its wait, before its peers' after theirs */
	cr_assert_eq(cluster_run(l, 2, 2, 7, out, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "ld.shared::cluster of words[127] in cluster rank 0: thread 127 of that block wrote it "
			      "after its barrier.cluster.arrive in the last phase this thread waited for (missing "
			      "barrier.cluster between its write and this read?) (kernel cluster, block 1, thread 127)"),
		  "%s", msg);
	cr_assert_eq(cluster_run(l, 4, 2, 8, out, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "ld.shared::cluster of words[0] in cluster rank 1: that block has not written it"), "%s",
		  msg);
	cr_assert_eq(cluster_run(l, 6, 4, 0, out, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "a grid of 6 blocks is not a whole number of clusters of 4"), "%s", msg);
	cr_assert_eq(cluster_run(l, 4, 32, 0, out, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "a cluster of 32 blocks (1 to 16)"), "%s", msg);
	/* after each misuse the next launch runs clean */
	cr_assert_eq(cluster_run(l, 4, 2, 0, out, msg, sizeof msg), 0, "%s", msg);
	emu_close(l);
}

typedef struct {
	const unsigned *src;
	unsigned *out;
	int mode;
} OrderArgs;

static int order_run(EmuLib *l, int mode, unsigned cluster, unsigned *out, char *msg, size_t n)
{
	_Alignas(16) static unsigned src[4] = {41, 42, 43, 44};
	OrderArgs a = {src, out, mode};
	memset(out, 0, 2 * 96 * sizeof *out);
	return emu_launch_cluster(l, "order", cluster, 1, 96, 68 * 4, cluster, &a, NULL, msg, n);
}

/* Two accesses of a word by threads of different warps race unless a
 * chain of barriers orders them: a named barrier orders only the threads
 * that meet at it (a write of a thread outside it, before or after, is
 * reported), an mbarrier wait orders what the arrivals did before it,
 * __syncwarp orders the lanes of a warp (a shuffle does not), and
 * __syncthreads and barrier.cluster order the whole block (the cluster
 * barrier each thread's accesses before its arrival before every thread's
 * after its wait, not those between its arrival and its wait).  A bulk copy
 * over words other threads read races with those reads unless they were
 * ordered before its issue, and the words it lands are ordered only
 * before the threads that wait on the phase it completes; the reads,
 * ordered before it, are fenced off from its writes by fence.proxy.async
 * in each reader (they are the generic proxy's, its writes the async
 * proxy's), or reported. */
Test(hopper, partial_barriers_order_only_their_threads)
{
	EmuLib *l = lib();
	static unsigned out[2 * 96];
	char msg[2048];
	cr_assert_eq(order_run(l, 1, 1, out, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "shared-memory race on sm[0]: read of a word thread 0 wrote since the last __syncthreads "
			      "(missing a named barrier both threads join (thread 0 is not in named barrier 1), or an "
			      "mbarrier arrive and wait?)"), "%s", msg);
	cr_expect(strstr(msg, "(kernel order, block 0, thread 64)"), "%s", msg);
	cr_assert_eq(order_run(l, 2, 1, out, msg, sizeof msg), 0, "%s", msg);
	cr_expect_eq(out[64], 7u);
	cr_assert_eq(order_run(l, 3, 1, out, msg, sizeof msg), 0, "%s", msg);
	cr_expect_eq(out[64], 7u);
	cr_assert_eq(order_run(l, 14, 1, out, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "shared-memory race on sm[0]: read of a word thread 0 wrote since the last __syncthreads "
			      "(missing mbarrier arrive and wait between the two threads?) (kernel order, block 0, "
			      "thread 64)"), "%s", msg);
	cr_assert_eq(order_run(l, 4, 1, out, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "shared-memory race on sm[1]: write over a word thread ") && strstr(msg, " read since") &&
			  strstr(msg, "(thread 0 is not in named barrier 1)"), "%s", msg);
	cr_expect(strstr(msg, "(kernel order, block 0, thread 0)"), "%s", msg);
	cr_assert_eq(order_run(l, 5, 1, out, msg, sizeof msg), 0, "%s", msg);
	for (int x = 0; x < 96; x++)
		cr_expect_eq(out[x], 7u, "thread %d read %u", x, out[x]);
	cr_assert_eq(order_run(l, 6, 1, out, msg, sizeof msg), 0, "%s", msg);
	cr_expect_eq(out[5], 7u);
	cr_assert_eq(order_run(l, 7, 1, out, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "race on sm[2]: read of a word thread 0 wrote") && strstr(msg, "thread 5)"), "%s", msg);
	cr_assert_eq(order_run(l, 8, 1, out, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "race on sm[0]: cp.async.bulk over a word thread ") &&
			  strstr(msg, " read, with no barrier ordering that before the copy"), "%s", msg);
	cr_assert_eq(order_run(l, 9, 1, out, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "cp.async.bulk over sm[0], read by thread ") &&
			  strstr(msg, " without fence.proxy.async after the read (a generic read and the async proxy's "
				      "write: the reader fences before the arrival that frees the word) (kernel order, block 0, "
				      "thread 0)"), "%s", msg);
	cr_assert_eq(order_run(l, 15, 1, out, msg, sizeof msg), 0, "%s", msg);
	cr_expect_eq(out[0], 41u);
	cr_expect_eq(out[32], 100u);
	cr_assert_eq(order_run(l, 11, 1, out, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "race on sm[0]: read of a word a TMA copy completing on the mbarrier at sm[66] wrote") &&
			  strstr(msg, "(missing mbarrier wait?)") && strstr(msg, "thread 64)"), "%s", msg);
	cr_assert_eq(order_run(l, 12, 1, out, msg, sizeof msg), 0, "%s", msg);
	cr_expect_eq(out[0], 41u);
	cr_expect_eq(out[64], 41u);
	cr_assert_eq(order_run(l, 10, 2, out, msg, sizeof msg), 0, "%s", msg);
	cr_expect_eq(out[64], 7u);
	cr_expect_eq(out[96 + 64], 7u);
	cr_assert_eq(order_run(l, 13, 2, out, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "shared-memory race on sm[0]: read of a word thread 0 wrote since the last __syncthreads") &&
			  strstr(msg, "(kernel order, block 1, thread 64)"), "%s", msg);
	emu_close(l);
}

/* The GPU side: every wrapper, wgmma at N = 64, 128 and 256, through
 * NVRTC for sm_90a and ptxas. */
Test(hopper, wrappers_assemble_for_sm_90a, .timeout = 120)
{
	Nvrtc *nv;
	char msg[8192];
	if (nvrtc_open(&nv, msg, sizeof msg))
		cr_skip_test("no NVRTC: %s", msg);
	char *k = cache_read("tests/hopper/sm90_kernel.cu", NULL);
	cr_assert(k);
	const Blob *c = blob_find("common"), *h = blob_find("hopper");
	size_t n = c->len + h->len + strlen(k) + 4;
	char *src = malloc(n);
	snprintf(src, n, "%s\n%s\n%s", c->text, h->text, k);
	char *ptx = NULL;
	int cached;
	cr_assert_eq(nvrtc_ptx(nv, src, "sm_90a", &ptx, &cached, msg, sizeof msg), 0, "%s", msg);
	static const char *const want[] = {"wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16",
					   "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16",
					   "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16",
					   "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3",
					   "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes",
					   "cp.async.bulk.tensor.3d",
					   "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [",
					   "mbarrier.try_wait.parity.shared::cta.b64",
					   "mbarrier.arrive.expect_tx.shared::cta.b64",
					   "mbarrier.init.shared::cta.b64",
					   "fence.mbarrier_init.release.cluster",
					   "fence.proxy.async.shared::cta",
					   "prefetch.tensormap",
					   "wgmma.fence.sync.aligned",
					   "wgmma.commit_group.sync.aligned",
					   "wgmma.wait_group.sync.aligned 1",
					   "setmaxnreg.inc.sync.aligned.u32 240",
					   "setmaxnreg.dec.sync.aligned.u32 40",
					   "bar.sync",
					   "bar.arrive",
					   "barrier.cluster.arrive.release.aligned",
					   "barrier.cluster.wait.acquire.aligned",
					   "%cluster_ctarank",
					   "%cluster_nctarank",
					   "mapa.shared::cluster.u32",
					   "ld.shared::cluster.u32"};
	for (size_t i = 0; i < sizeof want / sizeof *want; i++)
		cr_expect(strstr(ptx, want[i]), "no %s in the PTX", want[i]);
	/* each of the 3 sizes: SS and RS, bf16, f16 and e4m3 */
	cr_expect_eq(cuda_count(ptx, NULL, "wgmma.mma_async"), 18);
	CudaKStat ks[4];
	int nk = cuda_ptxas_stats(ptx, "sm_90a", ks, 4, msg, sizeof msg);
	if (nk < 0 && strstr(msg, "ptxas not found"))
		cr_skip_test("%s", msg);
	cr_expect_eq(nk, 1, "ptxas for sm_90a: %s", nk < 0 ? msg : "");
	free(ptx);
	free(src);
	free(k);
	nvrtc_close(nv);
}
