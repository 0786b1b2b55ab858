"""Fingerprint every submission once, then score the pairs that share a fingerprint (``grader.similarity``)."""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from copydetect import compare_files
from copydetect.utils import filter_code, find_fingerprint_overlap, get_copied_slices, get_token_coverage, winnow

from .sources import Boilerplate, Submission

K = 20
"""Fingerprint length, in normalised characters (about six tokens: one short statement)."""
WINDOW = 4
"""Winnowing window: every shared run of ``K + WINDOW - 1`` normalised characters is found."""
MIN_MATCH = 60
"""A pair whose shared code is shorter than this many normalised characters is not listed: one common
line written the same way by two students is not evidence."""
CELL_MIN = 100
"""One answer cell counts on its own when at least this many of its normalised characters are shared (a
function of a few lines): the pair then scores at least that cell's shared share, so one copied function is
found in an otherwise independent notebook. Independent students' cells share at most about 75."""
FLOOR = 0.2
"""Pairs below this score are not kept at all (the threshold a TA can choose starts here)."""
THRESHOLD = 0.5
"""The default threshold of the report."""

_SEPARATOR = "\n\n"


@dataclass(frozen=True)
class Segment:
    text: str
    matched: bool


@dataclass(frozen=True)
class CellView:
    """One answer cell of both students side by side, the shared code marked."""

    name: str
    a: tuple[Segment, ...]
    b: tuple[Segment, ...]

    @property
    def matched(self) -> bool:
        return any(s.matched for s in self.a) or any(s.matched for s in self.b)


@dataclass(frozen=True)
class Pair:
    a: str
    b: str
    score: float
    """The larger of the two shares: how much of one student's own code (boilerplate removed) the other has."""
    share_a: float
    share_b: float
    shared: int
    """Normalised characters in the shared code."""
    cells: tuple[str, ...]
    """The answer cells where the shared code lies (in ``a``'s notebook), most shared first."""


@dataclass(frozen=True)
class Document:
    """One submission's fingerprints: each cell's on its own (no fingerprint spans two cells), joined into the
    one object ``copydetect.compare_files`` reads, positions shifted to the joined text."""

    submission: Submission
    starts: tuple[int, ...]
    """Where each cell's code begins in the cells' code joined by ``_SEPARATOR`` (copydetect's offsets)."""
    k: int
    hashes: set[int]
    hash_idx: dict[int, list[int]]
    filtered_code: str
    offsets: np.ndarray
    token_coverage: float
    spans: tuple[tuple[str, int, int, float], ...]
    """Each cell's name, where its normalised code begins and ends in ``filtered_code``, and its coverage."""


@dataclass(frozen=True)
class Fingerprint:
    """One piece of code's winnowed fingerprints, as ``copydetect.CodeFingerprint`` holds them."""

    filtered_code: str
    """The normalised code (``V``, ``F``, ``O``, ``S`` for names and strings)."""
    offsets: np.ndarray
    """copydetect's map from positions in ``filtered_code`` back to the raw code."""
    hash_idx: dict[int, list[int]]
    """Each kept fingerprint, and where in ``filtered_code`` its runs of ``K`` characters begin."""
    token_coverage: float
    """How many of ``filtered_code``'s characters some kept fingerprint covers."""

    @property
    def hashes(self) -> set[int]:
        return set(self.hash_idx)


def kgram_hashes(filtered: str) -> np.ndarray:
    """A 64-bit hash of every run of ``K`` characters of ``filtered``, the same in every process.

    Not Python's ``hash()``, which copydetect uses: that is salted per process (``PYTHONHASHSEED``), so which
    fingerprints winnowing kept, and with them the pairs' shared characters and scores, changed between runs.
    """
    runs = (filtered[i : i + K].encode() for i in range(len(filtered) - K + 1))
    digests = b"".join(hashlib.blake2b(run, digest_size=8).digest() for run in runs)
    return np.frombuffer(digests, dtype="<i8").astype(np.int64)


def boilerplate_hashes(plate: Boilerplate) -> np.ndarray:
    """The fingerprints of the release's code and of the instructor's solution."""
    found = [_fingerprint(text, None).hashes for text in plate.texts if text.strip()]
    if not found:
        return np.array([], dtype=np.int64)
    return np.unique(np.concatenate([np.fromiter(h, dtype=np.int64) for h in found]))


def document(submission: Submission, excluded: np.ndarray) -> Document:
    text_starts, filtered, offsets = [], [], [np.array([[0, 0]])]
    hashes: set[int] = set()
    hash_idx: dict[int, list[int]] = {}
    coverage, raw_at, filtered_at = 0.0, 0, 0
    spans = []
    for cell in submission.cells:
        text_starts.append(raw_at)
        if cell.code.strip():
            part = _fingerprint(cell.code, excluded)
            for value, where in part.hash_idx.items():
                hashes.add(int(value))
                hash_idx.setdefault(int(value), []).extend(int(i) + filtered_at for i in where)
            if len(part.offsets):
                offsets.append(part.offsets + np.array([filtered_at, raw_at - filtered_at]))
            filtered.append(part.filtered_code)
            coverage += float(part.token_coverage)
            spans.append((cell.name, filtered_at, filtered_at + len(part.filtered_code), float(part.token_coverage)))
            filtered_at += len(part.filtered_code)
        raw_at += len(cell.code) + len(_SEPARATOR)
    return Document(
        submission,
        tuple(text_starts),
        K,
        hashes,
        hash_idx,
        "".join(filtered),
        np.concatenate(offsets),
        coverage,
        tuple(spans),
    )


