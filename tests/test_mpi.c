/* test_mpi.c: `assoc run --mpi` under mpirun on the CPU (build/assoc):
 * a commutative carrier (Welford), a non-commutative scan (the linear
 * recurrence) and causal attention, each within tolerance of one process,
 * the same bits for 1, 2 and 4 ranks with --deterministic; the
 * sequence-parallel attention example (build/mpi_attention); and device
 * states across ranks (build/mpi_device_states) on the fake CUDA driver,
 * with the fake NCCL (build/libfakenccl.so) or without NCCL. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compiler/devices/npy.h"
#include "runtime/nccl.h"
#include "testutil.h"

#define ASSOC "build/assoc"
#define MPIRUN "mpirun --allow-run-as-root --oversubscribe -np "

static char out[1 << 16];

/* SKIP, with the reason, where mpirun or an MPI build is missing. */
static void need_mpi(void)
{
	if (access(ASSOC, X_OK))
		cr_skip_test(ASSOC " not built (make build/assoc)");
	if (sh("command -v mpirun", out, sizeof out, 1))
		cr_skip_test("no mpirun on this machine (make deps installs Open MPI)");
	/* one process without mpirun: MPI's singleton, or the build says why it has none */
	if (sh(ASSOC " run specs/sum.yaml --device interp --rows 1 --len 4 --mpi", out, sizeof out, 1) == 2 &&
	    strstr(out, "assoc was built without MPI"))
		cr_skip_test("%s", out);
}

/* The largest difference between two .npy files of one shape, relative
 * to the largest magnitude of b. */
