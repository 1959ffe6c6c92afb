/* test_lib.c: the public C API (compiler/lib/assoc.h): a run on caller-owned
 * buffers, introspection, params, misuse (NULL handles, wrong sizes,
 * unknown names) as status codes, and the example program, built and run. */
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dlfcn.h>

#include "compiler/cuda/nvrtc.h"
#include "compiler/devices/emu.h"
#include "compiler/devices/run.h"
#include "compiler/lib/assoc.h"
#include "compiler/lib/libassoc_int.h"
#ifndef ASSOC_NO_MPI
#include "compiler/lib/assoc_mpi.h"
#endif
#include "compiler/llvm/llvm.h"
#include "testutil.h"

static AssocSpec *spec_ok(const char *path)
{
	AssocSpec *s;
	AssocStatus st = assoc_spec_load(&s, path, NULL, 0);
	cr_assert_eq(st, ASSOC_OK, "%s: %s", path, assoc_spec_error(s));
	return s;
}

/* The spec written in text, loaded. */
static AssocSpec *text_spec_ok(const char *text)
{
	AssocSpec *s;
	cr_assert_eq(assoc_spec_load_text(&s, text, strlen(text), NULL, 0), ASSOC_OK, "%s", assoc_spec_error(s));
	return s;
}

/* s compiled for the interpreter, on one thread. */
static AssocKernel *interp_ok(AssocSpec *s)
{
	AssocKernel *k = NULL;
	cr_assert_eq(assoc_compile(s, "interp", 1, &k), ASSOC_OK, "%s", assoc_kernel_error(k));
	return k;
}

Test(lib, layer_norm_with_params_and_columns)
{
	AssocSpec *s = spec_ok("specs/layer_norm.yaml");
	cr_assert_eq(assoc_array_count(s), 6);
	AssocArray a;
	cr_assert_eq(assoc_array_info(s, 0, &a), ASSOC_OK);
	cr_assert_str_eq(a.name, "x");
	cr_assert_str_eq(a.type, "bf16");
	cr_assert_eq(a.role, ASSOC_ELEMENT);
	cr_assert_eq(assoc_array_bytes(s, 0, 3, 10), 3 * 10 * 2);
	cr_assert_eq(assoc_array_bytes(s, 1, 3, 10), 10 * 4, "gamma: a column");
	cr_assert_eq(assoc_array_bytes(s, 3, 3, 10), 3 * 4, "mean: per row");
	cr_assert_eq(assoc_array_bytes(s, 0, (int64_t)1 << 31, (int64_t)1 << 31), (size_t)1 << 63, "no wrap at 2^63");
	cr_assert_eq(assoc_array_bytes(s, 0, (int64_t)1 << 32, (int64_t)1 << 31), SIZE_MAX,
		     "2^64 bytes: SIZE_MAX, not a wrapped 0");
	cr_assert_eq(assoc_array_bytes(s, 0, (int64_t)1 << 40, (int64_t)1 << 40), SIZE_MAX);
	AssocKernel *k;
	cr_assert_eq(assoc_compile(s, "cpu", 2, &k), ASSOC_OK, "%s", assoc_spec_error(s));
	uint16_t x[3][10];
	float gamma[10], beta[10], mean[3], rstd[3], y[3][10];
	for (int r = 0; r < 3; r++)
		for (int j = 0; j < 10; j++)
			x[r][j] = (uint16_t)(0x3f80 + (r * 10 + j) * 0x10); /* bf16 values from 1 up */
	for (int j = 0; j < 10; j++)
		gamma[j] = 2, beta[j] = 1;
	AssocBuffer b[] = {{"x", x, sizeof x}, {"gamma", gamma, sizeof gamma}, {"beta", beta, sizeof beta},
			   {"mean", mean, sizeof mean}, {"rstd", rstd, sizeof rstd}, {"y", y, sizeof y}};
	AssocValue eps = {"eps", 1e-5};
	cr_assert_eq(assoc_run(k, 3, 10, b, 6, &eps, 1), ASSOC_OK, "%s", assoc_kernel_error(k));
	double s0 = 0;
	for (int j = 0; j < 10; j++) {
		uint32_t u = (uint32_t)x[0][j] << 16;
		float f;
		memcpy(&f, &u, 4);
		s0 += f;
	}
	cr_assert_float_eq(mean[0], s0 / 10, 1e-5);
	double ysum = 0;
	for (int j = 0; j < 10; j++)
		ysum += y[1][j];
	cr_assert_float_eq(ysum / 10, 1.0, 1e-4, "normalized rows average beta");
	/* params: missing, unknown */
	cr_assert_eq(assoc_run(k, 3, 10, b, 6, NULL, 0), ASSOC_EINVAL);
	cr_assert(strstr(assoc_kernel_error(k), "param 'eps' given 0 times"), "%s", assoc_kernel_error(k));
	AssocValue two[] = {{"eps", 1e-5}, {"temperature", 1}};
	cr_assert_eq(assoc_run(k, 3, 10, b, 6, two, 2), ASSOC_EINVAL);
	cr_assert(strstr(assoc_kernel_error(k), "no param 'temperature'"), "%s", assoc_kernel_error(k));
	assoc_kernel_free(k);
	assoc_spec_free(s);
}

/* An f8e4m3 input is a byte an element: its info says so, its size counts
 * one byte each, and a run reads the bytes as E4M3 patterns (0x38 is 1,
 * 0x40 2, 0x01 the least subnormal 2^-9, 0xb8 -1). */
Test(lib, f8e4m3_inputs_are_bytes)
{
	static const char text[] = "carrier: sum8\nelement: {x: f8e4m3}\nstate: {s: f32}\nidentity: {s: 0}\n"
				   "lift: {s: x}\nmerge: {s: a.s + b.s}\nfinalize: {out: s}\nreference: {out: sum(x)}\n"
				   "laws: [commutative]\n";
	AssocSpec *s;
	cr_assert_eq(assoc_spec_load_text(&s, text, sizeof text - 1, NULL, 0), ASSOC_OK, "%s", assoc_spec_error(s));
	AssocArray a;
	cr_assert_eq(assoc_array_info(s, 0, &a), ASSOC_OK);
	cr_assert_str_eq(a.type, "f8e4m3");
	cr_assert_eq(assoc_array_bytes(s, 0, 2, 3), 6);
	AssocKernel *k;
	cr_assert_eq(assoc_compile(s, "cpu", 1, &k), ASSOC_OK, "%s", assoc_spec_error(s));
	uint8_t x[2][3] = {{0x38, 0x40, 0x01}, {0xb8, 0x38, 0x7e}};
	float out[2];
	AssocBuffer b[] = {{"x", x, sizeof x}, {"out", out, sizeof out}};
	cr_assert_eq(assoc_run(k, 2, 3, b, 2, NULL, 0), ASSOC_OK, "%s", assoc_kernel_error(k));
	cr_expect_eq(out[0], 3 + 0x1p-9f);
	cr_expect_eq(out[1], 448);
	AssocBuffer shortb[] = {{"x", x, 5}, {"out", out, sizeof out}};
	cr_expect_eq(assoc_run(k, 2, 3, shortb, 2, NULL, 0), ASSOC_ESIZE);
	assoc_kernel_free(k);
	assoc_spec_free(s);
}

static uint16_t bf16_of(float f) /* round to nearest even */
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

static double of_bf16(uint16_t b)
{
	uint32_t u = (uint32_t)b << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

/* Causal attention through assoc_run_heads: 8 query heads on 2 key/value
 * heads, against a float64 loop over the same bf16 inputs; the rows of a
 * key/value head's query heads run side by side (3 a head: a group across
 * heads, whose i must be the row within its head), and decoding (one row
 * a head) compiles the narrower kernel.  Per head, assoc_run on the head's
 * own slices gives the same.  Heads not a multiple of kv_heads, and
 * columns sized for every query head, are refused. */
Test(lib, heads_share_key_value_heads, .timeout = 120)
{
	enum { H = 8, KV = 2, D = 16, MAXR = 3, MAXL = 2000 };
	AssocValue dims[] = {{"d", D}, {"dv", D}};
	AssocSpec *s;
	cr_assert_eq(assoc_spec_load(&s, "tests/attention/causal_bf16.yaml", dims, 2), ASSOC_OK, "%s", assoc_spec_error(s));
	cr_assert_eq(assoc_array_bytes_heads(s, 0, H, KV, 3, 50), (size_t)KV * 50 * D * 2, "k: a key/value head each");
	cr_assert_eq(assoc_array_bytes_heads(s, 2, H, KV, 3, 50), (size_t)H * 3 * D * 2, "q: a query head each");
	cr_assert_eq(assoc_array_bytes_heads(s, 2, 6, 4, 3, 50), 0, "6 heads on 4");
	cr_assert_eq(assoc_array_bytes_heads(s, 2, (int64_t)1 << 62, 1, 1 << 30, 50), SIZE_MAX);
	AssocKernel *k;
	cr_assert_eq(assoc_compile(s, "cpu", 2, &k), ASSOC_OK, "%s", assoc_spec_error(s));
	static uint16_t q[H][MAXR][D], kk[KV][MAXL][D], v[KV][MAXL][D];
	static float o[H][MAXR][D], lse[H][MAXR], o1[MAXR][D], lse1[MAXR];
	uint64_t rng = 1;
	for (size_t t = 0; t < sizeof q / 2 + 2 * sizeof kk / 2; t++) {
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		uint16_t b = bf16_of((float)((double)(rng >> 11) / (double)(1ull << 53) * 2 - 1));
		if (t < sizeof q / 2)
			(&q[0][0][0])[t] = b;
		else if (t < sizeof q / 2 + sizeof kk / 2)
			(&kk[0][0][0])[t - sizeof q / 2] = b;
		else
			(&v[0][0][0])[t - sizeof q / 2 - sizeof kk / 2] = b;
	}
	const double scale = 0.7;
	AssocValue par = {"scale", scale};
	static const int shape[][2] = {{3, 50}, {1, 2000}};
	for (int sh = 0; sh < 2; sh++) {
		int rows = shape[sh][0], len = shape[sh][1];
		/* the arrays packed for this shape */
		static uint16_t qp[H * MAXR * D], kp[KV * MAXL * D], vp[KV * MAXL * D];
		for (int h = 0; h < H; h++)
			for (int i = 0; i < rows; i++)
				memcpy(&qp[((size_t)h * rows + i) * D], q[h][i], sizeof q[h][i]);
		for (int g = 0; g < KV; g++)
			for (int j = 0; j < len; j++) {
				memcpy(&kp[((size_t)g * len + j) * D], kk[g][j], sizeof kk[g][j]);
				memcpy(&vp[((size_t)g * len + j) * D], v[g][j], sizeof v[g][j]);
			}
		memset(o, 0xff, sizeof o);
		AssocBuffer b[] = {{"q", qp, (size_t)H * rows * D * 2}, {"k", kp, (size_t)KV * len * D * 2},
				   {"v", vp, (size_t)KV * len * D * 2}, {"out", o, (size_t)H * rows * D * 4},
				   {"lse", lse, (size_t)H * rows * 4}};
		cr_assert_eq(assoc_run_heads(k, H, KV, rows, len, b, 5, &par, 1), ASSOC_OK, "%s", assoc_kernel_error(k));
		float *of = (float *)o, *lf = (float *)lse;
		for (int h = 0; h < H; h++)
			for (int i = 0; i < rows; i++) {
				int g = h / (H / KV);
				double m = -INFINITY, l = 0, acc[D] = {0}, sc[MAXL];
				for (int j = 0; j <= i && j < len; j++) {
					double dot = 0;
					for (int c = 0; c < D; c++)
						dot += of_bf16(q[h][i][c]) * of_bf16(kk[g][j][c]);
					sc[j] = dot * scale;
					m = sc[j] > m ? sc[j] : m;
				}
				for (int j = 0; j <= i && j < len; j++) {
					double p = exp(sc[j] - m);
					l += p;
					for (int c = 0; c < D; c++)
						acc[c] += p * of_bf16(v[g][j][c]);
				}
				size_t at = (size_t)h * rows + i;
				cr_expect(fabs(lf[at] - (m + log(l))) < 1e-5, "%d x %d, head %d row %d: lse %g, not %g", rows, len, h,
					  i, lf[at], m + log(l));
				for (int c = 0; c < D; c++)
					cr_expect(fabs(of[at * D + c] - acc[c] / l) < 1e-5, "%d x %d, head %d row %d: out[%d] %g, not %g",
						  rows, len, h, i, c, of[at * D + c], acc[c] / l);
			}
		/* a head alone on its slices: the same results */
		for (int h = 0; h < H; h += 3) {
			int g = h / (H / KV);
			AssocBuffer b1[] = {{"q", &qp[(size_t)h * rows * D], (size_t)rows * D * 2},
					    {"k", &kp[(size_t)g * len * D], (size_t)len * D * 2},
					    {"v", &vp[(size_t)g * len * D], (size_t)len * D * 2},
					    {"out", o1, (size_t)rows * D * 4},
					    {"lse", lse1, (size_t)rows * 4}};
			cr_assert_eq(assoc_run(k, rows, len, b1, 5, &par, 1), ASSOC_OK, "%s", assoc_kernel_error(k));
			for (int i = 0; i < rows; i++) {
				cr_expect(fabsf(lse1[i] - lf[(size_t)h * rows + i]) < 1e-5f);
				for (int c = 0; c < D; c++)
					cr_expect(fabsf(o1[i][c] - of[((size_t)h * rows + i) * D + c]) < 1e-5f);
			}
		}
	}
	AssocBuffer b[] = {{"q", q, (size_t)H * 3 * D * 2}, {"k", kk, (size_t)H * 50 * D * 2}, {"v", v, (size_t)KV * 50 * D * 2},
			   {"out", o, (size_t)H * 3 * D * 4}, {"lse", lse, (size_t)H * 3 * 4}};
	cr_expect_eq(assoc_run_heads(k, 6, 4, 3, 50, b, 5, &par, 1), ASSOC_EINVAL);
	cr_expect(strstr(assoc_kernel_error(k), "6 heads on 4 key/value heads"), "%s", assoc_kernel_error(k));
	cr_expect_eq(assoc_run_heads(k, H, KV, 3, 50, b, 5, &par, 1), ASSOC_ESIZE);
	cr_expect(strstr(assoc_kernel_error(k), "buffer 'k' has 12800 bytes; the shape needs 3200"), "%s",
		  assoc_kernel_error(k));
	/* the buffers are checked before anything sized by the heads is allocated */
	cr_expect_eq(assoc_run_heads(k, INT32_MAX, INT32_MAX, 1, 50, b, 5, &par, 1), ASSOC_ESIZE);
	cr_expect(strstr(assoc_kernel_error(k), "buffer 'k' has 12800 bytes; the shape needs "), "%s", assoc_kernel_error(k));
	assoc_kernel_free(k);
	assoc_spec_free(s);
}

Test(lib, misuse_gives_status_codes)
{
	cr_assert_eq(assoc_spec_load(NULL, "specs/sum.yaml", NULL, 0), ASSOC_EINVAL);
	AssocSpec *s = (AssocSpec *)1;
	cr_assert_eq(assoc_spec_load(&s, NULL, NULL, 0), ASSOC_EINVAL);
	cr_assert_null(s, "a refused load leaves a handle that can be freed (NULL), not what was there");
	s = (AssocSpec *)1;
	cr_assert_eq(assoc_spec_load_text(&s, "x", 1, NULL, -1), ASSOC_EINVAL);
	cr_assert_null(s);
	/* a length past a spec's 1 MiB (SIZE_MAX for "count it yourself"),
	 * refused before a byte is copied: len + 1 would wrap to 0 */
	const size_t lens[] = {SIZE_MAX, SIZE_MAX - 1, (1 << 20) + 1};
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(assoc_spec_load_text(&s, "carrier: x", lens[i], NULL, 0), ASSOC_ESPEC, "%zu", lens[i]);
		cr_expect(strstr(assoc_spec_error(s), "spec: error: file is larger than 1 MiB"), "%s", assoc_spec_error(s));
		assoc_spec_free(s);
	}
	cr_assert_eq(assoc_array_count(NULL), 0);
	cr_assert_eq(assoc_array_info(NULL, 0, NULL), ASSOC_EINVAL);
	cr_assert_eq(assoc_array_bytes(NULL, 0, 1, 1), 0);
	cr_assert_eq(assoc_spec_check(NULL, 10, 1), ASSOC_EINVAL);
	AssocKernel *k = (AssocKernel *)1;
	cr_assert_eq(assoc_compile(NULL, "cpu", 1, &k), ASSOC_EINVAL);
	cr_assert_null(k);
	cr_assert_eq(assoc_run(NULL, 1, 1, NULL, 0, NULL, 0), ASSOC_EINVAL);
	assoc_kernel_free(NULL);
	assoc_spec_free(NULL);
	cr_assert_str_eq(assoc_strerror(ASSOC_ESIZE), "buffer size does not fit the shape");
	cr_assert_str_eq(assoc_strerror((AssocStatus)99), "unknown status");

	/* a dim without a name is a NULL pointer (ASSOC_EINVAL), not a spec error */
	s = (AssocSpec *)1;
	cr_assert_eq(assoc_spec_load(&s, "specs/attention.yaml", (AssocValue[]){{NULL, 64}}, 1), ASSOC_EINVAL);
	cr_assert_null(s);

	s = spec_ok("specs/sum.yaml");
	cr_assert_eq(assoc_spec_check(s, -1, 1), ASSOC_EINVAL, "negative trials are refused, not taken as the default");
	cr_assert(strstr(assoc_spec_error(s), "trials must be 0 (the default) or more, got -1"), "%s", assoc_spec_error(s));
	cr_assert_eq(assoc_compile(s, "tpu", 1, &k), ASSOC_EDEVICE);
	cr_assert(strstr(assoc_kernel_error(k), "unknown device 'tpu'"), "the handle keeps why: %s", assoc_kernel_error(k));
	cr_assert(strstr(assoc_spec_error(s), "unknown device 'tpu'"), "%s", assoc_spec_error(s));
	cr_assert_eq(assoc_run(k, 1, 1, NULL, 0, NULL, 0), ASSOC_EINVAL, "a failed compile runs nothing");
	cr_assert(strstr(assoc_kernel_error(k), "unknown device 'tpu'"), "and keeps its reason: %s", assoc_kernel_error(k));
	assoc_kernel_free(k);
	cr_assert_eq(assoc_compile(s, "cpu", 1, NULL), ASSOC_EINVAL);
	cr_assert_eq(assoc_compile(s, "cpu", -1, &k), ASSOC_EINVAL);
	assoc_kernel_free(k);
	cr_assert_eq(assoc_compile(s, "cpu", 100000, &k), ASSOC_EINVAL, "not 100000 threads started");
	cr_assert(strstr(assoc_kernel_error(k), "threads must be 0 (every core) to 1024, got 100000"), "%s",
		  assoc_kernel_error(k));
	assoc_kernel_free(k);
	cr_assert_eq(assoc_compile(s, "cpu", 1, &k), ASSOC_OK);
	float x[12], out[3];
	AssocBuffer good[] = {{"x", x, sizeof x}, {"s", out, sizeof out}};
	AssocBuffer small[] = {{"x", x, sizeof x - 4}, {"s", out, sizeof out}};
	AssocBuffer noname[] = {{NULL, x, sizeof x}, {"s", out, sizeof out}};
	AssocBuffer twice[] = {{"x", x, sizeof x}, {"x", x, sizeof x}};
	AssocBuffer nodata[] = {{"x", NULL, sizeof x}, {"s", out, sizeof out}};
	AssocBuffer extra[] = {{"x", x, sizeof x}, {"s", out, sizeof out}, {"t", out, 4}};
	cr_assert_eq(assoc_run(k, 3, 4, small, 2, NULL, 0), ASSOC_ESIZE);
	cr_assert(strstr(assoc_kernel_error(k), "buffer 'x' has 44 bytes; the shape needs 48 (12 f32 values)"), "%s",
		  assoc_kernel_error(k));
	cr_assert_eq(assoc_run(k, 3, 4, noname, 2, NULL, 0), ASSOC_EINVAL);
	cr_assert_eq(assoc_run(k, 3, 4, twice, 2, NULL, 0), ASSOC_EINVAL);
	cr_assert_eq(assoc_run(k, 3, 4, nodata, 2, NULL, 0), ASSOC_EINVAL, "a NULL pointer, as assoc.h says");
	cr_assert(strstr(assoc_kernel_error(k), "buffer 'x' has no data (a NULL pointer)"), "%s", assoc_kernel_error(k));
	cr_assert_eq(assoc_run(k, 3, 4, extra, 3, NULL, 0), ASSOC_EINVAL);
	cr_assert(strstr(assoc_kernel_error(k), "buffer 't' names no array of carrier sum (its arrays: x, s)"), "%s",
		  assoc_kernel_error(k));
	AssocBuffer misspelt[] = {{"X", x, sizeof x}, {"s", out, sizeof out}};
	cr_assert_eq(assoc_run(k, 3, 4, misspelt, 2, NULL, 0), ASSOC_EINVAL);
	cr_assert(strstr(assoc_kernel_error(k), "buffer 'X' names no array of carrier sum (did you mean 'x'?)"), "%s",
		  assoc_kernel_error(k));
	cr_assert_eq(assoc_run(k, 3, 4, good, 1, NULL, 0), ASSOC_EINVAL, "s missing");
	/* a bad shape or buffer list says which it is, and the bound */
	cr_assert_eq(assoc_run(k, -1, 4, good, 2, NULL, 0), ASSOC_EINVAL);
	cr_assert(strstr(assoc_kernel_error(k), "shape -1 rows x 4 positions: rows and len run from 0 to 2^31 - 1"),
		  "%s", assoc_kernel_error(k));
	cr_assert_eq(assoc_run(k, 3, (int64_t)1 << 31, good, 2, NULL, 0), ASSOC_EINVAL);
	cr_assert(strstr(assoc_kernel_error(k), "shape 3 rows x 2147483648 positions: "), "%s", assoc_kernel_error(k));
	cr_assert_eq(assoc_run(k, 3, 4, NULL, 2, NULL, 0), ASSOC_EINVAL);
	cr_assert(strstr(assoc_kernel_error(k), "2 buffers with a NULL buffer array"), "%s", assoc_kernel_error(k));
	cr_assert_eq(assoc_run(k, 3, 4, good, -2, NULL, 0), ASSOC_EINVAL);
	cr_assert(strstr(assoc_kernel_error(k), "-2 buffers (a count under 0)"), "%s", assoc_kernel_error(k));
	/* each refusal says its own why, not the one before it */
	cr_assert_eq(assoc_run(k, 3, 4, good, 2, NULL, 1), ASSOC_EINVAL);
	cr_assert(strstr(assoc_kernel_error(k), "1 params with a NULL params array"), "%s", assoc_kernel_error(k));
	for (int i = 0; i < 12; i++)
		x[i] = (float)i;
	cr_assert_eq(assoc_run(k, 3, 4, good, 2, NULL, 0), ASSOC_OK, "%s", assoc_kernel_error(k));
	cr_assert_eq(out[2], 8 + 9 + 10 + 11);
	cr_assert_eq(assoc_run(k, 0, 4, (AssocBuffer[]){{"x", NULL, 0}, {"s", NULL, 0}}, 2, NULL, 0), ASSOC_OK,
		     "no rows: nothing to do");
	assoc_kernel_free(k);
	assoc_spec_free(s);
}

