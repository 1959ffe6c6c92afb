/* hopper.cuh: sm_90a instructions for the templates: mbarriers, TMA tile
 * loads and 1D bulk copies, wgmma, setmaxnreg, named barriers, and sm_90's thread-block
 * clusters (rank, cluster barrier, reads of a peer block's shared memory).
 * Each wrapper is inline PTX on the GPU and,
 * under ASSOC_EMU, the emulator's model of the instruction
 * (runtime/emu/emu.hpp), which checks its use.
 *
 * S is the shared array (unsigned[] on the GPU, EmuShared<unsigned> in the
 * emulator) and `at` a word index in it.  Shared addresses are those of
 * the shared window; the emulator's are byte offsets in the one array
 * whose addresses a kernel takes, the dynamic shared array.
 *
 * wgmma: D (64 x N f32) = A (64 x 16) B (16 x N) + (scale_d ? D : 0),
 * f16 or bf16 operands.  Thread x of the warpgroup (warp w = x / 32 % 4,
 * lane l, g = l / 4, t = l % 4) holds d[4j + c] = D[16w + g + 8(c / 2)]
 * [8j + 2t + (c & 1)]; with A in registers (RS), a[0] = A[16w + g][2t,
 * 2t + 1], a[1] = the same 8 rows down, a[2] = 8 columns right, a[3] =
 * both (the low half first), as mma.sync's m16n8k16.  With e4m3 operands
 * (k = 32) A is 64 x 32 and each register holds four bytes: a[0] =
 * A[16w + g][4t .. 4t + 3], a[1] 8 rows down, a[2] 16 columns right, a[3]
 * both, as mma.sync's m16n8k32.  Operands in shared
 * memory are described by asc_wgmma_desc: K-major (transpose flag 0) or
 * MN-major (1), in the canonical layouts of the PTX ISA, swizzled as TMA
 * writes them.  The instruction is asynchronous: its reads of shared
 * memory and of the registers, and its write of D, happen between the
 * issue and the asc_wgmma_wait that retires its group; asc_wgmma_fence
 * orders earlier register accesses before it, and asc_wgmma_hold keeps
 * the compiler from moving accesses of D across the asynchronous span. */

/* A CUtensorMap: 128 opaque bytes (the emulator's: runtime/emu/emu_tmap.h). */
struct alignas(64) AscTmap {
	unsigned long long w[16];
};

#ifndef ASSOC_EMU
#define ASC_WG_F8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
		     "+f"(d[i + 6]), "+f"(d[i + 7])
/* The accumulator operands of m64nN: the register list ASC_WG_DN and the
 * constraints ASC_WG_CN, eight registers at a time. */
