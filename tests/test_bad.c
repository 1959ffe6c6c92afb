/* test_bad.c: bad input gets a clear error and nothing else.
 *
 * Every tests/bad/NAME.yaml must fail to load with NAME.err as its first
 * diagnostic line, followed by the quoted line and a caret when it has a
 * position.  Inputs too big to keep as files are built here.  The suite runs
 * under AddressSanitizer, so a leak or an overflow fails the test too. */
#include <glob.h>
#include <stdio.h>
#include <string.h>

#include "testutil.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define HAVE_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#include <sanitizer/lsan_interface.h>
#define HAVE_LSAN 1
#endif
#endif

/* LeakSanitizer reports leaks at exit, which Criterion does not count as a
 * failure; ask it now instead. */
static void expect_no_leaks(void)
{
#ifdef HAVE_LSAN
	cr_expect_eq(__lsan_do_recoverable_leak_check(), 0, "memory leaked (see the LeakSanitizer report above)");
#endif
}

static char *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *buf = malloc(n + 1);
	size_t got = fread(buf, 1, n, f);
	fclose(f);
	buf[got] = 0;
	if (len)
		*len = got;
	return buf;
}

/* The quoted-line-and-caret form under a positioned diagnostic:
 *   file:L:C: error: ...
 *       L | text
 *         |   ^          (the caret under column C, or inside a window) */
static int check_quote(const char *text, char *why, size_t n)
{
	const char *nl = strchr(text, '\n');
	const char *e = strstr(text, ": error: ");
	if (!nl || !e || e > nl)
		return snprintf(why, n, "no 'error:' on the first line"), -1;
	/* the position is "L:C" just before ": error: " (file names may hold ':') */
	char prefix[512];
	snprintf(prefix, sizeof prefix, "%.*s", (int)(e - text), text);
	char *c = strrchr(prefix, ':');
	if (!c)
		return 0;
	*c = 0;
	char *l = strrchr(prefix, ':');
	int line, col;
	if (!l || sscanf(l + 1, "%d", &line) != 1 || sscanf(c + 1, "%d", &col) != 1)
		return 0; /* no position: nothing to quote */
	char head[32];
	snprintf(head, sizeof head, "%5d | ", line);
	const char *l2 = nl + 1, *l3 = strchr(l2, '\n');
	if (strncmp(l2, head, strlen(head)))
		return snprintf(why, n, "second line is not the quoted line %d", line), -1;
	if (!l3 || strncmp(l3 + 1, "      | ", 8))
		return snprintf(why, n, "no caret line"), -1;
	const char *caret = l3 + 9;
	while (*caret == ' ')
		caret++;
	if (*caret != '^' || caret[1] != '\n')
		return snprintf(why, n, "caret line is not spaces and one '^'"), -1;
	int shown = (int)(caret - (l3 + 9)) + 1;
	int windowed = !strncmp(l2 + strlen(head), "...", 3);
	if (!windowed && shown != col)
		return snprintf(why, n, "caret at column %d, diagnostic says %d", shown, col), -1;
	return 0;
}

Test(bad, every_file_fails_with_its_diagnostic)
{
	glob_t g;
	cr_assert_eq(glob("tests/bad/*.yaml", 0, NULL, &g), 0, "no tests/bad/*.yaml");
	cr_expect_geq(g.gl_pathc, 60, "only %zu bad inputs", g.gl_pathc);
	for (size_t i = 0; i < g.gl_pathc; i++) {
		const char *path = g.gl_pathv[i];
		char errpath[512], first[1024], why[200];
		snprintf(errpath, sizeof errpath, "%.*s.err", (int)(strlen(path) - 5), path);
		char *want = read_all(errpath, NULL);
		cr_expect(want != NULL, "%s has no .err file", path);
		if (!want)
			continue;
		want[strcspn(want, "\n")] = 0;
		Diag d;
		diag_init(&d, path);
		Carrier *c = spec_load_file(path, NULL, 0, &d);
		cr_expect(c == NULL, "%s loaded, but it is bad", path);
		cr_expect(d.nerrors > 0 && d.text, "%s: no diagnostic", path);
		diag_first(&d, first, sizeof first);
		cr_expect_str_eq(first, want, "%s:\n got: %s\nwant: %s", path, first, want);
		if (d.text)
			cr_expect(check_quote(d.text, why, sizeof why) == 0, "%s: %s:\n%s", path, why, d.text);
		spec_carrier_free(c);
		diag_free(&d);
		free(want);
	}
	globfree(&g);
	expect_no_leaks();
}

