# `make test` and `make check` hold the product free of test switches: no
# GOBLIN_TEST_* in goblin-store or libgoblin.a, either flavour (they live in
# the hooked test build, t/hooks/; t/check-product).
.PHONY: check-product
TEST_EXTRA += check-product
check-product:
	t/check-product