static double npy_diff(const char *a, const char *b)
{
	Npy x, y;
	char msg[512];
	cr_assert_eq(npy_read(a, &x, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(npy_read(b, &y, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(x.count, y.count);
	double worst = 0, scale = 0;
	for (size_t i = 0; i < x.count; i++) {
		worst = fmax(worst, fabs(npy_get(&x, i) - npy_get(&y, i)));
		scale = fmax(scale, fabs(npy_get(&y, i)));
	}
	npy_free(&x);
	npy_free(&y);
	return worst / (scale > 0 ? scale : 1);
}

static int same_bytes(const char *a, const char *b)
{
	char cmd[512];
	snprintf(cmd, sizeof cmd, "cmp %s %s", a, b);
	return sh(cmd, out, sizeof out, 1) == 0;
}

/* spec on 4 ranks against one process, output name, relative tolerance;
 * then --deterministic on 1, 2 and 4 ranks, bit for bit. */
static void across_ranks_on(const char *dev, const char *spec, const char *shape, const char *name, const char *op,
			    double tol)
{
	char cmd[1024], one[256], many[256], det[3][256];
	const char *tag = strrchr(spec, '/') + 1;
	snprintf(one, sizeof one, "build/mpi-%s-%s-one.npy", dev, tag);
	snprintf(many, sizeof many, "build/mpi-%s-%s-4.npy", dev, tag);
	snprintf(cmd, sizeof cmd, ASSOC " run %s --device %s %s --output %s=%s", spec, dev, shape, name, one);
	cr_assert_eq(sh(cmd, out, sizeof out, 1), 0, "%s", out);
	snprintf(cmd, sizeof cmd, MPIRUN "4 " ASSOC " run %s --device %s %s --mpi --output %s=%s", spec, dev, shape, name,
		 many);
	cr_assert_eq(sh(cmd, out, sizeof out, 1), 0, "%s\n%s", cmd, out);
	cr_assert(strstr(out, "  mpi: 4 ranks, 4 slices a row, "), "%s", out);
	cr_assert(strstr(out, op), "%s", out);
	cr_assert(strstr(out, ": local fold "), "%s", out);
	cr_assert(strstr(out, "\n  ok\n"), "%s", out);
	double d = npy_diff(many, one);
	cr_assert(d <= tol, "%s: 4 ranks differ from one process by %g (relative), over %g", spec, d, tol);
	static const int p[3] = {1, 2, 4};
	for (int i = 0; i < 3; i++) {
		snprintf(det[i], sizeof det[i], "build/mpi-%s-%s-det%d.npy", dev, tag, p[i]);
		snprintf(cmd, sizeof cmd, MPIRUN "%d " ASSOC " run %s --device %s %s --mpi --deterministic --output %s=%s",
			 p[i], spec, dev, shape, name, det[i]);
		cr_assert_eq(sh(cmd, out, sizeof out, 1), 0, "%s\n%s", cmd, out);
		cr_assert(strstr(out, "16 slices a row (deterministic)"), "%s", out);
		if (i)
			cr_assert(same_bytes(det[0], det[i]), "%s: --deterministic on %d ranks differs from 1 rank", spec, p[i]);
	}
	cr_assert(npy_diff(det[2], one) <= tol, "%s: --deterministic differs from one process", spec);
}

static void across_ranks(const char *spec, const char *shape, const char *name, const char *op, double tol)
{
	across_ranks_on("cpu", spec, shape, name, op, tol);
}

static int count(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

TestSuite(mpi, .timeout = 120);

Test(mpi, welford_commutative)
{
	need_mpi();
	across_ranks("specs/welford.yaml", "--rows 8 --len 4000", "var", "commutative op", 1e-5);
}

/* Not commutative: MPI_Exscan in rank order seeds each rank's scan. */
Test(mpi, linear_recurrence_scan_in_rank_order)
{
	need_mpi();
	across_ranks("specs/linear_recurrence.yaml", "--rows 4 --len 4000", "B", "rank-ordered op", 1e-4);
}

/* Causal: row i sees positions up to i, so most of a row's slices are
 * past it in the first rows and all of them count in the last. */
Test(mpi, causal_attention)
{
	need_mpi();
	across_ranks("specs/attention.yaml", "--rows 256 --len 256", "out", "commutative op", 1e-5);
}

Test(mpi, interp_and_refusals)
{
	need_mpi();
	cr_assert_eq(sh(MPIRUN "2 " ASSOC " run specs/linear_recurrence.yaml --device interp --mpi --rows 3 --len 500", out,
			sizeof out, 1),
		     0, "%s", out);
	cr_assert(strstr(out, "  mpi: 2 ranks, 2 slices a row, rank-ordered op"), "%s", out);
	cr_assert_eq(sh(ASSOC " run specs/sum.yaml --device interp --split 4 --mpi", out, sizeof out, 1), 2, "%s", out);
	cr_assert(strstr(out, "--split: with --mpi"), "%s", out);
}

/* The interpreter's states carry their i64 rests across ranks: a sum
 * whose partial sums pass 2^53, split over two ranks, is exact. */
Test(mpi, interp_keeps_i64_exact_across_ranks)
{
	need_mpi();
	int64_t k[1][4] = {{(int64_t)1 << 62, 1, 3, -((int64_t)1 << 62)}};
	Npy a = {.itemsize = 8, .ndim = 2, .shape = {1, 4}, .count = 4, .data = k};
	snprintf(a.descr, sizeof a.descr, "<i8");
	char msg[300];
	cr_assert_eq(npy_write("build/mpi_k64.npy", &a, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(sh(MPIRUN "2 " ASSOC " run tests/check/i64_sum_past_2_53.yaml --device interp --mpi "
			"--input k=build/mpi_k64.npy --output s=build/mpi_s64.npy", out, sizeof out, 1),
		     0, "%s", out);
	Npy sv;
	cr_assert_eq(npy_read("build/mpi_s64.npy", &sv, msg, sizeof msg), 0, "%s", msg);
	cr_expect_eq(*(const int64_t *)sv.data, 4, "%lld", (long long)*(const int64_t *)sv.data);
	npy_free(&sv);
}

Test(mpi, sequence_parallel_attention_example)
{
	need_mpi();
	if (access("build/mpi_attention", X_OK))
		cr_skip_test("build/mpi_attention not built (make build/mpi_attention)");
	cr_assert_eq(sh(MPIRUN "4 build/mpi_attention 32 2048", out, sizeof out, 1), 0, "%s", out);
	cr_assert(strstr(out, "32 queries x 2048 keys on 4 ranks (commutative op)"), "%s", out);
	cr_assert(strstr(out, ": ok\n"), "%s", out);
}

/* The Python version over the assoc package (python/), MPI through
 * mpi4py or ctypes: SKIP where NumPy or the shared library is missing. */
Test(mpi, sequence_parallel_attention_in_python, .timeout = 240)
{
	need_mpi();
	if (access("build/libassoc.so", R_OK))
		cr_skip_test("build/libassoc.so not built (make build/libassoc.so)");
	const char *py = NULL;
	static const char *const pythons[] = {"python3", "build/python-venv/bin/python"};
	for (int i = 0; i < 2 && !py; i++) {
		char cmd[256];
		snprintf(cmd, sizeof cmd, "%s -c 'import numpy'", pythons[i]);
		if (!sh(cmd, out, sizeof out, 1))
			py = pythons[i];
	}
	if (!py)
		cr_skip_test("no Python with NumPy (python3, build/python-venv)");
	char cmd[512];
	snprintf(cmd, sizeof cmd, "PYTHONPATH=python ASSOC_LIBRARY=build/libassoc.so " MPIRUN "2 %s "
		 "examples/mpi_attention.py 32 2048", py);
	cr_assert_eq(sh(cmd, out, sizeof out, 1), 0, "%s\n%s", cmd, out);
	cr_assert(strstr(out, "mpi_attention.py: 32 queries x 2048 keys on 2 ranks ("), "%s", out);
	cr_assert(strstr(out, "merged by o_lse: largest difference from one process "), "%s", out);
	cr_assert(strstr(out, ": ok\n"), "%s", out);
	/* without mpi4py, a missing MPI library is named */
	snprintf(cmd, sizeof cmd, "%s -c 'import mpi4py'", py);
	if (sh(cmd, out, sizeof out, 1)) {
		snprintf(cmd, sizeof cmd, "PYTHONPATH=python ASSOC_LIBRARY=build/libassoc.so ASSOC_LIBMPI=build/no-such-libmpi.so "
			 "%s examples/mpi_attention.py", py);
		cr_assert_eq(sh(cmd, out, sizeof out, 1), 2, "%s", out);
		cr_assert(strstr(out, "mpi_attention.py: no MPI: mpi4py does not import"), "%s", out);
	}
}

/* ---- the CUDA module's kernels: emu, and gpu on the fake driver ---- */

static void need_emu(void)
{
	need_mpi();
	if (sh(ASSOC " run specs/sum.yaml --device emu --rows 1 --len 4", out, sizeof out, 1))
		cr_skip_test("the emu device does not run here: %s", out);
}

/* The module's split kernel folds each rank's slices, its combine kernel
 * merges them on rank 0: within tolerance of one process, and with
 * --deterministic the same bits on 1, 2 and 4 ranks. */
Test(mpi, emu_folds_slices_with_the_modules_kernels, .timeout = 240)
{
	need_emu();
	across_ranks_on("emu", "specs/welford.yaml", "--rows 8 --len 4000", "var", "merged by the combine kernel", 1e-5);
	across_ranks_on("emu", "specs/logsumexp.yaml", "--rows 5 --len 3001", "lse", "states gathered over MPI", 1e-5);
}

/* Attention without a mask: each slice's keys through the attention
 * kernel in two splits, every slice's partial (m, l, o) merged by its
 * combine kernel on rank 0.  The kernel rounds P = exp(s - m) to f16
 * against each split's own maximum m, so other splits round otherwise:
 * within f16's half ulp (4.9e-4) of one process, not 1e-5. */
Test(mpi, emu_attention_partial_states_across_ranks, .timeout = 240)
{
	need_emu();
	across_ranks_on("emu", "tests/attention/full.yaml", "--rows 64 --len 1000", "out", "merged by the combine kernel",
			1e-3);
	cr_assert_eq(sh(MPIRUN "2 " ASSOC " run tests/attention/full.yaml --device emu --rows 64 --len 300 --mpi --verbose",
			out, sizeof out, 1),
		     0, "%s", out);
	cr_assert(strstr(out, "_fwd folds each of 2 slices a row, ") && strstr(out, "_comb merges them on rank 0"), "%s",
		  out);
	cr_assert(strstr(out, "mt=2"), "the variant that leaves the merge to the combine kernel: %s", out);
}

/* What the slices' kernels do not take (scans, map outputs, a lift that
 * reads j, more than one head) runs across the ranks on the cpu, and says
 * why in one line; what is asked of those kernels for such a carrier
 * (--config, --mpi-collective reduce) is refused, exit 2, on every rank. */
Test(mpi, emu_runs_what_its_kernels_do_not_take_on_the_cpu, .timeout = 240)
{
	need_emu();
	static const struct {
		const char *spec, *why;
	} cases[] = {
		{"tests/attention/full.yaml --heads 2", "takes one head, not 2"},
		{"specs/attention.yaml", "the lift reads the position j"},
		{"specs/argmax.yaml", "the lift reads the position j"},
		{"specs/linear_recurrence.yaml", "folds reductions, and this carrier has a scan's outputs"},
		{"specs/layer_norm.yaml", "folds reductions, and this carrier has map outputs"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char cmd[512];
		snprintf(cmd, sizeof cmd, MPIRUN "2 " ASSOC " run %s --device emu --rows 4 --len 100 --mpi", cases[i].spec);
		cr_assert_eq(sh(cmd, out, sizeof out, 1), 0, "%s\n%s", cmd, out);
		cr_assert(strstr(out, cases[i].why) && strstr(out, "; the ranks run it on the cpu\n"), "%s\n%s", cmd, out);
		cr_assert(strstr(out, " on cpu, 4 rows x 100") && strstr(out, "  mpi: 2 ranks, 2 slices a row, ") &&
				  strstr(out, "\n  ok\n"),
			  "%s\n%s", cmd, out);
	}
	/* one rank, without mpirun, the same way */
	cr_assert_eq(sh(ASSOC " run specs/linear_recurrence.yaml --device emu --rows 4 --len 100 --mpi", out, sizeof out, 1),
		     0, "%s", out);
	cr_assert(strstr(out, "; the ranks run it on the cpu\n") && strstr(out, "  mpi: 1 rank, "), "%s", out);
	static const struct {
		const char *cmd, *why;
	} bad[] = {
		{MPIRUN "2 " ASSOC " run specs/sum.yaml --device emu --rows 4 --len 100 --mpi "
			"--config rowreduce:nt=256,acc=2,vec=4,warp=0,items=0",
		 "--config: with --mpi, a split variant"},
		{MPIRUN "2 " ASSOC " run specs/linear_recurrence.yaml --device emu --rows 4 --len 100 --mpi --config scan:nt=128",
		 "--config: --mpi on the emu device folds reductions, and this carrier has a scan's outputs, so the ranks "
		 "would run it on the cpu"},
		{MPIRUN "2 " ASSOC " run specs/attention.yaml --device emu --rows 4 --len 100 --mpi --mpi-collective reduce",
		 "--mpi-collective reduce: --mpi on the emu device: the lift reads the position j"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		cr_assert_eq(sh(bad[i].cmd, out, sizeof out, 1), 2, "%s\n%s", bad[i].cmd, out);
		cr_assert(strstr(out, bad[i].why), "%s\n%s", bad[i].cmd, out);
	}
}

/* The two-collective form of a (max, +) carrier: within tolerance of one
 * process (it is not the same bits); refused where it does not apply. */
Test(mpi, emu_two_collectives_for_max_plus_carriers)
{
	need_emu();
	cr_assert_eq(sh(ASSOC " run specs/logsumexp.yaml --device emu --rows 6 --len 3001 --output lse=build/mpi-lse-one.npy",
			out, sizeof out, 1),
		     0, "%s", out);
	cr_assert_eq(sh(MPIRUN "3 " ASSOC " run specs/logsumexp.yaml --device emu --rows 6 --len 3001 --mpi "
				  "--mpi-collective reduce --output lse=build/mpi-lse-reduce.npy",
			out, sizeof out, 1),
		     0, "%s", out);
	cr_assert(strstr(out, "all-reduce MAX of m, then SUM of the rescaled sums (MPI; not bit-deterministic)"), "%s",
		  out);
	cr_assert(strstr(out, "\n  ok\n"), "%s", out);
	cr_assert(npy_diff("build/mpi-lse-reduce.npy", "build/mpi-lse-one.npy") <= 1e-6, "%s", out);
	static const struct {
		const char *cmd, *why;
		int rc;
	} bad[] = {
		{MPIRUN "2 " ASSOC " run specs/welford.yaml --device emu --mpi --mpi-collective reduce",
		 "transports its merge into (max, +) (softmax, logsumexp, attention); welford's does not", 2},
		{ASSOC " run specs/logsumexp.yaml --device emu --mpi --mpi-collective reduce --deterministic",
		 "not with --deterministic", 2},
		{ASSOC " run specs/logsumexp.yaml --device cpu --mpi --mpi-collective reduce",
		 "--mpi-collective reduce: on the gpu and emu devices, not cpu", 2},
		{ASSOC " run specs/logsumexp.yaml --device emu --mpi-collective reduce", "--mpi-collective: with --mpi", 2},
		{ASSOC " run specs/logsumexp.yaml --device emu --mpi --mpi-collective sum", "gather or reduce, not 'sum'", 2},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		cr_assert_eq(sh(bad[i].cmd, out, sizeof out, 1), bad[i].rc, "%s\n%s", bad[i].cmd, out);
		cr_assert(strstr(out, bad[i].why), "%s\n%s", bad[i].cmd, out);
	}
}

#define FAKE_GPU "ASSOC_LIBCUDA=build/libfakecuda.so ASSOC_NVRTC=build/libfakenvrtc.so FAKENVRTC=entry "

/* The fake driver loads the module and launches its kernels, which do
 * nothing: the path up to the outputs runs, the outputs are left as they
 * were (zeros), so the check fails.  What is asserted is the path: the
 * slices' kernel on every rank, the states gathered by NCCL, or staged
 * without it (said once), the combine kernel on rank 0. */
Test(mpi, gpu_states_gathered_by_nccl_on_the_fake_driver)
{
	need_mpi();
	if (access("build/libfakenccl.so", R_OK))
		cr_skip_test("build/libfakenccl.so not built (no MPI at build time)");
	static const char *how[] = {"ASSOC_LIBNCCL=build/libfakenccl.so ", "ASSOC_LIBNCCL=build/no-such-libnccl.so.2 ",
				    "ASSOC_LIBNCCL=build/libfakenccl.so FAKENCCL=fail=init "};
	static const char *said[] = {"states gathered by NCCL 2.21.5, merged by the combine kernel",
				     "states gathered through the host over MPI",
				     "states gathered through the host over MPI"};
	static const char *staged[] = {NULL, "assoc: no NCCL: cannot load build/no-such-libnccl.so.2",
				       "assoc: ncclCommInitRank: NCCL error 3"};
	for (int i = 0; i < 3; i++) {
		char cmd[1024];
		snprintf(cmd, sizeof cmd, FAKE_GPU "%s" MPIRUN "3 " ASSOC " run specs/welford.yaml --device gpu --rows 5 "
			 "--len 777 --mpi --verbose",
			 how[i]);
		cr_assert_eq(sh(cmd, out, sizeof out, 1), 1, "%s\n%s", cmd, out);
		cr_assert(strstr(out, "  mpi: 3 ranks, 3 slices a row, "), "%s", out);
		cr_assert(strstr(out, said[i]), "%s", out);
		cr_assert(strstr(out, "_part folds each of 3 slices a row, ") && strstr(out, "_comb merges them on rank 0"),
			  "%s", out);
		cr_assert(staged[i] ? count(out, "staged through the host over MPI") == 1 && strstr(out, staged[i])
				    : !strstr(out, "staged"),
			  "%s", out);
		cr_assert(strstr(out, "  FAILED\n"), "the fake driver runs no kernel: %s", out);
	}
	/* the two collectives by NCCL */
	cr_assert_eq(sh(FAKE_GPU "ASSOC_LIBNCCL=build/libfakenccl.so " MPIRUN "3 " ASSOC " run specs/logsumexp.yaml "
				  "--device gpu --rows 6 --len 3001 --mpi --mpi-collective reduce --verbose",
			out, sizeof out, 1),
		     1, "%s", out);
	cr_assert(strstr(out, "all-reduce MAX of m, then SUM of the rescaled sums (NCCL 2.21.5; not bit-deterministic)"),
		  "%s", out);
	cr_assert(strstr(out, "_comb finalizes the reduced states on rank 0"), "%s", out);
	/* a scan, which the module's kernels do not take: the cpu runs it,
	 * said as on emu, and its results are checked (the fake runs nothing) */
	cr_assert_eq(sh(FAKE_GPU MPIRUN "2 " ASSOC " run specs/linear_recurrence.yaml --device gpu --rows 4 --len 100 --mpi",
			out, sizeof out, 1),
		     0, "%s", out);
	cr_assert(strstr(out, "assoc: gpu: --mpi on the gpu device folds reductions, and this carrier has a scan's outputs; "
			      "the ranks run it on the cpu\n") &&
			  strstr(out, " on cpu, 4 rows x 100") && strstr(out, "\n  ok\n"),
		  "%s", out);
}

/* ---- device states: the fake driver's memory is the host's ---- */

#define FAKES "ASSOC_LIBCUDA=build/libfakecuda.so "

static void need_device_states(void)
{
	need_mpi();
	if (access("build/mpi_device_states", X_OK) || access("build/libfakenccl.so", R_OK))
		cr_skip_test("build/mpi_device_states or build/libfakenccl.so not built (make build/mpi_device_states)");
}

/* Gathered by NCCL, merged in rank order (a non-commutative merge bit for
 * bit), Welford within rounding of one process, the two-collective
 * (max, +) form against float64 sums: on 1, 2 and 3 ranks. */
Test(mpi, device_states_gathered_by_nccl)
{
	need_device_states();
	for (int p = 1; p <= 3; p++) {
		char cmd[512];
		snprintf(cmd, sizeof cmd, FAKES "ASSOC_LIBNCCL=build/libfakenccl.so " MPIRUN "%d build/mpi_device_states", p);
		cr_assert_eq(sh(cmd, out, sizeof out, 1), 0, "%s\n%s", cmd, out);
		cr_assert(strstr(out, "transport: nccl\n"), "%s", out);
		cr_assert(!strstr(out, "staged"), "%s", out);
		char want[64];
		snprintf(want, sizeof want, "mpi_device_states: %d ranks: ok", p);
		cr_assert(strstr(out, want), "%s", out);
	}
}

/* No libnccl: the same results through the host over MPI, said once. */
Test(mpi, device_states_staged_without_nccl)
{
	need_device_states();
	cr_assert_eq(sh(FAKES "ASSOC_LIBNCCL=build/no-such-libnccl.so.2 " MPIRUN "3 build/mpi_device_states", out, sizeof out,
			1),
		     0, "%s", out);
	cr_assert(strstr(out, "transport: host\n"), "%s", out);
	cr_assert(strstr(out, "mpi_device_states: 3 ranks: ok"), "%s", out);
	cr_assert_eq(count(out, "staged through the host over MPI"), 1, "%s", out);
	cr_assert(strstr(out, "assoc: no NCCL: cannot load build/no-such-libnccl.so.2"), "%s", out);
	/* a library that is not NCCL is no NCCL either */
	cr_assert_eq(sh(FAKES "ASSOC_LIBNCCL=build/libfakecuda.so " MPIRUN "2 build/mpi_device_states affine", out,
			sizeof out, 1),
		     0, "%s", out);
	cr_assert(strstr(out, "build/libfakecuda.so lacks ncclGetUniqueId"), "%s", out);
}

/* A failing collective is an error with NCCL's own words, on every rank. */
Test(mpi, device_states_nccl_failure_is_reported)
{
	need_device_states();
	cr_assert_eq(sh(FAKES "FAKENCCL=fail=allgather ASSOC_LIBNCCL=build/libfakenccl.so " MPIRUN
			      "2 build/mpi_device_states affine",
			out, sizeof out, 1),
		     1, "%s", out);
	cr_assert(strstr(out, "ncclAllGather: NCCL error 3: internal error"), "%s", out);
	cr_assert(strstr(out, "mpi_device_states: 2 ranks: FAILED"), "%s", out);
}

/* The loader alone, in this process: what is missing is named. */
Test(mpi, nccl_loader_names_what_is_missing)
{
	RtNccl *nc = (RtNccl *)1;
	char why[512];
	cr_assert_eq(rt_nccl_open(&nc, "build/no-such-libnccl.so.2", why, sizeof why), -1);
	cr_assert_null(nc);
	cr_assert(strstr(why, "no NCCL: cannot load build/no-such-libnccl.so.2"), "%s", why);
	cr_assert_eq(rt_nccl_open(&nc, "build/libfakecuda.so", why, sizeof why), -1);
	cr_assert(strstr(why, "build/libfakecuda.so lacks ncclGetUniqueId: not NCCL"), "%s", why);
	if (access("build/libfakenccl.so", R_OK))
		cr_skip_test("build/libfakenccl.so not built (no MPI at build time)");
	setenv("FAKENCCL", "version=21903", 1);
	cr_assert_eq(rt_nccl_open(&nc, "build/libfakenccl.so", why, sizeof why), 0, "%s", why);
	unsetenv("FAKENCCL");
	cr_assert_str_eq(rt_nccl_version(nc), "2.19.3");
	/* no communicator yet: a collective is refused, not sent */
	cr_assert_eq(rt_nccl_allgather(nc, 0, 0, 8, NULL, why, sizeof why), -1);
	cr_assert(strstr(why, "no communicator"), "%s", why);
	RtNcclId id;
	cr_assert_eq(rt_nccl_unique_id(nc, &id, why, sizeof why), 0, "%s", why);
	cr_assert_eq(rt_nccl_init(nc, 2, &id, 2, why, sizeof why), -1);
	cr_assert(strstr(why, "rank 2 of 2"), "%s", why);
	rt_nccl_close(nc);
}
