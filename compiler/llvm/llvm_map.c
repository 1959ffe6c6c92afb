/* llvm_map.c: a CPU kernel's map and rowmap functions (llvm_kern.h):
 * the map's outputs at each position of a row from the row's state, in
 * vectors, hoisting what the row fixes; and the rowmap, one call for a
 * row's reduce, finalize and map that keeps pass 2's exps for the map. */
#include <stdlib.h>
#include <string.h>

#include "compiler/llvm/llvm_kern.h"

/* The map outputs of positions iv .. iv+W-1, with the row's state st
 * (scalars) splat to the lanes. */
static void map_at(B *b, LV *st, LLVMValueRef iv, LLVMValueRef rowbase)
{
	Carrier *c = b->k->c;
	lower_scope(&b->L, b->L.W);
	kern_bind_inputs(b, iv);
	for (int fl = 0; fl < c->nstate; fl++) {
		b->st[fl] = lower_lv_new(&b->L, st[fl].n);
		for (int t = 0; t < st[fl].n; t++)
			b->st[fl].c[t] = lower_splat(&b->L, st[fl].c[t]);
	}
	kern_bind_self(b, b->st);
	if (b->fused)
		lower_preset(&b->L, b->k->rowmap_g, lv1(b, kern_load_lanes(b, b->scratch, TY_F32, iv)));
	if (b->map_ahead)
		kern_prefetch_at(b, iv, b->map_ahead, PREFETCH_L2); /* a whole row ahead */
	kern_store_outputs(b, c->map, c->nmap, c->nfinal, LLVMBuildAdd(b->L.b, rowbase, iv, ""));
}

/* Unrolled, the exps of consecutive vectors of the map interleave
 * (LLVM leaves this loop rolled). */
enum { MAP_UNROLL = 4 };
_Static_assert(MAP_STEP == MAP_UNROLL * 16, "a ride step is MAP_UNROLL streamed vectors of 16");

/* MAP_UNROLL vectors of the map from position at. */
static void map_vectors(B *b, LV *st, LLVMValueRef at, LLVMValueRef rowbase)
{
	int W = b->k->map_lanes;
	for (int u = 0; u < MAP_UNROLL; u++)
		map_at(b, st, u ? LLVMBuildAdd(b->L.b, at, ci64(b, (long long)u * W), "") : at, rowbase);
}

/* The unrolled map loop from *tail to hi; *tail is where it stopped. */
static void map_unrolled(B *b, LV *st, LLVMValueRef tailp, LLVMValueRef hi, LLVMValueRef rowbase)
{
	int W = b->k->map_lanes;
	lower_scope(&b->L, W);
	Loop l = kern_loop_begin(b, LLVMBuildLoad2(b->L.b, b->i64, tailp, ""), hi, (long long)MAP_UNROLL * W);
	map_vectors(b, st, l.iv, rowbase);
	kern_loop_end(b, &l);
	LLVMBuildStore(b->L.b, kern_loop_final(b, &l), tailp);
}

/* One 4-byte output in 16 lanes (Kern.map_stream): a masked vector runs
 * up to the output's first 64-byte aligned position, so that the vectors
 * after it store whole cache lines: non-temporal stores need that, and
 * a plain store that straddles two lines (any 64-byte vector of an array
 * from calloc, 16 bytes past a line) costs two. */
static void map_align(B *b, LV *st, LLVMValueRef tailp, LLVMValueRef hi, LLVMValueRef rowbase)
{
	Lower *L = &b->L;
	int W = b->k->map_lanes;
	LLVMValueRef tail = LLVMBuildLoad2(L->b, b->i64, tailp, "");
	LLVMValueRef out = kern_ptr_at(b, b->outp[b->k->c->nfinal], b->i32, LLVMBuildAdd(L->b, rowbase, tail, ""));
	LLVMValueRef mis = LLVMBuildAnd(L->b, LLVMBuildNeg(L->b, LLVMBuildPtrToInt(L->b, out, b->i64, ""), ""), ci64(b, 63), "");
	LLVMValueRef start = LLVMBuildAdd(L->b, tail, LLVMBuildLShr(L->b, mis, ci64(b, 2), ""), "");
	start = LLVMBuildSelect(L->b, LLVMBuildICmp(L->b, LLVMIntSLT, start, hi, ""), start, hi, "");
	LLVMBuildStore(L->b, start, tailp);
	LLVMBasicBlockRef done = kern_if(b, LLVMBuildICmp(L->b, LLVMIntSLT, tail, start, ""));
	lower_scope(L, W);
	b->lmask = kern_lanes_below(b, tail, start);
	map_at(b, st, tail, rowbase);
	b->lmask = NULL;
	kern_if_end(b, done);
}

