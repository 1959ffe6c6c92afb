/* dev_cpu.c: the CPU device: the carrier JIT-compiled by the LLVM backend
 * (llvm.c) and run over the rows by the threaded executor (runtime/cpu.c).
 * RunOpts: threads (0: all cores), split (chunks per row; 0: by length),
 * config "lanes=N,accs=N,tile=N" to override the vector shape of the reduce loop
 * (and rows=, unroll=, tf=).
 * Also the emit targets llvm and asm, in this object so that whatever links
 * the device links them too. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/cli/emit.h"
#include "compiler/llvm/llvm.h"
#include "compiler/devices/run.h"

static int cpu_available(char *why, size_t n) { return llvm_available(why, n); }

int cpu_parse_config(const char *cfg, LlvmOpts *lo, char *msg, size_t n)
{
	/* pow2: lanes, accumulators and rows as lanes halve and combine in
	 * pairs (llvm.c's plan), so that another count would be a smaller one */
	static const struct {
		const char *key;
		int least, most, pow2;
		size_t off;
	} items[] = {{"lanes", 1, 64, 1, offsetof(LlvmOpts, lanes)},
		     {"accs", 1, 16, 1, offsetof(LlvmOpts, accs)},
		     {"tile", 1, 64, 0, offsetof(LlvmOpts, tile)},
		     /* 32 and 64 rows are vectors wider than any register: no
		      * faster, and at d = 160 past two minutes to compile */
		     {"rows", 1, 16, 1, offsetof(LlvmOpts, rows)},
		     /* 0: no loops (-1 in LlvmOpts, whose 0 is the host's default) */
		     {"unroll", 0, 16, 0, offsetof(LlvmOpts, unroll)},
		     /* 0: never (-1 in LlvmOpts, whose 0 takes it where it may) */
		     {"tf", 0, 1, 0, offsetof(LlvmOpts, tf)}};
	enum { NITEMS = sizeof items / sizeof *items };
	int given[NITEMS] = {0};
	while (cfg && *cfg) {
		int v, used = 0, k = 0;
		size_t kl = strcspn(cfg, "=,");
		while (k < NITEMS && (strlen(items[k].key) != kl || strncmp(cfg, items[k].key, kl)))
			k++;
		if (k == NITEMS || cfg[kl] != '=')
			return snprintf(msg, n,
					"unknown --config item '%s' (lanes=1..64, accs=1..16, rows=1..16, each a power of two; tile=1..64, unroll=0..16, tf=0..1)",
					cfg),
			       -1;
		/* decimal digits alone, as every --config value (runtime/variant.c):
		 * no sign, space or leading zero, nothing after but a next item */
		const char *d = cfg + kl + 1;
		while (d[used] >= '0' && d[used] <= '9' && used < 10)
			used++;
		v = used && used < 10 ? atoi(d) : -1;
		if (!used || (d[used] && d[used] != ',') || (d[0] == '0' && used > 1) || v < items[k].least ||
		    v > items[k].most)
			return snprintf(msg, n, "%.*s needs a whole number from %d to %d%s, in decimal digits alone (not '%.*s')",
					(int)kl, cfg, items[k].least, items[k].most, items[k].pow2 ? ", a power of two" : "",
					(int)strcspn(d, ","), d),
			       -1;
		if (d[used] == ',' && !d[used + 1])
			return snprintf(msg, n, "'%s' ends in a comma: an item is missing after it", cfg), -1;
		if (items[k].pow2 && (v & (v - 1)))
			return snprintf(msg, n, "%.*s=%d: %s takes a power of two from %d to %d", (int)kl, cfg, v, items[k].key,
					items[k].least, items[k].most),
			       -1;
		if (given[k]++)
			return snprintf(msg, n, "%s is given twice", items[k].key), -1;
		int zero_is_none = !strcmp(items[k].key, "unroll") || !strcmp(items[k].key, "tf");
		*(int *)((char *)lo + items[k].off) = zero_is_none && v == 0 ? -1 : v;
		cfg += kl + 1 + used;
		cfg += *cfg == ',';
	}
	return 0;
}

