/* llvm.c: the CPU backend's driver: one LLVM context per compilation, the
 * kernel module built (llvm_kern.h), verified, optimized for the host CPU
 * with the O3 pipeline, compiled to an object (kept on disk) and loaded by
 * ORC's LLJIT; or printed as IR or host assembly for `assoc emit`.  Every
 * LLVM message is disposed. */
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm/Config/llvm-config.h>
#include <llvm-c/Analysis.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "compiler/util/cache.h"
#include "compiler/llvm/llvm.h"
#include "compiler/llvm/mask_live.h"
#include "compiler/llvm/llvm_int.h"

struct LlvmJit {
	LLVMOrcLLJITRef j;
};

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_failed;

static void init(void)
{
	init_failed = LLVMInitializeNativeTarget() || LLVMInitializeNativeAsmPrinter();
}

int llvm_abi(char *b, size_t n)
{
	llvm_abi_text(b, n);
	return 0;
}

int llvm_available(char *why, size_t n)
{
	pthread_once(&init_once, init);
	if (init_failed)
		snprintf(why, n, "LLVM has no native target for this host");
	return !init_failed;
}

/* Copy an LLVM message into msg and dispose it. */
static int fail_msg(char *msg, size_t n, const char *what, char *llvm_msg)
{
	snprintf(msg, n, "%s: %s", what, llvm_msg ? llvm_msg : "(no message)");
	if (llvm_msg)
		LLVMDisposeMessage(llvm_msg);
	return -1;
}

static int fail_err(char *msg, size_t n, const char *what, LLVMErrorRef e)
{
	char *m = LLVMGetErrorMessage(e);
	snprintf(msg, n, "%s: %s", what, m);
	LLVMDisposeErrorMessage(m);
	return -1;
}

/* A machine for the CPU compiled for (cpu_target): the host's name and
 * features, or ASSOC_CPU's name, whose features LLVM then takes from its
 * own tables. */
static LLVMTargetMachineRef host_machine(char *msg, size_t n)
{
	CpuTarget ct;
	if (cpu_target(&ct, msg, n))
		return NULL;
	char *triple = LLVMGetDefaultTargetTriple(), *err = NULL;
	LLVMTargetRef t;
	LLVMTargetMachineRef tm = NULL;
	if (LLVMGetTargetFromTriple(triple, &t, &err)) {
		fail_msg(msg, n, "no LLVM target for the host", err);
	} else {
		tm = LLVMCreateTargetMachine(t, triple, ct.cpu, ct.named ? "" : ct.feat, LLVMCodeGenLevelAggressive,
					     LLVMRelocDefault, LLVMCodeModelJITDefault);
		if (!tm)
			snprintf(msg, n, "cannot create an LLVM target machine for %s", triple);
	}
	LLVMDisposeMessage(triple);
	cpu_target_free(&ct);
	return tm;
}

/* The widest float32 vector of the CPU compiled for, in lanes. */
static int host_lanes(void)
{
	return lower_host_has("+avx512f") ? 16 : lower_host_has("+avx") ? 8 : 4;
}

/* One accumulator: with tiles (kern_plan) its chain runs one merge per
 * tile, and more accumulators only add register pressure (measured on
 * AVX-512 with 16 lanes, rows of 4096 in cache: logsumexp 2.9 G elements/s
 * with one, 2.5 with two; Welford about the same). */
enum { ACCS = 1 };

/* A row or column input has more than n components. */
static int wide_inputs_past(const Carrier *c, int n)
{
	for (int r = 0; r < c->nrow; r++)
		if (spec_decl_width(&c->row[r]) > n)
			return 1;
	for (int k = 0; k < c->ncol; k++)
		if (spec_decl_width(&c->col[k]) > n)
			return 1;
	return 0;
}

