# usage: prove t/http/050-concurrency.t
# 200 clients at once, 800 downloads in all, while another process keeps
# overwriting and deleting the same keys over HTTP and memcache: every
# body is one version byte for byte (pins keep what is being sent), or a
# clean 404; nothing is cut, no pin or buffer is left behind.  Then 40
# PUTs at once, more than the tx buffers of the worker.
BEGIN { push @INC, 't/lib' }
use GoblinTest;
use Test::Nginx::Socket;
use File::Temp ();
use IO::Select;
use IO::Socket::INET;
use JSON::PP ();
use POSIX qw(_exit SIGTERM WNOHANG);
use Time::HiRes qw(sleep time);

our @Sizes = (262144, 262145, 1060921, 4194304);
our $Clients = 200;
our $Downloads = 800;     # at least: downloads go on until the writer ends
our $WriterOps = 30;

our %Versions;      # key => [v0, v1]
for my $i (0 .. 7) {
    my $size = $Sizes[$i % @Sizes];
    $Versions{"c$i"} = [payload($size, 1000 + $i), payload($size, 2000 + $i)];
}

goblin_start();
mc_set($_, $Versions{$_}[0]) eq 'STORED' or die "set $_\n" for keys %Versions;
goblin_defaults();
goblin_config(<<'END');
    location /obj/ {
        goblin;
        goblin_methods GET PUT DELETE;
        client_max_body_size 8m;
    }
    location = /status {
        goblin_status;
    }
END
goblin_case_checks(request => 'GET /status', error_code => 200,
                   response_body_like => '"cut_responses": 0');

worker_connections(1024);
repeat_each(1);
plan tests => goblin_plan(10);
no_shuffle();

my $port;           # the server's, set by each case
my @keys = sort keys %Versions;
my ($opsfh, $opsfile) = File::Temp::tempfile('goblin-writer.XXXXXX',
                                             DIR => '/var/tmp', UNLINK => 1);

# the writer: $WriterOps overwrites (HTTP PUT or memcache set) and deletes
my $writer;
sub start_writer () {
    $writer = fork() // die "fork: $!\n";
    if ($writer == 0) {
        srand($$);
        my $stop = 0;
        $SIG{TERM} = sub { $stop = 1 };
        my $ops = 0;
        while (!$stop && $ops < $WriterOps) {
            my $k = $keys[rand @keys];
            my $v = $Versions{$k}[rand 2];
            my $r = rand;
            if ($r < 0.2) {
                http_request($port, 'DELETE', "/obj/$k");
            } elsif ($r < 0.6) {
                http_request($port, 'PUT', "/obj/$k", body => $v);
            } else {
                mc_set($k, $v);
            }
            $ops++;
        }
        print $opsfh $ops;
        close $opsfh;
        _exit(0);
    }
}

# the readers: one select loop, each body checked as it arrives against
# the versions it can still be
my %res = (exact => 0, cut => 0, missing => 0, bad => 0);
my (%conn, $started);
my $sel = IO::Select->new;

sub start_one () {
    my $k = $keys[rand @keys];
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port,
                                  Timeout => 10) or die "connect: $!\n";
    $s->blocking(0);
    syswrite $s, "GET /obj/$k HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    $conn{fileno $s} = { s => $s, key => $k, head => '', off => 0,
                         cands => [@{ $Versions{$k} }] };
    $sel->add($s);
    $started++;
}

sub finish ($$) {
    my ($c, $what) = @_;
    $res{$what}++;
    $sel->remove($c->{s});
    delete $conn{fileno $c->{s}};
    close $c->{s};
    start_one() if $started < $Downloads || writer_running();
}

my $writer_done;
sub writer_running () {
    $writer_done ||= waitpid($writer, WNOHANG) == $writer;
    return !$writer_done;
}

# ---- the cases, run from the blocks (nginx restarts for each) ----

