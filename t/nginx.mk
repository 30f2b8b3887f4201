# The HTTP suites (t/*.t, run by prove) and the Perl modules that
# t/lib/Test/Nginx/Socket.pm needs; the stream module is loaded by
# t/000-harness.t to check main_config/load_module.
DEB_PACKAGES += libnginx-mod-stream \
	libtest-base-perl libtext-diff-perl libtest-longstring-perl \
	liblist-moreutils-perl liburi-perl libipc-run-perl

# t/unit/test_ring.c checks the ring helpers both sides compile.
UNIT_SRCS += shared/ring.c
UNIT_HDRS += shared/ring.h shared/ring-t.h