void cpu_args(RunData *d, CpuArgs *a, const void **in, void **out)
{
	rundata_pointers(d, in, out);
	*a = (CpuArgs){in, out, d->params, d->rows, d->len, 0, d->qpos};
}

void cpu_heads(RunData *d, int pack, CpuHeads *h)
{
	Carrier *c = d->c;
	int nin = c->nelem + c->ncol + c->nrow + 1, nout = c->nfinal + c->nmap + 1;
	int heads = d->heads > 1 ? d->heads : 1, g = pack && heads > 1 ? heads / d->kv_heads : 1;
	h->n = heads / g;
	h->in = calloc((size_t)h->n * nin, sizeof *h->in);
	h->out = calloc((size_t)h->n * nout, sizeof *h->out);
	h->a = calloc(h->n, sizeof *h->a);
	if (!h->in || !h->out || !h->a)
		abort();
	for (int k = 0; k < h->n; k++) {
		/* a head's rows, outputs and element inputs follow the previous
		 * head's: the first head of a view points at all of its heads' */
		RunData *v = heads > 1 ? rundata_head_view(d, k * g) : d;
		cpu_args(v, &h->a[k], h->in + (size_t)k * nin, h->out + (size_t)k * nout);
		if (g > 1)
			h->a[k].rows = (int64_t)g * d->rows, h->a[k].period = d->rows;
		if (v != d)
			rundata_view_free(v);
	}
}

int cpu_view_rows(const RunData *d)
{
	int64_t r = d->heads > 1 && d->kv_heads >= 1 ? (int64_t)d->rows * (d->heads / d->kv_heads) : d->rows;
	return r < INT_MAX ? (int)r : INT_MAX;
}

void cpu_heads_free(CpuHeads *h)
{
	free(h->a);
	free(h->in);
	free(h->out);
}

static int cpu_run_batch(RunBatch *rb, const RunOpts *o, char *msg, size_t n);

static int cpu_run(RunData *d, const RunOpts *o, char *msg, size_t n)
{
	if (d->page.size) /* one sequence of a paged batch: a batch of one */
		return cpu_run_batch(&(RunBatch){.seq = &d, .batch = 1}, o, msg, n);
	runcheck_round_p(d, 0, 0, 0, 0); /* P stays float32 here, whatever ran on d before */
	LlvmOpts lo = {.fit_rows = cpu_view_rows(d)};
	if (cpu_parse_config(o->config, &lo, msg, n))
		return -1;
	LlvmKernel *k;
	if (llvm_compile(d->c, &lo, &k, msg, n))
		return -1;
	RtPool *p;
	if (rt_pool_open(&p, o->threads, msg, n)) {
		llvm_kernel_free(k);
		return -1;
	}
	/* Heads as views of one run, their rows shared out to the threads
	 * together: a few rows a head (decoding) still keep every thread busy. */
	CpuHeads h;
	cpu_heads(d, 1, &h);
	int rc = rt_cpu_run(p, &k->k, h.a, h.n, o->split, msg, n);
	if (o->verbose) {
		char lanes[96] = "", views[96] = "";
		int g = rt_cpu_group(&k->k, h.a->rows);
		if (k->keys && g < 16)
			snprintf(lanes, sizeof lanes, ", keys as lanes in tiles of 16, %d row%s a group", g, g > 1 ? "s" : "");
		else if (g > 1)
			snprintf(lanes, sizeof lanes, ", rows side by side as lanes in tiles of %d, unroll=%d", k->rows_tile,
				 k->unroll);
		if (h.n < d->heads)
			snprintf(views, sizeof views, ", %d heads as %d view%s of %lld rows", d->heads, h.n, h.n > 1 ? "s" : "",
				 (long long)h.a->rows);
		char target[96] = "";
		if (k->target[0])
			snprintf(target, sizeof target, ", compiled for %s (ASSOC_CPU)", k->target);
		/* ordered lanes are lanes too: --config lanes= sets them */
		fprintf(stderr, "cpu: lanes=%d,accs=%d,tile=%d,rows=%d (%s%s), %d threads, split %d%s%s\n",
			k->ordered > 1 ? k->ordered : k->lanes, k->accs,
			k->tile, k->rows, llvm_fold_name(k), lanes,
			rt_pool_threads(p), rt_cpu_split(&k->k, h.a->rows, h.n, d->len, o->split), views, target);
		if (lo.lanes > 1 && k->one_lane[0]) /* a --config the plan cannot take */
			fprintf(stderr, "cpu: --config lanes=%d not taken: the reduce folds in one lane, for %s\n", lo.lanes,
				k->one_lane);
		if (lo.tile > 0 && lo.tile != k->tile)
			fprintf(stderr, "cpu: --config tile=%d not taken: this reduce folds tiles of %d position%s\n", lo.tile,
				k->tile, k->tile > 1 ? "s" : "");
		if (k->ordered > 1)
			fprintf(stderr, "cpu: %d ordered lanes, the merge not known to commute: %s\n", k->ordered, k->order);
		else if (k->lanes > 1 && k->order[0])
			fprintf(stderr, "cpu: positions in any order, the merge commutes: %s\n", k->order);
		if (k->tf)
			fprintf(stderr, "cpu: transported fold: %s\n", k->tf_why);
	}
	cpu_heads_free(&h);
	rt_pool_close(p);
	llvm_kernel_free(k);
	return rc;
}

