/* fakecuda.c: a stand-in for libcuda.so.1 that implements the entry points
 * runtime/driver.c uses and fails on demand, so every error path of the
 * driver layer is tested on machines without a GPU.
 *
 * FAKECUDA (comma-separated): init=N, count=N, driver=N, oom_after=K (the
 * K-th allocation fails), launch=N, sync=N, ptx_max=X.Y (newer PTX is
 * refused with CUDA_ERROR_UNSUPPORTED_PTX_VERSION), elapsed=MS, optin=BYTES
 * (the opt-in limit of shared memory per block), memclock=KHZ and
 * buswidth=BITS (0: a driver that gives no memory clock or bus width).
 *
 * It counts host copies and synchronizations (fakecuda_syncs), records the
 * stream and the current context of the last launch (fakecuda_last) and
 * keeps a current context per thread (cuCtxSetCurrent, cuCtxGetCurrent;
 * contexts other than the primary one, 0x1, are on device ctxdev=N).
 * The primary context is counted as the driver keeps it: created by the
 * retain that finds it unreferenced, reset by the release of its last
 * reference (fakecuda_primary).  Allocations, module loads and launches
 * need a live current context: none is CUDA_ERROR_INVALID_CONTEXT, the
 * primary one after its reset CUDA_ERROR_CONTEXT_IS_DESTROYED.  A module
 * belongs to the context current at its load; a launch of one of its
 * functions in another context is CUDA_ERROR_INVALID_CONTEXT.
 *
 * A function handle is one of a module's kernels, with attributes of its
 * own (the opt-in of dynamic shared memory, non-portable cluster sizes);
 * unloading the module frees its handles, and the next module's kernels
 * take the freed addresses first, with default attributes, as the
 * driver's heap may give them; a launch of a freed handle is
 * CUDA_ERROR_INVALID_HANDLE.  static=BYTES: the static shared memory of
 * every kernel (CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES), which the opt-in
 * limit covers along with the dynamic bytes.
 * async=0: cuMemAllocAsync answers CUDA_ERROR_NOT_SUPPORTED, as on a device
 * without memory pools.
 *
 * It records the dynamic shared bytes of the last launch and the last
 * cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES) (fakecuda_smem); built
 * with FAKECUDA_OLD, it lacks cuFuncSetAttribute, as drivers before CUDA 9,
 * and cuTensorMapEncodeTiled, as drivers before CUDA 12.
 *
 * cuTensorMapEncodeTiled checks what the driver documents (rank 1-5, a
 * 16-byte aligned address, strides multiples of 16, boxes of 1 to 256
 * whose inner bytes are a multiple of 16 and, swizzled, within the
 * swizzle's span) and counts the maps it encodes (fakecuda_tmaps).
 *
 * cuLaunchKernel refuses, with CUDA_ERROR_INVALID_VALUE as the driver,
 * a grid past x 2^31 - 1, y or z 65535, and a block past 1024 threads
 * (x and y 1024, z 64).
 *
 * cuLaunchKernelEx launches as cuLaunchKernel does and records the
 * cluster dimensions its attributes give (fakecuda_cluster), refusing a
 * grid that is not a whole number of clusters and, as the driver does,
 * a cluster over 8 blocks unless the function allowed non-portable sizes
 * (cuFuncSetAttribute 14); built with FAKECUDA_OLD it lacks it, as
 * drivers before CUDA 12. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned long long Ptr;

static long opt(const char *key, long dflt)
{
	const char *s = getenv("FAKECUDA");
	char pat[32];
	snprintf(pat, sizeof pat, "%s=", key);
	const char *p = s ? strstr(s, pat) : NULL;
	return p ? strtol(p + strlen(pat), NULL, 10) : dflt;
}

static double optf(const char *key, double dflt)
{
	const char *s = getenv("FAKECUDA");
	char pat[32];
	snprintf(pat, sizeof pat, "%s=", key);
	const char *p = s ? strstr(s, pat) : NULL;
	return p ? strtod(p + strlen(pat), NULL) : dflt;
}

static int live, allocs, launches, set_attrs, granted = -1, entries, dtod;
static unsigned launch_smem, launch_grid, launch_grid_y, launch_cluster[3];
static int launch_nonportable;
/* The cluster dimensions of the last launch (0, 0, 0: none, or
 * cuLaunchKernel) and whether its function was allowed non-portable
 * sizes. */
