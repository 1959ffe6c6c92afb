/* assoc_mpi.c: a carrier's states as an MPI datatype and its merge as an
 * MPI_Op (assoc_mpi.h).  An MPI user function gets no context pointer:
 * the merge and its context are cached on the datatype as an attribute
 * (MPI_Type_set_attr), which the function reads back from the datatype
 * MPI hands it. */
#ifndef ASSOC_NO_MPI
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compiler/lib/assoc_mpi.h"
#include "compiler/lib/assoc_mpi_int.h"
#include "compiler/lib/libassoc_int.h"
#include "compiler/prove/prove.h"
#include "runtime/driver.h"
#include "runtime/nccl.h"

struct AssocMpi {
	size_t bytes;
	AssocMerge merge;
	void *ctx;
	int commutative;
	MPI_Datatype type;
	MPI_Op op;
	double seconds;
	/* copies of the operands: MPI's buffers need not be aligned as a
	 * kernel's states are, and out may not alias y */
	unsigned char *x, *y, *out;
	/* assoc_mpi_kernel's */
	AssocKernel *k;
	double *params;
	int maxplus; /* the certificate transports the merge into (max, +) */
	/* assoc_mpi_device_open's: the device, and NCCL over comm or none */
	Rt *rt;
	RtNccl *nc;
	MPI_Comm comm;
	int ranks, rank;
	char err[1024];
};

static int keyval = MPI_KEYVAL_INVALID;

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* MPI's contract: inout[i] = in[i] (+) inout[i], in from the lower ranks. */
static void op_merge(void *in, void *inout, int *len, MPI_Datatype *type)
{
	AssocMpi *m = NULL;
	int found = 0;
	if (keyval == MPI_KEYVAL_INVALID || MPI_Type_get_attr(*type, keyval, &m, &found) != MPI_SUCCESS || !found) {
		fprintf(stderr, "assoc: an MPI reduction of states with a datatype assoc did not make\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
		return;
	}
	double t0 = now();
	for (int i = 0; i < *len; i++) {
		unsigned char *a = (unsigned char *)in + (size_t)i * m->bytes, *b = (unsigned char *)inout + (size_t)i * m->bytes;
		memcpy(m->x, a, m->bytes);
		memcpy(m->y, b, m->bytes);
		m->merge(m->ctx, m->x, m->y, m->out);
		memcpy(b, m->out, m->bytes);
	}
	m->seconds += now() - t0;
}

static size_t round_up(size_t n) { return (n + 63) / 64 * 64; }

AssocStatus assoc_mpi_new(size_t state_bytes, AssocMerge merge, void *ctx, int commutative, AssocMpi **out)
{
	if (!out)
		return ASSOC_EINVAL;
	*out = NULL;
	int inited = 0;
	if (!merge || !state_bytes || state_bytes > (size_t)1 << 30 || MPI_Initialized(&inited) != MPI_SUCCESS || !inited)
		return ASSOC_EINVAL;
	AssocMpi *m = calloc(1, sizeof *m);
	size_t r = round_up(state_bytes);
	unsigned char *scratch = m ? aligned_alloc(64, 3 * r) : NULL;
	if (!scratch) {
		free(m);
		return ASSOC_ENOMEM;
	}
	*m = (AssocMpi){.bytes = state_bytes, .merge = merge, .ctx = ctx, .commutative = !!commutative,
			.type = MPI_DATATYPE_NULL, .op = MPI_OP_NULL, .x = scratch, .y = scratch + r, .out = scratch + 2 * r};
	if ((keyval == MPI_KEYVAL_INVALID &&
	     MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, MPI_TYPE_NULL_DELETE_FN, &keyval, NULL) != MPI_SUCCESS) ||
	    MPI_Type_contiguous((int)state_bytes, MPI_BYTE, &m->type) != MPI_SUCCESS ||
	    MPI_Type_commit(&m->type) != MPI_SUCCESS || MPI_Type_set_attr(m->type, keyval, m) != MPI_SUCCESS ||
	    MPI_Op_create(op_merge, m->commutative, &m->op) != MPI_SUCCESS) {
		assoc_mpi_free(m);
		return ASSOC_EDEVICE;
	}
	*out = m;
	return ASSOC_OK;
}

