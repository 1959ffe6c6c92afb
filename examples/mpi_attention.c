/* mpi_attention.c: sequence-parallel attention with libassoc and MPI.
 * The keys and values are sharded across the ranks, each rank holding a
 * contiguous block of positions; every rank folds all queries against its
 * own block into per-query states (m, l, o), MPI_Reduce merges them with
 * the carrier's op, and rank 0 finalizes (out, lse) and compares them with
 * one process's attention over all the keys.
 *
 *   make build/mpi_attention
 *   mpirun -np 4 build/mpi_attention [queries keys]
 *
 * Exit 0 when every output is within tolerance of the one-process run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <assoc_mpi.h>

enum { D = 32 };

/* Without a causal mask: a shard's positions are numbered from 0 within it. */
static const char spec[] = "carrier: attention_full\n"
			   "dims: {d: 32}\n"
			   "params: {scale: f32}\n"
			   "row:\n  q: f32[d]\n"
			   "column:\n  k: f32[d]\n  v: f32[d]\n"
			   "let:\n  s: dot(q, k) * scale\n"
			   "state:\n  m: f32\n  l: f32\n  o: f32[d]\n"
			   "identity: {m: -inf, l: 0, o: 0}\n"
			   "lift: {m: s, l: 1, o: v}\n"
			   "merge:\n"
			   "  m: max(a.m, b.m)\n"
			   "  l: a.l * exp(a.m - m) + b.l * exp(b.m - m)\n"
			   "  o: a.o * exp(a.m - m) + b.o * exp(b.m - m)\n"
			   "finalize: {out: o / l, lse: m + log(l)}\n"
			   "reference:\n"
			   "  out: sum(exp(s) * v) / sum(exp(s))\n"
			   "  lse: log(sum(exp(s)))\n"
			   "laws: [commutative]\n";

static float draw(uint64_t *x)
{
	*x = *x * 6364136223846793005ull + 1442695040888963407ull;
	return (float)((*x >> 40) / (double)(1 << 24) * 2 - 1);
}

static int check(AssocStatus st, const char *what, const char *err)
{
	if (st)
		fprintf(stderr, "mpi_attention: %s: %s (%s)\n", what, assoc_strerror(st), err);
	return st != ASSOC_OK;
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank, ranks;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &ranks);
	int64_t rows = argc > 2 ? atoll(argv[1]) : 64, len = argc > 2 ? atoll(argv[2]) : 4096;
	if (rows < 1 || len < ranks) {
		if (!rank)
			fprintf(stderr, "mpi_attention: need at least 1 query and as many keys as ranks\n");
		MPI_Finalize();
		return 2;
	}
	/* every rank draws the same arrays, and keeps its block of keys */
	float *q = malloc(rows * D * sizeof *q), *k = malloc(len * D * sizeof *k), *v = malloc(len * D * sizeof *v);
	float *out = calloc(rows * D, sizeof *out), *lse = calloc(rows, sizeof *lse);
	float *out1 = calloc(rows * D, sizeof *out1), *lse1 = calloc(rows, sizeof *lse1);
	uint64_t seed = 42;
	for (int64_t i = 0; i < rows * D; i++)
		q[i] = draw(&seed);
	for (int64_t i = 0; i < len * D; i++)
		k[i] = draw(&seed), v[i] = draw(&seed);
	int64_t lo = rank * len / ranks, hi = (rank + 1) * len / ranks, n = hi - lo;

	AssocSpec *s = NULL;
	AssocKernel *kern = NULL;
	AssocMpi *m = NULL;
	AssocValue scale = {"scale", 1 / sqrt((double)D)};
	AssocStatus st = assoc_spec_load_text(&s, spec, sizeof spec - 1, NULL, 0);
	int bad = check(st, "spec", assoc_spec_error(s));
	if (!bad)
		st = assoc_compile(s, "cpu", 0, &kern), bad = check(st, "compile", assoc_spec_error(s));
	if (!bad)
		st = assoc_mpi_kernel(kern, &scale, 1, &m), bad = check(st, "mpi", assoc_kernel_error(kern));
	size_t sb = bad ? 0 : assoc_mpi_state_bytes(m);
	void *mine = malloc(rows * sb + 1), *all = malloc(rows * sb + 1);
	AssocBuffer shard[] = {{"q", q, rows * D * sizeof *q},
			       {"k", k + lo * D, n * D * sizeof *k},
			       {"v", v + lo * D, n * D * sizeof *v},
			       {"out", out, rows * D * sizeof *out},
			       {"lse", lse, rows * sizeof *lse}};
	double t0 = MPI_Wtime();
	if (!bad)
		st = assoc_mpi_fold(m, rows, n, 0, n, shard, 5, mine), bad = check(st, "fold", assoc_mpi_error(m));
	int any = 0;
	MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	int rc = any ? 1 : 0;
	if (!any) {
		double t1 = MPI_Wtime();
		MPI_Reduce(mine, all, (int)rows, assoc_mpi_type(m), assoc_mpi_op(m), 0, MPI_COMM_WORLD);
		double t2 = MPI_Wtime();
		if (!rank) {
			AssocBuffer whole[] = {{"q", q, rows * D * sizeof *q},
					       {"k", k, len * D * sizeof *k},
					       {"v", v, len * D * sizeof *v},
					       {"out", out1, rows * D * sizeof *out1},
					       {"lse", lse1, rows * sizeof *lse1}};
			st = assoc_mpi_finalize(m, rows, n, shard, 5, all);
			rc = check(st, "finalize", assoc_mpi_error(m));
			if (!rc)
				st = assoc_run(kern, rows, len, whole, 5, &scale, 1), rc = check(st, "one process", assoc_kernel_error(kern));
			double worst = 0;
			for (int64_t i = 0; !rc && i < rows * D; i++)
				worst = fmax(worst, fabs(out[i] - out1[i]));
			for (int64_t i = 0; !rc && i < rows; i++)
				worst = fmax(worst, fabs(lse[i] - lse1[i]) / fmax(1, fabs(lse1[i])));
			/* a few float32 ulps: the merge order differs, the sums do not */
			int ok = !rc && worst < 1e-5;
			printf("mpi_attention: %lld queries x %lld keys on %d ranks (%s op): fold %.4f s, reduce %.4f s; "
			       "largest difference from one process %.3g: %s\n",
			       (long long)rows, (long long)len, ranks, assoc_mpi_commutative(m) ? "commutative" : "rank-ordered",
			       t1 - t0, t2 - t1, worst, ok ? "ok" : "FAILED");
			rc = ok ? 0 : 1;
		}
		MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
	}
	assoc_mpi_free(m);
	assoc_kernel_free(kern);
	assoc_spec_free(s);
	free(q), free(k), free(v), free(out), free(lse), free(out1), free(lse1), free(mine), free(all);
	MPI_Finalize();
	return rc;
}
