/* test_tune.c: the tuner's space, model, pruning and selection with a fake
 * timer, and the tuning cache's handling of damaged entries. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/tune.h"
#include "testutil.h"

static TuneProblem h200(TuneTemplate tpl, int rows, int len)
{
	TuneProblem p = {.tpl = tpl, .rows = rows, .len = len, .elem_bytes = 4, .state_regs = 2};
	p.dev = (RtDevice){.name = "NVIDIA H200", .major = 9, .sms = 132, .regs_per_sm = 65536,
			   .smem_per_sm = 228 << 10, .smem_per_block_optin = 227 << 10,
			   .max_threads_per_sm = 2048, .max_blocks_per_sm = 32};
	return p;
}

Test(tune, space_is_structured_and_bounded)
{
	TuneProblem p = h200(TUNE_ROWREDUCE, 1024, 4096);
	TuneConfig c[TUNE_MAX_CANDIDATES];
	int n = tune_space(&p, c, TUNE_MAX_CANDIDATES);
	cr_assert_gt(n, 20);
	cr_assert_lt(n, TUNE_MAX_CANDIDATES);
	for (int i = 0; i < n; i++) {
		cr_assert_leq(c[i].vec * p.elem_bytes, 16, "at most one 16-byte load per thread");
		cr_assert_leq(c[i].threads * c[i].rows_per_block, 1024);
	}
	p.elem_bytes = 2;
	int n16 = tune_space(&p, c, TUNE_MAX_CANDIDATES);
	cr_assert_gt(n16, n, "f16 allows 8-wide loads");
}

Test(tune, occupancy_from_registers_and_shared_memory)
{
	TuneProblem p = h200(TUNE_ROWREDUCE, 1024, 4096);
	TuneConfig c = {256, 1, 4, 1, 1, 0, 0};
	cr_assert_float_eq(tune_occupancy(&p, &c, &(TuneResources){32, 0, 0}), 1.0, 1e-9);
	cr_assert_float_eq(tune_occupancy(&p, &c, &(TuneResources){64, 0, 0}), 0.5, 1e-9, "64 regs: 4 blocks of 256");
	cr_assert_float_eq(tune_occupancy(&p, &c, &(TuneResources){32, 100 << 10, 0}), 0.25, 1e-9,
			   "100 KiB of shared memory: 2 blocks");
	cr_assert_eq(tune_occupancy(&p, &c, &(TuneResources){32, 300 << 10, 0}), 0, "over the per-block limit");
}

Test(tune, model_rules_out_spills_and_idle_threads)
{
	TuneProblem p = h200(TUNE_ROWREDUCE, 4096, 64);
	TuneResources ok = {32, 0, 0};
	cr_assert_eq(tune_model(&p, &(TuneConfig){256, 1, 4, 1, 1, 0, 0}, &(TuneResources){32, 0, 8}), 0, "spills");
	double warp = tune_model(&p, &(TuneConfig){32, 4, 2, 1, 1, 0, 0}, &ok);
	double block = tune_model(&p, &(TuneConfig){1024, 1, 4, 1, 1, 0, 0}, &ok);
	cr_assert_gt(warp, block, "rows of 64: a warp per row beats 1024 mostly idle threads");
}

Test(tune, prune_keeps_best_in_order)
{
	TuneProblem p = h200(TUNE_ROWREDUCE, 8192, 8192);
	TuneConfig c[TUNE_MAX_CANDIDATES];
	TuneResources r[TUNE_MAX_CANDIDATES];
	int n = tune_space(&p, c, TUNE_MAX_CANDIDATES);
	for (int i = 0; i < n; i++)
		r[i] = (TuneResources){32, 0, 0};
	int k = tune_prune(&p, c, r, n, 8);
	cr_assert_eq(k, 8);
	for (int i = 1; i < k; i++)
		cr_assert_geq(tune_model(&p, &c[i - 1], &r[0]), tune_model(&p, &c[i], &r[0]));
}

/* A fake device: times come from a function of the configuration. */
typedef struct {
	int timed, validated, fail_compile_threads, wrong_vec;
} Fake;