int assoc_mpi_maxplus(const AssocMpi *m) { return m && m->maxplus; }
const char *assoc_mpi_error(const AssocMpi *m) { return m ? m->err : "no MPI handle (NULL)"; }
MPI_Datatype assoc_mpi_type(const AssocMpi *m) { return m ? m->type : MPI_DATATYPE_NULL; }
MPI_Op assoc_mpi_op(const AssocMpi *m) { return m ? m->op : MPI_OP_NULL; }
int assoc_mpi_commutative(const AssocMpi *m) { return m && m->commutative; }
size_t assoc_mpi_state_bytes(const AssocMpi *m) { return m ? m->bytes : 0; }
double assoc_mpi_merge_seconds(const AssocMpi *m) { return m ? m->seconds : 0; }

void assoc_mpi_free(AssocMpi *m)
{
	if (!m)
		return;
	if (m->op != MPI_OP_NULL)
		MPI_Op_free(&m->op);
	if (m->type != MPI_DATATYPE_NULL)
		MPI_Type_free(&m->type);
	rt_nccl_close(m->nc);
	rt_close(m->rt);
	free(m->x);
	free(m->params);
	assoc_kernel_free(m->k);
	free(m);
}

/* ---- states of a compiled kernel ---- */

static AssocStatus fail(AssocMpi *m, AssocStatus st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static AssocStatus fail(AssocMpi *m, AssocStatus st, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m->err, sizeof m->err, fmt, ap);
	va_end(ap);
	return st;
}

static void kernel_merge(void *ctx, const void *x, const void *y, void *out)
{
	AssocMpi *m = ctx;
	CpuArgs a = {.params = m->params};
	m->k->k->k.merge(&a, x, y, out);
}

/* The bare state field e reads, or -1. */
static int field_of(const Carrier *c, const Expr *e)
{
	while (e && e->op == EXPR_CAST)
		e = e->a[0];
	for (int f = 0; e && e->op == EXPR_VAR && f < c->nstate; f++)
		if (c->svar[3][f] == e->k)
			return f;
	return -1;
}

int lib_mpi_maxplus_field(const Carrier *c)
{
	int fm = -1;
	char seen[64] = {0};
	if (!c->has_cert || c->ncert != c->nstate || c->nstate > 64)
		return -1;
	for (int k = 0; k < c->ncert; k++)
		if (c->cert_monoid[k] == EXPR_MAX) {
			if (fm >= 0 || (fm = field_of(c, c->cert_into[k].e)) < 0)
				return -1;
		}
	if (fm < 0)
		return -1;
	for (int k = 0; k < c->ncert; k++) {
		if (c->cert_monoid[k] == EXPR_MAX)
			continue;
		const Expr *e = c->cert_into[k].e;
		if (c->cert_monoid[k] != EXPR_ADD || e->op != EXPR_MUL)
			return -1;
		/* x * exp(m), either way round */
		int f = -1;
		for (int side = 0; side < 2 && f < 0; side++) {
			const Expr *x = e->a[side], *g = e->a[1 - side];
			if (g->op == EXPR_EXP && field_of(c, g->a[0]) == fm)
				f = field_of(c, x);
		}
		if (f < 0 || f == fm || seen[f]++)
			return -1;
	}
	return fm;
}

/* Whether c's merge is commutative (proved) at params; *maxplus (or NULL)
 * whether its proved certificate is a transport into (max, +). */
static int commutes(Carrier *c, const double *params, int *maxplus)
{
	Define *defs = calloc(c->nparams + 1, sizeof *defs);
	char (*vals)[32] = calloc(c->nparams + 1, sizeof *vals);
	if (!defs || !vals)
		abort();
	for (int i = 0; i < c->nparams; i++) {
		snprintf(vals[i], sizeof vals[i], "%.17g", params[i]);
		defs[i] = (Define){c->params[i].name, vals[i]};
	}
	ProofReport r = {0};
	int proved = 0;
	if (!(c->nparams ? prove_carrier_at(c, defs, c->nparams, 0, &r) : prove_carrier(c, 0, &r)))
		for (int i = 0; i < r.n; i++) {
			proved |= !strcmp(r.line[i].law, "commutative") && r.line[i].status == PROOF_PROVED;
			if (maxplus && !strcmp(r.line[i].law, "certificate") && r.line[i].status == PROOF_PROVED &&
			    lib_mpi_maxplus_field(c) >= 0)
				*maxplus = 1;
		}
	prove_report_free(&r);
	free(defs);
	free(vals);
	return proved;
}

