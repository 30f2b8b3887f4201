/*
 * The index journal (journal.h): opening it, appends and checkpoints.
 * Replay at start is in journal_replay.c, --sync-interval's thread in
 * journal_sync.c.
 *
 * Appends are plain buffered pwrite()s at the end, under e->lock, so they
 * land in sequence order; a failed one is truncated away at once.  A
 * checkpoint writes the live index to JOURNAL_TMP and renames it over the
 * journal: whatever the moment of a crash, one whole journal is there.
 * The one a grown journal asks for is taken in the background instead
 * (journal_bg.c, struct journal_bg); this file's, under e->lock
 * throughout, is for a clean stop, a salvage and a file system short of
 * room.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "attr.h"
#include "clock.h"
#include "engine.h"
#include "hook_points.h"
#include "journal.h"
#include "log.h"

#define CHECKPOINT_BUF	(1u << 20)

static uint64_t round8(uint64_t v)
{
	return (v + 7) & ~7ull;
}

uint64_t journal_rec_sum(const struct jrec *r)
{
	uint64_t seed;

	memcpy(&seed, r, sizeof(seed));
	return XXH3_64bits_withSeed((const char *)r + offsetof(struct jrec, seq),
				    r->len - offsetof(struct jrec, seq), seed);
}

uint64_t journal_hdr_sum(const struct jhdr *h)
{
	return XXH3_64bits(h, offsetof(struct jhdr, sum));
}

/* Journal bytes below which no checkpoint is weighed (--checkpoint-size). */
static uint64_t checkpoint_min(const struct gs_engine *e)
{
	return e->cfg.checkpoint_size ? e->cfg.checkpoint_size :
		JOURNAL_MIN_CHECKPOINT;
}

bool journal_obj_dead(const struct gs_engine *e, const struct gs_obj *obj,
		      int64_t now)
{
	if (obj->meta.exptime && obj->meta.exptime <= now)
		return true;
	return e->invalid_at && e->invalid_at <= now &&
	       obj->meta.mtime <= e->invalid_at;
}

