# usage: prove t/http/040-storaged-dies.t
# goblin-store killed in the middle of a 33 MiB download: the response is
# cut cleanly (a correct prefix, then the connection closes), new requests
# get 503 until the worker has reconnected by itself to a restarted
# daemon; one still waiting for its lookup gets 502.  An nginx worker
# killed while it holds pins: the daemon releases them.
BEGIN { push @INC, 't/lib' }
use GoblinTest;
use Test::Nginx::Socket;
use IO::Select;
use IO::Socket::INET;
use JSON::PP ();
use POSIX qw(SIGKILL SIGSTOP);
use Time::HiRes qw(sleep time);

our $Size = 34603008;
our $Big = payload($Size);

goblin_start();
mc_set('big', $Big) eq 'STORED' or die "memcache set failed\n";
goblin_defaults();
goblin_config(<<'END');
    location /obj/ {
        goblin;
        goblin_methods GET PUT;
    }
    location = /status {
        goblin_status;
    }
END
goblin_case_checks(request => 'GET /status', error_code => 200,
                   response_body_like => '"link": "up"');

master_on();
workers(1);
repeat_each(1);
plan tests => goblin_plan(18);
no_shuffle();

# Sends a GET for <path> and reads the headers and at least <want> body
# bytes; the caller goes on reading (or not) from the socket.
sub start_download ($$) {
    my ($path, $want) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                  PeerPort => server_port(),
                                  Timeout => 10) or die "connect: $!\n";
    print $s "GET $path HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
    my $buf = '';
    my $sel = IO::Select->new($s);
    while ($sel->can_read(10)) {
        last unless sysread $s, $buf, 65536, length $buf;
        my $i = index $buf, "\r\n\r\n";
        last if $i >= 0 && length($buf) - $i - 4 >= $want;
    }
    my ($head, $body) = split /\r\n\r\n/, $buf, 2;
    return ($s, $head // '', $body // '');
}

sub read_rest ($) {
    my $s = shift;
    my $buf = '';
    my $sel = IO::Select->new($s);
    while ($sel->can_read(20)) {
        my $n = sysread $s, $buf, 1 << 20, length $buf;
        last unless $n;
    }
    close $s;
    return $buf;
}

sub link_state () {
    my ($st, $h, $body) = http_request(server_port(), 'GET', '/status');
    my $j = eval { JSON::PP::decode_json($body) } || {};
    return $j->{link} // '';
}

# Whether every thread of <pid> is stopped (state T in /proc/PID/task/*/stat).
sub all_stopped ($) {
    my $pid = shift;
    my @tasks = glob "/proc/$pid/task/*/stat";
    return 0 unless @tasks;
    for my $t (@tasks) {
        open my $in, '<', $t or return 0;
        my $line = <$in> // '';
        close $in;
        return 0 unless $line =~ /^\d+ \(.*\) T /s;
    }
    return 1;
}

# Whether the server side of the connection 127.0.0.1:<port> <- <cport>
# exists with nothing left in its receive queue (/proc/net/tcp).
sub server_read ($$) {
    my ($port, $cport) = @_;
    open my $in, '<', '/proc/net/tcp' or return 0;
    my $want = sprintf ':%04X ', $port;
    my $peer = sprintf ':%04X ', $cport;
    while (my $line = <$in>) {
        my @f = split ' ', $line;
        next unless @f > 4 && "$f[1] " =~ /\Q$want\E$/
                    && "$f[2] " =~ /\Q$peer\E$/;
        my ($tx, $rx) = split /:/, $f[4];
        return hex($rx) == 0;
    }
    return 0;
}

# ---- the cases, run from the blocks (nginx restarts for each) ----

