# The two commands of the quickstart are `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
HOST ?= 127.0.0.1
STAMP := $(VENV)/.installed

.PHONY: install run test bench screenshots lint migrate clean

install: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

migrate: install
	$(BIN)/python manage.py migrate --noinput

# Web (daphne), Celery worker and beat side by side; Ctrl-C stops all three.
run: migrate
	@$(BIN)/python manage.py demo_tenant --base-url http://$(HOST):$(PORT)
	@echo "Serving on http://$(HOST):$(PORT)/ (Ctrl-C stops the server, the worker and beat)"
	@$(BIN)/python manage.py serve --host $(HOST) --port $(PORT)

test: install
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# One benchmark: make bench BENCH=tests/benchmarks/test_chat_bench.py
BENCH ?= tests/benchmarks
bench: install
	$(BIN)/python -m pytest $(BENCH) -p no:cacheprovider -o addopts="" -s $(PYTEST_ARGS)

# docs/screenshots/*.png again: the browser tests write them only when SCREENSHOTS=1.
screenshots: install
	SCREENSHOTS=1 $(BIN)/python -m pytest tests/test_widget_browser.py tests/test_dashboard_browser.py $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV) var .pytest_cache