Test(bad, every_err_file_has_its_input)
{
	glob_t g;
	cr_assert_eq(glob("tests/bad/*.err", 0, NULL, &g), 0);
	for (size_t i = 0; i < g.gl_pathc; i++) {
		char yaml[512];
		snprintf(yaml, sizeof yaml, "%.*s.yaml", (int)(strlen(g.gl_pathv[i]) - 4), g.gl_pathv[i]);
		FILE *f = fopen(yaml, "rb");
		cr_expect(f != NULL, "%s has no input %s", g.gl_pathv[i], yaml);
		if (f)
			fclose(f);
	}
	globfree(&g);
	expect_no_leaks();
}

Test(bad, valid_specs_still_load)
{
	const char *pats[] = {"specs/*.yaml", "tests/format/*.yaml"};
	for (int p = 0; p < 2; p++) {
		glob_t g;
		cr_assert_eq(glob(pats[p], 0, NULL, &g), 0, "nothing matches %s", pats[p]);
		for (size_t i = 0; i < g.gl_pathc; i++)
			spec_carrier_free(load_ok(g.gl_pathv[i]));
		globfree(&g);
	}
	expect_no_leaks();
}

/* ---- inputs built at run time ---- */

/* Load len bytes of buf; the first diagnostic line, or "" when it loaded. */
static const char *load_buf(const char *buf, size_t len, char *first, size_t n)
{
	Diag d;
	diag_init(&d, "big.yaml");
	Carrier *c = spec_load_buffer("big.yaml", buf, len, NULL, 0, &d);
	diag_first(&d, first, n);
	if (c)
		first[0] = 0;
	spec_carrier_free(c);
	diag_free(&d);
	return first;
}

static const char *head = "carrier: c\nelement: {x: f32}\nstate: {s: f32}\nidentity: {s: 0}\n"
			  "merge:\n  s: a.s + b.s\nlift:\n  s: ";

/* head, then `open` n times, "x", then `close` n times. */
static char *nested(const char *open, const char *close, int n, size_t *len)
{
	size_t hl = strlen(head), ol = strlen(open), cl = strlen(close);
	char *buf = malloc(hl + n * (ol + cl) + 4);
	char *p = buf;
	memcpy(p, head, hl), p += hl;
	for (int i = 0; i < n; i++)
		memcpy(p, open, ol), p += ol;
	*p++ = 'x';
	for (int i = 0; i < n; i++)
		memcpy(p, close, cl), p += cl;
	*p++ = '\n';
	*len = (size_t)(p - buf);
	return buf;
}

Test(bad, over_one_mib)
{
	size_t len = (1 << 20) + 1;
	char *buf = malloc(len), first[512];
	memset(buf, '#', len);
	buf[len - 1] = '\n';
	cr_expect_str_eq(load_buf(buf, len, first, sizeof first),
			 "big.yaml: error: file is larger than 1 MiB (1048577 bytes); a spec is a short text");
	free(buf);
	expect_no_leaks();
}

Test(bad, one_mib_file_on_disk)
{
	char path[] = "/tmp/assoc_big_XXXXXX";
	int fd = mkstemp(path);
	cr_assert(fd >= 0);
	FILE *f = fdopen(fd, "wb");
	for (int i = 0; i < (1 << 20) / 16 + 1; i++)
		fputs("# a long spec.\n\n", f);
	fclose(f);
	Diag d;
	char first[512];
	diag_init(&d, path);
	cr_expect_null(spec_load_file(path, NULL, 0, &d));
	diag_first(&d, first, sizeof first);
	cr_expect(strstr(first, ": error: file is larger than 1 MiB") != NULL, "%s", first);
	diag_free(&d);
	remove(path);
	expect_no_leaks();
}

Test(bad, hundred_thousand_parentheses)
{
	size_t len;
	char *buf = nested("(", ")", 100000, &len), first[512];
	cr_expect_str_eq(load_buf(buf, len, first, sizeof first),
			 "big.yaml:8:206: error: expression nested deeper than 200 levels");
	free(buf);
	expect_no_leaks();
}

