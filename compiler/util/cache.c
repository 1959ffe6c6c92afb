/* cache.c: cache directories and atomic writes. */
#include "compiler/util/cache.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
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

/* Whether path is a directory of this user's alone: other users able to
 * write into a cache could plant a file that assoc loads (a library it
 * runs), or a link that it writes through; 0, or -1 with msg. */
int cache_private(const char *path, char *msg, size_t mn)
{
	struct stat st;
	if (lstat(path, &st)) {
		snprintf(msg, mn, "cache directory %s: %s", path, strerror(errno));
		return -1;
	}
	if (S_ISLNK(st.st_mode))
		snprintf(msg, mn, "cache directory %s is a symbolic link, not used", path);
	else if (!S_ISDIR(st.st_mode))
		snprintf(msg, mn, "cache directory %s is not a directory", path);
	else if (st.st_uid != geteuid())
		snprintf(msg, mn, "cache directory %s belongs to uid %u, not to this user (uid %u), and is not used",
			 path, (unsigned)st.st_uid, (unsigned)geteuid());
	else if (st.st_mode & 077)
		snprintf(msg, mn, "cache directory %s is open to other users (mode %04o), not used; chmod 700 makes it private",
			 path, (unsigned)(st.st_mode & 07777));
	else
		return 0;
	return -1;
}

/* Whether the folders that hold dir, up to /, keep other users from
 * renaming it away: each owned by this user or root, and not writable
 * by others unless sticky (/tmp), where only a file's owner may rename
 * it.  One that fails would let another user put a folder of theirs
 * where the cache is, between assoc's checks and its use.  From the
 * folder from (dir, or the part of it that exists), the message naming
 * dir.  0, or -1 with msg. */
