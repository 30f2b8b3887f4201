/*
 * Objects' attributes (storaged/engine/attr.c) and the store's identity:
 * a writer's attributes come back with the object, RAM and disk alike;
 * gs_obj_set_attr replaces them on the live object (-ENOENT once it is
 * replaced, -E2BIG past GS_ATTR_MAX); a set drops them, append, prepend,
 * gs_update and touch keep them; objects without any cost no index bytes
 * more; after kill -9 (the journal as appended), after a clean close (a
 * checkpoint of PUTA records) and after a checkpoint taken mid-run, every
 * attribute and value byte is back; a damaged PUTA or ATTR with good
 * records after it is refused, and --journal-salvage drops the object it
 * names; a torn ATTR at the tail is cut (the attributes before stay); a
 * journal of version 1 is still read; the identity is kept across opens and
 * new with fresh or without pools.
 */
#include <signal.h>
#include <sys/wait.h>

#include "attr.h"
#include "check.h"
#include "engine_util.h"
#include "index.h"
#include "journal.h"

static char tmp[] = "/var/tmp/goblin-test-attr.XXXXXX";
static char ssd[300], jpath[400];

static void config(struct gs_config *cfg)
{
	store_config(cfg, 32 << 20, 16 << 20, 64 << 20, 0);
	cfg->ram_head = 64 << 10;
	cfg->max_object = 8 << 20;
	cfg->ssd_dir.v[0] = ssd;
	cfg->ssd_dir.n = 1;
}

static struct gs_engine *eopen(const struct gs_config *cfg, const char *what)
{
	struct gs_engine *e;
	char err[512] = "";
	int ret = gs_engine_open(&e, cfg, err, sizeof(err));

	CHECK(ret == 0, "%s: open: %s", what, err);
	if (ret)
		exit(check_result());
	return e;
}

/* Stores <size> bytes of seed <seed> under <key> with attributes of
 * <alen> bytes of seed <aseed> (none when 0). */
static int put_attr(struct gs_io *io, const char *key, uint64_t size,
		    uint32_t seed, size_t alen, uint32_t aseed)
{
	char *val = malloc(size + 1), attr[GS_ATTR_MAX + 1];
	struct waitres wr = { 0 };
	struct gs_writer *w;
	uint64_t pos = 0;
	int ret;

	fill(val, size, seed);
	fill(attr, alen, aseed);
	ret = gs_writer_open(io, key, strlen(key), size, 7, 0, GS_WRITE_SET, &w);
	if (ret == 0 && alen)
		ret = gs_writer_attr(w, attr, alen);
	while (ret == 0 && pos < size) {
		void *p;
		size_t n;

		if (gs_writer_buf(w, &p, &n, on_wake, NULL) == -EAGAIN) {
			gs_io_run(io, false);
			continue;
		}
		n = n > size - pos ? size - pos : n;
		memcpy(p, val + pos, n);
		gs_writer_advance(w, n);
		pos += n;
	}
	free(val);
	if (ret == 0)
		ret = gs_writer_finish(&w, GS_IF_ANY, 0, on_stored, &wr);
	if (ret < 0) {
		gs_writer_abort(&w);
		return ret;
	}
	return run_for(io, &wr.done, 10000) ? wr.res : -ETIMEDOUT;
}

/* Whether <key> holds <size> bytes of seed <seed> and <alen> attribute
 * bytes of seed <aseed>, every byte read back. */
static bool holds(struct gs_engine *e, struct gs_io *io, const char *key,
		  uint64_t size, uint32_t seed, size_t alen, uint32_t aseed)
{
	char want[GS_ATTR_MAX], got[GS_ATTR_MAX + 1];
	struct waitres wr = { 0 };
	struct gs_obj *obj;
	bool ok = true;
	char *exp, *buf;
	size_t n;

	if (gs_lookup(e, key, strlen(key), &obj) < 0) {
		fprintf(stderr, "%s: not found\n", key);
		return false;
	}
	n = gs_obj_attr(e, obj, got, sizeof(got));
	fill(want, alen, aseed);
	if (n != alen || memcmp(got, want, alen)) {
		fprintf(stderr, "%s: attributes of %zu bytes, want %zu\n", key,
			n, alen);
		ok = false;
	}
	exp = malloc(size + 1);
	buf = aligned_alloc(4096, gs_read_size(obj));
	fill(exp, size, seed);
	if (gs_obj_meta(obj)->size != size ||
	    gs_read_into(io, obj, buf, on_done, &wr) < 0 ||
	    run_until(io, &wr) < 0 || memcmp(buf, exp, size)) {
		fprintf(stderr, "%s: value differs\n", key);
		ok = false;
	}
	free(exp);
	free(buf);
	gs_obj_put(e, &obj);
	return ok;
}