Test(bad, hundred_thousand_minus_signs)
{
	size_t len;
	char *buf = nested("-", "", 100000, &len), first[512];
	cr_expect_str_eq(load_buf(buf, len, first, sizeof first),
			 "big.yaml:8:206: error: expression nested deeper than 200 levels");
	free(buf);
	expect_no_leaks();
}

Test(bad, hundred_thousand_calls)
{
	size_t len;
	char *buf = nested("exp(", ")", 100000, &len), first[512];
	cr_expect_str_eq(load_buf(buf, len, first, sizeof first),
			 "big.yaml:8:806: error: expression nested deeper than 200 levels");
	free(buf);
	expect_no_leaks();
}

/* head, then x, then n times `op x`: a tree n + 1 levels deep. */
static char *chain(const char *op, int n, size_t *len)
{
	size_t hl = strlen(head), ol = strlen(op);
	char *buf = malloc(hl + n * (ol + 1) + 3);
	char *p = buf;
	memcpy(p, head, hl), p += hl;
	*p++ = 'x';
	for (int i = 0; i < n; i++)
		memcpy(p, op, ol), p += ol, *p++ = 'x';
	*p++ = '\n';
	*len = (size_t)(p - buf);
	return buf;
}

/* A flat chain nests no parenthesis, but builds a tree as deep as it is
 * long, which the passes walk recursively. */
Test(bad, two_hundred_thousand_terms, .timeout = 30)
{
	static const char *ops[] = {" + ", " * ", " - ", " / "};
	for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
		size_t len;
		char *buf = chain(ops[i], 200000, &len), first[512];
		cr_expect(strstr(load_buf(buf, len, first, sizeof first),
				 "big.yaml:8:6: error: expression nested deeper than 500 levels") == first,
			  "'%s': %s", ops[i], first);
		free(buf);
	}
	expect_no_leaks();
}

Test(bad, tree_depth_limit_is_exact)
{
	size_t len;
	char *buf = chain(" + ", 499, &len), first[512];
	cr_expect_str_eq(load_buf(buf, len, first, sizeof first), "", "500 levels load");
	free(buf);
	buf = chain(" + ", 500, &len);
	cr_expect(strstr(load_buf(buf, len, first, sizeof first),
			 "big.yaml:8:6: error: expression nested deeper than 500 levels") == first,
		  "%s", first);
	free(buf);
	expect_no_leaks();
}

Test(bad, hundred_thousand_yaml_lists)
{
	size_t len;
	char *buf = nested("[", "]", 100000, &len), first[512];
	cr_expect_str_eq(load_buf(buf, len, first, sizeof first), "big.yaml:8:20: error: nesting deeper than 16 levels");
	free(buf);
	expect_no_leaks();
}

Test(bad, hundred_thousand_yaml_mappings)
{
	size_t len;
	char *buf = nested("{a: ", "}", 100000, &len), first[512];
	cr_expect_str_eq(load_buf(buf, len, first, sizeof first), "big.yaml:8:62: error: nesting deeper than 16 levels");
	free(buf);
	expect_no_leaks();
}

Test(bad, unclosed_parentheses_to_the_end)
{
	size_t len;
	char *buf = nested("(", "", 150, &len), first[512];
	cr_expect_str_eq(load_buf(buf, len, first, sizeof first), "big.yaml:8:155: error: '(' is never closed");
	free(buf);
	expect_no_leaks();
}

