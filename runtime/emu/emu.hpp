/* emu.hpp: the CUDA execution model on a CPU, for generated kernels.
 *
 * Prepended (by compiler/devices/emu.c) to a module's CUDA C, which g++ then
 * builds into a shared object.  One CUDA thread is one fiber; blocks run one
 * after another, their threads interleaved at barriers and warp operations,
 * so __syncthreads and the warp shuffles and votes behave as on a GPU.
 *
 * Checked: shared memory declared with ASC_SHARED (or ASC_DYN_SHARED, sized
 * by the launch's dynamic shared bytes) is bounds-checked, and
 * each word remembers its last writer and its readers, each with the
 * thread's clock, so a read of a word another thread wrote (or a write
 * over a word another thread wrote or read) is reported as a race unless
 * barriers order the earlier access before it: __syncthreads, or a chain
 * of named barriers, mbarriers and __syncwarp (the happens-before
 * section says how); a barrier reached after another thread of the
 * block exited, or a deadlock at barriers or warp operations, is reported as
 * differing barrier counts, and threads that meet at different __syncthreads
 * calls as divergent barriers.  cp.async copies land only at the
 * cp.async.wait_group that completes them, and their words are poisoned
 * until then, so a missing wait (or a missing __syncthreads after it) is
 * reported; ldmatrix reads its rows through the same checks.  Named
 * barriers (bar.sync and bar.arrive with an id and a thread count) and the
 * Hopper instructions (mbarriers, TMA tile loads, wgmma, setmaxnreg) are
 * modelled and checked as their sections say.  A launch with a cluster
 * size runs the blocks of each cluster together (their fibers switch at
 * cluster barriers), each with its own shared memory, which its peers
 * read through the cluster window (the clusters section says what is
 * checked).  Errors name the kernel, block and thread.
 *
 * Everything here is inside the shared object and not sanitized, so the
 * fibers' stacks never meet the host's AddressSanitizer. */
#define ASSOC_EMU 1
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#if !defined(__x86_64__)
#include <ucontext.h>
#endif

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static
#define warpSize 32
#define ASC_DEV static inline
#define ASC_FN static
#define ASC_PARAM const
#define ASC_LD(p) emu_ld(p)
#define ASC_ST(p, v) emu_st((p), (v))
#define ASC_LDCG(p) emu_ld(p)
typedef unsigned long long asc_uptr;

struct dim3 {
	unsigned x, y, z;
};

/* EMU_MAXDYN: sm_90's opt-in limit of shared memory per block (227 KB).
 * A fiber's stack: EMU_STACK, and EMU_FRAMES more copies of the module's
 * State and Elem, which a GPU keeps in registers or local memory and the
 * emulator in fiber stacks (a state of 4096 floats overflowed 128 KiB). */
enum { EMU_MAXT = 1024, EMU_STACK = 128 * 1024, EMU_FRAMES = 64, EMU_MAXDYN = 227 * 1024 };
/* EMU_MAXCL: the most blocks of a cluster (16, sm_90's non-portable size);
 * EMU_MAXWG: the most warpgroups of a block. */
enum { EMU_MAXCL = 16, EMU_MAXWG = EMU_MAXT / 128 };

struct EmuFiber {
	void *sp;
	char *stack;
	dim3 tid;
	int done, blocked, lane, warp, nbar;
	const char *bar_site; /* the __syncthreads call it waits at: file:line */
	unsigned seq;
	int nasync;     /* cp.async copies in flight */
	unsigned group; /* cp.async.commit_group count: the open group's number */
	unsigned pfence; /* fence.proxy.async count */
	unsigned wg_issued, wg_done, wg_group; /* wgmma.mma_async issued and retired; commit_group count */
	int wg_fenced;  /* a wgmma.fence since the last wgmma.wait_group that retired one */
	int wbar;       /* blocked in an mbarrier wait: the barrier (emu_hop.bar) and the parity */
	unsigned wpar;
	int nb;             /* blocked in bar.sync: the named barrier */
	unsigned nbgen[16]; /* per named barrier: 1 + the phase this thread last arrived in */
	int clarr;          /* arrived at the cluster barrier, not yet waited */
	unsigned clphase;   /* the cluster barrier's phase it arrived in */
	unsigned clknow;    /* the cluster barrier's phases it has waited for */
	uint64_t clarrc[4]; /* its clock at its arrival in phase p, at p % 4 (its later accesses carry more) */
	unsigned clarrp[4]; /* 1 + that p */
	/* happens-before (the hb section): its accesses since its last release
	 * carry clk; its warp's accesses before wfl happen before its own (a
	 * __syncwarp); vc[u]: thread u's accesses at clocks up to vc[u] do too
	 * (NULL: nothing past the floors) */
	uint64_t clk, wfl;
	const uint64_t *vc;
	/* per warpgroup: the issue clock of the latest wgmma.mma_async whose
	 * retirement it knows (its own wgmma.wait_group, or one it learned of
	 * at a barrier), the words that wgmma read ordered before its next
	 * access (the hb section) */
	uint64_t wgk[EMU_MAXWG];
	int mbuse; /* it arrived at or waited on an mbarrier (the race reports' hints) */
#if !defined(__x86_64__)
	ucontext_t uc;
#endif
};

/* sizeof(State) + sizeof(Elem) of the generated module (cuda_mod.c);
 * weak, as a hand-written kernel has neither. */
extern "C" const size_t asc_emu_frame_bytes __attribute__((weak));

struct Emu {
	EmuFiber *f; /* the running block's threads: emu_fib[rank] */
	char *stacks;
	int nstacks;
	size_t stack; /* bytes of each of the nstacks stacks, the guard page included */
	int n, nlive, bar_arrived, failed;
	EmuFiber *cur;
	void *sched_sp;
#if !defined(__x86_64__)
	ucontext_t sched_uc;
#endif
	dim3 bidx, bdim, gdim;
	uint64_t epoch;       /* the clock: every clock value and cut is drawn from it */
	uint64_t block_epoch; /* the epoch the running block began in: older writes are another block's */
	uint64_t floor;       /* accesses before it happen before every thread's (the last __syncthreads) */
	uint64_t slot[32][2][32];
	const char *op[32][2][32]; /* the collective each lane of slot is at */
	int arrive[32][2], depart[32][2];
	const char *kernel;
	void (*fn)(const void *);
	const void *args;
	unsigned long long ld_bytes, st_bytes;
	size_t dyn_bytes; /* the launch's dynamic shared memory */
	int left;         /* the running block's threads not done */
	/* clusters: the running block's rank, the blocks a cluster, the
	 * threads arrived in the cluster barrier's phase, the cluster's exited
	 * threads, its completed phases */
	int rank, csize, cl_arrived, cl_exited, cl_gone;
	unsigned cl_phase;
	uint64_t cl_done[4]; /* the epoch phase p completed at, at p % 4 */
	unsigned cl_donep[4]; /* 1 + that p */
	char msg[2048];
};
static Emu emu;
static EmuFiber emu_fib[EMU_MAXCL][EMU_MAXT];

#define threadIdx (emu.cur->tid)
#define blockIdx (emu.bidx)
#define blockDim (emu.bdim)
#define gridDim (emu.gdim)

/* ---- context switch ---- */
#if defined(__x86_64__)
extern "C" void emu_switch_ctx(void **save, void *to) __attribute__((visibility("hidden")));
__asm__(".text\n"
	".globl emu_switch_ctx\n"
	".hidden emu_switch_ctx\n"
	".type emu_switch_ctx,@function\n"
	"emu_switch_ctx:\n"
	"\tpushq %rbp\n\tpushq %rbx\n\tpushq %r12\n\tpushq %r13\n\tpushq %r14\n\tpushq %r15\n"
	"\tmovq %rsp, (%rdi)\n\tmovq %rsi, %rsp\n"
	"\tpopq %r15\n\tpopq %r14\n\tpopq %r13\n\tpopq %r12\n\tpopq %rbx\n\tpopq %rbp\n"
	"\tret\n"
	".size emu_switch_ctx, .-emu_switch_ctx\n");
static void emu_to_sched(void) { emu_switch_ctx(&emu.cur->sp, emu.sched_sp); }
static void emu_to_fiber(EmuFiber *f) { emu_switch_ctx(&emu.sched_sp, f->sp); }
#else
static void emu_to_sched(void) { swapcontext(&emu.cur->uc, &emu.sched_uc); }
static void emu_to_fiber(EmuFiber *f) { swapcontext(&emu.sched_uc, &f->uc); }
#endif

__attribute__((noreturn)) static void emu_park(void)
{
	for (;;)
		emu_to_sched();
}

__attribute__((format(printf, 1, 2), noreturn)) static void emu_fail(const char *fmt, ...)
{
	if (!emu.failed) {
		va_list ap;
		va_start(ap, fmt);
		int k = vsnprintf(emu.msg, sizeof emu.msg, fmt, ap);
		va_end(ap);
		if (k < 0 || (size_t)k >= sizeof emu.msg)
			k = sizeof emu.msg - 1;
		snprintf(emu.msg + k, sizeof emu.msg - k, " (kernel %s, block %u, thread %u)", emu.kernel, emu.bidx.x,
			 emu.cur ? emu.cur->tid.x : 0u);
		emu.failed = 1;
	}
	emu.cur->done = 1;
	emu_park();
}

static void emu_exit_thread(void)
{
	EmuFiber *f = emu.cur;
	if (f->wg_done != f->wg_issued)
		emu_fail("thread exited with %u wgmma.mma_async in flight (missing wgmma.wait_group)", f->wg_issued - f->wg_done);
	f->done = 1;
	emu.nlive--;
	if (f->clarr) /* counted in this phase's arrivals; absent from the next */
		emu.cl_gone++;
	else
		emu.cl_exited++;
	if (emu.bar_arrived > 0)
		emu_fail("thread exited while %d threads of its block wait at __syncthreads (differing barrier counts)",
			 emu.bar_arrived);
	if (emu.cl_arrived > 0 && !f->clarr)
		emu_fail("thread exited while %d threads of its cluster wait at barrier.cluster (differing barrier counts)",
			 emu.cl_arrived);
	emu_park();
}

static void emu_entry(void)
{
	emu.fn(emu.args);
	emu_exit_thread();
}

static void emu_fiber_init(EmuFiber *f, char *stack)
{
	f->stack = stack;
#if defined(__x86_64__)
	uint64_t *sp = (uint64_t *)(((uintptr_t)stack + emu.stack) & ~(uintptr_t)15);
	*--sp = 0;                    /* the entry's return address: never used */
	*--sp = (uint64_t)(uintptr_t)emu_entry;
	for (int r = 0; r < 6; r++)
		*--sp = 0;
	f->sp = sp;
#else
	getcontext(&f->uc);
	f->uc.uc_stack.ss_sp = stack + 4096;
	f->uc.uc_stack.ss_size = emu.stack - 4096;
	f->uc.uc_link = NULL;
	makecontext(&f->uc, emu_entry, 0);
#endif
}

/* ---- happens-before ----
 * The shared-memory checks ask whether an earlier access (of thread u,
 * at u's clock c) happens before the running thread's.  A thread's clock
 * (clk, drawn from emu.epoch) moves on at each release, so that its
 * accesses since carry a value above what it released; the earlier access
 * happens before this thread's when
 *   c < emu.floor: a __syncthreads came between;
 *   u is of this thread's warp and c < wfl: a __syncwarp did;
 *   c <= vc[u]: a chain of releases and acquires did: bar.arrive and
 *     bar.sync release to the phase of their named barrier, whose
 *     completion the bar.sync threads acquire; mbarrier.arrive (and
 *     arrive.expect_tx) release to the mbarrier's phase, which a wait that
 *     sees it complete acquires; barrier.cluster.arrive releases to the
 *     cluster barrier's phase, which barrier.cluster.wait acquires.
 * The words a TMA (or bulk) copy lands are written by the mbarrier it
 * completes on, as by a thread of its own (number n + k of a block of n
 * threads, for mbarrier k): its phase's completion releases them to the
 * threads that wait on it, as an arrival does.  The operands a
 * wgmma.mma_async reads from shared memory are read by its warpgroup's
 * wgmma, as by a thread of its own too (number n + EMU_MAXMBAR + w for
 * warpgroup w), at a clock drawn when the last of the 128 threads issues
 * it, and that read lasts until the wgmma retires: a thread learns of it
 * at its wgmma.wait_group that retires the wgmma (wgk), and passes that
 * on at its releases, so an access is ordered after the read only through
 * a retirement (a write over an operand by a thread that learned only of
 * the release before the wait is a race).  Shuffles, votes and the
 * other warp collectives order no memory, as in CUDA's memory model.  A phase's arrivals are joined into one vector
 * clock (EmuRel), which the phase's acquirers share, as threads that
 * learn the same share theirs: vector clocks are immutable once made,
 * live in the running block's arena, and are dropped whole at a
 * __syncthreads, after which the floor says all they said. */

/* An earlier read of a word (EmuShared keeps the latest and chains the
 * others that no later read was ordered after). */
struct EmuRead {
	int t, prev, len; /* the reader; the read before it in the chain (or -1); the chain's length from here */
	int keep;         /* the chain's length after it was last pruned */
	uint64_t c;       /* the reader's clock */
	unsigned pf;      /* the reader's fence.proxy.async count at the read */
};

/* A block's vector clocks (chunks of growing size, kept across resets)
 * and chained reads, dropped at each __syncthreads.  A chain's reads go
 * back to a free list when a write orders them all, or when pruning finds
 * one ordered before a later read or behind a later one of the same
 * reader, so that a loop without a __syncthreads (a warp-specialized
 * kernel's) keeps as many as are unordered, not every one it made. */
enum { EMU_CHUNKS = 40, EMU_MAXMBAR = 64, EMU_READERS = EMU_MAXT + EMU_MAXMBAR + EMU_MAXWG };
static struct EmuArena {
	char *chunk[EMU_CHUNKS];
	size_t size[EMU_CHUNKS];
	int n, cur;
	size_t used;
	EmuRead *log;
	int nlog, caplog, free; /* free: the first unused read of the log (chained by prev), or -1 */
	unsigned gen, seen[EMU_READERS]; /* pruning: the readers met in the chain, by gen */
} emu_arena[EMU_MAXCL];

static void emu_arena_reset(void)
{
	EmuArena *a = &emu_arena[emu.rank];
	a->cur = 0, a->used = 0, a->nlog = 0, a->free = -1;
}

/* The entries of a vector clock: the block's threads, then its
 * mbarriers, then its warpgroups' wgmma. */
static inline int emu_vcn(void) { return emu.n + EMU_MAXMBAR + EMU_MAXWG; }

/* The reader that stands for warpgroup w's wgmma.mma_async. */
static inline int emu_wgr(int w) { return emu.n + EMU_MAXMBAR + w; }

/* A vector clock, zeros, alive until the arena's reset. */
static uint64_t *emu_vc_new(void)
{
	EmuArena *a = &emu_arena[emu.rank];
	size_t need = (size_t)emu_vcn() * sizeof(uint64_t);
	for (;;) {
		if (a->cur == a->n) {
			size_t sz = ((size_t)1 << 20) << (a->n < 10 ? a->n : 10);
			char *m = a->n < EMU_CHUNKS ? (char *)malloc(sz) : NULL;
			if (!m) {
				fprintf(stderr, "emulator: no memory for vector clocks\n");
				abort();
			}
			a->chunk[a->n] = m, a->size[a->n] = sz, a->n++;
			a->used = 0;
		}
		if (a->used + need <= a->size[a->cur])
			break;
		a->cur++, a->used = 0;
	}
	uint64_t *v = (uint64_t *)(a->chunk[a->cur] + a->used);
	a->used += need;
	memset(v, 0, need);
	return v;
}

