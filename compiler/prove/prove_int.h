/* prove_int.h: what the prover's files share.
 *
 * Variables: every scalar state field of the operands a, b, c and every
 * param is one "base variable" (a vector field stands for one generic
 * component; a bool state field is a constant in each case, bval).  Linear forms over them carry exact rationals; everything
 * else is a rational function in the base variables and the positive
 * symbols X_v = exp(v), Y_v = 2^v and E = e, known by its values modulo the
 * prime 2^61-1 at PV_K random points (Schwartz-Zippel decides equality). */
#ifndef ASSOC_PROVE_INT_H
#define ASSOC_PROVE_INT_H

#include <stdint.h>

#include "compiler/prove/prove.h"

enum {
	PV_MAXV = 40,     /* base variables */
	PV_K = 3,         /* random points */
	PV_MAXLOG = 4,    /* log atoms in one value */
	PV_MAXCON = 48,   /* constraints of a region */
	PV_FMROWS = 4000, /* Fourier-Motzkin rows before giving up on pruning */
	PV_MAXEXP = 1 << 12, /* coefficients in exp and powers of logs: degrees stay far under the modulus */
	PV_MAXINV = 12,   /* linear invariants assumed of each operand */
	PV_MAXDEG = 1 << 16, /* degree of a normal form: products of shared subterms double it per level */
	MSG_EXPR = 400,   /* bytes of an expression quoted in a message (a DAG prints exponentially long) */
};

/* Sign sets: which of negative, zero, positive a value may be. */
enum { SG_NEG = 1, SG_ZERO = 2, SG_POS = 4, SG_ANY = 7 };

typedef struct {
	int64_t n, d; /* d > 0, gcd 1 */
} Q;

typedef struct {
	Q c[PV_MAXV + 1]; /* c[PV_MAXV]: the constant */
} Lin;

typedef struct {
	Carrier *c;
	Ir *ir;
	int nv;
	int *var_of;            /* Ir var -> base variable, or -1 */
	const char *vname[PV_MAXV];
	char vop[PV_MAXV];      /* 'a', 'b', 'c', or 0 for params */
	int vfield[PV_MAXV];    /* state field or param index */
	const char *pfixed;     /* by param: 1 where its value replaced it (not shown in witnesses); or NULL */
	uint8_t vsign[PV_MAXV]; /* sign fact of nonempty states / assume */
	uint8_t vi32[PV_MAXV];  /* 1 where it is an i32: the regions bound it */
	uint8_t vbool[PV_MAXV]; /* 1 where it is a bool state field: no real, a case's constant */
	int8_t bonly[PV_MAXV];  /* a bool state field's one value on every nonempty state (0, 1), or -1 */
	int8_t bval[PV_MAXV];   /* a bool state field's value in the case being proved, or -1 outside one */
	uint64_t pt[PV_K][PV_MAXV], X[PV_K][PV_MAXV], Y[PV_K][PV_MAXV], E[PV_K];
	int overflow;           /* a rational left int64: results are unknown */
	struct Reach *reach;    /* reachable states, drawn at the first difference */
	struct Reach *reach_at; /* the same at a witness's params, where they are not reach's */
	int ninv;               /* inv[i] >= 0 on every nonempty state, over operand a's variables */
	Lin inv[PV_MAXINV];
	char invtext[256];      /* "q >= s, p >= s": the invariants as the trace and proofs name them */
	void *fm_rows;          /* Fourier-Motzkin scratch, allocated on first use */
	uint8_t *isign;         /* sign facts by Ir var (assume's, the invariants'), owned by pv_init's Pv; or NULL */
	int int_casts;          /* the carrier converts an integer to a float somewhere */
	int bools_open;         /* free bool params, where more than BOOL_CASES_MAX leave them open; else 0 */
} Pv;

/* A region: eliminated variables (ties) and strict or weak inequalities over the rest. */
typedef struct {
	uint64_t issub;
	Lin sub[PV_MAXV];
	int ncon;
	Lin con[PV_MAXCON];
	uint8_t strict[PV_MAXCON];
	char desc[400];
} Region;

/* prove.c: whether es[0..n) read state variable v (a base variable of an
 * operand); the bool state fields split[0..ns) set to case k, field i to
 * bit i of k. */
int pv_reads(const Pv *p, int v, Expr *const *es, int n);
void pv_bool_case(Pv *p, const int *split, int ns, int k);

/* prove_lin.c */
Q lin_q_int(int64_t n);
Q lin_q_add(Pv *p, Q x, Q y);
Q lin_q_mul(Pv *p, Q x, Q y);
Q lin_q_div(Pv *p, Q x, Q y);
Q lin_q_neg(Q x);
int lin_q_from_double(double v, Q *q);
void lin_zero(Lin *l);
void lin_add(Pv *p, Lin *out, const Lin *x, const Lin *y, Q ky);
void lin_scale(Pv *p, Lin *out, const Lin *x, Q k);
int lin_is_const(const Lin *l);
int lin_eq(const Lin *x, const Lin *y);
void lin_str(const Pv *p, const Lin *l, char *buf, size_t n);
double lin_eval_f(const Lin *l, const double *val);
void lin_region_init(Pv *p, Region *r);
void lin_region_var(const Region *r, int v, Lin *out);
/* rel: '>' (l > 0), '<' (l < 0), '=' (l = 0); 0 when the result is infeasible */
int lin_region_assume(Pv *p, const Region *r, const Lin *l, int rel, Region *out);
int lin_region_feasible(Pv *p, const Region *r);
int lin_region_holds(const Region *r, const double *val);

/* Whether integer e converts to a float of kind k exactly: the values it
 * may take on the devices (its range, from the sign facts) lie within
 * the float's run of consecutive integers (2^24 for f32, 2^53 for f64). */
