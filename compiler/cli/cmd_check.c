/* cmd_check.c: `assoc check SPEC...`. */
#include <ctype.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/util/buf.h"
#include "compiler/cli/cli.h"
#include "compiler/check/verdict.h"

static const char *verdict_word(Verdict v) { return v == VERDICT_HOLDS ? "holds" : "fails"; }

/* warn: mark an unknown law a warning (not where the trials disprove it) */
static void print_proof(const ProofLine *pl, int warn)
{
	if (pl)
		printf("%s (%s)%s", prove_status_name(pl->status), pl->how ? pl->how : "",
		       warn && pl->status == PROOF_UNKNOWN ? " [warning]" : "");
}

/* Whether a counterexample's text shows an infinite value ("-inf" or "inf"
 * as a value, not inside a name such as "inflow"). */
static int has_infinity(const char *t)
{
	for (const char *q = t ? strstr(t, "inf") : NULL; q; q = strstr(q + 1, "inf")) {
		int before = q == t || q[-1] == ' ' || q[-1] == '-' || q[-1] == '[' || q[-1] == '(';
		int after = !isalnum((unsigned char)q[3]) && q[3] != '_';
		if (before && after)
			return 1;
	}
	return 0;
}

/* Trials drawn again because their merges left float64's range, and
 * where: a product of degree d overflows past DBL_MAX^(1/d), which in
 * float32 is FLT_MAX^(1/d), so the magnitude scales by the exponents. */
static void print_range(const LawOutcome *l)
{
	printf(" (and %d drawn again, whose merges left the float range", l->skipped);
	if (l->range_at > 1e30)
		printf(": beyond |state| ~ %.0e in float64, ~ %.0e in float32", l->range_at,
		       pow(10, log10(l->range_at) * log10(FLT_MAX) / log10(DBL_MAX)));
	printf(")");
}

static void print_laws(const CarrierVerdict *v)
{
	for (int i = 0; i < v->nlaw; i++) {
		const LawOutcome *l = v->law[i].trial;
		const ProofLine *pl = v->law[i].proof;
		if (!l)
			continue; /* the certificate, after the laws */
		printf("  %s: ", l->law);
		print_proof(pl, l->v == VERDICT_HOLDS);
		printf("%s", pl ? "; " : "");
		if (l->v == VERDICT_HOLDS) {
			printf("holds in %d trials%s", l->trials,
			       !strcmp(l->law, "identity") ? " (float64 and float32, e+e included)" : "");
			if (l->skipped)
				print_range(l);
			printf("\n");
		} else {
			/* a proof over finite reals says nothing of a state holding
			 * an infinity, which a lift can make (where(x > 0, x, -inf)) */
			int inf = has_infinity(l->cex);
			/* where the prover could not decide, the trial settles it */
			printf("%s trial %d: %s%s\n%s", pl && pl->status == PROOF_UNKNOWN ? "disproved by" : "fails at", l->trials,
			       l->detail,
			       pl && pl->status == PROOF_PROVED && inf ? " (the proof is over finite values, this trial's "
									  "states hold an infinity)" : "",
			       l->cex);
		}
		/* lifts of infinite inputs tied with the identity's infinity,
		 * outside the proof's finite states: the prover's words where it
		 * found them */
		const char *except = pl && pl->except ? pl->except : l->v == VERDICT_HOLDS ? l->except : NULL;
		if (except)
			printf("    %s %s [warning]\n", l->law, except);
	}
	const VerdictLaw *cert = verdict_law(v, "certificate");
	if (cert) {
		printf("  certificate: ");
		print_proof(cert->proof, 1);
		printf("\n");
	}
}

/* One line where every grouping agrees and the outputs agree with the
 * reference; the witnesses where they do not.  A warning either way. */
static void print_specials(const SpecialOutcome *s)
{
	printf("  special values (NaN, inf): ");
	if (!s->inputs) {
		printf("not tried, the carrier has no float element, column or row input\n");
		return;
	}
	if (s->law_fails) {
		printf("not tried, a law fails on ordinary values\n");
		return;
	}
	if (!s->rows) {
		printf("not tried, 'assume' holds on no row holding one\n");
		return;
	}
	if (s->grouping == VERDICT_HOLDS)
		printf("groupings agree on %d rows", s->rows);
	else
		printf("groupings disagree [warning]");
	if (s->reference == VERDICT_HOLDS)
		printf("; outputs agree with the reference");
	else if (s->reference == VERDICT_FAILS)
		printf("; outputs disagree with the reference [warning]");
	printf("\n");
	if (s->grouping == VERDICT_FAILS)
		printf("    grouping: %s\n%s    devices may disagree on rows holding such values: each groups the fold its "
		       "own way\n", s->group_detail, s->group_cex);
	if (s->reference == VERDICT_FAILS)
		printf("    reference: %s\n%s", s->ref_detail, s->ref_cex);
}

