#!/bin/sh
# What `make install` gives a user: after a plain `make`, an install to
# another PREFIX (and under DESTDIR) carries a pkg-config file naming that
# PREFIX; a program built with `pkg-config --cflags --libs idr`, shared or
# static, runs the seed workflow, and so do one built with CMake's
# find_package(idr) and a dlopen()ed plugin built with the header (which
# may be dlclose()d while its threads go on, linked with libidr.so or
# libidr.a); such a
# program needs libidr's symbol version node and will not start on a
# library without it; every documented function has a man page and is
# exported, libidr.so exports exactly the names (and version nodes) of
# tests/install-symbols.txt, and nothing unprefixed is exported by
# libidr.so or libidr.a (whose internal names cannot clash with a
# program's); libidr.so's calls to its own functions do not go through its
# PLT; a packager's CPPFLAGS, CFLAGS and LDFLAGS reach the build; `make
# uninstall` leaves no file behind.
O=${O:-build}
CC=${CC:-cc}
# A cross build (scripts/cross-check.sh) names the target's tools and its
# pkg-config, and runs the programs with TEST_EXEC (an emulator).
NM=${NM:-nm}
OBJDUMP=${OBJDUMP:-objdump}
PKG_CONFIG=${PKG_CONFIG:-pkg-config}
TEST_EXEC=${TEST_EXEC:-}
D=$O/install-test
pass=0
fail=0
ok() { echo "PASS install/$1"; pass=$((pass + 1)); }
ko() { echo "FAIL install/$1: $2"; fail=$((fail + 1)); }
# make, quietly, in this test's own build of the library (no sanitizer).
mk() { make -s O="$D" CC="$CC" SANITIZE= "$@" >/dev/null; }

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
P=$tmp/prefix

# The library as a user's first `make` leaves it, with the default PREFIX.
if ! mk all; then
	echo "install: 0 passed, 1 failed"
	exit 1
fi

mk install PREFIX="$P"
if grep -qx "prefix=$P" "$P/lib/pkgconfig/idr.pc" 2>/dev/null; then
	ok pc_file_names_the_install_prefix
else
	ko pc_file_names_the_install_prefix "$(grep prefix= "$P/lib/pkgconfig/idr.pc" 2>&1)"
fi

mk install PREFIX=/opt/idr DESTDIR="$tmp/stage"
if grep -qx "prefix=/opt/idr" "$tmp/stage/opt/idr/lib/pkgconfig/idr.pc" 2>/dev/null &&
   [ -f "$tmp/stage/opt/idr/include/idr.h" ]; then
	ok destdir_stages_without_changing_the_prefix
else
	ko destdir_stages_without_changing_the_prefix "see $tmp/stage"
fi

cat > "$tmp/app.c" <<'EOF'
#include <idr.h>
#include <stdio.h>

int main(void)
{
	static int obj;
	DEFINE_IDR(h);

	idr_preload(IDR_GFP_KERNEL);
	idr_lock(&h);
	int id = idr_alloc(&h, &obj, 1, 0, IDR_GFP_NOWAIT);
	idr_unlock(&h);
	idr_preload_end();
	printf("%d %d\n", id, idr_find(&h, (unsigned long)id) == &obj);
	idr_destroy(&h);
	return 0;
}
EOF
export PKG_CONFIG_PATH="$P/lib/pkgconfig"
if $CC -std=c11 -Wall -Werror -o "$tmp/app" "$tmp/app.c" $($PKG_CONFIG --cflags --libs idr) &&
   [ "$(LD_LIBRARY_PATH="$P/lib" $TEST_EXEC "$tmp/app")" = "1 1" ] &&
   readelf -d "$tmp/app" | grep -q 'NEEDED.*\[libidr\.so\.0\]'; then
	ok shared_link_through_pkg_config
else
	ko shared_link_through_pkg_config "build, run or soname failed"