static int fake_res(void *ctx, const TuneConfig *c, TuneResources *r, char *why, size_t n)
{
	Fake *f = ctx;
	if (c->threads == f->fail_compile_threads) {
		snprintf(why, n, "NVRTC: error: too many resources");
		return -1;
	}
	*r = (TuneResources){c->acc == 4 && c->vec == 4 ? 300 : 32, 0, c->acc == 4 && c->vec == 4 ? 64 : 0};
	return 0;
}

static int fake_validate(void *ctx, const TuneConfig *c, char *why, size_t n)
{
	Fake *f = ctx;
	f->validated++;
	if (c->vec == f->wrong_vec) {
		snprintf(why, n, "wrong result: lse off by 3e-2 at row 7");
		return -1;
	}
	return 0;
}

static double fake_time(void *ctx, const TuneConfig *c, char *why, size_t n)
{
	Fake *f = ctx;
	(void)why, (void)n;
	f->timed++;
	return 1.0 + 0.01 * c->threads / 32 - 0.1 * c->vec + (c->acc == 2 ? -0.05 : 0);
}

Test(tune, select_with_fake_timer)
{
	unsetenv("ASSOC_TUNE");
	TuneProblem p = h200(TUNE_ROWREDUCE, 8192, 8192);
	Fake f = {.fail_compile_threads = 1024, .wrong_vec = 1};
	TuneHooks h = {&f, fake_res, fake_validate, fake_time, NULL, 1e9};
	TuneResult r;
	cr_assert_eq(tune_select(&p, &h, &r), 0);
	cr_assert_geq(r.best, 0);
	cr_assert(r.timed);
	cr_assert_leq(f.timed, 8, "only the model's best few are timed");
	for (int i = 0; i < r.n; i++) {
		if (i == r.best)
			continue;
		cr_assert(!(r.cand[i].ms < r.cand[r.best].ms), "the fastest wins");
	}
	int compile_logged = 0, spill_logged = 0;
	for (int i = 0; i < r.n; i++) {
		compile_logged |= isinf(r.cand[i].ms) && strstr(r.cand[i].why, "too many resources") != NULL;
		spill_logged |= isinf(r.cand[i].ms) && strstr(r.cand[i].why, "spills 64 bytes") != NULL;
		cr_assert(r.cand[i].cfg.threads != 1024 || isinf(r.cand[i].ms), "failed compiles never win");
	}
	cr_assert(compile_logged && spill_logged, "failures are logged with their reason");
	int pruned = 0;
	for (int i = 0; i < r.n; i++)
		pruned += strstr(r.cand[i].why, "not timed: the model ranks") != NULL;
	cr_assert_gt(pruned, 0, "candidates the model rules out are listed too");
	TuneResult again;
	Fake g = f;
	h.ctx = &g;
	tune_select(&p, &h, &again);
	cr_assert(!memcmp(&again.cand[again.best].cfg, &r.cand[r.best].cfg, sizeof(TuneConfig)), "deterministic");
}

Test(tune, invalid_candidates_score_infinity)
{
	unsetenv("ASSOC_TUNE");
	TuneProblem p = h200(TUNE_ROWREDUCE, 8192, 8192);
	Fake f = {.wrong_vec = 4};
	TuneHooks h = {&f, fake_res, fake_validate, fake_time, NULL, 1e9};
	TuneResult r;
	tune_select(&p, &h, &r);
	cr_assert_neq(r.cand[r.best].cfg.vec, 4);
	for (int i = 0; i < r.n; i++)
		if (r.cand[i].cfg.vec == 4 && !strstr(r.cand[i].why, "spills") && !strstr(r.cand[i].why, "not timed"))
			cr_assert(isinf(r.cand[i].ms) && strstr(r.cand[i].why, "wrong result"));
}