static void plan(Kern *k, Carrier *c, const LlvmOpts *o)
{
	int lanes = o && o->lanes > 0 ? o->lanes : host_lanes();
	int accs = o && o->accs > 0 ? o->accs : ACCS;
	int tile = o && o->tile > 0 ? o->tile : 0;
	/* 16 rows as lanes: one vector on AVX-512, two of 8 with AVX2, where
	 * each broadcast key component then feeds two multiply-adds (with the
	 * loops below, on Zen 3, one thread, median of 3 to 6 runs: attention
	 * at d = 64 0.154 G row-keys/s against 0.110 with 8 rows, causal 0.276
	 * against 0.197, d = 128 0.080 against 0.052) */
	int rows = o && o->rows > 0 ? o->rows : host_lanes() >= 8 ? 16 : host_lanes();
	/* Fewer where a view has fewer rows (decoding: the query heads of a
	 * key/value head): a narrower group still loads each key once for
	 * all of them, where one row at a time loads it once a row (32 heads
	 * on 8, one query, 32768 keys, d = 128, 2 threads on Zen 3: 7.6 GB/s
	 * against 4.3; on 4 key/value heads 5.6 against 2.7).  Not below 4:
	 * 2 rows as lanes ran no faster than one at a time. */
	if (o && o->rows <= 0 && o->fit_rows >= 4 && o->fit_rows < rows)
		rows = o->fit_rows;
	/* Rows as lanes take tiles of 8 positions on AVX-512, 4 with 16
	 * registers of 8 lanes (AVX2), where at 8 the tile's scores and the
	 * state's vectors spill (8 rows, before the loops below: d = 64 0.099
	 * G row-keys/s against 0.054; with 16 rows and the loops, tiles of 5,
	 * 6 and 8 were no faster) */
	int rows_tile = o && o->tile > 0 ? o->tile : host_lanes() >= 16 ? 8 : 4;
	/* powers of two: the lane halving and the pairwise combine need them */
	while (lanes & (lanes - 1))
		lanes &= lanes - 1;
	if (lanes > 64)
		lanes = 64;
	while (accs & (accs - 1))
		accs &= accs - 1;
	if (tile > 64)
		tile = 64;
	/* Rows as lanes hold each component of a wide input as its own value
	 * (a half float key is converted component by component), so that
	 * function grows with the vector: attention at d = 2080, 31000 lines
	 * against 9000 at 260, and 21 s to compile at 4096.  Past
	 * LLVM_MAX_WIDTH one row at a time, whose dot products are loops
	 * (kern_wide_dot): 6.6 s at 4096.  Below it rows as lanes stay, for
	 * their speed (d = 256: 8.7 times one row's). */
	if (wide_inputs_past(c, LLVM_MAX_WIDTH) && !(o && o->rows > 0))
		rows = 1;
	while (rows & (rows - 1))
		rows &= rows - 1;
	if (rows > 64)
		rows = 64;
	kern_plan(k, c, lanes, accs, tile, rows, rows_tile);
	/* Keys as the lanes (llvm_keys.c) for one row at a time and for the
	 * few rows of a view (decoding's query heads of a key/value head),
	 * all of them in one group, where the 16-lane vectors are the
	 * host's: rows as lanes left 3/4 of each vector empty at 4 rows. */
	char why[160];
	k->keys = host_lanes() >= 16 && kern_keys_fit(k, why, sizeof why);
	int want = o && o->rows > 0 ? o->rows : o && o->fit_rows >= 2 && o->fit_rows < 16 ? o->fit_rows : 0;
	/* Groups of 8 rows or more keep rows as lanes where keys have at
	 * most 128 components: decoding from memory (32768 keys, 2 threads,
	 * Zen 5, alternated in the same minutes), f32 keys, 8 rows a group,
	 * ran at 0.48-0.71 of the copy against 0.37-0.43 with keys as lanes
	 * (d = 64) and 0.69-0.71 against 0.34-0.43 (d = 128), f16 the same
	 * either way; at 4 rows keys as lanes ran 0.54-0.69 against 0.33-0.59,
	 * and at 256 components 0.65-0.70 against 0.12-0.14. */
	int widest = 0;
	for (int i = 0; i < c->ncol; i++)
		if (spec_decl_width(&c->col[i]) > widest)
			widest = spec_decl_width(&c->col[i]);
	if (k->keys && want >= 8 && widest <= 128)
		k->keys = 0;
	if (k->keys && want >= 2 && want < 16)
		k->group = want;
	kern_plan_tf(k, c, o ? o->tf : 0, tile > 0);
	kern_plan_chains(k);
	k->key_stride = o && o->key_stride > 1 ? o->key_stride : 1;
	k->paged = o && o->key_stride > 0;
	if (o && o->wide_positions)
		k->narrow = 0;
	/* Loops over the components where 16 registers hold 8 lanes (AVX2):
	 * unrolled whole, the tile's dot products and the update of o spill
	 * most of their values.  On Zen 3, one thread, median of 4 or 5 runs,
	 * attention at d = 64 0.128 G row-keys/s against 0.101, causal 0.195
	 * against 0.131; d = 128 0.051 against 0.023.  Unrolled twice: 4 and 8
	 * times were no faster.  Loops too wherever a row or column input is
	 * past LOOP_MIN, on any host: unrolled, its dot products are straight
	 * code as long as the vector times the tile, which compiles in time
	 * that grows faster than linearly (attention on AVX-512, d = 256: the
	 * run took 15.3 s, 4.0 with loops).  And loops past 16 components on
	 * AVX-512 too: on Zen 4, bf16 attention with loops against unrolled
	 * whole, in one run each way (assoc bench --device cpu), prefill 512 x
	 * 2048 at d = 64 169 GFLOP/s against 94, d = 128 175 against 122;
	 * decoding 32 heads on 8, 32768 keys, d = 128 17.5 GB/s against 8.6,
	 * d = 64 16.2 against 12.1; f16 causal d = 64 +19%; d = 8 and 16 the
	 * same either way. */
	int unrolled = host_lanes() >= 16 && !wide_inputs_past(c, UNROLL_MAX);
	k->loop_unroll = o && o->unroll ? (o->unroll < 0 ? 0 : o->unroll) : unrolled ? 0 : 2;
}

