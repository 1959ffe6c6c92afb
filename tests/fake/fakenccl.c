/* fakenccl.c: a stand-in for libnccl.so.2 over MPI, for machines without
 * GPUs.  The fake CUDA driver (fakecuda.c) hands out host memory as device
 * memory, so this library's collectives are MPI's on those pointers, over
 * MPI_COMM_WORLD (whose ranks the communicator must match); the stream is
 * ignored, as the fake driver runs nothing on one.
 *
 * FAKENCCL=version=N answers ncclGetVersion with N (default 22105);
 * FAKENCCL=fail=NAME makes the collective NAME (allgather, allreduce,
 * init) fail with ncclInternalError. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
	char bytes[128];
} Id;

typedef struct {
	int ranks, rank;
} Comm;

enum { OK = 0, INTERNAL = 3, INVALID_ARGUMENT = 4, INVALID_USAGE = 5 };

static int fails(const char *name)
{
	const char *s = getenv("FAKENCCL"), *p = s ? strstr(s, "fail=") : NULL;
	return p && !strncmp(p + 5, name, strlen(name));
}

int ncclGetVersion(int *v)
{
	const char *s = getenv("FAKENCCL"), *p = s ? strstr(s, "version=") : NULL;
	*v = p ? atoi(p + 8) : 22105;
	return OK;
}

const char *ncclGetErrorString(int r)
{
	switch (r) {
	case OK: return "no error";
	case INTERNAL: return "internal error (the fake failed on demand)";
	case INVALID_ARGUMENT: return "invalid argument";
	case INVALID_USAGE: return "invalid usage";
	default: return "unknown result code";
	}
}

int ncclGetUniqueId(Id *id)
{
	memset(id, 0, sizeof *id);
	snprintf(id->bytes, sizeof id->bytes, "fakenccl");
	return OK;
}

int ncclCommInitRank(Comm **c, int ranks, Id id, int rank)
{
	int inited = 0, size = 0, me = 0;
	MPI_Initialized(&inited);
	if (!inited || fails("init"))
		return INTERNAL;
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	if (strcmp(id.bytes, "fakenccl") || ranks != size || rank != me)
		return INVALID_USAGE;
	*c = malloc(sizeof **c);
	if (!*c)
		return INTERNAL;
	**c = (Comm){ranks, rank};
	return OK;
}

int ncclCommDestroy(Comm *c)
{
	free(c);
	return OK;
}

static int group;
int ncclGroupStart(void) { group++; return OK; }
int ncclGroupEnd(void) { return group-- > 0 ? OK : INVALID_USAGE; }

/* ncclUint8 (1), ncclFloat32 (7), ncclFloat64 (8) */
static MPI_Datatype type_of(int t, size_t *size)
{
	*size = t == 1 ? 1 : t == 7 ? 4 : t == 8 ? 8 : 0;
	return t == 1 ? MPI_BYTE : t == 7 ? MPI_FLOAT : t == 8 ? MPI_DOUBLE : MPI_DATATYPE_NULL;
}

int ncclAllGather(const void *send, void *recv, size_t count, int type, Comm *c, void *stream)
{
	(void)stream;
	size_t size;
	MPI_Datatype t = type_of(type, &size);
	if (!c || t == MPI_DATATYPE_NULL || count > 0x7fffffff)
		return INVALID_ARGUMENT;
	if (fails("allgather"))
		return INTERNAL;
	/* in place where send is this rank's block of recv, as NCCL allows */
	const void *s = send == (char *)recv + c->rank * count * size ? MPI_IN_PLACE : send;
	return MPI_Allgather(s, (int)count, t, recv, (int)count, t, MPI_COMM_WORLD) ? INTERNAL : OK;
}

int ncclAllReduce(const void *send, void *recv, size_t count, int type, int op, Comm *c, void *stream)
{
	(void)stream;
	size_t size;
	MPI_Datatype t = type_of(type, &size);
	if (!c || t == MPI_DATATYPE_NULL || type == 1 || (op != 0 && op != 2) || count > 0x7fffffff)
		return INVALID_ARGUMENT;
	if (fails("allreduce"))
		return INTERNAL;
	return MPI_Allreduce(send == recv ? MPI_IN_PLACE : send, recv, (int)count, t, op ? MPI_MAX : MPI_SUM,
			     MPI_COMM_WORLD)
		       ? INTERNAL
		       : OK;
}
