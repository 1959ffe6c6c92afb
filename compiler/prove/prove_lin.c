/* prove_lin.c: exact rationals, linear forms, regions (ties eliminated by
 * substitution, inequalities tested by Fourier-Motzkin), arithmetic modulo
 * 2^61-1 and the sign lattice. */
#include "compiler/prove/prove_int.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- rationals: int64 with overflow detection (overflow makes results unknown) ---- */

static __int128 gcd128(__int128 a, __int128 b)
{
	if (a < 0)
		a = -a;
	if (b < 0)
		b = -b;
	while (b) {
		__int128 t = a % b;
		a = b;
		b = t;
	}
	return a;
}

static Q q_norm(Pv *p, __int128 n, __int128 d)
{
	if (d < 0)
		n = -n, d = -d;
	__int128 g = gcd128(n, d);
	if (g > 1)
		n /= g, d /= g;
	if (n > INT64_MAX || n < -INT64_MAX || d > INT64_MAX || d == 0) {
		p->overflow = 1;
		return lin_q_int(0);
	}
	return (Q){(int64_t)n, (int64_t)d};
}

Q lin_q_int(int64_t n) { return (Q){n, 1}; }
Q lin_q_neg(Q x) { return (Q){-x.n, x.d}; }

Q lin_q_add(Pv *p, Q x, Q y)
{
	if (x.d == 1 && y.d == 1)
		return q_norm(p, (__int128)x.n + y.n, 1);
	return q_norm(p, (__int128)x.n * y.d + (__int128)y.n * x.d, (__int128)x.d * y.d);
}

Q lin_q_mul(Pv *p, Q x, Q y) { return q_norm(p, (__int128)x.n * y.n, (__int128)x.d * y.d); }

Q lin_q_div(Pv *p, Q x, Q y)
{
	if (!y.n) {
		p->overflow = 1;
		return lin_q_int(0);
	}
	return q_norm(p, (__int128)x.n * y.d, (__int128)x.d * y.n);
}

/* A double as an exact rational; 0 when it does not fit (huge or tiny). */
int lin_q_from_double(double v, Q *q)
{
	if (!isfinite(v))
		return 0;
	int e;
	double m = frexp(v, &e); /* v = m * 2^e, 0.5 <= |m| < 1 */
	int64_t n = (int64_t)ldexp(m, 53);
	e -= 53;
	while (e < 0 && !(n & 1))
		n >>= 1, e++;
	if (e >= 0) {
		if (e > 62 || llabs(n) > (INT64_MAX >> e))
			return 0;
		*q = lin_q_int(n * ((int64_t)1 << e)); /* n may be negative: no shift of it */
		return 1;
	}
	if (e < -62)
		return 0;
	*q = (Q){n, (int64_t)1 << -e};
	return 1;
}

/* ---- linear forms ---- */

void lin_zero(Lin *l)
{
	for (int i = 0; i <= PV_MAXV; i++)
		l->c[i] = lin_q_int(0);
}

void lin_add(Pv *p, Lin *out, const Lin *x, const Lin *y, Q ky)
{
	for (int i = 0; i <= PV_MAXV; i++)
		out->c[i] = y->c[i].n ? lin_q_add(p, x->c[i], lin_q_mul(p, ky, y->c[i])) : x->c[i];
}

void lin_scale(Pv *p, Lin *out, const Lin *x, Q k)
{
	for (int i = 0; i <= PV_MAXV; i++)
		out->c[i] = x->c[i].n ? lin_q_mul(p, x->c[i], k) : lin_q_int(0);
}

int lin_is_const(const Lin *l)
{
	for (int i = 0; i < PV_MAXV; i++)
		if (l->c[i].n)
			return 0;
	return 1;
}

int lin_eq(const Lin *x, const Lin *y)
{
	for (int i = 0; i <= PV_MAXV; i++)
		if (x->c[i].n != y->c[i].n || (x->c[i].n && x->c[i].d != y->c[i].d))
			return 0;
	return 1;
}

static void q_str(Q q, char *buf, size_t n)
{
	if (q.d == 1)
		snprintf(buf, n, "%lld", (long long)q.n);
	else
		snprintf(buf, n, "%lld/%lld", (long long)q.n, (long long)q.d);
}

