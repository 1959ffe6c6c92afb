/* attention.cuh: FlashAttention-style forward for the (m, l, o) carrier.
 *
 * Contract (compiler/cuda/cuda_attn.c proves the user's carrier equal to
 * it before this template is used): state
 * (m: max, l: sum, o: vector), identity (-inf, 0, 0), lift (s, 1, v) with
 * s = score(dot(q, k)), merge m = max(a.m, b.m), l = a.l e^(a.m - m) +
 * b.l e^(b.m - m), o = a.o e^(a.m - m) + b.o e^(b.m - m).
 * ATTN_SUM 1: the weighted-sum contract instead: state (o: vector, and up
 * to two scalars in the m and l slots), identity 0, lift (w v, and the
 * scalars' own weights) with w = weight(dot(q, k)) elementwise, merge
 * plain sums.  No row maximum and no rescale: P = w in float32, rounded
 * as below (in f16 parts, times a power of two a row: attn_pscale);
 * masked and out-of-range keys contribute 0 to every field.
 *
 * Layout: q [heads][rows][D], k [kv_heads][len][D], v [kv_heads][len][DV],
 * all f16 (BF = 0) or bf16 (BF = 1); outputs [heads][rows](...).  Query
 * head h reads kv head h / (heads / kv_heads).  With ATTN_PAGED (the keys
 * of a page; compiler/cuda/cuda_mod.c, cuda_module_paged), k and v are a
 * pool [pages][ATTN_PAGED][kv_heads][D] and key j of the run lies in slot
 * j % ATTN_PAGED of page in[ATTN_PI][j / ATTN_PAGED] (the sequence's row
 * of the block table); the tile loads differ (attn_load_keys), and the
 * hooks' i: a sequence's queries are its last positions, row r at
 * A.len - A.rows + r (ATTN_QPOS: the causal mask aligned bottom-right).
 * Paged, q and the outputs take the serving layout too, [rows][heads](...)
 * (a query's heads side by side, as vLLM and FlashAttention's varlen keep
 * them): ATTN_AT maps an index of heads x rows to its element there.
 * The G = heads / kv_heads query heads of a kv head are one run of
 * G * rows query rows.  Launch: blockDim.x = 32 * WARPS; grid = kv_heads *
 * tiles * split with tiles = ceil(G * rows / BM) (blocks past that exit),
 * block b: split b % split, query tile and kv head as attn_tile_of orders
 * them (heaviest tiles first across groups of heads whose keys and values
 * fit in L2).  Each warp owns MT tiles of 16 query rows (KS > 1: KS warps
 * share them, each taking BN / KS keys of every tile); key/value tiles of
 * BN keys stream through shared memory.
 *
 * Hooks (generated from the spec): attn_score2(A, R, x, i, j) = the spec's
 * score with dot(q, k) = x, times log2(e); attn_keep(A, R, i, j) = the
 * mask; ATTN_LIN: 1 when the score is linear in the dot, x a with a of
 * params and scalar row inputs, and then attn_slope2(A, R) = a log2(e)
 * and attn_score2 = x attn_slope2(A, R) (ATTN_LIN 0: attn_slope2 is 1);
 * attn_tile(A, i0, i1, j0, j1): 0 when the mask drops every (i, j) of
 * the box, 2 when it keeps every one, 1 otherwise (interval arithmetic);
 * attn_row(A, at): the scalar row inputs; attn_fin_row(A, R, m, l, i, at)
 * and attn_fin_vec(A, R, m, l, oc, i, at, u): the spec's finalize, per
 * row and per component of the vector outputs; ATTN_QI, ATTN_KI, ATTN_VI:
 * input slots of q, k, v.  With ATTN_SUM 1 (else undefined or 0):
 * attn_weight(A, R, x, i, j) = w with dot(q, k) = x (not in base 2),
 * or with ATTN_WSIG 1 the argument a of w = sigmoid(a), the template
 * taking the sigmoid itself (attn_sigmoid);
 * ATTN_SUM_M, ATTN_SUM_L: 1 where the m or l slot holds a scalar field,
 * and then attn_sum_m(A, R, x, w, i, j) and attn_sum_l(...) its lift,
 * given the dot and o's weight w; the finalize hooks take those fields'
 * sums as m and l (0 for an absent one); attn_score2 is not defined,
 * ATTN_LIN is 0 and attn_slope2 1.
 *
 * Shared memory: K and V tiles, row-major as in global memory (rows
 * padded by 16 bytes against bank conflicts) in dynamic shared memory of
 * the launch plan's size (over 48 KB: the kernel opts in), filled by
 * 16-byte cp.async copies (plain loads when an input is not 16-byte
 * aligned) with zeros past the keys; the Q tile passes through it first
 * (QS = 0: its fragments then stay in registers for the whole loop) or
 * stays after the stages (QS = 1: its fragments are loaded again at each
 * k-step of S = Q K^T, as in FlashAttention-2; two tiles of 16 rows a warp
 * then fit in 255 registers at head dim 128, and each K and V fragment
 * read from shared memory feeds MT products instead of one).
 * Fragments come from ldmatrix: Q and K plain, V with .trans (the B
 * operand of P V).  The loads overlap the arithmetic: with NS = 2 or 3
 * stages of K and V (as many as fit in 227 KB), the next NS - 1 live tiles
 * load while this one computes; with one, as in FlashAttention-2, V of a
 * tile loads while S = Q K^T and the softmax run, K of the next live tile
 * while P V runs.
 * Per tile: S = Q K^T on tensor cores (mma.sync m16n8k16, f32 accumulate),
 * the score and mask elementwise on S (the mask only in tiles that need
 * it; a linear score's slope folded into the exponent), the row maxima in
 * base 2, one rescale of (l, o) (of o only where a maximum rose), P
 * rounded to f16/bf16, O += P V on tensor cores.
 * A weighted sum (ATTN_SUM) computes P = w on the score tile instead of
 * the maxima, rescale and exponent, sums the scalar fields' weights beside
 * it, and merges partial states (key slices, splits) by plain sums.
 * Masked and out-of-range keys contribute the identity (p = 0); tiles the
 * mask drops entirely are skipped.  Split > 1: each block writes its
 * partial (m, l, o) to ws[((h * rows + i) * split + c) * (DV + 2)]; with
 * one tile of 16 rows a warp (MT = 1, as decoding runs), the last of a
 * query tile's blocks to finish merges them with the contract's merge and
 * finalizes (attn_split_last): no second launch, whose gap would cost
 * decoding, a few microseconds long, several percent.  With MT > 1 the
 * kernel is at the edge of its registers, and any code after its key
 * loop made ptxas spill: attn_combine, a kernel of its own, merges. */

#ifndef ATTN_SUM
#define ATTN_SUM 0
#endif
/* A weighted sum's P in f16 parts, scaled into f16's normal range (attn_pscale) */
#define ATTN_PSCALE(BF, PV) (ATTN_SUM && (BF) == 0 && (PV) > 1)

/* The element of q, the scalar row inputs and the outputs that holds row
 * i of head h, given at = h A.rows + i: itself in the kernels' own layout
 * [heads][rows]; paged, i A.heads + h, the serving layout [rows][heads]
 * (32 bits: a launch's rows times heads are under 2^31). */
#if ATTN_PAGED
#define ATTN_AT(A, at) ((long long)((int)(at) % (A).rows * (A).heads + (int)(at) / (A).rows))
#else
#define ATTN_AT(A, at) (at)
#endif

