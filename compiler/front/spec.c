/* spec.c: the carrier spec format (docs/spec-format.md) -> a checked Carrier.
 *
 * Sections are read in dependency order, whatever their order in the file:
 * declarations (dims, params, inputs, state), then the expressions that use
 * them.  Every error names the offending node. */
#include "compiler/front/scope.h"
#include "compiler/front/specdir.h"
#include "compiler/util/buf.h"
#include "compiler/util/cache.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Every top-level key the format has, NULL-terminated: check_top refuses
 * any other, and the documentation's test holds docs/spec-format.md to it. */
const char *const spec_keys[] = {
	"carrier", "summary",  "dims",  "params",   "row",      "column",    "element",
	"let",     "assume",   "mask",  "state",    "identity", "lift",      "merge",
	"finalize", "map",     "reference", "laws", "certificate", "template", "step", "step_right",
	"inverse",  NULL,
};

typedef struct {
	Carrier *c;
	Diag *d;
	YNode *root;
} L;

static void *xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n ? n : 1, sz);
	if (!p)
		abort();
	return p;
}

static char *xstrdup(const char *s)
{
	char *t = strdup(s);
	if (!t)
		abort();
	return t;
}

int spec_decl_width(const Decl *d) { return d->ty.len ? d->ty.len : 1; }

const char *spec_unpageable(const Carrier *c)
{
	return !c->ncol		    ? "it has no column inputs (keys and values) to page"
	       : c->nelem	    ? "its element inputs are per query and position, not per key"
	       : c->nmap	    ? "its map outputs are per query and position, not per query"
	       : c->tpl == FAM_SCAN ? "it is a scan, whose outputs are per position"
				    : NULL;
}

/* ---- small helpers ---- */

static int edit_distance(const char *a, const char *b)
{
	int la = (int)strlen(a), lb = (int)strlen(b), d[33][33];
	if (la > 32 || lb > 32)
		return 99;
	for (int i = 0; i <= la; i++)
		d[i][0] = i;
	for (int j = 0; j <= lb; j++)
		d[0][j] = j;
	for (int i = 1; i <= la; i++)
		for (int j = 1; j <= lb; j++) {
			int m = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			if (d[i - 1][j] + 1 < m)
				m = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < m)
				m = d[i][j - 1] + 1;
			d[i][j] = m;
		}
	return d[la][lb];
}

static const char *closest(const char *word, const char *const *list)
{
	const char *best = NULL;
	int bd = 3;
	for (int i = 0; list[i]; i++) {
		int dist = edit_distance(word, list[i]);
		if (dist < bd)
			bd = dist, best = list[i];
	}
	return best;
}

static const char *kind_name(YKind k) { return k == YN_MAP ? "a mapping" : k == YN_SEQ ? "a list" : "a scalar"; }

static int need(L *l, const YNode *n, YKind kind, const char *what)
{
	if (n->kind == kind)
		return 0;
	int empty = n->kind == YN_SCALAR && n->plain && !n->text[0];
	diag_error(l->d, n->pos, "%s must be %s, found %s", what, kind_name(kind),
		   empty ? "nothing" : kind_name(n->kind));
	return -1;
}

/* What a reserved name stands for, or NULL when the name is free. */
static const char *reserved(const char *s)
{
	return !strcmp(s, "i") ? "the row index" : !strcmp(s, "j") ? "the position along the row"
		: !strcmp(s, "len") ? "the row's length" : !strcmp(s, "inf") ? "infinity" : NULL;
}

static const char *article(const char *noun) { return strchr("aeiou", noun[0]) ? "an" : "a"; }

/* An expression of untyped literals alone, where nothing gives it a type
 * (a let, an output, a coordinate), as f32: the literal rounded, or a cast
 * of the rest (where(x < 0, 1.5, 2.5) is no literal: taken as one, it was
 * the 0 of a node that holds no number). */
static Expr *untyped_f32(Ir *ir, Expr *e)
{
	if (e->ty.kind != TY_NUM)
		return e;
	if (e->op == EXPR_CONST)
		return ir_const(ir, ty_vec(TY_F32, e->ty.len, e->ty.dim), ir_round(TY_F32, e->num));
	return ir_node(ir, EXPR_CAST, ty_vec(TY_F32, e->ty.len, e->ty.dim), 0, e, NULL, NULL);
}

/* A name a spec defines: an ASCII identifier, not reserved. */
static int check_name(L *l, const YNode *k, const char *what)
{
	if (!expr_ident_ok(k->text)) {
		if (strlen(k->text) > SPEC_MAX_NAME && expr_ident_ok((char[2]){k->text[0], 0}))
			diag_error(l->d, k->pos, "%s name longer than %d characters", what, SPEC_MAX_NAME);
		else
			diag_error(l->d, k->pos, "%s name '%s' is not an identifier ([A-Za-z_][A-Za-z0-9_]*)", what,
				   k->text);
		return -1;
	}
	if (reserved(k->text)) {
		diag_error(l->d, k->pos, "'%s' is reserved (%s) and cannot name %s %s", k->text, reserved(k->text),
			   article(what), what);
		return -1;
	}
	return 0;
}

/* The key whose value is n, for messages about a whole section. */
static const YNode *key_of(const YNode *tree, const YNode *n)
{
	if (!tree || tree->kind == YN_SCALAR)
		return NULL;
	for (int i = 0; i < tree->n; i++) {
		if (tree->kind == YN_MAP && i % 2 == 1 && tree->kids[i] == n)
			return tree->kids[i - 1];
		const YNode *k = key_of(tree->kids[i], n);
		if (k)
			return k;
	}
	return NULL;
}

static Pos section_pos(L *l, const YNode *n)
{
	const YNode *k = key_of(l->root, n);
	return k ? k->pos : n->pos;
}

static int before(Pos a, Pos b) { return a.line < b.line || (a.line == b.line && a.col < b.col); }

/* Report a name defined twice at the later of the two places. */
static void twice(L *l, const char *name, Pos p1, Pos p2)
{
	Pos first = before(p1, p2) ? p1 : p2, second = before(p1, p2) ? p2 : p1;
	diag_error(l->d, second, "'%s' is already defined at line %d", name, first.line);
}

/* A name must not be defined twice among inputs, params, lets and state. */
static int check_unique(L *l, const YNode *k)
{
	Carrier *c = l->c;
	struct { Decl *d; int n; } g[] = {{c->params, c->nparams}, {c->row, c->nrow}, {c->col, c->ncol},
					  {c->elem, c->nelem},     {c->state, c->nstate}};
	for (size_t i = 0; i < sizeof g / sizeof *g; i++)
		for (int j = 0; j < g[i].n; j++)
			if (g[i].d[j].name && !strcmp(g[i].d[j].name, k->text)) {
				twice(l, k->text, g[i].d[j].pos, k->pos);
				return -1;
			}
	for (int j = 0; j < c->nlets; j++)
		if (c->lets[j].name && !strcmp(c->lets[j].name, k->text)) {
			twice(l, k->text, c->lets[j].pos, k->pos);
			return -1;
		}
	return 0;
}

