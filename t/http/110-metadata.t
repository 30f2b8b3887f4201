# usage: prove t/http/110-metadata.t
# A PUT keeps its metadata: Content-Type, Content-Encoding,
# Content-Language, Content-Disposition, Cache-Control and Expires come
# back on every GET and HEAD (HTTP/1.1 and HTTP/2), a PUT without them
# falls back to types {}, a new PUT replaces them, headers with control
# characters are not kept, metadata over RING_ATTR_MAX is 413 with nothing
# stored; they survive kill -9 of the daemon.  ETags never repeat: across
# a restart with pools (same store, CAS goes on), across --fresh and
# across a RAM-only restart (a new store identity), and an ETag of the
# old identity no longer matches (If-None-Match, If-Match, If-Range).
# A stored blob is not trusted: attributes written straight through the
# ring (t/lib/linkharness.py) with bad names, control characters, bare LFs,
# headers nginx makes itself or lines that are no header are skipped, a
# malformed blob is 502.  Every body is checked by length and sha256.
BEGIN { push @INC, 't/lib' }
use GoblinTest;
use Test::Nginx::Socket;
use Digest::SHA ();
use JSON::PP ();
use POSIX qw(SIGKILL);

my $have_curl = `curl --version 2>/dev/null` =~ /\bHTTP2\b/;
if (!$have_curl) {
    Test::More::plan(skip_all => 'needs curl with HTTP/2 (make deps)');
}

our $Size = 700000;     # three tx buffers: the attributes lead the first
our $Body = payload($Size, 110);

