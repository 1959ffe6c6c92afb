/* cmd_paged.c: `assoc run SPEC --page-size P`: a batch of sequences over a
 * paged key/value cache (compiler/devices/paged.h), its layout drawn or
 * read from --input block_table=, seq_lens=, cu_seqlens_q=, each sequence
 * checked against the float64 reference on its own keys. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compiler/util/buf.h"
#include "compiler/cli/cli.h"
#include "compiler/devices/paged.h"
#include "compiler/llvm/llvm.h"
#include "runtime/cpu.h"

static const char *const layout_names[] = {"block_table", "seq_lens", "cu_seqlens_q"};
enum { L_TABLE, L_LENS, L_CU, NLAYOUT };

/* "2 queries", "1 query", "0 to 6 keys": the count the sequences share,
 * or the range of their counts. */
static const char *counts(char *buf, size_t n, int lo, int hi, const char *one, const char *many)
{
	if (lo == hi)
		snprintf(buf, n, "%d %s", lo, lo == 1 ? one : many);
	else
		snprintf(buf, n, "%d to %d %s", lo, hi, many);
	return buf;
}

/* The --input of that name, or -1. */
static int input_named(const Opts *o, const char *name)
{
	for (int i = 0; i < o->ninputs; i++)
		if (!strcmp(o->inputs[i].name, name))
			return i;
	return -1;
}

/* Whole numbers of a layout array into int32 (*out, allocated). */
static int read_ints(const Opts *o, int i, const Npy *a, int ndim, int32_t **out)
{
	if (a->ndim != ndim)
		return usage_error("%s: %s has %d dimension%s, expected %d", o->inputs[i].path, o->inputs[i].name, a->ndim,
				   a->ndim == 1 ? "" : "s", ndim);
	*out = calloc(a->count ? a->count : 1, sizeof **out);
	if (!*out)
		abort();
	for (size_t x = 0; x < a->count; x++) {
		double v = cli_npy_value(a, x, TY_I32);
		if (!ir_holds(TY_I32, v))
			return usage_error("%s: the value %.17g at flat index %zu of %s is not an int32", o->inputs[i].path, v,
					   x, o->inputs[i].name);
		(*out)[x] = (int32_t)v;
	}
	return EXIT_OK;
}

/* A shape as Python prints a tuple. */
static void shape_text(const size_t *dims, int nd, char *b, size_t n)
{
	snprintf(b, n, "(");
	for (int t = 0; t < nd; t++)
		snprintf(b + strlen(b), n - strlen(b), "%s%zu", t ? ", " : "", dims[t]);
	snprintf(b + strlen(b), n - strlen(b), "%s", nd == 1 ? ",)" : ")");
}

/* A row or column input's file into its paged buffer, its shape checked. */
static int load_input(const Opts *o, int i, const Npy *a, Buffer *buf, const size_t *want, int nd, const char *what)
{
	int same = a->ndim == nd;
	for (int t = 0; same && t < nd; t++)
		same = a->shape[t] == want[t];
	if (!same) {
		char has[160], exp[160];
		shape_text(a->shape, a->ndim, has, sizeof has);
		shape_text(want, nd, exp, sizeof exp);
		return usage_error("%s: shape %s does not fit %s '%s': expected %s", o->inputs[i].path, has, what,
				   o->inputs[i].name, exp);
	}
	return cli_npy_into(o->inputs[i].path, o->inputs[i].name, a, buf);
}

/* want: [lead][heads][width] (width dropped at 1) */
static int dims3(size_t lead, size_t mid, int heads, int width, size_t *want)
{
	int nd = 0;
	want[nd++] = lead;
	if (mid)
		want[nd++] = mid;
	want[nd++] = (size_t)heads;
	if (width > 1)
		want[nd++] = (size_t)width;
	return nd;
}

