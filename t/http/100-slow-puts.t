# usage: prove t/http/100-slow-puts.t
# Slow PUT bodies hold nothing other PUTs need (issue 21, defect 3).  A
# body is read into the heap until a tx buffer's worth is in, so clients
# that send a byte and stop take no tx buffer; one that stalls after that
# holds its buffer goblin_body_timeout at most, a byte now and then or
# not; a PUT that finds every buffer held waits goblin_put_wait, behind
# goblin_put_queue others at most, and gets 503 with Retry-After.  After
# each case every PUT and GET is byte-exact and goblin_status shows every
# buffer back (tx_held, tx_waiters, put_heap_bytes, rx_held 0) and
# storaged no pin and no admitted byte left.
BEGIN { push @INC, 't/lib' }
use GoblinTest;
use Test::Nginx::Socket;
use IO::Select;
use IO::Socket::INET;
use Time::HiRes qw(time sleep);

# the tx buffers of a worker's ring (nginx asks for the default)
our $Tx = do {
    open my $h, '<', 'shared/ring-t.h' or die "shared/ring-t.h: $!\n";
    my ($n) = join('', <$h>) =~ /#define RING_TX_DEFAULT\s+(\d+)u/
        or die "no RING_TX_DEFAULT in shared/ring-t.h\n";
    $n;
};
our $Buf = 256 * 1024;      # RING_BUF_SIZE: one tx buffer

$SIG{PIPE} = 'IGNORE';      # nginx may answer before it read a body

goblin_start();
goblin_defaults();

repeat_each(1);
no_shuffle();
plan tests => goblin_plan(11 + 11 + 22 + 1);   # + goblin_stop
run_tests();

goblin_stop();

# ---- clients ----

sub status () { http_status(server_port()) }

# A PUT of <size> bytes (payload <seed>) that sends its headers and the
# first <send> body bytes, then nothing more unless told.
sub slow_put ($$$$) {
    my ($path, $size, $seed, $send) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                  PeerPort => server_port(), Timeout => 10)
        or die "connect: $!\n";
    $s->blocking(0);
    return { s => $s, out => "PUT $path HTTP/1.1\r\nHost: x\r\n"
                             . "Content-Length: $size\r\n\r\n"
                             . substr(payload($size, $seed), 0, $send) };
}

# Writes what the slow clients have to send (up to 20 s); whether all went.
sub send_all (@) {
    my @c = grep { length $_->{out} } @_;
    my $deadline = time + 20;
    while (@c && time < $deadline) {
        my $sel = IO::Select->new(map { $_->{s} } @c);
        for my $s ($sel->can_write(0.2)) {
            my ($c) = grep { $_->{s} == $s } @c;
            my $n = syswrite $s, $c->{out};
            substr($c->{out}, 0, $n) = '' if $n;
        }
        @c = grep { length $_->{out} } @c;
    }
    return !@c;
}

