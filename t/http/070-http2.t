# usage: prove t/http/070-http2.t
# Every byte of a tiered 8 MiB object over HTTP/2 and HTTP/1.1, with gzip
# and sub_filter in the filter chain too: fast sequential loops, slow
# clients (curl --limit-rate) alongside fast ones, many streams on one
# connection (Protocol::HTTP2, fast and read slowly; h2load), ranges and a
# PUT over HTTP/2.  Stalled clients hold at most a quarter of the worker's
# rx buffers; no pin is left behind and nothing is logged at [alert] or
# worse.
BEGIN { push @INC, 't/lib' }
use GoblinTest;
use Test::Nginx::Socket;
use Digest::SHA ();
use File::Temp qw(tempdir);
use IO::Socket::INET;
use Socket ();
use IO::Uncompress::Gunzip ();
use JSON::PP ();
use Time::HiRes qw(sleep time);

our $Size = 8388608;
our $Big = payload($Size);
our %Want = (
    obj => Digest::SHA::sha256_hex($Big),
    gz  => Digest::SHA::sha256_hex($Big),
    sub => Digest::SHA::sha256_hex($Big =~ s/00800000/SUBST-OK/gr),
);
my $subs = () = $Big =~ /00800000/g;
$subs >= 100 or die "the payload has $subs sub_filter matches\n";

my $have_curl = `curl --version 2>/dev/null` =~ /\bHTTP2\b/;
my $have_h2load = -x '/usr/bin/h2load';
my $have_h2perl = eval { require Protocol::HTTP2::Client; 1 };
if (!$have_curl || !$have_h2load || !$have_h2perl) {
    Test::More::plan(skip_all => 'needs curl with HTTP/2, h2load and '
                     . 'Protocol::HTTP2 (nghttp2-client '
                     . 'libprotocol-http2-perl; make deps)');
}

# two serving threads: 16 downloads read from disk at once (8 each)
goblin_start(args => [qw(--cores 2)]);
mc_set('big', $Big) eq 'STORED' or die "memcache set failed\n";
$ENV{TEST_NGINX_H2_PORT} = GoblinTest::free_port();
$ENV{TEST_NGINX_SLOW_PORT} = GoblinTest::free_port();
goblin_defaults();
goblin_case_checks(request => 'GET /status', error_code => 200,
                   response_body_like => '"cut_responses": 0',
                   no_error_log => "[alert]\n[crit]\n");
goblin_config(<<'END');
    listen 127.0.0.1:$TEST_NGINX_H2_PORT http2;
    listen 127.0.0.1:$TEST_NGINX_SLOW_PORT sndbuf=32k;
    location /obj/ {
        goblin;
        goblin_methods GET HEAD PUT;
        client_max_body_size 16m;
    }
    location /gz/ {
        goblin;
        gzip on;
        gzip_types *;
        gzip_min_length 0;
    }
    location /sub/ {
        goblin;
        sub_filter 00800000 SUBST-OK;
        sub_filter_once off;
        sub_filter_types *;
    }
    location = /status {
        goblin_status;
    }
END

master_on();
workers(1);
worker_connections(256);
repeat_each(1);
plan tests => goblin_plan(31);
no_shuffle();

my $h2 = "http://127.0.0.1:$ENV{TEST_NGINX_H2_PORT}";
my $dir = tempdir('goblin-h2-test.XXXXXX', DIR => '/var/tmp', CLEANUP => 1);
my $n = 0;

sub sha_file ($) {
    my $f = shift;
    return '' unless -f $f;
    return Digest::SHA->new(256)->addfile($f, 'b')->hexdigest;
}

