"""Probes: scenarios that need a gevent-patched process, each run as a child process
(``python -m tests.probes.<module>``, see :func:`tests.probes.harness.run_probe`).

This package imports nothing, so that a probe module patches before ``ssl`` is first imported.
"""