fi
# A program linked with libidr.so records the version node of each name it
# uses (src/libidr.map).  One that uses a name of the newest node stops at
# start-up on a library without that node, naming it: here a stand-in
# libidr.so.0 whose one name is in the node before.  (It takes the name's
# address only, never calls it, so any prototype will do.)  The seed
# workflow, whose names are all of the first node, needs no later one, so
# it runs on any release since that node's.
nodes=$(sed -n 's/^\(LIBIDR_[0-9.]*\) {$/\1/p' src/libidr.map)
node=$(printf '%s\n' "$nodes" | tail -n 1)
older=$(printf '%s\n' "$nodes" | tail -n 2 | head -n 1)
[ "$older" != "$node" ] || older=LIBIDR_0.0
name=$(sed -n "/^$node {/,/}/p" src/libidr.map | grep -o 'id[ar]_[a-z_0-9]*' | head -n 1)
required() { $OBJDUMP -p "$1" | sed -n '/required from libidr/,/required from/p'; }
mkdir -p "$tmp/old"
printf 'void %s(void);\nint main(void) { void (*volatile f)(void) = %s; return f == 0; }\n' \
	"$name" "$name" > "$tmp/new.c"
echo 'int idr_stand_in(void) { return 0; }' > "$tmp/old/lib.c"
printf '%s { global: idr_stand_in; local: *; };\n' "$older" > "$tmp/old/lib.map"
if [ -n "$name" ] &&
   $CC -std=c11 -Wall -Werror -o "$tmp/new" "$tmp/new.c" $($PKG_CONFIG --cflags --libs idr) &&
   required "$tmp/new" | grep -q " $node\$" &&
   LD_LIBRARY_PATH="$P/lib" $TEST_EXEC "$tmp/new" > /dev/null &&
   $CC -shared -fPIC -Wl,-soname,libidr.so.0 -Wl,--version-script,"$tmp/old/lib.map" \
	-o "$tmp/old/libidr.so.0" "$tmp/old/lib.c" &&
   ! LD_LIBRARY_PATH="$tmp/old" $TEST_EXEC "$tmp/new" > /dev/null 2> "$tmp/old/err" &&
   grep -q "version .$node' not found" "$tmp/old/err"; then
	ok programs_need_the_version_node
else
	ko programs_need_the_version_node "node '$node', name '$name': $(required "$tmp/new" | grep LIBIDR) $(cat "$tmp/old/err" 2>/dev/null)"
fi
first=$(printf '%s\n' "$nodes" | head -n 1)
app_nodes=$(required "$tmp/app" | grep LIBIDR_)
if printf '%s\n' "$app_nodes" | grep -q " $first\$" &&
   [ -z "$(printf '%s\n' "$app_nodes" | grep -v " $first\$")" ]; then
	ok seed_workflow_needs_only_the_first_node
else
	ko seed_workflow_needs_only_the_first_node "$app_nodes"
fi
# A plugin built with the header, whose inline preload and lock reach
# libidr's thread-local state at a fixed offset (initial-exec), and a host
# that does not link libidr and dlopen()s the plugin, so that libidr.so
# comes in with it: glibc's spare static TLS must take both.
sed 's/^int main(void)$/int plugin_run(void)/' "$tmp/app.c" > "$tmp/plugin.c"
cat > "$tmp/host.c" <<'EOF'
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* Load liburcu-bp.so on its own before the plugin, and with @use run a
 * read-side section through it (the test after the next one). */
