/* test_run.c: whole-array runs (the interp device), the comparison with
 * the float64 reference, storage conversions and .npy files. */
#include <glob.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "compiler/devices/emu.h"
#include "compiler/devices/npy.h"
#include "compiler/devices/run.h"
#include "compiler/util/rng.h"
#include "testutil.h"

static RunData *drawn(Carrier *c, int rows, int len)
{
	RunData *d = rundata_new(c, rows, len);
	char msg[200];
	cr_assert_eq(rundata_draw(d, 1, NULL, 0, msg, sizeof msg), 0, "%s", msg);
	return d;
}

/* d run on the interp device, which must succeed. */
static void interp_run(RunData *d)
{
	char msg[200];
	cr_assert_eq(run_device_find("interp")->run(d, &(RunOpts){0}, msg, sizeof msg), 0, "%s", msg);
}

Test(run, interp_matches_reference_on_every_bundled_spec)
{
	glob_t g;
	cr_assert_eq(glob("specs/*.yaml", 0, NULL, &g), 0);
	static const int lens[] = {0, 1, 31, 32, 33, 1000};
	for (size_t i = 0; i < g.gl_pathc; i++) {
		Carrier *c = load_ok(g.gl_pathv[i]);
		for (size_t l = 0; l < sizeof lens / sizeof *lens; l++) {
			RunData *d = drawn(c, 3, lens[l]);
			char msg[200];
			cr_assert_eq(run_device_find("interp")->run(d, &(RunOpts){0}, msg, sizeof msg), 0);
			RunCheck rc;
			runcheck_run(d, &rc);
			for (int o = 0; o < rc.nout; o++)
				cr_expect(rc.out[o].worst_ratio <= 1 && !rc.out[o].nan_mismatch, "%s len %d %s: %g of tolerance",
					  g.gl_pathv[i], lens[l], rc.out[o].name, rc.out[o].worst_ratio);
			cr_expect(rc.ok);
			runcheck_free(&rc);
			rundata_free(d);
		}
		spec_carrier_free(c);
	}
	globfree(&g);
}

Test(run, check_catches_a_wrong_output)
{
	Carrier *c = load_ok("specs/online_softmax.yaml");
	RunData *d = drawn(c, 2, 50);
	char msg[200];
	run_device_find("interp")->run(d, &(RunOpts){0}, msg, sizeof msg);
	float *y = d->map[0].p;
	y[57] *= 1.0001f; /* 13 float32 ulps off in one value of row 1 */
	RunCheck rc;
	runcheck_run(d, &rc);
	cr_assert_not(rc.ok);
	cr_assert_str_eq(rc.out[1].name, "y");
	cr_assert_gt(rc.out[1].worst_ratio, 1);
	cr_assert_eq(rc.out[1].at, 57);
	cr_assert_leq(rc.out[0].worst_ratio, 1, "lse untouched");
	runcheck_free(&rc);
	rundata_free(d);
	spec_carrier_free(c);
}

/* A map output's reference that names a row input outside a reduction is
 * compared at every position. */
Test(run, row_input_reference_of_a_map_output)
{
	Carrier *c = load_ok("tests/check/row_input_reference.yaml");
	RunData *d = drawn(c, 3, 40);
	interp_run(d);
	RunCheck rc;
	runcheck_run(d, &rc);
	cr_expect(rc.ok);
	runcheck_free(&rc);
	float *y = d->map[0].p;
	y[40 + 7] *= 1.001f;
	runcheck_run(d, &rc);
	cr_assert_not(rc.ok);
	cr_assert_str_eq(rc.out[1].name, "y");
	cr_assert_eq(rc.out[1].at, 47);
	runcheck_free(&rc);
	rundata_free(d);
	spec_carrier_free(c);
}

/* A bound that assume puts on one input, far from where draws fall, is
 * drawn within (it was "could not draw inputs where 'assume' holds"). */
Test(run, assume_bound_far_out_is_drawn_within)
{
	Carrier *c = text_ok("carrier: far\nelement: {x: f32}\nassume: x > 1000\nstate: {s: f32}\nidentity: {s: 0}\n"
			     "lift: {s: x}\nmerge:\n  s: a.s + b.s\nreference: {s: sum(x)}\n");
	RunData *d = drawn(c, 3, 20);
	const float *x = d->elem[0].p;
	for (int k = 0; k < 60; k++)
		cr_assert_gt(x[k], 1000, "x[%d] = %g", k, x[k]);
	rundata_free(d);
	spec_carrier_free(c);
}

/* A decayed log-sum-exp scan whose assume puts its param below 0: drawn
 * without --param, the param is drawn within (it was drawn in [0.05, 1],
 * and run stopped on "param lg = 0.58 breaks 'assume' (lg <= 0)"); where
 * no draw can meet it, the param is named, with the --param to give. */
#define DECAY_LSE(assume)                                                                                  \
	"carrier: decay_lse\nparams: {lg: f32}\nassume: " assume "\nelement: {x: bf16}\n"                   \
	"state: {n: f32, m: f32, l: f32}\nidentity: {n: 0, m: -inf, l: 0}\nlift: {n: 1, m: x, l: 1}\n"          \
	"merge:\n  let:\n    am: a.m + b.n * lg\n    mm: max(a.m + b.n * lg, b.m)\n  n: a.n + b.n\n  m: mm\n" \
	"  l: a.l * exp(am - mm) + b.l * exp(b.m - mm)\nfinalize: {y: m + log(l)}\ntemplate: scan\n"
Test(run, params_are_drawn_within_assume)
{
	static const char *const specs[] = {DECAY_LSE("lg <= 0"), DECAY_LSE("lg < 0 && x == x"),
					    DECAY_LSE("lg > 1.5"), DECAY_LSE("lg > -2 && lg < -1.75")};
	static const double lo[] = {-INFINITY, -INFINITY, 1.5, -2}, hi[] = {0, 0, INFINITY, -1.75};
	for (int i = 0; i < 4; i++) {
		Carrier *c = text_ok(specs[i]);
		RunData *d = rundata_new(c, 3, 17);
		char msg[200] = "";
		cr_assert_eq(rundata_draw(d, 1, NULL, 0, msg, sizeof msg), 0, "spec %d: %s", i, msg);
		cr_expect(d->params[0] >= lo[i] && d->params[0] <= hi[i], "spec %d: lg = %g", i, d->params[0]);
		interp_run(d);
		RunCheck rc;
		runcheck_run(d, &rc);
		cr_expect(rc.ok, "spec %d: %g of tolerance", i, rc.out[0].worst_ratio);
		runcheck_free(&rc);
		rundata_free(d);
		spec_carrier_free(c);
	}
	Carrier *c = text_ok(DECAY_LSE("lg < 0 && lg > 1"));
	RunData *d = rundata_new(c, 1, 4);
	char msg[200] = "";
	cr_assert_eq(rundata_draw(d, 1, NULL, 0, msg, sizeof msg), -1);
	cr_expect_str_eq(msg, "no draw of param lg satisfies 'assume' (lg < 0): give --param lg=...");
	rundata_free(d);
	spec_carrier_free(c);
}

Test(run, causal_mask_rows)
{
	Carrier *c = load_ok("specs/attention.yaml");
	RunData *d = drawn(c, 5, 17);
	char msg[200];
	run_device_find("interp")->run(d, &(RunOpts){0}, msg, sizeof msg);
	RunCheck rc;
	runcheck_run(d, &rc);
	cr_assert(rc.ok);
	runcheck_free(&rc);
	rundata_free(d);
	spec_carrier_free(c);
}

/* where() of two literals is no literal: in a let, an output or a merge's
 * let it keeps its condition (it was the constant 0), with the values
 * checked here by hand, as the float64 fold shared the mistake. */
Test(run, where_of_two_literals_keeps_its_condition)
{
	Carrier *c = text_ok("carrier: w\nelement: {x: f32}\nlet:\n  w: where(x > 0, 1, 2)\n"
			     "state: {m: f32, s: f32, c: f32}\nidentity: {m: -inf, s: 0, c: 0}\nlift: {m: x, s: w, c: j}\n"
			     "merge:\n  let:\n    t: where(a.m >= b.m, 1, 0)\n  m: max(a.m, b.m)\n  s: a.s + b.s\n"
			     "  c: t * a.c + (1 - t) * b.c\n"
			     "finalize:\n  f: where(m < 0, 1.5, 2.5)\n  s: s\n  c: c\nmap:\n  y: 1 + where(x < 0, 1, 2)\n");
	RunData *d = rundata_new(c, 2, 4);
	const float x[8] = {-1, 2, 3, -4, -1, -2, -3, -4};
	memcpy(d->elem[0].p, x, sizeof x);
	char msg[200];
	cr_assert_eq(run_device_find("interp")->run(d, &(RunOpts){0}, msg, sizeof msg), 0, "%s", msg);
	const float *f = d->fin[0].p, *sum = d->fin[1].p, *cnt = d->fin[2].p, *y = d->map[0].p;
	cr_expect(f[0] == 2.5f && f[1] == 1.5f, "f: %g %g", f[0], f[1]);
	cr_expect(sum[0] == 6 && sum[1] == 8, "s: %g %g", sum[0], sum[1]);
	/* c is the position of the row's first max */
	cr_expect(cnt[0] == 2 && cnt[1] == 0, "c: %g %g", cnt[0], cnt[1]);
	for (int k = 0; k < 8; k++)
		cr_expect(y[k] == (x[k] < 0 ? 2 : 3), "y[%d]: %g", k, y[k]);
	rundata_free(d);
	spec_carrier_free(c);
}

/* i64 sums whose partial sums pass 2^53, on the interp device and in the
 * comparison with the reference: the interpreter sums [2^62, 1, -2^62] to
 * 1 and [2^62 + 1, 2^62 + 3, -2^63 + 5] to 9, as the devices do (it gave
 * 0 and 8, and passed against a float64 reference that gave the same),
 * and an output past 2^53 one away from the exact sum fails, where the
 * doubles nearest the two are equal. */
Test(run, i64_sums_past_2_53_run_and_compare_exactly)
{
	Carrier *c = load_ok("tests/check/i64_sum_past_2_53.yaml");
	RunData *d = rundata_new(c, 3, 3);
	const int64_t k[9] = {(int64_t)1 << 62, 1, -((int64_t)1 << 62),
			      ((int64_t)1 << 62) + 1, ((int64_t)1 << 62) + 3, INT64_MIN + 5,
			      ((int64_t)1 << 62) + 1, ((int64_t)1 << 60) + 1, 0};
	const int64_t want[3] = {1, 9, ((int64_t)1 << 62) + ((int64_t)1 << 60) + 2};
	memcpy(d->elem[0].p, k, sizeof k);
	cr_assert_eq(c->elem[0].storage, TY_I64);
	interp_run(d);
	const int64_t *s = d->fin[0].p;
	for (int r = 0; r < 3; r++)
		cr_expect_eq(s[r], want[r], "row %d: %lld, not %lld", r, (long long)s[r], (long long)want[r]);
	RunCheck rc;
	runcheck_run(d, &rc);
	cr_expect(rc.ok, "the exact sums pass");
	runcheck_free(&rc);
	((int64_t *)d->fin[0].p)[2] += 1; /* the same double, 2^62 + 2^60 */
	runcheck_run(d, &rc);
	cr_assert_not(rc.ok, "one off past 2^53");
	cr_expect_eq(rc.out[0].max_abs, 1);
	cr_expect_eq(rc.out[0].at, 2);
	runcheck_free(&rc);
	rundata_free(d);
	spec_carrier_free(c);
}

/* A scan's reference over the prefix 0..j takes len as the row's length,
 * as the carrier does (its mask j * 2 < len keeps the first half of the
 * row in every prefix); it took the prefix's length and failed each run. */
Test(run, scan_prefixes_keep_the_row_length)
{
	Carrier *c = text_ok("carrier: half\nelement: {x: f32}\nmask: j * 2 < len\nstate: {s: f32}\nidentity: {s: 0}\n"
			     "lift: {s: x + j / len}\nmerge: {s: a.s + b.s}\nreference: {s: sum(x + j / len)}\n"
			     "laws: [commutative]\ntemplate: scan\n");
	const int lens[] = {1, 8, 33};
	for (int l = 0; l < 3; l++) {
		RunData *d = drawn(c, 2, lens[l]);
		char msg[200];
		cr_assert_eq(run_device_find("interp")->run(d, &(RunOpts){0}, msg, sizeof msg), 0, "%s", msg);
		RunCheck rc;
		runcheck_run(d, &rc);
		cr_expect(rc.ok, "len %d: %g of tolerance", lens[l], rc.out[0].worst_ratio);
		runcheck_free(&rc);
		rundata_free(d);
	}
	spec_carrier_free(c);
}

/* A scan's value at position p folds p + 1 positions: its float32 bound
 * counts in the share of that prefix, not of the row (a share of 6/sqrt(n)
 * at len 100000 failed an Adam scan at position 38 that passed at len
 * 1000, off by as little as float32 allows there).  A running mean of ones,
 * exact in the left fold, with position 30 set off by 40 float32 ulps, as
 * another order may round it (within twice the left fold's running bound
 * over those 31 positions), passes at len 40 and at len 100000 alike; off
 * by 400 it fails at both. */
Test(run, scan_bound_counts_the_prefix_not_the_row)
{
	Carrier *c = text_ok("carrier: runmean\nelement: {x: f32}\nstate: {n: f32, s: f32}\nidentity: {n: 0, s: 0}\n"
			     "lift: {n: 1, s: x}\nmerge: {n: a.n + b.n, s: a.s + b.s}\nfinalize: {mean: s / n}\n"
			     "template: scan\n");
	static const int lens[] = {40, 100000}, ulps[] = {40, 400};
	for (int l = 0; l < 2; l++)
		for (int u = 0; u < 2; u++) {
			RunData *d = rundata_new(c, 1, lens[l]);
			float *x = d->elem[0].p;
			for (int j = 0; j < lens[l]; j++)
				x[j] = 1;
			interp_run(d);
			((float *)d->fin[0].p)[30] = 1 + ulps[u] * 0x1p-23f;
			RunCheck rc;
			runcheck_run(d, &rc);
			cr_expect_eq(rc.ok, u == 0, "len %d, %d ulps: %g of tolerance", lens[l], ulps[u],
				     rc.out[0].worst_ratio);
			cr_expect_eq(rc.out[0].at, 30);
			runcheck_free(&rc);
			rundata_free(d);
		}
	spec_carrier_free(c);
}

/* A state that decays by b a position holds the errors of about 1/(1 - b)
 * positions, whatever the prefix: its bound's share counts those
 * (check_value_share), not the prefix's p + 1 (an Adam scan, b2 = 0.999,
 * failed at position 941154 of 1000003, at 1.33 of tolerance, as good as
 * float32 gets there).  An exponential moving average of ones, b = 0.9,
 * bias-corrected (1 exactly over the reals), with position len - 10 set
 * 40 float32 ulps off passes at len 40 and 100000 alike, 400 fails at
 * both; a running mean, which sums its whole prefix, is held as before:
 * 2000 ulps off at len - 10 of 100000 fails. */
