# bench/cache-fill: goblin-store's cache mode against nginx proxy_cache
# (+ proxy_cache_lock, + slice), Varnish 7 and Traffic Server 9, each
# filling from an origin across the rig's shaped link (issue 24).
# `make bench-cache-fill` installs what only the benchmarks need (as `make
# bench` does: gnuplot-nox, varnish, trafficserver; their services stopped
# and disabled right after installing), builds the store, the module, the
# device model and the delay line, and runs the full comparison into
# bench/results/<date>-cache-fill.{json,md} (about 10 minutes);
# CACHE_FILL_ARGS=--quick runs the reduced one (about 2-3 minutes) into
# bench/results/tmp/quick/.  Needs root.  `make test` runs its selftest.
CACHE_FILL_ARGS ?=
CACHE_FILL_OUT  := $(if $(filter --quick,$(CACHE_FILL_ARGS)),bench/results/tmp/quick,bench/results)

# bench-packages: what `make bench` installs, as a target of its own (the
# same recipe as bench's in compare.mk, which could depend on it instead).
.PHONY: bench-cache-fill bench-cache-fill-selftest bench-packages
bench-packages: deps
	@missing=""; for p in $(BENCH_PACKAGES); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | \
			grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		[ "$$(id -u)" = 0 ] || { echo "make bench-packages: run as root to install$$missing" >&2; exit 1; }; \
		echo "make bench-packages: installing$$missing"; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -q --no-install-recommends $$missing; \
		if command -v systemctl >/dev/null; then \
			systemctl disable --now $(BENCH_SERVICES) 2>/dev/null || true; \
		fi; \
	fi

bench-cache-fill: bench-packages
	@$(MAKE) --no-print-directory build/goblin-store build/goblin-devmodel \
		build/goblin-netdelay build/ngx_http_goblin_module.so
	bench/cache-fill --out $(CACHE_FILL_OUT) $(CACHE_FILL_ARGS)

TEST_EXTRA += bench-cache-fill-selftest
bench-cache-fill-selftest:
	bench/cache-fill.d/selftest