/* Outputs far larger than the last-level cache (MAP_STREAM_BYTES in all)
 * go out with non-temporal stores: no read for ownership, a third less
 * memory traffic for softmax (read x, write y, instead of read x, read y,
 * write y), and the cache keeps the input.  They are made visible by
 * assoc_fence (kern_build_fence), which the executor calls once per task,
 * not here once per row: the fence waits for the write-combining buffers
 * to drain (softmax, 65536 x 256, one thread, best of 15: 0.70-0.77 ->
 * 0.84-0.89 G elements/s without it per row). */

static void map_stream(B *b, LV *st, LLVMValueRef tailp, LLVMValueRef hi, LLVMValueRef rowbase)
{
	map_align(b, st, tailp, hi, rowbase);
	b->nt = 1;
	map_unrolled(b, st, tailp, hi, rowbase);
	b->nt = 0;
}

/* assoc_fence(): the non-temporal stores before it visible before any
 * store after it (the pool's barrier, the caller's next).  On x86 sfence,
 * which does not wait for loads as mfence does (softmax, 2048 x 32768,
 * one thread, medians of 5 alternated runs: 10.5 -> 11.1 GB/s). */
void kern_build_fence(B *b)
{
	LLVMTypeRef ft = LLVMFunctionType(LLVMVoidTypeInContext(b->L.ctx), NULL, 0, 0);
	LLVMValueRef f = LLVMAddFunction(b->L.mod, "assoc_fence", ft);
	LLVMPositionBuilderAtEnd(b->L.b, LLVMAppendBasicBlockInContext(b->L.ctx, f, "entry"));
	if (!strncmp(LLVMGetTarget(b->L.mod), "x86_64", 6))
		lower_intrinsic0(&b->L, "llvm.x86.sse.sfence", NULL, 0);
	else
		LLVMBuildFence(b->L.b, LLVMAtomicOrderingSequentiallyConsistent, 0, "");
	LLVMBuildRetVoid(b->L.b);
}

/* Whether the map's outputs go out streamed (map_stream): an i1. */
static LLVMValueRef outputs_stream(B *b)
{
	LLVMValueRef n = LLVMBuildMul(b->L.b, b->rows, b->len, "");
	return LLVMBuildICmp(b->L.b, LLVMIntSGE, n, ci64(b, MAP_STREAM_BYTES / 4), "");
}

/* The map from *tailp to hi: one vector at a time, then one masked vector
 * for the rest if any (without lanes, one by one). */
static void map_rest(B *b, LV *st, LLVMValueRef tailp, LLVMValueRef hi, LLVMValueRef rowbase)
{
	int W = b->k->map_lanes;
	LLVMValueRef tail = LLVMBuildLoad2(b->L.b, b->i64, tailp, "");
	lower_scope(&b->L, W);
	Loop l = kern_loop_begin(b, tail, hi, W);
	lower_scope(&b->L, W);
	map_at(b, st, l.iv, rowbase);
	kern_loop_end(b, &l);
	if (W > 1) {
		tail = kern_loop_final(b, &l);
		LLVMBasicBlockRef done = kern_if(b, LLVMBuildICmp(b->L.b, LLVMIntSLT, tail, hi, ""));
		lower_scope(&b->L, W);
		b->lmask = kern_lanes_below(b, tail, hi);
		map_at(b, st, tail, rowbase);
		b->lmask = NULL;
		kern_if_end(b, done);
	}
}

/* The map loops over [lo, hi): MAP_UNROLL vectors per iteration (streamed
 * for large outputs), then one vector, then one masked vector for the
 * rest if any; without lanes, one by one.  st holds the row's state as scalars. */