template <int BF>
ASC_DEV void asc_mma_16816(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2])
{
#ifdef ASSOC_EMU
	emu_mma_16816(d, a, b, d, BF);
#else
	if (BF)
		asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
			     "{%8,%9}, {%0,%1,%2,%3};"
			     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
			     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
	else
		asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
			     "{%8,%9}, {%0,%1,%2,%3};"
			     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
			     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

/* Two floats rounded to nearest into f16x2 / bf16x2 (lo in the low half). */
template <int BF>
ASC_DEV unsigned asc_pack2(float lo, float hi)
{
#ifdef ASSOC_EMU
	unsigned l = BF ? emu_float_to_bf16(lo) : emu_float_to_half(lo);
	unsigned h = BF ? emu_float_to_bf16(hi) : emu_float_to_half(hi);
	return l | h << 16;
#else
	unsigned r;
	if (BF)
		asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
	else
		asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
	return r;
#endif
}

/* The two halves of a packed pair, as floats. */
template <int BF>
ASC_DEV float asc_half_lo(unsigned w)
{
	return BF ? asc_bf16((unsigned short)(w & 0xffffu)) : asc_f16((unsigned short)(w & 0xffffu));
}
template <int BF>
ASC_DEV float asc_half_hi(unsigned w)
{
	return BF ? asc_bf16((unsigned short)(w >> 16)) : asc_f16((unsigned short)(w >> 16));
}

/* 2^x by the SFU alone (ex2.approx.ftz: 2 ulp, subnormal results flushed
 * to 0).  exp2f adds a range test and two scalings per call for
 * subnormal results, which here are weights under 2^-126 of the row's
 * largest: below anything P's rounding to f16/bf16 keeps. */
ASC_DEV float asc_exp2(float x)
{
#ifdef ASSOC_EMU
	float y = exp2f(x); /* the flush modelled; the 2 ulp of the SFU are within tolerance */
	return y < 0x1p-126f ? 0.0f : y;
#else
	float y;
	asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
	return y;
#endif
}

/* The maximum and the sum over each group of W lanes (4: a quad, the
 * lanes of an mma row; 32: the warp), a fixed butterfly of shuffles. */
template <int W>
ASC_DEV float asc_lanes_max(float x)
{
#pragma unroll
	for (int s = 1; s < W; s *= 2)
		x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, s));
	return x;
}
template <int W>
ASC_DEV float asc_lanes_sum(float x)
{
#pragma unroll
	for (int s = 1; s < W; s *= 2)
		x += __shfl_xor_sync(0xffffffffu, x, s);
	return x;
}

/* ldmatrix.sync.aligned.m8n8.xNUM[.trans].shared.b16: lane 8q + r gives
 * sm + at, the 16-byte row r of matrix q; register q of lane l gets the
 * halves (row l/4, cols 2(l%4), +1) of matrix q, or with TRANS (rows
 * 2(l%4), +1, col l/4). */
template <int NUM, int TRANS, class S>
ASC_DEV void asc_ldsm(unsigned (&r)[NUM], S &sm, int at)
{
#ifdef ASSOC_EMU
	emu_ldmatrix(r, sm, at, NUM, TRANS);
#else
	static_assert(NUM == 4, "ldmatrix .x4 only");
	/* 32-bit arithmetic on the shared address, so that a constant part of
	 * at becomes the instruction's immediate offset */
	unsigned a = (unsigned)__cvta_generic_to_shared(&sm[0]) + 4u * (unsigned)at;
	if (NUM == 4 && TRANS)
		asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
			     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
	else if (NUM == 4)
		asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
			     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
#endif
}

/* 16 bytes from global src into the shared words sm[at..at+3]: with as,
 * by cp.async (src 16-byte aligned; complete after asc_cp_wait), else by
 * plain loads.  Zeros where !ok (src must still be a valid address). */
template <class S>
ASC_DEV void asc_cp16(S &sm, int at, const unsigned *src, bool ok, bool as)
{
	if (!as) {
#pragma unroll
		for (int x = 0; x < 4; x++)
			sm[at + x] = ok ? ASC_LD(src + x) : 0u;
		return;
	}
#ifdef ASSOC_EMU
	emu_cp_async(sm, at, src, ok ? 16 : 0);
#else
	unsigned a = (unsigned)__cvta_generic_to_shared(&sm[0]) + 4u * (unsigned)at; /* as in asc_ldsm */
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(a), "l"(src), "r"(ok ? 16 : 0) : "memory");
#endif
}
/* e4m3 inputs (ATTN_F8) become f16 on their way into shared memory, whose
 * tiles, fragments and products are then f16's: a global row is seen as
 * the f16 row it becomes, its word w (two elements) at byte 2w, so the
 * loaders' offsets stay those of f16 rows, and a 16-byte chunk of shared
 * memory is converted from 8 bytes (exactly: every e4m3 value is an f16
 * one) by plain loads, never cp.async, which only copies. */
#ifndef ATTN_F8
#define ATTN_F8 0
#endif
struct AttnF8Ptr {
	const unsigned char *p;
};
ASC_DEV AttnF8Ptr operator+(AttnF8Ptr a, long long w) { return AttnF8Ptr{a.p + 2 * w}; }
template <class S>
ASC_DEV void asc_cp16(S &sm, int at, AttnF8Ptr src, bool ok, bool as)
{
	(void)as;
#pragma unroll
	for (int x = 0; x < 4; x++)
		sm[at + x] = ok ? asc_pack2<0>(asc_f8e4m3(ASC_LD(src.p + 2 * x)), asc_f8e4m3(ASC_LD(src.p + 2 * x + 1))) : 0u;
}
ASC_DEV void asc_cp_commit()
{
#ifdef ASSOC_EMU
	emu_cp_commit();
#else
	asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}
/* Every committed group of this thread's copies but the newest N has landed. */
template <int N>
ASC_DEV void asc_cp_wait()
{
#ifdef ASSOC_EMU
	emu_cp_wait(N);
#else
	asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
#endif
}

/* ROWS rows of W words (16-byte chunks) from src (row stride W words in
 * global) into sm at word base with row stride PW; rows from `valid` on
 * are zeros (their source: row 0).  Where NT threads cover whole rows
 * (NT % (W / 4) == 0), thread x copies chunk x % (W / 4) of rows x / (W /
 * 4) + NT / (W / 4) k, unrolled: one address per thread and constant
 * offsets, no division per chunk; a full tile (valid >= ROWS) needs no
 * row test either. */
template <int NT, int ROWS, int W, int PW, class S, class P>
ASC_DEV void attn_load(S &sm, int base, P src, int valid, bool as)
{
	const int CW = W / 4, RS = NT / CW; /* chunks a row; rows a pass */
	if (!as || NT % CW) {
#pragma unroll 1
		for (int x = threadIdx.x; x < ROWS * CW; x += NT) {
			int n = x / CW, c = x % CW;
			asc_cp16(sm, base + n * PW + 4 * c, src + (n < valid ? (long long)n * W : 0) + 4 * c, n < valid, as);
		}
		return;
	}
	int n = (int)threadIdx.x / CW, c = (int)threadIdx.x % CW;
	P p = src + n * W + 4 * c;
	int at = base + n * PW + 4 * c;
	if (valid >= ROWS) {
#pragma unroll
		for (int k = 0; k < (ROWS + RS - 1) / RS; k++)
			if (ROWS % RS == 0 || n + k * RS < ROWS)
				asc_cp16(sm, at + k * RS * PW, p + k * RS * W, true, true);
		return;
	}
#pragma unroll
	for (int k = 0; k < (ROWS + RS - 1) / RS; k++)
		if (ROWS % RS == 0 || n + k * RS < ROWS) {
			bool ok = n + k * RS < valid;
			asc_cp16(sm, at + k * RS * PW, ok ? p + k * RS * W : src, ok, true);
		}
}

#if ATTN_PAGED
/* attn_load over a pool of pages (ATTN_PAGED: keys a page, a power of
 * two): row n of the tile is key kb + n, in slot (kb + n) % ATTN_PAGED of
 * page pages[(kb + n) / ATTN_PAGED], RS words a slot (every key/value
 * head's row); p: this head's row in slot 0 of page 0.  Rows from valid
 * on are zeros (their source: key kb, which is in the table).  A thread
 * looks a row's page up once a tile, not once a chunk. */
