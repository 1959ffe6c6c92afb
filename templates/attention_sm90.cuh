/* attention_sm90.cuh: the attention forward for Hopper (sm_90a): wgmma for
 * both products, the K and V tiles brought by the tensor memory
 * accelerator (TMA) into a ring of stages that mbarriers guard.
 *
 * The contract, the hooks and the layouts of q, k, v and the outputs are
 * attention.cuh's (included before this file, whose helpers it uses):
 * this template is another schedule of the same (m, l, o) fold, chosen by
 * variants with wg > 0 (runtime/variant.h) on sm_90a targets; those with
 * ws > 0 take the warp-specialized schedules at its end (attn90_ws),
 * whose block has a producer warpgroup more.
 *
 * Block: WG warpgroups of 4 warps, each owning 64 query rows of the run
 * (BM = 64 WG rows a block); grid and block order as attn_tile_of gives.
 * Thread 0 also issues the copies: the Q tile once, then the K and V
 * tiles of the live key tiles (attn_next: tiles the mask drops entirely
 * are never loaded), NS tiles ahead, each stage's mbarrier counting the
 * bytes of its copies.  Per key tile: S = Q K^T by wgmma (Q and K from
 * shared memory), the score, mask and online softmax in registers as
 * attention.cuh does them (base 2, one rescale of o per tile), P rounded
 * to f16/bf16 in the A-fragment registers, O += P V by wgmma with P from
 * registers and V from shared memory (MN-major: V stays as it is in global
 * memory).  Each stage has a second mbarrier that every thread arrives at
 * after its P V: thread 0 waits there before it copies the tile NS ahead
 * into the stage, and no block-wide barrier holds the warpgroups in step
 * (with 16-bit operands: e4m3's transpose of V, below, takes a named
 * barrier of the whole block a tile).
 *
 * Shared memory (byte offsets from the first 1024-aligned address of the
 * dynamic array, whose launch size cuda_mod.c's attn_smem gives): Q as
 * D / 64 boxes of BM rows x 128 bytes; then NS stages, each D / 64 boxes
 * of BN keys x 128 bytes of K and DV / 64 of V; then the mbarriers.  Every
 * box is written by one TMA copy with the 128-byte swizzle, which the
 * wgmma descriptors name: K-major (Q, K) with 1024 bytes between groups of
 * 8 rows and the k-step of 16 elements 32 bytes into the swizzle atom;
 * MN-major (V) with 1024 bytes between groups of 8 keys and BN * 128
 * between boxes of 64 value columns.
 *
 * Tensor maps (AttnMaps, the kernel's second parameter, built by the host
 * with cuTensorMapEncodeTiled or the emulator's encoder): q as
 * {D, heads * rows}, boxes {64, BM}; k and v as {D, len, kv_heads} and
 * {DV, len, kv_heads}, boxes {64, BN, 1}; all with the 128-byte swizzle.
 * Keys past len come as zeros (the box is out of the tensor), and with the
 * split's or the row's end inside a tile they are masked as in
 * attention.cuh; query rows past the run are computed and not written.
 *
 * e4m3 q, k and v (BF 2): both products are e4m3 wgmma (k = 32, 32 bytes
 * a k-step as for 16-bit elements).  A box row of 64 e4m3 elements is 64
 * bytes: the maps' elements are bytes, their swizzle 64 bytes, and the
 * descriptors name 512 bytes between groups of 8 rows.  8-bit wgmma reads
 * B K-major only, and V lies keys x DV: after a stage's copies land, V
 * is transposed into Vt, DV rows of BN keys in boxes of 64 (the stage's
 * third tile), written through the generic proxy and fenced for wgmma's
 * (attn90_transpose, whose key order matches P's registers), by every
 * thread between its S = Q K^T and P V here (a named barrier before P V),
 * by the producer warpgroup in attn90_ws (a third barrier a stage that
 * the consumers wait on before P V).  P is rounded to e4m3 once (PV 1),
 * and key tiles are multiples of 64.
 *
 * Split > 1 writes partial states and merges them as attention.cuh's MT = 1
 * kernels do (attn_split_last).
 *
 * ATTN_SUM 1 (attention.cuh's weighted-sum contract, sigmoid attention):
 * P is the weight of each score (attn_weight, or attn_sigmoid of it), the
 * scalar fields' sums grow beside it in the m and l slots, and there is no
 * row maximum and no rescale of o (but by the power of two that keeps f16
 * parts of P in range: attn_pscale). */

struct alignas(64) AttnMaps {
	AscTmap q, k, v;
};
/* The launch's parameter block as the emulator's entry takes it: the maps
 * after Args at the next 64-byte boundary (compiler/cuda/cuda.h: CudaArgsTma). */
struct ArgsTma {
	Args a;
	AttnMaps t;
};

/* Operand kinds (BF): 0 f16, 1 bf16 (k = 16 a wgmma), 2 e4m3 (k = 32, one
 * byte an element). */
ASC_DEV constexpr int attn90_es(int bf) { return bf == 2 ? 1 : 2; }
ASC_DEV constexpr int attn90_ks(int bf) { return bf == 2 ? 32 : 16; }

/* e4m3 (BF 2): a box row of 64 elements is 64 bytes, so the boxes take the
 * 64-byte swizzle (8 rows a 512-byte atom), and each stage has a third
 * tile after K and V: Vt, V transposed (K-major for P V, which wgmma takes
 * for 8-bit B alone), DV rows of 64 keys a box; and a third barrier a
 * stage, Vt written. */
template <int D, int DV, int WG, int BN, int NS, int BF = 0>
struct Attn90Smem {
	static const int ES = attn90_es(BF), F8 = BF == 2;
	static const int BM = 64 * WG;
	static const int Q = 0;                                      /* bytes from the aligned base */
	static const int KST = BM * D * ES;                          /* the first stage */
	static const int VT = BN * (D + DV) * ES;                    /* Vt in a stage, after K and V */
	static const int STAGE = VT + (F8 ? BN * DV : 0);
	static const int BAR = KST + NS * STAGE;                     /* NS full barriers, NS empty ones, Q's, then NS Vt ones */
	static const int BYTES = BAR + 8 * ((2 + F8) * NS + 1) + 1024; /* and the alignment's slack */
};

