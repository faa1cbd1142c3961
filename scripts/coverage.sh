#!/bin/sh
# Line coverage of the library by `make coverage`'s test run: each file's
# share of lines run, then every line no test ran, from the counters the
# tests left in $1/obj (a --coverage build).  Prints, changes nothing.
#
# One gcov pass: each object's annotated sources, its headers' included
# (internal.h, and idr.h, whose inline fast paths the library runs too).
# A header's line counts as run if any object ran it, and as code if any
# object compiled it.
O=${1:-build/cov}
for src in src/*.c; do
	gcov -t -o "$O/obj" "$src" 2>/dev/null
done | awk '
	/^ *-: *0:Source:/ { file = substr($0, index($0, "Source:") + 7); next }
	file !~ /^(src|include)\// { next }
	{
		n = split($0, part, ":")
		if (n < 3)
			next
		count = part[1]
		gsub(/[ *]/, "", count)
		line = part[2] + 0
		if (count == "-" || line == 0)
			next
		key = file ":" line
		if (!(key in code)) {
			code[key] = substr($0, index($0, part[3]))
			lines[file]++
		}
		if (count != "#####" && count != "=====" && !(key in run)) {
			run[key] = 1
			ran[file]++
		}
	}
	END {
		for (f in lines)
			printf "S %-20s %.2f%% of %d\n", f, 100 * ran[f] / lines[f], lines[f]
		for (k in code)
			if (!(k in run))
				printf "U %s:%s\n", k, code[k]
	}' > "${TMPDIR:-/tmp}/coverage.$$"
grep '^S ' "${TMPDIR:-/tmp}/coverage.$$" | cut -c3- | sort
# The test programs link the objects from an archive, which brings in no
# object that nothing calls: resident.c's constructor is in libidr.a's
# single object and libidr.so, which the shell tests exercise.
echo "(src/resident.c runs in libidr.so and libidr.a only: tests/install.sh)"
echo
echo "Lines no test ran:"
grep '^U ' "${TMPDIR:-/tmp}/coverage.$$" | cut -c3- | sort -t: -k1,1 -k2,2n
rm -f "${TMPDIR:-/tmp}/coverage.$$"
