"""HTTP frontend: OpenAPI-documented endpoints over the Triton ensemble.

Stateless by design: every request is answered from Triton, so any number of
frontend replicas can sit behind a load balancer.
"""