/* P's registers, which a wgmma reads until the wait that retires it:
 * the compiler keeps them, and their writes, on their side of this point
 * (asc_wgmma_hold does the same for accumulators). */
template <int N>
ASC_DEV void attn90_hold(unsigned (&a)[N][4])
{
#ifndef ASSOC_EMU
#pragma unroll
	for (int i = 0; i < N; i++)
		asm volatile("" : "+r"(a[i][0]), "+r"(a[i][1]), "+r"(a[i][2]), "+r"(a[i][3])::"memory");
#else
	(void)a;
#endif
}

/* Thread 0: the K and V tiles of the keys from kb into stage st. */
template <int D, int DV, int BN, int BF, class S>
ASC_DEV void attn90_load_kv(S &sm, int base, int st, const AttnMaps &T, int kb, int kh, int bar)
{
	const int KB = BN * 64 * attn90_es(BF); /* bytes of a box */
	asc_mbar_expect_tx(sm, bar, BN * (D + DV) * attn90_es(BF));
#pragma unroll
	for (int b = 0; b < D / 64; b++)
		asc_tma_load3(sm, (base + st + b * KB) / 4, &T.k, 64 * b, kb, kh, sm, bar);
#pragma unroll
	for (int b = 0; b < DV / 64; b++)
		asc_tma_load3(sm, (base + st + (D / 64 + b) * KB) / 4, &T.v, 64 * b, kb, kh, sm, bar);
}

/* Thread 0: the block's BM rows of Q (from row q of the layout) into its
 * boxes at L::Q, one TMA copy of 64 columns each, completing bar. */
template <int D, int BM, int QOFF, int BF, class S>
ASC_DEV void attn90_load_q(S &sm, int base, const AttnMaps &T, long long q, int bar)
{
	const int ES = attn90_es(BF);
	asc_mbar_expect_tx(sm, bar, BM * D * ES);
#pragma unroll
	for (int b = 0; b < D / 64; b++)
		asc_tma_load2(sm, (base + QOFF + b * BM * 64 * ES) / 4, &T.q, 64 * b, (int)q, sm, bar);
}

/* S = Q K^T of one key tile, issued as one group (qa: the warpgroup's
 * rows of Q, ka: the tile's K).  A k-step is 32 bytes of a box row
 * whatever the type (16 elements of 2 bytes, 32 of 1): 4 steps a box of
 * 128-byte rows, 2 of 64-byte ones. */
template <int D, int BN, int BF, int BM>
ASC_DEV void attn90_qk(float (&s)[BN / 2], unsigned qa, unsigned ka)
{
	const int ES = attn90_es(BF), SB = 64 / attn90_ks(BF), ROW = 64 * ES;
	asc_wgmma_hold(s);
	asc_wgmma_fence();
#pragma unroll
	for (int kk = 0; kk < D / attn90_ks(BF); kk++) {
		unsigned long long da = asc_wgmma_desc(qa + kk / SB * BM * ROW + kk % SB * 32, 16, 8 * ROW, ROW);
		unsigned long long db = asc_wgmma_desc(ka + kk / SB * BN * ROW + kk % SB * 32, 16, 8 * ROW, ROW);
		asc_wgmma_ss<BN, BF, 0, 0>(s, da, db, kk > 0);
	}
	asc_wgmma_commit();
}

/* O += P V of one key tile, issued as one group (va: the tile's V, MN-major;
 * e4m3: its Vt, K-major in boxes of 64 keys, DV rows of 64 bytes each). */
template <int DV, int BN, int BF, int PV>
ASC_DEV void attn90_pv(float (&o)[DV / 2], unsigned (&pf)[PV][BN / attn90_ks(BF)][4], unsigned va)
{
	asc_wgmma_hold(o);
#pragma unroll
	for (int r = 0; r < PV; r++)
		attn90_hold(pf[r]);
	asc_wgmma_fence();
#pragma unroll
	for (int kk = 0; kk < BN / attn90_ks(BF); kk++) {
		unsigned long long db = BF == 2 ? asc_wgmma_desc(va + kk / 2 * DV * 64 + kk % 2 * 32, 16, 512, 64)
						: asc_wgmma_desc(va + kk * 16 * 128, BN * 128, 1024, 128);
#pragma unroll
		for (int r = 0; r < PV; r++)
			asc_wgmma_rs<DV, BF, BF != 2>(o, pf[r][kk], db, 1);
	}
	asc_wgmma_commit();
}

/* After the wait that retires a P V: o and P are the thread's again. */
template <int DV, int BN, int BF, int PV>
ASC_DEV void attn90_pv_done(float (&o)[DV / 2], unsigned (&pf)[PV][BN / attn90_ks(BF)][4])
{
	asc_wgmma_hold(o);
#pragma unroll
	for (int r = 0; r < PV; r++)
		attn90_hold(pf[r]);
}

/* The byte of a box with rows of 64 bytes (at a 512-byte boundary) where
 * the 64-byte swizzle puts byte b of row r: its 16-byte chunk XOR bits 7
 * and 8 of the unswizzled address. */
ASC_DEV int attn90_sw64(int r, int b)
{
	int a = 64 * r + b;
	return a ^ ((a >> 7) & 3) << 4;
}

