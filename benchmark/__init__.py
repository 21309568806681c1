"""The benchmark harness and throughput benchmarks (run them with ``pytest benchmark``)."""
