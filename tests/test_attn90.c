/* test_attn90.c: the Hopper attention template (templates/attention_sm90.cuh)
 * on the emulator against the float64 reference: head dims 64, 128 and
 * 256, f16 and bf16, causal and not, weighted sums (sigmoid attention),
 * key lengths under a tile, between tiles and past several, one query
 * row, fully masked rows, grouped heads, splits of the keys, one and two
 * warpgroups, one to three stages, and the warp-specialized schedules
 * (ws 1 and 2) at such shapes too; the choice (sm_90a only, head dims it
 * takes, the fallback's reasons); its PTX for sm_90a holding wgmma, TMA
 * and mbarriers and assembling without spills; the tensor maps the host
 * builds (the fake driver's encoder). */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "compiler/cuda/cuda.h"
#include "compiler/cuda/nvrtc.h"
#include "compiler/devices/emu.h"
#include "compiler/devices/gpu.h"
#include "compiler/devices/run.h"
#include "compiler/util/cache.h"
#include "cudatest.h"
#include "testutil.h"

/* An attention spec at head dims d = dv (0: the spec's own). */
static Carrier *load_dims(const char *path, int d)
{
	char dv[16];
	snprintf(dv, sizeof dv, "%d", d);
	Define defs[2] = {{"d", dv}, {"dv", dv}};
	return load_defs(path, defs, d ? 2 : 0);
}

/* One run as sm_90a on the emulator, checked against the reference; the
 * variant that ran must be the Hopper template's. */