static void map_loops(B *b, LV *st, LLVMValueRef lo, LLVMValueRef hi, int hoist)
{
	int W = b->k->map_lanes;
	LLVMValueRef rowbase = LLVMBuildMul(b->L.b, b->i, b->len, "");
	LLVMValueRef tailp = alloca_(b, b->i64);
	LLVMBuildStore(b->L.b, lo, tailp);
	b->L.hoist = hoist;
	if (W > 1 && b->k->map_stream) {
		LLVMValueRef big = outputs_stream(b);
		LLVMBasicBlockRef sb = LLVMAppendBasicBlockInContext(b->L.ctx, b->L.fn, "stream");
		LLVMBasicBlockRef cb = LLVMAppendBasicBlockInContext(b->L.ctx, b->L.fn, "cached");
		LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(b->L.ctx, b->L.fn, "rest");
		LLVMBuildCondBr(b->L.b, big, sb, cb);
		LLVMPositionBuilderAtEnd(b->L.b, sb);
		map_stream(b, st, tailp, hi, rowbase);
		LLVMBuildBr(b->L.b, done);
		LLVMPositionBuilderAtEnd(b->L.b, cb);
		map_align(b, st, tailp, hi, rowbase);
		map_unrolled(b, st, tailp, hi, rowbase);
		LLVMBuildBr(b->L.b, done);
		LLVMPositionBuilderAtEnd(b->L.b, done);
	} else if (W > 1) {
		map_unrolled(b, st, tailp, hi, rowbase);
	}
	map_rest(b, st, tailp, hi, rowbase);
	b->L.hoist = 0;
}

/* The map's position-invariant f32 subtraction operands that is_hoisted
 * (llvm_expr.c) relies on. */
static int invariant_operands(B *b, Expr *e, Expr **out, int n, unsigned char *seen)
{
	if (seen[e->id] || n >= 62)
		return n;
	seen[e->id] = 1;
	if (e->op == EXPR_SUB && !e->ty.len && e->ty.kind == TY_F32)
		for (int i = 0; i < 2; i++)
			if (e->a[i]->ty.kind == TY_F32 && !e->a[i]->ty.len && !lower_varies(&b->L, e->a[i]))
				out[n++] = e->a[i];
	for (int i = 0; i < e->nargs; i++)
		n = invariant_operands(b, e->a[i], out, n, seen);
	return n;
}

/* The checks of is_hoisted on the row's values (none is -inf), as one
 * i1; NULL when the map has no such operand.  With 62 or more, none is
 * hoisted. */
static LLVMValueRef hoist_ok(B *b, LV *st)
{
	Carrier *c = b->k->c;
	Lower *L = &b->L;
	Expr *d[64];
	int n = 0;
	unsigned char *seen = calloc(ir_nnodes(c->ir) + 1, 1);
	for (int k = 0; k < c->nmap; k++)
		n = invariant_operands(b, c->map[k].e, d, n, seen);
	free(seen);
	if (!n || n >= 62)
		return NULL;
	lower_scope(L, 1);
	kern_bind_inputs(b, NULL);
	kern_bind_self(b, st);
	LLVMValueRef ok = LLVMConstInt(LLVMInt1TypeInContext(L->ctx), 1, 0);
	for (int k = 0; k < n; k++) {
		LLVMValueRef y = lower_expr(L, d[k]).c[0];
		LLVMValueRef bad = LLVMBuildFCmp(L->b, LLVMRealOEQ, y, lower_const(L, TY_F32, -INFINITY), "");
		ok = LLVMBuildAnd(L->b, ok, LLVMBuildNot(L->b, bad, ""), "");
	}
	return ok;
}

/* Whether the map of row b->i with state st (scalars) may take its hoisted
 * version (reading the kept values from b->scratch, if set): an i1, or
 * NULL where it has no hoisted version. */
static LLVMValueRef map_safe(B *b, LV *st)
{
	LLVMValueRef safe = hoist_ok(b, st);
	if (b->scratch) {
		LLVMValueRef m = st[b->k->mr_field].c[0];
		LLVMValueRef kept = LLVMBuildFCmp(b->L.b, LLVMRealONE, m, LLVMConstReal(LLVMTypeOf(m), -INFINITY), "");
		safe = safe ? LLVMBuildAnd(b->L.b, safe, kept, "") : kept;
	}
	return safe;
}

/* The map of positions [lo, hi) of row b->i with the state at stp.  With
 * b->scratch (kern_build_rowmap), the hoisted version reads k->rowmap_g from
 * it, where pass 2 left it: the same value, as the row's m (pass 2's Ms)
 * is not -inf there. */
