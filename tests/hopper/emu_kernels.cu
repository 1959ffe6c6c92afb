/* emu_kernels.cu: kernels written on the Hopper wrappers
 * (templates/hopper.cuh), run on the emulator by tests/test_hopper.c,
 * which builds them after the wrappers.  Each takes one struct of
 * arguments; its C twin is in the test. */

/* ---- TMA: a 2D box of w x 16 and a 3D box of w x 8 x 2 16-bit elements
 * (at words 0 and 512), partly outside their tensors, completing on one
 * mbarrier; the shared words copied out as they are (swizzled). ---- */
struct TmaArgs {
	AscTmap m2, m3;
	unsigned *out;
	unsigned expect; /* the bytes arrive.expect_tx announces */
	int words;       /* of each box */
	int mode;        /* 1: read without the wait; 2: two threads init; 3: read the barrier; 4: wait uninitialized;
			    5: one arrival too many */
};

extern "C" void tma_emu(const void *p)
{
	const TmaArgs *A = (const TmaArgs *)p;
	ASC_DYN_SHARED(unsigned, sm);
	const int BAR = 2048; /* byte 8192 */
	int x = threadIdx.x;
	if (A->mode == 4) {
		asc_mbar_wait(sm, BAR, 0);
		return;
	}
	if (x == 0 || (A->mode == 2 && x == 1)) {
		asc_mbar_init(sm, BAR, 1);
		asc_mbar_fence_init();
	}
	__syncthreads();
	if (A->mode == 3)
		A->out[x] = sm[BAR];
	if (x == 0) {
		asc_tma_prefetch(&A->m2);
		asc_mbar_expect_tx(sm, BAR, A->expect);
		asc_tma_load2(sm, 0, &A->m2, 48, 60, sm, BAR);
		asc_tma_load3(sm, 512, &A->m3, -16, 5, 2, sm, BAR);
		if (A->mode == 5)
			asc_mbar_arrive(sm, BAR);
	}
	if (A->mode == 1)
		__syncthreads();
	else
		asc_mbar_wait(sm, BAR, 0);
	for (int w = x; w < 1024; w += blockDim.x)
		if (w % 512 < A->words)
			A->out[w] = sm[w];
}

/* ---- A ring of 2 stages over 5 tiles of 16 rows x 32 words: thread 32
 * loads each tile once its stage is empty, the 32 threads of warp 0
 * consume them (lane l sums row l % 16 of the tile) and free the stage.
 * The producer's first wait on a stage is on parity parity0 (1: the phase
 * before the first, complete). ---- */
struct RingArgs {
	AscTmap m;
	unsigned *out;
	int parity0;
};

extern "C" void ring_emu(const void *p)
{
	const RingArgs *A = (const RingArgs *)p;
	ASC_DYN_SHARED(unsigned, sm);
	const int FULL = 1024, EMPTY = 1028; /* stage s's barriers at FULL + 2s and EMPTY + 2s */
	int x = threadIdx.x;
	if (x == 0) {
		for (int s = 0; s < 2; s++) {
			asc_mbar_init(sm, FULL + 2 * s, 1);
			asc_mbar_init(sm, EMPTY + 2 * s, 32);
		}
		asc_mbar_fence_init();
	}
	__syncthreads();
	if (x == 32) {
		for (int i = 0; i < 5; i++) {
			int s = i % 2;
			asc_mbar_wait(sm, EMPTY + 2 * s, (unsigned)((i / 2) & 1) ^ (unsigned)A->parity0);
			asc_mbar_expect_tx(sm, FULL + 2 * s, 16 * 128);
			asc_tma_load2(sm, 512 * s, &A->m, 0, 16 * i, sm, FULL + 2 * s);
		}
	} else if (x < 32) {
		for (int i = 0; i < 5; i++) {
			int s = i % 2;
			asc_mbar_wait(sm, FULL + 2 * s, (unsigned)(i / 2) & 1);
			unsigned sum = 0;
			for (int c = 0; c < 32; c++)
				sum += sm[512 * s + 32 * (x % 16) + c];
			A->out[32 * i + x] = sum;
			asc_fence_proxy_async(); /* the reads before the copy's writes */
			asc_mbar_arrive(sm, EMPTY + 2 * s);
		}
	}
}