# Runs the curl command lines <cmds> at once (each adds -o FILE and its
# -w); returns, per command, [exit status, "code version", sha256 of the
# body].
sub curl_all (@) {
    my @jobs;
    for my $c (@_) {
        my $f = "$dir/out." . $n++;
        my $pid = fork() // die "fork: $!\n";
        if ($pid == 0) {
            open STDOUT, '>', "$f.w" or die;
            open STDERR, '>', "$f.err" or die;
            exec 'sh', '-c', "exec curl -sS --max-time 120 -o $f "
                             . "-w '%{http_code} %{http_version}' $c";
            exit 127;
        }
        push @jobs, [$pid, $f];
    }
    my @res;
    for my $j (@jobs) {
        my ($pid, $f) = @$j;
        waitpid($pid, 0);
        my $st = $? >> 8;
        my $w = do { local (@ARGV, $/) = ("$f.w"); <> } // '';
        my $err = do { local (@ARGV, $/) = ("$f.err"); <> } // '';
        push @res, [$st, $w, sha_file($f), $err];
        unlink $f, "$f.w", "$f.err";
    }
    return @res;
}

# Counts the results that are <code> over <version> with the <want> body;
# the first wrong one is shown.
sub right (\@$$$) {
    my ($res, $code, $ver, $want) = @_;
    my $ok = 0;
    my $shown;
    for my $r (@$res) {
        if ($r->[0] == 0 && $r->[1] eq "$code $ver" && $r->[2] eq $want) {
            $ok++;
        } elsif (!$shown++) {
            Test::More::diag("curl exit $r->[0], '$r->[1]', sha256 $r->[2]"
                             . " (want $want) $r->[3]");
        }
    }
    return $ok;
}

