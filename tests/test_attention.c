/* test_attention.c: the attention template on the emulator against the
 * float64 reference (FlashAttention's rule, runcheck_run; P rounded to the
 * inputs' type by default, P V in float32 by --config): head dims 32, 64,
 * 128; ragged key lengths; causal, non-causal, sliding window, soft-capped
 * scores, negative, zero and per-row scales, fully masked rows,
 * grouped-query heads, split-KV decoding and its key slices (the warps of
 * a block on the same rows, each on a part of every key tile); the same
 * shapes with Q kept in shared memory (32 rows a warp at head dim 128);
 * the contract refusing a merge with a bug (which still runs, on the
 * generic templates); the weighted-sum contract (sigmoid attention, and
 * sums of the weights beside it) over the same shapes, f16 and bf16, and
 * carriers that are not plain sums refused with the reason; mma.sync's
 * fragment layout in the emulator; ptxas
 * without spills for the default configurations and that one, and for
 * decoding's under masks and scores at head dims 32 to 128; the
 * key-tile loop's PTX without the waste it once had. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/cli/cli.h"
#include "compiler/cuda/cuda.h"
#include "compiler/cuda/nvrtc.h"
#include "compiler/devices/run.h"
#include "compiler/util/cache.h"
#include "cudatest.h"
#include "compiler/devices/emu.h"
#include "testutil.h"

static Carrier *load_dims(const char *path, int d)
{
	char dv[16];
	snprintf(dv, sizeof dv, "%d", d);
	Define defs[2] = {{"d", dv}, {"dv", dv}};
	Diag dg;
	diag_init(&dg, path);
	Carrier *c = spec_load_file(path, defs, d ? 2 : 0, &dg);
	cr_assert(c, "%s: %s", path, dg.text ? dg.text : "");
	diag_free(&dg);
	return c;
}

/* One run on the emulator with params prm (the others drawn), checked;
 * the variant that ran in cfg. */
static void run_prm(Carrier *c, const char *what, int rows, int len, int heads, int kv, int split, const char *config,
		    char *cfg, const Define *prm, int nprm)
{
	RunData *d = rundata_new_heads(c, rows, len, heads, kv);
	char msg[4096] = "";
	cr_assert_eq(rundata_draw(d, 11, prm, nprm, msg, sizeof msg), 0, "%s", msg);
	RunOpts o = {.split = split, .config = config};
	EmuStats st;
	cr_assert_eq(emu_run_data(d, &o, &st, msg, sizeof msg), 0, "%s %dx%d: %s", what, rows, len, msg);
	if (cfg)
		strcpy(cfg, st.config);
	RunCheck chk;
	runcheck_run(d, &chk);
	for (int k = 0; k < chk.nout; k++) {
		const OutCheck *x = &chk.out[k];
		cr_expect(x->worst_ratio <= 1 && !x->nan_mismatch,
			  "%s %s %d rows x %d keys, %d/%d heads, split %d: %s at %zu is %.3g of tolerance%s", what, st.config,
			  rows, len, heads, kv, split, x->name, x->at, x->worst_ratio, x->nan_mismatch ? ", NaN mismatch" : "");
	}
	runcheck_free(&chk);
	rundata_free(d);
}

static void run_one(Carrier *c, const char *what, int rows, int len, int heads, int kv, int split, const char *config,
		    char *cfg)
{
	run_prm(c, what, rows, len, heads, kv, split, config, cfg, NULL, 0);
}

static void uses_attention(Carrier *c, const char *what)
{
	CudaModule m;
	char msg[512];
	cr_assert_eq(cuda_module(c, NULL, &m, msg, sizeof msg), 0, "%s", msg);
	cr_expect_eq(m.base, FAM_ATTN, "%s: %s", what, m.explain);
	cuda_module_free(&m);
}

static const int LENS[] = {1, 17, 64, 127, 128, 129, 1000};

static void head_dim(const char *path, int d)
{
	cuda_test_cache();
	Carrier *c = load_dims(path, d);
	uses_attention(c, path);
	for (size_t l = 0; l < sizeof LENS / sizeof *LENS; l++) {
		int len = LENS[l], rows = len >= 1000 ? 3 : len == 129 ? 130 : 17;
		run_one(c, path, rows, len, 1, 1, 1, NULL, NULL);
	}
	/* P V at float32's precision: held to the naive float32 evaluation of the spec */
	const char *pv3 = d > 128 ? "attention:nt=128,mt=1,bn=16,pv=3" : "attention:nt=128,mt=1,bn=64,pv=3";
	run_one(c, path, 3, 1000, 1, 1, 1, pv3, NULL);
	run_one(c, path, 130, 129, 1, 1, 1, pv3, NULL);
	spec_carrier_free(c);
}

Test(attention, causal_head_dim_32, .timeout = 300) { head_dim("specs/attention.yaml", 32); }
Test(attention, causal_head_dim_64, .timeout = 300) { head_dim("specs/attention.yaml", 64); }
Test(attention, causal_head_dim_128, .timeout = 300) { head_dim("specs/attention.yaml", 128); }
Test(attention, full_head_dim_32, .timeout = 300) { head_dim("tests/attention/full.yaml", 32); }
Test(attention, full_head_dim_64, .timeout = 300) { head_dim("tests/attention/full.yaml", 64); }
Test(attention, full_head_dim_128_bf16, .timeout = 300) { head_dim("tests/attention/full_bf16.yaml", 128); }
Test(attention, causal_head_dim_256, .timeout = 300) { head_dim("specs/attention.yaml", 256); }
Test(attention, full_head_dim_256_bf16, .timeout = 300) { head_dim("tests/attention/full_bf16.yaml", 256); }

static void masked(const char *path, int rows, int len)
{
	cuda_test_cache();
	Carrier *c = load_dims(path, 0);
	uses_attention(c, path);
	run_one(c, path, rows, len, 1, 1, 1, NULL, NULL);
	spec_carrier_free(c);
}

Test(attention, sliding_window, .timeout = 300) { masked("tests/attention/window.yaml", 200, 200); }
Test(attention, soft_capped_scores, .timeout = 300) { masked("tests/attention/softcap.yaml", 130, 129); }
Test(attention, causal_bf16, .timeout = 300) { masked("tests/attention/causal_bf16.yaml", 130, 129); }
/* A slope per query row (a scalar row input, drawn of either sign): the
 * score hooks take each row's own slope, and a warp with a negative one
 * takes its full tiles' maxima from the scores. */
Test(attention, per_row_scale, .timeout = 300) { masked("tests/attention/row_scaled.yaml", 130, 300); }

/* A negative scale: the row maxima of full tiles come from the scores,
 * not from the dots' maxima (which hold for a slope >= 0 only: taken
 * here, they would be the smallest scores, and 2^(s - m) overflows at
 * this scale); a zero scale makes every score 0. */
Test(attention, negative_and_zero_scale, .timeout = 300)
{
	cuda_test_cache();
	Carrier *c = load_dims("tests/attention/full_bf16.yaml", 64);
	static const Define neg[] = {{"scale", "-200"}}, zero[] = {{"scale", "0"}};
	run_prm(c, "scale -200", 17, 1000, 1, 1, 1, NULL, NULL, neg, 1);
	run_prm(c, "scale 0", 17, 1000, 1, 1, 1, NULL, NULL, zero, 1);
	spec_carrier_free(c);
}

/* Rows 0..4 see no key: the finalize of the identity (out is 0/0, NaN, as
 * the reference's; lse is -inf), and the other rows are unharmed. */
Test(attention, fully_masked_rows, .timeout = 300)
{
	cuda_test_cache();
	Carrier *c = load_dims("tests/attention/empty_rows.yaml", 0);
	RunData *d = rundata_new(c, 20, 40);
	char msg[1024];
	cr_assert_eq(rundata_draw(d, 3, NULL, 0, msg, sizeof msg), 0);
	RunOpts o = {0};
	cr_assert_eq(emu_run_data(d, &o, NULL, msg, sizeof msg), 0, "%s", msg);
	for (int i = 0; i < 5; i++)
		cr_expect(isinf(run_buffer_get(&d->fin[1], i)) && run_buffer_get(&d->fin[1], i) < 0, "row %d: lse %g", i,
			  run_buffer_get(&d->fin[1], i));
	RunCheck chk;
	runcheck_run(d, &chk);
	cr_expect(chk.ok, "out %.3g, lse %.3g of tolerance", chk.out[0].worst_ratio, chk.out[1].worst_ratio);
	runcheck_free(&chk);
	rundata_free(d);
	spec_carrier_free(c);
}

Test(attention, grouped_query_heads, .timeout = 300)
{
	cuda_test_cache();
	Carrier *c = load_dims("specs/attention.yaml", 32);
	run_one(c, "gqa", 33, 70, 4, 2, 1, NULL, NULL);
	run_one(c, "mqa", 17, 129, 3, 1, 1, NULL, NULL);
	spec_carrier_free(c);
}

/* The query heads of a key/value head run as one block of rows: keys and
 * values are read once per key/value head, q once. */
Test(attention, grouped_heads_read_keys_once, .timeout = 300)
{
	cuda_test_cache();
	Carrier *c = load_dims("tests/attention/full.yaml", 64);
	run_one(c, "grouped decoding, split", 1, 1000, 8, 2, 3, NULL, NULL);
	RunData *d = rundata_new_heads(c, 3, 1000, 8, 2);
	char msg[4096] = "";
	cr_assert_eq(rundata_draw(d, 2, NULL, 0, msg, sizeof msg), 0, "%s", msg);
	RunOpts o = {.split = 1};
	EmuStats st;
	cr_assert_eq(emu_run_data(d, &o, &st, msg, sizeof msg), 0, "%s", msg);
	unsigned long long kv = 2ull * 1000 * (64 + 64) * 2, q = 8ull * 3 * 64 * 2;
	cr_expect_eq(st.bytes[0], kv + q, "%llu bytes loaded, want %llu (keys and values once, q once)", st.bytes[0],
		     kv + q);
	RunCheck chk;
	runcheck_run(d, &chk);
	cr_expect(chk.ok, "out %.3g, lse %.3g of tolerance", chk.out[0].worst_ratio, chk.out[1].worst_ratio);
	runcheck_free(&chk);
	rundata_free(d);
	spec_carrier_free(c);
}

/* Decoding: few query rows, long keys, split across blocks and combined. */
Test(attention, split_kv_decoding, .timeout = 300)
{
	cuda_test_cache();
	Carrier *c = load_dims("tests/attention/full.yaml", 64);
	static const int splits[] = {1, 2, 3, 7};
	for (int s = 0; s < 4; s++)
		run_one(c, "split", 2, 1000, 2, 1, splits[s], NULL, NULL);
	run_one(c, "split, 7 chunks for 129 keys", 1, 129, 1, 1, 7, NULL, NULL);
	/* 64 rows a block: the last block's 4 warps merge 16 rows each */
	run_one(c, "split, 80 rows", 40, 1000, 2, 1, 3, "attention:nt=128,mt=1,bn=64,pv=1,st=2", NULL);
	/* over a warp's 32 lanes; a wide scale, so that the splits' maxima and
	 * weights differ */
	static const Define wide[] = {{"scale", "2"}};
	run_prm(c, "split, 40 splits", 1, 3000, 4, 1, 40, NULL, NULL, wide, 1);
	spec_carrier_free(c);
	c = load_dims("tests/attention/full.yaml", 128); /* one stage of K and V */
	run_one(c, "split, head dim 128", 2, 1000, 2, 1, 3, NULL, NULL);
	spec_carrier_free(c);
	c = load_dims("specs/attention.yaml", 64); /* causal: splits past the diagonal are empty */
	run_one(c, "causal split", 3, 1000, 1, 1, 3, NULL, NULL);
	spec_carrier_free(c);
}

/* Decoding's variant: the warps of a block share its 16 query rows, each
 * taking a slice of every key tile, and their states merge at the end
 * (ks > 1).  The rule takes it where a kv head's query rows fit in 16 and
 * not past them; each slicing (2, 4 and 8 warps, 16 and 32 keys a warp, a
 * stage or three, two tiles of rows a warp) against the reference over
 * decoding's key lengths and splits, and the rule's over the masks: a
 * window, soft-capped scores, rows that see no key (whose slices all stay
 * empty), bands of keys with dropped tiles between them, more rows than
 * one tile. */
