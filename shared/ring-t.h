/*
 * The ring between nginx workers and goblin-store: types, constants, wire
 * layout.  No nginx or engine types here; both sides compile this.
 *
 * A worker connects to goblin-store's unix socket and sends a ring_hello.
 * The daemon answers with a ring_welcome carrying two descriptors over
 * SCM_RIGHTS: the RAM-head region (an O_RDONLY descriptor of a memfd
 * sealed against new writable mappings and resizing) and a memfd holding
 * this worker's ring (read-write, sealed against resizing: RING_SEALS).  From then on the socket only carries
 * one-byte doorbells: whoever publishes entries writes one byte, whoever
 * reads a byte drains the queue it consumes.  Both sides sleep in their
 * own event loops (epoll).
 *
 *   ring memfd                                   nginx          storaged
 *   +-----------------------------+
 *   | ring_hdr (geometry, indices)|
 *   +-----------------------------+
 *   | SQ: sq_entries x ring_sqe   |   ------>  producer  ---->  consumer
 *   +-----------------------------+
 *   | CQ: cq_entries x ring_cqe   |   <------  consumer  <----  producer
 *   +-----------------------------+
 *   | rx buffers: n_rx x buf_size |   disk bytes, filled by storaged, sent
 *   |                             |   by nginx straight from here
 *   +-----------------------------+
 *   | tx buffers: n_tx x buf_size |   PUT bodies, filled by nginx
 *   +-----------------------------+
 *
 *   head region memfd (read-only in nginx): object heads at ring_meta.head_off
 *
 * Each queue is single-producer single-consumer: the producer writes an
 * entry, then stores its tail with release; the consumer loads the tail
 * with acquire, reads entries, then stores its head with release.  A
 * producer that finds its queue full sets the queue's *_wait flag and
 * re-checks; the consumer, after moving head, rings the doorbell when it
 * finds the flag set.  So neither side ever polls.
 *
 * Buffer ownership moves with entries: an rx buffer is the daemon's until
 * a RING_OP_DATA (or RING_OP_STATS) completion hands it to nginx, which
 * gives it back with RING_OP_BUFREL once the bytes are on the wire, or
 * once it has copied them aside for a client too slow to take them: rx
 * buffers are shared by all requests of a worker and must not wait on one
 * client.  A READ stages at most <grant> bytes at first, and as many more
 * as each RING_OP_MORE grants, which bounds that copying.  A tx buffer is nginx's
 * until RING_OP_WDATA hands it over, and comes back with RING_OP_TXDONE.
 *
 * Trust: the daemon admits only root, its own user, --socket-user and
 * members of --socket-group (SO_PEERCRED), and validates every index,
 * offset and length once, from a private copy of each entry.  The worker
 * admits only a daemon running as root or as the owner of the socket's
 * directory (ring_check_server), and validates every buffer index and
 * count a completion carries.
 *
 * Pins: LOOKUP pins the object (its head and extents stay valid whatever
 * happens to the key) until RELEASE.  When the socket closes, the daemon
 * releases every pin, stream and writer of that worker.
 */
#ifndef GOBLIN_RING_T_H
#define GOBLIN_RING_T_H

#include <fcntl.h>
#include <stdint.h>

#define RING_MAGIC		0x474f424cu	/* "GOBL" */
#define RING_VERSION		3
#define RING_KEY_MAX		250		/* = GS_KEY_MAX (asserted in storaged/link/link_internal.h) */
#define RING_ALIGN		4096u

/* The largest object either side accepts unless told otherwise: the
 * default of goblin-store --max-object and of nginx's goblin_max_object,
 * a size each parses as it parses its own setting. */
#define RING_MAX_OBJECT_DEFAULT	"64M"

/*
 * An object's attributes: opaque bytes stored, journaled and replaced with
 * the object (the nginx module keeps the HTTP response headers a cache
 * replays there); at most RING_ATTR_MAX of them.
 */
#define RING_ATTR_MAX		4096u
/* WOPEN: a value whose size is not known until WFINISH (at most the
 * daemon's --max-object); ring_meta.size of an object still being filled
 * whose size is not known yet. */
#define RING_SIZE_UNKNOWN	UINT64_MAX
/* A completion's <buf> when it hands no buffer over. */
#define RING_NO_BUF		UINT32_MAX