int lib_mpi_commutes(Carrier *c, const double *params) { return commutes(c, params, NULL); }

int lib_mpi_maxplus_proved(Carrier *c, const double *params)
{
	int maxplus = 0;
	if (lib_mpi_maxplus_field(c) >= 0)
		commutes(c, params, &maxplus);
	return maxplus;
}

AssocStatus assoc_mpi_kernel(AssocKernel *k, const AssocValue *params, int nparams, AssocMpi **out)
{
	if (!out)
		return ASSOC_EINVAL;
	*out = NULL;
	if (!k || nparams < 0 || (nparams && !params))
		return ASSOC_EINVAL;
	if (!k->k) { /* a failed compile, or another device's kernel: the op merges states on the CPU */
		if (!k->failed)
			snprintf(k->err, sizeof k->err, "an MPI op takes a kernel compiled for the cpu device");
		return ASSOC_EINVAL;
	}
	Carrier *c = k->c;
	double *pv = calloc(c->nparams + 1, sizeof *pv);
	if (!pv)
		return ASSOC_ENOMEM;
	/* as a run takes them: names, types, and the verdict at these values,
	 * since the op merges with them (a merge lawful only at some values
	 * would reduce across ranks in a grouping of MPI's choosing) */
	AssocStatus bad = lib_params_of(k, params, nparams, pv);
	if (bad) {
		free(pv);
		return bad;
	}
	AssocMpi *m;
	int maxplus = 0, comm = commutes(c, pv, &maxplus);
	AssocStatus st = assoc_mpi_new(k->k->k.state_bytes, kernel_merge, NULL, comm, &m);
	if (st) {
		snprintf(k->err, sizeof k->err, "%s", st == ASSOC_EINVAL ? "MPI is not initialized" : "MPI refused the datatype or op");
		free(pv);
		return st;
	}
	m->ctx = m;
	m->k = k;
	lib_kernel_ref(k); /* the op merges with k's code: k lives until the handle goes */
	m->params = pv;
	m->maxplus = maxplus;
	*out = m;
	return ASSOC_OK;
}

typedef struct {
	AssocMpi *m;
	CpuArgs a;
	int64_t lo, hi;
	unsigned char *st;
	const unsigned char *cst;
	int what; /* 0 fold, 1 finalize, 2 scan */
} Job;

static void job_row(void *ctx, int64_t i)
{
	Job *j = ctx;
	const CpuKernel *k = &j->m->k->k->k;
	size_t sb = k->state_bytes;
	if (j->what == 0)
		k->reduce(&j->a, i, j->lo, j->hi, j->st + i * sb);
	else if (j->what == 1)
		k->finalize(&j->a, i, i, j->cst + i * sb);
	else
		k->scan(&j->a, i, j->lo, j->hi, j->st + i * sb);
}

/* Bind bufs by name into the kernel's order (inputs, then outputs where
 * outputs is set) and run the job over the rows. */