static int urcu_first(int use)
{
	void *u = dlopen("liburcu-bp.so.8", RTLD_NOW);
	void (*lock)(void) = u ? (void (*)(void))dlsym(u, "urcu_bp_read_lock") : NULL;
	void (*unlock)(void) = u ? (void (*)(void))dlsym(u, "urcu_bp_read_unlock") : NULL;

	if (!lock || !unlock)
		return -1;
	if (use) {
		lock();
		unlock();
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 2 && urcu_first(!strcmp(argv[2], "used")))
		return 2;
	void *h = dlopen(argc > 1 ? argv[1] : "", RTLD_NOW);
	int (*run)(void) = h ? (int (*)(void))dlsym(h, "plugin_run") : NULL;

	if (!run) {
		printf("%s\n", dlerror());
		return 1;
	}
	return run();
}
EOF
# The host runs the plugin with the installed libidr; @...: urcu_first()'s.
plugin_host() { LD_LIBRARY_PATH="$P/lib" $TEST_EXEC "$tmp/host" "$tmp/plugin.so" "$@"; }
if $CC -std=c11 -Wall -Werror -fPIC -shared -o "$tmp/plugin.so" "$tmp/plugin.c" \
	$($PKG_CONFIG --cflags --libs idr) &&
   $CC -std=c11 -Wall -Werror -o "$tmp/host" "$tmp/host.c" -ldl &&
   [ "$(plugin_host)" = "1 1" ]; then
	ok dlopened_plugin_runs_the_inline_seed_pattern
else
	ko dlopened_plugin_runs_the_inline_seed_pattern "build or run failed: $(plugin_host 2>&1)"
fi
# The same plugin run on a second thread and then dlclose()d: libidr.so
# stays loaded (it is linked -z nodelete), so the thread's exit, which
# frees its preload stash through a key destructor in libidr, and
# liburcu's call_rcu worker, which frees libidr's retired nodes, find its
# code still there.  Unloaded, the thread's exit crashed.
cat > "$tmp/unload.c" <<'EOF'
#define _GNU_SOURCE /* RTLD_NOLOAD */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

static int (*run)(void);
static pthread_barrier_t step;

static void *user(void *arg)
{
	(void)arg;
	run();
	pthread_barrier_wait(&step); /* the plugin is unloaded meanwhile */
	pthread_barrier_wait(&step);
	return NULL;                 /* key destructors run now */
}

int main(int argc, char **argv)
{
	void *h = dlopen(argc > 1 ? argv[1] : "", RTLD_NOW);
	pthread_t t;

	setvbuf(stdout, NULL, _IONBF, 0);
	run = h ? (int (*)(void))dlsym(h, "plugin_run") : NULL;
	if (!run || pthread_barrier_init(&step, NULL, 2) ||
	    pthread_create(&t, NULL, user, NULL))
		return 1;
	pthread_barrier_wait(&step);
	printf("%d ", dlclose(h));
	printf("%d ", dlopen(argc > 2 ? argv[2] : "", RTLD_NOW | RTLD_NOLOAD) != NULL);
	pthread_barrier_wait(&step);
	pthread_join(t, NULL);
	printf("joined\n");
	return 0;
}
EOF
# unload PLUGIN KEPT: prints what PLUGIN prints, dlclose()'s result, whether
# KEPT is still loaded, and "joined" if the thread exited cleanly.
unload() { LD_LIBRARY_PATH="$P/lib" $TEST_EXEC "$tmp/unload" "$@" 2>&1 | tr '\n' ' '; }
if $CC -std=c11 -Wall -Werror -o "$tmp/unload" "$tmp/unload.c" -ldl -lpthread &&
   [ "$(unload "$tmp/plugin.so" libidr.so.0)" = "1 1 0 1 joined " ]; then
	ok dlclosed_plugin_leaves_libidr_loaded
else
	ko dlclosed_plugin_leaves_libidr_loaded "$(unload "$tmp/plugin.so" libidr.so.0)"
fi
# The same with libidr.a linked into the plugin: its copy of libidr keeps
# the plugin itself loaded (src/resident.c), as libidr.so keeps itself.
# Unloaded, the thread's exit crashed here too (before 0.5.2).
archive_libs=$($PKG_CONFIG --static --libs idr | sed 's/\(^\| \)-lidr\( \|$\)/ /')
if $CC -std=c11 -Wall -Werror -fPIC -shared -o "$tmp/plugin-a.so" "$tmp/plugin.c" \
	$($PKG_CONFIG --cflags idr) "$P/lib/libidr.a" $archive_libs &&
   ! readelf -d "$tmp/plugin-a.so" | grep -q 'NEEDED.*libidr' &&
   [ "$(unload "$tmp/plugin-a.so" "$tmp/plugin-a.so")" = "1 1 0 1 joined " ]; then
	ok dlclosed_plugin_with_libidr_a_stays_loaded
