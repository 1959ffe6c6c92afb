/* launch_header.c: a host program that knows a carrier's kernels only
 * through the header `assoc emit --target cuda|ptx --header` wrote: it
 * fills the argument block, plans each variant for a shape and launches
 * its kernels through the launch function it is given (the driver's
 * cuLaunchKernel, or the emulator's in the tests).  Built as a shared
 * object with -DHEADER='"path.h"' -DCARRIER=name. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include HEADER

#define PASTE(a, b) a##b
#define NAMED(a, b) PASTE(a, b)
#define C(x) NAMED(CARRIER, x)

typedef int (*Launch)(void *ctx, const char *kernel, unsigned grid, unsigned block, unsigned smem, const void *args);

int host_variants(void) { return C(_NVARIANTS); }
const char *host_config(int v) { return C(_variants)[v].config; }

/* Variant v's plan as text: "split chunk ws zero_at zero_bytes;name grid block smem;..." */
int host_plan(int v, int rows, int len, int heads, int kv_heads, int split, char *out, size_t n)
{
	C(_plan) p;
	if (C(_variants)[v].plan(rows, len, heads, kv_heads, split, &p))
		return -1;
	int at = snprintf(out, n, "%d %d %llu %llu %llu", p.split, p.chunk, (unsigned long long)p.ws_bytes,
			  (unsigned long long)p.zero_at, (unsigned long long)p.zero_bytes);
	for (int k = 0; k < p.nk && at < (int)n; k++)
		at += snprintf(out + at, n - at, ";%s %u %u %u", p.k[k].name, p.k[k].grid, p.k[k].block, p.k[k].smem);
	return 0;
}

/* Run variant v on rows x len of host arrays (the emulator's memory is
 * the host's; on a GPU these would be device pointers), of heads query
 * heads over kv_heads key/value heads (attention; 1 and 1 elsewhere). */
int host_run_heads(Launch launch, void *ctx, int v, int rows, int len, int heads, int kv_heads, int split,
		   const void *const *in, void *const *out, const double *prm)
{
	C(_args) a;
	memset(&a, 0, sizeof a);
	C(_plan) p;
	for (int i = 0; i < C(_NIN); i++)
		a.in[i] = (uint64_t)(uintptr_t)in[i];
	for (int i = 0; i < C(_NOUT); i++)
		a.out[i] = (uint64_t)(uintptr_t)out[i];
	for (int i = 0; i < C(_NPRM); i++)
		a.prm[i] = prm[i];
	a.rows = rows;
	a.len = len;
	a.heads = heads;
	a.kv_heads = kv_heads;
	if (C(_variants)[v].plan(rows, len, heads, kv_heads, split, &p))
		return -1;
	void *ws = calloc(p.ws_bytes ? p.ws_bytes : 1, 1); /* the zero region zeroed with the rest */
	if (!ws)
		return -1;
	a.ws = (uint64_t)(uintptr_t)ws;
	a.split = p.split;
	a.chunk = p.chunk;
	int rc = 0;
	for (int k = 0; k < p.nk && !rc; k++)
		if (p.k[k].grid) /* 0: no rows, nothing to launch */
			rc = launch(ctx, p.k[k].name, p.k[k].grid, p.k[k].block, p.k[k].smem, &a);
	free(ws);
	return rc;
}

int host_run(Launch launch, void *ctx, int v, int rows, int len, int split, const void *const *in, void *const *out,
	     const double *prm)
{
	return host_run_heads(launch, ctx, v, rows, len, 1, 1, split, in, out, prm);
}
