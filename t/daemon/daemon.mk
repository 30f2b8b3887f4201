# The daemon tests (t/daemon/*.test, run by t/run).

# clients.test and clients-perl.test: standard memcache clients used
# unmodified (libmemcached's tools, pymemcache, Cache::Memcached::Fast).
DEB_PACKAGES += libmemcached-tools python3-pymemcache libcache-memcached-fast-perl

# front-hardening.test's malloc fault injector (LD_PRELOAD, optimised
# build only: ASan's allocator cannot be interposed).
build/t/failmalloc.so: t/lib/failmalloc.c
	@mkdir -p $(@D)
	@echo "  CC      $@"
	@$(CC) -std=gnu11 -O2 -Wall -Wextra -Werror -shared -fPIC -o $@ $<

all: build/t/failmalloc.so

# pools.test: pool files that grow in steps, the marker's format version
# and stripe unit, --fresh; nothing to build or install beyond the daemon.

# small-http.test: bench/small-http --quick in a rig of its own (root, FUSE,
# cgroup v1 memory, nginx, fio, gnuplot); build/goblin-corpus comes from
# bench/small-http.d/small-http.mk.
