/* test_tune.c: the tuner's selection over its candidates with a fake
 * timer, kernel variants' one text form, and the tuning cache's handling
 * of the variants it stores and of damaged entries. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compiler/cuda/cuda.h"
#include "runtime/tune.h"
#include "runtime/variant.h"
#include "testutil.h"

static TuneProblem h200(Family fam, int rows, int len)
{
	TuneProblem p = {.fam = fam, .rows = rows, .len = len, .elem_bytes = 4};
	p.dev = (RtDevice){.name = "NVIDIA H200", .major = 9, .sms = 132, .regs_per_sm = 65536,
			   .smem_per_sm = 228 << 10, .smem_per_block_optin = 227 << 10,
			   .max_threads_per_sm = 2048, .max_blocks_per_sm = 32};
	return p;
}

static int threads(const Variant *v) { return v->warp ? 32 : v->nt; }

/* Row variants: a warp per row (1 to 8 rows a block) and blocks of 64 to
 * 1024 threads, 1, 2 or 4 accumulators, scalar or 4-wide loads. */
static int row_candidates(Variant *out)
{
	static const int accs[] = {1, 2, 4}, vecs[] = {1, 4};
	int n = 0;
	for (int nt = 32; nt <= 1024; nt *= 2)
		for (int warp = 0; warp < 2; warp++)
			for (int a = 0; a < 3; a++)
				for (int v = 0; v < 2; v++)
					if (warp ? nt <= 256 : nt >= 64)
						out[n++] = (Variant){.fam = FAM_ROWREDUCE, .nt = nt, .acc = accs[a], .vec = vecs[v],
								     .warp = warp, .split = 1};
	return n;
}

/* A fake device: times come from a function of the variant. */
typedef struct {
	int timed, validated, fail_compile_threads, wrong_vec, big_smem_nt;
} Fake;

static int fake_res(void *ctx, const Variant *c, TuneResources *r, char *why, size_t n)
{
	Fake *f = ctx;
	if (threads(c) == f->fail_compile_threads) {
		snprintf(why, n, "NVRTC: error: too many resources");
		return -1;
	}
	int spills = c->acc == 4 && c->vec == 4;
	*r = (TuneResources){spills ? 300 : 32, c->nt == f->big_smem_nt ? 300 << 10 : 0, spills ? 64 : 0};
	return 0;
}

static int fake_validate(void *ctx, const Variant *c, char *why, size_t n)
{
	Fake *f = ctx;
	f->validated++;
	if (c->vec == f->wrong_vec) {
		snprintf(why, n, "wrong result: lse off by 3e-2 at row 7");
		return -1;
	}
	return 0;
}

static double fake_time(void *ctx, const Variant *c, char *why, size_t n)
{
	Fake *f = ctx;
	(void)why, (void)n;
	f->timed++;
	return 1.0 + 0.01 * threads(c) / 32 - 0.1 * c->vec + (c->acc == 2 ? -0.05 : 0);
}

Test(tune, select_with_fake_timer)
{
	unsetenv("ASSOC_TUNE");
	TuneProblem p = h200(FAM_ROWREDUCE, 8192, 8192);
	Fake f = {.fail_compile_threads = 1024, .wrong_vec = 1};
	TuneHooks h = {&f, fake_res, fake_validate, fake_time, NULL, 1e9};
	TuneResult r;
	Variant c[TUNE_MAX_CANDIDATES];
	int n = row_candidates(c);
	cr_assert_eq(tune_select_list(&p, c, n, &h, &r), 0);
	cr_assert_geq(r.best, 0);
	cr_assert(r.timed);
	cr_assert_leq(f.timed, 8, "only the model's best few are timed");
	cr_assert_eq(r.n, n, "every candidate is reported");
	for (int i = 0; i < r.n; i++) {
		if (i == r.best)
			continue;
		cr_assert(!(r.cand[i].ms < r.cand[r.best].ms), "the fastest wins");
	}
	int compile_logged = 0, spill_logged = 0;
	for (int i = 0; i < r.n; i++) {
		compile_logged |= isinf(r.cand[i].ms) && strstr(r.cand[i].why, "too many resources") != NULL;
		spill_logged |= isinf(r.cand[i].ms) && strstr(r.cand[i].why, "spills 64 bytes") != NULL;
		cr_assert(threads(&r.cand[i].var) != 1024 || isinf(r.cand[i].ms), "failed compiles never win");
	}
	cr_assert(compile_logged && spill_logged, "failures are logged with their reason");
	int pruned = 0;
	for (int i = 0; i < r.n; i++)
		pruned += strstr(r.cand[i].why, "not timed: the model ranks") != NULL;
	cr_assert_gt(pruned, 0, "candidates the model rules out are listed too");
	TuneResult again;
	Fake g = f;
	h.ctx = &g;
	n = row_candidates(c);
	tune_select_list(&p, c, n, &h, &again);
	cr_assert(!memcmp(&again.cand[again.best].var, &r.cand[r.best].var, sizeof(Variant)), "deterministic");
}

