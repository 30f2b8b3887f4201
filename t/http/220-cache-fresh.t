# usage: prove t/http/220-cache-fresh.t
# Cache mode's freshness (RFC 9111 4.2) against t/lib/origin.py: what is
# stored expires in the store when it stops being fresh, by s-maxage over
# max-age over Expires over goblin_cache_valid, less the Age it came with
# (its memcache TTL, mg's t flag, says when); a hit carries Age; a response
# with no freshness left (max-age=0, an Expires in the past or malformed,
# an Age past its max-age or malformed, no-cache, private,
# goblin_cache_valid 0 and nothing said; of a list of Ages the first counts)
# is answered and not stored, and so is one to a request
# with Authorization unless public, s-maxage or must-revalidate allow it,
# one to a request with Cache-Control: no-store, and one with Vary: *; an
# expired object is filled anew, every body sha256-checked; every
# end-to-end header is kept and replayed, the origin's Date with them, and
# Expires counts from that Date.
BEGIN { push @INC, 't/lib' }
use GoblinTest;
use CacheTest;
use Test::Nginx::Socket;
use Time::Local ();

cache_start();
goblin_case_checks(request => 'GET /status', error_code => 200,
                   no_error_log => "[alert]\n[crit]\n");

repeat_each(1);
plan tests => goblin_plan(32);
no_shuffle();
run_tests();

# An RFC 9110 date as unix time (0 when it is none).
sub http_time ($) {
    my %mon = (Jan => 0, Feb => 1, Mar => 2, Apr => 3, May => 4, Jun => 5,
               Jul => 6, Aug => 7, Sep => 8, Oct => 9, Nov => 10, Dec => 11);
    my ($d, $m, $y, $H, $M, $S) =
        $_[0] =~ /^\w+, (\d+) (\w+) (\d+) (\d+):(\d+):(\d+) GMT$/ or return 0;
    return Time::Local::timegm($S, $M, $H, $d, $mon{$m}, $y);
}

sub start () { GoblinTest::wait_attached() or die "workers did not attach\n" }

# The TTL memcache's mg shows for <key>: seconds, -1 never, undef absent.
sub ttl ($) {
    my $s = GoblinTest::mc_conn();
    print $s "mg $_[0] t\r\n";
    my $line = GoblinTest::read_line($s);
    close $s;
    return $line =~ /^HD.* t(-?\d+)/ ? $1 : undef;
}

sub whole ($$$) {
    my ($path, $size, $r) = @_;
    return $r->{code} == 200 && $r->{size} == $size
           && $r->{sha} eq origin_sha($path);
}

# Filled once; its TTL; then a hit and its Age.
sub filled ($$) {
    my ($path, $key) = @_;
    my $r = fetch($path);
    wait_until(sub { stored($key) }, 10);
    return (ttl($key), fetch($path), $r);
}

