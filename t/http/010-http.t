# usage: prove t/http/010-http.t
# HTTP semantics of ngx_http_goblin_module against a real goblin-store:
# every status code (200 201 204 206 304 400 404 405 413 414 416 503 507),
# the headers, goblin_key, goblin_methods, goblin_status.
BEGIN { push @INC, 't/lib' }
use GoblinTest;
use Test::Nginx::Socket;

goblin_start();
# RAM-only and no-evict: a third 3 MiB object does not fit
goblin_start(name => 'full', bare => 1,
             args => ['--no-evict', '--memory', '8M', '--sub-memory', '4M']);
# --numa on the simulated four-node topology: numa_* in goblin_status
{
    local $ENV{GOBLIN_TEST_NUMA} = '10 20 30 20';
    goblin_start(name => 'numa', hooks => 1, args => ['--numa', '0']);
}
goblin_defaults();

$ENV{TEST_NGINX_NO_SUCH_SOCKET} = "/var/tmp/goblin-ngx-no-such-$$.sock";

repeat_each(1);
plan tests => goblin_plan(7);
no_shuffle();
run_tests();

# If-None-Match with the real ETag (it comes from the CAS), on the nginx of
# the last block
my ($st, $h, $body) = http_request(server_port(), 'GET', '/obj/page.html');
my $etag = $h->{etag} // '';
($st) = http_request(server_port(), 'GET', '/obj/page.html',
                     headers => ["If-None-Match: $etag"]);
is($st, 304, 'If-None-Match with the ETag: 304');
($st) = http_request(server_port(), 'GET', '/obj/page.html',
                     headers => ["If-None-Match: \"0\", W/$etag"]);
is($st, 304, 'a list with the weak ETag: 304');
($st, $h) = http_request(server_port(), 'GET', '/obj/page.html',
                         headers => ["If-None-Match: \"nope\""]);
is($st, 200, 'another ETag: 200');
is($h->{etag}, $etag, 'the ETag is stable');

goblin_stop('full');
goblin_stop('numa');
goblin_stop();

__DATA__

=== TEST 1: a missing object is 404
--- config
    location /obj/ {
        goblin;
        goblin_methods GET HEAD PUT DELETE;
    }
--- request
GET /obj/nothing-here
--- error_code: 404
--- no_error_log
[alert]
[crit]



=== TEST 2: PUT creates (201), PUT again replaces (204), GET has the last
--- config
    location /obj/ {
        goblin;
        goblin_methods GET HEAD PUT DELETE;
    }
--- request eval
["PUT /obj/hello.txt\nhello, goblin",
 "PUT /obj/hello.txt\nhello again, goblin",
 "GET /obj/hello.txt"]
--- error_code eval
[201, 204, 200]
--- response_body eval
["", "", "hello again, goblin"]
--- no_error_log
[alert]
[crit]



=== TEST 3: Content-Type from the key's extension, length, ranges offered
--- init
GoblinTest::mc_set('page.html', '<p>goblin</p>') eq 'STORED' or die;
--- config
    location /obj/ {
        goblin;
    }
--- request
GET /obj/page.html
--- response_headers
Content-Type: text/html
Content-Length: 13
Accept-Ranges: bytes
--- response_body chomp
<p>goblin</p>
--- no_error_log
[alert]
[crit]



=== TEST 4: the location's types and default_type apply
--- init
GoblinTest::mc_set('data.json', '{"a":1}') eq 'STORED' or die;
GoblinTest::mc_set('blob', 'xyz') eq 'STORED' or die;
--- config
    location /obj/ {
        goblin;
        types { application/json json; }
        default_type application/x-goblin;
    }
--- request eval
["GET /obj/data.json", "GET /obj/blob"]
--- response_headers eval
["Content-Type: application/json", "Content-Type: application/x-goblin"]
--- response_body eval
['{"a":1}', "xyz"]



=== TEST 4b: limit_except guards the writes; what it lets through is served
--- config
    location /obj/ {
        goblin;
        goblin_methods GET HEAD PUT DELETE;
        limit_except GET HEAD {
            allow 127.0.0.1;
            deny all;
        }
    }
    location /ro/ {
        goblin;
        goblin_methods GET HEAD PUT DELETE;
        limit_except GET HEAD {
            deny all;
        }
    }