static void map_body(B *b, LLVMValueRef stp, LLVMValueRef lo, LLVMValueRef hi)
{
	Carrier *c = b->k->c;
	LV *st = calloc(c->nstate, sizeof *st);
	lower_scope(&b->L, 1);
	kern_mem_load(b, stp, st); /* scalars, before the loops */
	LLVMValueRef safe = map_safe(b, st);
	if (!safe) {
		map_loops(b, st, lo, hi, 0);
	} else {
		/* two versions of the loops: LLVM does not unswitch a select */
		LLVMBasicBlockRef fast = LLVMAppendBasicBlockInContext(b->L.ctx, b->L.fn, "hoisted");
		LLVMBasicBlockRef slow = LLVMAppendBasicBlockInContext(b->L.ctx, b->L.fn, "general");
		LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(b->L.ctx, b->L.fn, "done");
		LLVMBuildCondBr(b->L.b, safe, fast, slow);
		LLVMPositionBuilderAtEnd(b->L.b, fast);
		b->fused = b->scratch != NULL;
		map_loops(b, st, lo, hi, 1);
		b->fused = 0;
		LLVMBuildBr(b->L.b, done);
		LLVMPositionBuilderAtEnd(b->L.b, slow);
		map_loops(b, st, lo, hi, 0);
		LLVMBuildBr(b->L.b, done);
		LLVMPositionBuilderAtEnd(b->L.b, done);
	}
	free(st);
}

void kern_build_map(B *b)
{
	LLVMTypeRef p[5];
	kern_sig(b, 5, p);
	p[4] = b->i8p;
	LLVMValueRef f = kern_begin_fn(b, "assoc_map", p, 5);
	b->i = LLVMGetParam(f, 1);
	map_body(b, LLVMGetParam(f, 4), LLVMGetParam(f, 2), LLVMGetParam(f, 3));
	kern_end_fn(b);
}

/* The positions from row i to row i + n, where that row exists (the
 * map's prefetch distance, b->map_ahead); else 0, no prefetch. */
static LLVMValueRef rows_ahead(B *b, LLVMValueRef i, int n)
{
	LLVMValueRef in = LLVMBuildICmp(b->L.b, LLVMIntSLT, LLVMBuildAdd(b->L.b, i, ci64(b, n), ""), b->rows, "");
	return LLVMBuildSelect(b->L.b, in, LLVMBuildMul(b->L.b, b->len, ci64(b, n), ""), ci64(b, 0), "");
}

/* A whole row of at most TWO_PASS_BYTES (runtime/cpu.h's rowmap): the two
 * passes of kern_reduce_two_pass, pass 2 keeping the map's g(lift.m - m) of
 * each position in scratch, then finalize, then the map reading it back:
 * one g per position instead of two.  Softmax's y = exp(x - m) / l
 * becomes y = kept * (1 / l), and x stays in L2 from pass 1 to the map.
 * With pair, rows i and i + 1 of fewer than PAIR_LEN positions
 * (assoc_rowmap2): their two passes side by side, then each row's
 * finalize and map; the second row's state and scratch follow the
 * first's (scratch rounded up to whole cache lines). */
void kern_build_rowmap(B *b, int pair)
{
	int ns = b->k->c->nstate, n = pair ? PAIR : 1;
	LLVMTypeRef p[4] = {b->i8p, b->i64, b->i8p, b->i8p};
	LLVMValueRef f = kern_begin_fn(b, pair ? "assoc_rowmap2" : "assoc_rowmap", p, 4);
	LLVMValueRef lo = ci64(b, 0);
	LV *tmp = calloc(4 * ns, sizeof *tmp), *one[PAIR];
	Rows R = {.n = n};
	lower_scope(&b->L, 1);
	LLVMValueRef bytes = LLVMBuildAnd(b->L.b, LLVMBuildAdd(b->L.b, LLVMBuildMul(b->L.b, b->len, ci64(b, 4), ""), ci64(b, 63), ""),
					  ci64(b, -64), "");
	for (int r = 0; r < n; r++) {
		LLVMValueRef off = LLVMBuildMul(b->L.b, bytes, ci64(b, r), "");
		R.i[r] = LLVMBuildAdd(b->L.b, LLVMGetParam(f, 1), ci64(b, r), "");
		/* kept values only where pass 2 has them */
		R.scratch[r] = b->k->rowmap_g ? LLVMBuildGEP2(b->L.b, b->i8, LLVMGetParam(f, 3), &off, 1, "") : NULL;
		one[r] = kern_state_slots(b);
	}
	if (b->k->rowmap_g)
		kern_reduce_two_pass(b, &R, lo, b->len, one, tmp);
	else
		kern_reduce_lanes(b, &R, lo, b->len, one, tmp);
	for (int r = 0; r < n; r++) {
		LLVMValueRef st = kern_state_at(b, LLVMGetParam(f, 2), r);
		b->i = R.i[r];
		lower_scope(&b->L, 1);
		kern_slots_load(b, one[r], b->st);
		kern_mem_store(b, st, b->st);
		kern_finalize_body(b, st, b->i);
		/* while the map's stores stream out, the rows after the next
		 * ones start to come in (pass 2 prefetches the next): reads no
		 * longer wait for pass 2 alone, which is too short to fetch a
		 * whole row (softmax, 2048 x 32768, one thread, medians of 7
		 * runs alternated with the old code: 10.5 -> 11.1 GB/s; the next
		 * row here instead, or two rows ahead in pass 2, gained nothing) */
		b->map_ahead = rows_ahead(b, b->i, 2 * n);
		b->scratch = R.scratch[r];
		map_body(b, st, lo, b->len);
		b->map_ahead = NULL;
		b->scratch = NULL;
		free(one[r]);
	}
	free(tmp);
	kern_end_fn(b);
}