static int set_attr(struct gs_engine *e, const char *key, size_t alen,
		    uint32_t aseed)
{
	char attr[GS_ATTR_MAX + 1];
	struct gs_obj *obj;
	int ret;

	if (gs_lookup(e, key, strlen(key), &obj) < 0)
		return -ENOENT;
	fill(attr, alen, aseed);
	ret = gs_obj_set_attr(e, obj, attr, alen);
	gs_obj_put(e, &obj);
	return ret;
}

/* ---- the API ---- */

static int add_one(void *arg, const void *old, size_t oldlen,
		   struct gs_meta *meta, const void **new, size_t *newlen)
{
	static char buf[64];

	(void)arg;
	(void)meta;
	if (oldlen > sizeof(buf))
		return -E2BIG;
	memcpy(buf, old, oldlen);
	buf[0]++;
	*new = buf;
	*newlen = oldlen;
	return 0;
}

static void test_api(void)
{
	struct gs_config cfg;
	struct gs_engine *e;
	struct gs_io *io;
	struct gs_writer *w;
	struct waitres wr = { 0 };
	struct gs_obj *obj, *old;
	struct gs_stats st;
	char big[GS_ATTR_MAX + 1] = { 0 };
	uint64_t rec;

	config(&cfg);
	cfg.fresh = true;
	e = eopen(&cfg, "api");
	CHECK(gs_io_create(e, &io) == 0, "io");
	/* objects without attributes: no attribute bytes in the index */
	for (int i = 0; i < 50; i++) {
		char key[32];

		snprintf(key, sizeof(key), "plain-%d", i);
		CHECK(put_attr(io, key, i % 2 ? 300000 : 1000, i, 0, 0) == 0,
		      "store %s", key);
	}
	gs_stats(e, &st);
	CHECK(st.index_attr_bytes == 0 && st.attr_objects == 0,
	      "no attribute bytes without attributes: %llu",
	      (unsigned long long)st.index_attr_bytes);
	CHECK(st.index_bytes == st.index_record_bytes + st.index_table_bytes,
	      "index_bytes as before");
	rec = st.index_record_bytes;
	CHECK(holds(e, io, "plain-3", 300000, 3, 0, 0), "plain-3 read back");

	CHECK(put_attr(io, "ram", 1000, 1, 300, 11) == 0, "store ram");
	CHECK(put_attr(io, "disk", 700000, 2, GS_ATTR_MAX, 12) == 0,
	      "store disk with GS_ATTR_MAX bytes of attributes");
	CHECK(holds(e, io, "ram", 1000, 1, 300, 11), "ram's attributes");
	CHECK(holds(e, io, "disk", 700000, 2, GS_ATTR_MAX, 12),
	      "disk's attributes");
	gs_stats(e, &st);
	CHECK(st.attr_objects == 2 && st.index_attr_bytes > 300 + GS_ATTR_MAX,
	      "attr_objects %llu, index_attr_bytes %llu",
	      (unsigned long long)st.attr_objects,
	      (unsigned long long)st.index_attr_bytes);
	CHECK(st.index_record_bytes - rec ==
	      engine_malloc_bytes(engine_record_size(3, 0, 0)) +
	      engine_malloc_bytes(engine_record_size(4, 3, 1)),
	      "records with attributes are no larger");

	/* a writer's limits */
	CHECK(gs_writer_open(io, "x", 1, 10, 0, 0, GS_WRITE_SET, &w) == 0, "open");
	CHECK(gs_writer_attr(w, big, GS_ATTR_MAX + 1) == -E2BIG, "E2BIG");
	CHECK(gs_writer_attr(w, big, 10) == 0 && gs_writer_attr(w, big, 0) == 0,
	      "set, then dropped");
	gs_writer_abort(&w);
	CHECK(gs_writer_open(io, "ram", 3, 10, 0, 0, GS_WRITE_APPEND, &w) == 0,
	      "append open");
	CHECK(gs_writer_attr(w, big, 10) == -EINVAL, "append takes none");
	gs_writer_abort(&w);

	/* replaced on the live object */
	CHECK(set_attr(e, "ram", 100, 21) == 0, "set_attr ram");
	CHECK(holds(e, io, "ram", 1000, 1, 100, 21), "ram's new attributes");
	CHECK(set_attr(e, "plain-0", 50, 22) == 0, "set_attr on one without");
	CHECK(holds(e, io, "plain-0", 1000, 0, 50, 22), "plain-0 has some");
	CHECK(set_attr(e, "plain-0", 0, 0) == 0 &&
	      holds(e, io, "plain-0", 1000, 0, 0, 0), "and none again");
	CHECK(gs_lookup(e, "ram", 3, &obj) == 0, "pin ram");
	CHECK(gs_obj_set_attr(e, obj, big, GS_ATTR_MAX + 1) == -E2BIG,
	      "set_attr E2BIG");
	CHECK(gs_obj_attr(e, obj, NULL, 0) == 100, "length alone");

	/* kept by append, prepend, update and touch */
	CHECK(concat(io, "ram", false, "tail", 4, &wr) == 0 &&
	      run_for(io, &wr.done, 10000) && wr.res == 0, "append");
	CHECK(gs_obj_set_attr(e, obj, big, 10) == -ENOENT,
	      "set_attr on the value the append replaced: ENOENT");
	gs_obj_put(e, &obj);
	CHECK(gs_lookup(e, "ram", 3, &obj) == 0 &&
	      gs_obj_attr(e, obj, NULL, 0) == 100, "append kept them");
	gs_obj_put(e, &obj);
	memset(&wr, 0, sizeof(wr));
	CHECK(concat(io, "ram", true, "head", 4, &wr) == 0 &&
	      run_for(io, &wr.done, 10000) && wr.res == 0, "prepend");
	CHECK(put_attr(io, "ctr", 8, 5, 40, 23) == 0, "store ctr");
	CHECK(gs_update(e, "ctr", 3, add_one, NULL, NULL) == 0, "update");
	CHECK(gs_touch(e, "ctr", 3, time(NULL) + 1000, NULL) == 0, "touch");
	CHECK(gs_lookup(e, "ctr", 3, &obj) == 0 &&
	      gs_obj_attr(e, obj, big, sizeof(big)) == 40, "update, touch kept them");
	gs_obj_put(e, &obj);
	CHECK(gs_lookup(e, "ram", 3, &obj) == 0 &&
	      gs_obj_attr(e, obj, big, sizeof(big)) == 100 &&
	      gs_obj_meta(obj)->size == 1008, "prepend kept them");
	gs_obj_put(e, &obj);
	/* a set replaces them */
	CHECK(gs_lookup(e, "disk", 4, &old) == 0, "pin disk");
	CHECK(put_attr(io, "disk", 5000, 9, 0, 0) == 0, "set over disk");
	CHECK(gs_obj_attr(e, old, NULL, 0) == GS_ATTR_MAX,
	      "the pinned old value keeps its own");
	CHECK(gs_obj_set_attr(e, old, big, 5) == -ENOENT, "set_attr ENOENT");
	gs_obj_put(e, &old);
	CHECK(holds(e, io, "disk", 5000, 9, 0, 0), "a set drops them");
	CHECK(gs_delete(e, "ctr", 3) == 0, "delete");
	gs_stats(e, &st);
	CHECK(st.attr_objects == 1, "attr_objects %llu: ram's alone",
	      (unsigned long long)st.attr_objects);
	gs_io_destroy(&io);
	gs_engine_close(&e);
}

