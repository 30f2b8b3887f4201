/*
 * The HDD queue (--hdd-queue, uring.c): with one run in flight, streams
 * that read ahead on the HDD queue their chunks, several each; a request
 * that comes in then has its first HDD chunk sent after at most one run of
 * each of them (its share: their queued chunks leave as one run, one seek
 * each), not behind every chunk queued before it as in a FIFO, and that
 * chunk leaves with the chunks that follow it on the disk (one seek).
 * Every chunk is read once (no read-ahead lost or repeated) and every byte
 * compared with what was written.  A stream that closes drops its reads
 * still queued, unsent.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "goblin.h"
#include "check.h"
#include "engine_util.h"
#include "stream-t.h"
#include "uring.h"

#define SIZE	(12u << 20)
#define OFF	(4u << 20)		/* past head and prefix: HDD chunks */
#define OTHERS	3			/* streams reading ahead before X */
#define BUFS	4u			/* cfg.io_buffers */

static char tmpdir[] = "/var/tmp/goblin-test-hddq.XXXXXX";

struct reader {
	struct gs_stream *s;
	char *want;			/* the value, from offset 0 */
	uint64_t pos;
};

/* Whether a read of chunk <c> for <owner> waits in the HDD queue. */
static bool queued(struct gs_io *io, const void *owner, uint32_t c)
{
	for (struct list *n = io->hdd.queue.next; n != &io->hdd.queue;
	     n = n->next) {
		struct io_op *op = list_entry(n, struct io_op, qnode);

		if (op->owner == owner && op->chunk == c)
			return true;
	}
	return false;
}

/* How many reads of <owner> wait in the HDD queue. */
static unsigned queued_of(struct gs_io *io, const void *owner)
{
	unsigned n = 0;

	for (struct list *l = io->hdd.queue.next; l != &io->hdd.queue;
	     l = l->next)
		n += list_entry(l, struct io_op, qnode)->owner == owner;
	return n;
}

/* How many reads of the OTHERS readers of <r> wait in the HDD queue
 * (*<owners>: of how many readers). */
static unsigned queued_others(struct gs_io *io, const struct reader *r,
			      unsigned *owners)
{
	unsigned n = 0;

	*owners = 0;
	for (int i = 0; i < OTHERS; i++) {
		unsigned k = queued_of(io, r[i].s);

		n += k;
		*owners += k > 0;
	}
	return n;
}

/* The HDD queue of <io>, a line per read (reader, chunk, due, disk
 * offset): what a failed check prints. */
static char *queue_dump(struct gs_io *io, const struct reader *r)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	for (struct list *l = io->hdd.queue.next; l != &io->hdd.queue;
	     l = l->next) {
		const struct io_op *op = list_entry(l, struct io_op, qnode);
		int who = -1;

		for (int i = 0; i <= OTHERS; i++)
			who = r[i].s == op->owner ? i : who;
		fprintf(f, "  queued: reader %d chunk %u due %llu us at %llu\n",
			who, op->chunk, (unsigned long long)op->due_ns / 1000,
			(unsigned long long)op->pieces[0].piece.off);
	}
	fclose(f);
	return buf;
}

static int reader_open(struct gs_engine *e, struct gs_io *io,
		       struct reader *r, int i)
{
	char key[16];
	struct gs_obj *obj;
	int ret;

	snprintf(key, sizeof(key), "obj-%d", i);
	ret = gs_lookup(e, key, strlen(key), &obj);
	if (ret < 0)
		return ret;
	r->pos = OFF;
	ret = gs_stream_open(io, obj, OFF, UINT64_MAX, on_wake, NULL, &r->s);
	gs_obj_put(e, &obj);
	return ret;
}

/* Takes the next chunk of <r> (waits for it): 1, 0 at its end, or a
 * negative errno (-EILSEQ: a byte differs). */
static int reader_step(struct gs_io *io, struct reader *r)
{
	const void *p;
	size_t len;
	int ret;

	while ((ret = gs_stream_peek(r->s, &p, &len)) == -EAGAIN)
		gs_io_run(io, true);
	if (ret < 0)
		return ret;
	if (!len)
		return gs_stream_left(r->s) ? -EPIPE : 0;
	if (memcmp(p, r->want + r->pos, len))
		return -EILSEQ;
	gs_stream_consume(r->s, len);
	r->pos += len;
	return 1;
}

