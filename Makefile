# Stria: the two commands of the quick start, and the ones around them.
#   make demo   install what is missing, build, start a local cluster, run the demo
#   make test   install what is missing, build, run every test
BUILD ?= build
JOBS ?= $(shell nproc)
DEMO_DIR ?= $(CURDIR)/demo/cluster

.PHONY: all build bootstrap demo test bench asan clean format

all: build

bootstrap:
	@scripts/bootstrap.sh

build: bootstrap
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

demo: build
	@scripts/demo.sh $(BUILD) $(DEMO_DIR)

test: build
	@cd $(BUILD) && ctest --output-on-failure -j 2 --timeout 900

# The whole suite under AddressSanitizer and UndefinedBehaviorSanitizer.
asan: bootstrap
	@cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DSTRIA_SANITIZE=ON >/dev/null
	@cmake --build build-asan -j $(JOBS)
	@cd build-asan && ctest --output-on-failure -j 2 --timeout 1800

bench: build
	@bench/run.sh $(BUILD)

format:
	@clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD) build-asan
