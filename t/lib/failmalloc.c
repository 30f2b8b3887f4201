/*
 * usage: LD_PRELOAD=build/t/failmalloc.so GOBLIN_FAILMALLOC=P,MIN,MAX prog
 * Fault injection for t/daemon/front-hardening.test: once the process gets
 * SIGUSR2, malloc() of MIN..MAX bytes fails (NULL, ENOMEM) with
 * probability P per mille; SIGUSR2 again disarms.  Not for ASan builds
 * (their allocator cannot be interposed).
 */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>

void *__libc_malloc(size_t size);

static volatile sig_atomic_t armed;
static unsigned permille;
static size_t lo, hi;
static __thread unsigned seed = 2463534242u;

static void toggle(int sig)
{
	(void)sig;
	armed = !armed;
}

__attribute__((constructor)) static void failmalloc_init(void)
{
	const char *v = getenv("GOBLIN_FAILMALLOC");
	char *end;

	if (!v)
		return;
	permille = strtoul(v, &end, 10);
	if (*end == ',')
		lo = strtoul(end + 1, &end, 10);
	if (*end == ',')
		hi = strtoul(end + 1, &end, 10);
	signal(SIGUSR2, toggle);
}

void *malloc(size_t size)
{
	if (armed && size >= lo && size <= hi) {
		seed ^= seed << 13;
		seed ^= seed >> 17;
		seed ^= seed << 5;
		if (seed % 1000 < permille) {
			errno = ENOMEM;
			return NULL;
		}
	}
	return __libc_malloc(size);
}
