# The HTTP face: nginx, the Test::Nginx-format suites (t/*.t, run by prove)
# and the Perl modules t/lib/Test/Nginx/Socket.pm needs.
DEB_PACKAGES += nginx-core nginx-dev libnginx-mod-stream \
	libtest-base-perl libtext-diff-perl libtest-longstring-perl \
	liblist-moreutils-perl liburi-perl libipc-run-perl
