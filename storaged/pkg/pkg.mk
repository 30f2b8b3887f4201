# Installing and packaging (issue 26).  `make install` puts goblin-store,
# goblin-store(8), its systemd unit, /etc/default/goblin-store (when
# absent) and the nginx module with its load_module snippet under
# DESTDIR/PREFIX (default /usr/local; the module goes where Debian's nginx
# loads modules from, NGX_MODULES_DIR); `make deb` builds the two Debian
# packages into build/ (storaged/pkg/make-deb).
PREFIX          ?= /usr/local
DESTDIR         ?=
NGX_MODULES_DIR ?= /usr/lib/nginx/modules
NGX_MODS_AVAIL  ?= /usr/share/nginx/modules-available
UNIT_DIR        ?= $(if $(filter /usr,$(PREFIX)),/lib/systemd/system,/etc/systemd/system)

.PHONY: install install-store install-module deb
install: install-store install-module
	@echo "installed; next: systemctl daemon-reload && systemctl enable --now goblin-store"
	@echo "  (a system user 'goblin' runs it: adduser --system --group goblin),"
	@echo "  and ln -s $(NGX_MODS_AVAIL)/mod-http-goblin.conf /etc/nginx/modules-enabled/50-mod-http-goblin.conf"

build/goblin-store.8: build/goblin-store storaged/pkg/gen-man
	storaged/pkg/gen-man build/goblin-store > $@.tmp && mv $@.tmp $@

install-store: build/goblin-store build/goblin-store.8
	install -D -m 0755 build/goblin-store $(DESTDIR)$(PREFIX)/sbin/goblin-store
	install -D -m 0644 build/goblin-store.8 $(DESTDIR)$(PREFIX)/share/man/man8/goblin-store.8
	gzip -9nf $(DESTDIR)$(PREFIX)/share/man/man8/goblin-store.8
	install -d $(DESTDIR)$(UNIT_DIR)
	sed 's|/usr/sbin/goblin-store|$(PREFIX)/sbin/goblin-store|' \
		storaged/pkg/goblin-store.service > $(DESTDIR)$(UNIT_DIR)/goblin-store.service
	chmod 0644 $(DESTDIR)$(UNIT_DIR)/goblin-store.service
	@if [ -e $(DESTDIR)/etc/default/goblin-store ]; then \
		echo "install: $(DESTDIR)/etc/default/goblin-store exists, kept"; \
	else \
		install -D -m 0644 storaged/pkg/goblin-store.default $(DESTDIR)/etc/default/goblin-store; \
	fi

install-module: build/ngx_http_goblin_module.so
	install -D -m 0644 build/ngx_http_goblin_module.so $(DESTDIR)$(NGX_MODULES_DIR)/ngx_http_goblin_module.so
	install -D -m 0644 ngx_goblin_module/pkg/mod-http-goblin.conf $(DESTDIR)$(NGX_MODS_AVAIL)/mod-http-goblin.conf
	install -D -m 0644 ngx_goblin_module/pkg/goblin-site.conf $(DESTDIR)$(PREFIX)/share/doc/libnginx-mod-http-goblin/examples/goblin-site.conf

deb: build/goblin-store build/ngx_http_goblin_module.so
	storaged/pkg/make-deb