/* ---- wgmma as attention uses it: S = Q K^T (SS, both K-major, head
 * dim 128 as two TMA boxes of 64 columns, 128-byte swizzle), then O = P V
 * (RS: P from registers, V MN-major as boxes of 64 columns x BN keys).
 * Q: 64 x 128, K: BN x 128, V: BN x DV, P: 64 x BN (row-major 16-bit
 * pairs); S: 64 x BN, O: 64 x DV floats, row-major. ---- */
struct MmaArgs {
	AscTmap q, k, v;
	const unsigned *p;
	float *s, *o;
	int nowait; /* no mbarrier wait before the first wgmma */
};

template <int BF, int BN, int DV>
static void attn_like(const void *pp)
{
	const MmaArgs *A = (const MmaArgs *)pp;
	ASC_DYN_SHARED(unsigned, sm);
	const int QB = 0, KB = 16384, VB = KB + BN * 256, BAR = (VB + BN * 128 * (DV / 64)) / 4;
	int x = threadIdx.x, w = x / 32, l = x % 32, g = l / 4, t = l % 4;
	if (x == 0) {
		asc_mbar_init(sm, BAR, 1);
		asc_mbar_fence_init();
	}
	__syncthreads();
	if (x == 0) {
		asc_mbar_expect_tx(sm, BAR, 2 * 8192 + 2 * BN * 128 + DV / 64 * BN * 128);
		for (int h = 0; h < 2; h++) {
			asc_tma_load2(sm, (QB + 8192 * h) / 4, &A->q, 64 * h, 0, sm, BAR);
			asc_tma_load2(sm, (KB + BN * 128 * h) / 4, &A->k, 64 * h, 0, sm, BAR);
		}
		for (int h = 0; h < DV / 64; h++)
			asc_tma_load2(sm, (VB + BN * 128 * h) / 4, &A->v, 64 * h, 0, sm, BAR);
	}
	if (!A->nowait)
		asc_mbar_wait(sm, BAR, 0);
	unsigned base = asc_smem_addr(sm, 0);
	float s[BN / 2];
	for (int i = 0; i < BN / 2; i++)
		s[i] = 0;
	asc_wgmma_fence();
	for (int k = 0; k < 8; k++) { /* k-steps of 16 columns: 32 bytes into the 128-byte rows */
		unsigned long long dq = asc_wgmma_desc(base + QB + 8192 * (k / 4) + 32 * (k % 4), 16, 1024, 128);
		unsigned long long dk = asc_wgmma_desc(base + KB + BN * 128 * (k / 4) + 32 * (k % 4), 16, 1024, 128);
		asc_wgmma_ss<BN, BF, 0, 0>(s, dq, dk, k > 0);
	}
	asc_wgmma_commit();
	asc_wgmma_wait<0>();
	for (int j = 0; j < BN / 8; j++)
		for (int c = 0; c < 4; c++)
			A->s[(16 * w + g + 8 * (c / 2)) * BN + 8 * j + 2 * t + (c & 1)] = s[4 * j + c];
	float o[DV / 2];
	for (int i = 0; i < DV / 2; i++)
		o[i] = 0;
	asc_wgmma_fence();
	for (int k = 0; k < BN / 16; k++) { /* k-steps of 16 keys: 2048 bytes of V */
		unsigned a[4];
		for (int r = 0; r < 4; r++)
			a[r] = A->p[((16 * w + g + 8 * (r % 2)) * BN + 16 * k + 2 * t + 8 * (r / 2)) / 2];
		asc_wgmma_rs<DV, BF, 1>(o, a, asc_wgmma_desc(base + VB + 2048 * k, BN * 128, 1024, 128), k > 0);
	}
	asc_wgmma_commit();
	asc_wgmma_wait<0>();
	for (int j = 0; j < DV / 8; j++)
		for (int c = 0; c < 4; c++)
			A->o[(16 * w + g + 8 * (c / 2)) * DV + 8 * j + 2 * t + (c & 1)] = o[4 * j + c];
}

