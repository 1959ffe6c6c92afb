/* cpu.c: the CPU executor: a pool of threads that take task indices from
 * a shared counter, and whole-array runs of a kernel on it.
 *
 * A run covers one or more views of one shape (the heads of attention),
 * whose rows are tasks together.  A row of more than one chunk
 * (rt_cpu_split) is reduced chunk by chunk in parallel (a kernel's group of
 * rows side by side, where it has reduce_rows), the partial states merged
 * left to right (so
 * non-commutative merges keep their order, and the result does not depend
 * on the thread count), then finalized; its map pass, or its scan from the
 * exclusive prefix of the chunks before it, runs chunk by chunk again.
 * Whole rows of a kernel with a rowmap (at most rowmap_len positions) go
 * through it instead, one task per thread, each with its own scratch
 * buffer, taking blocks of rows from a shared counter.  Whole rows shorter
 * than the kernel's pair_len go two at a time (reduce2, rowmap2) where it
 * has those; longer ones through its rowmap_next where it has that, each
 * row's map going along with the reduce of the thread's next row.  Each
 * task that maps ends with the kernel's fence.
 *
 * A paged batch (rt_cpu_run_paged) is views of different shapes, one a
 * sequence's key/value head, whose rows (groups of rows) and chunks of
 * pages are the tasks, the keys read where its block table puts them. */
#include "cpu.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A task of whole rows covers ROWS_TASK_ELEMS positions or so (8 rows of
 * 32768): a thread then takes consecutive rows, which the kernels'
 * prefetches of the next row count on, and tasks stay many enough to
 * balance the threads. */
enum { CHUNK = 1 << 16, ROWS_TASK_ELEMS = 1 << 18 };

/* Rows are split into chunks only while there are fewer than TASKS of them
 * (rows of all the views together, a group of rows reduced side by side
 * counting as one): enough tasks for the threads of a large machine.  A
 * chunk is CHUNK positions of a state of 16 bytes, fewer for larger
 * states, MIN_CHUNK at the least.  Whole rows keep the kernel's fastest
 * paths (pairs, groups of rows as lanes, the rowmap). */
enum { TASKS = 64, MIN_CHUNK = 1024 };

/* A pool survives fork(): the child has the pool but none of its workers,
 * so every pool is on a list the fork handlers walk.  Before the fork
 * they take the list's lock and each pool's (no job is then being set up
 * or finished); the parent releases them; the child makes them afresh
 * (their waiters are threads it does not have) and counts no workers, so
 * the pool's next job starts them again and its close joins only those. */
struct RtPool {
	int threads;           /* the threads a job runs on, the caller's included */
	int live;              /* workers started in this process */
	pthread_t *tid;        /* tid[1..live] */
	pthread_mutex_t mu;
	pthread_cond_t go, done;
	unsigned long epoch;   /* bumped for each job */
	unsigned long born;    /* the epoch workers start at (they wait for the next) */
	int busy;              /* workers still in the current job */
	int quit;
	void (*fn)(void *ctx, int64_t t);
	void *ctx;
	int64_t ntasks;
	atomic_llong next;
	RtPool *prev, *nextpool;
};

static pthread_mutex_t pools_mu = PTHREAD_MUTEX_INITIALIZER;
static RtPool *pools;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void fork_prepare(void)
{
	pthread_mutex_lock(&pools_mu);
	for (RtPool *p = pools; p; p = p->nextpool)
		pthread_mutex_lock(&p->mu);
}

static void fork_parent(void)
{
	for (RtPool *p = pools; p; p = p->nextpool)
		pthread_mutex_unlock(&p->mu);
	pthread_mutex_unlock(&pools_mu);
}

static void fork_child(void)
{
	for (RtPool *p = pools; p; p = p->nextpool) {
		pthread_mutex_init(&p->mu, NULL);
		pthread_cond_init(&p->go, NULL);
		pthread_cond_init(&p->done, NULL);
		p->live = 0;
		p->busy = 0;
	}
	pthread_mutex_init(&pools_mu, NULL);
}

static void fork_handlers(void) { pthread_atfork(fork_prepare, fork_parent, fork_child); }

static void drain(RtPool *p)
{
	for (;;) {
		int64_t t = atomic_fetch_add(&p->next, 1);
		if (t >= p->ntasks)
			return;
		p->fn(p->ctx, t);
	}
}