Test(tune, invalid_candidates_score_infinity)
{
	unsetenv("ASSOC_TUNE");
	TuneProblem p = h200(FAM_ROWREDUCE, 8192, 8192);
	Fake f = {.wrong_vec = 4};
	TuneHooks h = {&f, fake_res, fake_validate, fake_time, NULL, 1e9};
	TuneResult r;
	Variant c[TUNE_MAX_CANDIDATES];
	cr_assert_eq(tune_select_list(&p, c, row_candidates(c), &h, &r), 0);
	cr_assert_neq(r.cand[r.best].var.vec, 4);
	int wrong = 0;
	for (int i = 0; i < r.n; i++)
		if (r.cand[i].var.vec == 4 && !strstr(r.cand[i].why, "spills") && !strstr(r.cand[i].why, "not timed")) {
			cr_assert(isinf(r.cand[i].ms) && strstr(r.cand[i].why, "wrong result"));
			wrong++;
		}
	cr_assert_gt(wrong, 0, "the model keeps 4-wide loads among the timed");
}

Test(tune, tune_off_takes_the_models_pick)
{
	setenv("ASSOC_TUNE", "off", 1);
	TuneProblem p = h200(FAM_ROWREDUCE, 8192, 8192);
	Fake f = {0};
	TuneHooks h = {&f, fake_res, fake_validate, fake_time, NULL, 1e9};
	TuneResult r;
	Variant c[TUNE_MAX_CANDIDATES];
	cr_assert_eq(tune_select_list(&p, c, row_candidates(c), &h, &r), 0);
	cr_assert_not(r.timed);
	cr_assert_eq(f.timed, 0, "nothing timed");
	cr_assert_eq(r.best, 0);
	unsetenv("ASSOC_TUNE");
}

/* Rows of 64: a warp a row keeps its threads busy where a block of 1024
 * would leave most idle; the model's pick says so. */
Test(tune, model_prefers_a_warp_a_row_for_short_rows)
{
	setenv("ASSOC_TUNE", "off", 1);
	TuneProblem p = h200(FAM_ROWREDUCE, 4096, 64);
	Fake f = {0};
	TuneHooks h = {&f, fake_res, fake_validate, fake_time, NULL, 1e9};
	TuneResult r;
	Variant c[] = {{.fam = FAM_ROWREDUCE, .nt = 1024, .acc = 1, .vec = 4, .split = 1},
		       {.fam = FAM_ROWREDUCE, .nt = 128, .acc = 1, .vec = 4, .warp = 1, .split = 1}};
	cr_assert_eq(tune_select_list(&p, c, 2, &h, &r), 0);
	cr_assert_eq(r.cand[r.best].var.warp, 1, "picked nt=%d warp=%d", r.cand[r.best].var.nt, r.cand[r.best].var.warp);
	unsetenv("ASSOC_TUNE");
}

/* Attention is not ranked by the memory model: every candidate whose block
 * fits an SM is timed, and one whose shared memory no SM holds is not. */
