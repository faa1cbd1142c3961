#!/bin/sh
# The programs in tests/hooks/, each against a library built with
# -DIDR_TEST_HOOKS (src/internal.h), whose hooks let a test hold a thread
# inside a window (fork-window.c) or answer the lock's membarrier() calls
# (membarrier.c).  Runs them through run-all.sh (never under valgrind: the
# window is held for a set time) and prints their sum as its own.
O=${O:-build}
CC=${CC:-cc}
D=$O/hooks
LIBS=$(${PKG_CONFIG:-pkg-config} --libs liburcu-bp 2>/dev/null || echo -lurcu-bp -lurcu-common)
if ! make -s O="$D" CC="$CC" SANITIZE= CFLAGS=-DIDR_TEST_HOOKS "$D/libidr.a" >/dev/null ||
   ! mkdir -p "$D/tests"; then
	echo "hooks: 0 passed, 1 failed"
	exit 1
fi
names=
unbuilt=0
for src in tests/hooks/*.c; do
	name=$(basename "$src" .c)
	# A program on the tests' harness (a TEST() per test) links it.
	harness=
	grep -q '"testutil.h"' "$src" && harness="-Itests tests/testutil.c"
	if $CC -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Iinclude -o "$D/tests/$name" \
		"$src" $harness "$D/libidr.a" $LIBS -lpthread; then
		names="$names $name"
	else
		echo "FAIL $name: does not build"
		unbuilt=$((unbuilt + 1))
	fi
done
out=$(O=$D VALGRIND= sh tests/run-all.sh $names)
printf '%s\n' "$out" | sed '$d'
total=$(printf '%s\n' "$out" | tail -n 1)
pass=${total%% passed*}
fail=${total##*, }
fail=$((${fail%% failed} + unbuilt))
echo "hooks: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
