# usage: prove t/http/250-cache-stale.t
# stale-if-error and stale-while-revalidate (RFC 5861) in cache mode,
# against t/lib/origin.py: an object whose max-age ran out is kept for as
# long as they allow; a request for it fills it anew ($goblin_cache_status
# EXPIRED) and, when the origin answers 503, gets the stale copy (STALE)
# whole; a working origin refreshes it; without stale-if-error the
# origin's 503 reaches the client; within stale-while-revalidate the stale
# copy answers at once (UPDATING) while a fill behind it refreshes the
# object, unless the request says no-cache.  A stale object's fill asks
# with its ETag: the origin's 304 refreshes its headers and freshness in
# the store (REVALIDATED) and its bytes stay.  After a restart of the
# store (kill -9) each object stored before it is revalidated once
# (goblin_cache_restart revalidate): what changed at the origin meanwhile
# is never served; with keep, it hits.  Every body sha256-checked.
BEGIN { push @INC, 't/lib' }
use GoblinTest;
use CacheTest;
use Test::Nginx::Socket;
use Time::HiRes qw(time);
use JSON::PP;

cache_start();
goblin_case_checks(request => 'GET /status', error_code => 200,
                   no_error_log => "[alert]\n[crit]\n");

repeat_each(1);
plan tests => goblin_plan(28);
no_shuffle();
run_tests();

sub start () { GoblinTest::wait_attached() or die "workers did not attach\n" }

sub whole ($$) {
    my ($path, $r) = @_;
    return $r->{code} == 200 && $r->{sha} eq origin_sha($path);
}