static int emu_read_log(int t, int prev, uint64_t c, unsigned pf)
{
	EmuArena *a = &emu_arena[emu.rank];
	int k = a->free;
	if (k >= 0)
		a->free = a->log[k].prev;
	else {
		if (a->nlog == a->caplog) {
			int cap = a->caplog ? 2 * a->caplog : 4096;
			EmuRead *l = (EmuRead *)realloc(a->log, (size_t)cap * sizeof *l);
			if (!l) {
				fprintf(stderr, "emulator: no memory for the reads of shared memory\n");
				abort();
			}
			a->log = l, a->caplog = cap;
		}
		k = a->nlog++;
	}
	a->log[k] = EmuRead{t, prev, prev >= 0 ? a->log[prev].len + 1 : 1, prev >= 0 ? a->log[prev].keep : 0, c, pf};
	return k;
}

/* The chain from read k is dropped: its reads are free again. */
static void emu_read_free(int k)
{
	EmuArena *a = &emu_arena[emu.rank];
	while (k >= 0) {
		int p = a->log[k].prev;
		a->log[k].prev = a->free;
		a->free = k;
		k = p;
	}
}

/* Thread u's access at clock c happens before f's next one. */
static inline int emu_hb(int u, uint64_t c, const EmuFiber *f)
{
	if (c < emu.floor || u == (int)f->tid.x || (u >> 5 == f->warp && c < f->wfl) || (f->vc && c <= f->vc[u]))
		return 1;
	int w = u - emu.n - EMU_MAXMBAR;
	return w >= 0 && c <= f->wgk[w];
}

/* The releases to a barrier's phase, joined; the last two completed
 * phases' joins (by the parity of their number), each with the vector
 * clocks it holds whole and the joins with it its acquirers made. */
enum { EMU_RELSEEN = 8, EMU_RELMEMO = 4 };
struct EmuRel {
	uint64_t *acc; /* this phase's releases so far, or NULL */
	const uint64_t *seen[EMU_RELSEEN];
	int nseen;
	const uint64_t *done[2];
	const uint64_t *dseen[2][EMU_RELSEEN];
	int ndseen[2];
	const uint64_t *memo[2][EMU_RELMEMO][2];
	int nmemo[2];
};

/* Each block's arrivals at the cluster barrier (the clusters section). */
static EmuRel emu_clrel[EMU_MAXCL];

static void emu_rel_drop(EmuRel *r)
{
	r->acc = NULL, r->nseen = 0;
	r->done[0] = r->done[1] = NULL;
	r->ndseen[0] = r->ndseen[1] = r->nmemo[0] = r->nmemo[1] = 0;
}

/* f releases to r's phase: what it did and knows. */
static void emu_release(EmuRel *r, EmuFiber *f)
{
	if (!r->acc)
		r->acc = emu_vc_new(), r->nseen = 0;
	uint64_t *a = r->acc;
	int me = (int)f->tid.x;
	if (a[me] < f->clk)
		a[me] = f->clk;
	if (f->wfl > emu.floor)
		for (int l = 32 * f->warp; l < 32 * f->warp + 32; l++)
			if (a[l] < f->wfl - 1)
				a[l] = f->wfl - 1;
	for (int w = 0; w < emu.n / 128; w++)
		if (a[emu_wgr(w)] < f->wgk[w])
			a[emu_wgr(w)] = f->wgk[w];
	if (f->vc) {
		int k = 0;
		while (k < r->nseen && r->seen[k] != f->vc)
			k++;
		if (k == r->nseen) {
			for (int u = 0; u < emu_vcn(); u++)
				if (a[u] < f->vc[u])
					a[u] = f->vc[u];
			if (r->nseen < EMU_RELSEEN)
				r->seen[r->nseen++] = f->vc;
		}
	}
	f->clk = ++emu.epoch;
}

/* r's phase completes: its number's parity p. */
static void emu_rel_complete(EmuRel *r, unsigned p)
{
	p &= 1;
	r->done[p] = r->acc;
	memcpy(r->dseen[p], r->seen, sizeof r->seen);
	r->ndseen[p] = r->nseen;
	r->nmemo[p] = 0;
	r->acc = NULL, r->nseen = 0;
}

/* f acquires the last completed phase of parity p of r. */
static void emu_acquire(EmuRel *r, unsigned p, EmuFiber *f)
{
	p &= 1;
	const uint64_t *j = r->done[p];
	if (!j || f->vc == j)
		return;
	for (int k = 0; k < r->ndseen[p]; k++)
		if (r->dseen[p][k] == f->vc) {
			f->vc = j;
			return;
		}
	if (!f->vc) {
		f->vc = j;
		return;
	}
	for (int k = 0; k < r->nmemo[p]; k++)
		if (r->memo[p][k][0] == f->vc) {
			f->vc = r->memo[p][k][1];
			return;
		}
	uint64_t *x = emu_vc_new();
	for (int u = 0; u < emu_vcn(); u++)
		x[u] = f->vc[u] > j[u] ? f->vc[u] : j[u];
	if (r->nmemo[p] < EMU_RELMEMO)
		r->memo[p][r->nmemo[p]][0] = f->vc, r->memo[p][r->nmemo[p]++][1] = x;
	f->vc = x;
}

/* Warp w's lanes meet at __syncwarp: each learns what the others did and knew. */
static void emu_warp_hb(int w)
{
	EmuFiber *l0 = &emu.f[32 * w];
	const uint64_t *v = NULL;
	int mixed = 0;
	for (int l = 0; l < 32; l++)
		if (l0[l].vc) {
			mixed |= v && l0[l].vc != v;
			v = l0[l].vc;
		}
	if (mixed) {
		uint64_t *x = emu_vc_new();
		for (int l = 0; l < 32; l++)
			if (l0[l].vc && (l == 0 || l0[l].vc != l0[l - 1].vc))
				for (int u = 0; u < emu_vcn(); u++)
					if (x[u] < l0[l].vc[u])
						x[u] = l0[l].vc[u];
		v = x;
	}
	uint64_t k[EMU_MAXWG] = {0};
	for (int l = 0; l < 32; l++)
		for (int g = 0; g < emu.n / 128; g++)
			if (k[g] < l0[l].wgk[g])
				k[g] = l0[l].wgk[g];
	uint64_t t = ++emu.epoch;
	for (int l = 0; l < 32; l++) {
		l0[l].vc = v, l0[l].wfl = t, l0[l].clk = t;
		memcpy(l0[l].wgk, k, sizeof k);
	}
}

static void emu_hb_cut(void);

/* ---- barriers and warps ---- */

/* A block whose threads meet at different __syncthreads in divergent code
 * (as many on each side) is reported, as the PTX ISA requires one barrier
 * instruction for all (bar.sync is .aligned).  The call sites are told
 * apart by their source line: not by the return address, which the host
 * compiler's tail duplication gives to two copies of one call (seen with
 * block_reduce over more than 16 warps).  A barrier in a helper reached
 * from two divergent callers is the same line to it. */
#define EMU_STR2(x) #x
#define EMU_STR(x) EMU_STR2(x)
#define __syncthreads() emu_syncthreads(__FILE__ ":" EMU_STR(__LINE__))
__attribute__((noinline)) static void emu_syncthreads(const char *site)
{
	EmuFiber *f = emu.cur;
	f->nbar++;
	f->bar_site = site;
	if (emu.nlive < emu.n)
		emu_fail("__syncthreads #%d reached after another thread of the block exited (differing barrier counts)",
			 f->nbar);
	if (++emu.bar_arrived == emu.n) {
		emu.bar_arrived = 0;
		emu_hb_cut();
		for (int t = 0; t < emu.n; t++) {
			if (strcmp(emu.f[t].bar_site, f->bar_site))
				emu_fail("__syncthreads #%d: thread %d waits at another __syncthreads call (%s) than this "
					 "thread (%s) (divergent barriers; every thread of the block must reach the same one)",
					 f->nbar, t, emu.f[t].bar_site, f->bar_site);
			if (emu.f[t].blocked == 1)
				emu.f[t].blocked = 0;
		}
		return;
	}
	f->blocked = 1;
	emu_to_sched();
}

/* Every lane of the warp deposits v; returns the 32 deposits, valid until
 * emu_warp_leave.  Two slot sets alternate, so a lane may enter the next
 * exchange while slower lanes still read this one. */
static const uint64_t *emu_warp_enter(unsigned mask, uint64_t v, const char *what)
{
	EmuFiber *f = emu.cur;
	if (mask != 0xffffffffu)
		emu_fail("%s with a partial mask (0x%x) is not emulated", what, mask);
	int w = f->warp, p = f->seq & 1;
	emu.slot[w][p][f->lane] = v;
	emu.op[w][p][f->lane] = what;
	if (++emu.arrive[w][p] == 32) {
		/* on a GPU lanes at different collectives pair up as they come; the
		 * names are literals, so equal pointers are the common case */
		for (int l = 0; l < 32; l++)
			if (emu.op[w][p][l] != what && strcmp(emu.op[w][p][l], what))
				emu_fail("warp %d: lane %d is at %s while lane %d is at %s (every lane of the mask must "
					 "reach the same collective)", w, l, emu.op[w][p][l], f->lane, what);
		if (!strcmp(what, "__syncwarp"))
			emu_warp_hb(w);
		for (int l = 0; l < 32; l++)
			if (emu.f[w * 32 + l].blocked == 2)
				emu.f[w * 32 + l].blocked = 0;
	} else {
		f->blocked = 2;
		emu_to_sched();
	}
	return emu.slot[w][p];
}

static void emu_warp_leave(void)
{
	EmuFiber *f = emu.cur;
	int w = f->warp, p = f->seq & 1;
	if (++emu.depart[w][p] == 32)
		emu.arrive[w][p] = emu.depart[w][p] = 0;
	f->seq++;
}

template <class T> static T emu_shfl(unsigned mask, T v, int src, const char *what)
{
	static_assert(sizeof(T) <= 8, "shuffle of a value over 8 bytes");
	uint64_t u = 0;
	memcpy(&u, &v, sizeof v);
	const uint64_t *s = emu_warp_enter(mask, u, what);
	u = s[src < 0 || src > 31 ? emu.cur->lane : src];
	emu_warp_leave();
	T r;
	memcpy(&r, &u, sizeof r);
	return r;
}

template <class T> static T __shfl_sync(unsigned m, T v, int src, int width = 32)
{
	int l = emu.cur->lane;
	return emu_shfl(m, v, (l & ~(width - 1)) + (src & (width - 1)), "__shfl_sync");
}
/* The offsets and masks of down, up and xor count in their low 5 bits
 * (PTX shfl.sync: bval[4:0] = b[4:0]): an offset of 33 is one of 1. */
template <class T> static T __shfl_down_sync(unsigned m, T v, unsigned d, int width = 32)
{
	int l = emu.cur->lane, s = l + (int)(d & 31);
	return emu_shfl(m, v, (s & ~(width - 1)) == (l & ~(width - 1)) ? s : l, "__shfl_down_sync");
}
template <class T> static T __shfl_up_sync(unsigned m, T v, unsigned d, int width = 32)
{
	int l = emu.cur->lane, s = l - (int)(d & 31);
	return emu_shfl(m, v, s >= (l & ~(width - 1)) ? s : l, "__shfl_up_sync");
}
template <class T> static T __shfl_xor_sync(unsigned m, T v, int x, int width = 32)
{
	int l = emu.cur->lane, s = l ^ (x & 31);
	return emu_shfl(m, v, s < ((l & ~(width - 1)) + width) ? s : l, "__shfl_xor_sync");
}
static unsigned __ballot_sync(unsigned m, int pred)
{
	const uint64_t *s = emu_warp_enter(m, pred != 0, "__ballot_sync");
	unsigned r = 0;
	for (int l = 0; l < 32; l++)
		r |= (unsigned)(s[l] != 0) << l;
	emu_warp_leave();
	return r;
}
static int __all_sync(unsigned m, int p) { return __ballot_sync(m, p) == 0xffffffffu; }
static int __any_sync(unsigned m, int p) { return __ballot_sync(m, p) != 0; }
static void __syncwarp(unsigned m = 0xffffffffu)
{
	emu_warp_enter(m, 0, "__syncwarp");
	emu_warp_leave();
}

/* ---- named barriers: bar.sync id, count and bar.arrive id, count ----
 * Barrier 0 is __syncthreads'; ids 1 to 15 count the threads that arrive
 * (bar.arrive goes on, bar.sync waits) until `count` have, every one of a
 * phase naming the same count, each thread once a phase.  A phase that
 * never completes is reported: as a deadlock where threads wait in it, at
 * the block's end where only bar.arrive reached it.  Every arrival
 * releases to the phase and the bar.sync threads acquire it at its
 * completion (the hb section): the threads outside the barrier learn
 * nothing, so a race between them and its threads is reported. */
enum { EMU_NBAR = 16 };
static struct {
	int arrived[EMU_NBAR], count[EMU_NBAR], first[EMU_NBAR];
	unsigned phase[EMU_NBAR];
	EmuRel rel[EMU_NBAR];
} emu_nb;

static void emu_bar(int id, int count, int sync)
{
	EmuFiber *f = emu.cur;
	const char *op = sync ? "bar.sync" : "bar.arrive";
	if (id < 1 || id >= EMU_NBAR)
		emu_fail("%s %d, %d: named barriers are 1 to %d (0 is __syncthreads')", op, id, count, EMU_NBAR - 1);
	if (count < 32 || count % 32 || count > emu.n)
		emu_fail("%s %d, %d: the thread count must be a multiple of 32 up to the block's %d", op, id, count, emu.n);
	if (emu_nb.arrived[id] && emu_nb.count[id] != count)
		emu_fail("%s %d, %d: thread %d arrived in this phase of barrier %d with a count of %d (differing thread "
			 "counts)", op, id, count, emu_nb.first[id], id, emu_nb.count[id]);
	unsigned phase = emu_nb.phase[id];
	if (f->nbgen[id] == phase + 1)
		emu_fail("%s %d, %d: this thread already arrived in this phase of the barrier (%d of %d threads in; "
			 "differing barrier counts)", op, id, count, emu_nb.arrived[id], count);
	f->nbgen[id] = phase + 1;
	if (!emu_nb.arrived[id])
		emu_nb.count[id] = count, emu_nb.first[id] = (int)f->tid.x;
	EmuRel *r = &emu_nb.rel[id];
	emu_release(r, f);
	if (++emu_nb.arrived[id] == count) {
		emu_nb.arrived[id] = 0;
		emu_rel_complete(r, phase);
		emu_nb.phase[id]++;
		for (int t = 0; t < emu.n; t++)
			if (emu.f[t].blocked == 6 && emu.f[t].nb == id) {
				emu.f[t].blocked = 0;
				emu_acquire(r, phase, &emu.f[t]);
			}
		if (sync)
			emu_acquire(r, phase, f);
		return;
	}
	while (sync && emu_nb.phase[id] == phase) {
		f->nb = id;
		f->blocked = 6;
		emu_to_sched();
	}
}

/* ---- checked shared memory ---- */

/* pend of a word: 1 + the thread whose cp.async to it is in flight, -(1 +
 * the thread) whose TMA copy to it is, EMU_PEND_MBAR in an mbarrier, or 0.
 * wt of a word a TMA copy wrote: n + k, k its mbarrier (the hb section). */
enum { EMU_PEND_MBAR = -0x7fffffff };

/* The writer wt of a word, as a report names it; a reader r of one, with
 * when it read. */
static const char *emu_writer(int wt);
static const char *emu_reader(int r);

/* What would order an access of u before the running thread's, as a race
 * report asks it: a wgmma.wait_group or an mbarrier wait where u is a
 * wgmma or a TMA copy; where the two threads synchronize through named
 * barriers, the one they both join, or, in different groups (or through
 * mbarriers alone, as warp-specialized roles do), an mbarrier arrive and
 * wait; else __syncthreads. */
