# libprofendpoints: plain GNU make, no configure step.
#   make            build build/libprofendpoints.so
#   make test       install missing packages, build, run every test (last line: N passed, N failed)
#                   T=PATTERN: only the tests whose name matches (test/run.sh -k; e.g. T=heap)
#   make demo       install missing packages, build, profile a workload, print its top
#   make bench      ratios against baselines (never pass/fail)
#   make asan       unit tests under ASan+UBSan;  make fuzz: libFuzzer on the parsers
#   make asan-lib   build-asan/libprofendpoints.so, the library under ASan+UBSan (e2e_hardened)
#   make fuzz-dwarf libFuzzer on the DWARF reader (symbols/dwarf.c)
#   make fuzz-decode libFuzzer on the pprof decoder (proto/decode.c)
#   make stress     the host under load and faults, with the figures
# V=1 shows commands; WERROR=1 turns warnings into errors.

CC         ?= cc
CXX        ?= c++
OPT        ?= -O2 -g
PKG_CONFIG ?= pkg-config
PREFIX     ?= /usr/local
LIBDIR     ?= $(PREFIX)/lib
BINDIR     ?= $(PREFIX)/bin
DESTDIR    ?=
BUILD      ?= build

ifeq ($(V),1)
Q =
msg =
else
Q = @
msg = @printf '  %-6s %s\n' "$(1)" "$(2)";
endif

WARNINGS := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 -Wundef \
            -Wvla -Wpointer-arith -Wno-unused-parameter
ifeq ($(WERROR),1)
WARNINGS += -Werror
endif

DEP_CFLAGS := $(shell $(PKG_CONFIG) --cflags zlib 2>/dev/null)
ALL_CFLAGS := -std=gnu11 -D_GNU_SOURCE -fPIC -fvisibility=hidden -ftls-model=initial-exec \
              -fno-omit-frame-pointer -fno-builtin-malloc -fno-builtin-calloc -fno-builtin-realloc \
              -fno-builtin-free $(WARNINGS) $(OPT) $(SAN) -I. -I$(BUILD)/gen $(DEP_CFLAGS) -MMD -MP \
              $(CFLAGS)
# libunwind is dlopen'd RTLD_LOCAL at run time (its _Unwind_* must not enter the global scope),
# so it is not linked; civetweb, zlib and nanopb are.
LIBS       := -lcivetweb -lz -l:libprotobuf-nanopb.a -ldl -lpthread
ALL_LDFLAGS := -shared -Wl,--version-script=preload/exports.map -Wl,-z,defs -Wl,-z,now \
               -Wl,-soname,libprofendpoints.so $(LDFLAGS)

SRCS    := $(sort $(wildcard preload/*.c symbols/*.c stack/*.c sink/*.c profile/*.c proto/*.c render/*.c \
                             sampler/*.c heap/*.c http/*.c))
SRCS    += $(sort $(wildcard trace/*.c contention/*.c interpose/*.c))
GEN_C   := $(BUILD)/gen/profile.pb.c
GEN_H   := $(BUILD)/gen/profile.pb.h
OBJS    := $(SRCS:%.c=$(BUILD)/%.o) $(BUILD)/gen/profile.pb.o
# Files that define interposed entry points (*_hooks.c) or the constructor stay out of the
# archive the unit tests link against.
HOOK_OBJS := $(filter $(BUILD)/preload/init.o $(BUILD)/preload/attach.o %_hooks.o,$(OBJS))
CORE_OBJS := $(filter-out $(HOOK_OBJS),$(OBJS))
LIB     := $(BUILD)/libprofendpoints.so
INJECT  := $(BUILD)/profep-inject
INJECT_SRCS := $(sort $(wildcard inject/*.c)) inject/stub.S
CORE_AR := $(BUILD)/libpe_core.a

# TLS (PROFEP_TLS_CERT) with civetweb 1.15 and OpenSSL 3: two forwarding
# libraries named as civetweb dlopens them (http/tls/ssl_shim.c says why).
# Built only where OpenSSL 3 is installed; without them TLS is unavailable.
SSL3      := $(firstword $(wildcard /usr/lib/*/libssl.so.3 /usr/lib/libssl.so.3))
TLS_SHIMS := $(if $(SSL3),$(BUILD)/libprofendpoints-ssl.so $(BUILD)/libprofendpoints-crypto.so)

.PHONY: all test tests unit demo bench install clean format lint proto asan fuzz fuzz-demangle \
        fuzz-dwarf deps stress
all: $(LIB) $(TLS_SHIMS) $(INJECT)

