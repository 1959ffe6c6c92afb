/* assoc_paged.c: assoc_run_paged and assoc_run_paged_device (assoc.h): a
 * batch of sequences over a paged key/value cache, on host arrays in one
 * launch where the kernel's device takes one (the CPU's included: its keys
 * read from the caller's pages in place; else each sequence gathered
 * from the caller's pages and run through assoc_run_heads, its outputs
 * written back into the caller's), and on device memory in one launch. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/devices/paged.h"
#include "compiler/lib/libassoc_int.h"

static AssocStatus paged_fail(AssocKernel *k, AssocStatus st, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(k->err, sizeof k->err, fmt, ap);
	va_end(ap);
	return st;
}

/* The caller's buffer named name, checked to hold exactly want bytes; NULL
 * after setting k->err. */
static const AssocBuffer *bound(AssocKernel *k, const AssocBuffer *bufs, int nbufs, const char *name, size_t want,
				const char *layout, AssocStatus *st)
{
	const AssocBuffer *b = NULL;
	for (int i = 0; i < nbufs; i++)
		if (bufs[i].name && !strcmp(bufs[i].name, name)) {
			if (b) {
				*st = paged_fail(k, ASSOC_EINVAL, "buffer '%s' is given twice", name);
				return NULL;
			}
			b = &bufs[i];
		}
	if (!b || (!b->data && want)) /* NULL holds 0 bytes, as assoc_run takes it */
		*st = paged_fail(k, ASSOC_EINVAL, "no buffer for '%s' (%s)", name, layout);
	else if (b->bytes != want)
		*st = paged_fail(k, ASSOC_ESIZE, "buffer '%s' holds %zu bytes; it takes %zu: %s", name, b->bytes, want, layout);
	return *st ? NULL : b;
}

/* The layout a host batch's buffer has, with its sizes and where its
 * rows come from, for the message of a buffer that does not hold it:
 * the pool (pool) or the queries and outputs. */
static void paged_layout(char *out, size_t n, int pool, const AssocPaged *pg, int64_t total, int64_t heads,
			 int64_t kv_heads, int w, const char *type)
{
	if (pool)
		snprintf(out, n, "[pages][page_size][kv_heads][width] = [%lld][%lld][%lld][%d] of %s", (long long)pg->pages,
			 (long long)pg->page_size, (long long)kv_heads, w, type);
	else if (pg->cu_seqlens_q)
		snprintf(out, n, "[rows][heads][width] = [%lld][%lld][%d] of %s (rows: cu_seqlens_q[%lld])",
			 (long long)total, (long long)heads, w, type, (long long)pg->batch);
	else
		snprintf(out, n, "[rows][heads][width] = [%lld][%lld][%d] of %s (rows: %lld sequences of %lld queries)",
			 (long long)total, (long long)heads, w, type, (long long)pg->batch, (long long)pg->rows);
}

/* The checks both forms make of a batch before anything is read: the
 * carrier, the heads, the page size, the batch's counts and arrays; on
 * the device (dev) rows, the most queries of a sequence, from 1. */