void fakecuda_cluster(unsigned dims[3], int *nonportable)
{
	memcpy(dims, launch_cluster, sizeof launch_cluster);
	*nonportable = launch_nonportable;
}

/* A loaded module: the context current at its load. */
typedef struct {
	void *ctx;
} Mod;
/* A function's attributes; fns[] are the handles of modules' kernels,
 * others (a caller's own pointers) are kept apart by address. */
typedef struct {
	int nonportable, granted;
} Attrs;
typedef struct {
	Mod *mod; /* NULL: free */
	char name[64];
	Attrs at;
} Fn;
static Fn fns[256];
static struct {
	void *f;
	Attrs at;
} others[64];
static Fn *fn_of(void *f)
{
	return (char *)f >= (char *)fns && (char *)f < (char *)(fns + 256) ? (Fn *)f : NULL;
}
static Attrs *attrs_of(void *f)
{
	Fn *h = fn_of(f);
	if (h)
		return &h->at;
	int i = 0;
	while (i < 63 && others[i].f && others[i].f != f)
		i++;
	if (!others[i].f)
		others[i].f = f, others[i].at = (Attrs){0, -1};
	return &others[i].at;
}
int fakecuda_live(void) { return live; }
/* the grid's x dimension of the last launch */
unsigned fakecuda_grid(void) { return launch_grid; }
/* and its y dimension */
unsigned fakecuda_grid_y(void) { return launch_grid_y; }
int fakecuda_launches(void) { return launches; }
/* Kernels (.entry) in every module loaded so far, and device-to-device
 * copies made. */
int fakecuda_entries(void) { return entries; }
int fakecuda_copies(void) { return dtod; }
/* The last launch's dynamic shared bytes, the last granted maximum (-1:
 * none) and how many grants there were. */
void fakecuda_smem(unsigned *launch, int *grant, int *grants)
{
	*launch = launch_smem, *grant = granted, *grants = set_attrs;
}

int cuInit(unsigned f) { (void)f; return (int)opt("init", 0); }
int cuDriverGetVersion(int *v) { *v = (int)opt("driver", 13000); return 0; }
int cuDeviceGetCount(int *n) { *n = (int)opt("count", 1); return 0; }
int cuDeviceGet(int *d, int i) { *d = i; return 0; }
int cuDeviceGetName(char *s, int n, int d) { snprintf(s, n, "Fake GPU %d", d); return 0; }
int cuDeviceGetAttribute(int *v, int attr, int d)
{
	(void)d;
	switch (attr) {
	case 75: *v = 9; break;          /* compute capability 9.0 */
	case 76: *v = 0; break;
	case 16: *v = 132; break;        /* SMs */
	case 38: *v = 50 << 20; break;   /* L2 */
	case 82: *v = 65536; break;      /* registers per SM */
	case 81: *v = 228 << 10; break;  /* shared memory per SM */
	case 97: *v = (int)opt("optin", 227 << 10); break;
	case 39: *v = 2048; break;
	case 106: *v = 32; break;
	case 36: *v = (int)opt("memclock", 3201000); break; /* kHz */
	case 37: *v = (int)opt("buswidth", 6144); break;    /* bits */
	default: *v = 1024; break;
	}
	return 0;
}
int cuDeviceTotalMem_v2(size_t *b, int d) { (void)d; *b = (size_t)141 << 30; return 0; }
static int primary_refs, primary_creations;
/* References to the primary context now, and how many times it was
 * created. */
