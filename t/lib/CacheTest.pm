package CacheTest;

# usage (after GoblinTest, before Test::Nginx::Socket):
#     use CacheTest;
#     cache_start();     # goblin-store, the test origin, the suite's config
#
# The cache-mode suites' rig: a real goblin-store, t/lib/origin.py as the
# origin (counts requests per path, knows every body's sha256), and a
# server whose /o/ is a goblin cache filling from @fill (proxy_pass to
# the origin), over HTTP/1.1 on the block's port and HTTP/2 on
# $TEST_NGINX_H2_PORT.  Clients are curl (chunked, HTTP/2; a slow
# one reads with fetch_slow(): curl 7.88's --limit-rate lets bursts by),
# many at once with --parallel; every body is checked by its sha256.

use strict;
use warnings;

use Digest::SHA ();
use Exporter ();
use File::Temp qw(tempdir);
use IO::Socket::INET;
use POSIX qw(SIGKILL WNOHANG);
use Socket ();
use Time::HiRes qw(sleep time);

use GoblinTest ();

our @ISA = ('Exporter');
our @EXPORT = qw(cache_start origin_get origin_count origin_sha
                 fetch fetch_many fetch_later fetch_slow stored port h2_port
                 wait_until);

our ($OriginPid, $OriginPort, $Dir);

sub cache_start (%) {
    my %o = @_;
    GoblinTest::goblin_start(%o);
    $Dir = tempdir('goblin-cache-test.XXXXXX', DIR => '/var/tmp',
                   CLEANUP => 1);
    $OriginPort = GoblinTest::free_port();
    $OriginPid = fork() // die "fork: $!\n";
    if ($OriginPid == 0) {
        exec '/usr/bin/python3', "$GoblinTest::Top/t/lib/origin.py",
             $OriginPort;
        die "exec origin.py: $!\n";
    }
    &GoblinTest::wait_for(sub {
        IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                              PeerPort => $OriginPort)
    }, 10) or die "the test origin did not come up\n";
    $ENV{TEST_NGINX_ORIGIN_PORT} = $OriginPort;
    $ENV{TEST_NGINX_H2_PORT} = GoblinTest::free_port();

    Test::Nginx::Socket::add_block_preprocessor(sub {
        my $block = shift;
        $block->set_value('main_config',
                          "load_module $ENV{TEST_NGINX_GOBLIN_MODULE};")
            unless defined $block->main_config;
        $block->set_value('http_config', <<"END") unless defined $block->http_config;
    goblin_storaged unix:$ENV{TEST_NGINX_GOBLIN_SOCKET};
    upstream origin {
        server 127.0.0.1:$OriginPort;
        keepalive 16;
    }
    log_format cache '\$request \$status \$goblin_cache_status';
END
        $block->set_value('config', <<'END') unless defined $block->config;
    listen 127.0.0.1:$TEST_NGINX_H2_PORT http2;
    access_log logs/cache.log cache;
    location /o/ {
        goblin;
        goblin_cache on;
        goblin_origin @fill;
        add_header X-Cache $goblin_cache_status;
    }
    location /off/ {
        goblin;
        goblin_cache on;
        goblin_origin @fill;
        goblin_cache_abandon off;
        goblin_key $uri;
        add_header X-Cache $goblin_cache_status;
    }
    location /v0/ {
        goblin;
        goblin_cache on;
        goblin_origin @fill;
        goblin_cache_valid 0;
        goblin_key $uri;
        add_header X-Cache $goblin_cache_status;
    }
    location /rv/ {
        goblin;
        goblin_cache on;
        goblin_origin @fill;
        goblin_cache_revalidate 1h;
        goblin_key $uri;
        add_header X-Cache $goblin_cache_status;
    }
    location /keep/ {
        goblin;
        goblin_cache on;
        goblin_origin @fill;
        goblin_cache_restart keep;
        goblin_key $uri;
        add_header X-Cache $goblin_cache_status;
    }
    location /p1/ {
        goblin;
        goblin_cache on;
        goblin_origin @fill;
        goblin_cache_pass 1s;
        goblin_key $uri;
    }
    location /np/ {
        goblin;
        goblin_cache on;
        goblin_origin @fill;
        goblin_cache_pass off;
        goblin_key $uri;
    }
    location /lk/ {
        goblin;
        goblin_cache on;
        goblin_origin @fill;
        goblin_key k$request_uri;
    }
    location /purge/ {
        goblin;
        goblin_cache_purge on;
        allow 127.0.0.1;
        deny all;
    }
    location /nopurge/ {
        goblin;
        goblin_cache_purge on;
        deny all;
    }
    location @fill {
        proxy_pass http://origin;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
    }
    location = /status {
        goblin_status;
    }
END
    });
}

END {
    local $?;
    if ($OriginPid) {
        kill SIGKILL, $OriginPid;
        waitpid($OriginPid, 0);
    }
}

sub port () { Test::Nginx::Socket::server_port() }
sub h2_port () { $ENV{TEST_NGINX_H2_PORT} }

# The test origin's answer to GET <path> (its /count/, /sha/ pages).
sub origin_get ($) {
    my ($st, $h, $body) = GoblinTest::http_request($OriginPort, 'GET', shift);
    return $body;
}

