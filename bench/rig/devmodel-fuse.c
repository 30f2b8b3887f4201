/*
 * goblin-devmodel's FUSE file system: the root holds dev (the emulated disk,
 * devmodel-io.c), stats (parameters and counters) and ctl (faults,
 * devmodel-faults.c); worker threads take requests in ticket order.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "devmodel.h"

__thread struct worker *this_worker;

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
	if (bounce_reserve(this_worker, len)) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	memcpy(this_worker->bounce, text + off, len);
	fuse_reply_buf(req, this_worker->bounce, len);
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
	idle = schedule_barrier(m, this_worker);
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

const struct fuse_lowlevel_ops devmodel_ops = {
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
void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct model *m = w->m;
	struct fuse_buf buf = { .mem = NULL };

	this_worker = w;
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