static AssocStatus run_job(Job *j, int64_t rows, int64_t len, const AssocBuffer *bufs, int nbufs, int outputs)
{
	AssocMpi *m = j->m;
	if (!m->k)
		return fail(m, ASSOC_EINVAL, "a handle of assoc_mpi_new has no kernel to fold with");
	AssocSpec *s = m->k->s;
	Carrier *c = m->k->c;
	if (lib_bad_shape(rows, len, bufs, nbufs, m->err, sizeof m->err))
		return ASSOC_EINVAL;
	if (j->lo < 0 || j->lo > j->hi || j->hi > len)
		return fail(m, ASSOC_EINVAL, "positions [%lld, %lld) of a row of %lld: 0 <= lo <= hi <= len", (long long)j->lo,
			    (long long)j->hi, (long long)len);
	if (m->k->k->k.is_scan != (j->what == 2) && j->what != 1)
		return fail(m, ASSOC_EINVAL, "%s", m->k->k->k.is_scan ? "a scan's positions go through assoc_mpi_scan"
								       : "the carrier is not a scan: assoc_mpi_fold");
	if (j->what == 1 && m->k->k->k.is_scan)
		return fail(m, ASSOC_EINVAL, "a scan writes its outputs in assoc_mpi_scan");
	if (j->what == 1 && c->nmap)
		return fail(m, ASSOC_EINVAL, "map outputs need every position's state: not across processes");
	char stray[512];
	if (lib_stray_buffer(s, bufs, nbufs, stray, sizeof stray) >= 0)
		return fail(m, ASSOC_EINVAL, "%s", stray);
	int nin = c->nelem + c->ncol + c->nrow, nout = c->nfinal + c->nmap;
	const void **in = calloc(nin + 1, sizeof *in);
	void **out = calloc(nout + 1, sizeof *out);
	if (!in || !out) {
		free(in), free(out);
		return fail(m, ASSOC_ENOMEM, "out of memory");
	}
	AssocStatus st = ASSOC_OK;
	for (int x = 0; !st && x < s->narr; x++) {
		if (x >= nin && !outputs)
			continue;
		const AssocArray *arr = &s->arr[x];
		int found = -1;
		for (int b = 0; b < nbufs; b++)
			if (bufs[b].name && !strcmp(bufs[b].name, arr->name))
				found = b;
		size_t want = assoc_array_bytes(s, x, rows, len);
		if (found < 0)
			st = fail(m, ASSOC_EINVAL, "no buffer for array '%s'", arr->name);
		else if (bufs[found].bytes != want || (want && !bufs[found].data))
			st = fail(m, ASSOC_ESIZE, "buffer '%s' has %zu bytes; the shape needs %zu", arr->name, bufs[found].bytes,
				  want);
		else if (x < nin)
			in[x] = bufs[found].data;
		else
			out[x - nin] = bufs[found].data;
	}
	if (!st) {
		j->a = (CpuArgs){in, out, m->params, rows, len, 0, 0};
		rt_pool_run(m->k->pool, rows, job_row, j);
	}
	free(in);
	free(out);
	return st;
}

AssocStatus assoc_mpi_identity(AssocMpi *m, int64_t rows, void *states)
{
	if (!m)
		return ASSOC_EINVAL;
	if (!m->k)
		return fail(m, ASSOC_EINVAL, "a handle of assoc_mpi_new has no kernel to give identities");
	if (rows < 0 || (rows && !states))
		return fail(m, ASSOC_EINVAL, "bad rows (%lld) or no states", (long long)rows);
	CpuArgs a = {.params = m->params};
	for (int64_t i = 0; i < rows; i++)
		m->k->k->k.identity(&a, (unsigned char *)states + i * m->bytes);
	return ASSOC_OK;
}

AssocStatus assoc_mpi_fold(AssocMpi *m, int64_t rows, int64_t len, int64_t lo, int64_t hi, const AssocBuffer *bufs,
			   int nbufs, void *states)
{
	if (!m || (rows && !states))
		return ASSOC_EINVAL;
	Job j = {.m = m, .lo = lo, .hi = hi, .st = states, .what = 0};
	return run_job(&j, rows, len, bufs, nbufs, 0);
}

AssocStatus assoc_mpi_finalize(AssocMpi *m, int64_t rows, int64_t len, const AssocBuffer *bufs, int nbufs,
			       const void *states)
{
	if (!m || (rows && !states))
		return ASSOC_EINVAL;
	Job j = {.m = m, .lo = 0, .hi = len, .cst = states, .what = 1};
	return run_job(&j, rows, len, bufs, nbufs, 1);
}

AssocStatus assoc_mpi_scan(AssocMpi *m, int64_t rows, int64_t len, int64_t lo, int64_t hi, const AssocBuffer *bufs,
			   int nbufs, void *states)
{
	if (!m || (rows && !states))
		return ASSOC_EINVAL;
	Job j = {.m = m, .lo = lo, .hi = hi, .st = states, .what = 2};
	return run_job(&j, rows, len, bufs, nbufs, 1);
}

/* ---- states in GPU memory ---- */

static atomic_flag staged_said = ATOMIC_FLAG_INIT; /* handles of several threads may stage at once */