/* Whether input var v occurs in e other than as an operand of a float32
 * dot product of two inputs. */
static int read_apart(const Carrier *c, const Expr *e, int v)
{
	if (e->op == EXPR_VAR)
		return e->k == v;
	if (e->op == EXPR_DOT && e->ty.kind == TY_F32 && e->a[0]->op == EXPR_VAR && e->a[1]->op == EXPR_VAR) {
		const Var *x = ir_var(c->ir, e->a[0]->k), *y = ir_var(c->ir, e->a[1]->k);
		if ((x->kind == VAR_ROW || x->kind == VAR_COL || x->kind == VAR_ELEM) &&
		    (y->kind == VAR_ROW || y->kind == VAR_COL || y->kind == VAR_ELEM))
			return 0;
	}
	for (int i = 0; i < e->nargs; i++)
		if (read_apart(c, e->a[i], v))
			return 1;
	return 0;
}

/* Input d is wider than LOOP_MIN and read only by dot products
 * (LLVM_MAX_DOT_WIDTH). */
static int dot_only(const Carrier *c, const Decl *d)
{
	if (spec_decl_width(d) <= LOOP_MIN)
		return 0;
	for (int f = 0; f < c->nstate; f++)
		if (read_apart(c, c->lift[f], d->var))
			return 0;
	if (c->mask && read_apart(c, c->mask, d->var))
		return 0;
	for (int i = 0; i < c->nmap; i++)
		if (read_apart(c, c->map[i].e, d->var))
			return 0;
	for (int i = 0; i < c->nfinal; i++)
		if (read_apart(c, c->finalize[i].e, d->var))
			return 0;
	return 1;
}

static int unsupported(Carrier *c, char *msg, size_t n)
{
	if (c->nelem + c->ncol + c->nrow > LLVM_MAX_ARRAYS || c->nfinal + c->nmap > LLVM_MAX_ARRAYS ||
	    c->nparams > LLVM_MAX_ARRAYS)
		return snprintf(msg, n, "the CPU backend takes at most %d inputs, outputs and params; %s has %d, %d and %d "
					"(--device interp takes it)",
				LLVM_MAX_ARRAYS, c->name, c->nelem + c->ncol + c->nrow, c->nfinal + c->nmap, c->nparams),
		       -1;
	/* Every component of a vector is its own value in straight-line code,
	 * whose instruction scheduling and register allocation grow faster
	 * than linearly: attention at d = dv = 1024 (4096 components) compiles
	 * in about 15 s, an (o[4096], lse) combine (8192) in over 2 minutes. */
	struct { const char *what; const Decl *d; int n; } g[] = {
		{"row input", c->row, c->nrow}, {"column input", c->col, c->ncol},
		{"element input", c->elem, c->nelem}, {"state field", c->state, c->nstate}};
	long total = 0;
	for (size_t k = 0; k < sizeof g / sizeof *g; k++)
		for (int f = 0; f < g[k].n; f++) {
			const Decl *d = &g[k].d[f];
			int w = spec_decl_width(d), dots = k < 3 && dot_only(c, d);
			if (w > (dots ? LLVM_MAX_DOT_WIDTH : LLVM_MAX_WIDTH)) {
				const char *dim = d->ty.dim >= 0 ? ir_dim(c->ir, d->ty.dim)->name : NULL;
				return snprintf(msg, n, "%s '%s' has %d components%s%s%s; the CPU backend compiles vectors of "
							"at most %d%s",
						g[k].what, d->name, w, dim ? " (dim " : "", dim ? dim : "", dim ? ")" : "",
						dots ? LLVM_MAX_DOT_WIDTH : LLVM_MAX_WIDTH, dots ? " read only by dot products" : ""), -1;
			}
			if (dots)
				continue;
			if (d->ty.len)
				total += w;
		}
	if (total > LLVM_MAX_COMPONENTS) {
		char dims[256] = "";
		for (int k = 0; k < ir_ndims(c->ir) && strlen(dims) < sizeof dims - 64; k++)
			snprintf(dims + strlen(dims), sizeof dims - strlen(dims), "%s%s = %d", k ? ", " : "",
				 ir_dim(c->ir, k)->name, ir_dim(c->ir, k)->size);
		return snprintf(msg, n, "the row, column, element and state vectors have %ld components in all (%s); the "
					"CPU backend compiles at most %d", total, dims, LLVM_MAX_COMPONENTS), -1;
	}
	return 0;
}

