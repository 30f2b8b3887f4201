/*
 * Journal damage (storaged/engine/journal_replay.c): only a torn tail is cut; a
 * damaged record with good ones after it is refused, the journal left
 * byte for byte, and --journal-salvage skips it dropping what it names; a
 * journal missing beside extents is refused; a smaller --ram-head than
 * the RAM-only objects need is refused, the store kept.
 */
#define JOURNAL_TEST_TMP "/var/tmp/goblin-test-journal-damage.XXXXXX"
#include "journal_util.h"
#include "pool.h"

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
	refused(&cfg, "hdr_len", "journal header of 72 bytes, version 2 has 64",
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

int main(void)
{
	if (journal_test_init() < 0)
		return 1;
	damage();
	missing();
	ram_heads();
	return check_result();
}
