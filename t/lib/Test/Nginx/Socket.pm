package Test::Nginx::Socket;

# A small reimplementation of OpenResty's Test::Nginx::Socket on Debian's
# Test::Base, for machines where the real one is not packaged.  It reads the
# same data-driven blocks and follows the real module's documented behaviour
# (generated nginx.conf, request building, which checks count as tests), so a
# suite passes unchanged under either.  Test files add t/lib to the END of
# @INC, so an installed real Test::Nginx wins:
#
#     BEGIN { push @INC, 't/lib' }
#     use Test::Nginx::Socket;
#
# This file holds the settings, helpers and the block loop; Socket/Server.pm
# (server root, nginx.conf, the nginx process), Socket/Request.pm and
# Socket/Response.pm (with the error log checks) add to the same package.
#
# Supported: run_tests, repeat_each, no_shuffle, plan/blocks (Test::Base),
# log_level, workers, master_on/off, worker_connections, config_preamble,
# no_root_location, server_name/addr/port, server_port_for_client, timeout,
# no_long_string, env_to_nginx, add_block_preprocessor, add_cleanup_handler,
# check_accum_error_log, html_dir, server_root, bail_out.
# Sections: config http_config main_config post_main_config user_files
# request raw_request raw_request_middle_delay more_headers error_code
# error_code_like response_headers response_headers_like
# raw_response_headers_like raw_response_headers_unlike response_body
# response_body_like response_body_unlike error_log no_error_log timeout
# abort wait init ignore_response must_die log_level server_name no_http2
# skip_nginx skip_eval todo SKIP ONLY LAST.
# Environment: TEST_NGINX_BINARY, TEST_NGINX_SERVER_PORT / TEST_NGINX_PORT,
# TEST_NGINX_CLIENT_PORT, TEST_NGINX_RANDOMIZE, TEST_NGINX_SERVROOT,
# TEST_NGINX_NO_SHUFFLE, TEST_NGINX_LOG_LEVEL, TEST_NGINX_MASTER_PROCESS,
# TEST_NGINX_TIMEOUT, TEST_NGINX_SLEEP, TEST_NGINX_USE_VALGRIND,
# TEST_NGINX_LOAD_MODULES, TEST_NGINX_WORKER_USER, TEST_NGINX_NO_CLEAN,
# TEST_NGINX_FORCE_RESTART_ON_TEST, TEST_NGINX_VERBOSE, TEST_NGINX_USE_HTTP2
# (as the real one: the server also listens with http2 on a port of its
# own and each "--- request" goes there with curl --http2-prior-knowledge;
# raw requests, packet lists, blocks that read raw headers and blocks with
# a "--- no_http2" section stay on HTTP/1.1).  A sanitizer report ("AddressSanitizer", "runtime error:") in
# error.log fails the block.

use Test::Base -base;
use strict;
use warnings;

use POSIX qw(:sys_wait_h SIGQUIT SIGTERM SIGKILL EAGAIN EWOULDBLOCK EINTR);
use Time::HiRes qw(sleep time);
use File::Path qw(make_path remove_tree);
use File::Spec ();
use IO::Socket::INET ();
use IO::Select ();
use List::Util qw(shuffle min);
use Scalar::Util qw(looks_like_number);
use Test::LongString ();

our $VERSION = '0.01';

our @EXPORT = qw(
    run_tests repeat_each no_shuffle log_level workers master_on master_off
    master_process_enabled worker_connections config_preamble
    no_root_location server_name server_addr server_port
    server_port_for_client server_root html_dir timeout no_long_string
    env_to_nginx add_block_preprocessor add_cleanup_handler bail_out
    add_post_start_handler
    check_accum_error_log is_str
);