/* The layout and inputs: drawn, or from the --input files. */
static Paged *paged_of(Opts *o, Carrier *c, Npy *arr)
{
	char msg[1024];
	int heads, kv, lay[NLAYOUT];
	if (cli_heads(o, &heads, &kv))
		return NULL;
	for (int i = 0; i < o->ninputs; i++) {
		int known = 0;
		for (int k = 0; k < NLAYOUT; k++)
			known |= !strcmp(o->inputs[i].name, layout_names[k]);
		for (int k = 0; k < c->nrow; k++)
			known |= !strcmp(o->inputs[i].name, c->row[k].name);
		for (int k = 0; k < c->ncol; k++)
			known |= !strcmp(o->inputs[i].name, c->col[k].name);
		if (!known)
			return usage_error("--input %s: the spec has no input named '%s' (with --page-size: its row and "
					   "column inputs, block_table, seq_lens, cu_seqlens_q)",
					   o->inputs[i].name, o->inputs[i].name),
			       NULL;
		if (npy_read(o->inputs[i].path, &arr[i], msg, sizeof msg))
			return usage_error("%s", msg), NULL;
	}
	for (int k = 0; k < NLAYOUT; k++)
		lay[k] = input_named(o, layout_names[k]);
	int col_given = -1, row_given = -1;
	for (int k = 0; k < c->ncol && col_given < 0; k++)
		col_given = input_named(o, c->col[k].name);
	for (int k = 0; k < c->nrow && row_given < 0; k++)
		row_given = input_named(o, c->row[k].name);
	/* heads not given: the files' head axes ([rows][heads]..., and the
	 * pool's [pages][page size][key/value heads]...), as --output writes them */
	if (!o->heads && row_given >= 0 && arr[row_given].ndim >= 2)
		heads = (int)arr[row_given].shape[1];
	if (!o->kv_heads)
		kv = col_given >= 0 && arr[col_given].ndim >= 3 ? (int)arr[col_given].shape[2] : heads;
	if (heads < 1 || kv < 1 || heads > 1 << 16 || heads % kv)
		return usage_error("--input: %d query heads on %d key/value heads: a multiple of them, at most 65536", heads,
				   kv),
		       NULL;
	Paged *p = NULL;
	if (lay[L_TABLE] < 0 && lay[L_LENS] < 0) {
		if (lay[L_CU] >= 0)
			return usage_error("--input cu_seqlens_q: with --input block_table= and seq_lens="), NULL;
		if (col_given >= 0)
			return usage_error("--input %s: keys and values in pages need the layout, --input block_table= "
					   "and --input seq_lens=",
					   o->inputs[col_given].name),
			       NULL;
		if (cli_fits(o, c, o->batch ? o->batch : 1))
			return NULL;
		p = paged_drawn(c, heads, kv, o->batch ? o->batch : 1, o->rows, o->len, o->page_size, o->check.seed,
				o->params, o->nparams, msg, sizeof msg);
	} else {
		if (lay[L_TABLE] < 0 || lay[L_LENS] < 0)
			return usage_error("--input %s: with --input %s= as well", layout_names[lay[L_TABLE] < 0 ? L_LENS : L_TABLE],
					   layout_names[lay[L_TABLE] < 0 ? L_TABLE : L_LENS]),
			       NULL;
		if (o->len_given) /* one length for sequences of each their own */
			return usage_error("--len: the sequences and their keys come from --input seq_lens="), NULL;
		int32_t *table = NULL, *lens = NULL, *cu = NULL;
		const Npy *t = &arr[lay[L_TABLE]], *l = &arr[lay[L_LENS]];
		int rc = read_ints(o, lay[L_LENS], l, 1, &lens);
		if (!rc)
			rc = read_ints(o, lay[L_TABLE], t, 2, &table);
		if (!rc && (t->shape[0] != l->shape[0] || !l->shape[0] || !t->shape[1] || t->shape[0] > 1 << 20 ||
			    t->shape[1] > 1 << 20))
			rc = usage_error("%s: block_table is %zu x %zu, seq_lens %zu: one row of at least one page for each "
					 "of 1 to %d sequences",
					 o->inputs[lay[L_TABLE]].path, t->shape[0], t->shape[1], l->shape[0], 1 << 20);
		size_t batch = l->shape[0];
		if (!rc && o->batch && (size_t)o->batch != batch)
			rc = usage_error("--batch %d, but --input seq_lens=%s holds %zu sequence%s", o->batch,
					 o->inputs[lay[L_LENS]].path, batch, batch == 1 ? "" : "s");
		if (!rc && lay[L_CU] >= 0) {
			rc = read_ints(o, lay[L_CU], &arr[lay[L_CU]], 1, &cu);
			if (!rc && arr[lay[L_CU]].shape[0] != batch + 1)
				rc = usage_error("%s: cu_seqlens_q holds %zu offsets; %zu sequences take %zu",
						 o->inputs[lay[L_CU]].path, arr[lay[L_CU]].shape[0], batch, batch + 1);
			if (!rc && o->rows_given)
				rc = usage_error("--rows: the queries of each sequence come from --input cu_seqlens_q=");
			/* the limit --rows has, on the query rows of all the sequences */
			if (!rc && cu[batch] > MAX_ROWS)
				rc = usage_error("%s: cu_seqlens_q[%zu] = %d query rows in all: at most %d",
						 o->inputs[lay[L_CU]].path, batch, (int)cu[batch], MAX_ROWS);
		}
		/* the pool as the keys' file has it; drawn, as many pages as the table names */
		size_t pages = 0;
		if (!rc && col_given >= 0) {
			pages = arr[col_given].ndim ? arr[col_given].shape[0] : 0;
			if (arr[col_given].ndim < 2 || arr[col_given].shape[1] != (size_t)o->page_size)
				rc = usage_error("%s: %s's pages hold %zu keys, but --page-size is %d (the layout is "
						 "[pages][page size][key/value heads][width])",
						 o->inputs[col_given].path, o->inputs[col_given].name,
						 arr[col_given].ndim < 2 ? 0 : arr[col_given].shape[1], o->page_size);
		} else
			for (size_t b = 0; !rc && b < batch; b++)
				for (int64_t x = 0; x < ((int64_t)lens[b] + o->page_size - 1) / o->page_size && x < (int64_t)t->shape[1];
				     x++)
					if (table[b * t->shape[1] + x] >= 0 && (size_t)table[b * t->shape[1] + x] + 1 > pages)
						pages = (size_t)table[b * t->shape[1] + x] + 1;
		if (!rc && pages > 1 << 24)
			rc = usage_error("%s: %zu pages: at most %d",
					 o->inputs[col_given >= 0 ? col_given : lay[L_TABLE]].path, pages, 1 << 24);
		int rows = o->rows;
		if (!rc && !cu && row_given >= 0 && !o->rows_given) {
			/* the queries' file sets the rows of each sequence */
			size_t total = arr[row_given].ndim ? arr[row_given].shape[0] : 0;
			if (total % batch)
				rc = usage_error("%s: %zu query rows are not the same number for each of %zu sequences (give "
						 "--input cu_seqlens_q=)",
						 o->inputs[row_given].path, total, batch);
			rows = (int)(total / batch);
		}
		if (!rc) {
			p = paged_new(c, heads, kv, (int)batch, o->page_size, (int)(pages ? pages : 1), (int)t->shape[1], table,
				      lens, cu, rows, msg, sizeof msg);
			if (!p)
				rc = usage_error("--input: %s", msg);
		}
		if (!rc && paged_draw(p, o->check.seed, o->params, o->nparams, msg, sizeof msg)) {
			paged_free(p);
			p = NULL;
			rc = input_error("%s", msg); /* a param's value, as run's (cli_drawn) */
		}
		free(table), free(lens), free(cu);
		if (rc)
			return NULL;
	}
	/* the options were checked before (page size, batch, heads): what is
	 * left is a param's value, as run's (cli_drawn), or no memory */
	if (!p)
		return input_error("%s", msg), NULL;
	for (int i = 0; i < o->ninputs; i++) {
		size_t want[4];
		for (int k = 0; k < c->nrow; k++)
			if (!strcmp(o->inputs[i].name, c->row[k].name) &&
			    load_input(o, i, &arr[i], &p->row[k], want,
				       dims3((size_t)p->cu[p->batch], 0, heads, p->row[k].width, want), "the queries' input"))
				return paged_free(p), NULL;
		for (int k = 0; k < c->ncol; k++)
			if (!strcmp(o->inputs[i].name, c->col[k].name) &&
			    load_input(o, i, &arr[i], &p->col[k], want,
				       dims3((size_t)p->pages, (size_t)p->page_size, kv, p->col[k].width, want),
				       "the paged input"))
				return paged_free(p), NULL;
	}
	/* given inputs may break assume, each sequence on its own keys */
	for (int b = 0; c->assume && o->ninputs && b < p->batch; b++) {
		RunData *s = paged_sequence(p, b);
		int bad = rundata_check_assume(s, msg, sizeof msg);
		rundata_free(s);
		if (bad)
			return usage_error("--input: sequence %d, %s", b, msg), paged_free(p), NULL;
	}
	return p;
}