/* ---- dims and types ---- */

static int parse_size(const char *s, long *out)
{
	if (!*s)
		return -1;
	for (const char *p = s; *p; p++)
		if (!isdigit((unsigned char)*p))
			return -1;
	errno = 0;
	long v = strtol(s, NULL, 10);
	if (errno || strlen(s) > 9)
		v = SPEC_MAX_DIM + 1L;
	*out = v;
	return 0;
}

static int size_error(L *l, Pos pos, const char *what, const char *text)
{
	long v;
	if (parse_size(text, &v))
		diag_error(l->d, pos, "%s must be a positive integer, found '%s'", what, text);
	else if (v == 0)
		diag_error(l->d, pos, "%s must be positive, found 0", what);
	else if (v > SPEC_MAX_DIM)
		diag_error(l->d, pos, "%s %s is larger than %d", what, text, SPEC_MAX_DIM);
	else
		return 0;
	return -1;
}

static int load_dims(L *l, const YNode *dims, const Define *defs, int ndefs)
{
	Carrier *c = l->c;
	if (dims) {
		if (need(l, dims, YN_MAP, "'dims'"))
			return -1;
		if (dims->n / 2 > 64) {
			diag_error(l->d, dims->pos, "more than 64 dims");
			return -1;
		}
		for (int i = 0; i < dims->n; i += 2) {
			YNode *k = dims->kids[i], *v = dims->kids[i + 1];
			if (check_name(l, k, "dim") || need(l, v, YN_SCALAR, "a dim's size"))
				return -1;
			char what[100];
			snprintf(what, sizeof what, "dim '%s'", k->text);
			if (size_error(l, v->pos, what, v->text))
				return -1;
			c->dim_pos[ir_add_dim(c->ir, k->text, (int)strtol(v->text, NULL, 10))] = k->pos;
		}
	}
	for (int i = 0; i < ndefs; i++) {
		int dm = ir_find_dim(c->ir, defs[i].name);
		if (dm < 0) {
			char have[256] = "";
			int hl = 0;
			for (int k = 0; k < ir_ndims(c->ir) && hl < (int)sizeof have; k++)
				hl += snprintf(have + hl, sizeof have - hl, "%s%s", k ? ", " : "", ir_dim(c->ir, k)->name);
			diag_error(l->d, (Pos){0, 0}, "dim override '%s': the spec has no dim named '%s' (%s%s)", defs[i].name,
				   defs[i].name, have[0] ? "its dims: " : "it has none", have);
			return -1;
		}
		for (int k = 0; k < i; k++)
			if (!strcmp(defs[k].name, defs[i].name)) { /* which would win is a guess: say so */
				diag_error(l->d, (Pos){0, 0}, "dim override '%s' is given twice", defs[i].name);
				return -1;
			}
		char what[100];
		snprintf(what, sizeof what, "dim override '%s'", defs[i].name);
		if (size_error(l, (Pos){0, 0}, what, defs[i].value))
			return -1;
		((Dim *)ir_dim(c->ir, dm))->size = (int)strtol(defs[i].value, NULL, 10);
	}
	return 0;
}

static int parse_type(L *l, const YNode *n, int storage_ok, int vector_ok, Decl *out)
{
	static const struct { const char *name; TyKind k; } kinds[] = {
		{"f32", TY_F32}, {"f64", TY_F64}, {"i32", TY_I32}, {"i64", TY_I64},
		{"bool", TY_BOOL}, {"f16", TY_F16}, {"bf16", TY_BF16}, {"f8e4m3", TY_F8E4M3},
	};
	if (need(l, n, YN_SCALAR, "a type"))
		return -1;
	char base[16] = {0}, dim[SPEC_MAX_NAME + 2] = {0};
	const char *s = n->text, *br = strchr(s, '[');
	size_t bl = br ? (size_t)(br - s) : strlen(s);
	while (bl && s[bl - 1] == ' ')
		bl--;
	if (bl >= sizeof base)
		goto bad;
	memcpy(base, s, bl);
	int kind = -1;
	for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
		if (!strcmp(base, kinds[i].name))
			kind = kinds[i].k;
	if (kind < 0)
		goto bad;
	out->storage = (TyKind)kind;
	int narrow = kind == TY_F16 || kind == TY_BF16 || kind == TY_F8E4M3;
	out->ty = ty_scalar(narrow ? TY_F32 : (TyKind)kind);
	if (narrow && !storage_ok) {
		diag_error(l->d, n->pos, "%s is a storage type for inputs; state and params compute in f32 or f64",
			   base);
		return -1;
	}
	if (!br)
		return 0;
	const char *close = strchr(br, ']');
	if (!close || close[1] || close - br - 1 > SPEC_MAX_NAME)
		goto bad;
	const char *a = br + 1, *b = close;
	while (*a == ' ')
		a++;
	while (b > a && b[-1] == ' ')
		b--;
	memcpy(dim, a, b - a);
	if (!vector_ok) {
		diag_error(l->d, n->pos, "params are scalars; '%s' is a vector type", s);
		return -1;
	}
	if (kind == TY_BOOL) {
		diag_error(l->d, n->pos, "vectors of bool are not supported");
		return -1;
	}
	if (isdigit((unsigned char)dim[0])) {
		if (size_error(l, n->pos, "vector length", dim))
			return -1;
		out->ty = ty_vec((TyKind)out->ty.kind, (int)strtol(dim, NULL, 10), -1);
		return 0;
	}
	int dm = ir_find_dim(l->c->ir, dim);
	if (dm < 0) {
		if (expr_ident_ok(dim))
			diag_error(l->d, n->pos, "unknown dim '%s' (declare it under 'dims')", dim);
		else
			goto bad;
		return -1;
	}
	out->ty = ty_vec((TyKind)out->ty.kind, ir_dim(l->c->ir, dm)->size, dm);
	return 0;
bad:
	diag_error(l->d, n->pos, "unknown type '%s' (types: f32, f64, i32, i64, bool, f16, bf16, f8e4m3, and "
				 "vectors such as f32[d])", s);
	return -1;
}

static int load_decls(L *l, const char *key, VarKind kind, Decl **out, int *nout, int storage_ok,
		      int vector_ok)
{
	YNode *m = yn_get(l->root, key);
	if (!m)
		return 0;
	char what[40];
	snprintf(what, sizeof what, "'%s'", key);
	if (need(l, m, YN_MAP, what))
		return -1;
	*out = xcalloc(m->n / 2, sizeof **out);
	for (int i = 0; i < m->n; i += 2) {
		YNode *k = m->kids[i];
		Decl *d = &(*out)[*nout];
		if (check_name(l, k, kind == VAR_PARAM ? "param" : kind == VAR_STATE ? "state field" : "input") ||
		    check_unique(l, k) || parse_type(l, m->kids[i + 1], storage_ok, vector_ok, d))
			return -1;
		d->name = xstrdup(k->text);
		d->pos = k->pos;
		(*nout)++;
		if (kind != VAR_STATE)
			d->var = ir_add_var(l->c->ir, d->name, kind, 0, i / 2, d->ty, d->storage);
	}
	return 0;
}

