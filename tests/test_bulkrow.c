/* test_bulkrow.c: rows streamed through a ring of shared memory by 1D bulk
 * copies (variant bk, templates/rowbulk.cuh).  The text reads back, the
 * texts from before it read the same, and it is refused where it names
 * no ring a row template can have; a target below sm_90, a merge not
 * known to commute and element inputs other than scalar f32, f16 or bf16
 * refuse it with the reason; sm_90's tuning space holds bulk variants,
 * the others and cuda_pick none; the plan asks for the ring's dynamic
 * shared memory and counts one read of a map's row where it fits in the
 * ring.  On the emulator at sm_90a every carrier it applies to (online
 * softmax with y, Welford, log-sum-exp, layer norm, a bf16 input, a bf16
 * and an f32 input together) gives the float64 reference's results with
 * 2 and 4 stages at odd shapes: no position, fewer than a warp, rows
 * whose starts are not 16-byte aligned (odd lengths), bodies not a
 * multiple of a stage, rows that fit in the ring and rows that cycle it,
 * one row and many.  A stage refilled before every thread has read it
 * (no wait on its empty barrier, or a wait on the wrong one) is reported
 * by the emulator.  Every bulk variant assembles for sm_90a without
 * spills, and emit --explain says what the variant does.  The tuner times
 * bulk variants whatever its model's score, and `assoc tune` on the fake
 * (sm_90a) driver offers them for long rows only. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/cuda/cuda.h"
#include "compiler/cuda/nvrtc.h"
#include "compiler/devices/emu.h"
#include "compiler/devices/run.h"
#include "cudatest.h"
#include "emutest.h"
#include "runtime/tune.h"
#include "testutil.h"

static const char welford_bf16[] = WELFORD_BF16_SPEC;

static const char softmax_mixed[] = SOFTMAX_MIXED_SPEC;

Test(bulkrow, variant_text)
{
	Variant v, w;
	char msg[512], buf[256];
	cr_assert_eq(variant_parse("rowmap:nt=512,acc=4,vec=4,bk=4", &v, msg, sizeof msg), 0, "%s", msg);
	cr_expect_eq(v.bk, 4);
	variant_str(&v, buf, sizeof buf);
	cr_expect_str_eq(buf, "rowmap:nt=512,acc=4,vec=4,warp=0,items=0,bk=4");
	cr_assert_eq(variant_parse(buf, &w, msg, sizeof msg), 0, "%s", msg);
	cr_expect(!memcmp(&v, &w, sizeof v), "%s reads back as itself", buf);
	cr_assert_eq(variant_parse("rowreduce:nt=256,acc=2,vec=4,warp=0,items=0,un=2,tf=1", &v, msg, sizeof msg), 0, "%s",
		     msg);
	cr_expect_eq(v.bk, 0, "no ring unless named");
	variant_str(&v, buf, sizeof buf);
	cr_expect_str_eq(buf, "rowreduce:nt=256,acc=2,vec=4,warp=0,items=0,un=2,tf=1");
	static const char *const bad[] = {"rowreduce:bk=1",        "rowreduce:bk=9",        "rowreduce:bk=-2",
					  "rowmap:warp=1,bk=2",    "rowreduce:cl=2,bk=2",   "rowmap:items=16,bk=4",
					  "rowreduce:un=2,bk=4"};
	for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
		cr_expect_eq(variant_parse(bad[k], &v, msg, sizeof msg), -1, "%s", bad[k]);
		cr_expect(strstr(msg, "bk, the stages of shared memory a row is streamed through by bulk copies, is 2 to 8"),
			  "%s: %s", bad[k], msg);
	}
	static const char *const others[] = {"splitk:bk=2", "scan:bk=2", "attention:bk=2"};
	for (size_t k = 0; k < sizeof others / sizeof *others; k++) {
		cr_expect_eq(variant_parse(others[k], &v, msg, sizeof msg), -1, "%s", others[k]);
		cr_expect(strstr(msg, "unknown key 'bk'"), "%s: %s", others[k], msg);
	}
}

Test(bulkrow, refused_with_the_reason_and_only_sm_90_space_has_it)
{
	Carrier *c = load_ok("specs/online_softmax.yaml");
	CudaModule m;
	char msg[1024];
	const char *cfg = "rowmap:nt=512,acc=4,vec=4,bk=4";
	cr_expect_eq(cuda_module_for(c, cfg, "sm_80", 0, &m, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "streams rows through shared memory by bulk copies (bk=4), which needs sm_90 or newer; the "
			      "target is sm_80"), "%s", msg);
	cr_assert_eq(cuda_module_for(c, cfg, "sm_90a", 0, &m, msg, sizeof msg), 0, "%s", msg);
	cr_expect_eq(m.var[0].bk, 4);
	cr_expect(strstr(m.src, "rowbulk<512, 4, 4, 4, 1, 0>(A)"), "the kernel");
	cr_expect(strstr(m.src, "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"), "the bulk copy");
	cr_expect(strstr(m.src, "#define ASC_BULK_BYTES 4\n") && strstr(m.src, "#define ASC_BULK_Q 4\n"), "the hooks");
	char why[1024];
	cuda_variant_explain(&m, 0, why, sizeof why);
	cr_expect(strstr(why, "a block a row, 4 accumulators a thread; the row streamed through a ring of 4 stages of 8192 "
			      "positions in shared memory by bulk copies (cp.async.bulk, sm_90) that one thread issues and "
			      "mbarriers complete, 3 stages in flight while the block folds one"), "%s", why);
	cr_expect(strstr(why, "the row kept in the ring for the map pass where it fits (32768 positions), read again where "
			      "not"), "%s", why);
	cr_expect(cuda_takes_len(&m, 0, 1 << 20, why, sizeof why), "any length: the ring is refilled");
	cr_expect_eq(cuda_smem(&m, 0), 4u * (8192 * 4 + 16), "4 stages of 8192 f32 positions and 8 mbarriers");
	CudaPlan p;
	cuda_plan(&m, 0, 3, 32768, 0, &p);
	cr_expect_eq(p.k[0].grid, 3);
	cr_expect_eq(p.k[0].block, 512);
	cr_expect_eq(p.k[0].smem, cuda_smem(&m, 0));
	cr_expect_eq(p.loads, 1, "kept in the ring");
	cuda_plan(&m, 0, 3, 32769, 0, &p);
	cr_expect_eq(p.loads, 2, "read again");
	cuda_module_free(&m);
	/* a bf16 input: stages of half the bytes, 16 bytes of 8 positions */
	Carrier *b = text_ok(welford_bf16);
	cr_assert_eq(cuda_module_for(b, "rowreduce:nt=256,acc=4,vec=4,bk=4", "sm_90a", 0, &m, msg, sizeof msg), 0, "%s", msg);
	cr_expect(strstr(m.src, "#define ASC_BULK_BYTES 2\n") && strstr(m.src, "#define ASC_BULK_Q 8\n"), "the hooks");
	cr_expect_eq(cuda_smem(&m, 0), 4u * (4096 * 2 + 16));
	cuda_module_free(&m);
	spec_carrier_free(b);
	/* seven stages of 1024 x 8 f32 positions (229,488 bytes) fit under the
	 * 227 KB a block may have, not with the 33 states of 92 bytes that
	 * block_reduce keeps beside them: six stages */
	b = text_ok("carrier: top11\n"
		    "element: {x: f32}\n"
		    "state: {m: f32, top: 'f32[11]', idx: 'i32[11]'}\n"
		    "identity: {m: -inf, top: -inf, idx: -1}\n"
		    "lift: {m: x, top: 'topk(x, j, 11)', idx: 'topk_idx(x, j, 11)'}\n"
		    "merge: {m: 'max(a.m, b.m)', top: 'topk(a.top, a.idx, b.top, b.idx)',\n"
		    "        idx: 'topk_idx(a.top, a.idx, b.top, b.idx)'}\n"
		    "finalize: {m: m, idx: idx}\n"
		    "laws: [commutative]\n");
	cr_assert_eq(cuda_module_for(b, "rowreduce:nt=1024,acc=2,vec=4,bk=7", "sm_90a", 0, &m, msg, sizeof msg), 0, "%s",
		     msg);
	cr_expect_eq(m.var[0].nt, 1024);
	cr_expect_eq(m.var[0].acc, 2);
	cr_expect_eq(m.var[0].bk, 6, "the ring leaves block_reduce its shared memory");
	cr_expect_leq(cuda_smem(&m, 0) + 33 * 92, 227u * 1024);
	cuda_module_free(&m);
	spec_carrier_free(b);
	static const char *const archs[] = {"sm_80", "sm_90", "sm_90a"};
	for (int a = 0; a < 3; a++) {
		cr_assert_eq(cuda_module_space_for(c, archs[a], 0, &m, msg, sizeof msg), 0, "%s", msg);
		int nbk = 0;
		for (int v = 0; v < m.nvar; v++)
			nbk += m.var[v].bk > 0;
		cr_expect_eq(nbk > 0, a > 0, "%s: %d bulk variants", archs[a], nbk);
		cr_expect_eq(strstr(m.src, "rowbulk<") != NULL, a > 0, "%s: the template", archs[a]);
		static const int lens[] = {100, 4096, 32768, 131072};
		for (int l = 0; l < 4; l++) /* the rule's choice stays: the tuner's to take a ring */
			cr_expect_eq(m.var[cuda_pick(&m, 256, lens[l], 0)].bk, 0);
		cuda_module_free(&m);
	}
	spec_carrier_free(c);
	/* without the default module's hooks: where it has no bulk variant,
	 * its source (and so its cached build) is as before */
	c = load_ok("specs/logsumexp.yaml");
	cr_assert_eq(cuda_module_for(c, NULL, "sm_90a", 0, &m, msg, sizeof msg), 0, "%s", msg);
	cr_expect(!strstr(m.src, "ASC_BULK") && !strstr(m.src, "rowbulk"), "no bulk hooks in the default module");
	/* the carrier's prefix, which keys its tuning choices, is the same in
	 * the tuning space's module, which has them */
	CudaModule sp;
	cr_assert_eq(cuda_module_space_for(c, "sm_90a", 0, &sp, msg, sizeof msg), 0, "%s", msg);
	cr_expect(strstr(sp.src, "#define ASC_BULK_NIN 1\n"), "the space's bulk hooks");
	cr_expect_str_eq(sp.prefix, m.prefix);
	cuda_module_free(&sp);
	cuda_module_free(&m);
	spec_carrier_free(c);
	/* carriers it cannot stream */
	static const struct {
		const char *text, *cfg, *want;
	} no[] = {
		{FIRST_SUM_SPEC, "rowreduce:nt=128,acc=1,vec=4,bk=2", "which needs a merge known to commute; first_sum has none"},
		{"carrier: wide\nelement: {x: f64}\nstate: {s: f64}\nidentity: {s: 0}\nlift: {s: x}\n"
		 "merge: {s: a.s + b.s}\nfinalize: {t: s}\nreference: {t: sum(x)}\nlaws: [commutative]\n",
		 "rowreduce:nt=128,acc=1,vec=4,bk=2",
		 "which needs element inputs of scalar f32, f16 or bf16; wide has others"},
	};
	for (size_t k = 0; k < sizeof no / sizeof *no; k++) {
		c = text_ok(no[k].text);
		cr_expect_eq(cuda_module_for(c, no[k].cfg, "sm_90a", 0, &m, msg, sizeof msg), -1);
		cr_expect(strstr(msg, no[k].want), "%s", msg);
		spec_carrier_free(c);
	}
}


