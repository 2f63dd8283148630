"""The CPU mask application agrees with xgrammar's own kernel."""

from __future__ import annotations

import pytest
import torch
import xgrammar as xgr

from engine.structured_output import StructuredOutputs

VOCAB = 32 * 40 + 13  # the last bitmask word is partly used


def _outputs(rows: int) -> StructuredOutputs:
    return StructuredOutputs(
        None,  # type: ignore[arg-type]  # no grammar is compiled here
        vocab_size=VOCAB,
        eos_token_ids=[0],
        token_bytes=[b"x"] * VOCAB,
        encode=lambda text: [],
        max_batch_size=rows,
        mask_threads=0,
    )


@pytest.mark.parametrize("constrained_rows", [[0, 1, 2, 3], [1, 3], [2]])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_cpu_masks_equal_xgrammars_kernel(constrained_rows: list[int], dtype: torch.dtype) -> None:
    outputs = _outputs(4)
    generator = torch.Generator().manual_seed(len(constrained_rows))
    outputs._bitmask.copy_(
        torch.randint(-(2**31), 2**31 - 1, outputs._bitmask.shape, generator=generator)
    )
    outputs._bitmask[2, :] = 0  # nothing allowed
    outputs._bitmask[3, :] = -1  # everything allowed
    logits = torch.randn(4, VOCAB, generator=generator).to(dtype)
    expected = logits.clone()
    xgr.apply_token_bitmask_inplace(expected, outputs._bitmask, indices=constrained_rows)
    outputs.apply_masks(logits, constrained_rows)
    assert torch.equal(logits, expected)
    assert torch.isinf(logits[constrained_rows]).any()
