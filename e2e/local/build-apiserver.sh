#!/bin/bash
# Build kube-apiserver v1.20.2 from Debian's `kubernetes` source package, once
# per machine, and provide etcd and a matching kubectl next to it.
#
# Everything is cached outside the work tree, in ${GAVEL_CACHE:-/var/cache/gavel}:
#   bin/kube-apiserver   built from source (about 7 min, 1.3 GB RAM on 2 cores)
#   bin/kube-apiserver.version
#                        build id ($BUILD_ID below); a cached binary with another
#                        (or no) id is rebuilt
#   bin/etcd             Debian etcd-server, unpacked (or a link to an installed etcd)
#   bin/kubectl          Debian kubernetes-client 1.20, unpacked
#   build.log            output of the last build
#
# Overrides: KUBE_APISERVER=/path, ETCD=/path, KUBECTL=/path use those binaries
# instead (nothing is built/installed for them).
# GAVEL_KEEP_SRC=1 keeps the unpacked source tree and Go build cache after a
# successful build (default: removed, they take about 2 GB).
#
# The vendored github.com/modern-go/reflect2 v1.0.1 is patched for Go >= 1.18
# (reflect2-go1.18.patch, next to this script) before building: without it the
# API server dies with "fatal error: fault" in reflect2.UnsafeIterate on any
# custom resource create.
#
# Idempotent: exits at once when the binaries are present and run. Safe to run
# concurrently: a lock makes the second run wait for the first.
# Needs root (apt) only the first time.
set -euo pipefail

CACHE=${GAVEL_CACHE:-/var/cache/gavel}
BIN=$CACHE/bin
WANT_VERSION=v1.20.2
# Build id stored in bin/kube-apiserver.version. Change it whenever the build
# changes (e.g. a new patch): cached binaries with another id get rebuilt.
BUILD_ID=$WANT_VERSION+reflect2-fix
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REFLECT2_PATCH=$HERE/reflect2-go1.18.patch
INSTALL_DEPS=$HERE/../../scripts/install-deps.sh

