/* rowbulk.cuh: a row a block, streamed through shared memory by 1D bulk
 * copies (cp.async.bulk, sm_90).
 *
 * Layout: as rowreduce; MAP: map outputs [rows][len], as rowmap.  Launch:
 * blockDim.x = NT, grid = rows, rowbulk's dynamic shared memory: a ring of
 * BK stages of C = 4 NT ACC positions (a stage holds each element input's
 * C elements after the previous input's: C * ASC_BULK_BYTES bytes), then
 * BK "full" and BK "empty" mbarriers.  Hooks (compiler/cuda/cuda_mod.c):
 * ASC_BULK_NIN element inputs of bulk_esize(k) bytes, ASC_BULK_Q positions
 * to 16 bytes of the narrowest, bulk_elem (position p of a stage).
 *
 * The row's body starts at its first position where every element input
 * is 16-byte aligned and holds a multiple of ASC_BULK_Q positions (bulk
 * copies move multiples of 16 bytes between 16-byte aligned addresses);
 * the head before it and the tail after it, fewer than ASC_BULK_Q
 * positions each, are read by ordinary loads.  The body goes in chunks of
 * C positions: thread 0 announces a chunk's bytes on its stage's full
 * barrier and issues its copies; every thread waits for the full
 * barrier, takes its positions of the stage (t, t + NT, ...: a tile of
 * 4 ACC elements, folded as thread_fold_at folds its tiles, with
 * tile_fold where TF), and arrives on the stage's empty barrier, after a
 * fence.proxy.async where the stage is to be refilled (its reads are the
 * generic proxy's, the copy's writes the async proxy's).  At
 * chunk c thread 0 refills the stage chunk c - 1 used, once every thread
 * has arrived on its empty barrier, with chunk c - 1 + BK: BK - 1 chunks
 * in flight while the threads fold one, held by the copies rather than by
 * registers.  A row whose body is shorter than a stage, or whose inputs
 * are not 16-byte aligned, is folded with ordinary loads (thread_fold_at,
 * whose 16-byte loop has a head of its own, of up to 3 positions: the
 * bulk copies' head is of 16 bytes of every input, up to 7 positions of a
 * 16-bit one).
 * Every chunk issued is waited for: no copy is in flight at the exit.
 * MAP: where the body fits in the ring (BK chunks at most) no stage is
 * refilled and the map pass takes the row from it (one read from HBM);
 * otherwise it reads the row again.  Carriers that commute only (each
 * thread's positions are strided).  ASC_BULK_UNGUARDED (the emulator's
 * tests): 1, thread 0 refills a stage without waiting on its empty
 * barrier; 2, it waits on the previous chunk's and refills the current
 * chunk's stage, which the threads are reading; 3, the threads arrive on
 * an empty barrier without the proxy fence after their reads. */
#ifndef ASC_BULK_UNGUARDED
#define ASC_BULK_UNGUARDED 0
#endif

/* Chunk c's n positions, from row position `from` on, into the stage at
 * word `at` of the ring, completing on the full barrier at word bat. */
template <class S>
ASC_DEV void bulk_issue(const Args &A, S &ring, int at, int C, long long from, int n, int bat)
{
	asc_mbar_expect_tx(ring, bat, (unsigned)n * ASC_BULK_BYTES);
#pragma unroll
	for (int k = 0; k < ASC_BULK_NIN; k++) {
		int e = bulk_esize(k);
		asc_bulk_load(ring, at, (const char *)A.in[k] + from * e, (unsigned)(n * e), ring, bat);
		at += C * e / 4;
	}
}

/* The head's and the tail's positions: thread t < Q takes head position t,
 * thread Q + u tail position u; -1 for none. */
ASC_DEV int bulk_edge(int t, int h, int tail, int len)
{
	if (t < ASC_BULK_Q)
		return t < h ? t : -1;
	int j = tail + t - ASC_BULK_Q;
	return t < 2 * ASC_BULK_Q && j < len ? j : -1;
}

