/*
 * size_format(): the inverse of shared/size.c's size_parse(), which only
 * the tests need (test_size.c round-trips every size through it).
 */
#ifndef GOBLIN_TEST_SIZE_FORMAT_H
#define GOBLIN_TEST_SIZE_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Longest size_format() result, NUL included: 20 digits + unit + NUL. */
#define SIZE_FORMAT_MAX	22

/*
 * Writes <v> into <buf> of <len> bytes in the shortest exact form: the
 * largest unit that divides <v> ("256K", "8M", "3G"), else plain bytes
 * ("1536", "0").  size_parse() reads it back to <v>.  Returns <buf>, or NULL
 * (and <buf> untouched) when <len> is too small; SIZE_FORMAT_MAX always fits.
 */
static inline char *size_format(uint64_t v, char *buf, size_t len)
{
	static const char units[] = "TGMK";
	char unit[2] = "";
	unsigned shift = 40;
	int i, n;

	for (i = 0; v && units[i]; i++, shift -= 10) {
		if (!(v & ((1ull << shift) - 1))) {
			unit[0] = units[i];
			v >>= shift;
			break;
		}
	}
	n = snprintf(NULL, 0, "%llu%s", (unsigned long long)v, unit);
	if (n < 0 || (size_t)n >= len)
		return NULL;
	snprintf(buf, len, "%llu%s", (unsigned long long)v, unit);
	return buf;
}

#endif
