# goblin-bench: the load generator (bench/goblin-bench*.c).
PROGRAMS     += goblin-bench
DEB_PACKAGES += memcached nginx-core python3

GOBLIN_BENCH_SRC := bench/goblin-bench.c bench/goblin-bench-gen.c \
	bench/goblin-bench-hist.c bench/goblin-bench-proto.c \
	bench/goblin-bench-loop.c bench/goblin-bench-report.c \
	bench/goblin-bench-selftest.c shared/size.c
GOBLIN_BENCH_DEP := $(GOBLIN_BENCH_SRC) $(wildcard bench/goblin-bench*.h) \
	shared/size.h bench/goblin-bench.mk

build/goblin-bench: $(GOBLIN_BENCH_DEP)
	@mkdir -p $(@D)
	$(CC) $(BASEFLAGS) $(OPTFLAGS) -o $@ $(GOBLIN_BENCH_SRC) -lm

build/asan/goblin-bench: $(GOBLIN_BENCH_DEP)
	@mkdir -p $(@D)
	$(CC) $(BASEFLAGS) $(ASANFLAGS) -o $@ $(GOBLIN_BENCH_SRC) -lm
