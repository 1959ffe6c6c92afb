/* driver.c: the CUDA driver API through dlopen/dlsym (see driver.h). */
#include "runtime/driver.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The few driver types and constants used here (from the driver API's
 * documented ABI; no CUDA header is needed to build). */
typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext, *CUmodule, *CUfunction, *CUstream, *CUevent;

enum {
	CUDA_ERROR_OUT_OF_MEMORY = 2,
	CUDA_ERROR_STUB_LIBRARY = 34,
	CUDA_ERROR_NO_DEVICE = 100,
	CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
	CUDA_ERROR_ECC_UNCORRECTABLE = 214,
	CUDA_ERROR_ILLEGAL_ADDRESS = 700,
	CUDA_ERROR_LAUNCH_TIMEOUT = 702,
	CUDA_ERROR_ASSERT = 710,
	CUDA_ERROR_HARDWARE_STACK_ERROR = 714,
	CUDA_ERROR_LAUNCH_FAILED = 719,
	CUDA_ERROR_NOT_SUPPORTED = 801,
	CUDA_ERROR_EXTERNAL_DEVICE = 911,
};

enum { JIT_INFO_LOG = 3, JIT_INFO_LOG_SIZE = 4, JIT_ERROR_LOG = 5, JIT_ERROR_LOG_SIZE = 6 };

enum {
	ATTR_MAX_THREADS_PER_BLOCK = 1,
	ATTR_L2_CACHE_SIZE = 38,
	ATTR_MAX_THREADS_PER_SM = 39,
	ATTR_SM_COUNT = 16,
	ATTR_CC_MAJOR = 75,
	ATTR_CC_MINOR = 76,
	ATTR_SMEM_PER_BLOCK_OPTIN = 97,
	ATTR_SMEM_PER_SM = 81,
	ATTR_REGS_PER_SM = 82,
	ATTR_MAX_BLOCKS_PER_SM = 106,
	ATTR_MEMORY_CLOCK_RATE = 36,
	ATTR_GLOBAL_MEMORY_BUS_WIDTH = 37,
	FUNC_MAX_THREADS = 0,
	FUNC_SHARED_BYTES = 1,
	FUNC_LOCAL_BYTES = 3,
	FUNC_NUM_REGS = 4,
	FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
	FUNC_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 14,
	LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4,
};

/* cuLaunchKernelEx's configuration (CUlaunchConfig) and its attributes
 * (CUlaunchAttribute: the id, padded to 8 bytes, then a 64-byte union of
 * values, of which the cluster's dimensions are three unsigned). */
typedef struct {
	int id;
	char pad[4];
	union {
		char pad[64];
		struct {
			unsigned x, y, z;
		} cluster;
		unsigned long long align;
	} value;
} CuLaunchAttr;
typedef struct {
	unsigned grid_x, grid_y, grid_z, block_x, block_y, block_z, smem;
	void *stream;
	CuLaunchAttr *attrs;
	unsigned nattrs;
} CuLaunchConfig;

/* Dynamic shared memory a launch may take without cuFuncSetAttribute. */
enum { SMEM_DEFAULT = 48 * 1024 };

