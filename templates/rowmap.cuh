/* rowmap.cuh: reduce each row to its state, finalize, then a second pass
 * writing the map outputs of every position (masked or not).
 *
 * Layout: as rowreduce; map outputs [rows][len].  Launch: blockDim.x = NT
 * (a multiple of 32); WARP_ROW: a warp per row, grid = ceil(rows / (NT/32));
 * otherwise a block per row, grid = rows.
 * ITEMS > 0 keeps the row on chip: each thread holds ITEMS elements in
 * registers between the passes (1 read and 1 write per element); needs
 * len <= ITEMS * threads per row.  ITEMS == 0 re-reads the row in the
 * second pass (2 reads and 1 write per element). */
template <int NT, int ACC, int VEC, int WARP_ROW, int ITEMS>
ASC_DEV void rowmap(const Args &P)
{
	const Args A = P; /* its fields in registers: P, whose address the row loops take, would be read again after every store */
	const int T = WARP_ROW ? 32 : NT;
	int i = WARP_ROW ? blockIdx.x * (NT / 32) + threadIdx.x / 32 : blockIdx.x;
	int t = WARP_ROW ? threadIdx.x % 32 : threadIdx.x;
	if (i >= A.rows) /* WARP_ROW only: the whole warp leaves together */
		return;
	Row R = load_row(A, i);
	State s;
	if (ITEMS > 0) {
		Elem E[ITEMS > 0 ? ITEMS : 1];
		State acc = identity();
#pragma unroll
		for (int k = 0; k < ITEMS; k++) {
			int j = ASC_ORDERED ? t * ITEMS + k : k * T + t;
			if (j < A.len) {
				E[k] = load_elem(A, i, j);
				step(A, R, E[k], i, j, acc);
			}
		}
		s = WARP_ROW ? shfl_idx(warp_reduce(P, acc), 0) : block_reduce<NT>(P, acc);
		if (t == 0)
			finalize_row(P, R, s, i);
#pragma unroll
		for (int k = 0; k < ITEMS; k++) {
			int j = ASC_ORDERED ? t * ITEMS + k : k * T + t;
			if (j < A.len)
				map(A, R, E[k], s, i, j);
		}
		return;
	}
	State acc = thread_fold<T, ACC, VEC>(P, R, i, t, 0, A.len);
	s = WARP_ROW ? shfl_idx(warp_reduce(P, acc), 0) : block_reduce<NT>(P, acc);
	if (t == 0)
		finalize_row(P, R, s, i);
	map_pass<T, VEC>(P, R, s, i, t, 0, A.len);
}