static int ancestors_safe(const char *dir, const char *from, char *msg, size_t mn)
{
	char real[PATH_MAX];
	if (!realpath(from, real)) {
		snprintf(msg, mn, "cache directory %s: %s", dir, strerror(errno));
		return -1;
	}
	for (;;) {
		struct stat st;
		if (stat(real, &st)) {
			snprintf(msg, mn, "cache directory %s: %s: %s", dir, real, strerror(errno));
			return -1;
		}
		if ((st.st_uid != geteuid() && st.st_uid != 0) || ((st.st_mode & 022) && !(st.st_mode & S_ISVTX))) {
			int theirs = st.st_uid != geteuid() && st.st_uid != 0, self = !strcmp(real, dir);
			snprintf(msg, mn, "cache directory %s%s%s%s (uid %u, mode %04o), so is not used", dir,
				 self ? "" : " is inside ", self ? "" : real,
				 theirs ? (self ? " belongs to another user" : ", which belongs to another user")
					: (self ? " can be written by other users" : ", which other users can write to"),
				 (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
			return -1;
		}
		char *slash = strrchr(real, '/');
		if (!slash || real[1] == 0)
			return 0;
		slash[slash == real] = 0; /* "/a" up to "/" */
	}
}

int cache_dir(const char *sub, char *path, size_t n, char *msg, size_t mn)
{
	/* a relative XDG_CACHE_HOME is not one (the XDG base directory rules
	 * say to ignore it): it would put a cache in whatever folder a
	 * command runs from */
	const char *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	char top[PATH_MAX];
	if (x && x[0] == '/')
		snprintf(top, sizeof top, "%s/assoc", x);
	else if (home && home[0] == '/')
		snprintf(top, sizeof top, "%s/.cache/assoc", home);
	else {
		snprintf(msg, mn, "no cache directory: neither XDG_CACHE_HOME nor HOME is an absolute path");
		return -1;
	}
	if (snprintf(path, n, "%s/%s", top, sub) >= (int)n) {
		snprintf(msg, mn, "cache directory name too long");
		return -1;
	}
	/* the folder above assoc/ as the user has it (made if missing), then
	 * each of assoc's own two levels, checked before the next is made in
	 * it: a link at assoc/ is refused before anything is made through it */
	char parent[PATH_MAX], have[PATH_MAX];
	snprintf(parent, sizeof parent, "%s", top);
	*strrchr(parent, '/') = 0;
	/* nothing made in a folder that is refused: the part of the path
	 * that exists judged first, the whole once made */
	snprintf(have, sizeof have, "%s", parent);
	for (struct stat st; have[1] && lstat(have, &st);) {
		char *slash = strrchr(have, '/');
		slash[slash == have] = 0; /* "/a" up to "/" */
	}
	if (ancestors_safe(parent, have, msg, mn))
		return -1;
	if (mkdir_p(parent)) {
		snprintf(msg, mn, "cannot create the cache directory %s: %s", top, strerror(errno));
		return -1;
	}
	if (strcmp(have, parent) && ancestors_safe(parent, parent, msg, mn))
		return -1;
	if (mkdir(top, 0700) && errno != EEXIST) {
		snprintf(msg, mn, "cannot create the cache directory %s: %s", top, strerror(errno));
		return -1;
	}
	if (cache_private(top, msg, mn))
		return -1;
	if (mkdir(path, 0700) && errno != EEXIST) {
		snprintf(msg, mn, "cannot create the cache directory %s: %s", path, strerror(errno));
		return -1;
	}
	/* both levels assoc made: whoever can write assoc/ can swap <sub> */
	return cache_private(path, msg, mn);
}

void cache_warn(const char *msg)
{
	static atomic_flag said = ATOMIC_FLAG_INIT; /* the library's threads warn too */
	if (!atomic_flag_test_and_set(&said))
		fprintf(stderr, "assoc: warning: %s; going on without the cache\n", msg);
}

/* ---- temporary files: ".<name>.<pid>.<serial>.tmp" ---- */

/* The pid in a temporary file's name, which starts with prefix (any when
 * NULL); 0 when the name is no temporary file's. */
static long temp_pid(const char *name, const char *prefix)
{
	size_t l = strlen(name), pl = prefix ? strlen(prefix) : 1;
	if (name[0] != '.' || l < pl + 8 || strcmp(name + l - 4, ".tmp") || (prefix && strncmp(name, prefix, pl)))
		return 0;
	/* back from ".tmp": the serial, then the pid, each after a dot */
	const char *e = name + l - 4, *p = e;
	while (p > name && p[-1] >= '0' && p[-1] <= '9')
		p--;
	if (p == e || p - 1 <= name || p[-1] != '.')
		return 0;
	e = p - 1;
	p = e;
	while (p > name && p[-1] >= '0' && p[-1] <= '9')
		p--;
	if (p == e || e - p > 9 || (prefix ? p != name + pl : p - 1 <= name || p[-1] != '.'))
		return 0;
	return strtol(p, NULL, 10);
}

/* A temporary file is left by a dead process when the pid its name
 * holds is gone (a process killed by SIGKILL has no chance to remove
 * it), or, whatever the pid, when it is untouched for a day (pids are
 * used again). */
enum { TEMP_STALE_S = 24 * 3600 };

static int temp_dead(long pid, const struct stat *st, time_t now)
{
	return (pid > 0 && kill((pid_t)pid, 0) && errno == ESRCH) || now - st->st_mtime > TEMP_STALE_S;
}

static void remove_dead_temps(int dfd, const char *prefix)
{
	int fd = dup(dfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	time_t now = time(NULL);
	struct stat st;
	/* this user's alone: in a shared folder (/tmp) another user's files
	 * of such a name are theirs to remove, root's run included */
	for (struct dirent *de; (de = readdir(d));) {
		long pid = temp_pid(de->d_name, prefix);
		if (pid > 0 && !fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) && !S_ISDIR(st.st_mode) &&
		    st.st_uid == geteuid() && temp_dead(pid, &st, now))
			unlinkat(dfd, de->d_name, 0);
	}
	closedir(d);
}

/* A build folder of a dead process is left alone while it was touched
 * in the last BUILD_STALE_S: a process of another pid namespace sharing
 * the folder can look dead from this one and still be building. */
enum { BUILD_STALE_S = 600 };

/* The pid in a build folder's name, "assoc-<what>-<pid>-XXXXXX" (what
 * given as "assoc-<what>-"), or 0. */
static long build_pid(const char *name, const char *pre)
{
	size_t pl = strlen(pre);
	if (strncmp(name, pre, pl) || name[pl] < '1' || name[pl] > '9')
		return 0;
	char *end;
	long pid = strtol(name + pl, &end, 10);
	return end - (name + pl) <= 9 && *end == '-' && strlen(end + 1) == 6 ? pid : 0;
}

/* Remove a dead process's build folder: only its files (it holds no
 * folders; links are removed, never followed), then the folder. */
static void remove_build(int dfd, const char *name)
{
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	struct stat st;
	for (struct dirent *de; (de = readdir(d));)
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		    !fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) && !S_ISDIR(st.st_mode))
			unlinkat(fd, de->d_name, 0);
	closedir(d);
	unlinkat(dfd, name, AT_REMOVEDIR);
}

