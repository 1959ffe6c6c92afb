/* cuda_mod.c: a module of kernels for one carrier: the carrier's device
 * functions (the templates' hooks), the templates it needs, and one
 * extern "C" kernel per tuning variant; launch plans for a shape. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/util/buf.h"
#include "compiler/check/check.h"
#include "compiler/cuda/cuda.h"
#include "compiler/cuda/cuda_int.h"
#include "compiler/llvm/llvm.h"
#include "compiler/prove/prove.h"

uint64_t cuda_fnv(uint64_t h, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	return h;
}

static int width(Ty t) { return t.len ? t.len : 1; }

static size_t kind_bytes(int kind)
{
	switch (kind) {
	case TY_BOOL: return 1;
	case TY_I64: case TY_F64: return 8;
	default: return 4;
	}
}

/* ---- the carrier's hooks ---- */

static void decl_struct(Buf *b, const char *name, const char *pfx, const Decl *d, int n)
{
	buf_printf(b, "struct %s {\n", name);
	for (int k = 0; k < n; k++) {
		buf_printf(b, "\t%s %s%d", cuda_ctype(d[k].ty.kind), pfx, k);
		if (d[k].ty.len)
			buf_printf(b, "[%d]", d[k].ty.len);
		buf_puts(b, ";\n");
	}
	buf_puts(b, "};\n");
}

/* sizeof the struct decl_struct writes for these fields. */
static size_t decl_size(const Decl *d, int n)
{
	size_t off = 0, al = 1;
	for (int f = 0; f < n; f++) {
		size_t sz = kind_bytes(d[f].ty.kind);
		off = (off + sz - 1) / sz * sz + sz * width(d[f].ty);
		al = sz > al ? sz : al;
	}
	return off ? (off + al - 1) / al * al : 1;
}

static size_t state_size(const Carrier *c) { return decl_size(c->state, c->nstate); }

static const char *mtype(int storage) { return cuda_mem_type(storage); }

/* dst.pfxK = the input at `index` (times its width) of pointer A.in[base + k]. */
static void load_decls(Buf *b, const char *dst, const char *pfx, const Decl *d, int n, int base, const char *index)
{
	for (int k = 0; k < n; k++) {
		char src[200], sub[8];
		int w = width(d[k].ty);
		snprintf(src, sizeof src, "ASC_LD((const %s *)A.in[%d] + (%s) * %d + %s)", mtype(d[k].storage), base + k,
			 index, w, d[k].ty.len ? "u" : "0");
		snprintf(sub, sizeof sub, "%s", d[k].ty.len ? "[u]" : "");
		const char *cv = cuda_load_cvt(d[k].storage);
		if (d[k].ty.len)
			buf_printf(b, "#pragma unroll\n\tfor (int u = 0; u < %d; u++)\n\t", w);
		buf_printf(b, "\t%s.%s%d%s = (%s)%s(%s);\n", dst, pfx, k, sub, cuda_ctype(d[k].ty.kind), cv, src);
	}
}

static int can_vec(const Carrier *c)
{
	if (!c->nelem)
		return 0;
	for (int k = 0; k < c->nelem; k++)
		if (c->elem[k].ty.len || (c->elem[k].storage != TY_F32 && c->elem[k].storage != TY_F16 &&
					  c->elem[k].storage != TY_BF16))
			return 0;
	return 1;
}

/* vec_ok: every element input's base at a multiple of 4 elements (16
 * bytes of f32, 8 of f16 or bf16), whatever the row length: position j
 * of row i then starts a group of 4 aligned in every input at once where
 * i * len + j is a multiple of 4, and the row loops load the groups from
 * there, a head and a tail of fewer than 4 one element at a time
 * (templates/blocks.cuh: vec_head).  load_elem4: the group at j. */
static void vec_hooks(const Carrier *c, Buf *b, int ok)
{
	buf_puts(b, "ASC_DEV bool vec_ok(const Args &A)\n{\n\treturn ");
	if (!ok) {
		buf_puts(b, "false;\n}\n");
		buf_puts(b, "ASC_DEV void load_elem4(const Args &A, int i, int j, Elem *E) {}\n");
		return;
	}
	for (int k = 0; k < c->nelem; k++)
		buf_printf(b, "%s((asc_uptr)A.in[%d] & %d) == 0", k ? " && " : "", k,
			   c->elem[k].storage == TY_F32 ? 15 : 7);
	buf_puts(b, ";\n}\n");
	buf_puts(b, "ASC_DEV void load_elem4(const Args &A, int i, int j, Elem *E)\n{\n");
	for (int k = 0; k < c->nelem; k++) {
		int f32 = c->elem[k].storage == TY_F32;
		const char *cv = f32 ? "" : c->elem[k].storage == TY_F16 ? "asc_f16" : "asc_bf16";
		buf_printf(b, "\tconst %s v%d = ASC_LD((const %s *)((const %s *)A.in[%d] + (long long)i * A.len + j));\n",
			   f32 ? "asc_f4" : "asc_h4", k, f32 ? "asc_f4" : "asc_h4", mtype(c->elem[k].storage), k);
		const char *comp = "xyzw";
		for (int v = 0; v < 4; v++)
			buf_printf(b, "\tE[%d].e%d = %s(v%d.%c);\n", v, k, cv, k, comp[v]);
	}
	buf_puts(b, "}\n");
}

static void shfl_hook(const Carrier *c, Buf *b, const char *name, const char *intr)
{
	buf_printf(b, "ASC_DEV State %s(const State &s, int k)\n{\n\tState r;\n", name);
	for (int f = 0; f < c->nstate; f++) {
		int bl = c->state[f].ty.kind == TY_BOOL;
		const char *sub = c->state[f].ty.len ? "[u]" : "";
		if (c->state[f].ty.len)
			buf_printf(b, "#pragma unroll\n\tfor (int u = 0; u < %d; u++)\n\t", c->state[f].ty.len);
		buf_printf(b, "\tr.f%d%s = %s%s(0xffffffffu, %ss.f%d%s, k);\n", f, sub, bl ? "(bool)" : "", intr,
			   bl ? "(int)" : "", f, sub);
	}
	buf_puts(b, "\treturn r;\n}\n");
}

static void state_fn(Carrier *c, Buf *b, const char *head, Expr **e)
{
	struct Fn *f;
	buf_printf(b, "%s\n{\n\tState r;\n", head);
	cuda_fn_begin(&f, c, b);
	for (int k = 0; k < c->nstate; k++) {
		char dst[16];
		snprintf(dst, sizeof dst, "r.f%d", k);
		cuda_fn_assign(f, dst, e[k], c->state[k].ty.len);
	}
	cuda_fn_end(f);
	buf_puts(b, "\treturn r;\n}\n");
}

/* Outputs computed into ovK, then stored through ASC_ST, one per component. */
static void out_fn(Carrier *c, Buf *b, const char *head, const Def *d, int n, int base, const char *at)
{
	struct Fn *f;
	buf_printf(b, "%s\n{\n", head);
	cuda_fn_begin(&f, c, b);
	for (int k = 0; k < n; k++) {
		Ty t = d[k].e->ty;
		const char *mt = mtype(t.kind);
		char o[16];
		snprintf(o, sizeof o, "ov%d", k);
		buf_printf(b, "\t%s *o%d = (%s *)A.out[%d] + (%s) * %d;\n", mt, k, mt, base + k, at, width(t));
		if (t.len)
			buf_printf(b, "\t%s ov%d[%d];\n", cuda_ctype(t.kind), k, t.len);
		else
			buf_printf(b, "\t%s ov%d;\n", cuda_ctype(t.kind), k);
		cuda_fn_assign(f, o, d[k].e, t.len);
		if (t.len)
			buf_printf(b, "#pragma unroll\n\tfor (int u = 0; u < %d; u++)\n\t\tASC_ST(o%d + u, ov%d[u]);\n", t.len,
				   k, k);
		else
			buf_printf(b, "\tASC_ST(o%d, ov%d);\n", k, k);
	}
	cuda_fn_end(f);
	buf_puts(b, "}\n");
}

/* Whether map output k goes out four positions at a time in one 16-byte
 * store (map4): a scalar f32. */
static int map_vec_store(const Carrier *c, int k) { return !c->map[k].e->ty.len && c->map[k].e->ty.kind == TY_F32; }

/* map4: the map outputs of positions j4 .. j4 + 3 of row i (elements E4),
 * the same expressions as map's, computed for the four positions first
 * and then stored: an f32 output with one 16-byte store, others one
 * position at a time.  vec_out_ok: the stores are aligned (every f32
 * output's base at 16 bytes, and i * len + j4 a multiple of 4, as the row
 * loops' groups start). */
static void map4_fn(Carrier *c, Buf *b)
{
	buf_puts(b, "ASC_DEV bool vec_out_ok(const Args &A)\n{\n\treturn true");
	for (int k = 0; k < c->nmap; k++)
		if (map_vec_store(c, k))
			buf_printf(b, " && ((asc_uptr)A.out[%d] & 15) == 0", c->nfinal + k);
	buf_puts(b, ";\n}\n");
	buf_puts(b, "ASC_DEV void map4(const Args &A, const Row &R, const Elem *E4, const State &s, int i, int j4)\n{\n");
	for (int k = 0; k < c->nmap; k++) {
		Ty t = c->map[k].e->ty;
		if (t.len)
			buf_printf(b, "\t%s ov%d[4][%d];\n", cuda_ctype(t.kind), k, t.len);
		else
			buf_printf(b, "\t%s ov%d[4];\n", cuda_ctype(t.kind), k);
	}
	buf_puts(b, "#pragma unroll\n\tfor (int v = 0; v < 4; v++) {\n\tconst Elem &E = E4[v];\n\tconst int j = j4 + v;\n"
		    "\t(void)E, (void)j;\n");
	struct Fn *f;
	cuda_fn_begin(&f, c, b);
	for (int k = 0; k < c->nmap; k++) {
		char o[16];
		snprintf(o, sizeof o, "ov%d[v]", k);
		cuda_fn_assign(f, o, c->map[k].e, c->map[k].e->ty.len);
	}
	cuda_fn_end(f);
	buf_puts(b, "\t}\n");
	for (int k = 0; k < c->nmap; k++) {
		Ty t = c->map[k].e->ty;
		const char *mt = mtype(t.kind);
		buf_printf(b, "\t%s *o%d = (%s *)A.out[%d] + ((long long)i * A.len + j4) * %d;\n", mt, k, mt, c->nfinal + k,
			   width(t));
		if (map_vec_store(c, k))
			buf_printf(b, "\tASC_ST((asc_f4 *)o%d, (asc_f4{ov%d[0], ov%d[1], ov%d[2], ov%d[3]}));\n", k, k, k, k, k);
		else if (t.len)
			buf_printf(b, "#pragma unroll\n\tfor (int v = 0; v < 4; v++)\n#pragma unroll\n\t\tfor (int u = 0; u < %d; u++)\n"
				      "\t\t\tASC_ST(o%d + v * %d + u, ov%d[v][u]);\n", t.len, k, t.len, k);
		else
			buf_printf(b, "#pragma unroll\n\tfor (int v = 0; v < 4; v++)\n\t\tASC_ST(o%d + v, ov%d[v]);\n", k, k);
	}
	buf_puts(b, "}\n");
}

/* The hooks of the bulk-copy row template (templates/rowbulk.cuh), for a
 * carrier whose element inputs are scalar f32, f16 or bf16 (can_vec): a
 * stage holds each input's C elements after the previous input's, and
 * bulk_elem decodes position p of the stage at word `at` (2-byte
 * elements two a word, the lower half first). */
static void bulk_hooks(const Carrier *c, Buf *b)
{
	int bytes = 0, q = 4;
	for (int k = 0; k < c->nelem; k++) {
		bytes += c->elem[k].storage == TY_F32 ? 4 : 2;
		q = c->elem[k].storage == TY_F32 ? q : 8;
	}
	buf_printf(b, "#define ASC_BULK_NIN %d\n#define ASC_BULK_BYTES %d\n#define ASC_BULK_Q %d\n", c->nelem, bytes, q);
	buf_puts(b, "ASC_DEV int bulk_esize(int k)\n{\n\treturn ");
	for (int k = 0; k < c->nelem; k++)
		buf_printf(b, "k == %d ? %d : ", k, c->elem[k].storage == TY_F32 ? 4 : 2);
	buf_puts(b, "0;\n}\ntemplate <class S> ASC_DEV Elem bulk_elem(S &sm, int at, int C, int p)\n{\n\tElem E;\n");
	for (int k = 0; k < c->nelem; k++) {
		const char *ty = cuda_ctype(c->elem[k].ty.kind);
		if (c->elem[k].storage == TY_F32)
			buf_printf(b, "\tE.e%d = (%s)__int_as_float((int)(unsigned)sm[at + p]);\n\tat += C;\n", k, ty);
		else
			buf_printf(b, "\tE.e%d = (%s)%s((unsigned short)((unsigned)sm[at + p / 2] >> 16 * (p & 1)));\n\tat += C / 2;\n",
				   k, ty, c->elem[k].storage == TY_F16 ? "asc_f16" : "asc_bf16");
	}
	buf_puts(b, "\t(void)at;\n\treturn E;\n}\n");
}

