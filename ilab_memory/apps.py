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

        from django.db.backends.signals import connection_created
        from django.db.models.signals import post_migrate

        from .services.search.index import add_terms_table, repair_after_migrate

        post_migrate.connect(repair_after_migrate, sender=self, dispatch_uid="ilab_memory_search_repair")
        connection_created.connect(add_terms_table, dispatch_uid="ilab_memory_search_terms")

        from .vectors import forget_pgvector_state

        post_migrate.connect(forget_pgvector_state, sender=self, dispatch_uid="ilab_memory_pgvector_state")
