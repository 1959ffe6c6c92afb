/* rowreduce.cuh: one state per row, then finalize.
 *
 * Layout: element inputs [rows][len], column inputs [len], row inputs
 * [rows]; finalize outputs [rows].  Reduced axis: the last one.
 * Identity: identity(); masked and out-of-row positions contribute it.
 * Launch: blockDim.x = NT (a multiple of 32).  WARP_ROW: a warp per row,
 * grid = ceil(rows / (NT / 32)) (short rows); otherwise a block per row,
 * grid = rows.  Global traffic: one read of each element input.  UN, TF:
 * the row loop's tiles (templates/blocks.cuh: thread_fold_at). */
template <int NT, int ACC, int VEC, int WARP_ROW, int UN = 1, int TF = 0>
ASC_DEV void rowreduce(const Args &P)
{
	const Args A = P; /* its fields in registers: P, whose address the row loops take, would be read again after every store */
	if (WARP_ROW) {
		int i = blockIdx.x * (NT / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
		if (i >= A.rows) /* the whole warp leaves together */
			return;
		Row R = load_row(A, i);
		State s = warp_reduce(P, thread_fold<32, ACC, VEC, UN, TF>(P, R, i, lane, 0, A.len));
		if (lane == 0)
			finalize_row(P, R, s, i);
		return;
	}
	int i = blockIdx.x;
	Row R = load_row(A, i);
	State s = block_reduce<NT>(P, thread_fold<NT, ACC, VEC, UN, TF>(P, R, i, threadIdx.x, 0, A.len));
	if (threadIdx.x == 0)
		finalize_row(P, R, s, i);
}
