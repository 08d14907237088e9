"""The per-tree side of ``benchmarks.compare``: the processes of one source tree.

``benchmarks/compare.py`` runs this file as a plain script (by its path, never as a module of
the tree under test), with ``PYTHONPATH=<tree>`` and ``cwd=<tree>``: ``ilab_memory`` and the demo
site ``project`` come from that tree, nothing of the tree's own ``benchmarks`` package is used.
It touches only what both trees keep: the facade ``ilab_memory.ILabMemory``, the models
``Session`` and ``Observation`` (bulk load, moving a session's last activity back, clean-up) and,
for the HTTP accounts, Django's user model and DRF's token model.

Commands::

    compare_worker.py load  META        # demo-site settings: migrate, write the data, complete META
    compare_worker.py serve META TREE   # the facade on META's database, driven over stdin/stdout

``serve`` reads one JSON command per line and answers each with one JSON line (``begin`` an
operation with its warm-up calls, time a ``batch`` of calls, ``reset``, ``info``, ``quit``), so
the orchestrator can time the two trees in alternating batches of a few calls each. Each tree
has its own users (twins: the same history), so neither tree's writes change what the other
reads.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import random
import sys
import time
import uuid
from datetime import datetime, timedelta, timezone

# Run as a script: sys.path[0] is this folder. Take the seeded text from it (standard library
# only), then drop it: nothing here may shadow the tree's modules.
if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
    from corpus import Corpus

    sys.path.pop(0)
else:  # imported as part of this tree's benchmarks package
    from benchmarks.corpus import Corpus

SEED = 20261201
PER_SESSION = 50  # observations per loaded (completed) session
TYPES = ("manual", "decision", "architecture", "bugfix", "pattern", "config", "discovery", "learning")
BATCH = 2_000  # rows per bulk_create; a multiple of PER_SESSION
EXPIRE_BY = timedelta(hours=25)  # past the default SESSION_TIMEOUT_HOURS (24); no ILAB_MEMORY set here


def log(message: str) -> None:
    sys.stderr.write(f"    [{os.environ.get('ILAB_CMP_TREE', os.path.basename(os.getcwd()))}] {message}\n")
    sys.stderr.flush()


# ---------------------------------------------------------------------------------- Django setup


def setup_site(meta: dict) -> None:
    """The demo site's settings (auth, tokens, the API) on META's database."""
    os.environ["DJANGO_SETTINGS_MODULE"] = "project.settings"
    os.environ["DJANGO_DEBUG"] = "0"  # DEBUG keeps every query in memory
    if meta["engine"] == "sqlite":
        os.environ.pop("DATABASE_URL", None)
        os.environ["ILAB_MEMORY_DEMO_DB"] = meta["sqlite_path"]
    else:
        os.environ["DATABASE_URL"] = meta["db_url"]
    import django

    django.setup()


def setup_facade(meta: dict):
    """The facade as an application gets it: ``from_path`` on SQLite, ``ILabMemory()`` in a
    minimal site on PostgreSQL (Django's default connection options, a persistent connection),
    as ``benchmarks/perf_env.py`` does."""
    from ilab_memory import ILabMemory

    # --after-words-only: the after tree without an embedder (the before tree has none to turn off).
    overrides = {"EMBEDDER": None} if os.environ.get("ILAB_CMP_WORDS_ONLY") == os.environ["ILAB_CMP_TREE"] else {}
    tree_settings = json.loads(os.environ.get("ILAB_CMP_SETTINGS") or "{}")  # --before-settings
    overrides.update(tree_settings)
    if meta["engine"] == "sqlite":
        return ILabMemory.from_path(meta["sqlite_path"], **overrides)
    import dj_database_url
    import django
    from django.conf import settings

    settings.configure(
        INSTALLED_APPS=["ilab_memory"],
        DATABASES={"default": dj_database_url.parse(meta["db_url"], conn_max_age=None)},
        USE_TZ=True,
        TIME_ZONE="UTC",
        DEFAULT_AUTO_FIELD="django.db.models.BigAutoField",
        LOGGING_CONFIG=None,
        ILAB_MEMORY=tree_settings,  # also as the site's: a tree may read a setting from there only
    )
    django.setup()
    return ILabMemory(**overrides)


def versions(engine: str) -> dict:
    import platform

    import django
    from django.db import connection

    info = {"python": platform.python_version(), "django": django.get_version()}
    with connection.cursor() as cursor:
        if engine == "sqlite":
            cursor.execute("SELECT sqlite_version()")
            info["sqlite"] = cursor.fetchone()[0]
        else:
            cursor.execute("SHOW server_version")
            info["postgresql"] = cursor.fetchone()[0]
    return info


def schema_fingerprint(engine: str) -> str:
    """A digest of the schema (tables, columns, indexes, triggers, functions, constraints): the
    two trees share one database, so neither may change it (a post-migrate hook, a self-repair)."""
    from django.db import connection

    with connection.cursor() as cursor:
        if engine == "sqlite":
            cursor.execute("SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' "
                           "ORDER BY type, name")
        else:
            tables = app_tables()
            cursor.execute(
                """SELECT 'column', table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable
                     FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ANY(%s)
                   UNION ALL SELECT 'index', indexdef FROM pg_indexes
                     WHERE schemaname = current_schema() AND tablename = ANY(%s)
                   UNION ALL SELECT 'trigger', pg_get_triggerdef(t.oid) FROM pg_trigger t
                     JOIN pg_class c ON c.oid = t.tgrelid WHERE NOT t.tgisinternal AND c.relname = ANY(%s)
                   UNION ALL SELECT 'constraint', c.relname || ' ' || conname || ' ' || pg_get_constraintdef(k.oid)
                     FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid WHERE c.relname = ANY(%s)
                   UNION ALL SELECT 'function', p.proname || ' ' || md5(pg_get_functiondef(p.oid)) FROM pg_proc p
                     JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = current_schema() AND p.prokind = 'f'
                   ORDER BY 1, 2""", [tables] * 4)
        rows = cursor.fetchall()
    return hashlib.sha256(json.dumps(rows, default=str).encode()).hexdigest()


def app_tables() -> list[str]:
    """The app's tables as the database has them (not as this tree's models list them: the
    after tree may add tables the before tree does not know, and both must see one schema)."""
    from django.db import connection

    return sorted(name for name in connection.introspection.table_names() if name.startswith("ilab_memory_"))


# ------------------------------------------------------------------------------------ the data


def write_twins(user_ids: list[str], count: int, *, now: datetime, corpus: Corpus, label: str,
                seed: int) -> None:
    """The same history for every user of ``user_ids`` (twins), written with ``bulk_create``:
    ``count`` observations in completed sessions of PER_SESSION, spread over the past year (the
    newest an hour old). Batches alternate between the twins, so their rows interleave on disk."""
    from django.db import transaction

    from ilab_memory.models import Observation, Session

    text_rng, id_rng = random.Random(seed), random.Random(seed + 1)
    new_uuid = lambda: uuid.UUID(int=id_rng.getrandbits(128), version=4)  # noqa: E731
    span = timedelta(days=365)
    first = now - span - timedelta(hours=1)
    step = span / max(count, 1)
    started = time.monotonic()
    done = 0
    for batch_start in range(0, count, BATCH):
        rows = []  # (j, at, type, title, content): what the twins share
        for j in range(batch_start, min(batch_start + BATCH, count)):
            rows.append((j, first + step * j, TYPES[j % len(TYPES)],
                         corpus.titles[text_rng.randrange(len(corpus.titles))],
                         corpus.sentences[text_rng.randrange(len(corpus.sentences))]))
        for user_id in user_ids:
            sessions, observations = [], []
            session = None
            for j, at, type_, title, content in rows:
                if j % PER_SESSION == 0:
                    last = first + step * min(j + PER_SESSION - 1, count - 1)
                    session = Session(id=new_uuid(), user_id=user_id, status="completed", started_at=at,
                                      last_activity_at=last, ended_at=last,
                                      summary=f"{label} session {j // PER_SESSION}", is_auto_generated=False,
                                      redacted_blocks=0)
                    sessions.append(session)
                observations.append(Observation(
                    id=new_uuid(), user_id=user_id, session_id=session.id, type=type_, title=title, content=content,
                    topic_key=None, metadata={},
                    dedupe_hash=hashlib.sha256(f"{SEED}:{user_id}:{j}".encode()).hexdigest(),
                    revision_count=1, duplicate_count=1, redacted_blocks=0,
                    created_at=at, updated_at=at, last_seen_at=at, deleted_at=None,
                ))
            with transaction.atomic():
                Session.objects.bulk_create(sessions)
                Observation.objects.bulk_create(observations)
            done += len(observations)
        rate = done / max(time.monotonic() - started, 1e-9)
        sys.stderr.write(f"\r    load {label:<14} {done:>9,}/{count * len(user_ids):,}  {rate:8,.0f} rows/s")
        sys.stderr.flush()
    sys.stderr.write(f"  {time.monotonic() - started:6.1f}s\n")


class GinIndexesSuspended:
    """PostgreSQL: drop the GIN indexes of the app's tables for the bulk load and build each once
    at the end, from its own definition (``pg_indexes``): a row-by-row GIN insert is most of a
    load's time. The search trigger still fills its column during the load."""

    def __init__(self, connection):
        self.connection, self.definitions = connection, []

    def __enter__(self):
        if self.connection.vendor != "postgresql":
            return self
        with self.connection.cursor() as cursor:
            cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() "
                           "AND tablename = ANY(%s) AND indexdef ILIKE '%%USING gin%%'", [app_tables()])
            self.definitions = cursor.fetchall()
            for name, _ in self.definitions:
                cursor.execute(f"DROP INDEX {self.connection.ops.quote_name(name)}")
        return self

    def __exit__(self, *exc):
        with self.connection.cursor() as cursor:
            for _, definition in self.definitions:
                cursor.execute(definition)
        return False