#define ASC_WG_R0 "%0, %1, %2, %3, %4, %5, %6, %7"
#define ASC_WG_R1 "%8, %9, %10, %11, %12, %13, %14, %15"
#define ASC_WG_R2 "%16, %17, %18, %19, %20, %21, %22, %23"
#define ASC_WG_R3 "%24, %25, %26, %27, %28, %29, %30, %31"
#define ASC_WG_R4 "%32, %33, %34, %35, %36, %37, %38, %39"
#define ASC_WG_R5 "%40, %41, %42, %43, %44, %45, %46, %47"
#define ASC_WG_R6 "%48, %49, %50, %51, %52, %53, %54, %55"
#define ASC_WG_R7 "%56, %57, %58, %59, %60, %61, %62, %63"
#define ASC_WG_R8 "%64, %65, %66, %67, %68, %69, %70, %71"
#define ASC_WG_R9 "%72, %73, %74, %75, %76, %77, %78, %79"
#define ASC_WG_R10 "%80, %81, %82, %83, %84, %85, %86, %87"
#define ASC_WG_R11 "%88, %89, %90, %91, %92, %93, %94, %95"
#define ASC_WG_R12 "%96, %97, %98, %99, %100, %101, %102, %103"
#define ASC_WG_R13 "%104, %105, %106, %107, %108, %109, %110, %111"
#define ASC_WG_R14 "%112, %113, %114, %115, %116, %117, %118, %119"
#define ASC_WG_R15 "%120, %121, %122, %123, %124, %125, %126, %127"
#define ASC_WG_D16 ASC_WG_R0
#define ASC_WG_D32 ASC_WG_D16 ", " ASC_WG_R1
#define ASC_WG_D48 ASC_WG_D32 ", " ASC_WG_R2
#define ASC_WG_D64 ASC_WG_D48 ", " ASC_WG_R3
#define ASC_WG_D80 ASC_WG_D64 ", " ASC_WG_R4
#define ASC_WG_D96 ASC_WG_D80 ", " ASC_WG_R5
#define ASC_WG_D112 ASC_WG_D96 ", " ASC_WG_R6
#define ASC_WG_D128 ASC_WG_D112 ", " ASC_WG_R7
#define ASC_WG_D144 ASC_WG_D128 ", " ASC_WG_R8
#define ASC_WG_D160 ASC_WG_D144 ", " ASC_WG_R9
#define ASC_WG_D176 ASC_WG_D160 ", " ASC_WG_R10
#define ASC_WG_D192 ASC_WG_D176 ", " ASC_WG_R11
#define ASC_WG_D208 ASC_WG_D192 ", " ASC_WG_R12
#define ASC_WG_D224 ASC_WG_D208 ", " ASC_WG_R13
#define ASC_WG_D240 ASC_WG_D224 ", " ASC_WG_R14
#define ASC_WG_D256 ASC_WG_D240 ", " ASC_WG_R15
#define ASC_WG_C16 ASC_WG_F8(0)
#define ASC_WG_C32 ASC_WG_C16, ASC_WG_F8(8)
#define ASC_WG_C48 ASC_WG_C32, ASC_WG_F8(16)
#define ASC_WG_C64 ASC_WG_C48, ASC_WG_F8(24)
#define ASC_WG_C80 ASC_WG_C64, ASC_WG_F8(32)
#define ASC_WG_C96 ASC_WG_C80, ASC_WG_F8(40)
#define ASC_WG_C112 ASC_WG_C96, ASC_WG_F8(48)
#define ASC_WG_C128 ASC_WG_C112, ASC_WG_F8(56)
#define ASC_WG_C144 ASC_WG_C128, ASC_WG_F8(64)
#define ASC_WG_C160 ASC_WG_C144, ASC_WG_F8(72)
#define ASC_WG_C176 ASC_WG_C160, ASC_WG_F8(80)
#define ASC_WG_C192 ASC_WG_C176, ASC_WG_F8(88)
#define ASC_WG_C208 ASC_WG_C192, ASC_WG_F8(96)
#define ASC_WG_C224 ASC_WG_C208, ASC_WG_F8(104)
#define ASC_WG_C240 ASC_WG_C224, ASC_WG_F8(112)
#define ASC_WG_C256 ASC_WG_C240, ASC_WG_F8(120)
/* The wgmma of one N: the operand numbers after the N / 2 accumulators,
 * I0.. (SS: A and B descriptors, scale_d, tnspA, tnspB; RS: a[0..3], the
 * B descriptor, scale_d, tnspB). */
template <int N, int BF, int TA, int TB> struct AscWgmma;
#define ASC_WGMMA_ONE(N, T, I0, I1, I2, I3, I4)                                                                  \
	asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #I2 ", 0;\n"                                          \
		     "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." T "." T " {" ASC_WG_D##N "}, %" #I0          \
		     ", %" #I1 ", p, 1, 1, %" #I3 ", %" #I4 ";\n}\n"                                                 \
		     : ASC_WG_C##N : "l"(da), "l"(db), "r"(sc), "n"(TA), "n"(TB) : "memory")
#define ASC_WGMMA_ONE_RS(N, T, I0, I1, I2, I3, I4, I5, I6)                                                      \
	asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #I5 ", 0;\n"                                          \
		     "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." T "." T " {" ASC_WG_D##N "}, {%" #I0         \
		     ", %" #I1 ", %" #I2 ", %" #I3 "}, %" #I4 ", p, 1, 1, %" #I6 ";\n}\n"                            \
		     : ASC_WG_C##N : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(sc), "n"(TB) : "memory")
/* e4m3 (BF 2): k = 32, and no transposes to name (8-bit operands in shared
 * memory are K-major only). */
#define ASC_WGMMA_ONE8(N, I0, I1, I2)                                                                            \
	asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #I2 ", 0;\n"                                          \
		     "wgmma.mma_async.sync.aligned.m64n" #N "k32.f32.e4m3.e4m3 {" ASC_WG_D##N "}, %" #I0 ", %" #I1  \
		     ", p, 1, 1;\n}\n"                                                                              \
		     : ASC_WG_C##N : "l"(da), "l"(db), "r"(sc) : "memory")
