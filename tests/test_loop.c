/* test_loop.c: loop specs (step, step_right, inverse) load, with lift
 * derived as step(identity, x), and are refused where a merge is needed. */
#include <glob.h>
#include <string.h>

#include "testutil.h"

Test(loop, shipped_loops_load)
{
	glob_t g;
	cr_assert_eq(glob("specs/loops/*.yaml", 0, NULL, &g), 0);
	cr_assert_geq(g.gl_pathc, 8);
	for (size_t i = 0; i < g.gl_pathc; i++) {
		Carrier *c = load_ok(g.gl_pathv[i]);
		cr_assert(c->step || c->step_right, "%s", g.gl_pathv[i]);
		cr_assert_null(c->merge, "%s: a loop spec has no merge until explore derives one", g.gl_pathv[i]);
		for (int f = 0; f < c->nstate; f++)
			cr_assert_not_null(c->lift[f]);
		spec_carrier_free(c);
	}
	globfree(&g);
}

Test(loop, lift_is_step_from_identity)
{
	Carrier *c = load_ok("specs/loops/welford_update.yaml");
	char *n = ir_str(c->ir, c->lift[0]), *mean = ir_str(c->ir, c->lift[1]), *m2 = ir_str(c->ir, c->lift[2]);
	/* the identity is substituted and constants fold; nothing else is rewritten (IEEE: 0 + y is not y for y = -0) */
	cr_assert_str_eq(n, "1");
	cr_assert_str_eq(mean, "0 + (x - 0) / 1");
	cr_assert_str_eq(m2, "0 + (x - 0) * (x - (0 + (x - 0) / 1))");
	free(n), free(mean), free(m2);
	spec_carrier_free(c);
}

Test(loop, step_is_sequential)
{
	Carrier *c = load_ok("specs/loops/welford_update.yaml");
	char *mean = ir_str(c->ir, c->step[1]);
	cr_assert_str_eq(mean, "mean + (x - mean) / (n + 1)", "mean's update sees the updated n");
	free(mean);
	spec_carrier_free(c);
}

Test(loop, inverse_and_step_right)
{
	Carrier *c = text_ok("carrier: s\nelement: {x: f32}\nstate: {s: f32}\nidentity: {s: 0}\n"
			     "step:\n  s: s + x\nstep_right:\n  s: x + s\ninverse:\n  - {x: s}\n");
	cr_assert_eq(c->ninverse, 1);
	char *x = ir_str(c->ir, c->inverse[0][0]);
	cr_assert_str_eq(x, "s");
	free(x);
	spec_carrier_free(c);
}

Test(loop, bad_loop_specs)
{
	char err[256];
	cr_assert_null(load_text("carrier: s\nelement: {x: f32}\nstate: {s: f32}\nidentity: {s: 0}\n"
				 "step_right:\n  s: x + s\ninverse:\n  - {x: s}\n", err, sizeof err));
	cr_assert(strstr(err, "'inverse' is folded with 'step'"), "%s", err);
	cr_assert_null(load_text("carrier: s\nelement: {x: f32}\nstate: {s: f32}\nidentity: {s: 0}\n"
				 "step:\n  s: s + x\ninverse:\n  - {y: s}\n", err, sizeof err));
	cr_assert(strstr(err, "'y' is not an element input"), "%s", err);
	cr_assert_null(load_text("carrier: s\nelement: {x: f32}\nstate: {s: f32}\nidentity: {s: 0}\n"
				 "step:\n  s: a.s + x\n", err, sizeof err));
	cr_assert(strstr(err, "only merge may use a. and b."), "%s", err);
	cr_assert_null(load_text("carrier: s\nelement: {x: f32}\nstate: {s: f32}\nidentity: {s: 0}\nlift: {s: x}\n",
				 err, sizeof err));
	cr_assert(strstr(err, "missing required key 'merge' (a loop spec gives 'step'"), "%s", err);
}