static void run90(Carrier *c, const char *what, int rows, int len, int heads, int kv, int split, const char *config)
{
	RunData *d = rundata_new_heads(c, rows, len, heads, kv);
	char msg[4096] = "";
	cr_assert_eq(rundata_draw(d, 5, NULL, 0, msg, sizeof msg), 0, "%s", msg);
	RunOpts o = {.split = split, .config = config, .arch = "sm_90a"};
	EmuStats st;
	cr_assert_eq(emu_run_data(d, &o, &st, msg, sizeof msg), 0, "%s %dx%d, %d/%d heads, split %d: %s", what, rows,
		     len, heads, kv, split, msg);
	cr_expect(strstr(st.config, ",wg="), "%s %dx%d: ran %s, not the Hopper template", what, rows, len, st.config);
	const char *ws = config ? strstr(config, ",ws=") : NULL;
	if (ws)
		cr_expect(strstr(st.config, ws), "%s %dx%d: ran %s, not the schedule %s", what, rows, len, st.config, ws + 1);
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

/* Key lengths: none, under a warp, under a tile, a tile and one, several
 * tiles and a part; query rows: one, under a warpgroup, past a block. */
static void lengths(const char *path, int d)
{
	cuda_test_cache();
	Carrier *c = load_dims(path, d);
	static const int lens[] = {0, 7, 100, 129, 300};
	static const int rows[] = {1, 37, 130};
	for (size_t l = 0; l < sizeof lens / sizeof *lens; l++)
		for (size_t r = 0; r < sizeof rows / sizeof *rows; r++)
			if (rows[r] > 64 || l % 2 == 0) /* the cheap shapes at every other length */
				run90(c, path, rows[r], lens[l], 1, 1, 1, rows[r] > 64 ? NULL : "attention:wg=2,bn=128");
	spec_carrier_free(c);
}

Test(attn90, full_bf16_head_dim_64, .timeout = 600) { lengths("tests/attention/full_bf16.yaml", 64); }
Test(attn90, causal_f16_head_dim_64, .timeout = 600) { lengths("specs/attention.yaml", 64); }
Test(attn90, full_bf16_head_dim_128, .timeout = 600) { lengths("tests/attention/full_bf16.yaml", 128); }
Test(attn90, causal_f16_head_dim_128, .timeout = 600) { lengths("specs/attention.yaml", 128); }
Test(attn90, causal_bf16_head_dim_256, .timeout = 600)
{
	cuda_test_cache();
	Carrier *c = load_dims("tests/attention/causal_bf16.yaml", 256);
	run90(c, "d=256", 130, 129, 1, 1, 1, NULL);
	run90(c, "d=256", 65, 300, 1, 1, 1, NULL);
	spec_carrier_free(c);
}

/* Rows that see no key give the declared value; grouped heads share their
 * keys; splits of the keys merge (attn_split_last). */
Test(attn90, masked_rows_grouped_heads_and_splits, .timeout = 600)
{
	cuda_test_cache();
	Carrier *c = load_dims("tests/attention/empty_rows.yaml", 0);
	run90(c, "fully masked rows", 70, 40, 1, 1, 1, NULL);
	spec_carrier_free(c);
	c = load_dims("specs/attention.yaml", 64);
	run90(c, "gqa", 33, 170, 4, 2, 1, NULL);
	run90(c, "mqa, split 3", 70, 400, 3, 1, 3, NULL);
	run90(c, "split 2, short", 65, 20, 2, 2, 2, NULL);
	spec_carrier_free(c);
	c = load_dims("tests/attention/window.yaml", 64);
	run90(c, "window", 130, 200, 1, 1, 1, NULL);
	spec_carrier_free(c);
	c = load_dims("tests/attention/softcap.yaml", 64);
	run90(c, "soft cap", 70, 129, 1, 1, 1, NULL);
	spec_carrier_free(c);
}

/* One warpgroup and two; key tiles of 64 and 128; one, two and three
 * stages; P V at float32's precision (pv = 3). */
Test(attn90, configurations, .timeout = 600)
{
	cuda_test_cache();
	Carrier *c = load_dims("tests/attention/full_bf16.yaml", 64);
	static const char *const cfgs[] = {"attention:wg=1,bn=64,st=1", "attention:wg=1,bn=128,st=3",
					   "attention:wg=2,bn=64,st=3", "attention:wg=2,bn=128,st=2,pv=3"};
	for (size_t k = 0; k < sizeof cfgs / sizeof *cfgs; k++) {
		run90(c, cfgs[k], 70, 333, 1, 1, 1, cfgs[k]);
		run90(c, cfgs[k], 1, 64, 2, 1, 1, cfgs[k]);
	}
	spec_carrier_free(c);
}

/* The Hopper template on sm_90a alone, for the head dims it takes; the
 * mma.sync template stays in the module (decoding, the fallback the tuner
 * times beside it); a configuration naming it elsewhere is refused with
 * the reason. */
Test(attn90, chosen_on_sm_90a_only)
{
	Carrier *c = load_dims("tests/attention/full_bf16.yaml", 128);
	CudaModule m;
	char msg[1024];
	cr_assert_eq(cuda_module_for(c, NULL, "sm_90a", 0, &m, msg, sizeof msg), 0, "%s", msg);
	cr_expect(strstr(m.explain, "Hopper template"), "%s", m.explain);
	int h = cuda_pick(&m, 4096, 4096, 1), dec = cuda_pick(&m, 1, 4096, 1), plain = 0;
	cr_expect_gt(m.var[h].wg, 0, "prefill on sm_90a takes the Hopper template");
	cr_expect_eq(m.var[h].ws, 0, "and its schedule without a producer until a device has timed the others");
	cr_expect_eq(m.var[dec].wg, 0, "decoding keeps its split-KV kernels");
	for (int v = 0; v < m.nvar; v++)
		plain += m.var[v].wg == 0;
	cr_expect_gt(plain, 1, "the mma.sync variants stay beside it");
	cr_expect(strstr(m.src, "attn90_fwd<128, 128, 2, 128, 1, 1, 2>(A, T)"), "the default variant's kernel");
	cuda_module_free(&m);
	/* head dim 64: 16 query rows x 8 heads, 8 blocks split to fill each SM
	 * once; two would fit its shared memory, not its registers */
	spec_carrier_free(c);
	c = load_dims("tests/attention/full_bf16.yaml", 64);
	cr_assert_eq(cuda_module_for(c, NULL, "sm_90a", 0, &m, msg, sizeof msg), 0, "%s", msg);
	h = cuda_pick(&m, 4096, 4096, 1);
	cr_assert_gt(m.var[h].wg, 0);
	cr_assert_lt(2 * (cuda_smem(&m, h) + 1024), 228 * 1024, "two blocks' shared memory fits an SM");
	cr_expect_eq(cuda_attn_split(&m, h, 16, 32768, 8, 132), 16, "one Hopper block an SM");
	cuda_module_free(&m);
	spec_carrier_free(c);
	c = load_dims("tests/attention/full_bf16.yaml", 128);
	static const char *const others[] = {"sm_90", "sm_80", "compute_90", NULL};
	for (int k = 0; k < 4; k++) {
		cr_assert_eq(cuda_module_for(c, NULL, others[k], 0, &m, msg, sizeof msg), 0, "%s", msg);
		for (int v = 0; v < m.nvar; v++)
			cr_expect_eq(m.var[v].wg, 0, "no Hopper variant for %s", others[k] ? others[k] : "the default");
		cr_expect(!strstr(m.src, "attention_sm90"), "the template is left out of the module");
		cuda_module_free(&m);
	}
	cr_expect_neq(cuda_module_for(c, "attention:wg=2,bn=128", "sm_90", 0, &m, msg, sizeof msg), 0);
	cr_expect(strstr(msg, "not sm_90a"), "%s", msg);
	spec_carrier_free(c);
	c = load_dims("tests/attention/full_bf16.yaml", 96);
	cr_assert_eq(cuda_module_for(c, NULL, "sm_90a", 0, &m, msg, sizeof msg), 0, "%s", msg);
	cr_expect(strstr(m.explain, "not the Hopper template: head dims 96/96"), "%s", m.explain);
	for (int v = 0; v < m.nvar; v++)
		cr_expect_eq(m.var[v].wg, 0);
	cuda_module_free(&m);
	cr_expect_neq(cuda_module_for(c, "attention:wg=1", "sm_90a", 0, &m, msg, sizeof msg), 0);
	cr_expect(strstr(msg, "multiples of 64"), "%s", msg);
	spec_carrier_free(c);
}

Test(attn90, configuration_text)
{
	Variant v;
	char msg[256], buf[128];
	cr_assert_eq(variant_parse("attention:wg=2,bn=192,st=3", &v, msg, sizeof msg), 0, "%s", msg);
	cr_expect(v.wg == 2 && v.nt == 256 && v.mt == 1 && v.ks == 1 && v.bn == 192 && v.st == 3);
	variant_str(&v, buf, sizeof buf);
	cr_expect_str_eq(buf, "attention:nt=256,mt=1,bn=192,pv=1,st=3,wg=2");
	Variant w;
	cr_assert_eq(variant_parse(buf, &w, msg, sizeof msg), 0, "%s", msg);
	cr_expect(!memcmp(&v, &w, sizeof v), "the text reads back as the same variant");
	/* the warp-specialized schedules: a producer warpgroup more, named
	 * only where there is one */
	for (int ws = 1; ws <= 2; ws++) {
		char in[64];
		snprintf(in, sizeof in, "attention:wg=2,bn=128,st=2,ws=%d", ws);
		cr_assert_eq(variant_parse(in, &v, msg, sizeof msg), 0, "%s", msg);
		cr_expect(v.ws == ws && v.wg == 2 && v.nt == 384 && cuda_attn_rows(&v) == 128);
		variant_str(&v, buf, sizeof buf);
		char want[96];
		snprintf(want, sizeof want, "attention:nt=384,mt=1,bn=128,pv=1,st=2,wg=2,ws=%d", ws);
		cr_expect_str_eq(buf, want);
		cr_assert_eq(variant_parse(buf, &w, msg, sizeof msg), 0, "%s", msg);
		cr_expect(!memcmp(&v, &w, sizeof v), "%s reads back as the same variant", buf);
	}
	cr_assert_eq(variant_parse("attention:ws=1", &v, msg, sizeof msg), 0, "%s", msg);
	cr_expect(v.wg == 2 && v.nt == 384, "ws alone: its two consumer warpgroups");
	static const char *const bad[] = {"attention:wg=4", "attention:wg=1,bn=72", "attention:wg=1,bn=512",
					  "attention:wg=1,st=5", "attention:wg=-1", "attention:wg=1,ws=1",
					  "attention:wg=2,st=1,ws=1", "attention:wg=2,ws=3", "attention:wg=2,ws=-1"};
	for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
		cr_expect_neq(variant_parse(bad[k], &v, msg, sizeof msg), 0, "%s", bad[k]);
		cr_expect(strstr(msg, "out of range") || strstr(msg, "expected"), "%s: %s", bad[k], msg);
	}
}

/* The warp-specialized schedules on the emulator at odd shapes: one
 * query row, rows past a block, keys under a tile and past several, no
 * keys, fully masked rows, grouped heads, splits, windows, soft caps,
 * head dims 64, 128 and 256, f16 and bf16, weighted sums; two and three
 * stages, 64 and 128 keys a tile (several turns of the ring). */