static const char *emu_hint(int u)
{
	static char b[192];
	if (u >= emu.n + EMU_MAXMBAR)
		return "missing wgmma.wait_group before the words were released?";
	if (u >= emu.n)
		return "missing mbarrier wait?";
	const EmuFiber *f = emu.cur, *o = &emu.f[u];
	int both = 0, mine = 0, theirs = 0;
	for (int id = EMU_NBAR - 1; id >= 1; id--)
		if (f->nbgen[id] && o->nbgen[id])
			both = id;
		else if (f->nbgen[id])
			mine = id;
		else if (o->nbgen[id])
			theirs = id;
	if (both)
		snprintf(b, sizeof b, "missing bar.sync %d, a named barrier both threads join, between the two accesses?",
			 both);
	else if (mine || theirs)
		snprintf(b, sizeof b, "missing a named barrier both threads join (thread %d is not in named barrier %d), or an "
			 "mbarrier arrive and wait?", mine ? u : (int)f->tid.x, mine ? mine : theirs);
	else if (f->mbuse || o->mbuse)
		snprintf(b, sizeof b, "missing mbarrier arrive and wait between the two threads?");
	else
		snprintf(b, sizeof b, "missing __syncthreads?");
	return b;
}

/* Whether u's read at clock cu is ordered before the read of me at c:
 * before the running thread's (f), or for a wgmma's read (f NULL), an
 * earlier read of the same warpgroup's wgmma (whose retirement comes first). */
static inline int emu_read_before(int u, uint64_t cu, int me, uint64_t c, const EmuFiber *f)
{
	return f ? emu_hb(u, cu, f) : u == me && cu <= c;
}

/* A shared array: the words and, per word, the checks' bookkeeping.  Static
 * arrays (ASC_SHARED) hold their storage; the dynamic one (ASC_DYN_SHARED)
 * points at storage sized by the launch's dynamic shared bytes. */
template <class T> struct EmuShared {
	T *v;
	uint64_t *wep, *rep; /* the clocks of the last write and the latest read */
	int *wt, *rt;        /* their threads */
	int *rl;             /* the chain of earlier reads not ordered before the latest (EmuRead), or -1 */
	int *pend;
	unsigned *wpf; /* the writer's fence.proxy.async count at the write */
	unsigned *rpf; /* the latest reader's at the read */
	long n;
	int dyn; /* sized at launch */
	const char *nm;
	/* the array of cluster rank crank; its peers' are cstride bytes apart */
	int crank;
	long cstride;

	void at(long i) const
	{
		if (i < 0 || i >= n) {
			if (dyn)
				emu_fail("out-of-bounds shared memory access: %s[%ld] outside [0, %ld) (the launch's %lu bytes of "
					 "dynamic shared memory)", nm, i, n, (unsigned long)(n * sizeof(T)));
			emu_fail("out-of-bounds shared memory access: %s[%ld] outside [0, %ld)", nm, i, n);
		}
	}
	void inflight(long i, const char *what) const
	{
		if (pend[i] == EMU_PEND_MBAR)
			emu_fail("%s of %s[%ld], a word of an mbarrier (an mbarrier object is not data)", what, nm, i);
		if (pend[i] < 0)
			emu_fail("%s of %s[%ld] while a TMA copy to it (issued by thread %d) is in flight (missing mbarrier "
				 "wait?)", what, nm, i, -pend[i] - 1);
		if (pend[i])
			emu_fail("%s of %s[%ld] while a cp.async of thread %d to it is in flight (missing "
				 "cp.async.wait_group%s?)", what, nm, i, pend[i] - 1,
				 pend[i] - 1 == (int)emu.cur->tid.x ? "" : ", or __syncthreads after it");
	}
	/* The writer of word i if its write does not happen before the running
	 * thread's next access, else -1. */
	int racing_write(long i) const { return wt[i] >= 0 && !emu_hb(wt[i], wep[i], emu.cur) ? wt[i] : -1; }
	/* A reader of word i whose read does not happen before the running
	 * thread's next access, or -1. */
	int racing_read(long i) const
	{
		const EmuFiber *f = emu.cur;
		if (rep[i] < emu.floor)
			return -1;
		if (!emu_hb(rt[i], rep[i], f))
			return rt[i];
		const EmuRead *lg = emu_arena[emu.rank].log;
		for (int k = rl[i]; k >= 0; k = lg[k].prev)
			if (!emu_hb(lg[k].t, lg[k].c, f))
				return lg[k].t;
		return -1;
	}
	/* The running thread reads word i: the latest read, the earlier ones
	 * not ordered before it chained (of a short chain, those ordered
	 * before it are dropped). */
	void note_read(long i) { note_read_by(i, (int)emu.cur->tid.x, emu.cur->clk, emu.cur); }
	/* Word i is read by me at clock c: the running thread f, or (f NULL)
	 * a warpgroup's wgmma (emu_wgr). */
	void note_read_by(long i, int me, uint64_t c, const EmuFiber *f)
	{
		if (rep[i] < emu.floor)
			rl[i] = -1;
		else if (rt[i] != me) {
			const EmuRead *lg = emu_arena[emu.rank].log;
			int k = rl[i];
			if (k >= 0 && (lg[k].len < 8 || lg[k].len >= 2 * lg[k].keep))
				rl[i] = prune(k, rt[i], me, c, f);
			if (!emu_read_before(rt[i], rep[i], me, c, f))
				rl[i] = emu_read_log(rt[i], rl[i], rep[i], rpf[i]);
		}
		rt[i] = me;
		rep[i] = c;
		rpf[i] = f ? f->pfence : 0;
	}
	/* A word's chain from read k without the reads ordered before the
	 * read of me at c, and of each reader all but its latest (latest: the
	 * reader of the word's latest read, newer than any in the chain): a
	 * later access that races with a dropped read races with one left
	 * too, as a reader's reads are ordered before its later ones.  A
	 * short chain is pruned at every read, a long one each time it has
	 * doubled since. */
	static int prune(int k, int latest, int me, uint64_t c, const EmuFiber *f)
	{
		EmuArena *a = &emu_arena[emu.rank];
		EmuRead *lg = a->log;
		unsigned g = ++a->gen;
		if (!g) { /* the generations wrapped: none may look met */
			memset(a->seen, 0, sizeof a->seen);
			g = a->gen = 1;
		}
		a->seen[latest] = g;
		int head = -1, tail = -1, nk = 0;
		while (k >= 0) {
			int next = lg[k].prev, t = lg[k].t;
			if (a->seen[t] == g || emu_read_before(t, lg[k].c, me, c, f)) {
				lg[k].prev = a->free;
				a->free = k;
			} else {
				a->seen[t] = g;
				if (tail >= 0)
					lg[tail].prev = k;
				else
					head = k;
				tail = k, nk++;
			}
			k = next;
		}
		if (tail >= 0)
			lg[tail].prev = -1;
		for (int j = 0, x = head; x >= 0; x = lg[x].prev, j++)
			lg[x].len = nk - j, lg[x].keep = nk;
		return head;
	}
	/* Word i's reads are forgotten (its chain, alive only while the latest
	 * read is after the last __syncthreads, freed). */
	void drop_reads(long i)
	{
		if (rep[i] >= emu.floor && rl[i] >= 0)
			emu_read_free(rl[i]);
		rl[i] = -1;
		rep[i] = 0;
	}
	T rd(long i)
	{
		at(i);
		inflight(i, "read");
		if (wep[i] < emu.block_epoch) /* on a GPU: whatever the last block on the SM left, or garbage */
			emu_fail("shared-memory race on %s[%ld]: read of a word no thread of this block has written yet "
				 "(missing __syncthreads before the read? shared memory starts undefined in every block)",
				 nm, i);
		int w = racing_write(i);
		if (w >= 0)
			emu_fail("shared-memory race on %s[%ld]: read of a word %s wrote since the last __syncthreads (%s)", nm,
				 i, emu_writer(w), emu_hint(w));
		note_read(i);
		return v[i];
	}
	/* A cp.async to word i begins: checked as a write now, the word
	 * unreadable until land() writes it at the wait that completes it. */
	void issue(long i)
	{
		at(i);
		inflight(i, "cp.async");
		int w = racing_write(i), r = w >= 0 ? -1 : racing_read(i);
		if (w >= 0)
			emu_fail("shared-memory race on %s[%ld]: cp.async over a word %s wrote since the last __syncthreads "
				 "(%s)", nm, i, emu_writer(w), emu_hint(w));
		if (r >= 0)
			emu_fail("shared-memory race on %s[%ld]: cp.async over a word %s (%s)", nm, i, emu_reader(r),
				 emu_hint(r));
		pend[i] = (int)emu.cur->tid.x + 1;
	}
	/* A thread of this block whose read of word i no fence.proxy.async of
	 * its own has followed yet, or -1 (a wgmma's read is the async proxy's). */
	int unfenced_read(long i) const
	{
		if (rep[i] < emu.block_epoch)
			return -1;
		if (rt[i] < emu.n && rpf[i] == emu.f[rt[i]].pfence)
			return rt[i];
		if (rep[i] < emu.floor)
			return -1;
		const EmuRead *lg = emu_arena[emu.rank].log;
		for (int k = rl[i]; k >= 0; k = lg[k].prev)
			if (lg[k].t < emu.n && lg[k].pf == emu.f[lg[k].t].pfence)
				return lg[k].t;
		return -1;
	}
	/* A TMA or bulk copy the running thread issues will write word i: the
	 * accesses before it happen before the issue, and the generic proxy's
	 * reads of it are fenced off from the async proxy's write (else the
	 * copy may land before a read it is ordered after). */
	void over(long i, const char *what)
	{
		int w = racing_write(i), r = w >= 0 ? -1 : racing_read(i);
		if (r >= emu.n + EMU_MAXMBAR)
			emu_fail("shared-memory race on %s[%ld]: %s over a word %s (%s)", nm, i, what, emu_reader(r),
				 emu_hint(r));
		if (w >= 0 || r >= 0)
			emu_fail("shared-memory race on %s[%ld]: %s over a word %s %s, with no barrier ordering that "
				 "before the copy (missing mbarrier wait for the stage to be free?)", nm, i, what,
				 emu_writer(w >= 0 ? w : r), w >= 0 ? "wrote" : "read");
		if ((r = unfenced_read(i)) >= 0)
			emu_fail("%s over %s[%ld], read by thread %d without fence.proxy.async after the read (a generic "
				 "read and the async proxy's write: the reader fences before the arrival that frees the word)",
				 what, nm, i, r);
	}
	void land(long i, const T &x)
	{
		pend[i] = 0;
		wr(i, x);
	}
	void wr(long i, const T &x)
	{
		at(i);
		inflight(i, "write");
		int w = racing_write(i);
		if (w >= 0)
			emu_fail("shared-memory race on %s[%ld]: two threads write it between barriers (%s, then this one; "
				 "%s)", nm, i, emu_writer(w), emu_hint(w));
		int r = racing_read(i);
		if (r >= 0)
			emu_fail("shared-memory race on %s[%ld]: write over a word %s (%s)", nm, i, emu_reader(r), emu_hint(r));
		wep[i] = emu.cur->clk;
		wt[i] = (int)emu.cur->tid.x;
		drop_reads(i); /* they happen before this write, so before what is ordered after it */
		wpf[i] = emu.cur->pfence;
		v[i] = x;
	}
	struct Ref {
		EmuShared *s;
		long i;
		operator T() const { return s->rd(i); }
		Ref &operator=(const T &x)
		{
			s->wr(i, x);
			return *this;
		}
		Ref &operator=(const Ref &r)
		{
			s->wr(i, (T)r);
			return *this;
		}
		Ref &operator+=(const T &x)
		{
			s->wr(i, s->rd(i) + x);
			return *this;
		}
	};
	Ref operator[](long i) { return Ref{this, i}; }
};

template <class T, int N> struct EmuStaticShared : EmuShared<T> {
	alignas(16) T sv[N];
	uint64_t swep[N], srep[N];
	int swt[N], srt[N], srl[N], spend[N];
	unsigned swpf[N], srpf[N];
	EmuStaticShared()
	{
		this->v = sv, this->wep = swep, this->rep = srep, this->wt = swt, this->rt = srt, this->pend = spend;
		this->rl = srl;
		this->wpf = swpf, this->rpf = srpf;
		this->n = N, this->dyn = 0;
	}
};
/* one array a cluster rank: the blocks of a cluster run together */
#define ASC_SHARED(T, name, n)                                                                         \
	static EmuStaticShared<T, (n)> name##_emu_cl[EMU_MAXCL];                                       \
	EmuStaticShared<T, (n)> &name = name##_emu_cl[emu.rank];                                       \
	name.nm = #name, name.crank = emu.rank, name.cstride = (long)sizeof name##_emu_cl[0]

/* Dynamic shared memory: one array of T per kernel (on the GPU every
 * extern __shared__ array starts at the same address), as many elements as
 * the launch's bytes hold.  Storage is kept across launches of the same
 * size; the per-block epoch resets the race checks as for static arrays. */
/* The blocks of a kernel's dynamic shared memory, freed when the module
 * is unloaded (a static's destructor runs at dlclose): the library loads
 * a module a run, and each kept a megabyte of attention's stages. */
struct EmuDynMem {
	void *p[EMU_MAXCL];
	~EmuDynMem()
	{
		for (int r = 0; r < EMU_MAXCL; r++)
			free(p[r]);
	}
};

template <class T> static EmuShared<T> &emu_dyn_shared(const char *nm)
{
	static EmuShared<T> dc[EMU_MAXCL];
	static EmuDynMem mc;
	EmuShared<T> &d = dc[emu.rank];
	void *&mem = mc.p[emu.rank];
	long n = (long)(emu.dyn_bytes / sizeof(T));
	if (!mem || d.n != n) {
		free(mem);
		size_t words = n > 0 ? (size_t)n : 1, at = 0;
		size_t off_v = at, off_wep = (at += (words * sizeof(T) + 15) / 16 * 16), off_rep = (at += words * 8);
		size_t off_wt = (at += words * 8), off_rt = (at += words * 4), off_pend = (at += words * 4);
		size_t off_wpf = (at += words * 4), off_rpf = (at += words * 4), off_rl = (at += words * 4);
		at += words * 4;
		mem = aligned_alloc(16, (at + 15) / 16 * 16);
		if (!mem) {
			fprintf(stderr, "emulator: no memory for %zu bytes of dynamic shared memory\n", emu.dyn_bytes);
			abort();
		}
		memset(mem, 0, (at + 15) / 16 * 16);
		char *b = (char *)mem;
		d.v = (T *)(b + off_v), d.wep = (uint64_t *)(b + off_wep), d.rep = (uint64_t *)(b + off_rep);
		d.wt = (int *)(b + off_wt), d.rt = (int *)(b + off_rt), d.pend = (int *)(b + off_pend);
		d.wpf = (unsigned *)(b + off_wpf), d.rpf = (unsigned *)(b + off_rpf), d.rl = (int *)(b + off_rl);
		d.n = n, d.dyn = 1;
	}
	d.nm = nm, d.crank = emu.rank, d.cstride = (long)sizeof dc[0];
	return d;
}
#define ASC_DYN_SHARED(T, name) EmuShared<T> &name = emu_dyn_shared<T>(#name)

/* ---- ldmatrix.sync.aligned.m8n8.{x1,x2,x4}[.trans].shared.b16 ----
 * A warp collective: lane 8q + r gives the address of row r of matrix q
 * (16 bytes: 8 halves), for q < num.  Without .trans, lane l receives in
 * register q the halves (row l/4, cols 2(l%4), 2(l%4)+1) of matrix q; with
 * .trans, the halves (rows 2(l%4), 2(l%4)+1, col l/4).  The first element
 * is in the low half. */
static unsigned emu_ldsm_slot[EMU_MAXT / 32][2][32][4];

static inline unsigned emu_half_of(const unsigned *row, int c) { return (row[c / 2] >> (16 * (c & 1))) & 0xffffu; }

