/* tune_cache.c: tuning choices on disk.
 *
 * One file per problem key, named by the key's hash:
 *
 *   ASSOCTUNE 1\n
 *   key <bytes>\n<key text>\n
 *   value <bytes>\n<value text>\n
 *   sum <16 hex digits>\n        (FNV-1a 64 of everything above)
 *
 * A truncated, corrupted, foreign (another key) or stale (another format
 * version) entry is a miss, never a crash, and so is anything there but
 * a regular file (a link is not followed, a pipe does not block).
 * Entries are written to a new temporary file in the same directory and
 * renamed into place, so concurrent writers never leave a partial file.
 * The directory must be the user's own (cache_private). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compiler/util/cache.h"
#include "tune.h"

enum { TC_VERSION = 1, TC_MAX_FILE = 1 << 16 };

static uint64_t fnv(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	return h;
}

/* mkdir -p with mode 0700 for what it creates. */
static int make_dirs(char *path)
{
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		int rc = mkdir(path, 0700);
		*p = '/';
		if (rc && errno != EEXIST)
			return -1;
	}
	return mkdir(path, 0700) && errno != EEXIST ? -1 : 0;
}

int tc_open(TuneCache *tc, const char *dir, char *err, size_t n)
{
	char msg[PATH_MAX + 200];
	if (!dir) {
		if (cache_dir("tune", tc->dir, sizeof tc->dir, msg, sizeof msg)) {
			snprintf(err, n, "tuning cache: %s", msg);
			return -1;
		}
		return 0;
	}
	snprintf(tc->dir, sizeof tc->dir, "%s", dir);
	if (make_dirs(tc->dir)) {
		snprintf(err, n, "cannot create the tuning cache %s: %s", tc->dir, strerror(errno));
		return -1;
	}
	if (cache_private(tc->dir, msg, sizeof msg)) {
		snprintf(err, n, "tuning cache: %s", msg);
		return -1;
	}
	return 0;
}

void tc_path(const TuneCache *tc, const char *key, char *path, size_t n)
{
	snprintf(path, n, "%s/%016llx.tune", tc->dir, (unsigned long long)fnv(key, strlen(key)));
}

/* Read "<word> <bytes>\n<bytes of text>\n" at *p; the text into out (NUL-terminated). */
static int field(const char **p, const char *end, const char *word, char *out, size_t n)
{
	size_t wl = strlen(word);
	if ((size_t)(end - *p) < wl + 2 || strncmp(*p, word, wl) || (*p)[wl] != ' ')
		return -1;
	char *e;
	unsigned long len = strtoul(*p + wl + 1, &e, 10);
	if (*e != '\n' || len >= n || (size_t)(end - (e + 1)) < len + 1 || e[1 + len] != '\n')
		return -1;
	memcpy(out, e + 1, len);
	out[len] = 0;
	*p = e + 2 + len;
	return 0;
}

static int parse_entry(const char *buf, size_t len, const char *key, char *value, size_t n, char *why,
		       size_t wn)
{
	const char *p = buf, *end = buf + len;
	char magic[32], k[4096];
	snprintf(magic, sizeof magic, "ASSOCTUNE %d\n", TC_VERSION);
	if (len < 10 || strncmp(buf, "ASSOCTUNE ", 10))
		return snprintf(why, wn, "not a tuning entry (wrong magic)"), 0;
	if (strncmp(buf, magic, strlen(magic)))
		return snprintf(why, wn, "stale entry (another format version)"), 0;
	p += strlen(magic);
	if (field(&p, end, "key", k, sizeof k) || field(&p, end, "value", value, n))
		return snprintf(why, wn, "truncated or corrupted entry"), 0;
	uint64_t sum = fnv(buf, (size_t)(p - buf));
	char want[32];
	snprintf(want, sizeof want, "sum %016llx\n", (unsigned long long)sum);
	if ((size_t)(end - p) != strlen(want) || strncmp(p, want, strlen(want)))
		return snprintf(why, wn, "bad checksum"), 0;
	if (strcmp(k, key))
		return snprintf(why, wn, "entry for another key"), 0;
	return 1;
}

int tc_get(const TuneCache *tc, const char *key, char *value, size_t n, char *why, size_t wn)
{
	char path[1200];
	tc_path(tc, key, path, sizeof path);
	int fd = cache_open_own(path);
	struct stat st;
	if (fd < 0)
		return snprintf(why, wn, errno == EINVAL   ? "not a regular file"
					 : errno == EACCES ? "another user's, or writable by others"
							   : "no entry"),
		       0;
	if (fstat(fd, &st) || st.st_size > TC_MAX_FILE) {
		close(fd);
		return snprintf(why, wn, "entry too large"), 0;
	}
	size_t len;
	char *buf = cache_read_fd(fd, &len);
	close(fd);
	if (!buf)
		return snprintf(why, wn, "cannot read the entry"), 0;
	int hit = len > TC_MAX_FILE ? (snprintf(why, wn, "entry too large"), 0)
				    : parse_entry(buf, len, key, value, n, why, wn);
	free(buf);
	return hit;
}

int tc_put(const TuneCache *tc, const char *key, const char *value, char *err, size_t n)
{
	char path[1200], tmp[TEMP_NAME_MAX];
	tc_path(tc, key, path, sizeof path);
	/* not cache_write: tuning choices are dear, and not pruned */
	int fd = cache_temp(path, tmp, sizeof tmp);
	if (fd < 0) {
		snprintf(err, n, "cannot write to the tuning cache %s: %s", tc->dir, strerror(errno));
		return -1;
	}
	size_t cap = strlen(key) + strlen(value) + 128;
	char *buf = malloc(cap);
	if (!buf)
		abort();
	int len = snprintf(buf, cap, "ASSOCTUNE %d\nkey %zu\n%s\nvalue %zu\n%s\n", TC_VERSION, strlen(key), key,
			   strlen(value), value);
	len += snprintf(buf + len, cap - len, "sum %016llx\n", (unsigned long long)fnv(buf, (size_t)len));
	int ok = write(fd, buf, (size_t)len) == len;
	ok &= close(fd) == 0;
	free(buf);
	if (!ok || rename(tmp, path)) {
		snprintf(err, n, "cannot write %s: %s", path, strerror(errno));
		unlink(tmp);
		return -1;
	}
	return 0;
}
