/* cuda.h: CUDA C from a carrier.  The carrier's expressions are lowered to
 * device functions (State, identity, lift, merge, finalize, map, ...) that
 * the templates in templates/ call; a module holds every tuning variant of
 * one carrier as extern "C" kernels named by a hash of the lowered carrier.
 * Names from the spec never reach the generated code. */
#ifndef ASSOC_CUDA_H
#define ASSOC_CUDA_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "compiler/front/spec.h"
#include "runtime/variant.h"

/* Query rows a block of attention variant v takes. */
static inline int cuda_attn_rows(const Variant *v)
{
	return v->wg ? 64 * v->wg : v->nt / 32 / (v->ks > 1 ? v->ks : 1) * v->mt * 16; /* ws: the producer has none */
}

/* A carrier matched to one of the attention template's contracts
 * (cuda_attn.c): the state fields by role, the inputs q, k, v (slots),
 * head dims, the score with dot(q, k) as the symbol y0, the finalize
 * outputs with the vector field as the scalar symbol y1, and the evidence
 * of the match.  sum: the weighted-sum contract, where o sums w v for an
 * elementwise weight w (weight, with y0) and fm, fl are scalar fields
 * that sum weights of their own (-1 where absent; their lifts wm, wl with
 * y0 and w as the symbol y2), the template's m and l slots carrying them. */
typedef struct {
	int fm, fl, fo, q, k, v, d, dv, bf16;
	int f8; /* q, k and v in f8e4m3: converted to f16 on their way into shared memory (ATTN_F8) */
	int sum;
	int tile_mul; /* the mask's interval hook (attn_tile) multiplies intervals */
	/* the score is not linear in the dot (cuda_attn_linear) or the mask
	 * divides or calls the math library: per-score work in the key loop,
	 * whose slow paths are calls */
	int heavy;
	int mask_calls; /* the mask divides or calls the math library */
	int qi, ki, vi; /* the slots of q, k and v in CudaArgs.in */
	Expr *score;
	Expr *weight, *wm, *wl;
	Expr *fin[16];
	char evidence[640];
} CudaAttn;
/* 0 when c implements the contract; -1 with the reason. */
int cuda_attn_match(Carrier *c, CudaAttn *at, char *why, size_t n);

typedef struct {
	char *src;          /* the module: prelude, carrier, templates, kernels */
	char *hooks;        /* the carrier's device functions alone */
	char prefix[24];    /* "asc_" and 16 hex digits of the lowered carrier's hash */
	Variant *var;
	int nvar;
	size_t state_size;  /* sizeof(State): the workspace unit of split kernels */
	int vec_ok;         /* the carrier's element inputs allow 16-byte loads */
	Family base;    /* rowreduce, rowmap, scan or attention */
	CudaAttn attn;      /* base == FAM_ATTN: the match */
	char explain[1024]; /* which template, and why */
	int smem_max;       /* shared bytes per block the device allows (0: not known); cuda_pick keeps within it */
	int h90;            /* attention on sm_90a: the Hopper template's variants too (wg > 0) */
	char name[64];      /* cuda_module_name: the carrier's name, which the kernels' names start with; "": prefix */
	int commutes;       /* the merge may take positions in any order: claimed, or check_commutes proved it */
	char order_why[400]; /* how that is known, or why not (then each thread folds a contiguous run) */
	int tf;             /* the row templates may fold tiles in the certificate's coordinates (variant tf) */
	char tf_why[320];   /* what that fold does, or why the carrier has none */
	size_t tf_hooks[2]; /* [start, end) of the tile fold's hooks in hooks: a module none of whose kernels folds tiles holds a stub there */
	int paged;          /* cuda_module_paged: keys a page of the attention kernels' paged K and V; 0: unpaged */
	char unpaged_prefix[24]; /* paged: the prefix of the same module unpaged, which its tuning choices are kept under */
	int cluster;        /* the target has thread-block clusters (sm_90 or newer, or not named): variants with cl */
	int bulk_bytes;     /* bytes of a position of the element inputs, of which the stages of variants with bk are made */
	int words[3];       /* 32-bit words of the state, of an element's inputs and of a row's: the registers a variant needs */
} CudaModule;

/* Kernel argument block; the same layout as Args in templates/common.cuh. */
enum { CUDA_MAXIN = 16, CUDA_MAXOUT = 16, CUDA_MAXP = 16 };
typedef struct {
	const void *in[CUDA_MAXIN]; /* element, then column, then row inputs */
	void *out[CUDA_MAXOUT];     /* finalize, then map outputs */
	void *ws;
	int rows, len, split, chunk;
	double prm[CUDA_MAXP];
	int heads, kv_heads; /* attention: query heads, key/value heads (both 1 elsewhere) */
} CudaArgs;

/* The parameter block of the Hopper attention template's kernels
 * (attention_sm90.cuh: ArgsTma): Args, then the tensor maps of q, k and
 * v (CUtensorMap: 128 bytes, 64-byte aligned). */