/* A paged batch's bad count, NULL array or buffer list says which it
 * is, before anything is read, and a buffer of the wrong size the layout
 * it takes with its sizes. */
Test(lib, paged_batch_refusals_name_the_field)
{
	AssocSpec *s = spec_ok("specs/attention.yaml");
	AssocKernel *k;
	cr_assert_eq(assoc_compile(s, "interp", 1, &k), ASSOC_OK, "%s", assoc_kernel_error(k));
	static const int32_t table[2] = {0, 1}, lens[2] = {3, 4};
	float out[4];
	AssocBuffer b[] = {{"out", out, sizeof out}};
	AssocValue scale = {"scale", 0.125};
	static const struct {
		AssocPaged pg;
		int nbufs;
		const char *says;
	} bad[] = {
		{{.batch = 0, .page_size = 16, .pages = 2, .max_pages = 1, .block_table = table, .seq_lens = lens}, 1,
		 "batch 0: a paged batch holds 1 to 2^24 sequences"},
		{{.batch = 2, .page_size = 16, .pages = 0, .max_pages = 1, .block_table = table, .seq_lens = lens}, 1,
		 "pages 0: the pool holds 1 to "},
		{{.batch = 2, .page_size = 16, .pages = 2, .max_pages = -1, .block_table = table, .seq_lens = lens}, 1,
		 "max_pages -1: a block table row holds 1 to "},
		{{.batch = 2, .page_size = 16, .pages = 2, .max_pages = 1, .block_table = table, .seq_lens = lens,
		  .rows = -2},
		 1, "rows -2: the queries of each sequence, from 0 to 2^31 - 1"},
		{{.batch = 2, .page_size = 16, .pages = 2, .max_pages = 1, .block_table = table}, 1,
		 "a paged batch needs block_table and seq_lens (seq_lens is NULL)"},
		{{.batch = 2, .page_size = 16, .pages = 2, .max_pages = 1, .seq_lens = lens}, 1,
		 "(block_table is NULL)"},
		{{.batch = 2, .page_size = 16, .pages = 2, .max_pages = 1, .block_table = table, .seq_lens = lens}, -1,
		 "-1 buffers (a count under 0)"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		cr_expect_eq(assoc_run_paged(k, 1, 1, &bad[i].pg, b, bad[i].nbufs, &scale, 1), ASSOC_EINVAL, "%zu", i);
		cr_expect(strstr(assoc_kernel_error(k), bad[i].says), "%zu: %s", i, assoc_kernel_error(k));
	}
	cr_expect_eq(assoc_run_paged(k, 1, 1, &bad[0].pg, NULL, 2, &scale, 1), ASSOC_EINVAL);
	cr_expect(strstr(assoc_kernel_error(k), "2 buffers with a NULL buffer array"), "%s", assoc_kernel_error(k));
	/* q of 6 rows where the offsets end at 5: the sizes and where rows come from */
	static const int32_t cu[3] = {0, 2, 5};
	static uint16_t q[6 * 64];
	AssocPaged varlen = {.batch = 2, .page_size = 16, .pages = 2, .max_pages = 1, .block_table = table,
			     .seq_lens = lens, .cu_seqlens_q = cu};
	cr_expect_eq(assoc_run_paged(k, 1, 1, &varlen, (AssocBuffer[]){{"q", q, sizeof q}}, 1, &scale, 1), ASSOC_ESIZE);
	cr_expect(strstr(assoc_kernel_error(k), "buffer 'q' holds 768 bytes; it takes 640: [rows][heads][width] = "
						"[5][1][64] of f16 (rows: cu_seqlens_q[2])"),
		  "%s", assoc_kernel_error(k));
	assoc_kernel_free(k);
	assoc_spec_free(s);
}

/* A kernel keeps its spec: freed first, the spec stays for the kernel's
 * runs (under ASan, a run reading a freed carrier fails the test), and
 * goes with the kernel; a failed compile's handle keeps it the same. */
Test(lib, a_kernel_outlives_its_freed_spec)
{
	AssocSpec *s = spec_ok("specs/sum.yaml");
	AssocKernel *k, *bad;
	cr_assert_eq(assoc_compile(s, "cpu", 1, &k), ASSOC_OK, "%s", assoc_kernel_error(k));
	cr_assert_eq(assoc_compile(s, "tpu", 1, &bad), ASSOC_EDEVICE);
	assoc_spec_free(s);
	float x[6] = {1, 2, 3, 4, 5, 6}, out[2] = {0};
	AssocBuffer b[] = {{"x", x, sizeof x}, {"s", out, sizeof out}};
	cr_assert_eq(assoc_run(k, 2, 3, b, 2, NULL, 0), ASSOC_OK, "%s", assoc_kernel_error(k));
	cr_assert_eq(out[0], 6);
	cr_assert_eq(out[1], 15);
	cr_assert(strstr(assoc_kernel_error(bad), "unknown device 'tpu'"), "%s", assoc_kernel_error(bad));
	assoc_kernel_free(bad);
	AssocBuffer misspelt[] = {{"X", x, sizeof x}, {"s", out, sizeof out}};
	cr_assert_eq(assoc_run(k, 2, 3, misspelt, 2, NULL, 0), ASSOC_EINVAL);
	cr_assert(strstr(assoc_kernel_error(k), "names no array of carrier sum"), "%s", assoc_kernel_error(k));
	assoc_kernel_free(k);
}

/* An output sharing memory with an input or another output is refused on
 * every device, the arrays left as they were: a kernel reads its inputs
 * while it writes its outputs, in an order of its own.  Arrays of no
 * bytes share nothing. */
Test(lib, outputs_that_overlap_other_arrays_are_refused)
{
	AssocSpec *s = spec_ok("specs/online_softmax.yaml");
	const char *devs[] = {"cpu", "interp"};
	for (int d = 0; d < 2; d++) {
		AssocKernel *k;
		cr_assert_eq(assoc_compile(s, devs[d], 1, &k), ASSOC_OK, "%s", assoc_kernel_error(k));
		float x[2][8], lse[2], y[2][8], keep[2][8];
		for (int i = 0; i < 16; i++)
			x[i / 8][i % 8] = (float)(i % 5);
		memcpy(keep, x, sizeof x);
		AssocBuffer in_place[] = {{"x", x, sizeof x}, {"lse", lse, sizeof lse}, {"y", x, sizeof x}};
		cr_assert_eq(assoc_run(k, 2, 8, in_place, 3, NULL, 0), ASSOC_EINVAL, "%s", devs[d]);
		cr_assert(strstr(assoc_kernel_error(k), "output 'y' overlaps input 'x' in memory"), "%s: %s", devs[d],
			  assoc_kernel_error(k));
		AssocBuffer inside[] = {{"x", x, sizeof x}, {"lse", &x[1][3], sizeof lse}, {"y", y, sizeof y}};
		cr_assert_eq(assoc_run(k, 2, 8, inside, 3, NULL, 0), ASSOC_EINVAL, "%s", devs[d]);
		cr_assert(strstr(assoc_kernel_error(k), "output 'lse' overlaps input 'x'"), "%s", assoc_kernel_error(k));
		AssocBuffer outs[] = {{"x", x, sizeof x}, {"lse", &y[1][7], sizeof lse}, {"y", y, sizeof y}};
		cr_assert_eq(assoc_run(k, 2, 8, outs, 3, NULL, 0), ASSOC_EINVAL, "%s", devs[d]);
		cr_assert(strstr(assoc_kernel_error(k), "output 'lse' overlaps output 'y'"), "%s", assoc_kernel_error(k));
		cr_assert_eq(memcmp(keep, x, sizeof x), 0, "%s: nothing written", devs[d]);
		AssocBuffer apart[] = {{"x", x, sizeof x}, {"lse", lse, sizeof lse}, {"y", y, sizeof y}};
		cr_assert_eq(assoc_run(k, 2, 8, apart, 3, NULL, 0), ASSOC_OK, "%s", assoc_kernel_error(k));
		cr_assert_float_eq(y[0][0] + y[0][1] + y[0][2] + y[0][3] + y[0][4] + y[0][5] + y[0][6] + y[0][7], 1, 1e-5);
		AssocBuffer empty[] = {{"x", x, 0}, {"lse", x, 0}, {"y", x, 0}};
		cr_assert_eq(assoc_run(k, 0, 8, empty, 3, NULL, 0), ASSOC_OK, "%s: %s", devs[d], assoc_kernel_error(k));
		assoc_kernel_free(k);
	}
	assoc_spec_free(s);
}

/* A buffer at an address that is no multiple of its element's size is
 * refused on every device before anything runs: the CUDA kernels load
 * whole elements (the emulator stopped at block 0 with "not 4-byte
 * aligned", a GPU would fault and lose its context).  bf16 takes 2. */
Test(lib, buffers_not_aligned_to_their_elements_are_refused)
{
	AssocSpec *s = spec_ok("specs/online_softmax.yaml");
	const char *devs[] = {"cpu", "interp"};
	_Alignas(16) unsigned char raw[2 * 8 * 4 + 8];
	float lse[2], y[2][8];
	for (int d = 0; d < 2; d++) {
		AssocKernel *k;
		cr_assert_eq(assoc_compile(s, devs[d], 1, &k), ASSOC_OK, "%s", assoc_kernel_error(k));
		lse[0] = lse[1] = -7;
		AssocBuffer b[] = {{"x", raw + 2, 2 * 8 * 4}, {"lse", lse, sizeof lse}, {"y", y, sizeof y}};
		cr_assert_eq(assoc_run(k, 2, 8, b, 3, NULL, 0), ASSOC_EINVAL, "%s", devs[d]);
		cr_assert(strstr(assoc_kernel_error(k), "buffer 'x' at ") &&
				  strstr(assoc_kernel_error(k), "is not aligned to its elements (f32, 4 bytes)"),
			  "%s: %s", devs[d], assoc_kernel_error(k));
		cr_assert(lse[0] == -7 && lse[1] == -7, "%s: nothing written", devs[d]);
		memset(raw, 0, sizeof raw);
		b[0].data = raw + 4;
		cr_assert_eq(assoc_run(k, 2, 8, b, 3, NULL, 0), ASSOC_OK, "%s: %s", devs[d], assoc_kernel_error(k));
		cr_assert_float_eq(lse[1], log(8.0), 1e-6);
		assoc_kernel_free(k);
	}
	assoc_spec_free(s);
	AssocSpec *ln = spec_ok("specs/layer_norm.yaml");
	AssocKernel *k;
	cr_assert_eq(assoc_compile(ln, "cpu", 1, &k), ASSOC_OK, "%s", assoc_kernel_error(k));
	_Alignas(16) uint16_t x[2 * 4 + 1] = {0};
	float gamma[4] = {1, 1, 1, 1}, beta[4] = {0}, mean[2], rstd[2], out[2][4];
	AssocBuffer b[] = {{"x", x + 1, 2 * 4 * 2}, {"gamma", gamma, sizeof gamma}, {"beta", beta, sizeof beta},
			   {"mean", mean, sizeof mean}, {"rstd", rstd, sizeof rstd}, {"y", out, sizeof out}};
	cr_assert_eq(assoc_run(k, 2, 4, b, 6, (AssocValue[]){{"eps", 1e-5}}, 1), ASSOC_OK,
		     "bf16 at 2 bytes: aligned to its elements: %s", assoc_kernel_error(k));
	b[0].data = (char *)(x + 1) + 1;
	cr_assert_eq(assoc_run(k, 2, 4, b, 6, (AssocValue[]){{"eps", 1e-5}}, 1), ASSOC_EINVAL);
	cr_assert(strstr(assoc_kernel_error(k), "(bf16, 2 bytes)"), "%s", assoc_kernel_error(k));
	assoc_kernel_free(k);
	assoc_spec_free(ln);
}

/* The attention kernels (on emu, on a GPU) load 16-bit q, k and v two
 * elements at a time: such a buffer at 2 bytes past a 4-byte boundary is
 * refused before anything runs (the emulator stopped at block 0 with
 * "global load of 4 bytes ... not 4-byte aligned", a GPU would fault),
 * and at 4 bytes past one it runs.  The CPU takes it at 2. */
Test(lib, attention_inputs_of_16_bits_need_4_byte_alignment, .timeout = 120)
{
	char why[256];
	const Device *emu = run_device_find("emu");
	if (!emu || !emu->available(why, sizeof why))
		cr_skip("no emulator here: %s", emu ? why : "not built");
	AssocSpec *s = spec_ok("specs/attention.yaml");
	enum { R = 2, L = 3, D = 64 };
	_Alignas(16) static uint16_t q[R * D], kv[2][L * D + 2];
	float out[R][D], lse[R];
	for (int i = 0; i < R * D; i++)
		q[i] = 0x3c00; /* 1.0 */
	const char *devs[] = {"emu", "cpu"};
	for (int d = 0; d < 2; d++) {
		AssocKernel *k;
		cr_assert_eq(assoc_compile(s, devs[d], 1, &k), ASSOC_OK, "%s", assoc_kernel_error(k));
		for (int shift = 1; shift <= 2; shift++) {
			for (int j = 0; j < L * D; j++)
				kv[0][shift + j] = kv[1][shift + j] = 0x3c00;
			lse[0] = lse[1] = -7;
			AssocBuffer b[] = {{"q", q, sizeof q},
					   {"k", kv[0] + shift, L * D * 2},
					   {"v", kv[1] + shift, L * D * 2},
					   {"out", out, sizeof out},
					   {"lse", lse, sizeof lse}};
			AssocStatus st = assoc_run(k, R, L, b, 5, (AssocValue[]){{"scale", 0.125}}, 1);
			if (d == 0 && shift == 1) {
				cr_assert_eq(st, ASSOC_EINVAL, "k at 2 bytes past 4");
				cr_assert(strstr(assoc_kernel_error(k), "buffer 'k' at ") &&
						  strstr(assoc_kernel_error(k), "is not 4-byte aligned: the attention kernels "
										"load its f16 elements two at a time"),
					  "%s", assoc_kernel_error(k));
				cr_assert(lse[0] == -7 && lse[1] == -7, "nothing written");
				continue;
			}
			cr_assert_eq(st, ASSOC_OK, "%s at %d bytes: %s", devs[d], 2 * shift, assoc_kernel_error(k));
			/* row 1 sees keys 0 and 1, each of score 64 / 8 */
			cr_assert_float_eq(lse[1], 8 + log(2.0), 1e-4, "%s at %d bytes", devs[d], 2 * shift);
			cr_assert_float_eq(out[1][5], 1, 1e-3, "%s at %d bytes", devs[d], 2 * shift);
		}
		assoc_kernel_free(k);
	}
	assoc_spec_free(s);
}

Test(lib, invalid_spec_keeps_its_diagnostic)
{
	AssocSpec *s;
	const char *text = "carrier: bad\nelement: {x: f32}\nstate: {s: f32}\nidentity: {s: 0}\nlift: {s: mod(x)}\n"
			   "merge: {s: a.s + b.s}\n";
	cr_assert_eq(assoc_spec_load_text(&s, text, strlen(text), NULL, 0), ASSOC_ESPEC);
	cr_assert(strstr(assoc_spec_error(s), "unknown function 'mod'"), "%s", assoc_spec_error(s));
	cr_assert_eq(assoc_array_count(s), 0);
	AssocKernel *k;
	cr_assert_eq(assoc_compile(s, "cpu", 1, &k), ASSOC_EINVAL);
	/* a handle that says why, as any failed compile's */
	cr_assert_not_null(k);
	cr_assert(strstr(assoc_kernel_error(k), "the spec did not load: ") &&
			  strstr(assoc_kernel_error(k), "unknown function 'mod'"),
		  "%s", assoc_kernel_error(k));
	cr_assert_null(assoc_kernel_device(k));
	float x[4] = {0}, out[1];
	AssocBuffer b[] = {{"x", x, sizeof x}, {"s", out, sizeof out}};
	cr_assert_eq(assoc_run(k, 1, 4, b, 2, NULL, 0), ASSOC_EINVAL, "it runs nothing");
	assoc_kernel_free(k);
	cr_assert_eq(assoc_spec_check(s, 10, 1), ASSOC_EINVAL);
	cr_assert(strstr(assoc_spec_error(s), "unknown function 'mod'"), "checking keeps the load's diagnostic: %s",
		  assoc_spec_error(s));
	assoc_spec_free(s);
}

/* A loop spec (a step, no merge) does not load: checking or compiling it
 * would run a merge it does not have. */
Test(lib, loop_specs_do_not_load)
{
	AssocSpec *s;
	cr_assert_eq(assoc_spec_load(&s, "specs/loops/welford_update.yaml", NULL, 0), ASSOC_ESPEC);
	cr_assert(strstr(assoc_spec_error(s), "specs/loops/welford_update.yaml: error: a loop spec (a step without a merge): "
					      "'assoc explore specs/loops/welford_update.yaml' derives its merge"),
		  "%s", assoc_spec_error(s));
	cr_assert_eq(assoc_array_count(s), 0);
	AssocKernel *k;
	cr_assert_eq(assoc_compile(s, "cpu", 1, &k), ASSOC_EINVAL);
	cr_assert(k && strstr(assoc_kernel_error(k), "a loop spec"), "%s", assoc_kernel_error(k));
	assoc_kernel_free(k);
	cr_assert_eq(assoc_spec_check(s, 10, 1), ASSOC_EINVAL);
	assoc_spec_free(s);
}

Test(lib, check_laws)
{
	AssocSpec *s = spec_ok("specs/welford.yaml");
	cr_assert_eq(assoc_spec_check(s, 300, 1), ASSOC_OK, "%s", assoc_spec_error(s));
	assoc_spec_free(s);
	const char *bad = "carrier: mean_wrong\nelement: {x: f32}\nstate: {m: f32}\nidentity: {m: 0}\n"
			  "lift: {m: x}\nmerge: {m: (a.m + b.m) / 2}\n";
	cr_assert_eq(assoc_spec_load_text(&s, bad, strlen(bad), NULL, 0), ASSOC_OK);
	cr_assert_eq(assoc_spec_check(s, 300, 1), ASSOC_ELAWS);
	cr_assert(strstr(assoc_spec_error(s), "fails"), "%s", assoc_spec_error(s));
	assoc_spec_free(s);
}

/* A verdict assoc_spec_check reached stands at assoc_compile, failed as
 * well as held: compile does not reach another on its own few trials,
 * which this merge's rare break passes. */
Test(lib, a_failed_check_is_not_compiled)
{
	AssocSpec *s = spec_ok("tests/laws/nan_on_a_product.yaml");
	cr_assert_eq(assoc_spec_check(s, 0, 1), ASSOC_ELAWS);
	AssocKernel *k = NULL;
	cr_assert_eq(assoc_compile(s, "interp", 1, &k), ASSOC_ELAWS, "%s", assoc_kernel_error(k));
	cr_assert(strstr(assoc_kernel_error(k), "not associative"), "%s", assoc_kernel_error(k));
	cr_assert(strstr(assoc_spec_verdict(s), "FAILED"), "%s", assoc_spec_verdict(s));
	assoc_kernel_free(k);
	/* trusted, it compiles */
	assoc_spec_trust_merge(s, 1);
	cr_assert_eq(assoc_compile(s, "interp", 1, &k), ASSOC_OK, "%s", assoc_kernel_error(k));
	assoc_kernel_free(k);
	assoc_spec_free(s);
}

/* A merge lawful for some values of a param only: a run at values where
 * it fails runs nothing, naming them, as `assoc run --param` refuses;
 * values that hold run, before and after. */
Test(lib, runs_are_judged_at_their_params, .timeout = 60)
{
	const char *text = "carrier: abs_scaled\nparams: {p: f32}\nelement: {x: f32}\nstate: {s: f32}\n"
			   "identity: {s: 0}\nlift: {s: abs(x) * p}\nmerge: {s: abs(a.s + b.s)}\n"
			   "finalize: {out: s}\nreference: {out: sum(abs(x) * p)}\nlaws: [commutative]\n";
	AssocSpec *s = text_spec_ok(text);
	AssocKernel *k = interp_ok(s);
	float x[8] = {1, -2, 3, -4, 5, -6, 7, -8}, out = 0;
	AssocBuffer b[] = {{"x", x, sizeof x}, {"out", &out, sizeof out}};
	AssocValue good = {"p", 0.5}, bad = {"p", -1};
	cr_assert_eq(assoc_run(k, 1, 8, b, 2, &good, 1), ASSOC_OK, "%s", assoc_kernel_error(k));
	cr_assert_float_eq(out, 18, 1e-5);
	out = 7;
	cr_assert_eq(assoc_run(k, 1, 8, b, 2, &bad, 1), ASSOC_ELAWS);
	cr_assert(strstr(assoc_kernel_error(k), "identity fails") && strstr(assoc_kernel_error(k), "p=-1"), "%s",
		  assoc_kernel_error(k));
	cr_assert_eq(out, 7, "a refused run writes nothing");
	cr_assert_eq(assoc_run(k, 1, 8, b, 2, &good, 1), ASSOC_OK, "%s", assoc_kernel_error(k));
	assoc_kernel_free(k);
#ifndef ASSOC_NO_MPI
	/* an MPI op merges with its params: judged at them as a run is,
	 * before MPI is asked for anything (here it is not initialized) */
	cr_assert_eq(assoc_compile(s, "cpu", 1, &k), ASSOC_OK, "%s", assoc_kernel_error(k));
	AssocMpi *m = (AssocMpi *)1;
	cr_assert_eq(assoc_mpi_kernel(k, &bad, 1, &m), ASSOC_ELAWS);
	cr_assert_null(m);
	cr_assert(strstr(assoc_kernel_error(k), "identity fails") && strstr(assoc_kernel_error(k), "p=-1"), "%s",
		  assoc_kernel_error(k));
	AssocValue typo = {"P", 0.5};
	cr_assert_eq(assoc_mpi_kernel(k, &typo, 1, &m), ASSOC_EINVAL);
	cr_assert(strstr(assoc_kernel_error(k), "the spec has no param 'P'"), "%s", assoc_kernel_error(k));
	cr_assert_eq(assoc_mpi_kernel(k, &good, 1, &m), ASSOC_EINVAL, "lawful: on to MPI, which is not initialized");
	assoc_kernel_free(k);
#endif
	/* trusted: any values run */
	assoc_spec_trust_merge(s, 1);
	cr_assert_eq(assoc_compile(s, "interp", 1, &k), ASSOC_OK, "%s", assoc_kernel_error(k));
	cr_assert_eq(assoc_run(k, 1, 8, b, 2, &bad, 1), ASSOC_OK, "%s", assoc_kernel_error(k));
	assoc_kernel_free(k);
	assoc_spec_free(s);
}

/* A law that fails at a bool param's value names it as a spec writes it
 * (flag=true, not flag=1), beside the others'. */
Test(lib, laws_failing_at_params_name_bools_as_written, .timeout = 60)
{
	const char *text = "carrier: flip\nparams: {flag: bool, k: i32}\nelement: {x: f32}\nstate: {s: f32}\n"
			   "identity: {s: 0}\nlift: {s: x}\nmerge: {s: 'where(flag, a.s - b.s, a.s + b.s) * k'}\n";
	AssocSpec *s = text_spec_ok(text);
	AssocKernel *k = interp_ok(s);
	float x[4] = {1, 2, 3, 4}, out[2] = {0, 0};
	AssocBuffer b[] = {{"x", x, sizeof x}, {"s", out, sizeof out}};
	AssocValue pv[] = {{"flag", 1}, {"k", 1}};
	cr_assert_eq(assoc_run(k, 2, 2, b, 2, pv, 2), ASSOC_ELAWS, "%s", assoc_kernel_error(k));
	cr_expect(strstr(assoc_kernel_error(k), "(with the params at flag=true, k=1)"), "%s", assoc_kernel_error(k));
	pv[0].value = 0;
	cr_expect_eq(assoc_run(k, 2, 2, b, 2, pv, 2), ASSOC_OK, "%s", assoc_kernel_error(k));
	cr_expect(out[0] == 3 && out[1] == 7, "%g %g", out[0], out[1]);
	assoc_kernel_free(k);
	assoc_spec_free(s);
}

/* Params as `assoc run --param` takes them: a misspelt name named, an
 * f32 past its range and an i32 that is no integer refused. */
Test(lib, params_out_of_range_are_refused)
{
	const char *text = "carrier: scaled\nparams: {p: f32, n: i32}\nelement: {x: f32}\nstate: {s: f32}\n"
			   "identity: {s: 0}\nlift: {s: x}\nmerge: {s: a.s + b.s}\nfinalize: {out: s * p + n}\n";
	AssocSpec *s = text_spec_ok(text);
	AssocKernel *k = interp_ok(s);
	float x[4] = {1, 2, 3, 4}, out = 0;
	AssocBuffer b[] = {{"x", x, sizeof x}, {"out", &out, sizeof out}};
	AssocValue ok[] = {{"p", 2}, {"n", 1}}, typo[] = {{"px", 2}, {"n", 1}}, big[] = {{"p", 1e300}, {"n", 1}},
		   frac[] = {{"p", 2}, {"n", 2.5}}, inf[] = {{"p", INFINITY}, {"n", 0}};
	cr_assert_eq(assoc_run(k, 1, 4, b, 2, ok, 2), ASSOC_OK, "%s", assoc_kernel_error(k));
	cr_assert_float_eq(out, 21, 1e-5);
	cr_assert_eq(assoc_run(k, 1, 4, b, 2, typo, 2), ASSOC_EINVAL);
	/* worded as --param words it: the spec's params listed */
	cr_assert(strstr(assoc_kernel_error(k), "the spec has no param 'px' (its params: p, n)"), "%s",
		  assoc_kernel_error(k));
	cr_assert_eq(assoc_run(k, 1, 4, b, 2, big, 2), ASSOC_EINVAL);
	cr_assert(strstr(assoc_kernel_error(k), "'p' = 1e+300 is beyond f32's range"), "%s", assoc_kernel_error(k));
	cr_assert_eq(assoc_run(k, 1, 4, b, 2, frac, 2), ASSOC_EINVAL);
	cr_assert(strstr(assoc_kernel_error(k), "'n' = 2.5 is not an integer"), "%s", assoc_kernel_error(k));
	cr_assert_eq(assoc_run(k, 1, 4, b, 2, inf, 2), ASSOC_OK, "infinity as given is a value: %s",
		     assoc_kernel_error(k));
	assoc_kernel_free(k);
	assoc_spec_free(s);
}

/* Rows holding NaN where the groupings disagree: still ok, and the line
 * says so; where they agree it says nothing of them. */
Test(lib, the_verdict_line_warns_of_special_values)
{
	AssocSpec *s;
	cr_assert_eq(assoc_spec_load(&s, "tests/check/argmax_nan_skipped.yaml", NULL, 0), ASSOC_OK);
	cr_assert_eq(assoc_spec_check(s, 300, 1), ASSOC_OK, "%s", assoc_spec_error(s));
	const char *v = assoc_spec_verdict(s);
	cr_expect(!strncmp(v, "argmax_nan_skipped: ok (", 24), "%s", v);
	cr_expect(strstr(v, "; on rows holding NaN or infinities the groupings disagree"), "%s", v);
	assoc_spec_free(s);
	cr_assert_eq(assoc_spec_load(&s, "tests/check/nan_max_replaced.yaml", NULL, 0), ASSOC_OK);
	cr_assert_eq(assoc_spec_check(s, 300, 1), ASSOC_OK, "%s", assoc_spec_error(s));
	cr_expect(strstr(assoc_spec_verdict(s), "; on rows holding NaN or infinities the outputs disagree with the "
						"reference)"), "%s", assoc_spec_verdict(s));
	assoc_spec_free(s);
	cr_assert_eq(assoc_spec_load(&s, "tests/check/argmax_nan_as_neg_inf.yaml", NULL, 0), ASSOC_OK);
	cr_assert_eq(assoc_spec_check(s, 300, 1), ASSOC_OK, "%s", assoc_spec_error(s));
	cr_expect(!strstr(assoc_spec_verdict(s), "NaN"), "%s", assoc_spec_verdict(s));
	assoc_spec_free(s);
}

/* o_lse's lse kept in float32 is beyond run's tolerance on a row of
 * 1000.5 repeated: check warns of it, and so do the verdict's line and
 * its warnings, the carrier still accepted.  A max is exact in float32,
 * without a warning. */
Test(lib, the_verdict_carries_the_float32_accuracy_warning)
{
	AssocSpec *s;
	cr_assert_eq(assoc_spec_load(&s, "specs/o_lse.yaml", NULL, 0), ASSOC_OK);
	cr_expect_str_eq(assoc_spec_warnings(s), "", "no verdict yet");
	cr_assert_eq(assoc_spec_check(s, 300, 1), ASSOC_OK, "%s", assoc_spec_error(s));
	const char *v = assoc_spec_verdict(s), *w = assoc_spec_warnings(s);
	cr_expect(!strncmp(v, "o_lse: ok (", 11), "%s", v);
	cr_expect(strstr(v, "; float32 accuracy: out[0] is ") && strstr(v, "times the tolerance of assoc run") &&
		  v[strlen(v) - 1] == ')', "%s", v);
	/* its identity's exception at lse = -inf first */
	const char *acc = strstr(w, "\nfloat32 accuracy: out[0] is ");
	cr_expect(!strncmp(w, "identity: holds except at lifts where lse = -inf", 48) && acc &&
		  strstr(acc, "1000.5 repeated") && w[strlen(w) - 1] == '\n', "%s", w);
	assoc_spec_free(s);
	cr_assert_eq(assoc_spec_load(&s, "specs/max.yaml", NULL, 0), ASSOC_OK);
	cr_assert_eq(assoc_spec_check(s, 300, 1), ASSOC_OK, "%s", assoc_spec_error(s));
	cr_expect(!strstr(assoc_spec_verdict(s), "float32 accuracy"), "%s", assoc_spec_verdict(s));
	cr_expect_str_eq(assoc_spec_warnings(s), "");
	assoc_spec_free(s);
	cr_expect_str_eq(assoc_spec_warnings(NULL), "");
}

/* The verdict's line says what holds, as check prints it: laws proved,
 * laws the prover leaves unknown, and no reference where there is none;
 * never that a reference holds that was not checked. */
Test(lib, the_verdict_line_says_what_holds)
{
	static const char *const spec[] = {
		/* no reference, every law proved */
		"carrier: no_ref\nelement: {x: f32}\nstate: {s: f32}\nidentity: {s: 0}\nlift: {s: x}\n"
		"merge: {s: a.s + b.s}\nlaws: [commutative]\n",
		/* no reference, every law unknown to the prover */
		"carrier: hyp\nelement: {x: f32}\nstate: {s: f32}\nidentity: {s: 0}\nlift: {s: abs(x)}\n"
		"merge: {s: 'sqrt(a.s * a.s + b.s * b.s)'}\nlaws: [commutative]\n",
		/* a reference, checked */
		"carrier: with_ref\nelement: {x: f32}\nstate: {s: f32}\nidentity: {s: 0}\nlift: {s: x}\n"
		"merge: {s: a.s + b.s}\nreference: {s: sum(x)}\nlaws: [commutative]\n",
	};
	static const char *const line[] = {
		"no_ref: ok (identity, associative, commutative proved; no reference given, so the results are not "
		"checked against one)",
		"hyp: ok (identity, associative, commutative unknown to the prover, held in the trials; no reference "
		"given, so the results are not checked against one)",
		"with_ref: ok (identity, associative, commutative proved; the results match the reference on ",
	};
	for (int i = 0; i < 3; i++) {
		AssocSpec *s;
		cr_assert_eq(assoc_spec_load_text(&s, spec[i], strlen(spec[i]), NULL, 0), ASSOC_OK);
		cr_expect_str_eq(assoc_spec_verdict(s), "", "no verdict yet");
		cr_assert_eq(assoc_spec_check(s, 300, 1), ASSOC_OK, "%s", assoc_spec_error(s));
		cr_expect(!strncmp(assoc_spec_verdict(s), line[i], strlen(line[i])), "%s", assoc_spec_verdict(s));
		assoc_spec_free(s);
	}
	const char *bad = "carrier: mean_wrong\nelement: {x: f32}\nstate: {m: f32}\nidentity: {m: 0}\n"
			  "lift: {m: x}\nmerge: {m: (a.m + b.m) / 2}\n";
	AssocSpec *s;
	cr_assert_eq(assoc_spec_load_text(&s, bad, strlen(bad), NULL, 0), ASSOC_OK);
	cr_assert_eq(assoc_spec_check(s, 300, 1), ASSOC_ELAWS);
	cr_expect(!strncmp(assoc_spec_verdict(s), "mean_wrong: FAILED (", 20), "%s", assoc_spec_verdict(s));
	cr_expect_str_eq(assoc_spec_verdict(NULL), "");
	assoc_spec_free(s);
}

Test(lib, dims_override)
{
	AssocSpec *s;
	AssocValue d = {"dv", 8};
	cr_assert_eq(assoc_spec_load(&s, "specs/o_lse.yaml", &d, 1), ASSOC_OK, "%s", assoc_spec_error(s));
	AssocArray a;
	cr_assert_eq(assoc_array_info(s, 0, &a), ASSOC_OK);
	cr_assert_eq(a.width, 8);
	assoc_spec_free(s);
	AssocValue twice[] = {{"dv", 4}, {"dv", 8}};
	cr_assert_eq(assoc_spec_load(&s, "specs/o_lse.yaml", twice, 2), ASSOC_ESPEC, "which one wins is not guessed");
	cr_assert(strstr(assoc_spec_error(s), "dim override 'dv' is given twice"), "%s", assoc_spec_error(s));
	assoc_spec_free(s);
}

/* A shape whose byte count a size_t cannot hold is refused when buffers
 * are bound, whatever size they claim. */
Test(lib, shape_past_size_t_is_refused)
{
	AssocSpec *s;
	const char *text = "carrier: wide\ndims: {d: 64}\nelement:\n  x: f64[d]\nstate: {s: f64}\nidentity: {s: 0}\n"
			   "lift:\n  s: dot(x, x)\nmerge: {s: a.s + b.s}\n";
	cr_assert_eq(assoc_spec_load_text(&s, text, strlen(text), NULL, 0), ASSOC_OK, "%s", assoc_spec_error(s));
	int64_t rows = ((int64_t)1 << 24) + 1, len = INT32_MAX;
	cr_assert_eq(assoc_array_bytes(s, 0, rows, len), SIZE_MAX);
	AssocKernel *k;
	cr_assert_eq(assoc_compile(s, "cpu", 1, &k), ASSOC_OK, "%s", assoc_spec_error(s));
	double one;
	AssocBuffer b[] = {{"x", &one, SIZE_MAX}, {"s", &one, 8}};
	cr_assert_eq(assoc_run(k, rows, len, b, 2, NULL, 0), ASSOC_ESIZE, "%s", assoc_kernel_error(k));
	cr_assert(strstr(assoc_kernel_error(k), "more bytes than a size_t holds"), "%s", assoc_kernel_error(k));
	assoc_kernel_free(k);
	assoc_spec_free(s);
}

static void example_program(const char *build)
{
	char out[4096];
	FILE *f = popen(build, "r");
	cr_assert(f);
	size_t n = fread(out, 1, sizeof out - 1, f);
	out[n] = 0;
	int st = pclose(f);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", out);
	cr_assert(strstr(out, "row 1: lse 1.609438, y 0.200000 0.200000"), "%s", out);
}

/* The README's example on the emulator and the interpreter: the same
 * program, its device named on the command line. */
Test(lib, example_program_runs_on_every_device, .timeout = 300)
{
	char why[512];
	if (!run_device_find("emu")->available(why, sizeof why))
		cr_skip("no host C++ compiler for the emulator: %s", why);
	example_program("cc -std=c11 -Icompiler/lib -fsanitize=address,undefined -o build/example_lib_dev "
			"tests/example/example_lib.c build/asan/libassoc.a -lyaml -lm -ldl -lpthread "
			"$(llvm-config --ldflags --libs) 2>&1 && build/example_lib_dev emu 2>&1 && "
			"build/example_lib_dev interp 2>&1");
}

Test(lib, example_program_builds_and_runs)
{
	example_program("cc -std=c11 -Icompiler/lib -fsanitize=address,undefined -o build/example_lib "
			"tests/example/example_lib.c build/asan/libassoc.a -lyaml -lm -ldl -lpthread "
			"$(llvm-config --ldflags --libs) 2>&1 && build/example_lib 2>&1");
}

/* The shared library stands alone: nothing in it needs the command line's main.c. */
Test(lib, example_program_links_the_shared_library)
{
	cr_assert_eq(access("build/libassoc.so", R_OK), 0, "make build/libassoc.so first (make test does)");
	example_program("cc -std=c11 -Icompiler/lib -o build/example_lib_so tests/example/example_lib.c "
			"-Lbuild -lassoc -Wl,-rpath,$PWD/build -lm 2>&1 && build/example_lib_so 2>&1");
}

/* A program's own functions named like ones inside the library (diag_init,
 * eval_row_free) neither replace the library's nor clash with them: the shared
 * library and the installed static one export the API alone. */
Test(lib, library_internals_stay_private)
{
	cr_assert_eq(access("build/libassoc-api.a", R_OK), 0, "make build/libassoc-api.a first (make test does)");
	FILE *f = fopen("build/own_names.c", "w");
	cr_assert(f);
	fputs("#include <stdlib.h>\nvoid diag_init(void *d, const char *file) { (void)d; (void)file; abort(); }\n"
	      "void eval_row_free(void *r) { (void)r; abort(); }\n",
	      f);
	fclose(f);
	example_program("cc -std=c11 -Icompiler/lib -o build/example_own_so tests/example/example_lib.c build/own_names.c "
			"-Lbuild -lassoc -Wl,-rpath,$PWD/build -lm 2>&1 && build/example_own_so 2>&1");
	example_program("cc -std=c11 -Icompiler/lib -o build/example_own_a tests/example/example_lib.c build/own_names.c "
			"build/libassoc-api.a -lyaml -lm -ldl -lpthread $(llvm-config --ldflags --libs) 2>&1 && "
			"build/example_own_a 2>&1");
}

/* Every name libassoc.so exports is one its public headers declare: the
 * helpers its files share are not part of the API (the version script
 * exports assoc_* alone, so they are named otherwise). */
Test(lib, exports_are_the_public_api)
{
	cr_assert_eq(access("build/libassoc.so", R_OK), 0, "make build/libassoc.so first (make test does)");
	char out[16384];
	if (sh("command -v nm >/dev/null", out, sizeof out, 0))
		cr_skip_test("no nm to list the exports");
	cr_assert_eq(sh("nm -D --defined-only build/libassoc.so | awk '$2 == \"T\" { print $3 }' | while read -r f; do "
			"grep -qw \"$f\" compiler/lib/assoc.h compiler/lib/assoc_mpi.h || echo \"$f\"; done",
			out, sizeof out, 0),
		     0);
	cr_expect_str_eq(out, "", "exported but in no public header:\n%s", out);
}

/* The library reaches the verdict `assoc check` reaches: the attention
 * whose lse is NaN on an empty row fails assoc_spec_check with check's
 * line, and assoc_compile refuses it unless trusted. */
Test(lib, verdict_of_the_command_line, .timeout = 120)
{
	const char *line = "tests/check/sink_nan_empty.yaml: the results disagree with the reference: lse is NaN on an "
			   "empty row (length 0) but the reference gives 0";
	AssocSpec *s = spec_ok("tests/check/sink_nan_empty.yaml");
	cr_assert_eq(assoc_spec_check(s, 500, 1), ASSOC_ELAWS);
	cr_assert(strstr(assoc_spec_error(s), line), "%s", assoc_spec_error(s));
	AssocKernel *k = NULL;
	char why[256];
	int llvm = llvm_available(why, sizeof why);
	cr_assert_eq(assoc_compile(s, "cpu", 1, &k), llvm ? ASSOC_ELAWS : ASSOC_EDEVICE, "%s", assoc_spec_error(s));
	cr_assert_not_null(k, "a refused compile returns a handle holding why");
	if (llvm)
		cr_assert(strstr(assoc_kernel_error(k), line), "%s", assoc_kernel_error(k));
	assoc_kernel_free(k);
	if (!llvm) {
		assoc_spec_free(s);
		cr_skip("no CPU backend here: %s", why);
	}
	cr_assert(strstr(assoc_spec_error(s), line), "%s", assoc_spec_error(s));
	cr_assert_eq(assoc_spec_trust_merge(s, 1), ASSOC_OK);
	cr_assert_eq(assoc_compile(s, "cpu", 1, &k), ASSOC_OK, "%s", assoc_spec_error(s));
	assoc_kernel_free(k);
	assoc_spec_free(s);
	s = spec_ok("tests/laws/associative_but_wrong.yaml");
	cr_assert_eq(assoc_compile(s, "cpu", 1, &k), ASSOC_ELAWS);
	assoc_kernel_free(k);
	cr_assert(strstr(assoc_spec_error(s), "the results disagree with the reference: lse is"), "%s",
		  assoc_spec_error(s));
	assoc_spec_free(s);
	cr_assert_eq(assoc_spec_trust_merge(NULL, 1), ASSOC_EINVAL);
}

/* Where no CUDA driver loads, the gpu device's handle says so, and auto
 * goes on to the next device. */
Test(lib, gpu_without_a_driver_says_why)
{
	setenv("ASSOC_LIBCUDA", "build/no-such-libcuda.so.1", 1);
	AssocSpec *s = spec_ok("specs/sum.yaml");
	AssocKernel *k = NULL;
	cr_assert_eq(assoc_compile(s, "gpu", 1, &k), ASSOC_EDEVICE);
	cr_assert_not_null(k);
	cr_assert(strstr(assoc_kernel_error(k), "gpu: no CUDA driver: cannot load build/no-such-libcuda.so.1"), "%s",
		  assoc_kernel_error(k));
	assoc_kernel_free(k);
	char why[256];
	AssocStatus st = assoc_compile(s, "auto", 1, &k);
	cr_assert_eq(st, ASSOC_OK, "%s", assoc_kernel_error(k));
	float x[6] = {1, 2, 3, 4, 5, 6}, out[2];
	AssocBuffer b[] = {{"x", x, sizeof x}, {"s", out, sizeof out}};
	cr_assert_eq(assoc_run(k, 2, 3, b, 2, NULL, 0), ASSOC_OK, "%s (cpu: %s)", assoc_kernel_error(k),
		     llvm_available(why, sizeof why) ? "here" : why);
	cr_assert_float_eq(out[0], 6, 0);
	cr_assert_float_eq(out[1], 15, 0);
	assoc_kernel_free(k);
	assoc_spec_free(s);
	unsetenv("ASSOC_LIBCUDA");
}

/* With the fake driver (tests/fake/fakecuda.c, which runs no kernel) the
 * compile loads the module and a host run goes through the device:
 * launches, and outputs copied back over the caller's (zeros). */
Test(lib, gpu_runs_through_the_driver, .timeout = 120)
{
	char why[512];
	Nvrtc *nv;
	if (nvrtc_open(&nv, why, sizeof why))
		cr_skip("no NVRTC here: %s", why);
	nvrtc_close(nv);
	setenv("ASSOC_LIBCUDA", "build/libfakecuda.so", 1);
	setenv("FAKECUDA", "", 1);
	void *fake = dlopen("build/libfakecuda.so", RTLD_NOW);
	cr_assert_not_null(fake, "%s", dlerror());
	int (*launches)(void) = (int (*)(void))dlsym(fake, "fakecuda_launches");
	AssocSpec *s = spec_ok("specs/online_softmax.yaml");
	AssocKernel *k = NULL;
	cr_assert_eq(assoc_compile(s, "gpu", 0, &k), ASSOC_OK, "%s", assoc_kernel_error(k));
	float x[2][5] = {{1, 2, 3, 4, 5}, {0}}, y[2][5], lse[2];
	memset(y, 0x7f, sizeof y);
	memset(lse, 0x7f, sizeof lse);
	AssocBuffer b[] = {{"x", x, sizeof x}, {"y", y, sizeof y}, {"lse", lse, sizeof lse}};
	int before = launches();
	cr_assert_eq(assoc_run(k, 2, 5, b, 3, NULL, 0), ASSOC_OK, "%s", assoc_kernel_error(k));
	cr_assert_geq(launches() - before, 1, "the run launched on the device");
	cr_assert_eq(lse[0], 0, "the device's outputs (the fake's zeros) came back over the caller's");
	cr_assert_eq(y[1][4], 0);
	assoc_kernel_free(k);
	assoc_spec_free(s);
	dlclose(fake);
	unsetenv("ASSOC_LIBCUDA");
}

/* emu and interp on caller arrays with params and a scan: the same
 * results as the CPU backend's, to float32's rounding. */
Test(lib, emu_and_interp_match_the_cpu, .timeout = 300)
{
	char why[512];
	if (!run_device_find("emu")->available(why, sizeof why))
		cr_skip("no host C++ compiler for the emulator: %s", why);
	AssocSpec *s = spec_ok("specs/logsumexp.yaml");
	enum { R = 3, L = 37 };
	float x[R][L], ref[R], got[R];
	for (int r = 0; r < R; r++)
		for (int j = 0; j < L; j++)
			x[r][j] = (float)sin(r * 7 + j) * 3;
	for (int r = 0; r < R; r++) {
		double m = -INFINITY, t = 0;
		for (int j = 0; j < L; j++)
			m = fmax(m, x[r][j]);
		for (int j = 0; j < L; j++)
			t += exp(x[r][j] - m);
		ref[r] = (float)(m + log(t));
	}
	const char *dev[] = {"emu", "interp"};
	for (int d = 0; d < 2; d++) {
		AssocKernel *k = NULL;
		cr_assert_eq(assoc_compile(s, dev[d], 1, &k), ASSOC_OK, "%s: %s", dev[d], assoc_kernel_error(k));
		memset(got, 0, sizeof got);
		AssocArray a;
		cr_assert_eq(assoc_array_info(s, 1, &a), ASSOC_OK);
		AssocBuffer b[] = {{"x", x, sizeof x}, {a.name, got, sizeof got}};
		cr_assert_eq(assoc_run(k, R, L, b, 2, NULL, 0), ASSOC_OK, "%s: %s", dev[d], assoc_kernel_error(k));
		for (int r = 0; r < R; r++)
			cr_assert_float_eq(got[r], ref[r], 1e-5f * fabsf(ref[r]) + 1e-6f, "%s row %d: %g, not %g", dev[d], r,
					   got[r], ref[r]);
		assoc_kernel_free(k);
	}
	assoc_spec_free(s);
}

/* A cpu kernel of two threads in a child forked after a run: the child has
 * the pool but not its workers, so the pool starts them again for the
 * child's run, and its free joins only those (a run, or a free, that
 * waited on the parent's workers would never return). */
Test(lib, a_cpu_kernel_runs_and_frees_in_a_forked_child, .timeout = 120)
{
	AssocSpec *s = spec_ok("specs/logsumexp.yaml");
	enum { R = 64, L = 4096 };
	static float x[R][L];
	float got[R], again[R];
	for (int r = 0; r < R; r++)
		for (int j = 0; j < L; j++)
			x[r][j] = (float)sin(r * 7 + j);
	AssocKernel *k = NULL;
	cr_assert_eq(assoc_compile(s, "cpu", 2, &k), ASSOC_OK, "%s", assoc_kernel_error(k));
	AssocArray a;
	cr_assert_eq(assoc_array_info(s, 1, &a), ASSOC_OK);
	AssocBuffer b[] = {{"x", x, sizeof x}, {a.name, got, sizeof got}};
	cr_assert_eq(assoc_run(k, R, L, b, 2, NULL, 0), ASSOC_OK, "%s", assoc_kernel_error(k));
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		alarm(60);
		AssocBuffer c[] = {{"x", x, sizeof x}, {a.name, again, sizeof again}};
		if (assoc_run(k, R, L, c, 2, NULL, 0) != ASSOC_OK)
			_exit(2);
		if (memcmp(got, again, sizeof got))
			_exit(3);
		assoc_kernel_free(k);
		assoc_spec_free(s);
		_exit(0);
	}
	int status = 0;
	pid_t w = 0;
	for (int i = 0; i < 600 && (w = waitpid(pid, &status, WNOHANG)) == 0; i++)
		usleep(50000);
	if (w == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		cr_assert_fail("the child's run or free did not return in 30 s");
	}
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child %s %d",
		  WIFEXITED(status) ? "exited" : "was killed by signal", WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	/* the parent's pool still runs */
	cr_assert_eq(assoc_run(k, R, L, b, 2, NULL, 0), ASSOC_OK, "%s", assoc_kernel_error(k));
	assoc_kernel_free(k);
	assoc_spec_free(s);
}

