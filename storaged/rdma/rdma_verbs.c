/*
 * The product RDMA transport: rdma_cm for connections, ibverbs RC queue
 * pairs for the data path (IBV_WR_SEND, IBV_WR_RDMA_WRITE, posted
 * receives).  One protection domain per device: the listener's, so the
 * head region and staging buffers registered once serve every QP.  Every
 * work request is signalled; a completion's wr_id is the caller's ctx.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "rdma.h"

#define VB_CQ_SIZE	256
#define VB_SEND_WR	128
#define VB_RECV_WR	(RDMA_RECVS * 2)
#define VB_TIMEOUT_MS	5000

struct rdma_dev {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;		/* the listener's, or the client's */
	struct ibv_pd *pd;
	struct rdma_ep *eps;
};

struct rdma_ep {
	struct rdma_dev *dev;
	struct rdma_cm_id *id;
	struct ibv_cq *cq;
	struct ibv_comp_channel *cc;	/* the CQ's events, for wait */
	int armed;			/* a CQ event was requested */
	int own_id;			/* a connection request's: destroy it */
	struct rdma_ep *next;
};

static int vb_errno(int r)
{
	return r ? (errno ? -errno : -EIO) : 0;
}

static int vb_addr(const char *host, uint16_t port, struct sockaddr_storage *sa)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	char service[8];

	snprintf(service, sizeof(service), "%u", port);
	if (getaddrinfo(host, service, &hints, &ai))
		return -EHOSTUNREACH;
	memcpy(sa, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	return 0;
}

/* A device (event channel and cm id) for <host>:<port>, resolved into
 * <sa>. */
static int vb_dev_new(const char *host, uint16_t port,
		      struct sockaddr_storage *sa, struct rdma_dev **devp)
{
	struct rdma_dev *d;
	int r;

	r = vb_addr(host, port, sa);
	if (r)
		return r;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->ch = rdma_create_event_channel();
	if (!d->ch) {
		free(d);
		return -ENODEV;
	}
	if (rdma_create_id(d->ch, &d->id, NULL, RDMA_PS_TCP)) {
		rdma_destroy_event_channel(d->ch);
		free(d);
		return -ENODEV;
	}
	*devp = d;
	return 0;
}

static void vb_dev_destroy(struct rdma_dev **devp)
{
	struct rdma_dev *d = *devp;

	if (!d)
		return;
	if (d->pd)
		ibv_dealloc_pd(d->pd);
	rdma_destroy_id(d->id);
	rdma_destroy_event_channel(d->ch);
	free(d);
	*devp = NULL;
}

/* The PD of the device <id> is bound to (once). */
static int vb_pd(struct rdma_dev *d, struct rdma_cm_id *id)
{
	if (d->pd)
		return 0;
	if (!id->verbs)
		return -ENODEV;
	d->pd = ibv_alloc_pd(id->verbs);
	return d->pd ? 0 : -ENOMEM;
}

static int vb_listen(const char *host, uint16_t port, uint16_t *bound,
		     struct rdma_dev **devp)
{
	struct sockaddr_storage sa;
	struct rdma_dev *d;
	int r, fl;

	r = vb_dev_new(host, port, &sa, &d);
	if (r)
		return r;
	r = vb_errno(rdma_bind_addr(d->id, (struct sockaddr *)&sa));
	if (!r)
		r = vb_errno(rdma_listen(d->id, 64));
	if (!r)
		r = vb_pd(d, d->id);
	fl = fcntl(d->ch->fd, F_GETFL);
	if (!r && (fl < 0 || fcntl(d->ch->fd, F_SETFL, fl | O_NONBLOCK)))
		r = -errno;
	if (r) {
		vb_dev_destroy(&d);
		return r;
	}
	*bound = ntohs(rdma_get_src_port(d->id));
	*devp = d;
	return 0;
}

