/*
 * A worker's connection to the nginx link: its completions held back
 * when the CQ is full, the hello and welcome (the head region and a fresh
 * ring handed over), doorbells, and dropping it; and who may attach.
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "link_internal.h"
#include "log.h"

/* ---- completions that do not fit the CQ ---- */

void link_cqe_overflow(struct link_conn *c, const struct ring_cqe *cqe)
{
	struct ring_cqe *grown;
	uint32_t cap;

	if (c->over_len == c->over_cap) {
		cap = c->over_cap ? 2 * c->over_cap : 64;
		if (cap > MAX_OVERFLOW) {
			link_conn_kill(c, "completion queue overflow");
			return;
		}
		grown = malloc(cap * sizeof(*grown));
		if (!grown) {
			link_conn_kill(c, "out of memory for completions");
			return;
		}
		for (uint32_t i = 0; i < c->over_len; i++)
			grown[i] = c->over[(c->over_head + i) % c->over_cap];
		free(c->over);
		c->over = grown;
		c->over_head = 0;
		c->over_cap = cap;
	}
	c->over[(c->over_head + c->over_len) % c->over_cap] = *cqe;
	c->over_len++;
	c->srv->st[ST_ring_cq_overflows]++;
}

/* ---- a worker's connection ---- */

int link_conn_setup(struct link_conn *c, struct ring_hello *hello)
{
	uint32_t i, nh;
	int ret;

	ret = ring_create(&c->ring, hello);
	if (ret)
		return ret;
	nh = 4 * c->ring.sq_entries;
	nh = nh < 256 ? 256 : nh > LINK_HANDLES_MAX ? LINK_HANDLES_MAX : nh;
	c->h = calloc(nh, sizeof(*c->h));
	for (c->pin_cap = 1; c->pin_cap < 2 * nh; c->pin_cap <<= 1)
		;
	c->pinset = calloc(c->pin_cap, sizeof(*c->pinset));
	c->rx_free = calloc(c->ring.n_rx, sizeof(*c->rx_free));
	c->rx_state = calloc(c->ring.n_rx, 1);
	c->rx_owner = calloc(c->ring.n_rx, sizeof(*c->rx_owner));
	c->tx_daemon = calloc(c->ring.n_tx, 1);
	if (!c->h || !c->pinset || !c->rx_free || !c->rx_state ||
	    !c->rx_owner || !c->tx_daemon)
		return -ENOMEM;
	c->nh = nh;
	for (i = c->nh; i-- > 0;) {
		c->h[i].c = c;
		list_init(&c->h[i].ready_link);
		list_init(&c->h[i].wait_link);
		c->h[i].next_free = c->free_h;
		c->free_h = &c->h[i];
	}
	for (i = c->ring.n_rx; i-- > 0;)
		c->rx_free[c->nrx_free++] = i;
	c->per_stream = c->ring.n_rx / 4 < 2 ? 2 : c->ring.n_rx / 4;
	return 0;
}

void link_conn_attached(struct link_conn *c)
{
	struct link_server *srv = c->srv;

	c->welcomed = true;
	srv->st[ST_ring_connections]++;
	srv->st[ST_ring_total_connections]++;
	log_info("nginx worker %d (uid %u) attached (sq %u, rx %u, tx %u buffers of %u KiB)",
		 (int)c->pid, (unsigned)c->uid, c->ring.sq_entries,
		 c->ring.n_rx, c->ring.n_tx, c->ring.buf_size >> 10);
}

/* Answers the worker's hello with the head region and a fresh ring. */
static int conn_welcome(struct link_conn *c)
{
	struct link_server *srv = c->srv;
	struct ring_welcome w = { .magic = RING_MAGIC,
				  .version = RING_VERSION };
	struct ring_hello hello;
	int ret;

	ret = ring_recv_hello(c->fd, &hello);
	if (ret)
		return ret;
	ret = link_conn_setup(c, &hello);
	if (ret)
		goto out_refuse;
	w.ring_size = c->ring.size;
	w.region_size = srv->region_size;
	w.store_id = gs_engine_identity(srv->e);
	ret = ring_send_welcome(c->fd, &w, srv->region_fd, c->ring.fd);
	if (ret)
		return ret;
	/* the worker holds its own descriptor now; the mapping is enough */
	close(c->ring.fd);
	c->ring.fd = -1;
	link_conn_attached(c);
	return 0;

out_refuse:
	w.res = ret;
	ring_send_welcome(c->fd, &w, -1, -1);
	return ret;
}