def pairs(submissions: Sequence[Submission], plate: Boilerplate) -> list[Pair]:
    """Every pair at or above ``FLOOR`` sharing at least ``MIN_MATCH`` normalised characters, best first."""
    excluded = boilerplate_hashes(plate)
    docs = [document(s, excluded) for s in submissions]
    holders: dict[int, list[int]] = {}
    for index, doc in enumerate(docs):
        for value in doc.hashes:
            holders.setdefault(int(value), []).append(index)
    candidates: set[tuple[int, int]] = set()
    for group in holders.values():
        if len(group) > 1:
            candidates.update(itertools.combinations(group, 2))
    found = [pair for i, j in sorted(candidates) if (pair := score(docs[i], docs[j])) is not None]
    return sorted(found, key=lambda p: (-p.score, p.a, p.b))


def score(first: Document, second: Document) -> Pair | None:
    shared, (share_a, share_b), _ = compare_files(first, second)
    if int(shared) < MIN_MATCH:
        return None
    idx_a, idx_b = find_fingerprint_overlap(first.hashes, second.hashes, first.hash_idx, second.hash_idx)
    cells_a, cells_b = _by_cell(first, idx_a), _by_cell(second, idx_b)
    whole_cells = [chars / cover for chars, cover in [*cells_a.values(), *cells_b.values()] if chars >= CELL_MIN]
    best = float(max(share_a, share_b, *whole_cells))
    if best < FLOOR:
        return None
    cells = tuple(name for name, (chars, _) in sorted(cells_a.items(), key=lambda kv: -kv[1][0]) if chars)
    return Pair(
        first.submission.student,
        second.submission.student,
        round(min(best, 1.0), 4),
        round(float(share_a), 4),
        round(float(share_b), 4),
        int(shared),
        cells,
    )


def _by_cell(doc: Document, positions: np.ndarray) -> dict[str, tuple[int, float]]:
    """Per cell: how many of its normalised characters the other document shares, and its coverage."""
    slices = get_copied_slices(positions, doc.k)
    ranges = _ranges(slices)
    return {
        name: (sum(max(0, min(e, end) - max(s, begin)) for s, e in ranges), cover)
        for name, begin, end, cover in doc.spans
    }


def side_by_side(first: Submission, second: Submission, plate: Boilerplate) -> tuple[CellView, ...]:
    """Both students' answer cells in the release's order, the code they share marked on each side."""
    excluded = boilerplate_hashes(plate)
    a, b = document(first, excluded), document(second, excluded)
    _, _, (slices_a, slices_b) = compare_files(a, b)
    marked_a, marked_b = _segments(a, slices_a), _segments(b, slices_b)
    names = [c.name for c in first.cells] + [c.name for c in second.cells if c.name not in marked_a]
    return tuple(CellView(n, marked_a.get(n, ()), marked_b.get(n, ())) for n in dict.fromkeys(names))


def _fingerprint(text: str, excluded: np.ndarray | None) -> Fingerprint:
    """What ``copydetect.CodeFingerprint`` computes (its tokens, winnowing and coverage), with a stable hash."""
    filtered, offsets = filter_code(text, "answers.py", language="python")
    hashes, idx = winnow(kgram_hashes(filtered), WINDOW, remove_duplicates=False)
    if excluded is not None and len(excluded):
        kept = ~np.isin(hashes, excluded)
        hashes, idx = hashes[kept], idx[kept]
    hash_idx: dict[int, list[int]] = {}
    for value, at in zip(hashes.tolist(), idx.tolist(), strict=True):
        hash_idx.setdefault(int(value), []).append(int(at))
    return Fingerprint(filtered, offsets, hash_idx, float(get_token_coverage(hash_idx, K, len(filtered))))


def _ranges(slices: np.ndarray) -> list[tuple[int, int]]:
    if slices.size == 0:
        return []
    return [(int(s), int(e)) for s, e in zip(slices[0], slices[1], strict=True)]


def _segments(doc: Document, slices: np.ndarray) -> dict[str, tuple[Segment, ...]]:
    ranges = _ranges(slices)
    views: dict[str, tuple[Segment, ...]] = {}
    for cell, begin in zip(doc.submission.cells, doc.starts, strict=True):
        end = begin + len(cell.code)
        marks = sorted((max(s, begin) - begin, min(e, end) - begin) for s, e in ranges if s < end and e > begin)
        pieces: list[Segment] = []
        at = 0
        for start, stop in marks:
            if start > at:
                pieces.append(Segment(cell.code[at:start], False))
            if stop > max(start, at):
                pieces.append(Segment(cell.code[max(start, at) : stop], True))
            at = max(at, stop)
        if at < len(cell.code):
            pieces.append(Segment(cell.code[at:], False))
        views[cell.name] = tuple(pieces)
    return views
