"""The Triton shell shared by the models that need only the served tokenizer
(tokenizer, detokenizer, chat_template): load it once, answer each request
of a dynamically batched ``execute`` on its own."""

from __future__ import annotations

import json

from engine.diagnostics import dump_stacks_on_sigusr1
from engine.model_runner import load_tokenizer
from engine.settings import resolve_model_dir


class TokenizerModel:
    """Subclasses say how one request is answered (``respond``)."""

    def initialize(self, args) -> None:
        dump_stacks_on_sigusr1()
        config = json.loads(args["model_config"])
        self.tokenizer = load_tokenizer(resolve_model_dir(config.get("parameters", {})))

    def execute(self, requests) -> list:
        return [self.respond(request) for request in requests]

    def respond(self, request):
        raise NotImplementedError