def cmd_load(meta_path: str) -> None:
    """Migrate (demo site), then the twins: per tree one heavy user and the HTTP accounts."""
    meta = json.load(open(meta_path))
    setup_site(meta)
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection
    from rest_framework.authtoken.models import Token

    from ilab_memory.models import Observation

    started = time.monotonic()
    call_command("migrate", verbosity=0, interactive=False)
    log(f"migrated in {time.monotonic() - started:.1f}s")
    now = datetime.now(timezone.utc).replace(microsecond=0)
    corpus = Corpus(SEED)
    users = {}
    for tree in meta["trees"]:
        accounts = []
        for k in range(meta["http_clients"]):
            user = get_user_model().objects.create_user(username=f"cmp-http-{tree}-{k}")
            accounts.append({"user_id": str(user.pk), "token": Token.objects.create(user=user).key})
        users[tree] = {"heavy": f"cmp-heavy-{tree}", "accounts": accounts}
    with GinIndexesSuspended(connection):
        write_twins([users[t]["heavy"] for t in meta["trees"]], meta["size"], now=now, corpus=corpus,
                    label="heavy users", seed=SEED)
        for k in range(meta["http_clients"]):
            write_twins([users[t]["accounts"][k]["user_id"] for t in meta["trees"]], meta["http_history"], now=now,
                        corpus=corpus, label=f"http accounts {k}", seed=SEED + 100 + k)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # Statistics are taken once, here, and kept for the whole comparison: autovacuum (and
            # its ANALYZE, which samples at random) is off on the app's tables, so no process is
            # timed while it works and every connection plans with the same statistics. Each
            # reset() vacuums instead, and brings the rows back to these.
            for table in app_tables():
                cursor.execute(f"ALTER TABLE {connection.ops.quote_name(table)} SET (autovacuum_enabled = false)")
            cursor.execute("VACUUM ANALYZE")
            cursor.execute("CHECKPOINT")  # the load's writes are on disk before anything is timed
        else:
            # No ANALYZE: an application's SQLite file has no sqlite_stat1 either.
            cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    meta.update(cutoff=now.isoformat(), users=users, table_rows=Observation.objects.count(),
                load_seconds=round(time.monotonic() - started, 1), versions=versions(meta["engine"]),
                schema=schema_fingerprint(meta["engine"]))
    json.dump(meta, open(meta_path, "w"), indent=1)


