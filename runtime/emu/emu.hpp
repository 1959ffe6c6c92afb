/* emu.hpp: the CUDA execution model on a CPU, for generated kernels.
 *
 * Prepended (by compiler/devices/emu.c) to a module's CUDA C, which g++ then
 * builds into a shared object.  One CUDA thread is one fiber; blocks run one
 * after another, their threads interleaved at barriers and warp operations,
 * so __syncthreads and the warp shuffles and votes behave as on a GPU.
 *
 * Checked: shared memory declared with ASC_SHARED (or ASC_DYN_SHARED, sized
 * by the launch's dynamic shared bytes) is bounds-checked, and
 * each word remembers its last writer and readers within the current barrier
 * interval, so a read of a word another thread wrote since the last
 * __syncthreads (or a write over a word another thread wrote or read since
 * then) is reported as a race; a barrier reached after another thread of the
 * block exited, or a deadlock at barriers or warp operations, is reported as
 * differing barrier counts, and threads that meet at different __syncthreads
 * calls as divergent barriers.  cp.async copies land only at the
 * cp.async.wait_group that completes them, and their words are poisoned
 * until then, so a missing wait (or a missing __syncthreads after it) is
 * reported; ldmatrix reads its rows through the same checks.  Errors name
 * the kernel, block and thread.
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

struct EmuFiber {
	void *sp;
	char *stack;
	dim3 tid;
	int done, blocked, lane, warp, nbar;
	const char *bar_site; /* the __syncthreads call it waits at: file:line */
	unsigned seq;
	int nasync;     /* cp.async copies in flight */
	unsigned group; /* cp.async.commit_group count: the open group's number */
#if !defined(__x86_64__)
	ucontext_t uc;
#endif
};

/* EMU_MAXDYN: sm_90's opt-in limit of shared memory per block (227 KB).
 * A fiber's stack: EMU_STACK, and EMU_FRAMES more copies of the module's
 * State and Elem, which a GPU keeps in registers or local memory and the
 * emulator in fiber stacks (a state of 4096 floats overflowed 128 KiB). */
enum { EMU_MAXT = 1024, EMU_STACK = 128 * 1024, EMU_FRAMES = 64, EMU_MAXDYN = 227 * 1024 };

/* sizeof(State) + sizeof(Elem) of the generated module (cuda_mod.c);
 * weak, as a hand-written kernel has neither. */
extern "C" const size_t asc_emu_frame_bytes __attribute__((weak));

struct Emu {
	EmuFiber f[EMU_MAXT];
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
	uint64_t epoch;
	uint64_t block_epoch; /* the epoch the running block began in: older writes are another block's */
	uint64_t slot[32][2][32];
	const char *op[32][2][32]; /* the collective each lane of slot is at */
	int arrive[32][2], depart[32][2];
	const char *kernel;
	void (*fn)(const void *);
	const void *args;
	unsigned long long ld_bytes, st_bytes;
	size_t dyn_bytes; /* the launch's dynamic shared memory */
	char msg[2048];
};
static Emu emu;

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
	f->done = 1;
	emu.nlive--;
	if (emu.bar_arrived > 0)
		emu_fail("thread exited while %d threads of its block wait at __syncthreads (differing barrier counts)",
			 emu.bar_arrived);
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
		emu.epoch++;
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
		for (int l = 0; l < 32; l++) /* on a GPU lanes at different collectives pair up as they come */
			if (strcmp(emu.op[w][p][l], what))
				emu_fail("warp %d: lane %d is at %s while lane %d is at %s (every lane of the mask must "
					 "reach the same collective)", w, l, emu.op[w][p][l], f->lane, what);
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

/* ---- checked shared memory ---- */

/* A shared array: the words and, per word, the checks' bookkeeping.  Static
 * arrays (ASC_SHARED) hold their storage; the dynamic one (ASC_DYN_SHARED)
 * points at storage sized by the launch's dynamic shared bytes. */
