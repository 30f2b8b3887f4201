/*
 * Test-only fault hooks for test_hardening, force-included (gcc -include)
 * into it and the engine sources it compiles: allocations, io_uring submits
 * preads and fdatasyncs go through counters the test arms.  Never part of a real build.
 * Call the real function as (malloc)(n): a parenthesised name is not a
 * macro call.
 */
#ifndef GOBLIN_TEST_FAULTS_H
#define GOBLIN_TEST_FAULTS_H

#include <stdlib.h>
#include <unistd.h>

struct io_uring;

/* >0: the Nth call from now fails (1 = the next one) */
extern unsigned fault_malloc_n, fault_calloc_n, fault_realloc_n, fault_submit_n;
extern int fault_submit_err;		/* what a failed submit returns */
extern size_t fault_alloc_bytes;	/* bytes asked for, all calls */
extern unsigned fault_preads;		/* preads made */
extern unsigned fault_fdatasync_n;	/* >0: every fdatasync fails EIO */

void *fault_malloc(size_t n);
void *fault_calloc(size_t n, size_t size);
void *fault_realloc(void *p, size_t n);
int fault_io_uring_submit(struct io_uring *ring);
ssize_t fault_pread(int fd, void *buf, size_t n, off_t off);
int fault_fdatasync(int fd);

#define malloc(n)		fault_malloc(n)
#define calloc(n, size)		fault_calloc(n, size)
#define realloc(p, n)		fault_realloc(p, n)
#define io_uring_submit(r)	fault_io_uring_submit(r)
#define pread(fd, b, n, o)	fault_pread(fd, b, n, o)
#define fdatasync(fd)		fault_fdatasync(fd)

#endif