/* ---- rows in a pipeline: a row's map alongside the next row's pass 2 ---- */

/* What the map of ride's row changes in b, saved while it is built. */
typedef struct {
	LLVMValueRef i, scratch;
	int fused, hoist;
} Saved;

/* Ride's row as the map's: its kept values, its hoisted version (its
 * state passed map_safe where the ride is on). */
static Saved ride_enter(B *b)
{
	Saved s = {b->i, b->scratch, b->fused, b->L.hoist};
	b->i = b->ride->i, b->scratch = b->ride->scratch, b->fused = b->k->rowmap_g != NULL, b->L.hoist = 1;
	return s;
}

static void ride_leave(B *b, Saved s)
{
	b->i = s.i, b->scratch = s.scratch, b->fused = s.fused, b->L.hoist = s.hoist;
	b->nt = 0;
}

/* Where the ride is on: ride's state as scalars, and its map's masked
 * vector up to the output's alignment (map_align). */
void kern_ride_begin(B *b)
{
	Ride *r = b->ride;
	lower_scope(&b->L, 1);
	kern_mem_load(b, r->st, r->stv);
	Saved s = ride_enter(b);
	LLVMBuildStore(b->L.b, ci64(b, 0), r->tailp);
	map_align(b, r->stv, r->tailp, b->len, LLVMBuildMul(b->L.b, r->i, b->len, ""));
	ride_leave(b, s);
}

/* In pass 2's main loop: MAP_UNROLL more vectors of ride's map, streamed,
 * while whole ones are left. */
void kern_ride_step(B *b)
{
	Ride *r = b->ride;
	Lower *L = &b->L;
	int W = b->k->map_lanes;
	Saved s = ride_enter(b);
	LLVMValueRef tail = LLVMBuildLoad2(L->b, b->i64, r->tailp, "");
	LLVMValueRef next = LLVMBuildAdd(L->b, tail, ci64(b, (long long)MAP_UNROLL * W), "");
	LLVMBasicBlockRef done = kern_if(b, LLVMBuildICmp(L->b, LLVMIntSLE, next, b->len, ""));
	LLVMValueRef rowbase = LLVMBuildMul(L->b, r->i, b->len, "");
	b->nt = 1;
	map_vectors(b, r->stv, tail, rowbase);
	LLVMBuildStore(L->b, next, r->tailp);
	kern_if_end(b, done);
	ride_leave(b, s);
}

/* After pass 2: what is left of ride's map. */
void kern_ride_end(B *b)
{
	Ride *r = b->ride;
	Saved s = ride_enter(b);
	LLVMValueRef rowbase = LLVMBuildMul(b->L.b, r->i, b->len, "");
	b->nt = 1;
	map_unrolled(b, r->stv, r->tailp, b->len, rowbase);
	b->nt = 0;
	map_rest(b, r->stv, r->tailp, b->len, rowbase);
	ride_leave(b, s);
}

/* Where the ride is off: ride's map on its own (map_body), if it has a
 * row; its prefetches reach the row after the next, as the rowmap's. */
void kern_ride_alone(B *b)
{
	Ride *r = b->ride;
	Lower *L = &b->L;
	LLVMValueRef i = b->i, scratch = b->scratch;
	LLVMBasicBlockRef done = kern_if(b, LLVMBuildICmp(L->b, LLVMIntSGE, r->i, ci64(b, 0), ""));
	b->i = r->i, b->scratch = r->scratch;
	b->map_ahead = rows_ahead(b, r->i, 2);
	map_body(b, r->st, ci64(b, 0), b->len);
	b->map_ahead = NULL;
	b->i = i, b->scratch = scratch;
	kern_if_end(b, done);
}

