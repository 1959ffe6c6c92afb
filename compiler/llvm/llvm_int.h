/* llvm_int.h: shared by the LLVM lowering files (llvm_expr.c, llvm_math.c,
 * llvm.c): the lowering context and its expression and math emitters. */
#ifndef ASSOC_LLVM_INT_H
#define ASSOC_LLVM_INT_H

#include <llvm-c/Core.h>

#include "compiler/front/spec.h"
#include "compiler/prove/prove.h"

/* A lowered value: n components (n == 1 broadcasts over a spec vector),
 * each a scalar of its kind, or a <W x kind> vector when the scope runs
 * W lanes (W consecutive positions of a row side by side). */
typedef struct {
	LLVMValueRef *c;
	int n;
} LV;

typedef struct Arena Arena;

typedef struct Lower Lower;

struct Lower {
	LLVMContextRef ctx;
	LLVMModuleRef mod;
	LLVMBuilderRef b;
	Carrier *c;
	int W;            /* lanes of the current scope */
	unsigned gen;     /* memo generation: bumped whenever bindings or W change */
	unsigned *mgen;   /* by expr id */
	LV *memo;
	int nmemo;
	unsigned *agen;   /* by MAX node id: the exp shared by exp(u - max(u, v)) and exp(v - max(u, v)) */
	LV *aux;
	LV *bind;         /* by var index: the value of each input, state or index var */
	Arena *arena;
	int avx512;       /* the host has AVX-512F: 16-lane math uses vscalefps */
	int f16c;         /* the host converts f16 to f32 in one instruction (vcvtph2ps) */
	LLVMValueRef fn;  /* the function being built */
	LLVMBuilderRef ab; /* positioned in its entry block, for allocas */
	int fma;          /* dot products in lanes as chains of llvm.fmuladd (kern_build_reduce_rows) */
	LLVMValueRef *dotpre; /* by expr id * VTILE + dotslot: a dot product computed ahead, or NULL */
	int dotslot;
	int hoist;        /* build_map's checks on the row's invariant values passed (is_hoisted in llvm_expr.c) */
	unsigned char *varies; /* by expr id: 0 unknown, 1 invariant over a row's positions, 2 varies */
	int probe;        /* reduce_filtered: a topk insertion gives its list back unchanged, and */
	LLVMValueRef changed; /* the lanes where it would have changed it are or'ed in here */
	/* A float32 dot product of two inputs wider than LOOP_MIN in a one-lane
	 * scope as a loop over their memory (kern_wide_dot in llvm_kern.c), or
	 * NULL where it cannot be one; lower_node asks it first. */
	LLVMValueRef (*wide_dot)(Lower *L, Expr *e);
	unsigned char *nan_var;  /* by var: a state field's, never NaN (lower_nan_free) */
	unsigned char *nan_memo; /* by expr id: lower_nan_free's answers */
};

/* Past this many components, a dot product of two inputs is a loop over
 * chunks of DOT_CHUNK components, read from the inputs' memory, instead
 * of a chain as long as the vectors: straight-line code of thousands of
 * instructions compiles in time that grows faster than linearly
 * (attention in one lane, d = 1024: the reduce alone was 19000 lines of
 * optimized IR).  Below it nothing changes. */
enum { LOOP_MIN = 128, DOT_CHUNK = 16 };
/* Row and column inputs past UNROLL_MAX components: the loops over a
 * group's components are loops (unrolled twice), not straight code, on
 * every host (llvm.c's plan says why). */
enum { UNROLL_MAX = 16 };

/* llvm_kern.c, llvm_reduce.c, llvm_map.c: the kernel's functions
 * (runtime/cpu.h's ABI) in a module. */
