/*
 * A hostile nginx worker against goblin-store's ring-op decoder.
 * sources: t/unit/link_local.c storaged/link/link_conn.c storaged/link/link_direct.c storaged/link/link_ops.c storaged/link/link_attr.c storaged/link/link_server.c storaged/loop.c storaged/stats.c storaged/options.c storaged/options_check.c shared/ring.c libgoblin
 *
 * The input is a script of commands for one worker attached to the real
 * link server (t/unit/link_local.h: no socket, no thread) over a small RAM-only
 * engine: submissions with fuzzer-chosen fields (handles and buffers
 * either ones the daemon handed out or raw values), rounds of the
 * server, reaping completions, giving rx buffers back, and scribbling on
 * the shared queue indices.  Every PUT body is a pattern of its key and
 * offset, so every byte the daemon stages or holds in the head region is
 * checked.  The daemon must never crash, stage a buffer twice, return a
 * tx buffer it did not hold, or hand out a wrong byte; and once the
 * worker is gone, no pin may remain.
 *
 * FUZZ_RING_VERBOSE=1 prints the ring's counters after each input.
 *
 * Input: byte 0 geometry, then commands (the low 3 bits of a byte):
 *   0-3  submit: op byte, then its fields (see submit())
 *   4    a server round          5  reap completions
 *   6    BUFREL every rx buffer held     7  write a queue index
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "goblin.h"
#include "log.h"
#include "options.h"
#include "ring.h"
#include "../unit/link_local.h"

#define NKEYS		4
#define NHANDLES	64

struct input {
	const uint8_t *p;
	size_t left;
};

struct tracked {
	uint32_t id;
	uint8_t key;
	uint8_t writer;
	uint64_t given;		/* writer: bytes handed over */
};

static struct gs_engine *engine;
static struct gs_io *io;
static struct link_server *srv;
static const uint8_t *region;
static uint64_t region_size;

/* one input's worker */
static struct ring w;
static uint64_t ud;
static uint8_t sub_key[4096];		/* key of submission ud & 4095 */
static unsigned sub_blind[4096];	/* blind_releases when submitted */
static uint32_t sub_attr[4096];		/* WOPEN's attr_len */
static unsigned blind_releases;		/* RELEASEs of handles not reaped */
static bool raw_keys;
static bool cq_scribbled;		/* our own CQ reads mean nothing now */
static int live;
static struct tracked hs[NHANDLES];
static unsigned nhs;
static uint32_t held[RING_BUFS_MAX];	/* rx buffers we hold */
static unsigned nheld;
static uint8_t rx_ours[RING_BUFS_MAX];
static unsigned rx_blind[RING_BUFS_MAX];	/* BUFRELs before we saw it */
/* WDATAs sent per tx buffer and not yet TXDONE: a count, since the fuzzer
 * may reuse a buffer whose TXDONE it has not reaped yet (the daemon took
 * it back already, so it accepts it again) */
static uint32_t tx_daemon[RING_BUFS_MAX];

static uint8_t pattern(unsigned key, uint64_t off)
{
	return (uint8_t)(off * 31 + key * 101 + (off >> 8));
}

static uint64_t rd(struct input *in, unsigned bytes)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < bytes && in->left; i++, in->left--)
		v |= (uint64_t)*in->p++ << (8 * i);
	return v;
}

static struct tracked *track_find(uint32_t id)
{
	for (unsigned i = nhs; i-- > 0;)
		if (hs[i].id == id)
			return &hs[i];
	return NULL;
}

static void track_add(uint32_t id, uint8_t key, uint8_t writer)
{
	struct tracked *t = track_find(id);

	if (!t) {
		if (nhs == NHANDLES)
			memmove(hs, hs + 1, --nhs * sizeof(*hs));
		t = &hs[nhs++];
	}
	*t = (struct tracked){ .id = id, .key = key, .writer = writer };
}

static void fail(const char *what, const struct ring_cqe *c)
{
	fprintf(stderr, "fuzz_ring: %s (op %u res %d handle %#x buf %u off %llu len %llu)\n",
		what, c->op, c->res, c->handle, c->buf,
		(unsigned long long)c->off, (unsigned long long)c->len);
	abort();
}

/* The bytes [off, off+len) at <p> are object <key>'s. */
static void check_bytes(const uint8_t *p, unsigned key, uint64_t off,
			uint64_t len, const struct ring_cqe *c)
{
	for (uint64_t i = 0; i < len; i++)
		if (p[i] != pattern(key, off + i))
			fail("wrong byte", c);
}

