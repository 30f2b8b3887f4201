# usage: prove t/http/090-direct.t
# Disk bytes reach nginx without a copy (issue 11): goblin-store reads
# disk chunks straight into the ring's rx buffers (storaged/link/link_direct.c)
# and nginx sends them from there.  Objects of 1 MiB, 3 MiB + 12345 bytes
# and 8 MiB (RAM head 256K, SSD prefix to 1.25M, HDD tail):
#  - whole GETs are byte-exact, every disk byte staged was read in place
#    (ring_direct_bytes = ring_read_bytes = the module's staged_bytes) and
#    each GET's READ went direct;
#  - Ranges that start inside a chunk (after the head, in the SSD prefix,
#    in the HDD tail over a chunk border, a suffix) are byte-exact and in
#    place: a DATA may start before the range, nginx skips those bytes;
#  - head-miss objects (a restart leaves no head in RAM): the head comes
#    over the ring, in place too, byte-exact;
#  - a client that leaves mid-transfer gives every pin and rx buffer back,
#    and GETs after it (and six at once) are byte-exact and direct.
BEGIN { push @INC, 't/lib' }
use GoblinTest;
use Test::Nginx::Socket;
use IO::Socket::INET;
use JSON::PP ();
use POSIX qw(SIGTERM);

our %Obj = (one => payload(1 << 20, 11), odd => payload(3 * (1 << 20) + 12345, 12),
            big => payload(8 << 20, 13));
our @Args = ('--memory', '2M', '--block', '2M');        # 8 head slots

goblin_start(args => \@Args);
for my $k (sort keys %Obj) {
    mc_set($k, $Obj{$k}) eq 'STORED' or die "memcache set $k failed\n";
}
goblin_defaults();
goblin_case_checks(request => 'GET /status', error_code => 200,
                   response_body_like => '"link": "up"');
goblin_config(<<'END');
    location /obj/ {
        goblin;
    }
    location = /status {
        goblin_status;
    }
END

repeat_each(1);
plan tests => goblin_plan(17);
no_shuffle();

sub status () { http_status(server_port()) }
sub around (&) { status_deltas(server_port(), $_[0]) }