Test(tune, attention_times_every_candidate_that_fits)
{
	unsetenv("ASSOC_TUNE");
	TuneProblem p = h200(FAM_ATTN, 100, 300);
	Fake f = {.big_smem_nt = 256};
	TuneHooks h = {&f, fake_res, fake_validate, fake_time, NULL, 1e9};
	TuneResult r;
	Variant c[12];
	int n = 0;
	for (int nt = 128; nt <= 256; nt *= 2)
		for (int st = 1; st <= 3; st++)
			for (int split = 1; split <= 2; split++)
				c[n++] = (Variant){.fam = FAM_ATTN, .nt = nt, .acc = 1, .vec = 1, .mt = 1, .bn = 64, .pv = 1,
						   .st = st, .ks = 1, .split = split};
	cr_assert_eq(tune_select_list(&p, c, n, &h, &r), 0);
	cr_assert_eq(f.timed, 6, "the six of 128 threads are timed");
	cr_assert_eq(r.n, 12);
	for (int i = 0; i < r.n; i++)
		if (r.cand[i].var.nt == 256)
			cr_expect(isinf(r.cand[i].ms) && strstr(r.cand[i].why, "not timed: no block of it fits on an SM"),
				  "%s", r.cand[i].why);
		else
			cr_expect(isfinite(r.cand[i].ms), "%s", r.cand[i].why);
}

/* ---- the text of a variant ---- */

static void round_trip(const Variant *v, const char *what)
{
	char text[256], msg[256];
	Variant back;
	variant_str(v, text, sizeof text);
	cr_assert_eq(variant_parse(text, &back, msg, sizeof msg), 0, "%s: %s: %s", what, text, msg);
	cr_expect(!memcmp(v, &back, sizeof back), "%s: %s reads back otherwise", what, text);
}

/* Every variant of every family's tuning space (the defaults among them)
 * reads back from its text, without a split and with one. */
Test(tune, variant_text_round_trip)
{
	static const char *const specs[] = {"specs/logsumexp.yaml", "specs/online_softmax.yaml",
					    "specs/linear_recurrence.yaml", "specs/attention.yaml"};
	Define dims[2] = {{"d", "64"}, {"dv", "64"}};
	int seen[NFAM] = {0};
	for (size_t k = 0; k < sizeof specs / sizeof *specs; k++) {
		Carrier *c = load_defs(specs[k], dims, strstr(specs[k], "attention") ? 2 : 0);
		CudaModule m;
		char msg[512];
		cr_assert_eq(cuda_module_space(c, &m, msg, sizeof msg), 0, "%s: %s", specs[k], msg);
		for (int v = 0; v < m.nvar; v++) {
			Variant x = m.var[v];
			seen[x.fam]++;
			cr_expect_eq(x.split, 0, "a module's kernels have no split");
			round_trip(&x, specs[k]);
			x.split = x.fam == FAM_ROWREDUCE || x.fam == FAM_ROWMAP ? 1 : 16;
			round_trip(&x, specs[k]);
		}
		cuda_module_free(&m);
		spec_carrier_free(c);
	}
	for (int f = FAM_NONE + 1; f < NFAM; f++)
		cr_expect_gt(seen[f], 0, "no variant of %s", variant_family_name((Family)f));
	/* the texts --config has always taken read as they did */
	Variant v;
	char msg[256];
	cr_assert_eq(variant_parse("rowmap:nt=256,acc=2,vec=4,warp=0,items=0", &v, msg, sizeof msg), 0, "%s", msg);
	cr_expect(v.fam == FAM_ROWMAP && v.nt == 256 && v.acc == 2 && v.vec == 4 && v.split == 0);
	cr_assert_eq(variant_parse("attention:nt=128,mt=2,bn=64,st=2,ks=4", &v, msg, sizeof msg), 0, "%s", msg);
	cr_expect(v.fam == FAM_ATTN && v.mt == 2 && v.ks == 4 && v.pv == 1 && v.split == 0);
	cr_assert_eq(variant_parse("splitk:nt=64,split=8", &v, msg, sizeof msg), 0, "%s", msg);
	cr_expect(v.fam == FAM_SPLITK && v.split == 8);
	/* keys left out take the defaults docs/commands.md lists, not a rule's */
	cr_assert_eq(variant_parse("rowreduce:acc=2", &v, msg, sizeof msg), 0, "%s", msg);
	cr_expect(v.nt == 128 && v.acc == 2 && v.vec == 1 && !v.warp && !v.items && v.un == 1 && !v.tf && !v.cl && !v.bk &&
		  !v.split);
	cr_assert_eq(variant_parse("scan:nt=64", &v, msg, sizeof msg), 0, "%s", msg);
	cr_expect(v.items == 4 && v.acc == 1 && v.vec == 1);
	cr_assert_eq(variant_parse("attention:bn=32", &v, msg, sizeof msg), 0, "%s", msg);
	cr_expect(v.nt == 128 && v.mt == 1 && v.bn == 32 && v.pv == 1 && v.st == 2 && v.ks == 1 && !v.wg && !v.ws && !v.split);
	cr_assert_eq(variant_parse("attention:ws=1", &v, msg, sizeof msg), 0, "%s", msg);
	cr_expect(v.wg == 2 && v.nt == 384 && v.mt == 1 && v.ks == 1);
	/* the Hopper template's text names the nt and mt that its wg gives */
	cr_assert_eq(variant_parse("attention:nt=256,mt=1,bn=128,pv=1,st=2,wg=2", &v, msg, sizeof msg), 0, "%s", msg);
	cr_expect(v.wg == 2 && v.nt == 256 && v.mt == 1 && v.ks == 1);
}

