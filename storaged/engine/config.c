/*
 * The engine's defaults: GS_CONFIG's (goblin-config-t.h), parsed as the
 * daemon parses a flag's value.
 */
#include <stdlib.h>
#include <string.h>

#include "goblin.h"
#include "size.h"

static void default_SIZE(uint64_t *v, const char *def)
{
	size_parse(def, v);
}

static void default_TIME(uint64_t *v, const char *def)
{
	duration_parse(def, v);
}

static void default_UINT(uint64_t *v, const char *def)
{
	*v = strtoull(def, NULL, 10);
}

static void default_INT(int64_t *v, const char *def)
{
	*v = strtoll(def, NULL, 10);
}

/* DIRS: none; BOOL: false */
static void default_DIRS(struct gs_dirs *v, const char *def)
{
	(void)v;
	(void)def;
}

static void default_BOOL(bool *v, const char *def)
{
	(void)v;
	(void)def;
}

void gs_config_init(struct gs_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
#define GS_CONFIG_DEFAULT(name, kind, def, min, max, desc)		\
	default_##kind(&cfg->name, def);
	GS_CONFIG(GS_CONFIG_DEFAULT)
#undef GS_CONFIG_DEFAULT
}
