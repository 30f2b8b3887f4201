# Test::Nginx::Socket's server side: the server root, the generated
# nginx.conf and the nginx process (start, stop, cleanup).  Part of package
# Test::Nginx::Socket, loaded by Socket.pm, which holds the settings.
package Test::Nginx::Socket;

use strict;
use warnings;

use POSIX qw(:sys_wait_h SIGQUIT SIGTERM SIGKILL);
use Time::HiRes qw(sleep time);
use File::Path qw(make_path remove_tree);
use List::Util qw(min);
use Scalar::Util qw(looks_like_number);

our ($AccLogFile, $ChildPid, $ConfDir, $ConfFile, $ConfigPreamble,
     $DaemonEnabled, $ErrLogFile, $HtmlDir, $Http2Port, $InSubprocess,
     $LoadModules, $LogDir, $LogLevel, $MasterProcessEnabled, $NginxBinary,
     $NoRootLocation, $PidFile, $ServRoot, $ServerName, $ServerPort,
     $TestNginxSleep, $Timeout, $UseHttp2, $UseValgrind,
     $WorkerConnections, $WorkerUser, $Workers, @CleanupHandlers,
     @EnvToNginx);

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

1;
