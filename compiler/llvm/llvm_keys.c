/* llvm_keys.c: the reduce of a max-rescale carrier whose score is a dot
 * product, with keys as the lanes (decoding: one query row a head, or the
 * few rows of the query heads that share a key/value head).
 *
 * Rows as lanes (build_reduce_rows in llvm_reduce.c) fill a vector with
 * 16 query rows; decoding has 1 to 8 a key/value head, so most of each
 * vector op was wasted, and one row a head looped over its components
 * with a horizontal sum a key.  Here a tile is 16 keys, each key and
 * value loaded and converted once for the G rows that share them:
 *   - each row's dot products with the tile's keys, d in 16-lane chunks,
 *     one partial vector a key, reduced to one vector of the 16 keys'
 *     scores by a transpose-add tree (15 two-source permutes and adds,
 *     not 16 horizontal sums);
 *   - the rest of the score (scale, softcap, a row's own scale) and the
 *     mask in those 16 lanes, by the spec's expressions;
 *   - the tile's maximum, its exps in one 16-lane exp, each scalar field
 *     rescaled and summed, and the vector fields (o) in 16-lane chunks,
 *     o = o * g(m - m') + p_j * v_j with p_j broadcast.
 * Positions are summed in another order than the spec's left fold: the
 * results are those of the spec's merges up to rounding.  A tile that is
 * not whole (its keys past the range, or some masked) runs row by row,
 * only the kept keys; a row whose maximum would not be finite there (an
 * infinite or NaN score, or no key above -inf yet) folds those keys one
 * by one by the spec's merge (assoc_merge), as the one-lane fold does. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/llvm/llvm_kern.h"

/* Lanes of a tile: one AVX-512 vector of float32. */
enum { KL = 16 };

/* A dot product of a row input with a column input that the tiles take
 * apart (their rows converted once into qbuf). */
typedef struct {
	Expr *e;
	int row, col, w;
} KDot;

struct Keys {
	int G, nd;
	KDot dot[KEYS_DOTS];
	LLVMValueRef i0, rowi[KEYS_ROWS]; /* the rows, i64 */
	LLVMValueRef qbuf[KEYS_DOTS];     /* each dot's row input as float32, [G][w] */
	LLVMValueRef pbuf;                /* a dot's partial vectors, [G][KL] <KL x float> */
	LLVMValueRef sc;                  /* scalar fields, [nstate][G] float */
	LLVMValueRef obuf[256];           /* vector fields, [G][w] float each */
	LLVMValueRef svec, evec;          /* the tile's scores and scalar lifts, [G] and [nstate][G] <KL x float> */
	LLVMValueRef bits, okv, mnew;     /* the tile's kept keys (i32), whether its maximum is finite (i8), m' (float), [G] */
	LLVMValueRef pv;                  /* the exps of one row, <KL x float> */
	LLVMValueRef X, Y;                /* states in memory for assoc_merge */
	LLVMTypeRef ft, vt, mt;           /* float, <KL x float>, <KL x i1> */
};

static const Var *var_of(const Carrier *c, const Expr *e) { return e->op == EXPR_VAR ? ir_var(c->ir, e->k) : NULL; }

/* A float32 dot product of a row input with a column input of the same
 * whole number of chunks of KL components: its row and column slots. */
static int dot_parts(const Carrier *c, const Expr *e, int *row, int *col)
{
	if (e->op != EXPR_DOT || e->ty.kind != TY_F32)
		return 0;
	*row = *col = -1;
	for (int s = 0; s < 2; s++) {
		const Var *v = var_of(c, e->a[s]);
		if (!v || e->a[s]->ty.kind != TY_F32)
			return 0;
		if (v->kind == VAR_ROW)
			*row = v->slot;
		else if (v->kind == VAR_COL)
			*col = v->slot;
	}
	if (*row < 0 || *col < 0)
		return 0;
	int w = spec_decl_width(&c->row[*row]);
	return w == spec_decl_width(&c->col[*col]) && w % KL == 0;
}

/* Whether e reads nothing but params, scalar row inputs, i, j, len and
 * (dots: where not NULL) the dot products dot_parts takes, which it
 * collects there; a scalar. */
static int reads_ok(const Carrier *c, const Expr *e, KDot *dots, int *nd)
{
	int r, k;
	if (dots && dot_parts(c, e, &r, &k)) {
		for (int q = 0; q < *nd; q++)
			if (dots[q].e == e)
				return 1;
		if (*nd == KEYS_DOTS)
			return 0;
		dots[(*nd)++] = (KDot){(Expr *)e, r, k, spec_decl_width(&c->row[r])};
		return 1;
	}
	if (e->op == EXPR_VAR) {
		const Var *v = var_of(c, e);
		if (v->kind == VAR_PARAM || v->kind == VAR_IDX)
			return 1;
		return v->kind == VAR_ROW && spec_decl_width(&c->row[v->slot]) == 1;
	}
	if (lower_width(e) != 1 || e->op == EXPR_DOT)
		return 0;
	for (int i = 0; i < e->nargs; i++)
		if (!reads_ok(c, e->a[i], dots, nd))
			return 0;
	return 1;
}

/* A vector field lifted to a column input of its width, whole chunks:
 * the column's slot, else -1. */
static int field_col(const Carrier *c, int f)
{
	const Var *v = var_of(c, c->lift[f]);
	int w = spec_decl_width(&c->state[f]);
	if (!v || v->kind != VAR_COL || spec_decl_width(&c->col[v->slot]) != w || w % KL || c->identity[f]->op != EXPR_CONST)
		return -1;
	return v->slot;
}