void lin_str(const Pv *p, const Lin *l, char *buf, size_t n)
{
	size_t len = 0;
	buf[0] = 0;
	for (int i = 0; i <= PV_MAXV && len + 1 < n; i++) {
		Q q = l->c[i];
		if (!q.n || (i < PV_MAXV && i >= p->nv))
			continue;
		char num[64], name[80] = "";
		int neg = q.n < 0;
		q_str(neg ? lin_q_neg(q) : q, num, sizeof num);
		if (i < PV_MAXV)
		{
			if (p->vop[i])
				snprintf(name, sizeof name, "%c.%s", p->vop[i], p->vname[i]);
			else
				snprintf(name, sizeof name, "%s", p->vname[i]);
		}
		int unit = i < PV_MAXV && q.d == 1 && (q.n == 1 || q.n == -1);
		len += snprintf(buf + len, n - len, "%s%s%s%s", len ? (neg ? " - " : " + ") : (neg ? "-" : ""),
				unit ? "" : num, unit || i == PV_MAXV ? "" : "*", name);
	}
	if (!len)
		snprintf(buf, n, "0");
}

double lin_eval_f(const Lin *l, const double *val)
{
	double s = (double)l->c[PV_MAXV].n / (double)l->c[PV_MAXV].d;
	for (int i = 0; i < PV_MAXV; i++)
		if (l->c[i].n)
			s += (double)l->c[i].n / (double)l->c[i].d * val[i];
	return s;
}

/* ---- regions ---- */

static void region_add(Region *r, const Lin *l, int strict)
{
	if (r->ncon < PV_MAXCON) {
		r->con[r->ncon] = *l;
		r->strict[r->ncon++] = (uint8_t)strict;
	}
	/* past the cap a constraint is dropped: the region only grows, which never
	 * loses a case (pruning is an optimization, not part of the proof) */
}

void lin_region_init(Pv *p, Region *r)
{
	memset(r, 0, sizeof *r);
	for (int v = 0; v < p->nv; v++) {
		uint8_t s = p->vsign[v];
		Lin l;
		lin_zero(&l);
		if (!(s & SG_NEG) || !(s & SG_POS)) {
			int strict = !(s & SG_ZERO);
			l.c[v] = lin_q_int(s & SG_POS ? 1 : -1);
			/* an i32 above 0 is at least 1: over the rationals a
			 * region such as a.n + b.n < 2 for two counts above 0
			 * would keep a.n = b.n = 1/2, where no comparison of
			 * a.n with 1 has a side */
			if (strict && p->vi32[v]) {
				l.c[PV_MAXV] = lin_q_int(-1);
				strict = 0;
			}
			region_add(r, &l, strict);
		}
	}
	/* the invariants of each operand a, b, c: field f of operand w is variable w * nstate + f */
	int ns = p->ninv ? p->c->nstate : 0;
	for (int i = 0; i < p->ninv; i++)
		for (int w = 0; w < 3 && (w + 1) * ns <= p->nv; w++) {
			Lin l;
			lin_zero(&l);
			l.c[PV_MAXV] = p->inv[i].c[PV_MAXV];
			for (int f = 0; f < ns; f++)
				l.c[w * ns + f] = p->inv[i].c[f];
			region_add(r, &l, 0);
		}
	/* last, so that the cap drops them first: an i32's range, which
	 * decides min(a.m, INT32_MAX) and a.m < INT32_MAX against the
	 * identity's extreme (i64's ends are no 64-bit rationals); each end
	 * only where the constraints above do not imply it, so that the
	 * invariants assume_live fits in take the room of the ends they bound */
	uint8_t end[PV_MAXV][2]; /* 1: the end is implied by a sign or an invariant's bound; 2: by another field's end */
	memset(end, 0, sizeof end);
	for (int v = 0; v < p->nv; v++) {
		end[v][0] = !(p->vsign[v] & SG_NEG);
		end[v][1] = !(p->vsign[v] & SG_POS);
	}
	for (int i = 0; i < p->ninv; i++) {
		int f = -1, nf = 0;
		for (int v = 0; v < ns; v++)
			if (p->inv[i].c[v].n)
				f = v, nf++;
		const Q *k = &p->inv[i].c[PV_MAXV];
		if (nf == 1) { /* c f + k >= 0: f >= -k/c for c > 0, f <= -k/c for c < 0 */
			const Q *c = &p->inv[i].c[f];
			double b = -((double)k->n / k->d) / ((double)c->n / c->d);
			int up = c->n < 0;
			if (up ? b <= INT32_MAX : b >= INT32_MIN)
				for (int w = 0; w < 3 && (w + 1) * ns <= p->nv; w++)
					end[w * ns + f][up] = 1;
		}
	}
	/* f - g >= 0 (f >= g) gives f's low end from g's, g's high end from
	 * f's, where that end is itself kept: taken in order, a field leans
	 * on one that does not lean in turn, so no cycle drops both */
	for (int v = 0; v < p->nv; v++)
		for (int side = 0; side < 2 && v < 3 * ns; side++)
			for (int i = 0; i < p->ninv && !end[v][side]; i++) {
				const Lin *l = &p->inv[i];
				int w = v / ns, f = v % ns, g = -1, nf = 0;
				for (int u = 0; u < ns; u++)
					nf += l->c[u].n != 0;
				if (nf != 2 || l->c[PV_MAXV].n || l->c[f].n == 0)
					continue;
				for (int u = 0; u < ns; u++)
					if (u != f && l->c[u].n && l->c[u].n == -l->c[f].n && l->c[u].d == l->c[f].d)
						g = u;
				/* f >= g leans f's low end (side 0) on g's; g <= f, g's high end on f's */
				if (g >= 0 && (l->c[f].n > 0) == (side == 0) && p->vi32[w * ns + g] && end[w * ns + g][side] != 2)
					end[v][side] = 2;
			}
	for (int v = 0; v < p->nv; v++) {
		if (!p->vi32[v])
			continue;
		Lin l;
		lin_zero(&l);
		if (!end[v][0]) {
			l.c[v] = lin_q_int(1);
			l.c[PV_MAXV] = lin_q_int(-(int64_t)INT32_MIN);
			region_add(r, &l, 0);
		}
		if (!end[v][1]) {
			l.c[v] = lin_q_int(-1);
			l.c[PV_MAXV] = lin_q_int(INT32_MAX);
			region_add(r, &l, 0);
		}
	}
}

