/* run.h: running a carrier on whole arrays through a device, and checking
 * the results against the float64 reference.
 *
 * Memory layout (docs/spec-format.md): an element input is [rows][len][width],
 * a row input [rows][width], a column input [len][width]; finalize outputs
 * are [rows][width]; map outputs, and finalize outputs of a scan, are
 * [rows][len][width].  Inputs are stored in their spec type (f16 and bf16
 * as 16-bit patterns, f8e4m3 as bytes); outputs in the type of their
 * expression. */
#ifndef ASSOC_RUN_H
#define ASSOC_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "compiler/check/eval.h"
#include "compiler/front/spec.h"

typedef struct {
	TyKind kind;  /* storage kind */
	int width;    /* components per element (1 for scalars) */
	size_t n;     /* elements */
	void *p;      /* n * width values of kind */
} Buffer;

size_t run_kind_size(TyKind k);

/* What one CUDA thread holds of a carrier (its State, Row and Elem, each
 * component as it computes: f16 and bf16 as float), and the most a GPU
 * gives a thread as local memory (512 KiB on every architecture); the gpu
 * and emu devices refuse a carrier past it.  0, or -1 with msg naming the
 * dims. */
enum { RUN_THREAD_BYTES = 512 * 1024 };
size_t run_thread_bytes(const Carrier *c);
int run_thread_fits(const Carrier *c, char *msg, size_t n);
/* Attention's kernels run the query heads that share a key/value head as
 * rows of one run: *rows times heads / kv_heads rows of kv_heads heads.
 * 0, or -1 with msg where that passes 2^31 - 1 rows (the kernels and a
 * grid's x count rows in 32 bits). */
int run_attn_rows(int *rows, int *heads, int kv_heads, char *msg, size_t n);
double run_buffer_get(const Buffer *b, size_t i);  /* component i, as a double */
void run_buffer_get_n(const Buffer *b, size_t i, size_t n, double *dst); /* components i .. i + n - 1 */
void run_buffer_set(Buffer *b, size_t i, double v); /* rounds to the buffer's kind */
/* The same with the rest beside the value (ir_int_exact): an i64 past
 * 2^53 exactly (rest 0 for other kinds, and ignored by them). */
double run_buffer_get_exact(const Buffer *b, size_t i, double *rest);
void run_buffer_set_exact(Buffer *b, size_t i, double v, double rest);
/* 16-bit patterns of f16 and bf16, round to nearest even. */
uint16_t run_f16_bits(double v);
uint16_t run_bf16_bits(double v);
double run_f16_value(uint16_t h);
double run_bf16_value(uint16_t h);
/* 8-bit patterns of f8e4m3 (ir_round's: saturating at 448, NaN 0x7f). */
uint8_t run_f8e4m3_bits(double v);
double run_f8e4m3_value(uint8_t h);
/* Whether a value given for an input of float kind k lies past k's range,
 * so that storing it would lose it: one that rounds to an infinity from a
 * finite value, and for f8e4m3, which has no infinities and saturates, an
 * infinity or a magnitude past 464 (448 and half its step). */
int run_past_range(TyKind k, double v);

