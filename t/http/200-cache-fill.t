# usage: prove t/http/200-cache-fill.t
# Cache mode (goblin_cache on, goblin_origin @fill) against the test
# origin t/lib/origin.py: a miss is filled once and then hit, with the
# origin's headers; 64 concurrent misses (and 16 HTTP/2 streams) make one
# origin request and every body is the origin's, byte for byte; a waiter
# has its first byte long before the fill completes; a client at 256 KB/s
# does not slow a fast one; a first client that goes away leaves the fill
# going (goblin_cache_abandon off) or abandons it (below 10% by default);
# an origin cut at 50% leaves no complete-looking body and nothing stored;
# a chunked origin is stored; responses the cache must not store, other
# methods (which invalidate their key and what their Location and
# Content-Location name on this host) and a cold HEAD go to the origin; a
# key whose response said it is not to be stored goes to the origin
# without a fill for goblin_cache_pass, unless the request or a 5xx was
# why; a fill's answer not stored goes to the request that started it (one
# origin request, not two).
BEGIN { push @INC, 't/lib' }
use GoblinTest;
use CacheTest;
use Test::Nginx::Socket;
use Time::HiRes qw(sleep time);

cache_start();
goblin_case_checks(request => 'GET /status', error_code => 200,
                   no_error_log => "[alert]\n[crit]\n");

worker_connections(1024);
repeat_each(1);
plan tests => goblin_plan(55);
no_shuffle();
run_tests();

sub start () { GoblinTest::wait_attached() or die "workers did not attach\n" }

