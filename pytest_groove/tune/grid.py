"""The 384-point fusion grid ``groove tune`` measures.

Four axes: ``rrf_k`` (6 values) and the three bm25 column weights (4 values
each).  A grid point ("condition") is identified by its four axis *indices*;
the flat condition index orders them heading-outermost, ``rrf_k`` innermost, so
the six conditions that share one weight triple are contiguous.  That order is
also the tie-break order of the selection, which is why it is fixed here and
nowhere else.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from pytest_groove.settings.config import FusionParams

#: rrf_k values: denser below 60, where lowering k starts to let one leg's
#: confident top hit overtake chunks both legs agree on
RRF_K_VALUES: tuple[float, ...] = (5.0, 10.0, 20.0, 30.0, 60.0, 100.0)
#: bm25 column weights: a log2 grid, because a weight enters bm25 through the
#: saturating term-frequency factor
WEIGHT_VALUES: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0)

N_K = len(RRF_K_VALUES)
N_W = len(WEIGHT_VALUES)
#: number of (heading, context, content) weight triples
N_WEIGHT_TRIPLES = N_W**3
#: number of grid points
N_CONDITIONS = N_WEIGHT_TRIPLES * N_K

#: axis indices of the built-in defaults: h=2.0 ctx=1.0 content=1.0 k=60
DEFAULT_INDICES: tuple[int, int, int, int] = (2, 1, 1, 4)
#: the rrf_k index Phase W of the selection pins (k = 60)
DEFAULT_K_INDEX = DEFAULT_INDICES[3]
#: grid centre used by the plateau tie-break (in index units)
CENTRE: tuple[float, float, float, float] = (1.5, 1.5, 1.5, 2.5)


def condition_index(h: int, ctx: int, content: int, k: int) -> int:
    """Flat index of the condition with these axis indices."""
    for value, size in ((h, N_W), (ctx, N_W), (content, N_W), (k, N_K)):
        if not 0 <= value < size:
            raise ValueError(f"axis index {value} out of range 0..{size - 1}")
    return ((h * N_W + ctx) * N_W + content) * N_K + k


def weight_triple_index(h: int, ctx: int, content: int) -> int:
    """Index 0..63 of a weight triple (grid order)."""
    return (h * N_W + ctx) * N_W + content


def axis_indices(index: int) -> tuple[int, int, int, int]:
    """Inverse of :func:`condition_index`."""
    if not 0 <= index < N_CONDITIONS:
        raise ValueError(f"condition index {index} out of range 0..{N_CONDITIONS - 1}")
    w, k = divmod(index, N_K)
    hc, content = divmod(w, N_W)
    h, ctx = divmod(hc, N_W)
    return h, ctx, content, k


#: flat index of the built-in default condition (226)
DEFAULT_INDEX = condition_index(*DEFAULT_INDICES)


@dataclass(frozen=True, order=True)
class Condition:
    """One grid point, by axis indices."""

    h: int
    ctx: int
    content: int
    k: int

    @classmethod
    def from_index(cls, index: int) -> Condition:
        return cls(*axis_indices(index))

    @property
    def index(self) -> int:
        return condition_index(self.h, self.ctx, self.content, self.k)

    @property
    def weight_index(self) -> int:
        return weight_triple_index(self.h, self.ctx, self.content)

    @property
    def rrf_k(self) -> float:
        return RRF_K_VALUES[self.k]

    @property
    def weights(self) -> tuple[float, float, float]:
        """(heading, context, content) bm25 weights."""
        return (WEIGHT_VALUES[self.h], WEIGHT_VALUES[self.ctx], WEIGHT_VALUES[self.content])

    @property
    def params(self) -> FusionParams:
        h, ctx, content = self.weights
        return FusionParams(
            rrf_k=self.rrf_k,
            bm25_heading_weight=h,
            bm25_context_weight=ctx,
            bm25_content_weight=content,
        )

    @property
    def is_default(self) -> bool:
        return self.index == DEFAULT_INDEX

    @property
    def label(self) -> str:
        h, ctx, content = self.weights
        return f"h={h:.1f} ctx={ctx:.1f} content={content:.1f} k={self.rrf_k:.0f}"

    def centre_distance(self) -> float:
        """L1 distance from the grid centre, in index units (plateau tie-break)."""
        return sum(
            abs(v - c)
            for v, c in zip((self.h, self.ctx, self.content, self.k), CENTRE, strict=True)
        )

    def to_json(self) -> dict[str, float]:
        h, ctx, content = self.weights
        return {
            "rrf_k": self.rrf_k,
            "bm25_heading_weight": h,
            "bm25_context_weight": ctx,
            "bm25_content_weight": content,
        }


DEFAULT_CONDITION = Condition(*DEFAULT_INDICES)


def all_conditions() -> Iterator[Condition]:
    """Every grid point in grid order (ascending condition index)."""
    for index in range(N_CONDITIONS):
        yield Condition.from_index(index)


def weight_triples() -> Iterator[tuple[int, tuple[float, float, float]]]:
    """(weight-triple index, (heading, context, content) weights) in grid order."""
    for w in range(N_WEIGHT_TRIPLES):
        # k index is irrelevant for the weights; pin it at the default
        yield w, Condition.from_index(w * N_K + DEFAULT_K_INDEX).weights


def toml_number(value: float) -> str:
    """A float for TOML: always with a decimal point (``10.0``), else shortest repr.

    A bare ``10`` would be a TOML integer, which the float-typed fusion keys
    would still accept in our loader but not in every consumer of the snippet.
    """
    text = repr(float(value))
    if "e" in text or "E" in text or "inf" in text or "nan" in text:
        raise ValueError(f"cannot write {value!r} as a plain TOML float")
    return text


def toml_snippet(condition: Condition) -> str:
    """The paste-ready ``[search.fusion]`` block for ``condition`` (ends in a newline)."""
    h, ctx, content = condition.weights
    return (
        "[search.fusion]\n"
        f"rrf_k = {toml_number(condition.rrf_k)}\n"
        f"bm25_heading_weight = {toml_number(h)}\n"
        f"bm25_context_weight = {toml_number(ctx)}\n"
        f"bm25_content_weight = {toml_number(content)}\n"
    )