void fakecuda_primary(int *refs, int *creations) { *refs = primary_refs, *creations = primary_creations; }
int cuDevicePrimaryCtxRetain(void **c, int d)
{
	(void)d;
	if (!primary_refs++)
		primary_creations++;
	*c = (void *)0x1;
	return 0;
}
int cuDevicePrimaryCtxRelease_v2(int d)
{
	(void)d;
	if (!primary_refs)
		return 201; /* CUDA_ERROR_INVALID_CONTEXT: not retained */
	primary_refs--;
	return 0;
}
static _Thread_local void *current;
static void *launch_stream, *launch_ctx;
static int copies, syncs, async_allocs, async_frees;
/* 0, or why the current context cannot take work */
static int ctx_error(void)
{
	return !current ? 201 /* CUDA_ERROR_INVALID_CONTEXT */
	       : current == (void *)0x1 && !primary_refs ? 709 /* CUDA_ERROR_CONTEXT_IS_DESTROYED */
							 : 0;
}
int cuCtxSetCurrent(void *c) { current = c; return 0; }
int cuCtxGetCurrent(void **c) { *c = current; return 0; }
int cuCtxGetDevice(int *d) { *d = current == (void *)0x1 ? 0 : (int)opt("ctxdev", 0); return 0; }
/* Launches since the last synchronization, and stream-ordered allocations
 * freed by a plain cuMemFree while launches may still read them (the
 * driver does not wait there for such memory). */
static int pending;
static int unsafe_frees;
int fakecuda_unsafe_frees(void) { return unsafe_frees; }
int cuCtxSynchronize(void) { syncs++, pending = 0; return (int)opt("sync", 0); }
/* Host copies and synchronizations (cuMemcpy*, cuCtxSynchronize,
 * cuStreamSynchronize, cuEventSynchronize) so far. */
void fakecuda_syncs(int *copies_, int *syncs_) { *copies_ = copies, *syncs_ = syncs; }
/* The stream and the current context of the last launch; stream-ordered
 * allocations and frees so far. */
void fakecuda_last(void **stream, void **ctx, int *allocs_, int *frees_)
{
	*stream = launch_stream, *ctx = launch_ctx, *allocs_ = async_allocs, *frees_ = async_frees;
}
int cuStreamSynchronize(void *s) { (void)s; syncs++, pending = 0; return 0; }

int cuModuleLoadDataEx(void **m, const void *img, unsigned n, int *opts, void **vals)
{
	if (ctx_error())
		return ctx_error();
	const char *ptx = img, *v = strstr(ptx, ".version ");
	double max = optf("ptx_max", 99);
	if (v && strtod(v + 9, NULL) > max + 1e-9) {
		for (unsigned i = 0; i < n; i++)
			if (opts[i] == 5)
				snprintf(vals[i], 100, "ptxas fatal: Unsupported .version %.1f; current version is '%.1f'",
					 strtod(v + 9, NULL), max);
		return 222;
	}
	if (!strstr(ptx, ".entry")) {
		for (unsigned i = 0; i < n; i++)
			if (opts[i] == 5)
				snprintf(vals[i], 100, "ptxas application ptx input, line 1; error: no kernel");
		return 218;
	}
	for (const char *e = strstr(ptx, ".entry"); e; e = strstr(e + 6, ".entry"))
		entries++;
	Mod *mod = malloc(sizeof *mod);
	mod->ctx = current;
	*m = mod;
	return 0;
}
int cuModuleUnload(void *m)
{
	for (int i = 0; i < 256; i++)
		if (fns[i].mod == m)
			fns[i].mod = NULL;
	free(m);
	return 0;
}
/* A handle per kernel of a module, the same for every look-up of it (the
 * caller's name buffer may be reused for the next kernel); a new one takes
 * the first free address. */
