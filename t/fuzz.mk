# The top Makefile includes t/*.mk: this brings in the fuzzing fragment.
include t/fuzz/fuzz.mk