static void *worker(void *arg)
{
	RtPool *p = arg;
	pthread_mutex_lock(&p->mu);
	unsigned long seen = p->born;
	for (;;) {
		while (!p->quit && p->epoch == seen)
			pthread_cond_wait(&p->go, &p->mu);
		if (p->quit)
			break;
		seen = p->epoch;
		pthread_mutex_unlock(&p->mu);
		drain(p);
		pthread_mutex_lock(&p->mu);
		if (--p->busy == 0)
			pthread_cond_signal(&p->done);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* Start the workers this process lacks, p->mu held; 0, or the 1-based
 * number of the thread that could not be started. */
static int spawn(RtPool *p)
{
	p->born = p->epoch;
	while (p->live < p->threads - 1) {
		if (pthread_create(&p->tid[p->live + 1], NULL, worker, p))
			return p->live + 2;
		p->live++;
	}
	return 0;
}

/* The CPUs this process may run on: its affinity mask (taskset, a
 * scheduler's cpuset), capped by a cgroup v2 quota (a container's
 * --cpus: "200000 100000" in cpu.max is 2), at least 1.  Every online
 * CPU would start threads that only take turns. */
int rt_cpus_usable(void)
{
	cpu_set_t set;
	long c = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : sysconf(_SC_NPROCESSORS_ONLN);
	FILE *f = fopen("/sys/fs/cgroup/cpu.max", "r");
	if (f) {
		long long quota, period;
		if (fscanf(f, "%lld %lld", &quota, &period) == 2 && quota > 0 && period > 0) {
			long long q = (quota + period - 1) / period;
			c = q < c ? (long)q : c;
		}
		fclose(f);
	}
	return c > 0 ? (int)c : 1;
}

int rt_pool_open(RtPool **out, int threads, char *msg, size_t n)
{
	*out = NULL;
	if (threads <= 0)
		threads = rt_cpus_usable();
	RtPool *p = calloc(1, sizeof *p);
	if (!p || !(p->tid = calloc(threads, sizeof *p->tid))) {
		free(p);
		snprintf(msg, n, "out of memory");
		return -1;
	}
	p->threads = threads;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->go, NULL);
	pthread_cond_init(&p->done, NULL);
	pthread_once(&fork_once, fork_handlers);
	pthread_mutex_lock(&pools_mu);
	p->nextpool = pools;
	if (pools)
		pools->prev = p;
	pools = p;
	pthread_mutex_unlock(&pools_mu);
	pthread_mutex_lock(&p->mu);
	int failed = spawn(p);
	pthread_mutex_unlock(&p->mu);
	if (failed) {
		snprintf(msg, n, "cannot start thread %d of %d", failed, threads);
		rt_pool_close(p);
		return -1;
	}
	*out = p;
	return 0;
}

void rt_pool_close(RtPool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&pools_mu);
	if (p->prev)
		p->prev->nextpool = p->nextpool;
	else
		pools = p->nextpool;
	if (p->nextpool)
		p->nextpool->prev = p->prev;
	pthread_mutex_unlock(&pools_mu);
	pthread_mutex_lock(&p->mu);
	p->quit = 1;
	pthread_cond_broadcast(&p->go);
	int live = p->live;
	pthread_mutex_unlock(&p->mu);
	for (int i = 1; i <= live; i++)
		pthread_join(p->tid[i], NULL);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->go);
	pthread_cond_destroy(&p->done);
	free(p->tid);
	free(p);
}

int rt_pool_threads(const RtPool *p) { return p->threads; }

unsigned long rt_pool_jobs(const RtPool *p) { return p->epoch; }

void rt_pool_run(RtPool *p, int64_t ntasks, void (*fn)(void *ctx, int64_t t), void *ctx)
{
	if (ntasks <= 0)
		return;
	if (p->threads == 1 || ntasks == 1) {
		for (int64_t t = 0; t < ntasks; t++)
			fn(ctx, t);
		return;
	}
	pthread_mutex_lock(&p->mu);
	if (p->live < p->threads - 1)
		spawn(p); /* after a fork; where a thread cannot start, the others do its share */
	p->fn = fn, p->ctx = ctx, p->ntasks = ntasks;
	atomic_store(&p->next, 0);
	p->busy = p->live;
	p->epoch++;
	pthread_cond_broadcast(&p->go);
	pthread_mutex_unlock(&p->mu);
	drain(p);
	pthread_mutex_lock(&p->mu);
	while (p->busy)
		pthread_cond_wait(&p->done, &p->mu);
	pthread_mutex_unlock(&p->mu);
}

/* ---- runs ---- */

/* Chunk tasks a row's chunk: each whole group of rows, and each row after
 * the last whole group. */
static int64_t units_of(const CpuKernel *k, int64_t rows)
{
	int g = rt_cpu_group(k, rows);
	return rows / g + rows % g;
}

