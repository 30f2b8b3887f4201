/*
 * The trust checks of a pool dir, its files and the nginx socket's
 * directory (goblin.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "goblin.h"

static const char *type_name(mode_t type)
{
	switch (type) {
	case S_IFDIR:
		return "directory";
	case S_IFREG:
		return "regular file";
	case S_IFSOCK:
		return "socket";
	}
	return "file of the expected type";
}

int dirtrust_check(const struct stat *st, const char *label, mode_t type,
		   unsigned rules, char *err, size_t errlen)
{
	uid_t us = geteuid();
	bool root_ok = rules & TRUST_ROOT_OK;

	if ((st->st_mode & S_IFMT) != type) {
		snprintf(err, errlen, "%s: is not a %s", label, type_name(type));
		return type == S_IFDIR ? -ENOTDIR : -EINVAL;
	}
	if (st->st_uid != us && !(root_ok && st->st_uid == 0)) {
		snprintf(err, errlen, "%s: belongs to uid %u, not goblin-store's user (uid %u)%s; refusing to use it",
			 label, (unsigned)st->st_uid, (unsigned)us,
			 root_ok ? " nor root" : "");
		return -EPERM;
	}
	if (type != S_IFSOCK && (st->st_mode & (S_IWGRP | S_IWOTH))) {
		snprintf(err, errlen, "%s: writable by its group or others (mode %04o); refusing to use it",
			 label, (unsigned)(st->st_mode & 07777));
		return -EPERM;
	}
	if (type == S_IFREG && st->st_nlink != 1) {
		snprintf(err, errlen, "%s: has %u hard links; refusing to use it",
			 label, (unsigned)st->st_nlink);
		return -EPERM;
	}
	return 0;
}

int dirtrust_open(int dfd, const char *path, int flags, const char *label,
		  unsigned rules, char *err, size_t errlen)
{
	mode_t type = flags & O_DIRECTORY ? S_IFDIR : S_IFREG;
	struct stat st;
	int fd, ret;

	if (!(rules & TRUST_FOLLOW))
		flags |= O_NOFOLLOW;
	fd = openat(dfd, path, flags | O_CLOEXEC, 0600);
	if (fd < 0) {
		ret = -errno;
		if (errno == ELOOP && !(rules & TRUST_FOLLOW))
			snprintf(err, errlen, "%s: is a symlink; refusing to follow it", label);
		else if (errno == ENOTDIR && type == S_IFDIR)
			snprintf(err, errlen, "%s: is not a directory", label);
		else
			snprintf(err, errlen, "%s: %s", label, strerror(errno));
		return ret;
	}
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", label, strerror(errno));
		goto out_close;
	}
	ret = dirtrust_check(&st, label, type, rules, err, errlen);
	if (ret < 0)
		goto out_close;
	return fd;

out_close:
	close(fd);
	return ret;
}
