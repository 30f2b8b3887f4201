/*
 * goblin-devmodel's ctl commands: parsed and applied all or none, shown back
 * as ctl takes them, logged when they change.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "devmodel.h"
#include "size.h"

const struct fault_kind_info fault_kinds[NFAULTS] = {
	[F_READ_EIO] = { "read-eio", false, EIO },
	[F_WRITE_EIO] = { "write-eio", true, EIO },
	[F_WRITE_ENOSPC] = { "write-enospc", true, ENOSPC },
};

/* Parses a decimal count of at least 1 into <*out>; returns 0 or -1. */
static int parse_count(const char *s, uint64_t *out)
{
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return errno || *end || !*out ? -1 : 0;
}

/*
 * Applies one ctl command, split into words <w>[0..<n>), to <fs>; returns 0,
 * or -1 after writing why into <err>.
 *
 *   read-eio|write-eio|write-enospc off | [all | range START LEN] [every N] [count N]
 *   stall DURATION     (0: none)
 *   clear              (every fault off, no stall)
 */
static int fault_parse(struct faults *fs, char **w, int n, char *err, size_t errlen)
{
	struct fault f = { .on = true, .every = 1, .left = UINT64_MAX };
	int k, i;

	if (n == 1 && !strcmp(w[0], "clear")) {
		memset(fs, 0, sizeof(*fs));
		return 0;
	}
	if (!strcmp(w[0], "stall")) {
		if (n != 2 || duration_parse(w[1], &fs->stall_ms)) {
			snprintf(err, errlen, "stall takes one duration (e.g. 3s, 500ms, 0)");
			return -1;
		}
		return 0;
	}
	for (k = 0; k < NFAULTS && strcmp(w[0], fault_kinds[k].name); k++)
		;
	if (k == NFAULTS) {
		snprintf(err, errlen, "unknown command %.64s (read-eio, write-eio, "
			 "write-enospc, stall, clear)", w[0]);
		return -1;
	}
	if (n == 2 && !strcmp(w[1], "off")) {
		memset(&fs->f[k], 0, sizeof(fs->f[k]));
		return 0;
	}
	for (i = 1; i < n; i++) {
		if (!strcmp(w[i], "all")) {
			f.start = f.len = 0;
			continue;
		}
		if (!strcmp(w[i], "range") && i + 2 < n &&
		    !size_parse(w[i + 1], &f.start) && !size_parse(w[i + 2], &f.len) &&
		    f.len && f.start + f.len > f.start) {
			i += 2;
		} else if (!strcmp(w[i], "every") &&
			   !parse_count(i + 1 < n ? w[i + 1] : NULL, &f.every)) {
			i++;
		} else if (!strcmp(w[i], "count") &&
			   !parse_count(i + 1 < n ? w[i + 1] : NULL, &f.left)) {
			i++;
		} else {
			snprintf(err, errlen, "%s: bad argument %.64s (off | [all | range "
				 "START LEN] [every N] [count N])", w[0], w[i]);
			return -1;
		}
	}
	fs->f[k] = f;
	return 0;
}

/*
 * Applies the commands of <text> (one per line, # comments), all or none;
 * returns 0 or -1 after writing why into <err>.
 */
int faults_apply(struct model *m, const char *text, size_t len,
			char *err, size_t errlen)
{
	char buf[CTL_MAX + 1], *line, *save;
	struct faults fs;

	if (len > CTL_MAX) {
		snprintf(err, errlen, "ctl takes at most %u bytes at once", CTL_MAX);
		return -1;
	}
	memcpy(buf, text, len);
	buf[len] = '\0';
	if (strlen(buf) != len) {
		snprintf(err, errlen, "NUL byte in a ctl command");
		return -1;
	}
	pthread_mutex_lock(&m->fault_lock);
	fs = m->faults;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *w[16], *wsave, *hash = strchr(line, '#');
		int n = 0;

		if (hash)
			*hash = '\0';
		for (char *t = strtok_r(line, " \t\r", &wsave); t; t = strtok_r(NULL, " \t\r", &wsave)) {
			if (n == 16) {
				snprintf(err, errlen, "too many words in a ctl command");
				goto out_unlock;
			}
			w[n++] = t;
		}
		if (n && fault_parse(&fs, w, n, err, errlen))
			goto out_unlock;
	}
	m->faults = fs;
	pthread_cond_broadcast(&m->stall_cv);
	pthread_mutex_unlock(&m->fault_lock);
	return 0;
out_unlock:
	pthread_mutex_unlock(&m->fault_lock);
	return -1;
}

/* What <fill> writes about <m>, as a malloc'd string; NULL on ENOMEM. */
char *text_of(struct model *m, void (*fill)(struct model *, FILE *))
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	fill(m, f);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* The faults in force, one command per line as ctl takes them. */
static void faults_fill(struct model *m, FILE *f)
{
	pthread_mutex_lock(&m->fault_lock);
	for (int k = 0; k < NFAULTS; k++) {
		const struct fault *ft = &m->faults.f[k];

		fprintf(f, "%s", fault_kinds[k].name);
		if (!ft->on)
			fprintf(f, " off");
		else if (!ft->len && ft->every == 1 && ft->left == UINT64_MAX)
			fprintf(f, " all");
		if (ft->on && ft->len)
			fprintf(f, " range %" PRIu64 " %" PRIu64, ft->start, ft->len);
		if (ft->on && ft->every > 1)
			fprintf(f, " every %" PRIu64, ft->every);
		if (ft->on && ft->left != UINT64_MAX)
			fprintf(f, " count %" PRIu64, ft->left);
		fprintf(f, "\n");
	}
	fprintf(f, "stall %" PRIu64 "ms\n", m->faults.stall_ms);
	pthread_mutex_unlock(&m->fault_lock);
}

char *faults_text(struct model *m)
{
	return text_of(m, faults_fill);
}

/* Lets every stalled request go: the model is stopping. */
void faults_stop(struct model *m)
{
	pthread_mutex_lock(&m->fault_lock);
	m->stopping = true;
	pthread_cond_broadcast(&m->stall_cv);
	pthread_mutex_unlock(&m->fault_lock);
}
/* Logs the faults in force on one line. */
void faults_log(struct model *m)
{
	char *now = faults_text(m);

	if (!now)
		return;
	for (char *p = now; (p = strchr(p, '\n')); )
		*p = *(p + 1) ? ';' : '\0';
	fprintf(stderr, "goblin-devmodel: faults: %s\n", now);
	free(now);
}