/* e4m3: V of a stage (v: keys x DV in boxes of 64 columns, as TMA lands
 * it) into Vt (vt: DV rows of BN keys in boxes of 64 keys, K-major as
 * attn90_pv's descriptors read it), by the nt threads from x: 4 columns
 * and 4 keys a step, read as 4 words and written as 4.  A warp's 32 steps
 * take 4 groups of 4 keys (ww % 4) x 4 columns (c / 4 % 4) x 2 (ww / 4 %
 * 2): a 64-byte row lies in 16 banks, the same 16 for every row of its
 * parity, and each of the 8 accesses of a step reads or writes rows of one
 * parity, so 2 words a bank is the least; these steps reach it for both
 * the loads and the stores (32 columns along the lanes wrote their 32
 * words into 2 banks: 16 a bank at DV 128, 8 at DV 64).  The keys of each
 * 32 are permuted as P's registers hold them: S's accumulator gives
 * thread t of a quad keys 2t, 2t + 1, 8 + 2t, 9 + 2t (and 16 on), packed
 * into the bytes of A register 0 (2), which the k32 e4m3 fragment reads
 * as keys 4t .. 4t + 3 (16 on): Vt's byte 4t + i of a 32 is key 2t +
 * {0, 1, 8, 9}[i], so that P V pairs each P with its own key's row. */
template <int DV, int BN, class S>
ASC_DEV void attn90_transpose(S &Sm, int v, int vt, int x, int nt)
{
#pragma unroll 1
	for (int u = x; u < DV / 4 * (BN / 4); u += nt) {
		int wu = u / 32, c = 16 * (wu % (DV / 16)) + 4 * (u / 4 % 4);
		int w = 8 * (wu / (DV / 16)) + 4 * (u / 16 % 2) + u % 4, kx = w / 16, ww = w % 16;
#ifdef ATTN90_PLAIN_VT
		int k0 = 64 * kx + 4 * ww; /* keys in order: P V pairs P with the wrong rows */
#else
		int k0 = 64 * kx + 32 * (ww / 8) + 16 * (ww % 8 / 4) + 2 * (ww % 4);
#endif
		unsigned r[4];
#pragma unroll
		for (int i = 0; i < 4; i++) {
#ifdef ATTN90_PLAIN_VT
			int key = k0 + i;
#else
			int key = k0 + (i & 1) + 8 * (i >> 1);
#endif
			r[i] = Sm[(v + c / 64 * BN * 64 + attn90_sw64(key, c % 64)) / 4];
		}
#pragma unroll
		for (int i = 0; i < 4; i++)
			Sm[(vt + kx * DV * 64 + attn90_sw64(c + i, 4 * ww)) / 4] =
				(r[0] >> 8 * i & 0xffu) | (r[1] >> 8 * i & 0xffu) << 8 | (r[2] >> 8 * i & 0xffu) << 16 |
				(r[3] >> 8 * i & 0xffu) << 24;
	}
	asc_fence_proxy_async(); /* the writes, for the wgmmas that read them */
}

/* The scores of the tile from kb (S, retired) and the rows' m and l
 * updated as attention.cuh's online softmax does them; alpha: the factor
 * o takes, mb and scale: p = exp2(s scale - mb).  Weighted sums: the
 * weights in s, no maximum, alpha 1; in f16 parts (ATTN_PSCALE), the
 * weights times 2^pe and alpha o's rescale (attention.cuh's attn_pscale). */
template <int BN, int BF, int PV>
ASC_DEV void attn90_max(const Args &A, const ARow (&R)[2], const int (&ir)[2], const float (&a2)[2], bool lin,
			float (&s)[BN / 2], float (&m)[2], float (&l)[2], int (&pe)[2], float (&alpha)[2], float (&mb)[2],
			float (&scale)[2], int kb, int jn, int cls, int t)
{
	bool full = jn - kb == BN && cls == 2;
	/* S as attention.cuh's score and weight loops take it: the wgmma
	 * accumulator's element 4 n + c is mma.sync's [n][c] (row g + 8 (c
	 * / 2), key 8 n + 2 t + (c & 1)) */
	float(&s4)[BN / 8][4] = *reinterpret_cast<float(*)[BN / 8][4]>(&s);
#if ATTN_SUM
	(void)a2, (void)lin, (void)mb, (void)scale;
	if (full)
		attn_weights<0, BN>(A, R, ir, s4, m, l, kb, jn, cls, t);
	else
		attn_weights<1, BN>(A, R, ir, s4, m, l, kb, jn, cls, t);
	alpha[0] = alpha[1] = 1.0f;
	if (ATTN_PSCALE(BF, PV))
		attn_pscale<BN>(s4, pe, alpha);
#else
	(void)pe;
	float mx[2];
	scale[0] = full && lin ? a2[0] : 1.0f, scale[1] = full && lin ? a2[1] : 1.0f;
	if (full && lin)
		attn_scores<0, 1, BN>(A, R, ir, a2, s4, mx, kb, jn, cls, t);
	else if (full)
		attn_scores<0, 0, BN>(A, R, ir, a2, s4, mx, kb, jn, cls, t);
	else
		attn_scores<1, 0, BN>(A, R, ir, a2, s4, mx, kb, jn, cls, t);
#pragma unroll
	for (int hf = 0; hf < 2; hf++) {
		float mn = fmaxf(m[hf], mx[hf]);
		mb[hf] = mn == -ASC_INF ? 0.0f : mn; /* an empty row so far: p = 0, no NaN */
		alpha[hf] = asc_exp2(m[hf] - mb[hf]);
		m[hf] = mn;
		l[hf] *= alpha[hf];
	}
#endif
}

/* Two floats rounded to nearest into e4m3 bits (lo in the low byte),
 * saturating to +-448. */
ASC_DEV unsigned attn90_e4m3x2(float lo, float hi)
{
#ifdef ASSOC_EMU
	return emu_float_to_e4m3(lo) | (unsigned)emu_float_to_e4m3(hi) << 8;
#else
	unsigned short r;
	asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
	return r;
#endif
}

/* P of p (a row's pair of keys, two rows) into the A fragments: k-steps
 * of 16 keys, register 2 (nt % 2) + hf of step nt / 2 holds row g + 8 hf,
 * keys 8 nt + 2 t, + 1; PV > 1: the rounding's rest in the next parts.
 * e4m3, k-steps of 32 keys: those two keys in half nt % 2 of register 2
 * (nt % 4 / 2) + hf of step nt / 4 (the order attn90_transpose gives Vt's
 * keys). */