# Stored by a first GET, then asked again until it is no hit (max-age=1):
# that answer.
sub after_stale ($;%) {
    my ($path, %o) = @_;
    (my $k = $path) =~ s{^/o/}{};
    my $f = fetch($path);
    # an ASan daemon under load may take a while
    if (!wait_until(sub { stored($k) }, 30)) {
        Test::More::diag("$path: not stored 30 s after a GET ("
                         . ($f->{code} // 'no answer') . ' '
                         . ($f->{xcache} // 'no status') . ')');
        return {};
    }
    my $r;
    wait_until(sub { $r = fetch($path, %o); ($r->{xcache} // '') ne 'HIT' },
               30);
    return $r;
}

# the origin fails after the first fill: the stale copy, whole (3 tests)
sub stale_if_error () {
    start();
    my $p = '/o/e1-300k-cc1-sie60-failafter1';
    my $r = after_stale($p);
    ok(whole($p, $r) && $r->{xcache} eq 'STALE', 'the origin answers 503: '
       . 'the stale copy (' . ($r->{xcache} // 'no status') . ')');
    is(origin_count($p), 2, 'after asking the origin');
    $p = '/o/e2-300k-cc1-sie60-failafter1';
    $r = after_stale($p, h2 => 1);
    ok(whole($p, $r) && $r->{xcache} eq 'STALE', 'over HTTP/2 too');
}

# a working origin refreshes a stale object (3 tests)
sub refreshed () {
    start();
    my $p = '/o/e3-300k-cc1-sie60-noreval';
    my $r = after_stale($p);
    ok(whole($p, $r) && $r->{xcache} eq 'EXPIRED' && origin_count($p) == 2,
       'stale: filled anew (' . ($r->{xcache} // 'no status') . ')');
    ok(wait_until(sub { stored('e3-300k-cc1-sie60-noreval') }, 10),
       'stored again');
    my $h = fetch($p);
    ok(whole($p, $h) && $h->{xcache} eq 'HIT' && origin_count($p) == 2,
       'then a hit');
}

# without stale-if-error the origin's error is the answer (2 tests); so it
# is with stale-if-error when must-revalidate, proxy-revalidate or
# s-maxage forbid serving stale (RFC 9111 4.2.4), and stale-while-
# revalidate waits for the new copy then (3 tests)
sub no_stale () {
    start();
    # kept no longer than its freshness (no stale window), so it may be
    # gone before it is ever seen stored: asked again once that is over
    my $p = '/o/e4-300k-cc1-failafter1';
    my $f = fetch($p);
    my $t0 = time;
    wait_until(sub { time > $t0 + 1.5 }, 10);
    my $r = fetch($p);
    # (a 5xx fill is passed on once more, not made a hit-for-miss)
    ok(whole($p, $f) && $r->{code} == 503 && origin_count($p) >= 2,
       "the origin's 503 ($r->{code}; first $f->{code} $f->{xcache})");
    ok(!stored('e4-300k-cc1-failafter1'), 'nothing stored');
    for my $c (['m', 'must-revalidate', 'cc1-sie60-mustrev'],
               ['p', 'proxy-revalidate', 'cc1-sie60-proxyrev'],
               ['s', 's-maxage', 'smax1-sie60']) {
        my ($id, $what, $flags) = @$c;
        # filled, then asked once its second of freshness is over (it may
        # be gone from the store by the time it is looked for)
        $p = "/o/e5$id-300k-$flags-failafter1";
        my $f = fetch($p);
        my $t0 = time;
        wait_until(sub { time > $t0 + 1.5 }, 10);
        $r = fetch($p);
        ok(whole($p, $f) && $r->{code} == 503
           && ($r->{xcache} // '') ne 'STALE' && origin_count($p) >= 2,
           "stale-if-error with $what: the origin's 503 ($r->{code}), not "
           . 'the stale copy');
    }
}

# stale-while-revalidate: the stale copy at once, refreshed behind it; a
# request's no-cache waits for the new one (4 tests)
sub while_revalidate () {
    start();
    # the refreshed copy fresh for 600 s: a loaded machine cannot see it
    # stale again (a third origin request) before the hit
    my $p = '/o/w1-300k-cc1-swr60-after600';
    my $r = after_stale($p);
    ok(whole($p, $r) && $r->{xcache} eq 'UPDATING', 'the stale copy at once ('
       . ($r->{xcache} // 'no status') . ')');
    ok(wait_until(sub { origin_count($p) == 2 }, 10)
       && wait_until(sub { fetch($p)->{xcache} eq 'HIT' }, 10),
       'refreshed behind it, then hits');
    is(origin_count($p), 2, 'two origin requests in all');
    $p = '/o/w2-300k-cc1-swr60';
    $r = after_stale($p, args => ['-H', 'Cache-Control: no-cache']);
    # BYPASS while fresh; once stale (a loaded machine), REVALIDATED: the
    # origin asked either way, never the stale copy
    ok(whole($p, $r) && ($r->{xcache} // '') =~ /^(BYPASS|REVALIDATED)$/
       && origin_count($p) == 2,
       'no-cache in the request: the new copy (' . ($r->{xcache} // '')
       . ')');
}

# revalidation (goblin_cache_revalidate 1h keeps a stale object that has
# a validator): the fill asks with the ETag, the origin says 304, the
# stale object is fresh again with the 304's Cache-Control (4 tests)
sub revalidate () {
    start();
    for my $c (['/rv/v1-300k-cc1-revalcc600', 0],
               ['/rv/v2-300k-cc1-revalcc600', 1]) {
        my ($p, $h2) = @$c;
        my $r = after_stale($p, $h2 ? (h2 => 1) : ());
        ok(whole($p, $r) && $r->{xcache} eq 'REVALIDATED'
           && origin_get("/304$p") == 1 && origin_count($p) == 2,
           'the origin\'s 304: the stored bytes, ' . ($r->{xcache} // '')
           . ($h2 ? ' (HTTP/2)' : ''));
        my $h = fetch($p);
        ok(whole($p, $h) && $h->{xcache} eq 'HIT' && origin_count($p) == 2
           && ($h->{head} // '') =~ /^Cache-Control: max-age=600\r?$/mi,
           'then hits with the 304\'s Cache-Control');
    }
}

sub link_up () {
    my ($st, $h, $body) = GoblinTest::http_request(port(), 'GET', '/status');
    my $j = eval { JSON::PP::decode_json($body) } || {};
    return ($j->{link} // '') eq 'up';
}

# Stored, then asked until a hit: whether it was stored whole.
sub stored_hit ($) {
    my $p = shift;
    fetch($p);
    return wait_until(sub { my $r = fetch($p);
                            whole($p, $r) && $r->{xcache} eq 'HIT' }, 10);
}

# goblin_cache_restart: the store killed and restarted on its pools; an
# object changed at the origin meanwhile (a PUT that reached it through
# another node) is not served stale (9 tests)
sub restarted () {
    start();
    my @p = ('/o/r1-300k-cc600', '/o/r2-300k-cc600-mut',
             '/o/r3-300k-cc600-failafter1', '/keep/r4-300k-cc600-mut');
    ok(!(grep { !stored_hit($_) } @p), 'four objects stored, then hits');
    my $old = origin_sha($p[1]);
    for my $m ($p[1], $p[3]) {
        system('curl', '-s', '-o', '/dev/null', '-X', 'PUT', '--data', 'new',
               "http://127.0.0.1:$CacheTest::OriginPort$m");
    }
    GoblinTest::goblin_kill(9);
    GoblinTest::goblin_start();
    ok(wait_until(sub { link_up() }, 20), 'the workers attached again');
    my $r = fetch($p[0]);
    ok(whole($p[0], $r) && $r->{xcache} eq 'REVALIDATED'
       && origin_get("/304$p[0]") == 1 && origin_count($p[0]) == 2,
       'unchanged at the origin: revalidated once, a 304 ('
       . ($r->{xcache} // '') . ')');
    my $h = fetch($p[0]);
    ok(whole($p[0], $h) && $h->{xcache} eq 'HIT' && origin_count($p[0]) == 2,
       'then hits');
    $r = fetch($p[1]);
    ok(whole($p[1], $r) && origin_sha($p[1]) ne $old
       && $r->{xcache} eq 'EXPIRED', 'changed at the origin: the new '
       . 'version, never the stored one (' . ($r->{xcache} // '') . ')');
    $r = fetch($p[1]);
    ok(whole($p[1], $r) && $r->{xcache} eq 'HIT', 'then the new one hits');
    $r = fetch($p[2]);
    ok(whole($p[2], $r) && $r->{xcache} eq 'STALE'
       && origin_count($p[2]) == 2, 'the origin fails: the stored copy, '
       . 'still fresh (' . ($r->{xcache} // '') . ')');
    $r = fetch($p[3]);
    ok($r->{code} == 200 && $r->{xcache} eq 'HIT'
       && origin_count($p[3]) == 2,
       'goblin_cache_restart keep: a hit, the origin not asked');
    is(GoblinTest::goblin_stats()->{pid} // '', GoblinTest::goblin_pid(),
       'the restarted store answered');
}

__DATA__

=== TEST 1: stale-if-error: the stale copy when the origin fails
--- init
main::stale_if_error();



=== TEST 2: a stale object refreshed by a working origin
--- init
main::refreshed();



=== TEST 3: no stale-if-error: the origin's error
--- init
main::no_stale();



=== TEST 4: stale-while-revalidate
--- init
main::while_revalidate();



=== TEST 5: a 304 refreshes a stale object
--- init
main::revalidate();



=== TEST 6: goblin_cache_restart: what a restart stored is revalidated
--- init
main::restarted();
