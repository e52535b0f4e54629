# gavel - Kubernetes policy engine.  See README.md.
#
#   make                 build ./gavel
#   make test            unit, golden and conformance tests
#   make bench           benchmarks (figures printed, never asserted)
#   make SANITIZE=address,undefined test
#   make DEVELOPER=1     warnings are errors (CI sets this)

CC      ?= cc
PKGS    := jansson yaml-0.1 libpcre2-8 libcrypto libssl libcurl libmicrohttpd gnutls
CFLAGS  ?= -O2 -g
WARN    := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
           -Wpointer-arith -Wformat=2 -Wundef -Wvla -Wno-unused-parameter \
           -Wimplicit-fallthrough -Wno-format-truncation -Wwrite-strings
ALL_CFLAGS := -std=c11 -D_GNU_SOURCE -I. $(WARN) $(CFLAGS) \
           $(shell pkg-config --cflags $(PKGS))
LIBS    := $(shell pkg-config --libs $(PKGS)) -lm -lpthread
ifeq ($(DEVELOPER),1)
ALL_CFLAGS += -Werror
endif
ifneq ($(SANITIZE),)
ALL_CFLAGS += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS += -fsanitize=$(SANITIZE)
endif

BUILD   := build
# Everything but cmd/main.c goes into a static library the tests link against.
LIB_SRCS := $(wildcard common/*.c engine/*.c admission/*.c background/*.c certs/*.c kube/*.c) \
            $(filter-out cmd/main.c,$(wildcard cmd/*.c))
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/%.o)
TEST_SRCS := $(wildcard */tests/test_*.c)
TEST_BINS := $(TEST_SRCS:%.c=$(BUILD)/%)
BENCH_SRCS := $(wildcard */bench/*.c)
BENCH_BINS := $(BENCH_SRCS:%.c=$(BUILD)/%)
CONFORMANCE ?= ../shared/conformance

.PHONY: all test unit golden golden-update conformance bench fmt fmt-check clean demo

all: gavel

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/libgavel.a: $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

gavel: $(BUILD)/cmd/main.o $(BUILD)/libgavel.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS)

$(TEST_BINS): $(BUILD)/%: %.c $(BUILD)/libgavel.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libgavel.a $(LIBS) -lcmocka

$(BENCH_BINS): $(BUILD)/%: %.c $(BUILD)/libgavel.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libgavel.a $(LIBS)

# Each unit-test binary prints cmocka's summary; scripts/summary.sh adds them up.
test: gavel $(TEST_BINS)
	@sh scripts/run-tests.sh $(TEST_BINS)

unit: $(TEST_BINS)
	@for t in $(TEST_BINS); do $$t || exit 1; done

golden: gavel
	@sh scripts/golden.sh check

golden-update: gavel
	@sh scripts/golden.sh update

conformance: gavel
	@sh scripts/conformance.sh $(CONFORMANCE)

bench: gavel $(BENCH_BINS)
	@sh scripts/bench.sh $(CONFORMANCE)

demo: gavel
	@sh scripts/demo.sh

fmt:
	clang-format -i $(shell git ls-files '*.c' '*.h')

fmt-check:
	@clang-format --dry-run --Werror $(shell git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD) gavel

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