template <int NT, int ACC, int VEC, int BK, int MAP, int TF = 0>
ASC_DEV void rowbulk(const Args &P)
{
	const Args A = P; /* its fields in registers, as the other row templates */
	enum { C = 4 * NT * ACC, SW = C * ASC_BULK_BYTES / 4, G = 4 * ACC };
	static_assert(C % (8 * ASC_BULK_Q) == 0, "a stage holds whole 16-byte groups of every input");
	const int TFT = TF && ASC_TRANSPORT;
	int i = blockIdx.x, t = threadIdx.x;
	if (i >= A.rows)
		return;
	ASC_DYN_SHARED(unsigned, ring);
	const int fb = BK * SW, eb = fb + 2 * BK;
	Row R = load_row(A, i);
	long long row = (long long)i * A.len;
	int h = (int)((ASC_BULK_Q - row % ASC_BULK_Q) % ASC_BULK_Q);
	bool aligned = true;
#pragma unroll
	for (int k = 0; k < ASC_BULK_NIN; k++)
		aligned = aligned && ((asc_uptr)A.in[k] & 15) == 0;
	h = h < A.len ? h : A.len;
	int nb = aligned ? (A.len - h) / ASC_BULK_Q * ASC_BULK_Q : 0;
	if (nb < C) { /* short (or unaligned) rows: ordinary loads */
		State s = block_reduce<NT>(P, thread_fold<NT, ACC, VEC, 1, TF>(P, R, i, t, 0, A.len));
		if (t == 0)
			finalize_row(P, R, s, i);
		if (MAP)
			map_pass<NT, VEC>(P, R, s, i, t, 0, A.len);
		return;
	}
	int nch = (nb + C - 1) / C, tail = h + nb;
	State acc[ACC];
#pragma unroll
	for (int a = 0; a < ACC; a++)
		acc[a] = identity();
	int je = bulk_edge(t, h, tail, A.len);
	if (je >= 0)
		step(A, R, load_elem(A, i, je), i, je, acc[0]);
	if (t == 0) {
		for (int q = 0; q < BK; q++) {
			asc_mbar_init(ring, fb + 2 * q, 1);
			asc_mbar_init(ring, eb + 2 * q, NT);
		}
		asc_mbar_fence_init();
	}
	__syncthreads();
	if (t == 0)
		for (int c = 0; c < BK && c < nch; c++)
			bulk_issue(A, ring, c * SW, C, row + h + (long long)c * C, nb - c * C < C ? nb - c * C : C, fb + 2 * c);
#pragma unroll 1
	for (int c = 0; c < nch; c++) {
		int q = c % BK, r = c - 1 + BK;
		if (t == 0 && c > 0 && r < nch) { /* the stage chunk c - 1 read, once every thread has read it */
			int p = (c - 1) % BK;
			if (ASC_BULK_UNGUARDED != 1)
				asc_mbar_wait(ring, eb + 2 * p, (unsigned)((c - 1) / BK) & 1u);
			if (ASC_BULK_UNGUARDED == 2)
				p = q;
			bulk_issue(A, ring, p * SW, C, row + h + (long long)r * C, nb - r * C < C ? nb - r * C : C, fb + 2 * p);
		}
		asc_mbar_wait(ring, fb + 2 * q, (unsigned)(c / BK) & 1u);
		int n = nb - c * C < C ? nb - c * C : C, j0 = h + c * C;
		Elem E[G];
		int J[G];
		bool L[G];
#pragma unroll
		for (int a = 0; a < G; a++) { /* the tile out of the stage, which is then free */
			int p = t + a * NT;
			J[a] = j0 + p, L[a] = p < n;
			if (L[a])
				E[a] = bulk_elem(ring, q * SW, C, p);
		}
		/* the stage refilled: these generic reads fenced off from the
		 * copy's async-proxy writes, which the arrival alone does not order */
		if (ASC_BULK_UNGUARDED != 3 && c + BK < nch)
			asc_fence_proxy_async();
		asc_mbar_arrive(ring, eb + 2 * q);
		State ts;
		if (TFT && tile_fold<G>(A, R, i, E, J, L, ts)) {
			acc[0] = merge(A, acc[0], ts);
			continue;
		}
#pragma unroll
		for (int a = 0; a < G; a++)
			if (L[a])
				step(A, R, E[a], i, J[a], acc[a % ACC]);
	}
	State s = acc[0];
#pragma unroll
	for (int a = 1; a < ACC; a++)
		s = merge(A, s, acc[a]);
	s = block_reduce<NT>(P, s);
	if (t == 0)
		finalize_row(P, R, s, i);
	if (!MAP)
		return;
	if (nch > BK) { /* stages were refilled: the row again */
		map_pass<NT, VEC>(P, R, s, i, t, 0, A.len);
		return;
	}
	if (je >= 0)
		map(A, R, load_elem(A, i, je), s, i, je);
	/* each thread its own positions of the fold (C is a multiple of NT),
	 * past the waits on their stages */
#pragma unroll 1
	for (int p = t; p < nb; p += NT) {
		int c = p / C;
		map(A, R, bulk_elem(ring, c * SW, C, p - c * C), s, i, h + p);
	}
}
