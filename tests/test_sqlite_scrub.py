"""services/sqlite_scrub.py: after an erasure on SQLite no byte of the erased text stays in the
database file or its write-ahead log."""

import os

import pytest
from django.db import connection

from ilab_memory.models import (
    Observation,
)
from tests.histories import traces, two_histories


@pytest.mark.skipif(connection.vendor != "sqlite", reason="reads the SQLite file itself")
def test_forgotten_user_is_in_no_byte_of_the_sqlite_file_or_its_wal(tmem):
    alice, alice_marker, bob, bob_marker = two_histories(tmem)
    path = connection.settings_dict["NAME"]
    with open(path, "rb") as handle, open(path + "-wal", "rb") as wal:
        assert alice_marker.encode() in handle.read() + wal.read()  # the check can see it

    counts = tmem.mem_forget_user(alice)

    assert counts == {"sessions": 2, "observations": 4, "revisions": 1, "vectors": 3}
    stored = b""
    for suffix in ("", "-wal"):
        if os.path.exists(path + suffix):
            with open(path + suffix, "rb") as handle:
                stored += handle.read()
    for trace in traces(alice, alice_marker):
        assert trace not in stored, f"{trace!r} survived the erasure"
    assert Observation.objects.filter(user_id=bob).count() == 4
    assert tmem.mem_search(bob, bob_marker)
    assert not tmem.mem_search(alice, alice_marker)
