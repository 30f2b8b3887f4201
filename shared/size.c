#include <ctype.h>
#include <errno.h>
#include <string.h>

#include "size.h"

struct unit {
	const char *name;
	uint64_t mult;
};

static const struct unit size_units[] = {
	{ "",   1 },
	{ "b",  1 },
	{ "k",  1ull << 10 }, { "kb", 1ull << 10 },
	{ "m",  1ull << 20 }, { "mb", 1ull << 20 },
	{ "g",  1ull << 30 }, { "gb", 1ull << 30 },
	{ "t",  1ull << 40 }, { "tb", 1ull << 40 },
	{ NULL, 0 }
};

static const struct unit duration_units[] = {
	{ "",   1000 },
	{ "ms", 1 },
	{ "s",  1000 },
	{ "m",  60 * 1000 },
	{ "h",  60 * 60 * 1000 },
	{ "d",  24 * 60 * 60 * 1000 },
	{ NULL, 0 }
};

/*
 * Parses <s> as DIGITS followed by one of <units> (matched case-insensitively
 * when <icase>), into <*out> = digits * unit.  Returns 0, -EINVAL or -ERANGE.
 */
static int parse_scaled(const char *s, const struct unit *units, int icase,
			uint64_t *out)
{
	const struct unit *u;
	uint64_t v = 0;
	const char *p;
	int range = 0;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	for (p = s; isdigit((unsigned char)*p); p++) {
		if (__builtin_mul_overflow(v, 10, &v) ||
		    __builtin_add_overflow(v, (uint64_t)(*p - '0'), &v))
			range = 1;
	}
	for (u = units; u->name; u++) {
		if (icase ? strcasecmp(p, u->name) : strcmp(p, u->name))
			continue;
		if (range || __builtin_mul_overflow(v, u->mult, &v))
			return -ERANGE;
		*out = v;
		return 0;
	}
	return -EINVAL;
}

int size_parse(const char *s, uint64_t *out)
{
	return parse_scaled(s, size_units, 1, out);
}

int duration_parse(const char *s, uint64_t *ms)
{
	return parse_scaled(s, duration_units, 0, ms);
}
