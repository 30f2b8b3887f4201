/*
 * Command-line parsing driven by the OPTIONS table.
 */
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

enum option_index {
#define OPTION_INDEX(name, flag, kind, def, desc) IDX_##name,
	OPTIONS(OPTION_INDEX)
#undef OPTION_INDEX
	IDX_COUNT
};

struct option_desc {
	const char *flag;
	enum option_kind kind;
	const char *def;
	const char *desc;
	size_t offset;
};

static const struct option_desc descs[] = {
#define OPTION_DESC(name, flag, kind, def, desc) \
	{ flag, OPT_##kind, def, desc, offsetof(struct options, name) },
	OPTIONS(OPTION_DESC)
#undef OPTION_DESC
};

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
		struct { const char *v[GS_MAX_DIRS]; unsigned n; } *dirs = field;

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

		snprintf(left, sizeof(left), "--%s %s", descs[i].flag,
			 kind_arg[descs[i].kind]);
		fprintf(f, "  %-24s %s", left, descs[i].desc);
		if (descs[i].kind != OPT_BOOL && *descs[i].def)
			fprintf(f, " [%s]", descs[i].def);
		fputc('\n', f);
	}
	fprintf(f, "  %-24s %s\n", "-v, --verbose", "more log lines (repeat for debug)");
	fprintf(f, "  %-24s %s\n", "--help", "this text (=markdown: options, =stats: stats, as README tables)");
	fprintf(f, "  %-24s %s\n", "--version", "print the version");
	fprintf(f, "\nSIZE takes K, M, G, T suffixes (binary): 256K, 64M.\n"
		"TIME takes ms, s, m, h, d suffixes (none: seconds): 500ms, 60s, 2m.\n");
}

static void usage_markdown(void)
{
	printf("| option | default | meaning |\n|---|---|---|\n");
	for (int i = 0; i < IDX_COUNT; i++)
		printf("| `--%s%s%s` | %s | %s |\n", descs[i].flag,
		       descs[i].kind == OPT_BOOL ? "" : " ",
		       kind_arg[descs[i].kind],
		       descs[i].kind == OPT_BOOL ? "off" :
		       *descs[i].def ? descs[i].def : "none",
		       descs[i].desc);
	printf("| `-v` | | more log lines; `-vv` debug |\n");
}

int options_parse(struct options *o, int argc, char **argv)
{
	struct option longs[IDX_COUNT + 4];
	int c, n = 0;

	defaults(o);
	for (int i = 0; i < IDX_COUNT; i++)
		longs[n++] = (struct option){ descs[i].flag,
			descs[i].kind == OPT_BOOL ? no_argument : required_argument,
			NULL, OPT_FIRST + i };
	longs[n++] = (struct option){ "help", optional_argument, NULL, OPT_HELP };
	longs[n++] = (struct option){ "version", no_argument, NULL, OPT_VERSION };
	longs[n++] = (struct option){ "verbose", no_argument, NULL, 'v' };
	longs[n] = (struct option){ 0 };

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":vh", longs, NULL)) != -1) {
		if (c == 'v') {
			o->verbose++;
		} else if (c == 'h' || c == OPT_HELP) {
			if (optarg && !strcmp(optarg, "markdown"))
				usage_markdown();
			else if (optarg && !strcmp(optarg, "stats"))
				stats_markdown();
			else
				usage(stdout);
			return 1;
		} else if (c == OPT_VERSION) {
			printf("goblin-store " GOBLIN_VERSION "\n");
			return 1;
		} else if (c >= OPT_FIRST && c < OPT_FIRST + IDX_COUNT) {
			const struct option_desc *d = &descs[c - OPT_FIRST];

			if (set_value(o, d, optarg) < 0) {
				fprintf(stderr, "goblin-store: --%s: bad value \"%s\" (want %s)\n",
					d->flag, optarg, d->kind == OPT_SIZE ?
					"a size such as 256K or 64M" :
					d->kind == OPT_TIME ?
					"a duration such as 500ms, 60s or 2m" :
					d->kind == OPT_DIRS ? "a directory, at most 16 per tier" :
					"a number");
				return 2;
			}
		} else if (c == ':') {
			fprintf(stderr, "goblin-store: %s needs a value (see --help)\n",
				argv[optind - 1]);
			return 2;
		} else {
			fprintf(stderr, "goblin-store: unknown option %s (see --help)\n",
				argv[optind - 1]);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "goblin-store: unexpected argument \"%s\" (see --help)\n",
			argv[optind]);
		return 2;
	}
	if (o->cores < 1 || o->cores > 256) {
		fprintf(stderr, "goblin-store: --cores must be between 1 and 256\n");
		return 2;
	}
	if (o->memcache_port > 65535) {
		fprintf(stderr, "goblin-store: --memcache-port must be at most 65535\n");
		return 2;
	}
	if (o->max_conns < 1 || o->max_conns > 1048576) {
		fprintf(stderr, "goblin-store: --max-conns must be between 1 and 1048576\n");
		return 2;
	}
	if (o->io_streams < 1 || o->io_streams > 1024) {
		fprintf(stderr, "goblin-store: --io-streams must be between 1 and 1024\n");
		return 2;
	}
	if (o->io_buffers < 1 || o->io_buffers > 64) {
		fprintf(stderr, "goblin-store: --io-buffers must be between 1 and 64\n");
		return 2;
	}
	if (o->numa < -1 || o->numa > INT_MAX) {
		fprintf(stderr, "goblin-store: --numa must be -1 (none) or a node number\n");
		return 2;
	}
	return 0;
}

void options_to_config(const struct options *o, struct gs_config *cfg)
{
	gs_config_defaults(cfg);
	cfg->memory = o->memory;
	cfg->sub_memory = o->sub_memory;
	cfg->block = o->block;
	cfg->ram_head = o->ram_head;
	cfg->ssd_prefix = o->ssd_prefix;
	for (unsigned i = 0; i < o->ssd_dir.n; i++)
		cfg->ssd_dirs[cfg->n_ssd_dirs++] = o->ssd_dir.v[i];
	for (unsigned i = 0; i < o->hdd_dir.n; i++)
		cfg->hdd_dirs[cfg->n_hdd_dirs++] = o->hdd_dir.v[i];
	cfg->ssd_size = o->ssd_size;
	cfg->hdd_size = o->hdd_size;
	cfg->stripe_unit = o->stripe_unit;
	cfg->io_buffers = o->io_buffers;
	cfg->io_streams = o->io_streams;
	cfg->mlock = !o->no_mlock;
	cfg->max_object = o->max_object;
	cfg->admission_bytes = o->admission_bytes;
	cfg->no_evict = o->no_evict;
	cfg->numa_node = o->numa;
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
			const struct { const char *v[GS_MAX_DIRS]; unsigned n; } *dirs = field;

			buf[0] = '\0';
			for (unsigned k = 0; k < dirs->n && n < sizeof(buf); k++)
				n += snprintf(buf + n, sizeof(buf) - n, "%s%s",
					      k ? "," : "", dirs->v[k]);
			break;
		}
		}
		emit(arg, d->flag, buf);
	}
}
