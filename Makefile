# SPDX-License-Identifier: MIT
# Workforce build. `make` builds build/workforce; `make run` and `make test` first install what
# is missing (Debian packages with apt, npm tools from package-lock.json).
#
#   make / make all     build/workforce (gcc, -O2, warnings as errors)
#   make run            build, create a test key, print it with a curl line, serve
#   make test           every suite: unit, http (release + ASan/UBSan), openapi, fuzz-replay
#   make check          clang-format and the banned-function grep
#   make fuzz           libFuzzer campaigns (clang, ASan+UBSan), FUZZ_SECONDS each (default 600)
#   make bench          benchmarks against a reference measured in the same run
#   make SANITIZER=address|undefined|thread   a sanitized build in build/san-<name>/

CC ?= cc
ifeq ($(origin CC),default)
CC := gcc
endif
PKGS := libmicrohttpd jansson sqlite3 libcrypto libcurl libzip libxml-2.0 libseccomp libpq hiredis libargon2
WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wpointer-arith \
        -Wcast-qual -Wformat=2 -Wvla -Wimplicit-fallthrough
CFLAGS_BASE := -std=c17 -D_GNU_SOURCE -g $(WARN) $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lunistring -lpthread -lm

OUT ?= build
OPT ?= -O2
SAN_FLAGS ?=
ifneq ($(SANITIZER),)
OUT := build/san-$(SANITIZER)
SAN_FLAGS := -fsanitize=$(SANITIZER) -fno-omit-frame-pointer
endif

SRC := $(shell find src -name '*.c' | sort)
LIB_SRC := $(filter-out src/main.c,$(SRC))
GEN := $(OUT)/gen/migrations.c $(OUT)/gen/migrations_pg.c $(OUT)/gen/console.c
OBJ := $(patsubst src/%.c,$(OUT)/obj/%.o,$(LIB_SRC)) $(OUT)/obj/gen/migrations.o \
       $(OUT)/obj/gen/migrations_pg.o $(OUT)/obj/gen/console.o
# The web console: its own files, and the npm libraries it imports, copied in under a fixed name.
CONSOLE_FILES := $(sort $(wildcard console/*.html console/*.js console/*.css console/*.svg))
CONSOLE_LIBS := node_modules/htm/preact/standalone.module.js=preact.js
# ... and the OpenAPI document, so that /v1/openapi.json is sent compressed too (console.c).
CONSOLE_LIBS += docs/openapi.json=openapi.json
UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BIN := $(patsubst tests/unit/%.c,$(OUT)/tests/%,$(UNIT_SRC))
FUZZ_SRC := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_REPLAY := $(patsubst tests/fuzz/%.c,$(OUT)/fuzz-replay/%,$(FUZZ_SRC))

ALL_CFLAGS = $(CFLAGS_BASE) $(OPT) $(SAN_FLAGS) $(CFLAGS)
ALL_LDFLAGS = $(SAN_FLAGS) $(LDFLAGS)

.PHONY: all deps run test unit check fuzz fuzz-replay bench clean generated
all: $(OUT)/workforce

$(OUT)/workforce: $(OUT)/obj/main.o $(OUT)/libworkforce.a
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS)

$(OUT)/libworkforce.a: $(OBJ)
	rm -f $@ && ar rcs $@ $^

$(OUT)/obj/%.o: src/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

$(OUT)/obj/gen/%.o: $(OUT)/gen/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) $(OPT) -Isrc -Wno-overlength-strings -c -o $@ $<

$(OUT)/gen/migrations.c: $(sort $(wildcard src/store/sql/*.sql)) tools/embed.py
	@mkdir -p $(dir $@)
	python3 tools/embed.py --array store_sqlite_migrations $(sort $(wildcard src/store/sql/*.sql)) > $@.tmp && mv $@.tmp $@

$(OUT)/gen/migrations_pg.c: $(sort $(wildcard src/store/sql_pg/*.sql)) tools/embed.py
	@mkdir -p $(dir $@)
	python3 tools/embed.py --array store_pg_migrations $(sort $(wildcard src/store/sql_pg/*.sql)) > $@.tmp && mv $@.tmp $@

$(OUT)/gen/console.c: $(CONSOLE_FILES) $(foreach l,$(CONSOLE_LIBS),$(firstword $(subst =, ,$(l)))) \
                      tools/embed_console.py tools/embed.py src/api/console_assets.h Makefile
	@mkdir -p $(dir $@)
	python3 tools/embed_console.py $@ $(CONSOLE_FILES) $(CONSOLE_LIBS)

# ---- Tests ----
$(OUT)/tests/%: tests/unit/%.c tests/unit/t.h $(OUT)/libworkforce.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Wno-missing-prototypes -o $@ $< $(OUT)/libworkforce.a $(ALL_LDFLAGS) $(LIBS)

unit: $(UNIT_BIN)

$(OUT)/fuzz-replay/%: tests/fuzz/%.c tests/fuzz/replay.c $(OUT)/libworkforce.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Wno-missing-prototypes -o $@ $< tests/fuzz/replay.c $(OUT)/libworkforce.a $(ALL_LDFLAGS) $(LIBS)

fuzz-replay: $(FUZZ_REPLAY)

deps:
	@sh tools/deps.sh

run: deps
	@$(MAKE) --no-print-directory all
	@sh tools/run.sh

# The threaded module (ratelimit) also runs under ThreadSanitizer.
TSAN_UNITS := build/san-thread/tests/test_ratelimit build/san-thread/tests/test_embed_pool \
              build/san-thread/tests/test_cache
test: deps
	@echo "test: building (gcc; clang ASan+UBSan; clang TSan)"
	@$(MAKE) -s --no-print-directory all unit fuzz-replay
	@$(MAKE) -s --no-print-directory SANITIZER=address,undefined CC=clang OPT=-O1 all unit fuzz-replay
	@$(MAKE) -s --no-print-directory SANITIZER=thread CC=clang OPT=-O1 $(TSAN_UNITS)
	@sh tools/test.sh

check:
	@sh tools/check.sh

FUZZ_SECONDS ?= 600
fuzz:
	@sh tools/fuzz.sh $(FUZZ_SECONDS)

bench: deps
	@$(MAKE) --no-print-directory all
	@sh bench/run.sh

generated: $(OUT)/workforce
	python3 tools/gen_settings.py --bin $(OUT)/workforce
	python3 tools/gen_api_facts.py --bin $(OUT)/workforce
	python3 tools/gen_openapi.py
	python3 tools/gen_roles.py

clean:
	rm -rf build

-include $(shell find $(OUT)/obj -name '*.d' 2>/dev/null)
