/* blocks.cuh: building blocks shared by the row templates.
 *
 * Hooks from the generated carrier (compiler/cuda/cuda.c): State, Row, Elem,
 * identity(), merge(A, a, b), lift(A, R, E, i, j), keep(A, R, E, i, j)
 * (false for a masked element, which contributes the identity),
 * load_row(A, i), load_elem(A, i, j), load_elem4(A, i, j, E[4]) and
 * vec_ok(A) (every element input's base at a multiple of 4 elements:
 * 16-byte loads are legal from a position whose index i * len + j is a
 * multiple of 4), vec_out_ok(A) (the same of the f32 map outputs),
 * finalize(A, R, s, i, at), map(A, R, E, s, i, j), map4(A, R, E4, s, i,
 * j4), shfl_down/shfl_up/shfl_idx(s, k), ASC_ORDERED, ASC_ROW_CALLS.
 *
 * Order: merge(a, b) always has a's elements before b's.  Where the carrier
 * is not known to commute (ASC_ORDERED), each thread folds one contiguous
 * segment, lanes merge with increasing distance (lane l, a multiple of 2o,
 * merges [l, l+o) with [l+o, l+2o)), and warps in warp order, so the
 * result is the left fold of the row in some bracketing. */

ASC_DEV void step(const Args &A, const Row &R, const Elem &E, int i, int j, State &acc)
{
	if (keep(A, R, E, i, j))
		acc = merge(A, acc, lift(A, R, E, i, j));
}

/* The once-per-row functions below are compiled once for the module where
 * the state passes in registers (ASC_ROW_CALLS), and inlined where a call
 * would pass it through the stack. */
#if ASC_ROW_CALLS
#define ASC_ROW_FN ASC_FN
#else
#define ASC_ROW_FN ASC_DEV
#endif

/* The row loops (thread_fold_at, map_pass_at) are compiled once for a
 * module of several variants (ASC_LOOP_CALLS), which its kernels call;
 * a module of one variant, as a run compiles it, has one call of each,
 * which is inlined: ptxas then allocates the kernel's registers as a
 * whole, where for a call it chose a budget first and fitted the loop
 * to it (odd_vectors' 512 threads with one accumulator: 40 registers,
 * 8 bytes spilled; inlined, as many and none). */
#if ASC_LOOP_CALLS
#define ASC_LOOP_FN ASC_FN
#else
#define ASC_LOOP_FN ASC_DEV
#endif

/* Lane 0 ends with the fold of the warp's 32 states, in lane order.  Once
 * per row: a loop of one merge, not five copies of it, compiled once for
 * the module (ASC_ROW_FN, where the state is small) rather than once in
 * every kernel that reduces (NVRTC's time grows with every copy of the
 * carrier's code).  pA: the kernel parameter's address, as thread_fold_at. */
ASC_ROW_FN State warp_reduce_at(asc_uptr pA, State s)
{
	const Args A = *(const Args *)pA;
	int lane = threadIdx.x % 32;
#pragma unroll 1
	for (int o = 1; o < 32; o <<= 1) {
		State t = shfl_down(s, o);
		if ((lane & (2 * o - 1)) == 0)
			s = merge(A, s, t);
	}
	return s;
}

/* P: the kernel parameter itself (a copy's address would put the copy in
 * local memory). */
ASC_DEV State warp_reduce(const Args &P, State s) { return warp_reduce_at((asc_uptr)&P, s); }

/* finalize once per row, compiled once for the module as warp_reduce_at:
 * the row templates call it from one thread per row. */
ASC_ROW_FN void finalize_at(asc_uptr pA, const Row R, const State s, int i, long long at)
{
	const Args A = *(const Args *)pA;
	finalize(A, R, s, i, at);
}

ASC_DEV void finalize_row(const Args &P, const Row &R, const State &s, int i) { finalize_at((asc_uptr)&P, R, s, i, i); }

/* Every thread of the block gets the fold of all NT states, in thread
 * order.  blockDim.x == NT, NT % 32 == 0; every thread must call it. */
template <int NT>
ASC_DEV State block_reduce(const Args &P, State s)
{
	s = warp_reduce(P, s);
	if (NT == 32)
		return shfl_idx(s, 0);
	ASC_SHARED(State, red, NT / 32 + 1);
	int w = threadIdx.x / 32, lane = threadIdx.x % 32;
	if (lane == 0)
		red[w] = s;
	__syncthreads();
	if (w == 0) {
		State t = identity();
		if (lane < NT / 32)
			t = red[lane];
		t = warp_reduce(P, t);
		if (lane == 0)
			red[NT / 32] = t;
	}
	__syncthreads();
	State r = red[NT / 32];
	__syncthreads(); /* red is reused by the next reduction */
	return r;
}