template <int BN, int BF, int PV>
ASC_DEV void attn90_put(float (&p)[4], unsigned (&pf)[PV][BN / attn90_ks(BF)][4], int nt)
{
	if (BF == 2) {
#pragma unroll
		for (int x = 0; x < 2; x++) {
			unsigned h = attn90_e4m3x2(p[2 * x], p[2 * x + 1]);
			unsigned &w = pf[0][nt / 4][2 * (nt % 4 / 2) + x];
			w = nt % 2 ? w | h << 16 : h;
		}
	} else {
#pragma unroll
		for (int r = 0; r < PV; r++)
#pragma unroll
			for (int x = 0; x < 2; x++) {
				unsigned wd = asc_pack2<BF>(p[2 * x], p[2 * x + 1]);
				pf[r][nt / 2][2 * (nt & 1) + x] = wd;
				p[2 * x] -= asc_half_lo<BF>(wd);
				p[2 * x + 1] -= asc_half_hi<BF>(wd);
			}
	}
}

/* The whole softmax step of a tile: S (retired) to P in pf, m and l
 * updated, o rescaled (o and pf must not be in flight). */
template <int DV, int BN, int BF, int PV>
ASC_DEV void attn90_softmax(const Args &A, const ARow (&R)[2], const int (&ir)[2], const float (&a2)[2], bool lin,
			    float (&s)[BN / 2], float (&m)[2], float (&l)[2], int (&pe)[2], float (&o)[DV / 2],
			    unsigned (&pf)[PV][BN / attn90_ks(BF)][4], int kb, int jn, int cls, int t)
{
	float alpha[2], mb[2], scale[2];
	attn90_max<BN, BF, PV>(A, R, ir, a2, lin, s, m, l, pe, alpha, mb, scale, kb, jn, cls, t);
	if (!ATTN_SUM || ATTN_PSCALE(BF, PV))
#pragma unroll
		for (int x = 0; x < DV / 2; x++)
			o[x] *= alpha[x % 4 / 2];
#pragma unroll
	for (int nt = 0; nt < BN / 8; nt++) {
		float p[4];
#pragma unroll
		for (int c = 0; c < 4; c++) {
#if ATTN_SUM
			p[c] = s[4 * nt + c];
#else
			p[c] = asc_exp2(fmaf(s[4 * nt + c], scale[c / 2], -mb[c / 2]));
			l[c / 2] += p[c];
#endif
		}
		attn90_put<BN, BF, PV>(p, pf, nt);
	}
}

/* ws 2 splits the step in two around the wait for the last P V: the
 * probabilities in s, m and l (attn90_probs), then o rescaled and P in
 * pf (attn90_pack). */
template <int BN, int BF, int PV>
ASC_DEV void attn90_probs(const Args &A, const ARow (&R)[2], const int (&ir)[2], const float (&a2)[2], bool lin,
			  float (&s)[BN / 2], float (&m)[2], float (&l)[2], int (&pe)[2], float (&alpha)[2], int kb, int jn,
			  int cls, int t)
{
	float mb[2], scale[2];
	attn90_max<BN, BF, PV>(A, R, ir, a2, lin, s, m, l, pe, alpha, mb, scale, kb, jn, cls, t);
#if !ATTN_SUM
#pragma unroll
	for (int x = 0; x < BN / 2; x++) {
		s[x] = asc_exp2(fmaf(s[x], scale[x % 4 / 2], -mb[x % 4 / 2]));
		l[x % 4 / 2] += s[x];
	}
#endif
}

template <int DV, int BN, int BF, int PV>
ASC_DEV void attn90_pack(const float (&alpha)[2], const float (&s)[BN / 2], float (&o)[DV / 2],
			 unsigned (&pf)[PV][BN / attn90_ks(BF)][4])
{
	if (!ATTN_SUM || ATTN_PSCALE(BF, PV))
#pragma unroll
		for (int x = 0; x < DV / 2; x++)
			o[x] *= alpha[x % 4 / 2];
#pragma unroll
	for (int nt = 0; nt < BN / 8; nt++) {
		float p[4] = {s[4 * nt], s[4 * nt + 1], s[4 * nt + 2], s[4 * nt + 3]};
		attn90_put<BN, BF, PV>(p, pf, nt);
	}
}

/* After the key loop: o back from 2^pe o (ATTN_PSCALE). */
template <int BF, int PV, int DV>
ASC_DEV void attn90_pscale_out(float (&o)[DV / 2], const int (&pe)[2])
{
#if ATTN_SUM
	if (ATTN_PSCALE(BF, PV))
		attn_pscale_out<DV>(*reinterpret_cast<float(*)[DV / 8][4]>(&o), pe);
#else
	(void)o, (void)pe;
#endif
}

/* The thread's two rows (r0 and r0 + 8 of the run) at the identity;
 * whether the warp's scores are all linear with a slope of 0 or more. */
template <int DV>
ASC_DEV bool attn90_rows(const Args &A, int r0, int M, long long run, ARow (&R)[2], int (&ir)[2], float (&a2)[2],
			 float (&m)[2], float (&l)[2], int (&pe)[2], float (&o)[DV / 2])
{
	bool lin = ATTN_LIN;
#pragma unroll
	for (int hf = 0; hf < 2; hf++) {
		int r = r0 + 8 * hf;
		ir[hf] = r % A.rows;
		R[hf] = attn_row(A, run + (r < M ? r : 0));
		a2[hf] = attn_slope2(A, R[hf]);
		lin = lin && a2[hf] >= 0;
		m[hf] = ATTN_SUM ? 0.0f : -ASC_INF; /* the identity */
		l[hf] = 0;
		pe[hf] = 126; /* ATTN_PSCALE: o's scale, 2^pe */
	}
#pragma unroll
	for (int x = 0; x < DV / 2; x++)
		o[x] = 0;
	return __all_sync(0xffffffffu, lin);
}

