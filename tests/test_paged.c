/* test_paged.c: attention over a paged key/value cache (paged.h): a layout
 * that would read outside the pool is refused before anything runs; a
 * sequence's keys are gathered from shuffled pages in the order its block
 * table gives (checked against keys written out by hand); every device
 * matches the float64 reference on batches of odd shapes (page sizes 16
 * and 256, a sequence shorter than one page, one of no keys, grouped heads,
 * lengths off the tiles, several splits); on the emulator and the gpu the
 * whole batch runs in one launch (a launch per 65535 sequences past that,
 * the most a grid's y takes) (varlen prefill and split decoding, each
 * sequence against the reference; the fake driver counts the launch and
 * the copies); on the cpu in one call that reads the keys in the pool
 * (shuffled and shared pages; a reduce call a row, not a page; the same
 * bits on 1 thread and 2), and a variant named that takes a sequence a launch runs
 * the batch that way; the command line reads the
 * layout from .npy files and names what is wrong with it; the library's
 * assoc_run_paged gives the device's own results and refuses the same,
 * on emu in the batch's one launch over the caller's [rows][heads]
 * arrays (chunked prefill), and refuses shifted positions to kernels
 * that count i from 0. */
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compiler/cuda/cuda.h"
#include "compiler/cuda/nvrtc.h"
#include "compiler/devices/gpu.h"
#include "compiler/devices/emu.h"
#include "compiler/devices/npy.h"
#include "compiler/devices/paged.h"
#include "compiler/llvm/llvm.h"
#include "compiler/lib/assoc.h"
#include "cudatest.h"
#include "runtime/cpu.h"
#include "testutil.h"

#define ASSOC "build/asan/assoc"

Test(paged, page_sizes)
{
	char msg[256];
	for (int p = 16; p <= 256; p *= 2)
		cr_assert_eq(paged_page_size_ok(p, msg, sizeof msg), 0, "%d: %s", p, msg);
	const int bad[] = {0, 8, 48, 100, 512, -16};
	for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
		cr_assert_eq(paged_page_size_ok(bad[k], msg, sizeof msg), -1, "%d", bad[k]);
		cr_assert(strstr(msg, "power of two from 16 to 256"), "%s", msg);
	}
}

Test(paged, layouts_that_read_outside_are_refused)
{
	char msg[512];
	/* 2 sequences, pages of 16, 3 pages a row, a pool of 4 */
	int32_t table[] = {2, 0, -1, 3, 1, 7}, lens[] = {20, 33}, cu[] = {0, 1, 3};
	cr_assert_eq(paged_layout_ok(2, 16, 4, 3, table, (int32_t[]){20, 32}, cu, msg, sizeof msg), 0, "%s", msg);
	/* the third page of sequence 1 is 7, past the pool */
	cr_assert_eq(paged_layout_ok(2, 16, 4, 3, table, lens, cu, msg, sizeof msg), -1);
	cr_assert(strstr(msg, "block_table[1][2] = 7") && strstr(msg, "pages 0 to 3"), "%s", msg);
	/* -1 where a sequence reads */
	cr_assert_eq(paged_layout_ok(2, 16, 4, 3, table, (int32_t[]){40, 0}, cu, msg, sizeof msg), -1);
	cr_assert(strstr(msg, "block_table[0][2] = -1"), "%s", msg);
	/* more keys than the row's pages hold */
	cr_assert_eq(paged_layout_ok(2, 16, 8, 3, table, (int32_t[]){49, 0}, cu, msg, sizeof msg), -1);
	cr_assert(strstr(msg, "seq_lens[0] = 49") && strstr(msg, "0 to 48 keys"), "%s", msg);
	cr_assert_eq(paged_layout_ok(2, 16, 8, 3, table, (int32_t[]){-1, 0}, cu, msg, sizeof msg), -1);
	cr_assert(strstr(msg, "seq_lens[0] = -1"), "%s", msg);
	/* query offsets */
	cr_assert_eq(paged_layout_ok(2, 16, 8, 3, table, (int32_t[]){1, 1}, (int32_t[]){1, 2, 3}, msg, sizeof msg), -1);
	cr_assert(strstr(msg, "cu_seqlens_q[0] = 1"), "%s", msg);
	cr_assert_eq(paged_layout_ok(2, 16, 8, 3, table, (int32_t[]){1, 1}, (int32_t[]){0, 2, 1}, msg, sizeof msg), -1);
	cr_assert(strstr(msg, "never decrease"), "%s", msg);
	/* a page size no power of two */
	cr_assert_eq(paged_layout_ok(2, 24, 8, 3, table, (int32_t[]){1, 1}, cu, msg, sizeof msg), -1);
}

Test(paged, carriers_without_keys_are_refused)
{
	char msg[256];
	Carrier *c = load_ok("specs/layer_norm.yaml");
	cr_assert_eq(paged_carrier_ok(c, msg, sizeof msg), -1);
	cr_assert(strstr(msg, "cannot read paged keys"), "%s", msg);
	spec_carrier_free(c);
	c = load_ok("specs/attention.yaml");
	cr_assert_eq(paged_carrier_ok(c, msg, sizeof msg), 0, "%s", msg);
	spec_carrier_free(c);
}

/* A batch of 5 sequences: 37 keys, none, 5 (under a page), exactly one
 * page, and 300 keys, with 1, 1, 2, 3 and 1 queries; pages handed out in
 * reverse from the end of a pool one page larger than they need. */
static Paged *odd_batch(Carrier *c, int page, int heads, int kv)
{
	enum { B = 5 };
	int32_t lens[B] = {37, 0, 5, page, 300}, cu[B + 1] = {0, 1, 2, 4, 7, 8};
	int max_pages = (300 + page - 1) / page, pages = 1;
	for (int b = 0; b < B; b++)
		pages += (lens[b] + page - 1) / page;
	int32_t *table = calloc((size_t)B * max_pages, sizeof *table);
	int next = pages - 1;
	for (int b = 0; b < B; b++)
		for (int t = 0; t < max_pages; t++)
			table[b * max_pages + t] = t < (lens[b] + page - 1) / page ? next-- : -1;
	char msg[512];
	Paged *p = paged_new(c, heads, kv, B, page, pages, max_pages, table, lens, cu, 0, msg, sizeof msg);
	cr_assert(p, "%s", msg);
	free(table);
	cr_assert_eq(paged_draw(p, 7, NULL, 0, msg, sizeof msg), 0, "%s", msg);
	return p;
}

Test(paged, sequences_gather_their_pages_in_table_order)
{
	Carrier *c = load_ok("specs/attention.yaml");
	Paged *p = odd_batch(c, 16, 4, 2);
	int b = 4, len = p->lens[b], G = p->kv_heads;
	RunData *s = paged_sequence(p, b);
	cr_assert_eq(s->len, len);
	cr_assert_eq(s->rows, 1);
	size_t w = p->col[0].width;
	for (int g = 0; g < G; g++)
		for (int j = 0; j < len; j += 7) {
			/* written out by hand: page, slot, head, component */
			int page = p->table[b * p->max_pages + j / 16];
			size_t at = (((size_t)page * 16 + j % 16) * G + g) * w;
			for (size_t t = 0; t < w; t++)
				cr_assert_eq(run_buffer_get(&s->col[0], ((size_t)g * len + j) * w + t),
					     run_buffer_get(&p->col[0], at + t));
		}
	/* query head h of row r: the batch's [rows][heads] into [heads][rows] */
	for (int h = 0; h < p->heads; h++)
		cr_assert_eq(run_buffer_get(&s->row[0], (size_t)h * w),
			     run_buffer_get(&p->row[0], ((size_t)p->cu[b] * p->heads + h) * w));
	/* the page no sequence reads is NaN */
	int spare = 0; /* the pages are handed out from the top: page 0 is left */
	cr_assert(isnan(run_buffer_get(&p->col[0], (size_t)spare * 16 * G * w)));
	rundata_free(s);
	paged_free(p);
	spec_carrier_free(c);
}

/* Every output of p on dev within tolerance of the reference, and the
 * sequence of no keys given the finalize of the identity. */
static void run_on(const char *dev, Paged *p, int split)
{
	const Device *dv = run_device_find(dev);
	char msg[1024];
	if (!dv)
		cr_skip_test("no %s device in this build", dev);
	if (!dv->available(msg, sizeof msg))
		cr_skip_test("%s: %s", dev, msg);
	RunCheck rc;
	RunOpts o = {.split = split, .threads = 2};
	cr_assert_eq(paged_run(p, dv, &o, &rc, NULL, msg, sizeof msg), 0, "%s: %s", dev, msg);
	for (int k = 0; k < rc.nout; k++)
		cr_assert(rc.out[k].worst_ratio <= 1 && !rc.out[k].nan_mismatch,
			  "%s: %s at %.3g of tolerance, %d NaN mismatches (flat index %zu)", dev, rc.out[k].name,
			  rc.out[k].worst_ratio, rc.out[k].nan_mismatch, rc.out[k].at);
	cr_assert(rc.ok, "%s", dev);
	runcheck_free(&rc);
}

static void odd_batches_on(const char *dev)
{
	/* without a mask every key counts; with the sink's causal mask, a
	 * sequence of no keys still gives out = 0 and lse = sink, never NaN */
	const char *specs[] = {"tests/attention/full.yaml", "specs/attention_sink.yaml"};
	const int pages[] = {16, 256}, splits[] = {0, 3};
	for (int sp = 0; sp < 2; sp++) {
		Carrier *c = load_ok(specs[sp]);
		for (int k = 0; k < 2; k++) {
			Paged *p = odd_batch(c, pages[k], 4, 2);
			run_on(dev, p, splits[k]);
			for (int f = 0; sp && f < c->nfinal; f++)
				for (size_t x = 0; x < (size_t)p->heads * p->fin[f].width; x++) {
					double v = run_buffer_get(&p->fin[f], (size_t)1 * p->heads * p->fin[f].width + x);
					cr_assert(!isnan(v), "%s: %s of the sequence of no keys is NaN", dev, c->finalize[f].name);
					if (!strcmp(c->finalize[f].name, "out"))
						cr_assert_eq(v, 0, "%s: out of the sequence of no keys", dev);
				}
			paged_free(p);
		}
		spec_carrier_free(c);
	}
}

Test(paged, odd_batches_on_interp) { odd_batches_on("interp"); }
Test(paged, odd_batches_on_cpu) { odd_batches_on("cpu"); }
Test(paged, odd_batches_on_emu, .timeout = 600) { odd_batches_on("emu"); }

/* FP8 attention (e4m3 q, k and v, converted to f16 on their way into
 * shared memory) reads its pages as the f16 kernels do: a varlen prefill
 * of two sequences through a shuffled table, grouped heads, and decoding
 * split three ways. */
Test(paged, fp8_inputs_on_emu, .timeout = 600)
{
	Carrier *c = load_ok("tests/attention/fp8_descale.yaml");
	int32_t lens[] = {300, 77}, cu[] = {0, 40, 100}, table[] = {3, 0, 5, 1, 4, 7, 2, -1, -1, -1};
	char msg[512];
	Paged *p = paged_new(c, 4, 2, 2, 64, 8, 5, table, lens, cu, 0, msg, sizeof msg);
	cr_assert(p, "%s", msg);
	cr_assert_eq(paged_draw(p, 5, NULL, 0, msg, sizeof msg), 0, "%s", msg);
	run_on("emu", p, 0);
	paged_free(p);
	p = paged_drawn(c, 8, 2, 3, 1, 500, 32, 11, NULL, 0, msg, sizeof msg);
	cr_assert(p, "%s", msg);
	run_on("emu", p, 3);
	paged_free(p);
	spec_carrier_free(c);
}

/* Decoding with grouped heads at head dim 128, keys off every tile and
 * split several ways. */
static void decoding_on(const char *dev)
{
	Carrier *c = load_defs("tests/attention/full.yaml", (Define[]){{"d", "128"}, {"dv", "128"}}, 2);
	char msg[512];
	Paged *p = paged_drawn(c, 8, 2, 3, 1, 1000, 32, 11, NULL, 0, msg, sizeof msg);
	cr_assert(p, "%s", msg);
	cr_assert_eq(p->lens[0], 1000);
	run_on(dev, p, 4);
	paged_free(p);
	spec_carrier_free(c);
}

