/*
 * mc_op_name(): a parsed command's protocol name, which the parser's tests
 * and fuzzer print and write lines back with; the product never needs it
 * (test_proto_edges.c checks it against the parser's own table).
 */
#ifndef GOBLIN_TEST_MC_OP_NAME_H
#define GOBLIN_TEST_MC_OP_NAME_H

#include "proto_parse.h"

/* The command's protocol name ("get", "flush_all"), or "unknown". */
static inline const char *mc_op_name(enum mc_op op)
{
	static const char *const names[] = {
		[MC_GET] = "get", [MC_GETS] = "gets", [MC_GAT] = "gat",
		[MC_GATS] = "gats", [MC_SET] = "set", [MC_ADD] = "add",
		[MC_REPLACE] = "replace", [MC_APPEND] = "append",
		[MC_PREPEND] = "prepend", [MC_CAS] = "cas",
		[MC_DELETE] = "delete", [MC_INCR] = "incr", [MC_DECR] = "decr",
		[MC_TOUCH] = "touch", [MC_FLUSH_ALL] = "flush_all",
		[MC_STATS] = "stats", [MC_VERSION] = "version",
		[MC_VERBOSITY] = "verbosity", [MC_QUIT] = "quit",
		[MC_LRU_CRAWLER] = "lru_crawler",
		[MC_MG] = "mg", [MC_MS] = "ms", [MC_MD] = "md", [MC_MN] = "mn",
		[MC_MA] = "ma", [MC_ME] = "me",
	};

	if ((unsigned)op >= sizeof(names) / sizeof(names[0]))
		return "unknown";
	return names[op];
}

#endif
