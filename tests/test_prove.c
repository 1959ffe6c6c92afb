/* test_prove.c: the symbolic prover's verdicts on the bundled specs and on
 * the must-prove and must-disprove cases under tests/prove/. */
#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "compiler/check/check.h"
#include "compiler/prove/prove.h"
#include "testutil.h"

/* The line for law in r, or NULL. */
static const ProofLine *law(const ProofReport *r, const char *name)
{
	for (int i = 0; i < r->n; i++)
		if (!strcmp(r->line[i].law, name))
			return &r->line[i];
	return NULL;
}

static void expect(const ProofReport *r, const char *path, const char *name, ProofStatus want)
{
	const ProofLine *l = law(r, name);
	cr_assert(l, "%s: no %s line", path, name);
	cr_expect(l->status == want, "%s: %s is %s (%s), expected %s", path, name, prove_status_name(l->status),
		  l->how, prove_status_name(want));
	if (want == PROOF_DISPROVED)
		cr_expect(strstr(l->how, "a=") || strstr(l->how, "e+e"), "%s: %s has no witness: %s", path,
			  name, l->how);
}

/* Prove path and check each law: a string of 'p' (proved), 'd', 'u' or '-' (no line)
 * for associative, identity, commutative, certificate. */
static void check(const char *path, const char *want)
{
	static const char *laws[] = {"associative", "identity", "commutative", "certificate"};
	Carrier *c = load_ok(path);
	ProofReport r;
	cr_assert_eq(prove_carrier(c, 1, &r), 0, "%s: internal error", path);
	cr_assert(r.trace, "%s: no trace", path);
	for (int i = 0; i < 4; i++) {
		if (want[i] == '-') {
			cr_expect(!law(&r, laws[i]), "%s: unexpected %s line", path, laws[i]);
			continue;
		}
		ProofStatus s = want[i] == 'p' ? PROOF_PROVED : want[i] == 'd' ? PROOF_DISPROVED : PROOF_UNKNOWN;
		expect(&r, path, laws[i], s);
	}
	cr_expect(r.seconds < 1.0 || want[0] != 'p', "%s: took %.2f s", path, r.seconds);
	prove_report_free(&r);
	spec_carrier_free(c);
}

/* The proof line of law for the spec at path (its claims trusted where
 * trust) says how with want in it. */
static void expect_how(const char *path, int trust, const char *name, const char *want)
{
	Carrier *c = load_ok(path);
	ProofReport r;
	cr_assert_eq(prove_carrier(c, trust, &r), 0, "%s: internal error", path);
	cr_expect(strstr(law(&r, name)->how, want), "%s: %s", path, law(&r, name)->how);
	prove_report_free(&r);
	spec_carrier_free(c);
}

Test(prove, bundled_specs)
{
	check("specs/argmax.yaml", "ppp-");
	check("specs/attention.yaml", "pppp");
	check("specs/layer_norm.yaml", "pppp");
	check("specs/linear_recurrence.yaml", "pp--");
	check("specs/logsumexp.yaml", "pppp");
	check("specs/max.yaml", "ppp-");
	check("specs/moe_topk_routing.yaml", "ppp-");
	check("specs/o_lse.yaml", "pppp");
	check("specs/online_softmax.yaml", "pppp");
	check("specs/sum.yaml", "ppp-");
	check("specs/welford.yaml", "pppp");
}

Test(prove, certificate_gives_transport)
{
	Carrier *c = load_ok("specs/online_softmax.yaml");
	ProofReport r;
	cr_assert_eq(prove_carrier(c, 0, &r), 0);
	cr_expect_str_eq(law(&r, "associative")->how, "transport into (max, +)");
	cr_expect_str_eq(law(&r, "commutative")->how, "transport into (max, +)");
	cr_expect_null(r.trace);
	prove_report_free(&r);
	spec_carrier_free(c);
}

Test(prove, polynomial_merges) {
	check("tests/prove/complex.yaml", "ppp-");
	check("tests/prove/quaternion.yaml", "pp--");
}

Test(prove, rational_merges) {
	check("tests/prove/chan_cov.yaml", "ppp-");
	check("tests/prove/moments.yaml", "ppp-");
}

Test(prove, selects_on_ties) {
	check("tests/prove/max_count.yaml", "ppp-");
}

/* States that read their position are merged only where their runs are
 * disjoint: a witness of two states of one position (tied in m and idx,
 * with different values) is no disproof.  Ties broken by position alone
 * commute on every pair a fold meets, the prover not knowing that two
 * such idx differ: unknown; ties that keep a's, whatever the positions,
 * are disproved on states of two positions. */
Test(prove, position_states_of_disjoint_runs) {
	check("tests/check/argmax_abs_value.yaml", "ppu-");
	check("tests/check/argmax_abs_value_ties_to_a.yaml", "ppd-");
	expect_how("tests/check/argmax_abs_value.yaml", 0, "commutative", "no states of disjoint positions");
}

/* topk is taken as a known associative and commutative operation: its
 * fields are proved without a region, beside fields proved by regions;
 * lists ranked with the other operand's indices are not. */
Test(prove, topk_as_known_operation) {
	check("tests/prove/topk_softmax.yaml", "ppp-");
	check("tests/prove/topk_crossed.yaml", "uu--");
	Carrier *c = load_ok("tests/prove/topk_softmax.yaml");
	ProofReport r;
	cr_assert_eq(prove_carrier(c, 0, &r), 0);
	const ProofLine *l = law(&r, "associative");
	cr_expect(strstr(l->how, "top-k of one multiset of lists in 2 fields"), "%s", l->how);
	cr_expect_lt(r.seconds, 0.1);
	prove_report_free(&r);
	spec_carrier_free(c);
}

/* The same top-4 and softmax written the old way, as ten fields of where
 * chains: lawful (the trials hold, nothing is disproved), but the regions
 * of its comparisons outrun the budget, and without the invariant that a
 * state's list is sorted (its lifts are not finite: no linear invariant
 * is kept) commutativity stops at a region no state reaches. */
Test(prove, top4_by_hand_is_left_unknown, .timeout = 60) {
	Carrier *c = load_ok("tests/prove/top4_by_hand.yaml");
	ProofReport r;
	cr_assert_eq(prove_carrier(c, 0, &r), 0);
	for (int i = 0; i < r.n; i++)
		cr_expect_neq(r.line[i].status, PROOF_DISPROVED, "%s: %s", r.line[i].law, r.line[i].how);
	const ProofLine *l = law(&r, "associative");
	cr_expect(l->status == PROOF_UNKNOWN && strstr(l->how, "budget"), "%s", l->how);
	prove_report_free(&r);
	spec_carrier_free(c);
}

Test(prove, maxplus_matrix) { check("tests/prove/maxplus.yaml", "pp--"); }

Test(prove, exp2_and_direct_softmax) {
	check("tests/prove/softmax_exp2.yaml", "ppp-");
	check("tests/prove/softmax_direct.yaml", "ppp-");
}

Test(prove, log_without_certificate_is_honest)
{
	/* the (o, lse) merge compares lse values that hold a log: without its
	 * certificate the prover must not claim associativity */
	Carrier *c = load_ok("tests/prove/o_lse_direct.yaml");
	ProofReport r;
	cr_assert_eq(prove_carrier(c, 0, &r), 0);
	cr_expect_neq(law(&r, "associative")->status, PROOF_DISPROVED);
	cr_expect_eq(law(&r, "commutative")->status, PROOF_PROVED);
	prove_report_free(&r);
	spec_carrier_free(c);
}

