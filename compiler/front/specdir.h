/* specdir.h: where a spec named by a relative path is found: the working
 * directory first, then the installed specs (make install puts specs/ in
 * PREFIX/share/assoc), so that `specs/sum.yaml` opens from any directory. */
#ifndef ASSOC_SPECDIR_H
#define ASSOC_SPECDIR_H

#include <stddef.h>

/* The path to open for path: path itself where it exists, is absolute or
 * is found nowhere else; otherwise the first of SHARE/path and
 * SHARE/specs/path that exists, for SHARE the installed share directory
 * (PREFIX/share/assoc, known at build time) and the share directory beside
 * the library or program holding this code (its directory/../share/assoc).
 * Where none exists, tried says where it looked (", nor in ..."). */
const char *specdir_find(const char *path, char *out, size_t n, char *tried, size_t tn);

#endif
