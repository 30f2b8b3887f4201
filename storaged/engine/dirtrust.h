/*
 * Trusting a directory or a file in it: whoever can write a directory can
 * swap its entries for links to files we may write, or bind a socket there
 * first and pose as us.  One set of rules for the disk pools and the nginx
 * socket's directory.
 */
#ifndef GOBLIN_DIRTRUST_H
#define GOBLIN_DIRTRUST_H

#include <stddef.h>
#include <sys/stat.h>

#define TRUST_ROOT_OK	1u	/* root may own it as well as our euid */
#define TRUST_FOLLOW	2u	/* the last path component may be a symlink */

/*
 * Checks <st>: of file type <type> (S_IFDIR, S_IFREG, S_IFSOCK), owned by
 * our euid (or root, with TRUST_ROOT_OK in <rules>), not writable by its
 * group or others (a socket is exempt: its mode is not who may replace it),
 * a regular file with one hard link.  Returns 0, or -errno with
 * "<label>: <reason>" in <err>.
 */
int dirtrust_check(const struct stat *st, const char *label, mode_t type,
		   unsigned rules, char *err, size_t errlen);

/*
 * Opens <path> (relative to <dfd>, or AT_FDCWD) with <flags> | O_CLOEXEC,
 * never through a symlink unless TRUST_FOLLOW is in <rules> (O_CREAT uses
 * mode 0600), and checks it as dirtrust_check() does, as a directory when
 * <flags> has O_DIRECTORY, else as a regular file.  Returns the descriptor,
 * or -errno with "<label>: <reason>" in <err>.
 */
int dirtrust_open(int dfd, const char *path, int flags, const char *label,
		  unsigned rules, char *err, size_t errlen);

#endif
