/* The caches' bound: least recently used files go first, the file just
 * written and other processes' writes in progress stay, dead processes'
 * temporary files go.  Cache files are neither written nor read through
 * a link, a pipe never blocks a read, a directory open to others is not
 * used, and a sealed file damaged or another key's is not read. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "compiler/devices/emu.h"
#include "compiler/util/cache.h"
#include "runtime/tune.h"

static char dir[PATH_MAX];

static void fresh_dir(const char *name)
{
	char here[PATH_MAX];
	cr_assert(getcwd(here, sizeof here)); /* absolute: a relative XDG_CACHE_HOME is no cache folder */
	snprintf(dir, sizeof dir, "%.3900s/build/%.64s.%ld", here, name, (long)getpid());
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

/* The pid of a process that has exited. */
static pid_t dead_pid(void)
{
	pid_t p = fork();
	cr_assert_geq(p, 0);
	if (!p)
		_exit(0);
	waitpid(p, NULL, 0);
	return p;
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
	char live[64], dead[64];
	snprintf(live, sizeof live, ".x.o.%ld.1.tmp", (long)getpid());
	snprintf(dead, sizeof dead, ".z.o.%ld.1.tmp", (long)dead_pid());
	put(live, 300 << 10, now - 10);                  /* another process's write */
	put(".y.o.456.1.tmp", 100, now - 3 * 24 * 3600); /* a killed one's */
	put(dead, 100, now - 10);                        /* one killed just now */
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
	cr_expect(has(live), "a write in progress stays");
	cr_expect(!has(".y.o.456.1.tmp"), "a temporary file a day old goes");
	cr_expect(!has(dead), "a dead process's temporary file goes");
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
	cr_expect(!cache_limit_valid());
	setenv("ASSOC_CACHE_MB", "-5", 1);
	cr_expect_eq(cache_limit(), (long long)CACHE_MB << 20);
	cr_expect(!cache_limit_valid());
	unsetenv("ASSOC_CACHE_MB");
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0);
}

static void slurp(const char *path, char *out, size_t n)
{
	FILE *f = fopen(path, "rb");
	cr_assert(f, "%s", path);
	size_t r = fread(out, 1, n - 1, f);
	out[r] = 0;
	fclose(f);
}

/* A link planted at a cache file's name: the write replaces the link
 * (its target keeps its bytes), and a read does not go through it. */
Test(cache, links_are_neither_written_nor_read_through)
{
	fresh_dir("cache_link");
	char target[PATH_MAX + 64], path[PATH_MAX + 64], got[64];
	snprintf(target, sizeof target, "%s/victim", dir);
	put("victim", 0, time(NULL));
	FILE *f = fopen(target, "w");
	fputs("precious", f);
	fclose(f);
	snprintf(path, sizeof path, "%s/k.o", dir);
	cr_assert_eq(symlink("victim", path), 0);
	cr_expect_null(cache_read(path, NULL), "not read through a link");
	cr_assert_eq(cache_write(path, "object", 6), 0);
	slurp(target, got, sizeof got);
	cr_expect_str_eq(got, "precious", "the link's target is unchanged");
	struct stat st;
	cr_assert_eq(lstat(path, &st), 0);
	cr_expect(S_ISREG(st.st_mode), "the link is replaced by the file");
	slurp(path, got, sizeof got);
	cr_expect_str_eq(got, "object");
	/* a temporary name planted as a link is not written through either */
	char tmp[TEMP_NAME_MAX];
	int fd = cache_temp(path, tmp, sizeof tmp);
	cr_assert_geq(fd, 0);
	close(fd);
	unlink(tmp);
	cr_assert_eq(symlink("victim", tmp), 0);
	char path2[PATH_MAX + 64];
	snprintf(path2, sizeof path2, "%s/k2.o", dir);
	cr_expect_eq(cache_write(path2, "x", 1), 0, "another temporary name is taken");
	slurp(target, got, sizeof got);
	cr_expect_str_eq(got, "precious");
}

/* A pipe at a cache file's name is no file: the read returns at once. */
Test(cache, a_pipe_does_not_block_a_read, .timeout = 20)
{
	fresh_dir("cache_fifo");
	char path[PATH_MAX + 64];
	snprintf(path, sizeof path, "%s/k.ptx", dir);
	cr_assert_eq(mkfifo(path, 0600), 0);
	cr_expect_null(cache_read(path, NULL));
	cr_expect_null(cache_read_sealed(path, 1, NULL));
	cr_assert_eq(cache_write_sealed(path, 1, "ptx", 3), 0, "written over");
	size_t len = 0;
	char *s = cache_read_sealed(path, 1, &len);
	cr_expect(s && len == 3 && !strcmp(s, "ptx"));
	free(s);
}

/* A seal holds the key and the bytes: another key's file, one cut short
 * and one with a byte changed are not read. */
Test(cache, sealed_files_are_checked)
{
	fresh_dir("cache_seal");
	char path[PATH_MAX + 64];
	snprintf(path, sizeof path, "%s/k.o", dir);
	cr_assert_eq(cache_write_sealed(path, 42, "some object code", 16), 0);
	size_t len;
	char *s = cache_read_sealed(path, 42, &len);
	cr_assert(s && len == 16 && !memcmp(s, "some object code", 16));
	free(s);
	cr_expect_null(cache_read_sealed(path, 43, NULL), "another key's");
	cr_assert_eq(truncate(path, 30), 0);
	cr_expect_null(cache_read_sealed(path, 42, NULL), "cut short");
	cr_assert_eq(cache_write_sealed(path, 42, "some object code", 16), 0);
	FILE *f = fopen(path, "r+b");
	fseek(f, 3, SEEK_SET);
	fputc('X', f);
	fclose(f);
	cr_expect_null(cache_read_sealed(path, 42, NULL), "a byte changed");
}

