/* device_states.c: assoc_mpi.h's device functions under mpirun, on the
 * fake CUDA driver (tests/fake/fakecuda.c, whose device memory is host
 * memory) and NCCL or its absence (tests/fake/fakenccl.c), run by
 * tests/test_mpi.c:
 *
 *   ASSOC_LIBCUDA=build/libfakecuda.so ASSOC_LIBNCCL=build/libfakenccl.so \
 *     mpirun -np 3 build/mpi_device_states
 *
 * 1. a non-commutative merge (affine maps composed): the gathered and
 *    merged states equal the left-to-right merge in rank order, bit for bit;
 * 2. Welford's states of each rank's positions, gathered and merged on the
 *    device, finalized: within rounding of one process's fold;
 * 3. the two-collective form of (max, +) states against the float64 sums
 *    over every rank's keys, a rank with no key in some rows.
 * Rank 0 prints the transport and "ok"; exit 1 with what failed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/lib/assoc_mpi.h"
#include "runtime/driver.h"

static int rank, ranks;

static int bad(const char *what, const char *why)
{
	fprintf(stderr, "mpi_device_states: rank %d: %s: %s\n", rank, what, why);
	return 1;
}

/* affine maps x -> a x + b; y after x: a = ya xa, b = ya xb + yb */
static void compose(void *ctx, const void *x, const void *y, void *out)
{
	(void)ctx;
	const double *p = x, *q = y;
	double a = q[0] * p[0], b = q[0] * p[1] + q[1];
	((double *)out)[0] = a, ((double *)out)[1] = b;
}

static double affine(int c, int r, int k) { return k ? 0.25 * c - 0.125 * r : 1 + 0.5 * c + 0.0625 * r; }

static int device_copy(Rt *rt, const void *host, size_t bytes, RtPtr *p, char *why, size_t n)
{
	return rt_alloc(rt, bytes, p, why, n) || rt_upload(rt, *p, host, bytes, why, n);
}

static int affine_in_rank_order(Rt *rt)
{
	enum { ROWS = 5 };
	AssocMpi *m;
	char why[512];
	if (assoc_mpi_new(2 * sizeof(double), compose, NULL, 0, &m))
		return bad("assoc_mpi_new", "refused");
	double id[2];
	if (assoc_mpi_identity(m, 1, id) != ASSOC_EINVAL || !strstr(assoc_mpi_error(m), "assoc_mpi_new has no kernel"))
		return bad("assoc_mpi_identity without a kernel", assoc_mpi_error(m));
	if (assoc_mpi_device_open(m, MPI_COMM_WORLD, 0))
		return bad("assoc_mpi_device_open", assoc_mpi_error(m));
	double mine[ROWS][2], got[ROWS][2], want[ROWS][2];
	for (int r = 0; r < ROWS; r++) {
		mine[r][0] = affine(rank, r, 0), mine[r][1] = affine(rank, r, 1);
		want[r][0] = affine(0, r, 0), want[r][1] = affine(0, r, 1);
		for (int c = 1; c < ranks; c++) {
			double y[2] = {affine(c, r, 0), affine(c, r, 1)};
			compose(NULL, want[r], y, want[r]);
		}
	}
	RtPtr d = 0, out = 0;
	int rc = device_copy(rt, mine, sizeof mine, &d, why, sizeof why) || rt_alloc(rt, sizeof got, &out, why, sizeof why);
	if (rc)
		return bad("device memory", why);
	if (assoc_mpi_allgather_merge_device(m, ROWS, (void *)(size_t)d, (void *)(size_t)out, NULL))
		return bad("assoc_mpi_allgather_merge_device", assoc_mpi_error(m));
	if (rt_download(rt, got, out, sizeof got, why, sizeof why))
		return bad("download", why);
	if (memcmp(got, want, sizeof got))
		return bad("affine maps", "the merged states are not the rank-ordered merge");
	/* in place: merged may be the states */
	if (assoc_mpi_allgather_merge_device(m, ROWS, (void *)(size_t)d, (void *)(size_t)d, NULL) ||
	    rt_download(rt, got, d, sizeof got, why, sizeof why) || memcmp(got, want, sizeof got))
		return bad("affine maps in place", assoc_mpi_error(m));
	if (!rank)
		printf("transport: %s\n", assoc_mpi_device_transport(m));
	rt_free(rt, d);
	rt_free(rt, out);
	assoc_mpi_free(m);
	return 0;
}