/* ---- restarts ---- */

/* What the crash child stores, and what must be back. */
static void crash_work(struct gs_engine *e, struct gs_io *io, bool checkpoint)
{
	char key[32];

	for (int i = 0; i < 20; i++) {
		snprintf(key, sizeof(key), "k%02d", i);
		CHECK(put_attr(io, key, i % 3 ? 2000 + i : 400000 + i * 4099, i,
			       i % 4 ? 10 * i + 1 : 0, 100 + i) == 0, "put %s", key);
	}
	if (checkpoint) {
		pthread_mutex_lock(&e->lock);
		CHECK(journal_checkpoint(e, false) == 0, "checkpoint");
		pthread_mutex_unlock(&e->lock);
	}
	CHECK(set_attr(e, "k01", 3000, 201) == 0, "set_attr k01");
	CHECK(set_attr(e, "k02", 0, 0) == 0, "set_attr k02 to none");
	CHECK(set_attr(e, "k04", 17, 204) == 0, "set_attr k04 (had none)");
	CHECK(set_attr(e, "k05", 5, 205) == 0 && set_attr(e, "k05", 6, 305) == 0,
	      "set_attr k05 twice");
	CHECK(put_attr(io, "k06", 100, 66, 0, 0) == 0, "k06 replaced bare");
	CHECK(set_attr(e, "k07", 70, 207) == 0, "set_attr k07");
	CHECK(put_attr(io, "k07", 700000, 77, 9, 307) == 0, "then replaced");
	CHECK(gs_delete(e, "k08", 3) == 0, "k08 deleted");
}

