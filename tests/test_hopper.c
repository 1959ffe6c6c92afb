/* test_hopper.c: the Hopper wrappers (templates/hopper.cuh): the GPU side
 * of every wrapper compiles with NVRTC and assembles for sm_90a; the
 * emulator's tensor maps refuse what the driver's cuTensorMapEncodeTiled
 * refuses. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/cuda/cuda.h"
#include "compiler/cuda/nvrtc.h"
#include "compiler/util/cache.h"
#include "cudatest.h"
#include "runtime/emu/emu_tmap.h"
#include "testutil.h"

/* templates/hopper.cuh's AscTmap */
typedef struct {
	_Alignas(64) unsigned long long w[16];
} Tmap;

Test(hopper, tensor_maps_are_checked_as_the_driver_does)
{
	_Alignas(16) static unsigned short g[64 * 64];
	unsigned long long dims[3] = {64, 64, 1}, strides[2] = {128, 8192};
	unsigned box[3] = {64, 8, 1};
	Tmap m;
	char msg[256];
	cr_assert_eq(emu_tmap_encode(&m, 2, 2, g, dims, strides, box, 128, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(emu_tmap_encode(&m, 2, 6, g, dims, strides, box, 128, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "rank 6 outside [1, 5]"), "%s", msg);
	cr_assert_eq(emu_tmap_encode(&m, 2, 2, (char *)g + 8, dims, strides, box, 128, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "is not 16-byte aligned"), "%s", msg);
	unsigned long long odd[1] = {120};
	cr_assert_eq(emu_tmap_encode(&m, 2, 2, g, dims, odd, box, 128, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "stride of dimension 1 (120 bytes) is not a multiple of 16"), "%s", msg);
	unsigned wide[2] = {128, 8};
	cr_assert_eq(emu_tmap_encode(&m, 2, 2, g, dims, strides, wide, 128, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "inner dimension (256 bytes) exceeds the 128-byte swizzle span"), "%s", msg);
	unsigned narrow[2] = {4, 8};
	cr_assert_eq(emu_tmap_encode(&m, 2, 2, g, dims, strides, narrow, 0, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "inner dimension is 8 bytes, not a multiple of 16"), "%s", msg);
	unsigned big[2] = {64, 257};
	cr_assert_eq(emu_tmap_encode(&m, 2, 2, g, dims, strides, big, 128, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "box dimension 1 of 257 elements outside [1, 256]"), "%s", msg);
	cr_assert_eq(emu_tmap_encode(&m, 2, 2, g, dims, strides, box, 96, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "swizzle of 96 bytes"), "%s", msg);
}

/* The GPU side: every wrapper, wgmma at N = 64, 128 and 256, through
 * NVRTC for sm_90a and ptxas. */
Test(hopper, wrappers_assemble_for_sm_90a, .timeout = 120)
{
	Nvrtc *nv;
	char msg[8192];
	if (nvrtc_open(&nv, msg, sizeof msg))
		cr_skip_test("no NVRTC: %s", msg);
	char *k = cache_read("tests/hopper/sm90_kernel.cu", NULL);
	cr_assert(k);
	const Blob *c = blob_find("common"), *h = blob_find("hopper");
	size_t n = c->len + h->len + strlen(k) + 4;
	char *src = malloc(n);
	snprintf(src, n, "%s\n%s\n%s", c->text, h->text, k);
	char *ptx = NULL;
	int cached;
	cr_assert_eq(nvrtc_ptx(nv, src, "sm_90a", &ptx, &cached, msg, sizeof msg), 0, "%s", msg);
	static const char *const want[] = {"wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16",
					   "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16",
					   "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16",
					   "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes",
					   "cp.async.bulk.tensor.3d",
					   "mbarrier.try_wait.parity.shared::cta.b64",
					   "mbarrier.arrive.expect_tx.shared::cta.b64",
					   "mbarrier.init.shared::cta.b64",
					   "fence.mbarrier_init.release.cluster",
					   "fence.proxy.async.shared::cta",
					   "prefetch.tensormap",
					   "wgmma.fence.sync.aligned",
					   "wgmma.commit_group.sync.aligned",
					   "wgmma.wait_group.sync.aligned 1",
					   "setmaxnreg.inc.sync.aligned.u32 240",
					   "setmaxnreg.dec.sync.aligned.u32 40"};
	for (size_t i = 0; i < sizeof want / sizeof *want; i++)
		cr_expect(strstr(ptx, want[i]), "no %s in the PTX", want[i]);
	/* each of the 3 sizes: SS and RS, bf16 and f16 */
	cr_expect_eq(cuda_count(ptx, NULL, "wgmma.mma_async"), 12);
	CudaKStat ks[4];
	int nk = cuda_ptxas_stats(ptx, "sm_90a", ks, 4, msg, sizeof msg);
	if (nk < 0 && strstr(msg, "ptxas not found"))
		cr_skip_test("%s", msg);
	cr_expect_eq(nk, 1, "ptxas for sm_90a: %s", nk < 0 ? msg : "");
	free(ptx);
	free(src);
	free(k);
	nvrtc_close(nv);
}
