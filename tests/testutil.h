/* testutil.h: helpers shared by the Criterion suites. */
#ifndef ASSOC_TESTUTIL_H
#define ASSOC_TESTUTIL_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "compiler/front/spec.h"

/* Load a spec that must be valid, with n -D definitions; fails the test
 * with the diagnostic otherwise. */
static inline Carrier *load_defs(const char *path, const Define *defs, int n)
{
	Diag d;
	diag_init(&d, path);
	Carrier *c = spec_load_file(path, defs, n, &d);
	cr_assert(c, "%s did not load:\n%s", path, d.text ? d.text : "(no diagnostic)");
	diag_free(&d);
	return c;
}

static inline Carrier *load_ok(const char *path) { return load_defs(path, NULL, 0); }

/* Load spec text; returns NULL and the first diagnostic line in err when invalid. */
static inline Carrier *load_text(const char *text, char *err, size_t n)
{
	Diag d;
	diag_init(&d, "t.yaml");
	Carrier *c = spec_load_buffer("t.yaml", text, strlen(text), NULL, 0, &d);
	diag_first(&d, err, n);
	diag_free(&d);
	return c;
}

/* Load spec text that must be valid; fails the test with the diagnostic otherwise. */
static inline Carrier *text_ok(const char *text)
{
	char err[512];
	Carrier *c = load_text(text, err, sizeof err);
	cr_assert(c, "spec text did not load: %s", err);
	return c;
}

/* Run a shell command line: its exit status (-1 when a signal ended it),
 * its standard output in out (and its standard error with err; without,
 * standard error is dropped). */
static inline int sh(const char *cmd, char *out, size_t n, int err)
{
	char full[8192];
	snprintf(full, sizeof full, "%s%s", cmd, err ? " 2>&1" : " 2>/dev/null");
	FILE *f = popen(full, "r");
	cr_assert(f, "popen %s", cmd);
	size_t len = fread(out, 1, n - 1, f);
	out[len] = 0;
	int st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* A sum beside the row's first element: associative and not commutative
 * (a+b keeps a's first element, b+a b's), so that every level of a fold
 * must keep the positions' order; its reference holds both outputs. */
#define FIRST_SUM_SPEC                                                                                        \
	"carrier: first_sum\nelement: {x: f32}\nstate: {s: f32, f: f32, n: f32}\nidentity: {s: 0, f: 0, n: 0}\n" \
	"lift: {s: x, f: x, n: 1}\nmerge:\n  s: a.s + b.s\n  f: where(a.n > 0, a.f, b.f)\n  n: a.n + b.n\n"       \
	"finalize: {t: s, first: f}\nreference: {t: sum(x), first: 'sum(where(j == 0, x, 0))'}\n"

#endif
