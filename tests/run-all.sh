#!/bin/sh
# Run every test binary named on the command line (from $O/tests), optionally
# under valgrind, and sum their "N passed, N failed" lines.  A binary that
# dies before printing its summary counts as one failure.
O=${O:-build}
total_pass=0
total_fail=0
# The shell tests run make themselves.  `make check` is not a recursive
# rule (so `make -n check` runs nothing), so make closes its jobserver's
# descriptors before this script, and an inner make that still found the
# jobserver named in MAKEFLAGS would warn that it is unavailable: drop it
# and the -j that goes with it (the variables after " -- " stay as they
# are); the inner makes build at -j1.
flags=${MAKEFLAGS:-}
vars=
case $flags in *" -- "*) vars=" -- ${flags#* -- }"; flags=${flags%% -- *} ;; esac
MAKEFLAGS=$(printf '%s\n' "$flags" | sed -E 's/(^| )--jobserver-(auth|fds)=[^ ]*//g; s/(^| )-j[0-9]*//g')$vars
export MAKEFLAGS
for t in "$@"; do
	if [ -f "tests/$t.sh" ]; then
		out=$(sh "tests/$t.sh" 2>&1)
	elif [ -n "$VALGRIND" ]; then
		# --fair-sched=yes: valgrind runs one thread at a time, and its
		# default lock let a spinning reader in run-rcu re-take it
		# every time, so a thread just created never ran and the test
		# hung (seen on this project's CI machine, old code and new).
		out=$(IDR_TEST_QUICK=1 IDR_TEST_VALGRIND=1 valgrind -q --fair-sched=yes --error-exitcode=99 --leak-check=full \
			--errors-for-leak-kinds=definite --show-leak-kinds=definite "$O/tests/$t" 2>&1)
	else
		# TEST_EXEC: an emulator for a cross build (qemu-aarch64 ...).
		out=$($TEST_EXEC "$O/tests/$t" 2>&1)
	fi
	rc=$?
	printf '%s\n' "$out" | grep -v '^PASS ' | grep -v 'passed, .* failed$'
	summary=$(printf '%s\n' "$out" | grep -E '^[^ ]+: [0-9]+ passed, [0-9]+ failed$' | tail -n 1)
	if [ -z "$summary" ]; then
		echo "FAIL $t: exited with status $rc before its summary"
		total_fail=$((total_fail + 1))
		continue
	fi
	p=$(echo "$summary" | sed -E 's/.*: ([0-9]+) passed.*/\1/')
	f=$(echo "$summary" | sed -E 's/.* ([0-9]+) failed$/\1/')
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "FAIL $t: exited with status $rc (valgrind or sanitizer errors above)"
		f=1
	fi
	echo "$summary"
	total_pass=$((total_pass + p))
	total_fail=$((total_fail + f))
done
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