Test(run, decaying_scan_bound_counts_its_reach)
{
	Carrier *c = text_ok("carrier: ema\nparams: {b: f32}\nelement: {x: f32}\nstate: {p: f32, v: f32}\n"
			     "identity: {p: 1, v: 0}\nlift: {p: b, v: (1 - b) * x}\n"
			     "merge: {p: a.p * b.p, v: b.p * a.v + b.v}\nfinalize: {y: v / (1 - p)}\ntemplate: scan\n");
	static const int lens[] = {40, 100000}, ulps[] = {40, 400};
	for (int l = 0; l < 2; l++)
		for (int u = 0; u < 2; u++) {
			RunData *d = rundata_new(c, 1, lens[l]);
			float *x = d->elem[0].p;
			for (int j = 0; j < lens[l]; j++)
				x[j] = 1;
			d->params[0] = 0.9f;
			interp_run(d);
			((float *)d->fin[0].p)[lens[l] - 10] = 1 + ulps[u] * 0x1p-23f;
			RunCheck rc;
			runcheck_run(d, &rc);
			cr_expect_eq(rc.ok, u == 0, "len %d, %d ulps: %g of tolerance", lens[l], ulps[u],
				     rc.out[0].worst_ratio);
			cr_expect_eq(rc.out[0].at, lens[l] - 10);
			runcheck_free(&rc);
			rundata_free(d);
		}
	spec_carrier_free(c);
	c = text_ok("carrier: runmean\nelement: {x: f32}\nstate: {n: f32, s: f32}\nidentity: {n: 0, s: 0}\n"
		    "lift: {n: 1, s: x}\nmerge: {n: a.n + b.n, s: a.s + b.s}\nfinalize: {mean: s / n}\n"
		    "template: scan\n");
	RunData *d = rundata_new(c, 1, 100000);
	float *x = d->elem[0].p;
	for (int j = 0; j < 100000; j++)
		x[j] = 1;
	interp_run(d);
	((float *)d->fin[0].p)[100000 - 10] = 1 + 2000 * 0x1p-23f;
	RunCheck rc;
	runcheck_run(d, &rc);
	cr_expect_not(rc.ok, "%g of tolerance", rc.out[0].worst_ratio);
	runcheck_free(&rc);
	rundata_free(d);
	spec_carrier_free(c);
}

/* A reference that reduces literals alone (sum(1.8)) is f32 as the lift
 * is: its naive float32 version rounds as a float32 sum does, and sets the
 * tolerance for the interpreter's sequential sum (it summed in f64 and
 * allowed nothing: 8.49 of tolerance at 100000). */
Test(run, sums_of_literals_have_a_float32_tolerance)
{
	Carrier *c = text_ok("carrier: ones\nelement: {x: f32}\nstate: {s: f32}\nidentity: {s: 0}\nlift: {s: 1.8}\n"
			     "merge: {s: a.s + b.s}\nreference: {s: sum(1.8)}\nlaws: [commutative]\n");
	RunData *d = drawn(c, 1, 100000);
	char msg[200];
	cr_assert_eq(run_device_find("interp")->run(d, &(RunOpts){0}, msg, sizeof msg), 0, "%s", msg);
	RunCheck rc;
	runcheck_run(d, &rc);
	cr_expect(rc.ok, "%g of tolerance", rc.out[0].worst_ratio);
	runcheck_free(&rc);
	rundata_free(d);
	spec_carrier_free(c);
}

Test(run, half_precision_bits)
{
	cr_assert_eq(run_f16_bits(1.0), 0x3c00);
	cr_assert_eq(run_f16_bits(-2.0), 0xc000);
	cr_assert_eq(run_f16_bits(65504.0), 0x7bff);
	cr_assert_eq(run_f16_bits(0x1p-24), 0x0001, "smallest subnormal");
	cr_assert_eq(run_f16_bits(1e9), 0x7c00);
	cr_assert_eq(run_bf16_bits(1.0), 0x3f80);
	for (int h = 0; h < 0x7c00; h += 7)
		cr_assert_eq(run_f16_bits(run_f16_value((uint16_t)h)), h, "f16 %#x round trips", h);
	for (int h = 0; h < 0x7f80; h += 13)
		cr_assert_eq(run_bf16_bits(run_bf16_value((uint16_t)h)), h, "bf16 %#x round trips", h);
}

Test(run, npy_round_trip)
{
	float v[6] = {1, 2, 3, 4, 5.5f, -6};
	Npy a = {.descr = "<f4", .ndim = 2, .shape = {2, 3}, .count = 6, .itemsize = 4, .data = v};
	char msg[300];
	cr_assert_eq(npy_write("build/t.npy", &a, msg, sizeof msg), 0, "%s", msg);
	Npy b;
	cr_assert_eq(npy_read("build/t.npy", &b, msg, sizeof msg), 0, "%s", msg);
	cr_assert_str_eq(b.descr, "<f4");
	cr_assert_eq(b.ndim, 2);
	cr_assert(b.shape[0] == 2 && b.shape[1] == 3);
	for (int i = 0; i < 6; i++)
		cr_assert_eq(npy_get(&b, i), v[i]);
	npy_free(&b);
	FILE *f = fopen("build/t.npy", "rb");
	char head[128];
	cr_assert_eq(fread(head, 1, 128, f), 128);
	fclose(f);
	cr_assert_eq(head[10 + (head[8] | head[9] << 8) - 1], '\n', "header ends in a newline");
	cr_assert_eq((10 + (head[8] | head[9] << 8)) % 64, 0, "data is 64-byte aligned");
}

static void write_raw(const char *path, const char *bytes, size_t n)
{
	FILE *f = fopen(path, "wb");
	fwrite(bytes, 1, n, f);
	fclose(f);
}

/* A version 1 .npy file of header text hdr (its length written before it)
 * and data bytes of zeros after it. */
static void write_npy_text(const char *path, const char *hdr, size_t data)
{
	char buf[512] = "\x93NUMPY\x01\x00";
	size_t hl = strlen(hdr);
	buf[8] = (char)(hl & 0xff), buf[9] = (char)(hl >> 8);
	memcpy(buf + 10, hdr, hl);
	memset(buf + 10 + hl, 0, data);
	write_raw(path, buf, 10 + hl + data);
}

Test(run, npy_malformed)
{
	char msg[300];
	Npy b;
	write_raw("build/bad.npy", "hello", 5);
	cr_assert_eq(npy_read("build/bad.npy", &b, msg, sizeof msg), -1);
	cr_assert(strstr(msg, "not a .npy file"), "%s", msg);
	static const struct {
		const char *hdr;
		size_t data;
		const char *want;
	} cases[] = {
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }   \n", 8, "shorter"},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }   \n", 20, "longer"},
		{"{'descr': '>f8', 'fortran_order': False, 'shape': (4,), }   \n", 32, "unsupported dtype '>f8'"},
		{"{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }    \n", 4, "Fortran"},
		/* a shape without commas between its numbers, a dict without its brace */
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (2 5), }   \n", 40, "malformed shape"},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (1,),     \n", 4, "malformed header"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		write_npy_text("build/case.npy", cases[i].hdr, cases[i].data);
		cr_expect_eq(npy_read("build/case.npy", &b, msg, sizeof msg), -1, "%s", cases[i].hdr);
		cr_expect(strstr(msg, cases[i].want), "%s: %s", cases[i].want, msg);
	}
	write_npy_text("build/case.npy", cases[0].hdr, 16);
	cr_assert_eq(npy_read("build/case.npy", &b, msg, sizeof msg), 0, "the same header with its data reads: %s", msg);
	npy_free(&b);
	cr_assert_eq(npy_read("build/none.npy", &b, msg, sizeof msg), -1);
	cr_assert(strstr(msg, "cannot open"), "%s", msg);
}

Test(run, npy_write_failure_leaves_no_file)
{
	Npy a = {.descr = "<f4", .ndim = 1, .shape = {1}, .count = 1, .itemsize = 4, .data = &(float){1}};
	char msg[300];
	cr_assert_eq(npy_write("build/no/such/dir/x.npy", &a, msg, sizeof msg), -1);
	cr_assert(strstr(msg, "cannot write"), "%s", msg);
	cr_assert_neq(access("build/no/such/dir/x.npy", F_OK), 0);
}

/* q, k, v of attention drawn from N(0, 3^2) as f16: at scale 1 and head
 * dim 64 the scores reach a few hundred, past float32's exp (88). */
static void big_scores(RunData *d)
{
	uint64_t s = 12345;
	Buffer *b[3] = {&d->row[0], &d->col[0], &d->col[1]};
	for (int a = 0; a < 3; a++)
		for (size_t i = 0; i < b[a]->n * b[a]->width; i++) {
			double u[2];
			for (int k = 0; k < 2; k++) {
				s = s * 6364136223846793005ull + 1442695040888963407ull;
				u[k] = ((s >> 11) + 0.5) / 9007199254740992.0;
			}
			((uint16_t *)b[a]->p)[i] = run_f16_bits(3 * sqrt(-2 * log(u[0])) * cos(6.283185307179586 * u[1]));
		}
	d->params[0] = 1;
}

/* Where the reference's naive float32 evaluation overflows (sum(exp(s))
 * over scores of hundreds) and float64's does not, the carrier's float32
 * fold stands in as the naive version: a right result passes (held to the
 * running bound alone, which leaves out the rounding of the scores, it
 * failed at 1.8 of tolerance), and an lse off by 0.01 fails (with an
 * infinite naive error, anything passed). */
Test(run, scores_past_float32_exp_hold_to_the_fold)
{
	Carrier *c = load_ok("tests/attention/full.yaml");
	RunData *d = rundata_new(c, 8, 300);
	big_scores(d);
	interp_run(d);
	RunCheck rc;
	runcheck_run(d, &rc);
	for (int o = 0; o < rc.nout; o++)
		cr_expect(rc.out[o].worst_ratio <= 1 && !rc.out[o].nan_mismatch, "%s: %g of tolerance", rc.out[o].name,
			  rc.out[o].worst_ratio);
	runcheck_free(&rc);
	cr_assert_str_eq(c->finalize[1].name, "lse");
	((float *)d->fin[1].p)[3] += 0.01f;
	runcheck_run(d, &rc);
	cr_expect_gt(rc.out[1].worst_ratio, 1, "an lse 0.01 off: %g of tolerance", rc.out[1].worst_ratio);
	runcheck_free(&rc);
	rundata_free(d);
	spec_carrier_free(c);
}

/* The naive attention with P rounded (what a device that rounds P is held
 * to) is built from the spec's own finalize: a finalize of o / l * 1.2
 * must still fail against the reference, not set its own tolerance. */
Test(run, a_wrong_finalize_does_not_widen_its_own_tolerance)
{
	Carrier *c = load_ok("tests/attention/wrong_finalize.yaml");
	RunData *d = drawn(c, 8, 64);
	d->params[0] = 0.125;
	interp_run(d);
	runcheck_round_p(d, TY_F16, 0, 1, 2);
	RunCheck rc;
	runcheck_run(d, &rc);
	cr_assert_str_eq(rc.out[0].name, "out");
	cr_expect_gt(rc.out[0].worst_ratio, 1, "out 20%% off: %g of tolerance", rc.out[0].worst_ratio);
	cr_expect_not(rc.ok);
	runcheck_free(&rc);
	rundata_free(d);
	spec_carrier_free(c);
}

/* weighted_variance as explore derives it, the variance kept as itself,
 * with its merge's var and its finalize's given. */
static Carrier *variance_carrier(const char *var_merge, const char *var_final)
{
	static char text[2048];
	snprintf(text, sizeof text,
		 "carrier: weighted_variance\nelement: {x: f32, w: f32}\nassume: w > 0\n"
		 "state: {sw: f32, mean: f32, var: f32}\nidentity: {sw: 0, mean: 0, var: 0}\n"
		 "lift: {sw: w, mean: x, var: 0}\nmerge:\n  let:\n    n: a.sw + b.sw\n"
		 "    mu: a.mean + (b.mean - a.mean) * b.sw / n\n  sw: n\n"
		 "  mean: where(n == 0, 0, mu)\n  var: where(n == 0, 0, %s)\n"
		 "finalize: {mean: mean, var: %s}\n"
		 "reference:\n  mean: sum(w * x) / sum(w)\n  var: sum(w * (x - mean)^2) / sum(w)\nlaws: [commutative]\n",
		 var_merge, var_final);
	return text_ok(text);
}

static const char variance_merge[] = "(a.sw * a.var + b.sw * (b.mean - a.mean) * (b.mean - mu)) / n + b.var * b.sw / n";

/* var's worst ratio to its tolerance on rows x len drawn with seed, run
 * in the interpreter. */
static double variance_ratio(Carrier *c, int rows, int len, uint64_t seed)
{
	RunData *d = rundata_new(c, rows, len);
	char msg[200];
	cr_assert_eq(rundata_draw(d, seed, NULL, 0, msg, sizeof msg), 0, "%s", msg);
	interp_run(d);
	RunCheck rc;
	runcheck_run(d, &rc);
	cr_assert_str_eq(rc.out[1].name, "var");
	cr_expect_leq(rc.out[0].worst_ratio, 1, "mean, seed %d len %d: %g of tolerance", (int)seed, len,
		      rc.out[0].worst_ratio);
	double r = rc.out[1].nan_mismatch ? INFINITY : rc.out[1].worst_ratio;
	runcheck_free(&rc);
	rundata_free(d);
	return r;
}

/* On a row of one position the carrier's variance is x times mean's
 * rounding, u x^2, where the two-pass reference (x - mean)^2 gives that
 * rounding squared: held to the reference's bound alone it failed at
 * 1.05e6 times the tolerance (seeds 6, 7, 14 and 21 of 30); where the
 * reference is 0 it is held to its own float32 fold's bound as well. */
Test(run, a_variance_kept_as_itself_holds_to_its_own_rounding)
{
	Carrier *c = variance_carrier(variance_merge, "var");
	for (uint64_t seed = 1; seed <= 40; seed++)
		cr_expect_leq(variance_ratio(c, 3, 1, seed), 1, "seed %d, one position", (int)seed);
	for (uint64_t seed = 1; seed <= 3; seed++)
		cr_expect_leq(variance_ratio(c, 3, 1000, seed), 1, "seed %d, 1000 positions", (int)seed);
	spec_carrier_free(c);
}

/* A wrong carrier gets no tolerance from its own rounding: its float64
 * fold disagrees with the reference.  delta^2 for delta (x - new mean) is
 * wrong on one position (var x^2, where it is 0) and on 1000; a merge
 * that drops a's variance and a finalize off by 1e-4 of itself are wrong
 * where var is not 0, on rows of 1000 (on one position var is 0 and no
 * rule sees them). */
Test(run, a_wrong_variance_is_not_held_to_its_own_rounding)
{
	Carrier *sq = variance_carrier("(a.sw * a.var + b.sw * (b.mean - a.mean) * (b.mean - a.mean)) / n + b.var * b.sw / n",
				       "var");
	Carrier *drop = variance_carrier("b.sw * (b.mean - a.mean) * (b.mean - mu) / n + b.var * b.sw / n", "var");
	Carrier *off = variance_carrier(variance_merge, "var * 1.0001");
	for (uint64_t seed = 1; seed <= 4; seed++) {
		cr_expect_gt(variance_ratio(sq, 3, 1, seed), 1, "delta^2, seed %d, one position", (int)seed);
		cr_expect_gt(variance_ratio(sq, 3, 1000, seed), 1, "delta^2, seed %d, 1000 positions", (int)seed);
		cr_expect_gt(variance_ratio(drop, 3, 1000, seed), 1, "a.var dropped, seed %d", (int)seed);
		cr_expect_gt(variance_ratio(off, 3, 1000, seed), 1, "var * 1.0001, seed %d", (int)seed);
	}
	spec_carrier_free(sq);
	spec_carrier_free(drop);
	spec_carrier_free(off);
}