/* ---- a paged batch read in place ---- */

void cpu_batch_opts(const RunBatch *rb, LlvmOpts *lo)
{
	int most = 0;
	for (int b = 0; b < rb->batch; b++)
		if (cpu_view_rows(rb->seq[b]) > most)
			most = cpu_view_rows(rb->seq[b]);
	lo->fit_rows = most;
	lo->key_stride = rb->seq[0]->page.kv;
}

/* Each sequence with queries as cpu_heads packs it, one view a key/value
 * head over the pool (its column pointers at that head's component of
 * page 0, as rundata_head_view leaves them); with rb->fin, its outputs
 * moved to the batch's [rows][heads] arrays. */
int cpu_batch_run(RtPool *pool, const LlvmKernel *k, RunBatch *rb, int split, char *msg, size_t n)
{
	RunData *d0 = rb->seq[0];
	Carrier *c = d0->c;
	int nout = c->nfinal + c->nmap + 1, nv = 0;
	if (k->key_stride != d0->page.kv) {
		snprintf(msg, n, "a kernel compiled for a pool of %d key/value heads (0: none) on a pool of %d", k->key_stride,
			 d0->page.kv);
		return -1;
	}
	CpuHeads *h = calloc(rb->batch, sizeof *h);
	CpuPagedView *v = calloc((size_t)rb->batch * (d0->kv_heads > 1 ? d0->kv_heads : 1), sizeof *v);
	int64_t *key_bytes = calloc(c->ncol + 1, sizeof *key_bytes);
	if (!h || !v || !key_bytes)
		abort();
	for (int b = 0; b < rb->batch; b++) {
		RunData *s = rb->seq[b];
		if (!s->rows)
			continue;
		cpu_heads(s, 1, &h[b]);
		int H = s->heads > 1 ? s->heads : 1, g = H / h[b].n;
		for (int x = 0; x < h[b].n; x++, nv++) {
			v[nv] = (CpuPagedView){h[b].a[x], s->page.table, 1, s->rows};
			for (int f = 0; rb->fin && f < c->nfinal; f++) {
				size_t sz = run_kind_size(rb->fin[f].kind) * rb->fin[f].width;
				h[b].out[(size_t)x * nout + f] = (char *)rb->fin[f].p + ((size_t)rb->cu[b] * H + (size_t)x * g) * sz;
				v[nv].at_row = H, v[nv].at_head = 1;
			}
		}
		runcheck_round_p(s, 0, 0, 0, 0); /* P stays float32 here */
	}
	for (int q = 0; q < c->ncol; q++)
		key_bytes[q] = (int64_t)d0->page.kv * spec_decl_width(&c->col[q]) * run_kind_size(c->col[q].storage);
	CpuPages pg = {d0->page.size, c->nelem + c->ncol + c->nrow, c->nelem, c->ncol, key_bytes};
	int rc = rt_cpu_run_paged(pool, &k->k, &pg, v, nv, split, msg, n);
	for (int b = 0; b < rb->batch; b++)
		if (h[b].a)
			cpu_heads_free(&h[b]);
	free(h), free(v), free(key_bytes);
	return rc;
}