/* Geometry limits; a hello asking outside them is clamped. */
#define RING_SQ_MIN		16u
#define RING_SQ_MAX		4096u
#define RING_SQ_DEFAULT		256u
#define RING_BUF_SIZE		(256u << 10)
#define RING_RX_DEFAULT		32u
#define RING_TX_DEFAULT		16u
#define RING_BUFS_MAX		256u

/* Seals on both memfds: neither side can resize what the other maps. */
#define RING_SEALS		(F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

/* Submission opcodes (nginx -> storaged). */
enum ring_op {
	RING_OP_LOOKUP = 1,	/* key -> CQE: handle + meta; pins */
	RING_OP_READ,		/* handle, off, len, grant -> DATA..., READ */
	RING_OP_BUFREL,		/* buf: an rx buffer comes back; no CQE */
	RING_OP_RELEASE,	/* handle: unpin, stop its READ; no CQE */
	RING_OP_WOPEN,		/* key, len (size), flags, exptime -> handle */
	RING_OP_WDATA,		/* handle, buf, len -> TXDONE once copied */
	RING_OP_WFINISH,	/* handle -> WFINISH once stored (or not) */
	RING_OP_WABORT,		/* handle: drop the writer; no CQE */
	RING_OP_DELETE,		/* key -> DELETE */
	RING_OP_STATS,		/* -> STATS: "name value\n" lines in an rx buf */
	RING_OP_MORE,		/* handle, len: the READ may stage len more */
	RING_OP_SETATTR,	/* handle, buf, len[, exptime] -> SETATTR: the
				 * pinned object's attributes are now those
				 * bytes (and its expiry exptime, when not 0);
				 * buf stays nginx's */
	/* completion-only opcodes */
	RING_OP_DATA,		/* buf holds len bytes at object offset off;
				 * a READ read in place (link_direct.c) starts
				 * at its chunk, so off may lie before the next
				 * byte it owes: nginx skips the bytes before */
	RING_OP_TXDONE,		/* tx buffer buf is free again */
	RING_OP_MAX
};

/* sqe.opflags */
#define RING_LOOKUP_FILLING	0x1u	/* LOOKUP: also find an object still
					 * being written by a SHARED writer */
#define RING_LOOKUP_ATTR	0x2u	/* LOOKUP: hand its attributes over in
					 * an rx buffer (cqe.buf) */
#define RING_WOPEN_SHARED	0x4u	/* WOPEN: findable with
					 * RING_LOOKUP_FILLING from WOPEN on */

/* sqe.cond of WFINISH: when the finished object takes its key. */
enum ring_if {
	RING_IF_ANY = 0,		/* always */
	RING_IF_ABSENT,			/* only if the key has no live object */
	RING_IF_PRESENT,		/* only if it has one */
	RING_IF_CAS,			/* only if that one's CAS is sqe.off */
};

/* ring_meta.state */
#define RING_META_FILLING	0x1u	/* still being written: bytes come as
					 * they land, size may be unknown */
#define RING_META_RECOVERED	0x2u	/* stored before the daemon started,
					 * attributes not set (SETATTR) since */

/* An object's metadata as LOOKUP returns it. */
struct ring_meta {
	uint64_t size;			/* the value's bytes (attributes apart) */
	uint64_t cas;
	int64_t mtime;			/* unix time it was stored */
	int64_t exptime;		/* absolute, 0 = never */
	uint64_t head_off;		/* bytes [0, head_len) are here in */
	uint64_t head_len;		/*   the head region */
	uint32_t flags;
	uint32_t attr_len;		/* its attributes' bytes */
	uint32_t state;			/* RING_META_* */
	uint32_t pad;
};

