"""HTTP routes, each a few lines over :class:`frontend.triton_pool.TritonPool`."""