Test(paged, decoding_on_cpu) { decoding_on("cpu"); }
Test(paged, decoding_on_emu, .timeout = 600) { decoding_on("emu"); }

/* Varlen prefill: 40 and 60 queries over 300 and 77 keys in pages of 64
 * (page 6 unread, NaN), the prefill variants' tiles of query rows and keys
 * crossing pages. */
static void prefill_on(const char *dev)
{
	Carrier *c = load_ok("tests/attention/full.yaml");
	int32_t lens[] = {300, 77}, cu[] = {0, 40, 100}, table[] = {3, 0, 5, 1, 4, 7, 2, -1, -1, -1};
	char msg[512];
	Paged *p = paged_new(c, 4, 2, 2, 64, 8, 5, table, lens, cu, 0, msg, sizeof msg);
	cr_assert(p, "%s", msg);
	cr_assert_eq(paged_draw(p, 5, NULL, 0, msg, sizeof msg), 0, "%s", msg);
	run_on(dev, p, 0);
	paged_free(p);
	spec_carrier_free(c);
}

Test(paged, prefill_on_cpu) { prefill_on("cpu"); }
Test(paged, prefill_on_emu, .timeout = 600) { prefill_on("emu"); }

/* ---- the CPU reads the pages in place ---- */

/* 5 sequences in pages of `page`: 1 key, none, 37, two pages exactly and
 * three pages and one key, with 1, 2, 4, 1 and 3 queries (chunked
 * prefill beside decoding).  Their pages are handed out from the top of
 * the pool down, page 0 unread, and shared: sequence 3's second page is
 * sequence 0's, sequence 4's first is sequence 2's (a prefix in common). */
static Paged *shared_batch(Carrier *c, int page, int heads, int kv, uint64_t seed)
{
	enum { B = 5, MAXP = 4 };
	int32_t lens[B] = {1, 0, 37, 2 * page, 3 * page + 1}, cu[B + 1] = {0, 1, 3, 7, 8, 11}, table[B * MAXP];
	int pages = 1;
	for (int b = 0; b < B; b++)
		pages += (lens[b] + page - 1) / page;
	pages -= 2; /* the two shared */
	int next = pages - 1;
	for (int b = 0; b < B; b++)
		for (int t = 0; t < MAXP; t++)
			table[b * MAXP + t] = t >= (lens[b] + page - 1) / page ? -1
					      : b == 3 && t == 1	      ? table[0]
					      : b == 4 && t == 0	      ? table[2 * MAXP]
									      : next--;
	cr_assert_eq(next, 0);
	char msg[512];
	Paged *p = paged_new(c, heads, kv, B, page, pages, MAXP, table, lens, cu, 0, msg, sizeof msg);
	cr_assert(p, "%s", msg);
	cr_assert_eq(paged_draw(p, seed, NULL, 0, msg, sizeof msg), 0, "%s", msg);
	return p;
}

/* p on cpu as run does (its check against the float64 reference passed);
 * the reduce calls rt_cpu_run_paged made, which the gather into runs of
 * keys never makes. */
static int64_t cpu_in_place(Paged *p, int threads, int split)
{
	const Device *dv = run_device_find("cpu");
	char msg[1024];
	if (!dv)
		cr_skip_test("no cpu device in this build");
	if (!dv->available(msg, sizeof msg))
		cr_skip_test("cpu: %s", msg);
	cr_assert(dv->paged && dv->run_batch);
	int64_t before = rt_cpu_paged_calls();
	RunCheck rc;
	cr_assert_eq(paged_run(p, dv, &(RunOpts){.threads = threads, .split = split}, &rc, NULL, msg, sizeof msg), 0,
		     "%s", msg);
	for (int k = 0; k < rc.nout; k++)
		cr_assert(rc.out[k].worst_ratio <= 1 && !rc.out[k].nan_mismatch,
			  "cpu, %d threads, split %d: %s at %.3g of tolerance, %d NaN mismatches (flat index %zu)", threads,
			  split, rc.out[k].name, rc.out[k].worst_ratio, rc.out[k].nan_mismatch, rc.out[k].at);
	cr_assert(rc.ok);
	runcheck_free(&rc);
	return rt_cpu_paged_calls() - before;
}

/* Every output of p within tol of q's (relative to 1 + |q's|), NaN
 * where q's is. */
static void near_outputs(const Paged *p, const Paged *q, double tol, const char *what)
{
	for (int k = 0; k < p->c->nfinal; k++)
		for (size_t x = 0; x < p->fin[k].n * p->fin[k].width; x++) {
			double a = run_buffer_get(&p->fin[k], x), b = run_buffer_get(&q->fin[k], x);
			if (isnan(b) || isinf(b))
				cr_assert(a == b || (isnan(a) && isnan(b)), "%s: %s[%zu] %g, the interpreter %g", what,
					  p->c->finalize[k].name, x, a, b);
			else
				cr_assert(fabs(a - b) <= tol * (1 + fabs(b)), "%s: %s[%zu] %g, the interpreter %g", what,
					  p->c->finalize[k].name, x, a, b);
		}
}

/* p on cpu, one thread, split 1 and 3: within tolerance of the reference
 * (cpu_in_place) and of q, the same batch already run on the
 * interpreter; then the same bits on 2 threads. */
static void in_place_matches(Paged *p, Paged *q, const char *what)
{
	Carrier *c = p->c;
	for (int split = 1; split <= 3; split += 2) {
		cr_assert_gt(cpu_in_place(p, 1, split), 0, "%s: no reduce call read the pool", what);
		near_outputs(p, q, 2e-3, what);
		void *one[2];
		for (int k = 0; k < c->nfinal; k++) {
			size_t bytes = p->fin[k].n * p->fin[k].width * run_kind_size(p->fin[k].kind);
			one[k] = malloc(bytes);
			memcpy(one[k], p->fin[k].p, bytes);
			memset(p->fin[k].p, 0, bytes);
		}
		cpu_in_place(p, 2, split);
		for (int k = 0; k < c->nfinal; k++) {
			size_t bytes = p->fin[k].n * p->fin[k].width * run_kind_size(p->fin[k].kind);
			cr_assert(!memcmp(one[k], p->fin[k].p, bytes), "%s, split %d: %s differs between 1 and 2 threads", what,
				  split, c->finalize[k].name);
			free(one[k]);
		}
	}
}

/* The shared batch on cpu, its keys read where the table puts them:
 * within tolerance of the reference and of the interpreter, under the
 * causal mask (bf16, grouped heads 4 on 2), without a mask, and for keys
 * of one component, which the CPU folds in vector lanes (a reduce call a
 * run of pages, the keys of two heads gathered lane by lane); and the
 * same bits on 1 thread as on 2, one chunk a row or three. */
Test(paged, cpu_reads_shuffled_and_shared_pages_in_place, .timeout = 600)
{
	const char *specs[] = {"tests/attention/causal_bf16.yaml", "tests/attention/full.yaml",
			       "tests/attention/scalar_keys.yaml"};
	for (int sp = 0; sp < 3; sp++) {
		Carrier *c = load_ok(specs[sp]);
		for (int page = 16; page <= 256; page *= 16) {
			Paged *p = shared_batch(c, page, 4, 2, 5), *q = shared_batch(c, page, 4, 2, 5);
			char what[128];
			snprintf(what, sizeof what, "%s, pages of %d", specs[sp], page);
			run_on("interp", q, 0);
			in_place_matches(p, q, what);
			paged_free(p);
			paged_free(q);
		}
		spec_carrier_free(c);
	}
}

/* Several key/value heads side by side in each slot of a page, a head's
 * keys a slot apart: 32 query heads on 8 (each key/value head's 4 query
 * heads as rows side by side), 8 on 8 (a row a head), 64 on 8 at pages
 * of 32, and 4 on 2 under the causal mask; each on the shared batch
 * (chunked prefill beside decoding, shuffled and shared pages) and 32 on
 * 8 also decoding 3 sequences of up to 700 keys at d = 128.  Against the
 * reference and the interpreter, the same bits on 1 and 2 threads. */
Test(paged, cpu_reads_several_heads_a_slot_in_place, .timeout = 900)
{
	static const struct {
		const char *spec;
		int heads, kv, page;
	} runs[] = {{"tests/attention/full.yaml", 32, 8, 16},
		    {"tests/attention/full.yaml", 8, 8, 16},
		    {"tests/attention/full.yaml", 64, 8, 32},
		    {"tests/attention/causal_bf16.yaml", 4, 2, 16}};
	for (size_t r = 0; r < sizeof runs / sizeof *runs; r++) {
		Carrier *c = load_ok(runs[r].spec);
		Paged *p = shared_batch(c, runs[r].page, runs[r].heads, runs[r].kv, 9);
		Paged *q = shared_batch(c, runs[r].page, runs[r].heads, runs[r].kv, 9);
		char what[160];
		snprintf(what, sizeof what, "%s, %d heads on %d, pages of %d", runs[r].spec, runs[r].heads, runs[r].kv,
			 runs[r].page);
		run_on("interp", q, 0);
		in_place_matches(p, q, what);
		paged_free(p);
		paged_free(q);
		spec_carrier_free(c);
	}
	Carrier *c = load_defs("tests/attention/full.yaml", (Define[]){{"d", "128"}, {"dv", "128"}}, 2);
	char msg[512];
	Paged *p = paged_drawn(c, 32, 8, 3, 1, 700, 16, 13, NULL, 0, msg, sizeof msg);
	Paged *q = paged_drawn(c, 32, 8, 3, 1, 700, 16, 13, NULL, 0, msg, sizeof msg);
	cr_assert(p && q, "%s", msg);
	run_on("interp", q, 0);
	in_place_matches(p, q, "32 heads on 8 at d = 128, decoding");
	paged_free(p);
	paged_free(q);
	spec_carrier_free(c);
}

/* Decoding (one query a sequence, no mask): one reduce call a row, or a
 * group of rows (keys as lanes: the 2 query heads of a key/value head),
 * which looks its pages up itself, where a call a page would make
 * hundreds; and no call at all for a sequence of no keys. */
Test(paged, cpu_decoding_looks_pages_up_inside_one_call, .timeout = 300)
{
	Carrier *c = load_ok("tests/attention/full.yaml");
	char msg[512];
	LlvmKernel *k;
	cr_assert_eq(llvm_compile(c, &(LlvmOpts){.fit_rows = 2, .key_stride = 2}, &k, msg, sizeof msg), 0, "%s", msg);
	int g = rt_cpu_group(&k->k, 2);
	cr_expect_eq(g, k->keys ? 2 : 1, "keys as lanes take the 2 rows of a view together");
	llvm_kernel_free(k);
	for (int page = 16; page <= 256; page *= 16) {
		Paged *p = paged_drawn(c, 4, 2, 4, 1, 1000, page, 21, NULL, 0, msg, sizeof msg);
		cr_assert(p, "%s", msg);
		int64_t rows = 0, pages = 0;
		for (int b = 0; b < p->batch; b++) { /* 4 query heads on 2: 2 views of 2 rows */
			rows += p->lens[b] ? 4 : 0;
			pages += 4 * ((p->lens[b] + page - 1) / page);
		}
		int64_t calls = cpu_in_place(p, 2, 1);
		cr_assert_eq(calls, rows / g, "pages of %d: %lld reduce calls for %lld rows (a call a page: %lld)", page,
			     (long long)calls, (long long)rows, (long long)pages);
		paged_free(p);
	}
	spec_carrier_free(c);
}

/* Causal chunked prefill on cpu: 40 queries at the end of 600 keys in
 * shuffled pages of 128 (the mask counting positions from the sequence's
 * first key, so the first query sees 561 keys), and 5 queries on 3 keys
 * (the first two before position 0 see none: out 0, lse the sink), one
 * key/value head; within tolerance of the interpreter. */