#define DRIVER_FUNCS(X)                                                                                     \
	X(cuInit, "cuInit", CUresult, (unsigned))                                                           \
	X(cuDriverGetVersion, "cuDriverGetVersion", CUresult, (int *))                                      \
	X(cuDeviceGetCount, "cuDeviceGetCount", CUresult, (int *))                                          \
	X(cuDeviceGet, "cuDeviceGet", CUresult, (CUdevice *, int))                                          \
	X(cuDeviceGetName, "cuDeviceGetName", CUresult, (char *, int, CUdevice))                            \
	X(cuDeviceGetAttribute, "cuDeviceGetAttribute", CUresult, (int *, int, CUdevice))                   \
	X(cuDeviceTotalMem, "cuDeviceTotalMem_v2", CUresult, (size_t *, CUdevice))                          \
	X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", CUresult, (CUcontext *, CUdevice))          \
	X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", CUresult, (CUdevice))                  \
	X(cuCtxSetCurrent, "cuCtxSetCurrent", CUresult, (CUcontext))                                        \
	X(cuCtxSynchronize, "cuCtxSynchronize", CUresult, (void))                                           \
	X(cuCtxGetCurrent, "cuCtxGetCurrent", CUresult, (CUcontext *))                                      \
	X(cuCtxGetDevice, "cuCtxGetDevice", CUresult, (CUdevice *))                                         \
	X(cuMemsetD8Async, "cuMemsetD8Async", CUresult, (RtPtr, unsigned char, size_t, CUstream))           \
	X(cuModuleLoadDataEx, "cuModuleLoadDataEx", CUresult, (CUmodule *, const void *, unsigned, int *, void **)) \
	X(cuModuleUnload, "cuModuleUnload", CUresult, (CUmodule))                                           \
	X(cuModuleGetFunction, "cuModuleGetFunction", CUresult, (CUfunction *, CUmodule, const char *))     \
	X(cuFuncGetAttribute, "cuFuncGetAttribute", CUresult, (int *, int, CUfunction))                     \
	X(cuMemAlloc, "cuMemAlloc_v2", CUresult, (RtPtr *, size_t))                                         \
	X(cuMemFree, "cuMemFree_v2", CUresult, (RtPtr))                                                     \
	X(cuMemcpyHtoD, "cuMemcpyHtoD_v2", CUresult, (RtPtr, const void *, size_t))                         \
	X(cuMemcpyDtoH, "cuMemcpyDtoH_v2", CUresult, (void *, RtPtr, size_t))                               \
	X(cuMemsetD8, "cuMemsetD8_v2", CUresult, (RtPtr, unsigned char, size_t))                            \
	X(cuMemcpyDtoD, "cuMemcpyDtoD_v2", CUresult, (RtPtr, RtPtr, size_t))                                \
	X(cuLaunchKernel, "cuLaunchKernel", CUresult,                                                       \
	  (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void **, void **)) \
	X(cuEventCreate, "cuEventCreate", CUresult, (CUevent *, unsigned))                                  \
	X(cuEventRecord, "cuEventRecord", CUresult, (CUevent, CUstream))                                    \
	X(cuEventSynchronize, "cuEventSynchronize", CUresult, (CUevent))                                    \
	X(cuEventElapsedTime, "cuEventElapsedTime", CUresult, (float *, CUevent, CUevent))                  \
	X(cuEventDestroy, "cuEventDestroy_v2", CUresult, (CUevent))                                         \
	X(cuGetErrorName, "cuGetErrorName", CUresult, (CUresult, const char **))                            \
	X(cuGetErrorString, "cuGetErrorString", CUresult, (CUresult, const char **))

typedef struct Alloc Alloc;
struct Alloc {
	RtPtr p;
	Alloc *next;
};

struct RtModule {
	CUmodule mod;
};

struct Rt {
	void *lib;
#define FIELD(field, sym, ret, args) ret(*field) args;
	DRIVER_FUNCS(FIELD)
#undef FIELD
	/* optional: resolved when present, needed only by launches over 48 KB
	 * of dynamic shared memory */
	CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
	/* optional: the stream-ordered allocator (CUDA 11.2 on) */
	CUresult (*cuMemAllocAsync)(RtPtr *, size_t, CUstream);
	CUresult (*cuMemFreeAsync)(RtPtr, CUstream);
	/* optional: launches with attributes (CUDA 12 on), for thread-block clusters */
	CUresult (*cuLaunchKernelEx)(const CuLaunchConfig *, CUfunction, void **, void **);
	CUfunction cluster_fn; /* the function last allowed clusters over 8 blocks */
	/* optional: TMA tensor maps (CUDA 12 on), for the Hopper templates */
	CUresult (*cuTensorMapEncodeTiled)(void *, int, unsigned, void *, const unsigned long long *,
					   const unsigned long long *, const unsigned *, const unsigned *, int, int, int, int);
	CUstream stream; /* rt_on_stream: launches and memsets go there, asynchronously */
	int on_stream;
	int no_pools; /* cuMemAllocAsync said CUDA_ERROR_NOT_SUPPORTED */
	CUfunction smem_fn; /* the function last granted smem_bytes */
	unsigned smem_bytes;
	CUdevice dev;
	CUcontext ctx;
	RtDevice info;
	Alloc *allocs;
	int dead;           /* the sticky error that made the context unusable */
	char dead_msg[512];
};

