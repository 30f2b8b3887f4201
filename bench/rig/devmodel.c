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
 */
#define FUSE_USE_VERSION 35

#include <fuse_lowlevel.h>
#include <linux/magic.h>


#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "size.h"

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

static const struct profile profiles[] = {
	{ "hdd", 5040, 210, 1 },	/* seed: st1, ~198 IOPS, ~210 MB/s */
	{ "ssd", 580, 250, 4 },		/* seed: gp3 root, ~1713 IOPS at QD1 */
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

static const struct {
	const char *name;
	bool write;
	int err;
} fault_kinds[NFAULTS] = {
	[F_READ_EIO] = { "read-eio", false, EIO },
	[F_WRITE_EIO] = { "write-eio", true, EIO },
	[F_WRITE_ENOSPC] = { "write-enospc", true, ENOSPC },
};

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

static __thread struct worker *self;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_abs(uint64_t t)
{
	struct timespec ts = {
		.tv_sec = (time_t)(t / 1000000000u),
		.tv_nsec = (long)(t % 1000000000u),
	};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/*
 * Sleeps until <deadline>, never less.  A long sleep wakes WAKE_MARGIN_NS
 * early first: waking an idle vCPU costs ~150 us here, the second, short
 * sleep ~50 us, so replies land closer to their deadline.
 */
#define WAKE_MARGIN_NS	200000u
static void sleep_until(uint64_t deadline)
{
	if (deadline > now_ns() + 2 * WAKE_MARGIN_NS)
		sleep_abs(deadline - WAKE_MARGIN_NS);
	sleep_abs(deadline);
}

/* Waits for <w>'s ticket to come up; called with m->lock held. */
static void wait_turn(struct model *m, struct worker *w)
{
	while (m->turn != w->ticket)
		pthread_cond_wait(&m->turn_cv, &m->lock);
}

/* Lets the next ticket schedule; called with m->lock held. */
static void pass_turn(struct model *m, struct worker *w)
{
	m->turn++;
	w->scheduled = true;
	pthread_cond_broadcast(&m->turn_cv);
}

/*
 * Books <len> bytes at <off> on the channel whose transfer can start soonest
 * (a continuing channel wins ties) and on the bus after it; returns the
 * absolute completion time in ns.
 */
static uint64_t schedule_io(struct model *m, struct worker *w, uint64_t off,
			    uint64_t len)
{
	struct channel *best = NULL;
	uint64_t start = UINT64_MAX, end, now;
	bool seek = true;

	pthread_mutex_lock(&m->lock);
	wait_turn(m, w);
	now = now_ns();
	for (unsigned i = 0; i < m->p.channels; i++) {
		struct channel *c = &m->ch[i];
		bool cont = c->next_off == off;
		uint64_t ready = (c->busy_until > now ? c->busy_until : now) +
				 (cont ? 0 : m->access_ns);

		if (ready < m->bus_until)
			ready = m->bus_until;
		if (ready < start || (ready == start && cont && seek)) {
			best = c;
			start = ready;
			seek = !cont;
		}
	}
	end = start + (uint64_t)llround((double)len * 1000.0 / m->p.bandwidth_mbps);
	best->busy_until = end;
	best->next_off = off + len;
	m->bus_until = end;
	if (seek)
		atomic_fetch_add(&m->st.seeks, 1);
	pass_turn(m, w);
	pthread_mutex_unlock(&m->lock);
	return end;
}

/* Takes <w>'s turn without booking the device; returns when the device is idle. */
static uint64_t schedule_barrier(struct model *m, struct worker *w)
{
	uint64_t idle;

	pthread_mutex_lock(&m->lock);
	wait_turn(m, w);
	idle = m->bus_until;
	for (unsigned i = 0; i < m->p.channels; i++)
		if (m->ch[i].busy_until > idle)
			idle = m->ch[i].busy_until;
	pass_turn(m, w);
	pthread_mutex_unlock(&m->lock);
	return idle;
}

/* Grows <w>'s bounce buffer to at least <need> bytes; returns 0 or -errno. */
static int bounce_reserve(struct worker *w, size_t need)
{
	void *p;

	if (need <= w->bounce_size)
		return 0;
	if (posix_memalign(&p, DIO_ALIGN, need))
		return -ENOMEM;
	free(w->bounce);
	w->bounce = p;
	w->bounce_size = need;
	return 0;
}

/* Full pread/pwrite of <len> bytes at <off>; returns 0 or -errno. */
static int backing_io(struct model *m, bool write, char *buf, size_t len,
		      uint64_t off)
{
	while (len) {
		ssize_t n = write ? pwrite(m->backing_fd, buf, len, (off_t)off)
				  : pread(m->backing_fd, buf, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			atomic_fetch_add(&m->st.errors, 1);
			return n < 0 ? -errno : -EIO;
		}
		buf += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/*
 * Moves <len> bytes at <off> between the backing file and <w>'s bounce
 * buffer, which holds the aligned span [a0, a1) around them.  A write that
 * does not cover whole blocks reads the partial edge blocks first, under
 * rmw_lock so two writes into one block cannot lose each other's bytes.
 */
static int bounce_io(struct model *m, struct worker *w, bool write,
		     const char *wbuf, size_t len, uint64_t off)
{
	uint64_t a0 = off & ~(uint64_t)(DIO_ALIGN - 1);
	uint64_t a1 = (off + len + DIO_ALIGN - 1) & ~(uint64_t)(DIO_ALIGN - 1);
	size_t span = (size_t)(a1 - a0), head = (size_t)(off - a0);
	bool partial = head || (off + len) % DIO_ALIGN;
	int ret;

	ret = bounce_reserve(w, span);
	if (ret)
		return ret;
	if (!write)
		return backing_io(m, false, w->bounce, span, a0);
	if (!partial) {
		memcpy(w->bounce, wbuf, len);
		return backing_io(m, true, w->bounce, span, a0);
	}
	pthread_mutex_lock(&m->rmw_lock);
	ret = backing_io(m, false, w->bounce, DIO_ALIGN, a0);
	if (!ret && span > DIO_ALIGN)
		ret = backing_io(m, false, w->bounce + span - DIO_ALIGN,
				 DIO_ALIGN, a1 - DIO_ALIGN);
	if (!ret) {
		memcpy(w->bounce + head, wbuf, len);
		ret = backing_io(m, true, w->bounce, span, a0);
	}
	pthread_mutex_unlock(&m->rmw_lock);
	return ret;
}

/* ---- fault injection ---- */

static bool fault_matches(const struct fault *f, uint64_t off, uint64_t len)
{
	return f->on && (!f->len || (off < f->start + f->len && f->start < off + len));
}

/*
 * Decides whether the request of <len> bytes at <off> fails; returns 0 or
 * the errno to answer (ENOSPC before EIO for writes) and counts it.
 */
static int fault_check(struct model *m, bool write, uint64_t off, uint64_t len)
{
	static const enum fault_kind order[] = { F_WRITE_ENOSPC, F_WRITE_EIO, F_READ_EIO };
	int err = 0;

	pthread_mutex_lock(&m->fault_lock);
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]) && !err; i++) {
		struct fault *f = &m->faults.f[order[i]];

		if (fault_kinds[order[i]].write != write || !fault_matches(f, off, len))
			continue;
		if (++f->seen % f->every)
			continue;
		err = fault_kinds[order[i]].err;
		if (f->left != UINT64_MAX && !--f->left)
			f->on = false;
		switch (order[i]) {
		case F_READ_EIO:
			atomic_fetch_add(&m->st.injected_read_eio, 1);
			break;
		case F_WRITE_EIO:
			atomic_fetch_add(&m->st.injected_write_eio, 1);
			break;
		default:
			atomic_fetch_add(&m->st.injected_write_enospc, 1);
			break;
		}
	}
	pthread_mutex_unlock(&m->fault_lock);
	return err;
}

/*
 * Holds a request that arrived at <arrival> until the stall in force (read
 * again on every change) has passed since then; a cleared stall or SIGTERM
 * lets it go at once.
 */
static void stall_wait(struct model *m, uint64_t arrival)
{
	bool held = false;

	pthread_mutex_lock(&m->fault_lock);
	for (;;) {
		uint64_t until = arrival + m->faults.stall_ms * 1000000u;
		struct timespec ts;

		if (m->stopping || !m->faults.stall_ms || now_ns() >= until)
			break;
		held = true;
		ts.tv_sec = (time_t)(until / 1000000000u);
		ts.tv_nsec = (long)(until % 1000000000u);
		pthread_cond_timedwait(&m->stall_cv, &m->fault_lock, &ts);
	}
	pthread_mutex_unlock(&m->fault_lock);
	if (held) {
		atomic_fetch_add(&m->st.stalled, 1);
		atomic_fetch_add(&m->st.stalled_us, (now_ns() - arrival) / 1000);
	}
}

/* Parses a decimal count of at least 1 into <*out>; returns 0 or -1. */
static int parse_count(const char *s, uint64_t *out)
{
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return errno || *end || !*out ? -1 : 0;
}

/*
 * Applies one ctl command, split into words <w>[0..<n>), to <fs>; returns 0,
 * or -1 after writing why into <err>.
 *
 *   read-eio|write-eio|write-enospc off | [all | range START LEN] [every N] [count N]
 *   stall DURATION     (0: none)
 *   clear              (every fault off, no stall)
 */
static int fault_parse(struct faults *fs, char **w, int n, char *err, size_t errlen)
{
	struct fault f = { .on = true, .every = 1, .left = UINT64_MAX };
	int k, i;

	if (n == 1 && !strcmp(w[0], "clear")) {
		memset(fs, 0, sizeof(*fs));
		return 0;
	}
	if (!strcmp(w[0], "stall")) {
		if (n != 2 || duration_parse(w[1], &fs->stall_ms)) {
			snprintf(err, errlen, "stall takes one duration (e.g. 3s, 500ms, 0)");
			return -1;
		}
		return 0;
	}
	for (k = 0; k < NFAULTS && strcmp(w[0], fault_kinds[k].name); k++)
		;
	if (k == NFAULTS) {
		snprintf(err, errlen, "unknown command %.64s (read-eio, write-eio, "
			 "write-enospc, stall, clear)", w[0]);
		return -1;
	}
	if (n == 2 && !strcmp(w[1], "off")) {
		memset(&fs->f[k], 0, sizeof(fs->f[k]));
		return 0;
	}
	for (i = 1; i < n; i++) {
		if (!strcmp(w[i], "all")) {
			f.start = f.len = 0;
			continue;
		}
		if (!strcmp(w[i], "range") && i + 2 < n &&
		    !size_parse(w[i + 1], &f.start) && !size_parse(w[i + 2], &f.len) &&
		    f.len && f.start + f.len > f.start) {
			i += 2;
		} else if (!strcmp(w[i], "every") &&
			   !parse_count(i + 1 < n ? w[i + 1] : NULL, &f.every)) {
			i++;
		} else if (!strcmp(w[i], "count") &&
			   !parse_count(i + 1 < n ? w[i + 1] : NULL, &f.left)) {
			i++;
		} else {
			snprintf(err, errlen, "%s: bad argument %.64s (off | [all | range "
				 "START LEN] [every N] [count N])", w[0], w[i]);
			return -1;
		}
	}
	fs->f[k] = f;
	return 0;
}

/*
 * Applies the commands of <text> (one per line, # comments), all or none;
 * returns 0 or -1 after writing why into <err>.
 */
static int faults_apply(struct model *m, const char *text, size_t len,
			char *err, size_t errlen)
{
	char buf[CTL_MAX + 1], *line, *save;
	struct faults fs;

	if (len > CTL_MAX) {
		snprintf(err, errlen, "ctl takes at most %u bytes at once", CTL_MAX);
		return -1;
	}
	memcpy(buf, text, len);
	buf[len] = '\0';
	if (strlen(buf) != len) {
		snprintf(err, errlen, "NUL byte in a ctl command");
		return -1;
	}
	pthread_mutex_lock(&m->fault_lock);
	fs = m->faults;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *w[16], *wsave, *hash = strchr(line, '#');
		int n = 0;

		if (hash)
			*hash = '\0';
		for (char *t = strtok_r(line, " \t\r", &wsave); t; t = strtok_r(NULL, " \t\r", &wsave)) {
			if (n == 16) {
				snprintf(err, errlen, "too many words in a ctl command");
				goto out_unlock;
			}
			w[n++] = t;
		}
		if (n && fault_parse(&fs, w, n, err, errlen))
			goto out_unlock;
	}
	m->faults = fs;
	pthread_cond_broadcast(&m->stall_cv);
	pthread_mutex_unlock(&m->fault_lock);
	return 0;
out_unlock:
	pthread_mutex_unlock(&m->fault_lock);
	return -1;
}

