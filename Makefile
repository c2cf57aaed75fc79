.PHONY: test run bench

test:  ## set everything up and run the whole test suite
	scripts/test

run:  ## set everything up and run the example application
	scripts/run-example

bench:  ## run the benchmarks
	scripts/bootstrap && .venv/bin/python -m bench
