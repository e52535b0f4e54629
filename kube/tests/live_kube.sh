#!/bin/sh
# live_kube.sh - the kube client and `gavel certs` against a real
# kube-apiserver v1.20 + etcd on loopback (e2e/local/up.sh).
#
#   make && sh kube/tests/live_kube.sh
#
# Builds a tiny driver (kube/tests/kube_driver.c) against build/libgavel.a,
# starts a control plane in a temporary directory (stopped on exit), then:
# lists (one page and paginated), discovery, an informer that sees a
# ConfigMap created and deleted by kubectl, Status reasons (404 NotFound,
# 409 AlreadyExists, 409 Conflict, 422 Invalid, 401 Unauthorized), and
# `gavel certs generate/inject/secret` with a ValidatingWebhookConfiguration
# that the API server calls over TLS: a small python3 webhook serves the
# generated certificate, the API server refuses it (x509) until the CA is
# injected, then gets its denials.
#
# Environment: GAVEL (default ./gavel), LIBGAVEL (default build/libgavel.a),
# CC, KEEP=1 keeps the temporary directory.
# Ends with "N passed, N failed"; exit 1 when anything failed.
set -u

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 2
GAVEL=${GAVEL:-$ROOT/gavel}
LIBGAVEL=${LIBGAVEL:-$ROOT/build/libgavel.a}
CC=${CC:-cc}

passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok   $*"; }
bad() { failed=$((failed + 1)); echo "FAIL $*"; }
summary() { echo "$passed passed, $failed failed"; }

WORK=$(mktemp -d /tmp/gavel-live-kube.XXXXXX)
HOOK_PID=
cleanup() {
	if [ -n "$HOOK_PID" ]; then kill "$HOOK_PID" 2>/dev/null; fi
	if [ -f "$WORK/cp/kube-apiserver.pid" ]; then e2e/local/down.sh "$WORK/cp" >/dev/null 2>&1; fi
	if [ "${KEEP:-}" = 1 ]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

abort() {
	bad "$*"
	summary
	exit 1
}

# --- build the driver -------------------------------------------------------
[ -x "$GAVEL" ] || abort "no gavel binary at $GAVEL (run make)"
[ -f "$LIBGAVEL" ] || abort "no $LIBGAVEL (run make)"
command -v python3 >/dev/null || abort "python3 is needed (the test webhook)"
command -v openssl >/dev/null || abort "openssl is needed"
PKGS=$(sed -n 's/^PKGS *:= *//p' Makefile)
for p in libcurl libssl; do
	case " $PKGS " in *" $p "*) ;; *) PKGS="$PKGS $p" ;; esac
done
# shellcheck disable=SC2086
if ! $CC -std=c11 -D_GNU_SOURCE -I. $(pkg-config --cflags $PKGS) -o "$WORK/kube_driver" \
	kube/tests/kube_driver.c "$LIBGAVEL" $(pkg-config --libs $PKGS) -lm -lpthread \
	>"$WORK/cc.log" 2>&1; then
	cat "$WORK/cc.log"
	abort "building kube/tests/kube_driver.c"
fi
DRIVER=$WORK/kube_driver

# --- control plane ----------------------------------------------------------
if ! e2e/local/up.sh "$WORK/cp" >"$WORK/up.log" 2>&1; then
	tail -n 20 "$WORK/up.log"
	abort "starting the local control plane"
fi
# shellcheck disable=SC1091
. "$WORK/cp/env"
export KUBECONFIG
K() { "$KUBECTL" --kubeconfig "$KUBECONFIG" "$@"; }
ok "control plane up on port $APISERVER_PORT"

# expect DESC OUTPUT_FILE PATTERN: the file contains the extended regex
expect() {
	if grep -Eq -- "$3" "$2"; then ok "$1"; else
		bad "$1 (wanted /$3/, got:)"
		sed 's/^/     | /' "$2" | head -n 10
	fi
}

# --- list -------------------------------------------------------------------
"$DRIVER" list /api/v1/namespaces >"$WORK/ns.out" 2>&1
for ns in default kube-system kube-public; do
	expect "list namespaces has $ns" "$WORK/ns.out" "^$ns\$"
done
expect "list returns a resourceVersion" "$WORK/ns.out" '^rv=[0-9]+$'
want=$(K get ns --no-headers | wc -l)
"$DRIVER" list /api/v1/namespaces 1 >"$WORK/ns1.out" 2>&1
got=$(grep -vc '^rv=' "$WORK/ns1.out")
if [ "$got" -eq "$want" ] && [ "$want" -ge 3 ]; then ok "paginated list (limit=1) sees all $want namespaces"; else
	bad "paginated list: $got namespaces, kubectl says $want"
fi

