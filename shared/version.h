/*
 * goblin-store's version: --version, the memcache `version` reply, `stats`,
 * the ready line, and the nginx module's goblin_status and /metrics.  A header of its own so that nothing includes the
 * options table (or the stats tables) for one string.
 */
#ifndef GOBLIN_VERSION_H
#define GOBLIN_VERSION_H

#define GOBLIN_VERSION "1.0.0"

#endif /* GOBLIN_VERSION_H */
