"""Linear projections whose weights are pre-packed for oneDNN on a CPU.

Why: on a CPU, ``F.linear`` hands each call to a BLAS that re-lays the weight
out for its kernel every time, and for the few-row products of decoding that
is most of the work. oneDNN can lay a weight out once, for its own kernel, and
reuse it (what ``torch.compile`` does on a CPU when it freezes weights): Llama
3's 128k-token LM head on one core takes 5.1 ms for eight rows against 14.8 ms
through BLAS, 12 against 34 for 32 rows, with bit-identical results on this
machine. The packed call has a fixed cost of ~10 µs, more than a small
weight's whole product for a few rows, so a small weight keeps its plain
copy too and short calls use it; a large one (where that cost is noise and a
second copy is not) is kept packed only. Where the two cross was measured
inside the decode loop (one JSON request on the demo model, each forward's
threshold drawn at random), not on a lone product whose weight stays in
cache: a 3-position step took 1.44 ms with plain products against 1.62
packed, 4 positions 1.67 against 1.62, 5 positions 1.80 against 1.62.

oneDNN builds and keeps a kernel for every input shape it sees, and never
lets go (measured: 250 MB → 1.6 GB of RSS over 3,000 calls with row counts
drawn from 1..600, whatever ``LRU_CACHE_CAPACITY`` says). So packed calls
only ever see a few shapes: up to ``ROW_STEP`` rows go as they are, more
are padded to a multiple of it (23 shapes in all), and more than
``MAX_PACKED_ROWS`` go through in slices of that many. Padding to powers of
two throughout wasted up to half of a product: a c=32 decode step with a
few jump-forward tokens has 33-64 real positions, all computed as 64. Few
rows are not padded at all: the padding copy costs 4-10 µs a call, more
than the product saves (the demo's gate-up projection: 3 rows 28.6 µs
as they are, 34.3 padded to 4; 5 rows 29.5 against 44.4 padded to 8), and
a one-request step with a jump-forward has 2-5 positions.

The plain copy is kept transposed (``[in, out]``, contiguous): a one-row
product reads it in the order BLAS wants without a transposed-operand path,
15-20% less per call on this machine (the demo's gate-up projection, one row:
22 -> 18 µs), and :meth:`Linear.add_to` folds a residual add into the same
call (``addmm``).

Off a CPU, or where this torch lacks the (private) oneDNN ops, or they give a
different answer on a probe, every projection is a plain product.
"""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F

# The batch size oneDNN lays the weight out for; any other size still works.
PACKED_BATCH_HINT = 32
# Calls with fewer rows than this use a small weight's plain copy.
MIN_PACKED_ROWS = 4
# The largest padded row count a packed call sees.
MAX_PACKED_ROWS = 128
# Packed calls' row counts: powers of two up to this, then its multiples.
ROW_STEP = 8
# Weights up to this size keep a plain copy beside the packed one.
SMALL_WEIGHT_BYTES = 4 << 20
_PACKABLE_DTYPES = frozenset({torch.float32, torch.bfloat16})
# On a GPU, an LM head computes its output in a multiple of this many
# columns: an odd output row takes cuBLAS off its fast kernels. Measured on an
# H200 (Llama-3.2-1B shape, bf16), the head of the bench's 128,257 tokens
# took 0.59-0.61 ms a decode step at 16 or 64 rows, 0.13-0.15 ms padded
# (reading its 0.5 GB of weights takes ~0.11 ms).
GPU_OUT_ALIGNMENT = 64