/* Where a row stays on chip (rowmap's ITEMS), the row loops keep its
 * elements in shared memory: thread_fold_at writes each element it loads
 * to the stash and map_pass_at reads it back, laid out so that a warp's
 * accesses are to consecutive elements (no bank conflicts for 4-byte
 * elements): element v of 16-byte group g at stash[sb + v * groups + g],
 * the tail's position j at stash[sb + j - lo] (past the groups), and the
 * head's h positions in the h slots before the tail's (lo + k at
 * stash[sb + 4 * groups + k]), so that the hi - lo positions take slots
 * sb to sb + hi - lo - 1 whatever the head; and the k-th
 * position of an ordered carrier's segment at stash[sb + k * NT + t]
 * (below NT * ceil(len / NT), within the stash where len fits).  Each
 * position is read back by the thread that wrote it (both loops give a
 * thread the same positions), so no barrier is needed between them.  In
 * shared memory rather than in registers, the row loops stay loops: one
 * copy of the carrier's code per loop, not one per kept element.  Stash is
 * a null pointer where the row is read again from global memory. */
#ifdef ASSOC_EMU
typedef EmuShared<Elem> *Stash;
#define STASH(p, k) (*(p))[k]
#define STASH_OF(a) (&(a))
#else
typedef Elem *Stash;
/* said at each access, so that the stores and loads are st.shared and
 * ld.shared inside the row loops, which cannot know it of a parameter */
ASC_DEV Elem *stash_at(Stash p, int k)
{
	__builtin_assume(__isShared(p));
	return p + k;
}
#define STASH(p, k) (*stash_at(p, k))
#define STASH_OF(a) (a)
#endif

/* Where order matters, thread t of NT folds the contiguous segment [b, e)
 * of positions [lo, hi), and the map pass takes the same one. */
ASC_DEV void segment(int t, int NT, int lo, int hi, int &b, int &e)
{
	int seg = (hi - lo + NT - 1) / NT;
	b = lo + t * seg;
	e = b + seg < hi ? b + seg : hi;
}

/* The 16-byte loops' head of positions [lo, hi) of row i: the positions
 * before the first whose index in the buffers, i * len + j, is a multiple
 * of 4 (3 at most; all of them where the range ends first).  vec_ok holds
 * every element input's base, and vec_out_ok every f32 map output's, at a
 * multiple of 4 elements, so that this position starts a 16-byte aligned
 * group in every f32 buffer and an 8-byte aligned one in every 16-bit
 * one: one head for all of them, whatever the row's length. */
ASC_DEV int vec_head(const Args &A, int i, int lo, int hi)
{
	int h = (int)(-((long long)i * A.len + lo) & 3);
	return h < hi - lo ? h : hi - lo;
}

/* Fold positions [lo, hi) of row i as thread t of NT: a contiguous segment
 * where order matters; otherwise strided (coalesced) with ACC independent
 * accumulators, and 16-byte loads of 4 elements where the bases allow
 * (vec_ok), at any length and any lo: the head (vec_head) and the tail,
 * fewer than 4 positions each, go through the scalar loop, one loop for
 * both, so that the carrier's code has no further copy.
 * Each step of the loop loads a tile of UN * ACC groups (of 4 elements,
 * or of one in the scalar loop) before it folds any of them: UN * ACC
 * loads of each thread in flight at once, which is what keeps HBM busy
 * (Little's law: tens of KB an SM).  TF (where the carrier's certificate
 * is proved, ASC_TRANSPORT): the tile is folded in the certificate's
 * coordinates by tile_fold, one merge a tile instead of one an element
 * (the scalar loop's tiles are then 4 UN * ACC elements, as many as the
 * 16-byte loop's).
 * Compiled once per (ACC, VEC, UN, TF) for all the module's kernels as
 * thread_fold_at (ASC_LOOP_FN), with NT a value; in the SASS each kernel
 * calls its own copy, once per row, outside the row loop. */
