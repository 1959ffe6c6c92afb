/* sm90_kernel.cu: every wrapper of templates/hopper.cuh once, wgmma (f16,
 * bf16, e4m3) at N = 64, 128 and 256, compiled by NVRTC for sm_90a after
 * templates/common.cuh and the wrappers (tests/test_hopper.c); never run. */
template <int N>
__device__ void every_wgmma(unsigned *sm, float *out, const unsigned *areg)
{
	float d[N / 2];
	for (int i = 0; i < N / 2; i++)
		d[i] = 0;
	unsigned long long da = asc_wgmma_desc(asc_smem_addr(sm, 0), 16, 1024, 128);
	unsigned long long db = asc_wgmma_desc(asc_smem_addr(sm, 2048), 8192, 1024, 128);
	unsigned a[4] = {areg[0], areg[1], areg[2], areg[3]};
	asc_wgmma_fence();
	asc_wgmma_hold(d);
	asc_wgmma_ss<N, 1, 0, 0>(d, da, db, 0);
	asc_wgmma_ss<N, 0, 0, 1>(d, da, db, 1);
	asc_wgmma_rs<N, 1, 1>(d, a, db, 1);
	asc_wgmma_rs<N, 0, 0>(d, a, db, 1);
	asc_wgmma_ss<N, 2, 0, 0>(d, da, da, 1);
	asc_wgmma_rs<N, 2, 0>(d, a, da, 1);
	asc_wgmma_commit();
	asc_wgmma_wait<1>();
	asc_wgmma_wait<0>();
	asc_wgmma_hold(d);
	for (int i = 0; i < N / 2; i++)
		out[threadIdx.x * 128 + i] = d[i];
}

extern "C" __global__ void __launch_bounds__(384) hopper_all(const __grid_constant__ AscTmap m2,
							     const __grid_constant__ AscTmap m3, float *out,
							     const unsigned *areg)
{
	ASC_DYN_SHARED(unsigned, sm);
	if (threadIdx.x == 0) {
		asc_tma_prefetch(&m2);
		asc_mbar_init(sm, 16384, 1);
		asc_mbar_fence_init();
	}
	__syncthreads();
	if (threadIdx.x == 0) {
		asc_mbar_expect_tx(sm, 16384, 16384);
		asc_tma_load2(sm, 0, &m2, 0, 0, sm, 16384);
		asc_tma_load3(sm, 2048, &m3, 0, 0, 1, sm, 16384);
		asc_bulk_load(sm, 4096, areg, 64, sm, 16384);
	}
	asc_mbar_wait(sm, 16384, 0);
	asc_mbar_arrive(sm, 16384);
	asc_fence_proxy_async();
	if (threadIdx.x < 128) {
		asc_setmaxnreg_inc<240>();
		every_wgmma<64>(sm, out, areg);
		every_wgmma<128>(sm, out, areg);
		every_wgmma<256>(sm, out, areg);
	} else
		asc_setmaxnreg_dec<40>();
	asc_bar_arrive(1, 256);
	asc_bar_sync(1, 256);
	asc_cluster_sync();
	out[threadIdx.x] += (float)asc_dsmem_ld<unsigned>(sm, threadIdx.x, (asc_cluster_rank() + 1) % asc_cluster_size());
	asc_cluster_arrive();
	asc_cluster_wait();
}