Test(paged, cpu_causal_prefill_counts_positions_from_the_start, .timeout = 300)
{
	Carrier *c = load_ok("specs/attention_sink.yaml");
	int32_t lens[] = {600, 3}, cu[] = {0, 40, 45}, table[] = {4, 1, 6, 0, 2, 3, 7, 5, 8, -1};
	char msg[512];
	Paged *p = paged_new(c, 2, 1, 2, 128, 9, 5, table, lens, cu, 0, msg, sizeof msg);
	cr_assert(p, "%s", msg);
	cr_assert_eq(paged_draw(p, 17, NULL, 0, msg, sizeof msg), 0, "%s", msg);
	Paged *q = paged_new(c, 2, 1, 2, 128, 9, 5, table, lens, cu, 0, msg, sizeof msg);
	cr_assert_eq(paged_draw(q, 17, NULL, 0, msg, sizeof msg), 0, "%s", msg);
	run_on("interp", q, 0);
	cr_assert_gt(cpu_in_place(p, 2, 0), 0);
	near_outputs(p, q, 2e-3, "causal prefill");
	paged_free(p);
	paged_free(q);
	spec_carrier_free(c);
}

/* ---- a batch in one launch ---- */

/* 5 sequences over a pool of pages of `page` keys, handed out in a
 * shuffled order (a stride coprime to the pool's size) with one page
 * unread: keys 0, 10 (under a page), 3 pages and 5 (off the tiles), 200
 * and 37; with rows < 0, 3, 1, 17, 0 and 5 queries (varlen), else rows
 * each. */
static Paged *mixed_batch(Carrier *c, int page, int heads, int kv, int rows)
{
	enum { B = 5 };
	int32_t lens[B] = {0, 10, 3 * page + 5, 200, 37}, cu[B + 1] = {0, 3, 4, 21, 21, 26};
	int max_pages = 0, pages = 1;
	for (int b = 0; b < B; b++) {
		int np = (lens[b] + page - 1) / page;
		max_pages = np > max_pages ? np : max_pages;
		pages += np;
	}
	int stride = 7;
	while (pages % stride == 0)
		stride += 2;
	int32_t *table = calloc((size_t)B * max_pages, sizeof *table);
	int used = 0;
	for (int b = 0; b < B; b++)
		for (int t = 0; t < max_pages; t++)
			table[b * max_pages + t] = t < (lens[b] + page - 1) / page ? (int32_t)((used++ * stride) % pages) : -1;
	char msg[512];
	Paged *p = paged_new(c, heads, kv, B, page, pages, max_pages, table, lens, rows < 0 ? cu : NULL, rows, msg,
			     sizeof msg);
	cr_assert(p, "%s", msg);
	free(table);
	cr_assert_eq(paged_draw(p, 3, NULL, 0, msg, sizeof msg), 0, "%s", msg);
	return p;
}

/* p on the emulator as one batch: one launch, and every sequence with
 * queries within tolerance of the float64 reference (the sequence of no
 * keys given the finalize of the identity, never NaN). */