/* A CQ and an RC QP on <id>, as an endpoint of <d>. */
static int vb_ep_open(struct rdma_dev *d, struct rdma_cm_id *id,
		      int own_id, struct rdma_ep **epp)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = VB_SEND_WR, .max_recv_wr = VB_RECV_WR,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct rdma_ep *e;
	int r, fl;

	r = vb_pd(d, id);
	if (r)
		return r;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->cc = ibv_create_comp_channel(id->verbs);
	if (!e->cc) {
		free(e);
		return -ENOMEM;
	}
	fl = fcntl(e->cc->fd, F_GETFL);
	if (fl >= 0)
		fl = fcntl(e->cc->fd, F_SETFL, fl | O_NONBLOCK);
	e->cq = fl < 0 ? NULL :
		ibv_create_cq(id->verbs, VB_CQ_SIZE, NULL, e->cc, 0);
	if (!e->cq) {
		ibv_destroy_comp_channel(e->cc);
		free(e);
		return -ENOMEM;
	}
	qa.send_cq = qa.recv_cq = e->cq;
	if (rdma_create_qp(id, d->pd, &qa)) {
		r = errno ? -errno : -EIO;
		ibv_destroy_cq(e->cq);
		ibv_destroy_comp_channel(e->cc);
		free(e);
		return r;
	}
	e->dev = d;
	e->id = id;
	e->own_id = own_id;
	e->next = d->eps;
	d->eps = e;
	*epp = e;
	return 0;
}

static void vb_ep_destroy(struct rdma_ep **epp)
{
	struct rdma_ep *e = *epp, **pp;

	if (!e)
		return;
	for (pp = &e->dev->eps; *pp; pp = &(*pp)->next) {
		if (*pp == e) {
			*pp = e->next;
			break;
		}
	}
	rdma_disconnect(e->id);
	rdma_destroy_qp(e->id);
	ibv_destroy_cq(e->cq);
	ibv_destroy_comp_channel(e->cc);
	if (e->own_id)
		rdma_destroy_id(e->id);
	free(e);
	*epp = NULL;
}

static int vb_cm_poll(struct rdma_dev *d, struct rdma_ep **epp)
{
	struct rdma_cm_event *ev;
	enum rdma_cm_event_type type;
	struct rdma_cm_id *id;
	struct rdma_ep *e;

	if (rdma_get_cm_event(d->ch, &ev))
		return errno == EAGAIN ? 0 : -errno;
	type = ev->event;
	id = ev->id;
	rdma_ack_cm_event(ev);
	if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
		if (vb_ep_open(d, id, 1, epp)) {
			rdma_reject(id, NULL, 0);
			rdma_destroy_id(id);
			return RDMA_CM_NONE;
		}
		return RDMA_CM_REQUEST;
	}
	for (e = d->eps; e && e->id != id; e = e->next)
		;
	if (!e)
		return RDMA_CM_NONE;
	*epp = e;
	if (type == RDMA_CM_EVENT_ESTABLISHED)
		return RDMA_CM_UP;
	if (type == RDMA_CM_EVENT_DISCONNECTED ||
	    type == RDMA_CM_EVENT_CONNECT_ERROR ||
	    type == RDMA_CM_EVENT_UNREACHABLE ||
	    type == RDMA_CM_EVENT_REJECTED ||
	    type == RDMA_CM_EVENT_DEVICE_REMOVAL)
		return RDMA_CM_DOWN;
	return RDMA_CM_NONE;
}

static int vb_accept(struct rdma_ep *e)
{
	struct rdma_conn_param p = { .responder_resources = 1,
				     .initiator_depth = 1, .rnr_retry_count = 7 };

	return vb_errno(rdma_accept(e->id, &p));
}

/* Waits (blocking) for the next CM event of a client's channel; 0 when
 * it is <want>. */
static int vb_expect(struct rdma_dev *d, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;
	enum rdma_cm_event_type type;

	if (rdma_get_cm_event(d->ch, &ev))
		return -errno;
	type = ev->event;
	rdma_ack_cm_event(ev);
	if (type == want)
		return 0;
	return type == RDMA_CM_EVENT_REJECTED ? -ECONNREFUSED : -EHOSTUNREACH;
}