static void ws_shapes(int ws)
{
	cuda_test_cache();
	static const struct {
		const char *path;
		int d, rows, len, heads, kv, split, bn, st;
	} runs[] = {{"tests/attention/full_bf16.yaml", 64, 130, 300, 1, 1, 1, 128, 2},
		    {"specs/attention.yaml", 64, 1, 129, 1, 1, 1, 64, 2},
		    {"specs/attention.yaml", 64, 200, 333, 1, 1, 1, 64, 3},
		    {"tests/attention/full_bf16.yaml", 64, 37, 0, 1, 1, 1, 128, 2},
		    {"specs/attention.yaml", 128, 70, 333, 1, 1, 1, 128, 2},
		    {"tests/attention/full_bf16.yaml", 128, 65, 100, 1, 1, 1, 128, 3},
		    {"tests/attention/causal_bf16.yaml", 256, 130, 129, 1, 1, 1, 64, 2},
		    {"tests/attention/empty_rows.yaml", 0, 70, 40, 1, 1, 1, 64, 2},
		    {"specs/attention.yaml", 64, 33, 170, 4, 2, 1, 64, 2},
		    {"specs/attention.yaml", 64, 70, 400, 3, 1, 3, 64, 2},
		    {"specs/attention.yaml", 64, 65, 20, 2, 2, 2, 64, 2},
		    {"tests/attention/window.yaml", 64, 130, 200, 1, 1, 1, 64, 2},
		    {"tests/attention/softcap.yaml", 64, 70, 129, 1, 1, 1, 64, 3},
		    {"specs/sigmoid_attention.yaml", 64, 70, 400, 4, 2, 3, 64, 2},
		    {"tests/attention/sigmoid_empty_rows.yaml", 0, 130, 150, 1, 1, 1, 64, 2}};
	for (size_t k = 0; k < sizeof runs / sizeof *runs; k++) {
		Carrier *c = load_dims(runs[k].path, runs[k].d);
		char cfg[96];
		snprintf(cfg, sizeof cfg, "attention:wg=2,bn=%d,st=%d,ws=%d", runs[k].bn, runs[k].st, ws);
		run90(c, runs[k].path, runs[k].rows, runs[k].len, runs[k].heads, runs[k].kv, runs[k].split, cfg);
		spec_carrier_free(c);
	}
}

Test(attn90, warp_specialized_ping_pong, .timeout = 900) { ws_shapes(1); }
Test(attn90, warp_specialized_overlap, .timeout = 900) { ws_shapes(2); }

/* The warp-specialized schedules: in the tuning space on sm_90a (each at
 * every head dim, behind the default, which prefill keeps), a kernel of
 * three warpgroups; named by --explain; refused where their stages do
 * not fit; and their PTX for sm_90a, with the registers handed over
 * (setmaxnreg) and the turns (bar.sync, bar.arrive), assembles without
 * spills at head dims 64, 128 and 256. */
Test(attn90, warp_specialized_variants, .timeout = 600)
{
	cuda_test_cache();
	char msg[4096];
	static const int dims[] = {64, 128, 256};
	for (int k = 0; k < 3; k++) {
		Carrier *c = load_dims("tests/attention/causal_bf16.yaml", dims[k]);
		CudaModule m;
		cr_assert_eq(cuda_module_space_for(c, "sm_90a", 0, &m, msg, sizeof msg), 0, "%s", msg);
		int n[3] = {0, 0, 0}, h = cuda_pick(&m, 8192, 8192, 1);
		for (int v = 0; v < m.nvar; v++)
			if (m.var[v].wg) {
				n[m.var[v].ws]++;
				cr_expect(m.var[v].ws == 0 || (m.var[v].nt == 384 && m.var[v].st >= 2));
			}
		cr_expect(n[0] > 0 && n[1] > 0 && n[2] > 0, "d=%d: %d, %d and %d variants of ws 0, 1, 2", dims[k], n[0], n[1],
			  n[2]);
		cr_expect(m.var[h].wg && !m.var[h].ws, "d=%d: the rule keeps the default schedule", dims[k]);
		cr_expect(strstr(m.explain, "the tuner times its warp-specialized schedules"), "%s", m.explain);
		cuda_module_free(&m);
		spec_carrier_free(c);
	}
	Carrier *c = load_dims("tests/attention/full_bf16.yaml", 128);
	CudaModule m;
	cr_assert_eq(cuda_module_for(c, "attention:wg=2,bn=128,st=2,ws=1", "sm_90a", 0, &m, msg, sizeof msg), 0, "%s", msg);
	cr_expect(strstr(m.explain, "the configuration's schedule: warp-specialized ping-pong (ws=1"), "%s", m.explain);
	cr_expect(strstr(m.src, "attn90_ws<128, 128, 128, 1, 1, 2, 0, 24>(A, T)"), "the kernel of ws=1");
	cr_expect(strstr(m.src, "__launch_bounds__(384, 1)"), "three warpgroups, one block an SM");
	CudaPlan p;
	cuda_plan(&m, 0, 1000, 1000, 1, &p);
	cr_expect(p.k[0].block == 384 && p.k[0].grid == 8, "%u blocks of %u threads", p.k[0].grid, p.k[0].block);
	cuda_module_free(&m);
	cr_assert_eq(cuda_module_for(c, "attention:wg=2,bn=128,st=3,ws=2", "sm_90a", 0, &m, msg, sizeof msg), 0, "%s", msg);
	cr_expect(strstr(m.explain, "the configuration's schedule: warp-specialized with overlap (ws=2"), "%s", m.explain);
	cuda_module_free(&m);
	spec_carrier_free(c);
	/* at head dim 256 two stages of 128 keys do not fit beside Q */
	c = load_dims("tests/attention/full_bf16.yaml", 256);
	cr_expect_neq(cuda_module_for(c, "attention:wg=2,bn=128,st=2,ws=1", "sm_90a", 0, &m, msg, sizeof msg), 0);
	cr_expect(strstr(msg, "KB of shared memory"), "%s", msg);
	spec_carrier_free(c);

	Nvrtc *nv;
	if (nvrtc_open(&nv, msg, sizeof msg))
		cr_skip_test("no NVRTC: %s", msg);
	/* every head dim and every contract, not every pair: each compile is
	 * seconds, and the registers a schedule takes grow with the head dim */
	static const struct {
		const char *spec;
		int d;
	} runs[] = {{"tests/attention/full_bf16.yaml", 256},
		    {"tests/attention/full_bf16.yaml", 128},
		    {"specs/attention.yaml", 128},
		    {"specs/sigmoid_attention.yaml", 64}};
	for (int r = 0; r < 4; r++)
		for (int ws = 1; ws <= 2; ws++) {
			const char *spec = runs[r].spec;
			int d = runs[r].d;
			c = load_dims(spec, d);
			char cfg[96];
			snprintf(cfg, sizeof cfg, "attention:wg=2,bn=%d,st=2,ws=%d", d > 128 ? 64 : 128, ws);
			cr_assert_eq(cuda_module_for(c, cfg, "sm_90a", 0, &m, msg, sizeof msg), 0, "%s", msg);
			char *ptx = NULL;
			int cached;
			cr_assert_eq(nvrtc_ptx(nv, m.src, "sm_90a", &ptx, &cached, msg, sizeof msg), 0, "%s %s: %s",
				     spec, cfg, msg);
			cr_expect(cached || !*nvrtc_said(nv), "%s %s: NVRTC warned:\n%s", spec, cfg, nvrtc_said(nv));
			cr_expect(strstr(ptx, "setmaxnreg.dec.sync.aligned.u32 24") &&
				  strstr(ptx, "setmaxnreg.inc.sync.aligned.u32 240"), "%s: the registers handed over", cfg);
			cr_expect(strstr(ptx, "bar.sync") && strstr(ptx, "bar.arrive"), "%s: the turns", cfg);
			cr_expect_gt(cuda_count(ptx, NULL, "wgmma.mma_async"), 0);
			char what[160];
			snprintf(what, sizeof what, "%s d=%d %s", spec, d, cfg);
			CudaKStat ks[8];
			int nk = cuda_expect_unspilled(ptx, "sm_90a", what, ks, 8, msg, sizeof msg);
			/* the block's register pool, which setmaxnreg moves between its
			 * warpgroups, is what it is launched with: 384 x 168 = 128 x 24
			 * + 256 x 240; with fewer a consumer's setmaxnreg.inc waits for ever */
			for (int k = 0; k < nk; k++)
				if (strstr(ks[k].name, "_fwd"))
					cr_expect_eq(ks[k].regs, 168, "%s %s: %d registers at launch", what, ks[k].name, ks[k].regs);
			free(ptx);
			cuda_module_free(&m);
			spec_carrier_free(c);
			if (nk < 0) {
				nvrtc_close(nv);
				cr_skip_test("%s", msg);
			}
		}
	nvrtc_close(nv);
}