/* Whether the row templates' once-per-row functions are calls
 * (templates/blocks.cuh, ASC_ROW_CALLS): where the state passes in
 * registers; a larger one would pass through the stack. */
static int row_calls(const Carrier *c) { return state_size(c) <= 64; }

static void hooks(Carrier *c, Carrier *tfc, Buf *b, int commutes, int vec, int tf, const int *moving, size_t tf_hooks[2])
{
	buf_printf(b, "#define ASC_ORDERED %d\n", !commutes);
	buf_printf(b, "#define ASC_ROW_CALLS %d\n", row_calls(c));
	decl_struct(b, "State", "f", c->state, c->nstate);
	decl_struct(b, "Row", "r", c->row, c->nrow);
	decl_struct(b, "Elem", "e", c->elem, c->nelem);
	buf_printf(b, "static_assert(sizeof(State) == %zu, \"State layout\");\n", state_size(c));
	state_fn(c, b, "ASC_DEV State identity()", c->identity);
	buf_puts(b, "ASC_DEV Row load_row(const Args &A, int i)\n{\n\tRow R;\n");
	load_decls(b, "R", "r", c->row, c->nrow, c->nelem + c->ncol, "(long long)i");
	buf_puts(b, "\treturn R;\n}\n");
	buf_puts(b, "ASC_DEV Elem load_elem(const Args &A, int i, int j)\n{\n\tElem E;\n");
	load_decls(b, "E", "e", c->elem, c->nelem, 0, "(long long)i * A.len + j");
	buf_puts(b, "\treturn E;\n}\n");
	vec_hooks(c, b, vec);
	buf_puts(b, "ASC_DEV bool keep(const Args &A, const Row &R, const Elem &E, int i, int j)\n{\n");
	cuda_mask_body(c, b, c->mask);
	buf_puts(b, "}\n");
	state_fn(c, b, "ASC_DEV State lift(const Args &A, const Row &R, const Elem &E, int i, int j)", c->lift);
	state_fn(c, b, "ASC_DEV State merge(const Args &A, const State &a, const State &b)", c->merge);
	out_fn(c, b, "ASC_DEV void finalize(const Args &A, const Row &R, const State &s, int i, long long at)",
	       c->finalize, c->nfinal, 0, "at");
	out_fn(c, b, "ASC_DEV void map(const Args &A, const Row &R, const Elem &E, const State &s, int i, int j)",
	       c->map, c->nmap, c->nfinal, "(long long)i * A.len + j");
	map4_fn(c, b);
	shfl_hook(c, b, "shfl_down", "__shfl_down_sync");
	shfl_hook(c, b, "shfl_up", "__shfl_up_sync");
	shfl_hook(c, b, "shfl_idx", "__shfl_sync");
	tf_hooks[0] = b->len;
	cuda_transport_hooks(tfc, moving, tf, b);
	tf_hooks[1] = b->len;
}

/* ---- variants ---- */

static Family base_family(const Carrier *c)
{
	return c->tpl == FAM_SCAN ? FAM_SCAN : c->nmap ? FAM_ROWMAP : FAM_ROWREDUCE;
}

/* The row loops are compiled once per (acc, vec) for all of a module's
 * kernels (templates/blocks.cuh): the variants share as few pairs as they
 * can (the 16-byte path falls back to the scalar loop at run time). */
static const Variant defaults_reduce[] = {
	{.fam = FAM_ROWREDUCE, .nt = 128, .acc = 2, .vec = 4, .warp = 1, .un = 1},
	{.fam = FAM_ROWREDUCE, .nt = 256, .acc = 4, .vec = 4, .un = 1},
	{.fam = FAM_ROWREDUCE, .nt = 64, .acc = 2, .vec = 4, .un = 1},
	{.fam = FAM_SPLITK, .nt = 256, .acc = 2, .vec = 4, .un = 1},
	{.fam = FAM_SPLITK, .nt = 64, .acc = 2, .vec = 4, .un = 1},
};
static const Variant defaults_map[] = {
	{.fam = FAM_ROWMAP, .nt = 128, .acc = 2, .vec = 4, .warp = 1, .un = 1},
	{.fam = FAM_ROWMAP, .nt = 128, .acc = 2, .vec = 4, .warp = 1, .items = 8, .un = 1},
	{.fam = FAM_ROWMAP, .nt = 256, .acc = 2, .vec = 4, .un = 1},
	{.fam = FAM_ROWMAP, .nt = 256, .acc = 2, .vec = 4, .items = 16, .un = 1},
	{.fam = FAM_ROWMAP, .nt = 64, .acc = 2, .vec = 4, .un = 1},
	{.fam = FAM_SPLITK, .nt = 256, .acc = 2, .vec = 4, .un = 1},
	{.fam = FAM_SPLITK, .nt = 64, .acc = 2, .vec = 4, .un = 1},
};
/* The row templates' tuning space adds blocks of 512 and 1024 threads with
 * 4 accumulators: more bytes in flight per row, and fewer rows in flight
 * at once, so that rowmap's second read of a long row can come from L2. */
static const Variant space_reduce[] = {
	{.fam = FAM_ROWREDUCE, .nt = 512, .acc = 4, .vec = 4, .un = 1},
	{.fam = FAM_ROWREDUCE, .nt = 1024, .acc = 4, .vec = 4, .un = 1},
};
static const Variant space_map[] = {
	{.fam = FAM_ROWMAP, .nt = 256, .acc = 4, .vec = 4, .un = 1},
	{.fam = FAM_ROWMAP, .nt = 512, .acc = 4, .vec = 4, .un = 1},
	{.fam = FAM_ROWMAP, .nt = 1024, .acc = 4, .vec = 4, .un = 1},
};
/* Tiles of several 16-byte loads an accumulator (un), all issued before
 * any is folded: more bytes in flight without more accumulators (whose
 * states take registers), for rows that few blocks share an SM over; and
 * the same with the transported fold (tf), where the carrier has one
 * (fit_variant drops tf elsewhere, and the copies fall onto the others). */
static const Variant space_reduce_tiles[] = {
	{.fam = FAM_ROWREDUCE, .nt = 256, .acc = 4, .vec = 4, .un = 2},
	{.fam = FAM_ROWREDUCE, .nt = 512, .acc = 2, .vec = 4, .un = 4},
	{.fam = FAM_SPLITK, .nt = 256, .acc = 2, .vec = 4, .un = 2},
	{.fam = FAM_ROWREDUCE, .nt = 128, .acc = 2, .vec = 4, .warp = 1, .un = 1, .tf = 1},
	{.fam = FAM_ROWREDUCE, .nt = 256, .acc = 4, .vec = 4, .un = 1, .tf = 1},
	{.fam = FAM_ROWREDUCE, .nt = 256, .acc = 2, .vec = 4, .un = 2, .tf = 1},
	{.fam = FAM_ROWREDUCE, .nt = 512, .acc = 2, .vec = 4, .un = 2, .tf = 1},
	{.fam = FAM_SPLITK, .nt = 256, .acc = 2, .vec = 4, .un = 1, .tf = 1},
	{.fam = FAM_SPLITK, .nt = 256, .acc = 2, .vec = 4, .un = 2, .tf = 1},
};
static const Variant space_map_tiles[] = {
	{.fam = FAM_ROWMAP, .nt = 256, .acc = 2, .vec = 4, .un = 2},
	{.fam = FAM_ROWMAP, .nt = 256, .acc = 2, .vec = 4, .items = 16, .un = 2},
	{.fam = FAM_ROWMAP, .nt = 512, .acc = 2, .vec = 4, .un = 4},
	{.fam = FAM_ROWMAP, .nt = 256, .acc = 2, .vec = 4, .un = 4},
	{.fam = FAM_SPLITK, .nt = 256, .acc = 2, .vec = 4, .un = 2},
	{.fam = FAM_ROWMAP, .nt = 128, .acc = 2, .vec = 4, .warp = 1, .un = 1, .tf = 1},
	{.fam = FAM_ROWMAP, .nt = 256, .acc = 2, .vec = 4, .items = 16, .un = 1, .tf = 1},
	{.fam = FAM_ROWMAP, .nt = 256, .acc = 2, .vec = 4, .un = 2, .tf = 1},
	{.fam = FAM_ROWMAP, .nt = 512, .acc = 2, .vec = 4, .un = 2, .tf = 1},
	{.fam = FAM_SPLITK, .nt = 256, .acc = 2, .vec = 4, .un = 1, .tf = 1},
	{.fam = FAM_SPLITK, .nt = 256, .acc = 2, .vec = 4, .un = 2, .tf = 1},
};
/* On sm_90, long rows split across a thread-block cluster (cl), kept on
 * chip for the map pass: 2 to 16 blocks of 256 or 512 threads, each
 * keeping 16 elements a thread (up to 131072 positions a row at cl 16). */
static const Variant space_reduce_cluster[] = {
	{.fam = FAM_ROWREDUCE, .nt = 512, .acc = 4, .vec = 4, .un = 1, .cl = 4},
	{.fam = FAM_ROWREDUCE, .nt = 512, .acc = 4, .vec = 4, .un = 1, .cl = 8},
	{.fam = FAM_ROWREDUCE, .nt = 512, .acc = 2, .vec = 4, .un = 2, .cl = 16},
};
static const Variant space_map_cluster[] = {
	{.fam = FAM_ROWMAP, .nt = 256, .acc = 2, .vec = 4, .items = 16, .un = 1, .cl = 4},
	{.fam = FAM_ROWMAP, .nt = 512, .acc = 2, .vec = 4, .items = 16, .un = 1, .cl = 2},
	{.fam = FAM_ROWMAP, .nt = 512, .acc = 2, .vec = 4, .items = 16, .un = 1, .cl = 4},
	{.fam = FAM_ROWMAP, .nt = 512, .acc = 2, .vec = 4, .items = 16, .un = 1, .cl = 8},
	{.fam = FAM_ROWMAP, .nt = 512, .acc = 2, .vec = 4, .items = 16, .un = 1, .cl = 16},
};
/* On sm_90, rows streamed through a ring of shared memory by bulk copies
 * (bk): stages of 4 nt acc positions; the maps' larger rings keep rows of
 * 16384 and 32768 f32 positions on chip for the map pass. */
static const Variant space_reduce_bulk[] = {
	{.fam = FAM_ROWREDUCE, .nt = 256, .acc = 4, .vec = 4, .un = 1, .bk = 4},
	{.fam = FAM_ROWREDUCE, .nt = 256, .acc = 2, .vec = 4, .un = 1, .bk = 4},
	{.fam = FAM_ROWREDUCE, .nt = 512, .acc = 2, .vec = 4, .un = 1, .bk = 3},
	{.fam = FAM_ROWREDUCE, .nt = 256, .acc = 4, .vec = 4, .un = 1, .tf = 1, .bk = 4},
};
static const Variant space_map_bulk[] = {
	{.fam = FAM_ROWMAP, .nt = 256, .acc = 4, .vec = 4, .un = 1, .bk = 4},
	{.fam = FAM_ROWMAP, .nt = 512, .acc = 4, .vec = 4, .un = 1, .bk = 4},
	{.fam = FAM_ROWMAP, .nt = 512, .acc = 2, .vec = 4, .un = 1, .bk = 4},
	{.fam = FAM_ROWMAP, .nt = 256, .acc = 2, .vec = 4, .un = 1, .tf = 1, .bk = 4},
};
static const Variant defaults_scan[] = {
	{.fam = FAM_SCAN, .nt = 128, .acc = 2, .vec = 4, .items = 4, .un = 1},
	{.fam = FAM_SCAN, .nt = 64, .acc = 1, .vec = 1, .items = 1, .un = 1},
};

/* The 32-bit words of the carrier's state, of an element's inputs and of
 * a row's inputs, from which reg_estimate counts (kept in the module, so
 * that its kernels' launch bounds can be chosen from it alone). */