log() { printf '[build-apiserver %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# runs <binary> <version-args...>: true when the binary executes.
runs() {
	local b=$1
	shift
	[ -x "$b" ] && "$b" "$@" >/dev/null 2>&1
}

apiserver_ok() {
	if [ -n "${KUBE_APISERVER:-}" ]; then
		runs "$KUBE_APISERVER" --version || die "KUBE_APISERVER=$KUBE_APISERVER does not run --version"
		return 0
	fi
	runs "$BIN/kube-apiserver" --version && [ "$(cached_build_id)" = "$BUILD_ID" ]
}
cached_build_id() {
	if [ -f "$BIN/kube-apiserver.version" ]; then
		cat "$BIN/kube-apiserver.version"
	fi
}
etcd_ok() {
	if [ -n "${ETCD:-}" ]; then
		runs "$ETCD" --version || die "ETCD=$ETCD does not run --version"
		return 0
	fi
	runs "$BIN/etcd" --version
}
kubectl_ok() {
	if [ -n "${KUBECTL:-}" ]; then
		runs "$KUBECTL" version --client || die "KUBECTL=$KUBECTL does not run"
		return 0
	fi
	runs "$BIN/kubectl" version --client
}
all_ok() { apiserver_ok && etcd_ok && kubectl_ok; }

report() {
	if [ -n "${KUBE_APISERVER:-}" ]; then
		log "kube-apiserver: $KUBE_APISERVER ($("$KUBE_APISERVER" --version 2>&1))"
	else
		log "kube-apiserver: $BIN/kube-apiserver ($("$BIN/kube-apiserver" --version 2>&1), build $(cached_build_id))"
	fi
	log "etcd:           ${ETCD:-$BIN/etcd} ($("${ETCD:-$BIN/etcd}" --version 2>&1 | head -n1))"
	log "kubectl:        ${KUBECTL:-$BIN/kubectl} ($("${KUBECTL:-$BIN/kubectl}" version --client --short 2>/dev/null || true))"
}

if all_ok; then
	report
	exit 0
fi

mkdir -p "$BIN" || die "cannot create $BIN (set GAVEL_CACHE to a writable dir)"

# --- lock: only one run builds; others wait and then find the result --------
LOCK=$CACHE/.build.lock
exec 9>"$LOCK"
if ! flock -n 9; then
	log "another build holds $LOCK; waiting for it to finish"
	flock 9
fi
if all_ok; then
	log "built by a concurrent run"
	report
	exit 0
fi

# --- apt helpers ------------------------------------------------------------
APT_UPDATED=
need_root() {
	[ "$(id -u)" -eq 0 ] || die "need root for apt ($*); run as root once, or set KUBE_APISERVER/ETCD/KUBECTL"
}
apt_update_once() {
	if [ -z "$APT_UPDATED" ]; then
		log "apt-get update"
		apt-get update -q >/dev/null
		APT_UPDATED=1
	fi
}

# Unpack a Debian binary package into $CACHE/pkg/<name> (no maintainer
# scripts run: no service gets started, no conflict with other kubectl
# packages) and link one of its binaries into $BIN.
unpack_deb() {
	local pkg=$1 path=$2 name=$3 dir=$CACHE/pkg/$1 tmp
	need_root "download $pkg"
	apt_update_once
	tmp=$(mktemp -d "$CACHE/pkg.XXXXXX")
	log "unpacking Debian package $pkg into $dir"
	(cd "$tmp" && apt-get download -q "$pkg" >/dev/null 2>&1) || { rm -rf "$tmp"; die "apt-get download $pkg failed"; }
	mkdir -p "$tmp/root"
	dpkg-deb -x "$tmp"/"$pkg"_*.deb "$tmp/root"
	rm -rf "$dir"
	mkdir -p "$CACHE/pkg"
	mv "$tmp/root" "$dir"
	rm -rf "$tmp"
	ln -sfn "$dir$path" "$BIN/$name"
}

# (grep without -q: an early exit would make apt-cache fail under pipefail)
has_src() { apt-cache showsrc kubernetes 2>/dev/null | grep '^Package: kubernetes$' >/dev/null; }

# deb-src entries for the release's main suite, derived from the existing
# deb entries (deb822 *.sources and one-line *.list formats), in a file of
# our own; existing apt configuration is not modified.
enable_deb_src() {
	if has_src; then
		return 0
	fi
	need_root "enable deb-src"
	local codename srcfile822=/etc/apt/sources.list.d/gavel-deb-src.sources
	local srcfilelist=/etc/apt/sources.list.d/gavel-deb-src.list
	# shellcheck disable=SC1091
	codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
	[ -n "$codename" ] || die "cannot find VERSION_CODENAME in /etc/os-release"
	if [ ! -e "$srcfile822" ] && [ ! -e "$srcfilelist" ]; then
		local f out822='' outlist=''
		for f in /etc/apt/sources.list.d/*.sources; do
			[ -f "$f" ] || continue
			out822+=$(awk -v cn="$codename" '
				BEGIN { RS = ""; FS = "\n" }
				{
					types = ""; uris = ""; suites = ""; comps = ""; signed = ""; enabled = "yes"
					for (i = 1; i <= NF; i++) {
						line = $i
						if (line ~ /^#/ || line ~ /^[ \t]/) continue
						k = line; sub(/:.*/, "", k); v = line; sub(/^[^:]*:[ \t]*/, "", v)
						k = tolower(k)
						if (k == "types") types = v
						else if (k == "uris") uris = v
						else if (k == "suites") suites = v
						else if (k == "components") comps = v
						else if (k == "signed-by" && v != "") signed = v
						else if (k == "enabled") enabled = tolower(v)
					}
					if (enabled == "no" || (" " types " ") !~ / deb / || comps == "") next
					if ((" " suites " ") !~ (" " cn " ")) next
					printf "Types: deb-src\nURIs: %s\nSuites: %s\nComponents: %s\n", uris, cn, comps
					if (signed != "") printf "Signed-By: %s\n", signed
					printf "\n"
				}' "$f")$'\n\n'
		done
		for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
			[ -f "$f" ] || continue
			outlist+=$(awk -v cn="$codename" '
				$1 == "deb" {
					n = 2
					if ($2 ~ /^\[/) { while (n <= NF && $n !~ /\]$/) n++; n++ }
					if ($(n + 1) == cn) { sub(/^deb/, "deb-src"); print }
				}' "$f")
			outlist+=$'\n'
		done
		if [ -n "${out822//$'\n'/}" ]; then
			log "enabling deb-src in $srcfile822"
			printf '# Added by gavel e2e/local/build-apiserver.sh for apt-get source kubernetes.\n%s\n' "$out822" >"$srcfile822"
		elif [ -n "${outlist//$'\n'/}" ]; then
			log "enabling deb-src in $srcfilelist"
			printf '# Added by gavel e2e/local/build-apiserver.sh for apt-get source kubernetes.\n%s\n' "$outlist" >"$srcfilelist"
		else
			log "no Debian deb entry for $codename found; using deb.debian.org"
			printf 'deb-src http://deb.debian.org/debian %s main\n' "$codename" >"$srcfilelist"
		fi
	fi
	APT_UPDATED=
	apt_update_once
	has_src ||
		die "apt-get source kubernetes unavailable even with deb-src enabled"
}