int lib_mpi_nccl_comm(RtNccl *nc, MPI_Comm comm, char *why, size_t n)
{
	int ranks = 0, rank = 0;
	MPI_Comm_size(comm, &ranks);
	MPI_Comm_rank(comm, &rank);
	RtNcclId id;
	int ok = rank || !rt_nccl_unique_id(nc, &id, why, n), every = 0;
	MPI_Allreduce(&ok, &every, 1, MPI_INT, MPI_MIN, comm);
	if (every) {
		MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, comm);
		ok = !rt_nccl_init(nc, ranks, &id, rank, why, n);
		MPI_Allreduce(&ok, &every, 1, MPI_INT, MPI_MIN, comm);
	}
	if (!every && ok)
		snprintf(why, n, "NCCL failed on another rank");
	return every ? 0 : -1;
}

AssocStatus assoc_mpi_device_open(AssocMpi *m, MPI_Comm comm, int device)
{
	if (!m)
		return ASSOC_EINVAL;
	if (m->rt)
		return fail(m, ASSOC_EINVAL, "the handle's device is open already");
	int ranks = 0, rank = 0;
	if (comm == MPI_COMM_NULL || MPI_Comm_size(comm, &ranks) != MPI_SUCCESS || MPI_Comm_rank(comm, &rank) != MPI_SUCCESS)
		return fail(m, ASSOC_EINVAL, "not a communicator");
	char why[512] = "", nwhy[512] = "";
	int bad = rt_open(&m->rt, NULL, device, why, sizeof why) ? 1 : 0, any = 0;
	MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, comm);
	if (any) {
		rt_close(m->rt);
		m->rt = NULL;
		return fail(m, ASSOC_EDEVICE, "%s", bad ? why : "another rank failed to open its GPU");
	}
	/* NCCL on every rank, or on none: a communicator needs them all */
	int have = !rt_nccl_open(&m->nc, NULL, nwhy, sizeof nwhy), all = 0;
	MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_MIN, comm);
	/* ranks sharing a GPU, for one, are no communicator to NCCL */
	if (all && lib_mpi_nccl_comm(m->nc, comm, nwhy, sizeof nwhy))
		all = 0, have = 0;
	if (!all) {
		rt_nccl_close(m->nc);
		m->nc = NULL;
		if (!rank && !atomic_flag_test_and_set(&staged_said)) /* once a process: the stage is slower, not wrong */
			fprintf(stderr, "assoc: %s: device states staged through the host over MPI\n",
				have ? "NCCL is missing on another rank" : nwhy);
	}
	m->comm = comm;
	m->ranks = ranks, m->rank = rank;
	return ASSOC_OK;
}

const char *assoc_mpi_device_transport(const AssocMpi *m)
{
	return !m || !m->rt ? "none" : m->nc ? "nccl" : "host";
}

static int device_ready(AssocMpi *m, int64_t rows)
{
	if (!m->rt)
		return fail(m, ASSOC_EINVAL, "no device: assoc_mpi_device_open first");
	if (rows < 0 || (uint64_t)rows * m->bytes * (uint64_t)m->ranks > (uint64_t)1 << 40 ||
	    (uint64_t)rows * m->bytes > INT32_MAX)
		return fail(m, ASSOC_EINVAL, "%lld rows of %zu-byte states: too many", (long long)rows, m->bytes);
	return ASSOC_OK;
}

/* out[r] = x[0][r] (+) x[1][r] (+) ... in rank order, x [ranks][rows]. */
static void merge_ranks(AssocMpi *m, int64_t rows, const unsigned char *x, unsigned char *out)
{
	double t0 = now();
	size_t sb = m->bytes;
	for (int64_t r = 0; r < rows; r++) {
		memcpy(m->out, x + r * sb, sb);
		for (int c = 1; c < m->ranks; c++) {
			memcpy(m->x, m->out, sb);
			memcpy(m->y, x + ((size_t)c * rows + r) * sb, sb);
			m->merge(m->ctx, m->x, m->y, m->out);
		}
		memcpy(out + r * sb, m->out, sb);
	}
	m->seconds += now() - t0;
}

