# ngx_http_goblin_module, built as a dynamic module against Debian's nginx
# (nginx-dev's source tree and conf_flags) into build/; `make module`.
RUN_PACKAGES += nginx-core nginx-dev libjansson-dev

NGX_MODULE_SRCS := config ngx_goblin_module/build-module \
	$(wildcard ngx_goblin_module/*.c ngx_goblin_module/*.h) \
	shared/ring.c shared/ring.h shared/ring-t.h

.PHONY: module
all: module
module: build/ngx_http_goblin_module.so

build/ngx_http_goblin_module.so: $(NGX_MODULE_SRCS)
	ngx_goblin_module/build-module $@

# The same module with ASan+UBSan (build/asan/nginx-src), for Debian's
# nginx started through t/nginx-asan; `make test-nginx-asan` (t/http/http.mk).
.PHONY: module-asan
module-asan: build/asan/ngx_http_goblin_module.so

build/asan/ngx_http_goblin_module.so: $(NGX_MODULE_SRCS)
	ngx_goblin_module/build-module --asan $@

# The module's file-level call graph (from its objects) is the one
# ngx_http_goblin_module.h documents and has no cycle; `make test`.
.PHONY: check-module-calls
TEST_EXTRA += check-module-calls
check-module-calls: build/ngx_http_goblin_module.so
	t/check-module-calls