class Linear:
    """``x @ weight.T + bias``, through the packed weight where that is faster."""

    def __init__(
        self, weight: torch.Tensor, bias: torch.Tensor | None = None, *, pad_out_to: int = 1
    ) -> None:
        """``pad_out_to``: compute outputs in a multiple of this many columns
        (zero weights), the rest sliced off (the result is then a view with
        rows further apart): for an LM head on a GPU, ``GPU_OUT_ALIGNMENT``."""
        self.out_features = weight.shape[0]
        padding = -self.out_features % pad_out_to
        if padding:
            weight = F.pad(weight, (0, 0, 0, padding))
            bias = None if bias is None else F.pad(bias, (0, padding))
        self._computed_out = self.out_features + padding
        self._bias = bias
        self._packed: torch.Tensor | None = None
        keep_plain = True
        if (
            weight.device.type == "cpu"
            and weight.dtype in _PACKABLE_DTYPES
            and _packing_works(weight.dtype)
        ):
            self._packed = _pack(weight)
            keep_plain = weight.numel() * weight.element_size() <= SMALL_WEIGHT_BYTES
        # Off a CPU the transposed view serves as well (cuBLAS takes either
        # layout) and costs no second copy of the weight.
        transposed = weight.t() if weight.device.type != "cpu" else weight.t().contiguous()
        self._plain_t = transposed if keep_plain else None

    @property
    def packed(self) -> bool:
        return self._packed is not None

    @property
    def has_plain_copy(self) -> bool:
        return self._plain_t is not None

    def __call__(self, inputs: torch.Tensor) -> torch.Tensor:
        rows = inputs.numel() // inputs.shape[-1]
        if self._uses_plain(rows):
            product = torch.matmul(inputs, self._plain_t)
            if self._bias is not None:
                product.add_(self._bias)
        else:
            flat = inputs.reshape(rows, inputs.shape[-1])
            product = self._packed_product(flat).view(*inputs.shape[:-1], self._computed_out)
        if self._computed_out == self.out_features:
            return product
        return product[..., : self.out_features]

    def add_to(self, residual: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
        """``residual + self(inputs)``, in one call where the plain copy is used."""
        flat = inputs.reshape(-1, inputs.shape[-1])
        padded = self._computed_out != self.out_features
        if self._bias is None and not padded and self._uses_plain(flat.shape[0]):
            summed = torch.addmm(residual.reshape(flat.shape[0], -1), flat, self._plain_t)
            return summed.view(residual.shape)
        return self(inputs).add_(residual)

    def _uses_plain(self, rows: int) -> bool:
        if self._packed is None:
            return True
        return self._plain_t is not None and not MIN_PACKED_ROWS <= rows <= MAX_PACKED_ROWS

    def _packed_product(self, flat: torch.Tensor) -> torch.Tensor:
        """``[rows, out]`` for ``[rows, in]``, in slices of at most MAX_PACKED_ROWS
        (no rows: a decode step whose rows all still take forced tokens)."""
        if not flat.shape[0]:
            return flat.new_empty(0, self._computed_out)
        parts = [
            self._packed_rows(flat[start : start + MAX_PACKED_ROWS])
            for start in range(0, flat.shape[0], MAX_PACKED_ROWS)
        ]
        return parts[0] if len(parts) == 1 else torch.cat(parts)

    def _packed_rows(self, rows: torch.Tensor) -> torch.Tensor:
        """At most MAX_PACKED_ROWS rows, padded to one of the few row counts."""
        count = rows.shape[0]
        padded = packed_row_count(count)
        if padded != count:
            rows = F.pad(rows, (0, 0, 0, padded - count))
        output = torch.ops.mkldnn._linear_pointwise(rows, self._packed, self._bias, "none", [], "")
        return output[:count]


def packed_row_count(rows: int) -> int:
    """The row count a packed call of ``rows`` rows is padded to."""
    if rows <= ROW_STEP:
        return rows
    return -(-rows // ROW_STEP) * ROW_STEP


def _pack(weight: torch.Tensor) -> torch.Tensor:
    return torch.ops.mkldnn._reorder_linear_weight(weight.contiguous(), PACKED_BATCH_HINT)


@functools.cache
def _packing_works(dtype: torch.dtype) -> bool:
    """Whether this torch has the oneDNN ops for ``dtype`` on this CPU and they
    agree with ``F.linear`` (bfloat16 needs AVX-512 BW/VL/DQ or AVX-NE-CONVERT:
    oneDNN raises on CPUs without them)."""
    if not torch.backends.mkldnn.is_available():
        return False
    try:
        generator = torch.Generator().manual_seed(0)
        weight = torch.randn(48, 40, generator=generator).to(dtype)
        inputs = torch.randn(5, 40, generator=generator).to(dtype)
        packed = torch.ops.mkldnn._linear_pointwise(inputs, _pack(weight), None, "none", [], "")
    except (AttributeError, RuntimeError, NotImplementedError):
        return False
    tolerance = 1e-5 if dtype == torch.float32 else 2e-2
    return bool(torch.allclose(packed, F.linear(inputs, weight), rtol=tolerance, atol=tolerance))
