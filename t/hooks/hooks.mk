# The hooked test build: libgoblin and goblin-store with the test hooks
# (t/hooks/hooks.h, force-included) in the engine files that have hook
# points (storaged/engine/hook_points.h), for the suites, unit tests and
# benches that set GOBLIN_TEST_* (t/lib/goblin.py store_binary(hooks=True)).
# Only those files are compiled again, into t/obj-hooks/; the rest are the
# product's own objects.  t/check-product keeps the product free of them.
HOOKED_SRCS := $(addprefix $(ENGINE_DIR)/,arena.c heads.c journal.c \
               journal_replay.c numa_topo.c ramchunk.c writer.c)
HOOKS_SRCS  := t/hooks/hooks.c
HOOKS_HDRS  := t/hooks/hooks.h
# unit tests that set GOBLIN_TEST_* link the hooked library
HOOKED_TESTS := test_journal test_numa test_lookup
# $(call ENGINE_LIB,<build dir>,<unit test>): the libgoblin it links
ENGINE_LIB = $(if $(filter $(2),$(HOOKED_TESTS)),$(1)/t/libgoblin-hooks.a,$(1)/libgoblin.a)

PROGRAMS += t/libgoblin-hooks.a t/goblin-store-hooks

define HOOKS_FLAVOUR
# $(1): output dir, $(2): flags
$(1)/t/obj-hooks/%.o: %.c $(GOBLIN_HDRS) $(HOOKS_HDRS)
	@mkdir -p $$(dir $$@)
	@echo "  CC      $$@"
	@$$(CC) $$(call ENGINE_FLAGS,$(2)) -include t/hooks/hooks.h -c -o $$@ $$<

$(1)/t/libgoblin-hooks.a: $(patsubst %.c,$(1)/t/obj-hooks/%.o,$(HOOKED_SRCS) $(HOOKS_SRCS)) \
		$(patsubst %.c,$(1)/obj/%.o,$(filter-out $(HOOKED_SRCS),$(LIBGOBLIN_SRCS)))
	@rm -f $$@
	@echo "  AR      $$@"
	@ar rcs $$@ $$^

$(1)/t/goblin-store-hooks: $(patsubst %.c,$(1)/obj/%.o,$(STORED_SRCS)) $(1)/t/libgoblin-hooks.a
	@echo "  LD      $$@"
	@$$(CC) $(2) -o $$@ $$^ $$(LDLIBS) $$(STORED_LDLIBS)
endef

$(eval $(call HOOKS_FLAVOUR,build,$(BASEFLAGS) $(OPTFLAGS)))
$(eval $(call HOOKS_FLAVOUR,build/asan,$(BASEFLAGS) $(ASANFLAGS)))