static int load_state(L *l)
{
	Carrier *c = l->c;
	if (load_decls(l, "state", VAR_STATE, &c->state, &c->nstate, 0, 1))
		return -1;
	if (!c->nstate) {
		diag_error(l->d, section_pos(l, yn_get(l->root, "state")), "'state' needs at least one field");
		return -1;
	}
	for (int w = 0; w < 4; w++) {
		c->svar[w] = xcalloc(c->nstate, sizeof(int));
		for (int f = 0; f < c->nstate; f++)
			c->svar[w][f] = ir_add_var(c->ir, c->state[f].name, VAR_STATE, w, f, c->state[f].ty, c->state[f].storage);
	}
	for (int f = 0; f < c->nstate; f++)
		c->state[f].var = c->svar[STATE_SELF][f];
	return 0;
}

/* ---- expressions ---- */

static void scope_init(Scope *s, Carrier *c, const char *section, const char *may, unsigned allow)
{
	memset(s, 0, sizeof *s);
	s->c = c;
	s->section = section;
	s->may = may;
	s->allow = allow;
}

static void scope_push(Scope *s, const char *name, Expr *e)
{
	Local *n = realloc(s->locals, (s->nlocals + 1) * sizeof *n);
	if (!n)
		abort();
	n[s->nlocals++] = (Local){name, e, NULL, 0};
	s->locals = n;
}

static void scope_lets(Scope *s, Carrier *c)
{
	for (int i = 0; i < c->nlets; i++)
		scope_push(s, c->lets[i].name, c->lets[i].e);
}

static Expr *parse_bool(L *l, Scope *s, const YNode *n)
{
	Expr *e = expr_parse(s, l->d, n);
	if (!e)
		return NULL;
	if (e->ty.kind != TY_BOOL || e->ty.len) {
		char b[64];
		diag_error(l->d, n->pos, "'%s' must be a condition (bool), found %s", s->section,
			   ty_str(l->c->ir, e->ty, b, sizeof b));
		return NULL;
	}
	return e;
}

static int load_lets(L *l)
{
	Carrier *c = l->c;
	YNode *m = yn_get(l->root, "let");
	if (!m)
		return 0;
	if (need(l, m, YN_MAP, "'let'"))
		return -1;
	Scope s;
	scope_init(&s, c, "let", "inputs, params, i, j, len and earlier lets", S_INPUTS | S_PARAMS | S_IDX);
	c->lets = xcalloc(m->n / 2, sizeof *c->lets);
	int rc = -1;
	for (int i = 0; i < m->n; i += 2) {
		YNode *k = m->kids[i];
		if (check_name(l, k, "let") || check_unique(l, k))
			goto out;
		Expr *e = expr_parse(&s, l->d, m->kids[i + 1]);
		if (!e)
			goto out;
		e = untyped_f32(c->ir, e);
		c->lets[c->nlets++] = (Def){xstrdup(k->text), k->pos, e, 0};
		scope_push(&s, c->lets[c->nlets - 1].name, e);
	}
	rc = 0;
out:
	free(s.locals);
	return rc;
}

static int load_conditions(L *l)
{
	Carrier *c = l->c;
	YNode *n;
	Scope s;
	if ((n = yn_get(l->root, "assume"))) {
		scope_init(&s, c, "assume", "inputs and params", S_INPUTS | S_PARAMS);
		if (!(c->assume = parse_bool(l, &s, n)))
			return -1;
	}
	if ((n = yn_get(l->root, "mask"))) {
		scope_init(&s, c, "mask", "inputs, params, lets, i, j and len", S_INPUTS | S_PARAMS | S_IDX);
		scope_lets(&s, c);
		c->mask = parse_bool(l, &s, n);
		free(s.locals);
		if (!c->mask)
			return -1;
	}
	return 0;
}

static int field_index(Carrier *c, const char *name)
{
	for (int f = 0; f < c->nstate; f++)
		if (!strcmp(c->state[f].name, name))
			return f;
	return -1;
}

/* One expression per state field, each exactly once.  Fields already
 * defined in this section are visible by bare name when `bare` is set. */
static int load_fields(L *l, const YNode *m, const char *key, Scope *s, Expr ***out, int bare, int start)
{
	Carrier *c = l->c;
	char what[200];
	snprintf(what, sizeof what, "'%s'", key);
	if (need(l, m, YN_MAP, what))
		return -1;
	*out = xcalloc(c->nstate, sizeof **out);
	for (int i = start; i < m->n; i += 2) {
		YNode *k = m->kids[i];
		int f = field_index(c, k->text);
		if (f < 0) {
			if (!strcmp(k->text, "let") && bare)
				diag_error(l->d, k->pos, "%s's 'let' must come before the fields", key);
			else
				diag_error(l->d, k->pos, "%s defines '%s', which is not a state field", key, k->text);
			return -1;
		}
		Expr *e = expr_parse(s, l->d, m->kids[i + 1]);
		snprintf(what, sizeof what, "%s of '%s'", key, k->text);
		if (!e || !(e = expr_coerce(c, l->d, e, c->state[f].ty, m->kids[i + 1]->pos, what)))
			return -1;
		(*out)[f] = e;
		if (bare)
			scope_push(s, c->state[f].name, e);
	}
	for (int f = 0; f < c->nstate; f++)
		if (!(*out)[f]) {
			diag_error(l->d, section_pos(l, m), "%s does not define state field '%s'", key,
				   c->state[f].name);
			return -1;
		}
	return 0;
}

/* merge and step: an optional `let` of temporaries first, then one
 * expression per field; fields updated above are seen by bare name. */
static int load_update(L *l, const YNode *m, const char *key, Scope *s, Def **lets, int *nlets, Expr ***out)
{
	Carrier *c = l->c;
	char what[64];
	snprintf(what, sizeof what, "'%s'", key);
	if (need(l, m, YN_MAP, what))
		return -1;
	int start = 0;
	if (m->n && !strcmp(m->kids[0]->text, "let")) {
		YNode *t = m->kids[1];
		snprintf(what, sizeof what, "%s's 'let'", key);
		if (need(l, t, YN_MAP, what))
			return -1;
		start = 2;
		*lets = xcalloc(t->n / 2, sizeof **lets);
		for (int i = 0; i < t->n; i += 2) {
			YNode *k = t->kids[i];
			snprintf(what, sizeof what, "%s temporary", key);
			if (check_name(l, k, what))
				return -1;
			if (field_index(c, k->text) >= 0) {
				diag_error(l->d, k->pos, "%s temporary '%s' has the name of a state field", key, k->text);
				return -1;
			}
			for (int j = 0; j < *nlets; j++)
				if (!strcmp((*lets)[j].name, k->text)) {
					diag_error(l->d, k->pos, "'%s' is already defined at line %d", k->text,
						   (*lets)[j].pos.line);
					return -1;
				}
			Expr *e = expr_parse(s, l->d, t->kids[i + 1]);
			if (!e)
				return -1;
			e = untyped_f32(c->ir, e);
			(*lets)[(*nlets)++] = (Def){xstrdup(k->text), k->pos, e, 0};
			scope_push(s, (*lets)[*nlets - 1].name, e);
		}
	}
	return load_fields(l, m, key, s, out, 1, start);
}