AssocStatus assoc_mpi_allgather_merge_device(AssocMpi *m, int64_t rows, const void *states, void *merged, void *stream)
{
	if (!m)
		return ASSOC_EINVAL;
	AssocStatus st = device_ready(m, rows);
	if (st || !rows)
		return st;
	if (!states || !merged)
		return fail(m, ASSOC_EINVAL, "no device states (NULL)");
	size_t mine = (size_t)rows * m->bytes, all = mine * m->ranks;
	unsigned char *host = malloc(all + mine);
	if (!host)
		return fail(m, ASSOC_ENOMEM, "out of memory for %zu bytes of states", all + mine);
	RtPtr src = (RtPtr)(size_t)states, dst = (RtPtr)(size_t)merged, gathered = 0;
	char why[512] = "";
	int rc = 0, bad, any = 0;
	if (m->nc) {
		/* the states of every rank, rank after rank, in device memory;
		 * NCCL orders its work after the caller's on stream */
		rc = rt_alloc(m->rt, all, &gathered, why, sizeof why);
		/* every rank at the collective, or none: a rank missing from it
		 * would leave the others waiting there */
		bad = !!rc;
		MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, m->comm);
		if (any && !rc)
			snprintf(why, sizeof why, "another rank failed to allocate the gathered states");
		rc = any || rt_nccl_allgather(m->nc, src, gathered, mine, stream, why, sizeof why) ||
		     rt_sync(m->rt, why, sizeof why) || rt_download(m->rt, host, gathered, all, why, sizeof why);
		if (gathered)
			rt_free(m->rt, gathered);
	} else {
		rc = rt_sync(m->rt, why, sizeof why) || rt_download(m->rt, host + all, src, mine, why, sizeof why);
		bad = !!rc;
		MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, m->comm);
		if (!any)
			MPI_Allgather(host + all, (int)mine, MPI_BYTE, host, (int)mine, MPI_BYTE, m->comm);
		else if (!rc)
			snprintf(why, sizeof why, "another rank failed to copy its states");
		rc = any;
	}
	if (!rc) {
		merge_ranks(m, rows, host, host + all);
		/* a pageable upload may return before it lands: wait, so that
		 * the caller's next work on any stream reads the merged states */
		rc = rt_upload(m->rt, dst, host + all, mine, why, sizeof why) || rt_sync(m->rt, why, sizeof why);
	}
	free(host);
	return rc ? fail(m, ASSOC_EDEVICE, "%s", why) : ASSOC_OK;
}

/* Rescale one rank's (m, l, o) to the global maximum M: l and o times
 * exp(m - M), nothing where the rank saw no position (m = -inf); m = M. */
static void rescale(int64_t rows, int64_t width, float *mx, const float *top, float *l, float *o)
{
	for (int64_t r = 0; r < rows; r++) {
		float w = mx[r] == -INFINITY ? 0.0f : expf(mx[r] - top[r]);
		l[r] *= w;
		for (int64_t j = 0; j < width; j++)
			o[r * width + j] *= w;
		mx[r] = top[r];
	}
}

/* Device memory of rt, or host memory where rt is NULL. */
static int mem_down(Rt *rt, void *dst, RtPtr src, size_t bytes, char *why, size_t n)
{
	if (rt)
		return rt_download(rt, dst, src, bytes, why, n);
	memcpy(dst, (const void *)(size_t)src, bytes);
	return 0;
}

static int mem_up(Rt *rt, RtPtr dst, const void *src, size_t bytes, char *why, size_t n)
{
	if (rt)
		return rt_upload(rt, dst, src, bytes, why, n);
	memcpy((void *)(size_t)dst, src, bytes);
	return 0;
}

