/*
 * The RDMA endpoint (issue 13): memcache GET over reliable-connected queue
 * pairs, the object bytes RDMA-WRITTEN into a bulk buffer the client
 * registered (and names in its WINDOW line).  The files:
 *
 *   rdma.h          this design, the transport interface, the protocol's
 *                   server API
 *   rdma_fabric.c   the emulated transport: libfabric's tcp provider
 *                   (FI_EP_MSG + FI_RMA; real one-sided writes into a
 *                   registered remote MR by address and key, over TCP)
 *   rdma_verbs.c    the product transport: rdma_cm + ibverbs RC QPs
 *                   (compiled and linked; run only where a device is)
 *   rdma_engine.c   the engine as the object source
 *   rdma_server.c   the protocol state machine, server side, over any
 *                   transport and any object source
 *   rdma_thread.c   the endpoint in goblin-store (--rdma): its thread
 *
 * The client side (tests, goblin-bench --proto rdma) is not goblin-store's:
 * goblin-bench's bench/goblin-bench/rdma_client.[ch], which the tests borrow.
 *
 * Transport.  struct rdma_transport is a table of operations on opaque
 * devices (a fabric + domain + CM event queue; MRs belong to a device, so
 * the head region and staging buffers are registered once per device, not
 * per request) and endpoints (one RC QP / MSG endpoint and its CQ):
 * reg/dereg, post_recv, post_send, post_write (to a remote address + key)
 * and poll (completions: the <ctx> given at post, the op, the length, an
 * error).  Ordering the protocol relies on, and both transports give:
 * completions of one endpoint come in posting order per queue, and the
 * server posts BULK_READY only after the WRITE's own completion, so the
 * bulk buffer holds every byte when the client sees BULK_READY (tcp: the
 * provider also keeps send-after-write order, FI_ORDER_SAW).
 *
 * Protocol.  Every message is a SEND of one text line (<= RDMA_MSG).
 *
 *   client                                server
 *   WINDOW <addr> <rkey> <len>\r\n  ->    (len < RDMA_BULK_MIN:
 *                                    <-    CLIENT_ERROR window too small,
 *                                          then disconnect)
 *                                    <-    OK\r\n
 *   get <key>\r\n                   ->    miss: END\r\n; bad: CLIENT_ERROR
 *                                    <-    VALUE <key> <flags> <bytes>\r\n
 *                                          WRITE [0, n) of round 1 into the
 *                                          bulk buffer (head region, then the
 *                                          staging buffers as reads land)
 *                                    <-    BULK_READY <off> <n>\r\n
 *   NEXT\r\n (bulk buffer consumed) ->    (only when bytes remain) round 2..
 *                                    <-    BULK_READY <off> <n>\r\n ...
 *                                    <-    END\r\n
 *                                    <-    or, the object unreadable midway:
 *                                          SERVER_ERROR object unreadable:
 *                                          <why>
 *                                          (once the writes in flight are
 *                                          done; no END)
 *
 * <off> is the object offset of the round; the round's bytes are at bulk
 * buffer offset 0.  A round is min(bulk buffer, bytes left).  Server states per
 * connection: HELLO (waiting for WINDOW) -> IDLE -> WRITING (round posted,
 * writes in flight) -> WAIT_NEXT (BULK_READY sent, more rounds) -> WRITING
 * ... -> IDLE after END; WRITING -> FAILED (the source failed: waiting for
 * the writes in flight) -> IDLE after SERVER_ERROR.  A request that arrives
 * while not IDLE is queued in its receive buffer (receives are reposted
 * only when handled), so a client may have at most RDMA_RECVS lines
 * outstanding; more break its connection (verbs: receiver not ready; the
 * client API sends one GET at a time).  A failed completion, or the peer
 * going away, closes the connection and closes its object stream.
 *
 * Object source.  The server reads objects through struct
 * rdma_source_ops, shaped after the engine's gs_stream_open_into():
 * open the key into the connection's registered staging buffers, peek
 * in-order bytes (a pointer into the registered head region or into a
 * staging buffer), consume, release every byte below an offset once its
 * WRITE has completed (gs_stream_hold/gs_stream_release), close.  The
 * server finds the MR of a peeked pointer in its region table.
 *
 * The engine source (rdma_engine.c) is gs_lookup + the RAM head from a
 * read-only second mapping of the region memfd (registered once, at
 * gs_meta.head_off) + gs_stream_open_into() for the tail into the
 * connection's 4 staging buffers of GS_IO_BUFFER, held and released per
 * completed WRITE.  A closed stream's buffers stay the kernel's until its
 * released callback: open() on them says -EAGAIN and the server keeps a
 * closed connection's memory until the source's busy() lets go.
 *
 * In the daemon (rdma_thread.h): --rdma ADDR:PORT starts one thread,
 * goblin-rdma, with its own gs_io and the engine source over it; the
 * thread steps the server (CM events, every endpoint's CQ, gs_io_run
 * through the source's progress) and, when a step did nothing, sleeps
 * in rdma_server_wait(): poll on
 * the CM descriptor, each endpoint's CQ descriptor (libfabric FI_WAIT_FD
 * behind fi_trywait; a verbs completion channel), gs_io_fd() and the
 * daemon's stop eventfd (rdma_server_wake_fd).
 */
