/*
 * goblin-devmodel — an emulated disk as a FUSE file system.
 *
 * The mount shows two files: "dev", whose bytes live in a backing file that
 * is opened O_DIRECT, and "stats", a text snapshot of the parameters and
 * counters.  Every request on "dev" passes one queue per device:
 *
 *   arrival --> channel (access time unless the I/O continues where that
 *               channel's previous one ended) --> bus (length / bandwidth)
 *
 * <channels> channels run their access times in parallel; the bus that moves
 * the bytes is shared, so the bandwidth is the device's, not a channel's.
 * A request is answered at its modelled completion time (clock_nanosleep to
 * an absolute deadline), never earlier.  Requests are scheduled in the order
 * the kernel queued them: workers take a ticket when they receive a request
 * and schedule in ticket order, so a large I/O the kernel splits into
 * several requests still counts as sequential.
 *
 * Faults are injected at run time through a third file, "ctl" (0600): each
 * line written to it sets one fault (EIO on reads or writes, ENOSPC on
 * writes, for all requests, a byte range or every Nth, optionally only N
 * times) or a stall (every request answered no sooner than a given time
 * after it arrived); reading it shows the faults in force.  An injected
 * error still books the device, touches no byte of the backing file, and
 * counts in stats.
 *
 * This header holds the types the four files share: devmodel.c (options,
 * mount, main), devmodel-io.c (the device's timing, the backing file, the
 * faults a request meets), devmodel-faults.c (the ctl commands) and
 * devmodel-fuse.c (the FUSE file system and its worker threads).
 */
#ifndef DEVMODEL_H
#define DEVMODEL_H

#define FUSE_USE_VERSION 35

#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "clock.h"

#define DIO_ALIGN	4096u
#define MAX_IO		(1u << 20)	/* max_read / max_write asked of the kernel */
#define INO_DEV		2
#define INO_STATS	3
#define INO_CTL		4
#define CTL_MAX		4096		/* longest write to ctl */

struct profile {
	const char *name;
	double access_us;
	double bandwidth_mbps;		/* 10^6 bytes per second */
	unsigned channels;
};

/* Counters, declared once: they feed the stats file and the exit line. */
#define DEVMODEL_STATS(X)						\
	X(reads,	"read requests on dev")				\
	X(writes,	"write requests on dev")			\
	X(read_bytes,	"bytes read from dev")				\
	X(write_bytes,	"bytes written to dev")				\
	X(seeks,	"requests charged the access time")		\
	X(fsyncs,	"fsync requests on dev")			\
	X(late,		"requests whose backing I/O ended after their modelled completion") \
	X(overshoot_us,	"sum over requests of reply time minus modelled completion") \
	X(errors,	"backing I/O errors")				\
	X(injected_read_eio,	"reads failed with EIO by a read-eio fault") \
	X(injected_write_eio,	"writes failed with EIO by a write-eio fault") \
	X(injected_write_enospc, "writes failed with ENOSPC by a write-enospc fault") \
	X(stalled,	"requests held back by a stall")		\
	X(stalled_us,	"sum over stalled requests of the time they were held")

struct stats {
#define X(name, desc) atomic_uint_fast64_t name;
	DEVMODEL_STATS(X)
#undef X
};

/*
 * One error fault: requests of its direction that overlap [start, start +
 * len) (len 0: the whole device) match; every <every>th match fails, at
 * most <left> times (then the fault turns itself off).
 */
enum fault_kind { F_READ_EIO, F_WRITE_EIO, F_WRITE_ENOSPC, NFAULTS };

struct fault {
	bool on;
	uint64_t start, len;
	uint64_t every;
	uint64_t left;			/* UINT64_MAX: no count given */
	uint64_t seen;			/* matching requests since it was set */
};

/* A fault kind's ctl name, direction and errno. */
struct fault_kind_info {
	const char *name;
	bool write;
	int err;
};

extern const struct fault_kind_info fault_kinds[NFAULTS];	/* devmodel-faults.c */

struct faults {
	struct fault f[NFAULTS];
	uint64_t stall_ms;		/* 0: none */
};

struct channel {
	uint64_t busy_until;		/* ns, CLOCK_MONOTONIC */
	uint64_t next_off;		/* where the previous I/O ended */
};

struct model {
	struct profile p;
	uint64_t size;
	uint64_t access_ns;
	const char *backing_path;
	int backing_fd;

	pthread_mutex_t lock;		/* guards everything below */
	pthread_cond_t turn_cv;
	uint64_t turn;			/* next ticket allowed to schedule */
	uint64_t bus_until;
	struct channel *ch;

	pthread_mutex_t recv_lock;	/* orders receive + ticket */
	uint64_t tickets;

	pthread_mutex_t rmw_lock;	/* serialises partial-block writes */

	pthread_mutex_t fault_lock;	/* guards faults and stopping */
	pthread_cond_t stall_cv;	/* broadcast when a stall changes */
	struct faults faults;
	bool stopping;			/* a stall holds nothing back any more */

	struct stats st;
	struct fuse_session *se;
	time_t mtime;
};

struct worker {
	struct model *m;
	pthread_t thread;
	uint64_t ticket;
	bool scheduled;
	char *bounce;			/* DIO_ALIGN-aligned */
	size_t bounce_size;
};

/* The worker thread serving the current request (devmodel-fuse.c). */
extern __thread struct worker *this_worker;

static inline uint64_t now_ns(void)
{
	return mono_ns();
}

/* Waits for <w>'s ticket to come up; called with m->lock held. */
static inline void wait_turn(struct model *m, struct worker *w)
{
	while (m->turn != w->ticket)
		pthread_cond_wait(&m->turn_cv, &m->lock);
}

/* Lets the next ticket schedule; called with m->lock held. */
static inline void pass_turn(struct model *m, struct worker *w)
{
	m->turn++;
	w->scheduled = true;
	pthread_cond_broadcast(&m->turn_cv);
}

/* devmodel-io.c */
void sleep_until(uint64_t deadline);
uint64_t schedule_barrier(struct model *m, struct worker *w);
int bounce_reserve(struct worker *w, size_t need);
void stall_wait(struct model *m, uint64_t arrival);
void dev_io(fuse_req_t req, bool write, const char *wbuf, size_t len,
	    off_t offset);

/* devmodel-faults.c */
int faults_apply(struct model *m, const char *text, size_t len,
		 char *err, size_t errlen);
char *text_of(struct model *m, void (*fill)(struct model *, FILE *));
char *faults_text(struct model *m);
void faults_stop(struct model *m);
void faults_log(struct model *m);

/* devmodel-fuse.c */
extern const struct fuse_lowlevel_ops devmodel_ops;
void *worker_main(void *arg);

#endif
