#!/bin/sh
# The public header and every public macro compile warning-free under the
# strict warnings that demanding projects build with: as C99 and C11
# (tests/compile/uses-macros.c), and as C++11 and C++20
# (tests/compile/uses-api.cc), where the header's C casts and NULLs would
# otherwise be flagged.  A macro is checked only where it is expanded,
# hence the two files; every inline function's body is checked where it is
# parsed.  The C++ half is skipped without a C++ compiler.  Last, the man
# pages' synopses are checked against the header.
CC=${CC:-cc}
. tests/compile/cxx.sh
pass=0
fail=0
ok() { echo "PASS compile-strict/$1"; pass=$((pass + 1)); }
ko() { echo "FAIL compile-strict/$1"; fail=$((fail + 1)); }

common="-Wall -Wextra -Werror -pedantic -Wshadow -Wcast-qual -Wconversion
	-Wsign-conversion -Wundef -Wredundant-decls -Iinclude -fsyntax-only"
cflags="$common -Wstrict-prototypes -Wmissing-prototypes -Wold-style-definition"
cxxflags="$common -Wold-style-cast -Wzero-as-null-pointer-constant"
for std in c99 c11; do
	if $CC -std=$std $cflags tests/compile/uses-macros.c; then
		ok "header_and_macros_compile_with_strict_warnings_as_$std"
	else
		ko "header_and_macros_compile_with_strict_warnings_as_$std"
	fi
done
if command -v "$CXX" >/dev/null; then
	for std in c++11 c++20; do
		# With the deprecated API and without it.
		if $CXX -std=$std $cxxflags -Wno-deprecated-declarations tests/compile/uses-api.cc &&
		   $CXX -std=$std $cxxflags -DIDR_NO_DEPRECATED tests/compile/uses-api.cc; then
			ok "header_and_macros_compile_with_strict_warnings_as_$std"
		else
			ko "header_and_macros_compile_with_strict_warnings_as_$std"
		fi
	done
fi

# Each man page's SYNOPSIS says what idr.h declares: a prototype there is
# repeated after the header, where any difference from the header's is a
# conflicting redeclaration; any other name it shows (a macro, or a call
# such as idr_init_flags(&idr, ...)) must be one the header defines.
synopses() {
	for m in man/*.3; do
		sed -n '/^\.SH SYNOPSIS/,/^\.SH [^S]/s/^\.B \([^#].*\)$/\1/p' "$m"
	done
}
{
	echo '#include <idr.h>'
	synopses | grep -E '^[a-z_0-9 ]+[ *][a-z_0-9]+\(.*\);$'
	synopses | grep -vE '^[a-z_0-9 ]+[ *][a-z_0-9]+\(.*\);$' |
		sed -n 's/^\(struct idr name = \)\{0,1\}\([A-Za-z_0-9]*\)(.*/\2/p' | sort -u |
		while read -r name; do
			printf '#ifndef %s\nextern __typeof__(%s) *synopsis_%s;\n#endif\n' \
				"$name" "$name" "$name"
		done
} > "${TMPDIR:-/tmp}/idr-synopses.$$.c"
if [ "$(synopses | wc -l)" -gt 50 ] &&
   $CC -std=gnu11 -Wall -Wextra -Werror -Iinclude -fsyntax-only "${TMPDIR:-/tmp}/idr-synopses.$$.c"; then
	ok man_page_synopses_match_the_header
else
	ko man_page_synopses_match_the_header
fi
rm -f "${TMPDIR:-/tmp}/idr-synopses.$$.c"
echo "compile-strict: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
