# goblin-blobdb (bench/blobdb/): Goblin's engine against RocksDB BlobDB.
# Opt-in: `make bench-blobdb` installs librocksdb-dev and builds it; `make all`
# and `make asan` build it only where librocksdb-dev is already installed.

BLOBDB_SRCS := $(wildcard bench/blobdb/*.c)
BLOBDB_HDRS := $(wildcard bench/blobdb/*.h) storaged/engine/goblin.h
BLOBDB_LIBS  = -lrocksdb -ljansson $(LDLIBS)
BLOBDB_DEFS  = -DROCKSDB_VERSION='"$(shell dpkg-query -W -f='$${Version}' librocksdb-dev 2>/dev/null)"'

ifneq ($(wildcard /usr/include/rocksdb/c.h),)
PROGRAMS += goblin-blobdb
endif

define BLOBDB_FLAVOUR
# $(1): output dir, $(2): flags
$(1)/goblin-blobdb: $$(BLOBDB_SRCS) $$(BLOBDB_HDRS) $(1)/libgoblin.a
	@mkdir -p $$(@D)
	@echo "  LD      $$@"
	@$$(CC) $(2) $$(BLOBDB_DEFS) -o $$@ $$(BLOBDB_SRCS) $(1)/libgoblin.a \
		$$(BLOBDB_LIBS)
endef

$(eval $(call BLOBDB_FLAVOUR,build,$$(BASEFLAGS) $$(OPTFLAGS)))
$(eval $(call BLOBDB_FLAVOUR,build/asan,$$(BASEFLAGS) $$(ASANFLAGS)))

.PHONY: bench-blobdb
bench-blobdb:
	@dpkg-query -W -f='$${Status}' librocksdb-dev 2>/dev/null | \
		grep -q "install ok installed" || { \
		[ "$$(id -u)" = 0 ] || { echo "make bench-blobdb: run as root to install librocksdb-dev" >&2; exit 1; }; \
		echo "make bench-blobdb: installing librocksdb-dev"; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -q --no-install-recommends librocksdb-dev; }
	@$(MAKE) --no-print-directory build/goblin-blobdb
