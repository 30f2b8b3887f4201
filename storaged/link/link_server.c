/*
 * The nginx link's server: the socket nginx workers attach to (its path,
 * directory and owner), accepting them, the thread that serves them.
 * Tests and the fuzzer run the same server without socket or thread
 * (t/unit/link_local.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <libgen.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "link_internal.h"
#include "log.h"
#include "options.h"

/* ---- accepting workers ---- */

static void listen_pause(struct link_server *srv, int err)
{
	if (srv->listen_paused)
		return;
	loop_listen_pause(&srv->loop);
	srv->listen_paused = true;
	log_warn("link: accept: %s: not accepting nginx workers for a second",
		 strerror(err));
}

void link_listen_resume(struct link_server *srv)
{
	if (!srv->listen_paused)
		return;
	if (srv->spare_fd < 0)
		srv->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (srv->spare_fd >= 0 &&
	    loop_listen_resume(&srv->loop) == 0)
		srv->listen_paused = false;
}

/*
 * Out of descriptors with workers waiting: give up the spare one to take
 * the oldest and close it at once, so the listener does not stay readable
 * (epoll would spin on it) and the worker retries later.  Returns true
 * when one was turned away.
 */
static bool shed_worker(struct link_server *srv)
{
	int fd;

	if (srv->spare_fd < 0)
		return false;
	close(srv->spare_fd);
	fd = accept4(srv->lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd >= 0)
		close(fd);
	srv->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	srv->st[ST_ring_rejected_connections]++;
	if (link_refusal_log_due(srv))
		log_warn("link: out of file descriptors (RLIMIT_NOFILE): turned an nginx worker away");
	return true;
}

static void accept_conns(struct loop *l)
{
	struct link_server *srv = l->owner;
	struct link_conn *c;
	struct ucred cred;
	socklen_t len;
	int fd, ret;

	for (;;) {
		fd = accept4(srv->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if ((errno == EMFILE || errno == ENFILE) &&
			    shed_worker(srv))
				continue;
			if (errno != EAGAIN)
				listen_pause(srv, errno);
			return;
		}
		len = sizeof(cred);
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 ||
		    !link_peer_allowed(srv, &cred)) {
			srv->st[ST_ring_refused]++;
			if (link_refusal_log_due(srv))
				log_warn("link: refused pid %d (uid %u, gid %u): not root, goblin-store's user, --socket-user or in --socket-group",
					 (int)cred.pid, (unsigned)cred.uid,
					 (unsigned)cred.gid);
			close(fd);
			continue;
		}
		c = srv->nconns < LINK_MAX_WORKERS ? link_conn_new(srv, fd) : NULL;
		if (!c) {
			srv->st[ST_ring_rejected_connections]++;
			if (link_refusal_log_due(srv))
				log_warn("link: turned nginx worker %d away: %u attached, the most goblin-store serves is %u",
					 (int)cred.pid, srv->nconns,
					 LINK_MAX_WORKERS);
			close(fd);
			continue;
		}
		c->pid = cred.pid;
		c->uid = cred.uid;
		ret = loop_add(l, fd, EPOLLIN, c);
		if (ret) {
			log_warn("link: epoll_ctl: %s", strerror(-ret));
			c->dead = true;
			close(fd);
			link_conn_free(c);
		}
	}
}

/* ---- the thread ---- */

void link_end_round(struct link_server *srv)
{
	struct list *p, *n;

	for (p = srv->conns.next; p != &srv->conns; p = n) {
		struct link_conn *c = list_entry(p, struct link_conn, link);

		n = p->next;
		if (!c->dead) {
			flush_overflow(c);
			if (c->bell && c->fd >= 0 && ring_doorbell(c->fd) < 0)
				link_conn_kill(c, NULL);
			c->bell = false;
		}
		if (c->dead && !c->busy && !c->ndirect)
			link_conn_free(c);
	}
}

void link_drop_all(struct link_server *srv)
{
	for (struct list *p = srv->conns.next; p != &srv->conns; p = p->next)
		link_conn_kill(list_entry(p, struct link_conn, link), NULL);
	link_end_round(srv);
	while (!list_empty(&srv->conns) && gs_io_run(srv->io, true) >= 0)
		link_end_round(srv);
}

static void conn_event(struct loop *l, void *conn, uint32_t events)
{
	(void)l;
	(void)events;
	link_conn_event(conn);
}

