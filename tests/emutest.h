/* emutest.h: the row template suites' runs on the emulator, checked
 * against the float64 reference, and the carrier they share. */
#ifndef ASSOC_EMUTEST_H
#define ASSOC_EMUTEST_H

#include <string.h>

#include "compiler/devices/emu.h"
#include "compiler/devices/run.h"
#include "cudatest.h"
#include "testutil.h"

/* Welford reading bfloat16: the row templates' f32 state over a 16-bit
 * input (test_rows.c adds its certificate). */
#define WELFORD_BF16_SPEC                                                                                      \
	"carrier: welford_bf16\nelement: {x: bf16}\nstate: {n: f32, mean: f32, m2: f32}\n"                      \
	"identity: {n: 0, mean: 0, m2: 0}\nlift: {n: 1, mean: x, m2: 0}\n"                                      \
	"merge:\n  let:\n    delta: b.mean - a.mean\n  n: a.n + b.n\n"                                            \
	"  mean: where(n == 0, 0, a.mean + delta * b.n / n)\n"                                                     \
	"  m2: where(n == 0, 0, a.m2 + b.m2 + delta^2 * a.n * b.n / n)\n"                                        \
	"finalize: {mean: mean, var: m2 / n}\n"                                                                    \
	"reference:\n  mean: sum(x) / count()\n  var: sum((x - mean)^2) / count()\nlaws: [commutative]\n"

/* Softmax of a bf16 row beside an f32 one: two element inputs of two
 * widths, and a map output. */
#define SOFTMAX_MIXED_SPEC                                                                                     \
	"carrier: softmax_mixed\nelement: {x: bf16, z: f32}\nstate: {m: f32, l: f32}\n"                        \
	"identity: {m: -inf, l: 0}\nlift: {m: x + z, l: 1}\n"                                                  \
	"merge:\n  m: max(a.m, b.m)\n"                                                                         \
	"  l: a.l * exp(where(a.m == inf, 0, a.m - m)) + b.l * exp(where(b.m == inf, 0, b.m - m))\n"           \
	"finalize: {lse: m + log(l)}\nmap:\n  y: where(m < inf, exp(x + z - m) / l, 0 * m)\n"                  \
	"reference:\n  mx: max(x + z)\n  lse: mx + log(sum(exp(where(x + z == mx, 0, x + z - mx))))\n"         \
	"  y: exp(x + z - mx) / sum(exp(x + z - mx))\nlaws: [commutative]\n"

/* d on the emulator with o (its stats in st, where not NULL), its outputs
 * cleared first, then checked against the float64 reference. */
static inline void emu_expect_ref(RunData *d, const char *what, RunOpts o, EmuStats *st)
{
	char msg[2048];
	cuda_test_cache();
	for (int k = 0; k < d->c->nfinal; k++)
		memset(d->fin[k].p, 0, d->fin[k].n * d->fin[k].width * run_kind_size(d->fin[k].kind));
	for (int k = 0; k < d->c->nmap; k++)
		memset(d->map[k].p, 0, d->map[k].n * d->map[k].width * run_kind_size(d->map[k].kind));
	int rc = emu_run_data(d, &o, st, msg, sizeof msg);
	cr_assert_eq(rc, 0, "%s %s (%d x %d): %s", what, o.config, d->rows, d->len, msg);
	RunCheck ck;
	runcheck_run(d, &ck);
	for (int k = 0; k < ck.nout; k++)
		cr_expect(ck.ok, "%s %s (%d x %d, split %d): %s at %.3g of its tolerance (max abs %.3g)", what, o.config,
			  d->rows, d->len, o.split, ck.out[k].name, ck.out[k].worst_ratio, ck.out[k].max_abs);
	runcheck_free(&ck);
}

#endif
