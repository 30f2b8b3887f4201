/*
 * The daemon's options table (storaged/options.c) over the engine's config
 * table: the engine's defaults as the daemon's, and the engine's errors
 * worded with the flags; the settings checked (storaged/options_check.c)
 * and memcached's short flags, table-tested.
 */
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "log.h"
#include "options.h"

/* The daemon words the engine's errors with its flags. */
static void worded_errors(void)
{
	char err[256] = "`memory` must hold at least one `block`; `numa` 7; do not lock it: `no_mlock`; `other`";
	char stripe[256] = "`stripe_unit` must be at least 64K with more than one dir in a tier";

	options_word_error(err, sizeof(err));
	CHECK(!strcmp(err, "--memory must hold at least one --block; --numa 7; do not lock it: --no-mlock; `other`"),
	      "worded: %s", err);
	options_word_error(stripe, sizeof(stripe));
	CHECK(strstr(stripe, "--stripe-unit must be at least 64K"), "worded: %s",
	      stripe);
}

/* No flags: o.cfg is what gs_config_init() gives a library user. */
static void engine_defaults(void)
{
	char *argv[] = { "goblin-store", NULL };
	struct gs_config cfg;
	struct options o;

	gs_config_init(&cfg);
	CHECK(options_parse(&o, 1, argv) == 0, "no flags");
	CHECK(!memcmp(&o.cfg, &cfg, sizeof(cfg)), "defaults differ");
	CHECK(cfg.memory == 256 << 20 && cfg.ram_head == 256 << 10 &&
	      cfg.numa == -1 && !cfg.no_mlock && cfg.io_buffers == 4 &&
	      cfg.max_object == 64 << 20 && !cfg.ssd_dir.n,
	      "gs_config_init");
}

/* options_parse() of <line> (space-separated arguments) into <o>, its
 * stderr in <err>; <o>'s strings point into a buffer the next call reuses. */
static int parse_line(const char *line, struct options *o, char *err,
		      size_t errlen)
{
	static char buf[512];
	char *argv[32] = { "goblin-store" };
	FILE *f, *saved = stderr;
	int argc = 1, rc;

	snprintf(buf, sizeof(buf), "%s", line);
	for (char *t = strtok(buf, " "); t && argc < 31; t = strtok(NULL, " "))
		argv[argc++] = t;
	memset(err, 0, errlen);
	f = fmemopen(err, errlen - 1, "w");
	if (!f)
		return -1;
	stderr = f;
	optind = 0;
	rc = options_parse(o, argc, argv);
	fclose(f);
	stderr = saved;
	return rc;
}

/* Refusals: exit 2 and one line naming what is wrong. */
static void refusals(void)
{
	static const struct {
		const char *args, *err;
	} cases[] = {
		{ "--listen 127.0.0.1 --listen ::1", "--listen given twice" },
		{ "-p 11311 --memcache-port 11411", "--memcache-port given twice" },
		{ "--memory 1M -m 2", "--memory given twice" },
		{ "--max-object 0", "--max-object must be at least 1" },
		{ "--cores 257", "--cores must be between 1 and 256" },
		{ "--memcache-port 0 --no-http", "nothing to serve" },
		{ "--no-http --socket /var/tmp/g.sock", "--no-http with --socket:" },
		{ "--no-http --socket-user www-data", "--no-http with --socket-user" },
		{ "--no-http --socket-mode 0666", "--no-http with --socket-mode" },
		{ "--no-numa-promotion", "--no-numa-promotion needs --numa" },
		{ "--listen 127.0.0.1,,::1", "--listen: bad value" },
		{ "--listen a,b,c,d,e,f,g,h,i", "want 1 to 8 addresses" },
		{ "--cpus 1023", "CPU 1023 is not one this process may run on" },
		{ "--cpus 2-1", "--cpus: bad value" },
		{ "--cpus 0-", "--cpus: bad value" },
		{ "--cpus 0,", "--cpus: bad value" },
		{ "--cpus x", "--cpus: bad value" },
		{ "--socket-mode 0888", "--socket-mode: bad value" },
		{ "--socket-mode 01777", "--socket-mode: bad value" },
		{ "--log-level loud", "--log-level: bad value" },
		{ "-U 11211", "no UDP port, only -U 0" },
		{ "-m 1G", "-m: bad value" },
		{ "-I 2m", "-I is memcached's item size limit: goblin-store's is --max-object" },
		{ "-s /tmp/mc.sock", "-s is memcached's unix socket" },
		{ "-q", "unknown option -q (see --help)" },
		{ "--bogus", "unknown option --bogus (see --help)" },
	};
	struct options o;
	char err[512];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = parse_line(cases[i].args, &o, err, sizeof(err));

		CHECK(rc == 2 && strstr(err, cases[i].err) &&
		      !strncmp(err, "goblin-store: ", 14) &&
		      strchr(err, '\n') == err + strlen(err) - 1,
		      "%s: rc %d, \"%s\" (want \"%s\")", cases[i].args, rc,
		      err, cases[i].err);
	}
}

/* What is taken: memcached's flags with memcached's meaning, the values
 * read from the STR options. */
static void accepted(void)
{
	struct options o;
	char err[512], line[64];
	cpu_set_t allowed;
	int first = 0;

	CHECK(!parse_line("-p 1234 -l 127.0.0.1,::1 -m 16 -c 7 -t 1 -U 0 -v",
			  &o, err, sizeof(err)), "memcached's flags: %s", err);
	CHECK(o.memcache_port == 1234 && !strcmp(o.listen, "127.0.0.1,::1") &&
	      o.cfg.memory == 16 << 20 && o.max_conns == 7 && o.cores == 1 &&
	      o.verbose == 1 && o.log_level_value == LOG_DEBUG,
	      "memcached's flags read");
	CHECK(!parse_line("--ssd-dir a --ssd-dir b --no-http --no-http",
			  &o, err, sizeof(err)) && o.cfg.ssd_dir.n == 2,
	      "repeatable flags: %s", err);
	CHECK(!parse_line("--no-http --socket /run/goblin-store/goblin-store.sock",
			  &o, err, sizeof(err)), "the default socket: %s", err);
	CHECK(!parse_line("--socket-mode 0666", &o, err, sizeof(err)) &&
	      o.socket_mode_bits == 0666, "--socket-mode: %s", err);
	CHECK(!parse_line("--log-level warn", &o, err, sizeof(err)) &&
	      o.log_level_value == LOG_WARN, "--log-level warn");
	CHECK(!parse_line("--log-level crit -v", &o, err, sizeof(err)) &&
	      o.log_level_value == LOG_WARN, "--log-level crit -v");
	CHECK(!parse_line("", &o, err, sizeof(err)) &&
	      o.log_level_value == LOG_INFO && !o.cpus_n && !o.no_pin,
	      "defaults");
	CHECK(!sched_getaffinity(0, sizeof(allowed), &allowed), "affinity");
	while (!CPU_ISSET(first, &allowed))
		first++;
	snprintf(line, sizeof(line), "--cpus %d-%d,%d --no-http", first, first,
		 first);
	CHECK(!parse_line(line, &o, err, sizeof(err)) && o.cpus_n == 1 &&
	      CPU_ISSET(first, &o.cpus_set), "%s: %s", line, err);
}

int main(void)
{
	worded_errors();
	engine_defaults();
	refusals();
	accepted();
	return check_result();
}