/* The faults after which cuda.h says the context cannot be used again:
 * an illegal address, a launch that timed out, a device assert, the
 * kernel faults 714-719 (hardware stack, illegal instruction, misaligned
 * or invalid address, invalid PC, launch failed), an external device's
 * fault and an uncorrectable ECC error.  711-713 (peer access, host
 * memory registration) are errors of the call alone. */
static int is_sticky(CUresult r)
{
	return r == CUDA_ERROR_ILLEGAL_ADDRESS || r == CUDA_ERROR_LAUNCH_TIMEOUT || r == CUDA_ERROR_ASSERT ||
	       (r >= CUDA_ERROR_HARDWARE_STACK_ERROR && r <= CUDA_ERROR_LAUNCH_FAILED) || r == CUDA_ERROR_EXTERNAL_DEVICE ||
	       r == CUDA_ERROR_ECC_UNCORRECTABLE;
}

__attribute__((format(printf, 3, 4))) static void say(char *err, size_t n, const char *fmt, ...)
{
	if (!err || !n)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, n, fmt, ap);
	va_end(ap);
}

static void describe(Rt *rt, CUresult r, const char **name, const char **str)
{
	*name = "CUDA_ERROR_UNKNOWN";
	*str = "unknown error";
	if (rt->cuGetErrorName)
		rt->cuGetErrorName(r, name);
	if (rt->cuGetErrorString)
		rt->cuGetErrorString(r, str);
}

/* Turn a driver result into an RT_ code with the call's text and line. */
static int fail_call(Rt *rt, CUresult r, const char *call, int line, char *err, size_t n)
{
	const char *name, *str;
	describe(rt, r, &name, &str);
	say(err, n, "%s at %s:%d: %s (%d): %s", call, __FILE__, line, name, r, str);
	if (is_sticky(r)) {
		rt->dead = r;
		snprintf(rt->dead_msg, sizeof rt->dead_msg, "%s", err ? err : name);
		return RT_FAULT;
	}
	if (r == CUDA_ERROR_OUT_OF_MEMORY) /* not sticky; what is allocated stays its holders' to free */
		return RT_OOM;
	return RT_ERR;
}