$(BUILD)/libprofendpoints-ssl.so: http/tls/ssl_shim.c
	@mkdir -p $(dir $@)
	$(call msg,LD,$@)
	$(Q)$(CC) -shared -fPIC $(OPT) -DPE_SSL_SHIM -o $@ $< -Wl,-soname,libssl.so \
	    -Wl,--no-as-needed -l:libssl.so.3 -l:libcrypto.so.3

$(BUILD)/libprofendpoints-crypto.so: http/tls/ssl_shim.c
	@mkdir -p $(dir $@)
	$(call msg,LD,$@)
	$(Q)$(CC) -shared -fPIC $(OPT) -o $@ $< -Wl,-soname,libcrypto.so -Wl,--no-as-needed \
	    -l:libcrypto.so.3

$(LIB): $(OBJS) preload/exports.map
	$(call msg,LD,$@)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $(OBJS) $(LIBS)

# The heap walk's check build (test/e2e/e2e_heap_cfi.sh): heap/sample.c with
# PE_HEAP_CFI_VERIFY, every other object as built.
VFY_LIB := $(BUILD)/libprofendpoints-cfiverify.so
$(BUILD)/verify/sample.o: heap/sample.c | $(GEN_H)
	@mkdir -p $(dir $@)
	$(call msg,CC,$< (verify))
	$(Q)$(CC) $(ALL_CFLAGS) -DPE_HEAP_CFI_VERIFY -c -o $@ $<

$(VFY_LIB): $(filter-out $(BUILD)/heap/sample.o,$(OBJS)) $(BUILD)/verify/sample.o preload/exports.map
	$(call msg,LD,$@)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $(filter %.o,$^) $(LIBS)