our $Verbose = $ENV{TEST_NGINX_VERBOSE};
our $NginxBinary = $ENV{TEST_NGINX_BINARY} || 'nginx';
our $Workers = 1;
our $WorkerConnections = 64;
our $LogLevel = $ENV{TEST_NGINX_LOG_LEVEL} || 'debug';
our $MasterProcessEnabled = $ENV{TEST_NGINX_MASTER_PROCESS} || 'off';
our $DaemonEnabled = 'on';
our $Timeout = $ENV{TEST_NGINX_TIMEOUT} || 3;
our $TestNginxSleep = $ENV{TEST_NGINX_SLEEP} || 0.015;
our $NoShuffle = $ENV{TEST_NGINX_NO_SHUFFLE} || 0;
our $UseValgrind = $ENV{TEST_NGINX_USE_VALGRIND};
our $LoadModules = $ENV{TEST_NGINX_LOAD_MODULES};
our $WorkerUser = $ENV{TEST_NGINX_WORKER_USER};
our $Randomize = $ENV{TEST_NGINX_RANDOMIZE};
our $ForceRestartOnTest = $ENV{TEST_NGINX_FORCE_RESTART_ON_TEST} // 1;
our $RepeatEach = 1;
our $ServerAddr = '127.0.0.1';
our $ServerName = 'localhost';
our $ConfigPreamble = '';
our $NoRootLocation = 0;
our $NoLongString = 0;
our $CheckAccumErrLog = 0;
our ($NginxVersion, $NginxRawVersion);
our (@BlockPreprocessors, @CleanupHandlers, @PostStartHandlers, @EnvToNginx);
our ($PrevConfig, $ChildPid, $ErrLogFilePos, $FirstTime) = (undef, undef, 0, 1);
our $InSubprocess;

if (defined $WorkerUser && $WorkerUser !~ /^\w+(?:\s+\w+)?$/) {
    die "Bad value in the env TEST_NGINX_WORKER_USER: $WorkerUser\n";
}

sub free_port ($);

our $ServerPort = $ENV{TEST_NGINX_SERVER_PORT} || $ENV{TEST_NGINX_PORT}
                  || 1984;
if ($Randomize) {
    $ServerPort = free_port({});
    die "cannot find a free TCP port\n" unless $ServerPort;
}
our $ServerPortForClient = $ENV{TEST_NGINX_CLIENT_PORT} || $ServerPort;
our $UseHttp2 = $ENV{TEST_NGINX_USE_HTTP2};
our $Http2Port;
if ($UseHttp2) {
    $Http2Port = free_port({ $ServerPort => 1 });
    die "cannot find a free TCP port\n" unless $Http2Port;
}

our $ServRoot = $Randomize
    ? File::Spec->rel2abs("t/servroot_$ServerPort")
    : ($ENV{TEST_NGINX_SERVROOT} || File::Spec->rel2abs('t/servroot'));
$ENV{TEST_NGINX_SERVER_ROOT} = $ServRoot;

our $LogDir = "$ServRoot/logs";
our $ErrLogFile = "$LogDir/error.log";
our $AccLogFile = "$LogDir/access.log";
our $HtmlDir = "$ServRoot/html";
our $ConfDir = "$ServRoot/conf";
our $ConfFile = "$ConfDir/nginx.conf";
our $PidFile = "$LogDir/nginx.pid";

if ($UseValgrind) {
    $DaemonEnabled = 'off';
}

# Sections of the real Test::Nginx::Socket this harness does not implement:
# a block using one is refused rather than silently half-run.
my @Unsupported = qw(
    pipelined_requests http2 http3 stap stap_out stap_out_like
    stap_out_unlike tcp_listen tcp_reply udp_listen udp_reply curl
    grep_error_log grep_error_log_out shutdown_error_log
    no_shutdown_error_log access_log no_access_log response_body_filters
    request_eval response_body_eval reload_fails
);

# ---- settings -------------------------------------------------------------