Test(prove, disproofs)
{
	check("tests/prove/average.yaml", "ddp-");
	check("tests/prove/softmax_norescale.yaml", "dp--");
	check("tests/prove/tie_bug.yaml", "dp--");
	check("tests/prove/welford_nofactor.yaml", "dpp-");
	check("tests/prove/comm_false.yaml", "ppd-");
	check("tests/prove/quaternion_comm.yaml", "ppd-");
	/* e+e is NaN: (e+e)+a and e+(e+a) differ too */
	check("tests/prove/identity_ee.yaml", "ddp-");
}

/* An argmax whose identity's idx wins a tie (-1, the smaller; or the
 * largest i32 where a tie keeps a's) is an identity on every finite state
 * but not at a lift of -inf, which ties with the identity's m: proved,
 * with the exception named, its side and what a row of -inf gives.  The
 * bundled argmax, whose identity loses every tie, has none; and an
 * identity that is none on finite states is still disproved. */
Test(prove, identity_exception_at_infinite_lifts)
{
	static const char *const path[] = {"tests/format/argmax.yaml", "tests/prove/argmax_ties_to_a.yaml"};
	static const char *const row[] = {"gives idx = -1, the identity's, where its lifts folded alone give 0",
					  "gives idx = 2147483647, the identity's, where its lifts folded alone give 0"};
	for (int i = 0; i < 2; i++) {
		Carrier *c = load_ok(path[i]);
		ProofReport r;
		cr_assert_eq(prove_carrier(c, 0, &r), 0);
		const ProofLine *l = law(&r, "identity");
		cr_assert(l);
		cr_expect_eq(l->status, PROOF_PROVED, "%s: %s", path[i], l->how);
		cr_assert(l->except, "%s: no exception", path[i]);
		cr_expect(strstr(l->except, "holds except at lifts where m = -inf (x = -inf): e+a gives idx = ") &&
			  strstr(l->except, row[i]), "%s: %s", path[i], l->except);
		prove_report_free(&r);
		spec_carrier_free(c);
	}
	Carrier *c = load_ok("specs/argmax.yaml");
	ProofReport r;
	cr_assert_eq(prove_carrier(c, 0, &r), 0);
	cr_expect_eq(law(&r, "identity")->status, PROOF_PROVED);
	cr_expect_null(law(&r, "identity")->except, "%s", law(&r, "identity")->except);
	prove_report_free(&r);
	spec_carrier_free(c);
	const char *zero = "carrier: argmax_zero\nelement: {x: f32}\nstate: {m: f32, idx: i32}\n"
			   "identity: {m: 0, idx: -1}\nlift: {m: x, idx: j}\nmerge:\n  m: max(a.m, b.m)\n"
			   "  idx: where(a.m > b.m || (a.m == b.m && a.idx < b.idx), a.idx, b.idx)\n";
	c = text_ok(zero);
	cr_assert_eq(prove_carrier(c, 0, &r), 0);
	cr_expect_eq(law(&r, "identity")->status, PROOF_DISPROVED, "%s", law(&r, "identity")->how);
	cr_expect(strstr(law(&r, "identity")->how, "a={"), "%s", law(&r, "identity")->how);
	cr_expect_null(law(&r, "identity")->except);
	prove_report_free(&r);
	spec_carrier_free(c);
}

/* Differences at the spec's own constants: no drawn row folds to a state
 * past 1e12 or to exactly 1000 and 0.5, but rows of the constants (and of
 * a grid point's values) do, and their folds are the witnesses. */
Test(prove, witnesses_folded_from_the_specs_constants)
{
	check("tests/prove/saturating_sum_1e12.yaml", "ddp-");
	check("tests/prove/rare_pair.yaml", "dpd-");
	Carrier *c = load_ok("tests/prove/rare_pair.yaml");
	ProofReport r;
	cr_assert_eq(prove_carrier(c, 0, &r), 0);
	const ProofLine *l = law(&r, "commutative");
	cr_expect(strstr(l->how, "a={s: 0.5}, b={s: 1000}"), "%s", l->how);
	prove_report_free(&r);
	spec_carrier_free(c);
}

/* The scaled sum of squares (nrm2's) transports into (max, +) with 0 for
 * max's identity: none over the reals, but one over the image, where
 * s = abs(x) keeps s >= 0 on every state.  With a signed scale it is
 * none, and the certificate is refused as before. */
Test(prove, certificate_unit_on_the_image)
{
	Carrier *c = load_ok("tests/prove/l2_norm_scaled.yaml");
	ProofReport r;
	cr_assert_eq(prove_carrier(c, 0, &r), 0);
	const ProofLine *l = law(&r, "certificate");
	cr_expect(l->status != PROOF_DISPROVED && !strstr(l->how, "not the identity"), "%s", l->how);
	prove_report_free(&r);
	spec_carrier_free(c);
	c = load_ok("tests/prove/l2_norm_signed_scale.yaml");
	cr_assert_eq(prove_carrier(c, 0, &r), 0);
	l = law(&r, "certificate");
	cr_expect(l->status == PROOF_DISPROVED && strstr(l->how, "phi(e).s = 0, not the identity of max"), "%s", l->how);
	prove_report_free(&r);
	spec_carrier_free(c);
}

/* a.s / max(a.s, b.s) divides by a term of unknown sign (s >= 0 may be
 * 0), but within where(s == 0, 0, ...) the region orders it against 0:
 * the division splits the region on its denominator's sign instead of
 * giving up, and the scaled sum of squares is proved directly. */
Test(prove, denominators_the_region_orders)
{
	Carrier *c = load_ok("tests/prove/l2_norm_scaled.yaml");
	ProofReport r;
	cr_assert_eq(prove_carrier(c, 0, &r), 0);
	expect(&r, "l2_norm_scaled", "associative", PROOF_PROVED);
	expect(&r, "l2_norm_scaled", "commutative", PROOF_PROVED);
	prove_report_free(&r);
	spec_carrier_free(c);
}

/* A merge that clamps a field to constants keeps it within them, where
 * the lift does too: with -1e12 <= s <= 1e12 as invariants the identity
 * is proved, and of associativity's differences only those that states
 * reach are left, where seeds at the bounds are the witness. */
Test(prove, clamp_bounds_are_invariants)
{
	check("tests/prove/saturating_sum_clamped_1e12.yaml", "dpp-");
	Carrier *c = load_ok("tests/prove/saturating_sum_clamped_1e12.yaml");
	ProofReport r;
	cr_assert_eq(prove_carrier(c, 0, &r), 0);
	const ProofLine *l = law(&r, "identity");
	cr_expect(strstr(l->how, "s >= -999999995904, s <= 999999995904"), "%s", l->how);
	prove_report_free(&r);
	spec_carrier_free(c);
}

/* min(a.s + b.s, 1e30) is linear; 1e30 is beyond the 64-bit rationals of
 * the regions, and the message says so, not that the terms are non-linear. */