static void crash_check(struct gs_engine *e, struct gs_io *io, const char *what)
{
	char key[32];
	struct gs_obj *obj;

	for (int i = 0; i < 20; i++) {
		uint64_t size = i % 3 ? 2000 + i : 400000 + i * 4099;
		size_t alen = i % 4 ? 10 * i + 1 : 0;
		uint32_t aseed = 100 + i, seed = i;

		snprintf(key, sizeof(key), "k%02d", i);
		if (i == 8) {
			CHECK(gs_lookup(e, key, 3, &obj) == -ENOENT,
			      "%s: k08 stays deleted", what);
			continue;
		}
		if (i == 1)
			alen = 3000, aseed = 201;
		if (i == 2)
			alen = 0;
		if (i == 4)
			alen = 17, aseed = 204;
		if (i == 5)
			alen = 6, aseed = 305;
		if (i == 6)
			size = 100, seed = 66, alen = 0;
		if (i == 7)
			size = 700000, seed = 77, alen = 9, aseed = 307;
		CHECK(holds(e, io, key, size, seed, alen, aseed), "%s: %s", what,
		      key);
	}
}

static bool recovered(struct gs_engine *e, const char *key)
{
	struct gs_obj *obj;
	bool r;

	if (gs_lookup(e, key, strlen(key), &obj) < 0)
		return false;
	r = gs_obj_recovered(obj);
	gs_obj_put(e, &obj);
	return r;
}

/* Every object recovered is marked so until its attributes are set or it
 * is replaced (the same attributes and bytes again: crash_check holds). */
static void recovered_check(struct gs_engine *e, struct gs_io *io,
			    const char *what)
{
	char key[32];
	int n = 0;

	for (int i = 0; i < 20; i++) {
		snprintf(key, sizeof(key), "k%02d", i);
		n += i != 8 && recovered(e, key);
	}
	CHECK(n == 19, "%s: %d of 19 objects marked recovered", what, n);
	CHECK(set_attr(e, "k03", 31, 103) == 0 && !recovered(e, "k03"),
	      "%s: attributes set, no longer recovered", what);
	CHECK(put_attr(io, "k09", 400000 + 9 * 4099, 9, 91, 109) == 0 &&
	      !recovered(e, "k09"), "%s: replaced, not recovered", what);
	CHECK(recovered(e, "k10"), "%s: the others still are", what);
}