template <class T> static void emu_ldmatrix(unsigned *r, EmuShared<T> &s, long i, int num, int trans)
{
	static_assert(sizeof(T) == 4, "ldmatrix is emulated on shared arrays of 32-bit words");
	EmuFiber *me = emu.cur;
	unsigned(*rows)[4] = emu_ldsm_slot[me->warp][me->seq & 1];
	if (me->lane < 8 * num) {
		if (i % 4)
			emu_fail("ldmatrix: row address %s[%ld] is not 16-byte aligned", s.nm, i);
		for (int k = 0; k < 4; k++)
			rows[me->lane][k] = (unsigned)s.rd(i + k);
	}
	emu_warp_enter(0xffffffffu, 0, "ldmatrix");
	int l = me->lane;
	for (int q = 0; q < num; q++)
		if (trans)
			r[q] = emu_half_of(rows[8 * q + 2 * (l % 4)], l / 4) | emu_half_of(rows[8 * q + 2 * (l % 4) + 1], l / 4) << 16;
		else
			r[q] = rows[8 * q + l / 4][l % 4];
	emu_warp_leave();
}

/* ---- cp.async.cg.shared.global [dst], [src], 16, src_size ----
 * Each thread keeps its copies in flight with the number of the commit
 * group they belong to; cp.async.wait_group n lands every copy of the
 * thread's committed groups but the newest n (shared words written by that
 * thread, at that moment).  src_size < 16 fills the rest with zeros. */
struct EmuAsync {
	void *arr;
	void (*land)(void *, long, const unsigned char *); /* NULL bytes: forget the copy (the block ended) */
	long i;
	unsigned group;
	unsigned char b[16];
};
enum { EMU_MAXASYNC = 256 }; /* three stages of K and V and the Q tile, at 64 threads */
static EmuAsync emu_async[EMU_MAXT][EMU_MAXASYNC];

template <class T> static void emu_land(void *arr, long i, const unsigned char *b)
{
	EmuShared<T> *s = (EmuShared<T> *)arr;
	for (int k = 0; k < 16 / (int)sizeof(T); k++) {
		if (!b) { /* the array may have been resized by a later launch since */
			if (i + k < s->n)
				s->pend[i + k] = 0;
			continue;
		}
		T x;
		memcpy(&x, b + k * sizeof(T), sizeof x);
		s->land(i + k, x);
	}
}

template <class T> static void emu_cp_async(EmuShared<T> &s, long i, const void *src, int size)
{
	static_assert(16 % sizeof(T) == 0, "cp.async into a shared array of odd element size");
	EmuFiber *f = emu.cur;
	if ((uintptr_t)src % 16 || (i * sizeof(T)) % 16)
		emu_fail("cp.async of 16 bytes: misaligned %s (%s[%ld], global %p)", (uintptr_t)src % 16 ? "source" : "destination",
			 s.nm, i, src);
	if (size < 0 || size > 16)
		emu_fail("cp.async: source size %d outside [0, 16]", size);
	if (f->nasync == EMU_MAXASYNC)
		emu_fail("more than %d cp.async in flight in one thread (missing cp.async.wait_group?)", EMU_MAXASYNC);
	EmuAsync *a = &emu_async[f->tid.x][f->nasync++];
	a->arr = &s, a->land = emu_land<T>, a->i = i, a->group = f->group;
	memset(a->b, 0, sizeof a->b);
	memcpy(a->b, src, size);
	emu.ld_bytes += size;
	for (int k = 0; k < 16 / (int)sizeof(T); k++)
		s.issue(i + k);
}

static void emu_cp_commit(void) { emu.cur->group++; }

static void emu_cp_wait(int n)
{
	EmuFiber *f = emu.cur;
	EmuAsync *q = emu_async[f->tid.x];
	int keep = 0;
	for (int k = 0; k < f->nasync; k++)
		if (q[k].group + n < f->group)
			q[k].land(q[k].arr, q[k].i, q[k].b);
		else
			q[keep++] = q[k];
	f->nasync = keep;
}

/* ---- global memory, counted ---- */

/* A load or store at an address its type's alignment does not divide
 * (a 16-byte vector off 16 bytes) faults on a GPU: reported.  Vector
 * loads (of a class type of 8 or 16 bytes, as the row templates' groups
 * of 4 elements) are counted across launches (emu_vec_loads), so that a
 * test can tell which loop read a row. */
static unsigned long long emu_vec_total;
template <class T> static void emu_align(const T *p, const char *what)
{
	if ((uintptr_t)p % alignof(T))
		emu_fail("global %s of %zu bytes at %p, which is not %zu-byte aligned", what, sizeof(T), (const void *)p,
			 alignof(T));
}
template <class T> static inline T emu_ld(const T *p)
{
	emu_align(p, "load");
	emu.ld_bytes += sizeof(T);
	if (__is_class(T) && (sizeof(T) == 8 || sizeof(T) == 16))
		emu_vec_total++;
	return *p;
}
template <class T, class U> static inline void emu_st(T *p, U v)
{
	emu_align(p, "store");
	emu.st_bytes += sizeof(T);
	*p = (T)v;
}
template <class T> static inline T __ldg(const T *p) { return *p; }

/* ---- atomics (one OS thread runs every fiber, so plain updates are atomic) ---- */
static inline void __threadfence() {}
template <class T> static T atomicAdd(T *p, T v)
{
	T o = *p;
	*p = o + v;
	return o;
}
template <class T> static T atomicMax(T *p, T v)
{
	T o = *p;
	*p = o > v ? o : v;
	return o;
}
template <class T> static T atomicMin(T *p, T v)
{
	T o = *p;
	*p = o < v ? o : v;
	return o;
}
template <class T> static T atomicExch(T *p, T v)
{
	T o = *p;
	*p = v;
	return o;
}
template <class T> static T atomicCAS(T *p, T cmp, T v)
{
	T o = *p;
	if (o == cmp)
		*p = v;
	return o;
}

/* ---- math and conversions ---- */
static inline float __int_as_float(int i)
{
	float f;
	memcpy(&f, &i, 4);
	return f;
}
static inline int __float_as_int(float f)
{
	int i;
	memcpy(&i, &f, 4);
	return i;
}
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
/* __expf and __logf: glibc's */
static inline float __fdividef(float x, float y) { return x / y; }
static inline float __saturatef(float x) { return x < 0 ? 0 : x > 1 ? 1 : x; }
static inline int max(int a, int b) { return a > b ? a : b; }
static inline int min(int a, int b) { return a < b ? a : b; }
static inline float emu_half_to_float(unsigned short h)
{
	unsigned s = (unsigned)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff, u;
	if (e == 0x1f)
		u = s | 0x7f800000 | (m << 13);
	else if (e)
		u = s | ((e + 112) << 23) | (m << 13);
	else if (!m)
		u = s;
	else {
		float f = (float)m * 0x1p-24f;
		return s ? -f : f;
	}
	return __int_as_float((int)u);
}
static inline float __half2float(unsigned short h) { return emu_half_to_float(h); }
static inline float __bfloat162float(unsigned short h) { return __int_as_float((int)((unsigned)h << 16)); }

/* ---- tensor cores: mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.f32
 * and m16n8k32.row.col.f32.e4m3.e4m3.f32 ----
 * A warp collective, as on the GPU: every lane deposits its fragments, and
 * each lane then computes its own four results from the whole warp's.
 * Fragment layout (PTX ISA, m16n8k16 with .f16/.bf16 inputs): lane =
 * groupID * 4 + tig; A (16x16, row-major) is 4 .b32 of two halves each:
 * a0 = (row g, cols 2tig, 2tig+1), a1 = row g+8, a2 = row g, cols +8,
 * a3 = row g+8, cols +8; B (16x8, "col") is 2 .b32: b0 = (rows 2tig,
 * 2tig+1, col g), b1 = rows +8; C and D (16x8 f32) are 4 floats: c0, c1 =
 * (row g, cols 2tig, 2tig+1), c2, c3 = row g+8.  With .e4m3 (k = 32) each
 * .b32 holds four bytes, the k of the register's first growing by 4 a
 * tig and its bytes the next k: A's a0 = (row g, cols 4tig .. 4tig+3),
 * a1 = row g+8, a2 = row g, cols +16, a3 = row g+8, cols +16; B's b0 =
 * (rows 4tig .. 4tig+3, col g), b1 = rows +16.  The same bytes of a
 * row as the 16-bit layout's, 16 byte-wide elements to a row's 32 bytes
 * where it has 8 halves to 16: with es the element's bytes and b = k es,
 * lane g * 4 + (b % 16) / 4, register (b >= 16), byte b % 4.  Products
 * are exact in float; the sum of the k products and c is rounded once. */
struct EmuMmaFrag {
	unsigned a[4], b[2];
	float c[4];
};
static EmuMmaFrag emu_mma_slot[EMU_MAXT / 32][2][32];

/* Operand kinds: 0 f16, 1 bf16, 2 e4m3 (k = 32: one byte an element). */
enum { EMU_E4M3 = 2 };

static inline float emu_e4m3_to_float(unsigned b)
{
	unsigned em = b & 0x7fu;
	float v = em == 0x7fu ? __int_as_float(0x7fc00000) : em >= 8 ? __int_as_float((int)((em << 20) + (120u << 23)))
								 : (float)(int)em * 0.001953125f;
	return b & 0x80u ? -v : v;
}

static inline float emu_half_bits(unsigned short h, int bf)
{
	return bf == EMU_E4M3 ? emu_e4m3_to_float(h) : bf ? __int_as_float((int)((unsigned)h << 16)) : emu_half_to_float(h);
}

/* Bits of the element at byte b of word w, es bytes wide. */
static inline unsigned short emu_elem_of(unsigned w, unsigned b, int es)
{
	return (unsigned short)(es == 1 ? (w >> 8 * (b % 4)) & 0xffu : b & 2 ? w >> 16 : w & 0xffffu);
}

/* The (row, k) element of A and the (k, col) element of B from the deposits. */
static inline float emu_mma_a(const EmuMmaFrag *f, int row, int k, int bf)
{
	unsigned es = bf == EMU_E4M3 ? 1 : 2, b = (unsigned)k * es;
	int lane = (row & 7) * 4 + (int)(b % 16) / 4, reg = (row >= 8) + 2 * (b >= 16);
	return emu_half_bits(emu_elem_of(f[lane].a[reg], b, (int)es), bf);
}
static inline float emu_mma_b(const EmuMmaFrag *f, int k, int col, int bf)
{
	unsigned es = bf == EMU_E4M3 ? 1 : 2, b = (unsigned)k * es;
	int lane = col * 4 + (int)(b % 16) / 4;
	return emu_half_bits(emu_elem_of(f[lane].b[b >= 16], b, (int)es), bf);
}

/* An exchange's A and B as floats, decoded by the first of its lanes to
 * read them: each lane's four dot products read 32 elements of each, and
 * decoding them lane by lane was most of an attention kernel's time on
 * the emulator.  ready is cleared by every lane as it deposits: no lane
 * reads until all 32 have, and none deposits into this slot set again
 * before every lane has left this exchange (the next one, of the other
 * set, holds it back). */
struct EmuMmaOps {
	float a[16][32], b[32][8];
	int ready;
};
static EmuMmaOps emu_mma_ops[EMU_MAXT / 32][2];

/* m16n8k16 (f16, bf16) or, with bf EMU_E4M3, m16n8k32 on e4m3. */
static void emu_mma_16816(float d[4], const unsigned a[4], const unsigned b[2], const float c[4], int bf)
{
	EmuFiber *me = emu.cur;
	EmuMmaFrag *slot = emu_mma_slot[me->warp][me->seq & 1];
	EmuMmaOps *ops = &emu_mma_ops[me->warp][me->seq & 1];
	memcpy(slot[me->lane].a, a, sizeof slot->a);
	memcpy(slot[me->lane].b, b, sizeof slot->b);
	memcpy(slot[me->lane].c, c, sizeof slot->c);
	ops->ready = 0;
	emu_warp_enter(0xffffffffu, 0, "mma.sync");
	int g = me->lane / 4, t = me->lane % 4, kk = bf == EMU_E4M3 ? 32 : 16;
	if (!ops->ready) {
		for (int row = 0; row < 16; row++)
			for (int k = 0; k < kk; k++)
				ops->a[row][k] = emu_mma_a(slot, row, k, bf);
		for (int k = 0; k < kk; k++)
			for (int col = 0; col < 8; col++)
				ops->b[k][col] = emu_mma_b(slot, k, col, bf);
		ops->ready = 1;
	}
	float r[4];
	for (int q = 0; q < 4; q++) {
		int row = g + 8 * (q >= 2), col = 2 * t + (q & 1);
		double acc = slot[me->lane].c[q];
		for (int k = 0; k < kk; k++)
			acc += (double)ops->a[row][k] * (double)ops->b[k][col];
		r[q] = (float)acc;
	}
	emu_warp_leave();
	memcpy(d, r, sizeof r);
}

/* Round to nearest even into f16 / bf16 bits (cvt.rn.f16.f32, cvt.rn.bf16.f32). */
static inline unsigned short emu_float_to_bf16(float f)
{
	unsigned u = (unsigned)__float_as_int(f);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return 0x7fc0;
	return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}
static inline unsigned short emu_float_to_half(float f)
{
	unsigned u = (unsigned)__float_as_int(f), s = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
	if (a > 0x7f800000u)
		return 0x7e00;
	if (a >= 0x477ff000u) /* rounds to 65520 or more: infinity */
		return (unsigned short)(s | 0x7c00);
	if (a < 0x38800000u) { /* below 2^-14: subnormal, in units of 2^-24 */
		float v = __int_as_float((int)a) * 0x1p24f;
		return (unsigned short)(s | (unsigned)nearbyintf(v));
	}
	unsigned r = a - 0x38000000u; /* rebias exponent 127 -> 15 */
	r = (r + 0xfffu + ((r >> 13) & 1)) >> 13;
	return (unsigned short)(s | r);
}
/* Round to nearest even into e4m3 bits, saturating to +-448
 * (cvt.rn.satfinite.e4m3x2.f32); a NaN gives 0x7f. */
static inline unsigned char emu_float_to_e4m3(float f)
{
	unsigned u = (unsigned)__float_as_int(f), s = (u >> 24) & 0x80u, a = u & 0x7fffffffu;
	if (a > 0x7f800000u)
		return 0x7f;
	if (a >= 0x43e80000u) /* 464 (a tie that goes to the even 448), above it, infinity: 448 */
		return (unsigned char)(s | 0x7eu);
	if (a < 0x3c800000u) { /* below 2^-6: subnormal, in units of 2^-9 (8 of them: 2^-6, the first normal) */
		float v = __int_as_float((int)a) * 0x1p9f;
		return (unsigned char)(s | (unsigned)nearbyintf(v));
	}
	unsigned r = a - (120u << 23); /* rebias exponent 127 -> 7 */
	r = (r + 0x7ffffu + ((r >> 20) & 1)) >> 20;
	return (unsigned char)(s | r);
}

/* ---- Hopper: mbarriers, TMA tile loads, wgmma, setmaxnreg ----
 * The instructions templates/hopper.cuh wraps, on shared arrays of 32-bit
 * words.  A shared address is a byte offset in one array, the window: the
 * one asc_smem_addr was given (on the GPU, the dynamic shared array).
 *
 * An mbarrier (two words, 8-byte aligned) counts the arrivals its phase
 * still waits for and its transaction bytes (tx-count); the phase
 * completes when both are zero, and the next one begins with the init's
 * count.  Its words are no data: a read or write of them is reported.  A
 * TMA tile load copies its box, each 16-byte chunk at its swizzled
 * address, and stays in flight (its words poisoned, as cp.async's) until
 * a thread waits on the phase it completes: the wait lands it and
 * subtracts its bytes; a 1D bulk copy (cp.async.bulk) is one of
 * consecutive words, landing the same way.  Both write through the async
 * proxy: a copy over a word that a thread of the block read (through the
 * generic proxy) is reported unless that thread has executed
 * fence.proxy.async since the read (a barrier that orders the read before
 * the issue does not keep the copy from landing before it), as a wgmma's
 * read of a word written without one is; and so is a block that exits
 * with a copy in flight (on the GPU it would land in shared memory, and
 * complete an mbarrier, of the next block on the SM).
 * wgmma.mma_async is recorded at issue; its operands are read when the
 * last of the warpgroup's 128 threads has issued it, and that read lasts
 * until the wgmma retires: a write over an operand is ordered after it
 * only through a thread's wgmma.wait_group that retires it (the hb
 * section), so one after a release made before that wait is reported.
 * Each thread's D is written at the wgmma.wait_group that retires it,
 * so D read earlier is stale, and D written meanwhile (or an operand
 * changed) is reported. */