Test(attention, key_slices_for_decoding, .timeout = 600)
{
	cuda_test_cache();
	Carrier *c = load_dims("tests/attention/full.yaml", 64);
	char cfg[128];
	run_one(c, "the rule, decoding", 1, 1000, 8, 2, 0, NULL, cfg);
	cr_expect(strstr(cfg, "bn=128,pv=1,st=3,ks=4"), "4 query heads of a kv head take the key slices: %s", cfg);
	run_one(c, "the rule, 17 rows", 17, 100, 1, 1, 1, NULL, cfg);
	cr_expect(!strstr(cfg, "ks="), "17 rows take 64 rows a block: %s", cfg);
	static const char *const cfgs[] = {
		"attention:nt=128,mt=1,bn=64,pv=1,st=2,ks=2", "attention:nt=128,mt=1,bn=64,pv=1,st=1,ks=4",
		"attention:nt=128,mt=1,bn=128,pv=1,st=3,ks=4", "attention:nt=256,mt=1,bn=128,pv=1,st=2,ks=8",
		"attention:nt=128,mt=2,bn=64,pv=1,st=2,ks=2",
	};
	static const int lens[] = {1, 17, 129, 1000}, splits[] = {1, 2, 3, 7};
	for (size_t k = 0; k < sizeof cfgs / sizeof *cfgs; k++)
		for (int l = 0; l < 4; l++) {
			run_one(c, cfgs[k], 1, lens[l], 4, 1, splits[l], cfgs[k], cfg);
			cr_expect_str_eq(cfg, cfgs[k]);
		}
	run_one(c, "two tiles a warp, 40 rows", 10, 300, 4, 1, 3, cfgs[4], NULL);
	spec_carrier_free(c);
	static const struct {
		const char *path;
		int rows, len, heads, kv, split;
	} runs[] = {
		{"specs/attention.yaml", 3, 1000, 2, 1, 0},         {"tests/attention/window.yaml", 4, 300, 4, 2, 3},
		{"tests/attention/softcap.yaml", 2, 1000, 8, 2, 7}, {"tests/attention/empty_rows.yaml", 8, 40, 4, 2, 1},
		{"tests/attention/gaps.yaml", 1, 400, 4, 1, 2},     {"tests/attention/causal_bf16.yaml", 40, 200, 2, 2, 1},
	};
	for (size_t k = 0; k < sizeof runs / sizeof *runs; k++) {
		c = load_dims(runs[k].path, 0);
		run_one(c, runs[k].path, runs[k].rows, runs[k].len, runs[k].heads, runs[k].kv, runs[k].split,
			"attention:nt=128,mt=1,bn=64,pv=1,st=2,ks=4", cfg);
		spec_carrier_free(c);
	}
	c = load_dims("tests/attention/full_bf16.yaml", 128);
	run_one(c, "head dim 128, the rule", 1, 1000, 4, 1, 0, NULL, cfg);
	cr_expect(strstr(cfg, ",ks=4"), "%s", cfg);
	spec_carrier_free(c);
	c = load_dims("specs/attention.yaml", 256);
	run_one(c, "head dim 256, the rule", 2, 300, 2, 1, 2, NULL, cfg);
	cr_expect(strstr(cfg, ",ks=4"), "%s", cfg);
	spec_carrier_free(c);
}

/* The key slices' states take shared memory after the key loop: a
 * configuration whose states outgrow what a block may have is refused
 * before compiling, with the knobs to turn; those that fit are sized by
 * the larger of the stages and the states. */
Test(attention, key_slices_states_fit_shared_memory, .timeout = 300)
{
	cuda_test_cache();
	Carrier *c = load_dims("specs/attention.yaml", 256);
	CudaModule m;
	char msg[512];
	/* 14 warps of states: 14 x 32 lanes x (4 + 128) words, 231 KB */
	cr_assert_eq(cuda_module(c, "attention:nt=512,mt=1,bn=128,st=1,ks=8", &m, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "needs 231 KB of shared memory a block") && strstr(msg, "(ks)"), "%s", msg);
	/* 12 warps of states, over one stage of 64 keys and the Q tile of 64 rows */
	cr_assert_eq(cuda_module(c, "attention:nt=512,mt=1,bn=64,st=1,ks=4", &m, msg, sizeof msg), 0, "%s", msg);
	cr_expect_eq(cuda_smem(&m, 0), 12 * 32 * 132 * 4, "the states, over one stage of %d bytes", 64 * 264 * 4);
	cuda_module_free(&m);
	/* and the launch gives them that much (the emulator fails an access past it) */
	run_one(c, "12 warps of states", 2, 150, 4, 1, 2, "attention:nt=512,mt=1,bn=64,pv=1,st=1,ks=4", NULL);
	spec_carrier_free(c);
}

/* Keys 4 bytes past 16-byte alignment: plain loads instead of cp.async,
 * the same results. */
Test(attention, unaligned_keys_take_plain_loads, .timeout = 300)
{
	cuda_test_cache();
	Carrier *c = load_dims("tests/attention/full.yaml", 64);
	RunData *d = rundata_new(c, 70, 77);
	char msg[4096] = "";
	cr_assert_eq(rundata_draw(d, 5, NULL, 0, msg, sizeof msg), 0, "%s", msg);
	Buffer *k = &d->col[0];
	size_t bytes = k->n * k->width * run_kind_size(k->kind);
	char *mem = malloc(bytes + 16);
	void *orig = k->p;
	cr_assert(mem && ((uintptr_t)mem + 4) % 16);
	memcpy(mem + 4, orig, bytes);
	k->p = mem + 4;
	RunOpts o = {0};
	cr_assert_eq(emu_run_data(d, &o, NULL, msg, sizeof msg), 0, "%s", msg);
	RunCheck chk;
	runcheck_run(d, &chk);
	cr_expect(chk.ok, "out %.3g, lse %.3g of tolerance", chk.out[0].worst_ratio, chk.out[1].worst_ratio);
	runcheck_free(&chk);
	k->p = orig;
	free(mem);
	rundata_free(d);
	spec_carrier_free(c);
}

/* Q in shared memory, its A fragments loaded at each k-step (attn_qs):
 * 4 warps of 32 rows at head dim 128, over the shapes above, each run
 * checked to have taken that variant. */
static const char QS128[] = "attention:nt=128,mt=2,bn=64,pv=1,st=2";

static void qs_run(Carrier *c, const char *what, int rows, int len, int heads, int kv, int split)
{
	char cfg[128];
	run_one(c, what, rows, len, heads, kv, split, QS128, cfg);
	cr_expect_str_eq(cfg, QS128);
}

static void qs_lengths(const char *path)
{
	cuda_test_cache();
	Carrier *c = load_dims(path, 128);
	for (size_t l = 0; l < sizeof LENS / sizeof *LENS; l++) {
		int len = LENS[l], rows = len >= 1000 ? 3 : len == 129 ? 130 : len == 128 ? 128 : 17;
		qs_run(c, path, rows, len, 1, 1, 1);
	}
	qs_run(c, path, 129, 300, 1, 1, 1); /* a full block of 128 rows and a row past it */
	spec_carrier_free(c);
}

Test(attention, q_in_shared_causal_head_dim_128, .timeout = 600) { qs_lengths("specs/attention.yaml"); }
Test(attention, q_in_shared_full_head_dim_128_bf16, .timeout = 600) { qs_lengths("tests/attention/full_bf16.yaml"); }

static void qs_masked(const char *path, int rows, int len)
{
	cuda_test_cache();
	Carrier *c = load_dims(path, 128);
	qs_run(c, path, rows, len, 1, 1, 1);
	spec_carrier_free(c);
}

Test(attention, q_in_shared_sliding_window, .timeout = 300) { qs_masked("tests/attention/window.yaml", 200, 200); }
Test(attention, q_in_shared_soft_capped, .timeout = 300) { qs_masked("tests/attention/softcap.yaml", 130, 129); }
Test(attention, q_in_shared_causal_bf16, .timeout = 300) { qs_masked("tests/attention/causal_bf16.yaml", 130, 129); }
Test(attention, q_in_shared_per_row_scale, .timeout = 300) { qs_masked("tests/attention/row_scaled.yaml", 130, 300); }
/* rows 0..4 see no key: the identity's finalize, as the reference's */
Test(attention, q_in_shared_fully_masked_rows, .timeout = 300) { qs_masked("tests/attention/empty_rows.yaml", 20, 40); }

Test(attention, q_in_shared_grouped_heads_and_split, .timeout = 300)
{
	cuda_test_cache();
	Carrier *c = load_dims("specs/attention.yaml", 128);
	qs_run(c, "gqa", 33, 70, 4, 2, 1);
	qs_run(c, "mqa", 17, 129, 3, 1, 1);
	qs_run(c, "causal split", 3, 1000, 1, 1, 3);
	spec_carrier_free(c);
	c = load_dims("tests/attention/full.yaml", 128);
	qs_run(c, "grouped decoding, split", 1, 1000, 8, 2, 3);
	spec_carrier_free(c);
}

/* Pipeline stages: one (FlashAttention-2's order: V loads during the
 * scores, the next K during P V) and three (a ring with two tiles in
 * flight, cp.async groups counted per tile), against the reference with
 * masks, tile skipping, grouped heads and key splits. */
static void staged(const char *path, int d, const char *config)
{
	char cfg[128];
	Carrier *c = load_dims(path, d);
	run_one(c, path, 130, 129, 1, 1, 1, config, cfg);
	cr_expect_str_eq(cfg, config);
	run_one(c, path, 3, 1000, 1, 1, 1, config, NULL);
	run_one(c, path, 33, 70, 4, 2, 1, config, NULL);
	run_one(c, path, 2, 1000, 2, 1, 3, config, NULL);
	spec_carrier_free(c);
}

Test(attention, pipeline_stages, .timeout = 600)
{
	cuda_test_cache();
	staged("specs/attention.yaml", 64, "attention:nt=128,mt=1,bn=32,pv=1,st=1");
	staged("specs/attention.yaml", 64, "attention:nt=128,mt=1,bn=32,pv=1,st=3");
	staged("tests/attention/window.yaml", 64, "attention:nt=128,mt=1,bn=64,pv=1,st=3");
	staged("tests/attention/full_bf16.yaml", 128, "attention:nt=128,mt=2,bn=64,pv=1,st=3");
	/* two warps: each thread has the Q tile and two K and V tiles in flight, 80 copies */
	Carrier *c = load_dims("tests/attention/full_bf16.yaml", 128);
	run_one(c, "two warps, three stages", 70, 300, 1, 1, 1, "attention:nt=64,mt=2,bn=64,pv=1,st=3", NULL);
	spec_carrier_free(c);
}

/* A mask that drops bands of keys: the key-tile loop skips the dropped
 * tiles between live ones (each pipeline looks ahead past them), and
 * reads only the live tiles' keys and values. */
Test(attention, dropped_tiles_between_live_ones, .timeout = 300)
{
	cuda_test_cache();
	Carrier *c = load_dims("tests/attention/gaps.yaml", 64);
	for (int st = 1; st <= 3; st++) {
		char config[64];
		snprintf(config, sizeof config, "attention:nt=128,mt=1,bn=32,pv=1,st=%d", st);
		run_one(c, config, 130, 400, 2, 1, 1, config, NULL);
		run_one(c, config, 3, 400, 1, 1, 3, config, NULL);
		RunData *d = rundata_new_heads(c, 20, 400, 1, 1);
		char msg[4096] = "";
		cr_assert_eq(rundata_draw(d, 2, NULL, 0, msg, sizeof msg), 0, "%s", msg);
		EmuStats es;
		cr_assert_eq(emu_run_data(d, &(RunOpts){.split = 1, .config = config}, &es, msg, sizeof msg), 0, "%s", msg);
		/* live tiles of 32 keys: [0, 64), [160, 224), [320, 400); 208 keys, and 20 rows of q */
		unsigned long long kv = 208ull * (64 + 64) * 2, q = 20ull * 64 * 2;
		cr_expect_eq(es.bytes[0], kv + q, "%s: %llu bytes loaded, want %llu", config, es.bytes[0], kv + q);
		rundata_free(d);
	}
	spec_carrier_free(c);
}

/* Stages are asked for up to a number: a variant keeps as many as fit in
 * the 227 KB a block may opt in to, and its shared memory is planned so. */
Test(attention, stages_that_do_not_fit_are_dropped)
{
	static const struct {
		int d;
		const char *config;
		int st, smem;
	} cases[] = {
		{64, "attention:nt=128,mt=1,bn=64,st=3", 3, 3 * 64 * 2 * 36 * 4},
		{64, "attention:nt=128,mt=1,bn=64,st=1", 1, 64 * 2 * 36 * 4},
		{64, "attention:nt=256,mt=2,bn=64,st=1", 1, 256 * 36 * 4}, /* the Q tile is the larger */
		{128, "attention:nt=128,mt=2,bn=64,st=3", 3, (3 * 64 * 2 * 68 + 128 * 68) * 4},
		{256, "attention:nt=128,mt=1,bn=128,st=3", 1, 128 * 2 * 132 * 4},
		{256, "attention:nt=128,mt=1,bn=64,st=3", 3, 3 * 64 * 2 * 132 * 4},
	};
	for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
		Carrier *c = load_dims("specs/attention.yaml", cases[k].d);
		CudaModule m;
		char msg[512], cfg[128];
		cr_assert_eq(cuda_module(c, cases[k].config, &m, msg, sizeof msg), 0, "%s", msg);
		cr_assert_eq(m.nvar, 1);
		cr_expect_eq(m.var[0].st, cases[k].st, "%s at head dim %d", cases[k].config, cases[k].d);
		cr_expect_eq(cuda_smem(&m, 0), (unsigned)cases[k].smem, "%s at head dim %d", cases[k].config, cases[k].d);
		variant_str(&m.var[0], cfg, sizeof cfg);
		cr_expect_eq(cuda_find_variant(&m, c, cases[k].config), 0, "the asked-for configuration finds %s", cfg);
		char body[64];
		snprintf(body, sizeof body, ", %d, 1>(A)", cases[k].st); /* the stages, then one key slice */
		cr_expect(strstr(m.src, body), "the kernel keeps %d stages", cases[k].st);
		cuda_module_free(&m);
		spec_carrier_free(c);
	}
}

/* The tuning space: every default variant, each with one to three stages
 * and with half its keys per tile (decoding's also with half its key
 * slices), every one a configuration that cuda_module builds alone. */