static void test_restarts(void)
{
	struct gs_config cfg;
	struct gs_engine *e;
	struct gs_io *io;
	int status;

	for (int cp = 0; cp < 2; cp++) {
		const char *what = cp ? "kill -9 after a checkpoint" : "kill -9";
		pid_t pid;

		config(&cfg);
		cfg.fresh = true;
		fflush(stderr);
		pid = fork();
		if (pid == 0) {
			e = eopen(&cfg, "child");
			if (gs_io_create(e, &io) < 0)
				_exit(2);
			crash_work(e, io, cp);
			fflush(stderr);
			if (failures) {
				fprintf(stderr, "child: %d failures\n", failures);
				_exit(1);
			}
			kill(getpid(), SIGKILL);
		}
		CHECK(waitpid(pid, &status, 0) == pid && WIFSIGNALED(status),
		      "%s: the child ran (status %d)", what, status);
		cfg.fresh = false;
		e = eopen(&cfg, what);
		CHECK(gs_io_create(e, &io) == 0, "io");
		crash_check(e, io, what);
		recovered_check(e, io, what);
		crash_check(e, io, what);
		gs_io_destroy(&io);
		gs_engine_close(&e);	/* a checkpoint: PUTA records */
		e = eopen(&cfg, "clean restart");
		CHECK(gs_io_create(e, &io) == 0, "io");
		crash_check(e, io, cp ? "clean restart 2" : "clean restart");
		gs_io_destroy(&io);
		gs_engine_close(&e);
	}
}

/* ---- damage, an old journal ---- */

/* The offset of the first record of <kind> in the journal, 0: none. */
static uint64_t find_rec(const char *buf, uint64_t size, uint8_t kind,
			 uint64_t from)
{
	for (uint64_t off = from; off + sizeof(struct jrec) <= size;) {
		const struct jrec *r = (const struct jrec *)(buf + off);

		if (r->kind == kind)
			return off;
		if (!r->len)
			return 0;
		off += r->len;
	}
	return 0;
}