static AssocStatus batch_ok(AssocKernel *k, int64_t heads, int64_t kv_heads, const AssocPaged *pg, int dev)
{
	char msg[512];
	if (paged_carrier_ok(k->c, msg, sizeof msg))
		return paged_fail(k, ASSOC_EINVAL, "%s", msg);
	if (heads < 1 || kv_heads < 1 || heads % kv_heads || heads > 1 << 16)
		return paged_fail(k, ASSOC_EINVAL, "%lld heads on %lld key/value heads: heads a multiple of kv_heads, at most 65536",
				  (long long)heads, (long long)kv_heads);
	if (pg->page_size < PAGED_MIN_PAGE || pg->page_size > PAGED_MAX_PAGE || (pg->page_size & (pg->page_size - 1)))
		return paged_fail(k, ASSOC_EINVAL, "page_size %lld: a power of two from %d to %d", (long long)pg->page_size,
				  PAGED_MIN_PAGE, PAGED_MAX_PAGE);
	const char *on = dev ? " on the device" : "";
	if (pg->batch < 1 || pg->batch > 1 << 24)
		return paged_fail(k, ASSOC_EINVAL, "batch %lld: a paged batch%s holds 1 to 2^24 sequences",
				  (long long)pg->batch, on);
	if (pg->pages < 1 || pg->pages > INT32_MAX / PAGED_MAX_PAGE)
		return paged_fail(k, ASSOC_EINVAL, "pages %lld: the pool holds 1 to %d pages", (long long)pg->pages,
				  INT32_MAX / PAGED_MAX_PAGE);
	if (pg->max_pages < 1 || pg->max_pages > INT32_MAX / PAGED_MAX_PAGE)
		return paged_fail(k, ASSOC_EINVAL, "max_pages %lld: a block table row holds 1 to %d pages",
				  (long long)pg->max_pages, INT32_MAX / PAGED_MAX_PAGE);
	if (pg->rows < dev || pg->rows > INT32_MAX)
		return paged_fail(k, ASSOC_EINVAL, "rows %lld: %s, from %d to 2^31 - 1", (long long)pg->rows,
				  dev ? "the most queries of a sequence" : "the queries of each sequence", dev);
	if (!pg->block_table || !pg->seq_lens)
		return paged_fail(k, ASSOC_EINVAL, "a paged batch%s needs block_table and seq_lens (%s is NULL)", on,
				  pg->block_table ? "seq_lens" : "block_table");
	return ASSOC_OK;
}

/* An output of bufs that overlaps the batch's layout arrays (their
 * batch x max_pages, batch and batch + 1 int32s): the kernels look pages
 * up in the table while the outputs are written. */
static AssocStatus layout_apart(AssocKernel *k, const AssocPaged *pg, const AssocBuffer *bufs, int nbufs)
{
	const struct {
		const char *name;
		const void *at;
		size_t bytes;
	} lay[] = {{"block_table", pg->block_table, (size_t)pg->batch * pg->max_pages * sizeof(int32_t)},
		   {"seq_lens", pg->seq_lens, (size_t)pg->batch * sizeof(int32_t)},
		   {"cu_seqlens_q", pg->cu_seqlens_q, (size_t)(pg->batch + 1) * sizeof(int32_t)}};
	for (int i = 0; i < nbufs; i++) {
		int out = 0;
		for (int f = 0; f < k->c->nfinal && bufs[i].name; f++)
			out |= !strcmp(bufs[i].name, k->c->finalize[f].name);
		if (!out || !bufs[i].data || !bufs[i].bytes)
			continue;
		uintptr_t lo = (uintptr_t)bufs[i].data, hi = lo + bufs[i].bytes;
		for (size_t t = 0; t < sizeof lay / sizeof *lay; t++) {
			uintptr_t lo2 = (uintptr_t)lay[t].at, hi2 = lo2 + lay[t].bytes;
			if (lay[t].at && lo < hi2 && lo2 < hi)
				return paged_fail(k, ASSOC_EINVAL,
						  "output '%s' overlaps %s in memory: every output needs memory of its own, "
						  "apart from the batch's layout arrays too",
						  bufs[i].name, lay[t].name);
		}
	}
	return ASSOC_OK;
}

/* k's paged module (k->pgpu), opened for pages of page_size keys. */
static AssocStatus paged_module(AssocKernel *k, int page_size)
{
	char why[sizeof k->err];
	if (k->pgpu && k->pgpu->page_size != page_size)
		lib_release_paged(k);
	if (k->pgpu)
		return ASSOC_OK;
	Gpu *g = calloc(1, sizeof *g);
	if (!g)
		return paged_fail(k, ASSOC_ENOMEM, "out of memory");
	if (gpu_open_aside(g, k->c, page_size, why, sizeof why)) {
		free(g);
		return paged_fail(k, ASSOC_EDEVICE, "gpu: %s", why);
	}
	k->pgpu = g;
	return ASSOC_OK;
}