/* A relative XDG_CACHE_HOME is no cache folder (the XDG rules): the
 * cache goes under $HOME/.cache, not under the folder a command runs
 * from; with HOME relative too there is none, said why. */
Test(cache, a_relative_xdg_cache_home_is_ignored)
{
	fresh_dir("cache_rel");
	char home[PATH_MAX + 16], path[PATH_MAX + 64], msg[PATH_MAX + 300], want[PATH_MAX + 64];
	snprintf(home, sizeof home, "%s/home", dir);
	cr_assert_eq(mkdir(home, 0700), 0);
	const char *old = getenv("HOME");
	char *saved = old ? strdup(old) : NULL;
	setenv("HOME", home, 1);
	setenv("XDG_CACHE_HOME", "build/relative_cache", 1);
	int rc = cache_dir("ptx", path, sizeof path, msg, sizeof msg);
	snprintf(want, sizeof want, "%s/.cache/assoc/ptx", home);
	cr_expect_eq(rc, 0, "%s", msg);
	cr_expect_str_eq(path, want);
	cr_expect_neq(access("build/relative_cache", F_OK), 0, "nothing made under the working folder");
	setenv("HOME", "relative_home", 1);
	cr_expect_eq(cache_dir("ptx", path, sizeof path, msg, sizeof msg), -1);
	cr_expect_str_eq(msg, "no cache directory: neither XDG_CACHE_HOME nor HOME is an absolute path");
	cr_expect_neq(access("relative_home", F_OK), 0);
	if (saved)
		setenv("HOME", saved, 1);
	else
		unsetenv("HOME");
	free(saved);
	unsetenv("XDG_CACHE_HOME");
}

/* A cache directory another user can write into, or another user's, or
 * a link, is refused with the reason. */
