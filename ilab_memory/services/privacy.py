"""Redaction of ``<private>…</private>`` blocks at the write boundary (Braess #3).

One pass over the tags, depth-counted, linear in the text: the tag pattern cannot cross a
``<`` or ``>``, so no input makes the engine backtrack over the rest of the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

REDACTED = "[REDACTED]"

# <private>, <PRIVATE class="x">, </private >, <private/>. "\b" keeps <privateer> out.
_TAG = re.compile(r"<\s*(/)?\s*private\b([^<>]*)>", re.IGNORECASE)


@dataclass(frozen=True)
class Redacted:
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
    position = 0
    for match in _TAG.finditer(text):
        is_closer = match.group(1) is not None
        self_closing = not is_closer and match.group(2).rstrip().endswith("/")
        if depth == 0:
            out.append(text[position : match.start()])
            if is_closer:
                pass  # stray closing tag: dropped
            elif self_closing:
                out.append(REDACTED)
                blocks += 1
            else:
                depth = 1
        elif is_closer:
            depth -= 1
            if depth == 0:
                out.append(REDACTED)
                blocks += 1
        elif not self_closing:
            depth += 1
        position = match.end()
    if depth > 0:
        out.append(REDACTED)
        blocks += 1
    else:
        out.append(text[position:])
    if blocks == 0 and position == 0:
        return Redacted(text, 0)
    return Redacted("".join(out), blocks)


def redact_json(value: Any) -> tuple[Any, int]:
    """Redact every string in a JSON value, dict keys included; returns (value, blocks)."""
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
