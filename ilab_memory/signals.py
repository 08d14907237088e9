"""Signals for integrators, sent by the services once the write has committed.

``sender`` is the model class. Every receiver also gets ``using`` (the database alias) and:

* ``session_started``: ``user_id``, ``session_id`` (str) — a new session was opened (not on reuse).
* ``session_closed``: ``user_id``, ``session_id``, ``is_auto_generated`` (bool), ``reason``
  (``"ended"`` by mem_session_end, ``"expired"`` by auto-close on a start, a write or the sweep).
* ``observation_saved``: ``user_id``, ``observation_id``, ``action`` (``"created"``,
  ``"revised"``, ``"duplicate"`` from mem_save; ``"updated"`` from mem_update).
* ``user_forgotten``: ``user_id``, ``counts`` (dict of rows erased per kind).
* ``observations_expired``: ``user_id``, ``observation_ids`` (list of str) — the sweep erased
  these expired memories of the user (one signal per user and batch).

Sent after commit (``transaction.on_commit``): a receiver never sees a write that was rolled
back, and an error in a receiver cannot undo the write.
"""

from __future__ import annotations

from django.db import transaction
from django.dispatch import Signal

session_started = Signal()
session_closed = Signal()
observation_saved = Signal()
user_forgotten = Signal()
observations_expired = Signal()


def send_on_commit(signal: Signal, sender, *, using: str, **kwargs) -> None:
    """Send ``signal`` when the current transaction on ``using`` commits (at once outside one)."""
    if not signal.receivers:
        return  # nothing listens: skip the bookkeeping on the hot paths
    transaction.on_commit(lambda: signal.send(sender=sender, using=using, **kwargs), using=using)
