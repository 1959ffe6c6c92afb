/* cache.c: cache directories and atomic writes. */
#include "cache.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

uint64_t cache_hash(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;
	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

static int mkdir_p(char *path)
{
	for (char *s = path + 1; *s; s++)
		if (*s == '/') {
			*s = 0;
			int rc = mkdir(path, 0700);
			*s = '/';
			if (rc && errno != EEXIST)
				return -1;
		}
	return mkdir(path, 0700) && errno != EEXIST ? -1 : 0;
}

int cache_dir(const char *sub, char *path, size_t n, char *msg, size_t mn)
{
	const char *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	if (x && *x)
		snprintf(path, n, "%s/assoc/%s", x, sub);
	else if (home && *home)
		snprintf(path, n, "%s/.cache/assoc/%s", home, sub);
	else {
		snprintf(msg, mn, "no cache directory: neither XDG_CACHE_HOME nor HOME is set");
		return -1;
	}
	if (mkdir_p(path)) {
		snprintf(msg, mn, "cannot create the cache directory %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

int temp_name(char *tmp, size_t n, const char *path)
{
	if (snprintf(tmp, n, "%s.tmp.%ld", path, (long)getpid()) < (int)n)
		return 0;
	errno = ENAMETOOLONG;
	return -1;
}

int cache_write(const char *path, const void *data, size_t len)
{
	char tmp[TEMP_NAME_MAX];
	FILE *f = temp_name(tmp, sizeof tmp, path) ? NULL : fopen(tmp, "wb");
	if (!f)
		return -1;
	size_t w = fwrite(data, 1, len, f);
	if (fclose(f) || w != len || rename(tmp, path)) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

char *cache_read(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 1 << 16, n = 0;
	char *s = malloc(cap + 1);
	for (size_t r; s && (r = fread(s + n, 1, cap - n, f)) > 0;) {
		n += r;
		if (n == cap) {
			char *t = realloc(s, (cap *= 2) + 1);
			if (!t)
				free(s);
			s = t;
		}
	}
	fclose(f);
	if (!s)
		return NULL;
	s[n] = 0;
	if (len)
		*len = n;
	return s;
}
