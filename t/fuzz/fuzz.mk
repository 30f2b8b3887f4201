# libFuzzer targets: every t/fuzz/fuzz_<name>.c -> build/fuzz/fuzz_<name>.
# A target's head comment names what it links:
#    * sources: <repo-relative .c files; libgoblin = the engine's sources>
#    * libs: <-l flags>                       (optional)
#   make fuzz [FUZZ_S=60] [FUZZ_TARGETS="proto options"]
#                          fuzz each target N seconds from its corpus
#   make fuzz-merge        add the inputs of the last runs that found new
#                          coverage to the committed corpora
#   make fuzz-smoke        (in make test) a few seconds per target, then
#                          every t/fuzz/crashes/ file replayed
#   make fuzz-cov          line coverage of each target's sources by its
#                          corpora (committed + scratch), from llvm-cov
# New inputs go to build/fuzz/corpus/<name>/ (smoke: build/fuzz/smoke/),
# reproducers to build/fuzz/crashes/; t/fuzz/run prints the figures.
# t/fuzz/crashes/<name>-<desc> are reproducers of bugs found; those listed
# in t/fuzz/crashes/open are not fixed yet and are not replayed.

ifndef FUZZ_MK_INCLUDED
FUZZ_MK_INCLUDED := 1

FUZZ_CC      ?= clang
FUZZ_S       ?= 60
FUZZ_SMOKE_S ?= 4
FUZZ_CFLAGS  := -std=gnu11 -g -O1 -D_GNU_SOURCE -pthread $(DAEMON_INC) \
                -Ingx_goblin_module -fsanitize=fuzzer,address,undefined
FUZZ_ALL     := $(patsubst t/fuzz/fuzz_%.c,%,$(wildcard t/fuzz/fuzz_*.c))
FUZZ_TARGETS ?= $(FUZZ_ALL)
FUZZ_HDRS    := $(wildcard shared/*.h storaged/*.h storaged/*/*.h ngx_goblin_module/*.h t/fuzz/*.h)

DEB_PACKAGES += clang llvm

# $(call fuzz_head,<field>,<name>): the target's " * <field>:" line.
fuzz_head = $(shell sed -n 's/^ \* $(1): *//p' t/fuzz/fuzz_$(2).c)
# $(call fuzz_srcs,<name>): its sources, libgoblin spelled out.
fuzz_srcs = $(patsubst libgoblin,$(LIBGOBLIN_SRCS),$(call fuzz_head,sources,$(1)))

define FUZZ_TARGET
build/fuzz/fuzz_$(1): t/fuzz/fuzz_$(1).c $(call fuzz_srcs,$(1)) $(FUZZ_HDRS)
	@mkdir -p $$(@D)
	@echo "  FUZZCC  $$@"
	@$$(FUZZ_CC) $$(FUZZ_CFLAGS) -o $$@ $$< $(call fuzz_srcs,$(1)) \
		$(call fuzz_head,libs,$(1)) -luring -lnuma -lxxhash -lm
endef
$(foreach t,$(FUZZ_ALL),$(eval $(call FUZZ_TARGET,$(t))))

# the same with clang's source-based coverage, for make fuzz-cov
define FUZZ_COV_TARGET
build/fuzz/cov/fuzz_$(1): t/fuzz/fuzz_$(1).c $(call fuzz_srcs,$(1)) $(FUZZ_HDRS)
	@mkdir -p $$(@D)
	@echo "  FUZZCOV $$@"
	@$$(FUZZ_CC) $$(FUZZ_COV_CFLAGS) -o $$@ $$< $(call fuzz_srcs,$(1)) \
		$(call fuzz_head,libs,$(1)) -luring -lnuma -lxxhash -lm
endef
FUZZ_COV_CFLAGS := $(filter-out -fsanitize=%,$(FUZZ_CFLAGS)) -fsanitize=fuzzer \
                   -fprofile-instr-generate -fcoverage-mapping
$(foreach t,$(FUZZ_ALL),$(eval $(call FUZZ_COV_TARGET,$(t))))

.PHONY: fuzz fuzz-build fuzz-merge fuzz-smoke fuzz-cov
fuzz-build: $(addprefix build/fuzz/fuzz_,$(FUZZ_TARGETS))

fuzz: fuzz-build
	t/fuzz/run -s $(FUZZ_S) $(FUZZ_TARGETS)

fuzz-merge: fuzz-build
	t/fuzz/run -m $(FUZZ_TARGETS)

# Runs each corpus once through the coverage build (open bugs' checks
# skipped, as in t/fuzz/run); prints llvm-cov's per-file report for the
# target's sources.
fuzz-cov: $(addprefix build/fuzz/cov/fuzz_,$(FUZZ_TARGETS))
	@for t in $(FUZZ_TARGETS); do \
		mkdir -p build/fuzz/corpus/$$t; \
		rm -f build/fuzz/cov/$$t.profraw; \
		FUZZ_OPEN="$$(sed -n "s/^$$t-//p" t/fuzz/crashes/open | tr '\n' ' ')" \
		LLVM_PROFILE_FILE=build/fuzz/cov/$$t.profraw build/fuzz/cov/fuzz_$$t \
			-runs=0 -artifact_prefix=build/fuzz/cov/$$t- build/fuzz/corpus/$$t \
			t/fuzz/corpus/$$t >build/fuzz/cov/$$t.log 2>&1; \
		llvm-profdata merge -o build/fuzz/cov/$$t.profdata build/fuzz/cov/$$t.profraw || exit 1; \
		echo "== $$t"; \
		llvm-cov report build/fuzz/cov/fuzz_$$t -instr-profile=build/fuzz/cov/$$t.profdata \
			$$(sed -n 's/^ \* sources: *//p' t/fuzz/fuzz_$$t.c | \
				sed 's|libgoblin|$(LIBGOBLIN_SRCS)|') | \
			awk '$$1 !~ /^-/ { printf "  %-34s lines %-8s regions %-8s branches %s\n", \
				$$1, $$10, $$4, $$13 }' | sed 1d; \
	done

# from the committed corpora only, so earlier long runs don't slow it
fuzz-smoke: fuzz-build
	rm -rf build/fuzz/smoke
	t/fuzz/run -s $(FUZZ_SMOKE_S) -r -c build/fuzz/smoke $(FUZZ_TARGETS)

TEST_EXTRA += fuzz-smoke
TEST_BUILD += fuzz-build
endif