template <int NT, int ROWS, int W, int PW, class S, class P>
ASC_DEV void attn_load_paged(S &sm, int base, P p, const int *pages, long long RS, int kb, int valid, bool as)
{
	const int CW = W / 4, RN = NT / CW; /* chunks a row; rows a pass */
	if (NT % CW) {
#pragma unroll 1
		for (int x = threadIdx.x; x < ROWS * CW; x += NT) {
			int n = x / CW, c = x % CW, j = kb + (n < valid ? n : 0);
			P src = p + ((long long)ASC_LD(pages + j / ATTN_PAGED) * ATTN_PAGED + j % ATTN_PAGED) * RS;
			asc_cp16(sm, base + n * PW + 4 * c, src + 4 * c, n < valid, as);
		}
		return;
	}
	int n = (int)threadIdx.x / CW, c = (int)threadIdx.x % CW;
	/* a loop, not unrolled: the prefill variants at head dim 128 hold 252
	 * registers unpaged, and the rows' addresses unrolled spilled */
#pragma unroll 1
	for (int k = 0; k < (ROWS + RN - 1) / RN; k++)
		if (ROWS % RN == 0 || n + k * RN < ROWS) {
			int r = n + k * RN, j = kb + (r < valid ? r : 0);
			P src = p + ((long long)ASC_LD(pages + j / ATTN_PAGED) * ATTN_PAGED + j % ATTN_PAGED) * RS;
			asc_cp16(sm, base + r * PW + 4 * c, src + 4 * c, r < valid, as);
		}
}

/* The Q tile of the serving layout: row n of the tile is row x0 + n of
 * heads x rows, at element ATTN_AT(A, x0 + n) of q (W words each); rows
 * from valid on are zeros (their source: row x0). */
template <int NT, int ROWS, int W, int PW, class S, class P>
ASC_DEV void attn_load_q(S &sm, int base, P q, const Args &A, long long x0, int valid, bool as)
{
	const int CW = W / 4; /* chunks a row */
#pragma unroll 1
	for (int x = threadIdx.x; x < ROWS * CW; x += NT) {
		int n = x / CW, c = x % CW;
		P src = q + ATTN_AT(A, x0 + (n < valid ? n : 0)) * W;
		asc_cp16(sm, base + n * PW + 4 * c, src + 4 * c, n < valid, as);
	}
}
#endif

/* ROWS keys of K or V (W words a key) from kb, those from hi on zeros,
 * into sm at word base: from p + kb W on, or with ATTN_PAGED through the
 * block table in input slot ATTN_PI (a slot of a page holds A.kv_heads
 * rows).  A choice at compile time: the unpaged kernels keep their loop. */
#if ATTN_PAGED
/* The sequence of a paged batch's launch: blockIdx.y, or with again read
 * opaquely, so that what is derived from it is derived anew where needed
 * rather than held in registers (as attn_block). */
ASC_DEV int attn_seq(bool again)
{
#ifdef ASSOC_EMU
	(void)again;
	return (int)blockIdx.y;
#else
	unsigned s;
	if (!again)
		return (int)blockIdx.y;
	asm volatile("mov.u32 %0, %%ctaid.y;" : "=r"(s));
	return (int)s;
#endif
}
#endif

/* batch: with ATTN_PAGED, a paged batch's arguments (attn_paged_seq):
 * sequence s's key j is then key s batch->len + j of the block table read
 * as one row, s found anew at each tile rather than held in a register. */
template <int NT, int ROWS, int W, int PW, class S, class P>
ASC_DEV void attn_load_keys(S &sm, int base, P p, int kb, int hi, bool as, const Args &A, const Args *batch = 0)
{
#if ATTN_PAGED
	int ko = batch ? attn_seq(true) * batch->len : 0;
	attn_load_paged<NT, ROWS, W, PW>(sm, base, p, (const int *)A.in[ATTN_PI], (long long)A.kv_heads * W, kb + ko,
					 hi - kb, as);
#else
	(void)A, (void)batch;
	attn_load<NT, ROWS, W, PW>(sm, base, p + (long long)kb * W, hi - kb, as);
#endif
}

/* A stage: the K and V tiles of the BN keys from kb (those from hi on
 * zeros) into sm at word base, K first (BN rows of KW words), then V. */
template <int NT, int BN, int D, int DV, int KW, int VW, class S, class P>
ASC_DEV void attn_load_kv(S &sm, int base, P kp, P vp, int kb, int hi, bool as, const Args &A, const Args *batch = 0)
{
	attn_load_keys<NT, BN, D / 2, KW>(sm, base, kp, kb, hi, as, A, batch);
	attn_load_keys<NT, BN, DV / 2, VW>(sm, base + BN * KW, vp, kb, hi, as, A, batch);
}

/* The hooks' i of a run's row i: with ATTN_PAGED a sequence's queries are
 * its last positions (row i at A.len - A.rows + i, the causal mask aligned
 * bottom-right as serving systems align it).  Added where the hooks are
 * called rather than held across the key loop, where it made ptxas spill:
 * in the scores from A, in attn_next (whose i0 and i1 are opaque) from
 * the batch's arrays again where a batch's B is A (B.len came from
 * memory and would be held). */
#if ATTN_PAGED
#define ATTN_QPOS(A) ((A).len - (A).rows)
ASC_DEV int attn_qpos(const Args &A, const Args *batch)
{
	if (!batch)
		return ATTN_QPOS(A);
	int s = attn_seq(true);
	const int *cu = (const int *)batch->in[ATTN_PI + 2];
	int rows = cu ? ASC_LD(cu + s + 1) - ASC_LD(cu + s) : batch->rows;
	return ASC_LD((const int *)batch->in[ATTN_PI + 1] + s) - rows;
}
#else
#define ATTN_QPOS(A) 0
#endif

/* The first key tile at or after kb that the mask keeps in part (hi when
 * none), and its class in *cls; the same in every thread. */
ASC_DEV int attn_next(const Args &A, int i0, int i1, int kb, int hi, int bn, int *cls, const Args *batch = 0)
{
#ifndef ASSOC_EMU
	/* i0 and i1 opaque at each call: attn_tile's interval arithmetic may
	 * take them as doubles, and ptxas would hold those conversions (four
	 * registers) across the whole key-tile loop, which at 32 rows a warp
	 * and head dim 128 spills; converting again is a few instructions a
	 * tile. */
	asm volatile("" : "+r"(i0), "+r"(i1));
#endif
#if ATTN_PAGED
	int qp = attn_qpos(A, batch);
#else
	const int qp = 0;
	(void)batch;
#endif
	for (; kb < hi; kb += bn) {
		*cls = attn_tile(A, i0 + qp, i1 + qp, kb, (kb + bn < hi ? kb + bn : hi) - 1);
		if (*cls)
			return kb;
	}
	return hi;
}

/* The scores of 16 rows x BN keys from kb (the thread's elements of
 * S = Q K^T) in base 2, and the maxima of the thread's two rows (over
 * the quad).  With MASK, keys from jn on and, where cls == 1, those the
 * mask drops get -inf; without, the tile has none of either (one branch
 * a tile rather than a test and a select per score).  LIN (a full tile,
 * a linear score, score2 = x a2[hf], and a2 >= 0): s keeps the dots x,
 * and the maxima are a2 max x (one FMNMX a score; the product goes into
 * the exponent's FFMA: attn_fwd's scale). */
#if !ATTN_SUM
template <int MASK, int LIN, int BN>
ASC_DEV void attn_scores(const Args &A, const ARow (&R)[2], const int (&ir)[2], const float (&a2)[2],
			 float (&s)[BN / 8][4], float (&mx)[2], int kb, int jn, int cls, int t)
{
	mx[0] = mx[1] = -ASC_INF;
#pragma unroll
	for (int nt = 0; nt < BN / 8; nt++)
#pragma unroll
		for (int c = 0; c < 4; c++) {
			int hf = c / 2, i = ir[hf] + ATTN_QPOS(A), j = kb + nt * 8 + 2 * t + (c & 1);
			float x = LIN ? s[nt][c] : attn_score2(A, R[hf], s[nt][c], i, j);
			if (MASK && (j >= jn || (cls == 1 && !attn_keep(A, R[hf], i, j))))
				x = -ASC_INF;
			s[nt][c] = x;
			mx[hf] = fmaxf(mx[hf], x);
		}
#pragma unroll
	for (int hf = 0; hf < 2; hf++)
		mx[hf] = LIN ? a2[hf] * asc_lanes_max<4>(mx[hf]) : asc_lanes_max<4>(mx[hf]);
}
#else
/* 1 / (1 + 2^(-x log2(e))) by the SFU alone (ex2.approx.ftz and
 * rcp.approx.ftz: a few float32 ulps, far under P's rounding to f16/bf16):
 * the spec's lowering divides as IEEE asks, whose slow path is a call,
 * and takes exp2f's subnormal path, some ten instructions a score more.
 * Where x < -87 the weight is under 2^-126 and flushed to 0 (1 + 2^(-x
 * log2(e)) overflows to inf, whose reciprocal is 0); NaN stays NaN. */
