/* emu.c: build, cache and load emulator modules; launch their kernels. */
#include "compiler/devices/emu.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compiler/util/cache.h"
#include "compiler/cuda/cuda.h"

extern char **environ;

struct EmuLib {
	void *h;
	int fd; /* the file loaded, open while it is (its /proc/self/fd name then stays its own) */
	int (*launch)(void (*)(const void *), const char *, unsigned, unsigned, unsigned, const void *, unsigned long long *,
		      char *, size_t);
	int (*launch2)(void (*)(const void *), const char *, unsigned, unsigned, unsigned, unsigned, const void *,
		       unsigned long long *, char *, size_t);
	int (*launch3)(void (*)(const void *), const char *, unsigned, unsigned, unsigned, unsigned, unsigned,
		       const void *, unsigned long long *, char *, size_t);
	unsigned long long (*vec_loads)(void);
};

/* -fwrapv: the spec's integers wrap in two's complement.  The generated
 * code computes them through unsigned helpers (templates/common.cuh), and
 * the flag keeps any signed overflow left elsewhere (a template's own
 * index arithmetic) from being folded as impossible, which would make the
 * emulator disagree with the other devices where they wrap.  -Og: a
 * module is built for every new carrier and variant, and its build is
 * most of a first run.  -O1 took 1.6 times as long (g++ 12, an attention
 * module: 0.98 s against 0.59; online softmax 0.63 against 0.44), -O2
 * 1.5 times -O1, for runs at most an eighth faster on the shapes the
 * emulator takes. */
static const char CXXFLAGS[] = "-std=c++17 -Og -fwrapv -fPIC -shared -w -fno-exceptions -fno-rtti";

static int on_path(const char *prog, char *full, size_t n)
{
	if (strchr(prog, '/')) {
		snprintf(full, n, "%s", prog);
		return access(prog, X_OK) == 0;
	}
	const char *path = getenv("PATH");
	if (!path)
		path = "/usr/bin:/bin";
	for (const char *p = path; *p;) {
		const char *e = strchr(p, ':');
		size_t l = e ? (size_t)(e - p) : strlen(p);
		snprintf(full, n, "%.*s/%s", (int)l, p, prog);
		if (l && access(full, X_OK) == 0)
			return 1;
		p += l + (e != NULL);
	}
	return 0;
}

static const char *find_cxx(char *full, size_t n)
{
	const char *env = getenv("ASSOC_CXX");
	if (env && *env)
		return on_path(env, full, n) ? full : NULL;
	static const char *const cands[] = {"g++", "c++", "clang++"};
	for (size_t i = 0; i < 3; i++)
		if (on_path(cands[i], full, n))
			return full;
	return NULL;
}

int emu_available(char *why, size_t n)
{
	char full[1024];
	if (find_cxx(full, sizeof full))
		return 1;
	snprintf(why, n, "no host C++ compiler (set ASSOC_CXX, or install g++)");
	return 0;
}

/* Run cxx on src into out, the compiler's output into log. */
static int compile(const char *cxx, const char *src, const char *out, const char *log)
{
	char flags[sizeof CXXFLAGS];
	memcpy(flags, CXXFLAGS, sizeof flags);
	char *argv[32];
	int argc = 0;
	argv[argc++] = (char *)cxx;
	for (char *t = strtok(flags, " "); t && argc < 24; t = strtok(NULL, " "))
		argv[argc++] = t;
	argv[argc++] = "-x";
	argv[argc++] = "c++";
	argv[argc++] = (char *)src;
	argv[argc++] = "-o";
	argv[argc++] = (char *)out;
	argv[argc] = NULL;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	pid_t pid;
	int rc = posix_spawn(&pid, cxx, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc)
		return -1;
	int st;
	while (waitpid(pid, &st, 0) < 0)
		;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* dlopen the file open at fd: through /proc/self/fd/N, so that the file
 * loaded is the one whose bytes were checked, not whatever its name holds
 * by then.  The loader knows a library by its name: N is one it has not
 * seen in this process (a library that stayed loaded keeps its name). */
static void *load_fd(int *fd, char *msg, size_t n)
{
	/* names given out, a bit each; under a lock, since two threads that
	 * load at once would otherwise each drop the other's bit from a
	 * shared byte, and a name given out twice loads the first module */
	static unsigned char seen[1 << 13];
	static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;
	int d = *fd;
	if (access("/proc/self/fd", X_OK) == 0) {
		pthread_mutex_lock(&seen_lock);
		for (int from = 3; d < (int)sizeof seen * 8 && seen[d / 8] >> d % 8 & 1;) {
			int e = fcntl(*fd, F_DUPFD_CLOEXEC, from);
			if (d != *fd)
				close(d);
			if (e < 0) {
				pthread_mutex_unlock(&seen_lock);
				snprintf(msg, n, "emulator: cannot load a module: %s", strerror(errno));
				return NULL;
			}
			d = e;
			from = e + 1;
		}
		if (d != *fd) {
			close(*fd);
			*fd = d;
		}
		if (d < (int)sizeof seen * 8)
			seen[d / 8] |= (unsigned char)(1 << d % 8);
		pthread_mutex_unlock(&seen_lock);
	}
	char name[64];
	snprintf(name, sizeof name, "/proc/self/fd/%d", d);
	void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		snprintf(msg, n, "emulator: cannot load a module: %s", dlerror());
	return h;
}

static int write_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w, len -= (size_t)w;
	}
	return 0;
}

