/* goblin-bench connections: name resolution and a bounded connect. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "goblin-bench.h"

int gb_resolve(const char *host, unsigned port, struct gb_addr *a)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	char service[16];
	int rc;

	snprintf(service, sizeof(service), "%u", port);
	rc = getaddrinfo(host, service, &hints, &ai);
	if (rc) {
		fprintf(stderr, "goblin-bench: cannot resolve %s: %s\n", host,
			gai_strerror(rc));
		return -1;
	}
	memcpy(&a->sa, ai->ai_addr, ai->ai_addrlen);
	a->len = ai->ai_addrlen;
	a->family = ai->ai_family;
	freeaddrinfo(ai);
	if (port == 80 || strchr(host, ':'))
		snprintf(a->host_hdr, sizeof(a->host_hdr), "%s", host);
	else
		snprintf(a->host_hdr, sizeof(a->host_hdr), "%s:%u", host, port);
	return 0;
}

int gb_connect(const struct gb_addr *a, double timeout)
{
	struct pollfd pfd;
	socklen_t len = sizeof(int);
	int fd, err = 0, one = 1, rc;

	fd = socket(a->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (const struct sockaddr *)&a->sa, a->len) < 0) {
		if (errno != EINPROGRESS) {
			err = -errno;
			goto out_close;
		}
		pfd = (struct pollfd){ .fd = fd, .events = POLLOUT };
		do
			rc = poll(&pfd, 1, (int)(timeout * 1000));
		while (rc < 0 && errno == EINTR);
		if (rc == 0) {
			err = -ETIMEDOUT;
			goto out_close;
		}
		if (rc < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len)) {
			err = -errno;
			goto out_close;
		}
		if (err) {
			err = -err;
			goto out_close;
		}
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;

out_close:
	close(fd);
	return err;
}
