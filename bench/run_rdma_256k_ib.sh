#!/usr/bin/env bash
# usage: bench/run_rdma_256k_ib.sh [--quick] [--transport verbs|tcp] [options]
#
# The seed's section 5 method ("Native RDMA over InfiniBand: 256 KiB
# latency and throughput"): goblin-store serving a fixed-seed uniform 4 GiB
# working set of 256 KiB objects (16,384 keys, every object a resident RAM
# head) over its RDMA endpoint, read by goblin-bench --proto rdma:
#
#   populate   16,384 x 256 KiB over memcache (goblin-bench --populate-only)
#   serial     five repetitions of 200,000 GETs on one queue pair, one at a
#              time: header (VALUE line), bulk-ready (last BULK_READY: the
#              whole object RDMA-written into the window) and completion
#              (END) times, merged into one 1,000,000-sample distribution
#   sweep      closed loop on 1 .. 12 queue pairs (10 s each): Gbit/s
#   two-QP     three 30 s closed-loop runs on two queue pairs: mean, stdev
#
# then bench/analyze_rdma_256k.py writes <out>/<date>-rdma-256k-<transport>
# .json, .md and .png.  Every GET's bytes are verified; a mismatch, a miss
# or an error fails the run (exit 1).
#
# Transport: verbs when the host has an RDMA device (/sys/class/infiniband
# not empty, as ibv_get_device_list sees it), else -- said loudly -- the
# emulated transport (libfabric's tcp provider over loopback), and every
# output line and file is labelled EMULATED.  --transport verbs on a host
# without a device exits 3.
#
# Options:
#   --quick              tiny: 256 keys, 2,000 requests x 5, sweep 1 2 4 at
#                        1 s, three 3 s two-QP runs (the test's)
#   --transport T        verbs or tcp (see above)
#   --addr IP            RDMA address goblin-store listens on (127.0.0.1;
#                        with verbs: an IP of the RDMA device's netdev)
#   --server HOST        use the goblin-store already serving on HOST
#                        (--port, --rdma-port) instead of starting one here
#   --port P, --rdma-port P   memcache and RDMA ports (free ones)
#   --keys N --requests N --reps N --sweep "1 2 .." --sweep-duration T
#   --runs N --run-duration T --window SIZE --seed N
#                        scale the method (the defaults are the seed's)
#   --link-gbit G        nominal link rate for the sweep's % column (40)
#   --out DIR            where results go (bench/results)
#   --date YYYY-MM-DD    in the file names (today, UTC)
#
# Needs build/goblin-store and build/goblin-bench.  Its state dir is
# /var/tmp/goblin-rdma-bench.XXXXXX, removed on exit with the daemon.
set -u
set -o pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
. "$TOP/t/lib/goblin.sh"	# goblin_argv, goblin_stats, goblin_free_port
STORE=${GOBLIN_STORE:-$TOP/build/goblin-store}
goblin_bin=$STORE
BENCH=${GOBLIN_BENCH:-$TOP/build/goblin-bench}
SIZE=262144

quick=0 transport="" addr=127.0.0.1 server="" port="" rport=""
keys=16384 requests=200000 reps=5 sweep="1 2 3 4 5 6 7 8 9 10 11 12"
sweep_dur=10s runs=3 run_dur=30s window=8M seed=1 link=40
out=$TOP/bench/results date=$(date -u +%F)
set_keys=0 set_req=0 set_sweep=0 set_sdur=0 set_rdur=0

die() { echo "run_rdma_256k_ib: $*" >&2; exit 2; }

while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=1; shift; continue;;
	--help|-h) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0;;
	esac
	[ $# -ge 2 ] || die "$1 needs a value"
	case $1 in
	--transport) transport=$2;;
	--addr) addr=$2;;
	--server) server=$2;;
	--port) port=$2;;
	--rdma-port) rport=$2;;
	--keys) keys=$2 set_keys=1;;
	--requests) requests=$2 set_req=1;;
	--reps) reps=$2;;
	--sweep) sweep=$2 set_sweep=1;;
	--sweep-duration) sweep_dur=$2 set_sdur=1;;
	--runs) runs=$2;;
	--run-duration) run_dur=$2 set_rdur=1;;
	--window) window=$2;;
	--seed) seed=$2;;
	--link-gbit) link=$2;;
	--out) out=$2;;
	--date) date=$2;;
	*) die "unknown option $1 (try --help)";;
	esac
	shift 2
