# assoc: build, test, demo.  `make` builds build/assoc; `make test` installs
# what is missing, builds with AddressSanitizer and UBSan, runs the Criterion
# suite, checks every bundled spec and runs a bounded fuzz smoke test, a
# line a step (tests/all.sh); `make check-quick` is the edit loop.  V=1
# prints the compiler's command lines.

CC      ?= cc
OPT     ?= -O2
CFLAGS  += -std=c11 -D_GNU_SOURCE $(OPT) -g -Wall -Wextra -I.
LDLIBS  += -lyaml -lm -ldl
# The CPU backend: LLVM's C API from the LLVM the packages provide.  With
# NO_LLVM=1 it is left out (compiler/llvm/llvm_none.c says so at run time).
# build/assoc itself does not link LLVM: the backend is build/assoc-llvm.so,
# which it opens when a command needs it (compiler/cli/llvm_load.c).
LLVM_CONFIG ?= llvm-config
# The plugin is every file of compiler/llvm/ but the stand-in for builds
# without LLVM.
LLVM_ALL := $(filter-out compiler/llvm/llvm_none.c,$(wildcard compiler/llvm/*.c))
# MPI (assoc run --mpi, compiler/lib/assoc_mpi.h): Open MPI's flags from
# its compiler wrapper; without it (or with NO_MPI=1) the rest builds and
# --mpi says why it is missing.
MPICC ?= mpicc
ifneq ($(NO_MPI),1)
MPI_CFLAGS := $(shell $(MPICC) --showme:compile 2>/dev/null)
MPI_LDLIBS := $(shell $(MPICC) --showme:link 2>/dev/null)
endif
ifeq ($(strip $(MPI_LDLIBS)),)
CFLAGS  += -DASSOC_NO_MPI '-DASSOC_NO_MPI_WHY="$(if $(filter 1,$(NO_MPI)),NO_MPI=1 at build time,no $(MPICC) at build time (make deps installs Open MPI))"'
else
CFLAGS  += $(MPI_CFLAGS)
LDLIBS  += $(MPI_LDLIBS)
endif
BASE_LDLIBS := $(LDLIBS) -lpthread
ifeq ($(NO_LLVM),1)
CFLAGS  += -DASSOC_NO_LLVM
LDLIBS  += -lpthread
LLVM_SRC := $(LLVM_ALL)
else
CFLAGS  += $(shell $(LLVM_CONFIG) --cflags 2>/dev/null)
LLVM_LDLIBS := $(shell $(LLVM_CONFIG) --ldflags --libs 2>/dev/null)
LDLIBS  += $(LLVM_LDLIBS) -lpthread
LLVM_SRC :=
endif
SAN     := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
# One set of objects serves the command line, the static libraries, the
# shared one and the LLVM plugin: position-independent, and, with no
# interposition of the library's own functions (its map exports assoc_*
# alone), inlined and called as an executable's are.
PIC     := -fPIC -fno-semantic-interposition
# Objects depend on the flags they were built with: another CC, OPT or
# NO_LLVM rebuilds them rather than linking them with those of the other
# build (llvm_none.o beside llvm_load.o, say).
FLAGS_STAMP := build/flags
FLAGS_NOW := $(CC) $(CFLAGS) $(PIC) NO_LLVM=$(NO_LLVM) NO_MPI=$(NO_MPI)
$(shell mkdir -p build && (echo '$(FLAGS_NOW)' | cmp -s - $(FLAGS_STAMP) || echo '$(FLAGS_NOW)' >$(FLAGS_STAMP)))
FUZZ_SECONDS ?= 30
# Quiet unless V=1: a build prints its warnings and errors, not its commands.
Q := $(if $(filter 1,$(V)),,@)
# Each object depends on the headers it includes (-MMD), not on all of them.
DEPFLAGS = -MMD -MP
# of those, the .npy reader's share; the spec loader has the rest
FUZZ_NPY_SECONDS ?= 10
# and the cache readers' (sealed artifacts, tuning entries)
FUZZ_CACHE_SECONDS ?= 5

LIB_SRC := $(wildcard ir/*.c) $(filter-out compiler/cli/main.c compiler/cli/llvm_load.c $(LLVM_SRC),$(wildcard compiler/*/*.c)) \
           $(wildcard runtime/*.c runtime/*/*.c)