Test(cache, directories_open_to_others_are_refused)
{
	fresh_dir("cache_perm");
	char root[PATH_MAX + 16], path[PATH_MAX + 64], msg[PATH_MAX + 300];
	snprintf(root, sizeof root, "%s/xdg", dir);
	setenv("XDG_CACHE_HOME", root, 1);
	cr_assert_eq(cache_dir("ptx", path, sizeof path, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(chmod(path, 0777), 0);
	cr_expect_eq(cache_dir("ptx", path, sizeof path, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "open to other users (mode 0777)"), "%s", msg);
	cr_assert_eq(chmod(path, 0700), 0);
	char top[PATH_MAX + 32];
	snprintf(top, sizeof top, "%s/assoc", root);
	cr_assert_eq(chmod(top, 0755), 0);
	cr_expect_eq(cache_dir("ptx", path, sizeof path, msg, sizeof msg), -1, "the level above too");
	cr_expect(strstr(msg, "mode 0755"), "%s", msg);
	cr_assert_eq(chmod(top, 0700), 0);
	cr_expect_eq(cache_dir("ptx", path, sizeof path, msg, sizeof msg), 0, "%s", msg);
	char other[PATH_MAX + 64];
	snprintf(other, sizeof other, "%s/elsewhere", dir);
	cr_assert_eq(mkdir(other, 0700), 0);
	snprintf(path, sizeof path, "%s/emu", top);
	cr_assert_eq(symlink(other, path), 0);
	cr_expect_eq(cache_dir("emu", path, sizeof path, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "symbolic link"), "%s", msg);
	/* the folder holding assoc/: open to others, another user could move
	 * assoc/ away and put theirs there; sticky (as /tmp), only its owner */
	cr_assert_eq(chmod(root, 0777), 0);
	cr_expect_eq(cache_dir("ptx", path, sizeof path, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "can be written by other users") && strstr(msg, "mode 0777"), "%s", msg);
	cr_assert_eq(chmod(root, 01777), 0);
	cr_expect_eq(cache_dir("ptx", path, sizeof path, msg, sizeof msg), 0, "sticky: %s", msg);
	cr_assert_eq(chmod(root, 0700), 0);
	/* a folder further up, open to others: named as the one the cache is inside */
	cr_assert_eq(chmod(dir, 0777), 0);
	cr_expect_eq(cache_dir("ptx", path, sizeof path, msg, sizeof msg), -1);
	cr_expect(strstr(msg, " is inside ") && strstr(msg, ", which other users can write to") && strstr(msg, "mode 0777"),
		  "%s", msg);
	cr_assert_eq(chmod(dir, 0700), 0);
	/* assoc/ itself a link: refused before anything is made through it */
	char root2[PATH_MAX + 16], top2[PATH_MAX + 32], made[PATH_MAX + 96];
	snprintf(root2, sizeof root2, "%s/xdg2", dir);
	cr_assert_eq(mkdir(root2, 0700), 0);
	snprintf(top2, sizeof top2, "%s/assoc", root2);
	char away[PATH_MAX + 64];
	snprintf(away, sizeof away, "%s/away", dir);
	cr_assert_eq(mkdir(away, 0700), 0);
	char target[PATH_MAX + 64];
	snprintf(target, sizeof target, "%s", away);
	cr_assert(realpath(away, target));
	cr_assert_eq(symlink(target, top2), 0);
	setenv("XDG_CACHE_HOME", root2, 1);
	cr_expect_eq(cache_dir("emu", path, sizeof path, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "symbolic link"), "%s", msg);
	snprintf(made, sizeof made, "%s/emu", away);
	cr_expect_neq(access(made, F_OK), 0, "nothing made in the link's target");
	setenv("XDG_CACHE_HOME", root, 1);
	if (geteuid() == 0) {
		snprintf(path, sizeof path, "%s/ptx", top);
		cr_assert_eq(chown(path, 65534, 65534), 0);
		cr_expect_eq(cache_dir("ptx", path, sizeof path, msg, sizeof msg), -1);
		cr_expect(strstr(msg, "belongs to uid 65534"), "%s", msg);
	}
	unsetenv("XDG_CACHE_HOME");
	if (geteuid() != 0)
		cr_skip_test("another user's directory needs root to make");
}

/* A cache entry past CACHE_ENTRY_MAX is not read (a sparse file of
 * 300 MiB costs no disk); a limit too large for bytes is no limit, not
 * a wrapped one that empties the cache. */
Test(cache, huge_entries_and_limits)
{
	fresh_dir("cache_huge");
	char path[PATH_MAX + 64];
	snprintf(path, sizeof path, "%s/big.o", dir);
	int fd = open(path, O_WRONLY | O_CREAT, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, (off_t)300 << 20), 0);
	close(fd);
	size_t len = 1;
	cr_expect_null(cache_read(path, &len));
	setenv("ASSOC_CACHE_MB", "17592186044416", 1);
	cr_expect_gt(cache_limit(), (long long)1 << 50, "%lld", cache_limit());
	setenv("ASSOC_CACHE_MB", "99999999999999999999", 1);
	cr_expect_gt(cache_limit(), 0, "%lld", cache_limit());
	unsetenv("ASSOC_CACHE_MB");
}

/* An output's temporary file left by a process killed while writing it
 * goes with the next write of that output; another output's, and a live
 * process's, stay. */
Test(cache, a_killed_writers_temporary_goes_with_the_next_write)
{
	fresh_dir("cache_out");
	char stale[64], live[64], other[64];
	pid_t dead = dead_pid();
	snprintf(stale, sizeof stale, ".out.npy.%ld.0.tmp", (long)dead);
	snprintf(live, sizeof live, ".out.npy.%ld.7.tmp", (long)getppid());
	snprintf(other, sizeof other, ".other.npy.%ld.0.tmp", (long)dead);
	put(stale, 1000, time(NULL));
	put(live, 10, time(NULL));
	put(other, 10, time(NULL));
	char path[PATH_MAX + 64];
	snprintf(path, sizeof path, "%s/out.npy", dir);
	OutFile o;
	cr_assert_eq(outfile_open(&o, path, "wb"), 0);
	fputs("x", o.f);
	cr_assert_eq(outfile_close(&o, 1), 0);
	cr_expect(!has(stale), "the dead writer's temporary file is removed");
	cr_expect(has(live) && has(other));
	cr_expect(has("out.npy"));
	/* in a cache directory, any dead process's temporary file goes */
	snprintf(path, sizeof path, "%s/k.ptx", dir);
	cr_assert_eq(cache_write(path, "p", 1), 0);
	cr_expect(!has(other) && has(live));
}

/* Another user's (uid 65534) dead writer's temporary file in a shared
 * folder is theirs: this user's run (root's too) leaves it. */
Test(cache, another_users_temporary_is_left_to_them)
{
	if (geteuid())
		cr_skip_test("only root can make a file of another user's");
	fresh_dir("cache_theirs");
	cr_assert_eq(chmod(dir, 01777), 0);
	char theirs[64], mine[64], path[PATH_MAX + 64];
	pid_t dead = dead_pid();
	snprintf(theirs, sizeof theirs, ".out.npy.%ld.0.tmp", (long)dead);
	snprintf(mine, sizeof mine, ".out.npy.%ld.1.tmp", (long)dead);
	put(theirs, 10, time(NULL));
	put(mine, 10, time(NULL));
	snprintf(path, sizeof path, "%s/%s", dir, theirs);
	cr_assert_eq(lchown(path, 65534, 65534), 0);
	OutFile o;
	snprintf(path, sizeof path, "%s/out.npy", dir);
	cr_assert_eq(outfile_open(&o, path, "wb"), 0);
	cr_assert_eq(outfile_close(&o, 1), 0);
	cr_expect(has(theirs), "another user's temporary file stays");
	cr_expect(!has(mine), "this user's dead writer's goes");
}

/* A link at an output's path in a sticky folder open to all (/tmp) is
 * followed as the kernel's fs.protected_symlinks follows one: where it
 * is this user's or the folder owner's; another user's is refused, at
 * the path or anywhere along a chain of links, and nothing is written. */
Test(cache, another_users_link_in_a_shared_folder_is_not_followed)
{
	if (geteuid())
		cr_skip_test("only root can make a link of another user's");
	fresh_dir("cache_links");
	char shared[PATH_MAX + 64], path[PATH_MAX + 128], target[PATH_MAX + 128];
	snprintf(shared, sizeof shared, "%s/tmp", dir);
	cr_assert_eq(mkdir(shared, 01777), 0);
	cr_assert_eq(chmod(shared, 01777), 0);
	snprintf(target, sizeof target, "%s/victim", dir);
	FILE *f = fopen(target, "w");
	cr_assert(f);
	fputs("kept", f);
	fclose(f);
	static const char *const names[] = {"theirs", "dangling", "mine_to_theirs"};
	snprintf(path, sizeof path, "%s/theirs", shared);
	cr_assert_eq(symlink(target, path), 0);
	cr_assert_eq(lchown(path, 65534, 65534), 0);
	snprintf(path, sizeof path, "%s/dangling", shared);
	snprintf(target, sizeof target, "%s/made", dir);
	cr_assert_eq(symlink(target, path), 0);
	cr_assert_eq(lchown(path, 65534, 65534), 0);
	snprintf(path, sizeof path, "%s/mine_to_theirs", shared);
	cr_assert_eq(symlink("theirs", path), 0);
	for (int k = 0; k < 3; k++) {
		OutFile o;
		snprintf(path, sizeof path, "%s/%s", shared, names[k]);
		cr_expect_eq(outfile_open(&o, path, "wb"), -1, "%s", names[k]);
		cr_expect_eq(errno, EACCES);
		cr_expect(strstr(o.why, k < 2 ? "it is a symbolic link of another user's in a shared folder"
					      : "theirs, a symbolic link of another user's in a shared folder"),
			  "%s: %s", names[k], o.why);
		char why[PATH_MAX + 96];
		cr_expect_eq(outfile_check(path, why, sizeof why), -1);
		cr_expect(strstr(why, "of another user's in a shared folder"), "%s", why);
	}
	cr_expect(has("victim") && !has("made"), "no file written through their links");
	f = fopen(target, "r");
	cr_expect_null(f, "the dangling link's target is not made");
	if (f)
		fclose(f);
	/* this user's link, and the folder owner's, are followed */
	snprintf(target, sizeof target, "%s/victim", dir);
	snprintf(path, sizeof path, "%s/mine", shared);
	cr_assert_eq(symlink(target, path), 0);
	OutFile o;
	cr_expect_eq(outfile_open(&o, path, "wb"), 0, "%s", o.why);
	if (o.f)
		cr_expect_eq(outfile_close(&o, 0), 0);
	cr_assert_eq(lchown(shared, 65534, 65534), 0);
	snprintf(path, sizeof path, "%s/theirs", shared);
	cr_expect_eq(outfile_open(&o, path, "wb"), 0, "the folder owner's link: %s", o.why);
	if (o.f) {
		fputs("new", o.f);
		cr_expect_eq(outfile_close(&o, 1), 0);
	}
	f = fopen(target, "r");
	char got[8] = "";
	cr_assert(f);
	cr_expect(fgets(got, sizeof got, f) && !strcmp(got, "new"), "%s", got);
	fclose(f);
}

/* An output that is a pipe no process reads is refused after a while, not
 * waited on forever; a file the user names to be read that is a pipe is
 * refused at once (standard input by its name is read). */
Test(cache, pipes_as_outputs_and_inputs_do_not_hold_the_command, .timeout = 30)
{
	fresh_dir("cache_pipes");
	char path[PATH_MAX + 64], why[256];
	snprintf(path, sizeof path, "%s/p", dir);
	cr_assert_eq(mkfifo(path, 0600), 0);
	OutFile o;
	time_t t0 = time(NULL);
	cr_expect_eq(outfile_open(&o, path, "wb"), -1);
	cr_expect(strstr(o.why, "a pipe that no process opened for reading in 5 s"), "%s", o.why);
	cr_expect(time(NULL) - t0 < 15);
	cr_expect_null(infile_open(path, why, sizeof why));
	cr_expect(strstr(why, "not a regular file (a named pipe"), "%s", why);
	FILE *f = infile_open("/dev/stdin", why, sizeof why);
	cr_expect_not_null(f, "standard input by its name");
	if (f)
		fclose(f);
	cr_expect_null(infile_open("/dev/zero", why, sizeof why));
	cr_expect(strstr(why, "not a regular file (a device)"), "%s", why);
}

/* A folder "assoc-<what>-<pid>-XXXXXX" in dir, holding a file, with the
 * given age in seconds; its name in out. */
static void put_build(char *out, size_t n, const char *what, long pid, const char *tail, time_t age)
{
	char path[PATH_MAX + 128];
	snprintf(out, n, "assoc-%s-%ld-%s", what, pid, tail);
	snprintf(path, sizeof path, "%s/%s", dir, out);
	cr_assert_eq(mkdir(path, 0700), 0, "%s", path);
	snprintf(path, sizeof path, "%s/%s/k.cpp", dir, out);
	FILE *f = fopen(path, "w");
	cr_assert(f);
	fclose(f);
	snprintf(path, sizeof path, "%s/%s", dir, out);
	struct timespec ts[2] = {{time(NULL) - age, 0}, {time(NULL) - age, 0}};
	cr_assert_eq(utimensat(AT_FDCWD, path, ts, 0), 0);
}

/* A process killed while it built (no handler runs on SIGKILL) leaves
 * its folder under TMPDIR; the next build of the same kind removes it,
 * once untouched for ten minutes, and leaves the folders of live
 * processes, fresh ones, other kinds' and links (and what they point
 * to) alone. */
Test(cache, a_killed_builders_folder_goes_with_the_next_build)
{
	fresh_dir("cache_builds");
	setenv("TMPDIR", dir, 1);
	long dead = (long)dead_pid(), me = (long)getpid();
	char stale[48], live[48], fresh[48], ptxas[48], link[48], kept[PATH_MAX + 160];
	put_build(stale, sizeof stale, "emu", dead, "aaaaaa", 3600);
	put_build(live, sizeof live, "emu", me, "bbbbbb", 3600);
	put_build(fresh, sizeof fresh, "emu", dead, "cccccc", 60);
	put_build(ptxas, sizeof ptxas, "ptxas", dead, "dddddd", 3600);
	/* a stale folder's link to a file outside: the link goes, the file stays */
	put("outside", 3, time(NULL));
	snprintf(kept, sizeof kept, "%s/%s/l", dir, stale);
	cr_assert_eq(symlink("../outside", kept), 0);
	struct timespec old[2] = {{time(NULL) - 3600, 0}, {time(NULL) - 3600, 0}};
	snprintf(kept, sizeof kept, "%s/%s", dir, stale);
	cr_assert_eq(utimensat(AT_FDCWD, kept, old, 0), 0);
	/* a link named as a dead process's folder is no folder of assoc's */
	snprintf(link, sizeof link, "assoc-emu-%ld-eeeeee", dead);
	snprintf(kept, sizeof kept, "%s/%s", dir, link);
	cr_assert_eq(symlink(live, kept), 0); /* relative: beside the link */

	char made[PATH_MAX + 64], want[PATH_MAX + 64];
	cr_assert_eq(cache_build_dir("emu", made, sizeof made), 0, "%s", strerror(errno));
	snprintf(want, sizeof want, "%s/assoc-emu-%ld-", dir, me);
	cr_expect(!strncmp(made, want, strlen(want)) && strlen(made) == strlen(want) + 6, "%s", made);
	struct stat st;
	cr_assert_eq(lstat(made, &st), 0);
	cr_expect(S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700, "mode %o", st.st_mode & 0777);
	cr_expect(!has(stale), "the dead builder's folder is removed");
	cr_expect(has("outside"), "what its link pointed to stays");
	cr_expect(has(live) && has(fresh) && has(ptxas), "live, fresh and other kinds' folders stay");
	char inner[64];
	snprintf(inner, sizeof inner, "%s/k.cpp", live);
	cr_expect(has(inner) && has(link), "a link is not followed, nor taken for a folder");
	cr_assert_eq(rmdir(made), 0);
	cr_assert_eq(cache_build_dir("ptxas", made, sizeof made), 0);
	cr_expect(!has(ptxas));
	cr_assert_eq(rmdir(made), 0);
}

/* ---- the emulator's modules ---- */

#define EMU_SRC(k) "extern \"C\" void k_emu(const void *p) { ((int *)p)[threadIdx.x] = threadIdx.x + " #k "; }\n"

/* The module runs: thread t writes t + k. */
static void emu_runs(const char *src, int k)
{
	EmuLib *l;
	char msg[4096];
	cr_assert_eq(emu_open(src, &l, msg, sizeof msg), 0, "%s", msg);
	int out[32] = {0};
	cr_assert_eq(emu_launch_kernel(l, "k", 1, 32, 0, out, NULL, msg, sizeof msg), 0, "%s", msg);
	for (int t = 0; t < 32; t++)
		cr_expect_eq(out[t], t + k, "thread %d", t);
	emu_close(l);
}

/* The one file of dir/assoc/emu ending in ext, into path; how many there are. */
static int emu_file(const char *ext, char *path, size_t n)
{
	char d[PATH_MAX + 32];
	snprintf(d, sizeof d, "%s/xdg/assoc/emu", dir);
	DIR *dd = opendir(d);
	cr_assert(dd, "%s", d);
	int count = 0;
	for (struct dirent *de; (de = readdir(dd));) {
		size_t l = strlen(de->d_name);
		if (de->d_name[0] != '.' && l > strlen(ext) && !strcmp(de->d_name + l - strlen(ext), ext)) {
			snprintf(path, n, "%s/%s", d, de->d_name);
			count++;
		}
	}
	closedir(dd);
	return count;
}

static void emu_setup(const char *name)
{
	fresh_dir(name);
	char x[PATH_MAX + 16];
	snprintf(x, sizeof x, "%s/xdg", dir);
	setenv("XDG_CACHE_HOME", x, 1);
	char why[256];
	if (!emu_available(why, sizeof why))
		cr_skip_test("%s", why);
}

/* A cached module is loaded only when its seal holds: one cut short,
 * one with a byte changed and one planted (whose constructor would leave
 * a mark) are built again, never loaded; a link planted at the module's
 * or the source's name is replaced, its target unchanged. */
Test(cache, emulator_modules_are_checked_before_loading, .timeout = 240)
{
	emu_setup("cache_emu");
	emu_runs(EMU_SRC(1), 1);
	char so[PATH_MAX + 300], cpp[PATH_MAX + 300], mark[PATH_MAX + 64], cmd[6 * PATH_MAX];
	cr_assert_eq(emu_file(".so", so, sizeof so), 1);
	cr_assert_eq(emu_file(".cpp", cpp, sizeof cpp), 1);
	struct stat st;
	cr_assert_eq(stat(so, &st), 0);
	snprintf(mark, sizeof mark, "%s/planted-ran", dir);
	for (int damage = 0; damage < 3; damage++) {
		if (damage == 0)
			cr_assert_eq(truncate(so, st.st_size / 2), 0);
		if (damage == 1) {
			FILE *f = fopen(so, "r+b");
			fseek(f, st.st_size / 2, SEEK_SET);
			int c = fgetc(f);
			fseek(f, st.st_size / 2, SEEK_SET);
			fputc(c ^ 0x5a, f);
			fclose(f);
		}
		if (damage == 2) {
			snprintf(cmd, sizeof cmd,
				 "printf '#include <stdio.h>\\n__attribute__((constructor)) static void m(void) "
				 "{ fclose(fopen(\"%s\", \"w\")); }\\nint emu_launch;\\n' > %s/plant.c && "
				 "cc -shared -fPIC -o '%s' %s/plant.c",
				 mark, dir, so, dir);
			cr_assert_eq(system(cmd), 0, "%s", cmd);
		}
		emu_runs(EMU_SRC(1), 1);
		cr_expect_neq(access(mark, F_OK), 0, "the planted library did not run");
		char *ok = cache_read(so, NULL);
		cr_expect(ok, "damage %d: the module is written again", damage);
		free(ok);
	}
	/* links at both names: replaced by the build, their target kept */
	char victim[PATH_MAX + 64], got[64];
	snprintf(victim, sizeof victim, "%s/victim", dir);
	FILE *f = fopen(victim, "w");
	fputs("precious", f);
	fclose(f);
	cr_assert_eq(unlink(so), 0);
	cr_assert_eq(unlink(cpp), 0);
	cr_assert_eq(symlink(victim, so), 0);
	cr_assert_eq(symlink(victim, cpp), 0);
	emu_runs(EMU_SRC(1), 1);
	slurp(victim, got, sizeof got);
	cr_expect_str_eq(got, "precious");
	cr_assert_eq(lstat(so, &st), 0);
	cr_expect(S_ISREG(st.st_mode));
	cr_assert_eq(lstat(cpp, &st), 0);
	cr_expect(S_ISREG(st.st_mode));
	/* a cache open to others is not used; the emulator still runs */
	char d[PATH_MAX + 32];
	snprintf(d, sizeof d, "%s/xdg/assoc/emu", dir);
	cr_assert_eq(chmod(d, 0777), 0);
	cr_assert_eq(unlink(so), 0);
	emu_runs(EMU_SRC(2), 2);
	cr_expect_eq(emu_file(".so", so, sizeof so), 0, "nothing written in a directory open to others");
	unsetenv("XDG_CACHE_HOME");
}

/* A module sealed for its key that is not one of assoc's (no
 * emu_launch) is built again and written over, not refused run after
 * run. */
Test(cache, emulator_module_without_its_entry_is_built_again, .timeout = 240)
{
	emu_setup("cache_emu_foreign");
	emu_runs(EMU_SRC(7), 7);
	char so[PATH_MAX + 300], cmd[4 * PATH_MAX];
	cr_assert_eq(emu_file(".so", so, sizeof so), 1);
	snprintf(cmd, sizeof cmd, "printf 'int not_a_module;\\n' > %s/f.c && cc -shared -fPIC -o %s/f.so %s/f.c", dir,
		 dir, dir);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	snprintf(cmd, sizeof cmd, "%s/f.so", dir);
	size_t len;
	char *foreign = cache_read(cmd, &len);
	cr_assert(foreign);
	const char *stem = strrchr(so, '/') + 1;
	cr_assert_eq(cache_write_sealed(so, strtoull(stem, NULL, 16), foreign, len), 0);
	free(foreign);
	emu_runs(EMU_SRC(7), 7);
	char *again = cache_read(so, &len);
	cr_assert(again);
	cr_expect(memmem(again, len, "emu_launch", 10), "the module written over with the one built");
	free(again);
	unsetenv("XDG_CACHE_HOME");
}

/* With ASSOC_CACHE_MB=0 each write prunes all but the newest file:
 * four processes building modules at once each keep what they build and
 * load until they are done with it. */
Test(cache, concurrent_emulator_builds_with_no_room, .timeout = 240)
{
	emu_setup("cache_emu_zero");
	setenv("ASSOC_CACHE_MB", "0", 1);
	static const char *const srcs[] = {EMU_SRC(3), EMU_SRC(4), EMU_SRC(5), EMU_SRC(6)};
	pid_t kids[4];
	for (int i = 0; i < 4; i++) {
		kids[i] = fork();
		cr_assert_geq(kids[i], 0);
		if (!kids[i]) {
			EmuLib *l;
			char msg[4096];
			int out[32] = {0};
			if (emu_open(srcs[i], &l, msg, sizeof msg)) {
				fprintf(stderr, "process %d: %s\n", i, msg);
				_exit(1);
			}
			int bad = emu_launch_kernel(l, "k", 1, 32, 0, out, NULL, msg, sizeof msg) || out[31] != 31 + 3 + i;
			emu_close(l);
			_exit(bad ? 2 : 0);
		}
	}
	for (int i = 0; i < 4; i++) {
		int st;
		cr_assert_eq(waitpid(kids[i], &st, 0), kids[i]);
		cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "process %d: status %#x", i, st);
	}
	unsetenv("ASSOC_CACHE_MB");
	unsetenv("XDG_CACHE_HOME");
}

