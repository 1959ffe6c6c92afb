/* specdir.c: the installed specs as a second place to look (specdir.h). */
#include "compiler/front/specdir.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef ASSOC_SHAREDIR
#define ASSOC_SHAREDIR "/usr/local/share/assoc"
#endif

/* The share directory beside the object that holds this code (libassoc.so,
 * or the program it is linked into): its directory/../share/assoc. */
static int beside_me(char *out, size_t n)
{
	Dl_info info;
	char real[PATH_MAX];
	if (!dladdr((void *)specdir_find, &info) || !info.dli_fname || !realpath(info.dli_fname, real)) {
		ssize_t k = readlink("/proc/self/exe", real, sizeof real - 1);
		if (k <= 0)
			return -1;
		real[k] = 0;
	}
	char *slash = strrchr(real, '/');
	if (!slash)
		return -1;
	*slash = 0;
	snprintf(out, n, "%s/../share/assoc", real);
	return 0;
}

const char *specdir_find(const char *path, char *out, size_t n, char *tried, size_t tn)
{
	if (tn)
		tried[0] = 0;
	struct stat st;
	/* a name that is here, even one that cannot be opened (a loop of links,
	 * no permission), is the one meant: its own error says what is wrong */
	if (path[0] == '/' || access(path, F_OK) == 0 || lstat(path, &st) == 0)
		return path;
	char dirs[2][PATH_MAX + 32];
	int nd = 0;
	snprintf(dirs[nd++], sizeof dirs[0], "%s", ASSOC_SHAREDIR);
	if (!beside_me(dirs[nd], sizeof dirs[0]) && strcmp(dirs[nd], dirs[0]))
		nd++;
	/* "specs/x.yaml" as the repository names it, or "x.yaml" */
	for (int d = 0; d < nd; d++) {
		snprintf(out, n, "%s/%s", dirs[d], path);
		if (access(out, F_OK) == 0)
			return out;
		snprintf(out, n, "%s/specs/%s", dirs[d], path);
		if (access(out, F_OK) == 0)
			return out;
	}
	size_t l = 0;
	for (int d = 0; d < nd && l < tn; d++)
		l += (size_t)snprintf(tried + l, tn - l, "%s%s/specs", d ? " and " : "; not in the working directory nor in ",
				      dirs[d]);
	return path;
}
