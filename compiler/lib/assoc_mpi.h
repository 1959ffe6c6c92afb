/* assoc_mpi.h: a carrier's states across MPI processes.  A state is an
 * MPI datatype (its packed bytes) and the carrier's merge an MPI_Op, so
 * that MPI_Reduce, MPI_Allreduce, MPI_Scan and MPI_Exscan of states work
 * for any carrier: each process folds its own positions of every row,
 * MPI combines the states (in rank order: lower ranks hold earlier
 * positions), and finalize turns the result into the outputs.
 *
 * The op is commutative only where the prover proves the merge
 * commutative; otherwise MPI keeps the order of the ranks.  A handle
 * belongs between MPI_Init and MPI_Finalize: free it before the latter.
 *
 *   AssocMpi *m;
 *   assoc_mpi_kernel(kernel, NULL, 0, &m);
 *   assoc_mpi_fold(m, rows, len, 0, len, bufs, nbufs, mine);   this rank's keys
 *   MPI_Reduce(mine, all, rows, assoc_mpi_type(m), assoc_mpi_op(m), 0, comm);
 *   assoc_mpi_finalize(m, rows, len, bufs, nbufs, all);        on rank 0
 *
 * Arrays are bound by name as for assoc_run (assoc.h); positions are
 * numbered within the arrays given, so a rank may pass its own shard of
 * element and column inputs as the whole of them. */
#ifndef ASSOC_MPI_H
#define ASSOC_MPI_H

#include <mpi.h>
#include <stdint.h>

#include "assoc.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct AssocMpi AssocMpi;

/* out = x (+) y, x the state of the earlier positions; out may alias x. */
typedef void (*AssocMerge)(void *ctx, const void *x, const void *y, void *out);

/* Any merge of states of state_bytes: the datatype and op around it. */
AssocStatus assoc_mpi_new(size_t state_bytes, AssocMerge merge, void *ctx, int commutative, AssocMpi **out);
/* The states of kernel k's carrier, its merge with the params given
 * (each of the spec's once, held to their types as assoc_run holds them),
 * commutative where the prover proves it.  A merge whose laws read a
 * param is judged at these values as a run is: ASSOC_ELAWS where they
 * fail, the reason in assoc_kernel_error.  k
 * is a kernel compiled for "cpu": the op merges states on the CPU,
 * whichever device folded them (states left in GPU memory: below); a
 * kernel of another device is ASSOC_EINVAL, its assoc_kernel_error says
 * so.  The handle keeps k: assoc_kernel_free may come before
 * assoc_mpi_free, and k is freed with the last of them. */
AssocStatus assoc_mpi_kernel(AssocKernel *k, const AssocValue *params, int nparams, AssocMpi **out);
const char *assoc_mpi_error(const AssocMpi *m);

MPI_Datatype assoc_mpi_type(const AssocMpi *m);
MPI_Op assoc_mpi_op(const AssocMpi *m);
int assoc_mpi_commutative(const AssocMpi *m);
size_t assoc_mpi_state_bytes(const AssocMpi *m);
/* Seconds this process spent in the op's merges so far. */
double assoc_mpi_merge_seconds(const AssocMpi *m);

/* For handles of assoc_mpi_kernel: rows identity states; the state of
 * positions [lo, hi) of each row (rows states); the finalize outputs of
 * rows states; a scan of positions [lo, hi) of each row, each state the
 * prefix before lo on entry (from MPI_Exscan) and the prefix through hi
 * on return, the finalize outputs written at those positions. */
AssocStatus assoc_mpi_identity(AssocMpi *m, int64_t rows, void *states);
AssocStatus assoc_mpi_fold(AssocMpi *m, int64_t rows, int64_t len, int64_t lo, int64_t hi, const AssocBuffer *bufs,
			   int nbufs, void *states);
AssocStatus assoc_mpi_finalize(AssocMpi *m, int64_t rows, int64_t len, const AssocBuffer *bufs, int nbufs,
			       const void *states);
AssocStatus assoc_mpi_scan(AssocMpi *m, int64_t rows, int64_t len, int64_t lo, int64_t hi, const AssocBuffer *bufs,
			   int nbufs, void *states);
/* Whether the prover's certificate for kernel k's carrier transports its
 * merge into (max, +) (softmax, logsumexp, attention): the states are a
 * running maximum m, a sum l and sums o, all scaled by exp(-m), and
 * assoc_mpi_allreduce_maxplus_device combines them.  0 for handles of
 * assoc_mpi_new. */
int assoc_mpi_maxplus(const AssocMpi *m);

/* ---- states in GPU memory ----
 *
 * Per-row states that a GPU folded stay in device memory: they cross the
 * ranks by NCCL (libnccl.so.2, or $ASSOC_LIBNCCL, opened with dlopen),
 * or, where NCCL is missing on any rank or refuses them, through the host
 * over MPI, said once on stderr.  Pointers are CUDA device pointers of the device's
 * primary context (the CUDA runtime's); each call orders itself after the
 * work already on stream (NULL: the default stream) and returns when its
 * results are in device memory.
 *
 *   assoc_mpi_device_open(m, MPI_COMM_WORLD, local_rank % gpus);
 *   ... a kernel leaves rows states of this rank's positions at d_states
 *   assoc_mpi_allgather_merge_device(m, rows, d_states, d_merged, stream);
 *
 * Collective over comm: every rank calls each function, with the same rows
 * (and width). */

/* The handle's CUDA device (an ordinal) and the communicator its device
 * states cross: NCCL's communicator made from comm where every rank has
 * NCCL and NCCL makes a communicator of them (ranks sharing a GPU it
 * refuses).  ASSOC_EDEVICE where a rank has no usable GPU. */
AssocStatus assoc_mpi_device_open(AssocMpi *m, MPI_Comm comm, int device);
/* "nccl", "host" (staged over MPI) or "none" (not open). */
const char *assoc_mpi_device_transport(const AssocMpi *m);
/* Every rank's rows states (the handle's layout: assoc_mpi_state_bytes
 * each) gathered (ncclAllGather) and merged row by row in rank order with
 * the handle's merge on the host, left to right, the result in merged on
 * every rank: the same bits on every run, for any carrier.  merged may be
 * states. */
AssocStatus assoc_mpi_allgather_merge_device(AssocMpi *m, int64_t rows, const void *states, void *merged,
					     void *stream);
/* The two-collective form for (max, +) carriers (assoc_mpi_maxplus), on
 * float32 arrays: mx[rows] the running maxima, l[rows] the sums and
 * o[rows][width] the vector sums, each scaled by exp(-mx).  An all-reduce
 * MAX of mx, each rank's l and o rescaled by exp(mx - max) (on the host),
 * then an all-reduce SUM of l and o, every rank left with the combined
 * (max, l, o) in place.  NCCL's sums run in an order of its choosing: the
 * result is within rounding of the rank-ordered merge, not bit for bit
 * the same, nor the same for every number of ranks. */
AssocStatus assoc_mpi_allreduce_maxplus_device(AssocMpi *m, int64_t rows, int64_t width, void *mx, void *l, void *o,
					       void *stream);
void assoc_mpi_free(AssocMpi *m);

#ifdef __cplusplus
}
#endif

#endif