/* Stages of 128 positions (32 threads, one accumulator) and of 512 (64
 * threads, two), 2 and 4 of them: no position, fewer than a warp, one
 * position past a stage with odd starts (129), odd lengths whose rows
 * start off 16 bytes (515, 1027: f32 and bf16), bodies that fit in the
 * ring (the map pass from it) and that cycle it (read again), one row and
 * many. */
Test(bulkrow, row_carriers_on_the_emulator, .timeout = 900)
{
	static const struct {
		const char *spec, *text, *cfg[2];
	} runs[] = {
		{"specs/online_softmax.yaml", NULL, {"rowmap:nt=32,acc=1,vec=4,bk=4", "rowmap:nt=64,acc=2,vec=4,tf=1,bk=2"}},
		{"specs/welford.yaml", NULL, {"rowreduce:nt=32,acc=1,vec=4,bk=2", "rowreduce:nt=64,acc=2,vec=4,tf=1,bk=4"}},
		{"specs/logsumexp.yaml", NULL, {"rowreduce:nt=32,acc=1,vec=4,tf=1,bk=4", "rowreduce:nt=64,acc=2,vec=1,bk=2"}},
		{"specs/layer_norm.yaml", NULL, {"rowmap:nt=32,acc=1,vec=4,bk=2", "rowmap:nt=64,acc=2,vec=4,tf=1,bk=4"}},
		{NULL, welford_bf16, {"rowreduce:nt=32,acc=1,vec=4,bk=4", "rowreduce:nt=64,acc=2,vec=4,bk=2"}},
		{NULL, softmax_mixed, {"rowmap:nt=32,acc=1,vec=4,bk=4", "rowmap:nt=32,acc=2,vec=4,bk=2"}},
	};
	static const int shapes[][2] = {{3, 0}, {2, 7}, {3, 129}, {5, 515}, {3, 1027}, {1, 2052}, {12, 260}};
	for (size_t k = 0; k < sizeof runs / sizeof *runs; k++) {
		Carrier *c = runs[k].spec ? load_ok(runs[k].spec) : text_ok(runs[k].text);
		const char *what = runs[k].spec ? runs[k].spec : c->name;
		for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
			RunData *d = rundata_new(c, shapes[s][0], shapes[s][1]);
			char msg[512];
			cr_assert_eq(rundata_draw(d, 61 + s, NULL, 0, msg, sizeof msg), 0, "%s", msg);
			for (int v = 0; v < 2; v++) { /* the bulk variant's run */
				EmuStats st;
				emu_expect_ref(d, what, (RunOpts){.config = runs[k].cfg[v], .arch = "sm_90a"}, &st);
				cr_expect(strstr(st.config, ",bk="), "%s: ran %s", what, st.config);
			}
			rundata_free(d);
		}
		spec_carrier_free(c);
	}
}

