# The HTTP suites (t/http/*.t, run by prove) and the Perl modules that
# t/lib/Test/Nginx/Socket.pm needs; the stream module is loaded by
# t/http/000-harness.t to check main_config/load_module.
DEB_PACKAGES += libnginx-mod-stream \
	libtest-base-perl libtext-diff-perl libtest-longstring-perl \
	liblist-moreutils-perl liburi-perl libipc-run-perl

# t/http/070-http2.t and the HTTP/2 pass: curl and h2load (HTTP/2 clients),
# Protocol::HTTP2 for many streams on one connection.
DEB_PACKAGES += curl nghttp2-client libprotocol-http2-perl

# t/http/140-metrics.t: promtool checks goblin_metrics' text, and Debian's
# prometheus scrapes it; the service the package starts (on :9090, and
# node-exporter's where installed) is stopped and disabled after `make deps`.
DEB_PACKAGES += prometheus
DEB_SERVICES += prometheus prometheus-node-exporter

# The suites against the module built with ASan+UBSan, loaded into
# Debian's nginx with the sanitizer runtime preloaded (t/nginx-asan), and
# goblin-store's ASan+UBSan build (BUILD=build/asan), each block's request
# over HTTP/2 (TEST_NGINX_USE_HTTP2; the suites' own checks stay on
# HTTP/1.1): one pass for both sanitized sides (`make test` runs the
# optimised pass too, over HTTP/1.1).  Any sanitizer report fails the run:
# in a block's error log, in the daemons' logs, or in the report files of
# processes that went away.
NGX_ASAN_REPORTS := build/asan/nginx-reports

.PHONY: test-nginx-asan
TEST_EXTRA += test-nginx-asan
TEST_BUILD += build/asan/ngx_http_goblin_module.so
test-nginx-asan: build/asan/ngx_http_goblin_module.so build/asan/goblin-store
	rm -rf $(NGX_ASAN_REPORTS) && mkdir -p $(NGX_ASAN_REPORTS)
	GOBLIN_NGX_MODULE=$(CURDIR)/build/asan/ngx_http_goblin_module.so \
	TEST_NGINX_BINARY=$(CURDIR)/t/nginx-asan TEST_NGINX_USE_HTTP2=1 \
	GOBLIN_SANITIZER_LOGS=$(CURDIR)/$(NGX_ASAN_REPORTS) \
	BUILD=build/asan $(PROVE) t/http/*.t
	@if [ -n "$$(ls -A $(NGX_ASAN_REPORTS))" ]; then \
		cat $(NGX_ASAN_REPORTS)/*; \
		echo "test-nginx-asan: sanitizer reports in $(NGX_ASAN_REPORTS)" >&2; \
		exit 1; \
	fi
