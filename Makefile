# Goblin Store — top-level build.  `make run` and `make test` do all set-up.
#
# Two build flavours share the sources: build/ (optimised) and build/asan/
# (ASan+UBSan).  Folder fragments (*/*.mk) add programs and packages:
#   PROGRAMS      += name          -> build/name and build/asan/name
#   RUN_PACKAGES  += pkg           -> installed by `make run` (and deps)
#   DEB_PACKAGES  += pkg           -> installed by `make deps`
#   DEB_SERVICES  += unit          -> stopped and disabled right after
#                                     `make deps` installed something (the
#                                     services a package starts itself)
#   TEST_EXTRA    += target        -> run by `make test` after the suites
# and rules of their own for build/name and build/asan/name.  The unit
# tests' rules are in t/unit/unit.mk (`make asan` builds them).

CC        ?= cc
WARN      := -Wall -Wextra -Werror
# Everything but the engine sees shared/ and the daemon's folders; the
# engine (storaged/engine/) sees only shared/ and itself.
ENGINE_INC := -Ishared -Istoraged/engine
DAEMON_INC := -Ishared -Istoraged -Istoraged/engine -Istoraged/mc \
              -Istoraged/link -Istoraged/rdma
BASEFLAGS := -std=gnu11 -g -D_GNU_SOURCE -pthread $(WARN) $(DAEMON_INC)
# $(call ENGINE_FLAGS,<flags>): <flags> with the engine's include path
ENGINE_FLAGS = $(filter-out $(DAEMON_INC),$(1)) $(ENGINE_INC)
OPTFLAGS  := -O2
ASANFLAGS := -O1 -fsanitize=address,undefined -fno-omit-frame-pointer \
             -fno-sanitize-recover=all
LDLIBS    := -luring -lnuma -lxxhash -lm

# RUN_PACKAGES: what building and running need (`make run` installs only
# these); DEB_PACKAGES: those and every test's and benchmark's (`make deps`,
# `make test`).
RUN_PACKAGES := build-essential pkg-config liburing-dev libnuma-dev \
	libibverbs-dev libjansson-dev libxxhash-dev procps iproute2 curl \
	netcat-openbsd libmemcached-tools
DEB_PACKAGES = $(RUN_PACKAGES) memcached python3-pymemcache fio psmisc \
	gnuplot-nox

DEB_SERVICES :=

PROGRAMS   :=
TEST_EXTRA :=
# what TEST_EXTRA's suites need built, built with the rest, two at a time
TEST_BUILD :=

.PHONY: all asan deps run-deps run test check unit clean bench
all:

include $(sort $(wildcard shared/*.mk storaged/*.mk storaged/*/*.mk bench/*.mk bench/*/*.mk \
                          ngx_goblin_module/*.mk t/*.mk t/*/*.mk))

all: $(addprefix build/,$(PROGRAMS))
asan: $(addprefix build/asan/,$(PROGRAMS))

# $(call INSTALL_MISSING,<target>,<packages>): installs each missing
# Debian package; apt-get update first, once.
define INSTALL_MISSING
	@missing=""; for p in $(sort $(2)); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | \
			grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "make $(1): installing$$missing"; \
		[ "$$(id -u)" = 0 ] || { echo "make $(1): run as root to install$$missing" >&2; exit 1; }; \
		apt-get update -q && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing && \
		if [ -n "$(strip $(DEB_SERVICES))" ] && command -v systemctl >/dev/null; then \
			systemctl disable --now $(DEB_SERVICES) 2>/dev/null || true; \
		fi; \
	fi
endef

deps:
	$(call INSTALL_MISSING,deps,$(DEB_PACKAGES))
run-deps:
	$(call INSTALL_MISSING,run,$(RUN_PACKAGES))

# make run [PORT=11211] [HTTP_PORT=8080]: goblin-store and an nginx with
# the module in the foreground (ngx_goblin_module/run)
PORT      ?= 11211
HTTP_PORT ?= 8080
run: run-deps
	$(MAKE) build/goblin-store build/ngx_http_goblin_module.so
	@./ngx_goblin_module/run --port $(HTTP_PORT) --memcache-port $(PORT)

# Every test against the ASan+UBSan build, then the HTTP and daemon-level
# ones again against the optimised build: t/http/*.t are Test::Nginx suites
# run by prove (against the ASan daemon in test-nginx-asan, t/http/http.mk,
# with the ASan module and HTTP/2); t/run runs t/daemon/*.test and, by
# default, the unit tests.
# The benchmark method checks run against the optimised build only: they
# check the scripts (arithmetic, reports, the rig), and the daemon paths
# they drive are the daemon tests' too.
# The HTTP suites run two at a time: each has its own ports, servroot,
# daemon and origin (TEST_NGINX_RANDOMIZE), and most of their time is
# waiting (rates, fills, timeouts); that halves them on two cores.
PROVE := prove -j2
BENCH_METHOD_TESTS := t/daemon/compare.test t/daemon/http-compare.test \
	t/daemon/numa-bench.test t/daemon/rdma-bench.test \
	t/daemon/restart-bench.test t/daemon/rig.test t/daemon/rig-net.test \
	t/daemon/small-http.test
test: deps
	$(MAKE) -j2 all asan $(TEST_BUILD)
	BUILD=build $(PROVE) t/http/*.t
	BUILD=build t/run $$(ls t/daemon/*.test)
	BUILD=build/asan t/run $$(ls build/asan/t/test_*) \
		$(filter-out $(BENCH_METHOD_TESTS),$(wildcard t/daemon/*.test))
	$(if $(strip $(TEST_EXTRA)),$(MAKE) $(TEST_EXTRA))

# The inner loop (a few minutes): the unit tests and the memcache protocol
# suites under ASan+UBSan, one HTTP suite, and the tree's static checks.
CHECK_TESTS := t/daemon/proto-commands.test t/daemon/proto-input.test \
	t/daemon/proto-meta.test t/daemon/proto-stats.test \
	t/daemon/proto-storage.test
check: deps
	$(MAKE) all asan
	BUILD=build/asan t/run $$(ls build/asan/t/test_*) $(CHECK_TESTS)
	BUILD=build/asan prove t/http/010-http.t
	$(if $(strip $(TEST_EXTRA)),$(MAKE) $(TEST_EXTRA))

clean:
	rm -rf build t/servroot*
