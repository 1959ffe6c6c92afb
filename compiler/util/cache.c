/* cache.c: cache directories and atomic writes. */
#include "compiler/util/cache.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <libgen.h>
#include <sys/stat.h>
#include <time.h>
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


/* The temporary files of open OutFiles, for the interrupt handler. */
enum { TEMPS_MAX = 64 };
static char temps[TEMPS_MAX][TEMP_NAME_MAX];
static volatile sig_atomic_t temp_live[TEMPS_MAX];

static void on_interrupt(int sig)
{
	for (int i = 0; i < TEMPS_MAX; i++)
		if (temp_live[i])
			unlink(temps[i]);
	signal(sig, SIG_DFL);
	raise(sig);
}

static int temp_register(const char *tmp)
{
	static int handled;
	if (!handled) {
		static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
		for (int i = 0; i < 3; i++) {
			struct sigaction sa = {.sa_handler = on_interrupt}, old;
			sigemptyset(&sa.sa_mask);
			/* a signal the caller chose to ignore stays ignored */
			if (!sigaction(sigs[i], NULL, &old) && old.sa_handler == SIG_DFL)
				sigaction(sigs[i], &sa, NULL);
		}
		handled = 1;
	}
	for (int i = 0; i < TEMPS_MAX; i++)
		if (!temp_live[i]) {
			memcpy(temps[i], tmp, strlen(tmp) + 1);
			temp_live[i] = 1;
			return i;
		}
	return -1;
}

/* The descriptor a path names itself (/dev/stdout, /dev/fd/N,
 * /proc/self/fd/N), or -1: opening such a path anew would truncate the
 * file the shell redirected it to (an append included), and resolving
 * it would rename a file over that one. */
static int fd_path(const char *path)
{
	static const char *const pre[] = {"/dev/fd/", "/proc/self/fd/"};
	if (!strcmp(path, "/dev/stdout"))
		return 1;
	if (!strcmp(path, "/dev/stderr"))
		return 2;
	for (int k = 0; k < 2; k++)
		if (!strncmp(path, pre[k], strlen(pre[k]))) {
			char *end;
			long fd = strtol(path + strlen(pre[k]), &end, 10);
			if (end != path + strlen(pre[k]) && !*end && fd >= 0 && fd < 1 << 20)
				return (int)fd;
		}
	return -1;
}

int outfile_in_place(const char *path)
{
	struct stat st;
	return fd_path(path) >= 0 || (!stat(path, &st) && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode));
}

int outfile_open(OutFile *o, const char *path, const char *mode)
{
	static int serial; /* two outputs whose names share their first 180 bytes */
	memset(o, 0, sizeof *o);
	o->slot = -1;
	struct stat st;
	int fd = fd_path(path);
	if (fd >= 0) {
		int d = dup(fd);
		o->f = d >= 0 ? fdopen(d, mode) : NULL;
		if (!o->f && d >= 0)
			close(d);
		return o->f ? 0 : -1;
	}
	if (outfile_in_place(path)) {
		o->f = fopen(path, mode);
		return o->f ? 0 : -1;
	}
	char dest[PATH_MAX * 2 + 2];
	snprintf(dest, sizeof dest, "%s", path);
	if (!lstat(path, &st) && S_ISLNK(st.st_mode) && !realpath(path, dest)) {
		/* a dangling link: its target is made by the rename, once whole */
		char link[PATH_MAX], dir[PATH_MAX];
		ssize_t n = readlink(path, link, sizeof link - 1);
		if (n <= 0)
			return -1;
		link[n] = 0;
		snprintf(dir, sizeof dir, "%s", path);
		if (link[0] == '/')
			snprintf(dest, sizeof dest, "%s", link);
		else
			snprintf(dest, sizeof dest, "%s/%s", dirname(dir), link);
	}
	if (strlen(dest) >= sizeof o->dest) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memmove(o->dest, dest, strlen(dest) + 1);
	/* beside the file, hidden, its name short enough for any file's */
	char dir[PATH_MAX], base[PATH_MAX];
	snprintf(dir, sizeof dir, "%s", o->dest);
	snprintf(base, sizeof base, "%s", o->dest);
	if (snprintf(o->tmp, sizeof o->tmp, "%s/.%.180s.%ld.%d.tmp", dirname(dir), basename(base), (long)getpid(),
		     serial++) >= (int)sizeof o->tmp) {
		errno = ENAMETOOLONG;
		return -1;
	}
	o->slot = temp_register(o->tmp);
	o->f = fopen(o->tmp, mode);
	if (!o->f) {
		int e = errno;
		if (o->slot >= 0)
			temp_live[o->slot] = 0;
		errno = e;
		return -1;
	}
	/* the file it replaces keeps its permissions (a private one stays private) */
	if (!stat(o->dest, &st))
		fchmod(fileno(o->f), st.st_mode & 07777);
	return 0;
}