/* An f32 param is rounded to f32 once, where the library takes it, as
 * `assoc run --param` has it: x >= c with x = c = 0.7 in f32 holds on
 * interp as on cpu (interp compared with the double 0.7, above
 * 0.699999988), x * c is float32(0.7) in an f64 state, and an input equal
 * to c in f32 keeps an `assume: x >= c`. */
Test(lib, an_f32_param_is_rounded_to_f32_on_every_device, .timeout = 60)
{
	static const char text[] = "carrier: pcmp\nparams: {c: f32}\nassume: x >= c\nelement: {x: f32}\n"
				   "state: {n: i32, s: f64}\nidentity: {n: 0, s: 0}\n"
				   "lift: {n: 'where(x >= c, 1, 0)', s: f64(x) * f64(c)}\n"
				   "merge: {n: a.n + b.n, s: a.s + b.s}\nlaws: [commutative]\n";
	AssocSpec *s = text_spec_ok(text);
	const char *dev[] = {"cpu", "interp"};
	for (int d = 0; d < 2; d++) {
		AssocKernel *k = NULL;
		cr_assert_eq(assoc_compile(s, dev[d], 1, &k), ASSOC_OK, "%s: %s", dev[d], assoc_kernel_error(k));
		float x[3] = {0.7f, 0.7f, 0.7f};
		int n = -1;
		double sum = 0;
		AssocBuffer b[] = {{"x", x, sizeof x}, {"n", &n, sizeof n}, {"s", &sum, sizeof sum}};
		AssocValue p = {"c", 0.7};
		cr_assert_eq(assoc_run(k, 1, 3, b, 3, &p, 1), ASSOC_OK, "%s: %s", dev[d], assoc_kernel_error(k));
		cr_expect_eq(n, 3, "%s: x >= c held at %d of 3 positions", dev[d], n);
		cr_expect_eq(sum, 3 * (double)0.7f * (double)0.7f, "%s: s = %.17g, not 3 * float32(0.7)^2", dev[d], sum);
		assoc_kernel_free(k);
	}
	assoc_spec_free(s);
}

