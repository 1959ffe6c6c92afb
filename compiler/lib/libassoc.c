/* libassoc.c: the public C API (assoc.h) over the spec loader, the
 * checker and the CPU backend.  Status codes and messages, never exit. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "compiler/lib/assoc.h"
#include "compiler/check/verdict.h"
#include "compiler/lib/libassoc_int.h"
#include "compiler/check/check.h"
#include "compiler/check/draw.h"
#include "compiler/check/eval.h"
#include "compiler/prove/prove.h"
#include "compiler/front/yaml.h"
#include "compiler/devices/emu.h"

const char *assoc_strerror(AssocStatus s)
{
	static const char *const m[] = {"ok", "invalid argument", "invalid spec", "a law or the reference fails",
					"device not usable", "compilation failed", "buffer size does not fit the shape",
					"out of memory"};
	return (unsigned)s < sizeof m / sizeof *m ? m[s] : "unknown status";
}

static AssocStatus fail(char *err, size_t n, AssocStatus st, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static AssocStatus fail(char *err, size_t n, AssocStatus st, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, n, fmt, ap);
	va_end(ap);
	return st;
}

/* ---- specs ---- */

static void add_arrays(AssocSpec *s, const Decl *d, int n, AssocRole role)
{
	for (int i = 0; i < n; i++)
		s->arr[s->narr++] = (AssocArray){d[i].name, role, ty_kind_name(d[i].storage), spec_decl_width(&d[i]), 0};
}

static void add_outputs(AssocSpec *s, const Def *d, int n, AssocRole role)
{
	for (int i = 0; i < n; i++) {
		Ty t = d[i].e->ty;
		s->arr[s->narr++] = (AssocArray){d[i].name, role, ty_kind_name((TyKind)t.kind), t.len ? t.len : 1, 1};
	}
}

static AssocStatus loaded(AssocSpec *s, Diag *d)
{
	AssocStatus st = ASSOC_OK;
	if (s->c && !s->c->merge) {
		/* nothing past here runs a carrier without its merge */
		snprintf(s->err, sizeof s->err,
			 "%s: error: a loop spec (a step without a merge): 'assoc explore %s' derives its merge", s->c->file,
			 s->c->file);
		spec_carrier_free(s->c);
		s->c = NULL;
		st = ASSOC_ESPEC;
	} else if (!s->c) {
		snprintf(s->err, sizeof s->err, "%s", d->text ? d->text : "the spec does not load");
		st = ASSOC_ESPEC;
	} else {
		Carrier *c = s->c;
		s->arr = calloc(c->nelem + c->ncol + c->nrow + c->nfinal + c->nmap + 1, sizeof *s->arr);
		if (!s->arr) {
			diag_free(d);
			return ASSOC_ENOMEM;
		}
		add_arrays(s, c->elem, c->nelem, ASSOC_ELEMENT);
		add_arrays(s, c->col, c->ncol, ASSOC_COLUMN);
		add_arrays(s, c->row, c->nrow, ASSOC_ROW);
		add_outputs(s, c->finalize, c->nfinal, ASSOC_FINALIZE);
		add_outputs(s, c->map, c->nmap, ASSOC_MAP);
	}
	diag_free(d);
	return st;
}

/* s->defs and s->src: the dims as `--dim` gives them, and the text (a
 * file's, read once, so that a kernel's carrier is the spec's even where
 * the file changes); 0, or -1 when out of memory. */
static int keep_source(AssocSpec *s, const char *path, const char *text, size_t len, const AssocValue *dims,
		       int ndims, Diag *d)
{
	s->defs = calloc(ndims + 1, sizeof *s->defs);
	if (!s->defs)
		return -1;
	for (int i = 0; i < ndims; i++) {
		char v[32];
		snprintf(v, sizeof v, "%.17g", dims[i].value);
		s->defs[i] = (Define){strdup(dims[i].name), strdup(v)};
		s->ndefs++;
		if (!s->defs[i].name || !s->defs[i].value)
			return -1;
	}
	if (path) {
		s->src = spec_read_file(path, &s->srclen, d);
		return 0; /* d says why not */
	}
	/* refused before a byte is copied: len + 1 wraps at SIZE_MAX */
	if (len > YAML_MAX_BYTES) {
		diag_error(d, (Pos){0, 0}, "file is larger than 1 MiB (%zu bytes); a spec is a short text", len);
		return 0;
	}
	s->src = malloc(len + 1);
	if (!s->src)
		return -1;
	memcpy(s->src, text, len);
	s->src[len] = 0;
	s->srclen = len;
	return 0;
}

static void free_source(AssocSpec *s)
{
	for (int i = 0; s->defs && i < s->ndefs; i++)
		free((char *)s->defs[i].name), free((char *)s->defs[i].value);
	free(s->defs);
	free(s->src);
}

static AssocStatus load(AssocSpec **out, const char *path, const char *text, size_t len, const AssocValue *dims,
			int ndims)
{
	if (out)
		*out = NULL;
	if (!out || (!path && !text) || ndims < 0 || (ndims && !dims))
		return ASSOC_EINVAL;
	for (int i = 0; i < ndims; i++)
		if (!dims[i].name)
			return ASSOC_EINVAL; /* a dim without a name is a NULL pointer, not a spec error */
	AssocSpec *s = *out = calloc(1, sizeof *s);
	if (!s)
		return ASSOC_ENOMEM;
	atomic_init(&s->refs, 1);
	Diag d;
	diag_init(&d, path ? path : "spec");
	if (keep_source(s, path, text, len, dims, ndims, &d)) {
		diag_free(&d);
		return ASSOC_ENOMEM;
	}
	if (s->src)
		s->c = spec_load_buffer(path ? path : "spec", s->src, s->srclen, s->defs, s->ndefs, &d);
	d.src = NULL, d.srclen = 0;
	return loaded(s, &d);
}

/* A carrier of k's own, loaded as its spec's was; ASSOC_OK, or the
 * status with why in k->err. */
static AssocStatus own_carrier(AssocKernel *k)
{
	AssocSpec *s = k->s;
	Diag d;
	diag_init(&d, s->c->file);
	k->c = spec_load_buffer(s->c->file, s->src, s->srclen, s->defs, s->ndefs, &d);
	if (!k->c)
		snprintf(k->err, sizeof k->err, "the spec does not load again: %.900s", d.text ? d.text : "out of memory");
	d.src = NULL, d.srclen = 0;
	diag_free(&d);
	return k->c ? ASSOC_OK : ASSOC_ESPEC;
}

AssocStatus assoc_spec_load(AssocSpec **out, const char *path, const AssocValue *dims, int ndims)
{
	return load(out, path, NULL, 0, dims, ndims);
}

AssocStatus assoc_spec_load_text(AssocSpec **out, const char *text, size_t len, const AssocValue *dims, int ndims)
{
	return load(out, NULL, text, len, dims, ndims);
}

const char *assoc_spec_error(const AssocSpec *s) { return s ? s->err : "no spec (NULL handle)"; }
const char *assoc_spec_name(const AssocSpec *s) { return s && s->c ? s->c->name : NULL; }

/* The laws of v whose prover status is st (any, for st < 0, where the
 * trials held and the prover has no line), joined by ", " into b; how
 * many. */
static int laws_named(const CarrierVerdict *v, int st, char *b, size_t n)
{
	int k = 0;
	size_t at = 0;
	b[0] = 0;
	for (int i = 0; i < v->nlaw; i++) {
		const VerdictLaw *l = &v->law[i];
		if (l->trial && l->trial->v != VERDICT_HOLDS)
			continue;
		if (st < 0 ? l->proof || !l->trial : !l->proof || (int)l->proof->status != st)
			continue;
		if (at < n)
			at += (size_t)snprintf(b + at, n - at, "%s%s", k ? ", " : "", l->law);
		k++;
	}
	return k;
}