int kern_keys_fit(const Kern *k, char *why, size_t n)
{
	const Carrier *c = k->c;
	int mi = k->mr_field, nd = 0;
	KDot dots[KEYS_DOTS];
#define NO(...) return snprintf(why, n, __VA_ARGS__), 0
	if (mi < 0 || c->nelem || c->tpl == FAM_SCAN || tile_has_own(c, mi))
		NO("not a max-rescale fold over columns");
	if (k->mr_g != EXPR_EXP && k->mr_g != EXPR_EXP2)
		NO("its rescale is neither exp nor exp2");
	if (spec_decl_width(&c->state[mi]) != 1)
		NO("its maximum is a vector");
	if (c->nstate > KEYS_FIELDS)
		NO("it has more than %d fields", KEYS_FIELDS);
	for (int f = 0; f < c->nstate; f++) {
		if (c->state[f].ty.kind != TY_F32)
			NO("field %s is not float32", c->state[f].name);
		if (spec_decl_width(&c->state[f]) == 1) {
			if (!reads_ok(c, c->lift[f], dots, &nd))
				NO("the lift of %s reads more than dot products of a row and a column input, params, row scalars and indices",
				   c->state[f].name);
		} else if (tile_extra_fold(c, f) >= 0 || field_col(c, f) < 0) {
			NO("vector field %s is not a rescaled column input", c->state[f].name);
		}
	}
	if (!nd)
		NO("no score is a dot product of a row and a column input");
	if (c->mask && !reads_ok(c, c->mask, NULL, NULL))
		NO("its mask reads inputs");
#undef NO
	return 1;
}

/* ---- helpers ---- */

static LLVMValueRef cf(B *b, double v) { return LLVMConstReal(lower_kty(&b->L, TY_F32), v); }
static LLVMValueRef ci32(B *b, long long v) { return LLVMConstInt(b->i32, (unsigned long long)v, 1); }

static LLVMValueRef vsplat(B *b, LLVMValueRef s)
{
	int W = b->L.W;
	b->L.W = KL;
	LLVMValueRef v = lower_splat(&b->L, s);
	b->L.W = W;
	return v;
}

static LLVMValueRef gep(B *b, LLVMTypeRef t, LLVMValueRef base, LLVMValueRef idx)
{
	return LLVMBuildGEP2(b->L.b, t, base, &idx, 1, "");
}

static LLVMValueRef array(B *b, LLVMTypeRef t, long long n, const char *name)
{
	LLVMValueRef a = LLVMBuildArrayAlloca(b->L.ab, t, ci64(b, n > 0 ? n : 1), name);
	LLVMSetAlignment(a, 64);
	return a;
}

/* Scalar field f of row g (i64 or constant). */
static LLVMValueRef sc_at(B *b, struct Keys *K, int f, LLVMValueRef g)
{
	return gep(b, K->ft, K->sc, LLVMBuildAdd(b->L.b, LLVMBuildMul(b->L.b, ci64(b, f), ci64(b, K->G), ""), g, ""));
}

/* A vector's lanes summed, or their maximum (no lane NaN), halving. */
static LLVMValueRef hred(B *b, LLVMValueRef v, int max)
{
	Lower *L = &b->L;
	if (!max)
		return lower_halve_sum(L, v);
	for (int w = KL / 2; w >= 1; w /= 2) {
		LLVMValueRef lo[KL / 2], hi[KL / 2];
		for (int l = 0; l < w; l++)
			lo[l] = ci32(b, l), hi[l] = ci32(b, l + w);
		LLVMValueRef u = LLVMGetUndef(LLVMTypeOf(v));
		LLVMValueRef x = LLVMBuildShuffleVector(L->b, v, u, LLVMConstVector(lo, (unsigned)w), "");
		LLVMValueRef y = LLVMBuildShuffleVector(L->b, v, u, LLVMConstVector(hi, (unsigned)w), "");
		v = LLVMBuildSelect(L->b, LLVMBuildFCmp(L->b, LLVMRealOGT, x, y, ""), x, y, "");
	}
	return LLVMBuildExtractElement(L->b, v, ci32(b, 0), "");
}

static LLVMValueRef any_lane(B *b, LLVMValueRef m)
{
	return lower_intrinsic(&b->L, "llvm.vector.reduce.or", LLVMTypeOf(m), &m, 1);
}

static LLVMValueRef all_lanes(B *b, LLVMValueRef m)
{
	return lower_intrinsic(&b->L, "llvm.vector.reduce.and", LLVMTypeOf(m), &m, 1);
}

/* g(d) in KL lanes, d <= 0, -inf or NaN (g_of in llvm_reduce.c). */
static LLVMValueRef gk(B *b, LLVMValueRef d)
{
	int W = b->L.W;
	b->L.W = KL;
	LLVMValueRef r = b->k->mr_g == EXPR_EXP ? math_exp_nonpos(&b->L, d) : math_exp2(&b->L, d);
	b->L.W = W;
	return r;
}

/* The 16 chunks of input storage s at element index idx, as float32. */
static LLVMValueRef load_chunk(B *b, LLVMValueRef base, TyKind s, LLVMValueRef idx)
{
	int W = b->L.W;
	b->L.W = KL;
	LLVMValueRef x = kern_from_storage(b, kern_load_lanes(b, base, s, idx), s, TY_F32);
	b->L.W = W;
	return x;
}

/* Key t of the tile at j (t < n), clamped to its last key where t >= n:
 * the element of a column input that holds it. */
static LLVMValueRef key_at(B *b, LLVMValueRef j, LLVMValueRef t, LLVMValueRef n)
{
	LLVMValueRef last = LLVMBuildSub(b->L.b, n, ci64(b, 1), "");
	t = LLVMBuildSelect(b->L.b, LLVMBuildICmp(b->L.b, LLVMIntSLT, t, n, ""), t, last, "");
	return kern_key_elem(b, LLVMBuildAdd(b->L.b, j, t, ""));
}