#define ASC_WGMMA_ONE8_RS(N, I0, I1, I2, I3, I4, I5)                                                            \
	asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #I5 ", 0;\n"                                          \
		     "wgmma.mma_async.sync.aligned.m64n" #N "k32.f32.e4m3.e4m3 {" ASC_WG_D##N "}, {%" #I0 ", %" #I1 \
		     ", %" #I2 ", %" #I3 "}, %" #I4 ", p, 1, 1;\n}\n"                                               \
		     : ASC_WG_C##N : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(sc) : "memory")
#define ASC_WGMMA_N(N, I0, I1, I2, I3, I4, I5, I6)                                                              \
	template <int BF, int TA, int TB> struct AscWgmma<N, BF, TA, TB> {                                      \
		static ASC_DEV void ss(float (&d)[N / 2], unsigned long long da, unsigned long long db, int sc)  \
		{                                                                                               \
			if (BF == 2)                                                                            \
				ASC_WGMMA_ONE8(N, I0, I1, I2);                                                  \
			else if (BF)                                                                            \
				ASC_WGMMA_ONE(N, "bf16", I0, I1, I2, I3, I4);                                   \
			else                                                                                    \
				ASC_WGMMA_ONE(N, "f16", I0, I1, I2, I3, I4);                                    \
		}                                                                                               \
		static ASC_DEV void rs(float (&d)[N / 2], const unsigned (&a)[4], unsigned long long db, int sc) \
		{                                                                                               \
			if (BF == 2)                                                                            \
				ASC_WGMMA_ONE8_RS(N, I0, I1, I2, I3, I4, I5);                                   \
			else if (BF)                                                                            \
				ASC_WGMMA_ONE_RS(N, "bf16", I0, I1, I2, I3, I4, I5, I6);                        \
			else                                                                                    \
				ASC_WGMMA_ONE_RS(N, "f16", I0, I1, I2, I3, I4, I5, I6);                         \
		}                                                                                               \
	};
ASC_WGMMA_N(16, 8, 9, 10, 11, 12, 13, 14)
ASC_WGMMA_N(32, 16, 17, 18, 19, 20, 21, 22)
ASC_WGMMA_N(48, 24, 25, 26, 27, 28, 29, 30)
ASC_WGMMA_N(64, 32, 33, 34, 35, 36, 37, 38)
ASC_WGMMA_N(80, 40, 41, 42, 43, 44, 45, 46)
ASC_WGMMA_N(96, 48, 49, 50, 51, 52, 53, 54)
ASC_WGMMA_N(112, 56, 57, 58, 59, 60, 61, 62)
ASC_WGMMA_N(128, 64, 65, 66, 67, 68, 69, 70)
ASC_WGMMA_N(144, 72, 73, 74, 75, 76, 77, 78)
ASC_WGMMA_N(160, 80, 81, 82, 83, 84, 85, 86)
ASC_WGMMA_N(176, 88, 89, 90, 91, 92, 93, 94)
ASC_WGMMA_N(192, 96, 97, 98, 99, 100, 101, 102)
ASC_WGMMA_N(208, 104, 105, 106, 107, 108, 109, 110)
ASC_WGMMA_N(224, 112, 113, 114, 115, 116, 117, 118)
ASC_WGMMA_N(240, 120, 121, 122, 123, 124, 125, 126)
ASC_WGMMA_N(256, 128, 129, 130, 131, 132, 133, 134)
#endif

template <class S>
ASC_DEV unsigned asc_smem_addr(S &sm, int at)
{
#ifdef ASSOC_EMU
	return emu_smem_addr(sm, at);
#else
	return (unsigned)__cvta_generic_to_shared(&sm[at]);
#endif
}

/* ---- mbarrier: sm[at], sm[at + 1] (8-byte aligned) ---- */

/* One thread initializes: count arrivals complete a phase. */
template <class S>
ASC_DEV void asc_mbar_init(S &sm, int at, unsigned count)
{
#ifdef ASSOC_EMU
	emu_mbar_init(sm, at, count);
#else
	asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(asc_smem_addr(sm, at)), "r"(count) : "memory");
#endif
}

/* The inits of this thread visible to the other threads and to TMA (then
 * a __syncthreads before they use the barriers). */
