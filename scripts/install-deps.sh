#!/bin/sh
# install-deps.sh [GROUP...]: installs the Debian packages gavel needs that
# are missing. The one list of them is PACKAGES below; `make demo`, `make
# test`, .ci/run, the Dockerfile's build stage and e2e/local/build-apiserver.sh
# all come here.
#
#   sh scripts/install-deps.sh                   build test e2e fuzz (a developer's set)
#   sh scripts/install-deps.sh build             only what `make` needs (the Dockerfile)
#   sh scripts/install-deps.sh all               every group
#   sh scripts/install-deps.sh --list [GROUP...] the packages of the groups, one a line
#
# Groups: build (make), test (make test's own tools), e2e (the end-to-end
# suites and make demo), fuzz (make fuzz), apiserver (building kube-apiserver
# from Debian's source, e2e/local/build-apiserver.sh).
#
# Each package is checked cheaply first (a command on PATH, a pkg-config
# module, a file; dpkg's status when the line names none):
# when everything is there nothing else runs, apt included. Otherwise, as
# root: apt-get update and apt-get install of the missing packages. Not root:
# prints the apt-get install line to run and exits 1.
#
# INSTALL_DEPS_DRY_RUN=1: prints what is missing and the apt-get install line,
# installs nothing, exits 0. INSTALL_DEPS_SYSROOT=DIR: file: checks look
# under DIR (scripts/tests/install_deps_test.sh).
# Exit status: 0 when nothing is missing (or it was installed), 1 when
# something is missing and could not be installed, 2 on a usage error.
set -eu

# One package a line: NAME GROUPS [CHECK...]. GROUPS is a comma-separated
# list. A CHECK is cmd:NAME (on PATH), pc:MODULE (pkg-config --exists) or
# file:PATH (exists); the package is there when all of its checks pass; with
# none, when dpkg says it is installed. Lines starting with # are comments.
# Adding a package: one line here.
PACKAGES='
build-essential       build             cmd:cc cmd:make file:/usr/include/stdio.h
pkg-config            build             cmd:pkg-config
libjansson-dev        build             pc:jansson
libyaml-dev           build             pc:yaml-0.1
libpcre2-dev          build             pc:libpcre2-8
libssl-dev            build             pc:libssl pc:libcrypto
libcurl4-openssl-dev  build             pc:libcurl
libmicrohttpd-dev     build             pc:libmicrohttpd
libgnutls28-dev       build             pc:gnutls
libjemalloc-dev       build             pc:jemalloc
libcmocka-dev         test              pc:cmocka
shellcheck            test              cmd:shellcheck
clang-format          test              cmd:clang-format
python3-yaml          test              file:/usr/lib/python3/dist-packages/yaml/__init__.py
python3-jmespath      test              file:/usr/lib/python3/dist-packages/jmespath/__init__.py
curl                  e2e               cmd:curl
openssl               e2e               cmd:openssl
ca-certificates       e2e
jq                    e2e,apiserver     cmd:jq
iproute2              e2e               cmd:ss cmd:ip
docker-registry       e2e               cmd:docker-registry
python3               e2e               cmd:python3
clang                 fuzz              cmd:clang
libclang-rt-14-dev    fuzz
golang-go             apiserver         file:/usr/lib/go/bin/go
rsync                 apiserver         cmd:rsync
make                  apiserver         cmd:make
dpkg-dev              apiserver         cmd:dpkg-source
patch                 apiserver         cmd:patch
'
GROUPS_ALL='build test e2e fuzz apiserver'
GROUPS_DEFAULT='build test e2e fuzz'

me=install-deps
die() {
	printf '%s: %s\n' "$me" "$*" >&2
	exit 2
}

# has CHECK: true when the check passes.
has() {
	case $1 in
	cmd:*) command -v "${1#cmd:}" >/dev/null 2>&1 ;;
	pc:*) pkg-config --exists "${1#pc:}" >/dev/null 2>&1 ;;
	file:*) [ -e "${INSTALL_DEPS_SYSROOT:-}${1#file:}" ] ;;
	*) return 1 ;;
	esac
}

# dpkg_installed PACKAGE
dpkg_installed() {
	case $(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) in
	*'install ok installed') return 0 ;;
	*) return 1 ;;
	esac
}

