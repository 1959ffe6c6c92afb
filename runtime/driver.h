/* driver.h: the CUDA driver API, loaded at run time.
 *
 * libcuda.so.1 is opened with dlopen (never linked), so assoc runs where no
 * driver is installed and says why the GPU path is unavailable.  Every call
 * is checked; a failure is reported with the driver entry point, the
 * source line and the driver's own error name and string.  After a sticky
 * kernel fault the context is marked unusable and later calls fail fast. */
#ifndef ASSOC_RT_DRIVER_H
#define ASSOC_RT_DRIVER_H

#include <stddef.h>

typedef unsigned long long RtPtr;
typedef struct Rt Rt;
typedef struct RtModule RtModule;

typedef struct {
	char name[256];
	int ordinal;
	int major, minor;      /* compute capability */
	int sms;
	int driver;            /* cuDriverGetVersion: 12040 for 12.4 */
	size_t mem;            /* bytes */
	int l2_bytes;
	int regs_per_sm, smem_per_sm, smem_per_block_optin, max_threads_per_sm, max_blocks_per_sm;
	int mem_clock_khz, mem_bus_bits; /* the memory's peak clock and bus width: its nominal bandwidth */
} RtDevice;

/* The device's nominal memory bandwidth in GB/s (10^9 bytes): clock x bus
 * width x 2 (double data rate); 0 where the driver gives neither. */
double rt_nominal_gbps(const RtDevice *d);

typedef struct {
	int regs, smem, local; /* per thread registers, static shared bytes, local (spill) bytes */
	int max_threads;
} RtFuncAttrs;

/* Error codes of the driver that callers distinguish. */
enum {
	RT_OK = 0,
	RT_ERR = -1,
	RT_NO_LIBRARY = -2,  /* no libcuda.so.1 */
	RT_STUB = -3,        /* the toolkit's stub library, not a driver */
	RT_NO_DEVICE = -4,
	RT_OLD_DRIVER = -5,
	RT_OOM = -6,
	RT_FAULT = -7,       /* sticky: the context is unusable */
};

/* Open the driver and a context on device `ordinal`.  lib: the library to
 * load, or NULL for $ASSOC_LIBCUDA or libcuda.so.1.  On failure *rt is NULL
 * and err says why; the return value is one of the RT_ codes. */
int rt_open(Rt **rt, const char *lib, int ordinal, char *err, size_t n);
/* rt_open for a library: the primary context is retained, not made
 * current; the calling thread's current context stays as it was. */
int rt_open_aside(Rt **rt, const char *lib, int ordinal, char *err, size_t n);
/* Whether rt_open would find the driver and device `ordinal` (the same
 * codes and reasons), without touching any context: a probe that neither
 * creates the primary context nor, releasing it, resets it. */
int rt_probe(const char *lib, int ordinal, char *err, size_t n);
void rt_close(Rt *rt);
const RtDevice *rt_device(const Rt *rt);
int rt_usable(const Rt *rt);

/* Load PTX (JIT log captured into err on failure).  When the driver is too
 * old for the PTX's ISA version, retry once with the newest version the
 * driver accepts. */
int rt_load_ptx(Rt *rt, const char *ptx, RtModule **m, char *err, size_t n);
void rt_unload(Rt *rt, RtModule *m);
int rt_function(Rt *rt, RtModule *m, const char *name, void **fn, char *err, size_t n);
int rt_func_attrs(Rt *rt, void *fn, RtFuncAttrs *a, char *err, size_t n);

/* Device memory.  An out-of-memory failure releases every allocation made
 * through this handle, so a caller can report and carry on. */
int rt_alloc(Rt *rt, size_t bytes, RtPtr *p, char *err, size_t n);
void rt_free(Rt *rt, RtPtr p);
int rt_upload(Rt *rt, RtPtr dst, const void *src, size_t bytes, char *err, size_t n);
int rt_download(Rt *rt, void *dst, RtPtr src, size_t bytes, char *err, size_t n);
int rt_memset(Rt *rt, RtPtr dst, unsigned char v, size_t bytes, char *err, size_t n);
/* Device to device (asynchronous, like a launch: time it with rt_time). */
int rt_copy(Rt *rt, RtPtr dst, RtPtr src, size_t bytes, char *err, size_t n);