static void remove_dead_builds(const char *tmp, const char *pre)
{
	DIR *d = opendir(tmp);
	if (!d)
		return;
	int dfd = dirfd(d);
	time_t now = time(NULL);
	struct stat st;
	for (struct dirent *de; (de = readdir(d));) {
		long pid = build_pid(de->d_name, pre);
		if (pid > 0 && !fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) && S_ISDIR(st.st_mode) &&
		    st.st_uid == geteuid() && now - st.st_mtime >= BUILD_STALE_S && kill((pid_t)pid, 0) &&
		    errno == ESRCH)
			remove_build(dfd, de->d_name);
	}
	closedir(d);
}

int cache_build_dir(const char *what, char *out, size_t n)
{
	const char *t = getenv("TMPDIR");
	char pre[64];
	if (!t || !*t)
		t = "/tmp";
	snprintf(pre, sizeof pre, "assoc-%s-", what);
	remove_dead_builds(t, pre);
	if ((size_t)snprintf(out, n, "%s/%s%ld-XXXXXX", t, pre, (long)getpid()) >= n) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return mkdtemp(out) ? 0 : -1;
}

/* The directory and last component of path, into dir and base. */
static void split(const char *path, char *dir, char *base, size_t n)
{
	char a[PATH_MAX], b[PATH_MAX];
	snprintf(a, sizeof a, "%s", path);
	snprintf(b, sizeof b, "%s", path);
	snprintf(dir, n, "%s", dirname(a));
	snprintf(base, n, "%s", basename(b));
}

/* A new file of its own in dir, named after base: never a link's target,
 * nor a file another process has open; its fd, or -1. */
static int open_temp(const char *dir, const char *base, char *tmp, size_t n, mode_t mode)
{
	/* two files whose names share their first 180 bytes, or two threads'
	 * writes of one file */
	static atomic_int serial;
	for (int tries = 0; tries < 8; tries++) {
		if (snprintf(tmp, n, "%s/.%.180s.%ld.%d.tmp", dir, base, (long)getpid(), atomic_fetch_add(&serial, 1)) >=
		    (int)n) {
			errno = ENAMETOOLONG;
			return -1;
		}
		int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
		if (fd >= 0 || errno != EEXIST)
			return fd;
	}
	return -1;
}

int cache_temp(const char *path, char *tmp, size_t n)
{
	char dir[PATH_MAX], base[PATH_MAX];
	split(path, dir, base, sizeof dir);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -1;
	remove_dead_temps(dfd, NULL);
	close(dfd);
	return open_temp(dir, base, tmp, n, 0600);
}

/* The temporary files of open OutFiles and the private build folders
 * (with the files named in them), for the interrupt handler.  Slots are
 * claimed under a lock (the library builds in several threads); the
 * handler reads only the live flags and the paths written before them. */
