# usage: prove t/http/140-metrics.t
# goblin_metrics and goblin_status over two workers: PUTs, hits, misses and
# a DELETE spread over both (a reuseport listener) are counted exactly in
# the totals of the shared zone, which are the sum of the workers' own;
# storaged's counters come through under memcached_exporter's names; the
# text passes `promtool check metrics`; Debian's prometheus scrapes it and
# answers a query.  promtool and prometheus (package prometheus) are
# skipped, with the reason, where they are not installed.
BEGIN { push @INC, 't/lib' }
use GoblinTest;
use Test::Nginx::Socket;
use File::Temp ();
use IO::Socket::INET;
use JSON::PP ();
use POSIX qw(SIGTERM WNOHANG);
use Time::HiRes qw(sleep time);

our $Puts = 10;
our $Misses = 6;

goblin_start();
goblin_defaults();
$ENV{TEST_NGINX_METRICS_PORT} = GoblinTest::free_port();
$ENV{TEST_NGINX_ORIGIN_PORT} = GoblinTest::free_port();

# Every block's http{} (registered after goblin_defaults(), so run before
# it, which then leaves it):
# a server of its own on a reuseport listener, so the kernel spreads its
# connections over both workers.
Test::Nginx::Socket::add_block_preprocessor(sub {
    my $block = shift;
    $block->set_value('http_config', <<'END') unless defined $block->http_config;
goblin_storaged unix:$TEST_NGINX_GOBLIN_SOCKET;
server {
    listen 127.0.0.1:$TEST_NGINX_METRICS_PORT reuseport;
    location /obj/ {
        goblin;
        goblin_methods GET PUT DELETE;
    }
    location = /status {
        goblin_status;
    }
    location = /metrics {
        goblin_metrics;
    }
    location /c/ {
        goblin;
        goblin_cache on;
        goblin_origin @fill;
        add_header X-Cache $goblin_cache_status always;
    }
    location @fill {
        proxy_pass http://127.0.0.1:$TEST_NGINX_ORIGIN_PORT;
    }
}
server {
    listen 127.0.0.1:$TEST_NGINX_ORIGIN_PORT;
    location / {
        add_header Cache-Control "max-age=600";
        return 200 "from the origin";
    }
}
END
});
goblin_config(<<'END');
    location = /metrics {
        goblin_metrics;
    }
END
goblin_case_checks(request => 'GET /metrics', error_code => 200,
                   response_body_like => '(?m)^memcached_up 1$');

master_on();
workers(2);
repeat_each(1);
plan tests => goblin_plan(39);
no_shuffle();

my $port = $ENV{TEST_NGINX_METRICS_PORT};

# The samples of the exposition <text>: "name{labels}" => value.
sub samples ($) {
    my %s;
    for (split /\n/, shift) {
        $s{$1} = $2 if /^([a-z_]+(?:\{[^}]*\})?) (\S+)$/;
    }
    return \%s;
}

sub metrics () {
    my ($st, $h, $body) = http_request($port, 'GET', '/metrics');
    return ($st, $h, $body);
}

# Each worker's goblin_status (pid => status), asked on new connections
# until both answered.
sub worker_statuses () {
    my %by_pid;
    wait_for(sub {
        my $j = http_status($port);
        $by_pid{$j->{pid}} = $j if $j->{pid};
        return keys %by_pid >= 2;
    }, 20);
    return \%by_pid;
}

# ---- the cases, run from the blocks (nginx restarts for each) ----