/* The CPU's kernel for rb's pool (k->paged): compiled for its key stride
 * and the rows of its widest view, as the one kept was or again. */
static AssocStatus paged_kernel(AssocKernel *k, const RunBatch *rb)
{
	LlvmOpts lo = {0};
	cpu_batch_opts(rb, &lo);
	/* the rows as lanes plan() picks: the host's (0), else 8 or 4 */
	lo.fit_rows = lo.fit_rows >= 16 ? 0 : lo.fit_rows >= 8 ? 8 : lo.fit_rows >= 4 ? 4 : 0;
	if (k->paged && k->paged_opts.key_stride == lo.key_stride && k->paged_opts.fit_rows == lo.fit_rows)
		return ASSOC_OK;
	llvm_kernel_free(k->paged);
	k->paged = NULL;
	char why[sizeof k->err];
	if (llvm_compile(k->c, &lo, &k->paged, why, sizeof why))
		return paged_fail(k, ASSOC_ECOMPILE, "cpu: %s", why);
	k->paged_opts = lo;
	return ASSOC_OK;
}

/* The whole of p in one launch on k's device, where it takes one: on gpu
 * the paged module's batch kernels, on emu the emulator's (the batch's
 * arrays copied to the device once, the outputs back once), on cpu one
 * call that reads the caller's pages in place and writes its [rows][heads]
 * outputs (the queries gathered a sequence at a time, a few rows each).
 * *done 0 where the device runs a sequence at a time: the interpreter,
 * and a carrier on the row templates or of no kernel that takes a batch. */
static AssocStatus one_launch(AssocKernel *k, Paged *p, const AssocValue *params, int nparams, int *done)
{
	*done = 0;
	const Device *dv = k->dev;
	int cpu = !dv && !k->gpu;
	if (!k->gpu && !cpu && !(dv && dv->paged && dv->run_batch))
		return ASSOC_OK;
	AssocStatus st = lib_params_of(k, params, nparams, p->params);
	if (!st && k->gpu)
		st = paged_module(k, p->page_size);
	if (st)
		return st;
	RunBatch rb;
	paged_batch(p, &rb);
	rb.row = p->row, rb.fin = p->fin;
	char why[sizeof k->err];
	for (int b = 0; !st && k->c->assume && b < p->batch; b++)
		if (rb.seq[b]->rows && rundata_check_assume(rb.seq[b], why, sizeof why))
			st = paged_fail(k, ASSOC_EINVAL, "sequence %d: %s", b, why);
	if (!st && cpu)
		st = paged_kernel(k, &rb);
	int rc = st ? -1
	       : k->gpu ? gpu_run_batch_open(k->pgpu, &rb, &(RunOpts){0}, why, sizeof why)
	       : cpu	? cpu_batch_run(k->pool, k->paged, &rb, 0, why, sizeof why)
			: dv->run_batch(&rb, &(RunOpts){.threads = k->threads}, why, sizeof why);
	if (!st && rc < 0)
		st = paged_fail(k, ASSOC_EDEVICE, "%s: %s", k->gpu ? "gpu" : cpu ? "cpu" : dv->name, why);
	*done = !st && rc == 0;
	paged_batch_free(&rb);
	return st;
}

/* The arguments both paged runs check first: a kernel that compiled, a
 * layout, a buffer list; ASSOC_OK, or the status with why in k->err. */
static AssocStatus paged_args(AssocKernel *k, const AssocPaged *pg, const AssocBuffer *bufs, int nbufs)
{
	if (!k)
		return ASSOC_EINVAL;
	if (k->failed)
		return ASSOC_EINVAL; /* k->err keeps why it did not compile */
	if (!pg)
		return paged_fail(k, ASSOC_EINVAL, "no paged layout (NULL)");
	if (nbufs < 0 || (nbufs && !bufs))
		return paged_fail(k, ASSOC_EINVAL, "%d buffers %s", nbufs,
				  nbufs < 0 ? "(a count under 0)" : "with a NULL buffer array");
	return ASSOC_OK;
}

