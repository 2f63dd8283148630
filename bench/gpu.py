"""The engine on a GPU: a Llama-3.2-1B-shaped model (random weights) with
Llama 3's real 128k tokenizer, in process, CUDA graphs on and off.

Why in process: the GPU machines this project is lent have no
``tritonserver``; what Triton and the frontend add per request is measured on
the CPU by the served bench. Here the engine runs as the decoder runs it (its
scheduler, real xgrammar masks over 128k tokens, the sampler, jump-forward),
driven by :func:`bench.step_profile.profile`, so a step's time is the TPOT
every running request sees.

Phases, each written to the report even if a later one fails:

1. ``outputs``: greedy JSON-schema requests to completion, graphs on and
   off: every output must parse and match its schema; how many of the two
   runs' texts agree is reported (random weights give near-tied logits,
   which half-precision rounding may break either way).
2. ``forward``: the bare decode forward at 1/16/64 rows, graphs on and off.
   ``parts``: the LM head alone with its output padded for cuBLAS or not,
   and prompts prefilled eagerly or through prefill graphs.
3. ``tpot``: TPOT at c=1/16/64, JSON-constrained and free, graphs on and
   off; c=16 constrained with masks applied without xgrammar's Triton
   kernel (the path for a GPU without the ``triton`` package); c=64
   constrained with eight xgrammar threads filling masks; JSON at each c
   with wide (jump-forward) steps graphed whatever the batch, and with
   prompts prefilled eagerly; c=64 JSON with at most 256 positions a step
   (forced tokens fed over several steps, every step graphed).

    python -m bench.gpu --tokenizer-dir .cache/models/bench-llama3 --output gpu.json
    python -m bench.gpu --render gpu.json > summary.md
"""

from __future__ import annotations

import argparse
import json
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import jsonschema
import torch
from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

from bench.report import print_and_save
from bench.step_profile import profile
from bench.workload import PROMPTS, USER_JSON_SCHEMA
from engine.decode_graphs import MAX_WIDE_GRAPH_POSITIONS, DecodeGraphs
from engine.engine import Engine
from engine.grammar_cache import GrammarCache
from engine.kv_batch import RunningBatch
from engine.lean_llama import LeanCausalLM
from engine.linear import Linear
from engine.model_runner import ModelRunner
from engine.params import Constraint, ConstraintType, SamplingParams
from engine.prefill_graphs import PrefillGraphs
from engine.request import GenerationRequest, StepOutput
from grammar_compiler import compile_json_schema

# Llama 3.2 1B's published shape; the vocabulary is the tokenizer's.
LLAMA_3_2_1B = {
    "hidden_size": 2048,
    "intermediate_size": 8192,
    "num_hidden_layers": 16,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 64,
    "max_position_embeddings": 131072,
    "rms_norm_eps": 1e-5,
    "rope_parameters": {
        "rope_type": "llama3",
        "rope_theta": 500000.0,
        "factor": 32.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192,
    },
    "tie_word_embeddings": True,
}
# A small schema a greedy random model completes well inside max_tokens.
PERSON_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 12},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "member": {"type": "boolean"},
    },
    "required": ["name", "age", "member"],
    "additionalProperties": False,
}
CONCURRENCY = (1, 16, 64)
FORWARD_ROWS = (1, 16, 64)
# xgrammar threads for one extra c=64 run (the engine's default beside a GPU
# is two, GPU_MASK_THREADS).
MANY_MASK_THREADS = 8
# Wide (jump-forward) steps graphed whatever the batch, for one run per c.
WIDE_EVERYWHERE = 1 << 20


def build_runner(tokenizer_dir: Path, shape: dict, dtype: torch.dtype) -> ModelRunner:
    """Random weights in ``shape`` on the GPU (seeded), the real tokenizer."""
    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        **shape,
    )
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    with device:
        model = LlamaForCausalLM(config).to(dtype).eval()
    return ModelRunner.from_model(model, tokenizer, impl="lean")


def set_graphs(
    runner: ModelRunner,
    on: bool,
    max_wide_positions: int = MAX_WIDE_GRAPH_POSITIONS,
    prefill: bool = True,
) -> None:
    """Graphs on or off as the runner sets them up; ``max_wide_positions`` and
    ``prefill`` change what a run with graphs on graphs."""
    model = runner.model
    assert isinstance(model, LeanCausalLM)
    model.decode_graphs = DecodeGraphs(model, max_wide_positions=max_wide_positions) if on else None
    model.prefill_graphs = PrefillGraphs(model) if on and prefill else None


def _schema_constraint(schema: dict) -> Constraint:
    return Constraint(
        type=ConstraintType.JSON_SCHEMA, value=compile_json_schema(json.dumps(schema)).value
    )


