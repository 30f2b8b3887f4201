/*
 * Room for the index journal (journal.h, JOURNAL_ROOM).  Appends go into
 * space allocated ahead past the journal's end, so a file system that
 * fills up still takes deletes: the last JOURNAL_DEL_ROOM bytes of the
 * room are kept for the small records (DEL for deletes and evictions,
 * TOUCH, FLUSH), and a store checks for its PUT's room before it evicts
 * for space.  The pools' growth leaves JOURNAL_RESERVE() free on the journal's
 * file system (enough for a checkpoint and some growth); one short of room
 * all the same is checkpointed early when that frees enough.  Called with
 * e->lock held.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>

#include "engine.h"
#include "journal.h"
#include "log.h"

/* Bytes free on the journal's file system for an unprivileged writer;
 * UINT64_MAX when unknown. */
static uint64_t fs_free(const struct journal *j)
{
	struct statfs sfs;

	if (fstatfs(j->fd, &sfs) < 0)
		return UINT64_MAX;
	return (uint64_t)sfs.f_bavail * sfs.f_bsize;
}

/* See journal.h. */
uint64_t journal_live_bytes(const struct gs_engine *e)
{
	uint64_t live = sizeof(struct jhdr);
	int64_t now = time(NULL);

	for (uint32_t i = 0; i < e->clock_len; i++)
		if (!journal_obj_dead(e, e->clock[i], now))
			live += journal_put_len(e, e->clock[i]);
	return live;
}

/* On a file system short of room: a checkpoint when it fits and frees a
 * step of room and a quarter of the live records at least.  The index is
 * walked once per quarter step of appends at most. */
static void compact(struct gs_engine *e, struct journal *j)
{
	uint64_t avail = fs_free(j), live;

	if (avail >= j->end + 2 * JOURNAL_ROOM)
		return;
	if (j->end >= j->room_weighed &&
	    j->end < j->room_weighed + JOURNAL_ROOM / 4)
		return;
	j->room_weighed = j->end;
	live = journal_live_bytes(e);
	if (live + JOURNAL_ROOM > j->end || j->end - live < live / 4 ||
	    avail < live + JOURNAL_ROOM)
		return;
	log_info("%s: its file system is short of room: an early checkpoint",
		 j->path);
	journal_checkpoint(e, e->cfg.sync_interval > 0);
}

/* Allocates room up to <want>: 0 or -errno. */
static int extend(struct journal *j, uint64_t want)
{
	if (fallocate(j->fd, FALLOC_FL_KEEP_SIZE, j->room, want - j->room) == 0) {
		j->room = want;
		return 0;
	}
	if (errno != EOPNOTSUPP)
		return -errno;
	j->room = UINT64_MAX;		/* nothing to allocate ahead with */
	return 0;
}

static void publish_reserve(struct gs_engine *e, const struct journal *j)
{
	struct stat st;

	if (fstat(j->fd, &st) < 0)
		return;
	for (int t = GS_TIER_SSD; t < GS_TIERS; t++) {
		e->pools[t].reserve = JOURNAL_RESERVE(j->end);
		e->pools[t].reserve_dev = st.st_dev;
	}
}

void journal_room_reset(struct gs_engine *e)
{
	struct journal *j = e->journal;

	j->room = j->end;
	publish_reserve(e, j);
}

int journal_room_make(struct gs_engine *e, size_t len, bool small)
{
	struct journal *j = e->journal;
	uint64_t keep = small ? 0 : JOURNAL_DEL_ROOM;
	int ret;

	if (j->end + len + keep <= j->room)
		return 0;
	compact(e, j);
	if (j->end + len + keep <= j->room)
		return 0;
	if (j->room < j->end)
		j->room = j->end;
	ret = extend(j, round_up(j->end + len + keep + JOURNAL_ROOM, 4096));
	if (ret < 0)
		ret = extend(j, j->end + len + keep);
	if (ret == 0) {
		if (j->cramped)
			log_info("%s: room again: stores are journaled again",
				 j->path);
		j->cramped = false;
		publish_reserve(e, j);
		return 0;
	}
	STAT_ADD(e, journal_no_room, 1);
	if (!j->cramped)
		log_warn("%s: no room to grow: %s: stores are refused (out of memory) until there is; deletes, evictions and touches go on in the %llu bytes kept for them",
			 j->path, strerror(-ret),
			 (unsigned long long)(j->room - j->end));
	j->cramped = true;
	return -ENOSPC;
}

bool journal_room_for(struct gs_engine *e, const struct gs_obj *obj)
{
	uint64_t len = sizeof(struct jrec) + sizeof(struct jput) +
		       round_up(obj->klen, 8) +
		       (uint64_t)obj->nchunks * sizeof(struct jchunk);

	if (!e->journal || !e->journal->recovered)
		return true;
	if (!obj->nchunks)
		len += round_up(obj->meta.size, 8);
	return journal_room_make(e, len, false) == 0;
}