/* A NaN where the reference has a number is what fails first: the index
 * reported is the first such, not that of a larger finite error. */
Test(run, a_nan_mismatch_is_the_index_reported)
{
	Carrier *c = load_ok("specs/online_softmax.yaml");
	RunData *d = drawn(c, 4, 50);
	interp_run(d);
	float *lse = d->fin[0].p;
	lse[0] += 1;
	lse[2] = NAN;
	lse[3] += 2;
	RunCheck rc;
	runcheck_run(d, &rc);
	cr_assert_str_eq(rc.out[0].name, "lse");
	cr_expect_eq(rc.out[0].nan_mismatch, 1);
	cr_expect_eq(rc.out[0].at, 2, "at %zu", rc.out[0].at);
	cr_expect_gt(rc.out[0].worst_ratio, 1);
	runcheck_free(&rc);
	rundata_free(d);
	spec_carrier_free(c);
}

/* Skips the calling test where the emulator has no host C++ compiler. */
static void skip_without_emu(void)
{
	char why[300];
	if (!emu_available(why, sizeof why))
		cr_skip_test("no host C++ compiler for the emulator: %s", why);
}

/* d run on the named device, which must succeed. */
static void device_run(const char *dev, RunData *d)
{
	char msg[300];
	const Device *v = run_device_find(dev);
	cr_assert(v, "no device %s", dev);
	cr_assert_eq(v->run(d, &(RunOpts){.threads = 2}, msg, sizeof msg), 0, "%s: %s", dev, msg);
}

/* spec run on dev over rows of len given as values (the first element
 * input), which must succeed; the caller frees the result and c. */
static RunData *rows_on(const char *dev, Carrier *c, const float *x, int rows, int len)
{
	RunData *d = rundata_new(c, rows, len);
	for (int i = 0; i < rows * len; i++)
		run_buffer_set(&d->elem[0], i, x[i]);
	device_run(dev, d);
	return d;
}

/* Every output of d within tolerance of the reference, NaN and infinities
 * matched. */
static void expect_reference(RunData *d, const char *what)
{
	RunCheck rc;
	runcheck_run(d, &rc);
	for (int o = 0; o < rc.nout; o++)
		cr_expect(rc.out[o].worst_ratio <= 1 && !rc.out[o].nan_mismatch, "%s %s: %g of tolerance, %d NaN mismatches",
			  what, rc.out[o].name, rc.out[o].worst_ratio, rc.out[o].nan_mismatch);
	cr_expect(rc.ok, "%s: the reference disagrees", what);
	runcheck_free(&rc);
}

/* Cross-entropy by hand: loss = lse - x[label]; a negative label (the
 * ignored class) gives 0, a label past the row +inf. A row holding +inf,
 * or of -inf alone, gives NaN, as PyTorch's log_softmax is NaN there
 * (never -inf, which would poison a mean loss); a -inf at the label gives
 * +inf. Logits near 1e8 keep their loss (PyTorch's float32 3.4965077):
 * m - xl cancels exactly before log(l) is added. */
static void cross_entropy_rows(const char *dev)
{
	enum { R = 10, N = 3 };
	const float inf = INFINITY;
	const float x[R][N] = {{1, 2, 3},    {0, 0, 0},	      {5, -1, 2},      {1, 2, 3},	 {1, inf, 2},
			       {1, inf, 2}, {-inf, -inf, -inf}, {0, -inf, -inf}, {1e8f, 1e8f + 8, 1e8f}, {1, 2, 3}};
	static const int label[R] = {2, 0, -100, 3, 0, 1, 0, 1, 0, 5};
	const double lse0 = 3 + log(1 + exp(-1) + exp(-2));
	const double want[R] = {lse0 - 3, log(3), 0, INFINITY, NAN, NAN, NAN, INFINITY, 8 + log(1 + 2 * exp(-8)),
				INFINITY};
	Carrier *c = load_ok("specs/cross_entropy.yaml");
	RunData *d = rundata_new(c, R, N);
	for (int r = 0; r < R; r++) {
		run_buffer_set(&d->row[0], r, label[r]);
		for (int k = 0; k < N; k++)
			run_buffer_set(&d->elem[0], r * N + k, x[r][k]);
	}
	device_run(dev, d);
	cr_assert_str_eq(c->finalize[0].name, "loss");
	for (int r = 0; r < R; r++) {
		double loss = run_buffer_get(&d->fin[0], r);
		if (isnan(want[r]))
			cr_expect(isnan(loss), "%s row %d: loss %g, not NaN", dev, r, loss);
		else if (isinf(want[r]))
			cr_expect(isinf(loss) && loss > 0, "%s row %d: loss %g, not +inf", dev, r, loss);
		else
			cr_expect(fabs(loss - want[r]) < 1e-6, "%s row %d: loss %.9g, not %.9g", dev, r, loss, want[r]);
	}
	cr_expect(fabs(run_buffer_get(&d->fin[1], 0) - lse0) < 1e-6, "%s: lse %.9g", dev, run_buffer_get(&d->fin[1], 0));
	cr_expect_eq(run_buffer_get(&d->fin[1], 4), INFINITY, "%s: lse of a row holding +inf", dev);
	cr_expect_eq(run_buffer_get(&d->fin[1], 6), -INFINITY, "%s: lse of a row of -inf", dev);
	expect_reference(d, dev);
	rundata_free(d);
	spec_carrier_free(c);
}

Test(run, cross_entropy_loss_by_hand_on_interp) { cross_entropy_rows("interp"); }
Test(run, cross_entropy_loss_by_hand_on_cpu) { cross_entropy_rows("cpu"); }
Test(run, cross_entropy_loss_by_hand_on_emu, .timeout = 120)
{
	skip_without_emu();
	cross_entropy_rows("emu");
}

/* Attention with a sink on rows with no keys: out is 0 and lse the sink
 * (the sink alone in the denominator), finite and as the reference has
 * them, on interp and cpu. */
Test(run, attention_sink_on_an_empty_row)
{
	static const double sink[2] = {0.5, -2};
	static const char *const devs[] = {"interp", "cpu"};
	Carrier *c = load_ok("specs/attention_sink.yaml");
	cr_assert_str_eq(c->row[1].name, "sink");
	for (int v = 0; v < 2; v++) {
		RunData *d = rundata_new(c, 2, 0);
		char msg[200];
		cr_assert_eq(rundata_draw(d, 3, NULL, 0, msg, sizeof msg), 0, "%s", msg);
		for (int r = 0; r < 2; r++)
			run_buffer_set(&d->row[1], r, sink[r]);
		device_run(devs[v], d);
		cr_assert_str_eq(c->finalize[0].name, "out");
		for (size_t t = 0; t < d->fin[0].n * (size_t)d->fin[0].width; t++)
			cr_expect_eq(run_buffer_get(&d->fin[0], t), 0, "%s: out[%zu] = %g", devs[v], t,
				     run_buffer_get(&d->fin[0], t));
		for (int r = 0; r < 2; r++)
			cr_expect_eq(run_buffer_get(&d->fin[1], r), sink[r], "%s row %d: lse %g", devs[v], r,
				     run_buffer_get(&d->fin[1], r));
		RunCheck rc;
		runcheck_run(d, &rc);
		for (int o = 0; o < rc.nout; o++)
			cr_expect(rc.out[o].worst_ratio <= 1 && !rc.out[o].nan_mismatch, "%s %s: %g of tolerance", devs[v],
				  rc.out[o].name, rc.out[o].worst_ratio);
		runcheck_free(&rc);
		rundata_free(d);
	}
	spec_carrier_free(c);
}

/* logsumexp of rows of 3 holding infinities and NaN (rows given as
 * values; want[r] is PyTorch's) on dev, and against the reference. */
static void lse_rows_on(const char *dev, const char *path, const float (*x)[3], const double *want, int rows)
{
	Carrier *c = load_ok(path);
	RunData *d = rundata_new(c, rows, 3);
	for (int r = 0; r < rows; r++)
		for (int k = 0; k < 3; k++)
			run_buffer_set(&d->elem[0], r * 3 + k, x[r][k]);
	device_run(dev, d);
	for (int r = 0; r < rows; r++) {
		double got = run_buffer_get(&d->fin[0], r);
		int same = isnan(want[r]) ? isnan(got) : isinf(want[r]) ? got == want[r] : fabs(got - want[r]) < 1e-6;
		cr_expect(same, "%s %s row %d: lse %g, not %g", path, dev, r, got, want[r]);
	}
	RunCheck rc;
	runcheck_run(d, &rc);
	cr_expect(!rc.out[0].nan_mismatch, "%s %s: %d NaN or infinity mismatches with the reference", path, dev,
		  rc.out[0].nan_mismatch);
	runcheck_free(&rc);
	rundata_free(d);
	spec_carrier_free(c);
}

/* Rows of -inf, NaN and +inf as PyTorch's logsumexp gives them: a row of
 * -inf gives -inf, NaN propagates with or without an infinity beside it,
 * a row holding +inf gives +inf (the guarded rescale, 1 where a side's m
 * is +inf, not exp(inf - inf) = NaN). */
static const float inf_rows[][3] = {{-INFINITY, -INFINITY, -INFINITY}, {1, NAN, 2}, {NAN, 1, -INFINITY},
				    {-INFINITY, 1, 2}, {1, INFINITY, 2}, {INFINITY, INFINITY, 1},
				    {INFINITY, -INFINITY, 0}, {INFINITY, NAN, 1}, {NAN, -INFINITY, INFINITY}};
static const double inf_rows_lse[] = {-INFINITY, NAN, NAN, 2.313261687518223, INFINITY, INFINITY, INFINITY, NAN, NAN};

static void lse_inf_rows(const char *dev)
{
	lse_rows_on(dev, "specs/logsumexp.yaml", inf_rows, inf_rows_lse, 9);
	lse_rows_on(dev, "specs/online_softmax.yaml", inf_rows, inf_rows_lse, 9);
	/* the other guard, 1 where a side's m is the maximum */
	lse_rows_on(dev, "tests/check/logsumexp_inf.yaml", inf_rows, inf_rows_lse, 9);
}

Test(run, logsumexp_of_rows_with_infinities_and_nan_on_interp) { lse_inf_rows("interp"); }
Test(run, logsumexp_of_rows_with_infinities_and_nan_on_cpu) { lse_inf_rows("cpu"); }
Test(run, logsumexp_of_rows_with_infinities_and_nan_on_emu, .timeout = 120)
{
	skip_without_emu();
	lse_inf_rows("emu");
}

/* specs/attention.yaml over a key holding -inf (k[0][0], q[r][0] = 1):
 * row 0 keeps that key alone, every score it keeps -inf, and gives out 0
 * and lse -inf as PyTorch's SDPA does, on dev and in the reference (whose
 * exp(s - max) was NaN there); row 1 keeps a finite score beside it. */
static void attention_minus_inf_rows(const char *dev)
{
	Carrier *c = load_ok("specs/attention.yaml");
	RunData *d = rundata_new(c, 2, 3);
	char msg[200];
	cr_assert_eq(rundata_draw(d, 7, NULL, 0, msg, sizeof msg), 0, "%s", msg);
	cr_assert_str_eq(c->col[0].name, "k");
	int D = d->row[0].width;
	run_buffer_set(&d->col[0], 0, -INFINITY);
	for (int r = 0; r < 2; r++)
		run_buffer_set(&d->row[0], (size_t)r * D, 1);
	d->params[0] = 0.125;
	device_run(dev, d);
	cr_assert_str_eq(c->finalize[0].name, "out");
	for (int t = 0; t < d->fin[0].width; t++)
		cr_expect_eq(run_buffer_get(&d->fin[0], t), 0, "%s: out[0][%d] = %g", dev, t, run_buffer_get(&d->fin[0], t));
	cr_expect(isinf(run_buffer_get(&d->fin[1], 0)) && run_buffer_get(&d->fin[1], 0) < 0, "%s: lse[0] = %g", dev,
		  run_buffer_get(&d->fin[1], 0));
	cr_expect(isfinite(run_buffer_get(&d->fin[1], 1)), "%s: lse[1] = %g", dev, run_buffer_get(&d->fin[1], 1));
	RunCheck rc;
	runcheck_run(d, &rc);
	for (int o = 0; o < rc.nout; o++)
		cr_expect(rc.out[o].worst_ratio <= 1 && !rc.out[o].nan_mismatch, "%s %s: %g of tolerance, %d NaN mismatches",
			  dev, rc.out[o].name, rc.out[o].worst_ratio, rc.out[o].nan_mismatch);
	cr_expect(rc.ok, "%s: the reference disagrees", dev);
	runcheck_free(&rc);
	rundata_free(d);
	spec_carrier_free(c);
}

Test(run, attention_row_of_minus_inf_scores_on_interp) { attention_minus_inf_rows("interp"); }
Test(run, attention_row_of_minus_inf_scores_on_cpu) { attention_minus_inf_rows("cpu"); }
Test(run, attention_row_of_minus_inf_scores_on_emu, .timeout = 120)
{
	skip_without_emu();
	attention_minus_inf_rows("emu");
}

/* online_softmax's y where PyTorch's softmax gives it: a row holding +inf
 * ([1, inf], [inf, 1]) gives NaN at every position (its lse is +inf), a
 * row of -inf NaN, a finite row its weights, values past exp's float64
 * range theirs; on every device, and every output compared with the
 * reference (which no longer overflows at 1000). */
static void softmax_inf_rows(const char *dev)
{
	enum { R = 6 };
	static const float x[R][2] = {{1, INFINITY}, {INFINITY, 1}, {-INFINITY, -INFINITY}, {INFINITY, INFINITY}, {0, 0},
				      {1000, 1001}};
	double want[R][2] = {{NAN, NAN}, {NAN, NAN}, {NAN, NAN}, {NAN, NAN}, {0.5, 0.5}, {0, 0}};
	Carrier *c = load_ok("specs/online_softmax.yaml");
	RunData *d = rows_on(dev, c, &x[0][0], R, 2);
	want[5][0] = 1 / (1 + M_E), want[5][1] = M_E / (1 + M_E);
	for (int r = 0; r < R; r++)
		for (int k = 0; k < 2; k++) {
			double y = run_buffer_get(&d->map[0], r * 2 + k);
			cr_expect(isnan(want[r][k]) ? isnan(y) : fabs(y - want[r][k]) < 1e-6, "%s row %d: y[%d] = %g, not %g",
				  dev, r, k, y, want[r][k]);
		}
	cr_expect_eq(run_buffer_get(&d->fin[0], 0), INFINITY, "%s: lse of [1, inf]", dev);
	RunCheck rc;
	runcheck_run(d, &rc);
	cr_expect(rc.ok, "%s: the reference disagrees", dev);
	for (int o = 0; o < rc.nout; o++)
		cr_expect(!rc.out[o].nan_mismatch && !rc.out[o].out_of_range, "%s %s: %d NaN mismatches, %zu not compared",
			  dev, rc.out[o].name, rc.out[o].nan_mismatch, rc.out[o].out_of_range);
	runcheck_free(&rc);
	rundata_free(d);
	spec_carrier_free(c);
}