int cuModuleGetFunction(void **f, void *m, const char *name)
{
	if (!strcmp(name, "missing"))
		return 500;
	int i = 0, free_at = -1;
	for (; i < 256 && !(fns[i].mod == m && !strncmp(fns[i].name, name, 63)); i++)
		if (free_at < 0 && !fns[i].mod)
			free_at = i;
	if (i == 256) {
		if (free_at < 0)
			return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
		i = free_at;
		fns[i].mod = m;
		snprintf(fns[i].name, sizeof fns[i].name, "%s", name);
		fns[i].at = (Attrs){0, -1};
	}
	*f = &fns[i];
	return 0;
}
int cuFuncGetAttribute(int *v, int attr, void *f)
{
	(void)f;
	*v = attr == 4 ? 32 : attr == 3 ? (int)opt("local", 0) : attr == 0 ? 1024 : attr == 1 ? (int)opt("static", 0) : 0;
	return 0;
}
#ifndef FAKECUDA_OLD
int cuFuncSetAttribute(void *f, int attr, int v)
{
	set_attrs++;
	if (attr == 14)
		attrs_of(f)->nonportable = v != 0;
	if (attr == 8) {
		/* the opt-in limit covers the kernel's static shared memory too */
		if (v > opt("optin", 227 << 10) - opt("static", 0))
			return 1; /* CUDA_ERROR_INVALID_VALUE */
		granted = attrs_of(f)->granted = v;
	}
	return 0;
}
#endif
int cuMemAlloc_v2(Ptr *p, size_t n)
{
	if (ctx_error())
		return ctx_error();
	if (++allocs == opt("oom_after", -1))
		return 2;
	*p = (Ptr)(size_t)calloc(1, n ? n : 1);
	live++;
	return 0;
}
static Ptr async_live[64];
static int is_async(Ptr p, int drop)
{
	for (int i = 0; i < 64; i++)
		if (p && async_live[i] == p) {
			if (drop)
				async_live[i] = 0;
			return 1;
		}
	return 0;
}
static int release(Ptr p) { free((void *)(size_t)p); live--; return 0; }
int cuMemFree_v2(Ptr p)
{
	if (is_async(p, 1) && pending)
		unsafe_frees++;
	return release(p);
}
int cuMemcpyHtoD_v2(Ptr d, const void *s, size_t n) { copies++; memcpy((void *)(size_t)d, s, n); return 0; }
int cuMemcpyDtoH_v2(void *d, Ptr s, size_t n) { copies++; memcpy(d, (void *)(size_t)s, n); return 0; }
int cuMemcpyDtoD_v2(Ptr d, Ptr s, size_t n) { copies++, dtod++; memcpy((void *)(size_t)d, (void *)(size_t)s, n); return 0; }
int cuMemsetD8_v2(Ptr d, unsigned char v, size_t n) { memset((void *)(size_t)d, v, n); return 0; }
int cuMemsetD8Async(Ptr d, unsigned char v, size_t n, void *st) { (void)st; memset((void *)(size_t)d, v, n); return 0; }
#ifndef FAKECUDA_OLD
static int tmaps;
int fakecuda_tmaps(void) { return tmaps; }
int cuTensorMapEncodeTiled(void *map, int type, unsigned rank, void *base, const unsigned long long *dims,
			   const unsigned long long *strides, const unsigned *box, const unsigned *estr, int il, int swz,
			   int l2, int oob)
{
	(void)l2, (void)oob, (void)il;
	unsigned esize = type == 0 ? 1 : type == 6 || type == 9 ? 2 : type == 7 ? 4 : 0, span = swz ? 16u << swz : 0;
	if (!esize || rank < 1 || rank > 5 || ((size_t)base & 15) || box[0] * esize % 16 || (span && box[0] * esize > span))
		return 1; /* CUDA_ERROR_INVALID_VALUE */
	for (unsigned k = 0; k < rank; k++)
		if (!dims[k] || box[k] < 1 || box[k] > 256 || estr[k] != 1 || (k + 1 < rank && strides[k] % 16))
			return 1;
	memset(map, 0, 128);
	memcpy(map, &base, sizeof base);
	tmaps++;
	return 0;
}
int cuMemAllocAsync(Ptr *p, size_t n, void *st)
{
	(void)st;
	if (!opt("async", 1))
		return 801; /* CUDA_ERROR_NOT_SUPPORTED */
	async_allocs++;
	int rc = cuMemAlloc_v2(p, n);
	for (int i = 0; !rc && i < 64; i++)
		if (!async_live[i]) {
			async_live[i] = *p;
			break;
		}
	return rc;
}
int cuMemFreeAsync(Ptr p, void *st)
{
	(void)st;
	async_frees++;
	is_async(p, 1);
	return release(p);
}
#endif
int cuLaunchKernel(void *f, unsigned a, unsigned b, unsigned c, unsigned d, unsigned e, unsigned g, unsigned s,
		   void *st, void **args, void **x)
{
	(void)args, (void)x;
	launches++, pending++;
	launch_smem = s, launch_grid = a, launch_grid_y = b;
	launch_stream = st, launch_ctx = current;
	memset(launch_cluster, 0, sizeof launch_cluster);
	Fn *h = fn_of(f);
	Attrs *at = attrs_of(f);
	launch_nonportable = at->nonportable;
	if (ctx_error())
		return ctx_error();
	if (h && !h->mod)
		return 400; /* CUDA_ERROR_INVALID_HANDLE: its module was unloaded */
	if (h && h->mod->ctx != current)
		return 201; /* CUDA_ERROR_INVALID_CONTEXT: a function of another context's module */
	if (s > 48 * 1024 && (int)s > at->granted)
		return 1; /* as the driver: more than 48 KB only after the function opts in */
	if (s + opt("static", 0) > opt("optin", 227 << 10))
		return 1;
	if (!a || !b || !c || a > 0x7fffffffu || b > 65535 || c > 65535 || !d || !e || !g || d > 1024 || e > 1024 ||
	    g > 64 || (unsigned long long)d * e * g > 1024)
		return 1; /* CUDA_ERROR_INVALID_VALUE: the device's grid and block limits */
	return (int)opt("launch", 0);
}
#ifndef FAKECUDA_OLD
/* CUlaunchConfig and CUlaunchAttribute, as cuda.h lays them out */
typedef struct {
	int id;
	char pad[4];
	union {
		char pad[64];
		unsigned dims[3];
		unsigned long long align;
	} v;
} FakeAttr;
typedef struct {
	unsigned gx, gy, gz, bx, by, bz, smem;
	void *stream;
	FakeAttr *attrs;
	unsigned nattrs;
} FakeConfig;
int cuLaunchKernelEx(const FakeConfig *c, void *f, void **args, void **x)
{
	unsigned cl[3] = {0, 0, 0};
	for (unsigned k = 0; k < c->nattrs; k++)
		if (c->attrs[k].id == 4) /* CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION */
			memcpy(cl, c->attrs[k].v.dims, sizeof cl);
	int rc = cuLaunchKernel(f, c->gx, c->gy, c->gz, c->bx, c->by, c->bz, c->smem, c->stream, args, x);
	memcpy(launch_cluster, cl, sizeof cl);
	if (cl[0] && (c->gx % cl[0] || c->gy % (cl[1] ? cl[1] : 1)))
		return 1; /* CUDA_ERROR_INVALID_VALUE */
	if (cl[0] && (cl[0] * cl[1] * cl[2] > 16 || (cl[0] * cl[1] * cl[2] > 8 && !attrs_of(f)->nonportable)))
		return 912; /* CUDA_ERROR_INVALID_CLUSTER_SIZE */
	return rc;
}
#endif
int cuEventCreate(void **e, unsigned f) { (void)f; *e = malloc(1); return 0; }
int cuEventRecord(void *e, void *s) { (void)e, (void)s; return 0; }
int cuEventSynchronize(void *e) { (void)e; syncs++; return 0; }
int cuEventElapsedTime(float *ms, void *a, void *b) { (void)a, (void)b; *ms = (float)optf("elapsed", 0.25); return 0; }
int cuEventDestroy_v2(void *e) { free(e); return 0; }