# max-age: stored for as long, a hit with Age, then gone from the store
# and filled anew (6 tests)
sub max_age () {
    start();
    my $p = '/o/f1-100k-cc2';
    my ($ttl, $h, $r) = filled($p, 'f1-100k-cc2');
    ok(whole($p, 102400, $r) && $r->{xcache} eq 'MISS', 'a miss');
    ok(defined $ttl && $ttl >= 0 && $ttl <= 2, "stored for max-age: "
       . ($ttl // 'absent'));
    my ($age) = ($h->{head} // '') =~ /^Age: (\d+)\r?$/mi;
    ok(whole($p, 102400, $h) && $h->{xcache} eq 'HIT'
       && defined $age && $age <= 2, 'a hit with Age ' . ($age // 'none'))
        or diag($h->{head});
    ok($h->{head} =~ /^Cache-Control: max-age=2\r?$/mi,
       'the origin\'s Cache-Control replayed');
    ok(wait_until(sub { !stored('f1-100k-cc2') }, 10),
       'gone from the store once stale');
    my $n = fetch($p);
    ok(whole($p, 102400, $n) && $n->{xcache} eq 'MISS'
       && origin_count($p) == 2, 'then filled anew');
}

# which of s-maxage, max-age, Expires, goblin_cache_valid counts, and the
# Age the origin sent (7 tests)
sub lifetimes () {
    start();
    my ($ttl, $h) = filled('/o/f2-100k-cc100-smax50', 'f2-100k-cc100-smax50');
    ok($ttl > 40 && $ttl <= 50, "s-maxage over max-age: TTL $ttl");
    ($ttl) = filled('/o/f3-100k-cc0-smax60', 'f3-100k-cc0-smax60');
    ok($ttl > 50 && $ttl <= 60, "s-maxage over max-age=0: TTL $ttl");
    ($ttl) = filled('/o/f4-100k-exp70', 'f4-100k-exp70');
    ok($ttl > 60 && $ttl <= 70, "Expires: TTL $ttl");
    ($ttl) = filled('/o/f5-100k', 'f5-100k');
    ok($ttl > 590 && $ttl <= 600, "nothing said, goblin_cache_valid's "
       . "default 10m: TTL $ttl");
    ($ttl, $h) = filled('/o/f6-100k-cc100-age30', 'f6-100k-cc100-age30');
    ok($ttl > 60 && $ttl <= 70, "max-age less the origin's Age: TTL $ttl");
    my ($age) = ($h->{head} // '') =~ /^Age: (\d+)\r?$/mi;
    ok(defined $age && $age >= 30 && $age < 40 && $h->{xcache} eq 'HIT',
       'a hit\'s Age counts the origin\'s: ' . ($age // 'none'));
    ($ttl, $h) = filled('/o/f7-100k-cc100-agefirst', 'f7-100k-cc100-agefirst');
    ok($ttl > 90 && $ttl <= 100 && $h->{xcache} eq 'HIT',
       "Age: 0, 7200 counts its first member: TTL $ttl");
}

# answered and not stored: each asked twice, neither a hit
# (9 tests)
sub not_stored () {
    start();
    for my $p ('/o/n1-100k-cc0', '/o/n2-100k-exp0', '/o/n3-100k-expbad',
               '/o/n4-100k-cc10-age20', '/o/n5-100k-nocache-cc60',
               '/o/n6-100k-private-cc60', '/v0/n7-100k',
               '/o/n8-100k-cc3600-agebad', '/o/n9-100k-cc3600-agedup') {
        my @r = (fetch($p), fetch($p));
        (my $k = $p) =~ s{^/o/}{};
        ok(whole($p, 102400, $r[0]) && whole($p, 102400, $r[1])
           && !stored($k) && ($r[1]{xcache} // '') ne 'HIT',
           "$p: answered, not stored")
            or diag(join ' ', map { "$_->{code} $_->{size} "
                                    . ($_->{xcache} // '-') } @r);
    }
}

# what the request says (RFC 9111 3.5, 5.2.1.5) and Vary: with
# Authorization only a public, s-maxage or must-revalidate response is
# stored; Cache-Control: no-store in the request stores nothing; a response
# with Vary: * is not stored (5 tests)
sub request_says () {
    start();
    my @auth = (args => ['-H', 'Authorization: Basic Z29ibGluOnN0b3Jl']);
    for my $c (['/o/a1-100k-cc60', 0], ['/o/a2-100k-cc60-public', 1],
               ['/o/a3-100k-cc60-mustrev', 1], ['/o/a4-100k-smax60', 1]) {
        my ($p, $want) = @$c;
        (my $k = $p) =~ s{^/o/}{};
        my $r = fetch($p, @auth);
        my $got = $want ? wait_until(sub { stored($k) }, 10) : !stored($k);
        ok(whole($p, 102400, $r) && $got, "with Authorization, $p: "
           . ($want ? 'stored' : 'not stored'));
    }
    my $p = '/o/a5-100k-cc60';
    my @r = (fetch($p, args => ['-H', 'Cache-Control: no-store']),
             fetch('/o/a6-100k-cc60-varystar'));
    ok(whole($p, 102400, $r[0]) && !stored('a5-100k-cc60')
       && whole('/o/a6-100k-cc60-varystar', 102400, $r[1])
       && !stored('a6-100k-cc60-varystar'),
       'a request with no-store, a response with Vary: *: not stored');
}

# the response's headers as stored (RFC 9111 3.1, 4.2.1): every end-to-end
# one replayed on the miss and on a hit, not one its Connection names; the
# origin's Date kept; an Expires counted from the Date, not from when it
# came (4 tests)
sub as_stored () {
    start();
    my $p = '/o/h1-10k-cc100-hdrs-dateback30';
    my $m = fetch($p);
    wait_until(sub { stored('h1-10k-cc100-hdrs-dateback30') }, 10);
    my ($md) = ($m->{head} // '') =~ /^Date: (.*?)\r?$/mi;
    sleep 1;
    my $h = fetch($p);
    my ($hd) = ($h->{head} // '') =~ /^Date: (.*?)\r?$/mi;
    my $ok = 1;
    for my $r ($m, $h) {
        $ok &&= whole($p, 10240, $r)
                && $r->{head} =~ /^X-Origin-Id: h1-10k-cc100-hdrs-dateback30\r?$/mi
                && $r->{head} =~ /^Link: <\/style\.css>; rel=preload\r?$/mi
                && $r->{head} !~ /^X-Hop:/mi;
    }
    ok($ok && $h->{xcache} eq 'HIT', 'end-to-end headers replayed on the '
       . 'miss and the hit, the one Connection names not')
        or diag("$m->{head}\n$h->{head}");
    ok(defined $md && defined $hd && $md eq $hd
       && http_time($hd) < time() - 20,
       'the origin\'s Date kept: ' . ($hd // 'none'));
    my @r = (fetch('/o/h2-10k-exp300-datefwd400'),
             fetch('/o/h2-10k-exp300-datefwd400'));
    ok(whole('/o/h2-10k-exp300-datefwd400', 10240, $r[1])
       && !stored('h2-10k-exp300-datefwd400')
       && ($r[1]{xcache} // '') ne 'HIT',
       'an Expires before the Date: not stored');
    my ($ttl) = filled('/o/h3-10k-exp100-dateback50', 'h3-10k-exp100-dateback50');
    ok(defined $ttl && $ttl > 140 && $ttl <= 150,
       'Expires less the Date (150 s), not less now (100 s): TTL '
       . ($ttl // 'absent'));
}

# goblin_cache_valid 0 still stores what says how long it is fresh
# (1 test)
sub valid_off () {
    start();
    my ($ttl) = filled('/v0/v1-100k-cc80', '/v0/v1-100k-cc80');
    ok(defined $ttl && $ttl > 70 && $ttl <= 80,
       'goblin_cache_valid 0, max-age=80: TTL ' . ($ttl // 'absent'));
}

__DATA__

=== TEST 1: max-age: stored as long, Age on a hit, filled anew once stale
--- init
main::max_age();



=== TEST 2: s-maxage, max-age, Expires, goblin_cache_valid, the origin's Age
--- init
main::lifetimes();



=== TEST 3: no freshness left: answered, not stored
--- init
main::not_stored();



=== TEST 4: goblin_cache_valid 0 with an explicit lifetime
--- init
main::valid_off();



=== TEST 5: Authorization, a request's no-store, Vary
--- init
main::request_says();



=== TEST 6: headers as stored: end to end replayed, Date kept, Expires less Date
--- init
main::as_stored();