static void reg_words(const Carrier *c, CudaModule *m)
{
	m->words[0] = m->words[1] = m->words[2] = 0;
	for (int f = 0; f < c->nstate; f++)
		m->words[0] += width(c->state[f].ty) * (kind_bytes(c->state[f].ty.kind) == 8 ? 2 : 1);
	for (int k = 0; k < c->nelem; k++)
		m->words[1] += width(c->elem[k].ty);
	for (int k = 0; k < c->nrow; k++)
		m->words[2] += width(c->row[k].ty);
}

/* Registers a variant is expected to need (32-bit words), from the widths
 * of the state, the row inputs and the elements a scan keeps per thread
 * (rowmap keeps its row in shared memory). */
static int reg_estimate(const CudaModule *m, const Variant *v)
{
	int sw = m->words[0], ew = m->words[1], rw = m->words[2];
	/* a tile of more than one load an accumulator holds its elements
	 * (4 a load) until it folds them */
	int tile = v->fam != FAM_SCAN && (v->un > 1 || v->bk) ? v->un * v->acc * 4 * ew : 0;
	return rw + (v->acc + 2) * sw + (v->fam == FAM_SCAN ? v->items * ew : 0) + tile + 24;
}

/* The blocks an SM a row kernel's launch bounds ask for: none (ptxas's
 * own choice) but where the variant is expected to need more than 160
 * registers, past which fit_variant has left one accumulator and can do
 * no more.  Given no number of blocks, ptxas kept such kernels to 128: a
 * state of 51 words (a top-16 list beside two 8-vectors) spilled 8 to 12
 * bytes in every row kernel, and took 133 to 136 registers and none
 * with one block an SM at least.  Below that the minimum only lets
 * ptxas take more registers than the kernel needs (softmax_top16's
 * estimate of 160: 108 became 150; a scan's 32 became 56), fewer blocks
 * an SM for nothing. */
static int row_min_blocks(const CudaModule *m, const Variant *v) { return reg_estimate(m, v) > 160; }

/* Whether attn_fwd keeps Q in shared memory and loads its A fragments at
 * each k-step (QS) rather than holding them in registers: where two tiles
 * of 16 rows a warp or more meet head dim 128 or more, Q's fragments
 * would take 64 registers or more beside o's 128 and s's 64, and ptxas
 * spills; one tile keeps them in registers (no extra ldmatrix). */
static int attn_qs(const CudaAttn *at, const Variant *v) { return v->mt >= 2 && at->d >= 128; }

enum { ATTN_SMEM_MAX = 227 * 1024 };
enum { ATTN_COMBINE_NT = 128 }; /* attn_combine: a warp a row */
static void attn_words(const CudaAttn *at, const Variant *v, long *st, long *qw)
{
	long kw = at->d / 2 + 4, vw = at->dv / 2 + 4;
	*st = v->bn * (kw + vw), *qw = cuda_attn_rows(v) * kw;
}

static unsigned attn_smem(const CudaAttn *at, const Variant *v);

/* The pipeline stages attn_fwd keeps for v: v->st, or fewer where they
 * would not fit in the opt-in maximum of shared memory. */
static int attn_stages(const CudaAttn *at, const Variant *v)
{
	if (v->wg) { /* ws: the stages its schedule needs at least, which may not fit */
		Variant w = *v;
		while (w.st > 1 + (w.ws > 0) && attn_smem(at, &w) > ATTN_SMEM_MAX)
			w.st--;
		return w.st;
	}
	long st, qw, q;
	attn_words(at, v, &st, &qw);
	q = attn_qs(at, v) ? qw : 0;
	int s = v->st > 1 ? v->st : 1;
	while (s > 1 && (s * st + q) * 4 > ATTN_SMEM_MAX)
		s--;
	return s;
}

/* ks > 1: after the key loop, the states of every slice but a row warp's
 * first, 32 lanes of mt (4 + dv / 2) words (attn_merge_slices). */
static long attn_state_words(const CudaAttn *at, const Variant *v)
{
	return (long)(v->nt / 32 - v->nt / 32 / v->ks) * 32 * v->mt * (4 + at->dv / 2);
}

/* As attn_fwd lays out its shared memory (templates/attention.cuh): a stage
 * is a K and a V tile of BN keys in rows padded by 16 bytes, v->st stages
 * (fit_variant keeps as many as fit), the Q tile staged over them (the
 * array is as large as the larger) or, where Q stays in shared memory
 * (attn_qs), after them; the key slices' states over it all after the
 * loop, where they are the larger. */
static unsigned attn_smem(const CudaAttn *at, const Variant *v)
{
	if (v->wg) { /* attention_sm90.cuh: Attn90Smem; e4m3: bytes an element, and Vt and its barrier a stage */
		long es = at->f8 ? 1 : 2, vt = at->f8 ? (long)v->bn * at->dv : 0;
		return (unsigned)(64L * v->wg * at->d * es + (long)v->st * ((long)v->bn * (at->d + at->dv) * es + vt) +
				  8L * ((2 + at->f8) * v->st + 1) + 1024);
	}
	long st, qw, s = v->st, w, mw = attn_state_words(at, v);
	attn_words(at, v, &st, &qw);
	w = attn_qs(at, v) ? s * st + qw : s * st > qw ? s * st : qw;
	return (unsigned)((w > mw ? w : mw) * 4);
}

/* Blocks of v an SM's shared memory holds: an SM has 1 KB more than a
 * block may take (m->smem_max, or the opt-in maximum where the device is
 * not known), and each block reserves 1 KB. */
static int attn_sm_blocks(const CudaModule *m, const Variant *v)
{
	long sm = (m->smem_max > 0 ? m->smem_max : ATTN_SMEM_MAX) + 1024;
	return (int)(sm / (attn_smem(&m->attn, v) + 1024));
}

/* Decoding's blocks an SM (its launch bounds): as many as the shared
 * memory holds, but no more than leave a thread 160 registers.  One stage
 * of 128 keys at head dim 64 makes room for 6 blocks of 128 threads,
 * where ptxas kept to 80 registers and spilled 16 to 380 bytes in every
 * attention spec's tuning space; 4 blocks (128 registers) still spilled
 * attention_sink's 20; 3 took 136 to 142 and spilled none. */
static int attn_decode_blocks(const CudaModule *m, const Variant *v)
{
	int b = attn_sm_blocks(m, v), most = 65536 / (v->nt * 160);
	return b < most ? b : most > 1 ? most : 1;
}

enum { STATIC_SMEM_MAX = 48 * 1024 }; /* static shared bytes a block may declare */

/* rowbulk's dynamic shared memory: bk stages of 4 nt acc positions, and
 * two mbarriers a stage. */
static unsigned bulk_smem(const CudaModule *m, const Variant *v)
{
	return v->bk ? (unsigned)(v->bk * (4L * v->nt * v->acc * m->bulk_bytes + 16)) : 0;
}

/* block_reduce's static shared memory: a state a warp, and the result. */
static size_t reduce_smem(const Carrier *c, int nt) { return (size_t)(nt / 32 + 1) * state_size(c); }

/* Make v legal for c in module m: no 4-wide loads where the inputs do not
 * allow them, one accumulator where order matters, fewer accumulators and
 * scan elements where the registers would not hold them (spills), fewer
 * kept elements where rowmap's shared memory would not hold them; for
 * attention, as many pipeline stages as fit (asked-for stages that do not
 * fit give the same kernel). */
static void fit_variant(const Carrier *c, const CudaModule *m, Variant *v)
{
	if (v->fam == FAM_ATTN) {
		if (m->base == FAM_ATTN)
			v->st = attn_stages(&m->attn, v);
		return;
	}
	if (!m->vec_ok)
		v->vec = 1;
	if (!m->commutes)
		v->acc = 1, v->un = 1;
	if (v->un < 1 || v->fam == FAM_SCAN)
		v->un = 1;
	if (!m->tf || v->fam == FAM_SCAN)
		v->tf = 0;
	/* blocks of 512 threads and more: ptxas keeps to 64 registers (two
	 * blocks an SM), where a tile of 4 loads of layer norm's elements
	 * spilled 32 bytes; of 256, to 128 (two blocks an SM too), where 4
	 * accumulators of the MoE router's top-8 state (17 words) with
	 * tiles of 2 loads each, an estimate of 158, spilled 16 bytes (they
	 * take 153 registers given them) */
	while (reg_estimate(m, v) > (v->nt >= 512 ? 64 : v->nt >= 256 ? 128 : 160) && v->un > 1)
		v->un /= 2;
	while (reg_estimate(m, v) > 160 && v->acc > 1)
		v->acc /= 2;
	while (v->fam == FAM_SCAN && reg_estimate(m, v) > 160 && v->items > 1)
		v->items /= 2;
	if (v->warp || (v->fam != FAM_ROWREDUCE && v->fam != FAM_ROWMAP))
		v->cl = 0;
	/* bulk copies: a block a row of a carrier that commutes (strided
	 * positions), its inputs in 16-byte groups; the ring within the
	 * opt-in maximum of shared memory */
	if (!m->vec_ok || !m->commutes || v->warp || v->cl || (v->fam != FAM_ROWREDUCE && v->fam != FAM_ROWMAP))
		v->bk = 0;
	/* blocks of 512 threads and more (but the bulk copies', below): a
	 * row that needs more than those 64 registers folds in fewer
	 * accumulators, then in a narrower block.  At 1024 threads (64
	 * registers at most, which ptxas may halve for two blocks an SM) the
	 * estimate, which leaves out the merge's temporaries, keeps a margin:
	 * 4 accumulators of odd_vectors' state (an estimate of 75) took 32
	 * registers and spilled 420 bytes, 2 of them (61) 12 bytes, 4 of
	 * odd_names' (61) 4 to 32 bytes; estimates of 42 and under (layer
	 * norm, Welford) none */
	while (v->fam != FAM_SCAN && !v->bk && v->nt >= 512 && reg_estimate(m, v) > (v->nt >= 1024 ? 48 : 64)) {
		if (v->acc > 1)
			v->acc /= 2;
		else
			v->nt /= 2;
	}
	if (v->bk)
		v->items = 0, v->un = 1;
	/* 1024 threads hold 64 registers each: layer norm's tile of 16
	 * elements (acc 4) spilled 28 bytes there, of 8 none */
	if (v->bk && v->nt >= 1024 && v->acc > 2)
		v->acc = 2;
	/* the opt-in maximum bounds a block's dynamic and static shared memory
	 * together: block_reduce's states take their part of it */
	long ring_max = ATTN_SMEM_MAX - (long)reduce_smem(c, v->nt);
	while (v->bk > 2 && bulk_smem(m, v) > ring_max)
		v->bk--;
	while (v->bk && v->acc > 1 && bulk_smem(m, v) > ring_max)
		v->acc /= 2;
	/* rowmap's kept row and block_reduce's states (and rowcluster's two),
	 * in static shared memory */
	while (v->fam == FAM_ROWMAP && v->items > 1 &&
	       (size_t)v->nt * v->items * decl_size(c->elem, c->nelem) + reduce_smem(c, v->nt) + 2 * state_size(c) >
		       STATIC_SMEM_MAX)
		v->items /= 2;
	if (v->fam == FAM_ROWMAP && v->items == 1)
		v->items = 0;
	/* block_reduce's state a warp, in static shared memory too: a wide
	 * state takes a narrower block (over 48 KB the module would not load) */
	while (!v->warp && v->fam != FAM_SCAN && v->nt > 32 && reduce_smem(c, v->nt) > STATIC_SMEM_MAX)
		v->nt /= 2;
}

static int same(const Variant *a, const Variant *b) { return !memcmp(a, b, sizeof *a); }

enum { MAX_VARIANTS = 32 };

/* The Hopper template's e4m3 path transposes V into boxes of 64 keys and
 * rounds P to e4m3 once: a variant of it with other keys a tile or P in
 * parts (pv > 1) is refused, with the reason in why. */
static int attn90_f8_refuses(const CudaAttn *at, const Variant *v, char *why, size_t n)
{
	if (!at->f8 || !v->wg || (v->bn % 64 == 0 && v->pv == 1))
		return 0;
	if (why)
		snprintf(why, n, "on f8e4m3 inputs it takes keys a tile in multiples of 64 (bn; V is transposed in boxes of "
			 "64 keys) and P rounded once to e4m3 (pv=1), not bn=%d, pv=%d", v->bn, v->pv);
	return 1;
}

/* v, made legal, unless the module has it already (its kernels: the split
 * is the launch's). */
static void add_variant(const Carrier *c, CudaModule *m, Variant v)
{
	v.split = 0;
	fit_variant(c, m, &v);
	if (v.fam == FAM_ATTN && v.ws && attn_smem(&m->attn, &v) > ATTN_SMEM_MAX)
		return; /* the warp-specialized schedules' stages do not fit */
	if (v.fam == FAM_ATTN && v.wg && attn90_f8_refuses(&m->attn, &v, NULL, 0))
		return;
	for (int k = 0; k < m->nvar; k++)
		if (same(&m->var[k], &v))
			return;
	if (m->nvar < MAX_VARIANTS)
		m->var[m->nvar++] = v;
}

