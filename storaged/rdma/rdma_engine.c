/*
 * The engine as an RDMA object source (rdma.h): gs_lookup pins the
 * object; its RAM head goes out from a second mapping of the region's
 * memfd (registered once by the server: the bytes are the engine's, at
 * gs_meta.head_off, as the nginx link reads them; mapped read-only, the
 * region's memfd is sealed against writes); the rest streams with
 * gs_stream_open_into() straight into the connection's staging buffers,
 * held until each WRITE completes (gs_stream_hold/release).  A closed
 * stream's buffers stay the kernel's until its released callback: until
 * then open() on them answers -EAGAIN and busy() says so.
 * Everything runs on the thread that owns <io>.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#include "clock.h"
#include "goblin.h"
#include "rdma.h"

#define ENG_STAGES	4u
#define ENG_DRAIN_MS	10000

struct busy {
	const void *buf0;		/* the staging buffers' first */
	struct rdma_engine *es;
	struct busy *next;
};

struct rdma_engine {
	struct gs_engine *e;
	struct gs_io *io;
	char *map;
	size_t map_len;
	struct busy *busy;
};

struct eitem {
	struct rdma_engine *es;
	struct gs_obj *obj;
	struct gs_stream *s;
	const char *head;
	uint64_t head_len, pos;
};

static struct busy *busy_find(struct rdma_engine *es, const void *buf0)
{
	struct busy *b;

	for (b = es->busy; b && b->buf0 != buf0; b = b->next)
		;
	return b;
}

static void eng_released(void *arg)
{
	struct busy *b = arg, **pp;

	for (pp = &b->es->busy; *pp; pp = &(*pp)->next) {
		if (*pp == b) {
			*pp = b->next;
			break;
		}
	}
	free(b);
}

static void eng_wake(void *arg)
{
	(void)arg;	/* the server polls every connection each step */
}

/* The tail [head_len, size) of <m>'s object streaming into <bufs>. */
static int eng_stream(struct rdma_engine *es, struct eitem *m,
		      uint64_t size, void *const *bufs)
{
	struct busy *b = calloc(1, sizeof(*b));
	int r;

	if (!b)
		return -ENOMEM;
	b->buf0 = bufs[0];
	b->es = es;
	r = gs_stream_open_into(es->io, m->obj, m->head_len,
				size - m->head_len, bufs, ENG_STAGES,
				eng_wake, eng_released, b, &m->s);
	if (r) {
		free(b);
		return r;
	}
	b->next = es->busy;
	es->busy = b;
	gs_stream_hold(m->s);
	return 0;
}

static int eng_open(void *arg, const char *key, size_t klen,
		    void *const *bufs, struct rdma_item *it)
{
	struct rdma_engine *es = arg;
	const struct gs_meta *meta;
	struct eitem *m;
	int r;

	if (busy_find(es, bufs[0]))
		return -EAGAIN;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->es = es;
	r = gs_lookup(es->e, key, klen, &m->obj);
	if (r)
		goto out_free;
	meta = gs_obj_meta(m->obj);
	gs_obj_head(es->e, m->obj, &m->head_len);
	if (m->head_len > meta->size)
		m->head_len = meta->size;
	if (m->head_len && (meta->head_off > es->map_len ||
			    m->head_len > es->map_len - meta->head_off)) {
		r = -EIO;
		goto out_put;
	}
	m->head = es->map + meta->head_off;
	if (m->head_len < meta->size) {
		r = eng_stream(es, m, meta->size, bufs);
		if (r)
			goto out_put;
	}
	it->flags = meta->flags;
	it->size = meta->size;
	it->priv = m;
	return 0;
out_put:
	gs_obj_put(es->e, &m->obj);
out_free:
	free(m);
	return r;
}

/* <p> in the engine's mapping of the region as the same byte of ours (the
 * registered one); a pointer into a staging buffer as it is. */
static const void *eng_remap(const struct rdma_engine *es, const void *p)
{
	const char *q = p, *base = gs_engine_region_base(es->e);

	if (q < base || q >= base + gs_engine_region_size(es->e))
		return p;
	return es->map + (q - base);
}

static int eng_peek(struct rdma_item *it, const void **data, size_t *len)
{
	struct eitem *m = it->priv;
	int r;

	if (m->pos < m->head_len) {
		*data = m->head + m->pos;
		*len = (size_t)(m->head_len - m->pos);
		return 0;
	}
	if (!m->s) {
		*len = 0;
		return 0;
	}
	r = gs_stream_peek(m->s, data, len);
	if (!r && *len)
		*data = eng_remap(m->es, *data);
	return r;
}

static void eng_consume(struct rdma_item *it, size_t n)
{
	struct eitem *m = it->priv;

	if (m->pos >= m->head_len)
		gs_stream_consume(m->s, n);
	m->pos += n;
}

static void eng_release(struct rdma_item *it, uint64_t off)
{
	struct eitem *m = it->priv;

	if (m->s && off > m->head_len)
		gs_stream_release(m->s, off);
}

static void eng_close(struct rdma_item *it)
{
	struct eitem *m = it->priv;

	if (m->s)
		gs_stream_close(&m->s);
	gs_obj_put(m->es->e, &m->obj);
	free(m);
	it->priv = NULL;
}

static int eng_progress(void *arg)
{
	struct rdma_engine *es = arg;

	return gs_io_run(es->io, false);
}

static int eng_fd(void *arg)
{
	struct rdma_engine *es = arg;

	return gs_io_fd(es->io);
}

static int eng_busy(void *arg, const void *buf0)
{
	return busy_find(arg, buf0) != NULL;
}

const struct rdma_source_ops rdma_engine_ops = {
	.nstages = ENG_STAGES,
	.stage_size = GS_IO_BUFFER,
	.open = eng_open,
	.peek = eng_peek,
	.consume = eng_consume,
	.release = eng_release,
	.close = eng_close,
	.progress = eng_progress,
	.fd = eng_fd,
	.busy = eng_busy,
};

int rdma_engine_create(struct gs_engine *e, struct gs_io *io,
		       struct rdma_engine **esp)
{
	struct rdma_engine *es = calloc(1, sizeof(*es));

	if (!es)
		return -ENOMEM;
	es->e = e;
	es->io = io;
	es->map_len = (size_t)gs_engine_region_size(e);
	es->map = mmap(NULL, es->map_len, PROT_READ, MAP_SHARED,
		       gs_engine_region_fd(e), 0);
	if (es->map == MAP_FAILED) {
		free(es);
		return -errno;
	}
	*esp = es;
	return 0;
}

void *rdma_engine_region(const struct rdma_engine *es, size_t *len)
{
	*len = es->map_len;
	return es->map;
}

void rdma_engine_destroy(struct rdma_engine **esp)
{
	struct rdma_engine *es = *esp;
	uint64_t end;

	if (!es)
		return;
	/* closed streams' buffers: wait for the kernel to let go */
	end = mono_ms() + ENG_DRAIN_MS;
	while (es->busy && mono_ms() < end) {
		struct pollfd pfd = { .fd = gs_io_fd(es->io), .events = POLLIN };

		if (gs_io_run(es->io, false) < 0)
			break;
		if (es->busy)
			poll(&pfd, 1, 10);
	}
	munmap(es->map, es->map_len);
	*esp = NULL;
	if (!es->busy)
		free(es);	/* else a late released() still needs it */
}
