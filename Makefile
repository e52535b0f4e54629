# gavel - Kubernetes policy engine.  See README.md.
#
#   make                 build ./gavel
#   make test            unit, golden and conformance tests
#   make bench           benchmarks (figures printed, never asserted)
#   make bench-admission only the admission sections of make bench
#   make SANITIZE=address,undefined test
#   make DEVELOPER=1     warnings are errors (CI sets this)

CC      ?= cc
PKGS    := jansson yaml-0.1 libpcre2-8 libcrypto libssl libcurl libmicrohttpd gnutls
CFLAGS  ?= -O2 -g
WARN    := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
           -Wpointer-arith -Wformat=2 -Wundef -Wvla -Wno-unused-parameter \
           -Wimplicit-fallthrough -Wno-format-truncation -Wwrite-strings
# make demo and make test first install the Debian packages they need when
# one is missing (scripts/install-deps.sh: cheap checks, apt-get only then),
# then make the goal in a second make, whose pkg-config runs after the
# install (the first one's may not find the libraries: its errors are not
# shown). INSTALL_DEPS=0 skips that step.
INSTALL_DEPS ?= 1
DEPS_FIRST := $(if $(filter 1,$(INSTALL_DEPS)),$(filter demo test,$(MAKECMDGOALS)))
PKG_CONFIG_ERR := $(if $(DEPS_FIRST),2>/dev/null)
ALL_CFLAGS := -std=c11 -D_GNU_SOURCE -I. $(WARN) $(CFLAGS) \
           $(shell pkg-config --cflags $(PKGS) $(PKG_CONFIG_ERR))
LIBS    := $(shell pkg-config --libs $(PKGS) $(PKG_CONFIG_ERR)) -lm -lpthread
ifeq ($(DEVELOPER),1)
ALL_CFLAGS += -Werror
endif
ifneq ($(SANITIZE),)
ALL_CFLAGS += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS += -fsanitize=$(SANITIZE)
endif
# ./gavel runs on jemalloc (Debian's libjemalloc): less server CPU per
# admission review than the C library's malloc (make bench-admission).
# Sanitizer builds, the tests, benchmarks and fuzz targets keep the C
# library's malloc; JEMALLOC=0 builds ./gavel on it too.
JEMALLOC ?= 1
ifeq ($(JEMALLOC)$(SANITIZE),1)
GAVEL_LIBS := $(shell pkg-config --libs jemalloc $(PKG_CONFIG_ERR))
endif

BUILD   := build
# Everything but cmd/main.c goes into a static library the tests link against.
LIB_SRCS := $(wildcard common/*.c engine/*.c engine/cel/*.c admission/*.c view/*.c background/*.c certs/*.c kube/*.c) \
            $(filter-out cmd/main.c,$(wildcard cmd/*.c))
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/%.o)
TEST_SRCS := $(wildcard */tests/test_*.c)
TEST_BINS := $(TEST_SRCS:%.c=$(BUILD)/%)
BENCH_SRCS := $(wildcard */bench/*.c)
BENCH_BINS := $(BENCH_SRCS:%.c=$(BUILD)/%)
CONFORMANCE ?= ../shared/conformance

.PHONY: all test unit golden golden-update conformance bench fmt fmt-check clean demo test-valgrind chainsaw

all: gavel

ifneq ($(DEPS_FIRST),)
DEPS_demo := build e2e
DEPS_test := build test e2e
demo test:
	@sh scripts/install-deps.sh $(DEPS_$@)
	@$(MAKE) --no-print-directory INSTALL_DEPS=0 $@
endif

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/libgavel.a: $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

gavel: $(BUILD)/cmd/main.o $(BUILD)/libgavel.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS) $(GAVEL_LIBS)

$(TEST_BINS): $(BUILD)/%: %.c $(BUILD)/libgavel.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libgavel.a $(LIBS) -lcmocka

$(BENCH_BINS): $(BUILD)/%: %.c $(BUILD)/libgavel.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libgavel.a $(LIBS)

# Each unit-test binary prints cmocka's summary; scripts/summary.sh adds them up.
# e2e/background.sh links its driver against this build's libgavel.a: with the
# same sanitizers (CC may carry flags there).
ifeq ($(DEPS_FIRST),)
test: gavel $(TEST_BINS)
	@LIBGAVEL='$(CURDIR)/$(BUILD)/libgavel.a' \
	CC='$(CC)$(if $(SANITIZE), -fsanitize=$(SANITIZE))' SANITIZE='$(SANITIZE)' \
	sh scripts/run-tests.sh $(TEST_BINS)
endif

unit: $(TEST_BINS)
	@for t in $(TEST_BINS); do $$t || exit 1; done

golden: gavel
	@sh scripts/golden.sh check

golden-update: gavel
	@sh scripts/golden.sh update

conformance: gavel
	@sh scripts/conformance.sh $(CONFORMANCE)

# The cel-spec tests that apply to gavel's CEL (passed/relevant per file; a report, not a gate).
.PHONY: cel-spec
cel-spec: gavel
	@sh scripts/cel-spec.sh $(CONFORMANCE)

bench: gavel $(BENCH_BINS)
	@sh scripts/bench.sh $(CONFORMANCE)

# The webhook at fixed rates and through the API server (scripts/bench.sh
# names the BENCH_* knobs: rates, rounds, pinning).
.PHONY: bench-admission
bench-admission: gavel $(BENCH_BINS)
	@BENCH_ONLY="direct apiserver" sh scripts/bench.sh $(CONFORMANCE)

# Soak (not part of make test): gavel serve in cluster mode on a local control
# plane, SOAK_SECONDS of admission at 1,000 reviews/s with policy updates every
# 10 s and a background scan every minute; prints RSS and open descriptors
# along the way and their growth (never asserted). SOAK_SECONDS=60 for a short run.
SOAK_SECONDS ?= 600
.PHONY: soak
soak: gavel $(BENCH_BINS)
	@SOAK_SECONDS=$(SOAK_SECONDS) bash scripts/soak.sh $(CONFORMANCE)

ifeq ($(DEPS_FIRST),)
demo: gavel
	@sh scripts/demo.sh
endif

# valgrind --leak-check=full over the offline suites (apply, test, jp).
# Kyverno's chainsaw end-to-end tests (e2e/chainsaw.sh): the table per folder
# and "N passed, N failed"; `make test` runs them with a floor.
chainsaw: gavel
	@CHAINSAW_FLOOR= bash e2e/chainsaw.sh

test-valgrind: gavel
	@sh scripts/valgrind.sh $(CONFORMANCE)

fmt:
	clang-format -i $(shell git ls-files '*.c' '*.h')

fmt-check:
	@clang-format --dry-run --Werror $(shell git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD) gavel

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

# ---- fuzzing ----
# libFuzzer targets (<module>/fuzz/fuzz_*.c), built with clang against the
# library sources compiled again with -fsanitize=fuzzer-no-link,address,undefined
# under build/fuzz/ (the normal objects are not touched). Needs Debian's clang
# and libclang-rt-<version>-dev (libFuzzer and the sanitizer runtimes).
#
#   make fuzz                     every target for FUZZ_SECONDS (default 60) each,
#                                 one after the other (make -j2 fuzz: two side
#                                 by side); ends with a summary, one line per
#                                 target: "<target>: <n> executions, <s> CPU
#                                 seconds, <n> crashes"; exits non-zero when any
#                                 target found one (or did not run)
#   make fuzz FUZZ_TARGETS=fuzz_pattern FUZZ_SECONDS=300
#   make fuzz-build               build only (build/fuzz/bin/<target>)
#
# Each target runs (common/fuzz/run.sh) in a directory of its own,
# build/fuzz/run/<target>: its output in log, run.sh's exit status in status,
# links to the shared bin, seeds, corpus and artifacts. Seeds are made at run
# time by build/fuzz/seeds (common/fuzz/seeds.c) into the run's seed-corpus
# (removed after the run), from the golden cases, the samples and
# $(CONFORMANCE); the growing corpus is build/fuzz/corpus/<target>, crashes go
# to build/fuzz/artifacts/<target>/. Reproduce one with
# build/fuzz/bin/<target> <file>.
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_BUILD   := $(BUILD)/fuzz
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS  := -std=c11 -D_GNU_SOURCE -I. -g -O1 -Wall -Wextra -Wno-unused-parameter \
                $(FUZZ_SAN) $(shell pkg-config --cflags $(PKGS) $(PKG_CONFIG_ERR))
FUZZ_SRCS    := $(wildcard */fuzz/fuzz_*.c)
FUZZ_NAMES   := $(notdir $(FUZZ_SRCS:.c=))
FUZZ_BINS    := $(addprefix $(FUZZ_BUILD)/bin/,$(FUZZ_NAMES))
FUZZ_OBJS    := $(LIB_SRCS:%.c=$(FUZZ_BUILD)/obj/%.o)
FUZZ_TARGETS ?= $(FUZZ_NAMES)

