/* The caches' bound: least recently used files go first, the file just
 * written and other processes' writes in progress stay. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "compiler/util/cache.h"

static char dir[PATH_MAX];

static void fresh_dir(const char *name)
{
	snprintf(dir, sizeof dir, "build/%s.%ld", name, (long)getpid());
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
	cr_assert_eq(mkdir(dir, 0700), 0);
}

/* A file of n bytes at dir/name, last changed at t (seconds since 1970). */
static void put(const char *name, size_t n, time_t t)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	cr_assert(f, "%s", path);
	for (size_t i = 0; i < n; i++)
		fputc('x', f);
	fclose(f);
	struct timespec ts[2] = {{t, 0}, {t, 0}};
	cr_assert_eq(utimensat(AT_FDCWD, path, ts, 0), 0);
}

static int has(const char *name)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

Test(cache, prunes_the_least_recently_used_down_to_three_quarters)
{
	fresh_dir("cache_prune");
	setenv("ASSOC_CACHE_MB", "1", 1);
	cr_expect_eq(cache_limit(), 1 << 20);
	time_t now = time(NULL);
	/* five of 300 KB: 1.5 MB, over the 1 MB limit */
	const char *names[] = {"a.o", "b.o", "c.o", "d.o", "e.o"};
	for (int i = 0; i < 5; i++)
		put(names[i], 300 << 10, now - 1000 + i * 100);
	put(".x.o.123.1.tmp", 300 << 10, now - 10);        /* another process's write */
	put(".y.o.456.1.tmp", 100, now - 3 * 24 * 3600); /* a killed one's */
	/* a read makes the oldest the most recently used */
	char path[PATH_MAX + 64];
	snprintf(path, sizeof path, "%s/a.o", dir);
	size_t len = 0;
	free(cache_read(path, &len));
	cr_expect_eq(len, 300u << 10);
	/* a write of "f.o" prunes: 1.8 MB down to 0.75 MB at most, f.o kept */
	snprintf(path, sizeof path, "%s/f.o", dir);
	cr_assert_eq(cache_write(path, "new", 3), 0);
	cr_expect(has("f.o"), "the file just written stays");
	cr_expect(has("a.o"), "read just now: kept");
	cr_expect(has("e.o"), "the newest of the rest: kept");
	cr_expect(!has("b.o") && !has("c.o") && !has("d.o"), "the least recently used go first");
	cr_expect(has(".x.o.123.1.tmp"), "a write in progress stays");
	cr_expect(!has(".y.o.456.1.tmp"), "a temporary file a day old goes");
	/* under the limit nothing goes */
	snprintf(path, sizeof path, "%s/g.o", dir);
	cr_assert_eq(cache_write(path, "new", 3), 0);
	cr_expect(has("a.o") && has("e.o") && has("f.o") && has("g.o"));
	/* 0 keeps only the file just written */
	setenv("ASSOC_CACHE_MB", "0", 1);
	snprintf(path, sizeof path, "%s/h.o", dir);
	cr_assert_eq(cache_write(path, "new", 3), 0);
	cr_expect(has("h.o") && !has("a.o") && !has("e.o") && !has("f.o") && !has("g.o"));
	/* a value that is not a number of megabytes: the default */
	setenv("ASSOC_CACHE_MB", "lots", 1);
	cr_expect_eq(cache_limit(), (long long)CACHE_MB << 20);
	unsetenv("ASSOC_CACHE_MB");
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0);
}