/* Rx buffer <c->buf> is ours now (DATA, STATS, LOOKUP_ATTR): whether its
 * bytes are the staging's to check (see below). */
static bool take_rx(const struct ring_cqe *c)
{
	bool verify;

	if (c->buf >= w.n_rx || c->len > w.buf_size)
		fail("bad rx buffer", c);
	/* staged twice: legal only if we gave it back blind before reaping
	 * the completion that brought it, and then only the last staging's
	 * bytes are there */
	verify = !rx_blind[c->buf];
	if (rx_ours[c->buf]) {
		if (!rx_blind[c->buf])
			fail("rx buffer staged twice", c);
		verify = --rx_blind[c->buf] == 0;
	} else {
		rx_ours[c->buf] = 1;
		held[nheld++] = c->buf;
	}
	return verify;
}

static void reap(void)
{
	struct ring_cqe c;
	struct tracked *t;
	bool verify;

	while (ring_cq_pop(&w, &c) == 1) {
		if (cq_scribbled)
			continue;
		if (log_level >= LOG_INFO)
			fprintf(stderr, "cqe op %u res %d handle %#x buf %u off %llu len %llu\n",
				c.op, c.res, c.handle, c.buf,
				(unsigned long long)c.off,
				(unsigned long long)c.len);
		switch (c.op) {
		case RING_OP_LOOKUP:
			if (c.res && c.buf != RING_NO_BUF)
				fail("failed LOOKUP with a buffer", &c);
			if (c.res)
				break;
			if (c.meta.attr_len > RING_ATTR_MAX)
				fail("attributes over RING_ATTR_MAX", &c);
			if (c.buf != RING_NO_BUF)
				take_rx(&c);
			if (c.meta.head_len > c.meta.size ||
			    c.meta.head_off > region_size ||
			    c.meta.head_len > region_size - c.meta.head_off)
				fail("head outside the region", &c);
			track_add(c.handle, sub_key[c.user_data & 4095], 0);
			/* the head is checked where it lies while it is
			 * surely pinned: a blind RELEASE may have hit it */
			if (live && sub_key[c.user_data & 4095] < NKEYS &&
			    sub_blind[c.user_data & 4095] == blind_releases)
				check_bytes(region + c.meta.head_off,
					    sub_key[c.user_data & 4095], 0,
					    c.meta.head_len, &c);
			break;
		case RING_OP_WOPEN:
			if (!c.res)
				track_add(c.handle, sub_key[c.user_data & 4095], 1);
			/* the value's first byte comes after the attributes */
			if (!c.res)
				track_find(c.handle)->given =
					-(uint64_t)sub_attr[c.user_data & 4095];
			break;
		case RING_OP_DATA:
		case RING_OP_STATS:
			if (c.op == RING_OP_STATS && c.res)
				break;
			verify = take_rx(&c);
			t = track_find(c.handle);
			if (c.op == RING_OP_DATA && t && !t->writer &&
			    t->key < NKEYS && verify)
				check_bytes((uint8_t *)ring_rx_buf(&w, c.buf),
					    t->key, c.off, c.len, &c);
			break;
		case RING_OP_TXDONE:
		case RING_OP_SETATTR:
			if (c.buf >= w.n_tx || !tx_daemon[c.buf])
				fail("tx buffer returned it did not hold", &c);
			tx_daemon[c.buf]--;
			break;
		case RING_OP_READ:
		case RING_OP_WFINISH:
		case RING_OP_DELETE:
			break;
		default:
			fail("unknown completion", &c);
		}
	}
}

/* A full SQ: let the daemon take some, then try once more. */
static void push(struct ring_sqe *e)
{
	if (log_level >= LOG_INFO)
		fprintf(stderr, "sqe op %u klen %u handle %#x buf %u off %llu len %llu grant %llu\n",
			e->op, e->klen, e->handle, e->buf,
			(unsigned long long)e->off, (unsigned long long)e->len,
			(unsigned long long)e->grant);
	if (ring_sq_push(&w, e) == 0)
		return;
	link_local_run(srv);
	reap();
	ring_sq_push(&w, e);
}

