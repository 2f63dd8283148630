"""The OpenAI-style ``/v1/completions`` endpoint: request model, planning,
logprobs formatting and streaming, kept apart from the thin router."""
