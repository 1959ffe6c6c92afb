/* scope.h: what a section of a spec may name, for the expression parser. */
#ifndef ASSOC_SCOPE_H
#define ASSOC_SCOPE_H

#include "compiler/front/spec.h"
#include "compiler/front/yaml.h"

enum {
	S_ELEM = 1 << 0,   /* element inputs */
	S_COL = 1 << 1,    /* column inputs */
	S_ROW = 1 << 2,    /* row inputs */
	S_PARAMS = 1 << 3,
	S_IDX = 1 << 4,    /* i, j, len */
	S_AB = 1 << 5,     /* a.<field>, b.<field> */
	S_STATE = 1 << 6,  /* state fields by bare name */
	S_REDUCE = 1 << 7, /* sum(e), max(e), min(e), count() */
	S_INPUTS = S_ELEM | S_COL | S_ROW,
};

typedef struct {
	const char *name;
	Expr *e;
	const char *what; /* "let", "merge temporary", ... for messages */
	int used;         /* named by an expression parsed since */
} Local;

typedef struct {
	Carrier *c;
	const char *section; /* for messages: "lift", "merge", ... */
	const char *may;     /* what the section may name, for messages */
	unsigned allow;
	Local *locals;
	int nlocals;
} Scope;

/* Parse and type one expression (a YAML scalar).  The result may have kind
 * TY_NUM when it is a bare literal; expr_coerce fixes it.  NULL on error. */
Expr *expr_parse(Scope *s, Diag *d, const YNode *node);
/* Convert e to type `to` (literal typing, int -> float, broadcasts), or report why not. */
Expr *expr_coerce(Carrier *c, Diag *d, Expr *e, Ty to, Pos pos, const char *what);
int expr_ident_ok(const char *s);

#endif
