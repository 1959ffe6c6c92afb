/* spec.h: a carrier spec, loaded and checked (scopes, types, shapes).
 *
 * Everything the spec says is held as IR: names become Vars, expressions
 * become Exprs.  `let` names, merge temporaries and merged fields used by
 * bare name are substituted where they are used, so each Expr stands alone. */
#ifndef ASSOC_SPEC_H
#define ASSOC_SPEC_H

#include "compiler/front/diag.h"
#include "ir/ir.h"
#include "runtime/variant.h"

/* SPEC_MAX_EXPR_DEPTH bounds the nesting of an expression's text (the
 * parser recurses per parenthesis); SPEC_MAX_TREE_DEPTH the depth of the
 * tree it builds, `let` names expanded (every pass recurses per level, and
 * the prover composes a merge with itself, doubling it). */
enum { SPEC_MAX_EXPR_DEPTH = 200, SPEC_MAX_TREE_DEPTH = 500, SPEC_MAX_DIM = 65536, SPEC_MAX_NAME = 64 };

enum { LAW_COMMUTATIVE = 1 };

typedef struct {
	char *name;
	Pos pos;
	Ty ty;          /* the computing type (f16, bf16 load as f32) */
	TyKind storage; /* the type in memory */
	int var;        /* Ir var; for state fields the bare (finalize) var */
} Decl;

typedef struct {
	char *name;
	Pos pos;
	Expr *e;
	int per_row; /* reference outputs: 1 when every input sits in a reduction */
} Def;

typedef struct {
	char *file;
	char *name;
	char *summary;
	Ir *ir;
	Pos dim_pos[64];

	Decl *params, *row, *col, *elem, *state;
	int nparams, nrow, ncol, nelem, nstate;
	int *svar[4];   /* state field vars by which (a, b, c, bare) */
	int idx[3];     /* vars for i, j, len */

	Def *lets;
	int nlets;
	Expr *assume, *mask; /* NULL when absent */
	Expr **identity, **lift, **merge; /* one per state field; merge is NULL in a loop spec */
	Pos merge_pos;  /* where merge's value begins */
	Pos *lift_pos;  /* where each field's lift begins, where the spec gives a lift (NULL: derived from step) */
	/* Loop specs (assoc explore): the state after one more element on the
	 * right (step) or on the left (step_right), over the old state's bare
	 * fields (either may be absent, not both); inverse: elements (one expression per element input, over the
	 * state's fields) whose fold from the identity gives that state. */
	Expr **step, **step_right;
	Expr ***inverse;
	int ninverse;
	Def *mlets;     /* merge temporaries as written (in a and b) */
	int nmlets;
	Def *finalize, *map, *ref;
	int nfinal, nmap, nref;
	int finalize_given;
	unsigned laws;
	Family tpl; /* rowreduce, rowmap, attention or scan (splitk is no template of a spec) */
	int tpl_given;

	int has_cert;
	Def *cert_into;     /* coordinates over the bare state fields */
	Op *cert_monoid;    /* EXPR_ADD, EXPR_MUL, EXPR_MAX, EXPR_MIN per coordinate */
	int ncert;
	int *cert_var;      /* the coordinate vars used by back */
	Expr **cert_back;   /* one per state field, over the coordinates */

	/* check_commutes's answer, found once a carrier (its rows' trials
	 * cost more than the rest of a module's or a kernel's planning):
	 * 0 not yet asked, else 1 + its result, with its why */
	int commutes_found;
	char commutes_why[400];
} Carrier;

typedef struct {
	const char *name;
	const char *value;
} Define;

/* The top-level keys a spec may have, NULL-terminated. */
extern const char *const spec_keys[];

/* Load and check a spec.  NULL with diagnostics in d on any error. */
Carrier *spec_load_file(const char *path, const Define *defs, int ndefs, Diag *d);
Carrier *spec_load_buffer(const char *file, const char *buf, size_t len, const Define *defs, int ndefs,
			  Diag *d);
/* The text of the spec file path (found as spec_load_file finds it),
 * malloc'd, its length in *len; NULL with diagnostics in d. */
char *spec_read_file(const char *path, size_t *len, Diag *d);
void spec_carrier_free(Carrier *c);

/* Width of a state field or input (1 for scalars). */
int spec_decl_width(const Decl *d);

/* Why the carrier cannot read a paged key/value cache (docs/spec-format.md,
 * "Paged keys and values"), or NULL where it can.  Where it can, the row
 * index i of a sequence with more queries than keys is negative. */
const char *spec_unpageable(const Carrier *c);

#endif