Test(tune, bad_variant_texts_are_refused_with_the_reason)
{
	static const char *const bad[][2] = {
		{"rowmap:nt=256,acc=2,vec=4,warp=0,items=0 split=4", "expected key=value at 'items=0 split=4'"},
		{"splitk:nt=64,split=4x", "expected key=value"},
		{"splitk:nt=64,split=", "expected key=value"},
		{"splitk:nt=64,split=99999999999", "expected key=value"},
		{"splitk:nt=64,split=-3", "split -3 is out of range"},
		/* decimal digits as variant_str writes them, and nothing after the last */
		{"splitk:nt=064", "nt=064: a value is written in decimal digits without a leading zero"},
		{"splitk:nt=64,split=-0", "split=-0: a value is written in decimal digits"},
		{"splitk:nt=64,split=4,", "ends in a comma: a key=value is missing after it"},
		{"splitk:nt=+64", "expected key=value at 'nt=+64'"},
		{"splitk:nt= 64", "expected key=value at 'nt= 64'"},
		{"splitk:nt=0x40", "expected key=value at 'nt=0x40'"},
		{"scan:split=100000", "split 100000 is out of range"},
		{"rowreduce:nt=64,split=2", "1 for rowreduce and rowmap"},
		{"threads=256 rows=1 vec=4 acc=2 split=2 chunk=0", "unknown kernel family"},
		{"none:nt=64", "unknown kernel family 'none'"},
		{"rowmap:mt=2", "unknown key 'mt' (rowmap takes nt, acc, vec, warp, items, un, tf, cl, bk, split)"},
		/* a key a family would not use is refused, not dropped */
		{"attention:acc=2", "unknown key 'acc' (attention takes nt, mt, bn, pv, st, ks, wg, ws, split)"},
		{"attention:nt=128,vec=4", "unknown key 'vec' (attention takes"},
		{"attention:warp=0", "unknown key 'warp' (attention takes"},
		{"attention:items=4", "unknown key 'items' (attention takes"},
		{"scan:un=2", "unknown key 'un' (scan takes nt, acc, vec, warp, items, split)"},
		{"scan:tf=0", "unknown key 'tf' (scan takes"},
		{"splitk:cl=2", "unknown key 'cl' (splitk takes nt, acc, vec, warp, items, un, tf, split)"},
		{"rowreduce:bk=4,un=2", "and un 1 (the ring's stages are the loads in flight)"},
		{"attention:wg=2,nt=128", "the Hopper attention template at wg=2 has nt=256, mt=1 and ks=1"},
		{"attention:mt=2,wg=1", "at wg=1 has nt=128, mt=1 and ks=1"},
		{"attention:ws=1,ks=2", "at wg=2 ws has nt=384"},
		{"attention:wg=0,ws=1", "the mma.sync template (wg=0) has none"},
		{"", "unknown kernel family"},
	};
	for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
		Variant v;
		char msg[512] = "";
		cr_expect_eq(variant_parse(bad[k][0], &v, msg, sizeof msg), -1, "'%s' read", bad[k][0]);
		cr_expect(strstr(msg, bad[k][1]), "'%s': %s", bad[k][0], msg);
	}
}

