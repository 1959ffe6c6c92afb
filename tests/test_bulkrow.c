/* test_bulkrow.c: rows streamed through a ring of shared memory by 1D bulk
 * copies (variant bk).  The text reads back, the texts from before it
 * read the same, and it is refused where it names no ring a row template
 * can have. */
#include <string.h>

#include "runtime/variant.h"
#include "testutil.h"

Test(bulkrow, variant_text)
{
	Variant v, w;
	char msg[512], buf[256];
	cr_assert_eq(variant_parse("rowmap:nt=512,acc=4,vec=4,bk=4", &v, msg, sizeof msg), 0, "%s", msg);
	cr_expect_eq(v.bk, 4);
	variant_str(&v, buf, sizeof buf);
	cr_expect_str_eq(buf, "rowmap:nt=512,acc=4,vec=4,warp=0,items=0,bk=4");
	cr_assert_eq(variant_parse(buf, &w, msg, sizeof msg), 0, "%s", msg);
	cr_expect(!memcmp(&v, &w, sizeof v), "%s reads back as itself", buf);
	cr_assert_eq(variant_parse("rowreduce:nt=256,acc=2,vec=4,warp=0,items=0,un=2,tf=1", &v, msg, sizeof msg), 0, "%s",
		     msg);
	cr_expect_eq(v.bk, 0, "no ring unless named");
	variant_str(&v, buf, sizeof buf);
	cr_expect_str_eq(buf, "rowreduce:nt=256,acc=2,vec=4,warp=0,items=0,un=2,tf=1");
	static const char *const bad[] = {"rowreduce:bk=1",        "rowreduce:bk=9",        "rowreduce:bk=-2",
					  "rowmap:warp=1,bk=2",    "rowreduce:cl=2,bk=2",   "rowmap:items=16,bk=4",
					  "splitk:bk=2",           "scan:bk=2"};
	for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
		cr_expect_eq(variant_parse(bad[k], &v, msg, sizeof msg), -1, "%s", bad[k]);
		cr_expect(strstr(msg, "bk, the stages of shared memory a row is streamed through by bulk copies, is 2 to 8"),
			  "%s: %s", bad[k], msg);
	}
	cr_expect_eq(variant_parse("attention:bk=2", &v, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "unknown key 'bk'"), "%s", msg);
}