/* What <fill> writes about <m>, as a malloc'd string; NULL on ENOMEM. */
static char *text_of(struct model *m, void (*fill)(struct model *, FILE *))
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	fill(m, f);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* The faults in force, one command per line as ctl takes them. */
static void faults_fill(struct model *m, FILE *f)
{
	pthread_mutex_lock(&m->fault_lock);
	for (int k = 0; k < NFAULTS; k++) {
		const struct fault *ft = &m->faults.f[k];

		fprintf(f, "%s", fault_kinds[k].name);
		if (!ft->on)
			fprintf(f, " off");
		else if (!ft->len && ft->every == 1 && ft->left == UINT64_MAX)
			fprintf(f, " all");
		if (ft->on && ft->len)
			fprintf(f, " range %" PRIu64 " %" PRIu64, ft->start, ft->len);
		if (ft->on && ft->every > 1)
			fprintf(f, " every %" PRIu64, ft->every);
		if (ft->on && ft->left != UINT64_MAX)
			fprintf(f, " count %" PRIu64, ft->left);
		fprintf(f, "\n");
	}
	fprintf(f, "stall %" PRIu64 "ms\n", m->faults.stall_ms);
	pthread_mutex_unlock(&m->fault_lock);
}

static char *faults_text(struct model *m)
{
	return text_of(m, faults_fill);
}