# patch_reflect2 TREE: apply reflect2-go1.18.patch to TREE's vendored
# github.com/modern-go/reflect2 (v1.0.1 -> v1.0.2's Go >= 1.18 mapiterinit).
# Idempotent (an already patched tree is left alone); dies when the vendored
# code is neither the expected original nor patched. Then checks with
# `go list` that this vendored copy is the one kube-apiserver compiles.
patch_reflect2() {
	local tree=$1 dir=$1/vendor/github.com/modern-go/reflect2 out
	[ -f "$dir/unsafe_link.go" ] || die "no vendored reflect2 in $dir"
	if patch -p1 -F0 -R -f -s --dry-run -d "$tree" <"$REFLECT2_PATCH" >/dev/null 2>&1; then
		log "vendored reflect2 already patched for Go >= 1.18"
	elif out=$(patch -p1 -F0 -N -f --dry-run -d "$tree" <"$REFLECT2_PATCH" 2>&1); then
		log "patching vendored reflect2 v1.0.1 for Go >= 1.18 (mapiterinit fills a *hiter, as in v1.0.2): $REFLECT2_PATCH"
		patch -p1 -F0 -N -f -s --no-backup-if-mismatch -d "$tree" <"$REFLECT2_PATCH" >&2 ||
			die "applying $REFLECT2_PATCH failed"
	else
		printf '%s\n' "$out" >&2
		die "vendored reflect2 in $dir is not the expected v1.0.1 code; $REFLECT2_PATCH does not apply"
	fi
	grep -q 'mapiterinit(type2.rtype, \*(\*unsafe.Pointer)(obj), &it)' "$dir/go_above_118.go" ||
		die "reflect2 patch check failed: no 3-argument mapiterinit call in $dir/go_above_118.go"
	! grep -q 'func mapiterinit(rtype unsafe.Pointer, m unsafe.Pointer) \*hiter' "$dir/unsafe_link.go" ||
		die "reflect2 patch check failed: old mapiterinit declaration still in $dir/unsafe_link.go"
	# The build (GO111MODULE=off, GOPATH tree linking to $tree) must compile
	# this copy and, with this Go, go_above_118.go.
	out=$(
		cd "$tree/.go/src/k8s.io/kubernetes" &&
			GO111MODULE=off GOPATH=$tree/.go GOFLAGS='' GOCACHE=$CACHE/go-build PATH=/usr/lib/go/bin:$PATH \
				go list -e -f '{{.ImportPath}} {{.Dir}} {{.GoFiles}}' -deps ./cmd/kube-apiserver 2>&1 |
			grep '/github.com/modern-go/reflect2 '
	) || die "go list: kube-apiserver does not depend on a reflect2 package?"
	case "$out" in
	*"k8s.io/kubernetes/vendor/github.com/modern-go/reflect2 "*go_above_118.go*) ;;
	*) die "kube-apiserver would compile another reflect2 than the patched vendored one: $out" ;;
	esac
	out=${out#* }
	log "reflect2 compiled from ${out%% *} (with go_above_118.go)"
}

# --- etcd, kubectl ----------------------------------------------------------
if ! etcd_ok; then
	if command -v etcd >/dev/null 2>&1 && runs "$(command -v etcd)" --version; then
		log "using installed $(command -v etcd)"
		ln -sfn "$(command -v etcd)" "$BIN/etcd"
	else
		unpack_deb etcd-server /usr/bin/etcd etcd
	fi
	etcd_ok || die "etcd does not run"
fi
if ! kubectl_ok; then
	# Not the kubectl on PATH: it may be a much newer one (e.g. Google Cloud
	# SDK's, whose package also owns /usr/bin/kubectl and conflicts with
	# kubernetes-client). Debian's 1.20 client matches the server.
	unpack_deb kubernetes-client /usr/bin/kubectl kubectl
	kubectl_ok || die "kubectl does not run"