static int welford_folded_and_merged(Rt *rt)
{
	enum { ROWS = 4, LEN = 3000 };
	AssocSpec *s = NULL;
	AssocKernel *k = NULL;
	AssocMpi *m = NULL;
	if (assoc_spec_load(&s, "specs/welford.yaml", NULL, 0) || assoc_compile(s, "cpu", 1, &k))
		return bad("welford", s ? assoc_spec_error(s) : "no spec");
	if (assoc_mpi_kernel(k, NULL, 0, &m) || assoc_mpi_device_open(m, MPI_COMM_WORLD, 0))
		return bad("welford handle", m ? assoc_mpi_error(m) : assoc_kernel_error(k));
	if (assoc_mpi_maxplus(m)) /* its certificate is into sums alone */
		return bad("welford", "claims a transport into (max, +)");
	static float x[ROWS * LEN], mean[ROWS], var[ROWS], mean1[ROWS], var1[ROWS];
	for (int i = 0; i < ROWS * LEN; i++)
		x[i] = (float)sin(0.37 * i) * 3 + (float)(i % 7);
	AssocBuffer one[] = {{"x", x, sizeof x}, {"mean", mean1, sizeof mean1}, {"var", var1, sizeof var1}};
	if (assoc_run(k, ROWS, LEN, one, 3, NULL, 0))
		return bad("one process", assoc_kernel_error(k));
	/* the handle keeps the kernel and its code: both freed before it,
	 * it folds, merges and finalizes with them (freed, the JIT's code
	 * would be gone) */
	assoc_kernel_free(k);
	assoc_spec_free(s);
	AssocBuffer bufs[] = {{"x", x, sizeof x}, {"mean", mean, sizeof mean}, {"var", var, sizeof var}};
	size_t sb = assoc_mpi_state_bytes(m);
	unsigned char *st = malloc(ROWS * sb), *all = malloc(ROWS * sb);
	int64_t lo = (int64_t)rank * LEN / ranks, hi = (int64_t)(rank + 1) * LEN / ranks;
	char why[512];
	RtPtr d = 0;
	/* each refusal names its cause and the bound */
	static const struct {
		int64_t len, lo, hi;
		int nbufs;
		const char *says;
	} refused[] = {{LEN, 5, 4, 3, "positions [5, 4) of a row of 3000: 0 <= lo <= hi <= len"},
		       {-1, 0, 0, 3, "shape 4 rows x -1 positions: rows and len run from 0 to 2^31 - 1"},
		       {LEN, 0, 1, -1, "-1 buffers (a count under 0)"}};
	for (size_t i = 0; i < sizeof refused / sizeof *refused; i++)
		if (assoc_mpi_fold(m, ROWS, refused[i].len, refused[i].lo, refused[i].hi, bufs, refused[i].nbufs, st) !=
			    ASSOC_EINVAL ||
		    !strstr(assoc_mpi_error(m), refused[i].says))
			return bad(refused[i].says, assoc_mpi_error(m));
	if (assoc_mpi_fold(m, ROWS, LEN, lo, hi, bufs, 3, st))
		return bad("fold", assoc_mpi_error(m));
	if (device_copy(rt, st, ROWS * sb, &d, why, sizeof why))
		return bad("device memory", why);
	if (assoc_mpi_allgather_merge_device(m, ROWS, (void *)(size_t)d, (void *)(size_t)d, NULL) ||
	    rt_download(rt, all, d, ROWS * sb, why, sizeof why))
		return bad("welford gather", assoc_mpi_error(m));
	if (assoc_mpi_finalize(m, ROWS, LEN, bufs, 3, all))
		return bad("finalize", assoc_mpi_error(m));
	for (int r = 0; r < ROWS; r++)
		if (fabsf(mean[r] - mean1[r]) > 1e-5f * fmaxf(1, fabsf(mean1[r])) ||
		    fabsf(var[r] - var1[r]) > 1e-5f * fmaxf(1, fabsf(var1[r])))
			return bad("welford", "the merged device states differ from one process");
	free(st);
	free(all);
	rt_free(rt, d);
	assoc_mpi_free(m);
	return 0;
}

