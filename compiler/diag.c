/* diag.c: file:line:col diagnostics with the quoted source line and a caret. */
#include "diag.h"

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

/* The source line, with anything unprintable shown as '?', so a
 * diagnostic about a bad byte cannot itself carry the bad byte. */
static void quote_line(Diag *d, Pos pos)
{
	if (!d->src || pos.line <= 0)
		return;
	const char *p = d->src, *end = d->src + d->srclen;
	for (int l = 1; l < pos.line && p < end; p++)
		if (*p == '\n')
			l++;
	if (p >= end && pos.line > 1)
		return;
	const char *e = p;
	while (e < end && *e != '\n' && e - p < 200)
		e++;
	appendf(d, "%5d | ", pos.line);
	for (const char *q = p; q < e; q++) {
		/* one column per character: continuation bytes of UTF-8 print nothing */
		unsigned char c = (unsigned char)*q;
		if ((c & 0xc0) == 0x80)
			continue;
		char s = (c >= 0x20 && c < 0x7f) ? (char)c : (c == '\t' ? ' ' : '?');
		append(d, &s, 1);
	}
	append(d, "\n      | ", 9);
	for (int i = 1; i < pos.col && i < 200; i++)
		append(d, " ", 1);
	append(d, "^\n", 2);
}

static void vreport(Diag *d, Pos pos, const char *kind, const char *fmt, va_list ap)
{
	char msg[768];
	vsnprintf(msg, sizeof msg, fmt, ap);
	if (pos.line > 0)
		appendf(d, "%s:%d:%d: %s: %s\n", d->file, pos.line, pos.col, kind, msg);
	else
		appendf(d, "%s: %s: %s\n", d->file, kind, msg);
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
