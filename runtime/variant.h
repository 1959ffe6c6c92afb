/* variant.h: a kernel variant, as the CUDA generator builds it, the tuner
 * searches it and the tuning cache stores it, and its one text form
 * ("rowmap:nt=256,acc=2,vec=4,warp=0,items=0,split=4"), which --config
 * takes and the cache holds. */
#ifndef ASSOC_RT_VARIANT_H
#define ASSOC_RT_VARIANT_H

#include <stddef.h>

/* Template families: a spec's `template:` (FAM_NONE where it says none)
 * and the kernels of a module (splitk: the split kernels of a row
 * template). */
typedef enum { FAM_NONE, FAM_ROWREDUCE, FAM_ROWMAP, FAM_SPLITK, FAM_SCAN, FAM_ATTN, NFAM } Family;

enum { VARIANT_MAX_SPLIT = 1 << 16 };

/* One variant: threads per block, accumulators per thread, 4-wide loads
 * (vec 4), a warp per row, elements kept on chip per thread; attention:
 * tiles of 16 query rows per warp (mt), keys per tile (bn), parts of P in
 * the matrix product (pv; 1: rounded to f16/bf16), pipeline stages of K
 * and V tiles (st: at most that many, as many as fit) and the warps that
 * share rows and split each key tile among them (ks: a block then has
 * nt / 32 / ks * mt * 16 query rows); wg > 0: the Hopper template
 * (templates/attention_sm90.cuh, sm_90a) with wg warpgroups of 64 query
 * rows (nt = 128 wg; mt 1, ks 1), 0: the mma.sync template; ws > 0 (wg
 * 2, st 2 or more): its warp-specialized schedules, a producer warpgroup
 * beside the two (nt 384), whose turns at the tensor cores alternate,
 * ws 2 also running each tile's softmax under the last tile's P V.
 * split: blocks a row's reduced axis
 * is split across (splitk, scan, attention; 1 elsewhere), 0 where the
 * text does not say and the shape's rule chooses; a module's kernels have
 * none.  Row templates (rowreduce, rowmap, splitk): un, the loads of acc
 * accumulators each thread issues before it folds any of them (bytes in
 * flight: un * acc 16-byte loads; 0 and 1 alike mean one), and tf, each
 * such tile folded in the coordinates of the carrier's proved certificate
 * (templates/blocks.cuh: tile_fold).  cl (rowreduce and rowmap, a block
 * a row, sm_90): a row split across a thread-block cluster of cl blocks
 * (2, 4, 8 or 16; 0: none), whose partial states are merged through
 * distributed shared memory (templates/rowcluster.cuh); with items, the
 * row stays on chip across the cluster.  bk (rowreduce and rowmap, a
 * block a row, sm_90): the row streamed through a ring of bk stages of
 * shared memory by 1D bulk copies (cp.async.bulk) that one thread issues
 * and mbarriers complete (templates/rowbulk.cuh; 2 to 8; 0: none). */
typedef struct {
	Family fam;
	int nt, acc, vec, warp, items;
	int mt, bn, pv;
	int st, ks;
	int split;
	int wg;
	int un, tf;
	int ws;
	int cl;
	int bk;
} Variant;

/* "rowreduce", "rowmap", "splitk", "scan", "attention" ("none" for FAM_NONE). */
const char *variant_family_name(Family f);
/* The family a name gives, FAM_NONE for none. */
Family variant_family(const char *name);
/* The text of v; split is written when v says one. */
void variant_str(const Variant *v, char *buf, size_t n);
/* The variant a text names; -1 with the reason in msg for a text that
 * names none.  Keys left out take fixed defaults, not a rule's: nt 128,
 * acc 1, vec 1, un 1 and 0 for the others (scan: items 4; attention: mt
 * 1, bn 64, pv 1, st 2, ks 1; wg 2 where ws is given without it, and nt,
 * mt and ks as wg gives them); split 0 (the shape's rule). */
int variant_parse(const char *s, Variant *v, char *msg, size_t n);
/* The keys of its family whose values differ between asked (as
 * variant_parse read a configuration) and got (the variant a module made
 * of it, fitted to the carrier and the device), as "acc=4 -> 2, bk=8 ->
 * 7" in buf; how many.  The split is the launch's, not compared. */
int variant_changes(const Variant *asked, const Variant *got, char *buf, size_t n);

#endif
