"""Settings: one settings dict read at call time, defaults, and system checks."""

import pytest
from django.core import checks
from django.test import override_settings

from ilab_memory.conf import DEFAULTS, get_config, validate_values
from ilab_memory.exceptions import ConfigurationError


def ids(errors):
    return sorted(e.id for e in errors)


def run_checks():
    from ilab_memory.checks import check_settings

    return check_settings()


def test_every_key_has_a_default(settings):
    settings.ILAB_MEMORY = {}  # the project's settings choose some (EMBEDDING_RUNNER under pytest)
    config = get_config()
    for key, value in DEFAULTS.items():
        assert getattr(config, key) == value


def test_settings_are_read_at_call_time():
    assert get_config().SESSION_TIMEOUT_HOURS == 24
    with override_settings(ILAB_MEMORY={"SESSION_TIMEOUT_HOURS": 2}):
        assert get_config().SESSION_TIMEOUT_HOURS == 2
    assert get_config().SESSION_TIMEOUT_HOURS == 24


def test_overrides_accept_lower_case_keys():
    assert get_config({"session_timeout_hours": 3}).SESSION_TIMEOUT_HOURS == 3
    with pytest.raises(ConfigurationError):
        get_config({"bogus": 1})


def test_config_is_read_only():
    with pytest.raises(AttributeError):
        get_config().SESSION_TIMEOUT_HOURS = 1


def test_default_settings_pass_the_checks():
    assert run_checks() == []


@override_settings(ILAB_MEMORY={"SESION_TIMEOUT_HOURS": 2})
def test_unknown_key_is_reported_with_a_hint():
    [error] = run_checks()
    assert error.id == "ilab_memory.E002" and "SESION_TIMEOUT_HOURS" in error.msg and error.hint


@pytest.mark.parametrize(
    "bad",
    [
        {"SESSION_TIMEOUT_HOURS": 0},
        {"CONTEXT_MEMORIES": "10"},
        {"DEDUPE_WINDOW_MINUTES": -1},
        {"TYPE_WEIGHTS": {"decision": -1}},
        {"OBSERVATION_TYPES": ["Not Slug"]},
        {"OBSERVATION_TYPES": "decision"},
        {"MAX_USER_ID_CHARS": 300},
        {"REGISTER_ADMIN": "yes"},
        {"SEARCH_DEFAULT_LIMIT": 100, "SEARCH_MAX_LIMIT": 10},
        {"CONTEXT_MEMORIES": 101},
        {"MAX_TITLE_CHARS": True},
        {"SEARCH_EMBED_BUDGET": -1},
        {"SEARCH_EMBED_MILLISECONDS": -1},
        {"SEARCH_EMBED_MILLISECONDS": 0.5},
    ],
)
def test_bad_values_are_reported(bad):
    with override_settings(ILAB_MEMORY=bad):
        assert "ilab_memory.E003" in ids(run_checks())


@pytest.mark.parametrize("runner", [None, "ilab_memory.runners.thread.runner", "ilab_memory.runners.celery.runner"])
def test_a_search_budget_of_zero_and_every_shipped_runner_pass_the_checks(runner):
    from ilab_memory.checks import check_embedding_runner

    with override_settings(ILAB_MEMORY={"SEARCH_EMBED_BUDGET": 0, "EMBEDDING_RUNNER": runner}):
        assert run_checks() == [] and check_embedding_runner() == []


@pytest.mark.parametrize("mode, runner", [("background", "'ilab_memory.runners.thread.runner'"),
                                          ("celery", "'ilab_memory.runners.celery.runner'"), ("inline", "None")])
def test_the_removed_embedding_mode_is_an_error_that_names_its_runner(mode, runner):
    from ilab_memory.checks import check_embedding_runner

    with override_settings(ILAB_MEMORY={"EMBEDDING_MODE": mode}):
        assert run_checks() == []  # not reported as an unknown key as well
        [error] = check_embedding_runner()
    assert error.id == "ilab_memory.E011" and "EMBEDDING_RUNNER" in error.msg
    assert f"'EMBEDDING_RUNNER': {runner} " in error.hint
    with pytest.raises(ConfigurationError, match="replaced by EMBEDDING_RUNNER"):
        get_config({"embedding_mode": mode})