int cuGetErrorName(int r, const char **s)
{
	switch (r) {
	case 1: *s = "CUDA_ERROR_INVALID_VALUE"; break;
	case 2: *s = "CUDA_ERROR_OUT_OF_MEMORY"; break;
	case 201: *s = "CUDA_ERROR_INVALID_CONTEXT"; break;
	case 400: *s = "CUDA_ERROR_INVALID_HANDLE"; break;
	case 709: *s = "CUDA_ERROR_CONTEXT_IS_DESTROYED"; break;
	case 912: *s = "CUDA_ERROR_INVALID_CLUSTER_SIZE"; break;
	case 34: *s = "CUDA_ERROR_STUB_LIBRARY"; break;
	case 100: *s = "CUDA_ERROR_NO_DEVICE"; break;
	case 218: *s = "CUDA_ERROR_INVALID_PTX"; break;
	case 222: *s = "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"; break;
	case 500: *s = "CUDA_ERROR_NOT_FOUND"; break;
	case 700: *s = "CUDA_ERROR_ILLEGAL_ADDRESS"; break;
	default: *s = "CUDA_ERROR_UNKNOWN"; break;
	}
	return 0;
}
int cuGetErrorString(int r, const char **s) { *s = r == 700 ? "an illegal memory access was encountered" : "fake error"; return 0; }
