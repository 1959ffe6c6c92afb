/* test_cuda.c: every generated kernel, run on the emulator against the
 * float64 reference: each bundled spec (and a few inline ones: a
 * non-commutative carrier, fully masked rows) x every variant of its module
 * x odd shapes x split counts. */
#include <glob.h>
#include <signal.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compiler/cli/cli.h"
#include "compiler/cuda/cuda.h"
#include "compiler/cuda/nvrtc.h"
#include "compiler/devices/run.h"
#include "cudatest.h"
#include "compiler/devices/emu.h"
#include "testutil.h"

static const int ROWS[] = {1, 3, 64};
static const int LENS[] = {0, 1, 31, 32, 33, 1000, 4099};
static const int SPLITS[] = {1, 2, 3, 7};

static int fits(const Variant *v, int len)
{
	return !(v->fam == FAM_ROWMAP && v->items && len > v->items * (v->warp ? 32 : v->nt));
}

/* Rows of 1 and 3: every variant x every length x every split count. */
/* Run one configuration on one shape; 1 when every output is within tolerance. */
static int run_one(Carrier *c, const char *name, const char *cfg, int rows, int len, int split, double slack)
{
	RunData *d = rundata_new(c, rows, len);
	char msg[4096] = "";
	cr_assert_eq(rundata_draw(d, 7, NULL, 0, msg, sizeof msg), 0, "%s", msg);
	RunOpts o = {.split = split, .config = cfg};
	EmuStats st;
	int rc = emu_run_data(d, &o, &st, msg, sizeof msg);
	cr_assert_eq(rc, 0, "%s %s %dx%d split %d: %s", name, cfg, rows, len, split, msg);
	RunCheck chk;
	runcheck_run(d, &chk);
	int ok = 1;
	for (int k = 0; k < chk.nout; k++) {
		const OutCheck *x = &chk.out[k];
		int good = x->worst_ratio <= slack && !x->nan_mismatch;
		cr_expect(good, "%s %s %dx%d split %d: %s at %zu is %.3g of tolerance%s", name, st.config, rows, len, split,
			  x->name, x->at, x->worst_ratio, x->nan_mismatch ? ", NaN mismatch" : "");
		ok &= good;
	}
	runcheck_free(&chk);
	rundata_free(d);
	return ok;
}

static void run_spec(Carrier *c, const char *name, double slack)
{
	CudaModule m;
	char msg[512];
	cr_assert_eq(cuda_module(c, NULL, &m, msg, sizeof msg), 0, "%s: %s", name, msg);
	for (int v = 0; v < m.nvar; v++) {
		char cfg[128];
		variant_str(&m.var[v], cfg, sizeof cfg);
		int split_fam = m.var[v].fam == FAM_SPLITK || m.var[v].fam == FAM_SCAN;
		for (size_t r = 0; r < sizeof ROWS / sizeof *ROWS; r++)
			for (size_t l = 0; l < sizeof LENS / sizeof *LENS; l++) {
				/* 64 rows: a few lengths, the longest through the variant
				 * the device would pick, one split count; keeps the float64
				 * reference affordable */
				int many = ROWS[r] == 64, len = LENS[l];
				if (!fits(&m.var[v], len) || (many && len != 33 && len != 1000 && len != 4099) ||
				    (many && len == 4099 && v != cuda_pick(&m, ROWS[r], len, split_fam ? 3 : 1)))
					continue;
				for (size_t s = 0; s < (split_fam ? sizeof SPLITS / sizeof *SPLITS : 1); s++) {
					if (many && SPLITS[s] != 3 && split_fam)
						continue;
					run_one(c, name, cfg, ROWS[r], LENS[l], split_fam ? SPLITS[s] : 1, slack);
				}
			}
	}
	cuda_module_free(&m);
}

static void run_file(const char *path)
{
	cuda_test_cache();
	Carrier *c = load_ok(path);
	run_spec(c, path, 1);
	spec_carrier_free(c);
}

