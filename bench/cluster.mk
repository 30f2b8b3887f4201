# bench/cluster: several goblin-store nodes behind one front nginx (issue
# 25): the placement the front, libmemcached and Cache::Memcached::Fast
# agree on; GET throughput and p99 through the front with 1, 2 and 3
# nodes, each on its own emulated HDD and SSD (three rigs); kill -9 of a
# node under load; its warm and --fresh rejoin.  `make bench-cluster`
# builds what it needs and runs the full bench into
# bench/results/<date>-cluster.{json,md} and plots (about 7 minutes);
# CLUSTER_ARGS=--quick runs the reduced one (about 3 minutes) into
# bench/results/tmp/quick/.  Needs root.  `make test` runs its selftest.
CLUSTER_ARGS ?=
CLUSTER_OUT  := $(if $(filter --quick,$(CLUSTER_ARGS)),bench/results/tmp/quick,bench/results)

.PHONY: bench-cluster bench-cluster-selftest
bench-cluster: bench-packages
	@$(MAKE) --no-print-directory build/goblin-store build/goblin-devmodel \
		build/ngx_http_goblin_module.so
	/usr/bin/python3 bench/cluster --out $(CLUSTER_OUT) $(CLUSTER_ARGS)

TEST_EXTRA += bench-cluster-selftest
bench-cluster-selftest:
	bench/cluster.d/selftest; rc=$$?; [ $$rc = 0 ] || [ $$rc = 77 ]