Test(run, softmax_of_rows_with_infinities_on_interp) { softmax_inf_rows("interp"); }
Test(run, softmax_of_rows_with_infinities_on_cpu) { softmax_inf_rows("cpu"); }
Test(run, softmax_of_rows_with_infinities_on_emu, .timeout = 120)
{
	skip_without_emu();
	softmax_inf_rows("emu");
}

/* run's drawn labels are positions of their rows, as check's are: a
 * cross-entropy run compares most rows' loss at a real label. */
Test(run, drawn_labels_are_mostly_in_their_rows)
{
	Carrier *c = load_ok("specs/cross_entropy.yaml");
	RunData *d = drawn(c, 200, 50);
	const int32_t *label = d->row[0].p;
	int in = 0, out = 0;
	for (int r = 0; r < 200; r++)
		in += label[r] >= 0 && label[r] < 50, out += label[r] < 0 || label[r] >= 50;
	cr_expect_gt(in, 160, "%d of 200 labels in [0, 50)", in);
	cr_expect_gt(out, 0, "some out of range, which the spec ignores or meets as inf");
	rundata_free(d);
	spec_carrier_free(c);
}

/* Welford over rows holding infinities gives what NumPy gives on dev at
 * every length (the fold's tree differs with both): the mean is the row's
 * sum over its count (-inf, +inf, or NaN for both signs), the variance
 * NaN; a finite row keeps its variance. */
static void welford_inf_rows(const char *dev)
{
	enum { ROWS = 7 };
	static const int lens[] = {1, 2, 31, 32, 33, 1000};
	Carrier *c = load_ok("specs/welford.yaml");
	for (int li = 0; li < 6; li++) {
		int n = lens[li];
		float *x = malloc((size_t)ROWS * n * sizeof *x);
		for (int k = 0; k < n; k++) {
			float f = (float)(k % 5) - 1.5f;
			x[0 * n + k] = -INFINITY;
			x[1 * n + k] = INFINITY;
			x[2 * n + k] = k == n / 2 ? -INFINITY : f;
			x[3 * n + k] = k == n - 1 ? INFINITY : f;
			x[4 * n + k] = k == 0 ? INFINITY : k == n - 1 ? -INFINITY : f;
			x[5 * n + k] = k == n / 3 ? NAN : f;
			x[6 * n + k] = f;
		}
		double want_mean[ROWS], want_var[ROWS];
		for (int r = 0; r < ROWS; r++) {
			double s = 0, v = 0;
			for (int k = 0; k < n; k++)
				s += x[r * n + k];
			want_mean[r] = s / n;
			for (int k = 0; k < n; k++)
				v += (x[r * n + k] - want_mean[r]) * (x[r * n + k] - want_mean[r]);
			want_var[r] = isfinite(want_mean[r]) ? v / n : NAN;
		}
		RunData *d = rundata_new(c, ROWS, n);
		for (int i = 0; i < ROWS * n; i++)
			run_buffer_set(&d->elem[0], i, x[i]);
		device_run(dev, d);
		for (int r = 0; r < ROWS; r++) {
			double m = run_buffer_get(&d->fin[0], r), var = run_buffer_get(&d->fin[1], r);
			int mean_ok = isnan(want_mean[r])   ? isnan(m)
				      : isinf(want_mean[r]) ? m == want_mean[r]
							    : fabs(m - want_mean[r]) < 1e-5;
			int var_ok = isnan(want_var[r]) ? isnan(var) : fabs(var - want_var[r]) < 1e-4;
			cr_expect(mean_ok, "%s len %d row %d: mean %g, not %g", dev, n, r, m, want_mean[r]);
			cr_expect(var_ok, "%s len %d row %d: var %g, not %g", dev, n, r, var, want_var[r]);
		}
		RunCheck rc;
		runcheck_run(d, &rc);
		for (int o = 0; o < rc.nout; o++)
			cr_expect(rc.out[o].worst_ratio <= 1 && !rc.out[o].nan_mismatch,
				  "%s len %d %s: %g of tolerance, %d NaN mismatches", dev, n, rc.out[o].name,
				  rc.out[o].worst_ratio, rc.out[o].nan_mismatch);
		runcheck_free(&rc);
		rundata_free(d);
		free(x);
	}
	spec_carrier_free(c);
}

Test(run, welford_rows_with_infinities_on_interp) { welford_inf_rows("interp"); }
Test(run, welford_rows_with_infinities_on_cpu) { welford_inf_rows("cpu"); }
Test(run, welford_rows_with_infinities_on_emu, .timeout = 120)
{
	skip_without_emu();
	welford_inf_rows("emu");
}

/* Values past sqrt(FLT_MAX), 1.8e19: the counts' factor comes first in
 * m2, so that [2e19] has variance 0 (delta^2 overflowed, and times the
 * empty side's count 0 was NaN) and [1e19, -1e19] 1e38 (was +inf), as
 * torch.var_mean gives; layer_norm's rstd and y there too. */
static void welford_huge_rows(const char *dev)
{
	const float one[3] = {2e19f, -3e19f, 1}, two[3][2] = {{1e19f, -1e19f}, {2e19f, 2e19f}, {-1e19f, 1.5e19f}};
	const double var2[3] = {1e38, 0, 1.5625e38};
	Carrier *c = load_ok("specs/welford.yaml");
	RunData *d = rows_on(dev, c, one, 3, 1);
	for (int r = 0; r < 3; r++)
		cr_expect_eq(run_buffer_get(&d->fin[1], r), 0, "%s row %d of one: var %g, not 0", dev, r,
			     run_buffer_get(&d->fin[1], r));
	expect_reference(d, dev);
	rundata_free(d);
	d = rows_on(dev, c, &two[0][0], 3, 2);
	for (int r = 0; r < 3; r++) {
		double v = run_buffer_get(&d->fin[1], r);
		cr_expect(v == var2[r] || fabs(v - var2[r]) <= 1e-6 * var2[r], "%s row %d of two: var %g, not %g", dev, r, v,
			  var2[r]);
	}
	expect_reference(d, dev);
	rundata_free(d);
	spec_carrier_free(c);
}

/* layer_norm with bf16 rows holding infinities gives the same on every
 * device and in any order: mean sum(x) / len, rstd and y NaN, as
 * F.layer_norm's y is; a row of one huge value has y = beta. */
static void layer_norm_inf_rows(const char *dev)
{
	enum { R = 4, N = 2 };
	const float inf = INFINITY;
	const float x[R][N] = {{1, inf}, {inf, 1}, {1, -inf}, {3e19f, 3e19f}};
	const double want_mean[R] = {inf, inf, -inf, 3e19};
	Carrier *c = load_ok("specs/layer_norm.yaml");
	RunData *d = rundata_new(c, R, N);
	for (int i = 0; i < R * N; i++)
		run_buffer_set(&d->elem[0], i, x[i / N][i % N]);
	d->params[0] = 1e-5;
	for (int k = 0; k < N; k++)
		run_buffer_set(&d->col[0], k, 2), run_buffer_set(&d->col[1], k, 0.5);
	device_run(dev, d);
	for (int r = 0; r < R; r++) {
		double m = run_buffer_get(&d->fin[0], r), rstd = run_buffer_get(&d->fin[1], r);
		cr_expect(m == want_mean[r] || fabs(m - want_mean[r]) <= 1e-2 * fabs(want_mean[r]), "%s row %d: mean %g, not %g",
			  dev, r, m, want_mean[r]);
		cr_expect(r == 3 ? rstd == rstd : isnan(rstd), "%s row %d: rstd %g", dev, r, rstd);
		for (int k = 0; k < N; k++) {
			double y = run_buffer_get(&d->map[0], r * N + k);
			cr_expect(r == 3 ? y == 0.5 : isnan(y), "%s row %d: y[%d] = %g", dev, r, k, y);
		}
	}
	expect_reference(d, dev);
	rundata_free(d);
	spec_carrier_free(c);
}

/* Longer rows at the edge of float32: m2 is len x var, and no merge of
 * a fold's parts overflows before the row's m2 does (a part's m2 is at
 * most the row's, and the three terms added are never negative).  Rows
 * of 64 and 257 values whose m2 lies just under FLT_MAX keep a finite
 * variance in every grouping of every device; where m2 itself passes
 * FLT_MAX (the variance finite, len times it not) the state holds +inf,
 * and so does the variance. */
static void welford_m2_at_flt_max(const char *dev)
{
	enum { R = 3, N = 257 };
	/* alternating +-h: mean 0 or h / N, m2 about N h^2 */
	const float h[R] = {1.1e18f, 2.3e18f, 1.2e18f};
	const int len[R] = {257, 64, 257};
	const double m2[R] = {257 * 1.1e18 * 1.1e18, 64 * 2.3e18 * 2.3e18, 0};
	float *x = calloc((size_t)R * N, sizeof *x);
	cr_assert(x);
	Carrier *c = load_ok("specs/welford.yaml");
	for (int r = 0; r < R; r++) {
		RunData *d;
		for (int j = 0; j < len[r]; j++)
			x[j] = j % 2 ? -h[r] : h[r];
		d = rows_on(dev, c, x, 1, len[r]);
		double var = run_buffer_get(&d->fin[1], 0);
		if (m2[r]) {
			cr_expect(isfinite(var) && fabs(var * len[r] - m2[r]) <= 1e-3 * m2[r], "%s row %d: var %g, m2 %g",
				  dev, r, var, m2[r]);
			expect_reference(d, dev);
		} else {
			cr_expect(isinf(var) && var > 0, "%s row %d: var %g, m2 past FLT_MAX", dev, r, var);
		}
		rundata_free(d);
	}
	spec_carrier_free(c);
	free(x);
}

static void huge_and_inf_rows(const char *dev)
{
	welford_huge_rows(dev);
	welford_m2_at_flt_max(dev);
	layer_norm_inf_rows(dev);
}

Test(run, welford_and_layer_norm_past_sqrt_flt_max_on_interp) { huge_and_inf_rows("interp"); }
Test(run, welford_and_layer_norm_past_sqrt_flt_max_on_cpu) { huge_and_inf_rows("cpu"); }
Test(run, welford_and_layer_norm_past_sqrt_flt_max_on_emu, .timeout = 120)
{
	skip_without_emu();
	huge_and_inf_rows("emu");
}

/* moe_topk_routing's rows with NaN and +inf, as its comment says: a NaN
 * never enters the list, so a row of fewer than 8 numbers leaves empty
 * slots (-1, weight 0); a row with no number gives -1 everywhere and NaN
 * weights; a row holding +inf NaN weights, as softmax gives. */
static void moe_special_rows(const char *dev)
{
	enum { R = 3, N = 10, K = 8 };
	const float n = NAN, inf = INFINITY;
	const float x[R][N] = {{1, n, 2, 0.5f, n, n, n, n, n, n}, {n, n, n, n, n, n, n, n, n, n}, {1, inf, 2, 0, 0, 0, 0, 0, 0, 0}};
	static const int want_idx[R][K] = {{2, 0, 3, -1, -1, -1, -1, -1}, {-1, -1, -1, -1, -1, -1, -1, -1}, {1, 2, 0, 3, 4, 5, 6, 7}};
	Carrier *c = load_ok("specs/moe_topk_routing.yaml");
	RunData *d = rows_on(dev, c, &x[0][0], R, N);
	cr_assert_str_eq(c->finalize[1].name, "weights");
	const double e1 = exp(-1), e15 = exp(-1.5), sum = 1 + e1 + e15;
	const double w0[3] = {1 / sum, e1 / sum, e15 / sum};
	for (int r = 0; r < R; r++)
		for (int k = 0; k < K; k++) {
			double idx = run_buffer_get(&d->fin[0], r * K + k), w = run_buffer_get(&d->fin[1], r * K + k);
			cr_expect_eq(idx, want_idx[r][k], "%s row %d slot %d: index %g, not %d", dev, r, k, idx, want_idx[r][k]);
			if (r == 0)
				cr_expect(fabs(w - (k < 3 ? w0[k] : 0)) < 1e-6, "%s row 0 slot %d: weight %g", dev, k, w);
			else
				cr_expect(isnan(w), "%s row %d slot %d: weight %g, not NaN", dev, r, k, w);
		}
	expect_reference(d, dev);
	rundata_free(d);
	spec_carrier_free(c);
}

Test(run, moe_routing_rows_with_nan_and_inf_on_interp) { moe_special_rows("interp"); }
Test(run, moe_routing_rows_with_nan_and_inf_on_cpu) { moe_special_rows("cpu"); }
Test(run, moe_routing_rows_with_nan_and_inf_on_emu, .timeout = 120)
{
	skip_without_emu();
	moe_special_rows("emu");
}

/* The bundled attention specs with their causal mask moved back by 5, so
 * that rows 0 to 4 see no key: out is 0 there and lse -inf (the sink's
 * lse the sink), as PyTorch's scaled_dot_product_attention and
 * FlashAttention give (0 / 0 before).
 * Row 9's scores are all +inf (q[0] = inf, every k[0] = 1): lse is +inf,
 * as torch.logsumexp gives, and out NaN, as PyTorch's weights are.  Row
 * 15's are +inf but at key 2, NaN (q[1] = inf too, and k[1] is -1 there
 * and 1 elsewhere): the merge's max skips the NaN, and lse (max_logit too)
 * is +inf, as the references say.  Every other row against the
 * reference, on dev. */
