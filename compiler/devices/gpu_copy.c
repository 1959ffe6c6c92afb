/* gpu_copy.c: the copy baseline of `assoc bench --device gpu` (see gpu.h):
 * the driver's device-to-device copy and the copy kernel of cuda_copy.c,
 * both timed, and the memory's nominal bandwidth. */
#include <stdio.h>
#include <stdlib.h>

#include "compiler/devices/gpu.h"

typedef struct {
	Gpu *g;
	RtPtr src, dst;
	size_t bytes;
	void *fn; /* the copy kernel */
	unsigned grid;
	CudaCopyArgs args;
} Copy;

static int run_copy(void *ctx, char *msg, size_t n)
{
	Copy *x = ctx;
	return rt_copy(x->g->rt, x->dst, x->src, x->bytes, msg, n);
}

static int run_copy_kernel(void *ctx, char *msg, size_t n)
{
	Copy *x = ctx;
	unsigned grid[3] = {x->grid, 1, 1}, block[3] = {CUDA_COPY_BLOCK, 1, 1};
	void *args[] = {&x->args};
	return rt_launch(x->g->rt, x->fn, grid, block, 0, args, msg, n);
}

int gpu_copy_time(Gpu *g, RtPtr src, RtPtr dst, size_t bytes, RtPtr flush, size_t flush_bytes, int warmup,
		  int runs, GpuCopy *t, char *msg, size_t n)
{
	Copy x = {.g = g, .src = src, .dst = dst, .bytes = bytes};
	const RtDevice *dev = rt_device(g->rt);
	RtModule *mod = NULL;
	char *ptx = NULL;
	int cached, rc = -1;
	t->driver_ms = t->kernel_ms = -1;
	t->nominal_gbps = rt_nominal_gbps(dev);
	x.grid = cuda_copy_grid(dev->sms, dev->max_threads_per_sm, bytes);
	x.args = (CudaCopyArgs){(const void *)(size_t)src, (void *)(size_t)dst, bytes};
	if (nvrtc_ptx(g->nv, cuda_copy_src(), g->arch, &ptx, &cached, msg, n) || rt_load_ptx(g->rt, ptx, &mod, msg, n) ||
	    rt_function(g->rt, mod, CUDA_COPY_KERNEL, &x.fn, msg, n))
		goto out;
	if ((t->driver_ms = gpu_median_ms(g, run_copy, &x, flush, flush_bytes, warmup, runs, msg, n)) < 0 ||
	    (t->kernel_ms = gpu_median_ms(g, run_copy_kernel, &x, flush, flush_bytes, warmup, runs, msg, n)) < 0)
		goto out;
	rc = 0;
out:
	free(ptx);
	if (mod)
		rt_unload(g->rt, mod);
	return rc;
}

double gpu_copy_ms(const GpuCopy *t)
{
	return t->kernel_ms < t->driver_ms ? t->kernel_ms : t->driver_ms;
}

void gpu_copy_lines(FILE *f, const RtDevice *dev, double bytes, const GpuCopy *t)
{
	double ms = gpu_copy_ms(t), gbps = bytes / (ms * 1e6);
	fprintf(f, "  copy    the same bytes, the faster of the driver's copy (%.4f ms) and a copy kernel (%.4f ms): "
		   "%.4f ms, %.1f GB/s\n", t->driver_ms, t->kernel_ms, ms, gbps);
	if (t->nominal_gbps > 0)
		fprintf(f, "  memory  nominal %.1f GB/s (%d MHz x %d bits x 2, from the driver); the copy reaches %.3f of it\n",
			t->nominal_gbps, dev->mem_clock_khz / 1000, dev->mem_bus_bits, gbps / t->nominal_gbps);
	else
		fprintf(f, "  memory  nominal bandwidth not known (the driver gives no memory clock or bus width)\n");
}
