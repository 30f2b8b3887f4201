# `make test` and `make check` hold the layers' rules (README, "Code map"):
# the engine includes only its own and shared/'s headers, the daemon only
# goblin.h of the engine's, no product object depends on t/ (t/check-layers).
.PHONY: check-layers
TEST_EXTRA += check-layers
check-layers:
	t/check-layers
