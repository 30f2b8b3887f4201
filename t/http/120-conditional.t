# usage: prove t/http/120-conditional.t
# Conditional writes: PUT and DELETE with If-Match (one ETag, a list, *),
# If-None-Match (* for create-only, or ETags) and If-Unmodified-Since are
# 412 when they fail and leave the object as it was; an ETag of another
# store identity never matches.  They are atomic: six create-only PUTs
# (and two compare-and-swap PUTs) racing, every one past its checks
# before any finishes, store exactly one (the daemon decides at WFINISH,
# RING_IF_ABSENT / RING_IF_CAS).  Over HTTP/1.1 and HTTP/2.  Every body
# read back is checked.
BEGIN { push @INC, 't/lib' }
use GoblinTest;
use Test::Nginx::Socket;
use Digest::SHA ();
use IO::Select;
use IO::Socket::INET;
use JSON::PP ();
use POSIX qw(strftime);

my $have_curl = `curl --version 2>/dev/null` =~ /\bHTTP2\b/;
if (!$have_curl) {
    Test::More::plan(skip_all => 'needs curl with HTTP/2 (make deps)');
}

goblin_start();
$ENV{TEST_NGINX_H2_PORT} = GoblinTest::free_port();
goblin_defaults();
goblin_config(<<'END');
    listen 127.0.0.1:$TEST_NGINX_H2_PORT http2;
    location /obj/ {
        goblin;
        goblin_methods GET HEAD PUT DELETE;
        client_max_body_size 8m;
    }
    location = /status {
        goblin_status;
    }
END
goblin_case_checks(request => 'GET /status', error_code => 200,
                   response_body_like => '"link": "up"',
                   no_error_log => "[alert]\n[crit]\n");

master_on();
workers(1);
repeat_each(1);
plan tests => goblin_plan(31);
no_shuffle();

sub sha ($) { Digest::SHA::sha256_hex(shift) }

sub req ($$;@) {
    my ($method, $path, @o) = @_;
    return http_request(server_port(), $method, $path, @o);
}

sub body_of ($) {
    my ($st, $h, $b) = req('GET', shift);
    return $st == 200 ? $b : "status $st";
}

sub etag_of ($) {
    my ($st, $h) = req('HEAD', shift);
    return $h->{etag} // '';
}

# The same ETag in another store identity (its first hex digit flipped).
sub other_store ($) {
    my $e = shift;
    substr($e, 1, 1) = substr($e, 1, 1) eq '0' ? '1' : '0';
    return $e;
}

sub status () {
    my ($st, $h, $body) = req('GET', '/status');
    return eval { JSON::PP::decode_json($body) } || {};
}

# ---- the cases, run from the blocks (nginx restarts for each) ----