/* Array name of p as --output writes it (a finalize output, or an input
 * or the layout as drawn, in the layout --input takes) into a; 0, or -1
 * where p has no such array. */
static int paged_array(const Paged *p, const char *name, Npy *a)
{
	const Carrier *c = p->c;
	memset(a, 0, sizeof *a);
	const Buffer *b = NULL;
	size_t lead = (size_t)p->cu[p->batch], mid = 0;
	int heads = p->heads;
	for (int k = 0; k < c->nfinal && !b; k++)
		if (!strcmp(c->finalize[k].name, name))
			b = &p->fin[k];
	for (int k = 0; k < c->nrow && !b; k++)
		if (!strcmp(c->row[k].name, name))
			b = &p->row[k];
	for (int k = 0; k < c->ncol && !b; k++)
		if (!strcmp(c->col[k].name, name))
			b = &p->col[k], lead = (size_t)p->pages, mid = (size_t)p->page_size, heads = p->kv_heads;
	if (b) {
		a->itemsize = run_kind_size(b->kind), a->data = b->p, a->count = b->n * b->width;
		snprintf(a->descr, sizeof a->descr, "%s", npy_descr(b->kind));
		a->ndim = dims3(lead, mid, heads, b->width, a->shape);
		return 0;
	}
	const int32_t *lay[NLAYOUT] = {p->table, p->lens, p->cu};
	const size_t n[NLAYOUT] = {(size_t)p->batch * p->max_pages, (size_t)p->batch, (size_t)p->batch + 1};
	for (int k = 0; k < NLAYOUT; k++)
		if (!strcmp(layout_names[k], name)) {
			a->itemsize = 4, a->data = (void *)lay[k], a->count = n[k];
			snprintf(a->descr, sizeof a->descr, "%s", npy_descr(TY_I32));
			a->ndim = k == L_TABLE ? 2 : 1;
			a->shape[0] = k == L_TABLE ? (size_t)p->batch : n[k];
			a->shape[1] = (size_t)p->max_pages;
			return 0;
		}
	return -1;
}