# --- discovery --------------------------------------------------------------
"$DRIVER" discover ConfigMap >"$WORK/d1" 2>&1
expect "discover ConfigMap" "$WORK/d1" '^core v1 configmaps namespaced$'
"$DRIVER" discover Deployment >"$WORK/d2" 2>&1
expect "discover Deployment" "$WORK/d2" '^apps v1 deployments namespaced$'
"$DRIVER" discover ValidatingWebhookConfiguration >"$WORK/d3" 2>&1
expect "discover ValidatingWebhookConfiguration" "$WORK/d3" \
	'^admissionregistration.k8s.io v1 validatingwebhookconfigurations cluster$'
"$DRIVER" discover Namespace >"$WORK/d4" 2>&1
expect "discover Namespace" "$WORK/d4" '^core v1 namespaces cluster$'
if "$DRIVER" discover NoSuchKind >"$WORK/d5" 2>&1; then bad "discover NoSuchKind succeeded"; else
	expect "discover NoSuchKind fails" "$WORK/d5" 'kind NoSuchKind is not served'
fi

# --- watch ------------------------------------------------------------------
K create namespace live >/dev/null 2>&1
: >"$WORK/watch.out"
"$DRIVER" watch /api/v1/namespaces/live/configmaps seen-by-watch 30 >"$WORK/watch.out" 2>&1 &
WPID=$!
i=0
while ! grep -q '^synced' "$WORK/watch.out" && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
K -n live create configmap seen-by-watch --from-literal=k=v >/dev/null
i=0
while ! grep -q '^added' "$WORK/watch.out" && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
K -n live delete configmap seen-by-watch >/dev/null
if wait $WPID; then ok "informer saw the ConfigMap added and deleted"; else
	bad "informer watch"
	sed 's/^/     | /' "$WORK/watch.out"
fi