int journal_pwrite_all(int fd, const void *p, size_t len, uint64_t off)
{
	while (len) {
		ssize_t n = pwrite(fd, p, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		p = (const char *)p + n;
		len -= n;
		off += n;
	}
	return 0;
}

void journal_hdr_fill(struct jhdr *h, uint64_t base_seq)
{
	memset(h, 0, sizeof(*h));
	memcpy(h->magic, JOURNAL_MAGIC, sizeof(h->magic));
	h->version = JOURNAL_VERSION;
	h->hdr_len = sizeof(*h);
	h->base_seq = base_seq;
	h->created = time(NULL);
	h->sum = journal_hdr_sum(h);
}

/* ---- records ---- */

size_t journal_put_len(const struct gs_engine *e, const struct gs_obj *obj)
{
	uint64_t len = sizeof(struct jrec) + sizeof(struct jput) +
		       round8(obj->klen) +
		       (uint64_t)obj->nchunks * sizeof(struct jchunk);

	if (!obj->nchunks) {
		if (obj->meta.size && !obj->has_head)
			return 0;
		len += round8(obj->meta.size);
	}
	if (obj->has_attr)
		len += sizeof(struct jattr) + round8(attr_len_of(e, obj));
	return len > UINT32_MAX ? 0 : len;
}

void journal_rec_seal(struct jrec *r, size_t len, enum jrec_kind kind,
		      size_t klen, uint64_t seq)
{
	r->len = len;
	r->kind = kind;
	r->klen = klen;
	r->zero = 0;
	r->seq = seq;
	r->sum = journal_rec_sum(r);
}

void journal_put_encode(const struct gs_engine *e, struct jrec *r, size_t len,
			const struct gs_obj *obj, uint64_t seq)
{
	struct jput *p = (struct jput *)(r + 1);
	char *key = (char *)(p + 1);
	struct jchunk *c = (struct jchunk *)(key + round8(obj->klen));

	*p = (struct jput){
		.size = obj->meta.size,
		.cas = obj->meta.cas,
		.exptime = obj->meta.exptime,
		.mtime = obj->meta.mtime,
		.flags = obj->meta.flags,
		.nchunks = obj->nchunks,
	};
	memcpy(key, obj->key, obj->klen);
	for (uint32_t i = 0; i < obj->nchunks; i++)
		c[i] = (struct jchunk){
			.addr = chunk_addr(obj, i),
			.sum = obj_chunks(obj)[i].sum,
			.len = obj_chunks(obj)[i].len,
			.tier = obj_chunks(obj)[i].tier,
		};
	if (!obj->nchunks && obj->meta.size)
		memcpy(c, obj_head_ptr(e, obj), obj->meta.size);
	if (obj->has_attr) {
		const struct attr *a = attr_of(e, obj);
		struct jattr *ja = (struct jattr *)((char *)r + len -
			sizeof(*ja) - round8(a->len));

		ja->len = a->len;
		memcpy(ja + 1, a->bytes, a->len);
	}
	journal_rec_seal(r, len, obj->has_attr ? JREC_PUTA : JREC_PUT, obj->klen,
			 seq);
}

/* The append buffer with room for <len> bytes, zeroed; NULL without
 * memory. */
static struct jrec *rec_buf(struct journal *j, size_t len)
{
	if (len > j->cap) {
		size_t cap = len > 2 * j->cap ? len : 2 * j->cap;
		void *b = realloc(j->buf, cap);

		if (!b)
			return NULL;
		j->buf = b;
		j->cap = cap;
	}
	memset(j->buf, 0, len);
	return j->buf;
}

/* What the next record, given <seq>, is filed under: <seq> when new, else
 * the next CAS (so every append has its own, strictly increasing). */
static uint64_t file_seq(struct gs_engine *e, struct journal *j, uint64_t seq)
{
	if (seq > j->last)
		return seq;
	seq = (j->last > e->next_cas ? j->last : e->next_cas) + 1;
	e->next_cas = seq;
	return seq;
}

static void publish_stats(struct gs_engine *e, const struct journal *j)
{
	__atomic_store_n(&e->st.journal_bytes, j->end, __ATOMIC_RELAXED);
	__atomic_store_n(&e->st.journal_records, j->records, __ATOMIC_RELAXED);
}

/* Writes the record in j->buf (<len> bytes, filed under <seq>). */
static int append(struct gs_engine *e, size_t len, uint64_t seq)
{
	struct journal *j = e->journal;
	/* only a PUT adds what may not fit: the others are small and few */
	uint8_t kind = ((const struct jrec *)j->buf)->kind;
	int ret = journal_room_make(e, len, kind != JREC_PUT &&
				    kind != JREC_PUTA && kind != JREC_ATTR);

	if (ret < 0)
		return ret;		/* logged and counted; nothing written */
	ret = journal_pwrite_all(j->fd, j->buf, len, j->end);
	if (ret < 0) {
		/* no torn record may be left in front of the next one */
		if (ftruncate(j->fd, j->end) < 0)
			log_err("%s: %s", j->path, strerror(errno));
		journal_room_reset(e);
		log_err("%s: append failed: %s", j->path, strerror(-ret));
		return ret;
	}
	__atomic_store_n(&j->end, j->end + len, __ATOMIC_RELEASE);
	j->records++;
	journal_bg_appended(e, j->buf, len);
	journal_shed_written(j);
	__atomic_store_n(&j->last, seq, __ATOMIC_SEQ_CST);
	publish_stats(e, j);
	if (j->syncing && __atomic_load_n(&j->idle, __ATOMIC_SEQ_CST)) {
		pthread_mutex_lock(&j->sync_lock);
		pthread_cond_signal(&j->tick);
		pthread_mutex_unlock(&j->sync_lock);
	}
	return 0;
}

/* Called at the start of every append, before its record is encoded: the
 * change the previous append filed is wholly applied to the index by then
 * (its caller still held e->lock), so a checkpoint taken here holds it, and
 * the record about to be appended goes into the new journal.  Weighing
 * after an append instead would snapshot the index without the change that
 * crossed the limit and discard its record with the old file. */
static void weigh_before_append(struct gs_engine *e, struct journal *j)
{
	if (j->end >= j->next_check)
		journal_weigh(e);
}

int journal_put(struct gs_engine *e, const struct gs_obj *obj)
{
	struct journal *j = e->journal;
	size_t len;
	struct jrec *r;
	uint64_t seq;

	if (!j)
		return 0;
	weigh_before_append(e, j);
	len = journal_put_len(e, obj);
	if (!len)
		return -EINVAL;
	r = rec_buf(j, len);
	if (!r)
		return -ENOMEM;
	seq = file_seq(e, j, obj->meta.cas);
	journal_put_encode(e, r, len, obj, seq);
	return append(e, len, seq);
}

int journal_del(struct gs_engine *e, const void *key, size_t klen,
		uint64_t seq)
{
	struct journal *j = e->journal;
	size_t len = sizeof(struct jrec) + round8(klen);
	struct jrec *r;

	if (!j)
		return 0;
	weigh_before_append(e, j);
	if (klen > GS_KEY_MAX)
		return -EINVAL;
	r = rec_buf(j, len);
	if (!r)
		return -ENOMEM;
	memcpy(r + 1, key, klen);
	seq = file_seq(e, j, seq);
	journal_rec_seal(r, len, JREC_DEL, klen, seq);
	return append(e, len, seq);
}

int journal_touch(struct gs_engine *e, const struct gs_obj *obj)
{
	struct journal *j = e->journal;
	size_t len = sizeof(struct jrec) + sizeof(struct jtouch) +
		     round8(obj->klen);
	struct jtouch *t;
	struct jrec *r;
	uint64_t seq;

	if (!j)
		return 0;
	weigh_before_append(e, j);
	r = rec_buf(j, len);
	if (!r)
		return -ENOMEM;
	t = (struct jtouch *)(r + 1);
	t->cas = obj->meta.cas;
	t->exptime = obj->meta.exptime;
	memcpy(t + 1, obj->key, obj->klen);
	seq = file_seq(e, j, 0);
	journal_rec_seal(r, len, JREC_TOUCH, obj->klen, seq);
	return append(e, len, seq);
}

int journal_setattr(struct gs_engine *e, const struct gs_obj *obj,
		    const void *p, size_t alen)
{
	struct journal *j = e->journal;
	size_t len = sizeof(struct jrec) + sizeof(struct jattr) +
		     round8(obj->klen) + round8(alen);
	struct jattr *a;
	struct jrec *r;
	uint64_t seq;

	if (!j)
		return 0;
	weigh_before_append(e, j);
	r = rec_buf(j, len);
	if (!r)
		return -ENOMEM;
	a = (struct jattr *)(r + 1);
	a->cas = obj->meta.cas;
	a->len = alen;
	memcpy(a + 1, obj->key, obj->klen);
	if (alen)
		memcpy((char *)(a + 1) + round8(obj->klen), p, alen);
	seq = file_seq(e, j, 0);
	journal_rec_seal(r, len, JREC_ATTR, obj->klen, seq);
	return append(e, len, seq);
}

int journal_flush(struct gs_engine *e, uint64_t seq, int64_t when)
{
	struct journal *j = e->journal;
	size_t len = sizeof(struct jrec) + sizeof(struct jflush);
	struct jflush *f;
	struct jrec *r;
	int ret;

	if (!j)
		return 0;
	weigh_before_append(e, j);
	r = rec_buf(j, len);
	if (!r)
		return -ENOMEM;
	f = (struct jflush *)(r + 1);
	f->seq = seq;
	f->when = when;
	f->time = time(NULL);
	seq = file_seq(e, j, seq);
	journal_rec_seal(r, len, JREC_FLUSH, 0, seq);
	ret = append(e, len, seq);
	if (ret == 0 && when <= f->time)
		journal_bg_flushed(e);
	return ret;
}

/* ---- checkpoints ---- */

/* A checkpoint being written: records gather in <buf>, written in order. */
struct cp_out {
	int fd;
	int err;
	char *buf;
	size_t pos, cap;
	uint64_t off;			/* file offset of buf[0] */
};

static void out_flush(struct cp_out *o)
{
	if (!o->err && o->pos)
		o->err = journal_pwrite_all(o->fd, o->buf, o->pos, o->off);
	o->off += o->pos;
	o->pos = 0;
}

/* <len> zeroed bytes at the end of the output; NULL on an error. */
static void *out_room(struct cp_out *o, size_t len)
{
	void *p;

	if (o->pos + len > o->cap)
		out_flush(o);
	if (len > o->cap) {
		p = realloc(o->buf, len);
		if (p) {
			o->buf = p;
			o->cap = len;
		} else {
			o->err = -ENOMEM;
		}
	}
	if (o->err)
		return NULL;
	p = o->buf + o->pos;
	memset(p, 0, len);
	o->pos += len;
	return p;
}

/* Writes the header and a record of every live object; returns how many
 * records, or -errno. */
static int64_t write_live(struct gs_engine *e, struct cp_out *o)
{
	int64_t now = time(NULL), n = 0;
	struct jhdr *h = out_room(o, sizeof(*h));
	struct jrec *r;

	if (h)
		journal_hdr_fill(h, e->next_cas);
	if (e->invalid_at > now) {	/* a flush_all for later */
		size_t len = sizeof(*r) + sizeof(struct jflush);
		struct jflush *f;

		r = out_room(o, len);
		if (r) {
			f = (struct jflush *)(r + 1);
			f->when = e->invalid_at;
			f->time = now;
			journal_rec_seal(r, len, JREC_FLUSH, 0, 0);
			n++;
		}
	}
	for (uint32_t i = 0; i < e->clock_len && !o->err; i++) {
		struct gs_obj *obj = e->clock[i];
		size_t len = journal_put_len(e, obj);

		journal_bg_mark(e, obj);
		if (!len || journal_obj_dead(e, obj, now))
			continue;
		r = out_room(o, len);
		if (r) {
			journal_put_encode(e, r, len, obj, obj->meta.cas);
			n++;
		}
	}
	out_flush(o);
	return o->err ? o->err : n;
}

/* Writes the live index to JOURNAL_TMP: its fd, or -errno (with the file
 * removed). */
static int write_checkpoint(struct gs_engine *e, bool sync, int64_t *nrec,
			    uint64_t *size)
{
	struct journal *j = e->journal;
	struct cp_out o = { .cap = CHECKPOINT_BUF };
	char err[512], label[4300];
	int64_t n;
	int fd;

	snprintf(label, sizeof(label), "%s.new", j->path);
	if (unlinkat(j->dfd, JOURNAL_TMP, 0) < 0 && errno != ENOENT)
		return -errno;
	fd = dirtrust_open(j->dfd, JOURNAL_TMP, O_RDWR | O_CREAT | O_EXCL,
			   label, 0, err, sizeof(err));
	if (fd < 0) {
		log_err("%s", err);
		return fd;
	}
	o.fd = fd;
	o.buf = malloc(o.cap);
	n = o.buf ? write_live(e, &o) : -ENOMEM;
	free(o.buf);
	if (n >= 0 && sync && fdatasync(fd) < 0)
		n = -errno;
	if (n < 0) {
		close(fd);
		unlinkat(j->dfd, JOURNAL_TMP, 0);
		return n;
	}
	*nrec = n;
	*size = o.off;
	return fd;
}

int journal_cp_install(struct gs_engine *e, const char *tmp, int fd,
		       uint64_t size, int64_t nrec, bool sync, uint64_t t0,
		       int *oldp)
{
	struct journal *j = e->journal;
	int old;

	GS_CRASH_POINT("checkpoint");
	if (renameat(j->dfd, tmp, j->dfd, JOURNAL_NAME) < 0) {
		int ret = -errno;

		close(fd);
		unlinkat(j->dfd, tmp, 0);
		log_err("%s: checkpoint failed, the journal stays as it is: %s",
			j->path, strerror(-ret));
		return ret;
	}
	/* committed: from now on the new file is the journal */
	if (sync && fsync(j->dfd) < 0)
		log_err("%s: fsync of its dir: %s", j->path, strerror(errno));
	GS_CRASH_POINT("after-checkpoint");
	pthread_mutex_lock(&j->fd_lock);
	old = j->fd;
	j->fd = fd;
	pthread_mutex_unlock(&j->fd_lock);
	if (oldp)
		*oldp = old;
	else
		close(old);
	if (sync)
		journal_shed(fd, size);
	/* sync_once reads it unlocked */
	__atomic_store_n(&j->end, size, __ATOMIC_RELEASE);
	journal_room_reset(e);
	j->wb = j->shed_lo = 0;
	j->records = nrec;
	j->next_check = 2 * size > checkpoint_min(e) ? 2 * size :
			checkpoint_min(e);
	if (e->next_cas > j->last)
		__atomic_store_n(&j->last, e->next_cas, __ATOMIC_RELEASE);
	if (sync && j->syncing)
		journal_publish_synced(e, j, j->last);
	STAT_ADD(e, checkpoints, 1);
	publish_stats(e, j);
	log_info("%s: checkpoint of %lld records, %llu bytes, in %llu ms",
		 j->path, (long long)nrec, (unsigned long long)size,
		 (unsigned long long)(mono_ms() - t0));
	return 0;
}

int journal_checkpoint(struct gs_engine *e, bool sync)
{
	struct journal *j = e->journal;
	uint64_t t0 = mono_ms(), size = 0;
	int64_t nrec = 0;
	int fd;

	journal_bg_cancel(e);		/* this one holds all it would */
	fd = write_checkpoint(e, sync, &nrec, &size);
	if (fd < 0) {
		log_err("%s: checkpoint failed, the journal stays as it is: %s",
			j->path, strerror(-fd));
		return fd;
	}
	return journal_cp_install(e, JOURNAL_TMP, fd, size, nrec, sync, t0,
				  NULL);
}

uint64_t journal_weigh_limit(const struct gs_engine *e, uint64_t live)
{
	return 2 * live > checkpoint_min(e) ? 2 * live : checkpoint_min(e);
}

void journal_weigh_again(struct journal *j, uint64_t limit)
{
	/* look again at the limit, and not before the journal has grown by
	 * an eighth of it: each look walks the whole index */
	j->next_check = j->end + limit / 8 > limit ? j->end + limit / 8 : limit;
}

void journal_weigh(struct gs_engine *e)
{
	if (!journal_bg_weigh(e))
		journal_weigh_now(e);
}

void journal_weigh_now(struct gs_engine *e)
{
	struct journal *j = e->journal;
	uint64_t limit = journal_weigh_limit(e, journal_live_bytes(e));

	if (j->end > limit &&
	    journal_checkpoint(e, e->cfg.sync_interval > 0) == 0)
		return;
	journal_weigh_again(j, limit);
}

/* ---- open and close ---- */

static const char fresh_hint[] =
	"start with --fresh to discard it (and every object in the pools)";

/* Reads and checks the header of the journal open at j->fd: a damaged one
 * (its checksum first: what it says is not believed before) is refused
 * unless <salvage>, a foreign one always. */
static int check_header(struct journal *j, bool salvage, char *err,
			size_t errlen)
{
	struct jhdr h;
	struct stat st;
	ssize_t n = pread(j->fd, &h, sizeof(h), 0);

	if (n < 0 || fstat(j->fd, &st) < 0) {
		snprintf(err, errlen, "%s: %s", j->path, strerror(errno));
		return -errno;
	}
	if (n < (ssize_t)sizeof(h) || memcmp(h.magic, JOURNAL_MAGIC, sizeof(h.magic))) {
		snprintf(err, errlen, "%s: not a goblin-store journal (%s); %s",
			 j->path, n < (ssize_t)sizeof(h) ? "shorter than a header" :
			 "no journal magic", fresh_hint);
		return -EINVAL;
	}
	if (h.sum != journal_hdr_sum(&h) && !salvage) {
		snprintf(err, errlen, "%s: damaged journal header (checksum mismatch); start with --journal-salvage to read its records all the same, or %s",
			 j->path, fresh_hint);
		return -EUCLEAN;
	}
	if (h.sum != journal_hdr_sum(&h)) {
		log_warn("%s: --journal-salvage: damaged journal header (checksum mismatch): read as version %u, CAS values go on 2^32 past its records'",
			 j->path, JOURNAL_VERSION);
		j->damaged_header = true;
		h.base_seq = 0;
	} else if (h.version < JOURNAL_VERSION_MIN ||
		   h.version > JOURNAL_VERSION) {
		snprintf(err, errlen, "%s: journal format version %u, this goblin-store reads versions %u to %u; %s",
			 j->path, h.version, JOURNAL_VERSION_MIN, JOURNAL_VERSION,
			 fresh_hint);
		return -EINVAL;
	} else if (h.hdr_len != sizeof(h)) {
		snprintf(err, errlen, "%s: journal header of %u bytes, version %u has %zu; %s",
			 j->path, h.hdr_len, JOURNAL_VERSION, sizeof(h), fresh_hint);
		return -EINVAL;
	}
	j->end = st.st_size;
	j->last = h.base_seq;
	return 0;
}

/* A missing journal is made anew only beside pools that hold no extents:
 * without it, what they hold cannot be read.  A journal in the HDD pool's
 * dir is one written without the SSD pool. */
static int check_missing(const struct gs_engine *e, const struct journal *j,
			 char *err, size_t errlen)
{
	bool hdd_has = e->has_pool[GS_TIER_SSD] && e->has_pool[GS_TIER_HDD] &&
		       faccessat(e->pools[GS_TIER_HDD].dirs[0].dfd, JOURNAL_NAME,
				 F_OK, AT_SYMLINK_NOFOLLOW) == 0;
	uint64_t held = 0;

	for (int t = GS_TIER_SSD; t < GS_TIERS; t++)
		for (unsigned i = 0; e->has_pool[t] && i < e->pools[t].ndirs; i++)
			held += e->pools[t].dirs[i].grown;
	if (!held)
		return 0;
	snprintf(err, errlen, "%s: missing, but the pools hold %llu bytes of extents that only the journal can say what they are%s; put it back, or start with --fresh to wipe the pools",
		 j->path, (unsigned long long)held,
		 hdd_has ? " (the HDD pool's has one: written without an SSD pool?)" : "");
	return -EUCLEAN;
}

/* Creates an empty journal: a header, synced, renamed into place. */
static int create_journal(struct journal *j, char *err, size_t errlen)
{
	char label[4300];
	struct jhdr h;
	int fd, ret;

	snprintf(label, sizeof(label), "%s.new", j->path);
	fd = dirtrust_open(j->dfd, JOURNAL_TMP, O_RDWR | O_CREAT | O_EXCL,
			   label, 0, err, errlen);
	if (fd < 0)
		return fd;
	journal_hdr_fill(&h, 0);
	ret = journal_pwrite_all(fd, &h, sizeof(h), 0);
	if (!ret && fdatasync(fd) < 0)
		ret = -errno;
	if (!ret && renameat(j->dfd, JOURNAL_TMP, j->dfd, JOURNAL_NAME) < 0)
		ret = -errno;
	if (!ret && fsync(j->dfd) < 0)
		ret = -errno;
	if (ret < 0) {
		snprintf(err, errlen, "%s: cannot create: %s", j->path,
			 strerror(-ret));
		close(fd);
		unlinkat(j->dfd, JOURNAL_TMP, 0);
		return ret;
	}
	j->fd = fd;
	j->end = sizeof(h);
	return 0;
}

static struct journal *journal_new(const struct gs_engine *e,
				   const struct pool_dir *d)
{
	struct journal *j = calloc(1, sizeof(*j));
	pthread_condattr_t ca;

	if (!j)
		return NULL;
	j->dfd = d->dfd;
	j->fd = -1;
	snprintf(j->path, sizeof(j->path), "%s/%s", d->path, JOURNAL_NAME);
	j->next_check = checkpoint_min(e);
	pthread_mutex_init(&j->sync_lock, NULL);
	pthread_mutex_init(&j->fd_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&j->tick, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&j->synced_cond, NULL);
	pthread_cond_init(&j->bg.wake, NULL);
	return j;
}

static void journal_free(struct journal *j)
{
	if (j->fd >= 0)
		close(j->fd);
	pthread_mutex_destroy(&j->sync_lock);
	pthread_mutex_destroy(&j->fd_lock);
	pthread_cond_destroy(&j->tick);
	pthread_cond_destroy(&j->synced_cond);
	pthread_cond_destroy(&j->bg.wake);
	free(j->buf);
	free(j);
}

/* Opens j->fd: the journal there, a new one when there is none. */
static int open_file(struct gs_engine *e, struct journal *j, char *err,
		     size_t errlen)
{
	int fd;

	if ((unlinkat(j->dfd, JOURNAL_TMP, 0) < 0 && errno != ENOENT) ||
	    (unlinkat(j->dfd, JOURNAL_BG_TMP, 0) < 0 && errno != ENOENT) ||
	    (e->cfg.fresh && unlinkat(j->dfd, JOURNAL_NAME, 0) < 0 &&
	     errno != ENOENT)) {
		snprintf(err, errlen, "%s: cannot remove: %s", j->path,
			 strerror(errno));
		return -errno;
	}
	fd = dirtrust_open(j->dfd, JOURNAL_NAME, O_RDWR, j->path, 0, err,
			   errlen);
	if (fd == -ENOENT) {
		fd = check_missing(e, j, err, errlen);
		return fd < 0 ? fd : create_journal(j, err, errlen);
	}
	if (fd < 0)
		return fd;
	j->fd = fd;
	return check_header(j, e->cfg.journal_salvage, err, errlen);
}

int journal_open(struct gs_engine *e, char *err, size_t errlen)
{
	enum gs_tier t = e->has_pool[GS_TIER_SSD] ? GS_TIER_SSD : GS_TIER_HDD;
	struct journal *j;
	int ret;

	if (e->journal || !e->has_pool[t])
		return 0;
	j = journal_new(e, &e->pools[t].dirs[0]);
	if (!j) {
		snprintf(err, errlen, "out of memory for the journal");
		return -ENOMEM;
	}
	ret = open_file(e, j, err, errlen);
	if (ret < 0) {
		journal_free(j);
		return ret;
	}
	publish_stats(e, j);
	e->journal = j;
	journal_room_reset(e);
	ret = journal_sync_start(e, err, errlen);
	if (ret < 0) {
		e->journal = NULL;
		journal_free(j);
	}
	return ret;
}

void journal_close(struct gs_engine *e)
{
	struct journal *j = e->journal;

	if (!j)
		return;
	journal_bg_stop(e);
	journal_sync_stop(j);
	pthread_mutex_lock(&e->lock);
	/* before recovery the index does not hold what the journal does */
	if (j->recovered)
		journal_checkpoint(e, true);
	e->journal = NULL;
	pthread_mutex_unlock(&e->lock);
	journal_free(j);
}
