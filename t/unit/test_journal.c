/*
 * The index journal (storaged/engine/journal.h): a kill -9 loses no appended
 * record, replay keeps per key the event filed last and rebuilds the index
 * exactly (meta, extents, RAM values, claimed pool space), a torn or
 * damaged tail is cut and what precedes it kept, a damaged or foreign
 * header is refused with a reason (test_journal_damage.c has damage
 * before good records, a missing journal and a smaller --ram-head),
 * --fresh empties, a checkpoint holds
 * exactly the live set (and one is taken when the journal outgrows it,
 * in the background while stores, replacements and deletes go on: what
 * the journal holds at any moment replays to the index of that moment),
 * and the --sync-interval thread advances journal_synced().
 */

#define JOURNAL_TEST_TMP "/var/tmp/goblin-test-journal.XXXXXX"
#include "journal_util.h"
#include "pool.h"
#include "layout.h"
#include "index.h"

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
		bytes += journal_put_len(e, e->clock[i]);
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
	header_refused(&cfg, fd, &h, "format version 3");
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


static void churn(void)
{
	struct gs_config cfg;
	struct gs_engine *e = fresh_start(&cfg, "churn");
	struct gs_stats st;

	/* one object replaced until the journal passes 64 MiB: one checkpoint,
	 * taken on the way, of that object alone */
	for (int i = 0; i < 1200; i++)
		store(e, "churn", 60000, i);
	journal_bg_wait(e);		/* it is taken in the background */
	st = stats(e);
	CHECK(st.checkpoints == 1 && st.journal_bytes < JOURNAL_MIN_CHECKPOINT / 4,
	      "churn: %llu checkpoints, %llu bytes", (unsigned long long)st.checkpoints,
	      (unsigned long long)st.journal_bytes);
	crash_close(&e);
	e = eopen_ok(&cfg, "churned");
	check_index(e, "churned");
	eclose(&e);
}

/* ---- checkpoints in the background, taken while the index changes ---- */

enum { BG_N = 20000 };
static uint32_t bg_seed[BG_N];		/* of the value each key holds; 0: none */

static uint64_t bg_size(uint32_t seed)
{
	return 16 + seed % 300;
}

static void bg_key(char *key, size_t len, int i)
{
	snprintf(key, len, "bg-%05d", i);
}

/* Stores (or replaces) key <i> with a value of <seed>. */
static void bg_store(struct gs_engine *e, int i, uint32_t seed)
{
	struct gs_obj *obj;
	char key[32];
	int ret;

	bg_key(key, sizeof(key), i);
	pthread_mutex_lock(&e->lock);
	ret = engine_reserve(e, key, strlen(key), bg_size(seed), &obj);
	if (ret == 0) {
		fill(obj_head_ptr(e, obj), bg_size(seed), seed);
		ret = engine_link(e, obj, GS_IF_ANY, 0, NULL);
		engine_unref(e, obj);
	}
	pthread_mutex_unlock(&e->lock);
	CHECK(ret == 0, "bg store %s: %d", key, ret);
	bg_seed[i] = ret == 0 ? seed : bg_seed[i];
}

/* Every key holds what bg_seed[] says, and nothing else is linked. */
static void bg_check(struct gs_engine *e, const char *what)
{
	char key[32], val[400];
	unsigned live = 0, bad = 0;

	pthread_mutex_lock(&e->lock);
	for (int i = 0; i < BG_N; i++) {
		struct gs_obj *obj;

		bg_key(key, sizeof(key), i);
		obj = engine_find(e, key, strlen(key));
		if (!bg_seed[i]) {
			bad += obj != NULL;
			continue;
		}
		live++;
		fill(val, bg_size(bg_seed[i]), bg_seed[i]);
		bad += !obj || obj->meta.size != bg_size(bg_seed[i]) ||
		       memcmp(obj_head_ptr(e, obj), val, obj->meta.size);
	}
	CHECK(bad == 0 && e->clock_len == live, "%s: %u keys wrong, %u linked, want %u",
	      what, bad, e->clock_len, live);
	pthread_mutex_unlock(&e->lock);
}

/* Replacements, deletes and new keys, one per hold of e->lock, so the
 * checkpoint thread's walk goes on between them. */
static void bg_ops(struct gs_engine *e, unsigned n, uint64_t *rnd)
{
	char key[32];

	for (unsigned k = 0; k < n; k++) {
		int i;

		*rnd = *rnd * 6364136223846793005ull + 1442695040888963407ull;
		i = (*rnd >> 33) % BG_N;
		if ((*rnd >> 20) % 4 == 0 && bg_seed[i]) {
			bg_key(key, sizeof(key), i);
			CHECK(gs_delete(e, key, strlen(key)) == 0, "bg delete %s", key);
			bg_seed[i] = 0;
		} else {
			bg_store(e, i, (uint32_t)(*rnd >> 40) | 1);
		}
	}
}

static void background(void)
{
	struct gs_config cfg;
	struct gs_engine *e;
	uint64_t rnd = 27, cps;
	char what[64];

	config(&cfg);
	cfg.fresh = true;
	cfg.checkpoint_size = 4096;	/* checkpoints come every few MB */
	e = eopen_ok(&cfg, "bg");
	cfg.fresh = false;
	for (int i = 0; i < BG_N; i++)
		bg_store(e, i, i + 1);
	for (int round = 0; round < 6; round++) {
		bg_ops(e, 30000, &rnd);
		/* odd rounds: killed with a checkpoint likely under way */
		if (round % 2 == 0)
			journal_bg_wait(e);
		cps = stats(e).checkpoints;
		crash_close(&e);
		snprintf(what, sizeof(what), "bg round %d (%llu checkpoints)",
			 round, (unsigned long long)cps);
		e = eopen_ok(&cfg, what);
		bg_check(e, what);
		CHECK(round % 2 || cps > 0, "%s: none taken", what);
	}
	eclose(&e);
	e = eopen_ok(&cfg, "bg after stop");
	bg_check(e, "bg after stop");
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
	cfg.sync_interval = 20;
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

	cfg.sync_interval = 0;
	e = eopen_ok(&cfg, "no sync");
	put_want(e, want_new("s2", 100, 2));
	CHECK(journal_synced(e) == find_want("s2")->meta.cas, "unsynced journal_synced %llu",
	      (unsigned long long)journal_synced(e));
	journal_wait_synced(e, UINT64_MAX);	/* returns at once */
	CHECK(stats(e).syncs == 0, "syncs without --sync-interval");
	eclose(&e);

	/* no pools, no journal */
	cfg.ssd_dir.n = 0;
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
		obj = engine_record_alloc(key, strlen(key), 2, 2);
		for (int k = 0; k < 2; k++) {
			obj_chunks(obj)[k] = (struct chunk){ .len = 4096, .sum = i,
							 .tier = GS_TIER_SSD,
							 .run = k };
			ret |= pool_alloc(&e->pools[GS_TIER_SSD], 4096,
					  &obj_runs(obj)[k]);
		}
		obj->on_disk = true;
		obj->meta.size = 8192;
		obj->meta.cas = ++e->next_cas;
		ret |= engine_link_recovered(e, obj);
		engine_unref(e, obj);
	}
	t0 = mono_ms();
	ret |= journal_checkpoint(e, false);
	ms = mono_ms() - t0;
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

int main(void)
{
	if (journal_test_init() < 0)
		return 1;
	kill9();
	tails();
	headers();
	flushes();
	churn();
	background();
	syncs();
	hundred_k();
	return check_result();
}