extern "C" void mma_bf16_64_64_emu(const void *p) { attn_like<1, 64, 64>(p); }
extern "C" void mma_f16_64_128_emu(const void *p) { attn_like<0, 64, 128>(p); }
extern "C" void mma_bf16_128_128_emu(const void *p) { attn_like<1, 128, 128>(p); }
extern "C" void mma_f16_128_64_emu(const void *p) { attn_like<0, 128, 64>(p); }

/* ---- e4m3 wgmma (k = 32) as FP8 attention lays its operands out: S = Q
 * K^T (SS, Q and K K-major in rows of head dim 128, 128 bytes, with the
 * 128-byte swizzle; k-steps of 32 bytes), then O = P V (RS: P's bytes in
 * registers; V given transposed, DV rows of BN keys, K-major as an 8-bit
 * B must be, with the swizzle of its rows' BN bytes).  Q: 64 x 128, K: BN
 * x 128, VT: DV x BN, P: 64 x BN bytes, row-major; S: 64 x BN, O: 64 x DV
 * floats, row-major. ---- */
template <int BN, int DV>
static void attn8_like(const void *pp)
{
	const MmaArgs *A = (const MmaArgs *)pp;
	ASC_DYN_SHARED(unsigned, sm);
	const int SW = BN, QB = 0, KB = 8192, VB = KB + BN * 128, BAR = (VB + DV * BN) / 4;
	int x = threadIdx.x, w = x / 32, l = x % 32, g = l / 4, t = l % 4;
	if (x == 0) {
		asc_mbar_init(sm, BAR, 1);
		asc_mbar_fence_init();
	}
	__syncthreads();
	if (x == 0) {
		asc_mbar_expect_tx(sm, BAR, 8192 + BN * 128 + DV * BN);
		asc_tma_load2(sm, QB / 4, &A->q, 0, 0, sm, BAR);
		asc_tma_load2(sm, KB / 4, &A->k, 0, 0, sm, BAR);
		asc_tma_load2(sm, VB / 4, &A->v, 0, 0, sm, BAR);
	}
	if (!A->nowait)
		asc_mbar_wait(sm, BAR, 0);
	unsigned base = asc_smem_addr(sm, 0);
	float s[BN / 2];
	for (int i = 0; i < BN / 2; i++)
		s[i] = 0;
	asc_wgmma_fence();
	for (int k = 0; k < 4; k++) {
		unsigned long long dq = asc_wgmma_desc(base + QB + 32 * k, 16, 1024, 128);
		unsigned long long dk = asc_wgmma_desc(base + KB + 32 * k, 16, 1024, 128);
		asc_wgmma_ss<BN, 2, 0, 0>(s, dq, dk, k > 0);
	}
	asc_wgmma_commit();
	asc_wgmma_wait<0>();
	for (int j = 0; j < BN / 8; j++)
		for (int c = 0; c < 4; c++)
			A->s[(16 * w + g + 8 * (c / 2)) * BN + 8 * j + 2 * t + (c & 1)] = s[4 * j + c];
	float o[DV / 2];
	for (int i = 0; i < DV / 2; i++)
		o[i] = 0;
	asc_wgmma_fence();
	for (int k = 0; k < BN / 32; k++) {
		unsigned a[4];
		for (int r = 0; r < 4; r++)
			a[r] = A->p[((16 * w + g + 8 * (r % 2)) * BN + 32 * k + 4 * t + 16 * (r / 2)) / 4];
		asc_wgmma_rs<DV, 2, 0>(o, a, asc_wgmma_desc(base + VB + 32 * k, 16, 8 * SW, SW), k > 0);
	}
	asc_wgmma_commit();
	asc_wgmma_wait<0>();
	for (int j = 0; j < DV / 8; j++)
		for (int c = 0; c < 4; c++)
			A->o[(16 * w + g + 8 * (c / 2)) * DV + 8 * j + 2 * t + (c & 1)] = o[4 * j + c];
}

