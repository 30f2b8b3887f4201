/*
 * The stats commands of the memcache text protocol: the counters through
 * stats_emit() (stats.h), and memcached's settings, slabs, items, sizes,
 * conns, reset and cachedump answers.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proto_text.h"

static void stat_setting(void *arg, const char *name, const char *value)
{
	conn_replyf(arg, "STAT %s %s\r\n", name, value);
}

static bool arg_is(const char *arg, size_t len, const char *s)
{
	return len == strlen(s) && !memcmp(arg, s, len);
}

/* stats cachedump <class> <limit>: memcached's checks and errors; there are
 * no slab classes, so class 1 lists every object and the others none. */
static void stats_cachedump(struct conn *c, const char *arg, size_t len)
{
	unsigned long id, limit;
	char buf[64], *end;
	int n;

	if (len >= sizeof(buf)) {
		REPLY(c, "CLIENT_ERROR bad command line format\r\n");
		return;
	}
	memcpy(buf, arg, len);
	buf[len] = 0;
	n = 0;
	for (end = buf; *end; end++)
		if (*end != ' ' && (end == buf || end[-1] == ' '))
			n++;
	if (n < 2) {
		REPLY(c, "CLIENT_ERROR bad command line\r\n");
		return;
	}
	errno = 0;
	id = strtoul(buf, &end, 10);
	if (errno || end == buf || *end != ' ' || buf[strspn(buf, " ")] == '-') {
		REPLY(c, "CLIENT_ERROR bad command line format\r\n");
		return;
	}
	arg = end + strspn(end, " ");
	limit = strtoul(arg, &end, 10);
	if (errno || end == arg || (*end && *end != ' ') || *arg == '-') {
		REPLY(c, "CLIENT_ERROR bad command line format\r\n");
		return;
	}
	if ((uint32_t)id >= 64) {	/* memcached's MAX_NUMBER_OF_SLAB_CLASSES,
					 * its id an unsigned int */
		REPLY(c, "CLIENT_ERROR Illegal slab id\r\n");
		return;
	}
	dump_start(c, false, (uint32_t)id == 1, (uint32_t)limit);
}

static void stat_line(void *arg, const char *name, const char *value,
		      const char *desc)
{
	(void)desc;
	stat_setting(arg, name, value);
}

/* The stats tables a `stats <arg>` lists, 0 for none. */
static unsigned stats_tables(const char *arg, size_t len)
{
	if (len == 0)
		return STATS_PROCESS | STATS_SERVER | STATS_SUMMARY |
		       STATS_FIRST_BYTE;
	if (arg_is(arg, len, "slabs"))
		return STATS_SLABS;
	if (arg_is(arg, len, "goblin"))
		return STATS_ENGINE | STATS_POOLS | STATS_RDMA;
	return 0;
}

void proto_stats(struct conn *c, const char *arg, size_t len)
{
	struct server *srv = c->srv;
	struct stats_sink sink = { stat_line, c };
	struct stats_snapshot snap;
	unsigned tables;
	size_t sub = 0;

	/* memcached judges the first word; the rest is ignored but for
	 * cachedump's arguments */
	while (sub < len && arg[sub] != ' ')
		sub++;
	if (arg_is(arg, sub, "cachedump")) {
		while (sub < len && arg[sub] == ' ')
			sub++;
		stats_cachedump(c, arg + sub, len - sub);
		return;
	}
	len = sub;

	tables = stats_tables(arg, len);
	if (tables) {
		server_stats_snapshot(srv, &snap);
		if (tables & STATS_POOLS)
			gs_arena_stats(srv->e, &snap.arena);
		stats_emit(tables, &snap, &sink);
	} else if (arg_is(arg, len, "reset")) {
		server_stats_reset(srv);
		REPLY(c, "RESET\r\n");
		return;
	} else if (arg_is(arg, len, "settings")) {
		server_stats_settings(c);
		options_each(srv->opt, stat_setting, c);
	} else if (arg_is(arg, len, "items")) {
		/* per-class item stats: none (memcached's answer when empty) */
	} else if (arg_is(arg, len, "sizes")) {
		conn_replyf(c, "STAT sizes_status disabled\r\n");
	} else if (arg_is(arg, len, "conns")) {
		server_stats_conns(c);
	} else {
		SRV_ADD(srv, protocol_errors, 1);
		REPLY(c, "ERROR\r\n");
		return;
	}
	REPLY(c, "END\r\n");
}