enum { EMU_MAXTMA = 256, EMU_WGRING = 32 };

struct EmuMbar {
	EmuShared<unsigned> *s;
	long at;
	unsigned count, pending, phase; /* phase: the number of phases completed */
	long long tx;
	int init_t, fenced;
	uint64_t init_clk; /* the initializing thread's clock at the init */
	uint64_t landed;   /* the clock its copies last landed at (the hb section) */
	EmuRel rel;        /* the arrivals' releases */
};

struct EmuTma {
	EmuShared<unsigned> *s;
	int bar, t; /* the mbarrier (emu_hop.bar) it completes on; the issuing thread */
	long nw;
	long *at;
	unsigned *v;
	unsigned bytes;
};

/* One wgmma.mma_async of a warpgroup: what the first issuer gave, each
 * thread's part, the operands as read once all 128 had issued it. */
struct EmuWgOp {
	int n, bf, ta, tb, rs, first;
	unsigned long long da, db;
	int issued, executed, checked;
	uint64_t iclk; /* the clock of its operand reads (the hb section): drawn when the last thread issued it, and
			  again at a __syncthreads it is in flight across */
	unsigned short a[64][32], b[32][256]; /* raw f16/bf16/e4m3 bits (k < 16, or 32 for e4m3) */
	float fa[64][32], fb[32][256];         /* their values */
	struct {
		float *d;
		int sc, chained; /* chained: an earlier wgmma in flight accumulates into the same d */
		unsigned a[4], grp;
		float snap[128]; /* d as the wgmma must find it at execution */
	} t[128];
};

static struct {
	EmuShared<unsigned> *win;
	EmuMbar bar[EMU_MAXMBAR];
	int nbar;
	EmuTma tma[EMU_MAXTMA];
	int ntma;
	EmuWgOp *ring[EMU_MAXWG][EMU_WGRING];
	unsigned next[EMU_MAXWG], oldest[EMU_MAXWG]; /* wgmma numbers: the next to begin, the oldest not retired */
	int rv_n[EMU_MAXWG], rv_regs[EMU_MAXWG], rv_t[EMU_MAXWG]; /* setmaxnreg rendezvous */
	int regs[EMU_MAXWG]; /* each warpgroup's count after its last setmaxnreg, 0 before any */
	const char *rv_op[EMU_MAXWG];
	unsigned rv_gen[EMU_MAXWG];
} emu_hop;

static EmuWgOp *emu_wg_slot(int wg, unsigned seq);
static void emu_wg_note(EmuWgOp *op, int wg);

/* A __syncthreads completes: every access so far happens before every
 * thread's next, and what the vector clocks said the floor says; but the
 * operand reads of a wgmma that no thread has retired go on past it, so
 * they are read again, at a clock above the floor. */
static void emu_hb_cut(void)
{
	emu.floor = ++emu.epoch;
	for (int t = 0; t < emu.n; t++)
		emu.f[t].vc = NULL, emu.f[t].clk = emu.floor;
	emu_arena_reset();
	for (int id = 0; id < EMU_NBAR; id++)
		emu_rel_drop(&emu_nb.rel[id]);
	for (int k = 0; k < emu_hop.nbar; k++)
		emu_rel_drop(&emu_hop.bar[k].rel);
	emu_rel_drop(&emu_clrel[emu.rank]);
	for (int w = 0; w < EMU_MAXWG && 128 * (w + 1) <= emu.n; w++)
		for (unsigned q = emu_hop.oldest[w]; q != emu_hop.next[w]; q++) {
			EmuWgOp *op = emu_wg_slot(w, q);
			if (op->issued == 128 && !op->executed) {
				op->iclk = ++emu.epoch;
				emu_wg_note(op, w);
			}
		}
}

static void emu_hop_wake(int kind)
{
	for (int t = 0; t < emu.n; t++)
		if (emu.f[t].blocked == kind)
			emu.f[t].blocked = 0;
}

/* The threads waiting on barrier k look at it again. */
static void emu_mbar_wake(int k)
{
	for (int t = 0; t < emu.n; t++)
		if (emu.f[t].blocked == 3 && emu.f[t].wbar == k)
			emu.f[t].blocked = 0;
}

/* Forget what a block left: copies in flight, barriers, wgmma records. */
static void emu_hop_reset(void)
{
	for (int k = 0; k < emu_hop.ntma; k++) {
		EmuTma *c = &emu_hop.tma[k];
		for (long w = 0; w < c->nw; w++)
			if (c->at[w] < c->s->n && c->s->pend[c->at[w]] < 0)
				c->s->pend[c->at[w]] = 0;
		free(c->at);
		free(c->v);
	}
	emu_hop.ntma = 0;
	for (int k = 0; k < emu_hop.nbar; k++) {
		EmuMbar *b = &emu_hop.bar[k];
		for (long w = b->at; w < b->at + 2 && w < b->s->n; w++)
			b->s->pend[w] = 0;
	}
	emu_hop.nbar = 0;
	memset(emu_hop.next, 0, sizeof emu_hop.next);
	memset(emu_hop.oldest, 0, sizeof emu_hop.oldest);
	memset(emu_hop.rv_n, 0, sizeof emu_hop.rv_n);
	memset(emu_hop.regs, 0, sizeof emu_hop.regs);
}

static inline unsigned emu_swizzle(unsigned a, int span)
{
	return span ? a ^ (((a >> 7) & (unsigned)(span / 16 - 1)) << 4) : a;
}

template <class T> static unsigned emu_smem_addr(EmuShared<T> &s, long at)
{
	static_assert(sizeof(T) == 4, "shared addresses are taken of arrays of 32-bit words");
	if (emu_hop.win && emu_hop.win != &s)
		emu_fail("shared addresses of two arrays, %s and %s (the emulator places one array, as the dynamic shared "
			 "array, at address 0)", emu_hop.win->nm, s.nm);
	emu_hop.win = &s;
	return (unsigned)(at * 4);
}

/* ---- mbarrier ---- */

static EmuMbar *emu_mbar_find(EmuShared<unsigned> &s, long at)
{
	for (int k = 0; k < emu_hop.nbar; k++)
		if (emu_hop.bar[k].s == &s && emu_hop.bar[k].at == at)
			return &emu_hop.bar[k];
	return NULL;
}

static void emu_mbar_init(EmuShared<unsigned> &s, long at, unsigned count)
{
	int me = (int)emu.cur->tid.x;
	s.at(at);
	s.at(at + 1);
	if (at % 2)
		emu_fail("mbarrier.init: %s[%ld] is not 8-byte aligned", s.nm, at);
	if (count < 1 || count >= 1u << 20)
		emu_fail("mbarrier.init of %s[%ld]: count %u outside [1, 2^20 - 1]", s.nm, at, count);
	EmuMbar *b = emu_mbar_find(s, at);
	if (b && b->init_t != me && !emu_hb(b->init_t, b->init_clk, emu.cur))
		emu_fail("mbarrier.init of %s[%ld] by thread %d and by this thread between barriers (one thread "
			 "initializes an mbarrier)", s.nm, at, b->init_t);
	if (!b) {
		for (long w = at; w < at + 2; w++)
			s.inflight(w, "mbarrier.init");
		if (emu_hop.nbar == EMU_MAXMBAR)
			emu_fail("more than %d mbarriers in a block", EMU_MAXMBAR);
		b = &emu_hop.bar[emu_hop.nbar++];
	}
	for (int k = 0; k < emu_hop.ntma; k++)
		if (&emu_hop.bar[emu_hop.tma[k].bar] == b)
			emu_fail("mbarrier.init of %s[%ld] while a TMA copy completes on it", s.nm, at);
	b->s = &s, b->at = at, b->count = b->pending = count, b->phase = 0, b->tx = 0;
	b->init_t = me, b->init_clk = emu.cur->clk, b->fenced = 0, b->landed = 0;
	emu_rel_drop(&b->rel);
	s.pend[at] = s.pend[at + 1] = EMU_PEND_MBAR;
}

static void emu_mbar_fence_init(void)
{
	for (int k = 0; k < emu_hop.nbar; k++)
		if (emu_hop.bar[k].init_t == (int)emu.cur->tid.x)
			emu_hop.bar[k].fenced = 1;
}

/* The barrier at s[at] for `what`: initialized, and by another thread
 * only before the last __syncthreads. */
static EmuMbar *emu_mbar_use(EmuShared<unsigned> &s, long at, const char *what)
{
	s.at(at);
	EmuMbar *b = emu_mbar_find(s, at);
	if (!b)
		emu_fail("%s on %s[%ld], which no thread initialized (missing mbarrier.init?)", what, s.nm, at);
	if (b->init_t != (int)emu.cur->tid.x && !emu_hb(b->init_t, b->init_clk, emu.cur))
		emu_fail("%s on %s[%ld], which thread %d initialized since the last __syncthreads (missing "
			 "fence.mbarrier_init and __syncthreads after the init?)", what, s.nm, at, b->init_t);
	return b;
}

static const char *emu_writer(int wt)
{
	static char b[192];
	if (wt < emu.n)
		snprintf(b, sizeof b, "thread %d", wt);
	else {
		const EmuMbar *m = &emu_hop.bar[wt - emu.n];
		snprintf(b, sizeof b, "a TMA copy completing on the mbarrier at %s[%ld]", m->s->nm, m->at);
	}
	return b;
}

static const char *emu_reader(int r)
{
	static char b[192];
	if (r >= emu.n + EMU_MAXMBAR) {
		int w = r - emu.n - EMU_MAXMBAR;
		snprintf(b, sizeof b, "that a wgmma.mma_async of warpgroup %d (threads %d to %d) reads until the "
			 "wgmma.wait_group that retires it", w, 128 * w, 128 * w + 127);
	} else
		snprintf(b, sizeof b, "thread %d read since the last __syncthreads", r);
	return b;
}

/* c lands at clock t, written by its mbarrier. */
static void emu_tma_land(EmuTma *c, uint64_t t)
{
	EmuShared<unsigned> *s = c->s;
	for (long w = 0; w < c->nw; w++) {
		long i = c->at[w];
		s->pend[i] = 0;
		s->v[i] = c->v[w];
		s->wep[i] = t;
		s->wt[i] = emu.n + c->bar;
		s->drop_reads(i);
	}
	free(c->at);
	free(c->v);
}

/* Complete b's phase if it can: every arrival in, and the transaction
 * bytes done (land: the copies in flight on it land now). */
static void emu_mbar_complete(EmuMbar *b, int land)
{
	if (b->pending)
		return;
	int k = 0;
	for (int j = 0; j < emu_hop.ntma; j++)
		if (&emu_hop.bar[emu_hop.tma[j].bar] == b && !land)
			return;
	for (int j = 0; j < emu_hop.ntma; j++) {
		EmuTma *c = &emu_hop.tma[j];
		if (&emu_hop.bar[c->bar] != b)
			emu_hop.tma[k++] = *c;
		else {
			b->landed = ++emu.epoch;
			emu_tma_land(c, b->landed);
			b->tx -= c->bytes;
		}
	}
	emu_hop.ntma = k;
	if (b->tx < 0)
		emu_fail("mbarrier at %s[%ld]: its TMA copies completed %lld bytes more than arrive.expect_tx announced "
			 "(tx-count below 0)", b->s->nm, b->at, -b->tx);
	if (b->tx)
		return;
	if (!b->rel.acc) /* no arrival since the last __syncthreads: only the copies to release */
		b->rel.acc = emu_vc_new();
	if (b->rel.acc[emu.n + (b - emu_hop.bar)] < b->landed)
		b->rel.acc[emu.n + (b - emu_hop.bar)] = b->landed;
	emu_rel_complete(&b->rel, b->phase);
	b->phase++;
	b->pending = b->count;
	emu_mbar_wake((int)(b - emu_hop.bar));
}

static void emu_mbar_arrive(EmuShared<unsigned> &s, long at)
{
	EmuMbar *b = emu_mbar_use(s, at, "mbarrier.arrive");
	if (!b->pending)
		emu_fail("mbarrier.arrive on %s[%ld]: more arrivals than its count (%u) in one phase (the phase waits "
			 "only for its transaction bytes, which land when a thread waits on it)", s.nm, at, b->count);
	emu_release(&b->rel, emu.cur);
	emu.cur->mbuse = 1;
	b->pending--;
	emu_mbar_complete(b, 0);
	emu_mbar_wake((int)(b - emu_hop.bar));
}

static void emu_mbar_expect_tx(EmuShared<unsigned> &s, long at, unsigned bytes)
{
	EmuMbar *b = emu_mbar_use(s, at, "mbarrier.arrive.expect_tx");
	b->tx += bytes;
	emu_mbar_arrive(s, at);
}

/* mbarrier.try_wait.parity until the phase of that parity has completed:
 * the current phase is of the other parity. */
static void emu_mbar_wait(EmuShared<unsigned> &s, long at, unsigned parity)
{
	EmuFiber *f = emu.cur;
	EmuMbar *b = emu_mbar_use(s, at, "mbarrier wait");
	f->mbuse = 1;
	while ((b->phase & 1) == (parity & 1)) {
		emu_mbar_complete(b, 1);
		if ((b->phase & 1) != (parity & 1))
			break;
		f->wbar = (int)(b - emu_hop.bar);
		f->wpar = parity & 1;
		f->blocked = 3;
		emu_to_sched();
	}
	emu_acquire(&b->rel, parity, f);
}

/* ---- cp.async.bulk.tensor: a TMA tile load ---- */