static void add_each(const Carrier *c, CudaModule *m, const Variant *v, size_t n)
{
	for (size_t k = 0; k < n; k++)
		add_variant(c, m, v[k]);
}

int cuda_kernel_names(const CudaModule *m, int v, char names[3][64])
{
	static const char *sfx[NFAM][3] = {[FAM_ROWREDUCE] = {""}, [FAM_ROWMAP] = {""},
					   [FAM_SPLITK] = {"_part", "_comb", "_map"},
					   [FAM_SCAN] = {"_part", "_carry", "_down"}, [FAM_ATTN] = {"_fwd", "_comb"}};
	static const int count[NFAM] = {[FAM_ROWREDUCE] = 1, [FAM_ROWMAP] = 1, [FAM_SPLITK] = 3, [FAM_SCAN] = 3, [FAM_ATTN] = 2};
	const Variant *x = &m->var[v];
	int n = count[x->fam];
	if (x->fam == FAM_SPLITK && m->base != FAM_ROWMAP)
		n = 2;
	char base[160];
	const char *fam = x->fam == FAM_ATTN ? "attn" : variant_family_name(x->fam);
	if (!m->name[0])
		snprintf(base, sizeof base, "%s_v%d", m->prefix, v);
	else if (x->fam == FAM_ATTN && x->wg)
		snprintf(base, sizeof base, "%.24s_attn90_wg%d_bn%d_pv%d_st%d%s%.0d", m->name, x->wg, x->bn, x->pv, x->st,
			 x->ws ? "_ws" : "", x->ws);
	else if (x->fam == FAM_ATTN)
		snprintf(base, sizeof base, "%.24s_attn_nt%d_mt%d_bn%d_pv%d_st%d_ks%d", m->name, x->nt, x->mt, x->bn, x->pv,
			 x->st, x->ks);
	else
		snprintf(base, sizeof base, "%.24s_%s_nt%d_acc%d_v%d%s%.0d%s%s%.0d%s%s%.0d%s%.0d", m->name, fam, x->nt, x->acc,
			 x->vec, x->items ? "_i" : "", x->items, x->warp ? "_warp" : "", x->un > 1 ? "_u" : "",
			 x->un > 1 ? x->un : 0, x->tf ? "_tf" : "", x->cl ? "_cl" : "", x->cl, x->bk ? "_bk" : "", x->bk);
	for (int k = 0; k < n; k++)
		snprintf(names[k], 64, "%.58s%s", base, sfx[x->fam][k]);
	if (x->fam != FAM_ROWREDUCE && x->fam != FAM_ROWMAP) { /* one combine for every variant */
		if (m->name[0])
			snprintf(names[1], 64, "%.24s_%s%s", m->name, fam, sfx[x->fam][1]);
		else
			snprintf(names[1], 64, "%s%s", m->prefix, sfx[x->fam][1]);
	}
	return n;
}

/* minb > 0: the blocks an SM is to hold at least (__launch_bounds__'s
 * second argument, from which ptxas sizes its register budget). */
static void kernel(Buf *b, const char *name, int nt, int minb, const char *body)
{
	char lb[32];
	snprintf(lb, sizeof lb, minb > 0 ? "%d, %d" : "%d", nt, minb);
	buf_printf(b, "extern \"C\" __global__ void __launch_bounds__(%s) %s(ASC_PARAM Args A) { %s; }\n", lb, name, body);
	buf_printf(b, "#ifdef ASSOC_EMU\nextern \"C\" void %s_emu(const void *p) { %s(*(const Args *)p); }\n#endif\n", name,
		   name);
}

/* A kernel of the Hopper attention template: the tensor maps are a second
 * parameter, in the parameter space as TMA needs them (__grid_constant__);
 * the emulator's entry finds them after Args (ArgsTma).  One block an SM:
 * the register cap at entry that lets ptxas give each thread up to 255. */
static void kernel90(Buf *b, const char *name, int nt, const char *body)
{
	buf_printf(b, "extern \"C\" __global__ void __launch_bounds__(%d, 1) %s(ASC_PARAM Args A, ASC_PARAM AttnMaps T) { %s; }\n",
		   nt, name, body);
	buf_printf(b, "#ifdef ASSOC_EMU\nextern \"C\" void %s_emu(const void *p) { %s(((const ArgsTma *)p)->a, "
		      "((const ArgsTma *)p)->t); }\n#endif\n", name, name);
}

int cuda_paged_batch(const CudaModule *m, int v)
{
	return m->paged && m->var[v].fam == FAM_ATTN && !m->var[v].wg && m->var[v].mt == 1;
}

int cuda_paged_pick(const CudaModule *m, int rows, int len, int split)
{
	int v = cuda_pick(m, rows, len, split);
	if (cuda_paged_batch(m, v))
		return v;
	/* many rows: 16 a warp rather than a launch per sequence */
	for (int pass = 0; pass < 2; pass++)
		for (int k = 0; k < m->nvar; k++)
			if (cuda_paged_batch(m, k) && (pass || m->var[k].ks <= 1) && cuda_fits(m, k, NULL, 0))
				return k;
	return -1;
}

/* The opening of a paged kernel's body, in pre: B, its sequence's
 * arguments. */
static const char *paged_pre(int dv, char pre[64])
{
	snprintf(pre, 64, "Args B; if (attn_paged_seq<%d>(A, B)) ", dv);
	return pre;
}

/* The combine of split rows, the carry of scans and the merge of
 * attention's key splits do not depend on the variant's tile parameters:
 * one kernel serves them all, which saves NVRTC a whole kernel's
 * optimization per extra variant (attention at head dim 128: 43 ms each).
 * Attention variants of one tile of 16 query rows a warp, those that
 * decoding takes, merge their splits inside the kernel instead
 * (attn_split_last). */
static void kernels(const CudaModule *m, const unsigned char *want, Buf *b)
{
	int comb = 0, carry = 0, acomb = 0;
	for (int v = 0; v < m->nvar; v++) {
		const Variant *x = &m->var[v];
		if (want && !want[v])
			continue;
		char nm[3][64], body[256], pre[64];
		cuda_kernel_names(m, v, nm);
		if (x->cl && (x->fam == FAM_ROWREDUCE || x->fam == FAM_ROWMAP)) {
			snprintf(body, sizeof body, "rowcluster<%d, %d, %d, %d, %d, %d, %d, %d>(A)", x->nt, x->acc, x->vec, x->cl,
				 x->fam == FAM_ROWMAP, x->items, x->un, x->tf);
			/* one block an SM at least: without it, in the tuning
			 * space's module, ptxas held map_pass_at's copy for these
			 * kernels to 40 registers and spilled 8 bytes (layer norm) */
			kernel(b, nm[0], x->nt, 1, body);
			continue;
		}
		if (x->bk && (x->fam == FAM_ROWREDUCE || x->fam == FAM_ROWMAP)) {
			snprintf(body, sizeof body, "rowbulk<%d, %d, %d, %d, %d, %d>(A)", x->nt, x->acc, x->vec, x->bk,
				 x->fam == FAM_ROWMAP, x->tf);
			/* one block an SM at least, as the cluster kernels: without
			 * it ptxas held layer norm's rowbulk<256, 4, ...> to 80
			 * registers and spilled 24 bytes, where it takes 94 (its
			 * ring of 64 KB holds it to 3 blocks an SM anyway) */
			kernel(b, nm[0], x->nt, 1, body);
			continue;
		}
		switch (x->fam) {
		case FAM_ROWREDUCE:
			snprintf(body, sizeof body, "rowreduce<%d, %d, %d, %d, %d, %d>(A)", x->nt, x->acc, x->vec, x->warp, x->un,
				 x->tf);
			kernel(b, nm[0], x->nt, row_min_blocks(m, x), body);
			break;
		case FAM_ROWMAP:
			snprintf(body, sizeof body, "rowmap<%d, %d, %d, %d, %d, %d, %d>(A)", x->nt, x->acc, x->vec, x->warp,
				 x->items, x->un, x->tf);
			kernel(b, nm[0], x->nt, row_min_blocks(m, x), body);
			break;
		case FAM_SPLITK:
			snprintf(body, sizeof body, "splitk_partial<%d, %d, %d, %d, %d>(A)", x->nt, x->acc, x->vec, x->un, x->tf);
			kernel(b, nm[0], x->nt, row_min_blocks(m, x), body);
			if (!comb++)
				kernel(b, nm[1], 64, 0, "splitk_combine<64>(A)");
			if (m->base == FAM_ROWMAP) {
				snprintf(body, sizeof body, "splitk_map<%d, %d, %d>(A)", x->nt, x->vec, x->un);
				kernel(b, nm[2], x->nt, row_min_blocks(m, x), body);
			}
			break;
		case FAM_ATTN: {
			const CudaAttn *at = &m->attn;
			int bf = at->f8 ? 2 : at->bf16; /* the template's operand kind: e4m3 is 2 */
			/* the producer's registers: 40 where its walk over the live
			 * key tiles multiplies intervals (attn90_ws) */
			if (x->wg && x->ws)
				snprintf(body, sizeof body, "attn90_ws<%d, %d, %d, %d, %d, %d, %d, %d>(A, T)", at->d, at->dv,
					 x->bn, bf, x->pv, x->st, x->ws - 1, at->tile_mul ? 40 : 24);
			else if (x->wg)
				snprintf(body, sizeof body, "attn90_fwd<%d, %d, %d, %d, %d, %d, %d>(A, T)", at->d, at->dv, x->wg,
					 x->bn, bf, x->pv, x->st);
			if (x->wg) {
				kernel90(b, nm[0], x->nt, body);
				snprintf(body, sizeof body, "attn_combine<%d, %d>(A)", at->dv, ATTN_COMBINE_NT);
				if (!acomb++)
					kernel(b, nm[1], ATTN_COMBINE_NT, 0, body);
				break;
			}
			/* paged: a block of the batch's launch runs its sequence's
			 * arguments (attn_paged_seq) */
			snprintf(body, sizeof body, "%sattn_fwd<%d, %d, %d, %d, %d, %d, %d, %d, %d, %d>(%s)",
				 cuda_paged_batch(m, v) ? paged_pre(at->dv, pre) : "", at->d, at->dv, x->nt / 32, x->mt, x->bn, at->bf16,
				 x->pv, attn_qs(at, x), x->st, x->ks, cuda_paged_batch(m, v) ? "B, &A" : "A");
			/* decoding's blocks are as many an SM as their stages allow
			 * (1 to 3; attn_decode_blocks): registers up to that, where
			 * ptxas, not knowing the shared memory, aimed at 6 blocks and
			 * spilled (80 registers at head dim 32 with a float mask).  A
			 * weighted sum's others, and those of a mask with a call on
			 * its slow path (at->mask_calls), at least one: without,
			 * ptxas held sigmoid attention's 64 rows a block at head dim
			 * 64 to 128 registers around the division's slow-path call,
			 * and spilled 12 bytes; with, 143 and none.  At head dim 128,
			 * 16 rows a warp, a mask 1 / f32(i - j) > c spilled 12 bytes
			 * at 168 registers; with, 198 and none.  A soft cap keeps
			 * ptxas's own choice (166 registers, no spill; with a
			 * distance slope and a window beside it, 8 bytes), which
			 * leaves room for more blocks an SM. */
			kernel(b, nm[0], x->nt, x->ks > 1 ? attn_decode_blocks(m, x) : at->sum || at->mask_calls ? 1 : 0, body);
			snprintf(body, sizeof body, "attn_combine<%d, %d>(A)", at->dv, ATTN_COMBINE_NT);
			if (!acomb++)
				kernel(b, nm[1], ATTN_COMBINE_NT, 0, body);
			break;
		}
		case FAM_SCAN:
			snprintf(body, sizeof body, "splitk_partial<%d, %d, %d>(A)", x->nt, x->acc, x->vec);
			kernel(b, nm[0], x->nt, row_min_blocks(m, x), body);
			if (!carry++)
				kernel(b, nm[1], 64, 0, "scan_carry<64>(A)");
			snprintf(body, sizeof body, "scan_down<%d, %d>(A)", x->nt, x->items);
			kernel(b, nm[2], x->nt, row_min_blocks(m, x), body);
			break;
		default:
			break;
		}
	}
}

static void put_blob(Buf *b, const char *name)
{
	const Blob *x = blob_find(name);
	buf_printf(b, "/* ---- templates/%s.cuh ---- */\n", name);
	buf_puts(b, x ? x->text : "#error missing template\n");
	buf_puts(b, "\n");
}