/* Lets every stalled request go: the model is stopping. */
static void faults_stop(struct model *m)
{
	pthread_mutex_lock(&m->fault_lock);
	m->stopping = true;
	pthread_cond_broadcast(&m->stall_cv);
	pthread_mutex_unlock(&m->fault_lock);
}

/* Serves one read or write on dev and answers it at its modelled time. */
static void dev_io(fuse_req_t req, bool write, const char *wbuf, size_t len,
		   off_t offset)
{
	struct worker *w = self;
	struct model *m = w->m;
	uint64_t off = (uint64_t)offset, deadline, arrival = now_ns();
	int ret;

	if (offset < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (off >= m->size || !len) {
		if (write && len)
			fuse_reply_err(req, ENOSPC);
		else if (write)
			fuse_reply_write(req, 0);
		else
			fuse_reply_buf(req, NULL, 0);
		return;
	}
	if (len > m->size - off)
		len = (size_t)(m->size - off);

	deadline = schedule_io(m, w, off, len);
	ret = -fault_check(m, write, off, len);
	if (!ret)
		ret = bounce_io(m, w, write, wbuf, len, off);
	if (now_ns() > deadline)
		atomic_fetch_add(&m->st.late, 1);
	else
		sleep_until(deadline);
	atomic_fetch_add(&m->st.overshoot_us, (now_ns() - deadline) / 1000);
	stall_wait(m, arrival);
	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	if (write) {
		atomic_fetch_add(&m->st.writes, 1);
		atomic_fetch_add(&m->st.write_bytes, len);
		fuse_reply_write(req, len);
	} else {
		atomic_fetch_add(&m->st.reads, 1);
		atomic_fetch_add(&m->st.read_bytes, len);
		fuse_reply_buf(req, w->bounce + (off % DIO_ALIGN), len);
	}
}

static struct model *req_model(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static void fill_attr(struct model *m, fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_uid = getuid();
	st->st_gid = getgid();
	st->st_mtime = st->st_ctime = st->st_atime = m->mtime;
	st->st_blksize = DIO_ALIGN;
	switch (ino) {
	case FUSE_ROOT_ID:
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
		break;
	case INO_DEV:
		st->st_mode = S_IFREG | 0600;
		st->st_nlink = 1;
		st->st_size = (off_t)m->size;
		st->st_blocks = (blkcnt_t)(m->size / 512);
		break;
	case INO_STATS:
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		break;
	case INO_CTL:
		st->st_mode = S_IFREG | 0600;
		st->st_nlink = 1;
		break;
	}
}

static fuse_ino_t name_ino(const char *name)
{
	if (!strcmp(name, "dev"))
		return INO_DEV;
	if (!strcmp(name, "stats"))
		return INO_STATS;
	if (!strcmp(name, "ctl"))
		return INO_CTL;
	return 0;
}

static bool valid_ino(fuse_ino_t ino)
{
	return ino == FUSE_ROOT_ID || ino == INO_DEV || ino == INO_STATS ||
	       ino == INO_CTL;
}

static void ll_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	conn->want &= ~(unsigned)(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE |
				  FUSE_CAP_SPLICE_MOVE | FUSE_CAP_WRITEBACK_CACHE |
				  FUSE_CAP_ATOMIC_O_TRUNC);
	conn->want |= conn->capable & (FUSE_CAP_ASYNC_DIO | FUSE_CAP_ASYNC_READ);
	if (conn->max_write > MAX_IO)
		conn->max_write = MAX_IO;
	conn->max_read = MAX_IO;
	conn->max_background = 128;
	conn->congestion_threshold = 96;
}

static void ll_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e = { .attr_timeout = 3600, .entry_timeout = 3600 };

	e.ino = parent == FUSE_ROOT_ID ? name_ino(name) : 0;
	if (!e.ino) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fill_attr(req_model(req), e.ino, &e.attr);
	if (e.ino != INO_DEV)
		e.attr_timeout = 0;
	fuse_reply_entry(req, &e);
}

