/* main.c: the assoc command line.  The only file that exits. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <libgen.h>
#include <limits.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compiler/cli/cli.h"
#include "compiler/util/cache.h"
#include "compiler/cuda/nvrtc.h"
#include "compiler/devices/paged.h"
#include "compiler/explore/explore.h"
#include "compiler/front/yaml.h"
#include "runtime/cpu.h"

#define ASSOC_VERSION "0.1.0"

static const char usage[] =
	"usage: assoc <command> [options] SPEC...\n"
	"\n"
	"commands:\n"
	"  check SPEC...   prove each carrier's laws (identity, associativity, claimed\n"
	"                  commutativity) symbolically and test them on random reachable\n"
	"                  states; check soundness against `reference` and float32 error\n"
	"  run SPEC        run the carrier on arrays through a device and compare every\n"
	"                  output with the float64 reference\n"
	"  emit SPEC       print generated code (--target cuda, ptx, llvm, asm) to -o FILE or stdout\n"
	"  bench SPEC      throughput beside a copy of the same bytes (--device cpu: and naive C;\n"
	"                  --device gpu: a device-to-device copy; attention: TFLOP/s)\n"
	"  tune SPEC       time every GPU variant for --rows/--len and cache the fastest\n"
	"  explore LOOP    derive a merge from a loop spec's step (affine maps, an inverse,\n"
	"                  generalizing the step, enumeration, auxiliary fields); -o FILE\n"
	"                  writes the carrier spec (-o -: to stdout, the report to stderr)\n"
	"\n"
	"options (each for the commands named before its text, the first three for all;\n"
	"an option given to another command, or twice, is a usage error; --name=value\n"
	"works too, -- ends the options, and --help after a command prints its own):\n"
	"  -D NAME=VALUE   override a dim (e.g. -D d=128)\n"
	"  --param NAME=V  fix a param instead of drawing it (e.g. --param eps=1e-5)\n"
	"  --seed N        seed of the random draws (default 1); runs are reproducible\n"
	"  --json          check: one JSON object per spec on standard output; bench: the figures\n"
	"  --trials N      check, emit, run: associativity and commutativity trials (default\n"
	"                  20000; emit: at most 2000; run: at most 300)\n"
	"  --proof         check: print the proof trace (regions, constraints, normal forms)\n"
	"  --strict        check: a law that is only unknown (unproved, not disproved) fails\n"
	"  --device D      run: interp, emu, cpu, gpu or auto (default auto); bench: cpu, gpu or auto\n"
	"  --rows R --len N          run, bench, tune: the shape (default 4 x 1000); attention: queries x keys\n"
	"  --heads H --kv-heads G    run, bench, tune: attention heads, G key/value heads shared\n"
	"                            by H/G query heads each\n"
	"  --page-size P --batch B   run, bench, tune: attention over a paged key/value cache, pages\n"
	"                            of P keys (16 to 256, a power of two), B sequences (default 1)\n"
	"                            of up to --len keys and --rows queries each; run reads\n"
	"                            the layout from --input block_table=, seq_lens=,\n"
	"                            cu_seqlens_q=\n"
	"  --threads T --split K     run, bench: CPU threads (0, the default: one a core); splits of the\n"
	"                            reduced axis (0, the default: as the device's rules choose)\n"
	"  --input NAME=FILE.npy     run, bench: an input array instead of random values; its shape\n"
	"                            sets --rows and --len, and a leading head axis --heads (or\n"
	"                            --kv-heads for column inputs), which must agree where given\n"
	"  --output NAME=FILE.npy    run: write an array: an output, or an input as drawn\n"
	"  --config VARIANT          run, bench, emit: a kernel variant by name (see emit --stats;\n"
	"                            cpu, emit --target llvm and asm: lanes=,accs=,tile=,rows=,unroll=,tf=;\n"
	"                            lanes, accs and rows powers of two)\n"
	"  --deterministic           run, bench (gpu): the rule's variant, whatever was tuned (run takes\n"
	"                            it on every device; off the gpu, without --mpi, it changes nothing)\n"
	"  --verbose                 run: say which variant ran and what it moved\n"
	"  --mpi                     run, under mpirun: each rank folds a slice of every row's\n"
	"                            positions (cpu, interp; gpu, emu: reductions), states merged\n"
	"                            across ranks (gpu: gathered by NCCL where it is found);\n"
	"                            with --deterministic the same bits for any rank count\n"
	"  --mpi-collective C        run --mpi on gpu, emu: gather (the default: states gathered,\n"
	"                            merged in rank order) or reduce (a (max, +) carrier: all-reduce\n"
	"                            MAX of m, then SUM of the rescaled sums; not bit-deterministic)\n"
	"  --target T                emit: cuda, ptx, llvm or asm\n"
	"  -o FILE                   emit: where the code goes (default stdout); explore: the\n"
	"                            derived carrier spec (-o -: stdout, the report to stderr)\n"
	"  --stats                   emit --target cuda, ptx: each kernel's registers, spills,\n"
	"                            shared memory (ptx) and global accesses an element, on stderr;\n"
	"                            alone, ptx\n"
	"  --explain                 emit --target cuda, ptx: the template and each variant, and why,\n"
	"                            on stderr; alone, only that is printed\n"
	"  --arch A                  emit --target cuda, ptx; run --device emu: the target, sm_NN[a];\n"
	"                            sm_90a takes attention prefill to the Hopper template\n"
	"  --header FILE             emit --target cuda, ptx: kernels named after the carrier, and\n"
	"                            their launch contract (arguments, grids, workspace) as a C header\n"
	"  --budget S                explore: CPU seconds the search may take (default 4); a search\n"
	"                            cut short by it may find more with more\n"
	"  --trust-merge             emit, run, bench, tune: go ahead on a carrier whose verdict fails\n"
	"                            (a law disproved or broken in the trials, or results that\n"
	"                            disagree with the reference, empty rows included), with a\n"
	"                            warning\n"
	"\n"
	"  assoc --help, assoc CMD --help (or assoc help CMD), assoc --version\n"
	"\n"
	"exit status: 0 when every check holds, 1 when one fails, 2 for an invalid spec or usage\n"
	"             or a file that cannot be read or written\n";

const char *cli_heads_clause(char *buf, size_t n, int heads, int kv_heads)
{
	buf[0] = 0;
	if (heads > 1)
		snprintf(buf, n, ", %d heads on %d key/value heads", heads, kv_heads);
	return buf;
}

void cli_write_error(const char *path, int err, const OutFile *of)
{
	fprintf(stderr, "assoc: %s: cannot write: %s", path, of ? outfile_why(of, err) : strerror(err));
	if (of && of->why[0]) {
		fputc('\n', stderr);
		return;
	}
	char buf[PATH_MAX];
	snprintf(buf, sizeof buf, "%s", path);
	const char *dir = dirname(buf);
	if ((err == EACCES || err == EPERM || err == EROFS) && !outfile_in_place(path) &&
	    access(dir, W_OK)) /* the file may be writable: its folder is not */
		fprintf(stderr, " (its folder %s: the file is written there first, then renamed into place)", dir);
	fputc('\n', stderr);
}