# Devices and targets are found through weak references, which do not pull
# objects out of an archive: the command line takes the whole library.
WHOLE   = -Wl,--whole-archive $(1) -Wl,--no-whole-archive
TEST_SRC := $(wildcard tests/*.c)
ifeq ($(NO_LLVM),1)
# the CPU backend's own tests reach into its LLVM internals
TEST_SRC := $(filter-out tests/test_cpu.c tests/test_cpuhost.c,$(TEST_SRC))
endif
# (objects beside the binary build/asan/tests, not in a folder of its name)
TEST_OBJ := $(TEST_SRC:tests/%.c=build/asan/t/%.o)

OBJ      := $(LIB_SRC:%.c=build/obj/%.o)
ASAN_OBJ := $(LIB_SRC:%.c=build/asan/%.o)

PKGS := libyaml-dev libcriterion-dev clang libclang-rt-14-dev pkg-config llvm-14-dev libopenmpi-dev openmpi-bin

.PHONY: all deps test check-quick demo fuzz fuzz-spec fuzz-readers clean check-specs install lib gpu-check gpu-debs

all: build/assoc

build/obj/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) $(PIC) $(DEPFLAGS) -c $< -o $@

build/asan/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) $(SAN) $(DEPFLAGS) -c $< -o $@

# The templates and the emulator's header are assembled into blobs.o
# (.incbin), which -MMD does not see.
BLOB_DEPS := $(wildcard templates/*.cuh) runtime/emu/emu.hpp runtime/emu/emu_tmap.h
$(foreach d,obj asan fuzz tsan,build/$(d)/compiler/cuda/blobs.o): $(BLOB_DEPS)

build/asan/t/%.o: tests/%.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) $(SAN) $(DEPFLAGS) -c $< -o $@

build/libassoc.a: $(OBJ)
	$(Q)rm -f $@ && ar rcs $@ $^

build/asan/libassoc.a: $(ASAN_OBJ)
	$(Q)rm -f $@ && ar rcs $@ $^

ifeq ($(NO_LLVM),1)
build/assoc: build/obj/compiler/cli/main.o build/libassoc.a
	$(Q)$(CC) $(CFLAGS) -o $@ $< build/libassoc.a $(LDLIBS)
else
# The command line without LLVM (-rdynamic: the plugin takes the rest of
# assoc from it), and the plugin with the backend and LLVM (-Bsymbolic: its
# own entry points, not the executable's of the same names).
CORE_OBJ := $(filter-out $(LLVM_ALL:%.c=build/obj/%.o),$(OBJ))

build/libassoc-core.a: $(CORE_OBJ)
	$(Q)rm -f $@ && ar rcs $@ $^

build/assoc: build/obj/compiler/cli/main.o build/obj/compiler/cli/llvm_load.o build/libassoc-core.a build/assoc-llvm.so
	$(Q)$(CC) $(CFLAGS) -rdynamic -o $@ build/obj/compiler/cli/main.o build/obj/compiler/cli/llvm_load.o \
		$(call WHOLE,build/libassoc-core.a) $(BASE_LDLIBS)

build/assoc-llvm.so: $(LLVM_ALL:%.c=build/obj/%.o)
	$(Q)$(CC) -shared -Wl,-Bsymbolic -o $@ $^ $(LLVM_LDLIBS) -lpthread -lm
endif

build/asan/assoc: build/asan/compiler/cli/main.o build/asan/libassoc.a
	$(Q)$(CC) $(CFLAGS) $(SAN) -o $@ $< $(call WHOLE,build/asan/libassoc.a) $(LDLIBS)

# (the fake NCCL where MPI is: it runs its collectives over MPI)
FAKE_NCCL := $(if $(strip $(MPI_LDLIBS)),build/libfakenccl.so)
build/asan/tests: $(TEST_OBJ) build/asan/libassoc.a build/libfakecuda.so \
		  build/libfakecuda-old.so build/libfakenvrtc.so build/libfakellvm.so $(FAKE_NCCL)
	$(Q)$(CC) $(CFLAGS) $(SAN) -o $@ $(TEST_OBJ) build/asan/libassoc.a -lcriterion $(LDLIBS)

# A stand-in for the CUDA driver that fails on demand (tests/fake/fakecuda.c).
build/libfakecuda.so: tests/fake/fakecuda.c
	@mkdir -p build
	$(Q)$(CC) -std=c11 -D_GNU_SOURCE -O1 -g -shared -fPIC -o $@ $<

# The same without cuFuncSetAttribute.
build/libfakecuda-old.so: tests/fake/fakecuda.c
	@mkdir -p build
	$(Q)$(CC) -std=c11 -D_GNU_SOURCE -DFAKECUDA_OLD -O1 -g -shared -fPIC -o $@ $<

# A CPU backend plugin from another build (tests/fake/fakellvm.c).
build/libfakellvm.so: tests/fake/fakellvm.c
	@mkdir -p build
	$(Q)$(CC) -std=c11 -D_GNU_SOURCE -O1 -g -shared -fPIC -o $@ $<

# A stand-in for NCCL over MPI (tests/fake/fakenccl.c), where MPI is.
build/libfakenccl.so: tests/fake/fakenccl.c
	@mkdir -p build
	$(Q)$(CC) -std=c11 -D_GNU_SOURCE -O1 -g -shared -fPIC $(MPI_CFLAGS) -o $@ $< $(MPI_LDLIBS)

# A stand-in for an older NVRTC (tests/fake/fakenvrtc.c).
build/libfakenvrtc.so: tests/fake/fakenvrtc.c
	@mkdir -p build
	$(Q)$(CC) -std=c11 -D_GNU_SOURCE -O1 -g -shared -fPIC -o $@ $<

# The fuzz target links against an archive, so that only the objects the
# loader needs come in (the commands' objects need main.c).
FUZZ_OBJ := $(LIB_SRC:%.c=build/fuzz/%.o)
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined

build/fuzz/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(Q)clang $(CFLAGS) -O1 -fsanitize=fuzzer-no-link $(FUZZ_SAN) $(DEPFLAGS) -c $< -o $@

build/fuzz/libassoc.a: $(FUZZ_OBJ)
	$(Q)rm -f $@ && ar rcs $@ $^

build/fuzz_spec: tests/fuzz/fuzz_spec.c build/fuzz/libassoc.a
	$(Q)clang $(CFLAGS) -O1 -fsanitize=fuzzer $(FUZZ_SAN) -o $@ tests/fuzz/fuzz_spec.c build/fuzz/libassoc.a $(LDLIBS)

build/fuzz_npy: tests/fuzz/fuzz_npy.c build/fuzz/libassoc.a
	$(Q)clang $(CFLAGS) -O1 -fsanitize=fuzzer $(FUZZ_SAN) -o $@ tests/fuzz/fuzz_npy.c build/fuzz/libassoc.a $(LDLIBS)
build/fuzz_cache: tests/fuzz/fuzz_cache.c build/fuzz/libassoc.a
	$(Q)clang $(CFLAGS) -O1 -fsanitize=fuzzer $(FUZZ_SAN) -o $@ tests/fuzz/fuzz_cache.c build/fuzz/libassoc.a $(LDLIBS)

# libassoc under ThreadSanitizer, and tests/tsan/threads.c, which runs
# its handles on several threads at once (tests/tsan/run.sh runs it; not
# part of `make test`: minutes, where the emulator builds its modules).
TSAN_OBJ := $(filter-out build/tsan/compiler/cli/%,$(LIB_SRC:%.c=build/tsan/%.o))
TSAN    := -fsanitize=thread -fno-omit-frame-pointer

build/tsan/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(Q)clang $(CFLAGS) -O1 $(TSAN) $(DEPFLAGS) -c $< -o $@

build/tsan/threads: tests/tsan/threads.c $(TSAN_OBJ)
	$(Q)clang $(CFLAGS) -O1 $(TSAN) -o $@ $< $(TSAN_OBJ) $(LDLIBS)

# libassoc: static and shared, the header compiler/lib/assoc.h, a pkg-config file.
PREFIX  ?= /usr/local
# the command line's files (compiler/cli/) need main.c: not part of the
# shared library
PIC_OBJ := $(filter-out build/obj/compiler/cli/%,$(OBJ))

# The installed specs' directory, compiled into compiler/front/specdir.c's
# objects alone: another PREFIX rebuilds those, not the rest.
SPECDIR_STAMP := build/prefix
$(shell mkdir -p build && (echo '$(PREFIX)' | cmp -s - $(SPECDIR_STAMP) || echo '$(PREFIX)' >$(SPECDIR_STAMP)))
SPECDIR_OBJ := $(foreach d,obj asan fuzz tsan,build/$(d)/compiler/front/specdir.o)
$(SPECDIR_OBJ): $(SPECDIR_STAMP)
$(SPECDIR_OBJ): CFLAGS += '-DASSOC_SHAREDIR="$(PREFIX)/share/assoc"'

build/libassoc.so: $(PIC_OBJ) compiler/lib/libassoc.map
	$(Q)$(CC) -shared -Wl,-soname,libassoc.so -Wl,--no-undefined -Wl,--version-script=compiler/lib/libassoc.map \
		-o $@ $(PIC_OBJ) $(LDLIBS)

# The installed static library: the same objects joined into one, with
# every global but the API (assoc_*) made local, so that a program's own
# row_free or rng_next neither clashes with the library's nor replaces it.
# (build/libassoc.a keeps its internals global: the command line and the
# tests link them.)
# Its one object would take MPI into every program that links it:
# assoc_mpi.h's functions go in build/libassoc-mpi.a, the same library
# with them, for programs that link Open MPI.
API_OBJ := $(filter-out build/obj/compiler/cli/% build/obj/compiler/lib/assoc_mpi.o,$(OBJ))
build/libassoc-api.a build/libassoc-mpi.a:
	$(Q)ld -r -o $(@:.a=.o) $^
	$(Q)objcopy --wildcard --keep-global-symbol='assoc_*' $(@:.a=.o)
	$(Q)rm -f $@ && ar rcs $@ $(@:.a=.o) && rm -f $(@:.a=.o)
build/libassoc-api.a: $(API_OBJ)
build/libassoc-mpi.a: $(API_OBJ) build/obj/compiler/lib/assoc_mpi.o

lib: build/libassoc-api.a build/libassoc.so

# Sequence-parallel attention across MPI ranks (examples/mpi_attention.c):
# mpirun -np 4 build/mpi_attention.
build/mpi_attention: examples/mpi_attention.c build/libassoc-mpi.a compiler/lib/assoc_mpi.h compiler/lib/assoc.h
	$(Q)$(CC) $(CFLAGS) -Icompiler/lib -o $@ $< build/libassoc-mpi.a $(LDLIBS)

# assoc_mpi.h's device functions on the fake driver and fake NCCL
# (tests/mpi/device_states.c, run by tests/test_mpi.c under mpirun).
build/mpi_device_states: tests/mpi/device_states.c build/libassoc.a build/libfakecuda.so build/libfakenccl.so
	$(Q)$(CC) $(CFLAGS) -o $@ $< build/libassoc.a $(LDLIBS)

# With Open MPI: assoc_mpi.h and the library holding its functions too.
MPI_INSTALL := $(if $(strip $(MPI_LDLIBS)),build/libassoc-mpi.a)
install: build/assoc build/libassoc-api.a build/libassoc.so $(MPI_INSTALL)
	@case '$(DESTDIR)$(PREFIX)' in *[[:space:]]*) \
		echo "error: PREFIX and DESTDIR must not contain spaces (pkg-config splits its paths at them)"; exit 1;; esac
	install -d '$(DESTDIR)$(PREFIX)/bin' '$(DESTDIR)$(PREFIX)/lib/pkgconfig' '$(DESTDIR)$(PREFIX)/include'
	install -m 755 build/assoc '$(DESTDIR)$(PREFIX)/bin/assoc'
	if [ -f build/assoc-llvm.so ]; then install -d '$(DESTDIR)$(PREFIX)/lib/assoc' && \
		install -m 755 build/assoc-llvm.so '$(DESTDIR)$(PREFIX)/lib/assoc/assoc-llvm.so'; fi
	install -m 644 build/libassoc-api.a '$(DESTDIR)$(PREFIX)/lib/libassoc.a'
	install -m 755 build/libassoc.so '$(DESTDIR)$(PREFIX)/lib/libassoc.so'
	install -m 644 compiler/lib/assoc.h '$(DESTDIR)$(PREFIX)/include/assoc.h'
	if [ -n '$(MPI_INSTALL)' ]; then install -m 644 build/libassoc-mpi.a '$(DESTDIR)$(PREFIX)/lib/libassoc-mpi.a' && \
		install -m 644 compiler/lib/assoc_mpi.h '$(DESTDIR)$(PREFIX)/include/assoc_mpi.h'; fi
	install -d '$(DESTDIR)$(PREFIX)/share/assoc' && install -m 644 bench/naive.c '$(DESTDIR)$(PREFIX)/share/assoc/naive.c'
	install -d '$(DESTDIR)$(PREFIX)/share/assoc/specs/loops' && install -m 644 specs/*.yaml '$(DESTDIR)$(PREFIX)/share/assoc/specs/' && \
		install -m 644 specs/loops/*.yaml '$(DESTDIR)$(PREFIX)/share/assoc/specs/loops/'
	printf 'prefix=%s\nlibdir=$${prefix}/lib\nincludedir=$${prefix}/include\n\nName: assoc\nDescription: %s\nVersion: 0.1.0\nCflags: -I$${includedir}\nLibs: -L$${libdir} -Wl,-rpath,$${libdir} -lassoc\nLibs.private: %s\n' \
		'$(PREFIX)' 'secretly associative loops compiled for CPUs and GPUs' '$(LDLIBS)' \
		> '$(DESTDIR)$(PREFIX)/lib/pkgconfig/assoc.pc'

# Install missing system packages (Debian's apt; root or sudo).
deps:
	@missing=""; for p in $(PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		sudo=""; [ "$$(id -u)" = 0 ] || sudo=sudo; \
		$$sudo apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq $$missing >/dev/null || \
		{ echo "error: could not install$$missing"; exit 1; }; \
	fi

check-specs: build/asan/assoc
	build/asan/assoc check specs/*.yaml tests/format/*.yaml docs/examples/*.yaml

test: deps
	@tests/all.sh

# The edit loop: the same build (only what changed is rebuilt), the suites
# but the tests listed in tests/slow.txt (each over about 0.6 s under the
# sanitizers), with the emulator's modules from build/cache as the full
# run leaves them.  About a minute on two cores after a first build.
check-quick: deps
	@start=$$(date +%s); \
	make --no-print-directory -s -j2 build/asan/tests build/asan/assoc >build/build.log 2>&1 || \
		{ cat build/build.log; exit 1; }; \
	grep -A3 'warning:' build/build.log; \
	tests/suites.sh build/asan/tests --quick; rc=$$?; \
	read -r p f s <build/tests.counts; \
	echo "check-quick: $$(($$(date +%s) - start)) s"; \
	echo "tests: $$p passed, $$f failed, $$s skipped"; \
	exit $$rc

# The spec loader's run and the .npy and cache readers' runs are two
# halves that make -j2 runs side by side (their seconds add up to
# FUZZ_SECONDS).
fuzz: fuzz-spec fuzz-readers

fuzz-spec: deps build/fuzz_spec
	@mkdir -p build/fuzz-corpus
	$(Q)build/fuzz_spec -runs=0 $(wildcard tests/fuzz/regress/*) 2>build/fuzz-regress.log || \
		{ cat build/fuzz-regress.log; exit 1; }
	$(Q)build/fuzz_spec -max_total_time=$$(($(FUZZ_SECONDS) - $(FUZZ_NPY_SECONDS) - $(FUZZ_CACHE_SECONDS))) -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
		-dict=tests/fuzz/spec.dict -artifact_prefix=build/fuzz- \
		build/fuzz-corpus $(wildcard specs tests/bad tests/format tests/laws) 2>build/fuzz.log || \
		{ tail -40 build/fuzz.log; echo "fuzz: crash input kept under build/; copy it to tests/fuzz/regress/"; exit 1; }
	@grep -E '^Done|#[0-9]+.*DONE' build/fuzz.log | tail -1

fuzz-readers: deps build/fuzz_npy build/fuzz_cache
	@mkdir -p build/fuzz-npy-corpus
	@# the .npy reader, from NumPy's own headers; an input claiming more
	@# than it holds must not allocate it (-malloc_limit_mb)
	$(Q)build/fuzz_npy -max_total_time=$(FUZZ_NPY_SECONDS) -max_len=1024 -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=64 \
		-dict=tests/fuzz/npy.dict -artifact_prefix=build/fuzz-npy- build/fuzz-npy-corpus tests/fuzz/npy 2>build/fuzz-npy.log || \
		{ tail -40 build/fuzz-npy.log; echo "fuzz: crash input kept under build/; copy it to tests/fuzz/npy/"; exit 1; }
	@grep -E '^Done|#[0-9]+.*DONE' build/fuzz-npy.log | tail -1
	@# the cache readers, on planted files: a sealed read gives back only
	@# what a writer sealed for that key; a tuning entry reads or misses
	@rm -rf build/fuzz-cache.* && mkdir -p build/fuzz-cache-corpus
	$(Q)build/fuzz_cache -max_total_time=$(FUZZ_CACHE_SECONDS) -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
		-artifact_prefix=build/fuzz-cache- build/fuzz-cache-corpus 2>build/fuzz-cache.log || \
		{ tail -40 build/fuzz-cache.log; echo "fuzz: crash input kept under build/"; exit 1; }
	@grep -E '^Done|#[0-9]+.*DONE' build/fuzz-cache.log | tail -1

demo: deps
	$(MAKE) build/assoc
	build/assoc check specs/online_softmax.yaml

# Everything that needs a GPU, in one run (tests/gpu/check.sh; log in
# ASSOC_GPU_LOG or build/gpu-check).
gpu-check:
	tests/gpu/check.sh

# The .deb files the GPU machine lacks (it reaches no registry): run here,
# carry .debs/ there; tests/gpu/check.sh unpacks them.
gpu-debs:
	mkdir -p .debs && cd .debs && apt-get download libyaml-0-2 libyaml-dev libcriterion3 libcriterion-dev \
		libnanomsg5 libgit2-1.5 libboxfort-dev libhttp-parser2.9 libmbedtls14 libmbedx509-1 libmbedcrypto7 libssh2-1 2>&1 | tail -3

clean:
	rm -rf build

-include $(shell find build -name '*.d' 2>/dev/null)
