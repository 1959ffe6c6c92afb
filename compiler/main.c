/* main.c: the assoc command line.  The only file that exits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/buf.h"
#include "compiler/check.h"
#include "compiler/spec.h"

#define ASSOC_VERSION "0.1.0"

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2, MAX_DEFINES = 64 };

static const char usage[] =
	"usage: assoc <command> [options] SPEC...\n"
	"\n"
	"commands:\n"
	"  check SPEC...   check each carrier's laws and its reference:\n"
	"                  identity, associativity, commutativity (when claimed),\n"
	"                  soundness against `reference`, and float32 error\n"
	"\n"
	"options for check:\n"
	"  --seed N        seed of the random trials (default 1); runs are reproducible\n"
	"  --trials N      associativity and commutativity trials (default 20000)\n"
	"  --json          one JSON object per spec on standard output\n"
	"  -D NAME=VALUE   override a dim (e.g. -D d=128)\n"
	"  --param NAME=V  fix a param instead of drawing it (e.g. --param eps=1e-5)\n"
	"\n"
	"  assoc --help, assoc --version\n"
	"\n"
	"exit status: 0 when every check holds, 1 when one fails, 2 for an invalid spec or usage\n";

typedef struct {
	CheckOpts check;
	Define defs[MAX_DEFINES], params[MAX_DEFINES];
	int ndefs, nparams;
	int json;
	char **specs;
	int nspecs;
} Opts;

static int bad_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "assoc: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n(see assoc --help)\n");
	return EXIT_USAGE;
}

static int parse_count(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (!*s || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

/* NAME=VALUE; the text stays in argv, split in place. */
static int parse_define(char *s, Define *d)
{
	char *eq = strchr(s, '=');
	if (!eq || eq == s)
		return -1;
	*eq = 0;
	d->name = s;
	d->value = eq + 1;
	return 0;
}

static int parse_opts(int argc, char **argv, Opts *o)
{
	check_defaults(&o->check);
	o->specs = calloc(argc, sizeof *o->specs);
	if (!o->specs)
		abort();
	for (int i = 2; i < argc; i++) {
		char *a = argv[i];
		long v;
		int has_val = i + 1 < argc;
		if (!strcmp(a, "--json"))
			o->json = 1;
		else if (!strcmp(a, "--seed")) {
			if (!has_val || parse_count(argv[++i], 0, 0x7fffffffL, &v))
				return bad_usage("--seed needs a number", "");
			o->check.seed = (uint64_t)v;
		} else if (!strcmp(a, "--trials")) {
			if (!has_val || parse_count(argv[++i], 1, 100000000L, &v))
				return bad_usage("--trials needs a number from 1 to 100000000", "");
			o->check.trials = (int)v;
		} else if (!strcmp(a, "-D") || !strncmp(a, "-D", 2)) {
			char *def = a[2] ? a + 2 : has_val ? argv[++i] : NULL;
			if (!def || o->ndefs == MAX_DEFINES || parse_define(def, &o->defs[o->ndefs++]))
				return bad_usage("-D needs NAME=VALUE, got '%s'", def ? def : "");
		} else if (!strcmp(a, "--param")) {
			char *def = has_val ? argv[++i] : NULL;
			if (!def || o->nparams == MAX_DEFINES || parse_define(def, &o->params[o->nparams++]))
				return bad_usage("--param needs NAME=VALUE, got '%s'", def ? def : "");
		} else if (a[0] == '-' && a[1])
			return bad_usage("unknown option '%s'", a);
		else
			o->specs[o->nspecs++] = a;
	}
	if (!o->nspecs)
		return bad_usage("check needs at least one spec file%s", "");
	o->check.params = o->params;
	o->check.nparams = o->nparams;
	return EXIT_OK;
}

static const char *verdict_word(Verdict v) { return v == VERDICT_HOLDS ? "holds" : "fails"; }

static void print_laws(const CheckResult *r)
{
	for (int i = 0; i < r->nlaw; i++) {
		const LawOutcome *l = &r->law[i];
		if (l->v == VERDICT_HOLDS) {
			printf("  %s: holds in %d trials%s", l->law, l->trials,
			       !strcmp(l->law, "identity") ? " (float64 and float32, e+e included)" : "");
			if (l->skipped)
				printf(" (%d overflowed on both sides and were skipped)", l->skipped);
			printf("\n");
		} else {
			printf("  %s: fails at trial %d: %s\n%s", l->law, l->trials, l->detail, l->cex);
		}
	}
}

