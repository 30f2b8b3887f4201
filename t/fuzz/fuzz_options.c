/*
 * libFuzzer target: goblin-store's command line (storaged/options.c).
 * sources: storaged/options.c storaged/options_check.c storaged/stats.c libgoblin
 *
 * The input, split on NUL bytes, is argv[1..] (each argument copied to a
 * buffer of its exact size).  getopt's state is reset (optind = 0) before
 * every parse; stdout goes to /dev/null and stderr to a buffer.  Checks:
 * options_parse() returns 0, 1 or 2; 2 comes with an error on stderr,
 * "goblin-store: ...\n"; 1 (help, version) only when some
 * argument is an option; 0 only with values its validation allows, which
 * the engine reads as given (struct options holds its gs_config), and
 * which, printed by options_each() (`stats settings`) and given back as
 * --flag=value arguments, parse to the same settings.
 *
 * FUZZ_OPEN (set by t/fuzz/run from t/fuzz/crashes/open) names bugs found
 * but not fixed yet, by the short description of their reproducer
 * (options-<desc>): their checks are skipped, so a run can find others.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "options.h"

#define MAX_ARGS	64
#define SETTINGS_MAX	64

static FILE *err_out;		/* the real stderr, for broken() */
static char errbuf[8192];
static size_t input_size;	/* bytes of the arguments: the most -v's */

struct settings {
	unsigned n;
	char name[SETTINGS_MAX][32];
	char *value[SETTINGS_MAX];
};

static void __attribute__((noreturn))
broken(int argc, char **argv, const char *why)
{
	fprintf(err_out, "fuzz_options: %s: argv", why);
	for (int i = 1; i < argc; i++)
		fprintf(err_out, " \"%s\"", argv[i]);
	fprintf(err_out, "\n");
	abort();
}

#define EXPECT(cond) do { if (!(cond)) broken(argc, argv, #cond); } while (0)

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	err_out = stderr;
	stdout = fopen("/dev/null", "w");
	return stdout ? 0 : -1;
}

/* options_parse() with stderr captured in errbuf. */
static int parse(struct options *o, int argc, char **argv, size_t *errlen)
{
	FILE *f = fmemopen(errbuf, sizeof(errbuf), "w");
	int rc;

	if (!f)
		abort();
	stderr = f;
	optind = 0;
	rc = options_parse(o, argc, argv);
	fflush(f);
	*errlen = ftell(f);
	fclose(f);
	stderr = err_out;
	return rc;
}

static void collect(void *arg, const char *name, const char *value)
{
	struct settings *s = arg;

	if (s->n == SETTINGS_MAX)
		abort();
	snprintf(s->name[s->n], sizeof(s->name[0]), "%s", name);
	s->value[s->n++] = strdup(value);
}

static void settings_free(struct settings *s)
{
	for (unsigned i = 0; i < s->n; i++)
		free(s->value[i]);
	s->n = 0;
}

/* The accepted <o> as --flag=value arguments (directories one by one). */

/* The table's BOOL flags, from the table itself. */
#define FLAG_IF_BOOL_SIZE(flag)
#define FLAG_IF_BOOL_UINT(flag)
#define FLAG_IF_BOOL_INT(flag)
#define FLAG_IF_BOOL_STR(flag)
#define FLAG_IF_BOOL_DIRS(flag)
#define FLAG_IF_BOOL_TIME(flag)
#define FLAG_IF_BOOL_BOOL(flag) flag,
#define FLAG_IF_BOOL(name, kind, def, min, max, desc) FLAG_IF_BOOL_##kind(#name)
static const char *const bool_flags[] = { OPTIONS(FLAG_IF_BOOL, FLAG_IF_BOOL) NULL };

/* Whether the flag <name> is a BOOL's (its field: '_' for '-'). */
static bool is_bool_flag(const char *name)
{
	for (int i = 0; bool_flags[i]; i++) {
		const char *f = bool_flags[i];
		size_t k = 0;

		while (f[k] && (f[k] == name[k] || (f[k] == '_' && name[k] == '-')))
			k++;
		if (!f[k] && !name[k])
			return true;
	}
	return false;
}

