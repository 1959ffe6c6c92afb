/* diag.c: file:line:col diagnostics with the quoted source line and a caret. */
#include "compiler/front/diag.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void diag_init(Diag *d, const char *file)
{
	memset(d, 0, sizeof *d);
	d->file = file;
}

void diag_free(Diag *d)
{
	free(d->text);
	d->text = NULL;
	d->len = 0;
}

static void append(Diag *d, const char *s, size_t n)
{
	char *t = realloc(d->text, d->len + n + 1);
	if (!t)
		abort();
	memcpy(t + d->len, s, n);
	d->len += n;
	t[d->len] = 0;
	d->text = t;
}

static void appendf(Diag *d, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	append(d, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

size_t diag_utf8_decode(const unsigned char *s, size_t n, unsigned *out)
{
	unsigned c = s[0];
	size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
	unsigned cp = len == 1 ? c : len == 2 ? c & 0x1f : len == 3 ? c & 0x0f : c & 0x07;
	if (!len || len > n)
		return 0;
	for (size_t k = 1; k < len; k++) {
		if ((s[k] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[k] & 0x3f);
	}
	static const unsigned minv[] = {0, 0, 0x80, 0x800, 0x10000};
	if (cp < minv[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	*out = cp;
	return len;
}

/* Whether a character may reach the terminal as it is: not a control
 * character, not invalid UTF-8, not a bidirectional override. */
static int printable(unsigned cp)
{
	return (cp >= 0x20 && cp < 0x7f) ||
	       (cp >= 0xa0 && !(cp >= 0x2028 && cp <= 0x202e) && !(cp >= 0x2066 && cp <= 0x2069) &&
		cp != 0x200e && cp != 0x200f && cp != 0x061c && cp != 0xfeff && cp < 0xfffe);
}

/* Append s[0..n) with every character that is not printable shown as
 * '?', so a diagnostic about a bad byte cannot itself carry the bad byte.
 * Returns the number of characters (columns) appended. */
static int append_safe(Diag *d, const char *s, size_t n)
{
	int cols = 0;
	for (size_t i = 0; i < n; cols++) {
		unsigned cp = 0;
		size_t len = diag_utf8_decode((const unsigned char *)s + i, n - i, &cp);
		if (len && printable(cp))
			append(d, s + i, len);
		else
			append(d, "?", 1);
		i += len ? len : 1;
	}
	return cols;
}

/* Terminal columns of a printable character: East Asian wide and
 * full-width characters take two, combining marks none. */
static int cp_width(unsigned cp)
{
	if ((cp >= 0x300 && cp <= 0x36f) || (cp >= 0x200b && cp <= 0x200d))
		return 0;
	return (cp >= 0x1100 && cp <= 0x115f) || (cp >= 0x2e80 && cp <= 0x303e) || (cp >= 0x3041 && cp <= 0xa4cf) ||
			       (cp >= 0xac00 && cp <= 0xd7a3) || (cp >= 0xf900 && cp <= 0xfaff) ||
			       (cp >= 0xfe30 && cp <= 0xfe4f) || (cp >= 0xff00 && cp <= 0xff60) ||
			       (cp >= 0xffe0 && cp <= 0xffe6) || (cp >= 0x1f300 && cp <= 0x1f64f) ||
			       (cp >= 0x1f900 && cp <= 0x1f9ff) || (cp >= 0x20000 && cp <= 0x3fffd)
		       ? 2
		       : 1;
}

/* Columns that the first `chars` characters of s[0..n) take once shown
 * by append_safe (a character shown as '?' takes one). */
static int shown_width(const char *s, size_t n, int chars)
{
	int w = 0;
	for (size_t i = 0; chars > 0 && i < n; chars--) {
		unsigned cp = 0;
		size_t len = diag_utf8_decode((const unsigned char *)s + i, n - i, &cp);
		w += len && printable(cp) ? cp_width(cp) : 1;
		i += len ? len : 1;
	}
	return w + (chars > 0 ? chars : 0);
}

/* Skip `cols` characters of s[0..n); the byte offset reached. */
static size_t skip_cols(const char *s, size_t n, int cols)
{
	size_t i = 0;
	for (; cols > 0 && i < n; cols--) {
		unsigned cp;
		size_t len = diag_utf8_decode((const unsigned char *)s + i, n - i, &cp);
		i += len ? len : 1;
	}
	return i;
}

/* The source line and a caret under pos.col; a long line is shown as a
 * window around the column. */
static void quote_line(Diag *d, Pos pos)
{
	enum { WIDTH = 120, BEFORE = 60 };
	if (!d->src || pos.line <= 0)
		return;
	const char *p = d->src, *end = d->src + d->srclen;
	for (int l = 1; l < pos.line && p < end; p++)
		if (*p == '\n')
			l++;
	if (p >= end && pos.line > 1)
		return;
	const char *e = p;
	while (e < end && *e != '\n' && *e != '\r')
		e++;
	int first = pos.col > WIDTH - 10 ? pos.col - BEFORE : 1; /* first column shown */
	size_t skip = skip_cols(p, (size_t)(e - p), first - 1);
	size_t show = skip_cols(p + skip, (size_t)(e - p) - skip, WIDTH);
	appendf(d, "%5d | %s", pos.line, first > 1 ? "..." : "");
	append_safe(d, p + skip, show);
	if (skip + show < (size_t)(e - p))
		append(d, "...", 3);
	append(d, "\n      | ", 9);
	for (int i = shown_width(p + skip, show, pos.col - first) + (first > 1 ? 3 : 0); i > 0; i--)
		append(d, " ", 1);
	append(d, "^\n", 2);
}

static void vreport(Diag *d, Pos pos, const char *kind, const char *fmt, va_list ap)
{
	char msg[768];
	vsnprintf(msg, sizeof msg, fmt, ap);
	if (pos.line > 0)
		appendf(d, "%s:%d:%d: %s: ", d->file, pos.line, pos.col, kind);
	else
		appendf(d, "%s: %s: ", d->file, kind);
	append_safe(d, msg, strlen(msg)); /* names from the spec are in it */
	append(d, "\n", 1);
	quote_line(d, pos);
}

void diag_error(Diag *d, Pos pos, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport(d, pos, "error", fmt, ap);
	va_end(ap);
	d->nerrors++;
}

void diag_note(Diag *d, Pos pos, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport(d, pos, "note", fmt, ap);
	va_end(ap);
}

const char *diag_first(const Diag *d, char *buf, size_t n)
{
	if (!d->text) {
		snprintf(buf, n, "%s", "");
		return buf;
	}
	size_t l = strcspn(d->text, "\n");
	if (l >= n)
		l = n - 1;
	memcpy(buf, d->text, l);
	buf[l] = 0;
	return buf;
}
