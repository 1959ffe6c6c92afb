/* test_docs.c: the documentation says what the code does.
 *
 * docs/spec-format.md names every top-level key the loader takes (read
 * from spec_keys, the table the loader itself checks against) and every
 * operator and function of ir/ops.def; its worked examples are the files
 * under docs/examples/, which load and pass `assoc check` (the loop spec,
 * `assoc explore`); and no document points outside the repository. */
#include <glob.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "testutil.h"

#define ASSOC "build/asan/assoc"
#define SPEC_FORMAT "docs/spec-format.md"

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	cr_assert(f, "cannot open %s (the suite runs from the repository root)", path);
	cr_assert_eq(fseek(f, 0, SEEK_END), 0);
	long n = ftell(f);
	cr_assert_geq(n, 0);
	rewind(f);
	char *buf = malloc((size_t)n + 1);
	cr_assert(buf);
	cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n, "short read of %s", path);
	buf[n] = 0;
	fclose(f);
	return buf;
}

/* The code spans of a Markdown text, `...` on one line, each followed by a
 * newline, with the table escape \| read as |. */
static char *code_spans(const char *md)
{
	size_t n = strlen(md), k = 0;
	char *out = malloc(n + 1);
	cr_assert(out);
	int in = 0;
	for (const char *p = md; *p; p++) {
		if (*p == '`') {
			if (in)
				out[k++] = '\n';
			in = !in;
		} else if (*p == '\n') {
			in = 0; /* a span does not cross lines; fences open and close on their own */
		} else if (in) {
			if (p[0] == '\\' && p[1] == '|')
				p++;
			out[k++] = *p;
		}
	}
	out[k] = 0;
	return out;
}

Test(docs, every_top_level_key_is_in_the_spec_format)
{
	char *doc = read_file(SPEC_FORMAT);
	int n = 0;
	for (int i = 0; spec_keys[i]; i++, n++) {
		char span[80];
		snprintf(span, sizeof span, "`%s`", spec_keys[i]);
		cr_expect(strstr(doc, span), "%s does not name the key %s", SPEC_FORMAT, span);
	}
	cr_expect_geq(n, 23, "spec_keys lists %d keys", n);
	free(doc);
}

/* spec_keys is the loader's own list: each key in it is accepted at the
 * top of a spec, and a key outside it is refused. */
Test(docs, spec_keys_is_what_the_loader_takes)
{
	char err[512];
	for (int i = 0; spec_keys[i]; i++) {
		char text[512];
		snprintf(text, sizeof text, "carrier: c\nelement: {x: f32}\nstate: {s: f32}\nidentity: {s: 0}\n"
			 "lift: {s: x}\nmerge:\n  s: a.s + b.s\n%s: 1\n", spec_keys[i]);
		Carrier *c = load_text(text, err, sizeof err);
		spec_carrier_free(c);
		char unknown[128];
		snprintf(unknown, sizeof unknown, "unknown key '%s'", spec_keys[i]);
		cr_expect(!strstr(err, unknown), "%s: %s", spec_keys[i], err);
	}
	Carrier *c = load_text("carrier: c\nelement: {x: f32}\nstate: {s: f32}\nidentity: {s: 0}\n"
			       "lift: {s: x}\nmerge:\n  s: a.s + b.s\nfinalise: {y: s}\n", err, sizeof err);
	cr_expect_null(c);
	spec_carrier_free(c);
	cr_expect(strstr(err, "unknown key 'finalise' (did you mean 'finalize'?)"), "%s", err);
}

Test(docs, every_function_and_operator_is_in_the_spec_format)
{
	char *doc = read_file(SPEC_FORMAT), *spans = code_spans(doc);
	int funcs = 0;
	for (int op = 0; op < EXPR_NOPS; op++) {
		const OpInfo *o = &ir_ops[op];
		if (o->flags & F_FUNC) { /* written as a call: `exp(x)`, `count()` */
			char call[40];
			snprintf(call, sizeof call, "`%s(", o->printed);
			cr_expect(strstr(doc, call), "%s does not describe the function %s", SPEC_FORMAT, o->printed);
			funcs++;
		} else if ((o->flags & F_INFIX) || op == EXPR_NEG || op == EXPR_NOT) {
			cr_expect(strstr(spans, o->printed), "%s has no code span with the operator %s", SPEC_FORMAT,
				  o->printed);
		}
	}
	cr_expect_geq(funcs, 20);
	free(spans);
	free(doc);
}