/* Whether the devices may fold c's positions in any order, where c does
 * not claim it (check_commutes, which the CPU's lanes and the GPU's row
 * templates ask): 1 or 0 with why; -1 where there is nothing to say (the
 * claim is made, c is a scan, or a law fails). */
static int order_of(Carrier *c, const CarrierVerdict *v, char *why, size_t n)
{
	if ((c->laws & LAW_COMMUTATIVE) || c->tpl == FAM_SCAN || v->trials.input_error)
		return -1;
	for (int i = 0; i < v->nlaw; i++)
		if (v->law[i].trial && v->law[i].trial->v != VERDICT_HOLDS)
			return -1;
	return check_commutes(c, why, n);
}

static void print_order(Carrier *c, const CarrierVerdict *v)
{
	char why[400];
	int any = order_of(c, v, why, sizeof why);
	if (any >= 0)
		printf("  order: not claimed; the CPU's lanes and the GPU's row templates %s: %s\n",
		       any ? "fold positions in any order" : "keep the positions' order", why);
}

static void print_text(Carrier *c, const CarrierVerdict *v, int ok, const char *cases)
{
	const CheckResult *r = &v->trials;
	const ProofReport *p = &v->proof;
	printf("%s: carrier %s\n", c->file, c->name);
	if (cases)
		printf("  trials: %s\n", cases);
	if (r->input_error) {
		printf("  inputs: %s\n  FAILED\n", r->input_error);
		return;
	}
	print_laws(v);
	print_order(c, v);
	if (p->trace) {
		printf("  proof trace:\n");
		for (const char *l = p->trace; *l;) {
			size_t n = strcspn(l, "\n");
			printf("    %.*s\n", (int)n, l);
			l += n + (l[n] == '\n');
		}
	}
	if (r->sound == VERDICT_NA)
		printf("  reference: none given, so soundness is not checked\n");
	else if (r->sound == VERDICT_HOLDS)
		printf("  reference: matches on %d rows of lengths %d to %d, folded in random tree shapes\n", r->rows,
		       r->empty_rows ? 0 : 1, r->max_len);
	else
		printf("  reference: fails: %s\n%s", r->sound_detail, r->sound_cex);
	for (int i = 0; i < r->nnotes; i++)
		printf("  empty row: %s\n", r->notes[i]);
	int shown = 0;
	for (int i = 0; i < r->nerr; i++) {
		if (!r->err[i].defined)
			continue;
		printf("%s %s %.2g", shown++ ? "," : "  float32 error:", r->err[i].name, r->err[i].rel);
		/* the naive formula overflows on rows of large values (exp(x) past
		 * float32's range), which the carrier's own fold survives */
		if (isinf(r->err[i].naive))
			printf(" (naive float32 overflows)");
		else
			printf(" (naive float32 %.2g)", r->err[i].naive);
	}
	if (shown)
		printf("\n");
	/* a finite value beyond run's tolerance in the spec's types: run
	 * would fail such a row (a NaN there fails the reference above) */
	if (r->accuracy == VERDICT_FAILS)
		printf("  float32 accuracy: %s [warning]\n%s", r->acc_detail, r->acc_cex);
	print_specials(&r->special);
	printf("  %s (%.2f s; proofs %.3f s)\n", ok ? "ok" : "FAILED", r->seconds, p->seconds);
}

static void json_proof(Buf *b, const ProofLine *pl)
{
	if (!pl)
		return;
	buf_printf(b, ", \"proof\": {\"status\": \"%s\", \"how\": ", prove_status_name(pl->status));
	buf_json_str(b, pl->how ? pl->how : "");
	if (pl->except) {
		buf_puts(b, ", \"except\": ");
		buf_json_str(b, pl->except);
	}
	buf_puts(b, "}");
}