/* The kernel's module, verified, with its function attributes: all that
 * decides its code before the optimizer (object_path hashes it). */
static LLVMModuleRef build_ir(Kern *k, LLVMContextRef ctx, LLVMTargetMachineRef tm, char *msg, size_t n)
{
	LLVMModuleRef mod = LLVMModuleCreateWithNameInContext(k->c->name, ctx);
	char *triple = LLVMGetTargetMachineTriple(tm);
	LLVMSetTarget(mod, triple);
	LLVMDisposeMessage(triple);
	LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
	LLVMSetModuleDataLayout(mod, td);
	LLVMDisposeTargetData(td);
	kern_build(k, ctx, mod);
	char *err = NULL;
	if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &err)) {
		fail_msg(msg, n, "internal error: the generated LLVM IR does not verify", err);
		LLVMDisposeModule(mod);
		return NULL;
	}
	LLVMDisposeMessage(err);
	static const char nif[] = "noimplicitfloat";
	LLVMAttributeRef a = LLVMCreateEnumAttribute(ctx, LLVMGetEnumAttributeKindForName(nif, sizeof nif - 1), 0);
	for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f))
		if (LLVMCountBasicBlocks(f) && (kern_wide_state(k->c) || !strcmp(LLVMGetValueName(f), "assoc_reduce_rows")))
			LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, a);
	return mod;
}

static int optimize(LLVMModuleRef mod, LLVMTargetMachineRef tm, char *msg, size_t n)
{
	LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
	LLVMErrorRef e = LLVMRunPasses(mod, "default<O3>", tm, po);
	LLVMDisposePassBuilderOptions(po);
	return e ? fail_err(msg, n, "LLVM optimization failed", e) : 0;
}

/* build_ir, then the optimizer. */
static LLVMModuleRef build_module(Kern *k, LLVMContextRef ctx, LLVMTargetMachineRef tm, char *msg, size_t n)
{
	LLVMModuleRef mod = build_ir(k, ctx, tm, msg, n);
	if (mod && optimize(mod, tm, msg, n)) {
		LLVMDisposeModule(mod);
		return NULL;
	}
	return mod;
}

/* A new LLJIT for the host that resolves the process's symbols (memset,
 * memcpy); NULL with msg on failure. */
static LlvmJit *new_jit(LLVMOrcJITDylibRef *jd, char *msg, size_t n)
{
	LLVMTargetMachineRef tm = host_machine(msg, n);
	if (!tm)
		return NULL;
	LLVMOrcLLJITBuilderRef jb = LLVMOrcCreateLLJITBuilder();
	LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(jb, LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine(tm));
	LlvmJit *jit = calloc(1, sizeof *jit);
	if (!jit)
		abort();
	LLVMErrorRef e = LLVMOrcCreateLLJIT(&jit->j, jb);
	if (e) {
		fail_err(msg, n, "cannot create the LLVM JIT", e);
		free(jit);
		return NULL;
	}
	*jd = LLVMOrcLLJITGetMainJITDylib(jit->j);
	LLVMOrcDefinitionGeneratorRef gen;
	e = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&gen, LLVMOrcLLJITGetGlobalPrefix(jit->j), NULL, NULL);
	if (e) {
		fail_err(msg, n, "cannot create the LLVM JIT", e);
		LLVMOrcDisposeLLJIT(jit->j);
		free(jit);
		return NULL;
	}
	LLVMOrcJITDylibAddGenerator(*jd, gen);
	return jit;
}

/* Add mod (in tsctx) to a new LLJIT for the host; NULL with msg on failure. */
static LlvmJit *jit_module(LLVMModuleRef mod, LLVMOrcThreadSafeContextRef tsctx, char *msg, size_t n)
{
	LLVMOrcJITDylibRef jd;
	LlvmJit *jit = new_jit(&jd, msg, n);
	if (!jit) {
		LLVMDisposeModule(mod);
		return NULL;
	}
	LLVMOrcThreadSafeModuleRef tsm = LLVMOrcCreateNewThreadSafeModule(mod, tsctx);
	LLVMErrorRef e = LLVMOrcLLJITAddLLVMIRModule(jit->j, jd, tsm);
	if (e) {
		LLVMOrcDisposeThreadSafeModule(tsm);
		fail_err(msg, n, "cannot add the module to the LLVM JIT", e);
		LLVMOrcDisposeLLJIT(jit->j);
		free(jit);
		return NULL;
	}
	return jit;
}

