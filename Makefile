# Stria: the two commands of the quick start, and the ones around them.
#   make demo   install what is missing, build, start a local cluster, run the demo
#   make test   install what is missing, build, run every test
#   make deb    build, then the Debian package $(BUILD)/stria_VERSION_ARCH.deb
BUILD ?= build
JOBS ?= $(shell nproc)
DEMO_DIR ?= $(CURDIR)/demo/cluster

.PHONY: all build bootstrap demo test bench asan fuzz clean format deb

all: build

bootstrap:
	@scripts/bootstrap.sh

build: bootstrap
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

demo: build
	@scripts/demo.sh $(BUILD) $(DEMO_DIR)

# Tests run TEST_JOBS at a time: most of a cluster test's time is waiting
# (for daemons, timeouts, s3rver), so three keep two cores busy; what they
# share is locked in tests/CMakeLists.txt.
TEST_JOBS ?= 3
test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(TEST_JOBS) --timeout 900

# The whole suite under AddressSanitizer and UndefinedBehaviorSanitizer.
asan: bootstrap
	@cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DSTRIA_SANITIZE=ON >/dev/null
	@cmake --build build-asan -j $(JOBS)
	@cd build-asan && ctest --output-on-failure -j 2 --timeout 1800

# Every libFuzzer target for FUZZ_SECONDS over a copy of its seed corpus
# (clang; ASan and UBSan on). A crash fails and leaves the input in build-fuzz.
FUZZ_SECONDS ?= 30
fuzz: bootstrap
	@CC=clang cmake -S . -B build-fuzz -DSTRIA_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build build-fuzz -j $(JOBS) --target fuzz_proto fuzz_config fuzz_meta fuzz_s3xml fuzz_metrics
	@for t in proto config meta s3xml metrics; do \
		rm -rf build-fuzz/corpus-$$t && cp -r tests/fuzz/corpus/$$t build-fuzz/corpus-$$t && \
		echo "fuzz_$$t: $(FUZZ_SECONDS) s" && \
		(cd build-fuzz && ./tests/fuzz/fuzz_$$t corpus-$$t -max_total_time=$(FUZZ_SECONDS) \
			-print_final_stats=1 2>&1 | grep -E "^(stat::number_of_executed_units|==[0-9]+==ERROR|SUMMARY)") \
		&& test -z "$$(ls build-fuzz/crash-* build-fuzz/leak-* build-fuzz/timeout-* 2>/dev/null)" || exit 1; \
	done

# The binaries, libstria, man pages and systemd units as one Debian package
# (scripts/mkdeb.sh; docs/operations.md, "On real nodes").
deb: build
	@scripts/mkdeb.sh $(BUILD)

bench: build
	@bench/run.sh $(BUILD)

format:
	@clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD) build-asan build-fuzz
