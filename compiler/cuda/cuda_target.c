/* cuda_target.c: `assoc emit --target cuda|ptx`: the
 * module's CUDA C, or its PTX through NVRTC; --stats prints, per kernel,
 * registers, spills and shared memory (ptxas -v) and global accesses per
 * element. */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compiler/util/cache.h"
#include "compiler/cli/cli.h"
#include "compiler/cuda/cuda.h"
#include "compiler/cli/emit.h"
#include "compiler/cuda/nvrtc.h"

extern char **environ;

/* ---- ptxas statistics ---- */

static const char *find_ptxas(char *buf, size_t n)
{
	const char *home = getenv("CUDA_HOME");
	const char *path = getenv("PATH");
	char dirs[4096];
	snprintf(dirs, sizeof dirs, "%s:%s/bin:/usr/local/cuda/bin", path ? path : "", home && *home ? home : "/nonexistent");
	for (char *s = dirs, *e; s && *s; s = e ? e + 1 : NULL) {
		e = strchr(s, ':');
		if (e)
			*e = 0;
		snprintf(buf, n, "%s/ptxas", s);
		if (*s && access(buf, X_OK) == 0)
			return buf;
	}
	return NULL;
}

/* The statistics in ptxas -v's log (modifies log).  Each entry's report
 * lists the functions it still calls after it, with their own frames and
 * spills: those count for the entry too; its cumulative stack size covers
 * them all. */
int cuda_ptxas_parse(char *log, CudaKStat *st, int max)
{
	int k = -1, cum = 0; /* entry k's cumulative stack size; its frames add up in st[k].stack */
	for (char *line = strtok(log, "\n"); line; line = strtok(NULL, "\n")) {
		char *p;
		int frame, sst, sld;
		if ((p = strstr(line, "Compiling entry function '")) && k + 1 < max) {
			if (k >= 0 && cum > st[k].stack)
				st[k].stack = cum;
			k++, cum = 0;
			memset(&st[k], 0, sizeof st[k]);
			sscanf(p + 26, "%63[^']", st[k].name);
		} else if (k >= 0 && (p = strstr(line, "Used "))) {
			sscanf(p, "Used %d registers", &st[k].regs);
			if ((p = strstr(line, " bytes smem")))
				while (p > line && p[-1] >= '0' && p[-1] <= '9')
					p--, st[k].smem = atoi(p);
			if ((p = strstr(line, " bytes cumulative stack size"))) {
				while (p > line && p[-1] >= '0' && p[-1] <= '9')
					p--;
				cum = atoi(p);
			}
		} else if (k >= 0 && strstr(line, "bytes stack frame") &&
			   sscanf(line, " %d bytes stack frame, %d bytes spill stores, %d bytes spill loads", &frame, &sst,
				  &sld) == 3) {
			st[k].stack += frame;
			st[k].spill_st += sst;
			st[k].spill_ld += sld;
		}
	}
	if (k >= 0 && cum > st[k].stack)
		st[k].stack = cum;
	return k + 1;
}

