/*
 * The index journal (storaged/journal.h): a kill -9 loses no appended
 * record, replay keeps per key the event filed last and rebuilds the index
 * exactly (meta, extents, RAM values, claimed pool space), a torn or
 * damaged tail is cut and what precedes it kept, damage with good records
 * after it is refused (the journal untouched) and --journal-salvage skips
 * it dropping what it names, a damaged, foreign or missing journal is
 * refused with a reason, a smaller --ram-head than RAM-only objects need
 * is refused, --fresh empties, a checkpoint holds
 * exactly the live set (and one is taken when the journal outgrows it),
 * and the --sync-interval thread advances journal_synced().
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "engine.h"
#include "engine_util.h"
#include "journal.h"
#include "log.h"
#include "options.h"

static char tmp[] = "/var/tmp/goblin-test-journal.XXXXXX";
static char ssd[300], jpath[400], crash_copy[400];

/* What one key should hold after a restart. */
struct want {
	char key[GS_KEY_MAX];
	uint8_t klen;
	bool live;
	uint32_t seed;			/* value of a RAM-only object */
	struct gs_meta meta;		/* size, flags, exptime, cas, mtime */
	uint32_t nchunks;
	struct chunk chunks[40];
};

#define MAX_WANTS 128
static struct want *wants;		/* MAX_WANTS, shared with children */
static int nwants;
static uint64_t cursor;			/* next free pool address */

static void config(struct gs_config *cfg)
{
	options_config_defaults(cfg);
	cfg->memory = 32 << 20;
	cfg->sub_memory = 32 << 20;	/* a block for every slot class */
	cfg->mlock = false;
	cfg->ram_head = 64 << 10;
	cfg->max_object = 8 << 20;
	cfg->ssd_size = 64 << 20;
	cfg->ssd_dirs[0] = ssd;
	cfg->n_ssd_dirs = 1;
}

/* Opens the engine (it opens and replays the journal); NULL with a
 * reason. */
static struct gs_engine *eopen(const struct gs_config *cfg, char *err,
			       size_t errlen)
{
	struct gs_engine *e;

	return gs_engine_open(&e, cfg, err, errlen) < 0 ? NULL : e;
}

/* eopen(), or the end of the test. */
static struct gs_engine *eopen_ok(const struct gs_config *cfg, const char *what)
{
	char err[512] = "";
	struct gs_engine *e = eopen(cfg, err, sizeof(err));

	CHECK(e, "%s: open: %s", what, err);
	if (!e)
		exit(check_result());
	return e;
}

/* A test's start: the default config, an empty journal, no wants. */
static struct gs_engine *fresh_start(struct gs_config *cfg, const char *what)
{
	struct gs_engine *e;

	config(cfg);
	nwants = 0;
	cfg->fresh = true;
	e = eopen_ok(cfg, what);
	cfg->fresh = false;
	return e;
}

/* Closes the engine (it checkpoints the journal). */
static void eclose(struct gs_engine **e)
{
	gs_engine_close(e);
}

/* Closes as a crash would leave things: the journal as appended, no
 * checkpoint (the clean close writes one; the copy taken before is put
 * back over it). */
static void crash_close(struct gs_engine **e)
{
	char cmd[1000];

	snprintf(cmd, sizeof(cmd), "cp %s %s", jpath, crash_copy);
	CHECK(system(cmd) == 0, "copy journal");
	eclose(e);
	CHECK(rename(crash_copy, jpath) == 0, "restore journal");
}

static uint64_t file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

static struct gs_stats stats(struct gs_engine *e)
{
	struct gs_stats st;

	gs_stats(e, &st);
	return st;
}

/* ---- fabricated records ---- */

/* A new want: a RAM-only object of <size> bytes made from <seed>. */
static struct want *want_new(const char *key, uint64_t size, uint32_t seed)
{
	struct want *w = &wants[nwants++];

	memset(w, 0, sizeof(*w));
	w->klen = strlen(key);
	memcpy(w->key, key, w->klen);
	w->live = true;
	w->meta.mtime = time(NULL) - 100;
	w->meta.size = size;
	w->seed = seed;
	return w;
}

static struct want *find_want(const char *key)
{
	for (int i = 0; i < nwants; i++)
		if (wants[i].klen == strlen(key) &&
		    !memcmp(wants[i].key, key, wants[i].klen))
			return &wants[i];
	return NULL;
}

/* An on-disk object of <size>: SSD chunks of GS_SSD_CHUNK from byte 0, at
 * fresh pool addresses. */
static void disk_layout(struct want *w, uint64_t size, uint32_t align)
{
	w->meta.size = size;
	w->nchunks = 0;
	for (uint64_t off = 0; off < size; off += GS_SSD_CHUNK) {
		struct chunk *c = &w->chunks[w->nchunks++];

		c->len = size - off < GS_SSD_CHUNK ? size - off : GS_SSD_CHUNK;
		c->tier = GS_TIER_SSD;
		c->addr = cursor;
		c->sum = 0x5eed0000 + cursor / align;
		cursor += round_up(c->len, align);
	}
}