int rt_cpu_split(const CpuKernel *k, int64_t rows, int nview, int64_t len, int split)
{
	int64_t s = split;
	if (s <= 0) {
		/* a position costs about as much as its state has bytes to update */
		int64_t sb = k->state_bytes > 16 ? (int64_t)k->state_bytes : 16, chunk = CHUNK * 16 / sb;
		int64_t units = units_of(k, rows) * (nview < 1 ? 1 : nview);
		if (chunk < MIN_CHUNK)
			chunk = MIN_CHUNK;
		s = units >= TASKS ? 1 : (TASKS + units - 1) / (units < 1 ? 1 : units);
		if (s > len / chunk)
			s = len / chunk;
	}
	if (s > len)
		s = len;
	return s < 1 ? 1 : (int)s;
}

/* A run: nview arrays of the same shape (a->rows x a->len, the heads of
 * attention), their tasks in one pool pass, view after view. */
typedef struct {
	const CpuKernel *k;
	const CpuArgs *a; /* the views */
	int nview;
	int64_t rows_per_task, tasks_per_view;
	int split;
	int group;            /* rows a chunk task reduces side by side (rt_cpu_group) */
	int64_t units;        /* chunk tasks' groups of rows a view */
	unsigned char *part;  /* [views][rows][split] partial states */
	unsigned char *fin;   /* [views][rows][2]: each row's merged state, and room to merge */
	unsigned char *scratch; /* rowmap: one buffer of scratch_bytes per task */
	size_t scratch_bytes;
	atomic_llong next;      /* rowmap: the next block of rows_per_task rows, over all views */
} Run;

static void *state(const Run *r, unsigned char *base, int64_t idx) { return base + idx * r->k->state_bytes; }

/* The view of task t of per tasks a view, and t's index in it. */
static const CpuArgs *view_of(const Run *r, int64_t t, int64_t per, int64_t *local)
{
	*local = t % per;
	return &r->a[t / per];
}

static void chunk_bounds(const Run *r, int64_t c, int64_t *lo, int64_t *hi)
{
	*lo = r->a->len * c / r->split;
	*hi = r->a->len * (c + 1) / r->split;
}

/* Stack room for states: a group of 16 rows of attention's state at head
 * dim 128 (130 slots of 8 bytes), past which states() takes malloc's. */
enum { STATES_BUF = 16 * 130 * 8 };

/* Room for n states: buf, or from malloc. */
static unsigned char *states(const CpuKernel *k, int n, unsigned char *buf, size_t size)
{
	unsigned char *st = n * k->state_bytes <= size ? buf : malloc(n * k->state_bytes);
	if (!st)
		abort();
	return st;
}

/* Rows i .. i + n - 1 (n = 1: the kernel's reduce; n = its group:
 * reduce_rows) over [lo, hi), folded into the n states from st; where the
 * mask rules out whole blocks of LIVE_BLOCK positions (k->live) for every
 * one of the rows, only the runs of the other blocks, each reduced,
 * merged left to right (the kernel's mask drops each row's own other
 * positions). */
enum { LIVE_BLOCK = 256 };

static void reduce_some(const CpuKernel *k, const CpuArgs *a, int64_t i, int n, int64_t lo, int64_t hi, void *st)
{
	if (n == 1)
		k->reduce(a, i, lo, hi, st);
	else
		k->reduce_rows(a, i, lo, hi, st);
}

static void reduce_live(const CpuKernel *k, const CpuArgs *a, int64_t i, int n, int64_t lo, int64_t hi, void *st)
{
	size_t sb = k->state_bytes;
	if (!k->live) {
		reduce_some(k, a, i, n, lo, hi, st);
		return;
	}
	_Alignas(64) unsigned char buf[STATES_BUF];
	unsigned char *tmp = NULL, *acc = st;
	int have = 0;
	int64_t run = -1; /* where the run of live blocks being gathered starts */
	for (int64_t b = lo; b < hi; b += LIVE_BLOCK) {
		int64_t e = b + LIVE_BLOCK < hi ? b + LIVE_BLOCK : hi;
		int live = 0;
		for (int g = 0; g < n && !live; g++)
			live = k->live(k->live_ctx, a, i + g, b, e);
		if (live && run < 0)
			run = b;
		if (run < 0 || (live && e < hi))
			continue;
		/* the run ends before this block, or with it at the row's end */
		if (have && !tmp)
			tmp = states(k, n, buf, sizeof buf);
		reduce_some(k, a, i, n, run, live ? e : b, have ? tmp : st);
		for (int g = 0; have && g < n; g++)
			k->merge(a, acc + g * sb, tmp + g * sb, acc + g * sb);
		have = 1, run = -1;
	}
	for (int g = 0; !have && g < n; g++)
		k->identity(a, acc + g * sb);
	if (tmp && tmp != buf)
		free(tmp);
}

