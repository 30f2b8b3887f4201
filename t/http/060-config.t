# usage: prove t/http/060-config.t
# `nginx -t` refuses bad goblin directives with a clear message, and takes
# good ones.  Each block is the inside of http{}; --- error is what nginx
# must say (a regex), or absent when the configuration must pass.
BEGIN { push @INC, 't/lib' }
use GoblinTest;
use Test::Base;
use File::Temp qw(tempdir);

my $nginx = $ENV{TEST_NGINX_BINARY} || '/usr/sbin/nginx';
my $module = goblin_module();

plan tests => 2 * blocks();

run {
    my $block = shift;
    my $name = $block->name;
    my $dir = tempdir('goblin-ngx-conf.XXXXXX', DIR => '/var/tmp',
                      CLEANUP => 1);
    mkdir "$dir/logs";
    open my $conf, '>', "$dir/nginx.conf" or die "$dir/nginx.conf: $!\n";
    print $conf "load_module $module;\n"
                . "error_log $dir/logs/error.log;\n"
                . "pid $dir/logs/nginx.pid;\n"
                . "events { worker_connections 16; }\n"
                . "http {\n" . $block->http . "\n}\n";
    close $conf;

    my $out = `$nginx -t -p $dir/ -c $dir/nginx.conf 2>&1`;
    my $status = $?;
    if (defined $block->error) {
        isnt($status, 0, "$name: nginx -t fails");
        like($out, qr/\[emerg\] .*$block->{error}[0]/, "$name: says why")
            or diag($out);
    } else {
        is($status, 0, "$name: nginx -t passes") or diag($out);
        like($out, qr/test is successful/, "$name: says so");
    }
};

__DATA__

=== every directive, good values
--- http
goblin_storaged unix:/var/tmp/goblin.sock;
goblin_ring_entries 1024;
goblin_connect_timeout 2s;
server {
    listen 127.0.0.1:1;
    location /obj/ {
        goblin;
        goblin_methods GET HEAD PUT DELETE;
        goblin_max_object 33m;
        goblin_read_timeout 10s;
        goblin_put_wait 2s;
        goblin_put_queue 0;
        goblin_body_timeout 30s;
        goblin_key "$uri";
    }
    location = /status {
        goblin_status;
    }
}

=== goblin without goblin_storaged
--- http
server {
    listen 127.0.0.1:1;
    location /obj/ { goblin; }
}
--- error chomp
"goblin", "goblin_status" and "goblin_metrics" need "goblin_storaged unix:/path;"

=== goblin_storaged on TCP
--- http
goblin_storaged 127.0.0.1:11211;
--- error chomp
"goblin_storaged" takes a unix socket

=== goblin_storaged twice
--- http
goblin_storaged unix:/a.sock;
goblin_storaged unix:/b.sock;
--- error chomp
"goblin_storaged" directive is duplicate

=== goblin_storaged with a path too long for a unix socket
--- http
goblin_storaged unix:/var/tmp/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.sock;
--- error chomp
too long path in the unix domain socket

=== goblin_ring_entries not a power of two
--- http
goblin_ring_entries 100;
--- error chomp
"goblin_ring_entries" must be a power of two from 16 to 4096

=== goblin_ring_entries too small
--- http
goblin_ring_entries 8;
--- error chomp
"goblin_ring_entries" must be a power of two from 16 to 4096

=== goblin_ring_entries not a number
--- http
goblin_ring_entries many;
--- error chomp
"goblin_ring_entries" directive invalid number

=== goblin_connect_timeout not a time
--- http
goblin_connect_timeout soon;
--- error chomp
"goblin_connect_timeout" directive invalid value

=== goblin_max_object not a size
--- http
goblin_storaged unix:/var/tmp/goblin.sock;
server {
    location / { goblin; goblin_max_object 12q; }
}
--- error chomp
"goblin_max_object" directive invalid value

=== goblin_read_timeout not a time
--- http
goblin_read_timeout 5 parsecs;
--- error chomp
invalid number of arguments in "goblin_read_timeout"

=== goblin_put_wait not a time
--- http
goblin_put_wait later;
--- error chomp
"goblin_put_wait" directive invalid value

=== goblin_put_queue not a number
--- http
goblin_put_queue -1;
--- error chomp
"goblin_put_queue" directive invalid number

=== goblin_body_timeout not a time
--- http
goblin_body_timeout 1 2;
--- error chomp
invalid number of arguments in "goblin_body_timeout"

=== goblin_methods with a method it does not serve
--- http
goblin_methods GET POST;
--- error chomp
invalid value "POST" in \S+nginx.conf:

=== goblin outside a location
--- http
goblin_storaged unix:/var/tmp/goblin.sock;
goblin;
--- error chomp
"goblin" directive is not allowed here

=== goblin with an argument
--- http
goblin_storaged unix:/var/tmp/goblin.sock;
server {
    location / { goblin on; }
}
--- error chomp
invalid number of arguments in "goblin"

=== goblin twice in a location
--- http
goblin_storaged unix:/var/tmp/goblin.sock;
server {
    location / { goblin; goblin; }
}
--- error chomp
"goblin" directive is duplicate, or the location has another content handler

=== goblin and goblin_status in one location
--- http
goblin_storaged unix:/var/tmp/goblin.sock;
server {
    location / { goblin_status; goblin; }
}
--- error chomp
"goblin" directive is duplicate, or the location has another content handler

=== goblin where proxy_pass serves
--- http
goblin_storaged unix:/var/tmp/goblin.sock;
server {
    location / { proxy_pass http://127.0.0.1:1; goblin; }
}
--- error chomp
"goblin" directive is duplicate, or the location has another content handler

=== goblin_storaged inside a server
--- http
server {
    goblin_storaged unix:/var/tmp/goblin.sock;
}
--- error chomp
"goblin_storaged" directive is not allowed here