/* The warp-specialized producer walks to each next live key tile itself,
 * through the mask's interval hook in doubles: where that multiplies, at
 * 24 registers ptxas spilled a row bound of the walk (the product mask:
 * 20 bytes with ws 1 at head dims 64 to 256, 24 with ws 2 at 64 and
 * 256).  Such a mask's
 * producer keeps 40 registers, its consumers 232, and both schedules
 * assemble without spills or stack; a causal mask's keep 24 and 240; the
 * product mask's fold on the emulator matches the reference. */
Test(attn90, mask_walk_fits_the_producer, .timeout = 600)
{
	cuda_test_cache();
	char msg[4096];
	static const struct {
		const char *path;
		int d, ws, pr;
	} runs[] = {{"tests/attention/product_mask.yaml", 64, 1, 40},
		    {"tests/attention/product_mask.yaml", 64, 2, 40},
		    {"tests/attention/product_mask.yaml", 128, 1, 40},
		    {"specs/attention.yaml", 64, 1, 24}};
	for (size_t r = 0; r < sizeof runs / sizeof *runs; r++) {
		Carrier *c = load_dims(runs[r].path, runs[r].d);
		CudaModule m;
		char cfg[96], what[160], want[64];
		snprintf(cfg, sizeof cfg, "attention:wg=2,bn=128,st=2,ws=%d", runs[r].ws);
		cr_assert_eq(cuda_module_for(c, cfg, "sm_90a", 0, &m, msg, sizeof msg), 0, "%s", msg);
		snprintf(want, sizeof want, ", %d, %d>(A, T)", runs[r].ws - 1, runs[r].pr);
		cr_expect(strstr(m.src, want), "%s %s: the producer's %d registers", runs[r].path, cfg, runs[r].pr);
		snprintf(what, sizeof what, "%s d=%d %s", runs[r].path, runs[r].d, cfg);
		int n = cuda_src_unspilled(m.src, "sm_90a", what, msg, sizeof msg);
		cuda_module_free(&m);
		spec_carrier_free(c);
		if (n < 0)
			cr_skip_test("%s", msg);
	}
	Carrier *c = load_dims("tests/attention/product_mask.yaml", 64);
	run90(c, "product_mask ws=1", 130, 300, 1, 1, 1, "attention:wg=2,bn=128,st=2,ws=1");
	spec_carrier_free(c);
}

/* ws 2 keeps S of a tile and P of the last beside o, and a weighted
 * sum's scalar fields add their lifts: at head dim 128 the consumers of
 * rational_weight (whose weight divides, a slow-path call) and
 * sigmoid_normalized spilled 196 and 60 bytes at 128 keys a tile.  Their
 * tuning spaces take 64 there, which assemble without spills or stack;
 * a weighted sum without scalar fields keeps 128. */
Test(attn90, overlapped_sums_with_scalar_fields_take_64_keys, .timeout = 600)
{
	cuda_test_cache();
	char msg[4096];
	static const struct {
		const char *path;
		int bn;
	} runs[] = {{"tests/attention/rational_weight.yaml", 64},
		    {"tests/attention/sigmoid_normalized.yaml", 64},
		    {"tests/attention/sigmoid_full.yaml", 128}};
	for (size_t r = 0; r < sizeof runs / sizeof *runs; r++) {
		Carrier *c = load_dims(runs[r].path, 128);
		CudaModule m;
		cr_assert_eq(cuda_module_space_for(c, "sm_90a", 0, &m, msg, sizeof msg), 0, "%s", msg);
		int n = 0;
		for (int v = 0; v < m.nvar; v++)
			if (m.var[v].ws == 2) {
				cr_expect_eq(m.var[v].bn, runs[r].bn, "%s: ws=2 with %d keys a tile", runs[r].path, m.var[v].bn);
				n++;
			}
		cr_expect_eq(n, 2, "%s: ws=2 at two and three stages", runs[r].path);
		cuda_module_free(&m);
		if (runs[r].bn == 64) {
			cr_assert_eq(cuda_module_for(c, "attention:wg=2,bn=64,st=2,ws=2", "sm_90a", 0, &m, msg, sizeof msg), 0,
				     "%s", msg);
			int nk = cuda_src_unspilled(m.src, "sm_90a", runs[r].path, msg, sizeof msg);
			cuda_module_free(&m);
			if (nk < 0) {
				spec_carrier_free(c);
				cr_skip_test("%s", msg);
			}
		}
		spec_carrier_free(c);
	}
}

/* The tensor maps of the shapes a launch gives: boxes of 64 columns,
 * BM query rows and bn keys, dims that never go to 0, 16-bit elements
 * with the 128-byte swizzle. */
