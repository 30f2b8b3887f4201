# usage: prove t/http/240-cache-request.t
# What a request's Cache-Control asks of cache mode (RFC 9111 5.2.1, 5.4),
# against t/lib/origin.py: no-cache (and Pragma: no-cache) on a stored
# object fills it anew from the origin ($goblin_cache_status BYPASS) and
# the next plain request is a hit on the new copy; max-age older than the
# object and min-fresh beyond what it has left do the same, a max-age and
# min-fresh it meets are hits; only-if-cached is 504 on a miss (the origin
# never asked) and a hit on a stored object.  PURGE in a location with
# goblin_cache_purge deletes the key (204, then 404), behind nginx's own
# allow/deny (403), and the next GET fills it anew.  Every body
# sha256-checked, over HTTP/1.1 and HTTP/2.
BEGIN { push @INC, 't/lib' }
use GoblinTest;
use CacheTest;
use Test::Nginx::Socket;

cache_start();
goblin_case_checks(request => 'GET /status', error_code => 200,
                   no_error_log => "[alert]\n[crit]\n");

repeat_each(1);
plan tests => goblin_plan(17);
no_shuffle();
run_tests();

sub start () { GoblinTest::wait_attached() or die "workers did not attach\n" }

sub whole ($$) {
    my ($path, $r) = @_;
    return $r->{code} == 200 && $r->{sha} eq origin_sha($path);
}

sub with ($;$) { (args => ['-H', $_[0]], $_[1] ? (h2 => 1) : ()) }

# Stored by a first GET; returns the origin's count then.
sub stored_once ($$) {
    my ($path, $key) = @_;
    fetch($path);
    wait_until(sub { stored($key) }, 10) or return -1;
    return origin_count($path);
}

# no-cache and Pragma: no-cache fill anew; the next GET hits the new copy
# (6 tests)
sub no_cache () {
    start();
    for my $c (['/o/q1-300k-cc600', 'Cache-Control: no-cache', 0],
               ['/o/q2-300k-cc600', 'Pragma: no-cache', 0],
               ['/o/q3-300k-cc600', 'Cache-Control: no-cache', 1]) {
        my ($p, $h, $h2) = @$c;
        (my $k = $p) =~ s{^/o/}{};
        my $n = stored_once($p, $k);
        my $r = fetch($p, with($h, $h2));
        ok(whole($p, $r) && $r->{xcache} eq 'BYPASS'
           && origin_count($p) == $n + 1, "$h"
           . ($h2 ? ' over HTTP/2' : '') . ': from the origin, '
           . ($r->{xcache} // 'no status'));
        ok(wait_until(sub { stored($k) }, 10) && whole($p, fetch($p))
           && origin_count($p) == $n + 1, 'then a hit on the new copy');
    }
}

# max-age and min-fresh against an object 30 s old with 70 s left
# (the origin's Age: 30, max-age=100) (4 tests)
sub age_limits () {
    start();
    my $p = '/o/q4-300k-cc100-age30';
    my $n = stored_once($p, 'q4-300k-cc100-age30');
    my @hit = ([with('Cache-Control: max-age=60')],
               [with('Cache-Control: min-fresh=20')]);
    for my $h (@hit) {
        my $r = fetch($p, @$h);
        ok(whole($p, $r) && $r->{xcache} eq 'HIT' && origin_count($p) == $n,
           "$h->[1][1]: a hit");
    }
    my $r = fetch($p, with('Cache-Control: max-age=10'));
    ok(whole($p, $r) && $r->{xcache} eq 'BYPASS'
       && origin_count($p) == $n + 1, 'max-age=10 on a 30 s old object: '
       . 'from the origin');
    wait_until(sub { stored('q4-300k-cc100-age30') }, 10);
    $r = fetch($p, with('Cache-Control: min-fresh=500'));
    ok(whole($p, $r) && $r->{xcache} eq 'BYPASS'
       && origin_count($p) == $n + 2, 'min-fresh=500 on 70 s left: from '
       . 'the origin');
}

# only-if-cached: 504 on a miss, never asking the origin; a hit when
# stored (3 tests)
sub only_if_cached () {
    start();
    my $p = '/o/q5-300k-cc600';
    my $r = fetch($p, with('Cache-Control: only-if-cached'));
    is($r->{code}, 504, 'only-if-cached on a miss: 504');
    is(origin_count($p), 0, 'the origin was not asked');
    stored_once($p, 'q5-300k-cc600');
    $r = fetch($p, with('Cache-Control: only-if-cached', 1));
    ok(whole($p, $r) && $r->{xcache} eq 'HIT' && origin_count($p) == 1,
       'only-if-cached on a stored object: a hit');
}

# PURGE behind an access rule (4 tests)
sub purge () {
    start();
    my $p = '/o/u1-300k-cc600';
    stored_once($p, 'u1-300k-cc600');
    my ($st) = http_request(port(), 'PURGE', '/nopurge/u1-300k-cc600');
    is($st, 403, 'PURGE where deny all: 403');
    ($st) = http_request(port(), 'PURGE', '/purge/u1-300k-cc600');
    ok($st == 204 && !stored('u1-300k-cc600'), "PURGE: $st, the key gone");
    ($st) = http_request(port(), 'PURGE', '/purge/u1-300k-cc600');
    is($st, 404, 'PURGE of nothing: 404');
    my $r = fetch($p);
    ok(whole($p, $r) && $r->{xcache} eq 'MISS' && origin_count($p) == 2,
       'then a GET fills it anew');
}

__DATA__

=== TEST 1: no-cache and Pragma: no-cache fill anew
--- init
main::no_cache();



=== TEST 2: max-age and min-fresh
--- init
main::age_limits();



=== TEST 3: only-if-cached
--- init
main::only_if_cached();



=== TEST 4: PURGE
--- init
main::purge();
