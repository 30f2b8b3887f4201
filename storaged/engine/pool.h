/*
 * The disk pools (pool.c): one per tier, its dirs striped.  Types in
 * engine-t.h.
 */
#ifndef GOBLIN_POOL_H
#define GOBLIN_POOL_H

#include "engine-t.h"

/* Opens (creating) a pool; its files keep their size and grow as space is
 * handed out.  <fresh>: wipe what the dirs hold (only dirs whose marker is
 * this pool's) and accept a pool of another format or stripe unit. */
int pool_open(struct pool *p, enum gs_tier tier, const char *const *dirs,
	      unsigned ndirs, uint64_t size, uint64_t stripe,
	      uint64_t min_size, bool fresh, char *err, size_t errlen);
void pool_close(struct pool *p);
/* Writes store identity <id> into the marker of every dir of <p> that
 * does not hold it (each dir's pool_dir.id: what its marker held at
 * pool_open, 0 when none or <fresh>).  0 or -errno with the reason in
 * <err>. */
int pool_keep_id(struct pool *p, uint64_t id, char *err, size_t errlen);
/* Allocates <len> contiguous bytes (rounded to align), from space the
 * files hold if it can, else growing them (in smaller steps near the end
 * of their file systems, never into <reserve>): 0 and <*addr>, or -ENOSPC
 * (the pool is full, or its file system is). */
int pool_alloc(struct pool *p, uint64_t len, uint64_t *addr);
/* When no <len> bytes are contiguous: allocates the largest free run of
 * the space the files hold, cut to a multiple of <unit> (<len> itself when
 * it is that long), for a caller that splits its extent into as few runs
 * as it can: 0 with <*addr> and <*got> (0 < <*got> <= <len>), or -ENOSPC
 * when no free run holds one <unit>. */
int pool_alloc_most(struct pool *p, uint64_t len, uint64_t unit,
		    uint64_t *addr, uint64_t *got);
/* Marks [<addr>, <addr>+<len>) allocated (recovery), growing the files to
 * cover it if they do not: 0, -EINVAL when it is outside the pool,
 * misaligned or already taken, or -ENOSPC when the files cannot grow. */
int pool_claim(struct pool *p, uint64_t addr, uint64_t len);
void pool_free(struct pool *p, uint64_t addr, uint64_t len);
/* Splits [<addr>, <addr>+<len>) at stripe boundaries into <pieces> (at most
 * <max>); returns how many, or -E2BIG. */
int pool_pieces(const struct pool *p, uint64_t addr, uint32_t len,
		  struct stripe_piece *pieces, int max);

#endif /* GOBLIN_POOL_H */
