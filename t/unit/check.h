/*
 * The C unit tests' one assertion: CHECK(cond, fmt, ...) counts and prints
 * a failure with its line and goes on; main returns check_result().
 */
#ifndef GOBLIN_TEST_CHECK_H
#define GOBLIN_TEST_CHECK_H

#include <stdio.h>

static int failures;

#define CHECK(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			failures++;					\
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);			\
			fputc('\n', stderr);				\
		}							\
	} while (0)

static inline int check_result(void)
{
	printf("%s\n", failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}

#endif