Test(lib, params_and_device_by_name)
{
	AssocSpec *s = spec_ok("specs/attention.yaml");
	cr_assert_eq(assoc_param_count(s), 1);
	cr_assert_str_eq(assoc_param_name(s, 0), "scale");
	cr_assert_str_eq(assoc_param_type(s, 0), "f32");
	cr_assert_null(assoc_param_name(s, 1));
	cr_assert_null(assoc_param_name(s, -1));
	cr_assert_null(assoc_param_type(s, 1));
	assoc_spec_free(s);
	s = spec_ok("specs/sum.yaml");
	cr_assert_eq(assoc_param_count(s), 0);
	cr_assert_eq(assoc_param_count(NULL), 0);
	cr_assert_null(assoc_param_name(NULL, 0));
	AssocKernel *k = NULL;
	cr_assert_eq(assoc_compile(s, "interp", 1, &k), ASSOC_OK, "%s", assoc_kernel_error(k));
	cr_assert_str_eq(assoc_kernel_device(k), "interp");
	assoc_kernel_free(k);
	setenv("ASSOC_LIBCUDA", "build/no-such-libcuda.so.1", 1);
	cr_assert_eq(assoc_compile(s, "gpu", 1, &k), ASSOC_EDEVICE);
	cr_assert_null(assoc_kernel_device(k), "a failed compile runs on no device");
	assoc_kernel_free(k);
	char why[256];
	if (llvm_available(why, sizeof why)) {
		cr_assert_eq(assoc_compile(s, "auto", 1, &k), ASSOC_OK, "%s", assoc_kernel_error(k));
		cr_assert_str_eq(assoc_kernel_device(k), "cpu", "auto without a driver picks the cpu");
		assoc_kernel_free(k);
	}
	unsetenv("ASSOC_LIBCUDA");
	cr_assert_null(assoc_kernel_device(NULL));
	assoc_spec_free(s);
}