Test(prove, constants_past_the_rationals_are_named)
{
	Carrier *c = load_ok("tests/laws/saturating_sum.yaml");
	ProofReport r;
	cr_assert_eq(prove_carrier(c, 0, &r), 0);
	const ProofLine *l = law(&r, "associative");
	cr_expect(l->status == PROOF_UNKNOWN && strstr(l->how, "constant beyond the prover's 64-bit rationals"), "%s",
		  l->how);
	prove_report_free(&r);
	spec_carrier_free(c);
}

/* Lets and merge temporaries that each use the one before twice: the
 * tree doubles per let, the DAG does not, and the prover walks the DAG
 * (check on them once took 13 s at 25 lets and never ended at 40). */
Test(prove, shared_subterms_cost_their_dag, .timeout = 20)
{
	check("tests/prove/dag_lets.yaml", "pp--");
	check("tests/prove/dag_merge.yaml", "pp--");
}

/* A normal form whose degree doubles per temporary proves nothing at
 * random points past the budget: unknown, saying why, never proved. */
Test(prove, degree_past_the_budget_is_unknown, .timeout = 20)
{
	check("tests/prove/dag_cancel.yaml", "uuu-");
	expect_how("tests/prove/dag_cancel.yaml", 0, "associative", "budget: a normal form of degree past 65536");
}

Test(prove, tie_disproof_names_the_tie)
{
	expect_how("tests/prove/tie_bug.yaml", 0, "associative", "region b.m = c.m, a.m = c.m");
}

Test(prove, nan_hazard_names_the_expression)
{
	expect_how("tests/prove/identity_ee.yaml", 0, "identity", "e+e gives NaN at mean: 0 / 0");
	expect_how("tests/prove/nan_identity.yaml", 0, "identity", "e+e gives NaN at m: a.m, which is NaN in the identity");
}

/* The laws of path, proved with the n params p fixed; the report outlives the carrier. */
static void prove_at(const char *path, const Define *p, int n, int flags, ProofReport *r)
{
	Carrier *c = load_ok(path);
	cr_assert_eq(prove_carrier_at(c, p, n, flags, r), 0, "%s", path);
	spec_carrier_free(c);
}

/* The line of law name (NULL: every line) begins with prefix. */
static void how_starts(const ProofReport *r, const char *name, const char *prefix)
{
	for (int i = 0; i < r->n; i++)
		if (!name || !strcmp(r->line[i].law, name))
			cr_expect(!strncmp(r->line[i].how, prefix, strlen(prefix)), "%s: %s", r->line[i].law,
				  r->line[i].how);
}

/* A bool param decides a merge's where, and no real stands for it: each
 * case is proved apart.  Proved from the else branch alone, the merge was
 * once called associative for flag true too (a - b); where(flag, 0, 0),
 * e+e here, is 0 in every case. */
Test(prove, bool_params_are_proved_case_by_case)
{
	check("tests/prove/bool_param_selects.yaml", "dd--");
	check("tests/prove/bool_param_else_fails.yaml", "dd--");
	ProofReport r;
	prove_at("tests/prove/bool_param_selects.yaml", NULL, 0, 0, &r);
	how_starts(&r, "associative", "flag=true: ");
	prove_report_free(&r);
	prove_at("tests/prove/bool_param_else_fails.yaml", NULL, 0, 0, &r);
	how_starts(&r, "identity", "flag=false: ");
	prove_report_free(&r);
}

/* A bool state field is no real either: each bool field of the operands
 * a law reads is taken false and true, a constant in each case, where
 * where(b.r, ...) and a.r || b.r are decided.  Once left unknown with the
 * reals' algebra, a segmented scan's sum is proved associative with its
 * identity, and its claimed commutativity disproved in the case that
 * shows it; restarted at the left operand's flag, it is disproved with
 * the flags named. */
Test(prove, bool_fields_are_proved_case_by_case)
{
	check("tests/check/any_positive.yaml", "ppp-");
	check("bench/carriers/new/segmented_sum.yaml", "pp--");
	check("tests/prove/segmented_sum.yaml", "ppd-");
	check("tests/prove/segmented_sum_wrong.yaml", "dd--");
	ProofReport r;
	prove_at("tests/prove/segmented_sum.yaml", NULL, 0, 0, &r);
	how_starts(&r, "associative", "every case of a.r, b.r, c.r: ");
	how_starts(&r, "identity", "e+e = e folded; every case of a.r: ");
	how_starts(&r, "commutative", "a.r=true, b.r=false: a={s: ");
	prove_report_free(&r);
	prove_at("tests/prove/segmented_sum_wrong.yaml", NULL, 0, 0, &r);
	how_starts(&r, "associative", "a.r=true, b.r=false, c.r=false: a={s: ");
	how_starts(&r, "identity", "a.r=true: a={s: ");
	prove_report_free(&r);
}

/* A case no fold reaches is no disproof: sum_positive's pos is s > 0 on
 * every state, which the cases do not know, so e+a = a, false at pos
 * false with s > 0, is unknown, not disproved; its merged pos, a
 * comparison of reals, the regions decide.  A bool field that every lift
 * sets to one constant and merge keeps has that value alone. */
Test(prove, bool_field_cases_no_fold_reaches)
{
	check("tests/prove/sum_positive.yaml", "pup-");
	expect_how("tests/prove/sum_positive.yaml", 0, "identity", "a.pos=false: pos differs in region a.s > 0");
	expect_how("tests/prove/sum_positive.yaml", 0, "identity", "an invariant may exclude the region");
	check("tests/prove/never_seen.yaml", "pp--");
	expect_how("tests/prove/never_seen.yaml", 0, "associative", "seen false on every nonempty state: ");
}

/* 2^(bool fields the law reads) cases, up to 64: associativity reads 9
 * of three_flags', commutativity 6. */
Test(prove, bool_field_cases_past_the_cap_are_unknown)
{
	check("tests/prove/three_flags.yaml", "upp-");
	expect_how("tests/prove/three_flags.yaml", 0, "associative", "2^9 cases, past the prover's 64");
	expect_how("tests/prove/three_flags.yaml", 0, "commutative", "every case of a.p, a.q, a.z, b.p, b.q, b.z: ");
}

/* The linear invariants are inferred beside a bool field, the merge's
 * regions walked in each case of the bools it reads: first_match's
 * at >= -1, which its identity needs. */
Test(prove, invariants_beside_bool_fields)
{
	check("tests/prove/first_match_found.yaml", "pp--");
	expect_how("tests/prove/first_match_found.yaml", 0, "identity", "under invariants at >= -1");
}

/* Params given values (check --param) are proved at those values: k*a + b
 * is no monoid for k a real, but is one at k = 1 (with four bool params
 * too, past the split), and at k = 2 its witness shows no other k;
 * flag=false picks the lawful branch of bool_param_selects.  A case the
 * assume rules out is no case; a proof alike in every case is said once;
 * a param of the mask alone is not named. */
