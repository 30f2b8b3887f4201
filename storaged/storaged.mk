# goblin-store and libgoblin (the engine as a library).

LIBGOBLIN_SRCS := storaged/engine.c storaged/index.c storaged/layout.c \
                  storaged/arena.c \
                  storaged/region.c storaged/pool.c storaged/dirtrust.c \
                  storaged/uring.c storaged/stream.c storaged/read_into.c \
                  storaged/writer.c \
                  storaged/mc_concat.c storaged/mc_items.c storaged/heads.c \
                  storaged/numa_topo.c storaged/numa_promote.c \
                  storaged/journal.c storaged/journal_replay.c \
                  storaged/journal_shed.c storaged/journal_room.c \
                  storaged/journal_sync.c \
                  shared/log.c
STORED_SRCS    := storaged/main.c storaged/options.c storaged/stats.c \
                  storaged/loop.c storaged/server.c storaged/server_stats.c \
                  storaged/conn_input.c storaged/conn_output.c \
                  storaged/proto_text.c storaged/proto_meta.c \
                  storaged/proto_stats.c storaged/proto_parse.c \
                  storaged/link_conn.c storaged/link_direct.c storaged/link_ops.c \
                  storaged/link_server.c shared/ring.c shared/size.c \
                  storaged/rdma_thread.c storaged/rdma_engine.c \
                  storaged/rdma_server.c storaged/rdma_fabric.c \
                  storaged/rdma_verbs.c
# goblin-store links both RDMA transports (--rdma-transport verbs|tcp)
STORED_LDLIBS  := -lfabric -lrdmacm -libverbs
GOBLIN_HDRS    := $(wildcard storaged/*.h shared/*.h t/unit/*.h)

PROGRAMS += goblin-store libgoblin.a goblin-engine-read

# $(call OPTIONS_OBJS,<build dir>): the options table and what it links, for
# programs outside the daemon that take the engine's defaults from it.
OPTIONS_OBJS = $(addprefix $(1)/obj/,storaged/options.o storaged/stats.o shared/size.o)

define BUILD_FLAVOUR
# $(1): output dir, $(2): flags
$(1)/obj/%.o: %.c $(GOBLIN_HDRS)
	@mkdir -p $$(dir $$@)
	@echo "  CC      $$@"
	@$$(CC) $(2) -c -o $$@ $$<

$(1)/libgoblin.a: $(patsubst %.c,$(1)/obj/%.o,$(LIBGOBLIN_SRCS))
	@rm -f $$@
	@echo "  AR      $$@"
	@ar rcs $$@ $$^

$(1)/goblin-store: $(patsubst %.c,$(1)/obj/%.o,$(STORED_SRCS)) $(1)/libgoblin.a
	@echo "  LD      $$@"
	@$$(CC) $(2) -o $$@ $$^ $$(LDLIBS) $$(STORED_LDLIBS)

# bench/tier-read's in-process reader: the pipeline without the network
$(1)/goblin-engine-read: $(1)/obj/bench/engine-read.o $(call OPTIONS_OBJS,$(1)) $(1)/libgoblin.a
	@echo "  LD      $$@"
	@$$(CC) $(2) -o $$@ $$^ $$(LDLIBS)
endef

$(eval $(call BUILD_FLAVOUR,build,$(BASEFLAGS) $(OPTFLAGS)))
$(eval $(call BUILD_FLAVOUR,build/asan,$(BASEFLAGS) $(ASANFLAGS)))

# The RDMA endpoint (storaged/rdma.h): the protocol and its transports,
# in goblin-store (--rdma, storaged/rdma_thread.c) over either;
# t/unit/test_rdma runs it over libfabric's tcp provider,
# t/unit/test_rdma_verbs over verbs where a device is.
DEB_PACKAGES      += libfabric-dev librdmacm-dev libibverbs-dev
RDMA_PROTO_SRCS   := storaged/rdma_server.c storaged/rdma_client.c
RDMA_SRCS         := storaged/rdma_fabric.c $(RDMA_PROTO_SRCS)
RDMA_LDLIBS       := -lfabric
RDMA_VERBS_SRCS   := storaged/rdma_verbs.c $(RDMA_PROTO_SRCS)
RDMA_VERBS_LDLIBS := -lrdmacm -libverbs
