"""Writes and lifecycle rules, between the faces and the selectors.

The operations the faces call (``sessions.session_start``, ``observations.observation_save``,
``search.observation_search``, ``export.user_export``, ``imports.user_import``,
``erasure.user_forget``…) take keyword arguments only and write inside transactions
(``transactions.atomic_with_retry``). The helpers they share (cleaners, redaction, the
search's parts) take positional arguments.
"""
