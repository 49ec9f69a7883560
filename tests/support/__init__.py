"""What the browser tests and the benchmarks share: starting a real server, chromium's flags."""
