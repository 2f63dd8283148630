"""``POST /v1/chat/completions``: OpenAI's chat API over the completions path."""
