/* test_cluster.c: rows split across a thread-block cluster (variant cl,
 * templates/rowcluster.cuh).  The text reads back and is refused where it
 * names no cluster a row template can have; a target below sm_90 refuses
 * it with the reason; sm_90's tuning space holds cluster variants, the
 * others and cuda_pick none; the plan launches rows * cl blocks in
 * clusters of cl with chunks of a multiple of 4.  On the emulator every
 * row carrier (reductions and maps, f32 and bf16, an ordered one, the
 * transported fold, tiles of several loads, the row kept on chip or read
 * again) gives the float64 reference's results at odd shapes, blocks of a
 * cluster left with no positions among them.  The fake driver records the
 * cluster of a launch; a driver without cuLaunchKernelEx offers none. */
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
#include "testutil.h"

Test(cluster, variant_text)
{
	Variant v, w;
	char msg[512], buf[256];
	cr_assert_eq(variant_parse("rowmap:nt=512,acc=2,vec=4,items=16,cl=8", &v, msg, sizeof msg), 0, "%s", msg);
	cr_expect_eq(v.cl, 8);
	variant_str(&v, buf, sizeof buf);
	cr_expect_str_eq(buf, "rowmap:nt=512,acc=2,vec=4,warp=0,items=16,cl=8");
	cr_assert_eq(variant_parse(buf, &w, msg, sizeof msg), 0, "%s", msg);
	cr_expect(!memcmp(&v, &w, sizeof v), "%s reads back as itself", buf);
	/* a cluster of one is none, and unnamed */
	cr_assert_eq(variant_parse("rowreduce:nt=128,cl=1", &v, msg, sizeof msg), 0, "%s", msg);
	cr_expect_eq(v.cl, 0);
	variant_str(&v, buf, sizeof buf);
	cr_expect_str_eq(buf, "rowreduce:nt=128,acc=1,vec=1,warp=0,items=0");
	static const char *const bad[] = {"rowreduce:cl=3", "rowreduce:cl=32", "rowmap:warp=1,cl=2"};
	for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
		cr_expect_eq(variant_parse(bad[k], &v, msg, sizeof msg), -1, "%s", bad[k]);
		cr_expect(strstr(msg, "cl, the blocks of a cluster a row is split across, is 2, 4, 8 or 16"), "%s: %s",
			  bad[k], msg);
	}
	static const char *const others[] = {"splitk:cl=2", "scan:cl=4", "attention:cl=2"};
	for (size_t k = 0; k < sizeof others / sizeof *others; k++) {
		cr_expect_eq(variant_parse(others[k], &v, msg, sizeof msg), -1, "%s", others[k]);
		cr_expect(strstr(msg, "unknown key 'cl'"), "%s: %s", others[k], msg);
	}
}

Test(cluster, needs_sm_90_and_only_its_space_has_clusters)
{
	Carrier *c = load_ok("specs/online_softmax.yaml");
	CudaModule m;
	char msg[1024];
	cr_expect_eq(cuda_module_for(c, "rowmap:nt=256,acc=2,vec=4,items=16,cl=4", "sm_80", 0, &m, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "splits a row across a thread-block cluster (cl=4), which needs sm_90 or newer; the target "
			      "is sm_80"), "%s", msg);
	cr_assert_eq(cuda_module_for(c, "rowmap:nt=256,acc=2,vec=4,items=16,cl=4", "sm_90", 0, &m, msg, sizeof msg), 0,
		     "%s", msg);
	cr_expect_eq(m.var[0].cl, 4);
	cr_expect(strstr(m.src, "__launch_bounds__(256, 1)") && strstr(m.src, "rowcluster<256, 2, 4, 4, 1, 16, 1, 0>(A)"), "the kernel");
	cr_expect(strstr(m.src, "barrier.cluster.arrive.release.aligned"), "the cluster wrappers");
	char why[768];
	cuda_variant_explain(&m, 0, why, sizeof why);
	cr_expect(strstr(why, "a row split across a cluster of 4 blocks (sm_90; their states merged in rank order through "
			      "distributed shared memory)"), "%s", why);
	cr_expect(strstr(why, "the row kept on chip across the cluster's shared memory for the map pass, read from HBM "
			      "once (16384 positions at most)"), "%s", why);
	cr_expect(cuda_takes_len(&m, 0, 16384, why, sizeof why));
	cr_expect(!cuda_takes_len(&m, 0, 16385, why, sizeof why));
	CudaPlan p;
	cuda_plan(&m, 0, 3, 1001, 0, &p);
	cr_expect_eq(p.nk, 1);
	cr_expect_eq(p.k[0].grid, 12);
	cr_expect_eq(p.k[0].cluster, 4);
	cr_expect_eq(p.k[0].block, 256);
	cr_expect_eq(p.chunk, 252, "ceil(1001 / 4) to a multiple of 4: %d", p.chunk);
	cuda_plan(&m, 0, 0, 1001, 0, &p);
	cr_expect_eq(p.k[0].grid, 4, "no rows: one cluster");
	cuda_module_free(&m);
	static const struct {
		const char *arch;
		int want;
	} archs[] = {{"sm_80", 0}, {"sm_90", 1}, {"sm_90a", 1}};
	for (size_t a = 0; a < sizeof archs / sizeof *archs; a++) {
		cr_assert_eq(cuda_module_space_for(c, archs[a].arch, 0, &m, msg, sizeof msg), 0, "%s", msg);
		int ncl = 0;
		for (int v = 0; v < m.nvar; v++)
			ncl += m.var[v].cl > 0;
		cr_expect_eq(ncl > 0, archs[a].want, "%s: %d cluster variants", archs[a].arch, ncl);
		static const int lens[] = {100, 4096, 32768, 131072};
		for (int l = 0; l < 4; l++) /* today's choice: the tuner's to take a cluster */
			cr_expect_eq(m.var[cuda_pick(&m, 256, lens[l], 0)].cl, 0);
		cuda_module_free(&m);
	}
	spec_carrier_free(c);
}