done
if [ $quick = 1 ]; then
	[ $set_keys = 1 ] || keys=256
	[ $set_req = 1 ] || requests=2000
	[ $set_sweep = 1 ] || sweep="1 2 4"
	[ $set_sdur = 1 ] || sweep_dur=1s
	[ $set_rdur = 1 ] || run_dur=3s
fi
for v in "$keys" "$requests" "$reps" "$runs"; do
	[[ $v =~ ^[0-9]+$ ]] && [ "$v" -ge 1 ] ||
		die "'$v' is not a whole number >= 1"
done
[[ $seed =~ ^[0-9]+$ ]] || die "--seed: '$seed' is not a whole number"
for q in $sweep; do
	[[ $q =~ ^[0-9]+$ ]] && [ "$q" -ge 1 ] && [ "$q" -le 256 ] ||
		die "--sweep: '$q' is not a queue pair count in [1, 256]"
done
[[ $date =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}$ ]] || die "--date: '$date' is not YYYY-MM-DD"
[ -x "$BENCH" ] || die "$BENCH is not built (make build/goblin-bench)"
[ -n "$server" ] || [ -x "$STORE" ] ||
	die "$STORE is not built (make build/goblin-store)"

# The host's RDMA devices, as ibv_get_device_list() finds them (sysfs).
devices=$(ls /sys/class/infiniband 2>/dev/null | tr '\n' ' ')
if [ -z "$transport" ]; then
	if [ -n "$devices" ]; then transport=verbs; else transport=tcp; fi
fi
case $transport in
verbs)
	if [ -z "$devices" ]; then
		echo "run_rdma_256k_ib: --transport verbs: this host has no RDMA" \
		     "device (/sys/class/infiniband is empty: ibv_get_device_list" \
		     "returns none); --transport tcp runs the method emulated" >&2
		exit 3
	fi
	label="verbs: $devices"; label=${label% };;
tcp)	label="EMULATED tcp${devices:+ (devices $devices unused)}"
	[ -n "$devices" ] || label="$label, no RDMA hardware";;
*)	die "--transport: '$transport' is not verbs or tcp";;
esac

state=""
daemon=""
cleanup() {
	if [ -n "$daemon" ] && kill -0 "$daemon" 2>/dev/null; then
		kill "$daemon"
		for _ in $(seq 100); do
			kill -0 "$daemon" 2>/dev/null || break
			sleep 0.1
		done
		kill -9 "$daemon" 2>/dev/null
		wait "$daemon" 2>/dev/null
	fi
	[ -n "$state" ] && rm -rf "$state"
}

# Memcache "stats" and "stats goblin" of the daemon, as NAME VALUE lines.
stats() {
	goblin_stats "$mhost" "$port" "" goblin
}

wait_port() {
	for _ in $(seq 600); do
		if [ -n "$daemon" ] && ! kill -0 "$daemon" 2>/dev/null; then
			echo "goblin-store exited before it was ready:"
			tail -n 20 "$state/goblin-store.log"
			return 1
		fi
		(exec 3<>"/dev/tcp/$mhost/$port") 2>/dev/null && return 0
		sleep 0.1
	done
	echo "goblin-store is not listening on $mhost:$port after 60 s"
	return 1
}

# One goblin-bench run into $state/runs/<name>.json; its text report goes
# to <name>.txt; says what it measured in one line.
bench() {
	local name=$1; shift
	local rc=0
	"$BENCH" --host "$mhost" --port "$port" --keys "$keys" --size 256K \
		--dist fixed --seed "$seed" --quiet \
		--json "$state/runs/$name.json" "$@" \
		>"$state/runs/$name.txt" 2>"$state/runs/$name.err" || rc=$?
	if [ $rc != 0 ] || [ ! -s "$state/runs/$name.json" ]; then
		echo "$name: goblin-bench failed (exit $rc):"
		tail -n 30 "$state/runs/$name.txt" "$state/runs/$name.err"
		return 1
	fi
	python3 - "$state/runs/$name.json" "$name" <<-'EOF'
	import json, sys
	d = json.load(open(sys.argv[1]))
	r = d["run"] or d["populate"]
	lat = r["latency_us"]
	if d["run"]:
	    print("%-10s %7d gets in %6.2f s: %7.3f Gbit/s, p50 header %.1f us, "
	          "bulk-ready %.1f us, complete %.1f us; verify errors %d, "
	          "misses %d" % (sys.argv[2], r["gets"], r["seconds"],
	                         r["payload_gbit_per_s"], lat["header"]["p50"],
	                         lat["bulk_ready"]["p50"], lat["complete"]["p50"],
	                         r["verify_errors"], r["misses"]))
	else:
	    print("%-10s %7d keys stored in %.2f s (%.0f MB/s), %d errors"
	          % (sys.argv[2], r["sets"], r["seconds"],
	             r["payload_mb_per_s"], r["errors"]))
	EOF
}