#ifndef GOBLIN_STORAGED_RDMA_H
#define GOBLIN_STORAGED_RDMA_H

#include <stddef.h>
#include <stdint.h>

/* Largest protocol line, either way (a 250-byte key fits). */
#define RDMA_MSG		512u
/* Receives posted per endpoint; sends in flight per endpoint. */
#define RDMA_RECVS		8u
#define RDMA_SENDS		8u
/* Smallest bulk buffer a client may offer (WINDOW's <len>). */
#define RDMA_BULK_MIN	4096u
/* Most staging buffers per connection (the source says how many and how
 * large: struct rdma_source_ops). */
#define RDMA_STAGES_MAX	64u

/* ---- transport ---- */

struct rdma_dev;
struct rdma_ep;

struct rdma_mr {
	void *handle;		/* the transport's */
	void *desc;		/* local descriptor for posts */
	uint64_t key;		/* what a peer writes with */
	char *addr;
	size_t len;
};

enum rdma_op { RDMA_OP_RECV, RDMA_OP_SEND, RDMA_OP_WRITE };

struct rdma_wc {
	void *ctx;
	enum rdma_op op;
	size_t len;		/* received bytes, for RECV */
	int err;		/* 0 or -errno */
};

/* Connection events of a listening device. */
enum rdma_cm { RDMA_CM_NONE, RDMA_CM_REQUEST, RDMA_CM_UP,
		  RDMA_CM_DOWN };

/* reg flags: none: the memory is only read (sent, written from; it may be
 * mapped read-only) */
#define RDMA_REMOTE_WRITE	1u	/* a peer may write into it */
#define RDMA_LOCAL		2u	/* received into */

struct rdma_transport {
	const char *name;
	/* Listens on <host>:<port> (0: any port; *<bound> gets it). */
	int (*listen)(const char *host, uint16_t port, uint16_t *bound,
		      struct rdma_dev **devp);
	/* Client side: a device and an endpoint for <host>:<port>, not
	 * connected yet (register memory and post receives on them first),
	 * then connect() blocks until the connection is up or refused. */
	int (*dial)(const char *host, uint16_t port, struct rdma_dev **devp,
		    struct rdma_ep **epp);
	int (*connect)(struct rdma_ep *ep);
	/* Next connection event without blocking: REQUEST gives a new
	 * endpoint in *<epp> to post receives on and then accept; UP and
	 * DOWN name one.  Returns the event, or -errno. */
	int (*cm_poll)(struct rdma_dev *dev, struct rdma_ep **epp);
	int (*accept)(struct rdma_ep *ep);
	void (*ep_destroy)(struct rdma_ep **epp);
	void (*dev_destroy)(struct rdma_dev **devp);
	int (*reg)(struct rdma_dev *dev, void *buf, size_t len,
		   unsigned flags, struct rdma_mr *mr);
	void (*dereg)(struct rdma_mr *mr);
	/* The address a peer writes <buf> (in <mr>) at. */
	uint64_t (*remote_addr)(struct rdma_dev *dev,
				const struct rdma_mr *mr, void *buf);
	int (*post_recv)(struct rdma_ep *ep, void *buf, size_t len,
			 struct rdma_mr *mr, void *ctx);
	int (*post_send)(struct rdma_ep *ep, const void *buf, size_t len,
			 struct rdma_mr *mr, void *ctx);
	int (*post_write)(struct rdma_ep *ep, const void *buf, size_t len,
			  struct rdma_mr *mr, uint64_t raddr,
			  uint64_t rkey, void *ctx);
	/* Up to <n> completions without blocking; returns how many, or
	 * -errno.  Operations a disconnect flushed complete with
	 * -ECANCELED; a broken connection gives -ENOTCONN, -ECONNRESET or
	 * -EPIPE. */
	int (*poll)(struct rdma_ep *ep, struct rdma_wc *wc, int n);
	/* Sleeps until <ep>'s CQ may have completions, or <timeout_ms>;
	 * returns at once when it has some.  0 or -errno. */
	int (*wait)(struct rdma_ep *ep, int timeout_ms);
	/* For one thread sleeping on many endpoints (the server): <ep>'s
	 * (or the listener's CM) descriptor that polls readable when there
	 * may be something to read, and arm, which returns 0 when it is safe
	 * to sleep on it (nothing left unread, the descriptor armed) or
	 * -EAGAIN (poll / cm_poll again first). */
	int (*ep_fd)(struct rdma_ep *ep);
	int (*ep_arm)(struct rdma_ep *ep);
	int (*cm_fd)(struct rdma_dev *dev);
	int (*cm_arm)(struct rdma_dev *dev);
};

