# usage: prove t/http/210-cache-config.t
# `nginx -t` refuses bad cache-mode directives (goblin_cache, goblin_origin,
# goblin_cache_abandon, goblin_cache_valid, goblin_cache_purge,
# goblin_cache_revalidate, goblin_cache_pass, goblin_cache_restart) with a
# clear message, and takes good ones.  Each
# block is the inside of http{}; --- error is what nginx
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

=== cache mode, good values
--- http
goblin_storaged unix:/var/tmp/goblin.sock;
upstream origin { server 127.0.0.1:2; }
server {
    listen 127.0.0.1:1;
    location / {
        goblin;
        goblin_cache on;
        goblin_origin @fill;
        goblin_cache_abandon 25%;
    }
    location /b/ {
        goblin;
        goblin_cache on;
        goblin_origin @fill;
        goblin_cache_abandon off;
        goblin_cache_valid 0;
    }
    location /c/ {
        goblin;
        goblin_cache on;
        goblin_origin @fill;
        goblin_cache_valid 1d;
        goblin_cache_revalidate 2h;
    }
    location /d/ {
        goblin;
        goblin_cache on;
        goblin_origin @fill;
        goblin_cache_revalidate off;
        goblin_cache_pass 30s;
        goblin_cache_restart keep;
    }
    location /e/ {
        goblin;
        goblin_cache on;
        goblin_origin @fill;
        goblin_cache_pass off;
    }
    location /purge/ {
        goblin;
        goblin_cache_purge on;
        allow 127.0.0.1;
        deny all;
    }
    location /plain/ {
        goblin;
        goblin_cache off;
    }
    location @fill {
        proxy_pass http://origin;
    }
}



=== goblin_cache on needs goblin_origin
--- http
goblin_storaged unix:/var/tmp/goblin.sock;
server {
    listen 127.0.0.1:1;
    location / {
        goblin;
        goblin_cache on;
    }
}
--- error chomp
"goblin_cache on" needs "goblin_origin @name;"



=== goblin_origin takes a named location
--- http
goblin_storaged unix:/var/tmp/goblin.sock;
server {
    listen 127.0.0.1:1;
    location / {
        goblin;
        goblin_cache on;
        goblin_origin /fill;
    }
}
--- error chomp
"goblin_origin" takes a named location, "@name", not "/fill"



=== goblin_cache takes on or off
--- http
goblin_storaged unix:/var/tmp/goblin.sock;
server {
    listen 127.0.0.1:1;
    location / {
        goblin;
        goblin_cache yes;
        goblin_origin @fill;
    }
}
--- error chomp
invalid value "yes" in "goblin_cache"



=== goblin_cache_abandon over 100
--- http
goblin_storaged unix:/var/tmp/goblin.sock;
server {
    listen 127.0.0.1:1;
    location / {
        goblin;
        goblin_cache on;
        goblin_origin @fill;
        goblin_cache_abandon 101%;
    }
}
--- error chomp
"goblin_cache_abandon" takes "off" or a percentage from 0 to 100, not "101%"



=== goblin_cache_abandon not a number
--- http
goblin_storaged unix:/var/tmp/goblin.sock;
server {
    listen 127.0.0.1:1;
    location / {
        goblin;
        goblin_cache on;
        goblin_origin @fill;
        goblin_cache_abandon half;
    }
}
--- error chomp
"goblin_cache_abandon" takes "off" or a percentage from 0 to 100, not "half"



=== goblin_cache_valid takes a time
--- http
goblin_storaged unix:/var/tmp/goblin.sock;
server {
    listen 127.0.0.1:1;
    location / {
        goblin;
        goblin_cache on;
        goblin_origin @fill;
        goblin_cache_valid soon;
    }
    location @fill {
        return 204;
    }
}
--- error chomp
"goblin_cache_valid" directive invalid value



=== goblin_cache_purge takes on or off
--- http
goblin_storaged unix:/var/tmp/goblin.sock;
server {
    listen 127.0.0.1:1;
    location / {
        goblin;
        goblin_cache_purge yes;
    }
}
--- error chomp
invalid value "yes" in "goblin_cache_purge" directive, it must be "on" or "off"



=== goblin_cache_revalidate takes off or a time
--- http
goblin_storaged unix:/var/tmp/goblin.sock;
server {
    listen 127.0.0.1:1;
    location / {
        goblin;
        goblin_cache_revalidate sometimes;
    }
}
--- error chomp
"goblin_cache_revalidate" directive invalid value



=== goblin_cache_restart takes revalidate or keep
--- http
goblin_storaged unix:/var/tmp/goblin.sock;
server {
    listen 127.0.0.1:1;
    location / {
        goblin;
        goblin_cache_restart drop;
    }
}
--- error chomp
"goblin_cache_restart" takes "revalidate" or "keep", not "drop"



=== goblin_cache_pass takes off or a time
--- http
goblin_storaged unix:/var/tmp/goblin.sock;
server {
    listen 127.0.0.1:1;
    location / {
        goblin;
        goblin_cache_pass never;
    }
}
--- error chomp
"goblin_cache_pass" directive invalid value



=== goblin_cache_pass twice
--- http
goblin_storaged unix:/var/tmp/goblin.sock;
server {
    listen 127.0.0.1:1;
    location / {
        goblin;
        goblin_cache_pass 1m;
        goblin_cache_pass off;
    }
}
--- error chomp
"goblin_cache_pass" directive is duplicate