template <int ACC, int VEC, int UN = 1, int TF = 0>
ASC_DEV State thread_fold_in(asc_uptr pA, const Row R, int i, int t, const int NT, int lo, int hi, Stash stash,
			     int sb)
{
	const Args A = *(const Args *)pA;
	/* the segment's loop only where order matters: NVRTC's optimizer
	 * would work on it before it found it dead (0.6% of its work for
	 * online softmax's variant) */
#if ASC_ORDERED
	{
		int b, e;
		segment(t, NT, lo, hi, b, e);
		State acc = identity();
		for (int j = b; j < e; j++) {
			Elem E = load_elem(A, i, j);
			if (stash) /* k-th of the segment at k * NT + t: a warp's stores to consecutive elements */
				STASH(stash, sb + (j - b) * NT + t) = E;
			step(A, R, E, i, j, acc);
		}
		return acc;
	}
#endif
	const int G = UN * ACC, TFT = TF && ASC_TRANSPORT;
	State acc[ACC];
#pragma unroll
	for (int a = 0; a < ACC; a++)
		acc[a] = identity();
	/* ng groups of 4 from lo + h, folded after the positions outside
	 * them: the groups' loop, which holds the larger tiles, then keeps
	 * only g0 and ng of the bounds live (ptxas held some kernels to 80
	 * registers and spilled where it kept more) */
	int h = 0, ng = 0;
	if (VEC == 4 && vec_ok(A)) {
		h = vec_head(A, i, lo, hi);
		ng = (hi - lo - h) / 4;
	}
	/* The positions outside the groups in one loop, so that the carrier's
	 * code has no further copy: the tail's, and the head's as the h
	 * virtual positions before the tail (lo + 4 ng + k standing for lo +
	 * k), which are the first iteration's first positions of threads t <
	 * h (h < 4 <= NT): their real position is fix away.  Virtual position
	 * j keeps stash slot sb + j - lo, past the groups' 4 ng.  The tile is
	 * this loop's parallelism: unrolling it further only multiplies the
	 * carrier's code, and NVRTC's time with it. */
	const int GS = TFT ? 4 * G : G;
#pragma unroll 1
	for (int j = lo + 4 * ng + t, fix = t < h ? -4 * ng : 0; j < hi; j += NT * GS, fix = 0) {
		Elem E[GS];
		int J[GS];
		bool L[GS];
#pragma unroll
		for (int a = 0; a < GS; a++) {
			J[a] = j + a * NT + (a == 0 ? fix : 0), L[a] = j + a * NT < hi;
			if (L[a])
				E[a] = load_elem(A, i, J[a]);
		}
#pragma unroll
		for (int a = 0; a < GS; a++)
			if (stash && L[a])
				STASH(stash, sb + j + a * NT - lo) = E[a];
		State s;
		if (TFT && tile_fold<GS>(A, R, i, E, J, L, s)) {
			acc[0] = merge(A, acc[0], s);
			continue;
		}
#pragma unroll
		for (int a = 0; a < GS; a++)
			if (L[a])
				step(A, R, E[a], i, J[a], acc[a % ACC]);
	}
	if (VEC == 4) {
		const int g0 = lo + h;
		for (int g = t; g < ng; g += NT * G) {
			Elem E[G * 4];
			int J[G * 4];
			bool L[G * 4];
#pragma unroll
			for (int a = 0; a < G; a++) { /* every load of the tile before any use */
				int gg = g + a * NT;
#pragma unroll
				for (int v = 0; v < 4; v++)
					L[4 * a + v] = gg < ng, J[4 * a + v] = g0 + 4 * gg + v;
				if (gg < ng)
					load_elem4(A, i, g0 + 4 * gg, &E[4 * a]);
			}
#pragma unroll
			for (int a = 0; a < G; a++)
				if (stash && L[4 * a]) /* v-major: the lanes' stores are to consecutive words */
#pragma unroll
					for (int v = 0; v < 4; v++)
						STASH(stash, sb + v * ng + g + a * NT) = E[4 * a + v];
			State s;
			if (TFT && tile_fold<G * 4>(A, R, i, E, J, L, s)) {
				acc[0] = merge(A, acc[0], s);
				continue;
			}
#pragma unroll
			for (int k = 0; k < G * 4; k++)
				if (L[k])
					step(A, R, E[k], i, J[k], acc[k / 4 % ACC]);
		}
	}
	State s = acc[0];
#pragma unroll
	for (int a = 1; a < ACC; a++)
		s = merge(A, s, acc[a]);
	return s;
}