enum { TEMPS_MAX = 64 };
static char temps[TEMPS_MAX][TEMP_NAME_MAX];
static volatile sig_atomic_t temp_live[TEMPS_MAX];
static pthread_mutex_t temps_lock = PTHREAD_MUTEX_INITIALIZER;

/* Files first, then folders, which are empty by then: unlink refuses a
 * folder and rmdir a file, both async-signal-safe. */
static void on_interrupt(int sig)
{
	for (int i = 0; i < TEMPS_MAX; i++)
		if (temp_live[i])
			unlink(temps[i]);
	for (int i = 0; i < TEMPS_MAX; i++)
		if (temp_live[i])
			rmdir(temps[i]);
	signal(sig, SIG_DFL);
	raise(sig);
}

int cache_temp_register(const char *tmp)
{
	static int handled;
	int slot = -1;
	if (strlen(tmp) >= TEMP_NAME_MAX)
		return -1;
	pthread_mutex_lock(&temps_lock);
	if (!handled) {
		static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
		for (int i = 0; i < 3; i++) {
			struct sigaction sa = {.sa_handler = on_interrupt}, old;
			sigemptyset(&sa.sa_mask);
			/* a signal the caller chose to ignore or handle stays its own */
			if (!sigaction(sigs[i], NULL, &old) && old.sa_handler == SIG_DFL)
				sigaction(sigs[i], &sa, NULL);
		}
		handled = 1;
	}
	for (int i = 0; i < TEMPS_MAX && slot < 0; i++)
		if (!temp_live[i]) {
			memcpy(temps[i], tmp, strlen(tmp) + 1);
			/* the whole path before the flag, for a handler on any thread */
			atomic_thread_fence(memory_order_release);
			temp_live[i] = 1;
			slot = i;
		}
	pthread_mutex_unlock(&temps_lock);
	return slot;
}

void cache_temp_forget(int slot)
{
	if (slot < 0 || slot >= TEMPS_MAX)
		return;
	pthread_mutex_lock(&temps_lock);
	temp_live[slot] = 0;
	pthread_mutex_unlock(&temps_lock);
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

FILE *infile_open(const char *path, char *why, size_t n)
{
	if (n)
		why[0] = 0;
	if (!strcmp(path, "/dev/stdin") || fd_path(path) >= 0)
		return fopen(path, "rb");
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	struct stat st;
	/* a folder is opened: its read says what it is */
	if (fstat(fd, &st) || !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))) {
		int e = errno;
		if (!fstat(fd, &st))
			snprintf(why, n, "not a regular file (%s)",
				 S_ISFIFO(st.st_mode)	? "a named pipe; /dev/stdin reads one given on standard input"
				 : S_ISSOCK(st.st_mode) ? "a socket"
							: "a device");
		close(fd);
		errno = why[0] ? EINVAL : e;
		return NULL;
	}
	int fl = fcntl(fd, F_GETFL);
	FILE *f = fl >= 0 && !fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) ? fdopen(fd, "rb") : NULL;
	if (!f) {
		int e = errno;
		close(fd);
		errno = e;
	}
	return f;
}

int outfile_in_place(const char *path)
{
	struct stat st;
	return fd_path(path) >= 0 || (!stat(path, &st) && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode));
}

/* A folder where the kernel's fs.protected_symlinks rule holds: sticky
 * and writable by everyone (/tmp), where anyone may put a link. */
static int shared_folder(const struct stat *dir) { return (dir->st_mode & S_ISVTX) && (dir->st_mode & S_IWOTH); }

/* The file path names once the links at it are followed (a link whose
 * target is a link too, each in turn; the folders on the way are the
 * kernel's to walk), into dest: 0, or -1 with errno, and with why where
 * a link is refused.  A link in a shared folder is followed only where
 * it is this user's or the folder owner's, as the kernel's
 * fs.protected_symlinks follows one: resolved here, and the file renamed
 * onto its target, it would otherwise let whoever can write to /tmp
 * choose which of this user's files an output replaces. */
