"""Peers on the same model, in one run: this service against llama.cpp's
``llama-server`` and vLLM CPU, JSON-schema constrained, greedy, 64 tokens.

``install`` builds or installs each peer under ``.cache/peers`` (nothing here
touches the project's own virtual environment), ``engines`` starts one server
at a time on free loopback ports, ``workload`` drives it, and ``__main__``
writes ``report.json`` and ``summary.md`` with the ratios the issue sets as
targets. A benchmark, never part of CI: setting the peers up takes 20-40
minutes on two cores.
"""