main() {
	local started rc=0 mem

	trap cleanup EXIT
	trap 'exit 130' INT TERM
	if [ "$transport" = tcp ]; then
		echo "!!! NO RDMA HARDWARE IN USE: ${devices:+devices $devices present but }the transport is" \
		     "libfabric's tcp provider (EMULATED RDMA over TCP loopback)."
		[ -z "$devices" ] &&
			echo "!!! this host has no RDMA device (/sys/class/infiniband is empty:" \
			     "ibv_get_device_list returns none)."
		echo "!!! The method is the seed's; the numbers are NOT InfiniBand numbers."
	fi
	started=$(date +%s)
	state=$(mktemp -d /var/tmp/goblin-rdma-bench.XXXXXX) || return 1
	mkdir -p "$state/runs" "$state/ssd"
	echo "state dir $state (removed at the end)"
	mhost=${server:-127.0.0.1}
	rhost=${server:-$addr}
	[ -n "$port" ] || port=$(goblin_free_port)
	[ -n "$rport" ] || rport=$(goblin_free_port)
	# every object a RAM head: keys x 256 KiB and 1/16 more, in 2 MiB blocks
	mem=$(( (keys * SIZE * 17 / 16 + (2 << 20) - 1) / (2 << 20) * 2 ))
	[ $mem -ge 64 ] || mem=64
	if [ -z "$server" ]; then
		echo "goblin-store: --memory ${mem}M --ram-head 256K, memcache" \
		     "127.0.0.1:$port, --rdma $addr:$rport --rdma-transport $transport"
		goblin_argv "$port" --memory "${mem}M" --ram-head 256K \
			--max-object 256K --ssd-dir "$state/ssd" --ssd-size 256M \
			--fresh --listen 127.0.0.1 \
			--rdma "$addr:$rport" --rdma-transport "$transport"
		"${goblin_argv[@]}" >"$state/goblin-store.log" 2>&1 &
		daemon=$!
	else
		echo "goblin-store at $server: memcache $port, RDMA $rport" \
		     "over $transport (not started here)"
	fi
	wait_port || return 1
	local rdma=(--proto rdma --no-store --rdma "$rhost:$rport"
		    --rdma-transport "$transport" --window "$window")

	bench populate --populate-only --conns 4 || return 1
	stats >"$state/runs/stats-populated.txt" || return 1
	for r in $(seq "$reps"); do
		bench "serial-$r" "${rdma[@]}" --qps 1 --requests "$requests" ||
			return 1
	done
	for q in $sweep; do
		bench "sweep-$q" "${rdma[@]}" --qps "$q" --duration "$sweep_dur" ||
			return 1
	done
	for r in $(seq "$runs"); do
		bench "twoqp-$r" "${rdma[@]}" --qps 2 --duration "$run_dur" ||
			return 1
	done
	stats >"$state/runs/stats-done.txt" || return 1
	mkdir -p "$out" || return 1
	python3 "$TOP/bench/analyze_rdma_256k.py" --runs "$state/runs" \
		--out "$out/$date-rdma-256k-$transport" --transport "$transport" \
		--label "$label" --devices "$devices" --quick "$quick" \
		--keys "$keys" --requests "$requests" --reps "$reps" \
		--sweep "$sweep" --sweep-duration "$sweep_dur" --runs-n "$runs" \
		--run-duration "$run_dur" --window "$window" --seed "$seed" \
		--link-gbit "$link" --memory "${mem}M" --server "${server:-local}" \
		--wall-s $(( $(date +%s) - started )) || rc=$?
	echo "wall time $(( $(date +%s) - started )) s"
	return $rc
}

main 2>&1 | sed -u "s/^/[$label] /"
exit "${PIPESTATUS[0]}"