static int follow_links(const char *path, char *dest, size_t n, char *why, size_t wn)
{
	enum { HOPS_MAX = 40 }; /* the kernel's MAXSYMLINKS */
	char cur[PATH_MAX * 2 + 2];
	snprintf(cur, sizeof cur, "%s", path);
	for (int hops = 0;; hops++) {
		struct stat st, ds;
		if (lstat(cur, &st) || !S_ISLNK(st.st_mode))
			break;
		if (hops == HOPS_MAX) {
			errno = ELOOP;
			return -1;
		}
		char buf[sizeof cur], dir[sizeof cur], link[PATH_MAX];
		snprintf(buf, sizeof buf, "%s", cur);
		snprintf(dir, sizeof dir, "%s", dirname(buf));
		if (stat(dir, &ds))
			return -1;
		if (shared_folder(&ds) && st.st_uid != geteuid() && st.st_uid != ds.st_uid) {
			if (strcmp(cur, path))
				snprintf(why, wn, "it leads to %s, a symbolic link of another user's in a shared folder", cur);
			else
				snprintf(why, wn, "it is a symbolic link of another user's in a shared folder");
			errno = EACCES;
			return -1;
		}
		ssize_t l = readlink(cur, link, sizeof link - 1);
		if (l <= 0)
			return -1;
		link[l] = 0;
		char next[sizeof cur];
		if (link[0] == '/')
			snprintf(next, sizeof next, "%s", link);
		else if (snprintf(next, sizeof next, "%s/%s", dir, link) >= (int)sizeof next) {
			errno = ENAMETOOLONG;
			return -1;
		}
		memcpy(cur, next, sizeof cur);
	}
	if (strlen(cur) >= n) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(dest, cur, strlen(cur) + 1);
	return 0;
}

/* How long an output that is a pipe waits for a process to open it for
 * reading: a reader started beside assoc (`cat pipe &`) may come a little
 * later, and a pipe that none reads must not hold the command forever. */
enum { PIPE_WAIT_MS = 5000 };

/* The device or pipe at path opened to be written in place; NULL with
 * errno, and why for a pipe that no process reads. */
static FILE *open_in_place(const char *path, const char *mode, char *why, size_t wn)
{
	int fd = -1;
	for (int waited = 0;; waited += 10) {
		fd = open(path, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (fd >= 0 || errno != ENXIO || waited >= PIPE_WAIT_MS)
			break;
		struct stat st;
		if (stat(path, &st) || !S_ISFIFO(st.st_mode))
			break;
		nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
	}
	if (fd < 0) {
		struct stat st;
		if (errno == ENXIO && !stat(path, &st) && S_ISFIFO(st.st_mode))
			snprintf(why, wn, "it is a pipe that no process opened for reading in %d s", PIPE_WAIT_MS / 1000);
		return NULL;
	}
	int fl = fcntl(fd, F_GETFL);
	FILE *f = fl >= 0 && !fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) ? fdopen(fd, mode) : NULL;
	if (!f) {
		int e = errno;
		close(fd);
		errno = e;
	}
	return f;
}

const char *outfile_why(const OutFile *o, int e) { return o->why[0] ? o->why : strerror(e); }