/* The classic: nine anchors, each a list of nine aliases of the one before. */
Test(bad, billion_laughs)
{
	char buf[4096], first[512];
	int n = snprintf(buf, sizeof buf, "carrier: c\nsummary: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
	for (int i = 1; i < 10; i++)
		n += snprintf(buf + n, sizeof buf - n, "k%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i,
			      i, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1);
	cr_expect_str_eq(load_buf(buf, n, first, sizeof first),
			 "big.yaml:2:10: error: YAML anchors are not allowed in a spec");
	expect_no_leaks();
}

Test(bad, many_entries)
{
	size_t cap = 40000, n = 0;
	char *buf = malloc(cap), first[512];
	n += snprintf(buf + n, cap - n, "carrier: c\nstate:\n");
	for (int i = 0; i < 1025; i++)
		n += snprintf(buf + n, cap - n, "  f%d: f32\n", i);
	cr_expect_str_eq(load_buf(buf, n, first, sizeof first),
			 "big.yaml:1027:3: error: more than 1024 entries in one mapping");
	free(buf);
	expect_no_leaks();
}

/* The largest mappings allowed load, and in little time. */
Test(bad, many_fields_load, .timeout = 20)
{
	size_t cap = 1 << 20, n = 0;
	char *buf = malloc(cap), first[512];
	n += snprintf(buf + n, cap - n, "carrier: c\nelement: {x: f32}\n");
	const char *sec[] = {"state", "identity", "lift", "merge", "finalize"};
	const char *fmt[] = {"  f%d: f32\n", "  f%d: 0\n", "  f%d: x\n", "  f%d: a.f%d + b.f%d\n", "  o%d: f%d * 2\n"};
	for (int s = 0; s < 5; s++) {
		n += snprintf(buf + n, cap - n, "%s:\n", sec[s]);
		for (int i = 0; i < 1024; i++)
			n += snprintf(buf + n, cap - n, fmt[s], i, i, i);
	}
	cr_expect_str_eq(load_buf(buf, n, first, sizeof first), "");
	free(buf);
	expect_no_leaks();
}

Test(bad, binary_bytes)
{
	char first[512];
	static const struct { const char *text; size_t len; const char *want; } cases[] = {
		{"carrier: c\0\n", 12, "big.yaml:1:11: error: NUL byte in spec"},
		{"\0", 1, "big.yaml:1:1: error: NUL byte in spec"},
		{"carrier: \xff\n", 11, "big.yaml:1:10: error: invalid UTF-8 byte 0xff; a spec must be UTF-8 text"},
		{"carrier: \xe2\x82", 11, "big.yaml:1:10: error: invalid UTF-8 byte 0xe2; a spec must be UTF-8 text"},
		{"carrier: c\x1b[2J\n", 15, "big.yaml:1:11: error: control character U+001B in spec"},
		{"carrier: c\x7f\n", 12, "big.yaml:1:11: error: control character U+007F in spec"},
		{"\xfe\xff\0c", 4, "big.yaml:1:1: error: the file is UTF-16 (it starts with a UTF-16 byte order mark); "
				   "save it as UTF-8"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
		cr_expect_str_eq(load_buf(cases[i].text, cases[i].len, first, sizeof first), cases[i].want, "case %zu",
				 i);
	expect_no_leaks();
}

/* A UTF-8 byte order mark and \r\n line ends are fine, and positions stay right. */
Test(bad, bom_and_crlf_keep_positions)
{
	char first[512];
	const char *t = "\xef\xbb\xbf" "carrier: c\r\nelement: {x: f32}\r\nstate: {s: f32}\r\nidentity: {s: 0}\r\n"
			"lift: {s: x}\r\nmerge:\r\n  s: a.s + mod(b.s)\r\n";
	cr_expect_str_eq(load_buf(t, strlen(t), first, sizeof first), "big.yaml:7:12: error: unknown function 'mod'");
	expect_no_leaks();
}

/* YAML takes a tab between tokens, in a comment and inside a plain
 * scalar (the expression's own whitespace), not in the indentation, even
 * after spaces. */
Test(bad, tabs_outside_the_indentation)
{
	char first[512];
	const char *ok = "carrier: c\t# a comment\twith tabs\nelement: {x: f32}\t\nstate: {s: f32}\n"
			 "identity: {s: 0}\nlift: {s:\tx +\t1}\nmerge:\n  s:\ta.s + b.s\t# sum\n";
	cr_expect_str_eq(load_buf(ok, strlen(ok), first, sizeof first), "");
	const char *indent = "carrier: c\nelement: {x: f32}\nstate: {s: f32}\nidentity: {s: 0}\nlift: {s: x}\n"
			     "merge:\n  \ts: a.s + b.s\n";
	cr_expect_str_eq(load_buf(indent, strlen(indent), first, sizeof first),
			 "big.yaml:7:3: error: tab character in the indentation; indent with spaces");
	/* libyaml takes no tab after a block sequence's dash */
	const char *dash = "carrier: c\nelement: {x: f32}\nstate: {s: f32}\nidentity: {s: 0}\nlift: {s: x}\n"
			   "merge:\n  s: a.s + b.s\nlaws:\n  -\tcommutative\n";
	cr_expect_str_eq(load_buf(dash, strlen(dash), first, sizeof first),
			 "big.yaml:9:4: error: malformed YAML: a tab here does not separate tokens for YAML; write a space");
	expect_no_leaks();
}

/* ---- names never pass through unchecked ---- */

Test(bad, names_are_identifiers_everywhere)
{
	static const char *evil = "\"x; system(\\\"rm -rf /\\\")\"";
	static const char *tpl[] = {
		"carrier: %s\nelement: {x: f32}\nstate: {s: f32}\nidentity: {s: 0}\nlift: {s: x}\nmerge: {s: a.s + b.s}\n",
		"carrier: c\nelement: {%s: f32}\nstate: {s: f32}\nidentity: {s: 0}\nlift: {s: 1}\nmerge: {s: a.s + b.s}\n",
		"carrier: c\ncolumn: {%s: f32}\nstate: {s: f32}\nidentity: {s: 0}\nlift: {s: 1}\nmerge: {s: a.s + b.s}\n",
		"carrier: c\nrow: {%s: f32}\nelement: {x: f32}\nstate: {s: f32}\nidentity: {s: 0}\nlift: {s: x}\n"
		"merge: {s: a.s + b.s}\n",
		"carrier: c\nparams: {%s: f32}\nelement: {x: f32}\nstate: {s: f32}\nidentity: {s: 0}\nlift: {s: x}\n"
		"merge: {s: a.s + b.s}\n",
		"carrier: c\ndims: {%s: 4}\nelement: {x: f32}\nstate: {s: f32}\nidentity: {s: 0}\nlift: {s: x}\n"
		"merge: {s: a.s + b.s}\n",
		"carrier: c\nelement: {x: f32}\nstate: {%s: f32}\nidentity: {s: 0}\nlift: {s: x}\nmerge: {s: a.s + b.s}\n",
		"carrier: c\nelement: {x: f32}\nlet: {%s: x}\nstate: {s: f32}\nidentity: {s: 0}\nlift: {s: x}\n"
		"merge: {s: a.s + b.s}\n",
		"carrier: c\nelement: {x: f32}\nstate: {s: f32}\nidentity: {s: 0}\nlift: {s: x}\n"
		"merge: {let: {%s: a.s}, s: a.s + b.s}\n",
		"carrier: c\nelement: {x: f32}\nstate: {s: f32}\nidentity: {s: 0}\nlift: {s: x}\nmerge: {s: a.s + b.s}\n"
		"finalize: {%s: s}\n",
		"carrier: c\nelement: {x: f32}\nstate: {s: f32}\nidentity: {s: 0}\nlift: {s: x}\nmerge: {s: a.s + b.s}\n"
		"map: {%s: x / s}\n",
		"carrier: c\nelement: {x: f32}\nstate: {s: f32}\nidentity: {s: 0}\nlift: {s: x}\nmerge: {s: a.s + b.s}\n"
		"reference: {%s: sum(x)}\n",
		"carrier: c\nelement: {x: f32}\nstate: {s: f32}\nidentity: {s: 0}\nlift: {s: x}\nmerge: {s: a.s + b.s}\n"
		"certificate: {into: {%s: s}, monoid: {u: add}, back: {s: u}}\n",
	};
	for (size_t i = 0; i < sizeof tpl / sizeof *tpl; i++) {
		char text[1024], err[512];
		snprintf(text, sizeof text, tpl[i], evil);
		Carrier *c = load_text(text, err, sizeof err);
		cr_expect_null(c, "template %zu accepted the name", i);
		spec_carrier_free(c);
		cr_expect(strstr(err, "is not an identifier") != NULL, "template %zu: %s", i, err);
	}
	expect_no_leaks();
}

/* Control characters that escapes put into names never reach the terminal. */
Test(bad, diagnostics_carry_no_control_characters)
{
	const char *t = "carrier: c\nelement: {\"\\e]0;owned\\a\\u202ex\": f32}\nstate: {s: f32}\n"
			"identity: {s: 0}\nlift: {s: 1}\nmerge: {s: a.s + b.s}\n";
	Diag d;
	diag_init(&d, "t.yaml");
	cr_expect_null(spec_load_buffer("t.yaml", t, strlen(t), NULL, 0, &d));
	cr_assert(d.text);
	for (const unsigned char *p = (const unsigned char *)d.text; *p; p++)
		cr_expect(*p >= 0x20 || *p == '\n', "byte 0x%02x in:\n%s", *p, d.text);
	cr_expect(strstr(d.text, "\xe2\x80\xae") == NULL, "a bidi override reached the diagnostic");
	diag_free(&d);
	expect_no_leaks();
}

/* Wide characters (two terminal columns each) before the error keep the
 * caret under it. */
Test(bad, caret_after_wide_characters)
{
	const char *t = "{carrier: c, summary: \"\xe4\xb8\xad\xe6\x96\x87\", element: {x: f32}, state: {s: f32}, "
			"identity: {s: 0}, lift: {s: y}, merge: {s: a.s}}\n";
	Diag d;
	diag_init(&d, "t.yaml");
	cr_expect_null(spec_load_buffer("t.yaml", t, strlen(t), NULL, 0, &d));
	cr_assert(d.text);
	const char *quote = strstr(d.text, "    1 | "), *caret = quote ? strstr(quote, "\n      | ") : NULL;
	cr_assert(quote && caret, "%s", d.text);
	const char *y = strstr(quote, "{s: y}") + 4;
	long want = (y - quote) - 2 /* two 3-byte characters, two columns each */, got = strchr(caret, '^') - (caret + 1);
	cr_expect_eq(got, want, "caret at column %ld, 'y' at %ld:\n%s", got, want, d.text);
	diag_free(&d);
	expect_no_leaks();
}

/* ---- command-line dims and files ---- */

Test(bad, defines)
{
	const char *spec = "carrier: c\ndims: {d: 4}\ncolumn:\n  k: f32[d]\nstate:\n  s: f32[d]\n"
			   "identity: {s: 0}\nlift: {s: k}\nmerge: {s: a.s + b.s}\n";
	static const struct { Define def; const char *want; } cases[] = {
		{{"e", "8"}, "t.yaml: error: dim override 'e': the spec has no dim named 'e' (its dims: d)"},
		{{"d", "0"}, "t.yaml: error: dim override 'd' must be positive, found 0"},
		{{"d", "-3"}, "t.yaml: error: dim override 'd' must be a positive integer, found '-3'"},
		{{"d", "1e3"}, "t.yaml: error: dim override 'd' must be a positive integer, found '1e3'"},
		{{"d", "99999999999"}, "t.yaml: error: dim override 'd' 99999999999 is larger than 65536"},
		{{"d", ""}, "t.yaml: error: dim override 'd' must be a positive integer, found ''"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		Diag d;
		char first[512];
		diag_init(&d, "t.yaml");
		Carrier *c = spec_load_buffer("t.yaml", spec, strlen(spec), &cases[i].def, 1, &d);
		cr_expect_null(c);
		spec_carrier_free(c);
		cr_expect_str_eq(diag_first(&d, first, sizeof first), cases[i].want);
		diag_free(&d);
	}
	Define ok = {"d", "128"};
	Diag d;
	diag_init(&d, "t.yaml");
	Carrier *c = spec_load_buffer("t.yaml", spec, strlen(spec), &ok, 1, &d);
	cr_expect(c != NULL, "%s", d.text ? d.text : "");
	if (c)
		cr_expect_eq(spec_decl_width(&c->state[0]), 128);
	spec_carrier_free(c);
	diag_free(&d);
	expect_no_leaks();
}

Test(bad, unreadable_files)
{
	const char *paths[] = {"tests/bad/no_such_file.yaml", "tests/bad"};
	/* a missing file was looked for among the installed specs too, which
	 * the error names after this */
	const char *want[] = {"tests/bad/no_such_file.yaml: error: cannot open: No such file or directory; not in the "
			      "working directory nor in ",
			      "tests/bad: error: cannot read: Is a directory"};
	for (int i = 0; i < 2; i++) {
		Diag d;
		char first[1024];
		diag_init(&d, paths[i]);
		cr_expect_null(spec_load_file(paths[i], NULL, 0, &d));
		diag_first(&d, first, sizeof first);
		cr_expect(!strncmp(first, want[i], strlen(want[i])) && (i || strstr(first, "/share/assoc/specs")), "%s",
			  first);
		diag_free(&d);
	}
	expect_no_leaks();
}