static void emu_tma_load(EmuShared<unsigned> &s, long at, const void *map, const int *co, int rank, EmuShared<unsigned> &bs,
			 long bat)
{
	const EmuTmap *m = (const EmuTmap *)map;
	int me = (int)emu.cur->tid.x;
	if (!m || m->magic != EMU_TMAP_MAGIC)
		emu_fail("cp.async.bulk.tensor.%dd: the tensor map at %p is not one emu_tmap_encode wrote", rank, map);
	if (m->rank != rank)
		emu_fail("cp.async.bulk.tensor.%dd with a tensor map of rank %d", rank, m->rank);
	EmuMbar *b = emu_mbar_use(bs, bat, "cp.async.bulk.tensor");
	if (!b->fenced)
		emu_fail("cp.async.bulk.tensor completes on the mbarrier at %s[%ld], whose init no fence.mbarrier_init "
			 "followed", bs.nm, bat);
	unsigned long long bytes = emu_tmap_box_bytes(m);
	unsigned align = m->swizzle ? 8u * (unsigned)m->swizzle : 128u, dst = (unsigned)(at * 4);
	if (dst % align)
		emu_fail("cp.async.bulk.tensor: destination %s[%ld] (byte %u) is not %u-byte aligned%s", s.nm, at, dst, align,
			 m->swizzle ? " (as its swizzle needs)" : "");
	if (emu_hop.ntma == EMU_MAXTMA)
		emu_fail("more than %d TMA copies in flight in a block (missing mbarrier wait?)", EMU_MAXTMA);
	unsigned char *buf = (unsigned char *)calloc(bytes, 1);
	EmuTma *c = &emu_hop.tma[emu_hop.ntma];
	c->at = (long *)malloc(bytes / 4 * sizeof(long));
	c->v = (unsigned *)malloc(bytes / 4 * sizeof(unsigned));
	if (!buf || !c->at || !c->v) {
		fprintf(stderr, "emulator: no memory for a TMA copy of %llu bytes\n", bytes);
		abort();
	}
	/* rows of box[0] elements, in order; elements outside the tensor are zeros */
	long eb = m->elem_bytes, rows = (long)(bytes / (eb * m->box[0]));
	for (long r = 0; r < rows; r++) {
		long q = r, off = 0;
		int in = 1;
		for (int d = 1; d < rank; d++) {
			long long g = (long long)co[d] + q % m->box[d];
			q /= m->box[d];
			if (g < 0 || g >= (long long)m->dims[d])
				in = 0;
			else
				off += (long)(g * (long long)m->strides[d - 1]);
		}
		if (!in)
			continue;
		long long lo = co[0] < 0 ? -(long long)co[0] : 0, hi = (long long)m->dims[0] - co[0];
		if (hi > m->box[0])
			hi = m->box[0];
		if (lo >= hi)
			continue;
		const unsigned char *src = (const unsigned char *)(uintptr_t)m->base + off + ((long long)co[0] + lo) * eb;
		memcpy(buf + (r * m->box[0] + lo) * eb, src, (size_t)((hi - lo) * eb));
		emu.ld_bytes += (unsigned long long)((hi - lo) * eb);
	}
	for (long w = 0; w < (long)(bytes / 4); w++) {
		long i = emu_swizzle(dst + 4 * (unsigned)w, m->swizzle) / 4;
		s.at(i);
		s.inflight(i, "TMA copy");
		s.over(i, "TMA copy");
		c->at[w] = i;
		memcpy(&c->v[w], buf + 4 * w, 4);
		s.pend[i] = -(me + 1);
	}
	free(buf);
	c->s = &s, c->bar = (int)(b - emu_hop.bar), c->t = me, c->nw = (long)(bytes / 4), c->bytes = (unsigned)bytes;
	emu_hop.ntma++;
	emu_mbar_wake(c->bar);
}

/* ---- cp.async.bulk (1D): bytes from global memory into shared words,
 * in flight (poisoned) until a wait on the mbarrier phase they complete,
 * as a TMA tile load. ---- */
static void emu_bulk_load(EmuShared<unsigned> &s, long at, const void *src, unsigned bytes, EmuShared<unsigned> &bs,
			  long bat)
{
	int me = (int)emu.cur->tid.x;
	EmuMbar *b = emu_mbar_use(bs, bat, "cp.async.bulk");
	if (!b->fenced)
		emu_fail("cp.async.bulk completes on the mbarrier at %s[%ld], whose init no fence.mbarrier_init followed",
			 bs.nm, bat);
	if (!bytes || bytes % 16)
		emu_fail("cp.async.bulk of %u bytes: the size is a multiple of 16, not 0", bytes);
	if ((uintptr_t)src % 16 || at % 4)
		emu_fail("cp.async.bulk: the %s (%s) is not 16-byte aligned", (uintptr_t)src % 16 ? "source" : "destination",
			 (uintptr_t)src % 16 ? "global" : s.nm);
	if (emu_hop.ntma == EMU_MAXTMA)
		emu_fail("more than %d TMA copies in flight in a block (missing mbarrier wait?)", EMU_MAXTMA);
	EmuTma *c = &emu_hop.tma[emu_hop.ntma];
	c->at = (long *)malloc(bytes / 4 * sizeof(long));
	c->v = (unsigned *)malloc(bytes / 4 * sizeof(unsigned));
	if (!c->at || !c->v) {
		fprintf(stderr, "emulator: no memory for a bulk copy of %u bytes\n", bytes);
		abort();
	}
	for (long w = 0; w < (long)(bytes / 4); w++) {
		long i = at + w;
		s.at(i);
		s.inflight(i, "cp.async.bulk");
		s.over(i, "cp.async.bulk");
		c->at[w] = i;
		memcpy(&c->v[w], (const unsigned char *)src + 4 * w, 4);
		s.pend[i] = -(me + 1);
	}
	emu.ld_bytes += bytes;
	c->s = &s, c->bar = (int)(b - emu_hop.bar), c->t = me, c->nw = (long)(bytes / 4), c->bytes = bytes;
	emu_hop.ntma++;
	emu_mbar_wake(c->bar);
}

/* ---- wgmma ---- */

/* The byte address of element (mn, k) of a 16-bit operand with extent
 * MN x 16 in the canonical layout of descriptor desc: K-major (tnsp 0) or
 * MN-major (1), in 16-byte units (T: 16-byte chunks of a swizzle row):
 * K-major swizzled ((8, m), 2) : ((T, SBO), 1), interleaved ((8, m), 2) :
 * ((1, SBO), LBO); MN-major swizzled ((T, m), (8, k)) : ((1, LBO), (T,
 * SBO)), interleaved ((1, m), (8, k)) : ((1, SBO), (1, LBO)), 8 elements
 * a unit.  An e4m3 operand (es = 1, MN x 32, K-major only) has the same
 * units of 16 bytes, 16 elements each.  The address is formed, then
 * swizzled. */
static unsigned emu_wg_addr(unsigned long long desc, int tnsp, int mn, int k, int es = 2)
{
	unsigned start = (unsigned)(desc & 0x3fff) << 4, lbo = (unsigned)((desc >> 16) & 0x3fff) << 4;
	unsigned sbo = (unsigned)((desc >> 32) & 0x3fff) << 4;
	int layout = (int)(desc >> 62), span = layout == 1 ? 128 : layout == 2 ? 64 : layout == 3 ? 32 : 0;
	unsigned T = (unsigned)span / 16, off;
	if (!tnsp) {
		unsigned b = (unsigned)(k * es), q = b / 16, e = b % 16, r = (unsigned)mn;
		off = span ? 16 * ((r % 8) * T + q) + (r / 8) * sbo + e : 16 * (r % 8) + (r / 8) * sbo + q * lbo + e;
	} else {
		unsigned e = (unsigned)mn % 8, k0 = (unsigned)k % 8, k1 = (unsigned)k / 8;
		off = span ? 2 * e + 16 * ((unsigned)mn / 8 % T + k0 * T) + (unsigned)mn / (8 * T) * lbo + k1 * sbo
			   : 2 * e + 16 * k0 + (unsigned)mn / 8 * sbo + k1 * lbo;
	}
	return emu_swizzle(start + off, span);
}

static void emu_wg_desc_check(unsigned long long desc, const char *which)
{
	unsigned start = (unsigned)(desc & 0x3fff) << 4;
	int layout = (int)(desc >> 62), span = layout == 1 ? 128 : layout == 2 ? 64 : layout == 3 ? 32 : 0;
	if ((desc >> 49) & 7)
		emu_fail("wgmma.mma_async: %s descriptor with base offset %d (not emulated: operands start in their "
			 "swizzle pattern's first row)", which, (int)((desc >> 49) & 7));
	if (span && start % (8u * span) >= (unsigned)span)
		emu_fail("wgmma.mma_async: %s descriptor starts at byte %u, %u bytes into its %d-byte swizzle's pattern "
			 "(a start moves only along the pattern's first %d-byte row)", which, start, start % (8u * span), span,
			 span);
}

/* Element (mn, k) of an operand, read through the checks at issue (a
 * write not ordered before the issue, or since its writer's last
 * fence.proxy.async: reported; the read itself is the warpgroup's, noted
 * by emu_wg_note) or raw. */
static unsigned short emu_wg_half(unsigned long long desc, int tnsp, int mn, int k, int checked, int es)
{
	EmuShared<unsigned> *s = emu_hop.win;
	unsigned a = emu_wg_addr(desc, tnsp, mn, k, es);
	long i = (long)(a / 4);
	unsigned w;
	if (checked) {
		s->at(i);
		s->inflight(i, "wgmma.mma_async read");
		if (s->wep[i] < emu.block_epoch)
			emu_fail("shared-memory race on %s[%ld]: wgmma.mma_async reads a word no thread of this block has "
				 "written yet (shared memory starts undefined in every block)", s->nm, i);
		int wr = s->racing_write(i);
		if (wr >= 0)
			emu_fail("shared-memory race on %s[%ld]: wgmma.mma_async reads a word %s wrote since the last "
				 "__syncthreads (%s)", s->nm, i, emu_writer(wr), emu_hint(wr));
		w = s->v[i];
		if (s->wt[i] >= 0 && s->wt[i] < emu.n && s->wpf[i] == emu.f[s->wt[i]].pfence)
			emu_fail("wgmma.mma_async reads %s[%ld], written by thread %d without fence.proxy.async after the "
				 "write", s->nm, i, s->wt[i]);
	} else
		w = s->v[i];
	return emu_elem_of(w, a, es);
}

/* The operands, once the warpgroup's 128 threads have issued op. */
/* An operand's element bytes and the instruction's k. */
static inline int emu_wg_es(const EmuWgOp *op) { return op->bf == EMU_E4M3 ? 1 : 2; }
static inline int emu_wg_k(const EmuWgOp *op) { return op->bf == EMU_E4M3 ? 32 : 16; }

/* The operands, once the warpgroup's 128 threads have issued op.  A from
 * registers: warp m / 16's lane (m % 8) * 4 + (b % 16) / 4, register
 * (m % 16 >= 8) + 2 (b >= 16), with b = k es the element's byte in the
 * row's 32 (mma.sync's layout, above, a warp for each 16 rows). */
static void emu_wg_read(EmuWgOp *op, int checked, int *bad)
{
	int es = emu_wg_es(op), K = emu_wg_k(op);
	for (int m = 0; m < 64; m++)
		for (int k = 0; k < K; k++) {
			unsigned short h;
			if (op->rs) {
				unsigned b = (unsigned)(k * es);
				int x = 32 * (m / 16) + (m % 8) * 4 + (int)(b % 16) / 4, reg = (m % 16 >= 8) + 2 * (b >= 16);
				h = emu_elem_of(op->t[x].a[reg], b, es);
			} else
				h = emu_wg_half(op->da, op->ta, m, k, checked, es);
			if (checked)
				op->a[m][k] = h, op->fa[m][k] = emu_half_bits(h, op->bf);
			else if (h != op->a[m][k])
				*bad = (int)(emu_wg_addr(op->da, op->ta, m, k, es) / 4);
		}
	for (int k = 0; k < K; k++)
		for (int c = 0; c < op->n; c++) {
			unsigned short h = emu_wg_half(op->db, op->tb, c, k, checked, es);
			if (checked)
				op->b[k][c] = h, op->fb[k][c] = emu_half_bits(h, op->bf);
			else if (h != op->b[k][c])
				*bad = (int)(emu_wg_addr(op->db, op->tb, c, k, es) / 4);
		}
}

/* op's operand words are read by warpgroup wg's wgmma at op->iclk: a
 * write over them races until a thread learns of its retirement. */
static void emu_wg_note(EmuWgOp *op, int wg)
{
	EmuShared<unsigned> *s = emu_hop.win;
	int me = emu_wgr(wg);
	uint64_t c = op->iclk;
	int es = emu_wg_es(op), K = emu_wg_k(op);
	for (int m = 0; m < 64 && !op->rs; m++)
		for (int k = 0; k < K; k++) {
			long i = (long)(emu_wg_addr(op->da, op->ta, m, k, es) / 4);
			if (s->rt[i] != me || s->rep[i] != c)
				s->note_read_by(i, me, c, NULL);
		}
	for (int k = 0; k < K; k++)
		for (int n = 0; n < op->n; n++) {
			long i = (long)(emu_wg_addr(op->db, op->tb, n, k, es) / 4);
			if (s->rt[i] != me || s->rep[i] != c)
				s->note_read_by(i, me, c, NULL);
		}
}

static EmuWgOp *emu_wg_slot(int wg, unsigned seq)
{
	EmuWgOp **p = &emu_hop.ring[wg][seq % EMU_WGRING];
	if (!*p && !(*p = (EmuWgOp *)malloc(sizeof **p))) {
		fprintf(stderr, "emulator: no memory for a wgmma record\n");
		abort();
	}
	return *p;
}

/* wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{bf16|f16}, or with bf
 * EMU_E4M3 m64n{n}k32.f32.e4m3.e4m3, whose shared operands are K-major
 * only: issue.  a: the thread's A registers (RS), or NULL (SS: A from
 * da). */
static void emu_wgmma(float *d, int n, int bf, int ta, int tb, const unsigned *a, unsigned long long da,
		      unsigned long long db, int sc)
{
	EmuFiber *f = emu.cur;
	int x = (int)f->tid.x, wg = x / 128, me = x % 128;
	if (n < 8 || n > 256 || n % 8)
		emu_fail("wgmma.mma_async m64n%dk16: N outside 8..256 in steps of 8", n);
	if (bf == EMU_E4M3 && (tb || (!a && ta)))
		emu_fail("wgmma.mma_async m64n%dk32 .e4m3: an MN-major (transposed) %s operand (8-bit operands are K-major "
			 "only)", n, tb ? "B" : "A");
	if (emu.n < 128 * (wg + 1))
		emu_fail("wgmma.mma_async in a block of %d threads: warpgroup %d is incomplete", emu.n, wg);
	if (!emu_hop.win)
		emu_fail("wgmma.mma_async before any shared address was taken (asc_smem_addr)");
	if (!f->wg_fenced)
		emu_fail("wgmma.mma_async without wgmma.fence since %s (the registers it reads and writes are not "
			 "ordered)", f->wg_issued ? "the last wgmma.wait_group" : "the kernel's start");
	emu_warp_enter(0xffffffffu, 0, "wgmma.mma_async");
	emu_warp_leave();
	unsigned seq = f->wg_issued;
	EmuWgOp *op;
	int rs = a != NULL;
	if (seq == emu_hop.next[wg]) {
		if (seq - emu_hop.oldest[wg] >= EMU_WGRING)
			emu_fail("more than %d wgmma.mma_async in flight in warpgroup %d (missing wgmma.wait_group?)",
				 EMU_WGRING, wg);
		emu_wg_desc_check(db, "B");
		if (!rs)
			emu_wg_desc_check(da, "A");
		op = emu_wg_slot(wg, seq);
		op->n = n, op->bf = bf, op->ta = rs ? 0 : ta, op->tb = tb, op->rs = rs, op->first = x;
		op->da = rs ? 0 : da, op->db = db;
		op->issued = op->executed = op->checked = 0;
		emu_hop.next[wg]++;
	} else {
		op = emu_wg_slot(wg, seq);
		if (op->n != n || op->bf != bf || op->rs != rs || op->tb != tb || (!rs && (op->ta != ta || op->da != da)) ||
		    op->db != db)
			emu_fail("warpgroup %d: this thread's wgmma.mma_async #%u (m64n%dk16 %s) is not thread %d's (m64n%dk16 "
				 "%s, or other descriptors) (every thread of the warpgroup issues the same wgmma)", wg, seq, n,
				 rs ? "RS" : "SS", op->first, op->n, op->rs ? "RS" : "SS");
	}
	op->t[me].d = d;
	op->t[me].sc = sc;
	op->t[me].grp = f->wg_group;
	if (rs)
		memcpy(op->t[me].a, a, sizeof op->t[me].a);
	op->t[me].chained = 0;
	for (unsigned s = f->wg_done; s < seq; s++)
		if (emu_wg_slot(wg, s)->t[me].d == d)
			op->t[me].chained = 1;
	if (!op->t[me].chained)
		memcpy(op->t[me].snap, d, (size_t)n / 2 * sizeof(float));
	f->wg_issued++;
	if (++op->issued == 128) {
		emu_wg_read(op, 1, NULL);
		op->iclk = ++emu.epoch;
		emu_wg_note(op, wg);
		emu_hop_wake(4);
	}
}

