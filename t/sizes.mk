# `make test` holds the code map's size rule (README): no tracked source
# file over 800 lines, no C function over 120 (t/check-sizes lists them).
.PHONY: check-sizes
TEST_EXTRA += check-sizes
check-sizes:
	t/check-sizes