typedef struct {
	CudaArgs a;
	_Alignas(64) unsigned char maps[3][128];
} CudaArgsTma;
/* One tensor map's layout: rank dims (innermost first, in elements), the
 * byte strides of dims 1.., the box, the elements' address, their bytes
 * (2: f16 or bf16, 1: e4m3) and the swizzle in bytes (a box row's: 128
 * for 16-bit elements, 64 for e4m3's rows of 64). */
typedef struct {
	int rank;
	unsigned long long dims[3], strides[2];
	unsigned box[3];
	const void *base;
	int elem_bytes, swizzle;
} CudaTmap;
/* The maps of q, k and v for variant v (wg > 0) of m on the shape in a
 * (a->rows query rows a head, a->heads, a->kv_heads, a->len): boxes of 64
 * columns with the swizzle of their rows (128 bytes, e4m3's 64), as
 * attention_sm90.cuh reads them. */
void cuda_attn90_maps(const CudaModule *m, int v, const CudaArgs *a, CudaTmap out[3]);

/* Lower c into a module of the default variants for its template, or of
 * the one variant that config names ("rowmap:nt=256,acc=2,vec=4,warp=0,items=0").
 * 0, or -1 with msg. */
int cuda_module(Carrier *c, const char *config, CudaModule *m, char *msg, size_t n);
/* The same for a target arch (sm_NN, compute_NN; NULL: the newest): below
 * ATTN_MIN_SM the attention template is not taken, and m->explain says so;
 * smem, the shared bytes a block may opt in to on the device (0: not
 * known), sizes the default variants that would outgrow it (m->smem_max). */
int cuda_module_for(Carrier *c, const char *config, const char *arch, int smem, CudaModule *m, char *msg, size_t n);
/* cuda_module_for whose attention kernels read K and V from a pool of
 * pages of page_size keys [pages][page_size][kv_heads][d] through a block
 * table, the input after the carrier's own (Args.in[ATTN_PI]: the
 * sequence's row of int32 page indices); the Hopper template left out.  A
 * carrier on the row templates gets its module unpaged (m->paged 0). */
/* The workspace of a paged batch's launch, in 4-byte words a sequence:
 * a run's of rows queries (the most of any sequence) and split splits
 * (attn_paged_seq in templates/attention.cuh). */
/* 1 when variant v of a paged module runs a whole batch in one launch
 * (grid.y: the sequence; templates/attention.cuh, attn_paged_seq): its
 * tiles hold 16 query rows a warp (mt = 1).  Its others run a sequence a
 * launch, through that sequence's row of the block table. */
int cuda_paged_batch(const CudaModule *m, int v);
/* cuda_pick among the variants that run a batch in one launch; -1 when
 * m has none. */
int cuda_paged_pick(const CudaModule *m, int rows, int len, int split);
size_t cuda_paged_ws_words(const CudaModule *m, int heads, int kv_heads, int rows, int split);
int cuda_module_paged(Carrier *c, const char *config, const char *arch, int smem, int page_size, CudaModule *m,
		      char *msg, size_t n);
enum { ATTN_MIN_SM = 80 };
/* The module of the tuning space (assoc tune): the default variants and
 * more (attention: other pipeline stages and keys per tile), any of which
 * cuda_module then builds alone from its configuration string. */
int cuda_module_space(Carrier *c, CudaModule *m, char *msg, size_t n);
int cuda_module_space_for(Carrier *c, const char *arch, int smem, CudaModule *m, char *msg, size_t n);
void cuda_module_free(CudaModule *m);
/* m's source (malloc'd) with only the kernels of the variants want marks
 * (want[v] for v < m->nvar), each named as in m->src, and only the
 * templates they use: one variant compiled alone, launched by the names
 * cuda_kernel_names and cuda_plan give for m. */
char *cuda_module_src_of(const CudaModule *m, const unsigned char *want);
/* Device.config of the devices that run generated CUDA: variant_parse's verdict. */
int cuda_config_ok(const char *cfg, char *msg, size_t n);

/* Kernels to launch for variant var on a shape, in order; smem: bytes of
 * dynamic shared memory per block. */
typedef struct {
	char name[64];
	unsigned grid, block, smem;
	unsigned cluster; /* blocks of a thread-block cluster in x (variant cl); 0: none */
} CudaLaunch;

typedef struct {
	CudaLaunch k[3];
	int nk;
	int split, chunk;
	size_t ws_bytes;
	/* bytes of the workspace from zero_at on that must be zero before the
	 * first launch of this layout (attention's split counters; the kernels
	 * leave them zero again) */
	size_t zero_at, zero_bytes;
	double loads, stores; /* global accesses per element of the row, by the template's design */
} CudaPlan;

void cuda_plan(const CudaModule *m, int var, int rows, int len, int split, CudaPlan *p);
/* The same with heads (attention: grid over heads, query tiles and splits). */
void cuda_plan_h(const CudaModule *m, int var, int rows, int len, int heads, int split, CudaPlan *p);
/* Attention: the split count of the key axis for a shape on sms
 * multiprocessors (few query tiles, long keys: split-KV decoding). */