AssocStatus assoc_run_paged(AssocKernel *k, int64_t heads, int64_t kv_heads, const AssocPaged *pg,
			    const AssocBuffer *bufs, int nbufs, const AssocValue *params, int nparams)
{
	AssocStatus args = paged_args(k, pg, bufs, nbufs);
	if (args)
		return args;
	Carrier *c = k->c;
	char msg[512];
	AssocStatus bad = batch_ok(k, heads, kv_heads, pg, 0);
	if (bad)
		return bad;
	if (paged_layout_ok((int)pg->batch, (int)pg->page_size, (int)pg->pages, (int)pg->max_pages, pg->block_table,
			    pg->seq_lens, pg->cu_seqlens_q, msg, sizeof msg))
		return paged_fail(k, ASSOC_EINVAL, "%s", msg);
	int64_t total = pg->cu_seqlens_q ? pg->cu_seqlens_q[pg->batch] : pg->batch * pg->rows;
	if (total > INT32_MAX / heads) /* total * heads would overflow past 2^63 */
		return paged_fail(k, ASSOC_EINVAL, "%lld query rows of %lld heads: under 2^31 in all", (long long)total,
				  (long long)heads);
	/* the caller's arrays as a Paged over them (nothing of it is freed) */
	Paged p = {.c = c, .heads = (int)heads, .kv_heads = (int)kv_heads, .batch = (int)pg->batch,
		   .page_size = (int)pg->page_size, .pages = (int)pg->pages, .max_pages = (int)pg->max_pages,
		   .table = (int32_t *)pg->block_table, .lens = (int32_t *)pg->seq_lens};
	AssocStatus st = ASSOC_OK;
	p.cu = calloc(pg->batch + 1, sizeof *p.cu);
	p.row = calloc(c->nrow + 1, sizeof *p.row);
	p.col = calloc(c->ncol + 1, sizeof *p.col);
	p.fin = calloc(c->nfinal + 1, sizeof *p.fin);
	p.params = calloc(c->nparams + 1, sizeof *p.params);
	if (!p.cu || !p.row || !p.col || !p.fin || !p.params)
		st = paged_fail(k, ASSOC_ENOMEM, "out of memory");
	for (int64_t b = 0; !st && b <= pg->batch; b++)
		p.cu[b] = pg->cu_seqlens_q ? pg->cu_seqlens_q[b] : (int32_t)(b * pg->rows);
	const Decl *dg[] = {c->row, c->col};
	const int nd[] = {c->nrow, c->ncol};
	Buffer *pb[] = {p.row, p.col};
	for (int g = 0; g < 2; g++)
		for (int i = 0; !st && i < nd[g]; i++) {
			size_t n = g ? (size_t)pg->pages * pg->page_size * kv_heads : (size_t)total * heads;
			int w = spec_decl_width(&dg[g][i]);
			char lay[256];
			paged_layout(lay, sizeof lay, g, pg, total, heads, kv_heads, w, ty_kind_name(dg[g][i].storage));
			const AssocBuffer *x = bound(k, bufs, nbufs, dg[g][i].name,
						     n * w * run_kind_size(dg[g][i].storage), lay, &st);
			if (x)
				pb[g][i] = (Buffer){dg[g][i].storage, w, n, x->data};
		}
	for (int i = 0; !st && i < c->nfinal; i++) {
		Ty t = c->finalize[i].e->ty;
		int w = t.len ? t.len : 1;
		size_t n = (size_t)total * heads;
		char lay[256];
		paged_layout(lay, sizeof lay, 0, pg, total, heads, kv_heads, w, ty_kind_name((TyKind)t.kind));
		const AssocBuffer *x = bound(k, bufs, nbufs, c->finalize[i].name, n * w * run_kind_size((TyKind)t.kind),
					     lay, &st);
		if (x)
			p.fin[i] = (Buffer){(TyKind)t.kind, w, n, x->data};
	}
	for (int i = 0; !st && i < nbufs; i++) {
		int known = 0;
		for (int g = 0; g < 2; g++)
			for (int j = 0; j < nd[g]; j++)
				known |= bufs[i].name && !strcmp(bufs[i].name, dg[g][j].name);
		for (int j = 0; j < c->nfinal; j++)
			known |= bufs[i].name && !strcmp(bufs[i].name, c->finalize[j].name);
		if (!known)
			st = paged_fail(k, ASSOC_EINVAL, "the spec has no row, column or finalize array named '%s'",
					bufs[i].name ? bufs[i].name : "(null)");
	}
	if (!st && (lib_misaligned(k->s, lib_word_in(k, 0), bufs, nbufs, k->err, sizeof k->err) ||
		    lib_overlapping(k->s, bufs, nbufs, k->err, sizeof k->err)))
		st = ASSOC_EINVAL;
	if (!st)
		st = layout_apart(k, pg, bufs, nbufs);
	int done = 0;
	if (!st)
		st = one_launch(k, &p, params, nparams, &done);
	/* else each sequence as a run of its own arrays; one of no queries has
	 * nothing to give.  Their outputs are gathered apart and copied into
	 * the caller's once every sequence has run: a sequence refused (its
	 * inputs break assume, its positions do not start at 0) leaves the
	 * outputs as they were, as a refused batch does elsewhere. */
	int narr = c->nrow + c->ncol + c->nfinal;
	AssocBuffer *sb = calloc(narr + 1, sizeof *sb);
	void **into = calloc(c->nfinal + 1, sizeof *into);
	if (!st && (!sb || !into))
		st = paged_fail(k, ASSOC_ENOMEM, "out of memory");
	if (!st && !done && paged_fits(c, p.heads, p.kv_heads, p.batch, p.page_size, p.pages, p.lens, p.cu, (int)pg->rows,
				       0, msg, sizeof msg))
		st = paged_fail(k, ASSOC_ENOMEM, "%s", msg);
	for (int i = 0; !st && !done && i < c->nfinal; i++) {
		size_t bytes = p.fin[i].n * p.fin[i].width * run_kind_size(p.fin[i].kind);
		void *apart = bytes ? malloc(bytes) : NULL;
		if (bytes && !apart)
			st = paged_fail(k, ASSOC_ENOMEM, "out of memory for the outputs of %lld query rows", (long long)total);
		else
			into[i] = p.fin[i].p, p.fin[i].p = apart;
	}
	for (int b = 0; !st && !done && b < p.batch; b++) {
		if (p.cu[b + 1] == p.cu[b])
			continue;
		RunData *s = paged_sequence(&p, b);
		int at = 0;
		const Buffer *sg[] = {s->row, s->col};
		for (int g = 0; g < 2; g++)
			for (int i = 0; i < nd[g]; i++, at++)
				sb[at] = (AssocBuffer){dg[g][i].name, sg[g][i].p,
						       sg[g][i].n * sg[g][i].width * run_kind_size(sg[g][i].kind)};
		for (int i = 0; i < c->nfinal; i++, at++)
			sb[at] = (AssocBuffer){c->finalize[i].name, s->fin[i].p,
					       s->fin[i].n * s->fin[i].width * run_kind_size(s->fin[i].kind)};
		/* gpu's and emu's unpaged kernels count i from 0 in every run */
		char why0[sizeof k->err];
		if ((k->gpu || (k->dev && !strcmp(k->dev->name, "emu"))) &&
		    rundata_from_zero_ok(s, "the unpaged CUDA kernels", why0, sizeof why0))
			st = paged_fail(k, ASSOC_EDEVICE, "%s", why0);
		else
			st = lib_run_heads_at(k, heads, kv_heads, s->rows, s->len, s->qpos, sb, narr, params, nparams);
		if (st) {
			char why[sizeof k->err];
			snprintf(why, sizeof why, "%s", k->err);
			paged_fail(k, st, "sequence %d (%d queries, %d keys): %s", b, s->rows, s->len, why);
		} else
			paged_store(&p, b, s);
		rundata_free(s);
	}
	for (int i = 0; !done && into && i < c->nfinal; i++) {
		size_t bytes = into[i] ? p.fin[i].n * p.fin[i].width * run_kind_size(p.fin[i].kind) : 0;
		if (!bytes)
			continue; /* nothing gathered apart */
		if (!st)
			memcpy(into[i], p.fin[i].p, bytes);
		free(p.fin[i].p);
	}
	free(into);
	free(sb);
	free(p.cu), free(p.row), free(p.col), free(p.fin), free(p.params);
	return st;
}