/* Where the identity holds but at lifts of infinite inputs, what says so
 * (the prover's words where it has them, as check prints them), else NULL. */
static const char *identity_except(const CarrierVerdict *v)
{
	const VerdictLaw *l = verdict_law(v, "identity");
	if (!l)
		return NULL;
	if (l->proof && l->proof->except)
		return l->proof->except;
	return l->trial && l->trial->v == VERDICT_HOLDS ? l->trial->except : NULL;
}

/* What assoc_spec_verdict says of v: the laws proved, the laws held in
 * the trials alone (no proof, or the prover left them unknown), and the
 * reference; as `assoc check` prints them line by line. */
static void verdict_line(AssocSpec *s, const CarrierVerdict *v)
{
	char proved[160], trials[160], unknown[160];
	size_t n = sizeof s->verdict, at = 0;
	char *b = s->verdict;
#define SAY(...) (at += (size_t)snprintf(b + (at < n ? at : n), at < n ? n - at : 0, __VA_ARGS__))
	if (v->status == VERDICT_FAILED) {
		SAY("%s: FAILED (%s)", s->c->name, v->why ? v->why : "a law or the reference fails");
		return;
	}
	int np = laws_named(v, PROOF_PROVED, proved, sizeof proved);
	int nt = laws_named(v, -1, trials, sizeof trials);
	int nu = laws_named(v, PROOF_UNKNOWN, unknown, sizeof unknown);
	SAY("%s: ok (", s->c->name);
	const char *sep = "";
	if (np)
		SAY("%s%s proved", sep, proved), sep = "; ";
	if (nt)
		SAY("%s%s held in the trials", sep, trials), sep = "; ";
	if (nu)
		SAY("%s%s unknown to the prover, held in the trials", sep, unknown), sep = "; ";
	if (v->trials.sound == VERDICT_NA)
		SAY("%sno reference given, so the results are not checked against one", sep);
	else
		SAY("%sthe results match the reference on %d rows", sep, v->trials.rows);
	/* a warning that leaves the carrier accepted, said only where it applies */
	const SpecialOutcome *sp = &v->trials.special;
	int group = sp->grouping == VERDICT_FAILS, ref = sp->reference == VERDICT_FAILS;
	if (group || ref)
		SAY("; on rows holding NaN or infinities %s%s%s", group ? "the groupings disagree" : "",
		    group && ref ? " and " : "", ref ? "the outputs disagree with the reference" : "");
	const char *except = identity_except(v);
	if (except)
		SAY("; identity %s", except);
	if (v->trials.accuracy == VERDICT_FAILS)
		SAY("; float32 accuracy: %s", v->trials.acc_detail);
	SAY(")");
#undef SAY
}

/* The warnings of v, one a line, as `assoc check` prints them: what the
 * verdict line says in a clause, here with its witness's detail. */
static void warning_lines(AssocSpec *s, const CarrierVerdict *v)
{
	size_t n = sizeof s->warnings, at = 0;
	char *b = s->warnings;
#define SAY(...) (at += (size_t)snprintf(b + (at < n ? at : n), at < n ? n - at : 0, __VA_ARGS__))
	b[0] = 0;
	if (v->status == VERDICT_FAILED)
		return;
	const char *except = identity_except(v);
	if (except)
		SAY("identity: %s\n", except);
	const SpecialOutcome *sp = &v->trials.special;
	if (sp->grouping == VERDICT_FAILS)
		SAY("special values: grouping: %s\n", sp->group_detail);
	if (sp->reference == VERDICT_FAILS)
		SAY("special values: reference: %s\n", sp->ref_detail);
	if (v->trials.accuracy == VERDICT_FAILS)
		SAY("float32 accuracy: %s\n", v->trials.acc_detail);
#undef SAY
}

/* The verdict `assoc check` reaches, with trials trials (0: check's
 * 20000); ASSOC_ELAWS with its line in s->err when it fails.  Kept in
 * s->judged, passed or failed, for assoc_compile. */
static AssocStatus judge(AssocSpec *s, int trials, int id_trials, uint64_t seed)
{
	VerdictOpts o = {.prove = 1};
	check_defaults(&o.check);
	if (trials > 0)
		o.check.trials = trials;
	if (id_trials > 0)
		o.check.id_trials = id_trials;
	if (trials > 0 && trials < VERDICT_RUN_UNKNOWN_TRIALS)
		o.unknown_trials = VERDICT_RUN_UNKNOWN_TRIALS;
	o.check.seed = seed;
	CarrierVerdict v;
	s->verdict[0] = s->warnings[0] = 0;
	if (verdict_run(s->c, &o, &v, s->err, sizeof s->err))
		return ASSOC_EINVAL;
	verdict_line(s, &v);
	warning_lines(s, &v);
	AssocStatus st = verdict_ok(&v) ? ASSOC_OK : ASSOC_ELAWS;
	snprintf(s->err, sizeof s->err, "%s", st && v.why ? v.why : "");
	s->judged = st ? -1 : 1;
	snprintf(s->judged_why, sizeof s->judged_why, "%s", s->err);
	verdict_free(&v);
	return st;
}

/* Whether e reads a param; seen marks the nodes looked at. */
static int reads_param(const Ir *ir, const Expr *e, unsigned char *seen)
{
	if (!e || seen[e->id])
		return 0;
	seen[e->id] = 1;
	if (e->op == EXPR_VAR && ir_var(ir, e->k)->kind == VAR_PARAM)
		return 1;
	for (int i = 0; i < e->nargs; i++)
		if (reads_param(ir, e->a[i], seen))
			return 1;
	return 0;
}

/* Whether the laws can depend on c's params: the identity, lift, merge
 * or mask reads one (a param of finalize alone, an epsilon, cannot make
 * a grouping differ). */
static int laws_read_params(const Carrier *c)
{
	unsigned char *seen = calloc((size_t)ir_nnodes(c->ir) + 1, 1);
	if (!seen)
		return 1;
	int r = reads_param(c->ir, c->mask, seen);
	for (int f = 0; !r && f < c->nstate; f++)
		r = reads_param(c->ir, c->identity[f], seen) || reads_param(c->ir, c->lift[f], seen) ||
		    (c->merge && reads_param(c->ir, c->merge[f], seen));
	free(seen);
	return r;
}

/* Whether the prover proves every law of c with its params left free:
 * then they hold at any values of the params that assume allows. */
static int laws_proved_for_any_params(Carrier *c)
{
	ProofReport r;
	if (prove_carrier_at(c, NULL, 0, 0, &r))
		return 0;
	int all = r.n > 0;
	for (int i = 0; i < r.n; i++)
		all &= r.line[i].status == PROOF_PROVED;
	prove_report_free(&r);
	return all;
}

/* A part of assume over params alone that pv breaks: ASSOC_EINVAL naming
 * it, as the verdict at pv would refuse them.  The machine that evaluates
 * it is built at the first new value and kept: a run at each new value
 * (a temperature that changes every call) builds no programs. */
static AssocStatus params_keep_assume(AssocKernel *k, const double *pv)
{
	Carrier *c = k->c;
	if (!c->assume)
		return ASSOC_OK;
	if (!k->assume_m) {
		Machine *m = malloc(sizeof *m);
		if (!m || eval_init(m, c)) {
			free(m);
			return fail(k->err, sizeof k->err, ASSOC_ENOMEM, "out of memory");
		}
		k->assume_m = m;
	}
	memcpy(k->assume_m->params, pv, c->nparams * sizeof *pv);
	char why[sizeof k->err];
	return draw_params_break_assume(k->assume_m, NULL, why, sizeof why)
		       ? fail(k->err, sizeof k->err, ASSOC_EINVAL, "%s", why)
		       : ASSOC_OK;
}

