# Thin wrappers over tools/, cmake, ctest and rebar3; the build lives in build/.
#   make deps | build | test | test-class | demo | fmt | fmt-check | bench | install | package | clean
# CI=true turns warnings into errors.
BUILD ?= build
MAKEFLAGS += --no-print-directory
JOBS ?= $(shell nproc)
WERROR := $(if $(filter true,$(CI)),ON,OFF)
C_FILES = $(shell find c_src external test bench -path bench/out -prune -o -name '*.[ch]' -print 2>/dev/null)
SH_FILES = $(wildcard tools/*.sh test/e2e/*.sh test/fuzz/run.sh .ci/run bench/run bench/oracle_perf bench/completeness bench/soak bench/ceiling bench/watch_methods bench/watch_cost bench/faults_bench bench/pstack_bench bench/alloc_bench bench/heap_bench)

.PHONY: all deps build test test-class demo fmt fmt-check bench install package clean

all: build

deps:
	tools/install-deps.sh

build:
	cmake -S . -B $(BUILD) -DXP_WERROR=$(WERROR) && cmake --build $(BUILD) -j$(JOBS)

# Chroot provisioning failures do not stop the run: the tests that need them SKIP with the reason.
test: deps build
	test/e2e/provision.sh || echo "make test: provisioning failed; OTP 27/29 tests will be skipped"
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS) -LE 'faults-more' || \
		{ cd $(CURDIR) && tools/ctest-recap.sh $(BUILD); exit 1; }

# The attribution class test family alone (test/e2e/record_test.sh cases class-both, defer-both,
# label class; part of `make test` too): 12 runs, each one VM recorded with and without the
# in-kernel capture.
test-class: build
	cd $(BUILD) && ctest --output-on-failure -L class

# The fault cases beyond CI's (test/e2e/faults.cmake: two samplers, module churn with --lines,
# the agent stopped and purged in a loop), about a minute; not in `make test`.
test-faults: build
	cd $(BUILD) && ctest --output-on-failure -R 'e2e\.faults\.'

demo: deps build
	tools/demo.sh $(BUILD)/extrospect

fmt:
	clang-format -i $(C_FILES)

fmt-check:
	@clang-format --dry-run --Werror $(C_FILES) && echo "fmt-check: clang-format clean"
	@if command -v shellcheck >/dev/null; then shellcheck -x $(SH_FILES) && echo "fmt-check: shellcheck clean"; fi

# The program, its man page and bash completion under PREFIX (DESTDIR is honoured: staging).
PREFIX ?= /usr/local
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

# A Debian package, $(BUILD)/extrospect_VERSION_amd64.deb (CPack; cmake/Install.cmake).
package: build
	cd $(BUILD) && cpack -G DEB

bench: build
	if [ -x bench/run ]; then bench/run; else echo "bench: no bench/run yet (see bench/README.md)"; fi

clean:
	rm -rf $(BUILD) _build priv/*.so
