#!/bin/sh
# Socket tests of the webhook server: starts the real `gavel serve` in
# standalone mode on 127.0.0.1 (a free port picked by the kernel) with a test
# CA made by openssl, and talks to it with curl and openssl s_client:
# routes, 400/404/405/413/415, keep-alive, TLS 1.1 refused, TLS 1.2 and 1.3
# accepted, key pair reload, /validate-policy, /metrics (and /healthz,
# /readyz there), client certificates (--client-ca-file), the per-address
# connection limit (--max-connections-per-ip), start-up failures (exit 2),
# SIGTERM (exit 0).
#
#   sh admission/tests/socket_test.sh        (from the top of the tree)
#   GAVEL=path/to/gavel sh admission/tests/socket_test.sh
#
# Ends with a line "N passed, N failed"; exit status 1 when something failed.
set -u
GAVEL=${GAVEL:-./gavel}
POLICIES=${POLICIES:-manifests/samples/policies}
passed=0
failed=0
tmp=$(mktemp -d)
pid=
pid2=
cleanup() {
	if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; fi
	if [ -n "$pid2" ]; then kill -TERM "$pid2" 2>/dev/null; wait "$pid2" 2>/dev/null; fi
	[ -n "${KEEP_TMP:-}" ] && echo "kept $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

ok() { passed=$((passed + 1)); echo "ok     $1"; }
ko() { failed=$((failed + 1)); echo "FAILED $1${2:+: $2}"; }
# check NAME WANT GOT
check() { if [ "$2" = "$3" ]; then ok "$1"; else ko "$1" "want [$2], got [$3]"; fi; }
# contains NAME NEEDLE FILE
contains() { if grep -q -- "$2" "$3"; then ok "$1"; else ko "$1" "no [$2] in $(head -c 300 "$3")"; fi; }

for tool in curl openssl; do
	command -v $tool >/dev/null || { echo "socket_test: $tool not found"; echo "0 passed, 1 failed"; exit 1; }
done
[ -x "$GAVEL" ] || { echo "socket_test: $GAVEL not found (run make first)"; echo "0 passed, 1 failed"; exit 1; }

# ---- TLS material: a CA and a serving certificate for IP 127.0.0.1 ----
make_pair() { # DIR
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=127.0.0.1" \
		-keyout "$1/tls.key.new" -out "$tmp/tls.csr" 2>/dev/null &&
	openssl x509 -req -in "$tmp/tls.csr" -CA "$tmp/ca.crt" -CAkey "$tmp/ca.key" \
		-CAcreateserial -days 2 -extfile "$tmp/san.ext" -out "$1/tls.crt.new" 2>/dev/null &&
	mv "$1/tls.key.new" "$1/tls.key" && mv "$1/tls.crt.new" "$1/tls.crt"
}
mkdir -p "$tmp/tls"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=gavel-test-ca" \
	-keyout "$tmp/ca.key" -out "$tmp/ca.crt" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >"$tmp/san.ext"
make_pair "$tmp/tls" || { echo "socket_test: openssl failed"; echo "0 passed, 1 failed"; exit 1; }

# ---- start-up failures: one line, exit 2 ----
"$GAVEL" serve --policies "$POLICIES" --tls-dir "$tmp/none" --listen 127.0.0.1:0 \
	--metrics-listen "" >"$tmp/out" 2>&1
check "missing key pair: exit 2" 2 $?
contains "missing key pair: says which file" "tls.crt" "$tmp/out"
"$GAVEL" serve --policies "$POLICIES" --tls-dir "$tmp/tls" --listen 127.0.0.1:99999 \
	--metrics-listen "" >"$tmp/out" 2>&1
check "bad port: exit 2" 2 $?
"$GAVEL" serve --bogus >"$tmp/out" 2>&1
check "unknown flag: exit 2" 2 $?
"$GAVEL" serve --max-connections-per-ip 0 >"$tmp/out" 2>&1
check "--max-connections-per-ip 0: exit 2" 2 $?
"$GAVEL" serve --policies "$POLICIES" --tls-dir "$tmp/tls" --listen 127.0.0.1:0 \
	--metrics-listen "" --client-ca-file "$tmp/none.crt" >"$tmp/out" 2>&1
check "missing client CA file: exit 2" 2 $?
contains "missing client CA file: says which file" "none.crt" "$tmp/out"
"$GAVEL" serve --policies "$POLICIES" --tls-dir "$tmp/tls" --listen 127.0.0.1:0 \
	--metrics-listen "" --client-ca-file "$tmp/san.ext" >"$tmp/out" 2>&1
check "client CA file without a certificate: exit 2" 2 $?
contains "client CA file without a certificate: says so" "no PEM certificate" "$tmp/out"

# ---- the server ----
"$GAVEL" serve --policies "$POLICIES" --tls-dir "$tmp/tls" --listen 127.0.0.1:0 \
	--metrics-listen 127.0.0.1:0 --namespace gavel >"$tmp/log" 2>&1 &
pid=$!
port=
for _ in $(seq 1 100); do
	port=$(sed -n 's/.*webhook listening on .* (port \([0-9]*\)), metrics on .* (port \([0-9]*\)).*/\1 \2/p' "$tmp/log")
	[ -n "$port" ] && break
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
if [ -z "$port" ]; then
	cat "$tmp/log"
	ko "server starts"
	pid=
	echo "$passed passed, $failed failed"
	exit 1
fi
mport=${port#* }
port=${port% *}
ok "server starts (port $port, metrics $mport)"
base=https://127.0.0.1:$port
C="curl -s --cacert $tmp/ca.crt --max-time 10"

# Port in use: a second server on the same port.
"$GAVEL" serve --policies "$POLICIES" --tls-dir "$tmp/tls" --listen 127.0.0.1:$port \
	--metrics-listen "" >"$tmp/out" 2>&1
check "port in use: exit 2" 2 $?
contains "port in use: one clear line" "Address already in use" "$tmp/out"

review() { # FILE UID POD_JSON [OPERATION]
	printf '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"%s","kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},"namespace":"shop","operation":"%s","userInfo":{"username":"alice"},"object":%s,"oldObject":null,"dryRun":false}}' \
		"$2" "${4:-CREATE}" "$3" >"$1"
}
review "$tmp/good.json" uid-good '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"shop","labels":{"team":"a"}},"spec":{"containers":[{"name":"web","image":"nginx:1.25"}]}}'
review "$tmp/bad.json" uid-bad '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"debug","namespace":"shop"},"spec":{"containers":[{"name":"c","image":"busybox:latest","securityContext":{"privileged":true}}]}}'
J="-H Content-Type:application/json"

# ---- routes ----
check "GET /healthz" "200 ok" "$($C -w '%{http_code}' -o "$tmp/b" $base/healthz; echo " $(cat "$tmp/b")")"
check "GET /readyz" 200 "$($C -o /dev/null -w '%{http_code}' $base/readyz)"
check "POST /validate allowed" 200 "$($C -o "$tmp/b" -w '%{http_code}' $J --data-binary @"$tmp/good.json" $base/validate)"
contains "allowed answer echoes the uid" '"uid":"uid-good","allowed":true' "$tmp/b"
check "POST /validate?timeout=10s (query ignored)" 200 "$($C -o "$tmp/b" -w '%{http_code}' $J --data-binary @"$tmp/bad.json" "$base/validate?timeout=10s")"
contains "violating Pod denied" '"allowed":false' "$tmp/b"
contains "denial message in Kyverno's format" 'resource Pod/shop/debug was blocked due to the following policies' "$tmp/b"
review "$tmp/warn.json" uid-warn '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"w","namespace":"shop","labels":{"team":"a"}},"spec":{"containers":[{"name":"web","image":"nginx:latest"}]}}'
$C -o "$tmp/b" $J --data-binary @"$tmp/warn.json" $base/validate
contains "allowed with an emitWarning warning" '"warnings":\["policy disallow-latest-tag.no-latest: the :latest tag is not allowed"\]' "$tmp/b"
check "unknown path: 404" 404 "$($C -o /dev/null -w '%{http_code}' $base/nope)"
check "GET /validate: 405" 405 "$($C -o /dev/null -w '%{http_code}' $base/validate)"
$C -D "$tmp/h" -o /dev/null $base/validate
contains "405 names the allowed method" 'Allow: POST' "$tmp/h"
check "POST /healthz: 405" 405 "$($C -o /dev/null -w '%{http_code}' -X POST $base/healthz)"
check "text/plain body: 415" 415 "$($C -o /dev/null -w '%{http_code}' -H 'Content-Type: text/plain' --data x $base/validate)"
check "no Content-Type: 415" 415 "$($C -o /dev/null -w '%{http_code}' -H 'Content-Type:' --data-binary @"$tmp/good.json" $base/validate)"
check "malformed JSON: 400" 400 "$($C -o "$tmp/b" -w '%{http_code}' $J --data '{"apiVersion": tru' $base/validate)"
contains "400 says why" 'malformed JSON: invalid token at line 1 column 16' "$tmp/b"
check "not an AdmissionReview: 400" 400 "$($C -o "$tmp/b" -w '%{http_code}' $J --data '{"kind":"Pod"}' $base/validate)"
head -c 4194304 /dev/zero | tr '\0' ' ' >"$tmp/big.json"
check "4 MiB body by Content-Length: 413" 413 "$($C -o /dev/null -w '%{http_code}' $J -H 'Expect:' --data-binary @"$tmp/big.json" $base/validate)"
check "4 MiB chunked body: 413" 413 "$($C -o /dev/null -w '%{http_code}' $J -H 'Transfer-Encoding: chunked' --data-binary @"$tmp/big.json" $base/validate)"
check "empty body: 400" 400 "$($C -o /dev/null -w '%{http_code}' $J --data '' $base/validate)"

# ---- keep-alive: several requests on one connection ----
$C -v $J --data-binary @"$tmp/good.json" $base/validate -o /dev/null \
	--next --cacert "$tmp/ca.crt" $J --data-binary @"$tmp/bad.json" $base/validate -o /dev/null \
	--next --cacert "$tmp/ca.crt" $base/healthz -o /dev/null 2>"$tmp/v"
check "keep-alive: one connection for three requests" 2 "$(grep -c 'Re-using existing connection' "$tmp/v")"

# ---- /validate-policy ----
printf '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"p1","kind":{"group":"kyverno.io","version":"v1","kind":"ClusterPolicy"},"operation":"CREATE","object":{"apiVersion":"kyverno.io/v1","kind":"ClusterPolicy","metadata":{"name":"bad"},"spec":{"rules":[{"name":"r","match":{"any":[{"resources":{"kinds":["Pod"]}}]},"validate":{"message":"{{request.userInfo.username}}","deny":{}}}]}}}}' >"$tmp/pol.json"
$C -o "$tmp/b" $J --data-binary @"$tmp/pol.json" $base/validate-policy
contains "validate-policy denies a policy that does not compile" 'only select variables are allowed in background mode' "$tmp/b"

# ---- TLS versions ----
echo | openssl s_client -connect 127.0.0.1:$port -tls1_1 -cipher 'DEFAULT@SECLEVEL=0' >"$tmp/s" 2>&1
if grep -q 'Cipher is (NONE)\|no protocols available\|alert protocol version\|wrong version number\|unsupported protocol' "$tmp/s"; then ok "TLS 1.1 refused"; else ko "TLS 1.1 refused" "$(grep -i 'protocol\|cipher' "$tmp/s" | head -3)"; fi
check "TLS 1.2 accepted" 200 "$($C --tlsv1.2 --tls-max 1.2 -o /dev/null -w '%{http_code}' $base/healthz)"
check "TLS 1.3 accepted" 200 "$($C --tlsv1.3 -o /dev/null -w '%{http_code}' $base/healthz)"
check "certificate verifies against the CA for IP 127.0.0.1" 0 "$($C -o /dev/null $base/healthz; echo $?)"

# ---- metrics (plain HTTP, separate port) ----
curl -s --max-time 10 http://127.0.0.1:$mport/metrics >"$tmp/m"
contains "metrics: requests counter" 'kyverno_admission_requests_total{resource_kind="Pod",resource_namespace="shop",resource_request_operation="create",request_allowed="false"} ' "$tmp/m"
contains "metrics: duration histogram" 'kyverno_admission_review_duration_seconds_bucket{' "$tmp/m"
contains "metrics: policy results" 'kyverno_policy_results_total{policy_validation_mode="enforce",policy_type="cluster",policy_background_mode="true",policy_namespace="-",policy_name="disallow-privileged",resource_kind="Pod",resource_namespace="shop",resource_request_operation="create",rule_name="no-privileged-containers",rule_result="fail",rule_type="validate",rule_execution_cause="admission_request",dry_run="false"} ' "$tmp/m"
contains "metrics: rule info" 'kyverno_policy_rule_info_total{policy_validation_mode="enforce",policy_type="cluster",policy_background_mode="true",policy_namespace="-",policy_name="disallow-privileged",rule_name="no-privileged-containers",rule_type="validate",status_ready="true"} 1' "$tmp/m"
check "metrics: unknown path 404" 404 "$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$mport/x)"
check "metrics port: GET /healthz" "200 ok" "$(curl -s --max-time 10 -w '%{http_code}' -o "$tmp/b" http://127.0.0.1:$mport/healthz; echo " $(cat "$tmp/b")")"
check "metrics port: GET /readyz" 200 "$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' http://127.0.0.1:$mport/readyz)"
check "metrics port: POST /healthz 405" 405 "$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' -X POST http://127.0.0.1:$mport/healthz)"

# ---- key pair reload ----
old=$(echo | openssl s_client -connect 127.0.0.1:$port 2>/dev/null | openssl x509 -noout -serial)
make_pair "$tmp/tls"
new=$(openssl x509 -noout -serial -in "$tmp/tls/tls.crt")
got=
for _ in $(seq 1 40); do
	got=$(echo | openssl s_client -connect 127.0.0.1:$port 2>/dev/null | openssl x509 -noout -serial)
	[ "$got" = "$new" ] && break
	sleep 0.25
done
if [ "$got" = "$new" ] && [ "$old" != "$new" ]; then ok "new key pair served after rotation"; else ko "new key pair served after rotation" "old $old new $new got $got"; fi
check "still serving after rotation" 200 "$($C -o /dev/null -w '%{http_code}' $J --data-binary @"$tmp/good.json" $base/validate)"

# ---- still alive after everything ----
check "server still serving" 200 "$($C -o /dev/null -w '%{http_code}' $base/healthz)"

# ---- client certificates and the per-address limit: a second server ----
# Client CA, a client certificate for TLS client use, one signed by another
# CA (the serving CA) and one for server use only.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=gavel-test-client-ca" \
	-keyout "$tmp/cca.key" -out "$tmp/cca.crt" 2>/dev/null
printf 'extendedKeyUsage=clientAuth\n' >"$tmp/client.ext"
printf 'extendedKeyUsage=serverAuth\n' >"$tmp/server.ext"
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=kube-apiserver" \
	-keyout "$tmp/cli.key" -out "$tmp/cli.csr" 2>/dev/null
openssl x509 -req -in "$tmp/cli.csr" -CA "$tmp/cca.crt" -CAkey "$tmp/cca.key" -CAcreateserial \
	-days 2 -extfile "$tmp/client.ext" -out "$tmp/cli.crt" 2>/dev/null
openssl x509 -req -in "$tmp/cli.csr" -CA "$tmp/ca.crt" -CAkey "$tmp/ca.key" -CAcreateserial \
	-days 2 -extfile "$tmp/client.ext" -out "$tmp/other.crt" 2>/dev/null
openssl x509 -req -in "$tmp/cli.csr" -CA "$tmp/cca.crt" -CAkey "$tmp/cca.key" -CAcreateserial \
	-days 2 -extfile "$tmp/server.ext" -out "$tmp/srvuse.crt" 2>/dev/null
"$GAVEL" serve --policies "$POLICIES" --tls-dir "$tmp/tls" --listen 127.0.0.1:0 --metrics-listen "" \
	--namespace gavel --client-ca-file "$tmp/cca.crt" --max-connections-per-ip 2 >"$tmp/log2" 2>&1 &
pid2=$!
cport=
for _ in $(seq 1 100); do
	cport=$(sed -n 's/.*webhook listening on .* (port \([0-9]*\)), standalone mode.*/\1/p' "$tmp/log2")
	[ -n "$cport" ] && break
	kill -0 "$pid2" 2>/dev/null || break
	sleep 0.1
done
if [ -z "$cport" ]; then
	ko "client CA server starts" "$(tail -n 3 "$tmp/log2")"
else
	ok "client CA server starts (port $cport)"
	cbase=https://127.0.0.1:$cport
	check "client auth: no certificate refused" 000 "$($C -o /dev/null -w '%{http_code}' $cbase/healthz)"
	check "client auth: no certificate refused (TLS 1.2)" 000 "$($C --tlsv1.2 --tls-max 1.2 -o /dev/null -w '%{http_code}' $cbase/healthz)"
	check "client auth: certificate from the client CA accepted" 200 "$($C --cert "$tmp/cli.crt" --key "$tmp/cli.key" -o "$tmp/b" -w '%{http_code}' $J --data-binary @"$tmp/good.json" $cbase/validate)"
	contains "client auth: review answered" '"uid":"uid-good","allowed":true' "$tmp/b"
	check "client auth: certificate from another CA refused" 000 "$($C --cert "$tmp/other.crt" --key "$tmp/cli.key" -o /dev/null -w '%{http_code}' $cbase/healthz)"
	check "client auth: certificate for server use only refused" 000 "$($C --cert "$tmp/srvuse.crt" --key "$tmp/cli.key" -o /dev/null -w '%{http_code}' $cbase/healthz)"

	# --max-connections-per-ip 2: two held connections, then a third is closed at once.
	# s_client -ign_eof keeps the connection open at the end of stdin; each is
	# waited for (handshake done) before the next, so that no probe takes its slot.
	hold() { # OUT: a held connection in the background, its pid in $held
		openssl s_client -ign_eof -connect 127.0.0.1:$cport -CAfile "$tmp/ca.crt" \
			-cert "$tmp/cli.crt" -key "$tmp/cli.key" </dev/null >"$1" 2>&1 &
		held=$!
		for _ in $(seq 1 100); do
			grep -q "Verify return code" "$1" 2>/dev/null && break
			sleep 0.1
		done
	}
	hold "$tmp/h1.out"
	h1=$held
	hold "$tmp/h2.out"
	h2=$held
	code=
	for _ in $(seq 1 30); do
		code=$($C --cert "$tmp/cli.crt" --key "$tmp/cli.key" -o /dev/null -w '%{http_code}' $cbase/healthz)
		[ "$code" = 000 ] && break
		sleep 0.2
	done
	if [ "$code" = 000 ]; then
		ok "per-address limit 2: a third connection refused"
	else
		alive=0
		for h in "$h1" "$h2"; do kill -0 "$h" 2>/dev/null && alive=$((alive + 1)); done
		ko "per-address limit 2: a third connection refused" "HTTP $code, $alive of 2 held connections open"
	fi
	kill "$h1" "$h2" 2>/dev/null
	wait "$h1" "$h2" 2>/dev/null
	code=
	for _ in $(seq 1 20); do
		code=$($C --cert "$tmp/cli.crt" --key "$tmp/cli.key" -o /dev/null -w '%{http_code}' $cbase/healthz)
		[ "$code" = 200 ] && break
		sleep 0.25
	done
	check "per-address limit 2: served again once they close" 200 "$code"
fi
if [ -n "$pid2" ]; then
	kill -TERM "$pid2"
	wait "$pid2"
	check "client CA server: SIGTERM, exit 0" 0 $?
	pid2=
fi

# ---- SIGTERM: stop accepting, finish the request in flight, exit 0 ----
pad=$(head -c 150000 /dev/zero | tr '\0' 'x')
review "$tmp/slow.json" uid-slow "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"web\",\"namespace\":\"shop\",\"labels\":{\"team\":\"a\"},\"annotations\":{\"pad\":\"$pad\"}},\"spec\":{\"containers\":[{\"name\":\"web\",\"image\":\"nginx:1.25\"}]}}"
$C -H 'Expect:' $J --limit-rate 60k --data-binary @"$tmp/slow.json" -o "$tmp/slow.out" -w '%{http_code}' $base/validate >"$tmp/slow.code" &
slow=$!
sleep 1
kill -TERM "$pid"
sleep 0.5
check "SIGTERM: new connections refused" 000 "$($C -m 2 -o /dev/null -w '%{http_code}' $base/healthz)"
wait "$slow"
check "SIGTERM: the request in flight is answered" 200 "$(cat "$tmp/slow.code")"
contains "SIGTERM: with its AdmissionReview" '"uid":"uid-slow","allowed":true' "$tmp/slow.out"
wait "$pid"
check "SIGTERM: exit 0" 0 $?
pid=
contains "SIGTERM: stopped cleanly" 'serve: stopped' "$tmp/log"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