int cuda_attn_split(const CudaModule *m, int var, int rows, int len, int heads, int sms);
/* The variant for a shape: splits of the reduced axis when asked (or for
 * long rows and few rows), a warp per row for short rows, the row kept on
 * chip where it fits. */
int cuda_pick(const CudaModule *m, int rows, int len, int split);
/* The type attention variant v rounds P to before P V (a TY_ kind; 0:
 * float32's precision, pv > 1): the inputs' (f16 for e4m3 converted to
 * f16), e4m3 on the Hopper template's e4m3 path. */
/* Where variant v, made of the configuration config, differs from it (a
 * key fitted to the carrier or the target): 1, with a note naming the
 * keys that changed and the variant taken instead, after verb ("running",
 * "emitting"). */
int cuda_config_note(const CudaModule *m, int v, const char *config, const char *verb, char *note, size_t n);
/* The split --config asks for (split) over len positions: at most len,
 * one position a split (more are blocks of nothing: 65536 over 37
 * positions ran 14 s on emu), with a note that says so, else "". */
int cuda_config_split(const char *config, int split, int len, char *note, size_t n);
int cuda_p_round_kind(const CudaModule *m, int v);
/* Bytes of dynamic shared memory variant v's kernels take per block. */
unsigned cuda_smem(const CudaModule *m, int v);
/* 1 when variant v fits the device (m->smem_max), else 0 with the reason. */
int cuda_fits(const CudaModule *m, int v, char *why, size_t n);
/* 1 when variant v runs rows of len (a row kept on chip must fit in it),
 * else 0 with the reason. */
int cuda_takes_len(const CudaModule *m, int v, int len, char *why, size_t n);
/* What variant v of a row template does, in words, into buf (emit
 * --explain: the threads a row, the loads each keeps in flight, where the
 * row stays for the map pass, how a tile is folded). */
void cuda_variant_explain(const CudaModule *m, int v, char *buf, size_t n);
/* The index of the variant config names in m (as fitted to c), or -1. */
int cuda_find_variant(const CudaModule *m, Carrier *c, const char *config);
/* Kernel names of variant v, for tools (up to 3). */
int cuda_kernel_names(const CudaModule *m, int v, char names[3][64]);
/* Rename m's kernels after the carrier (`emit --header`): the carrier's
 * name, the family and the variant's fields ("online_softmax_rowmap_nt256_acc2_v4",
 * v: 4-wide loads), in m->src and in what cuda_kernel_names and the plans
 * give.  -1 with msg where a name would pass 63 characters. */
int cuda_module_name(CudaModule *m, const char *carrier, char *msg, size_t n);
/* The launch contract of m's kernels as a C header (cuda_header.c):
 * the argument block as a C struct, the arrays' and params' slots, and
 * per variant a function giving each kernel's grid, block, shared memory
 * and the workspace for a shape, as cuda_plan_h computes them.  m named
 * by cuda_module_name. */
void cuda_header(Carrier *c, const CudaModule *m, FILE *out);

/* ptxas -v on ptx for arch: per kernel registers, spills, shared memory
 * and stack bytes (spills and frames of the functions it calls included;
 * 0 stack when ptxas inlined every call).  The number of kernels, or -1
 * with msg (no ptxas, or ptxas failed). */
typedef struct {
	char name[64];
	int regs, spill_st, spill_ld, smem, stack;
} CudaKStat;
int cuda_ptxas_stats(const char *ptx, const char *arch, CudaKStat *st, int max, char *msg, size_t n);
/* The same from a log of ptxas -v (modified); the number of kernels. */
int cuda_ptxas_parse(char *log, CudaKStat *st, int max);

/* The copy kernel of bench's baseline (cuda_copy.c): CUDA C of its own,
 * for NVRTC or the emulator, one kernel CUDA_COPY_KERNEL of blocks of
 * CUDA_COPY_BLOCK threads taking CudaCopyArgs; bytes may be odd and the
 * pointers of any alignment. */
#define CUDA_COPY_KERNEL "asc_copy16"
#define CUDA_COPY_BLOCK 256
typedef struct {
	const void *src;
	void *dst;
	unsigned long long bytes;
} CudaCopyArgs;
const char *cuda_copy_src(void);
/* Blocks for a copy of bytes: a block for every 256 16-byte words, at
 * most as many as the device's SMs hold at once. */
unsigned cuda_copy_grid(int sms, int threads_per_sm, unsigned long long bytes);

/* Embedded sources (templates/, runtime/emu/emu.hpp). */
typedef struct {
	const char *name;
	const char *text;
	size_t len;
} Blob;
const Blob *blob_find(const char *name);
/* A hash of the GPU templates' text: tuned choices made with other
 * templates are not reused (the tuning cache key holds it). */
uint64_t blob_templates_hash(void);
/* FNV-1a, 64 bits, of s[0..n) continuing from h (CUDA_FNV0 to start). */
#define CUDA_FNV0 0xcbf29ce484222325ull
uint64_t cuda_fnv(uint64_t h, const char *s, size_t n);

#endif
