#!/bin/bash
# up.sh DIR: start a local control plane (etcd + kube-apiserver v1.20, no
# kubelet, no controller-manager, no scheduler) on 127.0.0.1 with free ports.
#
# Everything lives in DIR (created if missing):
#   kubeconfig       admin kubeconfig (token auth, CA = apiserver's self-signed cert)
#   env              shell-sourceable: KUBECONFIG, APISERVER_PORT, ETCD_PORT, ... , pids
#   *.pid, *.log     etcd / kube-apiserver pid files and logs
#   etcd/ certs/ sa.key sa.pub tokens.csv
# Stop with down.sh DIR.
#
# Binaries: KUBE_APISERVER, ETCD, KUBECTL, else ${GAVEL_CACHE:-/var/cache/gavel}/bin/*
# (build-apiserver.sh is run first if they are missing: ~6 minutes, once).
# GAVEL_SA_ADMISSION=1 keeps the ServiceAccount admission plugin enabled
# (then pods only admit in namespaces that have a `default` ServiceAccount;
# up.sh creates one in `default`). EXTRA_APISERVER_FLAGS is appended as is
# (word-split).
set -euo pipefail

usage() { echo "usage: $0 DIR" >&2; exit 2; }
[ $# -eq 1 ] || usage
[ -n "$1" ] || usage

HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${GAVEL_CACHE:-/var/cache/gavel}
mkdir -p "$1"
DIR=$(cd "$1" && pwd)

log() { printf '[up %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }
pidof_file() { if [ -f "$1" ]; then cat "$1"; fi; }

for f in "$DIR/kube-apiserver.pid" "$DIR/etcd.pid"; do
	if alive "$(pidof_file "$f")"; then
		die "already running ($f); run $HERE/down.sh $DIR first"
	fi
done

# --- binaries ---------------------------------------------------------------
# build-apiserver.sh returns at once when the binaries exist (it honours the
# KUBE_APISERVER / ETCD / KUBECTL overrides); otherwise it builds them.
"$HERE/build-apiserver.sh" >&2 || die "build-apiserver.sh failed"
KUBE_APISERVER=${KUBE_APISERVER:-$CACHE/bin/kube-apiserver}
ETCD=${ETCD:-$CACHE/bin/etcd}
KUBECTL=${KUBECTL:-$CACHE/bin/kubectl}
for b in "$KUBE_APISERVER" "$ETCD" "$KUBECTL"; do
	[ -x "$b" ] || die "$b missing (see build-apiserver.sh)"
done
command -v openssl >/dev/null || die "openssl is needed"

# --- cleanup on failure -----------------------------------------------------
STARTED=()
OK=
cleanup() {
	if [ -z "$OK" ]; then
		local p
		for p in "${STARTED[@]}"; do
			kill "$p" 2>/dev/null || true
		done
		[ ${#STARTED[@]} -eq 0 ] || log "startup failed; stopped ${STARTED[*]} (logs in $DIR)"
		rm -f "$DIR/etcd.pid" "$DIR/kube-apiserver.pid"
	fi
}
trap cleanup EXIT

# --- free ports -------------------------------------------------------------
# Random ports in 20000-31999 (below the usual ephemeral range) that nothing
# listens on; a race with another process is handled by retrying the start.
# free_port VAR: sets VAR (not run in a subshell, so PICKED is kept).
PICKED=" "
free_port() {
	local used p h
	used=" "
	while read -r h; do
		used+="$((16#$h)) "
	done < <(awk 'FNR > 1 && $4 == "0A" { n = split($2, a, ":"); print a[n] }' \
		/proc/net/tcp /proc/net/tcp6 2>/dev/null)
	while :; do
		p=$((20000 + RANDOM % 12000))
		case "$used$PICKED" in
		*" $p "*) continue ;;
		esac
		PICKED+="$p "
		printf -v "$1" '%s' "$p"
		return 0
	done
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# start_bg NAME LOG CMD...: start CMD in the background, record its pid.
start_bg() {
	local name=$1 logf=$2
	shift 2
	"$@" </dev/null >>"$logf" 2>&1 &
	LAST_PID=$!
	STARTED+=("$LAST_PID")
	echo "$LAST_PID" >"$DIR/$name.pid"
}

# --- credentials ------------------------------------------------------------
mkdir -p "$DIR/certs" "$DIR/etcd"
chmod 700 "$DIR/etcd"
if [ ! -s "$DIR/sa.key" ]; then
	log "generating service-account key pair"
	openssl genrsa -out "$DIR/sa.key" 2048 2>/dev/null
	openssl rsa -in "$DIR/sa.key" -pubout -out "$DIR/sa.pub" 2>/dev/null
fi
if [ ! -s "$DIR/tokens.csv" ]; then
	TOKEN=$(openssl rand -hex 32)
	printf '%s,admin,admin,"system:masters"\n' "$TOKEN" >"$DIR/tokens.csv"
	chmod 600 "$DIR/tokens.csv"
fi
TOKEN=$(cut -d, -f1 "$DIR/tokens.csv" | head -n1)

# --- etcd -------------------------------------------------------------------
ETCD_PORT=
for attempt in 1 2 3; do
	free_port ETCD_PORT
	free_port ETCD_PEER_PORT
	log "starting etcd on 127.0.0.1:$ETCD_PORT (peer $ETCD_PEER_PORT), attempt $attempt"
	start_bg etcd "$DIR/etcd.log" "$ETCD" \
		--name=gavel \
		--data-dir="$DIR/etcd" \
		--listen-client-urls="http://127.0.0.1:$ETCD_PORT" \
		--advertise-client-urls="http://127.0.0.1:$ETCD_PORT" \
		--listen-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
		--initial-advertise-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
		--initial-cluster="gavel=http://127.0.0.1:$ETCD_PEER_PORT"
	ETCD_PID=$LAST_PID
	for _ in $(seq 1 100); do
		port_open "$ETCD_PORT" && break
		alive "$ETCD_PID" || break
		sleep 0.1
	done
	if alive "$ETCD_PID" && port_open "$ETCD_PORT"; then
		break
	fi
	alive "$ETCD_PID" && kill "$ETCD_PID"
	tail -n 5 "$DIR/etcd.log" >&2
	ETCD_PORT=
done
[ -n "$ETCD_PORT" ] || die "etcd did not start (see $DIR/etcd.log)"

# --- kube-apiserver ---------------------------------------------------------
ADMISSION_FLAGS=(--disable-admission-plugins=ServiceAccount)
[ "${GAVEL_SA_ADMISSION:-0}" = 1 ] && ADMISSION_FLAGS=()
# shellcheck disable=SC2206 # word splitting wanted
EXTRA=(${EXTRA_APISERVER_FLAGS:-})

write_kubeconfig() {
	cat >"$DIR/kubeconfig" <<EOF
apiVersion: v1
kind: Config
current-context: gavel-local
clusters:
- name: gavel-local
  cluster:
    server: https://127.0.0.1:$APISERVER_PORT
    certificate-authority: $DIR/certs/apiserver.crt
contexts:
- name: gavel-local
  context:
    cluster: gavel-local
    user: gavel-admin
    namespace: default
users:
- name: gavel-admin
  user:
    token: $TOKEN
EOF
	chmod 600 "$DIR/kubeconfig"
}

kc() { "$KUBECTL" --kubeconfig "$DIR/kubeconfig" --request-timeout=10s "$@"; }

APISERVER_PORT=
for attempt in 1 2 3; do
	free_port APISERVER_PORT
	log "starting kube-apiserver on https://127.0.0.1:$APISERVER_PORT, attempt $attempt"
	start_bg kube-apiserver "$DIR/kube-apiserver.log" "$KUBE_APISERVER" \
		--etcd-servers="http://127.0.0.1:$ETCD_PORT" \
		--secure-port="$APISERVER_PORT" \
		--bind-address=127.0.0.1 \
		--advertise-address=127.0.0.1 \
		--cert-dir="$DIR/certs" \
		--token-auth-file="$DIR/tokens.csv" \
		--authorization-mode=RBAC \
		--service-account-issuer=https://kubernetes.default.svc \
		--service-account-key-file="$DIR/sa.pub" \
		--service-account-signing-key-file="$DIR/sa.key" \
		--service-cluster-ip-range=10.0.0.0/24 \
		--allow-privileged=true \
		--endpoint-reconciler-type=none \
		"${ADMISSION_FLAGS[@]}" "${EXTRA[@]}"
	APISERVER_PID=$LAST_PID
	write_kubeconfig
	ready=
	for _ in $(seq 1 240); do
		alive "$APISERVER_PID" || break
		if [ -s "$DIR/certs/apiserver.crt" ] &&
			[ "$(kc get --raw=/readyz 2>/dev/null)" = ok ]; then
			ready=1
			break
		fi
		sleep 0.5
	done
	[ -n "$ready" ] && break
	if alive "$APISERVER_PID"; then
		tail -n 20 "$DIR/kube-apiserver.log" >&2
		die "kube-apiserver not ready after 120 s (see $DIR/kube-apiserver.log)"
	fi
	tail -n 5 "$DIR/kube-apiserver.log" >&2
	grep -q 'address already in use' "$DIR/kube-apiserver.log" ||
		die "kube-apiserver exited (see $DIR/kube-apiserver.log)"
	APISERVER_PORT=
done
[ -n "$APISERVER_PORT" ] || die "kube-apiserver did not start (see $DIR/kube-apiserver.log)"
log "kube-apiserver ready"

# No controller-manager runs, so nothing creates ServiceAccounts or their
# token Secrets. With the ServiceAccount admission plugin enabled, a pod is
# rejected without a `default` SA and also when the SA has no token Secret
# unless automounting is off; hence automountServiceAccountToken: false.
if ! kc -n default get serviceaccount default >/dev/null 2>&1; then
	kc apply -f - >/dev/null <<EOF
apiVersion: v1
kind: ServiceAccount
metadata:
  name: default
  namespace: default
automountServiceAccountToken: false
EOF
fi

{
	printf 'KUBECONFIG=%q\n' "$DIR/kubeconfig"
	printf 'APISERVER_PORT=%q\n' "$APISERVER_PORT"
	printf 'APISERVER_URL=%q\n' "https://127.0.0.1:$APISERVER_PORT"
	printf 'APISERVER_CA=%q\n' "$DIR/certs/apiserver.crt"
	printf 'APISERVER_PID=%q\n' "$APISERVER_PID"
	printf 'ETCD_PORT=%q\n' "$ETCD_PORT"
	printf 'ETCD_PEER_PORT=%q\n' "$ETCD_PEER_PORT"
	printf 'ETCD_PID=%q\n' "$ETCD_PID"
	printf 'KUBECTL=%q\n' "$KUBECTL"
	printf 'export KUBECONFIG APISERVER_PORT APISERVER_URL APISERVER_CA APISERVER_PID ETCD_PORT ETCD_PEER_PORT ETCD_PID KUBECTL\n'
} >"$DIR/env"

OK=1
log "up: source $DIR/env  (KUBECONFIG=$DIR/kubeconfig, server https://127.0.0.1:$APISERVER_PORT)"
