"""The observation queryset's scoping methods: whose rows, and which are live."""

import pytest
from django.utils import timezone

from ilab_memory.models import Observation
from tests.factories import ObservationFactory, SessionFactory

pytestmark = pytest.mark.django_db


def test_live_for_user_is_for_user_then_live_in_one_filter():
    alice, bob = SessionFactory(user_id="alice"), SessionFactory(user_id="bob")
    kept = ObservationFactory(session=alice, user_id="alice", title="kept")
    ObservationFactory(session=alice, user_id="alice", title="deleted", deleted_at=timezone.now())
    ObservationFactory(session=bob, user_id="bob", title="bob's")

    chained = Observation.objects.for_user("alice").live()
    single = Observation.objects.live_for_user("alice")

    assert list(single) == list(chained) == [kept]
    assert list(Observation.objects.for_user("alice").deleted().values_list("title", flat=True)) == ["deleted"]