# ------------------------------------------------------------------------------------- serving


def _field(value, name):
    return value.get(name) if isinstance(value, dict) else getattr(value, name, None)


class Bench:
    """The timed operations of one tree on its own heavy user."""

    def __init__(self, meta: dict, tree: str):
        self.meta, self.tree = meta, tree
        self.mem = setup_facade(meta)
        self.user = meta["users"][tree]["heavy"]
        self.cutoff = datetime.fromisoformat(meta["cutoff"])
        self.corpus = Corpus(SEED)
        self.counter = 0
        self.tag = ""
        self.ops = {
            "start reuse": (self.start, None, self.expect_new(False)),
            "start new": (self.start, self.end, self.expect_new(True)),
            "start auto-close": (self.start, self.expire, self.expect_new(True)),
            "save create": (self.save_create, None, self.expect_action("created")),
            "save duplicate": (self.save_duplicate, None, self.expect_action("duplicate")),
            "save revise": (self.save_revise, None, self.expect_action("revised")),
            "context": (self.context, None, lambda memories: len(memories) == min(10, meta["size"])),
        }

    def text(self, i: int) -> str:
        return self.corpus.sentences[(i * 7919) % len(self.corpus.sentences)]

    # -- the calls (timed) and what comes before them (untimed)
    def start(self, i):
        return self.mem.mem_session_start(self.user)

    def end(self, i):
        self.mem.mem_session_end(self.user, summary=f"compare {self.tag} {i}")

    def expire(self, i):
        # A session with three saves whose last activity is past the timeout, moved back through
        # the model: the next start closes it with a synthetic summary and opens another.
        from django.utils import timezone as dj_timezone

        from ilab_memory.models import Session

        self.mem.mem_session_start(self.user)
        for k in range(3):
            self.mem.mem_save(self.user, f"before close {self.tag} {i}-{k}", self.text(i * 3 + k))
        past = dj_timezone.now() - EXPIRE_BY
        if Session.objects.filter(user_id=self.user, status="active").update(last_activity_at=past) != 1:
            raise RuntimeError("no active session to expire")

    def save_create(self, i):
        return self.mem.mem_save(self.user, f"create {self.tag} {i}", self.text(i))

    def save_duplicate(self, i):  # the first call (a warm-up call) creates it
        return self.mem.mem_save(self.user, f"twin {self.tag}", "the same words again")

    def save_revise(self, i):  # the first call (a warm-up call) creates the topic
        return self.mem.mem_save(self.user, f"topic {self.tag}", self.text(i), topic_key=f"compare-{self.tag}")

    def context(self, i):
        return self.mem.mem_context(self.user)

    @staticmethod
    def expect_new(flag):
        return lambda response: _field(response, "is_new") is flag

    @staticmethod
    def expect_action(name):
        return lambda result: _field(result, "action") == name

    # -- commands
    def run(self, op: str, calls: int, *, timed: bool) -> dict:
        call, before, expect = self.ops[op]
        times, cpu_times, problems = [], [], []
        for _ in range(calls):
            i = self.counter
            self.counter += 1
            if before is not None:
                before(i)
            started, cpu_started = time.perf_counter(), time.thread_time()
            value = call(i)
            elapsed, cpu = time.perf_counter() - started, time.thread_time() - cpu_started
            if timed:
                times.append(elapsed)
                cpu_times.append(cpu)
                if not expect(value):
                    problems.append(f"{op}: unexpected result: {value!r:.300}")
        return {"times": times, "cpu": cpu_times, "problems": problems}

    def begin(self, op: str, warmup: int, tag: str) -> dict:
        self.tag = f"{tag} {op}"
        self.mem.mem_session_start(self.user)  # a live session to reuse, end, expire or save into
        self.run(op, warmup, timed=False)
        return {}

    def finish(self, op: str, timed_calls: int) -> dict:
        problems = []
        if op == "start auto-close":
            from ilab_memory.models import Session

            closed = Session.objects.filter(user_id=self.user, is_auto_generated=True,
                                            started_at__gt=self.cutoff).count()
            if closed < timed_calls:
                problems.append(f"start auto-close: {closed} auto-closed sessions after {timed_calls} timed calls")
        return {"problems": problems}

    def info(self) -> dict:
        first = self.mem.mem_session_start(self.user)
        return {"versions": versions(self.meta["engine"]), "surface": surface(),
                "schema": schema_fingerprint(self.meta["engine"]),
                "shape": {"sessions_context": len(_field(first, "sessions_context") or []),
                          "memories": len(_field(first, "memories") or [])}}