/* libfabric's tcp provider (rdma_fabric.c). */
extern const struct rdma_transport rdma_fabric;
/* rdma_cm + ibverbs RC QPs (rdma_verbs.c).  A listener's <host> must be
 * an address of an RDMA device: its PD comes from the device the address
 * binds to (-ENODEV otherwise). */
extern const struct rdma_transport rdma_verbs;

/* ---- object source ---- */

struct rdma_item {
	uint32_t flags;
	uint64_t size;
	void *priv;		/* the source's */
};

struct rdma_source_ops {
	/* Each connection's staging buffers: 1 to RDMA_STAGES_MAX of
	 * <stage_size> bytes (a multiple of 4096), aligned to 4096. */
	unsigned nstages;
	size_t stage_size;
	/* Opens <key> for reading [0, size) into <bufs> (nstages of
	 * stage_size).  0, -ENOENT (miss), -EAGAIN (<bufs> still busy with an
	 * earlier item: the server asks again on a later step) or -errno. */
	int (*open)(void *arg, const char *key, size_t klen,
		    void *const *bufs, struct rdma_item *it);
	/* In-order bytes: 0 with *<len> > 0, -EAGAIN not landed, -errno. */
	int (*peek)(struct rdma_item *it, const void **data, size_t *len);
	void (*consume)(struct rdma_item *it, size_t n);
	/* Bytes below object offset <off> are written; their buffers may be
	 * read into again. */
	void (*release)(struct rdma_item *it, uint64_t off);
	void (*close)(struct rdma_item *it);
	/* Optional: runs the source's own I/O (completions, wakes) on every
	 * rdma_server_step(); returns how many things it did or -errno. */
	int (*progress)(void *arg);
	/* Optional: a descriptor that polls readable when progress has work
	 * (gs_io_fd), for rdma_server_wait(). */
	int (*fd)(void *arg);
	/* Optional: whether the staging buffers that start at <buf0> may
	 * still be written by the source (reads of a closed item in flight);
	 * the server keeps a closed connection's memory until not. */
	int (*busy)(void *arg, const void *buf0);
};

/*
 * The engine as a source (rdma_engine.c): rdma_engine_ops with the
 * <arg> rdma_engine_create() makes over <e> and the calling thread's
 * <io> (the server must step on that thread).  The server registers the
 * region rdma_engine_region() gives (the whole RAM region: heads, RAM
 * chunks and the arena).  Destroy the source after the server and before
 * gs_io_destroy(<io>).
 */
struct gs_engine;
struct gs_io;
struct rdma_engine;
extern const struct rdma_source_ops rdma_engine_ops;
int rdma_engine_create(struct gs_engine *e, struct gs_io *io,
		       struct rdma_engine **esp);
void *rdma_engine_region(const struct rdma_engine *es, size_t *len);
void rdma_engine_destroy(struct rdma_engine **esp);

/* ---- server ---- */

struct rdma_server;

/* conns: accepted in all; live: open now; gone: closed by the peer
 * (mid-object too); aborted: those of gone closed with an object open
 * (mid-object); errors: connections dropped for a failure on our side
 * and failed opens. */
struct rdma_server_stats {
	uint64_t conns, live, gone, aborted, gets, hits, misses, rounds,
		 bytes, errors;
};

/*
 * Listens on <host>:<port> over <tp>, serving objects from <src>(<arg>).
 * <regions>/<nregions>: memory the source's peeks may point into outside
 * the staging buffers (the head region), registered once here.  Returns
 * 0 or -errno; *<bound> gets the port.
 */
int rdma_server_create(const struct rdma_transport *tp,
		       const char *host, uint16_t port, uint16_t *bound,
		       const struct rdma_source_ops *src, void *arg,
		       void *const *regions, const size_t *region_lens,
		       unsigned nregions, struct rdma_server **sp);
/* Handles what is ready (connections, completions, landed bytes) without
 * blocking; returns how many things it did, or -errno. */
int rdma_server_step(struct rdma_server *s);
/* Sleeps until a step may have something to do, or <timeout_ms> (-1:
 * none); returns at once when something is ready.  Returns 1 (woken), 0
 * (timed out) or -errno.  Call it after a step that did nothing. */
int rdma_server_wait(struct rdma_server *s, int timeout_ms);
/* Makes rdma_server_wait() also return when <fd> polls readable (the
 * daemon's stop eventfd); -1: none (the default). */
void rdma_server_wake_fd(struct rdma_server *s, int fd);
void rdma_server_stats(const struct rdma_server *s,
		       struct rdma_server_stats *st);
void rdma_server_destroy(struct rdma_server **sp);

#endif
