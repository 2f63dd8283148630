"""Packed linear projections give F.linear's answer for every shape the lean
forward uses, and fall back to F.linear where packing is unavailable."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from engine import linear
from engine.linear import (
    MAX_PACKED_ROWS,
    MIN_PACKED_ROWS,
    SMALL_WEIGHT_BYTES,
    Linear,
    packed_row_count,
)


def _random(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    generator = torch.Generator().manual_seed(sum(shape))
    return torch.randn(*shape, generator=generator).to(dtype)


@pytest.mark.parametrize("rows", [1, 2, MIN_PACKED_ROWS, 8, 33])
@pytest.mark.parametrize("with_bias", [False, True])
def test_packed_projection_matches_f_linear(rows: int, with_bias: bool) -> None:
    weight, bias = _random(96, 64), _random(96) if with_bias else None
    projection = Linear(weight, bias)
    assert projection.packed  # this CPU build of torch has oneDNN
    for inputs in (_random(rows, 64), _random(rows, 3, 64)):  # decode and prefill shapes
        expected = F.linear(inputs, weight, bias)
        got = projection(inputs)
        assert got.shape == expected.shape
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


def test_large_weight_is_kept_packed_only_and_still_answers_one_row() -> None:
    rows = SMALL_WEIGHT_BYTES // (4 * 256) + 1
    weight = _random(rows, 256)
    projection = Linear(weight)
    assert projection.packed and not projection.has_plain_copy
    inputs = _random(1, 256)
    torch.testing.assert_close(projection(inputs), F.linear(inputs, weight), rtol=1e-5, atol=1e-4)


def test_no_rows_give_no_rows_through_a_packed_only_weight() -> None:
    weight = _random(SMALL_WEIGHT_BYTES // (4 * 64) + 1, 64)
    projection = Linear(weight)
    assert projection.packed and not projection.has_plain_copy
    assert projection(_random(0, 64)).shape == (0, weight.shape[0])


def test_bfloat16_weights_are_packed_where_the_cpu_can() -> None:
    """oneDNN packs bfloat16 only on CPUs with AVX-512 BW/VL/DQ or AVX-NE-CONVERT
    (and raises elsewhere): there the weight is packed, elsewhere a plain
    product; the answer is the same either way."""
    weight, inputs = _random(64, 32, dtype=torch.bfloat16), _random(8, 32, dtype=torch.bfloat16)
    projection = Linear(weight)
    assert projection.packed == _bfloat16_packs_here()
    got = projection(inputs)
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got, F.linear(inputs, weight), rtol=2e-2, atol=2e-2)


def _bfloat16_packs_here() -> bool:
    """Asked of oneDNN itself, not of ``Linear``'s own probe."""
    weight = torch.ones(8, 8, dtype=torch.bfloat16)
    try:
        torch.ops.mkldnn._reorder_linear_weight(weight, 8)
    except RuntimeError:
        return False
    return True


def test_without_onednn_it_is_plain_f_linear(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(linear, "_packing_works", lambda dtype: False)
    weight, inputs = _random(16, 8), _random(5, 8)
    projection = Linear(weight)
    assert not projection.packed
    torch.testing.assert_close(projection(inputs), F.linear(inputs, weight), rtol=1e-6, atol=1e-6)


def test_other_dtypes_are_not_packed() -> None:
    weight = _random(16, 8, dtype=torch.float64)
    projection = Linear(weight)
    assert not projection.packed
    inputs = _random(4, 8, dtype=torch.float64)
    torch.testing.assert_close(projection(inputs), F.linear(inputs, weight))


@pytest.mark.parametrize("rows", [1, MIN_PACKED_ROWS, 8])
@pytest.mark.parametrize("with_bias", [False, True])
@pytest.mark.parametrize("small", [False, True])
def test_add_to_adds_the_residual(rows: int, with_bias: bool, small: bool) -> None:
    """The residual add is folded into the product where the plain copy runs
    (addmm) and added after it where the packed one does: same answer."""
    out_features = 96 if small else SMALL_WEIGHT_BYTES // (4 * 64) + 1
    weight, bias = _random(out_features, 64), _random(out_features) if with_bias else None
    projection = Linear(weight, bias)
    assert projection.has_plain_copy == small
    inputs, residual = _random(rows, 2, 64), _random(rows, 2, out_features)
    kept = residual.clone()
    got = projection.add_to(residual, inputs)
    assert got.shape == residual.shape
    torch.testing.assert_close(got, residual + F.linear(inputs, weight, bias), rtol=1e-5, atol=1e-4)
    assert torch.equal(residual, kept)  # the residual stream itself is not written


def test_packed_calls_see_only_a_few_row_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    """oneDNN keeps a kernel per input shape for good, so the shapes are bounded."""
    seen: list[int] = []
    real = torch.ops.mkldnn._linear_pointwise

    class _Recording:
        @staticmethod
        def _linear_pointwise(inputs, *args):
            seen.append(inputs.shape[0])
            return real(inputs, *args)

    weight = _random(SMALL_WEIGHT_BYTES // (4 * 64) + 1, 64)  # packed only
    projection = Linear(weight)
    monkeypatch.setattr(torch.ops, "mkldnn", _Recording)
    for rows in (1, 5, 45, 100, 300):
        inputs = _random(rows, 64)
        got = projection(inputs)
        torch.testing.assert_close(got, F.linear(inputs, weight), rtol=1e-5, atol=1e-4)
    assert seen == [1, 5, 48, 104, 128, 128, 48]  # 300 rows: two slices of 128, then 44
    every_count = {packed_row_count(rows) for rows in range(1, MAX_PACKED_ROWS + 1)}
    assert every_count == set(range(1, 9)) | set(range(16, MAX_PACKED_ROWS + 1, 8))


@pytest.mark.parametrize("rows", [1, MIN_PACKED_ROWS, 33])
@pytest.mark.parametrize("packing", [True, False])
def test_outputs_padded_to_an_alignment_are_sliced_back(
    rows: int, packing: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What an LM head on a GPU does (the bench's 128,257 tokens): the padded
    columns never show, through either path, ``add_to`` included."""
    if not packing:
        monkeypatch.setattr(linear, "_packing_works", lambda dtype: False)
    weight, bias = _random(37, 16), _random(37)
    projection = Linear(weight, bias, pad_out_to=8)
    for inputs in (_random(rows, 16), _random(rows, 3, 16)):
        expected = F.linear(inputs, weight, bias)
        got = projection(inputs)
        assert got.shape == expected.shape
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    residual = _random(rows, 37)
    torch.testing.assert_close(
        Linear(weight, pad_out_to=8).add_to(residual.clone(), inputs[:, 0]),
        residual + F.linear(inputs[:, 0], weight),
        rtol=1e-5,
        atol=1e-5,
    )
