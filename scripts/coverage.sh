#!/bin/sh
# Line coverage of the library by `make coverage`'s test run: each file's
# share of lines run, then every line no test ran, from the counters the
# tests left in $1/obj (a --coverage build).  Prints, changes nothing.
O=${1:-build/cov}
gcov -n -o "$O/obj" src/*.c 2>/dev/null |
	awk '/^File .src\// { f = substr($2, 2, length($2) - 2) }
	     /^Lines executed:/ && f { printf "%-20s %s\n", f, substr($0, 16); f = "" }'
echo
echo "Lines no test ran:"
for src in src/*.c; do
	gcov -t -o "$O/obj" "$src" 2>/dev/null |
		awk -v file="$src" '
		/^ *-: *0:Source:/ { this = substr($0, index($0, "Source:") + 7) }
		this == file && /^ *#####:/ {
			n = split($0, part, ":")
			line = part[2] + 0
			text = substr($0, index($0, part[3]))
			printf "%s:%d:%s\n", file, line, text
		}'
done