int cuda_ptxas_stats(const char *ptx, const char *arch, CudaKStat *st, int max, char *msg, size_t n)
{
	char ptxas[4200], dir[4096], in[4200], log[4200];
	if (!find_ptxas(ptxas, sizeof ptxas)) {
		snprintf(msg, n, "ptxas not found (PATH, $CUDA_HOME/bin, /usr/local/cuda/bin)");
		return -1;
	}
	/* ptxas's input and log in a folder of their own, made private by
	 * mkdtemp and removed after: nothing to keep, so the cache (which may
	 * be unusable, open to other users) has no part in it */
	if (cache_build_dir("ptxas", dir, sizeof dir)) {
		snprintf(msg, n, "cannot make a folder for ptxas's files (%s): %s", dir, strerror(errno));
		return -1;
	}
	snprintf(in, sizeof in, "%s/stats.ptx", dir);
	snprintf(log, sizeof log, "%s/stats.log", dir);
	/* an interrupt while ptxas runs takes the folder too */
	int slots[3] = {cache_temp_register(dir), cache_temp_register(in), cache_temp_register(log)};
	if (cache_write(in, ptx, strlen(ptx))) {
		snprintf(msg, n, "cannot write %s", in);
		rmdir(dir);
		for (int i = 0; i < 3; i++)
			cache_temp_forget(slots[i]);
		return -1;
	}
	char archopt[64];
	snprintf(archopt, sizeof archopt, "-arch=%s", arch && *arch ? arch : "sm_90");
	char *argv[] = {ptxas, archopt, "-v", in, "-o", "/dev/null", NULL};
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	pid_t pid;
	int st_code = -1, rc = posix_spawn(&pid, ptxas, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (!rc)
		while (waitpid(pid, &st_code, 0) < 0)
			;
	char *text = cache_read(log, NULL);
	unlink(in);
	unlink(log);
	rmdir(dir);
	for (int i = 0; i < 3; i++)
		cache_temp_forget(slots[i]);
	if (rc || !WIFEXITED(st_code) || WEXITSTATUS(st_code)) {
		snprintf(msg, n, "ptxas failed:\n%.3000s", text ? text : "");
		free(text);
		return -1;
	}
	int k = text ? cuda_ptxas_parse(text, st, max) : 0;
	free(text);
	return k;
}

static void print_stats(const CudaModule *m, const CudaKStat *ks, int nks, const char *why)
{
	fprintf(stderr, "%-34s %-44s %5s %6s %6s %5s %5s\n", "kernel", "configuration", "regs", "spills", "smem",
		"loads", "stores");
	for (int v = 0; v < m->nvar; v++) {
		char names[3][64], cfg[128];
		int nk = cuda_kernel_names(m, v, names);
		variant_str(&m->var[v], cfg, sizeof cfg);
		CudaPlan p;
		cuda_plan(m, v, 1, 4096, m->var[v].fam == FAM_SPLITK || m->var[v].fam == FAM_SCAN ? 4 : 1, &p);
		for (int k = 0; k < nk; k++) {
			const CudaKStat *s = NULL;
			for (int j = 0; j < nks; j++)
				if (!strcmp(ks[j].name, names[k]))
					s = &ks[j];
			if (s)
				fprintf(stderr, "%-34s %-44s %5d %6d %6d", names[k], k ? "" : cfg, s->regs,
					s->spill_st + s->spill_ld, s->smem + (k == 0 ? (int)cuda_smem(m, v) : 0));
			else
				fprintf(stderr, "%-34s %-44s %5s %6s %6s", names[k], k ? "" : cfg, "-", "-", "-");
			if (k == 0)
				fprintf(stderr, " %5.0f %6.0f\n", p.loads, p.stores);
			else
				fprintf(stderr, "\n");
		}
	}
	fprintf(stderr, "(smem: static and dynamic shared bytes per block; loads, stores: global accesses per element "
			"of each element input and map output, split variants with 4 chunks)\n");
	if (why)
		fprintf(stderr, "(registers, spills, shared memory: %s)\n", why);
}

/* --header: m's kernels named after the carrier (named), and their
 * launch contract written to the header's file once the module is out. */
static int named(Carrier *c, const Opts *o, CudaModule *m, char *msg, size_t n)
{
	return o->header ? cuda_module_name(m, c->name, msg, n) : 0;
}

/* The header's file opened before the module is written anywhere: a
 * path that cannot be written (a directory, a missing folder) leaves no
 * module on standard output either.  0, or -1 with msg. */
static int header_open(const Opts *o, OutFile *of, char *msg, size_t n)
{
	if (!o->header)
		return 0;
	if (outfile_open(of, o->header, "w")) {
		snprintf(msg, n, "%s: cannot write: %s", o->header, outfile_why(of, errno));
		return -1;
	}
	return 0;
}

/* The header written to its file opened by header_open, and put in place. */
static int header(Carrier *c, const Opts *o, OutFile *of, CudaModule *m, char *msg, size_t n)
{
	if (!o->header)
		return 0;
	cuda_header(c, m, of->f);
	if (outfile_close(of, 1)) {
		snprintf(msg, n, "%s: cannot write: %s", o->header, strerror(errno));
		return -1;
	}
	return 0;
}

/* The module emit writes for arch (NULL: the newest), its kernels named
 * after the carrier where --header asks; 0, or -1 with msg and nothing to
 * free. */
static int module_to_emit(Carrier *c, const Opts *o, const char *arch, CudaModule *m, char *msg, size_t n)
{
	if (cuda_module_for(c, o->run.config, arch, 0, m, msg, n))
		return -1;
	if (named(c, o, m, msg, n)) {
		cuda_module_free(m);
		return -1;
	}
	static int said; /* once, where several archs are emitted */
	char note[640];
	if (!said && m->nvar == 1 && cuda_config_note(m, 0, o->run.config, "emitting", note, sizeof note)) {
		fprintf(stderr, "assoc: note: %s\n", note); /* what is emitted instead, as run says */
		said = 1;
	}
	return 0;
}

static void explain(Carrier *c, const Opts *o, const CudaModule *m)
{
	if (!o->explain)
		return;
	fprintf(stderr, "assoc: %s: %s\n", c->file, m->explain[0] ? m->explain : "template by the carrier's shape");
	if (m->base != FAM_ATTN && m->base != FAM_SCAN) {
		fprintf(stderr, "assoc: %s: %s: %s\n", c->file,
			m->commutes ? "positions in any order, the merge commutes"
				    : "each thread folds a contiguous run, the merge not known to commute",
			m->order_why);
		fprintf(stderr, "assoc: %s: transported fold: %s%s\n", c->file, m->tf ? "" : "none, ", m->tf_why);
	}
	for (int v = 0; v < m->nvar; v++) {
		char why[768];
		cuda_variant_explain(m, v, why, sizeof why);
		fprintf(stderr, "assoc: %s: variant %s\n", c->file, why);
	}
}

static int emit_cuda(Carrier *c, const Opts *o, void *early, FILE *out, char *msg, size_t n)
{
	CudaModule m;
	(void)early;
	OutFile of;
	if (module_to_emit(c, o, o->arch, &m, msg, n))
		return EXIT_USAGE;
	if (header_open(o, &of, msg, n)) {
		cuda_module_free(&m);
		return EXIT_USAGE;
	}
	explain(c, o, &m);
	fputs(m.src, out);
	if (o->stats)
		print_stats(&m, NULL, 0, "use --target ptx");
	int rc = header(c, o, &of, &m, msg, n) ? EXIT_USAGE : EXIT_OK;
	cuda_module_free(&m);
	return rc;
}

/* The module and its compile, begun while the verdict is reached: NVRTC's
 * load and compile take most of a spec's way to PTX, and the laws' trials
 * run meanwhile on another core. */
typedef struct {
	CudaModule m;
	NvrtcJob *job;
} Early;

static void *start_ptx(Carrier *c, const Opts *o)
{
	Early *e = calloc(1, sizeof *e);
	char msg[512];
	if (!e)
		abort();
	/* a module that cannot be made now is made, and its error said, by emit */
	if (module_to_emit(c, o, o->arch, &e->m, msg, sizeof msg)) {
		free(e);
		return NULL;
	}
	if (!(e->job = nvrtc_start(e->m.src, o->arch))) {
		cuda_module_free(&e->m);
		free(e);
		return NULL;
	}
	return e;
}

static void drop_ptx(void *early)
{
	Early *e = early;
	char *ptx, msg[64];
	int cached;
	if (!e)
		return;
	nvrtc_finish(e->job, NULL, &ptx, &cached, msg, sizeof msg);
	free(ptx);
	cuda_module_free(&e->m);
	free(e);
}

static int emit_ptx(Carrier *c, const Opts *o, void *early, FILE *out, char *msg, size_t n)
{
	Early *e = early;
	CudaModule m;
	Nvrtc *nv = NULL;
	char *ptx = NULL;
	int rc = EXIT_UNABLE, cached, failed;
	if (e) {
		m = e->m;
		failed = nvrtc_finish(e->job, &nv, &ptx, &cached, msg, n);
		free(e);
	} else {
		if (module_to_emit(c, o, o->arch, &m, msg, n))
			return EXIT_USAGE;
		failed = nvrtc_open(&nv, msg, n) || nvrtc_ptx(nv, m.src, o->arch, &ptx, &cached, msg, n);
	}
	explain(c, o, &m);
	OutFile of;
	if (failed)
		goto out;
	if (header_open(o, &of, msg, n)) {
		rc = EXIT_USAGE;
		goto out;
	}
	fputs(ptx, out);
	if (o->stats) {
		CudaKStat ks[64];
		char why[4096] = "";
		int nks = cuda_ptxas_stats(ptx, o->arch, ks, 64, why, sizeof why);
		print_stats(&m, ks, nks < 0 ? 0 : nks, nks < 0 ? why : NULL);
	}
	rc = header(c, o, &of, &m, msg, n) ? EXIT_USAGE : EXIT_OK;
out:
	free(ptx);
	nvrtc_close(nv);
	cuda_module_free(&m);
	return rc;
}

const Target target_cuda = {.name = "cuda", .emit = emit_cuda};
const Target target_ptx = {.name = "ptx", .start = start_ptx, .drop = drop_ptx, .emit = emit_ptx};