/* Takes the chunks of <r> landed already, never waiting: how many, or a
 * negative errno. */
static int reader_take(struct reader *r)
{
	const void *p;
	size_t len;
	int n = 0, ret;

	while ((ret = gs_stream_peek(r->s, &p, &len)) == 0 && len) {
		if (memcmp(p, r->want + r->pos, len))
			return -EILSEQ;
		gs_stream_consume(r->s, len);
		r->pos += len;
		n++;
	}
	return ret == -EAGAIN || ret == 0 ? n : ret;
}

static struct gs_stats stats(struct gs_engine *e)
{
	struct gs_stats st;

	gs_stats(e, &st);
	return st;
}

/* The chunks of an object from OFF. */
static uint32_t chunks_from_off(struct gs_engine *e)
{
	struct gs_obj *obj;
	uint32_t first, last;

	if (gs_lookup(e, "obj-0", 5, &obj) < 0)
		return 0;
	chunk_span(obj, OFF, SIZE, &first, &last);
	gs_obj_put(e, &obj);
	return last - first;
}

static void fairness(struct gs_engine *e, struct gs_io *io,
		     struct reader *r)
{
	uint64_t reads = stats(e).disk_reads, sent;
	unsigned ops, owners;
	struct gs_stream *x;
	char *before;
	uint32_t c0;
	bool more;

	for (int i = 0; i < OTHERS; i++)
		CHECK(reader_open(e, io, &r[i], i) == 0, "open %d", i);
	while (gs_io_pending(io))
		gs_io_run(io, true);
	for (int i = 0; i < OTHERS; i++)
		CHECK(reader_take(&r[i]) >= 2, "other %d took its window", i);
	ops = queued_others(io, r, &owners);
	CHECK(owners >= OTHERS - 1 && ops > owners && io->hdd.runs == 1,
	      "others' read-ahead queued: %u reads of %u readers, one run in "
	      "flight (%u)", ops, owners, io->hdd.runs);
	sent = io->hdd.sent;
	CHECK(reader_open(e, io, &r[OTHERS], OTHERS) == 0, "open X");
	before = queue_dump(io, r);
	x = r[OTHERS].s;
	c0 = x->first;
	CHECK(x->norder && x->order[0] == c0 && queued(io, x, c0),
	      "X's first chunk queued");
	while (queued(io, x, c0))
		gs_io_run(io, true);
	if (io->hdd.sent - sent > owners + 1)
		fputs(before, stderr);
	free(before);
	CHECK(io->hdd.sent - sent <= owners + 1,
	      "X's first chunk sent in run %llu, after at most one run of each "
	      "of the %u readers queued before it (%u reads)",
	      (unsigned long long)(io->hdd.sent - sent), owners, ops);
	CHECK(!queued(io, x, c0 + 1) && x->slots[1].state != CH_IDLE,
	      "the chunk after it on the disk left with it (one seek)");
	do {
		more = false;
		for (int i = 0; i <= OTHERS; i++) {
			int ret = reader_step(io, &r[i]);

			CHECK(ret >= 0, "reader %d: %d", i, ret);
			more = more || ret > 0;
		}
	} while (more);
	for (int i = 0; i <= OTHERS; i++) {
		CHECK(r[i].pos == SIZE, "reader %d whole: %llu", i,
		      (unsigned long long)r[i].pos);
		gs_stream_close(&r[i].s);
	}
	while (gs_io_pending(io))
		gs_io_run(io, true);
	CHECK(stats(e).disk_reads - reads == (OTHERS + 1) * chunks_from_off(e),
	      "each chunk read once: %llu reads of %u chunks",
	      (unsigned long long)(stats(e).disk_reads - reads),
	      (OTHERS + 1) * chunks_from_off(e));
	CHECK(io->hdd.runs == 0 && list_empty(&io->hdd.queue), "queue empty");
	CHECK(io->hdd.sent < (uint64_t)(OTHERS + 1) * chunks_from_off(e),
	      "runs of several chunks: %llu runs",
	      (unsigned long long)io->hdd.sent);
}