static void attention_special_rows(const char *dev, const char *path, const char *arch)
{
	enum { R = 70, N = 40, INF_ROW = 9, NAN_ROW = 12, MIXED_ROW = 15, SINK_EMPTY = 2, SINK_ROW = 20 };
	FILE *f = fopen(path, "rb");
	cr_assert(f, "cannot open %s", path);
	static char text[8192];
	size_t n = fread(text, 1, sizeof text - 1, f);
	fclose(f);
	text[n] = 0;
	char *mask = strstr(text, "mask: j <= i\n");
	cr_assert(mask, "%s: no causal mask", path);
	static char moved[8300];
	snprintf(moved, sizeof moved, "%.*smask: j <= i - 5\n%s", (int)(mask - text), text, mask + strlen("mask: j <= i\n"));
	Carrier *c = text_ok(moved);
	RunData *d = rundata_new(c, R, N);
	char msg[1024];
	cr_assert_eq(rundata_draw(d, 3, NULL, 0, msg, sizeof msg), 0, "%s", msg);
	int dim = d->row[0].width, dv = d->col[1].width;
	run_buffer_set(&d->row[0], (size_t)INF_ROW * dim, INFINITY);
	run_buffer_set(&d->row[0], (size_t)NAN_ROW * dim, NAN); /* every score NaN: NaN out, as PyTorch */
	run_buffer_set(&d->row[0], (size_t)MIXED_ROW * dim, INFINITY);
	run_buffer_set(&d->row[0], (size_t)MIXED_ROW * dim + 1, INFINITY);
	for (int j = 0; j < N; j++) {
		run_buffer_set(&d->col[0], (size_t)j * dim, 1);
		run_buffer_set(&d->col[0], (size_t)j * dim + 1, j == 2 ? -1 : 1);
	}
	int sink = c->nrow > 1; /* attention_sink: a sink of +inf in a row with keys and in one without */
	if (sink) {
		run_buffer_set(&d->row[1], SINK_EMPTY, INFINITY);
		run_buffer_set(&d->row[1], SINK_ROW, INFINITY);
	}
	if (arch) {
		EmuStats st;
		cr_assert_eq(emu_run_data(d, &(RunOpts){.arch = arch}, &st, msg, sizeof msg), 0, "%s %s: %s", path, arch, msg);
		cr_expect(strstr(st.config, ",wg="), "%s: ran %s, not the Hopper template", path, st.config);
	} else
		device_run(dev, d);
	cr_assert_str_eq(c->finalize[0].name, "out");
	cr_assert_str_eq(c->finalize[1].name, "lse");
	for (int r = 0; r < 5; r++) {
		if (sink && r == SINK_EMPTY)
			continue;
		for (int u = 0; u < dv; u++)
			cr_expect_eq(run_buffer_get(&d->fin[0], (size_t)r * dv + u), 0, "%s %s row %d: out[%d] = %g, not 0",
				     path, dev, r, u, run_buffer_get(&d->fin[0], (size_t)r * dv + u));
		/* attention_sink's: the sink alone */
		double want = c->nrow > 1 ? run_buffer_get(&d->row[1], r) : -INFINITY;
		cr_expect_eq(run_buffer_get(&d->fin[1], r), want, "%s %s row %d: lse %g, not %g", path, dev, r,
			     run_buffer_get(&d->fin[1], r), want);
	}
	cr_expect_eq(run_buffer_get(&d->fin[1], INF_ROW), INFINITY, "%s %s: lse %g where every score is +inf", path, dev,
		     run_buffer_get(&d->fin[1], INF_ROW));
	for (int k = 0; sink && k < 2; k++) { /* logsumexp over the scores and a sink of +inf: +inf; out NaN, as torch's weights */
		int r = k ? SINK_ROW : SINK_EMPTY;
		cr_expect_eq(run_buffer_get(&d->fin[1], r), INFINITY, "%s %s row %d: lse %g beside a sink of +inf", path, dev, r,
			     run_buffer_get(&d->fin[1], r));
		cr_expect(isnan(run_buffer_get(&d->fin[0], (size_t)r * dv)), "%s %s row %d: out %g beside a sink of +inf", path,
			  dev, r, run_buffer_get(&d->fin[0], (size_t)r * dv));
	}
	cr_expect_eq(run_buffer_get(&d->fin[1], MIXED_ROW), INFINITY, "%s %s: lse %g of +inf scores and a NaN", path, dev,
		     run_buffer_get(&d->fin[1], MIXED_ROW));
	for (int u = 0; u < dv; u++)
		cr_expect(isnan(run_buffer_get(&d->fin[0], (size_t)INF_ROW * dv + u)), "%s %s: out[%d] = %g beside +inf",
			  path, dev, u, run_buffer_get(&d->fin[0], (size_t)INF_ROW * dv + u));
	cr_expect(isnan(run_buffer_get(&d->fin[1], NAN_ROW)), "%s %s: lse %g of NaN scores", path, dev,
		  run_buffer_get(&d->fin[1], NAN_ROW));
	if (c->nfinal > 2) { /* attention_max_logit's max_logit: max skips NaN, the output does not (torch.max) */
		cr_expect(isnan(run_buffer_get(&d->fin[2], NAN_ROW)), "%s %s: max_logit %g of NaN scores", path, dev,
			  run_buffer_get(&d->fin[2], NAN_ROW));
		cr_expect_eq(run_buffer_get(&d->fin[2], INF_ROW), INFINITY, "%s %s: max_logit %g of +inf scores", path,
			     dev, run_buffer_get(&d->fin[2], INF_ROW));
		cr_expect_eq(run_buffer_get(&d->fin[2], MIXED_ROW), INFINITY, "%s %s: max_logit %g of +inf scores and a NaN",
			     path, dev, run_buffer_get(&d->fin[2], MIXED_ROW));
	}
	RunCheck rc;
	runcheck_run(d, &rc);
	for (int o = 0; o < rc.nout; o++) {
		cr_expect(rc.out[o].worst_ratio <= 1 && !rc.out[o].nan_mismatch, "%s %s %s: %g of tolerance, %d NaN mismatches",
			  path, dev, rc.out[o].name, rc.out[o].worst_ratio, rc.out[o].nan_mismatch);
		cr_expect_eq(rc.out[o].empty_nan, 0, "%s %s %s: %zu values not compared", path, dev, rc.out[o].name,
			     rc.out[o].empty_nan);
	}
	runcheck_free(&rc);
	rundata_free(d);
	spec_carrier_free(c);
}

static void attention_special(const char *dev, const char *arch)
{
	attention_special_rows(dev, "specs/attention.yaml", arch);
	attention_special_rows(dev, "specs/attention_max_logit.yaml", arch);
	attention_special_rows(dev, "specs/attention_sink.yaml", arch);
}

Test(run, attention_fully_masked_and_infinite_rows_on_interp) { attention_special("interp", NULL); }
Test(run, attention_fully_masked_and_infinite_rows_on_cpu) { attention_special("cpu", NULL); }
Test(run, attention_fully_masked_and_infinite_rows_on_emu, .timeout = 300)
{
	skip_without_emu();
	attention_special("emu", NULL);
}

/* The same on the Hopper template, as sm_90a runs prefill. */
Test(run, attention_fully_masked_and_infinite_rows_on_emu_sm90a, .timeout = 300)
{
	skip_without_emu();
	attention_special("emu", "sm_90a");
}

/* selective_scan with a decay of 0, as exp(dt * A) gives in float32 once
 * dt * A is below about -104: the state restarts there (h = b x), and
 * every position of every row against the loop h = a h + b x, y = c h,
 * in float64.  Row 0 decays to 0 at position 5, row 1 at its first, row 2
 * at every position. */
static void scan_zero_decay(const char *dev)
{
	enum { R = 3, N = 37 };
	Carrier *c = load_ok("specs/selective_scan.yaml");
	RunData *d = rundata_new(c, R, N);
	char msg[300];
	cr_assert_eq(rundata_draw(d, 5, NULL, 0, msg, sizeof msg), 0, "%s", msg);
	cr_assert_str_eq(c->elem[0].name, "a");
	run_buffer_set(&d->elem[0], 5, 0);
	run_buffer_set(&d->elem[0], (size_t)N, 0);
	for (int j = 0; j < N; j++)
		run_buffer_set(&d->elem[0], (size_t)2 * N + j, 0);
	cr_assert_eq(rundata_check_assume(d, msg, sizeof msg), 0, "the spec's assume refuses a decay of 0: %s", msg);
	device_run(dev, d);
	cr_assert_str_eq(c->finalize[0].name, "h");
	cr_assert_str_eq(c->finalize[1].name, "y");
	for (int r = 0; r < R; r++) {
		double h = 0;
		for (int j = 0; j < N; j++) {
			size_t at = (size_t)r * N + j;
			double a = run_buffer_get(&d->elem[0], at), b = run_buffer_get(&d->elem[1], at);
			double cc = run_buffer_get(&d->elem[2], at), x = run_buffer_get(&d->elem[3], at);
			h = a * h + b * x;
			double gh = run_buffer_get(&d->fin[0], at), gy = run_buffer_get(&d->fin[1], at);
			cr_expect(fabs(gh - h) <= 1e-5 * (1 + fabs(h)), "%s row %d position %d: h %g, the loop %g", dev, r, j, gh, h);
			cr_expect(fabs(gy - cc * h) <= 1e-5 * (1 + fabs(cc * h)), "%s row %d position %d: y %g, the loop %g", dev, r,
				  j, gy, cc * h);
		}
	}
	rundata_free(d);
	spec_carrier_free(c);
}

Test(run, selective_scan_with_a_zero_decay_on_interp) { scan_zero_decay("interp"); }
Test(run, selective_scan_with_a_zero_decay_on_cpu) { scan_zero_decay("cpu"); }
Test(run, selective_scan_with_a_zero_decay_on_emu, .timeout = 120)
{
	skip_without_emu();
	scan_zero_decay("emu");
}

/* f64(k) makes an i32 a float before it meets a large literal: 3 *
 * 1e9 is 3e9 on every device, where k * 1.0 * 1e9 stays an i32 product
 * (a literal's value, not its spelling, gives its type) and wraps.  The
 * spec written back keeps the conversion. */
static void float_conversion(const char *dev)
{
	Carrier *c = text_ok("carrier: c\nelement: {k: i32}\nstate: {s: f64, t: f64}\nidentity: {s: 0, t: 0}\n"
			     "lift:\n  s: f64(k) * 1000000000\n  t: k * 1.0 * 1000000000\nmerge:\n  s: a.s + b.s\n  t: a.t + b.t\n");
	char *text = ir_str(c->ir, c->lift[0]);
	cr_expect_str_eq(text, "f64(k) * 1e+09");
	free(text);
	/* of an expression of literals too, which alone takes the type of what it meets */
	Carrier *w = text_ok("carrier: w\nelement: {k: i32}\nstate: {s: f64}\nidentity: {s: 0}\n"
			     "lift:\n  s: f64(where(k > 0, 1, 0)) * k\nmerge:\n  s: a.s + b.s\n");
	text = ir_str(w->ir, w->lift[0]);
	cr_expect_str_eq(text, "f64(where(k > 0, 1, 0)) * k");
	free(text);
	spec_carrier_free(w);
	RunData *d = rundata_new(c, 1, 2);
	char msg[300];
	cr_assert_eq(rundata_draw(d, 1, NULL, 0, msg, sizeof msg), 0, "%s", msg);
	run_buffer_set(&d->elem[0], 0, 3);
	run_buffer_set(&d->elem[0], 1, 3);
	device_run(dev, d);
	cr_expect_eq(run_buffer_get(&d->fin[0], 0), 6e9, "%s: %g", dev, run_buffer_get(&d->fin[0], 0));
	cr_expect_eq(run_buffer_get(&d->fin[1], 0), 2.0 * (double)(int32_t)3000000000u, "%s: %g", dev,
		     run_buffer_get(&d->fin[1], 0));
	rundata_free(d);
	spec_carrier_free(c);
}

Test(run, float_conversion_of_an_integer_on_interp) { float_conversion("interp"); }
Test(run, float_conversion_of_an_integer_on_cpu) { float_conversion("cpu"); }
Test(run, float_conversion_of_an_integer_on_emu, .timeout = 120)
{
	skip_without_emu();
	float_conversion("emu");
}

/* No rows, or rows of no positions, on the emulator: a kernel whose grid
 * would have no blocks is not launched (the emulator refuses such a
 * grid, as the driver does), and the others give every row the empty
 * row's outputs, as the reference does.  One spec of each template:
 * row reduction, columns, a map's second pass, a scan, top-k, attention. */
Test(run, empty_grids_on_emu_every_template, .timeout = 300)
{
	char why[300];
	if (!emu_available(why, sizeof why))
		cr_skip_test("no host C++ compiler for the emulator: %s", why);
	static const char *const specs[] = {"specs/sum.yaml",		    "specs/layer_norm.yaml",
					    "specs/online_softmax.yaml",    "specs/linear_recurrence.yaml",
					    "specs/moe_topk_routing.yaml", "specs/attention.yaml"};
	static const int shape[2][2] = {{0, 5}, {3, 0}};
	for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) {
		Carrier *c = load_ok(specs[i]);
		for (int k = 0; k < 2; k++) {
			RunData *d = rundata_new(c, shape[k][0], shape[k][1]);
			for (int p = 0; p < c->nparams; p++)
				d->params[p] = 0.5;
			char msg[300];
			cr_expect_eq(run_device_find("emu")->run(d, &(RunOpts){0}, msg, sizeof msg), 0, "%s at %d x %d: %s",
				     specs[i], shape[k][0], shape[k][1], msg);
			if (shape[k][0])
				expect_reference(d, specs[i]);
			rundata_free(d);
		}
		spec_carrier_free(c);
	}
}

/* argmax skips NaN wherever it stands (numpy's nanargmax), keeps the first
 * of ties, gives a row of -inf its first position (torch.argmax) and a row
 * with no number -1; idx has a reference, which agrees. */
static void argmax_rows(const char *dev)
{
	enum { R = 6, N = 8 };
	const float n = NAN, i = INFINITY;
	const float rows[R][N] = {{1, n, -3, 0, -1, 2, -2, n}, {-i, -i, -i, -i, -i, -i, -i, -i}, {n, n, n, n, n, n, n, n},
				  {n, -i, n, -i, 2, 2, n, 1},	  {n, 2, 2, n, n, n, n, n},	    {3, 1, i, 0, i, n, 2, 1}};
	static const int want_idx[R] = {5, 0, -1, 4, 1, 2};
	const double want_m[R] = {2, -i, -i, 2, 2, i};
	Carrier *c = load_ok("specs/argmax.yaml");
	RunData *d = rows_on(dev, c, &rows[0][0], R, N);
	for (int r = 0; r < R; r++) {
		cr_expect_eq(run_buffer_get(&d->fin[0], r), want_m[r], "%s row %d: m %g", dev, r, run_buffer_get(&d->fin[0], r));
		cr_expect_eq(run_buffer_get(&d->fin[1], r), want_idx[r], "%s row %d: idx %g, not %d", dev, r,
			     run_buffer_get(&d->fin[1], r), want_idx[r]);
	}
	expect_reference(d, dev);
	/* a wrong idx is caught by its reference, not by the fold it came from */
	run_buffer_set(&d->fin[1], 0, 7);
	RunCheck rc;
	runcheck_run(d, &rc);
	cr_expect_not(rc.ok, "%s: idx 7 for row 0 accepted", dev);
	runcheck_free(&rc);
	rundata_free(d);
	spec_carrier_free(c);
}

Test(run, argmax_skips_nan_and_keeps_the_first_on_interp) { argmax_rows("interp"); }
Test(run, argmax_skips_nan_and_keeps_the_first_on_cpu) { argmax_rows("cpu"); }
Test(run, argmax_skips_nan_and_keeps_the_first_on_emu, .timeout = 120)
{
	skip_without_emu();
	argmax_rows("emu");
}

/* o_lse, the split-KV combine: a partial lse of +inf makes the row's
 * +inf (log(sum(exp))), where inf - inf in the merge gave NaN; its out is
 * NaN (inf / inf), as the reference's.  A NaN partial beside it: NaN. */
static void o_lse_rows(const char *dev)
{
	enum { R = 4, N = 5 };
	const float i = INFINITY, n = NAN;
	const float plse[R][N] = {{0.5f, i, -1, 2, 0}, {i, i, -i, 1, 1}, {-1, 0, 1, 2, 3}, {n, i, 0, 0, 0}};
	Carrier *c = load_ok("specs/o_lse.yaml");
	RunData *d = rundata_new(c, R, N);
	char msg[512];
	cr_assert_eq(rundata_draw(d, 4, NULL, 0, msg, sizeof msg), 0, "%s", msg);
	cr_assert_str_eq(c->elem[1].name, "plse");
	for (int r = 0; r < R; r++)
		for (int j = 0; j < N; j++)
			run_buffer_set(&d->elem[1], (size_t)r * N + j, plse[r][j]);
	device_run(dev, d);
	cr_assert_str_eq(c->finalize[1].name, "lse");
	for (int r = 0; r < 2; r++)
		cr_expect_eq(run_buffer_get(&d->fin[1], r), INFINITY, "%s row %d: lse %g", dev, r, run_buffer_get(&d->fin[1], r));
	cr_expect(isfinite(run_buffer_get(&d->fin[1], 2)), "%s: a finite row's lse", dev);
	cr_expect(isnan(run_buffer_get(&d->fin[1], 3)), "%s: lse %g with a NaN beside +inf", dev, run_buffer_get(&d->fin[1], 3));
	expect_reference(d, dev);
	rundata_free(d);
	spec_carrier_free(c);
}

