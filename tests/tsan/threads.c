/* threads.c: libassoc's handles under threads, for ThreadSanitizer
 * (tests/tsan/run.sh builds and runs it).  Each pattern runs fresh kernels
 * so that their first runs (where a kernel compiles what a shape needs)
 * meet too, and every run's outputs must equal, bit for bit, those of a
 * kernel of the same spec and device run on one thread alone:
 *   pairs    two kernels of one spec (cpu+cpu, cpu+emu, cpu+interp,
 *            emu+emu, emu+interp) run
 *            at once on two threads, each kernel's own threads 1 or 2
 *   compile  two specs compiled at once on two threads (cpu and emu), and
 *            first two handles of one spec on emu, where the cache is
 *            empty: both build the emulator's module and cache it
 *   free     a kernel and its spec freed on one thread while a sibling
 *            kernel of that spec runs on another
 *   check    the spec checked on its own thread while its kernels run
 * Exit 0 when every run gave what the lone run gives; TSan's reports are
 * its own (exit 66 where it found a race). */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/lib/assoc.h"

enum { NSHAPE = 6, ROUNDS = 3 };

/* rows 4 to 15 take the narrower variant of a kernel with rows as lanes */
static const int64_t shape[NSHAPE][2] = {{1, 0}, {3, 7}, {5, 33}, {9, 100}, {2, 31}, {37, 65}};

static int failures;
static pthread_mutex_t said = PTHREAD_MUTEX_INITIALIZER;

static void failed(const char *fmt, const char *a, const char *b, const char *why)
{
	pthread_mutex_lock(&said);
	fprintf(stderr, "threads: ");
	fprintf(stderr, fmt, a, b, why);
	fputc('\n', stderr);
	failures++;
	pthread_mutex_unlock(&said);
}

static size_t elem_size(const char *t)
{
	return !strcmp(t, "bool") || !strcmp(t, "f8e4m3") ? 1 : strstr(t, "16") ? 2 : strstr(t, "32") ? 4 : 8;
}

/* Input e of array a, drawn the same for every run of a shape. */
static void put(void *p, const char *type, size_t e, int a, int64_t len)
{
	double v = sin((double)e * 0.37 + a) * 4;
	if (!strcmp(type, "f32")) {
		((float *)p)[e] = (float)v;
	} else if (!strcmp(type, "f64")) {
		((double *)p)[e] = v;
	} else if (!strcmp(type, "bf16")) {
		float f = (float)v;
		unsigned u;
		memcpy(&u, &f, 4);
		((unsigned short *)p)[e] = (unsigned short)(u >> 16);
	} else if (!strcmp(type, "i32")) {
		((int *)p)[e] = len ? (int)(e * 7 % (size_t)len) : 0;
	} else {
		memset((char *)p + e * elem_size(type), 0, elem_size(type));
	}
}

/* A spec's arrays at one shape: inputs drawn, outputs zeroed. */
typedef struct {
	int n;
	AssocBuffer b[16];
	AssocArray info[16];
} Bufs;

static void bufs_make(Bufs *u, AssocSpec *s, int64_t rows, int64_t len)
{
	u->n = assoc_array_count(s);
	for (int i = 0; i < u->n; i++) {
		assoc_array_info(s, i, &u->info[i]);
		size_t bytes = assoc_array_bytes(s, i, rows, len), z = elem_size(u->info[i].type);
		void *p = calloc(bytes + 16, 1);
		for (size_t e = 0; !u->info[i].is_output && e < bytes / z; e++)
			put(p, u->info[i].type, e, i, len);
		u->b[i] = (AssocBuffer){u->info[i].name, p, bytes};
	}
}

static void bufs_free(Bufs *u)
{
	for (int i = 0; i < u->n; i++)
		free(u->b[i].data);
}

static AssocValue params[] = {{"scale", 0.125}, {"eps", 1e-5}, {"bias", -0.5}};