else
	ko dlclosed_plugin_with_libidr_a_stays_loaded "$(unload "$tmp/plugin-a.so" "$tmp/plugin-a.so")"
fi
# libidr reads liburcu-bp's thread-local reader pointer through an
# address each thread looks up (src/readside.c), not at a fixed offset,
# which would need liburcu-bp's TLS in the static block: once a host that
# loaded liburcu-bp.so on its own ran a read-side section through it,
# glibc has placed that TLS dynamically (on x86), and would then refuse
# to load libidr.so.  It must load either way.
if [ "$(plugin_host unused 2>&1)" = "1 1" ] && [ "$(plugin_host used 2>&1)" = "1 1" ]; then
	ok libidr_loads_after_liburcu_bp_was_used
else
	ko libidr_loads_after_liburcu_bp_was_used "unused: $(plugin_host unused 2>&1); used: $(plugin_host used 2>&1)"
fi
# glibc may warn that a static program still dlopens for NSS: not ours;
# but libidr.a's own dlopen() (src/resident.c) must not show in the link.
if $CC -std=c11 -Wall -Werror -static -o "$tmp/app-static" "$tmp/app.c" \
	$($PKG_CONFIG --static --cflags --libs idr) 2> "$tmp/static-link.err" &&
   ! grep -q "'dlopen'" "$tmp/static-link.err" &&
   [ "$($TEST_EXEC "$tmp/app-static")" = "1 1" ]; then
	ok static_link_through_pkg_config
else
	ko static_link_through_pkg_config "build or run failed: $(cat "$tmp/static-link.err")"
fi

# A packager's CPPFLAGS, CFLAGS and LDFLAGS (hardening, as
# dpkg-buildflags gives them) reach the library's compile and link: with
# _FORTIFY_SOURCE its vsnprintf() is the checked one, with the stack
# protector its arrays are guarded, and -z now binds every symbol at load.
# A -fvisibility=hidden among them hides none of the API, in either library.
F=$O/install-flags
if make -s O="$F" CC="$CC" SANITIZE= CPPFLAGS=-D_FORTIFY_SOURCE=2 \
	CFLAGS="-fstack-protector-strong -fvisibility=hidden" \
	LDFLAGS="-Wl,-z,relro -Wl,-z,now" all >/dev/null &&
   $NM -D "$F/libidr.so" | grep -q ' U __vsnprintf_chk' &&
   $NM -D "$F/libidr.so" | grep -q ' U __stack_chk_fail' &&
   readelf -d "$F/libidr.so" | grep -q 'FLAGS.*BIND_NOW' &&
   $NM -D --defined-only "$F/libidr.so" | grep -q ' T idr_alloc@@LIBIDR_0.4' &&
   $NM "$F/libidr.a" | grep -q ' T idr_alloc$'; then
	ok packaging_flags_reach_the_build
else
	ko packaging_flags_reach_the_build "$(readelf -d "$F/libidr.so" | grep FLAGS) $($NM -D "$F/libidr.so" | grep _chk); API exported: $($NM -D --defined-only "$F/libidr.so" | grep -c ' T ') in libidr.so, $($NM "$F/libidr.a" | grep -c ' T ') in libidr.a"
fi

# CMake's find_package(idr), from the package files the install puts in
# lib/cmake/idr: a program links through idr::idr and idr::idr_static
# and runs the seed workflow, and a request for a release this one does
# not satisfy (a later one, another major number, a build of another
# pointer size) finds nothing.  Skipped (no tests counted) without cmake;
# CI installs it.
if command -v cmake >/dev/null; then
	cm=$tmp/cmake
	mkdir -p "$cm/link" "$cm/versions"
	cp "$tmp/app.c" "$cm/link/app.c"
	cat > "$cm/link/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.13)
