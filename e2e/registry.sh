#!/bin/sh
# e2e/registry.sh - the registry client (kube/registry.h, the imageRegistry
# context entry) against a real registry: Debian's docker-registry
# (distribution 2.8) on 127.0.0.1, run from a config file in a temporary
# directory (storage there too, not the system service), seeded without
# docker through the registry API v2 with curl: config and layer blobs by
# POST + PUT uploads, then manifests by PUT: a Docker v2 image (tag v1), an
# OCI image per platform (linux/arm64, linux/amd64) and an OCI index of
# them (tag multi).
#
#   sh e2e/registry.sh        (from the top of the tree, after make)
#
# A tiny driver (kube/tests/registry_driver.c, built here against
# build/libgavel.a) prints each ImageData; the cases check its fields
# against what was pushed: registry, repository, identifier, resolvedImage
# (the digest of the pushed manifest or index), manifest layers and
# config digest, configData; by tag and by digest; an index resolved to its
# linux/amd64 image; 404s for an unknown tag and repository; the cache (a
# repeated reference is asked of the registry once: its access log); a
# registry that is no longer listening. A second driver
# (background/tests/vpimage_driver.c) evaluates a ValidatingPolicy calling
# image.GetMetadata through the context loader, as gavel serve and scans
# do: pass, fail, and the errors of an unknown tag and a stopped registry.
#
# Skips (with a message and "0 passed, 0 failed") when docker-registry is
# not installed and cannot be (apt-get, as root), or does not start.
# Environment: LIBGAVEL (default build/libgavel.a), CC, KEEP=1 keeps the
# temporary directory. Ends with "N passed, N failed"; exit 1 when
# anything failed.
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 2
LIBGAVEL=${LIBGAVEL:-$ROOT/build/libgavel.a}
CC=${CC:-cc}

passed=0
failed=0
ok() {
	passed=$((passed + 1))
	echo "ok   $*"
}
bad() {
	failed=$((failed + 1))
	echo "FAIL $*"
}
summary() { echo "$passed passed, $failed failed"; }