/* Journals a PUT of <w> as the engine would (e->lock held, new CAS). */
static void put_want(struct gs_engine *e, struct want *w)
{
	struct gs_obj *obj = engine_record_alloc(w->key, w->klen, w->nchunks);
	int ret = 0;

	pthread_mutex_lock(&e->lock);
	w->meta.cas = ++e->next_cas;
	obj->meta = w->meta;
	memcpy(obj_chunks(obj), w->chunks, w->nchunks * sizeof(struct chunk));
	if (!w->nchunks && w->meta.size) {
		obj->meta.head_len = w->meta.size;
		ret = engine_reserve_part(e, obj, -1);
		if (ret == 0)
			fill(obj_head_ptr(e, obj), w->meta.size, w->seed);
	}
	if (ret == 0)
		ret = journal_put(e, obj);
	if (w->nchunks)		/* made-up extents: not the pool's to free */
		free(obj);
	else
		engine_free_record(e, obj);
	pthread_mutex_unlock(&e->lock);
	CHECK(ret == 0, "put %.*s: %d", w->klen, w->key, ret);
}

static void del_key(struct gs_engine *e, const char *key)
{
	struct want *w = find_want(key);
	int ret;

	pthread_mutex_lock(&e->lock);
	ret = journal_del(e, key, strlen(key), ++e->next_cas);
	pthread_mutex_unlock(&e->lock);
	CHECK(ret == 0, "del %s: %d", key, ret);
	if (w)
		w->live = false;
}

/* Journals a TOUCH of <key> to <exptime>, for the object of <cas>. */
static void touch_key(struct gs_engine *e, const char *key, uint64_t cas,
		      int64_t exptime)
{
	struct gs_obj *obj = engine_record_alloc(key, strlen(key), 0);
	int ret;

	obj->meta.cas = cas;
	obj->meta.exptime = exptime;
	pthread_mutex_lock(&e->lock);
	ret = journal_touch(e, obj);
	pthread_mutex_unlock(&e->lock);
	CHECK(ret == 0, "touch %s: %d", key, ret);
	free(obj);
}

/* An on-disk object replay is to drop, its first chunk to be spoilt. */
static struct want *bad_want(const char *key, uint32_t align)
{
	struct want *w = want_new(key, 0, 0);

	disk_layout(w, 100000, align);
	w->live = false;
	return w;
}

/* ---- checking a recovered index ---- */

static void check_obj(const struct gs_engine *e, const struct gs_obj *obj,
		      const struct want *w, const char *what)
{
	const struct gs_meta *m = &obj->meta, *x = &w->meta;
	int k = w->klen;

	CHECK(m->size == x->size && m->flags == x->flags &&
	      m->exptime == x->exptime && m->cas == x->cas &&
	      m->mtime == x->mtime, "%s: %.*s: meta size %llu flags %u exp %lld cas %llu",
	      what, k, w->key, (unsigned long long)m->size, m->flags,
	      (long long)m->exptime, (unsigned long long)m->cas);
	CHECK(obj->nchunks == w->nchunks && obj->on_disk == (w->nchunks > 0),
	      "%s: %.*s: %u chunks", what, k, w->key, obj->nchunks);
	for (uint32_t i = 0; i < obj->nchunks && i < w->nchunks; i++) {
		const struct chunk *c = &obj_chunks(obj)[i], *y = &w->chunks[i];

		CHECK(c->addr == y->addr && c->sum == y->sum && c->len == y->len &&
		      c->tier == y->tier, "%s: %.*s: chunk %u", what, k, w->key, i);
	}
	if (w->nchunks) {
		CHECK(!obj->has_head && m->head_len == 0 &&
		      gs_obj_tier_bytes(obj, GS_TIER_SSD) == x->size &&
		      gs_obj_tier_bytes(obj, GS_TIER_RAM) == 0,
		      "%s: %.*s: on-disk meta",
		      what, k, w->key);
	} else {
		char *val = malloc(x->size + 1);

		fill(val, x->size, w->seed);
		CHECK(m->head_len == x->size &&
		      gs_obj_tier_bytes(obj, GS_TIER_RAM) == x->size &&
		      (!x->size || (obj->has_head &&
				    !memcmp(obj_head_ptr(e, obj), val, x->size))),
		      "%s: %.*s: RAM value", what, k, w->key);
		free(val);
	}
}

/* Checks the index against wants[]: the live ones there exactly, no
 * other; the pool holds exactly their extents. */
