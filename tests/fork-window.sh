#!/bin/sh
# tests/hooks/fork-window.c against a library built with -DIDR_TEST_HOOKS,
# whose hook holds a thread inside the window a fork must not land in.
O=${O:-build}
CC=${CC:-cc}
D=$O/hooks
if ! make -s O="$D" CC="$CC" SANITIZE= CFLAGS=-DIDR_TEST_HOOKS "$D/libidr.a" >/dev/null ||
   ! $CC -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Iinclude -o "$D/fork-window" \
	tests/hooks/fork-window.c "$D/libidr.a" \
	$(pkg-config --libs liburcu-bp 2>/dev/null || echo -lurcu-bp -lurcu-common) -lpthread; then
	echo "fork-window: 0 passed, 1 failed"
	exit 1
fi
"$D/fork-window"