static void ll_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	if (!valid_ino(ino)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fill_attr(req_model(req), ino, &st);
	fuse_reply_attr(req, &st, ino == INO_DEV || ino == FUSE_ROOT_ID ? 3600 : 0);
}

/*
 * Only a truncate of dev to its fixed size passes (and any of ctl, which
 * `echo ... > ctl` asks for); times are accepted and ignored.
 */
static void ll_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		       int to_set, struct fuse_file_info *fi)
{
	struct model *m = req_model(req);

	if (!valid_ino(ino)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (to_set & (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	if ((to_set & FUSE_SET_ATTR_SIZE) && ino != INO_CTL &&
	    (ino != INO_DEV || (uint64_t)attr->st_size != m->size)) {
		fuse_reply_err(req, ino == INO_DEV ? EINVAL : EACCES);
		return;
	}
	ll_getattr(req, ino, fi);
}

static void stats_fill(struct model *m, FILE *f)
{
	fprintf(f, "profile %s\naccess_us %g\nbandwidth_mbps %g\nchannels %u\n"
		"size %" PRIu64 "\nbacking %s\n", m->p.name, m->p.access_us,
		m->p.bandwidth_mbps, m->p.channels, m->size, m->backing_path);
#define X(name, desc) \
	fprintf(f, #name " %" PRIuFAST64 "\n", atomic_load(&m->st.name));
	DEVMODEL_STATS(X)
#undef X
}

static void ll_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fi->keep_cache = 0;
	switch (ino) {
	case INO_DEV:
		fi->direct_io = !!(fi->flags & O_DIRECT);
		break;
	case INO_STATS:
		if ((fi->flags & O_ACCMODE) != O_RDONLY) {
			fuse_reply_err(req, EACCES);
			return;
		}
		fi->fh = (uint64_t)(uintptr_t)text_of(req_model(req), stats_fill);
		if (!fi->fh) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
		fi->direct_io = 1;
		break;
	case INO_CTL:
		fi->fh = 0;
		if ((fi->flags & O_ACCMODE) != O_WRONLY) {
			fi->fh = (uint64_t)(uintptr_t)faults_text(req_model(req));
			if (!fi->fh) {
				fuse_reply_err(req, ENOMEM);
				return;
			}
		}
		fi->direct_io = 1;
		break;
	default:
		fuse_reply_err(req, ino == FUSE_ROOT_ID ? EISDIR : ENOENT);
		return;
	}
	fuse_reply_open(req, fi);
}

static void ll_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino == INO_STATS || ino == INO_CTL)
		free((char *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

static void ll_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	const char *text;
	size_t len;

	if (ino == INO_DEV) {
		dev_io(req, false, NULL, size, off);
		return;
	}
	/*
	 * Reply from the worker's own buffer: once the reply is written the
	 * reader may close, and another worker free the snapshot, before
	 * writev() has returned here.
	 */
	text = (const char *)(uintptr_t)fi->fh;
	len = strlen(text);
	if (off < 0 || (size_t)off >= len) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	len -= (size_t)off;
	if (size < len)
		len = size;
	if (bounce_reserve(self, len)) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	memcpy(self->bounce, text + off, len);
	fuse_reply_buf(req, self->bounce, len);
}

/* Logs the faults in force on one line. */
static void faults_log(struct model *m)
{
	char *now = faults_text(m);

	if (!now)
		return;
	for (char *p = now; (p = strchr(p, '\n')); )
		*p = *(p + 1) ? ';' : '\0';
	fprintf(stderr, "goblin-devmodel: faults: %s\n", now);
	free(now);
}

/* A write to ctl applies its commands, all or none; changes are logged. */
static void ctl_write(fuse_req_t req, const char *buf, size_t size)
{
	struct model *m = req_model(req);
	struct faults before;
	char err[256];
	bool changed;

	pthread_mutex_lock(&m->fault_lock);
	before = m->faults;
	pthread_mutex_unlock(&m->fault_lock);
	if (faults_apply(m, buf, size, err, sizeof(err))) {
		fprintf(stderr, "goblin-devmodel: ctl: %s\n", err);
		fuse_reply_err(req, EINVAL);
		return;
	}
	pthread_mutex_lock(&m->fault_lock);
	changed = memcmp(&before, &m->faults, sizeof(before)) != 0;
	pthread_mutex_unlock(&m->fault_lock);
	if (changed)
		faults_log(m);
	fuse_reply_write(req, size);
}

static void ll_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		     size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	if (ino == INO_CTL) {
		ctl_write(req, buf, size);
		return;
	}
	if (ino != INO_DEV) {
		fuse_reply_err(req, EACCES);
		return;
	}
	dev_io(req, true, buf, size, off);
}

static void ll_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);
}

