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

# Sets net_rate_bps, net_rtt_us, net_mtu, net_gso and net_burst for network
# <name>; fails on an unknown one.  The largest frame (a TSO batch of
# net_gso bytes) must fit tbf's bucket whole, else tbf cuts it into MTU
# frames and the delay line pays per frame: 1g keeps batches to 16 KiB
# (a 32 KiB bucket: 262 us of line time), 10g to 64 KiB (128 KiB: 105 us).
rig_net_params() {
	net_mtu=1500
	case $1 in
	loopback) net_rate_bps="" net_rtt_us="" net_mtu="" net_gso="" net_burst="";;
	1g) net_rate_bps=1000000000 net_rtt_us=100 net_gso=16384 net_burst=32k;;
	10g) net_rate_bps=10000000000 net_rtt_us=50 net_gso=65536 net_burst=128k;;
	*) return 1;;
	esac
}

# Configures TAP <dev> in namespace <netns> ("": this one): address
# <addr>/30, MTU, TSO batch size, and tbf on its egress.  tbf counts a TSO
# batch as its segments with their headers (no preamble, FCS, gap: 24
# bytes a frame on Ethernet; tc's stab could add them, but only once per
# batch), so its rate is the link's times (MTU + 14) / (MTU + 38): full
# frames take their Ethernet wire time.  The queue holds 10 ms.
rig_net_link() {
	local ns=() dev=$2 addr=$3
	[ -z "$1" ] || ns=(-n "$1")
	ip "${ns[@]}" link set dev "$dev" mtu "$net_mtu" gso_max_size "$net_gso" up
	ip "${ns[@]}" addr add "$addr/30" dev "$dev"
	tc "${ns[@]}" qdisc replace dev "$dev" root tbf \
		rate "$((net_rate_bps * (net_mtu + 14) / (net_mtu + 38)))bit" \
		burst "$net_burst" limit $((net_rate_bps / 800))
}