/* "assoc: " and the message, then tail; the usage error's status. */
static int say_error(const char *tail, const char *fmt, va_list ap)
{
	fputs("assoc: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputs(tail, stderr);
	return EXIT_USAGE;
}

int input_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = say_error("\n", fmt, ap);
	va_end(ap);
	return rc;
}

int usage_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = say_error("\n(see assoc --help)\n", fmt, ap);
	va_end(ap);
	return rc;
}

/* A path with its folder resolved (links, . and ..): two spellings of a
 * file not made yet come out the same. */
static void resolved(const char *path, char *out, size_t n)
{
	char buf[PATH_MAX], dir[PATH_MAX], base[PATH_MAX];
	snprintf(dir, sizeof dir, "%s", path);
	snprintf(base, sizeof base, "%s", path);
	if (realpath(dirname(dir), buf))
		snprintf(out, n, "%s/%s", buf, basename(base));
	else
		snprintf(out, n, "%s", path);
}

int cli_same_file(const char *a, const char *b)
{
	struct stat x, y;
	if (!stat(a, &x) && !stat(b, &y)) /* hard links and every spelling of it */
		return x.st_dev == y.st_dev && x.st_ino == y.st_ino;
	char p[2 * PATH_MAX + 2], q[2 * PATH_MAX + 2];
	resolved(a, p, sizeof p);
	resolved(b, q, sizeof q);
	return !strcmp(p, q);
}