/* Where a block of either schedule stands before its first tile: the
 * offset in shared memory where its tiles start, its mbarriers (by word:
 * stage s full, its copies landed, at fb + 2 s; empty, every consumer
 * done with it, at eb + 2 s; Q at qbar), its query tile qt and kv head
 * kh, its split's keys [lo, hi), and the first live key tile kb with its
 * mask class.  False for a block past the last tile. */
struct Attn90Start {
	int base, fb, eb, qbar, vb, M, sp, qt, kh, lo, hi, f, i0, i1, kb, cls;
	long long run; /* the run's first row in heads x rows */
};

template <int D, int DV, int BM, int BN, int NS, int BAR, class S>
ASC_DEV bool attn90_start(const Args &A, S &Sm, Attn90Start &P)
{
	/* the swizzle's atoms are 1024 bytes: the tiles start at such a boundary */
	P.base = (int)((1024u - (asc_smem_addr(Sm, 0) & 1023u)) & 1023u);
	P.fb = (P.base + BAR) / 4, P.eb = P.fb + 2 * NS, P.qbar = P.fb + 4 * NS, P.vb = P.qbar + 2;
	P.M = A.heads / A.kv_heads * A.rows;
	int tiles = (P.M + BM - 1) / BM;
	P.sp = blockIdx.x % A.split;
	if (!attn_tile_of<D, DV>(A, blockIdx.x, tiles, P.qt, P.kh))
		return false;
	P.run = (long long)P.kh * P.M;
	unsigned at = (unsigned)P.sp * (unsigned)A.chunk; /* past 2^31 - 1 near the end of a long row, under 2^32 */
	P.lo = at < (unsigned)A.len ? (int)at : A.len;
	P.hi = A.len - P.lo > A.chunk ? P.lo + A.chunk : A.len;
	int f = P.qt * BM, e = (P.qt + 1) * BM < P.M ? (P.qt + 1) * BM - 1 : P.M - 1;
	P.f = f, P.cls = 0;
	P.i0 = f / A.rows == e / A.rows ? f % A.rows : 0;
	P.i1 = f / A.rows == e / A.rows ? e % A.rows : A.rows - 1;
	P.kb = attn_next(A, P.i0, P.i1, P.lo, P.hi, BN, &P.cls);
	return true;
}

/* Thread 0: each stage's barriers, full on the producer's one arrival
 * (and the copies' bytes), empty on every consumer's (NC threads); NV > 0
 * (e4m3, warp-specialized): Vt written, on the NV transposing threads'. */
template <int NS, class S>
ASC_DEV void attn90_init_bars(S &Sm, const Attn90Start &P, int NC, int NV = 0)
{
	for (int s = 0; s < NS; s++) {
		asc_mbar_init(Sm, P.fb + 2 * s, 1);
		asc_mbar_init(Sm, P.eb + 2 * s, NC);
		if (NV)
			asc_mbar_init(Sm, P.vb + 2 * s, (unsigned)NV);
	}
	asc_mbar_init(Sm, P.qbar, 1);
	asc_mbar_fence_init();
}

template <int D, int DV, int WG, int BN, int BF, int PV, int NS>
ASC_DEV void attn90_fwd(const Args &A, const AttnMaps &T)
{
	typedef Attn90Smem<D, DV, WG, BN, NS, BF> L;
	const int NT = 128 * WG, BM = L::BM, ES = L::ES;
	static_assert(D % 64 == 0 && DV % 64 == 0 && D <= 256 && DV <= 256, "head dims: multiples of 64 up to 256");
	static_assert(BN % 16 == 0 && BN >= 16 && BN <= 256 && NS >= 1 && NS <= 4, "keys a tile: 16 to 256; 1 to 4 stages");
	static_assert(L::BYTES <= 227 * 1024, "Q and the stages over 227 KB of shared memory");
	static_assert(BF != 2 || (BN % 64 == 0 && PV == 1), "e4m3: keys a tile a multiple of 64 (Vt's boxes), P in one part");
	ASC_DYN_SHARED(unsigned, Sm);
	Attn90Start P;
	if (!attn90_start<D, DV, BM, BN, NS, L::BAR>(A, Sm, P))
		return;
	const int base = P.base, fb = P.fb, eb = P.eb, qbar = P.qbar, M = P.M, sp = P.sp, qt = P.qt, kh = P.kh;
	const int hi = P.hi, f = P.f, i0 = P.i0, i1 = P.i1;
	const long long run = P.run;
	int kb = P.kb, cls = P.cls, cl = 0;
	int wg = threadIdx.x / 128, wq = threadIdx.x / 32 % 4, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
	int r0 = qt * BM + wg * 64 + wq * 16 + g; /* the thread's first row in the run; the second is 8 on */
	int kl = kb; /* thread 0: the tile loaded next */
	if (threadIdx.x == 0) {
		attn90_init_bars<NS>(Sm, P, NT);
		asc_tma_prefetch(&T.k);
		asc_tma_prefetch(&T.v);
		if (kb < hi) /* a block with no live key tile loads nothing: no copy outlives it */
			attn90_load_q<D, BM, L::Q, BF>(Sm, base, T, run + f, qbar);
		for (int s = 0; s < NS && kl < hi; s++) {
			attn90_load_kv<D, DV, BN, BF>(Sm, base, L::KST + s * L::STAGE, T, kl, kh, fb + 2 * s);
			kl = attn_next(A, i0, i1, kl + BN, hi, BN, &cl);
		}
	}
	__syncthreads(); /* the barriers are initialized before anyone waits on them */

	ARow R[2];
	int ir[2];
	float a2[2], m[2], l[2], o[DV / 2];
	int pe[2];
	bool lin = attn90_rows<DV>(A, r0, M, run, R, ir, a2, m, l, pe, o);
	const unsigned sb = asc_smem_addr(Sm, 0) + (unsigned)base;
	const unsigned qa = sb + L::Q + wg * 64 * 64 * ES; /* the warpgroup's 64 rows in each Q box */
	if (kb < hi)
		asc_mbar_wait(Sm, qbar, 0);
	for (int n = 0; kb < hi; n++) {
		int st = n % NS, jn = kb + BN < hi ? kb + BN : hi;
		unsigned ka = sb + L::KST + st * L::STAGE, va = ka + D / 64 * BN * 64 * ES;
		asc_mbar_wait(Sm, fb + 2 * st, (unsigned)(n / NS) & 1u);
		float s[BN / 2];
		attn90_qk<D, BN, BF, BM>(s, qa, ka);
		if (BF == 2) {
			/* Vt, every thread's share under S = Q K^T, complete for P V
			 * at the barrier after it; the stage's Vt was last read by
			 * the P V of tile n - NS, which every thread has retired
			 * before it reaches the barrier of tile n - NS + 1 (one
			 * stage: a barrier before the writes too) */
			const int so = base + L::KST + st * L::STAGE;
			if (NS == 1)
				asc_bar_sync(1, NT);
			attn90_transpose<DV, BN>(Sm, so + D / 64 * BN * 64, so + L::VT, (int)threadIdx.x, NT);
			asc_bar_sync(1, NT);
			va = ka + L::VT;
		}
		asc_wgmma_wait<0>();
		asc_wgmma_hold(s);
		unsigned pf[PV][BN / attn90_ks(BF)][4];
		attn90_softmax<DV, BN, BF, PV>(A, R, ir, a2, lin, s, m, l, pe, o, pf, kb, jn, cls, t);
		attn90_pv<DV, BN, BF, PV>(o, pf, va);
		asc_wgmma_wait<0>();
		attn90_pv_done<DV, BN, BF, PV>(o, pf);
		/* The stage is free once every thread is done with it: an mbarrier,
		 * not a block barrier, so that a warpgroup runs on into the next
		 * tile (its S = Q K^T beside the other's softmax) while thread 0
		 * waits to refill the stage. */
		asc_mbar_arrive(Sm, eb + 2 * st);
		if (threadIdx.x == 0 && kl < hi) {
			asc_mbar_wait(Sm, eb + 2 * st, (unsigned)(n / NS) & 1u);
			attn90_load_kv<D, DV, BN, BF>(Sm, base, L::KST + st * L::STAGE, T, kl, kh, fb + 2 * st);
			kl = attn_next(A, i0, i1, kl + BN, hi, BN, &cl);
		}
		__syncwarp(); /* warp 0 whole again before the next tile's .aligned wgmma */
		kb = attn_next(A, i0, i1, kb + BN, hi, BN, &cls);
	}
	attn90_pscale_out<BF, PV, DV>(o, pe);
	const float(&o4)[DV / 8][4] = *reinterpret_cast<const float(*)[DV / 8][4]>(&o); /* as mma.sync's fragments */
#pragma unroll
	for (int hf = 0; hf < 2; hf++)
		attn_row_out<DV>(A, R[hf], m[hf], l[hf], o4, hf, r0 + 8 * hf, M, run, ir[hf], sp, t);
	if (A.split > 1)
		attn_split_last<D, DV, NT, BM>(A);
}

