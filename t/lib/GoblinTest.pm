package GoblinTest;

# usage (before Test::Nginx::Socket, so each suite gets its own port and
# servroot):
#     BEGIN { push @INC, 't/lib' }
#     use GoblinTest;
#     use Test::Nginx::Socket;
#     goblin_start();                      # a real goblin-store
#     goblin_defaults();                   # load_module + goblin_storaged
#
# Helpers for the HTTP suites: start and stop real goblin-store daemons
# (pools under /var/tmp, a free memcache port, a socket of their own),
# talk memcache and plain HTTP to check things Test::Nginx blocks cannot,
# and make reproducible payloads.  A suite whose module or daemon is not
# built is skipped with the reason.  Daemons are stopped and their
# directories removed at exit, also when a test dies.

use strict;
use warnings;

use Cwd qw(getcwd);
use Exporter ();
use File::Path qw(remove_tree);
use File::Temp qw(tempdir);
use IO::Select;
use JSON::PP ();
use IO::Socket::INET;
use POSIX qw(:sys_wait_h SIGTERM SIGKILL);
use Test::More ();
use Time::HiRes qw(sleep time);

our @ISA = ('Exporter');
our @EXPORT = qw(
    goblin_start goblin_stop goblin_kill goblin_pid goblin_log
    goblin_defaults goblin_config goblin_case_checks goblin_plan goblin_stats goblin_module
    goblin_store_binary
    mc_set mc_get mc_delete http_request payload nginx_workers wait_for
    http_status status_deltas body_feed body_verdict
);

our $Top = getcwd();
our %Daemons;            # name => { pid, dir, port, socket, args, log }

sub goblin_module () {
    return $ENV{GOBLIN_NGX_MODULE} || "$Top/build/ngx_http_goblin_module.so";
}

# With <hooks>, the hooked test build that reads GOBLIN_TEST_* (t/hooks/):
# $GOBLIN_STORE_HOOKS, else t/goblin-store-hooks beside goblin-store.
sub goblin_store_binary (;$) {
    my ($hooks) = @_;
    my $store = $ENV{GOBLIN_STORE}
        || ($ENV{BUILD} ? "$Top/$ENV{BUILD}" : "$Top/build") . '/goblin-store';

    return $store unless $hooks;
    return $ENV{GOBLIN_STORE_HOOKS} if $ENV{GOBLIN_STORE_HOOKS};
    return $store =~ s{[^/]*$}{t/goblin-store-hooks}r;
}

sub import {
    my $why;
    $why = 'build/ngx_http_goblin_module.so is not built (make module)'
        unless -f goblin_module();
    $why //= goblin_store_binary() . ' is not built (make)'
        unless -x goblin_store_binary();
    $why //= 'no nginx binary (make deps)'
        unless -x ($ENV{TEST_NGINX_BINARY} || '/usr/sbin/nginx');
    if ($why) {
        Test::More::plan(skip_all => $why);
    }

    # one port and servroot per suite, unless the caller chose them
    $ENV{TEST_NGINX_RANDOMIZE} //= 1
        unless $ENV{TEST_NGINX_PORT} || $ENV{TEST_NGINX_SERVER_PORT};
    $ENV{TEST_NGINX_GOBLIN_MODULE} = goblin_module();

    __PACKAGE__->export_to_level(1, @_);
}

sub free_port () {
    my $s = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0,
                                  Proto => 'tcp', Listen => 1)
        or die "cannot bind a free port: $!\n";
    my $port = $s->sockport;
    close $s;
    return $port;
}

sub env_name ($) {
    my $name = shift;
    return $name eq 'default' ? '' : '_' . uc $name;
}

