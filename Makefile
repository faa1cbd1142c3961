# libidr - GNU make build.  See README.md.
#   make                 libidr.so (with soname) and libidr.a in $(O)/
#   make check           build and run every test; ends with "N passed, N failed"
#   make demo            build and run examples/demo
#   make bench           build and run the benchmark (bench/README.md)
#   make fuzz            libFuzzer for FUZZ_SECONDS=60 (fuzz/README.md)
#   make lint            cppcheck and clang-tidy
#   make coverage        the test programs' line coverage of src/ and include/ (gcov)
#   make install         PREFIX=/usr/local DESTDIR=
#   make clean
#   make deps            install the Debian packages the build needs
# Variants: make check O=build/asan SANITIZE=address,undefined
#           make check VALGRIND=1      (each test under valgrind)
#           make check CC=clang

CC       ?= cc
O        ?= build
PREFIX   ?= /usr/local
LIBDIR   ?= $(PREFIX)/lib
INCDIR   ?= $(PREFIX)/include
MANDIR   ?= $(PREFIX)/share/man
PKGDIR   ?= $(LIBDIR)/pkgconfig
CMAKEDIR ?= $(LIBDIR)/cmake/idr
DESTDIR  ?=

VERSION  := 0.5.4
# The soname's number is the release's first: a release that would break
# programs built against the one before it raises both (docs/guarantees.md).
SOMAJOR  := $(firstword $(subst ., ,$(VERSION)))
SONAME   := libidr.so.$(SOMAJOR)

# Cross builds name the target's pkg-config (docs/portability.md).
PKG_CONFIG  ?= pkg-config
URCU_CFLAGS := $(shell $(PKG_CONFIG) --cflags liburcu-bp 2>/dev/null)
URCU_LIBS   := $(shell $(PKG_CONFIG) --libs liburcu-bp 2>/dev/null || echo -lurcu-bp -lurcu-common)

WARN     := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
OPT      ?= -O2 -g
# CPPFLAGS, CFLAGS and LDFLAGS are the packager's (dpkg-buildflags, say):
# they reach every compile and link, after the build's own flags.
CPPFLAGS ?=
CFLAGS   ?=
LDFLAGS  ?=
SANITIZE ?=
SANFLAGS := $(if $(SANITIZE),-fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all)
ALL_CFLAGS := -std=c11 -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 $(OPT) $(WARN) -fPIC -Iinclude $(URCU_CFLAGS) $(SANFLAGS) $(CPPFLAGS) $(CFLAGS)
# The library's own objects: -fvisibility=default after the packager's
# CFLAGS, because internal names are hidden in the source (IDR_HIDDEN) and
# src/libidr.map picks the exports, so a -fvisibility=hidden there would
# only hide the API.
LIB_CFLAGS := $(ALL_CFLAGS) -fvisibility=default
LDLIBS   := $(URCU_LIBS) -lpthread

SRCS := src/tree.c src/idr.c src/preload.c src/rcu.c src/readside.c src/resident.c src/ida.c src/compat.c src/check.c src/handle.c src/sparse.c src/lock.c src/dir.c
OBJS := $(SRCS:src/%.c=$(O)/obj/%.o)