/* The sums of each of the KL vectors v[t]'s lanes, as lane t of one
 * vector: halves of pairs added, 8 lanes of each, then 4, 2 and 1, each
 * round one two-source permute for each half and an add. */
static LLVMValueRef transpose_add(B *b, LLVMValueRef *v)
{
	LLVMValueRef x[KL];
	memcpy(x, v, sizeof x);
	int n = KL;
	for (int h = KL / 2; h >= 1; h /= 2, n /= 2)
		for (int p = 0; p < n / 2; p++) {
			LLVMValueRef lo[KL], hi[KL];
			for (int o = 0; o < KL; o++) {
				int src = o < KL / 2 ? 0 : KL, bi = (o % (KL / 2)) / h, w = o % h;
				lo[o] = ci32(b, src + bi * 2 * h + w);
				hi[o] = ci32(b, src + bi * 2 * h + h + w);
			}
			LLVMValueRef a = LLVMBuildShuffleVector(b->L.b, x[2 * p], x[2 * p + 1], LLVMConstVector(lo, KL), "");
			LLVMValueRef c = LLVMBuildShuffleVector(b->L.b, x[2 * p], x[2 * p + 1], LLVMConstVector(hi, KL), "");
			x[p] = LLVMBuildFAdd(b->L.b, a, c, "");
		}
	return x[0];
}

/* ---- the state ---- */

struct Keys *kern_keys_begin(B *b, LLVMValueRef i0, int G)
{
	Carrier *c = b->k->c;
	Lower *L = &b->L;
	struct Keys *K = calloc(1, sizeof *K);
	if (!K)
		abort();
	K->G = G;
	K->ft = lower_kty(L, TY_F32);
	K->vt = LLVMVectorType(K->ft, KL);
	K->mt = LLVMVectorType(LLVMInt1TypeInContext(L->ctx), KL);
	K->i0 = i0;
	for (int f = 0; f < c->nstate; f++)
		if (spec_decl_width(&c->state[f]) == 1)
			reads_ok(c, c->lift[f], K->dot, &K->nd);
	for (int g = 0; g < G; g++)
		K->rowi[g] = g ? LLVMBuildAdd(L->b, i0, ci64(b, g), "") : i0;
	/* each dot's row input, converted once */
	for (int d = 0; d < K->nd; d++) {
		KDot *q = &K->dot[d];
		int nch = q->w / KL;
		const Decl *rd = &c->row[q->row];
		K->qbuf[d] = array(b, K->vt, (long long)G * nch, "qbuf");
		LLVMValueRef base = b->inp[c->nelem + c->ncol + q->row];
		for (int g = 0; g < G; g++) {
			LLVMValueRef u = kern_count_open(b, "q");
			LLVMValueRef at = LLVMBuildAdd(L->b, LLVMBuildMul(L->b, K->rowi[g], ci64(b, q->w), ""),
						       LLVMBuildMul(L->b, u, ci64(b, KL), ""), "");
			LLVMValueRef x = load_chunk(b, base, rd->storage, at);
			LLVMBuildStore(L->b, x, gep(b, K->vt, K->qbuf[d], LLVMBuildAdd(L->b, u, ci64(b, (long long)g * nch), "")));
			kern_count_close(b, u, nch, 0);
		}
	}
	K->pbuf = array(b, K->vt, (long long)G * KL, "pbuf");
	K->sc = array(b, K->ft, (long long)c->nstate * G, "sc");
	K->svec = array(b, K->vt, G, "svec");
	K->evec = array(b, K->vt, (long long)c->nstate * G, "evec");
	K->bits = array(b, b->i32, G, "bits");
	K->okv = array(b, b->i8, G, "ok");
	K->mnew = array(b, K->ft, G, "mnew");
	K->pv = array(b, K->ft, KL, "p");
	K->X = array(b, b->i64, (long long)(b->k->state_bytes / 8), "X");
	K->Y = array(b, b->i64, (long long)(b->k->state_bytes / 8), "Y");
	/* the identity */
	lower_scope(L, 1);
	kern_identity(b, b->st);
	for (int f = 0; f < c->nstate; f++) {
		int w = spec_decl_width(&c->state[f]);
		if (w == 1) {
			for (int g = 0; g < G; g++)
				LLVMBuildStore(L->b, lower_lv_at(b->st[f], 0), sc_at(b, K, f, ci64(b, g)));
			continue;
		}
		K->obuf[f] = array(b, K->vt, (long long)G * w / KL, "o");
		LLVMValueRef id = vsplat(b, cf(b, c->identity[f]->num));
		LLVMValueRef u = kern_count_open(b, "oid");
		LLVMBuildStore(L->b, id, gep(b, K->vt, K->obuf[f], u));
		kern_count_close(b, u, (long long)G * w / KL, 0);
	}
	return K;
}

/* Row g's state between the scalars and arrays and a state in memory. */
static void state_move(B *b, struct Keys *K, LLVMValueRef g, LLVMValueRef st, int out)
{
	Carrier *c = b->k->c;
	Lower *L = &b->L;
	for (int f = 0; f < c->nstate; f++) {
		int w = spec_decl_width(&c->state[f]);
		if (w == 1) {
			LLVMValueRef m = kern_mem_slot(b, st, f, ci64(b, 0), K->ft), s = sc_at(b, K, f, g);
			LLVMBuildStore(L->b, LLVMBuildLoad2(L->b, K->ft, out ? s : m, ""), out ? m : s);
			continue;
		}
		LLVMValueRef arr = gep(b, K->ft, LLVMBuildBitCast(L->b, K->obuf[f], LLVMPointerType(K->ft, 0), ""),
				       LLVMBuildMul(L->b, g, ci64(b, w), ""));
		LLVMValueRef t = kern_count_open(b, "slot");
		LLVMValueRef m = kern_mem_slot(b, st, f, t, K->ft), s = gep(b, K->ft, arr, t);
		LLVMBuildStore(L->b, LLVMBuildLoad2(L->b, K->ft, out ? s : m, ""), out ? m : s);
		kern_count_close(b, t, w, 0);
	}
}