/* Whether whole rows go two at a time (rows shorter than pair_len): through
 * reduce2, and through rowmap2.  Not where blocks are skipped. */
static int pairs(const Run *r) { return r->k->reduce2 && !r->k->live && r->a->len < r->k->pair_len; }
static int rowmap_pairs(const Run *r) { return r->k->rowmap2 && r->a->len < r->k->pair_len; }
/* Whether whole rows go through the pipeline (rowmap_next): the other
 * rows, where the kernel has it. */
static int rowmap_pipe(const Run *r) { return r->k->rowmap_next && !rowmap_pairs(r); }

/* Whole rows: reduce, finalize, map (or scan) row by row; short rows
 * reduce two at a time (pairs). */
static void task_rows(void *ctx, int64_t t)
{
	Run *r = ctx;
	const CpuKernel *k = r->k;
	const CpuArgs *a = view_of(r, t, r->tasks_per_view, &t);
	int64_t lo = t * r->rows_per_task, hi = lo + r->rows_per_task;
	if (hi > a->rows)
		hi = a->rows;
	_Alignas(64) unsigned char buf[STATES_BUF];
	int most = k->reduce_rows && k->group > 2 ? k->group : 2;
	unsigned char *st = states(k, most, buf, sizeof buf);
	for (int64_t i = lo; i < hi; i++) {
		if (k->is_scan) {
			k->identity(a, st);
			k->scan(a, i, 0, a->len, st);
			continue;
		}
		int n = pairs(r) && i + 1 < hi ? 2 : 1;
		if (k->reduce_rows && i % k->group == 0 && i + k->group <= hi) {
			n = k->group;
			reduce_live(k, a, i, k->group, 0, a->len, st);
		} else if (n == 2)
			k->reduce2(a, i, st);
		else
			reduce_live(k, a, i, 1, 0, a->len, st);
		for (int p = 0; p < n; p++) {
			k->finalize(a, i + p, i + p, st + p * k->state_bytes);
			if (k->map)
				k->map(a, i + p, 0, a->len, st + p * k->state_bytes);
		}
		i += n - 1;
	}
	if (k->fence && (k->map || k->is_scan))
		k->fence();
	if (st != buf)
		free(st);
}

/* One thread's share of whole rows through the rowmap (two at a time
 * through rowmap2 for short rows): its scratch stays in that thread's
 * cache from row to row.  The pipeline's rows are of one view at a time:
 * a row's map rides along the reduce of the next row of its view. */
static void task_rowmap(void *ctx, int64_t t)
{
	Run *r = ctx;
	const CpuKernel *k = r->k;
	void *scratch = r->scratch + t * r->scratch_bytes;
	_Alignas(64) unsigned char buf[512];
	unsigned char *st = states(k, 2, buf, sizeof buf);
	int two = rowmap_pairs(r), pipe = rowmap_pipe(r);
	/* the pipeline: two states and two scratch rows, taken in turn */
	void *pst[2] = {st, st + k->state_bytes}, *psc[2] = {scratch, (char *)scratch + r->scratch_bytes / 2};
	int64_t prev = -1;
	const CpuArgs *pa = NULL; /* prev's view */
	int s = 0;
	for (;;) {
		int64_t blk = atomic_fetch_add(&r->next, 1), b;
		if (blk >= r->nview * r->tasks_per_view)
			break;
		const CpuArgs *a = view_of(r, blk, r->tasks_per_view, &b);
		int64_t lo = b * r->rows_per_task, hi = lo + r->rows_per_task;
		if (hi > a->rows)
			hi = a->rows;
		if (pipe && prev >= 0 && pa != a) {
			k->rowmap_next(pa, -1, NULL, NULL, prev, pst[1 - s], psc[1 - s]);
			prev = -1;
		}
		for (int64_t i = lo; i < hi; i++)
			if (pipe) {
				k->rowmap_next(a, i, pst[s], psc[s], prev, pst[1 - s], psc[1 - s]);
				prev = i, pa = a, s = 1 - s;
			} else if (two && i + 1 < hi) {
				k->rowmap2(a, i++, st, scratch);
			} else {
				k->rowmap(a, i, st, scratch);
			}
	}
	if (prev >= 0)
		k->rowmap_next(pa, -1, NULL, NULL, prev, pst[1 - s], psc[1 - s]);
	if (k->fence)
		k->fence();
	if (st != buf)
		free(st);
}

