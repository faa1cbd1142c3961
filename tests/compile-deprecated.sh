#!/bin/sh
# The deprecated names warn, name their replacement, and vanish under
# -DIDR_NO_DEPRECATED.  (C++: tests/compile-strict.sh.)
CC=${CC:-cc}
src=tests/compile/uses-old-api.c
pass=0
fail=0
ok() { echo "PASS compile-deprecated/$1"; pass=$((pass + 1)); }
ko() { echo "FAIL compile-deprecated/$1"; fail=$((fail + 1)); }

out=$($CC -std=c11 -Wall -Iinclude -c -o /dev/null $src 2>&1)
if [ $? -eq 0 ] && echo "$out" | grep -q "deprecated" && echo "$out" | grep -q "idr_preload" &&
   echo "$out" | grep -q "ida_alloc_range" && echo "$out" | grep -q "use ida_free"; then
	ok old_names_warn_and_name_the_replacement
else
	ko old_names_warn_and_name_the_replacement
fi
if $CC -std=c11 -Werror -Iinclude -DIDR_NO_DEPRECATED -c -o /dev/null $src 2>/dev/null; then
	ko old_names_vanish_under_IDR_NO_DEPRECATED
else
	ok old_names_vanish_under_IDR_NO_DEPRECATED
fi
echo "compile-deprecated: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