static int check_limits(const Carrier *c, char *msg, size_t n)
{
	if (c->nelem + c->ncol + c->nrow > CUDA_MAXIN || c->nfinal + c->nmap > CUDA_MAXOUT || c->nparams > CUDA_MAXP) {
		/* the CPU backend takes LLVM_MAX_ARRAYS of each; the interpreter any */
		int cpu = c->nelem + c->ncol + c->nrow <= LLVM_MAX_ARRAYS && c->nfinal + c->nmap <= LLVM_MAX_ARRAYS &&
			  c->nparams <= LLVM_MAX_ARRAYS;
		snprintf(msg, n, "the CUDA backend takes at most %d inputs, %d outputs and %d params; %s has %d, %d and %d "
			 "(--device %s takes it)", CUDA_MAXIN, CUDA_MAXOUT, CUDA_MAXP, c->name, c->nelem + c->ncol + c->nrow,
			 c->nfinal + c->nmap, c->nparams, cpu ? "cpu" : "interp");
		return -1;
	}
	if (c->tpl == FAM_SCAN && c->nmap) {
		snprintf(msg, n, "a scan with map outputs is not supported by the CUDA backend");
		return -1;
	}
	return 0;
}

/* Decoding's variant (cuda_pick, where a kv head's query rows fit in 16):
 * 4 warps on the same 16 rows, each taking a quarter of every key tile
 * (ks = 4).  At 64 rows a block, 4 warps of 16, a key fed the tensor cores
 * 64 rows for the 1 to 16 a decoding step has: 64 flops a byte of K and V
 * (QK^T and PV, 2 d + 2 dv flops a row and key, over (d + dv) 2 bytes),
 * about 220 TFLOP/s of mma.sync at the H200's copy speed, near what the
 * prefill kernel reaches; at 16 rows, 16 flops a byte.  Decoding streams
 * keys and values once, so a block keeps as many of them in flight as its
 * shared memory holds (smem: the device's limit per block, 0 where none is
 * known): tiles of 128 keys in three stages where they fit, or two, else
 * two stages of 64 keys; and one block an SM (cuda_attn_split).
 * Measured on an H200 (bf16, 32 query heads on 8, 32768 keys), against
 * tiles of 64 in two stages at two blocks an SM: 0.74 of the copy against
 * 0.69 at head dim 128, 0.67 against 0.57 at 64, 0.57 against 0.46 at 32.
 * 16 or 32 keys a warp hold as few registers as the 16-key tiles of head
 * dim 256. */
static Variant attn_decode(const CudaAttn *at, int smem)
{
	unsigned most = smem > 0 && smem < ATTN_SMEM_MAX ? (unsigned)smem : ATTN_SMEM_MAX;
	Variant v = {.fam = FAM_ATTN, .nt = 128, .acc = 1, .vec = 1, .mt = 1, .bn = 128, .pv = 1, .st = 3, .ks = 4};
	while (v.st > 2 && attn_smem(at, &v) > most)
		v.st--;
	if (attn_smem(at, &v) > most)
		v.bn = 64; /* and two stages: a third made ptxas spill at head dim 256 */
	return v;
}

/* Attention variants of 64 and 128 query rows (cuda_pick), as FlashAttention-2:
 * 4 warps of 32 rows for head dims up to 64 (keys per tile 64), 4 or 8 warps
 * of 16 rows above, with key tiles of 64 up to 128 and of 16 above (Q and O
 * in registers leave room for no more: at 32, 255 registers and spills on
 * sm_90).  At head dim 128, where the score is linear in the dot, 128 rows
 * are 4 warps of 32 with Q kept in shared memory (attn_qs; with Q in
 * registers they spill): each K and V fragment read by ldmatrix then feeds
 * two products, 80 ldmatrix per 256 mma in the steady key-tile loop against
 * 64 per 128 with 16 rows a warp (shared-memory reads per product, the bound
 * at this head dim, down by 37%), 2.4 other instructions per mma against
 * 2.8, at the same 8 warps an SM (2 blocks of 102 KB and 254 registers
 * against 1 of 256 threads and 186).  8 warps of 16 rows stay a variant for
 * the tuner.  Scores that are not linear are computed per score in the loop
 * (a soft cap's tanh, a division whose slow path is a call), around which
 * ptxas spills at 32 rows a warp: they keep 16, and so do masks with such
 * operations, evaluated in the same loop (`f32(j) / f32(i + 1) >= c`
 * spilled 68 bytes at 32 rows a warp, `1 / f32(i - j) > c` 72; comparisons
 * of sums and products, none).  K and V are double-buffered
 * (st = 2; the tuning space adds 1 and 3) in dynamic shared memory (68 KB at
 * head dim 128), the Q tile staged there for ldmatrix.  P rounded once to the inputs' type (pv = 1), as
 * FlashAttention does; pv = 2 (f16) or 3 (bf16; 2 is refused there) keeps
 * P V at float32's precision, by --config. */
static int attn_defaults(const CudaAttn *at, int smem, Variant *v)
{
	int d = at->d > at->dv ? at->d : at->dv, bn = d > 128 ? 16 : 64, n = 2;
	v[0] = (Variant){.fam = FAM_ATTN, .nt = 128, .acc = 1, .vec = 1, .mt = 1, .bn = bn, .pv = 1, .st = 2, .ks = 1};
	v[1] = (Variant){.fam = FAM_ATTN, .nt = d <= 64 ? 128 : 256, .acc = 1, .vec = 1, .mt = d <= 64 ? 2 : 1, .bn = bn,
			 .pv = 1, .st = 2, .ks = 1};
	if (at->d == 128 && at->dv <= 128 && !at->heavy) {
		v[2] = v[1];
		v[1] = (Variant){.fam = FAM_ATTN, .nt = 128, .acc = 1, .vec = 1, .mt = 2, .bn = 64, .pv = 1, .st = 2, .ks = 1};
		n = 3;
	}
	v[n++] = attn_decode(at, smem);
	return n;
}

/* The Hopper template's variant for prefill (attention_sm90.cuh): two
 * warpgroups of 64 query rows, as FlashAttention-3 has; key tiles of 128
 * up to head dim 128 (Q 32 KB and two stages of 64 KB at 128) and of 64
 * above (Q 64 KB and two stages of 64 KB at 256), where S's 32 registers
 * beside o's 128 leave room for P. */
static Variant attn90_default(const CudaAttn *at)
{
	int d = at->d > at->dv ? at->d : at->dv;
	return (Variant){.fam = FAM_ATTN, .nt = 256, .acc = 1, .vec = 1, .mt = 1, .bn = d > 128 ? 64 : 128, .pv = 1, .st = 2,
			 .ks = 1, .wg = 2};
}

/* Whether the Hopper template takes the carrier's head dims (its boxes of
 * 64 columns, wgmma's n up to 256); else the reason. */
static int attn90_dims(const CudaAttn *at, char *why, size_t n)
{
	if (at->d % 64 == 0 && at->dv % 64 == 0 && at->d <= 256 && at->dv <= 256)
		return 1;
	snprintf(why, n, "head dims %d/%d (the Hopper template takes multiples of 64 up to 256)", at->d, at->dv);
	return 0;
}

/* The Hopper template's schedule of a variant (wg > 0), for --explain. */
static const char *attn90_schedule(int ws)
{
	return ws == 2   ? "warp-specialized with overlap (ws=2: as ws=1, and each tile's S = Q K^T issued in one turn with "
			   "the last tile's P V, its softmax under that P V)"
	       : ws == 1 ? "warp-specialized ping-pong (ws=1: a producer warpgroup's TMA copies, two consumer warpgroups "
			   "taking turns at the tensor cores at named barriers, one's softmax under the other's products)"
			 : "every warpgroup computes, thread 0 refills the stages";
}

/* sm_90a exactly: wgmma and setmaxnreg are that target's alone. */
static int arch_hopper(const char *arch)
{
	size_t l = arch ? strlen(arch) : 0;
	const char *u = arch ? strchr(arch, '_') : NULL;
	return u && atoi(u + 1) == 90 && l && arch[l - 1] == 'a';
}

/* The attention template when the carrier implements its contract (and no
 * configuration of another family is asked for); m->explain says why. */
static void choose_attention(Carrier *c, const char *config, int sm, CudaModule *m)
{
	char why[512];
	if (cuda_attn_match(c, &m->attn, why, sizeof why)) {
		int vec = 0;
		for (int f = 0; f < c->nstate; f++)
			vec |= c->state[f].ty.len > 0;
		if (!vec) /* the contract's reasons would read as if it had been close */
			snprintf(m->explain, sizeof m->explain, "template %s (generic): scalar state fields, so no attention",
				 variant_family_name(m->base));
		else
			snprintf(m->explain, sizeof m->explain, "template %s (generic, vector state): not the attention contract: %s",
				 variant_family_name(m->base), why);
		return;
	}
	if (config && strncmp(config, "attention", 9)) {
		snprintf(m->explain, sizeof m->explain, "template %s (generic): asked for by the configuration '%s'",
			 variant_family_name(m->base), config);
		return;
	}
	if (sm && sm < ATTN_MIN_SM) {
		snprintf(m->explain, sizeof m->explain,
			 "template %s (generic, vector state): the attention template needs sm_%d or newer (cp.async, "
			 "mma.sync m16n8k16 on f16 and bf16), the target is sm_%d", variant_family_name(m->base), ATTN_MIN_SM, sm);
		return;
	}
	m->base = FAM_ATTN;
	char h90[480] = "";
	if (m->h90) {
		char why[96];
		if (attn90_dims(&m->attn, why, sizeof why))
			snprintf(h90, sizeof h90, "; on sm_90a, prefill on the Hopper template (attention_sm90: %s, TMA "
				 "copies into mbarrier stages; by default %s, and the tuner times its warp-specialized schedules "
				 "ws=1 and ws=2 beside it), decoding and the fallback on mma.sync%s",
				 m->attn.f8 ? "e4m3 wgmma for both products, V transposed in shared memory for P V, P rounded "
					      "to e4m3" : "wgmma", attn90_schedule(0),
				 m->attn.f8 ? " with the inputs as f16" : "");
		else
			snprintf(h90, sizeof h90, "; not the Hopper template: %s", why), m->h90 = 0;
	}
	snprintf(m->explain, sizeof m->explain,
		 "template attention (tensor cores, %s, head dims %d/%d): %s; %s lowered elementwise on the score "
		 "tile with dot(q, k) on the tensor cores%s; mask %s%s",
		 m->attn.f8 ? (m->h90 ? "f8e4m3" : "f8e4m3 inputs as f16") : m->attn.bf16 ? "bf16" : "f16", m->attn.d, m->attn.dv, m->attn.evidence,
		 m->attn.sum ? "weights" : "score",
		 m->attn.sum ? ", P V without a row maximum or rescale" : "",
		 c->mask ? "elementwise, whole tiles skipped by interval arithmetic" : "none", h90);
}

/* The tuning space beyond the defaults (cuda_module_space): each default
 * attention variant with every other number of pipeline stages, and with
 * half its keys per tile (16 at least, decoding's 16 a warp); decoding's
 * also with half its key slices, and with twice its keys per tile where
 * it has fewer than 128. */
static void attn_space(const Carrier *c, CudaModule *m, const Variant *def, int nd)
{
	for (int k = 0; k < nd; k++) {
		for (int st = 1; st <= 3; st++) {
			Variant w = def[k];
			w.st = st;
			add_variant(c, m, w);
		}
		Variant w = def[k];
		if (w.ks > 1 && w.bn < 128) { /* decoding's: twice the keys a warp */
			w.bn *= 2;
			add_variant(c, m, w);
			w = def[k];
		}
		if (w.ks > 1) { /* and 32 rows of two slices */
			w.ks /= 2;
			add_variant(c, m, w);
			w = def[k];
		}
		if (w.bn / 2 >= 16 * w.ks) {
			w.bn /= 2;
			add_variant(c, m, w);
		}
	}
}

/* The warp-specialized schedules (ws 1 and 2) at the default's keys a
 * tile (but the one below), with two stages and with three where they
 * fit: timed on a device beside the default, which stays the rule's
 * choice until a device has measured them (cuda_pick takes the first
 * Hopper variant). */
