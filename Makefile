# The two commands of the README: `make run` (build + the lab's main comparison, prints a table
# and writes a plot) and `make test` (build + every test: release, ASan+UBSan, TSan). Both install
# what is missing first.
BUILD      := build
LAB        := $(BUILD)/release/tools/lab/metaspace-lab
RESULTS    := results
PREFIX     := $(CURDIR)/$(BUILD)/install

.PHONY: run test deps release debug tsan example bench fuzz clean

run: deps release
	$(LAB) compare interleaved --spike --out $(RESULTS)

test: deps release debug tsan example
	ctest --preset release -j2
	ctest --preset debug -j2
	ctest --preset tsan
	tests/fuzz/run.sh 60

deps:
	@scripts/install-deps.sh

release:
	cmake --preset release >/dev/null
	cmake --build --preset release

debug:
	cmake --preset debug >/dev/null
	cmake --build --preset debug

tsan:
	cmake --preset tsan >/dev/null
	cmake --build --preset tsan --target concurrency_tests

# The installed package, used the way a runtime would: find_package and pkg-config.
example: release
	cmake --install $(BUILD)/release --prefix $(PREFIX) >/dev/null
	cmake -S examples/loaders -B $(BUILD)/example -G Ninja -DCMAKE_PREFIX_PATH=$(PREFIX) >/dev/null
	cmake --build $(BUILD)/example
	$(BUILD)/example/loaders
	cc examples/loaders/loaders.c -o $(BUILD)/example/loaders-pc \
	  $$(PKG_CONFIG_PATH=$(PREFIX)/lib/pkgconfig pkg-config --cflags --libs metaspace)
	$(BUILD)/example/loaders-pc > /dev/null

bench: deps release
	scripts/bench.sh

# The API fuzzer for a release: 10 minutes by default (FUZZ_SECONDS=...), not part of `make test`
# (CI runs it for 60 s there).
FUZZ_SECONDS ?= 600
fuzz: deps
	tests/fuzz/run.sh $(FUZZ_SECONDS)

clean:
	rm -rf $(BUILD) $(RESULTS)