typedef struct {
	Carrier *c;
	int lanes, accs; /* reduce loop: positions per vector, accumulators */
	int ordered;     /* or, a merge not known to commute: lanes of the ordered fold
			  * (reduce_ordered in llvm_reduce.c), each a segment of the row; else 0 */
	int tile;        /* reduce loop: vectors per tile, folded before they meet an accumulator */
	int group;       /* reduce_tiles: rows side by side in assoc_reduce_rows (1: no such function) */
	int rows_tile;   /* and positions per tile there */
	int loop_unroll; /* and its dot products and column-fed fields as loops over their components,
			  * unrolled this many times (0: no loops, all unrolled) */
	int mr_field;    /* max-rescale carriers: the max field (llvm_tile.c), else -1 */
	Op mr_g;         /* and its EXPR_EXP or EXPR_EXP2 */
	int mr_guard;    /* and where its rescale is 1 (llvm_tile.c): MR_PLAIN, MR_GUARD_INF, MR_GUARD_MAX */
	int two_pass;    /* max-rescale carriers with vectors: input bytes per position, rows up to
			  * TWO_PASS_BYTES reduce in two passes (kern_reduce_two_pass in llvm_reduce.c); else 0 */
	Expr *rowmap_g;  /* the map's g(lift.m - m), which pass 2 of kern_reduce_two_pass keeps for it
			  * (kern_build_rowmap in llvm_map.c); NULL: no rowmap */
	int rowmap_lanes; /* a one-pass reduce in lanes with a streamed map (Welford's layer norm): input
			   * bytes per position; whole rows of up to TWO_PASS_BYTES then run reduce,
			   * finalize and map in one call (kern_build_rowmap), a row's map along the
			   * next row's vector loop (kern_build_rowmap_next); else 0 */
	int map_lanes;   /* map loop */
	int map_stream;  /* large map outputs go out with non-temporal stores (map_stream in llvm_map.c) */
	int scan_lanes;  /* a scan of scalars: lanes of its blocks (scan_lanes in llvm_kern.c), else 0 */
	int scan_tiles;  /* and tiles of scan_lanes^2 positions (scan_tile in llvm_kern.c) */
	int select;      /* topk lists chosen from a few candidates (kern_selects, reduce_selected in
			  * llvm_reduce.c) */
	int narrow;      /* and the host compresses 16-bit lanes (select_narrow there) */
	int apart;       /* topk lists kept apart from the vector lanes, one sorted list a row's range
			  * (kern_lists_apart, llvm_reduce.c): their number, else 0 */
	int keys;        /* assoc_reduce, and assoc_reduce_rows for fewer than 16 rows, take keys as
			  * the lanes (llvm_keys.c) */
	int key_stride;  /* key j of a column input is element j * key_stride (LlvmOpts.key_stride) */
	int paged;       /* and the functions that read a paged pool are built (LlvmOpts.key_stride > 0) */
	int *soff;       /* 8-byte slot of each state field's first component */
	size_t state_bytes;
	char one_lane[120]; /* why the reduce folds one position at a time in one lane, or "" */
	char order[400]; /* why the merge may take its positions in any order, or why not */
	int lift_chains; /* a tile's chains of merges start at their first position's lift, not
			  * at the identity merged with it (kern_fold_chains): e+a = a at every lift */
	char chain_why[400]; /* how that is known, or why not; "" where no tile folds so */
	int tf;          /* the vector lanes' tiles fold transported (llvm_tf.c), and */
	int tf_moving[TRANSPORT_MAX_FIELDS]; /* the fields that move with the element there */
	char tf_why[240]; /* what that fold does, or why it is not taken */
	Carrier frame;   /* c with a certificate derived from its maximum (transport_frame), where the
			  * fold takes it: c then points here (kern_plan_free frees it) */
} Kern;
/* Rows (the range one reduce call covers) of at most this many input bytes
 * take two passes instead of the online fold.  L2 is 1 MiB per core on
 * Skylake-SP and later x86 server cores (2 MiB on Sapphire Rapids, 512 KiB
 * on Zen 2/3); a quarter of it leaves room for the other hyperthread, the
 * map's outputs and the prefetchers, so pass 2 (and then the map) reads
 * the row from L2, not memory.  Longer rows would be read from memory
 * twice: they keep the online fold, which reads them once. */
#define TWO_PASS_BYTES (256LL << 10)

/* Rows of fewer than PAIR_LEN positions go PAIR at a time through the
 * reduce (assoc_reduce2: kern_reduce_two_pass's passes interleaved, or
 * the vector loops one row after the other and then their merges
 * together) and the rowmap (assoc_rowmap2): much of a short row's time is
 * the latency of chains (pass 1's max before pass 2, the sums', the
 * lanes' halving merges: Welford's divisions), which the other row's work
 * fills.  In cache, one thread, rows of 256, ns a row alone -> in pairs:
 * logsumexp 118 -> 109, softmax 139 -> 132, Welford 99-123 -> 84-88.
 * Below ALIGN_MIN (llvm_reduce.c), so no alignment peel. */
enum { PAIR = 2, PAIR_LEN = 1024 };

/* Past this many state components the carrier's merge is one block of
 * thousands of instructions, over which the SLP vectorizer's time grows
 * faster than linearly: at 256 components (o_lse at dv = 256) the optimizer
 * took 7.9 of 8.4 seconds, SLP first in its profile, and at 1024 the whole
 * compile about 290.  Such a module's functions are marked noimplicitfloat,
 * which keeps the SLP and loop vectorizers out: 1.0 and 6.2 seconds, for
 * code that runs about half as fast (scalar across components; the row
 * lanes stay vectors). */
enum { SLP_STATE_MAX = 160 };
/* The components of c's state fields, and whether they are more than
 * SLP_STATE_MAX. */
int kern_state_components(const Carrier *c);
int kern_wide_state(const Carrier *c);