static int write_outputs(const Opts *o, const Paged *p)
{
	for (int i = 0; i < o->noutputs; i++) {
		Npy a;
		char msg[512];
		int none = paged_array(p, o->outputs[i].name, &a);
		if (none)
			snprintf(msg, sizeof msg, "--output %s: no such array", o->outputs[i].name);
		if (none || npy_write(o->outputs[i].path, &a, msg, sizeof msg)) {
			fprintf(stderr, "assoc: %s\n", msg);
			return EXIT_UNABLE;
		}
	}
	return EXIT_OK;
}

static int outputs_ok(const Opts *o, const Carrier *c)
{
	for (int i = 0; i < o->noutputs; i++) {
		const char *name = o->outputs[i].name;
		int known = 0;
		for (int k = 0; k < c->nfinal; k++)
			known |= !strcmp(c->finalize[k].name, name);
		for (int k = 0; k < c->nrow; k++)
			known |= !strcmp(c->row[k].name, name);
		for (int k = 0; k < c->ncol; k++)
			known |= !strcmp(c->col[k].name, name);
		for (int k = 0; k < NLAYOUT; k++)
			known |= !strcmp(layout_names[k], name);
		if (!known)
			return usage_error("--output %s: the spec has no output or input named '%s' (with --page-size: "
					   "finalize's outputs, the row and column inputs, block_table, seq_lens, "
					   "cu_seqlens_q)",
					   name, name);
		if (cli_output_not_input(o, "--output", o->outputs[i].path))
			return EXIT_USAGE;
	}
	return EXIT_OK;
}

