/* variant.c: kernel variants' text, written and read here alone. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "variant.h"

static const char *const fam_names[NFAM] = {"none", "rowreduce", "rowmap", "splitk", "scan", "attention"};

const char *variant_family_name(Family f) { return f >= FAM_NONE && f < NFAM ? fam_names[f] : "?"; }

Family variant_family(const char *name)
{
	for (int f = FAM_NONE + 1; f < NFAM; f++)
		if (!strcmp(name, fam_names[f]))
			return (Family)f;
	return FAM_NONE;
}

void variant_str(const Variant *v, char *buf, size_t n)
{
	int k;
	if (v->fam == FAM_ATTN) {
		k = snprintf(buf, n, "attention:nt=%d,mt=%d,bn=%d,pv=%d,st=%d", v->nt, v->mt, v->bn, v->pv, v->st);
		if (v->ks > 1 && k > 0 && (size_t)k < n) /* one warp a slice of the keys is the default, unnamed */
			k += snprintf(buf + k, n - k, ",ks=%d", v->ks);
		if (v->wg > 0 && k > 0 && (size_t)k < n) /* so is the mma.sync template */
			k += snprintf(buf + k, n - k, ",wg=%d", v->wg);
		if (v->ws > 0 && k > 0 && (size_t)k < n) /* so is the schedule whose warpgroups all compute */
			k += snprintf(buf + k, n - k, ",ws=%d", v->ws);
	} else {
		k = snprintf(buf, n, "%s:nt=%d,acc=%d,vec=%d,warp=%d,items=%d", variant_family_name(v->fam), v->nt, v->acc,
			     v->vec, v->warp, v->items);
		/* one load an accumulator and the plain fold are the defaults,
		 * unnamed, so that the texts written before them read the same */
		if (v->un > 1 && k > 0 && (size_t)k < n)
			k += snprintf(buf + k, n - k, ",un=%d", v->un);
		if (v->tf && k > 0 && (size_t)k < n)
			k += snprintf(buf + k, n - k, ",tf=%d", v->tf);
		if (v->cl > 1 && k > 0 && (size_t)k < n) /* so is a row in one block */
			k += snprintf(buf + k, n - k, ",cl=%d", v->cl);
		if (v->bk && k > 0 && (size_t)k < n) /* and rows read by ordinary loads */
			k += snprintf(buf + k, n - k, ",bk=%d", v->bk);
	}
	if (v->split > 0 && k > 0 && (size_t)k < n)
		snprintf(buf + k, n - k, ",split=%d", v->split);
}

/* The keys of the texts and the families that take each: a key is a
 * parameter of the family's kernels, or one its written text names at the
 * one value it takes there (warp=0 for splitk and scan, items=0 for
 * rowreduce and splitk).  Any other is refused rather than read and
 * dropped. */
#define F(f) (1u << (f))
enum { ROWS = F(FAM_ROWREDUCE) | F(FAM_ROWMAP), ROWS_SPLITK = ROWS | F(FAM_SPLITK), ALL_ROWS = ROWS_SPLITK | F(FAM_SCAN) };
static const struct {
	const char *name;
	unsigned fams;
} keys[] = {{"nt", ALL_ROWS | F(FAM_ATTN)},
	    {"acc", ALL_ROWS},
	    {"vec", ALL_ROWS},
	    {"warp", ALL_ROWS},
	    {"items", ALL_ROWS},
	    {"un", ROWS_SPLITK},
	    {"tf", ROWS_SPLITK},
	    {"cl", ROWS},
	    {"bk", ROWS},
	    {"mt", F(FAM_ATTN)},
	    {"bn", F(FAM_ATTN)},
	    {"pv", F(FAM_ATTN)},
	    {"st", F(FAM_ATTN)},
	    {"ks", F(FAM_ATTN)},
	    {"wg", F(FAM_ATTN)},
	    {"ws", F(FAM_ATTN)},
	    {"split", ALL_ROWS | F(FAM_ATTN)}};
#undef F
enum { NKEYS = sizeof keys / sizeof *keys };

/* The slot of keys[k] in v. */
static int *slot(Variant *v, int k)
{
	int *const slots[NKEYS] = {&v->nt, &v->acc, &v->vec, &v->warp, &v->items, &v->un, &v->tf, &v->cl, &v->bk,
				   &v->mt, &v->bn,  &v->pv,  &v->st,   &v->ks,    &v->wg, &v->ws, &v->split};
	return slots[k];
}

/* The index in keys of a key v's family takes, -1 for any other. */
static int key_of(const Variant *v, const char *key)
{
	for (int k = 0; k < NKEYS; k++)
		if (!strcmp(key, keys[k].name))
			return keys[k].fams >> v->fam & 1 ? k : -1;
	return -1;
}