/* Inputs that break the spec's assume run nothing: ASSOC_EINVAL, with the
 * head, row, position and value in assoc_kernel_error. */
Test(lib, inputs_that_break_assume_are_refused, .timeout = 120)
{
	static const char text[] = "carrier: wlog\nelement: {w: f32}\nrow: {k: i32}\nassume: w > 0 && k >= 0\n"
				   "state: {s: f32}\nidentity: {s: 0}\nlift: {s: log(w) + k}\nmerge:\n  s: a.s + b.s\n"
				   "reference:\n  s: sum(log(w) + k)\nlaws: [commutative]\n";
	static const char *const devs[] = {"cpu", "interp"};
	for (size_t d = 0; d < sizeof devs / sizeof *devs; d++) {
		AssocSpec *s;
		cr_assert_eq(assoc_spec_load_text(&s, text, strlen(text), NULL, 0), ASSOC_OK, "%s", assoc_spec_error(s));
		AssocKernel *k;
		cr_assert_eq(assoc_compile(s, devs[d], 1, &k), ASSOC_OK, "%s", assoc_spec_error(s));
		float w[2][2][3] = {{{1, 2, 3}, {4, 5, 6}}, {{1, 2, 3}, {4, 5, 6}}}, out[2][2] = {{7, 7}, {7, 7}};
		int32_t kk[2][2] = {{0, 1}, {2, 3}};
		AssocBuffer b[] = {{"w", w, sizeof w}, {"k", kk, sizeof kk}, {"s", out, sizeof out}};
		cr_assert_eq(assoc_run_heads(k, 2, 2, 2, 3, b, 3, NULL, 0), ASSOC_OK, "%s", assoc_kernel_error(k));
		cr_expect_float_eq(out[1][1], logf(4) + logf(5) + logf(6) + 9, 1e-4);
		out[0][0] = 7;
		w[1][0][2] = -0.5f;
		cr_assert_eq(assoc_run_heads(k, 2, 2, 2, 3, b, 3, NULL, 0), ASSOC_EINVAL, "%s: w = -0.5 breaks assume",
			     devs[d]);
		cr_expect(strstr(assoc_kernel_error(k), "head 1, row 0, position 2: inputs w = -0.5, k = 2 break 'assume' "
							"(w > 0 && k >= 0)"),
			  "%s", assoc_kernel_error(k));
		cr_expect_eq(out[0][0], 7, "nothing ran");
		w[1][0][2] = 3;
		kk[0][1] = -1;
		AssocBuffer one[] = {{"w", w, sizeof w / 2}, {"k", kk, sizeof kk / 2}, {"s", out, sizeof out / 2}};
		cr_assert_eq(assoc_run(k, 2, 3, one, 3, NULL, 0), ASSOC_EINVAL, "%s", assoc_kernel_error(k));
		cr_expect(strstr(assoc_kernel_error(k), "row 1, position 0: inputs w = 4, k = -1 break 'assume'") &&
				  !strstr(assoc_kernel_error(k), "head"),
			  "%s", assoc_kernel_error(k));
		kk[0][1] = 1;
		cr_assert_eq(assoc_run(k, 2, 3, one, 3, NULL, 0), ASSOC_OK, "%s", assoc_kernel_error(k));
		assoc_kernel_free(k);
		assoc_spec_free(s);
	}
}

/* A param that breaks a part of assume over params alone is a bad
 * argument, ASSOC_EINVAL (Python's ValueError), not ASSOC_ELAWS (a
 * LawError), named with that part, where the laws read it and where only
 * the assume does (it said "could not draw inputs where 'assume' holds",
 * and "the params break 'assume'" with the whole of it). */