/* Below this many positions in all, a run's tasks take less time than
 * waking the pool's workers costs (tens of microseconds on a VM): they
 * run on the calling thread, which gives the same results (they never
 * depend on the threads).  Online softmax of 1 x 32 from Python on a
 * 2-vCPU Xeon: 108 us a call on two threads, 16 on one. */
enum { INLINE_ELEMS = 4096 };

static int run_inline(const Run *r) { return (double)r->a->rows * r->a->len * r->nview < INLINE_ELEMS; }

static void run_tasks(RtPool *p, const Run *r, int64_t ntasks, void (*fn)(void *ctx, int64_t t), void *ctx)
{
	if (run_inline(r)) {
		for (int64_t t = 0; t < ntasks; t++)
			fn(ctx, t);
		return;
	}
	rt_pool_run(p, ntasks, fn, ctx);
}

/* Whole rows through k->rowmap; 0, or -1 when its scratch cannot be had
 * (the caller takes the separate functions then). */
static int run_rowmap(RtPool *p, Run *r)
{
	int nt = run_inline(r) ? 1 : rt_pool_threads(p);
	if (nt > r->a->rows * r->nview) /* a task a thread, each taking rows while there are any */
		nt = (int)(r->a->rows * r->nview);
	/* two rows' for rowmap2 and the pipeline, each a whole number of cache lines */
	r->scratch_bytes = (rowmap_pairs(r) || rowmap_pipe(r) ? 2 : 1) * (((size_t)r->a->len * sizeof(float) + 63) / 64 * 64);
	r->scratch = aligned_alloc(64, nt * r->scratch_bytes + 64);
	if (!r->scratch)
		return -1;
	atomic_store(&r->next, 0);
	run_tasks(p, r, nt, task_rowmap, r);
	free(r->scratch);
	return 0;
}

/* Tasks of chunks: t = (view * units + unit) * split + chunk, a unit
 * being a whole group of rows or a row after the last whole group (as
 * units_of counts them), each row's partial state at
 * part[(view * rows + row) * split + chunk]. */
static void task_partial(void *ctx, int64_t t)
{
	Run *r = ctx;
	const CpuKernel *k = r->k;
	int64_t u, lo, hi, c = t % r->split;
	const CpuArgs *a = view_of(r, t / r->split, r->units, &u);
	int64_t groups = a->rows / r->group, base = (t / r->split / r->units) * a->rows;
	chunk_bounds(r, c, &lo, &hi);
	if (u >= groups) { /* a row after the last whole group */
		int64_t i = groups * r->group + (u - groups);
		reduce_live(k, a, i, 1, lo, hi, state(r, r->part, (base + i) * r->split + c));
		return;
	}
	int64_t first = u * r->group;
	if (r->group > 1) {
		_Alignas(64) unsigned char buf[STATES_BUF];
		unsigned char *st = states(k, r->group, buf, sizeof buf);
		reduce_live(k, a, first, r->group, lo, hi, st);
		for (int g = 0; g < r->group; g++)
			memcpy(state(r, r->part, (base + first + g) * r->split + c), st + g * k->state_bytes, k->state_bytes);
		if (st != buf)
			free(st);
		return;
	}
	reduce_live(k, a, first, 1, lo, hi, state(r, r->part, (base + first) * r->split + c));
}

/* Row i's partial states, left to right: the row's state, finalized
 * (rowreduce, rowmap); or, for a scan, each chunk's partial state replaced
 * by the prefix of the chunks before it.  t = view * rows + row. */
static void task_combine(void *ctx, int64_t t)
{
	Run *r = ctx;
	const CpuKernel *k = r->k;
	int64_t i;
	const CpuArgs *a = view_of(r, t, r->a->rows, &i);
	void *acc = state(r, r->fin, 2 * t), *tmp = state(r, r->fin, 2 * t + 1);
	k->identity(a, acc);
	for (int c = 0; c < r->split; c++) {
		void *p = state(r, r->part, t * r->split + c);
		if (k->is_scan) {
			memcpy(tmp, p, k->state_bytes);
			memcpy(p, acc, k->state_bytes);
			k->merge(a, acc, tmp, acc);
		} else {
			k->merge(a, acc, p, acc);
		}
	}
	if (!k->is_scan)
		k->finalize(a, i, i, acc);
}

static void task_second(void *ctx, int64_t t)
{
	Run *r = ctx;
	int64_t i, lo, hi, row = t / r->split;
	const CpuArgs *a = view_of(r, row, r->a->rows, &i);
	chunk_bounds(r, t % r->split, &lo, &hi);
	if (r->k->is_scan)
		r->k->scan(a, i, lo, hi, state(r, r->part, t));
	else
		r->k->map(a, i, lo, hi, state(r, r->fin, 2 * row));
	if (r->k->fence)
		r->k->fence();
}