extern "C" void mma_e4m3_128_64_emu(const void *p) { attn8_like<128, 64>(p); }
extern "C" void mma_e4m3_64_128_emu(const void *p) { attn8_like<64, 128>(p); }

/* An e4m3 wgmma whose B is MN-major: refused (8-bit operands are K-major
 * only). */
extern "C" void mma_e4m3_mn_major_emu(const void *pp)
{
	(void)pp;
	ASC_DYN_SHARED(unsigned, sm);
	for (int i = threadIdx.x; i < 1024; i += 128)
		sm[i] = 0;
	asc_fence_proxy_async();
	__syncthreads();
	unsigned base = asc_smem_addr(sm, 0);
	float d[32];
	for (int i = 0; i < 32; i++)
		d[i] = 0;
	asc_wgmma_fence();
	emu_wgmma(d, 64, 2, 0, 1, NULL, asc_wgmma_desc(base, 16, 256, 0), asc_wgmma_desc(base + 2048, 16, 256, 0), 0);
	asc_wgmma_commit();
	asc_wgmma_wait<0>();
}

/* ---- wgmma misused: A (64 x 16) and B (16 x 64) all ones, K-major
 * without swizzle, written by the threads; D starts at 7 and becomes 16.
 * out[x]: d[0] read before the wait, out[128 + x]: after. ---- */
struct WgArgs {
	int mode; /* 1: no fence.proxy.async; 2: no wgmma.fence; 3: D written in flight; 4: exit in flight;
		     5: an operand written in flight; 6: warp 3 does not issue; 7: warp 3 gives another A */
	float *out;
};

extern "C" void wgfail_emu(const void *pp)
{
	const WgArgs *A = (const WgArgs *)pp;
	ASC_DYN_SHARED(unsigned, sm);
	int x = threadIdx.x, mode = A->mode;
	for (int i = x; i < 1024; i += 128)
		sm[i] = 0x3f803f80u; /* bf16 1.0 twice */
	if (mode != 1)
		asc_fence_proxy_async();
	__syncthreads();
	/* 8 x 16-byte core matrices: a row's two 16-byte halves 128 bytes apart, groups of 8 rows 256 apart */
	unsigned base = asc_smem_addr(sm, 0);
	unsigned long long da = asc_wgmma_desc(base, 128, 256, 0), db = asc_wgmma_desc(base + 2048, 128, 256, 0);
	float d[32];
	for (int i = 0; i < 32; i++)
		d[i] = 7.0f;
	if (mode == 6 && x >= 96)
		return;
	if (mode != 2)
		asc_wgmma_fence();
	asc_wgmma_ss<64, 1, 0, 0>(d, mode == 7 && x >= 96 ? db : da, db, 0);
	asc_wgmma_commit();
	A->out[x] = d[0];
	if (mode == 3)
		d[3] = 1.0f;
	if (mode == 4)
		return;
	if (mode == 5) {
		__syncthreads();
		if (x == 0)
			sm[1] = 0;
		__syncthreads();
	}
	asc_wgmma_wait<0>();
	A->out[128 + x] = d[0];
}