static void check_index(struct gs_engine *e, const char *what)
{
	uint64_t used = 0, live = 0, max_seq = 0;
	struct gs_stats st = stats(e);

	pthread_mutex_lock(&e->lock);
	for (int i = 0; i < nwants; i++) {
		const struct want *w = &wants[i];
		struct gs_obj *obj = engine_find(e, w->key, w->klen);

		if (w->live && w->meta.cas > max_seq)
			max_seq = w->meta.cas;
		if (!w->live) {
			CHECK(!obj, "%s: %.*s should be gone", what, w->klen, w->key);
			continue;
		}
		CHECK(obj, "%s: %.*s lost", what, w->klen, w->key);
		if (!obj)
			continue;
		check_obj(e, obj, w, what);
		live++;
		for (uint32_t k = 0; k < w->nchunks; k++)
			used += round_up(w->chunks[k].len, e->pools[GS_TIER_SSD].align);
	}
	CHECK(e->clock_len == live, "%s: %u linked, want %llu", what,
	      e->clock_len, (unsigned long long)live);
	CHECK(e->pools[GS_TIER_SSD].used == used, "%s: pool used %llu, want %llu",
	      what, (unsigned long long)e->pools[GS_TIER_SSD].used,
	      (unsigned long long)used);
	CHECK(e->next_cas >= max_seq, "%s: next_cas %llu < %llu", what,
	      (unsigned long long)e->next_cas, (unsigned long long)max_seq);
	pthread_mutex_unlock(&e->lock);
	CHECK(st.curr_items == live, "%s: curr_items %llu", what,
	      (unsigned long long)st.curr_items);
}

/* ---- kill -9, then replay ---- */

/* The child's run: every kind of record, noted in wants[], then SIGKILL. */
static void crash_child(const struct gs_config *cfg, const char *unused)
{
	/* a larger ram_head than the replaying engine's (ram_heads() has what
	 * that does to a RAM value larger than the replaying one's) */
	struct gs_config big = *cfg;
	struct gs_engine *e;
	char longkey[GS_KEY_MAX + 1];
	int64_t now = time(NULL);
	uint32_t align;
	struct want *w;
	char key[32];

	(void)unused;
	big.ram_head *= 2;
	e = eopen_ok(&big, "child");
	align = e->pools[GS_TIER_SSD].align;
	for (int i = 0; i < 30; i++) {
		snprintf(key, sizeof(key), "disk-%02d", i);
		w = want_new(key, 0, 0);
		disk_layout(w, i % 5 ? 70000 + i * 5001 : 600000 + i, align);
		w->meta.flags = i * 7;
		w->meta.exptime = i % 3 ? 0 : now + 3600;
		put_want(e, w);
	}
	for (int i = 0; i < 12; i++) {
		snprintf(key, sizeof(key), "ram-%02d", i);
		put_want(e, want_new(key, i * 1000 + (i == 11 ? 64 * 1024 - 11000 : 0),
				     1000 + i));
	}
	memset(longkey, 'L', GS_KEY_MAX);
	longkey[GS_KEY_MAX] = '\0';
	w = want_new(longkey, 0, 0);
	disk_layout(w, 8 << 20, align);	/* 32 chunks */
	put_want(e, w);

	del_key(e, "disk-05");
	del_key(e, "ram-03");
	del_key(e, "ghost");
	/* disk-07 replaced: its first extents become free */
	w = find_want("disk-07");
	disk_layout(w, 333333, align);
	w->meta.flags = 4242;
	put_want(e, w);
	w = find_want("disk-09");
	w->meta.exptime = now + 7200;
	touch_key(e, "disk-09", w->meta.cas, w->meta.exptime);
	touch_key(e, "disk-02", 1, now - 1);	/* stale CAS: ignored */
	touch_key(e, "ram-04", find_want("ram-04")->meta.cas, now - 1);
	find_want("ram-04")->live = false;	/* expired by touch */
	w = find_want("disk-10");
	w->meta.exptime = now - 5;
	put_want(e, w);
	w->live = false;			/* expired */

	/* records this engine cannot take: dropped at replay */
	bad_want("overlap", align)->chunks[0].addr =
		find_want("disk-01")->chunks[0].addr;
	bad_want("outside", align)->chunks[0].addr = 64 << 20;
	bad_want("ram-tier", align)->chunks[0].tier = GS_TIER_RAM;
	for (int i = nwants - 3; i < nwants; i++)
		put_want(e, &wants[i]);
	kill(getpid(), SIGKILL);
}

/* Runs <fn>(<cfg>, <arg>) in a child; true when it died of SIGKILL. */
static bool killed(void (*fn)(const struct gs_config *, const char *),
		   const struct gs_config *cfg, const char *arg)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		fn(cfg, arg);
		_exit(0);
	}
	return pid > 0 && waitpid(pid, &status, 0) == pid &&
	       WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

static void recover_child(const struct gs_config *cfg, const char *point)
{
	struct gs_engine *e;

	setenv("GOBLIN_TEST_CRASH", point, 1);
	e = eopen_ok(cfg, "recovering child");
	eclose(&e);
}