# <args> (goblin-store's flags) with each "--flag value" pair but the
# repeatable --ssd-dir and --hdd-dir kept at its last place only:
# goblin-store refuses a one-value flag given twice, and the defaults give
# way to a suite's own.  Returns an array reference.
sub last_wins {
    my @pairs;
    while (@_) {
        my $a = shift;
        if ($a =~ /^--[^=]+$/ && $a !~ /^--(ssd|hdd)-dir$/ && @_
            && $_[0] !~ /^--/) {
            push @pairs, [$a, shift];
        } else {
            push @pairs, [$a];
        }
    }
    my %last;
    $last{ $pairs[$_][0] } = $_ for grep { @{ $pairs[$_] } == 2 } 0 .. $#pairs;
    return [ map { @{ $pairs[$_] } }
             grep { @{ $pairs[$_] } == 1 || $last{ $pairs[$_][0] } == $_ }
             0 .. $#pairs ];
}

# Starts a goblin-store instance <name> (default "default") with its pools
# in a fresh /var/tmp directory; <args> are added to the defaults (a RAM
# head of 256K, 1M SSD prefixes, small SSD and HDD pools), or replace them
# with <bare>; <fresh> empties the pools of an instance started before;
# <hooks> runs the hooked test build (GOBLIN_TEST_* in the environment).
# Sets TEST_NGINX_GOBLIN_SOCKET[_NAME] and TEST_NGINX_MEMCACHE_PORT[_NAME].
sub goblin_start (@) {
    my %o = (name => 'default', args => [], @_);
    my $d = $Daemons{$o{name}};

    if ($d && $o{fresh}) {
        for my $pool ("$d->{dir}/ssd", "$d->{dir}/hdd") {
            remove_tree($pool);
            mkdir $pool or die "mkdir $pool: $!\n";
        }
    }
    if (!$d) {
        my $dir = tempdir('goblin-ngx-test.XXXXXX', DIR => '/var/tmp');
        mkdir "$dir/ssd" or die "mkdir: $!\n";
        mkdir "$dir/hdd" or die "mkdir: $!\n";
        $d = $Daemons{$o{name}} = {
            dir => $dir, socket => "$dir/goblin.sock", log => "$dir/log",
        };
    }
    $d->{port} = free_port();
    $d->{args} = last_wins(
        $o{bare} ? () : (
            '--memory', '64M', '--sub-memory', '16M', '--ram-head', '256K',
            '--ssd-prefix', '1M', '--ssd-dir', "$d->{dir}/ssd",
            '--hdd-dir', "$d->{dir}/hdd", '--ssd-size', '128M',
            '--hdd-size', '256M'),
        '--no-mlock', '--cores', '1',
        '--memcache-port', $d->{port}, '--socket', $d->{socket},
        @{ $o{args} },
    );

    my $pid = fork() // die "fork: $!\n";
    if ($pid == 0) {
        open STDOUT, '>>', $d->{log} or die "$d->{log}: $!\n";
        open STDERR, '>&', \*STDOUT or die "dup: $!\n";
        exec goblin_store_binary($o{hooks}), @{ $d->{args} };
        die "exec " . goblin_store_binary($o{hooks}) . ": $!\n";
    }
    $d->{pid} = $pid;

    # ready when both the socket and the memcache port answer
    my $deadline = time + 20;
    while (time < $deadline) {
        if (waitpid($pid, WNOHANG) == $pid) {
            delete $d->{pid};
            die "goblin-store exited at start:\n" . goblin_log($o{name});
        }
        my $s = -S $d->{socket}
            && IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                     PeerPort => $d->{port});
        if ($s) {
            close $s;
            my $e = env_name($o{name});
            $ENV{"TEST_NGINX_GOBLIN_SOCKET$e"} = $d->{socket};
            $ENV{"TEST_NGINX_MEMCACHE_PORT$e"} = $d->{port};
            return $d;
        }
        sleep 0.05;
    }
    die "goblin-store did not come up in 20s:\n" . goblin_log($o{name});
}

