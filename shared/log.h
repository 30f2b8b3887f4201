/*
 * Logging shared by goblin-store and the tools: one line per event on
 * stderr, "<time> <level>: <message>".  <log_level> filters: a message is
 * printed when its level is at or below it (-v raises it).
 */
#ifndef GOBLIN_LOG_H
#define GOBLIN_LOG_H

enum log_level { LOG_ERR, LOG_WARN, LOG_INFO, LOG_DEBUG };

extern int log_level;

/* printf-style; thread-safe (one write(2) per line). */
void log_msg(enum log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define log_err(...)	log_msg(LOG_ERR, __VA_ARGS__)
#define log_warn(...)	log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...)	log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...)	do { if (log_level >= LOG_DEBUG) log_msg(LOG_DEBUG, __VA_ARGS__); } while (0)

#endif