/* Global traffic, counted by the emulator: softmax's row read once where
 * its body fits in the ring (the map pass takes it from there; 512 and
 * 2048 positions, every row 16-byte aligned) and twice where the ring is
 * refilled (2048 positions in a ring of 512), as the plan says; a row
 * shorter than a stage reads twice by the ordinary loops. */
Test(bulkrow, softmax_reads_its_row_once_where_it_fits_in_the_ring, .timeout = 300)
{
	cuda_test_cache();
	Carrier *c = load_ok("specs/online_softmax.yaml");
	static const struct {
		const char *cfg;
		int len;
		double loads;
	} cases[] = {
		{"rowmap:nt=32,acc=1,vec=4,bk=4", 512, 1},
		{"rowmap:nt=32,acc=2,vec=4,bk=8", 2048, 1},
		{"rowmap:nt=32,acc=1,vec=4,bk=4", 2048, 2},
		{"rowmap:nt=64,acc=1,vec=4,bk=2", 128, 2},
	};
	for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
		int rows = 3, len = cases[k].len;
		RunData *d = rundata_new(c, rows, len);
		char msg[2048];
		cr_assert_eq(rundata_draw(d, 5, NULL, 0, msg, sizeof msg), 0, "%s", msg);
		EmuStats st;
		cr_assert_eq(emu_run_data(d, &(RunOpts){.config = cases[k].cfg, .arch = "sm_90a"}, &st, msg, sizeof msg), 0,
			     "%s", msg);
		double elems = (double)rows * len * sizeof(float);
		cr_expect_float_eq(st.bytes[0] / elems, cases[k].loads, 1e-9, "%s at %d: %.4f loads per element",
				   cases[k].cfg, len, st.bytes[0] / elems);
		cr_expect_float_eq((st.bytes[1] - rows * sizeof(float)) / elems, 1, 1e-9, "%s at %d: %.4f stores per element",
				   cases[k].cfg, len, (st.bytes[1] - rows * 4.0) / elems);
		cr_expect_eq(st.plan_loads, cases[k].loads, "%s at %d: the plan's %g", cases[k].cfg, len, st.plan_loads);
		rundata_free(d);
	}
	spec_carrier_free(c);
}