static void kill9(void)
{
	struct gs_config cfg;
	struct gs_engine *e;
	struct gs_stats st;
	uint64_t bytes = sizeof(struct jhdr);
	int live = 0;

	config(&cfg);
	cfg.fresh = true;
	CHECK(killed(crash_child, &cfg, NULL), "child not killed");
	for (nwants = 0; nwants < MAX_WANTS && wants[nwants].klen; nwants++)
		live += wants[nwants].live;

	/* a crash in the middle of the replay changes nothing */
	cfg.fresh = false;
	CHECK(killed(recover_child, &cfg, "recovery:20"), "recovery not killed");

	e = eopen_ok(&cfg, "kill9");
	st = stats(e);
	CHECK(st.recovered_objects == (uint64_t)live, "recovered %llu of %d",
	      (unsigned long long)st.recovered_objects, live);
	CHECK(st.journal_bytes == file_size(jpath), "journal_bytes %llu",
	      (unsigned long long)st.journal_bytes);
	check_index(e, "kill9");
	for (int i = 0; i < nwants; i++)
		CHECK(e->next_cas >= wants[i].meta.cas, "kill9: next_cas %llu",
		      (unsigned long long)e->next_cas);

	/* a checkpoint holds exactly the live set */
	pthread_mutex_lock(&e->lock);
	for (uint32_t i = 0; i < e->clock_len; i++)
		bytes += journal_put_len(e->clock[i]);
	CHECK(journal_checkpoint(e, false) == 0, "checkpoint");
	pthread_mutex_unlock(&e->lock);
	st = stats(e);
	CHECK(st.checkpoints == 1 && st.journal_records == (uint64_t)live &&
	      st.journal_bytes == bytes && file_size(jpath) == bytes,
	      "checkpoint of %llu records, %llu bytes; want %d, %llu",
	      (unsigned long long)st.journal_records,
	      (unsigned long long)st.journal_bytes, live, (unsigned long long)bytes);
	crash_close(&e);
	e = eopen_ok(&cfg, "checkpointed");
	check_index(e, "checkpointed");
	/* and a clean stop takes one: the next start reads the live set only */
	eclose(&e);
	e = eopen_ok(&cfg, "after stop");
	CHECK(stats(e).journal_records == (uint64_t)live, "stop: %llu records",
	      (unsigned long long)stats(e).journal_records);
	check_index(e, "after stop");
	eclose(&e);
}

/* ---- a torn or damaged tail ---- */

static void tails(void)
{
	struct gs_config cfg;
	struct gs_engine *e;
	uint64_t a_end, b_end;
	struct want *c;
	int fd;

	e = fresh_start(&cfg, "tails");
	put_want(e, want_new("a", 5000, 1));
	a_end = stats(e).journal_bytes;
	put_want(e, want_new("b", 6000, 2));
	b_end = stats(e).journal_bytes;
	crash_close(&e);
	CHECK(file_size(jpath) == b_end, "journal %llu bytes, want %llu",
	      (unsigned long long)file_size(jpath), (unsigned long long)b_end);

	/* killed mid-append: b torn */
	CHECK(truncate(jpath, a_end + 100) == 0, "truncate");
	find_want("b")->live = false;
	e = eopen_ok(&cfg, "torn");
	check_index(e, "torn");
	CHECK(file_size(jpath) == a_end && stats(e).journal_bytes == a_end &&
	      stats(e).journal_records == 1, "cut at %llu: %llu",
	      (unsigned long long)a_end, (unsigned long long)file_size(jpath));
	/* appends go on from the cut */
	c = want_new("c", 7000, 3);
	put_want(e, c);
	crash_close(&e);
	e = eopen_ok(&cfg, "after cut");
	check_index(e, "after cut");
	crash_close(&e);

	/* a byte of c's value flipped: c goes, a stays */
	fd = open(jpath, O_RDWR);
	CHECK(fd >= 0 && pwrite(fd, "\xff", 1, file_size(jpath) - 9) == 1, "flip");
	close(fd);
	c->live = false;
	e = eopen_ok(&cfg, "flipped");
	check_index(e, "flipped");
	CHECK(file_size(jpath) == a_end, "flipped: cut at %llu",
	      (unsigned long long)file_size(jpath));
	eclose(&e);
}

/* ---- headers and --fresh ---- */

/* Writes header <h> at <fd>: the journal must then be refused, <reason>
 * said in one line that points at --fresh. */
static void header_refused(const struct gs_config *cfg, int fd,
			   const struct jhdr *h, const char *reason)
{
	char err[512] = "";
	struct gs_engine *e;

	CHECK(!h || pwrite(fd, h, sizeof(*h), 0) == sizeof(*h), "write");
	e = eopen(cfg, err, sizeof(err));
	CHECK(!e && strstr(err, reason) && strstr(err, "--fresh") &&
	      !strchr(err, '\n'), "%s: %s", reason, err);
	if (e)
		eclose(&e);
}