sub repeat_each (@) { $RepeatEach = shift if @_; return $RepeatEach }
sub no_shuffle () { $NoShuffle = 1 }
sub log_level (@) { $LogLevel = shift if @_; return $LogLevel }
sub workers (@) { $Workers = shift if @_; return $Workers }
sub master_on () { $MasterProcessEnabled = 'on' }
sub master_off () { $MasterProcessEnabled = 'off' }
sub worker_connections (@) {
    $WorkerConnections = shift if @_;
    return $WorkerConnections;
}
sub config_preamble ($) { $ConfigPreamble = shift }
sub no_root_location () { $NoRootLocation = 1 }
sub server_name (@) { $ServerName = shift if @_; return $ServerName }
sub server_addr (@) { $ServerAddr = shift if @_; return $ServerAddr }
sub server_port (@) { $ServerPort = shift if @_; return $ServerPort }
sub server_port_for_client (@) {
    $ServerPortForClient = shift if @_;
    return $ServerPortForClient;
}
sub server_root () { return $ServRoot }
sub html_dir () { return $HtmlDir }
sub timeout (@) { $Timeout = shift if @_; return $Timeout }
sub no_long_string () { $NoLongString = 1 }
sub check_accum_error_log () { $CheckAccumErrLog = 1 }
sub add_block_preprocessor (&) { unshift @BlockPreprocessors, shift }
sub add_cleanup_handler ($) { unshift @CleanupHandlers, shift }
# not in the real Test::Nginx: called with the block after nginx (re)started
sub add_post_start_handler (&) { push @PostStartHandlers, shift }

sub master_process_enabled (@) {
    $MasterProcessEnabled = shift() ? 'on' : 'off' if @_;
    return $MasterProcessEnabled;
}

sub env_to_nginx (@) {
    die "env_to_nginx: no arguments specified\n" unless @_;
    for my $v (@_) {
        die "env_to_nginx: bad argument value: $v\n"
            if $v !~ /^[A-Za-z_]/ || $v =~ /\n/;
        push @EnvToNginx, $v;
    }
}

sub is_str (@) {
    my ($got, $expected, $desc) = @_;
    return Test::More::like($got, $expected, $desc)
        if ref $expected && ref $expected eq 'Regexp';
    return Test::More::is($got, $expected, $desc) if $NoLongString;
    return Test::LongString::is_string($got, $expected, $desc);
}

sub bail_out (@) {
    cleanup();
    Test::More::BAIL_OUT(join '', @_);
}

# ---- helpers --------------------------------------------------------------

# The value of section <sec> in <block> as one scalar (undef when absent).
sub sec ($$) {
    my ($block, $sec) = @_;
    my $v = $block->{$sec};
    return undef unless defined $v;
    return ref $v eq 'ARRAY' ? $v->[0] : $v;
}

# A daemonized nginx is not our child: once it exits it stays a zombie until
# init reaps it, so a zombie counts as gone.
sub is_running ($) {
    my $pid = shift;
    return 0 unless $pid && kill(0, $pid);
    open my $st, '<', "/proc/$pid/stat" or return 1;
    my $line = <$st> // '';
    return $line !~ /^\d+ \(.*\) Z /s;
}

sub parse_time ($) {
    my $t = shift;
    return undef unless defined $t;
    $t =~ s/^\s+|\s+$//g;
    return $1 / 1000 if $t =~ /^([\d.]+)ms$/;
    return $1 if $t =~ /^([\d.]+)s?$/;
    return $t;
}

# A TCP port on $ServerAddr nobody listens on, avoiding <used>.
sub free_port ($) {
    my $used = shift;
    for (1 .. 1000) {
        my $port = 1985 + int rand 63000;
        next if $used->{$port};
        my $s = IO::Socket::INET->new(LocalAddr => $ServerAddr,
                                      LocalPort => $port, Proto => 'tcp',
                                      ReuseAddr => 1, Listen => 1);
        next unless $s;
        close $s;
        return $port;
    }
    return undef;
}

