/* llvm_kern.h: shared by the files that build a CPU kernel's functions
 * as LLVM IR: llvm_kern.c (inputs and outputs, loops, states, identity,
 * merge, finalize, scan), llvm_reduce.c (reduce), llvm_map.c (map and
 * rowmap). */
#ifndef ASSOC_LLVM_KERN_H
#define ASSOC_LLVM_KERN_H

#include "compiler/llvm/llvm_int.h"

/* Where an input wider than LOOP_MIN was bound one component a value: its
 * components lie from base[first * width] on (kern_wide_dot). */
typedef struct {
	LLVMValueRef *c; /* the binding's components: it holds while L.bind still has them */
	LLVMValueRef base, first;
	const Decl *d;
} WideIn;

/* The most topk lists kept apart (kern_lists_apart), and the most
 * vectors of lifted pairs a tile holds back for one test (kern_apart_lift). */
enum { APART_MAX = 8, APART_PEND = 16 };

typedef struct {
	Lower L;          /* first: kern_wide_dot takes a B for its Lower */
	Kern *k;
	WideIn *wide;     /* by var index */
	LLVMTypeRef i8, i8p, i16, i32, i64, f64, argsty;
	LLVMValueRef args, in, out, params, rows, len, i;
	LLVMValueRef period; /* CpuArgs.period, made at least 1 past the last row where it is 0 */
	LLVMValueRef qpos;   /* CpuArgs.qpos */
	/* In the page loop of a paged function (llvm_reduce.c): the page size,
	 * and each column's pointer moved to the next page as inp[] is to this
	 * one, for kern_prefetch_cols; else NULL */
	LLVMValueRef page_size, page_next[256];
	/* and the table, the last key the call reads, and each column's
	 * pointer at page 0, for kern_prefetch_keys */
	LLVMValueRef page_table, page_last_key, page_base[256];
	LLVMValueRef inp[256], outp[256], pv[256]; /* loaded once per function */
	LV *st;       /* scratch: one LV per state field */
	LLVMValueRef lmask; /* a partial last vector: its lanes below the end (masked loads and stores) */
	int nt;             /* map stores: non-temporal, 64-byte aligned (map_stream) */
	LLVMValueRef scratch; /* kern_build_rowmap: pass 2 stores k->rowmap_g of position j at scratch[j] */
	int fused;          /* and the map loads it from there */
	LLVMValueRef map_ahead; /* kern_build_rowmap's map prefetches the element inputs this many positions ahead */
	struct Ride *ride;  /* kern_build_rowmap_next: the other row's map, which pass 2 takes along */
	int riding;         /* pass 2's main loop maps ride's row as it goes (kern_ride_step) */
	int row_lanes;      /* lanes are rows b->i + l at one position (kern_build_reduce_rows) */
	LLVMValueRef ilanes; /* and the spec's i of each lane, made once before the loops */
	LLVMValueRef colbuf; /* and there the float32 column inputs of a tile's positions (kern_stage_columns) */
	LLVMValueRef qbuf;   /* and the row inputs' vectors, for dot products as loops (NULL: none) */
	LLVMValueRef *obuf;  /* and by state field, its vectors in an array (fold_loop), or NULL */
	LLVMValueRef tile_cond[VTILE]; /* the tile's positions' mask (lift_at), NULL where none */
	LV *rowv;            /* and each row input, gathered once before the loop (NULL: none yet) */
	int colslot;         /* the tile's position whose column inputs kern_bind_inputs binds from there */
	int unmasked;        /* lift_at leaves the mask out: it holds for the whole tile */
	LLVMValueRef *apart; /* reduce_lanes: the row's topk lists kept apart from the lanes, into which
			      * each vector's lifted pairs go (kern_apart_lift): by list, an alloca of its
			      * values and one of its indices, each a vector of k lanes or more; else NULL */
	int apart_hold;      /* and kern_apart_lift holds the pairs back (apart_v, apart_i) until
			      * kern_apart_flush tests them together */
	int apart_n;         /* vectors held */
	int keys_fn;         /* the function being begun takes keys as 16 lanes (llvm_keys.c) */
	LLVMValueRef jlanes; /* reduce_vectors: the lanes' positions j of the vector kern_bind_inputs
			      * binds, from a vector carried through the loop; NULL: from j */
	int any_order;       /* reduce_vectors: an accumulator may hold positions after the
			      * tile's (its streams), so kern_fold_chains starts every chain
			      * at the identity and merges the tile onto it as one state */
	LLVMValueRef apart_v[APART_PEND][APART_MAX], apart_i[APART_PEND][APART_MAX];
} B;