static void emu_fence_proxy_async(void) { emu.cur->pfence++; }
static void emu_wgmma_fence(void) { emu.cur->wg_fenced = 1; }
static void emu_wgmma_commit(void) { emu.cur->wg_group++; }

/* wgmma.wait_group n: every committed group of this thread's but the
 * newest n retires, in order: D = A B + (scale_d ? D : 0), rounded once. */
static void emu_wgmma_wait(int n)
{
	EmuFiber *f = emu.cur;
	int x = (int)f->tid.x, wg = x / 128, me = x % 128, w = me / 32, g = f->lane / 4, t = f->lane % 4;
	int retired = 0;
	while (f->wg_done != f->wg_issued) {
		unsigned seq = f->wg_done;
		EmuWgOp *op = emu_wg_slot(wg, seq);
		if (op->t[me].grp + (unsigned)n >= f->wg_group)
			break;
		while (op->issued < 128) {
			f->blocked = 4;
			emu_to_sched();
		}
		if (f->wgk[wg] < op->iclk) /* its operand reads are over */
			f->wgk[wg] = op->iclk;
		if (!op->checked) {
			int bad = -1;
			emu_wg_read(op, 0, &bad);
			if (bad >= 0)
				emu_fail("%s[%d], an operand of a wgmma.mma_async in flight, was written (last by thread %d) "
					 "before the wgmma.wait_group that retires it", emu_hop.win->nm, bad, emu_hop.win->wt[bad]);
			op->checked = 1;
		}
		float *d = op->t[me].d;
		int nh = op->n / 2;
		if (!op->t[me].chained)
			for (int q = 0; q < nh; q++)
				if (memcmp(&d[q], &op->t[me].snap[q], sizeof(float)))
					emu_fail("wgmma.mma_async accumulator d[%d] written between the wgmma's issue and the "
						 "wgmma.wait_group that retires it", q);
		float r[128];
		for (int j = 0; j < op->n / 8; j++)
			for (int c = 0; c < 4; c++) {
				int row = 16 * w + g + 8 * (c / 2), col = 8 * j + 2 * t + (c & 1);
				double acc = op->t[me].sc ? d[4 * j + c] : 0.0;
				for (int k = 0; k < emu_wg_k(op); k++)
					acc += (double)op->fa[row][k] * (double)op->fb[k][col];
				r[4 * j + c] = (float)acc;
			}
		memcpy(d, r, (size_t)nh * sizeof(float));
		/* the next wgmma in flight on d finds this result */
		for (unsigned s = seq + 1; s < f->wg_issued; s++) {
			EmuWgOp *o = emu_wg_slot(wg, s);
			if (o->t[me].d == d && o->t[me].chained) {
				o->t[me].chained = 0;
				memcpy(o->t[me].snap, r, (size_t)nh * sizeof(float));
				break;
			}
		}
		f->wg_done++;
		retired = 1;
		op->executed++;
		while (emu_hop.oldest[wg] != emu_hop.next[wg] && emu_wg_slot(wg, emu_hop.oldest[wg])->executed == 128)
			emu_hop.oldest[wg]++;
	}
	if (retired)
		f->wg_fenced = 0;
}

/* ---- setmaxnreg: a warpgroup collective, else a no-op ----
 * Checked: the count, the same instruction in every thread of the
 * warpgroup, .inc never below and .dec never above the warpgroup's last
 * count, and once every warpgroup has set one, their sum within the
 * block's pool: the registers it was launched with, which setmaxnreg
 * moves between its warps (a setmaxnreg.inc past it would wait forever).
 * That is at most 65536 / threads a thread, rounded down to a multiple of
 * 8 (and 256 at most), which ptxas gives a kernel that uses setmaxnreg
 * under __launch_bounds__(threads, 1): 168 for 384 threads, 64512 in all,
 * not the SM's 65536. */
static void emu_setmaxnreg(int regs, const char *op)
{
	EmuFiber *f = emu.cur;
	int wg = (int)f->tid.x / 128, inc = !strcmp(op, "setmaxnreg.inc"), cur = emu_hop.regs[wg];
	if (regs < 24 || regs > 256 || regs % 8)
		emu_fail("%s %d: the register count must be a multiple of 8 in [24, 256]", op, regs);
	if (emu.n < 128 * (wg + 1))
		emu_fail("%s in a block of %d threads: warpgroup %d is incomplete", op, emu.n, wg);
	if (cur && (inc ? regs < cur : regs > cur))
		emu_fail("%s %d in warpgroup %d, whose count is %d (.inc raises it, .dec lowers it)", op, regs, wg, cur);
	if (emu_hop.rv_n[wg] && (strcmp(emu_hop.rv_op[wg], op) || emu_hop.rv_regs[wg] != regs))
		emu_fail("warpgroup %d: thread %d is at %s %d while this thread is at %s %d (every thread of the warpgroup "
			 "reaches the same setmaxnreg)", wg, emu_hop.rv_t[wg], emu_hop.rv_op[wg], emu_hop.rv_regs[wg], op, regs);
	if (!emu_hop.rv_n[wg])
		emu_hop.rv_op[wg] = op, emu_hop.rv_regs[wg] = regs, emu_hop.rv_t[wg] = (int)f->tid.x;
	unsigned gen = emu_hop.rv_gen[wg];
	if (++emu_hop.rv_n[wg] == 128) {
		emu_hop.rv_n[wg] = 0;
		emu_hop.rv_gen[wg]++;
		emu_hop.regs[wg] = regs;
		int sum = 0, all = 1, each = 65536 / emu.n / 8 * 8;
		each = each < 256 ? each : 256;
		for (int w = 0; w < emu.n / 128; w++)
			sum += 128 * emu_hop.regs[w], all = all && emu_hop.regs[w];
		if (all && sum > emu.n * each)
			emu_fail("%s %d: the block's warpgroups come to %d registers after it, over the %d its %d threads hold "
				 "(%d each, the most a block of them is launched with; a setmaxnreg.inc waits until the "
				 "block's pool has its registers)", op, regs, sum, emu.n * each, emu.n, each);
		emu_hop_wake(5);
		return;
	}
	while (emu_hop.rv_gen[wg] == gen) {
		f->blocked = 5;
		emu_to_sched();
	}
}

/* ---- thread-block clusters (sm_90): %cluster_ctarank, barrier.cluster,
 * mapa.shared::cluster and ld.shared::cluster ----
 * The blocks of a cluster (csize consecutive blocks in x) run together:
 * each runs until every thread of it not done waits at barrier.cluster.wait,
 * then the next one runs, so that each block's fibers, shared memory and
 * barrier state are its own (emu_cl keeps a parked block's).  The cluster
 * barrier's phase completes when every thread of the cluster has arrived
 * (barrier.cluster.arrive), and orders each thread's accesses before its
 * arrival before every thread's accesses after its wait for the phase:
 * in its block, each arrival releases to the phase (emu_clrel) and each
 * wait acquires it (the hb section); across blocks, a thread's clock at
 * each arrival is kept, and a read of a peer's word is of a write at a
 * clock no later than its writer's arrival in the last phase the reader
 * waited for.  Checked: a thread arrives once a phase and
 * waits only after arriving; an arrival after a thread of the cluster
 * exited, or an exit while others wait, is reported (differing barrier
 * counts); a read of a peer's shared memory is of a word that block wrote
 * before its writer's arrival in the last phase the reader waited for (a
 * write after it, or none, means a missing cluster barrier between the
 * write and the read), of a rank in
 * the cluster, and of a block that has not exited; and a block that exits
 * in the phase a peer read its shared memory in (no cluster barrier after
 * the read, so that the peer may still be reading it) is reported.  A
 * write between a thread's arrival and its wait is after the phase, as
 * on the GPU.  cp.async copies and wgmma in flight across a cluster
 * barrier are not emulated (reported). */
struct EmuBlockCtx {
	dim3 bidx;
	int nlive, bar_arrived, left, begun, done;
	uint64_t block_epoch, floor;
	unsigned rd_phase; /* 1 + the last phase a peer read this block's shared memory in; 0: none */
	int rd_rank;       /* that peer */
	const char *rd_nm; /* and the array */
	decltype(emu_nb) nb;
	decltype(emu_hop) hop;
};
static EmuBlockCtx emu_cl[EMU_MAXCL];

static unsigned emu_cluster_rank(void) { return (unsigned)emu.rank; }
static unsigned emu_cluster_size(void) { return (unsigned)emu.csize; }

static void emu_cluster_arrive(void)
{
	EmuFiber *f = emu.cur;
	if (f->clarr)
		emu_fail("barrier.cluster.arrive twice without a barrier.cluster.wait between them");
	if (emu.cl_exited)
		emu_fail("barrier.cluster.arrive after %d threads of the cluster exited (every thread of the cluster "
			 "arrives in each phase; differing barrier counts)", emu.cl_exited);
	unsigned p = emu.cl_phase;
	f->clarrc[p & 3] = f->clk, f->clarrp[p & 3] = p + 1;
	emu_release(&emu_clrel[emu.rank], f); /* its accesses from here on carry a later clock */
	f->clarr = 1;
	f->clphase = p;
	if (++emu.cl_arrived == emu.csize * emu.n) {
		emu.cl_arrived = 0;
		emu.cl_exited += emu.cl_gone;
		emu.cl_gone = 0;
		emu.cl_phase++;
		emu.cl_done[p & 3] = ++emu.epoch, emu.cl_donep[p & 3] = p + 1;
		for (int r = 0; r < emu.csize; r++)
			emu_rel_complete(&emu_clrel[r], p);
		emu_hop_wake(7);
	}
}

static void emu_cluster_wait(void)
{
	EmuFiber *f = emu.cur;
	if (!f->clarr)
		emu_fail("barrier.cluster.wait without a barrier.cluster.arrive before it");
	f->clarr = 0;
	while (emu.cl_phase == f->clphase) {
		f->blocked = 7;
		emu_to_sched();
	}
	emu_acquire(&emu_clrel[emu.rank], f->clphase, f);
	f->clknow = f->clphase + 1;
}

/* Whether the write of word at clock c by thread w of the block of rank r
 * (or by its TMA copies, w >= n) is ordered before f's next access by
 * the last phase of the cluster barrier f waited for: a thread's before
 * its arrival in it, a copy's before its completion. */
static int emu_cl_before(int r, int w, uint64_t c, const EmuFiber *f)
{
	if (!f->clknow)
		return 0;
	unsigned q = f->clknow - 1;
	if (w >= 0 && w < emu.n && emu_fib[r][w].clarrp[q & 3] == q + 1)
		return c <= emu_fib[r][w].clarrc[q & 3];
	return emu.cl_donep[q & 3] == q + 1 && c < emu.cl_done[q & 3];
}

/* ld.shared::cluster of s[i] (s: this block's array, as mapa is given a
 * shared address of this block) in the block of cluster rank `rank`. */
template <class T> static T emu_dsmem_rd(EmuShared<T> &s, long i, unsigned rank)
{
	if (rank >= (unsigned)emu.csize)
		emu_fail("mapa.shared::cluster of %s[%ld] to rank %u, outside the cluster's %d blocks", s.nm, i, rank,
			 emu.csize);
	if ((int)rank == emu.rank)
		return s.rd(i);
	EmuShared<T> *p = (EmuShared<T> *)((char *)&s + ((long)rank - s.crank) * s.cstride);
	EmuBlockCtx *c = &emu_cl[rank];
	p->at(i);
	if (c->done)
		emu_fail("ld.shared::cluster of %s[%ld] in cluster rank %u, whose block has exited (its shared memory is "
			 "gone: missing barrier.cluster before that block's exit?)", s.nm, i, rank);
	p->inflight(i, "ld.shared::cluster");
	if (!c->begun || p->wep[i] < c->block_epoch)
		emu_fail("ld.shared::cluster of %s[%ld] in cluster rank %u: that block has not written it (missing "
			 "barrier.cluster between its write and this read?)", s.nm, i, rank);
	int w = p->wt[i];
	if (!emu_cl_before((int)rank, w, p->wep[i], emu.cur)) {
		if (w < emu.n && emu.cur->clknow)
			emu_fail("ld.shared::cluster of %s[%ld] in cluster rank %u: thread %d of that block wrote it after its "
				 "barrier.cluster.arrive in the last phase this thread waited for (missing barrier.cluster "
				 "between its write and this read?)", s.nm, i, rank, w);
		emu_fail("ld.shared::cluster of %s[%ld] in cluster rank %u: that block wrote it since the last "
			 "barrier.cluster this thread waited for (missing barrier.cluster between its write and this read?)",
			 s.nm, i, rank);
	}
	if (c->rd_phase < emu.cl_phase + 1)
		c->rd_phase = emu.cl_phase + 1, c->rd_rank = emu.rank, c->rd_nm = s.nm;
	return p->v[i];
}

/* ---- launch ---- */

/* The running block's threads start (rank: its place in the cluster,
 * whose stacks it takes). */
static void emu_block_begin(int rank)
{
	for (int t = 0; t < EMU_MAXT; t++) { /* copies an earlier block never waited for */
		for (int k = 0; k < emu.f[t].nasync; k++)
			emu_async[t][k].land(emu_async[t][k].arr, emu_async[t][k].i, NULL);
		emu.f[t].nasync = 0;
	}
	for (int t = 0; t < emu.n; t++) {
		EmuFiber *f = &emu.f[t];
		emu_fiber_init(f, emu.stacks + ((size_t)rank * emu.n + t) * emu.stack);
		f->tid = dim3{(unsigned)t, 0, 0};
		f->done = f->blocked = f->nbar = 0;
		f->seq = 0;
		f->nasync = 0;
		f->group = 0;
		f->pfence = 0;
		f->wg_issued = f->wg_done = f->wg_group = 0;
		f->wg_fenced = 0;
		memset(f->wgk, 0, sizeof f->wgk);
		f->mbuse = 0;
		memset(f->nbgen, 0, sizeof f->nbgen);
		f->clarr = 0;
		f->clphase = 0;
		f->clknow = 0;
		memset(f->clarrp, 0, sizeof f->clarrp);
		f->lane = t % 32;
		f->warp = t / 32;
	}
	memset(emu.arrive, 0, sizeof emu.arrive);
	memset(emu.depart, 0, sizeof emu.depart);
	memset(&emu_nb, 0, sizeof emu_nb);
	emu.nlive = emu.n;
	emu.bar_arrived = 0;
	emu.block_epoch = ++emu.epoch;
	emu.floor = emu.block_epoch;
	for (int t = 0; t < emu.n; t++)
		emu.f[t].clk = emu.block_epoch, emu.f[t].wfl = 0, emu.f[t].vc = NULL;
	emu_arena_reset();
	emu.left = emu.n;
}

/* Run the block's threads until they are done (0), or, in a cluster of
 * several blocks, until every one not done waits at barrier.cluster.wait
 * (1: parked, for its peers to run). */
