"""Idempotent demo data: a few users with open and closed sessions, auto and human summaries,
and memories of the plain ``agent`` account itself, so the docs' first calls with its token
(context, search, sessions) find something.

Part of the demo site, not of the ilab_memory wheel: it creates an operator/operator superuser,
which has no place on a production site, and two accounts for agents, without passwords (they
authenticate with tokens): ``agent`` acts for its own memory only, ``agent-backend`` is a service
account granted ``ilab_memory.act_for_any_user`` on purpose. An agent never gets the operator's
token: a superuser's token would read every user's memory if it leaked.
"""

from datetime import timedelta

from django.apps import apps
from django.core.management.base import BaseCommand
from django.db import transaction

from ilab_memory.models import Observation, Session
from ilab_memory.services.observations import observation_save
from ilab_memory.services.sessions import session_end, session_start, session_summary

DEMO_USERS = ("alice", "bob", "carol")
AGENT, SERVICE_ACCOUNT = "agent", "agent-backend"


def _shift_back(session_id, delta: timedelta) -> None:
    """Move a session and its observations into the past, so the demo has history."""
    session = Session.objects.get(pk=session_id)
    for name in ("started_at", "last_activity_at", "ended_at"):
        if getattr(session, name):
            setattr(session, name, getattr(session, name) - delta)
    session.save()
    for observation in Observation.objects.filter(session_id=session_id):
        for name in ("created_at", "updated_at", "happened_at", "last_seen_at"):
            setattr(observation, name, getattr(observation, name) - delta)
        observation.save()


def _alice():
    first = session_start(user_id="alice").session_id
    observation_save(user_id="alice", type="preference", title="Prefers to be called Ali",
                     content="Alice asked the agent to call her 'Ali' in every greeting.")
    observation_save(user_id="alice", type="decision", title="Use PostgreSQL in production",
                     content="The team chose PostgreSQL 15 for production; SQLite stays for local runs.",
                     topic_key="database choice")
    observation_save(user_id="alice", type="bugfix", title="Fixed timezone drift in reports",
                     content="Reports used local time; all timestamps are now UTC. <private>token=abc123</private>")
    session_end(user_id="alice", summary="Captured Alice's preferred greeting and the database decision.")
    _shift_back(first, timedelta(days=3))

    second = session_start(user_id="alice").session_id
    observation_save(user_id="alice", type="learning", title="Reads release notes on Fridays",
                     content="Alice reviews release notes every Friday afternoon.")
    observation_save(user_id="alice", type="config", title="Editor uses 4-space indents",
                     content="Alice's editor is set to 4 spaces; tabs are converted on save.")
    _shift_back(second, timedelta(days=2))  # left open: the next start auto-closes it

    session_start(user_id="alice")
    observation_save(user_id="alice", type="architecture", title="Memory layer is a Django app",
                     content="ilab_memory runs inside the site; agents use the HTTP API.")


def _bob():
    quiet = session_start(user_id="bob").session_id
    _shift_back(quiet, timedelta(days=5))  # an expired session with nothing in it
    session_start(user_id="bob")
    observation_save(user_id="bob", type="discovery", title="Build cache lives in /tmp",
                     content="The CI build cache is kept under /tmp and is wiped on reboot.")


def _agent(user_id: str):
    """The plain ``agent`` account's own memory (its user_id is its primary key): one past
    session with a human summary, and no open one, so its first start opens a new session."""
    past = session_start(user_id=user_id).session_id
    observation_save(user_id=user_id, type="decision", title="Deploy with gunicorn behind nginx",
                     content="Two gunicorn workers behind nginx, which also serves the static files.",
                     topic_key="deploy stack")
    observation_save(user_id=user_id, type="config", title="PostgreSQL 16 on the database host",
                     content="Production runs PostgreSQL 16; pg_dump takes a backup every night.")
    observation_save(user_id=user_id, type="preference", title="Answers in short paragraphs",
                     content="The team wants answers of three sentences at most.")
    session_end(user_id=user_id, summary="Wrote down the deploy stack and how the team likes its answers.")
    _shift_back(past, timedelta(days=2))


def _carol():
    summarized = session_start(user_id="carol").session_id
    observation_save(user_id="carol", type="pattern", title="Retries use exponential backoff",
                     content="All HTTP clients retry 3 times with exponential backoff and jitter.")
    session_summary(user_id="carol", summary="Documented the retry pattern for HTTP clients.")
    _shift_back(summarized, timedelta(days=1, hours=6))  # expired with a narrative summary
    session_start(user_id="carol")


class Command(BaseCommand):
    help = "Load demo memories (idempotent) and make sure the demo operator login exists."

    def add_arguments(self, parser):
        parser.add_argument("--operator-username", default="operator")
        parser.add_argument("--operator-password", default="operator")
        parser.add_argument("--no-operator", action="store_true", help="Do not create the operator login.")

    def handle(self, *args, **options):
        if Session.objects.filter(user_id__in=DEMO_USERS).exists():
            self.stdout.write("Demo memories already present; nothing to add.")
        else:
            with transaction.atomic():
                _alice()
                _bob()
                _carol()
            self.stdout.write(self.style.SUCCESS(f"Loaded demo memories for {', '.join(DEMO_USERS)}."))
        if not options["no_operator"] and apps.is_installed("django.contrib.auth"):
            self._ensure_operator(options["operator_username"], options["operator_password"])
            agent_id = self._ensure_agent_accounts()
            # Checked on its own: a demo database loaded before the agent had memories gets them.
            if not Session.objects.filter(user_id=agent_id).exists():
                with transaction.atomic():
                    _agent(agent_id)
                self.stdout.write(self.style.SUCCESS(f"Loaded demo memories for {AGENT!r} (user_id {agent_id})."))

    def _ensure_operator(self, username: str, password: str) -> None:
        from django.contrib.auth import get_user_model

        User = get_user_model()
        if User.objects.filter(**{User.USERNAME_FIELD: username}).exists():
            self.stdout.write(f"Operator login {username!r} already exists.")
            return
        User.objects.create_superuser(**{User.USERNAME_FIELD: username}, email="", password=password)
        self.stdout.write(self.style.SUCCESS(f"Created operator login {username!r} / {password!r}."))

    def _ensure_agent_accounts(self) -> str:
        """Make the two agent accounts; returns the plain ``agent``'s user_id (its primary key)."""
        from django.contrib.auth import get_user_model
        from django.contrib.auth.models import Permission

        User = get_user_model()
        for username in (AGENT, SERVICE_ACCOUNT):
            account, created = User.objects.get_or_create(**{User.USERNAME_FIELD: username})
            if created:
                account.set_unusable_password()
                account.save()
            if username == SERVICE_ACCOUNT:
                account.user_permissions.add(
                    Permission.objects.get(codename="act_for_any_user", content_type__app_label="ilab_memory")
                )
        self.stdout.write(f"Agent accounts: {AGENT!r} (its own memory), {SERVICE_ACCOUNT!r} (may act for any user_id).")
        return str(User.objects.get(**{User.USERNAME_FIELD: AGENT}).pk)
