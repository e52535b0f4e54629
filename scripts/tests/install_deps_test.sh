#!/bin/sh
# install_deps_test.sh: scripts/install-deps.sh, run against stub tools (a
# PATH of our own: id, pkg-config, dpkg-query, apt-get and the commands the
# checks look for), so nothing is installed and the machine's own packages do
# not matter. Checks: the package list parses and covers the Makefile's
# pkg-config modules; what is missing is found (nothing, one library,
# everything); the dry run and the non-root run print the apt-get install line
# and install nothing; as root apt-get update and install run with exactly the
# missing packages, and a package still missing afterwards is an error; the
# callers use the script. Ends with "N passed, N failed".
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SCRIPT=$ROOT/scripts/install-deps.sh
SH=$(command -v sh)
CP=$(command -v cp)
passed=0
failed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ok() { passed=$((passed + 1)); echo "ok     $1"; }
ko() { failed=$((failed + 1)); echo "FAILED $1${2:+: $2}"; }
# check NAME WANT GOT
check() { if [ "$2" = "$3" ]; then ok "$1"; else ko "$1" "want [$2], got [$3]"; fi; }
# contains NAME REGEX FILE
contains() { if grep -q -- "$2" "$3"; then ok "$1"; else ko "$1" "no [$2] in $(head -c 300 "$3")"; fi; }

# stubs DIR UID: a fresh stub bin dir. pkg-config (once installed) fails for
# the modules listed in DIR/absent-modules; dpkg-query says "installed" for the
# packages listed in DIR/dpkg; apt-get logs its arguments to DIR/apt.log and,
# on install, installs pkg-config, cc and make (as stubs).
stubs() {
	d=$1
	rm -rf "$d"
	mkdir -p "$d/bin"
	: >"$d/absent-modules"
	: >"$d/dpkg"
	printf '#!%s\necho %s\n' "$SH" "$2" >"$d/bin/id"
	cat >"$d/bin/dpkg-query" <<EOF
#!$SH
for a; do p=\$a; done
while read -r l; do [ "\$l" = "\$p" ] && { printf 'install ok installed'; exit 0; }; done <"$d/dpkg"
exit 1
EOF
	cat >"$d/pkg-config.stub" <<EOF
#!$SH
for a; do
	while read -r m; do [ "\$a" = "\$m" ] && exit 1; done <"$d/absent-modules"
done
exit 0
EOF
	printf '#!%s\nexit 0\n' "$SH" >"$d/true.stub"
	cat >"$d/bin/apt-get" <<EOF
#!$SH
echo "\$*" >>"$d/apt.log"
case \$1 in
install)
	$CP "$d/pkg-config.stub" "$d/bin/pkg-config"
	$CP "$d/true.stub" "$d/bin/cc"
	$CP "$d/true.stub" "$d/bin/make"
	;;
esac
exit 0
EOF
	chmod +x "$d/bin/"* "$d/pkg-config.stub" "$d/true.stub"
}
# present DIR: every build tool there (pkg-config, cc, make, the files).
present() {
	files "$1"
	cp "$1/pkg-config.stub" "$1/bin/pkg-config"
	cp "$1/true.stub" "$1/bin/cc"
	cp "$1/true.stub" "$1/bin/make"
}
# files DIR: every file a file: check looks for, under DIR/root.
files() {
	for f in $(printf '%s\n' "$table" | grep -oE 'file:[^ ]+' | sed 's/^file://'); do
		mkdir -p "$1/root${f%/*}"
		: >"$1/root$f"
	done
}
# run DIR ARGS...: the script with PATH = DIR/bin only and file: checks under
# DIR/root; stdout, stderr and status in DIR/out, DIR/err, DIR/rc.
run() {
	d=$1
	shift
	rc=0
	PATH=$d/bin INSTALL_DEPS_SYSROOT=$d/root "$SH" "$SCRIPT" "$@" >"$d/out" 2>"$d/err" || rc=$?
	echo "$rc" >"$d/rc"
}
join() { tr '\n' ' ' | sed 's/ $//'; }

# ---- the list ----
all=$("$SH" "$SCRIPT" --list all | join)
lacking=
for p in libjansson-dev libcmocka-dev python3-yaml python3-jmespath curl clang golang-go; do
	case " $all " in
	*" $p "*) ;;
	*) lacking="$lacking $p" ;;
	esac
done
check "list: --list all has the build, test, e2e, fuzz and apiserver packages" "" "$lacking"
lines=$("$SH" "$SCRIPT" --list all)
bad=$(printf '%s\n' "$lines" | grep -cvE '^[a-z0-9][a-z0-9+.-]+$')
check "list: every name is a Debian package name" 0 "$bad"
check "list: each package once" "" "$(printf '%s\n' "$lines" | sort | uniq -d | join)"
build=$("$SH" "$SCRIPT" --list build | join)
check "list: the build group" \
	"build-essential pkg-config libjansson-dev libyaml-dev libpcre2-dev libssl-dev libcurl4-openssl-dev libmicrohttpd-dev libgnutls28-dev libjemalloc-dev" \
	"$build"