/* Out of descriptors, the listener is out of epoll: try again in a second. */
static uint64_t retry_deadline(struct loop *l)
{
	struct link_server *srv = l->owner;

	return srv->listen_paused ? loop_now_ms() + 1000 : 0;
}

static void round_end(struct loop *l)
{
	struct link_server *srv = l->owner;

	link_run_ready(srv);
	link_end_round(srv);
	link_listen_resume(srv);
}

static const struct loop_ops link_loop_ops = {
	.accept = accept_conns,
	.event = conn_event,
	.deadline = retry_deadline,
	.round_end = round_end,
};

static void *link_thread(void *arg)
{
	struct link_server *srv = arg;
	int ret;

	ret = gs_io_create(srv->e, &srv->io);
	if (!ret) {
		ret = loop_set_io(&srv->loop, srv->io);
		if (ret)
			gs_io_destroy(&srv->io);
	}
	pthread_mutex_lock(&srv->lock);
	srv->start_res = ret;
	srv->started = true;
	pthread_cond_signal(&srv->cond);
	pthread_mutex_unlock(&srv->lock);
	if (ret)
		return NULL;

	loop_run(&srv->loop);
	link_drop_all(srv);
	gs_io_destroy(&srv->io);
	return NULL;
}

/* ---- the socket path ---- */

/* <name> as a uid or gid number (below (id_t)-1): 0 with <*id>, or
 * -ENOENT. */
static int parse_id(const char *name, id_t *id)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(name, &end, 10);
	if (errno || end == name || *end || v >= (id_t)-1)
		return -ENOENT;
	*id = (id_t)v;
	return 0;
}

/* <name> as a user: its uid and primary gid.  A number is taken as a uid
 * when no user has that name. */
static int lookup_user(const char *name, uid_t *uid, gid_t *gid)
{
	struct passwd pw, *pwp = NULL;
	char buf[16384];
	id_t id;

	if (getpwnam_r(name, &pw, buf, sizeof(buf), &pwp) == 0 && pwp) {
		*uid = pw.pw_uid;
		*gid = pw.pw_gid;
		return 0;
	}
	if (parse_id(name, &id) ||
	    getpwuid_r((uid_t)id, &pw, buf, sizeof(buf), &pwp) || !pwp)
		return -ENOENT;
	*uid = (uid_t)id;
	*gid = pw.pw_gid;
	return 0;
}

/* <name> as a group: its gid; a number is taken as a gid as it is. */
static int lookup_group(const char *name, gid_t *gid)
{
	struct group gr, *grp = NULL;
	char buf[16384];
	id_t id;

	if (getgrnam_r(name, &gr, buf, sizeof(buf), &grp) == 0 && grp) {
		*gid = gr.gr_gid;
		return 0;
	}
	if (parse_id(name, &id))
		return -ENOENT;
	*gid = (gid_t)id;
	return 0;
}

/* --socket-user and --socket-group into <srv>; <*gid>: the group the
 * socket and its directory get, -1 for none. */
static int resolve_access(struct link_server *srv,
			  const struct options *opt, gid_t *gid,
			  char *err, size_t errlen)
{
	*gid = (gid_t)-1;
	if (opt->socket_user && *opt->socket_user) {
		if (lookup_user(opt->socket_user, &srv->user_uid, gid)) {
			snprintf(err, errlen, "--socket-user %s: no such user",
				 opt->socket_user);
			return -EINVAL;
		}
		srv->has_user = true;
	}
	if (opt->socket_group && *opt->socket_group) {
		if (lookup_group(opt->socket_group, &srv->group_gid)) {
			snprintf(err, errlen, "--socket-group %s: no such group",
				 opt->socket_group);
			return -EINVAL;
		}
		srv->has_group = true;
		*gid = srv->group_gid;
	}
	return 0;
}

/* The mode of a directory made for a socket of <mode>: search where the
 * socket may be written (0660: 0750). */
static mode_t dir_mode(mode_t mode)
{
	return 0700 | (mode & 0060 ? 0050 : 0) | (mode & 0006 ? 0005 : 0);
}

/*
 * The socket's directory <dir>: created dir_mode(<mode>), group <gid>,
 * when missing.
 * An existing one is used as it is, and only when it is a directory (not
 * a link) owned by goblin-store's user or root that neither its group nor
 * others can write: whoever can write there could replace the socket and
 * pose as goblin-store.
 */
