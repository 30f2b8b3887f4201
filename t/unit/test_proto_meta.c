/* usage: test_proto_meta
 * Checks storaged/mc/proto_parse.c on the meta commands: mg, ms, md, mn, ma
 * and me, their flags and tokens, base64 keys.
 * Exit 0 when every check passes, 1 otherwise (each failure printed). */
#include "proto_check.h"

static void test_meta(void)
{
	if (OK("mg foo v f s c k O42 t T30 q")) {
		CHECK(cmd.op == MC_MG && cmd.key.len == 3 && cmd.nmeta == 9);
		CHECK(cmd.meta[0].flag == 'v' && cmd.meta[5].flag == 'O' &&
		      cmd.meta[5].len == 2 && !memcmp(cmd.meta[5].v, "42", 2));
		CHECK(cmd.has_exptime && cmd.exptime == 30 && cmd.noreply);
	}
	if (OK("ms k 5 F7 T-1 C99 MA c k")) {
		CHECK(cmd.op == MC_MS && cmd.bytes == 5 && cmd.flags == 7);
		CHECK(cmd.exptime == -1 && cmd.has_cas && cmd.cas == 99);
		CHECK(cmd.mode == 'A' && !cmd.noreply);
	}
	if (OK("ms k 0"))
		CHECK(cmd.mode == 'S' && !cmd.has_cas && !cmd.has_exptime);
	if (OK("md k C5 q O1"))
		CHECK(cmd.op == MC_MD && cmd.cas == 5 && cmd.noreply);
	if (OK("mn"))
		CHECK(cmd.op == MC_MN);
	ERR("mn x");
	ERR("ms");
	CERR("ms k", "bad command line format");
	CERR("ms k x", "bad command line format");
	CERR("mg k Z", "invalid flag");
	CERR("mg k h", "invalid flag");
	CERR("mg k v v", "duplicate flag");
	CERR("md k v", "invalid flag");
	CERR("mg k v5", "invalid flag");
	if (CERR("ms k 3 MX", "invalid mode for ms M token"))
		CHECK(cmd.swallow && cmd.bytes == 3);
	if (CERR("ms k 3 Tx", "bad token in command line format"))
		CHECK(cmd.swallow);
	CERR("ms k 3 F4294967296", "bad token in command line format");
	/* a flag token starting with NUL (strchr() finds the terminator) */
	expect_at("mg k \0v", 7, MC_KEYS_MAX, MC_PARSE_CLIENT_ERROR,
		  "invalid flag", __LINE__);
	expect_at("mg k v \0", 8, MC_KEYS_MAX, MC_PARSE_CLIENT_ERROR,
		  "invalid flag", __LINE__);
	expect_at("md k \0", 6, MC_KEYS_MAX, MC_PARSE_CLIENT_ERROR,
		  "invalid flag", __LINE__);
	expect_at("ms k 1 \0", 8, MC_KEYS_MAX, MC_PARSE_CLIENT_ERROR,
		  "invalid flag", __LINE__);
	expect_at("ms k 1 M\0", 9, MC_KEYS_MAX, MC_PARSE_CLIENT_ERROR,
		  "invalid mode for ms M token", __LINE__);
	CERR("mg k \x80", "invalid flag");
	/* P and L: proxy hints, taken and ignored (protocol.txt) */
	if (OK("mg k Pfoo/bar L v"))
		CHECK(cmd.nmeta == 3 && cmd.meta[2].flag == 'v');
	OK("ms k 1 P L/x");
	OK("md k Lx q");
	ERR("mn P");
	CERR("ms k 2147483646", "bad command line format");
	if (OK("ms k 2147483645"))
		CHECK(cmd.bytes == MC_BYTES_MAX);
	if (CERR("ms k x", "bad command line format"))
		CHECK(!cmd.swallow);
}

/* ma: incr by default, every flag and its value; one error for any bad
 * flag (memcached 1.6.18's). */
