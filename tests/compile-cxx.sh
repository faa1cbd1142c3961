#!/bin/sh
# The public header from C++: tests/compile/uses-api.cc, which expands
# every macro and inline function, links against libidr.a and checks what
# they do.  (That it compiles warning-free as C++11 and C++20, with and
# without the deprecated API, tests/compile-strict.sh checks, under
# stricter warnings.)  Skipped (no tests counted) without a C++ compiler.
# A cross build (scripts/cross-check.sh) passes its OBJCOPY, PKG_CONFIG
# and TEST_EXEC through make's environment.
O=${O:-build}
CC=${CC:-cc}
. tests/compile/cxx.sh
D=$O/cxx
src=tests/compile/uses-api.cc
pass=0
fail=0
ok() { echo "PASS compile-cxx/$1"; pass=$((pass + 1)); }
ko() { echo "FAIL compile-cxx/$1"; fail=$((fail + 1)); }

if ! command -v "$CXX" >/dev/null; then
	echo "SKIP compile-cxx: no C++ compiler ($CXX)"
	echo "compile-cxx: 0 passed, 0 failed"
	exit 0
fi
flags="-Wall -Wextra -Werror -pedantic -Iinclude"
# A library of its own, without the suite's sanitizer flags, which the C++
# link would otherwise have to repeat.
if ! make -s O="$D" CC="$CC" SANITIZE= "$D/libidr.a" >/dev/null ||
   ! $CXX -std=c++11 $flags -Wno-deprecated-declarations -o "$D/uses-api" $src "$D/libidr.a" \
	$(${PKG_CONFIG:-pkg-config} --libs liburcu-bp 2>/dev/null || echo -lurcu-bp -lurcu-common) -lpthread; then
	ko links_against_libidr
	echo "compile-cxx: $pass passed, $fail failed"
	exit 1
fi
out=$($TEST_EXEC "$D/uses-api") # TEST_EXEC: as in run-all.sh
rc=$?
printf '%s\n' "$out" | grep -v 'passed, .* failed$'
p=$(printf '%s\n' "$out" | sed -n -E 's/^compile-cxx: ([0-9]+) passed, ([0-9]+) failed$/\1/p')
f=$(printf '%s\n' "$out" | sed -n -E 's/^compile-cxx: ([0-9]+) passed, ([0-9]+) failed$/\2/p')
if [ -z "$p" ] || { [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; }; then
	ko "uses_api_ran_to_its_summary"
	p=0 f=0
fi
pass=$((pass + p))
fail=$((fail + f))
echo "compile-cxx: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