static void one_launch_on_emu(Paged *p, int split, const char *config)
{
	const Device *dv = run_device_find("emu");
	char msg[1024];
	if (!dv)
		cr_skip_test("no emu device in this build");
	if (!dv->available(msg, sizeof msg))
		cr_skip_test("emu: %s", msg);
	RunBatch rb;
	paged_batch(p, &rb);
	EmuStats st;
	memset(&st, 0, sizeof st);
	RunOpts o = {.split = split, .config = config};
	cr_assert_eq(emu_run_batch(&rb, &o, &st, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(st.launches, 1, "%d launches (%s)", st.launches, st.config);
	int seen = 0;
	for (int b = 0; b < rb.batch; b++) {
		if (!rb.seq[b]->rows)
			continue;
		RunCheck rc;
		runcheck_run(rb.seq[b], &rc);
		for (int k = 0; k < rc.nout; k++)
			cr_assert(rc.out[k].worst_ratio <= 1 && !rc.out[k].nan_mismatch,
				  "sequence %d (%d queries, %d keys, %s, split %d): %s at %.3g of tolerance, %d NaN mismatches", b,
				  rb.seq[b]->rows, rb.seq[b]->len, st.config, split, rc.out[k].name, rc.out[k].worst_ratio,
				  rc.out[k].nan_mismatch);
		runcheck_free(&rc);
		seen++;
	}
	cr_assert_gt(seen, 0);
	paged_batch_free(&rb);
}

Test(paged, emu_runs_varlen_prefill_in_one_launch, .timeout = 600)
{
	const char *specs[] = {"tests/attention/full.yaml", "specs/attention_sink.yaml"};
	for (int sp = 0; sp < 2; sp++) {
		Carrier *c = load_ok(specs[sp]);
		for (int page = 16; page <= 256; page *= 16) {
			Paged *p = mixed_batch(c, page, 4, 2, -1);
			one_launch_on_emu(p, 0, NULL);
			paged_free(p);
		}
		spec_carrier_free(c);
	}
}

/* Decoding: one query a sequence, each sequence's keys in splits (the
 * sequence of no keys in splits of none), grouped heads 8 on 2. */
Test(paged, emu_runs_split_decoding_in_one_launch, .timeout = 600)
{
	Carrier *c = load_ok("specs/attention_sink.yaml");
	for (int page = 16; page <= 256; page *= 16)
		for (int split = 1; split <= 3; split += 2) {
			Paged *p = mixed_batch(c, page, 8, 2, 1);
			one_launch_on_emu(p, split, NULL);
			paged_free(p);
		}
	spec_carrier_free(c);
}

/* A variant of many rows a warp runs a sequence a launch: the batch goes
 * to one that takes it, unless --config names it. */
Test(paged, emu_batch_leaves_a_named_variant_alone, .timeout = 600)
{
	Carrier *c = load_ok("tests/attention/full.yaml");
	Paged *p = mixed_batch(c, 16, 4, 2, -1);
	RunBatch rb;
	paged_batch(p, &rb);
	char msg[1024];
	const Device *dv = run_device_find("emu");
	if (!dv || !dv->available(msg, sizeof msg))
		cr_skip_test("no emu device");
	RunOpts o = {.config = "attention:nt=128,mt=2,bn=64,pv=1,st=2"};
	cr_assert_eq(emu_run_batch(&rb, &o, NULL, msg, sizeof msg), 1, "%s", msg);
	paged_batch_free(&rb);
	/* and the run goes a sequence at a time, still right */
	RunCheck rc;
	cr_assert_eq(paged_run(p, dv, &o, &rc, NULL, msg, sizeof msg), 0, "%s", msg);
	cr_assert(rc.ok);
	runcheck_free(&rc);
	paged_free(p);
	spec_carrier_free(c);
}

/* ---- batches past a grid's 65535 rows ---- */

/* batch sequences of 1 to 3 keys over a pool of 61 pages of 16, of head
 * dim 16: one query each, or with varlen 2 every fifth (whose first sees
 * no key when it has one) and none every seventh. */
static Paged *wide_batch(Carrier *c, int batch, int varlen)
{
	enum { PAGES = 61 };
	int32_t *table = malloc((size_t)batch * sizeof *table), *lens = malloc((size_t)batch * sizeof *lens);
	int32_t *cu = varlen ? malloc(((size_t)batch + 1) * sizeof *cu) : NULL;
	cr_assert(table && lens && (cu || !varlen));
	for (int b = 0; b < batch; b++) {
		table[b] = (int32_t)((b * 7L) % PAGES);
		lens[b] = 1 + b % 3;
	}
	for (int b = 0; varlen && b <= batch; b++)
		cu[b] = !b ? 0 : cu[b - 1] + ((b - 1) % 7 == 3 ? 0 : (b - 1) % 5 == 2 ? 2 : 1);
	char msg[512];
	Paged *p = paged_new(c, 1, 1, batch, 16, PAGES, 1, table, lens, cu, 1, msg, sizeof msg);
	cr_assert(p, "%s", msg);
	free(table), free(lens), free(cu);
	cr_assert_eq(paged_draw(p, 5, NULL, 0, msg, sizeof msg), 0, "%s", msg);
	return p;
}

/* More sequences than a grid's y takes (65535): the emulator, which holds
 * a launch to the GPU's limits, runs them in two launches, and every
 * sequence, those of the second launch too, gives the reference's
 * results, with cu_seqlens_q (each launch's queries then start at their
 * own offset; without it, the gpu test below through the fake driver).
 * Just past the limit: the first launch's 65535 sequences are most of
 * the emulator's time; of them, the last 64 and every 61st are checked. */
Test(paged, emu_runs_a_batch_past_65535_sequences, .timeout = 900)
{
	const Device *dv = run_device_find("emu");
	char msg[1024];
	if (!dv || !dv->available(msg, sizeof msg))
		cr_skip_test("no emu device");
	Carrier *c = load_defs("specs/attention.yaml", (Define[]){{"d", "16"}, {"dv", "16"}}, 2);
	{
		const int varlen = 1;
		Paged *p = wide_batch(c, PAGED_LAUNCH_SEQS + 64, varlen);
		RunBatch rb;
		paged_batch(p, &rb);
		cr_assert_eq(run_batch_uniform(&rb), !varlen);
		EmuStats st;
		memset(&st, 0, sizeof st);
		/* a warp a block: a quarter of the fibers the rule's kernel takes */
		RunOpts o = {.split = 1, .config = "attention:nt=32,mt=1,bn=16,pv=1,st=1"};
		cr_assert_eq(emu_run_batch(&rb, &o, &st, msg, sizeof msg), 0, "%s", msg);
		cr_assert_eq(st.launches, 2, "%d launches (%s)", st.launches, st.config);
		/* every sequence of the second launch and the first's last 64; of
		 * the rest, every 61st (a check of each took a third of the test) */
		int seen = 0, bad = -1;
		for (int b = 0; b < rb.batch && bad < 0; b += b < PAGED_LAUNCH_SEQS - 64 ? 61 : 1) {
			if (!rb.seq[b]->rows)
				continue;
			RunCheck rc;
			runcheck_run(rb.seq[b], &rc);
			if (!rc.ok)
				bad = b;
			runcheck_free(&rc);
			seen += b >= PAGED_LAUNCH_SEQS;
		}
		cr_assert_eq(bad, -1, "%s: sequence %d (%d queries, %d keys) differs from the reference",
			     varlen ? "varlen" : "one query each", bad, bad < 0 ? 0 : rb.seq[bad]->rows,
			     bad < 0 ? 0 : rb.seq[bad]->len);
		cr_assert_gt(seen, 40, "sequences of the second launch checked: %d", seen);
		paged_batch_free(&rb);
		paged_free(p);
	}
	spec_carrier_free(c);
}

/* ---- queries at their sequence's last positions ---- */

/* The outputs of q and p (of one layout) within tol of each other, as
 * relative error over 1 + |value|. */
static void same_outputs(const Paged *p, const Paged *q, double tol, const char *what)
{
	for (int k = 0; k < p->c->nfinal; k++)
		for (size_t x = 0; x < p->fin[k].n * p->fin[k].width; x++) {
			double a = run_buffer_get(&p->fin[k], x), b = run_buffer_get(&q->fin[k], x);
			cr_assert(fabs(a - b) <= tol * (1 + fabs(b)), "%s: %s[%zu] %g, without the mask %g", what,
				  p->c->finalize[k].name, x, a, b);
		}
}

/* Decoding under the causal mask sees every key of its sequence: the
 * causal carrier gives what the same carrier without the mask gives, on
 * every device and at every split, and matches the reference. */
static void causal_decoding_on(const char *dev)
{
	Carrier *c = load_ok("specs/attention.yaml"), *f = load_ok("tests/attention/full.yaml");
	char msg[512];
	for (int page = 16; page <= 256; page *= 16) {
		Paged *p = paged_drawn(c, 8, 2, 4, 1, 700, page, 13, NULL, 0, msg, sizeof msg);
		cr_assert(p, "%s", msg);
		Paged *q = paged_drawn(f, 8, 2, 4, 1, 700, page, 13, NULL, 0, msg, sizeof msg);
		cr_assert(q, "%s", msg);
		run_on("interp", q, 0);
		for (int split = 1; split <= 4; split++) {
			run_on(dev, p, split);
			char what[64];
			snprintf(what, sizeof what, "%s, pages of %d, split %d", dev, page, split);
			same_outputs(p, q, !strcmp(dev, "interp") ? 0 : 2e-3, what);
		}
		paged_free(p);
		paged_free(q);
	}
	spec_carrier_free(c);
	spec_carrier_free(f);
}

Test(paged, causal_decoding_sees_every_key_on_interp) { causal_decoding_on("interp"); }
Test(paged, causal_decoding_sees_every_key_on_cpu) { causal_decoding_on("cpu"); }
Test(paged, causal_decoding_sees_every_key_on_emu, .timeout = 600) { causal_decoding_on("emu"); }

/* Chunked prefill: q_len < seq_len in most sequences of a varlen batch
 * (pages of 16 and 256, heads 4 on 2, lengths off the tiles), under the
 * causal mask (bf16), the sliding window and a sigmoid weighted sum's
 * window (the template's other score path), against the reference. */
static void chunked_prefill_on(const char *dev)
{
	const char *specs[] = {"tests/attention/causal_bf16.yaml", "tests/attention/window.yaml",
			       "tests/attention/sigmoid_bf16.yaml"};
	for (int sp = 0; sp < 3; sp++) {
		Carrier *c = load_ok(specs[sp]);
		for (int page = 16; page <= 256; page *= 16) {
			Paged *p = mixed_batch(c, page, 4, 2, -1);
			if (!strcmp(dev, "emu"))
				one_launch_on_emu(p, 0, NULL);
			run_on(dev, p, page == 16 ? 0 : 3);
			paged_free(p);
		}
		spec_carrier_free(c);
	}
}

Test(paged, chunked_prefill_on_interp) { chunked_prefill_on("interp"); }
Test(paged, chunked_prefill_on_cpu) { chunked_prefill_on("cpu"); }
Test(paged, chunked_prefill_on_emu, .timeout = 600) { chunked_prefill_on("emu"); }

/* What a position means, apart from every device and the reference: a
 * sequence's q queries on len keys give what the last q rows of an
 * unpaged run of len queries over the same keys give (a prefill of the
 * whole sequence, the causal mask from its first key). */
Test(paged, a_chunk_is_the_tail_of_a_whole_prefill)
{
	Carrier *c = load_ok("specs/attention.yaml");
	Paged *p = mixed_batch(c, 16, 4, 2, -1);
	run_on("interp", p, 0);
	const Device *dv = run_device_find("interp");
	char msg[512];
	for (int b = 0; b < p->batch; b++) {
		int q = p->cu[b + 1] - p->cu[b], len = p->lens[b];
		if (!q || q > len)
			continue;
		RunData *s = paged_sequence(p, b);
		cr_assert_eq(s->qpos, len - q);
		RunData *w = rundata_new_heads(c, len, len, p->heads, p->kv_heads);
		memcpy(w->params, s->params, c->nparams * sizeof *w->params);
		for (int k = 0; k < c->ncol; k++)
			memcpy(w->col[k].p, s->col[k].p, s->col[k].n * s->col[k].width * run_kind_size(s->col[k].kind));
		for (int k = 0; k < c->nrow; k++) /* each head's last q rows the sequence's queries */
			for (int h = 0; h < p->heads; h++)
				for (int r = 0; r < q; r++)
					for (int t = 0; t < s->row[k].width; t++)
						run_buffer_set(&w->row[k], ((size_t)h * len + len - q + r) * s->row[k].width + t,
							       run_buffer_get(&s->row[k], ((size_t)h * q + r) * s->row[k].width + t));
		cr_assert_eq(dv->run(w, &(RunOpts){0}, msg, sizeof msg), 0, "%s", msg);
		for (int k = 0; k < c->nfinal; k++)
			for (int h = 0; h < p->heads; h++)
				for (int r = 0; r < q; r++)
					for (int t = 0; t < p->fin[k].width; t++) {
						double want = run_buffer_get(&w->fin[k], ((size_t)h * len + len - q + r) * p->fin[k].width + t);
						double got = run_buffer_get(&p->fin[k], (((size_t)p->cu[b] + r) * p->heads + h) * p->fin[k].width + t);
						cr_assert(got == want || (isnan(got) && isnan(want)),
							  "sequence %d, head %d, query %d: %s %g, the whole prefill's row %d %g", b, h, r,
							  c->finalize[k].name, got, len - q + r, want);
					}
		rundata_free(w);
		rundata_free(s);
	}
	paged_free(p);
	spec_carrier_free(c);
}

/* More queries than keys: the first ones lie before position 0 and the
 * causal mask keeps no key for them (the finalize of the identity: out 0,
 * lse the sink); the last query sees every key. */
Test(paged, queries_past_the_keys_see_none)
{
	Carrier *c = load_ok("specs/attention_sink.yaml");
	int32_t table[] = {0}, lens[] = {3}, cu[] = {0, 5};
	char msg[512];
	Paged *p = paged_new(c, 1, 1, 1, 16, 1, 1, table, lens, cu, 0, msg, sizeof msg);
	cr_assert(p, "%s", msg);
	cr_assert_eq(paged_draw(p, 9, NULL, 0, msg, sizeof msg), 0, "%s", msg);
	RunData *s = paged_sequence(p, 0);
	cr_assert_eq(s->qpos, -2);
	rundata_free(s);
	const char *devs[] = {"interp", "cpu"};
	for (int d = 0; d < 2; d++) {
		run_on(devs[d], p, 0);
		int out = strcmp(c->finalize[0].name, "out") ? 1 : 0;
		for (int r = 0; r < 2; r++)
			for (int t = 0; t < p->fin[out].width; t++)
				cr_assert_eq(run_buffer_get(&p->fin[out], (size_t)r * p->fin[out].width + t), 0, "%s: query %d",
					     devs[d], r);
		cr_assert_neq(run_buffer_get(&p->fin[out], (size_t)4 * p->fin[out].width), 0, "%s", devs[d]);
	}
	paged_free(p);
	spec_carrier_free(c);
}

/* A carrier whose mask reads i, on the row templates (which count i from
 * 0 in every run), is refused for a paged sequence with queries short of
 * its keys, naming the positions; the attention template runs it. */
Test(paged, row_templates_refuse_shifted_positions, .timeout = 600)
{
	const Device *dv = run_device_find("emu");
	char msg[1024];
	if (!dv || !dv->available(msg, sizeof msg))
		cr_skip_test("no emu device");
	Carrier *c = load_ok("specs/attention.yaml");
	int32_t table[] = {0, 1}, lens[] = {20}, cu[] = {0, 2};
	Paged *p = paged_new(c, 1, 1, 1, 16, 2, 2, table, lens, cu, 0, msg, sizeof msg);
	cr_assert(p, "%s", msg);
	cr_assert_eq(paged_draw(p, 1, NULL, 0, msg, sizeof msg), 0, "%s", msg);
	RunOpts o = {.config = "rowreduce"};
	cr_assert_eq(paged_run(p, dv, &o, NULL, NULL, msg, sizeof msg), -1);
	cr_assert(strstr(msg, "reads i") && strstr(msg, "(18 to 19)"), "%s", msg);
	run_on("emu", p, 0);
	paged_free(p);
	spec_carrier_free(c);
}

/* The library on emu, a carrier of the row templates (no batch kernel):
 * its sequences run one at a time on kernels that count i from 0, so a
 * sequence whose queries are not its first positions is refused, naming
 * them, where its mask reads i; one whose queries start at 0 runs. */
Test(paged, library_refuses_shifted_positions_on_the_row_templates, .timeout = 600)
{
	const Device *dv = run_device_find("emu");
	char msg[1024], dir[] = "/tmp/assoc-causal-sum-XXXXXX", path[64];
	if (!dv || !dv->available(msg, sizeof msg))
		cr_skip_test("no emu device");
	snprintf(path, sizeof path, "%s/causal_sum.yaml", test_tmpdir(dir));
	FILE *f = fopen(path, "w");
	cr_assert(f);
	fputs("carrier: causal_sum\nrow: {q: f32}\ncolumn: {x: f32}\nmask: j <= i\nstate: {s: f32}\n"
	      "identity: {s: 0}\nlift: {s: q * x}\nmerge: {s: a.s + b.s}\nfinalize: {out: s}\n"
	      "reference: {out: sum(q * x)}\nlaws: [commutative]\n",
	      f);
	fclose(f);
	AssocSpec *s;
	cr_assert_eq(assoc_spec_load(&s, path, NULL, 0), ASSOC_OK, "%s", assoc_spec_error(s));
	AssocKernel *k;
	cr_assert_eq(assoc_compile(s, "emu", 0, &k), ASSOC_OK, "%s", assoc_kernel_error(k));
	int32_t table[] = {0, 1}, lens[] = {20}, cu[] = {0, 2};
	float q[20] = {1, 1}, x[32], out[20];
	for (int j = 0; j < 32; j++)
		x[j] = 1;
	AssocBuffer b[] = {{"q", q, 2 * 4}, {"x", x, sizeof x}, {"out", out, 2 * 4}};
	AssocPaged pg = {.batch = 1, .page_size = 16, .pages = 2, .max_pages = 2, .block_table = table,
			 .seq_lens = lens, .cu_seqlens_q = cu};
	cr_assert_eq(assoc_run_paged(k, 1, 1, &pg, b, 3, NULL, 0), ASSOC_EDEVICE);
	cr_assert(strstr(assoc_kernel_error(k), "reads i") && strstr(assoc_kernel_error(k), "(18 to 19)"), "%s",
		  assoc_kernel_error(k));
	/* 20 queries over 20 keys: positions 0 to 19, as the kernels count them */
	cu[1] = 20;
	b[0].bytes = b[2].bytes = 20 * 4;
	for (int r = 0; r < 20; r++)
		q[r] = 1;
	cr_assert_eq(assoc_run_paged(k, 1, 1, &pg, b, 3, NULL, 0), ASSOC_OK, "%s", assoc_kernel_error(k));
	for (int r = 0; r < 20; r++)
		cr_assert_eq(out[r], r + 1, "out[%d] = %g: keys 0 to %d", r, out[r], r);
	assoc_kernel_free(k);
	assoc_spec_free(s);
}

/* On the interpreter a batch runs a sequence at a time: a later
 * sequence whose keys break the spec's assume refuses the whole batch,
 * and the outputs of the sequences before it are not written either.
 * An output over the pool is refused before anything runs. */
Test(paged, a_refused_sequence_leaves_every_output_alone)
{
	static const char text[] = "carrier: pos_sum\nrow: {q: f32}\ncolumn: {x: f32}\nassume: x >= 0\n"
				   "state: {s: f32}\nidentity: {s: 0}\nlift: {s: q * x}\nmerge: {s: a.s + b.s}\n"
				   "finalize: {out: s}\nreference: {out: sum(q * x)}\nlaws: [commutative]\n";
	AssocSpec *s;
	cr_assert_eq(assoc_spec_load_text(&s, text, strlen(text), NULL, 0), ASSOC_OK, "%s", assoc_spec_error(s));
	AssocKernel *k;
	cr_assert_eq(assoc_compile(s, "interp", 1, &k), ASSOC_OK, "%s", assoc_kernel_error(k));
	int32_t table[] = {0, 1}, lens[] = {3, 3};
	float q[2] = {1, 1}, x[32] = {1, 2, 3}, out[2] = {-7, -7};
	x[16] = 4, x[17] = -1, x[18] = 5; /* sequence 1's keys, on page 1 */
	AssocBuffer b[] = {{"q", q, sizeof q}, {"x", x, sizeof x}, {"out", out, sizeof out}};
	AssocPaged pg = {.batch = 2, .page_size = 16, .pages = 2, .max_pages = 1, .block_table = table,
			 .seq_lens = lens, .rows = 1};
	cr_assert_eq(assoc_run_paged(k, 1, 1, &pg, b, 3, NULL, 0), ASSOC_EINVAL);
	cr_assert(strstr(assoc_kernel_error(k), "sequence 1") && strstr(assoc_kernel_error(k), "breaks 'assume'"), "%s",
		  assoc_kernel_error(k));
	cr_assert(out[0] == -7 && out[1] == -7, "outputs written by a refused batch: %g %g", out[0], out[1]);
	x[17] = 1;
	AssocBuffer over[] = {{"q", q, sizeof q}, {"x", x, sizeof x}, {"out", &x[30], sizeof out}};
	cr_assert_eq(assoc_run_paged(k, 1, 1, &pg, over, 3, NULL, 0), ASSOC_EINVAL);
	cr_assert(strstr(assoc_kernel_error(k), "output 'out' overlaps input 'x'"), "%s", assoc_kernel_error(k));
	cr_assert(x[30] == 0 && x[31] == 0, "nothing written over the pool");
	cr_assert_eq(assoc_run_paged(k, 1, 1, &pg, b, 3, NULL, 0), ASSOC_OK, "%s", assoc_kernel_error(k));
	cr_assert(out[0] == 6 && out[1] == 10, "%g %g", out[0], out[1]);
	assoc_kernel_free(k);
	assoc_spec_free(s);
}

/* ---- the command line ---- */

static void write_i32(const char *path, const int32_t *v, int ndim, size_t d0, size_t d1)
{
	Npy a = {.descr = "<i4", .ndim = ndim, .shape = {d0, d1}, .count = d0 * (ndim > 1 ? d1 : 1), .itemsize = 4,
		 .data = (void *)v};
	char msg[256];
	cr_assert_eq(npy_write(path, &a, msg, sizeof msg), 0, "%s", msg);
}

/* A layout read from files names its own sizes: the query rows in all
 * (cu_seqlens_q's last, under --rows' limit), the pool (the largest page
 * number) and a length near 2^31, whose pages are counted in 64 bits.
 * Each is refused with the reason, not an allocation that aborts. */
Test(paged, run_refuses_layouts_that_claim_huge_sizes, .timeout = 120)
{
	int32_t one_page[] = {0}, len16[] = {16}, cu_big[] = {0, 2147483647}, last_page[] = {16777215}, len256[] = {256},
		len_max[] = {2147483647};
	write_i32("build/paged_huge_bt1.npy", one_page, 2, 1, 1);
	write_i32("build/paged_huge_sl16.npy", len16, 1, 1, 0);
	write_i32("build/paged_huge_cu.npy", cu_big, 1, 2, 0);
	write_i32("build/paged_huge_btmax.npy", last_page, 2, 1, 1);
	write_i32("build/paged_huge_sl256.npy", len256, 1, 1, 0);
	write_i32("build/paged_huge_slmax.npy", len_max, 1, 1, 0);
	char out[4096];
	cr_expect_eq(sh(ASSOC " run specs/attention.yaml --device interp --page-size 16 -D d=4 -D dv=4 "
			"--input block_table=build/paged_huge_bt1.npy --input seq_lens=build/paged_huge_sl16.npy "
			"--input cu_seqlens_q=build/paged_huge_cu.npy",
			out, sizeof out, 1),
		     2, "%s", out);
	cr_expect(strstr(out, "build/paged_huge_cu.npy: cu_seqlens_q[1] = 2147483647 query rows in all: at most 16777216"),
		  "%s", out);
	const char *pool[] = {"run", "bench"};
	for (int k = 0; k < 2; k++) {
		char cmd[512];
		snprintf(cmd, sizeof cmd,
			 ASSOC " %s specs/attention.yaml --device %s --page-size 256 --rows 1 --input "
			       "block_table=build/paged_huge_btmax.npy --input seq_lens=build/paged_huge_sl256.npy",
			 pool[k], k ? "cpu" : "interp");
		cr_expect_eq(sh(cmd, out, sizeof out, 1), 2, "%s: %s", pool[k], out);
		cr_expect(k || (strstr(out, "a batch of 1 query rows over 16777216 pages of 256 keys") &&
				strstr(out, "GiB of arrays; this machine has")),
			  "%s: %s", pool[k], out);
		cr_expect(!strstr(out, "AddressSanitizer"), "%s: %s", pool[k], out);
	}
	cr_expect_eq(sh(ASSOC " run specs/attention.yaml --device interp --page-size 16 --rows 1 -D d=4 -D dv=4 "
			"--input block_table=build/paged_huge_bt1.npy --input seq_lens=build/paged_huge_slmax.npy",
			out, sizeof out, 1),
		     2, "%s", out);
	cr_expect(strstr(out, "seq_lens[0] = 2147483647: a sequence holds 0 to 16 keys"), "%s", out);
	cr_expect(!strstr(out, "runtime error"), "%s", out);
}

/* The library's paged batch on a device that runs a sequence at a time
 * gathers each sequence's keys apart: a table that reads one page over
 * and over makes a sequence of 2^31 keys out of a pool of one page, which
 * is refused as too large, not an allocation that aborts. */
Test(paged, library_refuses_a_sequence_too_large_to_gather, .timeout = 120)
{
	AssocSpec *s;
	cr_assert_eq(assoc_spec_load(&s, "specs/attention.yaml", NULL, 0), ASSOC_OK);
	AssocKernel *k;
	cr_assert_eq(assoc_compile(s, "interp", 1, &k), ASSOC_OK, "%s", assoc_kernel_error(k));
	enum { PAGE = 256, MAX_PAGES = 2147483647 / PAGE, D = 64 };
	int32_t *table = calloc(MAX_PAGES, sizeof *table), lens[] = {MAX_PAGES * PAGE}, cu[] = {0, 1};
	uint16_t *q = calloc(D, 2), *kv = calloc(PAGE * D, 2), *vv = calloc(PAGE * D, 2);
	float *o = calloc(D, sizeof *o), lse = 0;
	cr_assert(table && q && kv && vv && o);
	AssocPaged pg = {.batch = 1, .page_size = PAGE, .pages = 1, .max_pages = MAX_PAGES, .block_table = table,
			 .seq_lens = lens, .cu_seqlens_q = cu};
	AssocBuffer b[] = {{"q", q, D * 2}, {"k", kv, PAGE * D * 2}, {"v", vv, PAGE * D * 2}, {"out", o, D * 4},
			   {"lse", &lse, 4}};
	AssocStatus st = assoc_run_paged(k, 1, 1, &pg, b, 5, (AssocValue[]){{"scale", 0.125}}, 1);
	cr_expect_eq(st, ASSOC_ENOMEM, "%s", assoc_kernel_error(k));
	cr_expect(strstr(assoc_kernel_error(k), "sequence 0 (1 query, 2147483392 keys) gathered apart needs") &&
		      strstr(assoc_kernel_error(k), "GiB of arrays; this machine has"),
		  "%s", assoc_kernel_error(k));
	free(table), free(q), free(kv), free(vv), free(o);
	assoc_kernel_free(k);
	assoc_spec_free(s);
}

Test(paged, run_draws_a_batch)
{
	char out[4096];
	int st = sh(ASSOC " run specs/attention.yaml --device interp --page-size 16 --batch 3 --heads 4 --kv-heads 2 "
		       "--rows 2 --len 70 --verbose",
		    out, sizeof out, 1);
	cr_assert_eq(st, 0, "%s", out);
	cr_assert(strstr(out, "3 sequences of 2 queries and") && strstr(out, "to 70 keys in pages of 16"), "%s", out);
	cr_assert(strstr(out, "read from the pool through its row of the block table"), "%s", out);
	cr_assert(strstr(out, "  ok"), "%s", out);
}

/* On sm_90a a paged batch takes the mma.sync template, and --verbose
 * says that the Hopper one was left out (the emulator said nothing). */
Test(paged, verbose_says_the_hopper_template_is_left_out, .timeout = 300)
{
	char out[8192];
	int st = sh(ASSOC " run specs/attention.yaml --device emu --arch sm_90a --page-size 64 --batch 2 --rows 20 "
		       "--len 100 --heads 2 --kv-heads 1 --verbose",
		    out, sizeof out, 1);
	if (st && strstr(out, "C++ compiler"))
		cr_skip_test("no host C++ compiler for the emulator: %s", out);
	cr_assert_eq(st, 0, "%s", out);
	cr_assert(strstr(out, "emu: 2 sequences in one launch: attention:") && !strstr(out, ",wg="), "%s", out);
	cr_assert(strstr(out, "(the Hopper template, whose TMA boxes read runs of contiguous keys, left out)"), "%s", out);
}

/* --output writes the inputs and the layout as drawn, in the layout
 * --input takes: the batch run again from the files gives the outputs
 * again. */
Test(paged, run_writes_the_drawn_batch_to_run_again, .timeout = 120)
{
	char dir[] = "/tmp/assoc-pwrite-XXXXXX", cmd[4096], out[8192];
	cr_assert(mkdtemp(dir));
	static const char *const names[] = {"q", "k", "v", "block_table", "seq_lens", "cu_seqlens_q"};
	int at = snprintf(cmd, sizeof cmd, ASSOC " run specs/attention.yaml --device interp --page-size 16 --batch 3 "
				     "--heads 4 --kv-heads 2 --rows 2 --len 70 -D d=8 -D dv=8 --output out=%s/out.npy", dir);
	for (int i = 0; i < 6; i++)
		at += snprintf(cmd + at, sizeof cmd - at, " --output %s=%s/%s.npy", names[i], dir, names[i]);
	cr_assert_eq(sh(cmd, out, sizeof out, 1), 0, "%s\n%s", cmd, out);
	at = snprintf(cmd, sizeof cmd, ASSOC " run specs/attention.yaml --device interp --page-size 16 -D d=8 -D dv=8 "
				    "--output out=%s/again.npy", dir);
	for (int i = 0; i < 6; i++)
		at += snprintf(cmd + at, sizeof cmd - at, " --input %s=%s/%s.npy", names[i], dir, names[i]);
	cr_assert_eq(sh(cmd, out, sizeof out, 1), 0, "%s\n%s", cmd, out);
	cr_assert(strstr(out, "3 sequences of 2 queries") && strstr(out, "4 heads on 2 key/value heads"), "%s", out);
	snprintf(cmd, sizeof cmd, "cmp %s/out.npy %s/again.npy", dir, dir);
	cr_assert_eq(system(cmd), 0, "the batch run again from its files gives other outputs");
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
	cr_assert_eq(sh(ASSOC " run specs/attention.yaml --device interp --page-size 16 --output nope=/tmp/x.npy", out,
			sizeof out, 1),
		     2);
	cr_assert(strstr(out, "--output nope: the spec has no output or input named 'nope'"), "%s", out);
}

Test(paged, run_refuses_bad_options)
{
	char out[4096];
	cr_assert_eq(sh(ASSOC " run specs/attention.yaml --page-size 48", out, sizeof out, 1), 2);
	cr_assert(strstr(out, "--page-size: a page holds a power of two from 16 to 256 keys"), "%s", out);
	cr_assert_eq(sh(ASSOC " run specs/attention.yaml --batch 2", out, sizeof out, 1), 2);
	cr_assert(strstr(out, "--batch: a batch of sequences over paged keys and values, with --page-size"), "%s", out);
	cr_assert_eq(sh(ASSOC " run specs/layer_norm.yaml --page-size 16 --device interp", out, sizeof out, 1), 2);
	cr_assert(strstr(out, "cannot read paged keys and values"), "%s", out);
}

/* run --page-size reports its comparison as run does: sequences of no
 * keys give lse -inf on both sides, which is no value compared by size
 * (it read "max abs error 0, ... 0 of tolerance"). */
Test(paged, run_reports_what_it_compared_as_run_does)
{
	char out[4096];
	cr_assert_eq(sh(ASSOC " run specs/attention.yaml -D d=8 -D dv=8 --device interp --page-size 16 --batch 2 --len 0",
			out, sizeof out, 1),
		     0, "%s", out);
	cr_expect(strstr(out, "\n  lse: no value compared by size (against the float64 reference), 8 of 8 the same "
			      "infinity in both (not compared by size)\n"),
		  "%s", out);
}

/* run and run --page-size share the steps before the run: the device
 * found unusable, then the verdict refusing a carrier, each said the same
 * way with the same exit status. */
Test(paged, run_and_paged_run_share_their_tail)
{
	char a[4096], b[4096];
	const char *bad_gpu = "ASSOC_LIBCUDA=/nonexistent/libcuda.so " ASSOC " run specs/attention.yaml --device gpu";
	char cmd[1024];
	cr_assert_eq(sh(bad_gpu, a, sizeof a, 1), 2);
	snprintf(cmd, sizeof cmd, "%s --page-size 16 --batch 2", bad_gpu);
	cr_assert_eq(sh(cmd, b, sizeof b, 1), 2);
	cr_assert(strstr(a, "assoc: device gpu is not usable here: ") && !strcmp(a, b), "%s\n%s", a, b);
	const char *wrong = ASSOC " run tests/attention/wrong_finalize.yaml --device interp --rows 1 --len 40";
	cr_assert_eq(sh(wrong, a, sizeof a, 1), 1);
	snprintf(cmd, sizeof cmd, "%s --page-size 16 --batch 2", wrong);
	cr_assert_eq(sh(cmd, b, sizeof b, 1), 1);
	cr_assert(strstr(a, "refusing to run it") && !strcmp(a, b), "%s\n%s", a, b);
}

Test(paged, run_reads_the_layout_from_files)
{
	/* 2 sequences (6 and 0 keys), pages of 16: sequence 0 in page 1 */
	int32_t table[] = {1, 0, -1, -1}, lens[] = {6, 0}, bad_table[] = {2, 0, -1, -1}, long_lens[] = {33, 0};
	write_i32("build/paged_table.npy", table, 2, 2, 2);
	write_i32("build/paged_lens.npy", lens, 1, 2, 0);
	write_i32("build/paged_bad_table.npy", bad_table, 2, 2, 2);
	write_i32("build/paged_long_lens.npy", long_lens, 1, 2, 0);
	/* the pool: 2 pages of 16 keys, 1 key/value head, d = 4 */
	float *k = calloc(2 * 16 * 4, sizeof *k);
	for (int x = 0; x < 2 * 16 * 4; x++)
		k[x] = (float)((x * 37) % 11) / 8 - 0.5f;
	Npy a = {.descr = "<f4", .ndim = 4, .shape = {2, 16, 1, 4}, .count = 2 * 16 * 4, .itemsize = 4, .data = k};
	char msg[256], out[4096];
	cr_assert_eq(npy_write("build/paged_k.npy", &a, msg, sizeof msg), 0, "%s", msg);
	a.shape[1] = 32, a.shape[0] = 1;
	cr_assert_eq(npy_write("build/paged_k32.npy", &a, msg, sizeof msg), 0, "%s", msg);
	free(k);
#define RUN ASSOC " run specs/attention_sink.yaml -D d=4 -D dv=4 --device interp --page-size 16 --rows 1 "
	int st = sh(RUN "--input block_table=build/paged_table.npy --input seq_lens=build/paged_lens.npy "
			"--input k=build/paged_k.npy --input v=build/paged_k.npy --output out=build/paged_out.npy",
		    out, sizeof out, 1);
	cr_assert_eq(st, 0, "%s", out);
	cr_assert(strstr(out, "2 sequences of 1 query and 0 to 6 keys in pages of 16 (2 pages)"), "%s", out);
	Npy o;
	cr_assert_eq(npy_read("build/paged_out.npy", &o, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(o.ndim, 3);
	cr_assert(o.shape[0] == 2 && o.shape[1] == 1 && o.shape[2] == 4);
	for (int t = 0; t < 4; t++) /* the sequence of no keys: out = 0 */
		cr_assert_eq(npy_get(&o, 4 + t), 0);
	/* as `run` takes files: float32 into f16 with a note, and a uint16
	 * file of the f16 keys' own bits as they are, to the same result */
	cr_assert(strstr(out, "note: build/paged_k.npy holds float32; converted to f16, the type of input 'k' (0 of 128 "
			      "values rounded)"),
		  "%s", out);
	uint16_t bits[2 * 16 * 4];
	for (int x = 0; x < 2 * 16 * 4; x++)
		bits[x] = run_f16_bits((double)((x * 37) % 11) / 8 - 0.5);
	Npy u = {.descr = "<u2", .ndim = 4, .shape = {2, 16, 1, 4}, .count = 2 * 16 * 4, .itemsize = 2, .data = bits};
	cr_assert_eq(npy_write("build/paged_k16.npy", &u, msg, sizeof msg), 0, "%s", msg);
	st = sh(RUN "--input block_table=build/paged_table.npy --input seq_lens=build/paged_lens.npy "
		    "--input k=build/paged_k16.npy --input v=build/paged_k16.npy --output out=build/paged_out16.npy",
		out, sizeof out, 1);
	cr_assert_eq(st, 0, "%s", out);
	cr_assert(!strstr(out, "note:"), "%s", out);
	Npy o16;
	cr_assert_eq(npy_read("build/paged_out16.npy", &o16, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(o16.count, o.count);
	for (size_t t = 0; t < o.count; t++)
		cr_expect_eq(npy_get(&o16, t), npy_get(&o, t), "out[%zu]", t);
	npy_free(&o16);
	npy_free(&o);
	/* page 2 of a pool of 2 */
	st = sh(RUN "--input block_table=build/paged_bad_table.npy --input seq_lens=build/paged_lens.npy "
		    "--input k=build/paged_k.npy --input v=build/paged_k.npy",
		out, sizeof out, 1);
	cr_assert_eq(st, 2, "%s", out);
	cr_assert(strstr(out, "block_table[0][0] = 2") && strstr(out, "pool holds pages 0 to 1"), "%s", out);
	/* 33 keys in a row of 2 pages */
	st = sh(RUN "--input block_table=build/paged_table.npy --input seq_lens=build/paged_long_lens.npy", out, sizeof out,
		1);
	cr_assert_eq(st, 2, "%s", out);
	cr_assert(strstr(out, "seq_lens[0] = 33"), "%s", out);
	/* pages of 32 keys where --page-size says 16 */
	st = sh(RUN "--input block_table=build/paged_table.npy --input seq_lens=build/paged_lens.npy "
		    "--input k=build/paged_k32.npy",
		out, sizeof out, 1);
	cr_assert_eq(st, 2, "%s", out);
	cr_assert(strstr(out, "pages hold 32 keys, but --page-size is 16"), "%s", out);
	/* keys in pages without their table */
	st = sh(RUN "--input k=build/paged_k.npy", out, sizeof out, 1);
	cr_assert_eq(st, 2, "%s", out);
	cr_assert(strstr(out, "need the layout"), "%s", out);
	/* --batch as the lengths have it agrees, as --rows does; another number is named */
	st = sh(RUN "--batch 2 --input block_table=build/paged_table.npy --input seq_lens=build/paged_lens.npy "
		    "--input k=build/paged_k.npy --input v=build/paged_k.npy",
		out, sizeof out, 1);
	cr_assert_eq(st, 0, "%s", out);
	cr_assert(strstr(out, "2 sequences of 1 query and"), "%s", out);
	st = sh(RUN "--batch 3 --input block_table=build/paged_table.npy --input seq_lens=build/paged_lens.npy", out,
		sizeof out, 1);
	cr_assert_eq(st, 2, "%s", out);
	cr_assert(strstr(out, "--batch 3, but --input seq_lens=build/paged_lens.npy holds 2 sequences"), "%s", out);
	st = sh(RUN "--len 6 --input block_table=build/paged_table.npy --input seq_lens=build/paged_lens.npy", out,
		sizeof out, 1);
	cr_assert_eq(st, 2, "%s", out);
	cr_assert(strstr(out, "--len: the sequences and their keys come from --input seq_lens="), "%s", out);
#undef RUN
}

Test(paged, bench_measures_against_a_copy_of_the_keys_read)
{
	char out[4096];
	int st = sh(ASSOC " bench tests/attention/full.yaml --device cpu --page-size 32 --batch 3 --heads 4 --kv-heads 2 "
		       "--rows 1 --len 500",
		    out, sizeof out, 1);
	if (st && strstr(out, "not usable"))
		cr_skip_test("%s", out);
	cr_assert_eq(st, 0, "%s", out);
	cr_assert(strstr(out, "3 sequences of up to 500 keys in pages of 32"), "%s", out);
	cr_assert(strstr(out, "in place: ") && strstr(out, "K and V read") && strstr(out, "of copy"), "%s", out);
	cr_assert(strstr(out, "gathered first: ") && strstr(out, "unpaged: "), "%s", out);
	cr_assert(strstr(out, "results match the float64 reference"), "%s", out);
	/* one sequence of one head is said as run says it */
	st = sh(ASSOC " bench tests/attention/full.yaml --device cpu --page-size 32 --batch 1 --rows 1 --len 64", out,
		sizeof out, 1);
	cr_assert_eq(st, 0, "%s", out);
	cr_assert(strstr(out, ", 1 sequence of up to 64 keys in pages of 32, ") && !strstr(out, "heads"), "%s", out);
	/* --json: one object, the gpu line's keys and the three ways' times (the text report before) */
	st = sh(ASSOC " bench tests/attention/full.yaml --device cpu --page-size 32 --batch 3 --heads 4 --kv-heads 2 "
		      "--rows 1 --len 500 --json 2>/dev/null",
		out, sizeof out, 1);
	cr_assert_eq(st, 0, "%s", out);
	cr_assert(out[0] == '{' && strstr(out, "}\n") && !strchr(strstr(out, "}\n") + 2, '{'), "%s", out);
	cr_assert(strstr(out, "\"device\": \"cpu\"") && strstr(out, "\"batch\": 3, \"page_size\": 32, \"heads\": 4, "
									     "\"kv_heads\": 2"),
		  "%s", out);
	cr_assert(strstr(out, "\"ratio_to_copy\": ") && strstr(out, "\"gathered_ratio_to_copy\": ") &&
			  strstr(out, "\"unpaged_ratio_to_copy\": ") && strstr(out, "\"match\": true}"),
		  "%s", out);
	cr_assert_eq(sh(ASSOC " bench specs/layer_norm.yaml --device cpu --page-size 32", out, sizeof out, 1), 2);
	cr_assert(strstr(out, "cannot read paged keys and values"), "%s", out);
	cr_assert_eq(sh(ASSOC " tune specs/layer_norm.yaml --page-size 32", out, sizeof out, 1), 2);
	cr_assert(strstr(out, "cannot read paged keys and values"), "%s", out);
	cr_assert_eq(sh(ASSOC " tune specs/attention.yaml --page-size 20", out, sizeof out, 1), 2);
	cr_assert(strstr(out, "power of two"), "%s", out);
}

/* bench --page-size on the gpu through the fake driver (which computes
 * nothing and times every event at 0.25 ms): the batch checked first (the
 * fake's zeros fail it, and the exit status says so), then timed as one
 * launch beside a copy moving as many bytes, the keys those the sequences
 * read (one sequence of 300: 300 keys x 2 key/value heads x 256 bytes). */
Test(paged, gpu_bench_times_the_batch_beside_a_copy, .timeout = 300)
{
	char dir[] = "/tmp/assoc-pbench-XXXXXX", msg[512], out[8192], cmd[1024];
	Nvrtc *nv;
	if (nvrtc_open(&nv, msg, sizeof msg))
		cr_skip_test("no NVRTC: %s", msg);
	nvrtc_close(nv);
	test_tmpdir(dir);
	const char *env = "ASSOC_LIBCUDA=build/libfakecuda.so FAKECUDA= XDG_CACHE_HOME=";
	const char *args = " bench specs/attention_sink.yaml --device gpu --page-size 16 --heads 4 --kv-heads 2 --rows 1";
	snprintf(cmd, sizeof cmd, "%s%s %s%s --batch 3 --len 300", env, dir, ASSOC, args);
	cr_assert_eq(sh(cmd, out, sizeof out, 1), 1, "%s", out);
	cr_assert(strstr(out, "3 sequences of up to 300 keys in pages of 16, 4 heads on 2 key/value heads"), "%s", out);
	cr_assert(strstr(out, "the batch in one launch: 0.2500 ms"), "%s", out);
	cr_assert(strstr(out, "ratio   1.000 of copy bandwidth"), "%s", out);
	cr_assert(strstr(out, "results do NOT match the float64 reference"), "%s", out);
	snprintf(cmd, sizeof cmd, "%s%s %s%s --batch 1 --len 300 --json", env, dir, ASSOC, args);
	cr_assert_eq(sh(cmd, out, sizeof out, 0), 1, "%s", out);
	cr_assert(strstr(out, "\"batch\": 1, \"page_size\": 16, \"heads\": 4, \"kv_heads\": 2, \"rows\": 1, \"len\": 300"),
		  "%s", out);
	cr_assert(strstr(out, "\"launches\": 1, \"ms\": 0.25000") && strstr(out, "\"kv_bytes\": 153600"), "%s", out);
	cr_assert(strstr(out, "\"ratio_to_copy\": 1.0000") && strstr(out, "\"match\": false"), "%s", out);
	snprintf(cmd, sizeof cmd, "%s%s %s bench specs/attention.yaml --device emu --page-size 16", env, dir, ASSOC);
	cr_assert_eq(sh(cmd, out, sizeof out, 1), 2, "%s", out);
	cr_assert(strstr(out, "runs on --device cpu or gpu (got 'emu')"), "%s", out);
}

/* ---- the library ---- */


/* assoc_run_paged on p's arrays with kernel k into out (one per
 * finalize output, p's sizes). */
static AssocStatus lib_run(AssocKernel *k, const Paged *p, void **out, const AssocPaged *pg)
{
	const Carrier *c = p->c;
	AssocBuffer b[16];
	int n = 0;
	for (int i = 0; i < c->nrow; i++)
		b[n++] = (AssocBuffer){c->row[i].name, p->row[i].p, p->row[i].n * p->row[i].width * run_kind_size(p->row[i].kind)};
	for (int i = 0; i < c->ncol; i++)
		b[n++] = (AssocBuffer){c->col[i].name, p->col[i].p, p->col[i].n * p->col[i].width * run_kind_size(p->col[i].kind)};
	for (int i = 0; i < c->nfinal; i++)
		b[n++] = (AssocBuffer){c->finalize[i].name, out[i], p->fin[i].n * p->fin[i].width * run_kind_size(p->fin[i].kind)};
	return assoc_run_paged(k, p->heads, p->kv_heads, pg, b, n, (AssocValue[]){{"scale", 0.125}}, 1);
}

Test(paged, library_runs_a_paged_batch)
{
	Carrier *c = load_ok("specs/attention_sink.yaml");
	Paged *p = odd_batch(c, 16, 4, 2);
	p->params[0] = 0.125;
	/* the interpreter through the device, as run does: the bits to match */
	char msg[512];
	cr_assert_eq(paged_run(p, run_device_find("interp"), &(RunOpts){0}, NULL, NULL, msg, sizeof msg), 0, "%s", msg);
	AssocSpec *s;
	cr_assert_eq(assoc_spec_load(&s, "specs/attention_sink.yaml", NULL, 0), ASSOC_OK);
	AssocPaged pg = {.batch = p->batch, .page_size = p->page_size, .pages = p->pages, .max_pages = p->max_pages,
			 .block_table = p->table, .seq_lens = p->lens, .cu_seqlens_q = p->cu};
	const char *devs[] = {"interp", "cpu"};
	for (int d = 0; d < 2; d++) {
		AssocKernel *k;
		if (assoc_compile(s, devs[d], 2, &k) != ASSOC_OK) {
			cr_log_warn("%s: %s", devs[d], assoc_kernel_error(k));
			assoc_kernel_free(k);
			continue;
		}
		void *out[2];
		for (int i = 0; i < c->nfinal; i++)
			out[i] = calloc(p->fin[i].n * p->fin[i].width, run_kind_size(p->fin[i].kind));
		cr_assert_eq(lib_run(k, p, out, &pg), ASSOC_OK, "%s: %s", devs[d], assoc_kernel_error(k));
		for (int i = 0; i < c->nfinal; i++) {
			Buffer got = p->fin[i];
			got.p = out[i];
			for (size_t x = 0; x < got.n * got.width; x++) {
				double want = run_buffer_get(&p->fin[i], x), v = run_buffer_get(&got, x);
				if (!d)
					cr_assert_eq(v, want, "interp: %s[%zu] %g, the device gave %g", c->finalize[i].name, x, v, want);
				else
					cr_assert(fabs(v - want) <= 1e-3 * (1 + fabs(want)), "cpu: %s[%zu] %g, interp %g",
						  c->finalize[i].name, x, v, want);
			}
		}
		/* a page outside the pool where sequence 4 reads: refused, outputs untouched */
		int32_t keep = p->table[4 * p->max_pages + 2];
		p->table[4 * p->max_pages + 2] = p->pages;
		memset(out[0], 0x7f, p->fin[0].n * p->fin[0].width * run_kind_size(p->fin[0].kind));
		cr_assert_eq(lib_run(k, p, out, &pg), ASSOC_EINVAL);
		cr_assert(strstr(assoc_kernel_error(k), "block_table[4][2]"), "%s", assoc_kernel_error(k));
		cr_assert_eq(((unsigned char *)out[0])[0], 0x7f);
		p->table[4 * p->max_pages + 2] = keep;
		/* more keys than sequence 0's row of the table holds: refused, outputs untouched */
		int32_t len0 = p->lens[0];
		p->lens[0] = p->max_pages * p->page_size + 1;
		cr_assert_eq(lib_run(k, p, out, &pg), ASSOC_EINVAL);
		cr_assert(strstr(assoc_kernel_error(k), "seq_lens[0]"), "%s", assoc_kernel_error(k));
		cr_assert_eq(((unsigned char *)out[0])[0], 0x7f);
		p->lens[0] = len0;
		/* a page size that is no power of two, a buffer of the wrong size */
		AssocPaged bad = pg;
		bad.page_size = 24;
		cr_assert_eq(lib_run(k, p, out, &bad), ASSOC_EINVAL);
		cr_assert(strstr(assoc_kernel_error(k), "power of two"), "%s", assoc_kernel_error(k));
		bad = pg;
		bad.pages = p->pages + 1; /* the pool's buffers are one page short of that */
		cr_assert_eq(lib_run(k, p, out, &bad), ASSOC_ESIZE);
		cr_assert(strstr(assoc_kernel_error(k), "[pages][page_size][kv_heads][width]"), "%s", assoc_kernel_error(k));
		/* an output over the layout arrays (one arena for both): refused
		 * before the first output overwrites a table a later sequence
		 * reads (cpu crashed on the pages at those float bits) */
		size_t tb = (size_t)p->batch * p->max_pages * sizeof(int32_t), ob = p->fin[0].n * p->fin[0].width * 4;
		cr_assert_geq(ob, tb + (p->batch + 1) * sizeof(int32_t));
		int32_t *arena = (int32_t *)out[0];
		const char *which[] = {"block_table", "seq_lens", "cu_seqlens_q"};
		for (int w = 0; w < 3; w++) {
			bad = pg;
			int32_t *into = arena + 3; /* inside out, not at its start */
			if (w == 0)
				memcpy(into, p->table, tb), bad.block_table = into;
			else if (w == 1)
				memcpy(into, p->lens, p->batch * sizeof(int32_t)), bad.seq_lens = into;
			else
				memcpy(into, p->cu, (p->batch + 1) * sizeof(int32_t)), bad.cu_seqlens_q = into;
			cr_assert_eq(lib_run(k, p, out, &bad), ASSOC_EINVAL, "%s: %s", devs[d], which[w]);
			char want[80];
			snprintf(want, sizeof want, "output 'out' overlaps %s in memory", which[w]);
			cr_assert(strstr(assoc_kernel_error(k), want), "%s", assoc_kernel_error(k));
		}
		/* a batch of 2^17 sequences of 2^31 - 1 queries under 65536 heads:
		 * refused, where the product of the three once wrapped past 2^63 */
		bad = pg;
		bad.cu_seqlens_q = NULL, bad.rows = INT32_MAX, bad.batch = 1 << 17;
		int32_t *big = calloc((size_t)bad.batch * bad.max_pages, sizeof *big), *lens = calloc(bad.batch, sizeof *lens);
		cr_assert(big && lens);
		bad.block_table = big, bad.seq_lens = lens;
		cr_assert_eq(assoc_run_paged(k, 1 << 16, 1, &bad, NULL, 0, NULL, 0), ASSOC_EINVAL, "%s", assoc_kernel_error(k));
		cr_assert(strstr(assoc_kernel_error(k), "query rows of 65536 heads: under 2^31 in all"), "%s",
			  assoc_kernel_error(k));
		free(big), free(lens);
		/* no layout: its own message, not the last call's */
		cr_assert_eq(lib_run(k, p, out, NULL), ASSOC_EINVAL);
		cr_assert_str_eq(assoc_kernel_error(k), "no paged layout (NULL)");
		/* no queries at all: the row and output buffers of 0 bytes may be NULL */
		int32_t no_q[64] = {0};
		bad = pg;
		bad.cu_seqlens_q = no_q;
		AssocBuffer b0[8];
		int n0 = 0;
		for (int i = 0; i < c->nrow; i++)
			b0[n0++] = (AssocBuffer){c->row[i].name, NULL, 0};
		for (int i = 0; i < c->ncol; i++)
			b0[n0++] = (AssocBuffer){c->col[i].name, p->col[i].p,
						 p->col[i].n * p->col[i].width * run_kind_size(p->col[i].kind)};
		for (int i = 0; i < c->nfinal; i++)
			b0[n0++] = (AssocBuffer){c->finalize[i].name, NULL, 0};
		cr_assert_lt(p->batch, 64);
		cr_assert_eq(assoc_run_paged(k, p->heads, p->kv_heads, &bad, b0, n0, (AssocValue[]){{"scale", 0.125}}, 1),
			     ASSOC_OK, "%s: %s", devs[d], assoc_kernel_error(k));
		for (int i = 0; i < c->nfinal; i++)
			free(out[i]);
		assoc_kernel_free(k);
	}
	assoc_spec_free(s);
	paged_free(p);
	spec_carrier_free(c);
}

/* assoc_run_paged on cpu compiles its kernel for the pool's key/value
 * heads and keeps it: pools of 2, 4 and again 2 key/value heads under 4
 * query heads (decoding, pages of 16), each giving the very bits of the
 * cpu device's run of the batch. */
Test(paged, library_cpu_kernel_follows_the_pool, .timeout = 300)
{
	Carrier *c = load_ok("specs/attention_sink.yaml");
	AssocSpec *s;
	cr_assert_eq(assoc_spec_load(&s, "specs/attention_sink.yaml", NULL, 0), ASSOC_OK);
	AssocKernel *k;
	if (assoc_compile(s, "cpu", 2, &k) != ASSOC_OK) {
		cr_log_warn("cpu: %s", assoc_kernel_error(k));
		assoc_kernel_free(k);
		assoc_spec_free(s);
		spec_carrier_free(c);
		cr_skip_test("no cpu kernel");
	}
	const int kvs[] = {2, 4, 2};
	for (int t = 0; t < 3; t++) {
		char msg[512];
		Paged *p = paged_drawn(c, 4, kvs[t], 3, 1, 300, 16, 31 + t, NULL, 0, msg, sizeof msg);
		cr_assert(p, "%s", msg);
		p->params[0] = 0.125; /* lib_run's scale */
		cpu_in_place(p, 2, 0);
		AssocPaged pg = {.batch = p->batch, .page_size = p->page_size, .pages = p->pages, .max_pages = p->max_pages,
				 .block_table = p->table, .seq_lens = p->lens, .rows = 1};
		void *out[2];
		for (int i = 0; i < c->nfinal; i++)
			out[i] = calloc(p->fin[i].n * p->fin[i].width, run_kind_size(p->fin[i].kind));
		cr_assert_eq(lib_run(k, p, out, &pg), ASSOC_OK, "%s", assoc_kernel_error(k));
		for (int i = 0; i < c->nfinal; i++) {
			cr_assert(!memcmp(out[i], p->fin[i].p, p->fin[i].n * p->fin[i].width * run_kind_size(p->fin[i].kind)),
				  "%d key/value heads: %s differs from the device's", kvs[t], c->finalize[i].name);
			free(out[i]);
		}
		paged_free(p);
	}
	assoc_kernel_free(k);
	assoc_spec_free(s);
	spec_carrier_free(c);
}

/* The library's host form on chunked prefill in the serving layout:
 * several queries a sequence, a sequence of no keys and one of no
 * queries, lengths off the tiles, pages of 16 and 256, heads 4 on 2, the
 * causal mask aligned bottom-right.  Each device first runs the batch as
 * run does, each sequence checked against the float64 reference; then
 * assoc_run_paged on the caller's [rows][heads] arrays: on emu in the
 * batch's one launch, which reads q and writes the outputs in place and
 * must give the same bits; on cpu in one call that reads the caller's
 * pages in place (its reduce calls counted), within rounding. */
Test(paged, library_runs_chunked_prefill_in_the_serving_layout, .timeout = 600)
{
	const char *path = "tests/attention/causal_bf16.yaml", *devs[] = {"emu", "cpu"};
	Carrier *c = load_ok(path);
	AssocSpec *s;
	cr_assert_eq(assoc_spec_load(&s, path, NULL, 0), ASSOC_OK);
	for (int page = 16; page <= 256; page *= 16)
		for (int d = 0; d < 2; d++) {
			Paged *p = mixed_batch(c, page, 4, 2, -1);
			p->params[0] = 0.125; /* lib_run's scale */
			run_on(devs[d], p, 0);
			AssocKernel *k;
			if (assoc_compile(s, devs[d], 2, &k) != ASSOC_OK) {
				cr_log_warn("%s: %s", devs[d], assoc_kernel_error(k));
				assoc_kernel_free(k);
				paged_free(p);
				continue;
			}
			cr_assert_str_eq(assoc_kernel_device(k), devs[d]);
			AssocPaged pg = {.batch = p->batch, .page_size = p->page_size, .pages = p->pages,
					 .max_pages = p->max_pages, .block_table = p->table, .seq_lens = p->lens,
					 .cu_seqlens_q = p->cu};
			void *out[2];
			for (int i = 0; i < c->nfinal; i++)
				out[i] = calloc(p->fin[i].n * p->fin[i].width, run_kind_size(p->fin[i].kind));
			int64_t calls = rt_cpu_paged_calls();
			cr_assert_eq(lib_run(k, p, out, &pg), ASSOC_OK, "%s: %s", devs[d], assoc_kernel_error(k));
			if (d == 1)
				cr_assert_gt(rt_cpu_paged_calls(), calls, "cpu: no reduce call read the caller's pages");
			for (int i = 0; i < c->nfinal; i++) {
				Buffer got = p->fin[i];
				got.p = out[i];
				for (size_t x = 0; x < got.n * got.width; x++) {
					double want = run_buffer_get(&p->fin[i], x), v = run_buffer_get(&got, x);
					size_t row = x / got.width / p->heads, h = x / got.width % p->heads;
					if (v == want)
						continue;
					if (isnan(want) || isnan(v) || isinf(want) || isinf(v))
						cr_assert(isnan(want) && isnan(v), "%s, pages of %d: %s row %zu head %zu: %g, the batch %g",
							  devs[d], page, c->finalize[i].name, row, h, v, want);
					else if (d == 0)
						cr_assert_eq(v, want, "emu, pages of %d: %s row %zu head %zu: %g, the batch %g", page,
							     c->finalize[i].name, row, h, v, want);
					else
						cr_assert(fabs(v - want) <= 1e-3 * (1 + fabs(want)),
							  "cpu, pages of %d: %s row %zu head %zu: %g, the batch %g", page,
							  c->finalize[i].name, row, h, v, want);
				}
				free(out[i]);
			}
			assoc_kernel_free(k);
			paged_free(p);
		}
	assoc_spec_free(s);
	spec_carrier_free(c);
}

/* ---- the CUDA kernels ---- */

/* The paged module reads K and V through the table in input slot
 * ATTN_PI, leaves the Hopper template out, and says both. */
Test(paged, cuda_module_reads_through_the_table)
{
	Carrier *c = load_ok("specs/attention_sink.yaml");
	CudaModule m;
	char msg[512];
	cr_assert_eq(cuda_module_paged(c, NULL, "sm_90a", 0, 32, &m, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(m.paged, 32);
	cr_assert(strstr(m.src, "#define ATTN_PAGED 32\n#define ATTN_PI 4\n"), "the table after q, sink, k, v");
	for (int v = 0; v < m.nvar; v++)
		cr_assert_eq(m.var[v].wg, 0, "a Hopper variant in the paged module");
	cr_assert(strstr(m.explain, "through the block table, pages of 32 keys (the Hopper template"), "%s", m.explain);
	CudaModule u;
	cr_assert_eq(cuda_module_for(c, NULL, "sm_90a", 0, &u, msg, sizeof msg), 0, "%s", msg);
	cr_assert(!strstr(u.src, "#define ATTN_PAGED"));
	cr_assert(strcmp(m.prefix, u.prefix), "paged and unpaged kernels share names");
	cuda_module_free(&u);
	cuda_module_free(&m);
	spec_carrier_free(c);
}

/* The paged kernels, every default variant (prefill and split-KV
 * decoding), assemble without spills or stack for sm_80 and sm_90a, f16
 * and bf16, head dims 64 to 256. */
Test(paged, ptxas_paged_kernels_without_spills, .timeout = 900)
{
	cuda_test_cache();
	Nvrtc *nv;
	char msg[4096];
	if (nvrtc_open(&nv, msg, sizeof msg))
		cr_skip_test("no NVRTC: %s", msg);
	static const struct {
		const char *path, *d, *arch;
	} runs[] = {/* each compile takes seconds: the widest head dims, where registers run out, on each target and
		     * type, and the narrowest once */
		    {"specs/attention.yaml", "64", "sm_80"},
		    {"specs/attention.yaml", "256", "sm_80"},
		    {"tests/attention/full_bf16.yaml", "256", "sm_90a"}};
	for (size_t k = 0; k < sizeof runs / sizeof *runs; k++) {
		Carrier *c = load_defs(runs[k].path, (Define[]){{"d", runs[k].d}, {"dv", runs[k].d}}, 2);
		CudaModule m;
		cr_assert_eq(cuda_module_paged(c, NULL, runs[k].arch, 0, 16, &m, msg, sizeof msg), 0, "%s", msg);
		char *ptx = NULL;
		int cached;
		cr_assert_eq(nvrtc_ptx(nv, m.src, runs[k].arch, &ptx, &cached, msg, sizeof msg), 0, "%s d=%s %s: %s",
			     runs[k].path, runs[k].d, runs[k].arch, msg);
		char what[160];
		snprintf(what, sizeof what, "%s d=%s %s", runs[k].path, runs[k].d, runs[k].arch);
		int n = cuda_expect_unspilled(ptx, runs[k].arch, what, NULL, 0, msg, sizeof msg);
		free(ptx);
		cuda_module_free(&m);
		spec_carrier_free(c);
		if (n < 0) {
			nvrtc_close(nv);
			cr_skip_test("%s", msg);
		}
	}
	nvrtc_close(nv);
}

/* The gpu device through the fake driver (tests/fake/fakecuda.c), with a
 * tuning cache of the test's own (dir, a mkdtemp template); skips where
 * NVRTC is missing. */
static void fake_gpu(char *dir)
{
	char msg[512];
	Nvrtc *nv;
	if (nvrtc_open(&nv, msg, sizeof msg))
		cr_skip_test("no NVRTC: %s", msg);
	nvrtc_close(nv);
	test_tmpdir(dir);
	test_xdg_cache(dir);
	setenv("ASSOC_LIBCUDA", "build/libfakecuda.so", 1);
	setenv("FAKECUDA", "", 1);
}

/* The gpu device through the fake driver (tests/fake/fakecuda.c, which
 * runs no kernels): the paged module is loaded, its tuning choices are
 * the unpaged module's for the same shape, the batch uploads the pool and
 * the layout once and runs in one launch, and the unrun kernels' zeros
 * fail the check. */
Test(paged, gpu_runs_the_batch_in_one_launch, .timeout = 600)
{
	char dir[] = "/tmp/assoc-paged-XXXXXX", msg[1024];
	fake_gpu(dir);
	Carrier *c = load_ok("specs/attention_sink.yaml");
	Gpu g, u;
	cr_assert_eq(gpu_open_paged(&g, c, 16, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(g.m.paged, 16);
	cr_assert(strstr(g.m.src, "#define ATTN_PAGED 16"));
	/* a paged run finds what `assoc tune` chose for its sequence's shape */
	cr_assert_eq(gpu_open(&u, c, 0, msg, sizeof msg), 0, "%s", msg);
	RunData *shape = rundata_new_heads(c, 1, 1000, 4, 2);
	char kp[1024], ku[1024];
	gpu_tune_key(&g, shape, kp, sizeof kp);
	gpu_tune_key(&u, shape, ku, sizeof ku);
	cr_assert_str_eq(kp, ku);
	rundata_free(shape);
	gpu_close(&u);
	gpu_close(&g);
	void *lib = dlopen("build/libfakecuda.so", RTLD_NOW | RTLD_NOLOAD);
	cr_assert(lib, "the fake driver is not loaded");
	void (*syncs)(int *, int *) = (void (*)(int *, int *))dlsym(lib, "fakecuda_syncs");
	int (*launches)(void) = (int (*)(void))dlsym(lib, "fakecuda_launches");
	unsigned (*grid_y)(void) = (unsigned (*)(void))dlsym(lib, "fakecuda_grid_y");
	cr_assert(syncs && launches && grid_y);
	Paged *p = odd_batch(c, 16, 4, 2);
	int before, after, unused, l0 = launches();
	syncs(&before, &unused);
	RunCheck rc;
	cr_assert_eq(paged_run(p, run_device_find("gpu"), &(RunOpts){0}, &rc, NULL, msg, sizeof msg), 0, "%s", msg);
	syncs(&after, &unused);
	/* the batch of 5 in one launch, a row of the grid a sequence: q and
	 * sink, the pool's k and v, the table, seq_lens and cu_seqlens_q up
	 * once, out and lse down */
	cr_assert_eq(launches() - l0, 1, "%d launches", launches() - l0);
	cr_assert_eq(grid_y(), 5);
	cr_assert_eq(after - before, 7 + 2, "%d copies", after - before);
	cr_assert(!rc.ok, "the fake driver ran no kernels, yet the results matched");
	runcheck_free(&rc);
	/* as many queries in every sequence: no cu_seqlens_q */
	Paged *u1 = mixed_batch(c, 16, 4, 2, 1);
	syncs(&before, &unused);
	l0 = launches();
	cr_assert_eq(paged_run(u1, run_device_find("gpu"), &(RunOpts){0}, &rc, NULL, msg, sizeof msg), 0, "%s", msg);
	syncs(&after, &unused);
	cr_assert_eq(launches() - l0, 1, "%d launches", launches() - l0);
	cr_assert_eq(after - before, 6 + 2, "%d copies", after - before);
	runcheck_free(&rc);
	paged_free(u1);
	dlclose(lib);
	paged_free(p);
	spec_carrier_free(c);
	unsetenv("ASSOC_LIBCUDA");
	unsetenv("XDG_CACHE_HOME");
}

/* The gpu device through the fake driver, which refuses a grid past 65535
 * rows in y as the driver does: a batch of 70000 sequences goes in two
 * launches, the second of the 4465 sequences left. */
Test(paged, gpu_runs_a_batch_past_65535_sequences_in_two_launches, .timeout = 600)
{
	char dir[] = "/tmp/assoc-paged-XXXXXX", msg[1024];
	fake_gpu(dir);
	Carrier *c = load_defs("specs/attention.yaml", (Define[]){{"d", "16"}, {"dv", "16"}}, 2);
	Paged *p = wide_batch(c, 70000, 0);
	/* the driver loads with the first run; the fake one runs no kernel, so
	 * the outputs are not held to the reference (NULL: not computed) */
	cr_assert_eq(paged_run(p, run_device_find("gpu"), &(RunOpts){.split = 1}, NULL, NULL, msg, sizeof msg), 0, "%s",
		     msg);
	void *lib = dlopen("build/libfakecuda.so", RTLD_NOW | RTLD_NOLOAD);
	cr_assert(lib, "the fake driver is not loaded");
	int (*launches)(void) = (int (*)(void))dlsym(lib, "fakecuda_launches");
	unsigned (*grid_y)(void) = (unsigned (*)(void))dlsym(lib, "fakecuda_grid_y");
	cr_assert(launches && grid_y);
	int l0 = launches();
	cr_assert_eq(paged_run(p, run_device_find("gpu"), &(RunOpts){.split = 1}, NULL, NULL, msg, sizeof msg), 0, "%s",
		     msg);
	cr_assert_eq(launches() - l0, 2, "%d launches", launches() - l0);
	cr_assert_eq(grid_y(), 70000u - 65535u);
	dlclose(lib);
	paged_free(p);
	spec_carrier_free(c);
	unsetenv("ASSOC_LIBCUDA");
	unsetenv("XDG_CACHE_HOME");
}
