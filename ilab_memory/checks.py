"""System checks for the ILAB_MEMORY settings dict."""

from django.core import checks

from .conf import DEFAULTS, get_config, user_settings, validate_values


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
    for key in sorted(set(configured) - set(DEFAULTS)):
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
