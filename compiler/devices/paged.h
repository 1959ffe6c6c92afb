/* paged.h: attention over a paged key/value cache, for a batch of
 * sequences each with its own number of keys and of queries, laid out as
 * serving systems lay them out (docs/spec-format.md, "Paged keys and
 * values"):
 *
 *   column inputs (k, v)   [pages][page_size][kv_heads][width]  (vLLM's and
 *                          FlashAttention's paged layout)
 *   block_table            [batch][max_pages] int32: sequence b's key j is
 *                          at page block_table[b][j / page_size], slot
 *                          j % page_size
 *   seq_lens               [batch] int32: the keys of each sequence
 *   cu_seqlens_q           [batch + 1] int32: sequence b's queries are rows
 *                          cu[b] .. cu[b + 1] - 1 (FlashAttention's varlen);
 *                          without it every sequence has the same count
 *   row inputs (q)         [rows][heads][width], rows = cu[batch]
 *   finalize outputs       [rows][heads][width]
 *
 * Within a sequence, j counts its keys from 0 and len is its key count;
 * its queries are its last positions, as serving systems place them (the
 * causal mask aligned bottom-right): query r of a sequence of rows
 * queries is at i = len - rows + r (RunData.qpos), so that a decoding
 * step's one query sees every key.  With more queries than keys the first
 * ones lie before position 0 and a causal mask keeps no key for them.
 * A sequence runs on a device as a RunData of its own: its
 * queries gathered into [heads][rows], its keys left in the pool
 * (RunData.page) for a device that reads pages, else gathered into
 * [kv_heads][len] as every device takes them. */
#ifndef ASSOC_PAGED_H
#define ASSOC_PAGED_H

#include "compiler/cuda/cuda.h"
#include "compiler/devices/run.h"

enum { PAGED_MIN_PAGE = 16, PAGED_MAX_PAGE = 256 };

typedef struct {
	Carrier *c;
	int heads, kv_heads;
	int batch, page_size, pages, max_pages;
	int32_t *table; /* [batch][max_pages]; entries past a sequence's last page are not read */
	int32_t *lens;  /* [batch] */
	int32_t *cu;    /* [batch + 1] */
	Buffer *row;    /* one per row input: cu[batch] x heads elements */
	Buffer *col;    /* one per column input: pages x page_size x kv_heads elements */
	Buffer *fin;    /* one per finalize output: cu[batch] x heads elements */
	double *params;
} Paged;

/* 0 when page_size is a power of two from 16 to 256; else -1 with msg. */
int paged_page_size_ok(int page_size, char *msg, size_t n);
/* 0 when c reads keys as column inputs and gives one value a query (no
 * element inputs, no map outputs, no scan); else -1 with msg. */
int paged_carrier_ok(const Carrier *c, char *msg, size_t n);

/* The layout's arrays (copied: table [batch][max_pages], lens [batch];
 * cu [batch + 1], or NULL for rows queries a sequence), checked by
 * paged_layout_ok and paged_fits (its own arrays and its sequences
 * gathered all at once, as a device without a paged kernel runs them);
 * the inputs zeroed.  NULL with msg when the layout is wrong, its arrays
 * do not fit the machine's memory, or cannot be had. */
Paged *paged_new(Carrier *c, int heads, int kv_heads, int batch, int page_size, int pages, int max_pages,
		 const int32_t *table, const int32_t *lens, const int32_t *cu, int rows, char *msg, size_t n);
void paged_free(Paged *p);
/* Every key a sequence reads lies in a page of the pool: each length from
 * 0 to max_pages x page_size, each page a sequence reads from 0 to
 * pages - 1, the query offsets from 0 and never decreasing.  0, or -1
 * with msg naming the first that is not. */
int paged_layout_ok(int batch, int page_size, int pages, int max_pages, const int32_t *table, const int32_t *lens,
		    const int32_t *cu, char *msg, size_t n);

/* Whether a layout (checked by paged_layout_ok) fits this machine's
 * memory: with own, the batch's arrays (its queries, outputs and pool)
 * and its sequences gathered apart all at once, each a RunData of its
 * queries and keys (as paged_run gathers them for a device without paged
 * kernels); else its largest sequence gathered apart (the arrays being
 * the caller's).  A layout names its sizes (a query offset, a page
 * number), which nothing else bounds.  0, or -1 with msg ("... need X GiB
 * of arrays; this machine has Y GiB of memory"). */
int paged_fits(const Carrier *c, int heads, int kv_heads, int batch, int page_size, int pages, const int32_t *lens,
	       const int32_t *cu, int rows, int own, char *msg, size_t n);

/* A layout for batch sequences drawn from seed: the first with len keys,
 * the others from 0 to len, rows queries each, their pages in shuffled
 * order and one page no sequence reads; then inputs drawn as rundata_draw
 * draws them, sequence by sequence, the unread page NaN.  NULL with msg. */
Paged *paged_drawn(Carrier *c, int heads, int kv_heads, int batch, int rows, int len, int page_size, uint64_t seed,
		   const Define *params, int nparams, char *msg, size_t n);
/* Inputs for p's own layout drawn as paged_drawn draws them. */
int paged_draw(Paged *p, uint64_t seed, const Define *params, int nparams, char *msg, size_t n);

/* Sequence b as a RunData of its own (inputs gathered, params copied);
 * paged_store writes its outputs back into p's. */
RunData *paged_sequence(const Paged *p, int b);
void paged_store(Paged *p, int b, const RunData *s);

/* The batch as a device's run_batch takes it: each sequence a RunData
 * over p's pool (its queries gathered into [heads][rows]); free with
 * paged_batch_free, then paged_store each sequence's outputs where
 * wanted first. */
void paged_batch(const Paged *p, RunBatch *rb);
void paged_batch_free(RunBatch *rb);

/* Every sequence (b < batch) through dv (a device that reads pages,
 * Device.paged, on p's pool through the sequence's row of the table; any
 * other on its keys gathered; a device with Device.run_batch, the whole
 * batch in one launch), their outputs stored in p's;
 * with check, each compared with the float64 reference and the worst of
 * all of them in *rc (flat indices into p's outputs).  0, or -1 with msg. */
int paged_run(Paged *p, const Device *dv, const RunOpts *o, RunCheck *rc, double *seconds, char *msg, size_t n);

/* The most sequences one launch of a paged batch takes: the batch lies
 * on the grid's y dimension (blockIdx.y a sequence), which CUDA holds to
 * 65535; a larger batch runs in launches of that many. */
enum { PAGED_LAUNCH_SEQS = 65535 };
/* The kernels' arguments all (a paged batch's, as templates/attention.cuh
 * reads them) narrowed to the sequences from s0 on, so that a launch
 * whose blockIdx.y counts from 0 runs those: the block table's rows,
 * seq_lens, cu_seqlens_q and the workspace (ws_words 4-byte words a
 * sequence: cuda_paged_ws_words) moved on by s0 sequences, and, with no
 * cu_seqlens_q, the row inputs and outputs by s0 x rows queries.  The
 * kernels stay as they are. */
void paged_args_from(const Carrier *c, const CudaArgs *all, int s0, int page_size, size_t ws_words, CudaArgs *a);

/* Bytes of the column inputs the sequences read (each key once a
 * key/value head), and of the rows and outputs. */
double paged_kv_bytes(const Paged *p);
double paged_bytes(const Paged *p);

#endif
