#!/bin/sh
# The checks of an IDR_DEBUG build: each misuse in tests/debug/misuse.c is
# reported through the diagnostic hook and aborts; correct use stays silent.
O=${O:-build}
CC=${CC:-cc}
# A cross build's pkg-config and emulator (scripts/cross-check.sh).
PKG_CONFIG=${PKG_CONFIG:-pkg-config}
TEST_EXEC=${TEST_EXEC:-}
D=$O/debug
pass=0
fail=0
ok() { echo "PASS debug-build/$1"; pass=$((pass + 1)); }
ko() { echo "FAIL debug-build/$1: $2"; fail=$((fail + 1)); }

if ! make -s O="$D" CC="$CC" SANITIZE= CFLAGS=-DIDR_DEBUG "$D/libidr.a" >/dev/null ||
   ! $CC -std=c11 -Wall -Werror -Iinclude -o "$D/misuse" tests/debug/misuse.c \
	"$D/libidr.a" $($PKG_CONFIG --libs liburcu-bp) -lpthread; then
	echo "debug-build: 0 passed, 1 failed"
	exit 1
fi

expect_abort() {
	# (the braces keep the shell's own "Aborted" notice out of the log)
	{ err=$($TEST_EXEC "$D/misuse" "$1" 2>&1 >/dev/null); rc=$?; } 2>/dev/null
	if [ "$rc" -ne 134 ]; then
		ko "$1" "exit status $rc, want 134 (SIGABRT)"
	elif ! printf '%s\n' "$err" | grep -q "$2"; then
		ko "$1" "no diagnostic matching '$2' (got: $err)"
	else
		ok "$1"
	fi
}

expect_abort overlapping-writers "libidr: idr_remove: two writers inside one idr"
expect_abort unmatched-preload-end "libidr: idr_preload_end: called without"
err=$($TEST_EXEC "$D/misuse" correct 2>&1)
if [ $? -eq 0 ] && [ -z "$err" ]; then ok correct_use_is_silent; else ko correct_use_is_silent "$err"; fi
echo "debug-build: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