static uint64_t pick_u64(struct input *in)
{
	static const uint64_t table[] = {
		0, 1, 2, 100, 4095, 4096, 65536, 262143, 262144, 262145,
		1 << 20, (1 << 20) + 1, UINT64_MAX, UINT64_MAX - 1, 1ull << 63,
	};
	uint8_t sel = (uint8_t)rd(in, 1);

	if (sel < 16 * 15)
		return table[sel % 15];
	return rd(in, 8);
}

static uint32_t pick_handle(struct input *in)
{
	uint8_t sel = (uint8_t)rd(in, 1);

	if (sel < 224)
		return nhs ? hs[sel % nhs].id : sel;
	return (uint32_t)rd(in, 4);
}

static void submit(struct input *in)
{
	struct ring_sqe e;
	struct tracked *t;
	uint8_t ksel, bsel;
	uint64_t n;

	memset(&e, 0, sizeof(e));
	e.user_data = ++ud;
	e.op = (uint8_t)rd(in, 1);
	if (e.op < 240)
		e.op = e.op % (RING_OP_SETATTR + 1);
	ksel = (uint8_t)rd(in, 1);
	sub_key[ud & 4095] = ksel < 240 ? ksel % NKEYS : NKEYS;
	sub_blind[ud & 4095] = blind_releases;
	if (ksel < 240) {
		e.klen = (uint16_t)snprintf(e.key, sizeof(e.key), "key%u",
					    ksel % NKEYS);
	} else {
		e.klen = (uint16_t)rd(in, 2);
		memset(e.key, 'x', sizeof(e.key));
		raw_keys = true;
	}
	e.handle = pick_handle(in);
	if (e.op == RING_OP_RELEASE && !track_find(e.handle))
		blind_releases++;
	e.off = pick_u64(in);
	e.len = pick_u64(in);
	e.grant = pick_u64(in);
	e.flags = (uint32_t)rd(in, 1);
	/* from the same byte: LOOKUP_ATTR and the others, WFINISH's cond (an
	 * unknown one too) */
	e.opflags = e.flags & 7;
	e.cond = (uint8_t)((e.flags >> 3) % (RING_IF_CAS + 2));
	sub_attr[ud & 4095] = 0;
	e.exptime = (int64_t)pick_u64(in);
	bsel = (uint8_t)rd(in, 1);

	switch (e.op) {
	case RING_OP_BUFREL:
		if (bsel < 224 && nheld) {
			unsigned i = bsel % nheld;

			e.buf = held[i];
			held[i] = held[--nheld];
			rx_ours[e.buf] = 0;
		} else {
			e.buf = bsel < 224 ? bsel : (uint32_t)rd(in, 2);
			if (e.buf < w.n_rx && !rx_ours[e.buf])
				rx_blind[e.buf]++;
			if (e.buf < w.n_rx && rx_ours[e.buf]) {
				rx_ours[e.buf] = 0;
				for (unsigned i = 0; i < nheld; i++) {
					if (held[i] == e.buf) {
						held[i] = held[--nheld];
						break;
					}
				}
			}
		}
		break;
	case RING_OP_WDATA:
		e.buf = bsel < 224 ? bsel % w.n_tx : (uint32_t)rd(in, 2);
		e.len = e.len % (w.buf_size + 2);
		t = track_find(e.handle);
		if (e.buf < w.n_tx) {
			/* the body is the key's pattern at the writer's offset */
			n = e.len < w.buf_size ? e.len : w.buf_size;
			for (uint64_t i = 0; i < n; i++)
				ring_tx_buf(&w, e.buf)[i] = (char)pattern(
					t ? t->key : 0, (t ? t->given : 0) + i);
			if (t && t->writer)
				t->given += e.len;
			tx_daemon[e.buf]++;
		}
		break;
	case RING_OP_WOPEN:
		e.attr_len = (uint32_t)(e.grant % (RING_ATTR_MAX + 2));
		sub_attr[ud & 4095] = e.attr_len;
		e.buf = bsel;
		break;
	case RING_OP_SETATTR:
		e.buf = bsel < 224 ? bsel % w.n_tx : (uint32_t)rd(in, 2);
		e.len = e.len % (RING_ATTR_MAX + 2);
		if (e.buf < w.n_tx)
			tx_daemon[e.buf]++;
		break;
	default:
		e.buf = bsel;
	}
	push(&e);
}

