#!/bin/sh
# Build libidr and its test programs for another Debian architecture with
# its cross compiler, and run them: i386 (32-bit pointers and unsigned
# long, no singleton words) natively, as an x86-64 kernel runs 32-bit
# programs; arm64 (weakly ordered, unsigned char; also with memory
# tagging), armhf (32-bit, and malloc aligns only to 8 bytes) and s390x
# (big-endian, max_align_t of 8) under qemu-user; and the shell tests
# with the target's tools.  Ends with run-all.sh's "N passed, N failed".
#
#   scripts/cross-check.sh i386|arm64|armhf|s390x [--install]
#
# --install first adds the architecture to dpkg and installs the cross
# compilers, liburcu and libstdc++ for it and (not i386) qemu-user: root
# or sudo, Debian 12.  qemu-user runs the programs, not the machine: its
# threads keep the host's stronger memory order, so this proves the build
# and the single-threaded results on ARM, not its memory model.
set -u
cd "$(dirname "$0")/.."

arch=${1:-}
extra=
case $arch in
i386) triplet=i686-linux-gnu libdir=i386-linux-gnu exec= extra="libasan8:i386 libubsan1:i386 libc6-dbg:i386" ;;
arm64) triplet=aarch64-linux-gnu libdir=aarch64-linux-gnu exec=qemu-aarch64 ;;
armhf) triplet=arm-linux-gnueabihf libdir=arm-linux-gnueabihf exec=qemu-arm ;;
s390x) triplet=s390x-linux-gnu libdir=s390x-linux-gnu exec=qemu-s390x ;;
*) echo "usage: $0 i386|arm64|armhf|s390x [--install]" >&2; exit 2 ;;
esac

if [ "${2:-}" = --install ]; then
	pkgs="crossbuild-essential-$arch liburcu-dev:$arch libstdc++6:$arch ${exec:+qemu-user} $extra"
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	if ! dpkg -s $pkgs >/dev/null 2>&1; then
		$sudo dpkg --add-architecture "$arch" && $sudo apt-get update -qq &&
		# --no-remove: a package of the other architecture must never
		# make apt take one of the host's away.
		DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-remove $pkgs >/dev/null ||
		exit 1
	fi
fi

# qemu-user's own loader path (-L) would mix the cross toolchain's C
# library with the multiarch one: run the programs with the latter.
mk() {
	make -s -j2 O="build/$arch" CC="$triplet-gcc" OBJCOPY="$triplet-objcopy" \
		NM="$triplet-nm" OBJDUMP="$triplet-objdump" \
		PKG_CONFIG="env PKG_CONFIG_LIBDIR=/usr/lib/$libdir/pkgconfig pkg-config" \
		TEST_EXEC="${exec:+env IDR_TEST_EMULATED=1 $exec}" "$@"
}

pass=0
fail=0

# The demo links libidr.a, as a program does (the tests link the objects).
last=$(mk demo | tail -n 1)
echo "demo: $last"
if [ "$last" = "destroyed: empty, 0 bytes left" ]; then
	pass=$((pass + 1))
else
	echo "FAIL demo"
	fail=$((fail + 1))
fi

# The test programs, and the shell tests that compile the header with the
# target's C and C++ compilers (and run the C++ program).
tests="$(cd tests && ls ./*.c | sed 's|^\./||; s|\.c$||' | grep -v '^testutil$' | tr '\n' ' ') fuzz-replay compile-strict compile-cxx"
# Once, in the first run: what `make install` gives (inspected with the
# target's nm and objdump, its programs run with the emulator), the
# IDR_DEBUG build and the examples (readers' threads among them).
# tests/hooks/ forks threaded programs, which qemu-user does not survive:
# those run on i386 only.
once="install debug-build examples"
[ "$arch" = i386 ] && once="$once hooks"

# Run @1 with make arguments @2..., adding their summary to the totals.
count() {
	list=$1
	shift
	out=$(mk TESTS="$list" "$@" check 2>&1)
	summary=$(printf '%s\n' "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed$' | tail -n 1)
	printf '%s\n' "$out" | grep -vxF "$summary"
	[ -n "$summary" ] || summary="0 passed, 1 failed"
	pass=$((pass + ${summary%% *}))
	f=${summary#* passed, }
	fail=$((fail + ${f%% *}))
}
count "$tests $once"
# arm64's memory tagging (MTE), which qemu's "max" CPU emulates and glibc's
# malloc() uses when its tunable asks (3: faults at the access): every
# block's pointer carries a tag in its top byte, and a load or store
# through a freed or overrun block's pointer faults.  The same programs,
# quick (as under valgrind), and each checks that the tags are there.
if [ "$arch" = arm64 ]; then
	count "$tests" TEST_EXEC="env IDR_TEST_QUICK=1 IDR_TEST_EMULATED=1 IDR_TEST_TAGGED_HEAP=1 QEMU_CPU=max GLIBC_TUNABLES=glibc.mem.tagging=3 $exec"
fi
# i386 programs run natively, so they can run under AddressSanitizer and
# UBSan too (the second finds what 64-bit habits do in a 32-bit long),
# and under valgrind, whose 32-bit tools need libc6-dbg:i386.
if [ "$arch" = i386 ]; then
	count "$tests" O=build/i386-asan SANITIZE=address,undefined
	if command -v valgrind >/dev/null; then
		count "$tests" VALGRIND=1
	else
		echo "SKIP i386 under valgrind: no valgrind"
	fi
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