ASC_DEV float attn_sigmoid(float x)
{
	float y = 1.0f + asc_exp2(x * -1.44269504f);
#ifdef ASSOC_EMU
	float r = 1.0f / y; /* the flush modelled */
	return r < 0x1p-126f ? 0.0f : r;
#else
	float r;
	asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(y));
	return r;
#endif
}

/* A weighted sum's P on 16 rows x BN keys from kb: each dot x of s
 * becomes its weight w, and the thread's parts of the scalar fields' sums
 * (sm, sl: the m and l slots) grow by their lifts.  With MASK, keys from
 * jn on and, where cls == 1, those the mask drops weigh 0 in every field
 * (whatever w would be there: a select, not a product, so that an
 * infinite or NaN weight stays out). */
template <int MASK, int BN>
ASC_DEV void attn_weights(const Args &A, const ARow (&R)[2], const int (&ir)[2], float (&s)[BN / 8][4],
			  float (&sm)[2], float (&sl)[2], int kb, int jn, int cls, int t)
{
#pragma unroll
	for (int nt = 0; nt < BN / 8; nt++)
#pragma unroll
		for (int c = 0; c < 4; c++) {
			int hf = c / 2, i = ir[hf] + ATTN_QPOS(A), j = kb + nt * 8 + 2 * t + (c & 1);
			bool keep = !MASK || !(j >= jn || (cls == 1 && !attn_keep(A, R[hf], i, j)));
			float x = s[nt][c], w = 0.0f;
			if (keep)
				w = ATTN_WSIG ? attn_sigmoid(attn_weight(A, R[hf], x, i, j)) : attn_weight(A, R[hf], x, i, j);
			if (ATTN_SUM_M && keep)
				sm[hf] += attn_sum_m(A, R[hf], x, w, i, j);
			if (ATTN_SUM_L && keep)
				sl[hf] += attn_sum_l(A, R[hf], x, w, i, j);
			s[nt][c] = w;
		}
}

/* Weighted sums with P in f16 parts (PV > 1, BF 0): f16's normal range
 * starts at 2^-14 and its subnormals end at 2^-24, so the parts of a
 * weight under 2^-14 keep fewer bits than float32's (at 1e-6, about 4:
 * sigmoid attention's weights with a -log(n) bias or a distance bias are
 * that small).  Each row's weights go to the parts times 2^E instead, E
 * (pe) such that the row's largest weight so far lies in [2^14, 2^15)
 * times 2^E: it falls as that weight grows, and o, which holds the row's
 * o times 2^E, then takes alpha = 2^(E' - E), a power of two (exact), as
 * the softmax's rescale does; 2^-E after the loop (attn_pscale_out).  A
 * weight under 2^-39 of the row's largest loses bits still, under
 * float32's rounding of their sum.  E runs from -113 (an infinite weight)
 * to 126 (its start, kept while the weights are under 2^-111).  Where:
 * ATTN_PSCALE. */
ASC_DEV float attn_pow2(int e) { return e < -126 ? 0.0f : __int_as_float((e + 127) << 23); }

template <int BN>
ASC_DEV void attn_pscale(float (&s)[BN / 8][4], int (&pe)[2], float (&alpha)[2])
{
#pragma unroll
	for (int hf = 0; hf < 2; hf++) {
		float mx = 0.0f;
#pragma unroll
		for (int nt = 0; nt < BN / 8; nt++)
			mx = fmaxf(mx, fmaxf(fabsf(s[nt][2 * hf]), fabsf(s[nt][2 * hf + 1])));
		mx = asc_lanes_max<4>(mx); /* the row's keys lie in its quad's 4 lanes */
		int e = 141 - (__float_as_int(mx) >> 23);
		e = e < pe[hf] ? e : pe[hf];
		alpha[hf] = attn_pow2(e - pe[hf]);
		pe[hf] = e;
	}
	float sc[2] = {attn_pow2(pe[0]), attn_pow2(pe[1])};
#pragma unroll
	for (int nt = 0; nt < BN / 8; nt++)
#pragma unroll
		for (int c = 0; c < 4; c++)
			s[nt][c] *= sc[c / 2];
}

template <int DV>
ASC_DEV void attn_pscale_out(float (&o)[DV / 8][4], const int (&pe)[2])
{
	float sc[2] = {attn_pow2(-pe[0]), attn_pow2(-pe[1])};
#pragma unroll
	for (int dn = 0; dn < DV / 8; dn++)
#pragma unroll
		for (int c = 0; c < 4; c++)
			o[dn][c] *= sc[c / 2];
}
#endif

/* blockIdx.x read again, opaquely: not merged with the read at the start,
 * whose value would otherwise be held across the key loop (its 64-bit
 * products spill at 32 rows a warp and head dim 128). */
ASC_DEV unsigned attn_block()
{
#ifdef ASSOC_EMU
	return blockIdx.x;
#else
	unsigned b;
	asm volatile("mov.u32 %0, %%ctaid.x;" : "=r"(b));
	return b;
#endif
}

/* Keys and values of the kv heads whose blocks run together: the grid
 * goes through the heads in groups that fit in L2 beside everything else
 * (50 MB on an H100, 60 on an H200), so that a group's query tiles read
 * them from there. */
#define ATTN_GROUP_BYTES (32LL << 20)

/* Block b's query tile qt and kv head kh, false for a block past the runs.
 * Splits vary fastest (b % split); then, in each group of heads, the query
 * tiles from the last to the first, each across the group's heads: under
 * a causal mask the last tiles have the most keys, so the heaviest blocks
 * of every head start first and the lightest fill the tail (ordered head
 * by head, the heavy tiles of the last heads would start late and leave
 * the rest of the machine idle at the end). */
template <int D, int DV>
ASC_DEV bool attn_tile_of(const Args &A, unsigned b, int tiles, int &qt, int &kh)
{
	long long head = (long long)A.len * (D + DV) * 2; /* f16 or bf16 */
	long long gh = head > 0 ? ATTN_GROUP_BYTES / head : A.kv_heads;
	int g = (int)(gh < 1 ? 1 : gh > A.kv_heads ? A.kv_heads : gh);
	int rest = (int)(b / A.split), h0 = rest / (g * tiles) * g, in = rest % (g * tiles);
	int hn = A.kv_heads - h0 < g ? A.kv_heads - h0 : g;
	if (h0 >= A.kv_heads || in >= hn * tiles)
		return false;
	qt = tiles - 1 - in / hn;
	kh = h0 + in % hn;
	return true;
}

/* Split-KV: merge the partial states of row at (of heads x rows) with the
 * contract's merge, then finalize; one warp.  Lane c takes splits c, c +
 * 32, ...: their maximum and weights e^(m_c - max), one exp a split, and
 * l over a fixed tree of the lanes; then o, lane u components u, u + 32,
 * ..., summed in split order, each split's weight from its lane.  The
 * partials come from L2 (ld.cg: other blocks wrote them), and no load
 * waits on a sum, so they overlap: one L2 latency a split in turn, as a
 * loop over the splits of dependent sums costs, is several microseconds
 * at 32 splits, decoding's whole budget. */