def reset(meta: dict, user_ids: list[str], *, vacuum: bool) -> dict:
    """Delete the sessions of ``user_ids`` opened after the load (their observations and
    revisions cascade). Every write of the comparison lands in such a session, so the users'
    data are then again what was loaded. ``vacuum`` (PostgreSQL): VACUUM the app's tables, as
    autovacuum is off on them."""
    from django.db import connection

    from ilab_memory.models import Observation, Session

    cutoff = datetime.fromisoformat(meta["cutoff"])
    _, deleted = Session.objects.filter(user_id__in=user_ids, started_at__gt=cutoff).delete()
    stray = Observation.objects.filter(user_id__in=user_ids, created_at__gt=cutoff).count()
    if stray:
        raise RuntimeError(f"reset: {stray} observations newer than the load outside the run's sessions")
    if vacuum and connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("VACUUM " + ", ".join(connection.ops.quote_name(t) for t in app_tables()))
    return {k: v for k, v in deleted.items() if v}


def surface() -> dict:
    """The signatures of the facade methods the comparison calls (a changed API shows here)."""
    from ilab_memory import ILabMemory

    names = ("__init__", "from_path", "mem_session_start", "mem_session_end", "mem_save", "mem_context",
             "mem_search")
    return {name: str(inspect.signature(getattr(ILabMemory, name))) for name in names if hasattr(ILabMemory, name)}


