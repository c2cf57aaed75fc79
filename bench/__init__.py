"""flask-krm benchmarks: ``python -m bench [NAME ...]``; each ``bench/bench_*.py`` is one."""
