/* cpu.h: the CPU executor: a thread pool, and whole-array runs of a
 * compiled carrier (rowreduce, rowmap, scan) over it.
 *
 * A kernel is a set of functions with this ABI (the LLVM backend JITs them;
 * anything else with the same contract would do):
 *   identity(a, st)            st = the identity state
 *   reduce(a, i, lo, hi, st)   st = fold of positions [lo, hi) of row i, from the identity
 *   merge(a, x, y, out)        out = x (+) y (x first); out may alias x
 *   finalize(a, i, at, st)     finalize outputs of st into flat index `at` of each output
 *   map(a, i, lo, hi, st)      map outputs of positions [lo, hi) of row i with the row's state
 *   scan(a, i, lo, hi, st)     st = st (+) each position in turn; finalize outputs per position
 *                              (a scan's kernel only, is_scan; NULL for the others)
 *   rowmap(a, i, st, scratch)  optional: reduce(a, i, 0, len, st), finalize(a, i, i, st) and
 *                              map(a, i, 0, len, st) in one call, for rows of at most rowmap_len
 *                              positions; scratch is room for len float32 (64-byte aligned)
 *                              that no other thread uses during the call
 *   reduce2(a, i, st)          optional: reduce(a, r, 0, len, st_r) for rows r = i and i + 1,
 *                              st_1 = st + state_bytes, for rows of fewer than pair_len positions
 *   rowmap2(a, i, st, scratch) optional: rowmap of rows i and i + 1, states as reduce2's, row
 *                              i + 1's scratch the next 64-byte boundary past len float32
 *   rowmap_next(a, i, st, scratch, prev, prev_st, prev_scratch)
 *                              optional: rowmap of row i without its map (st and scratch
 *                              keep what the map needs), and the map of row prev, whose own
 *                              rowmap_next call left its state at prev_st and its scratch at
 *                              prev_scratch; i < 0: that map alone; prev < 0: no map
 *   reduce_rows(a, i, lo, hi, st)
 *                              optional: reduce(a, r, lo, hi, st_r) for the group rows
 *                              r = i .. i + group - 1, st_r = st + (r - i) * state_bytes
 * The pairs and the pipeline give the very results the functions of one row give; a group's
 * rows may round differently (its tiles start where the group's range does), so the
 * executor groups rows from multiples of group only, whatever the threads.
 *   fence()                    optional: the stores of map, rowmap and rowmap2 calls before it
 *                              (they may be non-temporal) visible to other threads; the
 *                              executor calls it once per task, after its last
 * A state is state_bytes of opaque memory (8-byte slots).  Layout of the
 * arrays (docs/spec-format.md): element inputs [rows][len][w], column inputs
 * [len][w], row inputs [rows][w]; finalize outputs [rows][w] ([rows][len][w]
 * for scans), map outputs [rows][len][w]. */
#ifndef ASSOC_RUNTIME_CPU_H
#define ASSOC_RUNTIME_CPU_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
	const void *const *in; /* element inputs, then column, then row inputs, in spec order */
	void *const *out;      /* finalize outputs, then map outputs */
	const double *params;
	int64_t rows, len;
	/* 0; or the rows of one head where the view holds the rows of several
	 * heads one after another (the query heads of one key/value head, whose
	 * columns they share): the spec's i is then the row index modulo it */
	int64_t period;
	/* the spec's i of a head's first row (0; a paged sequence's queries
	 * are its last positions: its keys less its queries) */
	int64_t qpos;
} CpuArgs;

/* The spec's i of row i of a view. */
static inline int64_t rt_spec_i(const CpuArgs *a, int64_t i) { return (a->period > 0 ? i % a->period : i) + a->qpos; }

typedef struct {
	void (*identity)(const CpuArgs *a, void *st);
	void (*reduce)(const CpuArgs *a, int64_t i, int64_t lo, int64_t hi, void *st);
	void (*merge)(const CpuArgs *a, const void *x, const void *y, void *out);
	void (*finalize)(const CpuArgs *a, int64_t i, int64_t at, const void *st);
	void (*map)(const CpuArgs *a, int64_t i, int64_t lo, int64_t hi, const void *st); /* NULL: none */
	void (*scan)(const CpuArgs *a, int64_t i, int64_t lo, int64_t hi, void *st); /* NULL unless is_scan */
	void (*rowmap)(const CpuArgs *a, int64_t i, void *st, void *scratch); /* NULL: none */
	int64_t rowmap_len;
	void (*reduce2)(const CpuArgs *a, int64_t i, void *st);                 /* NULL: none */
	void (*rowmap2)(const CpuArgs *a, int64_t i, void *st, void *scratch);  /* NULL: none */
	void (*rowmap_next)(const CpuArgs *a, int64_t i, void *st, void *scratch, int64_t prev, const void *prev_st,
			    const void *prev_scratch); /* NULL: none */
	int64_t pair_len;
	void (*reduce_rows)(const CpuArgs *a, int64_t i, int64_t lo, int64_t hi, void *st); /* NULL: none */
	int group;
	void (*fence)(void); /* NULL: none needed */
	size_t state_bytes;
	int is_scan;
	/* NULL, or whether row i's mask may hold at a position of [lo, hi): the
	 * reduce skips blocks where it cannot (masked positions lift to the
	 * identity).  live_ctx is its program. */
	int (*live)(const void *live_ctx, const CpuArgs *a, int64_t i, int64_t lo, int64_t hi);
	const void *live_ctx;
	/* NULL, or reduce (reduce_rows) of row i (rows i .. i + group - 1)
	 * over the keys of pages p0 .. p1 - 1 of a paged pool: key j of the
	 * row in slot j % page_size of page table[j / page_size], up to
	 * a->len, the column pointers at page 0 (rt_cpu_run_paged) */
	void (*reduce_pages)(const CpuArgs *a, int64_t i, int64_t p0, int64_t p1, void *st, const int32_t *table,
			     int64_t page_size);
	void (*reduce_rows_pages)(const CpuArgs *a, int64_t i, int64_t p0, int64_t p1, void *st, const int32_t *table,
				  int64_t page_size);
} CpuKernel;

