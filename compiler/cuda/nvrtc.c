/* nvrtc.c: NVRTC through dlopen, and the PTX disk cache. */
#include "compiler/cuda/nvrtc.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/util/cache.h"

typedef int nvrtcResult;
typedef struct _nvrtcProgram *nvrtcProgram;
enum { NVRTC_ERROR_INVALID_OPTION = 5 };

struct Nvrtc {
	void *h;
	int major, minor;
	char *said; /* NVRTC's log of the last compile that succeeded (warnings), or NULL */
	char path[512];
	const char *(*err)(nvrtcResult);
	nvrtcResult (*version)(int *, int *);
	nvrtcResult (*create)(nvrtcProgram *, const char *, const char *, int, const char *const *, const char *const *);
	nvrtcResult (*compile)(nvrtcProgram, int, const char *const *);
	nvrtcResult (*log_size)(nvrtcProgram, size_t *);
	nvrtcResult (*log)(nvrtcProgram, char *);
	nvrtcResult (*ptx_size)(nvrtcProgram, size_t *);
	nvrtcResult (*ptx)(nvrtcProgram, char *);
	nvrtcResult (*destroy)(nvrtcProgram *);
};

static void *try_open(const char *path, char *tried, size_t n)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		size_t l = strlen(tried);
		snprintf(tried + l, n - l, "%s%s", l ? ", " : "", path);
	}
	return h;
}

static void *open_lib(char *path, size_t pn, char *tried, size_t n)
{
	const char *env = getenv("ASSOC_NVRTC");
	if (env && *env) {
		snprintf(path, pn, "%s", env);
		return try_open(env, tried, n);
	}
	static const char *const names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
	const char *home = getenv("CUDA_HOME");
	const char *dirs[] = {home && *home ? home : NULL, "/usr/local/cuda"};
	for (size_t i = 0; i < 3; i++) {
		snprintf(path, pn, "%s", names[i]);
		void *h = try_open(names[i], tried, n);
		if (h)
			return h;
	}
	for (size_t d = 0; d < 2; d++)
		for (size_t i = 0; dirs[d] && i < 3; i++) {
			snprintf(path, pn, "%s/lib64/%s", dirs[d], names[i]);
			void *h = try_open(path, tried, n);
			if (h)
				return h;
		}
	return NULL;
}

int nvrtc_open(Nvrtc **out, char *msg, size_t n)
{
	char tried[2048] = "";
	Nvrtc *nv = calloc(1, sizeof *nv);
	if (!nv)
		abort();
	*out = NULL;
	nv->h = open_lib(nv->path, sizeof nv->path, tried, sizeof tried);
	if (!nv->h) {
		snprintf(msg, n,
			 "NVRTC is not available (tried %s), so no PTX can be made here; specs are still checked and "
			 "--target cuda still emits CUDA C (set ASSOC_NVRTC to the path of libnvrtc.so)", tried);
		free(nv);
		return -1;
	}
	struct {
		void **slot;
		const char *name;
	} syms[] = {
		{(void **)&nv->err, "nvrtcGetErrorString"},     {(void **)&nv->version, "nvrtcVersion"},
		{(void **)&nv->create, "nvrtcCreateProgram"},   {(void **)&nv->compile, "nvrtcCompileProgram"},
		{(void **)&nv->log_size, "nvrtcGetProgramLogSize"}, {(void **)&nv->log, "nvrtcGetProgramLog"},
		{(void **)&nv->ptx_size, "nvrtcGetPTXSize"},    {(void **)&nv->ptx, "nvrtcGetPTX"},
		{(void **)&nv->destroy, "nvrtcDestroyProgram"},
	};
	for (size_t i = 0; i < sizeof syms / sizeof *syms; i++)
		if (!(*syms[i].slot = dlsym(nv->h, syms[i].name))) {
			snprintf(msg, n, "%s is not a usable NVRTC: no %s", nv->path, syms[i].name);
			nvrtc_close(nv);
			return -1;
		}
	nv->version(&nv->major, &nv->minor);
	*out = nv;
	return 0;
}

void nvrtc_close(Nvrtc *nv)
{
	if (!nv)
		return;
	/* NVRTC stays loaded: it is not made to be unloaded (it keeps
	 * allocations for the process's life), and reloading costs time. */
	free(nv->said);
	free(nv);
}

const char *nvrtc_said(const Nvrtc *nv) { return nv->said ? nv->said : ""; }

void nvrtc_version(const Nvrtc *nv, int *major, int *minor)
{
	*major = nv->major;
	*minor = nv->minor;
}

/* Returns NVRTC_ERROR_INVALID_OPTION without a message when `optional` says
 * the caller will retry with fewer options. */