int rt_cpu_run(RtPool *p, const CpuKernel *k, const CpuArgs *a, int nview, int split, char *msg, size_t n)
{
	if (nview < 1 || a->rows <= 0)
		return 0;
	int64_t rows = a->rows * nview; /* rows of all the views */
	Run r = {.k = k, .a = a, .nview = nview, .split = rt_cpu_split(k, a->rows, nview, a->len, split)};
	r.group = rt_cpu_group(k, a->rows);
	r.units = units_of(k, a->rows);
	if (r.split == 1) {
		int64_t per = a->len > 0 ? ROWS_TASK_ELEMS / a->len : ROWS_TASK_ELEMS;
		int64_t most = (rows + 4 * rt_pool_threads(p) - 1) / (4 * rt_pool_threads(p));
		r.rows_per_task = per < 1 ? 1 : per > most ? most : per;
		if (r.rows_per_task < 1)
			r.rows_per_task = 1;
		/* rows that go two at a time: tasks of an even number of them, so
		 * that none is left alone at the end of a task */
		if ((pairs(&r) || rowmap_pairs(&r)) && (r.rows_per_task & 1))
			r.rows_per_task++;
		/* groups start at multiples of group whatever the threads */
		if (k->reduce_rows && k->group > 1)
			r.rows_per_task = (r.rows_per_task + k->group - 1) / k->group * k->group;
		r.tasks_per_view = (a->rows + r.rows_per_task - 1) / r.rows_per_task;
		if (k->rowmap && a->len <= k->rowmap_len && !run_rowmap(p, &r))
			return 0;
		run_tasks(p, &r, nview * r.tasks_per_view, task_rows, &r);
		return 0;
	}
	size_t sb = k->state_bytes;
	r.part = malloc((size_t)rows * r.split * sb);
	r.fin = malloc((size_t)rows * 2 * sb);
	if (!r.part || !r.fin) {
		free(r.part);
		free(r.fin);
		snprintf(msg, n, "out of memory for %lld partial states", (long long)rows * r.split);
		return -1;
	}
	run_tasks(p, &r, nview * r.units * r.split, task_partial, &r);
	run_tasks(p, &r, rows, task_combine, &r);
	if (k->is_scan || k->map)
		run_tasks(p, &r, rows * r.split, task_second, &r);
	free(r.part);
	free(r.fin);
	return 0;
}

/* ---- a paged batch read in place ---- */

static atomic_llong paged_calls;

int64_t rt_cpu_paged_calls(void) { return atomic_load(&paged_calls); }

/* A run of a paged batch: tasks t = first[v] + (unit * chunks[v] + chunk)
 * for view v, a unit as units_of counts them; with split > 1 each row's
 * partial states at part[(row0[v] + row) * split + chunk]. */
typedef struct {
	const CpuKernel *k;
	const CpuPages *pg;
	const CpuPagedView *v;
	int nview, split;
	int64_t *first, *row0; /* [nview + 1]: each view's first task, first row */
	int *chunks;           /* [nview]: chunks of each view's rows */
	unsigned char *part;
} PagedRun;

static int64_t view_pages(const PagedRun *r, const CpuPagedView *v)
{
	return (v->a.len + r->pg->page_size - 1) / r->pg->page_size;
}

/* Rows i .. i + n - 1 of view v over its pages [p0, p1) in one reduce
 * call, into the n states from st: inside, the kernel's paged function
 * (a's columns at page 0); else its reduce over the pages' keys, a's
 * columns moved to them (pages one after another in the pool). */
static void paged_call(const PagedRun *r, const CpuPagedView *v, const CpuArgs *a, int inside, int64_t i, int n,
		       int64_t p0, int64_t p1, unsigned char *st)
{
	const CpuKernel *k = r->k;
	int64_t ps = r->pg->page_size;
	atomic_fetch_add_explicit(&paged_calls, 1, memory_order_relaxed);
	if (inside && n == 1)
		k->reduce_pages(a, i, p0, p1, st, v->table, ps);
	else if (inside)
		k->reduce_rows_pages(a, i, p0, p1, st, v->table, ps);
	else
		reduce_some(k, a, i, n, p0 * ps, p1 * ps < a->len ? p1 * ps : a->len, st);
}

/* The page after the block of LIVE_BLOCK keys (per pages) that holds
 * page q, at most p1; whether the mask may hold in that block for any of
 * rows i .. i + n - 1. */