AssocStatus lib_judge_params(AssocKernel *k, const double *pv)
{
	Carrier *c = k->c;
	if (!c->nparams || k->trusted)
		return ASSOC_OK;
	if (k->params_in_laws < 0)
		return ASSOC_OK;
	for (int i = 0; i < k->njudged; i++)
		if (!memcmp(k->judged_pv + (size_t)i * c->nparams, pv, c->nparams * sizeof *pv))
			return ASSOC_OK;
	/* the laws proved with the params free (after a first verdict at
	 * values a run gave, trials and reference included): new finite
	 * values need only keep assume, not a verdict of their own (about
	 * 0.2 s of trials each); a value that is not finite is judged, which
	 * names it where every state is NaN */
	int finite = 1;
	for (int i = 0; i < c->nparams; i++)
		finite &= isfinite(pv[i]) != 0;
	if (k->params_laws_proved > 0 && finite)
		return params_keep_assume(k, pv);
	if (!k->judged_pv && !(k->judged_pv = calloc((size_t)LIB_JUDGED * c->nparams, sizeof *pv)))
		return fail(k->err, sizeof k->err, ASSOC_ENOMEM, "out of memory");
	/* the values as `assoc run --param` gives them */
	Define *defs = calloc(c->nparams, sizeof *defs);
	char (*vals)[32] = calloc(c->nparams, sizeof *vals);
	if (!defs || !vals) {
		free(defs), free(vals);
		return fail(k->err, sizeof k->err, ASSOC_ENOMEM, "out of memory");
	}
	for (int i = 0; i < c->nparams; i++) {
		if (c->params[i].storage == TY_BOOL && (pv[i] == 0 || pv[i] == 1)) /* as the spec writes them */
			snprintf(vals[i], sizeof vals[i], "%s", pv[i] != 0 ? "true" : "false");
		else
			snprintf(vals[i], sizeof vals[i], "%.17g", pv[i]);
		defs[i] = (Define){c->params[i].name, vals[i]};
	}
	CheckOpts co;
	check_defaults(&co);
	co.params = defs, co.nparams = c->nparams;
	VerdictOpts o = verdict_run_opts(&co);
	CarrierVerdict v;
	char msg[512] = "";
	AssocStatus st;
	if (verdict_run(c, &o, &v, msg, sizeof msg)) {
		st = fail(k->err, sizeof k->err, ASSOC_EINVAL, "%s", msg);
	} else {
		char at[256] = "";
		for (int i = 0, l = 0; i < c->nparams && l < (int)sizeof at; i++)
			l += snprintf(at + l, sizeof at - l, "%s%s=%s", i ? ", " : "", defs[i].name, defs[i].value);
		/* no inputs at these params to try the laws on (every state NaN
		 * at a NaN param): a bad argument, not a law that fails */
		AssocStatus bad = v.cause == VERDICT_BY_INPUTS ? ASSOC_EINVAL : ASSOC_ELAWS;
		st = verdict_ok(&v) ? ASSOC_OK
				    : fail(k->err, sizeof k->err, bad, "%s (with the params at %s)",
					   v.why ? v.why : "a law or the reference fails", at);
		verdict_free(&v);
	}
	free(defs), free(vals);
	k->verdicts++;
	if (st)
		return st;
	if (!k->params_laws_proved)
		k->params_laws_proved = laws_proved_for_any_params(c) ? 1 : -1;
	/* kept, the oldest replaced past LIB_JUDGED */
	int at = k->njudged < LIB_JUDGED ? k->njudged++ : k->judged_next++ % LIB_JUDGED;
	memcpy(k->judged_pv + (size_t)at * c->nparams, pv, c->nparams * sizeof *pv);
	return ASSOC_OK;
}

AssocStatus assoc_spec_check(AssocSpec *s, int trials, uint64_t seed)
{
	if (!s || !s->c)
		return ASSOC_EINVAL; /* s->err keeps why the spec did not load */
	if (trials < 0)
		return fail(s->err, sizeof s->err, ASSOC_EINVAL, "trials must be 0 (the default) or more, got %d", trials);
	return judge(s, trials, 0, seed);
}

const char *assoc_spec_verdict(const AssocSpec *s) { return s ? s->verdict : ""; }
const char *assoc_spec_warnings(const AssocSpec *s) { return s ? s->warnings : ""; }

AssocStatus assoc_spec_trust_merge(AssocSpec *s, int trust)
{
	if (!s || !s->c)
		return ASSOC_EINVAL;
	s->trusted = trust != 0;
	return ASSOC_OK;
}

int assoc_array_count(const AssocSpec *s) { return s && s->c ? s->narr : 0; }

AssocStatus assoc_array_info(const AssocSpec *s, int i, AssocArray *info)
{
	if (!s || !s->c || !info || i < 0 || i >= s->narr)
		return ASSOC_EINVAL;
	*info = s->arr[i];
	return ASSOC_OK;
}

static size_t type_size(const char *t)
{
	return !strcmp(t, "bool") || !strcmp(t, "f8e4m3") ? 1 : strstr(t, "16") ? 2 : strstr(t, "32") ? 4 : 8;
}

size_t assoc_array_bytes(const AssocSpec *s, int i, int64_t rows, int64_t len)
{
	if (!s || !s->c || i < 0 || i >= s->narr || rows < 0 || len < 0)
		return 0;
	const AssocArray *a = &s->arr[i];
	int per_pos = a->role == ASSOC_ELEMENT || a->role == ASSOC_MAP ||
		      (a->role == ASSOC_FINALIZE && s->c->tpl == FAM_SCAN);
	uint64_t n = a->role == ASSOC_COLUMN ? (uint64_t)len : (uint64_t)rows, b = 0;
	/* SIZE_MAX past what a size_t counts: no allocation gets it, no buffer matches it */
	if (a->role != ASSOC_COLUMN && a->role != ASSOC_ROW && per_pos && __builtin_mul_overflow(n, (uint64_t)len, &n))
		return SIZE_MAX;
	if (__builtin_mul_overflow(n, (uint64_t)a->width * type_size(a->type), &b) || b > SIZE_MAX)
		return SIZE_MAX;
	return (size_t)b;
}

size_t assoc_array_bytes_heads(const AssocSpec *s, int i, int64_t heads, int64_t kv_heads, int64_t rows, int64_t len)
{
	if (!s || !s->c || i < 0 || i >= s->narr || heads < 1 || kv_heads < 1 || heads % kv_heads)
		return 0;
	size_t one = assoc_array_bytes(s, i, rows, len);
	uint64_t b;
	if (one == SIZE_MAX ||
	    __builtin_mul_overflow((uint64_t)one, (uint64_t)(s->arr[i].role == ASSOC_COLUMN ? kv_heads : heads), &b) ||
	    b > SIZE_MAX)
		return SIZE_MAX;
	return (size_t)b;
}

/* One reference to s dropped: the spec goes with the last. */
static void spec_unref(AssocSpec *s)
{
	if (atomic_fetch_sub(&s->refs, 1) != 1)
		return;
	spec_carrier_free(s->c);
	free_source(s);
	free(s->arr);
	free(s);
}

void assoc_spec_free(AssocSpec *s)
{
	if (s)
		spec_unref(s);
}

int assoc_param_count(const AssocSpec *s) { return s && s->c ? s->c->nparams : 0; }

const char *assoc_param_name(const AssocSpec *s, int i)
{
	return s && s->c && i >= 0 && i < s->c->nparams ? s->c->params[i].name : NULL;
}

const char *assoc_param_type(const AssocSpec *s, int i)
{
	return s && s->c && i >= 0 && i < s->c->nparams ? ty_kind_name(s->c->params[i].storage) : NULL;
}

