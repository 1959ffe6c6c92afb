/* rowmap.cuh: reduce each row to its state, finalize, then a second pass
 * writing the map outputs of every position (masked or not).
 *
 * Layout: as rowreduce; map outputs [rows][len].  Launch: blockDim.x = NT
 * (a multiple of 32); WARP_ROW: a warp per row, grid = ceil(rows / (NT/32));
 * otherwise a block per row, grid = rows.
 * ITEMS > 0 keeps the row on chip, in shared memory (ITEMS elements per
 * thread, NT * ITEMS per block; 1 read and 1 write per element); needs
 * len <= ITEMS * threads per row.  ITEMS == 0 re-reads the row in the
 * second pass (2 reads and 1 write per element).  UN, TF: the row loops'
 * tiles (templates/blocks.cuh: thread_fold_at, map_pass_at). */
template <int NT, int ACC, int VEC, int WARP_ROW, int ITEMS, int UN = 1, int TF = 0>
ASC_DEV void rowmap(const Args &P)
{
	const Args A = P; /* its fields in registers: P, whose address the row loops take, would be read again after every store */
	const int T = WARP_ROW ? 32 : NT;
	int i = WARP_ROW ? blockIdx.x * (NT / 32) + threadIdx.x / 32 : blockIdx.x;
	int t = WARP_ROW ? threadIdx.x % 32 : threadIdx.x;
	if (i >= A.rows) /* WARP_ROW only: the whole warp leaves together */
		return;
	Row R = load_row(A, i);
	Stash stash = 0;
	int sb = WARP_ROW ? threadIdx.x / 32 * 32 * ITEMS : 0; /* a warp's own part of the block's stash */
	if (ITEMS > 0) {
		ASC_SHARED(Elem, kept, ITEMS > 0 ? NT * ITEMS : 1);
		stash = STASH_OF(kept);
	}
	State acc = thread_fold<T, ACC, VEC, UN, TF>(P, R, i, t, 0, A.len, stash, sb);
	State s = WARP_ROW ? shfl_idx(warp_reduce(P, acc), 0) : block_reduce<NT>(P, acc);
	if (t == 0)
		finalize_row(P, R, s, i);
	map_pass<T, VEC, UN>(P, R, s, i, t, 0, A.len, stash, sb);
}
