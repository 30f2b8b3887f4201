/*
 * libgoblin: the tiered large-object engine behind goblin-store.
 *
 * An object is split by offset:
 *
 *   0          head_len        head_len+ssd_prefix                  size
 *   |-- head ----|------ prefix -------|------------- tail ------------|
 *     RAM region      SSD pool                 HDD pool
 *     (memfd)         (O_DIRECT chunks)        (O_DIRECT chunks, striped)
 *
 * The disk part is cut into chunks (GS_SSD_CHUNK on the SSD, GS_HDD_CHUNK
 * on the HDD); each chunk is one extent in its pool, aligned to the device's
 * direct-I/O alignment, with its own xxh3 checksum kept in the index and
 * checked before any of its bytes are handed out.
 *
 * Threading: the engine (index, allocators, stats) is shared and internally
 * locked.  Disk I/O goes through a struct gs_io, one per thread, never shared:
 * every gs_io_*, gs_stream_* and gs_writer_* call on it, and every callback
 * it fires, happens on its owning thread.  Callbacks are only ever fired from
 * gs_io_run(), never from inside the call that arms them.
 *
 * Errors are negative errno values:
 *   -ENOENT  no such object          -EEXIST  a link condition not met
 *   -E2BIG   larger than max_object            (the key exists, or its
 *                                              CAS differs)
 *   -ENOMEM  no room (no-evict, or    -EAGAIN  come back after the wake
 *            all candidates pinned)            callback fires
 *   -EBADMSG checksum mismatch        -EIO     device error
 */
#ifndef GOBLIN_H
#define GOBLIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

#include "goblin-config-t.h"
#include "goblin-stats-t.h"

#define GS_KEY_MAX	250		/* bytes in a key, everywhere */
#define GS_SSD_CHUNK	(256u << 10)
#define GS_HDD_CHUNK	(1u << 20)
#define GS_IO_BUFFER	(1u << 20)	/* one registered buffer holds a chunk */
#define GS_ATTR_MAX	4096u		/* bytes of an object's attributes */
/* A writer's size not known until gs_writer_finish() (at most max_object);
 * gs_meta.size of an object still filling whose size is not known yet;
 * a stream's length: to the end. */
#define GS_SIZE_UNKNOWN	UINT64_MAX

enum gs_tier { GS_TIER_RAM, GS_TIER_SSD, GS_TIER_HDD, GS_TIERS };

struct gs_engine;
struct gs_io;
struct gs_obj;
struct gs_stream;
struct gs_writer;

/* Fills <cfg> with GS_CONFIG's defaults: RAM-only (no pools), the region
 * locked. */
void gs_config_init(struct gs_config *cfg);

/*
 * Opens the engine: maps the RAM region, opens and checks every pool dir.
 * Returns 0 and sets <*ep>, or -errno with a one-line reason in <err>; a
 * gs_config field the reason is about is named in backquotes: `ram_head`.
 */
int gs_engine_open(struct gs_engine **ep, const struct gs_config *cfg,
		   char *err, size_t errlen);

/* Closes the engine and clears <*ep>.  No gs_io may still exist. */
void gs_engine_close(struct gs_engine **ep);

/* The config <e> was opened with (a copy; the dirs' strings are the
 * caller's). */
const struct gs_config *gs_engine_config(const struct gs_engine *e);

/* The store's identity: random and never 0, kept in its pools' markers
 * (the same across restarts, kill -9 included), new with cfg.fresh and at
 * each start of a store without pools.  With an object's CAS, a name of
 * its value no other store or former life of this one gives. */
uint64_t gs_engine_identity(const struct gs_engine *e);

/* The RAM region's memfd (heads live at gs_meta.head_off), its size, and
 * where the engine maps it (gs_obj_head() and gs_stream_peek() point into
 * that mapping). */
int gs_engine_region_fd(const struct gs_engine *e);
uint64_t gs_engine_region_size(const struct gs_engine *e);
const void *gs_engine_region_base(const struct gs_engine *e);

/* ---- objects ---- */

