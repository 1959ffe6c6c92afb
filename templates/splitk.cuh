/* splitk.cuh: long rows, few rows.  Each row is cut into A.split chunks of
 * A.chunk positions (chunk c: [c * chunk, min((c + 1) * chunk, len))).
 *
 * splitk_partial: grid = rows * split, blockDim.x = NT; block b folds chunk
 *   b % split of row b / split and writes its state to ws[b].
 * splitk_combine: one thread per row (blockDim.x = NT, grid = ceil(rows /
 *   NT)); merges the row's partial states in chunk order (results do not
 *   depend on timing), stores the row state at ws[rows * split + i] and
 *   finalizes.
 * splitk_map: grid = rows * split; writes the map outputs of one chunk
 *   with the row state from ws.
 * Workspace: rows * (split + 1) states.  UN, TF: the row loops' tiles
 * (templates/blocks.cuh: thread_fold_at, map_pass_at). */
template <int NT, int ACC, int VEC, int UN = 1, int TF = 0>
ASC_DEV void splitk_partial(const Args &P)
{
	const Args A = P; /* its fields in registers: P, whose address the row loops take, would be read again after every store */
	int i = blockIdx.x / A.split, c = blockIdx.x % A.split;
	unsigned at = (unsigned)c * (unsigned)A.chunk; /* past 2^31 - 1 near the end of a long row, under 2^32 */
	int lo = at < (unsigned)A.len ? (int)at : A.len;
	int hi = A.len - lo > A.chunk ? lo + A.chunk : A.len;
	Row R = load_row(A, i);
	/* the chunk's fold inlined, not the module's shared call: ptxas
	 * fitted the call to 64 registers in this kernel and spilled
	 * (odd_vectors at 256 threads: 16 bytes), where inlined it took 61
	 * and none; one more copy of the fold for the tuning space's module,
	 * none for a run's (ASC_LOOP_CALLS) */
	State s = block_reduce<NT>(P, thread_fold_in<ACC, VEC, UN, TF>((asc_uptr)&P, R, i, threadIdx.x, NT, lo, hi, 0, 0));
	if (threadIdx.x == 0)
		((State *)A.ws)[blockIdx.x] = s;
}

template <int NT>
ASC_DEV void splitk_combine(const Args &P)
{
	const Args A = P; /* its fields in registers: P, whose address the row loops take, would be read again after every store */
	int i = blockIdx.x * NT + threadIdx.x;
	if (i >= A.rows)
		return;
	State *ws = (State *)A.ws;
	State s = identity();
#pragma unroll 1 /* a chain of merges in chunk order: unrolling adds no parallelism */
	for (int c = 0; c < A.split; c++)
		s = merge(A, s, ws[i * A.split + c]);
	ws[A.rows * A.split + i] = s;
	Row R = load_row(A, i);
	finalize_row(P, R, s, i);
}

template <int NT, int VEC, int UN = 1>
ASC_DEV void splitk_map(const Args &P)
{
	const Args A = P; /* its fields in registers: P, whose address the row loops take, would be read again after every store */
	int i = blockIdx.x / A.split, c = blockIdx.x % A.split;
	unsigned at = (unsigned)c * (unsigned)A.chunk; /* past 2^31 - 1 near the end of a long row, under 2^32 */
	int lo = at < (unsigned)A.len ? (int)at : A.len;
	int hi = A.len - lo > A.chunk ? lo + A.chunk : A.len;
	Row R = load_row(A, i);
	State s = ((const State *)A.ws)[A.rows * A.split + i];
	map_pass<NT, VEC, UN>(P, R, s, i, threadIdx.x, lo, hi);
}
