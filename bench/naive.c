/* naive.c: straightforward C for the bundled carriers, the floor that
 * `assoc bench` compares the JIT kernel with.  `assoc bench` compiles this
 * file at run time with `cc -O3 -march=native -shared -fPIC` and calls
 * naive_<carrier>(a, lo, hi) on rows [lo, hi), rows spread over the same
 * threads as the kernel.  What a programmer would write first: libm's
 * expf and logf, several passes where the textbook has several passes
 * (safe softmax: max, sum, normalize; variance: mean, then squares), no
 * intrinsics, no fast-math.
 *
 * Args has the layout of CpuArgs (runtime/cpu.h): element inputs, then
 * column, then row inputs; finalize outputs, then map outputs; then the
 * inputs' widths.  Each function is the bundled spec's carrier (its mask
 * and params) whatever spec names it. */
#include <math.h>
#include <stdint.h>
#include <string.h>

typedef struct {
	const void *const *in;
	void *const *out;
	const double *params;
	int64_t rows, len;
	int64_t period; /* 0: the floor runs one head at a time */
	int64_t qpos;   /* 0: bench times unpaged runs, whose i counts rows from 0 */
	const int64_t *width; /* components per element of each input, in the inputs' order */
} Args;

#define ROW(p, i) ((const float *)(p) + (i) * a->len)

void naive_online_softmax(const Args *a, int64_t lo, int64_t hi)
{
	for (int64_t i = lo; i < hi; i++) {
		const float *x = ROW(a->in[0], i);
		float *y = (float *)a->out[1] + i * a->len;
		float m = -INFINITY, s = 0;
		for (int64_t j = 0; j < a->len; j++)
			m = x[j] > m ? x[j] : m;
		for (int64_t j = 0; j < a->len; j++)
			s += expf(x[j] - m);
		for (int64_t j = 0; j < a->len; j++)
			y[j] = expf(x[j] - m) / s;
		((float *)a->out[0])[i] = m + logf(s);
	}
}

void naive_logsumexp(const Args *a, int64_t lo, int64_t hi)
{
	for (int64_t i = lo; i < hi; i++) {
		const float *x = ROW(a->in[0], i);
		float m = -INFINITY, s = 0;
		for (int64_t j = 0; j < a->len; j++)
			m = x[j] > m ? x[j] : m;
		for (int64_t j = 0; j < a->len; j++)
			s += expf(x[j] - m);
		((float *)a->out[0])[i] = m + logf(s);
	}
}

void naive_welford(const Args *a, int64_t lo, int64_t hi)
{
	for (int64_t i = lo; i < hi; i++) {
		const float *x = ROW(a->in[0], i);
		float s = 0, q = 0;
		for (int64_t j = 0; j < a->len; j++)
			s += x[j];
		float mean = s / a->len;
		for (int64_t j = 0; j < a->len; j++)
			q += (x[j] - mean) * (x[j] - mean);
		((float *)a->out[0])[i] = mean;
		((float *)a->out[1])[i] = q / a->len;
	}
}

void naive_sum(const Args *a, int64_t lo, int64_t hi)
{
	for (int64_t i = lo; i < hi; i++) {
		const float *x = ROW(a->in[0], i);
		float s = 0;
		for (int64_t j = 0; j < a->len; j++)
			s += x[j];
		((float *)a->out[0])[i] = s;
	}
}

void naive_max(const Args *a, int64_t lo, int64_t hi)
{
	for (int64_t i = lo; i < hi; i++) {
		const float *x = ROW(a->in[0], i);
		float m = -INFINITY;
		for (int64_t j = 0; j < a->len; j++)
			m = x[j] > m ? x[j] : m;
		((float *)a->out[0])[i] = m;
	}
}

void naive_argmax(const Args *a, int64_t lo, int64_t hi)
{
	for (int64_t i = lo; i < hi; i++) {
		const float *x = ROW(a->in[0], i);
		float m = -INFINITY;
		int32_t at = -1;
		for (int64_t j = 0; j < a->len; j++)
			if (x[j] > m)
				m = x[j], at = (int32_t)j;
		((float *)a->out[0])[i] = m;
		((int32_t *)a->out[1])[i] = at;
	}
}