static int load_merge(L *l)
{
	Carrier *c = l->c;
	YNode *m = yn_get(l->root, "merge");
	if (!m)
		return 0; /* a loop spec: explore derives the merge */
	c->merge_pos = m->pos;
	Scope s;
	scope_init(&s, c, "merge", "a.<field>, b.<field>, params, merge temporaries and fields merged above",
		   S_AB | S_PARAMS);
	int rc = load_update(l, m, "merge", &s, &c->mlets, &c->nmlets, &c->merge);
	free(s.locals);
	return rc;
}

/* ---- topk's operands: sorted lists ----
 *
 * The generated code merges topk's operand lists as sorted lists (an
 * insertion, a bitonic merge), where the interpreter ranks every pair:
 * both agree on the lists topk makes.  A list is one when it is topk's
 * own result, a constant, a broadcast scalar (equal pairs), or a state
 * field whose lift is one and whose identity is a constant. */

static int sorted_list(const Carrier *c, const Expr *e)
{
	if (e->op == EXPR_CONST || e->op == EXPR_TOPK || e->op == EXPR_TOPK_IDX)
		return 1;
	if (e->op == EXPR_CAST)
		return !e->a[0]->ty.len || sorted_list(c, e->a[0]);
	if (e->op != EXPR_VAR)
		return 0;
	const Var *v = ir_var(c->ir, e->k);
	if (v->kind != VAR_STATE || !c->lift || !c->identity)
		return 0;
	Expr *lf = c->lift[v->slot], *id = c->identity[v->slot];
	return id->op == EXPR_CONST && lf->op != EXPR_VAR && sorted_list(c, lf);
}

/* The first topk of e's cone with an operand that is no sorted list. */
static const Expr *unsorted_topk(const Carrier *c, const Expr *e, unsigned char *seen)
{
	if (seen[e->id])
		return NULL;
	seen[e->id] = 1;
	if ((e->op == EXPR_TOPK || e->op == EXPR_TOPK_IDX) && e->nargs == 4)
		for (int i = 0; i < 4; i += 2)
			if (e->a[i]->ty.len && (!sorted_list(c, e->a[i]) || !sorted_list(c, e->a[i + 1])))
				return e->a[sorted_list(c, e->a[i]) ? i + 1 : i];
	for (int i = 0; i < e->nargs; i++) {
		const Expr *r = unsorted_topk(c, e->a[i], seen);
		if (r)
			return r;
	}
	return NULL;
}

static int check_topk_lists(L *l)
{
	Carrier *c = l->c;
	const char *key[] = {"lift", "merge"};
	Expr **sec[] = {c->lift, c->merge};
	unsigned char *seen = xcalloc(ir_nnodes(c->ir) + 1, 1);
	int rc = 0;
	for (int k = 0; k < 2 && !rc; k++)
		for (int f = 0; sec[k] && f < c->nstate && !rc; f++) {
			const Expr *bad = unsorted_topk(c, sec[k][f], seen);
			if (!bad)
				continue;
			YNode *m = yn_get(l->root, key[k]), *at = yn_get(m, c->state[f].name);
			char *s = ir_str_max(c->ir, bad, 80);
			diag_error(l->d, at ? at->pos : m->pos,
				   "topk merges sorted lists, and %s is not one: give it state fields lifted by "
				   "topk(v, i, k) and topk_idx(v, i, k) (or constants), or topk's own results",
				   s);
			free(s);
			rc = -1;
		}
	free(seen);
	return rc;
}

/* step and step_right: the loop body, over the old state's fields (bare),
 * the element's inputs, params, lets, i, j and len. */
static int is_topk(void *ctx, Expr *e)
{
	(void)ctx;
	return e->op == EXPR_TOPK || e->op == EXPR_TOPK_IDX;
}

static int load_step(L *l, const char *key, Expr ***out)
{
	Carrier *c = l->c;
	YNode *m = yn_get(l->root, key);
	if (!m)
		return 0;
	Scope s;
	scope_init(&s, c, key, "the old state's fields, inputs, params, lets, i, j, len and fields updated above",
		   S_STATE | S_INPUTS | S_PARAMS | S_IDX);
	scope_lets(&s, c);
	Def *tmp = NULL;
	int ntmp = 0;
	int rc = load_update(l, m, key, &s, &tmp, &ntmp, out);
	for (int f = 0; !rc && f < c->nstate; f++)
		if (ir_contains((*out)[f], is_topk, NULL)) {
			YNode *at = yn_get(m, c->state[f].name);
			diag_error(l->d, at ? at->pos : m->pos,
				   "topk in %s is not explored: write the carrier with lift and merge, "
				   "topk(v, i, k) and topk(a.top, a.idx, b.top, b.idx)", key);
			rc = -1;
		}
	for (int i = 0; i < ntmp; i++)
		free(tmp[i].name);
	free(tmp);
	free(s.locals);
	return rc;
}

/* inverse: a list of elements, each one expression per element input over
 * the state's fields, whose fold from the identity gives that state. */
static int load_inverse(L *l)
{
	Carrier *c = l->c;
	YNode *m = yn_get(l->root, "inverse");
	if (!m)
		return 0;
	if (need(l, m, YN_SEQ, "'inverse'"))
		return -1;
	if (!m->n || m->n > 16) {
		diag_error(l->d, m->pos, "'inverse' lists 1 to 16 elements, found %d", m->n);
		return -1;
	}
	Scope s;
	scope_init(&s, c, "inverse", "state fields and params", S_STATE | S_PARAMS);
	c->inverse = xcalloc(m->n, sizeof *c->inverse);
	for (int k = 0; k < m->n; k++) {
		YNode *e = m->kids[k];
		if (need(l, e, YN_MAP, "an element of 'inverse'"))
			return -1;
		c->inverse[c->ninverse++] = xcalloc(c->nelem, sizeof(Expr *));
		for (int i = 0; i < e->n; i += 2) {
			int in = -1;
			for (int q = 0; q < c->nelem; q++)
				in = strcmp(c->elem[q].name, e->kids[i]->text) ? in : q;
			if (in < 0) {
				diag_error(l->d, e->kids[i]->pos, "'%s' is not an element input", e->kids[i]->text);
				return -1;
			}
			Expr *x = expr_parse(&s, l->d, e->kids[i + 1]);
			char what[100];
			snprintf(what, sizeof what, "inverse's '%s'", c->elem[in].name);
			if (!x || !(x = expr_coerce(c, l->d, x, c->elem[in].ty, e->kids[i + 1]->pos, what)))
				return -1;
			c->inverse[k][in] = x;
		}
		for (int q = 0; q < c->nelem; q++)
			if (!c->inverse[k][q]) {
				diag_error(l->d, e->pos, "this element of 'inverse' does not define input '%s'", c->elem[q].name);
				return -1;
			}
	}
	return 0;
}