void link_conn_event(struct link_conn *c)
{
	int ret;

	if (c->dead)
		return;
	if (!c->welcomed) {
		ret = conn_welcome(c);
		if (ret == -ECONNRESET) {
			link_conn_kill(c, NULL);
		} else if (ret == -EPROTO) {
			link_conn_kill(c, "bad hello");
		} else if (ret && ret != -EAGAIN) {
			log_warn("nginx worker %d not attached: %s", (int)c->pid,
				 strerror(-ret));
			c->srv->st[ST_ring_rejected_connections]++;
			link_conn_kill(c, NULL);
		}
		return;
	}
	ret = ring_doorbell_drain(c->fd);
	if (ret < 0) {
		link_conn_kill(c, NULL);
		return;
	}
	c->srv->up->drain_sq(c);
}

void link_conn_kill(struct link_conn *c, const char *why)
{
	struct link_server *srv = c->srv;
	unsigned pins;

	if (c->dead)
		return;
	c->dead = true;
	if (why) {
		log_warn("nginx worker %d dropped: %s", (int)c->pid, why);
		srv->st[ST_ring_protocol_errors]++;
	}
	pins = srv->up->drop_handles(c);
	if (c->welcomed) {
		srv->st[ST_ring_connections]--;
		log_info("nginx worker %d detached, %u pin(s) released",
			 (int)c->pid, pins);
	}
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	if (!c->ndirect)		/* else once their reads are over */
		ring_unmap(&c->ring);
}

struct link_conn *link_conn_new(struct link_server *srv, int fd)
{
	struct link_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->srv = srv;
	c->fd = fd;
	c->ring.fd = -1;
	list_init(&c->buf_waiters);
	list_add_tail(&srv->conns, &c->link);
	srv->nconns++;
	return c;
}

void link_conn_free(struct link_conn *c)
{
	struct link_server *srv = c->srv;

	list_del(&c->link);
	srv->nconns--;
	free(c->h);
	free(c->pinset);
	free(c->rx_free);
	free(c->rx_state);
	free(c->rx_owner);
	free(c->tx_daemon);
	free(c->over);
	free(c);
	srv->up->fd_back(srv);	/* a descriptor came back */
}

/* ---- who may attach ---- */

static bool uid_in_group(uid_t uid, gid_t gid)
{
	struct passwd pw, *pwp = NULL;
	gid_t *groups = NULL;
	char buf[16384];
	bool found = false;
	int n = 64;

	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &pwp) || !pwp)
		return false;
	if (pw.pw_gid == gid)
		return true;
	for (int tries = 0; tries < 2 && !found; tries++) {
		gid_t *grown = realloc(groups, n * sizeof(*groups));
		int got = n;

		if (!grown)
			break;
		groups = grown;
		if (getgrouplist(pw.pw_name, pw.pw_gid, groups, &got) < 0) {
			n = got;	/* too small: <got> is what it takes */
			continue;
		}
		for (int i = 0; i < got; i++)
			found |= groups[i] == gid;
		break;
	}
	free(groups);
	return found;
}

/* Root, goblin-store's own user, --socket-user, or a --socket-group
 * member (primary or supplementary group of the peer's account). */
bool link_peer_allowed(const struct link_server *srv, const struct ucred *cred)
{
	if (cred->uid == 0 || cred->uid == geteuid() ||
	    (srv->has_user && cred->uid == srv->user_uid))
		return true;
	if (!srv->has_group)
		return false;
	return cred->gid == srv->group_gid || uid_in_group(cred->uid,
							   srv->group_gid);
}

bool link_refusal_log_due(struct link_server *srv)
{
	time_t now = time(NULL);

	if (now == srv->refusal_logged)
		return false;
	srv->refusal_logged = now;
	return true;
}
