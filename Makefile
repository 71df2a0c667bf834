# SPDX-License-Identifier: MIT
# fencedwrite - fenced atomic file replacement.
#
#   make            build the command and the libraries into build/
#   make check      install test dependencies if missing, run every test
#   make demo       play the paused-holder story in a temporary directory
#   make demo-etcd  the same with real etcd leases
#   make install    PREFIX=/usr/local DESTDIR= (make uninstall reverses it)

# One version, the header's: fw_version(), --version and the packages agree.
VERSION    := $(shell sed -n 's/^\#define FW_VERSION "\(.*\)"/\1/p' src/fencedwrite.h)
SOVERSION  := 1
PREFIX     ?= /usr/local
DESTDIR    ?=
BINDIR     ?= $(PREFIX)/bin
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR     ?= $(PREFIX)/share/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
DOCDIR     ?= $(PREFIX)/share/doc/fencedwrite
# bash-completion loads completions/NAME on demand; a package sets this to
# $(pkg-config --variable=completionsdir bash-completion).
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
DOCS       := $(wildcard docs/*.md) $(wildcard NEWS)

CC      ?= cc
CFLAGS  ?= -O2 -g
WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
           -Wmissing-prototypes -Wformat=2 -Wno-format-nonliteral
ALL_CFLAGS := -std=gnu11 $(WARN) -D_FILE_OFFSET_BITS=64 -pthread $(CFLAGS)
LDLIBS_LIB := -pthread

# B is the build directory; `make B=build-asan SAN=1 check` builds apart.
B       ?= build
ifeq ($(SAN),1)
ALL_CFLAGS += -O1 -fno-omit-frame-pointer -fsanitize=address,undefined \
              -fno-sanitize-recover=all
LDFLAGS    += -fsanitize=address,undefined
endif

LIB_SRC := src/commit.c src/digest.c src/doctor.c src/fence.c src/fence_record.c \
           src/identity.c \
           src/inspect.c src/io.c src/mode.c src/lock.c \
           src/mount.c src/status.c src/target.c src/tmpfile.c src/token.c \
           src/read.c src/trust.c src/abi.c src/nfs_client.c
LIB_OBJ := $(LIB_SRC:src/%.c=$(B)/obj/%.o)
HEADERS := src/fencedwrite.h src/internal.h

STATIC  := $(B)/libfencedwrite.a
SONAME  := libfencedwrite.so.$(SOVERSION)
SHARED  := $(B)/libfencedwrite.so.$(VERSION)
BIN     := $(B)/fencedwrite

TESTS   := test_abi test_token test_digest test_fence_record test_claim test_lock test_commit test_cli \
           test_contention test_faults test_crash test_hostile test_mount \
           test_read test_update test_report
# A suite named NAME@noofd runs again with OFD locks refused (tests/noofd.c),
# so the classic-lock fallback and its in-process guard are tested too.
# NAME@faults runs under tests/faults.c, which fails chosen system calls.
SUITES  := $(filter-out test_faults test_crash test_read,$(TESTS)) \
           test_faults@faults test_crash@faults test_read@faults \
           test_lock@noofd test_contention@noofd test_contention@huge \
           test_mount@noofd
SHIMS   := $(B)/tests/noofd.so $(B)/tests/faults.so
TEST_BIN := $(TESTS:%=$(B)/tests/%) $(SHIMS) $(B)/tests/history_check
CMOCKA_CFLAGS = $(shell pkg-config --cflags cmocka 2>/dev/null)
CMOCKA_LIBS   = $(shell pkg-config --libs cmocka 2>/dev/null || echo -lcmocka)

# man fw_commit_buffer (and every other public function) opens
# libfencedwrite(3): the names are listed in man/libfencedwrite.links.
MAN3_LINKS := $(shell sed -n 's/^\(fw_[a-z_]*\)$$/\1/p' man/libfencedwrite.links)

MANS := man/fencedwrite.1 man/fencedwrite-etcd.1 man/libfencedwrite.3 \
        man/fencedwrite-fence.5

.PHONY: all all-tests check check-deps check-asan check-valgrind demo install \
        uninstall clean lint lint-man fuzz fuzz-build torture check-etcd demo-etcd \
        bench check-nfs bench-nfs abi-check abi-baseline check-docs \
        check-suites check-install check-fuzz

all: $(BIN) $(STATIC) $(SHARED)

$(B)/obj/%.o: src/%.c $(HEADERS) | $(B)/obj
	$(CC) $(ALL_CFLAGS) -fPIC -c -o $@ $<

$(B)/obj $(B)/tests:
	mkdir -p $@

$(STATIC): $(LIB_OBJ)
	rm -f $@
	$(AR) rcs $@ $^

$(SHARED): $(LIB_OBJ) src/libfencedwrite.map
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -shared -Wl,-soname,$(SONAME) \
	    -Wl,--version-script=src/libfencedwrite.map \
	    -o $@ $(LIB_OBJ) $(LDLIBS_LIB)
	ln -sf libfencedwrite.so.$(VERSION) $(B)/$(SONAME)
	ln -sf $(SONAME) $(B)/libfencedwrite.so

# The command links the static library: one file to copy to every host.
CLI_SRC := src/cli.c src/cli_options.c src/cli_report.c src/cli_syslog.c src/cli_metrics.c
$(BIN): $(CLI_SRC) src/cli.h src/cli_report.h src/fencedwrite.h $(STATIC)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $(CLI_SRC) $(STATIC) $(LDLIBS_LIB)

# Written at install time, so it names the PREFIX actually installed to.
PC_SED := -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
          -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' -e 's|@VERSION@|$(VERSION)|'

# ---- tests ---------------------------------------------------------------

TEST_COMMON := tests/helpers.c tests/history.c
$(B)/tests/%: tests/%.c $(TEST_COMMON) tests/helpers.h tests/history.h \
              $(HEADERS) $(STATIC) | $(B)/tests
	$(CC) $(ALL_CFLAGS) $(CMOCKA_CFLAGS) -Isrc $(LDFLAGS) -o $@ $< \
	    $(TEST_COMMON) $(STATIC) $(CMOCKA_LIBS) $(LDLIBS_LIB)

# The checker as a command, for histories recorded by shell scripts.
$(B)/tests/history_check: tests/history_check.c tests/history.c \
                          tests/history.h $(HEADERS) $(STATIC) | $(B)/tests
	$(CC) $(ALL_CFLAGS) -Isrc $(LDFLAGS) -o $@ $< tests/history.c \
	    $(STATIC) $(LDLIBS_LIB)

# Shims are built without sanitizers: they only forward calls.
$(B)/tests/%.so: tests/%.c | $(B)/tests
	$(CC) -std=gnu11 $(WARN) -O2 -fPIC -shared -o $@ $< -ldl

check-deps:
	@scripts/ensure-deps.sh cmocka mandoc cppcheck clang-tidy shellcheck \
	    bash-completion

# Each suite runs in its own fresh temporary directory; the command tests
# find the binary through FW_BIN.
# The NFS lab (check-nfs) runs beside the other steps: scripts/check.sh.
CHECK_STEPS := check-suites lint abi-check check-docs check-install \
               check-systemd check-deb check-asan check-valgrind check-etcd \
               check-fuzz
check: check-deps
	@$(MAKE) --no-print-directory all-tests $(NFS_LOAD)
	@MAKE="$(MAKE)" scripts/check.sh $(B) $(CHECK_STEPS)

check-suites: all-tests
	@scripts/run-tests.sh $(B) $(SUITES)
	@tests/completion_test.sh $(B)

check-install: all
	@scripts/test-install.sh

check-fuzz:
	@$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=5

all-tests: all $(TEST_BIN)

check-asan:
	@$(MAKE) --no-print-directory B=build-asan SAN=1 all-tests
	@ASAN_OPTIONS=detect_leaks=1:verify_asan_link_order=0 \
	    UBSAN_OPTIONS=print_stacktrace=1 \
	    scripts/run-tests.sh build-asan $(SUITES)

# The long concurrency run: 8 writer processes x 4 threads x TORTURE_OPS
# operations each (102,400 by default), with OFD locks, with classic locks
# and with tokens near 2^64.  Not part of check: about a minute per run.
TORTURE_OPS ?= 3200
torture: check-deps all-tests
	@FWT_WRITERS=8 FWT_THREADS=4 FWT_OPS=$(TORTURE_OPS) \
	    scripts/run-tests.sh $(B) test_contention test_contention@noofd \
	    test_contention@huge

# Against a real etcd on 127.0.0.1, installed with apt-get when missing;
# where it cannot be installed, the run says so and is skipped.
check-etcd: all-tests
	@if scripts/ensure-deps.sh etcd; then \
	    timeout 600 tests/etcd_e2e.sh $(B); \
	else \
	    echo "etcd: skipped: etcd-server/etcd-client not installed and not installable here"; \
	fi

# ---- benchmarks (not part of check) ---------------------------------------

# make bench [BENCH_DIR=dir on the disk to measure] [BENCH_FORMAT=csv|json]
BENCH_DIR    ?= $(CURDIR)/build/bench-data
BENCH_FORMAT ?= table
$(B)/bench/fwbench: bench/fwbench.c src/fencedwrite.h $(STATIC)
	@mkdir -p $(B)/bench
	$(CC) $(ALL_CFLAGS) -Isrc $(LDFLAGS) -o $@ $< $(STATIC) $(LDLIBS_LIB)

bench: all $(B)/bench/fwbench
	@scripts/bench.sh $(B) "$(BENCH_DIR)" $(BENCH_FORMAT)

# ---- fuzzing (clang's libFuzzer) -----------------------------------------

FUZZ_B       := build-fuzz
FUZZERS      := fuzz_fence_record fuzz_token fuzz_cli_args
FUZZ_SECONDS ?= 60
FUZZ_CFLAGS  := -std=gnu11 -g -O1 -D_FILE_OFFSET_BITS=64 -pthread -Isrc \
                -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all

$(FUZZ_B)/fuzz_cli_args: EXTRA_SRC := src/cli_options.c
$(FUZZ_B)/%: tests/fuzz/%.c $(LIB_SRC) $(HEADERS) src/cli.h src/cli_options.c
	@mkdir -p $(FUZZ_B)
	clang $(FUZZ_CFLAGS) -o $@ $< $(LIB_SRC) $(EXTRA_SRC)

fuzz-build: check-deps
	@scripts/ensure-deps.sh clang
	@$(MAKE) --no-print-directory $(FUZZERS:%=$(FUZZ_B)/%)

# make fuzz FUZZ_SECONDS=600 for a long run; make check runs 5 s each.
fuzz: fuzz-build
	@scripts/fuzz.sh $(FUZZ_B) $(FUZZ_SECONDS) $(FUZZERS)

# Every command shown in README.md, the manual pages and make demo, run as
# printed (tests/docs_test.sh).
check-docs: all
	@tests/docs_test.sh $(B)

demo: $(BIN)
	@scripts/demo.sh $(BIN)

# The same story with real etcd leases (installs etcd as root if missing).
demo-etcd: $(BIN)
	@scripts/demo-etcd.sh $(BIN)

lint-man:
	@mandoc -T lint -W warning $(MANS)

# Zero findings from every checker; configuration in .clang-tidy and here.
CPPCHECK_FLAGS := --enable=warning,style,performance,portability \
                  --inline-suppr --error-exitcode=1 --std=c11 -q \
                  -D_GNU_SOURCE -Isrc
TIDY_FLAGS := -std=gnu11 -D_FILE_OFFSET_BITS=64 -Isrc
lint: check-deps lint-man
	@cppcheck $(CPPCHECK_FLAGS) src tests
	@clang-tidy --quiet $(LIB_SRC) $(CLI_SRC) -- $(TIDY_FLAGS) 2>/dev/null
	@shellcheck scripts/*.sh scripts/fencedwrite-etcd tests/*.sh tests/nfs/*.sh \
	    .ci/run
	@shellcheck -s bash scripts/fencedwrite.bash-completion
	@echo "lint: 4 passed, 0 failed"

# The command tests under valgrind memcheck, in a build of their own with
# DWARF 4 debug info (valgrind 3.19 cannot read clang's default DWARF 5).
VG_B := build-valgrind
check-valgrind: check-deps
	@scripts/ensure-deps.sh valgrind
	@$(MAKE) --no-print-directory B=$(VG_B) CFLAGS="-O1 -g -gdwarf-4" all-tests
	@printf '#!/bin/sh\nexec valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect "%s" "$$@"\n' \
	    "$$(pwd)/$(VG_B)/fencedwrite" > $(VG_B)/fencedwrite-valgrind
	@chmod +x $(VG_B)/fencedwrite-valgrind
	@FW_BIN=$$(pwd)/$(VG_B)/fencedwrite-valgrind FWT_UNDER_VALGRIND=1 \
	    FWT_FIXTURES=$$(pwd)/tests/fixtures \
	    $(VG_B)/tests/test_cli

# ---- the library's ABI ---------------------------------------------------

# The built library against the recorded baseline (scripts/abi-check.sh).
abi-check: $(SHARED)
	@scripts/ensure-deps.sh abigail
	@scripts/abi-check.sh $(SHARED)

# After a deliberate, compatible change (src/fencedwrite.h's policy).
abi-baseline: $(SHARED)
	@scripts/ensure-deps.sh abigail
	@scripts/abi-check.sh $(SHARED) --record

# ---- install -------------------------------------------------------------

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) \
	    $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(PKGCONFIGDIR) \
	    $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3 \
	    $(DESTDIR)$(MANDIR)/man5
	install -m 755 $(BIN) $(DESTDIR)$(BINDIR)/fencedwrite
	install -m 755 scripts/fencedwrite-etcd $(DESTDIR)$(BINDIR)/fencedwrite-etcd
	install -m 644 $(STATIC) $(DESTDIR)$(LIBDIR)/libfencedwrite.a
	install -m 755 $(SHARED) $(DESTDIR)$(LIBDIR)/
	ln -sf libfencedwrite.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libfencedwrite.so
	install -m 644 src/fencedwrite.h $(DESTDIR)$(INCLUDEDIR)/fencedwrite.h
	sed $(PC_SED) fencedwrite.pc.in > $(DESTDIR)$(PKGCONFIGDIR)/fencedwrite.pc
	chmod 644 $(DESTDIR)$(PKGCONFIGDIR)/fencedwrite.pc
	install -m 644 man/fencedwrite.1 man/fencedwrite-etcd.1 \
	    $(DESTDIR)$(MANDIR)/man1/
	install -m 644 man/libfencedwrite.3 $(DESTDIR)$(MANDIR)/man3/
	for f in $(MAN3_LINKS); do \
	    ln -sf libfencedwrite.3 $(DESTDIR)$(MANDIR)/man3/$$f.3; done
	install -m 644 man/fencedwrite-fence.5 $(DESTDIR)$(MANDIR)/man5/
	install -d $(DESTDIR)$(BASHCOMPDIR)
	install -m 644 scripts/fencedwrite.bash-completion \
	    $(DESTDIR)$(BASHCOMPDIR)/fencedwrite
	install -d $(DESTDIR)$(DOCDIR)/examples/systemd
	install -m 644 README.md LICENSE $(DOCS) $(DESTDIR)$(DOCDIR)/
	install -m 644 $(EXAMPLES) $(DESTDIR)$(DOCDIR)/examples/systemd/
	@# Into the live system the dynamic linker's cache must learn the new
	@# library, or the command and programs linking it do not find it
	@# without LD_LIBRARY_PATH.  A staged install (DESTDIR) leaves that to
	@# the package's own trigger.
	@if [ -z "$(DESTDIR)" ] && command -v ldconfig >/dev/null 2>&1; then \
	    echo "ldconfig $(LIBDIR)"; ldconfig $(LIBDIR) || ldconfig; \
	fi

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/fencedwrite $(DESTDIR)$(BINDIR)/fencedwrite-etcd \
	    $(DESTDIR)$(LIBDIR)/libfencedwrite.a \
	    $(DESTDIR)$(LIBDIR)/libfencedwrite.so.$(VERSION) \
	    $(DESTDIR)$(LIBDIR)/$(SONAME) $(DESTDIR)$(LIBDIR)/libfencedwrite.so \
	    $(DESTDIR)$(INCLUDEDIR)/fencedwrite.h \
	    $(DESTDIR)$(PKGCONFIGDIR)/fencedwrite.pc \
	    $(DESTDIR)$(MANDIR)/man1/fencedwrite.1 \
	    $(DESTDIR)$(MANDIR)/man1/fencedwrite-etcd.1 \
	    $(DESTDIR)$(MANDIR)/man3/libfencedwrite.3 \
	    $(DESTDIR)$(MANDIR)/man5/fencedwrite-fence.5
	for f in $(MAN3_LINKS); do rm -f $(DESTDIR)$(MANDIR)/man3/$$f.3; done
	rm -rf $(DESTDIR)$(DOCDIR)
	rm -f $(DESTDIR)$(BASHCOMPDIR)/fencedwrite
	@if [ -z "$(DESTDIR)" ] && command -v ldconfig >/dev/null 2>&1; then \
	    ldconfig; \
	fi

clean:
	rm -rf build build-asan build-clang $(VG_B) $(FUZZ_B)

# The NFS lab (tests/nfs/): check-nfs and bench-nfs.
include tests/nfs/nfs.mk

# ---- Debian packages and example units -------------------------------------

# Examples installed with the documentation, under $(PREFIX)/share/doc/
# fencedwrite/examples/ (the Debian package installs the same directory).
EXAMPLES := examples/systemd/fencedwrite-report.service \
            examples/systemd/fencedwrite-report.timer

.PHONY: deb check-deb check-systemd

# build/deb/*.deb with dpkg-buildpackage from a copy of the tree, checked by
# lintian; the tools are installed with apt-get when root.
deb:
	@scripts/deb.sh

# Installs the packages, uses them and purges them again: root only.
check-deb:
	@tests/deb_test.sh

check-systemd: all
	@tests/systemd_test.sh $(B)
