# Test::Nginx::Socket's requests: building them from a block's sections and
# sending them over HTTP/1.1 (sockets) or HTTP/2 (curl).  Part of package
# Test::Nginx::Socket, loaded by Socket.pm, which holds the settings.
package Test::Nginx::Socket;

use strict;
use warnings;

use POSIX qw(:sys_wait_h EAGAIN EWOULDBLOCK EINTR);
use Time::HiRes qw(sleep time);
use IO::Socket::INET ();
use IO::Select ();
use List::Util qw(min);

our ($ChildPid, $Http2Port, $InSubprocess, $ServRoot, $ServerAddr,
     $ServerName, $ServerPortForClient, $TestNginxSleep, $UseHttp2);

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
            died_log($name);
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

1;
