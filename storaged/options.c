/*
 * Command-line parsing driven by the OPTIONS table.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"
#include "stats.h"
#include "size.h"

enum { OPT_HELP = 1000, OPT_VERSION, OPT_FIRST };

struct option_desc {
	const char *name;		/* the field's; the flag is flags[i] */
	enum option_kind kind;
	const char *def;
	const char *desc;
	size_t offset;
	int64_t min, max;		/* 0, 0: any */
};

#define OPTION_DESC(name, kind, def, min, max, desc, field)		\
	{ #name, OPT_##kind, def, desc, offsetof(struct options, field),	\
	  min, max },
#define ENGINE_DESC(name, kind, def, min, max, desc)			\
	OPTION_DESC(name, kind, def, min, max, desc, cfg.name)
#define DAEMON_DESC(name, kind, def, min, max, desc)			\
	OPTION_DESC(name, kind, def, min, max, desc, name)
static const struct option_desc descs[] = {
	OPTIONS(ENGINE_DESC, DAEMON_DESC)
};
#undef ENGINE_DESC
#undef DAEMON_DESC
#undef OPTION_DESC

#define OPTION_FLAG_FITS(name, kind, def, min, max, desc)		\
	_Static_assert(sizeof(#name) <= OPTION_FLAG_MAX, "--" #name " is too long");
OPTIONS(OPTION_FLAG_FITS, OPTION_FLAG_FITS)
#undef OPTION_FLAG_FITS

/* Each option's flag: its name with '-' for '_' (filled before main). */
static char flags[IDX_COUNT][OPTION_FLAG_MAX];

__attribute__((constructor)) static void flags_init(void)
{
	for (int i = 0; i < IDX_COUNT; i++)
		for (size_t k = 0; descs[i].name[k]; k++)
			flags[i][k] = descs[i].name[k] == '_' ? '-' : descs[i].name[k];
}

static const char *const kind_arg[] = {
	[OPT_SIZE] = "SIZE", [OPT_UINT] = "N", [OPT_INT] = "N",
	[OPT_STR] = "STR", [OPT_DIRS] = "DIR", [OPT_BOOL] = "",
	[OPT_TIME] = "TIME",
};

static int set_value(struct options *o, const struct option_desc *d,
		     const char *v)
{
	void *field = (char *)o + d->offset;
	char *end;

	switch (d->kind) {
	case OPT_SIZE:
		return size_parse(v, field);
	case OPT_TIME:
		return duration_parse(v, field);
	case OPT_UINT:
		if (!isdigit((unsigned char)*v))	/* strtoull takes " -1" */
			return -EINVAL;
		errno = 0;
		*(uint64_t *)field = strtoull(v, &end, 10);
		return *end || errno ? -EINVAL : 0;
	case OPT_INT:
		errno = 0;
		*(int64_t *)field = strtoll(v, &end, 10);
		return !*v || *end || errno ? -EINVAL : 0;
	case OPT_STR:
		*(const char **)field = v;
		return 0;
	case OPT_DIRS: {
		struct gs_dirs *dirs = field;

		if (!*v || dirs->n == GS_MAX_DIRS)
			return -E2BIG;
		dirs->v[dirs->n++] = v;
		return 0;
	}
	case OPT_BOOL:
		*(bool *)field = true;
		return 0;
	}
	return -EINVAL;
}

static void defaults(struct options *o)
{
	memset(o, 0, sizeof(*o));
	gs_config_init(&o->cfg);
	for (int i = 0; i < IDX_COUNT; i++)
		if (descs[i].kind != OPT_BOOL && descs[i].kind != OPT_DIRS)
			set_value(o, &descs[i], descs[i].def);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: goblin-store [OPTION]...\n"
		"A large-object cache: heads in RAM, prefixes on SSD, tails on HDD,\n"
		"served over the memcache text protocol and to nginx workers.\n\n");
	for (int i = 0; i < IDX_COUNT; i++) {
		char left[64];

		snprintf(left, sizeof(left), "--%.*s %s", OPTION_FLAG_MAX,
			 flags[i], kind_arg[descs[i].kind]);
		fprintf(f, "  %-24s %s", left, descs[i].desc);
		if (descs[i].kind != OPT_BOOL && *descs[i].def)
			fprintf(f, " [%s]", descs[i].def);
		fputc('\n', f);
	}
	fprintf(f, "  %-24s %s\n", "-v, --verbose", "more log lines (repeat for debug; memcached's -v)");
	fprintf(f, "  %-24s %s\n", "--help", "this text (=markdown: options, =stats: stats, as README tables)");
	fprintf(f, "  %-24s %s\n", "--version", "print the version");
	fprintf(f, "\nmemcached's flags, with memcached's meaning (its others are refused):\n");
	for (size_t i = 0; i < options_memcached_n; i++)
		fprintf(f, "  %-24s %s\n", options_memcached[i].flag,
			options_memcached[i].desc);
	fprintf(f, "\nSIZE takes K, M, G, T suffixes (binary): 256K, 64M.\n"
		"TIME takes ms, s, m, h, d suffixes (none: seconds): 500ms, 60s, 2m.\n");
}

static void usage_markdown(void)
{
	printf("| option | default | meaning |\n|---|---|---|\n");
	for (int i = 0; i < IDX_COUNT; i++)
		printf("| `--%s%s%s` | %s | %s |\n", flags[i],
		       descs[i].kind == OPT_BOOL ? "" : " ",
		       kind_arg[descs[i].kind],
		       descs[i].kind == OPT_BOOL ? "off" :
		       *descs[i].def ? descs[i].def : "none",
		       descs[i].desc);
	printf("| `-v` | | more log lines; `-vv` debug (memcached's `-v`) |\n");
	for (size_t i = 0; i < options_memcached_n; i++)
		printf("| `%s` | | %s |\n",
		       options_memcached[i].flag, options_memcached[i].desc);
}

/* The table's min/max: 0, or 2 after printing which option is out. */
static int check_ranges(const struct options *o)
{
	for (int i = 0; i < IDX_COUNT; i++) {
		const struct option_desc *d = &descs[i];
		const void *field = (const char *)o + d->offset;
		bool out;

		if (!d->min && !d->max)
			continue;
		if (d->kind == OPT_INT)
			out = *(const int64_t *)field < d->min ||
			      *(const int64_t *)field > d->max;
		else
			out = *(const uint64_t *)field < (uint64_t)d->min ||
			      *(const uint64_t *)field > (uint64_t)d->max;
		if (!out)
			continue;
		if (d->max == INT64_MAX)
			fprintf(stderr, "goblin-store: --%s must be at least %" PRId64 "\n",
				flags[d - descs], d->min);
		else if (d->min)
			fprintf(stderr, "goblin-store: --%s must be between %" PRId64 " and %" PRId64 "\n",
				flags[d - descs], d->min, d->max);
		else
			fprintf(stderr, "goblin-store: --%s must be at most %" PRId64 "\n",
				flags[d - descs], d->max);
		return 2;
	}
	return 0;
}

int options_rdma_addr(const char *v, char *host, size_t hostlen,
		      uint16_t *port, char *err, size_t errlen)
{
	const char *colon = strrchr(v, ':'), *h = v, *p;
	unsigned char bin[sizeof(struct in6_addr)];
	size_t hlen;
	char *end;
	unsigned long n;
	int family = AF_INET;

	if (!colon) {
		snprintf(err, errlen, "want ADDR:PORT, such as 192.168.1.5:11311 or [fe80::1]:11311");
		return -EINVAL;
	}
	hlen = (size_t)(colon - v);
	if (*v == '[') {
		if (hlen < 2 || colon[-1] != ']') {
			snprintf(err, errlen, "an IPv6 address goes in brackets: [ADDR]:PORT");
			return -EINVAL;
		}
		h = v + 1;
		hlen -= 2;
		family = AF_INET6;
	}
	if (!hlen || hlen >= hostlen) {
		snprintf(err, errlen, "no address before the port");
		return -EINVAL;
	}
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	if (inet_pton(family, host, bin) != 1) {
		snprintf(err, errlen, family == AF_INET6 ?
			 "\"%s\" is not an IPv6 address" :
			 strchr(host, ':') ? "\"%s\" is IPv6: put it in brackets, [ADDR]:PORT" :
			 "\"%s\" is not an IPv4 address (numeric; [ADDR] for IPv6)",
			 host);
		return -EINVAL;
	}
	p = colon + 1;
	errno = 0;
	n = isdigit((unsigned char)*p) ? strtoul(p, &end, 10) : 0;
	if (!isdigit((unsigned char)*p) || *end || errno || n < 1 ||
	    n > 65535) {
		snprintf(err, errlen, "port \"%s\" is not a number from 1 to 65535", p);
		return -EINVAL;
	}
	*port = (uint16_t)n;
	return 0;
}

/* --rdma and --rdma-transport: 0, or 2 after printing what is wrong. */
static int check_rdma(const struct options *o)
{
	char host[INET6_ADDRSTRLEN + 1], err[160];
	uint16_t port;

	if (strcmp(o->rdma_transport, "verbs") &&
	    strcmp(o->rdma_transport, "tcp")) {
		fprintf(stderr, "goblin-store: --rdma-transport: bad value \"%s\" (want verbs or tcp)\n",
			o->rdma_transport);
		return 2;
	}
	if (!*o->rdma)
		return 0;
	if (options_rdma_addr(o->rdma, host, sizeof(host), &port, err,
			      sizeof(err))) {
		fprintf(stderr, "goblin-store: --rdma: bad value \"%s\": %s\n",
			o->rdma, err);
		return 2;
	}
	return 0;
}

/* Sets option <i> to <v> once: 0, or 2 after printing what is wrong. */
static int set_once(struct options *o, int i, const char *v,
		    unsigned char *given)
{
	const struct option_desc *d = &descs[i];

	if (given[i]++ && d->kind != OPT_DIRS && d->kind != OPT_BOOL) {
		fprintf(stderr, "goblin-store: --%s given twice%s\n", flags[i],
			i == IDX_listen ? " (it takes a comma-separated list)" : "");
		return 2;
	}
	if (set_value(o, d, v) < 0) {
		fprintf(stderr, "goblin-store: --%s: bad value \"%s\" (want %s)\n",
			flags[i], v, d->kind == OPT_SIZE ?
			"a size such as 256K or 64M" :
			d->kind == OPT_TIME ?
			"a duration such as 500ms, 60s or 2m" :
			d->kind == OPT_DIRS ? "a directory, at most 16 per tier" :
			"a number");
		return 2;
	}
	return 0;
}

/* An option getopt did not take (<c>: '?' or ':'): 2 after saying so. */
static int refuse_option(int c, char **argv)
{
	if (c == ':')
		fprintf(stderr, "goblin-store: %s needs a value (see --help)\n",
			argv[optind - 1]);
	else if (optopt)
		fprintf(stderr, "goblin-store: unknown option -%c (see --help)\n",
			optopt);
	else
		fprintf(stderr, "goblin-store: unknown option %s (see --help)\n",
			argv[optind - 1]);
	return 2;
}

/* --help[=markdown|=stats] and --version: always 1. */
static int answer(int c)
{
	if (c == OPT_VERSION)
		printf("goblin-store " GOBLIN_VERSION "\n");
	else if (optarg && !strcmp(optarg, "markdown"))
		usage_markdown();
	else if (optarg && !strcmp(optarg, "stats"))
		stats_markdown();
	else
		usage(stdout);
	return 1;
}

int options_parse(struct options *o, int argc, char **argv)
{
	struct option longs[IDX_COUNT + 4];
	unsigned char given[IDX_COUNT] = { 0 };
	char val[32];
	int c, n = 0, idx, ret;

	defaults(o);
	for (int i = 0; i < IDX_COUNT; i++)
		longs[n++] = (struct option){ flags[i],
			descs[i].kind == OPT_BOOL ? no_argument : required_argument,
			NULL, OPT_FIRST + i };
	longs[n++] = (struct option){ "help", optional_argument, NULL, OPT_HELP };
	longs[n++] = (struct option){ "version", no_argument, NULL, OPT_VERSION };
	longs[n++] = (struct option){ "verbose", no_argument, NULL, 'v' };
	longs[n] = (struct option){ 0 };

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":vhp:l:m:c:t:U:u:FY:", longs,
				NULL)) != -1) {
		if (c == 'v') {
			o->verbose++;
		} else if (c == 'h' || c == OPT_HELP || c == OPT_VERSION) {
			return answer(c);
		} else if (c >= OPT_FIRST && c < OPT_FIRST + IDX_COUNT) {
			ret = set_once(o, c - OPT_FIRST, optarg, given);
			if (ret)
				return ret;
		} else if (c == '?' && optopt) {
			return options_memcached_refuse(optopt) ?:
			       refuse_option(c, argv);
		} else if (c == '?' || c == ':') {
			return refuse_option(c, argv);
		} else {
			ret = options_memcached_flag(c, optarg, &idx, val,
						     sizeof(val));
			if (!ret && idx >= 0)
				ret = set_once(o, idx, val[0] ? val : optarg,
					       given);
			if (ret)
				return ret;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "goblin-store: unexpected argument \"%s\" (see --help)\n",
			argv[optind]);
		return 2;
	}
	if (check_ranges(o) || check_rdma(o))
		return 2;
	return options_check(o);
}