/* Submission entry: 320 bytes. */
struct ring_sqe {
	uint64_t user_data;		/* echoed in every completion */
	uint8_t op;			/* enum ring_op */
	uint8_t cond;			/* WFINISH: enum ring_if */
	uint16_t klen;
	uint32_t handle;		/* from LOOKUP or WOPEN */
	uint64_t off;			/* READ: first byte; WFINISH (IF_CAS),
					 * DELETE: the CAS (0: any) */
	uint64_t len;			/* READ: bytes (RING_SIZE_UNKNOWN: to
					 * the end); WOPEN: size or
					 * RING_SIZE_UNKNOWN; WDATA, SETATTR:
					 * bytes */
	uint32_t buf;			/* BUFREL, WDATA, SETATTR: buffer index */
	uint32_t flags;			/* WOPEN: the object's flags */
	int64_t exptime;		/* WOPEN: memcache-style exptime */
	char key[256];
	uint64_t grant;			/* READ: bytes it may stage before a MORE
					 * grants more (0: no bound) */
	uint32_t opflags;		/* RING_LOOKUP_*, RING_WOPEN_* */
	uint32_t attr_len;		/* WOPEN: the first attr_len bytes the
					 * WDATAs carry are the attributes
					 * (at most RING_ATTR_MAX), the value
					 * follows */
};

/*
 * Completion entry: 104 bytes.  <res> is 0 or -errno.  LOOKUP fills
 * <handle> and <meta>, and with RING_LOOKUP_ATTR <buf>: an rx buffer
 * holding the meta.attr_len attribute bytes (RING_NO_BUF when there are
 * none), given back with BUFREL.  WOPEN fills <handle>; DATA, STATS and
 * TXDONE fill <buf> (and DATA <off>, <len>); WFINISH sets <len> to 1 when
 * it replaced an object, 0 when it created one, and <meta.cas>; its res is
 * -EEXIST or -ENOENT when sqe.cond failed.  DELETE: -EEXIST when sqe.off
 * is not the CAS.  SETATTR: 0, -ENOENT (no longer its key's live object)
 * or -E2BIG; its tx buffer is free again with it (no TXDONE).
 *
 * READ of an object still filling: DATA as its bytes land on their tiers
 * (checked); the READ completion comes at the end with <len> the value's
 * final size, or res -ECONNABORTED when the writer was aborted: the reader
 * must cut its client (never a short body that looks complete).
 */
struct ring_cqe {
	uint64_t user_data;
	uint32_t op;
	int32_t res;
	uint32_t handle;
	uint32_t buf;
	uint64_t off;
	uint64_t len;
	struct ring_meta meta;
};

/* First message on the socket, worker -> daemon.  Zero fields: defaults. */
struct ring_hello {
	uint32_t magic;
	uint32_t version;
	uint32_t sq_entries;		/* power of two */
	uint32_t n_rx;
	uint32_t n_tx;
	uint32_t pid;
};

/* Daemon -> worker, with [region fd, ring fd] as SCM_RIGHTS when res is 0. */
struct ring_welcome {
	uint32_t magic;
	uint32_t version;
	int32_t res;			/* 0 or -errno */
	uint32_t pad;
	uint64_t ring_size;
	uint64_t region_size;
	uint64_t store_id;		/* the store's identity: random, kept in
					 * the pool marker, new with --fresh and
					 * at each start of a store without
					 * pools; with the CAS an ETag that
					 * never repeats */
};

/* One queue's indices, each on its own cache line. */
struct ring_queue_idx {
	_Alignas(64) uint32_t head;	/* consumer-owned */
	_Alignas(64) uint32_t tail;	/* producer-owned */
	_Alignas(64) uint32_t wait;	/* producer found it full */
};

/* Start of the ring memfd. */
struct ring_hdr {
	uint32_t magic;
	uint32_t version;
	uint32_t sq_entries;
	uint32_t cq_entries;
	uint32_t n_rx;
	uint32_t n_tx;
	uint32_t buf_size;
	uint32_t pad;
	uint64_t sq_off;
	uint64_t cq_off;
	uint64_t buf_off;		/* rx buffers, then tx buffers */
	uint64_t size;
	struct ring_queue_idx sq;
	struct ring_queue_idx cq;
};

/*
 * A mapped ring as one side sees it.  The geometry is a private copy, so
 * a peer scribbling on the shared header cannot move our bounds.  <mapped>
 * flags memory that must go back with ring_unmap(), never free();
 * <owned> is set on the side that created it.
 */
struct ring {
	struct ring_hdr *hdr;
	struct ring_sqe *sqes;
	struct ring_cqe *cqes;
	char *bufs;
	uint64_t size;
	uint32_t sq_entries;
	uint32_t cq_entries;
	uint32_t n_rx;
	uint32_t n_tx;
	uint32_t buf_size;
	int fd;
	unsigned mapped:1;
	unsigned owned:1;
};

#endif /* GOBLIN_RING_T_H */