static void headers(void)
{
	struct gs_config cfg;
	struct gs_engine *e;
	char other[500], err[512];
	struct jhdr h, good;
	int fd;

	e = fresh_start(&cfg, "headers");
	put_want(e, want_new("h", 100, 9));
	crash_close(&e);
	fd = open(jpath, O_RDWR);
	CHECK(fd >= 0 && pread(fd, &good, sizeof(good), 0) == sizeof(good), "read");

	h = good;
	h.magic[0] = 'X';
	header_refused(&cfg, fd, &h, "not a goblin-store journal");
	h = good;
	h.version = JOURNAL_VERSION + 1;
	h.sum = journal_hdr_sum(&h);
	header_refused(&cfg, fd, &h, "format version 2");
	h = good;
	h.created ^= 1;
	header_refused(&cfg, fd, &h, "damaged journal header");
	CHECK(ftruncate(fd, 10) == 0, "truncate");
	header_refused(&cfg, fd, NULL, "shorter than a header");
	close(fd);
	CHECK(file_size(jpath) == 10, "a refused journal is left alone");

	/* --fresh discards it */
	cfg.fresh = true;
	e = eopen_ok(&cfg, "fresh");
	CHECK(stats(e).recovered_objects == 0 && e->clock_len == 0 &&
	      file_size(jpath) == sizeof(struct jhdr), "fresh: %u objects",
	      e->clock_len);
	eclose(&e);

	/* never through a symlink; a checkpoint left half-written goes */
	cfg.fresh = false;
	snprintf(other, sizeof(other), "%s/elsewhere", tmp);
	CHECK(rename(jpath, other) == 0 && symlink(other, jpath) == 0, "symlink");
	CHECK(!eopen(&cfg, err, sizeof(err)) && strstr(err, "symlink"), "%s", err);
	CHECK(unlink(jpath) == 0 && rename(other, jpath) == 0, "unlink");
	snprintf(other, sizeof(other), "%s.new", jpath);
	CHECK(close(creat(other, 0600)) == 0, "stale .new");
	e = eopen_ok(&cfg, "stale .new");
	CHECK(access(other, F_OK) < 0 && file_size(jpath) == sizeof(struct jhdr),
	      "stale checkpoint left");
	eclose(&e);
}

/* ---- damage: only a torn tail is cut ---- */

static char *slurp(const char *path, uint64_t *len)
{
	uint64_t n = file_size(path);
	char *buf = malloc(n ? n : 1);
	int fd = open(path, O_RDONLY);

	CHECK(buf && fd >= 0 && pread(fd, buf, n, 0) == (ssize_t)n, "read %s", path);
	if (fd >= 0)
		close(fd);
	*len = n;
	return buf;
}

/* Whether the journal is byte for byte <buf>. */
static bool journal_is(const char *buf, uint64_t len)
{
	uint64_t n;
	char *now = slurp(jpath, &n);
	bool same = n == len && !memcmp(now, buf, len);

	free(now);
	return same;
}

static void flip(uint64_t off, uint8_t mask)
{
	int fd = open(jpath, O_RDWR);
	uint8_t b = 0;

	CHECK(fd >= 0 && pread(fd, &b, 1, off) == 1, "read byte %llu",
	      (unsigned long long)off);
	b ^= mask;
	CHECK(pwrite(fd, &b, 1, off) == 1, "flip byte %llu",
	      (unsigned long long)off);
	close(fd);
}

/* The start is refused with one line holding <reason> and <hint>s, and
 * the journal left exactly as it was (<base> with the damage made). */
static void refused(const struct gs_config *cfg, const char *what,
		    const char *reason, const char *hint)
{
	uint64_t len;
	char *before = slurp(jpath, &len), err[1024] = "";
	struct gs_engine *e = eopen(cfg, err, sizeof(err));

	CHECK(!e && strstr(err, reason) && strstr(err, hint) &&
	      strstr(err, "--fresh") && !strchr(err, '\n'), "%s: %s", what, err);
	if (e)
		eclose(&e);
	CHECK(journal_is(before, len), "%s: the refused journal was changed", what);
	free(before);
}

/* Seven records: PUTs of d0 to d4, a DEL of d2, a PUT of d5; <ends>:
 * where each ends. */
static void damage_base(struct gs_config *cfg, uint64_t *ends)
{
	struct gs_engine *e = fresh_start(cfg, "damage");
	char key[16];

	for (int i = 0; i < 5; i++) {
		snprintf(key, sizeof(key), "d%d", i);
		put_want(e, want_new(key, 3000 + 100 * i, 50 + i));
		ends[i] = stats(e).journal_bytes;
	}
	del_key(e, "d2");
	ends[5] = stats(e).journal_bytes;
	put_want(e, want_new("d5", 900, 55));
	ends[6] = stats(e).journal_bytes;
	crash_close(&e);
}

static void set_live(const char *keys, bool live)
{
	for (const char *k = keys; *k; k += 2) {
		char key[3] = { k[0], k[1], 0 };

		find_want(key)->live = live;
	}
}

/* Damage before good records: refused (journal untouched); with
 * --journal-salvage <gone> are missing, the rest exact, <skipped> counted,
 * and a checkpoint leaves a journal the next plain start reads. */
