/*
 * goblin-netdelay — the propagation delay of the rig's emulated network.
 *
 * Two TAP devices, one in the client's network namespace and one on the
 * server's side, joined by this process: every Ethernet frame read from one
 * is written to the other no sooner than <delay> after it was read.  The
 * kernel here has no netem, so the delay lives in user space; the rate is
 * tc tbf's, on each TAP's egress (bench/rig/up sets it up):
 *
 *   client stack -> tbf -> TAP c --read--> [held DELAY] --write--> TAP s -> server stack
 *   client stack <- TAP c <--write-- [held DELAY] <--read-- TAP s <- tbf <- server stack
 *
 * One thread per direction.  Each keeps a FIFO ring of frames stamped with
 * their due time (arrival + delay; all frames wait the same, so FIFO order
 * is due order) and sleeps in ppoll() on the input until the head's due
 * time (timer slack 1 ns).  SIGHUP makes it read a new delay from
 * --delay-file: bench/rig/up calibrates the delay so that the measured
 * round trip, the host's own path included, meets the target.  The TAPs carry a
 * virtio_net_hdr (IFF_VNET_HDR) and accept TSO frames (TUNSETOFFLOAD), so a
 * frame can be a whole 64 KiB TCP segment batch and is passed on, header
 * and all, as one write: the per-frame cost stays low at 10 Gbit/s.
 *
 * A frame leaves late when the thread wakes late; `late_us` sums how late
 * (the stats file), so the delay actually applied is known, never assumed.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

#define FRAME_MAX	(66 * 1024)	/* vnet header + 64 KiB GSO frame */
#define RING_SLOTS	512

struct frame {
	int64_t due_ns;
	uint32_t len;
	unsigned char buf[FRAME_MAX];
};

struct line {
	const char *name;		/* "c2s" or "s2c" */
	int in, out;
	int64_t delay_ns;
	int cpu;			/* -1: any */
	struct frame *ring;
	unsigned head, tail;		/* head == tail: empty */
	/* counters, read by the main thread (relaxed) */
	uint64_t frames, bytes, write_errors, ring_full, late_ns, max_late_ns;
	uint64_t max_queue;
};

static int64_t now_ns(void)
{
	return (int64_t)mono_ns();
}

