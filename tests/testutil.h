/* testutil.h: helpers shared by the Criterion suites. */
#ifndef ASSOC_TESTUTIL_H
#define ASSOC_TESTUTIL_H

#include <criterion/criterion.h>
#include <stdlib.h>

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

#endif
