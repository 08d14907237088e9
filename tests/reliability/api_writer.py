"""A separate process writing to one user's memories through the HTTP API, printing every answer.

    python api_writer.py BASE_URL TOKEN USER_ID SEED OPS

Random topic upserts, updates (a new content, sometimes a new topic_key), soft and hard deletes,
searches and, rarely, an erasure of the whole user, on a handful of topic keys that
every writer shares, so the writers race for the same rows. Each answer is one JSON line:
``{"op", "status", "id", "code", "action", "revision_count", "content"}``. Standard library only.
"""

import json
import random
import sys
import urllib.error
import urllib.request

TOPICS = [f"topic-{n}" for n in range(4)]


def call(base: str, token: str, method: str, path: str, body=None) -> tuple[int, dict | list | None]:
    data = None if body is None else json.dumps(body).encode()
    headers = {"Authorization": f"Token {token}", "Content-Type": "application/json", "Accept": "application/json"}
    request = urllib.request.Request(base + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            raw = response.read()
            return response.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as error:
        raw = error.read()
        try:
            return error.code, json.loads(raw)
        except ValueError:  # a server error page is not JSON; its status is what counts
            return error.code, None


def one_operation(rng: random.Random, base: str, token: str, user_id: str, known: list[str], n: int, tag: str):
    """(op, status, answer) of one random call."""
    roll = rng.random()
    target = rng.choice(known) if known else None
    content = f"{tag} wrote {n}: the deploy runs at {rng.randint(1, 23)}h"
    if roll < 0.30 or target is None:
        body = {"title": f"Topic note {tag}", "content": content, "topic_key": rng.choice(TOPICS)}
        return ("upsert", *call(base, token, "POST", "observations/", body))
    if roll < 0.60:
        body = {"content": content}
        if rng.random() < 0.2:
            body["topic_key"] = rng.choice(TOPICS)  # may be taken: a documented 400
        return ("update", *call(base, token, "PATCH", f"observations/{target}/", body))
    if roll < 0.70:
        return ("delete", *call(base, token, "DELETE", f"observations/{target}/"))
    if roll < 0.75:
        return ("hard_delete", *call(base, token, "DELETE", f"observations/{target}/?hard=true"))
    if roll < 0.99:
        return ("search", *call(base, token, "GET", "observations/search/?q=deploy"))
    return ("forget", *call(base, token, "POST", "forget/", {"confirm": user_id}))


def main(base: str, token: str, user_id: str, seed: int, ops: int) -> None:
    rng = random.Random(seed)
    known: list[str] = []
    tag = f"w{seed}"
    for n in range(ops):
        op, status, answer = one_operation(rng, base, token, user_id, known, n, tag)
        record = answer.get("observation", answer) if isinstance(answer, dict) else {}
        line = {"op": op, "status": status, "id": record.get("id"), "code": record.get("code"),
                "action": answer.get("action") if isinstance(answer, dict) else None,
                "revision_count": record.get("revision_count"), "content": record.get("content")}
        if op == "upsert" and line["id"] and line["id"] not in known:
            known.append(line["id"])
        sys.stdout.write(json.dumps(line) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