void kern_keys_end(B *b, struct Keys *K, LLVMValueRef st)
{
	for (int g = 0; g < K->G; g++)
		state_move(b, K, ci64(b, g), kern_state_at(b, st, g), 1);
	free(K);
}

/* ---- a tile ---- */

/* Binds params, row g's scalar row inputs and i, j (the tile's KL keys
 * from j) and len in a scope of KL lanes. */
static void bind_row(B *b, struct Keys *K, int g, LLVMValueRef j)
{
	Carrier *c = b->k->c;
	Lower *L = &b->L;
	lower_scope(L, KL);
	kern_bind_params(b);
	for (int r = 0; r < c->nrow; r++) {
		if (spec_decl_width(&c->row[r]) != 1)
			continue;
		L->W = 1;
		LLVMValueRef x = kern_from_storage(b, kern_load_lanes(b, b->inp[c->nelem + c->ncol + r], c->row[r].storage, K->rowi[g]),
						   c->row[r].storage, (TyKind)c->row[r].ty.kind);
		L->W = KL;
		L->bind[c->row[r].var] = lv1(b, lower_splat(L, x));
	}
	LLVMValueRef i = LLVMBuildAdd(L->b, LLVMBuildURem(L->b, K->rowi[g], b->period, ""), b->qpos, "");
	L->bind[c->idx[IDX_I]] = lv1(b, lower_splat(L, LLVMBuildTrunc(L->b, i, b->i32, "")));
	L->bind[c->idx[IDX_LEN]] = lv1(b, lower_splat(L, LLVMBuildTrunc(L->b, b->len, b->i32, "")));
	LLVMValueRef iota[KL];
	for (int l = 0; l < KL; l++)
		iota[l] = ci32(b, l);
	LLVMValueRef jv = LLVMBuildAdd(L->b, lower_splat(L, LLVMBuildTrunc(L->b, j, b->i32, "")), LLVMConstVector(iota, KL), "");
	L->bind[c->idx[IDX_J]] = lv1(b, jv);
}

/* Row g's dot products with the tile's keys: key by key, its chunks
 * loaded and converted once for the G rows, into pbuf; then each row's
 * partial vectors to one vector of scores. */
static void tile_dots(B *b, struct Keys *K, int d, LLVMValueRef j, LLVMValueRef n, LLVMValueRef *out)
{
	Carrier *c = b->k->c;
	Lower *L = &b->L;
	KDot *q = &K->dot[d];
	const Decl *kd = &c->col[q->col];
	int G = K->G, nch = q->w / KL;
	LLVMValueRef base = b->inp[c->nelem + q->col];
	LLVMValueRef t = kern_count_open(b, "key");
	LLVMValueRef first = LLVMBuildMul(L->b, key_at(b, j, t, n), ci64(b, q->w), "");
	LLVMValueRef acc[KEYS_ROWS];
	if (nch <= KEYS_UNROLLED) {
		for (int u = 0; u < nch; u++) {
			LLVMValueRef kv = load_chunk(b, base, kd->storage, LLVMBuildAdd(L->b, first, ci64(b, (long long)u * KL), ""));
			for (int g = 0; g < G; g++) {
				LLVMValueRef qv = LLVMBuildLoad2(L->b, K->vt, gep(b, K->vt, K->qbuf[d], ci64(b, (long long)g * nch + u)), "");
				if (!u) {
					acc[g] = LLVMBuildFMul(L->b, qv, kv, "");
					continue;
				}
				LLVMValueRef a[3] = {qv, kv, acc[g]};
				acc[g] = lower_intrinsic(L, "llvm.fmuladd", K->vt, a, 3);
			}
		}
	} else {
		LLVMValueRef accp[KEYS_ROWS];
		for (int g = 0; g < G; g++) {
			accp[g] = LLVMBuildAlloca(L->ab, K->vt, "");
			LLVMBuildStore(L->b, LLVMConstNull(K->vt), accp[g]);
		}
		LLVMValueRef u = kern_count_open(b, "chunk");
		LLVMValueRef kv = load_chunk(b, base, kd->storage, LLVMBuildAdd(L->b, first, LLVMBuildMul(L->b, u, ci64(b, KL), ""), ""));
		for (int g = 0; g < G; g++) {
			LLVMValueRef qi = LLVMBuildAdd(L->b, u, ci64(b, (long long)g * nch), "");
			LLVMValueRef a[3] = {LLVMBuildLoad2(L->b, K->vt, gep(b, K->vt, K->qbuf[d], qi), ""), kv,
					     LLVMBuildLoad2(L->b, K->vt, accp[g], "")};
			LLVMBuildStore(L->b, lower_intrinsic(L, "llvm.fmuladd", K->vt, a, 3), accp[g]);
		}
		kern_count_close(b, u, nch, 2);
		for (int g = 0; g < G; g++)
			acc[g] = LLVMBuildLoad2(L->b, K->vt, accp[g], "");
	}
	for (int g = 0; g < G; g++)
		LLVMBuildStore(L->b, acc[g], gep(b, K->vt, K->pbuf, LLVMBuildAdd(L->b, t, ci64(b, (long long)g * KL), "")));
	kern_count_close(b, t, KL, 2);
	for (int g = 0; g < G; g++) {
		LLVMValueRef v[KL];
		for (int u = 0; u < KL; u++)
			v[u] = LLVMBuildLoad2(L->b, K->vt, gep(b, K->vt, K->pbuf, ci64(b, (long long)g * KL + u)), "");
		out[g] = transpose_add(b, v);
	}
}

