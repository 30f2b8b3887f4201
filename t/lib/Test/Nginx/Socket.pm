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

# ---- server root and nginx.conf -------------------------------------------

sub setup_server_root () {
    if (-d $ServRoot) {
        remove_tree($ConfDir, $HtmlDir, $LogDir, glob("$ServRoot/*_temp"),
                    glob("$ServRoot/*_cache"));
        rmdir $ServRoot
            or bail_out("Can't remove $ServRoot (not empty?): $!");
    }
    for my $d ($ServRoot, $LogDir, $HtmlDir, $ConfDir) {
        mkdir $d or bail_out("Failed to do mkdir $d: $!\n");
    }
    open my $out, '>', "$HtmlDir/index.html"
        or bail_out("Can't open $HtmlDir/index.html for writing: $!\n");
    print $out '<html><head><title>It works!</title></head>'
               . '<body>It works!</body></html>';
    close $out;
}

sub write_user_files ($$) {
    my ($block, $ports) = @_;
    my $name = $block->name;
    my $files = sec($block, 'user_files');
    return unless defined $files;

    if (!ref $files) {
        my @list;
        for my $line (split /^/, $files) {
            if ($line =~ /^>>> (\S+)(?:\s+(.+))?/) {
                push @list, [$1, '', $2];
            } elsif (@list) {
                $list[-1][1] .= $line;
            }
        }
        $files = \@list;
    } elsif (ref $files ne 'ARRAY') {
        bail_out("$name - user_files: only a string or an ARRAY is accepted");
    }

    for my $f (@$files) {
        my ($fname, $body, $date) = @$f;
        my $path = $fname =~ m{^/} ? $fname : "$HtmlDir/$fname";
        (my $dir = $path) =~ s{/[^/]*$}{};
        make_path($dir) unless -d $dir;
        open my $out, '>', $path
            or bail_out("$name - Cannot open $path for writing: $!\n");
        binmode $out;
        print $out expand_env($body // '', $name, $ports);
        close $out;
        if ($date) {
            system("TZ=GMT touch -t '$date' '$path'") == 0
                or bail_out("$name - cannot set the date of $path");
        }
    }
}

sub write_config ($$$) {
    my ($block, $config, $ports) = @_;
    my $name = $block->name;
    my $http_config = expand_env(sec($block, 'http_config'), $name, $ports)
                      // '';
    my $main_config = sec($block, 'main_config') // '';
    my $post_main_config = sec($block, 'post_main_config') // '';
    my $server_name = sec($block, 'server_name') // $ServerName;
    my $log_level = sec($block, 'log_level') // $LogLevel;

    if ($LoadModules) {
        $main_config .= join ' ', map { "load_module $_;" }
                                  grep { length } split /\s+/, $LoadModules;
    }
    $main_config = expand_env($main_config, $name, $ports);
    $post_main_config = expand_env($post_main_config, $name, $ports);
    $server_name =~ s/\\/\\\\/g;
    $server_name =~ s/'/\\'/g;

    my $env = join '', map { my $v = /\s/ ? "'$_'" : $_; "env $v;\n" }
                           qw(LD_PRELOAD LD_LIBRARY_PATH ASAN_OPTIONS
                              UBSAN_OPTIONS), @EnvToNginx;
    my $root = $NoRootLocation ? '' : <<"EOC";
        location / {
            root $HtmlDir;
            index index.html index.htm;
        }
EOC
    my $listen_h2 = $UseHttp2 ? "        listen          $Http2Port http2;\n"
                              : '';
    my $user = defined $WorkerUser ? "user $WorkerUser;\n"
             : $> == 0 ? "user root;\n" : '';

    open my $out, '>', $ConfFile
        or bail_out("Can't open $ConfFile for writing: $!\n");
    print $out <<"EOC";
worker_processes  $Workers;
daemon $DaemonEnabled;
master_process $MasterProcessEnabled;
error_log $ErrLogFile $log_level;
pid       $PidFile;
$env
$main_config

http {
    access_log $AccLogFile;

    default_type text/plain;
    keepalive_timeout  68;

$http_config

    server {
        listen          $ServerPort;
$listen_h2        server_name     '$server_name';

        client_max_body_size 30M;

        # Begin preamble config...
$ConfigPreamble
        # End preamble config...

        # Begin test case config...
$config
        # End test case config.

$root    }
}

$post_main_config

events {
    accept_mutex off;
    worker_connections  $WorkerConnections;
}
$user
EOC
    close $out;
}

# ---- the nginx process ----------------------------------------------------

sub read_pid () {
    open my $in, '<', $PidFile or return undef;
    my $pid = <$in>;
    close $in;
    return undef unless defined $pid;
    chomp $pid;
    return $pid =~ /^\d+$/ ? $pid : undef;
}

# Sends QUIT, waits up to timeout(), then TERM and KILL: nginx runs daemonized,
# so it is not our child and is watched with kill 0.
sub stop_process ($) {
    my $pid = shift;
    return unless is_running($pid);
    kill SIGQUIT, $pid;
    my $deadline = time + $Timeout;
    my $reap = defined $ChildPid && $pid == $ChildPid;
    while (time < $deadline) {
        waitpid($pid, WNOHANG) if $reap;
        return unless is_running($pid);
        sleep 0.02;
    }
    warn "WARNING: nginx $pid did not quit in ${Timeout}s; terminating it\n";
    for my $sig (SIGTERM, SIGKILL) {
        kill $sig, $pid;
        for (1 .. 50) {
            waitpid($pid, WNOHANG) if $reap;
            return unless is_running($pid);
            sleep 0.02;
        }
    }
}

sub stop_nginx () {
    my $pid = read_pid();
    stop_process($pid) if defined $pid;
    if (defined $ChildPid) {
        stop_process($ChildPid);
        waitpid($ChildPid, 0);
        undef $ChildPid;
    }
    unlink $PidFile;
}

sub nginx_cmd () {
    return "$NginxBinary -p $ServRoot/ -c $ConfFile";
}

# Starts nginx for <block>.  Returns 1 when it runs (or, for must_die, the
# expected failure was checked).
sub start_nginx ($$) {
    my ($block, $must_die) = @_;
    my $name = $block->name;
    my $cmd = nginx_cmd();

    if ($UseValgrind && !defined $must_die) {
        my $opts = $UseValgrind =~ /^\d+$/
            ? '--tool=memcheck --leak-check=full --show-possibly-lost=no'
              . ' --num-callers=100 --gen-suppressions=all'
              . (-f 'valgrind.suppress'
                 ? ' --suppressions=valgrind.suppress' : '')
            : $UseValgrind;
        my $pid = fork();
        bail_out("$name - fork() failed: $!") unless defined $pid;
        if ($pid == 0) {
            $InSubprocess = 1;
            Test::More->builder->no_ending(1);
            setpgrp;
            exec "exec valgrind -q $opts $cmd";
            die "exec valgrind failed: $!\n";
        }
        $ChildPid = $pid;
        warn "$name\n";
        sleep $TestNginxSleep;
        return 1;
    }

    my $errfile = "$LogDir/nginx-start.stderr";
    my $waited = 0;
    for (my $i = 1; ; $i++) {
        system("$cmd >/dev/null 2>$errfile");
        my $status = $?;
        my $errs = do { local (@ARGV, $/) = ($errfile); <> } // '';
        print STDERR $errs if $errs ne '' && !defined $must_die;

        if (defined $must_die) {
            my $code = $status >> 8;
            if ($status == -1) {
                Test::More::fail("$name - failed to execute the nginx "
                                 . "command line");
            } elsif ($status & 128) {
                Test::More::fail("$name - nginx core dumped");
            } elsif (looks_like_number($must_die)) {
                Test::More::is($must_die, $code,
                               "$name - die with the expected exit code");
            } else {
                Test::More::isnt($status, 0, "$name - die as expected");
            }
            if ($status == 0) {
                warn "WARNING: $name - nginx must die but it does not; "
                     . "killing it\n";
                for (1 .. 50) { last if -f $PidFile; sleep $TestNginxSleep }
                stop_nginx();
            }
            return 1;
        }

        last if $status == 0;
        # only a port still held by a previous run is worth waiting for
        bail_out("$name - Cannot start nginx using command \"$cmd\" "
                 . "(status code $status): $errs")
            if $errs !~ /Address already in use/ || $waited >= 10;
        my $delay = min(0.1 * $i, 1);
        sleep $delay;
        $waited += $delay;
    }
    sleep $TestNginxSleep;
    return 1;
}

sub cleanup () {
    $_->() for @CleanupHandlers;
    @CleanupHandlers = ();
    if (defined $ChildPid) {
        stop_process($ChildPid);
        waitpid($ChildPid, 0);
        undef $ChildPid;
    }
}

# ---- requests -------------------------------------------------------------

sub parse_more_headers ($) {
    my $in = shift;
    my ($out, $chunked) = ('', 0);
    for my $h (split /\n+/, $in) {
        next if $h =~ /^\s*#/;
        my ($k, $v) = split /:\s*/, $h, 2;
        $v //= '';
        $chunked = 1 if lc $k eq 'transfer-encoding' && $v eq 'chunked';
        $out .= "$k: $v\r\n";
    }
    return ($out, $chunked);
}

# Builds the raw HTTP request from a "--- request" text: "METHOD [URI
# [VERSION]]" on the first line, the body after it (trimmed, with a
# Content-Length unless more_headers brings one or a chunked encoding).
sub build_request ($$$$) {
    my ($name, $text, $more_headers, $conn) = @_;
    1 while $text =~ s/\A(?:\s*#[^\n]*\n|\s+)//;
    my ($line, $body) = split /\n/, $text, 2;
    bail_out("$name - Request line should be non-empty")
        unless defined $line && $line =~ /\S/;
    my @w = split ' ', $line;
    bail_out("$name - Request line is not valid. Should be "
             . "'meth [url [version]]' but got \"$line\".") if @w > 3;
    my ($meth, $uri, $ver) = (@w, undef, undef);
    $uri //= '/';
    $ver //= 'HTTP/1.1';

    my ($hdrs, $chunked) = parse_more_headers($more_headers);
    $body //= '';
    my $len = '';
    if ($body ne '' && !$chunked && $hdrs !~ /(?:^|\n)Content-Length:/) {
        $body =~ s/^\s+|\s+$//gs;
        $len = "Content-Length: " . length($body) . "\r\n";
    }
    my $std = '';
    $std .= "Host: $ServerName\r\n" if $hdrs !~ /(?:^|\n)Host:/mi;
    $std .= "Connection: $conn\r\n" if $hdrs !~ /(?:^|\n)Connection/mi;
    return "$meth $uri $ver\r\n$std$hdrs$len\r\n$body";
}

# The requests of <block>: a list of packet lists, each packet a hash
# { value => bytes, delay_before => seconds }.
sub block_requests ($) {
    my $block = shift;
    my $name = $block->name;
    my $raw = sec($block, 'raw_request');

    if (defined $raw) {
        return [[ map { ref $_ ? $_ : { value => $_ } }
                      (ref $raw eq 'ARRAY' ? @$raw : ($raw)) ]];
    }

    my $req = sec($block, 'request');
    bail_out("$name - request empty") unless defined $req;
    my $mh = sec($block, 'more_headers') // '';
    my @reqs = ref $req eq 'ARRAY' ? @$req : ($req);
    my @out;
    for my $i (0 .. $#reqs) {
        my $h = ref $mh eq 'ARRAY' ? $mh->[$i] : $mh;
        bail_out("$name - --- more_headers lacks data for request $i")
            unless defined $h;
        my $one = $reqs[$i];
        if (!ref $one) {
            push @out, [{ value => build_request($name, $one, $h,
                                                 'close') }];
        } elsif (ref $one eq 'ARRAY') {
            # packets: build the whole request, then cut it at the same
            # lengths the packets had (the added headers go to the first)
            my @p = map { ref $_ ? $_ : { value => $_ } } @$one;
            my $whole = join '', map { $_->{value} } @p;
            my $built = build_request($name, $whole, $h, 'close');
            my $extra = length($built) - length($whole);
            my @cut;
            for my $k (0 .. $#p) {
                my $n = length($p[$k]{value}) + ($k == 0 ? $extra : 0);
                $n = length $built if $k == $#p;
                push @cut, { %{ $p[$k] }, value => substr($built, 0, $n, '') };
            }
            push @out, \@cut;
        } else {
            bail_out("$name - invalid --- request: MUST be a string or an "
                     . "array of requests");
        }
    }
    return \@out;
}

sub connect_server ($$) {
    my ($name, $timeout) = @_;
    for (my $tries = 1; ; $tries++) {
        my $sock = IO::Socket::INET->new(PeerAddr => $ServerAddr,
                                         PeerPort => $ServerPortForClient,
                                         Proto => 'tcp',
                                         Timeout => $timeout);
        return $sock if $sock;
        my $err = $!;
        if (defined $ChildPid && waitpid($ChildPid, WNOHANG) != 0) {
            Test::More->builder->no_ending(1);
            Test::More::fail("$name - Can't connect to $ServerAddr:"
                             . "$ServerPortForClient: $err (nginx is gone)");
            return undef;
        }
        if ($tries >= 50) {
            Test::More->builder->no_ending(1);
            Test::More::fail("$name - Can't connect to $ServerAddr:"
                             . "$ServerPortForClient: $err (aborted)");
            return undef;
        }
        sleep min(($TestNginxSleep + $TestNginxSleep * $tries) * $tries / 2,
                  1);
    }
}

# Sends the packets of one request and reads until the server closes or
# nothing happens for <timeout> seconds.  Returns the raw response.
sub send_request ($$$) {
    my ($packets, $timeout, $block) = @_;
    my $name = $block->name;

    if ($UseHttp2 && @$packets == 1 && !defined sec($block, 'raw_request')
        && !defined sec($block, 'no_http2')
        && !defined sec($block, 'raw_response_headers_like')
        && !defined sec($block, 'raw_response_headers_unlike'))
    {
        my $resp = send_request_h2($packets->[0]{value}, $timeout);
        return $resp if defined $resp;
    }
    my $middle = parse_time(sec($block, 'raw_request_middle_delay'));
    my $sock = connect_server($name, $timeout) or return undef;
    $sock->blocking(0);

    my @todo = @$packets;
    my ($buf, $off, $resp) = ((shift @todo)->{value}, 0, '');
    my $sel = IO::Select->new($sock);
    my $writing = 1;

    for (;;) {
        my ($r, $w) = IO::Select->select($sel, $writing ? $sel : undef,
                                         undef, $timeout);
        if (!$r && !$w) {
            next if $! == EINTR;
            close $sock;
            if (!defined sec($block, 'abort')) {
                Test::More->builder->no_ending(1);
                Test::More::fail("ERROR: client socket timed out - $name\n");
            }
            return $resp;
        }
        if ($w && @$w) {
            while ($writing) {
                if ($off == length $buf) {
                    my $next = shift @todo;
                    if (!$next) {
                        $writing = 0;
                        last;
                    }
                    my $delay = $next->{delay_before} // $middle;
                    sleep $delay if $delay;
                    ($buf, $off) = ($next->{value}, 0);
                    next;
                }
                my $n = syswrite($sock, $buf, length($buf) - $off, $off);
                if (!defined $n) {
                    last if $! == EAGAIN || $! == EWOULDBLOCK;
                    warn "write failed: $!\n";
                    $writing = 0;
                    last;
                }
                $off += $n;
            }
        }
        if ($r && @$r) {
            for (;;) {
                my $n = sysread($sock, my $chunk, 65536);
                if (!defined $n) {
                    last if $! == EAGAIN || $! == EWOULDBLOCK;
                    warn "WARNING: $name - HTTP response read failure: $!\n";
                    close $sock;
                    return $resp;
                }
                if ($n == 0) {
                    close $sock;
                    return $resp;
                }
                $resp .= $chunk;
            }
        }
    }
}

# One request over HTTP/2 with curl: returns its response as HTTP/1.1-like
# text (the status line "HTTP/2 CODE", lower-case headers, the body), or
# undef when the request cannot go over HTTP/2 as it is (another version,
# a chunked or explicit length, a header curl would not send as given).
sub send_request_h2 ($$) {
    my ($raw, $timeout) = @_;
    my ($head, $body) = split /\r\n\r\n/, $raw, 2;
    my ($line, @lines) = split /\r\n/, $head;
    my ($meth, $uri, $ver) = split ' ', $line // '';
    return undef unless defined $ver && $ver eq 'HTTP/1.1' && $uri =~ m{^/};
    my @args = ('curl', '-sS', '--http2-prior-knowledge', '--path-as-is',
                '-g', '--max-time', $timeout + 1);
    push @args, $meth eq 'HEAD' ? '-I' : ('-i', '-X', $meth);
    for my $h (@lines) {
        my ($k, $v) = $h =~ /^([^:]+):\s*(.*)$/ or return undef;
        next if $k =~ /^(connection|keep-alive)$/i;
        # curl sends the length of the body it is given
        if (lc $k eq 'content-length') {
            return undef unless $v eq length($body // '');
            next;
        }
        return undef if $k =~ /^(transfer-encoding|te|upgrade)$/i
                        || $v eq '';
        push @args, '-H', "$k: $v";
    }
    my $file;
    if (defined $body && $body ne '') {
        $file = "$ServRoot/h2-request-body";
        open my $out, '>', $file or bail_out("$file: $!");
        print $out $body;
        close $out;
        push @args, '--data-binary', "\@$file";
    }
    push @args, "http://$ServerAddr:$Http2Port$uri";
    my $pid = open my $in, '-|';
    bail_out("fork: $!") unless defined $pid;
    if ($pid == 0) {
        $InSubprocess = 1;
        open STDERR, '>', '/dev/null';
        { exec @args }
        POSIX::_exit(127);
    }
    local $/;
    my $resp = <$in> // '';
    close $in;
    my $rc = $? >> 8;
    unlink $file if defined $file;
    # curl 7.88 drops an early answer to a request whose body nginx did
    # not read (HEADERS, then RST_STREAM NO_ERROR): that one goes over
    # HTTP/1.1
    return undef if $rc == 92 && $resp eq '' && defined $file;
    return $resp;
}

# ---- responses ------------------------------------------------------------

package Test::Nginx::Socket::Response;

sub new {
    my ($class, %f) = @_;
    return bless { code => undef, headers => [], content => '', %f }, $class;
}
sub code { $_[0]{code} }
sub content { $_[0]{content} }

# All values of header <name>, joined with ", " as HTTP::Headers does.
sub header {
    my ($self, $name) = @_;
    my @v = map { $_->[1] } grep { lc $_->[0] eq lc $name }
                                 @{ $self->{headers} };
    return @v ? join(', ', @v) : undef;
}

package Test::Nginx::Socket;

# Splits <raw> into a response object, the raw header text and any bytes
# left after the body.
sub parse_response ($$$) {
    my ($name, $raw, $head_req) = @_;
    my $raw_headers = $raw =~ /(.*?\r\n)\r\n/s ? $1 : '';
    my ($head, $body) = split /\r?\n\r?\n/, $raw, 2;
    $head //= '';
    $body //= '';
    my @lines = split /\r?\n/, $head;
    my $status = shift(@lines) // '';
    my $code = $status =~ m{^HTTP/\d+(?:\.\d+)?\s+(\d+)} ? $1 : undef;
    my @headers;
    for (@lines) {
        if (/^\s+(.*)/ && @headers) {
            $headers[-1][1] .= " $1";
        } elsif (/^([^:\s]+)\s*:\s*(.*?)\s*$/) {
            push @headers, [$1, $2];
        }
    }
    my $res = Test::Nginx::Socket::Response->new(code => $code,
                                                  headers => \@headers,
                                                  content => $body);
    return ($res, $raw_headers, undef)
        if defined $code && ($code == 304 || $code == 101);

    my $enc = $res->header('Transfer-Encoding');
    my $len = $res->header('Content-Length');
    my $left;
    if (defined $enc && $enc eq 'chunked') {
        my ($decoded, $pos) = ('', 0);
        for (;;) {
            pos($body) = $pos;
            if ($body =~ /\G0[ \t]*\r\n\r\n/gc) {
                $left = substr($body, pos($body)) if pos($body) < length $body;
                last;
            }
            if ($body =~ /\G[ \t]*([A-Fa-f0-9]+)[ \t]*\r\n/gc) {
                my ($size, $at) = (hex $1, pos($body));
                if ($at + $size + 2 > length($body)
                    || substr($body, $at + $size, 2) ne "\r\n")
                {
                    Test::More->builder->no_ending(1);
                    Test::More::fail("$name - invalid chunked data received");
                    return;
                }
                $decoded .= substr($body, $at, $size);
                $pos = $at + $size + 2;
                next;
            }
            Test::More->builder->no_ending(1);
            Test::More::fail("$name - no last chunk found - "
                             . substr($body, $pos, 80));
            return;
        }
        $res->{content} = $decoded;
    } elsif (defined $len && $len =~ /^\d+$/) {
        if (length $body < $len) {
            warn "WARNING: $name - response body truncated: $len expected, "
                 . "but got " . length($body) . "\n" unless $head_req;
        } elsif (length $body > $len) {
            $left = substr($body, $len);
            $res->{content} = substr($body, 0, $len);
        }
    }
    return ($res, $raw_headers, $left);
}

# The expected value of a check for request <idx>: arrays when the block
# sends several requests.
sub indexed ($$$$) {
    my ($name, $v, $idx, $need_array) = @_;
    if ($need_array) {
        return $v->[$idx] if ref $v eq 'ARRAY';
        bail_out("$name - You asked for many requests, the expected "
                 . "results should be arrays as well.");
    }
    return ref $v eq 'ARRAY' ? $v->[0] : $v;
}

sub parse_headers ($) {
    my $s = shift;
    my @h;
    for (split /\n/, $s) {
        s/^\s+|\s+$//g;
        next if $_ eq '';
        if (s/^!\s*//) {
            push @h, [$_, undef];
        } else {
            my ($k, $v) = split /\s*:\s*/, $_, 2;
            push @h, [$k, $v // ''];
        }
    }
    return @h;
}

sub subst_port ($) {
    my $s = shift;
    return $s if !defined $s || ref $s;
    $s =~ s/\$ServerPortForClient\b/$ServerPortForClient/g;
    $s =~ s/\$ServerPort\b/$ServerPort/g;
    return $s;
}

sub check_response ($$$$$$) {
    my ($block, $res, $raw_headers, $idx, $rep, $need_array) = @_;
    my $name = $block->name;
    my $code = ($res && $res->code) || '';

    if (defined(my $like = sec($block, 'error_code_like'))) {
        my $v = indexed($name, $like, $idx, $need_array);
        Test::More::like($code, qr/$v/sm, "$name - status code ok");
    } elsif (defined(my $want = sec($block, 'error_code'))) {
        Test::More::is($code, indexed($name, $want, $idx, $need_array),
                       "$name - status code ok");
    } else {
        Test::More::is($code, 200, "$name - status code ok");
    }

    if (defined(my $v = sec($block, 'raw_response_headers_like'))) {
        $v = indexed($name, $v, $idx, $need_array);
        Test::More::like($raw_headers, qr/$v/s,
                         "$name - raw resp headers like");
    }
    if (defined(my $v = sec($block, 'raw_response_headers_unlike'))) {
        $v = indexed($name, $v, $idx, $need_array);
        Test::More::unlike($raw_headers, qr/$v/s,
                           "$name - raw resp headers unlike");
    }

    if (defined(my $rh = sec($block, 'response_headers'))) {
        for my $h (parse_headers(indexed($name, $rh, $idx, $need_array))) {
            my ($k, $v) = @$h;
            if (!defined $v) {
                Test::More::unlike($raw_headers, qr/^\s*\Q$k\E\s*:/msi,
                    "$name - header $k not present in the raw headers");
                next;
            }
            Test::More::is(($res && $res->header($k)) // '', subst_port($v),
                           "$name - header $k ok");
        }
    } elsif (defined(my $rhl = sec($block, 'response_headers_like'))) {
        for my $h (parse_headers(indexed($name, $rhl, $idx, $need_array))) {
            my ($k, $v) = @$h;
            $v //= '';
            Test::More::like(($res && $res->header($k)) // '', qr/^$v$/,
                             "$name - header $k like ok");
        }
    }

    my $content = $res ? $res->content : undef;
    if (defined(my $rb = sec($block, 'response_body'))) {
        my $want = subst_port(indexed($name, $rb, $idx, $need_array));
        my $desc = "$name - response_body - response is expected "
                   . "(repeated req $rep, req $idx)";
        if (ref $want) {
            Test::More::like($content, $want,
                             "$name - response_body - like (repeated req "
                             . "$rep, req $idx)");
        } else {
            is_str($content, $want, $desc);
        }
    } elsif (defined sec($block, 'response_body_like')
             || defined sec($block, 'response_body_unlike'))
    {
        my $type = defined sec($block, 'response_body_like')
                   ? 'like' : 'unlike';
        my $pat = subst_port(indexed($name, sec($block, "response_body_$type"),
                                     $idx, $need_array));
        my $summary = $content // '';
        $summary =~ s/^\s+|\s+$//g;
        $summary =~ s/\s+/ /g;
        $summary = substr($summary, 0, 60);
        my $desc = "$name - response_body_$type - response is expected "
                   . "($summary)";
        $type eq 'like'
            ? Test::More::like($content, qr/$pat/s, $desc)
            : Test::More::unlike($content, qr/$pat/s, $desc);
    }
}

# ---- error log ------------------------------------------------------------

sub error_log_data () {
    sleep $TestNginxSleep * 3;
    open my $in, '<', $ErrLogFile or return [];
    seek $in, $ErrLogFilePos, 0 if !$CheckAccumErrLog && $ErrLogFilePos;
    my @lines = <$in>;
    $ErrLogFilePos = tell $in unless $CheckAccumErrLog;
    close $in;
    return \@lines;
}

sub patterns ($) {
    my $p = shift;
    return [$p] if ref $p eq 'Regexp';
    return [@$p] if ref $p eq 'ARRAY';
    chomp $p;
    return [split /\n+/, $p];
}

sub matches ($$) {
    my ($line, $pat) = @_;
    return ref $pat ? $line =~ $pat : index($line, $pat) >= 0;
}

sub show ($) {
    my $s = shift;
    chomp $s;
    $s =~ s/"/\\"/g;
    $s =~ s/\r/\\r/g;
    $s =~ s/\n/\\n/g;
    return $s;
}

sub check_error_log ($$) {
    my ($block, $rep) = @_;
    my $name = $block->name;
    my $lines;
    my %quiet;

    if (defined(my $p = sec($block, 'error_log'))) {
        my $pats = patterns($p);
        $lines ||= error_log_data();
        for my $pat (@$pats) {
            $quiet{$1} = 1 if !ref $pat && $pat =~ /\[(alert|crit|emerg)/;
            if (grep { matches($_, $pat) } @$lines) {
                Test::More::pass("$name - pattern \"$pat\" matches a line in "
                                 . "error.log (req $rep)");
            } else {
                Test::More::fail("$name - pattern \"$pat\" should match a "
                                 . "line in error.log (req $rep)");
            }
        }
    }

    if (defined(my $p = sec($block, 'no_error_log'))) {
        my $pats = patterns($p);
        $lines ||= error_log_data();
        for my $pat (@$pats) {
            $quiet{$1} = 1 if !ref $pat && $pat =~ /\[(alert|crit|emerg)/;
            my ($hit) = grep { matches($_, $pat) } @$lines;
            if (defined $hit) {
                Test::More::fail("$name - pattern \"" . show($pat)
                                 . "\" should not match any line in error.log"
                                 . " but matches line \"" . show($hit)
                                 . "\" (req $rep)");
            } else {
                Test::More::pass("$name - pattern \"" . show($pat)
                                 . "\" does not match a line in error.log "
                                 . "(req $rep)");
            }
        }
    }

    $lines ||= error_log_data();
    for my $line (@$lines) {
        for my $lvl (qw(alert crit emerg)) {
            warn "WARNING: $name - " . show($line) . "\n"
                if !$quiet{$lvl} && $line =~ /\[$lvl\]/;
        }
        if ($line =~ /AddressSanitizer|LeakSanitizer|runtime error:/) {
            Test::More->builder->no_ending(1);
            chomp $line;
            Test::More::fail("$name - sanitizer report: $line\n");
        }
        if ($line =~ /\bAssertion .*?failed\b/) {
            Test::More->builder->no_ending(1);
            chomp $line;
            Test::More::fail("$name - $line\n");
        }
    }
}

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