static float bf16(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

void naive_layer_norm(const Args *a, int64_t lo, int64_t hi)
{
	const float *gamma = a->in[1], *beta = a->in[2];
	float eps = (float)a->params[0];
	for (int64_t i = lo; i < hi; i++) {
		const uint16_t *x = (const uint16_t *)a->in[0] + i * a->len;
		float *y = (float *)a->out[2] + i * a->len;
		float s = 0, q = 0;
		for (int64_t j = 0; j < a->len; j++)
			s += bf16(x[j]);
		float mean = s / a->len;
		for (int64_t j = 0; j < a->len; j++)
			q += (bf16(x[j]) - mean) * (bf16(x[j]) - mean);
		float rstd = 1 / sqrtf(q / a->len + eps);
		for (int64_t j = 0; j < a->len; j++)
			y[j] = (bf16(x[j]) - mean) * rstd * gamma[j] + beta[j];
		((float *)a->out[0])[i] = mean;
		((float *)a->out[1])[i] = rstd;
	}
}

/* The bundled attention: causal (j <= i), scores q . k * scale, softmax
 * weights over the keys, out = their weighted mean of v, lse.  Scores into
 * a buffer, then the max, the exps and the weighted sum: the textbook's
 * passes. */
void naive_attention(const Args *a, int64_t lo, int64_t hi)
{
	const _Float16 *k = a->in[0], *v = a->in[1], *q = a->in[2];
	int64_t d = a->width[0], dv = a->width[1];
	float scale = (float)a->params[0];
	float s[a->len > 0 ? a->len : 1];
	for (int64_t i = lo; i < hi; i++) {
		float *out = (float *)a->out[0] + i * dv;
		int64_t n = i + 1 < a->len ? i + 1 : a->len;
		float m = -INFINITY, l = 0;
		for (int64_t j = 0; j < n; j++) {
			float dot = 0;
			for (int64_t t = 0; t < d; t++)
				dot += (float)q[i * d + t] * (float)k[j * d + t];
			s[j] = dot * scale;
			m = s[j] > m ? s[j] : m;
		}
		for (int64_t t = 0; t < dv; t++)
			out[t] = 0;
		for (int64_t j = 0; j < n; j++) {
			float p = expf(s[j] - m);
			l += p;
			for (int64_t t = 0; t < dv; t++)
				out[t] += p * (float)v[j * dv + t];
		}
		for (int64_t t = 0; t < dv; t++)
			out[t] /= l;
		((float *)a->out[1])[i] = m + logf(l);
	}
}

/* The bundled MoE router: softmax over a row's experts (NaN logits left
 * out), the 8 largest logits kept by insertion (equal ones in expert
 * order), their probabilities renormalized over the 8, as a router in
 * PyTorch is written first (softmax, topk, divide by the sum). */
void naive_moe_topk_routing(const Args *a, int64_t lo, int64_t hi)
{
	enum { K = 8 };
	for (int64_t i = lo; i < hi; i++) {
		const float *x = ROW(a->in[0], i);
		int32_t *idx = (int32_t *)a->out[0] + i * K;
		float *w = (float *)a->out[1] + i * K;
		float m = -INFINITY, s = 0, top[K], t = 0;
		for (int64_t j = 0; j < a->len; j++)
			m = x[j] > m ? x[j] : m;
		for (int64_t j = 0; j < a->len; j++)
			if (x[j] == x[j])
				s += expf(x[j] - m);
		for (int k = 0; k < K; k++)
			top[k] = -INFINITY, idx[k] = -1;
		for (int64_t j = 0; j < a->len; j++) {
			int p = K;
			while (p > 0 && x[j] > top[p - 1]) /* NaN is never greater */
				p--;
			if (p == K)
				continue;
			for (int k = K - 1; k > p; k--)
				top[k] = top[k - 1], idx[k] = idx[k - 1];
			top[p] = x[j], idx[p] = (int32_t)j;
		}
		for (int k = 0; k < K; k++) {
			w[k] = idx[k] < 0 ? 0 : expf(top[k] - m) / s;
			t += w[k];
		}
		for (int k = 0; k < K; k++)
			w[k] /= t;
	}
}
