/* cuda_header.c: the kernels of `assoc emit --target cuda|ptx --header`:
 * named after the carrier, and their launch contract as a C header, so
 * that a program loads the module with the driver (or cupy.RawModule) and
 * launches it without libassoc. */
#include <stdlib.h>
#include <string.h>

#include "compiler/cuda/cuda.h"
#include "compiler/util/buf.h"

/* The longest carrier name that keeps every kernel name within 63
 * characters (an attention variant with its suffix takes 37, a row
 * variant 39). */
enum { NAME_MAX_LEN = 24 };

typedef struct {
	char from[64], to[64];
} Rename;

static int is_ident(char ch) { return ch == '_' || (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'); }

int cuda_module_name(CudaModule *m, const char *carrier, char *msg, size_t n)
{
	if (strlen(carrier) > NAME_MAX_LEN) {
		snprintf(msg, n, "carrier name '%s' is longer than the %d characters its kernels' names have room for",
			 carrier, NAME_MAX_LEN);
		return -1;
	}
	Rename *r = calloc((size_t)m->nvar * 3 + 1, sizeof *r);
	if (!r)
		abort();
	int nr = 0;
	for (int v = 0; v < m->nvar; v++) {
		char old[3][64], new[3][64];
		int nk = cuda_kernel_names(m, v, old);
		snprintf(m->name, sizeof m->name, "%s", carrier);
		cuda_kernel_names(m, v, new);
		m->name[0] = 0;
		for (int k = 0; k < nk; k++) {
			int seen = 0;
			for (int j = 0; j < nr; j++) {
				if (!strcmp(r[j].from, old[k]))
					seen = 1;
				else if (!strcmp(r[j].to, new[k])) { /* two variants the same in every field named */
					snprintf(msg, n, "kernels %s and %s would both be named %s", r[j].from, old[k], new[k]);
					free(r);
					return -1;
				}
			}
			if (!seen) {
				snprintf(r[nr].from, sizeof r[nr].from, "%.63s", old[k]);
				snprintf(r[nr].to, sizeof r[nr].to, "%.63s", new[k]);
				nr++;
			}
		}
	}
	/* every identifier that starts with the prefix: a kernel, its emulator
	 * entry (name_emu), or the prefix itself in the module's comment */
	Buf b = {0};
	size_t pl = strlen(m->prefix);
	const char *s = m->src;
	for (const char *at; (at = strstr(s, m->prefix));) {
		size_t t = pl;
		while (is_ident(at[t]))
			t++;
		char tok[128];
		snprintf(tok, sizeof tok, "%.*s", (int)(t < sizeof tok ? t : sizeof tok - 1), at);
		const char *to = NULL, *tail = "";
		for (int j = 0; j < nr && !to; j++) {
			size_t fl = strlen(r[j].from);
			if (!strcmp(tok, r[j].from))
				to = r[j].to;
			else if (!strncmp(tok, r[j].from, fl) && !strcmp(tok + fl, "_emu"))
				to = r[j].to, tail = "_emu";
		}
		if (at > s && is_ident(at[-1]))
			to = NULL;
		buf_printf(&b, "%.*s%s%s", (int)(at - s), s, to ? to : tok, tail);
		s = at + t;
	}
	buf_puts(&b, s);
	free(m->src);
	m->src = buf_take(&b);
	snprintf(m->name, sizeof m->name, "%s", carrier);
	free(r);
	return 0;
}

/* ---- the header ---- */

/* An input's role and layout; attention's arrays hold their heads one
 * after another (query heads, and key/value heads for columns). */
static const char *role_of(int slot, const Carrier *c, int attn)
{
	if (slot < c->nelem)
		return "element input [rows][len]";
	if (slot < c->nelem + c->ncol)
		return attn ? "column input [kv_heads][len]" : "column input [len]";
	return attn ? "row input [heads][rows]" : "row input [rows]";
}

/* The name of input slot (args.in's order: element, column, row). */
static const char *in_name(const Carrier *c, int slot)
{
	return slot < c->nelem			? c->elem[slot].name
	       : slot < c->nelem + c->ncol ? c->col[slot - c->nelem].name
					   : c->row[slot - c->nelem - c->ncol].name;
}

static void slots(const Carrier *c, const CudaModule *m, FILE *o)
{
	int attn = m->base == FAM_ATTN;
	const char *nm = c->name;
	fprintf(o, "/* The slots of args.in (inputs), args.out (outputs) and args.prm\n"
		   " * (params), with each array's type, components (the last dim) and\n"
		   " * layout, row-major: */\nenum {\n");
	int k = 0;
	const Decl *groups[3] = {c->elem, c->col, c->row};
	int counts[3] = {c->nelem, c->ncol, c->nrow};
	for (int g = 0; g < 3; g++)
		for (int i = 0; i < counts[g]; i++, k++)
			fprintf(o, "\t%s_IN_%s = %d, /* %s x %d, %s */\n", nm, groups[g][i].name, k,
				ty_kind_name(groups[g][i].storage), spec_decl_width(&groups[g][i]), role_of(k, c, attn));
	for (int i = 0; i < c->nfinal + c->nmap; i++) {
		const Def *d = i < c->nfinal ? &c->finalize[i] : &c->map[i - c->nfinal];
		int per_pos = i >= c->nfinal || c->tpl == FAM_SCAN;
		fprintf(o, "\t%s_OUT_%s = %d, /* %s x %d, %s output %s[rows]%s */\n", nm, d->name, i,
			ty_kind_name((TyKind)d->e->ty.kind), d->e->ty.len ? d->e->ty.len : 1,
			i < c->nfinal ? "finalize" : "map", attn ? "[heads]" : "", per_pos ? "[len]" : "");
	}
	for (int i = 0; i < c->nparams; i++)
		fprintf(o, "\t%s_PRM_%s = %d,\n", nm, c->params[i].name, i);
	fprintf(o, "\t%s_NIN = %d, %s_NOUT = %d, %s_NPRM = %d\n};\n\n", nm, c->nelem + c->ncol + c->nrow, nm,
		c->nfinal + c->nmap, nm, c->nparams);
}

/* Variant v's plan function, the arithmetic of cuda_plan_h with v's
 * constants written in. */
static void plan_fn(const CudaModule *m, int v, FILE *o)
{
	const char *nm = m->name;
	const Variant *x = &m->var[v];
	char names[3][64], cfg[160];
	int nk = cuda_kernel_names(m, v, names);
	variant_str(x, cfg, sizeof cfg);
	CudaPlan p; /* the blocks and shared bytes, which no shape changes */
	cuda_plan_h(m, v, 64, 4096, 1, 4, &p);
	fprintf(o, "/* %s */\nstatic inline int %s_plan(int32_t rows, int32_t len, int32_t heads, int32_t kv_heads, "
		   "int32_t split, %s_plan *p)\n{\n", cfg, names[0], nm);
	fprintf(o, "\tmemset(p, 0, sizeof *p);\n"
		   "\tif (rows < 0 || len < 0 || heads < 1 || kv_heads < 1 || heads %% kv_heads)\n\t\treturn -1;\n");
	if (x->fam == FAM_ATTN)
		fprintf(o, "\t/* a run of the query heads that share a key/value head is one run of rows */\n"
			   "\tif ((long long)rows * (heads / kv_heads) > 0x7fffffffLL)\n\t\treturn -1;\n"
			   "\trows *= heads / kv_heads;\n\theads = kv_heads;\n");
	else
		fprintf(o, "\tif (heads != 1)\n\t\treturn -1; /* one head a launch: offset the pointers */\n");
	if (x->fam == FAM_ROWMAP && x->items)
		fprintf(o, "\tif (len > %ld)\n\t\treturn -1; /* a row kept on chip must fit */\n",
			(long)x->items * (x->warp ? 32 : x->nt) * (x->cl ? x->cl : 1));
	fprintf(o, "\tlong long s = split < 1 ? 1 : split, blocks = (long long)heads * (rows < 1 ? 1 : rows);\n"
		   "\tif (s * blocks > 0x7fffffffLL)\n\t\ts = 0x7fffffffLL / blocks > 1 ? 0x7fffffffLL / blocks : 1;\n"
		   "\tlong long chunk = len;\n");
	for (int k = 0; k < nk; k++)
		fprintf(o, "\tp->k[%d].name = \"%s\";\n", k, names[k]);
	switch (x->fam) {
	case FAM_ROWREDUCE: case FAM_ROWMAP:
		fprintf(o, "\ts = 1;\n\tp->nk = 1;\n");
		if (x->cl) /* a cluster of cl blocks a row, a chunk of a multiple of 4 positions each; in 64 bits,
			    * as cuda_plan_h counts, and no grid past 2^31 - 1 blocks */
			fprintf(o, "\tchunk = (((long long)len + %d) / %d + 3) / 4 * 4;\n"
				   "\tif ((long long)(rows < 1 ? 1 : rows) * %d > 0x7fffffffLL)\n\t\treturn -1; /* more blocks than a grid holds */\n"
				   "\tp->k[0].grid = (unsigned)((long long)(rows < 1 ? 1 : rows) * %d);\n"
				   "\tp->k[0].cluster = %d; /* no rows: one cluster, which leaves */\n",
				x->cl - 1, x->cl, x->cl, x->cl, x->cl);
		else if (x->warp)
			fprintf(o, "\tp->k[0].grid = (unsigned)(((long long)rows + %d) / %d);\n", x->nt / 32 - 1, x->nt / 32);
		else
			fprintf(o, "\tp->k[0].grid = (unsigned)rows;\n");
		break;
	case FAM_SPLITK: case FAM_SCAN:
		fprintf(o, "\t/* chunks of a multiple of 4, each at its row's phase of 16 bytes; no block past a row's end */\n"
			   "\tchunk = (((long long)len + s - 1) / s + 3) / 4 * 4;\n"
			   "\tif (chunk > len) /* one chunk, no longer than the row (2^31 would wrap) */\n\t\tchunk = len;\n"
			   "\tif (len > 0 && (len + chunk - 1) / chunk < s)\n\t\ts = (len + chunk - 1) / chunk;\n"
			   "\tp->k[0].grid = p->k[2].grid = (unsigned)(rows * s);\n"
			   "\tp->k[1].grid = (unsigned)(((long long)rows + 63) / 64);\n");
		if (x->fam == FAM_SPLITK)
			fprintf(o, "\tp->nk = %d;\n\tp->ws_bytes = (uint64_t)rows * (uint64_t)(s + 1) * %zu;\n", nk,
				m->state_size);
		else
			fprintf(o, "\tp->nk = 3;\n\tp->ws_bytes = (uint64_t)rows * (uint64_t)s * %zu;\n"
				   "\tif (s == 1) { /* one chunk a row: the down-sweep alone */\n"
				   "\t\tp->k[0] = p->k[2];\n\t\tp->k[0].block = %u;\n\t\tp->nk = 1;\n\t}\n",
				m->state_size, p.k[2].block);
		break;
	case FAM_ATTN: {
		int bm = cuda_attn_rows(x);
		fprintf(o, "\tchunk = (((long long)len + s - 1) / s + %d) / %d * %d;\n"
			   "\tif (chunk > len) /* one chunk, no longer than the row (2^31 would wrap) */\n\t\tchunk = len;\n",
			x->bn - 1, x->bn, x->bn);
		fprintf(o, "\tp->k[0].grid = (unsigned)(heads * (((long long)rows + %d) / %d) * s);\n", bm - 1, bm);
		fprintf(o, "\tp->k[1].grid = (unsigned)(((long long)heads * rows + %u) / %u);\n", p.k[1].block / 32 - 1,
			p.k[1].block / 32);
		fprintf(o, "\tp->nk = 1;\n\tif (s > 1) { /* the partial states, then a counter a query tile or the combine */\n"
			   "\t\tp->ws_bytes = (uint64_t)heads * rows * s * %d;\n", (m->attn.dv + 2) * 4);
		if (x->mt == 1)
			fprintf(o, "\t\tp->zero_at = p->ws_bytes;\n\t\tp->zero_bytes = (uint64_t)heads * ((rows + %d) / %d) * 4;\n"
				   "\t\tp->ws_bytes += p->zero_bytes;\n", bm - 1, bm);
		else
			fprintf(o, "\t\tp->nk = 2;\n");
		fprintf(o, "\t}\n");
		break;
	}
	default:
		break;
	}
	for (int k = 0; k < nk; k++)
		fprintf(o, "\tp->k[%d].block = %u;\n\tp->k[%d].smem = %u;\n", k, p.k[k].block, k, p.k[k].smem);
	if (x->fam == FAM_SCAN)
		fprintf(o, "\tif (p->nk == 1)\n\t\tp->k[0].block = p->k[2].block;\n");
	fprintf(o, "\tp->split = (int32_t)s;\n\tp->chunk = (int32_t)chunk;\n\treturn 0;\n}\n\n");
}

/* The tensor maps of a Hopper variant (wg > 0) for a shape: the layouts
 * cuda_attn90_maps gives, with the variant's boxes written in. */
static void tmaps_fn(const CudaModule *m, int v, FILE *o)
{
	const Variant *x = &m->var[v];
	const char *nm = m->name;
	int d = m->attn.d, dv = m->attn.dv, es = m->attn.f8 ? 1 : 2;
	char names[3][64];
	cuda_kernel_names(m, v, names);
	fprintf(o, "static inline void %s_tmaps(int32_t rows, int32_t len, int32_t heads, int32_t kv_heads, %s_tmap t[3])\n{\n"
		   "\tuint64_t l = len > 0 ? (uint64_t)len : 1, q = (uint64_t)heads * (uint64_t)(rows > 0 ? rows : 0);\n"
		   "\t%s_tmap_set(&t[0], 2, %d, q ? q : 1, 1, %d, 0, 64, %d, 1);\n"
		   "\t%s_tmap_set(&t[1], 3, %d, l, (uint64_t)kv_heads, %d, %d * l, 64, %d, 1);\n"
		   "\t%s_tmap_set(&t[2], 3, %d, l, (uint64_t)kv_heads, %d, %d * l, 64, %d, 1);\n}\n\n",
		names[0], nm, nm, d, d * es, 64 * x->wg, nm, d, d * es, d * es, x->bn, nm, dv, dv * es, dv * es, x->bn);
}

void cuda_header(Carrier *c, const CudaModule *m, FILE *o)
{
	const char *nm = m->name;
	fprintf(o, "/* %s.h: the launch contract of carrier %s's kernels (%s), written by\n"
		   " * `assoc emit --target cuda|ptx --header`; it goes with the module of that\n"
		   " * command.  To run variant V on rows x len: fill a %s_args (device\n"
		   " * pointers, the shape, the params), call V_plan, allocate ws_bytes of\n"
		   " * workspace and zero [zero_at, zero_at + zero_bytes) once (the kernels\n"
		   " * leave it zero), set args.ws, args.split and args.chunk from the plan,\n"
		   " * then launch p.k[0 .. nk) in order on one stream, each with the\n"
		   " * grid, block and dynamic shared bytes of the plan and the parameter\n"
		   " * &args (cuLaunchKernel's kernelParams = {&args}; the Hopper\n"
		   " * template's kernels take a second, below), and none whose grid is\n"
		   " * 0 (no rows: nothing to do).  Each array's pointer is a multiple of\n"
		   " * its element's size (cuMemAlloc's are; the kernels load wider only\n"
		   " * where the pointers allow)",
		nm, nm, c->file, nm);
	int words = m->base == FAM_ATTN && !m->attn.f8;
	if (words)
		fprintf(o, ", and of 4 bytes for %s, %s and %s,\n * which the attention kernels load two elements at a time",
			in_name(c, m->attn.qi), in_name(c, m->attn.ki), in_name(c, m->attn.vi));
	fprintf(o, ".%sA kernel taking more than 48 KB\n"
		   " * of dynamic shared memory needs CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES\n"
		   " * set first.  The module's PTX is for the --arch it was emitted with\n"
		   " * (sm_90 where none was given): a GPU of another generation needs\n"
		   " * the module emitted for its own. */\n",
		words ? "\n * " : "  ");
	fprintf(o, "#ifndef ASSOC_KERNELS_%s_H\n#define ASSOC_KERNELS_%s_H\n\n", nm, nm);
	fprintf(o, "#include <stddef.h>\n#include <stdint.h>\n#include <string.h>\n\n");
	fprintf(o, "/* The kernels' parameter, by value (templates/common.cuh's Args; the first of the Hopper template's two). */\n"
		   "typedef struct {\n"
		   "\tuint64_t in[%d];  /* inputs' device pointers, by %s_IN_ slot */\n"
		   "\tuint64_t out[%d]; /* outputs' device pointers, by %s_OUT_ slot */\n"
		   "\tuint64_t ws;      /* the workspace, the plan's ws_bytes (0 bytes: any value) */\n"
		   "\tint32_t rows, len; /* the shape (attention: rows of one query head) */\n"
		   "\tint32_t split, chunk; /* from the plan */\n"
		   "\tdouble prm[%d];   /* params, by %s_PRM_ slot */\n"
		   "\tint32_t heads, kv_heads; /* attention: query and key/value heads; 1 and 1 elsewhere */\n"
		   "} %s_args;\n",
		CUDA_MAXIN, nm, CUDA_MAXOUT, nm, CUDA_MAXP, nm, nm);
	fprintf(o, "#ifdef __cplusplus\nstatic_assert(sizeof(%s_args) == %zu && offsetof(%s_args, prm) == %zu, "
		   "\"the kernels' argument layout\");\n#else\n_Static_assert(sizeof(%s_args) == %zu && "
		   "offsetof(%s_args, prm) == %zu, \"the kernels' argument layout\");\n#endif\n\n",
		nm, sizeof(CudaArgs), nm, offsetof(CudaArgs, prm), nm, sizeof(CudaArgs), nm, offsetof(CudaArgs, prm));
	slots(c, m, o);
	fprintf(o, "/* One launch, and a variant's launches for a shape. */\ntypedef struct {\n"
		   "\tconst char *name; /* the kernel's name in the module */\n"
		   "\tunsigned grid, block, smem; /* blocks, threads a block (x only), dynamic shared bytes */\n"
		   "\tunsigned cluster; /* blocks of a thread-block cluster in x (sm_90: a launch attribute); 0: none */\n"
		   "} %s_launch;\n\ntypedef struct {\n\t%s_launch k[3];\n\tint nk;\n"
		   "\tint32_t split, chunk; /* args.split, args.chunk */\n"
		   "\tuint64_t ws_bytes, zero_at, zero_bytes; /* the workspace, and its region zeroed before the first launch */\n"
		   "} %s_plan;\n\n",
		nm, nm, nm);
	fprintf(o, "/* Each variant's plan: 0, or -1 for a shape it does not take.  split:\n"
		   " * blocks a row's reduced axis is split across (splitk, scan, attention;\n"
		   " * at least 2 for splitk); heads, kv_heads: attention's (1 and 1\n"
		   " * elsewhere, where a launch runs one head). */\n\n");
	for (int v = 0; v < m->nvar; v++)
		plan_fn(m, v, o);
	int h90 = 0;
	for (int v = 0; v < m->nvar; v++)
		h90 |= m->var[v].wg > 0;
	if (h90) {
		fprintf(o, "/* The Hopper template's kernels (configurations with wg, PTX for sm_90a)\n"
			   " * take a second parameter: the tensor maps of q, k and v, three\n"
			   " * CUtensorMap (128 bytes each, 64-byte aligned) one after another\n"
			   " * (kernelParams = {&args, maps}).  Encode map i with\n"
			   " * cuTensorMapEncodeTiled(&maps[i], %s, t[i].rank, pointer, t[i].dims,\n"
			   " * t[i].strides, t[i].box, {1, 1, 1}, CU_TENSOR_MAP_INTERLEAVE_NONE,\n"
			   " * %s, any L2 promotion,\n"
			   " * CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) from the variant's V_tmaps; the\n"
			   " * pointers 16-byte aligned.  dims innermost first, in elements;\n"
			   " * strides in bytes, of dims 1 on. */\n"
			   "typedef struct {\n\tuint32_t rank;\n\tuint64_t dims[3], strides[2];\n\tuint32_t box[3];\n} %s_tmap;\n\n",
			m->attn.f8     ? "CU_TENSOR_MAP_DATA_TYPE_UINT8 (e4m3's bytes)"
			: m->attn.bf16 ? "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16"
				       : "CU_TENSOR_MAP_DATA_TYPE_FLOAT16",
			m->attn.f8 ? "CU_TENSOR_MAP_SWIZZLE_64B" : "CU_TENSOR_MAP_SWIZZLE_128B", nm);
		/* field by field: a C++ host program includes the header too, and
		 * ISO C++ has no compound literals */
		fprintf(o, "static inline void %s_tmap_set(%s_tmap *t, uint32_t rank, uint64_t d0, uint64_t d1, uint64_t d2,\n"
			   "\t\t\t\t    uint64_t s0, uint64_t s1, uint32_t b0, uint32_t b1, uint32_t b2)\n{\n"
			   "\tt->rank = rank;\n\tt->dims[0] = d0, t->dims[1] = d1, t->dims[2] = d2;\n"
			   "\tt->strides[0] = s0, t->strides[1] = s1;\n\tt->box[0] = b0, t->box[1] = b1, t->box[2] = b2;\n}\n\n",
			nm, nm);
		for (int v = 0; v < m->nvar; v++)
			if (m->var[v].wg)
				tmaps_fn(m, v, o);
	}
	fprintf(o, "/* Every variant: its configuration (the text --config takes), its\n"
		   " * first kernel's name, its plan. */\ntypedef struct {\n\tconst char *config, *kernel;\n"
		   "\tint (*plan)(int32_t rows, int32_t len, int32_t heads, int32_t kv_heads, int32_t split, %s_plan *p);\n"
		   "} %s_variant;\n\nenum { %s_NVARIANTS = %d };\n\n"
		   "static const %s_variant %s_variants[%s_NVARIANTS] = {\n",
		nm, nm, nm, m->nvar, nm, nm, nm);
	for (int v = 0; v < m->nvar; v++) {
		char names[3][64], cfg[160];
		cuda_kernel_names(m, v, names);
		variant_str(&m->var[v], cfg, sizeof cfg);
		fprintf(o, "\t{\"%s\", \"%s\", %s_plan},\n", cfg, names[0], names[0]);
	}
	fprintf(o, "};\n\n#endif\n");
}
