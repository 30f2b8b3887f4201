/*
 * goblin-devmodel — an emulated disk as a FUSE file system (the design is in
 * devmodel.h): options, the backing file, the mount, the workers and the
 * signals that stop them.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <linux/magic.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "devmodel.h"
#include "size.h"

static const struct profile profiles[] = {
	{ "hdd", 5040, 210, 1 },	/* seed: st1, ~198 IOPS, ~210 MB/s */
	{ "ssd", 580, 250, 4 },		/* seed: gp3 root, ~1713 IOPS at QD1 */
};
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
	m.se = fuse_session_new(&args, &devmodel_ops, sizeof(devmodel_ops), &m);
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