template <int DV>
ASC_DEV void attn_combine_row(const Args &A, long long at, int lane)
{
	const int U = (DV + 31) / 32; /* components a lane */
	int i = (int)(at % A.rows), S = A.split;
	const float *ws = (const float *)A.ws + at * S * (DV + 2);
#if ATTN_SUM
	/* plain sums: every split weighs 1 */
	float mx = 0, l = 0;
	for (int c = lane; c < S; c += 32) {
		mx += ASC_LDCG(ws + c * (DV + 2));
		l += ASC_LDCG(ws + c * (DV + 2) + 1);
	}
	mx = asc_lanes_sum<32>(mx);
#else
	float mx = -ASC_INF;
	for (int c = lane; c < S; c += 32)
		mx = fmaxf(mx, ASC_LDCG(ws + c * (DV + 2)));
	mx = asc_lanes_max<32>(mx);
	float mb = mx == -ASC_INF ? 0.0f : mx, l = 0;
	for (int c = lane; c < S; c += 32)
		l += ASC_LDCG(ws + c * (DV + 2) + 1) * expf(ASC_LDCG(ws + c * (DV + 2)) - mb);
#endif
	l = asc_lanes_sum<32>(l);
	ARow R = attn_row(A, ATTN_AT(A, at));
	if (lane == 0)
		attn_fin_row(A, R, mx, l, i, ATTN_AT(A, at));
	float o[U];
#pragma unroll
	for (int x = 0; x < U; x++)
		o[x] = 0;
	for (int c0 = 0; c0 < S; c0 += 32) {
#if ATTN_SUM
		float wl = c0 + lane < S ? 1.0f : 0.0f;
#else
		float wl = c0 + lane < S ? expf(ASC_LDCG(ws + (c0 + lane) * (DV + 2)) - mb) : 0.0f;
#endif
		int n = S - c0 < 32 ? S - c0 : 32;
#pragma unroll 4
		for (int k = 0; k < n; k++) {
			float wk = __shfl_sync(0xffffffffu, wl, k);
			const float *p = ws + (c0 + k) * (DV + 2) + 2 + lane;
#pragma unroll
			for (int x = 0; x < U; x++)
				if (DV % 32 == 0 || lane + 32 * x < DV)
					o[x] += ASC_LDCG(p + 32 * x) * wk;
		}
	}
#pragma unroll
	for (int x = 0; x < U; x++)
		if (DV % 32 == 0 || lane + 32 * x < DV)
			attn_fin_vec(A, R, mx, l, o[x], i, ATTN_AT(A, at), lane + 32 * x);
}

/* attn_split_last's work, for the n threads (x from 0) that meet(), a
 * barrier of them all: the block's whole in the mma.sync kernels, the
 * consumer warpgroups' named barrier in the Hopper ones, whose producer
 * has left. */
template <int D, int DV, int BM, class Meet>
ASC_DEV void attn_split_tail(const Args &A, int x, int n, Meet meet)
{
	int M = A.heads / A.kv_heads * A.rows, tiles = (M + BM - 1) / BM;
	ASC_DYN_SHARED(unsigned, Sm); /* its first word: every tile is consumed */
	unsigned b = attn_block();
	int qt, kh;
	attn_tile_of<D, DV>(A, b, tiles, qt, kh);
	int *ctr = (int *)((float *)A.ws + (long long)A.kv_heads * M * A.split * (DV + 2)) + kh * tiles + qt;
	__threadfence(); /* this thread's partials are seen everywhere before the count is */
	meet();
	if (x == 0)
		Sm[0] = atomicAdd(ctr, 1) == A.split - 1;
	meet();
	if (!Sm[0])
		return;
	__threadfence(); /* the other blocks' partials, counted, are read after the count */
	long long base = (long long)kh * M;
	int r1 = (qt + 1) * BM < M ? (qt + 1) * BM : M;
	for (int r = qt * BM + x / 32; r < r1; r += n / 32) /* a warp a row */
		attn_combine_row<DV>(A, base + r, x % 32);
	if (x == 0)
		atomicExch(ctr, 0);
}

/* Split > 1, after the block's partial states are written: a counter per
 * (kv head, query tile), after the partials in the workspace, counts the
 * tile's blocks that are done; the last one merges the tile's rows (in
 * split order: the result does not depend on which block is last) and
 * puts the counter back to 0 for the next launch (the launch zeroes the
 * counters where the workspace's layout changed). */
template <int D, int DV, int NT, int BM>
ASC_DEV void attn_split_last(const Args &A)
{
	attn_split_tail<D, DV, BM>(A, threadIdx.x, NT, [] { __syncthreads(); });
}

/* Split-KV after an MT > 1 kernel: warp w of block b merges row NT / 32 b
 * + w of heads x rows (a warp a block would meet the limit of resident
 * blocks an SM, 32 on sm_90, at a third of its threads). */
template <int DV, int NT>
ASC_DEV void attn_combine(const Args &A)
{
	long long r = (long long)blockIdx.x * (NT / 32) + threadIdx.x / 32;
	if (r < (long long)A.heads * A.rows)
		attn_combine_row<DV>(A, r, threadIdx.x % 32);
}

/* KS > 1, after the key loop: the states of a row warp's KS key slices
 * merged into slice 0's, in slice order, with the contract's merge in
 * base 2 (as the key loop rescales: an empty state's weight is 0, not
 * NaN), or a weighted sum's plain sums.  Through shared memory from word
 * 0, XW words a lane stored component-major, so that the lanes of a warp
 * hit distinct banks.  m is the row's (every lane of a quad holds it; a
 * weighted sum's: the lane's part), l the lane's part of the row's sum,
 * as in the loop. */
template <int MT, int DV, int KS, class S>
ASC_DEV void attn_merge_slices(S &sm, float (&o)[MT][DV / 8][4], float (&m)[MT][2], float (&l)[MT][2], int w, int wk,
			       int lane)
{
	const int XW = MT * (4 + DV / 2);
	asc_cp_wait<0>();
	__syncthreads(); /* every warp is done with the stages */
	if (wk > 0) {
		int at = (w * (KS - 1) + wk - 1) * XW * 32 + lane;
#pragma unroll
		for (int mt = 0; mt < MT; mt++) {
#pragma unroll
			for (int hf = 0; hf < 2; hf++) {
				sm[at + (mt * 4 + 2 * hf) * 32] = (unsigned)__float_as_int(m[mt][hf]);
				sm[at + (mt * 4 + 2 * hf + 1) * 32] = (unsigned)__float_as_int(l[mt][hf]);
			}
#pragma unroll
			for (int dn = 0; dn < DV / 8; dn++)
#pragma unroll
				for (int c = 0; c < 4; c++)
					sm[at + (MT * 4 + (mt * DV / 8 + dn) * 4 + c) * 32] = (unsigned)__float_as_int(o[mt][dn][c]);
		}
	}
	__syncthreads();
	if (wk > 0)
		return;
#pragma unroll 1
	for (int k = 1; k < KS; k++) {
		int at = (w * (KS - 1) + k - 1) * XW * 32 + lane;
#pragma unroll
		for (int mt = 0; mt < MT; mt++) {
			float wa[2], wb[2];
#pragma unroll
			for (int hf = 0; hf < 2; hf++) {
				float mk = __int_as_float((int)sm[at + (mt * 4 + 2 * hf) * 32]);
				float lk = __int_as_float((int)sm[at + (mt * 4 + 2 * hf + 1) * 32]);
#if ATTN_SUM
				wa[hf] = wb[hf] = 1.0f; /* plain sums */
				m[mt][hf] += mk;
				l[mt][hf] += lk;
#else
				float mn = fmaxf(m[mt][hf], mk), mb = mn == -ASC_INF ? 0.0f : mn;
				wa[hf] = asc_exp2(m[mt][hf] - mb);
				wb[hf] = asc_exp2(mk - mb);
				l[mt][hf] = l[mt][hf] * wa[hf] + lk * wb[hf];
				m[mt][hf] = mn;
#endif
			}
#pragma unroll
			for (int dn = 0; dn < DV / 8; dn++)
#pragma unroll
				for (int c = 0; c < 4; c++) {
					float ok = __int_as_float((int)sm[at + (MT * 4 + (mt * DV / 8 + dn) * 4 + c) * 32]);
					o[mt][dn][c] = o[mt][dn][c] * wa[c / 2] + ok * wb[c / 2];
				}
		}
	}
}