int cli_output_not_input(const Opts *o, const char *what, const char *path)
{
	for (int i = 0; i < o->nspecs; i++)
		if (cli_same_file(path, o->specs[i]))
			return usage_error("%s %s: that is the spec %s, which would be lost", what, path, o->specs[i]);
	for (int i = 0; i < o->ninputs; i++)
		if (cli_same_file(path, o->inputs[i].path))
			return usage_error("%s %s: that is --input %s's file, which would be lost", what, path, o->inputs[i].name);
	return EXIT_OK;
}

/* The spec's error at its step (or step_right) key, read from the file
 * again; at the file alone where it is past 1 MiB or cannot be read back. */
static void loop_error_at_step(const Carrier *c, const char *text, char *msg, size_t n)
{
	enum { MAX_READ = 1 << 20 };
	char why[128];
	FILE *f = infile_open(c->file, why, sizeof why);
	char *src = f ? malloc(MAX_READ + 1) : NULL;
	size_t len = src ? fread(src, 1, MAX_READ + 1, f) : 0;
	if (f)
		fclose(f);
	YNode *root = NULL;
	Diag d;
	diag_init(&d, c->file);
	Pos at = {0, 0};
	if (src && len <= MAX_READ && !yn_load(&d, src, len, &root) && root && root->kind == YN_MAP)
		for (int k = 0; k + 1 < root->n && !at.line; k += 2)
			if (!strcmp(root->kids[k]->text, "step") || !strcmp(root->kids[k]->text, "step_right"))
				at = root->kids[k]->pos;
	if (at.line) { /* the file read without a diagnostic: d has nothing else */
		diag_error(&d, at, "%s", text);
		snprintf(msg, n, "%s", d.text);
	} else
		snprintf(msg, n, "%s: error: %s\n", c->file, text);
	diag_free(&d);
	yn_free(root);
	free(src);
}

int cli_loop_msg(const Carrier *c, char *msg, size_t n)
{
	if (c->merge)
		return 0;
	char text[PATH_MAX + 200];
	if (explore_unfit_field(c) < 0)
		snprintf(text, sizeof text, "a loop spec (a step without a merge): run 'assoc explore %s' to derive its merge",
			 c->file);
	else /* explore would refuse it */
		snprintf(text, sizeof text, "a loop spec (a step without a merge) with a state field that is not a scalar: "
					    "write its merge in the spec");
	loop_error_at_step(c, text, msg, n);
	return 1;
}

int cli_loop_only(const Carrier *c)
{
	char msg[PATH_MAX * 2 + 256];
	if (!cli_loop_msg(c, msg, sizeof msg))
		return 0;
	fputs(msg, stderr);
	return 1;
}

int cli_params_fit(const Opts *o, const Carrier *c)
{
	for (int k = 0; k < o->nparams; k++)
		for (int p = 0; p < c->nparams; p++) {
			TyKind s = c->params[p].storage;
			if (strcmp(c->params[p].name, o->params[k].name) ||
			    !(s == TY_F32 || s == TY_F16 || s == TY_BF16 || s == TY_F8E4M3))
				continue;
			char *end;
			double v = strtod(o->params[k].value, &end), r = ir_round(s, v);
			/* what is no number is the draw's to say (compiler/check/draw.c) */
			if (*end || !isfinite(v) || v == 0 || (r != 0 && !isinf(r)))
				continue;
			if (r == 0)
				return usage_error("--param %s=%s: under the smallest %s, which would hold it as 0",
						   o->params[k].name, o->params[k].value, ty_kind_name(s));
			return usage_error("--param %s=%s: beyond %s's range", o->params[k].name, o->params[k].value,
					   ty_kind_name(s));
		}
	return EXIT_OK;
}