class _CollectingSink:
    def __init__(self) -> None:
        self.ids: list[int] = []
        self.done = False
        self.failure: str | None = None

    def send(self, output: StepOutput) -> None:
        self.ids += output.window_ids[output.prefix_len :]
        self.done = self.done or output.request_done

    def fail(self, message: str, *, invalid_argument: bool, field: str | None = None) -> None:
        self.failure, self.done = message, True

    def is_cancelled(self) -> bool:
        return False


def greedy_outputs(runner: ModelRunner, count: int) -> list[str]:
    """``count`` greedy PERSON_SCHEMA requests run together to completion."""
    engine = Engine(runner, GrammarCache(runner.tokenizer_info), max_batch_size=max(count, 8))
    constraint = _schema_constraint(PERSON_SCHEMA)
    sinks = [_CollectingSink() for _ in range(count)]
    for index, sink in enumerate(sinks):
        engine.submit(
            GenerationRequest(
                request_id=f"g{index}",
                prompt_ids=runner.tokenizer.encode(PROMPTS[index % len(PROMPTS)]),
                params=SamplingParams(max_tokens=128, temperature=0.0),
                constraint=constraint,
                sink=sink,
            )
        )
    deadline = time.monotonic() + 120
    while not all(sink.done for sink in sinks):
        if time.monotonic() > deadline:
            raise RuntimeError("greedy requests did not finish within 120 s")
        engine._drain_inbox(block=False)
        engine.step()
    engine.shutdown()
    failures = [sink.failure for sink in sinks if sink.failure]
    if failures:
        raise RuntimeError(f"requests failed: {failures[:2]}")
    return [runner.tokenizer.decode(sink.ids, skip_special_tokens=True) for sink in sinks]


def outputs_phase(runner: ModelRunner) -> dict:
    texts = {}
    for on in (True, False):
        set_graphs(runner, on)
        texts[on] = greedy_outputs(runner, 8)
    for text in texts[True] + texts[False]:
        jsonschema.validate(json.loads(text), PERSON_SCHEMA)
    agree = sum(a == b for a, b in zip(texts[True], texts[False], strict=True))
    return {"valid": True, "agree_graphs_on_off": f"{agree}/8", "examples": texts[True][:2]}


def _graph_counts(runner: ModelRunner) -> dict:
    """Proof the graphs ran: captures and replays since they were switched on."""
    graphs = runner.model.decode_graphs
    if graphs is None:
        return {}
    counts = {
        "graph_captures": graphs.captures,
        "graph_replays": graphs.replays,
        "graph_drops": graphs.drops,
    }
    prefill = runner.model.prefill_graphs
    if prefill is not None:
        counts["prefill_graph_captures"] = prefill.captures
        counts["prefill_graph_replays"] = prefill.replays
    return counts


def _synchronize() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def _mean_ms(call: Callable[[], object], repeats: int) -> float:
    for _ in range(3):
        call()
    _synchronize()
    started = time.perf_counter()
    for _ in range(repeats):
        call()
    _synchronize()
    return (time.perf_counter() - started) * 1000 / repeats


def parts_phase(runner: ModelRunner, repeats: int) -> dict:
    """Two parts of a step alone, each with and without what speeds it up on
    a GPU: the LM head with its output padded to GPU_OUT_ALIGNMENT columns
    or not, and prompts prefilled eagerly or through prefill graphs."""
    model = runner.model
    assert isinstance(model, LeanCausalLM)
    config = model.config
    weight = torch.randn(
        config.vocab_size, config.hidden_size, device=model.device, dtype=model.dtype
    )
    heads = {"unpadded": Linear(weight, pad_out_to=1), "padded": Linear(weight, pad_out_to=64)}
    head = []
    for rows in FORWARD_ROWS:
        hidden = torch.randn(rows, weight.shape[1], device=weight.device, dtype=weight.dtype)
        timings = {name: _mean_ms(lambda h=h, x=hidden: h(x), repeats) for name, h in heads.items()}
        head.append({"rows": rows, **timings})
    short = runner.tokenizer.encode(PROMPTS[0])
    long = runner.tokenizer.encode(" ".join(PROMPTS) * 3)
    prefills = {"one short": [short], "four short": [short] * 4, "one long": [long]}
    prefill, kept = [], model.prefill_graphs
    for name, prompts in prefills.items():
        timings = {}
        for label, graphs in (("eager", None), ("graphs", PrefillGraphs(model))):
            model.prefill_graphs = graphs
            timings[label] = _mean_ms(lambda p=prompts: runner.prefill_many(p), repeats)
        prefill.append({"prompts": name, "tokens": max(map(len, prompts)), **timings})
    model.prefill_graphs = kept
    return {"lm_head_ms": head, "prefill_ms": prefill}