void lin_region_var(const Region *r, int v, Lin *out)
{
	if (r->issub >> v & 1) {
		*out = r->sub[v];
		return;
	}
	lin_zero(out);
	out->c[v] = lin_q_int(1);
}

/* Replace variable v by s in l. */
static void lin_subst(Pv *p, Lin *l, int v, const Lin *s)
{
	Q k = l->c[v];
	if (!k.n)
		return;
	l->c[v] = lin_q_int(0);
	lin_add(p, l, l, s, k);
}

static int pick_pivot(const Lin *l)
{
	int best = -1;
	for (int i = 0; i < PV_MAXV; i++)
		if (l->c[i].n) {
			if (l->c[i].d == 1 && (l->c[i].n == 1 || l->c[i].n == -1))
				return i;
			if (best < 0)
				best = i;
		}
	return best;
}

/* m scaled to integer coefficients and constant, less 1, where every
 * variable m names is an i32: at integer points m > 0 is then m' >= 0.
 * 0 where m names another variable or the scaling overflows. */
static int int_tightened(Pv *p, const Lin *m, Lin *out)
{
	__int128 den = 1;
	int any = 0;
	for (int i = 0; i < PV_MAXV; i++)
		if (m->c[i].n) {
			if (i >= p->nv || !p->vi32[i])
				return 0;
			any = 1;
		}
	for (int i = 0; i <= PV_MAXV && any; i++)
		if (m->c[i].n) {
			den = den / gcd128(den, m->c[i].d) * m->c[i].d;
			if (den > INT64_MAX)
				return 0;
		}
	if (!any)
		return 0;
	int over = p->overflow;
	p->overflow = 0;
	lin_scale(p, out, m, lin_q_int((int64_t)den));
	out->c[PV_MAXV] = lin_q_add(p, out->c[PV_MAXV], lin_q_int(-1));
	int ok = !p->overflow;
	p->overflow = over;
	return ok;
}

int lin_region_assume(Pv *p, const Region *r, const Lin *l, int rel, Region *out)
{
	*out = *r;
	if (rel != '=') {
		Lin m, k;
		lin_scale(p, &m, l, lin_q_int(rel == '>' ? 1 : -1));
		if (!int_tightened(p, &m, &k)) {
			region_add(out, &m, 1);
			return lin_region_feasible(p, out);
		}
		/* i32 variables alone: m > 0 is k >= 0, and where the region
		 * leaves no room for k > 0, k = 0, which substitutes a
		 * variable (a.at < 0 under the invariant at >= -1 is a.at =
		 * -1, where a merge's branches can be compared) */
		region_add(out, &k, 1);
		if (lin_region_feasible(p, out)) {
			*out = *r;
			region_add(out, &k, 0);
			return 1;
		}
		return lin_region_assume(p, r, &k, '=', out);
	}
	int v = pick_pivot(l);
	if (v < 0)
		return l->c[PV_MAXV].n == 0;
	/* l = k v + rest = 0  =>  v = -rest / k */
	Lin s = *l;
	Q k = s.c[v];
	s.c[v] = lin_q_int(0);
	lin_scale(p, &s, &s, lin_q_div(p, lin_q_int(-1), k));
	for (int i = 0; i < PV_MAXV; i++)
		if (out->issub >> i & 1)
			lin_subst(p, &out->sub[i], v, &s);
	for (int i = 0; i < out->ncon; i++)
		lin_subst(p, &out->con[i], v, &s);
	out->sub[v] = s;
	out->issub |= (uint64_t)1 << v;
	return lin_region_feasible(p, out);
}