/* ---- the cache ---- */

static TuneCache cache;
static const char *KEY = "device=NVIDIA H200;cc=9.0;sms=132;driver=13000;nvrtc=13.0;template=rowreduce/1;"
			 "spec=0123abcd;dtypes=f32;shape=rows 4096-8191,len 4096-8191";

static void fresh_cache(void)
{
	char dir[] = "build/tunecache.XXXXXX";
	test_tmpdir(dir);
	char err[300];
	cr_assert_eq(tc_open(&cache, dir, err, sizeof err), 0, "%s", err);
}

static void write_file(const char *bytes, size_t n)
{
	char path[1200];
	tc_path(&cache, KEY, path, sizeof path);
	FILE *f = fopen(path, "wb");
	fwrite(bytes, 1, n, f);
	fclose(f);
}

static char *read_entry(size_t *n)
{
	char path[1200];
	tc_path(&cache, KEY, path, sizeof path);
	FILE *f = fopen(path, "rb");
	cr_assert(f);
	char *buf = calloc(1, 1 << 16);
	*n = fread(buf, 1, 1 << 16, f);
	fclose(f);
	return buf;
}

static void expect_miss(const char *reason)
{
	char v[256], why[256];
	cr_assert_eq(tc_get(&cache, KEY, v, sizeof v, why, sizeof why), 0);
	cr_assert(strstr(why, reason), "expected '%s', got '%s'", reason, why);
}