/* The lanes of keys t < n, and under the mask, of row g. */
static LLVMValueRef tile_kept(B *b, struct Keys *K, int g, LLVMValueRef j, LLVMValueRef n)
{
	Carrier *c = b->k->c;
	Lower *L = &b->L;
	LLVMValueRef iota[KL];
	for (int l = 0; l < KL; l++)
		iota[l] = LLVMConstInt(b->i64, (unsigned long long)l, 0);
	LLVMValueRef kept = LLVMBuildICmp(L->b, LLVMIntSLT, LLVMConstVector(iota, KL), vsplat(b, n), "");
	if (!c->mask)
		return kept;
	bind_row(b, K, g, j);
	LLVMValueRef m = lower_lv_at(lower_expr(L, c->mask), 0);
	return LLVMBuildAnd(L->b, kept, m, "");
}

/* Whether x is a number below +inf (not NaN). */
static LLVMValueRef below_inf(B *b, LLVMValueRef x)
{
	return LLVMBuildFCmp(b->L.b, LLVMRealOLT, x, cf(b, INFINITY), "");
}

/* o = o * alpha + sum over keys of p_t * v_t for vector field f of rows
 * gs (n of them, each with its alpha and its exps at ps[g]): a loop over
 * the field's chunks, each row's chunk loaded once, each key's value
 * chunk loaded and converted once for the rows.  keys: KL keys from j, or
 * (with bits) the keys of the set bits of *bits, row gs[0] alone. */
static void update_vec(B *b, struct Keys *K, int f, LLVMValueRef *gs, LLVMValueRef *alpha, LLVMValueRef *ps, int n,
		       LLVMValueRef j)
{
	Carrier *c = b->k->c;
	Lower *L = &b->L;
	int w = spec_decl_width(&c->state[f]), nch = w / KL, col = field_col(c, f);
	const Decl *vd = &c->col[col];
	LLVMValueRef base = b->inp[c->nelem + col];
	LLVMValueRef u = kern_count_open(b, "ochunk");
	LLVMValueRef at[KEYS_ROWS], acc[KEYS_ROWS];
	for (int g = 0; g < n; g++) {
		at[g] = gep(b, K->vt, K->obuf[f], LLVMBuildAdd(L->b, LLVMBuildMul(L->b, gs[g], ci64(b, nch), ""), u, ""));
		acc[g] = LLVMBuildFMul(L->b, LLVMBuildLoad2(L->b, K->vt, at[g], ""), vsplat(b, alpha[g]), "");
	}
	LLVMValueRef off = LLVMBuildMul(L->b, u, ci64(b, KL), "");
	for (int t = 0; t < KL; t++) {
		LLVMValueRef e = LLVMBuildAdd(L->b, LLVMBuildMul(L->b, kern_key_elem(b, LLVMBuildAdd(L->b, j, ci64(b, t), "")),
								 ci64(b, w), ""), off, "");
		LLVMValueRef v = load_chunk(b, base, vd->storage, e);
		for (int g = 0; g < n; g++) {
			LLVMValueRef p = LLVMBuildLoad2(L->b, K->ft, gep(b, K->ft, ps[g], ci64(b, t)), "");
			LLVMValueRef a[3] = {vsplat(b, p), v, acc[g]};
			acc[g] = lower_intrinsic(L, "llvm.fmuladd", K->vt, a, 3);
		}
	}
	for (int g = 0; g < n; g++)
		LLVMBuildStore(L->b, acc[g], at[g]);
	kern_count_close(b, u, nch, 0);
}

/* The keys of the set bits of bits (i32), in order: returns the key's
 * index in the tile, positioned in the loop's body; keys_loop_end ends it. */
typedef struct {
	LLVMBasicBlockRef head, body, done;
	LLVMValueRef bitsp;
} BitLoop;

static LLVMValueRef bits_open(B *b, BitLoop *bl, LLVMValueRef bits)
{
	Lower *L = &b->L;
	bl->bitsp = LLVMBuildAlloca(L->ab, b->i32, "");
	LLVMBuildStore(L->b, bits, bl->bitsp);
	bl->head = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "bits");
	bl->body = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "bit");
	bl->done = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "bits_done");
	LLVMBuildBr(L->b, bl->head);
	LLVMPositionBuilderAtEnd(L->b, bl->head);
	LLVMValueRef x = LLVMBuildLoad2(L->b, b->i32, bl->bitsp, "");
	LLVMBuildCondBr(L->b, LLVMBuildICmp(L->b, LLVMIntNE, x, ci32(b, 0), ""), bl->body, bl->done);
	LLVMPositionBuilderAtEnd(L->b, bl->body);
	LLVMValueRef a[2] = {x, LLVMConstInt(LLVMInt1TypeInContext(L->ctx), 1, 0)};
	LLVMValueRef t = lower_intrinsic(L, "llvm.cttz", b->i32, a, 2);
	LLVMBuildStore(L->b, LLVMBuildAnd(L->b, x, LLVMBuildSub(L->b, x, ci32(b, 1), ""), ""), bl->bitsp);
	return LLVMBuildZExt(L->b, t, b->i64, "");
}

static void bits_close(B *b, BitLoop *bl)
{
	LLVMBuildBr(b->L.b, bl->head);
	LLVMPositionBuilderAtEnd(b->L.b, bl->done);
}

/* The rows of a tile that is not whole, or where some row's maximum is
 * not finite: a loop over the rows, each its kept keys alone. */