/* Readers that close with reads queued drop them unsent (hdd_cancels),
 * and the one that stays reads on, whole. */
static void cancel(struct gs_engine *e, struct gs_io *io, struct reader *r)
{
	uint64_t cancels = stats(e).hdd_cancels;
	unsigned ops, owners, dropped = 0;
	int ret;

	for (int i = 0; i < OTHERS; i++)
		CHECK(reader_open(e, io, &r[i], i) == 0, "open %d", i);
	while (gs_io_pending(io))
		gs_io_run(io, true);
	/* each took its window: its next read-ahead queues */
	for (int i = 0; i < OTHERS; i++)
		CHECK(reader_take(&r[i]) >= 1, "reader %d took a chunk", i);
	ops = queued_others(io, r, &owners);
	CHECK(ops > 0, "reads queued: %u of %u readers", ops, owners);
	for (int i = 1; i < OTHERS; i++) {
		const void *owner = r[i].s;
		unsigned before = queued_of(io, owner);

		gs_stream_close(&r[i].s);
		CHECK(queued_of(io, owner) == 0, "reader %d: none left queued",
		      i);
		dropped += before;
	}
	CHECK(dropped > 0 && stats(e).hdd_cancels - cancels == dropped,
	      "closed readers' queued reads dropped: %u, hdd_cancels +%llu",
	      dropped, (unsigned long long)(stats(e).hdd_cancels - cancels));
	while ((ret = reader_step(io, &r[0])) > 0)
		;
	CHECK(ret == 0 && r[0].pos == SIZE, "the reader left whole: %d at %llu",
	      ret, (unsigned long long)r[0].pos);
	gs_stream_close(&r[0].s);
	while (gs_io_pending(io))
		gs_io_run(io, true);
	CHECK(io->hdd.runs == 0 && list_empty(&io->hdd.queue), "queue empty");
}

int main(void)
{
	struct reader r[OTHERS + 1];
	struct gs_config cfg;
	struct gs_engine *e;
	struct gs_io *io;
	struct gs_stats st;
	char ssd[300], hdd[300];
	char *filler = malloc(300u << 10);

	if (!filler || scratch_make(tmpdir) < 0)
		return 1;
	/* every head slot taken by a filler: the RAM chunk cache holds
	 * nothing and every chunk is read */
	store_config(&cfg, 4 << 20, 2 << 20, 64 << 20, 128 << 20);
	cfg.io_buffers = BUFS;
	cfg.io_streams = OTHERS + 1;
	cfg.hdd_queue = 1;
	store_two_pools(&cfg, tmpdir, ssd, hdd, sizeof(ssd));
	if (store_open(&e, &cfg) < 0)
		return 1;
	CHECK(gs_io_create(e, &io) == 0, "io");
	for (int i = 0; i <= OTHERS; i++) {
		char key[16];

		r[i] = (struct reader){ .want = malloc(SIZE) };
		if (!r[i].want)
			return 1;
		fill(r[i].want, SIZE, 11 + i);
		snprintf(key, sizeof(key), "obj-%d", i);
		CHECK(put_if(io, key, r[i].want, SIZE, 0, GS_IF_ANY, 0, NULL) == 0,
		      "put %s", key);
	}
	fill(filler, 300u << 10, 5);
	for (int i = 0; i < 40; i++) {
		char key[24];

		snprintf(key, sizeof(key), "filler-%d", i);
		CHECK(put_if(io, key, filler, 300u << 10, 0, GS_IF_ANY, 0, NULL) == 0,
		      "put %s", key);
	}
	fairness(e, io, r);
	cancel(e, io, r);
	st = stats(e);
	CHECK(st.checksum_errors == 0 && st.io_errors == 0, "errors");
	CHECK(st.readahead_reclaims == 0, "reclaims %llu",
	      (unsigned long long)st.readahead_reclaims);
	CHECK(st.pins == 0, "pins left %llu", (unsigned long long)st.pins);
	gs_io_destroy(&io);
	gs_engine_close(&e);
	for (int i = 0; i <= OTHERS; i++)
		free(r[i].want);
	free(filler);
	if (scratch_remove(tmpdir) < 0)
		failures++;
	return check_result();
}
