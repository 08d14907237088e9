from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class IlabMemoryConfig(AppConfig):
    name = "ilab_memory"
    verbose_name = _("iLab memory")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from django.core.signals import setting_changed

        from . import checks  # noqa: F401  (registers the system checks)
        from .conf import reload

        setting_changed.connect(reload, dispatch_uid="ilab_memory_conf_reload")