/* ---- kernels ---- */

/* The kernel of a failed compile: its status and reason (also in s->err,
 * where callers of older versions look). */
static AssocStatus refused(AssocSpec *s, AssocKernel *k, AssocStatus st, const char *why)
{
	if (why != k->err)
		snprintf(k->err, sizeof k->err, "%.1000s", why);
	if (why != s->err)
		snprintf(s->err, sizeof s->err, "%.2000s", why);
	k->failed = st;
	return st;
}

/* g closed and freed, with its workspaces and its modules in other contexts.
 * A workspace is freed once the launches that read it are done: the
 * caller's streams may still be running them, and cuMemFree does not wait
 * for memory of the stream-ordered allocator. */
static void release_gpu(Gpu *g, AssocStreamWs *ws, int nws, AssocCtxModule *mods, int nmods)
{
	if (g) {
		void *was;
		char why[512];
		int entered = nws && !rt_get_ctx(g->rt, &was, why, sizeof why);
		for (int i = 0; i < nws; i++) {
			int synced = 0; /* each context that holds a workspace, once */
			for (int j = 0; j < i; j++)
				synced |= ws[j].b.ws && ws[j].ctx == ws[i].ctx;
			if (ws[i].b.ws && entered && !synced && !rt_set_ctx(g->rt, ws[i].ctx, why, sizeof why))
				rt_sync(g->rt, why, sizeof why);
			gpu_free_bufs(g, &ws[i].b);
		}
		if (entered)
			rt_set_ctx(g->rt, was, why, sizeof why);
		if (nmods && !rt_get_ctx(g->rt, &was, why, sizeof why)) {
			for (int i = 0; i < nmods; i++)
				if (!rt_set_ctx(g->rt, mods[i].ctx, why, sizeof why))
					rt_unload(g->rt, mods[i].mod);
			rt_set_ctx(g->rt, was, why, sizeof why);
		}
		gpu_close(g);
		free(g);
	}
	free(ws);
	free(mods);
}

void lib_release_paged(AssocKernel *k)
{
	release_gpu(k->pgpu, k->pws, k->npws, k->pmods, k->npmods);
	k->pgpu = NULL, k->pws = NULL, k->pmods = NULL, k->npws = k->npmods = 0;
}

static void release(AssocKernel *k)
{
	rt_pool_close(k->pool);
	llvm_kernel_free(k->k);
	llvm_kernel_free(k->narrow[0]);
	llvm_kernel_free(k->narrow[1]);
	llvm_kernel_free(k->paged);
	k->paged = NULL;
	release_gpu(k->gpu, k->ws, k->nws, k->mods, k->nmods);
	lib_release_paged(k);
	k->ws = NULL, k->mods = NULL, k->nws = k->nmods = 0;
	k->pool = NULL, k->k = k->narrow[0] = k->narrow[1] = NULL, k->gpu = NULL, k->dev = NULL;
	k->word_in = 0;
}

/* The inputs of m's carrier that its attention kernels load as 32-bit
 * words: q, k and v of 16 bits (e4m3's are read a byte at a time). */
static unsigned attn_word_inputs(const CudaModule *m)
{
	if (m->base != FAM_ATTN || m->attn.f8)
		return 0;
	return 1u << m->attn.qi | 1u << m->attn.ki | 1u << m->attn.vi;
}

/* Compile s into k for one device (not auto); k->err says why not. */
static AssocStatus compile_on(AssocSpec *s, const char *device, int threads, AssocKernel *k)
{
	char why[sizeof k->err];
	/* named here, not looked up (run_device_find): a program linked with
	 * the static library gets them all */
	extern const Device dev_gpu, dev_emu, dev_interp;
	const Device *dev = !strcmp(device, "gpu")	? &dev_gpu
			    : !strcmp(device, "emu")	? &dev_emu
			    : !strcmp(device, "interp") ? &dev_interp
							: NULL;
	if (!dev && strcmp(device, "cpu"))
		return fail(k->err, sizeof k->err, ASSOC_EDEVICE,
			    "unknown device '%s' (this library has: cpu, gpu, emu, interp, auto)", device);
	if (!dev) {
		if (!llvm_available(why, sizeof why))
			return fail(k->err, sizeof k->err, ASSOC_EDEVICE, "cpu: %s", why);
	} else if (!dev->available(why, sizeof why)) {
		return fail(k->err, sizeof k->err, ASSOC_EDEVICE, "%s: %s", device, why);
	}
	/* `assoc run`'s few trials, unless assoc_spec_check has reached the
	 * verdict already, which then stands, failed or not; where the laws
	 * read a param, each run reaches it at its values (lib_judge_params),
	 * since a merge lawful only for some values is disproved at others */
	k->params_in_laws = laws_read_params(s->c) ? 1 : -1;
	AssocStatus st = s->trusted		 ? ASSOC_OK
			 : s->judged		 ? (s->judged < 0 ? ASSOC_ELAWS : ASSOC_OK)
			 : k->params_in_laws > 0 ? ASSOC_OK
						 : judge(s, VERDICT_RUN_TRIALS, VERDICT_RUN_ID_TRIALS, 1);
	if (st)
		return fail(k->err, sizeof k->err, st, "%s", s->judged_why);
	k->dev = dev;
	if (!dev) {
		if (llvm_compile(k->c, NULL, &k->k, why, sizeof why))
			return fail(k->err, sizeof k->err, ASSOC_ECOMPILE, "cpu: %s", why);
		if (rt_pool_open(&k->pool, threads, why, sizeof why))
			return fail(k->err, sizeof k->err, ASSOC_ENOMEM, "cpu: %s", why);
	} else if (!strcmp(device, "gpu")) {
		/* the driver and NVRTC now; a variant is compiled when a run first
		 * takes it (the shape chooses it), and kept for the next */
		k->gpu = calloc(1, sizeof *k->gpu);
		if (!k->gpu)
			return fail(k->err, sizeof k->err, ASSOC_ENOMEM, "out of memory");
		if (gpu_open_aside(k->gpu, k->c, 0, why, sizeof why)) {
			free(k->gpu);
			k->gpu = NULL;
			return fail(k->err, sizeof k->err, ASSOC_ECOMPILE, "gpu: %s", why);
		}
		k->word_in = attn_word_inputs(&k->gpu->m);
	} else if (!strcmp(device, "emu")) {
		/* the module built (or found in the emulator's cache) now, so that
		 * its compiler's errors come from assoc_compile */
		CudaModule m;
		EmuLib *lib = NULL;
		if (cuda_module(k->c, NULL, &m, why, sizeof why))
			return fail(k->err, sizeof k->err, ASSOC_ECOMPILE, "emu: %s", why);
		int rc = emu_open(m.src, &lib, why, sizeof why);
		emu_close(lib);
		k->word_in = attn_word_inputs(&m);
		cuda_module_free(&m);
		if (rc)
			return fail(k->err, sizeof k->err, ASSOC_ECOMPILE, "emu: %s", why);
	}
	return ASSOC_OK;
}