/* ---- Warp specialization (ws > 0) ----
 * Three warpgroups of 128 threads: warpgroup 0 the producer, 1 and 2 the
 * consumers, each of 64 query rows (BM = 128) as attn90_fwd's two
 * warpgroups are; the same shared memory (Attn90Smem with WG 2).  The
 * producer gives its registers back (setmaxnreg.dec to PR, 24) and its
 * thread 0 alone issues the copies: Q, then every live key tile into the
 * ring, waiting on a stage's empty barrier (all 256 consumer threads
 * arrive there after their P V of its tile) before it refills the stage;
 * it then leaves.  The consumers take the registers (setmaxnreg.inc to
 * 240: 128 x 24 + 256 x 240 = 64512, the 384 x 168 the launch gives the
 * block) and run the fold of attn90_fwd without a copy to issue.  PR 40
 * (the consumers 232) where the mask's interval hook multiplies: the
 * producer's walk to the next live tile evaluates it in doubles, and at
 * 24 registers ptxas spilled a row bound the walk takes (a product mask,
 * (i - j)^2 < 900 || 2 j <= i).  Not everywhere: at 232 the consumers of
 * weighted sums spilled (sigmoid attention's 56 bytes at head dim 128,
 * ws 2).
 *
 * Ping-pong: the consumers take turns at the tensor cores, a turn being
 * the issue of P V of one tile and S = Q K^T of the next; consumer c waits
 * for its turn at named barrier 1 + c (bar.sync, 256 threads) and hands it
 * over with bar.arrive at the other's, so that one's softmax runs while
 * the other's products do.  With N live key tiles each has N + 1 turns
 * (the first: S of tile 0 alone; the last: P V of tile N - 1 alone);
 * consumer 0 takes the first without waiting, consumer 1 hands over after
 * each but its last: N + 1 arrivals at barrier 2 and N at barrier 1 for as
 * many waits, so no phase is left open.  A consumer waits for a tile's
 * copy in its turn, which the other's release of the stage two tiles
 * back (in its turn before) frees: two stages at least.
 *
 * OV (ws 2): each tile's softmax under the tensor cores within the
 * warpgroup too: one turn issues S = Q K^T of tile n and P V of tile
 * n - 1 (S of tile n and P of tile n - 1 side by side in registers),
 * wgmma.wait_group 1 retires S alone, and the softmax of tile n runs
 * while P V of tile n - 1 does; after wait_group 0, o is rescaled and P
 * of tile n written over the last.  Every turn's products retire within
 * its iteration: with S of the next tile in flight across the key loop's
 * back edge (the S = Q K^T before the softmax of the tile before it, in
 * a second S accumulator), ptxas serialized the wgmmas (C7518).  Here a
 * consumer waits for a tile's copy before its turn: two stages again. */

/* Where P V of tile n reads V (its stage's, MN-major); e4m3: its Vt, once
 * the producer has written it (vb: the Vt barriers). */
