# goblin-store and libgoblin (the engine as a library).

# libgoblin: storaged/engine/, compiled with only its own and shared/'s
# headers (ENGINE_INC); the daemon sees the engine through goblin.h alone
# (t/check-layers).
ENGINE_DIR     := storaged/engine
LIBGOBLIN_SRCS := $(addprefix $(ENGINE_DIR)/,config.c engine.c index.c \
                  lookup.c epoch.c layout.c arena.c region.c pool.c \
                  dirtrust.c uring.c hddq.c stream.c \
                  read_into.c window.c writer.c concat.c heads.c measure.c \
                  ramchunk.c attr.c fill.c fill_writer.c stream_fill.c \
                  numa_topo.c numa_promote.c journal.c journal_replay.c \
                  journal_shed.c journal_room.c journal_sync.c \
                  journal_bg.c) \
                  shared/log.c shared/size.c
# the daemon: main, options, stats and the serving loop at storaged/'s root;
# its fronts in mc/ (memcache), link/ (the nginx ring), rdma/ (the endpoint)
STORED_SRCS    := $(addprefix storaged/,main.c options.c options_check.c \
                  process.c stats.c loop.c \
                  mc/server.c mc/server_stats.c mc/conn.c mc/conn_input.c \
                  mc/conn_output.c mc/proto_text.c mc/proto_meta.c \
                  mc/proto_stats.c mc/proto_store.c mc/proto_parse.c \
                  mc/proto_auth.c mc/proto_dump.c mc/mc_items.c \
                  link/link_conn.c link/link_direct.c link/link_ops.c link/link_attr.c \
                  link/link_server.c \
                  rdma/rdma_thread.c rdma/rdma_engine.c rdma/rdma_server.c \
                  rdma/rdma_fabric.c rdma/rdma_verbs.c) \
                  shared/ring.c
# goblin-store links both RDMA transports (--rdma-transport verbs|tcp),
# and libsystemd for sd_notify (storaged/process.c)
STORED_LDLIBS  := -lfabric -lrdmacm -libverbs -lsystemd
RUN_PACKAGES   += libsystemd-dev
# what product objects depend on: the engine's on its own and shared/'s
# headers, the daemon's on those and its own (never t/: t/check-layers)
ENGINE_HDRS    := $(wildcard $(ENGINE_DIR)/*.h shared/*.h)
GOBLIN_HDRS    := $(wildcard storaged/*.h storaged/*/*.h shared/*.h)

PROGRAMS += goblin-store libgoblin.a goblin-engine-read

define BUILD_FLAVOUR
# $(1): output dir, $(2): flags
$(1)/obj/%.o: %.c $(GOBLIN_HDRS)
	@mkdir -p $$(dir $$@)
	@echo "  CC      $$@"
	@$$(CC) $(2) -c -o $$@ $$<

$(1)/obj/$(ENGINE_DIR)/%.o: $(ENGINE_DIR)/%.c $(ENGINE_HDRS)
	@mkdir -p $$(dir $$@)
	@echo "  CC      $$@"
	@$$(CC) $$(call ENGINE_FLAGS,$(2)) -c -o $$@ $$<

$(1)/libgoblin.a: $(patsubst %.c,$(1)/obj/%.o,$(LIBGOBLIN_SRCS))
	@rm -f $$@
	@echo "  AR      $$@"
	@ar rcs $$@ $$^

$(1)/goblin-store: $(patsubst %.c,$(1)/obj/%.o,$(STORED_SRCS)) $(1)/libgoblin.a
	@echo "  LD      $$@"
	@$$(CC) $(2) -o $$@ $$^ $$(LDLIBS) $$(STORED_LDLIBS)

# bench/tier-read's in-process reader: the pipeline without the network,
# libgoblin alone (its defaults from gs_config_init)
$(1)/obj/bench/engine-read.o: bench/engine-bench.h
$(1)/goblin-engine-read: $(1)/obj/bench/engine-read.o $(1)/libgoblin.a
	@echo "  LD      $$@"
	@$$(CC) $(2) -o $$@ $$^ $$(LDLIBS)
endef

$(eval $(call BUILD_FLAVOUR,build,$(BASEFLAGS) $(OPTFLAGS)))
$(eval $(call BUILD_FLAVOUR,build/asan,$(BASEFLAGS) $(ASANFLAGS)))

# The RDMA endpoint (storaged/rdma/rdma.h): the protocol and its transports,
# in goblin-store (--rdma, storaged/rdma/rdma_thread.c) over either;
# t/unit/test_rdma runs it over libfabric's tcp provider,
# t/unit/test_rdma_verbs over verbs where a device is.
RUN_PACKAGES      += libfabric-dev librdmacm-dev libibverbs-dev
# The client side is not goblin-store's: it is goblin-bench's
# (bench/goblin-bench/rdma_client.[ch]), which the tests borrow; both
# compile with $(RDMA_CLIENT_INC).
RDMA_CLIENT_INC   := -Ibench/goblin-bench
RDMA_CLIENT_DEPS  := bench/goblin-bench/rdma_client.c bench/goblin-bench/rdma_client.h
RDMA_PROTO_SRCS   := storaged/rdma/rdma_server.c bench/goblin-bench/rdma_client.c
RDMA_SRCS         := storaged/rdma/rdma_fabric.c $(RDMA_PROTO_SRCS)
RDMA_LDLIBS       := -lfabric
RDMA_VERBS_SRCS   := storaged/rdma/rdma_verbs.c $(RDMA_PROTO_SRCS)
RDMA_VERBS_LDLIBS := -lrdmacm -libverbs

# The memcache front's call graph is the one storaged/mc/server.h draws,
# without circles, and the nginx link's the one storaged/link/link_internal.h
# draws (t/check-front-calls reads build/'s objects).
.PHONY: check-front-calls
TEST_EXTRA += check-front-calls
check-front-calls: build/goblin-store
	t/check-front-calls