static int to_args(const struct options *o, const struct settings *s,
		   char **out)
{
	int n = 0;

	out[n++] = strdup("goblin-store");
	for (unsigned i = 0; i < s->n; i++) {
		const char *v = s->value[i];
		char *a;

		if (!strcmp(s->name[i], "ssd-dir") || !strcmp(s->name[i], "hdd-dir")) {
			const char *flag = s->name[i];
			bool ssd = flag[0] == 's';
			unsigned nd = ssd ? o->cfg.ssd_dir.n : o->cfg.hdd_dir.n;

			for (unsigned k = 0; k < nd; k++)
				if (asprintf(&out[n++], "--%s=%s", flag,
					     ssd ? o->cfg.ssd_dir.v[k] : o->cfg.hdd_dir.v[k]) < 0)
					abort();
			continue;
		}
		/* BOOL: a flag without a value, printed yes or no */
		if (is_bool_flag(s->name[i])) {
			if (!strcmp(v, "yes"))
				if (asprintf(&out[n++], "--%s", s->name[i]) < 0)
					abort();
			continue;
		}
		if (asprintf(&a, "--%s=%s", s->name[i], v) < 0)
			abort();
		out[n++] = a;
	}
	if (o->verbose) {
		out[n] = malloc(o->verbose + 2);
		out[n][0] = '-';
		memset(out[n] + 1, 'v', o->verbose);
		out[n++][o->verbose + 1] = '\0';
	}
	out[n] = NULL;
	return n;
}

static void check_accepted(int argc, char **argv, const struct options *o)
{
	static struct settings s1, s2;
	static struct options o2;
	char *args2[3 * MAX_ARGS];
	int n2, rc;
	size_t errlen;

	EXPECT(o->cores >= 1 && o->cores <= 256);
	EXPECT(o->memcache_port <= 65535);
	EXPECT(o->cfg.io_streams >= 1 && o->cfg.io_streams <= 1024);
	EXPECT(o->cfg.ssd_dir.n <= GS_MAX_DIRS && o->cfg.hdd_dir.n <= GS_MAX_DIRS);
	for (unsigned i = 0; i < o->cfg.ssd_dir.n; i++)
		EXPECT(o->cfg.ssd_dir.v[i] && o->cfg.ssd_dir.v[i][0]);
	for (unsigned i = 0; i < o->cfg.hdd_dir.n; i++)
		EXPECT(o->cfg.hdd_dir.v[i] && o->cfg.hdd_dir.v[i][0]);
	EXPECT(o->listen && o->socket && o->socket_user && o->socket_group);
	EXPECT(o->verbose >= 0 && (size_t)o->verbose <= input_size);

	/* the engine gets the values as given: o->cfg is its config (no
	 * copy that could truncate), within the table's ranges */
	EXPECT(o->cfg.io_buffers >= 1 && o->cfg.io_buffers <= GS_IO_BUFFERS_MAX);
	EXPECT(o->cfg.numa >= -1 && o->cfg.numa <= INT_MAX);

	/* `stats settings` read back as arguments gives the same settings */
	options_each(o, collect, &s1);
	n2 = to_args(o, &s1, args2);
	rc = parse(&o2, n2, args2, &errlen);
	if (rc != 0) {
		fprintf(err_out, "fuzz_options: settings refused: %.*s",
			(int)errlen, errbuf);
		broken(argc, argv, "settings printed by options_each() refused");
	}
	options_each(&o2, collect, &s2);
	EXPECT(s1.n == s2.n && o2.verbose == o->verbose);
	for (unsigned i = 0; i < s1.n; i++)
		if (strcmp(s1.name[i], s2.name[i]) ||
		    strcmp(s1.value[i], s2.value[i])) {
			fprintf(err_out, "fuzz_options: %s: \"%s\" read back as \"%s\"\n",
				s1.name[i], s1.value[i], s2.value[i]);
			broken(argc, argv, "settings differ once read back");
		}
	settings_free(&s1);
	settings_free(&s2);
	for (int i = 0; i < n2; i++)
		free(args2[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct options o;
	char *argv[MAX_ARGS + 1];
	const char *p = (const char *)data, *end = p + size;
	int argc = 0, rc;
	bool dash = false;
	size_t errlen;

	input_size = size;
	argv[argc++] = strdup("goblin-store");
	while (p < end && argc < MAX_ARGS) {
		const char *z = memchr(p, '\0', end - p);
		size_t len = (z ? z : end) - p;

		argv[argc] = malloc(len + 1);
		memcpy(argv[argc], p, len);
		argv[argc][len] = '\0';
		dash |= argv[argc][0] == '-' && argv[argc][1];
		argc++;
		p += len + 1;
	}
	argv[argc] = NULL;

	rc = parse(&o, argc, argv, &errlen);
	switch (rc) {
	case 0:
		EXPECT(errlen == 0);
		check_accepted(argc, argv, &o);
		break;
	case 1:
		EXPECT(dash && errlen == 0);
		break;
	case 2:
		/* "goblin-store: ...\n" (an argument quoted in it may hold
		 * a newline of its own) */
		EXPECT(errlen > 14 && errlen < sizeof(errbuf) &&
		       !memcmp(errbuf, "goblin-store: ", 14));
		EXPECT(errbuf[errlen - 1] == '\n');
		break;
	default:
		broken(argc, argv, "options_parse() returned neither 0, 1 nor 2");
	}
	for (int i = 0; i < argc; i++)
		free(argv[i]);
	return 0;
}
