#!/bin/sh
# The programs in tests/hooks/, each against a library built with
# -DIDR_TEST_HOOKS (src/internal.h), whose hooks let a test hold a thread
# inside a window (fork-window.c) or answer the lock's membarrier() calls
# (membarrier.c).  Prints each program's results, then their sum.
O=${O:-build}
CC=${CC:-cc}
D=$O/hooks
LIBS=$(pkg-config --libs liburcu-bp 2>/dev/null || echo -lurcu-bp -lurcu-common)
pass=0
fail=0
if ! make -s O="$D" CC="$CC" SANITIZE= CFLAGS=-DIDR_TEST_HOOKS "$D/libidr.a" >/dev/null; then
	echo "hooks: 0 passed, 1 failed"
	exit 1
fi
for src in tests/hooks/*.c; do
	name=$(basename "$src" .c)
	if ! $CC -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Iinclude -o "$D/$name" \
		"$src" "$D/libidr.a" $LIBS -lpthread; then
		echo "FAIL $name: does not build"
		fail=$((fail + 1))
		continue
	fi
	out=$("$D/$name" 2>&1)
	rc=$?
	printf '%s\n' "$out" | grep -v 'passed, .* failed$'
	summary=$(printf '%s\n' "$out" | grep -E "^$name: [0-9]+ passed, [0-9]+ failed$" | tail -n 1)
	if [ -z "$summary" ]; then
		echo "FAIL $name: exited with status $rc before its summary"
		fail=$((fail + 1))
		continue
	fi
	p=$(echo "$summary" | sed -E 's/.*: ([0-9]+) passed.*/\1/')
	f=$(echo "$summary" | sed -E 's/.* ([0-9]+) failed$/\1/')
	[ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
	pass=$((pass + p))
	fail=$((fail + f))
done
echo "hooks: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