struct gs_meta {
	uint64_t size;
	uint64_t cas;
	uint64_t head_off;		/* bytes [0, head_len) are in RAM: read */
	uint32_t head_len;		/*   them with gs_obj_head(), since a */
					/*   head may come in while pinned */
	uint32_t flags;
	uint32_t exptime;		/* absolute unix time, 0 = never; past
					 * 2106 it saturates (gs_exptime()) */
	uint32_t mtime;			/* when it was stored, unix time */
};

/* An absolute expiry time <t> as gs_meta keeps it: 0 stays never, one
 * before 1970 is 1 (long past), one past 2106 saturates. */
static inline uint32_t gs_exptime(int64_t t)
{
	if (t < 0)
		return 1;
	return t > UINT32_MAX ? UINT32_MAX : (uint32_t)t;
}

/* 0, or -E2BIG when an object of <size> bytes is over max_object. */
int gs_check_size(const struct gs_engine *e, uint64_t size);

/* Looks up <key> and pins it: its memory and extents stay valid, whatever
 * happens to the key, until gs_obj_put().  Returns 0 or -ENOENT. */
int gs_lookup(struct gs_engine *e, const void *key, size_t klen,
	      struct gs_obj **objp);
/* What a lookup that found nothing met: no object, or a dead one. */
enum gs_miss { GS_MISS_ABSENT, GS_MISS_EXPIRED, GS_MISS_FLUSHED };
/* One object as gs_walk() copies it out. */
struct gs_walk_item {
	struct gs_meta meta;
	bool fetched;			/* looked up since the CLOCK hand passed */
	uint8_t klen;
	char key[GS_KEY_MAX];
};
/*
 * Copies up to <max> (> 0) live objects into <out>, from the CLOCK
 * position *<pos> on (0 to start), and advances *<pos>.  Holds the index
 * lock for a batch at most (and 1,024 slots), so a caller lists the store
 * a batch at a time.  Returns how many were copied, 0 at the end.  No
 * object is listed twice; one moved by a removal during the walk may be
 * missed.
 */
unsigned gs_walk(struct gs_engine *e, uint64_t *pos, struct gs_walk_item *out,
		 unsigned max);
/* gs_lookup(), telling in *<why> what a miss (-ENOENT) met, for a front
 * that counts its own get_expired and get_flushed. */
int gs_lookup_why(struct gs_engine *e, const void *key, size_t klen,
		  struct gs_obj **objp, enum gs_miss *why);
/* The pinned <obj>'s meta; valid until gs_obj_put(). */
const struct gs_meta *gs_obj_meta(const struct gs_obj *obj);
/*
 * Looks up the object a shared writer (gs_writer_share()) of <key> is
 * filling and pins it, as gs_lookup() does: 0 or -ENOENT (no shared writer
 * is filling <key>; gs_lookup() never finds one).  While it fills,
 * gs_obj_filling() is true and gs_meta.size is GS_SIZE_UNKNOWN unless the
 * writer gave its size; streams over it deliver bytes as they land (RAM
 * head bytes once copied, disk chunks once written and their checksum
 * recorded), and end at the final size once the writer finished: the pinned
 * <obj> then holds the stored value (gs_meta says its size and CAS).  Its
 * streams get -ECONNABORTED when the writer is aborted or its link fails.
 */
int gs_lookup_filling(struct gs_engine *e, const void *key, size_t klen,
		      struct gs_obj **objp);
/* Whether the pinned <obj> is still being filled by its writer (and may
 * yet be aborted); read it again after a stream's wake. */
bool gs_obj_filling(const struct gs_obj *obj);
/* The bytes [0, *<len>) of the pinned <obj> that are in RAM, at
 * gs_meta.head_off in the region; NULL with *<len> 0 when none.  An object
 * larger than ram_head on an engine with pools lives whole on disk and its
 * head is a cache: it may be absent, and come in while pinned (never leave
 * while pinned). */
const void *gs_obj_head(const struct gs_engine *e, const struct gs_obj *obj,
			uint64_t *len);
/* Bytes of the pinned <obj> on tier <t> (RAM: its head, cached or its own,
 * and RAM chunks). */
uint64_t gs_obj_tier_bytes(const struct gs_obj *obj, enum gs_tier t);
/* Unpins and clears <*objp>. */
void gs_obj_put(struct gs_engine *e, struct gs_obj **objp);

