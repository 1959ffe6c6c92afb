/* rowcluster.cuh: a long row across a thread-block cluster (sm_90).
 *
 * Layout: as rowreduce; MAP: map outputs [rows][len], as rowmap.  Launch:
 * blockDim.x = NT, grid = rows * CL in clusters of CL blocks (x), block b
 * on row b / CL as cluster rank b % CL.  The row is cut into CL chunks of
 * A.chunk positions (a multiple of 4; the 16-byte loop takes a chunk at
 * any start, past its head): rank r takes [r * chunk, min((r + 1) *
 * chunk, len)), empty where the row is short.  Each block folds its chunk, keeping its
 * elements in shared memory where ITEMS > 0 (NT * ITEMS of them: needs
 * chunk <= NT * ITEMS, len <= CL * NT * ITEMS), and leaves its state in
 * its shared memory; after a cluster barrier thread 0 of every block reads
 * the CL states through distributed shared memory and merges them in rank
 * order, the order of the chunks (so the merge need not commute).  Rank 0
 * finalizes; with MAP every block then writes its chunk's outputs from its
 * kept elements, so that the row is read from HBM once (ITEMS == 0 reads
 * the chunk again).  Every thread arrives at a second cluster barrier once
 * its block has read the peers' states and waits for it at the end: no
 * block exits while a peer may still read its state.  UN, TF: the row
 * loops' tiles (templates/blocks.cuh: thread_fold_at, map_pass_at). */
template <int NT, int ACC, int VEC, int CL, int MAP, int ITEMS, int UN = 1, int TF = 0>
ASC_DEV void rowcluster(const Args &P)
{
	const Args A = P; /* its fields in registers: P, whose address the row loops take, would be read again after every store */
	int r = (int)asc_cluster_rank(), i = blockIdx.x / CL, t = threadIdx.x;
	if (i >= A.rows) /* a launch of no rows (one cluster): the whole cluster leaves together */
		return;
	long long at = (long long)r * A.chunk;
	int lo = at < A.len ? (int)at : A.len;
	int hi = A.len - lo > A.chunk ? lo + A.chunk : A.len;
	Row R = load_row(A, i);
	Stash stash = 0;
	if (ITEMS > 0) {
		ASC_SHARED(Elem, kept, ITEMS > 0 ? NT * ITEMS : 1);
		stash = STASH_OF(kept);
	}
	State s = block_reduce<NT>(P, thread_fold<NT, ACC, VEC, UN, TF>(P, R, i, t, lo, hi, stash, 0));
	ASC_SHARED(State, part, 2); /* this block's state; the row's */
	if (t == 0)
		part[0] = s;
	asc_cluster_sync();
	if (t == 0) {
		State row = asc_dsmem_ld<State>(part, 0, 0);
#pragma unroll 1 /* a chain of merges in rank order */
		for (int k = 1; k < CL; k++)
			row = merge(A, row, asc_dsmem_ld<State>(part, 0, (unsigned)k));
		if (MAP)
			part[1] = row;
		if (r == 0)
			finalize_row(P, R, row, i);
	}
	asc_cluster_arrive();
	if (MAP) {
		__syncthreads();
		State row = part[1];
		map_pass<NT, VEC, UN>(P, R, row, i, t, lo, hi, stash, 0);
	}
	asc_cluster_wait();
}