int outfile_open(OutFile *o, const char *path, const char *mode)
{
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
	/* the links checked whatever the file; dest used only for a file
	 * renamed into place (a device or pipe is opened through the links
	 * by the kernel, as /dev/stdout's to /proc/self/fd/1 must be) */
	if (follow_links(path, o->dest, sizeof o->dest, o->why, sizeof o->why))
		return -1;
	if (!stat(path, &st) && S_ISDIR(st.st_mode)) {
		/* said now, not by the rename once the whole output is written */
		errno = EISDIR;
		return -1;
	}
	if (outfile_in_place(path)) {
		o->dest[0] = 0;
		o->f = open_in_place(path, mode, o->why, sizeof o->why);
		return o->f ? 0 : -1;
	}
	/* beside the file, hidden, its name short enough for any file's */
	char dir[PATH_MAX], base[PATH_MAX], prefix[200];
	split(o->dest, dir, base, sizeof dir);
	/* the temporary files of this output left by killed processes */
	snprintf(prefix, sizeof prefix, ".%.180s.", base);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		remove_dead_temps(dfd, prefix);
		close(dfd);
	}
	int tfd = open_temp(dir, base, o->tmp, sizeof o->tmp, 0666);
	if (tfd < 0) {
		o->tmp[0] = 0;
		return -1;
	}
	o->slot = cache_temp_register(o->tmp);
	o->f = tfd >= 0 ? fdopen(tfd, mode) : NULL;
	if (!o->f) {
		int e = errno;
		if (tfd >= 0) {
			close(tfd);
			unlink(o->tmp);
		}
		cache_temp_forget(o->slot);
		errno = e;
		return -1;
	}
	/* the file it replaces keeps its permissions (a private one stays private) */
	if (!stat(o->dest, &st))
		fchmod(fileno(o->f), st.st_mode & 07777);
	return 0;
}

int outfile_check(const char *path, char *why, size_t n)
{
	OutFile of;
	if (outfile_in_place(path)) {
		/* a pipe is not opened before its output is there to write */
		if (fd_path(path) < 0 && follow_links(path, of.dest, sizeof of.dest, why, n))
			return -1;
		if (access(path, W_OK))
			return snprintf(why, n, "%s", strerror(errno)), -1;
		return 0;
	}
	if (outfile_open(&of, path, "wb"))
		return snprintf(why, n, "%s", outfile_why(&of, errno)), -1;
	outfile_close(&of, 0);
	return 0;
}

int outfile_close(OutFile *o, int keep)
{
	/* a write that failed on the way (a full disk) leaves the stream's
	 * error set, which fclose alone does not report */
	int rc = 0, e = 0;
	if (o->f && (fflush(o->f) || ferror(o->f)))
		rc = -1, e = errno ? errno : EIO;
	if (o->f && fclose(o->f) && !rc)
		rc = -1, e = errno;
	o->f = NULL;
	if (!o->tmp[0])
		return rc;
	if (!rc && keep && rename(o->tmp, o->dest))
		rc = -1, e = errno;
	if (rc || !keep)
		unlink(o->tmp);
	cache_temp_forget(o->slot);
	o->tmp[0] = 0;
	errno = e;
	return rc;
}

/* ---- the size of a cache directory ---- */

/* $ASSOC_CACHE_MB in megabytes, or -1 where it is not a whole number of
 * them (a sign, a fraction, a unit); empty is unset */
static long long env_mb(const char *e)
{
	char *end;
	if (!*e) /* set but empty: as unset */
		return CACHE_MB;
	if (*e < '0' || *e > '9')
		return -1;
	long long mb = strtoll(e, &end, 10); /* past long long: LLONG_MAX, no limit */
	return *end ? -1 : mb;
}

long long cache_limit(void)
{
	const char *e = getenv("ASSOC_CACHE_MB");
	long long mb = e ? env_mb(e) : CACHE_MB;
	if (mb < 0)
		mb = CACHE_MB;
	return mb > LLONG_MAX >> 20 ? LLONG_MAX : mb << 20; /* past it: no limit, not a wrapped one */
}

int cache_limit_valid(void)
{
	const char *e = getenv("ASSOC_CACHE_MB");
	return !e || env_mb(e) >= 0;
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

/* A dot name is a temporary file: another process's write in progress,
 * unless that process is dead (temp_dead). */
static int is_temp(const char *name) { return name[0] == '.'; }

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
		    fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) || S_ISDIR(st.st_mode))
			continue;
		if (is_temp(de->d_name)) {
			long pid = temp_pid(de->d_name, NULL);
			if (pid ? temp_dead(pid, &st, now) : now - st.st_mtime > TEMP_STALE_S)
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
	if (keep && !fstatat(fd, keep, &ks, AT_SYMLINK_NOFOLLOW))
		total += (long long)ks.st_size;
	if (total > limit && n) {
		/* down to three quarters, so that the next writes do not each scan again */
		qsort(e, n, sizeof *e, older);
		for (int i = 0; i < n && total > limit / 4 * 3; i++)
			if (!unlinkat(fd, e[i].name, 0))
				total -= e[i].bytes;
	}
	free(e);
	closedir(d);
}