static int vb_dial(const char *host, uint16_t port, struct rdma_dev **devp,
		   struct rdma_ep **epp)
{
	struct sockaddr_storage sa;
	struct rdma_dev *d;
	int r;

	r = vb_dev_new(host, port, &sa, &d);
	if (r)
		return r;
	r = vb_errno(rdma_resolve_addr(d->id, NULL, (struct sockaddr *)&sa,
				       VB_TIMEOUT_MS));
	if (!r)
		r = vb_expect(d, RDMA_CM_EVENT_ADDR_RESOLVED);
	if (!r)
		r = vb_errno(rdma_resolve_route(d->id, VB_TIMEOUT_MS));
	if (!r)
		r = vb_expect(d, RDMA_CM_EVENT_ROUTE_RESOLVED);
	if (!r)
		r = vb_ep_open(d, d->id, 0, epp);
	if (r) {
		vb_dev_destroy(&d);
		return r;
	}
	*devp = d;
	return 0;
}

static int vb_connect(struct rdma_ep *e)
{
	struct rdma_conn_param p = { .responder_resources = 1,
				     .initiator_depth = 1, .retry_count = 7,
				     .rnr_retry_count = 7 };
	int r;

	r = vb_errno(rdma_connect(e->id, &p));
	if (r)
		return r;
	return vb_expect(e->dev, RDMA_CM_EVENT_ESTABLISHED);
}

static int vb_reg(struct rdma_dev *d, void *buf, size_t len,
		  unsigned flags, struct rdma_mr *mr)
{
	int access = 0;
	struct ibv_mr *m;

	if (flags & (RDMA_LOCAL | RDMA_REMOTE_WRITE))
		access |= IBV_ACCESS_LOCAL_WRITE;
	if (flags & RDMA_REMOTE_WRITE)
		access |= IBV_ACCESS_REMOTE_WRITE;
	m = ibv_reg_mr(d->pd, buf, len, access);
	if (!m)
		return errno ? -errno : -ENOMEM;
	mr->handle = m;
	mr->desc = m;
	mr->key = m->rkey;
	mr->addr = buf;
	mr->len = len;
	return 0;
}

static void vb_dereg(struct rdma_mr *mr)
{
	if (mr->handle)
		ibv_dereg_mr(mr->handle);
	mr->handle = NULL;
}

static uint64_t vb_remote_addr(struct rdma_dev *d,
			       const struct rdma_mr *mr, void *buf)
{
	(void)d;
	(void)mr;
	return (uint64_t)(uintptr_t)buf;
}

static int vb_post_recv(struct rdma_ep *e, void *buf, size_t len,
			struct rdma_mr *mr, void *ctx)
{
	struct ibv_sge sge = { (uintptr_t)buf, (uint32_t)len,
			       ((struct ibv_mr *)mr->desc)->lkey };
	struct ibv_recv_wr wr = { .wr_id = (uintptr_t)ctx, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	return -ibv_post_recv(e->id->qp, &wr, &bad);
}

static int vb_post(struct rdma_ep *e, const void *buf, size_t len,
		   struct rdma_mr *mr, struct ibv_send_wr *wr)
{
	struct ibv_sge sge = { (uintptr_t)buf, (uint32_t)len,
			       ((struct ibv_mr *)mr->desc)->lkey };
	struct ibv_send_wr *bad;

	wr->sg_list = &sge;
	wr->num_sge = 1;
	wr->send_flags = IBV_SEND_SIGNALED;
	return -ibv_post_send(e->id->qp, wr, &bad);
}

static int vb_post_send(struct rdma_ep *e, const void *buf, size_t len,
			struct rdma_mr *mr, void *ctx)
{
	struct ibv_send_wr wr = { .wr_id = (uintptr_t)ctx,
				  .opcode = IBV_WR_SEND };