/* kern_build_rowmap_next's earlier row, whose map rides along pass 2 of
 * the row being reduced (llvm_map.c). */
typedef struct Ride {
	LLVMValueRef i, st, scratch; /* the row, its state (memory) and kept values */
	LV *stv;                     /* its state as scalars */
	LLVMValueRef on;             /* i1: the ride happens (else kern_ride_alone) */
	LLVMValueRef tailp;          /* alloca: where its map stands */
} Ride;

/* Rows reduced side by side (kern_reduce_two_pass; reduce_lanes, which
 * reads n and i only). */
typedef struct {
	int n;                      /* 1 .. PAIR */
	LLVMValueRef i[PAIR];       /* row indices */
	LLVMValueRef scratch[PAIR]; /* kern_build_rowmap: where each row's pass 2 keeps g (NULL: none) */
	LLVMValueRef Ms[PAIR];      /* pass 2: each row's max (0 for -inf); NULL in pass 1 */
	LLVMValueRef Mg[PAIR];      /* pass 2 of a guarded merge (llvm_tile.c) where a row's max is infinite:
				     * each row's max, for guard_rescale (llvm_reduce.c); else NULL */
	LLVMValueRef ahead[PAIR];   /* pass 2 prefetches each row's element inputs this many positions ahead */
	LLVMValueRef *acc[PAIR];    /* each row's accumulators (allocas) */
} Rows;

typedef struct {
	LLVMBasicBlockRef head, body, exit;
	LLVMValueRef ivp, iv;
	long long step;
} Loop;

static inline LLVMValueRef ci64(B *b, long long v) { return LLVMConstInt(b->i64, (unsigned long long)v, 1); }

static inline LLVMValueRef alloca_(B *b, LLVMTypeRef t)
{
	return LLVMBuildAlloca(b->L.ab, t, "");
}

static inline LLVMTypeRef storage_ty(B *b, TyKind k)
{
	switch (k) {
	case TY_BOOL: case TY_F8E4M3: return b->i8;
	case TY_F16: case TY_BF16: return b->i16;
	default: return lower_kty(&b->L, k);
	}
}

static inline LV lv1(B *b, LLVMValueRef v)
{
	LV r = lower_lv_new(&b->L, 1);
	r.c[0] = v;
	return r;
}

LLVMValueRef kern_ptr_at(B *b, LLVMValueRef base, LLVMTypeRef et, LLVMValueRef idx);
LLVMValueRef kern_lanes_below(B *b, LLVMValueRef j, LLVMValueRef hi);
/* Positions j .. j + W - 1 as the scope's vector of i32 lanes. */
LLVMValueRef kern_lanes_j(B *b, LLVMValueRef j);
LLVMValueRef kern_load_lanes(B *b, LLVMValueRef base, TyKind s, LLVMValueRef idx);
void kern_store_lanes(B *b, LLVMValueRef base, TyKind k, LLVMValueRef idx, LLVMValueRef v);
LLVMValueRef kern_begin_fn(B *b, const char *name, LLVMTypeRef *params, int n);
void kern_end_fn(B *b);
Loop kern_loop_begin(B *b, LLVMValueRef lo, LLVMValueRef hi, long long step);
void kern_loop_end(B *b, Loop *l);
LLVMValueRef kern_loop_final(B *b, Loop *l);
/* A loop of i = 0 .. n - 1 from here: kern_count_open returns i, the body
 * follows, kern_count_close ends it (unroll > 0: unrolled that many times,
 * by loop metadata; 0: as LLVM decides). */
LLVMValueRef kern_count_open(B *b, const char *name);
void kern_count_close(B *b, LLVMValueRef i, long long n, int unroll);
LLVMBasicBlockRef kern_if(B *b, LLVMValueRef cond);
void kern_if_end(B *b, LLVMBasicBlockRef done);
void kern_bind_params(B *b);
void kern_bind_inputs(B *b, LLVMValueRef j);
/* The ordered fold's inputs (reduce_ordered in llvm_reduce.c): lane l
 * of the scope's W reads segment l of the range, positions j + l*seg + t
 * for t < W.  kern_load_segments loads each element and column input's W
 * vectors (one per segment, contiguous) and transposes them into
 * out[k*W + t], input k's position t of every segment; kern_bind_segment
 * binds position t (inputs, the index j of each lane, rows and params). */
/* q, made odd (q - 1 where q is even and positive): segments of q times
 * 16 positions start an odd number of 64-byte lines apart (for 4-byte
 * inputs), so that their streams fall in different L1 sets and their
 * addresses do not alias modulo 4 KiB, as they do when a segment is a
 * power of two long (rows of 65536: every segment in one L1 set). */
