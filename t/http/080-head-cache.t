# usage: prove t/http/080-head-cache.t
# Heads that are not in RAM, through nginx (issue 10).  goblin-store with
# a RAM region of 8 head slots (--memory 2M) gets 12 objects of 2 MiB and
# one of 8 MiB over memcache, and is restarted on the same pools, which
# leaves no head in RAM:
#  - a head-miss GET is byte-exact, its head comes over the ring (nothing
#    from the mapped region), storaged counts a head miss; GETs of it
#    again end with the head sent from the region (a head hit);
#  - HEAD, and Range requests past the head (in the SSD share, in the HDD
#    tail, across the head's end) are byte-exact; one that starts past
#    the head sends nothing from the region and reads at most one chunk;
#  - every object read twice (more objects than head slots) is byte-exact
#    and ram_heads stays within the slots;
#  - kill -9 of goblin-store under GETs: bodies are whole or a correct
#    prefix, never wrong; the worker reattaches to the restarted daemon
#    and every object is served again byte for byte.
BEGIN { push @INC, 't/lib' }
use GoblinTest;
use Test::Nginx::Socket;
use File::Temp ();
use JSON::PP ();
use POSIX qw(_exit SIGKILL SIGTERM);
use Time::HiRes qw(sleep time);

our $Small = 2097152;           # head 256K, SSD share to 1.25M, HDD the rest
our $Big = 8388608;
our @Keys = map { "o$_" } 0 .. 11;
our %Obj = map { $Keys[$_] => payload($Small, 500 + $_) } 0 .. $#Keys;
$Obj{big} = payload($Big, 800);
our @Args = ('--memory', '2M', '--block', '2M');        # 8 head slots

goblin_start(args => \@Args);
for my $k (sort keys %Obj) {
    mc_set($k, $Obj{$k}) eq 'STORED' or die "memcache set $k failed\n";
}
# a clean stop and a start on the same pools: no head is in RAM now
goblin_kill(SIGTERM) == 0 or die "goblin-store did not stop cleanly\n";
goblin_start(args => \@Args);
goblin_defaults();
# every block's config
add_block_preprocessor(sub {
    my $block = shift;
    $block->set_value('config', <<'END') unless defined $block->config;
    location /obj/ {
        goblin;
    }
    location = /status {
        goblin_status;
    }
END
});

# the expected bytes of "bytes=<a>-<b>" of <key>
sub want ($$$) { my ($k, $a, $b) = @_; substr($main::Obj{$k}, $a, $b - $a + 1) }

repeat_each(1);
plan tests => goblin_plan(18);
no_shuffle();
run_tests();

my $port = server_port();

sub status () { http_status($port) }
sub around (&) { status_deltas($port, $_[0]) }

