"""client/decode.py: every value the API answers decodes back into the facade's frozen value."""

from __future__ import annotations

from pathlib import Path

import pytest

from ilab_memory import types
from ilab_memory.client.decode import decode
from ilab_memory.encoding import encode

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("cls", [types.SaveResult, types.SessionStartResponse, types.Timeline, types.MemoryStats])
def test_every_value_decodes_back_from_its_json(cls, facade, remote):
    saved = facade.mem_save("alice", "Tea", "Green tea, no sugar.", type="preference")
    facade.mem_save("alice", "Tea time", "Tea at five.")
    value = {
        types.SaveResult: saved,
        types.SessionStartResponse: facade.mem_session_start("alice"),
        types.Timeline: facade.mem_timeline("alice", saved.observation.id),
        types.MemoryStats: facade.mem_stats("alice"),
    }[cls]
    assert decode(cls, encode(value)) == value
