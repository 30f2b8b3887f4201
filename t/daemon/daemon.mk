# The daemon tests (t/daemon/*.test, run by t/run).

# clients.test and clients-perl.test: standard memcache clients used
# unmodified (libmemcached's tools, pymemcache, Cache::Memcached::Fast);
# nodes.test: libmemcached's ketama through pylibmc, and C::M::F's.
DEB_PACKAGES += libmemcached-tools python3-pymemcache libcache-memcached-fast-perl \
	python3-pylibmc

# front-hardening.test's malloc fault injector (LD_PRELOAD, optimised
# build only: ASan's allocator cannot be interposed).
build/t/failmalloc.so: t/lib/failmalloc.c
	@mkdir -p $(@D)
	@echo "  CC      $@"
	@$(CC) -std=gnu11 -O2 -Wall -Wextra -Werror -shared -fPIC -o $@ $<

all: build/t/failmalloc.so

# pools.test: pool files that grow in steps, the marker's format version
# and stripe unit, --fresh; nothing to build or install beyond the daemon.

# rdma.test's client of goblin-store's RDMA endpoint: both transports, as
# the daemon links them (storaged/storaged.mk's RDMA_SRCS, RDMA_VERBS_SRCS).
RDMA_GET_SRCS := t/daemon/rdma-get.c $(sort $(RDMA_SRCS) $(RDMA_VERBS_SRCS))
build/t/rdma-get: $(RDMA_GET_SRCS) storaged/rdma/rdma.h $(RDMA_CLIENT_DEPS)
	@mkdir -p $(@D)
	@echo "  LD      $@"
	@$(CC) $(BASEFLAGS) $(OPTFLAGS) $(RDMA_CLIENT_INC) -o $@ $(RDMA_GET_SRCS) $(RDMA_LDLIBS) $(RDMA_VERBS_LDLIBS)
build/asan/t/rdma-get: $(RDMA_GET_SRCS) storaged/rdma/rdma.h $(RDMA_CLIENT_DEPS)
	@mkdir -p $(@D)
	@echo "  LD      $@"
	@$(CC) $(BASEFLAGS) $(ASANFLAGS) $(RDMA_CLIENT_INC) -o $@ $(RDMA_GET_SRCS) $(RDMA_LDLIBS) $(RDMA_VERBS_LDLIBS)

all: build/t/rdma-get
asan: build/asan/t/rdma-get

# rdma-bench.test: bench/run_rdma_256k_ib.sh --quick over the emulated
# transport (libfabric tcp: storaged.mk's packages) and goblin-bench
# --proto rdma against goblin-store --rdma; its PNG needs gnuplot.
DEB_PACKAGES += gnuplot-nox

# small-http.test: bench/small-http --quick in a rig of its own (root, FUSE,
# cgroup v1 memory, nginx, fio, gnuplot); build/goblin-corpus comes from
# bench/small-http.d/small-http.mk.