Test(prove, params_given_values_are_proved_there)
{
	ProofReport r;
	prove_at("tests/prove/scaled_merge.yaml", NULL, 0, 0, &r);
	expect(&r, "scaled_merge", "associative", PROOF_DISPROVED);
	prove_report_free(&r);
	Define k1 = {"k", "1"}, k2 = {"k", "2"}, off = {"flag", "false"}, every = {"every", "true"};
	prove_at("tests/prove/scaled_merge.yaml", &k1, 1, 0, &r);
	expect(&r, "scaled_merge k=1", "associative", PROOF_PROVED);
	expect(&r, "scaled_merge k=1", "identity", PROOF_PROVED);
	how_starts(&r, NULL, "k=1: ");
	prove_report_free(&r);

	prove_at("tests/prove/scaled_merge.yaml", &k2, 1, 0, &r);
	expect(&r, "scaled_merge k=2", "associative", PROOF_DISPROVED);
	cr_expect(!strstr(law(&r, "associative")->how, ", k="), "the witness shows no other k: %s",
		  law(&r, "associative")->how);
	prove_report_free(&r);

	prove_at("tests/prove/four_bools.yaml", &k1, 1, 0, &r);
	for (int i = 0; i < r.n; i++)
		cr_expect_neq(r.line[i].status, PROOF_DISPROVED, "%s: %s", r.line[i].law, r.line[i].how);
	how_starts(&r, NULL, "k=1: ");
	prove_report_free(&r);

	prove_at("tests/prove/bool_param_selects.yaml", &off, 1, PROVE_TRACE, &r);
	expect(&r, "bool_param_selects flag=false", "associative", PROOF_PROVED);
	expect(&r, "bool_param_selects flag=false", "identity", PROOF_PROVED);
	cr_expect(r.trace && strstr(r.trace, "with flag=false"), "%s", r.trace ? r.trace : "(no trace)");
	prove_report_free(&r);

	prove_at("tests/prove/assume_flag.yaml", NULL, 0, 0, &r);
	expect(&r, "assume_flag", "identity", PROOF_PROVED);
	expect(&r, "assume_flag", "associative", PROOF_PROVED);
	how_starts(&r, NULL, "flag=true: ");
	prove_report_free(&r);

	prove_at("tests/prove/assume_or_flag.yaml", NULL, 0, 0, &r);
	for (int i = 0; i < r.n; i++)
		cr_expect_eq(r.line[i].status, PROOF_PROVED, "%s: %s", r.line[i].law, r.line[i].how);
	how_starts(&r, NULL, "every case of flag: ");
	prove_report_free(&r);

	prove_at("tests/prove/mask_param.yaml", &every, 1, 0, &r);
	expect(&r, "mask_param", "associative", PROOF_PROVED);
	cr_expect(!strstr(law(&r, "associative")->how, "every="), "%s", law(&r, "associative")->how);
	prove_report_free(&r);
}

/* Corners where the prover had claimed false laws or missed true ones:
 * conditions compared with == and != (they were always equal), exponents
 * and powers of logs too large for points mod 2^61 - 1 (X^(p-1) is 1
 * there; now unknown), and abs(-inf), which is inf. */
Test(prove, soundness_corners)
{
	check("tests/prove/bool_compare.yaml", "ddd-");
	check("tests/prove/exp_huge_coefficient.yaml", "uuu-");
	check("tests/prove/log_huge_power.yaml", "uuu-");
	check("tests/prove/abs_of_neg_inf.yaml", "ppp-");
}

/* Integer fields are whole and wrap: a region no pair of integers reaches
 * gives no disproof (its witness would be a half), and an order on a sum
 * of i32 fields is not proved (it can wrap), written as an fma or not,
 * nor one on abs of an i32 (abs(INT32_MIN) is INT32_MIN). */
Test(prove, integers_are_whole_and_wrap)
{
	check("tests/prove/half_integer_branch.yaml", "uuu-");
	check("tests/prove/wrapping_sum.yaml", "uuu-");
	check("tests/prove/fma_wrapping.yaml", "uuu-");
	check("tests/prove/abs_wrapping.yaml", "uu--");
}

/* Integer abs, sums and powers wrap, so the prover takes no sign for
 * them that wrapping breaks: abs(INT64_MIN) is INT64_MIN, and a largest
 * |x - off| from 0 is no identity (x = INT64_MIN, off = 0; the seeds at
 * the integer limits reach it, so the law is disproved with that state),
 * nor a largest |x| of an i32, nor a largest x^2 (46341^2 wraps; no
 * drawn state shows it, so unknown), nor 0 for a sum of positives kept
 * while it is not negative.  A float's abs does not wrap: proved. */
Test(prove, integer_results_take_no_sign_that_wraps)
{
	check("tests/prove/abs_max_i64_offset.yaml", "pdp-");
	expect_how("tests/prove/abs_max_i64_offset.yaml", 1, "identity", "mx: -9223372036854775808, above: 0}");
	check("tests/prove/abs_max_i32.yaml", "pdp-");
	expect_how("tests/prove/abs_max_i32.yaml", 1, "identity", "a={mx: -2147483648}");
	check("tests/prove/abs_max_f32.yaml", "ppp-");
	check("tests/prove/square_max_i32.yaml", "pup-");
	check("tests/prove/positive_sum_wraps.yaml", "uu--");
}

/* An integer where() of literals (count_runs' where(..., 1, 0)) is an
 * i32 where, not a cast of an untyped number: the prover, which takes such
 * a cast for a float becoming an integer, stops at the wrap of i32 sums
 * instead. */
Test(prove, integer_where_is_no_float)
{
	Carrier *c = load_ok("tests/prove/count_runs.yaml");
	ProofReport r;
	cr_assert_eq(prove_carrier(c, 0, &r), 0);
	for (int i = 0; i < r.n; i++)
		cr_expect(!strstr(r.line[i].how, "float"), "%s: %s", r.line[i].law, r.line[i].how);
	const ProofLine *l = law(&r, "associative");
	cr_expect(strstr(l->how, "may wrap"), "%s", l->how);
	prove_report_free(&r);
	spec_carrier_free(c);
}

/* A first match's position or -1: at >= -1 is an invariant (the lift's
 * -1 and positions, kept by the merge), and an i32 under 0 and at least
 * -1 is -1, where e+a and a+e agree: the identity is proved under it.
 * With -2 for the identity the law is disproved by a row with no match;
 * with a float field (half a position) under 0 is no whole number, and
 * the law stays unknown. */
Test(prove, integer_fields_take_whole_bounds)
{
	check("tests/prove/first_match.yaml", "pp--");
	expect_how("tests/prove/first_match.yaml", 1, "identity", "under invariants at >= -1");
	check("tests/prove/first_match_identity_wrong.yaml", "pd--");
	check("tests/prove/last_match_half.yaml", "pu--");
}

/* A law proved over nonempty states reaches the empty state through the
 * identity laws; where those are disproved, or not proved, it is proved
 * again with the identity in each place of its operands.  A last value chosen by
 * a.n + b.n == b.n is associative over nonempty states, whose n is never
 * 0, but (e+a)+b keeps a's value and e+(a+b) the identity's: disproved,
 * as the trials find it.  first_match with -2 for the identity is
 * associative with it too. */
