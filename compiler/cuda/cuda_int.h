/* cuda_int.h: internals shared by the CUDA generator's files. */
#ifndef ASSOC_CUDAINT_H
#define ASSOC_CUDAINT_H

#include "compiler/util/buf.h"
#include "compiler/cuda/cuda.h"

struct Fn;
const char *cuda_ctype(int kind);
void cuda_literal(Buf *b, int kind, double v);
void cuda_load_expr(Buf *b, int storage, int kind, const char *src, int t, int len);
/* An input's type in memory (f16, bf16 and f8e4m3 as their bit patterns)
 * and the templates' function that converts it to float ("" where none). */
const char *cuda_mem_type(int storage);
const char *cuda_load_cvt(int storage);
/* A function body: temporaries for the DAG of each expression, once. */
void cuda_fn_begin(struct Fn **f, Carrier *c, Buf *b);
void cuda_fn_end(struct Fn *f);
void cuda_fn_assign(struct Fn *f, const char *dst, Expr *e, int len);
void cuda_fn_return(struct Fn *f, Expr *e); /* temporaries, then `return e;` */
/* The body of a bool hook: `return mask;`, or `return true;` without one. */
void cuda_mask_body(Carrier *c, Buf *b, Expr *mask);
/* tile_fold and ASC_TRANSPORT, for the row templates (ok: prove_transport's). */
void cuda_transport_hooks(Carrier *c, const int *moving, int ok, Buf *b);
/* The attention template's hooks for a matched carrier (cuda_attn.c). */
void cuda_attn_hooks(Carrier *c, const CudaAttn *at, Buf *b);
/* Whether the score is linear in the dot (the hooks' ATTN_LIN): full tiles
 * fold its slope into the exponent. */
int cuda_attn_linear(Carrier *c, const CudaAttn *at);

#endif