/* The spec's params from params[], by name. */
static int params_of(AssocSpec *s, AssocValue *out)
{
	int n = assoc_param_count(s);
	for (int i = 0; i < n; i++)
		for (size_t j = 0; j < sizeof params / sizeof *params; j++)
			if (!strcmp(assoc_param_name(s, i), params[j].name))
				out[i] = params[j];
	return n;
}

/* What a kernel gives at each shape: one Bufs a shape. */
typedef struct {
	Bufs at[NSHAPE];
} Outs;

static AssocStatus run_all(AssocKernel *k, AssocSpec *s, Outs *o)
{
	AssocValue pv[8];
	int np = params_of(s, pv);
	for (int i = 0; i < NSHAPE; i++) {
		bufs_make(&o->at[i], s, shape[i][0], shape[i][1]);
		AssocStatus st = assoc_run(k, shape[i][0], shape[i][1], o->at[i].b, o->at[i].n, pv, np);
		if (st)
			return st;
	}
	return ASSOC_OK;
}

static void outs_free(Outs *o)
{
	for (int i = 0; i < NSHAPE; i++)
		bufs_free(&o->at[i]);
	memset(o, 0, sizeof *o);
}

/* Whether o has the outputs of want, bit for bit; says where not. */
static void outs_same(const Outs *o, const Outs *want, const char *spec, const char *dev)
{
	for (int i = 0; i < NSHAPE; i++)
		for (int a = 0; a < o->at[i].n; a++)
			if (o->at[i].info[a].is_output &&
			    memcmp(o->at[i].b[a].data, want->at[i].b[a].data, o->at[i].b[a].bytes)) {
				failed("%s on %s: an output differs from a run alone (%s)", spec, dev, o->at[i].info[a].name);
				return;
			}
}

static AssocSpec *load(const char *path)
{
	AssocSpec *s;
	if (assoc_spec_load(&s, path, NULL, 0)) {
		fprintf(stderr, "threads: %s: %s\n", path, assoc_spec_error(s));
		exit(2);
	}
	return s;
}

/* The outputs of spec on dev, from a kernel run alone. */
static void alone(const char *spec, const char *dev, Outs *o)
{
	AssocSpec *s = load(spec);
	AssocKernel *k;
	if (assoc_compile(s, dev, 1, &k) || run_all(k, s, o)) {
		fprintf(stderr, "threads: %s on %s alone: %s\n", spec, dev, assoc_kernel_error(k));
		exit(2);
	}
	assoc_kernel_free(k);
	assoc_spec_free(s);
}

typedef struct {
	const char *spec, *dev;
	AssocSpec *s;
	AssocKernel *k;
	const Outs *want;
	pthread_barrier_t *go;
	int free_after; /* free k and s once run, while the sibling runs on */
	Outs *got;
} Job;

static void *job_run(void *arg)
{
	Job *j = arg;
	Outs o;
	memset(&o, 0, sizeof o);
	pthread_barrier_wait(j->go);
	if (run_all(j->k, j->s, &o))
		failed("%s on %s: %s", j->spec, j->dev, assoc_kernel_error(j->k));
	else
		outs_same(&o, j->want, j->spec, j->dev);
	outs_free(&o);
	if (j->free_after) {
		assoc_kernel_free(j->k);
		assoc_spec_free(j->s);
	}
	return NULL;
}

/* Two kernels of one spec, run at once; with free_second, the second's
 * thread frees its kernel and the spec when done. */
static void pair(const char *spec, const char *dev[2], int threads[2], Outs *want[2], int free_second)
{
	AssocSpec *s = load(spec);
	pthread_barrier_t go;
	pthread_barrier_init(&go, NULL, 2);
	Job j[2];
	for (int i = 0; i < 2; i++) {
		j[i] = (Job){spec, dev[i], s, NULL, want[i], &go, free_second && i == 1, NULL};
		if (assoc_compile(s, dev[i], threads[i], &j[i].k)) {
			fprintf(stderr, "threads: %s on %s: %s\n", spec, dev[i], assoc_kernel_error(j[i].k));
			exit(2);
		}
	}
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, job_run, &j[i]);
	/* the spec's own thread checks it meanwhile */
	if (!free_second && assoc_spec_check(s, 200, 1) == ASSOC_EINVAL)
		failed("%s: %s%s", spec, "", assoc_spec_error(s));
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&go);
	assoc_kernel_free(j[0].k);
	if (!free_second) {
		assoc_kernel_free(j[1].k);
		assoc_spec_free(s);
	}
}