# PUT: create-only, compare-and-swap, lists, another store's ETag,
# If-Unmodified-Since.  (14 tests)
sub conditional_puts () {
    my ($st, $h) = req('PUT', '/obj/a', headers => ['If-None-Match: *'],
                       body => 'first');
    is($st, 201, 'If-None-Match: * on no object: created');
    my $e1 = $h->{etag};
    ($st) = req('PUT', '/obj/a', headers => ['If-None-Match: *'],
                body => 'second');
    ok($st == 412 && body_of('/obj/a') eq 'first',
       'If-None-Match: * on an object: 412, the object as it was');

    ($st, $h) = req('PUT', '/obj/a', headers => ["If-Match: $e1"],
                    body => 'swapped');
    my $e2 = $h->{etag} // '';
    ok($st == 204 && $e2 ne $e1 && body_of('/obj/a') eq 'swapped',
       'If-Match with its ETag: replaced, a new ETag');
    ($st) = req('PUT', '/obj/a', headers => ["If-Match: $e1"], body => 'x');
    ok($st == 412 && body_of('/obj/a') eq 'swapped',
       'If-Match with the ETag it had before: 412, unchanged');
    ($st) = req('PUT', '/obj/a', headers => ['If-Match: ' . other_store($e2)],
                body => 'x');
    ok($st == 412 && body_of('/obj/a') eq 'swapped',
       'If-Match with its CAS in another store identity: 412');
    ($st) = req('PUT', '/obj/a', headers => ["If-Match: W/$e2"],
                body => 'x');
    is($st, 412, 'If-Match with its ETag as a weak one: 412 (strong '
       . 'comparison)');
    ($st, $h) = req('PUT', '/obj/a',
                    headers => ['If-Match: "nope", ' . other_store($e2)
                                . ", $e2"],
                    body => 'listed');
    my $e3 = $h->{etag} // '';
    ok($st == 204 && body_of('/obj/a') eq 'listed',
       'If-Match with a list holding its ETag: replaced');

    ($st) = req('PUT', '/obj/none', headers => ['If-Match: *'], body => 'x');
    my ($gst) = req('GET', '/obj/none');
    ok($st == 412 && $gst == 404, 'If-Match: * on no object: 412, nothing '
       . 'stored');
    ($st) = req('PUT', '/obj/a', headers => ['If-Match: *'], body => 'star');
    ok($st == 204 && body_of('/obj/a') eq 'star',
       'If-Match: * on an object: replaced');

    my $e4 = etag_of('/obj/a');
    ($st) = req('PUT', '/obj/a', headers => ["If-None-Match: \"x\", $e4"],
                body => 'x');
    ok($st == 412 && body_of('/obj/a') eq 'star',
       'If-None-Match with a list holding its ETag: 412');
    ($st) = req('PUT', '/obj/a', headers => ["If-None-Match: $e1"],
                body => 'inm');
    ok($st == 204 && body_of('/obj/a') eq 'inm',
       'If-None-Match with another ETag: replaced');

    my $past = strftime('%a, %d %b %Y %H:%M:%S GMT', gmtime(time - 3600));
    my $future = strftime('%a, %d %b %Y %H:%M:%S GMT', gmtime(time + 3600));
    ($st) = req('PUT', '/obj/a', headers => ["If-Unmodified-Since: $past"],
                body => 'x');
    ok($st == 412 && body_of('/obj/a') eq 'inm',
       'If-Unmodified-Since before it was stored: 412');
    ($st) = req('PUT', '/obj/a',
                headers => ["If-Unmodified-Since: $future"], body => 'ius');
    ok($st == 204 && body_of('/obj/a') eq 'ius',
       'If-Unmodified-Since after it was stored: replaced');
    ($st) = req('PUT', '/obj/new-ius',
                headers => ["If-Unmodified-Since: $past"], body => 'new');
    ok($st == 201 && body_of('/obj/new-ius') eq 'new',
       'If-Unmodified-Since on no object: ignored, created');
}

# DELETE by CAS and the other conditions.  (8 tests)
sub conditional_deletes () {
    my ($st, $h) = req('PUT', '/obj/d', body => 'delete me');
    my $e1 = $h->{etag};
    ($st, $h) = req('PUT', '/obj/d', body => 'delete me too');
    my $e2 = $h->{etag};

    ($st) = req('DELETE', '/obj/d', headers => ["If-Match: $e1"]);
    ok($st == 412 && body_of('/obj/d') eq 'delete me too',
       'DELETE If-Match with an old ETag: 412, still there');
    ($st) = req('DELETE', '/obj/d', headers => ['If-Match: ' . other_store($e2)]);
    ok($st == 412 && body_of('/obj/d') eq 'delete me too',
       'DELETE If-Match with another store identity: 412');
    ($st) = req('DELETE', '/obj/d', headers => ['If-None-Match: *']);
    is($st, 412, 'DELETE If-None-Match: * on an object: 412');
    my $past = strftime('%a, %d %b %Y %H:%M:%S GMT', gmtime(time - 3600));
    ($st) = req('DELETE', '/obj/d', headers => ["If-Unmodified-Since: $past"]);
    ok($st == 412 && body_of('/obj/d') eq 'delete me too',
       'DELETE If-Unmodified-Since before it was stored: 412');
    ($st) = req('DELETE', '/obj/d', headers => ["If-None-Match: $e1"]);
    my ($gst) = req('GET', '/obj/d');
    ok($st == 204 && $gst == 404,
       'DELETE If-None-Match with another ETag: deleted (by its CAS)');

    req('PUT', '/obj/d', body => 'again');
    my $e3 = etag_of('/obj/d');
    ($st) = req('DELETE', '/obj/d', headers => ["If-Match: $e3"]);
    ($gst) = req('GET', '/obj/d');
    ok($st == 204 && $gst == 404, 'DELETE If-Match with its ETag: deleted');
    ($st) = req('DELETE', '/obj/d', headers => ['If-Match: *']);
    is($st, 412, 'DELETE If-Match: * on no object: 412');
    ($st) = req('DELETE', '/obj/d', headers => ['If-None-Match: *']);
    is($st, 404, 'DELETE If-None-Match: * on no object: 404');
}