/* Positions per tile of a max-rescale carrier with vector fields, folded
 * in one lane (reduce_tiles in llvm_reduce.c).  Attention's (m, l, o), one
 * thread, 1024 queries x 1024 keys: at d = 64, 0.031 G pairs/s position by position,
 * 0.046 in tiles of 4, 0.056 of 8, no better at 16; at d = 128, 0.019,
 * 0.032, 0.036.  Compiling costs about twice as much as without tiles
 * (d = 128: 0.7 -> 1.7 s); past SLP_STATE_MAX there are none. */
enum { VTILE = 8 };
/* Whether the kernel has assoc_reduce2: the two passes, or vector loops. */
static inline int kern_has_reduce2(const Kern *k) { return k->two_pass || k->select || k->lanes > 1 || k->accs > 1; }

void kern_plan(Kern *k, Carrier *c, int lanes, int accs, int tile, int rows, int rows_tile);
/* llvm_keys.c: whether k's reduce may take keys as the lanes, else why not. */
int kern_keys_fit(const Kern *k, char *why, size_t n);
/* Whether a paged kernel of k reads a row's pages in one call
 * (assoc_reduce_pages: the reduce folds in one lane, tiles or key by
 * key); else each run of pages is a call of assoc_reduce (llvm_reduce.c). */
int kern_reduces_pages(const Kern *k);
/* Whether reduce_selected (llvm_reduce.c) serves c on this host. */
int kern_selects(const Carrier *c);

/* llvm_tile.c: the max field of a max-rescale merge (g set to EXPR_EXP or
 * EXPR_EXP2, guard to how its argument is guarded), or -1 when the merge
 * is not one. */
enum { MR_PLAIN, MR_GUARD_INF, MR_GUARD_MAX };
int tile_max_rescale(const Carrier *c, Op *g, int *guard);
/* And how field f of such a merge folds by itself: EXPR_ADD (a.f + b.f),
 * EXPR_MAX (max(a.f, b.f)), or -1 where it is rescaled. */
int tile_extra_fold(const Carrier *c, int f);
/* Whether field f (not a plain sum or max) folds apart from max field mi:
 * its merge reads, through any fields it reads in turn, neither mi nor a
 * field rescaled by it (softmax's top-k list beside (m, l)); and whether
 * any field does. */
int tile_own_fold(const Carrier *c, int mi, int f);
int tile_has_own(const Carrier *c, int mi);
int kern_build(Kern *k, LLVMContextRef ctx, LLVMModuleRef mod);
/* llvm_tf.c: whether the vector lanes' tiles of c fold transported (want
 * -1: never; else where prove_transport allows it, by c's certificate or
 * one derived from its maximum, transport_frame), in k->tf with what it
 * does or why not in k->tf_why; the tile grows where not given.
 * kern_plan_free frees what the plan holds. */
void kern_plan_tf(Kern *k, Carrier *c, int want, int tile_given);
/* llvm_kern.c: whether the vector lanes' tiles start their chains of
 * merges at a lift (k->lift_chains, how in k->chain_why), once the plan
 * has its tiles: where the identity leaves every lift as it is. */
void kern_plan_chains(Kern *k);
void kern_plan_free(Kern *k);

/* llvm_expr.c */
void lower_init(Lower *L, LLVMContextRef ctx, LLVMModuleRef mod, Carrier *c);
void lower_free(Lower *L);
void lower_scope(Lower *L, int W); /* forget memoized values; set the lanes */
LV lower_expr(Lower *L, Expr *e);
/* The sum of a <DOT_CHUNK x float> vector's lanes, halved in a tree (the
 * order of dot products in one lane). */
LLVMValueRef lower_halve_sum(Lower *L, LLVMValueRef acc);
/* llvm_topk.c: a topk or topk_idx node */
LV lower_topk(Lower *L, Expr *e);
void lower_preset(Lower *L, Expr *e, LV v); /* e's value in the current scope is v */
/* Sort the scope's W lanes of (v, i), float values and int32 indices, as
 * topk ranks pairs, first-ranked in lane 0: a bitonic network, its
 * comparisons topk's ranking without NaN (no value may be NaN); i NULL:
 * v alone, descending. */
void lower_topk_sort(Lower *L, LLVMValueRef *v, LLVMValueRef *i);
/* (v, i) = the top W pairs of two lists sorted so, still sorted. */
void lower_topk_top(Lower *L, LLVMValueRef *v, LLVMValueRef *i, LLVMValueRef v2, LLVMValueRef i2);
/* Lane by lane, whether the pair (v, i) ranks before (lv, li) in a topk
 * list (ir_topk_before), lv a number (v may be NaN): a pair that would
 * enter a list whose last slot is (lv, li). */