/* A run on the CPU whose object's name in the cache holds a link, then
 * a pipe: the run neither writes through the link nor waits on the
 * pipe. */
Test(cache, cpu_runs_neither_follow_links_nor_wait_on_pipes, .timeout = 240)
{
	fresh_dir("cache_cpu");
	char cmd[3 * PATH_MAX], obj[PATH_MAX + 300], victim[PATH_MAX + 64], got[64];
	snprintf(cmd, sizeof cmd,
		 "XDG_CACHE_HOME=%s/xdg ASSOC_NO_CPU_CACHE=0 build/asan/assoc run specs/sum.yaml --device cpu >%s/log 2>&1",
		 dir, dir);
	if (system(cmd)) {
		char log[4096];
		snprintf(victim, sizeof victim, "%s/log", dir);
		slurp(victim, log, sizeof log);
		if (strstr(log, "LLVM") || strstr(log, "not built"))
			cr_skip_test("no CPU backend: %s", log);
		cr_assert_fail("%s", log);
	}
	char d[PATH_MAX + 32];
	snprintf(d, sizeof d, "%s/xdg/assoc/cpu", dir);
	DIR *dd = opendir(d);
	cr_assert(dd, "%s", d);
	obj[0] = 0;
	for (struct dirent *de; (de = readdir(dd));)
		if (strstr(de->d_name, ".o") && de->d_name[0] != '.')
			snprintf(obj, sizeof obj, "%s/%s", d, de->d_name);
	closedir(dd);
	cr_assert(obj[0], "an object in %s", d);
	snprintf(victim, sizeof victim, "%s/victim", dir);
	FILE *f = fopen(victim, "w");
	fputs("precious", f);
	fclose(f);
	cr_assert_eq(unlink(obj), 0);
	cr_assert_eq(symlink(victim, obj), 0);
	cr_expect_eq(system(cmd), 0, "%s", cmd);
	slurp(victim, got, sizeof got);
	cr_expect_str_eq(got, "precious", "the link's target is unchanged");
	struct stat st;
	cr_assert_eq(lstat(obj, &st), 0);
	cr_expect(S_ISREG(st.st_mode), "the object replaces the link");
	cr_assert_eq(unlink(obj), 0);
	cr_assert_eq(mkfifo(obj, 0600), 0);
	cr_expect_eq(system(cmd), 0, "a pipe in the cache does not block the run");
	cr_assert_eq(lstat(obj, &st), 0);
	cr_expect(S_ISREG(st.st_mode), "the object replaces the pipe");
}

