# usage: prove t/http/030-ranges.t
# Single ranges in each tier of an 8 MiB object (RAM head [0, 256K), SSD
# prefix [256K, 1.25M), HDD tail [1.25M, 8M)) and across their borders,
# byte-exact; a range that starts in the HDD tail reads one HDD chunk and
# sends nothing from the head.  Numbers too big for any object (2^63 and
# up, 2^64-1, 2^64, 20 digits and more) are not malformed: a first-pos past
# the end is 416 with "bytes */SIZE", a last-pos or suffix-length past it
# means the rest or all of the object (RFC 9110 14.1.2); where nginx's own
# range filter agrees (static files), both answer alike.
BEGIN { push @INC, 't/lib' }
use GoblinTest;
use Test::Nginx::Socket;
use File::Temp qw(tempdir);
use JSON::PP ();

our $Size = 8388608;
our $Obj = payload($Size);

# the same bytes as a static file, for nginx's own range handling
my $static = tempdir('goblin-ranges.XXXXXX', DIR => '/var/tmp', CLEANUP => 1);
{
    open my $f, '>', "$static/tiers" or die "$static/tiers: $!\n";
    print $f $Obj;
    close $f or die "$static/tiers: $!\n";
}
$ENV{TEST_NGINX_STATIC_DIR} = $static;

goblin_start();
mc_set('tiers', $Obj) eq 'STORED' or die "memcache set failed\n";
goblin_defaults();

# the expected bytes of "bytes=<a>-<b>"
sub want ($$) { my ($a, $b) = @_; substr($main::Obj, $a, $b - $a + 1) }

repeat_each(1);
plan tests => goblin_plan(4 + 2 * 6);
no_shuffle();
run_tests();

# counters from both sides around one range in the HDD tail
sub module_stats () {
    my ($st, $h, $body) = http_request(server_port(), 'GET', '/status');
    return JSON::PP::decode_json($body);
}

my $before = module_stats();
my ($st, $h, $body) = http_request(server_port(), 'GET', '/obj/tiers',
                                   headers => ['Range: bytes=5000000-5000099']);
my $after = module_stats();

ok($st == 206 && $body eq want(5000000, 5000099),
   'a range in the HDD tail is byte-exact');
is($after->{module}{head_bytes} - $before->{module}{head_bytes}, 0,
   'nothing of it came from the head');
my $read = $after->{storaged}{disk_read_bytes}
           - $before->{storaged}{disk_read_bytes};
my $cached = $after->{storaged}{chunk_hits} - $before->{storaged}{chunk_hits};
ok(($read > 0 || $cached == 1) && $read <= 1 << 20,
   "it read one HDD chunk from disk, or took it from the RAM chunk cache,"
   . " not the SSD prefix ($read bytes, $cached chunk hits)");

