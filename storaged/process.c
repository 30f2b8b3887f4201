/*
 * goblin-store as a process (process.h): log file and level, --user,
 * sd_notify.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "log.h"
#include "process.h"

/* Opens <path> for appending onto stderr: 0 or -errno. */
static int log_onto_stderr(const char *path)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	int ret = 0;

	if (fd < 0)
		return -errno;
	if (dup2(fd, STDERR_FILENO) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

int process_log_open(const struct options *o, char *err, size_t errlen)
{
	int ret;

	log_level = o->log_level_value;
	if (!*o->log_file)
		return 0;
	ret = log_onto_stderr(o->log_file);
	if (ret)
		snprintf(err, errlen, "--log-file %s: %s", o->log_file,
			 strerror(-ret));
	return ret;
}

void process_log_reopen(const struct options *o)
{
	int ret;

	if (!*o->log_file) {
		log_info("SIGHUP: no --log-file to reopen (logging to stderr)");
		return;
	}
	ret = log_onto_stderr(o->log_file);
	if (ret)
		log_err("SIGHUP: reopening --log-file %s: %s (logging on to the old file)",
			o->log_file, strerror(-ret));
	else
		log_info("SIGHUP: reopened --log-file %s", o->log_file);
}

int process_user_find(const struct options *o, struct process_user *u,
		      char *err, size_t errlen)
{
	struct passwd pw, *pwp = NULL;
	char buf[16384];

	*u = (struct process_user){ .name = o->user };
	if (!*o->user) {
		if (geteuid() == 0)
			log_warn("running as root: --user drops to a user of its own once the ports, socket and RAM are set up");
		return 0;
	}
	if (getpwnam_r(o->user, &pw, buf, sizeof(buf), &pwp) || !pwp) {
		snprintf(err, errlen, "--user %s: no such user", o->user);
		return -EINVAL;
	}
	if (geteuid() != 0) {
		if (pw.pw_uid == geteuid())
			return 0;
		snprintf(err, errlen, "--user %s: only root can become another user (running as uid %u)",
			 o->user, (unsigned)geteuid());
		return -EPERM;
	}
	u->set = true;
	u->uid = pw.pw_uid;
	u->gid = pw.pw_gid;
	return 0;
}

/* RLIMIT_MEMLOCK as high as root may set it (no limit, or the hard one
 * without CAP_SYS_RESOURCE): what the user, without CAP_IPC_LOCK, locks. */
static void raise_memlock(void)
{
	struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };

	if (setrlimit(RLIMIT_MEMLOCK, &rl) == 0 ||
	    getrlimit(RLIMIT_MEMLOCK, &rl) < 0)
		return;
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_MEMLOCK, &rl);
}

int process_as_user(const struct options *o, const struct process_user *u,
		    bool on, char *err, size_t errlen)
{
	if (!u->set)
		return 0;
	if (on && !o->cfg.no_mlock)
		raise_memlock();
	/* the group while still root, and back only once root again */
	if (on ? setegid(u->gid) < 0 || seteuid(u->uid) < 0 :
		 seteuid(0) < 0 || setegid(0) < 0)
		goto out_errno;
	return 0;

out_errno:
	snprintf(err, errlen, "--user %s: %s: %s", u->name,
		 on ? "becoming it" : "back to root", strerror(errno));
	return -errno;
}

int process_user_drop(const struct options *o, const struct process_user *u,
		      char *err, size_t errlen)
{
	const char *step;

	if (!u->set)
		return 0;
	/* the user may reopen the file it logs to after a SIGHUP */
	if (*o->log_file && fchown(STDERR_FILENO, u->uid, u->gid) < 0) {
		step = "giving it --log-file";
		goto out_errno;
	}
	step = "initgroups";
	if (initgroups(u->name, u->gid) < 0)
		goto out_errno;
	step = "setgid";
	if (setgid(u->gid) < 0)
		goto out_errno;
	step = "setuid";
	if (setuid(u->uid) < 0)
		goto out_errno;
	log_info("running as user %s (uid %u, gid %u)", u->name,
		 (unsigned)u->uid, (unsigned)u->gid);
	return 0;

out_errno:
	snprintf(err, errlen, "--user %s: %s: %s", u->name, step,
		 strerror(errno));
	return -errno;
}

void process_notify(const char *state)
{
	int ret;

	if (!getenv("NOTIFY_SOCKET"))
		return;
	ret = sd_notify(0, state);
	if (ret < 0)
		log_warn("sd_notify %s: %s", state, strerror(-ret));
}