/*
 * An object's attributes: at most GS_ATTR_MAX opaque bytes stored,
 * journaled and replayed with it (gs_writer_attr() gives them), kept by
 * what builds on its value (append, prepend, gs_update, touch), not by a
 * set that replaces it.  Since they may be replaced while the object is
 * pinned, they are copied out: gs_obj_attr() copies up to <cap> of the
 * pinned <obj>'s into <buf> (NULL when <cap> is 0) and returns how many
 * it has (0: none).
 */
size_t gs_obj_attr(struct gs_engine *e, const struct gs_obj *obj, void *buf,
		   size_t cap);
/* Replaces the pinned <obj>'s attributes by the <len> bytes at <p> (0:
 * none), journaled (without waiting for --sync-interval's sync): 0,
 * -ENOENT (no longer its key's live object), -E2BIG (over GS_ATTR_MAX),
 * -ENOMEM, -EIO (the journal could not take it: unchanged). */
int gs_obj_set_attr(struct gs_engine *e, struct gs_obj *obj, const void *p,
		    size_t len);
/* Whether the pinned <obj> was stored before this engine opened (brought
 * back by recovery) and its attributes were not set since: a cache that
 * may have missed changes meanwhile revalidates it. */
bool gs_obj_recovered(const struct gs_obj *obj);

/* Returns 0 or -ENOENT. */
int gs_delete(struct gs_engine *e, const void *key, size_t klen);
/* Deletes only if the object's CAS is <cas>: 0, -ENOENT or -EEXIST. */
int gs_delete_cas(struct gs_engine *e, const void *key, size_t klen,
		  uint64_t cas);
/* Sets a new absolute <exptime>; fills <meta> if not NULL. 0 or -ENOENT. */
int gs_touch(struct gs_engine *e, const void *key, size_t klen,
	     int64_t exptime, struct gs_meta *meta);
/* gs_touch() of the pinned <obj> only: -ENOENT when it is no longer its
 * key's live object (the touch comes before what replaced it). */
int gs_obj_touch(struct gs_engine *e, struct gs_obj *obj, int64_t exptime);
/*
 * Replaces the value of <key>, wholly in RAM, by what <fn> makes of it, in
 * one step under the engine lock: <fn>(<arg>, old, oldlen, meta, &new,
 * &newlen) gets the old object's meta (its CAS to compare) and returns 0
 * with the new value (at most ram_head bytes, copied; the new object takes
 * the flags and exptime <fn> leaves in <meta>, gs_meta's form), or -errno
 * to leave the object as it is.  On success <*meta>, when not NULL, is the
 * new object's.  Returns 0, -ENOENT, -EINVAL (some of the value is on
 * disk), -E2BIG, -ENOMEM, -EIO (not journaled, or with --sync-interval
 * replaced but its sync failed), or what <fn> returned.  Call it without
 * e->lock: with --sync-interval it waits for the sync that covers it.
 */
typedef int (*gs_update_fn)(void *arg, const void *old, size_t oldlen,
			    struct gs_meta *meta, const void **new,
			    size_t *newlen);
int gs_update(struct gs_engine *e, const void *key, size_t klen,
	      gs_update_fn fn, void *arg, struct gs_meta *meta);
/* Makes every object stored up to <when> (absolute unix time) invalid from
 * <when> on; a <when> not in the future drops every object now. */
void gs_invalidate(struct gs_engine *e, int64_t when);

/* ---- per-thread I/O ---- */

/* Creates an I/O context (io_uring, registered buffers) for this thread. */
int gs_io_create(struct gs_engine *e, struct gs_io **iop);
/* Destroys <*iop> (waits for its in-flight I/O) and clears it. */
void gs_io_destroy(struct gs_io **iop);
/* A descriptor that polls readable when gs_io_run() has work. */
int gs_io_fd(const struct gs_io *io);
/* Reaps completions and fires callbacks.  <wait>: block for at least one.
 * Returns the number of events handled or -errno. */
int gs_io_run(struct gs_io *io, bool wait);
/* Operations still in flight on <io>. */
unsigned gs_io_pending(const struct gs_io *io);

/* ---- streaming reads ---- */

typedef void (*gs_wake_fn)(void *arg);

