/* usage: test_size
 * Checks shared/size.c: size_parse, duration_parse; and size_parse against
 * its inverse, size_format (t/unit/size_format.h).
 * Exit 0 when every check passes, 1 otherwise (each failure printed). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "size.h"
#include "size_format.h"

static int failures;

#define CHECK(cond) do { if (!(cond)) { failures++; \
	printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); } } while (0)

/* <fn>(<s>) must return <rc>; on 0 give <want>, else leave the output. */
static void parse_is(int (*fn)(const char *, uint64_t *), const char *fname,
		     const char *s, int rc, uint64_t want, int line)
{
	uint64_t v = 42;
	int got = fn(s, &v);

	if (rc)
		want = 42;
	if (got != rc || v != want) {
		failures++;
		printf("FAIL line %d: %s(\"%s\") = %d, %llu; want %d, %llu\n",
		       line, fname, s ? s : "(null)", got,
		       (unsigned long long)v, rc, (unsigned long long)want);
	}
}

#define size_ok(s, v)	parse_is(size_parse, "size_parse", s, 0, v, __LINE__)
#define size_bad(s, e)	parse_is(size_parse, "size_parse", s, e, 0, __LINE__)
#define duration_ok(s, v) \
	parse_is(duration_parse, "duration_parse", s, 0, v, __LINE__)
#define duration_bad(s, e) \
	parse_is(duration_parse, "duration_parse", s, e, 0, __LINE__)
#define format_is(v, want)	format_is_at(v, want, __LINE__)

/* size_format(<v>) must be <want>, and parse back to <v>. */
static void format_is_at(uint64_t v, const char *want, int line)
{
	char buf[SIZE_FORMAT_MAX];
	uint64_t back = 0;

	if (size_format(v, buf, sizeof(buf)) != buf || strcmp(buf, want) ||
	    size_parse(buf, &back) || back != v) {
		failures++;
		printf("FAIL line %d: size_format(%llu) = \"%s\" (back %llu); want \"%s\"\n",
		       line, (unsigned long long)v, buf,
		       (unsigned long long)back, want);
	}
}

static void test_size_parse(void)
{
	size_ok("0", 0);
	size_ok("1", 1);
	size_ok("007", 7);
	size_ok("262144", 262144);
	size_ok("256K", 262144);
	size_ok("256k", 262144);
	size_ok("256KB", 262144);
	size_ok("256kb", 262144);
	size_ok("256Kb", 262144);
	size_ok("64M", 64ull << 20);
	size_ok("64MB", 64ull << 20);
	size_ok("64m", 64ull << 20);
	size_ok("3G", 3ull << 30);
	size_ok("3gb", 3ull << 30);
	size_ok("2T", 2ull << 40);
	size_ok("2tB", 2ull << 40);
	size_ok("64B", 64);
	size_ok("64b", 64);
	size_ok("0K", 0);
	size_ok("18446744073709551615", UINT64_MAX);
	size_ok("16777215T", 16777215ull << 40);
	size_ok("17179869183G", 17179869183ull << 30);

	size_bad("18446744073709551616", -ERANGE);
	size_bad("99999999999999999999999999", -ERANGE);
	size_bad("16777216T", -ERANGE);
	size_bad("17179869184G", -ERANGE);
	size_bad("18014398509481984K", -ERANGE);

	size_bad(NULL, -EINVAL);
	size_bad("", -EINVAL);
	size_bad("-1", -EINVAL);
	size_bad("+1", -EINVAL);
	size_bad(" 1", -EINVAL);
	size_bad("1 ", -EINVAL);
	size_bad("1 K", -EINVAL);
	size_bad("1.5M", -EINVAL);
	size_bad("K", -EINVAL);
	size_bad("KB", -EINVAL);
	size_bad("1KK", -EINVAL);
	size_bad("1KiB", -EINVAL);
	size_bad("1BK", -EINVAL);
	size_bad("1MBB", -EINVAL);
	size_bad("1P", -EINVAL);
	size_bad("1X", -EINVAL);
	size_bad("0x10", -EINVAL);
	size_bad("12abc", -EINVAL);
	/* junk wins over overflow: the string is not a size at all */
	size_bad("99999999999999999999999999X", -EINVAL);
}