static void die(const char *what)
{
	fprintf(stderr, "goblin-netdelay: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* Creates TAP <name> in the calling thread's network namespace; returns
 * its fd, non-blocking, with a vnet header and TSO accepted. */
static int tap_open(const char *name)
{
	struct ifreq ifr;
	unsigned offload = TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN;
	int fd;

	if (strlen(name) >= IFNAMSIZ) {
		fprintf(stderr, "goblin-netdelay: interface name %s is too long\n", name);
		exit(2);
	}
	fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		die("open /dev/net/tun");
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR;
	strcpy(ifr.ifr_name, name);
	if (ioctl(fd, TUNSETIFF, &ifr))
		die(name);
	if (ioctl(fd, TUNSETOFFLOAD, offload))
		die("TUNSETOFFLOAD");
	return fd;
}

/* Opens the TAP in network namespace <netns> (a name under /run/netns),
 * coming back to this thread's own namespace afterwards. */
static int tap_open_in(const char *netns, const char *name)
{
	char path[512];
	int own, target, fd;

	if (!netns)
		return tap_open(name);
	snprintf(path, sizeof(path), "/run/netns/%s", netns);
	own = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (own < 0)
		die("open /proc/thread-self/ns/net");
	target = open(path, O_RDONLY | O_CLOEXEC);
	if (target < 0)
		die(path);
	if (setns(target, CLONE_NEWNET))
		die("setns to the client namespace");
	fd = tap_open(name);
	if (setns(own, CLONE_NEWNET))
		die("setns back");
	close(target);
	close(own);
	return fd;
}

/* Writes every frame whose time has come; returns the head's due time, or
 * -1 when the ring is empty. */
static int64_t send_due(struct line *l)
{
	int64_t now = now_ns();

	while (l->head != l->tail) {
		struct frame *f = &l->ring[l->head % RING_SLOTS];
		int64_t late = now - f->due_ns;

		if (late < 0)
			return f->due_ns;
		if (write(l->out, f->buf, f->len) != (ssize_t)f->len)
			__atomic_fetch_add(&l->write_errors, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&l->frames, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&l->bytes, f->len, __ATOMIC_RELAXED);
		__atomic_fetch_add(&l->late_ns, late, __ATOMIC_RELAXED);
		if ((uint64_t)late > l->max_late_ns)
			__atomic_store_n(&l->max_late_ns, late, __ATOMIC_RELAXED);
		l->head++;
		now = now_ns();
	}
	return -1;
}

/* Reads every frame waiting on the input into the ring, stamping each with
 * its due time; stops when the ring is full (the TAP's queue then holds,
 * and drops, what follows). */
static void receive(struct line *l)
{
	for (;;) {
		struct frame *f;
		ssize_t n;

		if (l->tail - l->head == RING_SLOTS) {
			__atomic_fetch_add(&l->ring_full, 1, __ATOMIC_RELAXED);
			return;
		}
		f = &l->ring[l->tail % RING_SLOTS];
		n = read(l->in, f->buf, FRAME_MAX);
		if (n <= 0) {
			if (n < 0 && errno != EAGAIN && errno != EINTR)
				die(l->name);
			return;
		}
		f->len = n;
		f->due_ns = now_ns() + __atomic_load_n(&l->delay_ns, __ATOMIC_RELAXED);
		l->tail++;
		if (l->tail - l->head > l->max_queue)
			__atomic_store_n(&l->max_queue, l->tail - l->head,
					 __ATOMIC_RELAXED);
	}
}

static void *line_run(void *arg)
{
	struct line *l = arg;
	struct pollfd pfd = { .fd = l->in, .events = POLLIN };

	prctl(PR_SET_TIMERSLACK, 1UL);
	if (l->cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(l->cpu, &set);
		if ((errno = pthread_setaffinity_np(pthread_self(), sizeof(set), &set)))
			die("pthread_setaffinity_np");
	}
	for (;;) {
		int64_t due = send_due(l), wait = due - now_ns();
		struct timespec ts = { wait / 1000000000, wait % 1000000000 };

		if (due >= 0 && wait <= 0)
			continue;
		/* a full ring waits for its head only */
		pfd.fd = l->tail - l->head == RING_SLOTS ? -1 : l->in;
		pfd.revents = 0;
		if (ppoll(&pfd, 1, due >= 0 ? &ts : NULL, NULL) < 0 && errno != EINTR)
			die("ppoll");
		if (pfd.revents & POLLIN)
			receive(l);
		if (pfd.revents & (POLLERR | POLLHUP | POLLNVAL)) {
			fprintf(stderr, "goblin-netdelay: %s: input gone\n", l->name);
			exit(1);
		}
	}
	return NULL;
}

static void line_init(struct line *l, const char *name, int in, int out,
		      int64_t delay_ns, int cpu)
{
	memset(l, 0, sizeof(*l));
	l->name = name;
	l->in = in;
	l->out = out;
	l->delay_ns = delay_ns;
	l->cpu = cpu;
	l->ring = calloc(RING_SLOTS, sizeof(*l->ring));
	if (!l->ring)
		die("calloc");
}

/* A one-way delay in microseconds, 0..10 s; returns -1 if <text> is not one. */
static double parse_delay(const char *text)
{
	char *end;
	double us = strtod(text, &end);

	while (*end == '\n' || *end == ' ')
		end++;
	if (*end || end == text || !(us >= 0 && us <= 1e7))
		return -1;
	return us;
}

/* SIGHUP: the new one-way delay is in <path>; frames read from now on
 * wait that long (those already held keep their due times). */
static void reload_delay(const char *path, struct line *lines)
{
	char buf[64] = "";
	FILE *f = path ? fopen(path, "r") : NULL;
	double us = -1;

	if (f) {
		if (fgets(buf, sizeof(buf), f))
			us = parse_delay(buf);
		fclose(f);
	}
	if (us < 0) {
		fprintf(stderr, "goblin-netdelay: SIGHUP: no delay in %s; keeping "
			"%.3f us\n", path ? path : "(no --delay-file)",
			lines[0].delay_ns / 1e3);
		return;
	}
	__atomic_store_n(&lines[0].delay_ns, (int64_t)(us * 1e3), __ATOMIC_RELAXED);
	__atomic_store_n(&lines[1].delay_ns, (int64_t)(us * 1e3), __ATOMIC_RELAXED);
	fprintf(stderr, "goblin-netdelay: delay now %.3f us each way\n", us);
}

#define LOAD(x)	__atomic_load_n(&(x), __ATOMIC_RELAXED)

/* Writes `name value` lines to <path> (via a rename, so a reader never sees
 * half a file), or to stderr when <path> is NULL. */
static void write_stats(const char *path, struct line *lines)
{
	char tmp[4096];
	FILE *f = stderr;
	int i;

	if (path) {
		snprintf(tmp, sizeof(tmp), "%s.tmp", path);
		f = fopen(tmp, "w");
		if (!f)
			die(tmp);
	}
	fprintf(f, "delay_us %.3f\n", LOAD(lines[0].delay_ns) / 1e3);
	for (i = 0; i < 2; i++) {
		struct line *l = &lines[i];

		fprintf(f, "%s_frames %" PRIu64 "\n", l->name, LOAD(l->frames));
		fprintf(f, "%s_bytes %" PRIu64 "\n", l->name, LOAD(l->bytes));
		fprintf(f, "%s_late_us %.3f\n", l->name, LOAD(l->late_ns) / 1e3);
		fprintf(f, "%s_max_late_us %.3f\n", l->name, LOAD(l->max_late_ns) / 1e3);
		fprintf(f, "%s_max_queue %" PRIu64 "\n", l->name, LOAD(l->max_queue));
		fprintf(f, "%s_ring_full %" PRIu64 "\n", l->name, LOAD(l->ring_full));
		fprintf(f, "%s_write_errors %" PRIu64 "\n", l->name,
			LOAD(l->write_errors));
	}
	if (path) {
		if (fclose(f) || rename(tmp, path))
			die(path);
	}
}

static const char usage[] =
"usage: goblin-netdelay [--netns NAME] --client-tap NAME --server-tap NAME\n"
"                       --delay-us US [--delay-file FILE] [--stats FILE]\n"
"                       [--c2s-cpu N] [--s2c-cpu N]\n"
"Creates TAP --client-tap in network namespace --netns (under /run/netns;\n"
"default: this one) and TAP --server-tap here, and passes every frame from\n"
"one to the other no sooner than --delay-us after it arrived (one way; the\n"
"round trip gains twice that), one thread per direction (--c2s-cpu and\n"
"--s2c-cpu pin them; the writer's thread also runs the receiving stack's\n"
"softirq work, so give each the cpu of its receiver).  The TAPs exist while this runs.  Prints\n"
"\"ready\" on stdout once both exist.  SIGUSR1 writes the counters to\n"
"--stats FILE (frames, bytes, late_us: how much later than due frames\n"
"left in sum; max_late_us, max_queue, ring_full, write_errors per\n"
"direction c2s and s2c); SIGHUP reads a new one-way delay (microseconds)\n"
"from --delay-file; SIGTERM or SIGINT print the counters on stderr and exit.\n";

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "netns", required_argument, NULL, 'n' },
		{ "client-tap", required_argument, NULL, 'c' },
		{ "server-tap", required_argument, NULL, 's' },
		{ "delay-us", required_argument, NULL, 'd' },
		{ "stats", required_argument, NULL, 'S' },
		{ "delay-file", required_argument, NULL, 'D' },
		{ "c2s-cpu", required_argument, NULL, '1' },
		{ "s2c-cpu", required_argument, NULL, '2' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *netns = NULL, *ctap = NULL, *stap = NULL, *stats = NULL;
	const char *delay_file = NULL;
	double delay_us = -1;
	int cpus[2] = { -1, -1 };
	struct line lines[2];
	pthread_t threads[2];
	sigset_t sigs;
	int c, cfd, sfd, sig, i;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'n': netns = optarg; break;
		case 'c': ctap = optarg; break;
		case 's': stap = optarg; break;
		case 'S': stats = optarg; break;
		case 'D': delay_file = optarg; break;
		case '1':
		case '2':
			cpus[c - '1'] = atoi(optarg);
			if (cpus[c - '1'] < 0 || cpus[c - '1'] >= CPU_SETSIZE) {
				fprintf(stderr, "goblin-netdelay: bad cpu %s\n", optarg);
				return 2;
			}
			break;
		case 'd':
			delay_us = parse_delay(optarg);
			if (delay_us < 0) {
				fprintf(stderr, "goblin-netdelay: bad --delay-us %s\n", optarg);
				return 2;
			}
			break;
		case 'h': fputs(usage, stdout); return 0;
		default: fputs(usage, stderr); return 2;
		}
	}
	if (!ctap || !stap || delay_us < 0 || optind != argc) {
		fprintf(stderr, "goblin-netdelay: --client-tap, --server-tap and "
			"--delay-us are needed\n%s", usage);
		return 2;
	}
	/* TERM/INT/USR1 go to the main thread's sigwait, never to a line */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGUSR1);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	cfd = tap_open_in(netns, ctap);
	sfd = tap_open(stap);
	line_init(&lines[0], "c2s", cfd, sfd, (int64_t)(delay_us * 1e3),
		  cpus[0]);
	line_init(&lines[1], "s2c", sfd, cfd, (int64_t)(delay_us * 1e3), cpus[1]);
	for (i = 0; i < 2; i++)
		if ((errno = pthread_create(&threads[i], NULL, line_run, &lines[i])))
			die("pthread_create");
	printf("ready client-tap %s server-tap %s delay-us %.3f\n", ctap, stap,
	       delay_us);
	fflush(stdout);
	for (;;) {
		if (sigwait(&sigs, &sig))
			die("sigwait");
		if (sig == SIGHUP)
			reload_delay(delay_file, lines);
		else if (sig == SIGUSR1 && stats)
			write_stats(stats, lines);
		else if (sig != SIGUSR1)
			break;
	}
	write_stats(NULL, lines);
	return 0;
}
