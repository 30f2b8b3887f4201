# Test::Nginx::Socket's responses: parsing them, checking them against a
# block's sections, and checking the error log.  Part of package
# Test::Nginx::Socket, loaded by Socket.pm, which holds the settings.
package Test::Nginx::Socket;

use strict;
use warnings;

use Time::HiRes qw(sleep time);

our ($CheckAccumErrLog, $ErrLogFile, $ErrLogFilePos, $ServerPort,
     $ServerPortForClient, $TestNginxSleep);

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

1;
