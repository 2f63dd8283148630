"""End-to-end benchmark of the served stack against the issue's targets.

One command (``python -m bench``) starts tritonserver and the frontend on
free loopback ports, measures everything in one run on one machine (the
machine is shared and noisy, so every target is a ratio of figures taken in
the same run), and writes ``report.json``, ``summary.md`` and PNG plots.
See ``bench/README.md``.
"""
