/*
 * The expiry time clients give (memcache's form, which the ring's WOPEN
 * carries too: shared/ring-t.h) in the engine's form.  Shared by the
 * memcache front and the nginx link, so neither depends on the other.
 */
#ifndef GOBLIN_EXPTIME_H
#define GOBLIN_EXPTIME_H

#include <stdint.h>
#include <time.h>

/* Seconds up to which an exptime counts from now (memcached's 30 days). */
#define EXPTIME_RELATIVE_MAX	(60 * 60 * 24 * 30)

/* A client's <exptime> (0 never, up to EXPTIME_RELATIVE_MAX relative, else
 * absolute unix time, negative already expired) as the engine's absolute
 * time (0 never). */
static inline int64_t exptime_absolute(int64_t exptime)
{
	if (exptime == 0)
		return 0;
	if (exptime < 0)
		return 1;		/* long past: expired on arrival */
	if (exptime <= EXPTIME_RELATIVE_MAX)
		return time(NULL) + exptime;
	return exptime;
}

#endif /* GOBLIN_EXPTIME_H */