def cmd_serve(meta_path: str, tree: str) -> None:
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    sys.stdout = sys.stderr  # only answers go to the orchestrator's pipe
    meta = json.load(open(meta_path))
    bench = Bench(meta, tree)
    own = [meta["users"][tree]["heavy"], *(a["user_id"] for a in meta["users"][tree]["accounts"])]
    out.write(json.dumps({"ready": True}) + "\n")
    for line in sys.stdin:
        command = json.loads(line)
        kind = command["cmd"]
        try:
            if kind == "begin":
                answer = bench.begin(command["op"], command["warmup"], command["tag"])
            elif kind == "batch":
                answer = bench.run(command["op"], command["calls"], timed=True)
            elif kind == "finish":
                answer = bench.finish(command["op"], command["timed_calls"])
            elif kind == "reset":
                answer = {"deleted": reset(meta, own, vacuum=command.get("vacuum", False))}
            elif kind == "info":
                answer = bench.info()
            elif kind == "schema":
                answer = {"schema": schema_fingerprint(meta["engine"])}
            elif kind == "quit":
                out.write(json.dumps({"bye": True}) + "\n")
                break
            else:
                raise ValueError(f"unknown command {kind!r}")
        except Exception as error:  # reported to the orchestrator, which stops the run
            import traceback

            traceback.print_exc()
            answer = {"error": f"{type(error).__name__}: {error}"}
        out.write(json.dumps(answer) + "\n")
    from django.db import connections

    connections.close_all()


if __name__ == "__main__":
    command, *rest = sys.argv[1:]
    {"load": cmd_load, "serve": cmd_serve}[command](*rest)