check "list: no group = build test e2e fuzz" "$("$SH" "$SCRIPT" --list build test e2e fuzz | join)" \
	"$("$SH" "$SCRIPT" --list | join)"
# Every pkg-config module the Makefile links (jemalloc for ./gavel, cmocka
# for the tests) is the pc: check of a build or test package.
mods=$(sed -n 's/^PKGS *:= *//p' "$ROOT/Makefile")
table=$(sed -n "/^PACKAGES='/,/^'/p" "$SCRIPT")
if [ -z "$mods" ] || [ -z "$table" ]; then
	ko "list: Makefile PKGS and PACKAGES found"
fi
uncovered=
for m in $mods jemalloc cmocka; do
	printf '%s\n' "$table" | grep -Eq "^[a-z0-9.+-]+ +[a-z,]*(build|test)[a-z,]* .*pc:$m( |\$)" ||
		uncovered="$uncovered $m"
done
check "list: the Makefile's pkg-config modules are checked ($mods jemalloc cmocka)" "" "$uncovered"
rc=0
"$SH" "$SCRIPT" nosuchgroup >/dev/null 2>&1 || rc=$?
check "an unknown group is a usage error" 2 "$rc"
sed 's/^pkg-config            build /# a comment line\npkg-config            bogus /' "$SCRIPT" >"$tmp/bad.sh"
rc=0
"$SH" "$tmp/bad.sh" --list >/dev/null 2>"$tmp/bad.err" || rc=$?
check "a line with an unknown group is an error (a comment line is not)" 2 "$rc"
contains "  ... and says which" "unknown group 'bogus'" "$tmp/bad.err"

# ---- nothing installed ----
d=$tmp/none
stubs "$d" 1000
INSTALL_DEPS_DRY_RUN=1 run "$d" build
check "dry run, nothing there: status 0" 0 "$(cat "$d/rc")"
check "dry run, nothing there: the apt-get line has the whole group" \
	"apt-get install -y --no-install-recommends $build" "$(sed -n 2p "$d/out")"
check "dry run installs nothing" "" "$(cat "$d/apt.log" 2>/dev/null)"
run "$d" build
check "not root, something missing: status 1" 1 "$(cat "$d/rc")"
check "not root: prints the exact apt-get install line" \
	"apt-get install -y --no-install-recommends $build" "$(tail -n 1 "$d/err")"
check "not root: runs no apt-get" "" "$(cat "$d/apt.log" 2>/dev/null)"

# ---- as root: installs, then checks again ----
d=$tmp/root
stubs "$d" 0
files "$d" # (apt-get's stub installs only the commands)
run "$d" build
check "root: status 0 once installed" 0 "$(cat "$d/rc")"
check "root: apt-get update, then install of the missing packages" \
	"update -qq|install -y -qq --no-install-recommends $build" "$(tr '\n' '|' <"$d/apt.log" | sed 's/|$//')"
# A package whose check still fails after the install is an error.
echo jansson >"$d/absent-modules"
rm -f "$d/bin/pkg-config" "$d/apt.log"
run "$d" build
check "root: still missing after apt-get install: status 1" 1 "$(cat "$d/rc")"
contains "  ... and names it" 'still missing after apt-get install: libjansson-dev$' "$d/err"

# ---- one library missing; everything there ----
d=$tmp/one
stubs "$d" 0
present "$d"
echo jansson >"$d/absent-modules"
INSTALL_DEPS_DRY_RUN=1 run "$d" build
check "one library missing: only its package" \
	"apt-get install -y --no-install-recommends libjansson-dev" "$(sed -n 2p "$d/out")"
: >"$d/absent-modules"
printf '%s\n' "$lines" >"$d/dpkg" # packages checked by dpkg's status
for c in $(printf '%s\n' "$table" | grep -oE 'cmd:[a-z0-9.+-]+' | sed 's/^cmd://' | sort -u); do
	[ -e "$d/bin/$c" ] || cp "$d/true.stub" "$d/bin/$c"
done
run "$d" build test e2e fuzz apiserver
check "everything there: status 0" 0 "$(cat "$d/rc")"
check "everything there: prints nothing" "" "$(cat "$d/out" "$d/err")"
check "everything there: runs no apt-get" "" "$(cat "$d/apt.log" 2>/dev/null)"

# ---- the callers ----
for f in Makefile .ci/run Dockerfile e2e/local/build-apiserver.sh; do
	contains "$f runs scripts/install-deps.sh" 'install-deps\.sh' "$ROOT/$f"
done
for f in .ci/run e2e/local/build-apiserver.sh; do
	check "$f has no apt-get install of its own" "" "$(grep -n 'apt-get install' "$ROOT/$f")"
done
# (the runtime stage installs the runtime libraries, not on the list)
check "the Dockerfile's build stage has no apt-get install of its own" "" \
	"$(sed -n '/ AS build$/,/^FROM /p' "$ROOT/Dockerfile" | grep -n 'apt-get install')"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
