/*
 * The index journal: what makes the index survive a restart, kill -9
 * included.  Every change to the set of objects on the pools is appended,
 * under e->lock and before the change is acknowledged or the space it frees
 * can be reused: a PUT (the record: key, meta, chunk extents and sums; the
 * value itself for an object wholly in RAM; a PUTA when it has attributes,
 * which follow), a DEL (delete, replace by nothing, eviction, expiry
 * reclaim), a TOUCH (new exptime), an ATTR (new attributes) and a FLUSH
 * (flush_all).  Each is filed under a sequence number of the engine's CAS
 * counter, strictly increasing from one append to the next: a PUT's is its
 * object's CAS, a DEL's or a FLUSH's the <seq> given when that is new, and
 * otherwise (a TOUCH, an ATTR, a reused <seq>) the journal takes the next CAS
 * (++e->next_cas).  Replay keeps, per key, the event filed last; a FLUSH
 * that is not for later ends every object filed before it.  Appends are
 * buffered writes: a process crash loses none once the call returned;
 * --sync-interval adds group-committed fdatasync for power loss.  The
 * journal is rewritten as a checkpoint of the live index when it grows
 * past max(--checkpoint-size, twice the live records), and at a clean stop;
 * the growth is weighed at the start of an append, never inside one, so a
 * checkpoint holds every change filed before it.
 * It lives in the first dir of the SSD pool (the HDD pool without one);
 * an engine without pools has none (e->journal == NULL, every call a no-op).
 */
#ifndef GOBLIN_JOURNAL_H
#define GOBLIN_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gs_engine;
struct gs_obj;
struct journal;

/* Opens (creating) the journal of <e>'s pools; with e->cfg.fresh, wipes it.
 * Sets e->journal (NULL without pools; a second call does nothing).
 * Returns 0 or -errno with a one-line reason in <err> (a journal of another
 * format is refused, one with a damaged header unless
 * e->cfg.journal_salvage, a missing one beside pools that hold extents:
 * --fresh discards them). */
int journal_open(struct gs_engine *e, char *err, size_t errlen);
/* Replays the journal into the empty index: links every live object it
 * holds, claims their pool space, sets recovered_objects and recovery_ms
 * and e->next_cas, e->invalid_at.  Once per open (a second call does
 * nothing).  Returns 0 or -errno with a reason: -EUCLEAN for a damaged
 * record with good ones after it (unless e->cfg.journal_salvage: it is
 * skipped, the object it names dropped, all logged, and a checkpoint
 * taken), -EEXIST for RAM-only objects larger than --ram-head.  A torn
 * tail is not an error: it is cut, and logged; so are objects whose
 * extents no longer fit the pools, or for which there is no RAM. */
int journal_recover(struct gs_engine *e, char *err, size_t errlen);
/* Checkpoints (fdatasynced) and closes; clears e->journal.  Takes e->lock;
 * nothing may append meanwhile. */
void journal_close(struct gs_engine *e);

/* Appends, e->lock held; 0 or -errno (the change must then not happen).
 * journal_put: <obj>'s meta (cas included) and chunks are final; an object
 * without chunks carries its meta.size bytes at obj->head.  journal_del:
 * <seq> the deletion's own sequence number (e.g. ++e->next_cas).
 * journal_touch: obj->meta.exptime is the new one.  journal_flush: <when>
 * not after now ends every object filed before; a later <when> is kept as
 * e->invalid_at is (objects stored up to <when> die at <when>). */
int journal_put(struct gs_engine *e, const struct gs_obj *obj);
int journal_del(struct gs_engine *e, const void *key, size_t klen,
		uint64_t seq);
int journal_touch(struct gs_engine *e, const struct gs_obj *obj);
/* journal_setattr: <obj>'s attributes become the <len> bytes at <p>. */
int journal_setattr(struct gs_engine *e, const struct gs_obj *obj,
		    const void *p, size_t len);
int journal_flush(struct gs_engine *e, uint64_t seq, int64_t when);
/* Whether the journal has room for the PUT of <obj> (its layout and size
 * final, its space not yet reserved), e->lock held: what a store checks
 * before it evicts for space.  The last JOURNAL_DEL_ROOM bytes of the room
 * are kept for deletes, evictions, touches and flushes. */
bool journal_room_for(struct gs_engine *e, const struct gs_obj *obj);

