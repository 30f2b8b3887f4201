# crash-model.test's long run (issue 21): the model check of acknowledged
# operations across kill -9 and every crash point for CRASH_MODEL_S seconds
# (thousands of crash points), against one build; `make test` runs its
# short form (30 rounds) under both builds.
#   make crash-model [CRASH_MODEL_S=1800] [CRASH_MODEL_BUILD=build/asan]
#                    [CRASH_MODEL_ARGS="--seed 7"]
# Figures: $(CRASH_MODEL_BUILD)/crash-model.json.

CRASH_MODEL_S     ?= 1800
CRASH_MODEL_BUILD ?= build
CRASH_MODEL_ARGS  ?=

.PHONY: crash-model
crash-model: $(CRASH_MODEL_BUILD)/goblin-store
	BUILD=$(CRASH_MODEL_BUILD) t/daemon/crash-model.test \
		--seconds $(CRASH_MODEL_S) \
		--json $(CRASH_MODEL_BUILD)/crash-model.json $(CRASH_MODEL_ARGS)
