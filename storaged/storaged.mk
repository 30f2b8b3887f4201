# goblin-store and libgoblin (the engine as a library).

LIBGOBLIN_SRCS := storaged/engine.c storaged/region.c storaged/pool.c \
                  storaged/io.c shared/log.c
STORED_SRCS    := storaged/main.c storaged/options.c storaged/server.c \
                  storaged/proto_text.c storaged/proto_parse.c shared/size.c \
                  storaged/link_conn.c storaged/link_ops.c \
                  storaged/link_server.c shared/ring.c
GOBLIN_HDRS    := $(wildcard storaged/*.h shared/*.h t/unit/*.h)

PROGRAMS += goblin-store libgoblin.a goblin-engine-read

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
	@$$(CC) $(2) -o $$@ $$^ $$(LDLIBS)

# bench/tier-read's in-process reader: the pipeline without the network
$(1)/goblin-engine-read: $(1)/obj/bench/engine-read.o $(1)/obj/shared/size.o $(1)/libgoblin.a
	@echo "  LD      $$@"
	@$$(CC) $(2) -o $$@ $$^ $$(LDLIBS)
endef

$(eval $(call BUILD_FLAVOUR,build,$(BASEFLAGS) $(OPTFLAGS)))
$(eval $(call BUILD_FLAVOUR,build/asan,$(BASEFLAGS) $(ASANFLAGS)))

# C unit tests of the engine link libgoblin.
ENGINE_TESTS := test_engine test_region test_pool
define ENGINE_TEST
$(1)/t/$(2): t/unit/$(2).c $(1)/libgoblin.a $(GOBLIN_HDRS)
	@mkdir -p $$(dir $$@)
	@echo "  LD      $$@"
	@$$(CC) $(3) -It/unit -o $$@ $$< $(1)/libgoblin.a $$(LDLIBS)
endef
$(foreach t,$(ENGINE_TESTS),$(eval $(call ENGINE_TEST,build,$(t),$(BASEFLAGS) $(OPTFLAGS))))
$(foreach t,$(ENGINE_TESTS),$(eval $(call ENGINE_TEST,build/asan,$(t),$(BASEFLAGS) $(ASANFLAGS))))

# test_hardening: the engine sources compiled with the fault hooks of
# t/unit/faults.h (allocation, io_uring submit and pread failures on cue).
HARDENING_DEPS := t/unit/test_hardening.c t/unit/faults.h $(LIBGOBLIN_SRCS) $(GOBLIN_HDRS)
build/t/test_hardening: $(HARDENING_DEPS)
	@mkdir -p $(@D)
	@echo "  LD      $@"
	@$(CC) $(BASEFLAGS) $(OPTFLAGS) -include t/unit/faults.h -It/unit -o $@ t/unit/test_hardening.c $(LIBGOBLIN_SRCS) $(LDLIBS)
build/asan/t/test_hardening: $(HARDENING_DEPS)
	@mkdir -p $(@D)
	@echo "  LD      $@"
	@$(CC) $(BASEFLAGS) $(ASANFLAGS) -include t/unit/faults.h -It/unit -o $@ t/unit/test_hardening.c $(LIBGOBLIN_SRCS) $(LDLIBS)