/* Row r of the run (row i of its head, at in heads x rows) after the key
 * loop, for the half hf of a thread's mma.sync-shaped fragments (rows g
 * and g + 8, o[dn][2 hf + x] at column 8 dn + 2 t + x): m back to the
 * score's units (a weighted sum's: summed over the quad) and l summed
 * over the quad, then split sp's partial state (A.split > 1) or the
 * spec's finalize.  Every lane takes part in the sums; rows past the
 * run's M write nothing. */
template <int DV>
ASC_DEV void attn_row_out(const Args &A, const ARow &R, float m, float l, const float (&o)[DV / 8][4], int hf, int r,
			  int M, long long base, int i, int sp, int t)
{
#if ATTN_SUM
	float lr = asc_lanes_sum<4>(l), mr = ATTN_SUM_M ? asc_lanes_sum<4>(m) : 0.0f;
#else
	const float LN2 = 0.693147180559945309f;
	float lr = asc_lanes_sum<4>(l), mr = m == -ASC_INF ? -ASC_INF : m * LN2;
#endif
	if (r >= M)
		return;
	long long at = base + r;
	if (A.split > 1) {
		float *ws = (float *)A.ws + (at * A.split + sp) * (DV + 2);
		if (t == 0)
			ASC_ST(ws, mr), ASC_ST(ws + 1, lr);
#pragma unroll
		for (int dn = 0; dn < DV / 8; dn++)
#pragma unroll
			for (int x = 0; x < 2; x++)
				ASC_ST(ws + 2 + dn * 8 + 2 * t + x, o[dn][2 * hf + x]);
		return;
	}
	at = ATTN_AT(A, at);
	if (t == 0)
		attn_fin_row(A, R, mr, lr, i, at);
#pragma unroll
	for (int dn = 0; dn < DV / 8; dn++)
#pragma unroll
		for (int x = 0; x < 2; x++)
			attn_fin_vec(A, R, mr, lr, o[dn][2 * hf + x], i, at, dn * 8 + 2 * t + x);
}

#if ATTN_PAGED
/* A paged batch in one launch: blockIdx.y is the sequence s, and B is A
 * narrowed to it, as a run of that sequence alone would be given.  A holds
 * the batch: in[ATTN_PI] the block table [batch][A.len / ATTN_PAGED] (A.len:
 * the keys a row of it holds), in[ATTN_PI + 1] seq_lens [batch],
 * in[ATTN_PI + 2] cu_seqlens_q [batch + 1], or NULL for A.rows queries a
 * sequence; the row inputs and the outputs hold the sequences one after
 * another, [rows][heads] (ATTN_AT); A.rows is the most queries of any
 * sequence, and the workspace holds one run's of that many rows a
 * sequence (partial states, then a counter per query tile of 16 rows at
 * least).  ATTN_PAGED_SHIFT (the carrier's hooks) moves the row inputs
 * and outputs on by a number of rows; in[ATTN_PI] stays the batch's
 * table, whose row the tiles' loads find from A (attn_load_keys).  Only the
 * kernels of one tile of 16 query rows a warp (MT = 1) take a batch: at
 * MT > 1 the sequence's pointers and shape held in registers made ptxas
 * spill, and those kernels run a sequence a launch.  False for a
 * sequence with no
 * queries: the block has nothing to do; with again, after the key loop,
 * the same again. */
template <int DV>
ASC_DEV bool attn_paged_seq(const Args &A, Args &B, bool again = false)
{
	int s = attn_seq(again), G = A.heads / A.kv_heads;
	const int *cu = (const int *)A.in[ATTN_PI + 2];
	int first = cu ? ASC_LD(cu + s) : s * A.rows;
	B = A;
	B.rows = cu ? ASC_LD(cu + s + 1) - first : A.rows;
	B.len = ASC_LD((const int *)A.in[ATTN_PI + 1] + s);
	long long ws = (long long)A.kv_heads * G * A.rows * A.split * (DV + 2) + (long long)A.kv_heads * ((G * A.rows + 15) / 16);
	B.ws = (float *)A.ws + s * ws;
	long long rows = (long long)first * A.heads;
	ATTN_PAGED_SHIFT(B, rows);
	return B.rows > 0;
}
#endif

/* KS > 1: the block's warps in KS slices of the key axis: warp w takes the
 * rows of row warp w / KS and keys BW (w % KS) on of every key tile, and
 * the slices' states merge at the end (attn_merge_slices).  For decoding,
 * whose few query rows fill a tile of 16 in part: each key then feeds the
 * tensor cores 16 rows instead of 16 WARPS, which at 64 rows a block cost
 * about 64 flops a byte of K and V, a compute floor near the copy's speed. */
/* Input i at element off: its rows' words as the loaders count them. */
#if ATTN_F8
#define ATTN_IN(i, off) (AttnF8Ptr{(const unsigned char *)A.in[i] + (off)})
#else
#define ATTN_IN(i, off) ((const unsigned *)((const unsigned short *)A.in[i] + (off)))
#endif

/* o of 16 rows times alpha, each row's own.  Once the rows' maxima
 * settle, most tiles raise none in the warp's 16 rows: then no rescale
 * (alpha = 1 is exact).  Not over head dim 128, where o and Q's fragments
 * hold 192 registers and the branch makes ptxas spill. */
template <int DV>
ASC_DEV void attn_rescale(float (&o)[DV / 8][4], const float (&alpha)[2])
{
	if (DV > 128 || !__all_sync(0xffffffffu, alpha[0] == 1.0f && alpha[1] == 1.0f))
#pragma unroll
		for (int dn = 0; dn < DV / 8; dn++)
#pragma unroll
			for (int c = 0; c < 4; c++)
				o[dn][c] *= alpha[c / 2];
}