static void test_meta_arith(void)
{
	static const struct {
		const char *line;
		const char *error;	/* NULL: parses */
	} bad[] = {
		{ "ma k Z", "invalid or duplicate flag" },
		{ "ma k v v", "invalid or duplicate flag" },
		{ "ma k f5", "invalid or duplicate flag" },
		{ "ma k r", "invalid or duplicate flag" },
		{ "ma k E5", "invalid or duplicate flag" },	/* not in 1.6.18 */
		{ "ma k Dx", "invalid or duplicate flag" },
		{ "ma k D-1", "invalid or duplicate flag" },
		{ "ma k D", "invalid or duplicate flag" },
		{ "ma k D18446744073709551616", "invalid or duplicate flag" },
		{ "ma k J-1", "invalid or duplicate flag" },
		{ "ma k Jabc", "invalid or duplicate flag" },
		{ "ma k N", "invalid or duplicate flag" },
		{ "ma k Nx", "invalid or duplicate flag" },
		{ "ma k T", "invalid or duplicate flag" },
		{ "ma k C", "invalid or duplicate flag" },
		{ "ma k b", "invalid or duplicate flag" },	/* "k": not base64 */
		{ "ma k Mx", "invalid mode for ma M token" },
		{ "ma k MS", "invalid mode for ma M token" },
		{ "ma k MII", "invalid mode for ma M token" },
		{ "ma k M", "invalid mode for ma M token" },
	};

	if (OK("ma k")) {
		CHECK(cmd.op == MC_MA && cmd.key.len == 1 && cmd.mode == 'I');
		CHECK(cmd.delta == 1 && !cmd.vivify && cmd.initial == 0);
		CHECK(!cmd.has_cas && !cmd.has_exptime && !cmd.noreply);
	}
	if (OK("ma k N30 J7 D18446744073709551615 T-1 C9 MD q O1 t c v k P L")) {
		CHECK(cmd.vivify && cmd.viv_exptime == 30 && cmd.initial == 7);
		CHECK(cmd.delta == UINT64_MAX && cmd.has_exptime &&
		      cmd.exptime == -1 && cmd.has_cas && cmd.cas == 9);
		CHECK(cmd.mode == 'D' && cmd.noreply && cmd.nmeta == 14);
	}
	if (OK("ma k f h I l s u"))	/* taken and ignored, as memcached */
		CHECK(cmd.nmeta == 6 && cmd.mode == 'I');
	if (OK("ma k M-"))
		CHECK(cmd.mode == 'D');
	if (OK("ma k M+"))
		CHECK(cmd.mode == 'I');
	if (OK("ma k MI"))
		CHECK(cmd.mode == 'I');
	if (OK("ma k N-1 J18446744073709551615"))
		CHECK(cmd.viv_exptime == -1 && cmd.initial == UINT64_MAX);
	ERR("ma");
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_at(bad[i].line, strlen(bad[i].line), MC_KEYS_MAX,
			  MC_PARSE_CLIENT_ERROR, bad[i].error, __LINE__);
	/* nothing of an ma leaks into the next command */
	if (OK("mg k"))
		CHECK(cmd.delta == 0 && cmd.mode == 'S' && !cmd.vivify);
}

/* b: the key is base64, decoded for the lookup (any bytes); me. */
static void test_meta_base64(void)
{
	static const char *const bad[] = {
		"mg bTE b", "mg ### b", "mg bT=E b", "mg ==== b", "mg b=== b",
		"ms bTE 1 b", "mg bTE=bTE= b", "mg ab-_ b",
	};
	char b64[MC_BASE64_LEN(6)];

	if (OK("mg bTE= b k v")) {	/* "m1" */
		CHECK(cmd.binary && cmd.key.len == 2);
		CHECK(!memcmp(cmd.key.p, "m1", 2));
	}
	if (OK("mg YQ== v b"))	/* b anywhere among the flags */
		CHECK(cmd.key.len == 1 && cmd.key.p[0] == 'a');
	if (OK("md AAEKDSD/ b q")) {
		CHECK(cmd.key.len == 6 &&
		      !memcmp(cmd.key.p, "\x00\x01\x0a\x0d\x20\xff", 6));
	}
	if (OK("ms YWI= 3 b T0")) {
		CHECK(cmd.key.len == 2 && !memcmp(cmd.key.p, "ab", 2));
		CHECK(cmd.bytes == 3);
	}
	if (OK("ma YWJj b N0 v"))
		CHECK(cmd.key.len == 3 && !memcmp(cmd.key.p, "abc", 3));
	if (OK("mg bTE=")) /* without b: the key as sent */
		CHECK(!cmd.binary && cmd.key.len == 4);
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_at(bad[i], strlen(bad[i]), MC_KEYS_MAX,
			  MC_PARSE_CLIENT_ERROR, "error decoding key", __LINE__);
	/* ms: the data block of a bad key is skipped */
	if (CERR("ms #### 2 b", "error decoding key"))
		CHECK(cmd.swallow && cmd.bytes == 2);

	CHECK(mc_base64_encode("m1", 2, b64) == 4 && !memcmp(b64, "bTE=", 4));
	CHECK(mc_base64_encode("abc", 3, b64) == 4 && !memcmp(b64, "YWJj", 4));
	CHECK(mc_base64_encode("a", 1, b64) == 4 && !memcmp(b64, "YQ==", 4));
	CHECK(mc_base64_encode("\x00\x01\x0a\x0d\x20\xff", 6, b64) == 8 &&
	      !memcmp(b64, "AAEKDSD/", 8));
	CHECK(mc_base64_encode("", 0, b64) == 0);

	if (OK("me k"))
		CHECK(cmd.op == MC_ME && cmd.key.len == 1 && !cmd.binary);
	if (OK("me bTE= b"))
		CHECK(cmd.binary && cmd.key.len == 2);
	if (OK("me bTE= v b"))	/* b only right after the key */
		CHECK(!cmd.binary && cmd.key.len == 4);
	CERR("me", "bad command line format");
	CERR("me ### b", "bad command line format");
	CERR("md ### b", "invalid or duplicate flag");
}

/* Every number a client sends, at and just past the edge of its field:
 * in range it parses to the exact value, past it the line is refused
 * (never truncated or wrapped). */

int main(int argc, char **argv)
{
	if (argc > 1)
		return proto_test_usage(argc, argv, "test_proto_meta",
					"Checks the memcache parser on meta commands");
	test_meta();
	test_meta_arith();
	test_meta_base64();
	return proto_test_result("test_proto_meta");
}
