#!/bin/sh
# Modules point one way (DESIGN.md): every #include "dir/..." of a module's
# sources (dir/*.c, dir/*.h, engine/cel/ counts as engine) names the module
# itself or one of a lower layer:
#
#   cmd -> admission, background, certs -> view -> kube, engine -> common
#
# Nothing sideways (admission and background never include each other,
# kube and engine neither) and nothing upwards. Tests, benchmarks and fuzz
# targets (dir/tests, dir/bench, dir/fuzz) link the whole library and are
# not checked. One check per source file; ends with "N passed, N failed".
cd "$(dirname "$0")/.." || exit 1

layer() {
	case $1 in
	cmd) echo 5 ;;
	admission | background | certs) echo 4 ;;
	view) echo 3 ;;
	kube | engine) echo 2 ;;
	common) echo 1 ;;
	*) echo 0 ;;
	esac
}

pass=0
fail=0
for f in $(git ls-files -co --exclude-standard '*.c' '*.h' | grep -Ev '/(tests|bench|fuzz)/'); do
	mod=${f%%/*}
	ml=$(layer "$mod")
	[ "$ml" -gt 0 ] || continue
	bad=
	# shellcheck disable=SC2013 # include paths hold no spaces
	for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
		case $inc in */*) ;; *) continue ;; esac
		im=${inc%%/*}
		[ "$im" = "$mod" ] && continue
		il=$(layer "$im")
		if [ "$il" -eq 0 ] || [ "$il" -ge "$ml" ]; then
			bad="$bad $inc"
		fi
	done
	if [ -n "$bad" ]; then
		echo "FAIL $f includes$bad ($mod may include only lower layers: cmd -> admission, background, certs -> view -> kube, engine -> common)"
		fail=$((fail + 1))
	else
		pass=$((pass + 1))
	fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