/* The tuning cache: a pipe at an entry's name is a miss at once, a
 * link there is replaced by the entry, its target unchanged; a folder
 * open to others is refused. */
Test(cache, tuning_entries_follow_no_link_and_wait_on_no_pipe, .timeout = 20)
{
	fresh_dir("cache_tune");
	char tdir[PATH_MAX + 16], err[PATH_MAX + 300], why[200], v[256], path[1200], victim[PATH_MAX + 64], got[64];
	snprintf(tdir, sizeof tdir, "%s/tune", dir);
	TuneCache tc;
	cr_assert_eq(tc_open(&tc, tdir, err, sizeof err), 0, "%s", err);
	tc_path(&tc, "k", path, sizeof path);
	cr_assert_eq(mkfifo(path, 0600), 0);
	cr_expect_eq(tc_get(&tc, "k", v, sizeof v, why, sizeof why), 0);
	cr_expect_str_eq(why, "not a regular file");
	cr_assert_eq(unlink(path), 0);
	snprintf(victim, sizeof victim, "%s/victim", dir);
	FILE *f = fopen(victim, "w");
	fputs("precious", f);
	fclose(f);
	cr_assert_eq(symlink(victim, path), 0);
	cr_expect_eq(tc_get(&tc, "k", v, sizeof v, why, sizeof why), 0, "not read through a link");
	cr_assert_eq(tc_put(&tc, "k", "threads=128", err, sizeof err), 0, "%s", err);
	slurp(victim, got, sizeof got);
	cr_expect_str_eq(got, "precious");
	cr_expect_eq(tc_get(&tc, "k", v, sizeof v, why, sizeof why), 1, "%s", why);
	cr_expect_str_eq(v, "threads=128");
	cr_assert_eq(chmod(path, 0660), 0); /* an entry others may write is not read */
	cr_expect_eq(tc_get(&tc, "k", v, sizeof v, why, sizeof why), 0);
	cr_expect_str_eq(why, "another user's, or writable by others");
	cr_assert_eq(chmod(path, 0600), 0);
	cr_expect_eq(tc_get(&tc, "k", v, sizeof v, why, sizeof why), 1, "%s", why);
	cr_assert_eq(chmod(tdir, 0770), 0);
	cr_expect_eq(tc_open(&tc, tdir, err, sizeof err), -1);
	cr_expect(strstr(err, "open to other users (mode 0770)"), "%s", err);
}

