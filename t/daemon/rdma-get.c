/*
 * usage: rdma-get [-t tcp|verbs] [-w WINDOW] [-m MAX] HOST PORT KEY FILE...
 *        rdma-get [-t tcp|verbs] [-w WINDOW] -d HOST PORT KEY
 *        rdma-get -n
 *
 * t/daemon/rdma.test's client of goblin-store's RDMA endpoint (rdma.h).
 * The first form GETs each KEY over one connection with a bulk window of
 * WINDOW bytes (default 64K; smaller than the object: many rounds) and
 * writes a hit's bytes to FILE, one line per key on stdout:
 *   HIT <key> <bytes> <flags>  |  MISS <key>  |
 *   ERROR <key> <errno> <server's line>
 * The second connects, asks for KEY, and drops the connection after the
 * VALUE line and the first BULK_READY (mid-object), printing
 * "DROPPED <key> <VALUE line>".  The third prints the number of RDMA
 * devices ibv_get_device_list() finds.
 * Exit 0 when every GET got an answer (hit or miss), 1 otherwise, 2 on
 * bad usage.
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "rdma.h"

#define WAIT_MS	10000

static int usage(void)
{
	fprintf(stderr, "usage: rdma-get [-t tcp|verbs] [-w WINDOW] [-m MAX] HOST PORT KEY FILE...\n"
		"       rdma-get [-t tcp|verbs] [-w WINDOW] -d HOST PORT KEY\n"
		"       rdma-get -n\n");
	return 2;
}

static int devices(void)
{
	struct ibv_device **list;
	int n = 0;

	list = ibv_get_device_list(&n);
	if (list)
		ibv_free_device_list(list);
	printf("%d\n", list ? n : 0);
	return 0;
}

static int save(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "wb");
	int r = 0;

	if (!f)
		return -errno;
	if (len && fwrite(buf, 1, len, f) != len)
		r = -EIO;
	if (fclose(f) && !r)
		r = -errno;
	return r;
}

/* GETs each key of <argv> (key, file pairs) over one connection. */
static int get_all(const struct gs_rdma_transport *tp, const char *host,
		   uint16_t port, size_t window, size_t max, int argc,
		   char **argv)
{
	struct gs_rdma_client *c = NULL;
	char err[GS_RDMA_MSG] = "";
	char *out = malloc(max ? max : 1);
	int r, i, bad = 0;

	if (!out)
		return 1;
	r = gs_rdma_client_create(tp, host, port, window, err, sizeof(err),
				  &c);
	if (r) {
		printf("CONNECT_ERROR %d %s\n", -r, *err ? err : strerror(-r));
		free(out);
		return 1;
	}
	for (i = 0; i + 1 < argc; i += 2) {
		uint32_t flags = 0;
		size_t len = 0;

		*err = '\0';
		r = gs_rdma_client_get(c, argv[i], out, max, &len, &flags,
				       NULL, err, sizeof(err));
		if (r == 1) {
			r = save(argv[i + 1], out, len);
			if (!r)
				printf("HIT %s %zu %u\n", argv[i], len, flags);
		} else if (r == 0) {
			printf("MISS %s\n", argv[i]);
		}
		if (r < 0) {
			printf("ERROR %s %d %s\n", argv[i], -r,
			       *err ? err : strerror(-r));
			bad++;
		}
		fflush(stdout);
	}
	gs_rdma_client_destroy(&c);
	free(out);
	return bad ? 1 : 0;
}

static uint64_t now_ms(void)
{
	return mono_ms();
}

/* The next line the server sends (a RECV into <line>); 0 or -errno. */
static int raw_line(const struct gs_rdma_transport *tp, struct gs_rdma_ep *e,
		    char *line)
{
	uint64_t end = now_ms() + WAIT_MS;
	struct gs_rdma_wc wc;
	int n;

	while (now_ms() < end) {
		n = tp->poll(e, &wc, 1);
		if (n < 0)
			return n;
		if (n && wc.err)
			return wc.err;
		if (n && wc.op == GS_RDMA_OP_RECV) {
			line[wc.len < GS_RDMA_MSG ? wc.len : GS_RDMA_MSG - 1] = 0;
			line[strcspn(line, "\r\n")] = 0;
			return 0;
		}
		if (!n) {
			n = tp->wait(e, 100);
			if (n < 0)
				return n;
		}
	}
	return -ETIMEDOUT;
}