Test(prove, laws_with_an_identity_that_is_none)
{
	check("tests/prove/last_by_count_identity_wrong.yaml", "dd--");
	expect_how("tests/prove/last_by_count_identity_wrong.yaml", 0, "associative", "by (e+a)+b and 0 by e+(a+b)");
	check("tests/prove/first_match_identity_wrong.yaml", "pd--");
	expect_how("tests/prove/first_match_identity_wrong.yaml", 0, "associative", "with the identity in each place");
	/* an identity whose laws are not proved carries nothing either: over
	 * nonempty states the last value is associative, with the empty
	 * state on the left of a count of 2^31 - 1 it is 7 */
	check("tests/prove/last_with_an_unknown_identity.yaml", "uu--");
	expect_how("tests/prove/last_with_an_unknown_identity.yaml", 0, "associative", "whose laws are unknown, (e+a)+b");
	check("tests/prove/last_match_half.yaml", "pu--");
	expect_how("tests/prove/last_match_half.yaml", 0, "associative", "with the identity in each place (its own laws unknown)");
}

/* An i32 count above 0 is at least 1 in every region: two nonempty
 * sides whose merged count is under 2 are no case at all, where over
 * the rationals (a.n = b.n = 1/2) the prover found no side of a.n == 1
 * and left the law unknown ("an empty region"). */
Test(prove, positive_counts_are_whole)
{
	check("tests/prove/first_two.yaml", "pp--");
}

/* An order on a sum of two states' counts of positions (an i32 that lift
 * sets to 0 or 1 and merge sums) is decided as over the integers: a row
 * has at most INT32_MAX positions, so such a sum does not wrap.  With 1
 * added it could, and the order stays unknown.  A field that the
 * invariants bound by the count of positions (a trailing run, suf <= n)
 * is bounded the same way in a sum, but not where an i32 sum under it,
 * widened to i64, may wrap on its own. */
Test(prove, counts_of_positions_do_not_wrap)
{
	check("tests/prove/first_by_count.yaml", "pp--");
	check("tests/rows/softmax_first.yaml", "pp--");
	check("tests/prove/trailing_run.yaml", "pp--");
	check("tests/prove/first_by_count_plus_one.yaml", "uu--");
	check("tests/prove/first_by_widened_count.yaml", "uu--");
	expect_how("tests/prove/first_by_count_plus_one.yaml", 1, "associative", "may wrap");
}

/* An i32 product of counts leaves the integers for a float64 (or an
 * i64) sum: the devices add its wrapped value, so the laws, proved over
 * unbounded integers, are not claimed (folds of 100000, 21474 and 1
 * large values give 7378027075 one way and 3083059779 the other). */
Test(prove, integer_arithmetic_converted_may_wrap)
{
	check("tests/prove/product_of_counts.yaml", "uuu-");
	check("tests/prove/product_of_counts_i64.yaml", "uuu-");
	expect_how("tests/prove/product_of_counts.yaml", 1, "associative", "a conversion of integer arithmetic, which may wrap");
}

/* An invariant between i32 fields holds of their true values: lift
 * k = x + 1, h = x gives k >= h over the integers, but at x = 2^31 - 1
 * k wraps to -2^31, and the laws that rested on it fail there (s = 7
 * by (a+b)+c and 4 by a+(b+c) at a = lift(2^31 - 1), b = c = lift(0)). */
Test(prove, invariants_hold_of_wrapped_lifts)
{
	Carrier *c = load_ok("tests/prove/lift_wraps.yaml");
	ProofReport r;
	cr_assert_eq(prove_carrier(c, 1, &r), 0);
	for (int i = 0; i < r.n; i++) {
		cr_expect(!strstr(r.line[i].how, "k >= h"), "%s: %s", r.line[i].law, r.line[i].how);
		if (!strcmp(r.line[i].law, "associative") || !strcmp(r.line[i].law, "commutative"))
			cr_expect_neq(r.line[i].status, PROOF_PROVED, "%s: %s", r.line[i].law, r.line[i].how);
	}
	prove_report_free(&r);
	spec_carrier_free(c);
}

/* A disproof whose region asks for states of 45 positions (a.n = 45,
 * b.n = 45) finds them as folds of rows of 45 elements: rows of one or
 * two never reach them, and the law was left unknown ("an invariant may
 * exclude the region") with a witness any row of 90 meets. */
Test(prove, witnesses_take_rows_of_the_counts_they_ask)
{
	check("tests/prove/count_at_45.yaml", "dpp-");
	expect_how("tests/prove/count_at_45.yaml", 1, "associative", "n: 45");
}

/* Two fields lifted alike, where(abs(x) > t, j, -1), each get their
 * invariant >= -1, in either order: a bound of an i32 takes the place of
 * its range in a region, so the second fits beside the first, and the
 * identity, which needs both, is proved.  longest_rise's pre, suf and
 * best stay within its count n, each in the room of its own range (its
 * associativity needs best >= pre too, which no merge alone keeps). */
Test(prove, each_field_gets_its_own_invariants)
{
	check("tests/prove/span_two_indices.yaml", "pp--");
	expect_how("tests/prove/span_two_indices.yaml", 1, "identity", "under invariants first >= -1, last >= -1");
	check("tests/prove/span_two_indices_swapped.yaml", "pp--");
	expect_how("tests/prove/span_two_indices_swapped.yaml", 1, "identity", "under invariants last >= -1, first >= -1");
	Carrier *c = load_ok("tests/prove/longest_rise.yaml");
	ProofReport r;
	cr_assert_eq(prove_carrier(c, 1, &r), 0);
	cr_expect(strstr(r.trace, "n >= pre, n >= suf, n >= best"), "%s", r.trace);
	/* under them a.suf + b.pre is bounded by the counts once the
	 * where() around it has split the region: not "may wrap" */
	cr_expect(!strstr(law(&r, "associative")->how, "may wrap"), "%s", law(&r, "associative")->how);
	prove_report_free(&r);
	spec_carrier_free(c);
}

/* any_all's lifts keep any >= all, all >= any, any <= 1 and all <= 1,
 * and a region has room for two: the first two alone do not show that
 * merges keep the bounds, which hold under themselves.  With any <= 1
 * (all <= 1 follows) the identity's all = 1 is proved. */
Test(prove, invariants_past_the_room_are_tried_on_their_own)
{
	check("tests/prove/any_all.yaml", "pp--");
	expect_how("tests/prove/any_all.yaml", 0, "identity", "under invariants any >= all, any <= 1");
}

/* A carrier with fields kept relative to its maximum and no certificate
 * (an entropy beside softmax's sum) gets one derived from the maximum,
 * which prove_transport proves; where a field merges by a max of rescaled
 * values the derived one is not proved; a carrier with its own
 * certificate, or no maximum of the element, gets none. */
