/* scan.cuh: the inclusive prefix of the carrier along each row; finalize
 * gives one output per position.
 *
 * Layout: element inputs [rows][len]; finalize outputs [rows][len].
 * Chunks as in splitk (A.split per row, A.chunk positions each):
 *   splitk_partial   chunk reduce: the state of each chunk into ws[b]
 *   scan_carry       one thread per row: ws[i*split + c] becomes the fold of
 *                    chunks 0..c-1 of the row (exclusive, in chunk order)
 *   scan_down        grid = rows * split, blockDim.x = NT: the down-sweep of
 *                    one chunk from its carry-in, in tiles of NT * ITEMS
 *                    positions; thread t owns ITEMS consecutive positions of
 *                    a tile, lanes scan with shfl_up, warps through shared
 *                    memory, always merging earlier states on the left.
 * With split == 1 only scan_down runs (carry-in: the identity). */
template <int NT>
ASC_DEV void scan_carry(const Args &P)
{
	const Args A = P; /* its fields in registers: P, whose address the row loops take, would be read again after every store */
	int i = blockIdx.x * NT + threadIdx.x;
	if (i >= A.rows)
		return;
	State *ws = (State *)A.ws + (long long)i * A.split;
	State run = identity();
	for (int c = 0; c < A.split; c++) {
		State part = ws[c];
		ws[c] = run;
		run = merge(A, run, part);
	}
}

template <int NT, int ITEMS>
ASC_DEV void scan_down(const Args &P)
{
	const Args A = P; /* its fields in registers: P, whose address the row loops take, would be read again after every store */
	int i = blockIdx.x / A.split, c = blockIdx.x % A.split;
	unsigned at = (unsigned)c * (unsigned)A.chunk; /* past 2^31 - 1 near the end of a long row, under 2^32 */
	int lo = at < (unsigned)A.len ? (int)at : A.len;
	int hi = A.len - lo > A.chunk ? lo + A.chunk : A.len;
	int t = threadIdx.x, lane = t % 32, w = t / 32;
	Row R = load_row(A, i);
	State carry = identity();
	if (A.split > 1)
		carry = ((const State *)A.ws)[blockIdx.x];
	ASC_SHARED(State, wagg, NT / 32);
	for (int base = lo; base < hi; base += NT * ITEMS) {
		Elem E[ITEMS];
		State a = identity();
#pragma unroll
		for (int k = 0; k < ITEMS; k++) {
			int j = base + t * ITEMS + k;
			if (j < hi) {
				E[k] = load_elem(A, i, j);
				step(A, R, E[k], i, j, a);
			}
		}
#pragma unroll
		for (int o = 1; o < 32; o <<= 1) {
			State u = shfl_up(a, o);
			if (lane >= o)
				a = merge(A, u, a);
		}
		State ex = shfl_up(a, 1);
		if (lane == 31)
			wagg[w] = a;
		__syncthreads();
		State pre = carry, tot = carry;
		for (int v = 0; v < NT / 32; v++) {
			State g = wagg[v];
			if (v < w)
				pre = merge(A, pre, g);
			tot = merge(A, tot, g);
		}
		if (lane > 0)
			pre = merge(A, pre, ex);
		__syncthreads(); /* wagg is rewritten by the next tile */
#pragma unroll
		for (int k = 0; k < ITEMS; k++) {
			int j = base + t * ITEMS + k;
			if (j < hi) {
				step(A, R, E[k], i, j, pre);
				finalize(A, R, pre, i, (long long)i * A.len + j);
			}
		}
		carry = tot;
	}
}
