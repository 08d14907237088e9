"""The API's JSON back into the frozen values of ``ilab_memory.types``: the inverse of
``ilab_memory.encoding.encode``, driven by the same dataclass annotations, so a field added to a
type is decoded at once. No Django import."""

from __future__ import annotations

import dataclasses
import functools
import types as pytypes
import typing
from collections.abc import Callable
from typing import Any, TypeVar, Union, overload

from ..encoding import SCORE_KINDS
from ..types import ContextScore, SearchScore

_T = TypeVar("_T")

SCORE_CLASSES = {kind: cls for cls, kind in SCORE_KINDS.items()}


@overload
def decode(annotation: type[_T], data: Any) -> _T: ...
@overload
def decode(annotation: Any, data: Any) -> Any: ...
def decode(annotation: Any, data: Any) -> Any:
    """``data`` (parsed JSON) as a value of ``annotation``: a dataclass of ``types``, a list of
    them, a score, or plain JSON (returned as it is)."""
    return _decoder(annotation)(data)


def decode_list(item: type[_T], data: Any) -> list[_T]:
    """``data`` (a JSON array) as a list of ``item`` values."""
    return [decode(item, value) for value in data]


@functools.cache
def _decoder(annotation: Any) -> Callable[[Any], Any]:
    """A function that decodes JSON of ``annotation``; the annotations are read once per type,
    not on every answer."""
    origin = typing.get_origin(annotation)
    if origin in (Union, pytypes.UnionType):
        members = [member for member in typing.get_args(annotation) if member is not type(None)]
        inner = _score if all(member in SCORE_KINDS for member in members) else _decoder(*members)
        return lambda data: None if data is None else inner(data)
    if origin is list:
        item = _decoder(*typing.get_args(annotation))
        return lambda data: [item(value) for value in data]
    if annotation in SCORE_KINDS:
        return _score
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        hints = typing.get_type_hints(annotation)
        fields = [(field.name, _decoder(hints[field.name])) for field in dataclasses.fields(annotation)]
        return lambda data: annotation(**{name: field(data[name]) for name, field in fields if name in data})
    return _as_it_is


def _as_it_is(data: Any) -> Any:
    return data


def _score(data: dict[str, Any]) -> ContextScore | SearchScore:
    score: ContextScore | SearchScore = SCORE_CLASSES[data["kind"]](value=data["value"],
                                                                    breakdown=data.get("breakdown", {}))
    return score