static void attn90_ws_space(const Carrier *c, CudaModule *m, const Variant *def)
{
	const CudaAttn *at = &m->attn;
	int d = at->d > at->dv ? at->d : at->dv;
	for (int ws = 1; ws <= 2; ws++)
		for (int st = 2; st <= 3; st++) {
			Variant w = *def;
			w.ws = ws, w.st = st, w.nt = 128 * (w.wg + 1);
			/* ws 2 holds S of a tile and P of the last beside o; a
			 * weighted sum's scalar fields add their lifts: at head
			 * dim 128 and 128 keys a tile its consumers spilled at
			 * 240 registers (rational_weight 196 bytes, its division's
			 * slow-path call among them; sigmoid_normalized 60), and
			 * at 64 keys none */
			if (ws == 2 && at->sum && (at->fm >= 0 || at->fl >= 0) && d >= 128)
				w.bn = 64;
			add_variant(c, m, w);
		}
}

/* The NN of sm_NN, compute_NN or sm_NNa; 0 for none (the newest). */
static int arch_sm(const char *arch)
{
	const char *u = arch ? strchr(arch, '_') : NULL;
	return u ? atoi(u + 1) : 0;
}

/* The module's source with the kernels of the variants want marks (NULL:
 * all), named as in the whole module, and the templates they use. */
static char *module_src(const CudaModule *m, const unsigned char *want)
{
	Buf b = {0};
	int used[NFAM] = {0}, nv = 0, h90 = 0, cl = 0, bk = 0, stashed = 0, streamed = 0, tf = 0;
	for (int v = 0; v < m->nvar; v++)
		if (!want || want[v]) {
			const Variant *x = &m->var[v];
			used[x->fam] = 1, nv++, h90 |= x->wg > 0, cl |= x->cl > 0, bk |= x->bk > 0, tf |= x->tf > 0;
			/* map passes: rowmap's keep the row in shared memory where
			 * it has items, split rows' read it again */
			if (x->fam == FAM_ROWMAP) /* rowbulk's where the ring has been refilled */
				*(x->items > 0 ? &stashed : &streamed) = 1;
			if (x->fam == FAM_SPLITK)
				streamed = 1;
		}
	buf_printf(&b, "/* generated by assoc: carrier %s, %d kernel variants; layout and launch rules in the template "
		       "comments */\n", m->prefix, nv);
	put_blob(&b, "common");
	buf_puts(&b, "/* ---- the carrier ---- */\n");
	/* The tile fold is a template that the row loops name whether or not
	 * a kernel folds tiles, so NVRTC's front end instantiates the
	 * carrier's transported code for every module; where none of the
	 * module's kernels folds tiles (the default variants: those with tf
	 * are the tuner's) the stub stands in, and the PTX is the same
	 * (Welford's variant that a run compiles first: 5% less of NVRTC's
	 * time). */
	if (tf || !m->tf)
		buf_puts(&b, m->hooks);
	else {
		buf_printf(&b, "%.*s", (int)m->tf_hooks[0], m->hooks);
		cuda_transport_hooks(NULL, NULL, 0, &b);
		buf_puts(&b, m->hooks + m->tf_hooks[1]);
	}
	buf_printf(&b, "#define ASC_MAP_STASH %d\n", stashed && streamed ? -1 : stashed);
	/* one variant's row loops inlined (templates/blocks.cuh) */
	buf_printf(&b, "#define ASC_LOOP_CALLS %d\n", nv > 1);
	put_blob(&b, "blocks");
	if (used[FAM_ROWREDUCE])
		put_blob(&b, "rowreduce");
	if (used[FAM_ROWMAP])
		put_blob(&b, "rowmap");
	if (used[FAM_SPLITK] || used[FAM_SCAN])
		put_blob(&b, "splitk");
	if (used[FAM_SCAN])
		put_blob(&b, "scan");
	if (used[FAM_ATTN])
		put_blob(&b, "attention");
	if (h90 || cl || bk)
		put_blob(&b, "hopper");
	if (h90)
		put_blob(&b, "attention_sm90");
	if (cl)
		put_blob(&b, "rowcluster");
	if (bk)
		put_blob(&b, "rowbulk");
	buf_puts(&b, "/* ---- kernels ---- */\n");
	buf_puts(&b, "#ifdef ASSOC_EMU /* the fibers' stacks grow with these (runtime/emu/emu.hpp) */\n"
		     "extern \"C\" const size_t asc_emu_frame_bytes = sizeof(State) + sizeof(Elem) + sizeof(Row);\n#endif\n");
	kernels(m, want, &b);
	return buf_take(&b);
}

static int module(Carrier *c, const char *config, const char *arch, int smem, int space, CudaModule *m, char *msg,
		  size_t n)
{
	memset(m, 0, sizeof *m);
	m->smem_max = smem;
	if (check_limits(c, msg, n))
		return -1;
	m->base = base_family(c);
	int sm = arch_sm(arch), below_attn = sm && sm < ATTN_MIN_SM;
	m->h90 = arch_hopper(arch);
	m->cluster = !sm || sm >= 90;
	if (m->base != FAM_SCAN)
		choose_attention(c, config, sm, m);
	if (m->base == FAM_SCAN)
		snprintf(m->explain, sizeof m->explain,
			 "template scan (the spec's template: scan): an output a position, the inclusive prefix of its "
			 "row; a row's chunks folded to states, each chunk's carry folded in chunk order, then each chunk "
			 "scanned from its carry (lanes by warp shuffles, warps through shared memory), the earlier state "
			 "always on the left, so the merge need not commute");
	m->vec_ok = can_vec(c);
	for (int k = 0; m->vec_ok && k < c->nelem; k++)
		m->bulk_bytes += c->elem[k].storage == TY_F32 ? 4 : 2;
	m->state_size = state_size(c);
	reg_words(c, m);
	if (m->base == FAM_ATTN && !(c->laws & LAW_COMMUTATIVE)) /* its merge is the template's own */
		snprintf(m->order_why, sizeof m->order_why, "the attention template");
	else
		m->commutes = check_commutes(c, m->order_why, sizeof m->order_why);
	int moving[TRANSPORT_MAX_FIELDS] = {0};
	/* a carrier without a certificate may have one derived from its
	 * maximum (transport_frame), proved as a written one; only the
	 * transported fold's hooks read it */
	Carrier frame = {0}, *tfc = c;
	if (m->base != FAM_ATTN) {
		m->tf = prove_transport(c, moving, m->tf_why, sizeof m->tf_why);
		char why[sizeof m->tf_why];
		if (!m->tf && !c->has_cert && transport_frame(c, &frame, why, sizeof why)) {
			if (prove_transport(&frame, moving, why, sizeof why)) {
				m->tf = 1, tfc = &frame;
				snprintf(m->tf_why, sizeof m->tf_why, "by a certificate derived from its maximum: %.190s", why);
			} else {
				snprintf(m->tf_why, sizeof m->tf_why, "no certificate, and the one derived from its maximum %.180s",
					 why);
			}
		}
	} else {
		snprintf(m->tf_why, sizeof m->tf_why, "the attention template");
	}
	m->var = calloc(MAX_VARIANTS, sizeof *m->var);
	if (!m->var)
		abort();
	if (config) {
		Variant v;
		if (variant_parse(config, &v, msg, n))
			goto fail;
		int fits = v.fam == m->base || (v.fam == FAM_SPLITK && m->base != FAM_SCAN && m->base != FAM_ATTN);
		if (fits && v.wg && !m->h90) {
			char why[96] = "the target is not sm_90a (--arch sm_90a)";
			if (arch_hopper(arch))
				attn90_dims(&m->attn, why, sizeof why);
			snprintf(msg, n, "configuration '%s' names the Hopper attention template (wg > 0): %s", config, why);
			goto fail;
		}
		char f8why[192];
		if (fits && attn90_f8_refuses(&m->attn, &v, f8why, sizeof f8why)) {
			snprintf(msg, n, "configuration '%s' names the Hopper attention template (wg > 0), which %s", config, f8why);
			goto fail;
		}
		/* P in two bf16 parts keeps 16 of float32's 24 bits (a relative
		 * error near 2^-17), which run's float32 tolerance does not model */
		if (fits && v.fam == FAM_ATTN && v.pv == 2 && m->attn.bf16) {
			snprintf(msg, n, "configuration '%s': pv=2 on bf16 inputs keeps 16 bits of P, not float32's 24: pv=3 "
				 "for bf16 (pv=2 is f16's), or pv=1 to round P once", config);
			goto fail;
		}
		if (!fits) {
			int why = v.fam == FAM_ATTN && below_attn; /* m->explain names the arch */
			snprintf(msg, n, "configuration '%s' does not fit a %s carrier%s%s", config, variant_family_name(m->base),
				 why ? ": " : "", why ? m->explain : "");
			goto fail;
		}
		if (v.cl && !m->cluster) {
			snprintf(msg, n, "configuration '%s' splits a row across a thread-block cluster (cl=%d), which needs "
				 "sm_90 or newer; the target is %s", config, v.cl, arch);
			goto fail;
		}
		if (v.tf && !m->tf) {
			snprintf(msg, n, "configuration '%s' asks for the transported fold (tf=1), which %s cannot have: %s",
				 config, c->name, m->tf_why);
			goto fail;
		}
		if (v.bk && (!m->cluster || !m->vec_ok || !m->commutes)) {
			snprintf(msg, n, "configuration '%s' streams rows through shared memory by bulk copies (bk=%d), %s%s", config,
				 v.bk, !m->cluster	? "which needs sm_90 or newer; the target is "
					 : !m->vec_ok ? "which needs element inputs of scalar f32, f16 or bf16; "
						      : "which needs a merge known to commute; ",
				 !m->cluster ? arch : c->name);
			if (m->cluster)
				snprintf(msg + strlen(msg), n - strlen(msg), " has %s", !m->vec_ok ? "others" : "none");
			goto fail;
		}
		if (v.fam == FAM_ATTN) { /* as the template's static_assert would, but before compiling */
			Variant f = v;
			fit_variant(c, m, &f);
			unsigned b = attn_smem(&m->attn, &f);
			if (b > ATTN_SMEM_MAX) {
				int states = attn_state_words(&m->attn, &f) * 4 == b; /* the key slices' states are the larger */
				snprintf(msg, n, "configuration '%s' needs %u KB of shared memory a block at head dims %d/%d, "
					 "over the %d KB a block may have: %s", config, (b + 1023) / 1024, m->attn.d, m->attn.dv,
					 ATTN_SMEM_MAX / 1024,
					 states ? "the states of the key slices' warps after the loop; fewer warps (nt) or slices (ks)"
						: "fewer keys a tile (bn), stages (st) or query rows (nt, mt)");
				goto fail;
			}
		}
		add_variant(c, m, v);
		if (v.fam == FAM_ATTN && v.wg) {
			size_t k = strlen(m->explain);
			snprintf(m->explain + k, sizeof m->explain - k, "; the configuration's schedule: %s",
				 attn90_schedule(v.ws));
		}
	} else if (m->base == FAM_ATTN) {
		Variant av[4];
		int na = attn_defaults(&m->attn, m->smem_max, av);
		for (int k = 0; k < na; k++)
			add_variant(c, m, av[k]);
		if (space)
			attn_space(c, m, av, na);
		if (m->h90) { /* after the others: cuda_pick looks for it by its wg */
			Variant h = attn90_default(&m->attn);
			add_variant(c, m, h);
			if (space) {
				attn_space(c, m, &h, 1);
				attn90_ws_space(c, m, &h);
			}
		}
	} else {
#define EACH(a) a, sizeof a / sizeof *a
		int map = m->base == FAM_ROWMAP, rows = space && m->base != FAM_SCAN;
		if (m->base == FAM_SCAN)
			add_each(c, m, EACH(defaults_scan));
		else if (map)
			add_each(c, m, EACH(defaults_map));
		else
			add_each(c, m, EACH(defaults_reduce));
		/* the tuner's: a wide state narrows them (fit_variant), often
		 * onto a default; clusters and bulk copies where the target is
		 * named sm_90 or newer (a target not named may be any device) */
		if (rows && map) {
			add_each(c, m, EACH(space_map));
			add_each(c, m, EACH(space_map_tiles));
		} else if (rows) {
			add_each(c, m, EACH(space_reduce));
			add_each(c, m, EACH(space_reduce_tiles));
		}
		if (rows && sm >= 90 && map) {
			add_each(c, m, EACH(space_map_cluster));
			add_each(c, m, EACH(space_map_bulk));
		} else if (rows && sm >= 90) {
			add_each(c, m, EACH(space_reduce_cluster));
			add_each(c, m, EACH(space_reduce_bulk));
		}
#undef EACH
	}
	int bulk = 0;
	for (int v = 0; v < m->nvar; v++)
		bulk |= m->var[v].bk > 0;
	if (m->base == FAM_ATTN) /* as cuda_attn_hooks numbers them: ATTN_QI, ATTN_KI, ATTN_VI */
		m->attn.qi = c->nelem + c->ncol + m->attn.q, m->attn.ki = c->nelem + m->attn.k, m->attn.vi = c->nelem + m->attn.v;
	Buf h = {0};
	hooks(c, tfc, &h, m->commutes, m->vec_ok, m->tf, moving, m->tf_hooks);
	if (frame.has_cert)
		transport_frame_free(&frame);
	if (m->base == FAM_ATTN)
		cuda_attn_hooks(c, &m->attn, &h);
	m->hooks = buf_take(&h);
	snprintf(m->prefix, sizeof m->prefix, "asc_%016llx", (unsigned long long)cuda_fnv(CUDA_FNV0, m->hooks, strlen(m->hooks)));
	/* after the prefix, which names the carrier (and keys its tuning
	 * choices) the same in the tuning space's module and a run's */
	if (bulk) {
		buf_puts(&h, m->hooks);
		bulk_hooks(c, &h);
		free(m->hooks);
		m->hooks = buf_take(&h);
	}
	m->src = module_src(m, NULL);
	return 0;
fail:
	if (frame.has_cert)
		transport_frame_free(&frame);
	cuda_module_free(m);
	return -1;
}