static int compile(Nvrtc *nv, const char *src, const char *const *opts, int nopts, int optional, char **ptx, char *msg,
		   size_t n)
{
	nvrtcProgram p = NULL;
	nvrtcResult r = nv->create(&p, src, "assoc.cu", 0, NULL, NULL);
	if (r) {
		snprintf(msg, n, "nvrtcCreateProgram: %s", nv->err(r));
		return -1;
	}
	r = nv->compile(p, nopts, opts);
	if (r == NVRTC_ERROR_INVALID_OPTION && optional) {
		nv->destroy(&p);
		return r;
	}
	if (r) {
		size_t ls = 0;
		nv->log_size(p, &ls);
		char *log = calloc(ls + 1, 1);
		if (log)
			nv->log(p, log);
		snprintf(msg, n, "NVRTC could not compile the generated code (%s):\n%s", nv->err(r), log ? log : "");
		free(log);
		nv->destroy(&p);
		return -1;
	}
	size_t ls = 0;
	free(nv->said);
	nv->said = NULL;
	if (!nv->log_size(p, &ls) && ls > 1 && (nv->said = calloc(ls + 1, 1)) &&
	    (nv->log(p, nv->said) || strspn(nv->said, " \t\r\n") == strlen(nv->said))) {
		free(nv->said); /* nothing said, or no log to read */
		nv->said = NULL;
	}
	size_t ps = 0;
	nv->ptx_size(p, &ps);
	*ptx = calloc(ps + 1, 1);
	if (!*ptx)
		abort();
	r = nv->ptx(p, *ptx);
	nv->destroy(&p);
	if (r) {
		free(*ptx);
		*ptx = NULL;
		snprintf(msg, n, "nvrtcGetPTX: %s", nv->err(r));
		return -1;
	}
	return 0;
}

int nvrtc_ptx(Nvrtc *nv, const char *src, const char *arch, char **ptx, int *cached, char *msg, size_t n)
{
	char archopt[64];
	const char *a = arch && *arch ? arch : "sm_90";
	if (strncmp(a, "sm_", 3) && strncmp(a, "compute_", 8)) {
		snprintf(msg, n, "unknown architecture '%s' (sm_75 and later, e.g. sm_90)", a);
		return -1;
	}
	snprintf(archopt, sizeof archopt, "--gpu-architecture=compute_%s", a + (a[0] == 's' ? 3 : 8));
	/* -minimal leaves out texture, device-runtime and host API declarations
	 * the templates never use (a third of the front end's time) and does
	 * not change the PTX.  An NVRTC older than it (12.4) rejects it, and is
	 * asked again without.  Not --split-compile by default: the module's
	 * row loops are functions shared by its kernels (templates/blocks.cuh),
	 * and the PTX of a split compile has kept some from being inlined by
	 * ptxas (calls with spilled registers); with them shared, splitting is
	 * no faster on 2 cores.  ASSOC_NVRTC_SPLIT=1 asks for it, to time it on
	 * more.  C++14: the templates need no later dialect, and C++17's
	 * adds to the front end's fixed part (1.2% of NVRTC's work for online
	 * softmax's variant, the PTX the same). */
	const char *opts[] = {archopt, "-std=c++14", "--fmad=true", "-minimal", "--split-compile=0"};
	int nbase = 3, nopts = 4;
	const char *split = getenv("ASSOC_NVRTC_SPLIT");
	if (split && !strcmp(split, "1"))
		nopts = 5;
	uint64_t h = cache_hash(CACHE_HASH_INIT, src, strlen(src));
	for (int i = 0; i < nopts; i++) /* all asked for: an NVRTC that refuses some always does */
		h = cache_hash(h, opts[i], strlen(opts[i]) + 1);
	h = cache_hash(h, &nv->major, sizeof nv->major);
	h = cache_hash(h, &nv->minor, sizeof nv->minor);
	char dir[4096], path[4200], dmsg[256], why[4400] = "";
	int have_dir = cache_dir("ptx", dir, sizeof dir, dmsg, sizeof dmsg) == 0;
	*cached = 0;
	free(nv->said);
	nv->said = NULL;
	if (!have_dir)
		cache_warn(dmsg);
	else {
		snprintf(path, sizeof path, "%s/%016llx.ptx", dir, (unsigned long long)h);
		/* sealed: a file cut short or damaged, which the driver would
		 * refuse run after run, is compiled again and written over */
		if ((*ptx = cache_read_entry(path, h, NULL, why, sizeof why))) {
			*cached = 1;
			return 0;
		}
	}
	/* ASSOC_NVRTC_TIME=FILE: NVRTC (12.x and later) adds the time of its
	 * phases (front end, NVVM's optimizer and code generation) to FILE,
	 * which bench/ptx_time.sh reads; the PTX is the same, so the key is */
	const char *timing = getenv("ASSOC_NVRTC_TIME");
	char timeopt[4200];
	const char *asked[8];
	memcpy(asked, opts, nopts * sizeof *opts);
	int nasked = nopts;
	if (timing && *timing && snprintf(timeopt, sizeof timeopt, "--time=%s", timing) < (int)sizeof timeopt)
		asked[nasked++] = timeopt;
	int r = compile(nv, src, asked, nasked, 1, ptx, msg, n);
	if (r == NVRTC_ERROR_INVALID_OPTION)
		r = compile(nv, src, opts, nbase, 0, ptx, msg, n);
	if (r)
		return -1;
	/* An arch-specific target (sm_90a: wgmma, setmaxnreg) that did not
	 * reach the PTX gives code ptxas refuses, and NVRTC says nothing. */
	size_t al = strlen(a);
	if (a[al - 1] == 'a') {
		char want[40];
		snprintf(want, sizeof want, ".target sm_%s", a + (a[0] == 's' ? 3 : 8));
		const char *t = strstr(*ptx, want);
		if (!t || (t[strlen(want)] != '\n' && t[strlen(want)] != ',' && t[strlen(want)] != ' ' && t[strlen(want)] != '\r')) {
			snprintf(msg, n, "NVRTC compiled for %s without the PTX target '%s': its PTX would not assemble", a, want + 8);
			free(*ptx);
			*ptx = NULL;
			return -1;
		}
	}
	if (have_dir) /* a cache that cannot be written only costs time: said, and gone on */
		cache_put_sealed(path, h, *ptx, strlen(*ptx), why);
	return 0;
}

