/* test_emu.c: the emulator itself: barriers, shuffles and votes behave as on
 * a GPU; a missing __syncthreads, an out-of-bounds shared access and
 * differing barrier counts are caught and named; a block of 256 fibers
 * over rows of 4099 runs well under a second. */
#include <string.h>
#include <time.h>

#include "compiler/cuda.h"
#include "compiler/run.h"
#include "cudatest.h"
#include "runtime/emu/emu.h"
#include "testutil.h"

static const char KERNELS[] =
	"extern \"C\" void good_emu(const void *p) {\n"
	"  int *out = (int *)p;\n"
	"  ASC_SHARED(int, buf, 64);\n"
	"  buf[threadIdx.x] = threadIdx.x;\n"
	"  __syncthreads();\n"
	"  int x = buf[(threadIdx.x + 1) % 64];\n"
	"  int s = x;\n"
	"  for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);\n"
	"  unsigned b = __ballot_sync(0xffffffffu, threadIdx.x % 3 == 0);\n"
	"  int d = __shfl_down_sync(0xffffffffu, (int)threadIdx.x, 1);\n"
	"  int u = __shfl_up_sync(0xffffffffu, (int)threadIdx.x, 1);\n"
	"  out[threadIdx.x] = s; out[64 + threadIdx.x] = (int)b; out[128 + threadIdx.x] = d; out[192 + threadIdx.x] = u;\n"
	"}\n"
	"extern \"C\" void racy_emu(const void *p) {\n"
	"  ASC_SHARED(float, buf, 64);\n"
	"  buf[threadIdx.x] = (float)threadIdx.x;\n"
	"  float x = buf[(threadIdx.x + 1) % 64]; /* no __syncthreads */\n"
	"  ((float *)p)[threadIdx.x] = x;\n"
	"}\n"
	"extern \"C\" void oob_emu(const void *p) {\n"
	"  ASC_SHARED(float, buf, 64);\n"
	"  buf[threadIdx.x + 1] = 1.0f;\n"
	"  (void)p;\n"
	"}\n"
	"extern \"C\" void diverge_emu(const void *p) {\n"
	"  if (threadIdx.x < 32) __syncthreads();\n"
	"  (void)p;\n"
	"}\n";

static EmuLib *lib(void)
{
	cuda_test_cache();
	EmuLib *l;
	char msg[4096];
	cr_assert_eq(emu_open(KERNELS, &l, msg, sizeof msg), 0, "%s", msg);
	return l;
}

Test(emu, barriers_shuffles_and_votes)
{
	EmuLib *l = lib();
	int out[256];
	char msg[1024];
	cr_assert_eq(emu_launch_kernel(l, "good", 2, 64, out, NULL, msg, sizeof msg), 0, "%s", msg);
	for (int t = 0; t < 64; t++) {
		int w = t / 32 * 32, sum = 0;
		for (int l2 = w; l2 < w + 32; l2++)
			sum += (l2 + 1) % 64;
		cr_expect_eq(out[t], sum, "thread %d: warp sum %d, want %d", t, out[t], sum);
		unsigned ballot = 0;
		for (int l2 = 0; l2 < 32; l2++)
			ballot |= (unsigned)((w + l2) % 3 == 0) << l2;
		cr_expect_eq((unsigned)out[64 + t], ballot, "thread %d: ballot %#x, want %#x", t, (unsigned)out[64 + t], ballot);
		cr_expect_eq(out[128 + t], t % 32 == 31 ? t : t + 1);
		cr_expect_eq(out[192 + t], t % 32 == 0 ? t : t - 1);
	}
	emu_close(l);
}

Test(emu, missing_syncthreads_is_a_race)
{
	EmuLib *l = lib();
	float out[64];
	char msg[1024];
	cr_assert_eq(emu_launch_kernel(l, "racy", 3, 64, out, NULL, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "race on buf["), "%s", msg);
	cr_expect(strstr(msg, "missing __syncthreads"), "%s", msg);
	cr_expect(strstr(msg, "kernel racy, block 0, thread"), "%s", msg);
	emu_close(l);
}

Test(emu, out_of_bounds_shared_access)
{
	EmuLib *l = lib();
	char msg[1024];
	cr_assert_eq(emu_launch_kernel(l, "oob", 1, 64, NULL, NULL, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "out-of-bounds shared memory access: buf[64] outside [0, 64)"), "%s", msg);
	cr_expect(strstr(msg, "kernel oob, block 0, thread 63"), "%s", msg);
	emu_close(l);
}

Test(emu, differing_barrier_counts)
{
	EmuLib *l = lib();
	char msg[1024];
	cr_assert_eq(emu_launch_kernel(l, "diverge", 1, 64, NULL, NULL, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "differing barrier counts"), "%s", msg);
	cr_expect(strstr(msg, "kernel diverge, block 0"), "%s", msg);
	emu_close(l);
}

Test(emu, block_of_256_fibers_is_fast)
{
	cuda_test_cache();
	Carrier *c = load_ok("specs/online_softmax.yaml");
	RunData *d = rundata_new(c, 4, 4099);
	char msg[2048];
	cr_assert_eq(rundata_draw(d, 1, NULL, 0, msg, sizeof msg), 0);
	RunOpts o = {.config = "rowmap:nt=256,acc=2,vec=4"};
	cr_assert_eq(emu_run_data(d, &o, NULL, msg, sizeof msg), 0, "%s", msg); /* builds the module */
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_assert_eq(emu_run_data(d, &o, NULL, msg, sizeof msg), 0, "%s", msg);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double s = (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
	cr_expect_lt(s, 0.5, "4 blocks of 256 fibers over rows of 4099: %.3f s", s);
	rundata_free(d);
	carrier_free(c);
}

Test(emu, compile_errors_carry_the_log)
{
	cuda_test_cache();
	EmuLib *l;
	char msg[4096];
	cr_assert_eq(emu_open("this is not C++;\n", &l, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "could not build"), "%s", msg);
	cr_expect(strstr(msg, "error"), "%s", msg);
}