/*
 * Streams bytes [<off>, <off>+<len>) of the pinned <obj> in offset order
 * (<len> GS_SIZE_UNKNOWN: to the end; of an object still filling, see
 * gs_lookup_filling()):
 * the head straight from the RAM region, then disk chunks as they land
 * (tail reads submitted first, up to io_buffers chunks ahead).  <wake>
 * fires when gs_stream_peek() has something new after returning -EAGAIN.
 * The stream takes its own pin.  Returns 0 or -errno.
 */
int gs_stream_open(struct gs_io *io, struct gs_obj *obj, uint64_t off,
		   uint64_t len, gs_wake_fn wake, void *arg,
		   struct gs_stream **sp);
/*
 * gs_stream_open() reading the disk chunks into the caller's <nbufs>
 * (1 to 64) buffers <bufs> (each GS_IO_BUFFER bytes, aligned to 4096), not a
 * window of <io>'s: the stream never waits for a window and is never
 * reclaimed, and gs_stream_peek() hands out pointers into <bufs> (or the
 * RAM region).  The kernel may write into <bufs> until <released>(<arg>)
 * fires, from gs_io_run(), after gs_stream_close().  Returns 0, -EINVAL
 * (<nbufs> out of range, a buffer misaligned, no <released>) or -ENOMEM.
 */
int gs_stream_open_into(struct gs_io *io, struct gs_obj *obj, uint64_t off,
			uint64_t len, void *const *bufs, unsigned nbufs,
			gs_wake_fn wake, gs_wake_fn released, void *arg,
			struct gs_stream **sp);
/* Next in-order bytes: 0 with <*len> > 0; 0 with <*len> == 0 at the end;
 * <*data> stays valid until consumed or until the caller is back in its
 * event loop (gs_io_run() gives the window of a stream whose consumer left
 * its bytes unread for a while to waiting streams; they are read again);
 * -EAGAIN not landed yet; -EBADMSG/-EIO the object is broken (it has been
 * dropped from the index; no byte of the bad chunk is ever returned). */
int gs_stream_peek_at(struct gs_stream *s, uint64_t skip, const void **data,
		      size_t *len);
static inline int gs_stream_peek(struct gs_stream *s, const void **data,
				 size_t *len)
{
	return gs_stream_peek_at(s, 0, data, len);
}
/* gs_stream_peek_at(): what gs_stream_peek() would return once <skip>
 * more bytes (that it returned before) were consumed, without consuming
 * them: a sender gathers several pieces in one write.  Valid as peek's
 * are. */
/* <n> bytes of what peek returned have been used. */
void gs_stream_consume(struct gs_stream *s, size_t n);
/* Bytes of the range not yet consumed. */
uint64_t gs_stream_left(const struct gs_stream *s);
/* Abandons or finishes the stream and clears <*sp>. */
void gs_stream_close(struct gs_stream **sp);

/*
 * For a stream of gs_stream_open_into() whose consumer hands the landed
 * bytes on in place (the nginx link stages them to nginx straight from its
 * rx buffers, the RDMA endpoint writes them to the client from them): from
 * gs_stream_hold(<s>) on, consuming bytes no longer frees their room in the
 * caller's buffers; gs_stream_release(<s>, <off>) does, for every consumed
 * chunk that ends at or before object offset <off>, and reads ahead into
 * it.  gs_stream_hold() is a no-op on a stream reading into a window of the
 * gs_io's.  Both from the stream's own thread.
 */
void gs_stream_hold(struct gs_stream *s);
void gs_stream_release(struct gs_stream *s, uint64_t off);
/* How many of the buffers given to gs_stream_open_into() <s> reads into:
 * its range may need fewer (the first ones); the others are the caller's
 * again at once.  0 for a stream on the gs_io's windows. */
unsigned gs_stream_bufs_used(const struct gs_stream *s);

/*
 * Reads the whole pinned <obj> into <buf>, which is aligned to 4096 and has
 * room for gs_read_size(obj) bytes: head copied, disk chunks read by the
 * kernel directly into their place.  <done>(<arg>, res) fires with 0,
 * -EBADMSG or -EIO.  Returns 0 (armed) or -errno (-EINVAL: an object of
 * gs_lookup_filling(), which streams read).
 */
typedef void (*gs_done_fn)(void *arg, int res);
int gs_read_into(struct gs_io *io, struct gs_obj *obj, void *buf,
		 gs_done_fn done, void *arg);