/* Every row carrier in clusters of 2 to 16, at no position, fewer than a
 * warp (7 over a cluster of 4: two blocks with none), 33 (the last block
 * of 4 with none), 1030 (not a multiple of a tile), 131 (rows 1 and 2
 * starting 3 and 2 positions past 16 bytes: every chunk's 16-byte loop
 * after a head) and 2052, one row and several. */
Test(cluster, row_carriers_on_the_emulator, .timeout = 900)
{
	static const char welford_bf16[] = WELFORD_BF16_SPEC;
	/* not commutative: each thread folds a contiguous segment */
	static const char ordered_sum[] = FIRST_SUM_SPEC;
	static const struct {
		const char *spec, *text, *cfg[2];
	} runs[] = {
		{"specs/logsumexp.yaml", NULL, {"rowreduce:nt=64,acc=2,vec=4,un=2,tf=1,cl=4", "rowreduce:nt=32,acc=1,vec=1,cl=16"}},
		{"specs/welford.yaml", NULL, {"rowreduce:nt=64,acc=2,vec=4,cl=2", "rowreduce:nt=32,acc=2,vec=4,tf=1,cl=8"}},
		{"specs/online_softmax.yaml", NULL,
		 {"rowmap:nt=64,acc=2,vec=4,items=16,un=2,tf=1,cl=4", "rowmap:nt=32,acc=1,vec=1,cl=2"}},
		{"specs/layer_norm.yaml", NULL, {"rowmap:nt=64,acc=2,vec=4,items=16,cl=4", "rowmap:nt=32,acc=2,vec=4,items=16,un=4,cl=8"}},
		{"specs/cross_entropy.yaml", NULL, {"rowreduce:nt=64,acc=2,vec=4,cl=4", NULL}},
		{NULL, welford_bf16, {"rowreduce:nt=64,acc=2,vec=4,un=2,cl=4", NULL}},
		{NULL, ordered_sum, {"rowreduce:nt=32,acc=1,vec=4,cl=4", NULL}},
	};
	static const int shapes[][2] = {{3, 0}, {0, 33}, {1, 7}, {5, 33}, {2, 1030}, {3, 131}, {1, 2052}};
	for (size_t k = 0; k < sizeof runs / sizeof *runs; k++) {
		Carrier *c = runs[k].spec ? load_ok(runs[k].spec) : text_ok(runs[k].text);
		const char *what = runs[k].spec ? runs[k].spec : c->name;
		for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
			RunData *d = rundata_new(c, shapes[s][0], shapes[s][1]);
			char msg[512];
			cr_assert_eq(rundata_draw(d, 51 + s, NULL, 0, msg, sizeof msg), 0, "%s", msg);
			for (int v = 0; v < 2; v++)
				if (runs[k].cfg[v])
					emu_expect_ref(d, what, (RunOpts){.config = runs[k].cfg[v]}, NULL);
			rundata_free(d);
		}
		spec_carrier_free(c);
	}
}

/* The cluster variants of sm_90's tuning space, for the reductions the
 * row templates are measured on (the maps' assemble in
 * rows/ptxas_tiles_without_spills with the rest of their space): sm_90a,
 * no spills, no stack, each once. */
Test(cluster, ptxas_reductions_without_spills, .timeout = 300)
{
	cuda_test_cache();
	Nvrtc *nv;
	char msg[8192];
	if (nvrtc_open(&nv, msg, sizeof msg))
		cr_skip_test("no NVRTC: %s", msg);
	const char *specs[] = {"specs/welford.yaml", "specs/logsumexp.yaml"};
	for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) {
		Carrier *c = load_ok(specs[i]);
		CudaModule m;
		cr_assert_eq(cuda_module_space_for(c, "sm_90a", 0, &m, msg, sizeof msg), 0, "%s", msg);
		unsigned char want[64] = {0};
		int ncl = 0;
		for (int v = 0; v < m.nvar; v++)
			ncl += want[v] = m.var[v].cl > 0;
		cr_assert_geq(ncl, 3, "%s: %d cluster variants", specs[i], ncl);
		char *src = cuda_module_src_of(&m, want), *ptx;
		int cached;
		cr_assert_eq(nvrtc_ptx(nv, src, "sm_90a", &ptx, &cached, msg, sizeof msg), 0, "%s: %s", specs[i], msg);
		cr_expect(strstr(ptx, "barrier.cluster.wait.acquire.aligned") && strstr(ptx, "ld.shared::cluster.u32"),
			  "%s: the cluster's barrier and loads", specs[i]);
		int nks = cuda_expect_unspilled(ptx, "sm_90a", specs[i], NULL, 0, msg, sizeof msg);
		if (nks < 0) {
			free(ptx);
			free(src);
			cuda_module_free(&m);
			spec_carrier_free(c);
			nvrtc_close(nv);
			cr_skip_test("%s", msg);
		}
		cr_assert_eq(nks, ncl, "%s: %s", specs[i], msg);
		free(ptx);
		free(src);
		cuda_module_free(&m);
		spec_carrier_free(c);
	}
	nvrtc_close(nv);
}
