/* buf.h: a growing string, for reports and JSON. */
#ifndef ASSOC_BUF_H
#define ASSOC_BUF_H

#include <stddef.h>

typedef struct {
	char *s;
	size_t len, cap;
} Buf;

void buf_printf(Buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_puts(Buf *b, const char *s);
/* The text, handed over to the caller (never NULL); b is empty after. */
char *buf_take(Buf *b);
void buf_free(Buf *b);
/* JSON: a quoted, escaped string; a number (inf and nan as strings). */
void buf_json_str(Buf *b, const char *s);
void buf_json_num(Buf *b, double v);
/* A number for people: shortest form that reads back (or %.*g with digits > 0). */
void buf_num(Buf *b, double v, int digits);

#endif
