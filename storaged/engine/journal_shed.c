/*
 * The journal's pages in the page cache (journal.h, journal_shed): it is
 * written as the index changes and read only at start, so what is on disk
 * leaves the cache, and no cgroup is charged for a write-only log.
 */
#include <fcntl.h>
#include <unistd.h>

#include "engine.h"
#include "journal.h"

void journal_shed(int fd, uint64_t upto)
{
	upto -= upto % sysconf(_SC_PAGESIZE);
	if (upto)
		posix_fadvise(fd, 0, upto, POSIX_FADV_DONTNEED);
}

void journal_shed_written(struct journal *j)
{
	uint64_t mark = j->end - j->end % JOURNAL_SHED_STEP;

	if (mark <= j->wb)
		return;
	sync_file_range(j->fd, j->wb, mark - j->wb, SYNC_FILE_RANGE_WRITE);
	if (j->wb > j->shed_lo)
		posix_fadvise(j->fd, j->shed_lo, j->wb - j->shed_lo,
			      POSIX_FADV_DONTNEED);
	if (j->wb > j->shed_lo + 4 * JOURNAL_SHED_STEP)
		j->shed_lo = j->wb - 4 * JOURNAL_SHED_STEP;
	j->wb = mark;
}