int cuda_module(Carrier *c, const char *config, CudaModule *m, char *msg, size_t n)
{
	return module(c, config, NULL, 0, 0, m, msg, n);
}

int cuda_module_for(Carrier *c, const char *config, const char *arch, int smem, CudaModule *m, char *msg, size_t n)
{
	return module(c, config, arch, smem, 0, m, msg, n);
}

int cuda_module_space(Carrier *c, CudaModule *m, char *msg, size_t n) { return module(c, NULL, NULL, 0, 1, m, msg, n); }

int cuda_module_space_for(Carrier *c, const char *arch, int smem, CudaModule *m, char *msg, size_t n)
{
	return module(c, NULL, arch, smem, 1, m, msg, n);
}

char *cuda_module_src_of(const CudaModule *m, const unsigned char *want) { return module_src(m, want); }

void cuda_module_free(CudaModule *m)
{
	free(m->src);
	free(m->hooks);
	free(m->var);
	memset(m, 0, sizeof *m);
}

/* ---- configurations ---- */

/* The key of a row family's configuration that is out of range, and the
 * values its family takes there: the parser's one message lists every
 * key's range for every family at once. */
static int config_key_wrong(const Variant *v, const char *cfg, char *msg, size_t n)
{
	const char *fam = variant_family_name(v->fam);
	int row = v->fam == FAM_ROWREDUCE || v->fam == FAM_ROWMAP, scan = v->fam == FAM_SCAN;
	char why[160] = "";
	if (v->nt < 32 || v->nt > 1024 || v->nt % 32)
		snprintf(why, sizeof why, "nt=%d: a multiple of 32 from 32 to 1024", v->nt);
	else if (v->acc < 1 || v->acc > 8)
		snprintf(why, sizeof why, "acc=%d: 1 to 8", v->acc);
	else if (v->vec != 1 && v->vec != 4)
		snprintf(why, sizeof why, "vec=%d: 1 or 4", v->vec);
	else if ((v->warp != 0 && v->warp != 1) || (v->warp && !row))
		snprintf(why, sizeof why, "warp=%d: %s takes warp=0%s", v->warp, fam, row ? " or 1" : "");
	else if (v->items < 0 || v->items > 64 || (scan && !v->items) || (v->items && !scan && v->fam != FAM_ROWMAP))
		snprintf(why, sizeof why, "items=%d: %s takes %s", v->items, fam,
			 scan ? "items 1 to 64" : v->fam == FAM_ROWMAP ? "items 0 to 64" : "items=0");
	else if (v->un != 1 && v->un != 2 && v->un != 4)
		snprintf(why, sizeof why, "un=%d: %s takes un 1, 2 or 4", v->un, fam);
	else if (v->tf != 0 && v->tf != 1)
		snprintf(why, sizeof why, "tf=%d: %s takes tf 0 or 1", v->tf, fam);
	if (!why[0])
		return 0;
	snprintf(msg, n, "configuration '%s': %s", cfg, why);
	return 1;
}

int cuda_config_ok(const char *cfg, char *msg, size_t n)
{
	Variant v;
	if (!variant_parse(cfg, &v, msg, n))
		return 0;
	if (v.fam != FAM_ATTN && strstr(msg, "is out of range (nt: a multiple of 32 up to 1024"))
		config_key_wrong(&v, cfg, msg, n);
	return -1;
}

/* ---- plans ---- */

static unsigned cdiv(long a, long b) { return (unsigned)((a + b - 1) / b); }

unsigned cuda_smem(const CudaModule *m, int v)
{
	return m->var[v].fam == FAM_ATTN ? attn_smem(&m->attn, &m->var[v]) : bulk_smem(m, &m->var[v]);
}

int cuda_fits(const CudaModule *m, int v, char *why, size_t n)
{
	unsigned b = cuda_smem(m, v);
	if (!m->smem_max || b <= (unsigned)m->smem_max)
		return 1;
	snprintf(why, n, "needs %u bytes of shared memory per block; the device allows %d", b, m->smem_max);
	return 0;
}

/* The positions of a row variant v keeps on chip (0: it reads the row again). */
static long kept_len(const Variant *v)
{
	return v->fam == FAM_ROWMAP && v->items ? (long)v->items * (v->warp ? 32 : v->nt) * (v->cl ? v->cl : 1) : 0;
}

static int takes_len(const Variant *v, int len) { return !kept_len(v) || len <= kept_len(v); }

int cuda_takes_len(const CudaModule *m, int v, int len, char *why, size_t n)
{
	long k = kept_len(&m->var[v]);
	if (takes_len(&m->var[v], len))
		return 1;
	snprintf(why, n, "rows of %d do not fit on chip in this configuration (at most %ld)", len, k);
	return 0;
}

void cuda_variant_explain(const CudaModule *m, int v, char *buf, size_t n)
{
	const Variant *x = &m->var[v];
	char text[160];
	variant_str(x, text, sizeof text);
	if (x->fam == FAM_SCAN) {
		snprintf(buf, n, "%s: %d threads a block, %d consecutive position%s a thread a tile%s", text, x->nt, x->items,
			 x->items > 1 ? "s" : "", x->vec == 4 ? ", 16-byte loads" : "");
		return;
	}
	if (x->fam == FAM_ATTN) {
		snprintf(buf, n, "%s", text);
		return;
	}
	int w = x->fam == FAM_SPLITK ? 0 : x->warp, loads = x->un * x->acc;
	char clu[160];
	snprintf(clu, sizeof clu, "a row split across a cluster of %d blocks (sm_90; their states merged in rank order "
				  "through distributed shared memory)", x->cl);
	size_t l = x->bk ? snprintf(buf, n, "%s: a block a row, %d accumulator%s a thread", text, x->acc, x->acc > 1 ? "s" : "")
		   : snprintf(buf, n, "%s: %s, %d accumulator%s a thread, %d %s load%s in flight a thread%s", text,
			    x->fam == FAM_SPLITK ? "a row split across blocks (partial states, then a combine)"
			    : x->cl		 ? clu
			    : w		 ? "a warp a row"
					 : "a block a row",
			    x->acc, x->acc > 1 ? "s" : "", loads, x->vec == 4 ? "16-byte" : "element", loads > 1 ? "s" : "",
			    x->fam == FAM_SPLITK ? "" : w ? " (short rows)" : "");
	if (l < n && x->bk)
		l += snprintf(buf + l, n - l, "; the row streamed through a ring of %d stages of %ld positions in shared memory "
					      "by bulk copies (cp.async.bulk, sm_90) that one thread issues and mbarriers "
					      "complete, %d stage%s in flight while the block folds one (rows shorter than a stage "
					      "by ordinary loads)", x->bk, 4L * x->nt * x->acc, x->bk - 1, x->bk > 2 ? "s" : "");
	if (l < n && x->fam == FAM_ROWMAP && x->bk)
		l += snprintf(buf + l, n - l, "; the row kept in the ring for the map pass where it fits (%ld positions), "
					      "read again where not", 4L * x->nt * x->acc * x->bk);
	else if (l < n && x->fam == FAM_ROWMAP && x->cl)
		l += snprintf(buf + l, n - l, x->items ? "; the row kept on chip across the cluster's shared memory for the "
							 "map pass, read from HBM once (%ld positions at most)"
						       : "; each block's part read again for the map pass", kept_len(x));
	else if (l < n && x->fam == FAM_ROWMAP)
		l += snprintf(buf + l, n - l, x->items ? "; the row kept in shared memory for the map pass (%ld positions at most)"
						       : "; the row read again for the map pass", kept_len(x));
	if (l < n && x->fam == FAM_SPLITK && m->base == FAM_ROWMAP)
		l += snprintf(buf + l, n - l, "; each chunk read again for the map pass");
	if (l < n && x->tf)
		snprintf(buf + l, n - l, "; tiles of %d elements folded in the certificate's coordinates, one merge a tile",
			 4 * loads);
	else if (l < n)
		snprintf(buf + l, n - l, "; each element merged into its accumulator");
}

/* A row of len positions in split chunks, each a multiple of mult but
 * no longer than the row: one chunk of 2^31 - 1 positions rounded up
 * to 2^31 wrapped to a negative chunk. */
static int split_chunk(int len, int split, int mult)
{
	long long ch = (long long)cdiv(cdiv(len, split), mult) * mult;
	return (int)(ch > len ? len : ch);
}

static void plan_attn(const CudaModule *m, int var, int rows, int len, int heads, int split, CudaPlan *p)
{
	const Variant *v = &m->var[var];
	int bm = cuda_attn_rows(v);
	p->k[0].smem = attn_smem(&m->attn, v);
	p->split = split < 1 ? 1 : split;
	p->chunk = split_chunk(len, p->split, v->bn);
	p->k[0].grid = (unsigned)heads * cdiv(rows, bm) * p->split;
	p->k[0].block = v->nt;
	p->k[1].grid = cdiv((long)heads * rows, ATTN_COMBINE_NT / 32);
	p->k[1].block = ATTN_COMBINE_NT;
	p->nk = 1;
	if (p->split > 1) { /* the partial states, then a counter per query tile (attn_split_last) or the combine kernel */
		p->ws_bytes = (size_t)heads * rows * p->split * (m->attn.dv + 2) * sizeof(float);
		if (v->mt == 1) {
			p->zero_at = p->ws_bytes;
			p->zero_bytes = (size_t)heads * cdiv(rows, bm) * sizeof(int);
			p->ws_bytes += p->zero_bytes;
		} else {
			p->nk = 2;
		}
	}
	p->loads = 1;
}

void cuda_plan(const CudaModule *m, int var, int rows, int len, int split, CudaPlan *p)
{
	cuda_plan_h(m, var, rows, len, 1, split, p);
}

int cuda_attn_split(const CudaModule *m, int var, int rows, int len, int heads, int sms)
{
	const Variant *v = &m->var[var];
	if (v->fam != FAM_ATTN)
		return 1;
	long blocks = (long)heads * cdiv(rows, cuda_attn_rows(v));
	/* two blocks an SM, or one where two do not fit its shared memory
	 * or the block is decoding's (key slices: one block with its stages
	 * in flight beat two with theirs, 35 us against 39 at head dim 64 on an
	 * H200, fewer partials to merge); as many splits as fill those slots,
	 * rounded down: blocks of a second wave would only start after the
	 * first, and a few of them cost a whole block's time (8 kv heads on
	 * 132 SMs, head dim 256: 16 splits ran in 86 us, 17 in 113) */
	/* The Hopper template's blocks ask for one an SM (__launch_bounds__
	 * (T, 1)) and ptxas gives them the registers of one: 161 a thread for
	 * 256 threads at head dim 64, where two blocks would need 128. */
	int two = v->ks <= 1 && v->wg == 0 && attn_sm_blocks(m, v) >= 2;
	long want = (two ? 2L : 1L) * (sms > 0 ? sms : 132);
	if (blocks == 0 || blocks >= want / 2) /* no query rows: nothing to split */
		return 1;
	long s = want / blocks, most = len / (4 * v->bn); /* at least 4 key tiles per split */
	s = s < most ? s : most;
	return s < 1 ? 1 : s > 64 ? 64 : (int)s;
}