ASC_DEV void asc_mbar_fence_init()
{
#ifdef ASSOC_EMU
	emu_mbar_fence_init();
#else
	asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
}

/* One arrival, and bytes more that copies completing on the phase bring. */
template <class S>
ASC_DEV void asc_mbar_expect_tx(S &sm, int at, unsigned bytes)
{
#ifdef ASSOC_EMU
	emu_mbar_expect_tx(sm, at, bytes);
#else
	asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(asc_smem_addr(sm, at)), "r"(bytes)
		     : "memory");
#endif
}

template <class S>
ASC_DEV void asc_mbar_arrive(S &sm, int at)
{
#ifdef ASSOC_EMU
	emu_mbar_arrive(sm, at);
#else
	asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(asc_smem_addr(sm, at)) : "memory");
#endif
}

/* A wait on an mbarrier that has not completed after this many
 * nanoseconds of the global timer traps (a tile's copy takes
 * microseconds): a transaction count, an arrival count or a parity that
 * the hardware never completes then fails the launch at once
 * (CUDA_ERROR_LAUNCH_FAILED, which ends the context) rather than spinning
 * until the process is killed.  Under 2^32 (the timer's low word is read:
 * one register, where the warp-specialized producers have 24); defined as
 * 0 before this file, no bound. */
#ifndef ASC_MBAR_WAIT_NS
#define ASC_MBAR_WAIT_NS 3000000000u
#endif

/* Until the phase of this parity has completed (phase k has parity k % 2;
 * the first is 0).  The emulator's waits block its thread until the phase
 * completes, and it reports a wait that nothing can complete itself. */
template <class S>
ASC_DEV void asc_mbar_wait(S &sm, int at, unsigned parity)
{
#ifdef ASSOC_EMU
	emu_mbar_wait(sm, at, parity);
#else
	unsigned a = asc_smem_addr(sm, at), done, since = 0, now;
	for (;;) {
		asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
			     "selp.u32 %0, 1, 0, p;\n}\n"
			     : "=r"(done) : "r"(a), "r"(parity) : "memory");
		if (done)
			break;
		if (!ASC_MBAR_WAIT_NS)
			continue;
		/* the clock is read on the slow path alone: after a try that failed */
		asm volatile("mov.u32 %0, %%globaltimer_lo;" : "=r"(now));
		if (!since)
			since = now | 1; /* 0 is "not yet" */
		else if (now - since > (unsigned)ASC_MBAR_WAIT_NS) /* modulo 2^32: the low word may wrap */
			asm volatile("trap;");
	}
#endif
}

/* This thread's writes to shared memory, visible to the async proxy
 * (wgmma operands, TMA) after a barrier. */
ASC_DEV void asc_fence_proxy_async()
{
#ifdef ASSOC_EMU
	emu_fence_proxy_async();
#else
	asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}

/* ---- TMA tile loads ----
 * The box of the map at coordinates (c0 innermost, ...), elements outside
 * the tensor zeros, into sm from word at (128-byte aligned, 1024 with the
 * 128-byte swizzle) densely, row after row, each 16-byte chunk at its
 * swizzled address; complete when the phase of the mbarrier at bar[bat]
 * that its bytes complete has.  One thread issues. */
template <class S>
ASC_DEV void asc_tma_load2(S &sm, int at, const AscTmap *map, int c0, int c1, S &bar, int bat)
{
#ifdef ASSOC_EMU
	int c[2] = {c0, c1};
	emu_tma_load(sm, at, map, c, 2, bar, bat);
#else
	asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], "
		     "[%4];" ::"r"(asc_smem_addr(sm, at)), "l"(map), "r"(c0), "r"(c1), "r"(asc_smem_addr(bar, bat))
		     : "memory");
#endif
}

template <class S>
ASC_DEV void asc_tma_load3(S &sm, int at, const AscTmap *map, int c0, int c1, int c2, S &bar, int bat)
{
#ifdef ASSOC_EMU
	int c[3] = {c0, c1, c2};
	emu_tma_load(sm, at, map, c, 3, bar, bat);
#else
	asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, "
		     "%4}], [%5];" ::"r"(asc_smem_addr(sm, at)), "l"(map), "r"(c0), "r"(c1), "r"(c2),
		     "r"(asc_smem_addr(bar, bat))
		     : "memory");
#endif
}