#define CK(rt, call, err, n)                                                                 \
	do {                                                                                 \
		CUresult r_ = (rt)->call;                                                    \
		if (r_)                                                                      \
			return fail_call((rt), r_, #call, __LINE__, (err), (n));             \
	} while (0)

static int alive(Rt *rt, char *err, size_t n)
{
	if (!rt || !rt->dead)
		return 0;
	say(err, n, "the CUDA context is unusable after an earlier kernel fault: %s", rt->dead_msg);
	return RT_FAULT;
}

static int resolve(Rt *rt, char *err, size_t n)
{
#define LOAD(field, sym, ret, args)                                                                    \
	if (!(rt->field = (ret(*) args)dlsym(rt->lib, sym))) {                                         \
		say(err, n, "the CUDA driver library lacks %s; it is too old or not a driver", sym);  \
		return RT_OLD_DRIVER;                                                                  \
	}
	DRIVER_FUNCS(LOAD)
#undef LOAD
	*(void **)&rt->cuFuncSetAttribute = dlsym(rt->lib, "cuFuncSetAttribute");
	*(void **)&rt->cuMemAllocAsync = dlsym(rt->lib, "cuMemAllocAsync");
	*(void **)&rt->cuMemFreeAsync = dlsym(rt->lib, "cuMemFreeAsync");
	*(void **)&rt->cuTensorMapEncodeTiled = dlsym(rt->lib, "cuTensorMapEncodeTiled");
	*(void **)&rt->cuLaunchKernelEx = dlsym(rt->lib, "cuLaunchKernelEx");
	return 0;
}

static const char *lib_path(void *lib, const char *fallback, char path[512])
{
	void *sym = dlsym(lib, "cuInit");
	Dl_info info;
	if (sym && dladdr(sym, &info) && info.dli_fname) {
		snprintf(path, 512, "%s", info.dli_fname);
		return path;
	}
	return fallback;
}

static int query_device(Rt *rt, char *err, size_t n)
{
	RtDevice *d = &rt->info;
	struct { int attr; int *dst; } attrs[] = {
		{ATTR_CC_MAJOR, &d->major}, {ATTR_CC_MINOR, &d->minor}, {ATTR_SM_COUNT, &d->sms},
		{ATTR_L2_CACHE_SIZE, &d->l2_bytes}, {ATTR_REGS_PER_SM, &d->regs_per_sm},
		{ATTR_SMEM_PER_SM, &d->smem_per_sm}, {ATTR_SMEM_PER_BLOCK_OPTIN, &d->smem_per_block_optin},
		{ATTR_MAX_THREADS_PER_SM, &d->max_threads_per_sm}, {ATTR_MAX_BLOCKS_PER_SM, &d->max_blocks_per_sm},
		{ATTR_MEMORY_CLOCK_RATE, &d->mem_clock_khz}, {ATTR_GLOBAL_MEMORY_BUS_WIDTH, &d->mem_bus_bits},
	};
	CK(rt, cuDeviceGetName(d->name, sizeof d->name, rt->dev), err, n);
	for (size_t i = 0; i < sizeof attrs / sizeof *attrs; i++)
		CK(rt, cuDeviceGetAttribute(attrs[i].dst, attrs[i].attr, rt->dev), err, n);
	CK(rt, cuDeviceTotalMem(&d->mem, rt->dev), err, n);
	return 0;
}

/* What open_rt does with the device's primary context: nothing (a probe),
 * retains it, or retains it and makes it the thread's current one. */
enum { OPEN_PROBE, OPEN_ASIDE, OPEN_CURRENT };

static int start(Rt *rt, int ordinal, int mode, const char *path, char *err, size_t n)
{
	int rc = resolve(rt, err, n), count = 0;
	if (rc)
		return rc;
	CUresult r = rt->cuInit(0);
	if (r == CUDA_ERROR_STUB_LIBRARY || strstr(path, "/stubs/")) {
		say(err, n, "%s is the CUDA toolkit's stub library, not a driver: no NVIDIA driver is installed", path);
		return RT_STUB;
	}
	if (r == CUDA_ERROR_NO_DEVICE) {
		say(err, n, "the CUDA driver (%s) found no GPU", path);
		return RT_NO_DEVICE;
	}
	if (r)
		return fail_call(rt, r, "cuInit(0)", __LINE__, err, n);
	CK(rt, cuDriverGetVersion(&rt->info.driver), err, n);
	CK(rt, cuDeviceGetCount(&count), err, n);
	if (count <= ordinal) {
		say(err, n, "no CUDA device %d (the driver sees %d)", ordinal, count);
		return RT_NO_DEVICE;
	}
	CK(rt, cuDeviceGet(&rt->dev, ordinal), err, n);
	rt->info.ordinal = ordinal;
	if ((rc = query_device(rt, err, n)) || mode == OPEN_PROBE)
		return rc;
	CK(rt, cuDevicePrimaryCtxRetain(&rt->ctx, rt->dev), err, n);
	if (mode == OPEN_CURRENT)
		CK(rt, cuCtxSetCurrent(rt->ctx), err, n);
	return 0;
}

static int open_rt(Rt **out, const char *lib, int ordinal, int mode, char *err, size_t n)
{
	*out = NULL;
	if (!lib)
		lib = getenv("ASSOC_LIBCUDA");
	if (!lib || !*lib)
		lib = "libcuda.so.1";
	Rt *rt = calloc(1, sizeof *rt);
	if (!rt)
		abort();
	/* kept loaded once opened: unloading a driver after cuInit, while its
	 * threads live, can crash the process; a later Rt finds it in place */
	rt->lib = dlopen(lib, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	if (!rt->lib) {
		say(err, n, "no CUDA driver: cannot load %s (%s)", lib, dlerror());
		free(rt);
		return RT_NO_LIBRARY;
	}
	char path[512]; /* the caller's own: threads open drivers at once */
	int rc = start(rt, ordinal, mode, lib_path(rt->lib, lib, path), err, n);
	if (rc || mode == OPEN_PROBE) {
		rt_close(rt);
		return rc;
	}
	*out = rt;
	return 0;
}

int rt_open(Rt **out, const char *lib, int ordinal, char *err, size_t n)
{
	return open_rt(out, lib, ordinal, OPEN_CURRENT, err, n);
}

int rt_open_aside(Rt **out, const char *lib, int ordinal, char *err, size_t n)
{
	return open_rt(out, lib, ordinal, OPEN_ASIDE, err, n);
}

int rt_probe(const char *lib, int ordinal, char *err, size_t n)
{
	Rt *none;
	return open_rt(&none, lib, ordinal, OPEN_PROBE, err, n);
}

static void release_all(Rt *rt)
{
	for (Alloc *a = rt->allocs, *next; a; a = next) {
		next = a->next;
		rt->cuMemFree(a->p);
		free(a);
	}
	rt->allocs = NULL;
}

void rt_close(Rt *rt)
{
	if (!rt)
		return;
	if (rt->cuMemFree)
		release_all(rt);
	if (rt->ctx && rt->cuDevicePrimaryCtxRelease)
		rt->cuDevicePrimaryCtxRelease(rt->dev);
	if (rt->lib)
		dlclose(rt->lib);
	free(rt);
}

const RtDevice *rt_device(const Rt *rt) { return &rt->info; }

double rt_nominal_gbps(const RtDevice *d)
{
	return d->mem_clock_khz > 0 && d->mem_bus_bits > 0 ? d->mem_clock_khz * 1e3 * (d->mem_bus_bits / 8.0) * 2 / 1e9 : 0;
}
int rt_usable(const Rt *rt) { return rt && !rt->dead; }

const char *rt_ptx_isa_for_driver(int driver)
{
	static const struct { int driver; const char *isa; } t[] = {
		{13000, "9.0"}, {12090, "8.8"}, {12080, "8.7"}, {12050, "8.5"}, {12040, "8.4"}, {12030, "8.3"},
		{12020, "8.2"}, {12010, "8.1"}, {12000, "8.0"}, {11080, "7.8"}, {11070, "7.7"}, {11060, "7.6"},
		{11050, "7.5"}, {11040, "7.4"}, {11030, "7.3"}, {11020, "7.2"}, {11010, "7.1"}, {11000, "7.0"},
	};
	for (size_t i = 0; i < sizeof t / sizeof *t; i++)
		if (driver >= t[i].driver)
			return t[i].isa;
	return "6.4";
}

/* The PTX text with its `.version` line set to isa (malloc'd), or NULL. */
static char *with_isa(const char *ptx, const char *isa)
{
	const char *v = strstr(ptx, ".version ");
	if (!v)
		return NULL;
	const char *end = v + strcspn(v, "\n");
	size_t head = (size_t)(v - ptx), tail = strlen(end);
	char *out = malloc(head + 32 + tail + 1);
	if (!out)
		abort();
	int k = snprintf(out + head, 32, ".version %s", isa);
	memcpy(out, ptx, head);
	memcpy(out + head + k, end, tail + 1);
	return out;
}

static CUresult load(Rt *rt, const char *ptx, CUmodule *mod, char *log, size_t logn)
{
	int opts[] = {JIT_ERROR_LOG, JIT_ERROR_LOG_SIZE};
	void *vals[] = {log, (void *)(size_t)logn};
	log[0] = 0;
	return rt->cuModuleLoadDataEx(mod, ptx, 2, opts, vals);
}

int rt_load_ptx(Rt *rt, const char *ptx, RtModule **m, char *err, size_t n)
{
	int rc = alive(rt, err, n);
	if (rc)
		return rc;
	char log[8192];
	CUmodule mod = NULL;
	CUresult r = load(rt, ptx, &mod, log, sizeof log);
	if (r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION) {
		const char *isa = rt_ptx_isa_for_driver(rt->info.driver);
		char *older = with_isa(ptx, isa);
		r = older ? load(rt, older, &mod, log, sizeof log) : r;
		free(older);
		if (r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION) { /* any other failure of the retry is its own */
			say(err, n, "the driver (CUDA %d.%d) is too old for this PTX, even at ISA %s: update the NVIDIA "
				    "driver. JIT log: %s", rt->info.driver / 1000, rt->info.driver % 1000 / 10, isa, log);
			return RT_OLD_DRIVER;
		}
	}
	if (r) {
		rc = fail_call(rt, r, "cuModuleLoadDataEx", __LINE__, err, n);
		size_t l = strlen(err);
		if (log[0] && l < n)
			snprintf(err + l, n - l, "\nJIT log:\n%s", log);
		return rc;
	}
	*m = calloc(1, sizeof **m);
	if (!*m)
		abort();
	(*m)->mod = mod;
	return 0;
}

void rt_unload(Rt *rt, RtModule *m)
{
	if (!m)
		return;
	if (!rt->dead)
		rt->cuModuleUnload(m->mod);
	/* a later module's function may take the same address, without the
	 * grants */
	rt->smem_fn = NULL;
	rt->cluster_fn = NULL;
	free(m);
}

int rt_function(Rt *rt, RtModule *m, const char *name, void **fn, char *err, size_t n)
{
	int rc = alive(rt, err, n);
	if (rc)
		return rc;
	CK(rt, cuModuleGetFunction((CUfunction *)fn, m->mod, name), err, n);
	return 0;
}

int rt_func_attrs(Rt *rt, void *fn, RtFuncAttrs *a, char *err, size_t n)
{
	CK(rt, cuFuncGetAttribute(&a->regs, FUNC_NUM_REGS, fn), err, n);
	CK(rt, cuFuncGetAttribute(&a->smem, FUNC_SHARED_BYTES, fn), err, n);
	CK(rt, cuFuncGetAttribute(&a->local, FUNC_LOCAL_BYTES, fn), err, n);
	CK(rt, cuFuncGetAttribute(&a->max_threads, FUNC_MAX_THREADS, fn), err, n);
	return 0;
}

int rt_alloc(Rt *rt, size_t bytes, RtPtr *p, char *err, size_t n)
{
	int rc = alive(rt, err, n);
	if (rc)
		return rc;
	CK(rt, cuMemAlloc(p, bytes ? bytes : 1), err, n);
	Alloc *a = malloc(sizeof *a);
	if (!a)
		abort();
	*a = (Alloc){*p, rt->allocs};
	rt->allocs = a;
	return 0;
}

void rt_free(Rt *rt, RtPtr p)
{
	for (Alloc **a = &rt->allocs; *a; a = &(*a)->next)
		if ((*a)->p == p) {
			Alloc *dead = *a;
			*a = dead->next;
			free(dead);
			if (!rt->dead)
				rt->cuMemFree(p);
			return;
		}
}

int rt_upload(Rt *rt, RtPtr dst, const void *src, size_t bytes, char *err, size_t n)
{
	int rc = alive(rt, err, n);
	if (rc || !bytes) /* nothing to copy: a NULL host pointer is the caller's right */
		return rc;
	CK(rt, cuMemcpyHtoD(dst, src, bytes), err, n);
	return 0;
}

int rt_download(Rt *rt, void *dst, RtPtr src, size_t bytes, char *err, size_t n)
{
	int rc = alive(rt, err, n);
	if (rc || !bytes) /* nothing to copy: a NULL host pointer is the caller's right */
		return rc;
	CK(rt, cuMemcpyDtoH(dst, src, bytes), err, n);
	return 0;
}

int rt_memset(Rt *rt, RtPtr dst, unsigned char v, size_t bytes, char *err, size_t n)
{
	int rc = alive(rt, err, n);
	if (rc)
		return rc;
	if (rt->on_stream)
		CK(rt, cuMemsetD8Async(dst, v, bytes, rt->stream), err, n);
	else
		CK(rt, cuMemsetD8(dst, v, bytes), err, n);
	return 0;
}

int rt_copy(Rt *rt, RtPtr dst, RtPtr src, size_t bytes, char *err, size_t n)
{
	int rc = alive(rt, err, n);
	if (rc)
		return rc;
	CK(rt, cuMemcpyDtoD(dst, src, bytes), err, n);
	return 0;
}

/* Over 48 KB of dynamic shared memory a kernel must opt in, up to the
 * device's limit; the grant is remembered for the function last given one,
 * so repeated launches (timing loops) skip the call. */
static int grant_smem(Rt *rt, void *fn, unsigned smem, char *err, size_t n)
{
	if (smem <= SMEM_DEFAULT || (fn == rt->smem_fn && smem <= rt->smem_bytes))
		return 0;
	/* the opt-in limit holds the kernel's static shared memory too */
	int fixed = 0;
	if (rt->cuFuncGetAttribute(&fixed, FUNC_SHARED_BYTES, fn))
		fixed = 0;
	if ((long long)smem + fixed > rt->info.smem_per_block_optin) {
		char also[96] = "";
		if (fixed)
			snprintf(also, sizeof also, " beside the kernel's %d bytes of static shared memory", fixed);
		say(err, n, "a launch asks for %u bytes of dynamic shared memory%s; %s allows at most %d per block", smem,
		    also, rt->info.name, rt->info.smem_per_block_optin);
		return RT_ERR;
	}
	if (!rt->cuFuncSetAttribute) {
		say(err, n, "the CUDA driver library lacks cuFuncSetAttribute, which a launch with %u bytes of dynamic "
			    "shared memory (over 48 KB) needs; it is too old", smem);
		return RT_OLD_DRIVER;
	}
	CK(rt, cuFuncSetAttribute(fn, FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)smem), err, n);
	rt->smem_fn = fn, rt->smem_bytes = smem;
	return 0;
}

int rt_launch(Rt *rt, void *fn, const unsigned grid[3], const unsigned block[3], unsigned smem, void **args,
	      char *err, size_t n)
{
	int rc = alive(rt, err, n);
	if (rc || (rc = grant_smem(rt, fn, smem, err, n)))
		return rc;
	CK(rt, cuLaunchKernel(fn, grid[0], grid[1], grid[2], block[0], block[1], block[2], smem,
			      rt->on_stream ? rt->stream : NULL, args, NULL),
	   err, n);
	return 0;
}

int rt_has_clusters(const Rt *rt) { return rt->cuLaunchKernelEx && rt->info.major >= 9; }

int rt_launch_cluster(Rt *rt, void *fn, const unsigned grid[3], const unsigned block[3], unsigned smem,
		      unsigned cluster, void **args, char *err, size_t n)
{
	if (cluster <= 1)
		return rt_launch(rt, fn, grid, block, smem, args, err, n);
	int rc = alive(rt, err, n);
	if (rc || (rc = grant_smem(rt, fn, smem, err, n)))
		return rc;
	if (!rt_has_clusters(rt)) {
		say(err, n, "a launch in thread-block clusters of %u blocks needs %s", cluster,
		    rt->cuLaunchKernelEx ? "compute capability 9.0 or newer" : "cuLaunchKernelEx, which the CUDA driver "
										"library lacks (before CUDA 12)");
		return RT_OLD_DRIVER;
	}
	if (grid[0] % cluster) {
		say(err, n, "a grid of %u blocks is not a whole number of clusters of %u", grid[0], cluster);
		return RT_ERR;
	}
	/* past the portable 8 blocks, the function opts in */
	if (cluster > 8 && fn != rt->cluster_fn) {
		if (!rt->cuFuncSetAttribute) {
			say(err, n, "a cluster of %u blocks needs cuFuncSetAttribute, which the CUDA driver library lacks",
			    cluster);
			return RT_OLD_DRIVER;
		}
		CK(rt, cuFuncSetAttribute(fn, FUNC_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1), err, n);
		rt->cluster_fn = fn;
	}
	CuLaunchAttr at;
	memset(&at, 0, sizeof at);
	at.id = LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
	at.value.cluster.x = cluster, at.value.cluster.y = 1, at.value.cluster.z = 1;
	CuLaunchConfig cfg = {grid[0], grid[1], grid[2], block[0], block[1], block[2], smem,
			      rt->on_stream ? rt->stream : NULL, &at, 1};
	CK(rt, cuLaunchKernelEx(&cfg, fn, args, NULL), err, n);
	return 0;
}

int rt_tensor_map(Rt *rt, void *map, int type, int swizzle, int rank, RtPtr base, const unsigned long long *dims,
		  const unsigned long long *strides, const unsigned *box, char *err, size_t n)
{
	/* cuda.h's values: CU_TENSOR_MAP_DATA_TYPE_UINT8 0, _FLOAT16 6,
	 * _BFLOAT16 9; INTERLEAVE_NONE 0; SWIZZLE_64B 2, _128B 3;
	 * L2_PROMOTION_L2_256B 3; OOB_FILL_NONE 0 (zeros) */
	enum { U8 = 0, F16 = 6, BF16 = 9, SWIZZLE_64B = 2, SWIZZLE_128B = 3, L2_256B = 3 };
	const unsigned ones[5] = {1, 1, 1, 1, 1};
	if (!rt->cuTensorMapEncodeTiled) {
		say(err, n, "the CUDA driver has no cuTensorMapEncodeTiled (CUDA 12 or newer has it): the Hopper templates "
			    "cannot run; --config with a template without wg runs");
		return -1;
	}
	CK(rt, cuTensorMapEncodeTiled(map, type == RT_TMAP_U8 ? U8 : type == RT_TMAP_BF16 ? BF16 : F16, (unsigned)rank,
				      (void *)(size_t)base, dims, strides, box, ones, 0,
				      swizzle == 64 ? SWIZZLE_64B : SWIZZLE_128B, L2_256B, 0),
	   err, n);
	return 0;
}

int rt_sync(Rt *rt, char *err, size_t n)
{
	int rc = alive(rt, err, n);
	if (rc)
		return rc;
	CK(rt, cuCtxSynchronize(), err, n);
	return 0;
}

int rt_time(Rt *rt, int (*enqueue)(void *ctx, char *err, size_t n), void *ctx, float *ms, char *err, size_t n)
{
	int rc = alive(rt, err, n);
	if (rc)
		return rc;
	CUevent ev[2] = {NULL, NULL};
	CK(rt, cuEventCreate(&ev[0], 0), err, n);
	CUresult r = rt->cuEventCreate(&ev[1], 0);
	if (!r)
		r = rt->cuEventRecord(ev[0], NULL);
	if (!r && (rc = enqueue(ctx, err, n)))
		goto out;
	if (!r)
		r = rt->cuEventRecord(ev[1], NULL);
	if (!r)
		r = rt->cuEventSynchronize(ev[1]);
	if (!r)
		r = rt->cuEventElapsedTime(ms, ev[0], ev[1]);
	if (r)
		rc = fail_call(rt, r, "event timing (cuEventRecord/Synchronize/ElapsedTime)", __LINE__, err, n);
out:
	for (int i = 0; i < 2; i++)
		if (ev[i] && !rt->dead)
			rt->cuEventDestroy(ev[i]);
	return rc;
}

void rt_on_stream(Rt *rt, void *stream, int on)
{
	rt->stream = on ? stream : NULL;
	rt->on_stream = on;
}

int rt_has_async_alloc(const Rt *rt) { return rt->cuMemAllocAsync && rt->cuMemFreeAsync && !rt->no_pools; }

static int listed(const Rt *rt, RtPtr p)
{
	for (const Alloc *a = rt->allocs; a; a = a->next)
		if (a->p == p)
			return 1;
	return 0;
}

int rt_alloc_async(Rt *rt, size_t bytes, RtPtr *p, char *err, size_t n)
{
	int rc = alive(rt, err, n);
	if (rc)
		return rc;
	if (rt_has_async_alloc(rt)) {
		CUresult r = rt->cuMemAllocAsync(p, bytes ? bytes : 1, rt->stream);
		if (!r)
			return 0;
		if (r != CUDA_ERROR_NOT_SUPPORTED) /* a device without memory pools: the plain allocator */
			return fail_call(rt, r, "cuMemAllocAsync", __LINE__, err, n);
		rt->no_pools = 1;
	}
	return rt_alloc(rt, bytes, p, err, n);
}

void rt_free_async(Rt *rt, RtPtr p)
{
	if (listed(rt, p))
		rt_free(rt, p);
	else if (!rt->dead)
		rt->cuMemFreeAsync(p, rt->stream);
}

void rt_free_now(Rt *rt, RtPtr p)
{
	if (listed(rt, p))
		rt_free(rt, p);
	else if (!rt->dead)
		rt->cuMemFree(p);
}

int rt_enter_ctx(Rt *rt, void **ctx, char *err, size_t n)
{
	int rc = alive(rt, err, n);
	if (rc)
		return rc;
	CUcontext cur = NULL;
	CK(rt, cuCtxGetCurrent(&cur), err, n);
	if (!cur) {
		CK(rt, cuCtxSetCurrent(rt->ctx), err, n);
		cur = rt->ctx;
	}
	if (cur != rt->ctx) {
		CUdevice d;
		CK(rt, cuCtxGetDevice(&d), err, n);
		if (d != rt->dev) {
			say(err, n, "the current CUDA context is on device %d; this kernel was compiled for device %d (%s)", d,
			    rt->info.ordinal, rt->info.name);
			return RT_ERR;
		}
	}
	*ctx = cur;
	return 0;
}

void *rt_primary_ctx(const Rt *rt) { return rt->ctx; }

int rt_get_ctx(Rt *rt, void **ctx, char *err, size_t n)
{
	*ctx = NULL;
	CK(rt, cuCtxGetCurrent(ctx), err, n);
	return 0;
}

int rt_set_ctx(Rt *rt, void *ctx, char *err, size_t n)
{
	CK(rt, cuCtxSetCurrent(ctx), err, n);
	return 0;
}