Test(run, o_lse_of_an_infinite_partial_on_interp) { o_lse_rows("interp"); }
Test(run, o_lse_of_an_infinite_partial_on_cpu) { o_lse_rows("cpu"); }
Test(run, o_lse_of_an_infinite_partial_on_emu, .timeout = 120)
{
	skip_without_emu();
	o_lse_rows("emu");
}

/* sigmoid_full's out for row r of d with every weight rounded to f16
 * before it multiplies v, as the attention template's P (pv = 1), and
 * scaled by k; in float64. */
static void sigmoid_rounded_p(RunData *d, int r, double k)
{
	int dim = d->row[0].width, dv = d->col[1].width;
	const uint16_t *q = (const uint16_t *)d->row[0].p + (size_t)r * dim, *kk = d->col[0].p, *v = d->col[1].p;
	double *o = calloc(dv, sizeof *o);
	cr_assert(o);
	for (int j = 0; j < d->len; j++) {
		double s = 0;
		for (int x = 0; x < dim; x++)
			s += run_f16_value(q[x]) * run_f16_value(kk[(size_t)j * dim + x]);
		double w = run_f16_value(run_f16_bits(1 / (1 + exp(-(s * d->params[0] + d->params[1])))));
		for (int u = 0; u < dv; u++)
			o[u] += w * run_f16_value(v[(size_t)j * dv + u]);
	}
	for (int u = 0; u < dv; u++)
		((float *)d->fin[0].p)[(size_t)r * dv + u] = (float)(o[u] * k);
	free(o);
}

/* A weighted sum's P rounded to f16 (runcheck_round_p_sum): each weight
 * may move by its rounding, which the naive baseline's bound carries, so
 * a row of such weights passes where float32's tolerance alone fails it;
 * the same row 1% off still fails. */
Test(run, a_weighted_sums_rounded_p_holds_to_its_bound)
{
	Carrier *c = load_ok("tests/attention/sigmoid_full.yaml");
	RunData *d = drawn(c, 4, 300);
	d->params[0] = 0.25, d->params[1] = 0.5;
	interp_run(d);
	for (int r = 0; r < 4; r++)
		sigmoid_rounded_p(d, r, 1);
	RunCheck rc;
	runcheck_run(d, &rc);
	cr_expect_gt(rc.out[0].worst_ratio, 1, "P rounded, held to float32: %g of tolerance", rc.out[0].worst_ratio);
	runcheck_free(&rc);
	runcheck_round_p_sum(d, TY_F16, 0, 1);
	runcheck_run(d, &rc);
	cr_expect(rc.ok, "P rounded, held to its bound: %g of tolerance", rc.out[0].worst_ratio);
	runcheck_free(&rc);
	sigmoid_rounded_p(d, 2, 1.01);
	runcheck_run(d, &rc);
	cr_expect_gt(rc.out[0].worst_ratio, 1, "a row 1%% off: %g of tolerance", rc.out[0].worst_ratio);
	runcheck_free(&rc);
	rundata_free(d);
	spec_carrier_free(c);
}

/* fp8_descale's out for row r of d (causal: keys 0..r) as FP8 attention
 * computes it: the weights p_j = e^(s_j - max s) rounded to e4m3 before
 * they multiply v (the sum l of them unrounded), scaled by k; in
 * float64. */
static void fp8_rounded_p(RunData *d, int r, double k)
{
	int dim = d->row[0].width, dv = d->col[1].width;
	const uint8_t *q = (const uint8_t *)d->row[0].p + (size_t)r * dim, *kk = d->col[0].p, *v = d->col[1].p;
	double sc = d->params[0] * d->params[1] * d->params[2], mx = -INFINITY, l = 0;
	double *s = calloc((size_t)r + 1, sizeof *s), *o = calloc(dv, sizeof *o);
	cr_assert(s && o);
	for (int j = 0; j <= r && j < d->len; j++) {
		for (int x = 0; x < dim; x++)
			s[j] += run_f8e4m3_value(q[x]) * run_f8e4m3_value(kk[(size_t)j * dim + x]);
		s[j] *= sc;
		mx = fmax(mx, s[j]);
	}
	for (int j = 0; j <= r && j < d->len; j++) {
		double p = exp(s[j] - mx), pr = run_f8e4m3_value(run_f8e4m3_bits(p));
		l += p;
		for (int u = 0; u < dv; u++)
			o[u] += pr * run_f8e4m3_value(v[(size_t)j * dv + u]);
	}
	for (int u = 0; u < dv; u++)
		((float *)d->fin[0].p)[(size_t)r * dv + u] = (float)(o[u] / l * d->params[3] * k);
	free(s), free(o);
}

/* FP8 attention's P rounded to e4m3 (3 mantissa bits: a weight moves by
 * up to 2^-4 of itself) holds to the bound runcheck derives for e4m3, and
 * fails f16's, which is not widened for it, and float32's.  The bound is
 * the worst case, every weight's rounding of one sign (sum 2^-4 p_j |v_j|
 * over l): a row that forgets v_descale (half its value) fails it, one
 * 30% off does not (0.84 of it at 64 keys). */
Test(run, fp8_attention_p_rounded_to_e4m3_holds_to_its_bound)
{
	Carrier *c = load_ok("tests/attention/fp8_descale.yaml");
	RunData *d = drawn(c, 64, 64); /* causal: row r weighs r + 1 keys */
	cr_assert_str_eq(c->params[3].name, "v_descale");
	d->params[0] = 0.125, d->params[1] = 1.5, d->params[2] = 0.75, d->params[3] = 2;
	interp_run(d);
	for (int r = 0; r < 64; r++)
		fp8_rounded_p(d, r, 1);
	RunCheck rc;
	runcheck_run(d, &rc);
	cr_expect_gt(rc.out[0].worst_ratio, 1, "P in e4m3, held to float32: %g of tolerance", rc.out[0].worst_ratio);
	runcheck_free(&rc);
	runcheck_round_p(d, TY_F16, 0, 1, 2);
	runcheck_run(d, &rc);
	cr_expect_gt(rc.out[0].worst_ratio, 1, "P in e4m3, held to f16's bound: %g of tolerance", rc.out[0].worst_ratio);
	runcheck_free(&rc);
	runcheck_round_p(d, TY_F8E4M3, 0, 1, 2);
	runcheck_run(d, &rc);
	cr_expect(rc.ok, "P in e4m3, held to its bound: %g of tolerance", rc.out[0].worst_ratio);
	runcheck_free(&rc);
	fp8_rounded_p(d, 63, 0.5);
	runcheck_run(d, &rc);
	cr_expect_gt(rc.out[0].worst_ratio, 1, "a row without v_descale: %g of tolerance", rc.out[0].worst_ratio);
	runcheck_free(&rc);
	rundata_free(d);
	spec_carrier_free(c);
}

/* One run of c on the interpreter over rows x len drawn values, x[at]
 * (the first element input) set to v first; its check in rc. */
static RunData *run_with(Carrier *c, int rows, int len, const size_t *at, int nat, float v, RunCheck *rc)
{
	RunData *d = drawn(c, rows, len);
	for (int k = 0; k < nat; k++)
		((float *)d->elem[0].p)[at[k]] = v;
	interp_run(d);
	runcheck_run(d, rc);
	return d;
}

/* A number where the float64 reference is NaN (a row holding a NaN) fails,
 * as a NaN where it is a number does: a lift that replaces NaN by 12345 (or
 * by 1e6 under a max) is no sum (max) of the row.  The carrier that lets
 * NaN through passes, its NaN matched by kind and counted as such. */
Test(run, a_number_where_the_reference_is_nan_fails)
{
	static const char *const wrong[] = {"tests/check/nan_sum_replaced.yaml", "tests/check/nan_max_replaced.yaml"};
	size_t at[] = {57};
	for (int i = 0; i < 2; i++) {
		Carrier *c = load_ok(wrong[i]);
		RunCheck rc;
		RunData *d = run_with(c, 3, 50, at, 1, NAN, &rc);
		cr_expect_not(rc.ok, "%s", wrong[i]);
		cr_expect_eq(rc.out[0].nan_mismatch, 1, "%s: %d", wrong[i], rc.out[0].nan_mismatch);
		cr_expect_eq(rc.out[0].at, 1, "%s: row 1 holds the NaN, not row %zu", wrong[i], rc.out[0].at);
		cr_expect_eq(rc.out[0].nan_both, 0);
		runcheck_free(&rc);
		rundata_free(d);
		spec_carrier_free(c);
	}
	Carrier *c = load_ok("specs/sum.yaml");
	RunCheck rc;
	RunData *d = run_with(c, 3, 50, at, 1, NAN, &rc);
	cr_expect(rc.ok);
	cr_expect_eq(rc.out[0].nan_both, 1, "the NaN sum matched: %zu", rc.out[0].nan_both);
	cr_expect_eq(runcheck_sized(&rc.out[0]), 2, "the other two rows compared by size");
	cr_expect(runcheck_any_sized(&rc));
	char notes[200];
	runcheck_notes(&rc.out[0], notes, sizeof notes);
	cr_expect_str_eq(notes, ", 1 of 3 values NaN in both (not compared by size)");
	runcheck_free(&rc);
	rundata_free(d);
	spec_carrier_free(c);
}

/* specs/max.yaml skips NaN, and so does its reference: 2 for [1, nan, 2]
 * and every row holding a NaN passes, on a row of NaN alone too (-inf). */
Test(run, max_skips_nan_as_its_reference_does)
{
	Carrier *c = load_ok("specs/max.yaml");
	RunData *d = drawn(c, 2, 3);
	float *x = d->elem[0].p;
	x[0] = 1, x[1] = NAN, x[2] = 2, x[3] = x[4] = x[5] = NAN;
	interp_run(d);
	const float *m = d->fin[0].p;
	cr_expect_eq(m[0], 2);
	cr_expect(isinf(m[1]) && m[1] < 0, "a row of NaN: %g", m[1]);
	RunCheck rc;
	runcheck_run(d, &rc);
	cr_expect(rc.ok, "%d mismatches, %g of tolerance", rc.out[0].nan_mismatch, rc.out[0].worst_ratio);
	runcheck_free(&rc);
	rundata_free(d);
	spec_carrier_free(c);
}

/* Rows whose weights are all 0 give 0 / 0, NaN on both sides: the check
 * passes, and says that nothing of those rows was compared by size. */
Test(run, nan_in_both_is_counted_not_sized)
{
	Carrier *c = load_ok("tests/check/weighted_mean.yaml");
	RunData *d = drawn(c, 4, 30);
	float *w = d->elem[1].p;
	for (int j = 0; j < 4 * 30; j++)
		w[j] = 0;
	interp_run(d);
	RunCheck rc;
	runcheck_run(d, &rc);
	cr_expect(rc.ok);
	cr_expect_eq(rc.out[0].nan_both, 4);
	cr_expect_eq(runcheck_sized(&rc.out[0]), 0);
	cr_expect_not(runcheck_any_sized(&rc), "no value compared by size");
	char notes[200];
	runcheck_notes(&rc.out[0], notes, sizeof notes);
	cr_expect_str_eq(notes, ", 4 of 4 values NaN in both (not compared by size)");
	runcheck_free(&rc);
	rundata_free(d);
	spec_carrier_free(c);
}

/* An empty or fully masked row's NaN reference (a mean's 0 / 0) is
 * undefined, as check has it: a 0 there is counted as not compared,
 * neither passing nor failing; the rows with positions are held as ever. */
Test(run, an_empty_rows_nan_reference_is_not_compared)
{
	Carrier *c = text_ok("carrier: mean0\nelement: {x: f32}\nmask: x > -100\nstate: {s: f32, n: f32}\n"
			     "identity: {s: 0, n: 0}\nlift: {s: x, n: 1}\nmerge:\n  s: a.s + b.s\n  n: a.n + b.n\n"
			     "finalize: {mean: 'where(n == 0, 0, s / n)'}\nreference: {mean: sum(x) / count()}\n"
			     "laws: [commutative]\n");
	RunData *d = drawn(c, 3, 20);
	float *x = d->elem[0].p;
	for (int j = 20; j < 40; j++)
		x[j] = -1000; /* row 1 fully masked */
	interp_run(d);
	RunCheck rc;
	runcheck_run(d, &rc);
	cr_expect(rc.ok);
	cr_expect_eq(rc.out[0].empty_nan, 1);
	cr_expect_eq(runcheck_sized(&rc.out[0]), 2);
	runcheck_free(&rc);
	((float *)d->fin[0].p)[2] += 1; /* row 2 has positions: still held to its reference */
	runcheck_run(d, &rc);
	cr_expect_not(rc.ok);
	runcheck_free(&rc);
	rundata_free(d);
	spec_carrier_free(c);
}

/* ---- integers wrap on every device ---- */

/* The spec's i32 and i64 wrap in two's complement.  Written in C++'s signed
 * types, the emulator's host compiler folded each of these as if nothing
 * overflowed: `j * 2^30 > 0` to `j > 0`, `k + c < k` to false, `-k == k`
 * to `k == 0`, `k * k < 0` to false. */
#define WRAP_CMP_SPEC                                                                                              \
	"carrier: wrapcmp\nelement: {k: i32, e: i64}\nstate: {add: i32, abs: i32, neg: i32, mul: i32, sq: i32, "    \
	"half: i32, add64: i32, fma: i32}\n"                                                                           \
	"identity: {add: 0, abs: 0, neg: 0, mul: 0, sq: 0, half: 0, add64: 0, fma: 0}\n"                              \
	"lift:\n  add: 'where(k + 2147483000 < k, 1, 0)'\n  abs: 'where(abs(k) < 0, 1, 0)'\n"                         \
	"  neg: 'where(-k == k && k != 0, 1, 0)'\n  mul: 'where(k * k < 0, 1, 0)'\n  sq: 'where(k^2 < 0, 1, 0)'\n"   \
	"  half: 'where(k * 2 / 2 != k, 1, 0)'\n  add64: 'where(e + 9000000000000000000 < e, 1, 0)'\n"                \
	"  fma: 'where(fma(k, 65536, 65536) < 0 && k > 0, 1, 0)'\n"                                                   \
	"merge: {add: a.add + b.add, abs: a.abs + b.abs, neg: a.neg + b.neg, mul: a.mul + b.mul, sq: a.sq + b.sq, "   \
	"half: a.half + b.half, add64: a.add64 + b.add64, fma: a.fma + b.fma}\nlaws: [commutative]\n"