template <int D, int BN, int BF, int NS, class L, class S>
ASC_DEV unsigned attn90_ws_v(S &Sm, unsigned sb, int vb, int n)
{
	int st = n % NS;
	if (BF != 2)
		return sb + L::KST + st * L::STAGE + D / 64 * BN * 128;
	asc_mbar_wait(Sm, vb + 2 * st, (unsigned)(n / NS) & 1u);
	return sb + L::KST + st * L::STAGE + L::VT;
}

/* e4m3, the producer's 128 threads: the copies of every live key tile
 * (thread 0), and the transpose of each tile's V into its Vt once the
 * copies land, a tile behind the copies so that the next is in flight
 * meanwhile.  Before a stage is refilled every producer thread waits for
 * the consumers' release of it, which orders both the copies and the
 * next transpose (over Vt, which their P V read) after their reads. */
template <int D, int DV, int BN, int NS, class L, class S>
ASC_DEV void attn90_ws_produce8(const Args &A, S &Sm, const AttnMaps &T, const Attn90Start &P, int x)
{
	int cl = P.cls, kl = P.kb;
	for (int n = 0;; n++) {
		if (kl < P.hi) {
			int st = n % NS;
			if (n >= NS) /* the consumers are done with the tile NS back */
				asc_mbar_wait(Sm, P.eb + 2 * st, (unsigned)(n / NS - 1) & 1u);
			if (x == 0)
				attn90_load_kv<D, DV, BN, 2>(Sm, P.base, L::KST + st * L::STAGE, T, kl, P.kh, P.fb + 2 * st);
		}
		if (n > 0) {
			int st = (n - 1) % NS, so = P.base + L::KST + st * L::STAGE;
			asc_mbar_wait(Sm, P.fb + 2 * st, (unsigned)((n - 1) / NS) & 1u);
			attn90_transpose<DV, BN>(Sm, so + D / 64 * BN * 64, so + L::VT, x, 128);
			asc_mbar_arrive(Sm, P.vb + 2 * st);
		}
		if (kl >= P.hi)
			break;
		kl = attn_next(A, P.i0, P.i1, kl + BN, P.hi, BN, &cl);
	}
}

/* ws 2, key tile n from kb (n > 0): its S and P V of tile n - 1 issued in
 * one turn, then its softmax under that P V. */
template <int D, int DV, int BN, int BF, int PV, int NS, class S>
ASC_DEV void attn90_ov_tile(const Args &A, S &Sm, const ARow (&R)[2], const int (&ir)[2], const float (&a2)[2], bool lin,
			    float (&s)[BN / 2], float (&m)[2], float (&l)[2], int (&pe)[2], float (&o)[DV / 2],
			    unsigned (&pf)[PV][BN / attn90_ks(BF)][4], unsigned qa, unsigned sb, int fb, int n, int kb, int hi, int cls,
			    int t, int mine, int theirs)
{
	typedef Attn90Smem<D, DV, 2, BN, NS, BF> L;
	const int eb = fb + 2 * NS, vb = fb + 4 * NS + 2;
	int st = n % NS, sl = (n - 1) % NS, jn = kb + BN < hi ? kb + BN : hi;
	asc_mbar_wait(Sm, fb + 2 * st, (unsigned)(n / NS) & 1u);
	unsigned va = attn90_ws_v<D, BN, BF, NS, L>(Sm, sb, vb, n - 1);
	asc_bar_sync(mine, 256);
	attn90_qk<D, BN, BF, L::BM>(s, qa, sb + L::KST + st * L::STAGE);
	attn90_pv<DV, BN, BF, PV>(o, pf, va);
	asc_bar_arrive(theirs, 256);
	asc_wgmma_wait<1>(); /* S: P V of tile n - 1 stays in flight */
	asc_wgmma_hold(s);
	float alpha[2];
	attn90_probs<BN, BF, PV>(A, R, ir, a2, lin, s, m, l, pe, alpha, kb, jn, cls, t);
	asc_wgmma_wait<0>();
	attn90_pv_done<DV, BN, BF, PV>(o, pf);
	asc_mbar_arrive(Sm, eb + 2 * sl);
	attn90_pack<DV, BN, BF, PV>(alpha, s, o, pf);
}