static void tile_rows(B *b, struct Keys *K, LLVMValueRef j)
{
	Carrier *c = b->k->c;
	Lower *L = &b->L;
	int mi = b->k->mr_field;
	LLVMValueRef g = kern_count_open(b, "row");
	LLVMValueRef bits = LLVMBuildLoad2(L->b, b->i32, gep(b, b->i32, K->bits, g), "");
	LLVMBasicBlockRef some = kern_if(b, LLVMBuildICmp(L->b, LLVMIntNE, bits, ci32(b, 0), ""));
	LLVMValueRef ok = LLVMBuildLoad2(L->b, b->i8, gep(b, b->i8, K->okv, g), "");
	LLVMBasicBlockRef fin = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "finite");
	LLVMBasicBlockRef one = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "one_by_one");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "row_done");
	LLVMBuildCondBr(L->b, LLVMBuildICmp(L->b, LLVMIntNE, ok, LLVMConstInt(b->i8, 0, 0), ""), fin, one);
	/* a maximum that stays finite: the tile's kept keys rescaled as a whole tile's */
	LLVMPositionBuilderAtEnd(L->b, fin);
	{
		LLVMValueRef m = LLVMBuildLoad2(L->b, K->ft, sc_at(b, K, mi, g), "");
		LLVMValueRef M = LLVMBuildLoad2(L->b, K->ft, gep(b, K->ft, K->mnew, g), "");
		LLVMValueRef sv = LLVMBuildLoad2(L->b, K->vt, gep(b, K->vt, K->svec, g), "");
		LLVMValueRef alpha = LLVMBuildExtractElement(L->b, gk(b, vsplat(b, LLVMBuildFSub(L->b, m, M, ""))), ci32(b, 0), "");
		LLVMValueRef p = gk(b, LLVMBuildFSub(L->b, sv, vsplat(b, M), ""));
		LLVMBuildStore(L->b, p, LLVMBuildBitCast(L->b, K->pv, LLVMPointerType(K->vt, 0), ""));
		LLVMValueRef iota[KL];
		for (int l = 0; l < KL; l++)
			iota[l] = ci32(b, 1 << l);
		LLVMValueRef kept = LLVMBuildICmp(L->b, LLVMIntNE, LLVMBuildAnd(L->b, vsplat(b, bits), LLVMConstVector(iota, KL), ""),
						  LLVMConstNull(LLVMVectorType(b->i32, KL)), "");
		for (int f = 0; f < c->nstate; f++) {
			if (f == mi || spec_decl_width(&c->state[f]) != 1)
				continue;
			LLVMValueRef e = LLVMBuildLoad2(L->b, K->vt, gep(b, K->vt, K->evec, LLVMBuildAdd(L->b, LLVMBuildMul(L->b, ci64(b, f), ci64(b, K->G), ""), g, "")), "");
			LLVMValueRef at = sc_at(b, K, f, g), x = LLVMBuildLoad2(L->b, K->ft, at, "");
			int op = tile_extra_fold(c, f);
			if (op == EXPR_MAX)
				x = LLVMBuildSelect(L->b, LLVMBuildFCmp(L->b, LLVMRealOGT, x, hred(b, LLVMBuildSelect(L->b, kept, e, vsplat(b, cf(b, -INFINITY)), ""), 1), ""), x,
						    hred(b, LLVMBuildSelect(L->b, kept, e, vsplat(b, cf(b, -INFINITY)), ""), 1), "");
			else if (op == EXPR_ADD)
				x = LLVMBuildFAdd(L->b, x, hred(b, LLVMBuildSelect(L->b, kept, e, vsplat(b, cf(b, 0)), ""), 0), "");
			else
				x = LLVMBuildFAdd(L->b, LLVMBuildFMul(L->b, x, alpha, ""),
						  hred(b, LLVMBuildSelect(L->b, kept, LLVMBuildFMul(L->b, p, e, ""), vsplat(b, cf(b, 0)), ""), 0), "");
			LLVMBuildStore(L->b, x, at);
		}
		LLVMBuildStore(L->b, M, sc_at(b, K, mi, g));
		for (int f = 0; f < c->nstate; f++) {
			if (spec_decl_width(&c->state[f]) == 1)
				continue;
			int nch = spec_decl_width(&c->state[f]) / KL;
			LLVMValueRef u = kern_count_open(b, "scale");
			LLVMValueRef at = gep(b, K->vt, K->obuf[f], LLVMBuildAdd(L->b, LLVMBuildMul(L->b, g, ci64(b, nch), ""), u, ""));
			LLVMBuildStore(L->b, LLVMBuildFMul(L->b, LLVMBuildLoad2(L->b, K->vt, at, ""), vsplat(b, alpha), ""), at);
			kern_count_close(b, u, nch, 0);
			BitLoop bl;
			LLVMValueRef t = bits_open(b, &bl, bits);
			LLVMValueRef pt = LLVMBuildLoad2(L->b, K->ft, gep(b, K->ft, K->pv, t), "");
			int w = spec_decl_width(&c->state[f]), col = field_col(c, f);
			LLVMValueRef first = LLVMBuildMul(L->b, kern_key_elem(b, LLVMBuildAdd(L->b, j, t, "")), ci64(b, w), "");
			u = kern_count_open(b, "okey");
			at = gep(b, K->vt, K->obuf[f], LLVMBuildAdd(L->b, LLVMBuildMul(L->b, g, ci64(b, nch), ""), u, ""));
			LLVMValueRef v = load_chunk(b, b->inp[c->nelem + col], c->col[col].storage,
						    LLVMBuildAdd(L->b, first, LLVMBuildMul(L->b, u, ci64(b, KL), ""), ""));
			LLVMValueRef a[3] = {vsplat(b, pt), v, LLVMBuildLoad2(L->b, K->vt, at, "")};
			LLVMBuildStore(L->b, lower_intrinsic(L, "llvm.fmuladd", K->vt, a, 3), at);
			kern_count_close(b, u, nch, 0);
			bits_close(b, &bl);
		}
		LLVMBuildBr(L->b, done);
	}
	/* else each kept key by the spec's merge, in order */
	LLVMPositionBuilderAtEnd(L->b, one);
	{
		LLVMValueRef X = LLVMBuildBitCast(L->b, K->X, b->i8p, ""), Y = LLVMBuildBitCast(L->b, K->Y, b->i8p, "");
		state_move(b, K, g, X, 1);
		BitLoop bl;
		LLVMValueRef t = bits_open(b, &bl, bits);
		LLVMValueRef t32 = LLVMBuildTrunc(L->b, t, b->i32, "");
		for (int f = 0; f < c->nstate; f++) {
			int w = spec_decl_width(&c->state[f]);
			if (w == 1) {
				LLVMValueRef e = f == mi ? LLVMBuildLoad2(L->b, K->vt, gep(b, K->vt, K->svec, g), "")
							 : LLVMBuildLoad2(L->b, K->vt, gep(b, K->vt, K->evec, LLVMBuildAdd(L->b, LLVMBuildMul(L->b, ci64(b, f), ci64(b, K->G), ""), g, "")), "");
				LLVMBuildStore(L->b, LLVMBuildExtractElement(L->b, e, t32, ""), kern_mem_slot(b, Y, f, ci64(b, 0), K->ft));
				continue;
			}
			int col = field_col(c, f);
			LLVMValueRef first = LLVMBuildMul(L->b, kern_key_elem(b, LLVMBuildAdd(L->b, j, t, "")), ci64(b, w), "");
			LLVMValueRef u = kern_count_open(b, "lift");
			int W = L->W;
			L->W = 1;
			LLVMValueRef x = kern_from_storage(b, kern_load_lanes(b, b->inp[c->nelem + col], c->col[col].storage, LLVMBuildAdd(L->b, first, u, "")),
							   c->col[col].storage, TY_F32);
			L->W = W;
			LLVMBuildStore(L->b, x, kern_mem_slot(b, Y, f, u, K->ft));
			kern_count_close(b, u, w, 0);
		}
		LLVMValueRef merge = LLVMGetNamedFunction(L->mod, "assoc_merge");
		LLVMValueRef args[4] = {LLVMGetParam(L->fn, 0), X, Y, X};
		LLVMBuildCall2(L->b, LLVMGlobalGetValueType(merge), merge, args, 4, "");
		bits_close(b, &bl);
		state_move(b, K, g, X, 0);
		LLVMBuildBr(L->b, done);
	}
	LLVMPositionBuilderAtEnd(L->b, done);
	kern_if_end(b, some);
	kern_count_close(b, g, K->G, 0);
}

