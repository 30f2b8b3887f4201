/*
 * The settings checked once parsed (options.h): against each other, and
 * against the machine (the CPUs this process may run on); and memcached's
 * short flags, taken with memcached's meaning or refused with a pointer.
 */
#include <ctype.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "options.h"

const struct options_memcached_flag options_memcached[] = {
	{ 'p', "-p N", "--memcache-port N (memcached's -p)" },
	{ 'l', "-l LIST", "--listen LIST (memcached's -l)" },
	{ 'm', "-m N", "--memory of N MiB (memcached's -m, in megabytes)" },
	{ 'c', "-c N", "--max-conns N (memcached's -c)" },
	{ 't', "-t N", "--cores N (memcached's -t)" },
	{ 'U', "-U 0", "memcached's UDP port: goblin-store has none, only 0 is taken" },
	{ 'u', "-u USER", "--user USER (memcached's -u)" },
	{ 'F', "-F", "--disable-flush (memcached's -F)" },
	{ 'Y', "-Y FILE", "--auth-file FILE (memcached's -Y)" },
};
const size_t options_memcached_n = sizeof(options_memcached) /
				   sizeof(options_memcached[0]);

/* memcached's flags goblin-store has not: what they mean there, and
 * goblin-store's nearest where it has one. */
static const struct {
	char c;
	const char *means, *ours;
} memcached_only[] = {
	{ 's', "unix socket", "goblin-store's unix socket is for nginx (--socket)" },
	{ 'a', "unix socket mask", "goblin-store's --socket-mode is for nginx's socket" },
	{ 'A', "shutdown command", NULL },
	{ 'd', "run as a daemon", "goblin-store stays in the foreground (systemd's Type=notify)" },
	{ 'r', "core file limit", NULL },
	{ 'M', "errors instead of evictions", "goblin-store's is --no-evict" },
	{ 'k', "lock paged memory", "goblin-store locks its RAM unless --no-mlock" },
	{ 'f', "growth factor", NULL },
	{ 'n', "minimum item space", NULL },
	{ 'L', "large pages", "goblin-store takes huge pages when reserved" },
	{ 'D', "stats prefix delimiter", NULL },
	{ 'C', "no CAS", NULL },
	{ 'b', "listen backlog", NULL },
	{ 'B', "binding protocol", "goblin-store speaks the text protocol only" },
	{ 'I', "item size limit", "goblin-store's is --max-object" },
	{ 'R', "requests per event", NULL },
	{ 'P', "pid file", NULL },
	{ 'S', "SASL", NULL },
	{ 'e', "memory file", NULL },
	{ 'o', "extended options", NULL },
	{ 'V', "version", "goblin-store's is --version" },
};

int options_memcached_refuse(int c)
{
	for (size_t i = 0; i < sizeof(memcached_only) / sizeof(memcached_only[0]); i++) {
		if (memcached_only[i].c != c)
			continue;
		if (memcached_only[i].ours)
			fprintf(stderr, "goblin-store: -%c is memcached's %s: %s (see --help)\n",
				c, memcached_only[i].means, memcached_only[i].ours);
		else
			fprintf(stderr, "goblin-store: -%c is memcached's %s, which goblin-store has not (see --help)\n",
				c, memcached_only[i].means);
		return 2;
	}
	return 0;
}

/* Whether <s> is a decimal number (digits only). */
static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

int options_memcached_flag(int c, const char *arg, int *idx, char *val,
			   size_t vallen)
{
	static const int idx_of[128] = {
		['p'] = IDX_memcache_port + 1, ['l'] = IDX_listen + 1,
		['m'] = IDX_memory + 1, ['c'] = IDX_max_conns + 1,
		['t'] = IDX_cores + 1, ['u'] = IDX_user + 1,
		['F'] = IDX_disable_flush + 1, ['Y'] = IDX_auth_file + 1,
	};

	val[0] = '\0';
	*idx = c > 0 && c < 128 ? idx_of[c] - 1 : -1;
	if (c == 'U') {
		if (all_digits(arg) && strtoull(arg, NULL, 10) == 0)
			return 0;
		fprintf(stderr, "goblin-store: -U %s: goblin-store has no UDP port, only -U 0 is taken (memcache over TCP: --memcache-port)\n",
			arg);
		return 2;
	}
	/* memcached's megabytes: the size option's "NM" */
	if (c == 'm') {
		if (!all_digits(arg) || strlen(arg) > 12) {
			fprintf(stderr, "goblin-store: -m: bad value \"%s\" (want megabytes, a number)\n",
				arg);
			return 2;
		}
		snprintf(val, vallen, "%sM", arg);
	}
	return 0;
}

