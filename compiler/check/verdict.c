/* verdict.c: the one verdict on a carrier (verdict.h): the trials
 * (check.c, sound.c) and the prover, folded into one status and the line
 * that says why. */
#include "compiler/check/verdict.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/util/buf.h"

static const ProofLine *proof_line(const ProofReport *p, const char *law)
{
	for (int i = 0; i < p->n; i++)
		if (!strcmp(p->line[i].law, law))
			return &p->line[i];
	return NULL;
}

const VerdictLaw *verdict_law(const CarrierVerdict *v, const char *law)
{
	for (int i = 0; i < v->nlaw; i++)
		if (!strcmp(v->law[i].law, law))
			return &v->law[i];
	return NULL;
}

/* The laws in check's order: the trials' (identity, associative, and
 * commutative where claimed), then the certificate where the prover has it. */
static void gather_laws(CarrierVerdict *v)
{
	for (int i = 0; i < v->trials.nlaw; i++)
		v->law[v->nlaw++] = (VerdictLaw){v->trials.law[i].law, &v->trials.law[i],
						 proof_line(&v->proof, v->trials.law[i].law)};
	const ProofLine *cert = proof_line(&v->proof, "certificate");
	if (cert)
		v->law[v->nlaw++] = (VerdictLaw){"certificate", NULL, cert};
}

static void set_why(CarrierVerdict *v, VerdictStatus st, VerdictCause cause, Buf *b)
{
	v->status = st;
	v->cause = cause;
	v->why = buf_take(b);
}

static void judge(Carrier *c, CarrierVerdict *v, int strict)
{
	const CheckResult *r = &v->trials;
	Buf b = {0};
	if (r->input_error) {
		buf_printf(&b, "%s: %s", c->file, r->input_error);
		return set_why(v, VERDICT_FAILED, VERDICT_BY_INPUTS, &b);
	}
	for (int i = 0; i < v->nlaw; i++) {
		const LawOutcome *t = v->law[i].trial;
		if (!t || t->v != VERDICT_FAILS)
			continue;
		if (!strcmp(t->law, "identity"))
			buf_printf(&b, "%s: the merge's identity fails", c->file);
		else
			buf_printf(&b, "%s: the merge is not %s", c->file, t->law);
		buf_printf(&b, " (%s%s%s)", t->detail ? t->detail : "a counterexample was found",
			   v->cases[0] ? "; trials " : "", v->cases);
		return set_why(v, VERDICT_FAILED, VERDICT_BY_TRIALS, &b);
	}
	for (int i = 0; i < v->nlaw; i++) {
		const ProofLine *p = v->law[i].proof;
		if (p && p->status == PROOF_DISPROVED) {
			buf_printf(&b, "%s: %s is disproved (%s)", c->file, p->law, p->how ? p->how : "");
			return set_why(v, VERDICT_FAILED, VERDICT_BY_PROOF, &b);
		}
	}
	if (r->sound == VERDICT_FAILS) {
		buf_printf(&b, "%s: the results disagree with the reference: %s", c->file,
			   r->sound_detail ? r->sound_detail : "a row differs");
		return set_why(v, VERDICT_FAILED, r->sound_empty ? VERDICT_BY_EMPTY_ROW : VERDICT_BY_REFERENCE, &b);
	}
	for (int i = 0; i < v->nlaw; i++) {
		const ProofLine *p = v->law[i].proof;
		if (p && p->status == PROOF_UNKNOWN) {
			buf_printf(&b, "%s: %s is unknown to the prover (%s)", c->file, p->law, p->how ? p->how : "");
			return set_why(v, strict ? VERDICT_FAILED : VERDICT_UNKNOWN, strict ? VERDICT_BY_PROOF : VERDICT_BY_NONE,
				       &b);
		}
	}
	v->status = VERDICT_OK;
	v->cause = VERDICT_BY_NONE;
}

/* Whether the prover leaves a law unknown (or stopped), where the trials
 * held: their count is then all the evidence there is. */
static int unknown_law(const CarrierVerdict *v)
{
	for (int i = 0; i < v->trials.nlaw; i++)
		if (v->trials.law[i].v == VERDICT_FAILS)
			return 0;
	if (v->prove_error)
		return 1;
	for (int i = 0; i < v->proof.n; i++)
		if (v->proof.line[i].status == PROOF_UNKNOWN)
			return 1;
	return 0;
}

int verdict_run(Carrier *c, const VerdictOpts *o, CarrierVerdict *v, char *msg, size_t n)
{
	memset(v, 0, sizeof *v);
	int rc = o->one_case ? check_run(c, &o->check, &v->trials, msg, n)
			     : check_run_cases(c, &o->check, &v->trials, v->cases, sizeof v->cases, msg, n);
	if (rc)
		return -1;
	if (o->prove) {
		const Define *params = o->prove_any_params ? NULL : o->check.params;
		int np = o->prove_any_params ? 0 : o->check.nparams;
		if (prove_carrier_at(c, params, np, o->prove_flags, &v->proof)) {
			v->proof = (ProofReport){0};
			v->prove_error = 1;
		}
	}
	if (o->unknown_trials > o->check.trials && unknown_law(v)) {
		VerdictOpts more = *o;
		more.check.trials = o->unknown_trials;
		check_result_free(&v->trials);
		v->trials = (CheckResult){0};
		if (o->one_case ? check_run(c, &more.check, &v->trials, msg, n)
				: check_run_cases(c, &more.check, &v->trials, v->cases, sizeof v->cases, msg, n)) {
			prove_report_free(&v->proof);
			return -1;
		}
	}
	gather_laws(v);
	judge(c, v, o->strict);
	return 0;
}

VerdictOpts verdict_run_opts(const CheckOpts *check)
{
	VerdictOpts vo = {.check = *check, .prove = 1};
	int asked = check->trials;
	vo.check.trials = asked < VERDICT_RUN_TRIALS ? asked : VERDICT_RUN_TRIALS;
	vo.check.id_trials = VERDICT_RUN_ID_TRIALS;
	vo.unknown_trials = asked < VERDICT_RUN_UNKNOWN_TRIALS ? asked : VERDICT_RUN_UNKNOWN_TRIALS;
	vo.check.special_rows = 0;
	return vo;
}

int verdict_ok(const CarrierVerdict *v) { return v->status != VERDICT_FAILED; }

void verdict_free(CarrierVerdict *v)
{
	check_result_free(&v->trials);
	prove_report_free(&v->proof);
	free(v->why);
	memset(v, 0, sizeof *v);
}