static void salvage_case(struct gs_config *cfg, const char *what,
			 const char *reason, const char *gone,
			 uint64_t skipped)
{
	struct gs_engine *e;

	refused(cfg, what, reason, "--journal-salvage");
	cfg->journal_salvage = true;
	set_live(gone, false);
	e = eopen_ok(cfg, what);
	check_index(e, what);
	CHECK(stats(e).journal_skipped == skipped && stats(e).checkpoints == 1,
	      "%s: %llu skipped, %llu checkpoints", what,
	      (unsigned long long)stats(e).journal_skipped,
	      (unsigned long long)stats(e).checkpoints);
	crash_close(&e);
	cfg->journal_salvage = false;
	e = eopen_ok(cfg, what);
	check_index(e, what);
	eclose(&e);
}

static void damage(void)
{
	struct gs_config cfg;
	uint64_t ends[7];
	struct gs_engine *e;
	struct jhdr h;
	int fd;

	damage_base(&cfg, ends);
	/* a value byte of the first record: d0 is dropped by name */
	flip(ends[0] - 100, 0x10);
	salvage_case(&cfg, "first record", "checksum mismatch), and good records follow from byte",
		     "d0", 1);
	/* the length of a middle one (d1) runs past the end: good records
	 * from inside it run to the end, so it is damage; its key is not
	 * vouched for, nor read */
	damage_base(&cfg, ends);
	flip(ends[0] + 2, 0x40);
	salvage_case(&cfg, "length", "is torn, and good records follow", "d1", 1);
	/* the kind of a middle one (d3): found again by the scan */
	damage_base(&cfg, ends);
	flip(ends[2] + 4, 0x7f);
	salvage_case(&cfg, "kind", "malformed), and good records follow", "d3",
		     1);

	/* the last record (d5) damaged: a torn tail, cut and logged */
	damage_base(&cfg, ends);
	flip(ends[6] - 50, 0x01);
	find_want("d5")->live = false;
	e = eopen_ok(&cfg, "last record");
	check_index(e, "last record");
	CHECK(file_size(jpath) == ends[5], "last record: cut at %llu, want %llu",
	      (unsigned long long)file_size(jpath), (unsigned long long)ends[5]);
	eclose(&e);
	/* and one cut short in mid-record */
	damage_base(&cfg, ends);
	CHECK(truncate(jpath, ends[5] + 40) == 0, "truncate");
	find_want("d5")->live = false;
	e = eopen_ok(&cfg, "torn");
	check_index(e, "torn");
	CHECK(file_size(jpath) == ends[5], "torn: cut at %llu",
	      (unsigned long long)file_size(jpath));
	eclose(&e);

	/* the header: refused; salvage reads every record, and CAS values
	 * go on past any its lost base may have handed out */
	damage_base(&cfg, ends);
	flip(offsetof(struct jhdr, created), 0x04);
	salvage_case(&cfg, "header", "damaged journal header (checksum mismatch)",
		     "", 0);
	e = eopen_ok(&cfg, "header, CAS");
	CHECK(e->next_cas > find_want("d5")->meta.cas + (1ull << 32) - 100,
	      "header: next_cas %llu", (unsigned long long)e->next_cas);
	eclose(&e);
	/* a header of another length, checksum right: said so */
	damage_base(&cfg, ends);
	fd = open(jpath, O_RDWR);
	CHECK(fd >= 0 && pread(fd, &h, sizeof(h), 0) == sizeof(h), "read header");
	h.hdr_len = 72;
	h.sum = journal_hdr_sum(&h);
	CHECK(pwrite(fd, &h, sizeof(h), 0) == sizeof(h), "write header");
	close(fd);
	refused(&cfg, "hdr_len", "journal header of 72 bytes, version 1 has 64",
		"--fresh");
}

/* A journal gone from beside pools that hold extents: refused, naming
 * --fresh, the extents untouched; --fresh starts empty. */
static void missing(void)
{
	struct gs_config cfg;
	struct gs_engine *e = fresh_start(&cfg, "missing");
	char err[1024] = "", ext[400];
	uint64_t a, held;
	int ret;

	pthread_mutex_lock(&e->lock);
	ret = pool_alloc(&e->pools[GS_TIER_SSD], 4096, &a);
	pthread_mutex_unlock(&e->lock);
	CHECK(ret == 0, "alloc: %d", ret);
	put_want(e, want_new("m", 100, 1));
	eclose(&e);
	snprintf(ext, sizeof(ext), "%s/extents", ssd);
	held = file_size(ext);
	CHECK(held > 0 && unlink(jpath) == 0, "extents %llu", (unsigned long long)held);
	e = eopen(&cfg, err, sizeof(err));
	CHECK(!e && strstr(err, "missing, but the pools hold") &&
	      strstr(err, "--fresh") && !strchr(err, '\n'), "missing: %s", err);
	if (e)
		eclose(&e);
	CHECK(file_size(ext) == held && access(jpath, F_OK) < 0,
	      "missing: the pools were touched");
	cfg.fresh = true;
	e = eopen_ok(&cfg, "missing, --fresh");
	CHECK(e->clock_len == 0 && file_size(ext) == 0, "fresh: %u objects",
	      e->clock_len);
	eclose(&e);
}

