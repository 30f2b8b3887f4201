# C unit tests: t/unit/test_X.c -> build/t/test_X and build/asan/t/test_X,
# linked with the sources below (other fragments may add theirs with +=).
UNIT_SRCS += shared/size.c storaged/proto_parse.c
UNIT_HDRS += shared/size.h storaged/proto_parse.h

build/t/test_%: t/unit/test_%.c $(UNIT_SRCS) $(UNIT_HDRS)
	@mkdir -p $(@D)
	$(CC) $(BASEFLAGS) $(OPTFLAGS) -o $@ $< $(UNIT_SRCS) $(LDLIBS)

build/asan/t/test_%: t/unit/test_%.c $(UNIT_SRCS) $(UNIT_HDRS)
	@mkdir -p $(@D)
	$(CC) $(BASEFLAGS) $(ASANFLAGS) -o $@ $< $(UNIT_SRCS) $(LDLIBS)