	return vb_post(e, buf, len, mr, &wr);
}

static int vb_post_write(struct rdma_ep *e, const void *buf, size_t len,
			 struct rdma_mr *mr, uint64_t raddr, uint64_t rkey,
			 void *ctx)
{
	struct ibv_send_wr wr = { .wr_id = (uintptr_t)ctx,
				  .opcode = IBV_WR_RDMA_WRITE };

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = (uint32_t)rkey;
	return vb_post(e, buf, len, mr, &wr);
}

static int vb_poll(struct rdma_ep *e, struct rdma_wc *wc, int n)
{
	struct ibv_wc w[16];
	int got, i;

	if (n > 16)
		n = 16;
	got = ibv_poll_cq(e->cq, n, w);
	if (got < 0)
		return -EIO;
	for (i = 0; i < got; i++) {
		wc[i].ctx = (void *)(uintptr_t)w[i].wr_id;
		wc[i].len = w[i].byte_len;
		if (w[i].status == IBV_WC_SUCCESS)
			wc[i].err = 0;
		else if (w[i].status == IBV_WC_WR_FLUSH_ERR)
			wc[i].err = -ECANCELED;
		else if (w[i].status == IBV_WC_RETRY_EXC_ERR ||
			 w[i].status == IBV_WC_RNR_RETRY_EXC_ERR)
			wc[i].err = -ECONNRESET;
		else
			wc[i].err = -EIO;
		if (w[i].opcode & IBV_WC_RECV)
			wc[i].op = RDMA_OP_RECV;
		else if (w[i].opcode == IBV_WC_RDMA_WRITE)
			wc[i].op = RDMA_OP_WRITE;
		else
			wc[i].op = RDMA_OP_SEND;
	}
	return got;
}

/* The first call arms the CQ's event and returns (the caller polls once
 * more, so nothing that came before the arming is missed); the next one
 * sleeps in the completion channel. */
static int vb_wait(struct rdma_ep *e, int timeout_ms)
{
	struct pollfd pfd = { .fd = e->cc->fd, .events = POLLIN };
	struct ibv_cq *cq;
	void *ctx;
	int r;

	if (!e->armed) {
		if (ibv_req_notify_cq(e->cq, 0))
			return -EIO;
		e->armed = 1;
		return 0;
	}
	r = poll(&pfd, 1, timeout_ms);
	if (r < 0)
		return -errno;
	if (r && !ibv_get_cq_event(e->cc, &cq, &ctx)) {
		ibv_ack_cq_events(cq, 1);
		e->armed = 0;
	}
	return 0;
}

static int vb_ep_fd(struct rdma_ep *e)
{
	return e->cc->fd;
}

/* Armed and no event since: sleep.  Otherwise take the event, arm again
 * and have the caller poll once more (completions that came before the
 * arming raise no event). */
static int vb_ep_arm(struct rdma_ep *e)
{
	struct ibv_cq *cq;
	void *ctx;

	if (e->armed) {
		if (ibv_get_cq_event(e->cc, &cq, &ctx))
			return 0;
		ibv_ack_cq_events(cq, 1);
	}
	if (ibv_req_notify_cq(e->cq, 0))
		return -EIO;
	e->armed = 1;
	return -EAGAIN;
}

static int vb_cm_fd(struct rdma_dev *d)
{
	return d->ch->fd;
}

static int vb_cm_arm(struct rdma_dev *d)
{
	(void)d;	/* readable while events are queued */
	return 0;
}

const struct rdma_transport rdma_verbs = {
	.name = "verbs",
	.listen = vb_listen,
	.dial = vb_dial,
	.connect = vb_connect,
	.cm_poll = vb_cm_poll,
	.accept = vb_accept,
	.ep_destroy = vb_ep_destroy,
	.dev_destroy = vb_dev_destroy,
	.reg = vb_reg,
	.dereg = vb_dereg,
	.remote_addr = vb_remote_addr,
	.post_recv = vb_post_recv,
	.post_send = vb_post_send,
	.post_write = vb_post_write,
	.poll = vb_poll,
	.wait = vb_wait,
	.ep_fd = vb_ep_fd,
	.ep_arm = vb_ep_arm,
	.cm_fd = vb_cm_fd,
	.cm_arm = vb_cm_arm,
};