template <int ACC, int VEC, int UN = 1, int TF = 0>
ASC_LOOP_FN State thread_fold_at(asc_uptr pA, const Row R, int i, int t, const int NT, int lo, int hi,
				 Stash stash, int sb)
{
	return thread_fold_in<ACC, VEC, UN, TF>(pA, R, i, t, NT, lo, hi, stash, sb);
}

/* A: the kernel parameter itself (a copy's address would put the copy in
 * local memory). */
template <int NT, int ACC, int VEC, int UN = 1, int TF = 0>
ASC_DEV State thread_fold(const Args &A, const Row &R, int i, int t, int lo, int hi, Stash stash = 0, int sb = 0)
{
	return thread_fold_at<ACC, VEC, UN, TF>((asc_uptr)&A, R, i, t, NT, lo, hi, stash, sb);
}

/* Map outputs of positions [lo, hi) of row i with the row's final state,
 * its elements read again or, with a stash, taken from where
 * thread_fold_at put them (the same positions for the same thread);
 * compiled once per (VEC, UN), as thread_fold_at.  Read again, the row
 * goes four elements at a time with UN loads in flight, two at least.
 * ASC_MAP_STASH (compiler/cuda/cuda_mod.c): 1 where every map pass of the
 * module has a stash, 0 where none has, -1 where some have: a module of
 * one kernel, the variant a run compiles first, then holds one of the two
 * paths, which spares NVRTC a copy of the carrier's map code (online
 * softmax: 7% of its time), and a module of many keeps one copy of this
 * function for all its kernels. */
template <int VEC, int UN = 1>
ASC_LOOP_FN void map_pass_at(asc_uptr pA, const Row R, const State s, int i, int t, const int NT, int lo,
			     int hi, Stash stash, int sb)
{
	const Args A = *(const Args *)pA;
	const bool stashed = ASC_MAP_STASH < 0 ? stash != 0 : ASC_MAP_STASH > 0;
#if ASC_ORDERED /* as in thread_fold_at */
	if (stashed) { /* thread_fold_at's contiguous segment */
		int b, e;
		segment(t, NT, lo, hi, b, e);
		for (int j = b; j < e; j++)
			map(A, R, STASH(stash, sb + (j - b) * NT + t), s, i, j);
		return;
	}
#endif
	/* a stash is read in the layout thread_fold_at chose, on vec_ok alone;
	 * its groups then go out four at a time where the outputs allow */
	int h = 0, ng = 0;
	if (VEC == 4 && vec_ok(A) && (stashed || vec_out_ok(A))) {
		h = vec_head(A, i, lo, hi);
		ng = (hi - lo - h) / 4;
	}
	/* the head and the tail, each virtual position as thread_fold_at's */
	for (int j = lo + 4 * ng + t, fix = t < h ? -4 * ng : 0; j < hi; j += NT, fix = 0) {
		Elem E = stashed ? (Elem)STASH(stash, sb + j - lo) : load_elem(A, i, j + fix);
		map(A, R, E, s, i, j + fix);
	}
	if (VEC == 4 && ng > 0) {
		const int g0 = lo + h;
		if (stashed) {
			bool vo = vec_out_ok(A);
			for (int g = t; g < ng; g += NT) {
				Elem E[4];
#pragma unroll
				for (int v = 0; v < 4; v++)
					E[v] = STASH(stash, sb + v * ng + g);
				if (vo)
					map4(A, R, E, s, i, g0 + 4 * g);
				else
#pragma unroll
					for (int v = 0; v < 4; v++)
						map(A, R, E[v], s, i, g0 + 4 * g + v);
			}
		} else {
			/* every group's loads before any group's stores, which the
			 * compiler may not move them past (the output could alias
			 * the input as far as it knows): GM 16-byte loads in flight */
			const int GM = UN > 2 ? UN : 2;
			for (int g = t; g < ng; g += GM * NT) {
				Elem E[GM][4];
#pragma unroll
				for (int u = 0; u < GM; u++)
					if (g + u * NT < ng)
						load_elem4(A, i, g0 + 4 * (g + u * NT), E[u]);
#pragma unroll
				for (int u = 0; u < GM; u++)
					if (g + u * NT < ng)
						map4(A, R, E[u], s, i, g0 + 4 * (g + u * NT));
			}
		}
	}
}

template <int NT, int VEC, int UN = 1>
ASC_DEV void map_pass(const Args &A, const Row &R, const State &s, int i, int t, int lo, int hi, Stash stash = 0,
		      int sb = 0)
{
	map_pass_at<VEC, UN>((asc_uptr)&A, R, s, i, t, NT, lo, hi, stash, sb);
}