Test(attention, tuning_space_adds_stages_and_key_tiles)
{
	Carrier *c = load_dims("specs/attention.yaml", 64);
	CudaModule def, sp;
	char msg[512], cfg[128];
	cr_assert_eq(cuda_module(c, NULL, &def, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(cuda_module_space(c, &sp, msg, sizeof msg), 0, "%s", msg);
	cr_expect_eq(sp.nvar, def.nvar * 4 + 1, "%d defaults: each with 1, 2 (its own), 3 stages and other keys a tile, "
		     "decoding's with half its slices too", def.nvar);
	int seen[4] = {0}, half = 0, slices[9] = {0};
	for (int v = 0; v < sp.nvar; v++) {
		seen[sp.var[v].st]++;
		half += sp.var[v].bn == 32;
		slices[sp.var[v].ks]++;
		variant_str(&sp.var[v], cfg, sizeof cfg);
		cr_expect_eq(cuda_find_variant(&sp, c, cfg), v, "%s", cfg);
		if (v < def.nvar)
			cr_expect_eq(cuda_find_variant(&def, c, cfg), v, "the defaults come first: %s", cfg);
		CudaModule one;
		cr_assert_eq(cuda_module(c, cfg, &one, msg, sizeof msg), 0, "%s: %s", cfg, msg);
		cr_expect_eq(cuda_find_variant(&one, c, cfg), 0, "%s", cfg);
		cuda_module_free(&one);
	}
	cr_expect(seen[1] && seen[3] && seen[2] > seen[1], "stages 1: %d, 2: %d, 3: %d", seen[1], seen[2], seen[3]);
	cr_expect_eq(half, def.nvar - 1);
	cr_expect(slices[4] == 4 && slices[2] == 1 && slices[1] == sp.nvar - 5, "ks 1: %d, 2: %d, 4: %d", slices[1], slices[2],
		  slices[4]);
	cr_expect_eq(cuda_count(sp.src, NULL, "attn_fwd<"), sp.nvar);
	cuda_module_free(&def);
	cuda_module_free(&sp);
	spec_carrier_free(c);
}

/* Attention on e4m3 q, k and v (tests/attention/fp8_descale.yaml: causal,
 * descale factors as params) below sm_90a takes the mma.sync template, q,
 * k and v converted to f16 as they come into shared memory (every e4m3
 * value is an f16 one) and P rounded to f16: against the float64
 * reference at head dims 64 and 128, odd lengths, grouped heads, decoding
 * split across blocks, and rows the mask empties, as the explain says
 * (test_attn90.c runs the Hopper template's e4m3 path). */
Test(attention, fp8_inputs_as_f16_on_mma_sync, .timeout = 600)
{
	cuda_test_cache();
	static const int dims[] = {64, 128};
	for (int i = 0; i < 2; i++) {
		Carrier *c = load_dims("tests/attention/fp8_descale.yaml", dims[i]);
		CudaModule m;
		char msg[512], what[32];
		cr_assert_eq(cuda_module_for(c, NULL, "sm_89", 0, &m, msg, sizeof msg), 0, "%s", msg);
		cr_expect_eq(m.base, FAM_ATTN, "%s", m.explain);
		cr_expect(strstr(m.explain, "(tensor cores, f8e4m3 inputs as f16, ") && !strstr(m.explain, "Hopper"), "%s",
			  m.explain);
		cuda_module_free(&m);
		snprintf(what, sizeof what, "fp8 d=%d", dims[i]);
		run_one(c, what, 17, 1, 1, 1, 1, NULL, NULL);
		run_one(c, what, 130, 129, 1, 1, 1, NULL, NULL);
		run_one(c, what, 33, 70, 4, 2, 1, NULL, NULL);
		run_one(c, what, 1, 1000, 8, 2, 3, NULL, NULL);
		spec_carrier_free(c);
	}
	char *text = cache_read("tests/attention/fp8_descale.yaml", NULL);
	cr_assert(text);
	char *mask = strstr(text, "mask: j <= i\n");
	cr_assert(mask);
	char spec[4096];
	snprintf(spec, sizeof spec, "%.*smask: j <= i - 5\n%s", (int)(mask - text), text, mask + strlen("mask: j <= i\n"));
	free(text);
	Carrier *c = text_ok(spec);
	RunData *d = rundata_new(c, 20, 40);
	char msg[1024];
	cr_assert_eq(rundata_draw(d, 3, NULL, 0, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(emu_run_data(d, &(RunOpts){0}, NULL, msg, sizeof msg), 0, "%s", msg);
	for (int r = 0; r < 5; r++)
		cr_expect(run_buffer_get(&d->fin[1], r) == -INFINITY && run_buffer_get(&d->fin[0], r * 64) == 0,
			  "row %d, which sees no key: lse %g, out %g", r, run_buffer_get(&d->fin[1], r),
			  run_buffer_get(&d->fin[0], r * 64));
	RunCheck chk;
	runcheck_run(d, &chk);
	cr_expect(chk.ok, "out %.3g, lse %.3g of tolerance", chk.out[0].worst_ratio, chk.out[1].worst_ratio);
	runcheck_free(&chk);
	rundata_free(d);
	spec_carrier_free(c);
}

/* A lawful merge that is not the contract's: refused with the reason, and
 * run correctly by the generic templates. */
Test(attention, buggy_merge_falls_back, .timeout = 300)
{
	cuda_test_cache();
	Carrier *c = load_dims("tests/attention/buggy_merge.yaml", 0);
	CudaModule m;
	char msg[512], cfg[128];
	cr_assert_eq(cuda_module(c, NULL, &m, msg, sizeof msg), 0, "%s", msg);
	cr_expect_neq(m.base, FAM_ATTN);
	cr_expect(strstr(m.explain, "not the attention contract: the merge of 'l' differs"), "%s", m.explain);
	cr_expect(strstr(m.explain, "(disproved: region ") && strstr(m.explain, "a={m: "), "%s", m.explain);
	cuda_module_free(&m);
	CudaAttn at;
	cr_expect_eq(cuda_attn_match(c, &at, msg, sizeof msg), -1);
	run_one(c, "fallback", 9, 77, 2, 1, 1, NULL, cfg);
	cr_expect(strncmp(cfg, "attention", 9), "%s", cfg);
	spec_carrier_free(c);
}

/* A merge that leaves the contract only past a threshold of l (halves
 * it above 1000, which sums of a thousand keys reach): the prover finds
 * the region but no folded state in it, and the random states, which span
 * l's decades, refuse it; the reordered contract is proved. */
Test(attention, a_merge_off_past_a_threshold_is_not_the_contract)
{
	CudaAttn at;
	char msg[512];
	Carrier *c = load_dims("tests/attention/threshold_merge.yaml", 0);
	cr_expect_eq(cuda_attn_match(c, &at, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "the merge of 'l' differs from the contract's"), "%s", msg);
	cr_expect(strstr(msg, "the prover left 'l' unknown: l differs in region a.m > b.m, a.l > 1000"), "%s", msg);
	spec_carrier_free(c);
	c = text_ok("carrier: reordered\ndims: {d: 64}\nparams: {scale: f32}\nrow: {q: 'f16[d]'}\n"
		    "column: {k: 'f16[d]', v: 'f16[d]'}\nlet:\n  s: dot(q, k) * scale\n"
		    "state: {m: f32, l: f32, o: 'f32[d]'}\nidentity: {m: -inf, l: 0, o: 0}\nlift: {m: s, l: 1, o: v}\n"
		    "merge:\n  m: max(a.m, b.m)\n  l: b.l * exp(b.m - m) + a.l * exp(a.m - m)\n"
		    "  o: exp(b.m - m) * b.o + exp(a.m - m) * a.o\nfinalize: {out: o / l}\nlaws: [commutative]\n");
	cr_expect_eq(cuda_attn_match(c, &at, msg, sizeof msg), 0, "%s", msg);
	cr_expect(strstr(at.evidence, "merge proved equal to the contract's"), "%s", at.evidence);
	spec_carrier_free(c);
}

/* The contract's merge as users write it: b's terms first, factors
 * swapped, an fma, a `* 1`, exp(a.m - max(a.m, b.m)) spelled out, or the
 * max resolved by a where: each proved equal, and the explain says so. */
static const char *const REWRITTEN[][2] = {
	{"b.l * exp(b.m - m) + a.l * exp(a.m - m)", "exp(b.m - m) * b.o + exp(a.m - m) * a.o"},
	{"fma(a.l, exp(a.m - m), b.l * exp(b.m - m))", "fma(exp(b.m - m), b.o, a.o * exp(a.m - m))"},
	{"a.l * exp(a.m - m) * 1 + b.l * exp(b.m - m)", "a.o * exp(a.m - m) + 1 * b.o * exp(b.m - m)"},
	{"a.l * exp(a.m - max(a.m, b.m)) + b.l * exp(b.m - max(b.m, a.m))",
	 "a.o * exp(a.m - max(a.m, b.m)) + b.o * exp(b.m - max(a.m, b.m))"},
	{"where(a.m > b.m, a.l + b.l * exp(b.m - a.m), a.l * exp(a.m - b.m) + b.l)",
	 "where(a.m > b.m, a.o + b.o * exp(b.m - a.m), a.o * exp(a.m - b.m) + b.o)"},
};

static Carrier *with_merge(const char *l, const char *o)
{
	char text[1024];
	snprintf(text, sizeof text,
		 "carrier: rewritten\ndims: {d: 64}\nparams: {scale: f32}\nrow: {q: 'f16[d]'}\n"
		 "column: {k: 'f16[d]', v: 'f16[d]'}\nlet:\n  s: dot(q, k) * scale\nmask: j <= i\n"
		 "state: {m: f32, l: f32, o: 'f32[d]'}\nidentity: {m: -inf, l: 0, o: 0}\nlift: {m: s, l: 1, o: v}\n"
		 "merge:\n  m: max(a.m, b.m)\n  l: %s\n  o: %s\nfinalize: {out: o / l}\nlaws: [commutative]\n", l, o);
	Carrier *c = text_ok(text);
	return c;
}

Test(attention, rewritten_merges_are_proved_the_contract)
{
	cuda_test_cache();
	for (size_t k = 0; k < sizeof REWRITTEN / sizeof *REWRITTEN; k++) {
		Carrier *c = with_merge(REWRITTEN[k][0], REWRITTEN[k][1]);
		CudaModule m;
		char msg[512];
		cr_assert_eq(cuda_module(c, NULL, &m, msg, sizeof msg), 0, "%s", msg);
		cr_expect_eq(m.base, FAM_ATTN, "%s: %s", REWRITTEN[k][0], m.explain);
		cr_expect(strstr(m.explain, "merge proved equal to the contract's (m -> m, l -> l, o -> o; "),
			  "%s: %s", REWRITTEN[k][0], m.explain);
		cr_expect(!strstr(m.explain, "not a proof"), "%s", m.explain);
		cuda_module_free(&m);
		spec_carrier_free(c);
	}
}

/* Rescales swapped (a.l by b's factor): disproved, with the prover's
 * witness (states folded from rows) in the reason. */
Test(attention, a_swapped_rescale_is_disproved)
{
	Carrier *c = with_merge("a.l * exp(b.m - m) + b.l * exp(a.m - m)", "a.o * exp(a.m - m) + b.o * exp(b.m - m)");
	CudaAttn at;
	char msg[512];
	cr_expect_eq(cuda_attn_match(c, &at, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "the merge of 'l' differs from the contract's (disproved: region "), "%s", msg);
	cr_expect(strstr(msg, "a={m: ") && strstr(msg, "b={m: ") && strstr(msg, "by the contract's"), "%s", msg);
	spec_carrier_free(c);
}

/* Why a carrier is not attention, in its own terms: a scalar state is not
 * measured against the contract; a vector one names its own counts. */
Test(attention, explain_names_the_carriers_own_shape)
{
	cuda_test_cache();
	static const char *spec[] = {"specs/sum.yaml", "specs/o_lse.yaml"};
	static const char *want[] = {"template rowreduce (generic): scalar state fields, so no attention",
				     "which has 3 state fields (m, l, o) or 1 to 3 (a weighted sum), no element inputs and "
				     "no map outputs (this one: 2, 2, 0)"};
	for (int s = 0; s < 2; s++) {
		Carrier *c = load_ok(spec[s]);
		CudaModule m;
		char msg[512];
		cr_assert_eq(cuda_module(c, NULL, &m, msg, sizeof msg), 0, "%s", msg);
		cr_expect(strstr(m.explain, want[s]), "%s: %s", spec[s], m.explain);
		cuda_module_free(&m);
		spec_carrier_free(c);
	}
}

Test(attention, contract_evidence_and_explain)
{
	Carrier *c = load_dims("specs/attention.yaml", 0);
	CudaModule m;
	char msg[512];
	cr_assert_eq(cuda_module(c, NULL, &m, msg, sizeof msg), 0, "%s", msg);
	cr_expect(strstr(m.explain, "template attention"), "%s", m.explain);
	cr_expect(strstr(m.explain, "structurally equal to the contract's (m -> m, l -> l, o -> o)"), "%s", m.explain);
	cr_expect(strstr(m.explain, "whole tiles skipped"), "%s", m.explain);
	cuda_module_free(&m);
	spec_carrier_free(c);
	/* the same merge written differently, the fields in another order and
	 * named otherwise: proved, and said so */
	c = text_ok("carrier: t\ndims: {d: 16}\nparams: {scale: f32}\nrow:\n  q: f16[d]\ncolumn:\n  k: f16[d]\n  v: f16[d]\n"
		    "state:\n  w: f32[d]\n  mx: f32\n  z: f32\nidentity: {w: 0, mx: -inf, z: 0}\n"
		    "lift:\n  w: v\n  mx: dot(q, k) * scale\n  z: 1\n"
		    "merge:\n  mx: max(b.mx, a.mx)\n  z: exp(a.mx - mx) * a.z + exp(b.mx - mx) * b.z\n"
		    "  w: exp(a.mx - mx) * a.w + exp(b.mx - mx) * b.w\nfinalize: {out: w / z}\n");
	CudaAttn at;
	cr_assert_eq(cuda_attn_match(c, &at, msg, sizeof msg), 0, "%s", msg);
	cr_expect(strstr(at.evidence, "merge proved equal to the contract's (m -> mx, l -> z, o -> w; "), "%s", at.evidence);
	spec_carrier_free(c);
}

/* The grid's order (attn_tile_of, run in the emulator on the module's own
 * source): every (query tile, kv head) once per split; heads in groups
 * whose keys and values take at most 32 MB; within a group the query tiles
 * from the last to the first, each across the group's heads. */
Test(attention, grid_runs_heaviest_tiles_first_across_heads)
{
	cuda_test_cache();
	Carrier *c = load_dims("specs/attention.yaml", 64);
	CudaModule m;
	char msg[4096];
	cr_assert_eq(cuda_module(c, NULL, &m, msg, sizeof msg), 0, "%s", msg);
	size_t n = strlen(m.src);
	static const char probe[] =
		"extern \"C\" void order_emu(const void *p) {\n"
		"  const Args &A = *(const Args *)p;\n"
		"  int tiles = A.chunk, *o = (int *)A.ws;\n"
		"  if (threadIdx.x) return;\n"
		"  for (int b = 0; b < A.kv_heads * tiles * A.split + 3; b++) {\n"
		"    int qt = -1, kh = -1;\n"
		"    bool in = attn_tile_of<64, 64>(A, (unsigned)b, tiles, qt, kh);\n"
		"    o[3 * b] = in, o[3 * b + 1] = qt, o[3 * b + 2] = kh;\n"
		"  }\n"
		"}\n";
	char *src = malloc(n + sizeof probe);
	memcpy(src, m.src, n);
	memcpy(src + n, probe, sizeof probe);
	EmuLib *l;
	cr_assert_eq(emu_open(src, &l, msg, sizeof msg), 0, "%s", msg);
	static const struct {
		int kv, len, tiles, split, group;
	} cases[] = {
		{16, 8192, 64, 1, 16}, /* 16 heads of 2 MB: one group */
		{16, 65536, 64, 1, 2}, /* 16 MB a head: two at a time */
		{5, 32768, 7, 3, 4},   /* 8 MB a head: groups of 4, then 1 */
		{3, 1 << 22, 2, 1, 1}, /* 1 GB a head: one at a time */
	};
	for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
		int kv = cases[k].kv, tiles = cases[k].tiles, split = cases[k].split, nb = kv * tiles * split + 3;
		int *o = calloc(3 * nb, sizeof *o), *seen = calloc(kv * tiles, sizeof *seen);
		CudaArgs a = {.ws = o, .rows = 1, .len = cases[k].len, .split = split, .chunk = tiles, .heads = kv,
			      .kv_heads = kv};
		cr_assert_eq(emu_launch_kernel(l, "order", 1, 32, 0, &a, NULL, msg, sizeof msg), 0, "%s", msg);
		for (int b = 0; b < nb; b++) {
			int in = o[3 * b], qt = o[3 * b + 1], kh = o[3 * b + 2];
			if (b >= kv * tiles * split) {
				cr_expect_not(in, "case %zu: block %d past the runs exits", k, b);
				continue;
			}
			cr_assert(in && qt >= 0 && qt < tiles && kh >= 0 && kh < kv, "case %zu block %d: %d %d", k, b, qt, kh);
			seen[kh * tiles + qt]++;
			int r = b / split, g = cases[k].group, h0 = r / (g * tiles) * g, hn = kv - h0 < g ? kv - h0 : g;
			cr_expect_eq(kh, h0 + r % (g * tiles) % hn, "case %zu block %d: head", k, b);
			cr_expect_eq(qt, tiles - 1 - r % (g * tiles) / hn, "case %zu block %d: the heaviest tiles first", k, b);
		}
		for (int t = 0; t < kv * tiles; t++)
			cr_expect_eq(seen[t], split, "case %zu: tile %d of head %d run once a split", k, t % tiles, t / tiles);
		free(o);
		free(seen);
	}
	emu_close(l);
	free(src);
	cuda_module_free(&m);
	spec_carrier_free(c);
}

/* Key splits of one tile of 16 rows a warp (decoding's variants) merge
 * inside the forward kernel: one launch, and a counter per query tile
 * after the partial states that the launch zeroes; variants of more tiles
 * a warp launch the combine kernel after them.  (The emulator fails any
 * run whose kernels leave the counters other than zero.) */
Test(attention, decoding_splits_merge_in_one_launch)
{
	Carrier *c = load_dims("specs/attention.yaml", 64);
	CudaModule m;
	char msg[512];
	cr_assert_eq(cuda_module(c, NULL, &m, msg, sizeof msg), 0, "%s", msg);
	int seen[3] = {0};
	for (int v = 0; v < m.nvar; v++) {
		const Variant *x = &m.var[v];
		int bm = cuda_attn_rows(x), heads = 8, rows = 4 * 3, split = 5;
		CudaPlan p;
		cuda_plan_h(&m, v, rows, 4000, heads, split, &p);
		size_t partials = (size_t)heads * rows * split * (64 + 2) * sizeof(float);
		seen[x->mt]++;
		if (x->mt == 1) {
			cr_expect_eq(p.nk, 1, "variant %d: one launch", v);
			cr_expect_eq(p.zero_at, partials);
			cr_expect_eq(p.zero_bytes, (size_t)heads * ((rows + bm - 1) / bm) * sizeof(int));
			cr_expect_eq(p.ws_bytes, p.zero_at + p.zero_bytes);
		} else {
			cr_expect_eq(p.nk, 2, "variant %d: the forward kernel, then the combine", v);
			cr_expect_eq(p.zero_bytes, 0);
			cr_expect_eq(p.ws_bytes, partials);
		}
		cuda_plan_h(&m, v, rows, 4000, heads, 1, &p);
		cr_expect(p.nk == 1 && p.ws_bytes == 0 && p.zero_bytes == 0, "variant %d unsplit", v);
	}
	cr_expect(seen[1] && seen[2], "variants of both kinds among the defaults");
	cuda_module_free(&m);
	spec_carrier_free(c);
}

/* The merge of key splits does not depend on the variant: one combine
 * kernel serves every variant of the module, each named by them all. */
Test(attention, one_combine_for_every_variant)
{
	Carrier *c = load_dims("specs/attention.yaml", 128);
	CudaModule m;
	char msg[512], first[3][64], names[3][64];
	cr_assert_eq(cuda_module(c, NULL, &m, msg, sizeof msg), 0, "%s", msg);
	cr_assert_geq(m.nvar, 2);
	cr_expect_eq(cuda_count(m.src, NULL, "attn_combine<"), 1, "one combine kernel for %d variants", m.nvar);
	cr_assert_eq(cuda_kernel_names(&m, 0, first), 2);
	for (int v = 1; v < m.nvar; v++) {
		cr_assert_eq(cuda_kernel_names(&m, v, names), 2);
		cr_expect_str_eq(names[1], first[1]);
		cr_expect_str_neq(names[0], first[0]);
	}
	cuda_module_free(&m);
	spec_carrier_free(c);
}

/* mma.sync m16n8k16 on the emulator: fragments laid out as in the PTX ISA
 * (lane = 4 * groupID + tig) give D = A B + C exactly for small integers. */
static const char MMA_KERNEL[] =
	"extern \"C\" void mma_emu(const void *p) {\n"
	"  const float *A = (const float *)p, *B = A + 256; float *D = (float *)p + 384;\n"
	"  int lane = threadIdx.x, g = lane / 4, t = lane % 4;\n"
	"  unsigned a[4], b[2]; float c[4], d[4];\n"
	"  for (int r = 0; r < 4; r++) {\n"
	"    int row = g + 8 * (r & 1), col = 2 * t + 8 * (r >> 1);\n"
	"    a[r] = emu_float_to_half(A[row * 16 + col]) | (unsigned)emu_float_to_half(A[row * 16 + col + 1]) << 16;\n"
	"  }\n"
	"  for (int r = 0; r < 2; r++) {\n"
	"    int k = 2 * t + 8 * r;\n"
	"    b[r] = emu_float_to_half(B[k * 8 + g]) | (unsigned)emu_float_to_half(B[(k + 1) * 8 + g]) << 16;\n"
	"  }\n"
	"  for (int r = 0; r < 4; r++) c[r] = (float)(g + 8 * (r >> 1)) - (float)(2 * t + (r & 1));\n"
	"  emu_mma_16816(d, a, b, c, 0);\n"
	"  for (int r = 0; r < 4; r++) D[(g + 8 * (r >> 1)) * 8 + 2 * t + (r & 1)] = d[r];\n"
	"}\n";

Test(attention, emulated_mma_fragment_layout)
{
	cuda_test_cache();
	EmuLib *l;
	char msg[4096];
	cr_assert_eq(emu_open(MMA_KERNEL, &l, msg, sizeof msg), 0, "%s", msg);
	float buf[384 + 128];
	for (int k = 0; k < 256; k++)
		buf[k] = (float)((k * 7) % 11) - 5;
	for (int k = 0; k < 128; k++)
		buf[256 + k] = (float)((k * 5) % 9) - 4;
	cr_assert_eq(emu_launch_kernel(l, "mma", 1, 32, 0, buf, NULL, msg, sizeof msg), 0, "%s", msg);
	for (int r = 0; r < 16; r++)
		for (int col = 0; col < 8; col++) {
			float want = (float)r - (float)col;
			for (int k = 0; k < 16; k++)
				want += buf[r * 16 + k] * buf[256 + k * 8 + col];
			cr_expect_eq(buf[384 + r * 8 + col], want, "D[%d][%d] = %g, want %g", r, col, buf[384 + r * 8 + col],
				     want);
		}
	emu_close(l);
}

/* mma.sync m16n8k32 on e4m3 (the emulator's kind 2), its fragments built
 * here from the PTX ISA's layout: A's a[r] = row g + 8 (r & 1), columns
 * 4t + 16 (r >> 1) .. + 3; B's b[r] = rows 4t + 16 r .. + 3, column g; a
 * register's low byte the first.  A: 16 x 32, B: 32 x 8 bytes, D 16 x 8. */
static const char MMA8_KERNEL[] =
	"extern \"C\" void mma8_emu(const void *p) {\n"
	"  const unsigned char *A = (const unsigned char *)p, *B = A + 512; float *D = (float *)(A + 768);\n"
	"  int lane = threadIdx.x, g = lane / 4, t = lane % 4;\n"
	"  unsigned a[4], b[2]; float c[4], d[4];\n"
	"  for (int r = 0; r < 4; r++) {\n"
	"    const unsigned char *x = A + (g + 8 * (r & 1)) * 32 + 4 * t + 16 * (r >> 1);\n"
	"    a[r] = x[0] | (unsigned)x[1] << 8 | (unsigned)x[2] << 16 | (unsigned)x[3] << 24;\n"
	"  }\n"
	"  for (int r = 0; r < 2; r++) {\n"
	"    int k = 4 * t + 16 * r;\n"
	"    b[r] = B[k * 8 + g] | (unsigned)B[(k + 1) * 8 + g] << 8 | (unsigned)B[(k + 2) * 8 + g] << 16 |\n"
	"           (unsigned)B[(k + 3) * 8 + g] << 24;\n"
	"  }\n"
	"  for (int r = 0; r < 4; r++) c[r] = (float)(g + 8 * (r >> 1)) - (float)(2 * t + (r & 1));\n"
	"  emu_mma_16816(d, a, b, c, 2);\n"
	"  for (int r = 0; r < 4; r++) D[(g + 8 * (r >> 1)) * 8 + 2 * t + (r & 1)] = d[r];\n"
	"}\n";

Test(attention, emulated_mma_e4m3_fragment_layout)
{
	cuda_test_cache();
	EmuLib *l;
	char msg[4096];
	cr_assert_eq(emu_open(MMA8_KERNEL, &l, msg, sizeof msg), 0, "%s", msg);
	_Alignas(16) unsigned char buf[768 + 512];
	double a[512], b[256];
	for (int k = 0; k < 512; k++) /* values up to 15 / 4 in magnitude, distinct in their places */
		a[k] = (double)((k * 7) % 31 - 15) / 4, buf[k] = run_f8e4m3_bits(a[k]);
	for (int k = 0; k < 256; k++)
		b[k] = (double)((k * 5) % 29 - 14) / 2, buf[512 + k] = run_f8e4m3_bits(b[k]);
	cr_assert_eq(emu_launch_kernel(l, "mma8", 1, 32, 0, buf, NULL, msg, sizeof msg), 0, "%s", msg);
	for (int r = 0; r < 16; r++)
		for (int col = 0; col < 8; col++) {
			double want = (double)r - (double)col;
			for (int k = 0; k < 32; k++)
				want += a[r * 32 + k] * b[k * 8 + col];
			float got;
			memcpy(&got, buf + 768 + 4 * (r * 8 + col), 4);
			cr_expect_eq(got, (float)want, "D[%d][%d] = %g, want %g", r, col, got, want);
		}
	emu_close(l);
}

/* Shared memory per default variant as the template lays it out: two
 * stages of K and V where they fit, the Q tile over them; cuda_pick keeps
 * to what the device allows. */
Test(attention, shared_memory_per_variant)
{
	Carrier *c = load_dims("specs/attention.yaml", 256);
	CudaModule m;
	char msg[256];
	cr_assert_eq(cuda_module(c, NULL, &m, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(m.nvar, 3);
	/* 16 keys x (132 + 132) words a stage, two; Q: 64 or 128 rows x 132
	 * words; decoding's: two stages of 64 keys, over the 3 x 32 lanes x
	 * (4 + 128) words of its key slices' states */
	cr_assert_eq(cuda_smem(&m, 0), 2 * 16 * 264 * 4);
	cr_assert_eq(cuda_smem(&m, 1), 128 * 132 * 4);
	cr_assert_eq(m.var[2].ks, 4);
	cr_assert_eq(cuda_smem(&m, 2), 2 * 64 * 264 * 4);
	cr_assert_eq(cuda_pick(&m, 16, 3000, 1), 2, "16 rows: decoding's");
	cr_assert_eq(cuda_pick(&m, 17, 3000, 4), 0, "17 rows: 64 a block");
	/* one block of 132 KB an SM: 8 kv heads split for one wave of 128
	 * blocks, neither two of 264 nor 136, whose last 4 would run alone */
	cr_expect_eq(cuda_attn_split(&m, 2, 4, 32768, 8, 132), 16);
	cr_expect_eq(cuda_attn_split(&m, 0, 4, 32768, 8, 132), 33, "two blocks of 33 KB an SM");
	CudaPlan p;
	cuda_plan_h(&m, 1, 200, 300, 2, 1, &p);
	cr_assert_eq(p.k[0].smem, 128 * 132 * 4, "the plan carries the bytes");
	cr_assert_eq(cuda_pick(&m, 200, 300, 1), 1, "128 query rows for 200 rows");
	m.smem_max = 48 * 1024;
	cr_assert_eq(cuda_pick(&m, 200, 300, 1), 0, "64 query rows where 128 would not fit the device");
	cr_assert_eq(cuda_pick(&m, 4, 3000, 1), 0, "and where decoding's would not");
	cr_assert_not(cuda_fits(&m, 1, msg, sizeof msg));
	cr_assert(strstr(msg, "needs 67584 bytes of shared memory per block; the device allows 49152"), "%s", msg);
	cuda_module_free(&m);
	spec_carrier_free(c);
	c = load_dims("specs/attention.yaml", 128);
	cr_assert_eq(cuda_module(c, NULL, &m, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(m.nvar, 4);
	for (int v = 0; v < m.nvar; v++) {
		char cfg[64];
		variant_str(&m.var[v], cfg, sizeof cfg);
		/* 128 rows x 68 words of Q kept after the stages where it stays in
		 * shared memory; decoding's: three stages of 128 keys */
		int dec = m.var[v].ks > 1, st = dec ? 3 : 2, bn = dec ? 128 : 64;
		unsigned want = st * bn * 136 * 4 + (!strcmp(cfg, QS128) ? 128 * 68 * 4 : 0);
		cr_assert_eq(m.var[v].bn, bn, "%s", cfg);
		cr_assert_eq(m.var[v].st, st, "%s", cfg);
		cr_assert_eq(cuda_smem(&m, v), want, "head dim 128, %s: %d stages of %d keys", cfg, st, bn);
	}
	char cfg[64];
	variant_str(&m.var[cuda_pick(&m, 200, 300, 1)], cfg, sizeof cfg);
	cr_expect_str_eq(cfg, QS128, "32 rows a warp, Q in shared memory, for 200 rows at head dim 128");
	cr_expect_eq(cuda_pick(&m, 4, 32768, 1), 3, "4 rows: decoding's");
	cr_expect_eq(cuda_attn_split(&m, 3, 4, 32768, 8, 132), 16, "one block of 204 KB an SM");
	cr_expect_eq(cuda_attn_split(&m, 0, 4, 32768, 8, 132), 33, "two blocks of 68 KB an SM");
	cuda_module_free(&m);
	/* a device of 99 KB a block (sm_86): decoding's in two stages of 64
	 * keys (68 KB), one block an SM (84 of them) */
	cr_assert_eq(cuda_module_for(c, NULL, NULL, 99 * 1024, &m, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(m.var[3].ks, 4);
	cr_assert_eq(m.var[3].bn, 64);
	cr_assert_eq(m.var[3].st, 2);
	cr_expect_eq(cuda_pick(&m, 4, 32768, 1), 3, "decoding's fits the device");
	cr_expect_eq(cuda_attn_split(&m, 3, 4, 32768, 8, 84), 10, "one of 68 KB in 100");
	cuda_module_free(&m);
	spec_carrier_free(c);
	/* head dim 64: three stages of 128 keys (108 KB), of which two fit an
	 * SM, still one an SM; 99 KB: two stages */
	c = load_dims("specs/attention.yaml", 64);
	cr_assert_eq(cuda_module(c, NULL, &m, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(m.nvar, 3);
	cr_assert_eq(cuda_smem(&m, 2), 3 * 128 * 72 * 4);
	cr_expect_eq(cuda_attn_split(&m, 2, 4, 32768, 8, 132), 16, "one block of 108 KB an SM");
	cuda_module_free(&m);
	cr_assert_eq(cuda_module_for(c, NULL, NULL, 99 * 1024, &m, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(cuda_smem(&m, 2), 2 * 128 * 72 * 4);
	cuda_module_free(&m);
	spec_carrier_free(c);
}

/* Below sm_80 (no cp.async, no m16n8k16 f16/bf16 mma.sync) the attention
 * carrier takes the generic template, says why, and its PTX assembles for
 * that arch; sm_80 keeps the attention template. */
Test(attention, older_archs_take_the_generic_template, .timeout = 300)
{
	cuda_test_cache();
	Carrier *c = load_dims("tests/attention/full_bf16.yaml", 64);
	CudaModule m;
	char msg[4096];
	cr_assert_eq(cuda_module_for(c, NULL, "sm_80", 0, &m, msg, sizeof msg), 0, "%s", msg);
	cr_expect_eq(m.base, FAM_ATTN, "%s", m.explain);
	cuda_module_free(&m);
	cr_assert_eq(cuda_module_for(c, NULL, "sm_75", 0, &m, msg, sizeof msg), 0, "%s", msg);
	cr_expect_neq(m.base, FAM_ATTN);
	cr_expect(strstr(m.explain, "the attention template needs sm_80 or newer") && strstr(m.explain, "target is sm_75"),
		  "%s", m.explain);
	CudaModule w;
	cr_expect_neq(cuda_module_for(c, "attention:nt=128,mt=1,bn=64,pv=1,st=2", "sm_75", 0, &w, msg, sizeof msg), 0);
	cr_expect(strstr(msg, "needs sm_80"), "a configuration of the template is refused with the reason: %s", msg);
	Nvrtc *nv;
	if (nvrtc_open(&nv, msg, sizeof msg)) {
		cuda_module_free(&m);
		spec_carrier_free(c);
		cr_skip_test("no NVRTC: %s", msg);
	}
	char *ptx = NULL;
	int cached;
	cr_assert_eq(nvrtc_ptx(nv, m.src, "sm_75", &ptx, &cached, msg, sizeof msg), 0, "%s", msg);
	CudaKStat ks[16];
	int n = cuda_ptxas_stats(ptx, "sm_75", ks, 16, msg, sizeof msg);
	cr_expect(n > 0 || strstr(msg, "not found"), "ptxas for sm_75: %s", msg);
	free(ptx);
	nvrtc_close(nv);
	cuda_module_free(&m);
	spec_carrier_free(c);
}

/* m's kernels (of carrier c) through NVRTC and ptxas for sm_90, each
 * expected to keep to its registers, without spills or stack (what names
 * the case); m and c are freed, and where ptxas is not found, nv too and
 * the test is skipped. */
static void ptxas_clean(Nvrtc *nv, Carrier *c, CudaModule *m, const char *what)
{
	char msg[4096], *ptx = NULL;
	int cached;
	cr_assert_eq(nvrtc_ptx(nv, m->src, "sm_90", &ptx, &cached, msg, sizeof msg), 0, "%s: %s", what, msg);
	int n = cuda_expect_unspilled(ptx, "sm_90", what, NULL, 0, msg, sizeof msg);
	free(ptx);
	cuda_module_free(m);
	spec_carrier_free(c);
	if (n < 0) {
		nvrtc_close(nv);
		cr_skip_test("%s", msg);
	}
}

/* Decoding's variant, at head dims 32 to 128 and under scores and masks
 * that hold more registers (a float mask, a soft cap, a window), assembles
 * without spills: its launch bounds name the blocks an SM its shared
 * memory allows (ptxas, not knowing the dynamic shared memory, aimed at 6
 * blocks of 80 registers at head dim 32 under the float mask and spilled
 * 48 bytes; 3 fit). */
Test(attention, ptxas_decoding_without_spills, .timeout = 300)
{
	cuda_test_cache();
	Nvrtc *nv;
	char msg[4096];
	if (nvrtc_open(&nv, msg, sizeof msg))
		cr_skip_test("no NVRTC: %s", msg);
	static const char *const paths[] = {"tests/attention/rounded_mask.yaml", "tests/attention/softcap.yaml",
					    "tests/attention/window.yaml", "tests/attention/full_bf16.yaml"};
	static const int dims[] = {32, 64, 128}, blocks[] = {3, 2, 1};
	for (size_t p = 0; p < sizeof paths / sizeof *paths; p++)
		for (int k = 0; k < 3; k++) {
			Carrier *c = load_dims(paths[p], dims[k]);
			CudaModule m;
			char cfg[128], what[256];
			cr_assert_eq(cuda_module(c, NULL, &m, msg, sizeof msg), 0, "%s", msg);
			int v = cuda_pick(&m, 4, 1000, 1);
			cr_assert_gt(m.var[v].ks, 1, "%s", paths[p]);
			variant_str(&m.var[v], cfg, sizeof cfg);
			cuda_module_free(&m);
			cr_assert_eq(cuda_module(c, cfg, &m, msg, sizeof msg), 0, "%s", msg);
			snprintf(what, sizeof what, "__launch_bounds__(128, %d)", blocks[k]);
			cr_expect(strstr(m.src, what), "%s d=%d %s: %s", paths[p], dims[k], cfg, what);
			snprintf(what, sizeof what, "%s d=%d", paths[p], dims[k]);
			ptxas_clean(nv, c, &m, what);
		}
	nvrtc_close(nv);
}

/* Decoding's key slices with one stage of 128 keys, which leaves shared
 * memory for 6 blocks an SM, ask for 3, so that a thread keeps 160
 * registers: at 6 ptxas kept to 80 and spilled 16 to 380 bytes in every
 * attention spec's tuning space, at 4 attention_sink's 20 on sm_90a.
 * They assemble without spills or stack for sm_90a and sm_80. */
Test(attention, one_stage_decoding_keeps_its_registers, .timeout = 300)
{
	cuda_test_cache();
	char msg[4096];
	static const char *const paths[] = {"specs/attention.yaml", "specs/attention_sink.yaml"};
	static const char *const archs[] = {"sm_90a", "sm_80"};
	const char *cfg = "attention:nt=128,mt=1,bn=128,pv=1,st=1,ks=4";
	for (int p = 0; p < 2; p++)
		for (int a = 0; a < 2; a++) {
			Carrier *c = load_ok(paths[p]);
			CudaModule m;
			char what[128];
			cr_assert_eq(cuda_module_for(c, cfg, archs[a], 0, &m, msg, sizeof msg), 0, "%s", msg);
			cr_expect(strstr(m.src, "__launch_bounds__(128, 3)"), "%s %s: 3 blocks an SM", paths[p], archs[a]);
			snprintf(what, sizeof what, "%s %s %s", paths[p], archs[a], cfg);
			int n = cuda_src_unspilled(m.src, archs[a], what, msg, sizeof msg);
			cuda_module_free(&m);
			spec_carrier_free(c);
			if (n < 0)
				cr_skip_test("%s", msg);
		}
}

/* Prefill's tiles of 16 query rows a warp, keys in tiles of 64 (the
 * default, two and three stages) or 32, assemble without spills or stack
 * for sm_80 and sm_90a with no blocks an SM asked for: with o rescaled
 * before P, ptxas held S's scores beside o and Q at the branch that skips
 * the rescale, kept to 128 registers and spilled 12 to 80 bytes in most
 * attention carriers (rounded masks, soft caps, sinks, e4m3 on sm_90a). */
Test(attention, one_tile_prefill_keeps_its_registers, .timeout = 300)
{
	cuda_test_cache();
	char msg[4096];
	static const struct {
		const char *path, *arch, *cfg;
	} runs[] = {
		{"tests/attention/rounded_mask.yaml", "sm_80", "attention:nt=128,mt=1,bn=64,pv=1,st=2"},
		{"tests/attention/softcap.yaml", "sm_80", "attention:nt=128,mt=1,bn=64,pv=1,st=2"},
		{"specs/attention.yaml", "sm_80", "attention:nt=128,mt=1,bn=64,pv=1,st=3"},
		{"tests/attention/gaps.yaml", "sm_80", "attention:nt=128,mt=1,bn=32,pv=1,st=2"},
		{"tests/attention/product_mask.yaml", "sm_90a", "attention:nt=128,mt=1,bn=64,pv=1,st=2"},
		{"tests/attention/softcap.yaml", "sm_90a", "attention:nt=128,mt=1,bn=64,pv=1,st=2"},
		{"tests/attention/fp8_descale.yaml", "sm_90a", "attention:nt=128,mt=1,bn=64,pv=1,st=3"},
		{"specs/attention_sink.yaml", "sm_90a", "attention:nt=128,mt=1,bn=32,pv=1,st=2"},
	};
	for (size_t r = 0; r < sizeof runs / sizeof *runs; r++) {
		Carrier *c = load_ok(runs[r].path);
		CudaModule m;
		char what[160];
		cr_assert_eq(cuda_module_for(c, runs[r].cfg, runs[r].arch, 0, &m, msg, sizeof msg), 0, "%s", msg);
		char nm[3][64], lb[128];
		cuda_kernel_names(&m, 0, nm);
		snprintf(lb, sizeof lb, "__launch_bounds__(128) %s(", nm[0]);
		cr_expect(strstr(m.src, lb), "%s %s: ptxas's own choice of blocks an SM", runs[r].path, runs[r].cfg);
		snprintf(what, sizeof what, "%s %s %s", runs[r].path, runs[r].arch, runs[r].cfg);
		int n = cuda_src_unspilled(m.src, runs[r].arch, what, msg, sizeof msg);
		cuda_module_free(&m);
		spec_carrier_free(c);
		if (n < 0)
			cr_skip_test("%s", msg);
	}
}

/* The default configurations, and Q in shared memory with 32 rows a warp
 * at head dim 128, assemble for sm_90 without spills or stack, f16 and
 * bf16, head dims 64, 128 and 256. */
Test(attention, ptxas_no_spills, .timeout = 300)
{
	cuda_test_cache();
	Nvrtc *nv;
	char msg[4096];
	if (nvrtc_open(&nv, msg, sizeof msg))
		cr_skip_test("no NVRTC: %s", msg);
	static const char *const paths[] = {"tests/attention/full_bf16.yaml", "specs/attention.yaml"};
	static const struct {
		int bf16, d;
		const char *config;
	} runs[] = {{1, 64, NULL}, {1, 128, NULL}, {1, 256, NULL}, {0, 64, NULL},
		    {0, 128, NULL}, {0, 256, NULL}, {1, 128, QS128}, {0, 128, QS128}};
	for (size_t k = 0; k < sizeof runs / sizeof *runs; k++) {
		Carrier *c = load_dims(paths[!runs[k].bf16], runs[k].d);
		CudaModule m;
		char what[64];
		cr_assert_eq(cuda_module(c, runs[k].config, &m, msg, sizeof msg), 0, "%s", msg);
		snprintf(what, sizeof what, "d=%d", runs[k].d);
		ptxas_clean(nv, c, &m, what);
	}
	nvrtc_close(nv);
}

/* The rule's variants at head dim 128 where the mask divides (its slow
 * path a call, in the key loop beside the score) or the score is soft
 * capped with a distance slope and a window take 16 rows a warp (at 32,
 * 68 and 72 bytes spilled); the masks' assemble without spills or stack
 * for sm_90a, one block an SM at least asked of ptxas (at 168 registers,
 * 12 bytes). */
Test(attention, ptxas_heavy_masks_and_scores_without_spills, .timeout = 300)
{
	cuda_test_cache();
	static const char *const paths[] = {"tests/attention/ratio_mask.yaml", "tests/attention/reciprocal_mask.yaml",
					    "tests/attention/alibi_softcap_window.yaml"};
	for (size_t k = 0; k < sizeof paths / sizeof *paths; k++) {
		Carrier *c = load_dims(paths[k], 128);
		CudaModule m;
		char msg[4096];
		cr_assert_eq(cuda_module_for(c, NULL, "sm_90a", 0, &m, msg, sizeof msg), 0, "%s", msg);
		for (int v = 0; v < m.nvar; v++)
			cr_expect(m.var[v].wg || m.var[v].mt == 1, "%s: variant %d takes %d tiles a warp", paths[k], v,
				  m.var[v].mt);
		if (k == 2) { /* the soft cap keeps ptxas's own choice of blocks */
			cuda_module_free(&m);
			spec_carrier_free(c);
			continue;
		}
		int n = cuda_src_unspilled(m.src, "sm_90a", paths[k], msg, sizeof msg);
		cuda_module_free(&m);
		spec_carrier_free(c);
		if (n < 0)
			cr_skip_test("%s", msg);
	}
}

/* FP8 attention's kernels (e4m3 loads converted to f16 in registers on
 * their way to shared memory) assemble without spills at head dims 64,
 * 128 and 256. */
Test(attention, ptxas_fp8_without_spills, .timeout = 300)
{
	cuda_test_cache();
	Nvrtc *nv;
	char msg[4096];
	if (nvrtc_open(&nv, msg, sizeof msg))
		cr_skip_test("no NVRTC: %s", msg);
	static const int dims[] = {64, 128, 256};
	for (int k = 0; k < 3; k++) {
		Carrier *c = load_dims("tests/attention/fp8_descale.yaml", dims[k]);
		CudaModule m;
		char what[64];
		cr_assert_eq(cuda_module(c, NULL, &m, msg, sizeof msg), 0, "%s", msg);
		cr_expect(strstr(m.src, "#define ATTN_F8 1"), "d=%d: the module converts e4m3", dims[k]);
		snprintf(what, sizeof what, "fp8 d=%d", dims[k]);
		ptxas_clean(nv, c, &m, what);
	}
	nvrtc_close(nv);
}

/* In one kernel's PTX [k, end): whether the address of an ldmatrix comes
 * from cvt.u32.u64 (a 64-bit generic address cut to 32 bits: ptxas can
 * then fold no constant offset into the instruction). */
static int ldsm_via_u64(const char *k, const char *end)
{
	char *t = strndup(k, (size_t)(end - k)), *save = NULL, **ln = NULL;
	int nl = 0, bad = 0;
	cr_assert(t);
	for (char *l = strtok_r(t, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		ln = realloc(ln, (nl + 1) * sizeof *ln);
		cr_assert(ln);
		ln[nl++] = l;
	}
	for (int i = 0; i < nl && !bad; i++) {
		char reg[32], op[48], def[32];
		const char *a = strstr(ln[i], "ldmatrix.") ? strchr(ln[i], '[') : NULL;
		if (!a || sscanf(a + 1, "%31[^]+]", reg) != 1)
			continue;
		for (int j = i - 1; j >= 0; j--) /* the nearest definition of reg before it */
			if (sscanf(ln[j], " %47s %31[^,;]", op, def) == 2 && !strcmp(def, reg)) {
				bad = !strcmp(op, "cvt.u32.u64");
				break;
			}
	}
	free(ln);
	free(t);
	return bad;
}

/* The key-tile loop's PTX, default variants at head dim 128 (bf16, no
 * mask): 2^x by ex2.approx.ftz alone (exp2f's subnormal path is an
 * FSETP and two FMUL per score in SASS); K and V tile loads unrolled (a
 * rolled loop cost a division, a row test and a fallback per 16-byte
 * chunk); ldmatrix addresses in 32 bits, so that ptxas folds each
 * fragment's constant offset into the instruction. */
Test(attention, key_tile_loop_ptx, .timeout = 300)
{
	cuda_test_cache();
	Nvrtc *nv;
	char msg[4096];
	if (nvrtc_open(&nv, msg, sizeof msg))
		cr_skip_test("no NVRTC: %s", msg);
	Carrier *c = load_dims("tests/attention/full_bf16.yaml", 128);
	CudaModule m;
	char *ptx = NULL;
	int cached, nk = 0;
	cr_assert_eq(cuda_module(c, NULL, &m, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(nvrtc_ptx(nv, m.src, "sm_90", &ptx, &cached, msg, sizeof msg), 0, "%s", msg);
	for (const char *k = strstr(ptx, ".entry "); k; k = strstr(k + 1, ".entry ")) {
		const char *end = strstr(k + 1, ".entry ");
		end = end ? end : k + strlen(k);
		const char *nl = strchr(k, '(');
		if (!nl || nl - k < 4 || strncmp(nl - 4, "_fwd", 4))
			continue;
		nk++;
		cr_expect_eq(cuda_count(k, end, "ex2.approx.f32"), 0, "exp2f's subnormal path in %.40s", k + 7);
		cr_expect_gt(cuda_count(k, end, "ex2.approx.ftz.f32"), 0);
		/* 64 keys x 16 chunks of K, then of V, over 128 or 256 threads: 4 or 8 a thread each */
		cr_expect_geq(cuda_count(k, end, "cp.async.cg.shared.global"), 8, "tile loads not unrolled in %.40s", k + 7);
		cr_expect_not(ldsm_via_u64(k, end), "an ldmatrix address through 64 bits in %.40s", k + 7);
	}
	cr_expect_eq(nk, m.nvar, "%d forward kernels in the PTX", nk);
	free(ptx);
	cuda_module_free(&m);
	spec_carrier_free(c);
	nvrtc_close(nv);
}

/* A mask with products of positions: the tile skipping bounds them by
 * interval products (asc_iv_mul), which the generated code calls before
 * the attention template, so they come with the common helpers. */
Test(attention, masks_that_multiply_positions, .timeout = 300)
{
	cuda_test_cache();
	Carrier *c = load_dims("tests/attention/product_mask.yaml", 64);
	uses_attention(c, "product_mask");
	run_one(c, "product_mask", 130, 300, 1, 1, 1, NULL, NULL);
	run_one(c, "product_mask", 3, 400, 1, 1, 3, NULL, NULL);
	spec_carrier_free(c);
}

/* A float mask decides its tiles with room for the kernel's rounding:
 * j - 1e-9 >= i + 31 holds at j = i + 31 in float32 (the kernel's) and
 * not in float64, so a tile of rows [64q, 64q + 64) and keys ending at
 * 64q + 31 is live by one corner.  Dropping it loses a key of each 64th
 * row, and all of row 128's keys at 160 keys; the CPU backend, which
 * rounds the mask alike, keeps them. */
Test(attention, float_masks_keep_tiles_live_by_rounding, .timeout = 300)
{
	cuda_test_cache();
	char why[256];
	const Device *cpu = run_device_find("cpu");
	if (!cpu || !cpu->available(why, sizeof why))
		cr_skip_test("the CPU backend is not here");
	Carrier *c = load_dims("tests/attention/rounded_mask.yaml", 64);
	uses_attention(c, "rounded_mask");
	RunData *d[2];
	char msg[4096] = "";
	for (int k = 0; k < 2; k++) {
		d[k] = rundata_new_heads(c, 130, 160, 1, 1);
		cr_assert_eq(rundata_draw(d[k], 5, NULL, 0, msg, sizeof msg), 0, "%s", msg);
	}
	EmuStats es;
	RunOpts o = {.split = 1, .config = "attention:nt=128,mt=1,bn=32,pv=1,st=1"};
	cr_assert_eq(emu_run_data(d[0], &o, &es, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(cpu->run(d[1], &(RunOpts){.threads = 1}, msg, sizeof msg), 0, "%s", msg);
	for (int f = 0; f < c->nfinal; f++) {
		const Buffer *a = &d[0]->fin[f], *b = &d[1]->fin[f];
		size_t bad = 0, first = 0;
		for (size_t i = 0; i < a->n * a->width; i++) {
			double x = run_buffer_get(a, i), y = run_buffer_get(b, i);
			if (isnan(x) != isnan(y) || fabs(x - y) > 1e-3 + 1e-3 * fabs(y))
				first = bad++ ? first : i;
		}
		cr_expect_eq(bad, 0, "%s: %zu values differ from the CPU backend's, the first at %zu", c->finalize[f].name,
			     bad, first);
	}
	rundata_free(d[0]);
	rundata_free(d[1]);
	spec_carrier_free(c);
}

/* One split run on dev (NULL: the emulator, under config), against the
 * reference; rows below seen_none (every row where there is no key) have
 * lse -inf in every head. */
static void split_run(const Device *dev, Carrier *c, int rows, int len, int heads, int kv, int split,
		      const char *config, int seen_none)
{
	RunData *d = rundata_new_heads(c, rows, len, heads, kv);
	char msg[4096] = "";
	cr_assert_eq(rundata_draw(d, 13, NULL, 0, msg, sizeof msg), 0, "%s", msg);
	const char *where = dev ? "cpu" : config;
	if (dev)
		cr_assert_eq(dev->run(d, &(RunOpts){.threads = 2, .split = split}, msg, sizeof msg), 0, "%s", msg);
	else
		cr_assert_eq(emu_run_data(d, &(RunOpts){.split = split, .config = config}, NULL, msg, sizeof msg), 0,
			     "%s %dx%d split %d: %s", where, rows, len, split, msg);
	int lse = -1;
	for (int f = 0; f < c->nfinal; f++)
		if (!strcmp(c->finalize[f].name, "lse"))
			lse = f;
	cr_assert_geq(lse, 0, "%s has an lse", c->name);
	if (!len)
		seen_none = rows;
	for (int h = 0; h < heads; h++)
		for (int r = 0; r < seen_none; r++) {
			double v = run_buffer_get(&d->fin[lse], (size_t)h * rows + r);
			cr_expect(isinf(v) && v < 0, "%s %s %d keys split %d, head %d row %d: lse %g, not -inf", c->name,
				  where, len, split, h, r, v);
		}
	RunCheck chk;
	runcheck_run(d, &chk);
	for (int k = 0; k < chk.nout; k++)
		cr_expect(chk.out[k].worst_ratio <= 1 && !chk.out[k].nan_mismatch,
			  "%s %s %d rows x %d keys split %d: %s at %zu is %.3g of tolerance%s", c->name, where, rows, len,
			  split, chk.out[k].name, chk.out[k].at, chk.out[k].worst_ratio,
			  chk.out[k].nan_mismatch ? ", NaN mismatch" : "");
	runcheck_free(&chk);
	rundata_free(d);
}

/* Split-KV decoding without key slices (ks = 1) where nothing else runs
 * it: no key at all, one key, fewer keys than a warp's 32 lanes, so that
 * most splits are empty; and rows that see no key (whose splits all stay
 * empty) with more than one split, with key slices and without.  On dev
 * (NULL: the emulator, in two ks = 1 variants and a ks = 4 one). */
static void split_edges(const Device *dev)
{
	static const char *const flat[] = {"attention:nt=128,mt=1,bn=64,pv=1,st=2", "attention:nt=128,mt=2,bn=64,pv=1,st=2"};
	static const int lens[] = {0, 1, 17, 31}, splits[] = {2, 3, 7};
	Carrier *c = load_dims("tests/attention/full.yaml", 64);
	for (int v = 0; v < (dev ? 1 : 2); v++)
		for (int l = 0; l < 4; l++)
			for (int s = 0; s < 3; s++)
				split_run(dev, c, 2, lens[l], 2, 1, splits[s], flat[v], 0);
	spec_carrier_free(c);
	static const char *const masked[] = {"attention:nt=128,mt=1,bn=64,pv=1,st=2",
					     "attention:nt=128,mt=1,bn=64,pv=1,st=2,ks=4"};
	c = load_dims("tests/attention/empty_rows.yaml", 0);
	for (int v = 0; v < (dev ? 1 : 2); v++)
		for (int s = 2; s <= 3; s++) {
			split_run(dev, c, 20, 40, 4, 2, s, masked[v], 5);
			split_run(dev, c, 8, 17, 4, 1, s, masked[v], 5);
			split_run(dev, c, 6, 0, 4, 2, s, masked[v], 6);
		}
	spec_carrier_free(c);
}

Test(attention, split_kv_edges_on_the_emulator, .timeout = 600)
{
	cuda_test_cache();
	split_edges(NULL);
}

Test(attention, split_kv_edges_on_the_cpu, .timeout = 300)
{
	char why[256];
	const Device *cpu = run_device_find("cpu");
	if (!cpu || !cpu->available(why, sizeof why))
		cr_skip_test("the CPU backend is not here: %s", cpu ? why : "not linked in");
	split_edges(cpu);
}

/* ---- the weighted-sum contract: sigmoid attention ---- */

static const char SIGMOID[] = "specs/sigmoid_attention.yaml";

/* Sigmoid attention takes the template under the weighted-sum contract,
 * its merge structurally plain sums, and the explain says so; a sum of
 * the weights and a count of the keys ride in the m and l slots; the
 * (m, l, o) carrier's hooks stay without the switch. */
Test(attention, sigmoid_takes_the_template_as_a_weighted_sum)
{
	Carrier *c = load_dims(SIGMOID, 0);
	CudaModule m;
	char msg[512];
	cr_assert_eq(cuda_module(c, NULL, &m, msg, sizeof msg), 0, "%s", msg);
	cr_expect_eq(m.base, FAM_ATTN, "%s", m.explain);
	cr_expect(m.attn.sum && m.attn.fm < 0 && m.attn.fl < 0, "sum %d, m slot %d, l slot %d", m.attn.sum, m.attn.fm,
		  m.attn.fl);
	cr_expect(strstr(m.explain, "template attention (tensor cores, f16, head dims 64/64): merge structurally plain "
				    "sums (weighted sum: o -> o)"), "%s", m.explain);
	cr_expect(strstr(m.explain, "P V without a row maximum or rescale"), "%s", m.explain);
	/* the weight a sigmoid, which the template takes by the SFU: the hook
	 * gives its argument */
	cr_expect(strstr(m.hooks, "#define ATTN_SUM 1\n#define ATTN_SUM_M 0\n#define ATTN_SUM_L 0\n#define ATTN_WSIG 1\n"),
		  "%s", m.hooks);
	cr_expect(strstr(m.hooks, "ASC_DEV float attn_weight(") && !strstr(m.hooks, "attn_score2"), "%s", m.hooks);
	cr_expect(!strstr(strstr(m.hooks, "attn_weight("), "exp2f"), "the sigmoid left to the template: %s", m.hooks);
	cuda_module_free(&m);
	spec_carrier_free(c);
	c = load_dims("tests/attention/sigmoid_normalized.yaml", 0);
	cr_assert_eq(cuda_module(c, NULL, &m, msg, sizeof msg), 0, "%s", msg);
	cr_expect_eq(m.base, FAM_ATTN, "%s", m.explain);
	cr_expect(strstr(m.explain, "(weighted sum: o -> o, sums l, n)"), "%s", m.explain);
	cr_expect(m.attn.fl == 1 && m.attn.fm == 2, "l slot %d, m slot %d", m.attn.fl, m.attn.fm);
	/* l = w: o's weight itself (y2); n = 1 */
	cr_expect(strstr(m.hooks, "attn_sum_l(const Args &A, const ARow &R, float y0, float y2, int i, int j)\n{\n"
				  "\treturn y2;\n}"), "%s", m.hooks);
	cr_expect(strstr(m.hooks, "attn_sum_m(const Args &A, const ARow &R, float y0, float y2, int i, int j)\n{\n"
				  "\treturn 1.0f;\n}"), "%s", m.hooks);
	cuda_module_free(&m);
	spec_carrier_free(c);
	/* o = v / x: the weight 1 / x, which l's lift shares */
	c = load_dims("tests/attention/rational_weight.yaml", 0);
	cr_assert_eq(cuda_module(c, NULL, &m, msg, sizeof msg), 0, "%s", msg);
	cr_expect_eq(m.base, FAM_ATTN, "%s", m.explain);
	cr_expect(strstr(m.hooks, "#define ATTN_WSIG 0\n"), "%s", m.hooks);
	cr_expect(strstr(m.hooks, "attn_sum_l(const Args &A, const ARow &R, float y0, float y2, int i, int j)\n{\n"
				  "\treturn y2;\n}"), "%s", m.hooks);
	cuda_module_free(&m);
	spec_carrier_free(c);
	c = load_dims("specs/attention.yaml", 0);
	cr_assert_eq(cuda_module(c, NULL, &m, msg, sizeof msg), 0, "%s", msg);
	cr_expect(!m.attn.sum && !strstr(m.hooks, "ATTN_SUM"), "(m, l, o): %s", m.hooks);
	cuda_module_free(&m);
	spec_carrier_free(c);
}

/* Ragged key lengths (none, one, under a warp, about the tiles of 64 and
 * 128, many) at head dims 32, 64 and 128, the default variants and P V
 * in float32's precision (held to the naive float32 evaluation). */
static void sigmoid_dims(const char *path, int d)
{
	static const int lens[] = {0, 1, 17, 64, 127, 128, 129, 1000};
	cuda_test_cache();
	Carrier *c = load_dims(path, d);
	uses_attention(c, path);
	for (size_t l = 0; l < sizeof lens / sizeof *lens; l++) {
		int len = lens[l], rows = len >= 1000 ? 3 : len == 129 ? 130 : 17;
		run_one(c, path, rows, len, 1, 1, 1, NULL, NULL);
	}
	run_one(c, path, 1, 300, 1, 1, 1, NULL, NULL); /* one row */
	const char *pv3 = "attention:nt=128,mt=1,bn=64,pv=3";
	run_one(c, path, 3, 1000, 1, 1, 1, pv3, NULL);
	run_one(c, path, 130, 129, 1, 1, 1, pv3, NULL);
	spec_carrier_free(c);
}

Test(attention, sigmoid_head_dim_32, .timeout = 300) { sigmoid_dims(SIGMOID, 32); }
Test(attention, sigmoid_head_dim_64, .timeout = 300) { sigmoid_dims(SIGMOID, 64); }
Test(attention, sigmoid_head_dim_128, .timeout = 300) { sigmoid_dims(SIGMOID, 128); }
Test(attention, sigmoid_full_head_dim_64, .timeout = 300) { sigmoid_dims("tests/attention/sigmoid_full.yaml", 64); }
Test(attention, sigmoid_window_bf16_head_dim_64, .timeout = 300) { sigmoid_dims("tests/attention/sigmoid_bf16.yaml", 64); }
Test(attention, sigmoid_window_bf16_head_dim_128, .timeout = 300)
{
	sigmoid_dims("tests/attention/sigmoid_bf16.yaml", 128);
}
Test(attention, sigmoid_normalized_head_dim_64, .timeout = 300)
{
	sigmoid_dims("tests/attention/sigmoid_normalized.yaml", 64);
}
/* a weight that is no sigmoid, v / (1 + s^2): lowered as the spec has it */
Test(attention, rational_weight_head_dim_64, .timeout = 300)
{
	sigmoid_dims("tests/attention/rational_weight.yaml", 64);
}

/* pv=2 on bf16 inputs (two parts of 8 bits: 16 of float32's 24) is
 * refused with the pv that keeps float32's precision, on both templates;
 * pv=3 on bf16 and pv=2 on f16 are taken. */
Test(attention, pv2_on_bf16_refused)
{
	static const struct {
		const char *path, *config, *arch;
		int ok;
	} k[] = {{"tests/attention/sigmoid_bf16.yaml", "attention:nt=128,mt=1,bn=64,pv=2,st=2", NULL, 0},
		 {"tests/attention/full_bf16.yaml", "attention:nt=128,mt=1,bn=64,pv=2,st=2", NULL, 0},
		 {"tests/attention/full_bf16.yaml", "attention:wg=2,bn=128,st=2,pv=2", "sm_90a", 0},
		 {"tests/attention/full_bf16.yaml", "attention:wg=2,bn=128,st=2,pv=2,ws=1", "sm_90a", 0},
		 {"tests/attention/full_bf16.yaml", "attention:wg=2,bn=128,st=2,pv=3", "sm_90a", 1},
		 {"tests/attention/sigmoid_bf16.yaml", "attention:nt=128,mt=1,bn=64,pv=3,st=2", NULL, 1},
		 {"tests/attention/sigmoid_normalized.yaml", "attention:nt=128,mt=1,bn=64,pv=2,st=2", NULL, 1},
		 {"tests/attention/sigmoid_normalized.yaml", "attention:wg=2,bn=128,st=2,pv=2", "sm_90a", 1}};
	for (size_t x = 0; x < sizeof k / sizeof *k; x++) {
		Carrier *c = load_dims(k[x].path, 64);
		CudaModule m;
		char msg[1024] = "";
		int rc = cuda_module_for(c, k[x].config, k[x].arch, 0, &m, msg, sizeof msg);
		if (k[x].ok) {
			cr_expect_eq(rc, 0, "%s %s: %s", k[x].path, k[x].config, msg);
		} else {
			cr_expect_neq(rc, 0, "%s %s taken", k[x].path, k[x].config);
			cr_expect(strstr(msg, "pv=2 on bf16 inputs keeps 16 bits of P") && strstr(msg, "pv=3 for bf16"), "%s: %s",
				  k[x].config, msg);
		}
		if (!rc)
			cuda_module_free(&m);
		spec_carrier_free(c);
	}
}

/* P in f16 parts (pv 2 and 3) of weights under f16's normal range: a bias
 * of -14 makes them near 8e-7, whose parts would lose their bits to f16's
 * subnormals (702 times float32's tolerance) but for the row's scale
 * (attn_pscale); on both templates, every Hopper schedule, key slices and
 * splits, against float32's tolerance.  And weights over f16's largest. */
Test(attention, sigmoid_f16_small_weights_in_parts, .timeout = 600)
{
	cuda_test_cache();
	Carrier *c = load_dims("tests/attention/sigmoid_normalized.yaml", 64);
	static const Define small[] = {{"bias", "-14"}, {"scale", "0.1"}};
	static const struct {
		const char *config, *arch;
		int split;
	} runs[] = {{"attention:nt=128,mt=1,bn=64,pv=3,st=2", NULL, 1},
		    {"attention:nt=128,mt=2,bn=64,pv=2,st=2", NULL, 1},
		    {"attention:nt=128,mt=1,bn=64,pv=2,st=2,ks=4", NULL, 3},
		    {"attention:wg=2,bn=128,st=2,pv=3", "sm_90a", 1},
		    {"attention:wg=2,bn=128,st=2,pv=2,ws=1", "sm_90a", 2},
		    {"attention:wg=2,bn=64,st=2,pv=3,ws=2", "sm_90a", 1}};
	for (size_t k = 0; k < sizeof runs / sizeof *runs; k++) {
		RunData *d = rundata_new_heads(c, 70, 300, 2, 1);
		char msg[4096] = "";
		cr_assert_eq(rundata_draw(d, 11, small, 2, msg, sizeof msg), 0, "%s", msg);
		RunOpts o = {.split = runs[k].split, .config = runs[k].config, .arch = runs[k].arch};
		cr_assert_eq(emu_run_data(d, &o, NULL, msg, sizeof msg), 0, "%s: %s", runs[k].config, msg);
		RunCheck chk;
		runcheck_run(d, &chk);
		cr_expect(chk.ok, "%s", runs[k].config);
		for (int f = 0; f < chk.nout; f++)
			cr_expect_leq(chk.out[f].worst_ratio, 1.0, "%s: %s %.3g of float32's tolerance", runs[k].config,
				      chk.out[f].name, chk.out[f].worst_ratio);
		runcheck_free(&chk);
		rundata_free(d);
	}
	spec_carrier_free(c);
	/* weights of e^20 and more, over f16's largest value: inf in one part */
	c = load_dims("tests/attention/exp_weight.yaml", 64);
	static const Define large[] = {{"bias", "20"}, {"scale", "0.1"}};
	run_prm(c, "weights over 65504, pv=2", 70, 300, 1, 1, 1, "attention:nt=128,mt=1,bn=64,pv=2,st=2", NULL, large, 2);
	spec_carrier_free(c);
}

/* Rows 0..4 see no key: out is the identity's, 0 in every component (the
 * reference's sum over no key), in every head, with and without splits
 * and key slices; the other rows against the reference. */
Test(attention, sigmoid_fully_masked_rows_give_zero, .timeout = 300)
{
	cuda_test_cache();
	Carrier *c = load_dims("tests/attention/sigmoid_empty_rows.yaml", 0);
	static const char *const cfgs[] = {NULL, "attention:nt=128,mt=1,bn=64,pv=1,st=2",
					   "attention:nt=128,mt=2,bn=64,pv=1,st=2", "attention:nt=128,mt=1,bn=64,pv=1,st=2,ks=4"};
	static const struct {
		int rows, len, heads, kv, split;
	} shapes[] = {{20, 40, 1, 1, 1}, {20, 40, 4, 2, 2}, {8, 17, 4, 1, 3}, {6, 0, 2, 1, 2}};
	for (size_t k = 0; k < sizeof cfgs / sizeof *cfgs; k++)
		for (size_t x = 0; x < sizeof shapes / sizeof *shapes; x++) {
			int rows = shapes[x].rows, heads = shapes[x].heads;
			RunData *d = rundata_new_heads(c, rows, shapes[x].len, heads, shapes[x].kv);
			char msg[4096] = "";
			cr_assert_eq(rundata_draw(d, 3, NULL, 0, msg, sizeof msg), 0, "%s", msg);
			RunOpts o = {.split = shapes[x].split, .config = cfgs[k]};
			cr_assert_eq(emu_run_data(d, &o, NULL, msg, sizeof msg), 0, "%s", msg);
			int empty = shapes[x].len ? 5 : rows;
			for (int h = 0; h < heads; h++)
				for (int i = 0; i < empty; i++)
					for (int u = 0; u < 64; u++) {
						double v = run_buffer_get(&d->fin[0], ((size_t)h * rows + i) * 64 + u);
						cr_expect(v == 0, "%s, shape %zu: head %d row %d out[%d] = %g, not 0",
							  cfgs[k] ? cfgs[k] : "the rule", x, h, i, u, v);
					}
			RunCheck chk;
			runcheck_run(d, &chk);
			cr_expect(chk.ok, "%s, shape %zu: out %.3g of tolerance", cfgs[k] ? cfgs[k] : "the rule", x,
				  chk.out[0].worst_ratio);
			runcheck_free(&chk);
			rundata_free(d);
		}
	spec_carrier_free(c);
}

Test(attention, sigmoid_grouped_heads, .timeout = 300)
{
	cuda_test_cache();
	Carrier *c = load_dims(SIGMOID, 32);
	run_one(c, "gqa", 33, 70, 4, 2, 1, NULL, NULL);
	run_one(c, "mqa", 17, 129, 3, 1, 1, NULL, NULL);
	spec_carrier_free(c);
	c = load_dims("tests/attention/sigmoid_normalized.yaml", 64);
	run_one(c, "grouped decoding", 1, 1000, 8, 2, 1, NULL, NULL);
	run_one(c, "gqa, 2 tiles a warp", 70, 200, 4, 2, 1, "attention:nt=128,mt=2,bn=64,pv=1,st=2", NULL);
	spec_carrier_free(c);
}

/* Split-KV: partial sums merged by plain sums, inside the kernel (one
 * tile a warp), by the combine kernel (two), and across key slices;
 * splits over a warp's lanes; the scalar sums (l and the count of keys,
 * which would miss a split's share) with o.  Against the reference; the
 * rule's own split where none is asked for. */
Test(attention, sigmoid_split_kv, .timeout = 600)
{
	cuda_test_cache();
	Carrier *c = load_dims("tests/attention/sigmoid_full.yaml", 64);
	static const int splits[] = {0, 1, 2, 3, 7};
	for (int s = 0; s < 5; s++)
		run_one(c, "split", 2, 1000, 2, 1, splits[s], NULL, NULL);
	run_one(c, "split, 7 chunks for 129 keys", 1, 129, 1, 1, 7, NULL, NULL);
	static const Define wide[] = {{"scale", "2"}};
	run_prm(c, "split, 40 splits", 1, 3000, 4, 1, 40, NULL, NULL, wide, 1);
	spec_carrier_free(c);
	static const char *const cfgs[] = {
		"attention:nt=128,mt=1,bn=64,pv=1,st=2",     "attention:nt=128,mt=2,bn=64,pv=1,st=2",
		"attention:nt=128,mt=1,bn=64,pv=1,st=2,ks=4", "attention:nt=128,mt=1,bn=128,pv=1,st=3,ks=4",
		"attention:nt=128,mt=1,bn=64,pv=3,st=1",
	};
	c = load_dims("tests/attention/sigmoid_normalized.yaml", 64);
	for (size_t k = 0; k < sizeof cfgs / sizeof *cfgs; k++) {
		char cfg[128];
		run_one(c, cfgs[k], 3, 1000, 4, 1, 3, cfgs[k], cfg);
		cr_expect_str_eq(cfg, cfgs[k]);
		run_one(c, cfgs[k], 40, 300, 2, 2, 2, cfgs[k], NULL);
	}
	spec_carrier_free(c);
	c = load_dims(SIGMOID, 128); /* causal: splits past the diagonal are empty */
	run_one(c, "causal split, head dim 128", 3, 1000, 1, 1, 3, NULL, NULL);
	run_one(c, "causal split, head dim 128, 32 rows a warp", 130, 300, 1, 1, 2, QS128, NULL);
	spec_carrier_free(c);
}

/* A weighted-sum carrier whose state the template cannot hold, or whose
 * merge is not plain sums, is refused with the reason and runs on the
 * generic templates; sums written otherwise are proved plain sums. */
static Carrier *sum_carrier(const char *state, const char *identity, const char *lift, const char *merge,
			    const char *fin)
{
	const char *part[5] = {state, identity, lift, merge, fin};
	char text[2048], block[5][256];
	for (int k = 0; k < 5; k++) { /* entries split at '|', one a line */
		size_t n = 0;
		for (const char *x = part[k]; *x && n < sizeof block[k] - 4; x++)
			if (*x == '|')
				n += (size_t)snprintf(block[k] + n, sizeof block[k] - n, "\n  ");
			else
				block[k][n++] = *x;
		block[k][n] = 0;
	}
	snprintf(text, sizeof text,
		 "carrier: weighted\ndims: {d: 32}\nparams: {scale: f32}\nrow: {q: 'f16[d]'}\n"
		 "column: {k: 'f16[d]', v: 'f16[d]'}\nlet:\n  s: dot(q, k) * scale\nmask: j <= i\n"
		 "state:\n  %s\nidentity:\n  %s\nlift:\n  %s\nmerge:\n  %s\nfinalize:\n  %s\nlaws: [commutative]\n",
		 block[0], block[1], block[2], block[3], block[4]);
	return text_ok(text);
}

Test(attention, weighted_sums_not_plain_are_refused, .timeout = 300)
{
	cuda_test_cache();
	static const struct {
		const char *state, *identity, *lift, *merge, *fin, *why;
	} bad[] = {
		/* a max of weighted values: lawful, no sum */
		{"o: 'f32[d]'", "o: -inf", "o: sigmoid(s) * v", "o: max(a.o, b.o)", "out: o",
		 "the merge of 'o' is not a plain sum (disproved: "},
		/* l merged by (1 + a)(1 + b) - 1: lawful, identity 0, no sum */
		{"o: 'f32[d]'|l: f32", "o: 0|l: 0", "o: sigmoid(s) * v|l: sigmoid(s)", "o: a.o + b.o|l: a.l + b.l + a.l * b.l",
		 "out: o / l", "the merge of 'l' is not a plain sum (disproved: "},
		/* a product of weights */
		{"o: 'f32[d]'|p: f32", "o: 0|p: 1", "o: sigmoid(s) * v|p: sigmoid(s)", "o: a.o + b.o|p: a.p * b.p",
		 "out: o * p", "the merge of 'p' is not a plain sum"},
		/* o weighted by a value that is not elementwise */
		{"o: 'f32[d]'", "o: 0", "o: v * v", "o: a.o + b.o", "out: o",
		 "the lift of 'o' is not w * v with w a scalar weight and v a column input"},
		{"o: 'f32[d]'", "o: 0", "o: v * 2", "o: a.o + b.o", "out: o",
		 "the weight of 'o' is not an expression of one dot(q, k)"},
		{"o: 'f32[d]'|l: f32", "o: 0|l: 0", "o: sigmoid(s) * v|l: dot(q, q)", "o: a.o + b.o|l: a.l + b.l",
		 "out: o / l", "the lift of 'l' takes another dot product than the weight's"},
		{"o: 'f32[d]'|l: f32|n: f32|c: f32", "o: 0|l: 0|n: 0|c: 0", "o: sigmoid(s) * v|l: 1|n: 1|c: 1",
		 "o: a.o + b.o|l: a.l + b.l|n: a.n + b.n|c: a.c + b.c", "out: o / l",
		 "not an attention carrier over rows and columns"},
		{"o: 'f32[d]'|p: 'f32[d]'", "o: 0|p: 0", "o: sigmoid(s) * v|p: v", "o: a.o + b.o|p: a.p + b.p", "out: o + p",
		 "nor one vector field and at most two scalar sums (this one: 2 vector, 0 scalar fields)"},
	};
	for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
		Carrier *c = sum_carrier(bad[k].state, bad[k].identity, bad[k].lift, bad[k].merge, bad[k].fin);
		CudaAttn at;
		char msg[1024];
		cr_expect_eq(cuda_attn_match(c, &at, msg, sizeof msg), -1, "case %zu matched", k);
		cr_expect(strstr(msg, bad[k].why), "case %zu: %s", k, msg);
		CudaModule m;
		cr_assert_eq(cuda_module(c, NULL, &m, msg, sizeof msg), 0, "%s", msg);
		cr_expect_neq(m.base, FAM_ATTN, "case %zu", k);
		cr_expect(strstr(m.explain, "not the attention contract: ") && strstr(m.explain, bad[k].why), "case %zu: %s",
			  k, m.explain);
		cuda_module_free(&m);
		if (k == 0) /* and it runs, on the generic template */
			run_one(c, "max of weighted values", 9, 77, 2, 1, 1, NULL, NULL);
		spec_carrier_free(c);
	}
	static const char *const sums[][2] = {
		{"o: b.o + a.o|l: b.l + a.l", "merge structurally plain sums (weighted sum: o -> o, sums l)"},
		{"o: a.o * 1 + b.o|l: fma(a.l, 1, b.l)", "merge proved equal to plain sums (weighted sum: o -> o, sums l; "},
	};
	for (size_t k = 0; k < sizeof sums / sizeof *sums; k++) {
		Carrier *c = sum_carrier("o: 'f32[d]'|l: f32", "o: 0|l: 0", "o: sigmoid(s) * v|l: sigmoid(s)", sums[k][0],
					 "out: o / l");
		CudaAttn at;
		char msg[1024];
		cr_assert_eq(cuda_attn_match(c, &at, msg, sizeof msg), 0, "%s: %s", sums[k][0], msg);
		cr_expect(strstr(at.evidence, sums[k][1]) && !strstr(at.evidence, "not a proof"), "%s", at.evidence);
		spec_carrier_free(c);
	}
	/* a plain sum with another identity: refused after the merge */
	Carrier *c = sum_carrier("o: 'f32[d]'|l: f32", "o: 0|l: 1", "o: sigmoid(s) * v|l: sigmoid(s)",
				 "o: a.o + b.o|l: a.l + b.l", "out: o / l");
	CudaAttn at;
	char msg[1024];
	cr_expect_eq(cuda_attn_match(c, &at, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "a weighted sum's identity is 0, and that of 'l' is not"), "%s", msg);
	spec_carrier_free(c);
}

/* The weighted sum's default configurations and decoding's assemble for
 * sm_90 without spills or stack at head dims 64 and 128, f16 and bf16,
 * with the scalar sums beside o, and with a weight that divides (the
 * IEEE division's slow path a call). */
Test(attention, ptxas_sigmoid_without_spills, .timeout = 300)
{
	cuda_test_cache();
	Nvrtc *nv;
	char msg[4096];
	if (nvrtc_open(&nv, msg, sizeof msg))
		cr_skip_test("no NVRTC: %s", msg);
	static const char *const paths[] = {SIGMOID, "tests/attention/sigmoid_bf16.yaml",
					    "tests/attention/sigmoid_normalized.yaml", "tests/attention/rational_weight.yaml"};
	static const int dims[] = {64, 128};
	for (size_t p = 0; p < sizeof paths / sizeof *paths; p++)
		for (int k = 0; k < 2; k++) {
			Carrier *c = load_dims(paths[p], dims[k]);
			CudaModule m;
			char what[256];
			cr_assert_eq(cuda_module(c, NULL, &m, msg, sizeof msg), 0, "%s", msg);
			cr_assert_eq(m.base, FAM_ATTN, "%s", m.explain);
			snprintf(what, sizeof what, "%s d=%d", paths[p], dims[k]);
			ptxas_clean(nv, c, &m, what);
		}
	nvrtc_close(nv);
}

/* bench's TFLOP/s counts both products of a kept query-key pair: q k over
 * the query's width and P v over the value's, 2 (d + dv) flops. */
Test(attention, flops_count_both_products)
{
	Define defs[2] = {{"d", "64"}, {"dv", "128"}};
	Carrier *c = load_defs("tests/attention/full.yaml", defs, 2);
	CudaAttn at;
	char why[512];
	cr_assert_eq(cuda_attn_match(c, &at, why, sizeof why), 0, "%s", why);
	cr_assert(at.d == 64 && at.dv == 128, "d %d, dv %d", at.d, at.dv);
	RunData *d = rundata_new_heads(c, 10, 20, 2, 1);
	cr_expect_eq(rundata_attention_flops(d, at.d, at.dv), 2.0 * 10 * 20 * (64 + 128) * 2);
	rundata_free(d);
	spec_carrier_free(c);
}