static int64_t block_end(int64_t per, int64_t q, int64_t p1)
{
	int64_t e = (q / per + 1) * per;
	return e < p1 ? e : p1;
}

static int block_live(const PagedRun *r, const CpuPagedView *v, int64_t i, int n, int64_t q, int64_t p1)
{
	int64_t ps = r->pg->page_size, per = LIVE_BLOCK / ps > 0 ? LIVE_BLOCK / ps : 1;
	int64_t lo = q * ps, hi = block_end(per, q, p1) * ps;
	for (int g = 0; g < n; g++)
		if (r->k->live(r->k->live_ctx, &v->a, i + g, lo, hi < v->a.len ? hi : v->a.len))
			return 1;
	return 0;
}

/* Rows i .. i + n - 1 of view v over its pages [p0, p1), into the n
 * states from st, the identity where there are none.  With the kernel's
 * paged functions, a call over the pages (the lookup of each page inside
 * it); else a reduce call a run of pages that lie one after another in
 * the pool, its column pointers moved by the run's distance from where
 * key lo would lie in one run of keys.  Where the mask rules out whole
 * blocks of LIVE_BLOCK positions (a multiple of every page size) for all
 * the rows, only the runs of the other blocks; the calls' states merged
 * left to right. */
static void paged_reduce(const PagedRun *r, const CpuPagedView *v, int64_t i, int n, int64_t p0, int64_t p1,
			 unsigned char *st)
{
	const CpuKernel *k = r->k;
	const CpuPages *pg = r->pg;
	size_t sb = k->state_bytes;
	int64_t ps = pg->page_size, per = LIVE_BLOCK / ps > 0 ? LIVE_BLOCK / ps : 1;
	int inside = n == 1 ? k->reduce_pages != NULL : k->reduce_rows_pages != NULL;
	_Alignas(64) unsigned char buf[STATES_BUF];
	unsigned char *tmp = NULL;
	const void *in[RT_PAGED_MAX_IN];
	memcpy(in, v->a.in, (size_t)pg->nin * sizeof *in);
	CpuArgs a = v->a;
	a.in = in;
	int have = 0;
	for (int64_t q = p0; q < p1;) {
		int64_t e = p1;
		if (k->live) { /* from the next live block, up to the next block that is not */
			while (q < p1 && !block_live(r, v, i, n, q, p1))
				q = block_end(per, q, p1);
			if (q == p1)
				break;
			for (e = block_end(per, q, p1); e < p1 && block_live(r, v, i, n, e, p1);)
				e = block_end(per, e, p1);
		}
		const CpuArgs *ca = &v->a;
		if (!inside) { /* pages one after another in the pool: one call */
			int64_t shift = (int64_t)v->table[q] - q, last = e;
			for (e = q + 1; e < last && (int64_t)v->table[e] - e == shift; e++)
				;
			for (int c = 0; c < pg->ncol; c++)
				in[pg->col_first + c] = (const void *)((uintptr_t)v->a.in[pg->col_first + c] +
									(uintptr_t)(shift * ps * pg->key_bytes[c]));
			ca = &a;
		}
		if (have && !tmp)
			tmp = states(k, n, buf, sizeof buf);
		paged_call(r, v, ca, inside, i, n, q, e, have ? tmp : st);
		for (int g = 0; have && g < n; g++)
			k->merge(&v->a, st + g * sb, tmp + g * sb, st + g * sb);
		have = 1, q = e;
	}
	for (int g = 0; !have && g < n; g++)
		k->identity(&v->a, st + g * sb);
	if (tmp && tmp != buf)
		free(tmp);
}

static void paged_finalize(const CpuPagedView *v, const CpuKernel *k, int64_t i, const void *st)
{
	int64_t per = v->a.period > 0 ? v->a.period : v->a.rows;
	k->finalize(&v->a, i, (i % per) * v->at_row + (i / per) * v->at_head, st);
}