AssocStatus assoc_compile(AssocSpec *s, const char *device, int threads, AssocKernel **out)
{
	if (!out)
		return ASSOC_EINVAL;
	*out = NULL;
	if (!s || !device)
		return ASSOC_EINVAL;
	AssocKernel *k = calloc(1, sizeof *k);
	if (!k)
		return ASSOC_ENOMEM;
	k->s = s;
	atomic_fetch_add(&s->refs, 1);
	atomic_init(&k->refs, 1);
	k->threads = threads;
	k->trusted = s->trusted;
	*out = k;
	if (!s->c) { /* a spec that did not load: the handle says so, as documented */
		snprintf(k->err, sizeof k->err, "the spec did not load: %.900s", s->err[0] ? s->err : "no carrier");
		k->failed = ASSOC_EINVAL;
		return ASSOC_EINVAL;
	}
	AssocStatus own = own_carrier(k);
	if (own)
		return refused(s, k, own, k->err);
	if (threads < 0 || threads > RT_MAX_THREADS) {
		char why[128];
		snprintf(why, sizeof why, "threads must be 0 (every core) to %d, got %d", RT_MAX_THREADS, threads);
		return refused(s, k, ASSOC_EINVAL, why);
	}
	if (strcmp(device, "auto")) {
		AssocStatus st = compile_on(s, device, threads, k);
		if (st) {
			release(k);
			return refused(s, k, st, k->err);
		}
		return ASSOC_OK;
	}
	/* the first device that compiles it; a carrier refused (its laws) is
	 * refused on every device */
	static const char *const order[] = {"gpu", "cpu", "emu", "interp"};
	char tried[sizeof k->err] = "";
	for (size_t i = 0; i < sizeof order / sizeof *order; i++) {
		AssocStatus st = compile_on(s, order[i], threads, k);
		if (!st)
			return ASSOC_OK;
		release(k);
		if (st != ASSOC_EDEVICE && st != ASSOC_ECOMPILE)
			return refused(s, k, st, k->err);
		size_t l = strlen(tried);
		snprintf(tried + l, sizeof tried - l, "%s%.1000s", l ? "; " : "", k->err);
	}
	char why[sizeof k->err + 16];
	snprintf(why, sizeof why, "auto: %s", tried);
	return refused(s, k, ASSOC_EDEVICE, why);
}

const char *assoc_kernel_error(const AssocKernel *k) { return k ? k->err : "no kernel (NULL handle)"; }

/* Index of the buffer named name, checked for size; -1 with the error set. */
static int bind(AssocKernel *k, const AssocBuffer *bufs, int nbufs, int a, const int64_t shape[4], AssocStatus *st)
{
	const AssocArray *arr = &k->s->arr[a];
	int found = -1;
	for (int i = 0; i < nbufs; i++) {
		if (!bufs[i].name) {
			*st = fail(k->err, sizeof k->err, ASSOC_EINVAL, "buffer %d has no name", i);
			return -1;
		}
		if (!strcmp(bufs[i].name, arr->name)) {
			if (found >= 0) {
				*st = fail(k->err, sizeof k->err, ASSOC_EINVAL, "array '%s' is bound twice", arr->name);
				return -1;
			}
			found = i;
		}
	}
	if (found < 0) {
		*st = fail(k->err, sizeof k->err, ASSOC_EINVAL, "no buffer for array '%s'", arr->name);
		return -1;
	}
	size_t want = assoc_array_bytes_heads(k->s, a, shape[0], shape[1], shape[2], shape[3]);
	if (want == SIZE_MAX) {
		*st = fail(k->err, sizeof k->err, ASSOC_ESIZE,
			   "array '%s' of %lld heads (%lld key/value) x %lld x %lld has more bytes than a size_t holds", arr->name,
			   (long long)shape[0], (long long)shape[1], (long long)shape[2], (long long)shape[3]);
		return -1;
	}
	if (want && !bufs[found].data) {
		/* a NULL pointer is the caller's mistake whatever its size (ASSOC_EINVAL, as assoc.h says) */
		*st = fail(k->err, sizeof k->err, ASSOC_EINVAL, "buffer '%s' has no data (a NULL pointer)", arr->name);
		return -1;
	}
	if (bufs[found].bytes != want) {
		/* the count and type too: a buffer of doubles for an f32 array is
		 * twice the bytes, which the numbers alone leave to be worked out */
		size_t z = type_size(arr->type);
		*st = fail(k->err, sizeof k->err, ASSOC_ESIZE, "buffer '%s' has %zu bytes; the shape needs %zu (%zu %s values)",
			   arr->name, bufs[found].bytes, want, want / z, arr->type);
		return -1;
	}
	return found;
}

AssocStatus lib_params_of(AssocKernel *k, const AssocValue *p, int np, double *out)
{
	Carrier *c = k->c;
	if (np < 0 || (np && !p))
		return fail(k->err, sizeof k->err, ASSOC_EINVAL, "%d params %s", np,
			    np < 0 ? "(a count under 0)" : "with a NULL params array");
	/* a misspelt name first: it is why the right one is missing */
	for (int j = 0; j < np; j++) {
		int known = 0;
		for (int i = 0; i < c->nparams; i++)
			known |= p[j].name && !strcmp(p[j].name, c->params[i].name);
		if (!known) {
			char why[256];
			draw_param_unknown(c, p[j].name ? p[j].name : "(NULL)", why, sizeof why);
			return fail(k->err, sizeof k->err, ASSOC_EINVAL, "%s", why);
		}
	}
	for (int i = 0; i < c->nparams; i++) {
		int found = 0;
		for (int j = 0; j < np; j++)
			if (p[j].name && !strcmp(p[j].name, c->params[i].name))
				out[i] = p[j].value, found++;
		if (found != 1)
			return fail(k->err, sizeof k->err, ASSOC_EINVAL, "param '%s' given %d times (once needed)",
				    c->params[i].name, found);
		/* as `assoc run --param` takes them (draw_params) */
		TyKind st = c->params[i].storage;
		if (st == TY_F32 && !isinf(out[i]) && isinf((float)out[i]))
			return fail(k->err, sizeof k->err, ASSOC_EINVAL, "param '%s' = %g is beyond f32's range",
				    c->params[i].name, out[i]);
		if (!ir_holds(st, out[i]))
			return fail(k->err, sizeof k->err, ASSOC_EINVAL, "param '%s' = %.17g is not %s", c->params[i].name,
				    out[i], st == TY_BOOL ? "a bool (0 or 1)" : "an integer in its type's range");
		/* in its declared type once, here, as `assoc run --param` has it:
		 * every device, the assume check and the judge then see the
		 * same value (an f32 0.7 is 0.699999988 on each) */
		out[i] = ir_round(st, out[i]);
	}
	return lib_judge_params(k, out);
}

/* The kernel for views of rows rows: a narrower group of rows as lanes
 * where the views have fewer rows than k's (compiled once, kept); NULL
 * with the error set where that compile fails. */
static LlvmKernel *kernel_for(AssocKernel *k, int64_t rows)
{
	if (!k->k->k.reduce_rows || rows >= k->k->rows || rows < 4)
		return k->k;
	int w = rows >= 8 ? 1 : 0;
	if (!k->narrow[w] && llvm_compile(k->c, &(LlvmOpts){.fit_rows = w ? 8 : 4}, &k->narrow[w], k->err, sizeof k->err))
		return NULL;
	return k->narrow[w];
}

/* Buffers over the caller's arrays, in a declaration's storage type (or
 * an output expression's type): the same types and layout as assoc.h's. */
static Buffer *over(const Decl *d, const Def *o, int n, size_t count, const AssocBuffer *bufs, const int *which)
{
	Buffer *b = calloc(n + 1, sizeof *b);
	for (int i = 0; b && i < n; i++) {
		Ty t = o ? o[i].e->ty : (Ty){0};
		b[i] = (Buffer){d ? d[i].storage : (TyKind)t.kind, d ? spec_decl_width(&d[i]) : t.len ? t.len : 1, count,
				bufs[which[i]].data};
	}
	return b;
}

/* The caller's inputs against the spec's assume: a RunData over them
 * (the outputs unbound, never written). */