/* The room gs_read_into() needs for <obj>: its size rounded up to 64K. */
size_t gs_read_size(const struct gs_obj *obj);

/* ---- streaming writes ---- */

/* When a finished object may take its key: always, only if the key has no
 * live object, only if it has one, only if that one's CAS is the given;
 * GS_IF_BASE: as GS_IF_CAS, taking that one's expiry time (a value built
 * from it keeps a touch that came in meanwhile). */
enum gs_if { GS_IF_ANY, GS_IF_ABSENT, GS_IF_PRESENT, GS_IF_CAS, GS_IF_BASE };

/* What a store did: <res> 0 (stored) or -errno; when stored, the CAS the
 * object got and whether it replaced an older object of its key. */
struct gs_stored {
	uint64_t cas;
	bool replaced;
};
typedef void (*gs_stored_fn)(void *arg, int res, const struct gs_stored *st);

/* What a writer stores: a whole value, or bytes added to a stored one. */
enum gs_write_mode {
	GS_WRITE_SET,		/* the <size> bytes are the value */
	GS_WRITE_APPEND,	/* the stored value, then the <size> bytes */
	GS_WRITE_PREPEND,	/* the <size> bytes, then the stored value */
};

/*
 * Starts a writer of <size> bytes for <key> in <mode>.
 *
 * GS_WRITE_SET: an object of exactly <size> bytes, <flags> and <exptime>
 * its own.  Its RAM head and each disk extent are reserved as their bytes
 * arrive (evicting whole objects, CLOCK, when short of room), so a set
 * whose bytes never come holds nothing; when no room can be found the rest
 * of the value is taken and dropped, and gs_writer_finish()'s callback gets
 * -ENOMEM.
 *
 * GS_WRITE_APPEND, GS_WRITE_PREPEND (memcache's append/prepend): old value
 * + the new bytes (or new + old), keeping the old flags and exptime
 * (<flags> and <exptime> are not used).  gs_writer_buf() answers -EAGAIN
 * until the key's turn is ours (one append of a key at a time, in arrival
 * order) and the admission bound lets the <size> bytes in; they are held
 * from then, and count against the bound until <done>.
 * gs_writer_finish() then looks <key> up and stores: the old value is read
 * through a stream, the new one written and linked only over the value it
 * was built from (keeping a touch since), built again on a newer one when
 * another write came in between.
 *
 * GS_WRITE_SET with <size> GS_SIZE_UNKNOWN: the value is the bytes given
 * up to gs_writer_finish(), at most max_object of them: past that
 * gs_writer_buf() answers -E2BIG, and so does finish's callback.  Its space
 * is reserved in steps as its bytes arrive and what the final size does not
 * need goes back at finish; it is stored as an object of that size is.
 *
 * Nothing is visible until gs_writer_finish() completes (a shared writer's
 * object is found by gs_lookup_filling() meanwhile).  Returns 0, -E2BIG,
 * -ENOMEM, or -EINVAL (a key over GS_KEY_MAX).
 */
int gs_writer_open(struct gs_io *io, const void *key, size_t klen,
		   uint64_t size, uint32_t flags, int64_t exptime,
		   enum gs_write_mode mode, struct gs_writer **wp);
/*
 * Makes the GS_WRITE_SET writer <w>, before any bytes were given, shared:
 * its object is findable with gs_lookup_filling() until it is linked or
 * aborted, and at most one shared writer fills a key at a time.  With
 * <attr_coming>, findable only from the gs_writer_attr() that gives its
 * attributes on (no reader sees it without them); the key is taken at
 * once either way.  Returns 0, -EBUSY (another shared writer fills the
 * key), -EINVAL (not a set, or bytes given already) or -ENOMEM.
 */
int gs_writer_share(struct gs_writer *w, bool attr_coming);
/* Where the next bytes of the value go: 0 with <*p>, <*len> > 0, or -EAGAIN
 * when the admission bound or the buffers are exhausted: <wake>(<arg>)
 * fires when to try again (stop reading from the writer meanwhile); 0 with
 * <*len> 0 when every byte of a known size is in; -E2BIG when a writer of
 * unknown size has max_object bytes. */