/* The same for an object file (the JIT takes obj). */
static LlvmJit *jit_object(LLVMMemoryBufferRef obj, char *msg, size_t n)
{
	LLVMOrcJITDylibRef jd;
	LlvmJit *jit = new_jit(&jd, msg, n);
	if (!jit) {
		LLVMDisposeMemoryBuffer(obj);
		return NULL;
	}
	LLVMErrorRef e = LLVMOrcLLJITAddObjectFile(jit->j, jd, obj);
	if (e) {
		fail_err(msg, n, "cannot add the object to the LLVM JIT", e);
		LLVMOrcDisposeLLJIT(jit->j);
		free(jit);
		return NULL;
	}
	return jit;
}

/* ---- compiled kernels on disk ---- */

/* Optimizing and compiling a kernel's module takes 0.1 to 4 s (attention
 * at d = 128: about 3.5 on a 2-core AVX2 VM), each time a command runs it.  Its
 * object is kept under $XDG_CACHE_HOME/assoc/cpu, named by a hash of the
 * module before the optimizer (build_ir: everything the spec, the plan and
 * the options decide), the CPU's name and features (cpu_target) and LLVM's version;
 * OBJECT_FORMAT changes with what happens after build_ir.  A file is a
 * header (magic, size, hash of the object) and the object, so a damaged
 * one is compiled again rather than loaded. */
static const char OBJECT_FORMAT[] = "assoc-cpu-object-2 O3 " LLVM_VERSION_STRING;

static int object_path(LLVMModuleRef mod, char *path, size_t n, uint64_t *key)
{
	char dir[PATH_MAX], msg[PATH_MAX + 200];
	const char *off = getenv("ASSOC_NO_CPU_CACHE");
	if (off && *off && strcmp(off, "0"))
		return -1;
	if (cache_dir("cpu", dir, sizeof dir, msg, sizeof msg)) {
		cache_warn(msg);
		return -1;
	}
	CpuTarget ct;
	if (cpu_target(&ct, msg, sizeof msg))
		return -1;
	/* the CPU's name and features, so that code built for one CPU is never
	 * loaded for another; a named CPU's apart from the host's (whose keys
	 * stay as they were) */
	char *ir = LLVMPrintModuleToString(mod);
	uint64_t h = cache_hash(CACHE_HASH_INIT, OBJECT_FORMAT, sizeof OBJECT_FORMAT);
	h = cache_hash(h, ir, strlen(ir) + 1);
	h = cache_hash(h, ct.cpu, strlen(ct.cpu) + 1);
	h = cache_hash(h, ct.feat, strlen(ct.feat) + 1);
	if (ct.named)
		h = cache_hash(h, "ASSOC_CPU", 10);
	LLVMDisposeMessage(ir);
	cpu_target_free(&ct);
	*key = h;
	int w = snprintf(path, n, "%s/%016llx.o", dir, (unsigned long long)h);
	return w > 0 && (size_t)w < n ? 0 : -1;
}

/* The object at path, or NULL where there is none whole (sealed for key;
 * why says what was there instead, cache_read_entry). */
static LLVMMemoryBufferRef object_read(const char *path, uint64_t key, char *why, size_t wn)
{
	size_t len;
	char *data = cache_read_entry(path, key, &len, why, wn);
	LLVMMemoryBufferRef obj = data ? LLVMCreateMemoryBufferWithMemoryRangeCopy(data, len, "assoc") : NULL;
	free(data);
	return obj;
}

static void object_write(const char *path, uint64_t key, LLVMMemoryBufferRef obj, const char *why)
{
	/* a cache that cannot be written only costs time: said, and gone on */
	cache_put_sealed(path, key, LLVMGetBufferStart(obj), LLVMGetBufferSize(obj), why);
}

static void *lookup(LlvmJit *jit, const char *name, char *msg, size_t n, int *failed)
{
	LLVMOrcExecutorAddress addr = 0;
	LLVMErrorRef e = LLVMOrcLLJITLookup(jit->j, &addr, name);
	if (e) {
		char what[64];
		snprintf(what, sizeof what, "JIT lookup of %s failed", name);
		fail_err(msg, n, what, e);
		*failed = 1;
		return NULL;
	}
	return (void *)(uintptr_t)addr;
}

static void jit_free(LlvmJit *jit)
{
	if (!jit)
		return;
	LLVMErrorRef e = LLVMOrcDisposeLLJIT(jit->j);
	if (e)
		LLVMConsumeError(e);
	free(jit);
}

/* The kernel's object from the cache, or built, optimized and compiled
 * (and kept there), in a new JIT. */
