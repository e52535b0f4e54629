#!/bin/bash
# down.sh DIR: stop the kube-apiserver and etcd that `up.sh DIR` started, by
# their pid files in DIR. Only processes whose command line mentions DIR are
# signalled (guards against recycled pids). Data, certs and logs in DIR are
# kept (reuse DIR with up.sh, or rm -rf it); nothing outside DIR is touched.
set -euo pipefail

if [ $# -ne 1 ] || [ -z "$1" ]; then echo "usage: $0 DIR" >&2; exit 2; fi
[ -d "$1" ] || { echo "down: $1: no such directory" >&2; exit 1; }
DIR=$(cd "$1" && pwd)

log() { printf '[down %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# ours PID: the process is alive and was started with DIR in its arguments.
ours() {
	[ -r "/proc/$1/cmdline" ] && tr '\0' '\n' <"/proc/$1/cmdline" | grep -F -- "$DIR/" >/dev/null
}

stop() {
	local name=$1 pidf=$DIR/$1.pid pid
	[ -f "$pidf" ] || return 0
	pid=$(cat "$pidf")
	if [ -z "$pid" ] || ! ours "$pid"; then
		log "$name: not running"
		rm -f "$pidf"
		return 0
	fi
	log "stopping $name (pid $pid)"
	kill -TERM "$pid" 2>/dev/null || true
	for _ in $(seq 1 100); do
		ours "$pid" || break
		sleep 0.1
	done
	if ours "$pid"; then
		log "$name did not exit after 10 s; sending KILL"
		kill -KILL "$pid" 2>/dev/null || true
		sleep 0.2
	fi
	rm -f "$pidf"
}

# API server first, so it does not log etcd connection errors while etcd stops.
stop kube-apiserver
stop etcd
