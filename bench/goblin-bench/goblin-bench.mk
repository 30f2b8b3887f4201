# goblin-bench: the load generator (bench/goblin-bench/).
# --proto rdma links the RDMA client (rdma_client.[ch], here) and both
# transports (storaged/rdma/rdma.h):
# RDMA_SRCS and RDMA_VERBS_SRCS come from storaged/storaged.mk, included
# after this file, so they are named here only in recipes (expanded when
# run); the prerequisites list the files by pattern.
PROGRAMS     += goblin-bench
DEB_PACKAGES += memcached nginx-core python3 libfabric-dev librdmacm-dev

GOBLIN_BENCH_SRC := $(wildcard bench/goblin-bench/*.c) shared/size.c
GOBLIN_BENCH_DEP := $(GOBLIN_BENCH_SRC) $(wildcard bench/goblin-bench/*.h) \
	shared/size.h bench/goblin-bench/goblin-bench.mk \
	$(wildcard storaged/rdma/rdma*.c) storaged/rdma/rdma.h storaged/storaged.mk
GOBLIN_BENCH_LINK = $(sort $(GOBLIN_BENCH_SRC) $(RDMA_SRCS) $(RDMA_VERBS_SRCS)) \
	-lm $(RDMA_LDLIBS) \
	$(RDMA_VERBS_LDLIBS)

build/goblin-bench: $(GOBLIN_BENCH_DEP)
	@mkdir -p $(@D)
	$(CC) $(BASEFLAGS) $(OPTFLAGS) $(RDMA_CLIENT_INC) -o $@ $(GOBLIN_BENCH_LINK)

build/asan/goblin-bench: $(GOBLIN_BENCH_DEP)
	@mkdir -p $(@D)
	$(CC) $(BASEFLAGS) $(ASANFLAGS) $(RDMA_CLIENT_INC) -o $@ $(GOBLIN_BENCH_LINK)