# The injector behind `profep attach/detach` (inject/, docs/ATTACH.md): a plain
# program, x86-64 only; it shares the entry points' names with preload/attach.h.
$(INJECT): $(INJECT_SRCS) $(wildcard inject/*.h) preload/attach.h preload/pe.h
	@mkdir -p $(dir $@)
	$(call msg,LD,$@)
	$(Q)$(CC) -std=gnu11 -D_GNU_SOURCE $(WARNINGS) $(OPT) -I. $(CFLAGS) -o $@ $(INJECT_SRCS) $(LDFLAGS)

$(CORE_AR): $(CORE_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $(CORE_OBJS)

$(BUILD)/%.o: %.c | $(GEN_H)
	@mkdir -p $(dir $@)
	$(call msg,CC,$<)
	$(Q)$(CC) $(ALL_CFLAGS) -c -o $@ $<

# The malloc-family fast paths are a few instructions and a tail call: no frame
# to set up (nothing unwinds through them by frame pointer; stacks start at
# their caller).
$(BUILD)/heap/malloc_hooks.o: ALL_CFLAGS += -fomit-frame-pointer
# The ASan build of the library (make asan-lib) leaves the entry points uninstrumented:
# ASan's own start-up calls our dl_iterate_phdr before its shadow memory exists.
$(HOOK_OBJS): ALL_CFLAGS += $(HOOK_SAN)

$(BUILD)/gen/profile.pb.o: $(GEN_C)
	$(call msg,CC,$<)
	$(Q)$(CC) $(ALL_CFLAGS) -Wno-missing-prototypes -c -o $@ $<

# The pprof schema is compiled with Debian's nanopb generator at build time.
$(GEN_C) $(GEN_H) &: proto/profile.proto proto/profile.options
	@mkdir -p $(BUILD)/gen
	$(call msg,NANOPB,proto/profile.proto)
	$(Q)nanopb_generator.py -q -I proto -D $(BUILD)/gen -f proto/profile.options proto/profile.proto

proto: $(GEN_C)

# ---- tests -------------------------------------------------------------------
# test/unit/u_*.c link against the core archive; test/progs/p_*.c(c) are plain programs
# the e2e scripts run with the library preloaded; test/bench/ holds `make bench`'s
# programs (built by scripts/bench_*.sh).  Every binary lands in $(BUILD)/test/.
UNIT_SRCS := $(sort $(wildcard test/unit/u_*.c))
PROG_SRCS := $(sort $(wildcard test/progs/p_*.c))
PROG_CXX  := $(sort $(wildcard test/progs/p_*.cc))
UNIT_BINS := $(patsubst test/unit/%.c,$(BUILD)/test/%,$(UNIT_SRCS))
PROG_BINS := $(patsubst test/progs/%.c,$(BUILD)/test/%,$(PROG_SRCS)) \
             $(patsubst test/progs/%.cc,$(BUILD)/test/%,$(PROG_CXX))
TEST_LIBS := -lz -l:libprotobuf-nanopb.a -lcivetweb -ldl -lpthread -lm
PROG_CFLAGS := -std=gnu11 -D_GNU_SOURCE -O1 -g -fno-omit-frame-pointer -fno-inline -Wall $(CFLAGS)

# test/unit/u_pyframes.c checks our CPython offsets against CPython 3.11's own headers when present.
PY311_INC := $(wildcard /usr/include/python3.11/internal/pycore_frame.h)
$(BUILD)/test/u_pyframes: ALL_CFLAGS += $(if $(PY311_INC),-I/usr/include/python3.11 -DPE_HAVE_PY311_HEADERS -Wno-undef)

$(BUILD)/test/u_%: test/unit/u_%.c test/unit/pe_test.h $(CORE_AR)
	@mkdir -p $(dir $@)
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -fvisibility=default -o $@ $< $(CORE_AR) $(TEST_LIBS) $(SAN)

# (the row programs share small headers: test/progs/p_host.h, test/progs/host_row.h)
$(BUILD)/test/p_%: test/progs/p_%.c $(wildcard test/progs/*.h)
	@mkdir -p $(dir $@)
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(PROG_CFLAGS) -o $@ $< -ldl -lpthread -lm $(PROG_LIBS)

# a libseccomp program (test/e2e/e2e_alone.sh; libseccomp-dev, scripts/deps.sh)
$(BUILD)/test/p_alone_seccomp: PROG_LIBS := -lseccomp
# a launcher under a filter refusing perf_event_open (test/e2e/e2e_cpu_fallback.sh)
$(BUILD)/test/p_seccomp_noperf: PROG_LIBS := -lseccomp

$(BUILD)/test/p_%: test/progs/p_%.cc
	@mkdir -p $(dir $@)
	$(call msg,CXXLD,$@)
	$(Q)$(CXX) -O1 -g -fno-omit-frame-pointer -fno-inline -Wall -o $@ $< -lpthread

tests: $(LIB) $(TLS_SHIMS) $(INJECT) $(VFY_LIB) $(UNIT_BINS) $(PROG_BINS)

# the attach tests' in-process stand-in for the injector (test/progs/attach_shim.c)
$(BUILD)/test/libpe_attach_shim.so: test/progs/attach_shim.c
	@mkdir -p $(dir $@)
	$(call msg,CCLD,$@)
	$(Q)$(CC) -shared -fPIC -O1 -g -Wall -o $@ $< -ldl -lpthread
# ... and a library loaded after an attach (test/progs/attach_plugin.c)
$(BUILD)/test/libpe_attach_plugin.so: test/progs/attach_plugin.c
	@mkdir -p $(dir $@)
	$(call msg,CCLD,$@)
	$(Q)$(CC) -shared -fPIC -O1 -g -fno-builtin -Wall -Wl,-z,now,-z,relro -o $@ $<
tests: $(BUILD)/test/libpe_attach_shim.so $(BUILD)/test/libpe_attach_plugin.so

# The unit tests run twice: as built, and under ASan+UBSan (build-asan/).  The same objects
# make build-asan/libprofendpoints.so (asan-lib: the entry points and a link more), which
# test/e2e/e2e_hardened.sh preloads after libasan into real process trees; ASan's malloc
# then shadows ours (heap profiling is unavailable there).
ASAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
ASAN_MAKE  := $(MAKE) --no-print-directory BUILD=$(BUILD)-asan SAN="$(ASAN_FLAGS)" OPT="-O1 -g" \
              LDFLAGS="$(LDFLAGS) -fsanitize=address,undefined" HOOK_SAN=-fno-sanitize=address

test: test-deps
	$(Q)$(MAKE) --no-print-directory tests
	$(Q)$(ASAN_MAKE) unit $(BUILD)-asan/libprofendpoints.so
	$(Q)T="$(T)" test/run.sh $(BUILD) $(BUILD)-asan

unit: $(UNIT_BINS)

.PHONY: asan-lib
asan-lib:
	$(Q)$(ASAN_MAKE) $(BUILD)-asan/libprofendpoints.so

asan:
	$(Q)$(ASAN_MAKE) unit
	$(Q)for t in $(UNIT_BINS:$(BUILD)/%=$(BUILD)-asan/%); do echo "== $$t"; $$t; r=$$?; [ $$r = 0 ] || [ $$r = 77 ] || exit 1; done

# libFuzzer (clang, ASan+UBSan) on the query parser, the router, the quick handlers
# and the PROFEP_* parsers (test/unit/fuzz_params.c), from the corpus in test/unit/corpus/,
# for FUZZ_SECONDS.  A crash leaves $(BUILD)-fuzz/crash-*: copy it into test/unit/corpus/ (then
# build/test/u_fuzz_corpus replays it in make test) and fix the parser.
FUZZ_SECONDS ?= 60
fuzz:
	$(Q)scripts/deps.sh fuzz
	$(Q)$(MAKE) --no-print-directory CC=clang BUILD=$(BUILD)-fuzz OPT="-O1 -g" \
	    SAN="-fsanitize=address,undefined,fuzzer-no-link" $(BUILD)-fuzz/libpe_core.a
	$(Q)clang -fsanitize=address,undefined,fuzzer -g -I. -o $(BUILD)-fuzz/fuzz_params \
	    test/unit/fuzz_params.c $(BUILD)-fuzz/libpe_core.a $(TEST_LIBS)
	$(Q)mkdir -p $(BUILD)-fuzz/corpus && cp test/unit/corpus/* $(BUILD)-fuzz/corpus/
	$(Q)$(BUILD)-fuzz/fuzz_params -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -timeout=10 \
	    -artifact_prefix=$(BUILD)-fuzz/ -print_final_stats=1 $(BUILD)-fuzz/corpus \
	    >$(BUILD)-fuzz/fuzz.log 2>&1; st=$$?; grep -v '^#[0-9]' $(BUILD)-fuzz/fuzz.log | \
	    tail -n 20; echo "fuzz: exit $$st, log $(BUILD)-fuzz/fuzz.log"; exit $$st

# libFuzzer on the demangler (test/unit/fuzz_demangle.c, seeds in test/unit/corpus_dem/),
# with libstdc++'s __cxa_demangle loaded, for FUZZ_SECONDS.
fuzz-demangle:
	$(Q)scripts/deps.sh fuzz
	$(Q)$(MAKE) --no-print-directory CC=clang BUILD=$(BUILD)-fuzz OPT="-O1 -g" \
	    SAN="-fsanitize=address,undefined,fuzzer-no-link" $(BUILD)-fuzz/libpe_core.a
	$(Q)clang -fsanitize=address,undefined,fuzzer -g -I. -o $(BUILD)-fuzz/fuzz_demangle \
	    test/unit/fuzz_demangle.c $(BUILD)-fuzz/libpe_core.a $(TEST_LIBS)
	$(Q)mkdir -p $(BUILD)-fuzz/corpus_dem && cp test/unit/corpus_dem/* $(BUILD)-fuzz/corpus_dem/
	$(Q)$(BUILD)-fuzz/fuzz_demangle -max_total_time=$(FUZZ_SECONDS) -max_len=4200 -timeout=10 \
	    -artifact_prefix=$(BUILD)-fuzz/ -print_final_stats=1 $(BUILD)-fuzz/corpus_dem \
	    >$(BUILD)-fuzz/fuzz_demangle.log 2>&1; st=$$?; grep -v '^#[0-9]' \
	    $(BUILD)-fuzz/fuzz_demangle.log | tail -n 20; \
	    echo "fuzz-demangle: exit $$st, log $(BUILD)-fuzz/fuzz_demangle.log"; exit $$st

# libFuzzer on symbols/dwarf.c (test/unit/fuzz_dwarf.c): each input is a whole ELF file, from
# the seeds in test/unit/corpus_dwarf/.  A crash leaves $(BUILD)-fuzz/crash-*: copy it into
# test/unit/corpus_dwarf/ (build/test/u_dwarf replays it) and fix the reader.
fuzz-dwarf:
	$(Q)scripts/deps.sh fuzz
	$(Q)$(MAKE) --no-print-directory CC=clang BUILD=$(BUILD)-fuzz OPT="-O1 -g" \
	    SAN="-fsanitize=address,undefined,fuzzer-no-link" $(BUILD)-fuzz/libpe_core.a
	$(Q)clang -fsanitize=address,undefined,fuzzer -g -I. -o $(BUILD)-fuzz/fuzz_dwarf \
	    test/unit/fuzz_dwarf.c $(BUILD)-fuzz/libpe_core.a $(TEST_LIBS)
	$(Q)mkdir -p $(BUILD)-fuzz/corpus_dwarf && cp test/unit/corpus_dwarf/* $(BUILD)-fuzz/corpus_dwarf/
	$(Q)$(BUILD)-fuzz/fuzz_dwarf -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -timeout=10 \
	    -rss_limit_mb=1024 -artifact_prefix=$(BUILD)-fuzz/ -print_final_stats=1 \
	    $(BUILD)-fuzz/corpus_dwarf >$(BUILD)-fuzz/fuzz_dwarf.log 2>&1; st=$$?; \
	    grep -v '^#[0-9]' $(BUILD)-fuzz/fuzz_dwarf.log | tail -n 20; \
	    echo "fuzz-dwarf: exit $$st, log $(BUILD)-fuzz/fuzz_dwarf.log"; exit $$st

# libFuzzer on proto/decode.c (test/unit/fuzz_decode.c), the decoder of profiles other
# processes send (pid=all): seeds are this build's own profiles (u_decode --seeds) plus
# test/unit/corpus_decode/.  A crash leaves $(BUILD)-fuzz/crash-*: copy it into
# test/unit/corpus_decode/ (build/test/u_decode replays it) and fix the decoder.
.PHONY: fuzz-decode
fuzz-decode:
	$(Q)scripts/deps.sh fuzz
	$(Q)$(MAKE) --no-print-directory $(BUILD)/test/u_decode
	$(Q)$(MAKE) --no-print-directory CC=clang BUILD=$(BUILD)-fuzz OPT="-O1 -g" \
	    SAN="-fsanitize=address,undefined,fuzzer-no-link" $(BUILD)-fuzz/libpe_core.a
	$(Q)clang -fsanitize=address,undefined,fuzzer -g -I. -o $(BUILD)-fuzz/fuzz_decode \
	    test/unit/fuzz_decode.c $(BUILD)-fuzz/libpe_core.a $(TEST_LIBS)
	$(Q)mkdir -p $(BUILD)-fuzz/corpus_decode && cp test/unit/corpus_decode/* $(BUILD)-fuzz/corpus_decode/
	$(Q)$(BUILD)/test/u_decode --seeds $(BUILD)-fuzz/corpus_decode
	$(Q)$(BUILD)-fuzz/fuzz_decode -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -timeout=10 \
	    -rss_limit_mb=1024 -artifact_prefix=$(BUILD)-fuzz/ -print_final_stats=1 \
	    $(BUILD)-fuzz/corpus_decode >$(BUILD)-fuzz/fuzz_decode.log 2>&1; st=$$?; \
	    grep -v '^#[0-9]' $(BUILD)-fuzz/fuzz_decode.log | tail -n 20; \
	    echo "fuzz-decode: exit $$st, log $(BUILD)-fuzz/fuzz_decode.log"; exit $$st

# The host program under load and faults, with the figures (docs/HARDENING.md):
# 50 clients on every endpoint for 30 s, 100k threads, dlopen and fork+exec storms,
# the program's own signal handlers, exit mid-profile, clients that hang up.  A few
# minutes; never pass/fail in CI (test/e2e/e2e_stress.sh runs the short version).
stress: deps
	$(Q)$(MAKE) --no-print-directory tests
	$(Q)scripts/stress.sh $(BUILD)

demo: deps
	$(Q)$(MAKE) --no-print-directory $(LIB) $(BUILD)/test/p_cpu_split
	$(Q)scripts/demo.sh $(BUILD)

bench: deps
	$(Q)$(MAKE) --no-print-directory tests
	$(Q)scripts/bench.sh $(BUILD)

deps:
	$(Q)scripts/deps.sh

# Every extra package the suite's tests use, in one apt-get before the first test (the
# tests' own deps.sh calls then find them installed instead of installing mid-suite).
.PHONY: test-deps
test-deps:
	$(Q)scripts/deps.sh names browser node server tree fleet python apache

install: $(LIB) $(TLS_SHIMS) $(INJECT)
	install -d $(DESTDIR)$(LIBDIR)
	install -m 755 $(LIB) $(TLS_SHIMS) $(DESTDIR)$(LIBDIR)/
	@# ld.so's cache, so that LD_PRELOAD=libprofendpoints.so finds it by name from anywhere
	@[ -n "$(DESTDIR)" ] || ldconfig 2>/dev/null || true
	install -d $(DESTDIR)$(BINDIR)
	install -m 755 scripts/profep $(DESTDIR)$(BINDIR)/profep
	install -m 755 $(INJECT) $(DESTDIR)$(BINDIR)/profep-inject

clean:
	rm -rf $(BUILD) $(BUILD)-asan $(BUILD)-fuzz

format:
	clang-format -i $(SRCS) $(wildcard */*.h)

lint:
	$(Q)scripts/lint.sh

-include $(OBJS:.o=.d)
