# usage: . "$(dirname "$0")/../lib/goblin.sh"   (bash)
# The shell suites' and bench scripts' one goblin-store starter and stats
# reader; the python ones' is t/lib/goblin.py, whose store_argv() spells the
# flags the same way:
#   goblin_bin              $GOBLIN_STORE, else $GOBLIN_TOP/$BUILD/goblin-store
#   goblin_free_port        prints a TCP port nobody listens on right now
#   goblin_argv PORT FLAG...
#                           sets ${goblin_argv[@]}: goblin-store --no-http
#                           --memcache-port PORT FLAG...
#   goblin_stats HOST PORT SUB...
#                           `stats SUB` for each SUB ("" for plain stats) on
#                           one connection: "name value" lines
#   goblin_work NAME        makes $goblin_work, /var/tmp/goblin-NAME.XXXXXX,
#                           removed at exit with the server stopped (by pid),
#                           and ${goblin_tiered[@]}: the flags of a small
#                           unlocked store with an SSD and an HDD pool in it
#                           (32M RAM, 16M objects)
#   goblin_start FLAG...    goblin_argv on a free port ($goblin_port), its
#                           output in $goblin_work/log; returns once it
#                           listens (5 s at most)
#   goblin_stop             SIGTERM by pid; returns its exit status

goblin_bin=${GOBLIN_STORE:-${GOBLIN_TOP:-.}/${BUILD:-build}/goblin-store}
goblin_work=
goblin_pid=
goblin_port=

goblin_free_port() {
	/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

goblin_argv() {
	local port=$1

	shift
	goblin_argv=("$goblin_bin" --no-http --memcache-port "$port" "$@")
}

goblin_stats() {
	local host=$1 port=$2 line sub ends=0

	shift 2
	exec 3<>"/dev/tcp/$host/$port" || return 1
	for sub in "$@"; do
		printf 'stats%s\r\n' "${sub:+ $sub}" >&3
	done
	while IFS= read -r -t 10 line <&3; do
		line=${line%$'\r'}
		case $line in
		END) ends=$((ends + 1)); [ $ends = $# ] && break;;
		STAT\ *) echo "${line#STAT }";;
		esac
	done
	exec 3<&- 3>&-
}

goblin_cleanup() {
	[ -n "$goblin_pid" ] && kill "$goblin_pid" 2>/dev/null &&
		wait "$goblin_pid" 2>/dev/null
	[ -n "$goblin_work" ] && rm -rf "$goblin_work"
}

goblin_work() {
	goblin_work=$(mktemp -d "/var/tmp/goblin-$1.XXXXXX")
	trap goblin_cleanup EXIT
	trap 'exit 1' INT TERM
	goblin_tiered=(--memory 32M --sub-memory 8M --no-mlock
		--ssd-dir "$goblin_work/ssd" --hdd-dir "$goblin_work/hdd"
		--ssd-size 64M --hdd-size 128M --max-object 16M)
}

goblin_start() {
	goblin_port=$(goblin_free_port)
	goblin_argv "$goblin_port" "$@"
	"${goblin_argv[@]}" >"$goblin_work/log" 2>&1 &
	goblin_pid=$!
	for _ in $(seq 100); do
		(exec 3<>"/dev/tcp/127.0.0.1/$goblin_port") 2>/dev/null && break
		sleep 0.05
	done
}

goblin_stop() {
	local rc

	kill "$goblin_pid"
	wait "$goblin_pid"
	rc=$?
	goblin_pid=
	return $rc
}