project(app C)
find_package(idr 0.4 REQUIRED)
add_executable(app app.c)
target_link_libraries(app PRIVATE idr::idr)
add_executable(app-static app.c)
target_link_libraries(app-static PRIVATE idr::idr_static)
EOF
	if cmake -S "$cm/link" -B "$cm/link/b" -DCMAKE_PREFIX_PATH="$P" -DCMAKE_C_COMPILER="$CC" >/dev/null &&
	   cmake --build "$cm/link/b" >/dev/null &&
	   [ "$(LD_LIBRARY_PATH="$P/lib" $TEST_EXEC "$cm/link/b/app")" = "1 1" ] &&
	   readelf -d "$cm/link/b/app" | grep -q 'NEEDED.*\[libidr\.so\.0\]' &&
	   [ "$($TEST_EXEC "$cm/link/b/app-static")" = "1 1" ] &&
	   ! readelf -d "$cm/link/b/app-static" | grep -q 'NEEDED.*libidr'; then
		ok cmake_find_package_links_shared_and_static
	else
		ko cmake_find_package_links_shared_and_static "configure, build or run failed"
	fi
	v=$($PKG_CONFIG --modversion idr)
	major=${v%%.*}
	cat > "$cm/versions/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.13)
project(versions C)
foreach(req "" 0.1 ${v%.*} $v $major.999 $((major + 1)).0)
  find_package(idr \${req} QUIET)
  message(STATUS "request '\${req}': \${idr_FOUND}")
endforeach()
set(CMAKE_SIZEOF_VOID_P 2)
find_package(idr QUIET)
message(STATUS "request from a 16-bit build: \${idr_FOUND}")
EOF
	got=$(cmake -S "$cm/versions" -B "$cm/versions/b" -DCMAKE_PREFIX_PATH="$P" \
		-DCMAKE_C_COMPILER="$CC" 2>&1 | sed -n 's/^-- request //p' | tr '\n' ' ')
	want="'': 1 '0.1': 1 '${v%.*}': 1 '$v': 1 '$major.999': 0 '$((major + 1)).0': 0 from a 16-bit build: 0 "
	if [ "$got" = "$want" ]; then
		ok cmake_version_requests
	else
		ko cmake_version_requests "got: $got; want: $want"
	fi
else
	echo "SKIP install/cmake_*: no cmake"
fi

# The functions the header documents: "name - summary" in a /** block.
documented=$(sed -n 's/^ \* \(id[ar]_[a-z_0-9]*\) - .*/\1/p' include/idr.h)

# Each has a page, its own or a .so link to the page that covers it.
missing=""
for f in $documented; do
	[ -f "$P/share/man/man3/$f.3" ] || missing="$missing $f"
done
if [ -z "$missing" ]; then ok every_documented_function_has_a_man_page
else ko every_documented_function_has_a_man_page "no page for:$missing"; fi

# Each page's header names the release the pkg-config file does.
version=$($PKG_CONFIG --modversion idr)
stale=""
for m in man/*.3; do
	head -n 1 "$m" | grep -q "\"libidr $version\"" || stale="$stale $m"
done
if [ -n "$version" ] && [ -z "$stale" ]; then ok man_pages_name_the_release
else ko man_pages_name_the_release "not libidr $version:$stale"; fi

# The header's IDR_VERSION_MAJOR.IDR_VERSION_MINOR is that release's.
hdr=$(sed -n 's/^#define IDR_VERSION_\(MAJOR\|MINOR\) \([0-9]*\)$/\2/p' "$P/include/idr.h" | paste -sd.)
if [ -n "$version" ] && [ "$hdr" = "${version%.*}" ]; then ok header_names_the_release
else ko header_names_the_release "idr.h says $hdr, pkg-config $version"; fi

# The shared library's exported names are the API: each carries the idr_
# or ida_ prefix, and each function the header documents is among them.
# (The version node is an absolute symbol, "A"; names carry "@@node".)
exported=$($NM -D --defined-only "$P/lib/libidr.so.0" | awk '$2 != "A" { sub(/@.*/, "", $3); print $3 }')
stray=$(printf '%s\n' "$exported" | grep -v '^id[ar]_')
absent=""
for f in $documented; do
	printf '%s\n' "$exported" | grep -qx "$f" || absent="$absent $f"
