/* nccl.h: NCCL's collectives, loaded at run time.
 *
 * libnccl.so.2 is opened with dlopen (never linked), as the CUDA driver is
 * (driver.h): assoc builds and runs where NCCL is not installed, and a
 * caller that finds it missing stages its device data through the host
 * instead.  Only the entry points below are used; each failure is reported
 * with the entry point and NCCL's own error string.
 *
 * A communicator spans the ranks of a job: one rank makes the unique id
 * (rt_nccl_unique_id), the caller hands it to the others (over MPI), and
 * every rank calls rt_nccl_init with it, with its CUDA context current.
 * Buffers are device pointers of that context; the collectives are
 * enqueued on a stream (NULL: the legacy default stream). */
#ifndef ASSOC_RT_NCCL_H
#define ASSOC_RT_NCCL_H

#include <stddef.h>

#include "runtime/driver.h"

typedef struct RtNccl RtNccl;

/* ncclUniqueId: opaque bytes, the same on every rank. */
typedef struct {
	char bytes[128];
} RtNcclId;

/* The element types and reductions used (NCCL's own numbering). */
enum { RT_NCCL_BYTES = 1, RT_NCCL_F32 = 7, RT_NCCL_F64 = 8 };
enum { RT_NCCL_SUM = 0, RT_NCCL_MAX = 2 };

/* Load lib, or $ASSOC_LIBNCCL, or libnccl.so.2.  0, or -1 with why in err
 * (*nc NULL): the library is missing or lacks an entry point. */
int rt_nccl_open(RtNccl **nc, const char *lib, char *err, size_t n);
void rt_nccl_close(RtNccl *nc);
/* NCCL's version as "2.21.5" (ncclGetVersion; "unknown" without it). */
const char *rt_nccl_version(const RtNccl *nc);

int rt_nccl_unique_id(RtNccl *nc, RtNcclId *id, char *err, size_t n);
/* This process's communicator: rank of ranks, the id rank 0 made. */
int rt_nccl_init(RtNccl *nc, int ranks, const RtNcclId *id, int rank, char *err, size_t n);
int rt_nccl_ranks(const RtNccl *nc);
int rt_nccl_rank(const RtNccl *nc);

/* recv[r * bytes, (r + 1) * bytes) = rank r's send, on every rank. */
int rt_nccl_allgather(RtNccl *nc, RtPtr send, RtPtr recv, size_t bytes, void *stream, char *err, size_t n);
/* recv = op over the ranks of send, count elements of type (RT_NCCL_F32,
 * RT_NCCL_F64); recv may be send. */
int rt_nccl_allreduce(RtNccl *nc, RtPtr send, RtPtr recv, size_t count, int type, int op, void *stream, char *err,
		      size_t n);
/* Collectives between rt_nccl_group(nc, 1) and rt_nccl_group(nc, 0) are
 * launched together. */
int rt_nccl_group(RtNccl *nc, int start, char *err, size_t n);

#endif
