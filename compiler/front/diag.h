/* diag.h: diagnostics that point into the spec file.
 *
 * Passes report through a Diag and return a status; only compiler/cli/main.c
 * decides to exit.  A diagnostic reads
 *
 *   specs/x.yaml:7:12: error: unknown function 'mod'
 *       7 |   l: mod(x, 2)
 *         |      ^
 */
#ifndef ASSOC_DIAG_H
#define ASSOC_DIAG_H

#include <stddef.h>

typedef struct {
	int line, col; /* 1-based; 0 when unknown */
} Pos;

typedef struct {
	const char *file;
	const char *src; /* the file's bytes, for the quoted line */
	size_t srclen;
	char *text;      /* every diagnostic so far, malloc'd */
	size_t len;
	int nerrors;
} Diag;

void diag_init(Diag *d, const char *file);
void diag_free(Diag *d);
void diag_error(Diag *d, Pos pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void diag_note(Diag *d, Pos pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Decode one UTF-8 character at s[0..n) into *cp; its length in bytes, or 0
 * when invalid (overlong forms, surrogates, values past U+10FFFF). */
size_t diag_utf8_decode(const unsigned char *s, size_t n, unsigned *cp);
/* First line of the first diagnostic, without the newline (for tests). */
const char *diag_first(const Diag *d, char *buf, size_t n);

#endif