# Requests at once, each [method, path, body]: for each, [status,
# {lc header => value}, body, seconds to its answer]; status 0 when none
# came in <secs>.
sub requests ($@) {
    my ($secs, @reqs) = @_;
    my (@r, %by);
    for my $q (@reqs) {
        my ($method, $path, $body) = @$q;
        my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                      PeerPort => server_port(),
                                      Timeout => 10) or die "connect: $!\n";
        $s->blocking(0);
        my $c = { s => $s, in => '', t => 0,
                  out => "$method $path HTTP/1.1\r\nHost: x\r\n"
                         . "Connection: close\r\n"
                         . (defined $body ? 'Content-Length: '
                                            . length($body) . "\r\n" : '')
                         . "\r\n" . ($body // '') };
        push @r, $c;
        $by{fileno $s} = $c;
    }
    my $t0 = time;
    my $rsel = IO::Select->new(map { $_->{s} } @r);
    my $wsel = IO::Select->new(map { $_->{s} } @r);
    while ($rsel->count && time - $t0 < $secs) {
        my ($rd, $wr) = IO::Select->select($rsel, $wsel->count ? $wsel : undef,
                                           undef, 0.1);
        for my $s (@{ $wr || [] }) {
            my $c = $by{fileno $s};
            my $n = syswrite $s, $c->{out}, 1 << 20;
            substr($c->{out}, 0, $n) = '' if $n;
            $wsel->remove($s) if !length $c->{out} || !defined $n
                                 && !$!{EAGAIN};
        }
        for my $s (@{ $rd || [] }) {
            my $c = $by{fileno $s};
            my $n = sysread $s, $c->{in}, 1 << 20, length $c->{in};
            next if !defined $n && $!{EAGAIN};
            next if $n;
            $c->{t} = time - $t0;
            $rsel->remove($s);
            $wsel->remove($s) if $wsel->exists($s);
        }
    }
    my @out;
    for my $c (@r) {
        close $c->{s};
        my ($head, $body) = split /\r\n\r\n/, $c->{in}, 2;
        my ($st) = ($head // '') =~ m{^HTTP/1\.1 (\d+)};
        my %h = map { /^([^:]+):\s*(.*)$/ ? (lc $1 => $2) : () }
                split /\r\n/, $head // '';
        push @out, [$st // 0, \%h, $body // '', $c->{t} || $secs];
    }
    return @out;
}

sub put ($$) {
    my ($path, $data) = @_;
    return (requests(10, ['PUT', $path, $data]))[0];
}

sub get_body ($) { (requests(20, ['GET', shift]))[0][2] }

# Once the slow clients are gone: every buffer and pin back, both sides.
sub all_back ($) {
    my $what = shift;
    my $j;
    my $back = wait_for {
        $j = status();
        my $m = $j->{module} || {};
        ($m->{tx_held} // -1) == 0 && ($m->{tx_waiters} // -1) == 0
            && ($m->{put_heap_bytes} // -1) == 0 && ($m->{rx_held} // -1) == 0
            && ($j->{storaged}{ring_pins} // -1) == 0
    } 15;
    my $gs = goblin_stats();
    ok($back && $gs->{admission_bytes} == 0,
       "$what: every tx buffer, heap byte and pin back, nothing admitted "
       . "left") or diag(JSON::PP->new->canonical->encode($j->{module} || {})
                         . " admission_bytes $gs->{admission_bytes}");
}

# A PUT and a GET after it, byte for byte.
sub put_get ($$$) {
    my ($what, $path, $data) = @_;
    my $r = put($path, $data);
    ok($r->[0] == 201 || $r->[0] == 204,
       "$what: a " . length($data) . "-byte PUT answered $r->[0]");
    ok(get_body($path) eq $data, "$what: and read back byte for byte");
}

# <n> PUTs of <size> bytes to <prefix>1 .. <prefix><n> (payloads <seed> +
# 1 .. <n>) that send their first <send> body bytes and stall; returns
# whether those all went, then the PUTs.
sub stall_puts ($$$$$) {
    my ($prefix, $n, $size, $seed, $send) = @_;
    my @slow = map { slow_put("$prefix$_", $size, $seed + $_, $send) } 1 .. $n;
    return (send_all(@slow), @slow);
}

# PUTs of each of <sizes> bytes to <prefix><size> (payload <seed> + size)
# beside stalled ones: 201, and read back byte for byte.  (2 tests a size)
sub puts_beside ($$@) {
    my ($prefix, $seed, @sizes) = @_;
    for my $size (@sizes) {
        my $v = payload($size, $seed + $size);
        my $r = put("$prefix$size", $v);
        is($r->[0], 201, "a $size-byte PUT beside them: 201 in "
                         . sprintf('%.2fs', $r->[3]));
        ok(get_body("$prefix$size") eq $v, 'read back byte for byte');
    }
}

# The stalled PUTs' first key, <path>, was not stored.  (1 test)
sub none_stored ($$) {
    my ($path, $what) = @_;
    is((requests(10, ['GET', $path]))[0][0], 404, "none of $what was stored");
}

# ---- the cases, run from the blocks (each with its own nginx.conf) ----

# 40 PUTs that sent one body byte each: they hold no tx buffer, and PUTs
# small and large go on as if they were not there.  (11 tests)
sub one_byte_each () {
    my $before = status();
    my (undef, @slow) = stall_puts('/obj/one', 40, 1048576, 0, 1);
    my $in = wait_for { (status()->{module}{requests} // 0)
                        - $before->{module}{requests} >= 40 } 15;
    ok($in, '40 PUTs sent a body byte each');
    my $m = status()->{module};
    is($m->{put_heap_bytes}, 40, 'their 40 bytes wait in the heap');
    is($m->{tx_held}, 0, 'and they hold no tx buffer');
    puts_beside('/obj/beside', 500, 1048576, 1000);
    close $_->{s} for @slow;
    all_back('the 40 closed');
    put_get('after the 40', '/obj/after-one', payload(3000000, 31));
    none_stored('/obj/one1', 'the 40');
}

# 8 PUTs of 300 KB that stopped 1000 bytes short, each past its first tx
# buffer: PUTs over a buffer's worth are served with the buffers left,
# and the 8 closed leave nothing behind.  (11 tests)
sub stopped_short () {
    my $size = 300 * 1024;
    my $before = status();
    my ($sent, @slow) = stall_puts('/obj/short', 8, $size, 40, $size - 1000);
    my $in = wait_for { (status()->{module}{put_bytes} // 0)
                        - $before->{module}{put_bytes} >= 8 * $Buf } 15;
    ok($sent && $in,
       '8 PUTs of 300 KB stopped 1000 bytes short, past a tx buffer each');
    is(status()->{module}{tx_held}, 8, 'they hold a tx buffer each');
    puts_beside('/obj/past', 900, 1048576, 100000);
    close $_->{s} for @slow;
    all_back('the 8 closed');
    is(status()->{storaged}{ring_store_errors}
       - $before->{storaged}{ring_store_errors}, 8,
       'storaged aborted their 8 writers');
    put_get('after the 8', '/obj/after-short', payload(2000000, 32));
    none_stored('/obj/short1', 'the 8');
}

# Every tx buffer held by a stalled PUT past its first buffer (one of them
# sends a byte every 0.3 s, which keeps client_body_timeout away): later
# PUTs get 503 with Retry-After, at once past goblin_put_queue (2)
# waiting, else after goblin_put_wait (1s); after goblin_body_timeout (5s)
# nginx closes the stalled ones and everything works; a PUT that waits
# (in /wait/, goblin_put_wait 10s) gets the first buffer to come free.
# (22 tests)
sub all_held () {
    my $t_start = time;
    my $before = status();
    my ($sent, @slow) = stall_puts('/obj/held', $Tx, 600000, 60, 300000);
    my $held = wait_for { (status()->{module}{tx_held} // 0) == $Tx } 15;
    ok($sent && $held, "$Tx stalled PUTs hold every tx buffer");
    my $v = payload(300000, 77);
    my @r = requests(15, map { ['PUT', "/obj/late$_", $v] } 1 .. 3);
    my @late = sort { $a->[3] <=> $b->[3] } @r;
    is(join(' ', map { $_->[0] } @r), '503 503 503',
       'the 3 PUTs after them: 503 each');
    is(scalar(grep { ($_->[1]{'retry-after'} // '') eq '1' } @r), 3,
       'with Retry-After: 1');
    ok($late[0][3] < $late[1][3] && $late[1][3] >= 0.9,
       sprintf('one at once (%.2fs), the queued two after goblin_put_wait '
               . '(%.2fs, %.2fs)', map { $_->[3] } @late));
    my $m = status()->{module};
    is($m->{puts_rejected} - $before->{module}{puts_rejected}, 3,
       'puts_rejected counts them');
    is($m->{tx_waiters}, 0, 'none waits now');
    none_stored('/obj/late1', 'them');

    # goblin_body_timeout: the stalled ones are closed, the trickler too
    my $t0 = time;
    my %open = map { fileno($_->{s}) => $_ } @slow;
    my $trickle = $slow[0];
    my $next = time;
    while (%open && time - $t0 < 20) {
        if (time >= $next && $open{fileno $trickle->{s}}) {
            syswrite $trickle->{s}, 'x';
            $next = time + 0.3;
        }
        for my $s (IO::Select->new(map { $_->{s} } values %open)
                   ->can_read(0.1)) {
            my $n = sysread $s, my $buf, 65536;
            delete $open{fileno $s} if !$n && !(!defined $n && $!{EAGAIN});
        }
    }
    my $secs = time - $t_start;
    is(scalar(keys %open), 0, "nginx closed all $Tx stalled PUTs, the "
                              . "trickler too");
    ok($secs >= 5, sprintf('not before goblin_body_timeout (%.1fs after '
                           . 'they started)', $secs));
    $m = status()->{module};
    is($m->{body_timeouts} - $before->{module}{body_timeouts}, $Tx,
       "body_timeouts counts the $Tx");
    close $_->{s} for @slow;
    all_back("the $Tx timed out");
    is(status()->{storaged}{ring_store_errors}
       - $before->{storaged}{ring_store_errors}, $Tx,
       "storaged aborted their $Tx writers");
    none_stored('/obj/held1', 'them');
    put_get("after the $Tx", '/obj/after-held', payload(5000000, 33));
    put_get("after the $Tx", '/obj/after-held-small', payload(5000, 34));

    # a PUT that waits gets a tx buffer as soon as one comes free
    ($sent, my @hold) = stall_puts('/obj/held-again', $Tx, 600000, 80, 300000);
    $held = wait_for { (status()->{module}{tx_held} // 0) == $Tx } 15;
    ok($sent && $held, "$Tx stalled PUTs hold every tx buffer again");
    my $w = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                  PeerPort => server_port(), Timeout => 10)
        or die "connect: $!\n";
    my $small = payload(20000, 35);
    print $w "PUT /wait/waited HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
             . "Content-Length: 20000\r\n\r\n$small";
    my $waits = wait_for { (status()->{module}{tx_waiters} // 0) == 1 } 5;
    ok($waits, 'a PUT waits for a tx buffer');
    close $hold[0]{s};
    my $resp = '';
    IO::Select->new($w)->can_read(10)
        and sysread $w, $resp, 4096;
    like($resp, qr{^HTTP/1\.1 201}, 'and gets the first one to come free');
    close $w;
    close $_->{s} for @hold;
    all_back("the $Tx closed");
    ok(get_body('/obj/waited') eq $small, 'it stored every byte');
}

__DATA__

=== TEST 1: PUTs that sent one byte, then PUTs stopped short of their end
--- config
    location /obj/ {
        goblin;
        goblin_methods GET PUT DELETE;
        client_max_body_size 8m;
    }
    location = /status {
        goblin_status;
    }
--- init
main::one_byte_each();
main::stopped_short();
--- request
GET /status
--- error_code: 200
--- response_body_like: "tx_held": 0
--- no_error_log
[alert]
[crit]



=== TEST 2: every tx buffer held by stalled PUTs
--- config
    location /obj/ {
        goblin;
        goblin_methods GET PUT DELETE;
        client_max_body_size 8m;
        goblin_put_wait 1s;
        goblin_put_queue 2;
        goblin_body_timeout 5s;
    }
    location /wait/ {
        goblin;
        goblin_methods GET PUT DELETE;
        goblin_put_wait 10s;
    }
    location = /status {
        goblin_status;
    }
--- init
main::all_held();
--- request
GET /status
--- error_code: 200
--- response_body_like: "tx_waiters": 0
--- no_error_log
[alert]
[crit]