/* Answers once every I/O booked before it has completed and reached the backing file. */
static void ll_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		     struct fuse_file_info *fi)
{
	struct model *m = req_model(req);
	uint64_t idle, arrival = now_ns();

	(void)datasync;
	(void)fi;
	if (ino != INO_DEV) {
		fuse_reply_err(req, 0);
		return;
	}
	idle = schedule_barrier(m, self);
	sleep_until(idle);
	stall_wait(m, arrival);
	atomic_fetch_add(&m->st.fsyncs, 1);
	if (fdatasync(m->backing_fd)) {
		atomic_fetch_add(&m->st.errors, 1);
		fuse_reply_err(req, errno);
		return;
	}
	fuse_reply_err(req, 0);
}

static void ll_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino != FUSE_ROOT_ID) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	fuse_reply_open(req, fi);
}

static void ll_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	static const struct { const char *name; fuse_ino_t ino; } ents[] = {
		{ ".", FUSE_ROOT_ID }, { "..", FUSE_ROOT_ID },
		{ "dev", INO_DEV }, { "stats", INO_STATS }, { "ctl", INO_CTL },
	};
	char buf[512];
	size_t used = 0;

	(void)fi;
	if (ino != FUSE_ROOT_ID) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	for (off_t i = off < 0 ? 0 : off; i < (off_t)(sizeof(ents) / sizeof(ents[0])); i++) {
		struct stat st = { .st_ino = ents[i].ino };
		size_t room = size < sizeof(buf) ? size : sizeof(buf);
		size_t n;

		st.st_mode = ents[i].ino == FUSE_ROOT_ID ? S_IFDIR : S_IFREG;
		n = fuse_add_direntry(req, buf + used, room - used, ents[i].name,
				      &st, i + 1);
		if (n > room - used)
			break;
		used += n;
	}
	fuse_reply_buf(req, buf, used);
}

