# The two commands of the README: `make run` (build + the lab's main comparison, prints a table
# and writes a plot) and `make test` (build + every test: release, ASan+UBSan, TSan). Both install
# what is missing first; `make run` installs and builds only what it runs (the library, the lab and
# its backend executables), `make test` the rest.
BUILD      := build
LAB        := $(BUILD)/release/tools/lab/metaspace-lab
RESULTS    := results
PREFIX     := $(CURDIR)/$(BUILD)/install

.PHONY: run test deps deps-run hooks lab release debug tsan example bindings bench fuzz sweep clean

run: deps-run lab
	@echo "run: $(LAB) compare interleaved --spike --out $(RESULTS)"
	@echo "run: 40 000 classes in 40 loaders on every backend, each in its own process (well under a minute)"
	$(LAB) compare interleaved --spike --out $(RESULTS)

test: deps release debug tsan example bindings
	ctest --preset release -j2
	ctest --preset debug -j2
	ctest --preset tsan
	tests/fuzz/run.sh 60

deps:
	@scripts/install-deps.sh

# In a git checkout of this repository, Git runs scripts/hooks/commit-msg on every commit (the
# subject convention of CONTRIBUTING.md). Every build target depends on this; outside a checkout
# (a source tarball, a copy inside another repository) it does nothing.
hooks:
	@if git rev-parse --is-inside-work-tree >/dev/null 2>&1 && \
	    [ -z "$$(git rev-parse --show-prefix)" ] && \
	    [ "$$(git config --get core.hooksPath)" != scripts/hooks ]; then \
	  git config core.hooksPath scripts/hooks && \
	  echo "hooks: core.hooksPath = scripts/hooks (commit-msg checks subjects: CONTRIBUTING.md)"; \
	fi

deps-run:
	@scripts/install-deps.sh run

# What `make run` needs: the library, metaspace-lab and its backend executables (building the
# metaspace-lab target builds them all), none of the tests or benchmarks.
lab: hooks
	@echo "lab: configuring $(BUILD)/release (cmake --preset release)"
	@cmake --preset release >/dev/null
	@echo "lab: building the library, metaspace-lab and its backends (the tests are left to make test)"
	cmake --build --preset release --target metaspace-lab

release: hooks
	cmake --preset release >/dev/null
	cmake --build --preset release

debug: hooks
	cmake --preset debug >/dev/null
	cmake --build --preset debug

tsan: hooks
	cmake --preset tsan >/dev/null
	cmake --build --preset tsan --target concurrency_tests

# The installed package, used the way a runtime would: find_package and pkg-config, shared and
# static, from C-only and C++ projects, each against a clean install. examples/readme_test.py runs
# the README's quick start as written (its own install into a fresh ~/.local, then every consumer
# the README shows); the rest builds examples/loaders against $(PREFIX).
example: release
	rm -rf $(PREFIX) $(BUILD)/example
	cmake --install $(BUILD)/release --prefix $(PREFIX) >/dev/null
	cmake -S examples/loaders -B $(BUILD)/example -G Ninja -DCMAKE_PREFIX_PATH=$(PREFIX) >/dev/null
	cmake --build $(BUILD)/example
	$(BUILD)/example/loaders
	cc -std=c11 -Wall -Wextra -pedantic -Werror examples/loaders/loaders.c -o $(BUILD)/example/loaders-pc \
	  $$(PKG_CONFIG_PATH=$(PREFIX)/lib/pkgconfig pkg-config --cflags --libs metaspace) \
	  -Wl,-rpath,$(PREFIX)/lib
	$(BUILD)/example/loaders-pc > /dev/null
	! readelf -d $(BUILD)/example/loaders-pc | grep -q 'libstdc++'
	cc -std=c11 examples/loaders/loaders.c -o $(BUILD)/example/loaders-static \
	  $$(PKG_CONFIG_PATH=$(PREFIX)/lib/pkgconfig pkg-config --cflags --libs metaspace-static)
	$(BUILD)/example/loaders-static > /dev/null
	! readelf -d $(BUILD)/example/loaders-static | grep -q 'libmetaspace'
	examples/readme_test.py $(BUILD)/readme
	! readelf -d $(BUILD)/readme/examples/c-only/hello | grep -q 'libstdc++'
	! readelf -d $(BUILD)/readme/examples/c-only/hello-static | grep -q 'libmetaspace'
	! readelf -d $(BUILD)/readme/examples/c-only/build/hello-static | grep -q 'libmetaspace'
	@# Under C++11, the first error is metaspace.hpp's #error, and none comes from inside the header.
	! c++ -std=c++11 -fsyntax-only -I include examples/cpp/hello.cpp 2> $(BUILD)/example/cxx11.txt
	grep -m1 'error:' $(BUILD)/example/cxx11.txt | grep -q 'metaspace.hpp needs C++14 or later'
	test "$$(grep -c 'metaspace.hpp:.*error:' $(BUILD)/example/cxx11.txt)" = 1
	@echo "example: C (CMake, pkg-config; shared and static) and C++ consumers ran against clean installs"

