# usage: . bench/rig/lib.sh   (sourced by up, down, exec-in-server-cgroup)
# Shared pieces of the rig scripts: the state directory, its journal and
# process identity checks.

RIG_DEFAULT_STATE=/var/tmp/goblin-rig

rig_die() {
	echo "${0##*/}: $*" >&2
	exit 1
}

# Prints the start time of process <pid> (field 22 of /proc/PID/stat), or
# nothing if it is gone or a zombie; with the pid it names one process.
rig_starttime() {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
	stat=${stat##*) }
	set -- $stat
	[ "$1" = Z ] || echo "${20}"
}

# True if <pid> is still the process that had start time <start>.
rig_alive() {
	[ -n "$1" ] && [ "$(rig_starttime "$1")" = "$2" ]
}

# Reads the state directory's rig.env into the environment; fails unless
# `up` completed there.
rig_load_env() {
	local state=$1
	[ -f "$state/state" ] && [ "$(tail -n 1 "$state/state")" = complete ] ||
		rig_die "no rig is up at $state (run bench/rig/up)"
	. "$state/rig.env"
}