# 200 clients at once, 800 downloads in all, while the writer overwrites
# and deletes: every body one whole version or a clean 404.  (4 tests)
sub downloads () {
    $port = server_port();
    start_writer();
    my $t0 = time;
    start_one() for 1 .. $Clients;
    while ($sel->count && time - $t0 < 120) {
        for my $s ($sel->can_read(10)) {
            my $c = $conn{fileno $s};
            my $n = sysread $s, my $data, 262144;
            next if !defined $n && $!{EAGAIN};
            if ($n) {
                body_feed($c, $data);
                next;
            }
            # the connection is over
            finish($c, body_verdict($c));
        }
    }
    my $secs = time - $t0;

    if (!$writer_done) {
        kill SIGTERM, $writer;
        waitpid($writer, 0);
    }
    my $ops = do { local (@ARGV, $/) = ($opsfile); <> } // 0;

    ok($started >= $Downloads, "$started downloads, $Clients at a time");
    is($res{bad}, 0, 'every body is one whole version, byte for byte');
    is($res{exact} + $res{missing}, $started,
       "none cut: $res{exact} whole, $res{missing} deleted meanwhile, "
       . sprintf('%.1fs', $secs));
    ok($res{exact} > $Downloads / 4 && $ops == $WriterOps,
       "$ops writes and deletes ran alongside the downloads");
}

# 40 PUTs at once, more than a worker has tx buffers: each waits its
# turn, none starves the writers of the others; nothing cut, no pin
# left.  (5 tests)
sub puts_at_once () {
    $port = server_port();
    my %put;
    my $wsel = IO::Select->new;
    for my $i (1 .. 40) {
        my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port,
                                      Timeout => 10) or die "connect: $!\n";
        $s->blocking(0);
        my $v = payload(2097152, 3000 + $i);
        $put{fileno $s} = {
            s => $s, i => $i, resp => '',
            out => "PUT /obj/p$i HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                   . "Content-Length: " . length($v) . "\r\n\r\n$v",
        };
        $wsel->add($s);
    }
    my $rsel = IO::Select->new(map { $_->{s} } values %put);
    my $t0 = time;
    while ($rsel->count && time - $t0 < 60) {
        my ($r, $w) = IO::Select->select($rsel, $wsel, undef, 10);
        for my $s (@{ $w || [] }) {
            my $p = $put{fileno $s};
            my $n = syswrite $s, $p->{out}, 1 << 20;
            substr($p->{out}, 0, $n) = '' if $n;
            $wsel->remove($s) if $p->{out} eq '' || !defined $n && !$!{EAGAIN};
        }
        for my $s (@{ $r || [] }) {
            my $p = $put{fileno $s};
            my $n = sysread $s, $p->{resp}, 4096, length $p->{resp};
            next if !defined $n && $!{EAGAIN};
            if (!$n) {
                $rsel->remove($s);
                $wsel->remove($s) if $wsel->exists($s);
                close $s;
            }
        }
    }
    my @codes = map { $_->{resp} =~ m{^HTTP/1\.1 (\d+)} ? $1 : 0 } values %put;
    is(scalar(grep { $_ == 201 } @codes), 40, '40 PUTs at once: all 201')
        or diag("statuses: @codes");
    is(scalar(grep { (http_request($port, 'GET', "/obj/p$_"))[2]
                     eq payload(2097152, 3000 + $_) } 1 .. 40),
       40, 'and all 40 objects read back byte for byte');

    my ($st, $h, $body) = http_request($port, 'GET', '/status');
    my $j = eval { JSON::PP::decode_json($body) } || {};
    is($j->{module}{cut_responses}, 0, 'the module cut no response');
    ok(($j->{module}{tx_waits} // 0) > 0,
       'PUTs queued for tx buffers (' . ($j->{module}{tx_waits} // 0) . ')');
    my $gs = goblin_stats();
    ok($gs->{pins} == 0 && $gs->{checksum_errors} == 0,
       "no pin left ($gs->{pins}), no checksum error ($gs->{checksum_errors})");
}

run_tests();
goblin_stop();

__DATA__

=== TEST 1: the objects are there
--- request
GET /obj/c0
--- response_body eval
$main::Versions{c0}[0]
--- no_error_log
[alert]
[crit]



=== TEST 2: 800 downloads, 200 at a time, while the keys are overwritten
--- init
main::downloads();



=== TEST 3: 40 PUTs at once, more than the worker's tx buffers
--- init
main::puts_at_once();