typedef struct {
	Carrier *c;
	int rows, len;
	/* The spec's i of row 0: row r is at position qpos + r.  0, but in a
	 * sequence of a paged batch, whose queries are its last positions
	 * (paged.h): len - rows there, below 0 where it has more queries than
	 * keys. */
	int qpos;
	/* Attention: query heads and key/value heads (heads % kv_heads == 0;
	 * 1 and 1 elsewhere).  Every row, element and output array gets a
	 * leading [heads] dim, every column array a leading [kv_heads] dim;
	 * query head h reads key/value head h / (heads / kv_heads). */
	int heads, kv_heads;
	Buffer *row, *col, *elem; /* one per declaration */
	double *params;           /* one per param (scalar) */
	Buffer *fin, *map;        /* outputs: one per finalize / map output */
	int scan;                 /* finalize outputs are per position */
	/* Set by a device whose kernel rounded the softmax weights P to the
	 * inputs' type before P V (the attention template with pv = 1): that
	 * type (TY_F16, TY_BF16, TY_F8E4M3; 0 when P stayed float32) and the state fields
	 * m (max), l (sum), o (vector); for a weighted sum (o sums w v), m is
	 * -1 and v the column input that o's lift weighs.  runcheck_run's
	 * naive baseline does the same. */
	struct {
		int kind, m, l, o, v;
	} p_round;
	/* Paged columns (paged.h), where page.size > 0: each column buffer is
	 * a pool of pages [pages][size][kv][width] (in a head view, from its
	 * key/value head's first component), and key j of the run lies in
	 * slot j % size of page table[j / size].  Only a device whose
	 * Device.paged is set is handed such a RunData. */
	struct {
		const int32_t *table;
		int size, pages, kv;
	} page;
} RunData;

/* Allocate inputs and outputs for rows x len (outputs zeroed). */
RunData *rundata_new(Carrier *c, int rows, int len);
RunData *rundata_new_heads(Carrier *c, int rows, int len, int heads, int kv_heads);
void rundata_free(RunData *d);
/* Head h of d as a one-head RunData whose buffers point into d's (paged
 * columns: the same pages, from its key/value head's component); free
 * with rundata_view_free (d's arrays stay). */
RunData *rundata_head_view(const RunData *d, int h);
void rundata_view_free(RunData *v);
/* Rows r0 .. r0 + rows - 1 of head h of d as a RunData of their own,
 * whose buffers point into d's (its qpos is theirs: a mask or lift that
 * reads i sees their positions); free with rundata_view_free. */
RunData *rundata_rows_view(const RunData *d, int h, int r0, int rows);
/* Attention's flops in d: 2 (dq + dv) a query-key pair (q k over the
 * query's dq and P v over the value's dv: a multiply and an add each),
 * counting only the pairs the mask keeps, whose fraction is estimated on
 * 4096 random pairs; 0 for a carrier without a row input. */
double rundata_attention_flops(const RunData *d, int dq, int dv);
/* The element of d's column buffers (or a head view's) that holds key j:
 * j itself, or its slot of its page. */
size_t rundata_col_at(const RunData *d, int j);
/* A RunData of d's shape whose columns are d's paged ones gathered into
 * [kv_heads][len] (the rest: d's own arrays), for a kernel that reads runs
 * of keys; free with rundata_unpaged_free. */
RunData *rundata_unpaged(const RunData *d);
void rundata_unpaged_free(RunData *u);

/* 1 when c's mask or lift reads i (the row's position). */
int run_reads_i(const Carrier *c);
/* 0 when a kernel that counts i from 0 in every run (the row templates)
 * computes d as its spec asks: d's row 0 at position 0, or a carrier
 * that never reads i; else -1 with msg. */
int rundata_from_zero_ok(const RunData *d, const char *kernels, char *msg, size_t n);

/* Bytes a position reads from its element and column inputs (4 where it
 * reads none): what a thread's vec x acc loads hold in flight in the
 * tuner's model, an f16 input half of f32's, an f8e4m3 a quarter, several
 * inputs their sum. */
int rundata_position_bytes(const RunData *d);
/* Bytes one run moves: every input read once, every output written once. */
double rundata_bytes(const RunData *d);
/* The bytes rundata_new_heads would allocate for that shape, without allocating. */
double rundata_need(const Carrier *c, int rows, int len, int heads, int kv_heads);

/* The arrays' host pointers in the kernels' order: element, column, then
 * row inputs into in; finalize, then map outputs into out. */
void rundata_pointers(const RunData *d, const void **in, void **out);
/* The inputs' components per element, in rundata_pointers' order. */
void rundata_widths(const RunData *d, int64_t *width);

