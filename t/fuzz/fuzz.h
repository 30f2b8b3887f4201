/*
 * Helpers shared by the libFuzzer targets t/fuzz/fuzz_*.c.
 */
#ifndef GOBLIN_FUZZ_H
#define GOBLIN_FUZZ_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/*
 * Whether the bug <desc> is listed in FUZZ_OPEN: t/fuzz/run sets it to the
 * short descriptions of the target's reproducers listed in
 * t/fuzz/crashes/open (found, not fixed yet), so a target can skip the check
 * that bug breaks and a run can find others.
 */
static inline bool open_bug(const char *desc)
{
	const char *l = getenv("FUZZ_OPEN"), *p;
	size_t n = strlen(desc);

	for (p = l; p && (p = strstr(p, desc)); p += n)
		if ((p == l || p[-1] == ' ') && (!p[n] || p[n] == ' '))
			return true;
	return false;
}

/* open_bug(<desc>), looked up once per call site: the lookup's string
 * compares stay out of the fuzzed path (libFuzzer would learn them). */
#define OPEN_BUG(desc) ({ static int open_; \
	if (!open_) open_ = open_bug(desc) ? 1 : -1; open_ > 0; })

#endif /* GOBLIN_FUZZ_H */