/* smem: bytes of dynamic shared memory; over 48 KB the function is first
 * allowed them (cuFuncSetAttribute), and more than the device's opt-in
 * limit (RtDevice.smem_per_block_optin) is an error before any launch. */
int rt_launch(Rt *rt, void *fn, const unsigned grid[3], const unsigned block[3], unsigned smem, void **args,
	      char *err, size_t n);
/* Whether launches in thread-block clusters are possible: the driver has
 * cuLaunchKernelEx and the device is sm_90 or newer. */
int rt_has_clusters(const Rt *rt);
/* rt_launch in clusters of `cluster` blocks in x (cuLaunchKernelEx with
 * the cluster dimension attribute; over 8, the non-portable sizes, the
 * function first allowed them); 1 or 0: rt_launch.  RT_OLD_DRIVER where
 * rt_has_clusters says no. */
int rt_launch_cluster(Rt *rt, void *fn, const unsigned grid[3], const unsigned block[3], unsigned smem,
		      unsigned cluster, void **args, char *err, size_t n);
int rt_sync(Rt *rt, char *err, size_t n);
/* A TMA tensor map (CUtensorMap, 128 bytes, into map) of elements of
 * type (f16, bf16, or bytes: e4m3's bits) at device address base: rank
 * dims (innermost first), the byte strides of dims 1.., a box, the
 * swizzle (64 or 128 bytes), zeros out of bounds (cuTensorMapEncodeTiled,
 * which drivers before CUDA 12 lack: then an error saying so). */
enum { RT_TMAP_F16, RT_TMAP_BF16, RT_TMAP_U8 };
int rt_tensor_map(Rt *rt, void *map, int type, int swizzle, int rank, RtPtr base, const unsigned long long *dims,
		  const unsigned long long *strides, const unsigned *box, char *err, size_t n);
/* Time `enqueue` with driver events: milliseconds between two events
 * recorded around it, after the events complete. */
int rt_time(Rt *rt, int (*enqueue)(void *ctx, char *err, size_t n), void *ctx, float *ms, char *err, size_t n);

/* Asynchronous work on a caller's stream (libassoc's assoc_run_device):
 * with on, rt_launch and rt_memset enqueue on stream (NULL: the legacy
 * default stream) and return at once; off restores the synchronous
 * memsets and the default stream. */
void rt_on_stream(Rt *rt, void *stream, int on);
/* Whether the driver has the stream-ordered allocator (cuMemAllocAsync,
 * cuMemFreeAsync). */
int rt_has_async_alloc(const Rt *rt);
/* Device memory ordered on the stream of rt_on_stream where the driver
 * has the stream-ordered allocator; rt_alloc and rt_free (which waits for
 * the device) otherwise.  Not in the handle's list: free it yourself. */
int rt_alloc_async(Rt *rt, size_t bytes, RtPtr *p, char *err, size_t n);
void rt_free_async(Rt *rt, RtPtr p);
/* Free either kind at once (cuMemFree waits for the work that reads it). */
void rt_free_now(Rt *rt, RtPtr p);
/* The calling thread's current context, or where there is none the
 * device's primary context, made current; an error when the current one
 * is on another device than rt's. */
int rt_enter_ctx(Rt *rt, void **ctx, char *err, size_t n);
void *rt_primary_ctx(const Rt *rt);
/* The calling thread's current context as it is (NULL: none), to give
 * back with rt_set_ctx. */
int rt_get_ctx(Rt *rt, void **ctx, char *err, size_t n);
int rt_set_ctx(Rt *rt, void *ctx, char *err, size_t n);

/* The newest PTX ISA version ("8.4") a driver version (12040) accepts. */
const char *rt_ptx_isa_for_driver(int driver);

#endif
