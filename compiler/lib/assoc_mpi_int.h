/* assoc_mpi_int.h: what assoc_mpi.c shares with `assoc run --mpi`. */
#ifndef ASSOC_MPI_INT_H
#define ASSOC_MPI_INT_H

#include <mpi.h>

#include "runtime/nccl.h"

/* nc's communicator over comm's ranks: rank 0 makes the unique id, MPI
 * hands it out.  Collective; 0, or -1 with why on every rank. */
int assoc_mpi_nccl_comm(RtNccl *nc, MPI_Comm comm, char *why, size_t n);

#endif
