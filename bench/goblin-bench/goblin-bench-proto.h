/*
 * goblin-bench wire protocols: request heads and an incremental response
 * parser for the memcache text protocol and HTTP/1.1.
 *
 *   memcache  set <key> 0 0 <n>\r\n<data>\r\n  ->  STORED\r\n
 *             get <key>\r\n  ->  VALUE <key> <flags> <n>\r\n<data>\r\nEND\r\n
 *                            |   END\r\n                             (miss)
 *   http      PUT <prefix><key>, Content-Length  ->  200 / 201 / 204
 *             GET <prefix><key>  ->  200 + Content-Length body | 404
 *
 * SERVER_ERROR / CLIENT_ERROR / ERROR lines and other HTTP statuses are
 * errors the connection survives; anything the parser cannot frame is a
 * protocol failure and the connection must be closed.
 */
#ifndef GOBLIN_BENCH_PROTO_H
#define GOBLIN_BENCH_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GB_LINE_MAX	8192

enum gb_proto {
	GB_PROTO_MEMCACHE,
	GB_PROTO_HTTP,
	GB_PROTO_RDMA,		/* gets over goblin-store's RDMA endpoint
				 * (goblin-bench-rdma.c); sets over memcache */
};

enum gb_op {
	GB_OP_GET,
	GB_OP_SET,
};

enum gb_outcome {
	GB_RESP_MORE,		/* incomplete: feed more bytes */
	GB_RESP_HIT,
	GB_RESP_MISS,
	GB_RESP_STORED,
	GB_RESP_ERROR,		/* error answer; connection still framed */
	GB_RESP_PROTO,		/* unframeable answer; close the connection */
};

/* Body bytes of a hit, in order: <off> within the value of <total> bytes. */
typedef void (*gb_body_sink)(void *ctx, uint64_t off, const char *p,
			     size_t n, uint64_t total);

struct gb_resp {
	enum gb_proto proto;
	enum gb_op op;
	const char *key;
	int state;
	enum gb_outcome result;	/* outcome decided by the head */
	char line[GB_LINE_MAX];
	size_t line_len;
	uint64_t body_len, body_got;
	bool have_len;		/* http: Content-Length seen */
	bool sink_body;		/* body is the value: pass it to the sink */
	bool close_after;	/* http: server closes after this response */
	int status;		/* http status */
	unsigned end_got;	/* memcache: bytes of "\r\n" after the data */
	char msg[160];		/* error line or protocol complaint */
};

/* The name of key <index>: "gb:<index>". */
int gb_key_name(char *buf, size_t cap, uint64_t index);

/*
 * Formats the request head for <op> on <key> (value of <size> bytes for a
 * set) into <buf>; the value and then gb_req_tail() follow it on the wire.
 * Returns the length, or 0 when <cap> is too small.
 */
size_t gb_req_head(char *buf, size_t cap, enum gb_proto proto, enum gb_op op,
		   const char *key, uint64_t size, const char *host_hdr,
		   const char *prefix);
const char *gb_req_tail(enum gb_proto proto, enum gb_op op);

/* Readies <r> for the answer to <op> on <key> (kept by reference). */
void gb_resp_start(struct gb_resp *r, enum gb_proto proto, enum gb_op op,
		   const char *key);

/*
 * Consumes up to <n> bytes of <p>; body bytes of a hit go to <sink>.
 * Returns the bytes consumed and sets *<out> to GB_RESP_MORE while the
 * answer is incomplete, else to its outcome (bytes after it are not
 * consumed).  On GB_RESP_ERROR and GB_RESP_PROTO, r->msg says why.
 */
size_t gb_resp_feed(struct gb_resp *r, const char *p, size_t n,
		    gb_body_sink sink, void *ctx, enum gb_outcome *out);

#endif