static void wrap_cmp_rows(const char *dev)
{
	enum { N = 6 };
	static const double k[N] = {-2147483648.0, 5, 1073741824, 46341, 50000, 1000};
	static const double e[N] = {1e18, -5, 0, 223372036854775808.0, 9e18, -9e18};
	/* by hand: add k > 647; abs and neg INT_MIN; mul and sq 46341 and 50000
	 * (INT_MIN and 2^30 square to 0 mod 2^32); half INT_MIN and 2^30;
	 * add64 e > 2^63 - 1 - 9e18; fma k mod 2^16 >= 2^15 */
	static const struct {
		const char *name;
		double want;
	} out[] = {{"add", 4}, {"abs", 1}, {"neg", 1}, {"mul", 2}, {"sq", 2}, {"half", 2}, {"add64", 3}, {"fma", 2}};
	Carrier *c = text_ok(WRAP_CMP_SPEC);
	RunData *d = rundata_new(c, 1, N);
	for (int j = 0; j < N; j++) {
		run_buffer_set(&d->elem[0], j, k[j]);
		run_buffer_set(&d->elem[1], j, e[j]);
	}
	device_run(dev, d);
	cr_assert_eq(c->nfinal, (int)(sizeof out / sizeof *out));
	for (int o = 0; o < c->nfinal; o++) {
		cr_assert_str_eq(c->finalize[o].name, out[o].name);
		cr_expect_eq(run_buffer_get(&d->fin[o], 0), out[o].want, "%s: %s is %g, not %g", dev, out[o].name,
			     run_buffer_get(&d->fin[o], 0), out[o].want);
	}
	expect_reference(d, dev);
	rundata_free(d);
	spec_carrier_free(c);
}

Test(run, integer_overflow_guards_wrap_on_interp) { wrap_cmp_rows("interp"); }
Test(run, integer_overflow_guards_wrap_on_cpu) { wrap_cmp_rows("cpu"); }
Test(run, integer_overflow_guards_wrap_on_emu, .timeout = 120)
{
	skip_without_emu();
	wrap_cmp_rows("emu");
}

/* A mask whose product wraps: j * 2^30 is positive for j = 1 mod 4 only,
 * on a row template and on the attention template (scores all 0, so l
 * counts the kept keys). */
static void wrap_mask_rows(const char *dev)
{
	enum { N = 103 };
	int kept = 0;
	for (int j = 0; j < N; j++)
		kept += (int32_t)((uint32_t)j * 1073741824u) > 0;
	cr_assert_eq(kept, 26);
	Carrier *c = text_ok("carrier: wrapmask\nelement: {x: f32}\nmask: j * 1073741824 > 0\nstate: {n: i32}\n"
			     "identity: {n: 0}\nlift: {n: 1}\nmerge: {n: a.n + b.n}\nreference:\n  n: count()\n"
			     "laws: [commutative]\n");
	RunData *d = drawn(c, 2, N);
	device_run(dev, d);
	for (int r = 0; r < 2; r++)
		cr_expect_eq(run_buffer_get(&d->fin[0], r), kept, "%s row %d: %g kept, not %d", dev, r,
			     run_buffer_get(&d->fin[0], r), kept);
	expect_reference(d, dev);
	rundata_free(d);
	spec_carrier_free(c);

	c = text_ok("carrier: attn_wrapmask\ndims: {d: 16, dv: 16}\nrow:\n  q: f16[d]\ncolumn:\n  k: f16[d]\n"
		    "  v: f16[dv]\nlet:\n  s: dot(q, k) * 0.25\nmask: j * 1073741824 > 0\n"
		    "state: {m: f32, l: f32, o: 'f32[dv]'}\nidentity: {m: -inf, l: 0, o: 0}\nlift: {m: s, l: 1, o: v}\n"
		    "merge:\n  m: max(a.m, b.m)\n  l: a.l * exp(a.m - m) + b.l * exp(b.m - m)\n"
		    "  o: a.o * exp(a.m - m) + b.o * exp(b.m - m)\n"
		    "finalize:\n  out: o / where(l == 0, 1, l)\n  lse: where(m == inf, m, m + log(l))\n  l: l\n"
		    "reference:\n  top: max(s)\n"
		    "  out: where(count() == 0, 0, sum(exp(s - top) * v) / sum(exp(s - top)))\n"
		    "  lse: top + log(sum(exp(where(s == top, 0, s - top))))\n  l: count()\nlaws: [commutative]\n");
	d = drawn(c, 2, N);
	for (size_t u = 0; u < d->row[0].n * d->row[0].width; u++)
		run_buffer_set(&d->row[0], u, 0);
	device_run(dev, d);
	cr_assert_str_eq(c->finalize[2].name, "l");
	for (int r = 0; r < 2; r++)
		cr_expect_eq(run_buffer_get(&d->fin[2], r), kept, "%s attention row %d: l %g, not %d", dev, r,
			     run_buffer_get(&d->fin[2], r), kept);
	expect_reference(d, dev);
	rundata_free(d);
	spec_carrier_free(c);
}

Test(run, a_mask_whose_product_wraps_on_interp) { wrap_mask_rows("interp"); }
Test(run, a_mask_whose_product_wraps_on_cpu) { wrap_mask_rows("cpu"); }
Test(run, a_mask_whose_product_wraps_on_emu, .timeout = 300)
{
	skip_without_emu();
	wrap_mask_rows("emu");
}

/* The dot of i32 vectors is an i32 (the typing rule: dot's type is its
 * operands'), so it wraps before it widens into an i64 field, as the
 * sum of the products written out in i32 does: 5000000001 - 2^32.
 * The float64 fold that run compares against wraps the same. */
static void int_dot_rows(const char *dev)
{
	Carrier *c = text_ok("carrier: idot64\nelement: {c: 'i32[3]'}\nstate: {t: i64}\nidentity: {t: 0}\n"
			     "lift: {t: 'dot(c, c)'}\nmerge: {t: a.t + b.t}\nlaws: [commutative]\n");
	static const double c3[3] = {50000, 50000, 1};
	RunData *d = rundata_new(c, 1, 1);
	for (int u = 0; u < 3; u++)
		run_buffer_set(&d->elem[0], u, c3[u]);
	device_run(dev, d);
	cr_expect_eq(run_buffer_get(&d->fin[0], 0), 705032705, "%s: dot %.17g", dev, run_buffer_get(&d->fin[0], 0));
	expect_reference(d, dev);
	rundata_free(d);
	spec_carrier_free(c);
}

Test(run, an_integer_dot_wraps_in_its_type_on_interp) { int_dot_rows("interp"); }
Test(run, an_integer_dot_wraps_in_its_type_on_emu, .timeout = 120)
{
	skip_without_emu();
	int_dot_rows("emu");
}

/* mask decides in the spec's types on every device and in the reference:
 * j < p * 300 at p = 0.3 keeps j < 90 in float32 (0.3f * 300 rounds to
 * 90) where float64 keeps 91 (0.3f is a little above 0.3), and a kept position that float64 alone
 * keeps is no position of the carrier's fold. */
static void param_mask_rows(const char *dev)
{
	char err[512];
	Carrier *c = load_text("carrier: parammask\nparams: {p: f32}\nelement: {x: f32}\nmask: j < p * 300\n"
			       "state: {n: i32}\nidentity: {n: 0}\nlift: {n: 1}\nmerge: {n: a.n + b.n}\n"
			       "reference:\n  n: count()\nlaws: [commutative]\n",
			       err, sizeof err);
	cr_assert(c, "%s", err);
	RunData *d = rundata_new(c, 1, 100);
	d->params[0] = 0.3f; /* as --param and the library give an f32 param */
	device_run(dev, d);
	cr_expect_eq(run_buffer_get(&d->fin[0], 0), 90, "%s: %g kept", dev, run_buffer_get(&d->fin[0], 0));
	expect_reference(d, dev);
	rundata_free(d);
	spec_carrier_free(c);
}

Test(run, a_mask_decides_in_float32_on_interp) { param_mask_rows("interp"); }
Test(run, a_mask_decides_in_float32_on_cpu) { param_mask_rows("cpu"); }
Test(run, a_mask_decides_in_float32_on_emu, .timeout = 120)
{
	skip_without_emu();
	param_mask_rows("emu");
}

/* docs/examples/weighted_mean.yaml at its cut: x < cut + 2 is false for x
 * = cut = 1e8 in float32 (cut + 2 rounds to cut), so the mean is of the
 * other two, 1.5, on the interpreter as on the compiled devices. */
Test(run, the_weighted_mean_example_masks_in_float32)
{
	Carrier *c = load_ok("docs/examples/weighted_mean.yaml");
	RunData *d = rundata_new(c, 1, 3);
	const float x[3] = {1e8f, 1, 2};
	for (int k = 0; k < 3; k++)
		run_buffer_set(&d->elem[0], k, x[k]), run_buffer_set(&d->elem[1], k, 1);
	run_buffer_set(&d->row[0], 0, 1e8);
	for (int p = 0; p < c->nparams; p++)
		d->params[p] = 0;
	interp_run(d);
	cr_expect_eq(run_buffer_get(&d->fin[0], 0), 1.5, "mean %.9g", run_buffer_get(&d->fin[0], 0));
	expect_reference(d, "interp");
	rundata_free(d);
	spec_carrier_free(c);
}

/* E4M3's fields, independently of run.c: 1 sign, 4 exponent bits of bias
 * 7, 3 mantissa bits, subnormals m * 2^-9, S.1111.111 NaN. */
static double e4m3_value(int b)
{
	int e = (b >> 3) & 15, m = b & 7;
	double v = e == 15 && m == 7 ? NAN : e == 0 ? ldexp(m, -9) : ldexp(8 + m, e - 10);
	return b & 0x80 ? -v : v;
}

/* Every f8e4m3 pattern reads as its value and writes back as itself (but
 * the NaNs, which write as 0x7f); rounding is to nearest even with 4
 * significant bits, subnormals included, and saturates at 448. */
Test(run, f8e4m3_bits)
{
	for (int b = 0; b < 256; b++) {
		double v = run_f8e4m3_value((uint8_t)b), want = e4m3_value(b);
		cr_assert(isnan(want) ? isnan(v) : v == want && !signbit(v) == !signbit(want), "%#x reads %a, not %a", b, v,
			  want);
		cr_assert_eq(run_f8e4m3_bits(v), isnan(want) ? 0x7f : b, "%#x round trips", b);
		cr_assert(isnan(v) || ir_round(TY_F8E4M3, v) == v, "%#x is a value of the type", b);
	}
	cr_expect_eq(run_f8e4m3_bits(1.0), 0x38);
	cr_expect_eq(run_f8e4m3_bits(448), 0x7e, "the largest finite");
	cr_expect_eq(run_f8e4m3_bits(0x1p-9), 0x01, "the smallest subnormal");
	cr_expect_eq(ir_round(TY_F8E4M3, 1.0625), 1.0, "a tie between 1 and 1.125 goes to the even 1");
	cr_expect_eq(ir_round(TY_F8E4M3, 1.1875), 1.25, "and between 1.125 and 1.25 to 1.25");
	cr_expect_eq(ir_round(TY_F8E4M3, 0x1p-10), 0.0, "half the smallest subnormal: ties to even, 0");
	cr_expect_eq(ir_round(TY_F8E4M3, 0x1.8p-10), 0x1p-9);
	cr_expect_eq(ir_round(TY_F8E4M3, 1e6), 448, "saturates");
	cr_expect_eq(ir_round(TY_F8E4M3, -INFINITY), -448);
	cr_expect(isnan(ir_round(TY_F8E4M3, NAN)));
	cr_expect(!run_past_range(TY_F8E4M3, 463.9) && run_past_range(TY_F8E4M3, nextafter(464, INFINITY)) &&
			  run_past_range(TY_F8E4M3, -INFINITY),
		  "past 448 and half its step, an input's value would be lost");
	/* 464 is the tie between 448 (mantissa 110) and 480 (111, the NaN
	 * pattern): to nearest even it is 448, kept, as an f16 tie that
	 * goes to the finite side would be */
	cr_expect_eq(ir_round(TY_F8E4M3, -464), -448);
	cr_expect(!run_past_range(TY_F8E4M3, 464) && !run_past_range(TY_F8E4M3, -464), "464 rounds to 448");
}

/* A map y = x over all 256 patterns gives each one's value, its sign and
 * NaN alike, on the interpreter, the CPU and the emulator: the three
 * conversions (run.c's, LLVM's selects, templates/common.cuh's bit
 * operations) agree code by code. */
static void every_f8e4m3_pattern(const char *dev)
{
	Carrier *c = text_ok("carrier: copy8\nelement: {x: f8e4m3}\nstate: {s: f32}\nidentity: {s: 0}\nlift: {s: 1}\n"
			     "merge: {s: a.s + b.s}\nmap: {y: x}\nlaws: [commutative]\n");
	RunData *d = rundata_new(c, 2, 256);
	for (int b = 0; b < 512; b++)
		((uint8_t *)d->elem[0].p)[b] = (uint8_t)(b & 255);
	device_run(dev, d);
	int bad = 0;
	for (int b = 0; b < 512; b++) {
		double y = run_buffer_get(&d->map[0], b), want = e4m3_value(b & 255);
		int ok = isnan(want) ? isnan(y) : y == want && !signbit(y) == !signbit(want);
		if (!ok && bad++ < 5)
			cr_expect(0, "%s: pattern %#x gives %a, not %a", dev, b & 255, y, want);
	}
	cr_expect_eq(bad, 0, "%s: %d patterns wrong", dev, bad);
	rundata_free(d);
	spec_carrier_free(c);
}

Test(run, every_f8e4m3_pattern_converts_alike_on_interp) { every_f8e4m3_pattern("interp"); }
Test(run, every_f8e4m3_pattern_converts_alike_on_cpu) { every_f8e4m3_pattern("cpu"); }
Test(run, every_f8e4m3_pattern_converts_alike_on_emu, .timeout = 120)
{
	skip_without_emu();
	every_f8e4m3_pattern("emu");
}

/* Online softmax over an f8e4m3 row, row 1 masked out whole, against the
 * float64 reference at odd shapes (no positions, under a warp, not a
 * multiple of a tile, one row) and, on the emulator, in several splits:
 * the inputs are e4m3 values exactly, so the tolerance is float32's. */
static void f8e4m3_softmax_rows(const char *dev)
{
	static const int shape[][2] = {{3, 0}, {3, 5}, {1, 37}, {4, 1000}};
	static const int splits[] = {0, 3};
	Carrier *c = text_ok("carrier: softmax8\nelement: {x: f8e4m3}\nstate: {m: f32, l: f32}\n"
			     "identity: {m: -inf, l: 0}\nlift: {m: x, l: 1}\nmask: i != 1\n"
			     "merge:\n  m: max(a.m, b.m)\n"
			     "  l: a.l * exp(where(a.m == inf, 0, a.m - m)) + b.l * exp(where(b.m == inf, 0, b.m - m))\n"
			     "finalize: {lse: m + log(l)}\nmap:\n  y: where(m < inf, exp(x - m) / l, 0 * m)\n"
			     "reference:\n  mx: max(x)\n  lse: mx + log(sum(exp(where(x == mx, 0, x - mx))))\n"
			     "  y: exp(x - mx) / sum(exp(x - mx))\nlaws: [commutative]\n");
	for (size_t s = 0; s < sizeof shape / sizeof *shape; s++)
		for (int k = 0; k < (strcmp(dev, "emu") ? 1 : 2); k++) {
			RunData *d = rundata_new(c, shape[s][0], shape[s][1]);
			char msg[300], what[96];
			cr_assert_eq(rundata_draw(d, 5 + (int)s, NULL, 0, msg, sizeof msg), 0, "%s", msg);
			const Device *v = run_device_find(dev);
			cr_assert_eq(v->run(d, &(RunOpts){.threads = 2, .split = splits[k]}, msg, sizeof msg), 0, "%s: %s", dev,
				     msg);
			snprintf(what, sizeof what, "%s, %d x %d, split %d", dev, shape[s][0], shape[s][1], splits[k]);
			expect_reference(d, what);
			if (shape[s][0] > 1 && shape[s][1])
				cr_expect_eq(run_buffer_get(&d->fin[0], 1), -INFINITY, "%s: the masked row's lse", what);
			rundata_free(d);
		}
	spec_carrier_free(c);
}