/* Copy d's column inputs into the interpreter's layout (row has room for
 * d->len), once for all rows (through the pages where d has them); then
 * row r's own inputs (row and element). */
void rundata_load_cols(const RunData *d, const Machine *m, Row *row);
void rundata_load_row(const RunData *d, const Machine *m, int r, Row *row);

/* Draw inputs (honouring assume) and params (overrides applied); -1 with
 * msg when an override is wrong or assume cannot be satisfied. */
int rundata_draw(RunData *d, uint64_t seed, const Define *params, int nparams, char *msg, size_t n);

/* 0 when every row and position of d's inputs satisfies the spec's
 * assume; else -1 with msg naming the first that does not: its head (with
 * heads), row and position, and the values of the inputs assume reads;
 * or, where a part of assume over params alone is false at d's params,
 * them (draw_params_break_assume), inputs or not. */
int rundata_check_assume(const RunData *d, char *msg, size_t n);

enum { MAX_SPLIT = VARIANT_MAX_SPLIT };

typedef struct {
	int threads;      /* CPU devices: 0 picks the number of cores */
	int split;        /* reduced-axis split count, up to MAX_SPLIT; 0 lets the device choose */
	const char *config; /* a device's own configuration string, or NULL */
	int deterministic;
	int verbose;
	const char *arch; /* the emulator's target (sm_90a: the Hopper templates too); NULL: as sm_80 */
} RunOpts;

/* A batch of sequences over one pool of pages (paged.h), for a device
 * that runs it in one launch: seq[b] is sequence b as a RunData over the
 * pool (its page.table, row b of table); table [batch][max_pages], lens
 * [batch] and cu [batch + 1] the layout's arrays.  row and fin, where
 * set, are the batch's row inputs and finalize outputs already in the
 * kernels' layout [total rows][heads] (a Paged's own): the device reads
 * and writes them in place of the sequences' own (run_batch_rows). */
typedef struct {
	RunData **seq;
	int batch, max_pages;
	const int32_t *table, *lens, *cu;
	const Buffer *row;
	Buffer *fin;
} RunBatch;

typedef struct {
	const char *name;
	/* 1 when usable here; otherwise 0 with the reason in why. */
	int (*available)(char *why, size_t n);
	/* Fill d's outputs from its inputs; 0 on success, -1 with msg. */
	int (*run)(RunData *d, const RunOpts *o, char *msg, size_t n);
	/* 0 when --config's text is one this device reads, else -1 with msg;
	 * NULL for a device that takes none. */
	int (*config)(const char *cfg, char *msg, size_t n);
	/* 1: run reads paged columns (RunData.page) itself */
	int paged;
	/* Every sequence of a paged batch, their outputs filled, in one
	 * launch: 0, -1 with msg, or 1 where this carrier's kernels run one
	 * sequence at a time (then each goes through run); NULL for a device
	 * that runs sequences one at a time. */
	int (*run_batch)(RunBatch *rb, const RunOpts *o, char *msg, size_t n);
} Device;

/* The row inputs (outputs) of rb's sequences one after another in the
 * serving layout the paged kernels read, each sequence [its rows][heads]
 * (the batch [total rows][heads]): buffer k gathered from the sequences'
 * [heads][rows] into a new array, or an array of that layout put back into
 * the sequences' own. */
void *run_batch_rows(const RunBatch *rb, int k);
void run_batch_put_fin(RunBatch *rb, int k, const void *all);
/* One buffer of [heads][rows] elements as a new array of [rows][heads]
 * (the paged kernels' layout), and such an array put back into it. */
void *run_rows_major(const Buffer *b, int heads, int rows);
void run_rows_major_put(Buffer *b, int heads, int rows, const void *all);
/* The bytes of run_batch_rows(rb, k), and of finalize output k's. */
size_t run_batch_row_bytes(const RunBatch *rb, int k);
size_t run_batch_fin_bytes(const RunBatch *rb, int k);
/* 1 when every sequence of rb has the same number of queries: the
 * kernels then take no cu_seqlens_q (NULL: that many each). */