/* ---- 1D bulk copy: bytes (a multiple of 16) from global src into sm
 * from word at, both 16-byte aligned, complete when the phase of the
 * mbarrier at bar[bat] that its bytes complete has (announced with
 * asc_mbar_expect_tx, as a tile load's).  One thread issues. ---- */
template <class S>
ASC_DEV void asc_bulk_load(S &sm, int at, const void *src, unsigned bytes, S &bar, int bat)
{
#ifdef ASSOC_EMU
	emu_bulk_load(sm, at, src, bytes, bar, bat);
#else
	asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
			     asc_smem_addr(sm, at)),
		     "l"(src), "r"(bytes), "r"(asc_smem_addr(bar, bat))
		     : "memory");
#endif
}

ASC_DEV void asc_tma_prefetch(const AscTmap *map)
{
#ifdef ASSOC_EMU
	(void)map;
#else
	asm volatile("prefetch.tensormap [%0];" ::"l"(map) : "memory");
#endif
}

/* ---- wgmma ---- */

/* A shared-memory matrix descriptor: the start address, leading and
 * stride byte offsets (multiples of 16), the swizzle (0, 32, 64 or 128
 * bytes); base offset 0. */
ASC_DEV unsigned long long asc_wgmma_desc(unsigned addr, unsigned lbo, unsigned sbo, int swz)
{
	unsigned long long layout = swz == 128 ? 1 : swz == 64 ? 2 : swz == 32 ? 3 : 0;
	return (unsigned long long)((addr >> 4) & 0x3fffu) | (unsigned long long)((lbo >> 4) & 0x3fffu) << 16 |
	       (unsigned long long)((sbo >> 4) & 0x3fffu) << 32 | layout << 62;
}

ASC_DEV void asc_wgmma_fence()
{
#ifdef ASSOC_EMU
	emu_wgmma_fence();
#else
	asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#endif
}

ASC_DEV void asc_wgmma_commit()
{
#ifdef ASSOC_EMU
	emu_wgmma_commit();
#else
	asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#endif
}

/* Every committed group of this thread's wgmmas but the newest N has retired. */
template <int N>
ASC_DEV void asc_wgmma_wait()
{
#ifdef ASSOC_EMU
	emu_wgmma_wait(N);
#else
	asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
#endif
}

/* The compiler keeps accesses of d on their side of this point: put
 * before a wgmma that accumulates into d and after the wait that retires
 * it, so that no read or write of d moves into the asynchronous span. */
template <int M>
ASC_DEV void asc_wgmma_hold(float (&d)[M])
{
#ifdef ASSOC_EMU
	(void)d;
#else
#pragma unroll
	for (int i = 0; i < M; i++)
		asm volatile("" : "+f"(d[i])::"memory");
#endif
}

/* A and B from descriptors; TA, TB: 0 K-major, 1 MN-major.  BF: 0 f16, 1
 * bf16 (k = 16), 2 e4m3 (k = 32, K-major only: TA = TB = 0). */
template <int N, int BF, int TA, int TB>
ASC_DEV void asc_wgmma_ss(float (&d)[N / 2], unsigned long long da, unsigned long long db, int scale_d)
{
	static_assert(N >= 16 && N <= 256 && N % 16 == 0, "wgmma m64nNk16: N a multiple of 16 up to 256");
	static_assert(BF != 2 || (TA == 0 && TB == 0), "wgmma .e4m3: shared operands K-major only");
#ifdef ASSOC_EMU
	emu_wgmma(d, N, BF, TA, TB, NULL, da, db, scale_d);
#else
	AscWgmma<N, BF, TA, TB>::ss(d, da, db, scale_d);
#endif
}

/* A from registers (the layout above), B from a descriptor. */
template <int N, int BF, int TB>
ASC_DEV void asc_wgmma_rs(float (&d)[N / 2], const unsigned (&a)[4], unsigned long long db, int scale_d)
{
	static_assert(N >= 16 && N <= 256 && N % 16 == 0, "wgmma m64nNk16: N a multiple of 16 up to 256");
	static_assert(BF != 2 || TB == 0, "wgmma .e4m3: B K-major only");
#ifdef ASSOC_EMU
	emu_wgmma(d, N, BF, 0, TB, a, 0, db, scale_d);
#else
	AscWgmma<N, BF, 0, TB>::rs(d, a, db, scale_d);
#endif
}

