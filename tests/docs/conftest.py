"""harness/ runs inside the documentation's example project (test_examples.py copies it there)."""

collect_ignore = ["harness"]