# The bindings over the shared library: Python (ctypes, pytest) and Rust (cargo, if installed:
# both crates of the workspace against the build tree, then metaspace-sys found through the
# installed metaspace.pc by pkg-config alone).
bindings: release
	cmake --build --preset release --target metaspace_shared
	METASPACE_LIBRARY=$(CURDIR)/$(BUILD)/release/libmetaspace.so PYTHONPATH=bindings/python \
	  python3 -m pytest -q -p no:cacheprovider bindings/python/tests
	if command -v cargo >/dev/null; then \
	  METASPACE_LIB_DIR=$(CURDIR)/$(BUILD)/release CARGO_TARGET_DIR=$(CURDIR)/$(BUILD)/rust \
	    cargo test --offline -q --workspace --manifest-path bindings/rust/Cargo.toml && \
	  cmake --install $(BUILD)/release --prefix $(PREFIX) >/dev/null && \
	  env -u METASPACE_LIB_DIR PKG_CONFIG_PATH=$(PREFIX)/lib/pkgconfig \
	    CARGO_TARGET_DIR=$(CURDIR)/$(BUILD)/rust-pkg-config \
	    cargo test --offline -q -p metaspace-sys --manifest-path bindings/rust/Cargo.toml; \
	else echo "bindings: cargo not installed, Rust crates skipped"; fi

bench: deps release
	scripts/bench.sh

# The API fuzzer for a release: 10 minutes by default (FUZZ_SECONDS=...), not part of `make test`
# (CI runs it for 60 s there).
FUZZ_SECONDS ?= 600
fuzz: deps hooks
	tests/fuzz/run.sh $(FUZZ_SECONDS)

# Every fault point of every configuration failed in turn (CI samples the checked and capped ones).
sweep: deps release
	METASPACE_FULL_SWEEP=1 $(BUILD)/release/tests/reliability_tests --gtest_filter='*FaultSweep*'

clean:
	rm -rf $(BUILD) $(RESULTS)

# HotSpot 17 with libmetaspace behind -XX:+UseLibMetaspace (integrations/hotspot): too long for
# `make test` (about 25 minutes the first time). HOTSPOT_WORK holds source, build and JDK.
HOTSPOT_WORK ?= $(HOME)/.cache/libmetaspace-hotspot
.PHONY: hotspot hotspot-check
hotspot:
	integrations/hotspot/build.sh $(HOTSPOT_WORK)

# Our checks, HotSpot's metaspace tests with the flag off and on, and the real programs.
hotspot-check:
	integrations/hotspot/tests/run.sh $(HOTSPOT_WORK)
	integrations/hotspot/jtreg.sh $(HOTSPOT_WORK) both
	integrations/hotspot/jtreg_table.py $(HOTSPOT_WORK)/jtreg-off $(HOTSPOT_WORK)/jtreg-on
	integrations/hotspot/compare.py --jdk $(HOTSPOT_WORK)/jdk --src $(HOTSPOT_WORK)/jdk17 --out results/hotspot
