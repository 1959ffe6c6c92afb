/* assoc_mpi_int.h: what assoc_mpi.c shares with `assoc run --mpi`. */
#ifndef ASSOC_MPI_INT_H
#define ASSOC_MPI_INT_H

#include <mpi.h>
#include <stdint.h>

#include "compiler/front/spec.h"
#include "runtime/nccl.h"

/* nc's communicator over comm's ranks: rank 0 makes the unique id, MPI
 * hands it out.  Collective; 0, or -1 with why on every rank. */
int lib_mpi_nccl_comm(RtNccl *nc, MPI_Comm comm, char *why, size_t n);

/* The two-collective form of (max, +) states (assoc_mpi.h's
 * assoc_mpi_allreduce_maxplus_device) on float32 arrays of rt's device
 * memory, or of host memory where rt is NULL (then over MPI): NCCL's
 * collectives where nc is given.  0, or -1 with why. */
int lib_mpi_maxplus_run(Rt *rt, RtNccl *nc, MPI_Comm comm, int64_t rows, int64_t width, RtPtr mx, RtPtr l, RtPtr o,
			  void *stream, char *why, size_t n);
/* The state field c's certificate transports into (max, +): one
 * coordinate the max of a field m, every other the sum of a field times
 * exp(m), each other field once; -1 where the certificate is not of that
 * shape (whether it is proved is the prover's to say). */
int lib_mpi_maxplus_field(const Carrier *c);
/* The same, and the prover proves the certificate at params. */
int lib_mpi_maxplus_proved(Carrier *c, const double *params);

#endif