/* ---- wgmma reads its shared operands until the wait that retires it:
 * warpgroup 0 multiplies A and B (all ones, as wgfail's: d[0] 16) and
 * frees B's words at an mbarrier (128 arrivals); thread 128, a producer,
 * waits there and writes over B's first words: a store (modes 1 and 2)
 * or a TMA copy of twos (3 and 4).  Odd modes free B before the
 * wgmma.wait_group, while the wgmma may still read it (a race); even ones
 * after it.  out[x]: d[0] after the wait, as bits; out[128]: B's first
 * word as thread 128 reads it after its write. ---- */
struct WgRaceArgs {
	AscTmap m; /* 16 rows of 64 bf16 twos, no swizzle: B's 2048 bytes */
	unsigned *out;
	int mode;
};

extern "C" void wgrace_emu(const void *pp)
{
	const WgRaceArgs *A = (const WgRaceArgs *)pp;
	ASC_DYN_SHARED(unsigned, sm);
	const int EMPTY = 1024, FULL = 1026;
	int x = threadIdx.x, mode = A->mode, early = mode % 2;
	for (int i = x; i < 1024; i += blockDim.x)
		sm[i] = 0x3f803f80u;
	asc_fence_proxy_async();
	if (x == 0) {
		asc_mbar_init(sm, EMPTY, 128);
		asc_mbar_init(sm, FULL, 1);
		asc_mbar_fence_init();
	}
	__syncthreads();
	unsigned base = asc_smem_addr(sm, 0);
	if (x < 128) {
		unsigned long long da = asc_wgmma_desc(base, 128, 256, 0), db = asc_wgmma_desc(base + 2048, 128, 256, 0);
		float d[32];
		for (int i = 0; i < 32; i++)
			d[i] = 7.0f;
		asc_wgmma_fence();
		asc_wgmma_ss<64, 1, 0, 0>(d, da, db, 0);
		asc_wgmma_commit();
		if (early)
			asc_mbar_arrive(sm, EMPTY);
		asc_wgmma_wait<0>();
		if (!early)
			asc_mbar_arrive(sm, EMPTY);
		A->out[x] = (unsigned)__float_as_int(d[0]);
	} else if (x == 128) {
		asc_mbar_wait(sm, EMPTY, 0);
		if (mode <= 2)
			sm[512] = 0x40004000u;
		else {
			asc_mbar_expect_tx(sm, FULL, 2048);
			asc_tma_load2(sm, 512, &A->m, 0, 0, sm, FULL);
			asc_mbar_wait(sm, FULL, 0);
		}
		A->out[128] = sm[512];
	}
}

/* ---- setmaxnreg: 1: a count not a multiple of 8; 2: warp 3 skips it;
 * 3: a producer and two consumers as warp specialization splits them (3
 * warpgroups: 24, 240 and 240); 4: the same with consumers at 256, past
 * the SM's registers; 5: .inc below the count of the last .dec; 6: a
 * producer at 32 and consumers at 240, 65536 in all: within the SM's,
 * past the 384 x 168 the block was launched with ---- */
extern "C" void maxnreg_emu(const void *pp)
{
	int mode = *(const int *)pp, x = threadIdx.x;
	if (mode == 1)
		asc_setmaxnreg_inc<100>();
	else if (mode == 3 || mode == 4 || mode == 6) {
		if (x < 128 && mode == 6)
			asc_setmaxnreg_dec<32>();
		else if (x < 128)
			asc_setmaxnreg_dec<24>();
		else if (mode != 4)
			asc_setmaxnreg_inc<240>();
		else
			asc_setmaxnreg_inc<256>();
	} else if (mode == 5) {
		asc_setmaxnreg_dec<40>();
		asc_setmaxnreg_inc<32>();
	} else if (mode != 2 || x % 128 < 96) {
		if (x < 128)
			asc_setmaxnreg_inc<240>();
		else
			asc_setmaxnreg_dec<40>();
	}
}