/* The kernel of cfg for logsumexp, built with `defs` before the module,
 * on rows x len drawn elements: 0, or -1 with the emulator's report. */
static int launch_with(const char *defs, const char *cfg, int rows, int len, char *msg, size_t n)
{
	cuda_test_cache();
	Carrier *c = load_ok("specs/logsumexp.yaml");
	CudaModule m;
	cr_assert_eq(cuda_module_for(c, cfg, "sm_90a", 0, &m, msg, n), 0, "%s", msg);
	size_t dl = strlen(defs), sl = strlen(m.src);
	char *src = malloc(dl + sl + 1);
	cr_assert(src);
	memcpy(src, defs, dl);
	memcpy(src + dl, m.src, sl + 1);
	EmuLib *l;
	cr_assert_eq(emu_open(src, &l, msg, n), 0, "%s", msg);
	RunData *d = rundata_new(c, rows, len);
	cr_assert_eq(rundata_draw(d, 7, NULL, 0, msg, n), 0, "%s", msg);
	CudaArgs a;
	memset(&a, 0, sizeof a);
	rundata_pointers(d, a.in, a.out);
	a.rows = rows, a.len = len;
	CudaPlan p;
	cuda_plan(&m, 0, rows, len, 0, &p);
	int rc = emu_launch_kernel(l, p.k[0].name, p.k[0].grid, p.k[0].block, p.k[0].smem, &a, NULL, msg, n);
	emu_close(l);
	rundata_free(d);
	free(src);
	cuda_module_free(&m);
	spec_carrier_free(c);
	return rc;
}

