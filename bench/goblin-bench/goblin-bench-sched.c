/* goblin-bench --open-loop: the arrival schedule (see goblin-bench-sched.h). */
#include <math.h>

#include "goblin-bench-sched.h"

const char *const gb_arrivals_names[] = { "closed", "fixed", "poisson", NULL };

/* Moves <c> to its next arrival. */
static void step(const struct gb_sched *s, struct gb_sched_cursor *c)
{
	c->n++;
	if (s->mode == GB_ARRIVALS_FIXED)
		c->at = s->start + (uint64_t)llround((double)c->n * s->gap_ns);
	else
		c->at += (uint64_t)llround(-log1p(-gb_rng_unit(&c->rng)) *
					   s->gap_ns);
}

static void cursor_init(const struct gb_sched *s, struct gb_sched_cursor *c,
			uint64_t seed)
{
	gb_rng_seed(&c->rng, gb_mix64(seed ^ 0x6f70656e) + 1);
	c->n = 0;
	c->at = s->start;
	if (s->mode == GB_ARRIVALS_POISSON)
		c->at += (uint64_t)llround(-log1p(-gb_rng_unit(&c->rng)) *
					   s->gap_ns);
}

void gb_sched_init(struct gb_sched *s, enum gb_arrivals mode, double rate,
		   uint64_t seed, uint64_t start, uint64_t end)
{
	*s = (struct gb_sched){ .mode = mode, .gap_ns = 1e9 / rate,
				.start = start, .end = end };
	cursor_init(s, &s->arrived, seed);
	cursor_init(s, &s->issued, seed);
}

bool gb_sched_due(const struct gb_sched *s, uint64_t now)
{
	return s->issued.at <= now && s->issued.at < s->end;
}

uint64_t gb_sched_take(struct gb_sched *s)
{
	uint64_t at = s->issued.at;

	step(s, &s->issued);
	return at;
}

uint64_t gb_sched_next(const struct gb_sched *s)
{
	return s->issued.at < s->end ? s->issued.at : UINT64_MAX;
}

void gb_sched_note_backlog(struct gb_sched *s, uint64_t now)
{
	uint64_t from, backlog;

	while (s->arrived.at <= now && s->arrived.at < s->end)
		step(s, &s->arrived);
	if (s->arrived.n <= s->issued.n)
		return;
	backlog = s->arrived.n - s->issued.n;
	if (backlog > s->backlog_max)
		s->backlog_max = backlog;
	from = s->issued.n > s->queued_hi ? s->issued.n : s->queued_hi;
	if (s->arrived.n > from)
		s->queued += s->arrived.n - from;
	s->queued_hi = s->arrived.n;
}

uint64_t gb_sched_total(const struct gb_sched *s)
{
	struct gb_sched_cursor c = s->arrived;

	while (c.at < s->end)
		step(s, &c);
	return c.n;
}