/* ---- named barriers: two warpgroups take turns (a ping-pong on
 * barriers 1 and 2, count 256) appending to a log in shared memory, which
 * out receives; mode 1: warpgroup 1 counts 128 at barrier 2; 2: its last
 * arrive is left out (warpgroup 0 waits for ever); 3: warpgroup 0's last
 * arrive has no bar.sync to complete; 4: barrier 0; 5: a count of 100;
 * 6: warp 0 arrives twice in one phase ---- */
struct BarArgs {
	int mode, turns;
	unsigned *out;
};

extern "C" void pingpong_emu(const void *pp)
{
	const BarArgs *A = (const BarArgs *)pp;
	ASC_DYN_SHARED(unsigned, sm);
	int x = threadIdx.x, wg = x / 128, mode = A->mode;
	if (mode == 4)
		asc_bar_sync(0, 256);
	if (mode == 5)
		asc_bar_arrive(1, 100);
	if (mode == 6 && x < 32) {
		asc_bar_arrive(3, 256);
		asc_bar_arrive(3, 256);
	}
	for (int k = 0; k < A->turns; k++) {
		if (wg == 1 || k > 0) /* warpgroup 0 takes the first turn */
			asc_bar_sync(1 + wg, 256);
		if (x % 128 == 0) { /* this turn's entry at the log's end: sm[0] entries so far */
			unsigned n = k == 0 && wg == 0 ? 0u : (unsigned)sm[0];
			sm[1 + n] = 10 * k + wg;
			sm[0] = n + 1;
		}
		if (mode == 2 && wg == 1 && k + 2 == A->turns)
			break;
		if (wg == 0 || k + 1 < A->turns || mode == 3)
			asc_bar_arrive(2 - wg, mode == 1 && wg == 1 ? 128 : 256);
	}
	__syncthreads();
	if (x < 2 * A->turns)
		A->out[x] = sm[1 + x];
}

/* ---- clusters: each thread writes a word of its block's shared array,
 * then reads its neighbours' words in the blocks of ranks r + 1 and r - 1
 * (out: rank, cluster size, the two words).  mode 1: no cluster barrier
 * between the writes and the reads; 2: a read of rank nctarank; 3: no
 * cluster barrier before exit; 4: warp 1 of block 0 leaves before the
 * barrier; 5: barrier.cluster.arrive twice; 6: wait without arrive; 7:
 * the writes between the arrival and the wait; 8: the reads between
 * them. ---- */
struct ClusterArgs {
	unsigned *out;
	int mode;
};

extern "C" void cluster_emu(const void *p)
{
	const ClusterArgs *A = (const ClusterArgs *)p;
	ASC_SHARED(unsigned, words, 128);
	unsigned x = threadIdx.x, r = asc_cluster_rank(), cs = asc_cluster_size();
	if (A->mode == 4 && blockIdx.x == 0 && x >= 32)
		return;
	if (A->mode == 7)
		asc_cluster_arrive();
	words[x] = blockIdx.x * 1000 + x;
	if (A->mode == 5)
		asc_cluster_arrive();
	if (A->mode == 6 || A->mode == 7)
		asc_cluster_wait();
	if (A->mode == 8)
		asc_cluster_arrive();
	else if (A->mode != 1 && A->mode != 7)
		asc_cluster_sync();
	unsigned next = A->mode == 2 ? cs : (r + 1) % cs, prev = (r + cs - 1) % cs;
	unsigned a = asc_dsmem_ld<unsigned>(words, x, next), b = asc_dsmem_ld<unsigned>(words, x, prev);
	if (A->mode == 8)
		asc_cluster_wait();
	unsigned *o = A->out + 4 * (blockIdx.x * blockDim.x + x);
	o[0] = r, o[1] = cs, o[2] = a, o[3] = b;
	if (A->mode != 3)
		asc_cluster_sync();
}

/* ---- reads kept while no __syncthreads comes: every one of 64 threads
 * reads word 0 in each of `turns` turns, which named barrier 1 orders
 * one after another (a warp-specialized loop's shape); out[0]: the most
 * reads of shared memory the emulator kept at once (white-box: its
 * arena's log).  write: thread 0 then writes word 0 with no barrier
 * after the last turn's reads (a race). ---- */
