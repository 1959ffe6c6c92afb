/* cache.h: the on-disk cache of generated code (PTX, emulator objects). */
#ifndef ASSOC_CACHE_H
#define ASSOC_CACHE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* $XDG_CACHE_HOME/assoc/<sub> or ~/.cache/assoc/<sub>, created with mode
 * 0700; 0, or -1 with msg. */
int cache_dir(const char *sub, char *path, size_t n, char *msg, size_t mn);
/* Room for the temporary name of any path the system takes (OutFile). */
#define TEMP_NAME_MAX (PATH_MAX + 32)
/* An output file the user names (emit -o, run --output, explore -o),
 * which appears whole or not at all.  A regular file, or a new one, is
 * written beside its path and renamed over it once whole; a symbolic link
 * is followed, and its target replaced the same way; anything else (a
 * device such as /dev/null, a pipe) is written in place: renaming onto it
 * would replace the device itself.  The temporary file goes away if the
 * process is interrupted (SIGINT, SIGTERM, SIGHUP). */
typedef struct {
	FILE *f;
	char dest[PATH_MAX];     /* the file renamed onto: the path, or its link's target */
	char tmp[TEMP_NAME_MAX]; /* "" when written in place */
	int slot;                /* in the interrupt handler's list, or -1 */
} OutFile;
/* Open for writing ("w" or "wb"): 0, or -1 with errno. */
int outfile_open(OutFile *o, const char *path, const char *mode);
/* Close it; with keep, put it in place (rename), else remove the
 * temporary file.  0, or -1 with errno (the temporary file removed). */
int outfile_close(OutFile *o, int keep);
/* Whether path names an existing file that is not a regular one (a
 * device, a pipe), which an output is written into in place. */
int outfile_in_place(const char *path);
/* Write data to path through a temporary file renamed into place, then
 * prune its directory (cache_prune). */
int cache_write(const char *path, const void *data, size_t len);
/* The whole file, malloc'd and NUL-terminated, or NULL; its time of last
 * change set to now, which is the time of its last use to cache_prune. */
char *cache_read(const char *path, size_t *len);
/* A cache directory holds at most cache_limit() bytes: $ASSOC_CACHE_MB
 * megabytes (default CACHE_MB; 0 keeps nothing but the newest file). */
enum { CACHE_MB = 1024 };
long long cache_limit(void);
/* Past the limit, remove the files of dir least recently used (written,
 * or read by cache_read or marked by cache_used) until three quarters of
 * it is left; never keep, the file just written (a name in dir, or NULL).
 * Temporary files of writes in progress are left alone, unless untouched
 * for a day. */
void cache_prune(const char *dir, const char *keep);
/* Mark path as used now (for caches read without cache_read). */
void cache_used(const char *path);
uint64_t cache_hash(uint64_t h, const void *data, size_t len);
#define CACHE_HASH_INIT 0xcbf29ce484222325ull

#endif
