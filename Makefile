.PHONY: test run bench docs

test:  ## set everything up (test dependencies, Chromium, kubectl) and run the whole test suite; ARGS go to pytest
	@scripts/test $(ARGS)

run:  ## set up only what the example needs and run it; ARGS go to it, e.g. make run ARGS="--port 0"
	@scripts/run-example $(ARGS)

bench:  ## run the benchmarks
	@scripts/bootstrap && .venv/bin/python -m bench

docs:  ## build the documentation into docs/_build/html, warnings as errors
	@scripts/bootstrap && .venv/bin/sphinx-build -W -b html docs docs/_build/html
