#!/bin/sh
# The public header and every public macro compile warning-free under the
# strict warnings that demanding projects build with: as C99 and C11
# (tests/compile/uses-macros.c), and as C++11 and C++20
# (tests/compile/uses-api.cc), where the header's C casts and NULLs would
# otherwise be flagged.  A macro is checked only where it is expanded,
# hence the two files; every inline function's body is checked where it is
# parsed.  The C++ half is skipped without a C++ compiler.
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
echo "compile-strict: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