int gs_writer_buf(struct gs_writer *w, void **p, size_t *len,
		  gs_wake_fn wake, void *arg);
/* <n> bytes were put where gs_writer_buf() said. */
void gs_writer_advance(struct gs_writer *w, size_t n);
/*
 * All bytes given: waits for them to reach their tiers, then links the
 * object if <cond> holds (<cas> for GS_IF_CAS).  <done>(<arg>, res, stored)
 * fires with 0 (stored: <stored> says its CAS and whether it replaced an
 * object), -EEXIST, -ENOENT, -ENOMEM, -EIO, or -E2BIG (unknown size, more
 * than max_object given).  The writer is freed by then.  Returns 0 (never
 * fails for want of memory), or -EINVAL when bytes of a known size are
 * missing (then <*wp> is untouched: abort it).
 *
 * An append or prepend takes no <cond>: <cas> (0: none) means only over
 * the value of that CAS, else -EEXIST.  <done> may also get -EBUSY, when
 * other writes kept coming in between.  Besides -EINVAL it returns, with
 * <*wp> cleared and <done> not to fire, -ENOENT (no such key), -EEXIST
 * (<cas>) or -ENOMEM (no memory for the bytes: they were read and
 * dropped).
 */
int gs_writer_finish(struct gs_writer **wp, enum gs_if cond, uint64_t cas,
		     gs_stored_fn done, void *arg);
/* Gives the object <w> stores the <len> bytes at <p> as its attributes
 * (copied; a second call replaces them, <len> 0 drops them); before
 * gs_writer_finish().  0, -E2BIG (over GS_ATTR_MAX), -ENOMEM, or -EINVAL
 * for an append or prepend (it keeps the attributes of the value it
 * builds on). */
int gs_writer_attr(struct gs_writer *w, const void *p, size_t len);
/* Drops a writer before finish: nothing is stored.  Clears <*wp>. */
void gs_writer_abort(struct gs_writer **wp);

/* ---- stats ---- */

/* Reads the engine's counters into <st>. */
void gs_stats(struct gs_engine *e, struct gs_stats *st);

/* Reads the arena's counters into <st>.  Takes e->lock. */
void gs_arena_stats(struct gs_engine *e, struct gs_arena_stats *st);

/* Fills <st> from <e>'s region (takes the engine lock); st->nodes is 0
 * without --numa.  Asks the kernel (move_pages) where each block in use
 * lies for misplaced_blocks. */
void gs_numa_stats(struct gs_engine *e, struct gs_numa_stats *st);

/* ---- NUMA placement ---- */

/* The real node serving threads of --numa <node> run on, or -1 when the
 * topology is simulated and libnuma sees no node. */
int numa_topo_cpu_node(int node);

/* ---- trusting a directory or a file in it (dirtrust.c) ---- */

/*
 * Whoever can write a directory can swap its entries for links to files we
 * may write, or bind a socket there first and pose as us: one set of rules
 * for the disk pools and the nginx socket's directory.
 */
#define TRUST_ROOT_OK	1u	/* root may own it as well as our euid */
#define TRUST_FOLLOW	2u	/* the last path component may be a symlink */

/*
 * Checks <st>: of file type <type> (S_IFDIR, S_IFREG, S_IFSOCK), owned by
 * our euid (or root, with TRUST_ROOT_OK in <rules>), not writable by its
 * group or others (a socket is exempt: its mode is not who may replace it),
 * a regular file with one hard link.  Returns 0, or -errno with
 * "<label>: <reason>" in <err>.
 */
int dirtrust_check(const struct stat *st, const char *label, mode_t type,
		   unsigned rules, char *err, size_t errlen);

/*
 * Opens <path> (relative to <dfd>, or AT_FDCWD) with <flags> | O_CLOEXEC,
 * never through a symlink unless TRUST_FOLLOW is in <rules> (O_CREAT uses
 * mode 0600), and checks it as dirtrust_check() does, as a directory when
 * <flags> has O_DIRECTORY, else as a regular file.  Returns the descriptor,
 * or -errno with "<label>: <reason>" in <err>.
 */
int dirtrust_open(int dfd, const char *path, int flags, const char *label,
		  unsigned rules, char *err, size_t errlen);

#endif /* GOBLIN_H */
