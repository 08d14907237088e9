"""Redaction of ``<private>…</private>`` blocks at the write boundary (Braess #3).

Every service that stores caller text runs it through :func:`redact` (or :func:`redact_json`)
before hashing, length checks, storage and indexing. The grammar is in ``docs/privacy.md``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

REDACTED = "[REDACTED]"

# <private>, <PRIVATE class="x">, </private >, < / private>, <private/>.
# The lookahead keeps <privateer> and <private-key> out. Linear time: the quantifiers are
# possessive (no backtracking) and none of them can consume a "<", so an attempt that starts
# at one "<" never reads past the next one: 1 MB of "<private" or "<   " costs one pass.
# A tag cut short by a "<" or the end of the text (``<private note="a<b">``, ``<private x``)
# has no ``gt``: as an opener it still opens a block (fail closed); as a closer it closes
# nothing, so a malformed closer never ends a block early.
_TAG = re.compile(
    r"<\s*+(?P<closer>/\s*+)?private(?=[\s/><]|$)(?P<rest>[^<>]*+)(?P<gt>>?)", re.IGNORECASE
)


@dataclass(frozen=True)
class Redacted:
    """The text to store and how many private blocks were removed from it (never what)."""

    text: str
    blocks: int


def redact(text: str) -> Redacted:
    """Replace each outermost private block with ``[REDACTED]`` and count the blocks.

    Nesting is depth-counted; an unclosed opener redacts through the end (fail closed); a
    stray closer is dropped; ``<private/>`` is an empty block.
    """
    if "<" not in text:
        return Redacted(text, 0)
    out: list[str] = []
    blocks = 0
    depth = 0
    position = 0  # end of the last tag seen; text before it is either emitted or redacted
    for match in _TAG.finditer(text):
        complete = bool(match["gt"])
        is_closer = match["closer"] is not None
        if is_closer and not complete:
            continue  # a cut-short closer: ordinary text outside a block, no end inside one
        self_closing = not is_closer and complete and match["rest"].rstrip().endswith("/")
        if depth == 0:
            out.append(text[position : match.start()])
            if self_closing:
                out.append(REDACTED)
                blocks += 1
            elif not is_closer:
                depth = 1
            # else: a stray closer, dropped so it cannot pair with a later opener
        elif is_closer:
            depth -= 1
            if depth == 0:
                out.append(REDACTED)
                blocks += 1
        elif not self_closing:
            depth += 1
        position = match.end()
    if position == 0:
        return Redacted(text, 0)
    if depth > 0:
        out.append(REDACTED)  # fail closed: everything after the opener is private
        blocks += 1
    else:
        out.append(text[position:])
    return Redacted("".join(out), blocks)


def redact_json(value: Any) -> tuple[Any, int]:
    """Redact every string in a JSON value, dict keys included; returns (value, blocks).

    Callers check the nesting depth first (``check_metadata_shape``): this recurses.
    """
    if isinstance(value, str):
        result = redact(value)
        return result.text, result.blocks
    if isinstance(value, list):
        total = 0
        items = []
        for item in value:
            clean, count = redact_json(item)
            items.append(clean)
            total += count
        return items, total
    if isinstance(value, dict):
        total = 0
        cleaned: dict[str, Any] = {}
        for key, item in value.items():
            clean_key, key_blocks = redact_json(key)
            clean_item, item_blocks = redact_json(item)
            total += key_blocks + item_blocks
            # Two keys that differed only inside private blocks must not overwrite each other.
            unique_key, n = clean_key, 2
            while unique_key in cleaned:
                unique_key, n = f"{clean_key} ({n})", n + 1
            cleaned[unique_key] = clean_item
        return cleaned, total
    return value, 0


def shown_key(key: Any, *, max_chars: int = 60) -> str:
    """A caller's field name as an error may show it: short and free of private blocks, else "?"."""
    if isinstance(key, str) and len(key) <= max_chars and redact(key).text == key:
        return key
    return "?"
