# The HTTP face: nginx, the Test::Nginx-format suites (t/*.t, run by prove)
# and the Perl modules t/lib/Test/Nginx/Socket.pm needs.
DEB_PACKAGES += nginx-core nginx-dev libnginx-mod-stream \
	libtest-base-perl libtext-diff-perl libtest-longstring-perl \
	liblist-moreutils-perl liburi-perl libipc-run-perl

# t/unit/test_ring.c checks the ring helpers both sides compile.
UNIT_SRCS += shared/ring.c
UNIT_HDRS += shared/ring.h shared/ring-t.h