/* With --sync-interval: the highest sequence number such that every record
 * filed up to it is on stable storage (each advance calls
 * writer_wake_synced()); without, the last one filed (the page cache
 * survives a process crash); UINT64_MAX without a journal.  Lock-free. */
uint64_t journal_synced(const struct gs_engine *e);
/* Blocks until journal_synced() >= <seq> (about one sync interval); returns
 * at once without --sync-interval or when the journal is closing.  Call it
 * without e->lock.  Returns journal_sync_result(). */
int journal_wait_synced(struct gs_engine *e, uint64_t seq);
/* For a <seq> journal_synced() covers: 0, or -EIO when the fdatasync that
 * covered it failed (it may not survive a power loss). */
int journal_sync_result(const struct gs_engine *e, uint64_t seq);

/* ---- between journal.c and journal_replay.c (and the unit test) ---- */

#include <pthread.h>

#define JOURNAL_NAME	"journal"
#define JOURNAL_TMP	"journal.new"	/* a checkpoint being written */
#define JOURNAL_BG_TMP	"journal.bg"	/* one written in the background */
#define JOURNAL_MAGIC	"GOBLINJ\n"
#define JOURNAL_VERSION	2u		/* 2: PUTA and ATTR records */
#define JOURNAL_VERSION_MIN	1u	/* the oldest one read */
#define JOURNAL_MIN_CHECKPOINT	(64ull << 20)
/* Appends go into room allocated ahead (fallocate, KEEP_SIZE) a step at a
 * time, so a file system that fills up leaves the journal room to work;
 * the pools' growth keeps JOURNAL_RESERVE() free beside it, enough for a
 * checkpoint and some growth. */
#define JOURNAL_ROOM		(1ull << 20)
#define JOURNAL_DEL_ROOM	(256ull << 10)
#define JOURNAL_RESERVE(end)	(2 * (end) + 4 * JOURNAL_ROOM)

/* The file: a header, then records back to back, each a multiple of 8
 * bytes (so every field is aligned), little-endian. */
struct jhdr {
	char magic[8];
	uint32_t version;
	uint32_t hdr_len;		/* sizeof(struct jhdr) */
	uint64_t base_seq;		/* e->next_cas when written */
	int64_t created;		/* unix time */
	uint64_t zero[3];
	uint64_t sum;			/* xxh3 of the bytes before it */
};

enum jrec_kind { JREC_PUT = 1, JREC_DEL, JREC_TOUCH, JREC_FLUSH, JREC_PUTA,
		 JREC_ATTR };

/* Every record starts with this; <sum> is the xxh3 of the bytes after it
 * seeded with the 8 bytes before it, so a torn or stale tail shows. */
struct jrec {
	uint32_t len;			/* whole record, a multiple of 8 */
	uint8_t kind;
	uint8_t klen;			/* the key follows the kind's body */
	uint16_t zero;
	uint64_t sum;
	uint64_t seq;			/* what it is filed under */
};

/* PUT: jrec, jput, key (padded to 8), nchunks jchunk, and for an object
 * without chunks its size bytes of value (padded to 8). */
struct jput {
	uint64_t size;
	uint64_t cas;
	int64_t exptime;
	int64_t mtime;
	uint32_t flags;
	uint32_t nchunks;
};

struct jchunk {
	uint64_t addr;
	uint64_t sum;
	uint32_t len;
	uint8_t tier;
	uint8_t zero[3];
};

/* PUTA: a PUT of an object with attributes: the PUT's bytes, then a
 * jattr (cas 0) and its len bytes of attributes (padded to 8).  ATTR (its
 * attributes replaced): jrec, jattr, key, the attributes (padded to 8). */
struct jattr {
	uint64_t cas;			/* ATTR: of the object */
	uint32_t len;			/* at most GS_ATTR_MAX; ATTR: 0 = none */
	uint32_t zero;
};

/* DEL: jrec, key.  TOUCH: jrec, jtouch, key.  FLUSH: jrec, jflush. */
struct jtouch {
	uint64_t cas;			/* of the object touched */
	int64_t exptime;
};

struct jflush {
	uint64_t seq;			/* the caller's */
	int64_t when;
	int64_t time;			/* when it was filed */
};

/* Records gathered in memory (journal_bg.c). */
struct cp_buf {
	char *p;
	size_t len, cap;
};