Test(lib, a_param_that_breaks_assume_is_a_bad_argument, .timeout = 60)
{
	static const char *const text[] = {
		"carrier: softmax_temp\nparams: {temp: f32}\nassume: temp > 0 && x > -100\nelement: {x: f32}\n"
		"let:\n  z: x / temp\nstate: {m: f32, l: f32}\nidentity: {m: -inf, l: 0}\nlift: {m: z, l: 1}\n"
		"merge:\n  m: max(a.m, b.m)\n  l: a.l * exp(a.m - m) + b.l * exp(b.m - m)\nfinalize: {lse: m + log(l)}\n"
		"reference:\n  lse: log(sum(exp(z)))\nlaws: [commutative]\n",
		"carrier: lse_temp\nparams: {temp: f32}\nassume: temp > 0 && x > -100\nelement: {x: f32}\n"
		"state: {m: f32, l: f32}\nidentity: {m: -inf, l: 0}\nlift: {m: x, l: 1}\n"
		"merge:\n  m: max(a.m, b.m)\n  l: a.l * exp(a.m - m) + b.l * exp(b.m - m)\n"
		"finalize: {lse: (m + log(l)) / temp}\nreference:\n  lse: log(sum(exp(x))) / temp\nlaws: [commutative]\n",
	};
	float x[6] = {1, 2, 3, 4, 5, 6}, out[2] = {7, 7};
	AssocBuffer b[] = {{"x", x, sizeof x}, {"lse", out, sizeof out}};
	for (int i = 0; i < 2; i++) {
		AssocSpec *s;
		cr_assert_eq(assoc_spec_load_text(&s, text[i], strlen(text[i]), NULL, 0), ASSOC_OK, "%s", assoc_spec_error(s));
		AssocKernel *k = NULL;
		cr_assert_eq(assoc_compile(s, "interp", 1, &k), ASSOC_OK, "%s", assoc_kernel_error(k));
		AssocValue good = {"temp", 2}, bad = {"temp", -1};
		cr_assert_eq(assoc_run(k, 2, 3, b, 2, &bad, 1), ASSOC_EINVAL, "%s", assoc_kernel_error(k));
		cr_expect(strstr(assoc_kernel_error(k), "param temp = -1 breaks 'assume' (temp > 0)") &&
				  !strstr(assoc_kernel_error(k), "could not draw"),
			  "%d: %s", i, assoc_kernel_error(k));
		cr_expect(out[0] == 7 && out[1] == 7, "nothing ran");
		cr_assert_eq(assoc_run(k, 2, 3, b, 2, &good, 1), ASSOC_OK, "%s", assoc_kernel_error(k));
		assoc_kernel_free(k);
		assoc_spec_free(s);
		out[0] = out[1] = 7;
	}
}

/* A NaN param that leaves every state NaN leaves nothing to check: a bad
 * argument, ASSOC_EINVAL (Python's ValueError), naming the param, where
 * it was ASSOC_ELAWS (a LawError) saying "could not draw inputs where
 * 'assume' holds" of a spec with no assume. */
Test(lib, a_nan_param_that_leaves_every_state_nan_is_a_bad_argument, .timeout = 60)
{
	const char *text = "carrier: scaled\nparams: {sc: f64}\nelement: {x: f32}\nstate: {s: f64}\nidentity: {s: 0}\n"
			   "lift: {s: x * sc}\nmerge: {s: a.s + b.s}\nreference: {s: sum(x * sc)}\nlaws: [commutative]\n";
	AssocSpec *s = text_spec_ok(text);
	AssocKernel *k = interp_ok(s);
	float x[6] = {1, 2, 3, 4, 5, 6};
	double sv[2] = {7, 7};
	AssocBuffer b[] = {{"x", x, sizeof x}, {"s", sv, sizeof sv}};
	AssocValue nan_sc = {"sc", NAN}, two = {"sc", 2};
	cr_assert_eq(assoc_run(k, 2, 3, b, 2, &nan_sc, 1), ASSOC_EINVAL, "%s", assoc_kernel_error(k));
	cr_expect(strstr(assoc_kernel_error(k), "every state folded from the inputs drawn holds NaN or an infinity, at "
						"param sc = nan") && !strstr(assoc_kernel_error(k), "assume"),
		  "%s", assoc_kernel_error(k));
	cr_expect(sv[0] == 7 && sv[1] == 7, "nothing ran");
	cr_assert_eq(assoc_run(k, 2, 3, b, 2, &two, 1), ASSOC_OK, "%s", assoc_kernel_error(k));
	cr_expect(sv[0] == 12 && sv[1] == 30, "%g %g", sv[0], sv[1]);
	assoc_kernel_free(k);
	assoc_spec_free(s);
}

/* ---- assoc_run_device and assoc_tune, on the fake driver ---- */

#define FAKE_LIB "build/libfakecuda.so"

typedef struct {
	void *lib;
	int (*alloc)(unsigned long long *, size_t);
	int (*set_ctx)(void *);
	int (*get_ctx)(void **);
	int (*launches)(void);
	void (*syncs)(int *, int *);
	void (*last)(void **, void **, int *, int *);
	unsigned (*grid)(void);
	int (*free)(unsigned long long);
	unsigned long long mem[32]; /* dev_alloc's, freed by fake_close */
	int nmem;
} Fake;

/* The fake driver, with a tuning cache of the test's own (dir, a mkdtemp
 * template); skips where NVRTC is missing. */
static Fake fake_open(char *dir, const char *opts)
{
	char why[512];
	Nvrtc *nv;
	if (nvrtc_open(&nv, why, sizeof why))
		cr_skip("no NVRTC here: %s", why);
	nvrtc_close(nv);
	test_tmpdir(dir);
	test_xdg_cache(dir);
	setenv("ASSOC_LIBCUDA", FAKE_LIB, 1);
	setenv("FAKECUDA", opts, 1);
	Fake f = {.lib = dlopen(FAKE_LIB, RTLD_NOW)};
	cr_assert_not_null(f.lib, "%s", dlerror());
	*(void **)&f.alloc = dlsym(f.lib, "cuMemAlloc_v2");
	*(void **)&f.set_ctx = dlsym(f.lib, "cuCtxSetCurrent");
	*(void **)&f.get_ctx = dlsym(f.lib, "cuCtxGetCurrent");
	*(void **)&f.launches = dlsym(f.lib, "fakecuda_launches");
	*(void **)&f.syncs = dlsym(f.lib, "fakecuda_syncs");
	*(void **)&f.last = dlsym(f.lib, "fakecuda_last");
	*(void **)&f.grid = dlsym(f.lib, "fakecuda_grid");
	*(void **)&f.free = dlsym(f.lib, "cuMemFree_v2");
	cr_assert(f.free && f.alloc && f.set_ctx && f.get_ctx && f.launches && f.syncs && f.last && f.grid);
	/* the program's CUDA runtime holds the primary context and makes it
	 * current, as PyTorch's does */
	int (*retain)(void **, int) = (int (*)(void **, int))dlsym(f.lib, "cuDevicePrimaryCtxRetain");
	void *primary;
	cr_assert(retain && !retain(&primary, 0));
	f.set_ctx(primary);
	return f;
}

static void fake_close(Fake *f)
{
	for (int i = 0; i < f->nmem; i++)
		f->free(f->mem[i]);
	dlclose(f->lib);
	unsetenv("ASSOC_LIBCUDA");
	unsetenv("XDG_CACHE_HOME");
	unsetenv("FAKECUDA");
}

static void *dev_alloc(Fake *f, size_t bytes)
{
	unsigned long long p = 0;
	cr_assert_eq(f->alloc(&p, bytes), 0);
	cr_assert_lt(f->nmem, 32);
	f->mem[f->nmem++] = p;
	return (void *)(size_t)p;
}

/* A paged batch on device pointers: one launch, a row of the grid a
 * sequence, on the caller's stream, with no host copy and no
 * synchronization; decoding (as many queries each) and varlen (offsets
 * on the device, the most queries given); sizes, the kernel's device and
 * a missing table refused. */
Test(lib, run_paged_device_enqueues_one_launch, .timeout = 120)
{
	char dir[] = "/tmp/assoc-libpaged-XXXXXX";
	Fake f = fake_open(dir, "");
	unsigned (*grid_y)(void) = (unsigned (*)(void))dlsym(f.lib, "fakecuda_grid_y");
	cr_assert(grid_y);
	AssocSpec *s = spec_ok("specs/attention.yaml");
	AssocKernel *k = NULL;
	cr_assert_eq(assoc_compile(s, "gpu", 0, &k), ASSOC_OK, "%s", assoc_kernel_error(k));
	enum { B = 3, P = 16, PAGES = 8, MAXP = 4, H = 4, G = 2, D = 64 };
	void *table = dev_alloc(&f, B * MAXP * 4), *lens = dev_alloc(&f, B * 4), *cu = dev_alloc(&f, (B + 1) * 4);
	size_t pool = (size_t)PAGES * P * G * D * 2;
	void *kp = dev_alloc(&f, pool), *vp = dev_alloc(&f, pool);
	/* decoding: a query a sequence */
	AssocBuffer b[] = {{"q", dev_alloc(&f, B * H * D * 2), B * H * D * 2}, {"k", kp, pool}, {"v", vp, pool},
			   {"out", dev_alloc(&f, B * H * D * 4), B * H * D * 4}, {"lse", dev_alloc(&f, B * H * 4), B * H * 4}};
	AssocValue scale = {"scale", 0.125};
	AssocPaged pg = {B, P, PAGES, MAXP, table, lens, NULL, 1};
	void *stream = (void *)0x5150, *got_stream, *got_ctx;
	int copies0, syncs0, copies1, syncs1, na, nf;
	f.syncs(&copies0, &syncs0);
	int before = f.launches();
	cr_assert_eq(assoc_run_paged_device(k, H, G, &pg, b, 5, &scale, 1, stream), ASSOC_OK, "%s",
		     assoc_kernel_error(k));
	f.syncs(&copies1, &syncs1);
	f.last(&got_stream, &got_ctx, &na, &nf);
	cr_assert_eq(f.launches() - before, 1, "%d launches", f.launches() - before);
	cr_assert_eq(grid_y(), B, "a row of the grid a sequence");
	cr_assert_eq(got_stream, stream, "on the caller's stream");
	cr_assert_eq(copies1, copies0, "no host copy");
	cr_assert_eq(syncs1, syncs0, "no synchronization");
	/* varlen: 7 queries in all, 5 at most, the offsets on the device */
	AssocBuffer v[] = {{"q", dev_alloc(&f, 7 * H * D * 2), 7 * H * D * 2}, {"k", kp, pool}, {"v", vp, pool},
			   {"out", dev_alloc(&f, 7 * H * D * 4), 7 * H * D * 4}, {"lse", dev_alloc(&f, 7 * H * 4), 7 * H * 4}};
	AssocPaged pv = {B, P, PAGES, MAXP, table, lens, cu, 5};
	before = f.launches();
	cr_assert_eq(assoc_run_paged_device(k, H, G, &pv, v, 5, &scale, 1, NULL), ASSOC_OK, "%s", assoc_kernel_error(k));
	cr_assert_eq(f.launches() - before, 1);
	cr_assert_eq(grid_y(), B);
	f.syncs(&copies1, &syncs1);
	cr_assert_eq(copies1, copies0, "no host copy");
	cr_assert_eq(syncs1, syncs0, "no synchronization");
	/* without offsets the row inputs hold batch x rows queries */
	cr_assert_eq(assoc_run_paged_device(k, H, G, &pg, v, 5, &scale, 1, NULL), ASSOC_ESIZE);
	cr_assert(strstr(assoc_kernel_error(k), "3 sequences of 1 query each"), "%s", assoc_kernel_error(k));
	/* an output of another count of queries */
	AssocBuffer w[5];
	memcpy(w, v, sizeof w);
	w[4].bytes = 6 * H * 4;
	cr_assert_eq(assoc_run_paged_device(k, H, G, &pv, w, 5, &scale, 1, NULL), ASSOC_ESIZE);
	cr_assert(strstr(assoc_kernel_error(k), "buffer 'lse'"), "%s", assoc_kernel_error(k));
	/* a part of a query */
	memcpy(w, v, sizeof w);
	w[0].bytes -= 2;
	cr_assert_eq(assoc_run_paged_device(k, H, G, &pv, w, 5, &scale, 1, NULL), ASSOC_ESIZE);
	cr_assert(strstr(assoc_kernel_error(k), "not a whole number of queries"), "%s", assoc_kernel_error(k));
	AssocPaged none = pv;
	none.block_table = NULL;
	cr_assert_eq(assoc_run_paged_device(k, H, G, &none, v, 5, &scale, 1, NULL), ASSOC_EINVAL);
	none = pv, none.rows = 0;
	cr_assert_eq(assoc_run_paged_device(k, H, G, &none, v, 5, &scale, 1, NULL), ASSOC_EINVAL);
	assoc_kernel_free(k);
	/* a kernel of another device */
	AssocKernel *ki = NULL;
	cr_assert_eq(assoc_compile(s, "interp", 0, &ki), ASSOC_OK);
	cr_assert_eq(assoc_run_paged_device(ki, H, G, &pv, v, 5, &scale, 1, NULL), ASSOC_EDEVICE);
	cr_assert(strstr(assoc_kernel_error(ki), "compiled for \"interp\""), "%s", assoc_kernel_error(ki));
	assoc_kernel_free(ki);
	assoc_spec_free(s);
	fake_close(&f);
}

/* The host form on a gpu kernel: the whole batch in one launch, a row
 * of the grid a sequence, its arrays copied up once (q, the pool's k and
 * v, the table, seq_lens, cu_seqlens_q) and its outputs down once, for
 * decoding and for chunked prefill alike. */
Test(lib, run_paged_on_host_arrays_launches_once, .timeout = 300)
{
	char dir[] = "/tmp/assoc-libpagedh-XXXXXX";
	Fake f = fake_open(dir, "");
	unsigned (*grid_y)(void) = (unsigned (*)(void))dlsym(f.lib, "fakecuda_grid_y");
	cr_assert(grid_y);
	AssocSpec *s = spec_ok("specs/attention.yaml");
	AssocKernel *k = NULL;
	cr_assert_eq(assoc_compile(s, "gpu", 0, &k), ASSOC_OK, "%s", assoc_kernel_error(k));
	enum { B = 3, P = 16, PAGES = 8, MAXP = 4, H = 4, G = 2, D = 64, ROWS = 9 };
	int32_t table[B * MAXP] = {0, 1, 2, 3, 4, -1, -1, -1, 5, 6, 7, -1}, lens[B] = {60, 7, 40};
	int32_t cu[B + 1] = {0, 5, 6, ROWS};
	size_t pool = (size_t)PAGES * P * G * D * 2;
	char *kp = calloc(pool, 1), *vp = calloc(pool, 1), *q = calloc(ROWS * H * D, 2);
	float *out = calloc(ROWS * H * D, 4), *lse = calloc(ROWS * H, 4);
	AssocValue scale = {"scale", 0.125};
	for (int prefill = 0; prefill < 2; prefill++) {
		int rows = prefill ? ROWS : B;
		AssocBuffer b[] = {{"q", q, (size_t)rows * H * D * 2}, {"k", kp, pool}, {"v", vp, pool},
				   {"out", out, (size_t)rows * H * D * 4}, {"lse", lse, (size_t)rows * H * 4}};
		AssocPaged pg = {B, P, PAGES, MAXP, table, lens, prefill ? cu : NULL, prefill ? 0 : 1};
		int copies0, syncs0, copies1, syncs1, before = f.launches();
		f.syncs(&copies0, &syncs0);
		cr_assert_eq(assoc_run_paged(k, H, G, &pg, b, 5, &scale, 1), ASSOC_OK, "%s", assoc_kernel_error(k));
		f.syncs(&copies1, &syncs1);
		cr_assert_eq(f.launches() - before, 1, "%s: %d launches", prefill ? "prefill" : "decoding",
			     f.launches() - before);
		cr_assert_eq(grid_y(), B, "a row of the grid a sequence");
		cr_assert_eq(copies1 - copies0, (prefill ? 6 : 5) + 2, "%s: %d copies", prefill ? "prefill" : "decoding",
			     copies1 - copies0);
	}
	free(kp), free(vp), free(q), free(out), free(lse);
	assoc_kernel_free(k);
	assoc_spec_free(s);
	fake_close(&f);
}

/* A run on device pointers enqueues on the caller's stream in the
 * caller's context and returns: no host copy, no synchronization. */