#define SPEC_TEST(name)                                                                                   \
	Test(cuda, name, .timeout = 300) { run_file("specs/" #name ".yaml"); }
#include "bundled.def"
#undef SPEC_TEST

#define SPEC_TEST(name) +1
static const size_t bundled_count = 0
#include "bundled.def"
	;
#undef SPEC_TEST

Test(cuda, every_bundled_spec_has_a_test)
{
	glob_t g;
	cr_assert_eq(glob("specs/*.yaml", 0, NULL, &g), 0);
	cr_assert_eq(g.gl_pathc, bundled_count, "a new spec in specs/ needs its SPEC_TEST line in tests/bundled.def");
	globfree(&g);
}

static Carrier *inline_spec(const char *text)
{
	Carrier *c = text_ok(text);
	return c;
}

/* More outputs than the CUDA backend's argument block holds (17 maps and
 * the state field s, finalize's default): a message
 * with the counts and where the spec does run, and no module. */
Test(cuda, too_many_outputs_are_refused_with_the_counts)
{
	char text[2048] = "carrier: many\nelement: {x: f32}\nstate: {s: f32}\nidentity: {s: 0}\nlift: {s: x}\n"
			  "merge:\n  s: a.s + b.s\nlaws: [commutative]\nmap:\n";
	for (int k = 0; k < 17; k++)
		snprintf(text + strlen(text), sizeof text - strlen(text), "  y%d: x * %d\n", k, k);
	Carrier *c = inline_spec(text);
	CudaModule m;
	char msg[512];
	cr_assert_neq(cuda_module(c, NULL, &m, msg, sizeof msg), 0);
	cr_expect(strstr(msg, "at most 16 inputs, 16 outputs and 16 params; many has 1, 18 and 0 (--device cpu takes it)"),
		  "%s", msg);
	spec_carrier_free(c);
	/* 300 params: past the cpu's 256 too, so the interpreter is named, and
	 * the cpu says so with its counts */
	char big[8192] = "carrier: wide\nelement: {x: f32}\nparams:\n";
	for (int k = 0; k < 300; k++)
		snprintf(big + strlen(big), sizeof big - strlen(big), "  p%d: f32\n", k);
	strcat(big, "state: {s: f32}\nidentity: {s: 0}\nlift: {s: x + p0}\nmerge:\n  s: a.s + b.s\n");
	c = inline_spec(big);
	cr_assert_neq(cuda_module(c, NULL, &m, msg, sizeof msg), 0);
	cr_expect(strstr(msg, "wide has 1, 1 and 300 (--device interp takes it)"), "%s", msg);
	spec_carrier_free(c);
}

/* How many of c's default variants keep a row on chip. */
static int kept_variants(Carrier *c)
{
	CudaModule m;
	char msg[512];
	cr_assert_eq(cuda_module(c, NULL, &m, msg, sizeof msg), 0, "%s", msg);
	int kept = 0;
	for (int v = 0; v < m.nvar; v++)
		kept += m.var[v].fam == FAM_ROWMAP && m.var[v].items > 0;
	cuda_module_free(&m);
	return kept;
}

/* Not commutative: every level (thread segments, lanes, warps, chunks)
 * must keep operand order. */
#define AFFINE                                                                                             \
	"carrier: affine\nelement: {w: f32, x: f32}\nstate: {A: f32, B: f32}\nidentity: {A: 1, B: 0}\n"    \
	"lift: {A: w, B: x}\nmerge:\n  A: a.A * b.A\n  B: b.A * a.B + b.B\n"

Test(cuda, non_commutative_rowreduce_keeps_order, .timeout = 300)
{
	cuda_test_cache();
	Carrier *c = inline_spec(AFFINE);
	cr_assert_eq(c->tpl, FAM_ROWREDUCE);
	run_spec(c, "affine (rowreduce)", 1);
	spec_carrier_free(c);
}

/* The same with map outputs: rows kept on chip are read back by the
 * thread that folded them, each its own contiguous segment. */
Test(cuda, non_commutative_rowmap_keeps_order, .timeout = 300)
{
	cuda_test_cache();
	Carrier *c = inline_spec(AFFINE "finalize: {h: B}\nmap: {y: w * B - x}\n");
	cr_assert_eq(kept_variants(c), 2, "rows kept on chip, by a warp and by a block");
	run_spec(c, "affine (rowmap)", 1);
	spec_carrier_free(c);
}

/* Rows kept on chip sit in static shared memory (NT * ITEMS elements per
 * block, at most 48 KB with block_reduce's states): wide elements keep
 * fewer per thread, the kernels assemble within the limit, and the rows
 * still come out right. */
static Carrier *wide_elements(void)
{
	return inline_spec("carrier: wide\nelement: {a: f64, b: f64, c: f64, d: f64}\nstate: {s: f64}\n"
			   "identity: {s: 0}\nlift: {s: a * b + c * d}\nmerge:\n  s: a.s + b.s\n"
			   "finalize: {total: s}\nmap: {y: a + s}\nlaws: [commutative]\n");
}

Test(cuda, kept_rows_fit_static_shared_memory, .timeout = 300)
{
	cuda_test_cache();
	Carrier *c = wide_elements();
	CudaModule m;
	char msg[8192];
	cr_assert_eq(cuda_module(c, NULL, &m, msg, sizeof msg), 0, "%s", msg);
	int kept = 0;
	for (int v = 0; v < m.nvar; v++)
		if (m.var[v].fam == FAM_ROWMAP && m.var[v].items) {
			kept++;
			cr_expect_leq(m.var[v].nt * m.var[v].items * 32, 48 * 1024 - (m.var[v].nt / 32 + 1) * 8,
				      "nt %d, items %d of 32 bytes", m.var[v].nt, m.var[v].items);
			cr_expect_geq(m.var[v].nt * m.var[v].items * 32, 24 * 1024 - (m.var[v].nt / 32 + 1) * 8,
				      "no more halved than the limit needs: nt %d, items %d", m.var[v].nt, m.var[v].items);
		}
	cr_assert_eq(kept, 2, "a warp's and a block's row kept on chip");
	cuda_module_free(&m);
	run_spec(c, "wide elements", 1);
	spec_carrier_free(c);
}

/* And ptxas agrees: every kernel of that module within 48 KB of shared
 * memory, without spills (NVRTC needed). */
Test(cuda, kept_rows_assemble_within_the_limit_without_spills, .timeout = 300)
{
	cuda_test_cache();
	char msg[8192];
	Nvrtc *nv;
	if (nvrtc_open(&nv, msg, sizeof msg))
		cr_skip_test("no NVRTC, so no ptxas to count shared memory and spills: %s", msg);
	Carrier *c = wide_elements();
	CudaModule m;
	cr_assert_eq(cuda_module(c, NULL, &m, msg, sizeof msg), 0, "%s", msg);
	char *ptx;
	int cached;
	cr_assert_eq(nvrtc_ptx(nv, m.src, "sm_90", &ptx, &cached, msg, sizeof msg), 0, "%s", msg);
	CudaKStat ks[64];
	int nks = cuda_expect_unspilled(ptx, "sm_90", "wide elements", ks, 64, msg, sizeof msg);
	/* NVRTC without ptxas beside it is no toolkit the checks can trust */
	cr_expect_gt(nks, 0, "ptxas gave no kernels: %s", msg);
	for (int k = 0; k < nks; k++)
		cr_expect_leq(ks[k].smem, 48 * 1024, "%s: %d bytes of shared memory", ks[k].name, ks[k].smem);
	free(ptx);
	nvrtc_close(nv);
	cuda_module_free(&m);
	spec_carrier_free(c);
}

/* A state that even one accumulator keeps past 160 registers asks for
 * one block an SM at least, and assembles without spills: given no
 * number of blocks ptxas kept its row kernels to 128 registers and
 * spilled 8 to 12 bytes.  A small state's kernels name no number, which
 * leaves ptxas its own choice. */
Test(cuda, large_states_take_the_registers_they_need, .timeout = 300)
{
	cuda_test_cache();
	char msg[8192];
	Carrier *w = load_ok("specs/welford.yaml");
	CudaModule m;
	cr_assert_eq(cuda_module(w, "rowreduce:nt=256,acc=4,vec=4,warp=0,items=0", &m, msg, sizeof msg), 0, "%s", msg);
	cr_expect(strstr(m.src, "__launch_bounds__(256) "), "welford: the number of blocks left to ptxas");
	cuda_module_free(&m);
	spec_carrier_free(w);
	Carrier *c = load_ok("tests/rows/big_state.yaml");
	cr_assert_eq(cuda_module(c, "rowreduce:nt=256,acc=1,vec=1,warp=0,items=0", &m, msg, sizeof msg), 0, "%s", msg);
	cr_expect(strstr(m.src, "__launch_bounds__(256, 1) "), "big_state: one block an SM at least");
	int nks = cuda_src_unspilled(m.src, "sm_90", "big_state", msg, sizeof msg);
	cuda_module_free(&m);
	spec_carrier_free(c);
	if (nks < 0)
		cr_skip_test("%s", msg);
}

/* A state too large for many accumulators still keeps its rows on chip:
 * the stash takes shared memory, not registers. */
Test(cuda, large_states_keep_rows_on_chip, .timeout = 300)
{
	cuda_test_cache();
	Carrier *c = inline_spec("carrier: vsum\ndims: {d: 48}\nelement: {x: f32}\nstate:\n  o: f32[d]\n  s: f32\n"
				 "identity: {o: 0, s: 0}\nlift: {o: x, s: x}\nmerge:\n  o: a.o + b.o\n  s: a.s + b.s\n"
				 "finalize: {t: s}\nmap: {y: x - s}\nlaws: [commutative]\n");
	cr_expect_eq(kept_variants(c), 2, "rows kept on chip by a warp and by a block");
	cr_expect(run_one(c, "vsum", "rowmap:nt=256,acc=1,vec=4,items=16", 3, 1001, 1, 1));
	spec_carrier_free(c);
}

/* Causal masks with more queries than visible keys leave rows with no
 * element at all: the identity, finalized. */
Test(cuda, fully_masked_rows, .timeout = 300)
{
	cuda_test_cache();
	Carrier *c = inline_spec("carrier: shifted_attention\ndims: {d: 8, dv: 8}\nparams: {scale: f32}\n"
				 "row:\n  q: f16[d]\ncolumn:\n  k: f16[d]\n  v: f16[dv]\nlet:\n  s: dot(q, k) * scale\n"
				 "mask: j + 3 <= i\nstate:\n  m: f32\n  l: f32\n  o: f32[dv]\nidentity: {m: -inf, l: 0, o: 0}\n"
				 "lift: {m: s, l: 1, o: v}\nmerge:\n  m: max(a.m, b.m)\n"
				 "  l: a.l * exp(a.m - m) + b.l * exp(b.m - m)\n  o: a.o * exp(a.m - m) + b.o * exp(b.m - m)\n"
				 "finalize: {out: o / l, lse: m + log(l)}\nreference:\n  out: sum(exp(s) * v) / sum(exp(s))\n"
				 "  lse: log(sum(exp(s)))\nlaws: [commutative]\n");
	run_spec(c, "shifted attention", 1);
	spec_carrier_free(c);
	c = inline_spec("carrier: masked_softmax\nelement: {x: f32}\nmask: j < i\nstate: {m: f32, l: f32}\n"
			"identity: {m: -inf, l: 0}\nlift: {m: x, l: 1}\nmerge:\n  m: max(a.m, b.m)\n"
			"  l: a.l * exp(a.m - m) + b.l * exp(b.m - m)\nfinalize: {lse: m + log(l)}\n"
			"map: {y: exp(x - m) / l}\nreference:\n  lse: log(sum(exp(x)))\n  y: exp(x) / sum(exp(x))\n"
			"laws: [commutative]\n");
	run_spec(c, "masked softmax", 1);
	spec_carrier_free(c);
}

/* Global traffic, counted by the emulator in the generated kernel: softmax
 * reads its row twice and writes it once when the row is re-read, and
 * reads and writes it once when it stays on chip. */
Test(cuda, softmax_loads_and_stores_per_element)
{
	cuda_test_cache();
	Carrier *c = load_ok("specs/online_softmax.yaml");
	struct {
		const char *cfg;
		int len;
		double loads, stores;
	} cases[] = {
		{"rowmap:nt=256,acc=2,vec=4", 4096, 2, 1},
		{"rowmap:nt=64,acc=2,vec=4", 1001, 2, 1},
		{"rowmap:nt=256,items=16", 4096, 1, 1},
		{"rowmap:nt=128,warp=1,items=8", 200, 1, 1},
	};
	for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
		int rows = 5, len = cases[k].len;
		RunData *d = rundata_new(c, rows, len);
		char msg[2048];
		cr_assert_eq(rundata_draw(d, 1, NULL, 0, msg, sizeof msg), 0);
		EmuStats st;
		RunOpts o = {.config = cases[k].cfg};
		cr_assert_eq(emu_run_data(d, &o, &st, msg, sizeof msg), 0, "%s", msg);
		double elems = (double)rows * len * sizeof(float);
		/* the per-row lse output is the only other store */
		cr_expect_float_eq(st.bytes[0] / elems, cases[k].loads, 1e-9, "%s: %.4f loads per element", cases[k].cfg,
				   st.bytes[0] / elems);
		cr_expect_float_eq((st.bytes[1] - rows * sizeof(float)) / elems, cases[k].stores, 1e-9,
				   "%s: %.4f stores per element", cases[k].cfg, (st.bytes[1] - rows * 4.0) / elems);
		cr_expect_eq(st.plan_loads, cases[k].loads);
		cr_expect_eq(st.plan_stores, cases[k].stores);
		rundata_free(d);
	}
	spec_carrier_free(c);
}

/* The map pass writes an f32 output four positions at a time, with one
 * 16-byte store, the same width as its loads (4-byte stores would take
 * four instructions, each a quarter of its sectors). */
Test(cuda, map_outputs_go_out_in_16_byte_stores)
{
	cuda_test_cache();
	Nvrtc *nv;
	char msg[4096];
	if (nvrtc_open(&nv, msg, sizeof msg))
		cr_skip_test("no NVRTC: %s", msg);
	Carrier *c = load_ok("specs/online_softmax.yaml");
	CudaModule m;
	char *ptx = NULL;
	int cached;
	cr_assert_eq(cuda_module(c, NULL, &m, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(nvrtc_ptx(nv, m.src, "sm_90", &ptx, &cached, msg, sizeof msg), 0, "%s", msg);
	const char *f = strstr(ptx, ".func _Z11map_pass_atILi4ELi1EE"), *k = f ? strstr(f + 1, ".func _Z11map_pass_atILi4ELi1EE") : NULL;
	cr_assert(k, "map_pass_at<4, 1>'s body in the PTX");
	const char *end = strstr(k + 1, "\n}\n");
	cr_assert(end);
	cr_expect_eq(cuda_count(k, end, "st.global.v4.f32"), 3,
		     "one 16-byte store a group: from the stash, and from each of the two groups read in flight");
	cr_expect_eq(cuda_count(k, end, "ld.global.v4.f32"), 2, "two 16-byte loads in flight");
	free(ptx);
	nvrtc_close(nv);
	cuda_module_free(&m);
	spec_carrier_free(c);
}

/* An output that is not 16-byte aligned takes 4-byte stores, and a row
 * kept on chip is still read back in the layout its 16-byte loads stored
 * it in (the loads decide it, not the outputs). */
Test(cuda, unaligned_map_output_keeps_the_stash_layout)
{
	cuda_test_cache();
	Carrier *c = load_ok("specs/online_softmax.yaml");
	static const char *cfg[] = {"rowmap:nt=256,acc=2,vec=4,items=16", "rowmap:nt=128,warp=1,items=8",
				    "rowmap:nt=256,acc=2,vec=4"};
	static const int len[] = {1000, 200, 1000};
	for (int k = 0; k < 3; k++) {
		RunData *d = rundata_new(c, 3, len[k]);
		char msg[2048];
		cr_assert_eq(rundata_draw(d, 7, NULL, 0, msg, sizeof msg), 0, "%s", msg);
		float *y = calloc(3 * len[k] + 4, sizeof *y); /* malloc's 16-byte alignment */
		void *own = d->map[0].p;
		d->map[0].p = y + 1; /* 4 bytes past a 16-byte boundary */
		cr_assert_eq(emu_run_data(d, &(RunOpts){.config = cfg[k]}, NULL, msg, sizeof msg), 0, "%s", msg);
		RunCheck rc;
		runcheck_run(d, &rc);
		cr_expect(rc.ok, "%s with y unaligned", cfg[k]);
		runcheck_free(&rc);
		d->map[0].p = own;
		free(y);
		rundata_free(d);
	}
	spec_carrier_free(c);
}

/* The tuning space's wider row blocks stay within static shared memory:
 * block_reduce keeps a state per warp, so a wide state (o_lse at dv 1024,
 * over 4 KB) narrows the blocks of 512 and 1024 threads that softmax's
 * space has to 256, and a wider one (dv 2048) the defaults' blocks too. */
Test(cuda, tuning_space_keeps_block_states_in_static_shared_memory)
{
	static const struct {
		const char *spec;
		Define d;
		int widest;
	} cases[] = {{"specs/online_softmax.yaml", {NULL, NULL}, 1024},
		     {"specs/o_lse.yaml", {"dv", "1024"}, 256},
		     {"specs/o_lse.yaml", {"dv", "2048"}, 128}}; /* 8 KB: the defaults' blocks narrow too */
	for (int k = 0; k < 3; k++) {
		Carrier *c = cases[k].d.name ? load_defs(cases[k].spec, &cases[k].d, 1) : load_ok(cases[k].spec);
		CudaModule m;
		char msg[512];
		cr_assert_eq(cuda_module_space(c, &m, msg, sizeof msg), 0, "%s", msg);
		int widest = 0;
		for (int v = 0; v < m.nvar; v++) {
			widest = m.var[v].nt > widest ? m.var[v].nt : widest;
			cr_expect_leq((m.var[v].nt / 32 + 1) * m.state_size, 48 * 1024, "%s nt %d", cases[k].spec, m.var[v].nt);
		}
		cr_expect_eq(widest, cases[k].widest, "%s", cases[k].spec);
		cuda_module_free(&m);
		spec_carrier_free(c);
	}
}

/* Special values through every variant's merges (the rescaling of an
 * online max shares one exp between its two factors, with the spec's
 * rules for -inf, +inf and NaN, and the guard that rescales +inf by 1): a
 * row of -inf, a NaN, a +inf (lse +inf, y NaN across the row, as PyTorch), -inf
 * among finite values, one huge value, and a row of ties. */
Test(cuda, online_max_keeps_the_special_values, .timeout = 300)
{
	cuda_test_cache();
	Carrier *c = load_ok("specs/online_softmax.yaml");
	CudaModule m;
	char msg[2048];
	cr_assert_eq(cuda_module(c, NULL, &m, msg, sizeof msg), 0, "%s", msg);
	enum { R = 6, N = 200 };
	for (int v = 0; v < m.nvar; v++) {
		char cfg[128];
		variant_str(&m.var[v], cfg, sizeof cfg);
		RunData *d = rundata_new(c, R, N);
		cr_assert_eq(rundata_draw(d, 3, NULL, 0, msg, sizeof msg), 0, "%s", msg);
		float *x = d->elem[0].p;
		for (int j = 0; j < N; j++) {
			x[j] = -INFINITY;
			if (j % 3 == 0)
				x[3 * N + j] = -INFINITY;
			x[5 * N + j] = 2.5f;
		}
		x[N + 77] = NAN;
		x[2 * N + 123] = INFINITY;
		x[4 * N + 150] = 1e30f;
		RunOpts o = {.config = cfg, .split = m.var[v].fam == FAM_SPLITK ? 3 : 1};
		EmuStats st;
		cr_assert_eq(emu_run_data(d, &o, &st, msg, sizeof msg), 0, "%s: %s", cfg, msg);
		const float *lse = d->fin[0].p, *y = d->map[0].p;
		cr_expect_eq(lse[0], -INFINITY, "%s: a row of -inf has lse -inf, not %g", cfg, lse[0]);
		cr_expect(isnan(y[0]) && isnan(y[N - 1]), "%s: a row of -inf: y = 0 / 0", cfg);
		cr_expect(isnan(lse[1]), "%s: a NaN gives lse NaN, not %g", cfg, lse[1]);
		cr_expect_eq(lse[2], INFINITY, "%s: +inf gives +inf (the guarded rescale), not %g", cfg, lse[2]);
		for (int j = 0; j < N; j++)
			cr_expect(isnan(y[2 * N + j]), "%s: y[%d] = %g in a row holding +inf", cfg, j, y[2 * N + j]);
		for (int r = 3; r < R; r++) {
			double mx = -INFINITY, sum = 0;
			for (int j = 0; j < N; j++)
				mx = fmax(mx, x[r * N + j]);
			for (int j = 0; j < N; j++)
				sum += exp((double)x[r * N + j] - mx);
			double want = mx + log(sum);
			cr_expect(fabs(lse[r] - want) <= 1e-6 * fabs(want) + 1e-6, "%s: row %d lse %.9g, want %.9g", cfg, r,
				  lse[r], want);
			for (int j = 0; j < N; j++) {
				double yw = exp((double)x[r * N + j] - want);
				cr_expect(fabs(y[r * N + j] - yw) <= 1e-5 * yw + 1e-9, "%s: row %d y[%d] %.9g, want %.9g", cfg,
					  r, j, y[r * N + j], yw);
			}
		}
		cr_expect_eq(y[3 * N], 0.0f, "%s: exp(-inf - m) is 0", cfg);
		cr_expect_float_eq(y[4 * N + 150], 1.0f, 1e-6f, "%s: the huge value takes all the weight", cfg);
		rundata_free(d);
	}
	cuda_module_free(&m);
	spec_carrier_free(c);
}

/* The merge of an online max computes its two rescaling factors from one
 * exp2; the module's row loops are defined once for all its kernels and
 * load through ld.global from the kernel parameter, which stays in place. */
Test(cuda, softmax_module_shape, .timeout = 120)
{
	cuda_test_cache();
	Carrier *c = load_ok("specs/online_softmax.yaml");
	CudaModule m;
	char msg[8192];
	cr_assert_eq(cuda_module(c, NULL, &m, msg, sizeof msg), 0, "%s", msg);
	const char *mg = strstr(m.src, "ASC_DEV State merge(");
	cr_assert(mg, "no merge hook");
	const char *end = strstr(mg, "\n}\n");
	cr_assert(end);
	char body[2048];
	snprintf(body, sizeof body, "%.*s", (int)(end - mg), mg);
	cr_expect_eq(cuda_count(body, NULL, "exp2f("), 1, "one exp2 in the merge:\n%s", body);
	cr_expect_eq(cuda_count(body, NULL, "asc_one_inf("), 2, "the other factor from asc_one_inf (the guard):\n%s",
		     body);
	Nvrtc *nv;
	if (nvrtc_open(&nv, msg, sizeof msg)) {
		cuda_module_free(&m);
		spec_carrier_free(c);
		cr_skip_test("%s", msg);
	}
	char *ptx;
	int cached;
	cr_assert_eq(nvrtc_ptx(nv, m.src, "sm_90", &ptx, &cached, msg, sizeof msg), 0, "%s", msg);
	/* each row loop once: a definition, and its declaration */
	const char *fold = "\n.func  (.param .align 4 .b8 func_retval0[8]) _Z14thread_fold_at";
	cr_expect_eq(cuda_count(ptx, NULL, fold), 2, "thread_fold_at: one (acc, vec) pair, defined once");
	cr_expect_eq(cuda_count(ptx, NULL, "\n.func _Z11map_pass_at"), 2, "map_pass_at: one vec, defined once");
	int generic = cuda_count(ptx, NULL, "\tld.f32") + cuda_count(ptx, NULL, "\tld.v4.f32") +
		      cuda_count(ptx, NULL, "\tst.f32");
	cr_expect_eq(generic, 0, "a float load or store through a generic address");
	cr_expect_gt(cuda_count(ptx, NULL, "ld.global.v4.f32"), 0);
	cr_expect_gt(cuda_count(ptx, NULL, "cvta.param"), 0, "the kernel parameter's address is taken in place");
	/* the templates read the parameter's fields once, into a copy in
	 * registers: no kernel reads them again after its stores (the row kept
	 * on chip read them 97 times, once per element and output); the
	 * results of calls, read from retval, are not the parameter */
	int entries = 0;
	for (const char *k = ptx; (k = strstr(k, ".entry ")); k++, entries++) {
		const char *e = strstr(k, "\n}\n");
		cr_assert(e);
		cr_expect_leq(cuda_count(k, e, "ld.param") - cuda_count(k, e, "[retval"), 8, "%.40s", k + 7);
	}
	cr_expect_eq(entries, m.nvar + 3, "every variant, split rows' combine and maps");
	free(ptx);
	nvrtc_close(nv);
	cuda_module_free(&m);
	spec_carrier_free(c);
}

/* The carrier's tile fold reaches NVRTC only in a module with a kernel
 * that folds tiles: elsewhere the stub stands in for it (no instantiation
 * of the transported code), and the PTX is the same as with it. */
Test(cuda, tile_fold_only_where_a_kernel_folds_tiles, .timeout = 300)
{
	cuda_test_cache();
	char msg[8192];
	Carrier *c = load_ok("specs/welford.yaml");
	CudaModule m;
	cr_assert_eq(cuda_module_space(c, &m, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(m.tf, 1, "welford has a transported fold: %s", m.tf_why);
	const char *real = "#define ASC_TRANSPORT 1\n", *stub = "#define ASC_TRANSPORT 0\n";
	cr_expect(strstr(m.src, real) && !strstr(m.src, stub), "the space's module, with tf variants, holds the fold");
	int plain = -1, folding = -1;
	for (int v = 0; v < m.nvar; v++)
		if (m.var[v].fam == FAM_ROWREDUCE)
			*(m.var[v].tf ? &folding : &plain) = v;
	cr_assert(plain >= 0 && folding >= 0, "welford's space has rowreduce variants with and without tf");
	unsigned char want[256] = {0};
	cr_assert_lt(m.nvar, (int)sizeof want);
	want[folding] = 1;
	char *src = cuda_module_src_of(&m, want);
	cr_expect(strstr(src, real) && !strstr(src, stub), "a tf variant alone keeps the fold");
	free(src);
	want[folding] = 0, want[plain] = 1;
	src = cuda_module_src_of(&m, want);
	const char *at = strstr(src, stub), *end = at ? strstr(at, "\treturn false;\n}\n") : NULL;
	cr_assert(at && end && !strstr(src, real), "a plain variant alone holds the stub:\n%s", src);
	end += strlen("\treturn false;\n}\n");
	/* the same module with the carrier's fold in the stub's place */
	char *full = malloc(strlen(src) + strlen(m.hooks) + 1);
	cr_assert(full);
	sprintf(full, "%.*s%.*s%s", (int)(at - src), src, (int)(m.tf_hooks[1] - m.tf_hooks[0]), m.hooks + m.tf_hooks[0], end);
	cr_assert(strstr(full, real) && !strstr(full, stub));
	cuda_module_free(&m);
	/* online softmax's defaults fold no tiles: its run's module, and the
	 * module emit compiles, hold the stub */
	Carrier *sm = load_ok("specs/online_softmax.yaml");
	cr_assert_eq(cuda_module(sm, NULL, &m, msg, sizeof msg), 0, "%s", msg);
	cr_expect(m.tf && strstr(m.src, stub) && !strstr(m.src, real), "online softmax's default module holds the stub");
	cuda_module_free(&m);
	spec_carrier_free(sm);
	Nvrtc *nv;
	if (nvrtc_open(&nv, msg, sizeof msg)) {
		free(full);
		free(src);
		spec_carrier_free(c);
		cr_skip_test("no NVRTC to compare the PTX: %s", msg);
	}
	char *ptx[2];
	int cached;
	cr_assert_eq(nvrtc_ptx(nv, src, "sm_90", &ptx[0], &cached, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(nvrtc_ptx(nv, full, "sm_90", &ptx[1], &cached, msg, sizeof msg), 0, "%s", msg);
	cr_expect_str_eq(ptx[0], ptx[1], "the stub changes the PTX");
	free(ptx[0]);
	free(ptx[1]);
	nvrtc_close(nv);
	free(full);
	free(src);
	spec_carrier_free(c);
}

/* ASSOC_NVRTC_SPLIT=1 spreads NVVM over the cores: PTX of its own in the
 * cache (another option set), whose kernels still keep no call. */
Test(cuda, split_compile_on_request, .timeout = 120)
{
	cuda_test_cache();
	Nvrtc *nv;
	char msg[8192];
	if (nvrtc_open(&nv, msg, sizeof msg))
		cr_skip_test("%s", msg);
	Carrier *c = load_ok("specs/online_softmax.yaml");
	CudaModule m;
	cr_assert_eq(cuda_module(c, NULL, &m, msg, sizeof msg), 0, "%s", msg);
	char *ptx[2];
	int cached;
	cr_assert_eq(nvrtc_ptx(nv, m.src, "sm_90", &ptx[0], &cached, msg, sizeof msg), 0, "%s", msg);
	setenv("ASSOC_NVRTC_SPLIT", "1", 1);
	char dir[] = "/tmp/assoc-split-XXXXXX";
	test_tmpdir(dir);
	test_xdg_cache(dir);
	cr_assert_eq(nvrtc_ptx(nv, m.src, "sm_90", &ptx[1], &cached, msg, sizeof msg), 0, "%s", msg);
	cr_expect_eq(cached, 0);
	unsetenv("ASSOC_NVRTC_SPLIT");
	cr_expect_gt(cuda_expect_unspilled(ptx[1], "sm_90", "split compile", NULL, 0, msg, sizeof msg), 0,
		     "ptxas gave no kernels: %s", msg);
	free(ptx[1]);
	cr_assert_eq(nvrtc_ptx(nv, m.src, "sm_90", &ptx[1], &cached, msg, sizeof msg), 0, "%s", msg);
	cr_expect_eq(cached, 0, "the split compile's PTX is not the plain one's in the cache");
	cuda_test_cache();
	free(ptx[0]);
	free(ptx[1]);
	nvrtc_close(nv);
	cuda_module_free(&m);
	spec_carrier_free(c);
}

/* ASSOC_NVRTC_TIME=FILE: NVRTC's phase times go to FILE (bench/ptx_time.sh
 * reads them); the PTX is the same, and so is its place in the cache. */
Test(cuda, nvrtc_phase_times_on_request, .timeout = 120)
{
	Nvrtc *nv;
	char msg[8192];
	if (nvrtc_open(&nv, msg, sizeof msg))
		cr_skip_test("%s", msg);
	int major, minor;
	nvrtc_version(nv, &major, &minor);
	if (major < 12) {
		nvrtc_close(nv);
		cr_skip_test("NVRTC %d.%d times no phases", major, minor);
	}
	char dir[] = "/tmp/assoc-phases-XXXXXX", file[64];
	test_tmpdir(dir);
	test_xdg_cache(dir);
	snprintf(file, sizeof file, "%s/phases.csv", dir);
	const char *src = "extern \"C\" __global__ void k(float *p) { p[threadIdx.x] = 1.0f; }\n";
	char *ptx[2];
	int cached;
	setenv("ASSOC_NVRTC_TIME", file, 1);
	cr_assert_eq(nvrtc_ptx(nv, src, "sm_90", &ptx[0], &cached, msg, sizeof msg), 0, "%s", msg);
	unsetenv("ASSOC_NVRTC_TIME");
	cr_expect_eq(cached, 0);
	FILE *f = fopen(file, "r");
	cr_assert(f, "no %s", file);
	char *csv = calloc(4096, 1);
	cr_assert(csv);
	fread(csv, 1, 4095, f);
	fclose(f);
	cr_expect(strstr(csv, "Frontend") && strstr(csv, "NVVM"), "NVRTC's phases:\n%s", csv);
	cr_assert_eq(nvrtc_ptx(nv, src, "sm_90", &ptx[1], &cached, msg, sizeof msg), 0, "%s", msg);
	cr_expect_eq(cached, 1, "the timed compile's PTX is the untimed one's in the cache");
	cr_expect_str_eq(ptx[0], ptx[1]);
	cuda_test_cache();
	free(csv);
	free(ptx[0]);
	free(ptx[1]);
	nvrtc_close(nv);
}

/* What NVRTC says while compiling successfully (its warnings) is kept for
 * --verbose; nothing when the PTX comes from the cache. */
Test(cuda, nvrtc_warnings_are_kept, .timeout = 120)
{
	Nvrtc *nv;
	char msg[8192];
	if (nvrtc_open(&nv, msg, sizeof msg))
		cr_skip_test("%s", msg);
	char dir[] = "/tmp/assoc-said-XXXXXX";
	test_tmpdir(dir);
	test_xdg_cache(dir);
	const char *src = "extern \"C\" __global__ void k(float *p) { int unused; p[threadIdx.x] = 1.0f; }\n";
	char *ptx;
	int cached;
	cr_assert_eq(nvrtc_ptx(nv, src, "sm_90", &ptx, &cached, msg, sizeof msg), 0, "%s", msg);
	cr_expect(strstr(nvrtc_said(nv), "never referenced"), "NVRTC said: '%s'", nvrtc_said(nv));
	free(ptx);
	cr_assert_eq(nvrtc_ptx(nv, src, "sm_90", &ptx, &cached, msg, sizeof msg), 0, "%s", msg);
	cr_expect_eq(cached, 1);
	cr_expect_str_eq(nvrtc_said(nv), "");
	free(ptx);
	cuda_test_cache();
	nvrtc_close(nv);
}

/* An interrupt while ptxas runs for its statistics leaves no folder in
 * TMPDIR: ptxas here is a script that sends its caller SIGTERM, in a
 * child process, which the signal ends. */
Test(cuda, interrupted_ptxas_leaves_nothing_in_tmpdir)
{
	char dir[] = "/tmp/assoc-ptxasint-XXXXXX", cmd[1024], out[1024], path[4096];
	test_tmpdir(dir);
	snprintf(cmd, sizeof cmd, "mkdir %s/t %s/bin && printf '#!/bin/sh\nkill -TERM $PPID\nexit 1\n' "
		 ">%s/bin/ptxas && chmod +x %s/bin/ptxas", dir, dir, dir, dir);
	cr_assert_eq(sh(cmd, out, sizeof out, 1), 0, "%s", out);
	pid_t pid = fork();
	cr_assert(pid >= 0);
	if (!pid) {
		char msg[512];
		CudaKStat ks[4];
		snprintf(path, sizeof path, "%s/bin:%s", dir, getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
		setenv("PATH", path, 1);
		snprintf(path, sizeof path, "%s/t", dir);
		setenv("TMPDIR", path, 1);
		cuda_ptxas_stats(".version 7.8\n", "sm_90", ks, 4, msg, sizeof msg);
		_exit(0);
	}
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_expect(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM, "ended by its signal (status %#x)", st);
	snprintf(cmd, sizeof cmd, "ls -A %s/t", dir);
	cr_assert_eq(sh(cmd, out, sizeof out, 1), 0);
	cr_expect_str_empty(out, "left in TMPDIR: %s", out);
}

/* ptxas's statistics need no cache: with the cache's folders open to
 * other users (which the cache refuses) they still come, from a private
 * folder of their own that is gone afterwards. */
Test(cuda, ptxas_stats_beside_a_cache_open_to_others)
{
	static const char ptx[] = ".version 7.8\n.target sm_90\n.address_size 64\n\n"
				  ".visible .entry tiny()\n{\n\tret;\n}\n";
	char dir[] = "/tmp/assoc-open-cache-XXXXXX", sub[256], msg[4096] = "";
	test_tmpdir(dir);
	snprintf(sub, sizeof sub, "%s/assoc", dir);
	cr_assert_eq(mkdir(sub, 0700), 0);
	snprintf(sub, sizeof sub, "%s/assoc/tmp", dir);
	cr_assert_eq(mkdir(sub, 0700), 0);
	cr_assert_eq(chmod(sub, 0777), 0);
	test_xdg_cache(dir);
	char tdir[] = "/tmp/assoc-ptxas-tmp-XXXXXX";
	test_tmpdir(tdir);
	setenv("TMPDIR", tdir, 1);
	CudaKStat ks[4];
	int nks = cuda_ptxas_stats(ptx, "sm_90", ks, 4, msg, sizeof msg);
	unsetenv("TMPDIR");
	if (nks < 0 && strstr(msg, "ptxas not found"))
		cr_skip_test("%s", msg);
	cr_expect_eq(nks, 1, "%s", msg);
	cr_expect(!strstr(msg, "cache directory"), "%s", msg);
	if (nks == 1)
		cr_expect_str_eq(ks[0].name, "tiny");
	cr_expect_eq(rmdir(tdir), 0, "ptxas's folder under TMPDIR is removed");
}

/* ptxas -v's report: a function an entry still calls is listed after it,
 * with its frame and spills, which count for that entry. */
Test(cuda, ptxas_report_counts_called_functions)
{
	char log[] = "ptxas info    : 0 bytes gmem\n"
		     "ptxas info    : Compiling entry function 'k1' for 'sm_90'\n"
		     "ptxas info    : Function properties for k1\n"
		     "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
		     "ptxas info    : Used 66 registers, used 0 barriers, 136 bytes cumulative stack size\n"
		     "ptxas info    : Function properties for _Z3fooi\n"
		     "    128 bytes stack frame, 128 bytes spill stores, 124 bytes spill loads\n"
		     "ptxas info    : Compiling entry function 'k2' for 'sm_90'\n"
		     "ptxas info    : Function properties for k2\n"
		     "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
		     "ptxas info    : Used 32 registers, used 1 barriers, 72 bytes smem\n"
		     "ptxas info    : Function properties for _Z3bari\n"
		     "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
		     "ptxas info    : Compiling entry function 'k3' for 'sm_90'\n"
		     "ptxas info    : Function properties for k3\n"
		     "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
		     "ptxas info    : Used 40 registers, used 0 barriers, 8 bytes cumulative stack size\n";
	CudaKStat st[4];
	cr_assert_eq(cuda_ptxas_parse(log, st, 4), 3);
	cr_expect_str_eq(st[0].name, "k1");
	cr_expect_eq(st[0].regs, 66);
	cr_expect_eq(st[0].spill_st, 128);
	cr_expect_eq(st[0].spill_ld, 124);
	cr_expect_eq(st[0].stack, 136, "the cumulative stack size covers the callee's frame");
	cr_expect_eq(st[1].regs, 32);
	cr_expect_eq(st[1].smem, 72);
	cr_expect_eq(st[1].stack + st[1].spill_st + st[1].spill_ld, 0);
	cr_expect_eq(st[2].stack, 8, "a call with no frame still leaves a stack");
}

static int is_ident(char ch) { return ch == '_' || (ch >= '0' && ch <= '9') || ((ch | 32) >= 'a' && (ch | 32) <= 'z'); }

/* 1 when word occurs in text as a whole identifier. */
static int has_word(const char *text, const char *word)
{
	size_t n = strlen(word);
	for (const char *p = strstr(text, word); p; p = strstr(p + 1, word))
		if ((p == text || !is_ident(p[-1])) && !is_ident(p[n]))
			return 1;
	return 0;
}

/* Words of the generated code itself, which a spec may use too. */
static int own_word(const char *w)
{
	static const char *const own[] = {"out", "in", "ws", "rows", "len", "split", "chunk", "prm", "map", "merge"};
	for (size_t k = 0; k < sizeof own / sizeof *own; k++)
		if (!strcmp(w, own[k]))
			return 1;
	return strlen(w) < 2; /* a, b, i, j, s, u: the code's own letters */
}

Test(cuda, generated_code_hides_spec_names)
{
	glob_t g;
	cr_assert_eq(glob("specs/*.yaml", 0, NULL, &g), 0);
	for (size_t i = 0; i < g.gl_pathc; i++) {
		Carrier *c = load_ok(g.gl_pathv[i]);
		CudaModule m;
		char msg[256];
		cr_assert_eq(cuda_module(c, NULL, &m, msg, sizeof msg), 0);
		/* a carrier named like a template (attention) is looked for in its own hooks */
		cr_expect_not(has_word(blob_find(c->name) ? m.hooks : m.src, c->name), "%s: carrier name in the generated code",
			      g.gl_pathv[i]);
		for (int k = 0; k < c->nstate; k++)
			if (!own_word(c->state[k].name))
				cr_expect_not(has_word(m.hooks, c->state[k].name), "%s: field %s in the code", g.gl_pathv[i],
					      c->state[k].name);
		for (int k = 0; k < c->nfinal; k++)
			if (!own_word(c->finalize[k].name))
				cr_expect_not(has_word(m.hooks, c->finalize[k].name), "%s: output %s in the code",
					      g.gl_pathv[i], c->finalize[k].name);
		cr_expect(!strncmp(m.prefix, "asc_", 4) && strlen(m.prefix) == 20);
		cuda_module_free(&m);
		spec_carrier_free(c);
	}
	globfree(&g);
}

/* The carrier's i32 and i64 arithmetic wraps (the spec format's rule), and
 * C++'s signed overflow is undefined: every integer temporary of the
 * generated functions comes from a wrapping helper, none from a signed
 * +, -, * or negation, which NVRTC or the emulator's host compiler may
 * fold as if it could not overflow (`k + c < k` to false). */
Test(cuda, integer_arithmetic_goes_through_the_wrapping_helpers)
{
	Carrier *c = text_ok("carrier: wraps\nelement: {k: i32, e: i64, c: 'i32[3]'}\nmask: j * 1073741824 > 0\n"
			     "state: {a: i32, b: i64, d: i32, v: 'i32[3]'}\nidentity: {a: 0, b: 0, d: 0, v: 0}\n"
			     "lift:\n  a: 'where(k + 2147483000 < k || -k == k || abs(k) < 0, 1, k * k - k^2 * 3)'\n"
			     "  b: 'where(e + 9000000000000000000 < e, -e, abs(e) * e - e)'\n  d: 'dot(c, c)'\n"
			     "  v: 'c * k - c'\n"
			     "merge: {a: a.a + b.a, b: a.b + b.b, d: a.d + b.d, v: a.v + b.v}\nlaws: [commutative]\n");
	CudaModule m;
	char msg[512];
	cr_assert_eq(cuda_module(c, NULL, &m, msg, sizeof msg), 0, "%s", msg);
	static const char *const helpers[] = {"asc_addi(", "asc_subi(", "asc_muli(", "asc_negi(", "asc_absi(",
					      "asc_addl(", "asc_subl(", "asc_mull(", "asc_negl(", "asc_absl(",
					      "asc_muli(j, 1073741824)"};
	for (size_t i = 0; i < sizeof helpers / sizeof *helpers; i++)
		cr_expect(strstr(m.hooks, helpers[i]), "no %s in the generated functions:\n%s", helpers[i], m.hooks);
	int checked = 0;
	for (const char *l = m.hooks; *l;) {
		const char *end = strchr(l, '\n');
		size_t n = end ? (size_t)(end - l) : strlen(l);
		char line[1024];
		snprintf(line, sizeof line, "%.*s", (int)n, l);
		const char *s = line + strspn(line, "\t ");
		int integer = !strncmp(s, "const int t", 11) || !strncmp(s, "const long long t", 17) ||
			      (!strncmp(s, "t", 1) && strstr(s, "= asc_"));
		if (integer && !strstr(s, "ASC_LD")) {
			const char *rhs = strchr(s, '=');
			cr_expect(rhs && !strstr(rhs, " + ") && !strstr(rhs, " - ") && !strstr(rhs, " * ") &&
					  !strstr(rhs, " / ") && !strstr(rhs, "(-"),
				  "signed arithmetic in: %s", s);
			checked++;
		}
		l += n + (end != NULL);
	}
	cr_expect_gt(checked, 10, "%d integer temporaries checked:\n%s", checked, m.hooks);
	cuda_module_free(&m);
	spec_carrier_free(c);
}

Test(cuda, config_errors_are_clear)
{
	Variant v;
	char msg[512];
	cr_assert_eq(variant_parse("rowmap:nt=100", &v, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "multiple of 32"), "%s", msg);
	cr_assert_eq(variant_parse("blocky:nt=64", &v, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "unknown kernel family"), "%s", msg);
	cr_assert_eq(variant_parse("splitk:nt=64,acc=2", &v, msg, sizeof msg), 0);
	cr_expect_eq(v.fam, FAM_SPLITK);
	cr_expect_eq(v.acc, 2);
	/* key slices: a divisor of the warps, 16 keys a warp of every tile */
	static const char *const bad_ks[] = {"attention:ks=3", "attention:nt=64,ks=4", "attention:bn=32,ks=4",
					     "attention:ks=0", "attention:nt=512,bn=128,ks=16", "rowmap:ks=2"};
	for (size_t k = 0; k < sizeof bad_ks / sizeof *bad_ks; k++) {
		cr_assert_eq(variant_parse(bad_ks[k], &v, msg, sizeof msg), -1, "%s", bad_ks[k]);
		cr_expect(strstr(msg, k < 5 ? "ks (warps that split each key tile, 1 to 8) must divide the warps" : "unknown key 'ks'"),
			  "%s: %s", bad_ks[k], msg);
	}
	cr_assert_eq(variant_parse("attention:nt=256,bn=128,ks=8", &v, msg, sizeof msg), 0, "%s", msg);
	cr_expect_eq(cuda_attn_rows(&v), 16);
	cr_assert_eq(variant_parse("attention:nt=128", &v, msg, sizeof msg), 0, "%s", msg);
	cr_expect(v.ks == 1 && cuda_attn_rows(&v) == 64, "one slice by default: %d, %d rows", v.ks, cuda_attn_rows(&v));
}

/* NVRTC keeps an allocation for the life of the process (it stays loaded). */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:libnvrtc\n"; }

/* Every bundled spec's module, all variants in one NVRTC program, assembles
 * for sm_90 with no spills. */
Test(cuda, ptx_assembles_without_spills, .timeout = 300)
{
	cuda_test_cache();
	Nvrtc *nv;
	char msg[8192];
	if (nvrtc_open(&nv, msg, sizeof msg))
		cr_skip_test("%s", msg);
	glob_t g;
	cr_assert_eq(glob("specs/*.yaml", 0, NULL, &g), 0);
	for (size_t i = 0; i < g.gl_pathc; i++) {
		Carrier *c = load_ok(g.gl_pathv[i]);
		CudaModule m;
		cr_assert_eq(cuda_module(c, NULL, &m, msg, sizeof msg), 0, "%s", msg);
		char *ptx;
		int cached;
		cr_assert_eq(nvrtc_ptx(nv, m.src, "sm_90", &ptx, &cached, msg, sizeof msg), 0, "%s: %s", g.gl_pathv[i], msg);
		/* the row loops shared by the kernels (ASC_FN) are inlined again
		 * by ptxas: no call is left to save registers around, no stack */
		int nks = cuda_expect_unspilled(ptx, "sm_90", g.gl_pathv[i], NULL, 0, msg, sizeof msg);
		if (nks < 0) {
			free(ptx);
			cuda_module_free(&m);
			spec_carrier_free(c);
			nvrtc_close(nv);
			globfree(&g);
			cr_skip_test("%s", msg);
		}
		cr_assert_geq(nks, m.nvar, "%s: %s", g.gl_pathv[i], msg);
		free(ptx);
		cuda_module_free(&m);
		spec_carrier_free(c);
	}
	globfree(&g);
	nvrtc_close(nv);
}

Test(cuda, nvrtc_absent_gives_a_clear_message)
{
	setenv("ASSOC_NVRTC", "/nonexistent/libnvrtc.so", 1);
	Nvrtc *nv = NULL;
	char msg[2048];
	cr_assert_eq(nvrtc_open(&nv, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "NVRTC is not available"), "%s", msg);
	cr_expect(strstr(msg, "/nonexistent/libnvrtc.so"), "%s", msg);
	cr_expect(strstr(msg, "--target cuda"), "%s", msg);
	unsetenv("ASSOC_NVRTC");
}

/* An NVRTC that refuses the option asked for first (-minimal, 12.4 and
 * later) still compiles, with the base options. */
Test(cuda, older_nvrtc_is_asked_again_without_the_newer_options)
{
	char dir[] = "/tmp/assoc-nvrtc-XXXXXX";
	test_tmpdir(dir);
	test_xdg_cache(dir);
	setenv("ASSOC_NVRTC", "build/libfakenvrtc.so", 1);
	Nvrtc *nv = NULL;
	char msg[2048] = "", *ptx = NULL;
	int cached = -1;
	cr_assert_eq(nvrtc_open(&nv, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(nvrtc_ptx(nv, "extern \"C\" __global__ void k() {}", "sm_90", &ptx, &cached, msg, sizeof msg), 0,
		     "%s", msg);
	cr_expect_eq(cached, 0);
	cr_expect(strstr(ptx, "--gpu-architecture=compute_90 -std=c++14 --fmad=true"), "%s", ptx);
	cr_expect(!strstr(ptx, "-minimal"), "%s", ptx);
	free(ptx);
	nvrtc_close(nv);
	unsetenv("ASSOC_NVRTC");
	cuda_test_cache();
}

/* A cached PTX file cut short (a full disk, a copy interrupted) is not
 * used: the module is compiled again, identical, and the file mended. */
Test(cuda, damaged_ptx_cache_is_compiled_again, .timeout = 120)
{
	char dir[] = "build/ptxcache.XXXXXX";
	test_tmpdir(dir);
	test_xdg_cache(dir);
	Carrier *c = load_ok("specs/sum.yaml");
	CudaModule m;
	char msg[2048];
	cr_assert_eq(cuda_module(c, NULL, &m, msg, sizeof msg), 0, "%s", msg);
	Nvrtc *nv;
	if (nvrtc_open(&nv, msg, sizeof msg)) {
		cuda_module_free(&m);
		spec_carrier_free(c);
		cr_skip_test("%s", msg);
	}
	char *ptx[3], path[4200];
	int cached;
	cr_assert_eq(nvrtc_ptx(nv, m.src, "sm_90", &ptx[0], &cached, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(cached, 0);
	cr_assert_eq(nvrtc_ptx(nv, m.src, "sm_90", &ptx[1], &cached, msg, sizeof msg), 0, "%s", msg);
	cr_expect_eq(cached, 1);
	cr_expect_str_eq(ptx[1], ptx[0], "the cache gives back the PTX without its seal");
	glob_t g;
	snprintf(path, sizeof path, "%s/assoc/ptx/*.ptx", dir);
	cr_assert_eq(glob(path, 0, NULL, &g), 0);
	cr_assert_eq(truncate(g.gl_pathv[0], (off_t)(strlen(ptx[0]) / 2)), 0);
	cr_assert_eq(nvrtc_ptx(nv, m.src, "sm_90", &ptx[2], &cached, msg, sizeof msg), 0, "%s", msg);
	cr_expect_eq(cached, 0, "a file cut short is a miss");
	cr_expect_str_eq(ptx[2], ptx[0]);
	free(ptx[2]);
	cr_assert_eq(nvrtc_ptx(nv, m.src, "sm_90", &ptx[2], &cached, msg, sizeof msg), 0, "%s", msg);
	cr_expect_eq(cached, 1, "and written over");
	globfree(&g);
	for (int i = 0; i < 3; i++)
		free(ptx[i]);
	nvrtc_close(nv);
	cuda_module_free(&m);
	spec_carrier_free(c);
	cuda_test_cache();
}

/* An attention --config whose tiles exceed a block's shared memory is
 * refused when the module is made, naming the bytes, rather than by the
 * compiler's static_assert; the same shape with fewer rows is taken. */
Test(cuda, attention_config_over_shared_memory_is_refused)
{
	Define d[2] = {{"d", "256"}, {"dv", "256"}};
	Carrier *c = load_defs("specs/attention.yaml", d, 2);
	CudaModule m;
	char msg[512];
	cr_expect_neq(cuda_module(c, "attention:nt=256,mt=3,bn=64,pv=1,st=1", &m, msg, sizeof msg), 0);
	cr_expect(strstr(msg, "needs 264 KB of shared memory a block at head dims 256/256"), "%s", msg);
	cr_expect_eq(cuda_module(c, "attention:nt=128,mt=1,bn=64,pv=1,st=1", &m, msg, sizeof msg), 0, "%s", msg);
	cuda_module_free(&m);
	spec_carrier_free(c);
}

/* topk's lists merged by asc_topk (templates/common.cuh) in every variant
 * of the module, on rows of ties (integers in [-2, 2]) and -inf, short
 * and long, against the reference's ranking one pair at a time. */
static void topk_ties(const char *path)
{
	static const int lens[] = {0, 1, 3, 4, 5, 8, 9, 31, 64, 300};
	Carrier *c = load_ok(path);
	CudaModule m;
	char msg[4096];
	cr_assert_eq(cuda_module(c, NULL, &m, msg, sizeof msg), 0, "%s: %s", path, msg);
	for (int v = 0; v < m.nvar; v++) {
		char cfg[128];
		variant_str(&m.var[v], cfg, sizeof cfg);
		for (size_t l = 0; l < sizeof lens / sizeof *lens; l++) {
			int len = lens[l], split = m.var[v].fam == FAM_SPLITK ? 3 : 1;
			if (!fits(&m.var[v], len))
				continue;
			RunData *d = rundata_new(c, 2, len);
			cr_assert_eq(rundata_draw(d, 5, NULL, 0, msg, sizeof msg), 0, "%s", msg);
			float *x = d->elem[0].p;
			for (int j = 0; j < len; j++) {
				x[j] = (float)((j * 7 + 3) % 5 - 2);
				x[len + j] = j % 4 == 1 ? -INFINITY : (float)((j * 5) % 3);
			}
			cr_assert_eq(emu_run_data(d, &(RunOpts){.split = split, .config = cfg}, NULL, msg, sizeof msg), 0,
				     "%s %s: %s", path, cfg, msg);
			RunCheck chk;
			runcheck_run(d, &chk);
			for (int k = 0; k < chk.nout; k++)
				cr_expect(chk.out[k].worst_ratio <= 1 && !chk.out[k].nan_mismatch, "%s %s len %d: %s at %zu",
					  path, cfg, len, chk.out[k].name, chk.out[k].at);
			runcheck_free(&chk);
			rundata_free(d);
		}
	}
	cuda_module_free(&m);
	spec_carrier_free(c);
}

Test(cuda, topk_lists_on_every_variant, .timeout = 300)
{
	cuda_test_cache();
	topk_ties("tests/check/topk_reference.yaml");
	topk_ties("tests/prove/topk_softmax.yaml");
	run_file("tests/check/topk_reference.yaml");
}

/* A topk merge inserts the other list's pairs in a loop that stops at the
 * first one ranking after the last slot, not unrolled pair by pair: the
 * router's module (five variants, a top-8 merge in every step of every
 * fold) was 3.6 MB of PTX, 8 s of NVRTC and 17 s of ptxas; one loop
 * leaves it under a megabyte. */
Test(cuda, topk_merges_keep_the_module_small, .timeout = 120)
{
	cuda_test_cache();
	Nvrtc *nv;
	char msg[4096];
	if (nvrtc_open(&nv, msg, sizeof msg))
		cr_skip_test("%s", msg);
	Carrier *c = load_ok("specs/moe_topk_routing.yaml");
	CudaModule m;
	cr_assert_eq(cuda_module(c, NULL, &m, msg, sizeof msg), 0, "%s", msg);
	cr_expect(strstr(m.src, "#pragma unroll 1\n\tfor (int q = 0; q < NB; q++)"), "the merge's loop over b's pairs");
	char *ptx;
	int cached;
	cr_assert_eq(nvrtc_ptx(nv, m.src, "sm_90", &ptx, &cached, msg, sizeof msg), 0, "%s", msg);
	cr_expect_lt(strlen(ptx), 1000000, "%zu bytes of PTX for %d variants", strlen(ptx), m.nvar);
	free(ptx);
	cuda_module_free(&m);
	spec_carrier_free(c);
	nvrtc_close(nv);
}

/* Merges that take a NaN on their left but not on their right: a first
 * maximum by a strict comparison beside max, a first minimum by `where`
 * beside softmax's rescale (with map outputs), a top-3 list, and the
 * first maximum's scan.  From the identity a NaN's lift never enters the
 * state; a fold that began at a position's raw lift (or merged it on the
 * left of another) would keep the NaN's position past a larger value. */
#define HI_AT_SPEC                                                                                          \
	"carrier: hi_at\nelement: {x: f32}\nstate: {hi: f32, at: i32}\nidentity: {hi: -inf, at: -1}\n"      \
	"lift: {hi: x, at: j}\nmerge:\n  hi: max(a.hi, b.hi)\n  at: where(b.hi > a.hi, b.at, a.at)\n"
static const char *const nan_left_specs[] = {
	HI_AT_SPEC,
	HI_AT_SPEC "finalize: {hi: hi, at: at}\ntemplate: scan\n",
	"carrier: softmax_lo\nelement: {x: f32}\nstate: {m: f32, l: f32, lo: f32, at: i32}\n"
	"identity: {m: -inf, l: 0, lo: inf, at: -1}\nlift: {m: x, l: 1, lo: x, at: j}\n"
	"merge:\n  m: max(a.m, b.m)\n  l: a.l * exp(a.m - m) + b.l * exp(b.m - m)\n"
	"  lo: where(b.lo < a.lo, b.lo, a.lo)\n  at: where(b.lo < a.lo, b.at, a.at)\n"
	"finalize: {lse: m + log(l), lo: lo, at: at}\nmap: {d: x - lo}\n",
	"carrier: top3\nelement: {x: f32}\nstate: {top: 'f32[3]', idx: 'i32[3]'}\n"
	"identity: {top: -inf, idx: -1}\nlift: {top: 'topk(x, j, 3)', idx: 'topk_idx(x, j, 3)'}\n"
	"merge:\n  top: topk(a.top, a.idx, b.top, b.idx)\n  idx: topk_idx(a.top, a.idx, b.top, b.idx)\n",
};

/* Row r of len: NaN before a larger and a smaller value, NaN before
 * values falling from the largest, NaN last, all NaN, infinities of both signs among NaN, NaN at every other
 * position among ties, NaN before a row of -inf. */
static float nan_row(int r, int j, int len)
{
	float v = (float)((j * 7 + 3) % 5 - 2);
	switch (r % 7) {
	case 0:
		return j == len / 3 ? NAN : j == len / 3 + 1 + len / 3 ? 50.0f : j == len - 1 && j > len / 3 ? -50.0f : v;
	case 1:
		return j == 0 ? NAN : (float)(len - j);
	case 2:
		return j == len - 1 ? NAN : v;
	case 3:
		return NAN;
	case 4:
		return j % 5 == 0 ? INFINITY : j % 5 == 1 ? -INFINITY : j % 5 == 2 ? NAN : v;
	case 5:
		return j % 2 ? NAN : v;
	default:
		return j == 0 ? NAN : -INFINITY;
	}
}

/* Every output of d equal to want's, bit for bit (NaN matching NaN). */
static void expect_same_outputs(const RunData *d, Buffer *want, int nout, const char *what)
{
	for (int k = 0; k < nout; k++) {
		const Buffer *b = k < d->c->nfinal ? &d->fin[k] : &d->map[k - d->c->nfinal];
		size_t n = b->n * b->width, bad = n;
		for (size_t e = 0; e < n && bad == n; e++)
			if (b->kind == TY_F32) {
				float x = ((const float *)b->p)[e], y = ((const float *)want[k].p)[e];
				bad = (x == y && signbit(x) == signbit(y)) || (isnan(x) && isnan(y)) ? n : e;
			} else if (memcmp((const char *)b->p + e * 4, (const char *)want[k].p + e * 4, 4)) {
				bad = e;
			}
		cr_expect_eq(bad, n, "%s: output %d differs from interp at %zu of %zu", what, k, bad, n);
	}
}

static void nan_left_run(Carrier *c, const char *cfg, const char *arch, int split, int rows, int len)
{
	char msg[2048], what[256];
	snprintf(what, sizeof what, "%s %s %dx%d split %d", c->name, cfg, rows, len, split);
	RunData *d = rundata_new(c, rows, len);
	cr_assert_eq(rundata_draw(d, 9, NULL, 0, msg, sizeof msg), 0, "%s", msg);
	float *x = d->elem[0].p;
	for (int r = 0; r < rows; r++)
		for (int j = 0; j < len; j++)
			x[(size_t)r * len + j] = nan_row(r, j, len);
	const Device *interp = run_device_find("interp");
	cr_assert(interp);
	cr_assert_eq(interp->run(d, &(RunOpts){0}, msg, sizeof msg), 0, "%s: %s", what, msg);
	int nout = c->nfinal + c->nmap;
	Buffer want[8];
	cr_assert(nout <= 8);
	for (int k = 0; k < nout; k++) {
		Buffer *b = k < c->nfinal ? &d->fin[k] : &d->map[k - c->nfinal];
		cr_assert(b->kind == TY_F32 || b->kind == TY_I32, "%s: output %d of 4-byte values", what, k);
		want[k] = *b;
		want[k].p = malloc(b->n * b->width * 4);
		memcpy(want[k].p, b->p, b->n * b->width * 4);
		memset(b->p, 0x7f, b->n * b->width * 4);
	}
	cr_assert_eq(emu_run_data(d, &(RunOpts){.config = cfg, .split = split, .arch = arch}, NULL, msg, sizeof msg), 0,
		     "%s: %s", what, msg);
	expect_same_outputs(d, want, nout, what);
	for (int k = 0; k < nout; k++)
		free(want[k].p);
	rundata_free(d);
}

/* Each carrier's every default variant and one more (a row across a
 * cluster, a scan of 3 items a thread, bulk copies), at lengths under, at
 * and past a warp and past 4096, splits 1, 3 and 7: the interpreter's
 * outputs bit for bit.  A thread that began its segment, its strided
 * accumulators or its scan items at a raw lift fails here. */
Test(cuda, nan_on_the_left_stays_out_of_every_variant, .timeout = 600)
{
	cuda_test_cache();
	static const int shapes[][2] = {{7, 1}, {7, 31}, {7, 33}, {7, 255}, {1, 4099}};
	static const int splits[] = {1, 3, 7};
	/* beyond the defaults: a row across a cluster, and through bulk
	 * copies where the merge commutes (top3) */
	static const char *const more[] = {"rowreduce:nt=64,acc=1,vec=4,cl=4", "scan:nt=32,acc=1,vec=1,items=3",
					   "rowmap:nt=64,acc=1,vec=4,items=16,cl=2", "rowreduce:nt=32,acc=2,vec=4,bk=2"};
	for (size_t s = 0; s < sizeof nan_left_specs / sizeof *nan_left_specs; s++) {
		Carrier *c = inline_spec(nan_left_specs[s]);
		CudaModule m;
		char msg[512];
		cr_assert_eq(cuda_module(c, NULL, &m, msg, sizeof msg), 0, "%s", msg);
		for (int v = 0; v <= m.nvar; v++) {
			char cfg[128];
			Variant var;
			if (v < m.nvar) {
				var = m.var[v];
				variant_str(&var, cfg, sizeof cfg);
			} else {
				snprintf(cfg, sizeof cfg, "%s", more[s]);
				cr_assert_eq(variant_parse(cfg, &var, msg, sizeof msg), 0, "%s", msg);
			}
			int split_fam = var.fam == FAM_SPLITK || var.fam == FAM_SCAN;
			for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++)
				for (size_t p = 0; p < (split_fam ? sizeof splits / sizeof *splits : 1); p++)
					if (fits(&var, shapes[k][1]))
						nan_left_run(c, cfg, v < m.nvar ? NULL : "sm_90a", split_fam ? splits[p] : 1,
							     shapes[k][0], shapes[k][1]);
		}
		cuda_module_free(&m);
		spec_carrier_free(c);
	}
}

/* --explain on a scan names the template and what each variant does, as
 * the row templates' do ("template by the carrier's shape" before). */
Test(cuda, scan_is_explained)
{
	Carrier *c = load_ok("docs/examples/linear_recurrence.yaml");
	CudaModule m;
	char msg[512], buf[512];
	cr_assert_eq(cuda_module(c, NULL, &m, msg, sizeof msg), 0, "%s", msg);
	cr_expect(strstr(m.explain, "template scan (the spec's template: scan)") && strstr(m.explain, "need not commute"),
		  "%s", m.explain);
	cuda_variant_explain(&m, 0, buf, sizeof buf);
	cr_expect(strstr(buf, "scan:nt=") && strstr(buf, " threads a block, ") && strstr(buf, "a thread a tile"), "%s", buf);
	cuda_module_free(&m);
	spec_carrier_free(c);
}
