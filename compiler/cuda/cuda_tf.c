/* cuda_tf.c: the transported fold of a register tile (templates/blocks.cuh,
 * TF), for a carrier whose transport the prover shows (prove_transport in
 * compiler/prove/transport.c, which says what the fold needs and why): a
 * thread folds its tile shifted by its largest element, as the monoid sums
 * of phi(lift(x - t)), and converts back once.  At run time a tile whose
 * range is not finite (an infinity, a NaN) or whose transported state is
 * not finite folds the plain way. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/cuda/cuda_int.h"

enum { TF_MAX_FIELDS = 16 };

typedef struct {
	Expr **by_var;
} VarMap;

static Expr *map_var(void *ctx, Expr *v) { return ((VarMap *)ctx)->by_var[v->k]; }

static Expr *subst(Carrier *c, Expr *e, VarMap *m) { return ir_subst(c->ir, e, map_var, m); }

/* Where the carrier has no proved transport: the template's TF branch is
 * compiled out (ASC_TRANSPORT 0) and this never runs. */
static const char no_transport[] =
	"#define ASC_TRANSPORT 0\n"
	"template <int K>\n"
	"ASC_DEV bool tile_fold(const Args &A, const Row &R, int i, const Elem *F, const int *J, const bool *L, State &out)\n"
	"{\n\treturn false;\n}\n";

void cuda_transport_hooks(Carrier *c, const int *moving, int ok, Buf *b)
{
	if (!ok) {
		buf_puts(b, no_transport);
		return;
	}
	Ir *ir = c->ir;
	buf_puts(b, "#define ASC_TRANSPORT 1\n"
		    "/* The tile's K elements (those with L[k]: in the row) folded in the certificate's coordinates,\n"
		    " * shifted by their largest kept element (compiler/cuda/cuda_tf.c); false where the tile's range or\n"
		    " * its transported state is not finite: the caller folds it the plain way. */\n"
		    "template <int K>\n"
		    "ASC_DEV bool tile_fold(const Args &A, const Row &R, int i, const Elem *F, const int *J, const bool *L, State &out)\n"
		    "{\n"
		    "\tfloat hi = -ASC_INF, lo = ASC_INF;\n"
		    "\tbool any = false;\n"
		    "#pragma unroll\n"
		    "\tfor (int k = 0; k < K; k++)\n"
		    "\t\tif (L[k] && keep(A, R, F[k], i, J[k])) {\n"
		    "\t\t\thi = fmaxf(hi, F[k].e0), lo = fminf(lo, F[k].e0), any = true;\n"
		    "\t\t\tif (F[k].e0 != F[k].e0)\n"
		    "\t\t\t\thi = ASC_INF;\n"
		    "\t\t}\n"
		    "\tif (!any) {\n\t\tout = identity();\n\t\treturn true;\n\t}\n"
		    "\tif (!(hi - lo < ASC_INF))\n\t\treturn false;\n");
	for (int k = 0; k < c->ncert; k++) {
		buf_printf(b, "\tfloat y%d = ", k);
		cuda_literal(b, TY_F32, ir_ops[c->cert_monoid[k]].unit);
		buf_puts(b, ";\n");
	}
	buf_puts(b, "#pragma unroll\n"
		    "\tfor (int k = 0; k < K; k++) {\n"
		    "\t\tif (!L[k] || !keep(A, R, F[k], i, J[k]))\n\t\t\tcontinue;\n"
		    "\t\tElem E = F[k];\n"
		    "\t\tconst int j = J[k];\n"
		    "\t\t(void)j;\n"
		    "\t\tE.e0 -= hi;\n");
	VarMap m = {calloc(ir_nvars(ir) + 1, sizeof(Expr *))};
	if (!m.by_var)
		abort();
	for (int f = 0; f < c->nstate; f++)
		m.by_var[c->svar[STATE_SELF][f]] = c->lift[f];
	/* y_k = y_k (monoid) phi_k(lift(x - t)): each reads only its own y;
	 * built before the body, which numbers the nodes that exist */
	Expr *up[TF_MAX_FIELDS];
	for (int k = 0; k < c->ncert; k++)
		up[k] = ir_bin(ir, c->cert_monoid[k], ir_ref(ir, c->cert_var[k]), subst(c, c->cert_into[k].e, &m));
	free(m.by_var);
	struct Fn *fn;
	cuda_fn_begin(&fn, c, b);
	for (int k = 0; k < c->ncert; k++) {
		char dst[16];
		snprintf(dst, sizeof dst, "y%d", k);
		cuda_fn_assign(fn, dst, up[k], 0);
	}
	cuda_fn_end(fn);
	buf_puts(b, "\t}\n\tState r;\n");
	cuda_fn_begin(&fn, c, b);
	for (int f = 0; f < c->nstate; f++) {
		char dst[16];
		snprintf(dst, sizeof dst, "r.f%d", f);
		cuda_fn_assign(fn, dst, c->cert_back[f], 0);
	}
	cuda_fn_end(fn);
	buf_puts(b, "\tif (!(1");
	for (int f = 0; f < c->nstate; f++)
		buf_printf(b, " && fabsf(r.f%d) < ASC_INF", f);
	buf_puts(b, "))\n\t\treturn false;\n");
	for (int f = 0; f < c->nstate; f++)
		if (moving[f])
			buf_printf(b, "\tr.f%d += hi;\n", f);
	buf_puts(b, "\tout = r;\n\treturn true;\n}\n");
}