static int emu_block_run(void)
{
	int &left = emu.left;
	while (left > 0 && !emu.failed) {
		int ran = 0;
		for (int t = 0; t < emu.n && !emu.failed; t++) {
			EmuFiber *f = &emu.f[t];
			if (f->done || f->blocked)
				continue;
			emu.cur = f;
			emu_to_fiber(f);
			ran = 1;
			if (f->done)
				left--;
		}
		if (!ran && left > 0 && !emu.failed) {
			int nk[8] = {0, 0, 0, 0, 0, 0, 0, 0}, t0 = -1, tm = -1;
			for (int t = 0; t < emu.n; t++) {
				int k = emu.f[t].done ? 0 : emu.f[t].blocked;
				if (k < 1 || k > 7)
					continue;
				nk[k]++;
				if (k >= 2 && t0 < 0)
					t0 = t;
				if (k == 3 && tm < 0)
					tm = t;
			}
			if (nk[7] == left && emu.csize > 1) {
				for (int t = 0; t < emu.n; t++)
					if (!emu.f[t].done && (emu.f[t].nasync || emu.f[t].wg_done != emu.f[t].wg_issued)) {
						snprintf(emu.msg, sizeof emu.msg, "%s in flight across barrier.cluster (not emulated "
							 "in a cluster of several blocks) (kernel %s, block %u, thread %d)",
							 emu.f[t].nasync ? "cp.async" : "wgmma.mma_async", emu.kernel, emu.bidx.x, t);
						emu.failed = 1;
						return 0;
					}
				emu.cur = NULL;
				return 1;
			}
			char more[768] = "";
			size_t at = 0;
			if (nk[3]) { /* each barrier and parity waited for, with the threads there */
				at += (size_t)snprintf(more + at, sizeof more - at, ", %d in mbarrier wait for a phase that "
						       "never completes:", nk[3]);
				for (int t = tm; t < emu.n && at < sizeof more; t++) {
					const EmuFiber *f = &emu.f[t];
					int seen = 0, cnt = 0;
					for (int u = tm; u < emu.n; u++) {
						const EmuFiber *e = &emu.f[u];
						if (e->done || e->blocked != 3 || e->wbar != f->wbar || e->wpar != f->wpar)
							continue;
						seen |= u < t;
						cnt++;
					}
					if (f->done || f->blocked != 3 || seen)
						continue;
					const EmuMbar *b = &emu_hop.bar[f->wbar];
					at += (size_t)snprintf(more + at, sizeof more - at,
							       " mbarrier wait on %s[%ld] for parity %u (%d threads from thread %d; "
							       "%u of %u arrivals and %lld transaction bytes pending);",
							       b->s->nm, b->at, f->wpar, cnt, t, b->pending, b->count, b->tx);
				}
				if (at < sizeof more && more[at - 1] == ';')
					more[--at] = 0;
			}
			if (nk[4] && at < sizeof more)
				at += (size_t)snprintf(more + at, sizeof more - at,
						       ", %d at wgmma.wait_group for a wgmma.mma_async that not every thread of the "
						       "warpgroup issues", nk[4]);
			if (nk[5] && at < sizeof more)
				at += (size_t)snprintf(more + at, sizeof more - at, ", %d at setmaxnreg, which not every thread "
						       "of the warpgroup reaches", nk[5]);
			for (int id = 1; id < EMU_NBAR && nk[6] && at < sizeof more; id++) {
				int w = 0;
				for (int t = 0; t < emu.n; t++)
					w += !emu.f[t].done && emu.f[t].blocked == 6 && emu.f[t].nb == id;
				if (w)
					at += (size_t)snprintf(more + at, sizeof more - at, ", %d at bar.sync %d, whose phase too "
							       "few threads reach (%d of %d in)", w, id, emu_nb.arrived[id],
							       emu_nb.count[id]);
			}
			if (nk[7] && at < sizeof more)
				at += (size_t)snprintf(more + at, sizeof more - at, ", %d at barrier.cluster.wait for a phase "
						       "that not every thread of the cluster arrives in (%d of %d in)", nk[7],
						       emu.cl_arrived, emu.csize * emu.n);
			emu.cur = t0 >= 0 ? &emu.f[t0] : NULL;
			snprintf(emu.msg, sizeof emu.msg,
				 "deadlock: %d threads wait at __syncthreads and %d at warp operations that not every lane "
				 "reaches (differing barrier counts)%s (kernel %s, block %u, thread %d)",
				 nk[1], nk[2], more, emu.kernel, emu.bidx.x, t0);
			emu.failed = 1;
		}
	}
	return 0;
}

/* The running block is done: what it left unfinished is reported. */
static void emu_block_end(void)
{
	for (int id = 1; id < EMU_NBAR && !emu.failed; id++)
		if (emu_nb.arrived[id]) {
			snprintf(emu.msg, sizeof emu.msg,
				 "named barrier %d: %d of %d threads arrived in a phase that the block ended without (a "
				 "bar.arrive that no bar.sync completes; differing barrier counts) (kernel %s, block %u, thread %d)",
				 id, emu_nb.arrived[id], emu_nb.count[id], emu.kernel, emu.bidx.x, emu_nb.first[id]);
			emu.failed = 1;
		}
	if (emu_hop.ntma && !emu.failed) {
		const EmuTma *t = &emu_hop.tma[0];
		const EmuMbar *b = &emu_hop.bar[t->bar];
		snprintf(emu.msg, sizeof emu.msg,
			 "block exited with %d TMA or bulk copies in flight (the first issued by thread %d, completing on the "
			 "mbarrier at %s[%ld]): they would land in shared memory the next block on the SM owns (missing "
			 "mbarrier wait?) (kernel %s, block %u)", emu_hop.ntma, t->t, b->s->nm, b->at, emu.kernel, emu.bidx.x);
		emu.failed = 1;
	}
	EmuBlockCtx *c = &emu_cl[emu.rank];
	if (emu.csize > 1 && !emu.failed && c->rd_phase == emu.cl_phase + 1) {
		snprintf(emu.msg, sizeof emu.msg,
			 "block of cluster rank %d exited while rank %d may still read its shared memory (%s): no "
			 "barrier.cluster between that read and this block's exit (missing final cluster barrier?) (kernel %s, "
			 "block %u)", emu.rank, c->rd_rank, c->rd_nm, emu.kernel, emu.bidx.x);
		emu.failed = 1;
	}
	c->done = 1;
	if (emu.csize > 1) /* copies never waited for: forgotten now, as the next rank's threads take emu_async */
		for (int t = 0; t < emu.n; t++) {
			for (int k = 0; k < emu.f[t].nasync; k++)
				emu_async[t][k].land(emu_async[t][k].arr, emu_async[t][k].i, NULL);
			emu.f[t].nasync = 0;
		}
	emu_hop_reset();
	emu.cur = NULL;
}

/* A parked block's state, kept while its peers run, and given back. */
static void emu_block_save(int r)
{
	EmuBlockCtx *c = &emu_cl[r];
	c->bidx = emu.bidx, c->nlive = emu.nlive, c->bar_arrived = emu.bar_arrived, c->left = emu.left;
	c->block_epoch = emu.block_epoch, c->floor = emu.floor;
	c->nb = emu_nb;
	memcpy(&c->hop, &emu_hop, sizeof emu_hop);
}

static void emu_block_load(int r)
{
	EmuBlockCtx *c = &emu_cl[r];
	emu.rank = r;
	emu.f = emu_fib[r];
	emu.bidx = c->bidx, emu.nlive = c->nlive, emu.bar_arrived = c->bar_arrived, emu.left = c->left;
	emu.block_epoch = c->block_epoch;
	emu.floor = c->floor;
	emu_nb = c->nb;
	EmuWgOp *ring[EMU_MAXWG][EMU_WGRING]; /* the records are one pool, whichever block took them */
	memcpy(ring, emu_hop.ring, sizeof ring);
	memcpy(&emu_hop, &c->hop, sizeof emu_hop);
	memcpy(emu_hop.ring, ring, sizeof ring);
	emu_hop_wake(7); /* they look at the cluster barrier's phase again */
}

/* The cluster of blocks [base, base + emu.csize) in row y. */
static void emu_run_cluster(unsigned base, unsigned y)
{
	emu.cl_arrived = emu.cl_exited = emu.cl_gone = 0;
	emu.cl_phase = 0;
	memset(emu.cl_donep, 0, sizeof emu.cl_donep);
	for (int r = 0; r < EMU_MAXCL; r++)
		emu_rel_drop(&emu_clrel[r]);
	if (emu.csize == 1) {
		emu.rank = 0;
		emu.f = emu_fib[0];
		emu_cl[0].begun = 1, emu_cl[0].done = 0, emu_cl[0].rd_phase = 0;
		emu.bidx = dim3{base, y, 0};
		emu_block_begin(0);
		emu_block_run();
		emu_block_end();
		return;
	}
	for (int r = 0; r < emu.csize; r++)
		emu_cl[r].begun = emu_cl[r].done = 0, emu_cl[r].rd_phase = 0;
	int done = 0;
	for (int r = 0; r < emu.csize && !emu.failed; r++) {
		emu.rank = r;
		emu.f = emu_fib[r];
		emu.bidx = dim3{base + (unsigned)r, y, 0};
		memset(&emu_nb, 0, sizeof emu_nb);
		emu_hop.win = NULL; /* each block's own dynamic shared array */
		emu_block_begin(r);
		emu_cl[r].begun = 1, emu_cl[r].block_epoch = emu.block_epoch;
		if (emu_block_run())
			emu_block_save(r);
		else if (!emu.failed)
			emu_block_end(), done++;
	}
	while (done < emu.csize && !emu.failed) {
		unsigned phase = emu.cl_phase;
		int before = done;
		for (int r = 0; r < emu.csize && !emu.failed; r++) {
			if (emu_cl[r].done)
				continue;
			emu_block_load(r);
			if (emu_block_run())
				emu_block_save(r);
			else if (!emu.failed)
				emu_block_end(), done++;
		}
		if (!emu.failed && done == before && emu.cl_phase == phase) {
			snprintf(emu.msg, sizeof emu.msg,
				 "deadlock: the threads of the cluster of blocks %u to %u wait at barrier.cluster.wait for a phase "
				 "that not every thread of the cluster arrives in (%d of %d in; differing barrier counts) (kernel %s)",
				 base, base + emu.csize - 1, emu.cl_arrived, emu.csize * emu.n, emu.kernel);
			emu.failed = 1;
		}
	}
	/* after a failure, what the failing block and the parked ones left in flight */
	int cur = emu.rank;
	emu_hop_reset();
	for (int r = 0; r < emu.csize && emu.failed; r++)
		if (r != cur && emu_cl[r].begun && !emu_cl[r].done) {
			emu_block_load(r);
			emu_hop_reset();
		}
	emu_hop_reset();
	emu.cur = NULL;
}

__attribute__((destructor)) static void emu_unload(void)
{
	for (int w = 0; w < EMU_MAXWG; w++)
		for (int k = 0; k < EMU_WGRING; k++) {
			free(emu_hop.ring[w][k]);
			emu_hop.ring[w][k] = NULL;
		}
	if (emu.stacks)
		munmap(emu.stacks, (size_t)emu.nstacks * emu.stack);
	emu.stacks = NULL;
	for (int r = 0; r < EMU_MAXCL; r++) {
		for (int k = 0; k < emu_arena[r].n; k++)
			free(emu_arena[r].chunk[k]);
		free(emu_arena[r].log);
		memset(&emu_arena[r], 0, sizeof emu_arena[r]);
	}
}

/* The vector loads of every launch since the module was loaded. */
extern "C" unsigned long long emu_vec_loads(void) { return emu_vec_total; }

/* Run fn(args) on a grid of `grid` blocks of `block` threads with smem bytes
 * of dynamic shared memory.  0, or -1 with the error in msg.  bytes[0],
 * bytes[1]: global bytes loaded and stored. */
extern "C" int emu_launch2(void (*fn)(const void *), const char *kernel, unsigned grid, unsigned gy, unsigned block,
			   unsigned smem, const void *args, unsigned long long *bytes, char *msg, size_t n);
extern "C" int emu_launch(void (*fn)(const void *), const char *kernel, unsigned grid, unsigned block, unsigned smem,
			  const void *args, unsigned long long *bytes, char *msg, size_t n)
{
	return emu_launch2(fn, kernel, grid, 1, block, smem, args, bytes, msg, n);
}

/* emu_launch on a grid of grid x gy blocks (blockIdx.y from 0 to gy - 1). */
extern "C" int emu_launch3(void (*fn)(const void *), const char *kernel, unsigned grid, unsigned gy, unsigned block,
			   unsigned smem, unsigned cluster, const void *args, unsigned long long *bytes, char *msg,
			   size_t n);
extern "C" int emu_launch2(void (*fn)(const void *), const char *kernel, unsigned grid, unsigned gy, unsigned block,
			   unsigned smem, const void *args, unsigned long long *bytes, char *msg, size_t n)
{
	return emu_launch3(fn, kernel, grid, gy, block, smem, 1, args, bytes, msg, n);
}

/* emu_launch2 in clusters of `cluster` blocks in x (1 to 16; 1: none),
 * which divides grid; %cluster_ctarank = blockIdx.x % cluster. */
extern "C" int emu_launch3(void (*fn)(const void *), const char *kernel, unsigned grid, unsigned gy, unsigned block,
			   unsigned smem, unsigned cluster, const void *args, unsigned long long *bytes, char *msg,
			   size_t n)
{
	if (cluster < 1 || cluster > EMU_MAXCL) {
		snprintf(msg, n, "kernel %s: a cluster of %u blocks (1 to %d)", kernel, cluster, EMU_MAXCL);
		return -1;
	}
	if (grid % cluster) {
		snprintf(msg, n, "kernel %s: a grid of %u blocks is not a whole number of clusters of %u", kernel, grid,
			 cluster);
		return -1;
	}
	/* the limits cuLaunchKernel holds every launch to, refused with its
	 * error, so that a grid a GPU would refuse fails here too */
	if (grid == 0 || grid > 0x7fffffffu || gy == 0 || gy > 65535) {
		snprintf(msg, n, "kernel %s: a grid of %u x %u blocks: CUDA_ERROR_INVALID_VALUE (1): invalid argument (x from 1 "
				 "to 2^31 - 1, y from 1 to 65535)",
			 kernel, grid, gy);
		return -1;
	}
	if (block == 0 || block > EMU_MAXT || block % 32) {
		snprintf(msg, n, "kernel %s: block of %u threads (the emulator needs a multiple of 32, at most %d)", kernel,
			 block, EMU_MAXT);
		return -1;
	}
	if (smem > EMU_MAXDYN) {
		snprintf(msg, n, "kernel %s: %u bytes of dynamic shared memory (at most %d per block, as on sm_90)", kernel,
			 smem, EMU_MAXDYN);
		return -1;
	}
	emu.dyn_bytes = smem;
	/* (m, l, o[8192]) folds needed 3 frames: 64 leave room for ITEMS and ACC copies */
	size_t frame = &asc_emu_frame_bytes ? asc_emu_frame_bytes : 0;
	size_t stack = (EMU_STACK + EMU_FRAMES * frame + 4095) & ~(size_t)4095;
	unsigned nst = block * cluster; /* a cluster's blocks all have their threads' stacks */
	if (emu.nstacks < (int)nst || emu.stack != stack) { /* stacks for the widest cluster so far, a guard page under each */
		if (emu.stacks)
			munmap(emu.stacks, (size_t)emu.nstacks * emu.stack);
		emu.nstacks = 0;
		void *p = mmap(NULL, (size_t)nst * stack, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED) {
			emu.stacks = NULL;
			snprintf(msg, n, "emulator: no memory for fiber stacks (%u of %zu bytes)", nst, stack);
			return -1;
		}
		emu.stacks = (char *)p;
		emu.nstacks = (int)nst;
		emu.stack = stack;
		for (unsigned t = 0; t < nst; t++)
			mprotect(emu.stacks + (size_t)t * stack, 4096, PROT_NONE);
	}
	emu.fn = fn;
	emu.args = args;
	emu.kernel = kernel;
	emu.n = (int)block;
	emu.bdim = dim3{block, 1, 1};
	emu.gdim = dim3{grid, gy, 1};
	emu.failed = 0;
	emu.msg[0] = 0;
	emu.ld_bytes = emu.st_bytes = 0;
	emu.csize = (int)cluster;
	emu.rank = 0;
	emu.f = emu_fib[0];
	emu_hop_reset();
	emu_hop.win = NULL;
	for (unsigned y = 0; y < gy && !emu.failed; y++)
		for (unsigned b = 0; b < grid && !emu.failed; b += cluster)
			emu_run_cluster(b, y);
	emu.rank = 0;
	emu.csize = 1;
	if (bytes)
		bytes[0] += emu.ld_bytes, bytes[1] += emu.st_bytes;
	if (emu.failed) {
		snprintf(msg, n, "%s", emu.msg);
		return -1;
	}
	return 0;
}