/* ---- on device memory ---- */

/* The bytes of one query row (all heads) of array d of kind kind and
 * width w. */
static size_t row_bytes(int64_t heads, int w, TyKind kind) { return (size_t)heads * w * run_kind_size(kind); }

AssocStatus assoc_run_paged_device(AssocKernel *k, int64_t heads, int64_t kv_heads, const AssocPaged *pg,
				   const AssocBuffer *bufs, int nbufs, const AssocValue *params, int nparams,
				   void *stream)
{
	AssocStatus args = paged_args(k, pg, bufs, nbufs);
	if (args)
		return args;
	Carrier *c = k->c;
	if (!k->gpu)
		return paged_fail(k, ASSOC_EDEVICE,
				  "assoc_run_paged_device runs kernels compiled for \"gpu\" on device memory; this one was "
				  "compiled for \"%s\" (assoc_run_paged runs it on host arrays)",
				  k->dev ? k->dev->name : "cpu");
	AssocStatus bad = batch_ok(k, heads, kv_heads, pg, 1);
	if (bad)
		return bad;
	if (c->nelem + c->ncol + c->nrow + 3 > CUDA_MAXIN || c->nfinal > CUDA_MAXOUT)
		return paged_fail(k, ASSOC_EINVAL, "carrier %s has more arrays than a paged launch takes", c->name);
	AssocStatus st = ASSOC_OK;
	GpuPaged pd = {.c = c, .heads = (int)heads, .kv_heads = (int)kv_heads, .batch = (int)pg->batch,
		       .page_size = (int)pg->page_size, .max_pages = (int)pg->max_pages, .rows = (int)pg->rows,
		       .table = (RtPtr)(size_t)pg->block_table, .lens = (RtPtr)(size_t)pg->seq_lens,
		       .cu = (RtPtr)(size_t)pg->cu_seqlens_q};
	/* the queries in all, from the first row input's bytes; every other
	 * row and output array holds as many */
	int64_t total = -1;
	for (int i = 0; !st && i < c->nrow; i++) {
		const Decl *d = &c->row[i];
		size_t one = row_bytes(heads, spec_decl_width(d), d->storage);
		const AssocBuffer *x = NULL;
		int given = 0;
		for (int j = 0; j < nbufs; j++)
			if (bufs[j].name && !strcmp(bufs[j].name, d->name))
				x = &bufs[j], given++;
		if (given > 1)
			st = paged_fail(k, ASSOC_EINVAL, "buffer '%s' is given twice", d->name);
		else if (!x || (!x->data && x->bytes))
			st = paged_fail(k, ASSOC_EINVAL, "no buffer for '%s' ([rows][heads][width])",
					d->name);
		else if (x->bytes % one)
			st = paged_fail(k, ASSOC_ESIZE, "buffer '%s' holds %zu bytes, not a whole number of queries of %zu",
					d->name, x->bytes, one);
		else if (total < 0)
			total = (int64_t)(x->bytes / one);
		else if ((int64_t)(x->bytes / one) != total)
			st = paged_fail(k, ASSOC_ESIZE, "buffer '%s' holds %zu queries, the row input before it %lld", d->name,
					x->bytes / one, (long long)total);
		if (!st)
			pd.row[i] = (RtPtr)(size_t)x->data;
	}
	if (!st && !pg->cu_seqlens_q && total != pg->batch * pg->rows)
		st = paged_fail(k, ASSOC_ESIZE, "%lld queries in the row inputs; %lld sequence%s of %lld quer%s each (without "
				"cu_seqlens_q) are %lld",
				(long long)total, (long long)pg->batch, pg->batch == 1 ? "" : "s", (long long)pg->rows,
				pg->rows == 1 ? "y" : "ies", (long long)(pg->batch * pg->rows));
	if (!st && total > INT32_MAX / heads)
		st = paged_fail(k, ASSOC_EINVAL, "%lld query rows of %lld heads: under 2^31 in all", (long long)total,
				(long long)heads);
	for (int i = 0; !st && i < c->ncol; i++) {
		size_t n = (size_t)pg->pages * pg->page_size * kv_heads;
		int w = spec_decl_width(&c->col[i]);
		const AssocBuffer *x = bound(k, bufs, nbufs, c->col[i].name, n * w * run_kind_size(c->col[i].storage),
					     "[pages][page_size][kv_heads][width]", &st);
		if (x)
			pd.col[i] = (RtPtr)(size_t)x->data;
	}
	for (int i = 0; !st && i < c->nfinal; i++) {
		Ty t = c->finalize[i].e->ty;
		const AssocBuffer *x = bound(k, bufs, nbufs, c->finalize[i].name,
					     (size_t)total * row_bytes(heads, t.len ? t.len : 1, (TyKind)t.kind),
					     "[rows][heads][width]", &st);
		if (x)
			pd.fin[i] = (RtPtr)(size_t)x->data;
	}
	for (int i = 0; !st && i < nbufs; i++) {
		int known = 0;
		for (int j = 0; j < c->nrow; j++)
			known |= bufs[i].name && !strcmp(bufs[i].name, c->row[j].name);
		for (int j = 0; j < c->ncol; j++)
			known |= bufs[i].name && !strcmp(bufs[i].name, c->col[j].name);
		for (int j = 0; j < c->nfinal; j++)
			known |= bufs[i].name && !strcmp(bufs[i].name, c->finalize[j].name);
		if (!known)
			st = paged_fail(k, ASSOC_EINVAL, "the spec has no row, column or finalize array named '%s'",
					bufs[i].name ? bufs[i].name : "(null)");
	}
	if (!st && (lib_misaligned(k->s, lib_word_in(k, 1), bufs, nbufs, k->err, sizeof k->err) ||
		    lib_overlapping(k->s, bufs, nbufs, k->err, sizeof k->err)))
		st = ASSOC_EINVAL;
	if (!st)
		st = layout_apart(k, pg, bufs, nbufs);
	double *pv = calloc(c->nparams + 1, sizeof *pv);
	if (!st && !pv)
		st = paged_fail(k, ASSOC_ENOMEM, "out of memory");
	if (!st)
		st = lib_params_of(k, params, nparams, pv);
	pd.params = pv;
	char why[sizeof k->err];
	if (!st)
		st = paged_module(k, (int)pg->page_size);
	void *ctx = NULL;
	if (!st && rt_enter_ctx(k->pgpu->rt, &ctx, why, sizeof why))
		st = paged_fail(k, ASSOC_EDEVICE, "gpu: %s", why);
	if (!st) {
		GpuBufs *b = lib_stream_ws(&k->pws, &k->npws, ctx, stream);
		int primary = ctx == rt_primary_ctx(k->pgpu->rt);
		AssocCtxModule *m = primary ? NULL : lib_ctx_module(&k->pmods, &k->npmods, ctx);
		RtModule *none = NULL;
		unsigned gen = 0;
		if (!b || (!primary && !m)) {
			st = paged_fail(k, ASSOC_ENOMEM, "out of memory");
		} else {
			rt_on_stream(k->pgpu->rt, stream, 1);
			if (gpu_run_paged_device(k->pgpu, &pd, &(RunOpts){.deterministic = lib_tune_off()}, b, ctx,
						 m ? &m->mod : &none, m ? &m->gen : &gen, why, sizeof why))
				st = paged_fail(k, ASSOC_EDEVICE, "gpu: %s", why);
			rt_on_stream(k->pgpu->rt, NULL, 0);
		}
	}
	free(pv);
	return st;
}
