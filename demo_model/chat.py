"""The demo model's chat format: its template and the conversations it learns.

The template is saved with the tokenizer (``chat_template``), so the service
renders chat requests exactly as the model saw conversations in training;
the same template renders the training samples, so the two cannot drift.
Turns are plain-text role markers (``<|user|>``), each assistant turn ends
with the end-of-sequence token, and tool calls use the service's tool-call
format (``grammar_compiler.tool_calls``) so constrained tool calling and the
model's own habit agree.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable

from jinja2.sandbox import ImmutableSandboxedEnvironment

# Every newline is written by an expression ('\n' inside Jinja), none by the
# template's own layout: block trimming cannot eat them. Turns read
# "<|role|>\n<content>\n"; an assistant turn ends with the end-of-sequence token.
CHAT_TEMPLATE = (
    "{%- if tools -%}"
    "{{- '<|system|>\\nYou can call these tools. To call one, answer with "
    '<tool_call>{"name": ..., "arguments": {...}}</tool_call>.\\n\' -}}'
    "{%- for tool in tools -%}{{- tool.function | tojson -}}{{- '\\n' -}}{%- endfor -%}"
    "{%- endif -%}"
    "{%- for message in messages -%}"
    "{%- if message.role == 'assistant' -%}"
    "{{- '<|assistant|>\\n' -}}"
    "{%- if message.tool_calls -%}"
    "{%- for call in message.tool_calls -%}"
    "{{- '<tool_call>{\"name\": ' ~ (call.function.name | tojson) ~ ', \"arguments\": ' "
    "~ call.function.arguments ~ '}</tool_call>' -}}"
    "{%- if not loop.last -%}{{- '\\n' -}}{%- endif -%}"
    "{%- endfor -%}"
    "{%- else -%}{{- message.content -}}{%- endif -%}"
    "{{- eos_token ~ '\\n' -}}"
    "{%- elif message.role == 'tool' -%}{{- '<|tool|>\\n' ~ message.content ~ '\\n' -}}"
    "{%- elif message.role in ('system', 'developer') -%}"
    "{{- '<|system|>\\n' ~ message.content ~ '\\n' -}}"
    "{%- else -%}{{- '<|user|>\\n' ~ message.content ~ '\\n' -}}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|assistant|>\\n' -}}{%- endif -%}"
)

EOS_TOKEN = "</s>"

_ENVIRONMENT = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
_ENVIRONMENT.filters["tojson"] = lambda value, indent=None: json.dumps(
    value, ensure_ascii=False, indent=indent
)
_TEMPLATE = _ENVIRONMENT.from_string(CHAT_TEMPLATE)

# fmt: off
_QUESTIONS = (
    ("What is the capital of {country}?", "The capital of {country} is {capital}."),
    ("Where does {name} live?", "{name} lives in {city}."),
    ("Say hello to {name}.", "Hello, {name}!"),
    ("What is {a} plus {b}?", "{a} plus {b} is {sum}."),
    ("Is it {weather} in {city} today?", "Yes, the weather in {city} is {weather} today."),
    ("Name a color.", "{color}."),
)
_CAPITALS = (("France", "Paris"), ("Germany", "Berlin"), ("Japan", "Tokyo"), ("Spain", "Madrid"),
             ("Norway", "Oslo"), ("Kenya", "Nairobi"), ("Canada", "Ottawa"), ("Italy", "Rome"))
_NAMES = ("Alice", "Bob", "Carol", "Hiro", "Ines", "Omar", "Priya", "Zoe")
_CITIES = ("Paris", "Berlin", "Tokyo", "Lagos", "Toronto", "Oslo", "Seoul", "Lyon")
_WEATHER = ("sunny", "cloudy", "rainy", "windy", "cold", "warm")
_COLORS = ("Red", "Blue", "Green", "Yellow", "Purple")
_SYSTEMS = ("You are a helpful assistant.", "Answer briefly.", "You answer in JSON.")
_JSON_ASKS = ("Give me a person as JSON.", "Describe a product as a JSON object.",
              "Return the order as JSON.", "Answer in JSON.")
# fmt: on

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"enum": ["C", "F"]}},
            "required": ["city"],
        },
    },
}
TIME_TOOL = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "The local time in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


def render(messages: list[dict], tools: list[dict] | None) -> str:
    """A whole conversation in the chat format (no generation prompt)."""
    return _TEMPLATE.render(
        messages=messages, tools=tools, add_generation_prompt=False, eos_token=EOS_TOKEN
    )


def _question(rng: random.Random) -> tuple[str, str]:
    question, answer = rng.choice(_QUESTIONS)
    country, capital = rng.choice(_CAPITALS)
    a, b = rng.randint(1, 20), rng.randint(1, 20)
    values = {
        "country": country, "capital": capital, "name": rng.choice(_NAMES),
        "city": rng.choice(_CITIES), "weather": rng.choice(_WEATHER), "a": a, "b": b,
        "sum": a + b, "color": rng.choice(_COLORS),
    }  # fmt: skip
    return question.format(**values), answer.format(**values)


def _tool_turns(rng: random.Random) -> tuple[list[dict], list[dict]]:
    """A user asking what a tool knows, the call, its result and the answer."""
    city = rng.choice(_CITIES)
    tool = rng.choice((WEATHER_TOOL, TIME_TOOL))
    name = tool["function"]["name"]
    arguments: dict = {"city": city}
    if name == "get_weather" and rng.random() < 0.5:
        arguments["unit"] = rng.choice(("C", "F"))
    if name == "get_weather":
        asked = f"What is the weather in {city}?"
        result = f"{rng.randint(-5, 30)} degrees, {rng.choice(_WEATHER)}"
    else:
        asked = f"What time is it in {city}?"
        result = f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}"
    function = {"name": name, "arguments": json.dumps(arguments)}
    call = {"id": "call_0", "type": "function", "function": function}
    messages = [
        {"role": "user", "content": asked},
        {"role": "assistant", "content": None, "tool_calls": [call]},
    ]
    if rng.random() < 0.5:  # some conversations stop at the call, as a served request does
        messages.append({"role": "tool", "tool_call_id": "call_0", "content": result})
        messages.append({"role": "assistant", "content": f"In {city} it is {result}."})
    return messages, [WEATHER_TOOL, TIME_TOOL]


def conversation(rng: random.Random, json_answer: Callable[[random.Random], str]) -> str:
    """One training conversation, without its final end-of-sequence token
    (the corpus appends one to every document)."""
    tools = None
    messages: list[dict] = []
    if rng.random() < 0.3:
        messages.append({"role": "system", "content": rng.choice(_SYSTEMS)})
    kind = rng.random()
    if kind < 0.3:
        turns, tools = _tool_turns(rng)
        messages.extend(turns)
    else:
        for _ in range(rng.randint(1, 2)):
            if kind < 0.6:
                question, answer = rng.choice(_JSON_ASKS), json_answer(rng)
            else:
                question, answer = _question(rng)
            messages += [
                {"role": "user", "content": question},
                {"role": "assistant", "content": answer},
            ]
    return render(messages, tools).removesuffix("\n").removesuffix(EOS_TOKEN)