# Requests over both workers, counted exactly in the totals.  (30 tests)
sub totals_across_workers () {
    GoblinTest::wait_attached() or die "the workers did not attach\n";
    my @bad;
    for my $i (1 .. $Puts) {
        my ($st) = http_request($port, 'PUT', "/obj/m$i", body => "v$i" x 100);
        push @bad, "PUT $st" unless $st == 201;
    }
    for my $i (1 .. $Puts) {
        my ($st) = http_request($port, 'GET', "/obj/m$i");
        push @bad, "GET $st" unless $st == 200;
    }
    for my $i (1 .. $Misses) {
        my ($st) = http_request($port, 'GET', "/obj/none$i");
        push @bad, "miss $st" unless $st == 404;
    }
    my ($st) = http_request($port, 'DELETE', '/obj/m1');
    push @bad, "DELETE $st" unless $st == 204;
    mc_set("mc$_", "x" x 10) for 1 .. 3;
    push @bad, "mc get" for grep { (mc_get("mc$_") // '') ne "x" x 10 } 1 .. 2;
    is("@bad", '', 'every request answered as expected');
    my $n = 2 * $Puts + $Misses + 1;

    my $workers = worker_statuses();
    is(scalar keys %$workers, 2, 'both workers answered goblin_status');
    my ($sum, $max) = (0, 0);
    for my $w (values %$workers) {
        $sum += $w->{module}{requests};
        $max = $w->{module}{requests} if $w->{module}{requests} > $max;
    }
    my $any = (values %$workers)[0];
    is($any->{totals}{requests}, $n, "totals.requests is all $n requests");
    is($sum, $n, "the workers' own requests add up to the totals");
    ok($max < $n, "no worker served all of them ($max of $n)");
    is($any->{totals}{hits}, $Puts, 'totals.hits');
    is($any->{totals}{misses}, $Misses, 'totals.misses');
    is($any->{totals}{puts_created}, $Puts, 'totals.puts_created');

    # goblin_status's additions and the three stats that read 0
    is($any->{version}, mc_version(), 'goblin_status version');
    ok(defined $any->{uptime} && $any->{uptime} >= 0, 'goblin_status uptime');
    is($any->{storaged}{pid}, goblin_pid(), "storaged's pid");
    ok($any->{storaged}{index_bytes_per_object} > 0,
       'index_bytes_per_object is no longer 0');
    ok($any->{storaged}{ssd_dirs} >= 1 && $any->{storaged}{hdd_dirs} >= 1,
       'ssd_dirs and hdd_dirs are no longer 0');

    my ($mst, $h, $body) = metrics();
    my $s = samples($body);
    my $stats = goblin_stats();
    is($mst, 200, '/metrics answers 200');
    like($h->{'content-type'}, qr{^text/plain; version=0\.0\.4},
         'the exposition content type');
    is($s->{'goblin_http_requests_total{method="PUT",code="2xx"}'}, $Puts,
       'PUTs 2xx');
    is($s->{'goblin_http_requests_total{method="GET",code="2xx"}'}, $Puts,
       'GETs 2xx');
    is($s->{'goblin_http_requests_total{method="GET",code="4xx"}'}, $Misses,
       'GETs 4xx');
    is($s->{'goblin_http_requests_total{method="DELETE",code="2xx"}'}, 1,
       'DELETEs 2xx');
    is($s->{goblin_nginx_requests_total}, $n, 'goblin_nginx_requests_total');
    is($s->{'goblin_first_byte_seconds_count{protocol="http"}'}, $n,
       'a first byte for every request');
    is($s->{'goblin_first_byte_seconds_bucket{protocol="http",le="+Inf"}'},
       $n, 'the +Inf bucket holds them all');
    is($s->{'goblin_first_byte_seconds_count{protocol="memcache"}'},
       $stats->{first_byte_count}, 'memcache first bytes as the daemon timed');
    ok($stats->{first_byte_count} >= 2 &&
       $s->{'goblin_first_byte_seconds_bucket{protocol="memcache",le="+Inf"}'}
       == $stats->{first_byte_count}, 'the memcache gets in +Inf');
    is($s->{memcached_current_items}, $stats->{curr_items},
       'memcached_current_items is curr_items');
    is($s->{memcached_current_items}, $Puts - 1 + 3, 'the items stored');
    is($s->{'memcached_commands_total{command="set",status="hit"}'}, 3,
       'memcache sets');
    is($s->{'memcached_version{version="' . mc_version() . '"}'}, 1,
       'memcached_version');
    is($s->{'goblin_tier_limit_bytes{tier="ram"}'}, $stats->{ram_region_bytes},
       'the RAM tier limit');
    ok($s->{'goblin_tier_bytes{tier="ram"}'} > 0, 'RAM tier bytes used');
}

# Cache-mode requests, counted by $goblin_cache_status as each answer
# said it.  (2 tests)
sub cache_statuses () {
    GoblinTest::wait_attached() or die "the workers did not attach\n";
    my %said;
    for my $i (1 .. 4) {
        my ($st, $h) = http_request($port, 'GET', '/c/k');
        $said{$h->{'x-cache'} // 'none'}++;
        wait_for(sub { defined mc_get('k') }, 10) if $i == 1;
    }
    my $s = samples((metrics())[2]);
    my %counted;
    for (keys %$s) {
        $counted{$1} = $s->{$_}
            if /^goblin_cache_requests_total\{status="(\w+)"\}$/
               && $s->{$_} > 0;
    }
    ok($said{MISS} && $said{HIT}, 'a miss, then hits: '
       . join ' ', map { "$_=$said{$_}" } sort keys %said);
    is_deeply(\%counted, \%said, 'goblin_cache_requests_total as they said');
}

sub mc_version () {
    my $s = GoblinTest::mc_conn();
    print $s "version\r\n";
    my $line = <$s> // '';
    close $s;
    return $line =~ /^VERSION (\S+)/ ? $1 : '';
}

# promtool check metrics on the text.  (2 tests)
sub promtool_check () {
    GoblinTest::wait_attached() or die "the workers did not attach\n";
    http_request($port, 'GET', '/obj/none');
    my ($st, $h, $body) = metrics();
    SKIP: {
        skip 'promtool not installed (Debian package prometheus)', 2
            unless -x '/usr/bin/promtool';
        my ($fh, $file) = File::Temp::tempfile('goblin-metrics.XXXXXX',
                                               DIR => '/var/tmp',
                                               UNLINK => 1);
        print $fh $body;
        close $fh;
        my $out = `/usr/bin/promtool check metrics < $file 2>&1`;
        is($?, 0, 'promtool check metrics passes') or diag($out);
        is($out, '', 'with nothing to say');
    }
}

# Debian's prometheus scrapes /metrics and answers a query.  (4 tests)
sub prometheus_query () {
    GoblinTest::wait_attached() or die "the workers did not attach\n";
    SKIP: {
        skip 'prometheus not installed (Debian package prometheus)', 4
            unless -x '/usr/bin/prometheus';
        my $dir = File::Temp::tempdir('goblin-prometheus.XXXXXX',
                                      DIR => '/var/tmp', CLEANUP => 1);
        my $web = GoblinTest::free_port();
        open my $cf, '>', "$dir/prometheus.yml" or die "$dir: $!\n";
        print $cf <<"END";
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: goblin
    static_configs:
      - targets: ['127.0.0.1:$port']
END
        close $cf;
        my $pid = fork() // die "fork: $!\n";
        if ($pid == 0) {
            open STDOUT, '>', "$dir/log";
            open STDERR, '>&', \*STDOUT;
            { exec '/usr/bin/prometheus', "--config.file=$dir/prometheus.yml",
                   "--storage.tsdb.path=$dir/data",
                   "--web.listen-address=127.0.0.1:$web" };
            POSIX::_exit(127);
        }
        # refused until it listens
        my $ready = wait_for(sub {
            my ($st) = eval { http_request($web, 'GET', '/-/ready',
                                           timeout => 2) };
            return ($st // 0) == 200;
        }, 60);
        ok($ready, 'prometheus is ready');
        my $q = sub {
            my ($st, $h, $body) = http_request($web, 'GET',
                "/api/v1/query?query=$_[0]", timeout => 5);
            my $j = eval { JSON::PP::decode_json($body) } || {};
            my $r = $j->{data}{result} || [];
            return @$r ? $r->[0]{value}[1] : undef;
        };
        my $up;
        wait_for(sub { $up = $q->('up'); defined $up && $up eq '1' }, 30);
        is($up, '1', 'prometheus scraped the target');
        my $v;
        wait_for(sub { $v = $q->('memcached_up'); defined $v }, 30);
        is($v, '1', 'memcached_up queried back from prometheus');
        $v = $q->('memcached_current_items');
        is($v, goblin_stats()->{curr_items},
           'memcached_current_items queried back');
        kill SIGTERM, $pid;
        wait_for(sub { waitpid($pid, WNOHANG) == $pid }, 20)
            or kill 'KILL', $pid and waitpid($pid, 0);
    }
}

run_tests();
goblin_stop();

__DATA__

=== TEST 1: totals across two workers, exact
--- init
main::totals_across_workers();



=== TEST 2: promtool check metrics
--- init
main::promtool_check();



=== TEST 3: cache-mode statuses
--- init
main::cache_statuses();



=== TEST 4: prometheus scrapes it and answers a query
--- init
main::prometheus_query();