--- request eval
["PUT /obj/guarded\nallowed from here",
 "GET /obj/guarded",
 "PUT /ro/guarded\nnot from anywhere",
 "DELETE /ro/guarded",
 "DELETE /obj/guarded",
 "GET /obj/guarded"]
--- error_code eval
[201, 200, 403, 403, 204, 404]
--- no_error_log
[alert]
[crit]



=== TEST 5: ETag from the CAS, Last-Modified from the store time
--- config
    location /obj/ {
        goblin;
    }
--- request
GET /obj/page.html
--- response_headers_like
ETag: "[0-9a-f]{16}-[0-9a-f]+"
Last-Modified: \w{3}, \d\d \w{3} \d{4} \d\d:\d\d:\d\d GMT
--- no_error_log
[alert]
[crit]



=== TEST 6: If-None-Match: * is 304, no body
--- config
    location /obj/ {
        goblin;
    }
--- request
GET /obj/page.html
--- more_headers
If-None-Match: *
--- error_code: 304
--- response_body chomp



=== TEST 7: HEAD: the headers of a GET and no body
--- config
    location /obj/ {
        goblin;
    }
--- request
HEAD /obj/page.html
--- response_headers
Content-Length: 13
Content-Type: text/html
--- response_body chomp
--- no_error_log
[alert]
[crit]



=== TEST 8: DELETE is 204, then 404, and the object is gone
--- init
GoblinTest::mc_set('doomed', 'bye') eq 'STORED' or die;
--- config
    location /obj/ {
        goblin;
        goblin_methods GET DELETE;
    }
--- request eval
["DELETE /obj/doomed", "DELETE /obj/doomed", "GET /obj/doomed"]
--- error_code eval
[204, 404, 404]
--- no_error_log
[alert]
[crit]



=== TEST 9: methods outside goblin_methods are 405 with an Allow header
--- config
    location /obj/ {
        goblin;
        goblin_methods GET HEAD PUT;
    }
    location /ro/ {
        goblin;
    }
--- request eval
["POST /obj/x\nbody", "PUT /ro/x\nbody", "DELETE /obj/x"]
--- error_code eval
[405, 405, 405]
--- response_headers eval
["Allow: GET, HEAD, PUT", "Allow: GET, HEAD", "Allow: GET, HEAD, PUT"]



=== TEST 10: a PUT over goblin_max_object is 413
--- config
    location /obj/ {
        goblin;
        goblin_methods GET PUT;
        goblin_max_object 100;
    }
--- request eval
"PUT /obj/toobig\n" . ("x" x 101)
--- error_code: 413
--- error_log
over goblin_max_object 100



=== TEST 11: ... and stores nothing; a PUT at goblin_max_object is fine
--- config
    location /obj/ {
        goblin;
        goblin_methods GET PUT;
        goblin_max_object 100;
    }
--- request eval
["GET /obj/toobig", "PUT /obj/justfits\n" . ("y" x 100)]
--- error_code eval
[404, 201]



=== TEST 12: a chunked PUT is stored (no 411): its size is known once it is all in
--- config
    location /obj/ {
        goblin;
        goblin_methods GET HEAD PUT DELETE;
    }