/* Parses --cpus <list> ("2-3,6") into <o>: 0, or 2 after saying why. */
static int parse_cpus(struct options *o, const cpu_set_t *allowed)
{
	const char *p = o->cpus;
	char *end;

	CPU_ZERO(&o->cpus_set);
	while (*p) {
		unsigned long lo, hi;

		if (!isdigit((unsigned char)*p))
			goto out_bad;
		lo = hi = strtoul(p, &end, 10);
		if (*end == '-') {
			if (!isdigit((unsigned char)end[1]))
				goto out_bad;
			hi = strtoul(end + 1, &end, 10);
		}
		if (lo > hi || hi >= CPU_SETSIZE || (*end && *end != ','))
			goto out_bad;
		for (unsigned long cpu = lo; cpu <= hi; cpu++) {
			if (!CPU_ISSET(cpu, allowed)) {
				fprintf(stderr, "goblin-store: --cpus %s: CPU %lu is not one this process may run on\n",
					o->cpus, cpu);
				return 2;
			}
			CPU_SET(cpu, &o->cpus_set);
		}
		p = *end ? end + 1 : end;
		if (*end && !*p)
			goto out_bad;
	}
	o->cpus_n = CPU_COUNT(&o->cpus_set);
	return 0;

out_bad:
	fprintf(stderr, "goblin-store: --cpus: bad value \"%s\" (want CPUs such as 2-3,6)\n",
		o->cpus);
	return 2;
}

/* --cpus, --no-pin and --cores against the CPUs this process may use. */
static int check_cpus(struct options *o)
{
	cpu_set_t allowed;
	unsigned n;

	if (sched_getaffinity(0, sizeof(allowed), &allowed) < 0) {
		fprintf(stderr, "goblin-store: sched_getaffinity: %s\n",
			strerror(errno));
		return 2;
	}
	if (*o->cpus && o->no_pin) {
		fprintf(stderr, "goblin-store: --cpus and --no-pin: pinned or not, not both\n");
		return 2;
	}
	if (*o->cpus && parse_cpus(o, &allowed))
		return 2;
	n = o->cpus_n ? o->cpus_n : (unsigned)CPU_COUNT(&allowed);
	if (o->cores > n) {
		fprintf(stderr, "goblin-store: --cores %u: more serving threads than the %u CPU(s) %s\n",
			(unsigned)o->cores, n, o->cpus_n ? "--cpus lists" :
			"this process may run on (sched_getaffinity)");
		return 2;
	}
	return 0;
}

/* --listen: 1 to OPTIONS_LISTEN_MAX comma-separated addresses. */
static int check_listen(const struct options *o)
{
	const char *p = o->listen;
	unsigned n = 1;

	for (; *p; p++)
		if (*p == ',' && ++n > OPTIONS_LISTEN_MAX)
			break;
	if (!*o->listen || *o->listen == ',' || strstr(o->listen, ",,") ||
	    p[-1] == ',' || n > OPTIONS_LISTEN_MAX) {
		fprintf(stderr, "goblin-store: --listen: bad value \"%s\" (want 1 to %d addresses, comma-separated)\n",
			o->listen, OPTIONS_LISTEN_MAX);
		return 2;
	}
	return 0;
}

/* What is there to serve, and the socket's options with --no-http. */
static int check_fronts(struct options *o)
{
	char *end;

	if (!o->memcache_port && o->no_http && !*o->rdma) {
		fprintf(stderr, "goblin-store: --memcache-port 0 with --no-http (and no --rdma): nothing to serve\n");
		return 2;
	}
	o->socket_mode_bits = strtoul(o->socket_mode, &end, 8);
	if (!*o->socket_mode || *end || !isdigit((unsigned char)*o->socket_mode) ||
	    o->socket_mode_bits > 0777) {
		fprintf(stderr, "goblin-store: --socket-mode: bad value \"%s\" (want an octal mode such as 0660)\n",
			o->socket_mode);
		return 2;
	}
	if (o->no_http && (strcmp(o->socket, options_default(IDX_socket)) ||
			   *o->socket_user || *o->socket_group ||
			   strcmp(o->socket_mode, options_default(IDX_socket_mode)))) {
		fprintf(stderr, "goblin-store: --no-http with --socket%s: no HTTP side to serve it\n",
			*o->socket_user ? "-user" : *o->socket_group ? "-group" :
			strcmp(o->socket_mode, options_default(IDX_socket_mode)) ?
			"-mode" : "");
		return 2;
	}
	if (o->cfg.no_numa_promotion && o->cfg.numa < 0) {
		fprintf(stderr, "goblin-store: --no-numa-promotion needs --numa\n");
		return 2;
	}
	return 0;
}

/* --log-level by nginx's names, raised by -v, into log_level_value. */
static int check_log_level(struct options *o)
{
	static const struct {
		const char *name;
		int level;
	} names[] = {
		{ "debug", LOG_DEBUG }, { "info", LOG_INFO },
		{ "notice", LOG_INFO }, { "warn", LOG_WARN },
		{ "error", LOG_ERR }, { "crit", LOG_ERR },
		{ "alert", LOG_ERR }, { "emerg", LOG_ERR },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(o->log_level, names[i].name))
			continue;
		o->log_level_value = names[i].level + o->verbose > LOG_DEBUG ?
				     LOG_DEBUG : names[i].level + o->verbose;
		return 0;
	}
	fprintf(stderr, "goblin-store: --log-level: bad value \"%s\" (want debug, info, notice, warn, error, crit, alert or emerg)\n",
		o->log_level);
	return 2;
}

int options_check(struct options *o)
{
	if (check_listen(o) || check_cpus(o) || check_fronts(o) ||
	    check_log_level(o))
		return 2;
	return 0;
}