Test(lib, run_device_enqueues_on_the_callers_stream, .timeout = 120)
{
	char dir[] = "/tmp/assoc-libdev-XXXXXX";
	Fake f = fake_open(dir, "");
	AssocSpec *s = spec_ok("specs/online_softmax.yaml");
	AssocKernel *k = NULL;
	cr_assert_eq(assoc_compile(s, "gpu", 0, &k), ASSOC_OK, "%s", assoc_kernel_error(k));
	AssocBuffer b[] = {{"x", dev_alloc(&f, 40), 40}, {"y", dev_alloc(&f, 40), 40}, {"lse", dev_alloc(&f, 8), 8}};
	void *stream = (void *)0x5150, *got_stream, *got_ctx, *cur;
	int copies0, syncs0, copies1, syncs1, na, nf;
	f.syncs(&copies0, &syncs0);
	int before = f.launches();
	f.set_ctx(NULL);
	cr_assert_eq(assoc_run_device(k, 1, 1, 2, 5, b, 3, NULL, 0, stream), ASSOC_OK, "%s", assoc_kernel_error(k));
	f.syncs(&copies1, &syncs1);
	f.last(&got_stream, &got_ctx, &na, &nf);
	f.get_ctx(&cur);
	cr_assert_geq(f.launches() - before, 1, "it launched");
	cr_assert_eq(got_stream, stream, "on the caller's stream");
	cr_assert_eq(copies1, copies0, "no host copy");
	cr_assert_eq(syncs1, syncs0, "no synchronization");
	cr_assert_eq(got_ctx, (void *)0x1, "no current context: the primary one");
	cr_assert_eq(cur, (void *)0x1, "made current, as the CUDA runtime does");

	/* a context of the caller's on the same device: launched there, left current */
	f.set_ctx((void *)0x77);
	cr_assert_eq(assoc_run_device(k, 1, 1, 2, 5, b, 3, NULL, 0, NULL), ASSOC_OK, "%s", assoc_kernel_error(k));
	f.last(&got_stream, &got_ctx, &na, &nf);
	f.get_ctx(&cur);
	cr_assert_eq(got_ctx, (void *)0x77, "in the caller's current context");
	cr_assert_null(got_stream, "NULL: the legacy default stream");
	cr_assert_eq(cur, (void *)0x77);
	f.syncs(&copies1, &syncs1);
	cr_assert_eq(copies1, copies0);
	cr_assert_eq(syncs1, syncs0);

	/* a context on another device than the kernel's */
	setenv("FAKECUDA", "ctxdev=1", 1);
	f.set_ctx((void *)0x78);
	cr_assert_eq(assoc_run_device(k, 1, 1, 2, 5, b, 3, NULL, 0, stream), ASSOC_EDEVICE);
	cr_assert(strstr(assoc_kernel_error(k), "the current CUDA context is on device 1"), "%s", assoc_kernel_error(k));
	f.set_ctx((void *)0x1);
	assoc_kernel_free(k);
	assoc_spec_free(s);
	fake_close(&f);
}

/* A program with a context of its own current compiles, runs on device
 * pointers in its context and on host arrays in the kernel's own (the
 * primary context, whose modules those are), and finds its context
 * current after each call; with no context current, none is left after
 * assoc_compile either. */
Test(lib, a_programs_own_context_stays_current, .timeout = 120)
{
	char dir[] = "/tmp/assoc-libctx-XXXXXX";
	Fake f = fake_open(dir, "");
	void (*primary)(int *, int *) = (void (*)(int *, int *))dlsym(f.lib, "fakecuda_primary");
	cr_assert(primary);
	AssocSpec *s = spec_ok("specs/online_softmax.yaml");
	void *own = (void *)0x77, *cur, *got_stream, *got_ctx;
	int na, nf, refs0, made0, refs, made;
	AssocBuffer b[] = {{"x", dev_alloc(&f, 40), 40}, {"y", dev_alloc(&f, 40), 40}, {"lse", dev_alloc(&f, 8), 8}};
	primary(&refs0, &made0);
	f.set_ctx(own);
	AssocKernel *k = NULL;
	cr_assert_eq(assoc_compile(s, "gpu", 0, &k), ASSOC_OK, "%s", assoc_kernel_error(k));
	f.get_ctx(&cur);
	cr_assert_eq(cur, own, "assoc_compile leaves the program's context current");
	primary(&refs, &made);
	cr_expect(refs == refs0 + 1 && made == made0, "the kernel holds the primary context (%d, %d made)", refs,
		  made - made0);
	cr_assert_eq(assoc_run_device(k, 1, 1, 2, 5, b, 3, NULL, 0, NULL), ASSOC_OK, "%s", assoc_kernel_error(k));
	f.last(&got_stream, &got_ctx, &na, &nf);
	f.get_ctx(&cur);
	cr_expect_eq(got_ctx, own, "launched in the program's context");
	cr_expect_eq(cur, own);
	float x[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, y[10], lse[2];
	AssocBuffer h[] = {{"x", x, sizeof x}, {"y", y, sizeof y}, {"lse", lse, sizeof lse}};
	cr_assert_eq(assoc_run(k, 2, 5, h, 3, NULL, 0), ASSOC_OK, "%s", assoc_kernel_error(k));
	f.last(&got_stream, &got_ctx, &na, &nf);
	f.get_ctx(&cur);
	cr_expect_eq(got_ctx, (void *)0x1, "host arrays: in the kernel's own context");
	cr_expect_eq(cur, own, "and the program's back after");
	assoc_kernel_free(k);
	f.get_ctx(&cur);
	cr_expect_eq(cur, own);
	/* no context current: none after */
	f.set_ctx(NULL);
	cr_assert_eq(assoc_compile(s, "gpu", 0, &k), ASSOC_OK, "%s", assoc_kernel_error(k));
	f.get_ctx(&cur);
	cr_expect_null(cur, "assoc_compile made no context current");
	assoc_kernel_free(k);
	f.set_ctx((void *)0x1);
	assoc_spec_free(s);
	fake_close(&f);
}

enum { EMU_ROWS = 6, EMU_LEN = 777 };

/* x and y at 16 bytes in every job: whether a row takes the 16-byte loop,
 * and so the order its fold takes, follows the buffers' alignment */
typedef struct {
	AssocKernel *k;
	_Alignas(16) float x[EMU_ROWS * EMU_LEN];
	_Alignas(16) float y[EMU_ROWS * EMU_LEN];
	float lse[EMU_ROWS];
	AssocStatus st;
} EmuJob;

static void *emu_job(void *arg)
{
	EmuJob *j = arg;
	AssocBuffer b[] = {{"x", j->x, sizeof j->x}, {"y", j->y, sizeof j->y}, {"lse", j->lse, sizeof j->lse}};
	for (int r = 0; r < 5 && !j->st; r++)
		j->st = assoc_run(j->k, EMU_ROWS, EMU_LEN, b, 3, NULL, 0);
	return NULL;
}

/* Two threads, each with its own kernel of one spec handle on emu: the
 * two share the emulator's module, whose device is one, each plans its
 * runs on a carrier of its own, and they get what one thread alone gets,
 * bit for bit. */
Test(lib, emu_kernels_of_one_spec_in_two_threads, .timeout = 300)
{
	char why[256];
	if (!emu_available(why, sizeof why))
		cr_skip_test("no emulator: %s", why);
	AssocSpec *s = spec_ok("specs/online_softmax.yaml");
	static EmuJob job[2], alone;
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(assoc_compile(s, "emu", 0, &job[i].k), ASSOC_OK, "%s", assoc_kernel_error(job[i].k));
		for (int e = 0; e < EMU_ROWS * EMU_LEN; e++)
			job[i].x[e] = alone.x[e] = (float)((e * 37 + i * 11) % 101) / 7.0f - 5;
	}
	alone.k = job[0].k;
	for (int e = 0; e < EMU_ROWS * EMU_LEN; e++)
		alone.x[e] = job[1].x[e];
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, emu_job, &job[i]), 0);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	emu_job(&alone);
	for (int i = 0; i < 2; i++)
		cr_assert_eq(job[i].st, ASSOC_OK, "thread %d: %s", i, assoc_kernel_error(job[i].k));
	cr_assert_eq(alone.st, ASSOC_OK);
	cr_expect_eq(memcmp(job[1].y, alone.y, sizeof alone.y), 0, "y as one thread alone gets it");
	cr_expect_eq(memcmp(job[1].lse, alone.lse, sizeof alone.lse), 0, "lse as one thread alone gets it");
	for (int i = 0; i < 2; i++)
		assoc_kernel_free(job[i].k);
	assoc_spec_free(s);
}

enum { BUILT_ROWS = 5, BUILT_LEN = 301 };

typedef struct {
	const char *path;
	pthread_barrier_t *go;
	float x[BUILT_ROWS * BUILT_LEN], out[BUILT_ROWS];
	AssocStatus st;
	char err[512];
} BuiltJob;

/* Load, compile for emu and run, from the barrier on. */
static void *built_job(void *arg)
{
	BuiltJob *j = arg;
	if (j->go)
		pthread_barrier_wait(j->go);
	AssocSpec *s;
	AssocKernel *k = NULL;
	AssocArray a;
	j->st = assoc_spec_load(&s, j->path, NULL, 0);
	if (!j->st && !(j->st = assoc_array_info(s, 1, &a)) && !(j->st = assoc_compile(s, "emu", 0, &k))) {
		AssocBuffer b[] = {{"x", j->x, sizeof j->x}, {a.name, j->out, sizeof j->out}};
		j->st = assoc_run(k, BUILT_ROWS, BUILT_LEN, b, 2, NULL, 0);
	}
	snprintf(j->err, sizeof j->err, "%s", k ? assoc_kernel_error(k) : assoc_spec_error(s));
	assoc_kernel_free(k);
	assoc_spec_free(s);
	return NULL;
}

/* Two specs compiled for emu at once on two threads, first in the
 * process (each test is a process of its own): the templates the module
 * generation reads are found once for both, and each module loaded under
 * a name of its own, so each gets what it gets alone. */
Test(lib, emu_modules_of_two_specs_built_on_two_threads, .timeout = 300)
{
	char why[256];
	if (!emu_available(why, sizeof why))
		cr_skip_test("no emulator: %s", why);
	static BuiltJob job[2], alone[2];
	pthread_barrier_t go;
	pthread_barrier_init(&go, NULL, 2);
	const char *path[2] = {"specs/logsumexp.yaml", "specs/max.yaml"};
	for (int i = 0; i < 2; i++) {
		job[i].path = alone[i].path = path[i];
		job[i].go = &go;
		for (int e = 0; e < BUILT_ROWS * BUILT_LEN; e++)
			job[i].x[e] = alone[i].x[e] = (float)sin(e * 0.7 + i) * 3;
	}
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, built_job, &job[i]), 0);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&go);
	for (int i = 0; i < 2; i++) {
		built_job(&alone[i]);
		cr_assert_eq(job[i].st, ASSOC_OK, "%s: %s", path[i], job[i].err);
		cr_assert_eq(alone[i].st, ASSOC_OK, "%s alone: %s", path[i], alone[i].err);
		cr_expect_eq(memcmp(job[i].out, alone[i].out, sizeof job[i].out), 0, "%s: as alone", path[i]);
	}
}

/* A kernel of a merge lawful for some values of its param only: each
 * run at new values reaches the verdict at them (the prover and the
 * trials build terms into the kernel's carrier). */
static const char abs_scaled[] = "carrier: abs_scaled\nparams: {p: f32}\nelement: {x: f32}\nstate: {s: f32}\n"
				 "identity: {s: 0}\nlift: {s: abs(x) * p}\nmerge: {s: abs(a.s + b.s)}\n"
				 "finalize: {out: s}\nreference: {out: sum(abs(x) * p)}\nlaws: [commutative]\n";

enum { JUDGED_RUNS = 12, JUDGED_LEN = 37 };

typedef struct {
	AssocKernel *k;
	pthread_barrier_t *go;
	int bad; /* runs whose status or result is wrong */
	char err[256];
} JudgedJob;

static void *judged_job(void *arg)
{
	JudgedJob *j = arg;
	float x[3][JUDGED_LEN], out[3];
	double want = 0;
	for (int r = 0; r < 3; r++)
		for (int e = 0; e < JUDGED_LEN; e++)
			x[r][e] = (float)sin(r * 5 + e), want += r ? 0 : fabs(x[r][e]);
	AssocBuffer b[] = {{"x", x, sizeof x}, {"out", out, sizeof out}};
	pthread_barrier_wait(j->go);
	for (int i = 0; i < JUDGED_RUNS; i++) {
		/* values not judged before: each run reaches a verdict */
		AssocValue p = {"p", 0.5 + i / 64.0};
		AssocStatus st = assoc_run(j->k, 3, JUDGED_LEN, b, 2, &p, 1);
		if (st || fabs(out[0] - want * p.value) > 1e-4 * want) {
			j->bad++;
			snprintf(j->err, sizeof j->err, "run %d: %s, out %g for %g", i, st ? assoc_kernel_error(j->k) : "ok",
				 out[0], want * p.value);
		}
	}
	return NULL;
}

/* Two kernels of one spec (cpu and interp) whose runs judge their params,
 * on two threads at once: each judges into a carrier of its own, so
 * neither sees the other's terms half built, and the spec's carrier (which
 * assoc_spec_check builds into on the spec's thread) gains no term. */
Test(lib, kernels_of_one_spec_judge_params_on_two_threads, .timeout = 120)
{
	char why[256];
	if (!llvm_available(why, sizeof why))
		cr_skip_test("no CPU backend: %s", why);
	AssocSpec *s;
	cr_assert_eq(assoc_spec_load_text(&s, abs_scaled, strlen(abs_scaled), NULL, 0), ASSOC_OK, "%s",
		     assoc_spec_error(s));
	pthread_barrier_t go;
	pthread_barrier_init(&go, NULL, 2);
	JudgedJob j[2] = {{.go = &go}, {.go = &go}};
	const char *dev[2] = {"cpu", "interp"};
	for (int i = 0; i < 2; i++)
		cr_assert_eq(assoc_compile(s, dev[i], 1, &j[i].k), ASSOC_OK, "%s", assoc_kernel_error(j[i].k));
	int terms = ir_nnodes(s->c->ir);
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, judged_job, &j[i]), 0);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&go);
	cr_expect_eq(ir_nnodes(s->c->ir), terms, "the runs built %d terms into the spec's carrier",
		     ir_nnodes(s->c->ir) - terms);
	cr_expect_neq(j[0].k->c->ir, j[1].k->c->ir, "each kernel judges into a carrier of its own");
	for (int i = 0; i < 2; i++) {
		cr_expect_eq(j[i].bad, 0, "%s: %d runs wrong, the last %s", dev[i], j[i].bad, j[i].err);
		assoc_kernel_free(j[i].k);
	}
	assoc_spec_free(s);
}

/* No rows on the gpu: nothing launched (a block-a-row kernel does not
 * look at rows and would read and write row 0), nothing copied into the
 * caller's NULL buffers of 0 bytes, host or device pointers alike. */
Test(lib, gpu_runs_no_rows_without_a_launch, .timeout = 120)
{
	char dir[] = "/tmp/assoc-libnorows-XXXXXX";
	Fake f = fake_open(dir, "");
	const char *specs[] = {"specs/sum.yaml", "specs/online_softmax.yaml"};
	for (int i = 0; i < 2; i++) {
		AssocSpec *s = spec_ok(specs[i]);
		AssocKernel *k = NULL;
		cr_assert_eq(assoc_compile(s, "gpu", 0, &k), ASSOC_OK, "%s", assoc_kernel_error(k));
		AssocBuffer b[] = {{"x", NULL, 0}, {"y", NULL, 0}, {"lse", NULL, 0}, {"s", NULL, 0}};
		int n = i ? 3 : 2;
		if (!i)
			b[1] = b[3];
		int before = f.launches();
		cr_assert_eq(assoc_run(k, 0, 5000, b, n, NULL, 0), ASSOC_OK, "%s: %s", specs[i], assoc_kernel_error(k));
		cr_expect_eq(f.launches(), before, "%s: host arrays, no rows: no launch", specs[i]);
		cr_assert_eq(assoc_run_device(k, 1, 1, 0, 5000, b, n, NULL, 0, NULL), ASSOC_OK, "%s: %s", specs[i],
			     assoc_kernel_error(k));
		cr_expect_eq(f.launches(), before, "%s: device arrays, no rows: no launch", specs[i]);
		assoc_kernel_free(k);
		assoc_spec_free(s);
	}
	fake_close(&f);
}

/* Sizes and pointers are checked as assoc_run_heads checks them; a kernel
 * of another device is refused with the reason. */