Test(prove, certificate_derived_from_the_maximum)
{
	char why[300];
	int moving[TRANSPORT_MAX_FIELDS];
	Carrier *c = load_ok("tests/rows/softmax_entropy.yaml"), fr;
	cr_assert_eq(transport_frame(c, &fr, why, sizeof why), 1, "%s", why);
	cr_expect_eq(fr.ncert, 3);
	cr_expect_eq(fr.cert_monoid[0], EXPR_MAX);
	cr_expect(fr.cert_monoid[1] == EXPR_ADD && fr.cert_monoid[2] == EXPR_ADD);
	cr_expect_eq(prove_transport(&fr, moving, why, sizeof why), 1, "%s", why);
	cr_expect(moving[0] && !moving[1] && !moving[2]);
	transport_frame_free(&fr);
	/* derived again (a second compile): the same coordinates, no new variables */
	int nvars = ir_nvars(c->ir);
	cr_assert_eq(transport_frame(c, &fr, why, sizeof why), 1, "%s", why);
	cr_expect_eq(ir_nvars(c->ir), nvars, "the IR grew by %d variables", ir_nvars(c->ir) - nvars);
	transport_frame_free(&fr);
	spec_carrier_free(c);
	c = load_ok("tests/rows/softmax_top_weight.yaml");
	cr_assert_eq(transport_frame(c, &fr, why, sizeof why), 1, "%s", why);
	cr_expect_eq(prove_transport(&fr, moving, why, sizeof why), 0);
	cr_expect(strstr(why, "not proved"), "%s", why);
	transport_frame_free(&fr);
	spec_carrier_free(c);
	const char *none[] = {"specs/welford.yaml", "specs/sum.yaml"};
	for (int i = 0; i < 2; i++) {
		c = load_ok(none[i]);
		cr_expect_eq(transport_frame(c, &fr, why, sizeof why), 0, "%s", none[i]);
		spec_carrier_free(c);
	}
}

/* Whether the state "{s: S, p: P, q: Q, t: T}" named w in how keeps
 * invariants of every state a fold reaches, in max_subarray and in the
 * variant that forgets b.t (whose t may fall below q). */
static int mss_reachable(const char *how, char w)
{
	char key[8];
	snprintf(key, sizeof key, "%c={s: ", w);
	const char *at = strstr(how, key);
	double s, p, q, t;
	if (!at || sscanf(at + 2, "{s: %lf, p: %lf, q: %lf, t: %lf}", &s, &p, &q, &t) != 4)
		return 0;
	return q >= s && p >= s && t >= p && q >= 0;
}

/* The sides of max_subarray's identity law differ where a.q < a.s, a
 * region no fold reaches: that is no disproof. */
Test(prove, unreachable_region_is_no_disproof)
{
	Carrier *c = load_ok("tests/prove/max_subarray.yaml");
	ProofReport r;
	cr_assert_eq(prove_carrier(c, 0, &r), 0);
	const ProofLine *id = law(&r, "identity");
	cr_expect_neq(id->status, PROOF_DISPROVED, "%s", id->how);
	cr_expect_eq(law(&r, "associative")->status, PROOF_PROVED, "%s", law(&r, "associative")->how);
	prove_report_free(&r);
	spec_carrier_free(c);
}

/* With the invariants every fold keeps, which lifts satisfy and merge
 * preserves, the identity law is proved, and the proof names them. */
Test(prove, relational_invariants_prove_max_subarray)
{
	Carrier *c = load_ok("tests/prove/max_subarray.yaml");
	ProofReport r;
	cr_assert_eq(prove_carrier(c, 1, &r), 0);
	const char *inv = "under invariants p >= s, q >= s, t >= p, t >= q";
	for (int i = 0; i < r.n; i++) {
		cr_expect_eq(r.line[i].status, PROOF_PROVED, "%s: %s", r.line[i].law, r.line[i].how);
		cr_expect(strstr(r.line[i].how, inv), "%s: %s", r.line[i].law, r.line[i].how);
	}
	cr_expect(strstr(r.trace, "invariants of nonempty states (every lift keeps them, merge preserves them): "
				  "p >= s, q >= s, t >= p, t >= q\n"), "%s", r.trace);
	prove_report_free(&r);
	spec_carrier_free(c);
}

/* v >= u holds on every lift, but merge does not preserve it (v - u is 2 - n
 * after n elements): it is no invariant, and the identity law, which needs
 * it, is disproved by a fold of three elements. */
Test(prove, invariant_merge_breaks_is_not_assumed)
{
	Carrier *c = load_ok("tests/prove/gap_not_preserved.yaml");
	ProofReport r;
	cr_assert_eq(prove_carrier(c, 1, &r), 0);
	const ProofLine *id = law(&r, "identity");
	cr_expect_eq(id->status, PROOF_DISPROVED, "%s", id->how);
	cr_expect(strstr(r.trace, "merge preserves them): w >= u\n"), "%s", r.trace);
	cr_expect(!strstr(r.trace, "v >= u"), "%s", r.trace);
	prove_report_free(&r);
	spec_carrier_free(c);
}

/* A merge that forgets b.t is wrong only where a run inside b beats the
 * others: still disproved, and the witnesses are states folds reach. */
Test(prove, disproof_witnesses_are_reachable)
{
	Carrier *c = load_ok("tests/prove/max_subarray_forgot_b.yaml");
	ProofReport r;
	cr_assert_eq(prove_carrier(c, 0, &r), 0);
	const ProofLine *id = law(&r, "identity"), *as = law(&r, "associative");
	cr_expect_eq(id->status, PROOF_DISPROVED, "%s", id->how);
	cr_expect_eq(as->status, PROOF_DISPROVED, "%s", as->how);
	cr_expect(mss_reachable(id->how, 'a'), "%s", id->how);
	for (const char *w = "abc"; *w; w++)
		cr_expect(mss_reachable(as->how, *w), "%c: %s", *w, as->how);
	prove_report_free(&r);
	spec_carrier_free(c);
}

static Expr *field(Carrier *c, int w, const char *name)
{
	for (int f = 0; f < c->nstate; f++)
		if (!strcmp(c->state[f].name, name))
			return ir_ref(c->ir, c->svar[w][f]);
	cr_assert_fail("no field %s", name);
	return NULL;
}

/* u * exp(x - max(x, y)) */
static Expr *rescaled(Ir *ir, Expr *u, Expr *x, Expr *y)
{
	return ir_bin(ir, EXPR_MUL, u, ir_un(ir, EXPR_EXP, ir_bin(ir, EXPR_SUB, x, ir_bin(ir, EXPR_MAX, x, y))));
}

/* prove_equal on the attention carrier's merge against the same merge
 * written otherwise (b first, max spelled out, an fma on the vector field)
 * and against one with the rescales swapped. */
Test(prove, equal_merges_written_otherwise)
{
	Carrier *c = load_ok("specs/attention.yaml");
	Ir *ir = c->ir;
	Expr *am = field(c, STATE_A, "m"), *bm = field(c, STATE_B, "m");
	Expr *al = field(c, STATE_A, "l"), *bl = field(c, STATE_B, "l");
	Expr *ao = field(c, STATE_A, "o"), *bo = field(c, STATE_B, "o");
	Expr *l = ir_bin(ir, EXPR_ADD, rescaled(ir, bl, bm, am), rescaled(ir, al, am, bm));
	Expr *eb = ir_un(ir, EXPR_EXP, ir_bin(ir, EXPR_SUB, bm, ir_bin(ir, EXPR_MAX, bm, am)));
	Expr *o = ir_node(ir, EXPR_FMA, bo->ty, 0, bo, eb, rescaled(ir, ao, am, bm));
	cr_assert_str_eq(c->state[1].name, "l");
	Expr *xs[2] = {c->merge[1], c->merge[2]}, *ys[2] = {l, o};
	const char *names[2] = {"l", "o"};
	char how[400];
	cr_expect_eq(prove_equal(c, xs, ys, names, 2, "merge", "other", how, sizeof how), PROOF_PROVED, "%s", how);
	cr_expect(strstr(how, "regions; normal forms equal"), "%s", how);
	/* the rescales swapped: b's factor on a.l */
	Expr *swapped = ir_bin(ir, EXPR_ADD, rescaled(ir, al, bm, am), rescaled(ir, bl, am, bm));
	cr_expect_eq(prove_equal(c, &xs[0], &swapped, names, 1, "merge", "swapped", how, sizeof how), PROOF_DISPROVED,
		     "%s", how);
	cr_expect(strstr(how, "a={") && strstr(how, "b={") && strstr(how, "by swapped"), "%s", how);
	spec_carrier_free(c);
}