Test(attn90, tensor_map_layouts)
{
	Carrier *c = load_dims("specs/attention.yaml", 128);
	CudaModule m;
	char msg[512];
	cr_assert_eq(cuda_module_for(c, "attention:wg=2,bn=64,st=2", "sm_90a", 0, &m, msg, sizeof msg), 0, "%s", msg);
	CudaArgs a = {0};
	static unsigned short q[1], k[1], v[1];
	a.in[m.attn.qi] = q, a.in[m.attn.ki] = k, a.in[m.attn.vi] = v;
	a.rows = 100, a.len = 1000, a.heads = 8, a.kv_heads = 2;
	CudaTmap t[3];
	cuda_attn90_maps(&m, 0, &a, t);
	cr_expect(t[0].rank == 2 && t[0].dims[0] == 128 && t[0].dims[1] == 800 && t[0].strides[0] == 256);
	cr_expect(t[0].box[0] == 64 && t[0].box[1] == 128 && t[0].base == q);
	cr_expect(t[1].rank == 3 && t[1].dims[1] == 1000 && t[1].dims[2] == 2 && t[1].strides[1] == 256000);
	cr_expect(t[1].box[1] == 64 && t[1].box[2] == 1 && t[1].base == k && t[2].base == v);
	for (int i = 0; i < 3; i++)
		cr_expect(t[i].elem_bytes == 2 && t[i].swizzle == 128, "map %d: 16-bit elements, the 128-byte swizzle", i);
	a.len = 0, a.rows = 0;
	cuda_attn90_maps(&m, 0, &a, t);
	cr_expect(t[0].dims[1] >= 1 && t[1].dims[1] >= 1, "an empty shape still encodes");
	cr_expect_eq(cuda_smem(&m, 0), 2u * 64 * 128 * 2 + 2u * 64 * 256 * 2 + 8 * 5 + 1024);
	cuda_module_free(&m);
	spec_carrier_free(c);
}

/* `emit --target ptx --arch sm_90a`: wgmma for both products, TMA copies
 * completing mbarriers, no spills or stack at head dims 64, 128 and 256,
 * f16 and bf16, and for a weighted sum (sigmoid attention). */