static int claim_dir(const char *dir, gid_t gid, mode_t mode, char *err,
		     size_t errlen)
{
	char label[sizeof(((struct sockaddr_un *)0)->sun_path) + 32];
	bool created = false;
	struct stat st;
	int ret;

	if (lstat(dir, &st) < 0) {
		if (errno != ENOENT)
			goto out_errno;
		if (mkdir(dir, 0700) == 0)
			created = true;
		else if (errno != EEXIST)
			goto out_errno;
		if (lstat(dir, &st) < 0)
			goto out_errno;
	}
	snprintf(label, sizeof(label), "--socket: directory %s", dir);
	ret = dirtrust_check(&st, label, S_IFDIR, TRUST_ROOT_OK, err, errlen);
	if (ret)
		return ret;
	if (created) {
		/* group first: until then it is 0700 */
		if (gid != (gid_t)-1 && chown(dir, (uid_t)-1, gid) < 0) {
			snprintf(err, errlen, "--socket: giving %s to group %u: %s",
				 dir, (unsigned)gid, strerror(errno));
			return -errno;
		}
		if (chmod(dir, dir_mode(mode)) < 0)
			goto out_errno;
		log_info("link: created %s (mode %04o, group %u)", dir,
			 (unsigned)dir_mode(mode),
			 (unsigned)(gid != (gid_t)-1 ? gid : st.st_gid));
	} else if (gid != (gid_t)-1 &&
		   !(st.st_gid == gid && (st.st_mode & S_IXGRP)) &&
		   !(st.st_mode & S_IXOTH)) {
		log_warn("link: directory %s (group %u, mode %03o) does not let group %u reach the socket",
			 dir, (unsigned)st.st_gid, (unsigned)(st.st_mode & 07777),
			 (unsigned)gid);
	}
	return 0;

out_errno:
	snprintf(err, errlen, "--socket: directory %s: %s", dir,
		 strerror(errno));
	return -errno;
}

/* Refuses a path another live server listens on, or a socket another user
 * made; removes a stale socket of ours. */