static char *slurp(const char *path, uint64_t *size)
{
	FILE *f = fopen(path, "r");
	char *buf;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	*size = ftell(f);
	rewind(f);
	buf = malloc(*size);
	if (fread(buf, 1, *size, f) != *size) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

static void spit(const char *path, const char *buf, uint64_t size)
{
	FILE *f = fopen(path, "w");

	CHECK(f && fwrite(buf, 1, size, f) == size, "write %s", path);
	if (f)
		fclose(f);
}

static void test_damage(void)
{
	struct gs_config cfg;
	struct gs_engine *e;
	struct gs_io *io;
	char err[512] = "";
	uint64_t size, off;
	struct jhdr *h;
	char *buf;

	config(&cfg);
	cfg.fresh = true;
	e = eopen(&cfg, "damage");
	CHECK(gs_io_create(e, &io) == 0, "io");
	CHECK(put_attr(io, "a", 1000, 1, 50, 2) == 0, "a");
	CHECK(put_attr(io, "b", 1000, 3, 60, 4) == 0, "b");
	CHECK(set_attr(e, "b", 70, 5) == 0, "b's set_attr");
	CHECK(put_attr(io, "c", 1000, 6, 0, 0) == 0, "c");
	gs_io_destroy(&io);
	/* as a crash leaves it: keep the journal as appended */
	buf = slurp(jpath, &size);
	gs_engine_close(&e);
	CHECK(buf != NULL, "journal read");
	if (!buf)
		return;
	spit(jpath, buf, size);
	off = find_rec(buf, size, JREC_PUTA, sizeof(struct jhdr));
	CHECK(off, "a PUTA record");
	/* a version 1 header is still read (PUTA records and all) */
	h = (struct jhdr *)buf;
	h->version = 1;
	h->sum = journal_hdr_sum(h);
	spit(jpath, buf, size);
	config(&cfg);
	e = eopen(&cfg, "version 1");
	CHECK(gs_io_create(e, &io) == 0, "io");
	CHECK(holds(e, io, "a", 1000, 1, 50, 2) && holds(e, io, "b", 1000, 3, 70, 5),
	      "version 1: attributes back");
	gs_io_destroy(&io);
	gs_engine_close(&e);
	/* the attribute bytes of a's PUTA damaged, good records after */
	spit(jpath, buf, size);
	buf[off + ((struct jrec *)(buf + off))->len - 8] ^= 0x40;
	spit(jpath, buf, size);
	CHECK(gs_engine_open(&e, &cfg, err, sizeof(err)) == -EUCLEAN &&
	      strstr(err, "damage, not a torn tail"),
	      "a damaged PUTA is refused: %s", err);
	cfg.journal_salvage = true;
	e = eopen(&cfg, "salvage");
	CHECK(gs_io_create(e, &io) == 0, "io");
	{
		struct gs_obj *obj;

		CHECK(gs_lookup(e, "a", 1, &obj) == -ENOENT,
		      "salvage drops the object the damaged PUTA names");
	}
	CHECK(holds(e, io, "b", 1000, 3, 70, 5) && holds(e, io, "c", 1000, 6, 0, 0),
	      "the others are back");
	gs_io_destroy(&io);
	gs_engine_close(&e);
	/* an ATTR damaged (b's), good records after: refused; salvage drops
	 * b, whose attributes are not vouched for */
	h->version = JOURNAL_VERSION;
	h->sum = journal_hdr_sum(h);
	buf[off + ((struct jrec *)(buf + off))->len - 8] ^= 0x40;	/* a again */
	off = find_rec(buf, size, JREC_ATTR, sizeof(struct jhdr));
	CHECK(off, "an ATTR record");
	buf[off + ((struct jrec *)(buf + off))->len - 8] ^= 0x01;
	spit(jpath, buf, size);
	cfg.journal_salvage = false;
	CHECK(gs_engine_open(&e, &cfg, err, sizeof(err)) == -EUCLEAN &&
	      strstr(err, "damage, not a torn tail"),
	      "a damaged ATTR is refused: %s", err);
	cfg.journal_salvage = true;
	e = eopen(&cfg, "salvage ATTR");
	CHECK(gs_io_create(e, &io) == 0, "io");
	{
		struct gs_obj *obj;

		CHECK(gs_lookup(e, "b", 1, &obj) == -ENOENT,
		      "salvage drops the object the damaged ATTR names");
	}
	CHECK(holds(e, io, "a", 1000, 1, 50, 2) && holds(e, io, "c", 1000, 6, 0, 0),
	      "a and c are back");
	gs_io_destroy(&io);
	gs_engine_close(&e);
	cfg.journal_salvage = false;
	/* a torn ATTR at the tail is cut: the attributes before it stay */
	config(&cfg);
	cfg.fresh = true;
	e = eopen(&cfg, "torn");
	CHECK(gs_io_create(e, &io) == 0, "io");
	CHECK(put_attr(io, "t", 1000, 8, 30, 9) == 0, "t");
	CHECK(set_attr(e, "t", 2000, 10) == 0, "t's set_attr");
	gs_io_destroy(&io);
	free(buf);
	buf = slurp(jpath, &size);
	gs_engine_close(&e);
	if (!buf)
		return;
	off = find_rec(buf, size, JREC_ATTR, sizeof(struct jhdr));
	CHECK(off && off + ((struct jrec *)(buf + off))->len == size,
	      "the ATTR is the last record");
	spit(jpath, buf, size - 100);
	cfg.fresh = false;
	e = eopen(&cfg, "torn");
	CHECK(gs_io_create(e, &io) == 0, "io");
	CHECK(holds(e, io, "t", 1000, 8, 30, 9), "a torn ATTR is cut");
	gs_io_destroy(&io);
	gs_engine_close(&e);
	free(buf);
}

/* ---- the store's identity ---- */

static void test_identity(void)
{
	struct gs_config cfg;
	struct gs_engine *e;
	uint64_t a, b;

	config(&cfg);
	cfg.fresh = true;
	e = eopen(&cfg, "id");
	a = gs_engine_identity(e);
	gs_engine_close(&e);
	cfg.fresh = false;
	e = eopen(&cfg, "id again");
	CHECK(a && gs_engine_identity(e) == a, "kept: %llx",
	      (unsigned long long)a);
	gs_engine_close(&e);
	cfg.fresh = true;
	e = eopen(&cfg, "id fresh");
	CHECK(gs_engine_identity(e) != a, "new with fresh");
	gs_engine_close(&e);
	config(&cfg);
	cfg.ssd_dir.n = 0;
	e = eopen(&cfg, "ram");
	a = gs_engine_identity(e);
	gs_engine_close(&e);
	e = eopen(&cfg, "ram again");
	b = gs_engine_identity(e);
	gs_engine_close(&e);
	CHECK(a && b && a != b, "new at each start without pools");
}

int main(void)
{
	if (scratch_make(tmp) < 0)
		return 1;
	snprintf(ssd, sizeof(ssd), "%s/ssd", tmp);
	snprintf(jpath, sizeof(jpath), "%s/journal", ssd);
	test_api();
	test_restarts();
	test_damage();
	test_identity();
	scratch_remove(tmp);
	return check_result();
}
