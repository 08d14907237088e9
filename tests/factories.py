"""factory-boy factories for rows the services would create; tests use them to set up history."""

import factory
from django.utils import timezone

from ilab_memory.models import Observation, ObservationRevision, Session, SessionStatus
from ilab_memory.services.observations import dedupe_hash


class SessionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Session

    user_id = factory.Sequence(lambda n: f"user-{n}")
    status = SessionStatus.ACTIVE
    started_at = factory.LazyFunction(timezone.now)
    last_activity_at = factory.LazyAttribute(lambda s: s.started_at)
    ended_at = None

    class Params:
        completed = factory.Trait(
            status=SessionStatus.COMPLETED,
            ended_at=factory.LazyAttribute(lambda s: s.last_activity_at),
            summary="A human summary.",
        )


class ObservationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Observation

    session = factory.SubFactory(SessionFactory)
    user_id = factory.SelfAttribute("session.user_id")
    type = "manual"
    title = factory.Sequence(lambda n: f"Observation {n}")
    content = factory.Faker("paragraph")
    dedupe_hash = factory.LazyAttribute(lambda o: dedupe_hash(type=o.type, title=o.title, content=o.content))
    created_at = factory.LazyFunction(timezone.now)
    updated_at = factory.LazyAttribute(lambda o: o.created_at)
    last_seen_at = factory.LazyAttribute(lambda o: o.created_at)


class ObservationRevisionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ObservationRevision

    observation = factory.SubFactory(ObservationFactory)
    user_id = factory.SelfAttribute("observation.user_id")
    revision = 1
    type = "manual"
    title = "Old title"
    content = "Old content"
    written_at = factory.LazyFunction(timezone.now)
    replaced_at = factory.LazyFunction(timezone.now)
