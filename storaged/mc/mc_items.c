/*
 * Memcache item semantics (mc_items.h) built on the engine's public calls.
 */
#include <errno.h>
#include <stdio.h>

#include "exptime.h"
#include "mc_items.h"

/* A counter: 1 to 20 digits, then only spaces (memcached pads decr). */
static int parse_counter(const char *p, uint64_t len, uint64_t *v)
{
	uint64_t i = 0, n = 0;

	if (len == 0 || len > 20)
		return -EINVAL;
	for (; i < len && p[i] >= '0' && p[i] <= '9'; i++) {
		if (n > (UINT64_MAX - (p[i] - '0')) / 10)
			return -EINVAL;
		n = n * 10 + (p[i] - '0');
	}
	if (i == 0)
		return -EINVAL;
	for (; i < len; i++)
		if (p[i] != ' ')
			return -EINVAL;
	*v = n;
	return 0;
}

struct counter_step {
	const struct mc_arith *a;
	uint64_t v;
	char buf[24];
};

/* Under the engine lock, on the value it replaces: C compared, T set. */
static int counter_update(void *arg, const void *old, size_t oldlen,
			  struct gs_meta *meta, const void **new,
			  size_t *newlen)
{
	struct counter_step *c = arg;
	const struct mc_arith *a = c->a;
	uint64_t v;

	if (a->cas && meta->cas != a->cas)
		return -EEXIST;
	if (parse_counter(old, oldlen, &v) < 0)
		return -EINVAL;
	if (a->decr)
		v = a->delta > v ? 0 : v - a->delta;
	else
		v += a->delta;		/* wraps at 2^64, as memcached does */
	if (a->set_exptime)
		meta->exptime = gs_exptime(a->exptime);
	c->v = v;
	*newlen = snprintf(c->buf, sizeof(c->buf), "%llu", (unsigned long long)v);
	*new = c->buf;
	return 0;
}

int mc_arith(struct gs_engine *e, const void *key, size_t klen,
	     const struct mc_arith *a, uint64_t *result, struct gs_meta *meta)
{
	struct counter_step c = { .a = a };
	int ret = gs_update(e, key, klen, counter_update, &c, meta);

	if (ret == 0)
		*result = c.v;
	return ret;
}

int mc_incr(struct gs_engine *e, const void *key, size_t klen, bool decr,
	    uint64_t delta, uint64_t *result)
{
	struct mc_arith a = { .decr = decr, .delta = delta };

	return mc_arith(e, key, klen, &a, result, NULL);
}

void mc_flush(struct gs_engine *e, int64_t delay)
{
	gs_invalidate(e, delay > 0 ? exptime_absolute(delay) : 0);
}
