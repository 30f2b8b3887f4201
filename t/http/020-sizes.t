# usage: prove t/http/020-sizes.t
# Byte-exact bodies of 1 B, 256 KiB (one RAM head), 256 KiB + 1 (one byte
# on the SSD), 8 MiB (head, SSD prefix, HDD tail) and 33 MiB: PUT then GET
# through HTTP, and the same objects through memcache both ways (one
# store, two protocols).
BEGIN { push @INC, 't/lib' }
use GoblinTest;
use Test::Nginx::Socket;

our @Sizes = (1, 262144, 262145, 8388608, 34603008);

goblin_start();
goblin_defaults();

repeat_each(1);
plan tests => goblin_plan(2 * @Sizes + 3);
no_shuffle();
run_tests();

# what HTTP stored, memcache reads
for my $size (@Sizes) {
    my $got = mc_get("s$size");
    ok(defined $got && $got eq payload($size),
       "memcache get of the $size-byte object PUT over HTTP");
}

# what memcache stored, HTTP reads (on the nginx of the last block)
for my $size (@Sizes) {
    my $want = payload($size, $size + 7);
    mc_set("m$size", $want) eq 'STORED' or die "memcache set failed\n";
    my ($st, $h, $body) = http_request(server_port(), 'GET', "/obj/m$size");
    ok($st == 200 && $h->{'content-length'} == $size && $body eq $want,
       "HTTP GET of the $size-byte object set over memcache");
}

# the big objects really went through every tier
my $st = goblin_stats();
ok($st->{ram_head_bytes} > 0 && $st->{ssd_bytes} > 0 && $st->{hdd_bytes} > 0,
   "bytes in RAM ($st->{ram_head_bytes}), on the SSD ($st->{ssd_bytes}) "
   . "and the HDD ($st->{hdd_bytes}) pools");
is($st->{checksum_errors}, 0, 'no checksum errors');

goblin_stop();

__DATA__

=== TEST 1: 1 byte
--- config
    location /obj/ {
        goblin;
        goblin_methods GET PUT;
    }
--- request eval
["PUT /obj/s1\n" . GoblinTest::payload(1), "GET /obj/s1"]
--- error_code eval
[201, 200]
--- response_headers eval
["", "Content-Length: 1"]
--- response_body eval
["", GoblinTest::payload(1)]
--- no_error_log
[alert]
[crit]



=== TEST 2: 256 KiB: exactly one RAM head
--- config
    location /obj/ {
        goblin;
        goblin_methods GET PUT;
    }
--- request eval
["PUT /obj/s262144\n" . GoblinTest::payload(262144), "GET /obj/s262144"]
--- error_code eval
[201, 200]
--- response_headers eval
["", "Content-Length: 262144"]
--- response_body eval
["", GoblinTest::payload(262144)]
--- no_error_log
[alert]
[crit]



=== TEST 3: 256 KiB + 1: the last byte comes from the SSD
--- config
    location /obj/ {
        goblin;
        goblin_methods GET PUT;
    }
--- request eval
["PUT /obj/s262145\n" . GoblinTest::payload(262145), "GET /obj/s262145"]
--- error_code eval
[201, 200]
--- response_headers eval
["", "Content-Length: 262145"]
--- response_body eval
["", GoblinTest::payload(262145)]
--- no_error_log
[alert]
[crit]



=== TEST 4: 8 MiB: head, SSD prefix, HDD tail
--- config
    location /obj/ {
        goblin;
        goblin_methods GET PUT;
        client_max_body_size 64m;
    }
--- request eval
["PUT /obj/s8388608\n" . GoblinTest::payload(8388608), "GET /obj/s8388608"]
--- error_code eval
[201, 200]
--- response_headers eval
["", "Content-Length: 8388608"]
--- response_body eval
["", GoblinTest::payload(8388608)]
--- timeout: 30
--- no_error_log
[alert]
[crit]



=== TEST 5: 33 MiB
--- config
    location /obj/ {
        goblin;
        goblin_methods GET PUT;
        client_max_body_size 64m;
    }
--- request eval
["PUT /obj/s34603008\n" . GoblinTest::payload(34603008), "GET /obj/s34603008"]
--- error_code eval
[201, 200]
--- response_headers eval
["", "Content-Length: 34603008"]
--- response_body eval
["", GoblinTest::payload(34603008)]
--- timeout: 60
--- no_error_log
[alert]
[crit]