void cache_used(const char *path) { utimensat(AT_FDCWD, path, NULL, AT_SYMLINK_NOFOLLOW); }

int cache_write(const char *path, const void *data, size_t len)
{
	char tmp[TEMP_NAME_MAX];
	int fd = cache_temp(path, tmp, sizeof tmp);
	if (fd < 0)
		return -1;
	const char *p = data;
	size_t left = len;
	while (left) {
		ssize_t w = write(fd, p, left);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		p += w, left -= (size_t)w;
	}
	/* rename replaces whatever the name was (a link, a pipe) and follows nothing */
	if (close(fd) || left || rename(tmp, path)) {
		int e = errno;
		unlink(tmp);
		errno = e;
		return -1;
	}
	char dir[PATH_MAX], name[PATH_MAX];
	split(path, dir, name, sizeof dir);
	cache_prune(dir, name);
	return 0;
}

int cache_open(const char *path)
{
	/* no link followed; a pipe or device neither blocks the open nor is read */
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		errno = EINVAL;
		return -1;
	}
	futimens(fd, NULL); /* used now: cache_prune removes the least recently used first */
	return fd;
}

int cache_open_own(const char *path)
{
	int fd = cache_open(path);
	struct stat st;
	if (fd >= 0 && (fstat(fd, &st) || st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)))) {
		close(fd);
		errno = EACCES;
		return -1;
	}
	return fd;
}

char *cache_read_fd(int fd, size_t *len)
{
	struct stat st;
	/* no entry assoc writes comes near it: a larger one is not read whole
	 * into memory, and is made again */
	if (fstat(fd, &st) || st.st_size > CACHE_ENTRY_MAX)
		return NULL;
	size_t cap = st.st_size > 0 ? (size_t)st.st_size + 1 : 1 << 12, n = 0;
	char *s = malloc(cap + 1);
	while (s) {
		ssize_t r = pread(fd, s + n, cap - n, (off_t)n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			free(s);
			return NULL;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > CACHE_ENTRY_MAX) { /* grown since fstat */
			free(s);
			return NULL;
		}
		if (n == cap) {
			char *t = realloc(s, (cap *= 2) + 1);
			if (!t)
				free(s);
			s = t;
		}
	}
	if (!s)
		return NULL;
	s[n] = 0;
	if (len)
		*len = n;
	return s;
}

char *cache_read(const char *path, size_t *len)
{
	int fd = cache_open(path);
	if (fd < 0)
		return NULL;
	char *s = cache_read_fd(fd, len);
	close(fd);
	return s;
}

/* ---- seals: "\n// assoc-cache <key> <sum>\n", a comment to C++ and PTX ---- */

static uint64_t seal_sum(uint64_t key, const void *data, size_t len)
{
	unsigned char k[8];
	for (int i = 0; i < 8; i++)
		k[i] = (unsigned char)(key >> 8 * i);
	return cache_hash(cache_hash(CACHE_HASH_INIT, k, 8), data, len);
}

void cache_seal(char out[CACHE_SEAL_LEN + 1], uint64_t key, const void *data, size_t len)
{
	snprintf(out, CACHE_SEAL_LEN + 1, "\n// assoc-cache %016llx %016llx\n", (unsigned long long)key,
		 (unsigned long long)seal_sum(key, data, len));
}