static void ll_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct model *m = req_model(req);
	struct statvfs sv = {
		.f_bsize = DIO_ALIGN,
		.f_frsize = DIO_ALIGN,
		.f_blocks = m->size / DIO_ALIGN,
		.f_files = 4,
		.f_namemax = 255,
	};

	(void)ino;
	fuse_reply_statfs(req, &sv);
}

static const struct fuse_lowlevel_ops ll_ops = {
	.init = ll_init,
	.lookup = ll_lookup,
	.getattr = ll_getattr,
	.setattr = ll_setattr,
	.open = ll_open,
	.release = ll_release,
	.read = ll_read,
	.write = ll_write,
	.flush = ll_flush,
	.fsync = ll_fsync,
	.opendir = ll_opendir,
	.readdir = ll_readdir,
	.statfs = ll_statfs,
};

/*
 * Worker loop: receive a request and take the next ticket under recv_lock,
 * process it, and pass the turn if the handler did not schedule.  Returns
 * when the connection ends; the first worker out tells main (SIGUSR1).
 */
static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct model *m = w->m;
	struct fuse_buf buf = { .mem = NULL };

	self = w;
	prctl(PR_SET_TIMERSLACK, 1UL);	/* wake at the deadline, not 50 us later */
	for (;;) {
		int res;

		pthread_mutex_lock(&m->recv_lock);
		res = fuse_session_receive_buf(m->se, &buf);
		if (res > 0)
			w->ticket = m->tickets++;
		pthread_mutex_unlock(&m->recv_lock);
		if (res == -EINTR || res == -EAGAIN)
			continue;
		if (res <= 0)
			break;
		w->scheduled = false;
		fuse_session_process_buf(m->se, &buf);
		if (!w->scheduled) {
			pthread_mutex_lock(&m->lock);
			wait_turn(m, w);
			pass_turn(m, w);
			pthread_mutex_unlock(&m->lock);
		}
	}
	free(buf.mem);
	kill(getpid(), SIGUSR1);
	return NULL;
}