# 1. a head-miss GET, then the same object until its head is admitted
my ($d, $st, $h, $body) = around { http_request($port, 'GET', '/obj/o4') };
ok($st == 200 && $body eq $Obj{o4}, 'a head-miss GET is byte-exact');
ok(($d->{head_misses} // 0) == 1 && ($d->{head_hits} // 0) == 0,
   'storaged counted one head miss ('
   . join(', ', map { "$_ " . ($d->{$_} // 'none') } qw(head_misses head_hits))
   . ')');
is($d->{head_bytes} // -1, 0, 'nothing of it came from the mapped region');

my ($hit, $exact) = (0, 1);
for (1 .. 4) {
    ($d, $st, $h, $body) = around { http_request($port, 'GET', '/obj/o4') };
    $exact &&= $st == 200 && $body eq $Obj{o4};
    if (($d->{head_hits} // 0) == 1) {
        $hit = $d->{head_bytes} // 0;
        last;
    }
}
ok($exact, 'GETs of it again are byte-exact');
is($hit, 262144, 'it ends as a head hit, the head sent from the region');

# 2. ranges past the head of objects never read since the restart
($d, $st, $h, $body) = around {
    http_request($port, 'GET', '/obj/o5', headers => ['Range: bytes=300000-300099'])
};
ok($st == 206 && $body eq want('o5', 300000, 300099),
   'a range in the SSD share of a head-miss object is byte-exact');
is($d->{head_bytes} // -1, 0, 'nothing of it came from the region');
ok(($d->{head_admissions} // 0) == 0, 'its head was not admitted');
($d, $st, $h, $body) = around {
    http_request($port, 'GET', '/obj/big', headers => ['Range: bytes=5000000-5000099'])
};
my $read = $d->{disk_read_bytes} // 0;
ok($st == 206 && $body eq want('big', 5000000, 5000099)
   && ($d->{head_bytes} // -1) == 0 && $read > 0 && $read <= 1 << 20,
   "a range in the HDD tail: byte-exact, one chunk read ($read bytes), "
   . 'nothing from the region');

# 3. more objects than head slots, each read twice
my $all = 1;
for my $round (1 .. 2) {
    for my $k (@Keys, 'big') {
        ($st, $h, $body) = http_request($port, 'GET', "/obj/$k");
        $all &&= $st == 200 && $body eq $Obj{$k};
    }
}
ok($all, scalar(@Keys) + 1 . ' objects, 8 head slots: every GET byte-exact');
my $s = goblin_stats();
ok(defined $s->{ram_heads} && $s->{ram_heads} <= 8,
   'ram_heads within the 8 slots (' . ($s->{ram_heads} // 'none') . ')');

# 4. kill -9 under GETs: a child loops over the objects and writes one line
# per response: "<status> <exact|prefix|wrong> <time>"
my ($logfh, $logfile) = File::Temp::tempfile('goblin-080.XXXXXX',
                                             DIR => '/var/tmp', UNLINK => 1);
my $child = fork() // die "fork: $!\n";
if ($child == 0) {
    my $stop = 0;
    $SIG{TERM} = sub { $stop = 1 };
    $logfh->autoflush(1);
    my $i = 0;
    while (!$stop && $i < 5000) {
        my $k = (@Keys, 'big')[$i++ % (@Keys + 1)];
        my ($st, $h, $body) = eval { http_request($port, 'GET', "/obj/$k",
                                                  timeout => 10) };
        last if $stop;          # the stop interrupted it: not an answer
        $st //= 0;
        $body //= '';
        my $how = $body eq $Obj{$k} ? 'exact'
                : substr($Obj{$k}, 0, length $body) eq $body ? 'prefix'
                : 'wrong';
        printf $logfh "%d %s %.3f\n", $st, $how, time;
    }
    _exit(0);
}

sub responses () {
    open my $in, '<', $logfile or return ();
    return map { [split] } <$in>;
}

ok(wait_for(sub { grep({ $_->[0] == 200 } responses()) >= 5 }, 15),
   'GETs under way before the kill');
goblin_kill(SIGKILL);
my $killed = time;
goblin_start(args => \@Args);
ok(wait_for(sub { (status()->{link} // '') eq 'up' }, 15),
   'the worker reattached to the restarted daemon');
my $up = time;
ok(wait_for(sub { grep({ $_->[0] == 200 && $_->[1] eq 'exact'
                         && $_->[2] > $killed } responses()) >= 10 }, 20),
   'the GETs go on byte-exact after the restart');
kill SIGTERM, $child;
waitpid($child, 0);
my @r = responses();
# a body is cut only by the kill: between it and the worker's reattaching
my @wrong = grep { $_->[0] == 200 && ($_->[1] eq 'wrong'
                   || $_->[1] eq 'prefix'
                      && ($_->[2] < $killed - 1 || $_->[2] > $up)) } @r;
my @odd = grep { $_->[0] !~ /^(200|502|503)$/ } @r;
my %seen;
$seen{"$_->[0] $_->[1]"}++ for @r;
ok(!@wrong && !@odd, scalar(@r) . ' GETs around the kill: none wrong, '
   . 'cut only at the kill, statuses 200/502/503 ('
   . join(', ', map { "$_: $seen{$_}" } sort keys %seen) . ')');

$all = 1;
for my $k (@Keys, 'big') {
    ($st, $h, $body) = http_request($port, 'GET', "/obj/$k");
    $all &&= $st == 200 && $body eq $Obj{$k};
}
ok($all, 'every object survived the kill, byte for byte');
$s = goblin_stats();
is($s->{recovered_objects}, scalar(@Keys) + 1, 'recovered_objects');

goblin_stop();

__DATA__

=== TEST 1: a GET of an object whose head is not in RAM
--- request
GET /obj/o0
--- error_code: 200
--- response_headers
Content-Length: 2097152
--- response_body eval
$main::Obj{o0}
--- no_error_log
[alert]
[crit]



=== TEST 2: HEAD of another
--- request
HEAD /obj/o1
--- error_code: 200
--- response_headers
Content-Length: 2097152
--- no_error_log
[alert]
[crit]



=== TEST 3: a range in the SSD share, past the head
--- request
GET /obj/o2
--- more_headers
Range: bytes=300000-300099
--- error_code: 206
--- response_headers
Content-Range: bytes 300000-300099/2097152
--- response_body eval
main::want('o2', 300000, 300099)
--- no_error_log
[alert]
[crit]



=== TEST 4: a range across the head's end
--- request
GET /obj/o3
--- more_headers
Range: bytes=262000-263999
--- error_code: 206
--- response_body eval
main::want('o3', 262000, 263999)
--- no_error_log
[alert]
[crit]



=== TEST 5: a range in the HDD tail
--- request
GET /obj/big
--- more_headers
Range: bytes=7000000-7099999
--- error_code: 206
--- response_body eval
main::want('big', 7000000, 7099999)
--- no_error_log
[alert]
[crit]