template <int D, int DV, int BN, int BF, int PV, int NS, int OV, int PR>
ASC_DEV void attn90_ws(const Args &A, const AttnMaps &T)
{
	typedef Attn90Smem<D, DV, 2, BN, NS, BF> L;
	const int BM = L::BM, NC = 256, ES = L::ES; /* NC: the consumers' threads */
	static_assert(PR == 24 || PR == 40, "the producer's registers: 24, or 40 (the consumers then 232)");
	static_assert(D % 64 == 0 && DV % 64 == 0 && D <= 256 && DV <= 256, "head dims: multiples of 64 up to 256");
	static_assert(BN % 16 == 0 && BN >= 16 && BN <= 256 && NS >= 2 && NS <= 4,
		      "keys a tile: 16 to 256; 2 to 4 stages");
	static_assert(L::BYTES <= 227 * 1024, "Q and the stages over 227 KB of shared memory");
	static_assert(BF != 2 || (BN % 64 == 0 && PV == 1), "e4m3: keys a tile a multiple of 64 (Vt's boxes), P in one part");
	ASC_DYN_SHARED(unsigned, Sm);
	Attn90Start P;
	if (!attn90_start<D, DV, BM, BN, NS, L::BAR>(A, Sm, P))
		return;
	const int base = P.base, fb = P.fb, eb = P.eb, qbar = P.qbar, M = P.M, sp = P.sp, qt = P.qt, kh = P.kh;
	const int hi = P.hi, f = P.f, i0 = P.i0, i1 = P.i1;
	const long long run = P.run;
	int kb = P.kb, cls = P.cls;
	if (threadIdx.x == 0)
		attn90_init_bars<NS>(Sm, P, NC, BF == 2 ? 128 : 0);
	__syncthreads(); /* the barriers are initialized before anyone waits on them; the last block-wide barrier */

	if (threadIdx.x < 128) { /* the producer */
		asc_setmaxnreg_dec<PR>();
		if (BF == 2 && kb < hi) {
			if (threadIdx.x == 0) {
				asc_tma_prefetch(&T.k);
				asc_tma_prefetch(&T.v);
				attn90_load_q<D, BM, L::Q, BF>(Sm, base, T, run + f, qbar);
			}
			attn90_ws_produce8<D, DV, BN, NS, L>(A, Sm, T, P, (int)threadIdx.x);
		} else if (threadIdx.x == 0 && kb < hi) {
			asc_tma_prefetch(&T.k);
			asc_tma_prefetch(&T.v);
			attn90_load_q<D, BM, L::Q, BF>(Sm, base, T, run + f, qbar);
			int cl = cls;
			for (int n = 0, kl = kb; kl < hi; n++) {
				int st = n % NS;
				if (n >= NS) /* the consumers are done with the tile NS back */
					asc_mbar_wait(Sm, eb + 2 * st, (unsigned)(n / NS - 1) & 1u);
				attn90_load_kv<D, DV, BN, BF>(Sm, base, L::KST + st * L::STAGE, T, kl, kh, fb + 2 * st);
				kl = attn_next(A, i0, i1, kl + BN, hi, BN, &cl);
			}
		}
		return;
	}
	asc_setmaxnreg_inc<PR == 24 ? 240 : 232>();
	const int x = threadIdx.x - 128, c = x / 128, mine = 1 + c, theirs = 2 - c;
	int wq = x / 32 % 4, lane = x % 32, g = lane / 4, t = lane % 4;
	int r0 = qt * BM + c * 64 + wq * 16 + g;
	ARow R[2];
	int ir[2];
	float a2[2], m[2], l[2], o[DV / 2];
	int pe[2];
	bool lin = attn90_rows<DV>(A, r0, M, run, R, ir, a2, m, l, pe, o);
	const unsigned sb = asc_smem_addr(Sm, 0) + (unsigned)base;
	const unsigned qa = sb + L::Q + c * 64 * 64 * ES;
	unsigned pf[PV][BN / attn90_ks(BF)][4];
	int n = 0; /* tiles computed */
	if (kb < hi)
		asc_mbar_wait(Sm, qbar, 0);
	if (OV == 0) {
		for (; kb < hi; n++) {
			int st = n % NS, jn = kb + BN < hi ? kb + BN : hi;
			unsigned ka = sb + L::KST + st * L::STAGE;
			asc_mbar_wait(Sm, fb + 2 * st, (unsigned)(n / NS) & 1u);
			if (n == 0 && c == 1)
				asc_bar_sync(mine, NC);
			float s[BN / 2];
			attn90_qk<D, BN, BF, BM>(s, qa, ka);
			asc_bar_arrive(theirs, NC); /* the end of this turn */
			asc_wgmma_wait<0>();
			asc_wgmma_hold(s);
			attn90_softmax<DV, BN, BF, PV>(A, R, ir, a2, lin, s, m, l, pe, o, pf, kb, jn, cls, t);
			unsigned va = attn90_ws_v<D, BN, BF, NS, L>(Sm, sb, P.vb, n);
			asc_bar_sync(mine, NC); /* the next turn: P V of this tile, S of the next */
			attn90_pv<DV, BN, BF, PV>(o, pf, va);
			asc_wgmma_wait<0>();
			attn90_pv_done<DV, BN, BF, PV>(o, pf);
			asc_mbar_arrive(Sm, eb + 2 * st);
			kb = attn_next(A, i0, i1, kb + BN, hi, BN, &cls);
		}
	} else {
		float s[BN / 2];
		if (kb < hi) { /* tile 0: its S alone in the first turn */
			int jn = kb + BN < hi ? kb + BN : hi;
			asc_mbar_wait(Sm, fb, 0u);
			if (c == 1)
				asc_bar_sync(mine, NC);
			attn90_qk<D, BN, BF, BM>(s, qa, sb + L::KST);
			asc_bar_arrive(theirs, NC);
			asc_wgmma_wait<0>();
			asc_wgmma_hold(s);
			attn90_softmax<DV, BN, BF, PV>(A, R, ir, a2, lin, s, m, l, pe, o, pf, kb, jn, cls, t);
			kb = attn_next(A, i0, i1, kb + BN, hi, BN, &cls);
			n = 1;
		}
		for (; kb < hi; n++) {
			attn90_ov_tile<D, DV, BN, BF, PV, NS>(A, Sm, R, ir, a2, lin, s, m, l, pe, o, pf, qa, sb, fb, n, kb, hi, cls, t,
							      mine, theirs);
			kb = attn_next(A, i0, i1, kb + BN, hi, BN, &cls);
		}
		if (n > 0) { /* P V of the last tile alone in the last turn */
			int sl = (n - 1) % NS;
			unsigned va = attn90_ws_v<D, BN, BF, NS, L>(Sm, sb, P.vb, n - 1);
			asc_bar_sync(mine, NC);
			attn90_pv<DV, BN, BF, PV>(o, pf, va);
			if (c == 0)
				asc_bar_arrive(theirs, NC);
			asc_wgmma_wait<0>();
			attn90_pv_done<DV, BN, BF, PV>(o, pf);
			asc_mbar_arrive(Sm, eb + 2 * sl);
		}
	}
	if (OV == 0 && n > 0 && c == 0)
		asc_bar_arrive(theirs, NC); /* the end of the last turn */
	attn90_pscale_out<BF, PV, DV>(o, pe);
	const float(&o4)[DV / 8][4] = *reinterpret_cast<const float(*)[DV / 8][4]>(&o);
#pragma unroll
	for (int hf = 0; hf < 2; hf++)
		attn_row_out<DV>(A, R[hf], m[hf], l[hf], o4, hf, r0 + 8 * hf, M, run, ir[hf], sp, t);
	if (A.split > 1)
		attn_split_tail<D, DV, BM>(A, x, NC, [] { asc_bar_sync(3, 256); }); /* the producer has left: named barrier 3 */
}