want_list=
dry=${INSTALL_DEPS_DRY_RUN:-0}
if [ "${1:-}" = --list ]; then
	want_list=1
	shift
fi
groups=
for g in "$@"; do
	case $g in
	all) groups="$groups $GROUPS_ALL" ;;
	-h | --help)
		sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'
		exit 0
		;;
	-*) die "unknown option $g (see --help)" ;;
	*)
		case " $GROUPS_ALL " in
		*" $g "*) groups="$groups $g" ;;
		*) die "unknown group $g (groups: $GROUPS_ALL)" ;;
		esac
		;;
	esac
done
[ -n "$groups" ] || groups=$GROUPS_DEFAULT

# scan: reads PACKAGES, checks each line's shape (a malformed line is an
# error whatever the groups asked), keeps the packages of the groups asked
# (each once) in $list and, unless listing, the missing ones in $missing.
nl='
'
scan() {
	list=
	missing=
	oldifs=$IFS
	IFS=$nl
	for line in $PACKAGES; do
		IFS=$oldifs
		case $line in
		'#'*) continue ;;
		esac
		# shellcheck disable=SC2086 # the line is a word list
		set -- $line
		[ $# -ge 2 ] || die "PACKAGES: no groups in line '$line'"
		pkg=$1
		rest=$2,
		shift 2
		case $pkg in
		[a-z0-9]*[a-z0-9+.-]) ;;
		*) die "PACKAGES: '$pkg' is not a Debian package name" ;;
		esac
		case $pkg in
		*[!a-z0-9+.-]*) die "PACKAGES: '$pkg' is not a Debian package name" ;;
		esac
		for c in "$@"; do
			case $c in
			cmd:?* | pc:?* | file:/?*) ;;
			*) die "PACKAGES: $pkg: unknown check '$c'" ;;
			esac
		done
		wanted=
		while [ -n "$rest" ]; do
			g=${rest%%,*}
			rest=${rest#*,}
			case " $GROUPS_ALL " in
			*" $g "*) ;;
			*) die "PACKAGES: $pkg: unknown group '$g'" ;;
			esac
			case " $groups " in
			*" $g "*) wanted=1 ;;
			esac
		done
		case " $list " in
		*" $pkg "*) wanted= ;;
		esac
		if [ -n "$wanted" ]; then
			list="$list $pkg"
			if [ -z "$want_list" ]; then
				there=1
				if [ $# -eq 0 ]; then
					dpkg_installed "$pkg" || there=
				else
					for c in "$@"; do
						has "$c" || there=
					done
				fi
				[ -n "$there" ] || missing="$missing $pkg"
			fi
		fi
		IFS=$nl
	done
	IFS=$oldifs
	list=${list# }
	missing=${missing# }
}
scan

if [ -n "$want_list" ]; then
	for p in $list; do
		printf '%s\n' "$p"
	done
	exit 0
fi

groups=${groups# }
[ -n "$missing" ] || exit 0
line="apt-get install -y --no-install-recommends $missing"
if [ "$dry" = 1 ]; then
	printf '%s: missing (%s): %s\n' "$me" "$groups" "$missing"
	printf '%s\n' "$line"
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	printf '%s: missing Debian packages (%s): %s\n' "$me" "$groups" "$missing" >&2
	printf '%s: as root, run:\n' "$me" >&2
	printf '%s\n' "$line" >&2
	exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
	printf '%s: missing (%s): %s; no apt-get here: install them (Debian names) and retry\n' \
		"$me" "$groups" "$missing" >&2
	exit 1
fi
printf '%s: installing (%s): %s\n' "$me" "$groups" "$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq || {
	printf '%s: apt-get update failed\n' "$me" >&2
	exit 1
}
# shellcheck disable=SC2086 # a word list
apt-get install -y -qq --no-install-recommends $missing >/dev/null || {
	printf '%s: failed: %s\n' "$me" "$line" >&2
	exit 1
}
# The same checks again: a package whose check still fails (a wrong line in
# PACKAGES, a broken install) is an error, not a silent pass.
scan
if [ -n "$missing" ]; then
	printf '%s: still missing after apt-get install: %s\n' "$me" "$missing" >&2
	exit 1
fi