/* A run on the cpu at dir's cache (XDG_CACHE_HOME=dir/xdg), prefix before
 * it (a shell's), its stdout and stderr in out: its exit status.  Its
 * output goes through a pipe, which a file size limit in prefix spares. */
static int cpu_run(const char *prefix, char *out, size_t n)
{
	char cmd[3 * PATH_MAX], log[PATH_MAX + 16];
	snprintf(log, sizeof log, "%s/log", dir);
	snprintf(cmd, sizeof cmd,
		 "{ sh -c '%s XDG_CACHE_HOME=%s/xdg ASSOC_NO_CPU_CACHE=0 exec build/asan/assoc run specs/sum.yaml --device cpu "
		 "--rows 2 --len 100' 2>&1; echo \"exit $?\"; } | cat >%s",
		 prefix, dir, log);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	slurp(log, out, n);
	const char *e = strstr(out, "exit ");
	while (e && strstr(e + 1, "exit "))
		e = strstr(e + 1, "exit ");
	cr_assert(e, "%s", out);
	return atoi(e + 5);
}

/* The object the cpu cache at dir holds, its path in obj: 1, or 0. */
static int cpu_object(char *obj, size_t n)
{
	char d[PATH_MAX + 32];
	snprintf(d, sizeof d, "%s/xdg/assoc/cpu", dir);
	DIR *dd = opendir(d);
	int found = 0;
	for (struct dirent *de; dd && (de = readdir(dd));)
		if (strstr(de->d_name, ".o") && de->d_name[0] != '.')
			found = snprintf(obj, n, "%s/%s", d, de->d_name) > 0;
	if (dd)
		closedir(dd);
	return found;
}