WORK=$(mktemp -d /tmp/gavel-registry.XXXXXX)
REG_PID=
stop_registry() {
	if [ -n "$REG_PID" ]; then
		kill "$REG_PID" 2>/dev/null
		wait "$REG_PID" 2>/dev/null
		REG_PID=
	fi
}
cleanup() {
	stop_registry
	if [ "${KEEP:-}" = 1 ]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

abort() {
	bad "$*"
	summary
	exit 1
}
skip_all() {
	echo "skip registry suite: $*"
	summary
	exit 0
}

for tool in curl jq sha256sum; do
	command -v "$tool" >/dev/null || abort "$tool is needed"
done
[ -f "$LIBGAVEL" ] || abort "no $LIBGAVEL (run make)"

# --- the registry -----------------------------------------------------------
REGISTRY=$(command -v docker-registry || true)
if [ -z "$REGISTRY" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
	DEBIAN_FRONTEND=noninteractive timeout 300 apt-get install -y -qq docker-registry \
		>"$WORK/apt.log" 2>&1 || true
	REGISTRY=$(command -v docker-registry || true)
fi
[ -n "$REGISTRY" ] || skip_all "docker-registry is not installed and could not be (apt-get install docker-registry)"

# A free port: one no socket listens on, then the registry's own bind decides.
pick_port() {
	while :; do
		p=$(($(od -An -N2 -tu2 /dev/urandom) % 20000 + 20000))
		if command -v ss >/dev/null && ss -Htln 2>/dev/null | awk '{print $4}' |
			grep -q ":$p\$"; then
			continue
		fi
		echo "$p"
		return
	done
}

start_registry() {
	PORT=$(pick_port)
	mkdir -p "$WORK/data"
	cat >"$WORK/config.yml" <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $WORK/data
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$PORT
EOF
	"$REGISTRY" serve "$WORK/config.yml" >"$WORK/registry.log" 2>&1 &
	REG_PID=$!
	i=0
	while [ $i -lt 100 ]; do
		if ! kill -0 "$REG_PID" 2>/dev/null; then
			wait "$REG_PID" 2>/dev/null
			REG_PID=
			return 1
		fi
		if [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/v2/")" = 200 ]; then
			return 0
		fi
		sleep 0.1
		i=$((i + 1))
	done
	stop_registry
	return 1
}

started=
for _ in 1 2 3; do
	if start_registry; then
		started=1
		break
	fi
done
if [ -z "$started" ]; then
	tail -n 5 "$WORK/registry.log"
	skip_all "docker-registry did not start on 127.0.0.1"
fi
BASE=http://127.0.0.1:$PORT
HOST=127.0.0.1:$PORT
echo "docker-registry $("$REGISTRY" --version 2>&1 | awk '{print $NF}') on $HOST (pid $REG_PID)"

# --- the driver ---------------------------------------------------------------
PKGS=$(sed -n 's/^PKGS *:= *//p' Makefile)
# shellcheck disable=SC2086,SC2046
if ! $CC -std=c11 -D_GNU_SOURCE -I. $(pkg-config --cflags $PKGS) -o "$WORK/registry_driver" \
	kube/tests/registry_driver.c "$LIBGAVEL" $(pkg-config --libs $PKGS) -lm -lpthread \
	>"$WORK/cc.log" 2>&1; then
	cat "$WORK/cc.log"
	abort "building kube/tests/registry_driver.c"
fi
DRIVER=$WORK/registry_driver
# drv ARGS...: the driver, its stderr (sanitizer reports, when built with them) kept apart
drv() { "$DRIVER" "$@" 2>>"$WORK/driver.err"; }

# --- seeding through the API v2 -------------------------------------------------
digest() { echo "sha256:$(sha256sum "$1" | awk '{print $1}')"; }
size() { wc -c <"$1" | tr -d ' '; }

# push_blob REPO FILE: POST an upload session, PUT the content with its digest.
push_blob() {
	loc=$(curl -s -o /dev/null -D - -X POST "$BASE/v2/$1/blobs/uploads/" |
		tr -d '\r' | sed -n 's/^[Ll]ocation: //p')
	[ -n "$loc" ] || return 1
	case "$loc" in /*) loc=$BASE$loc ;; esac
	case "$loc" in *\?*) sep='&' ;; *) sep='?' ;; esac
	code=$(curl -s -o "$WORK/put.out" -w '%{http_code}' -X PUT \
		-H 'Content-Type: application/octet-stream' --data-binary "@$2" \
		"$loc${sep}digest=$(digest "$2")")
	[ "$code" = 201 ] || {
		cat "$WORK/put.out"
		return 1
	}
}

# push_manifest REPO REF TYPE FILE
push_manifest() {
	code=$(curl -s -o "$WORK/put.out" -w '%{http_code}' -X PUT -H "Content-Type: $3" \
		--data-binary "@$4" "$BASE/v2/$1/manifests/$2")
	[ "$code" = 201 ] || {
		cat "$WORK/put.out"
		return 1
	}
}

# An image: one layer (a gzipped tar of a file) and a config naming it.
mkdir -p "$WORK/rootfs/etc"
echo "gavel e2e" >"$WORK/rootfs/etc/motd"
tar -C "$WORK/rootfs" -cf "$WORK/layer.tar" etc
gzip -n -c "$WORK/layer.tar" >"$WORK/layer.tar.gz"
DIFF_ID=$(digest "$WORK/layer.tar")
LAYER=$(digest "$WORK/layer.tar.gz")
LAYER_SIZE=$(size "$WORK/layer.tar.gz")

# make_config FILE ARCH USER
make_config() {
	printf '{"architecture":"%s","os":"linux","config":{"User":"%s","Env":["PATH=/usr/bin:/bin"],"Labels":{"org.example.arch":"%s"}},"rootfs":{"type":"layers","diff_ids":["%s"]},"history":[{"created_by":"gavel e2e"}]}' \
		"$2" "$3" "$2" "$DIFF_ID" >"$1"
}
# make_manifest FILE MEDIATYPE CONFIG_MEDIATYPE LAYER_MEDIATYPE CONFIG_FILE
make_manifest() {
	printf '{"schemaVersion":2,"mediaType":"%s","config":{"mediaType":"%s","size":%s,"digest":"%s"},"layers":[{"mediaType":"%s","size":%s,"digest":"%s"}]}' \
		"$2" "$3" "$(size "$5")" "$(digest "$5")" "$4" "$LAYER_SIZE" "$LAYER" >"$1"
}

DOCKER_MT=application/vnd.docker.distribution.manifest.v2+json
OCI_MT=application/vnd.oci.image.manifest.v1+json
INDEX_MT=application/vnd.oci.image.index.v1+json
REPO=e2e/app

make_config "$WORK/config-v1.json" amd64 1000
make_config "$WORK/config-amd64.json" amd64 2000
make_config "$WORK/config-arm64.json" arm64 3000
make_manifest "$WORK/m-v1.json" "$DOCKER_MT" application/vnd.docker.container.image.v1+json \
	application/vnd.docker.image.rootfs.diff.tar.gzip "$WORK/config-v1.json"
make_manifest "$WORK/m-amd64.json" "$OCI_MT" application/vnd.oci.image.config.v1+json \
	application/vnd.oci.image.layer.v1.tar+gzip "$WORK/config-amd64.json"
make_manifest "$WORK/m-arm64.json" "$OCI_MT" application/vnd.oci.image.config.v1+json \
	application/vnd.oci.image.layer.v1.tar+gzip "$WORK/config-arm64.json"
printf '{"schemaVersion":2,"mediaType":"%s","manifests":[{"mediaType":"%s","size":%s,"digest":"%s","platform":{"architecture":"arm64","os":"linux","variant":"v8"}},{"mediaType":"%s","size":%s,"digest":"%s","platform":{"architecture":"amd64","os":"linux"}}]}' \
	"$INDEX_MT" "$OCI_MT" "$(size "$WORK/m-arm64.json")" "$(digest "$WORK/m-arm64.json")" \
	"$OCI_MT" "$(size "$WORK/m-amd64.json")" "$(digest "$WORK/m-amd64.json")" >"$WORK/index.json"

seed() {
	push_blob $REPO "$WORK/layer.tar.gz" &&
		push_blob $REPO "$WORK/config-v1.json" &&
		push_blob $REPO "$WORK/config-amd64.json" &&
		push_blob $REPO "$WORK/config-arm64.json" &&
		push_manifest $REPO v1 "$DOCKER_MT" "$WORK/m-v1.json" &&
		push_manifest $REPO "$(digest "$WORK/m-amd64.json")" "$OCI_MT" "$WORK/m-amd64.json" &&
		push_manifest $REPO "$(digest "$WORK/m-arm64.json")" "$OCI_MT" "$WORK/m-arm64.json" &&
		push_manifest $REPO multi "$INDEX_MT" "$WORK/index.json"
}
if seed; then ok "seed: blobs and manifests pushed with curl"; else abort "seed: pushing the image"; fi

# --- cases ----------------------------------------------------------------------
# check NAME JSON_LINE JQ_EXPR: the expression must be true of the ImageData.
check() {
	if printf '%s\n' "$2" | jq -e "$3" >/dev/null 2>&1; then
		ok "$1"
	else
		bad "$1: $3"
		printf '%s\n' "$2" | head -c 2000
		echo
	fi
}

M_V1=$(digest "$WORK/m-v1.json")
out=$(drv "$HOST/$REPO:v1")
check "docker v2 by tag: names" "$out" \
	".image == \"$HOST/$REPO:v1\" and .registry == \"$HOST\" and .repository == \"$REPO\" and .identifier == \"v1\""
check "docker v2 by tag: resolvedImage is the pushed manifest's digest" "$out" \
	".resolvedImage == \"$HOST/$REPO@$M_V1\""
check "docker v2 by tag: manifest" "$out" \
	".manifest.mediaType == \"$DOCKER_MT\" and .manifest.config.digest == \"$(digest "$WORK/config-v1.json")\" and .manifest.layers[0].digest == \"$LAYER\" and .manifest.layers[0].size == $LAYER_SIZE"
check "docker v2 by tag: configData" "$out" \
	'.configData.config.User == "1000" and .configData.architecture == "amd64" and .configData.config.Env[0] == "PATH=/usr/bin:/bin"'
check "docker v2 by tag: the same as the pushed manifest and config" "$out" \
	".manifest == $(cat "$WORK/m-v1.json") and .configData == $(cat "$WORK/config-v1.json") and .manifestList == null"

out=$(drv "$HOST/$REPO@$M_V1")
check "docker v2 by digest" "$out" \
	".identifier == \"$M_V1\" and .resolvedImage == \"$HOST/$REPO@$M_V1\" and .configData.config.User == \"1000\""

out=$(drv "$HOST/$REPO:multi")
check "OCI index: resolved to linux/amd64" "$out" \
	".manifest == $(cat "$WORK/m-amd64.json") and .configData.config.User == \"2000\" and .configData.config.Labels[\"org.example.arch\"] == \"amd64\""
check "OCI index: manifestList is the index" "$out" ".manifestList == $(cat "$WORK/index.json")"
check "OCI index: resolvedImage is the index digest" "$out" \
	".resolvedImage == \"$HOST/$REPO@$(digest "$WORK/index.json")\" and .identifier == \"multi\""

out=$(drv --insecure "$HOST/$REPO:multi")
check "allowInsecureRegistry: the same answer" "$out" '.configData.config.User == "2000"'

expect_error() { # NAME EXPECTED_SUBSTRING DRIVER_ARGS...
	name=$1
	want=$2
	shift 2
	if out=$(drv "$@" 2>&1); then
		bad "$name: succeeded: $out"
	else
		case "$out" in
		*"$want"*) ok "$name" ;;
		*) bad "$name: no \"$want\" in: $out" ;;
		esac
	fi
}
expect_error "unknown tag: 404 manifest unknown" "manifest unknown (404 MANIFEST_UNKNOWN" \
	"$HOST/$REPO:nope"
expect_error "unknown repository: 404" "unknown (404 " "$HOST/e2e/none:v1"
expect_error "bad reference" "invalid image reference \"$HOST/E2E/app:v1\": repository name must be lowercase" "$HOST/E2E/app:v1"

# The cache: one client asked the same reference twice; the access log has one GET.
gets() { grep -c "GET /v2/$REPO/manifests/v1 " "$WORK/registry.log"; }
before=$(gets)
out=$(drv "$HOST/$REPO:v1" "$HOST/$REPO:v1" | sort -u | wc -l)
after=$(gets)
if [ "$out" = 1 ] && [ $((after - before)) = 1 ]; then
	ok "cache: a repeated reference is fetched once"
else
	bad "cache: $out distinct answers, $((after - before)) manifest GETs (want 1, 1)"
fi

# A ValidatingPolicy calling image.GetMetadata, evaluated as gavel serve and
# scans do (background/tests/vpimage_driver.c: the context loader behind the
# cluster CEL host): Kyverno's image data from this registry; a failed fetch
# is the policy's error, never a pass.
VPDRIVER=
# shellcheck disable=SC2086,SC2046
if $CC -std=c11 -D_GNU_SOURCE -I. $(pkg-config --cflags $PKGS) -o "$WORK/vpimage_driver" \
	background/tests/vpimage_driver.c "$LIBGAVEL" $(pkg-config --libs $PKGS) -lm -lpthread \
	>"$WORK/cc-vp.log" 2>&1; then
	VPDRIVER=$WORK/vpimage_driver
else
	cat "$WORK/cc-vp.log"
	bad "building background/tests/vpimage_driver.c"
fi
cat >"$WORK/vpol.json" <<'EOF'
{"apiVersion":"policies.kyverno.io/v1","kind":"ValidatingPolicy","metadata":{"name":"image-user"},
 "spec":{"validationActions":["Deny"],
  "matchConstraints":{"resourceRules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE"],"resources":["pods"]}]},
  "validations":[
   {"expression":"object.spec.containers.all(c, image.GetMetadata(c.image).config.config.User == '1000' && image.GetMetadata(c.image).config.architecture == 'amd64')",
    "message":"images must run as user 1000"},
   {"expression":"has(image.GetMetadata(object.spec.containers[0].image).imageIndex) == (object.metadata.name == 'multi') && !has(image.GetMetadata(object.spec.containers[0].image).configData) && image.GetMetadata(object.spec.containers[0].image).resolvedImage.endsWith(image.GetMetadata(object.spec.containers[0].image).digest)",
    "message":"image data shape"}]}}
EOF
# vp_check NAME POD_NAME IMAGE WANT: WANT is a shell pattern of the driver's output lines joined by |.
vp_check() {
	[ -n "$VPDRIVER" ] || return 0
	printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s","namespace":"default"},"spec":{"containers":[{"name":"c","image":"%s"}]}}' \
		"$2" "$3" >"$WORK/pod.json"
	out=$("$VPDRIVER" "$WORK/vpol.json" "$WORK/pod.json" 2>>"$WORK/driver.err" | tr '\n' '|')
	# shellcheck disable=SC2254
	case "$out" in
	$4) ok "$1" ;;
	*) bad "$1: got: $out" ;;
	esac
}
vp_check "ValidatingPolicy image.GetMetadata: user 1000 passes" v1 "$HOST/$REPO:v1" 'pass *|'
vp_check "ValidatingPolicy image.GetMetadata: index resolved, user 2000 fails" multi \
	"$HOST/$REPO:multi" 'fail images must run as user 1000|'
vp_check "ValidatingPolicy image.GetMetadata: unknown tag is an error" nope "$HOST/$REPO:nope" \
	'error *failed to get image data: failed to fetch image descriptor: '"$HOST/$REPO:nope"'*manifest unknown*|'

stop_registry
expect_error "registry stopped: unreachable" "unreachable" "$HOST/$REPO:v1"
vp_check "ValidatingPolicy image.GetMetadata: registry stopped is an error" v1 "$HOST/$REPO:v1" \
	'error *failed to get image data:*unreachable*|'

if grep -Eq 'Sanitizer|runtime error' "$WORK/driver.err" 2>/dev/null; then
	bad "driver: sanitizer report"
	head -n 40 "$WORK/driver.err"
else
	ok "driver: no sanitizer report"
fi

summary
[ "$failed" -eq 0 ]
