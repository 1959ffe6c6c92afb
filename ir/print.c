/* print.c: expressions back to spec syntax, with the fewest parentheses
 * that read back as the same tree. */
#include "ir.h"

#include <stdlib.h>
#include <string.h>

enum { PREC_ATOM = 9, PREC_UNARY = 6 };

void ir_fmt_num(double v, char *buf, size_t n)
{
	if (isnan(v)) {
		snprintf(buf, n, "nan");
		return;
	}
	if (isinf(v)) {
		snprintf(buf, n, v < 0 ? "-inf" : "inf");
		return;
	}
	for (int p = 1; p <= 17; p++) {
		snprintf(buf, n, "%.*g", p, v);
		if (strtod(buf, NULL) == v)
			return;
	}
}

static int prec_of(const Expr *e)
{
	switch (e->op) {
	case EXPR_CONST:
		return (e->num < 0 || (e->num == 0 && signbit(e->num))) ? PREC_UNARY : PREC_ATOM;
	case EXPR_CAST:
		return e->k == 1 ? PREC_ATOM : prec_of(e->a[0]);
	default:
		return ir_ops[e->op].flags & F_FUNC ? PREC_ATOM : ir_ops[e->op].prec;
	}
}

/* Text past `left` bytes is not written: a DAG that shares its subterms
 * prints exponentially long, and messages need only its start. */
typedef struct {
	FILE *f;
	long left; /* < 0: unbounded */
} Out;

static void put(const Ir *ir, const Expr *e, Out *out);

static int full(Out *o) { return o->left >= 0 && ftell(o->f) >= o->left; }

static void put_paren(const Ir *ir, const Expr *e, int paren, Out *out)
{
	if (paren)
		fputc('(', out->f);
	put(ir, e, out);
	if (paren)
		fputc(')', out->f);
}

static void put_const(const Expr *e, Out *out)
{
	char buf[40];
	if (e->ty.kind == TY_BOOL) {
		fputs(e->num != 0 ? "true" : "false", out->f);
		return;
	}
	ir_fmt_num(e->num, buf, sizeof buf);
	fputs(buf, out->f);
}

static void put(const Ir *ir, const Expr *e, Out *out)
{
	const OpInfo *oi = &ir_ops[e->op];
	int p = oi->prec;
	if (full(out))
		return;
	switch (e->op) {
	case EXPR_CONST:
		put_const(e, out);
		return;
	case EXPR_VAR: {
		const Var *v = ir_var(ir, e->k);
		if (v->kind == VAR_STATE && v->which != STATE_SELF)
			fprintf(out->f, "%c.", "abc"[v->which]);
		fputs(v->name, out->f);
		return;
	}
	case EXPR_CAST:
		if (e->k == 1) { /* written f32(...) or f64(...) */
			fputs(e->ty.kind == TY_F64 ? "f64(" : "f32(", out->f);
			put(ir, e->a[0], out);
			fputs(")", out->f);
			return;
		}
		put(ir, e->a[0], out);
		return;
	case EXPR_INDEX:
		put_paren(ir, e->a[0], prec_of(e->a[0]) < PREC_ATOM, out);
		fprintf(out->f, "[%d]", e->k);
		return;
	case EXPR_NEG:
	case EXPR_NOT:
		fputs(oi->printed, out->f);
		put_paren(ir, e->a[0], prec_of(e->a[0]) <= PREC_UNARY, out);
		return;
	case EXPR_POW:
		put_paren(ir, e->a[0], prec_of(e->a[0]) <= p, out);
		fprintf(out->f, "^%d", e->k);
		return;
	default:
		break;
	}
	if (oi->flags & F_INFIX) {
		int cmp = (oi->flags & F_CMP) != 0;
		put_paren(ir, e->a[0], prec_of(e->a[0]) < p + cmp, out);
		fprintf(out->f, " %s ", oi->printed);
		put_paren(ir, e->a[1], prec_of(e->a[1]) <= p, out);
		return;
	}
	fprintf(out->f, "%s(", oi->printed);
	if (e->op == EXPR_RTOPK || e->op == EXPR_RTOPK_IDX) {
		put(ir, e->a[0], out);
		fprintf(out->f, ", %d)", e->k);
		return;
	}
	if ((e->op == EXPR_TOPK || e->op == EXPR_TOPK_IDX) && !e->a[0]->ty.len && e->a[2]->op == EXPR_CONST &&
	    e->a[2]->num == -INFINITY && e->a[3]->op == EXPR_CONST && e->a[3]->num == -1) {
		put(ir, e->a[0], out);
		fputs(", ", out->f);
		put(ir, e->a[1], out);
		fprintf(out->f, ", %d)", e->k);
		return;
	}
	for (int i = 0; i < e->nargs; i++) {
		if (i)
			fputs(", ", out->f);
		put(ir, e->a[i], out);
	}
	fputc(')', out->f);
}

void ir_print(const Ir *ir, const Expr *e, FILE *out) { put(ir, e, &(Out){out, -1}); }

static char *str(const Ir *ir, const Expr *e, long max)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);
	if (!f)
		abort();
	Out o = {f, max};
	put(ir, e, &o);
	int cut = max >= 0 && ftell(f) > max;
	fclose(f);
	if (cut) {
		buf = realloc(buf, (size_t)max + 4);
		if (!buf)
			abort();
		strcpy(buf + max, "...");
	}
	return buf;
}

char *ir_str(const Ir *ir, const Expr *e) { return str(ir, e, -1); }

char *ir_str_max(const Ir *ir, const Expr *e, size_t max) { return str(ir, e, (long)max); }
