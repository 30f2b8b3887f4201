/*
 * Sizes and durations as people write them on command lines and in configs.
 *
 *   size      := DIGITS [ K | M | G | T ] [ B ]   binary units, any case
 *   duration  := DIGITS [ ms | s | m | h | d ]    lower case; none = seconds
 *
 *   "262144" = "256K" = "256k" = "256KB" = 262144 bytes;  "64B" = 64
 *   "150ms" = 150;  "5s" = "5" = 5000;  "2m" = 120000;  "1h";  "1d"  (in ms)
 *
 * No sign, no spaces, no fractions, no "KiB": anything else is refused.
 * Plain C with no ngx_ types: goblin-store and the nginx module share it.
 */
#ifndef GOBLIN_SIZE_H
#define GOBLIN_SIZE_H

#include <stddef.h>
#include <stdint.h>

/*
 * Parses the NUL-terminated size <s> (grammar above) into <*out> bytes.
 * Returns 0; -EINVAL when <s> is NULL, empty or not a size; -ERANGE when the
 * value does not fit in 64 bits.  <*out> is only written on success.
 */
int size_parse(const char *s, uint64_t *out);

/*
 * Parses the NUL-terminated duration <s> (grammar above) into <*ms>
 * milliseconds.  Returns 0; -EINVAL when <s> is NULL, empty or not a
 * duration; -ERANGE when the milliseconds do not fit in 64 bits.  <*ms> is
 * only written on success.
 */
int duration_parse(const char *s, uint64_t *ms);

#endif /* GOBLIN_SIZE_H */