/* ---- a smaller --ram-head: refused, the store kept ---- */

static void store(struct gs_engine *e, const char *key, uint64_t size,
		  uint32_t seed);

static void ram_heads(void)
{
	struct gs_config cfg;
	struct gs_engine *e;
	struct want *w;

	config(&cfg);
	cfg.ram_head = 128 << 10;
	nwants = 0;
	cfg.fresh = true;
	e = eopen_ok(&cfg, "ram-head 128K");
	cfg.fresh = false;
	store(e, "ram-100k", 100000, 1);
	store(e, "ram-120k", 120000, 2);
	store(e, "ram-1k", 1000, 3);
	w = want_new("disk", 0, 0);
	disk_layout(w, 500000, e->pools[GS_TIER_SSD].align);
	put_want(e, w);
	crash_close(&e);

	cfg.ram_head = 64 << 10;
	refused(&cfg, "ram-head 64K", "2 RAM-only object(s) larger than --ram-head 64K (the largest 120000 bytes",
		"--ram-head 120K or more");
	cfg.ram_head = 128 << 10;
	e = eopen_ok(&cfg, "ram-head 128K again");
	check_index(e, "ram-head 128K again");
	CHECK(stats(e).recovered_objects == 4, "recovered %llu",
	      (unsigned long long)stats(e).recovered_objects);
	eclose(&e);
}

/* ---- flush_all ---- */

static void flush_at(struct gs_engine *e, int64_t when)
{
	int ret;

	pthread_mutex_lock(&e->lock);
	ret = journal_flush(e, ++e->next_cas, when);
	pthread_mutex_unlock(&e->lock);
	CHECK(ret == 0, "flush: %d", ret);
}

static void flushes(void)
{
	struct gs_config cfg;
	struct gs_engine *e;
	int64_t later = time(NULL) + 3600;

	e = fresh_start(&cfg, "flush");
	put_want(e, want_new("f1", 10, 1));
	put_want(e, want_new("f2", 20, 2));
	flush_at(e, time(NULL));
	find_want("f1")->live = find_want("f2")->live = false;
	put_want(e, want_new("f3", 30, 3));
	crash_close(&e);
	e = eopen_ok(&cfg, "flushed");
	check_index(e, "flushed");

	/* one for later: kept as invalid_at, through a checkpoint too */
	flush_at(e, later);
	crash_close(&e);
	e = eopen_ok(&cfg, "flush later");
	CHECK(e->invalid_at == later, "invalid_at %lld", (long long)e->invalid_at);
	check_index(e, "flush later");
	eclose(&e);
	e = eopen_ok(&cfg, "flush later, checkpointed");
	CHECK(e->invalid_at == later && stats(e).journal_records == 2,
	      "checkpointed: invalid_at %lld, %llu records", (long long)e->invalid_at,
	      (unsigned long long)stats(e).journal_records);
	check_index(e, "flush later, checkpointed");
	eclose(&e);
}

/* ---- checkpoints of a live index ---- */

/* Stores RAM-only <key> as the engine does (space reserved; engine_link
 * journals it) and notes it in wants[]. */
static void store(struct gs_engine *e, const char *key, uint64_t size,
		  uint32_t seed)
{
	struct want *w = find_want(key) ? find_want(key) : want_new(key, size, 0);
	struct gs_obj *obj;
	int ret;

	pthread_mutex_lock(&e->lock);
	ret = engine_reserve(e, key, strlen(key), size, &obj);
	if (ret == 0) {
		fill(obj_head_ptr(e, obj), size, seed);
		ret = engine_link(e, obj, GS_IF_ANY, 0, NULL);
		w->meta = obj->meta;
		engine_unref(e, obj);
	}
	pthread_mutex_unlock(&e->lock);
	CHECK(ret == 0, "store %s: %d", key, ret);
	w->live = ret == 0;
	w->seed = seed;
}

static void churn(void)
{
	struct gs_config cfg;
	struct gs_engine *e = fresh_start(&cfg, "churn");
	struct gs_stats st;

	/* one object replaced until the journal passes 64 MiB: one checkpoint,
	 * taken on the way, of that object alone */
	for (int i = 0; i < 1200; i++)
		store(e, "churn", 60000, i);
	st = stats(e);
	CHECK(st.checkpoints == 1 && st.journal_bytes < JOURNAL_MIN_CHECKPOINT / 4,
	      "churn: %llu checkpoints, %llu bytes", (unsigned long long)st.checkpoints,
	      (unsigned long long)st.journal_bytes);
	crash_close(&e);
	e = eopen_ok(&cfg, "churned");
	check_index(e, "churned");
	eclose(&e);
}

/* ---- --sync-interval ---- */