struct ReadsArgs {
	unsigned *out;
	int turns, write;
};

extern "C" void reads_emu(const void *p)
{
	const ReadsArgs *A = (const ReadsArgs *)p;
	ASC_SHARED(unsigned, w, 32);
	unsigned x = threadIdx.x, sum = 0;
	if (x < 32)
		w[x] = x;
	__syncthreads();
	for (int k = 0; k < A->turns; k++) {
		sum += w[0];
		asc_bar_sync(1, 64);
	}
	sum += w[0];
	if (A->write && x == 0)
		w[0] = sum;
	asc_bar_sync(1, 64);
	if (x == 0)
		A->out[0] = (unsigned)emu_arena[emu.rank].nlog;
}

/* ---- 1D bulk copy: n words of src (at word 4 of it) into words 0.. of
 * the dynamic array, completing on the mbarrier at word 1024; copied out.
 * mode 1: read without the wait; 2: a source not 16-byte aligned; 3: 20
 * bytes (not a multiple of 16); 4: the block exits without the wait. ---- */
struct BulkArgs {
	const unsigned *src;
	unsigned *out;
	int n, mode;
};

extern "C" void bulk_emu(const void *p)
{
	const BulkArgs *A = (const BulkArgs *)p;
	ASC_DYN_SHARED(unsigned, sm);
	const int BAR = 1024;
	if (threadIdx.x == 0) {
		asc_mbar_init(sm, BAR, 1);
		asc_mbar_fence_init();
	}
	__syncthreads();
	if (threadIdx.x == 0) {
		unsigned bytes = A->mode == 3 ? 20 : 4 * A->n;
		asc_mbar_expect_tx(sm, BAR, bytes);
		asc_bulk_load(sm, 0, A->src + (A->mode == 2 ? 5 : 4), bytes, sm, BAR);
	}
	if (A->mode == 4)
		return;
	if (A->mode == 1)
		__syncthreads();
	else
		asc_mbar_wait(sm, BAR, 0);
	for (int w = threadIdx.x; w < A->n; w += blockDim.x)
		A->out[w] = sm[w];
}

/* ---- happens-before across partial barriers: 96 threads, words 0 to 7
 * written before a __syncthreads, mbarriers at words 64 and 66.  Each
 * mode pairs two accesses of one word by threads of different warps (or
 * lanes) and orders them, or not:
 * 1: thread 0 writes word 0; warps 1 and 2 meet at named barrier 1 (64
 *    threads) and thread 64 reads it: a race;
 * 2: the same with warp 0 at the barrier too (96 threads): ordered;
 * 3: thread 0 writes word 0 and arrives at an mbarrier, thread 64 waits
 *    on its phase and reads it: ordered;
 * 4: warps 1 and 2 read word 1 and meet at barrier 1; warp 0, after them
 *    (behind a __syncwarp), writes it: a race;
 * 5: thread 0 writes word 0, __syncthreads, every thread reads it: ordered;
 * 6: lane 0 writes word 2, __syncwarp, lane 5 reads it: ordered;
 * 7: the same with a shuffle for the __syncwarp: a race (a shuffle orders
 *    no memory);
 * 8: warp 1 reads words 0 to 3; thread 0, after it, bulk-copies over
 *    them: a race;
 * 9: the same with warp 1 arriving at an mbarrier (count 32) that thread
 *    0 waits on before the copy: ordered, but the reads are the generic
 *    proxy's and the copy's writes the async proxy's, with no
 *    fence.proxy.async between them: reported;
 * 15: mode 9 with warp 1 fencing before its arrival: ordered;
 * 10: thread 0 writes word 0, barrier.cluster, thread 64 reads it:
 *    ordered (launched in clusters);
 * 11: thread 0 bulk-copies words 0 to 3 and waits for them, thread 64
 *    reads word 0 without waiting: a race (with the copy);
 * 12: the same with thread 64 waiting on the phase too: ordered;
 * 13: thread 0 writes word 0 between its barrier.cluster.arrive and its
 *    wait, thread 64 reads it after its wait: a race (launched in
 *    clusters);
 * 14: mode 3 with thread 64 reading without the wait: a race.
 * out[96 block + x]: what thread x read (0: nothing). ---- */