LLVMValueRef lower_topk_enters(Lower *L, LLVMValueRef v, LLVMValueRef i, LLVMValueRef lv, LLVMValueRef li);
/* A sorted list of pairs as the lanes of *v (float values) and *i (int32
 * indices), first-ranked in lane 0, with the scalar pair (x, xi)
 * inserted as topk ranks it, the last lane's pair dropped; unchanged
 * where the pair ranks after every lane.  No value may be NaN. */
void lower_topk_insert(Lower *L, LLVMValueRef *v, LLVMValueRef *i, LLVMValueRef x, LLVMValueRef xi);
/* A float vector's lanes as unsigned integers in the same order (-0 just
 * below +0, NaN outside the numbers), and back. */
LLVMValueRef lower_ord_bits(Lower *L, LLVMValueRef v);
LLVMValueRef lower_ord_float(Lower *L, LLVMValueRef u);
/* An integer vector's lanes sorted as unsigned, descending where desc,
 * by a bitonic network of max and min. */
LLVMValueRef lower_sort_keys(Lower *L, LLVMValueRef x, int desc);
/* The top k (at most 16) of 16 pairs of float values v and int32 indices
 * i, as topk ranks them, sorted into *ov and *oi (8 lanes where k <= 8,
 * else 16): each pair a 64-bit key, its value's order above the index's
 * complement, so that comparing two keys is one unsigned compare.  No
 * value may be NaN, and a -0 beside a +0 would rank by sign, not index. */
void lower_topk_keys(Lower *L, LLVMValueRef v, LLVMValueRef i, int k, LLVMValueRef *ov, LLVMValueRef *oi);
LV lower_lv_new(Lower *L, int n);
LLVMValueRef lower_lv_at(LV v, int t);
LLVMTypeRef lower_kty(Lower *L, TyKind k);          /* scalar type of a kind */
LLVMTypeRef lower_vty(Lower *L, TyKind k);          /* with the scope's lanes */
LLVMValueRef lower_const(Lower *L, TyKind k, double v);
LLVMValueRef lower_splat(Lower *L, LLVMValueRef s); /* scalar to the scope's lanes */
LLVMValueRef lower_conv(Lower *L, LLVMValueRef v, TyKind from, TyKind to);
LLVMValueRef lower_intrinsic(Lower *L, const char *name, LLVMTypeRef ty, LLVMValueRef *args, int n);
/* A target intrinsic without overloaded types. */
LLVMValueRef lower_intrinsic0(Lower *L, const char *name, LLVMValueRef *args, int n);
int lower_host_avx512(void);
/* whether the CPU compiled for (cpu_target) has a feature: "+f16c" */
int lower_host_has(const char *feature);

/* The CPU compiled for (llvm_target.c): ASSOC_CPU's, or the host's. */
typedef struct {
	char *cpu;  /* LLVM's name for it */
	char *feat; /* its features as LLVMGetHostCPUFeatures writes them: "+avx2,-avx512f,..." */
	int named;  /* 1: ASSOC_CPU's, not the host's */
} CpuTarget;
/* 0, or -1 with msg where ASSOC_CPU names no CPU of llvm_target.c's
 * table, or one with features this host lacks; cpu_target_free after 0. */
int cpu_target(CpuTarget *t, char *msg, size_t n);
void cpu_target_free(CpuTarget *t);
int cpu_target_has(const CpuTarget *t, const char *feature);
int lower_width(const Expr *e); /* components (1 for scalars) */
/* x > y ? x : y (max) or x < y ? x : y, as x86's vmaxps and vminps: y
 * where either is NaN, and where both are zeros */
LLVMValueRef lower_sel_max(Lower *L, LLVMValueRef x, LLVMValueRef y, int max);
/* Whether e, over the state fields' vars and consts, is never NaN
 * (llvm_expr.c: fields that no fold makes NaN) */
int lower_nan_free(Lower *L, const Expr *e);
int lower_varies(Lower *L, const Expr *e); /* depends on the position (elements, columns, j) */

/* llvm_math.c: float32 exp, exp2, log, expm1, log1p and tanh by range
 * reduction and polynomial, branch-free, in the scope's lanes. */
LLVMValueRef math_exp(Lower *L, LLVMValueRef x);
LLVMValueRef math_exp_nonpos(Lower *L, LLVMValueRef x); /* x <= 0, -inf or NaN */
LLVMValueRef math_exp2(Lower *L, LLVMValueRef x);
LLVMValueRef math_log(Lower *L, LLVMValueRef x);
LLVMValueRef math_expm1(Lower *L, LLVMValueRef x);
LLVMValueRef math_log1p(Lower *L, LLVMValueRef x);
LLVMValueRef math_tanh(Lower *L, LLVMValueRef x);
/* op (EXPR_EXP, EXPR_EXP2, EXPR_LOG, EXPR_EXPM1, EXPR_LOG1P, EXPR_TANH) of
 * float32 x by the functions above */
LLVMValueRef math_f32(Lower *L, int op, LLVMValueRef x);

#endif