void cuda_plan_h(const CudaModule *m, int var, int rows, int len, int heads, int split, CudaPlan *p)
{
	const Variant *v = &m->var[var];
	char nm[3][64];
	int nk = cuda_kernel_names(m, var, nm);
	memset(p, 0, sizeof *p);
	p->split = split < 1 ? 1 : split;
	/* a grid holds at most 2^31 - 1 blocks (rows x splits wrapped to a
	 * launch of one block): the split gives way */
	long long blocks = (long long)(heads < 1 ? 1 : heads) * (rows < 1 ? 1 : rows);
	if (p->split * blocks > 0x7fffffffLL)
		p->split = (int)(0x7fffffffLL / blocks > 1 ? 0x7fffffffLL / blocks : 1);
	p->chunk = len;
	if (v->fam == FAM_SPLITK || v->fam == FAM_SCAN) { /* chunks of a multiple of 4: each at its row's phase of 16 bytes */
		p->chunk = split_chunk(len, p->split, 4);
		/* no block past the row's end: a split of 65536 over 100
		 * positions ran 65511 blocks of nothing */
		if (len > 0 && cdiv(len, p->chunk) < (unsigned)p->split)
			p->split = (int)cdiv(len, p->chunk);
	}
	for (int k = 0; k < nk; k++)
		snprintf(p->k[k].name, sizeof p->k[k].name, "%.63s", nm[k]);
	int nmap = m->base == FAM_ROWMAP;
	switch (v->fam) {
	case FAM_ATTN:
		plan_attn(m, var, rows, len, heads, p->split, p);
		break;
	case FAM_ROWREDUCE: case FAM_ROWMAP:
		p->split = 1;
		p->k[0].block = v->nt;
		p->k[0].grid = v->warp ? cdiv(rows, v->nt / 32) : (unsigned)rows;
		if (v->cl) { /* chunks of a multiple of 4 positions, one a block of the cluster */
			p->k[0].grid = (unsigned)(rows < 1 ? 1 : rows) * (unsigned)v->cl; /* no rows: one cluster, which leaves */
			p->k[0].cluster = (unsigned)v->cl;
			p->chunk = (int)(cdiv(cdiv(len, v->cl), 4) * 4);
		}
		p->k[0].smem = bulk_smem(m, v);
		p->nk = 1;
		p->loads = v->fam == FAM_ROWMAP && !v->items ? 2 : 1;
		/* rowbulk: the row kept in the ring where it fits, and streamed
		 * where it holds a stage at least */
		if (v->bk && len >= 4L * v->nt * v->acc && len <= 4L * v->nt * v->acc * v->bk)
			p->loads = 1;
		p->stores = v->fam == FAM_ROWMAP;
		break;
	case FAM_SPLITK:
		p->k[0] = (CudaLaunch){"", (unsigned)rows * p->split, v->nt, 0, 0};
		p->k[1] = (CudaLaunch){"", cdiv(rows, 64), 64, 0, 0};
		p->k[2] = (CudaLaunch){"", (unsigned)rows * p->split, v->nt, 0, 0};
		p->nk = nmap ? 3 : 2;
		for (int k = 0; k < p->nk; k++)
			snprintf(p->k[k].name, sizeof p->k[k].name, "%.63s", nm[k]);
		p->ws_bytes = (size_t)rows * (p->split + 1) * m->state_size;
		p->loads = nmap ? 2 : 1;
		p->stores = nmap;
		break;
	case FAM_SCAN:
		p->k[0] = (CudaLaunch){"", (unsigned)rows * p->split, v->nt, 0, 0};
		p->k[1] = (CudaLaunch){"", cdiv(rows, 64), 64, 0, 0};
		p->k[2] = (CudaLaunch){"", (unsigned)rows * p->split, v->nt, 0, 0};
		for (int k = 0; k < 3; k++)
			snprintf(p->k[k].name, sizeof p->k[k].name, "%.63s", nm[k]);
		p->nk = 3;
		if (p->split == 1) { /* one chunk per row: the down-sweep alone */
			p->k[0] = p->k[2];
			p->nk = 1;
		}
		p->ws_bytes = (size_t)rows * p->split * m->state_size;
		p->loads = p->split > 1 ? 2 : 1;
		p->stores = 1;
		break;
	default:
		break;
	}
}

int cuda_config_note(const CudaModule *m, int v, const char *config, const char *verb, char *note, size_t n)
{
	Variant a;
	char ch[256], got[160], err[256];
	if (!config || v < 0 || v >= m->nvar || variant_parse(config, &a, err, sizeof err) ||
	    !variant_changes(&a, &m->var[v], ch, sizeof ch))
		return 0;
	variant_str(&m->var[v], got, sizeof got);
	snprintf(note, n, "--config %s does not fit this carrier and target as given (registers, shared memory, or a "
		 "merge that needs one accumulator): %s; %s %s", config, ch, verb, got);
	return 1;
}

int cuda_config_split(const char *config, int split, int len, char *note, size_t n)
{
	if (n)
		note[0] = 0;
	if (len < 1 || split <= len)
		return split;
	snprintf(note, n, "--config %s: split=%d is more than the %d positions to split; running split=%d", config, split,
		 len, len);
	return len;
}

int cuda_p_round_kind(const CudaModule *m, int v)
{
	const Variant *x = &m->var[v];
	if (x->fam != FAM_ATTN || x->pv != 1)
		return 0;
	return m->attn.f8 && x->wg ? TY_F8E4M3 : m->attn.bf16 ? TY_BF16 : TY_F16;
}

int cuda_pick(const CudaModule *m, int rows, int len, int split)
{
	int best = -1;
	for (int v = 0; v < m->nvar; v++) {
		const Variant *x = &m->var[v];
		if (m->nvar == 1)
			return 0;
		if (m->base == FAM_SCAN)
			return x->fam == FAM_SCAN ? v : best;
		if (m->base == FAM_ATTN) { /* 128 query rows where the rows fill them, 16 where 16 hold them */
			for (int k = 0; k < m->nvar && rows > 64; k++) /* on sm_90a, the Hopper template's */
				if (m->var[k].wg && cuda_fits(m, k, NULL, 0))
					return k;
			int want = rows > 64 && split <= 1 ? 1 : 0, other = !want;
			Variant dv = attn_decode(&m->attn, m->smem_max);
			for (int k = 0; k < m->nvar && rows <= cuda_attn_rows(&dv); k++) /* decoding's, the first sliced */
				if (m->var[k].ks > 1 && cuda_fits(m, k, NULL, 0))
					return k;
			char why[128];
			/* the other where only it fits the device's shared memory */
			if (!cuda_fits(m, want, why, sizeof why) && cuda_fits(m, other, why, sizeof why))
				return other;
			return want;
		}
		if (split > 1) {
			if (x->fam == FAM_SPLITK)
				return v;
			continue;
		}
		if (x->fam == FAM_SPLITK || x->cl || x->bk) /* clusters and bulk copies: the tuner's to choose */
			continue;
		if (!takes_len(x, len))
			continue;
		if (x->warp != (len <= 256))
			continue;
		if (best < 0 || x->items > m->var[best].items)
			best = v;
	}
	(void)rows;
	return best >= 0 ? best : 0;
}

void cuda_attn90_maps(const CudaModule *m, int v, const CudaArgs *a, CudaTmap out[3])
{
	const Variant *x = &m->var[v];
	const CudaAttn *at = &m->attn;
	unsigned long long len = (unsigned long long)(a->len > 0 ? a->len : 0), kvh = (unsigned long long)a->kv_heads;
	/* a tensor map's dims are 1 or more: an empty one still encodes, and
	 * no box of it is ever loaded (no live key tile, no query row) */
	len = len ? len : 1;
	unsigned long long es = at->f8 ? 1 : 2;
	int sw = (int)(64 * es);
	out[0] = (CudaTmap){2, {(unsigned long long)at->d, (unsigned long long)a->heads * (unsigned long long)a->rows, 1},
			    {(unsigned long long)at->d * es, 0}, {64, (unsigned)(64 * x->wg), 1}, a->in[at->qi], (int)es, sw};
	if (!out[0].dims[1])
		out[0].dims[1] = 1;
	out[1] = (CudaTmap){3, {(unsigned long long)at->d, len, kvh}, {(unsigned long long)at->d * es, (unsigned long long)at->d * es * len},
			    {64, (unsigned)x->bn, 1}, a->in[at->ki], (int)es, sw};
	out[2] = (CudaTmap){3, {(unsigned long long)at->dv, len, kvh}, {(unsigned long long)at->dv * es, (unsigned long long)at->dv * es * len},
			    {64, (unsigned)x->bn, 1}, a->in[at->vi], (int)es, sw};
}

int cuda_find_variant(const CudaModule *m, Carrier *c, const char *config)
{
	Variant v;
	char msg[256];
	if (variant_parse(config, &v, msg, sizeof msg))
		return -1;
	v.split = 0;
	if (v.tf && !m->tf) /* not the plain fold's variant: module() says why it cannot be */
		return -1;
	if (v.bk && (!m->vec_ok || !m->commutes)) /* nor the ordinary loads' */
		return -1;
	fit_variant(c, m, &v);
	for (int k = 0; k < m->nvar; k++)
		if (same(&m->var[k], &v))
			return k;
	return -1;
}

size_t cuda_paged_ws_words(const CudaModule *m, int heads, int kv_heads, int rows, int split)
{
	size_t G = (size_t)heads / kv_heads;
	return (size_t)kv_heads * G * rows * split * (m->attn.dv + 2) + (size_t)kv_heads * ((G * rows + 15) / 16);
}

/* Bytes of an element of kind k in global memory (as the devices lay
 * their buffers out). */
static int storage_bytes(int k)
{
	return k == TY_BOOL || k == TY_F8E4M3 ? 1 : k == TY_F16 || k == TY_BF16 ? 2 : k == TY_I32 || k == TY_F32 ? 4 : 8;
}

int cuda_module_paged(Carrier *c, const char *config, const char *arch, int smem, int page_size, CudaModule *m,
		      char *msg, size_t n)
{
	if (module(c, config, arch, smem, 0, m, msg, n))
		return -1;
	if (m->base != FAM_ATTN) /* the row templates read a key run as their own: the caller gathers */
		return 0;
	/* the block table, seq_lens and cu_seqlens_q, after every input */
	int slot = c->nelem + c->ncol + c->nrow;
	if (slot + 2 >= CUDA_MAXIN) {
		snprintf(msg, n, "paged keys: the block table, seq_lens and cu_seqlens_q would be inputs %d to %d of at most %d",
			 slot + 1, slot + 3, CUDA_MAXIN);
		cuda_module_free(m);
		return -1;
	}
	/* the Hopper template's TMA boxes are runs of contiguous keys: paged
	 * keys take the mma.sync template, as misaligned ones do */
	int kept = 0, hopper = 0;
	for (int v = 0; v < m->nvar; v++)
		if (m->var[v].wg > 0)
			hopper = 1;
		else
			m->var[kept++] = m->var[v];
	if (!kept) {
		snprintf(msg, n, "configuration '%s' names the Hopper attention template, which does not read paged keys",
			 config ? config : "");
		cuda_module_free(m);
		return -1;
	}
	m->nvar = kept;
	m->h90 = 0;
	m->paged = page_size;
	snprintf(m->unpaged_prefix, sizeof m->unpaged_prefix, "%s", m->prefix);
	Buf h = {0};
	buf_printf(&h, "#define ATTN_PAGED %d\n#define ATTN_PI %d\n", page_size, slot);
	/* a sequence's row inputs and outputs n elements (of [rows][heads]) on */
	buf_puts(&h, "#define ATTN_PAGED_SHIFT(B, n) do {");
	for (int k = 0; k < c->nrow; k++)
		buf_printf(&h, " B.in[%d] = (const char *)B.in[%d] + (n) * %d;", c->nelem + c->ncol + k,
			   c->nelem + c->ncol + k, storage_bytes(c->row[k].storage) * spec_decl_width(&c->row[k]));
	for (int k = 0; k < c->nfinal; k++) {
		Ty t = c->finalize[k].e->ty;
		buf_printf(&h, " B.out[%d] = (char *)B.out[%d] + (n) * %d;", k, k, storage_bytes(t.kind) * (t.len ? t.len : 1));
	}
	buf_puts(&h, " } while (0)\n");
	m->tf_hooks[0] += h.len, m->tf_hooks[1] += h.len;
	buf_puts(&h, m->hooks);
	free(m->hooks);
	m->hooks = buf_take(&h);
	snprintf(m->prefix, sizeof m->prefix, "asc_%016llx", (unsigned long long)cuda_fnv(CUDA_FNV0, m->hooks, strlen(m->hooks)));
	free(m->src);
	m->src = module_src(m, NULL);
	size_t at = strlen(m->explain);
	snprintf(m->explain + at, sizeof m->explain - at,
		 "; paged keys and values: K and V tiles loaded through the block table, pages of %d keys%s", page_size,
		 hopper ? " (the Hopper template, whose TMA boxes read runs of contiguous keys, left out)" : "");
	return 0;
}