int pv_int_converts_exactly(const Pv *p, Expr *e, TyKind k);

/* prove_inv.c: the linear invariants of nonempty states into p->inv, with
 * vs the sign facts of the Ir's variables (assume's, for the inputs). */
void inv_infer(Pv *p, const uint8_t *vs);

/* prove_reach.c */
typedef struct Reach Reach;
Reach *reach_new(Carrier *c);
/* The same with the params at a witness's values (p's base variables at
 * val) where it has them: states folded where the witness's params put
 * them. */
Reach *reach_new_at(Carrier *c, const Pv *p, const double *val);
/* Whether the witness at val has a param value other than rs's. */
int reach_params_differ(const Reach *rs, const Pv *p, const double *val);
void reach_free(Reach *rs);
int reach_states(const Reach *rs);
/* Whether the states depend on their positions (draw_reads_position):
 * the witnesses of a law of two or three operands are then states of
 * disjoint runs, as a fold merges (in the order a, b, c unless the merge
 * is claimed commutative). */
int reach_by_position(const Reach *rs);
/* Operands folded from drawn rows that lie in r and make g's two roots
 * (root: the first) differ: 1 with the base variables' values in val and
 * the differing values in out. */
int reach_witness(const Reach *rs, Pv *p, const Region *r, Prog *g, const Expr *root, double *val, double *out);
/* Values for the seeds: rows of one or two elements whose inputs take
 * them (the spec's constants are there from the start). */
void reach_seed(Reach *rs, const double *v, int n);
/* Seeds from the witness's counts of positions (val by p's variables): a
 * field that lift sets to 1 and merge sums, at n in the witness, is the
 * state of a row of n elements, which rows of one or two never fold to. */
void reach_seed_lengths(Reach *rs, const Pv *p, const double *val);
/* reach_witness over the seeds' states (every tuple of nops operands where
 * they are few), then seeds mixed with drawn folds. */
int reach_seed_witness(const Reach *rs, Pv *p, int nops, const Region *r, Prog *g, const Expr *root, double *val,
		       double *out);
/* A region's witness made of lifts of single elements, each input that a
 * field's lift is set to the witness's value rounded to its storage or to
 * the value next to that above or below (an equality of the region that no
 * float meets exactly may hold once rounded): 1 where the law named by
 * lname ("(a+b)+c", "a+b", "e+a", "a+e") breaks on them in the spec's
 * types, with the witness in *how (malloc'd).  The params are the
 * witness's. */
int reach_lift_witness(Reach *rs, const Pv *p, const char *lname, const double *val, char **how);
/* The identity at lifts of infinite inputs that tie with its own
 * infinite value (check_identity_edge): where e+a or a+e differs from a
 * there, what says so (malloc'd), else NULL. */
char *reach_identity_edge(Carrier *c);
/* Whether two float64 results differ beyond rounding. */
int reach_differ(double x, double y);

/* prove_mod.c */
enum { PV_P = 0 };
uint64_t lin_md_add(uint64_t a, uint64_t b);
uint64_t lin_md_sub(uint64_t a, uint64_t b);
uint64_t lin_md_mul(uint64_t a, uint64_t b);
uint64_t lin_md_inv(uint64_t a);
uint64_t lin_md_pow(uint64_t a, int64_t k);
uint64_t lin_md_q(Q q);
uint64_t lin_md_double(double v, int *ok);
uint64_t lin_rand(uint64_t *s);

/* prove_sign.c */
uint8_t lin_sign_add(uint8_t x, uint8_t y);
uint8_t lin_sign_mul(uint8_t x, uint8_t y);
uint8_t lin_sign_neg(uint8_t x);
uint8_t lin_sign_max(uint8_t x, uint8_t y);
uint8_t lin_sign_of_num(double v);

#endif

/* prove_eval.c: the value of an expression in a region. */
enum { V_FIN, V_NEGINF, V_POSINF, V_NAN, V_BOOL, V_ERR, V_SPLIT };

typedef struct {
	int q;
	uint64_t rf[PV_K];
	int degn, degd;
} LogAtom;

/* A finite value is lin + sum q_i log(E_i) (haslin), or exp of that (isexp),
 * and when it has no log atoms also a rational function known by its values
 * rf at the random points, of numerator and denominator degrees at most degn
 * and degd. */
typedef struct {
	uint8_t kind, sign, b, haslin, hasrf, isexp, nlog;
	Lin lin;
	LogAtom log[PV_MAXLOG];
	uint64_t rf[PV_K];
	int degn, degd;
	char why[160];
} Val;

typedef struct Ev Ev;
Ev *ev_new(Pv *p, const Region *r);
void ev_free(Ev *x);
Val *ev_eval(Ev *x, Expr *e);
/* The field that counts a state's positions: from 0, lift 1, merge
 * a.f + b.f; an integer unless any_type (a float count too); -1 where the
 * carrier has none. */
int prove_positions_field(const Carrier *c, int any_type);
/* Whether state field f counts positions: an integer from 0 that lift sets
 * to 0 or 1 and merge sums, so that it lies in [0, the state's positions]. */
int prove_counts_positions(const Carrier *c, int f);
/* Whether integer e may wrap in two's complement where the prover's
 * integers do not (prove_eval.c's wraps) */
int ev_wraps(Ev *x, Expr *e);
/* After V_SPLIT: the linear form whose sign the region does not decide. */
const Lin *ev_split(Ev *x, const char **desc);
/* 1 equal, 0 different, -1 undecided (why filled); *deg: degree for the error bound */
int ev_val_equal(Pv *p, const Val *x, const Val *y, int *deg, char *why, size_t n);
void ev_val_str(Pv *p, const Val *v, char *buf, size_t n);
