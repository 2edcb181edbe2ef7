# korch top-level entry points. The real build is CMake; this file only names
# the jobs a user runs.
#   make          build everything; the CLI lands at build/korch
#   make test     optimised build + ASan/UBSan build, the whole suite in both, then
#                 the libFuzzer targets (clang) for a fixed number of inputs; ends
#                 with "N passed, N failed, N skipped" (docs/testing.md)
#   make demo     korch's main job on the bundled example model
#   make models   export the model zoo to build/models (PyTorch -> ONNX)
#   make bench    peer benchmark (korch none/greedy/optimal, cold and warm optimise,
#                 vs ONNX Runtime and PyTorch) -> bench/RESULTS.md; BENCH_ARGS=... adds options;
#                 then the real-model zoo (bench/realzoo: third-party models from PyPI wheels,
#                 check / reference / optimize / plan vs ORT, OpenVINO at FP32 and its default
#                 precision, korch's bf16 plan) -> bench/RESULTS.md; REALZOO_ARGS=...
#                 then issue 20's single-operator models (bench/kernels/single_ops.py: korch per
#                 layout vs ONNX Runtime and OpenVINO FP32) -> bench/kernels/RESULTS.md; SINGLE_OPS_ARGS=...
#                 then QDQ- and dynamically quantized zoo models (bench/quant/run.py: korch vs
#                 ONNX Runtime and OpenVINO int8) -> bench/quant/RESULTS.md; QUANT_ARGS=...
#   make bench-realzoo   the real-model zoo alone
#   make bench-single-ops   the single-operator table alone
#   make install  install library, header, CLI and pkg-config file (PREFIX, DESTDIR)

MAKEFLAGS += --no-print-directory
BUILD ?= build
SAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
PREFIX ?= /usr/local
JOBS ?= $(shell nproc)
CMAKE ?= cmake

.PHONY: all build sanitize test demo models bench bench-realzoo bench-single-ops install clean

all: build

build:
	@$(CMAKE) -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null
	@$(CMAKE) --build $(BUILD) -j $(JOBS)

sanitize:
	@$(CMAKE) -S . -B $(SAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DKORCH_SANITIZE=ON >/dev/null
	@$(CMAKE) --build $(SAN_BUILD) -j $(JOBS)

# The Python env (build/venv: onnxruntime from PyPI) lets the ONNX Runtime
# comparisons run on a fresh clone; without network they report skipped.
test: build sanitize
	@scripts/python-env.sh --quiet || echo "make test: no Python env with onnxruntime: its comparisons will be skipped"
	@scripts/python-env-quant.sh --quiet || echo "make test: no onnxruntime.quantization: the quantized-model tests will be skipped"
	@scripts/run-tests.sh $(BUILD) $(SAN_BUILD) $(FUZZ_BUILD)

demo: build
	@scripts/demo.sh $(BUILD)/korch

# models and bench need onnx, onnxruntime and matplotlib from PyPI (bench also
# openvino): scripts/python-env.sh installs them into build/venv first.
models:
	@scripts/python-env.sh --quiet
	@scripts/build-models.sh

bench: build
	@scripts/python-env.sh --quiet
	@scripts/bench.sh --korch-cold $(BENCH_ARGS)
	@bench/realzoo/run.sh --openvino --bf16 $(REALZOO_ARGS)
	@$(BUILD)/venv/bin/python bench/kernels/single_ops.py --korch $(BUILD)/korch $(SINGLE_OPS_ARGS)
	@scripts/python-env-quant.sh --quiet && $(BUILD)/venv-quant/bin/python bench/quant/run.py --korch $(BUILD)/korch $(QUANT_ARGS)

bench-realzoo: build
	@bench/realzoo/run.sh --openvino --bf16 $(REALZOO_ARGS)

# scripts/bench.sh installs OpenVINO into build/venv; without it the
# OpenVINO column says n/a
bench-single-ops: build
	@scripts/python-env.sh --quiet
	@$(BUILD)/venv/bin/python bench/kernels/single_ops.py --korch $(BUILD)/korch $(SINGLE_OPS_ARGS)

install: build
	@DESTDIR=$(DESTDIR) $(CMAKE) --install $(BUILD) >/dev/null
	@echo "installed to $(DESTDIR)$(PREFIX)"

clean:
	rm -rf $(BUILD) $(SAN_BUILD) $(FUZZ_BUILD)
