/*
 * A memcache connection's read buffer: conn_fill() makes room in rbuf and
 * reads into it through conn_recv().  A file of its own so that the text
 * protocol's fuzzer (t/fuzz/fuzz_text.c) runs this code over its fake
 * socket.
 */
#include <stdlib.h>
#include <string.h>

#include "server.h"

ssize_t conn_fill(struct conn *c)
{
	ssize_t n;

	if (c->rstart == c->rend) {
		c->rstart = c->rend = 0;
		if (c->rcap > 4 * CONN_RBUF_MIN) {	/* after a long get line */
			char *p = realloc(c->rbuf, CONN_RBUF_MIN);

			if (p) {
				c->rbuf = p;
				c->rcap = CONN_RBUF_MIN;
			}
		}
	} else if (c->rstart > 0 && c->rend == c->rcap) {
		memmove(c->rbuf, c->rbuf + c->rstart, c->rend - c->rstart);
		c->rend -= c->rstart;
		c->rstart = 0;
	}
	if (c->eof)
		return 0;
	if (c->rend == c->rcap) {
		size_t cap = c->rcap * 2;
		char *p = cap <= 2 * (MC_GET_LINE_MAX + 2) + CONN_RBUF_MIN ?
			  realloc(c->rbuf, cap) : NULL;

		if (!p)
			return -1;
		c->rbuf = p;
		c->rcap = cap;
	}
	n = conn_recv(c, c->rbuf + c->rend, c->rcap - c->rend);
	if (n > 0)
		c->rend += n;
	return n;
}
