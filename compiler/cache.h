/* cache.h: the on-disk cache of generated code (PTX, emulator objects). */
#ifndef ASSOC_CACHE_H
#define ASSOC_CACHE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

/* $XDG_CACHE_HOME/assoc/<sub> or ~/.cache/assoc/<sub>, created with mode
 * 0700; 0, or -1 with msg. */
int cache_dir(const char *sub, char *path, size_t n, char *msg, size_t mn);
/* The name of a temporary file beside path, for this process, to be renamed
 * onto path once whole: 0, or -1 with errno ENAMETOOLONG where it would not
 * fit in n bytes (a cut name could be another file). */
int temp_name(char *tmp, size_t n, const char *path);
/* Room for the temporary name of any path the system takes. */
#define TEMP_NAME_MAX (PATH_MAX + 32)
/* Write data to path through a temporary file renamed into place. */
int cache_write(const char *path, const void *data, size_t len);
/* The whole file, malloc'd and NUL-terminated, or NULL. */
char *cache_read(const char *path, size_t *len);
uint64_t cache_hash(uint64_t h, const void *data, size_t len);
#define CACHE_HASH_INIT 0xcbf29ce484222325ull

#endif