static AssocStatus assume_holds(AssocKernel *k, int64_t heads, int64_t kv_heads, int64_t rows, int64_t len,
				const AssocBuffer *bufs, const int *which, double *pv)
{
	Carrier *c = k->c;
	if (!c->assume)
		return ASSOC_OK;
	size_t H = (size_t)heads, rl = (size_t)rows * (size_t)len;
	RunData d = {.c = c, .rows = (int)rows, .len = (int)len, .heads = (int)heads, .kv_heads = (int)kv_heads,
		     .params = pv, .scan = c->tpl == FAM_SCAN};
	d.elem = over(c->elem, NULL, c->nelem, H * rl, bufs, which);
	d.col = over(c->col, NULL, c->ncol, (size_t)kv_heads * (size_t)len, bufs, which + c->nelem);
	d.row = over(c->row, NULL, c->nrow, H * (size_t)rows, bufs, which + c->nelem + c->ncol);
	char why[sizeof k->err];
	AssocStatus st = ASSOC_OK;
	if (!d.elem || !d.col || !d.row)
		st = fail(k->err, sizeof k->err, ASSOC_ENOMEM, "out of memory");
	else if (rundata_check_assume(&d, why, sizeof why))
		st = fail(k->err, sizeof k->err, ASSOC_EINVAL, "%s", why);
	free(d.elem), free(d.col), free(d.row);
	return st;
}

int lib_bad_shape(int64_t rows, int64_t len, const AssocBuffer *bufs, int nbufs, char *err, size_t n)
{
	if (nbufs < 0 || (nbufs && !bufs)) {
		snprintf(err, n, "%d buffers %s", nbufs, nbufs < 0 ? "(a count under 0)" : "with a NULL buffer array");
		return 1;
	}
	if (rows < 0 || len < 0 || rows > INT32_MAX || len > INT32_MAX) {
		snprintf(err, n, "shape %lld rows x %lld positions: rows and len run from 0 to 2^31 - 1", (long long)rows,
			 (long long)len);
		return 1;
	}
	return 0;
}

int lib_stray_buffer(const AssocSpec *s, const AssocBuffer *bufs, int nbufs, char *err, size_t n)
{
	for (int i = 0; i < nbufs; i++) {
		if (!bufs[i].name)
			continue; /* said where the arrays are bound */
		int hit = -1, near = -1;
		for (int a = 0; a < s->narr && hit < 0; a++) {
			if (!strcmp(bufs[i].name, s->arr[a].name))
				hit = a;
			else if (!strcasecmp(bufs[i].name, s->arr[a].name))
				near = a;
		}
		if (hit >= 0)
			continue;
		int l = snprintf(err, n, "buffer '%s' names no array of carrier %s", bufs[i].name, s->c->name);
		if (near >= 0)
			l += snprintf(err + l, l < (int)n ? n - l : 0, " (did you mean '%s'?)", s->arr[near].name);
		else
			for (int a = 0; a < s->narr; a++)
				l += snprintf(err + l, l < (int)n ? n - l : 0, "%s%s%s", a ? ", " : " (its arrays: ",
					      s->arr[a].name, a + 1 == s->narr ? ")" : "");
		return i;
	}
	return -1;
}

/* Whether array name of s is an output. */
static int is_output(const AssocSpec *s, const char *name)
{
	for (int a = 0; a < s->narr; a++)
		if (!strcmp(s->arr[a].name, name))
			return s->arr[a].is_output;
	return 0;
}

int lib_misaligned(const AssocSpec *s, unsigned words, const AssocBuffer *bufs, int nbufs, char *err, size_t n)
{
	for (int i = 0; i < nbufs; i++)
		for (int a = 0; bufs[i].name && bufs[i].data && a < s->narr; a++) {
			size_t z = type_size(s->arr[a].type);
			int word = a < 32 && (words >> a & 1) && z < 4;
			if (strcmp(s->arr[a].name, bufs[i].name) || !((uintptr_t)bufs[i].data % (word ? 4 : z)))
				continue;
			/* the CUDA kernels (on a GPU, on the emulator) load an element
			 * as a whole, attention's 16-bit q, k and v two at a time: a
			 * GPU faults, and its context is lost */
			if (word)
				snprintf(err, n,
					 "buffer '%s' at %p is not 4-byte aligned: the attention kernels load its %s "
					 "elements two at a time",
					 bufs[i].name, bufs[i].data, s->arr[a].type);
			else
				snprintf(err, n, "buffer '%s' at %p is not aligned to its elements (%s, %zu bytes)",
					 bufs[i].name, bufs[i].data, s->arr[a].type, z);
			return 1;
		}
	return 0;
}

int lib_overlapping(const AssocSpec *s, const AssocBuffer *bufs, int nbufs, char *err, size_t n)
{
	for (int i = 0; i < nbufs; i++) {
		if (!bufs[i].name || !bufs[i].data || !bufs[i].bytes || !is_output(s, bufs[i].name))
			continue;
		uintptr_t lo = (uintptr_t)bufs[i].data, hi = lo + bufs[i].bytes;
		for (int j = 0; j < nbufs; j++) {
			if (j == i || !bufs[j].name || !bufs[j].data || !bufs[j].bytes)
				continue;
			uintptr_t lo2 = (uintptr_t)bufs[j].data, hi2 = lo2 + bufs[j].bytes;
			if (lo < hi2 && lo2 < hi) {
				/* a kernel reads its inputs while it writes, in an order of its own */
				snprintf(err, n,
					 "output '%s' overlaps %s '%s' in memory: every output needs memory of its own, "
					 "apart from the inputs and the other outputs",
					 bufs[i].name, is_output(s, bufs[j].name) ? "output" : "input", bufs[j].name);
				return 1;
			}
		}
	}
	return 0;
}

unsigned lib_word_in(const AssocKernel *k, int device_memory)
{
	/* a "gpu" kernel's host arrays are copied into allocations of its own */
	return device_memory || !k->gpu ? k->word_in : 0;
}

/* Every array of the spec bound to one of bufs (which[x], its index),
 * none left over, none written over another, and the params' values in
 * pv; device_memory: bufs are the caller's device pointers. */
static AssocStatus bind_all(AssocKernel *k, int device_memory, const int64_t shape[4], const AssocBuffer *bufs,
			    int nbufs, const AssocValue *params, int nparams, int *which, double *pv)
{
	AssocStatus st = ASSOC_OK;
	int narr = k->s->narr;
	if (lib_stray_buffer(k->s, bufs, nbufs, k->err, sizeof k->err) >= 0)
		return ASSOC_EINVAL;
	for (int x = 0; !st && x < narr; x++)
		which[x] = bind(k, bufs, nbufs, x, shape, &st);
	if (!st && nbufs != narr)
		st = fail(k->err, sizeof k->err, ASSOC_EINVAL, "%d buffers given for the spec's %d arrays", nbufs, narr);
	if (!st && (lib_misaligned(k->s, lib_word_in(k, device_memory), bufs, nbufs, k->err, sizeof k->err) ||
		    lib_overlapping(k->s, bufs, nbufs, k->err, sizeof k->err)))
		st = ASSOC_EINVAL;
	return st ? st : lib_params_of(k, params, nparams, pv);
}

/* The checks on a shape that every run makes. */
static AssocStatus shape_ok(AssocKernel *k, int64_t heads, int64_t kv_heads, int64_t rows, int64_t len, int nbufs,
			    const AssocBuffer *bufs)
{
	if (!k)
		return ASSOC_EINVAL;
	if (k->failed)
		return ASSOC_EINVAL; /* k->err keeps why it did not compile */
	if (lib_bad_shape(rows, len, bufs, nbufs, k->err, sizeof k->err))
		return ASSOC_EINVAL;
	if (heads < 1 || kv_heads < 1 || heads % kv_heads || heads > INT32_MAX || rows * heads > INT32_MAX)
		return fail(k->err, sizeof k->err, ASSOC_EINVAL,
			    "%lld heads on %lld key/value heads of %lld rows (heads a positive multiple of kv_heads, "
			    "heads x rows under 2^31)",
			    (long long)heads, (long long)kv_heads, (long long)rows);
	return ASSOC_OK;
}

