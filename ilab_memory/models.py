"""Sessions, observations and their revision history, with the querysets the reads compose."""

from __future__ import annotations

import functools
import uuid
from datetime import datetime, timedelta

from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from .scopes import SCOPE_COLUMN_CHARS, SHARED
from .visibility import live_q


def first_or_none(queryset):
    """The row ``queryset`` finds, or None: for lookups that match at most one row.

    Not ``.first()``: it adds an ORDER BY (the model's ordering, else the primary key), which
    costs a sort and can steer the planner away from the index that finds the row (with an
    observation's ``-updated_at`` SQLite walks the user's whole index instead of the unique one
    that holds the topic or the key). The order is cleared and one row asked for.
    """
    return next(iter(queryset.order_by()[:1]), None)


def scope_field():
    """A row's scope: a slug below the user; "" is the user's shared space."""
    return models.CharField(_("scope"), max_length=SCOPE_COLUMN_CHARS, default=SHARED, blank=True)


class SessionStatus(models.TextChoices):
    ACTIVE = "active", _("active")
    COMPLETED = "completed", _("completed")


class SessionQuerySet(models.QuerySet):
    def for_user(self, user_id: str):
        return self.filter(user_id=user_id)

    def active(self):
        return self.filter(status=SessionStatus.ACTIVE)

    def completed(self):
        return self.filter(status=SessionStatus.COMPLETED)

    def idle(self, now: datetime, timeout_hours: int):
        """Active sessions whose last activity is older than the timeout: the sweep closes them."""
        return self.active().filter(last_activity_at__lt=now - timedelta(hours=timeout_hours))

    def expired(self, now: datetime, timeout_hours: int):
        """Deprecated name of ``idle`` (sessions close; memories expire), kept for one release."""
        return self.idle(now, timeout_hours)

    def with_observation_count(self, config=None):
        """Each session's live observations counted by a subquery: per session returned, so a
        sliced list costs its own rows, not a join over the user's whole history. ``config``
        carries the RETENTION that decides what is live (None: the site's)."""
        return self.annotate(observation_count=live_observation_count(config))


def live_observation_count(config=None) -> models.Subquery:
    """``(SELECT COUNT(id) FROM observation WHERE session_id = <the session> AND live)``.

    A plain COUNT (a ``Func``, not the ``Count`` aggregate) needs no GROUP BY and gives 0 for a
    session without rows. Built once per retention ("live" reads the clock when a statement is
    compiled, ``visibility.Clock``): ``annotate`` resolves a copy, and every session read of a
    start compiles it.
    """
    return _live_observation_count(live_q(config))


@functools.cache
def _live_observation_count(live: Q) -> models.Subquery:
    count = models.Func(models.F("pk"), function="COUNT", output_field=models.IntegerField())
    rows = Observation.objects.filter(live, session_id=models.OuterRef("pk"))
    return models.Subquery(rows.order_by().values(n=count))