int run_batch_uniform(const RunBatch *rb);

/* Devices, by name ("interp", and those linked in); NULL when unknown. */
const Device *run_device_find(const char *name);
const char *run_device_names(void);

/* Worst error of each output against the float64 reference. */
typedef struct {
	char *name;
	double max_abs, max_rel, worst_ratio; /* ratio of error to its tolerance */
	size_t at;       /* flat index of the first NaN or infinity mismatch, else of the worst component */
	int nan_mismatch;
	size_t compared;
	size_t out_of_range; /* finite results where the float64 reference overflowed or underflowed: not compared */
	/* values compared by kind alone, not by size: NaN in both, or the
	 * same infinity in both */
	size_t nan_both, inf_both;
	size_t empty_nan; /* results on empty (or fully masked) rows, whose reference is NaN: not compared */
	/* the naive float32 evaluation's largest error and the largest
	 * share of its running bound that stood in for a smaller error (and
	 * their flat indices), and the largest finite magnitude of the
	 * reference: where either passes that magnitude, the tolerance
	 * passes a value wrong by the output's own size (runcheck_notes says
	 * so) */
	double naive_worst, bound_worst, want_scale;
	size_t naive_at, bound_at;
	const char *basis; /* "the float64 reference", or the carrier's float64 left fold where the spec has none */
} OutCheck;

typedef struct {
	OutCheck *out;
	int nout;
	int ok;
} RunCheck;

/* Compare d's outputs with the reference (or the carrier's float64 left
 * fold where the spec has none).  The tolerance for each value is twice the
 * error of a naive float32 evaluation of the same value plus a floor of
 * 32 float32 ulps of the output's scale in its row (FlashAttention's rule);
 * with P rounded (p_round), the naive attention rounds P as well. */
void runcheck_run(RunData *d, RunCheck *rc);
/* Checks of many runs of one carrier (a batch's sequences) through one
 * evaluation machine: runcheck_run builds one a call.  A RunChecker
 * checks runs of the carrier it was made for only. */
typedef struct RunChecker RunChecker;
RunChecker *runchecker_new(Carrier *c);
void runchecker_run(RunChecker *k, RunData *d, RunCheck *rc);
void runchecker_free(RunChecker *k);
/* From now on k keeps each row's float64 reference and left folds, and a
 * later run whose inputs are those of the run checked last (its shape,
 * params and every input array, compared in full; not a paged run) takes
 * them instead of evaluating them again: a tuner's candidates, each run
 * on the same draw, pay for the reference once.  Their outputs and
 * p_round may differ. */
void runchecker_keep(RunChecker *k);
/* The rows (of all heads) whose values k's last run took from the run before. */
int runchecker_reused(const RunChecker *k);
/* Record how the device treated P (RunData.p_round); kind 0: float32. */
void runcheck_round_p(RunData *d, int kind, int m, int l, int o);
/* The same for a weighted sum: state field o = sum w v, v column input v. */
void runcheck_round_p_sum(RunData *d, int kind, int o, int v);
void runcheck_free(RunCheck *rc);
/* What an output's line says beside its errors: the values not compared
 * by size, and why (", 12 of 12 values NaN in both"), or "". */
void runcheck_notes(const OutCheck *x, char *buf, size_t n);
/* How many of x's values were compared by size; whether any of rc's
 * outputs had one (an empty run has nothing to say either way: 1). */
size_t runcheck_sized(const OutCheck *x);
int runcheck_any_sized(const RunCheck *rc);
/* Whether any of rc's outputs had a value compared at all (none: a scan
 * over rows of length 0, or no rows). */
int runcheck_any_compared(const RunCheck *rc);

#endif