fi

# --- kube-apiserver ---------------------------------------------------------
if ! apiserver_ok; then
	START=$SECONDS
	if [ -z "${KUBE_APISERVER:-}" ] && [ -e "$BIN/kube-apiserver" ]; then
		log "cached $BIN/kube-apiserver has build id '$(cached_build_id)', want '$BUILD_ID'; rebuilding"
	fi
	[ -f "$REFLECT2_PATCH" ] || die "missing $REFLECT2_PATCH"
	log "building kube-apiserver $BUILD_ID from Debian source in $CACHE/src (about 7 minutes, 1.3 GB RAM)"
	# The packages of the "apiserver" group of the project's one list; not
	# root, it prints the apt-get line to run.
	sh "$INSTALL_DEPS" apiserver || die "the build tools are missing (see above)"
	SRC=$CACHE/src
	tree=
	for d in "$SRC"/kubernetes-*/; do
		[ -f "$d/Makefile" ] && [ -f "$d/.gavel-unpacked" ] && tree=${d%/}
	done
	if [ -z "$tree" ]; then
		enable_deb_src
		rm -rf "$SRC"
		tmp=$(mktemp -d "$CACHE/src.XXXXXX")
		log "apt-get source kubernetes"
		(cd "$tmp" && apt-get source -q kubernetes >"$CACHE/source.log" 2>&1) ||
			{ tail -n 20 "$CACHE/source.log" >&2; rm -rf "$tmp"; die "apt-get source kubernetes failed (see $CACHE/source.log)"; }
		mv "$tmp" "$SRC"
		for d in "$SRC"/kubernetes-*/; do
			[ -f "$d/Makefile" ] && tree=${d%/}
		done
		[ -n "$tree" ] || die "no kubernetes source tree in $SRC"
		touch "$tree/.gavel-unpacked"
	fi
	log "source tree: $tree"
	grep -q "tag: $WANT_VERSION" "$tree/hack/lib/version.sh" ||
		log "WARNING: the source tree does not look like $WANT_VERSION"

	mkdir -p "$tree/.go/src/k8s.io"
	[ -L "$tree/.go/src/k8s.io/kubernetes" ] || ln -s ../../.. "$tree/.go/src/k8s.io/kubernetes"
	patch_reflect2 "$tree"

	# Heartbeat, since `make` stays silent for minutes while compiling.
	(
		while sleep 60; do
			log "still building ($((SECONDS - START)) s elapsed; output in $CACHE/build.log)"
		done
	) &
	HB=$!
	trap 'kill "$HB" 2>/dev/null || true' EXIT
	log "make WHAT=cmd/kube-apiserver (log: $CACHE/build.log)"
	rc=0
	(
		cd "$tree"
		export GOPATH=$PWD/.go CGO_ENABLED=0 GOCACHE=$CACHE/go-build
		export PATH=/usr/lib/go/bin:$PATH
		make WHAT=cmd/kube-apiserver
	) >"$CACHE/build.log" 2>&1 || rc=$?
	kill "$HB" 2>/dev/null || true
	wait "$HB" 2>/dev/null || true
	trap - EXIT
	if [ "$rc" -ne 0 ]; then
		tail -n 30 "$CACHE/build.log" >&2
		die "make failed with status $rc (see $CACHE/build.log)"
	fi
	out=$tree/_output/bin/kube-apiserver
	[ -x "$out" ] || out=$tree/_output/local/bin/linux/amd64/kube-apiserver
	[ -x "$out" ] || die "build succeeded but no kube-apiserver binary in $tree/_output"
	rm -f "$BIN/kube-apiserver.version"
	cp "$out" "$BIN/kube-apiserver.new"
	mv -f "$BIN/kube-apiserver.new" "$BIN/kube-apiserver"
	printf '%s\n' "$BUILD_ID" >"$BIN/kube-apiserver.version"
	apiserver_ok || die "built kube-apiserver does not run --version"
	log "built in $((SECONDS - START)) s"
	if [ "${GAVEL_KEEP_SRC:-0}" != 1 ]; then
		log "removing source tree and Go build cache (GAVEL_KEEP_SRC=1 keeps them)"
		rm -rf "$SRC" "$CACHE/go-build"
	fi
fi

report
