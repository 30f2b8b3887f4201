# goblin-bench: the load generator (bench/goblin-bench/).
PROGRAMS     += goblin-bench
DEB_PACKAGES += memcached nginx-core python3

GOBLIN_BENCH_SRC := $(wildcard bench/goblin-bench/*.c) shared/size.c
GOBLIN_BENCH_DEP := $(GOBLIN_BENCH_SRC) $(wildcard bench/goblin-bench/*.h) \
	shared/size.h bench/goblin-bench/goblin-bench.mk

build/goblin-bench: $(GOBLIN_BENCH_DEP)
	@mkdir -p $(@D)
	$(CC) $(BASEFLAGS) $(OPTFLAGS) -o $@ $(GOBLIN_BENCH_SRC) -lm

build/asan/goblin-bench: $(GOBLIN_BENCH_DEP)
	@mkdir -p $(@D)
	$(CC) $(BASEFLAGS) $(ASANFLAGS) -o $@ $(GOBLIN_BENCH_SRC) -lm