static void syncs(void)
{
	struct gs_config cfg;
	struct gs_engine *e;
	struct want *w;
	uint64_t seq;

	config(&cfg);
	nwants = 0;
	cfg.fresh = true;
	cfg.sync_interval_ms = 20;
	e = eopen_ok(&cfg, "sync");
	w = want_new("s1", 100, 1);
	put_want(e, w);
	seq = journal_last(e);		/* no other appender: no lock */
	CHECK(seq == w->meta.cas, "a PUT is filed under its CAS: %llu",
	      (unsigned long long)seq);
	journal_wait_synced(e, seq);	/* a hang: the runner's timeout */
	CHECK(journal_synced(e) >= seq, "put not synced");
	/* a TOUCH is filed under a CAS of its own */
	touch_key(e, "s1", w->meta.cas, time(NULL) + 60);
	CHECK(journal_last(e) == seq + 1 && e->next_cas == seq + 1,
	      "touch filed under %llu", (unsigned long long)journal_last(e));
	journal_wait_synced(e, seq + 1);
	CHECK(journal_synced(e) >= seq + 1, "touch not synced");
	CHECK(stats(e).syncs >= 2, "syncs %llu", (unsigned long long)stats(e).syncs);
	eclose(&e);

	cfg.sync_interval_ms = 0;
	e = eopen_ok(&cfg, "no sync");
	put_want(e, want_new("s2", 100, 2));
	CHECK(journal_synced(e) == find_want("s2")->meta.cas, "unsynced journal_synced %llu",
	      (unsigned long long)journal_synced(e));
	journal_wait_synced(e, UINT64_MAX);	/* returns at once */
	CHECK(stats(e).syncs == 0, "syncs without --sync-interval");
	eclose(&e);

	/* no pools, no journal */
	cfg.n_ssd_dirs = 0;
	e = eopen_ok(&cfg, "no pools");
	CHECK(!e->journal && journal_synced(e) == UINT64_MAX, "journal without pools");
	put_want(e, want_new("s3", 100, 3));
	eclose(&e);
}

/* ---- a checkpoint and a replay of 100,000 objects, timed ---- */

static void hundred_k(void)
{
	enum { N = 100000 };
	struct gs_config cfg;
	struct gs_engine *e;
	uint64_t t0, ms = 0;
	char key[32];
	int ret = 0;

	config(&cfg);
	cfg.fresh = true;
	cfg.ram_head = 4096;
	cfg.max_object = 1 << 20;
	cfg.ssd_size = 900ull << 20;
	e = eopen_ok(&cfg, "100k");
	pthread_mutex_lock(&e->lock);
	for (int i = 0; i < N && !ret; i++) {
		struct gs_obj *obj;

		snprintf(key, sizeof(key), "object-%06d", i);
		obj = engine_record_alloc(key, strlen(key), 2);
		for (int k = 0; k < 2; k++) {
			obj_chunks(obj)[k] = (struct chunk){ .len = 4096, .sum = i,
							 .tier = GS_TIER_SSD };
			ret |= pool_alloc(&e->pools[GS_TIER_SSD], 4096,
					  &obj_chunks(obj)[k].addr);
		}
		obj->on_disk = true;
		obj->meta.size = 8192;
		obj->meta.cas = ++e->next_cas;
		ret |= engine_link_recovered(e, obj);
		engine_unref(e, obj);
	}
	t0 = now_ms();
	ret |= journal_checkpoint(e, false);
	ms = now_ms() - t0;
	pthread_mutex_unlock(&e->lock);
	CHECK(ret == 0 && stats(e).journal_records == N, "100k: %d", ret);
	printf("checkpoint of %d objects: %llu ms, %llu bytes\n", N,
	       (unsigned long long)ms, (unsigned long long)stats(e).journal_bytes);
	crash_close(&e);
	cfg.fresh = false;
	e = eopen_ok(&cfg, "100k replay");
	CHECK(stats(e).recovered_objects == N &&
	      e->pools[GS_TIER_SSD].used == N * 8192ull, "100k: recovered %llu",
	      (unsigned long long)stats(e).recovered_objects);
	printf("replay of %d objects: %llu ms\n", N,
	       (unsigned long long)stats(e).recovery_ms);
	eclose(&e);
}

static pid_t main_pid;

static void cleanup(void)
{
	char cmd[400];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	if (getpid() == main_pid && system(cmd))
		fprintf(stderr, "cannot remove %s\n", tmp);
}

int main(void)
{
	log_level = LOG_WARN;
	if (!mkdtemp(tmp))
		return 1;
	main_pid = getpid();
	wants = mmap(NULL, MAX_WANTS * sizeof(*wants), PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (wants == MAP_FAILED)
		return 1;
	atexit(cleanup);
	snprintf(ssd, sizeof(ssd), "%s/ssd", tmp);
	snprintf(jpath, sizeof(jpath), "%s/%s", ssd, JOURNAL_NAME);
	snprintf(crash_copy, sizeof(crash_copy), "%s/crash-copy", tmp);
	kill9();
	tails();
	headers();
	damage();
	missing();
	ram_heads();
	flushes();
	churn();
	syncs();
	hundred_k();
	return check_result();
}
