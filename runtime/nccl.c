/* nccl.c: NCCL through dlopen/dlsym (see nccl.h). */
#include "runtime/nccl.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* NCCL's ABI as its header documents it: results are ints (0 success),
 * a communicator is a pointer, the unique id 128 bytes passed by value. */
typedef int NcclResult;
typedef void *NcclComm;

#define NCCL_FUNCS(X)                                                                                     \
	X(ncclGetUniqueId, "ncclGetUniqueId", NcclResult, (RtNcclId *))                                   \
	X(ncclCommInitRank, "ncclCommInitRank", NcclResult, (NcclComm *, int, RtNcclId, int))            \
	X(ncclCommDestroy, "ncclCommDestroy", NcclResult, (NcclComm))                                     \
	X(ncclAllGather, "ncclAllGather", NcclResult, (const void *, void *, size_t, int, NcclComm, void *)) \
	X(ncclAllReduce, "ncclAllReduce", NcclResult,                                                     \
	  (const void *, void *, size_t, int, int, NcclComm, void *))                                     \
	X(ncclGroupStart, "ncclGroupStart", NcclResult, (void))                                           \
	X(ncclGroupEnd, "ncclGroupEnd", NcclResult, (void))                                               \
	X(ncclGetErrorString, "ncclGetErrorString", const char *, (NcclResult))

struct RtNccl {
	void *lib;
#define FIELD(field, sym, ret, args) ret(*field) args;
	NCCL_FUNCS(FIELD)
#undef FIELD
	NcclComm comm;
	int ranks, rank;
	char version[32];
};

__attribute__((format(printf, 3, 4))) static void say(char *err, size_t n, const char *fmt, ...)
{
	if (!err || !n)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, n, fmt, ap);
	va_end(ap);
}

static int failed(RtNccl *nc, NcclResult r, const char *call, char *err, size_t n)
{
	const char *why = nc->ncclGetErrorString ? nc->ncclGetErrorString(r) : NULL;
	say(err, n, "%s: NCCL error %d: %s", call, r, why ? why : "unknown");
	return -1;
}

#define CK(nc, call, what, err, n)                                           \
	do {                                                                 \
		NcclResult r_ = (nc)->call;                                  \
		if (r_)                                                      \
			return failed((nc), r_, (what), (err), (n));         \
	} while (0)

int rt_nccl_open(RtNccl **out, const char *lib, char *err, size_t n)
{
	*out = NULL;
	if (!lib)
		lib = getenv("ASSOC_LIBNCCL");
	if (!lib || !*lib)
		lib = "libnccl.so.2";
	RtNccl *nc = calloc(1, sizeof *nc);
	if (!nc)
		abort();
	/* kept loaded, as the driver is: NCCL's threads outlive a communicator */
	nc->lib = dlopen(lib, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	if (!nc->lib) {
		say(err, n, "no NCCL: cannot load %s (%s)", lib, dlerror());
		free(nc);
		return -1;
	}
#define LOAD(field, sym, ret, args)                                                        \
	if (!(*(void **)&nc->field = dlsym(nc->lib, sym))) {                               \
		say(err, n, "%s lacks %s: not NCCL, or one too old", lib, sym);            \
		rt_nccl_close(nc);                                                         \
		return -1;                                                                 \
	}
	NCCL_FUNCS(LOAD)
#undef LOAD
	NcclResult (*get_version)(int *);
	*(void **)&get_version = dlsym(nc->lib, "ncclGetVersion");
	int v = 0;
	if (get_version && !get_version(&v) && v > 0) /* 2.9 on: major * 10000 + minor * 100 + patch */
		snprintf(nc->version, sizeof nc->version, "%d.%d.%d", v / 10000, v / 100 % 100, v % 100);
	else
		snprintf(nc->version, sizeof nc->version, "unknown");
	*out = nc;
	return 0;
}

void rt_nccl_close(RtNccl *nc)
{
	if (!nc)
		return;
	if (nc->comm && nc->ncclCommDestroy)
		nc->ncclCommDestroy(nc->comm);
	if (nc->lib)
		dlclose(nc->lib);
	free(nc);
}

const char *rt_nccl_version(const RtNccl *nc) { return nc ? nc->version : "none"; }
int rt_nccl_ranks(const RtNccl *nc) { return nc ? nc->ranks : 0; }
int rt_nccl_rank(const RtNccl *nc) { return nc ? nc->rank : 0; }

int rt_nccl_unique_id(RtNccl *nc, RtNcclId *id, char *err, size_t n)
{
	memset(id, 0, sizeof *id);
	CK(nc, ncclGetUniqueId(id), "ncclGetUniqueId", err, n);
	return 0;
}

int rt_nccl_init(RtNccl *nc, int ranks, const RtNcclId *id, int rank, char *err, size_t n)
{
	if (nc->comm) {
		say(err, n, "this NCCL handle has a communicator already");
		return -1;
	}
	if (ranks < 1 || rank < 0 || rank >= ranks) {
		say(err, n, "rank %d of %d: not a rank of the job", rank, ranks);
		return -1;
	}
	CK(nc, ncclCommInitRank(&nc->comm, ranks, *id, rank), "ncclCommInitRank", err, n);
	nc->ranks = ranks, nc->rank = rank;
	return 0;
}

static int has_comm(const RtNccl *nc, char *err, size_t n)
{
	if (nc->comm)
		return 1;
	say(err, n, "NCCL has no communicator yet (rt_nccl_init)");
	return 0;
}

int rt_nccl_allgather(RtNccl *nc, RtPtr send, RtPtr recv, size_t bytes, void *stream, char *err, size_t n)
{
	if (!has_comm(nc, err, n))
		return -1;
	CK(nc, ncclAllGather((const void *)(size_t)send, (void *)(size_t)recv, bytes, RT_NCCL_BYTES, nc->comm, stream),
	   "ncclAllGather", err, n);
	return 0;
}

int rt_nccl_allreduce(RtNccl *nc, RtPtr send, RtPtr recv, size_t count, int type, int op, void *stream, char *err,
		      size_t n)
{
	if (!has_comm(nc, err, n))
		return -1;
	if ((type != RT_NCCL_F32 && type != RT_NCCL_F64) || (op != RT_NCCL_SUM && op != RT_NCCL_MAX)) {
		say(err, n, "rt_nccl_allreduce: type %d, op %d: not a float sum or max", type, op);
		return -1;
	}
	CK(nc, ncclAllReduce((const void *)(size_t)send, (void *)(size_t)recv, count, type, op, nc->comm, stream),
	   "ncclAllReduce", err, n);
	return 0;
}

int rt_nccl_group(RtNccl *nc, int start, char *err, size_t n)
{
	if (start)
		CK(nc, ncclGroupStart(), "ncclGroupStart", err, n);
	else
		CK(nc, ncclGroupEnd(), "ncclGroupEnd", err, n);
	return 0;
}