Test(run, f8e4m3_softmax_meets_the_reference_on_interp) { f8e4m3_softmax_rows("interp"); }
Test(run, f8e4m3_softmax_meets_the_reference_on_cpu) { f8e4m3_softmax_rows("cpu"); }
Test(run, f8e4m3_softmax_meets_the_reference_on_emu, .timeout = 300)
{
	skip_without_emu();
	f8e4m3_softmax_rows("emu");
}

/* The bytes a position reads, which the tuner's model holds in flight: a
 * bf16 input half of an f32's, an f8e4m3 a quarter, a vector its width,
 * several inputs (column ones too, row ones not: a row's are read once)
 * their sum. */
Test(run, position_bytes_by_the_inputs_types)
{
	static const struct {
		const char *inputs;
		int bytes;
	} cases[] = {{"element: {x: f32}", 4},
		     {"element: {x: bf16}", 2},
		     {"element: {x: f8e4m3}", 1},
		     {"element: {x: \"f16[8]\", w: f32}", 20},
		     {"element: {x: f8e4m3}\ncolumn: {k: \"bf16[4]\"}\nrow: {t: f32}", 9}};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char text[400];
		snprintf(text, sizeof text,
			 "carrier: bytes\n%s\nstate: {s: f32}\nidentity: {s: 0}\nlift: {s: 1}\nmerge: {s: a.s + b.s}\n"
			 "laws: [commutative]\n",
			 cases[i].inputs);
		Carrier *c = text_ok(text);
		RunData *d = rundata_new(c, 2, 8);
		cr_expect_eq(rundata_position_bytes(d), cases[i].bytes, "%s: %d", cases[i].inputs,
			     rundata_position_bytes(d));
		rundata_free(d);
		spec_carrier_free(c);
	}
}

/* Element x of row r, position j of head h in d (a [heads][rows][len] array). */
static double head_x(const RunData *d, int h, int r, int j)
{
	return run_buffer_get(&d->elem[0], ((size_t)h * d->rows + r) * d->len + j);
}

/* Each head draws a stream of its own: seed s at head 1 is not seed
 * s + 7919 at head 0 (as when the heads' seeds were s + 7919 h), and
 * head 0 draws what a run without heads draws at the same seed.  The
 * sequences of a paged batch take their seeds the same way. */
Test(run, heads_draw_streams_of_their_own)
{
	Carrier *c = load_ok("specs/sum.yaml");
	char msg[200];
	for (uint64_t s = 1; s <= 3; s++) {
		RunData *two = rundata_new_heads(c, 2, 16, 2, 2), *one = rundata_new(c, 2, 16),
			*shifted = rundata_new(c, 2, 16);
		cr_assert_eq(rundata_draw(two, s, NULL, 0, msg, sizeof msg), 0, "%s", msg);
		cr_assert_eq(rundata_draw(one, s, NULL, 0, msg, sizeof msg), 0, "%s", msg);
		cr_assert_eq(rundata_draw(shifted, s + 7919, NULL, 0, msg, sizeof msg), 0, "%s", msg);
		int same0 = 1, same1 = 0, heads_same = 1;
		for (int r = 0; r < 2; r++)
			for (int j = 0; j < 16; j++) {
				same0 &= head_x(two, 0, r, j) == head_x(one, 0, r, j);
				same1 += head_x(two, 1, r, j) == head_x(shifted, 0, r, j);
				heads_same &= head_x(two, 0, r, j) == head_x(two, 1, r, j);
			}
		cr_expect(same0, "seed %d: head 0 is not the run without heads", (int)s);
		cr_expect_lt(same1, 4, "seed %d: head 1 draws %d of 32 values as seed %d at head 0", (int)s, same1,
			     (int)s + 7919);
		cr_expect_not(heads_same, "seed %d: both heads drew the same", (int)s);
		rundata_free(two);
		rundata_free(one);
		rundata_free(shifted);
	}
	spec_carrier_free(c);
	for (uint64_t s = 1; s <= 64; s++)
		for (uint64_t b = 1; b <= 4; b++) {
			cr_expect_neq(rng_seed_at(s, RNG_RUN_SEQUENCE, b), s + 104729 * b);
			cr_expect_neq(rng_seed_at(s, RNG_RUN_SEQUENCE, b), rng_seed_at(s + 104729, RNG_RUN_SEQUENCE, b - 1));
			cr_expect_neq(rng_seed_at(s, RNG_RUN_HEAD, b), rng_seed_at(s, RNG_RUN_HEAD, b - 1));
		}
	cr_expect_eq(rng_seed_at(5, RNG_RUN_SEQUENCE, 0), 5, "sequence 0 draws at the seed itself");
}

/* Rows of mean 1e4 and spread 1 (1e4 plus 0..10 in steps of 1/16): the
 * naive float32 two-pass variance rounds each x into a sum past 2^30 and
 * is off by tens of times the variance, so its tolerance would pass a
 * variance 20 times too large; run says so beside the figures.  Rows of
 * mean 0 say nothing, nor does a running mean that crosses 0. */
Test(run, a_tolerance_past_the_outputs_size_is_said)
{
	Carrier *c = load_ok("specs/welford.yaml");
	for (int shifted = 0; shifted < 2; shifted++) {
		RunData *d = rundata_new(c, 2, 200003);
		float *x = d->elem[0].p;
		for (size_t k = 0; k < (size_t)2 * 200003; k++)
			x[k] = (shifted ? 1e4f : 0) + (float)((k * 2654435761u) % 161) / 16;
		interp_run(d);
		float *var = d->fin[1].p;
		var[1] *= 20;
		RunCheck rc;
		runcheck_run(d, &rc);
		cr_assert_str_eq(rc.out[1].name, "var");
		char notes[512];
		runcheck_notes(&rc.out[1], notes, sizeof notes);
		char mnotes[512];
		runcheck_notes(&rc.out[0], mnotes, sizeof mnotes);
		if (shifted) {
			cr_expect_gt(rc.out[1].naive_worst, 10 * rc.out[1].want_scale, "%s", notes);
			cr_expect(strstr(notes, "the naive float32 reference is off by up to") &&
					  strstr(notes, "times the output's largest value (at flat index"),
				  "%s", notes);
		} else {
			cr_expect(!strstr(notes, "naive float32"), "%s", notes);
			cr_expect_gt(rc.out[1].worst_ratio, 1, "var 20 times too large, mean 0");
		}
		cr_expect(!strstr(mnotes, "naive float32"), "mean: %s", mnotes);
		runcheck_free(&rc);
		rundata_free(d);
	}
	spec_carrier_free(c);
}

/* A decayed running mean merged as a.mu + (b.mu - a.mu) * r counts a.mu's
 * running bound twice a position: at 1000 positions that bound passed
 * 1e185 times the values while the naive fold was off by 3e-7.  run says
 * it is the bound, not the naive value, that is lost. */
Test(run, a_running_bound_past_the_values_is_said_as_such)
{
	Carrier *c = text_ok("carrier: ema_mean\nelement: {g: f32, x: f32}\nassume: g >= 0 && g <= 1\n"
			     "state: {d: f32, w: f32, mu: f32}\nidentity: {d: 1, w: 0, mu: 0}\n"
			     "lift: {d: g, w: 1, mu: x}\nmerge:\n  let:\n    wa: a.w * b.d\n  d: a.d * b.d\n"
			     "  w: wa + b.w\n  mu: where(w == 0, 0, a.mu + (b.mu - a.mu) * (b.w / w))\n"
			     "finalize: {mu: mu, w: w}\ntemplate: scan\n");
	RunData *d = drawn(c, 2, 1000);
	interp_run(d);
	RunCheck rc;
	runcheck_run(d, &rc);
	cr_assert_str_eq(rc.out[0].name, "mu");
	cr_expect(rc.ok, "drawn and run in the interpreter");
	char notes[512];
	runcheck_notes(&rc.out[0], notes, sizeof notes);
	cr_expect(strstr(notes, ", the running error bound of the naive float32 reference reaches ") &&
			  !strstr(notes, "is off by"),
		  "%s", notes);
	cr_expect_lt(rc.out[0].naive_worst, 1e-5 * rc.out[0].want_scale, "the naive fold itself is close");
	runcheck_free(&rc);
	rundata_free(d);
	spec_carrier_free(c);
}

/* Without a reference, an output is held to the carrier folded left to
 * right in float64, which converts f32(k) of an integer as the carrier
 * does: 16777216 and 16777217 tie there as on the device, and the left
 * one is kept (unrounded, the float64 fold kept 16777217 and failed the
 * interpreter's own left fold by 1). */
Test(run, a_float64_fold_rounds_the_carriers_conversions)
{
	static const double k[2][4] = {{16777216, 16777217, 5, 7}, {16777217, 16777216, 1, 2}};
	Carrier *c = load_ok("tests/prove/i32_order_through_f32.yaml");
	RunData *d = rundata_new(c, 2, 4);
	for (int i = 0; i < 8; i++)
		run_buffer_set(&d->elem[0], i, k[i / 4][i % 4]);
	device_run("interp", d);
	cr_expect_eq(run_buffer_get(&d->fin[0], 0), 16777216);
	cr_expect_eq(run_buffer_get(&d->fin[0], 1), 16777217);
	expect_reference(d, "interp");
	rundata_free(d);
	spec_carrier_free(c);
}

static void same_check(const RunCheck *x, const RunCheck *y, const char *what)
{
	cr_assert_eq(x->nout, y->nout, "%s", what);
	cr_expect_eq(x->ok, y->ok, "%s", what);
	for (int o = 0; o < x->nout; o++) {
		const OutCheck *a = &x->out[o], *b = &y->out[o];
		cr_expect_str_eq(a->name, b->name, "%s", what);
		cr_expect(a->worst_ratio == b->worst_ratio && a->max_abs == b->max_abs && a->at == b->at &&
				  a->nan_mismatch == b->nan_mismatch && a->compared == b->compared &&
				  a->naive_worst == b->naive_worst && a->bound_worst == b->bound_worst,
			  "%s: %s: %g of tolerance at %zu, alone %g at %zu", what, a->name, a->worst_ratio, a->at,
			  b->worst_ratio, b->at);
	}
}

/* One RunChecker over runs of one carrier at other shapes, heads and
 * param values, a wrong output among them, gives each run the check
 * runcheck_run gives it alone: nothing of a run stays in the machine. */
Test(run, one_checker_checks_runs_as_each_alone)
{
	Carrier *c = load_ok("specs/attention.yaml");
	static const struct {
		int rows, len, heads, kv_heads;
		double scale;
		int spoil;
	} runs[] = {{3, 33, 1, 1, 0.125, 0}, {2, 0, 1, 1, 0.5, 0}, {1, 70, 4, 2, 2.0, 1}, {4, 31, 2, 1, -0.25, 0},
		    {3, 33, 1, 1, 0.125, 0}};
	RunChecker *k = runchecker_new(c);
	for (size_t r = 0; r < sizeof runs / sizeof *runs; r++) {
		RunData *d = rundata_new_heads(c, runs[r].rows, runs[r].len, runs[r].heads, runs[r].kv_heads);
		char msg[200], what[64];
		cr_assert_eq(rundata_draw(d, 3 + r, NULL, 0, msg, sizeof msg), 0, "%s", msg);
		d->params[0] = runs[r].scale;
		interp_run(d);
		if (runs[r].spoil)
			((float *)d->fin[0].p)[5] += 0.01f;
		RunCheck shared, alone;
		runchecker_run(k, d, &shared);
		runcheck_run(d, &alone);
		snprintf(what, sizeof what, "run %zu", r);
		same_check(&shared, &alone, what);
		cr_expect_eq(shared.ok, !runs[r].spoil, "%s", what);
		runcheck_free(&shared);
		runcheck_free(&alone);
		rundata_free(d);
	}
	runchecker_free(k);
	spec_carrier_free(c);
}

/* A checker that keeps rows (runchecker_keep) takes each row's reference
 * and folds from the run before where the inputs are the same, whatever
 * the outputs (a wrong one first, whose check folds the rows, then right
 * ones, then a wrong map output), and evaluates them again where an
 * element, a column or a param differs: each check is the one
 * runcheck_run gives alone. */
Test(run, a_kept_checker_reuses_rows_of_the_same_inputs)
{
	static const char *const specs[] = {"specs/attention.yaml", "specs/online_softmax.yaml"};
	for (int s = 0; s < 2; s++) {
		Carrier *c = load_ok(specs[s]);
		int att = s == 0, heads = att ? 4 : 1, rows = 3;
		RunData *d = rundata_new_heads(c, rows, 37, heads, att ? 2 : 1);
		char msg[200], what[96];
		cr_assert_eq(rundata_draw(d, 5, NULL, 0, msg, sizeof msg), 0, "%s", msg);
		interp_run(d);
		RunChecker *k = runchecker_new(c);
		runchecker_keep(k);
		/* 0: a wrong lse or out, 1: right, 2: right again, 3: a wrong map
		 * output (softmax) or out, 4: an input changed, 5: a param (attention)
		 * or another element changed */
		for (int step = 0; step < 6; step++) {
			Buffer *b = att ? &d->fin[0] : step == 3 ? &d->map[0] : &d->fin[0];
			float *spoilt = (float *)b->p + (b == &d->fin[0] ? 1 : 5), was = *spoilt;
			if (step == 0 || step == 3)
				*spoilt += 1;
			if (step == 4) {
				Buffer *in = att ? &d->col[0] : &d->elem[0];
				run_buffer_set(in, 7, run_buffer_get(in, 7) + 0.5);
			}
			if (step == 5) {
				if (att)
					d->params[0] *= 2;
				else
					run_buffer_set(&d->elem[0], 40, 3.0);
			}
			if (step >= 4)
				interp_run(d);
			RunCheck kept, alone;
			runchecker_run(k, d, &kept);
			runcheck_run(d, &alone);
			snprintf(what, sizeof what, "%s step %d", specs[s], step);
			same_check(&kept, &alone, what);
			cr_expect_eq(kept.ok, step != 0 && step != 3, "%s", what);
			int want = step == 0 || step >= 4 ? 0 : rows * heads;
			cr_expect_eq(runchecker_reused(k), want, "%s: %d rows reused", what, runchecker_reused(k));
			runcheck_free(&kept);
			runcheck_free(&alone);
			*spoilt = was;
		}
		runchecker_free(k);
		rundata_free(d);
		spec_carrier_free(c);
	}
}

/* A RunChecker is for its own carrier's runs: another's is a fault of the
 * caller, stopped before it reads the run through the wrong programs. */
Test(run, a_checker_refuses_another_carriers_run, .signal = SIGABRT)
{
	Carrier *a = load_ok("specs/online_softmax.yaml"), *b = load_ok("specs/online_softmax.yaml");
	RunChecker *k = runchecker_new(a);
	RunData *d = drawn(b, 1, 4);
	RunCheck rc;
	runchecker_run(k, d, &rc);
}
