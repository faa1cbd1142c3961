#!/bin/sh
# The documentation says what the code does: each man page's SYNOPSIS
# declares what idr.h declares, and every test the documents cite as a
# promise's proof (`program/test_name`) exists.
CC=${CC:-cc}
pass=0
fail=0
ok() { echo "PASS docs/$1"; pass=$((pass + 1)); }
ko() { echo "FAIL docs/$1: $2"; fail=$((fail + 1)); }

# A prototype in a SYNOPSIS is repeated after the header, where any
# difference from the header's declaration is a conflicting redeclaration;
# any other name a SYNOPSIS shows (a macro, or a call such as
# idr_init_flags(&idr, ...)) must be one the header defines.
proto='^[a-z_0-9 ]+[ *][a-z_0-9]+\(.*\);$'
synopses=$(for m in man/*.3; do
	sed -n '/^\.SH SYNOPSIS/,/^\.SH [^S]/s/^\.B \([^#].*\)$/\1/p' "$m"
done)
src=${TMPDIR:-/tmp}/idr-synopses.$$.c
{
	echo '#include <idr.h>'
	printf '%s\n' "$synopses" | grep -E "$proto"
	printf '%s\n' "$synopses" | grep -vE "$proto" |
		sed -n 's/^\(struct idr name = \)\{0,1\}\([A-Za-z_0-9]*\)(.*/\2/p' | sort -u |
		while read -r name; do
			printf '#ifndef %s\nextern __typeof__(%s) *synopsis_%s;\n#endif\n' \
				"$name" "$name" "$name"
		done
} >"$src"
lines=$(printf '%s\n' "$synopses" | wc -l)
if err=$($CC -std=gnu11 -Wall -Wextra -Werror -Iinclude -fsyntax-only "$src" 2>&1) &&
   [ "$lines" -gt 50 ]; then
	ok man_page_synopses_match_the_header
else
	ko man_page_synopses_match_the_header "$lines synopsis lines; $err"
fi
rm -f "$src"

# A C test is TEST(name) in tests/program.c; a shell test's name stands in
# tests/program.sh.
cited=$(cat README.md docs/*.md bench/README.md fuzz/README.md man/*.3 |
	grep -o '`[a-z-]*/[a-z_0-9-]*`' | tr -d '`' | sort -u)
checked=0
unknown=""
for t in $cited; do
	prog=${t%%/*}
	name=${t#*/}
	if [ -f "tests/$prog.c" ]; then
		grep -q "^TEST($name)" "tests/$prog.c" || unknown="$unknown $t"
	elif [ -f "tests/$prog.sh" ]; then
		grep -qw -- "$name" "tests/$prog.sh" || unknown="$unknown $t"
	else
		continue # a path, not a test
	fi
	checked=$((checked + 1))
done
if [ -z "$unknown" ] && [ "$checked" -gt 40 ]; then
	ok documents_cite_only_tests_that_exist
else
	ko documents_cite_only_tests_that_exist "$checked cited; no such test:$unknown"
fi
echo "docs: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