/* "unknown key" and the keys the family takes. */
static void unknown_key(const Variant *v, const char *s, const char *key, char *msg, size_t n)
{
	int l = snprintf(msg, n, "configuration '%s': unknown key '%s' (%s takes", s, key, variant_family_name(v->fam));
	for (int k = 0, first = 1; k < NKEYS && l > 0 && (size_t)l < n; k++)
		if (keys[k].fams >> v->fam & 1)
			l += snprintf(msg + l, n - l, "%s %s", first ? "" : ",", keys[k].name), first = 0;
	if (l > 0 && (size_t)l < n)
		snprintf(msg + l, n - l, ")");
}

int variant_changes(const Variant *asked, const Variant *got, char *buf, size_t n)
{
	Variant a = *asked, g = *got;
	int count = 0;
	size_t l = 0;
	if (n)
		buf[0] = 0;
	for (int k = 0; k < NKEYS; k++) {
		if (!(keys[k].fams >> a.fam & 1) || !strcmp(keys[k].name, "split") || *slot(&a, k) == *slot(&g, k))
			continue;
		if (l < n) {
			int w = snprintf(buf + l, n - l, "%s%s=%d -> %d", count ? ", " : "", keys[k].name, *slot(&a, k),
					 *slot(&g, k));
			l += w > 0 ? (size_t)w : 0;
		}
		count++;
	}
	return count;
}