static void expect_no_outside_pointer(const char *path)
{
	char *text = read_file(path);
	cr_expect(!strstr(text, "../shared"), "%s points to ../shared, outside the repository", path);
	cr_expect(!strstr(text, "shared/design"), "%s points to shared/design, outside the repository", path);
	/* the spec format is docs/spec-format.md, from the repository root */
	for (const char *p = text; (p = strstr(p, "spec-format.md")); p++)
		cr_expect(p - text >= 5 && !strncmp(p - 5, "docs/", 5), "%s names spec-format.md without docs/", path);
	free(text);
}

Test(docs, nothing_points_outside_the_repository)
{
	const char *files[] = {"README.md", "compiler/lib/assoc.h", "compiler/front/spec.c", "compiler/devices/run.h",
			       "runtime/cpu.h", "specs/loops/README.md"};
	for (size_t i = 0; i < sizeof files / sizeof *files; i++)
		expect_no_outside_pointer(files[i]);
	glob_t g;
	cr_assert_eq(glob("docs/*.md", 0, NULL, &g), 0);
	cr_expect_geq(g.gl_pathc, 2, "docs/spec-format.md and docs/architecture.md");
	for (size_t i = 0; i < g.gl_pathc; i++)
		expect_no_outside_pointer(g.gl_pathv[i]);
	globfree(&g);
}

/* Each example file's text is in the doc as it is on disk, and each YAML
 * block of the doc that is a whole spec is one of the files. */
static void expect_examples_in_doc(const char *doc, const char *pattern, int *nfiles)
{
	glob_t g;
	cr_assert_eq(glob(pattern, 0, NULL, &g), 0, "no %s", pattern);
	for (size_t i = 0; i < g.gl_pathc; i++) {
		char *text = read_file(g.gl_pathv[i]);
		cr_expect(strstr(doc, text), "%s is not in %s as it is on disk", g.gl_pathv[i], SPEC_FORMAT);
		Carrier *c = load_ok(g.gl_pathv[i]);
		spec_carrier_free(c);
		free(text);
		(*nfiles)++;
	}
	globfree(&g);
}

Test(docs, the_examples_are_files_that_load)
{
	char *doc = read_file(SPEC_FORMAT);
	int nfiles = 0, nblocks = 0;
	expect_examples_in_doc(doc, "docs/examples/*.yaml", &nfiles);
	expect_examples_in_doc(doc, "docs/examples/loops/*.yaml", &nfiles);
	for (const char *p = doc; (p = strstr(p, "```yaml\ncarrier: ")); p++)
		nblocks++;
	cr_expect_eq(nblocks, nfiles, "%d whole specs in %s, %d files under docs/examples", nblocks, SPEC_FORMAT,
		     nfiles);
	cr_expect_geq(nfiles, 7);
	free(doc);
}

Test(docs, the_carrier_examples_pass_check, .timeout = 300)
{
	static char out[1 << 16];
	int rc = sh(ASSOC " check docs/examples/*.yaml", out, sizeof out, 1);
	cr_expect_eq(rc, 0, "%s", out);
	cr_expect(!strstr(out, "FAILED"), "%s", out);
	for (const char *name = "online_softmax\0welford\0argmax\0linear_recurrence\0prefix_logsumexp\0attention\0"
				"weighted_mean\0moe_topk_routing\0";
	     *name; name += strlen(name) + 1) {
		char line[128];
		snprintf(line, sizeof line, "docs/examples/%s.yaml: carrier %s\n", name, name);
		cr_expect(strstr(out, line), "no report for %s:\n%s", name, out);
	}
}

Test(docs, the_loop_example_explores_to_a_carrier, .timeout = 120)
{
	static char out[1 << 16];
	int rc = sh(ASSOC " explore docs/examples/loops/softmax_update.yaml -o -", out, sizeof out, 1);
	cr_expect_eq(rc, 0, "%s", out);
	cr_expect(strstr(out, "carrier: softmax_update by generalize; associative proved"), "%s", out);
	cr_expect(strstr(out, "\nmerge:\n"), "%s", out);
}
