#!/usr/bin/env python3
"""The learners of tests/scale/run: HTTP clients that take quizzes through the load balancer.

Standard library only. Each learner is a thread with its own keep-alive connection; a request
that fails (connection refused or reset, no answer, 502/503/504) is counted as an error the
client saw and sent again, up to `--tries` times, as a browser front-end would (quizd's answer
is idempotent: an answer recorded already comes back `409 answer_final`, which acknowledges it).

    load.py register --base URL --learners N --out learners.json
    load.py drive --base URL --learners learners.json --seconds S --out acks.json
    load.py timed --base URL --learners learners.json --assignment ID --out timed.json
    load.py guess --base URL --email E [--max 20]        prints the try that met 429
    load.py course --base URL --teacher E --learners learners.json --closes-in S --out course.json
    load.py change --base URL --teacher E --instances URL,URL,...   a quiz change reaches all
    load.py analytics --base URL --teacher E --assignment ID        prints the finished attempts
    load.py finish-one --base URL --email E --assignment ID         one attempt, answered, finished
    load.py lti --base URL --platform URL --learners N --out lti.json  launched from the LMS

`--source ADDRESS` (before the command) makes every connection from that local address (a
loopback address such as 127.0.0.2), so that quizd, behind HAProxy, sees it as the client.
"""

from __future__ import annotations

import argparse
import html
import http.client
import json
import pathlib
import random
import sys
import threading
import time
import urllib.parse

QUIZ = "data-parallelism"
PASSWORD = "correct horse battery staple"
RETRYABLE = {502, 503, 504}


class Client:
    """One keep-alive connection; `call` retries what a retrying client would."""

    source = None  # local address of every connection (set by --source)

    def __init__(self, base: str, tries: int = 30):
        u = urllib.parse.urlsplit(base)
        self.host, self.port = u.hostname, u.port or 80
        self.tries = tries
        self.conn = None
        self.errors: list[str] = []  # every failure this client saw, before its retry
        self.token = None

    def _conn(self):
        if self.conn is None:
            src = (Client.source, 0) if Client.source else None
            self.conn = http.client.HTTPConnection(self.host, self.port, timeout=10, source_address=src)
        return self.conn

    def once(self, method, path, body=None, content_type=None):
        headers = {"accept": "application/json"}
        if self.token:
            headers["authorization"] = f"Bearer {self.token}"
        data = None
        if isinstance(body, str):
            data = body.encode()
            headers["content-type"] = content_type
        elif body is not None:
            data = json.dumps(body).encode()
            headers["content-type"] = "application/json"
        conn = self._conn()
        try:
            conn.request(method, path, body=data, headers=headers)
            res = conn.getresponse()
            raw = res.read()
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            self.conn = None
            raise ConnectionError(f"{method} {path}: {type(e).__name__}: {e}") from e
        if res.getheader("connection", "").lower() == "close":
            conn.close()
            self.conn = None
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = raw.decode(errors="replace")
        return res.status, parsed

    def call(self, method, path, body=None, content_type=None):
        """(status, body, latency of the successful try in seconds)."""
        for attempt in range(self.tries):
            t0 = time.monotonic()
            try:
                status, parsed = self.once(method, path, body, content_type)
            except ConnectionError as e:
                self.errors.append(str(e))
                time.sleep(min(0.05 * 2**attempt, 1.0))
                continue
            if status in RETRYABLE:
                self.errors.append(f"{method} {path}: HTTP {status}")
                time.sleep(min(0.05 * 2**attempt, 1.0))
                continue
            return status, parsed, time.monotonic() - t0
        raise RuntimeError(f"{method} {path}: no answer after {self.tries} tries")


def sign_in(client: Client, email: str):
    status, body, _ = client.call("POST", "/v1/auth/login", {"email": email, "password": PASSWORD})
    if status != 200:
        raise RuntimeError(f"sign-in of {email}: {status} {body}")
    client.token = body["access_token"]