/* The tile of n (1 .. KL) keys from j. */
static void tile(B *b, struct Keys *K, LLVMValueRef j, LLVMValueRef n)
{
	Carrier *c = b->k->c;
	Lower *L = &b->L;
	int G = K->G, mi = b->k->mr_field;
	LLVMValueRef kept[KEYS_ROWS], any = NULL, whole = LLVMBuildICmp(L->b, LLVMIntEQ, n, ci64(b, KL), "");
	for (int g = 0; g < G; g++) {
		kept[g] = tile_kept(b, K, g, j, n);
		LLVMValueRef a = any_lane(b, kept[g]);
		any = any ? LLVMBuildOr(L->b, any, a, "") : a;
		whole = LLVMBuildAnd(L->b, whole, all_lanes(b, kept[g]), "");
	}
	LLVMBasicBlockRef live = kern_if(b, any);
	LLVMValueRef *sc = calloc((size_t)K->nd * KEYS_ROWS, sizeof *sc);
	for (int d = 0; d < K->nd; d++)
		tile_dots(b, K, d, j, n, sc + d * KEYS_ROWS);
	LLVMValueRef fast = whole, s[KEYS_ROWS], M[KEYS_ROWS], oks[KEYS_ROWS], e[KEYS_ROWS][KEYS_FIELDS] = {{0}};
	int ns = c->nstate;
	for (int g = 0; g < G; g++) {
		bind_row(b, K, g, j);
		for (int d = 0; d < K->nd; d++)
			lower_preset(L, K->dot[d].e, lv1(b, sc[d * KEYS_ROWS + g]));
		LV *lv = calloc(c->nstate, sizeof *lv);
		for (int f = 0; f < c->nstate; f++)
			if (spec_decl_width(&c->state[f]) == 1) {
				LV v = lower_expr(L, c->lift[f]);
				lv[f] = lv1(b, lower_conv(L, lower_lv_at(v, 0), (TyKind)c->lift[f]->ty.kind, TY_F32));
			}
		LLVMValueRef ninf = vsplat(b, cf(b, -INFINITY));
		s[g] = LLVMBuildSelect(L->b, kept[g], lower_lv_at(lv[mi], 0), ninf, "");
		LLVMValueRef nan = LLVMBuildAnd(L->b, kept[g], LLVMBuildFCmp(L->b, LLVMRealUNO, s[g], s[g], ""), "");
		for (int f = 0; f < ns; f++) {
			if (f == mi || spec_decl_width(&c->state[f]) != 1)
				continue;
			e[g][f] = lower_lv_at(lv[f], 0);
			if (tile_extra_fold(c, f) >= 0)
				nan = LLVMBuildOr(L->b, nan, LLVMBuildAnd(L->b, kept[g], LLVMBuildFCmp(L->b, LLVMRealUNO, e[g][f], e[g][f], ""), ""), "");
		}
		free(lv);
		M[g] = hred(b, s[g], 1);
		LLVMValueRef m = LLVMBuildLoad2(L->b, K->ft, sc_at(b, K, mi, ci64(b, g)), "");
		LLVMValueRef mn = LLVMBuildSelect(L->b, LLVMBuildFCmp(L->b, LLVMRealOGT, m, M[g], ""), m, M[g], "");
		LLVMValueRef ok = LLVMBuildAnd(L->b, below_inf(b, m), below_inf(b, M[g]), "");
		ok = LLVMBuildAnd(L->b, ok, LLVMBuildNot(L->b, any_lane(b, nan), ""), "");
		ok = LLVMBuildAnd(L->b, ok, LLVMBuildFCmp(L->b, LLVMRealOGT, mn, cf(b, -INFINITY), ""), "");
		M[g] = mn;
		oks[g] = ok;
		fast = LLVMBuildAnd(L->b, fast, ok, "");
	}
	free(sc);
	LLVMBasicBlockRef whole_b = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "whole_tile");
	LLVMBasicBlockRef rows_b = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "tile_rows");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "tile_done");
	LLVMBuildCondBr(L->b, fast, whole_b, rows_b);
	/* every key kept, every maximum finite: the G rows together */
	LLVMPositionBuilderAtEnd(L->b, whole_b);
	{
		LLVMValueRef alpha[KEYS_ROWS], ps[KEYS_ROWS], gs[KEYS_ROWS], mv = LLVMConstNull(K->vt), Mv = LLVMConstNull(K->vt);
		for (int g = 0; g < G; g++) {
			mv = LLVMBuildInsertElement(L->b, mv, LLVMBuildLoad2(L->b, K->ft, sc_at(b, K, mi, ci64(b, g)), ""), ci32(b, g), "");
			Mv = LLVMBuildInsertElement(L->b, Mv, M[g], ci32(b, g), "");
		}
		LLVMValueRef av = gk(b, LLVMBuildFSub(L->b, mv, Mv, ""));
		for (int g = 0; g < G; g++) {
			alpha[g] = LLVMBuildExtractElement(L->b, av, ci32(b, g), "");
			LLVMValueRef p = gk(b, LLVMBuildFSub(L->b, s[g], vsplat(b, M[g]), ""));
			ps[g] = gep(b, K->ft, LLVMBuildBitCast(L->b, K->pbuf, LLVMPointerType(K->ft, 0), ""), ci64(b, (long long)g * KL));
			LLVMBuildStore(L->b, p, LLVMBuildBitCast(L->b, ps[g], LLVMPointerType(K->vt, 0), ""));
			gs[g] = ci64(b, g);
			for (int f = 0; f < ns; f++) {
				if (!e[g][f])
					continue;
				LLVMValueRef at = sc_at(b, K, f, ci64(b, g)), x = LLVMBuildLoad2(L->b, K->ft, at, "");
				int op = tile_extra_fold(c, f);
				if (op == EXPR_MAX) {
					LLVMValueRef y = hred(b, e[g][f], 1);
					x = LLVMBuildSelect(L->b, LLVMBuildFCmp(L->b, LLVMRealOGT, x, y, ""), x, y, "");
				} else if (op == EXPR_ADD) {
					x = LLVMBuildFAdd(L->b, x, hred(b, e[g][f], 0), "");
				} else {
					x = LLVMBuildFAdd(L->b, LLVMBuildFMul(L->b, x, alpha[g], ""), hred(b, LLVMBuildFMul(L->b, p, e[g][f], ""), 0), "");
				}
				LLVMBuildStore(L->b, x, at);
			}
			LLVMBuildStore(L->b, M[g], sc_at(b, K, mi, ci64(b, g)));
		}
		for (int f = 0; f < c->nstate; f++)
			if (spec_decl_width(&c->state[f]) > 1)
				update_vec(b, K, f, gs, alpha, ps, G, j);
		LLVMBuildBr(L->b, done);
	}
	/* else row by row, from what the rows' loop reads: stored only here */
	LLVMPositionBuilderAtEnd(L->b, rows_b);
	for (int g = 0; g < G; g++) {
		LLVMValueRef g64 = ci64(b, g);
		LLVMBuildStore(L->b, s[g], gep(b, K->vt, K->svec, g64));
		for (int f = 0; f < ns; f++)
			if (e[g][f])
				LLVMBuildStore(L->b, e[g][f], gep(b, K->vt, K->evec, ci64(b, (long long)f * G + g)));
		LLVMBuildStore(L->b, LLVMBuildZExt(L->b, LLVMBuildBitCast(L->b, kept[g], LLVMIntTypeInContext(L->ctx, KL), ""), b->i32, ""),
			       gep(b, b->i32, K->bits, g64));
		LLVMBuildStore(L->b, LLVMBuildZExt(L->b, oks[g], b->i8, ""), gep(b, b->i8, K->okv, g64));
		LLVMBuildStore(L->b, M[g], gep(b, K->ft, K->mnew, g64));
	}
	tile_rows(b, K, j);
	LLVMBuildBr(L->b, done);
	LLVMPositionBuilderAtEnd(L->b, done);
	kern_if_end(b, live);
}

void kern_keys_range(B *b, struct Keys *K, LLVMValueRef lo, LLVMValueRef hi)
{
	Lower *L = &b->L;
	/* no software prefetches: the tile's loads of 16 keys in order are
	 * the hardware's to prefetch (f16, d = 128, 4 rows a group: 0.54-0.65
	 * of the copy without, 0.48-0.59 with 128 a tile) */
	Loop l = kern_loop_begin(b, lo, hi, KL);
	tile(b, K, l.iv, ci64(b, KL));
	kern_loop_end(b, &l);
	LLVMValueRef j = kern_loop_final(b, &l), n = LLVMBuildSub(L->b, hi, j, "");
	LLVMBasicBlockRef some = kern_if(b, LLVMBuildICmp(L->b, LLVMIntSGT, n, ci64(b, 0), ""));
	tile(b, K, j, n);
	kern_if_end(b, some);
	lower_scope(L, 1);
}