/* The batch in one call, its keys read from the pool in place.  Every
 * carrier that reads paged keys (paged_carrier_ok) runs so: its column
 * inputs are read by the reduce alone, a key or a vector of consecutive
 * keys at a time, which a page or a run of pages holds.  Nothing here
 * gathers keys: the gather into runs of keys (rundata_unpaged,
 * paged_sequence) is left to kernels that read runs of keys, the gpu's
 * and emu's row templates, and to the float64 reference. */
static int cpu_run_batch(RunBatch *rb, const RunOpts *o, char *msg, size_t n)
{
	LlvmOpts lo = {0};
	if (cpu_parse_config(o->config, &lo, msg, n))
		return -1;
	cpu_batch_opts(rb, &lo);
	LlvmKernel *k;
	if (llvm_compile(rb->seq[0]->c, &lo, &k, msg, n))
		return -1;
	RtPool *p;
	if (rt_pool_open(&p, o->threads, msg, n)) {
		llvm_kernel_free(k);
		return -1;
	}
	int64_t calls = rt_cpu_paged_calls();
	int rc = cpu_batch_run(p, k, rb, o->split, msg, n);
	if (o->verbose && !rc) {
		char target[96] = "";
		if (k->target[0])
			snprintf(target, sizeof target, ", compiled for %s (ASSOC_CPU)", k->target);
		fprintf(stderr, "cpu: %d sequences in one call, keys read in place from pages of %d: %lld reduce calls, "
			"%d threads%s\n", rb->batch, rb->seq[0]->page.size, (long long)(rt_cpu_paged_calls() - calls),
			rt_pool_threads(p), target);
	}
	rt_pool_close(p);
	llvm_kernel_free(k);
	return rc;
}

static int cpu_config(const char *cfg, char *msg, size_t n)
{
	LlvmOpts lo = {0};
	return cpu_parse_config(cfg, &lo, msg, n);
}

const Device dev_cpu = {"cpu", cpu_available, cpu_run, cpu_config, 1, cpu_run_batch};

/* `assoc emit --target llvm`: the optimized IR; `--target asm`: host assembly. */
static int emit_cpu(Carrier *c, const Opts *o, int asm_, FILE *out, char *msg, size_t n)
{
	LlvmOpts lo = {0};
	if (cpu_parse_config(o->run.config, &lo, msg, n))
		return EXIT_USAGE;
	return llvm_emit(c, &lo, asm_, out, msg, n) ? EXIT_UNABLE : EXIT_OK;
}

static int emit_ir(Carrier *c, const Opts *o, void *early, FILE *out, char *msg, size_t n)
{
	(void)early;
	return emit_cpu(c, o, 0, out, msg, n);
}

static int emit_asm(Carrier *c, const Opts *o, void *early, FILE *out, char *msg, size_t n)
{
	(void)early;
	return emit_cpu(c, o, 1, out, msg, n);
}

const Target target_llvm = {.name = "llvm", .emit = emit_ir};
const Target target_asm = {.name = "asm", .emit = emit_asm};
