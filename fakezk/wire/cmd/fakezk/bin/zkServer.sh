#!/bin/sh
# zkServer.sh for fakezk: starts the fakezk command (an in-memory
# ZooKeeper 3.8 on the wire) where a test suite starts ZooKeeper's own
# zkServer.sh. This directory can be ZOOKEEPER_BIN_PATH (go-zookeeper's
# test harness) or a ZooKeeper install's bin/.
#
#   zkServer.sh start-foreground [zoo.cfg]  exec fakezk in the foreground
#   zkServer.sh start [zoo.cfg]             in the background; pid in dataDir/zookeeper_server.pid
#   zkServer.sh stop [zoo.cfg]              SIGTERM to that pid, wait for the exit
#   zkServer.sh status [zoo.cfg]            is that pid running
#
# zoo.cfg defaults to $ZOOCFGDIR/zoo.cfg, else ../conf/zoo.cfg beside this
# directory. The -Dname=value words of SERVER_JVMFLAGS and JVMFLAGS are
# passed on as -prop name=value (other words are ignored). The binary is
# ./fakezk beside this script; if it is missing it is built once with
# `go build` from the package above this directory (go must be on PATH;
# `make fakezk` builds it ahead).
set -e
BIN=$(cd "$(dirname "$0")" && pwd)
FAKEZK="$BIN/fakezk"

if [ ! -x "$FAKEZK" ]; then
	# Several servers may start at once: build to a file of our own and
	# rename it into place (rename is atomic).
	tmp="$BIN/fakezk.$$"
	(cd "$BIN/.." && go build -o "$tmp" .) || { echo "zkServer.sh: cannot build $FAKEZK" >&2; exit 1; }
	mv -f "$tmp" "$FAKEZK"
fi

cmd=$1
[ $# -gt 0 ] && shift
if [ $# -gt 0 ]; then
	ZOOCFG=$1
elif [ -n "$ZOOCFGDIR" ]; then
	ZOOCFG="$ZOOCFGDIR/zoo.cfg"
else
	ZOOCFG="$BIN/../conf/zoo.cfg"
fi

props=""
for w in $SERVER_JVMFLAGS $JVMFLAGS; do
	case "$w" in
	-D*=*) props="$props -prop ${w#-D}" ;;
	esac
done

datadir() {
	sed -n 's/^[[:space:]]*dataDir[[:space:]]*[=:][[:space:]]*//p' "$ZOOCFG" | tail -n 1 | sed 's/[[:space:]]*$//'
}

pidfile() {
	d=$(datadir)
	[ -n "$d" ] || { echo "zkServer.sh: no dataDir in $ZOOCFG" >&2; exit 1; }
	echo "$d/zookeeper_server.pid"
}

case "$cmd" in
start-foreground)
	# exec: a harness that kills this process (go-zookeeper's does, with
	# SIGKILL) kills the server.
	# shellcheck disable=SC2086
	exec "$FAKEZK" $props "$ZOOCFG"
	;;
start)
	pid=$(pidfile)
	if [ -f "$pid" ] && kill -0 "$(cat "$pid")" 2>/dev/null; then
		echo "already running as process $(cat "$pid")."
		exit 1
	fi
	log="${ZOO_LOG_DIR:-$(dirname "$pid")}/zookeeper-fakezk.out"
	printf 'Starting zookeeper ... '
	# As ZooKeeper's script does: the data and log directories are made.
	if ! mkdir -p "$(dirname "$pid")" "$(dirname "$log")"; then
		echo FAILED TO START
		exit 1
	fi
	# shellcheck disable=SC2086
	nohup "$FAKEZK" $props "$ZOOCFG" >"$log" 2>&1 </dev/null &
	echo $! >"$pid"
	i=0
	while [ $i -lt 100 ]; do
		if grep -q "binding to port" "$log" 2>/dev/null; then
			echo STARTED
			exit 0
		fi
		kill -0 "$(cat "$pid")" 2>/dev/null || break
		sleep 0.1
		i=$((i + 1))
	done
	echo FAILED TO START
	cat "$log" >&2
	rm -f "$pid"
	exit 1
	;;
stop)
	pid=$(pidfile)
	printf 'Stopping zookeeper ... '
	if [ ! -f "$pid" ]; then
		echo "no zookeeper to stop (could not find file $pid)"
		exit 0
	fi
	p=$(cat "$pid")
	kill -TERM "$p" 2>/dev/null || true
	i=0
	while kill -0 "$p" 2>/dev/null; do
		# Exited but not yet reaped (a zombie) counts as stopped.
		case "$(cat "/proc/$p/stat" 2>/dev/null)" in *") Z "*) break ;; esac
		if [ $i -ge 600 ]; then
			echo "zkServer.sh: process $p still running 30s after SIGTERM" >&2
			exit 1
		fi
		sleep 0.05
		i=$((i + 1))
	done
	rm -f "$pid"
	echo STOPPED
	;;
status)
	pid=$(pidfile)
	if [ -f "$pid" ] && kill -0 "$(cat "$pid")" 2>/dev/null; then
		echo "Mode: standalone"
		exit 0
	fi
	echo "Error contacting service. It is probably not running."
	exit 1
	;;
*)
	echo "Usage: $0 {start|start-foreground|stop|status} [zoo.cfg]" >&2
	exit 1
	;;
esac