/* where(7 * a.s == 3, 0, a.s + b.s): over the reals only a.s = 3/7 is in
 * the region, which no float is; but the float32 next to it, lifted from
 * one element, makes 7 * a.s round to 3.  The witness is that lift, and a
 * disproof. */
Test(prove, rounded_witness_lifted_from_one_element)
{
	Carrier *c = load_ok("tests/verdicts/zero_at_three_sevenths.yaml");
	ProofReport r;
	cr_assert_eq(prove_carrier(c, 0, &r), 0);
	const ProofLine *cm = law(&r, "commutative");
	cr_assert(cm);
	cr_expect_eq(cm->status, PROOF_DISPROVED, "%s", cm->how);
	cr_expect(strstr(cm->how, "a=lift(x: 0.42857143)"), "%s", cm->how);
	cr_expect(!strstr(cm->how, "invariant may exclude"), "%s", cm->how);
	prove_report_free(&r);
	spec_carrier_free(c);
}

/* lift abs(x) * p, merge abs(a.s + b.s): a witness needs p < 0, and the
 * states are folded at the witness's p, not only at a p drawn from
 * (0.05, 1]. */
Test(prove, reachable_states_at_the_witness_params)
{
	Carrier *c = load_ok("tests/verdicts/abs_scaled_by_param.yaml");
	ProofReport r;
	cr_assert_eq(prove_carrier(c, 0, &r), 0);
	for (int i = 0; i < r.n; i++)
		cr_expect(!r.line[i].how || !strstr(r.line[i].how, "invariant may exclude"), "%s: %s", r.line[i].law,
			  r.line[i].how);
	const ProofLine *as = law(&r, "associative");
	cr_expect_eq(as->status, PROOF_DISPROVED, "%s", as->how);
	prove_report_free(&r);
	spec_carrier_free(c);
}

/* A witness's states read back as the values the prover compared: at
 * most 9 digits for a float32 field's float32, else 17, never %g's 6.
 * The identity's witness a is the right side of e+a = a, which the line
 * prints whole; -1.4401e+11 named another float32. */
Test(prove, witness_values_read_back)
{
	Carrier *c = load_ok("tests/verdicts/keep_past_exp25_gap.yaml");
	ProofReport r;
	cr_assert_eq(prove_carrier(c, 0, &r), 0);
	const ProofLine *id = law(&r, "identity");
	cr_assert(id && id->how);
	const char *at = strstr(id->how, "a={s: "), *by = strstr(id->how, " by e+a and ");
	double a, whole;
	cr_assert(at && by && sscanf(at, "a={s: %lf}", &a) == 1 && sscanf(by, " by e+a and %lf by a", &whole) == 1,
		  "%s", id->how);
	cr_expect_eq((float)a, (float)whole, "%s", id->how); /* s is f32: read as a float32 */
	prove_report_free(&r);
	spec_carrier_free(c);
}

/* e+e of a top-k identity is a top-k of constants, which the folder
 * leaves alone: it is evaluated, not put down to params the spec does not
 * have. */
Test(prove, unfolded_empty_merge_is_evaluated)
{
	Carrier *c = load_ok("tests/verdicts/topk_identity_index_zero.yaml");
	ProofReport r;
	cr_assert_eq(prove_carrier(c, 1, &r), 0);
	const ProofLine *id = law(&r, "identity");
	cr_assert(id);
	cr_expect(!strstr(id->how, "params"), "%s", id->how);
	cr_expect(strstr(r.trace, "e+e: top folds to"), "%s", r.trace);
	prove_report_free(&r);
	spec_carrier_free(c);
}

/* A certificate whose back map clamps m at -80 is wrong where m < -80: a
 * region the grid's few units never reach, which the grid scaled does
 * (x = -100 folds there). */
Test(prove, witnesses_past_the_grid)
{
	Carrier *c = load_ok("tests/verdicts/certificate_clamped_back.yaml");
	ProofReport r;
	cr_assert_eq(prove_carrier(c, 0, &r), 0);
	const ProofLine *cert = law(&r, "certificate");
	cr_assert(cert);
	cr_expect_eq(cert->status, PROOF_DISPROVED, "%s", cert->how);
	cr_expect(strstr(cert->how, "a={m: -100"), "%s", cert->how);
	prove_report_free(&r);
	spec_carrier_free(c);
}

/* An identity at its type's extreme: min with INT32_MAX, max with
 * INT32_MIN or -2^63, and a where() that orders against INT32_MAX hold
 * for every value the type has, beyond which the prover's integers run
 * on; infinities for floats.  One short of the extreme is no identity
 * (INT32_MAX itself breaks it) and stays unproved. */
Test(prove, identity_at_the_types_extreme)
{
	static const struct {
		const char *ty, *ident, *merge;
		ProofStatus want;
	} cases[] = {
		{"i32", "2147483647", "min(a.m, b.m)", PROOF_PROVED},
		{"i32", "-2147483648", "max(a.m, b.m)", PROOF_PROVED},
		{"i32", "2147483647", "where(a.m < b.m, a.m, b.m)", PROOF_PROVED},
		{"i32", "-2147483648", "where(b.m >= a.m, b.m, a.m)", PROOF_PROVED},
		{"i64", "-9223372036854775808", "max(a.m, b.m)", PROOF_PROVED},
		{"f32", "inf", "min(a.m, b.m)", PROOF_PROVED},
		{"f64", "-inf", "max(a.m, b.m)", PROOF_PROVED},
		{"i32", "2147483646", "min(a.m, b.m)", PROOF_UNKNOWN},
	};
	for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
		char text[512];
		snprintf(text, sizeof text,
			 "carrier: t\nelement: {x: %s}\nstate: {m: %s}\nidentity: {m: %s}\nlift: {m: x}\n"
			 "merge: {m: '%s'}\nlaws: [commutative]\n",
			 cases[k].ty, cases[k].ty, cases[k].ident, cases[k].merge);
		Carrier *c = text_ok(text);
		ProofReport r;
		cr_assert_eq(prove_carrier(c, 0, &r), 0);
		const ProofLine *id = law(&r, "identity"), *as = law(&r, "associative");
		cr_assert(id && as);
		cr_expect_eq(id->status, cases[k].want, "%s %s, %s: %s", cases[k].ty, cases[k].ident, cases[k].merge,
			     id->how);
		cr_expect_eq(as->status, PROOF_PROVED, "%s %s: %s", cases[k].ty, cases[k].merge, as->how);
		prove_report_free(&r);
		spec_carrier_free(c);
	}
}

/* tests/prove/mutants/: lawful merges (sums, products, maxima, the online
 * softmax's rescale, affine maps, max-plus pairs, ties broken by index)
 * with one part changed at random (an operand, an operator, a constant
 * added or clamped, an identity), chosen so that every combination of
 * the laws' trial verdicts and proof statuses seen over several hundred
 * such merges is here (tests/prove/mutate.py draws more).  A proof is
 * never contradicted by the trials, nor a disproof by trials that all
 * hold. */
