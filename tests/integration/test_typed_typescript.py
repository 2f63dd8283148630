"""``/v1/completion/typed`` with the TypeScript that TypeChat-style schemas use, live.

Generic aliases and interfaces, types declared without ``export``, unions
of many object types, and a whole source file: enums spelled as ``as const``
values, indexed access, mapped types, and the functions and classes beside
the data types. Every finished output is judged by the real
TypeScript compiler (``typescript_judge``), which knows nothing of the
service's translation to JSON Schema. The types are finite (literals,
booleans, tuples), so even the tiny test model reaches the end of each.
"""

from __future__ import annotations

import httpx
import pytest

from .conftest import Service
from .typescript_judge import typescript_errors

GENERICS = """
type Pair<T> = [T, T];
interface Box<T, U = "none"> { value: T; label: U }
type Level = 1 | 2 | 3;
/** A generic alias is the requested type, with a generic inside. */
export type Reading = Box<Pair<Level>>;
/** Generics inside a declaration, one with its default filled in. */
export interface Panel {
  readings: Pair<Box<boolean, "on" | "off">>;
  spare: Box<Level>;
}
interface Flag<T = boolean> { set: T }
"""

NOT_EXPORTED = """
type Mode = "dark" | "light";
interface Settings {
  mode: Mode;
  compact: boolean;
  sizes: ["s" | "m", ("s" | "m" | "l")?];
}
export type Unrelated = { x: boolean };
"""

WHOLE_FILE = """
export const SIZES = ["half", "whole"] as const;
const Status = { Open: "open", Done: "done" } as const;
type Status = (typeof Status)[keyof typeof Status];
interface Item { name: "salad" | "soup"; size: (typeof SIZES)[number]; note?: "hot" }
type Flags<K extends string> = { [P in K]: boolean };
type Checked<T> = { [P in keyof T]-?: T[P] };
export interface Order {
  status: Status;
  first: Checked<Item>;
  size: Item["size"];
  flags: Flags<"paid" | "sent">;
}
export class Kitchen {
  orders: Order[] = [];
  count(): number { return this.orders.length % 10; }
}
export function describe(order: Order): string { return `${order.status} order`; }
type Listener = (order: Order) => void;
"""


def _tagged_union(count: int) -> str:
    """``count`` object types told apart by a literal ``kind``, and their union."""
    declarations = [
        f'interface Command{i} {{ kind: "command{i}"; on: boolean }}' for i in range(count)
    ]
    union = " | ".join(f"Command{i}" for i in range(count))
    return "\n".join([*declarations, f"type Command = {union};"])


def _typed(schema: str, type_name: str, temperature: float, max_tokens: int = 200) -> dict:
    return {
        "prompt": "JSON:",
        "schema": schema,
        "type_name": type_name,
        "max_tokens": max_tokens,
        "temperature": temperature,
    }


def _finished_outputs(client: httpx.Client, body: dict, runs: int) -> list[str]:
    """Outputs of ``runs`` requests, each answered 200 and finished (bounded types)."""
    outputs = []
    for run in range(runs):
        response = client.post("/v1/completion/typed", json={**body, "temperature": run / runs})
        assert response.status_code == 200, response.text
        (choice,) = response.json()["choices"]
        assert choice["finish_reason"] == "stop", choice
        outputs.append(choice["text"])
    return outputs


@pytest.mark.parametrize(
    ("schema", "type_name"),
    [
        pytest.param(GENERICS, "Reading", id="generic-alias-is-the-type"),
        pytest.param(GENERICS, "Panel", id="generics-inside"),
        pytest.param(GENERICS, "Flag", id="generic-with-defaults-is-the-type"),
        pytest.param(NOT_EXPORTED, "Settings", id="not-exported"),
        pytest.param(WHOLE_FILE, "Order", id="whole-file"),
    ],
)
def test_outputs_are_values_of_the_type_for_the_typescript_compiler(
    service: Service, schema: str, type_name: str
) -> None:
    with service.client() as client:
        outputs = _finished_outputs(client, _typed(schema, type_name, 0.0), runs=3)
    assert typescript_errors(schema, type_name, outputs) == {}, outputs


def test_the_judge_rejects_what_the_type_does_not_allow() -> None:
    """The judge itself: a value outside each type must be an error, or it proves nothing."""
    wrong = {
        "Reading": '{"value": [1, 4], "label": "none"}',
        "Panel": '{"readings": [{"value": true, "label": "on"}], '
        '"spare": {"value": 1, "label": "none"}}',
        "Flag": '{"set": true, "extra": 1}',
    }
    for type_name, output in wrong.items():
        assert typescript_errors(GENERICS, type_name, [output]), type_name
    assert typescript_errors(
        NOT_EXPORTED, "Settings", ['{"mode": "dim", "compact": true, "sizes": ["s"]}']
    )
    order = (
        '{"status": "open", "first": {"name": "soup", "size": "half", "note": "hot"}, '
        '"size": "whole", "flags": {"paid": true, "sent": false}}'
    )
    assert typescript_errors(WHOLE_FILE, "Order", [order]) == {}
    changes = [
        ('"status": "open"', '"status": "Open"'),  # a key of Status, not a value
        ('"size": "half", "note": "hot"', '"size": "half"'),  # -? made note required
        ('"sent": false', '"sent": false, "lost": true'),  # the mapped type's keys only
    ]
    for before, after in changes:
        changed = order.replace(before, after)
        assert typescript_errors(WHOLE_FILE, "Order", [changed]), changed


def _client_address(response: httpx.Response) -> object:
    """The local end of the connection the response came on."""
    return response.extensions["network_stream"].get_extra_info("client_addr")


def test_a_65_member_union_then_another_request_on_the_same_connection(service: Service) -> None:
    schema = _tagged_union(65)
    # The union's source alone is longer than the demo model's context window.
    body = {**_typed(schema, "Command", 0.0), "include_types_in_prompt": False}
    with service.client() as client:
        first = client.post("/v1/completion/typed", json=body)
        assert first.status_code == 200, first.text
        text = first.json()["choices"][0]["text"]
        assert typescript_errors(schema, "Command", [text]) == {}, text
        second = client.post("/v1/completion/typed", json=_typed(NOT_EXPORTED, "Settings", 0.0))
        assert second.status_code == 200, second.text
        assert _client_address(second) == _client_address(first)  # the same connection


def test_a_union_of_200_tagged_object_types(service: Service) -> None:
    schema = _tagged_union(200)
    body = {**_typed(schema, "Command", 0.0), "include_types_in_prompt": False}
    with service.client() as client:
        outputs = _finished_outputs(client, body, runs=2)
    assert typescript_errors(schema, "Command", outputs) == {}, outputs