/* run --page-size's step: the batch through dv, checked against the
 * reference; its time that of the sequences' runs alone. */
typedef struct {
	Paged *p;
	const Device *dv;
	const RunOpts *o;
	RunCheck chk;
} PagedStep;

static int paged_step(void *ctx, double *sec, char *msg, size_t n)
{
	PagedStep *s = ctx;
	return paged_run(s->p, s->dv, s->o, &s->chk, sec, msg, n);
}

/* The keys of p's longest sequence: what a split divides. */
static int longest(const Paged *p)
{
	int most = 0;
	for (int b = 0; b < p->batch; b++)
		most = p->lens[b] > most ? p->lens[b] : most;
	return most;
}

int cmd_paged_run(Opts *o, Carrier *c, const Device *dv)
{
	char msg[1024] = "";
	if (paged_carrier_ok(c, msg, sizeof msg))
		return usage_error("--page-size: %s", msg);
	if ((!strcmp(dv->name, "emu") || !strcmp(dv->name, "gpu")) && run_thread_fits(c, msg, sizeof msg)) {
		fprintf(stderr, "%s: error: %s: %s\n", c->file, dv->name, msg);
		return EXIT_UNABLE;
	}
	int rc = outputs_ok(o, c);
	if (!rc && o->run.config && !dv->config)
		rc = usage_error("--config: the %s device takes no configuration", dv->name);
	if (!rc && o->run.config && dv->config(o->run.config, msg, sizeof msg))
		rc = usage_error("--config: %s", msg);
	Npy arr[MAX_FILES] = {0};
	Paged *p = rc ? NULL : paged_of(o, c, arr);
	if (!rc && !p)
		rc = EXIT_USAGE;
	if (!rc)
		cli_split_fit(o, longest(p));
	PagedStep step = {.p = p, .dv = dv, .o = &o->run};
	double sec = 0;
	if (!rc) {
		char what[512];
		snprintf(what, sizeof what, "%s: running on %s (%d sequences in pages of %d)", c->file, dv->name, p->batch,
			 p->page_size);
		rc = cli_run_step(c, o, dv, what, paged_step, &step, &sec);
		if (!rc) {
			RunCheck chk = step.chk;
			int qmin = 1 << 30, qmax = 0, kmin = 1 << 30, kmax = 0;
			for (int b = 0; b < p->batch; b++) {
				int q = p->cu[b + 1] - p->cu[b];
				qmin = q < qmin ? q : qmin, qmax = q > qmax ? q : qmax;
				kmin = p->lens[b] < kmin ? p->lens[b] : kmin, kmax = p->lens[b] > kmax ? p->lens[b] : kmax;
			}
			char heads[64], as[32] = "", qs[48], ks[48];
			cli_heads_clause(heads, sizeof heads, p->heads, p->kv_heads);
			if (o->arch)
				snprintf(as, sizeof as, " (%s)", o->arch);
			printf("%s: carrier %s on %s%s, %d sequence%s of %s and %s in pages of %d (%d pages)%s (%.3f s)\n",
			       c->file, c->name, dv->name, as, p->batch, p->batch > 1 ? "s" : "",
			       counts(qs, sizeof qs, qmin, qmax, "query", "queries"),
			       counts(ks, sizeof ks, kmin, kmax, "key", "keys"), p->page_size, p->pages, heads, sec);
			if (o->run.verbose)
				printf("  paged: %s; a sequence of no queries is skipped\n",
				       dv->paged ? "each sequence's K and V read from the pool through its row of the block table"
						 : "each sequence's keys gathered through its block table into [key/value head][key] "
						   "before its kernel");
			cli_print_check(&chk);
			rc = chk.ok ? EXIT_OK : EXIT_FAIL;
			runcheck_free(&chk);
			int w = write_outputs(o, p);
			rc = w > rc ? w : rc;
		}
	}
	cli_inputs_free(arr);
	paged_free(p);
	return rc;
}