int lib_mpi_maxplus_run(Rt *rt, RtNccl *nc, MPI_Comm comm, int64_t rows, int64_t width, RtPtr dm, RtPtr dl,
			  RtPtr dout, void *stream, char *why, size_t n)
{
	size_t nm = (size_t)rows, no = (size_t)rows * width;
	float *h = malloc((3 * nm + no + 1) * sizeof *h);
	if (!h)
		return snprintf(why, n, "out of memory"), -1;
	float *hm = h, *top = h + nm, *hl = h + 2 * nm, *ho = h + 3 * nm;
	RtPtr dtop = 0;
	int rc;
	if (nc && rt) {
		/* MAX of m by NCCL, the rescale on the host (no kernel of its
		 * own here), then SUM of l and o by NCCL, grouped */
		rc = rt_alloc(rt, nm * sizeof(float), &dtop, why, n);
		int bad = !!rc, any = 0; /* every rank at the collectives, or none */
		MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, comm);
		if (any && !rc)
			snprintf(why, n, "another rank failed to allocate");
		rc = any || rt_nccl_allreduce(nc, dm, dtop, nm, RT_NCCL_F32, RT_NCCL_MAX, stream, why, n) ||
		     rt_sync(rt, why, n) ||
		     rt_download(rt, hm, dm, nm * sizeof(float), why, n) ||
		     rt_download(rt, top, dtop, nm * sizeof(float), why, n) ||
		     rt_download(rt, hl, dl, nm * sizeof(float), why, n) ||
		     (no && rt_download(rt, ho, dout, no * sizeof(float), why, n));
		if (!rc) {
			rescale(rows, width, hm, top, hl, ho);
			rc = rt_upload(rt, dm, hm, nm * sizeof(float), why, n) ||
			     rt_upload(rt, dl, hl, nm * sizeof(float), why, n) ||
			     (no && rt_upload(rt, dout, ho, no * sizeof(float), why, n)) || rt_nccl_group(nc, 1, why, n) ||
			     rt_nccl_allreduce(nc, dl, dl, nm, RT_NCCL_F32, RT_NCCL_SUM, stream, why, n) ||
			     (no && rt_nccl_allreduce(nc, dout, dout, no, RT_NCCL_F32, RT_NCCL_SUM, stream, why, n)) ||
			     rt_nccl_group(nc, 0, why, n) || rt_sync(rt, why, n);
		}
		if (dtop)
			rt_free(rt, dtop);
	} else {
		rc = (rt && rt_sync(rt, why, n)) || mem_down(rt, hm, dm, nm * sizeof(float), why, n) ||
		     mem_down(rt, hl, dl, nm * sizeof(float), why, n) ||
		     (no && mem_down(rt, ho, dout, no * sizeof(float), why, n));
		int bad = !!rc, any = 0;
		MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, comm);
		if (any && !rc)
			snprintf(why, n, "another rank failed to copy its states");
		rc = any;
		if (!rc) {
			MPI_Allreduce(hm, top, (int)nm, MPI_FLOAT, MPI_MAX, comm);
			rescale(rows, width, hm, top, hl, ho);
			MPI_Allreduce(MPI_IN_PLACE, hl, (int)nm, MPI_FLOAT, MPI_SUM, comm);
			if (no)
				MPI_Allreduce(MPI_IN_PLACE, ho, (int)no, MPI_FLOAT, MPI_SUM, comm);
			rc = mem_up(rt, dm, hm, nm * sizeof(float), why, n) || mem_up(rt, dl, hl, nm * sizeof(float), why, n) ||
			     (no && mem_up(rt, dout, ho, no * sizeof(float), why, n)) || (rt && rt_sync(rt, why, n));
		}
	}
	free(h);
	return rc ? -1 : 0;
}

AssocStatus assoc_mpi_allreduce_maxplus_device(AssocMpi *m, int64_t rows, int64_t width, void *mx, void *l, void *o,
					       void *stream)
{
	if (!m)
		return ASSOC_EINVAL;
	AssocStatus st = device_ready(m, 0);
	if (st)
		return st;
	if (rows < 0 || width < 0 || (width && rows > INT32_MAX / width) || rows > INT32_MAX)
		return fail(m, ASSOC_EINVAL, "%lld rows of width %lld: too many", (long long)rows, (long long)width);
	if (!rows)
		return ASSOC_OK;
	if (!mx || !l || (width && !o))
		return fail(m, ASSOC_EINVAL, "no device arrays (NULL)");
	char why[512] = "";
	if (lib_mpi_maxplus_run(m->rt, m->nc, m->comm, rows, width, (RtPtr)(size_t)mx, (RtPtr)(size_t)l,
				  (RtPtr)(size_t)o, stream, why, sizeof why))
		return fail(m, ASSOC_EDEVICE, "%s", why);
	return ASSOC_OK;
}
#else
/* (without MPI: nothing here; `assoc run --mpi` says why) */
typedef int assoc_mpi_absent;
#endif
