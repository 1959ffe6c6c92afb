/* testutil.h: helpers shared by the Criterion suites. */
#ifndef ASSOC_TESTUTIL_H
#define ASSOC_TESTUTIL_H

#include <criterion/criterion.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "compiler/front/spec.h"

/* One entry of a tree, removed: links themselves, never what they name. */
static inline int tree_entry_remove(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st, (void)type, (void)ftw;
	remove(path);
	return 0;
}

/* Remove path and everything under it, depth first, without following
 * links (a link planted in the tree cannot lead the removal out of it). */
static inline void tree_remove(const char *path)
{
	nftw(path, tree_entry_remove, 16, FTW_DEPTH | FTW_PHYS);
}

/* The folders made by test_tmpdir, removed when the test's process ends:
 * Criterion runs each test in a process of its own and ends it with exit
 * on a failed assertion and a skip as well, so atexit covers every path
 * short of a kill (a timeout). */
enum { TEST_TMPDIRS_MAX = 8 };
static char test_tmpdirs[TEST_TMPDIRS_MAX][512];
static int test_ntmpdirs, test_tmpdirs_registered;

static inline void test_tmpdirs_remove(void)
{
	for (int i = 0; i < test_ntmpdirs; i++)
		tree_remove(test_tmpdirs[i]);
	test_ntmpdirs = 0;
}

/* XDG_CACHE_HOME at the folder dir, made absolute: a relative one is no
 * cache folder (compiler/util/cache.c). */
static inline void test_xdg_cache(const char *dir)
{
	char abs[PATH_MAX];
	cr_assert(realpath(dir, abs), "%s: no absolute path", dir);
	setenv("XDG_CACHE_HOME", abs, 1);
}

/* mkdtemp(tmpl) that the test cannot leave behind: the folder and all
 * it comes to hold (caches pointed there included) are removed when the
 * test ends.  Fails the test when the folder cannot be made. */
static inline char *test_tmpdir(char *tmpl)
{
	char abs[PATH_MAX];
	cr_assert(test_ntmpdirs < TEST_TMPDIRS_MAX, "more than %d folders in one test", TEST_TMPDIRS_MAX);
	cr_assert(mkdtemp(tmpl), "mkdtemp %s", tmpl);
	/* absolute: the removal must not depend on the working directory at exit */
	cr_assert(realpath(tmpl, abs) && strlen(abs) < sizeof test_tmpdirs[0], "%s: no short absolute path", tmpl);
	if (!test_tmpdirs_registered++)
		atexit(test_tmpdirs_remove);
	strcpy(test_tmpdirs[test_ntmpdirs++], abs);
	return tmpl;
}

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
