.PHONY: test run bench

test:  ## set everything up (test dependencies, Chromium, kubectl) and run the whole test suite; ARGS go to pytest
	@scripts/test $(ARGS)

run:  ## set up only what the example needs and run it; ARGS go to it, e.g. make run ARGS="--port 0"
	@scripts/run-example $(ARGS)

bench:  ## run the benchmarks
	@scripts/bootstrap && .venv/bin/python -m bench