/* A RunData whose buffers are the caller's arrays (host or device
 * pointers alike); NULL when out of memory. */
static RunData *over_all(AssocKernel *k, int64_t heads, int64_t kv_heads, int64_t rows, int64_t len,
			 const AssocBuffer *bufs, const int *which, double *pv)
{
	Carrier *c = k->c;
	size_t H = (size_t)heads, rl = (size_t)rows * (size_t)len;
	int at = 0, scan = c->tpl == FAM_SCAN;
	RunData *d = calloc(1, sizeof *d);
	if (!d)
		return NULL;
	*d = (RunData){.c = c, .rows = (int)rows, .len = (int)len, .heads = (int)heads, .kv_heads = (int)kv_heads,
		       .params = pv, .scan = scan};
	d->elem = over(c->elem, NULL, c->nelem, H * rl, bufs, which + at), at += c->nelem;
	d->col = over(c->col, NULL, c->ncol, (size_t)kv_heads * (size_t)len, bufs, which + at), at += c->ncol;
	d->row = over(c->row, NULL, c->nrow, H * (size_t)rows, bufs, which + at), at += c->nrow;
	d->fin = over(NULL, c->finalize, c->nfinal, H * (scan ? rl : (size_t)rows), bufs, which + at), at += c->nfinal;
	d->map = over(NULL, c->map, c->nmap, H * rl, bufs, which + at);
	if (!d->elem || !d->col || !d->row || !d->fin || !d->map) {
		rundata_view_free(d);
		return NULL;
	}
	return d;
}

int lib_tune_off(void)
{
	const char *e = getenv("ASSOC_TUNE");
	return e && !strcmp(e, "off");
}

GpuBufs *lib_stream_ws(AssocStreamWs **ws, int *n, void *ctx, void *stream)
{
	for (int i = 0; i < *n; i++)
		if ((*ws)[i].ctx == ctx && (*ws)[i].stream == stream)
			return &(*ws)[i].b;
	AssocStreamWs *w = realloc(*ws, (*n + 1) * sizeof *w);
	if (!w)
		return NULL;
	*ws = w;
	w[*n] = (AssocStreamWs){ctx, stream, {.stream_ws = 1}};
	return &w[(*n)++].b;
}

AssocCtxModule *lib_ctx_module(AssocCtxModule **mods, int *n, void *ctx)
{
	for (int i = 0; i < *n; i++)
		if ((*mods)[i].ctx == ctx)
			return &(*mods)[i];
	AssocCtxModule *m = realloc(*mods, (*n + 1) * sizeof *m);
	if (!m)
		return NULL;
	*mods = m;
	m[*n] = (AssocCtxModule){ctx, NULL, 0};
	return &m[(*n)++];
}

AssocStatus assoc_run_device(AssocKernel *k, int64_t heads, int64_t kv_heads, int64_t rows, int64_t len,
			     const AssocBuffer *bufs, int nbufs, const AssocValue *params, int nparams, void *stream)
{
	AssocStatus st = shape_ok(k, heads, kv_heads, rows, len, nbufs, bufs);
	if (st)
		return st;
	if (!k->gpu)
		return fail(k->err, sizeof k->err, ASSOC_EDEVICE,
			    "assoc_run_device runs kernels compiled for \"gpu\" on device memory; this one was compiled "
			    "for \"%s\" (assoc_run_heads runs it on host arrays)",
			    k->dev ? k->dev->name : "cpu");
	Carrier *c = k->c;
	int narr = k->s->narr;
	int64_t shape[4] = {heads, kv_heads, rows, len};
	int *which = calloc(narr + 1, sizeof *which);
	double *pv = calloc(c->nparams + 1, sizeof *pv);
	RunData *d = NULL;
	st = which && pv ? ASSOC_OK : fail(k->err, sizeof k->err, ASSOC_ENOMEM, "out of memory");
	if (!st)
		st = bind_all(k, 1, shape, bufs, nbufs, params, nparams, which, pv);
	if (!st && !(d = over_all(k, heads, kv_heads, rows, len, bufs, which, pv)))
		st = fail(k->err, sizeof k->err, ASSOC_ENOMEM, "out of memory");
	char why[sizeof k->err];
	void *ctx = NULL;
	if (!st && rt_enter_ctx(k->gpu->rt, &ctx, why, sizeof why))
		st = fail(k->err, sizeof k->err, ASSOC_EDEVICE, "gpu: %s", why);
	if (!st) {
		GpuBufs *b = lib_stream_ws(&k->ws, &k->nws, ctx, stream);
		AssocCtxModule *m = ctx == rt_primary_ctx(k->gpu->rt) ? NULL : lib_ctx_module(&k->mods, &k->nmods, ctx);
		RtModule *none = NULL;
		unsigned gen = 0;
		if (!b || (ctx != rt_primary_ctx(k->gpu->rt) && !m)) {
			st = fail(k->err, sizeof k->err, ASSOC_ENOMEM, "out of memory");
		} else {
			rt_on_stream(k->gpu->rt, stream, 1);
			if (gpu_run_device(k->gpu, d, &(RunOpts){.deterministic = lib_tune_off()}, b, ctx, m ? &m->mod : &none,
					   m ? &m->gen : &gen, why, sizeof why))
				st = fail(k->err, sizeof k->err, ASSOC_EDEVICE, "gpu: %s", why);
			rt_on_stream(k->gpu->rt, NULL, 0);
		}
	}
	rundata_view_free(d);
	free(which);
	free(pv);
	return st;
}

AssocStatus assoc_tune(AssocKernel *k, int64_t heads, int64_t kv_heads, int64_t rows, int64_t len,
		       const AssocValue *params, int nparams)
{
	AssocStatus st = shape_ok(k, heads, kv_heads, rows, len, 0, NULL);
	if (st)
		return st;
	if (!k->gpu)
		return fail(k->err, sizeof k->err, ASSOC_EDEVICE,
			    "assoc_tune tunes kernels compiled for \"gpu\"; this one was compiled for \"%s\"",
			    k->dev ? k->dev->name : "cpu");
	Carrier *c = k->c;
	double *pv = calloc(c->nparams + 1, sizeof *pv);
	Define *defs = calloc(c->nparams + 1, sizeof *defs);
	char (*vals)[32] = calloc(c->nparams + 1, sizeof *vals);
	if (!pv || !defs || !vals) {
		free(pv), free(defs), free(vals);
		return fail(k->err, sizeof k->err, ASSOC_ENOMEM, "out of memory");
	}
	st = lib_params_of(k, params, nparams, pv);
	for (int i = 0; !st && i < c->nparams; i++) {
		snprintf(vals[i], sizeof vals[i], "%.17g", pv[i]);
		defs[i] = (Define){c->params[i].name, vals[i]};
	}
	char why[sizeof k->err];
	void *was = NULL;
	RunData *d = NULL;
	if (!st && rt_enter_ctx(k->gpu->rt, &was, why, sizeof why))
		st = fail(k->err, sizeof k->err, ASSOC_EDEVICE, "gpu: %s", why);
	if (!st) {
		/* `assoc tune`'s inputs: drawn as its are (seed 1), with these params */
		d = rundata_new_heads(c, (int)rows, (int)len, (int)heads, (int)kv_heads);
		if (rundata_draw(d, 1, defs, c->nparams, why, sizeof why))
			st = fail(k->err, sizeof k->err, ASSOC_EINVAL, "%s", why);
	}
	if (!st) {
		/* the tuning space is a module of its own, on a driver handle of its
		 * own (the primary context, made current by gpu_open) */
		Gpu g;
		GpuTuning *t = calloc(1, sizeof *t);
		if (!t)
			st = fail(k->err, sizeof k->err, ASSOC_ENOMEM, "out of memory");
		else if (gpu_open(&g, c, 1, why, sizeof why))
			st = fail(k->err, sizeof k->err, ASSOC_EDEVICE, "gpu: %s", why);
		else {
			int rc = gpu_tune(&g, d, NULL, NULL, t, why, sizeof why);
			if (rc < 0)
				st = fail(k->err, sizeof k->err, ASSOC_EDEVICE, "gpu: %s", why);
			else if (rc > 0)
				st = fail(k->err, sizeof k->err, ASSOC_EDEVICE,
					  "gpu: no variant ran this shape correctly (%d candidates)", t->ncand);
			else if (!t->stored)
				st = fail(k->err, sizeof k->err, ASSOC_EDEVICE, "gpu: the choice is not cached: %s", t->store_err);
			gpu_close(&g);
		}
		free(t);
	}
	if (was)
		rt_set_ctx(k->gpu->rt, was, why, sizeof why);
	rundata_free(d);
	free(pv), free(defs), free(vals);
	return st;
}