int variant_parse(const char *s, Variant *v, char *msg, size_t n)
{
	char fam[32];
	const char *colon = strchr(s, ':');
	size_t fl = colon ? (size_t)(colon - s) : strlen(s);
	snprintf(fam, sizeof fam, "%.*s", (int)(fl < 31 ? fl : 31), s);
	*v = (Variant){.fam = variant_family(fam), .nt = 128, .acc = 1, .vec = 1, .un = 1};
	if (v->fam == FAM_NONE) {
		snprintf(msg, n, "configuration '%s': unknown kernel family '%s' (%s, %s, %s, %s, %s)", s, fam,
			 fam_names[FAM_ROWREDUCE], fam_names[FAM_ROWMAP], fam_names[FAM_SPLITK], fam_names[FAM_SCAN],
			 fam_names[FAM_ATTN]);
		return -1;
	}
	if (v->fam == FAM_SCAN)
		v->items = 4;
	if (v->fam == FAM_ATTN)
		v->mt = 1, v->bn = 64, v->pv = 1, v->st = 2, v->ks = 1, v->un = 0;
	unsigned given = 0; /* the keys given: one given twice is a mistake, not the last one's value */
	for (const char *p = colon ? colon + 1 : ""; *p;) {
		char key[16];
		size_t kl = 0;
		while (islower((unsigned char)p[kl]) && kl < sizeof key - 1)
			key[kl] = p[kl], kl++;
		key[kl] = 0;
		char *end = NULL;
		long val = 0;
		if (kl && p[kl] == '=' && (isdigit((unsigned char)p[kl + 1]) || p[kl + 1] == '-')) {
			errno = 0;
			val = strtol(p + kl + 1, &end, 10);
		}
		if (!end || errno == ERANGE || val < INT_MIN || val > INT_MAX || (*end && *end != ',')) {
			snprintf(msg, n, "configuration '%s': expected key=value at '%s'", s, p);
			return -1;
		}
		/* decimal digits as written by variant_str: "04" and "-0" are no
		 * spelling of a value (a sign stays for the range's message) */
		const char *digits = p + kl + 1 + (p[kl + 1] == '-');
		if (digits[0] == '0' && (end - digits > 1 || digits != p + kl + 1)) {
			snprintf(msg, n, "configuration '%s': %s=%.*s: a value is written in decimal digits without a leading zero",
				 s, key, (int)(end - (p + kl + 1)), p + kl + 1);
			return -1;
		}
		if (*end == ',' && !end[1]) {
			snprintf(msg, n, "configuration '%s' ends in a comma: a key=value is missing after it", s);
			return -1;
		}
		int k = key_of(v, key);
		if (k < 0) {
			unknown_key(v, s, key, msg, n);
			return -1;
		}
		if (given >> k & 1) {
			snprintf(msg, n, "configuration '%s': key '%s' is given twice", s, key);
			return -1;
		}
		given |= 1u << k;
		*slot(v, k) = (int)val;
		p = *end ? end + 1 : end;
	}
	int splits = v->fam == FAM_SPLITK || v->fam == FAM_SCAN || v->fam == FAM_ATTN;
	if (v->split < 0 || v->split > VARIANT_MAX_SPLIT || (v->split > 1 && !splits)) {
		snprintf(msg, n, "configuration '%s': split %d is out of range (1 to %d, and 1 for rowreduce and rowmap, "
				 "whose rows are not split)", s, v->split, VARIANT_MAX_SPLIT);
		return -1;
	}
	if (v->fam == FAM_ATTN && v->ws && !v->wg && !(given >> key_of(v, "wg") & 1))
		v->wg = 2; /* the warp-specialized schedules' two consumer warpgroups */
	if (v->fam == FAM_ATTN && v->ws && !v->wg) {
		snprintf(msg, n, "configuration '%s': ws, the warp-specialized schedules, are the Hopper template's (wg 2); "
				 "the mma.sync template (wg=0) has none", s);
		return -1;
	}
	if (v->fam == FAM_ATTN && v->wg) {
		/* nt, mt and ks follow from wg; bn up to 256 keys (wgmma's n) */
		if (v->wg < 1 || v->wg > 3 || (v->bn % 16) || v->bn < 16 || v->bn > 256 || v->pv < 1 || v->pv > 3 ||
		    v->st < 1 || v->st > 4) {
			snprintf(msg, n, "configuration '%s' is out of range (the Hopper attention template, wg > 0: wg 1-3 "
					 "warpgroups, bn a multiple of 16 up to 256, pv 1-3, st 1-4)", s);
			return -1;
		}
		/* ws: on one stage the consumers' turns deadlock (one waits in
		 * its turn for a copy that the other's release of the stage, in
		 * the other's next turn, allows) */
		if (v->ws < 0 || v->ws > 2 || (v->ws && (v->wg != 2 || v->st < 2))) {
			snprintf(msg, n, "configuration '%s' is out of range (ws, the warp-specialized schedules: 1, or 2 with "
					 "each tile's softmax under the tensor cores; wg 2 consumer warpgroups, st 2 or more)", s);
			return -1;
		}
		int nt = 128 * (v->wg + (v->ws > 0));
		if ((given >> key_of(v, "nt") & 1 && v->nt != nt) || (given >> key_of(v, "mt") & 1 && v->mt != 1) ||
		    (given >> key_of(v, "ks") & 1 && v->ks != 1)) {
			snprintf(msg, n, "configuration '%s': the Hopper attention template at wg=%d%s has nt=%d, mt=1 and ks=1 "
					 "(128 threads a warpgroup of 64 query rows%s)", s, v->wg, v->ws ? " ws" : "", nt,
				 v->ws ? ", and 128 for the producer" : "");
			return -1;
		}
		v->nt = nt, v->mt = 1, v->ks = 1;
		return 0;
	}
	if (v->fam == FAM_ATTN) {
		if (v->nt < 32 || v->nt > 512 || v->nt % 32 || v->mt < 1 || v->mt > 4 ||
		    (v->bn != 16 && v->bn != 32 && v->bn != 64 && v->bn != 128) || v->pv < 1 || v->pv > 3 || v->st < 1 ||
		    v->st > 3) {
			snprintf(msg, n, "configuration '%s' is out of range (attention: nt a multiple of 32 up to 512, mt "
					 "1-4, bn 16, 32, 64 or 128, pv 1-3, st 1-3)", s);
			return -1;
		}
		if (v->ks < 1 || v->ks > 8 || v->nt / 32 % v->ks || v->bn % (16 * v->ks)) {
			snprintf(msg, n, "configuration '%s': ks (warps that split each key tile, 1 to 8) must divide the warps "
					 "(nt / 32) and leave every warp 16 keys of a tile or a multiple of 16 (bn / ks)", s);
			return -1;
		}
		return 0;
	}
	int row = v->fam == FAM_ROWREDUCE || v->fam == FAM_ROWMAP;
	int ok = v->nt >= 32 && v->nt <= 1024 && v->nt % 32 == 0 && v->acc >= 1 && v->acc <= 8 &&
		 (v->vec == 1 || v->vec == 4) && (v->warp == 0 || v->warp == 1) && v->items >= 0 && v->items <= 64 &&
		 (v->fam != FAM_SCAN || v->items >= 1) && (!v->warp || row) &&
		 (!v->items || v->fam == FAM_ROWMAP || v->fam == FAM_SCAN) && (v->un == 1 || v->un == 2 || v->un == 4) &&
		 (v->tf == 0 || v->tf == 1);
	if (!ok) {
		snprintf(msg, n, "configuration '%s' is out of range (nt: a multiple of 32 up to 1024; acc 1-8; vec 1 or 4; "
				 "warp 0 or 1, rowreduce and rowmap only; items 0-64, rowmap and scan only; un 1, 2 or 4; "
				 "tf 0 or 1)", s);
		return -1;
	}
	if (v->cl == 1) /* a cluster of one block is a block a row */
		v->cl = 0;
	if (v->cl && ((v->cl != 2 && v->cl != 4 && v->cl != 8 && v->cl != 16) || !row || v->warp)) {
		snprintf(msg, n, "configuration '%s': cl, the blocks of a cluster a row is split across, is 2, 4, 8 or 16, "
				 "for rowreduce and rowmap with a block a row (warp 0)", s);
		return -1;
	}
	/* un: the ring's stages are the loads in flight (templates/rowbulk.cuh) */
	if (v->bk && (v->bk < 2 || v->bk > 8 || !row || v->warp || v->cl || v->items || v->un > 1)) {
		snprintf(msg, n, "configuration '%s': bk, the stages of shared memory a row is streamed through by bulk "
				 "copies, is 2 to 8, for rowreduce and rowmap with a block a row (warp 0), no cluster (cl), "
				 "no items (the row stays in the ring where it fits) and un 1 (the ring's stages are the loads "
				 "in flight)", s);
		return -1;
	}
	return 0;
}
