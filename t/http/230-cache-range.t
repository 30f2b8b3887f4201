# usage: prove t/http/230-cache-range.t
# A cold Range in cache mode (against t/lib/origin.py): a Range that does
# not start at byte 0, on an object not stored yet, is answered from its
# offset by a ranged origin request (the origin's /ranges/ page shows it)
# long before the whole-object fill beside it reaches that offset; the
# fill still stores every byte, and the same Range is then a hit.  A
# Range from byte 0 reads along the fill.  Every body is checked against
# the stored object, whose sha256 is the origin's.
BEGIN { push @INC, 't/lib' }
use GoblinTest;
use CacheTest;
use Test::Nginx::Socket;
use Time::HiRes qw(time);

cache_start();
goblin_case_checks(request => 'GET /status', error_code => 200,
                   no_error_log => "[alert]\n[crit]\n");

repeat_each(1);
plan tests => goblin_plan(15);
no_shuffle();
run_tests();

sub start () { GoblinTest::wait_attached() or die "workers did not attach\n" }

# Waits for <key> to be stored whole (its sha256 the origin's for <path>);
# returns its bytes.
sub stored_whole ($$) {
    my ($path, $key) = @_;
    wait_until(sub { stored($key) }, 20) or return '';
    my $v = GoblinTest::mc_get($key) // '';
    return Digest::SHA::sha256_hex($v) eq origin_sha($path) ? $v : '';
}

# <r> is a 206 of bytes [<from>, <to>] of <whole>
sub part_of ($$$$) {
    my ($r, $whole, $from, $to) = @_;
    return $r->{code} == 206 && $r->{size} == $to - $from + 1
           && length($whole) > $to
           && $r->{sha} eq Digest::SHA::sha256_hex(
                  substr($whole, $from, $to - $from + 1));
}

sub range ($$) { (args => ['-H', "Range: bytes=$_[0]-$_[1]"]) }

# a cold Range, nobody filling: from the origin at once, the object filled
# beside it, then a hit (5 tests)
sub cold () {
    start();
    my $p = '/o/r1-4m-rate2m';
    my $t0 = time;
    my $r = fetch($p, range(3145728, 3146751));
    ok($r->{ttfb} < 1.0, sprintf('the first byte at %.2fs, the fill at '
       . '2 MB/s reaches it at 1.5s', $r->{ttfb}));
    is(origin_get("/ranges$p"), 'bytes=3145728-3146751',
       'the origin was asked for the range');
    my $whole = stored_whole($p, 'r1-4m-rate2m');
    ok(length($whole) == 4194304 && time - $t0 > 1.5,
       'and the whole object was filled and stored');
    ok(part_of($r, $whole, 3145728, 3146751), 'the 206 was its bytes');
    my $h = fetch($p, range(3145728, 3146751));
    ok(part_of($h, $whole, 3145728, 3146751) && $h->{xcache} eq 'HIT'
       && origin_count($p) == 2, 'then a hit, two origin requests in all');
}

# a suffix Range while this worker fills the object (4 tests)
sub while_filling () {
    start();
    my $p = '/o/r2-4m-rate2m';
    my $first = fetch_later($p);
    ok(wait_until(sub { origin_count($p) >= 1 }, 10), 'the fill started');
    my $r = fetch($p, args => ['-H', 'Range: bytes=-1000']);
    ok($r->{ttfb} < 1.0, sprintf('a suffix range\'s first byte at %.2fs',
                                 $r->{ttfb}));
    my $a = $first->();
    my $whole = stored_whole($p, 'r2-4m-rate2m');
    ok(part_of($r, $whole, 4194304 - 1000, 4194303)
       && $a->{code} == 200 && $a->{sha} eq origin_sha($p),
       'both bodies right');
    is(origin_count($p), 2, 'the fill and the range: two origin requests');
}

# a cold Range over HTTP/2 (3 tests)
sub cold_h2 () {
    start();
    my $p = '/o/r4-2m-rate1m';
    my $r = fetch($p, h2 => 1, range(1572864, 1573887));
    ok($r->{ttfb} < 1.0 && $r->{version} eq '2',
       sprintf('over HTTP/2, the first byte at %.2fs (the fill at 1 MB/s '
               . 'reaches it at 1.5s)', $r->{ttfb}));
    my $whole = stored_whole($p, 'r4-2m-rate1m');
    ok(part_of($r, $whole, 1572864, 1573887), 'the 206 was its bytes');
    is(origin_count($p), 2, 'the range and the fill');
}

# a Range from byte 0 reads along the fill: no ranged origin request
# (goblin_cache_abandon off: its client goes away after 100 bytes) (3 tests)
sub from_zero () {
    start();
    my $p = '/off/r3-1m-rate4m';
    my $r = fetch($p, range(0, 99));
    my $whole = stored_whole($p, $p);
    ok(part_of($r, $whole, 0, 99), 'bytes 0-99 of the object');
    is(origin_get("/ranges$p"), '', 'the origin saw no Range');
    is(origin_count($p), 1, 'one origin request');
}

__DATA__

=== TEST 1: a cold Range from the origin, the object filled beside it
--- init
main::cold();



=== TEST 2: a suffix Range while the object fills
--- init
main::while_filling();



=== TEST 3: a cold Range over HTTP/2
--- init
main::cold_h2();



=== TEST 4: a Range from byte 0 reads along
--- init
main::from_zero();
