# C unit tests: t/unit/test_X.c -> build/t/test_X and build/asan/t/test_X.
# Every unit test's build rule lives here; `make asan` builds them all,
# t/run runs the ones $BUILD/t/ holds.
UNIT_TESTS := $(patsubst t/unit/%.c,%,$(wildcard t/unit/test_*.c))

asan: $(addprefix build/asan/t/,$(UNIT_TESTS))

# Every unit test depends on the test headers (product objects never do).
UNIT_TEST_HDRS := $(wildcard t/unit/*.h)

# Pure-function tests link these sources (every test_X without a rule of
# its own below).
UNIT_SRCS += shared/size.c storaged/mc/proto_parse.c \
             shared/ring.c ngx_goblin_module/ngx_http_goblin_http.c \
             ngx_goblin_module/ngx_http_goblin_fresh.c
UNIT_HDRS += shared/size.h storaged/mc/proto_parse.h \
             shared/ring.h shared/ring-t.h ngx_goblin_module/ngx_http_goblin_http.h \
             t/unit/proto_check.h

build/t/test_%: t/unit/test_%.c $(UNIT_SRCS) $(UNIT_HDRS) $(UNIT_TEST_HDRS)
	@mkdir -p $(@D)
	$(CC) $(BASEFLAGS) $(OPTFLAGS) -o $@ $< $(UNIT_SRCS) $(LDLIBS)

build/asan/t/test_%: t/unit/test_%.c $(UNIT_SRCS) $(UNIT_HDRS) $(UNIT_TEST_HDRS)
	@mkdir -p $(@D)
	$(CC) $(BASEFLAGS) $(ASANFLAGS) -o $@ $< $(UNIT_SRCS) $(LDLIBS)

# Engine tests link libgoblin (its defaults from gs_config_init) and the
# memcache item semantics (mc_items.o).
ENGINE_TESTS := test_engine test_region test_pool test_stream test_readahead \
                test_fill \
                test_journal \
                test_journal_damage \
                test_arena test_index test_rehash test_attr \
                test_numa test_measure test_pins test_hddq test_lookup
define ENGINE_TEST
$(1)/t/$(2): t/unit/$(2).c $(1)/obj/storaged/mc/mc_items.o $(call ENGINE_LIB,$(1),$(2)) $(GOBLIN_HDRS) $(UNIT_TEST_HDRS)
	@mkdir -p $$(dir $$@)
	@echo "  LD      $$@"
	@$$(CC) $(3) -It/unit -o $$@ $$< $(1)/obj/storaged/mc/mc_items.o $(call ENGINE_LIB,$(1),$(2)) $$(LDLIBS)
endef
$(foreach t,$(ENGINE_TESTS),$(eval $(call ENGINE_TEST,build,$(t),$(BASEFLAGS) $(OPTFLAGS))))
$(foreach t,$(ENGINE_TESTS),$(eval $(call ENGINE_TEST,build/asan,$(t),$(BASEFLAGS) $(ASANFLAGS))))

# test_loop: the serving-loop skeleton (its gs_io calls resolve in
# libgoblin; the test runs no gs_io).
build/t/test_loop: t/unit/test_loop.c storaged/loop.c storaged/loop.h $(UNIT_TEST_HDRS) build/libgoblin.a
	@mkdir -p $(@D)
	@echo "  LD      $@"
	@$(CC) $(BASEFLAGS) $(OPTFLAGS) -It/unit -o $@ $< storaged/loop.c build/libgoblin.a $(LDLIBS)
build/asan/t/test_loop: t/unit/test_loop.c storaged/loop.c storaged/loop.h $(UNIT_TEST_HDRS) build/asan/libgoblin.a
	@mkdir -p $(@D)
	@echo "  LD      $@"
	@$(CC) $(BASEFLAGS) $(ASANFLAGS) -It/unit -o $@ $< storaged/loop.c build/asan/libgoblin.a $(LDLIBS)

# test_hardening: the engine sources compiled with the fault hooks of
# t/unit/faults.h (allocation, io_uring submit and pread failures on cue).
HARDENING_SRCS := $(LIBGOBLIN_SRCS) storaged/mc/mc_items.c
HARDENING_DEPS := t/unit/test_hardening.c $(HARDENING_SRCS) $(GOBLIN_HDRS) $(UNIT_TEST_HDRS)
build/t/test_hardening: $(HARDENING_DEPS)
	@mkdir -p $(@D)
	@echo "  LD      $@"
	@$(CC) $(BASEFLAGS) $(OPTFLAGS) -include t/unit/faults.h -It/unit -o $@ t/unit/test_hardening.c $(HARDENING_SRCS) $(LDLIBS)
build/asan/t/test_hardening: $(HARDENING_DEPS)
	@mkdir -p $(@D)
	@echo "  LD      $@"
	@$(CC) $(BASEFLAGS) $(ASANFLAGS) -include t/unit/faults.h -It/unit -o $@ t/unit/test_hardening.c $(HARDENING_SRCS) $(LDLIBS)

# test_rdma: the RDMA protocol suite over libfabric's tcp provider on
# loopback; test_rdma_verbs: the same over verbs, skipped without a device;
# test_rdma_engine: the engine as the source, over libfabric tcp
# (storaged/storaged.mk's RDMA_SRCS).
RDMA_TEST_DEPS := $(UNIT_TEST_HDRS) storaged/rdma/rdma.h \
                  $(RDMA_CLIENT_DEPS) $(RDMA_SRCS) $(RDMA_VERBS_SRCS)
define RDMA_TEST
$(1)/t/test_rdma: t/unit/test_rdma.c $(RDMA_TEST_DEPS)
	@mkdir -p $$(@D)
	@echo "  LD      $$@"
	@$$(CC) $(2) -It/unit $(RDMA_CLIENT_INC) -o $$@ $$< $(RDMA_SRCS) $(RDMA_LDLIBS)
$(1)/t/test_rdma_verbs: t/unit/test_rdma_verbs.c $(RDMA_TEST_DEPS)
	@mkdir -p $$(@D)
	@echo "  LD      $$@"
	@$$(CC) $(2) -It/unit $(RDMA_CLIENT_INC) -o $$@ $$< $(RDMA_VERBS_SRCS) $(RDMA_VERBS_LDLIBS)
$(1)/t/test_rdma_engine: t/unit/test_rdma_engine.c storaged/rdma/rdma_engine.c $(RDMA_TEST_DEPS) $(GOBLIN_HDRS) $(1)/libgoblin.a
	@mkdir -p $$(@D)
	@echo "  LD      $$@"
	@$$(CC) $(2) -It/unit $(RDMA_CLIENT_INC) -o $$@ $$< storaged/rdma/rdma_engine.c $(RDMA_SRCS) $(1)/libgoblin.a $$(LDLIBS) $(RDMA_LDLIBS)
endef
$(eval $(call RDMA_TEST,build,$(BASEFLAGS) $(OPTFLAGS)))
$(eval $(call RDMA_TEST,build/asan,$(BASEFLAGS) $(ASANFLAGS)))

# test_options: the daemon's options table (options.o, stats.o) over the
# engine's config table (libgoblin).
define OPTIONS_TEST
$(1)/t/test_options: t/unit/test_options.c $(1)/obj/storaged/options.o $(1)/obj/storaged/options_check.o $(1)/obj/storaged/stats.o $(1)/libgoblin.a $(GOBLIN_HDRS) $(UNIT_TEST_HDRS)
	@mkdir -p $$(@D)
	@echo "  LD      $$@"
	@$$(CC) $(2) -It/unit -o $$@ $$< $(1)/obj/storaged/options.o $(1)/obj/storaged/options_check.o $(1)/obj/storaged/stats.o $(1)/libgoblin.a $$(LDLIBS)
endef
$(eval $(call OPTIONS_TEST,build,$(BASEFLAGS) $(OPTFLAGS)))
$(eval $(call OPTIONS_TEST,build/asan,$(BASEFLAGS) $(ASANFLAGS)))