--- raw_request eval
["PUT /obj/chunked HTTP/1.1\r
Host: localhost\r
Connection: close\r
Transfer-Encoding: chunked\r
\r
5\r
hello\r
7\r
, again\r
0\r
\r
", "GET /obj/chunked HTTP/1.1\r
Host: localhost\r
Connection: close\r
\r
"]
--- error_code eval
[201, 200]
--- response_body eval
["", "hello, again"]



=== TEST 13: keys: percent-decoded (a%20b is a key), none empty, with a control character (400) or over 250 bytes (414)
--- config
    location /obj/ {
        goblin;
    }
--- request eval
["GET /obj/a%20b", "GET /obj/", "GET /obj/" . ("k" x 251),
 "GET /obj/" . ("k" x 250), "GET /obj/a%0d%0ab", "GET /obj/a%01b"]
--- error_code eval
[404, 400, 414, 404, 400, 400]
--- no_error_log
[alert]
[crit]



=== TEST 13a: a key over 250 bytes: 414, and the log says why
--- config
    location /obj/ {
        goblin;
    }
--- request eval
"GET /obj/" . ("k" x 251)
--- error_code: 414
--- error_log
a key of 251 bytes, over the 250



=== TEST 13b: a key with CR LF: 400, and the log says which byte
--- config
    location /obj/ {
        goblin;
    }
--- request
GET /obj/ab%0d%0a
--- error_code: 400
--- error_log
control character (0x0d) at byte 2



=== TEST 14: goblin_key picks the key from variables
--- init
GoblinTest::mc_set('fixed-7', 'seven') eq 'STORED' or die;
--- config
    location = /k {
        goblin;
        goblin_key "fixed-$arg_id";
    }
--- request eval
["GET /k?id=7", "GET /k?id=8"]
--- error_code eval
[200, 404]
--- response_body_like eval
["^seven\$", "404 Not Found"]



=== TEST 15: single ranges are 206, unsatisfiable ones 416, several 200
--- config
    location /obj/ {
        goblin;
    }
--- request eval
["GET /obj/page.html", "GET /obj/page.html", "GET /obj/page.html",
 "GET /obj/page.html", "GET /obj/page.html", "GET /obj/page.html"]
--- more_headers eval
["Range: bytes=3-8", "Range: bytes=-4", "Range: bytes=10-",
 "Range: bytes=13-", "Range: bytes=0-1,5-6", "Range: bytes=5-3"]
--- error_code eval
[206, 206, 206, 416, 200, 200]
--- response_headers eval
["Content-Range: bytes 3-8/13", "Content-Range: bytes 9-12/13",
 "Content-Range: bytes 10-12/13", "Content-Range: bytes */13",
 "!Content-Range", "!Content-Range"]
--- response_body eval
["goblin", "</p>", "/p>", "", "<p>goblin</p>", "<p>goblin</p>"]



=== TEST 16: storaged unreachable: 503 until it is there
--- http_config
    goblin_storaged unix:$TEST_NGINX_NO_SUCH_SOCKET;
--- config
    location /obj/ {
        goblin;
    }
--- request
GET /obj/page.html
--- error_code: 503
--- error_log
unreachable
--- no_error_log
[alert]
[crit]



=== TEST 17: goblin_status without storaged: 503, its own counters only
--- http_config
    goblin_storaged unix:$TEST_NGINX_NO_SUCH_SOCKET;
--- config
    location = /status {
        goblin_status;
    }
--- request
GET /status
--- error_code: 503
--- response_body_like chomp
"link": "down",.*"storaged": null
--- no_error_log
[alert]
[crit]



=== TEST 18: no room in a no-evict store: 507
--- http_config
    goblin_storaged unix:$TEST_NGINX_GOBLIN_SOCKET_FULL;
--- config
    location /obj/ {
        goblin;
        goblin_methods GET PUT;
        client_max_body_size 8m;
    }
--- request eval
["PUT /obj/f1\n" . ("a" x 3145728), "PUT /obj/f2\n" . ("b" x 3145728),
 "PUT /obj/f3\n" . ("c" x 3145728), "GET /obj/f3"]
--- error_code eval
[201, 201, 507, 404]
--- timeout: 10
--- no_error_log
[alert]
[crit]



=== TEST 19: goblin_status with --numa: the engine's numa_* counters
--- http_config
    goblin_storaged unix:$TEST_NGINX_GOBLIN_SOCKET_NUMA;
--- config
    location = /status {
        goblin_status;
    }
--- request
GET /status
--- response_body_like chomp
"storaged": \{.*"numa_nodes": 4,.*"numa_region0_node": 0,.*"numa_promotions": \d+,.*"numa_promotion_bytes": \d+,.*"numa_node3_hits": \d+
--- no_error_log
[alert]
[crit]



=== TEST 20: goblin_status: the daemon's (the arena's too) and the module's counters, JSON
--- config
    location = /status {
        goblin_status;
    }
    location /obj/ {
        goblin;
    }
--- request
GET /status
--- response_headers
Content-Type: application/json
--- response_body_like chomp
"link": "up",.*"module": \{.*"requests": \d+,.*"storaged": \{.*"curr_items": \d+,.*"arena_segments": \d+,.*"arena_bytes_live": \d+,.*"ring_connections": \d+
--- no_error_log
[alert]
[crit]
