/*
 * The emulated RDMA transport: libfabric's tcp provider, FI_EP_MSG
 * endpoints with FI_MSG and FI_RMA.  fi_write places bytes in the peer's
 * registered memory by address and key, as an RDMA WRITE would; the
 * provider makes progress when its CQ and EQ are read (manual progress),
 * which rdma_server_step() and the client's waits do.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_rma.h>

#include "rdma.h"

#define FAB_VERSION	FI_VERSION(1, 9)
#define FAB_CQ_SIZE	256

struct rdma_dev {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fid_pep *pep;
	struct rdma_ep *eps;		/* open endpoints, for EQ events */
	int eq_fd;
	uint64_t next_key;
};

struct rdma_ep {
	struct rdma_dev *dev;
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct rdma_ep *next;
	int wait_fd;		/* readable when the CQ may have completions */
	int down;
};

/* fi_* calls return -FI_E*, which are -errno for the errno range. */
static int fab_err(ssize_t r)
{
	if (r >= 0)
		return 0;
	return r < -FI_ERRNO_OFFSET ? -EIO : (int)r;
}

static struct fi_info *fab_hints(void)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		return NULL;
	h->ep_attr->type = FI_EP_MSG;
	h->caps = FI_MSG | FI_RMA;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				  FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	h->tx_attr->msg_order = FI_ORDER_SAW | FI_ORDER_SAS;
	h->fabric_attr->prov_name = strdup("tcp");
	if (!h->fabric_attr->prov_name) {
		fi_freeinfo(h);
		return NULL;
	}
	return h;
}

/* getinfo, fabric, EQ (and a domain unless <server>, which opens it from
 * the same info: the listener's domain serves every connection). */
static int fab_open(const char *host, uint16_t port, int server,
		    struct rdma_dev **devp)
{
	struct fi_eq_attr eqa = { .size = 64, .wait_obj = FI_WAIT_FD };
	struct rdma_dev *d;
	struct fi_info *hints;
	char service[8];
	int r;

	d = calloc(1, sizeof(*d));
	hints = fab_hints();
	if (!d || !hints) {
		r = -ENOMEM;
		goto out_free;
	}
	snprintf(service, sizeof(service), "%u", port);
	r = fab_err(fi_getinfo(FAB_VERSION, host, service,
			       server ? FI_SOURCE : 0, hints, &d->info));
	if (r)
		goto out_free;
	r = fab_err(fi_fabric(d->info->fabric_attr, &d->fabric, NULL));
	if (r)
		goto out_info;
	r = fab_err(fi_eq_open(d->fabric, &eqa, &d->eq, NULL));
	if (r)
		goto out_fabric;
	r = fab_err(fi_control(&d->eq->fid, FI_GETWAIT, &d->eq_fd));
	if (!r)
		r = fab_err(fi_domain(d->fabric, d->info, &d->domain, NULL));
	if (r)
		goto out_eq;
	d->next_key = 1;
	fi_freeinfo(hints);
	*devp = d;
	return 0;
out_eq:
	fi_close(&d->eq->fid);
out_fabric:
	fi_close(&d->fabric->fid);
out_info:
	fi_freeinfo(d->info);
out_free:
	if (hints)
		fi_freeinfo(hints);
	free(d);
	return r;
}

static void fab_dev_destroy(struct rdma_dev **devp)
{
	struct rdma_dev *d = *devp;

	if (!d)
		return;
	if (d->pep)
		fi_close(&d->pep->fid);
	fi_close(&d->domain->fid);
	fi_close(&d->eq->fid);
	fi_close(&d->fabric->fid);
	fi_freeinfo(d->info);
	free(d);
	*devp = NULL;
}

static int fab_listen(const char *host, uint16_t port, uint16_t *bound,
		      struct rdma_dev **devp)
{
	struct sockaddr_storage sa;
	size_t salen = sizeof(sa);
	struct rdma_dev *d;
	int r;

	r = fab_open(host, port, 1, &d);
	if (r)
		return r;
	r = fab_err(fi_passive_ep(d->fabric, d->info, &d->pep, NULL));
	if (r)
		goto out_dev;
	r = fab_err(fi_pep_bind(d->pep, &d->eq->fid, 0));
	if (!r)
		r = fab_err(fi_listen(d->pep));
	if (!r)
		r = fab_err(fi_getname(&d->pep->fid, &sa, &salen));
	if (r)
		goto out_dev;
	if (sa.ss_family == AF_INET)
		*bound = ntohs(((struct sockaddr_in *)&sa)->sin_port);
	else
		*bound = ntohs(((struct sockaddr_in6 *)&sa)->sin6_port);
	*devp = d;
	return 0;
out_dev:
	fab_dev_destroy(&d);
	return r;
}