/* ---- bench --page-size ---- */

enum { PAGED_RUNS = 5 };

typedef struct {
	RtPool *pool;
	char *src, *dst;
	size_t bytes;
} PagedCopy;

static void copy_task(void *ctx, int64_t t)
{
	PagedCopy *pc = ctx;
	int64_t nt = rt_pool_threads(pc->pool);
	size_t lo = pc->bytes * t / nt, hi = pc->bytes * (t + 1) / nt;
	memcpy(pc->dst + lo, pc->src + lo, hi - lo);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double seconds_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* The batch three ways, each kernel compiled once: in place (one call
 * over the pool, its kernel reading keys key_stride apart); each
 * sequence's kernel on its keys gathered into one run, with the gather
 * (what the CPU did before it read pages) or on keys gathered once
 * before (an unpaged run of as many keys). */
typedef struct {
	RtPool *pool;
	LlvmKernel *k, *kp; /* on runs of keys; on the pool */
	const Paged *p;
	RunData **seq;      /* each sequence, gathered */
	CpuHeads *h;
	RunBatch rb;        /* the batch over the pool */
	int n, split;
	int failed;
} PagedKernels;

static void heads_of(PagedKernels *pk)
{
	for (int b = 0; b < pk->n; b++)
		if (pk->seq[b]->rows)
			cpu_heads(pk->seq[b], 1, &pk->h[b]);
}

static void heads_free(PagedKernels *pk)
{
	for (int b = 0; b < pk->n; b++)
		if (pk->h[b].a)
			cpu_heads_free(&pk->h[b]);
	memset(pk->h, 0, pk->n * sizeof *pk->h);
}

static double run_kernels(PagedKernels *pk)
{
	char msg[256];
	double t0 = seconds_now();
	for (int b = 0; b < pk->n; b++)
		if (pk->h[b].n && rt_cpu_run(pk->pool, &pk->k->k, pk->h[b].a, pk->h[b].n, pk->split, msg, sizeof msg))
			pk->failed = 1;
	return seconds_now() - t0;
}

static double run_gathered(PagedKernels *pk)
{
	double t0 = seconds_now();
	for (int b = 0; b < pk->n; b++)
		pk->seq[b] = paged_sequence(pk->p, b);
	heads_of(pk);
	run_kernels(pk);
	heads_free(pk);
	for (int b = 0; b < pk->n; b++) {
		rundata_free(pk->seq[b]);
		pk->seq[b] = NULL;
	}
	return seconds_now() - t0;
}

static double run_in_place(PagedKernels *pk)
{
	char msg[256];
	double t0 = seconds_now();
	if (cpu_batch_run(pk->pool, pk->kp, &pk->rb, pk->split, msg, sizeof msg))
		pk->failed = 1;
	return seconds_now() - t0;
}

/* The median of PAGED_RUNS timings of fn, after one not timed. */
static double median_of(PagedKernels *pk, double (*fn)(PagedKernels *))
{
	double t[PAGED_RUNS];
	fn(pk);
	for (int r = 0; r < PAGED_RUNS; r++)
		t[r] = fn(pk);
	qsort(t, PAGED_RUNS, sizeof *t, cmp_double);
	return t[PAGED_RUNS / 2];
}

int cmd_paged_bench(Opts *o)
{
	int gpu = !strcmp(o->device, "gpu");
	if (strcmp(o->device, "cpu") && strcmp(o->device, "auto") && !gpu)
		return usage_error("bench --page-size runs on --device cpu or gpu (got '%s')", o->device);
	if (o->ninputs)
		return usage_error("bench --page-size draws its batch (--batch, --rows, --len): no --input");
	if (cli_bench_shape(o))
		return EXIT_USAGE;
	const Device *dv = run_device_find(gpu ? "gpu" : "cpu");
	char msg[1024];
	if (!gpu && (!dv || !dv->available(msg, sizeof msg))) {
		fprintf(stderr, "assoc: the cpu device is not usable here: %s\n", dv ? msg : "not in this build");
		return EXIT_UNABLE;
	}
	Carrier *c = cli_load(o, o->specs[0]);
	if (!c)
		return EXIT_USAGE;
	int rc = paged_carrier_ok(c, msg, sizeof msg) ? usage_error("--page-size: %s", msg) : EXIT_OK;
	LlvmOpts lo = {0};
	if (!rc && !gpu && cpu_parse_config(o->run.config, &lo, msg, sizeof msg))
		rc = usage_error("--config: %s", msg);
	if (!rc && gpu && o->run.config && dv && dv->config(o->run.config, msg, sizeof msg))
		rc = usage_error("--config: %s", msg);
	Npy arr[MAX_FILES] = {0};
	Paged *p = rc ? NULL : paged_of(o, c, arr);
	if (!rc && !p)
		rc = EXIT_USAGE;
	if (!rc)
		cli_split_fit(o, longest(p));
	if (!rc && gpu) {
		rc = cmd_paged_bench_gpu(o, p);
		cli_inputs_free(arr);
		paged_free(p);
		spec_carrier_free(c);
		return rc;
	}
	PagedCopy pc = {0};
	PagedKernels pk = {.split = o->run.split, .p = p};
	RunCheck chk = {0};
	cli_busy("%s: checking and timing %d sequences in pages of %d", c->file, p ? p->batch : 0, o->page_size);
	/* a checked run first, the batch through the device as run does */
	if (!rc && paged_run(p, dv, &o->run, &chk, NULL, msg, sizeof msg)) {
		fprintf(stderr, "assoc: cpu: %s\n", msg);
		rc = EXIT_UNABLE;
	}
	if (!rc) {
		pk.seq = calloc(p->batch, sizeof *pk.seq);
		pk.h = calloc(p->batch, sizeof *pk.h);
		if (!pk.seq || !pk.h)
			abort();
		pk.n = p->batch;
		for (int b = 0; b < p->batch; b++)
			pk.seq[b] = paged_sequence(p, b);
		paged_batch(p, &pk.rb);
		LlvmOpts lp = lo;
		lo.fit_rows = cpu_view_rows(pk.seq[0]);
		cpu_batch_opts(&pk.rb, &lp);
		if (llvm_compile(c, &lo, &pk.k, msg, sizeof msg) || llvm_compile(c, &lp, &pk.kp, msg, sizeof msg) ||
		    rt_pool_open(&pk.pool, o->run.threads, msg, sizeof msg)) {
			fprintf(stderr, "assoc: cpu: %s\n", msg);
			rc = EXIT_UNABLE;
		}
	}
	double tp = 0, tg = 0, tk = 0, tcopy = 0;
	if (!rc) {
		tp = median_of(&pk, run_in_place);
		heads_of(&pk);
		tk = median_of(&pk, run_kernels);
		heads_free(&pk);
		for (int b = 0; b < p->batch; b++) {
			rundata_free(pk.seq[b]);
			pk.seq[b] = NULL;
		}
		tg = median_of(&pk, run_gathered);
		if (pk.failed) {
			fprintf(stderr, "assoc: cpu: a kernel failed\n");
			rc = EXIT_UNABLE;
		}
	}
	if (!rc) {
		double tc[PAGED_RUNS];
		pc.pool = pk.pool;
		pc.bytes = (size_t)paged_kv_bytes(p);
		pc.src = malloc(pc.bytes + 1), pc.dst = malloc(pc.bytes + 1);
		if (!pc.src || !pc.dst)
			abort();
		memset(pc.src, 1, pc.bytes), memset(pc.dst, 2, pc.bytes);
		for (int r = 0; r < PAGED_RUNS; r++) {
			double t0 = seconds_now();
			rt_pool_run(pc.pool, rt_pool_threads(pc.pool), copy_task, &pc);
			tc[r] = seconds_now() - t0;
		}
		qsort(tc, PAGED_RUNS, sizeof *tc, cmp_double);
		tcopy = tc[PAGED_RUNS / 2];
	}
	cli_busy_done();
	if (!rc && o->json) {
		/* the gpu's paged line's keys, and the three ways timed here */
		Buf b = {0};
		buf_puts(&b, "{\"spec\": ");
		buf_json_str(&b, c->file);
		buf_printf(&b, ", \"carrier\": \"%s\", \"device\": \"cpu\", \"threads\": %d", c->name,
			   rt_pool_threads(pk.pool));
		long long keys = 0;
		for (int q = 0; q < p->batch; q++)
			keys += p->lens[q];
		buf_printf(&b,
			   ", \"batch\": %d, \"page_size\": %d, \"heads\": %d, \"kv_heads\": %d, \"rows\": %d, \"len\": %d, "
			   "\"keys\": %lld, \"queries\": %d, \"ms\": %.5f, \"kv_bytes\": %.0f, \"gbps\": %.2f, "
			   "\"copy_ms\": %.5f, \"copy_gbps\": %.2f, \"ratio_to_copy\": %.4f, \"gathered_ms\": %.5f, "
			   "\"gathered_ratio_to_copy\": %.4f, \"unpaged_ms\": %.5f, \"unpaged_ratio_to_copy\": %.4f, "
			   "\"match\": %s}",
			   p->batch, p->page_size, p->heads, p->kv_heads, o->rows, o->len, keys, p->cu[p->batch], tp * 1e3,
			   (double)pc.bytes, pc.bytes / tp / 1e9, tcopy * 1e3, pc.bytes / tcopy / 1e9, tcopy / tp, tg * 1e3,
			   tcopy / tg, tk * 1e3, tcopy / tk, chk.ok ? "true" : "false");
		char *js = buf_take(&b);
		puts(js);
		free(js);
		rc = chk.ok ? EXIT_OK : EXIT_FAIL;
	} else if (!rc) {
		char heads[64];
		printf("%s: carrier %s on cpu, %d sequence%s of up to %d keys in pages of %d%s, %d threads\n", c->file,
		       c->name, p->batch, p->batch > 1 ? "s" : "", o->len, p->page_size,
		       cli_heads_clause(heads, sizeof heads, p->heads, p->kv_heads), rt_pool_threads(pk.pool));
		printf("  in place: %.3f ms; K and V read %.2f MB: %.2f GB/s; a copy of those bytes %.3f ms: %.2f of copy\n",
		       tp * 1e3, pc.bytes / 1e6, pc.bytes / tp / 1e9, tcopy * 1e3, tcopy / tp);
		printf("  gathered first: %.3f ms (each sequence's keys gathered from the pages, then its kernel): %.2f of "
		       "copy\n",
		       tg * 1e3, tcopy / tg);
		printf("  unpaged: %.3f ms (each sequence's kernel on its keys as one run, gathered before): %.2f of copy\n",
		       tk * 1e3, tcopy / tk);
		printf("  results %s the float64 reference\n", chk.ok ? "match" : "do NOT match");
		rc = chk.ok ? EXIT_OK : EXIT_FAIL;
	}
	if (chk.out)
		runcheck_free(&chk);
	if (pk.h)
		heads_free(&pk);
	for (int b = 0; pk.seq && b < p->batch; b++)
		rundata_free(pk.seq[b]);
	if (pk.rb.seq)
		paged_batch_free(&pk.rb);
	free(pk.seq), free(pk.h);
	free(pc.src), free(pc.dst);
	rt_pool_close(pk.pool);
	llvm_kernel_free(pk.k);
	llvm_kernel_free(pk.kp);
	cli_inputs_free(arr);
	paged_free(p);
	spec_carrier_free(c);
	return rc;
}