static int count_of(const char *s, const char *what)
{
	int k = 0;
	for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
		k++;
	return k;
}

/* An entry that fails its seal (a byte changed, cut short, another key's)
 * or is no regular file is rebuilt, and a line on stderr names it and
 * says so; a directory in its place, which nothing replaces, is said
 * as well, run after run.  A whole entry is used quietly. */
Test(cache, cpu_entries_rebuilt_in_place_of_a_damaged_one_are_said, .timeout = 240)
{
	fresh_dir("cache_cpu_said");
	char out[8192], obj[PATH_MAX + 300], want[2 * PATH_MAX];
	if (cpu_run("", out, sizeof out)) {
		if (strstr(out, "LLVM") || strstr(out, "not built"))
			cr_skip_test("no CPU backend: %s", out);
		cr_assert_fail("%s", out);
	}
	cr_assert(cpu_object(obj, sizeof obj), "an object in %s/xdg/assoc/cpu", dir);
	cr_assert_eq(cpu_run("", out, sizeof out), 0, "%s", out);
	cr_expect_not(strstr(out, "warning"), "a whole entry is used quietly: %s", out);
	size_t len;
	char *whole = cache_read(obj, &len);
	cr_assert(whole && len > 100);
	for (int damage = 0; damage < 3; damage++) {
		if (damage == 0) { /* a byte changed */
			FILE *f = fopen(obj, "r+b");
			fseek(f, (long)len / 2, SEEK_SET);
			fputc(whole[len / 2] ^ 0x5a, f);
			fclose(f);
		}
		if (damage == 1) /* cut short */
			cr_assert_eq(truncate(obj, (off_t)len / 2), 0);
		if (damage == 2) /* another key's, sealed */
			cr_assert_eq(cache_write_sealed(obj, 12345, "object code", 11), 0);
		cr_assert_eq(cpu_run("", out, sizeof out), 0, "%s", out);
		snprintf(want, sizeof want,
			 "assoc: warning: cache entry %s failed its seal (cut short, damaged or another key's); rebuilt\n", obj);
		cr_expect_eq(count_of(out, want), 1, "damage %d: %s", damage, out);
		size_t l2;
		char *again = cache_read(obj, &l2);
		cr_expect(again && l2 == len && !memcmp(again, whole, len), "damage %d: written over whole", damage);
		free(again);
	}
	/* whole and sealed, but writable by others, or another user's (where
	 * this runs as root, which can give it away): not read, rebuilt as
	 * this user's own */
	for (int foreign = 0; foreign < 2; foreign++) {
		if (foreign && geteuid() != 0)
			break;
		if (foreign)
			cr_assert_eq(chown(obj, 65534, 65534), 0);
		else
			cr_assert_eq(chmod(obj, 0620), 0);
		cr_assert_eq(cpu_run("", out, sizeof out), 0, "%s", out);
		snprintf(want, sizeof want, "assoc: warning: cache entry %s %s; rebuilt\n", obj,
			 foreign ? "belongs to another user" : "can be written by other users");
		cr_expect_eq(count_of(out, want), 1, "%s", out);
		struct stat st;
		cr_assert_eq(stat(obj, &st), 0);
		cr_expect(st.st_uid == geteuid() && !(st.st_mode & 022), "replaced: uid %d, mode %o", (int)st.st_uid,
			  (unsigned)st.st_mode);
		size_t l2;
		char *again = cache_read(obj, &l2);
		cr_expect(again && l2 == len && !memcmp(again, whole, len), "written over whole");
		free(again);
	}
	free(whole);
	cr_assert_eq(unlink(obj), 0);
	cr_assert_eq(mkfifo(obj, 0600), 0);
	cr_assert_eq(cpu_run("", out, sizeof out), 0, "%s", out);
	snprintf(want, sizeof want, "assoc: warning: cache entry %s is not a regular file; rebuilt\n", obj);
	cr_expect(strstr(out, want), "%s", out);
	cr_assert_eq(unlink(obj), 0);
	cr_assert_eq(mkdir(obj, 0700), 0);
	for (int run = 0; run < 2; run++) {
		cr_assert_eq(cpu_run("", out, sizeof out), 0, "%s", out);
		snprintf(want, sizeof want,
			 "assoc: warning: cache entry %s is a directory; rebuilt, but it could not be replaced: ", obj);
		cr_expect_eq(count_of(out, want), 1, "run %d: %s", run, out);
	}
	unsetenv("XDG_CACHE_HOME");
}