template <int D, int DV, int WARPS, int MT, int BN, int BF, int PV, int QS, int NS, int KS>
ASC_DEV void attn_fwd(const Args &A, const Args *batch = 0)
{
	const int NT = WARPS * 32, BM = WARPS / KS * MT * 16, BW = BN / KS; /* BW: keys of a tile a warp takes */
	static_assert(KS >= 1 && WARPS % KS == 0 && BW % 16 == 0, "key slices: a divisor of the warps, 16 keys a warp at least");
	static_assert((WARPS - WARPS / KS) * 32 * MT * (4 + DV / 2) * 4 <= 227 * 1024, "key slices' states over 227 KB");
	/* Shared rows padded by 16 bytes: ldmatrix's 8 rows of 16 bytes then
	 * fall on distinct banks (D % 16 == 0 makes the row stride an odd
	 * number of 16-byte units).  A stage is a K tile (KV words) and a V
	 * tile after it; NS stages (1 to 3, as many as fit in the 227 KB a
	 * block may opt in to: compiler/cuda/cuda_mod.c, attn_stages).  The Q
	 * tile (QW words) is staged over them before the first key tile, or
	 * with QS kept after them at word QB.  Dynamic shared memory of max(NS
	 * ST, BM KW) words, or NS ST + BM KW with QS: the launch plan's bytes
	 * (attn_smem). */
	const int KW = D / 2 + 4, VW = DV / 2 + 4, KV = BN * KW, ST = BN * (KW + VW), QW = BM * KW;
	const int QB = QS ? NS * ST : 0;
	static_assert(NS >= 1 && NS <= 3, "1 to 3 pipeline stages");
	static_assert((NS * ST + (QS ? QW : 0)) * 4 <= 227 * 1024 && QW * 4 <= 227 * 1024,
		      "K and V tiles or the Q tile over 227 KB of shared memory: fewer keys (bn), stages or rows per tile");
	ASC_DYN_SHARED(unsigned, Sm); /* cp.async and ldmatrix take 16-byte rows */
#if !ATTN_PAGED
	(void)batch;
#endif
	/* cp.async where q, k and v are 16-byte aligned (then so is every
	 * row: D and DV are multiples of 16), plain loads otherwise */
	bool as = !ATTN_F8 && !(((asc_uptr)A.in[ATTN_QI] | (asc_uptr)A.in[ATTN_KI] | (asc_uptr)A.in[ATTN_VI]) & 15);
	/* The G query heads that share a key/value head are one run of M rows
	 * (q and the outputs hold them one after another), so their keys and
	 * values are read once; row r of the run is row r % rows of query head
	 * kh * G + r / rows, and a tile may span two heads. */
	int G = A.heads / A.kv_heads, M = G * A.rows, tiles = (M + BM - 1) / BM;
	int sp = blockIdx.x % A.split, qt, kh;
	if (!attn_tile_of<D, DV>(A, blockIdx.x, tiles, qt, kh))
		return; /* a grid planned over heads x rows has more blocks than runs need */
	long long base = (long long)kh * M; /* the run's first row in heads x rows */
	int w = threadIdx.x / 32 / KS, wk = threadIdx.x / 32 % KS, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
	/* the chunk's ends in unsigned: past 2^31 - 1 near the end of a long row, under 2^32 */
	unsigned at = (unsigned)sp * (unsigned)A.chunk, end = (at < (unsigned)A.len ? at : (unsigned)A.len) + A.chunk;
	int lo = at < (unsigned)A.len ? (int)at : A.len;
	int hi = end < (unsigned)A.len ? (int)end : A.len;
	int r0 = qt * BM + w * MT * 16; /* the warp's first row in the run */
#if ATTN_PAGED /* the head's row in slot 0 of page 0; q's rows through ATTN_AT */
	const auto kp = ATTN_IN(ATTN_KI, (long long)kh * D);
	const auto vp = ATTN_IN(ATTN_VI, (long long)kh * DV);
#else
	const auto qp = ATTN_IN(ATTN_QI, base * D);
	const auto kp = ATTN_IN(ATTN_KI, (long long)kh * A.len * D);
	const auto vp = ATTN_IN(ATTN_VI, (long long)kh * A.len * DV);
#endif

	unsigned qf[MT][D / 16][4]; /* QS = 0: Q's A fragments for the whole loop */
	ARow R[MT][2];
	int ir[MT][2];   /* the thread's rows i */
	float a2[MT][2]; /* their slopes (ATTN_LIN) */
	bool lin = ATTN_LIN; /* full tiles take the dots' maxima: linear scores, a2 >= 0 */
#pragma unroll
	for (int mt = 0; mt < MT; mt++)
#pragma unroll
		for (int hf = 0; hf < 2; hf++) {
			int r = r0 + mt * 16 + g + 8 * hf;
			ir[mt][hf] = r % A.rows;
			R[mt][hf] = attn_row(A, ATTN_AT(A, base + (r < M ? r : 0)));
			a2[mt][hf] = attn_slope2(A, R[mt][hf]);
			lin = lin && a2[mt][hf] >= 0;
		}
	lin = __all_sync(0xffffffffu, lin); /* the same in the warp: attn_scores' shuffles */
#if ATTN_PAGED
	attn_load_q<NT, BM, D / 2, KW>(Sm, QB, ATTN_IN(ATTN_QI, 0), A, base + qt * BM, M - qt * BM, as);
#else
	attn_load<NT, BM, D / 2, KW>(Sm, QB, qp + (long long)qt * BM * (D / 2), M - qt * BM, as);
#endif
	asc_cp_commit(); /* QS: waited for with the first key tile */
	/* A fragments: lane l reads row l % 16, columns 8 (l / 16) on of the
	 * 16x16 block; qa: the lane's row of Q in shared memory */
	const int qa = QB + (w * MT * 16 + lane % 16) * KW + lane / 16 * 4;
	if (!QS) {
		asc_cp_wait<0>();
		__syncthreads();
#pragma unroll
		for (int mt = 0; mt < MT; mt++)
#pragma unroll
			for (int kk = 0; kk < D / 16; kk++)
				asc_ldsm<4, 0>(qf[mt][kk], Sm, qa + mt * 16 * KW + kk * 8);
		__syncthreads(); /* Q is read: K and V may take its place */
	}
	float o[MT][DV / 8][4], m[MT][2], l[MT][2];
#pragma unroll
	for (int mt = 0; mt < MT; mt++) {
#pragma unroll
		for (int dn = 0; dn < DV / 8; dn++)
#pragma unroll
			for (int c = 0; c < 4; c++)
				o[mt][dn][c] = 0;
		m[mt][0] = m[mt][1] = ATTN_SUM ? 0.0f : -ASC_INF; /* the identity */
		l[mt][0] = l[mt][1] = 0;
	}
#if ATTN_SUM
	int pe[MT][2]; /* ATTN_PSCALE: o's scale, 2^pe */
#pragma unroll
	for (int mt = 0; mt < MT; mt++)
		pe[mt][0] = pe[mt][1] = 126;
#endif
	/* The pipeline.  NS stages: K and V of the next NS - 1 live tiles load
	 * while the whole of this tile computes, one barrier per tile (a ring
	 * of stages, one commit group a tile).  One stage (FlashAttention-2's
	 * order): V of a tile loads while S = Q K^T and the softmax run, K of
	 * the next live tile while P V runs. */
	int f = qt * BM, e = (qt + 1) * BM < M ? (qt + 1) * BM - 1 : M - 1, cls, cn = 0; /* the tile's rows in the run */
	int i0 = f / A.rows == e / A.rows ? f % A.rows : 0, i1 = f / A.rows == e / A.rows ? e % A.rows : A.rows - 1;
	int kb = attn_next(A, i0, i1, lo, hi, BN, &cls, batch), kn = hi, stg = 0; /* stg: this tile's stage */
	int k2 = hi, c2 = 0; /* NS = 3: the live tile after kn */
	/* The lane's ldmatrix rows in a stage (see the B fragments below): one
	 * shared address a tile, constant offsets from it per fragment. */
	const int ka = (wk * BW + 8 * (lane / 16) + lane % 8) * KW + lane / 8 % 2 * 4,
		  va = KV + (wk * BW + lane % 16) * VW + lane / 16 * 4;
	if (kb < hi) {
		if (NS > 1)
			attn_load_kv<NT, BN, D, DV, KW, VW>(Sm, 0, kp, vp, kb, hi, as, A, batch);
		else
			attn_load_keys<NT, BN, D / 2, KW>(Sm, 0, kp, kb, hi, as, A, batch);
		asc_cp_commit();
		if (NS == 3) { /* the next live tile too, in a group of its own (empty if none) */
			kn = attn_next(A, i0, i1, kb + BN, hi, BN, &cn, batch);
			if (kn < hi)
				attn_load_kv<NT, BN, D, DV, KW, VW>(Sm, ST, kp, vp, kn, hi, as, A, batch);
			asc_cp_commit();
		}
	}
	while (kb < hi) {
		int jn = kb + BN < hi ? kb + BN : hi;
		bool full = jn - kb == BN && cls == 2; /* no key of the tile masked */
		asc_cp_wait<NS == 3 ? 1 : 0>(); /* NS = 3: the next tile's group may still be in flight */
		__syncthreads(); /* this tile has landed everywhere; every warp is done with the last one */
		if (NS == 3) {
			/* the tile two ahead into the stage the last tile left */
			int s2 = stg == 0 ? 2 : stg - 1;
			k2 = kn < hi ? attn_next(A, i0, i1, kn + BN, hi, BN, &c2, batch) : hi;
			if (k2 < hi)
				attn_load_kv<NT, BN, D, DV, KW, VW>(Sm, s2 * ST, kp, vp, k2, hi, as, A, batch);
			asc_cp_commit(); /* every tile a group, so that the wait above counts tiles */
		} else if (NS == 2) {
			kn = attn_next(A, i0, i1, kb + BN, hi, BN, &cn, batch);
			if (kn < hi) {
				attn_load_kv<NT, BN, D, DV, KW, VW>(Sm, (stg ^ 1) * ST, kp, vp, kn, hi, as, A, batch);
				asc_cp_commit();
			}
		} else {
			attn_load_keys<NT, BN, DV / 2, VW>(Sm, KV, vp, kb, hi, as, A, batch);
			asc_cp_commit();
		}
		float s[MT][BW / 8][4];
#pragma unroll
		for (int mt = 0; mt < MT; mt++)
#pragma unroll
			for (int nt = 0; nt < BW / 8; nt++)
#pragma unroll
				for (int c = 0; c < 4; c++)
					s[mt][nt][c] = 0;
		/* B fragments of K^T for key tiles nt, nt + 1: lane l reads key
		 * 8 (nt + l / 16) + l % 8, columns 16 kk + 8 (l / 8 % 2) on */
#pragma unroll
		for (int kk = 0; kk < D / 16; kk++) {
			unsigned qk[MT][4]; /* QS: this k-step's A fragments */
			if (QS)
#pragma unroll
				for (int mt = 0; mt < MT; mt++)
					asc_ldsm<4, 0>(qk[mt], Sm, qa + mt * 16 * KW + kk * 8);
#pragma unroll
			for (int nt = 0; nt < BW / 8; nt += 2) {
				unsigned b[4];
				asc_ldsm<4, 0>(b, Sm, stg * ST + ka + 8 * nt * KW + kk * 8);
#pragma unroll
				for (int mt = 0; mt < MT; mt++) {
					unsigned b0[2] = {b[0], b[1]}, b1[2] = {b[2], b[3]};
					const unsigned(&a)[4] = QS ? qk[mt] : qf[mt][kk];
					asc_mma_16816<BF>(s[mt][nt], a, b0);
					asc_mma_16816<BF>(s[mt][nt + 1], a, b1);
				}
			}
		}
		/* P in PV parts of the input type (hi, then the rounding rests):
		 * PV = 1 rounds P as FlashAttention does; 2 (f16) or 3 (bf16)
		 * keep float32's precision, as the spec's arithmetic asks (a
		 * weighted sum's f16 parts scaled: attn_pscale). */
		unsigned pf[MT][PV][BW / 16][4];
#pragma unroll
		for (int mt = 0; mt < MT; mt++) {
#if ATTN_SUM
			if (full)
				attn_weights<0, BW>(A, R[mt], ir[mt], s[mt], m[mt], l[mt], kb + wk * BW, jn, cls, t);
			else
				attn_weights<1, BW>(A, R[mt], ir[mt], s[mt], m[mt], l[mt], kb + wk * BW, jn, cls, t);
			if (ATTN_PSCALE(BF, PV)) {
				float alpha[2];
				attn_pscale<BW>(s[mt], pe[mt], alpha);
				attn_rescale<DV>(o[mt], alpha);
			}
#else
			/* p = 2^(scale s - mb): scale 1 where s holds the scores */
			float mx[2], scale[2] = {full && lin ? a2[mt][0] : 1.0f, full && lin ? a2[mt][1] : 1.0f};
			if (full && lin)
				attn_scores<0, 1, BW>(A, R[mt], ir[mt], a2[mt], s[mt], mx, kb + wk * BW, jn, cls, t);
			else if (full)
				attn_scores<0, 0, BW>(A, R[mt], ir[mt], a2[mt], s[mt], mx, kb + wk * BW, jn, cls, t);
			else
				attn_scores<1, 0, BW>(A, R[mt], ir[mt], a2[mt], s[mt], mx, kb + wk * BW, jn, cls, t);
			float alpha[2], mb[2];
#pragma unroll
			for (int hf = 0; hf < 2; hf++) {
				float mn = fmaxf(m[mt][hf], mx[hf]);
				mb[hf] = mn == -ASC_INF ? 0.0f : mn; /* an empty row so far: p = 0, no NaN */
				alpha[hf] = asc_exp2(m[mt][hf] - mb[hf]);
				m[mt][hf] = mn;
				l[mt][hf] *= alpha[hf];
			}
			if (MT > 1)
				attn_rescale<DV>(o[mt], alpha);
#endif
#pragma unroll
			for (int nt = 0; nt < BW / 8; nt++) {
				float p[4];
#pragma unroll
				for (int c = 0; c < 4; c++) {
#if ATTN_SUM
					p[c] = s[mt][nt][c];
#else
					p[c] = asc_exp2(fmaf(s[mt][nt][c], scale[c / 2], -mb[c / 2]));
					l[mt][c / 2] += p[c];
#endif
				}
#pragma unroll
				for (int r = 0; r < PV; r++)
#pragma unroll
					for (int x = 0; x < 2; x++) {
						unsigned wd = asc_pack2<BF>(p[2 * x], p[2 * x + 1]);
						pf[mt][r][nt / 2][2 * (nt & 1) + x] = wd;
						p[2 * x] -= asc_half_lo<BF>(wd);
						p[2 * x + 1] -= asc_half_hi<BF>(wd);
					}
			}
#if !ATTN_SUM
			/* One tile a warp: o rescaled after P, where S is P's
			 * packed registers; before, the branch held S's scores
			 * beside o and Q, and ptxas spilled at 128 registers.  Two
			 * or more: before, where they took fewer registers. */
			if (MT == 1)
				attn_rescale<DV>(o[mt], alpha);
#endif
		}
		if (NS == 1) {
			kn = attn_next(A, i0, i1, kb + BN, hi, BN, &cn, batch);
			asc_cp_wait<0>();
			__syncthreads(); /* V has landed everywhere; every warp is done with K */
			if (kn < hi) {
				attn_load_keys<NT, BN, D / 2, KW>(Sm, 0, kp, kn, hi, as, A, batch);
				asc_cp_commit();
			}
		}
		/* B fragments of V for value columns dn, dn + 1 (.trans: V stays
		 * row-major): lane l reads key 16 kk + l % 16, columns 8 (dn + l / 16) on */
#pragma unroll
		for (int kk = 0; kk < BW / 16; kk++)
#pragma unroll
			for (int dn = 0; dn < DV / 8; dn += 2) {
				unsigned b[4];
				asc_ldsm<4, 1>(b, Sm, stg * ST + va + 16 * kk * VW + dn * 4);
				unsigned b0[2] = {b[0], b[1]}, b1[2] = {b[2], b[3]};
#pragma unroll
				for (int mt = 0; mt < MT; mt++)
#pragma unroll
					for (int r = 0; r < PV; r++) {
						asc_mma_16816<BF>(o[mt][dn], pf[mt][r][kk], b0);
						asc_mma_16816<BF>(o[mt][dn + 1], pf[mt][r][kk], b1);
					}
			}
		kb = kn, cls = cn;
		if (NS == 3)
			kn = k2, cn = c2, stg = stg == 2 ? 0 : stg + 1;
		else
			stg ^= NS - 1;
	}
	/* The row's state: m back to the score's units (a weighted sum's: summed
	 * over the quad), l summed over the quad.
	 * The run's first row again from the block index (read opaquely, so
	 * that it is not merged with the one above): held across the loop, its
	 * 64 bits spill at 32 rows a warp and head dim 128. */
#if ATTN_PAGED /* a paged batch's sequence: its outputs' pointers derived again */
	Args A2;
	if (batch) {
		attn_paged_seq<DV>(*batch, A2, true);
		M = G * A2.rows, tiles = (M + BM - 1) / BM; /* not held across the loop either */
	}
	const Args &AO = batch ? A2 : A;
#else
	const Args &AO = A;
#endif
	{
		int q2, k2;
		attn_tile_of<D, DV>(AO, attn_block(), tiles, q2, k2);
		base = (long long)k2 * M;
	}
#if ATTN_SUM
	if (ATTN_PSCALE(BF, PV))
#pragma unroll
		for (int mt = 0; mt < MT; mt++)
			attn_pscale_out<DV>(o[mt], pe[mt]);
#endif
	if (KS > 1)
		attn_merge_slices<MT, DV, KS>(Sm, o, m, l, w, wk, lane);
#pragma unroll
	for (int mt = 0; mt < MT && wk == 0; mt++)
#pragma unroll
		for (int hf = 0; hf < 2; hf++)
			attn_row_out<DV>(AO, R[mt][hf], m[mt][hf], l[mt][hf], o[mt], hf, r0 + mt * 16 + g + 8 * hf, M, base,
					 ir[mt][hf], sp, t);
	if (MT == 1 && AO.split > 1)
		attn_split_last<D, DV, NT, BM>(AO);
}