/*
 * A checkpoint taken in the background (journal_bg.c): the live index at
 * the moment it starts, written by its thread while appends go on.  The
 * new file is that snapshot, then every record appended since (copied
 * into <tail> as it goes to the old file): what the old file says, at any
 * moment it is swapped in.  The walk takes e->lock a slice at a time; an
 * object the walk has not reached yet is written (captured) before it
 * leaves the index or moves behind the walk.  gs_obj.cp_done == <parity>:
 * in the snapshot, or linked since it started.  Under e->lock.
 */
struct journal_bg {
	pthread_t thread;
	pthread_cond_t wake;		/* with e->lock */
	bool running;			/* the thread exists */
	bool want;			/* a weigh is asked for */
	bool busy;			/* weighing or checkpointing */
	bool stop;
	bool active;			/* a snapshot is being taken */
	bool failed;			/* no memory for a record: no commit */
	bool flushed;			/* a FLUSH for now is in <tail> */
	bool parity;
	uint32_t pos;			/* the walk's next e->clock slot */
	int64_t nrec;			/* records in <snap> and <tail> */
	struct cp_buf snap;		/* snapshot records not written yet */
	struct cp_buf tail;		/* appended since it started */
};

struct journal {
	int dfd;			/* the pool dir (the pool's) */
	int fd;				/* guarded by fd_lock and e->lock */
	char path[4200];		/* for messages */
	uint64_t end;			/* bytes; appends go here */
	uint64_t records;
	uint64_t next_check;		/* end at which to weigh a checkpoint */
	uint64_t last;			/* sequence number of the last append */
	bool recovered;
	bool damaged_header;		/* read with --journal-salvage */
	void *buf;			/* one record being appended */
	size_t cap;
	/* room allocated past the end, [end, room): e->lock */
	uint64_t room;
	uint64_t room_weighed;		/* end when the index was last weighed */
	bool cramped;			/* logged: no room for a PUT */
	/* the page cache (journal_shed): e->lock */
	uint64_t wb;			/* writeback started below this */
	uint64_t shed_lo;		/* pages below are dropped */
	/* --sync-interval */
	bool syncing;			/* the thread runs */
	bool stop;
	uint64_t synced;
	uint64_t failed;		/* highest seq a failed sync covered */
	bool idle;			/* the thread waits for an append */
	pthread_t thread;
	pthread_mutex_t sync_lock;	/* stop, synced and the conds */
	pthread_cond_t tick, synced_cond;
	pthread_mutex_t fd_lock;	/* fd swaps vs the sync thread */
	struct journal_bg bg;
};

/*
 * The journal is read only at start, so its pages are not kept cached (a
 * cgroup would be charged for them): every JOURNAL_SHED_STEP of appends
 * starts the writeback of the last step and drops the pages of the steps
 * before, whose writeback has had a step's time; a sync or a synced
 * checkpoint drops everything it made clean; replay drops what it read.
 * journal_shed() drops the clean cached pages of [0, <upto>) of <fd> (the
 * page appends go on in is kept).  Lock-free.
 */
#define JOURNAL_SHED_STEP	(1u << 20)
void journal_shed(int fd, uint64_t upto);
/* After an append to <j> (e->lock held). */
void journal_shed_written(struct journal *j);

/* journal_room.c, e->lock held.  Makes room for a record of <len> bytes
 * at the end (a DEL, TOUCH or FLUSH, <small>, may take the last
 * JOURNAL_DEL_ROOM bytes): 0, or -ENOSPC (logged, counted). */
int journal_room_make(struct gs_engine *e, size_t len, bool small);
/* After the end moved back or the file was replaced: no room ahead. */
void journal_room_reset(struct gs_engine *e);

/* xxh3 of record <r> (its len bytes) as jrec.sum. */
uint64_t journal_rec_sum(const struct jrec *r);
/* xxh3 of <h> as jhdr.sum. */
uint64_t journal_hdr_sum(const struct jhdr *h);
/* Bytes of <obj>'s PUT (or PUTA) record; 0 when it cannot have one. */
size_t journal_put_len(const struct gs_engine *e, const struct gs_obj *obj);
/* Rewrites the journal as the live index (e->lock held); <sync>:
 * fdatasync it before the rename and the dir after.  0 or -errno (the old
 * journal is then kept). */
int journal_checkpoint(struct gs_engine *e, bool sync);
/* Checkpoints when the journal has outgrown the live index (e->lock held);
 * else sets when to look again.  With the background thread (journal_bg.c)
 * it only asks that thread to. */