static Expr *to_identity(void *ctx, Expr *v)
{
	Carrier *c = ctx;
	const Var *var = ir_var(c->ir, v->k);
	return var->kind == VAR_STATE && var->which == STATE_SELF ? c->identity[var->slot] : NULL;
}

/* A loop spec without lift: lift(x) = step(identity, x) (or step_right). */
static void derive_lift(Carrier *c)
{
	Expr **step = c->step ? c->step : c->step_right;
	c->lift = xcalloc(c->nstate, sizeof *c->lift);
	for (int f = 0; f < c->nstate; f++)
		c->lift[f] = ir_subst(c->ir, step[f], to_identity, c);
}

/* finalize, map: named outputs; earlier outputs of the section are in scope. */
static int load_outputs(L *l, const char *key, Scope *s, Def **out, int *nout)
{
	Carrier *c = l->c;
	YNode *m = yn_get(l->root, key);
	char what[100];
	snprintf(what, sizeof what, "'%s'", key);
	if (need(l, m, YN_MAP, what))
		return -1;
	*out = xcalloc(m->n / 2, sizeof **out);
	for (int i = 0; i < m->n; i += 2) {
		YNode *k = m->kids[i];
		if (!strcmp(k->text, "let") && m->kids[i + 1]->kind == YN_MAP) { /* as merge takes one */
			diag_error(l->d, k->pos, "'%s' takes no 'let': %s (docs/spec-format.md)", key,
				   !strcmp(key, "finalize") ? "each output may use the outputs above it"
							  : "the spec's top-level 'let' names are in scope in map");
			return -1;
		}
		if (check_name(l, k, "output"))
			return -1;
		Expr *e = expr_parse(s, l->d, m->kids[i + 1]);
		if (!e)
			return -1;
		e = untyped_f32(c->ir, e);
		(*out)[(*nout)++] = (Def){xstrdup(k->text), k->pos, e, 0};
		scope_push(s, (*out)[*nout - 1].name, e);
	}
	return 0;
}

/* An empty finalize (and map) would have the carrier compute nothing, and
 * every check pass over no output; where finalize is left out the state's
 * fields are the outputs. */
static int outputs_some(L *l)
{
	Carrier *c = l->c;
	if (c->nfinal || c->nmap)
		return 0;
	YNode *at = yn_get(l->root, c->finalize_given ? "finalize" : "map");
	diag_error(l->d, at->pos, "%s no output: the carrier would compute nothing (leave 'finalize' out to output "
		   "the state's fields)", yn_get(l->root, "map") ? "'finalize' and 'map' name" : "'finalize' names");
	return -1;
}

/* An output named like an input or a param: the library and the Python
 * package take inputs and params and give outputs by name, so no call
 * could bind both. */
static int outputs_apart(L *l)
{
	Carrier *c = l->c;
	const Decl *in[] = {c->elem, c->col, c->row, c->params};
	const int nin[] = {c->nelem, c->ncol, c->nrow, c->nparams};
	const char *what[] = {"an element input", "a column input", "a row input", "a param"};
	for (int m = 0; m < 2; m++) {
		const Def *out = m ? c->map : c->finalize;
		int nout = m ? c->nmap : c->nfinal;
		for (int i = 0; i < nout; i++)
			for (int g = 0; g < 4; g++)
				for (int j = 0; j < nin[g]; j++)
					if (!strcmp(out[i].name, in[g][j].name)) {
						diag_error(l->d, out[i].pos, "%s output '%s' has the name of %s: outputs, "
							   "inputs and params are bound by name, so rename one",
							   m ? "map" : "finalize", out[i].name, what[g]);
						return -1;
					}
	}
	return 0;
}

static int load_finalize_map(L *l)
{
	Carrier *c = l->c;
	Scope s;
	int rc = 0;
	if (yn_get(l->root, "finalize")) {
		scope_init(&s, c, "finalize", "state fields, params, row inputs and outputs above",
			   S_STATE | S_PARAMS | S_ROW);
		rc = load_outputs(l, "finalize", &s, &c->finalize, &c->nfinal);
		c->finalize_given = 1;
		free(s.locals);
	} else {
		c->finalize = xcalloc(c->nstate, sizeof *c->finalize);
		for (int f = 0; f < c->nstate; f++)
			c->finalize[c->nfinal++] = (Def){xstrdup(c->state[f].name), c->state[f].pos,
							 ir_ref(c->ir, c->svar[STATE_SELF][f]), 0};
	}
	if (!rc && !yn_get(l->root, "map"))
		return outputs_apart(l) ? -1 : outputs_some(l);
	if (rc)
		return rc;
	scope_init(&s, c, "map", "state fields, params, inputs, lets, i, j, len and map outputs above",
		   S_STATE | S_PARAMS | S_INPUTS | S_IDX);
	scope_lets(&s, c);
	rc = load_outputs(l, "map", &s, &c->map, &c->nmap);
	free(s.locals);
	for (int i = 0; !rc && i < c->nmap; i++)
		for (int j = 0; j < c->nfinal; j++)
			if (!strcmp(c->map[i].name, c->finalize[j].name)) {
				diag_error(l->d, c->map[i].pos, "map output '%s' has the name of a finalize output",
					   c->map[i].name);
				return -1;
			}
	return rc ? rc : outputs_apart(l) ? -1 : outputs_some(l);
}

/* What a reference names outside every reduction: OUT_POS for an element
 * or column input or j, which vary along the row; OUT_ROW for a row input,
 * constant along it. */
enum { OUT_POS = 1, OUT_ROW = 2 };

static int outside_reductions(Ir *ir, Expr *e, unsigned char *seen, const Var **pos)
{
	if (seen[e->id])
		return 0;
	seen[e->id] = 1;
	if (ir_ops[e->op].flags & F_REDUCE)
		return 0;
	if (e->op == EXPR_VAR) {
		const Var *v = ir_var(ir, e->k);
		if (v->kind == VAR_ELEM || v->kind == VAR_COL || (v->kind == VAR_IDX && v->slot == IDX_J)) {
			if (!*pos)
				*pos = v; /* the first, for the message */
			return OUT_POS;
		}
		return v->kind == VAR_ROW ? OUT_ROW : 0;
	}
	int out = 0;
	for (int i = 0; i < e->nargs; i++)
		out |= outside_reductions(ir, e->a[i], seen, pos);
	return out;
}

