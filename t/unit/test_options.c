/*
 * The daemon's options table (storaged/options.c) over the engine's config
 * table: the engine's defaults as the daemon's, and the engine's errors
 * worded with the flags.
 */
#include <string.h>

#include "check.h"
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

int main(void)
{
	worded_errors();
	engine_defaults();
	return check_result();
}