static void print_text(const Carrier *c, const CheckResult *r)
{
	printf("%s: carrier %s\n", c->file, c->name);
	if (r->input_error) {
		printf("  inputs: %s\n  FAILED\n", r->input_error);
		return;
	}
	print_laws(r);
	if (r->sound == VERDICT_NA)
		printf("  reference: none given, so soundness is not checked\n");
	else if (r->sound == VERDICT_HOLDS)
		printf("  reference: matches on %d rows of lengths 0 to %d, folded in random tree shapes\n", r->rows,
		       r->max_len);
	else
		printf("  reference: fails: %s\n%s", r->sound_detail, r->sound_cex);
	for (int i = 0; i < r->nnotes; i++)
		printf("  empty row: %s\n", r->notes[i]);
	int shown = 0;
	for (int i = 0; i < r->nerr; i++) {
		if (!r->err[i].defined)
			continue;
		printf("%s %s %.2g (naive float32 %.2g)", shown++ ? "," : "  float32 error:", r->err[i].name,
		       r->err[i].rel, r->err[i].naive);
	}
	if (shown)
		printf("\n");
	printf("  %s (%.2f s)\n", check_ok(r) ? "ok" : "FAILED", r->seconds);
}

static void print_json(const Carrier *c, const CheckResult *r)
{
	Buf b = {0};
	buf_puts(&b, "{\"file\": ");
	buf_json_str(&b, c->file);
	buf_puts(&b, ", \"carrier\": ");
	buf_json_str(&b, c->name);
	buf_printf(&b, ", \"ok\": %s, \"seconds\": %.4f", check_ok(r) ? "true" : "false", r->seconds);
	if (r->input_error) {
		buf_puts(&b, ", \"input_error\": ");
		buf_json_str(&b, r->input_error);
	}
	buf_puts(&b, ", \"laws\": [");
	for (int i = 0; i < r->nlaw; i++) {
		const LawOutcome *l = &r->law[i];
		buf_printf(&b, "%s{\"law\": \"%s\", \"verdict\": \"%s\", \"trials\": %d, \"skipped\": %d", i ? ", " : "",
			   l->law, verdict_word(l->v), l->trials, l->skipped);
		if (l->v == VERDICT_FAILS) {
			buf_puts(&b, ", \"detail\": ");
			buf_json_str(&b, l->detail);
			buf_printf(&b, ", \"counterexample\": %s", l->json);
		}
		buf_puts(&b, "}");
	}
	buf_puts(&b, "], \"reference\": ");
	if (r->sound == VERDICT_NA)
		buf_puts(&b, "null");
	else {
		buf_printf(&b, "{\"verdict\": \"%s\", \"rows\": %d, \"max_len\": %d",
			   r->sound == VERDICT_HOLDS ? "matches" : "fails", r->rows, r->max_len);
		if (r->sound == VERDICT_FAILS) {
			buf_puts(&b, ", \"detail\": ");
			buf_json_str(&b, r->sound_detail);
			buf_printf(&b, ", \"counterexample\": %s", r->sound_json);
		}
		buf_puts(&b, "}");
	}
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
	buf_puts(&b, "}}");
	char *s = buf_take(&b);
	puts(s);
	free(s);
}

static int check_one(const char *path, Opts *o)
{
	Diag d;
	diag_init(&d, path);
	Carrier *c = spec_load_file(path, o->defs, o->ndefs, &d);
	if (!c) {
		if (o->json) {
			Buf b = {0};
			buf_puts(&b, "{\"file\": ");
			buf_json_str(&b, path);
			buf_puts(&b, ", \"ok\": false, \"error\": ");
			buf_json_str(&b, d.text ? d.text : "");
			buf_puts(&b, "}");
			char *s = buf_take(&b);
			puts(s);
			free(s);
		}
		fputs(d.text ? d.text : "", stderr);
		diag_free(&d);
		return EXIT_USAGE;
	}
	diag_free(&d);
	CheckResult r;
	char msg[256];
	if (check_run(c, &o->check, &r, msg, sizeof msg)) {
		fprintf(stderr, "assoc: %s\n", msg);
		carrier_free(c);
		return EXIT_USAGE;
	}
	if (o->json)
		print_json(c, &r);
	else
		print_text(c, &r);
	int rc = check_ok(&r) ? EXIT_OK : EXIT_FAIL;
	check_result_free(&r);
	carrier_free(c);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fputs(usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_USAGE : EXIT_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("assoc %s\n", ASSOC_VERSION);
		return EXIT_OK;
	}
	if (strcmp(argv[1], "check"))
		return bad_usage("unknown command '%s'", argv[1]);
	Opts o = {0};
	int rc = parse_opts(argc, argv, &o);
	if (rc == EXIT_OK)
		for (int i = 0; i < o.nspecs; i++) {
			int r = check_one(o.specs[i], &o);
			rc = r > rc ? r : rc;
		}
	free(o.specs);
	return rc;
}