/* Rows of Fourier-Motzkin: integer coefficients, [PV_MAXV] the constant. */
typedef struct {
	int64_t c[PV_MAXV + 1];
	uint8_t strict;
} Row;

static int row_from_lin(const Lin *l, int strict, Row *row)
{
	__int128 den = 1;
	for (int i = 0; i <= PV_MAXV; i++)
		if (l->c[i].n) {
			den = den / gcd128(den, l->c[i].d) * l->c[i].d;
			if (den > INT64_MAX)
				return 0;
		}
	for (int i = 0; i <= PV_MAXV; i++) {
		__int128 v = (__int128)l->c[i].n * (den / l->c[i].d);
		if (v > INT64_MAX || v < -INT64_MAX)
			return 0;
		row->c[i] = (int64_t)v;
	}
	row->strict = (uint8_t)strict;
	return 1;
}

/* x * |y[v]| + y * |x[v]| eliminates v; 0 on overflow. */
static int row_combine(const Row *x, const Row *y, int v, Row *out)
{
	__int128 kx = y->c[v] < 0 ? -(__int128)y->c[v] : y->c[v];
	__int128 ky = x->c[v] < 0 ? -(__int128)x->c[v] : x->c[v];
	__int128 t[PV_MAXV + 1], g = 0;
	for (int i = 0; i <= PV_MAXV; i++) {
		t[i] = x->c[i] * kx + y->c[i] * ky;
		g = gcd128(g, t[i]);
	}
	for (int i = 0; i <= PV_MAXV; i++) {
		if (g > 1)
			t[i] /= g;
		if (t[i] > INT64_MAX || t[i] < -INT64_MAX)
			return 0;
		out->c[i] = (int64_t)t[i];
	}
	out->strict = x->strict | y->strict;
	return 1;
}

static int row_const_ok(const Row *r)
{
	for (int i = 0; i < PV_MAXV; i++)
		if (r->c[i])
			return -1;
	return r->strict ? r->c[PV_MAXV] > 0 : r->c[PV_MAXV] >= 0;
}

static int row_eq(const Row *x, const Row *y)
{
	return x->strict == y->strict && !memcmp(x->c, y->c, sizeof x->c);
}

/* Append r to rows[0..m) unless already there; the new count, -1 when full. */
static int row_push(Row *rows, int m, const Row *r)
{
	for (int i = 0; i < m; i++)
		if (row_eq(&rows[i], r))
			return m;
	if (m == PV_FMROWS)
		return -1;
	rows[m] = *r;
	return m + 1;
}

/* One elimination step; the new row count, -1 when pruning gives up, -2 when infeasible. */
static int fm_step(Row *rows, int n, int v, Row *tmp)
{
	int m = 0, np = 0, nn = 0;
	int *pos = malloc(2 * n * sizeof *pos), *neg = pos + n;
	if (!pos)
		return -1;
	for (int i = 0; i < n; i++) {
		if (!rows[i].c[v])
			tmp[m++] = rows[i];
		else if (rows[i].c[v] > 0)
			pos[np++] = i;
		else
			neg[nn++] = i;
	}
	for (int i = 0; i < np && m >= 0; i++)
		for (int j = 0; j < nn && m >= 0; j++) {
			Row t;
			if (!row_combine(&rows[pos[i]], &rows[neg[j]], v, &t)) {
				m = -1;
				break;
			}
			int ok = row_const_ok(&t);
			if (ok == 0)
				m = -2;
			else if (ok < 0)
				m = row_push(tmp, m, &t);
		}
	free(pos);
	if (m > 0)
		memcpy(rows, tmp, m * sizeof *rows);
	return m;
}

/* The variable whose elimination makes the fewest rows (0 when none is left). */
static int fm_pick(const Row *rows, int n, int nv, int *v)
{
	long best = 0;
	int found = 0;
	for (int i = 0; i < nv; i++) {
		long np = 0, nn = 0;
		for (int j = 0; j < n; j++)
			np += rows[j].c[i] > 0, nn += rows[j].c[i] < 0;
		if ((np || nn) && (!found || np * nn - np - nn < best))
			best = np * nn - np - nn, *v = i, found = 1;
	}
	return found;
}