# Killed mid-transfer: the response is cut cleanly; new requests get 503
# while it is away; the worker reattaches to the restarted daemon by
# itself.  (8 tests)
sub killed_mid_transfer () {
    my $port = server_port();
    my ($s, $head, $body) = start_download('/obj/big', 262144);
    like($head, qr{^HTTP/1\.1 200 .*Content-Length: $Size}s,
         'the download started: 200 with the full length');
    goblin_kill(SIGKILL);
    $body .= read_rest($s);
    ok(length $body < $Size && length $body >= 262144,
       'the response was cut (' . length($body) . " of $Size bytes)");
    ok(substr($Big, 0, length $body) eq $body,
       'every byte before the cut is right');

    ok(wait_for(sub { link_state() eq 'down' }, 10), 'the worker saw it go');
    my ($st) = http_request($port, 'GET', '/obj/big');
    is($st, 503, 'a new request meanwhile: 503');

    goblin_start(fresh => 1);
    ok(wait_for(sub { link_state() eq 'up' }, 10),
       'the worker reattached to the restarted daemon by itself');
    ($st) = http_request($port, 'PUT', '/obj/again', body => 'back again');
    is($st, 201, 'PUT after the restart');
    my ($st2, $h2, $b2) = http_request($port, 'GET', '/obj/again');
    ok($st2 == 200 && $b2 eq 'back again', 'GET after the restart');
}

# A request still waiting for its lookup when the daemon dies: 502.  The
# GET goes out only once every thread of the daemon is stopped, and the
# daemon is killed only once nginx has read the request (its socket's
# receive queue is empty), so the lookup is on the ring by then.  (4 tests)
sub dies_under_a_lookup () {
    my $port = server_port();
    kill SIGSTOP, goblin_pid();
    ok(wait_for(sub { all_stopped(goblin_pid()) }, 10),
       'every thread of the daemon is stopped');
    my $w = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port,
                                  Timeout => 10) or die "connect: $!\n";
    $w->autoflush(1);
    print $w "GET /obj/again HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
    ok(wait_for(sub { server_read($port, $w->sockport) }, 10),
       'nginx read the request');
    goblin_kill(SIGKILL);
    like(read_rest($w), qr{^HTTP/1\.1 502 }, 'a request waiting on it: 502');
    goblin_start(fresh => 1);
    ok(wait_for(sub { link_state() eq 'up' }, 10), 'reattached again');
}

# A worker dies holding pins: the daemon releases them, the next worker
# attaches and serves.  (5 tests)
sub worker_dies_holding_pins () {
    my $port = server_port();
    mc_set('big', $Big) eq 'STORED' or die "memcache set failed\n";
    my @slow = map { (start_download('/obj/big', 65536))[0] } 1 .. 3;
    ok(wait_for(sub { goblin_stats()->{pins} >= 3 }, 10),
       'three stalled downloads hold pins');
    open my $pf, '<', server_root() . '/logs/nginx.pid' or die "pid file: $!\n";
    my $master = <$pf>;
    chomp $master;
    my @workers = nginx_workers($master);
    is(scalar @workers, 1, 'one worker');
    kill SIGKILL, @workers;
    ok(wait_for(sub { goblin_stats()->{pins} == 0 }, 10),
       "the daemon released the dead worker's pins");
    close $_ for @slow;
    ok(wait_for(sub { link_state() eq 'up' }, 10),
       'the new worker attached');
    my ($st) = http_request($port, 'PUT', '/obj/again', body => 'back again');
    my ($st2, $h2, $b2) = http_request($port, 'GET', '/obj/again');
    ok($st == 201 && $st2 == 200 && $b2 eq 'back again', 'and serves');
}

run_tests();
goblin_stop();

__DATA__

=== TEST 1: the 33 MiB object is there before anything dies
--- request
HEAD /obj/big
--- response_headers
Content-Length: 34603008
--- no_error_log
[alert]
[crit]



=== TEST 2: killed mid-transfer, 503 while away, back by itself
--- init
main::killed_mid_transfer();



=== TEST 3: a request waiting for its lookup when the daemon dies: 502
--- init
main::dies_under_a_lookup();



=== TEST 4: a worker dies holding pins
--- init
main::worker_dies_holding_pins();