/* A cpu kernel that cannot be written to the cache is said once, as the
 * emulator's is, and the run goes on: writes past a file size limit of 0
 * fail whoever runs them (root ignores a folder's mode). */
Test(cache, cpu_entries_that_cannot_be_written_are_said, .timeout = 240)
{
	fresh_dir("cache_cpu_unwritten");
	char out[8192], obj[PATH_MAX + 300];
	int rc = cpu_run("trap \"\" XFSZ; ulimit -f 0;", out, sizeof out);
	if (rc && (strstr(out, "LLVM") || strstr(out, "not built")))
		cr_skip_test("no CPU backend: %s", out);
	cr_assert_eq(rc, 0, "%s", out);
	char want[2 * PATH_MAX];
	snprintf(want, sizeof want, "assoc: warning: cannot write %s/xdg/assoc/cpu/", dir);
	cr_expect_eq(count_of(out, want), 1, "%s", out);
	cr_expect(strstr(out, ".o: File too large; going on without the cache\n"), "%s", out);
	cr_expect_not(cpu_object(obj, sizeof obj), "nothing cached: %s", obj);
	cr_expect(strstr(out, "\n  ok\n"), "%s", out);
	unsetenv("XDG_CACHE_HOME");
}

/* A folder above the cache that is refused (open to others and not
 * sticky, or another user's) gets nothing made in it: neither assoc/ nor
 * the missing folders of XDG_CACHE_HOME. */
Test(cache, nothing_is_made_in_a_refused_folder)
{
	fresh_dir("cache_refused_parent");
	char open_[PATH_MAX + 16], xdg[PATH_MAX + 64], made[PATH_MAX + 96], path[PATH_MAX + 128], msg[PATH_MAX + 400];
	snprintf(open_, sizeof open_, "%s/open", dir);
	cr_assert_eq(mkdir(open_, 0700), 0);
	cr_assert_eq(chmod(open_, 0777), 0);
	/* the folder itself */
	setenv("XDG_CACHE_HOME", open_, 1);
	cr_expect_eq(cache_dir("cpu", path, sizeof path, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "can be written by other users") && strstr(msg, "mode 0777"), "%s", msg);
	snprintf(made, sizeof made, "%s/assoc", open_);
	cr_expect_neq(access(made, F_OK), 0, "no assoc/ made in %s", open_);
	/* a folder inside it, still to be made */
	snprintf(xdg, sizeof xdg, "%s/new/cache", open_);
	setenv("XDG_CACHE_HOME", xdg, 1);
	cr_expect_eq(cache_dir("cpu", path, sizeof path, msg, sizeof msg), -1);
	cr_expect(strstr(msg, " is inside ") && strstr(msg, ", which other users can write to"), "%s", msg);
	snprintf(made, sizeof made, "%s/new", open_);
	cr_expect_neq(access(made, F_OK), 0, "no folder made in %s", open_);
	/* sticky: used, and the folders made */
	cr_assert_eq(chmod(open_, 01777), 0);
	cr_expect_eq(cache_dir("cpu", path, sizeof path, msg, sizeof msg), 0, "%s", msg);
	cr_expect_eq(access(path, F_OK), 0, "%s", path);
	if (geteuid() != 0) {
		unsetenv("XDG_CACHE_HOME");
		cr_skip_test("another user's folder needs root to make");
	}
	char theirs[PATH_MAX + 16];
	snprintf(theirs, sizeof theirs, "%s/theirs", dir);
	cr_assert_eq(mkdir(theirs, 0755), 0);
	cr_assert_eq(chown(theirs, 65534, 65534), 0);
	setenv("XDG_CACHE_HOME", theirs, 1);
	cr_expect_eq(cache_dir("cpu", path, sizeof path, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "belongs to another user"), "%s", msg);
	snprintf(made, sizeof made, "%s/assoc", theirs);
	cr_expect_neq(access(made, F_OK), 0, "no assoc/ made in %s", theirs);
	unsetenv("XDG_CACHE_HOME");
}