Test(attn90, ptx_for_sm_90a_without_spills, .timeout = 600)
{
	cuda_test_cache();
	Nvrtc *nv;
	char msg[4096];
	if (nvrtc_open(&nv, msg, sizeof msg))
		cr_skip_test("no NVRTC: %s", msg);
	static const struct {
		const char *path;
		int d;
	} runs[] = {{"tests/attention/full_bf16.yaml", 64},  {"tests/attention/full_bf16.yaml", 128},
		    {"tests/attention/full_bf16.yaml", 256}, {"specs/attention.yaml", 64},
		    {"specs/attention.yaml", 128},           {"specs/attention.yaml", 256},
		    {"specs/sigmoid_attention.yaml", 64},    {"specs/sigmoid_attention.yaml", 128}};
	for (size_t r = 0; r < sizeof runs / sizeof *runs; r++) {
		Carrier *c = load_dims(runs[r].path, runs[r].d);
		CudaModule m;
		cr_assert_eq(cuda_module_for(c, NULL, "sm_90a", 0, &m, msg, sizeof msg), 0, "%s", msg);
		int h = cuda_pick(&m, 4096, 4096, 1);
		char cfg[128];
		variant_str(&m.var[h], cfg, sizeof cfg);
		cuda_module_free(&m);
		cr_assert_eq(cuda_module_for(c, cfg, "sm_90a", 0, &m, msg, sizeof msg), 0, "%s", msg);
		char *ptx = NULL;
		int cached;
		cr_assert_eq(nvrtc_ptx(nv, m.src, "sm_90a", &ptx, &cached, msg, sizeof msg), 0, "%s d=%d: %s", runs[r].path,
			     runs[r].d, msg);
		cr_expect(strstr(ptx, ".target sm_90a"), "the arch-specific target");
		cr_expect_gt(cuda_count(ptx, NULL, "wgmma.mma_async"), 0, "d=%d: wgmma", runs[r].d);
		cr_expect_gt(cuda_count(ptx, NULL, "cp.async.bulk.tensor"), 0, "d=%d: TMA", runs[r].d);
		cr_expect_gt(cuda_count(ptx, NULL, "mbarrier.try_wait.parity"), 0, "d=%d: mbarrier", runs[r].d);
		char what[160];
		snprintf(what, sizeof what, "%s d=%d", runs[r].path, runs[r].d);
		int n = cuda_expect_unspilled(ptx, "sm_90a", what, NULL, 0, msg, sizeof msg);
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

/* A launch of path's prefill on the fake driver's sm_90 device, whose
 * encoder checks a map's box against its swizzle as the driver does: the
 * module compiled for sm_90a, the variant the Hopper template's, each
 * launch encoding the three tensor maps (q, k, v).  The device, buffers,
 * data, variant and the driver's count of maps are left for more. */
typedef struct {
	Gpu g;
	GpuBufs b;
	RunData *d;
	Carrier *c;
	void *lib;
	int (*tmaps)(void);
	int v;
} FakeLaunch;

static void fake_hopper_launch(FakeLaunch *f, const char *path)
{
	char msg[4096];
	Nvrtc *nv;
	if (nvrtc_open(&nv, msg, sizeof msg))
		cr_skip_test("no NVRTC: %s", msg);
	nvrtc_close(nv);
	cuda_test_cache();
	setenv("ASSOC_LIBCUDA", "build/libfakecuda.so", 1);
	setenv("FAKECUDA", "", 1);
	f->c = load_dims(path, 64);
	f->d = rundata_new(f->c, 200, 300);
	cr_assert_eq(rundata_draw(f->d, 3, NULL, 0, msg, sizeof msg), 0, "%s", msg);
	f->lib = dlopen("build/libfakecuda.so", RTLD_NOW);
	f->tmaps = (int (*)(void))dlsym(f->lib, "fakecuda_tmaps");
	cr_assert(f->tmaps);
	cr_assert_eq(gpu_open(&f->g, f->c, 0, msg, sizeof msg), 0, "%s", msg);
	cr_expect_str_eq(f->g.arch, "sm_90a");
	f->v = cuda_pick(&f->g.m, f->d->rows, f->d->len, 1);
	cr_assert_gt(f->g.m.var[f->v].wg, 0, "%s", f->g.m.explain);
	cr_assert_eq(gpu_upload(&f->g, f->d, &f->b, msg, sizeof msg), 0, "%s", msg);
	int before = f->tmaps();
	cr_assert_eq(gpu_launch(&f->g, &f->b, f->v, 1, f->d->rows, f->d->len, msg, sizeof msg), 0, "%s", msg);
	cr_expect_eq(f->tmaps() - before, 3, "q, k and v");
}

/* On an sm_90 device (the fake driver), prefill takes the Hopper template
 * and encodes its maps at each launch; inputs off 16-byte alignment take
 * the mma.sync template; a driver without cuTensorMapEncodeTiled (before
 * CUDA 12) is named as the reason. */
Test(attn90, gpu_launch_encodes_tensor_maps, .timeout = 300)
{
	char msg[4096];
	FakeLaunch f;
	fake_hopper_launch(&f, "tests/attention/full_bf16.yaml");
	Gpu g = f.g;
	GpuBufs b = f.b;
	RunData *d = f.d;
	int v = f.v, (*tmaps)(void) = f.tmaps;
	/* a caller's q off 16-byte alignment, which TMA cannot read: the
	 * mma.sync template's variant runs instead, with no tensor map */
	const void *q = b.a.in[g.m.attn.qi];
	b.a.in[g.m.attn.qi] = (const char *)q + 2;
	int before = tmaps();
	cr_expect_eq(gpu_launch(&g, &b, v, 1, d->rows, d->len, msg, sizeof msg), 0, "%s", msg);
	cr_expect_eq(tmaps(), before, "no tensor map for a misaligned q");
	b.a.in[g.m.attn.qi] = q;
	gpu_free_bufs(&g, &b);
	gpu_close(&g);
	dlclose(f.lib);
	setenv("ASSOC_LIBCUDA", "build/libfakecuda-old.so", 1);
	cr_assert_eq(gpu_open(&g, f.c, 0, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(gpu_upload(&g, d, &b, msg, sizeof msg), 0, "%s", msg);
	cr_expect_eq(gpu_launch(&g, &b, v, 1, d->rows, d->len, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "no cuTensorMapEncodeTiled"), "%s", msg);
	gpu_free_bufs(&g, &b);
	gpu_close(&g);
	rundata_free(d);
	spec_carrier_free(f.c);
	unsetenv("ASSOC_LIBCUDA");
}

/* The command line: emit --explain and run --device emu --arch sm_90a name
 * the Hopper template and its schedule; --arch elsewhere than emu is a
 * usage error. */
Test(attn90, command_line_names_the_template, .timeout = 300)
{
	char out[16384];
	cr_expect_eq(sh("XDG_CACHE_HOME=$PWD/build/cache build/asan/assoc run specs/attention.yaml --device emu --arch sm_90a "
			"--rows 70 --len 90 --verbose", out, sizeof out, 1), 0, "%s", out);
	cr_expect(strstr(out, ",wg=2, split 1") && strstr(out, "prefill on the Hopper template"), "%s", out);
	cr_expect(strstr(out, "carrier attention on emu (sm_90a), 70 rows x 90"), "%s", out);
	cr_expect_eq(sh("build/asan/assoc emit specs/attention.yaml --target cuda --arch sm_90a --explain -o /dev/null", out,
			sizeof out, 1), 0, "%s", out);
	cr_expect(strstr(out, "Hopper template (attention_sm90"), "%s", out);
	cr_expect(strstr(out, "the tuner times its warp-specialized schedules ws=1 and ws=2"), "%s", out);
	cr_expect_eq(sh("build/asan/assoc emit specs/attention.yaml --target ptx --arch sm_90a --explain -o /dev/null "
			"--config attention:wg=2,bn=64,st=2,ws=2", out, sizeof out, 1), 0, "%s", out);
	cr_expect(strstr(out, "the configuration's schedule: warp-specialized with overlap (ws=2"), "%s", out);
	cr_expect_eq(sh("XDG_CACHE_HOME=$PWD/build/cache build/asan/assoc run specs/attention.yaml --device emu --arch sm_90a "
			"--rows 70 --len 90 --verbose --config attention:ws=1", out, sizeof out, 1), 0, "%s", out);
	cr_expect(strstr(out, "emu: attention:nt=384,mt=1,bn=64,pv=1,st=2,wg=2,ws=1, split 1"), "%s", out);
	cr_expect(strstr(out, "warp-specialized ping-pong (ws=1"), "%s", out);
	cr_expect_eq(sh("build/asan/assoc run specs/attention.yaml --device cpu --arch sm_90a", out, sizeof out, 1), 2);
	cr_expect(strstr(out, "--arch is an option of run --device emu"), "%s", out);
	cr_expect_eq(sh("build/asan/assoc emit specs/attention.yaml --target llvm --arch sm_90a -o /dev/null", out, sizeof out, 1),
		     2);
	cr_expect(strstr(out, "--arch is an option of emit --target cuda and ptx only"), "%s", out);
}

/* Weighted sums (sigmoid attention, normalized or not) on the Hopper
 * template: P is the weight, no maximum or rescale; rows that see no key
 * sum to the identity; splits add up; grouped heads. */
Test(attn90, weighted_sums, .timeout = 600)
{
	cuda_test_cache();
	Carrier *c = load_dims("specs/sigmoid_attention.yaml", 64);
	run90(c, "sigmoid", 130, 150, 1, 1, 1, NULL);
	run90(c, "sigmoid, gqa, split 3", 70, 400, 4, 2, 3, NULL);
	run90(c, "sigmoid, one row", 1, 33, 1, 1, 1, "attention:wg=1,bn=64");
	spec_carrier_free(c);
	c = load_dims("specs/sigmoid_attention.yaml", 128);
	run90(c, "sigmoid d=128", 70, 129, 1, 1, 1, NULL);
	spec_carrier_free(c);
	static const char *const more[] = {"tests/attention/sigmoid_normalized.yaml", "tests/attention/sigmoid_bf16.yaml",
					   "tests/attention/sigmoid_empty_rows.yaml"};
	for (size_t k = 0; k < sizeof more / sizeof *more; k++) {
		c = load_dims(more[k], 0);
		run90(c, more[k], 130, 150, 1, 1, 1, NULL);
		spec_carrier_free(c);
	}
}

/* ---- e4m3 q, k and v: both products on e4m3 wgmma ---- */

/* fp8_descale.yaml (causal, descale params) with its mask moved 5 keys
 * back: rows 0 to 4 see no key. */
static Carrier *fp8_empty_rows(void)
{
	char *text = cache_read("tests/attention/fp8_descale.yaml", NULL);
	cr_assert(text);
	const char *want = "mask: j <= i\n";
	char *mask = strstr(text, want);
	cr_assert(mask);
	char spec[4096];
	snprintf(spec, sizeof spec, "%.*smask: j <= i - 5\n%s", (int)(mask - text), text, mask + strlen(want));
	free(text);
	return text_ok(spec);
}

/* On sm_90a the e4m3 path (P rounded to e4m3, the bound the run check
 * applies for it) at odd shapes: key lengths under a tile, between tiles
 * and past several; one query row; grouped heads; splits; one stage (its
 * barrier before Vt is rewritten) and three; head dims 64, 128 and 256
 * (key tiles of 64 there: Q 32 KB, two stages of 48 KB). */
Test(attn90, e4m3_shapes, .timeout = 900)
{
	cuda_test_cache();
	Carrier *c = load_dims("tests/attention/fp8_descale.yaml", 64);
	run90(c, "fp8", 130, 300, 1, 1, 1, NULL);
	run90(c, "fp8, one row", 1, 129, 1, 1, 1, "attention:wg=1,bn=64,st=1");
	run90(c, "fp8, gqa", 33, 170, 4, 2, 1, "attention:wg=2,bn=64,st=3");
	run90(c, "fp8, split 3", 70, 400, 3, 1, 3, NULL);
	run90(c, "fp8, short", 37, 7, 1, 1, 1, "attention:wg=2,bn=128");
	spec_carrier_free(c);
	c = load_dims("tests/attention/fp8_descale.yaml", 128);
	run90(c, "fp8 d=128", 70, 333, 1, 1, 1, NULL);
	spec_carrier_free(c);
	c = load_dims("tests/attention/fp8_descale.yaml", 256);
	run90(c, "fp8 d=256", 65, 129, 1, 1, 1, NULL);
	spec_carrier_free(c);
	c = fp8_empty_rows();
	run90(c, "fp8, fully masked rows", 70, 40, 1, 1, 1, NULL);
	spec_carrier_free(c);
}

/* The warp-specialized schedules on e4m3: the producer warpgroup
 * transposes V into Vt a tile behind its copies; the consumers wait for
 * Vt before P V. */
static void e4m3_ws(int ws)
{
	cuda_test_cache();
	static const struct {
		int d, rows, len, heads, kv, split, bn, st;
	} runs[] = {{64, 130, 300, 1, 1, 1, 128, 2}, {64, 1, 129, 1, 1, 1, 64, 3}, {64, 33, 170, 4, 2, 1, 64, 2},
		    {64, 70, 400, 3, 1, 3, 64, 2},   {128, 70, 200, 1, 1, 1, 128, 2}, {256, 65, 129, 1, 1, 1, 64, 2}};
	char cfg[96];
	for (size_t k = 0; k < sizeof runs / sizeof *runs; k++) {
		Carrier *c = load_dims("tests/attention/fp8_descale.yaml", runs[k].d);
		snprintf(cfg, sizeof cfg, "attention:wg=2,bn=%d,st=%d,ws=%d", runs[k].bn, runs[k].st, ws);
		run90(c, "fp8", runs[k].rows, runs[k].len, runs[k].heads, runs[k].kv, runs[k].split, cfg);
		spec_carrier_free(c);
	}
	Carrier *c = fp8_empty_rows();
	snprintf(cfg, sizeof cfg, "attention:wg=2,bn=64,st=2,ws=%d", ws);
	run90(c, "fp8, fully masked rows", 70, 40, 1, 1, 1, cfg);
	spec_carrier_free(c);
}

Test(attn90, e4m3_warp_specialized_ping_pong, .timeout = 900) { e4m3_ws(1); }
Test(attn90, e4m3_warp_specialized_overlap, .timeout = 900) { e4m3_ws(2); }

/* The key permutation that pairs P's registers with Vt's rows is what the
 * emulator's layouts of the e4m3 A fragment and of S's accumulator make
 * right: built with Vt's keys in plain order (ATTN90_PLAIN_VT, through a
 * compiler that defines it, in a cache of its own), the run is wrong. */
Test(attn90, e4m3_key_permutation_is_checked, .timeout = 600)
{
	char dir[] = "/tmp/assoc-plainvt-XXXXXX", cxx[128], msg[4096] = "";
	if (system("command -v g++ >/dev/null 2>&1"))
		cr_skip_test("no g++ to build the emulator's module with ATTN90_PLAIN_VT");
	test_tmpdir(dir);
	snprintf(cxx, sizeof cxx, "%s/cxx", dir);
	FILE *f = fopen(cxx, "w");
	cr_assert(f);
	fprintf(f, "#!/bin/sh\nexec g++ -DATTN90_PLAIN_VT \"$@\"\n");
	fclose(f);
	cr_assert_eq(chmod(cxx, 0700), 0);
	setenv("ASSOC_CXX", cxx, 1);
	test_xdg_cache(dir);
	Carrier *c = load_dims("tests/attention/fp8_descale.yaml", 64);
	RunData *d = rundata_new_heads(c, 70, 150, 1, 1);
	cr_assert_eq(rundata_draw(d, 5, NULL, 0, msg, sizeof msg), 0, "%s", msg);
	RunOpts o = {.split = 1, .arch = "sm_90a"};
	cr_assert_eq(emu_run_data(d, &o, NULL, msg, sizeof msg), 0, "%s", msg);
	RunCheck chk;
	runcheck_run(d, &chk);
	cr_expect_gt(chk.out[0].worst_ratio, 4, "out: %.3g of tolerance with Vt's keys unpermuted", chk.out[0].worst_ratio);
	runcheck_free(&chk);
	rundata_free(d);
	spec_carrier_free(c);
	unsetenv("ASSOC_CXX");
}

/* The choice on e4m3 inputs: the Hopper template's e4m3 path on sm_90a,
 * named by --explain, its variants (ws 0, 1, 2) in the tuning space beside
 * mma.sync's, all with key tiles in 64s; elsewhere the inputs as f16;
 * configurations the path cannot take refused with the reason; P's
 * rounding the run check applies; the tensor maps of bytes with the
 * 64-byte swizzle; the shared memory with Vt and its barriers. */
Test(attn90, e4m3_choice_and_layouts)
{
	Carrier *c = load_dims("tests/attention/fp8_descale.yaml", 128);
	CudaModule m;
	char msg[1024];
	cr_assert_eq(cuda_module_for(c, NULL, "sm_90a", 0, &m, msg, sizeof msg), 0, "%s", msg);
	cr_expect(strstr(m.explain, "(tensor cores, f8e4m3, ") && strstr(m.explain, "Hopper template (attention_sm90: e4m3 "
									    "wgmma for both products"),
		  "%s", m.explain);
	int h = cuda_pick(&m, 4096, 4096, 1);
	cr_expect(m.var[h].wg > 0 && m.var[h].bn == 128, "prefill takes the e4m3 path");
	cr_expect_eq(cuda_p_round_kind(&m, h), TY_F8E4M3, "P rounded to e4m3 there");
	for (int v = 0; v < m.nvar; v++)
		if (!m.var[v].wg)
			cr_expect_eq(cuda_p_round_kind(&m, v), TY_F16, "and to f16 on mma.sync");
	cr_expect(strstr(m.src, "attn90_fwd<128, 128, 2, 128, 2, 1, 2>(A, T)"), "the kernel on e4m3 operands (BF 2)");
	cuda_module_free(&m);
	cr_assert_eq(cuda_module_space_for(c, "sm_90a", 0, &m, msg, sizeof msg), 0, "%s", msg);
	int n[3] = {0, 0, 0}, plain = 0;
	for (int v = 0; v < m.nvar; v++) {
		if (m.var[v].wg) {
			n[m.var[v].ws]++;
			cr_expect(m.var[v].bn % 64 == 0 && m.var[v].pv == 1, "bn=%d pv=%d", m.var[v].bn, m.var[v].pv);
		} else
			plain++;
	}
	cr_expect(n[0] > 0 && n[1] > 0 && n[2] > 0 && plain > 0, "%d, %d, %d Hopper variants, %d mma.sync", n[0], n[1], n[2],
		  plain);
	cuda_module_free(&m);
	static const char *const others[] = {"sm_89", "sm_90", "sm_80"};
	for (int k = 0; k < 3; k++) {
		cr_assert_eq(cuda_module_for(c, NULL, others[k], 0, &m, msg, sizeof msg), 0, "%s", msg);
		cr_expect(strstr(m.explain, "(tensor cores, f8e4m3 inputs as f16, "), "%s: %s", others[k], m.explain);
		cuda_module_free(&m);
	}
	static const char *const bad[] = {"attention:wg=2,bn=48", "attention:wg=2,bn=128,pv=2"};
	for (int k = 0; k < 2; k++) {
		cr_expect_neq(cuda_module_for(c, bad[k], "sm_90a", 0, &m, msg, sizeof msg), 0, "%s", bad[k]);
		cr_expect(strstr(msg, "on f8e4m3 inputs it takes keys a tile in multiples of 64"), "%s: %s", bad[k], msg);
	}
	cr_assert_eq(cuda_module_for(c, "attention:wg=2,bn=64,st=2", "sm_90a", 0, &m, msg, sizeof msg), 0, "%s", msg);
	CudaArgs a = {0};
	static unsigned char q[1], k[1], v[1];
	a.in[m.attn.qi] = q, a.in[m.attn.ki] = k, a.in[m.attn.vi] = v;
	a.rows = 100, a.len = 1000, a.heads = 8, a.kv_heads = 2;
	CudaTmap t[3];
	cuda_attn90_maps(&m, 0, &a, t);
	for (int i = 0; i < 3; i++)
		cr_expect(t[i].elem_bytes == 1 && t[i].swizzle == 64 && t[i].box[0] == 64, "map %d", i);
	cr_expect(t[0].strides[0] == 128 && t[1].strides[0] == 128 && t[1].strides[1] == 128000);
	/* Q 128 x 128; two stages of K, V and Vt of 64 keys; 7 barriers */
	cr_expect_eq(cuda_smem(&m, 0), 128u * 128 + 2u * (64 * 256 + 64 * 128) + 8 * 7 + 1024);
	cuda_module_free(&m);
	spec_carrier_free(c);
}

/* `emit --target ptx --arch sm_90a` of e4m3 attention: both products on
 * wgmma .e4m3 (S: D / 32 of n = BN; P V: BN / 32 of n = DV), TMA copies,
 * P by cvt.rn.satfinite.e4m3x2, and no spills or stack at head dims 64,
 * 128 and 256, for each schedule at 64 (the producer's registers hold
 * its transposes). */
Test(attn90, e4m3_ptx_without_spills, .timeout = 600)
{
	cuda_test_cache();
	Nvrtc *nv;
	char msg[4096];
	if (nvrtc_open(&nv, msg, sizeof msg))
		cr_skip_test("no NVRTC: %s", msg);
	static const struct {
		int d, bn, ws;
	} runs[] = {{64, 128, 0}, {128, 128, 0}, {256, 64, 0}, {64, 128, 1}, {128, 128, 2}, {256, 64, 1}};
	for (size_t r = 0; r < sizeof runs / sizeof *runs; r++) {
		int d = runs[r].d, bn = runs[r].bn;
		Carrier *c = load_dims("tests/attention/fp8_descale.yaml", d);
		CudaModule m;
		char cfg[96], s[64], pv[64];
		snprintf(cfg, sizeof cfg, "attention:wg=2,bn=%d,st=2%s%.0d", bn, runs[r].ws ? ",ws=" : "", runs[r].ws);
		cr_assert_eq(cuda_module_for(c, cfg, "sm_90a", 0, &m, msg, sizeof msg), 0, "%s", msg);
		char *ptx = NULL;
		int cached;
		cr_assert_eq(nvrtc_ptx(nv, m.src, "sm_90a", &ptx, &cached, msg, sizeof msg), 0, "d=%d: %s", d, msg);
		snprintf(s, sizeof s, "wgmma.mma_async.sync.aligned.m64n%dk32.f32.e4m3.e4m3", bn);
		snprintf(pv, sizeof pv, "wgmma.mma_async.sync.aligned.m64n%dk32.f32.e4m3.e4m3", d);
		int ns = cuda_count(ptx, NULL, s), npv = cuda_count(ptx, NULL, pv), all = cuda_count(ptx, NULL, "wgmma.mma_async");
		if (bn == d)
			cr_expect(ns >= d / 32 + bn / 32, "%s d=%d: %d of %s", cfg, d, ns, s);
		else
			cr_expect(ns >= d / 32 && npv >= bn / 32, "%s d=%d: %d S and %d P V wgmma", cfg, d, ns, npv);
		cr_expect_eq(cuda_count(ptx, NULL, ".e4m3.e4m3"), all, "%s: every wgmma on e4m3", cfg);
		cr_expect_gt(cuda_count(ptx, NULL, "cp.async.bulk.tensor"), 0, "%s: TMA", cfg);
		cr_expect_gt(cuda_count(ptx, NULL, "cvt.rn.satfinite.e4m3x2.f32"), 0, "%s: P to e4m3", cfg);
		char what[160];
		snprintf(what, sizeof what, "%s d=%d", cfg, d);
		int nk = cuda_expect_unspilled(ptx, "sm_90a", what, NULL, 0, msg, sizeof msg);
		free(ptx);
		cuda_module_free(&m);
		spec_carrier_free(c);
		if (nk < 0) {
			nvrtc_close(nv);
			cr_skip_test("%s", msg);
		}
	}
	nvrtc_close(nv);
}

/* e4m3 prefill encodes its three maps as bytes with the 64-byte swizzle,
 * which the fake driver's encoder takes as the driver does. */
Test(attn90, e4m3_gpu_launch_encodes_byte_maps, .timeout = 300)
{
	FakeLaunch f;
	fake_hopper_launch(&f, "tests/attention/fp8_descale.yaml");
	gpu_free_bufs(&f.g, &f.b);
	gpu_close(&f.g);
	dlclose(f.lib);
	rundata_free(f.d);
	spec_carrier_free(f.c);
	unsetenv("ASSOC_LIBCUDA");
}