static LlvmJit *compile_kern(Kern *k, char *msg, size_t n)
{
	LLVMTargetMachineRef tm = host_machine(msg, n);
	if (!tm)
		return NULL;
	LLVMContextRef ctx = LLVMContextCreate();
	LLVMModuleRef mod = build_ir(k, ctx, tm, msg, n);
	LLVMMemoryBufferRef obj = NULL;
	char path[PATH_MAX], why[PATH_MAX + 200] = "";
	uint64_t key = 0;
	int cached = mod && object_path(mod, path, sizeof path, &key) == 0;
	if (cached)
		obj = object_read(path, key, why, sizeof why);
	if (mod && !obj && optimize(mod, tm, msg, n) == 0) {
		char *err = NULL;
		if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMObjectFile, &err, &obj)) {
			fail_msg(msg, n, "LLVM code generation failed", err);
			obj = NULL;
		} else if (cached) {
			object_write(path, key, obj, why);
		}
	}
	if (mod)
		LLVMDisposeModule(mod);
	LLVMContextDispose(ctx);
	LLVMDisposeTargetMachine(tm);
	return obj ? jit_object(obj, msg, n) : NULL;
}

/* tf=1 where the plan has no transported fold: refused, with the reason
 * (k's plan freed), not run the plain way. */
static int tf_refused(Kern *k, const Carrier *c, const LlvmOpts *o, char *msg, size_t n)
{
	if (!o || o->tf <= 0 || k->tf)
		return 0;
	snprintf(msg, n, "--config tf=1 asks for the transported fold, which %s cannot have on the cpu device: %s", c->name,
		 k->tf_why);
	kern_plan_free(k);
	return -1;
}

int llvm_compile(Carrier *c, const LlvmOpts *o, LlvmKernel **out, char *msg, size_t n)
{
	*out = NULL;
	if (!llvm_available(msg, n) || unsupported(c, msg, n))
		return -1;
	Kern k;
	plan(&k, c, o);
	if (tf_refused(&k, c, o, msg, n))
		return -1;
	LlvmJit *jit = compile_kern(&k, msg, n);
	kern_plan_free(&k);
	if (!jit)
		return -1;
	LlvmKernel *kk = calloc(1, sizeof *kk);
	if (!kk)
		abort();
	kk->jit = jit;
	kk->lanes = k.lanes, kk->ordered = k.ordered, kk->accs = k.accs, kk->tile = k.tile, kk->rows = k.group, kk->rows_tile = k.rows_tile;
	kk->keys = k.keys;
	kk->unroll = k.group > 1 ? k.loop_unroll : 0;
	kk->max_rescale = k.mr_field >= 0 && (k.tile > 1 || k.ordered > 1);
	kk->two_pass = k.two_pass > 0;
	kk->kept = k.rowmap_g ? (long)k.rowmap_g->id + 1 : 0;
	kk->scan_lanes = k.scan_lanes;
	kk->scan_tiles = k.scan_tiles;
	kk->apart = k.apart;
	kk->select = k.select;
	kk->tf = k.tf;
	memcpy(kk->tf_why, k.tf_why, sizeof kk->tf_why);
	kk->key_stride = k.paged ? k.key_stride : 0;
	memcpy(kk->one_lane, k.one_lane, sizeof kk->one_lane);
	memcpy(kk->order, k.order, sizeof kk->order);
	kk->lift_chains = k.lift_chains;
	memcpy(kk->chain_why, k.chain_why, sizeof kk->chain_why);
	CpuTarget ct;
	if (cpu_target(&ct, msg, n) == 0) {
		if (ct.named)
			snprintf(kk->target, sizeof kk->target, "%s", ct.cpu);
		cpu_target_free(&ct);
	}
	int failed = 0;
	kk->k.identity = (void (*)(const CpuArgs *, void *))lookup(jit, "assoc_identity", msg, n, &failed);
	kk->k.reduce = (void (*)(const CpuArgs *, int64_t, int64_t, int64_t, void *))lookup(jit, "assoc_reduce", msg, n, &failed);
	kk->k.merge = (void (*)(const CpuArgs *, const void *, const void *, void *))lookup(jit, "assoc_merge", msg, n, &failed);
	kk->k.finalize = (void (*)(const CpuArgs *, int64_t, int64_t, const void *))lookup(jit, "assoc_finalize", msg, n, &failed);
	if (c->nmap)
		kk->k.map = (void (*)(const CpuArgs *, int64_t, int64_t, int64_t, const void *))lookup(jit, "assoc_map", msg, n, &failed);
	if (k.map_stream || k.scan_lanes)
		kk->k.fence = (void (*)(void))lookup(jit, "assoc_fence", msg, n, &failed);
	if (c->tpl == FAM_SCAN)
		kk->k.scan = (void (*)(const CpuArgs *, int64_t, int64_t, int64_t, void *))lookup(jit, "assoc_scan", msg, n, &failed);
	if (k.rowmap_g || k.rowmap_lanes) {
		kk->k.rowmap = (void (*)(const CpuArgs *, int64_t, void *, void *))lookup(jit, "assoc_rowmap", msg, n, &failed);
		kk->k.rowmap_len = TWO_PASS_BYTES / (k.rowmap_g ? k.two_pass : k.rowmap_lanes);
		kk->k.rowmap2 = (void (*)(const CpuArgs *, int64_t, void *, void *))lookup(jit, "assoc_rowmap2", msg, n, &failed);
		if (k.map_stream)
			kk->k.rowmap_next = (void (*)(const CpuArgs *, int64_t, void *, void *, int64_t, const void *,
						      const void *))lookup(jit, "assoc_rowmap_next", msg, n, &failed);
	}
	if (kern_has_reduce2(&k)) {
		kk->k.reduce2 = (void (*)(const CpuArgs *, int64_t, void *))lookup(jit, "assoc_reduce2", msg, n, &failed);
		kk->k.pair_len = PAIR_LEN;
	}
	if (k.paged && kern_reduces_pages(&k))
		kk->k.reduce_pages = (void (*)(const CpuArgs *, int64_t, int64_t, int64_t, void *, const int32_t *,
					       int64_t))lookup(jit, "assoc_reduce_pages", msg, n, &failed);
	if (k.paged && k.group > 1)
		kk->k.reduce_rows_pages = (void (*)(const CpuArgs *, int64_t, int64_t, int64_t, void *, const int32_t *,
						    int64_t))lookup(jit, "assoc_reduce_rows_pages", msg, n, &failed);
	if (k.group > 1) {
		kk->k.reduce_rows = (void (*)(const CpuArgs *, int64_t, int64_t, int64_t, void *))lookup(jit, "assoc_reduce_rows", msg, n, &failed);
		kk->k.group = k.group;
	}
	kk->k.state_bytes = k.state_bytes;
	kk->k.is_scan = c->tpl == FAM_SCAN;
	/* not beside a rowmap, whose passes cover every position: the two paths
	 * give the same bits */
	if (!kk->k.is_scan && !kk->k.rowmap && (kk->k.live_ctx = mask_live_compile(c)))
		kk->k.live = mask_live_eval;
	if (failed) {
		llvm_kernel_free(kk);
		return -1;
	}
	*out = kk;
	return 0;
}

