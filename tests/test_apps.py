"""apps.py: what the app wires when Django starts it."""

from django.apps import apps
from django.test import override_settings

from ilab_memory.conf import get_config


def test_the_app_config_pins_its_name_and_auto_field():
    config = apps.get_app_config("ilab_memory")
    assert (config.name, config.default_auto_field) == ("ilab_memory", "django.db.models.BigAutoField")


def test_a_changed_setting_is_read_again_at_once():
    before = get_config().MAX_TITLE_CHARS
    with override_settings(ILAB_MEMORY={"MAX_TITLE_CHARS": before + 7}):
        assert get_config().MAX_TITLE_CHARS == before + 7
    assert get_config().MAX_TITLE_CHARS == before


def test_the_system_checks_are_registered():
    from django.core.checks import registry

    assert any(check.__module__ == "ilab_memory.checks" for check in registry.registry.registered_checks)