Test(tune, tune_off_takes_the_models_pick)
{
	setenv("ASSOC_TUNE", "off", 1);
	TuneProblem p = h200(TUNE_ROWREDUCE, 8192, 8192);
	Fake f = {0};
	TuneHooks h = {&f, fake_res, fake_validate, fake_time, NULL, 1e9};
	TuneResult r;
	cr_assert_eq(tune_select(&p, &h, &r), 0);
	cr_assert_not(r.timed);
	cr_assert_eq(f.timed, 0, "nothing timed");
	cr_assert_eq(r.best, 0);
	unsetenv("ASSOC_TUNE");
}

Test(tune, config_text_round_trip)
{
	TuneConfig c = {128, 1, 4, 2, 1, 0, 0}, d;
	char buf[128];
	tune_config_str(&c, buf, sizeof buf);
	cr_assert_eq(tune_config_parse(buf, &d), 0);
	cr_assert(!memcmp(&c, &d, sizeof c));
	cr_assert_eq(tune_config_parse("threads=4096 rows=1 vec=4 acc=2 split=1 chunk=0", &d), -1);
	cr_assert_eq(tune_config_parse("threads=128", &d), -1);
}

/* ---- the cache ---- */

static TuneCache cache;
static const char *KEY = "device=NVIDIA H200;cc=9.0;sms=132;driver=13000;nvrtc=13.0;template=rowreduce/1;"
			 "spec=0123abcd;dtypes=f32;shape=rows 4096-8191,len 4096-8191";

static void fresh_cache(void)
{
	char dir[] = "build/tunecache.XXXXXX";
	cr_assert(mkdtemp(dir));
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
	char v[256], why[256], err[256];
	expect_miss("no entry");
	cr_assert_eq(tc_put(&cache, KEY, "threads=256 rows=1 vec=4 acc=2 split=1 chunk=0", err, sizeof err), 0, "%s", err);
	cr_assert_eq(tc_get(&cache, KEY, v, sizeof v, why, sizeof why), 1, "%s", why);
	cr_assert_str_eq(v, "threads=256 rows=1 vec=4 acc=2 split=1 chunk=0");
	struct stat st;
	cr_assert_eq(stat(cache.dir, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0700);
	cr_assert_eq(tc_get(&cache, "device=other", v, sizeof v, why, sizeof why), 0, "another key misses");
}

Test(tune, cache_damaged_entries_are_misses)
{
	fresh_cache();
	char err[256];
	tc_put(&cache, KEY, "threads=256 rows=1 vec=4 acc=2 split=1 chunk=0", err, sizeof err);
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
	tc_put(&cache, "device=NVIDIA H200;driver=12040", "threads=32 rows=1 vec=1 acc=1 split=1 chunk=0", err,
	       sizeof err);
	tc_path(&cache, "device=NVIDIA H200;driver=12040", other, sizeof other);
	tc_path(&cache, KEY, mine, sizeof mine);
	cr_assert_eq(rename(other, mine), 0);
	expect_miss("another key");
}

Test(tune, cache_unwritable_directory)
{
	if (geteuid() == 0)
		cr_skip_test("root writes anywhere; permissions cannot be tested");
	fresh_cache();
	chmod(cache.dir, 0500);
	char err[256];
	cr_assert_eq(tc_put(&cache, KEY, "x", err, sizeof err), -1);
	cr_assert(strstr(err, "cannot write"), "%s", err);
	chmod(cache.dir, 0700);
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
	for (int p = 0; p < 4; p++)
		if (fork() == 0) {
			char err[256], v[64];
			for (int i = 0; i < 200; i++) {
				snprintf(v, sizeof v, "threads=%d rows=1 vec=4 acc=%d split=1 chunk=0", 32 << (p % 5), i % 4 + 1);
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
		TuneConfig c;
		bad += hit ? tune_config_parse(v, &c) != 0 : strcmp(why, "no entry") != 0;
	}
	for (int p = 0; p < 4; p++) {
		int st;
		wait(&st);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	cr_assert_eq(bad, 0, "a reader never sees a partial entry");
	char v[256], why[256];
	cr_assert_eq(tc_get(&cache, KEY, v, sizeof v, why, sizeof why), 1, "%s", why);
	cr_assert_geq(hits, 0);
}
