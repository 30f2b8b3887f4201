# t/clients.test and t/clients-perl.test: standard memcache clients used
# unmodified (libmemcached's tools, pymemcache, Cache::Memcached::Fast).
DEB_PACKAGES += libmemcached-tools python3-pymemcache libcache-memcached-fast-perl
