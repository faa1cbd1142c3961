#!/bin/sh
# The examples build with the suite's compiler and flags (its sanitizers
# too) and do what they say: demo ends with its idr empty and no memory
# held; migrate gets the same IDs from the old API and the new one;
# readers' lockless readers never find a connection half-built or closed,
# and every connection closed is freed after a grace period.
O=${O:-build}
TEST_EXEC=${TEST_EXEC:-}
pass=0
fail=0
ok() { echo "PASS examples/$1"; pass=$((pass + 1)); }
ko() { echo "FAIL examples/$1: $2"; fail=$((fail + 1)); }

if ! make -s O="$O" "$O/examples/demo" "$O/examples/migrate" "$O/examples/readers" >/dev/null; then
	echo "examples: 0 passed, 1 failed"
	exit 1
fi

# Run example @1 and check that it exits 0 and that each pattern @2...
# (grep -E) matches a whole line of what it prints.
expect() {
	name=$1
	shift
	out=$($TEST_EXEC "$O/examples/$name" 2>&1)
	rc=$?
	missing=
	for re in "$@"; do
		printf '%s\n' "$out" | grep -qxE "$re" || missing="$missing '$re'"
	done
	if [ "$rc" -eq 0 ] && [ -z "$missing" ]; then
		ok "$name"
	else
		ko "$name" "exit status $rc (want 0), no line matching$missing in: $out"
	fi
}

expect demo "allocated 100000 sessions from 4 threads, 0 failures" \
	"destroyed: empty, 0 bytes left"
expect migrate "new API: 10000 IDs, no retry loop; same IDs: yes"
expect readers "readers: [0-9]+ lookups, [1-9][0-9]* found a connection, 0 saw one half-built or closed" \
	"writer: opened 200000 connections, closed 199142, 858 still open" \
	"freed after a grace period: 199142 of 199142 closed"
echo "examples: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