/* Asks for <key> and goes away after VALUE and the first BULK_READY. */
static int drop_mid(const struct gs_rdma_transport *tp, const char *host,
		    uint16_t port, size_t wlen, const char *key)
{
	struct gs_rdma_mr mr = { 0 }, wmr = { 0 };
	struct gs_rdma_dev *d = NULL;
	struct gs_rdma_ep *e = NULL;
	char *msg = NULL, *win = NULL, value[GS_RDMA_MSG] = "";
	int r, n;

	if (posix_memalign((void **)&msg, 4096, 4 * GS_RDMA_MSG) ||
	    posix_memalign((void **)&win, 4096, wlen))
		return 1;
	r = tp->dial(host, port, &d, &e);
	if (!r)
		r = tp->reg(d, msg, 4 * GS_RDMA_MSG, GS_RDMA_LOCAL, &mr);
	if (!r)
		r = tp->reg(d, win, wlen, GS_RDMA_REMOTE_WRITE, &wmr);
	for (n = 0; !r && n < 3; n++)
		r = tp->post_recv(e, msg + n * GS_RDMA_MSG, GS_RDMA_MSG, &mr,
				  NULL);
	if (!r)
		r = tp->connect(e);
	n = snprintf(msg + 3 * GS_RDMA_MSG, GS_RDMA_MSG,
		     "WINDOW %llu %llu %zu\r\n",
		     (unsigned long long)tp->remote_addr(d, &wmr, win),
		     (unsigned long long)wmr.key, wlen);
	if (!r)
		r = tp->post_send(e, msg + 3 * GS_RDMA_MSG, (size_t)n, &mr,
				  NULL);
	if (!r)
		r = raw_line(tp, e, msg);
	if (!r && strcmp(msg, "OK"))
		r = -EPROTO;
	/* the send buffer is free again once OK came: the server answers
	 * only what it received */
	n = snprintf(msg + 3 * GS_RDMA_MSG, GS_RDMA_MSG, "get %s\r\n", key);
	if (!r)
		r = tp->post_send(e, msg + 3 * GS_RDMA_MSG, (size_t)n, &mr,
				  NULL);
	if (!r)
		r = raw_line(tp, e, msg + GS_RDMA_MSG);
	if (!r)
		snprintf(value, sizeof(value), "%s", msg + GS_RDMA_MSG);
	if (!r && strncmp(value, "VALUE ", 6))
		r = -EPROTO;
	if (!r)
		r = raw_line(tp, e, msg + 2 * GS_RDMA_MSG);
	if (!r && strncmp(msg + 2 * GS_RDMA_MSG, "BULK_READY 0 ", 13))
		r = -EPROTO;
	if (r)
		printf("ERROR %s %d %s\n", key, -r, *value ? value : strerror(-r));
	else
		printf("DROPPED %s %s\n", key, value);
	tp->ep_destroy(&e);
	if (wmr.handle)
		tp->dereg(&wmr);
	if (mr.handle)
		tp->dereg(&mr);
	tp->dev_destroy(&d);
	free(win);
	free(msg);
	return r ? 1 : 0;
}

int main(int argc, char **argv)
{
	const struct gs_rdma_transport *tp = &gs_rdma_fabric;
	size_t window = 64u << 10, max = 64u << 20;
	int c, drop = 0;
	unsigned long port;
	char *end;

	while ((c = getopt(argc, argv, "t:w:m:dn")) != -1) {
		switch (c) {
		case 't':
			if (!strcmp(optarg, "verbs"))
				tp = &gs_rdma_verbs;
			else if (strcmp(optarg, "tcp"))
				return usage();
			break;
		case 'w':
			window = strtoul(optarg, &end, 0);
			if (*end || !window)
				return usage();
			break;
		case 'm':
			max = strtoul(optarg, &end, 0);
			if (*end)
				return usage();
			break;
		case 'd':
			drop = 1;
			break;
		case 'n':
			return devices();
		default:
			return usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 3 || (drop ? argc != 3 : argc % 2))
		return usage();
	port = strtoul(argv[1], &end, 10);
	if (*end || !port || port > 65535)
		return usage();
	if (drop)
		return drop_mid(tp, argv[0], (uint16_t)port, window, argv[2]);
	return get_all(tp, argv[0], (uint16_t)port, window, max, argc - 2,
		       argv + 2);
}