/* Load, compile and run on a thread of its own; the outputs compared
 * with j->want, or kept in j->got. */
static void *job_compile(void *arg)
{
	Job *j = arg;
	pthread_barrier_wait(j->go);
	j->s = load(j->spec);
	if (assoc_compile(j->s, j->dev, 2, &j->k) || run_all(j->k, j->s, j->got))
		failed("%s on %s: %s", j->spec, j->dev, assoc_kernel_error(j->k));
	else if (j->want)
		outs_same(j->got, j->want, j->spec, j->dev);
	assoc_kernel_free(j->k);
	assoc_spec_free(j->s);
	return NULL;
}

static void compile_two(const char *spec[2], const char *dev[2], Outs *want[2], Outs *got[2])
{
	pthread_barrier_t go;
	pthread_barrier_init(&go, NULL, 2);
	Job j[2];
	pthread_t t[2];
	for (int i = 0; i < 2; i++) {
		j[i] = (Job){spec[i], dev[i], NULL, NULL, want[i], &go, 0, got[i]};
		pthread_create(&t[i], NULL, job_compile, &j[i]);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&go);
}

int main(int argc, char **argv)
{
	/* the specs: a row reduction with a map, one with params in its
	 * laws (judged at a run's values), one whose cpu kernel takes rows as
	 * lanes (a narrower variant compiled at a first run of 4 to 15 rows) */
	const char *specs[] = {"specs/online_softmax.yaml", "specs/layer_norm.yaml", "specs/attention.yaml"};
	const char *devs[] = {"cpu", "emu", "interp"};
	static const int pairs[][2] = {{0, 0}, {0, 1}, {0, 2}, {1, 1}, {1, 2}};
	int nspec = argc > 1 ? atoi(argv[1]) : 3;
	static Outs want[3][3], cold[2];
	/* first, where the cache may be empty: one spec's module built twice at once */
	const char *same[2] = {specs[0], specs[0]}, *emu2[2] = {"emu", "emu"};
	compile_two(same, emu2, (Outs *[2]){NULL, NULL}, (Outs *[2]){&cold[0], &cold[1]});
	for (int s = 0; s < nspec; s++)
		for (int d = 0; d < 3; d++)
			alone(specs[s], devs[d], &want[s][d]);
	for (int i = 0; i < 2; i++)
		outs_same(&cold[i], &want[0][1], specs[0], "emu");
	for (int r = 0; r < ROUNDS; r++)
		for (int s = 0; s < nspec; s++)
			for (size_t p = 0; p < sizeof pairs / sizeof *pairs; p++) {
				const char *dev[2] = {devs[pairs[p][0]], devs[pairs[p][1]]};
				int threads[2] = {1 + r % 2, 2 - r % 2};
				Outs *w[2] = {&want[s][pairs[p][0]], &want[s][pairs[p][1]]};
				pair(specs[s], dev, threads, w, 0);
				pair(specs[s], dev, threads, w, 1);
			}
	static Outs got[2];
	for (int r = 0; r < ROUNDS; r++)
		for (int s = 0; s + 1 < nspec; s++) {
			const char *two[2] = {specs[s], specs[s + 1]}, *dev[2] = {devs[r % 2], devs[1 - r % 2]};
			Outs *w[2] = {&want[s][r % 2], &want[s + 1][1 - r % 2]};
			compile_two(two, dev, w, (Outs *[2]){&got[0], &got[1]});
			outs_free(&got[0]), outs_free(&got[1]);
		}
	for (int s = 0; s < nspec; s++)
		for (int d = 0; d < 3; d++)
			outs_free(&want[s][d]);
	outs_free(&cold[0]), outs_free(&cold[1]);
	printf("threads: %s\n", failures ? "FAILED" : "ok");
	return failures != 0;
}