static void json_laws(Buf *b, const CarrierVerdict *v)
{
	buf_puts(b, ", \"laws\": [");
	for (int i = 0; i < v->nlaw; i++) {
		const LawOutcome *l = v->law[i].trial;
		if (!l)
			continue;
		buf_printf(b, "%s{\"law\": \"%s\", \"verdict\": \"%s\", \"trials\": %d, \"skipped\": %d", i ? ", " : "",
			   l->law, verdict_word(l->v), l->trials, l->skipped);
		if (l->skipped)
			buf_printf(b, ", \"range_at\": %.3g", l->range_at);
		if (l->v == VERDICT_FAILS) {
			buf_puts(b, ", \"detail\": ");
			buf_json_str(b, l->detail);
			buf_printf(b, ", \"counterexample\": %s", l->json);
		}
		if (l->v == VERDICT_HOLDS && l->except) {
			buf_puts(b, ", \"except\": {\"detail\": ");
			buf_json_str(b, l->except);
			buf_printf(b, ", \"witness\": %s}", l->except_json);
		}
		json_proof(b, v->law[i].proof);
		buf_puts(b, "}");
	}
	const VerdictLaw *cert = verdict_law(v, "certificate");
	if (cert) {
		buf_puts(b, ", {\"law\": \"certificate\"");
		json_proof(b, cert->proof);
		buf_puts(b, "}");
	}
	buf_puts(b, "]");
}

/* Where no inputs could be drawn (input_error) the reference and the
 * special values were not compared on any row: "not_checked", not a
 * verdict over none. */
static void json_reference(Buf *b, const CheckResult *r)
{
	buf_puts(b, ", \"reference\": ");
	if (r->sound == VERDICT_NA) {
		buf_puts(b, "null");
		return;
	}
	if (r->input_error) {
		buf_puts(b, "{\"verdict\": \"not_checked\", \"rows\": 0}");
		return;
	}
	buf_printf(b, "{\"verdict\": \"%s\", \"rows\": %d, \"max_len\": %d",
		   r->sound == VERDICT_HOLDS ? "matches" : "fails", r->rows, r->max_len);
	if (r->sound == VERDICT_FAILS) {
		buf_puts(b, ", \"detail\": ");
		buf_json_str(b, r->sound_detail);
		buf_printf(b, ", \"counterexample\": %s", r->sound_json);
	}
	buf_puts(b, "}");
}

static void json_special_side(Buf *b, const char *name, Verdict v, const char *detail, const char *cex)
{
	buf_printf(b, ", \"%s\": ", name);
	if (v == VERDICT_NA) {
		buf_puts(b, "null");
		return;
	}
	buf_printf(b, "{\"verdict\": \"%s\"", v == VERDICT_HOLDS ? "agree" : "disagree");
	if (v == VERDICT_FAILS) {
		buf_puts(b, ", \"detail\": ");
		buf_json_str(b, detail);
		buf_printf(b, ", \"counterexample\": %s", cex);
	}
	buf_puts(b, "}");
}

static void json_specials(Buf *b, const CheckResult *r)
{
	const SpecialOutcome *s = &r->special;
	if (r->input_error) {
		buf_puts(b, ", \"special_values\": {\"verdict\": \"not_checked\", \"inputs\": 0, \"rows\": 0}");
		return;
	}
	buf_printf(b, ", \"special_values\": {\"inputs\": %d, \"rows\": %d, \"law_fails\": %s", s->inputs, s->rows,
		   s->law_fails ? "true" : "false");
	json_special_side(b, "grouping", s->grouping, s->group_detail, s->group_json);
	json_special_side(b, "reference", s->reference, s->ref_detail, s->ref_json);
	buf_puts(b, "}");
}