static Def *find_def(Def *defs, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(defs[i].name, name))
			return &defs[i];
	return NULL;
}

/* Each reference compared with its output, and each helper used. */
static int check_references(L *l, const unsigned char *named)
{
	Carrier *c = l->c;
	int compared = 0;
	for (int i = 0; i < c->nref; i++) {
		Def *r = &c->ref[i];
		unsigned char *seen = xcalloc(r->e->id + 1, 1);
		const Var *pos = NULL;
		int out = outside_reductions(c->ir, r->e, seen, &pos);
		free(seen);
		Def *fin = find_def(c->finalize, c->nfinal, r->name), *map = find_def(c->map, c->nmap, r->name);
		/* One that names an input outside a reduction is per position and
		 * is compared with the map output: a row input counts, the value
		 * being the same at each position.  A finalize output's reference
		 * may name a row input too (t * sum(x) / count()), being constant
		 * along the row. */
		r->per_row = fin ? 1 : map ? 0 : !(out & OUT_POS);
		if (!out && map && !fin) {
			diag_error(l->d, r->pos, "reference '%s' is per row (every input is inside a reduction), but "
						 "'%s' is a map output, computed per position", r->name, r->name);
			return -1;
		}
		if ((out & OUT_POS) && fin) {
			diag_error(l->d, r->pos, "reference '%s' is per position (it uses %s%s%s outside a "
						 "reduction), but '%s' is a finalize output, computed per row", r->name,
				   pos->kind == VAR_IDX ? "the position " : "input '", pos->name,
				   pos->kind == VAR_IDX ? "" : "'", r->name);
			return -1;
		}
		compared += fin || map;
		if (!fin && !map)
			continue;
		Ty want = (fin ? fin : map)->e->ty;
		if (r->e->ty.len != want.len || (want.len && r->e->ty.dim != want.dim)) {
			char b1[64], b2[64];
			diag_error(l->d, r->pos, "reference '%s' has type %s, but the output has type %s", r->name,
				   ty_str(c->ir, r->e->ty, b1, 64), ty_str(c->ir, want, b2, 64));
			return -1;
		}
	}
	/* a helper no reference uses is most likely an output's name
	 * misspelt, whose output then goes unchecked; said before a
	 * reference that compares nothing, as it names the misspelt one */
	for (int i = 0; i < c->nref; i++) {
		Def *r = &c->ref[i];
		if (find_def(c->finalize, c->nfinal, r->name) || find_def(c->map, c->nmap, r->name) || named[i])
			continue;
		Buf b = {0};
		for (int o = 0; o < c->nfinal + c->nmap; o++) {
			const char *on = o < c->nfinal ? c->finalize[o].name : c->map[o - c->nfinal].name;
			if (!find_def(c->ref, c->nref, on))
				buf_printf(&b, "%s'%s'", b.len ? ", " : "", on);
		}
		diag_error(l->d, r->pos, "reference '%s' names no output, and no later reference uses it%s%s%s", r->name,
			   b.len ? " (outputs with no reference: " : "", b.len ? b.s : "", b.len ? ")" : "");
		free(b.s);
		return -1;
	}
	if (!compared) {
		diag_error(l->d, section_pos(l, yn_get(l->root, "reference")),
			   "no reference name matches a finalize or map output, so nothing would be checked");
		return -1;
	}
	return 0;
}

static int load_reference(L *l)
{
	Carrier *c = l->c;
	if (!yn_get(l->root, "reference"))
		return 0;
	Scope s;
	scope_init(&s, c, "reference", "inputs, lets, params, i, j, len and earlier reference names",
		   S_INPUTS | S_PARAMS | S_IDX | S_REDUCE);
	scope_lets(&s, c);
	int rc = load_outputs(l, "reference", &s, &c->ref, &c->nref);
	/* the references are the last names in scope, in order; a later one
	 * naming an earlier one is a use of it by name, as an equal
	 * expression written out again is not */
	unsigned char *named = xcalloc((size_t)c->nref + 1, 1);
	for (int i = 0; !rc && i < c->nref; i++)
		named[i] = (unsigned char)s.locals[s.nlocals - c->nref + i].used;
	free(s.locals);
	rc = rc ? rc : check_references(l, named);
	free(named);
	return rc;
}

static int load_laws(L *l)
{
	YNode *m = yn_get(l->root, "laws");
	if (!m)
		return 0;
	if (need(l, m, YN_SEQ, "'laws'"))
		return -1;
	for (int i = 0; i < m->n; i++) {
		YNode *n = m->kids[i];
		if (need(l, n, YN_SCALAR, "a law"))
			return -1;
		if (strcmp(n->text, "commutative")) {
			if (!strcmp(n->text, "associative") || !strcmp(n->text, "identity"))
				diag_error(l->d, n->pos, "'%s' is always checked; 'laws' lists extra claims "
							 "(commutative)", n->text);
			else
				diag_error(l->d, n->pos, "unknown law '%s' (known: commutative)", n->text);
			return -1;
		}
		if (l->c->laws & LAW_COMMUTATIVE) {
			diag_error(l->d, n->pos, "law 'commutative' listed twice");
			return -1;
		}
		l->c->laws |= LAW_COMMUTATIVE;
	}
	return 0;
}

static int load_template(L *l)
{
	Carrier *c = l->c;
	YNode *n = yn_get(l->root, "template");
	if (!n) {
		c->tpl = c->nmap ? FAM_ROWMAP : FAM_ROWREDUCE;
		return 0;
	}
	if (need(l, n, YN_SCALAR, "'template'"))
		return -1;
	Family f = variant_family(n->text);
	if (f == FAM_NONE || f == FAM_SPLITK) {
		diag_error(l->d, n->pos, "unknown template '%s' (templates: rowreduce, rowmap, attention, scan)", n->text);
		return -1;
	}
	c->tpl = f;
	c->tpl_given = 1;
	if (c->tpl == FAM_ROWMAP && !c->nmap) {
		diag_error(l->d, n->pos, "template 'rowmap' writes map outputs, but the spec has no 'map'");
		return -1;
	}
	if (c->tpl == FAM_ROWREDUCE && c->nmap) { /* it was run as a rowmap, the template unsaid */
		diag_error(l->d, n->pos, "template 'rowreduce' writes per-row outputs only, but the spec has a "
					 "'map' (template 'rowmap' writes both)");
		return -1;
	}
	if (c->tpl == FAM_SCAN && c->nmap) { /* the format gives a scan no per-position map */
		diag_error(l->d, section_pos(l, yn_get(l->root, "map")),
			   "template 'scan' gives one output per position from finalize; it takes no 'map'");
		return -1;
	}
	return 0;
}

