"""The demo command loads a useful, idempotent mix of sessions and an operator login."""

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from ilab_memory.models import Observation, Session


@pytest.mark.django_db
def test_demo_data_is_idempotent_and_covers_every_summary_kind():
    call_command("ilab_memory_demo", verbosity=0)
    snapshot = (Session.objects.count(), Observation.objects.count())
    call_command("ilab_memory_demo", verbosity=0)
    assert (Session.objects.count(), Observation.objects.count()) == snapshot
    assert Session.objects.filter(status="active").count() == 3
    assert Session.objects.filter(is_auto_generated=True).exists()
    assert Session.objects.filter(status="completed", is_auto_generated=False).exists()
    assert Session.objects.filter(summary="Memorias registradas: (ninguna)").exists()
    assert not Observation.objects.filter(content__contains="abc123").exists()  # private block redacted
    operator = get_user_model().objects.get(username="operator")
    assert operator.is_superuser and operator.check_password("operator")