sub goblin_pid (;$) {
    my $d = $Daemons{ shift // 'default' } or return undef;
    return $d->{pid};
}

sub goblin_log (;$) {
    my $d = $Daemons{ shift // 'default' } or return '';
    open my $in, '<', $d->{log} or return '';
    local $/;
    return <$in> // '';
}

# Sends <sig> to the instance and reaps it; returns its wait status.
sub goblin_kill ($;$) {
    my ($sig, $name) = @_;
    my $d = $Daemons{ $name // 'default' } or return undef;
    my $pid = delete $d->{pid} or return undef;
    kill $sig, $pid;
    my $deadline = time + 15;
    while (time < $deadline) {
        return $? if waitpid($pid, WNOHANG) == $pid;
        sleep 0.02;
    }
    kill SIGKILL, $pid;
    waitpid($pid, 0);
    return $?;
}

# One test: the instance stops cleanly on SIGTERM (exit 0) and its log has
# no sanitizer report.
sub goblin_stop (;$) {
    my $name = shift // 'default';
    my $status = goblin_kill(SIGTERM, $name);
    my $log = goblin_log($name);
    my @bad = grep { /Sanitizer|runtime error:/ } split /\n/, $log;
    Test::More::ok(defined $status && $status == 0 && !@bad,
                   "goblin-store ($name) stopped cleanly, no sanitizer report")
        or Test::More::diag("wait status " . ($status // 'none')
                            . "\n$log");
}

sub cleanup_daemons () {
    for my $name (keys %Daemons) {
        my $d = $Daemons{$name};
        goblin_kill(SIGKILL, $name) if $d->{pid};
        remove_tree($d->{dir}) if $d->{dir} && !$ENV{GOBLIN_KEEP_TEST_DIRS};
    }
    %Daemons = ();
}

END {
    local $?;
    cleanup_daemons();
}

# Blocks without main_config/http_config load the module and attach to
# the default instance; after nginx (re)started for such a block, its
# requests go out only once every worker has attached (else the first
# ones get 503 on a busy machine).
sub goblin_defaults () {
    Test::Nginx::Socket::add_block_preprocessor(sub {
        my $block = shift;
        if (!defined $block->main_config) {
            $block->set_value('main_config',
                              "load_module $ENV{TEST_NGINX_GOBLIN_MODULE};");
        }
        if (!defined $block->http_config) {
            $block->set_value('http_config',
                "goblin_storaged unix:$ENV{TEST_NGINX_GOBLIN_SOCKET};");
            $block->{goblin_attach} = 1;
        }
    });
    Test::Nginx::Socket::add_post_start_handler(sub {
        my $block = shift;
        wait_attached() if $block->{goblin_attach} && goblin_pid();
    }) if Test::Nginx::Socket->can('add_post_start_handler');
}

# <config>: the "--- config" of every block that has none of its own.
sub goblin_config ($) {
    my $config = shift;
    Test::Nginx::Socket::add_block_preprocessor(sub {
        my $block = shift;
        $block->set_value('config', $config) unless defined $block->config;
    });
}

# The checks of every block that runs one of the suite's cases (its
# "--- init" calls the case's sub) and sends no request of its own:
# <sections>, a request and what it must answer (request => 'GET /status',
# error_code => 200, ...), given to each such block; goblin_plan() counts
# them.  So each case is a block of its own with a one-line body.
our %CaseChecks;

sub goblin_case_checks (%) {
    %CaseChecks = @_;
    Test::Nginx::Socket::add_block_preprocessor(\&case_checks);
}

sub case_checks ($) {
    my $block = shift;
    return if !%CaseChecks || !defined sec($block, 'init')
              || defined sec($block, 'request')
              || defined sec($block, 'raw_request');
    $block->set_value($_, $CaseChecks{$_}) for keys %CaseChecks;
}

# Polls <cond> every 50 ms for up to <secs> seconds; whether it held.
sub wait_for (&$) {
    my ($cond, $secs) = @_;
    my $deadline = time + $secs;
    while (time < $deadline) {
        return 1 if $cond->();
        sleep 0.05;
    }
    return 0;
}

# Waits (up to 20 s) until every worker of the nginx under test logged
# "goblin: attached to storaged"; returns whether they all did.
sub wait_attached () {
    my $root = Test::Nginx::Socket::server_root();
    my $deadline = time + 20;
    while (time < $deadline) {
        my $master;
        if (open my $pf, '<', "$root/logs/nginx.pid") {
            $master = <$pf>;
            close $pf;
        }
        if ($master && $master =~ /^(\d+)/) {
            $master = $1;
            my @pids = ($master);
            if (Test::Nginx::Socket::master_process_enabled() eq 'on') {
                @pids = nginx_workers($master);
                @pids = () if @pids < Test::Nginx::Socket::workers();
            }
            my %attached;
            if (open my $el, '<', "$root/logs/error.log") {
                while (my $line = <$el>) {
                    $attached{$1} = 1
                        if $line =~ /\[notice\] (\d+)#\d+: goblin: attached to/;
                }
                close $el;
            }
            return 1 if @pids && !grep { !$attached{$_} } @pids;
        }
        sleep 0.02;
    }
    return 0;
}

# ---- memcache ----

sub mc_conn (;$) {
    my $d = $Daemons{ shift // 'default' } or die "no goblin-store\n";
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                  PeerPort => $d->{port}, Timeout => 10);
    die "memcache connect: $!\n" unless $s;
    return $s;
}

sub read_line ($) {
    my $s = shift;
    my $line = <$s>;
    die "memcache: connection closed\n" unless defined $line;
    return $line;
}

sub mc_set ($$;$) {
    my ($key, $val, $name) = @_;
    my $s = mc_conn($name);
    print $s "set $key 0 0 " . length($val) . "\r\n$val\r\n";
    my $r = read_line($s);
    close $s;
    $r =~ s/\r\n$//;
    return $r;
}

# The value of <key>, or undef when the store has none.
sub mc_get ($;$) {
    my ($key, $name) = @_;
    my $s = mc_conn($name);
    print $s "get $key\r\n";
    my $line = read_line($s);
    return undef if $line =~ /^END\r\n$/;
    $line =~ /^VALUE \S+ \d+ (\d+)\r\n$/ or die "memcache: $line";
    my $len = $1;
    my $val = '';
    while (length $val < $len + 2) {
        my $n = read $s, $val, $len + 2 - length $val, length $val;
        die "memcache: short value\n" unless $n;
    }
    read_line($s) =~ /^END/ or die "memcache: no END\n";
    close $s;
    return substr $val, 0, $len;
}

sub mc_delete ($;$) {
    my ($key, $name) = @_;
    my $s = mc_conn($name);
    print $s "delete $key\r\n";
    my $r = read_line($s);
    close $s;
    $r =~ s/\r\n$//;
    return $r;
}

# Every counter of `stats` and `stats goblin` of the instance, as a hash.
sub goblin_stats (;$) {
    my $s = mc_conn(shift);
    my %st;
    for my $cmd ("stats", "stats goblin") {
        print $s "$cmd\r\n";
        while (defined(my $line = <$s>)) {
            last if $line =~ /^(END|ERROR)/;
            $st{$1} = $2 if $line =~ /^STAT (\S+) (\S+)/;
        }
    }
    close $s;
    return \%st;
}

# ---- plain HTTP to the nginx under test ----

# One request on its own connection: returns (status, {lc header => value},
# body).  <opts>: headers => [...], body => bytes, timeout => s.
sub http_request ($$$;%) {
    my ($port, $method, $path, %o) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port,
                                  Timeout => 10)
        or die "connect 127.0.0.1:$port: $!\n";
    my $req = "$method $path HTTP/1.1\r\nHost: localhost\r\n"
              . "Connection: close\r\n";
    $req .= "$_\r\n" for @{ $o{headers} || [] };
    $req .= "Content-Length: " . length($o{body}) . "\r\n"
        if defined $o{body};
    $req .= "\r\n" . ($o{body} // '');
    print $s $req;

    my $resp = '';
    my $sel = IO::Select->new($s);
    my $timeout = $o{timeout} || 30;
    while ($sel->can_read($timeout)) {
        my $n = sysread $s, $resp, 1 << 20, length $resp;
        last unless $n;
    }
    close $s;
    my ($head, $body) = split /\r\n\r\n/, $resp, 2;
    $head //= '';
    my ($status) = $head =~ m{^HTTP/1\.\d (\d+)};
    my %h;
    for (split /\r\n/, $head) {
        $h{lc $1} = $2 if /^([^:]+):\s*(.*)$/;
    }
    return ($status // 0, \%h, $body // '');
}

# The worker pids of the nginx under test (master_process on).
# nginx's JSON status at <path> (default /status) on <port>; {} when it
# does not parse.
sub http_status ($;$) {
    my ($port, $path) = @_;
    my ($st, $h, $body) = http_request($port, 'GET', $path // '/status');
    return eval { JSON::PP::decode_json($body) } || {};
}

# Runs <fn> and returns (deltas of the module's and storaged's counters in
# the status at <port> around it, what <fn> returned).
sub status_deltas ($$) {
    my ($port, $fn) = @_;
    my $before = http_status($port);
    my @r = $fn->();
    my $after = http_status($port);
    my %d;
    for my $side (qw(module storaged)) {
        for my $n (keys %{ $after->{$side} || {} }) {
            # counters only: not version, store_id, rusage_*
            next unless ($after->{$side}{$n} // '') =~ /^\d+$/;
            $d{$n} = ($after->{$side}{$n} // 0) - ($before->{$side}{$n} // 0);
        }
    }
    return (\%d, @r);
}

sub nginx_workers ($) {
    my $master = shift;
    my @pids;
    for my $p (glob '/proc/[0-9]*') {
        open my $st, '<', "$p/stat" or next;
        my $line = <$st> // '';
        push @pids, $1 if $line =~ /^(\d+) \(.*\) \S (\d+) / && $2 == $master;
    }
    return @pids;
}

# ---- responses read in pieces ----

# Takes <data> read for download <c> (a hash: key, head => '', off => 0,
# cands => [the versions its body may be]): the headers first (status,
# len), then body bytes, each piece narrowing cands to the versions that
# have it at that offset.
sub body_feed ($$) {
    my ($c, $data) = @_;
    if (!defined $c->{status}) {
        $c->{head} .= $data;
        my $i = index $c->{head}, "\r\n\r\n";
        return if $i < 0;
        $data = substr $c->{head}, $i + 4;
        my $head = substr $c->{head}, 0, $i;
        ($c->{status}) = $head =~ m{^HTTP/1\.1 (\d+)};
        ($c->{len}) = $head =~ /^Content-Length: (\d+)/mi;
        $c->{status} //= 0;
    }
    return if $c->{status} != 200 || $data eq '';
    my $n = length $data;
    $c->{cands} = [ grep { substr($_, $c->{off}, $n) eq $data }
                         @{ $c->{cands} } ];
    $c->{off} += $n;
}

# Download <c>'s connection is over: 'missing' (404), 'bad' (no 200, or a
# body no version has; said with diag), 'exact' or 'cut'.
sub body_verdict ($) {
    my $c = shift;
    my $status = $c->{status} // 0;
    return 'missing' if $status == 404;
    if ($status != 200 || !@{ $c->{cands} }) {
        Test::More::diag("$c->{key}: status " . ($c->{status} // 'none')
                         . ", body wrong at or before byte $c->{off}");
        return 'bad';
    }
    return $c->{off} == $c->{len} ? 'exact' : 'cut';
}

# ---- payloads ----

# <size> reproducible bytes for <seed>: every 64 KiB block differs (its
# offset is written into it), and the first and last byte are not white
# space (Test::Nginx trims request bodies).
sub payload ($;$) {
    my ($size, $seed) = @_;
    $seed //= $size;
    srand($seed);
    my $block = pack 'N*', map { int rand 4294967296 } 1 .. 16384;
    my $data = $block x (int($size / 65536) + 1);
    substr($data, $size) = '';
    for (my $off = 0; $off + 16 <= $size; $off += 65536) {
        substr($data, $off, 16) = sprintf '%08x%08x', $seed & 0xffffffff,
                                                       $off / 65536;
    }
    if ($size) {
        substr($data, 0, 1) = 'G';
        substr($data, -1, 1) = 'B';
    }
    srand();
    return $data;
}

# The number of tests Test::Nginx::Socket runs for the blocks (its rules:
# per request a status check, one per response header line and one for
# the body; the error log patterns after every request), times
# repeat_each, plus <extra> for the suite's own checks.
sub goblin_plan ($) {
    my $extra = shift;
    my $n = 0;
    for my $b (Test::Base::blocks()) {
        next if defined $b->{SKIP};
        case_checks($b);
        my $req = sec($b, 'raw_request') // sec($b, 'request');
        my $nreq = !defined sec($b, 'raw_request') && ref $req eq 'ARRAY'
                   ? scalar @$req : 1;
        for my $i (0 .. $nreq - 1) {
            next if defined sec($b, 'ignore_response');
            $n += 1;
            $n += 1 for grep { defined sec($b, $_) }
                            qw(raw_response_headers_like
                               raw_response_headers_unlike);
            my $h = sec($b, 'response_headers')
                    // sec($b, 'response_headers_like');
            $h = $h->[$i] if ref $h eq 'ARRAY';
            if (defined $h) {
                my %keys = map { s/^\s*!?\s*//r =~ s/\s*:.*//r => 1 }
                           grep { /\S/ } split /\n/, $h;
                $n += keys %keys;
            }
            $n += 1 if defined(sec($b, 'response_body'))
                       || defined(sec($b, 'response_body_like'))
                       || defined(sec($b, 'response_body_unlike'));
        }
        for my $sec (qw(error_log no_error_log)) {
            my $p = sec($b, $sec);
            next unless defined $p;
            my $np = ref $p eq 'Regexp' ? 1 : ref $p eq 'ARRAY' ? @$p
                   : scalar(grep { length } split /\n+/, $p =~ s/\n\z//r);
            $n += $np * $nreq;
        }
    }
    return $n * Test::Nginx::Socket::repeat_each() + $extra;
}

sub sec ($$) {
    my ($b, $name) = @_;
    my $v = $b->{$name};
    return ref $v eq 'ARRAY' ? $v->[0] : $v;
}

1;