# --- Status errors ----------------------------------------------------------
"$DRIVER" get /api/v1/namespaces/live/configmaps/nope >"$WORK/e404" 2>/dev/null
expect "404 NotFound" "$WORK/e404" '^error http=404 reason=NotFound message=configmaps "nope" not found$'
K -n live create configmap dup --from-literal=a=1 >/dev/null
cat >"$WORK/dup.json" <<'EOF'
{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dup","namespace":"live"},"data":{"a":"2"}}
EOF
"$DRIVER" post /api/v1/namespaces/live/configmaps "$WORK/dup.json" >"$WORK/e409" 2>/dev/null
expect "409 AlreadyExists" "$WORK/e409" '^error http=409 reason=AlreadyExists message=configmaps "dup" already exists$'
cat >"$WORK/stale.json" <<'EOF'
{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dup","namespace":"live","resourceVersion":"1"},"data":{"a":"3"}}
EOF
"$DRIVER" put /api/v1/namespaces/live/configmaps/dup "$WORK/stale.json" >"$WORK/e409c" 2>/dev/null
expect "409 Conflict" "$WORK/e409c" '^error http=409 reason=Conflict message=Operation cannot be fulfilled'
cat >"$WORK/invalid.json" <<'EOF'
{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"Bad_Name","namespace":"live"}}
EOF
"$DRIVER" post /api/v1/namespaces/live/configmaps "$WORK/invalid.json" >"$WORK/e422" 2>/dev/null
expect "422 Invalid" "$WORK/e422" '^error http=422 reason=Invalid '
sed 's/^\( *token: *\).*/\1wrong-token/' "$KUBECONFIG" >"$WORK/badtoken.kubeconfig"
if grep -q wrong-token "$WORK/badtoken.kubeconfig"; then
	KUBECONFIG=$WORK/badtoken.kubeconfig "$DRIVER" get /api/v1/namespaces >"$WORK/e401" 2>/dev/null
	expect "401 Unauthorized" "$WORK/e401" '^error http=401 reason=Unauthorized'
else
	bad "kubeconfig has no token line to break"
fi
"$DRIVER" get /api/v1/namespaces/live >"$WORK/ok" 2>/dev/null
expect "GET an object" "$WORK/ok" '^ok live$'

# --- gavel certs generate ---------------------------------------------------
CERTS=$WORK/tls
if "$GAVEL" certs generate --service gavel --namespace gavel-system --ip 127.0.0.1 \
	--out "$CERTS" >"$WORK/gen.out" 2>&1; then ok "certs generate"; else
	bad "certs generate"
	cat "$WORK/gen.out"
fi
modes=$(stat -c '%n %a' "$CERTS/tls.key" "$CERTS/ca.key" "$CERTS/tls.crt" "$CERTS/ca.crt" 2>&1 |
	sed "s|$CERTS/||" | tr '\n' ' ')
if [ "$modes" = "tls.key 600 ca.key 600 tls.crt 644 ca.crt 644 " ]; then ok "file modes: $modes"; else
	bad "file modes: $modes"
fi
if openssl verify -CAfile "$CERTS/ca.crt" -purpose sslserver "$CERTS/tls.crt" >/dev/null 2>&1; then
	ok "openssl verify tls.crt"
else bad "openssl verify tls.crt"; fi
openssl x509 -in "$CERTS/tls.crt" -noout -ext subjectAltName >"$WORK/san" 2>&1
expect "SANs" "$WORK/san" 'DNS:gavel, DNS:gavel.gavel-system, DNS:gavel.gavel-system.svc, DNS:gavel.gavel-system.svc.cluster.local, IP Address:127.0.0.1'
"$GAVEL" certs generate --service gavel --namespace gavel-system --ip 127.0.0.1 \
	--out "$CERTS" >"$WORK/gen2.out" 2>&1
expect "certs generate again renews nothing" "$WORK/gen2.out" 'nothing renewed'

# --- a webhook served with the generated certificate ------------------------
# A minimal AdmissionReview responder (python3's ssl + http.server): denies
# ConfigMaps named deny-*, allows the rest.
cat >"$WORK/webhook.py" <<'EOF'
import http.server, json, ssl, sys

class Hook(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        review = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        req = review["request"]
        resp = {"uid": req["uid"], "allowed": not (req.get("name") or "").startswith("deny-")}
        if not resp["allowed"]:
            resp["status"] = {"code": 403, "message": "denied by the live test"}
        body = json.dumps({"apiVersion": review["apiVersion"], "kind": "AdmissionReview",
                           "response": resp}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

srv = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Hook)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[2], sys.argv[3])
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
srv.serve_forever()
EOF
PORT=$(awk 'BEGIN { srand(); print 32000 + int(rand() * 8000) }')
python3 "$WORK/webhook.py" "$PORT" "$CERTS/tls.crt" "$CERTS/tls.key" >"$WORK/webhook.log" 2>&1 &
HOOK_PID=$!
K create namespace live-wh >/dev/null
K label namespace live-wh gavel-live=on >/dev/null
cat >"$WORK/vwc.yaml" <<EOF
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: gavel-live
webhooks:
- name: validate.gavel.live.dev
  admissionReviewVersions: ["v1"]
  sideEffects: None
  failurePolicy: Fail
  timeoutSeconds: 5
  clientConfig:
    url: https://127.0.0.1:$PORT/validate
  rules:
  - {operations: ["CREATE"], apiGroups: [""], apiVersions: ["v1"], resources: ["configmaps"]}
  namespaceSelector:
    matchLabels: {gavel-live: "on"}
- name: second.gavel.live.dev
  admissionReviewVersions: ["v1"]
  sideEffects: None
  failurePolicy: Ignore
  clientConfig:
    url: https://127.0.0.1:$PORT/other
  rules:
  - {operations: ["CREATE"], apiGroups: [""], apiVersions: ["v1"], resources: ["secrets"]}
  namespaceSelector:
    matchLabels: {gavel-live: "on"}
EOF
K apply -f "$WORK/vwc.yaml" >/dev/null

# probe PATTERN: creates ConfigMaps deny-* in live-wh until the error matches (15 s)
probe() {
	i=0
	while [ $i -lt 30 ]; do
		K -n live-wh create configmap "deny-$i-$$" --from-literal=a=b >"$WORK/probe" 2>&1
		if grep -Eq -- "$1" "$WORK/probe"; then return 0; fi
		sleep 0.5
		i=$((i + 1))
	done
	return 1
}
if probe 'failed calling webhook.*x509'; then
	ok "without caBundle the API server rejects the webhook's certificate"
else
	bad "expected an x509 error before inject:"
	sed 's/^/     | /' "$WORK/probe"
fi

# --- gavel certs inject -----------------------------------------------------
if "$GAVEL" certs inject --webhook gavel-live --ca-file "$CERTS/ca.crt" --kubeconfig "$KUBECONFIG" \
	>"$WORK/inj.out" 2>&1; then
	expect "certs inject" "$WORK/inj.out" '^gavel-live: caBundle updated$'
else
	bad "certs inject"
	cat "$WORK/inj.out"
fi
n=0
for i in 0 1; do
	K get validatingwebhookconfiguration gavel-live \
		-o "jsonpath={.webhooks[$i].clientConfig.caBundle}" | base64 -d >"$WORK/bundle$i" 2>/dev/null
	if cmp -s "$WORK/bundle$i" "$CERTS/ca.crt"; then n=$((n + 1)); fi
done
if [ $n -eq 2 ]; then ok "caBundle of both webhooks is ca.crt"; else bad "caBundle set in $n of 2 webhooks"; fi
if probe 'denied the request: denied by the live test'; then
	ok "after inject the API server calls the webhook over TLS: $(cat "$WORK/probe")"
else
	bad "after inject:"
	sed 's/^/     | /' "$WORK/probe"
fi
if K -n live-wh create configmap allowed-by-webhook --from-literal=a=b >"$WORK/allow" 2>&1; then
	ok "the webhook allows the others"
else
	bad "allowed ConfigMap:"
	sed 's/^/     | /' "$WORK/allow"
fi
"$GAVEL" certs inject --webhook gavel-live --ca-file "$CERTS/ca.crt" >"$WORK/inj2.out" 2>&1
expect "certs inject again (KUBECONFIG from the environment)" "$WORK/inj2.out" \
	'^gavel-live: caBundle already current$'
kill "$HOOK_PID" 2>/dev/null
HOOK_PID=
K delete validatingwebhookconfiguration gavel-live >/dev/null

# --- gavel certs secret -----------------------------------------------------
K create namespace gavel-system >/dev/null
if "$GAVEL" certs secret --service gavel --namespace gavel-system --ip 127.0.0.1 \
	--out "$WORK/tls2" >"$WORK/sec.out" 2>&1; then
	expect "certs secret creates the Secret" "$WORK/sec.out" 'Secret gavel-system/gavel-tls: new CA new serving certificate'
else
	bad "certs secret"
	cat "$WORK/sec.out"
fi
K -n gavel-system get secret gavel-tls -o 'jsonpath={.type} {.data.ca\.key}' >"$WORK/sec.json" 2>&1
expect "Secret type kubernetes.io/tls with ca.key" "$WORK/sec.json" '^kubernetes.io/tls [A-Za-z0-9+/]+=*$'
K -n gavel-system get secret gavel-tls -o 'jsonpath={.data.tls\.crt}' | base64 -d >"$WORK/sec.crt"
if cmp -s "$WORK/sec.crt" "$WORK/tls2/tls.crt"; then ok "Secret tls.crt equals the written file"; else
	bad "Secret tls.crt differs from $WORK/tls2/tls.crt"
fi
"$GAVEL" certs secret --service gavel --namespace gavel-system --ip 127.0.0.1 >"$WORK/sec2.out" 2>&1
expect "certs secret again renews nothing" "$WORK/sec2.out" 'nothing renewed'

# --- bad input: one line on stderr, exit 2 ----------------------------------
# fails_with DESC PATTERN CMD...: exit status 2, one stderr line matching PATTERN
fails_with() {
	desc=$1
	pat=$2
	shift 2
	"$@" >"$WORK/fw.out" 2>"$WORK/fw.err"
	st=$?
	lines=$(wc -l <"$WORK/fw.err")
	if [ $st -eq 2 ] && [ "$lines" -eq 1 ] && grep -Eq -- "$pat" "$WORK/fw.err"; then
		ok "$desc: $(cat "$WORK/fw.err")"
	else
		bad "$desc: exit $st, $lines stderr line(s):"
		sed 's/^/     | /' "$WORK/fw.err"
	fi
}
fails_with "inject: unknown webhook" 'ValidatingWebhookConfiguration nope not found' \
	"$GAVEL" certs inject --webhook nope --ca-file "$CERTS/ca.crt"
fails_with "generate: missing --service" 'missing --service' \
	"$GAVEL" certs generate --namespace x --out "$WORK/x"
fails_with "generate: unwritable directory" 'tls.crt/sub' \
	"$GAVEL" certs generate --service a --namespace b --out "$CERTS/tls.crt/sub"
fails_with "generate: bad --ip" 'not an IP address' \
	"$GAVEL" certs generate --service a --namespace b --ip 1.2.3 --out "$WORK/y"
printf 'clusters: [unclosed\n' >"$WORK/broken.kubeconfig"
fails_with "inject: kubeconfig that does not parse" 'broken.kubeconfig' \
	"$GAVEL" certs inject --webhook w --ca-file "$CERTS/ca.crt" --kubeconfig "$WORK/broken.kubeconfig"
cat >"$WORK/unreachable.kubeconfig" <<'EOF'
apiVersion: v1
kind: Config
current-context: x
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
users: [{name: u, user: {token: t}}]
EOF
fails_with "inject: unreachable server" 'https://127.0.0.1:1' \
	"$GAVEL" certs inject --webhook w --ca-file "$CERTS/ca.crt" --kubeconfig "$WORK/unreachable.kubeconfig"
fails_with "inject: missing ca file" 'no-such-ca.crt' \
	"$GAVEL" certs inject --webhook w --ca-file "$WORK/no-such-ca.crt"

summary
[ "$failed" -eq 0 ]