done
if [ -n "$exported" ] && [ -z "$stray" ] && [ -z "$absent" ]; then
	ok shared_library_exports_exactly_the_api
else
	ko shared_library_exports_exactly_the_api "unprefixed: $stray; not exported:$absent"
fi

# Every exported name, its kind (T function, D data, B thread-local or
# zero-filled data) and its version node (src/libidr.map; the node itself
# is the "A" line) is in tests/install-symbols.txt, and only those: a
# name added, removed or changed in kind or node is an ABI change, and
# docs/guarantees.md ("ABI") says what VERSION or soname it needs; then
# the list is updated with it.
listed=$(sort -k2 tests/install-symbols.txt)
actual=$($NM -D --defined-only --with-symbol-versions "$P/lib/libidr.so.0" | awk '{ print $2, $3 }' | sort -k2)
if [ -n "$actual" ] && [ "$actual" = "$listed" ]; then
	ok exports_match_the_symbol_list
else
	ko exports_match_the_symbol_list "$(printf '%s\n' "$listed" > "$tmp/listed"
		printf '%s\n' "$actual" | diff "$tmp/listed" - | grep '^[<>]' | tr '\n' ' ')"
fi

# The library's own calls to its API bind inside it: none goes through its
# PLT, which would cost each of them an indirect jump (IDA's calls to
# idr_lock, for one) and let another library's idr_lock stand in for it.
selfplt=$($OBJDUMP -d "$P/lib/libidr.so.0" | grep -oE '<id[ar]_[a-z_0-9]*@plt>' | sort -u)
if [ -n "$exported" ] && [ -z "$selfplt" ]; then
	ok shared_library_calls_its_own_functions_directly
else
	ko shared_library_calls_its_own_functions_directly "through the PLT: $(echo $selfplt)"
fi

# The same for the static library, whose internal functions are local: a
# program may name its own functions as libidr names its internal ones.
archived=$($NM -g --defined-only "$P/lib/libidr.a" | awk 'NF == 3 { print $3 }')
stray=$(printf '%s\n' "$archived" | grep -v '^id[ar]_')
if [ -n "$archived" ] && [ -z "$stray" ]; then
	ok static_library_defines_only_the_api
else
	ko static_library_defines_only_the_api "unprefixed: $stray"
fi
cat > "$tmp/names.c" <<'EOF'
#include <idr.h>
#include <stddef.h>
#include <stdio.h>

/* Names libidr uses inside, each defined here with another meaning. */
int report(int x);
void *mem_alloc(size_t n);
int tree_insert(int x);
int report(int x) { return x + 1; }
void *mem_alloc(size_t n) { (void)n; return NULL; }
int tree_insert(int x) { return 2 * x; }

int main(void)
{
	static int obj;
	DEFINE_IDR(h);
	int id = idr_alloc(&h, &obj, 0, 0, IDR_GFP_KERNEL);

	printf("%d %d %d %d\n", id, idr_find(&h, 0) == &obj, report(1), tree_insert(2));
	idr_destroy(&h);
	return 0;
}
EOF
if $CC -std=c11 -Wall -Werror -static -o "$tmp/names" "$tmp/names.c" \
	$($PKG_CONFIG --static --cflags --libs idr) 2>/dev/null &&
   [ "$($TEST_EXEC "$tmp/names")" = "0 1 2 4" ]; then
	ok static_link_beside_the_same_internal_names
else
	ko static_link_beside_the_same_internal_names "build or run failed"
fi

mk uninstall PREFIX="$P"
left=$(find "$P" -type f -o -type l)
if [ -z "$left" ]; then ok uninstall_leaves_nothing
else ko uninstall_leaves_nothing "$left"; fi

echo "install: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
