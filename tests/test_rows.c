/* test_rows.c: the row templates' variants: their text (tiles of several
 * loads, un, and the transported fold, tf) reads back as written, and the
 * texts from before them read the same. */
#include <string.h>

#include "runtime/variant.h"
#include "testutil.h"

/* un and tf read back as written; a text without them (as the tuning
 * cache holds from before them) reads and writes the same as ever. */
Test(rows, variant_text_of_tiles_and_transport)
{
	Variant v, w;
	char msg[512], buf[256];
	cr_assert_eq(variant_parse("rowmap:nt=256,acc=2,vec=4,warp=0,items=16", &v, msg, sizeof msg), 0, "%s", msg);
	cr_expect(v.un == 1 && v.tf == 0, "defaults: un %d, tf %d", v.un, v.tf);
	variant_str(&v, buf, sizeof buf);
	cr_expect_str_eq(buf, "rowmap:nt=256,acc=2,vec=4,warp=0,items=16");
	cr_assert_eq(variant_parse("splitk:nt=64,acc=2,vec=4,un=4,tf=1,split=3", &v, msg, sizeof msg), 0, "%s", msg);
	variant_str(&v, buf, sizeof buf);
	cr_expect_str_eq(buf, "splitk:nt=64,acc=2,vec=4,warp=0,items=0,un=4,tf=1,split=3");
	cr_assert_eq(variant_parse(buf, &w, msg, sizeof msg), 0, "%s", msg);
	cr_expect(!memcmp(&v, &w, sizeof v), "%s reads back as itself", buf);
	static const char *const bad[] = {"rowreduce:un=3", "rowreduce:un=0", "rowmap:tf=2", "scan:un=2", "scan:tf=1",
					  "attention:un=2", "attention:tf=1"};
	for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
		cr_expect_eq(variant_parse(bad[k], &v, msg, sizeof msg), -1, "%s", bad[k]);
		cr_expect(strstr(msg, k < 5 ? "un 1, 2 or 4" : "unknown key"), "%s: %s", bad[k], msg);
	}
}