sub all_whole ($$@) {
    my ($path, $size, @r) = @_;
    my $sha = origin_sha($path);
    my $n = grep { $_->{code} == 200 && $_->{size} == $size
                   && ($_->{sha} // '') eq $sha } @r;
    for my $r (grep { ($_->{sha} // '') ne $sha || $_->{code} != 200 } @r) {
        diag(join ' ', map { "$_=" . ($r->{$_} // '') }
                       grep { $_ ne 'head' } sort keys %$r);
    }
    return $n;
}

# ---- the cases ----

# a miss, then a hit with the origin's headers (5 tests)
sub miss_then_hit () {
    start();
    my $p = '/o/a1-300k';
    my $r = fetch($p);
    is(all_whole($p, 307200, $r), 1, 'a miss: the origin\'s body');
    is($r->{xcache}, 'MISS', 'X-Cache: MISS');
    ok(wait_until(sub { stored('a1-300k') }, 10), 'then stored');
    my $h = fetch($p);
    ok(all_whole($p, 307200, $h) && $h->{xcache} eq 'HIT'
       && $h->{head} =~ m{^Content-Type: application/x-goblin-test}mi
       && $h->{head} =~ /^ETag: "[0-9a-f]{16}"/mi
       && $h->{head} =~ /^Last-Modified: Tue, 01 Dec 2026/mi,
       'a hit: the same body, the origin\'s type, ETag, Last-Modified')
        or diag($h->{head});
    is(origin_count($p), 1, 'one origin request for both');
}

# 64 misses at once over HTTP/1.1, then 16 HTTP/2 streams (6 tests)
sub concurrent () {
    start();
    my $p = '/o/m64-2m-rate16m';
    my @r = fetch_many(64, $p);
    is(scalar @r, 64, '64 concurrent misses');
    is(all_whole($p, 2097152, @r), 64, 'every body whole, sha256 checked');
    is(origin_count($p), 1, 'one origin request');

    $p = '/o/h2-1m-rate8m';
    @r = fetch_many(16, $p, h2 => 1);
    is(all_whole($p, 1048576, @r), 16, '16 HTTP/2 misses, every body whole');
    ok(!grep({ ($_->{version} // '') ne '2' } @r), 'over HTTP/2');
    is(origin_count($p), 1, 'one origin request');
}

# a waiter's first byte long before the 2 s fill completes (4 tests)
sub first_byte () {
    start();
    my $p = '/o/fb-1m-rate512k';
    my $t0 = time;
    my $first = fetch_later($p);
    ok(wait_until(sub { origin_count($p) >= 1 }, 10), 'the fill started');
    my $r = fetch($p);
    my $a = $first->();
    my $filled = time - $t0;
    ok($r->{ttfb} < 1.0 && $filled > 1.5,
       sprintf('the waiter\'s first byte at %.2fs, the fill took %.2fs',
               $r->{ttfb}, $filled));
    is(all_whole($p, 1048576, $r, $a), 2, 'both bodies whole');
    is(origin_count($p), 1, 'one origin request');
}

# a first client at 256 KB/s does not slow a second, fast one (4 tests)
sub slow_first () {
    start();
    my $p = '/o/sl-1m-rate8m';
    my $slow = fetch_slow($p, 262144);
    ok(wait_until(sub { origin_count($p) >= 1 }, 10), 'the fill started');
    my $t0 = time;
    my $r = fetch($p);
    my $fast = time - $t0;
    my $s = $slow->();
    ok($fast < 1.0 && $fast * 2 < $s->{total},
       sprintf('the fast client took %.2fs, the slow one %.2fs', $fast,
               $s->{total}));
    is(all_whole($p, 1048576, $r, $s), 2, 'both bodies whole');
    is(origin_count($p), 1, 'one origin request');
}

# the first client goes away at 0.2 s of a 0.5 s fill: with
# goblin_cache_abandon off the fill completes; with the default 10% and
# the client gone before 10% arrived, it is abandoned (5 tests)
sub client_gone () {
    start();
    my $p = '/off/g1-2m-rate4m';
    fetch($p, timeout => 0.2);
    ok(wait_until(sub { stored($p) }, 10), 'the fill completed without '
       . 'its client');
    is(Digest::SHA::sha256_hex(GoblinTest::mc_get($p) // ''),
       origin_sha($p), 'every byte stored');
    is(origin_count($p), 1, 'one origin request');

    $p = '/o/ab-4m-rate1m';
    fetch($p, timeout => 0.2);
    ok(wait_until(sub { origin_get("/broken$p") >= 1 }, 10),
       'abandoned below 10%: the origin\'s response is cut');
    ok(!stored('ab-4m-rate1m'), 'nothing stored');
}

# an origin that closes at 50%: nobody gets a body that looks whole,
# nothing stays findable, the next request fills anew (5 tests)
sub origin_cut () {
    start();
    my $p = '/o/cut1-1m-rate4m-cut';
    my @r = fetch_many(3, $p);
    is(scalar(grep { $_->{code} == 200 && $_->{size} == 1048576 } @r), 0,
       'no complete-looking body');
    ok(!grep({ $_->{rc} == 0 } @r), 'curl saw every one cut');
    ok(!stored('cut1-1m-rate4m-cut'), 'nothing stored');
    my $n = origin_count($p);
    @r = fetch_many(1, $p);
    ok(origin_count($p) > $n, 'the next request fills anew');
    ok(!stored('cut1-1m-rate4m-cut'), 'still nothing stored');
}

# a chunked origin, stored and hit (3 tests)
sub chunked () {
    start();
    my $p = '/o/ch-600k-chunked';
    my $r = fetch($p);
    is(all_whole($p, 614400, $r), 1, 'a chunked origin\'s body');
    ok(wait_until(sub { stored('ch-600k-chunked') }, 10), 'stored');
    my $h = fetch($p);
    ok(all_whole($p, 614400, $h) && $h->{xcache} eq 'HIT'
       && origin_count($p) == 1, 'then hit: one origin request');
}

# no-store, Set-Cookie and a 404 are answered and not stored (5 tests)
sub not_stored () {
    start();
    for my $p ('/o/ns-100k-nostore', '/o/ck-100k-cookie') {
        my @r = (fetch($p), fetch($p));
        (my $k = $p) =~ s{^/o/}{};
        ok(all_whole($p, 102400, @r) == 2 && !stored($k),
           "$p: answered, not stored");
    }
    my $r = fetch('/o/nf-100-s404');
    is($r->{code}, 404, 'the origin\'s 404');
    ok(!stored('nf-100-s404'), 'not stored');
    my $c = fetch('/o/ck-100k-cookie');
    ok($c->{head} =~ /^Set-Cookie: session=1/mi, 'Set-Cookie passed on');
}

# How many fills of <key> found the origin's answer not to be stored (the
# capture says so at info): a fill, not a pass.
sub fills_not_stored ($) {
    my $k = shift;
    open my $fh, '<', $Test::Nginx::Socket::ErrLogFile or return 0;
    return scalar grep { /is not stored/ && /"\Q$k\E"/ } <$fh>;
}

# goblin_cache_pass: after a response not stored for what it said, the key
# goes to the origin without a fill, until the mark runs out; not after a
# 5xx, nor when the request was why.  A fill's answer not stored goes to
# the request that started it: one origin request either way (5 tests)
sub passes () {
    start();
    for my $p ('/o/pn-100k-nostore', '/o/pc-100k-cookie') {
        (my $k = $p) =~ s{^/o/}{};
        my @r = (fetch($p), fetch($p), fetch($p));
        is(origin_count($p) . ' ' . all_whole($p, 102400, @r) . ' '
           . fills_not_stored($k), '3 3 1',
           "$p: a fill, then passes: origin requests, bodies, fills");
    }
    my $p = '/o/p5-100-s503';
    fetch($p) for 1 .. 2;
    is(origin_count($p) . ' ' . fills_not_stored('p5-100-s503'), '2 2',
       'a 503 leaves no mark: a fill each');
    $p = '/o/pq-100k-cc60';
    my $r = fetch($p, args => ['-H', 'Cache-Control: no-store']);
    my $n = fetch($p);
    ok(all_whole($p, 102400, $r, $n) == 2
       && wait_until(sub { stored('pq-100k-cc60') }, 10),
       'a request\'s no-store leaves no mark: the next one fills');
    $p = '/p1/pt-100k-nostore';
    fetch($p);
    sleep 2.2;      # past the mark's second, by the clock
    fetch($p);
    my $np = '/np/pu-100k-nostore';
    fetch($np) for 1 .. 2;
    is(join(' ', origin_count($p), fills_not_stored('/p1/pt-100k-nostore'),
            origin_count($np), fills_not_stored('/np/pu-100k-nostore')),
       '2 2 2 2', 'goblin_cache_pass 1s runs out; off: a fill each');
}

# the answer a fill may not store goes to the request that started it,
# as the origin sent it; larger than 256 KiB, or for a request that
# joined the fill, the origin is asked again (5 tests)
sub handoff () {
    start();
    my $p = '/o/ho-100k-nostore-hdrs';
    my $r = fetch($p);
    ok(all_whole($p, 102400, $r) == 1 && origin_count($p) == 1
       && $r->{head} =~ /^X-Origin-Id: ho-100k-nostore-hdrs\r?$/mi
       && $r->{head} =~ /^Cache-Control: no-store\r?$/mi,
       'one origin request, the origin\'s body and headers')
        or diag($r->{head});
    $p = '/o/ho2-100k-nostore';
    $r = fetch($p, h2 => 1);
    ok(all_whole($p, 102400, $r) == 1 && origin_count($p) == 1,
       'over HTTP/2: one origin request, the origin\'s body');
    my $nf = fetch('/o/hn-100-s404');
    ok($nf->{code} == 404 && origin_count('/o/hn-100-s404') == 1,
       'a 404: one origin request');
    $p = '/o/hl-300k-nostore';
    $r = fetch($p);
    ok(all_whole($p, 307200, $r) == 1 && origin_count($p) == 2,
       'over 256 KiB: a fill and a pass');
    $p = '/o/hj-100k-nostore-wait300';
    my @later = map { fetch_later($p) } 1 .. 2;
    my @r = map { $_->() } @later;
    ok(all_whole($p, 102400, @r) == 2 && origin_count($p) == 2,
       'two at once: the starter has the fill\'s, the other asks again');
}

# other methods pass to the origin; a 2xx invalidates; a cold HEAD pulls
# no body (4 tests)
sub other_methods () {
    start();
    my $p = '/o/pi-100k';
    fetch($p);
    ok(wait_until(sub { stored('pi-100k') }, 10), 'stored');
    my ($st, $h, $body) = http_request(port(), 'POST', $p, body => 'x=1');
    is("$st $body", '200 POST done', 'POST went to the origin');
    ok(wait_until(sub { !stored('pi-100k') }, 10), 'and invalidated the key');
    location_invalidation();

    $p = '/o/hd-300k';
    ($st, $h, $body) = http_request(port(), 'HEAD', $p);
    ok($st == 200 && $h->{'content-length'} == 307200 && !stored('hd-300k')
       && origin_count($p) == 1, 'a cold HEAD: the origin\'s headers, '
       . 'nothing filled');
}

# a 2xx to an unsafe method invalidates what its Location and
# Content-Location name on this host and location, not what they name
# elsewhere; a 5xx invalidates nothing; with goblin_key, the key it makes
# of the URI (4 tests)
sub location_invalidation () {
    my @keys = ((map { "li$_-100k" } 1 .. 6), 'lp-1k', 'lq-1k', 'ls-1k');
    fetch("/o/$_") for @keys;
    ok(wait_until(sub { !grep { !stored($_) } @keys }, 10), 'nine stored');
    my $u = sub { my $v = shift; $v =~ s/([^\w.\/-])/sprintf '%%%02X', ord $1/ge;
                  $v };
    # a failed request first: nothing goes
    my ($st3) = http_request(port(), 'DELETE', '/o/lr-1k?st=500&loc='
                             . $u->('/o/li5-100k'));
    # the host is what the request's Host says: localhost
    my ($st) = http_request(port(), 'POST', '/o/lp-1k?loc=' . $u->('/o/li1-100k')
                            . '&cl=' . $u->('http://LOCALHOST/o/li2-100k'),
                            body => 'x=1');
    my ($st2) = http_request(port(), 'PUT', '/o/lq-1k?loc='
                             . $u->('http://elsewhere/o/li3-100k') . '&cl='
                             . $u->('/p/li4-100k'), body => 'x=1');
    my ($st4) = http_request(port(), 'POST', '/o/ls-1k?loc='
                             . $u->('/o/./li6-100k'), body => 'x=1');
    # the keys named go before the request's own, on one ring in order:
    # once the own keys are gone, so is what was to go with them
    ok($st == 200 && $st2 == 200 && $st3 == 500 && $st4 == 200
       && wait_until(sub { !grep { stored($_) } qw(lp-1k lq-1k ls-1k) }, 10)
       && !stored('li1-100k') && !stored('li2-100k'),
       'Location and Content-Location of this host invalidated')
        or diag("$st $st2 $st3 $st4 " . join ' ', map { "$_=" . (stored($_) ? 1 : 0) } qw(lp-1k lq-1k ls-1k li1-100k li2-100k));
    ok(stored('li3-100k') && stored('li4-100k') && stored('li5-100k')
       && stored('li6-100k'), 'another host, another location, a failed '
       . 'request, a path not normalized: kept');

    # with goblin_key, the key it makes of a request for the URI named
    fetch('/lk/li7-100k?v=1');
    fetch('/lk/li8-100k?v=2');
    fetch('/lk/lt-1k');
    ok(wait_until(sub { stored('k/lk/li7-100k?v=1') && stored('k/lk/lt-1k')
                        && stored('k/lk/li8-100k?v=2') }, 10)
       && (http_request(port(), 'POST', '/lk/lt-1k', body => 'x=1',
                        headers => ['X-Content-Location: /lk/li7-100k?v=1',
                                    'X-Location: /lk/li8-100k?v=3']))[0]
          == 200
       && wait_until(sub { !stored('k/lk/lt-1k') }, 10)
       && !stored('k/lk/li7-100k?v=1') && stored('k/lk/li8-100k?v=2'),
       'goblin_key: the key made of the URI named invalidated, no other');
}

__DATA__

=== TEST 1: a miss, then a hit
--- init
main::miss_then_hit();



=== TEST 2: concurrent misses make one origin request
--- init
main::concurrent();



=== TEST 3: a waiter's first byte comes before the fill completes
--- init
main::first_byte();



=== TEST 4: a slow first client does not slow a fast one
--- init
main::slow_first();



=== TEST 5: the fill does not need its first client
--- init
main::client_gone();



=== TEST 6: an origin cut midway
--- init
main::origin_cut();



=== TEST 7: a chunked origin
--- init
main::chunked();



=== TEST 8: what must not be stored
--- init
main::not_stored();



=== TEST 8a: goblin_cache_pass
--- init
main::passes();



=== TEST 8b: a response not stored goes to the request that started its fill
--- init
main::handoff();



=== TEST 9: other methods and HEAD
--- init
main::other_methods();