/* Detaches the mount; the connection ends once its last user closes it. */
static void detach_mount(const char *mountpoint)
{
	pid_t pid;

	if (geteuid() == 0) {
		if (umount2(mountpoint, MNT_DETACH) && errno != EINVAL)
			fprintf(stderr, "goblin-devmodel: umount2(%s): %s\n",
				mountpoint, strerror(errno));
		return;
	}
	pid = fork();
	if (pid == 0) {
		execlp("fusermount3", "fusermount3", "-u", "-z", "-q", mountpoint,
		       (char *)NULL);
		_exit(127);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

static const char usage[] =
"usage: goblin-devmodel [OPTIONS] --backing FILE MOUNTPOINT\n"
"Emulated disk: MOUNTPOINT/dev is a FUSE file whose bytes live in FILE\n"
"(opened O_DIRECT; created sparse if missing), served through one queue per\n"
"device with an access time per non-sequential I/O plus length / bandwidth.\n"
"MOUNTPOINT/stats shows the parameters and counters.  Runs in the foreground;\n"
"SIGTERM or SIGINT detaches the mount and exits once the last user closed\n"
"it (a second signal exits at once).\n"
"\n"
"Faults: each line written to MOUNTPOINT/ctl (mode 0600) is one command;\n"
"reading ctl shows the faults in force.  A write is applied whole or not\n"
"at all (EINVAL, reason on stderr).\n"
"  read-eio|write-eio|write-enospc off | [all | range START LEN] [every N] [count N]\n"
"      fail matching requests on dev with EIO (ENOSPC): those overlapping\n"
"      the byte range (default: all), every Nth of them (default 1), at\n"
"      most N times (then off); a failed request books the device, touches\n"
"      no byte and counts in injected_*\n"
"  stall DURATION   answer every request (and fsync) no sooner than\n"
"      DURATION (ms/s/m; 0: off) after it arrived; changing or clearing it\n"
"      releases held requests at once\n"
"  clear            every fault off, no stall\n"
"\n";

static const char usage_options[] =
"  --profile hdd|ssd    parameter defaults (below); default hdd\n"
"  --access-us US       access time of an I/O that does not continue the\n"
"                       previous one on its channel, microseconds\n"
"  --bandwidth MBPS     transfer rate of the device, 10^6 bytes/s\n"
"  --channels N         channels that seek in parallel (1..64)\n"
"  --size SIZE          device size (K/M/G/T suffixes, a multiple of 4096);\n"
"                       default: the backing file's size\n"
"  --backing FILE       backing file; must support O_DIRECT (not tmpfs)\n"
"  --threads N          FUSE worker threads (default 32)\n"
"  --fault CMD          a ctl command applied at start (repeatable)\n"
"  --help               this text\n";

static int parse_double(const char *s, double min, double max, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return (errno || end == s || *end || !(*out >= min && *out <= max)) ? -1 : 0;
}

static void die(const char *fmt, const char *arg)
{
	fprintf(stderr, "goblin-devmodel: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n");
	exit(2);
}

/*
 * Opens the backing file O_DIRECT, creating or growing it (sparse) to
 * --size when given, and fixes m->size.
 */
static void open_backing(struct model *m, bool size_given)
{
	struct statfs sf;
	struct stat st;
	void *probe;
	char *dir;

	if (size_given && (!m->size || m->size % DIO_ALIGN))
		die("--size must be a non-zero multiple of 4096 (backing %s)",
		    m->backing_path);
	dir = strdup(m->backing_path);
	if (!dir)
		die("%s", "out of memory");
	if (!statfs(dirname(dir), &sf) &&
	    (sf.f_type == TMPFS_MAGIC || sf.f_type == RAMFS_MAGIC))
		die("backing %s would live in RAM (tmpfs); put it on a disk, e.g. under /var/tmp",
		    m->backing_path);
	free(dir);
	m->backing_fd = open(m->backing_path, O_RDWR | O_DIRECT | O_CLOEXEC |
			     (size_given ? O_CREAT : 0), 0600);
	if (m->backing_fd < 0 && errno == ENOENT)
		die("backing %s does not exist: give --size to create it",
		    m->backing_path);
	if (m->backing_fd < 0) {
		fprintf(stderr, "goblin-devmodel: cannot open %s with O_DIRECT: %s%s\n",
			m->backing_path, strerror(errno),
			errno == EINVAL ? " (no O_DIRECT there; use /var/tmp)" : "");
		exit(1);
	}
	if (fstat(m->backing_fd, &st) || !S_ISREG(st.st_mode))
		die("backing %s is not a regular file", m->backing_path);
	if (!size_given) {
		if (st.st_size <= 0)
			die("backing %s is empty: give --size", m->backing_path);
		m->size = (uint64_t)st.st_size;
	}
	if (m->size % DIO_ALIGN)
		die("backing %s is not a multiple of 4096 bytes", m->backing_path);
	if ((uint64_t)st.st_size > m->size)
		die("backing %s is larger than --size; refusing to shrink it",
		    m->backing_path);
	if ((uint64_t)st.st_size < m->size &&
	    ftruncate(m->backing_fd, (off_t)m->size)) {
		fprintf(stderr, "goblin-devmodel: ftruncate %s: %s\n",
			m->backing_path, strerror(errno));
		exit(1);
	}
	if (posix_memalign(&probe, DIO_ALIGN, DIO_ALIGN))
		die("%s", "out of memory");
	if (pread(m->backing_fd, probe, DIO_ALIGN, 0) != DIO_ALIGN) {
		fprintf(stderr, "goblin-devmodel: O_DIRECT read of %s failed: %s\n",
			m->backing_path, strerror(errno));
		exit(1);
	}
	free(probe);
}

static void parse_args(struct model *m, int argc, char **argv,
		       const char **mountpoint, unsigned *threads)
{
	enum { O_PROFILE = 256, O_ACCESS, O_BW, O_CHANNELS, O_SIZE, O_BACKING,
	       O_THREADS, O_FAULT, O_HELP };
	static const struct option opts[] = {
		{ "profile", required_argument, NULL, O_PROFILE },
		{ "access-us", required_argument, NULL, O_ACCESS },
		{ "bandwidth", required_argument, NULL, O_BW },
		{ "channels", required_argument, NULL, O_CHANNELS },
		{ "size", required_argument, NULL, O_SIZE },
		{ "backing", required_argument, NULL, O_BACKING },
		{ "threads", required_argument, NULL, O_THREADS },
		{ "fault", required_argument, NULL, O_FAULT },
		{ "help", no_argument, NULL, O_HELP },
		{ NULL, 0, NULL, 0 },
	};
	double access = -1, bw = -1, channels = -1, nthreads = 32;
	bool size_given = false;
	int c;

	m->p = profiles[0];
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case O_PROFILE:
			if (!strcmp(optarg, "hdd"))
				m->p = profiles[0];
			else if (!strcmp(optarg, "ssd"))
				m->p = profiles[1];
			else
				die("--profile %s: expected hdd or ssd", optarg);
			break;
		case O_ACCESS:
			if (parse_double(optarg, 0, 10e6, &access))
				die("--access-us %s: expected 0..10000000", optarg);
			break;
		case O_BW:
			if (parse_double(optarg, 0.001, 1e6, &bw))
				die("--bandwidth %s: expected MB/s in 0.001..1000000", optarg);
			break;
		case O_CHANNELS:
			if (parse_double(optarg, 1, 64, &channels) ||
			    channels != floor(channels))
				die("--channels %s: expected 1..64", optarg);
			break;
		case O_SIZE:
			if (size_parse(optarg, &m->size))
				die("--size %s: expected bytes with an optional K/M/G/T suffix", optarg);
			size_given = true;
			break;
		case O_BACKING:
			m->backing_path = optarg;
			break;
		case O_THREADS:
			if (parse_double(optarg, 1, 1024, &nthreads) ||
			    nthreads != floor(nthreads))
				die("--threads %s: expected 1..1024", optarg);
			break;
		case O_FAULT: {
			char err[256];

			if (faults_apply(m, optarg, strlen(optarg), err, sizeof(err)))
				die("--fault: %s", err);
			break;
		}
		case O_HELP:
			fputs(usage, stdout);
			fputs(usage_options, stdout);
			printf("\nProfiles:\n");
			for (size_t i = 0; i < sizeof(profiles) / sizeof(profiles[0]); i++)
				printf("  %s  --access-us %g --bandwidth %g --channels %u\n",
				       profiles[i].name, profiles[i].access_us,
				       profiles[i].bandwidth_mbps, profiles[i].channels);
			printf("\nCounters in MOUNTPOINT/stats (after the parameters):\n");
#define X(name, desc) printf("  %-20s %s\n", #name, desc);
			DEVMODEL_STATS(X)
#undef X
			exit(0);
		default:
			fputs("Try 'goblin-devmodel --help'.\n", stderr);
			exit(2);
		}
	}
	if (access >= 0)
		m->p.access_us = access;
	if (bw > 0)
		m->p.bandwidth_mbps = bw;
	if (channels > 0)
		m->p.channels = (unsigned)channels;
	*threads = (unsigned)nthreads;
	if (optind != argc - 1 || !m->backing_path)
		die("%s", "needs --backing FILE and one MOUNTPOINT (see --help)");
	*mountpoint = argv[optind];
	m->access_ns = (uint64_t)llround(m->p.access_us * 1000.0);
	open_backing(m, size_given);
}

