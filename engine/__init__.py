"""Constrained decoding engine: plain Python, no Triton.

The Triton models in ``model_repository/`` are thin shells around this
package, so everything that decides *what* is generated (batching, grammar
masks, sampling, stop conditions, incremental detokenization) can be tested
without a server.
"""