static void print_json(Carrier *c, const CarrierVerdict *v, int ok, const char *cases)
{
	const CheckResult *r = &v->trials;
	const ProofReport *p = &v->proof;
	Buf b = {0};
	buf_puts(&b, "{\"file\": ");
	buf_json_str(&b, c->file);
	buf_puts(&b, ", \"carrier\": ");
	buf_json_str(&b, c->name);
	if (cases) {
		buf_puts(&b, ", \"trials\": ");
		buf_json_str(&b, cases);
	}
	buf_printf(&b, ", \"ok\": %s, \"seconds\": %.4f, \"proof_seconds\": %.4f", ok ? "true" : "false", r->seconds,
		   p->seconds);
	if (r->input_error) {
		buf_puts(&b, ", \"input_error\": ");
		buf_json_str(&b, r->input_error);
	}
	json_laws(&b, v);
	char why[400];
	int any = order_of(c, v, why, sizeof why);
	if (any >= 0) {
		buf_printf(&b, ", \"any_order\": %s, \"order\": ", any ? "true" : "false");
		buf_json_str(&b, why);
	}
	if (p->trace) {
		buf_puts(&b, ", \"proof_trace\": ");
		buf_json_str(&b, p->trace);
	}
	json_reference(&b, r);
	json_specials(&b, r);
	buf_puts(&b, ", \"empty_row\": [");
	for (int i = 0; i < r->nnotes; i++) {
		buf_puts(&b, i ? ", " : "");
		buf_json_str(&b, r->notes[i]);
	}
	buf_puts(&b, "], \"f32_error\": {");
	for (int i = 0, n = 0; i < r->nerr; i++) {
		if (!r->err[i].defined)
			continue;
		buf_puts(&b, n++ ? ", " : "");
		buf_json_str(&b, r->err[i].name);
		buf_puts(&b, ": {\"worst\": ");
		buf_json_num(&b, r->err[i].rel);
		buf_puts(&b, ", \"naive\": ");
		buf_json_num(&b, r->err[i].naive);
		buf_puts(&b, ", \"family\": ");
		buf_json_str(&b, r->err[i].family);
		buf_puts(&b, "}");
	}
	buf_puts(&b, "}, \"f32_accuracy\": ");
	if (r->accuracy == VERDICT_NA)
		buf_puts(&b, "null");
	else if (r->accuracy == VERDICT_HOLDS)
		buf_puts(&b, "{\"verdict\": \"within\"}");
	else {
		buf_puts(&b, "{\"verdict\": \"beyond\", \"detail\": ");
		buf_json_str(&b, r->acc_detail);
		buf_printf(&b, ", \"counterexample\": %s}", r->acc_json);
	}
	buf_puts(&b, "}");
	char *s = buf_take(&b);
	puts(s);
	free(s);
}

static void json_invalid(const char *path, const char *diag)
{
	Buf b = {0};
	buf_puts(&b, "{\"file\": ");
	buf_json_str(&b, path);
	buf_puts(&b, ", \"ok\": false, \"error\": ");
	buf_json_str(&b, diag);
	buf_puts(&b, "}");
	char *s = buf_take(&b);
	puts(s);
	free(s);
}

static int check_one(Opts *o, const char *path)
{
	Diag d;
	diag_init(&d, path);
	Carrier *c = spec_load_file(path, o->defs, o->ndefs, &d);
	if (!c) {
		if (o->json)
			json_invalid(path, d.text ? d.text : "");
		fputs(d.text ? d.text : "", stderr);
		diag_free(&d);
		return EXIT_USAGE;
	}
	diag_free(&d);
	if (cli_params_fit(o, c)) {
		spec_carrier_free(c);
		return EXIT_USAGE;
	}
	char msg[PATH_MAX * 2 + 256];
	if (cli_loop_msg(c, msg, sizeof msg)) {
		if (o->json)
			json_invalid(path, msg);
		fputs(msg, stderr);
		spec_carrier_free(c);
		return EXIT_USAGE;
	}
	CarrierVerdict v;
	char why[256];
	VerdictOpts vo = {.check = o->check, .prove = 1, .prove_flags = o->proof ? PROVE_TRACE : 0, .strict = o->strict};
	if (!o->proof) /* the trace is printed as it goes */
		cli_busy("%s: checking the laws", path);
	int failed = verdict_run(c, &vo, &v, why, sizeof why);
	cli_busy_done();
	if (failed) {
		snprintf(msg, sizeof msg, "assoc: %s: %s\n", path, why); /* which of the specs given */
		if (o->json)
			json_invalid(path, msg);
		fputs(msg, stderr);
		spec_carrier_free(c);
		return EXIT_USAGE;
	}
	if (v.prove_error)
		fprintf(stderr, "assoc: %s: internal error in the prover\n", path);
	int ok = verdict_ok(&v);
	if (o->json)
		print_json(c, &v, ok, v.cases[0] ? v.cases : NULL);
	else
		print_text(c, &v, ok, v.cases[0] ? v.cases : NULL);
	int rc = ok ? EXIT_OK : EXIT_FAIL;
	verdict_free(&v);
	spec_carrier_free(c);
	return rc;
}

int cmd_check(Opts *o)
{
	int rc = EXIT_OK;
	for (int i = 0; i < o->nspecs; i++) {
		int r = check_one(o, o->specs[i]);
		rc = r > rc ? r : rc;
	}
	return rc;
}
