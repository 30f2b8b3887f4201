/*
 * The serving-loop skeleton of storaged's threads (the memcache front's
 * workers, the nginx link's thread): one epoll set holding a stop eventfd,
 * optional listeners, the thread's gs_io, and the owner's descriptors.
 *
 *   loop_run():  wait --> ops->due --> per ready descriptor:   --> ops->round_end
 *    ^  (until ops->deadline;        listeners: ops->accept      |
 *    |   no wait if it is past)      gs_io:    gs_io_run()       |
 *    |                               stop:     leave the loop    |
 *    |                               other:    ops->event        |
 *    +---------------------------------------------------------------+
 *
 * Everything but loop_stop() runs on the loop's thread.
 */
#ifndef GOBLIN_LOOP_H
#define GOBLIN_LOOP_H

#include <stdbool.h>
#include <stdint.h>

#include "goblin.h"

struct loop;

/* A deadline already past: ops->deadline's "don't sleep". */
#define LOOP_NOW	1
/* Listeners a loop watches at most. */
#define LOOP_LISTEN_MAX	8

/* What the owner does in a round; any but event may be NULL. */
struct loop_ops {
	/* A listener is readable (the owner accepts from each). */
	void (*accept)(struct loop *l);
	/* <ptr>, given to loop_add(), is ready for <events>. */
	void (*event)(struct loop *l, void *ptr, uint32_t events);
	/* When the next wait must end, in loop_now_ms() time: 0 for no
	 * deadline, anything not in the future for no wait at all. */
	uint64_t (*deadline)(struct loop *l);
	/* After the wait, before its events, at <now> (ms): timers. */
	void (*due)(struct loop *l, uint64_t now);
	/* After the round's events: ready work, deferred frees. */
	void (*round_end)(struct loop *l);
};

struct loop {
	int epfd, stopfd;
	int lfd[LOOP_LISTEN_MAX];	/* the listeners, nlfd of them */
	unsigned nlfd;
	bool listen_exclusive;		/* EPOLLEXCLUSIVE (shared listeners) */
	bool listening;			/* the listeners are in the epoll set */
	struct gs_io *io;		/* NULL: none yet */
	const struct loop_ops *ops;
	void *owner;			/* for the ops */
};

/* Makes <l>'s epoll set and stop eventfd; <owner> is the ops' own.
 * Returns 0 or -errno (nothing left open). */
int loop_init(struct loop *l, const struct loop_ops *ops, void *owner);
/* Closes what loop_init() opened (not the listener, not the gs_io). */
void loop_fini(struct loop *l);

/* Watches <io>'s completions: gs_io_run() when it has some.  0 or -errno. */
int loop_set_io(struct loop *l, struct gs_io *io);
/* Watches listener <lfd> besides those it watches (<exclusive>: one of
 * the loops sharing it is woken per connection; the same for all).  0 or
 * -errno (-ENOSPC past LOOP_LISTEN_MAX). */
int loop_listen(struct loop *l, int lfd, bool exclusive);
/* Takes the listeners out of the epoll set (out of descriptors: a
 * level-triggered listener left in would spin) or back in.  0 or -errno;
 * resuming listeners that are in succeeds. */
int loop_listen_pause(struct loop *l);
int loop_listen_resume(struct loop *l);

/* The owner's descriptors: <ptr> comes back in ops->event.  0 or -errno. */
int loop_add(struct loop *l, int fd, uint32_t events, void *ptr);
int loop_mod(struct loop *l, int fd, uint32_t events, void *ptr);
void loop_del(struct loop *l, int fd);

/* Runs rounds until loop_stop().  Returns 0, or -errno when epoll_wait()
 * failed (logged). */
int loop_run(struct loop *l);
/* Ends <l>'s loop_run() after its current round; from any thread. */
void loop_stop(struct loop *l);

/* Monotonic time in milliseconds and microseconds. */
uint64_t loop_now_ms(void);
uint64_t loop_now_us(void);

#endif /* GOBLIN_LOOP_H */
