# bench/engine-scale: how the engine's locking scales with cores (issue
# 27): GET/s in-process with 1 and 2 threads, mutex acquisitions and hold
# time per GET, the longest GET stall while 1,000,000 objects are
# checkpointed.  `make bench-engine-scale` builds both binaries and runs
# bench/engine-scale into bench/results/<date>-engine-scale.{json,md};
# bench/engine-scale --help says how to compare with an older commit.
# goblin-engine-scale links build/libgoblin.a; goblin-engine-scale-locks
# compiles the engine's sources with bench/engine-scale.d/lockstat.h
# force-included (the counters exist in that binary only).
ENGINE_SCALE_DIR  := bench/engine-scale.d
ENGINE_SCALE_DEPS := $(ENGINE_SCALE_DIR)/engine-scale.c $(ENGINE_SCALE_DIR)/lockstat.h \
                     bench/engine-bench.h

.PHONY: bench-engine-scale
build/goblin-engine-scale: $(ENGINE_SCALE_DEPS) build/libgoblin.a
	@echo "  LD      $@"
	@$(CC) $(BASEFLAGS) $(OPTFLAGS) -o $@ $(ENGINE_SCALE_DIR)/engine-scale.c build/libgoblin.a $(LDLIBS)

# (storaged.mk, which sets LIBGOBLIN_SRCS, is read after this file: the
# prerequisites name the engine's files themselves)
build/goblin-engine-scale-locks: $(ENGINE_SCALE_DEPS) $(ENGINE_SCALE_DIR)/lockstat.c \
		$(wildcard storaged/engine/*.[ch] shared/*.[ch])
	@echo "  LD      $@"
	@$(CC) $(BASEFLAGS) $(OPTFLAGS) -DENGINE_SCALE_LOCKS -I$(ENGINE_SCALE_DIR) \
		-include $(ENGINE_SCALE_DIR)/lockstat.h -o $@ \
		$(ENGINE_SCALE_DIR)/engine-scale.c $(ENGINE_SCALE_DIR)/lockstat.c \
		$(LIBGOBLIN_SRCS) $(LDLIBS)

bench-engine-scale: build/goblin-engine-scale build/goblin-engine-scale-locks
	bench/engine-scale --out bench/results