Test(tune, cache_round_trip_and_mode)
{
	fresh_cache();
	char v[256], why[256], err[256], text[256];
	expect_miss("no entry");
	/* the tuner stores a variant's text and run reads the variant back from it */
	Variant chosen = {.fam = FAM_ATTN, .nt = 128, .acc = 1, .vec = 1, .mt = 1, .bn = 128, .pv = 1, .st = 3, .ks = 4,
			  .split = 2}, back;
	variant_str(&chosen, text, sizeof text);
	cr_assert_str_eq(text, "attention:nt=128,mt=1,bn=128,pv=1,st=3,ks=4,split=2");
	cr_assert_eq(tc_put(&cache, KEY, text, err, sizeof err), 0, "%s", err);
	cr_assert_eq(tc_get(&cache, KEY, v, sizeof v, why, sizeof why), 1, "%s", why);
	cr_assert_str_eq(v, text);
	cr_assert_eq(variant_parse(v, &back, err, sizeof err), 0, "%s", err);
	cr_assert(!memcmp(&chosen, &back, sizeof back), "the variant read back is the one stored");
	struct stat st;
	cr_assert_eq(stat(cache.dir, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0700);
	cr_assert_eq(tc_get(&cache, "device=other", v, sizeof v, why, sizeof why), 0, "another key misses");
}

Test(tune, cache_damaged_entries_are_misses)
{
	fresh_cache();
	char err[256];
	tc_put(&cache, KEY, "rowreduce:nt=256,acc=2,vec=4,warp=0,items=0,split=1", err, sizeof err);
	size_t n;
	char *good = read_entry(&n);
	write_file(good, n / 2);
	expect_miss("truncated");
	write_file("", 0);
	expect_miss("wrong magic");
	write_file("PK\x03\x04 a zip file", 16);
	expect_miss("wrong magic");
	char *bad = strdup(good);
	bad[n - 5] = bad[n - 5] == '0' ? '1' : '0';
	write_file(bad, n);
	expect_miss("bad checksum");
	strcpy(bad, good);
	bad[strlen("ASSOCTUNE ")] = '9';
	write_file(bad, n);
	expect_miss("stale");
	free(bad);
	free(good);
}

Test(tune, cache_foreign_key_is_a_miss)
{
	fresh_cache();
	char err[256], other[1200], mine[1200];
	/* an entry for another driver version, put where this key's entry belongs */
	tc_put(&cache, "device=NVIDIA H200;driver=12040", "rowreduce:nt=32,acc=1,vec=1,warp=1,items=0,split=1", err,
	       sizeof err);
	tc_path(&cache, "device=NVIDIA H200;driver=12040", other, sizeof other);
	tc_path(&cache, KEY, mine, sizeof mine);
	cr_assert_eq(rename(other, mine), 0);
	expect_miss("another key");
}

/* Root writes anywhere: as root, the write is tried by a child that has
 * become an ordinary user (nobody), as the test would run for anyone else. */
Test(tune, cache_unwritable_directory)
{
	fresh_cache();
	chmod(cache.dir, 0555);
	int fd[2];
	cr_assert_eq(pipe(fd), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(fd[0]);
		if (geteuid() == 0 && (setgid(65534) || setuid(65534)))
			_exit(3);
		char err[256] = "";
		int rc = tc_put(&cache, KEY, "x", err, sizeof err);
		if (write(fd[1], err, strlen(err) + 1) < 0)
			_exit(4);
		_exit(rc == -1 ? 0 : 1);
	}
	close(fd[1]);
	char err[256] = "";
	ssize_t n = read(fd[0], err, sizeof err - 1);
	close(fd[0]);
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	chmod(cache.dir, 0700);
	cr_assert(WIFEXITED(st), "the child ended by a signal");
	cr_assert_neq(WEXITSTATUS(st), 3, "could not become an ordinary user");
	cr_assert_eq(WEXITSTATUS(st), 0, "the write into a read-only directory did not fail");
	cr_assert_gt(n, 0);
	cr_assert(strstr(err, "cannot write"), "%s", err);
}

Test(tune, cache_unwritable_path)
{
	TuneCache tc;
	char err[256];
	cr_assert_eq(tc_open(&tc, "/proc/assoc-cannot-be-here", err, sizeof err), -1);
	cr_assert(strstr(err, "cannot create the tuning cache"), "%s", err);
}

Test(tune, cache_concurrent_writers)
{
	fresh_cache();
	/* an entry from the start: a reader must find one at every moment, the
	 * old or the new, never none and never a part */
	char err0[256];
	cr_assert_eq(tc_put(&cache, KEY, "splitk:nt=32,acc=1,vec=4,warp=0,items=0,split=2", err0, sizeof err0), 0, "%s",
		     err0);
	for (int p = 0; p < 4; p++)
		if (fork() == 0) {
			char err[256], v[64];
			for (int i = 0; i < 200; i++) {
				snprintf(v, sizeof v, "splitk:nt=%d,acc=%d,vec=4,warp=0,items=0,split=%d", 32 << (p % 5), i % 4 + 1,
					 2 << p);
				if (tc_put(&cache, KEY, v, err, sizeof err))
					_exit(1);
			}
			_exit(0);
		}
	int bad = 0, hits = 0;
	for (int i = 0; i < 400; i++) {
		char v[256], why[256];
		int hit = tc_get(&cache, KEY, v, sizeof v, why, sizeof why);
		hits += hit;
		Variant c;
		char msg[256];
		bad += !hit || variant_parse(v, &c, msg, sizeof msg) != 0;
	}
	for (int p = 0; p < 4; p++) {
		int st;
		wait(&st);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	cr_assert_eq(bad, 0, "a reader never sees a partial entry, nor none");
	cr_assert_eq(hits, 400);
	char v[256], why[256];
	cr_assert_eq(tc_get(&cache, KEY, v, sizeof v, why, sizeof why), 1, "%s", why);
}
