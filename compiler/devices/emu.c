/* emu.c: build, cache and load emulator modules; launch their kernels. */
#include "compiler/devices/emu.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
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
	int (*launch)(void (*)(const void *), const char *, unsigned, unsigned, unsigned, const void *, unsigned long long *,
		      char *, size_t);
};

static const char CXXFLAGS[] = "-std=c++17 -O2 -fPIC -shared -w -fno-exceptions -fno-rtti";

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

static int build(const char *cxx, const char *text, size_t len, const char *dir, const char *stem, const char *so,
		 char *msg, size_t n)
{
	char src[4200], tmp[4300], log[4300];
	snprintf(src, sizeof src, "%s/%s.cpp", dir, stem);
	/* dot names: writes in progress, which cache_prune leaves alone */
	snprintf(tmp, sizeof tmp, "%s/.%s.so.tmp.%ld", dir, stem, (long)getpid());
	snprintf(log, sizeof log, "%s/.%s.log.%ld", dir, stem, (long)getpid());
	if (cache_write(src, text, len)) {
		snprintf(msg, n, "emulator: cannot write %s", src);
		return -1;
	}
	int rc = compile(cxx, src, tmp, log);
	if (rc) {
		char *l = cache_read(log, NULL);
		snprintf(msg, n, "emulator: %s could not build the generated code (%s):\n%.3000s", cxx, src, l ? l : "");
		free(l);
	} else if (rename(tmp, so)) {
		snprintf(msg, n, "emulator: cannot write %s", so);
		rc = -1;
	} else {
		char name[128];
		snprintf(name, sizeof name, "%s.so", stem);
		cache_prune(dir, name);
	}
	unlink(tmp);
	unlink(log);
	return rc;
}

int emu_open(const char *cuda, EmuLib **lib, char *msg, size_t n)
{
	char cxx[1024], dir[4096], so[4200], stem[64];
	*lib = NULL;
	if (!find_cxx(cxx, sizeof cxx)) {
		emu_available(msg, n);
		return -1;
	}
	const Blob *hdr = blob_find("emu");
	size_t len = hdr->len + strlen(cuda) + 64;
	char *text = malloc(len);
	if (!text)
		abort();
	len = (size_t)snprintf(text, len, "%s\n#line 1 \"generated.cu\"\n%s", hdr->text, cuda);
	uint64_t h = cache_hash(CACHE_HASH_INIT, text, len);
	h = cache_hash(h, CXXFLAGS, sizeof CXXFLAGS);
	h = cache_hash(h, cxx, strlen(cxx));
	snprintf(stem, sizeof stem, "%016llx", (unsigned long long)h);
	int rc = cache_dir("emu", dir, sizeof dir, msg, n);
	if (!rc) {
		snprintf(so, sizeof so, "%s/%s.so", dir, stem);
		if (access(so, R_OK))
			rc = build(cxx, text, len, dir, stem, so, msg, n);
		else
			cache_used(so);
	}
	free(text);
	if (rc)
		return -1;
	void *hd = dlopen(so, RTLD_NOW | RTLD_LOCAL);
	if (!hd) {
		snprintf(msg, n, "emulator: cannot load %s: %s", so, dlerror());
		return -1;
	}
	EmuLib *l = calloc(1, sizeof *l);
	if (!l)
		abort();
	l->h = hd;
	*(void **)&l->launch = dlsym(hd, "emu_launch");
	if (!l->launch) {
		snprintf(msg, n, "emulator: %s has no emu_launch", so);
		emu_close(l);
		return -1;
	}
	*lib = l;
	return 0;
}

void emu_close(EmuLib *lib)
{
	if (!lib)
		return;
	dlclose(lib->h);
	free(lib);
}

int emu_launch_kernel(EmuLib *lib, const char *kernel, unsigned grid, unsigned block, unsigned smem, const void *args,
		      unsigned long long bytes[2], char *msg, size_t n)
{
	char sym[128];
	snprintf(sym, sizeof sym, "%s_emu", kernel);
	void (*fn)(const void *);
	*(void **)&fn = dlsym(lib->h, sym);
	if (!fn) {
		snprintf(msg, n, "emulator: no kernel %s in the module", kernel);
		return -1;
	}
	if (!grid)
		return 0;
	return lib->launch(fn, kernel, grid, block, smem, args, bytes, msg, n);
}