def forward_phase(runner: ModelRunner, repeats: int) -> list[dict]:
    """The bare decode forward (no grammar, no sampling) at each row count."""
    results = []
    prompt = runner.tokenizer.encode(PROMPTS[0])
    for rows in FORWARD_ROWS:
        for on in (True, False):
            set_graphs(runner, on)
            batch = RunningBatch()
            _, cache, mask = runner.prefill_many([prompt] * rows)
            batch.append_rows(cache, mask, [1] * rows)
            feeds = [[prompt[-1]]] * rows
            for _ in range(3):  # captures, then warm
                runner.decode(batch, feeds)
            _synchronize()
            started = time.perf_counter()
            for _ in range(repeats):
                runner.decode(batch, feeds)
            _synchronize()
            results.append(
                {
                    "rows": rows,
                    "cuda_graphs": on,
                    "ms": (time.perf_counter() - started) * 1000 / repeats,
                    **_graph_counts(runner),
                }
            )
    return results


def _without_xgrammar_kernel(engine: Engine) -> None:
    engine._structured.xgrammar_gpu_kernel = False


@dataclass(frozen=True)
class _TpotRun:
    graphs: bool
    concurrency: int
    constraint: Constraint
    configure: Callable[[Engine], None] | None = None
    mask_threads: int | None = None
    wide_graph_positions: int = MAX_WIDE_GRAPH_POSITIONS
    prefill_graphs: bool = True
    decode_width_tokens: int | None = None  # None: the engine's default

    @property
    def plain(self) -> bool:
        """One of the on/off pairs the summary's main table compares."""
        return (
            self.configure is None
            and self.mask_threads is None
            and self.wide_graph_positions == MAX_WIDE_GRAPH_POSITIONS
            and self.prefill_graphs
            and self.decode_width_tokens is None
        )


def tpot_phase(runner: ModelRunner, steps: int, max_tokens: int) -> list[dict]:
    schema = _schema_constraint(USER_JSON_SCHEMA)
    runs = [
        _TpotRun(on, concurrency, constraint)
        for on in (True, False)
        for concurrency in CONCURRENCY
        for constraint in (schema, Constraint())
    ]
    runs.append(_TpotRun(True, 16, schema, configure=_without_xgrammar_kernel))
    runs.append(_TpotRun(True, 64, schema, mask_threads=MANY_MASK_THREADS))
    runs += [
        _TpotRun(True, concurrency, schema, wide_graph_positions=WIDE_EVERYWHERE)
        for concurrency in CONCURRENCY
    ]
    runs += [
        _TpotRun(True, concurrency, schema, prefill_graphs=False) for concurrency in CONCURRENCY
    ]
    # Forced tokens fed over several steps where a step would pass what graphs
    # take: every c=64 step graphed, rows with long forced runs taking more steps.
    runs.append(_TpotRun(True, 64, schema, decode_width_tokens=MAX_WIDE_GRAPH_POSITIONS))
    results = []
    for run in runs:
        set_graphs(runner, run.graphs, run.wide_graph_positions, run.prefill_graphs)
        result = profile(
            runner,
            run.constraint,
            run.concurrency,
            steps,
            max_tokens,
            decode_width_tokens=run.decode_width_tokens,
            configure=run.configure,
            mask_threads=run.mask_threads,
        )
        result["cuda_graphs"] = run.graphs
        result.update(_graph_counts(runner))
        result["xgrammar_gpu_kernel"] = run.configure is None
        result["mask_threads"] = run.mask_threads or "default"
        result["wide_graph_positions"] = run.wide_graph_positions
        result["prefill_graphs"] = run.graphs and run.prefill_graphs
        result["decode_width_tokens"] = run.decode_width_tokens or "default"
        result["plain"] = run.plain
        result["tpot_ms"] = result["step_ms_mean"]
        results.append(result)
    return results


def environment() -> dict:
    found = {"torch": torch.__version__, "cuda": torch.cuda.is_available()}
    if torch.cuda.is_available():
        found["device"] = torch.cuda.get_device_name(0)
    try:
        import triton

        found["triton"] = triton.__version__
    except ImportError:
        found["triton"] = None
    return found


def _plain(run: dict) -> bool:
    """Whether a run is one of the main table's on/off pairs (files written
    before runs said so: the xgrammar kernel and the default mask threads)."""
    if "plain" in run:
        return run["plain"]
    return run["xgrammar_gpu_kernel"] and run["mask_threads"] == "default"


def _tpot_cell(run: dict) -> str:
    """Mean and median step: a run's mean also carries its graph captures."""
    return f"{run['tpot_ms']:.2f} / {run['step_ms_p50']:.2f} ({run['tokens_per_s']:,.0f})"