/* The threads that may be inside libnvrtc (loading it, or compiling),
 * which nvrtc_quiesce waits for. */
static pthread_mutex_t busy_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t busy_cv = PTHREAD_COND_INITIALIZER;
static int busy;

void nvrtc_quiesce(void)
{
	pthread_mutex_lock(&busy_mu);
	while (busy)
		pthread_cond_wait(&busy_cv, &busy_mu);
	pthread_mutex_unlock(&busy_mu);
}

static void busy_add(int d)
{
	pthread_mutex_lock(&busy_mu);
	busy += d;
	if (!busy)
		pthread_cond_broadcast(&busy_cv);
	pthread_mutex_unlock(&busy_mu);
}

static void *preload(void *arg)
{
	char path[512], tried[2048] = "";
	(void)arg;
	open_lib(path, sizeof path, tried, sizeof tried); /* the reference stays: nvrtc_open's own is the one used */
	busy_add(-1);
	return NULL;
}

void nvrtc_preload(void)
{
	static atomic_flag started = ATOMIC_FLAG_INIT; /* gpu compiles of several threads ask at once */
	pthread_t t;
	pthread_attr_t at;
	if (atomic_flag_test_and_set(&started) || pthread_attr_init(&at))
		return;
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	busy_add(1);
	if (pthread_create(&t, &at, preload, NULL)) /* not started: nvrtc_open loads it itself */
		busy_add(-1);
	pthread_attr_destroy(&at);
}

struct NvrtcJob {
	pthread_t t;
	char *src, arch[32];
	Nvrtc *nv;
	char *ptx;
	int cached, rc;
	char msg[16384];
};

static void *job_run(void *arg)
{
	NvrtcJob *j = arg;
	j->rc = nvrtc_open(&j->nv, j->msg, sizeof j->msg) ||
		nvrtc_ptx(j->nv, j->src, j->arch[0] ? j->arch : NULL, &j->ptx, &j->cached, j->msg, sizeof j->msg);
	busy_add(-1);
	return NULL;
}

NvrtcJob *nvrtc_start(const char *src, const char *arch)
{
	NvrtcJob *j = calloc(1, sizeof *j);
	if (!j || !(j->src = strdup(src)) || (arch && strlen(arch) >= sizeof j->arch)) {
		if (j)
			free(j->src);
		free(j);
		return NULL;
	}
	if (arch)
		strcpy(j->arch, arch);
	busy_add(1);
	if (pthread_create(&j->t, NULL, job_run, j)) {
		busy_add(-1);
		free(j->src);
		free(j);
		return NULL;
	}
	return j;
}

int nvrtc_finish(NvrtcJob *j, Nvrtc **nv, char **ptx, int *cached, char *msg, size_t n)
{
	if (nv)
		*nv = NULL;
	*ptx = NULL;
	if (!j)
		return -1;
	pthread_join(j->t, NULL);
	int rc = j->rc ? -1 : 0;
	if (rc)
		snprintf(msg, n, "%s", j->msg);
	*ptx = j->ptx;
	*cached = j->cached;
	if (nv && !rc)
		*nv = j->nv;
	else
		nvrtc_close(j->nv);
	free(j->src);
	free(j);
	return rc;
}
