/* buf.c: growing strings. */
#include "compiler/util/buf.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

static void reserve(Buf *b, size_t more)
{
	if (b->len + more + 1 <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < b->len + more + 1)
		cap *= 2;
	char *s = realloc(b->s, cap);
	if (!s)
		abort();
	b->s = s;
	b->cap = cap;
}

void buf_printf(Buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	reserve(b, (size_t)n);
	va_start(ap, fmt);
	vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void buf_puts(Buf *b, const char *s)
{
	size_t n = strlen(s);
	reserve(b, n);
	memcpy(b->s + b->len, s, n + 1);
	b->len += n;
}

char *buf_take(Buf *b)
{
	reserve(b, 0);
	char *s = b->s;
	s[b->len] = 0;
	*b = (Buf){0};
	return s;
}

void buf_free(Buf *b)
{
	free(b->s);
	*b = (Buf){0};
}

void buf_json_str(Buf *b, const char *s)
{
	buf_puts(b, "\"");
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			buf_printf(b, "\\%c", c);
		else if (c == '\n')
			buf_puts(b, "\\n");
		else if (c < 0x20)
			buf_printf(b, "\\u%04x", c);
		else
			buf_printf(b, "%c", c);
	}
	buf_puts(b, "\"");
}

void buf_json_num(Buf *b, double v)
{
	if (isnan(v) || isinf(v)) {
		buf_printf(b, "\"%s\"", isnan(v) ? "nan" : v < 0 ? "-inf" : "inf");
		return;
	}
	buf_num(b, v, 0);
}

void buf_num(Buf *b, double v, int digits)
{
	char t[40];
	if (digits > 0 && isfinite(v))
		snprintf(t, sizeof t, "%.*g", digits, v);
	else
		ir_fmt_num(v, t, sizeof t);
	buf_puts(b, t);
}