/* An endpoint for <info> with its CQ, bound to the device's EQ. */
static int fab_ep_open(struct rdma_dev *d, struct fi_info *info,
		       struct rdma_ep **epp)
{
	struct fi_cq_attr cqa = { .size = FAB_CQ_SIZE,
				  .format = FI_CQ_FORMAT_MSG,
				  .wait_obj = FI_WAIT_FD };
	struct rdma_ep *e;
	int r;

	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->dev = d;
	r = fab_err(fi_endpoint(d->domain, info, &e->ep, e));
	if (r)
		goto out_free;
	r = fab_err(fi_cq_open(d->domain, &cqa, &e->cq, NULL));
	if (r)
		goto out_ep;
	r = fab_err(fi_ep_bind(e->ep, &e->cq->fid, FI_TRANSMIT | FI_RECV));
	if (!r)
		r = fab_err(fi_ep_bind(e->ep, &d->eq->fid, 0));
	if (!r)
		r = fab_err(fi_enable(e->ep));
	if (!r)
		r = fab_err(fi_control(&e->cq->fid, FI_GETWAIT, &e->wait_fd));
	if (r)
		goto out_cq;
	e->next = d->eps;
	d->eps = e;
	*epp = e;
	return 0;
out_cq:
	fi_close(&e->cq->fid);
out_ep:
	fi_close(&e->ep->fid);
out_free:
	free(e);
	return r;
}

static void fab_ep_destroy(struct rdma_ep **epp)
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
	fi_close(&e->ep->fid);
	fi_close(&e->cq->fid);
	free(e);
	*epp = NULL;
}

/* Reads one EQ event: the event, or 0 (none), or -errno. */
static int fab_eq_read(struct rdma_dev *d, struct fi_eq_cm_entry *ent,
		       uint32_t *event)
{
	struct fi_eq_err_entry err;
	ssize_t n;

	n = fi_eq_read(d->eq, event, ent, sizeof(*ent), 0);
	if (n == -FI_EAGAIN)
		return 0;
	if (n == -FI_EAVAIL) {
		memset(&err, 0, sizeof(err));
		if (fi_eq_readerr(d->eq, &err, 0) < 0)
			return -EIO;
		/* A failed connection: report it as that endpoint going
		 * down. */
		ent->fid = err.fid;
		ent->info = NULL;
		*event = FI_SHUTDOWN;
		return 1;
	}
	return n < 0 ? fab_err(n) : 1;
}

static int fab_cm_poll(struct rdma_dev *d, struct rdma_ep **epp)
{
	struct fi_eq_cm_entry ent;
	struct rdma_ep *e;
	uint32_t ev;
	int r;

	r = fab_eq_read(d, &ent, &ev);
	if (r <= 0)
		return r;
	if (ev == FI_CONNREQ) {
		r = fab_ep_open(d, ent.info, epp);
		if (r) {
			fi_reject(d->pep, ent.info->handle, NULL, 0);
			fi_freeinfo(ent.info);
			return RDMA_CM_NONE;
		}
		fi_freeinfo(ent.info);
		return RDMA_CM_REQUEST;
	}
	/* An event may name an endpoint closed since: match, never follow,
	 * the fid. */
	for (e = d->eps; e && &e->ep->fid != ent.fid; e = e->next)
		;
	if (!e)
		return RDMA_CM_NONE;
	*epp = e;
	if (ev == FI_CONNECTED)
		return RDMA_CM_UP;
	if (ev == FI_SHUTDOWN) {
		(*epp)->down = 1;
		return RDMA_CM_DOWN;
	}
	return RDMA_CM_NONE;
}

static int fab_accept(struct rdma_ep *e)
{
	return fab_err(fi_accept(e->ep, NULL, 0));
}

static int fab_dial(const char *host, uint16_t port,
		    struct rdma_dev **devp, struct rdma_ep **epp)
{
	struct rdma_dev *d;
	int r;

	r = fab_open(host, port, 0, &d);
	if (r)
		return r;
	r = fab_ep_open(d, d->info, epp);
	if (r) {
		fab_dev_destroy(&d);
		return r;
	}
	*devp = d;
	return 0;
}

static int fab_connect(struct rdma_ep *e)
{
	struct fi_eq_cm_entry ent;
	uint32_t ev;
	ssize_t n;
	int r;

	r = fab_err(fi_connect(e->ep, e->dev->info->dest_addr, NULL, 0));
	if (r)
		return r;
	/* Blocking read: the connection is up or refused. */
	n = fi_eq_sread(e->dev->eq, &ev, &ent, sizeof(ent), 10000, 0);
	if (n < 0 || ev != FI_CONNECTED)
		return n == -FI_EAGAIN ? -ETIMEDOUT : -ECONNREFUSED;
	return 0;
}

static int fab_reg(struct rdma_dev *d, void *buf, size_t len,
		   unsigned flags, struct rdma_mr *mr)
{
	uint64_t access = FI_SEND | FI_WRITE;
	struct fid_mr *m;
	int r;

	if (flags & RDMA_LOCAL)
		access |= FI_RECV;
	if (flags & RDMA_REMOTE_WRITE)
		access |= FI_REMOTE_WRITE;
	r = fab_err(fi_mr_reg(d->domain, buf, len, access, 0, d->next_key++,
			      0, &m, NULL));
	if (r)
		return r;
	mr->handle = m;
	mr->desc = fi_mr_desc(m);
	mr->key = fi_mr_key(m);
	mr->addr = buf;
	mr->len = len;
	return 0;
}