static void print_stats(struct model *m, FILE *f)
{
	fprintf(f, "goblin-devmodel: stats");
#define X(name, desc) fprintf(f, " " #name "=%" PRIuFAST64, atomic_load(&m->st.name));
	DEVMODEL_STATS(X)
#undef X
	fprintf(f, "\n");
}

int main(int argc, char **argv)
{
	struct model m = { .backing_fd = -1 };
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	const char *mountpoint;
	struct worker *workers;
	unsigned nthreads, started = 0;
	char opts[128];
	sigset_t sigs;
	int sig, ret = 1;
	bool stopping = false;
	pthread_condattr_t ca;

	pthread_mutex_init(&m.fault_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&m.stall_cv, &ca);
	pthread_condattr_destroy(&ca);
	parse_args(&m, argc, argv, &mountpoint, &nthreads);
	m.mtime = time(NULL);
	m.ch = calloc(m.p.channels, sizeof(*m.ch));
	workers = calloc(nthreads, sizeof(*workers));
	if (!m.ch || !workers)
		die("%s", "out of memory");
	for (unsigned i = 0; i < m.p.channels; i++)
		m.ch[i].next_off = UINT64_MAX;
	pthread_mutex_init(&m.lock, NULL);
	pthread_mutex_init(&m.recv_lock, NULL);
	pthread_mutex_init(&m.rmw_lock, NULL);
	pthread_cond_init(&m.turn_cv, NULL);

	snprintf(opts, sizeof(opts),
		 "fsname=goblin-devmodel,subtype=goblin-devmodel,"
		 "default_permissions,max_read=%u", MAX_IO);
	if (fuse_opt_add_arg(&args, argv[0]) || fuse_opt_add_arg(&args, "-o") ||
	    fuse_opt_add_arg(&args, opts))
		die("%s", "out of memory");
	m.se = fuse_session_new(&args, &ll_ops, sizeof(ll_ops), &m);
	if (!m.se)
		goto out_args;
	if (fuse_session_mount(m.se, mountpoint))
		goto out_session;

	/* Workers inherit the blocked set; main takes the signals in sigwait. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	sigaddset(&sigs, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	for (; started < nthreads; started++) {
		workers[started].m = &m;
		if (pthread_create(&workers[started].thread, NULL, worker_main,
				   &workers[started])) {
			fprintf(stderr, "goblin-devmodel: pthread_create failed\n");
			detach_mount(mountpoint);
			break;
		}
	}
	if (started)
		fprintf(stderr, "goblin-devmodel: %s/dev: %s, access %g us, %g MB/s, "
			"%u channel(s), %" PRIu64 " bytes, backing %s\n", mountpoint,
			m.p.name, m.p.access_us, m.p.bandwidth_mbps, m.p.channels,
			m.size, m.backing_path);
	if (started)
		faults_log(&m);
	while (started && !sigwait(&sigs, &sig) && sig != SIGUSR1) {
		if (stopping) {
			fprintf(stderr, "goblin-devmodel: second signal, exiting now\n");
			print_stats(&m, stderr);
			_exit(1);
		}
		stopping = true;
		faults_stop(&m);
		detach_mount(mountpoint);
	}
	for (unsigned i = 0; i < started; i++) {
		pthread_join(workers[i].thread, NULL);
		free(workers[i].bounce);
	}
	ret = started == nthreads ? 0 : 1;
	print_stats(&m, stderr);
	fuse_session_unmount(m.se);
out_session:
	fuse_session_destroy(m.se);
out_args:
	fuse_opt_free_args(&args);
	close(m.backing_fd);
	free(m.ch);
	free(workers);
	return ret;
}
