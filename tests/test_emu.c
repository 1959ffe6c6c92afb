/* test_emu.c: the emulator itself: barriers, shuffles and votes behave as on
 * a GPU (offsets in their low 5 bits; lanes at different collectives
 * caught); a missing __syncthreads, an out-of-bounds shared access and
 * differing barrier counts are caught and named; ldmatrix follows the PTX
 * ISA's layout; cp.async lands only at its wait, so a missing wait or a
 * missing barrier after it is caught; dynamic shared memory is sized by the
 * launch and checked as static shared memory is; a block's shared memory
 * starts unwritten, whatever the last block left; a block of 256 fibers over rows of
 * 4099 runs well under a second; a grid past the device's limits is refused
 * as the driver refuses it; the scan template runs masked rows, one of
 * them fully masked, at every length; a module's own signed overflow
 * wraps; a global access off its type's alignment is caught, and vector
 * loads are counted. */
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "compiler/cuda/cuda.h"
#include "compiler/cuda/nvrtc.h"
#include "compiler/util/cache.h"
#include "compiler/devices/run.h"
#include "cudatest.h"
#include "compiler/devices/emu.h"
#include "emutest.h"
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
	/* offsets past 31 count in their low 5 bits, as PTX's shfl.sync */
	"extern \"C\" void far_emu(const void *p) {\n"
	"  int *out = (int *)p, t = (int)threadIdx.x;\n"
	"  out[t] = __shfl_down_sync(0xffffffffu, t, 33);\n"
	"  out[32 + t] = __shfl_up_sync(0xffffffffu, t, 40);\n"
	"  out[64 + t] = __shfl_xor_sync(0xffffffffu, t, 33);\n"
	"}\n"
	/* odd lanes shuffle while even lanes vote */
	"extern \"C\" void mixed_emu(const void *p) {\n"
	"  int t = (int)threadIdx.x;\n"
	"  ((int *)p)[t] = t % 2 ? __shfl_sync(0xffffffffu, t, 3) : (int)__ballot_sync(0xffffffffu, 1);\n"
	"}\n"
	/* block 0 fills buf, block 1 reads it: on a GPU, whatever the SM had */
	"extern \"C\" void stale_emu(const void *p) {\n"
	"  ASC_SHARED(float, buf, 64);\n"
	"  if (blockIdx.x == 0) buf[threadIdx.x] = 1.0f;\n"
	"  __syncthreads();\n"
	"  ((float *)p)[blockIdx.x * 64 + threadIdx.x] = buf[threadIdx.x];\n"
	"}\n"
	"extern \"C\" void oob_emu(const void *p) {\n"
	"  ASC_SHARED(float, buf, 64);\n"
	"  buf[threadIdx.x + 1] = 1.0f;\n"
	"  (void)p;\n"
	"}\n"
	/* dynamic shared memory: as many words as the launch's bytes; thread t
	 * writes word t and reads its neighbour's, past the bytes when fewer */
	"extern \"C\" void dyn_emu(const void *p) {\n"
	"  ASC_DYN_SHARED(unsigned, dsm);\n"
	"  unsigned *out = (unsigned *)p;\n"
	"  dsm[threadIdx.x] = 7u * threadIdx.x;\n"
	"  __syncthreads();\n"
	"  out[threadIdx.x] = dsm[(threadIdx.x + 1) % 64];\n"
	"}\n"
	"extern \"C\" void dynracy_emu(const void *p) {\n"
	"  ASC_DYN_SHARED(unsigned, dsm);\n"
	"  dsm[threadIdx.x] = threadIdx.x;\n"
	"  ((unsigned *)p)[threadIdx.x] = dsm[(threadIdx.x + 1) % 64]; /* no __syncthreads */\n"
	"}\n"
	"extern \"C\" void dynasync_emu(const void *p) {\n"
	"  ASC_DYN_SHARED(unsigned, dsm);\n"
	"  emu_cp_async(dsm, threadIdx.x * 4, (const unsigned *)p + threadIdx.x * 4, 16);\n"
	"  emu_cp_commit();\n"
	"  ((unsigned *)p)[256 + threadIdx.x] = dsm[threadIdx.x * 4]; /* no wait */\n"
	"}\n"
	"extern \"C\" void diverge_emu(const void *p) {\n"
	"  if (threadIdx.x < 32) __syncthreads();\n"
	"  (void)p;\n"
	"}\n"
	/* as many barriers on each side of a divergent branch */
	"extern \"C\" void diverge_sites_emu(const void *p) {\n"
	"  volatile int *v = (volatile int *)p;\n"
	"  if (threadIdx.x < 32) { v[threadIdx.x] = 1; __syncthreads(); }\n"
	"  else { v[threadIdx.x] = 2; __syncthreads(); v[threadIdx.x] = 3; }\n"
	"}\n"
	/* ldmatrix: 32 rows of 16 halves, half c of row r = 16 r + c; lane l
	 * points at row (7 l + 3) % 32, its first or second 8 halves */
	"extern \"C\" void ldsm_emu(const void *p) {\n"
	"  unsigned *out = (unsigned *)p;\n"
	"  ASC_SHARED(unsigned, sm, 32 * 8);\n"
	"  int l = threadIdx.x;\n"
	"  for (int k = 0; k < 8; k++) sm[l * 8 + k] = (unsigned)(16 * l + 2 * k) | (unsigned)(16 * l + 2 * k + 1) << 16;\n"
	"  __syncthreads();\n"
	"  for (int v = 0; v < 6; v++) {\n"
	"    unsigned r[4] = {0, 0, 0, 0};\n"
	"    emu_ldmatrix(r, sm, (7 * l + 3) % 32 * 8 + 4 * (l % 2), 1 << (v / 2), v % 2);\n"
	"    for (int q = 0; q < 4; q++) out[(v * 32 + l) * 4 + q] = r[q];\n"
	"  }\n"
	"}\n"
	/* cp.async: thread t copies 16 bytes (t % 5 == 0: none, zeros; t % 5
	 * == 1: 8, then zeros) and reads its neighbour's after the wait */
	"extern \"C\" void cpasync_emu(const void *p) {\n"
	"  const unsigned *src = (const unsigned *)p; unsigned *out = (unsigned *)p + 256;\n"
	"  ASC_SHARED(unsigned, sm, 64 * 4);\n"
	"  int t = threadIdx.x;\n"
	"  emu_cp_async(sm, t * 4, src + t * 4, t % 5 == 0 ? 0 : t % 5 == 1 ? 8 : 16);\n"
	"  emu_cp_commit();\n"
	"  emu_cp_wait(0);\n"
	"  __syncthreads();\n"
	"  for (int k = 0; k < 4; k++) out[t * 4 + k] = sm[(t + 1) % 64 * 4 + k];\n"
	"}\n"
	"extern \"C\" void nowait_emu(const void *p) {\n"
	"  const unsigned *src = (const unsigned *)p; unsigned *out = (unsigned *)p + 256;\n"
	"  ASC_SHARED(unsigned, sm, 64 * 4);\n"
	"  int t = threadIdx.x;\n"
	"  emu_cp_async(sm, t * 4, src + t * 4, 16);\n"
	"  emu_cp_commit();\n"
	"  __syncthreads(); /* no cp.async.wait_group */\n"
	"  out[t] = sm[(t + 1) % 64 * 4];\n"
	"}\n"
	"extern \"C\" void nobarrier_emu(const void *p) {\n"
	"  const unsigned *src = (const unsigned *)p; unsigned *out = (unsigned *)p + 256;\n"
	"  ASC_SHARED(unsigned, sm, 64 * 4);\n"
	"  int t = threadIdx.x;\n"
	"  emu_cp_async(sm, t * 4, src + t * 4, 16);\n"
	"  emu_cp_commit();\n"
	"  emu_cp_wait(0); /* no __syncthreads after it */\n"
	"  out[t] = sm[(t + 1) % 64 * 4];\n"
	"}\n"
	/* wait_group 1: the older group has landed, the newer is in flight */
	"extern \"C\" void groups_emu(const void *p) {\n"
	"  const unsigned *src = (const unsigned *)p; unsigned *out = (unsigned *)p + 256;\n"
	"  ASC_SHARED(unsigned, sm, 2 * 64 * 4);\n"
	"  int t = threadIdx.x;\n"
	"  emu_cp_async(sm, t * 4, src + t * 4, 16);\n"
	"  emu_cp_commit();\n"
	"  emu_cp_async(sm, 256 + t * 4, src + t * 4, 16);\n"
	"  emu_cp_commit();\n"
	"  emu_cp_wait(1);\n"
	"  out[t] = sm[t * 4];\n"
	"  if (t == 5) out[t] = sm[256 + t * 4];\n"
	"}\n"
	/* signed overflow in a module's own code wraps (-fwrapv), as the
	 * spec's integers do: without it, g++ folds each test to 0 */
	"extern \"C\" void wrapv_emu(const void *p) {\n"
	"  if (threadIdx.x) return;\n"
	"  int *io = (int *)p, k = io[0];\n"
	"  long long e = ((long long *)p)[1];\n"
	"  io[4] = k + 2147483000 < k;\n"
	"  io[5] = k * 65536 < 0 && k > 0;\n"
	"  io[6] = e + 9000000000000000000LL < e;\n"
	"}\n";