static int load_certificate(L *l)
{
	Carrier *c = l->c;
	YNode *m = yn_get(l->root, "certificate");
	if (!m)
		return 0;
	if (need(l, m, YN_MAP, "'certificate'"))
		return -1;
	static const char *const keys[] = {"into", "monoid", "back", NULL};
	for (int i = 0; i < m->n; i += 2) {
		const char *k = m->kids[i]->text;
		if (strcmp(k, "into") && strcmp(k, "monoid") && strcmp(k, "back")) {
			const char *near = closest(k, keys);
			diag_error(l->d, m->kids[i]->pos, "unknown key '%s' in certificate%s%s%s", k,
				   near ? " (did you mean '" : " (keys: into, monoid, back)", near ? near : "", near ? "'?)" : "");
			return -1;
		}
	}
	YNode *into = yn_get(m, "into"), *mon = yn_get(m, "monoid"), *back = yn_get(m, "back");
	const char *missing = !into ? "into" : !mon ? "monoid" : !back ? "back" : NULL;
	if (missing) {
		diag_error(l->d, section_pos(l, m), "certificate needs '%s'", missing);
		return -1;
	}
	if (need(l, into, YN_MAP, "certificate 'into'") || need(l, mon, YN_MAP, "certificate 'monoid'") ||
	    need(l, back, YN_MAP, "certificate 'back'"))
		return -1;
	Scope s;
	scope_init(&s, c, "certificate", "state fields and params", S_STATE | S_PARAMS);
	c->ncert = 0;
	c->cert_into = xcalloc(into->n / 2, sizeof *c->cert_into);
	c->cert_monoid = xcalloc(into->n / 2, sizeof *c->cert_monoid);
	c->cert_var = xcalloc(into->n / 2, sizeof *c->cert_var);
	int rc = -1;
	for (int i = 0; i < into->n; i += 2) {
		YNode *k = into->kids[i];
		if (check_name(l, k, "coordinate"))
			goto out;
		Expr *e = expr_parse(&s, l->d, into->kids[i + 1]);
		if (!e)
			goto out;
		e = untyped_f32(c->ir, e);
		YNode *mk = yn_get(mon, k->text);
		if (!mk) {
			diag_error(l->d, section_pos(l, mon), "certificate 'monoid' has no entry for coordinate '%s'",
				   k->text);
			goto out;
		}
		if (need(l, mk, YN_SCALAR, "a monoid"))
			goto out;
		static const struct { const char *name; Op op; } monoids[] = {
			{"add", EXPR_ADD}, {"mul", EXPR_MUL}, {"max", EXPR_MAX}, {"min", EXPR_MIN}};
		Op op = EXPR_NOPS;
		for (int j = 0; j < 4; j++)
			if (!strcmp(mk->text, monoids[j].name))
				op = monoids[j].op;
		if (op == EXPR_NOPS) {
			diag_error(l->d, mk->pos, "unknown monoid '%s' (known: add, mul, max, min)", mk->text);
			goto out;
		}
		c->cert_monoid[c->ncert] = op;
		c->cert_into[c->ncert] = (Def){xstrdup(k->text), k->pos, e, 0};
		c->cert_var[c->ncert] = ir_add_var(c->ir, k->text, VAR_SYM, 0, c->ncert, e->ty, (TyKind)e->ty.kind);
		c->ncert++;
	}
	for (int i = 0; i < mon->n; i += 2)
		if (!yn_get(into, mon->kids[i]->text)) {
			diag_error(l->d, mon->kids[i]->pos, "monoid names '%s', which 'into' does not define",
				   mon->kids[i]->text);
			goto out;
		}
	free(s.locals);
	scope_init(&s, c, "certificate 'back'", "the coordinates of 'into' and params", S_PARAMS);
	for (int i = 0; i < c->ncert; i++)
		scope_push(&s, c->cert_into[i].name, ir_ref(c->ir, c->cert_var[i]));
	rc = load_fields(l, back, "back", &s, &c->cert_back, 0, 0);
	if (!rc)
		c->has_cert = 1;
out:
	free(s.locals);
	return rc;
}

/* ---- the whole file ---- */

/* Which section of r declares the name k (a state field, an element
 * input, a finalize output), for a key that lost its indentation; NULL
 * when none does. */
static const char *field_section(const YNode *r, const char *k)
{
	static const char *const decl[][2] = {{"state", "state field"}, {"element", "element input"},
					       {"finalize", "output"}};
	for (int d = 0; d < 3; d++) {
		const YNode *m = yn_get(r, decl[d][0]);
		if (m && m->kind == YN_MAP)
			for (int i = 0; i < m->n; i += 2)
				if (m->kids[i]->text && !strcmp(m->kids[i]->text, k))
					return decl[d][1];
	}
	return NULL;
}

static int check_top(L *l)
{
	YNode *r = l->root;
	if (r->kind != YN_MAP) {
		diag_error(l->d, r->pos, "a spec must be a mapping (carrier: ..., state: ...), found %s",
			   kind_name(r->kind));
		return -1;
	}
	for (int i = 0; i < r->n; i += 2) {
		const char *k = r->kids[i]->text;
		int known = 0;
		for (int j = 0; spec_keys[j]; j++)
			known |= !strcmp(k, spec_keys[j]);
		if (!known) {
			const char *near = closest(k, spec_keys);
			const char *sect = field_section(r, k);
			if (sect)
				diag_error(l->d, r->kids[i]->pos,
					   "unknown key '%s': a %s at the top level (should it be indented under the key "
					   "above?)", k, sect);
			else if (near)
				diag_error(l->d, r->kids[i]->pos, "unknown key '%s' (did you mean '%s'?)", k, near);
			else
				diag_error(l->d, r->kids[i]->pos, "unknown key '%s'", k);
			return -1;
		}
	}
	static const char *const required[] = {"carrier", "state", "identity", "lift", "merge", NULL};
	int loop = yn_get(r, "step") || yn_get(r, "step_right");
	for (int i = 0; required[i]; i++)
		if (!yn_get(r, required[i]) && !(loop && (!strcmp(required[i], "lift") || !strcmp(required[i], "merge")))) {
			diag_error(l->d, r->pos, "missing required key '%s'%s", required[i],
				   !strcmp(required[i], "merge") ? " (a loop spec gives 'step' instead)" : "");
			return -1;
		}
	if (yn_get(r, "inverse") && !yn_get(r, "step")) {
		diag_error(l->d, r->pos, "'inverse' is folded with 'step', which this spec does not give");
		return -1;
	}
	YNode *name = yn_get(r, "carrier"), *sum = yn_get(r, "summary");
	if (need(l, name, YN_SCALAR, "'carrier'") || (sum && need(l, sum, YN_SCALAR, "'summary'")))
		return -1;
	if (!expr_ident_ok(name->text)) {
		if (strlen(name->text) > SPEC_MAX_NAME && expr_ident_ok((char[2]){name->text[0], 0}))
			diag_error(l->d, name->pos, "carrier name longer than %d characters", SPEC_MAX_NAME);
		else
			diag_error(l->d, name->pos, "carrier name '%s' is not an identifier ([A-Za-z_][A-Za-z0-9_]*)",
				   name->text);
		return -1;
	}
	/* the header's names are the carrier's with a suffix, at file scope,
	 * where C reserves every name that starts with '_' (a carrier '_'
	 * gives __launch) */
	if (name->text[0] == '_') {
		diag_error(l->d, name->pos,
			   "carrier name '%s' starts with '_': the names of its kernels' header (%s_args, %s_launch) "
			   "would be reserved in C",
			   name->text, name->text, name->text);
		return -1;
	}
	l->c->name = xstrdup(name->text);
	l->c->summary = sum ? xstrdup(sum->text) : NULL;
	return 0;
}