# first-pos past the end, however many digits: 416 from both, as nginx's
# static module answers (it checks its numbers against off_t too)
for my $range ('18446744073709551615-', '18446744073709551616-',
               '99999999999999999999-', '9223372036854775808-',
               '18446744073709551615-18446744073709551615',
               '00000000000000000000001-9') {
    my @got = http_request(server_port(), 'GET', '/obj/tiers',
                           headers => ["Range: bytes=$range"]);
    my @want = http_request(server_port(), 'GET', '/static/tiers',
                            headers => ["Range: bytes=$range"]);
    is("$got[0] " . ($got[1]{'content-range'} // 'none'),
       "$want[0] " . ($want[1]{'content-range'} // 'none'),
       "bytes=$range: the status and Content-Range of nginx's static module");
    ok($got[2] eq ($got[0] == 416 ? '' : $want[2]),
       "bytes=$range: the same body (" . length($got[2]) . ' bytes)');
}

goblin_stop();

__DATA__

=== TEST 1: inside the RAM head
--- config
    location /obj/ {
        goblin;
    }
--- request
GET /obj/tiers
--- more_headers
Range: bytes=1000-1999
--- error_code: 206
--- response_headers
Content-Range: bytes 1000-1999/8388608
Content-Length: 1000
--- response_body eval
main::want(1000, 1999)
--- no_error_log
[alert]
[crit]



=== TEST 2: across the head and the SSD prefix
--- config
    location /obj/ {
        goblin;
    }
--- request
GET /obj/tiers
--- more_headers
Range: bytes=262100-262200
--- error_code: 206
--- response_headers
Content-Range: bytes 262100-262200/8388608
--- response_body eval
main::want(262100, 262200)
--- no_error_log
[alert]
[crit]



=== TEST 3: inside the SSD prefix
--- config
    location /obj/ {
        goblin;
    }
--- request
GET /obj/tiers
--- more_headers
Range: bytes=300000-300099
--- error_code: 206
--- response_body eval
main::want(300000, 300099)
--- no_error_log
[alert]
[crit]



=== TEST 4: across the SSD prefix and the HDD tail
--- config
    location /obj/ {
        goblin;
    }
--- request
GET /obj/tiers
--- more_headers
Range: bytes=1310000-1311999
--- error_code: 206
--- response_body eval
main::want(1310000, 1311999)
--- no_error_log
[alert]
[crit]



=== TEST 5: inside the HDD tail, over a chunk border
--- config
    location /obj/ {
        goblin;
    }
--- request
GET /obj/tiers
--- more_headers
Range: bytes=4194000-4195000
--- error_code: 206
--- response_body eval
main::want(4194000, 4195000)
--- no_error_log
[alert]
[crit]



=== TEST 6: the last bytes, as a suffix range
--- config
    location /obj/ {
        goblin;
    }
--- request
GET /obj/tiers
--- more_headers
Range: bytes=-100
--- error_code: 206
--- response_headers
Content-Range: bytes 8388508-8388607/8388608
--- response_body eval
main::want(8388508, 8388607)
--- no_error_log
[alert]
[crit]



=== TEST 7: from the middle of the SSD prefix to the end
--- config
    location /obj/ {
        goblin;
    }
--- request
GET /obj/tiers
--- more_headers
Range: bytes=700000-
--- error_code: 206
--- response_body eval
main::want(700000, 8388607)
--- timeout: 20
--- no_error_log
[alert]
[crit]



=== TEST 8: If-Range with another ETag: the whole object
--- config
    location /obj/ {
        goblin;
    }
    location = /status {
        goblin_status;
    }
--- request
GET /obj/tiers
--- more_headers
Range: bytes=0-9
If-Range: "not-this-one"
--- error_code: 200
--- response_headers
!Content-Range
Content-Length: 8388608
--- response_body eval
$main::Obj
--- timeout: 20
--- no_error_log
[alert]
[crit]



=== TEST 9: a first-pos of 2^64-1 is past the end: 416
--- config
    location /obj/ {
        goblin;
    }
    location /static/ {
        alias $TEST_NGINX_STATIC_DIR/;
    }
    location = /status {
        goblin_status;
    }
--- request
GET /obj/tiers
--- more_headers
Range: bytes=18446744073709551615-
--- error_code: 416
--- response_headers
Content-Range: bytes */8388608
--- no_error_log
[alert]
[crit]



=== TEST 10: a first-pos of 2^64 (it overflows 64 bits): 416
--- config
    location /obj/ {
        goblin;
    }
    location /static/ {
        alias $TEST_NGINX_STATIC_DIR/;
    }
    location = /status {
        goblin_status;
    }
--- request
GET /obj/tiers
--- more_headers
Range: bytes=18446744073709551616-
--- error_code: 416
--- response_headers
Content-Range: bytes */8388608
--- no_error_log
[alert]
[crit]



=== TEST 11: a first-pos of 2^63, one past int64: 416
--- config
    location /obj/ {
        goblin;
    }
    location /static/ {
        alias $TEST_NGINX_STATIC_DIR/;
    }
    location = /status {
        goblin_status;
    }
--- request
GET /obj/tiers
--- more_headers
Range: bytes=9223372036854775808-
--- error_code: 416
--- response_headers
Content-Range: bytes */8388608
--- no_error_log
[alert]
[crit]



=== TEST 12: 30 digits of first-pos and last-pos: 416
--- config
    location /obj/ {
        goblin;
    }
    location /static/ {
        alias $TEST_NGINX_STATIC_DIR/;
    }
    location = /status {
        goblin_status;
    }
--- request
GET /obj/tiers
--- more_headers
Range: bytes=999999999999999999999999999999-999999999999999999999999999999
--- error_code: 416
--- response_headers
Content-Range: bytes */8388608
--- no_error_log
[alert]
[crit]



=== TEST 13: a last-pos of 2^64-1 is past the end: from first-pos to the end
(RFC 9110; nginx's static module answers 416 to numbers past off_t)
--- config
    location /obj/ {
        goblin;
    }
    location /static/ {
        alias $TEST_NGINX_STATIC_DIR/;
    }
    location = /status {
        goblin_status;
    }
--- request
GET /obj/tiers
--- more_headers
Range: bytes=8388000-18446744073709551615
--- error_code: 206
--- response_headers
Content-Range: bytes 8388000-8388607/8388608
Content-Length: 608
--- response_body eval
main::want(8388000, 8388607)
--- no_error_log
[alert]
[crit]



=== TEST 14: a suffix-length of 2^64: the whole object, as 206
(RFC 9110; nginx's static module answers 416 to numbers past off_t)
--- config
    location /obj/ {
        goblin;
    }
    location /static/ {
        alias $TEST_NGINX_STATIC_DIR/;
    }
    location = /status {
        goblin_status;
    }
--- request
GET /obj/tiers
--- more_headers
Range: bytes=-18446744073709551616
--- error_code: 206
--- response_headers
Content-Range: bytes 0-8388607/8388608
Content-Length: 8388608
--- response_body eval
$main::Obj
--- timeout: 20
--- no_error_log
[alert]
[crit]



=== TEST 15: a suffix-length of 20 nines: the whole object, as 206
--- config
    location /obj/ {
        goblin;
    }
    location /static/ {
        alias $TEST_NGINX_STATIC_DIR/;
    }
    location = /status {
        goblin_status;
    }
--- request
GET /obj/tiers
--- more_headers
Range: bytes=-99999999999999999999
--- error_code: 206
--- response_headers
Content-Range: bytes 0-8388607/8388608
--- response_body eval
$main::Obj
--- timeout: 20
--- no_error_log
[alert]
[crit]



=== TEST 16: 23 digits with leading zeros are a small number
--- config
    location /obj/ {
        goblin;
    }
    location /static/ {
        alias $TEST_NGINX_STATIC_DIR/;
    }
    location = /status {
        goblin_status;
    }
--- request
GET /obj/tiers
--- more_headers
Range: bytes=00000000000000000000001-00000000000000000000009
--- error_code: 206
--- response_headers
Content-Range: bytes 1-9/8388608
--- response_body eval
main::want(1, 9)
--- no_error_log
[alert]
[crit]