Test(prove, proofs_agree_with_trials_on_mutated_merges, .timeout = 120)
{
	glob_t g;
	cr_assert_eq(glob("tests/prove/mutants/*.yaml", 0, NULL, &g), 0);
	cr_assert_geq(g.gl_pathc, 30);
	int proved = 0, disproved = 0, unknown = 0;
	for (size_t i = 0; i < g.gl_pathc; i++) {
		const char *path = g.gl_pathv[i];
		Carrier *c = load_ok(path);
		ProofReport pr;
		cr_assert_eq(prove_carrier(c, 0, &pr), 0, "%s: internal error", path);
		CheckOpts o;
		check_defaults(&o);
		CheckResult cr;
		char msg[200];
		cr_assert_eq(check_run(c, &o, &cr, msg, sizeof msg), 0, "%s: %s", path, msg);
		for (int k = 0; k < cr.nlaw; k++) {
			const LawOutcome *t = &cr.law[k];
			const ProofLine *l = law(&pr, t->law);
			if (!l || t->v == VERDICT_NA)
				continue;
			proved += l->status == PROOF_PROVED, disproved += l->status == PROOF_DISPROVED;
			unknown += l->status == PROOF_UNKNOWN;
			cr_expect(l->status != PROOF_PROVED || t->v == VERDICT_HOLDS, "%s: %s proved (%s), but %s", path,
				  t->law, l->how, t->detail ? t->detail : "a trial fails");
			cr_expect(l->status != PROOF_DISPROVED || t->v == VERDICT_FAILS,
				  "%s: %s disproved (%s), but every one of %d trials holds", path, t->law, l->how,
				  t->trials);
		}
		check_result_free(&cr);
		prove_report_free(&pr);
		spec_carrier_free(c);
	}
	globfree(&g);
	cr_expect(proved >= 20 && disproved >= 20 && unknown >= 10, "proved %d, disproved %d, unknown %d", proved,
		  disproved, unknown);
}

/* The split-KV combine (o_lse) folds a tile in its certificate's sums,
 * shifted by the tile's largest partial lse: a vector field and a
 * coordinate of dv components, and the partial output po beside plse,
 * which alone moves.  The scalar form (the lanes, the GPU) keeps to one
 * scalar element; a lift that reads the moving element elsewhere, or a
 * certificate that does not hold, is refused with the reason. */
Test(prove, transport_with_vector_fields)
{
	char why[300];
	int moving[TRANSPORT_MAX_FIELDS], q = -1;
	Carrier *c = load_ok("specs/o_lse.yaml");
	cr_expect_eq(prove_transport(c, moving, why, sizeof why), 0);
	cr_expect(strstr(why, "one scalar float element"), "%s", why);
	cr_expect_eq(prove_transport_wide(c, moving, &q, why, sizeof why), 1, "%s", why);
	cr_expect_eq(q, 1);
	cr_expect(!moving[0] && moving[1]);
	spec_carrier_free(c);
	c = load_ok("tests/prove/o_lse_wrong_back.yaml");
	cr_expect_eq(prove_transport_wide(c, moving, &q, why, sizeof why), 0);
	cr_expect(strstr(why, "not proved"), "%s", why);
	spec_carrier_free(c);
	c = load_ok("specs/welford.yaml");
	cr_expect_eq(prove_transport_wide(c, moving, &q, why, sizeof why), 1, "%s", why);
	cr_expect_eq(q, 0);
	spec_carrier_free(c);
	/* power sums of a vector input that the tile does not shift: on rows
	 * of mean 1e4 the variance came out negative */
	c = load_ok("tests/prove/wvar_power_sums.yaml");
	cr_expect_eq(prove_transport(c, moving, why, sizeof why), 0);
	cr_expect_eq(prove_transport_wide(c, moving, &q, why, sizeof why), 0);
	cr_expect(strstr(why, "lift's mean is v, which the tile does not shift, and coordinate S2 is not linear in it"),
		  "%s", why);
	spec_carrier_free(c);
}

/* A certificate whose phi(identity) is left in a param (0 * exp(-inf *
 * beta), 0 where the assume keeps beta > 0) is not shown to be the
 * identity: unknown, not disproved (which refused a lawful carrier). */
Test(prove, certificate_identity_left_in_params_is_unknown)
{
	check("tests/prove/o_lse_temperature.yaml", "uuuu");
	expect_how("tests/prove/o_lse_temperature.yaml", 1, "certificate", "which is not shown to be the identity of +");
}

/* In a paged run a sequence with more queries than keys has its first
 * queries at a negative i (docs/spec-format.md, "Paged keys and values"):
 * a maximum of i from 0 is no identity there, disproved at a negative
 * state.  A carrier of element inputs reads no paged cache, and its i,
 * counting rows from 0, keeps its sign. */
Test(prove, row_index_negative_where_paged)
{
	check("tests/prove/paged_row_index_max.yaml", "pdp-");
	expect_how("tests/prove/paged_row_index_max.yaml", 1, "identity", "region 0 > a.m");
	check("tests/prove/element_row_index_max.yaml", "ppp-");
}

/* An integer converted to a float is that integer only within the
 * float's run of consecutive integers: 16777217 and 16777216 are one f32,
 * 2^53 + 1 and 2^53 one f64, so an order on the converted values may tie
 * where the integers' is strict, and the prover leaves it unknown.  An
 * i32 in an f64 is exact, and the order is the integers'. */
Test(prove, orders_on_integers_converted_to_floats)
{
	check("tests/prove/i32_order_through_f32.yaml", "uuu-");
	expect_how("tests/prove/i32_order_through_f32.yaml", 1, "commutative",
		   "an order on an integer converted to a float, which rounds it");
	check("tests/prove/i64_order_through_f64.yaml", "uuu-");
	check("tests/prove/i32_order_through_f64.yaml", "pup-");
}

/* x >= 0 holds at -0, where 1/x is -inf: a quotient whose divisor may be
 * zero takes any sign, and a maximum from 0 is no identity of 1/x. */
Test(prove, quotient_by_a_possible_zero_takes_any_sign)
{
	check("tests/prove/reciprocal_max_nonneg.yaml", "pup-");
}

/* Past three bool params the prover takes no cases, and says so: the
 * reals are not what stopped it. */
Test(prove, bool_params_past_the_cases_are_counted)
{
	expect_how("tests/check/five_bool_params.yaml", 1, "identity",
		   "bool param p1: 5 bool params, and the prover takes the cases of at most 3");
}

/* A witness no drawn row reached names an invariant only where one may
 * hold: the prover inferred some, or took bool fields case by case, or an
 * assume bounds the inputs.  A square that wraps has none of those. */
Test(prove, unreached_witness_names_no_invariant_without_one)
{
	expect_how("tests/prove/square_max_i32.yaml", 1, "identity", "but at no state folded from");
	expect_how("tests/prove/square_max_i32.yaml", 1, "identity", ": the drawn rows did not reach it");
	expect_how("tests/prove/i32_order_through_f64.yaml", 1, "identity", ": the assume may exclude the region");
}