/* ---- setmaxnreg: every thread of the warpgroup, REGS in [24, 256], a multiple of 8 ---- */
template <int REGS>
ASC_DEV void asc_setmaxnreg_inc()
{
#ifdef ASSOC_EMU
	emu_setmaxnreg(REGS, "setmaxnreg.inc");
#else
	static_assert(REGS >= 24 && REGS <= 256 && REGS % 8 == 0, "setmaxnreg: a multiple of 8 in [24, 256]");
	asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(REGS));
#endif
}

template <int REGS>
ASC_DEV void asc_setmaxnreg_dec()
{
#ifdef ASSOC_EMU
	emu_setmaxnreg(REGS, "setmaxnreg.dec");
#else
	static_assert(REGS >= 24 && REGS <= 256 && REGS % 8 == 0, "setmaxnreg: a multiple of 8 in [24, 256]");
	asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(REGS));
#endif
}

/* ---- named barriers: barrier id (1 to 15; 0 is __syncthreads') of count
 * threads, a multiple of 32; every thread of a phase names the same count.
 * asc_bar_sync waits until count threads have arrived, asc_bar_arrive
 * counts this thread and goes on (bar.sync and bar.arrive are .aligned:
 * every thread of a warp executes the same one). ---- */
ASC_DEV void asc_bar_sync(int id, int count)
{
#ifdef ASSOC_EMU
	emu_bar(id, count, 1);
#else
	asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(count) : "memory");
#endif
}

ASC_DEV void asc_bar_arrive(int id, int count)
{
#ifdef ASSOC_EMU
	emu_bar(id, count, 0);
#else
	asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(count) : "memory");
#endif
}

/* ---- thread-block clusters (sm_90): the blocks of a cluster run at once
 * and read each other's shared memory (distributed shared memory).
 * asc_cluster_arrive and asc_cluster_wait are barrier.cluster's two
 * halves: every thread of the cluster arrives once a phase, and a wait
 * returns once all have arrived, the writes before each arrival visible
 * after it (release, acquire); between them a thread may go on with work
 * that touches no peer's memory.  A block's shared memory is gone once it
 * exits: a cluster barrier after the last read of it by a peer keeps it. ---- */
ASC_DEV unsigned asc_cluster_rank()
{
#ifdef ASSOC_EMU
	return emu_cluster_rank();
#else
	unsigned r;
	asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
	return r;
#endif
}

ASC_DEV unsigned asc_cluster_size()
{
#ifdef ASSOC_EMU
	return emu_cluster_size();
#else
	unsigned r;
	asm("mov.u32 %0, %%cluster_nctarank;" : "=r"(r));
	return r;
#endif
}

ASC_DEV void asc_cluster_arrive()
{
#ifdef ASSOC_EMU
	emu_cluster_arrive();
#else
	asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
#endif
}

ASC_DEV void asc_cluster_wait()
{
#ifdef ASSOC_EMU
	emu_cluster_wait();
#else
	asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
#endif
}

ASC_DEV void asc_cluster_sync()
{
	asc_cluster_arrive();
	asc_cluster_wait();
}

/* The T at sm[at] in the block of cluster rank `rank` (sm: this block's
 * array of T, its peers' at the same place): mapa.shared::cluster, then
 * ld.shared::cluster a word at a time (a byte at a time for the rest). */
template <class T, class S>
ASC_DEV T asc_dsmem_ld(S &sm, int at, unsigned rank)
{
#ifdef ASSOC_EMU
	return emu_dsmem_rd(sm, at, rank);
#else
	unsigned a = (unsigned)__cvta_generic_to_shared(&sm[at]), ra;
	asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ra) : "r"(a), "r"(rank));
	union {
		T v;
		unsigned w[(sizeof(T) + 3) / 4];
		unsigned char b[(sizeof(T) + 3) / 4 * 4];
	} u;
#pragma unroll
	for (int k = 0; k < (int)(sizeof(T) / 4); k++)
		asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(u.w[k]) : "r"(ra + 4 * k) : "memory");
#pragma unroll
	for (int k = (int)(sizeof(T) / 4 * 4); k < (int)sizeof(T); k++) {
		unsigned short h;
		asm volatile("ld.shared::cluster.u8 %0, [%1];" : "=h"(h) : "r"(ra + k) : "memory");
		u.b[k] = (unsigned char)h;
	}
	return u.v;
#endif
}