Carrier *cli_load_any(const Opts *o, const char *path)
{
	Diag d;
	diag_init(&d, path);
	Carrier *c = spec_load_file(path, o->defs, o->ndefs, &d);
	if (!c)
		fputs(d.text ? d.text : "", stderr);
	diag_free(&d);
	if (c && cli_params_fit(o, c)) {
		spec_carrier_free(c);
		return NULL;
	}
	return c;
}

Carrier *cli_load(const Opts *o, const char *path)
{
	Carrier *c = cli_load_any(o, path);
	if (c && cli_loop_only(c)) {
		spec_carrier_free(c);
		return NULL;
	}
	return c;
}

int cli_verdict(Carrier *c, const Opts *o, VerdictOpts *vo, const char *doing, const char *refused, char *msg,
		size_t n)
{
	char why[512] = "";
	CarrierVerdict v;
	if (verdict_run(c, vo, &v, why, sizeof why)) {
		snprintf(msg, n, "%s", why); /* not a law that failed: --trust-merge does not cover it */
		return EXIT_USAGE;
	}
	int rc = EXIT_OK;
	if (v.status == VERDICT_UNKNOWN)
		fprintf(stderr, "assoc: warning: %s\n", v.why);
	else if (v.status == VERDICT_FAILED && o->trust_merge)
		fprintf(stderr, "assoc: warning: %s; %s anyway (--trust-merge)\n", v.why, doing);
	else if (v.status == VERDICT_FAILED) {
		snprintf(msg, n, "%s; refusing to %s (--trust-merge to go ahead anyway)", v.why, refused);
		rc = EXIT_FAIL;
	}
	verdict_free(&v);
	return rc;
}

int cli_fits(const Opts *o, const Carrier *c, int copies)
{
	int heads = o->heads > 0 ? o->heads : 1, kv = o->kv_heads > 0 ? o->kv_heads : heads;
	double need = copies * rundata_need(c, o->rows, o->len, heads, kv);
	double have = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
	if (have > 0 && need > have)
		return usage_error("%d rows x %d positions%s need %.1f GiB of arrays; this machine has %.1f GiB of memory",
				   o->rows, o->len, heads > 1 ? " a head" : "", need / (1 << 30), have / (1 << 30));
	return EXIT_OK;
}

int cli_bench_shape(const Opts *o)
{
	if (o->rows > 0 && o->len > 0)
		return EXIT_OK;
	return usage_error("%s: %d rows x %d positions hold nothing to measure", o->command, o->rows, o->len);
}

void cli_split_fit(Opts *o, int len)
{
	if (len < 1 || o->run.split <= len)
		return;
	fprintf(stderr, "assoc: note: --split %d is more than the %d positions to split; running split=%d\n", o->run.split,
		len, len);
	o->run.split = len;
}

int cli_heads(const Opts *o, int *heads, int *kv)
{
	*heads = o->heads > 0 ? o->heads : 1, *kv = o->kv_heads > 0 ? o->kv_heads : *heads;
	if (*kv > *heads || *heads % *kv) /* a query head past the last key/value head would read outside */
		return usage_error("--heads %d is not a multiple of --kv-heads %d", *heads, *kv);
	return 0;
}

RunData *cli_drawn(const Opts *o, Carrier *c)
{
	int heads, kv;
	if (cli_heads(o, &heads, &kv) || cli_fits(o, c, 1))
		return NULL;
	RunData *d = rundata_new_heads(c, o->rows, o->len, heads, kv);
	char msg[1024];
	/* a param's value, or one that breaks assume: no misused option */
	if (rundata_draw(d, o->check.seed, o->params, o->nparams, msg, sizeof msg)) {
		input_error("%s", msg);
		rundata_free(d);
		return NULL;
	}
	return d;
}