static EmuLib *lib(void)
{
	cuda_test_cache();
	EmuLib *l;
	char msg[4096];
	cr_assert_eq(emu_open(KERNELS, &l, msg, sizeof msg), 0, "%s", msg);
	return l;
}

Test(emu, signed_overflow_in_a_module_wraps)
{
	EmuLib *l = lib();
	union {
		int i[8];
		long long e[4];
	} io = {{0}};
	char msg[1024];
	io.i[0] = 40000;
	io.e[1] = 1000000000000000000LL;
	cr_assert_eq(emu_launch_kernel(l, "wrapv", 1, 32, 0, &io, NULL, msg, sizeof msg), 0, "%s", msg);
	cr_expect_eq(io.i[4], 1, "k + 2147483000 < k folded for k = 40000");
	cr_expect_eq(io.i[5], 1, "k * 65536 < 0 folded for k = 40000");
	cr_expect_eq(io.i[6], 1, "e + 9e18 < e folded for e = 1e18");
	emu_close(l);
}

Test(emu, barriers_shuffles_and_votes)
{
	EmuLib *l = lib();
	int out[256];
	char msg[1024];
	cr_assert_eq(emu_launch_kernel(l, "good", 2, 64, 0, out, NULL, msg, sizeof msg), 0, "%s", msg);
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

/* Shuffle offsets past 31 wrap as on the GPU; lanes at different
 * collectives are caught, not paired. */
Test(emu, shuffle_offsets_wrap_and_collectives_must_match)
{
	EmuLib *l = lib();
	int out[96];
	char msg[1024];
	cr_assert_eq(emu_launch_kernel(l, "far", 1, 32, 0, out, NULL, msg, sizeof msg), 0, "%s", msg);
	for (int t = 0; t < 32; t++) {
		cr_expect_eq(out[t], t < 31 ? t + 1 : t, "down 33 at lane %d: %d", t, out[t]);
		cr_expect_eq(out[32 + t], t >= 8 ? t - 8 : t, "up 40 at lane %d: %d", t, out[32 + t]);
		cr_expect_eq(out[64 + t], t ^ 1, "xor 33 at lane %d: %d", t, out[64 + t]);
	}
	cr_assert_eq(emu_launch_kernel(l, "mixed", 1, 32, 0, out, NULL, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "warp 0: lane ") && strstr(msg, "__ballot_sync") && strstr(msg, "__shfl_sync"), "%s", msg);
	emu_close(l);
}

/* Shared memory starts undefined in every block: a read of a word the
 * block has not written is caught, though the last block left a value. */
Test(emu, shared_memory_of_an_earlier_block_is_not_inherited)
{
	EmuLib *l = lib();
	float out[128];
	char msg[1024];
	cr_assert_eq(emu_launch_kernel(l, "stale", 1, 64, 0, out, NULL, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(emu_launch_kernel(l, "stale", 2, 64, 0, out, NULL, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "race on buf[") && strstr(msg, "read of a word no thread of this block has written yet"), "%s", msg);
	cr_expect(strstr(msg, "kernel stale, block 1, thread "), "%s", msg);
	emu_close(l);
}

Test(emu, missing_syncthreads_is_a_race)
{
	EmuLib *l = lib();
	float out[64];
	char msg[1024];
	cr_assert_eq(emu_launch_kernel(l, "racy", 3, 64, 0, out, NULL, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "race on buf["), "%s", msg);
	cr_expect(strstr(msg, "missing __syncthreads"), "%s", msg);
	cr_expect(strstr(msg, "kernel racy, block 0, thread"), "%s", msg);
	emu_close(l);
}

Test(emu, out_of_bounds_shared_access)
{
	EmuLib *l = lib();
	char msg[1024];
	cr_assert_eq(emu_launch_kernel(l, "oob", 1, 64, 0, NULL, NULL, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "out-of-bounds shared memory access: buf[64] outside [0, 64)"), "%s", msg);
	cr_expect(strstr(msg, "kernel oob, block 0, thread 63"), "%s", msg);
	emu_close(l);
}

Test(emu, differing_barrier_counts)
{
	EmuLib *l = lib();
	char msg[1024];
	cr_assert_eq(emu_launch_kernel(l, "diverge", 1, 64, 0, NULL, NULL, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "differing barrier counts"), "%s", msg);
	cr_expect(strstr(msg, "kernel diverge, block 0"), "%s", msg);
	emu_close(l);
}

/* Vector states of thousands of floats, and row inputs as wide, live in
 * the fibers' stacks, which grow with the module's State, Elem and Row:
 * 128 KiB had every thread of a (m, l, o[4096]) fold die on its guard
 * page, and attention at d = 16384 (a query of 64 KiB a thread) too.  Run
 * here without a verdict, whose soundness rows at these widths took the
 * command line half a minute under the sanitizers. */
Test(emu, wide_states_and_inputs_in_the_fibers_stacks, .timeout = 240)
{
	static const struct {
		const char *path, *dim, *val;
		int rows, len;
	} runs[] = {{"specs/o_lse.yaml", "dv", "4096", 2, 50}, {"specs/attention.yaml", "d", "16384", 2, 50}};
	for (size_t k = 0; k < sizeof runs / sizeof *runs; k++) {
		Carrier *c = load_defs(runs[k].path, (Define[]){{runs[k].dim, runs[k].val}}, 1);
		RunData *d = rundata_new(c, runs[k].rows, runs[k].len);
		char msg[2048];
		cr_assert_eq(rundata_draw(d, 3, NULL, 0, msg, sizeof msg), 0, "%s", msg);
		emu_expect_ref(d, runs[k].path, (RunOpts){.split = 1}, NULL);
		rundata_free(d);
		spec_carrier_free(c);
	}
	Define dd = {"d", "8192"};
	Diag g;
	diag_init(&g, "vsum.yaml");
	static const char vsum[] = "carrier: vsum\ndims: {d: 8}\nelement:\n  x: f32[d]\nstate:\n  s: f32[d]\n"
				   "identity: {s: 0}\nlift: {s: x}\nmerge: {s: a.s + b.s}\nreference: {s: sum(x)}\n"
				   "laws: [commutative]\n";
	Carrier *c = spec_load_buffer("vsum.yaml", vsum, strlen(vsum), &dd, 1, &g);
	cr_assert(c, "%s", g.text ? g.text : "");
	diag_free(&g);
	RunData *d = rundata_new(c, 2, 40);
	char msg[2048];
	cr_assert_eq(rundata_draw(d, 3, NULL, 0, msg, sizeof msg), 0, "%s", msg);
	emu_expect_ref(d, "vsum d=8192", (RunOpts){.split = 1}, NULL);
	rundata_free(d);
	spec_carrier_free(c);
}

/* Blocks of up to 1024 threads run the row templates: the barriers of
 * block_reduce over 32 warps are one call each, whatever copies of them
 * the host compiler makes. */
Test(emu, widest_blocks_run_the_row_templates, .timeout = 120)
{
	static const struct {
		const char *spec, *cfg;
	} runs[] = {{"specs/logsumexp.yaml", "rowreduce:nt=1024,acc=4,vec=4"},
		    {"specs/online_softmax.yaml", "rowmap:nt=1024,acc=4,vec=4"},
		    {"specs/layer_norm.yaml", "rowmap:nt=512,acc=4,vec=4"},
		    {"specs/welford.yaml", "rowreduce:nt=544,acc=2,vec=1"}};
	for (size_t k = 0; k < sizeof runs / sizeof *runs; k++) {
		Carrier *c = load_ok(runs[k].spec);
		RunData *d = rundata_new(c, 3, 4099);
		char msg[2048];
		cr_assert_eq(rundata_draw(d, 5, NULL, 0, msg, sizeof msg), 0, "%s", msg);
		cr_assert_eq(emu_run_data(d, &(RunOpts){.config = runs[k].cfg}, NULL, msg, sizeof msg), 0, "%s %s: %s",
			     runs[k].spec, runs[k].cfg, msg);
		RunCheck rc;
		runcheck_run(d, &rc);
		cr_expect(rc.ok, "%s %s against the reference", runs[k].spec, runs[k].cfg);
		runcheck_free(&rc);
		rundata_free(d);
		spec_carrier_free(c);
	}
}

/* The same number of barriers on both sides of a branch, but different
 * ones: on a GPU the block must meet at one barrier instruction. */
Test(emu, divergent_barriers_with_equal_counts)
{
	EmuLib *l = lib();
	char msg[1024];
	static int v[64];
	cr_assert_eq(emu_launch_kernel(l, "diverge_sites", 1, 64, 0, v, NULL, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "divergent barriers"), "%s", msg);
	cr_expect(strstr(msg, "kernel diverge_sites, block 0"), "%s", msg);
	cr_expect(strstr(msg, ".cu:") || strstr(msg, ".cpp:"), "the two calls' source lines: %s", msg);
	emu_close(l);
}

/* ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16 by the PTX ISA:
 * matrix q's row r is the 8 halves at lane 8q + r's address; without .trans
 * lane l gets (row l/4, cols 2(l%4), 2(l%4)+1), with .trans the transposed
 * (rows 2(l%4), 2(l%4)+1, col l/4); the first in the low half. */
static unsigned ldsm_elem(int q, int row, int col)
{
	int lane = 8 * q + row;
	return (unsigned)(16 * ((7 * lane + 3) % 32) + 8 * (lane % 2) + col);
}

Test(emu, ldmatrix_layout)
{
	EmuLib *l = lib();
	static unsigned out[6 * 32 * 4];
	char msg[1024];
	cr_assert_eq(emu_launch_kernel(l, "ldsm", 1, 32, 0, out, NULL, msg, sizeof msg), 0, "%s", msg);
	for (int v = 0; v < 6; v++) {
		int num = 1 << (v / 2), trans = v % 2;
		for (int ln = 0; ln < 32; ln++)
			for (int q = 0; q < 4; q++) {
				unsigned want = 0;
				if (q < num && !trans)
					want = ldsm_elem(q, ln / 4, 2 * (ln % 4)) | ldsm_elem(q, ln / 4, 2 * (ln % 4) + 1) << 16;
				else if (q < num)
					want = ldsm_elem(q, 2 * (ln % 4), ln / 4) | ldsm_elem(q, 2 * (ln % 4) + 1, ln / 4) << 16;
				cr_expect_eq(out[(v * 32 + ln) * 4 + q], want, "x%d%s lane %d register %d: %#x, want %#x", num,
					     trans ? ".trans" : "", ln, q, out[(v * 32 + ln) * 4 + q], want);
			}
	}
	emu_close(l);
}

static void cp_source(unsigned *buf)
{
	for (int k = 0; k < 256; k++)
		buf[k] = 1000u + (unsigned)k;
}

Test(emu, cp_async_lands_at_the_wait)
{
	EmuLib *l = lib();
	_Alignas(16) static unsigned buf[512];
	char msg[1024];
	cp_source(buf);
	cr_assert_eq(emu_launch_kernel(l, "cpasync", 2, 64, 0, buf, NULL, msg, sizeof msg), 0, "%s", msg);
	for (int t = 0; t < 64; t++)
		for (int k = 0; k < 4; k++) {
			int s = (t + 1) % 64, size = s % 5 == 0 ? 0 : s % 5 == 1 ? 8 : 16;
			unsigned want = 4 * k < size ? 1000u + (unsigned)(4 * s + k) : 0u;
			cr_expect_eq(buf[256 + 4 * t + k], want, "thread %d word %d: %u, want %u", t, k, buf[256 + 4 * t + k], want);
		}
	emu_close(l);
}

Test(emu, cp_async_without_wait_is_caught)
{
	EmuLib *l = lib();
	_Alignas(16) static unsigned buf[512];
	char msg[1024];
	cp_source(buf);
	cr_assert_eq(emu_launch_kernel(l, "nowait", 1, 64, 0, buf, NULL, msg, sizeof msg), -1);
	/* the last thread to reach the barrier runs on first */
	cr_expect(strstr(msg, "read of sm[0] while a cp.async of thread 0 to it is in flight"), "%s", msg);
	cr_expect(strstr(msg, "missing cp.async.wait_group"), "%s", msg);
	cr_expect(strstr(msg, "kernel nowait, block 0, thread 63"), "%s", msg);
	/* the waits are there, the barrier after them is not: a race */
	cr_assert_eq(emu_launch_kernel(l, "nobarrier", 1, 64, 0, buf, NULL, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "race on sm["), "%s", msg);
	cr_expect(strstr(msg, "missing __syncthreads"), "%s", msg);
	/* wait_group 1 leaves the newest group in flight */
	cr_assert_eq(emu_launch_kernel(l, "groups", 1, 64, 0, buf, NULL, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "read of sm[276] while a cp.async of thread 5 to it is in flight"), "%s", msg);
	for (int t = 0; t < 5; t++)
		cr_expect_eq(buf[256 + t], 1000u + 4 * t, "thread %d read %u", t, buf[256 + t]);
	/* and the good kernel still runs after the failures left copies in flight */
	cr_assert_eq(emu_launch_kernel(l, "cpasync", 1, 64, 0, buf, NULL, msg, sizeof msg), 0, "%s", msg);
	emu_close(l);
}

Test(emu, dynamic_shared_memory_is_sized_and_checked_at_launch)
{
	EmuLib *l = lib();
	_Alignas(16) static unsigned buf[512];
	char msg[1024];
	cr_assert_eq(emu_launch_kernel(l, "dyn", 2, 64, 64 * 4, buf, NULL, msg, sizeof msg), 0, "%s", msg);
	for (int t = 0; t < 64; t++)
		cr_expect_eq(buf[t], 7u * ((t + 1) % 64), "thread %d read %u", t, buf[t]);
	/* 63 words: thread 63 writes past the launch's bytes */
	cr_assert_eq(emu_launch_kernel(l, "dyn", 1, 64, 63 * 4, buf, NULL, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "out-of-bounds shared memory access: dsm[63] outside [0, 63) (the launch's 252 bytes of "
			      "dynamic shared memory)"), "%s", msg);
	cr_expect(strstr(msg, "kernel dyn, block 0, thread 63"), "%s", msg);
	cr_assert_eq(emu_launch_kernel(l, "dyn", 1, 64, 0, buf, NULL, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "dsm[0] outside [0, 0)"), "%s", msg);
	cr_assert_eq(emu_launch_kernel(l, "dyn", 1, 64, 228 * 1024, buf, NULL, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "233472 bytes of dynamic shared memory (at most 232448 per block"), "%s", msg);
	/* the race and cp.async checks of static arrays */
	cr_assert_eq(emu_launch_kernel(l, "dynracy", 1, 64, 64 * 4, buf, NULL, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "race on dsm[") && strstr(msg, "missing __syncthreads"), "%s", msg);
	cp_source(buf);
	cr_assert_eq(emu_launch_kernel(l, "dynasync", 1, 64, 256 * 4, buf, NULL, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "read of dsm[0] while a cp.async of thread 0 to it is in flight"), "%s", msg);
	/* a larger launch after the failures, copies left in flight */
	cr_assert_eq(emu_launch_kernel(l, "dyn", 3, 64, 100 * 1024, buf, NULL, msg, sizeof msg), 0, "%s", msg);
	emu_close(l);
}

/* A launch past the device's grid limits fails as cuLaunchKernel would,
 * before any block runs: y over 65535, x over 2^31 - 1, and a grid of no
 * blocks in x or y (the devices skip a launch with nothing to do). */
Test(emu, grids_past_the_device_limits_are_refused)
{
	EmuLib *l = lib();
	_Alignas(16) static unsigned buf[512];
	char msg[1024];
	static const unsigned bad[][2] = {{1, 65536}, {0x80000000u, 1}, {0x80000000u, 65536}, {4, 70000}, {0, 1},
					  {1, 0}, {0, 0}};
	for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
		memset(buf, 0, sizeof buf);
		cr_assert_eq(emu_launch_grid(l, "dyn", bad[k][0], bad[k][1], 64, 64 * 4, buf, NULL, msg, sizeof msg), -1,
			     "a grid of %u x %u ran", bad[k][0], bad[k][1]);
		char want[96];
		snprintf(want, sizeof want, "kernel dyn: a grid of %u x %u blocks: CUDA_ERROR_INVALID_VALUE", bad[k][0],
			 bad[k][1]);
		cr_expect(strstr(msg, want) && strstr(msg, "y from 1 to 65535"), "%s", msg);
		cr_expect_eq(buf[0], 0u, "a block ran");
	}
	/* at the limit of y, and in clusters */
	cr_assert_eq(emu_launch_grid(l, "dyn", 1, 65535, 64, 64 * 4, buf, NULL, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(emu_launch_cluster(l, "dyn", 2, 65536, 64, 64 * 4, 2, buf, NULL, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "CUDA_ERROR_INVALID_VALUE"), "%s", msg);
	emu_close(l);
}

/* Attention takes the query heads of a key/value head as one run of
 * rows, which the kernels and the grid's x count in 32 bits: a run past
 * 2^31 - 1 rows is refused by name before anything is read (the data of
 * the shape is never made: the run stops first). */
Test(emu, attention_runs_past_2_31_rows_are_refused, .timeout = 120)
{
	cuda_test_cache();
	Carrier *c = load_ok("specs/attention.yaml");
	RunData d = {.c = c, .rows = 1 << 30, .len = 1, .heads = 4, .kv_heads = 1};
	char msg[512];
	cr_assert_eq(emu_run_data(&d, &(RunOpts){0}, NULL, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "1073741824 rows of 4 query heads a key/value head: a run of over 2^31 - 1 rows"), "%s", msg);
	spec_carrier_free(c);
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
	spec_carrier_free(c);
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

/* A command line interrupted while the emulator's compiler runs leaves
 * no build folder in TMPDIR: the compiler here is a script that sends
 * assoc SIGTERM, so the signal always comes mid-build. */
Test(emu, interrupted_build_leaves_nothing_in_tmpdir)
{
	char dir[] = "/tmp/assoc-emuint-XXXXXX", cmd[1024], out[4096];
	test_tmpdir(dir);
	snprintf(cmd, sizeof cmd, "mkdir %s/t %s/c && printf '#!/bin/sh\nkill -TERM $PPID\nexit 1\n' >%s/cxx && "
		 "chmod +x %s/cxx", dir, dir, dir, dir);
	cr_assert_eq(sh(cmd, out, sizeof out, 1), 0, "%s", out);
	snprintf(cmd, sizeof cmd, "TMPDIR=%s/t XDG_CACHE_HOME=%s/c ASSOC_CXX=%s/cxx build/asan/assoc run "
		 "specs/sum.yaml --device emu", dir, dir, dir);
	cr_expect_neq(sh(cmd, out, sizeof out, 1), 0, "ended by its signal: %s", out);
	snprintf(cmd, sizeof cmd, "ls -A %s/t", dir);
	cr_assert_eq(sh(cmd, out, sizeof out, 1), 0);
	cr_expect_str_empty(out, "left in TMPDIR: %s", out);
}

/* ---- the launch contract ---- */

/* `assoc emit --target cuda --header`: kernels named after
 * the carrier, and a header that is their whole launch contract.  A host
 * program built against the header alone launches every variant on the
 * emulator and its results meet the reference; its plans are cuda_plan_h's. */
static char msg[8192];

/* emit SPEC's module and header under build/header/NAME.{cu,h}. */
static void emit(const char *spec, const char *name)
{
	char cmd[1024], out[8192];
	snprintf(cmd, sizeof cmd, "mkdir -p build/header && build/asan/assoc emit %s --target cuda --header "
				  "build/header/%s.h -o build/header/%s.cu", spec, name, name);
	cr_assert_eq(sh(cmd, out, sizeof out, 1), 0, "%s: %s", cmd, out);
}

/* The header compiles alone as C11 without a warning, and names every
 * kernel of the carrier's module, which the module defines. */
Test(cuda, header_compiles_and_names_the_carriers_kernels, .timeout = 120)
{
	const char *specs[][2] = {{"specs/online_softmax.yaml", "online_softmax"},
				  {"specs/linear_recurrence.yaml", "linear_recurrence"},
				  {"specs/sum.yaml", "sum"},
				  {"specs/attention.yaml", "attention"}};
	for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) {
		emit(specs[i][0], specs[i][1]);
		char cmd[512], out[8192];
		snprintf(cmd, sizeof cmd, "cc -std=c11 -Wall -Wextra -Werror -fsyntax-only -x c build/header/%s.h",
			 specs[i][1]);
		cr_assert_eq(sh(cmd, out, sizeof out, 1), 0, "%s: %s", cmd, out);
		Carrier *c = load_ok(specs[i][0]);
		CudaModule m;
		cr_assert_eq(cuda_module(c, NULL, &m, msg, sizeof msg), 0, "%s", msg);
		cr_assert_eq(cuda_module_name(&m, c->name, msg, sizeof msg), 0, "%s", msg);
		char path[256];
		snprintf(path, sizeof path, "build/header/%s.h", specs[i][1]);
		char *h = cache_read(path, NULL);
		snprintf(path, sizeof path, "build/header/%s.cu", specs[i][1]);
		char *cu = cache_read(path, NULL);
		cr_assert(h && cu);
		char hashed[64];
		snprintf(hashed, sizeof hashed, "%s_", m.prefix);
		cr_assert_not(strstr(cu, hashed), "no hash-named kernel is left in the module");
		for (int v = 0; v < m.nvar; v++) {
			char names[3][64], def[128];
			int nk = cuda_kernel_names(&m, v, names);
			cr_assert(!strncmp(names[0], c->name, strlen(c->name)), "%s starts with the carrier's name", names[0]);
			for (int k = 0; k < nk; k++) {
				snprintf(def, sizeof def, "\"%s\"", names[k]);
				cr_assert(strstr(h, def), "the header names %s", names[k]);
				snprintf(def, sizeof def, " %s(ASC_PARAM Args A)", names[k]);
				cr_assert(strstr(cu, def), "the module defines %s", names[k]);
			}
		}
		free(h);
		free(cu);
		cuda_module_free(&m);
		spec_carrier_free(c);
	}
	char out[1024];
	cr_assert_neq(sh("build/asan/assoc emit specs/sum.yaml --target llvm --header build/header/x.h", out, sizeof out, 1),
		      0);
	cr_assert(strstr(out, "--header is an option of emit --target cuda and ptx only"), "%s", out);
}

/* A header path that cannot be written (a directory, or a link to one;
 * a missing folder) fails emit with the reason before the module is
 * written anywhere: nothing on standard output, no file left. */
Test(cuda, header_to_a_path_that_cannot_be_written_writes_nothing)
{
	char out[8192], cmd[512];
	cr_assert_eq(sh("rm -rf build/header/unwritable && mkdir -p build/header/unwritable/dir && "
			"ln -s dir build/header/unwritable/link",
			out, sizeof out, 1),
		     0, "%s", out);
	const char *paths[][2] = {{"build/header/unwritable/dir", "Is a directory"},
				  {"build/header/unwritable/link", "Is a directory"},
				  {"build/header/unwritable/none/x.h", "No such file or directory"}};
	for (int t = 0; t < 2; t++)
		for (int i = 0; i < 3; i++) {
			snprintf(cmd, sizeof cmd,
				 "{ build/asan/assoc emit specs/sum.yaml --target %s --header %s >build/header/unwritable/stdout; }",
				 t ? "ptx" : "cuda", paths[i][0]);
			cr_assert_eq(sh(cmd, out, sizeof out, 1), 2, "%s", cmd);
			char want[256];
			snprintf(want, sizeof want, "%s: cannot write: %s", paths[i][0], paths[i][1]);
			cr_assert(strstr(out, want), "%s: %s", cmd, out);
			size_t n = 1;
			char *o = cache_read("build/header/unwritable/stdout", &n);
			cr_assert(o && n == 0, "%s: nothing on standard output (%zu bytes)", cmd, n);
			free(o);
		}
	cr_assert_eq(sh("ls -A build/header/unwritable/dir build/header/unwritable | grep -v '^stdout$'", out, sizeof out, 1),
		     0);
	cr_assert(!strstr(out, ".tmp"), "no temporary file left: %s", out);
}

/* -o and --header spelling one file two ways (./, a link to it) are
 * refused: the module's rename would have replaced the header without a
 * word. */
Test(cuda, header_and_module_on_one_file_are_refused)
{
	char out[8192];
	cr_assert_eq(sh("rm -rf build/header/same && mkdir -p build/header/same && echo keep >build/header/same/m.cu && "
			"ln -s m.cu build/header/same/link.h",
			out, sizeof out, 1),
		     0, "%s", out);
	const char *cmds[] = {"build/asan/assoc emit specs/sum.yaml --target cuda -o build/header/same/x.h "
			      "--header build/header/same/./x.h",
			      "build/asan/assoc emit specs/sum.yaml --target cuda -o build/header/same/m.cu "
			      "--header build/header/same/link.h"};
	for (int i = 0; i < 2; i++) {
		cr_assert_neq(sh(cmds[i], out, sizeof out, 1), 0, "%s", cmds[i]);
		cr_assert(strstr(out, "name the same file"), "%s: %s", cmds[i], out);
	}
	char *m = cache_read("build/header/same/m.cu", NULL);
	cr_assert(m && !strcmp(m, "keep\n"), "the file is left as it was");
	free(m);
	cr_assert_neq(sh("test -e build/header/same/x.h", out, sizeof out, 1), 0, "no file written");
}

/* A C++ host program includes the headers too, and a program of several
 * carriers includes several: the Hopper template's header (tensor maps
 * and all) and another carrier's, in one translation unit, compile as
 * ISO C++ and as ISO C without a warning. */
Test(cuda, headers_of_two_carriers_compile_together_as_cpp_and_c, .timeout = 120)
{
	char out[8192];
	if (sh("command -v c++ >/dev/null", out, sizeof out, 1))
		cr_skip("no C++ compiler (c++) to build a host program with");
	cr_assert_eq(sh("mkdir -p build/header && build/asan/assoc emit specs/attention.yaml --target cuda --arch sm_90a "
			"--header build/header/attention90.h -o build/header/attention90.cu",
			out, sizeof out, 1),
		     0, "%s", out);
	emit("specs/online_softmax.yaml", "online_softmax");
	char *h = cache_read("build/header/attention90.h", NULL);
	cr_assert(h && strstr(h, "_tmaps("), "the sm_90a header has the tensor maps");
	free(h);
	FILE *f = fopen("build/header/two.c", "w");
	cr_assert(f);
	fprintf(f, "#include \"build/header/attention90.h\"\n#include \"build/header/online_softmax.h\"\n"
		   "int main(void)\n{\n\tattention_tmap t[3];\n\tattention_tmap_set(&t[0], 2, 1, 2, 1, 4, 0, 1, 2, 1);\n"
		   "\treturn (int)t[0].dims[1] + online_softmax_NVARIANTS + attention_NVARIANTS;\n}\n");
	fclose(f);
	const char *cmds[] = {"c++ -x c++ -std=c++11 -Wall -Wextra -pedantic -Werror -fsyntax-only -I. build/header/two.c",
			      "cc -x c -std=c11 -Wall -Wextra -pedantic -Werror -fsyntax-only -I. build/header/two.c"};
	for (int i = 0; i < 2; i++)
		cr_assert_eq(sh(cmds[i], out, sizeof out, 1), 0, "%s: %s", cmds[i], out);
}

typedef struct {
	EmuLib *lib;
	char err[4096];
} Emu;

static int emu_launch(void *ctx, const char *kernel, unsigned grid, unsigned block, unsigned smem, const void *args)
{
	Emu *e = ctx;
	unsigned long long bytes[2] = {0, 0};
	return emu_launch_kernel(e->lib, kernel, grid, block, smem, args, bytes, e->err, sizeof e->err);
}

typedef int (*Launch)(void *, const char *, unsigned, unsigned, unsigned, const void *);

static int count_launch(void *ctx, const char *kernel, unsigned grid, unsigned block, unsigned smem, const void *args)
{
	(void)kernel, (void)grid, (void)block, (void)smem, (void)args;
	++*(int *)ctx;
	return 0;
}

typedef int (*HostPlan)(int, int, int, int, int, int, char *, size_t);

/* tests/example/launch_header.c built against build/header/FILE.h, the
 * header of carrier, and loaded (RTLD_LOCAL: each its own host_*). */
static void *header_lib(const char *file, const char *carrier)
{
	char cmd[1024], out[8192], so[256];
	snprintf(so, sizeof so, "build/header/host_%s.so", file);
	snprintf(cmd, sizeof cmd, "cc -std=c11 -Wall -Wextra -Werror -shared -fPIC '-DHEADER=\"build/header/%s.h\"' "
				  "-DCARRIER=%s -I. -o %s tests/example/launch_header.c", file, carrier, so);
	cr_assert_eq(sh(cmd, out, sizeof out, 1), 0, "%s: %s", cmd, out);
	void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
	cr_assert_not_null(h, "%s", dlerror());
	return h;
}

/* The library's plan of variant v as host_plan writes it: split, chunk,
 * workspace and its zeroed part, then each kernel's name, grid, block and
 * shared memory. */
static void plan_text(const CudaModule *m, int v, int rows, int len, int heads, int split, char *want, size_t n)
{
	CudaPlan p;
	cuda_plan_h(m, v, rows, len, heads, split, &p);
	size_t at = (size_t)snprintf(want, n, "%d %d %zu %zu %zu", p.split, p.chunk, p.ws_bytes, p.zero_at, p.zero_bytes);
	for (int k = 0; k < p.nk && at < n; k++)
		at += (size_t)snprintf(want + at, n - at, ";%s %u %u %u", p.k[k].name, p.k[k].grid, p.k[k].block,
				       p.k[k].smem);
}

/* d's arrays copied to one element past a 16-byte boundary, as the
 * header allows (a multiple of the element's size; with words, of 4
 * bytes at least, as attention's q, k and v): their pointers in in and
 * out (rundata_pointers' order), the copies in mem, to be freed; with
 * back, the outputs copied into d's instead.  The number of arrays. */
static int shifted(RunData *d, int words, const void **in, void **out, char **mem, int back)
{
	Carrier *c = d->c;
	Buffer *groups[5] = {d->elem, d->col, d->row, d->fin, d->map};
	int counts[5] = {c->nelem, c->ncol, c->nrow, c->nfinal, c->nmap}, k = 0;
	for (int g = 0; g < 5; g++)
		for (int i = 0; i < counts[g]; i++, k++) {
			Buffer *b = &groups[g][i];
			size_t bytes = b->n * (size_t)b->width * run_kind_size(b->kind), es = run_kind_size(b->kind);
			if (words && es < 4)
				es = 4;
			if (back) {
				if (g >= 3)
					memcpy(b->p, mem[k] + 16 + es, bytes);
				free(mem[k]);
				continue;
			}
			mem[k] = aligned_alloc(16, (bytes + 16 + es + 15) / 16 * 16);
			cr_assert(mem[k]);
			if (g < 3) {
				memcpy(mem[k] + 16 + es, b->p, bytes);
				in[k] = mem[k] + 16 + es;
			} else {
				memset(b->p, 0, bytes); /* the check reads what comes back */
				out[k - c->nelem - c->ncol - c->nrow] = mem[k] + 16 + es;
			}
		}
	return k;
}

/* The host program against spec's header: every variant's plan is
 * cuda_plan_h's, and every variant run on the emulator, at heads query
 * heads over kv_heads key/value heads, meets the reference. */
static void host_program(const char *spec, const char *name, int rows, int len, int heads, int kv_heads)
{
	char why[512];
	if (!emu_available(why, sizeof why))
		cr_skip("no host C++ compiler for the emulator: %s", why);
	emit(spec, name);
	char cmd[1024];
	void *h = header_lib(name, name);
	int (*variants)(void) = (int (*)(void))dlsym(h, "host_variants");
	const char *(*config)(int) = (const char *(*)(int))dlsym(h, "host_config");
	HostPlan plan = (HostPlan)dlsym(h, "host_plan");
	int (*run)(Launch, void *, int, int, int, int, const void *const *, void *const *, const double *) =
		(int (*)(Launch, void *, int, int, int, int, const void *const *, void *const *, const double *))dlsym(
			h, "host_run");
	int (*run_heads)(Launch, void *, int, int, int, int, int, int, const void *const *, void *const *,
			 const double *) = (int (*)(Launch, void *, int, int, int, int, int, int, const void *const *,
						    void *const *, const double *))dlsym(h, "host_run_heads");
	cr_assert(variants && config && plan && run && run_heads);

	Carrier *c = load_ok(spec);
	CudaModule m;
	cr_assert_eq(cuda_module(c, NULL, &m, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(cuda_module_name(&m, c->name, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(variants(), m.nvar);
	char *src = NULL;
	snprintf(cmd, sizeof cmd, "build/header/%s.cu", name);
	src = cache_read(cmd, NULL);
	cr_assert(src);
	Emu e = {0};
	cr_assert_eq(emu_open(src, &e.lib, msg, sizeof msg), 0, "%s", msg);
	const double d0params[CUDA_MAXP] = {0};
	/* 2^31 - 1 rows: the plan's arithmetic in 64 bits, as the library's;
	 * rows of up to 2^31 - 1 positions, one chunk or several: a chunk
	 * rounded up to a multiple of 4 was 2^31, wrapped negative */
	const int shapes[][3] = {{1, 1, 1},		{3, 300, 4},	    {70, 5000, 3},
				 {0, 17, 2},		{9, 1, 64},	    {2147483647, 8, 1},
				 {1, 2147483647, 1}, {1, 2147483645, 2}, {2, 2147483646, 64}};
	for (int v = 0; v < m.nvar; v++) {
		char cfg[160];
		variant_str(&m.var[v], cfg, sizeof cfg);
		cr_assert_str_eq(config(v), cfg);
		int splits = m.var[v].fam == FAM_SPLITK || m.var[v].fam == FAM_SCAN || m.var[v].fam == FAM_ATTN;
		for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
			int r = shapes[s][0], l = shapes[s][1], sp = splits ? shapes[s][2] : 1;
			char got[1024], want[1024];
			int takes = cuda_takes_len(&m, v, l, NULL, 0);
			cr_assert_eq(plan(v, r, l, 1, 1, sp, got, sizeof got), takes ? 0 : -1, "%s at %d x %d", cfg, r, l);
			if (!takes)
				continue;
			plan_text(&m, v, r, l, 1, sp, want, sizeof want);
			cr_assert_str_eq(got, want, "%s at %d x %d split %d", cfg, r, l, sp);
			/* chunks that cover the row, none negative; no block past the
			 * row's end but attention's (a split of its keys, each its own
			 * state, empty where the keys are few) */
			int psplit, pchunk;
			cr_assert_eq(sscanf(got, "%d %d", &psplit, &pchunk), 2, "%s", got);
			cr_expect(pchunk >= 0 && pchunk <= l && (long long)psplit * pchunk >= l &&
					  (l == 0 || m.base == FAM_ATTN || (long long)(psplit - 1) * pchunk < l),
				  "%s at %d x %d split %d: %s", cfg, r, l, sp, got);
		}
		RunData *d = rundata_new_heads(c, rows, len, heads, kv_heads);
		cr_assert_eq(rundata_draw(d, 5, NULL, 0, msg, sizeof msg), 0, "%s", msg);
		const void *in[CUDA_MAXIN];
		void *outs[CUDA_MAXOUT];
		rundata_pointers(d, in, outs);
		if (!cuda_takes_len(&m, v, len, NULL, 0)) {
			rundata_free(d);
			continue;
		}
		cr_assert_eq(run_heads(emu_launch, &e, v, rows, len, heads, kv_heads, splits ? 3 : 1, in, outs, d->params),
			     0, "%s: %s", cfg, e.err);
		if (m.base == FAM_ATTN && m.attn.sum) /* the reference rounds P as the kernel's matrix product takes it */
			runcheck_round_p_sum(d, cuda_p_round_kind(&m, v), m.attn.fo, m.attn.v);
		else if (m.base == FAM_ATTN)
			runcheck_round_p(d, cuda_p_round_kind(&m, v), m.attn.fm, m.attn.fl, m.attn.fo);
		/* then on arrays aligned only as the header asks (the emulator
		 * catches a wider load off its alignment) */
		int words = m.base == FAM_ATTN && !m.attn.f8;
		for (int pass = 0; pass < 2; pass++) {
			char *mem[CUDA_MAXIN + CUDA_MAXOUT];
			if (pass) {
				shifted(d, words, in, outs, mem, 0);
				cr_assert_eq(run_heads(emu_launch, &e, v, rows, len, heads, kv_heads, splits ? 3 : 1, in, outs,
						       d->params),
					     0, "%s on arrays off 16 bytes: %s", cfg, e.err);
				shifted(d, words, in, outs, mem, 1);
			}
			RunCheck rc;
			runcheck_run(d, &rc);
			for (int o = 0; o < rc.nout; o++)
				cr_expect(rc.out[o].worst_ratio <= 1 && !rc.out[o].nan_mismatch, "%s%s: %s off by %g", cfg,
					  pass ? " off 16 bytes" : "", rc.out[o].name, rc.out[o].max_abs);
			cr_assert(rc.ok, "%s%s meets the reference", cfg, pass ? " off 16 bytes" : "");
			runcheck_free(&rc);
		}
		rundata_free(d);
		/* no rows: nothing launched (a block-a-row kernel does not look
		 * at rows, and would write row 0) */
		int launched = 0;
		const void *none_in[CUDA_MAXIN] = {0};
		void *none_out[CUDA_MAXOUT] = {0};
		cr_assert_eq(run(count_launch, &launched, v, 0, len, splits ? 3 : 1, none_in, none_out, d0params), 0, "%s", cfg);
		cr_expect_eq(launched, 0, "%s: %d launches of no rows", cfg, launched);
	}
	emu_close(e.lib);
	free(src);
	cuda_module_free(&m);
	spec_carrier_free(c);
	dlclose(h);
}

/* Attention's plans with heads: the header's (query heads over key/value
 * heads, which it folds into rows) are the library's, whose run folds the
 * same way (run_attn_rows), at grouped and plain heads, no rows, one row,
 * past 65535 rows, one key and splits; heads that do not divide, and a
 * run of rows past 2^31 - 1, are refused. */
Test(cuda, header_plans_attention_heads_as_the_library)
{
	emit("specs/attention.yaml", "attention");
	void *h = header_lib("attention", "attention");
	HostPlan plan = (HostPlan)dlsym(h, "host_plan");
	cr_assert(plan);
	Carrier *c = load_ok("specs/attention.yaml");
	CudaModule m;
	cr_assert_eq(cuda_module(c, NULL, &m, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(cuda_module_name(&m, c->name, msg, sizeof msg), 0, "%s", msg);
	const int shapes[][5] = {{1, 1, 1, 1, 1},  {0, 64, 8, 2, 4},   {1, 4096, 32, 8, 16}, {3, 300, 8, 2, 3},
				 {70000, 129, 4, 4, 2}, {100, 1, 6, 3, 64}, {5, 1000, 16, 1, 7},
				 {1, 2147483647, 1, 1, 1}, {1, 2147483647, 1, 1, 3}};
	for (int v = 0; v < m.nvar; v++) {
		for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
			int r = shapes[i][0], l = shapes[i][1], H = shapes[i][2], G = shapes[i][3], sp = shapes[i][4];
			char got[1024], want[1024];
			cr_assert_eq(plan(v, r, l, H, G, sp, got, sizeof got), 0, "variant %d at %d x %d, %d/%d heads", v, r, l,
				     H, G);
			int rows = r, heads = H;
			cr_assert_eq(run_attn_rows(&rows, &heads, G, msg, sizeof msg), 0, "%s", msg);
			plan_text(&m, v, rows, l, heads, sp, want, sizeof want);
			cr_assert_str_eq(got, want, "variant %d at %d x %d, %d/%d heads, split %d", v, r, l, H, G, sp);
			int psplit, pchunk; /* keys of 2^31 - 1 in one chunk: rounded to the tile, it wrapped */
			cr_assert_eq(sscanf(got, "%d %d", &psplit, &pchunk), 2, "%s", got);
			cr_expect(pchunk >= 0 && pchunk <= l && (long long)psplit * pchunk >= l, "variant %d at %d x %d: %s", v,
				  r, l, got);
		}
		char got[1024];
		cr_assert_eq(plan(v, 4, 64, 6, 4, 1, got, sizeof got), -1, "6 heads on 4 key/value heads");
		cr_assert_eq(plan(v, 1 << 30, 64, 8, 2, 1, got, sizeof got), -1, "2^32 rows in a run");
	}
	cuda_module_free(&m);
	spec_carrier_free(c);
	dlclose(h);
}

/* A cluster variant's plan at the extremes: keys up to 2^31 - 1 give the
 * chunk cuda_plan_h gives (the header counted len + cl - 1 in 32 bits, and
 * planned a negative chunk), and rows whose clusters need more blocks than
 * a grid holds are refused, not planned as a grid that wrapped. */
Test(cuda, header_plans_cluster_rows_at_the_extremes)
{
	const char *cfg = "rowreduce:nt=256,acc=2,vec=4,warp=0,cl=4";
	char cmd[1024], out[8192];
	snprintf(cmd, sizeof cmd, "mkdir -p build/header && build/asan/assoc emit specs/sum.yaml --target cuda --arch sm_90 "
				  "--config %s --header build/header/sum_cl.h -o build/header/sum_cl.cu", cfg);
	cr_assert_eq(sh(cmd, out, sizeof out, 1), 0, "%s: %s", cmd, out);
	void *h = header_lib("sum_cl", "sum");
	HostPlan plan = (HostPlan)dlsym(h, "host_plan");
	cr_assert(plan);
	Carrier *c = load_ok("specs/sum.yaml");
	CudaModule m;
	cr_assert_eq(cuda_module(c, cfg, &m, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(cuda_module_name(&m, c->name, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(m.nvar, 1);
	const int shapes[][2] = {{1, 2147483647}, {3, 2147483600}, {0, 1001}, {536870911, 64}};
	for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
		char got[1024], want[1024];
		cr_assert_eq(plan(0, shapes[i][0], shapes[i][1], 1, 1, 1, got, sizeof got), 0);
		plan_text(&m, 0, shapes[i][0], shapes[i][1], 1, 1, want, sizeof want);
		cr_assert_str_eq(got, want, "%d x %d", shapes[i][0], shapes[i][1]);
	}
	char got[1024];
	cr_assert_eq(plan(0, 536870912, 64, 1, 1, 1, got, sizeof got), -1, "2^31 blocks: more than a grid holds");
	cr_assert_eq(plan(0, 2147483647, 64, 1, 1, 1, got, sizeof got), -1);
	cuda_module_free(&m);
	spec_carrier_free(c);
	dlclose(h);
}

Test(cuda, host_program_launches_softmax_from_the_header, .timeout = 600)
{
	host_program("specs/online_softmax.yaml", "online_softmax", 5, 200, 1, 1);
}

Test(cuda, host_program_launches_a_scan_from_the_header, .timeout = 600)
{
	host_program("specs/linear_recurrence.yaml", "linear_recurrence", 4, 333, 1, 1);
}

/* Attention's arrays as the header lays them out, [heads][rows] and
 * [kv_heads][len]: 4 query heads over 2 key/value heads, keys past one
 * tile and not a multiple of one. */
Test(cuda, host_program_launches_attention_heads_from_the_header, .timeout = 600)
{
	host_program("specs/attention.yaml", "attention", 5, 77, 4, 2);
	char *h = cache_read("build/header/attention.h", NULL);
	cr_assert(h);
	cr_expect(strstr(h, "attention_IN_k = 0, /* f16 x 64, column input [kv_heads][len] */"), "k's layout");
	cr_expect(strstr(h, "attention_IN_q = 2, /* f16 x 64, row input [heads][rows] */"), "q's layout");
	cr_expect(strstr(h, "attention_OUT_lse = 1, /* f32 x 1, finalize output [heads][rows] */"), "lse's layout");
	cr_expect(strstr(h, "and of 4 bytes for q, k and v,\n * which the attention kernels load two elements at a "
			    "time"),
		  "q, k and v's alignment");
	free(h);
}

/* The scan template over masked rows: row 0 fully masked (-inf at every
 * position, the identity's lse), row r keeping its first 5r positions (the
 * prefix's lse stays where the mask ends), at length 0, under a warp, and
 * over several blocks and chunks; each variant against the interpreter
 * and the reference. */
Test(emu, masked_scan_rows_with_one_fully_masked, .timeout = 300)
{
	char why[512];
	if (!emu_available(why, sizeof why))
		cr_skip_test("no host C++ compiler for the emulator: %s", why);
	static const char *const cfgs[] = {"scan:nt=128,acc=2,vec=4,warp=0,items=4",
					   "scan:nt=64,acc=1,vec=1,warp=0,items=1",
					   "scan:nt=64,acc=1,vec=1,warp=0,items=1,split=3"};
	static const int lens[] = {0, 1, 5, 7, 33, 1000, 4099};
	enum { ROWS = 4 };
	Carrier *c = load_ok("tests/check/masked_scan.yaml");
	for (size_t v = 0; v < sizeof cfgs / sizeof *cfgs; v++)
		for (size_t l = 0; l < sizeof lens / sizeof *lens; l++) {
			int len = lens[l];
			RunData *d[2];
			char msg[2048];
			for (int k = 0; k < 2; k++) {
				d[k] = rundata_new(c, ROWS, len);
				cr_assert_eq(rundata_draw(d[k], 9, NULL, 0, msg, sizeof msg), 0, "%s", msg);
			}
			cr_assert_eq(emu_run_data(d[0], &(RunOpts){.config = cfgs[v]}, NULL, msg, sizeof msg), 0, "%s len %d: %s",
				     cfgs[v], len, msg);
			cr_assert_eq(run_device_find("interp")->run(d[1], &(RunOpts){0}, msg, sizeof msg), 0, "%s", msg);
			for (int r = 0; r < ROWS; r++)
				for (int j = 0; j < len; j++) {
					double e = run_buffer_get(&d[0]->fin[0], (size_t)r * len + j);
					double w = run_buffer_get(&d[1]->fin[0], (size_t)r * len + j);
					if (r == 0)
						cr_expect_eq(e, -INFINITY, "%s len %d: a fully masked row at %d: %g", cfgs[v],
							     len, j, e);
					else if (j >= 5 * r) { /* the same state, up to the merges' association */
						double last = run_buffer_get(&d[0]->fin[0], (size_t)r * len + 5 * r - 1);
						cr_expect(fabs(e - last) <= 1e-6 * fabs(last) + 1e-7,
							  "%s len %d row %d: past the mask at %d, %.9g, not %.9g", cfgs[v], len, r,
							  j, e, last);
					}
					cr_expect(e == w || fabs(e - w) <= 1e-5 * fabs(w), "%s len %d row %d at %d: %g, interp %g",
						  cfgs[v], len, r, j, e, w);
				}
			RunCheck rc;
			runcheck_run(d[0], &rc);
			cr_expect(rc.ok, "%s len %d: against the reference", cfgs[v], len);
			runcheck_free(&rc);
			for (int k = 0; k < 2; k++)
				rundata_free(d[k]);
		}
	spec_carrier_free(c);
}

/* bench --device gpu's copy kernel (cuda_copy.c), the same text NVRTC
 * compiles: every byte copied and none past the end, at odd sizes, with
 * source and destination sharing their offset in 16 bytes (16-byte words
 * between a head and a tail of single bytes) or not (byte by byte), on
 * grids that take several turns of the grid-stride loop or fewer threads
 * than words. */
Test(emu, copy_kernel_copies_odd_sizes_and_unaligned_tails, .timeout = 120)
{
	char msg[4096];
	cuda_test_cache();
	if (!emu_available(msg, sizeof msg))
		cr_skip_test("%s", msg);
	EmuLib *l;
	cr_assert_eq(emu_open(cuda_copy_src(), &l, msg, sizeof msg), 0, "%s", msg);
	enum { MAX = 20000, PAD = 32 };
	unsigned char *src = malloc(MAX + 2 * PAD), *dst = malloc(MAX + 2 * PAD);
	cr_assert(src && dst);
	for (int i = 0; i < MAX + 2 * PAD; i++)
		src[i] = (unsigned char)(i * 7 + 3);
	static const unsigned sizes[] = {0, 1, 15, 16, 17, 31, 33, 255, 4097, 16383, MAX};
	static const int offs[][2] = {{0, 0}, {3, 3}, {15, 15}, {1, 0}, {0, 5}, {7, 9}};
	static const unsigned grids[] = {1, 3};
	for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
		for (size_t o = 0; o < sizeof offs / sizeof *offs; o++)
			for (size_t gi = 0; gi < 2; gi++) {
				unsigned n = sizes[s], grid = grids[gi];
				const unsigned char *from = src + PAD + offs[o][0];
				unsigned char *to = dst + PAD + offs[o][1];
				memset(dst, 0xEE, MAX + 2 * PAD);
				CudaCopyArgs a = {from, to, n};
				unsigned long long bytes[2] = {0, 0};
				cr_assert_eq(emu_launch_kernel(l, CUDA_COPY_KERNEL, grid, CUDA_COPY_BLOCK, 0, &a, bytes, msg, sizeof msg), 0,
					     "%s", msg);
				cr_assert_arr_eq(to, from, n, "%u bytes at offsets %d -> %d, %u blocks", n, offs[o][0], offs[o][1], grid);
				for (unsigned char *p = dst; p < dst + MAX + 2 * PAD; p++)
					if (p < to || p >= to + n)
						cr_assert_eq(*p, 0xEE, "%u bytes at offsets %d -> %d: a byte written %td past the copy",
							     n, offs[o][0], offs[o][1], p < to ? p - to : p - (to + n));
				cr_assert_eq(bytes[0], n, "every byte loaded once");
				cr_assert_eq(bytes[1], n, "and stored once");
			}
	free(src);
	free(dst);
	emu_close(l);
}

/* A global access its type's alignment does not divide, which faults on a
 * GPU, is reported with the address; vector loads (a class of 8 or 16
 * bytes) are counted across launches, scalar ones not. */
Test(emu, misaligned_vector_access_is_caught_and_vector_loads_counted)
{
	static const char src[] =
		"struct alignas(16) V4 { float x, y, z, w; };\n"
		"struct alignas(8) H4 { unsigned short x, y, z, w; };\n"
		"extern \"C\" void vec_emu(const void *p) {\n"
		"  const float *f = *(const float *const *)p;\n"
		"  int off = ((const int *)p)[2];\n"
		"  V4 v = ASC_LD((const V4 *)(f + off + 4 * threadIdx.x));\n"
		"  H4 h = ASC_LD((const H4 *)(f + 2 * threadIdx.x));\n"
		"  float s = ASC_LD(f + threadIdx.x + 1);\n"
		"  ASC_ST((float *)f + 256 + threadIdx.x, v.x + v.w + h.y + s);\n"
		"}\n"
		"extern \"C\" void vecst_emu(const void *p) {\n"
		"  float *f = *(float *const *)p;\n"
		"  ASC_ST((V4 *)(f + 2), (V4{1, 2, 3, 4}));\n"
		"}\n";
	char msg[4096];
	cuda_test_cache();
	if (!emu_available(msg, sizeof msg))
		cr_skip_test("%s", msg);
	EmuLib *l;
	cr_assert_eq(emu_open(src, &l, msg, sizeof msg), 0, "%s", msg);
	float *buf = aligned_alloc(16, 512 * sizeof(float));
	cr_assert(buf);
	memset(buf, 0, 512 * sizeof(float));
	struct {
		float *f;
		int off;
	} a = {buf, 0};
	cr_expect_eq(emu_vec_loads_of(l), 0);
	cr_assert_eq(emu_launch_kernel(l, "vec", 1, 32, 0, &a, NULL, msg, sizeof msg), 0, "%s", msg);
	cr_expect_eq(emu_vec_loads_of(l), 64, "32 threads of one 16-byte and one 8-byte load: %llu", emu_vec_loads_of(l));
	a.off = 1;
	cr_expect_eq(emu_launch_kernel(l, "vec", 1, 32, 0, &a, NULL, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "global load of 16 bytes at ") && strstr(msg, "which is not 16-byte aligned"), "%s", msg);
	cr_expect_eq(emu_launch_kernel(l, "vecst", 1, 32, 0, &a, NULL, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "global store of 16 bytes at ") && strstr(msg, "which is not 16-byte aligned"), "%s", msg);
	free(buf);
	emu_close(l);
}

/* The copy kernel keeps 16-byte loads and stores through NVRTC, four of
 * them in flight a thread. */
Test(emu, copy_kernel_moves_16_byte_words)
{
	char msg[8192];
	cuda_test_cache();
	Nvrtc *nv;
	char *ptx;
	int cached;
	if (nvrtc_open(&nv, msg, sizeof msg))
		cr_skip_test("no NVRTC here: %s", msg);
	cr_assert_eq(nvrtc_ptx(nv, cuda_copy_src(), "sm_90", &ptx, &cached, msg, sizeof msg), 0, "%s", msg);
	int lds = 0, sts = 0;
	for (const char *p = strstr(ptx, "ld.global.nc.v4.u32"); p; p = strstr(p + 1, "ld.global.nc.v4.u32"))
		lds++;
	for (const char *p = strstr(ptx, "st.global.v4.u32"); p; p = strstr(p + 1, "st.global.v4.u32"))
		sts++;
	cr_expect_geq(lds, 4, "%s", ptx);
	cr_expect_geq(sts, 4, "%s", ptx);
	cr_expect(strstr(ptx, ".entry " CUDA_COPY_KERNEL "("), "%s", ptx);
	free(ptx);
	nvrtc_close(nv);
}