goblin_start();
goblin_start(name => 'ram', bare => 1);
$ENV{TEST_NGINX_H2_PORT} = GoblinTest::free_port();
goblin_defaults();
goblin_config(<<'END');
    listen 127.0.0.1:$TEST_NGINX_H2_PORT http2;
    large_client_header_buffers 4 16k;
    location /obj/ {
        goblin;
        goblin_methods GET HEAD PUT DELETE;
        client_max_body_size 8m;
    }
    location /ram/ {
        goblin;
        goblin_methods GET HEAD PUT DELETE;
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
plan tests => goblin_plan(39);
no_shuffle();

our %Meta = (
    'content-type'        => 'application/x-goblin-doc; charset=utf-8',
    'content-encoding'    => 'gzip',
    'content-language'    => 'de-CH, en',
    'content-disposition' => 'attachment; filename="a b.txt"',
    'cache-control'       => 'public, max-age=600',
    'expires'             => 'Fri, 01 Jan 2038 00:00:00 GMT',
);
our @MetaHeaders = map { "$_: $Meta{$_}" } sort keys %Meta;

sub sha ($) { Digest::SHA::sha256_hex(shift) }

sub link_state () {
    my ($st, $h, $body) = http_request(server_port(), 'GET', '/status');
    my $j = eval { JSON::PP::decode_json($body) } || {};
    return $j->{link} // '';
}

# Whether headers <h> carry every stored metadata header exactly.
sub meta_ok ($$) {
    my ($h, $what) = @_;
    my @bad = grep { ($h->{$_} // '') ne $Meta{$_} } sort keys %Meta;
    Test::More::diag("$what: $_ is '" . ($h->{$_} // '(none)')
                     . "', want '$Meta{$_}'") for @bad;
    return !@bad;
}

# GET and HEAD of <path> have the metadata and the <body>.  (2 tests)
sub get_has_meta ($$$) {
    my ($path, $body, $what) = @_;
    my ($st, $h, $b) = http_request(server_port(), 'GET', $path);
    ok($st == 200 && meta_ok($h, "GET $what")
       && ($h->{'content-length'} // '') eq length($body)
       && length($b) == length($body) && sha($b) eq sha($body),
       "GET $what: 200, every metadata header, the body ("
       . length($b) . " bytes)");
    my ($hst, $hh, $hb) = http_request(server_port(), 'HEAD', $path);
    ok($hst == 200 && meta_ok($hh, "HEAD $what") && $hb eq ''
       && ($hh->{etag} // '') eq ($h->{etag} // 'x'),
       "HEAD $what: 200, the same metadata and ETag, no body");
    return $h;
}

# ---- the cases, run from the blocks (nginx restarts for each) ----

# A PUT's metadata on GET and HEAD, over HTTP/1.1 and HTTP/2; the stored
# type beats types {}; none stored falls back to it; a new PUT replaces
# them.  (10 tests)
sub put_keeps_metadata () {
    my $port = server_port();
    my ($st, $h) = http_request($port, 'PUT', '/obj/doc.html',
                                headers => \@MetaHeaders, body => $Body);
    is($st, 201, 'PUT with metadata: 201');
    get_has_meta('/obj/doc.html', $Body, 'with metadata');

    my $out = `curl -sS --http2-prior-knowledge -D - -o /dev/null http://127.0.0.1:$ENV{TEST_NGINX_H2_PORT}/obj/doc.html`;
    my %h2 = map { /^([^:]+):\s*(.*?)\r?$/ ? (lc $1 => $2) : () }
             split /\n/, $out;
    ok($out =~ m{^HTTP/2 200} && meta_ok(\%h2, 'HTTP/2 GET'),
       'HTTP/2 GET: every metadata header');

    ($st) = http_request($port, 'PUT', '/obj/doc.html', body => 'plain');
    my ($gst, $gh, $gb) = http_request($port, 'GET', '/obj/doc.html');
    ok($st == 204 && $gb eq 'plain'
       && ($gh->{'content-type'} // '') eq 'text/html'
       && !grep({ exists $gh->{$_} } qw(content-encoding content-language
                                          content-disposition cache-control
                                          expires)),
       'a PUT without metadata replaces it: the type from types {}, '
       . 'no other metadata');

    ($st) = http_request($port, 'PUT', '/obj/doc.html',
                         headers => ['Content-Type: image/png'],
                         body => 'png?');
    ($gst, $gh, $gb) = http_request($port, 'GET', '/obj/doc.html');
    ok($st == 204 && $gb eq 'png?'
       && ($gh->{'content-type'} // '') eq 'image/png',
       'a stored Content-Type beats the extension');

    # one byte, and nothing but metadata for an empty body
    ($st) = http_request($port, 'PUT', '/obj/empty', headers => \@MetaHeaders,
                         body => '');
    is($st, 201, 'an empty body with metadata: 201');
    get_has_meta('/obj/empty', '', 'of an empty body');

    # a header with a control character is not kept (it could not be
    # replayed safely); the others are
    ($st) = http_request($port, 'PUT', '/obj/ctl.txt',
                         headers => ["Content-Language: a\x01b",
                                     'Cache-Control: no-cache'],
                         body => 'ctl');
    ($gst, $gh, $gb) = http_request($port, 'GET', '/obj/ctl.txt');
    ok($st == 201 && $gb eq 'ctl' && !exists $gh->{'content-language'}
       && ($gh->{'cache-control'} // '') eq 'no-cache'
       && ($gh->{'content-type'} // '') eq 'text/plain',
       'a metadata header with a control character is dropped, the rest '
       . 'kept');
}

# Metadata over RING_ATTR_MAX: 413 and nothing stored, an object already
# there left as it was.  (3 tests)
sub metadata_too_big () {
    my $port = server_port();
    my $long = 'Content-Disposition: attachment; filename="' . ('x' x 5000)
               . '"';
    my ($st) = http_request($port, 'PUT', '/obj/huge-meta',
                            headers => [$long], body => 'abc');
    is($st, 413, 'metadata over 4096 bytes: 413');
    ($st) = http_request($port, 'GET', '/obj/huge-meta');
    is($st, 404, 'nothing stored');
    http_request($port, 'PUT', '/obj/kept', body => 'kept');
    http_request($port, 'PUT', '/obj/kept', headers => [$long],
                 body => 'replaced?');
    my ($gst, $gh, $gb) = http_request($port, 'GET', '/obj/kept');
    is($gb, 'kept', 'an object already there is left as it was');
}

# Metadata and bodies survive kill -9 of the daemon; so does the ETag
# (the store's identity is in its pool marker); new PUTs after the restart
# get ETags never seen before.  (6 tests)
sub survives_kill9 () {
    my $port = server_port();
    my %etags;
    my ($st, $h) = http_request($port, 'PUT', '/obj/durable.bin',
                                headers => \@MetaHeaders, body => $Body);
    is($st, 201, 'PUT with metadata');
    my $etag = $h->{etag} // '';
    $etags{$etag}++;
    for my $i (1 .. 5) {
        my ($s, $hh) = http_request($port, 'PUT', '/obj/churn',
                                    body => "churn $i");
        $etags{$hh->{etag} // ''}++;
    }

    goblin_kill(SIGKILL);
    goblin_start();
    ok(wait_for(sub { link_state() eq 'up' }, 20),
       'the worker reattached to the restarted daemon');

    my $gh = get_has_meta('/obj/durable.bin', $Body, 'after kill -9');
    is($gh->{etag}, $etag, 'the same ETag after kill -9');

    my $new = 0;
    for my $i (1 .. 5) {
        my ($s, $hh) = http_request($port, 'PUT', '/obj/churn',
                                    body => "after $i");
        $new++ if $s == 204 && !$etags{$hh->{etag} // ''}++;
    }
    is($new, 5, 'every PUT after the restart has an ETag never seen');
}

# --fresh and a RAM-only restart: a new store identity, so the ETags of
# the same key and content differ and the old ones match nothing.
# (8 tests)
sub new_identity () {
    my $port = server_port();
    my ($st, $h) = http_request($port, 'PUT', '/obj/same', body => 'same');
    my $old = $h->{etag} // '';
    like($old, qr/^"[0-9a-f]{16}-[0-9a-f]+"$/, "the ETag: $old");

    goblin_kill(SIGKILL);
    goblin_start(args => ['--fresh']);
    ok(wait_for(sub { link_state() eq 'up' }, 20), 'reattached after --fresh');
    my ($gst) = http_request($port, 'GET', '/obj/same');
    is($gst, 404, '--fresh emptied the store');
    ($st, $h) = http_request($port, 'PUT', '/obj/same', body => 'same');
    my $new = $h->{etag} // '';
    ok($st == 201 && $new ne $old && substr($new, 0, 17) ne substr($old, 0, 17),
       "the same PUT after --fresh: another store part ($new)");

    my ($c1) = http_request($port, 'GET', '/obj/same',
                            headers => ["If-None-Match: $old"]);
    my ($c2) = http_request($port, 'GET', '/obj/same',
                            headers => ["If-None-Match: $new"]);
    ok($c1 == 200 && $c2 == 304,
       'If-None-Match with the old identity: 200; with the new: 304');
    my ($c3, $h3, $b3) = http_request($port, 'GET', '/obj/same',
                                      headers => ["If-Range: $old",
                                                  'Range: bytes=1-2']);
    ok($c3 == 200 && $b3 eq 'same', 'If-Range with the old identity: all');
    my ($c4) = http_request($port, 'GET', '/obj/same',
                            headers => ["If-Match: $old"]);
    is($c4, 412, 'If-Match with the old identity on GET: 412');

    my $default_id = GoblinTest::goblin_stats()->{store_id} // '';
    ok($default_id ne '' && index($new, $default_id) == 1,
       "the ETag's store part is the store's identity ($default_id)");
}

# A store without pools has a new identity at each start: the same key
# and content get another ETag, the old one matches nothing.  (5 tests)
sub ram_identity () {
    my $port = server_port();
    wait_for(sub { link_state() eq 'up' }, 20);
    my ($st, $h) = http_request($port, 'PUT', '/ram/x', body => 'ram');
    my $old = $h->{etag} // '';
    is($st, 201, "PUT into the RAM-only store: $old");
    goblin_kill(SIGKILL, 'ram');
    goblin_start(name => 'ram', bare => 1);
    ok(wait_for(sub { link_state() eq 'up' }, 20), 'reattached');
    ($st, $h) = http_request($port, 'PUT', '/ram/x', body => 'ram');
    my $new = $h->{etag} // '';
    ok($st == 201 && $new ne $old && substr($new, 0, 17) ne substr($old, 0, 17),
       "the same PUT after the restart: another store part ($new)");
    my ($c1) = http_request($port, 'GET', '/ram/x',
                            headers => ["If-None-Match: $old"]);
    is($c1, 200, 'If-None-Match with the old ETag: 200');
    my ($c2) = http_request($port, 'DELETE', '/ram/x',
                            headers => ["If-Match: $old"]);
    is($c2, 412, 'DELETE If-Match with the old ETag: 412');
}

# Stores <value> under <key> with the attribute bytes <attrs> through the
# ring, as a worker would; the WFINISH's res.
sub ring_put ($$$) {
    my ($key, $value, $attrs) = @_;
    my $py = 'import sys; sys.path.insert(0, "t/lib"); import linkharness; '
           . 'w = linkharness.Worker(sys.argv[1]); '
           . 'c = w.put(sys.argv[2].encode(), bytes.fromhex(sys.argv[3]), '
           . 'attrs=bytes.fromhex(sys.argv[4])); w.close(); print(c["res"])';
    my $out = `/usr/bin/python3 -c '$py' $ENV{TEST_NGINX_GOBLIN_SOCKET} $key @{[ unpack 'H*', $value ]} @{[ unpack 'H*', $attrs ]}`;
    chomp $out;
    return $out;
}

# Blobs nobody checked on the way in.  (5 tests)
sub untrusted_blobs () {
    my $port = server_port();
    my $blob = "GA1 200 1\r\nContent-Type: text/x-ok\r\n"
             . "Set-Cookie\0: a=b\r\nthis is no header\r\n"
             . "X-Bad: a\x01b\r\nX-Split: a\nInjected: yes\r\n"
             . "Content-Length: 99999\r\nTransfer-Encoding: chunked\r\n"
             . "Date: not a date\r\n"
             . "Cache-Control: max-age=1\r\nX-Fine:  padded  \r\n";
    is(ring_put('blob/odd', 'odd body', $blob), '0', 'stored through the ring');
    my ($st, $h, $b) = http_request($port, 'GET', '/obj/blob/odd');
    ok($st == 200 && $b eq 'odd body'
       && ($h->{'content-type'} // '') eq 'text/x-ok'
       && ($h->{'cache-control'} // '') eq 'max-age=1'
       && ($h->{'x-fine'} // '') eq 'padded'
       && ($h->{'content-length'} // '') eq '8'
       && !exists $h->{'transfer-encoding'}
       && ($h->{date} // '') =~ /GMT$/
       && !grep({ exists $h->{$_} } 'set-cookie', 'x-bad', 'x-split',
                'injected', 'this is no header'),
       'GET replays the valid headers only: no control characters, bare '
       . 'LFs, framing, junk lines or a Date that is none');

    ring_put('blob/nomagic', 'x', "HTTP/1.1 200 OK\r\nX-A: b\r\n");
    ($st) = http_request($port, 'GET', '/obj/blob/nomagic');
    is($st, 502, 'a blob that is not GA1: 502');
    ring_put('blob/cut', 'x', "GA1 200 1\r\nContent-Type: text/plain");
    ($st) = http_request($port, 'GET', '/obj/blob/cut');
    is($st, 502, 'a blob cut short (no CRLF at its end): 502');
    ring_put('blob/status', 'x', "GA1 20x 1\r\n");
    ($st) = http_request($port, 'GET', '/obj/blob/status');
    is($st, 502, 'a blob with a bad status: 502');
}

run_tests();
goblin_stop('ram');
goblin_stop();

__DATA__

=== TEST 1: a PUT keeps its metadata, GET and HEAD return it
--- init
main::put_keeps_metadata();



=== TEST 2: metadata over the limit: 413, nothing stored
--- init
main::metadata_too_big();



=== TEST 3: metadata and ETags survive kill -9
--- init
main::survives_kill9();



=== TEST 4: --fresh: a new identity, old ETags match nothing
--- init
main::new_identity();



=== TEST 5: stored blobs are not trusted
--- init
main::untrusted_blobs();



=== TEST 6: a RAM-only store: a new identity at each start
--- http_config
    goblin_storaged unix:$TEST_NGINX_GOBLIN_SOCKET_RAM;
--- init
main::ram_identity();