.PHONY: fuzz fuzz-build

$(FUZZ_BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

$(FUZZ_BUILD)/libgavel-fuzz.a: $(FUZZ_OBJS)
	@rm -f $@
	ar rcs $@ $^

# Every target's source is found by its name: <module>/fuzz/<name>.c.
$(FUZZ_BUILD)/bin/%: $(FUZZ_BUILD)/libgavel-fuzz.a $(FUZZ_SRCS) $(wildcard */fuzz/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $(filter %/$*.c,$(FUZZ_SRCS)) \
		$(FUZZ_BUILD)/libgavel-fuzz.a $(LIBS)

# The seed maker is an ordinary program (no libFuzzer main).
$(FUZZ_BUILD)/seeds: common/fuzz/seeds.c $(FUZZ_BUILD)/libgavel-fuzz.a
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $< $(FUZZ_BUILD)/libgavel-fuzz.a $(LIBS)

fuzz-build: $(FUZZ_BINS) $(FUZZ_BUILD)/seeds

# fuzz-run-<target>: one target's run. It never fails (so that make -j goes on
# with the others): `fuzz` reads the outcomes.
FUZZ_RUNS := $(addprefix fuzz-run-,$(FUZZ_TARGETS))
.PHONY: $(FUZZ_RUNS)

$(FUZZ_RUNS): fuzz-run-%: fuzz-build
	@dir=$(FUZZ_BUILD)/run/$*; rm -rf $$dir; \
	mkdir -p $$dir $(FUZZ_BUILD)/corpus $(FUZZ_BUILD)/artifacts; \
	for x in bin seeds corpus artifacts; do ln -s ../../$$x $$dir/$$x; done; \
	sh common/fuzz/run.sh $$dir $(FUZZ_SECONDS) "$(CONFORMANCE)" $* >$$dir/log 2>&1; \
	echo $$? >$$dir/status; \
	sed '/^== fuzz summary/,$$d' $$dir/log; \
	rm -rf $$dir/seed-corpus

fuzz: $(FUZZ_RUNS)
	@echo "== fuzz summary"; status=0; \
	for t in $(FUZZ_TARGETS); do \
		dir=$(FUZZ_BUILD)/run/$$t; \
		line=$$(grep "^$$t: [0-9]* executions" $$dir/log 2>/dev/null | tail -n 1); \
		echo "$${line:-$$t: no result (see $$dir/log)}"; \
		[ "$$(cat $$dir/status 2>/dev/null)" = 0 ] || status=1; \
	done; \
	exit $$status