static int parse_int(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v = s ? strtol(s, &end, 10) : 0;
	if (!s || !*s || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

/* NAME=VALUE, split in place in argv. */
static int split_pair(char *s, const char **name, const char **value)
{
	char *eq = s ? strchr(s, '=') : NULL;
	if (!eq || eq == s)
		return -1;
	*eq = 0;
	*name = s;
	*value = eq + 1;
	return 0;
}

typedef enum { O_FLAG, O_INT, O_STR, O_PAIR } OptKind;

/* The commands an option applies to (the usage text's "check:", "run:"...):
 * given to another, it is a usage error rather than silently ignored. */
enum {
	C_CHECK = 1, C_RUN = 2, C_EMIT = 4, C_BENCH = 8, C_EXPLORE = 16, C_TUNE = 32,
	C_ALL = 63, C_SHAPE = C_RUN | C_BENCH | C_TUNE, C_EXEC = C_RUN | C_BENCH
};

typedef struct {
	const char *name;
	OptKind kind;
	long lo, hi;
	size_t off;  /* where the value goes in Opts */
	size_t count; /* for pairs: where the count lives */
	int max;
	int cmds;     /* C_ bits */
} OptSpec;

#define F(field) offsetof(Opts, field)
static const OptSpec options[] = {
	{"--json", O_FLAG, 0, 0, F(json), 0, 0, C_CHECK | C_BENCH},
	{"--proof", O_FLAG, 0, 0, F(proof), 0, 0, C_CHECK},
	{"--strict", O_FLAG, 0, 0, F(strict), 0, 0, C_CHECK},
	{"--stats", O_FLAG, 0, 0, F(stats), 0, 0, C_EMIT},
	{"--trust-merge", O_FLAG, 0, 0, F(trust_merge), 0, 0, C_EMIT | C_RUN | C_BENCH | C_TUNE},
	{"--explain", O_FLAG, 0, 0, F(explain), 0, 0, C_EMIT},
	{"--deterministic", O_FLAG, 0, 0, F(run.deterministic), 0, 0, C_EXEC},
	{"--verbose", O_FLAG, 0, 0, F(run.verbose), 0, 0, C_RUN},
	{"--mpi", O_FLAG, 0, 0, F(mpi), 0, 0, C_RUN},
	{"--mpi-collective", O_STR, 0, 0, F(mpi_collective), 0, 0, C_RUN},
	{"--trials", O_INT, 1, 100000000, F(check.trials), 0, 0, C_CHECK | C_EMIT | C_RUN},
	{"--rows", O_INT, 0, MAX_ROWS, F(rows), 0, 0, C_SHAPE},
	{"--len", O_INT, 0, MAX_LEN, F(len), 0, 0, C_SHAPE},
	{"--heads", O_INT, 1, 1 << 16, F(heads), 0, 0, C_SHAPE},
	{"--kv-heads", O_INT, 1, 1 << 16, F(kv_heads), 0, 0, C_SHAPE},
	{"--page-size", O_INT, 1, 1 << 16, F(page_size), 0, 0, C_SHAPE},
	{"--batch", O_INT, 1, 1 << 20, F(batch), 0, 0, C_SHAPE},
	{"--threads", O_INT, 0, RT_MAX_THREADS, F(run.threads), 0, 0, C_EXEC},
	{"--split", O_INT, 0, MAX_SPLIT, F(run.split), 0, 0, C_EXEC},
	{"--device", O_STR, 0, 0, F(device), 0, 0, C_EXEC},
	{"--config", O_STR, 0, 0, F(run.config), 0, 0, C_EXEC | C_EMIT},
	{"--target", O_STR, 0, 0, F(target), 0, 0, C_EMIT},
	{"--arch", O_STR, 0, 0, F(arch), 0, 0, C_EMIT | C_RUN},
	{"--header", O_STR, 0, 0, F(header), 0, 0, C_EMIT},
	{"-o", O_STR, 0, 0, F(out), 0, 0, C_EMIT | C_EXPLORE},
	{"--budget", O_INT, 1, 3600, F(budget), 0, 0, C_EXPLORE},
	{"-D", O_PAIR, 0, 0, F(defs), F(ndefs), MAX_DEFINES, C_ALL},
	{"--param", O_PAIR, 0, 0, F(params), F(nparams), MAX_DEFINES, C_ALL},
	{"--input", O_PAIR, 0, 0, F(inputs), F(ninputs), MAX_FILES, C_EXEC},
	{"--output", O_PAIR, 0, 0, F(outputs), F(noutputs), MAX_FILES, C_RUN},
};
#undef F

static int set_option(Opts *o, const OptSpec *s, char *val)
{
	char *base = (char *)o;
	long v;
	switch (s->kind) {
	case O_FLAG:
		*(int *)(base + s->off) = 1;
		return 0;
	case O_INT:
		if (parse_int(val, s->lo, s->hi, &v))
			return val ? usage_error("%s needs a whole number from %ld to %ld, got '%s'", s->name, s->lo, s->hi, val)
				   : usage_error("%s needs a whole number from %ld to %ld", s->name, s->lo, s->hi);
		*(int *)(base + s->off) = (int)v;
		return 0;
	case O_STR:
		if (!val || !*val)
			return usage_error("%s needs a %s", s->name, strcmp(s->name, "-o") ? "value" : "file name");
		*(const char **)(base + s->off) = val;
		return 0;
	case O_PAIR: {
		int *n = (int *)(base + s->count);
		/* Define and NamedPath share one layout: two strings */
		const char **first = (const char **)(base + s->off), **slot = first + 2 * *n;
		if (*n == s->max)
			return usage_error("%s: at most %d of them", s->name, s->max);
		if (split_pair(val, &slot[0], &slot[1]))
			return usage_error("%s needs NAME=VALUE, got '%s'", s->name, val ? val : "");
		if (!*slot[1] && (!strcmp(s->name, "--input") || !strcmp(s->name, "--output")))
			return usage_error("%s %s= needs a file name", s->name, slot[0]);
		/* -D's own check (spec.c) names the spec */
		for (int k = 0; k < *n && strcmp(s->name, "-D"); k++)
			if (!strcmp(first[2 * k], slot[0]))
				return usage_error("%s %s is given twice", s->name, slot[0]);
		(*n)++;
		return 0;
	}
	}
	return 0;
}

/* sm_NN or compute_NN, NN from 75 (NVRTC 13's oldest), an optional
 * a or f suffix; whether NVRTC knows that architecture is its own answer. */
static int arch_ok(const char *a)
{
	const char *p = !strncmp(a, "sm_", 3) ? a + 3 : !strncmp(a, "compute_", 8) ? a + 8 : NULL;
	char *end;
	long v = p && *p >= '0' && *p <= '9' ? strtol(p, &end, 10) : 0;
	return v >= 75 && v < 1000 && (!*end || ((*end == 'a' || *end == 'f') && !end[1]));
}

/* parse_opts: --help among a command's options */
enum { EXIT_HELP = -1 };

static int parse_opts(int argc, char **argv, Opts *o, int cmd)
{
	check_defaults(&o->check);
	o->device = "auto";
	o->rows = 4;
	o->len = 1000;
	o->specs = calloc(argc, sizeof *o->specs);
	if (!o->specs)
		abort();
	int specs_only = 0, seed_seen = 0;
	unsigned char seen[sizeof options / sizeof *options] = {0};
	for (int i = 2; i < argc; i++) {
		char *a = argv[i];
		if (!specs_only && (!strcmp(a, "--help") || !strcmp(a, "-h")))
			return EXIT_HELP;
		if (!specs_only && (!strcmp(a, "--seed") || !strncmp(a, "--seed=", 7))) {
			long v;
			if (seed_seen++)
				return usage_error("--seed is given twice");
			if (parse_int(a[6] == '=' ? a + 7 : i + 1 < argc ? argv[++i] : NULL, 0, 0x7fffffffL, &v))
				return usage_error("--seed needs a whole number from 0 to %ld", 0x7fffffffL);
			o->check.seed = (uint64_t)v;
			continue;
		}
		if (a[0] != '-' || !a[1] || specs_only) {
			o->specs[o->nspecs++] = a;
			continue;
		}
		if (!strcmp(a, "--")) { /* what follows is spec files, even one named -x */
			specs_only = 1;
			continue;
		}
		/* --name=value, as getopt_long takes it */
		char *eq = !strncmp(a, "--", 2) ? strchr(a, '=') : NULL;
		if (eq)
			*eq = 0;
		const OptSpec *s = NULL;
		for (size_t k = 0; k < sizeof options / sizeof *options; k++)
			if (!strcmp(a, options[k].name) || (!strcmp(options[k].name, "-D") && !strncmp(a, "-D", 2)))
				s = &options[k];
		if (!s)
			return usage_error("unknown option '%s'", a);
		if (!(s->cmds & cmd))
			return usage_error("%s is not an option of %s", s->name, o->command);
		if (eq && s->kind == O_FLAG)
			return usage_error("%s takes no value", s->name);
		/* the last of two would win unseen; pairs are checked by name */
		if (s->kind != O_PAIR && seen[s - options]++)
			return usage_error("%s is given twice", s->name);
		char *val = NULL;
		if (eq)
			val = eq + 1;
		else if (s->kind != O_FLAG)
			val = !strcmp(s->name, "-D") && a[2] ? a + 2 : i + 1 < argc ? argv[++i] : NULL;
		if (set_option(o, s, val))
			return EXIT_USAGE;
		o->rows_given |= !strcmp(s->name, "--rows");
		o->len_given |= !strcmp(s->name, "--len");
	}
	if (o->out && !*o->out)
		return usage_error("-o needs a file name");
	if (o->arch && !arch_ok(o->arch))
		return usage_error("--arch '%s': sm_NN or compute_NN from 75 (e.g. sm_90, sm_90a)", o->arch);
	/* a GPU's target is its own; the emulator runs as the one named */
	if (o->arch && !strcmp(o->command, "run") && strcmp(o->device, "emu"))
		return usage_error("--arch is an option of run --device emu (a GPU runs as what it is)");
	o->run.arch = o->arch;
	char why[160];
	if (o->page_size && paged_page_size_ok(o->page_size, why, sizeof why))
		return usage_error("--page-size: %s", why);
	if (o->batch && !o->page_size)
		return usage_error("--batch: a batch of sequences over paged keys and values, with --page-size");
	if (o->page_size && o->mpi)
		return usage_error("--page-size: not with --mpi");
	for (int k = 0; k < o->nparams; k++) {
		/* decimal, as -D: strtod, which reads them, would take 0x10 too */
		const char *v = o->params[k].value;
		v += *v == '-' || *v == '+';
		if (v[0] == '0' && (v[1] == 'x' || v[1] == 'X'))
			return usage_error("--param %s=%s: a decimal number (hexadecimal is not taken, as by -D)",
					   o->params[k].name, o->params[k].value);
	}
	o->check.params = o->params;
	o->check.nparams = o->nparams;
	if (!o->nspecs)
		return usage_error("%s needs a spec file", o->command);
	return EXIT_OK;
}

typedef struct {
	const char *name;
	int (*fn)(Opts *);
	int one_spec;
	int bit; /* C_ */
} Command;

static const Command commands[] = {
	{"check", cmd_check, 0, C_CHECK}, {"run", cmd_run, 1, C_RUN},         {"emit", cmd_emit, 1, C_EMIT},
	{"bench", cmd_bench, 1, C_BENCH}, {"explore", cmd_explore, 1, C_EXPLORE}, {"tune", cmd_tune, 1, C_TUNE},
};

/* EXIT_OK once standard output took everything, else EXIT_USAGE (a write
 * that failed, as for any file), said. */
static int flushed(void)
{
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "assoc: standard output: %s\n", strerror(errno));
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

static int help(void)
{
	fputs(usage, stdout);
	return flushed();
}

/* Whether the usage text's option line at p (its leading option names, up
 * to the first word that is not one) names an option of the command bit. */
static int line_applies(const char *p, int bit)
{
	char word[32];
	int any = 0, n;
	while (sscanf(p, " %31s%n", word, &n) == 1 && (word[0] == '-' || (word[0] >= 'A' && word[0] <= 'Z'))) {
		p += n;
		if (word[0] != '-')
			continue; /* a value's placeholder: NAME=VALUE, N, R */
		if (!strcmp(word, "--seed") || !strcmp(word, "--help"))
			return 1;
		for (size_t k = 0; k < sizeof options / sizeof *options; k++)
			if (!strcmp(word, options[k].name))
				any |= (options[k].cmds & bit) != 0;
	}
	return any;
}

/* `assoc CMD --help`, `assoc help CMD`: the command's lines of the usage
 * text and the options it takes, each with its continuation lines. */
static int command_help(const Command *cmd)
{
	printf("usage: assoc %s [options] SPEC%s\n\n", cmd->name, cmd->one_spec ? "" : "...");
	const char *opts = strstr(usage, "\noptions");
	int show = 0;
	size_t l = strlen(cmd->name);
	for (const char *line = strstr(usage, "commands:\n") + 10; line < opts; line = strchr(line, '\n') + 1) {
		const char *end = strchr(line, '\n');
		if (!strncmp(line, "  ", 2) && line[2] != ' ')
			show = !strncmp(line + 2, cmd->name, l) && line[2 + l] == ' ';
		if (show)
			printf("%.*s\n", (int)(end - line), line);
	}
	printf("\noptions of %s:\n", cmd->name);
	const char *line = strchr(strstr(usage, "works too,"), '\n') + 1;
	for (show = 0; *line && line[0] != '\n'; line = strchr(line, '\n') + 1) {
		const char *end = strchr(line, '\n');
		if (!strncmp(line, "  -", 3))
			show = line_applies(line, cmd->bit);
		if (show)
			printf("%.*s\n", (int)(end - line), line);
	}
	printf("\nassoc --help lists every command and option.\n");
	return flushed();
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fputs(usage, stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || (!strcmp(argv[1], "help") && argc == 2))
		return help();
	if (!strcmp(argv[1], "--version")) {
		printf("assoc %s\n", ASSOC_VERSION);
		return flushed();
	}
	const Command *cmd = NULL;
	int asked = !strcmp(argv[1], "help"); /* assoc help CMD */
	if (asked && argc > 3)
		return usage_error("help takes one command, got %d", argc - 2);
	for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
		if (!strcmp(argv[1 + asked], commands[i].name))
			cmd = &commands[i];
	if (!cmd)
		return usage_error("unknown command '%s'", argv[1 + asked]);
	if (asked)
		return command_help(cmd);
	Opts o = {.command = cmd->name};
	int rc = parse_opts(argc, argv, &o, cmd->bit);
	if (rc == EXIT_HELP) {
		free(o.specs);
		return command_help(cmd);
	}
	if (rc == EXIT_OK && cmd->one_spec && o.nspecs != 1)
		rc = usage_error("%s takes one spec, got %d", cmd->name, o.nspecs);
	if (rc == EXIT_OK && !cache_limit_valid()) /* not a silent 1024 in place of what was meant */
		rc = input_error("ASSOC_CACHE_MB=%s: not a whole number of megabytes (0 or more)",
				 getenv("ASSOC_CACHE_MB"));
	if (rc == EXIT_OK)
		rc = cmd->fn(&o);
	if (flushed()) /* generated code or results lost (a full disk) */
		rc = EXIT_USAGE;
	free(o.specs);
	nvrtc_quiesce();
	return rc;
}