# whether <d> says every staged byte went in place, and <n> of them, but
# for those the RAM chunk cache held (chunk_hit_bytes: copied from the
# region, as heads are) (nginx may still copy some aside for a client slow
# to take earlier bytes: spilled_bytes, its own policy, shown but not held
# to 0)
sub in_place ($$) {
    my ($d, $n) = @_;
    my $direct = $d->{ring_direct_bytes} // -1;
    return $direct == $n - ($d->{chunk_hit_bytes} // 0)
        && ($d->{ring_read_bytes} // -1) == $n
        && ($d->{staged_bytes} // -1) == $n;
}

sub show ($) {
    my $d = shift;
    join ', ', map { "$_ " . ($d->{$_} // 'none') }
        qw(ring_direct_bytes chunk_hit_bytes ring_read_bytes staged_bytes
           spilled_bytes ring_reads ring_direct_reads);
}

our $Head = 262144;

# ---- the cases, run from the blocks (nginx restarts for each) ----

# Whole GETs: byte-exact, every disk byte read in place.  (3 tests)
sub whole_gets () {
    my $port = server_port();
    for my $k (qw(one odd big)) {
        my ($d, $st, $h, $body) = around { http_request($port, 'GET', "/obj/$k") };
        my $disk = length($Obj{$k}) - $Head;
        ok($st == 200 && $body eq $Obj{$k}
           && in_place($d, $disk) && $d->{ring_direct_reads} == $d->{ring_reads}
           && $d->{ring_reads} == 1,
           "GET $k: byte-exact, its $disk disk bytes read in place (" . show($d) . ')');
    }
}

# Ranges that start inside a chunk: byte-exact, in place.  (4 tests)
sub ranges_inside_a_chunk () {
    my $port = server_port();
    for my $r ([262000, 300000], [300000, 700001], [3000000, 5100000],
               [8388508, 8388607]) {
        my ($a, $b) = @$r;
        my ($d, $st, $h, $body) = around {
            http_request($port, 'GET', '/obj/big', headers => ["Range: bytes=$a-$b"])
        };
        my $disk = $b + 1 - ($a > $Head ? $a : $Head);
        ok($st == 206 && $body eq substr($Obj{big}, $a, $b - $a + 1)
           && in_place($d, $disk),
           "Range $a-$b: byte-exact, $disk disk bytes in place (" . show($d) . ')');
    }
}

# Head-miss objects (a clean restart leaves no head in RAM): the head
# comes over the ring, in place too, byte-exact.  (4 tests)
sub head_misses () {
    my $port = server_port();
    goblin_kill(SIGTERM) == 0 or die "goblin-store did not stop cleanly\n";
    goblin_start(args => \@Args);
    ok(wait_for(sub { (status()->{link} // '') eq 'up' }, 15),
       'the worker reattached to the restarted daemon');
    for my $k (qw(odd big)) {
        my ($d, $st, $h, $body) = around { http_request($port, 'GET', "/obj/$k") };
        ok($st == 200 && $body eq $Obj{$k} && ($d->{head_bytes} // -1) == 0
           && in_place($d, length $Obj{$k}),
           "head-miss GET $k: byte-exact, all of it in place (" . show($d) . ')');
    }
    my ($d, $st, $h, $body) = around {
        http_request($port, 'GET', '/obj/one', headers => ['Range: bytes=100-200099'])
    };
    ok($st == 206 && $body eq substr($Obj{one}, 100, 200000) && in_place($d, 200000),
       'a range inside the head of a head-miss object, in place (' . show($d) . ')');
}

# A client that leaves mid-transfer gives every pin and rx buffer back;
# GETs after it, and six at once, are byte-exact and direct.  (5 tests)
sub client_leaves () {
    my $port = server_port();
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port)
        or die "connect: $!\n";
    print $s "GET /obj/big HTTP/1.1\r\nHost: localhost\r\n\r\n";
    my ($got, $buf) = (0, '');
    while ($got < 300000) {
        my $n = sysread($s, $buf, 65536);
        last unless $n;
        $got += $n;
    }
    close $s;
    ok($got >= 300000, "the client read $got bytes, then left");
    ok(wait_for(sub { my $t = status();
                      ($t->{storaged}{ring_pins} // -1) == 0
                      && ($t->{module}{rx_held} // -1) == 0 }, 15),
       'its pin and every rx buffer came back');
    my ($d, $st, $h, $body) = around { http_request($port, 'GET', '/obj/big') };
    ok($st == 200 && $body eq $Obj{big} && in_place($d, length($Obj{big}) - $Head),
       'a GET after it is byte-exact and in place (' . show($d) . ')');

    # six at once: each child writes "ok" or "bad" to its pipe
    my @kids;
    for my $i (1 .. 6) {
        my $k = (qw(one odd big))[$i % 3];
        pipe(my $r, my $w) or die "pipe: $!\n";
        my $pid = fork() // die "fork: $!\n";
        if ($pid == 0) {
            close $r;
            my ($st, $h, $body) = eval { http_request($port, 'GET', "/obj/$k",
                                                      timeout => 20) };
            syswrite($w, ($st // 0) == 200 && ($body // '') eq $Obj{$k} ? 'ok'
                         : "bad $k " . ($st // 'none') . ' ' . length($body // ''));
            POSIX::_exit(0);
        }
        close $w;
        push @kids, [$pid, $r];
    }
    my $exact = 0;
    for (@kids) {
        my ($pid, $r) = @$_;
        local $/;
        my $said = <$r> // '';
        $exact++ if $said eq 'ok';
        diag($said) if $said ne 'ok';
        waitpid($pid, 0);
    }
    is($exact, 6, 'six GETs at once: every one byte-exact');
    my $t = status();
    ok(($t->{storaged}{ring_direct_bytes} // 0) > 0
       && ($t->{storaged}{ring_pins} // -1) == 0,
       'direct bytes so far: ' . ($t->{storaged}{ring_direct_bytes} // 'none')
       . ', no pin left');
}

run_tests();
goblin_stop();

__DATA__

=== TEST 1: the status page answers
--- request
GET /status
--- error_code: 200



=== TEST 2: whole GETs, every disk byte read in place
--- init
main::whole_gets();



=== TEST 3: ranges that start inside a chunk, in place
--- init
main::ranges_inside_a_chunk();



=== TEST 4: head-miss objects after a clean restart
--- init
main::head_misses();



=== TEST 5: a client that leaves mid-transfer gives everything back
--- init
main::client_leaves();