static void task_paged(void *ctx, int64_t t)
{
	PagedRun *r = ctx;
	const CpuKernel *k = r->k;
	int lo = 0, hi = r->nview; /* the view whose tasks hold t */
	while (hi - lo > 1) {
		int mid = (lo + hi) / 2;
		if (r->first[mid] <= t)
			lo = mid;
		else
			hi = mid;
	}
	const CpuPagedView *v = &r->v[lo];
	int64_t local = t - r->first[lo], ch = r->chunks[lo], u = local / ch, c = local % ch;
	int g = rt_cpu_group(k, v->a.rows);
	int64_t groups = v->a.rows / g, i = u < groups ? u * g : groups * g + (u - groups);
	int n = u < groups ? g : 1;
	int64_t pages = view_pages(r, v), p0 = pages * c / ch, p1 = pages * (c + 1) / ch;
	_Alignas(64) unsigned char buf[STATES_BUF];
	unsigned char *st = states(k, n, buf, sizeof buf);
	paged_reduce(r, v, i, n, p0, p1, st);
	for (int q = 0; q < n; q++) {
		if (r->split > 1)
			memcpy(r->part + ((r->row0[lo] + i + q) * r->split + c) * k->state_bytes, st + q * k->state_bytes,
			       k->state_bytes);
		else
			paged_finalize(v, k, i + q, st + q * k->state_bytes);
	}
	if (st != buf)
		free(st);
}

/* Row t of all the views (row0 counts them): its chunks' states merged
 * left to right, finalized. */
static void task_paged_combine(void *ctx, int64_t t)
{
	PagedRun *r = ctx;
	const CpuKernel *k = r->k;
	int lo = 0, hi = r->nview;
	while (hi - lo > 1) {
		int mid = (lo + hi) / 2;
		if (r->row0[mid] <= t)
			lo = mid;
		else
			hi = mid;
	}
	const CpuPagedView *v = &r->v[lo];
	unsigned char *p = r->part + t * r->split * k->state_bytes;
	for (int c = 1; c < r->chunks[lo]; c++)
		k->merge(&v->a, p, p + c * k->state_bytes, p);
	paged_finalize(v, k, t - r->row0[lo], p);
}

int rt_cpu_run_paged(RtPool *p, const CpuKernel *k, const CpuPages *pg, const CpuPagedView *v, int nview, int split,
		     char *msg, size_t n)
{
	if (nview < 1)
		return 0;
	if (pg->nin > RT_PAGED_MAX_IN || pg->page_size < 1) {
		snprintf(msg, n, "a paged batch of %d inputs and pages of %d keys: at most %d inputs, pages from 1 key",
			 pg->nin, pg->page_size, RT_PAGED_MAX_IN);
		return -1;
	}
	PagedRun r = {.k = k, .pg = pg, .v = v, .nview = nview};
	r.first = calloc((size_t)nview + 1, sizeof *r.first);
	r.row0 = calloc((size_t)nview + 1, sizeof *r.row0);
	r.chunks = calloc((size_t)nview, sizeof *r.chunks);
	if (!r.first || !r.row0 || !r.chunks) {
		free(r.first), free(r.row0), free(r.chunks);
		snprintf(msg, n, "out of memory for %d views", nview);
		return -1;
	}
	/* chunks a row: as rt_cpu_split chooses them for the batch's units and
	 * its longest sequence, in whole pages */
	int64_t units = 0, most = 0;
	for (int x = 0; x < nview; x++) {
		units += units_of(k, v[x].a.rows);
		most = v[x].a.len > most ? v[x].a.len : most;
	}
	r.split = split;
	if (r.split <= 0) {
		int64_t sb = k->state_bytes > 16 ? (int64_t)k->state_bytes : 16, chunk = CHUNK * 16 / sb, s;
		if (chunk < MIN_CHUNK)
			chunk = MIN_CHUNK;
		s = units >= TASKS ? 1 : (TASKS + units - 1) / (units < 1 ? 1 : units);
		if (s > most / chunk)
			s = most / chunk;
		r.split = s < 1 ? 1 : (int)s;
	}
	int64_t most_pages = (most + pg->page_size - 1) / pg->page_size;
	if (r.split > most_pages)
		r.split = most_pages < 1 ? 1 : (int)most_pages;
	for (int x = 0; x < nview; x++) {
		int64_t pages = view_pages(&r, &v[x]);
		r.chunks[x] = pages < r.split ? (pages < 1 ? 1 : (int)pages) : r.split;
		r.first[x + 1] = r.first[x] + units_of(k, v[x].a.rows) * r.chunks[x];
		r.row0[x + 1] = r.row0[x] + v[x].a.rows;
	}
	if (r.split > 1 && !(r.part = malloc((size_t)r.row0[nview] * r.split * k->state_bytes + 1))) {
		snprintf(msg, n, "out of memory for %lld partial states", (long long)r.row0[nview] * r.split);
		free(r.first), free(r.row0), free(r.chunks);
		return -1;
	}
	rt_pool_run(p, r.first[nview], task_paged, &r);
	if (r.split > 1)
		rt_pool_run(p, r.row0[nview], task_paged_combine, &r);
	free(r.part);
	free(r.first), free(r.row0), free(r.chunks);
	return 0;
}