# Replaces $TEST_NGINX_* in <text> by the environment; TEST_NGINX_RAND_PORT_N
# get a fresh free port each, remembered in <ports> for the block.
sub expand_env ($$$) {
    my ($text, $name, $ports) = @_;
    return undef unless defined $text;
    $text =~ s{\$(TEST_NGINX_[_A-Z0-9]+)}{
        my $var = $1;
        my $val;
        if ($var =~ /^TEST_NGINX_RAND_PORT_\d+$/) {
            $ports->{$var} //= free_port({ $ServerPort => 1,
                                           map { $_ => 1 } grep { defined }
                                               values %$ports })
                // bail_out("$name - no free port for $var");
            $val = $ports->{$var};
        } else {
            bail_out("$name - No environment $var defined.\n")
                unless defined $ENV{$var};
            $val = $ENV{$var};
        }
        $val;
    }ge;
    return $text;
}

sub nginx_version () {
    my $out = `$NginxBinary -V 2>&1`;
    bail_out("Failed to get the version of the Nginx in PATH: "
             . ($out // '')) if !defined $out || $? != 0;
    if ($out =~ m{(?:nginx|openresty)[^/]*/(\d+)\.(\d+)\.(\d+)}s
        || $out =~ m{\w+/(\d+)\.(\d+)\.(\d+)}s)
    {
        $NginxRawVersion = "$1.$2.$3";
        return sprintf "%d.%03d%03d", $1, $2, $3;
    }
    bail_out("Failed to parse the output of \"nginx -V\": $out\n");
}

# The rest of the harness, in this package: the server root, nginx.conf and
# the nginx process; requests; responses and the error log.
use Test::Nginx::Socket::Server ();
use Test::Nginx::Socket::Request ();
use Test::Nginx::Socket::Response ();

# ---- one block ------------------------------------------------------------

sub run_requests ($$) {
    my ($block, $rep) = @_;
    my $name = $block->name;
    my $reqs = block_requests($block);
    my $timeout = parse_time(sec($block, 'timeout')) // $Timeout;
    my $need_array = @$reqs > 1;
    my $wait = parse_time(sec($block, 'wait'));

    for my $idx (0 .. $#$reqs) {
        my $head_req = (join '', map { $_->{value} } @{ $reqs->[$idx] })
                       =~ /^\s*HEAD\s+/ ? 1 : 0;
        my $raw = send_request($reqs->[$idx], $timeout, $block) // '';
        if (!defined sec($block, 'ignore_response')) {
            my ($res, $raw_headers, $left) =
                parse_response($name, $raw, $head_req);
            if (defined $left) {
                (my $l = $left) =~ s/([\0-\037\200-\377])/
                                       sprintf('\x{%02x}', ord $1)/eg;
                warn "WARNING: $name - unexpected extra bytes after last "
                     . "chunk in response: \"$l\"\n";
            }
            check_response($block, $res, $raw_headers // '', $idx, $rep,
                           $need_array);
        }
        if ($idx < $#$reqs) {
            sleep $wait if $wait;
            check_error_log($block, $rep);
        }
    }
    sleep $wait if $wait;
    check_error_log($block, $rep);
}

# Number of tests a skip or todo spec "N: ..." covers, and whether it applies.
sub skip_spec ($) {
    my $block = shift;
    my $name = $block->name;

    if (defined(my $s = sec($block, 'skip_nginx'))) {
        $s =~ /^\s*(\d+)\s*:\s*([<>]=?)\s*(\d+)\.(\d+)\.(\d+)(?:\s*:\s*(.*))?\s*$/
            or bail_out("$name - Invalid --- skip_nginx spec: $s");
        my $ver = sprintf "%d.%03d%03d", $3, $4, $5;
        my $cmp = $2;
        my $hit = eval "$NginxVersion $cmp $ver";
        return ($1, $6 || "nginx version $cmp $3.$4.$5") if $hit;
    }
    if (defined(my $s = sec($block, 'skip_eval'))) {
        $s =~ /^\s*(\d+)\s*:\s*(.*)/s
            or bail_out("$name - Invalid --- skip_eval spec: $s");
        my $n = $1;
        my $hit = eval $2;
        bail_out("$name - skip_eval - failed to eval \"$2\": $@") if $@;
        return ($n, 'skip_eval') if $hit;
    }
    return ();
}

sub run_block ($) {
    my $block = shift;
    my $name = $block->name;
    return if defined sec($block, 'SKIP');

    for my $s (@Unsupported) {
        bail_out("$name - section --- $s is not supported by this "
                 . "Test::Nginx::Socket (t/lib); use the real one")
            if defined $block->{$s};
    }

    my $ports = {};
    my $config = expand_env(sec($block, 'config'), $name, $ports);
    my $must_die = sec($block, 'must_die');
    my ($nskip, $skip_reason) = skip_spec($block);

    my $restart;
    if (!defined $config) {
        bail_out("$name - No '--- config' section specified and could not "
                 . "get previous one.") unless defined $PrevConfig;
        $restart = 0;
    } else {
        $restart = !defined $PrevConfig || $config ne $PrevConfig
                   || $ForceRestartOnTest || defined $must_die
                   || !is_running(read_pid() // 0);
        $PrevConfig = $config;
    }

    if ($restart && !defined $nskip) {
        died_log($name);
        stop_nginx();
        setup_server_root();
        write_user_files($block, $ports);
        write_config($block, $config, $ports);
        bail_out("$name - Cannot find the nginx executable $NginxBinary")
            unless can_run($NginxBinary);
        $ErrLogFilePos = 0;
        if (defined $must_die) {
            for my $i (1 .. $RepeatEach) {
                start_nginx($block, $must_die);
                check_error_log($block, $i - 1);
            }
            undef $PrevConfig;
            return;
        }
        start_nginx($block, undef);
        for my $h (@PostStartHandlers) { $h->($block) }
    }

    if (defined(my $init = sec($block, 'init'))) {
        eval $init;
        bail_out("$name - init failed: $@") if $@;
    }

    $ErrLogFilePos = 0;
    my $todo = sec($block, 'todo');
    for my $i (1 .. $RepeatEach) {
        write_user_files($block, $ports) if $i > 1;
        if (defined $nskip) {
            SKIP: { Test::More::skip("$name - $skip_reason", $nskip) }
        } elsif (defined $todo) {
            $todo =~ /^\s*(\d+)\s*:\s*(.*)/s
                or bail_out("$name - Invalid --- todo spec: $todo");
            TODO: { Test::More::todo_skip("$name - $2", $1) }
        } else {
            run_requests($block, $i - 1);
        }
    }

    if ($UseValgrind) {
        stop_nginx();
    }
}

# An nginx that stopped on its own (not by us): the end of its error log,
# before the next start wipes it.
sub died_log ($) {
    my $name = shift;
    my $pid = read_pid();
    return if !defined $pid || is_running($pid);
    open my $in, '<', $ErrLogFile or return;
    my @lines = <$in>;
    close $in;
    splice @lines, 0, @lines - 40 if @lines > 40;
    Test::More::diag("before $name: nginx $pid is gone; its error log "
                     . "ended:\n" . join '', @lines);
}

sub can_run ($) {
    my $cmd = shift;
    return -f $cmd && -x $cmd ? $cmd : undef if $cmd =~ m{/};
    for my $dir (split /:/, $ENV{PATH} // '') {
        next if $dir eq '';
        return "$dir/$cmd" if -f "$dir/$cmd" && -x "$dir/$cmd";
    }
    return undef;
}

sub run_tests () {
    $NginxVersion = nginx_version();
    $ENV{TEST_NGINX_SERVER_PORT} //= $ServerPort;
    my @blocks = Test::Base::blocks();
    @blocks = shuffle(@blocks) unless $NoShuffle;
    for my $block (@blocks) {
        $_->($block) for @BlockPreprocessors;
        $block->set_value('name', "$0 " . $block->name);
        run_block($block);
    }
    cleanup();
}

END {
    return if $InSubprocess;
    cleanup();
    if (!$ENV{TEST_NGINX_NO_CLEAN} || $UseValgrind) {
        local $?;
        stop_nginx() if -f $PidFile;
    }
    if ($Randomize && -d $ServRoot && $ServRoot =~ m{/t/servroot_\d+$}) {
        local $?;
        remove_tree($ServRoot);
    }
}

1;