void llvm_kernel_free(LlvmKernel *k)
{
	if (!k)
		return;
	jit_free(k->jit);
	mask_live_free((LiveProg *)k->k.live_ctx);
	free(k);
}

int llvm_emit(Carrier *c, const LlvmOpts *o, int asm_, FILE *out, char *msg, size_t n)
{
	if (!llvm_available(msg, n) || unsupported(c, msg, n))
		return -1;
	LLVMTargetMachineRef tm = host_machine(msg, n);
	if (!tm)
		return -1;
	Kern k;
	plan(&k, c, o);
	if (tf_refused(&k, c, o, msg, n)) {
		LLVMDisposeTargetMachine(tm);
		return -1;
	}
	LLVMContextRef ctx = LLVMContextCreate();
	LLVMModuleRef mod = build_module(&k, ctx, tm, msg, n);
	kern_plan_free(&k);
	int rc = mod ? 0 : -1;
	if (mod && !asm_) {
		char *text = LLVMPrintModuleToString(mod);
		fputs(text, out);
		LLVMDisposeMessage(text);
	} else if (mod) {
		char *err = NULL;
		LLVMMemoryBufferRef buf;
		if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMAssemblyFile, &err, &buf)) {
			rc = fail_msg(msg, n, "LLVM code generation failed", err);
		} else {
			fwrite(LLVMGetBufferStart(buf), 1, LLVMGetBufferSize(buf), out);
			LLVMDisposeMemoryBuffer(buf);
		}
	}
	if (mod)
		LLVMDisposeModule(mod);
	LLVMContextDispose(ctx);
	LLVMDisposeTargetMachine(tm);
	return rc;
}

/* ---- one math function over an array, for tests and benchmarks ---- */