static int maxplus_two_collectives(Rt *rt)
{
	enum { ROWS = 6, W = 3, KEYS = 40 };
	AssocSpec *s = NULL;
	AssocKernel *k = NULL;
	AssocMpi *m = NULL, *w = NULL;
	/* the certificates: softmax's transports into (max, +), Welford's not */
	if (assoc_spec_load(&s, "specs/online_softmax.yaml", NULL, 0) || assoc_compile(s, "cpu", 1, &k) ||
	    assoc_mpi_kernel(k, NULL, 0, &m))
		return bad("online_softmax", s ? assoc_spec_error(s) : "no spec");
	if (!assoc_mpi_maxplus(m))
		return bad("online_softmax", "its certificate is not a transport into (max, +)");
	if (assoc_mpi_new(8, compose, NULL, 0, &w) || assoc_mpi_maxplus(w))
		return bad("assoc_mpi_new", "a handle without a carrier claims (max, +)");
	assoc_mpi_free(w);
	if (assoc_mpi_device_open(m, MPI_COMM_WORLD, 0))
		return bad("device", assoc_mpi_error(m));
	/* key j of row r: score and values, every rank drawing the same; rank
	 * c holds keys [c KEYS / ranks, (c + 1) KEYS / ranks), none of row 0
	 * on rank 1 */
	float mx[ROWS], l[ROWS], o[ROWS * W];
	double want_m[ROWS], want_l[ROWS], want_o[ROWS * W];
	for (int r = 0; r < ROWS; r++) {
		double top = -INFINITY;
		for (int j = 0; j < KEYS; j++)
			top = fmax(top, sin(r * 7.0 + j) * 4);
		want_m[r] = top, want_l[r] = 0;
		for (int t = 0; t < W; t++)
			want_o[r * W + t] = 0;
		mx[r] = -INFINITY, l[r] = 0;
		for (int t = 0; t < W; t++)
			o[r * W + t] = 0;
		for (int j = 0; j < KEYS; j++) {
			int owner = j * ranks / KEYS;
			if (r == 0 && ranks > 1 && owner == 1)
				owner = 0;
			double sc = sin(r * 7.0 + j) * 4, e = exp(sc - top);
			want_l[r] += e;
			for (int t = 0; t < W; t++)
				want_o[r * W + t] += e * cos(j + t);
			if (owner == rank)
				mx[r] = fmaxf(mx[r], (float)sc);
		}
		for (int j = 0; j < KEYS; j++) {
			int owner = j * ranks / KEYS;
			if (r == 0 && ranks > 1 && owner == 1)
				owner = 0;
			if (owner != rank)
				continue;
			float e = expf((float)(sin(r * 7.0 + j) * 4) - mx[r]);
			l[r] += e;
			for (int t = 0; t < W; t++)
				o[r * W + t] += e * (float)cos(j + t);
		}
	}
	char why[512];
	RtPtr dm = 0, dl = 0, dout = 0;
	if (device_copy(rt, mx, sizeof mx, &dm, why, sizeof why) || device_copy(rt, l, sizeof l, &dl, why, sizeof why) ||
	    device_copy(rt, o, sizeof o, &dout, why, sizeof why))
		return bad("device memory", why);
	if (assoc_mpi_allreduce_maxplus_device(m, ROWS, W, (void *)(size_t)dm, (void *)(size_t)dl, (void *)(size_t)dout,
					       NULL))
		return bad("assoc_mpi_allreduce_maxplus_device", assoc_mpi_error(m));
	if (rt_download(rt, mx, dm, sizeof mx, why, sizeof why) || rt_download(rt, l, dl, sizeof l, why, sizeof why) ||
	    rt_download(rt, o, dout, sizeof o, why, sizeof why))
		return bad("download", why);
	for (int r = 0; r < ROWS; r++) {
		if (mx[r] != (float)want_m[r] || fabs(l[r] - want_l[r]) > 1e-5 * want_l[r])
			return bad("(max, +)", "m or l differ from the sums over every key");
		for (int t = 0; t < W; t++)
			if (fabs(o[r * W + t] - want_o[r * W + t]) > 1e-5 * want_l[r])
				return bad("(max, +)", "o differs from the sums over every key");
	}
	rt_free(rt, dm), rt_free(rt, dl), rt_free(rt, dout);
	assoc_mpi_free(m);
	assoc_kernel_free(k);
	assoc_spec_free(s);
	return 0;
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &ranks);
	Rt *rt = NULL;
	char why[512];
	int rc = rt_open(&rt, NULL, 0, why, sizeof why) ? bad("driver", why) : 0;
	const char *only = argc > 1 ? argv[1] : "";
	if (!rc && (!*only || !strcmp(only, "affine")))
		rc = affine_in_rank_order(rt);
	if (!rc && (!*only || !strcmp(only, "welford")))
		rc = welford_folded_and_merged(rt);
	if (!rc && (!*only || !strcmp(only, "maxplus")))
		rc = maxplus_two_collectives(rt);
	int worst = rc;
	MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (!rank)
		printf("mpi_device_states: %d ranks: %s\n", ranks, worst ? "FAILED" : "ok");
	rt_close(rt);
	MPI_Finalize();
	return worst;
}