template <class T> struct EmuShared {
	T *v;
	uint64_t *wep, *rep;
	int *wt, *rt;
	int *pend; /* 1 + the thread whose cp.async to the word is in flight, or 0 */
	long n;
	int dyn; /* sized at launch */
	const char *nm;

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
		if (pend[i])
			emu_fail("%s of %s[%ld] while a cp.async of thread %d to it is in flight (missing "
				 "cp.async.wait_group%s?)", what, nm, i, pend[i] - 1,
				 pend[i] - 1 == (int)emu.cur->tid.x ? "" : ", or __syncthreads after it");
	}
	T rd(long i)
	{
		at(i);
		inflight(i, "read");
		int me = (int)emu.cur->tid.x;
		if (wep[i] < emu.block_epoch) /* on a GPU: whatever the last block on the SM left, or garbage */
			emu_fail("shared-memory race on %s[%ld]: read of a word no thread of this block has written yet "
				 "(missing __syncthreads before the read? shared memory starts undefined in every block)",
				 nm, i);
		if (wep[i] == emu.epoch && wt[i] != me)
			emu_fail("shared-memory race on %s[%ld]: read of a word thread %d wrote since the last __syncthreads "
				 "(missing __syncthreads?)", nm, i, wt[i]);
		rt[i] = rep[i] == emu.epoch && rt[i] != me ? -2 : me;
		rep[i] = emu.epoch;
		return v[i];
	}
	/* A cp.async to word i begins: checked as a write now, the word
	 * unreadable until land() writes it at the wait that completes it. */
	void issue(long i)
	{
		at(i);
		inflight(i, "cp.async");
		int me = (int)emu.cur->tid.x;
		if ((wep[i] == emu.epoch && wt[i] != me) || (rep[i] == emu.epoch && rt[i] != me))
			emu_fail("shared-memory race on %s[%ld]: cp.async over a word thread %d %s since the last "
				 "__syncthreads (missing __syncthreads?)", nm, i, wep[i] == emu.epoch ? wt[i] : rt[i],
				 wep[i] == emu.epoch ? "wrote" : "read");
		pend[i] = me + 1;
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
		int me = (int)emu.cur->tid.x;
		if (wep[i] == emu.epoch && wt[i] != me)
			emu_fail("shared-memory race on %s[%ld]: two threads write it between barriers (thread %d, then this one)",
				 nm, i, wt[i]);
		if (rep[i] == emu.epoch && rt[i] != me)
			emu_fail("shared-memory race on %s[%ld]: write over a word %s read since the last __syncthreads "
				 "(missing __syncthreads?)", nm, i, rt[i] == -2 ? "other threads" : "another thread");
		wep[i] = emu.epoch;
		wt[i] = me;
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
	int swt[N], srt[N], spend[N];
	EmuStaticShared()
	{
		this->v = sv, this->wep = swep, this->rep = srep, this->wt = swt, this->rt = srt, this->pend = spend;
		this->n = N, this->dyn = 0;
	}
};
#define ASC_SHARED(T, name, n)                                                                         \
	static EmuStaticShared<T, (n)> name;                                                           \
	name.nm = #name

/* Dynamic shared memory: one array of T per kernel (on the GPU every
 * extern __shared__ array starts at the same address), as many elements as
 * the launch's bytes hold.  Storage is kept across launches of the same
 * size; the per-block epoch resets the race checks as for static arrays. */
