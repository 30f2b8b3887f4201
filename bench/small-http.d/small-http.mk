# bench/small-http: the corpus describer (goblin-corpus) links goblin-bench's
# generators, so its digest covers exactly the bytes goblin-bench stores.

PROGRAMS += goblin-corpus

GOBLIN_CORPUS_SRC := bench/small-http.d/corpus.c \
	bench/goblin-bench/goblin-bench-gen.c
GOBLIN_CORPUS_DEP := $(GOBLIN_CORPUS_SRC) bench/goblin-bench/goblin-bench-gen.h \
	bench/small-http.d/small-http.mk

build/goblin-corpus: $(GOBLIN_CORPUS_DEP)
	@mkdir -p $(@D)
	$(CC) $(BASEFLAGS) $(OPTFLAGS) -o $@ $(GOBLIN_CORPUS_SRC) -lxxhash -lm

build/asan/goblin-corpus: $(GOBLIN_CORPUS_DEP)
	@mkdir -p $(@D)
	$(CC) $(BASEFLAGS) $(ASANFLAGS) -o $@ $(GOBLIN_CORPUS_SRC) -lxxhash -lm