def test_a_site_with_an_embedder_and_no_runner_chosen_is_told_how_its_backlog_drains():
    from ilab_memory.checks import check_embedding_runner

    with override_settings(ILAB_MEMORY={"EMBEDDER": "tests.embedders.RecordingEmbedder"}):
        [info] = check_embedding_runner()
    assert info.id == "ilab_memory.I011" and info.level == checks.INFO
    assert "ilab_memory_embed" in info.msg
    assert "'ilab_memory.runners.thread.runner'" in info.hint and "'ilab_memory.runners.celery.runner'" in info.hint
    with override_settings(ILAB_MEMORY={"EMBEDDER": None}):
        assert check_embedding_runner() == []  # words only: nothing to embed


@pytest.mark.parametrize("old, new", [("ilab_memory.background.runner", "ilab_memory.runners.thread.runner"),
                                      ("ilab_memory.tasks.runner", "ilab_memory.runners.celery.runner")])
def test_a_runner_named_by_its_old_path_still_runs_with_a_warning_naming_the_new_one(old, new):
    from django.utils.module_loading import import_string

    from ilab_memory.checks import check_embedding_runner

    assert import_string(old) is import_string(new)
    with override_settings(ILAB_MEMORY={"EMBEDDING_RUNNER": old}):
        [warning] = check_embedding_runner()
    assert warning.id == "ilab_memory.W013" and repr(new) in warning.hint


def test_a_runner_that_cannot_be_imported_is_an_error():
    from ilab_memory.checks import check_embedding_runner

    with override_settings(ILAB_MEMORY={"EMBEDDING_RUNNER": "ilab_memory.nowhere.runner"}):
        assert [error.id for error in check_embedding_runner()] == ["ilab_memory.E012"]


@override_settings(ILAB_MEMORY=["not", "a", "dict"])
def test_non_dict_setting_is_reported():
    assert ids(run_checks()) == ["ilab_memory.E001"]


def test_checks_are_registered_with_django():
    with override_settings(ILAB_MEMORY={"NOPE": 1}):
        assert "ilab_memory.E002" in ids(checks.run_checks())


@pytest.mark.parametrize("values, problem", [
    ({"SCOPES": 5}, "SCOPES must be None or a list"),
    ({"SCOPES": {"a"}}, "SCOPES must be None or a list"),
    ({"SCOPES": ["Bad"]}, "SCOPES must be None or a list"),
    ({"MAX_SCOPE_CHARS": 4, "SCOPES": ["support"]}, "SCOPES must be None or a list"),
    ({"MAX_SCOPE_CHARS": 65}, "MAX_SCOPE_CHARS cannot exceed 64"),
    ({"ACCOUNT_SCOPES": ["bot"]}, "ACCOUNT_SCOPES must map usernames"),
    ({"ACCOUNT_SCOPES": {"bot": "Bad"}}, "ACCOUNT_SCOPES must map usernames"),
    ({"MAX_SCOPE_CHARS": 4, "ACCOUNT_SCOPES": {"bot": "support"}}, "ACCOUNT_SCOPES must map usernames"),
    ({"SCOPES": ["a"], "ACCOUNT_SCOPES": {"bot": "b"}}, "ACCOUNT_SCOPES binds an account to a scope SCOPES"),
])
def test_bad_scope_settings_are_named_not_a_crash(values, problem):
    problems = validate_values({**DEFAULTS, **values})
    assert any(p.startswith(problem) for p in problems), problems


def test_good_scope_settings_pass():
    assert validate_values({**DEFAULTS, "SCOPES": ("a", "b"), "ACCOUNT_SCOPES": {"bot": "a", "ops": ""}}) == []


@pytest.mark.parametrize("resolver", [5, ["a.b"]])
def test_a_scope_resolver_that_is_neither_a_dotted_path_nor_a_callable_is_a_check_error(resolver):
    with override_settings(ILAB_MEMORY={"SCOPE_RESOLVER": resolver}):
        [error] = run_checks()
    assert error.id == "ilab_memory.E003" and "SCOPE_RESOLVER must be None, a dotted path or a callable" in error.msg


@pytest.mark.parametrize("resolver", [None, "myproject.memory.scope_of", lambda request: None])
def test_a_scope_resolver_may_be_a_dotted_path_or_a_callable(resolver):
    with override_settings(ILAB_MEMORY={"SCOPE_RESOLVER": resolver}):
        assert run_checks() == []
