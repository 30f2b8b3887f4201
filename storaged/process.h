/*
 * goblin-store as a process: its log (--log-file, --log-level), the user
 * it runs as (--user, as memcached's -u) and its word to systemd
 * (sd_notify).  main.c calls them in this order:
 *
 *   process_log_open --> process_user_find --> process_as_user(true)
 *   (root: the engine opens as the user, its pools its own)
 *   --> process_as_user(false) --> fronts bind --> process_user_drop
 *   --> process_notify("READY=1") ... SIGHUP: process_log_reopen ...
 *   --> process_notify("STOPPING=1")
 *
 * Each returns 0 or -errno with a one-line reason in <err>.
 */
#ifndef GOBLIN_PROCESS_H
#define GOBLIN_PROCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "options.h"

/* --user resolved: <set> when there is a user to become. */
struct process_user {
	bool set;
	uid_t uid;
	gid_t gid;
	const char *name;
};

/* Sets the log level (--log-level, -v) and points stderr at --log-file
 * when given (appended, created 0640). */
int process_log_open(const struct options *o, char *err, size_t errlen);

/* Reopens --log-file onto stderr (SIGHUP, after a rotation); a line says
 * so in the new file, or in the old one why it could not. */
void process_log_reopen(const struct options *o);

/* Looks --user up into <u>: refused when there is no such user, or when a
 * process not root names another user than its own.  Root without --user
 * is warned about. */
int process_user_find(const struct options *o, struct process_user *u,
		      char *err, size_t errlen);

/* As root with --user: <on> makes <u> the effective user (what the
 * engine creates is the user's, its trust checks are the user's: the RAM
 * it locks within RLIMIT_MEMLOCK, first raised as far as root may when <o>
 * locks its RAM, as the user has no CAP_IPC_LOCK); off: root again.
 * Nothing otherwise. */
int process_as_user(const struct options *o, const struct process_user *u,
		    bool on, char *err, size_t errlen);

/* Becomes <u> for good: its groups, gid and uid (the log file given to
 * it), once everything that needs root is done.  Nothing without --user. */
int process_user_drop(const struct options *o, const struct process_user *u,
		      char *err, size_t errlen);

/* Tells systemd <state> ("READY=1", "STOPPING=1") when $NOTIFY_SOCKET is
 * set. */
void process_notify(const char *state);

#endif /* GOBLIN_PROCESS_H */
