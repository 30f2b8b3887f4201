# usage: prove t/http/000-harness.t
# Checks the Test::Nginx::Socket harness itself with stock nginx directives
# only (return, add_header, proxy_pass, sub_filter, the stream module).
BEGIN { push @INC, 't/lib' }
use Test::Nginx::Socket;

$ENV{TEST_NGINX_GREETING} = 'hello from env';
$ENV{TEST_NGINX_STREAM_MODULE} = '/usr/lib/nginx/modules/ngx_stream_module.so';

repeat_each(2);
plan tests => repeat_each() * 36;
no_shuffle();
run_tests();

__DATA__

=== TEST 1: response body, status and headers
--- config
    location = /t {
        add_header X-Goblin green;
        return 200 "hello\n";
    }
--- request
GET /t
--- response_body
hello
--- response_headers
X-Goblin: green
Content-Length: 6
!X-Absent
--- error_code: 200
--- no_error_log
[alert]
[crit]



=== TEST 2: error code and an error log line
--- config
    location /missing {
        root html;
    }
--- request
GET /missing/nothing.txt
--- error_code: 404
--- response_body_like: 404 Not Found
--- error_log
No such file or directory



=== TEST 3: more_headers reach the server; response_headers_like
--- config
    location = /h {
        return 200 "[$http_x_one][$http_x_two]";
    }
--- more_headers
X-One: 1
# a comment line is skipped
X-Two: two words
--- request
GET /h
--- response_headers_like
Content-Type: text/pl\w+
--- response_body chomp
[1][two words]



=== TEST 4: a PUT with a multi-line body: trimmed, Content-Length added
--- config
    location = /put {
        proxy_pass http://127.0.0.1:$TEST_NGINX_SERVER_PORT/echo;
        proxy_set_header X-Len $content_length;
    }
    location = /echo {
        return 200 "$request_method $http_x_len";
    }
--- request
PUT /put
line one
line two

--- response_body chomp
PUT 17



=== TEST 5: HEAD has headers and no body
--- config
    location = /t {
        return 200 "twelve bytes";
    }
--- request
HEAD /t
--- response_headers
Content-Length: 12
--- response_body chomp



=== TEST 6: a redirect with $ServerPort
--- no_http2
--- config
    location = /r {
        return 302 /elsewhere;
    }
--- request
GET /r
--- error_code: 302
--- response_headers
Location: http://localhost:$ServerPort/elsewhere



=== TEST 7: several requests in one block
--- config
    location = /a { return 200 "a"; }
    location = /b { return 403; }
--- request eval
["GET /a", "GET /b"]
--- error_code eval
[200, 403]
--- response_body_like eval
["^a\$", "403 Forbidden"]



=== TEST 8: raw_request goes out as written
--- config
    location = /raw {
        return 200 "$request_method $server_protocol $http_x_raw";
    }
--- raw_request eval
"GET /raw HTTP/1.0\r\nX-Raw: yes\r\n\r\n"
--- response_body chomp
GET HTTP/1.0 yes



=== TEST 9: $TEST_NGINX_ variables are expanded in configs
--- config
    location = /env {
        return 200 "$TEST_NGINX_GREETING";
    }
--- request
GET /env
--- response_body chomp
hello from env



=== TEST 10: main_config loads a module, post_main_config uses it
--- main_config
    load_module $TEST_NGINX_STREAM_MODULE;
--- post_main_config
    stream {
        server {
            listen 127.0.0.1:$TEST_NGINX_RAND_PORT_1;
            return "HTTP/1.0 200 OK\r\nContent-Length: 6\r\n\r\nstream";
        }
    }
--- config
    location = /s {
        proxy_pass http://127.0.0.1:$TEST_NGINX_RAND_PORT_1;
    }
--- request
GET /s
--- response_body chomp
stream



=== TEST 11: a chunked response is decoded
--- no_http2
--- config
    location = /c {
        sub_filter_types *;
        sub_filter_once off;
        sub_filter a b;
        return 200 "aaa";
    }
--- request
GET /c
--- response_headers
Transfer-Encoding: chunked
--- response_body chomp
bbb



=== TEST 12: http_config goes into http {}
--- http_config
    map $uri $mapped {
        default none;
        /m      yes;
    }
--- config
    location = /m {
        return 200 "$mapped";
    }
--- request
GET /m
--- response_body chomp
yes



=== TEST 13: a request that never ends is cut at --- timeout with --- abort
--- config
    location = /slow {
        limit_rate 1;
        return 200 "0123456789";
    }
--- request
GET /slow
--- timeout: 0.3
--- abort
--- ignore_response
--- no_error_log
[alert]