static void test_size_format(void)
{
	char buf[SIZE_FORMAT_MAX];
	uint64_t x = 88172645463325252ull;
	int i;

	format_is(0, "0");
	format_is(1, "1");
	format_is(1023, "1023");
	format_is(1024, "1K");
	format_is(1025, "1025");
	format_is(1536, "1536");
	format_is(262144, "256K");
	format_is(3 << 10 << 10, "3M");
	format_is((1ull << 20) + 1024, "1025K");
	format_is(3ull << 30, "3G");
	format_is(1ull << 40, "1T");
	format_is(1ull << 50, "1024T");
	format_is(1ull << 63, "8388608T");
	format_is(UINT64_MAX, "18446744073709551615");
	format_is(UINT64_MAX - 1023, "18014398509481983K");

	/* too small a buffer: NULL, buffer untouched */
	memset(buf, 'x', sizeof(buf));
	CHECK(size_format(262144, buf, 4) == NULL);
	CHECK(buf[0] == 'x' && buf[3] == 'x');
	CHECK(size_format(262144, buf, 0) == NULL);
	CHECK(size_format(262144, buf, 5) == buf && !strcmp(buf, "256K"));
	CHECK(size_format(UINT64_MAX, buf, 20) == NULL);
	CHECK(size_format(UINT64_MAX, buf, 21) == buf);
	CHECK(size_format(0, buf, 1) == NULL);
	CHECK(size_format(0, buf, 2) == buf && !strcmp(buf, "0"));

	/* round trip over values of every magnitude, aligned or not */
	for (i = 0; i < 2000; i++) {
		uint64_t v, back = 0;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		v = x >> (i % 64);
		if (i % 3 == 0)
			v &= ~((1ull << (i % 41)) - 1);
		if (!size_format(v, buf, sizeof(buf)) ||
		    size_parse(buf, &back) || back != v) {
			failures++;
			printf("FAIL round trip %llu -> \"%s\" -> %llu\n",
			       (unsigned long long)v, buf,
			       (unsigned long long)back);
		}
	}
}

static void test_duration_parse(void)
{
	duration_ok("0", 0);
	duration_ok("5", 5000);
	duration_ok("5s", 5000);
	duration_ok("150ms", 150);
	duration_ok("0ms", 0);
	duration_ok("2m", 120000);
	duration_ok("1h", 3600000);
	duration_ok("1d", 86400000);
	duration_ok("18446744073709551615ms", UINT64_MAX);
	duration_ok("18446744073709551s", 18446744073709551000ull);

	duration_bad("18446744073709552s", -ERANGE);
	duration_bad("18446744073709552", -ERANGE);
	duration_bad("18446744073709551616ms", -ERANGE);
	duration_bad("213503982335d", -ERANGE);

	duration_bad(NULL, -EINVAL);
	duration_bad("", -EINVAL);
	duration_bad("s", -EINVAL);
	duration_bad("ms", -EINVAL);
	duration_bad("-1", -EINVAL);
	duration_bad("-1s", -EINVAL);
	duration_bad("+1s", -EINVAL);
	duration_bad("1.5s", -EINVAL);
	duration_bad("5 s", -EINVAL);
	duration_bad(" 5s", -EINVAL);
	duration_bad("5S", -EINVAL);
	duration_bad("5MS", -EINVAL);
	duration_bad("5sec", -EINVAL);
	duration_bad("5us", -EINVAL);
	duration_bad("5w", -EINVAL);
	duration_bad("5ss", -EINVAL);
	duration_bad("1h30m", -EINVAL);
}

int main(int argc, char **argv)
{
	if (argc > 1) {
		printf("usage: test_size\n"
		       "Checks size_parse, size_format and duration_parse; "
		       "exit 0 pass, 1 fail.\n");
		return strcmp(argv[1], "--help") ? 2 : 0;
	}
	test_size_parse();
	test_size_format();
	test_duration_parse();
	printf("test_size: %d failure(s)\n", failures);
	return failures ? 1 : 0;
}