LLVMValueRef kern_odd_lines(B *b, LLVMValueRef q);
/* Whether every element and column input has one component a position. */
int kern_scalar_inputs(const Carrier *c);
void kern_load_segments(B *b, LLVMValueRef j, LLVMValueRef seg, LLVMValueRef *out);
void kern_bind_segment(B *b, LLVMValueRef j, LLVMValueRef seg, LLVMValueRef *in, int t);
int kern_staged_width(const Carrier *c);
/* Where staged column input k starts in a position's block of colbuf. */
int kern_staged_off(const Carrier *c, int k);
LV kern_staged_col(B *b, int k, int slot);
/* Prefetch the vector column inputs of positions j .. j + n - 1 some
 * way ahead (positions past the row: prefetches never fault). */
void kern_prefetch_cols(B *b, LLVMValueRef j, int n);
/* In a paged function's loop of rows as lanes: software prefetch, into
 * L2, of the column inputs of keys j + PAGED_AHEAD .. + n - 1, each
 * through the table. */
void kern_prefetch_keys(B *b, LLVMValueRef j, int n);
LV kern_row_lanes_decl(B *b, const Decl *d, LLVMValueRef base);
LLVMValueRef kern_lanes_i(B *b);
void kern_row_lanes_into(B *b, const Decl *d, LLVMValueRef base, LLVMValueRef buf, int at);
LLVMValueRef kern_mem_slot(B *b, LLVMValueRef st, int f, LLVMValueRef t, LLVMTypeRef ty);
void kern_stage_columns(B *b, LLVMValueRef j, int n);
LV *kern_state_slots(B *b);
void kern_slots_load(B *b, LV *slots, LV *v);
void kern_slots_store(B *b, LV *slots, LV *v);
void kern_step_slots(B *b, LV *slots, LLVMValueRef j, LV *tmp);
LLVMValueRef kern_state_at(B *b, LLVMValueRef st, int r);
void kern_mem_load(B *b, LLVMValueRef st, LV *v);
void kern_mem_store(B *b, LLVMValueRef st, LV *v);
void kern_state_exprs(B *b, Expr **ex, LV *out);
void kern_identity(B *b, LV *out);
void kern_merge(B *b, LV *x, LV *y, LV *out);
void kern_step(B *b, LV *s, LV *tmp);
LLVMTypeRef *kern_sig(B *b, int n, LLVMTypeRef *t);
void kern_store_outputs(B *b, Def *defs, int n, int first, LLVMValueRef at);
void kern_bind_self(B *b, LV *s);
void kern_finalize_body(B *b, LLVMValueRef st, LLVMValueRef at);
enum { PREFETCH_L1 = 3, PREFETCH_L2 = 2 }; /* llvm.prefetch's locality */
/* outputs of this many bytes or more in all go out non-temporal (map_stream, scan_lanes) */
#define MAP_STREAM_BYTES (64LL << 20)
/* A read prefetch of the line at p into L1 or L2 (llvm_reduce.c). */
void kern_prefetch(B *b, LLVMValueRef p, int locality);
void kern_prefetch_at(B *b, LLVMValueRef j, LLVMValueRef ahead, int locality);
/* The T lifted states of s folded by a balanced tree of the spec's
 * merges, into s[0] (llvm_reduce.c). */
void kern_fold_tree(B *b, LV **s, int T, LV *tmp);
/* The T lifted states of s folded onto acc in order, in chains that
 * start at acc (at the identity where b->any_order) and at the identity
 * (at their first lift where k->lift_chains), into out (llvm_reduce.c);
 * s's states are overwritten. */
void kern_fold_chains(B *b, LV *acc, LV **s, int T, LV *out);
/* The ordered fold's chains: positions a chain (llvm_reduce.c says why) */
enum { ORDERED_CHAIN = 8 };
/* v[0 .. n-1] reduced pairwise by the monoid op (EXPR_ADD, EXPR_MUL,
 * EXPR_MAX, EXPR_MIN; max and min by compare and select), into v[0]
 * (llvm_reduce.c). */
LLVMValueRef kern_monoid_tree(Lower *L, Op op, LLVMValueRef *v, int n);
/* The accumulator's state (b->st) merged with the tile s of T lifted
 * states (cond[t]: the lanes position t keeps, NULL: all) into tmp[0 ..
 * nstate), transported where every lane's tile allows it, else by
 * kern_fold_chains (llvm_tf.c).  tmp holds 3 * nstate. */
