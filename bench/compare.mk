# bench/compare: goblin-store against memcached and memcached+extstore in
# the emulated rig (issue 3).  `make bench` installs what only the
# benchmarks need (gnuplot-nox, varnish, trafficserver), builds the server,
# client and device model, and runs the full comparison into bench/results/
# (about 40 minutes: six scenarios at three networks);
# `make bench BENCH_ARGS=--quick` runs the reduced one into
# bench/results/tmp/quick/.  Needs root.  varnish and trafficserver are the
# caches bench/http-compare --tier disk measures; they run from the
# benchmark's own work dir, so the services their packages start (where no
# policy-rc.d denies it) are stopped and disabled right after installing.

BENCH_ARGS     ?=
BENCH_PACKAGES := gnuplot-nox varnish trafficserver
BENCH_SERVICES := varnish varnishncsa trafficserver

bench: deps
	@missing=""; for p in $(BENCH_PACKAGES); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | \
			grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		[ "$$(id -u)" = 0 ] || { echo "make bench: run as root to install$$missing" >&2; exit 1; }; \
		echo "make bench: installing$$missing"; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -q --no-install-recommends $$missing; \
		if command -v systemctl >/dev/null; then \
			systemctl disable --now $(BENCH_SERVICES) 2>/dev/null || true; \
		fi; \
	fi
	@$(MAKE) --no-print-directory build/goblin-store build/goblin-bench \
		build/goblin-devmodel
	bench/compare $(BENCH_ARGS)

# bench/restart: warm restart of 100,000 objects (kill -9 and clean stop:
# time to serve, objects recovered, head-miss vs head-hit TTFB) and the
# cost of --sync-interval, in the emulated rig (issue 10), into
# bench/results/<date>-restart.{json,md}; RESTART_ARGS=--quick for a
# smoke run (10,000 objects, into bench/results/tmp/quick/).  Needs root.
RESTART_ARGS ?=

.PHONY: bench-restart
bench-restart: deps
	@$(MAKE) --no-print-directory build/goblin-store build/goblin-bench \
		build/goblin-devmodel
	bench/restart $(RESTART_ARGS)