def summary_markdown(report: dict) -> str:
    """The report's TPOT and forward tables, graphs on beside off."""
    environment = report.get("environment", {})
    lines = [
        f"Device: {environment.get('device', 'CPU')}, torch {environment.get('torch')}, "
        f"triton {environment.get('triton')}; {report.get('dtype')}, vocabulary "
        f"{report.get('vocab_size')}, shape {json.dumps(report.get('shape'))}",
        "",
        f"Outputs: {report.get('outputs')}",
        "",
        "| TPOT ms, mean / median step (tokens/s) | graphs on | graphs off | on / off (mean) |",
        "|---|---|---|---|",
    ]
    tpot = report.get("tpot")
    if isinstance(tpot, list):
        plain = [run for run in tpot if _plain(run)]
        for concurrency in CONCURRENCY:
            for constraint in ("json_schema", "none"):
                pair = {
                    run["cuda_graphs"]: run
                    for run in plain
                    if run["concurrency"] == concurrency and run["constraint"] == constraint
                }
                if set(pair) != {True, False}:
                    continue
                on, off = pair[True], pair[False]
                lines.append(
                    f"| c={concurrency} {constraint} | {_tpot_cell(on)} | {_tpot_cell(off)} "
                    f"| {on['tpot_ms'] / off['tpot_ms']:.2f} |"
                )
        for run in tpot:
            if not _plain(run):
                lines.append(
                    f"| c={run['concurrency']} {run['constraint']}, graphs "
                    f"{'on' if run['cuda_graphs'] else 'off'}, xgrammar kernel "
                    f"{run['xgrammar_gpu_kernel']}, mask threads {run['mask_threads']}, "
                    f"wide steps graphed to {run.get('wide_graph_positions', 16)} positions, "
                    f"prefill graphs {run.get('prefill_graphs', False)}, decode width tokens "
                    f"{run.get('decode_width_tokens', 'default')} | {_tpot_cell(run)} | | |"
                )
    parts = report.get("parts")
    if isinstance(parts, dict):
        lines += ["", "| LM head alone, ms | output unpadded | padded to 64 |", "|---|---|---|"]
        for run in parts["lm_head_ms"]:
            lines.append(f"| {run['rows']} rows | {run['unpadded']:.3f} | {run['padded']:.3f} |")
        lines += ["", "| prefill alone, ms | eager | prefill graphs |", "|---|---|---|"]
        for run in parts["prefill_ms"]:
            lines.append(
                f"| {run['prompts']} ({run['tokens']} tokens) | {run['eager']:.2f} "
                f"| {run['graphs']:.2f} |"
            )
    forward = report.get("forward")
    if isinstance(forward, list):
        lines += ["", "| bare decode forward, ms | graphs on | graphs off |", "|---|---|---|"]
        for rows in FORWARD_ROWS:
            pair = {run["cuda_graphs"]: run["ms"] for run in forward if run["rows"] == rows}
            if set(pair) == {True, False}:
                lines.append(f"| {rows} rows | {pair[True]:.2f} | {pair[False]:.2f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokenizer-dir", type=Path, default=Path(".cache/models/bench-llama3"))
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--forward-repeats", type=int, default=50)
    parser.add_argument(
        "--shape", type=json.loads, default=LLAMA_3_2_1B, help="model shape as JSON"
    )
    parser.add_argument("--output", type=Path, help="also write the results here as JSON")
    parser.add_argument("--render", type=Path, help="print the summary of a results file and exit")
    args = parser.parse_args()
    if args.render is not None:
        print(summary_markdown(json.loads(args.render.read_text())), end="")
        return
    report: dict = {"environment": environment(), "shape": args.shape, "dtype": args.dtype}
    started = time.perf_counter()
    runner = build_runner(args.tokenizer_dir, args.shape, getattr(torch, args.dtype))
    report["build_s"] = time.perf_counter() - started
    report["vocab_size"] = runner.vocab_size
    phases: dict[str, Callable[[], object]] = {
        "outputs": lambda: outputs_phase(runner),
        "forward": lambda: forward_phase(runner, args.forward_repeats),
        "parts": lambda: parts_phase(runner, args.forward_repeats),
        "tpot": lambda: tpot_phase(runner, args.steps, args.max_tokens),
    }
    for name, run in phases.items():
        started = time.perf_counter()
        try:
            report[name] = run()
        except Exception:  # the report keeps what the other phases found
            report[name] = {"error": traceback.format_exc()}
        report[f"{name}_s"] = time.perf_counter() - started
        if args.output is not None:
            args.output.write_text(json.dumps(report, indent=2, default=str))
    print_and_save(report, args.output)


if __name__ == "__main__":
    main()