int cache_sealed(const void *data, size_t len, uint64_t key)
{
	char want[CACHE_SEAL_LEN + 1];
	if (len < CACHE_SEAL_LEN)
		return 0;
	cache_seal(want, key, data, len - CACHE_SEAL_LEN);
	return !memcmp((const char *)data + len - CACHE_SEAL_LEN, want, CACHE_SEAL_LEN);
}

int cache_write_sealed(const char *path, uint64_t key, const void *data, size_t len)
{
	char *s = malloc(len + CACHE_SEAL_LEN + 1);
	if (!s)
		return -1;
	memcpy(s, data, len);
	cache_seal(s + len, key, data, len);
	int rc = cache_write(path, s, len + CACHE_SEAL_LEN);
	free(s);
	return rc;
}

/* Why the entry at path is not used, into why: what is there in its place
 * (errno from cache_open). */
static void refused(const char *path, int err, char *why, size_t wn)
{
	struct stat st;
	if (!why)
		return;
	if (lstat(path, &st))
		snprintf(why, wn, "cache entry %s cannot be read: %s", path, strerror(err));
	else if (S_ISLNK(st.st_mode))
		snprintf(why, wn, "cache entry %s is a symbolic link", path);
	else if (S_ISDIR(st.st_mode))
		snprintf(why, wn, "cache entry %s is a directory", path);
	else if (!S_ISREG(st.st_mode))
		snprintf(why, wn, "cache entry %s is not a regular file", path);
	else if (st.st_uid != geteuid())
		snprintf(why, wn, "cache entry %s belongs to another user", path);
	else if (st.st_mode & (S_IWGRP | S_IWOTH))
		snprintf(why, wn, "cache entry %s can be written by other users", path);
	else
		snprintf(why, wn, "cache entry %s cannot be read: %s", path, strerror(err));
}

/* The sealed entry at path: its fd and its bytes (seal included) in
 * *data; or -1 with why (cache_read_entry). */
static int open_entry(const char *path, uint64_t key, char **data, size_t *len, char *why, size_t wn)
{
	if (why && wn)
		why[0] = 0;
	*data = NULL;
	int fd = cache_open_own(path);
	if (fd < 0) {
		if (errno != ENOENT)
			refused(path, errno, why, wn);
		return -1;
	}
	*data = cache_read_fd(fd, len);
	if (!*data || !cache_sealed(*data, *len, key)) {
		if (why && *data)
			snprintf(why, wn, "cache entry %s failed its seal (cut short, damaged or another key's)", path);
		else if (why)
			snprintf(why, wn, "cache entry %s cannot be read whole", path);
		free(*data);
		*data = NULL;
		close(fd);
		return -1;
	}
	return fd;
}

int cache_open_sealed(const char *path, uint64_t key, char *why, size_t wn)
{
	char *data;
	size_t len;
	int fd = open_entry(path, key, &data, &len, why, wn);
	free(data);
	return fd;
}

char *cache_read_entry(const char *path, uint64_t key, size_t *len, char *why, size_t wn)
{
	char *s;
	size_t l;
	int fd = open_entry(path, key, &s, &l, why, wn);
	if (fd < 0)
		return NULL;
	close(fd);
	s[l - CACHE_SEAL_LEN] = 0;
	if (len)
		*len = l - CACHE_SEAL_LEN;
	return s;
}

char *cache_read_sealed(const char *path, uint64_t key, size_t *len) { return cache_read_entry(path, key, len, NULL, 0); }

int cache_put_sealed(const char *path, uint64_t key, const void *data, size_t len, const char *why)
{
	int rc = cache_write_sealed(path, key, data, len);
	char w[PATH_MAX + 600];
	if (why && why[0]) /* said each time: a disk or a process that damages the cache shows */
		fprintf(stderr, "assoc: warning: %s; rebuilt%s%s\n", why, rc ? ", but it could not be replaced: " : "",
			rc ? strerror(errno) : "");
	else if (rc) {
		snprintf(w, sizeof w, "cannot write %s: %s", path, strerror(errno));
		cache_warn(w);
	}
	return rc;
}