void journal_weigh(struct gs_engine *e);
/* journal_weigh() in place, whatever it finds (at start: nothing is
 * served yet, and the first request finds the journal checkpointed). */
void journal_weigh_now(struct gs_engine *e);
/* The size past which a journal of <live> bytes is checkpointed. */
uint64_t journal_weigh_limit(const struct gs_engine *e, uint64_t live);
/* Sets when to weigh <j> again, its limit <limit>, no checkpoint taken. */
void journal_weigh_again(struct journal *j, uint64_t limit);
/* Makes checkpoint <fd> (<size> bytes, <nrec> records, at <tmp> in the
 * journal's dir, fdatasynced when <sync>) the journal: renames it, fsyncs
 * the dir when <sync>, swaps j->fd and resets the append state.  e->lock
 * held.  The old file's fd is closed, or, with <oldp>, put there for the
 * caller to close without e->lock (the last close of a large unlinked file
 * frees its blocks: a quarter second for 300 MB).  0, or -errno (<fd>
 * closed, <tmp> removed, the old file stays). */
int journal_cp_install(struct gs_engine *e, const char *tmp, int fd,
		       uint64_t size, int64_t nrec, bool sync, uint64_t t0,
		       int *oldp);
/* Encoders a checkpoint shares with appends: a header of <base_seq>; the
 * header of record <r> (its body written), sealed; <obj>'s PUT of <len>
 * bytes (journal_put_len()) at zeroed <r>, filed under <seq>. */
void journal_hdr_fill(struct jhdr *h, uint64_t base_seq);
void journal_rec_seal(struct jrec *r, size_t len, enum jrec_kind kind,
		      size_t klen, uint64_t seq);
void journal_put_encode(const struct gs_engine *e, struct jrec *r, size_t len,
			const struct gs_obj *obj, uint64_t seq);
/* pwrite() of all <len> bytes, EINTR and short writes resumed: 0 or
 * -errno. */
int journal_pwrite_all(int fd, const void *p, size_t len, uint64_t off);

/* ---- journal_bg.c: checkpoints in the background (struct journal_bg) ---- */

/* Hands the weighing to the thread (started on first use), e->lock held:
 * true, or false when it cannot run (weigh in place). */
bool journal_bg_weigh(struct gs_engine *e);
/* Drops the background checkpoint being taken, if any (a synchronous one
 * supersedes it; it marks every object, journal_bg_mark()).  e->lock. */
void journal_bg_cancel(struct gs_engine *e);
/* Stops the thread; without e->lock. */
void journal_bg_stop(struct gs_engine *e);
/* Waits, without e->lock, until the thread has nothing asked of it (unit
 * tests: an automatic checkpoint is complete). */
void journal_bg_wait(struct gs_engine *e);
/* Record <rec> of <len> bytes was appended (e->lock). */
void journal_bg_appended(struct gs_engine *e, const void *rec, size_t len);
/* A FLUSH that ends every object filed before it was appended (e->lock):
 * what leaves the index from now needs no capture. */
void journal_bg_flushed(struct gs_engine *e);
/* <obj> leaves the index; <last>, the CLOCK's last record, takes its slot
 * (e->lock).  Captures what the walk would miss. */
void journal_bg_unlink(struct gs_engine *e, struct gs_obj *obj,
		       struct gs_obj *last);
/* <obj> is linked, or written by a synchronous checkpoint: not for the
 * background one (e->lock). */
void journal_bg_mark(struct gs_engine *e, struct gs_obj *obj);
/* journal_sync.c.  Everything filed up to <seq> is on stable storage:
 * wakes who waits for it. */
void journal_publish_synced(struct gs_engine *e, struct journal *j,
			    uint64_t seq);
/* With --sync-interval, starts the sync thread of e->journal: 0, or -errno
 * with the reason in <err>. */
int journal_sync_start(struct gs_engine *e, char *err, size_t errlen);
/* Stops it (nothing to do without one). */
void journal_sync_stop(struct journal *j);
/* Bytes a checkpoint of the live index would take now (a walk of the
 * whole index; e->lock held). */
uint64_t journal_live_bytes(const struct gs_engine *e);
/* Whether <obj> is dead at <now> (expired or invalidated). */
bool journal_obj_dead(const struct gs_engine *e, const struct gs_obj *obj,
		      int64_t now);

#endif