int outfile_close(OutFile *o, int keep)
{
	int rc = o->f && fclose(o->f) ? -1 : 0, e = errno;
	o->f = NULL;
	if (!o->tmp[0])
		return rc;
	if (!rc && keep && rename(o->tmp, o->dest))
		rc = -1, e = errno;
	if (rc || !keep)
		unlink(o->tmp);
	if (o->slot >= 0)
		temp_live[o->slot] = 0;
	o->tmp[0] = 0;
	errno = e;
	return rc;
}

/* ---- the size of a cache directory ---- */

long long cache_limit(void)
{
	const char *e = getenv("ASSOC_CACHE_MB");
	char *end;
	long long mb = e && *e ? strtoll(e, &end, 10) : CACHE_MB;
	if (!e || !*e || *end || mb < 0)
		mb = CACHE_MB;
	return mb << 20;
}

typedef struct {
	char name[256];
	long long bytes;
	struct timespec used;
} Entry;

static int older(const void *a, const void *b)
{
	const Entry *x = a, *y = b;
	if (x->used.tv_sec != y->used.tv_sec)
		return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
	return (x->used.tv_nsec > y->used.tv_nsec) - (x->used.tv_nsec < y->used.tv_nsec);
}

/* A temporary file is another process's write in progress, unless a day
 * has passed since it last changed (a process that was killed). */
static int is_temp(const char *name) { return name[0] == '.'; }
enum { TEMP_STALE_S = 24 * 3600 };

void cache_prune(const char *dir, const char *keep)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	int fd = dirfd(d), n = 0, cap = 0;
	long long total = 0, limit = cache_limit();
	Entry *e = NULL;
	time_t now = time(NULL);
	for (struct dirent *de; (de = readdir(d));) {
		struct stat st;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") || strlen(de->d_name) >= sizeof e->name ||
		    fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		if (is_temp(de->d_name)) {
			if (now - st.st_mtime > TEMP_STALE_S)
				unlinkat(fd, de->d_name, 0);
			continue;
		}
		if (keep && !strcmp(de->d_name, keep))
			continue; /* counted below, never removed */
		if (n == cap) {
			Entry *t = realloc(e, (cap = cap ? 2 * cap : 64) * sizeof *e);
			if (!t)
				break;
			e = t;
		}
		snprintf(e[n].name, sizeof e[n].name, "%s", de->d_name);
		e[n].bytes = (long long)st.st_size;
		e[n].used = st.st_mtim;
		total += e[n++].bytes;
	}
	struct stat ks;
	if (keep && !fstatat(fd, keep, &ks, 0))
		total += (long long)ks.st_size;
	if (total > limit) {
		/* down to three quarters, so that the next writes do not each scan again */
		qsort(e, n, sizeof *e, older);
		for (int i = 0; i < n && total > limit / 4 * 3; i++)
			if (!unlinkat(fd, e[i].name, 0))
				total -= e[i].bytes;
	}
	free(e);
	closedir(d);
}

void cache_used(const char *path) { utimensat(AT_FDCWD, path, NULL, 0); }

int cache_write(const char *path, const void *data, size_t len)
{
	OutFile of;
	if (outfile_open(&of, path, "wb"))
		return -1;
	int whole = fwrite(data, 1, len, of.f) == len;
	if (outfile_close(&of, whole) || !whole)
		return -1;
	char dir[PATH_MAX], name[PATH_MAX];
	snprintf(dir, sizeof dir, "%s", path);
	snprintf(name, sizeof name, "%s", path);
	cache_prune(dirname(dir), basename(name));
	return 0;
}

char *cache_read(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	futimens(fileno(f), NULL); /* used now: cache_prune removes the least recently used first */
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