static int load_inputs(L *l)
{
	Carrier *c = l->c;
	if (load_decls(l, "params", VAR_PARAM, &c->params, &c->nparams, 0, 0) ||
	    load_decls(l, "row", VAR_ROW, &c->row, &c->nrow, 1, 1) ||
	    load_decls(l, "column", VAR_COL, &c->col, &c->ncol, 1, 1) ||
	    load_decls(l, "element", VAR_ELEM, &c->elem, &c->nelem, 1, 1))
		return -1;
	if (!c->nelem && !c->ncol) {
		diag_error(l->d, l->root->pos, "a spec needs 'element' or 'column' inputs: there is nothing to reduce");
		return -1;
	}
	static const char *const idx[] = {"i", "j", "len"};
	for (int k = 0; k < 3; k++)
		c->idx[k] = ir_add_var(c->ir, idx[k], VAR_IDX, 0, k, ty_scalar(TY_I32), TY_I32);
	return 0;
}

static int load_body(L *l)
{
	Carrier *c = l->c;
	Scope s;
	if (load_lets(l) || load_conditions(l))
		return -1;
	scope_init(&s, c, "identity", "constants and fields above", 0);
	int bad = load_fields(l, yn_get(l->root, "identity"), "identity", &s, &c->identity, 1, 0);
	free(s.locals);
	if (bad)
		return -1;
	if (load_step(l, "step", &c->step) || load_step(l, "step_right", &c->step_right) || load_inverse(l))
		return -1;
	int rc = 0;
	if (yn_get(l->root, "lift")) {
		scope_init(&s, c, "lift", "inputs, params, lets, i, j, len and fields lifted above",
			   S_INPUTS | S_PARAMS | S_IDX);
		scope_lets(&s, c);
		const YNode *m = yn_get(l->root, "lift");
		rc = load_fields(l, m, "lift", &s, &c->lift, 1, 0);
		free(s.locals);
		if (!rc) {
			c->lift_pos = xcalloc(c->nstate, sizeof *c->lift_pos);
			for (int i = 0; i < m->n; i += 2)
				c->lift_pos[field_index(c, m->kids[i]->text)] = m->kids[i + 1]->pos;
		}
	} else {
		derive_lift(c);
	}
	if (rc || load_merge(l) || check_topk_lists(l) || load_finalize_map(l) || load_reference(l) || load_laws(l) ||
	    load_certificate(l) || load_template(l))
		return -1;
	return 0;
}

Carrier *spec_load_buffer(const char *file, const char *buf, size_t len, const Define *defs, int ndefs,
			  Diag *d)
{
	L l = {.d = d};
	if (yn_load(d, buf, len, &l.root))
		return NULL;
	Carrier *c = xcalloc(1, sizeof *c);
	c->file = xstrdup(file);
	c->ir = ir_new();
	l.c = c;
	int rc = check_top(&l) || load_dims(&l, yn_get(l.root, "dims"), defs, ndefs) || load_inputs(&l) ||
		 load_state(&l) || load_body(&l);
	yn_free(l.root);
	if (rc) {
		spec_carrier_free(c);
		return NULL;
	}
	return c;
}

char *spec_read_file(const char *path, size_t *len, Diag *d)
{
	char found[4096], tried[2 * 4096 + 128], why[128];
	FILE *f = infile_open(specdir_find(path, found, sizeof found, tried, sizeof tried), why, sizeof why);
	if (!f) {
		diag_error(d, (Pos){0, 0}, "cannot open: %s%s", why[0] ? why : strerror(errno), tried);
		return NULL;
	}
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	for (;;) {
		if (!buf)
			abort();
		size_t r = fread(buf + n, 1, cap - n, f);
		n += r;
		if (n > YAML_MAX_BYTES || r == 0)
			break;
		if (n == cap)
			buf = realloc(buf, cap *= 2);
	}
	int err = ferror(f) ? errno : 0;
	fclose(f);
	if (err)
		diag_error(d, (Pos){0, 0}, "cannot read: %s", strerror(err));
	else if (n > YAML_MAX_BYTES) /* read no further than needed to know */
		diag_error(d, (Pos){0, 0}, "file is larger than 1 MiB; a spec is a short text");
	if (err || n > YAML_MAX_BYTES) {
		free(buf);
		return NULL;
	}
	*len = n;
	return buf;
}

Carrier *spec_load_file(const char *path, const Define *defs, int ndefs, Diag *d)
{
	size_t n;
	char *buf = spec_read_file(path, &n, d);
	Carrier *c = buf ? spec_load_buffer(path, buf, n, defs, ndefs, d) : NULL;
	d->src = NULL;
	d->srclen = 0;
	free(buf);
	return c;
}

static void free_defs(Def *d, int n)
{
	for (int i = 0; i < n; i++)
		free(d[i].name);
	free(d);
}

static void free_decls(Decl *d, int n)
{
	for (int i = 0; i < n; i++)
		free(d[i].name);
	free(d);
}

void spec_carrier_free(Carrier *c)
{
	if (!c)
		return;
	free(c->file);
	free(c->name);
	free(c->summary);
	free_decls(c->params, c->nparams);
	free_decls(c->row, c->nrow);
	free_decls(c->col, c->ncol);
	free_decls(c->elem, c->nelem);
	free_decls(c->state, c->nstate);
	for (int w = 0; w < 4; w++)
		free(c->svar[w]);
	free_defs(c->lets, c->nlets);
	free_defs(c->mlets, c->nmlets);
	free_defs(c->finalize, c->nfinal);
	free_defs(c->map, c->nmap);
	free_defs(c->ref, c->nref);
	free_defs(c->cert_into, c->ncert);
	free(c->identity);
	free(c->lift);
	free(c->lift_pos);
	free(c->merge);
	free(c->step);
	free(c->step_right);
	for (int k = 0; k < c->ninverse; k++)
		free(c->inverse[k]);
	free(c->inverse);
	free(c->cert_monoid);
	free(c->cert_var);
	free(c->cert_back);
	ir_free(c->ir);
	free(c);
}
