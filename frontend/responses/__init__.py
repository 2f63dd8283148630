"""``POST /v1/responses``: OpenAI's Responses API over the chat path."""