class Session(models.Model):
    """A logical unit of work for one user_id in one scope; at most one is active per (user,
    scope) (database rule)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user_id = models.CharField(_("user id"), max_length=255)
    scope = scope_field()
    status = models.CharField(
        _("status"), max_length=10, choices=SessionStatus.choices, default=SessionStatus.ACTIVE
    )
    started_at = models.DateTimeField(_("started at"))
    last_activity_at = models.DateTimeField(_("last activity at"))
    ended_at = models.DateTimeField(_("ended at"), null=True, blank=True)
    summary = models.TextField(_("summary"), null=True, blank=True)
    is_auto_generated = models.BooleanField(_("auto-generated summary"), default=False)
    redacted_blocks = models.PositiveIntegerField(_("redacted private blocks"), default=0)

    objects = SessionQuerySet.as_manager()

    class Meta:
        verbose_name = _("session")
        verbose_name_plural = _("sessions")
        ordering = ["-started_at"]
        permissions = [("act_for_any_user", _("Can act for any user_id through the API"))]
        constraints = [
            # Also the index behind "the active session of this user in this scope". The name is
            # the one it had before scopes (per user), kept for the tools that look it up.
            models.UniqueConstraint(
                fields=["user_id", "scope"],
                condition=Q(status=SessionStatus.ACTIVE),
                name="ilab_memory_one_active_session_per_user",
            ),
            models.CheckConstraint(
                condition=(Q(status=SessionStatus.ACTIVE, ended_at__isnull=True))
                | Q(status=SessionStatus.COMPLETED, ended_at__isnull=False),
                name="ilab_memory_session_ended_iff_completed",
            ),
            models.CheckConstraint(
                condition=Q(is_auto_generated=False) | Q(summary__isnull=False),
                name="ilab_memory_session_auto_summary_has_text",
            ),
        ]
        indexes = [
            # A user's completed sessions, newest ended first (sessions_context).
            models.Index(
                fields=["user_id", "-ended_at"],
                condition=Q(status=SessionStatus.COMPLETED),
                name="ilab_mem_sess_user_ended",
            ),
            # The sweep: active sessions by last activity.
            models.Index(
                fields=["last_activity_at"],
                condition=Q(status=SessionStatus.ACTIVE),
                name="ilab_mem_sess_active_activity",
            ),
            models.Index(fields=["user_id", "-started_at"], name="ilab_mem_sess_user_started"),
            # The admin's default list order across all users.
            models.Index(fields=["-started_at", "-id"], name="ilab_mem_sess_started"),
        ]

    def __str__(self):
        scope = f" · {self.scope}" if self.scope else ""
        return f"{self.user_id}{scope} · {self.started_at:%Y-%m-%d %H:%M} · {self.status}"

    @property
    def is_active(self) -> bool:
        return self.status == SessionStatus.ACTIVE


class ObservationQuerySet(models.QuerySet):
    def for_user(self, user_id: str):
        return self.filter(user_id=user_id)

    def live(self, config=None):
        """Not deleted and not expired now (``visibility``): what every read and every write by
        id sees. ``config`` carries the RETENTION setting (None: the site's)."""
        return self.filter(live_q(config))

    def live_for_user(self, user_id: str, config=None):
        """``for_user(user_id).live()`` as one filter: one queryset clone less on every read."""
        return self.filter(live_q(config), user_id=user_id)

    def deleted(self):
        return self.filter(deleted_at__isnull=False)


class Observation(models.Model):
    """One typed memory in one scope; ``session`` is the session that last wrote it (Braess #4),
    always one of the same scope."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user_id = models.CharField(_("user id"), max_length=255)
    scope = scope_field()
    # No index of its own: ilab_mem_obs_session_created leads with session_id and serves the
    # foreign key's lookups; a second one would only cost every write.
    session = models.ForeignKey(
        Session, on_delete=models.CASCADE, related_name="observations", verbose_name=_("session"), db_index=False
    )
    type = models.CharField(_("type"), max_length=40, default="manual")
    title = models.TextField(_("title"))
    content = models.TextField(_("content"))
    topic_key = models.TextField(_("topic key"), null=True, blank=True)
    metadata = models.JSONField(_("metadata"), default=dict, blank=True)
    # sha256 of type, title and normalized content: the dedupe lookup key.
    dedupe_hash = models.CharField(max_length=64, editable=False)
    revision_count = models.PositiveIntegerField(_("revisions"), default=1)
    duplicate_count = models.PositiveIntegerField(_("duplicates"), default=1)
    redacted_blocks = models.PositiveIntegerField(_("redacted private blocks"), default=0)
    created_at = models.DateTimeField(_("created at"))
    updated_at = models.DateTimeField(_("updated at"))
    # When what it says happened (the caller's word; else when it was saved). Two clocks: the
    # others say when it was recorded.
    happened_at = models.DateTimeField(_("happened at"), default=timezone.now)
    last_seen_at = models.DateTimeField(_("last seen at"))
    deleted_at = models.DateTimeField(_("deleted at"), null=True, blank=True)
    # Invisible from then on, erased by the sweep (``services.expiry``); None: kept until erased.
    expires_at = models.DateTimeField(_("expires at"), null=True, blank=True)

    objects = ObservationQuerySet.as_manager()

    class Meta:
        verbose_name = _("observation")
        verbose_name_plural = _("observations")
        ordering = ["-updated_at"]
        constraints = [
            # One live observation per topic per (user, scope): the topic upsert lookup, and the rule.
            models.UniqueConstraint(
                fields=["user_id", "scope", "topic_key"],
                condition=Q(deleted_at__isnull=True, topic_key__isnull=False),
                name="ilab_memory_one_live_topic_per_user",
            ),
            models.CheckConstraint(condition=Q(revision_count__gte=1), name="ilab_memory_revision_count_gte_1"),
            models.CheckConstraint(condition=Q(duplicate_count__gte=1), name="ilab_memory_duplicate_count_gte_1"),
        ]
        indexes = [
            # Context candidates: a user's live observations, newest update first.
            models.Index(
                fields=["user_id", "-updated_at", "-id"],
                condition=Q(deleted_at__isnull=True),
                name="ilab_mem_obs_user_updated",
            ),
            # Dedupe: same user, same scope, same hash, recent.
            models.Index(
                fields=["user_id", "scope", "dedupe_hash", "-created_at"],
                condition=Q(deleted_at__isnull=True),
                name="ilab_mem_obs_dedupe",
            ),
            # Timeline and synthetic summaries: a session's observations in creation order.
            models.Index(fields=["session", "created_at", "id"], name="ilab_mem_obs_session_created"),
            # A user's every observation, deleted ones too, in creation order: an export and an
            # erasure read one user's rows through it, whatever the other users hold.
            models.Index(fields=["user_id", "created_at", "id"], name="ilab_mem_obs_user_created"),
            # The admin's default list order across all users.
            models.Index(fields=["-updated_at", "-id"], name="ilab_mem_obs_updated"),
            # A user's soft-deleted observations (stats, the admin's "deleted" filter): only
            # deleted rows are in it, so live writes never touch it.
            models.Index(fields=["user_id"], condition=Q(deleted_at__isnull=False), name="ilab_mem_obs_user_deleted"),
            # Reads by when it happened (since / until): a user's live rows by happened_at.
            models.Index(fields=["user_id", "-happened_at", "-id"], condition=Q(deleted_at__isnull=True),
                         name="ilab_mem_obs_user_happened"),
            # The expiry sweep: only rows that expire are in it.
            models.Index(fields=["expires_at"], condition=Q(expires_at__isnull=False), name="ilab_mem_obs_expires"),
        ]

    def __str__(self):
        return f"[{self.type}] {self.title[:80]}"

    @property
    def is_deleted(self) -> bool:
        return self.deleted_at is not None


class ObservationRevision(models.Model):
    """A previous version of an observation, kept when a write replaced it."""

    observation = models.ForeignKey(
        Observation, on_delete=models.CASCADE, related_name="revisions", verbose_name=_("observation")
    )
    user_id = models.CharField(_("user id"), max_length=255)
    revision = models.PositiveIntegerField(_("revision"))
    session_id_at_write = models.UUIDField(_("session that wrote it"), null=True, blank=True)
    type = models.CharField(_("type"), max_length=40)
    title = models.TextField(_("title"))
    content = models.TextField(_("content"))
    topic_key = models.TextField(_("topic key"), null=True, blank=True)
    metadata = models.JSONField(_("metadata"), default=dict, blank=True)
    happened_at = models.DateTimeField(_("happened at"), default=timezone.now)
    written_at = models.DateTimeField(_("written at"))
    replaced_at = models.DateTimeField(_("replaced at"))

    class Meta:
        verbose_name = _("observation revision")
        verbose_name_plural = _("observation revisions")
        ordering = ["observation", "-revision"]
        constraints = [
            models.UniqueConstraint(fields=["observation", "revision"], name="ilab_memory_one_row_per_revision"),
        ]
        indexes = [models.Index(fields=["user_id"], name="ilab_mem_rev_user")]

    def __str__(self):
        return f"{self.observation_id} r{self.revision}"


class ObservationVectorQuerySet(models.QuerySet):
    def waiting(self, model_id: str):
        """Rows without a vector of ``model_id``: queued, or embedded by another model (written
        as two ranges so the (user_id, model_id) index serves it)."""
        return self.filter(Q(model_id__isnull=True) | Q(model_id__lt=model_id) | Q(model_id__gt=model_id))


class ObservationVector(models.Model):
    """The embedding of one live observation's stored (redacted) text, or its place in the queue.

    ``model_id`` None: waiting for a vector (a write queued it). A vector belongs to the model
    that made it; search reads only the current model's, so spaces never mix. ``generation``
    grows with every write that queues it again: a worker stores its vector only if the row
    is still the generation it read, so a slow worker never overwrites a newer text's place.
    """

    observation = models.OneToOneField(
        Observation, on_delete=models.CASCADE, related_name="vector", verbose_name=_("observation")
    )
    user_id = models.CharField(_("user id"), max_length=255)
    # The observation's, copied (it never changes) so a search by meaning keeps to its scopes
    # before it ranks, as it keeps to its user.
    scope = scope_field()
    model_id = models.CharField(_("model"), max_length=200, null=True, blank=True)
    dimensions = models.PositiveIntegerField(_("dimensions"), null=True, blank=True)
    # float32, little-endian, L2-normalized: dimensions × 4 bytes.
    vector = models.BinaryField(_("vector"), null=True, blank=True)
    # A text the model embedded in pieces (longer than its window): each piece's vector, in the
    # same format, one after the other; search scores the memory by its best piece. Null for a
    # text embedded whole, and for a vector stored before pieces were kept.
    pieces = models.BinaryField(_("pieces"), null=True, blank=True)
    generation = models.PositiveIntegerField(_("generation"), default=1)
    queued_at = models.DateTimeField(_("queued at"))
    # A worker's lease on a pending row: others skip it until then (a killed worker's lapses).
    claimed_until = models.DateTimeField(_("claimed until"), null=True, blank=True)
    embedded_at = models.DateTimeField(_("embedded at"), null=True, blank=True)

    objects = ObservationVectorQuerySet.as_manager()

    class Meta:
        verbose_name = _("observation vector")
        verbose_name_plural = _("observation vectors")
        indexes = [
            # A user's vectors of one model (search), and their pending or stale rows.
            models.Index(fields=["user_id", "model_id", "generation", "id"], name="ilab_mem_vec_user_model"),
            # The queue: across users, oldest first (workers and the embed command), and one
            # user's (a search embedding its budget). Partial: only queued rows are in them.
            models.Index(fields=["queued_at"], condition=Q(model_id__isnull=True), name="ilab_mem_vec_pending"),
            models.Index(fields=["user_id", "queued_at"], condition=Q(model_id__isnull=True),
                         name="ilab_mem_vec_user_pending"),
        ]

    def __str__(self):
        return f"{self.observation_id} · {self.model_id or 'pending'}"


class VectorStamp(models.Model):
    """A random stamp of a user's stored vectors, new with every batch of them stored.

    A process that keeps the user's vectors in memory (the numpy lookup) compares the stamp
    with the one it loaded under, one primary-key read instead of counting the user's rows.
    Vectors only ever appear through a store, which writes a new stamp in its transaction;
    rows that leave (requeued, deleted) are found stale when they are looked up (``vectors``).
    """

    user_id = models.CharField(_("user id"), max_length=255, primary_key=True)
    stamp = models.UUIDField(_("stamp"), default=uuid.uuid4)

    class Meta:
        verbose_name = _("vector stamp")
        verbose_name_plural = _("vector stamps")

    def __str__(self):
        return f"{self.user_id} · {self.stamp}"


class EmbedderCalibration(models.Model):
    """What unrelated looks like to one embedding model: its vectors of the background queries
    (``services/search/background.txt``), computed once per model and
    kept here so a restart does not embed them again (``services.search.calibration``)."""

    model_id = models.CharField(_("model"), max_length=200)
    # Which bank the vectors are of: a changed bank is computed again.
    bank_digest = models.CharField(_("bank digest"), max_length=64)
    dimensions = models.PositiveIntegerField(_("dimensions"))
    # float32, little-endian: one row per background question.
    queries = models.BinaryField(_("query vectors"))
    questions = models.PositiveIntegerField(_("questions"))
    # The cosine of a query with an unrelated memory for this model, and its spread.
    unrelated_cosine = models.FloatField(_("unrelated cosine"))
    unrelated_deviation = models.FloatField(_("unrelated deviation"))
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("embedder calibration")
        verbose_name_plural = _("embedder calibrations")
        constraints = [
            models.UniqueConstraint(fields=["model_id", "bank_digest"], name="ilab_memory_calibration_unique"),
        ]

    def __str__(self):
        return self.model_id


# The tables the hand-written statements name (``sql.py``, the search index, the pgvector
# lookup), read from the models so the SQL follows a model's ``db_table``.
SESSION_TABLE = Session._meta.db_table
OBSERVATION_TABLE = Observation._meta.db_table
VECTOR_TABLE = ObservationVector._meta.db_table