static int claim_path(const char *path, char *err, size_t errlen)
{
	char label[sizeof(((struct sockaddr_un *)0)->sun_path) + 16];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat stb;
	int fd, ret;

	if (lstat(path, &stb) < 0)
		return errno == ENOENT ? 0 : -errno;
	snprintf(label, sizeof(label), "--socket %s", path);
	ret = dirtrust_check(&stb, label, S_IFSOCK, 0, err, errlen);
	if (ret)
		return ret;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	ret = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	close(fd);
	if (ret == 0) {
		snprintf(err, errlen, "--socket %s: another server is listening there",
			 path);
		return -EADDRINUSE;
	}
	if (unlink(path) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

/* Binds <srv->lfd> to <path>: <mode> and group <gid> before anyone can
 * connect. */
static int bind_socket(struct link_server *srv, const char *path, gid_t gid,
		       mode_t mode)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	mode_t old;
	int ret;

	strcpy(sa.sun_path, path);
	old = umask(0177);
	ret = bind(srv->lfd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (ret < 0)
		return -errno;
	if ((gid != (gid_t)-1 && chown(path, (uid_t)-1, gid) < 0) ||
	    chmod(path, mode) < 0)
		return -errno;
	return 0;
}

/* An O_RDONLY descriptor of the region memfd <fd>: a shared writable
 * mapping of it fails (and the memfd's seals refuse a writable reopen). */
static int region_fd_ro(int fd)
{
	char p[64];

	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	return open(p, O_RDONLY | O_CLOEXEC);
}

uint32_t link_pins_bound(uint64_t head_slots)
{
	uint64_t quarter = head_slots / 4;

	return quarter < LINK_PINS_MIN ? LINK_PINS_MIN :
	       quarter > LINK_HANDLES_MAX ? LINK_HANDLES_MAX :
	       (uint32_t)quarter;
}

static const struct link_upcalls upcalls = {
	.drain_sq = link_drain_sq,
	.drop_handles = link_drop_handles,
	.fd_back = link_listen_resume,
};

struct link_server *link_server_new(struct gs_engine *e, uint32_t max_pins)
{
	struct link_server *srv = calloc(1, sizeof(*srv));

	if (!srv)
		return NULL;
	srv->up = &upcalls;
	srv->e = e;
	srv->lfd = srv->spare_fd = -1;
	srv->loop = (struct loop){ .epfd = -1, .stopfd = -1 };
	srv->region_fd = -1;
	srv->region_size = gs_engine_region_size(e);
	srv->max_pins = max_pins;
	list_init(&srv->conns);
	list_init(&srv->ready);
	pthread_mutex_init(&srv->lock, NULL);
	pthread_cond_init(&srv->cond, NULL);
	return srv;
}

void link_server_free(struct link_server *srv)
{
	loop_fini(&srv->loop);
	if (srv->lfd >= 0)
		close(srv->lfd);
	if (srv->spare_fd >= 0)
		close(srv->spare_fd);
	if (srv->region_fd >= 0)
		close(srv->region_fd);
	pthread_mutex_destroy(&srv->lock);
	pthread_cond_destroy(&srv->cond);
	free(srv);
}

int link_start(struct link_server **lp, const struct options *opt,
	       struct gs_engine *e, link_snapshot_fn snapshot,
	       void *snapshot_arg, char *err, size_t errlen)
{
	const char *path = opt->socket;
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct link_server *srv;
	gid_t gid;
	int ret;

	err[0] = 0;
	*lp = NULL;
	if (opt->no_http)
		return 0;
	if (!path || !*path || strlen(path) >= sizeof(dir)) {
		snprintf(err, errlen, "--socket: a path of 1 to %zu bytes",
			 sizeof(dir) - 1);
		return -ENAMETOOLONG;
	}
	srv = link_server_new(e, link_pins_bound(options_head_slots(opt)));
	if (!srv) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	srv->snapshot = snapshot;
	srv->snapshot_arg = snapshot_arg;
	strcpy(srv->path, path);
	strcpy(dir, path);

	ret = resolve_access(srv, opt, &gid, err, errlen);
	if (ret)
		goto out_free;
	srv->region_fd = region_fd_ro(gs_engine_region_fd(e));
	if (srv->region_fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "reopening the RAM region read-only: %s",
			 strerror(errno));
		goto out_free;
	}
	ret = claim_dir(dirname(dir), gid, opt->socket_mode_bits, err, errlen);
	if (ret)
		goto out_free;
	ret = claim_path(path, err, errlen);
	if (ret)
		goto out_free;
	srv->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (srv->lfd < 0) {
		ret = -errno;
		goto out_free;
	}
	ret = bind_socket(srv, path, gid, opt->socket_mode_bits);
	if (ret)
		goto out_unlink;
	if (listen(srv->lfd, 128) < 0) {
		ret = -errno;
		goto out_unlink;
	}
	srv->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (srv->spare_fd < 0) {
		ret = -errno;
		goto out_unlink;
	}
	ret = loop_init(&srv->loop, &link_loop_ops, srv);
	if (ret)
		goto out_unlink;
	ret = loop_listen(&srv->loop, srv->lfd, false);
	if (ret)
		goto out_unlink;

	ret = -pthread_create(&srv->thread, NULL, link_thread, srv);
	if (ret)
		goto out_unlink;
	pthread_mutex_lock(&srv->lock);
	while (!srv->started)
		pthread_cond_wait(&srv->cond, &srv->lock);
	pthread_mutex_unlock(&srv->lock);
	ret = srv->start_res;
	if (ret) {
		pthread_join(srv->thread, NULL);
		goto out_unlink;
	}
	*lp = srv;
	log_info("link: nginx workers attach at %s (mode %04o%s%s%s%s; a worker pins at most %u objects)",
		 path, opt->socket_mode_bits, srv->has_user ? ", --socket-user " : "",
		 srv->has_user ? opt->socket_user : "",
		 srv->has_group ? ", --socket-group " : "",
		 srv->has_group ? opt->socket_group : "", srv->max_pins);
	return 0;

out_unlink:
	unlink(path);
out_free:
	if (!err[0])
		snprintf(err, errlen, "--socket %s: %s", path, strerror(-ret));
	link_server_free(srv);
	return ret;
}

void link_stop(struct link_server **lp)
{
	struct link_server *srv = *lp;

	if (!srv)
		return;
	loop_stop(&srv->loop);
	pthread_join(srv->thread, NULL);
	unlink(srv->path);
	link_server_free(srv);
	*lp = NULL;
}
