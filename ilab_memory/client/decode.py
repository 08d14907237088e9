"""The API's JSON back into the frozen values of ``ilab_memory.types``: the inverse of
``ilab_memory.encoding.encode``, driven by the same dataclass annotations, so a field added to a
type is decoded at once. No Django import."""

from __future__ import annotations

import dataclasses
import functools
import types as pytypes
import typing
from typing import Any, Union

from ..encoding import SCORE_KINDS

SCORE_CLASSES = {kind: cls for cls, kind in SCORE_KINDS.items()}


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def decode(annotation: Any, data: Any) -> Any:
    """``data`` (parsed JSON) as a value of ``annotation``: a dataclass of ``types``, a list of
    them, a score, or plain JSON (returned as it is)."""
    if data is None:
        return None
    origin = typing.get_origin(annotation)
    if origin in (Union, pytypes.UnionType):
        members = [member for member in typing.get_args(annotation) if member is not type(None)]
        if all(member in SCORE_KINDS for member in members):
            return _score(data)
        (member,) = members
        return decode(member, data)
    if origin is list:
        (item,) = typing.get_args(annotation)
        return [decode(item, value) for value in data]
    if annotation in SCORE_KINDS:
        return _score(data)
    if dataclasses.is_dataclass(annotation):
        hints = _hints(annotation)
        fields = {field.name: decode(hints[field.name], data[field.name])
                  for field in dataclasses.fields(annotation) if field.name in data}
        return annotation(**fields)
    return data


def _score(data: dict):
    return SCORE_CLASSES[data["kind"]](value=data["value"], breakdown=data.get("breakdown", {}))