const char *options_default(int idx)
{
	return descs[idx].def;
}

uint64_t options_head_slots(const struct options *o)
{
	return o->cfg.ram_head ? o->cfg.memory / o->cfg.ram_head : 0;
}

/* The flag of the gs_config field <field> (<len> bytes), or NULL. */
static const char *flag_of(const char *field, size_t len)
{
	for (int i = 0; i < IDX_COUNT; i++)
		if (strlen(descs[i].name) == len &&
		    !memcmp(descs[i].name, field, len))
			return flags[i];
	return NULL;
}

void options_word_error(char *err, size_t errlen)
{
	char out[1024];
	size_t n = 0;
	const char *p = err;

	while (*p && n + 1 < sizeof(out)) {
		const char *end = *p == '`' ? strchr(p + 1, '`') : NULL;
		const char *flag = end ? flag_of(p + 1, end - p - 1) : NULL;

		if (flag) {
			n += snprintf(out + n, sizeof(out) - n, "--%s", flag);
			p = end + 1;
		} else {
			out[n++] = *p++;
		}
	}
	out[n < sizeof(out) ? n : sizeof(out) - 1] = '\0';
	snprintf(err, errlen, "%s", out);
}

void options_each(const struct options *o,
		  void (*emit)(void *arg, const char *name, const char *value),
		  void *arg)
{
	for (int i = 0; i < IDX_COUNT; i++) {
		const struct option_desc *d = &descs[i];
		const void *field = (const char *)o + d->offset;
		char buf[4096];
		size_t n = 0;

		switch (d->kind) {
		case OPT_SIZE:
		case OPT_UINT:
			snprintf(buf, sizeof(buf), "%" PRIu64, *(const uint64_t *)field);
			break;
		case OPT_TIME:
			snprintf(buf, sizeof(buf), "%" PRIu64 "ms", *(const uint64_t *)field);
			break;
		case OPT_INT:
			snprintf(buf, sizeof(buf), "%" PRId64, *(const int64_t *)field);
			break;
		case OPT_STR:
			snprintf(buf, sizeof(buf), "%s", *(const char *const *)field);
			break;
		case OPT_BOOL:
			snprintf(buf, sizeof(buf), "%s", *(const bool *)field ? "yes" : "no");
			break;
		case OPT_DIRS: {
			const struct gs_dirs *dirs = field;

			buf[0] = '\0';
			for (unsigned k = 0; k < dirs->n && n < sizeof(buf); k++)
				n += snprintf(buf + n, sizeof(buf) - n, "%s%s",
					      k ? "," : "", dirs->v[k]);
			break;
		}
		}
		emit(arg, flags[d - descs], buf);
	}
}