# Opens a PUT of <path> with <headers> and the first <first> bytes of
# <body>; returns the socket, the rest to send later.
sub put_start ($$$$) {
    my ($path, $headers, $body, $first) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                  PeerPort => server_port(),
                                  Timeout => 10) or die "connect: $!\n";
    $s->autoflush(1);
    print $s "PUT $path HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
             . join('', map { "$_\r\n" } @$headers)
             . 'Content-Length: ' . length($body) . "\r\n\r\n"
             . substr($body, 0, $first);
    return [$s, substr($body, $first)];
}

sub put_end ($) {
    my $p = shift;
    my ($s, $rest) = @$p;
    print $s $rest;
    my $buf = '';
    my $sel = IO::Select->new($s);
    while ($sel->can_read(30)) {
        last unless sysread $s, $buf, 65536, length $buf;
    }
    close $s;
    return $buf =~ m{^HTTP/1\.1 (\d+)} ? $1 : 0;
}

# Racing writers: each is past its preconditions and holds its writer
# (tx_held) before any sends the rest of its body.  (5 tests)
sub races () {
    my $n = 6;
    my @bodies = map { payload(400000, 1200 + $_) } 1 .. $n;
    my @p = map { put_start('/obj/race', ['If-None-Match: *'], $bodies[$_],
                            300000) } 0 .. $n - 1;
    ok(wait_for(sub { (status()->{module}{tx_held} // 0) == $n }, 20),
       "$n create-only PUTs hold their writers at once");
    my @st = map { put_end($_) } @p;
    my @won = grep { $st[$_] == 201 } 0 .. $n - 1;
    my $lost = grep { $_ == 412 } @st;
    ok(@won == 1 && $lost == $n - 1,
       "exactly one created, the others 412 (@st)");
    my $got = body_of('/obj/race');
    ok(@won == 1 && length($got) == 400000 && sha($got) eq sha($bodies[$won[0]]),
       "the stored body is the winner's");

    my $e = etag_of('/obj/race');
    @p = map { put_start('/obj/race', ["If-Match: $e"], $bodies[$_], 300000) }
         0 .. 1;
    ok(wait_for(sub { (status()->{module}{tx_held} // 0) == 2 }, 20),
       'two compare-and-swap PUTs hold their writers at once');
    @st = map { put_end($_) } @p;
    @won = grep { $st[$_] == 204 } 0 .. 1;
    $got = body_of('/obj/race');
    ok(@won == 1 && (grep { $_ == 412 } @st) == 1
       && sha($got) eq sha($bodies[$won[0]]),
       "exactly one swapped (@st), its body stored");
}

# Over HTTP/2.  (3 tests)
sub over_http2 () {
    my $url = "http://127.0.0.1:$ENV{TEST_NGINX_H2_PORT}/obj/h2";
    my $curl = 'curl -sS --http2-prior-knowledge -o /dev/null '
               . "-w '%{http_code} %{http_version}'";
    my $r1 = `$curl -X PUT -H 'If-None-Match: *' --data-binary h2body $url`;
    my $r2 = `$curl -X PUT -H 'If-None-Match: *' --data-binary other $url`;
    ok($r1 eq '201 2' && $r2 eq '412 2', "HTTP/2 create-only PUT: $r1, $r2");
    is(body_of('/obj/h2'), 'h2body', 'the first body stayed');
    my $e = etag_of('/obj/h2');
    my $r3 = `$curl -X DELETE -H 'If-Match: $e' $url`;
    my ($gst) = req('GET', '/obj/h2');
    ok($r3 eq '204 2' && $gst == 404, "HTTP/2 DELETE by ETag: $r3");
}

run_tests();
goblin_stop();

__DATA__

=== TEST 1: conditional PUTs
--- init
main::conditional_puts();



=== TEST 2: conditional DELETEs
--- init
main::conditional_deletes();



=== TEST 3: racing conditional writers: exactly one wins
--- init
main::races();



=== TEST 4: conditional writes over HTTP/2
--- init
main::over_http2();