static void scribble(struct input *in)
{
	uint32_t *idx[] = {
		&w.hdr->sq.head, &w.hdr->sq.tail, &w.hdr->sq.wait,
		&w.hdr->cq.head, &w.hdr->cq.tail, &w.hdr->cq.wait,
	};
	uint8_t which = (uint8_t)rd(in, 1) % 6;
	uint32_t v = (uint32_t)rd(in, 4);

	__atomic_store_n(idx[which], v, __ATOMIC_RELEASE);
	cq_scribbled |= which >= 3;
}

static void setup(void)
{
	struct gs_config cfg;
	char err[256];

	log_level = getenv("FUZZ_RING_VERBOSE") ? LOG_INFO : -1;
	gs_config_init(&cfg);
	cfg.memory = 4 << 20;
	cfg.sub_memory = 2 << 20;
	cfg.ram_head = 1 << 20;
	cfg.max_object = 1 << 20;
	cfg.no_mlock = true;
	if (gs_engine_open(&engine, &cfg, err, sizeof(err)) ||
	    gs_io_create(engine, &io) || link_local_create(engine, io, &srv)) {
		fprintf(stderr, "fuzz_ring: setup: %s\n", err);
		abort();
	}
	region_size = gs_engine_region_size(engine);
	region = mmap(NULL, region_size, PROT_READ, MAP_SHARED,
		      gs_engine_region_fd(engine), 0);
	if (region == MAP_FAILED)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = { data, size };
	struct ring_hello h;
	char key[RING_KEY_MAX];
	struct stat st;
	uint8_t g;
	int fd;

	if (!engine)
		setup();
	g = (uint8_t)rd(&in, 1);
	memset(&h, 0, sizeof(h));
	h.sq_entries = 16 << (g & 1);
	h.n_rx = 2 + (g >> 1 & 3);
	h.n_tx = 2 + (g >> 3 & 3);
	/* the ring's size is its memfd's */
	if (link_local_attach(srv, &h, &fd) || fstat(fd, &st) ||
	    ring_attach(&w, fd, (uint64_t)st.st_size))
		abort();
	ud = 0;
	nhs = nheld = 0;
	blind_releases = 0;
	cq_scribbled = false;
	live = 1;
	memset(rx_ours, 0, sizeof(rx_ours));
	memset(rx_blind, 0, sizeof(rx_blind));
	memset(tx_daemon, 0, sizeof(tx_daemon));

	while (in.left && live) {
		switch (rd(&in, 1) & 7) {
		case 4:
			live = link_local_run(srv);
			break;
		case 5:
			reap();
			break;
		case 6:
			for (unsigned i = 0; i < nheld; i++) {
				struct ring_sqe e = { .user_data = ++ud,
						      .op = RING_OP_BUFREL,
						      .buf = held[i] };

				rx_ours[held[i]] = 0;
				push(&e);
			}
			nheld = 0;
			break;
		case 7:
			scribble(&in);
			break;
		default:
			submit(&in);
		}
	}
	for (int i = 0; i < 8 && live; i++) {
		live = link_local_run(srv);
		reap();
	}
	link_local_drop(srv);
	if (getenv("FUZZ_RING_VERBOSE"))
		fprintf(stderr, "fuzz_ring: stores %llu reads %llu read_bytes %llu lookup_hits %llu busy %llu protocol_errors %llu\n",
			(unsigned long long)link_local_stat(srv, "ring_stores"),
			(unsigned long long)link_local_stat(srv, "ring_reads"),
			(unsigned long long)link_local_stat(srv, "ring_read_bytes"),
			(unsigned long long)link_local_stat(srv, "ring_lookup_hits"),
			(unsigned long long)link_local_stat(srv, "ring_busy"),
			(unsigned long long)link_local_stat(srv, "ring_protocol_errors"));
	if (link_local_stat(srv, "ring_pins") != 0 ||
	    link_local_stat(srv, "ring_connections") != 0) {
		fprintf(stderr, "fuzz_ring: %llu pins left after the worker went\n",
			(unsigned long long)link_local_stat(srv, "ring_pins"));
		abort();
	}
	ring_unmap(&w);
	for (unsigned k = 0; k < NKEYS; k++) {
		snprintf(key, sizeof(key), "key%u", k);
		gs_delete(engine, key, strlen(key));
	}
	memset(key, 'x', sizeof(key));
	for (unsigned n = 1; raw_keys && n <= RING_KEY_MAX; n++)
		gs_delete(engine, key, n);
	raw_keys = false;
	return 0;
}
