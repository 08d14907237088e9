"""The system check for SQLite settings that are unsafe with several writers."""

from django.core.management import call_command

from ilab_memory.checks import sqlite_concurrency_warnings

SAFE = {
    "ENGINE": "django.db.backends.sqlite3",
    "NAME": "memory.db",
    "OPTIONS": {"transaction_mode": "IMMEDIATE", "timeout": 30, "init_command": "PRAGMA journal_mode=WAL;"},
}


def ids(databases):
    return [warning.id for warning in sqlite_concurrency_warnings(databases)]


def test_safe_sqlite_settings_raise_no_warning():
    assert ids({"default": SAFE}) == []


def test_plain_sqlite_settings_warn_about_each_missing_protection():
    plain = {"ENGINE": "django.db.backends.sqlite3", "NAME": "memory.db"}
    assert ids({"default": plain}) == ["ilab_memory.W001", "ilab_memory.W002", "ilab_memory.W003"]


def test_deferred_transactions_are_warned_about():
    options = {**SAFE["OPTIONS"], "transaction_mode": "DEFERRED"}
    assert ids({"default": {**SAFE, "OPTIONS": options}}) == ["ilab_memory.W001"]


def test_a_short_busy_timeout_is_warned_about():
    options = {**SAFE["OPTIONS"], "timeout": 1}
    assert ids({"default": {**SAFE, "OPTIONS": options}}) == ["ilab_memory.W002"]


def test_a_rollback_journal_is_warned_about():
    options = {**SAFE["OPTIONS"], "init_command": "PRAGMA synchronous=NORMAL;"}
    assert ids({"default": {**SAFE, "OPTIONS": options}}) == ["ilab_memory.W003"]


def test_other_engines_and_in_memory_sqlite_are_not_checked():
    assert ids({
        "default": {"ENGINE": "django.db.backends.postgresql", "NAME": "x"},
        "scratch": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"},
    }) == []


def test_every_alias_is_checked_by_name():
    databases = {"default": SAFE, "archive": {"ENGINE": "django.db.backends.sqlite3", "NAME": "a"}}
    messages = [warning.msg for warning in sqlite_concurrency_warnings(databases)]
    assert messages and all("'archive'" in message for message in messages)


def test_the_demo_site_and_embedded_mode_pass_the_check():
    from ilab_memory.facade import embedded_settings

    assert ids(embedded_settings("memory.db")["DATABASES"]) == []
    call_command("check", "--fail-level", "WARNING")