struct OrderArgs {
	const unsigned *src;
	unsigned *out;
	int mode;
};

extern "C" void order_emu(const void *p)
{
	const OrderArgs *A = (const OrderArgs *)p;
	ASC_DYN_SHARED(unsigned, sm);
	const int BAR = 64, BAR2 = 66;
	int x = threadIdx.x, w = x / 32, mode = A->mode;
	if (x == 0) {
		asc_mbar_init(sm, BAR, mode == 9 || mode == 15 ? 32 : 1);
		asc_mbar_init(sm, BAR2, 1);
		asc_mbar_fence_init();
	}
	if (x < 8)
		sm[x] = 100 + x;
	__syncthreads();
	unsigned r = 0;
	if (mode == 1 || mode == 2) {
		if (x == 0)
			sm[0] = 7;
		if (w > 0 || mode == 2)
			asc_bar_sync(1, mode == 2 ? 96 : 64);
		if (x == 64)
			r = sm[0];
	} else if (mode == 3 || mode == 14) {
		if (x == 0) {
			sm[0] = 7;
			asc_mbar_arrive(sm, BAR);
		}
		if (x == 64) {
			if (mode == 3)
				asc_mbar_wait(sm, BAR, 0);
			r = sm[0];
		}
	} else if (mode == 4) {
		if (w == 0)
			__syncwarp();
		else {
			r = sm[1];
			asc_bar_sync(1, 64);
		}
		if (x == 0)
			sm[1] = 7;
	} else if (mode == 5) {
		if (x == 0)
			sm[0] = 7;
		__syncthreads();
		r = sm[0];
	} else if (mode == 6 || mode == 7) {
		if (x == 0)
			sm[2] = 7;
		if (mode == 6)
			__syncwarp();
		else
			r = (unsigned)__shfl_sync(0xffffffffu, x, 0);
		if (x == 5)
			r = sm[2];
	} else if (mode == 8 || mode == 9 || mode == 15) {
		if (w == 0)
			__syncwarp();
		if (w == 1) {
			r = sm[x % 4];
			if (mode == 15)
				asc_fence_proxy_async();
			if (mode != 8)
				asc_mbar_arrive(sm, BAR);
		}
		if (x == 0) {
			if (mode != 8)
				asc_mbar_wait(sm, BAR, 0);
			asc_mbar_expect_tx(sm, BAR2, 16);
			asc_bulk_load(sm, 0, A->src, 16, sm, BAR2);
			asc_mbar_wait(sm, BAR2, 0);
			r = sm[0];
		}
	} else if (mode == 11 || mode == 12) {
		if (x == 0) {
			asc_mbar_expect_tx(sm, BAR2, 16);
			asc_bulk_load(sm, 0, A->src, 16, sm, BAR2);
		}
		if (x == 0 || (x == 64 && mode == 12))
			asc_mbar_wait(sm, BAR2, 0);
		if (x == 0 || x == 64)
			r = sm[0];
	} else if (mode == 10) {
		if (x == 0)
			sm[0] = 7;
		asc_cluster_sync();
		if (x == 64)
			r = sm[0];
		asc_cluster_sync();
	} else if (mode == 13) {
		asc_cluster_arrive();
		if (x == 0)
			sm[0] = 7;
		asc_cluster_wait();
		if (x == 64)
			r = sm[0];
		asc_cluster_sync();
	}
	A->out[96 * blockIdx.x + x] = r;
}