/* assoc_rowmap_next(a, i, st, scratch, prev, prev_st, prev_scratch): row
 * i's rowmap without its map (state and kept values left at st and
 * scratch), and the map of row prev, whose call left its own at prev_st
 * and prev_scratch; i < 0: prev's map alone; prev < 0: none.  Pass 1
 * reads memory, pass 2 computes g, the map writes memory: prev's map
 * goes along pass 2's main loop, so that its stores stream out while g
 * is computed (runtime/cpu.c runs a thread's rows so).  It rides where
 * the map takes its hoisted, streamed version (map_safe, MAP_STREAM_BYTES)
 * and goes before pass 2 elsewhere. */
void kern_build_rowmap_next(B *b)
{
	Lower *L = &b->L;
	int ns = b->k->c->nstate;
	LLVMTypeRef p[7] = {b->i8p, b->i64, b->i8p, b->i8p, b->i64, b->i8p, b->i8p};
	LLVMValueRef f = kern_begin_fn(b, "assoc_rowmap_next", p, 7);
	Ride ride = {.i = LLVMGetParam(f, 4), .st = LLVMGetParam(f, 5), .scratch = b->k->rowmap_g ? LLVMGetParam(f, 6) : NULL};
	ride.stv = calloc(ns, sizeof *ride.stv);
	ride.tailp = alloca_(b, b->i64);
	LV *tmp = calloc(4 * ns, sizeof *tmp), *one[1];
	if (!ride.stv || !tmp)
		abort();
	b->ride = &ride;
	b->i = LLVMGetParam(f, 1);
	lower_scope(L, 1);
	LLVMBasicBlockRef alone = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "prev_alone");
	LLVMBasicBlockRef row = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "row");
	LLVMBuildCondBr(L->b, LLVMBuildICmp(L->b, LLVMIntSLT, b->i, ci64(b, 0), ""), alone, row);
	LLVMPositionBuilderAtEnd(L->b, alone);
	kern_ride_alone(b);
	LLVMBuildRetVoid(L->b);
	LLVMPositionBuilderAtEnd(L->b, row);
	lower_scope(L, 1);
	/* on: prev is a row, the outputs stream, and its map is hoisted */
	LLVMValueRef onp = alloca_(b, LLVMInt1TypeInContext(L->ctx));
	LLVMBuildStore(L->b, LLVMConstInt(LLVMInt1TypeInContext(L->ctx), 0, 0), onp);
	LLVMValueRef prev = LLVMBuildICmp(L->b, LLVMIntSGE, ride.i, ci64(b, 0), "");
	LLVMBasicBlockRef done = kern_if(b, LLVMBuildAnd(L->b, outputs_stream(b), prev, ""));
	lower_scope(L, 1);
	kern_mem_load(b, ride.st, ride.stv);
	b->i = ride.i, b->scratch = ride.scratch;
	LLVMValueRef safe = map_safe(b, ride.stv);
	b->i = LLVMGetParam(f, 1), b->scratch = NULL;
	LLVMBuildStore(L->b, safe ? safe : LLVMConstInt(LLVMInt1TypeInContext(L->ctx), 1, 0), onp);
	kern_if_end(b, done);
	ride.on = LLVMBuildLoad2(L->b, LLVMInt1TypeInContext(L->ctx), onp, "");
	Rows R = {.n = 1};
	R.i[0] = b->i;
	R.scratch[0] = b->k->rowmap_g ? LLVMGetParam(f, 3) : NULL;
	one[0] = kern_state_slots(b);
	if (b->k->rowmap_g)
		kern_reduce_two_pass(b, &R, ci64(b, 0), b->len, one, tmp);
	else
		kern_reduce_lanes(b, &R, ci64(b, 0), b->len, one, tmp);
	b->ride = NULL;
	b->i = R.i[0];
	lower_scope(L, 1);
	kern_slots_load(b, one[0], b->st);
	kern_mem_store(b, LLVMGetParam(f, 2), b->st);
	kern_finalize_body(b, LLVMGetParam(f, 2), b->i);
	free(one[0]);
	free(ride.stv);
	free(tmp);
	kern_end_fn(b);
}