/* A run on another device than the CPU backend: a RunData whose buffers
 * are the caller's arrays (a device copies to its memory and back where it
 * has its own). */
static AssocStatus run_elsewhere(AssocKernel *k, int64_t heads, int64_t kv_heads, int64_t rows, int64_t len,
			      int64_t qpos, const AssocBuffer *bufs, const int *which, double *pv)
{
	Carrier *c = k->c;
	size_t H = (size_t)heads, rl = (size_t)rows * (size_t)len;
	int at = 0;
	RunData d = {.c = c, .rows = (int)rows, .len = (int)len, .qpos = (int)qpos, .heads = (int)heads,
		     .kv_heads = (int)kv_heads, .params = pv, .scan = c->tpl == FAM_SCAN};
	d.elem = over(c->elem, NULL, c->nelem, H * rl, bufs, which + at), at += c->nelem;
	d.col = over(c->col, NULL, c->ncol, (size_t)kv_heads * (size_t)len, bufs, which + at), at += c->ncol;
	d.row = over(c->row, NULL, c->nrow, H * (size_t)rows, bufs, which + at), at += c->nrow;
	d.fin = over(NULL, c->finalize, c->nfinal, H * (d.scan ? rl : (size_t)rows), bufs, which + at), at += c->nfinal;
	d.map = over(NULL, c->map, c->nmap, H * rl, bufs, which + at);
	AssocStatus st = ASSOC_OK;
	char why[sizeof k->err];
	if (!d.elem || !d.col || !d.row || !d.fin || !d.map)
		st = fail(k->err, sizeof k->err, ASSOC_ENOMEM, "out of memory");
	else if (k->gpu ? gpu_run_open(k->gpu, &d, &(RunOpts){0}, why, sizeof why)
			: k->dev->run(&d, &(RunOpts){.threads = k->threads}, why, sizeof why))
		st = fail(k->err, sizeof k->err, ASSOC_EDEVICE, "%s: %s", k->dev->name, why);
	free(d.elem), free(d.col), free(d.row), free(d.fin), free(d.map);
	return st;
}

AssocStatus assoc_run(AssocKernel *k, int64_t rows, int64_t len, const AssocBuffer *bufs, int nbufs,
		      const AssocValue *params, int nparams)
{
	return assoc_run_heads(k, 1, 1, rows, len, bufs, nbufs, params, nparams);
}

AssocStatus assoc_run_heads(AssocKernel *k, int64_t heads, int64_t kv_heads, int64_t rows, int64_t len,
			    const AssocBuffer *bufs, int nbufs, const AssocValue *params, int nparams)
{
	return lib_run_heads_at(k, heads, kv_heads, rows, len, 0, bufs, nbufs, params, nparams);
}

AssocStatus lib_run_heads_at(AssocKernel *k, int64_t heads, int64_t kv_heads, int64_t rows, int64_t len,
			       int64_t qpos, const AssocBuffer *bufs, int nbufs, const AssocValue *params, int nparams)
{
	AssocStatus st0 = shape_ok(k, heads, kv_heads, rows, len, nbufs, bufs);
	if (st0)
		return st0;
	Carrier *c = k->c;
	int nin = c->nelem + c->ncol + c->nrow, nout = c->nfinal + c->nmap, narr = k->s->narr;
	int64_t g = heads / kv_heads, shape[4] = {heads, kv_heads, rows, len};
	/* the buffers checked first, then a view a key/value head: its
	 * query heads' rows one after another */
	int *which = calloc(narr + 1, sizeof *which);
	double *pv = calloc(c->nparams + 1, sizeof *pv);
	AssocStatus st = which && pv ? ASSOC_OK : fail(k->err, sizeof k->err, ASSOC_ENOMEM, "out of memory");
	if (!st)
		st = bind_all(k, 0, shape, bufs, nbufs, params, nparams, which, pv);
	if (!st)
		st = assume_holds(k, heads, kv_heads, rows, len, bufs, which, pv);
	if (!st && k->dev)
		st = run_elsewhere(k, heads, kv_heads, rows, len, qpos, bufs, which, pv);
	if (st || k->dev) {
		free(which);
		free(pv);
		return st;
	}
	const void **in = NULL;
	void **out = NULL;
	CpuArgs *a = NULL;
	if (!st) {
		in = calloc((size_t)kv_heads * (nin + 1), sizeof *in);
		out = calloc((size_t)kv_heads * (nout + 1), sizeof *out);
		a = calloc(kv_heads, sizeof *a);
		if (!in || !out || !a)
			st = fail(k->err, sizeof k->err, ASSOC_ENOMEM, "out of memory for %lld views", (long long)kv_heads);
	}
	for (int x = 0; !st && x < narr; x++) {
		/* bytes of one head: a view steps a key/value head's columns, g query heads' rest */
		size_t step = assoc_array_bytes(k->s, x, rows, len) * (k->s->arr[x].role == ASSOC_COLUMN ? 1 : (size_t)g);
		for (int64_t v = 0; v < kv_heads; v++) {
			char *p = bufs[which[x]].data ? (char *)bufs[which[x]].data + (size_t)v * step : NULL;
			if (x < nin)
				in[v * (nin + 1) + x] = p;
			else
				out[v * (nout + 1) + x - nin] = p;
		}
	}
	LlvmKernel *kk = st ? NULL : kernel_for(k, g * rows);
	if (!st && !kk)
		st = ASSOC_ECOMPILE;
	if (!st) {
		for (int64_t v = 0; v < kv_heads; v++)
			a[v] = (CpuArgs){in + v * (nin + 1), out + v * (nout + 1), pv, g * rows, len, g > 1 ? rows : 0, qpos};
		if (rt_cpu_run(k->pool, &kk->k, a, (int)kv_heads, 0, k->err, sizeof k->err))
			st = ASSOC_ENOMEM;
	}
	free(which);
	free(in);
	free(out);
	free(a);
	free(pv);
	return st;
}

void lib_kernel_ref(AssocKernel *k) { atomic_fetch_add(&k->refs, 1); }

void assoc_kernel_free(AssocKernel *k)
{
	if (!k || atomic_fetch_sub(&k->refs, 1) != 1)
		return;
	release(k);
	if (k->assume_m)
		eval_free(k->assume_m);
	free(k->assume_m);
	spec_carrier_free(k->c);
	free(k->judged_pv);
	spec_unref(k->s);
	free(k);
}

int64_t assoc_kernel_verdicts(const AssocKernel *k) { return k ? k->verdicts : 0; }

const char *assoc_kernel_device(const AssocKernel *k)
{
	return !k || k->failed ? NULL : k->gpu ? "gpu" : k->dev ? k->dev->name : "cpu";
}