/* Thread 0 refilling a stage before every thread has read it: where it
 * waits on no empty barrier it runs through the row's phases ahead of the
 * threads, which then wait for a phase that has gone by; where it waits
 * on the previous chunk's and refills the stage the threads are reading
 * (stage 1, from word 256), the copy lands over words with nothing
 * ordering it after their last use; where the threads arrive without a
 * proxy fence after their reads, the copy's async-proxy writes are not
 * ordered after those generic reads.
 * With the wait on the stage's own barrier, the same launch runs. */
Test(bulkrow, refill_before_the_stage_is_read_is_reported, .timeout = 300)
{
	char msg[4096];
	const char *cfg = "rowreduce:nt=64,acc=1,vec=4,bk=2";
	cr_expect_eq(launch_with("", cfg, 1, 2048, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(launch_with("#define ASC_BULK_UNGUARDED 1\n", cfg, 1, 2048, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "deadlock: ") && strstr(msg, "in mbarrier wait for a phase that never completes: mbarrier "
							    "wait on ring[512] for parity 0"), "%s", msg);
	cr_assert_eq(launch_with("#define ASC_BULK_UNGUARDED 2\n", cfg, 1, 2048, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "shared-memory race on ring[256]: cp.async.bulk over a word ") &&
			  strstr(msg, "with no barrier ordering that before the copy (missing mbarrier wait for the stage to "
				      "be free?)"), "%s", msg);
	cr_assert_eq(launch_with("#define ASC_BULK_UNGUARDED 3\n", cfg, 1, 2048, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "cp.async.bulk over ring[0], read by thread ") &&
			  strstr(msg, "without fence.proxy.async after the read"), "%s", msg);
}

/* Every bulk variant of sm_90a's tuning space, and rings of 2 and 8
 * stages, for the carriers the row templates are measured on and a bf16
 * input: the bulk copies in the PTX, no spills, no stack. */
Test(bulkrow, ptxas_without_spills, .timeout = 600)
{
	cuda_test_cache();
	Nvrtc *nv;
	char msg[8192];
	if (nvrtc_open(&nv, msg, sizeof msg))
		cr_skip_test("no NVRTC: %s", msg);
	static const struct {
		const char *spec, *text, *cfg;
	} mods[] = {
		{"specs/welford.yaml", NULL, NULL},
		{"specs/online_softmax.yaml", NULL, NULL},
		{"specs/logsumexp.yaml", NULL, NULL},
		{"specs/layer_norm.yaml", NULL, NULL},
		{NULL, welford_bf16, NULL},
		{"specs/layer_norm.yaml", NULL, "rowmap:nt=1024,acc=4,vec=4,tf=1,bk=8"},
		{"specs/welford.yaml", NULL, "rowreduce:nt=128,acc=8,vec=4,tf=1,bk=2"},
	};
	for (size_t i = 0; i < sizeof mods / sizeof *mods; i++) {
		Carrier *c = mods[i].spec ? load_ok(mods[i].spec) : text_ok(mods[i].text);
		const char *what = mods[i].spec ? mods[i].spec : c->name;
		CudaModule m;
		if (mods[i].cfg)
			cr_assert_eq(cuda_module_for(c, mods[i].cfg, "sm_90a", 0, &m, msg, sizeof msg), 0, "%s", msg);
		else
			cr_assert_eq(cuda_module_space_for(c, "sm_90a", 0, &m, msg, sizeof msg), 0, "%s", msg);
		unsigned char want[64] = {0};
		int nbk = 0;
		for (int v = 0; v < m.nvar; v++)
			nbk += want[v] = m.var[v].bk > 0;
		cr_assert_geq(nbk, mods[i].cfg ? 1 : 3, "%s: %d bulk variants", what, nbk);
		char *src = cuda_module_src_of(&m, want), *ptx;
		int cached;
		cr_assert_eq(nvrtc_ptx(nv, src, "sm_90a", &ptx, &cached, msg, sizeof msg), 0, "%s: %s", what, msg);
		cr_expect(strstr(ptx, "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes") &&
				  strstr(ptx, "mbarrier.try_wait.parity"), "%s: the bulk copies and their waits", what);
		int nks = cuda_expect_unspilled(ptx, "sm_90a", what, NULL, 0, msg, sizeof msg);
		if (nks < 0) {
			free(ptx);
			free(src);
			cuda_module_free(&m);
			spec_carrier_free(c);
			nvrtc_close(nv);
			cr_skip_test("%s", msg);
		}
		cr_assert_eq(nks, nbk, "%s: %s", what, msg);
		free(ptx);
		free(src);
		cuda_module_free(&m);
		spec_carrier_free(c);
	}
	nvrtc_close(nv);
}

Test(bulkrow, emit_explain_says_what_the_variant_does)
{
	char out[16384];
	cr_assert_eq(sh("{ build/asan/assoc emit specs/welford.yaml --target cuda --arch sm_90a --explain "
			"--config rowreduce:nt=256,acc=4,vec=4,tf=1,bk=4 2>&1 >/dev/null; }", out, sizeof out, 1), 0, "%s", out);
	cr_expect(strstr(out, "variant rowreduce:nt=256,acc=4,vec=4,warp=0,items=0,tf=1,bk=4: a block a row, 4 accumulators "
			      "a thread; the row streamed through a ring of 4 stages of 4096 positions in shared memory by "
			      "bulk copies"), "%s", out);
	cr_expect(strstr(out, "; tiles of 16 elements folded in the certificate's coordinates, one merge a tile"), "%s", out);
}

/* Bulk variants, whose rings take most of an SM's shared memory (one or
 * two blocks, so that the model sees few threads' loads in flight), are
 * timed beside the model's best; without bk the same candidates are not. */
typedef struct {
	int bk_timed;
} Clock;

static int clock_res(void *ctx, const Variant *c, TuneResources *r, char *why, size_t n)
{
	(void)ctx, (void)why, (void)n;
	*r = (TuneResources){32, c->split == 2 ? 100 << 10 : 0, 0};
	return 0;
}

static int clock_ok(void *ctx, const Variant *c, char *why, size_t n)
{
	(void)ctx, (void)c, (void)why, (void)n;
	return 0;
}

static double clock_time(void *ctx, const Variant *c, char *why, size_t n)
{
	Clock *k = ctx;
	(void)why, (void)n;
	k->bk_timed += c->bk > 0;
	return 1.0 - 0.001 * c->nt / 32;
}

Test(bulkrow, tuner_times_bulk_variants_whatever_the_model_says)
{
	unsetenv("ASSOC_TUNE");
	TuneProblem p = {.fam = FAM_ROWREDUCE, .rows = 1024, .len = 32768, .elem_bytes = 4};
	p.dev = (RtDevice){.name = "NVIDIA H200", .major = 9, .sms = 132, .regs_per_sm = 65536, .smem_per_sm = 228 << 10,
			   .smem_per_block_optin = 227 << 10, .max_threads_per_sm = 2048, .max_blocks_per_sm = 32};
	for (int bk = 0; bk <= 4; bk += 4) {
		Variant c[TUNE_MAX_CANDIDATES];
		int n = 0;
		for (int nt = 64; nt <= 1024; nt *= 2)
			for (int acc = 1; acc <= 4; acc *= 2)
				c[n++] = (Variant){.fam = FAM_ROWREDUCE, .nt = nt, .acc = acc, .vec = 4, .un = 1, .split = 1};
		/* the ring's variants: split 2 marks them for clock_res (their shared memory) */
		for (int acc = 1; acc <= 2; acc++)
			c[n++] = (Variant){.fam = FAM_ROWREDUCE, .nt = 256, .acc = acc, .vec = 1, .un = 1, .bk = bk, .split = 2};
		Clock k = {0};
		TuneHooks h = {&k, clock_res, clock_ok, clock_time, NULL, 1e9};
		TuneResult r;
		cr_assert_eq(tune_select_list(&p, c, n, &h, &r), 0);
		int untimed = 0;
		for (int i = 0; i < r.n; i++)
			untimed += r.cand[i].var.split == 2 && strstr(r.cand[i].why, "not timed: the model ranks") != NULL;
		cr_expect_eq(k.bk_timed, bk ? 2 : 0, "bk %d: %d bulk variants timed", bk, k.bk_timed);
		cr_expect_eq(untimed, bk ? 0 : 2, "bk %d: %d of the ring's variants not timed", bk, untimed);
	}
}

/* assoc tune on the fake driver (sm_90a): the bulk variants of the space
 * among the candidates at 1024 x 32768 and timed there (the fake computes
 * nothing: each fails its check), none at 64 x 1000. */
Test(bulkrow, tune_offers_bulk_variants_for_long_rows, .timeout = 300)
{
	Nvrtc *nv;
	char msg[1024], out[32768];
	if (nvrtc_open(&nv, msg, sizeof msg))
		cr_skip_test("no NVRTC: %s", msg);
	nvrtc_close(nv);
	cr_assert_eq(sh("XDG_CACHE_HOME=$PWD/build/tunecli ASSOC_LIBCUDA=build/libfakecuda.so FAKECUDA= build/asan/assoc tune "
			"specs/logsumexp.yaml --rows 1024 --len 32768", out, sizeof out, 1), 1, "%s", out);
	const char *at = strstr(out, "rowreduce:nt=256,acc=4,vec=4,warp=0,items=0,bk=4,split=1 ");
	cr_expect(at, "the bulk variant among the candidates: %s", out);
	const char *eol = at ? strchr(at, '\n') : NULL;
	cr_expect(at && eol && memmem(at, eol - at, "wrong result", 12), "run, not pruned: %s", out);
	cr_assert_eq(sh("XDG_CACHE_HOME=$PWD/build/tunecli ASSOC_LIBCUDA=build/libfakecuda.so FAKECUDA= build/asan/assoc tune "
			"specs/logsumexp.yaml --rows 64 --len 1000", out, sizeof out, 1), 1, "%s", out);
	cr_expect(strstr(out, "candidates") && !strstr(out, "bk="), "no bulk variant for rows of 1000: %s", out);
}