# Tests link the library statically so sanitizer and valgrind runs see one
# image.
TEST_UTIL := tests/testutil.c
PROGRAM_TESTS := $(patsubst tests/%.c,%,$(filter-out $(TEST_UTIL),$(wildcard tests/*.c)))
TESTS ?= $(PROGRAM_TESTS)
# Shell tests (tests/NAME.sh) have no binary, even when named in TESTS=.
TEST_BINS := $(patsubst %,$(O)/tests/%,$(filter-out $(patsubst tests/%.sh,%,$(wildcard tests/*.sh)),$(TESTS)))
# A TESTS= given on the command line overrides this too.
TESTS += compile-deprecated compile-cxx compile-strict docs debug-build hooks install examples fuzz-replay
TEST_BINS += $(O)/tests/fuzz-replay

.PHONY: all deps check coverage demo bench bench-limits fuzz lint install uninstall clean FORCE

CMAKE_FILES := $(O)/cmake/idr-config.cmake $(O)/cmake/idr-config-version.cmake

all: $(O)/libidr.so $(O)/libidr.a $(O)/idr.pc $(CMAKE_FILES)

# What this build directory's files are compiled with, rewritten only when
# it changes (compared, as idr.pc is below): whatever is compiled depends
# on it, so a make with another CC, CFLAGS or SANITIZE in the same O=
# rebuilds instead of linking stale objects.
FLAGS := $(O)/obj/flags
$(FLAGS): FORCE | $(O)/obj
	$(file >$@.new,$(CC) $(LIB_CFLAGS) $(LDFLAGS) $(LDLIBS))
	@if cmp -s $@.new $@; then rm -f $@.new; else mv $@.new $@; fi

$(O)/obj/%.o: src/%.c src/internal.h include/idr.h $(FLAGS) | $(O)/obj
	$(CC) $(LIB_CFLAGS) -c -o $@ $<

$(O)/obj $(O)/tests $(O)/examples $(O)/bench $(O)/cmake:
	mkdir -p $@

# -Bsymbolic-functions: the library's own calls to its API (ida_alloc's
# idr_lock, for one) go straight to it, not through its PLT.  The version
# script names what is exported and each name's version node.  The Makefile
# is a prerequisite so that a new VERSION names a new file.  -z nodelete:
# once loaded, libidr.so stays, even when the plugin that brought it in
# is dlclose()d, because threads that used it run its key destructor at
# their exit and liburcu's worker calls its callbacks later (libidr.a's
# copy in a plugin keeps the plugin so: src/resident.c).
$(O)/libidr.so: $(OBJS) src/libidr.map Makefile
	$(CC) $(SANFLAGS) $(LDFLAGS) -shared -Wl,-soname,$(SONAME) -Wl,-Bsymbolic-functions -Wl,-z,nodelete \
		-Wl,--version-script,src/libidr.map -o $@.$(VERSION) $(OBJS) $(LDLIBS)
	ln -sf libidr.so.$(VERSION) $(O)/$(SONAME)
	ln -sf libidr.so.$(VERSION) $@

# The static library is one object, linked from all of them, in which only
# the API stays global: the internal functions (hidden in libidr.so) become
# local, so a program that links libidr.a statically may have its own
# report() or tree_insert().  Tests that reach into src/internal.h link the
# objects as they are.  --force-group-allocation: the object keeps no
# COMDAT groups, whose copy the final link could drop for a program's own
# (on i386, the __x86.get_pc_thunk helpers), leaving our calls, made local
# here, pointing into a discarded section.  No SANFLAGS: the objects are
# instrumented already, and clang would link its static sanitizer runtime
# into the object, which then clashes with the program's own copy.
# Objects compiled with -flto hold the compiler's IR, whose symbols objcopy
# cannot make local: this link then does the link-time optimization and
# writes machine code (clang does so for -r once given -flto; gcc needs
# -flinker-output=nolto-rel, which clang does not know).
OBJCOPY  ?= objcopy
LTO_FLAGS := $(filter -flto%,$(OPT) $(CFLAGS))
ifneq ($(LTO_FLAGS),)
LTO_FLAGS += $(shell $(CC) -flinker-output=nolto-rel -E -x c /dev/null >/dev/null 2>&1 && echo -flinker-output=nolto-rel)
endif
$(O)/obj/libidr.o: $(OBJS) Makefile
	$(CC) $(LTO_FLAGS) -nostdlib -r -Wl,--force-group-allocation -o $@.tmp $(OBJS)
	$(OBJCOPY) --localize-hidden $@.tmp $@
	rm -f $@.tmp

$(O)/libidr.a: $(O)/obj/libidr.o
	rm -f $@
	ar rcs $@ $^

$(O)/obj/libidr-internal.a: $(OBJS)
	rm -f $@
	ar rcs $@ $^

# idr.pc and CMake's package files name the install directories, so `make`
# then `make install PREFIX=/opt` must not install one that points at
# /usr/local.  Their content is made on every run and each file replaced
# only when that differs: a stamp of the variables would be compared by
# mtime, and two makes within one clock tick would keep the stale file.
# CMake's version file is also told the pointer size the library is built
# for, which only the compiler knows ($(1): sed's extra expressions).
space := $(subst ,, )
define fill_in
	@sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
	    -e 's|@INCDIR@|$(INCDIR)|' -e 's|@VERSION@|$(VERSION)|' \
	    -e 's|@SONAME@|$(SONAME)|' -e 's|@URCU_LIBS@|$(subst $(space),;,$(strip $(URCU_LIBS)))|' \
	    $(1) $< > $@.new
	@if cmp -s $@.new $@; then rm -f $@.new; else mv $@.new $@; fi
endef

$(O)/idr.pc: idr.pc.in FORCE | $(O)/obj
	$(call fill_in)

$(O)/cmake/idr-config.cmake: cmake/idr-config.cmake.in FORCE | $(O)/cmake
	$(call fill_in)

$(O)/cmake/idr-config-version.cmake: cmake/idr-config-version.cmake.in FORCE | $(O)/cmake
	$(call fill_in,-e "s|@POINTER_BYTES@|$$(echo __SIZEOF_POINTER__ | $(CC) -E -P - | tail -n 1)|")

FORCE:

$(O)/tests/%: tests/%.c $(TEST_UTIL) tests/testutil.h $(O)/obj/libidr-internal.a $(FLAGS) | $(O)/tests
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -Wno-missing-prototypes -Itests -o $@ $< $(TEST_UTIL) $(O)/obj/libidr-internal.a $(LDLIBS)

# The fuzz target, replayed over fuzz/corpus and fuzz/regressions.
FUZZ_SRCS := fuzz/fuzz_api.c tests/model.h
# Both build the library with IDR_DIR_SMALL, so that small inputs meet the
# lookup directory (src/dir.c).
$(O)/tests/fuzz-replay: fuzz/replay.c $(FUZZ_SRCS) $(SRCS) src/internal.h include/idr.h $(FLAGS) | $(O)/tests
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -DIDR_DIR_SMALL -Wno-missing-prototypes -o $@ fuzz/replay.c fuzz/fuzz_api.c $(SRCS) $(LDLIBS)

# libFuzzer (clang) with ASan+UBSan, for FUZZ_SECONDS.  New inputs go to
# $(FUZZ_O)/corpus; a crashing input lands in fuzz/regressions/, which
# `make check` replays from then on (commit it with the fix).  The target
# counts every block itself, so libFuzzer's own leak check, which would
# rescan the heap after each input whose RCU frees are still pending, is off.
FUZZ_SECONDS ?= 60
FUZZ_O   ?= build/fuzz
FUZZ_CC  ?= clang
FUZZ_FLAGS := -std=c11 -D_GNU_SOURCE -DIDR_DIR_SMALL -g -O1 $(WARN) -Wno-missing-prototypes -Iinclude $(URCU_CFLAGS) \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
$(FUZZ_O)/fuzz_api: $(SRCS) src/internal.h include/idr.h $(FUZZ_SRCS)
	mkdir -p $(FUZZ_O)/corpus
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $(SRCS) fuzz/fuzz_api.c $(LDLIBS)

fuzz: $(FUZZ_O)/fuzz_api
	$(FUZZ_O)/fuzz_api -max_total_time=$(FUZZ_SECONDS) -max_len=2048 -detect_leaks=0 -print_final_stats=1 \
	  -artifact_prefix=fuzz/regressions/ $(FUZZ_O)/corpus fuzz/corpus

# Static analysis: cppcheck over all C sources, clang-tidy (.clang-tidy)
# over the library.  Both treat every finding as an error.
lint:
	cppcheck --enable=warning,performance,portability --std=c11 --error-exitcode=1 \
	  --inline-suppr -q -Iinclude --suppress=missingIncludeSystem src fuzz tests examples bench
	clang-tidy --quiet $(SRCS) -- -std=c11 -D_GNU_SOURCE -Iinclude $(URCU_CFLAGS)

deps:
	@sh scripts/install-deps.sh

# SKIP_TESTS: names to leave out of TESTS (CI's gcc sanitizer and valgrind
# stages leave out the shell tests that build their own library without
# either, which its first stage ran).
check: $(TEST_BINS)
	@O=$(O) VALGRIND=$(VALGRIND) TEST_EXEC="$(TEST_EXEC)" sh tests/run-all.sh $(filter-out $(SKIP_TESTS),$(TESTS))

# Which lines of src/ the test programs run (gcov), built -O0 in $(COV_O).
# The counters are updated atomically: the tests are threaded, and racy
# counts made gcov report lines that had run as never run.  The tests'
# forked children write theirs before they _exit() (tu_child_exit()); one
# that dies of a signal (an abort() tested) writes none.
COV_O ?= build/cov
coverage:
	rm -rf $(COV_O)
	$(MAKE) O=$(COV_O) OPT="-O0 -g" CFLAGS="--coverage -fprofile-update=atomic -DTU_COVERAGE" \
	  TESTS="$(PROGRAM_TESTS)" check
	@sh scripts/coverage.sh $(COV_O)

# Examples and benchmarks: one program per source, linked statically.
LINK_PROG = $(CC) $(ALL_CFLAGS) $(LDFLAGS) -Wno-missing-prototypes -o $@ $< $(O)/libidr.a $(LDLIBS)

$(O)/examples/%: examples/%.c $(O)/libidr.a $(FLAGS) | $(O)/examples
	$(LINK_PROG)

demo: $(O)/examples/demo $(O)/examples/migrate $(O)/examples/readers
	$(TEST_EXEC) $(O)/examples/demo

# The benchmark links libjudy (a peer) and interposes malloc to count heap.
BENCH_SRCS := bench/bench.c bench/heap.c bench/flatcall.c
BENCH_DEPS := $(BENCH_SRCS) bench/bench.h bench/flat.h bench/workloads.h $(O)/libidr.a $(FLAGS)
BENCH_LINK = $(CC) $(ALL_CFLAGS) $(LDFLAGS) -Wno-missing-prototypes -o $@ $(BENCH_SRCS) $(O)/libidr.a
$(O)/bench/bench: $(BENCH_DEPS) | $(O)/bench
	$(BENCH_LINK) $(LDLIBS) -lJudy

# What a random lookup costs by shape, flat inlined to idr_find (bench/limits.c).
$(O)/bench/limits: bench/limits.c bench/bench.h $(O)/libidr.a $(FLAGS) | $(O)/bench
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -Wno-missing-prototypes -o $@ bench/limits.c $(O)/libidr.a $(LDLIBS) \
		-Wl,--defsym,library_find=idr_find

bench-limits: $(O)/bench/limits
	$(O)/bench/limits $(BENCH_ARGS)

# BENCH_ARGS: -n N, -r repeats, --large (N = 10M), --quick.
BENCH_ARGS ?=
bench:
	@sh scripts/install-deps.sh libjudy-dev gnuplot
	$(MAKE) $(O)/bench/bench
	mkdir -p bench/results
	$(O)/bench/bench --plot bench/results $(BENCH_ARGS)

install: all
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCDIR) $(DESTDIR)$(PKGDIR) $(DESTDIR)$(MANDIR)/man3
	install -m 644 include/idr.h $(DESTDIR)$(INCDIR)/idr.h
	install -m 755 $(O)/libidr.so.$(VERSION) $(DESTDIR)$(LIBDIR)/
	ln -sf libidr.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf libidr.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libidr.so
	install -m 644 $(O)/libidr.a $(DESTDIR)$(LIBDIR)/
	install -m 644 $(O)/idr.pc $(DESTDIR)$(PKGDIR)/idr.pc
	install -d $(DESTDIR)$(CMAKEDIR)
	install -m 644 $(CMAKE_FILES) $(DESTDIR)$(CMAKEDIR)/
	for m in man/*.3; do install -m 644 $$m $(DESTDIR)$(MANDIR)/man3/; \
	  page=$$(basename $$m .3); \
	  for f in $$(sed -n 's/^\.B [^(]*[ *]\([a-z_0-9]*\)(.*/\1/p' $$m); do \
	    [ "$$f" = "$$page" ] || echo ".so man3/$$page.3" > $(DESTDIR)$(MANDIR)/man3/$$f.3; \
	  done; done

uninstall:
	rm -f $(DESTDIR)$(INCDIR)/idr.h $(DESTDIR)$(LIBDIR)/libidr.* $(DESTDIR)$(PKGDIR)/idr.pc
	rm -f $(DESTDIR)$(MANDIR)/man3/idr_*.3 $(DESTDIR)$(MANDIR)/man3/ida_*.3
	rm -f $(DESTDIR)$(CMAKEDIR)/idr-config.cmake $(DESTDIR)$(CMAKEDIR)/idr-config-version.cmake
	rmdir $(DESTDIR)$(CMAKEDIR) 2>/dev/null || true

clean:
	rm -rf build $(O)