/* A folder of this process's own to build in (mode 0700, under $TMPDIR
 * or /tmp), in out; 0, or -1 with msg. */
static int build_dir(char *out, size_t on, char *msg, size_t n)
{
	if (!cache_build_dir("emu", out, on))
		return 0;
	snprintf(msg, n, "emulator: cannot make a folder to build in (%s): %s", out, strerror(errno));
	return -1;
}

/* Build the module in a private folder of its own, which no other user
 * can write in while the compiler reads and writes there by name, and
 * load it; then, where cdir (the cache) is given, put the object there
 * sealed for key, and the source beside it when the build fails (for the
 * reader of the message), saying why where it replaces an entry (why not
 * "": cache_put_sealed).  The loaded file's fd in *fd. */
static void *build(const char *cxx, const char *text, size_t len, uint64_t key, const char *cdir, const char *stem,
		   const char *why, int *fd, char *msg, size_t n)
{
	char dir[PATH_MAX], src[PATH_MAX + 80], so[PATH_MAX + 80], log[PATH_MAX + 80];
	char seal[CACHE_SEAL_LEN + 1];
	void *h = NULL;
	*fd = -1;
	if (build_dir(dir, sizeof dir, msg, n))
		return NULL;
	snprintf(src, sizeof src, "%s/%s.cpp", dir, stem);
	snprintf(so, sizeof so, "%s/%s.so", dir, stem);
	snprintf(log, sizeof log, "%s/%s.log", dir, stem);
	/* an interrupt while the compiler runs (seconds) takes the folder too */
	int slots[4] = {cache_temp_register(dir), cache_temp_register(src), cache_temp_register(so),
			cache_temp_register(log)};
	int fs = open(src, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	cache_seal(seal, key, text, len); /* a C++ comment */
	if (fs < 0 || write_all(fs, text, len) || write_all(fs, seal, CACHE_SEAL_LEN) || close(fs)) {
		snprintf(msg, n, "emulator: cannot write the generated code in %s: %s", dir, strerror(errno));
		if (fs >= 0)
			close(fs);
		goto out;
	}
	if (compile(cxx, src, so, log)) {
		char kept[PATH_MAX + 80] = "";
		if (cdir) { /* kept where the cache is, for the reader of the message */
			snprintf(kept, sizeof kept, "%s/%s.cpp", cdir, stem);
			if (cache_write(kept, text, len))
				kept[0] = 0;
		}
		char *l = cache_read(log, NULL);
		int said = l && l[strspn(l, " \t\r\n")];
		snprintf(msg, n, "emulator: %s could not build the generated code%s%s%s:\n%.3000s", cxx, kept[0] ? " (" : "",
			 kept, kept[0] ? ")" : "",
			 said ? l : "(the compiler said nothing: is the disk that holds $TMPDIR or /tmp full?)");
		free(l);
		goto out;
	}
	*fd = cache_open(so);
	size_t olen = 0;
	char *obj = *fd >= 0 ? cache_read_fd(*fd, &olen) : NULL;
	if (!obj) {
		snprintf(msg, n, "emulator: cannot read the module %s", so);
		goto out;
	}
	h = load_fd(fd, msg, n);
	if (h && cdir) {
		char dest[PATH_MAX + 80];
		snprintf(dest, sizeof dest, "%s/%s.cpp", cdir, stem); /* the source, for a reader of the module */
		cache_write_sealed(dest, key, text, len);
		snprintf(dest, sizeof dest, "%s/%s.so", cdir, stem);
		cache_put_sealed(dest, key, obj, olen, why); /* one that cannot be written only costs time: said */
	}
	free(obj);
out:
	unlink(src);
	unlink(so);
	unlink(log);
	rmdir(dir);
	for (int i = 0; i < 4; i++)
		cache_temp_forget(slots[i]);
	if (!h && *fd >= 0) {
		close(*fd);
		*fd = -1;
	}
	return h;
}

int emu_open(const char *cuda, EmuLib **lib, char *msg, size_t n)
{
	char cxx[1024], dir[PATH_MAX], so[PATH_MAX + 80], stem[64], dmsg[PATH_MAX + 200], why[PATH_MAX + 300] = "";
	*lib = NULL;
	if (!find_cxx(cxx, sizeof cxx)) {
		emu_available(msg, n);
		return -1;
	}
	/* the tensor maps' layout first: emu.hpp reads them */
	const Blob *hdr = blob_find("emu"), *tmap = blob_find("emu_tmap");
	size_t len = tmap->len + hdr->len + strlen(cuda) + 64;
	char *text = malloc(len);
	if (!text)
		abort();
	len = (size_t)snprintf(text, len, "%s\n%s\n#line 1 \"generated.cu\"\n%s", tmap->text, hdr->text, cuda);
	uint64_t h = cache_hash(CACHE_HASH_INIT, text, len);
	h = cache_hash(h, CXXFLAGS, sizeof CXXFLAGS);
	h = cache_hash(h, cxx, strlen(cxx));
	snprintf(stem, sizeof stem, "%016llx", (unsigned long long)h);
	void *hd = NULL;
	int fd = -1, cached = cache_dir("emu", dir, sizeof dir, dmsg, sizeof dmsg) == 0;
	if (cached) {
		snprintf(so, sizeof so, "%s/%s.so", dir, stem);
		/* one planted, cut short or damaged is never loaded */
		if ((fd = cache_open_sealed(so, h, why, sizeof why)) >= 0 && (hd = load_fd(&fd, msg, n)) &&
		    !dlsym(hd, "emu_launch")) {
			dlclose(hd); /* sealed, yet not one of assoc's modules */
			hd = NULL;
		}
		if (!hd && fd >= 0) { /* sealed, yet not loadable: built again, and written over */
			snprintf(why, sizeof why, "cache entry %s is sealed but is not a module that loads", so);
			close(fd);
			fd = -1;
		}
	} else
		cache_warn(dmsg);
	if (!hd)
		hd = build(cxx, text, len, h, cached ? dir : NULL, stem, why, &fd, msg, n);
	free(text);
	if (!hd)
		return -1;
	EmuLib *l = calloc(1, sizeof *l);
	if (!l)
		abort();
	l->h = hd;
	l->fd = fd;
	*(void **)&l->launch = dlsym(hd, "emu_launch");
	*(void **)&l->launch2 = dlsym(hd, "emu_launch2");
	*(void **)&l->launch3 = dlsym(hd, "emu_launch3");
	*(void **)&l->vec_loads = dlsym(hd, "emu_vec_loads");
	if (!l->launch) {
		snprintf(msg, n, "emulator: the module %s has no emu_launch", stem);
		emu_close(l);
		return -1;
	}
	*lib = l;
	return 0;
}

unsigned long long emu_vec_loads_of(EmuLib *lib) { return lib->vec_loads ? lib->vec_loads() : 0; }

void emu_close(EmuLib *lib)
{
	if (!lib)
		return;
	dlclose(lib->h);
	if (lib->fd >= 0)
		close(lib->fd);
	free(lib);
}

int emu_launch_kernel(EmuLib *lib, const char *kernel, unsigned grid, unsigned block, unsigned smem, const void *args,
		      unsigned long long bytes[2], char *msg, size_t n)
{
	return emu_launch_grid(lib, kernel, grid, 1, block, smem, args, bytes, msg, n);
}

int emu_launch_grid(EmuLib *lib, const char *kernel, unsigned grid, unsigned gy, unsigned block, unsigned smem,
		    const void *args, unsigned long long bytes[2], char *msg, size_t n)
{
	return emu_launch_cluster(lib, kernel, grid, gy, block, smem, 1, args, bytes, msg, n);
}

static int launch_cluster(EmuLib *lib, const char *kernel, unsigned grid, unsigned gy, unsigned block, unsigned smem,
			  unsigned cluster, const void *args, unsigned long long bytes[2], char *msg, size_t n);

/* One launch at a time in the process: a module's emulated device (its
 * threads' fibers, shared memory, the race records) is global to the
 * module, and kernels of one spec in two threads share one module (the
 * dlopen of one cached file). */
static pthread_mutex_t launching = PTHREAD_MUTEX_INITIALIZER;

int emu_launch_cluster(EmuLib *lib, const char *kernel, unsigned grid, unsigned gy, unsigned block, unsigned smem,
		       unsigned cluster, const void *args, unsigned long long bytes[2], char *msg, size_t n)
{
	pthread_mutex_lock(&launching);
	int rc = launch_cluster(lib, kernel, grid, gy, block, smem, cluster, args, bytes, msg, n);
	pthread_mutex_unlock(&launching);
	return rc;
}

static int launch_cluster(EmuLib *lib, const char *kernel, unsigned grid, unsigned gy, unsigned block, unsigned smem,
			  unsigned cluster, const void *args, unsigned long long bytes[2], char *msg, size_t n)
{
	char sym[128];
	snprintf(sym, sizeof sym, "%s_emu", kernel);
	void (*fn)(const void *);
	*(void **)&fn = dlsym(lib->h, sym);
	if (!fn) {
		snprintf(msg, n, "emulator: no kernel %s in the module", kernel);
		return -1;
	}
	if (cluster > 1) {
		if (!lib->launch3) {
			snprintf(msg, n, "emulator: the module of kernel %s has no emu_launch3 (no clusters)", kernel);
			return -1;
		}
		return lib->launch3(fn, kernel, grid, gy, block, smem, cluster, args, bytes, msg, n);
	}
	if (gy == 1)
		return lib->launch(fn, kernel, grid, block, smem, args, bytes, msg, n);
	if (!lib->launch2) {
		snprintf(msg, n, "emulator: the module of kernel %s has no emu_launch2 (grids of one row only)", kernel);
		return -1;
	}
	return lib->launch2(fn, kernel, grid, gy, block, smem, args, bytes, msg, n);
}