def run_threads(n, target):
    threads = [threading.Thread(target=target, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def cmd_register(args):
    emails = [f"scale-learner{i}@example.org" for i in range(args.learners)]

    def register(i):
        c = Client(args.base)
        status, body, _ = c.call(
            "POST",
            "/v1/auth/register",
            {"email": emails[i], "display_name": f"Learner {i}", "password": PASSWORD},
        )
        if status not in (201, 409):
            raise SystemExit(f"register {emails[i]}: {status} {body}")

    run_threads(args.learners, register)
    json.dump({"emails": emails}, open(args.out, "w"))
    print(f"registered {len(emails)} learners")


def answer_all(client: Client, attempt: dict, rng: random.Random, acks: list, latencies: list):
    """Answers every question of `attempt`; appends what was acknowledged."""
    for q in attempt["questions"]:
        opt = rng.choice(q["options"])["id"]
        path = f"/v1/attempts/{attempt['id']}/responses/{q['id']}"
        status, body, took = client.call("PUT", path, {"selected": [opt]})
        if status == 200 or (status == 409 and isinstance(body, dict) and body.get("code") == "answer_final"):
            acks.append({"attempt": attempt["id"], "question": q["id"], "status": status})
            latencies.append(took)
        elif status == 409 and isinstance(body, dict) and body.get("code") in ("attempt_finished", "deadline_passed"):
            return False
        else:
            raise RuntimeError(f"PUT {path}: {status} {body}")
    return True


def cmd_drive(args):
    emails = json.load(open(args.learners))["emails"]
    stop_at = time.monotonic() + args.seconds
    lock = threading.Lock()
    acks, finished, latencies, errors, failures = [], [], [], [], []

    def learner(i):
        rng = random.Random(i)
        c = Client(args.base)
        my_acks, my_finished, my_lat = [], [], []
        try:
            sign_in(c, emails[i])
            while time.monotonic() < stop_at:
                status, attempt, _ = c.call("POST", f"/v1/quizzes/{QUIZ}/attempts", {"locale": "bn"})
                if status not in (200, 201):
                    raise RuntimeError(f"start: {status} {attempt}")
                answer_all(c, attempt, rng, my_acks, my_lat)
                status, body, _ = c.call("POST", f"/v1/attempts/{attempt['id']}/finish")
                if status == 200 or (status == 409 and body.get("code") == "attempt_finished"):
                    my_finished.append(attempt["id"])
                else:
                    raise RuntimeError(f"finish: {status} {body}")
        except Exception as e:  # noqa: BLE001 - reported, and the run fails
            failures.append(f"learner {i}: {e}")
        with lock:
            acks.extend(my_acks)
            finished.extend(my_finished)
            latencies.extend(my_lat)
            errors.extend(c.errors)

    t0 = time.monotonic()
    run_threads(len(emails), learner)
    elapsed = time.monotonic() - t0
    latencies.sort()

    def pct(p):
        return round(1000 * latencies[min(len(latencies) - 1, int(p * len(latencies)))], 2) if latencies else None

    out = {
        "acks": acks,
        "finished": finished,
        "errors": errors,
        "failures": failures,
        "seconds": round(elapsed, 2),
        "answers_per_second": round(len(acks) / elapsed, 1),
        "answer_p50_ms": pct(0.50),
        "answer_p99_ms": pct(0.99),
    }
    json.dump(out, open(args.out, "w"))
    print(
        f"{len(emails)} learners, {elapsed:.1f} s: {len(acks)} answers acknowledged "
        f"({out['answers_per_second']}/s, p50 {out['answer_p50_ms']} ms, p99 {out['answer_p99_ms']} ms), "
        f"{len(finished)} attempts finished, {len(errors)} errors seen by clients (each retried), "
        f"{len(failures)} learners gave up"
    )
    for e in errors[:10]:
        print(f"  client error: {e}")
    for f in failures:
        print(f"  FAILED: {f}")
    if failures:
        sys.exit(1)


def cmd_timed(args):
    """Every learner starts an attempt of the timed assignment and answers two questions."""
    emails = json.load(open(args.learners))["emails"]
    started, lock = [], threading.Lock()

    def learner(i):
        c = Client(args.base)
        sign_in(c, emails[i])
        status, attempt, _ = c.call("POST", f"/v1/assignments/{args.assignment}/attempts", {})
        if status not in (200, 201):
            raise SystemExit(f"timed start: {status} {attempt}")
        attempt["questions"] = attempt["questions"][:2]
        answer_all(c, attempt, random.Random(i), [], [])
        with lock:
            started.append(attempt["id"])

    run_threads(len(emails), learner)
    json.dump({"attempts": started}, open(args.out, "w"))
    print(f"{len(started)} timed attempts started and left unfinished")


def cmd_guess(args):
    c = Client(args.base)
    for n in range(1, args.max + 1):
        status, body, _ = c.call("POST", "/v1/auth/login", {"email": args.email, "password": "wrong guess"})
        if status == 429:
            print(n)
            return
        if status != 401:
            raise SystemExit(f"guess {n}: {status} {body}")
    print("none")


def expect(status_body, *ok):
    status, body, _ = status_body
    if status not in ok:
        raise SystemExit(f"unexpected {status}: {body}")
    return body


# The course's exam: the seed quiz's questions under a slug of their own, private and without
# practice. The learners practise the seed quiz itself meanwhile (`drive`), which they could
# not do while they sit an exam of it (`409 practice_during_exam`).
EXAM = "scale-exam"


def exam_toml() -> str:
    text = (pathlib.Path(__file__).parents[2] / "content" / QUIZ / "quiz.toml").read_text()
    text = text.replace(f'slug = "{QUIZ}"', f'slug = "{EXAM}"', 1)
    text = text.replace('visibility = "public"', 'visibility = "private"', 1)
    head, practice = text.split("[practice]\n", 1)
    return head + practice[practice.index("[[questions]]"):]


def cmd_course(args):
    """A course of the teacher's with every learner enrolled, an assignment that closes in
    `--closes-in` seconds (its attempts' deadline) and an open one, of the exam quiz."""
    emails = json.load(open(args.learners))["emails"]
    t = Client(args.base)
    sign_in(t, args.teacher)
    expect(t.call("POST", "/v1/quizzes", exam_toml(), "application/toml"), 200, 201)
    course = expect(t.call("POST", "/v1/courses", {"title": "Scale"}), 201)
    for e in emails:
        expect(t.call("POST", f"/v1/courses/{course['id']}/enrollments", {"email": e}), 201)
    closes = time.time() + args.closes_in
    closes_at = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(closes)) + f".{int(closes % 1 * 1000):03d}Z"
    path = f"/v1/courses/{course['id']}/assignments"
    timed = expect(t.call("POST", path, {"quiz": EXAM, "policy": {"closes_at": closes_at}}), 201)
    open_ = expect(t.call("POST", path, {"quiz": EXAM, "policy": {}}), 201)
    json.dump({"course": course["id"], "timed": timed["id"], "open": open_["id"], "closes_at": closes_at},
              open(args.out, "w"))
    print(f"course with {len(emails)} learners; the timed assignment closes at {closes_at}")


# The quiz `change` creates and changes (its title is the change).
TINY = (pathlib.Path(__file__).parent / "quiz.toml").read_text()


def cmd_change(args):
    """Creates a quiz, has every instance serve it, changes it through the first instance and
    measures when each instance serves the change."""
    instances = args.instances.split(",")
    t = Client(args.base)
    sign_in(t, args.teacher)
    expect(t.call("POST", "/v1/quizzes", TINY, "application/toml"), 200, 201)
    readers = [Client(u) for u in instances]
    for r in readers:
        body = expect(r.call("GET", "/v1/quizzes/scale-tiny"), 200)
        assert body["title"]["text"] == "Before", body
    first = Client(instances[0])
    first.token = t.token
    expect(first.call("PUT", "/v1/quizzes/scale-tiny", TINY.replace("Before", "After"), "application/toml"), 200)
    changed_at = time.monotonic()
    worst = 0.0
    for u, r in zip(instances, readers):
        while True:
            body = expect(r.call("GET", "/v1/quizzes/scale-tiny"), 200)
            took = time.monotonic() - changed_at
            if body["title"]["text"] == "After":
                break
            if took > 5:
                raise SystemExit(f"{u} still serves the old quiz after 5 s")
            time.sleep(0.005)
        worst = max(worst, took)
        print(f"  {u} serves the change {took * 1000:.0f} ms after it was made")
    print(f"slowest instance: {worst * 1000:.0f} ms")
    if worst > 1.0:
        raise SystemExit("a quiz change took more than a second to reach an instance")


def cmd_analytics(args):
    t = Client(args.base)
    sign_in(t, args.teacher)
    body = expect(t.call("GET", f"/v1/assignments/{args.assignment}/analytics?attempts=all"), 200)
    versions = body["versions"]
    counts = versions[0]["counts"] if versions else {}
    # Finished by the learner, or at the deadline (which the report counts as abandoned).
    print(counts.get("finished", 0) + counts.get("abandoned", 0))


def cmd_finish_one(args):
    c = Client(args.base)
    sign_in(c, args.email)
    attempt = expect(c.call("POST", f"/v1/assignments/{args.assignment}/attempts", {}), 200, 201)
    answer_all(c, attempt, random.Random(0), [], [])
    expect(c.call("POST", f"/v1/attempts/{attempt['id']}/finish"), 200)
    print(attempt["id"])


def raw(method, url, body=None, headers=None):
    """One request, no redirect followed: (status, headers as a list, body text)."""
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    path = u.path + (f"?{u.query}" if u.query else "")
    conn.request(method, path, body=body, headers=headers or {})
    res = conn.getresponse()
    text = res.read().decode()
    conn.close()
    return res.status, res.getheaders(), text


def header(headers, name, starts=""):
    for k, v in headers:
        if k.lower() == name and v.startswith(starts):
            return v
    raise RuntimeError(f"no {name} {starts} in {headers}")


def form_value(page, name):
    at = page.index(f'name="{name}"')
    start = page.index('value="', at) + 7
    return html.unescape(page[start:page.index('"', start)])


def lti_session(platform, sub, roles):
    """A launch from the LMS, as a browser makes it, then the code traded for tokens."""
    scenario = {
        "user": {"sub": sub, "name": f"Learner {sub}"},
        "roles": roles,
        "context": {"id": "scale-ctx", "title": "Scale", "label": "SC-1"},
        "resource_link": {"id": "scale-rl", "title": "Scale quiz"},
        "custom": {"quiz": QUIZ},
    }
    _, _, body = raw("POST", f"{platform}/scenarios", json.dumps(scenario), {"content-type": "application/json"})
    hint = json.loads(body)["hint"]
    status, h, _ = raw("GET", f"{platform}/initiate?hint={hint}")
    status, h, _ = raw("GET", header(h, "location"))  # quizd's login
    if status != 302:
        raise RuntimeError(f"quizd's login answered {status}")
    state_cookie = header(h, "set-cookie", "quizd_lti_browser=").split(";")[0]
    _, _, page = raw("GET", header(h, "location"))  # the platform's auth endpoint
    action = html.unescape(page[page.index('action="') + 8:page.index('"', page.index('action="') + 8)])
    form = urllib.parse.urlencode({"id_token": form_value(page, "id_token"), "state": form_value(page, "state")})
    status, h, text = raw("POST", action, form, {"content-type": "application/x-www-form-urlencoded",
                                                "cookie": state_cookie})
    if status != 303:
        raise RuntimeError(f"the launch answered {status}: {text[:300]}")
    code = header(h, "location").removeprefix("/#/lti/")
    code_cookie = header(h, "set-cookie", "quizd_lti_code_").split(";")[0]
    base = action.removesuffix("/v1/lti/launch")
    status, _, text = raw("POST", f"{base}/v1/lti/exchange", json.dumps({"code": code}),
                          {"content-type": "application/json", "cookie": code_cookie})
    if status != 200:
        raise RuntimeError(f"the exchange answered {status}: {text[:300]}")
    return json.loads(text)


def cmd_lti(args):
    """An instructor and `--learners` learners launched from the LMS; each learner takes the
    quiz once through `--base`. Writes the finished attempts' ids."""
    lti_session(args.platform, "scale-teacher", [INSTRUCTOR])
    finished, lock = [], threading.Lock()

    def learner(i):
        session = lti_session(args.platform, f"scale-lti-{i}", [LEARNER])
        c = Client(args.base)
        c.token = session["access_token"]
        assignment = session["destination"]["assignment_id"]
        attempt = expect(c.call("POST", f"/v1/assignments/{assignment}/attempts", {}), 200, 201)
        answer_all(c, attempt, random.Random(i), [], [])
        expect(c.call("POST", f"/v1/attempts/{attempt['id']}/finish"), 200)
        with lock:
            finished.append(attempt["id"])

    for i in range(args.learners):  # one at a time: launches are not the load here
        learner(i)
    json.dump({"attempts": finished}, open(args.out, "w"))
    print(f"{len(finished)} learners launched from the LMS finished an attempt")


LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"


# Each command: its function and its options (name, type); every command takes --base.
COMMANDS = {
    "register": (cmd_register, [("--learners", int), ("--out", str)]),
    "drive": (cmd_drive, [("--learners", str), ("--seconds", float), ("--out", str)]),
    "timed": (cmd_timed, [("--learners", str), ("--assignment", str), ("--out", str)]),
    "guess": (cmd_guess, [("--email", str), ("--max", int)]),
    "course": (
        cmd_course,
        [("--teacher", str), ("--learners", str), ("--closes-in", float), ("--out", str)],
    ),
    "change": (cmd_change, [("--teacher", str), ("--instances", str)]),
    "analytics": (cmd_analytics, [("--teacher", str), ("--assignment", str)]),
    "finish-one": (cmd_finish_one, [("--email", str), ("--assignment", str)]),
    "lti": (cmd_lti, [("--platform", str), ("--learners", int), ("--out", str)]),
}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--source", help="local address of every connection, e.g. 127.0.0.2")
    sub = p.add_subparsers(dest="cmd", required=True)
    for name, (_, options) in COMMANDS.items():
        c = sub.add_parser(name)
        c.add_argument("--base", required=True)
        for option, kind in options:
            if option == "--max":
                c.add_argument(option, type=kind, default=20)
            else:
                c.add_argument(option, type=kind, required=True)
    args = p.parse_args()
    Client.source = args.source
    COMMANDS[args.cmd][0](args)


if __name__ == "__main__":
    main()