template <class T> static EmuShared<T> &emu_dyn_shared(const char *nm)
{
	static EmuShared<T> d;
	static void *mem;
	long n = (long)(emu.dyn_bytes / sizeof(T));
	if (!mem || d.n != n) {
		free(mem);
		size_t words = n > 0 ? (size_t)n : 1, at = 0;
		size_t off_v = at, off_wep = (at += (words * sizeof(T) + 15) / 16 * 16), off_rep = (at += words * 8);
		size_t off_wt = (at += words * 8), off_rt = (at += words * 4), off_pend = (at += words * 4);
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
		d.n = n, d.dyn = 1;
	}
	d.nm = nm;
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

template <class T> static inline T emu_ld(const T *p)
{
	emu.ld_bytes += sizeof(T);
	return *p;
}
template <class T, class U> static inline void emu_st(T *p, U v)
{
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

/* ---- tensor cores: mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.f32 ----
 * A warp collective, as on the GPU: every lane deposits its fragments, and
 * each lane then computes its own four results from the whole warp's.
 * Fragment layout (PTX ISA, m16n8k16 with .f16/.bf16 inputs): lane =
 * groupID * 4 + tig; A (16x16, row-major) is 4 .b32 of two halves each:
 * a0 = (row g, cols 2tig, 2tig+1), a1 = row g+8, a2 = row g, cols +8,
 * a3 = row g+8, cols +8; B (16x8, "col") is 2 .b32: b0 = (rows 2tig,
 * 2tig+1, col g), b1 = rows +8; C and D (16x8 f32) are 4 floats: c0, c1 =
 * (row g, cols 2tig, 2tig+1), c2, c3 = row g+8.  Products of halves are
 * exact in float; the sum of the 16 products and c is rounded once. */
struct EmuMmaFrag {
	unsigned a[4], b[2];
	float c[4];
};
static EmuMmaFrag emu_mma_slot[EMU_MAXT / 32][2][32];

static inline float emu_half_bits(unsigned short h, int bf)
{
	return bf ? __int_as_float((int)((unsigned)h << 16)) : emu_half_to_float(h);
}

/* The (row, k) element of A and the (k, col) element of B from the deposits. */
static inline float emu_mma_a(const EmuMmaFrag *f, int row, int k, int bf)
{
	int lane = (row & 7) * 4 + (k & 7) / 2, reg = (row >= 8) + 2 * (k >= 8);
	unsigned w = f[lane].a[reg];
	return emu_half_bits((unsigned short)(k & 1 ? w >> 16 : w & 0xffff), bf);
}
static inline float emu_mma_b(const EmuMmaFrag *f, int k, int col, int bf)
{
	int lane = col * 4 + (k & 7) / 2;
	unsigned w = f[lane].b[k >= 8];
	return emu_half_bits((unsigned short)(k & 1 ? w >> 16 : w & 0xffff), bf);
}

static void emu_mma_16816(float d[4], const unsigned a[4], const unsigned b[2], const float c[4], int bf)
{
	EmuFiber *me = emu.cur;
	EmuMmaFrag *slot = emu_mma_slot[me->warp][me->seq & 1];
	memcpy(slot[me->lane].a, a, sizeof slot->a);
	memcpy(slot[me->lane].b, b, sizeof slot->b);
	memcpy(slot[me->lane].c, c, sizeof slot->c);
	emu_warp_enter(0xffffffffu, 0, "mma.sync");
	int g = me->lane / 4, t = me->lane % 4;
	float r[4];
	for (int q = 0; q < 4; q++) {
		int row = g + 8 * (q >= 2), col = 2 * t + (q & 1);
		double acc = slot[me->lane].c[q];
		for (int k = 0; k < 16; k++)
			acc += (double)emu_mma_a(slot, row, k, bf) * (double)emu_mma_b(slot, k, col, bf);
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

/* ---- launch ---- */

static void emu_run_block(void)
{
	for (int t = 0; t < EMU_MAXT; t++) { /* copies an earlier block never waited for */
		for (int k = 0; k < emu.f[t].nasync; k++)
			emu_async[t][k].land(emu_async[t][k].arr, emu_async[t][k].i, NULL);
		emu.f[t].nasync = 0;
	}
	for (int t = 0; t < emu.n; t++) {
		EmuFiber *f = &emu.f[t];
		emu_fiber_init(f, emu.stacks + (size_t)t * emu.stack);
		f->tid = dim3{(unsigned)t, 0, 0};
		f->done = f->blocked = f->nbar = 0;
		f->seq = 0;
		f->nasync = 0;
		f->group = 0;
		f->lane = t % 32;
		f->warp = t / 32;
	}
	memset(emu.arrive, 0, sizeof emu.arrive);
	memset(emu.depart, 0, sizeof emu.depart);
	emu.nlive = emu.n;
	emu.bar_arrived = 0;
	emu.block_epoch = ++emu.epoch;
	for (int left = emu.n; left > 0 && !emu.failed;) {
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
			int bar = 0, warp = 0, t0 = -1;
			for (int t = 0; t < emu.n; t++) {
				if (emu.f[t].blocked == 1)
					bar++;
				if (emu.f[t].blocked == 2)
					warp++, t0 = t0 < 0 ? t : t0;
			}
			emu.cur = t0 >= 0 ? &emu.f[t0] : NULL;
			snprintf(emu.msg, sizeof emu.msg,
				 "deadlock: %d threads wait at __syncthreads and %d at warp operations that not every lane "
				 "reaches (differing barrier counts) (kernel %s, block %u, thread %d)",
				 bar, warp, emu.kernel, emu.bidx.x, t0);
			emu.failed = 1;
		}
	}
	emu.cur = NULL;
}

__attribute__((destructor)) static void emu_unload(void)
{
	if (emu.stacks)
		munmap(emu.stacks, (size_t)emu.nstacks * emu.stack);
	emu.stacks = NULL;
}

/* Run fn(args) on a grid of `grid` blocks of `block` threads with smem bytes
 * of dynamic shared memory.  0, or -1 with the error in msg.  bytes[0],
 * bytes[1]: global bytes loaded and stored. */
extern "C" int emu_launch(void (*fn)(const void *), const char *kernel, unsigned grid, unsigned block, unsigned smem,
			  const void *args, unsigned long long *bytes, char *msg, size_t n)
{
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
	if (emu.nstacks < (int)block || emu.stack != stack) { /* stacks for the widest block so far, a guard page under each */
		if (emu.stacks)
			munmap(emu.stacks, (size_t)emu.nstacks * emu.stack);
		emu.nstacks = 0;
		void *p = mmap(NULL, (size_t)block * stack, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED) {
			emu.stacks = NULL;
			snprintf(msg, n, "emulator: no memory for fiber stacks (%u of %zu bytes)", block, stack);
			return -1;
		}
		emu.stacks = (char *)p;
		emu.nstacks = (int)block;
		emu.stack = stack;
		for (unsigned t = 0; t < block; t++)
			mprotect(emu.stacks + (size_t)t * stack, 4096, PROT_NONE);
	}
	emu.fn = fn;
	emu.args = args;
	emu.kernel = kernel;
	emu.n = (int)block;
	emu.bdim = dim3{block, 1, 1};
	emu.gdim = dim3{grid, 1, 1};
	emu.failed = 0;
	emu.msg[0] = 0;
	emu.ld_bytes = emu.st_bytes = 0;
	for (unsigned b = 0; b < grid && !emu.failed; b++) {
		emu.bidx = dim3{b, 0, 0};
		emu_run_block();
	}
	if (bytes)
		bytes[0] += emu.ld_bytes, bytes[1] += emu.st_bytes;
	if (emu.failed) {
		snprintf(msg, n, "%s", emu.msg);
		return -1;
	}
	return 0;
}
