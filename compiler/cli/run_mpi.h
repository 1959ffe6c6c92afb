/* run_mpi.h: `assoc run --mpi`: a run's positions shared out to MPI
 * processes, their states combined across them (run_mpi.c).  This header
 * does not need mpi.h: without MPI the functions say why they are missing. */
#ifndef ASSOC_RUN_MPI_H
#define ASSOC_RUN_MPI_H

#include <stddef.h>

#include "compiler/devices/run.h"

/* Slices of each row with --deterministic, whatever the ranks (at most
 * this many ranks then). */
enum { RUN_MPI_SLICES = 16 };

typedef struct {
	int ranks, slices;
	int commutative; /* the op MPI was given */
	double fold, comm, merge; /* seconds, the most of any rank */
	char how[128]; /* how the states crossed and merged, where not by the op ("": MPI with the op) */
	const char *on; /* the device the ranks folded on */
} RunMpiTimes;

/* MPI_Init; the output of ranks other than 0 silenced.  0, or -1 with msg
 * (built without MPI: "assoc was built without MPI: ..."). */
int run_mpi_init(char *msg, size_t n);
int run_mpi_rank(void);
/* The worst (largest) of every rank's rc: a collective call. */
int run_mpi_agree(int rc);
/* d's outputs on rank 0 from every rank's slice of its positions on
 * device dv (cpu or interp; gpu and emu: run_mpi_cuda), states merged across ranks in rank order;
 * with o->deterministic, RUN_MPI_SLICES slices merged in one fixed order,
 * the same bits for any number of ranks.  A carrier that gpu and emu's
 * kernels do not take (run_mpi_cuda's 1) runs on the cpu, said on
 * stderr with why.  Collective: 0, or -1 with msg on every rank. */
int run_mpi_run(RunData *d, const Device *dv, const RunOpts *o, int reduce, RunMpiTimes *t, char *msg, size_t n);
void run_mpi_end(void);
/* run_mpi_run on the devices of the carrier's CUDA module, gpu and emu
 * (run_mpi_cuda.c): each rank's slices folded by the module's split
 * kernel into states in device memory, gathered (NCCL on the gpu where
 * every rank has it, MPI otherwise), merged in slice order and finalized
 * on rank 0 by the combine kernel (attention: its partial states by the
 * attention combine kernel).  Reductions and attention of one head.  With reduce
 * (--mpi-collective reduce), a (max, +) carrier's states combined by the
 * two collectives instead (assoc_mpi_allreduce_maxplus_device's form),
 * rank 0 finalizing the result with the combine kernel.  0; 1 with why in
 * msg where the module's kernels do not take the carrier (scans, map
 * outputs, a lift that reads j, more than one head, ...) and neither
 * reduce nor o->config asks for them; -1 with msg.  Collective. */
int run_mpi_cuda(RunData *d, const Device *dv, const RunOpts *o, int reduce, RunMpiTimes *t, char *msg, size_t n);

#endif
