/*
 * The journal's sync thread.
 *
 * --sync-interval (journal.h): a thread that fdatasyncs the pools' extent
 * files and the journal at most once an interval, and the waits of those
 * whose acknowledgement needs that sync (a group commit).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "engine.h"
#include "journal.h"
#include "log.h"
#include "writer.h"

void journal_publish_synced(struct gs_engine *e, struct journal *j,
			    uint64_t seq)
{
	pthread_mutex_lock(&j->sync_lock);
	if (seq > j->synced)
		__atomic_store_n(&j->synced, seq, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&j->synced_cond);
	pthread_mutex_unlock(&j->sync_lock);
	writer_wake_synced(e);		/* stores waiting in gs_io loops */
}

static void sync_once(struct gs_engine *e, struct journal *j)
{
	uint64_t seq = __atomic_load_n(&j->last, __ATOMIC_ACQUIRE), end;
	int fd, ret = 0;

	if (seq <= __atomic_load_n(&j->synced, __ATOMIC_ACQUIRE))
		return;
	/* the chunks of what is journaled were written before it */
	for (int t = GS_TIER_SSD; t < GS_TIERS; t++)
		for (unsigned i = 0; e->has_pool[t] && i < e->pools[t].ndirs; i++)
			if (fdatasync(e->pools[t].dirs[i].fd) < 0)
				ret = -errno;
	/* a checkpoint may swap the file meanwhile: it syncs the new one */
	pthread_mutex_lock(&j->fd_lock);
	fd = fcntl(j->fd, F_DUPFD_CLOEXEC, 0);
	end = __atomic_load_n(&j->end, __ATOMIC_ACQUIRE);
	pthread_mutex_unlock(&j->fd_lock);
	if (fd < 0) {
		ret = -errno;
	} else {
		if (fdatasync(fd) < 0)
			ret = -errno;
		else		/* what it wrote is clean now */
			journal_shed(fd, end);
		close(fd);
	}
	if (ret < 0) {
		/* what it covered is answered SERVER_ERROR, never hung */
		log_err("%s: fdatasync: %s: stores and deletes up to now fail",
			j->path, strerror(-ret));
		__atomic_store_n(&j->failed, seq, __ATOMIC_RELEASE);
	} else {
		STAT_ADD(e, syncs, 1);
	}
	journal_publish_synced(e, j, seq);
}

static void *sync_main(void *arg)
{
	struct gs_engine *e = arg;
	struct journal *j = e->journal;
	uint64_t ns = e->cfg.sync_interval * 1000000ull;
	struct timespec at;

	/* one sync per interval at most; after an idle interval the next
	 * append is synced at once, so a lone store waits one sync, not an
	 * interval and a sync */
	pthread_mutex_lock(&j->sync_lock);
	while (!j->stop) {
		at = mono_deadline(ns);
		while (!j->stop &&
		       pthread_cond_timedwait(&j->tick, &j->sync_lock, &at) !=
		       ETIMEDOUT)
			;
		/* idle is set before last is read, as an append stores last
		 * before it reads idle: one of the two sees the other */
		for (;;) {
			__atomic_store_n(&j->idle, true, __ATOMIC_SEQ_CST);
			if (j->stop || __atomic_load_n(&j->last, __ATOMIC_SEQ_CST) >
			    __atomic_load_n(&j->synced, __ATOMIC_ACQUIRE))
				break;
			/* a missed signal costs 1 s */
			at = mono_deadline(1000000000ull);
			pthread_cond_timedwait(&j->tick, &j->sync_lock, &at);
		}
		__atomic_store_n(&j->idle, false, __ATOMIC_RELEASE);
		if (j->stop)
			break;
		pthread_mutex_unlock(&j->sync_lock);
		sync_once(e, j);
		pthread_mutex_lock(&j->sync_lock);
	}
	pthread_mutex_unlock(&j->sync_lock);
	return NULL;
}

uint64_t journal_synced(const struct gs_engine *e)
{
	const struct journal *j = e->journal;

	if (!j)
		return UINT64_MAX;
	if (!j->syncing)
		return __atomic_load_n(&j->last, __ATOMIC_ACQUIRE);
	return __atomic_load_n(&j->synced, __ATOMIC_ACQUIRE);
}

int journal_sync_result(const struct gs_engine *e, uint64_t seq)
{
	const struct journal *j = e->journal;

	if (!j || !j->syncing)
		return 0;
	return seq <= __atomic_load_n(&j->failed, __ATOMIC_ACQUIRE) ? -EIO : 0;
}

int journal_wait_synced(struct gs_engine *e, uint64_t seq)
{
	struct journal *j = e->journal;

	if (!j || !j->syncing)
		return 0;
	pthread_mutex_lock(&j->sync_lock);
	while (j->synced < seq && !j->stop)
		pthread_cond_wait(&j->synced_cond, &j->sync_lock);
	pthread_mutex_unlock(&j->sync_lock);
	return journal_sync_result(e, seq);
}

int journal_sync_start(struct gs_engine *e, char *err, size_t errlen)
{
	struct journal *j = e->journal;
	int ret;

	if (!e->cfg.sync_interval)
		return 0;
	ret = -pthread_create(&j->thread, NULL, sync_main, e);
	if (ret < 0) {
		snprintf(err, errlen, "journal sync thread: %s", strerror(-ret));
		return ret;
	}
	pthread_setname_np(j->thread, "gs-journal");
	j->syncing = true;
	return 0;
}

void journal_sync_stop(struct journal *j)
{
	if (!j->syncing)
		return;
	pthread_mutex_lock(&j->sync_lock);
	j->stop = true;
	pthread_cond_broadcast(&j->tick);
	pthread_cond_broadcast(&j->synced_cond);
	pthread_mutex_unlock(&j->sync_lock);
	pthread_join(j->thread, NULL);
}