typedef struct RtPool RtPool;

/* The most threads a pool takes (--threads, assoc_compile). */
enum { RT_MAX_THREADS = 1024 };

/* The CPUs the process may use (affinity mask, cgroup v2 quota). */
int rt_cpus_usable(void);
/* threads <= 0: rt_cpus_usable().  0, or -1 with msg. */
int rt_pool_open(RtPool **p, int threads, char *msg, size_t n);
void rt_pool_close(RtPool *p);
int rt_pool_threads(const RtPool *p);
/* The jobs the pool's workers have been woken for so far. */
unsigned long rt_pool_jobs(const RtPool *p);
/* Run fn(ctx, t) for t in [0, ntasks) on the pool's threads (the caller
 * helps); returns when all are done. */
void rt_pool_run(RtPool *p, int64_t ntasks, void (*fn)(void *ctx, int64_t t), void *ctx);

/* Rows reduce_rows takes at a time in a run of rows rows (1: none). */
static inline int rt_cpu_group(const CpuKernel *k, int64_t rows)
{
	return k->reduce_rows && k->group > 1 && rows >= k->group ? k->group : 1;
}

/* Chunks per row a run of nview views of rows rows uses: `split` when
 * positive; else one while there are many rows, and while there are few,
 * enough for some tens of tasks, each of thousands of positions (fewer the
 * larger the state).  It depends on the shape and the kernel alone, never
 * on the thread count, and partial states are merged left to right:
 * results do not depend on the number of threads. */
int rt_cpu_split(const CpuKernel *k, int64_t rows, int nview, int64_t len, int split);

/* Fill the outputs of nview arrays of one shape (a[0 .. nview-1], each of
 * a->rows x a->len: the heads of attention), their rows shared out to the
 * pool's threads together.  0, or -1 with msg (out of memory). */
int rt_cpu_run(RtPool *p, const CpuKernel *k, const CpuArgs *a, int nview, int split, char *msg, size_t n);

/* ---- a paged batch read in place ---- */

/* A view of a paged batch (rt_cpu_run_paged): the query rows of one
 * sequence's query heads that share a key/value head.  a's column
 * pointers are at that head's component of page 0 of the pool, and the
 * kernel reads key j of a column at j times the pool's key stride
 * (LlvmOpts.key_stride); a.len is the sequence's keys, a.qpos the spec's
 * i of its first query.  Row i's finalize outputs go to flat index
 * (i % per) * at_row + (i / per) * at_head of a's output pointers, per
 * being a.period where set, else a.rows: [heads][rows] (1, rows) or the
 * serving layout [rows][heads] (heads, 1). */
typedef struct {
	CpuArgs a;
	const int32_t *table; /* key j in slot j % page_size of page table[j / page_size] */
	int64_t at_row, at_head;
} CpuPagedView;

/* The pool every view reads: its pages of page_size keys, and of the
 * kernel's nin inputs, the ncol columns from col_first on, key_bytes[c]
 * from one key of column c to the next key of the same head. */
typedef struct {
	int page_size;
	int nin, col_first, ncol;
	const int64_t *key_bytes;
} CpuPages;

/* The kernel's inputs that rt_cpu_run_paged moves page by page, at most. */
enum { RT_PAGED_MAX_IN = 1024 };

/* Fill the outputs of nview views of a paged batch, reading the keys in
 * place: each row (or group of rows, reduce_rows) over its pages in one
 * call of the kernel's reduce_pages (reduce_rows_pages), which looks each
 * page up once; where it has none, a call of its reduce (reduce_rows) a
 * run of pages that lie one after another in the pool, the column
 * pointers moved to the run, the runs' states merged left to right.
 * Blocks of keys the mask rules out (live) are skipped as rt_cpu_run
 * skips them.  A row's pages are split into chunks (split, or by the
 * shape: never by the thread count) for the threads, the chunks' states
 * merged left to right.  0, or -1 with msg (out of memory). */
int rt_cpu_run_paged(RtPool *p, const CpuKernel *k, const CpuPages *pg, const CpuPagedView *v, int nview, int split,
		     char *msg, size_t n);
/* The reduce calls (of any of the four functions) rt_cpu_run_paged has
 * made in this process, over all threads. */
int64_t rt_cpu_paged_calls(void);

#endif