void kern_tf_tile(B *b, LV **s, LLVMValueRef *cond, int T, LV *tmp);
/* The tile's transported state into r (nstate), and where it may stand
 * for the tile's fold (every sum finite), lane by lane.  A field or
 * coordinate of the one-lane tiles may be a vector: each component sums
 * apart. */
LLVMValueRef kern_tf_transported(B *b, LV **s, LLVMValueRef *cond, int T, LV *r);
/* The one-lane transported tiles' positions (reduce_tf_tiles in
 * llvm_reduce.c): at most TF_ONE_TILE, fewer for a wider state
 * (kern_plan_tf). */
enum { TF_ONE_TILE = 16 };
void kern_reduce_two_pass(B *b, Rows *R, LLVMValueRef lo, LLVMValueRef hi, LV **one, LV *tmp);
/* The state of [lo, hi) of each of R's rows in one[r] (scalar slots) by
 * the vector loops; with b->ride (kern_build_rowmap_next), the other
 * row's map along their main loop, MAP_STEP positions at a time, where
 * ride->on, else before them (kern_ride_alone). */
void kern_reduce_lanes(B *b, Rows *R, LLVMValueRef lo, LLVMValueRef hi, LV **one, LV *tmp);
void kern_build_reduce2(B *b);
void kern_build_reduce_rows(B *b);
void kern_build_reduce(B *b);
/* Paged kernels (Kern.paged): assoc_reduce_pages, where the reduce folds
 * in one lane (kern_reduces_pages), and assoc_reduce_rows_pages, which
 * read a row's keys page by page through its block table (llvm_reduce.c). */
void kern_build_reduce_pages(B *b);
void kern_build_reduce_rows_pages(B *b);
/* Positions per block of reduce_filtered (llvm_reduce.c), and whether it
 * serves c: topk lists beside max and min fields, scalar elements. */
enum { FILTER_LANES = 16 };
int kern_filter_fits(const Carrier *c);
/* A topk list of a state: its value and index fields, its length. */
typedef struct {
	int v, i, k;
} TopkList;
/* The topk lists of c that may fold apart from the vector lanes, in ls
 * (NULL: counted only), and their number; 0 where c has none, or one
 * that may not: each a value field (float) and its index field (int32),
 * lifted as a list of one pair of scalars, topk(v, i, k), identity
 * (-inf, -1), merged by topk(a.v, a.i, b.v, b.i), and no other field's
 * merge reading either. */
int kern_lists_apart(const Carrier *c, TopkList *ls);
/* The lifted pairs of the lists kept apart (b->apart) go into the row's
 * lists (those of lanes where cond is false, if cond, do not), and lifted
 * holds the empty list in their place. */
void kern_apart_lift(B *b, LV *lifted, LLVMValueRef cond);
/* The pairs held back (b->apart_hold) into the row's lists: one test of
 * all their values against each list's last slot first. */
void kern_apart_flush(B *b);
void kern_build_map(B *b);
void kern_build_fence(B *b);
void kern_build_rowmap(B *b, int pair);
void kern_build_rowmap_next(B *b);
/* Positions of ride's map per kern_ride_step (MAP_UNROLL vectors of 16). */
enum { MAP_STEP = 64 };
void kern_ride_begin(B *b);
void kern_ride_step(B *b);
void kern_ride_end(B *b);
void kern_ride_alone(B *b);

/* llvm_keys.c: the reduce with keys as the lanes (decoding).  Within a
 * function begun with b->keys_fn set, rows i0 .. i0 + G - 1 (G at most
 * KEYS_ROWS): kern_keys_begin sets their states to the identity,
 * kern_keys_range folds keys [lo, hi) into them (called again for each
 * page of a paged function), kern_keys_end stores them from st on, one
 * after the other, and frees K.  kern_keys_fit: whether k's carrier
 * takes it, else why not. */
enum { KEYS_ROWS = 16, KEYS_DOTS = 4, KEYS_FIELDS = 16, KEYS_UNROLLED = 16 };
struct Keys;
struct Keys *kern_keys_begin(B *b, LLVMValueRef i0, int G);
void kern_keys_range(B *b, struct Keys *K, LLVMValueRef lo, LLVMValueRef hi);
void kern_keys_end(B *b, struct Keys *K, LLVMValueRef st);
/* llvm_kern.c: the element of a column input that holds key j; a stored
 * value (scalar or the scope's lanes) of storage s as kind k */
LLVMValueRef kern_key_elem(B *b, LLVMValueRef j);
LLVMValueRef kern_from_storage(B *b, LLVMValueRef v, TyKind s, TyKind k);

#endif