sub origin_count ($) { origin_get("/count" . shift) + 0 }
sub origin_sha ($) { origin_get("/sha" . shift) }

# Whether the store holds <key> whole (memcache GET).
sub stored ($) { defined GoblinTest::mc_get(shift) }

sub wait_until (&$) { &GoblinTest::wait_for(@_) }

# curl's write-out of one transfer, as a hash
my $WriteOut = '%{http_code} %{size_download} %{time_starttransfer} '
               . '%{time_total} %{http_version}\n';

sub parse_out ($$) {
    my ($line, $file) = @_;
    my %r;
    @r{qw(code size ttfb total version)} = split ' ', $line // '';
    $r{code} //= 0;
    $r{size} //= 0;
    if (open my $in, '<', $file) {
        binmode $in;
        local $/;
        my $body = <$in> // '';
        $r{sha} = Digest::SHA::sha256_hex($body);
        close $in;
    }
    if (open my $hin, '<', "$file.h") {
        local $/;
        my $head = <$hin> // '';
        ($r{xcache}) = $head =~ /^x-cache: (\S+)/mi;
        $r{head} = $head;
    }
    return \%r;
}

# One GET of <path> with curl; <opts>: h2 => 1, args => [...]: a hash of
# code, size, ttfb, total, sha, xcache, head, rc (curl's exit status: 18
# for a body cut short of its length, 92 an HTTP/2 stream reset).
sub fetch ($;%) {
    my ($path, %o) = @_;
    my @r = fetch_many(1, $path, %o);
    return $r[0];
}

# curl in the background: returns a sub that waits and gives its result
sub fetch_later ($;%) {
    my ($path, %o) = @_;
    my $pid = open my $out, '-|' // die "fork: $!\n";
    if ($pid == 0) {
        my $r = fetch($path, %o);
        print join("\t", map { "$_=" . ($r->{$_} // '') }
                         qw(code size ttfb total sha rc xcache)), "\n";
        POSIX::_exit(0);
    }
    return sub { later_result($out) };
}

# What a background fetch printed: its fields, as a hash.
sub later_result ($) {
    my $out = shift;
    my $line = <$out> // '';
    close $out;
    chomp $line;
    return { map { split /=/, $_, 2 } split /\t/, $line };
}

# A GET of <path> over HTTP/1.1 read at <rate> bytes a second at most (16
# KiB at a time, a small receive buffer), in the background: returns a sub
# that waits and gives code, size, total (seconds) and sha.
sub fetch_slow ($$) {
    my ($path, $rate) = @_;
    my $pid = open my $out, '-|' // die "fork: $!\n";
    if ($pid == 0) {
        my %r = (code => 0, size => 0);
        my $t0 = time;
        my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                      PeerPort => port());
        if ($s) {
            setsockopt($s, Socket::SOL_SOCKET(), Socket::SO_RCVBUF(),
                       16384);
            print $s "GET $path HTTP/1.1\r\nHost: localhost\r\n"
                     . "Connection: close\r\n\r\n";
            my ($data, $got) = ('', 0);
            while (1) {
                my $n = sysread($s, my $buf, 16384);
                last unless $n;
                $data .= $buf;
                $got += $n;
                my $ahead = $t0 + $got / $rate - time;
                sleep $ahead if $ahead > 0;
            }
            my ($head, $body) = split /\r\n\r\n/, $data, 2;
            ($r{code}) = ($head // '') =~ m{^HTTP/1\.1 (\d+)};
            $r{size} = length($body // '');
            $r{sha} = Digest::SHA::sha256_hex($body // '');
        }
        $r{total} = time - $t0;
        print join("\t", map { "$_=" . ($r{$_} // '') }
                         qw(code size total sha)), "\n";
        POSIX::_exit(0);
    }
    return sub { later_result($out) };
}

# <n> GETs of <path> at once (curl --parallel, one connection each).
sub fetch_many ($$;%) {
    my ($n, $path, %o) = @_;
    my $url = $o{h2} ? "http://127.0.0.1:" . h2_port() . $path
                     : "http://127.0.0.1:" . port() . $path;
    my @files = map { "$Dir/b$$.$_." . int(rand 1e9) } 1 .. $n;
    my @cmd = ('curl', '-s', '--no-progress-meter', '--max-time', $o{timeout} || 30,
               $o{h2} ? '--http2-prior-knowledge' : (),
               $n > 1 ? ('--parallel', '--parallel-immediate',
                         '--parallel-max', $n) : (),
               '-w', $WriteOut, @{ $o{args} || [] });
    push @cmd, '-D', "$_.h", '-o', $_, $url for @files;
    open my $out, '-|', @cmd or die "curl: $!\n";
    my @lines = <$out>;
    close $out;
    my $rc = $? >> 8;
    # --parallel prints in completion order: match lines to files by size
    # is not possible, so each line's order does not matter to the checks
    my @res;
    for my $i (0 .. $#files) {
        my $r = parse_out($lines[$i], $files[$i]);
        $r->{rc} = $rc;
        push @res, $r;
        unlink $files[$i], "$files[$i].h";
    }
    return @res;
}

1;
