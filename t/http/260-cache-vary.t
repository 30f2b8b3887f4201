# usage: prove t/http/260-cache-vary.t
# Cache mode's variants (RFC 9111 4.1) against t/lib/origin.py, whose
# "vary" objects say Vary: Accept-Encoding and have a body and ETag of
# their own per Accept-Encoding: each variant is filled once and hit
# after, every request gets the body its Accept-Encoding selects (spaces
# around commas do not count), also when the variants of one cold key are
# asked at once; the response's Vary is replayed, the cache's own variant
# line never is; Vary: * is never stored; a purge or a PUT through the
# cache of the key drops every variant.  Over HTTP/1.1 and HTTP/2, every
# body sha256-checked.
BEGIN { push @INC, 't/lib' }
use GoblinTest;
use CacheTest;
use Test::Nginx::Socket;

cache_start();
goblin_case_checks(request => 'GET /status', error_code => 200,
                   no_error_log => "[alert]\n[crit]\n");

repeat_each(1);
plan tests => goblin_plan(13);
no_shuffle();
run_tests();

sub start () { GoblinTest::wait_attached() or die "workers did not attach\n" }

# GET <path> with Accept-Encoding <ae> (undef: none), over HTTP/2 when <h2>
sub get_ae ($$;$) {
    my ($path, $ae, $h2) = @_;
    return fetch($path, defined $ae ? (args => ['-H', "Accept-Encoding: $ae"])
                                    : (),
                 $h2 ? (h2 => 1) : ());
}

# Whether <r> is the whole body of <path>'s variant for <ae>.
sub variant_of ($$$) {
    my ($path, $ae, $r) = @_;
    my $q = defined $ae ? '?ae=' . join('', map { sprintf '%%%02X', ord }
                                                split //, $ae)
                        : '';
    return $r->{code} == 200 && $r->{sha} eq origin_sha($path . $q);
}

sub show ($) {
    my $r = shift;
    return "$r->{code} $r->{size} " . ($r->{xcache} // '-');
}

# Each variant filled once, then hit; the bodies never mixed (7 tests)
sub variants ($) {
    my $h2 = shift;
    start();
    my $p = $h2 ? '/o/w2-100k-cc60-vary' : '/o/w1-100k-cc60-vary';
    my @seq = (['gzip', 'MISS', 1], ['gzip', 'HIT', 1], ['br', 'MISS', 2],
               ['br', 'HIT', 2], ['gzip', 'HIT', 2], [undef, 'MISS', 3],
               ['gzip , br', 'MISS', 4], ['gzip,br', 'HIT', 4],
               [undef, 'HIT', 4], ['br', 'HIT', 4]);
    my @bad;
    for my $s (@seq) {
        my ($ae, $want, $n) = @$s;
        my $r = get_ae($p, $ae, $h2);
        # a hit may come before its fill is whole in the store: then MISS
        # (read along) with the same bytes; the origin count tells
        my $ok = variant_of($p, $ae, $r) && origin_count($p) == $n
                 && ($r->{xcache} // '') =~ /^(?:\Q$want\E|MISS)$/;
        push @bad, ($ae // 'none') . " => " . show($r)
                   . " origin " . origin_count($p) unless $ok;
    }
    ok(!@bad, ($h2 ? 'HTTP/2: ' : '') . 'four variants, each filled once, '
       . 'every body its own') or diag(join "\n", @bad);
    my $r = get_ae($p, 'br', $h2);
    ok(variant_of($p, 'br', $r) && $r->{xcache} eq 'HIT'
       && $r->{head} =~ /^vary: Accept-Encoding\r?$/mi,
       'a hit replays Vary') or diag(show($r) . "\n" . ($r->{head} // ''));
    ok($r->{head} !~ /goblin-variant/i, 'the variant line is not replayed');
}

# The variants of one cold key at once: 8 gzip, 8 br, every body its own
# (2 tests)
sub at_once ($) {
    my $h2 = shift;
    start();
    my $p = $h2 ? '/o/w4-1m-cc60-vary-rate4m' : '/o/w3-1m-cc60-vary-rate4m';
    my @later = map { my $ae = $_ % 2 ? 'gzip' : 'br';
                      [$ae, fetch_later($p, args => ['-H',
                                                    "Accept-Encoding: $ae"],
                                        $h2 ? (h2 => 1) : ())] } 1 .. 16;
    my @bad;
    for my $l (@later) {
        my ($ae, $wait) = @$l;
        my $r = $wait->();
        push @bad, "$ae: $r->{code} $r->{size} " . ($r->{xcache} // "-")
            . (variant_of($p, $ae eq "br" ? "gzip" : "br", $r)
               ? " (the other variant's body)" : "")
            unless variant_of($p, $ae, $r);
    }
    ok(!@bad, ($h2 ? 'HTTP/2: ' : '') . '16 at once over two variants: '
       . 'every body its own') or diag(join "\n", @bad);
    my @r = (get_ae($p, 'gzip', $h2), get_ae($p, 'br', $h2));
    ok(variant_of($p, 'gzip', $r[0]) && variant_of($p, 'br', $r[1])
       && origin_count($p) <= 4,
       'then both hit their own (' . origin_count($p) . ' origin requests)')
        or diag(join ' ', map { show($_) } @r);
}

# Vary: * is answered, never stored (1 test)
sub star () {
    start();
    my $p = '/o/w5-100k-cc60-varystar';
    my @r = (get_ae($p, 'gzip'), get_ae($p, 'gzip'));
    ok(variant_of($p, undef, $r[0]) && variant_of($p, undef, $r[1])
       && ($r[1]{xcache} // '') ne 'HIT' && !stored('w5-100k-cc60-varystar'),
       'Vary: * is not stored') or diag(join ' ', map { show($_) } @r);
}

# A purge, and an unsafe method through the cache, drop every variant
# (2 tests)
sub dropped () {
    start();
    for my $how ('PURGE', 'POST') {
        my $p = $how eq 'PURGE' ? '/o/w6-100k-cc60-vary'
                                : '/o/w7-100k-cc60-vary';
        get_ae($p, $_) for ('gzip', 'br');
        my $n = origin_count($p);
        my @h = (get_ae($p, 'gzip'), get_ae($p, 'br'));
        my $url = $how eq 'PURGE' ? "http://127.0.0.1:" . port()
                                    . ($p =~ s{^/o/}{/purge/}r)
                                  : "http://127.0.0.1:" . port() . $p;
        my $code = `curl -s -o /dev/null -w '%{http_code}' -X $how '$url'`;
        my @r = (get_ae($p, 'gzip'), get_ae($p, 'br'));
        ok($n == 2 && (join ' ', map { $_->{xcache} // '-' } @h) eq 'HIT HIT'
           && $code =~ /^2/ && variant_of($p, 'gzip', $r[0])
           && variant_of($p, 'br', $r[1]) && origin_count($p) >= 4
           && ($r[1]{xcache} // '') ne 'HIT',
           "$how ($code) drops both variants: then "
           . join(' ', map { show($_) } @r) . ', '
           . origin_count($p) . ' origin requests');
    }
}

__DATA__

=== TEST 1: variants, each filled once and hit, over HTTP/1.1
--- init
main::variants(0);



=== TEST 2: variants over HTTP/2
--- init
main::variants(1);



=== TEST 3: the variants of a cold key at once
--- init
main::at_once(0);



=== TEST 4: the variants of a cold key at once, HTTP/2
--- init
main::at_once(1);



=== TEST 5: Vary: *
--- init
main::star();



=== TEST 6: purge and invalidation drop every variant
--- init
main::dropped();