# <streams> GETs of <path> at once on one HTTP/2 connection; <slow>
# reads 128 KiB every 5 ms; <gzip> asks for and inflates gzip.  Returns
# {sha256 of a body (or "status N" / "cut") => count}.
sub h2_many ($$$$) {
    my ($path, $streams, $slow, $gzip) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                  PeerPort => $ENV{TEST_NGINX_H2_PORT},
                                  Timeout => 10) or die "connect: $!\n";
    my $c = Protocol::HTTP2::Client->new(settings => {
        Protocol::HTTP2::Constants::SETTINGS_INITIAL_WINDOW_SIZE() => 1 << 22,
    });
    my (%got, $done);
    for (1 .. $streams) {
        $c->request(
            ':scheme' => 'http', ':method' => 'GET', ':path' => $path,
            ':authority' => "127.0.0.1:$ENV{TEST_NGINX_H2_PORT}",
            headers => [$gzip ? ('accept-encoding' => 'gzip') : ()],
            on_done => sub {
                my ($h, $data) = @_;
                my %h = @$h;
                my $key;
                if ($h{':status'} ne '200') {
                    $key = "status $h{':status'}";
                } else {
                    if (($h{'content-encoding'} // '') eq 'gzip') {
                        my $raw = $data;
                        IO::Uncompress::Gunzip::gunzip(\$raw => \$data)
                            or $data = 'bad gzip';
                    }
                    $key = Digest::SHA::sha256_hex($data);
                }
                $got{$key}++;
                $c->close if ++$done == $streams;
            });
    }
    my $deadline = time + 120;
    while (my $f = $c->next_frame) { syswrite $s, $f or last }
    while (!$c->shutdown && time < $deadline) {
        my $n = sysread $s, my $buf, $slow ? 131072 : 1 << 20;
        last unless $n;
        $c->feed($buf);
        while (my $f = $c->next_frame) { syswrite $s, $f or last }
        sleep 0.005 if $slow;
    }
    close $s;
    $got{cut} = $streams - ($done // 0) if ($done // 0) < $streams;
    return %got;
}

my $H2 = '--http2-prior-knowledge';
my %ver = (h1 => '1.1', h2 => '2');
sub base ($) {      # the server's URL over <p>, h1 or h2
    my $p = shift;
    return $p eq 'h2' ? $h2 : 'http://127.0.0.1:' . server_port();
}
my %opt = (h1 => '--http1.1', h2 => $H2);

# ---- the cases, run from the blocks (nginx restarts for each) ----

# Fast sequential loops, each location, both protocols.  (6 tests)
sub fast_loops () {
    for my $p (qw(h1 h2)) {
        my $url = base($p);
        for my $loc (qw(obj gz sub)) {
            my $count = $loc eq 'obj' ? 6 : 2;
            my $comp = $loc eq 'gz' ? '--compressed' : '';
            my @res;
            push @res, curl_all("$opt{$p} $comp $url/$loc/big")
                for 1 .. $count;
            is(right(@res, 200, $ver{$p}, $Want{$loc}), $count,
               "$p /$loc/: $count sequential downloads, every byte right");
        }
    }
}

# Slow clients alongside fast ones (the slow ones take about 2 s).
# (6 tests)
sub slow_beside_fast () {
    for my $p (qw(h1 h2)) {
        my $url = base($p);
        for my $loc (qw(obj gz sub)) {
            my $comp = $loc eq 'gz' ? '--compressed' : '';
            my $fast = $loc eq 'gz' ? 1 : 3;
            my @res = curl_all(
                (map { "$opt{$p} $comp --limit-rate 4M $url/$loc/big" }
                     1 .. 2),
                (map { "$opt{$p} $comp $url/$loc/big" } 1 .. $fast));
            is(right(@res, 200, $ver{$p}, $Want{$loc}), 2 + $fast,
               "$p /$loc/: 2 slow and $fast fast downloads at once, every "
               . "byte right");
        }
    }
}

# Many streams on one connection (Protocol::HTTP2: curl 7.88's
# --parallel with --http2-prior-knowledge fails by itself), fast and with a
# client that reads slowly, every byte checked; h2load.  (8 tests)
sub many_streams () {
    for my $case (['obj', 16, 0], ['gz', 4, 0], ['sub', 8, 0],
                  ['obj', 6, 1], ['sub', 4, 1])
    {
        my ($loc, $streams, $slow) = @$case;
        my %got = h2_many("/$loc/big", $streams, $slow, $loc eq 'gz');
        my $ok = $got{$Want{$loc}} // 0;
        is($ok, $streams, "h2 /$loc/: $streams streams on one connection"
                          . ($slow ? ', read slowly' : '') . ', every byte right')
            or Test::More::diag(join ', ', map { "$_: $got{$_}" } sort keys %got);
    }

    # h2load: 64 requests, 32 streams at a time on one connection
    for my $loc (qw(obj sub)) {
        my $out = `h2load -n 64 -c 1 -m 32 $h2/$loc/big 2>&1`;
        my ($done, $succ, $fail, $err) =
            $out =~ /requests: \d+ total, \d+ started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored/;
        my ($c2xx) = $out =~ /status codes: (\d+) 2xx/;
        ok(defined $done && $succ == 64 && $fail == 0 && $err == 0
           && $c2xx == 64, "h2load /$loc/: 64 requests, 32 streams at a time, "
           . "all 200") or Test::More::diag($out);
    }
    my @res = curl_all("$H2 $h2/obj/big");
    is(right(@res, 200, 2, $Want{obj}), 1, 'a download after the h2load runs');
}

# A range and a PUT over HTTP/2; no response was cut.  (4 tests)
sub range_and_put () {
    my @res = curl_all("$H2 -r 1000000-5000000 $h2/obj/big");
    is(right(@res, 206, 2,
             Digest::SHA::sha256_hex(substr($Big, 1000000, 4000001))), 1,
       'h2: a range of the object, every byte right');
    my $put = payload(3 << 20, 77);
    open my $pf, '>', "$dir/put" or die;
    print $pf $put;
    close $pf;
    @res = curl_all("$H2 -T $dir/put $h2/obj/h2put");
    ok($res[0][0] == 0 && $res[0][1] =~ /^20[14] 2$/, 'h2: PUT of 3 MiB')
        or Test::More::diag(join ' ', @{ $res[0] });
    @res = curl_all("$H2 $h2/obj/h2put");
    is(right(@res, 200, 2, Digest::SHA::sha256_hex($put)), 1,
       'h2: the PUT object reads back right');

    my ($st, $h, $body) = http_request(server_port(), 'GET', '/status');
    my $j = eval { JSON::PP::decode_json($body) } || {};
    is($j->{module}{cut_responses}, 0, 'no response was cut');
}

# Stalled clients keep at most a quarter of the worker's rx buffers:
# range downloads that start on the disk part (their first bytes come
# straight from an rx buffer) and are never read.  (Fast downloads
# alongside many stalled ones also need storaged's read-ahead buffers,
# which are its own business.)  Then nothing is held.  (6 tests)
sub stalled_clients () {
    my $status = sub {
        my ($st, $h, $body) = http_request(server_port(), 'GET', '/status');
        return eval { JSON::PP::decode_json($body) } || {};
    };
    my $nrx = 32;       # RING_RX_DEFAULT
    my @stalled;
    for my $i (1 .. 14) {
        my $sk = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                       PeerPort => $ENV{TEST_NGINX_SLOW_PORT},
                                       Timeout => 10) or die "connect: $!\n";
        setsockopt($sk, Socket::SOL_SOCKET(), Socket::SO_RCVBUF(), 4096);
        print $sk "GET /obj/big HTTP/1.1\r\nHost: localhost\r\n"
                  . "Range: bytes=" . (1048576 + $i * 300000) . "-\r\n\r\n";
        push @stalled, $sk;
    }
    my $held_max = 0;
    my $deadline = time + 30;
    my $staged = -1;
    while (time < $deadline) {
        my $j = $status->();
        my $held = $j->{module}{rx_held} // 0;
        $held_max = $held if $held > $held_max;
        # settled: every download pinned and nothing more staged for a while
        if ((goblin_stats()->{pins} // 0) >= @stalled) {
            last if ($j->{module}{staged_bytes} // -2) == $staged;
            $staged = $j->{module}{staged_bytes};
            sleep 0.5;
            next;
        }
        sleep 0.05;
    }
    ok(goblin_stats()->{pins} >= @stalled, 'every stalled download holds a pin');
    ok($held_max <= $nrx / 4, 'the ' . @stalled . " stalled clients held at "
                              . "most $held_max of $nrx rx buffers");
    close $_ for @stalled;
    $deadline = time + 20;
    while (time < $deadline) {
        last if ($status->()->{module}{rx_held} // -1) == 0;
        sleep 0.05;
    }
    is($status->()->{module}{rx_held}, 0, 'every rx buffer back once they left');
    my @res = curl_all("$H2 $h2/obj/big");
    is(right(@res, 200, 2, $Want{obj}), 1, 'a download after they left');

    # nothing held afterwards
    $deadline = time + 20;
    my $pins;
    while (time < $deadline) {
        $pins = goblin_stats()->{pins};
        last if defined $pins && $pins == 0;
        sleep 0.05;
    }
    is($pins, 0, 'no pin left behind');

    open my $el, '<', server_root() . '/logs/error.log' or die "error.log: $!\n";
    my @bad = grep { /\[(alert|crit|emerg)\]|AddressSanitizer|runtime error/ }
              <$el>;
    close $el;
    is(scalar @bad, 0, 'nothing at [alert] or worse in error.log')
        or Test::More::diag(join '', @bad[0 .. ($#bad < 9 ? $#bad : 9)]);
}

run_tests();
goblin_stop();

__DATA__

=== TEST 1: the object is there; the server also speaks HTTP/2
--- request
HEAD /obj/big
--- response_headers
Content-Length: 8388608
--- no_error_log
[alert]
[crit]



=== TEST 2: fast sequential loops, each location, both protocols
--- init
main::fast_loops();



=== TEST 3: slow clients alongside fast ones
--- init
main::slow_beside_fast();



=== TEST 4: many streams on one connection; h2load
--- init
main::many_streams();



=== TEST 5: a range and a PUT over HTTP/2
--- init
main::range_and_put();



=== TEST 6: stalled clients hold at most a quarter of the rx buffers
--- init
main::stalled_clients();