int lin_region_feasible(Pv *p, const Region *r)
{
	if (!p->fm_rows)
		p->fm_rows = malloc(2 * PV_FMROWS * sizeof(Row));
	Row *rows = p->fm_rows;
	if (!rows)
		return 1;
	Row *tmp = rows + PV_FMROWS;
	int n = 0, ok = 1, v = 0;
	for (int i = 0; i < r->ncon && ok; i++) {
		Row t;
		if (!row_from_lin(&r->con[i], r->strict[i], &t))
			continue; /* dropping a constraint only enlarges the region */
		int k = row_const_ok(&t);
		if (k == 0)
			ok = 0;
		else if (k < 0)
			n = row_push(rows, n, &t);
	}
	while (ok && n > 0 && fm_pick(rows, n, p->nv, &v)) {
		n = fm_step(rows, n, v, tmp);
		if (n == -2)
			ok = 0;
	}
	return ok;
}

int lin_region_holds(const Region *r, const double *val)
{
	for (int i = 0; i < r->ncon; i++) {
		double s = lin_eval_f(&r->con[i], val);
		if (r->strict[i] ? !(s > 0) : !(s >= 0))
			return 0;
	}
	return 1;
}

/* ---- arithmetic modulo the Mersenne prime 2^61-1 ---- */

static const uint64_t MP = ((uint64_t)1 << 61) - 1;

uint64_t lin_md_add(uint64_t a, uint64_t b)
{
	uint64_t s = a + b;
	return s >= MP ? s - MP : s;
}

uint64_t lin_md_sub(uint64_t a, uint64_t b) { return a >= b ? a - b : a + MP - b; }

uint64_t lin_md_mul(uint64_t a, uint64_t b)
{
	unsigned __int128 t = (unsigned __int128)a * b;
	uint64_t lo = (uint64_t)(t & MP), hi = (uint64_t)(t >> 61);
	return lin_md_add(lo, hi);
}

uint64_t lin_md_pow(uint64_t a, int64_t k)
{
	if (k < 0)
		return lin_md_pow(lin_md_inv(a), -k);
	uint64_t r = 1;
	for (; k; k >>= 1, a = lin_md_mul(a, a))
		if (k & 1)
			r = lin_md_mul(r, a);
	return r;
}

uint64_t lin_md_inv(uint64_t a) { return lin_md_pow(a, (int64_t)(MP - 2)); }

static uint64_t md_int(int64_t n)
{
	uint64_t m = (uint64_t)(n < 0 ? -n : n) % MP;
	return n < 0 ? lin_md_sub(0, m) : m;
}

uint64_t lin_md_q(Q q) { return lin_md_mul(md_int(q.n), lin_md_inv(md_int(q.d))); }

uint64_t lin_md_double(double v, int *ok)
{
	int e;
	double m = frexp(v, &e);
	if (!isfinite(v)) {
		*ok = 0;
		return 0;
	}
	int64_t n = (int64_t)ldexp(m, 53);
	e -= 53;
	return lin_md_mul(md_int(n), lin_md_pow(2, e));
}

uint64_t lin_rand(uint64_t *s)
{
	/* splitmix64, reduced below the prime */
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return z % MP;
}

/* ---- signs ---- */

static uint8_t sign_each(uint8_t x, uint8_t y, uint8_t (*f)(int, int))
{
	uint8_t r = 0;
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 3; j++)
			if ((x >> i & 1) && (y >> j & 1))
				r |= f(i - 1, j - 1);
	return r;
}

static uint8_t bit(int s) { return (uint8_t)(1 << (s + 1)); }

static uint8_t f_add(int x, int y)
{
	if (x == 0 || y == 0 || x == y)
		return bit(x ? x : y);
	return SG_ANY;
}

static uint8_t f_mul(int x, int y) { return bit(x * y); }
static uint8_t f_max(int x, int y) { return bit(x > y ? x : y); }

uint8_t lin_sign_add(uint8_t x, uint8_t y) { return sign_each(x, y, f_add); }
uint8_t lin_sign_mul(uint8_t x, uint8_t y) { return sign_each(x, y, f_mul); }
uint8_t lin_sign_max(uint8_t x, uint8_t y) { return sign_each(x, y, f_max); }

uint8_t lin_sign_neg(uint8_t x)
{
	return (uint8_t)((x & SG_ZERO) | (x & SG_NEG ? SG_POS : 0) | (x & SG_POS ? SG_NEG : 0));
}

uint8_t lin_sign_of_num(double v)
{
	if (isnan(v))
		return SG_ANY;
	return v > 0 ? SG_POS : v < 0 ? SG_NEG : SG_ZERO;
}