static void build_math(LLVMContextRef ctx, LLVMModuleRef mod, int op, int lanes)
{
	Lower L;
	memset(&L, 0, sizeof L);
	L.ctx = ctx, L.mod = mod;
	L.avx512 = lower_host_avx512();
	L.b = LLVMCreateBuilderInContext(ctx);
	LLVMTypeRef f32 = LLVMFloatTypeInContext(ctx), i64 = LLVMInt64TypeInContext(ctx);
	LLVMTypeRef fp = LLVMPointerType(f32, 0), p[3] = {fp, fp, i64};
	LLVMValueRef f = LLVMAddFunction(mod, "assoc_math", LLVMFunctionType(LLVMVoidTypeInContext(ctx), p, 3, 0));
	char w[16];
	snprintf(w, sizeof w, "%d", 32 * lanes);
	LLVMAddTargetDependentFunctionAttr(f, "min-legal-vector-width", w);
	LLVMAddTargetDependentFunctionAttr(f, "prefer-vector-width", w);
	LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(ctx, f, "entry");
	LLVMPositionBuilderAtEnd(L.b, entry);
	LLVMValueRef ivp = LLVMBuildAlloca(L.b, i64, "");
	LLVMBuildStore(L.b, LLVMConstInt(i64, 0, 0), ivp);
	for (int pass = 0; pass < 2; pass++) {
		L.W = pass ? 1 : lanes;
		LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(ctx, f, "head");
		LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(ctx, f, "body");
		LLVMBasicBlockRef exit = LLVMAppendBasicBlockInContext(ctx, f, "exit");
		LLVMBuildBr(L.b, head);
		LLVMPositionBuilderAtEnd(L.b, head);
		LLVMValueRef iv = LLVMBuildLoad2(L.b, i64, ivp, "");
		LLVMValueRef next = LLVMBuildAdd(L.b, iv, LLVMConstInt(i64, L.W, 0), "");
		LLVMBuildCondBr(L.b, LLVMBuildICmp(L.b, LLVMIntSLE, next, LLVMGetParam(f, 2), ""), body, exit);
		LLVMPositionBuilderAtEnd(L.b, body);
		LLVMTypeRef vt = lower_vty(&L, TY_F32);
		LLVMValueRef px = LLVMBuildGEP2(L.b, f32, LLVMGetParam(f, 0), &iv, 1, "");
		LLVMValueRef py = LLVMBuildGEP2(L.b, f32, LLVMGetParam(f, 1), &iv, 1, "");
		LLVMValueRef x = LLVMBuildLoad2(L.b, vt, LLVMBuildBitCast(L.b, px, LLVMPointerType(vt, 0), ""), "");
		LLVMSetAlignment(x, 4);
		LLVMValueRef y = math_f32(&L, op, x);
		LLVMSetAlignment(LLVMBuildStore(L.b, y, LLVMBuildBitCast(L.b, py, LLVMPointerType(vt, 0), "")), 4);
		LLVMBuildStore(L.b, next, ivp);
		LLVMBuildBr(L.b, head);
		LLVMPositionBuilderAtEnd(L.b, exit);
	}
	LLVMBuildRetVoid(L.b);
	LLVMDisposeBuilder(L.b);
}

int llvm_math_kernel(int op, int lanes, LlvmKernel **out, LlvmMathFn *fn, char *msg, size_t n)
{
	*out = NULL;
	if (!llvm_available(msg, n))
		return -1;
	if (lanes <= 0)
		lanes = host_lanes();
	LLVMTargetMachineRef tm = host_machine(msg, n);
	if (!tm)
		return -1;
	LLVMOrcThreadSafeContextRef tsctx = LLVMOrcCreateNewThreadSafeContext();
	LLVMContextRef ctx = LLVMOrcThreadSafeContextGetContext(tsctx);
	LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("math", ctx);
	char *triple = LLVMGetTargetMachineTriple(tm);
	LLVMSetTarget(mod, triple);
	LLVMDisposeMessage(triple);
	build_math(ctx, mod, op, lanes);
	char *err = NULL;
	LlvmJit *jit = NULL;
	if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &err)) {
		fail_msg(msg, n, "internal error: math module does not verify", err);
		LLVMDisposeModule(mod);
	} else {
		LLVMDisposeMessage(err);
		LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
		LLVMErrorRef e = LLVMRunPasses(mod, "default<O3>", tm, po);
		LLVMDisposePassBuilderOptions(po);
		if (e)
			LLVMConsumeError(e);
		jit = jit_module(mod, tsctx, msg, n);
	}
	LLVMDisposeTargetMachine(tm);
	LLVMOrcDisposeThreadSafeContext(tsctx);
	if (!jit)
		return -1;
	int failed = 0;
	*fn = (LlvmMathFn)lookup(jit, "assoc_math", msg, n, &failed);
	LlvmKernel *k = calloc(1, sizeof *k);
	if (!k)
		abort();
	k->jit = jit;
	k->lanes = lanes;
	if (failed) {
		llvm_kernel_free(k);
		return -1;
	}
	*out = k;
	return 0;
}