Test(lib, run_device_checks_buffers_and_device, .timeout = 120)
{
	char dir[] = "/tmp/assoc-libdev-XXXXXX";
	Fake f = fake_open(dir, "");
	AssocSpec *s = spec_ok("specs/online_softmax.yaml");
	AssocKernel *k = NULL;
	cr_assert_eq(assoc_compile(s, "gpu", 0, &k), ASSOC_OK, "%s", assoc_kernel_error(k));
	void *x = dev_alloc(&f, 40), *y = dev_alloc(&f, 40), *lse = dev_alloc(&f, 8);
	int before = f.launches();
	AssocBuffer small[] = {{"x", x, 40}, {"y", y, 36}, {"lse", lse, 8}};
	cr_assert_eq(assoc_run_device(k, 1, 1, 2, 5, small, 3, NULL, 0, NULL), ASSOC_ESIZE);
	cr_assert(strstr(assoc_kernel_error(k), "buffer 'y' has 36 bytes; the shape needs 40"), "%s",
		  assoc_kernel_error(k));
	AssocBuffer null[] = {{"x", NULL, 40}, {"y", y, 40}, {"lse", lse, 8}};
	cr_assert_eq(assoc_run_device(k, 1, 1, 2, 5, null, 3, NULL, 0, NULL), ASSOC_EINVAL);
	cr_assert(strstr(assoc_kernel_error(k), "buffer 'x' has no data"), "%s", assoc_kernel_error(k));
	AssocBuffer two[] = {{"x", x, 40}, {"y", y, 40}};
	cr_assert_eq(assoc_run_device(k, 1, 1, 2, 5, two, 2, NULL, 0, NULL), ASSOC_EINVAL);
	AssocBuffer ok[] = {{"x", x, 40}, {"y", y, 40}, {"lse", lse, 8}};
	cr_assert_eq(assoc_run_device(k, 3, 2, 2, 5, ok, 3, NULL, 0, NULL), ASSOC_EINVAL, "heads not a multiple");
	cr_assert_eq(assoc_run_device(NULL, 1, 1, 2, 5, ok, 3, NULL, 0, NULL), ASSOC_EINVAL);
	AssocBuffer in_place[] = {{"x", x, 40}, {"y", x, 40}, {"lse", lse, 8}};
	cr_assert_eq(assoc_run_device(k, 1, 1, 2, 5, in_place, 3, NULL, 0, NULL), ASSOC_EINVAL);
	cr_assert(strstr(assoc_kernel_error(k), "output 'y' overlaps input 'x' in memory"), "%s", assoc_kernel_error(k));
	cr_assert_eq(f.launches(), before, "nothing launched");
	assoc_kernel_free(k);

	/* attention's f16 keys 2 bytes past a 4-byte boundary in device
	 * memory: refused (the kernels load them two at a time); the same on
	 * host arrays runs, copied into allocations of the kernel's own */
	AssocSpec *at = spec_ok("specs/attention.yaml");
	cr_assert_eq(assoc_compile(at, "gpu", 0, &k), ASSOC_OK, "%s", assoc_kernel_error(k));
	char *q = dev_alloc(&f, 2 * 64 * 2), *kv = dev_alloc(&f, 2 * 3 * 64 * 2 + 4), *o = dev_alloc(&f, 2 * 64 * 4),
	     *l = dev_alloc(&f, 2 * 4);
	AssocValue scale = {"scale", 0.125};
	AssocBuffer odd[] = {{"q", q, 2 * 64 * 2}, {"k", kv + 2, 3 * 64 * 2}, {"v", kv + 2 + 3 * 64 * 2, 3 * 64 * 2},
			     {"out", o, 2 * 64 * 4}, {"lse", l, 2 * 4}};
	cr_assert_eq(assoc_run_device(k, 1, 1, 2, 3, odd, 5, &scale, 1, NULL), ASSOC_EINVAL);
	cr_assert(strstr(assoc_kernel_error(k), "buffer 'k' at ") &&
			  strstr(assoc_kernel_error(k), "is not 4-byte aligned: the attention kernels load its f16 "
							"elements two at a time"),
		  "%s", assoc_kernel_error(k));
	cr_assert_eq(f.launches(), before, "nothing launched");
	_Alignas(16) static uint16_t hq[2 * 64], hkv[2 * 3 * 64 + 2];
	float hout[2 * 64], hlse[2];
	AssocBuffer host[] = {{"q", hq, sizeof hq}, {"k", hkv + 1, 3 * 64 * 2}, {"v", hkv + 1 + 3 * 64, 3 * 64 * 2},
			      {"out", hout, sizeof hout}, {"lse", hlse, sizeof hlse}};
	cr_assert_eq(assoc_run(k, 2, 3, host, 5, &scale, 1), ASSOC_OK, "host arrays are copied: %s",
		     assoc_kernel_error(k));
	assoc_kernel_free(k);
	assoc_spec_free(at);

	AssocKernel *ki = NULL;
	cr_assert_eq(assoc_compile(s, "interp", 1, &ki), ASSOC_OK, "%s", assoc_kernel_error(ki));
	cr_assert_eq(assoc_run_device(ki, 1, 1, 2, 5, ok, 3, NULL, 0, NULL), ASSOC_EDEVICE);
	cr_assert(strstr(assoc_kernel_error(ki), "compiled for \"interp\""), "%s", assoc_kernel_error(ki));
	cr_assert_eq(assoc_tune(ki, 1, 1, 2, 5, NULL, 0), ASSOC_EDEVICE);
	cr_assert(strstr(assoc_kernel_error(ki), "assoc_tune tunes kernels compiled for \"gpu\""), "%s",
		  assoc_kernel_error(ki));
	assoc_kernel_free(ki);
	assoc_spec_free(s);
	fake_close(&f);
}

/* Every array of s for a shape, in fake device memory. */
static int dev_bufs(Fake *f, AssocSpec *s, int64_t heads, int64_t kv, int64_t rows, int64_t len, AssocBuffer *b)
{
	int n = assoc_array_count(s);
	for (int i = 0; i < n; i++) {
		AssocArray a;
		cr_assert_eq(assoc_array_info(s, i, &a), ASSOC_OK);
		size_t bytes = assoc_array_bytes_heads(s, i, heads, kv, rows, len);
		b[i] = (AssocBuffer){a.name, dev_alloc(f, bytes), bytes};
	}
	return n;
}

/* A split variant's workspace (attention decoding splits its keys):
 * allocated on the caller's stream, kept for the next run on it, a second
 * one for another stream, freed with the kernel once the work that reads
 * them is done; without the stream-ordered allocator, the plain one. */
Test(lib, run_device_workspace_a_stream, .timeout = 120)
{
	char dir[] = "/tmp/assoc-libdev-XXXXXX";
	Fake f = fake_open(dir, "");
	AssocSpec *s;
	AssocValue dims[] = {{"d", 32}, {"dv", 32}};
	cr_assert_eq(assoc_spec_load(&s, "specs/attention.yaml", dims, 2), ASSOC_OK, "%s", assoc_spec_error(s));
	AssocKernel *k = NULL;
	cr_assert_eq(assoc_compile(s, "gpu", 0, &k), ASSOC_OK, "%s", assoc_kernel_error(k));
	enum { H = 8, KV = 2, L = 1 << 14 };
	AssocBuffer b[16];
	int nb = dev_bufs(&f, s, H, KV, 1, L, b);
	AssocValue scale[] = {{"scale", 0.125}};
	void *st, *ctx;
	int a0, a1, a2, a3, fr;
	f.last(&st, &ctx, &a0, &fr);
	cr_assert_eq(assoc_run_device(k, H, KV, 1, L, b, nb, scale, 1, (void *)0x10), ASSOC_OK, "%s",
		     assoc_kernel_error(k));
	f.last(&st, &ctx, &a1, &fr);
	cr_assert_eq(a1 - a0, 1, "decoding splits the keys: its workspace allocated on the stream");
	cr_assert_eq(assoc_run_device(k, H, KV, 1, L, b, nb, scale, 1, (void *)0x10), ASSOC_OK, "%s",
		     assoc_kernel_error(k));
	f.last(&st, &ctx, &a2, &fr);
	cr_assert_eq(a2, a1, "the stream's workspace is kept");
	cr_assert_eq(assoc_run_device(k, H, KV, 1, L, b, nb, scale, 1, (void *)0x20), ASSOC_OK, "%s",
		     assoc_kernel_error(k));
	f.last(&st, &ctx, &a3, &fr);
	cr_assert_eq(a3 - a2, 1, "another stream, another workspace");
	/* freed while the runs may still read them: after they are done */
	int (*unsafe_frees)(void) = (int (*)(void))dlsym(f.lib, "fakecuda_unsafe_frees");
	cr_assert(unsafe_frees);
	assoc_kernel_free(k);
	cr_assert_eq(unsafe_frees(), 0, "a workspace freed before the launches that read it were done");

	setenv("FAKECUDA", "async=0", 1);
	cr_assert_eq(assoc_compile(s, "gpu", 0, &k), ASSOC_OK, "%s", assoc_kernel_error(k));
	cr_assert_eq(assoc_run_device(k, H, KV, 1, L, b, nb, scale, 1, (void *)0x10), ASSOC_OK, "%s",
		     assoc_kernel_error(k));
	int syncs, copies;
	f.syncs(&copies, &syncs);
	f.last(&st, &ctx, &a0, &fr);
	cr_assert_eq(a0, a3, "no memory pools: cuMemAlloc");
	cr_assert_eq(st, (void *)0x10);
	assoc_kernel_free(k);
	assoc_spec_free(s);
	fake_close(&f);
}

/* assoc_tune stores its choice in the tuning cache; a second kernel of the
 * spec runs that choice for the shape (the fake computes zeros: a carrier
 * whose results are zeros passes its check). */
Test(lib, tune_stores_and_a_second_kernel_uses_it, .timeout = 300)
{
	static const char text[] = "carrier: zero\nelement: {x: f32}\nstate: {s: f32}\nidentity: {s: 0}\n"
				   "lift: {s: 0 * x}\nmerge:\n  s: a.s + b.s\nreference:\n  s: 0 * sum(x)\n"
				   "laws: [commutative]\n";
	char dir[] = "/tmp/assoc-libdev-XXXXXX";
	Fake f = fake_open(dir, "");
	AssocSpec *s;
	cr_assert_eq(assoc_spec_load_text(&s, text, strlen(text), NULL, 0), ASSOC_OK, "%s", assoc_spec_error(s));
	AssocKernel *k = NULL, *k2 = NULL;
	cr_assert_eq(assoc_compile(s, "gpu", 0, &k), ASSOC_OK, "%s", assoc_kernel_error(k));
	enum { R = 1, L = 1 << 20 };
	AssocBuffer b[] = {{"x", dev_alloc(&f, 4 * L), 4 * L}, {"s", dev_alloc(&f, 4), 4}};
	cr_assert_eq(assoc_run_device(k, 1, 1, R, L, b, 2, NULL, 0, NULL), ASSOC_OK, "%s", assoc_kernel_error(k));
	unsigned rule_grid = f.grid();
	int n0 = f.launches();
	cr_assert_eq(assoc_run_device(k, 1, 1, R, L, b, 2, NULL, 0, NULL), ASSOC_OK, "%s", assoc_kernel_error(k));
	int rule_launches = f.launches() - n0;

	void *cur0, *cur1;
	f.set_ctx((void *)0x77);
	f.get_ctx(&cur0);
	cr_assert_eq(assoc_tune(k, 1, 1, R, L, NULL, 0), ASSOC_OK, "%s", assoc_kernel_error(k));
	f.get_ctx(&cur1);
	cr_assert_eq(cur1, cur0, "the caller's current context is left as it was");
	f.set_ctx(NULL);
	char ls[512];
	snprintf(ls, sizeof ls, "ls %s/assoc/tune | wc -l", dir);
	char out[64];
	sh(ls, out, sizeof out, 0);
	cr_assert_eq(atoi(out), 1, "one entry in the tuning cache: %s", out);

	cr_assert_eq(assoc_compile(s, "gpu", 0, &k2), ASSOC_OK, "%s", assoc_kernel_error(k2));
	n0 = f.launches();
	cr_assert_eq(assoc_run_device(k2, 1, 1, R, L, b, 2, NULL, 0, NULL), ASSOC_OK, "%s", assoc_kernel_error(k2));
	int tuned_launches = f.launches() - n0;
	unsigned tuned_grid = f.grid();
	cr_assert(tuned_grid != rule_grid || tuned_launches != rule_launches,
		  "the tuned choice (every candidate times the same: the first) is not the rule's split: grid %u, "
		  "%d launches",
		  tuned_grid, tuned_launches);
	setenv("ASSOC_TUNE", "off", 1);
	n0 = f.launches();
	cr_assert_eq(assoc_run_device(k2, 1, 1, R, L, b, 2, NULL, 0, NULL), ASSOC_OK, "%s", assoc_kernel_error(k2));
	unsetenv("ASSOC_TUNE");
	cr_assert_eq(f.grid(), rule_grid, "ASSOC_TUNE=off: the rule's variant");
	cr_assert_eq(f.launches() - n0, rule_launches);
	assoc_kernel_free(k);
	assoc_kernel_free(k2);
	assoc_spec_free(s);
	fake_close(&f);
}

/* make install puts the bundled specs in PREFIX/share/assoc/specs, where
 * the library and the command line find a relative spec path missing from
 * the working directory: the README's example, built with pkg-config
 * against the installed files, runs on emu from another directory; a spec
 * found nowhere names the places looked in.  Installed under DESTDIR (the
 * default PREFIX kept): a PREFIX of its own would rebuild and relink the
 * libraries that the suites running beside this one load; the specs are
 * then found beside the library (dladdr), not at the built-in PREFIX. */
Test(lib, installed_example_runs_from_any_directory, .timeout = 600)
{
	char why[512];
	if (!run_device_find("emu")->available(why, sizeof why))
		cr_skip("no host C++ compiler for the emulator: %s", why);
	if (sh("pkg-config --version", why, sizeof why, 0))
		cr_skip("no pkg-config here");
	char dir[] = "/tmp/assoc-prefix-XXXXXX", cmd[4096], out[8192], pre[512];
	test_tmpdir(dir);
	/* installing must not relink what the suites beside this one load */
	cr_assert_eq(sh("make -q build/assoc build/libassoc.so build/libassoc-api.a", out, sizeof out, 0), 0,
		     "build/assoc and the libraries are out of date: make build/assoc lib first (make test does)");
	snprintf(cmd, sizeof cmd, "make -s install DESTDIR=%s", dir);
	cr_assert_eq(sh(cmd, out, sizeof out, 1), 0, "%s", out);
	/* the PREFIX make used, as its stamp holds it */
	cr_assert_eq(sh("cat build/prefix", out, sizeof out, 0), 0);
	out[strcspn(out, "\n")] = 0;
	snprintf(pre, sizeof pre, "%s%.400s", dir, out);
	snprintf(cmd, sizeof cmd,
		 "src=$PWD/tests/example/example_lib.c && mkdir -p %s/elsewhere && cd %s/elsewhere && "
		 "cc -std=c11 -o example $src $(PKG_CONFIG_PATH=%s/lib/pkgconfig pkg-config --define-variable=prefix=%s "
		 "--cflags --libs assoc) && ./example emu",
		 dir, dir, pre, pre);
	cr_assert_eq(sh(cmd, out, sizeof out, 1), 0, "%s", out);
	cr_assert(strstr(out, "row 1: lse 1.609438, y 0.200000 0.200000"), "%s", out);
	snprintf(cmd, sizeof cmd, "cd %s/elsewhere && %s/bin/assoc check specs/sum.yaml", dir, pre);
	cr_assert_eq(sh(cmd, out, sizeof out, 1), 0, "the command line finds the installed spec: %s", out);
	snprintf(cmd, sizeof cmd, "cd %s/elsewhere && %s/bin/assoc check specs/no_such.yaml", dir, pre);
	cr_assert_neq(sh(cmd, out, sizeof out, 1), 0);
	cr_assert(strstr(out, "not in the working directory nor in ") && strstr(out, "/bin/../share/assoc/specs"), "%s",
		  out);
}

/* A spec found nowhere: the error says where the loader looked. */
Test(lib, missing_spec_says_where_it_looked)
{
	AssocSpec *s = NULL;
	cr_assert_eq(assoc_spec_load(&s, "specs/no_such_spec.yaml", NULL, 0), ASSOC_ESPEC);
	cr_assert(strstr(assoc_spec_error(s), "cannot open: No such file or directory; not in the working directory nor in "),
		  "%s", assoc_spec_error(s));
	cr_assert(strstr(assoc_spec_error(s), "/share/assoc/specs"), "%s", assoc_spec_error(s));
	assoc_spec_free(s);
}