static void fab_dereg(struct rdma_mr *mr)
{
	if (mr->handle)
		fi_close(&((struct fid_mr *)mr->handle)->fid);
	mr->handle = NULL;
}

static uint64_t fab_remote_addr(struct rdma_dev *d,
				const struct rdma_mr *mr, void *buf)
{
	if (d->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR)
		return (uint64_t)(uintptr_t)buf;
	return (uint64_t)((char *)buf - mr->addr);
}

static int fab_post_recv(struct rdma_ep *e, void *buf, size_t len,
			 struct rdma_mr *mr, void *ctx)
{
	return fab_err(fi_recv(e->ep, buf, len, mr->desc, 0, ctx));
}

static int fab_post_send(struct rdma_ep *e, const void *buf, size_t len,
			 struct rdma_mr *mr, void *ctx)
{
	return fab_err(fi_send(e->ep, buf, len, mr->desc, 0, ctx));
}

static int fab_post_write(struct rdma_ep *e, const void *buf, size_t len,
			  struct rdma_mr *mr, uint64_t raddr, uint64_t rkey,
			  void *ctx)
{
	return fab_err(fi_write(e->ep, buf, len, mr->desc, 0, raddr, rkey,
				ctx));
}

static enum rdma_op fab_op(uint64_t flags)
{
	if (flags & FI_RECV)
		return RDMA_OP_RECV;
	if (flags & (FI_RMA | FI_WRITE))
		return RDMA_OP_WRITE;
	return RDMA_OP_SEND;
}

static int fab_poll(struct rdma_ep *e, struct rdma_wc *wc, int n)
{
	struct fi_cq_msg_entry ent[16];
	struct fi_cq_err_entry err;
	ssize_t got;
	int i;

	if (n > 16)
		n = 16;
	got = fi_cq_read(e->cq, ent, n);
	if (got == -FI_EAGAIN)
		return e->down ? -ENOTCONN : 0;
	if (got == -FI_EAVAIL) {
		memset(&err, 0, sizeof(err));
		if (fi_cq_readerr(e->cq, &err, 0) < 0)
			return -EIO;
		wc[0].ctx = err.op_context;
		wc[0].op = fab_op(err.flags);
		wc[0].len = 0;
		wc[0].err = err.err ? -(int)err.err : -EIO;
		return 1;
	}
	if (got < 0)
		return fab_err(got);
	for (i = 0; i < got; i++) {
		wc[i].ctx = ent[i].op_context;
		wc[i].op = fab_op(ent[i].flags);
		wc[i].len = ent[i].len;
		wc[i].err = 0;
	}
	return (int)got;
}

static int fab_wait(struct rdma_ep *e, int timeout_ms)
{
	struct fid *f = &e->cq->fid;
	struct pollfd pfd = { .fd = e->wait_fd, .events = POLLIN };

	/* trywait: nothing to read and the fd armed, or -FI_EAGAIN */
	if (fi_trywait(e->dev->fabric, &f, 1) != FI_SUCCESS)
		return 0;
	return poll(&pfd, 1, timeout_ms) < 0 ? -errno : 0;
}

static int fab_ep_fd(struct rdma_ep *e)
{
	return e->wait_fd;
}

static int fab_ep_arm(struct rdma_ep *e)
{
	struct fid *f = &e->cq->fid;

	return fi_trywait(e->dev->fabric, &f, 1) == FI_SUCCESS ? 0 : -EAGAIN;
}

static int fab_cm_fd(struct rdma_dev *d)
{
	return d->eq_fd;
}

static int fab_cm_arm(struct rdma_dev *d)
{
	struct fid *f = &d->eq->fid;

	return fi_trywait(d->fabric, &f, 1) == FI_SUCCESS ? 0 : -EAGAIN;
}

const struct rdma_transport rdma_fabric = {
	.name = "fabric-tcp",
	.listen = fab_listen,
	.dial = fab_dial,
	.connect = fab_connect,
	.cm_poll = fab_cm_poll,
	.accept = fab_accept,
	.ep_destroy = fab_ep_destroy,
	.dev_destroy = fab_dev_destroy,
	.reg = fab_reg,
	.dereg = fab_dereg,
	.remote_addr = fab_remote_addr,
	.post_recv = fab_post_recv,
	.post_send = fab_post_send,
	.post_write = fab_post_write,
	.poll = fab_poll,
	.wait = fab_wait,
	.ep_fd = fab_ep_fd,
	.ep_arm = fab_ep_arm,
	.cm_fd = fab_cm_fd,
	.cm_arm = fab_cm_arm,
};
