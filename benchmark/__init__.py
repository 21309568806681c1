"""The benchmark harness (``python -m benchmark run`` / ``report``; suites in ``suites/``) and
throughput benchmarks (``pytest benchmark``, ``benchmark/perf``)."""
