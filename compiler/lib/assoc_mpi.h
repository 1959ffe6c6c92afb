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
 * (each of the spec's once), commutative where the prover proves it. */
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
void assoc_mpi_free(AssocMpi *m);

#ifdef __cplusplus
}
#endif

#endif
