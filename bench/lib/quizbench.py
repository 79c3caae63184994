#!/usr/bin/env python3
"""Helpers for bench/run: seeding quizd over its API, pgbench result parsing, the SQL drift
check, and the report. Standard library only.

Subcommands (all take --dir RUN_DIR, where the state and the target files live):

  setup         register the instructor and the learners, make the course
  tokens        refresh every access token (they live 15 minutes); writes tokens.txt
  attempts      start attempts through the API and append them to a target file
  pg-answers    print the -D arguments for bench/sql/answer.sql (from a real response row)
  pgbench       run pgbench, parse its output and latency log, append one result line
  check-sql     fail if bench/sql/*.sql no longer hold the statements quizd runs (src/)
  report        the Markdown table (stdout) and the raw results file
"""

import argparse
import concurrent.futures as cf
import datetime as dt
import http.client
import json
import math
import os
import random
import re
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

PASSWORD = "bench-password-1"
SLUG = "data-parallelism"

# ---------------------------------------------------------------------------------------------
# HTTP


class Api:
    """One keep-alive connection per thread."""

    def __init__(self, base):
        m = re.match(r"http://([^:/]+):(\d+)", base)
        self.host, self.port = m.group(1), int(m.group(2))
        self.local = threading.local()

    def conn(self):
        c = getattr(self.local, "conn", None)
        if c is None:
            c = http.client.HTTPConnection(self.host, self.port, timeout=60)
            self.local.conn = c
        return c

    def call(self, method, path, body=None, token=None, expect=(200, 201)):
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = "Bearer " + token
        data = None if body is None else json.dumps(body).encode()
        attempt = 0
        while True:
            try:
                c = self.conn()
                c.request(method, path, body=data, headers=headers)
                r = c.getresponse()
                raw = r.read()
            except (http.client.HTTPException, OSError):
                self.local.conn = None
                attempt += 1
                if attempt == 3:
                    raise
                continue
            if r.status == 429 and 429 not in expect:
                # Rate limited (sign-ups from one address): wait as told, then retry on a new
                # connection (the server may close this one while we wait).
                c.close()
                self.local.conn = None
                time.sleep(int(r.getheader("Retry-After", "1")))
                continue
            break
        if r.status not in expect:
            raise SystemExit(f"{method} {path}: {r.status} {raw[:500]!r}")
        return json.loads(raw) if raw else None


def psql(args, sql, stdin=None):
    out = subprocess.run(
        [args.psql, "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-h", args.socket, "-U", "quizd",
         "-d", "quizd", "-c", sql],
        input=stdin, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"psql failed: {out.stderr}")
    return out.stdout.strip()


def load_state(d):
    return json.loads((Path(d) / "state.json").read_text())


def save_state(d, state):
    p = Path(d) / "state.json"
    p.write_text(json.dumps(state, indent=1))


# ---------------------------------------------------------------------------------------------
# Seeding


def cmd_setup(args):
    api = Api(args.base)
    d = Path(args.dir)

    def register(email, name):
        return api.call("POST", "/v1/auth/register",
                        {"email": email, "display_name": name, "password": PASSWORD})

    with cf.ThreadPoolExecutor(4) as ex:
        inst = ex.submit(register, "instructor@bench.test", "Bench Instructor")
        futs = [ex.submit(register, f"learner{i}@bench.test", f"Learner {i}")
                for i in range(args.learners)]
        learners = [f.result() for f in futs]
        inst = inst.result()
    psql(args, "UPDATE users SET role = 'instructor' WHERE email = 'instructor@bench.test'")
    # The refreshed token carries the new role.
    inst = api.call("POST", "/v1/auth/refresh", {"refresh_token": inst["refresh_token"]})
    course = api.call("POST", "/v1/courses", {"title": "Benchmark course"},
                      token=inst["access_token"])
    # As if each had followed the link mailed at sign-up: an email enrolls only an account that
    # verified it (any other is invited).
    psql(args, "UPDATE users SET email_verified_at = now() WHERE email LIKE 'learner%@bench.test'")
    with cf.ThreadPoolExecutor(4) as ex:
        list(ex.map(lambda i: api.call("POST", f"/v1/courses/{course['id']}/enrollments",
                                       {"email": f"learner{i}@bench.test"},
                                       token=inst["access_token"]),
                    range(args.learners)))
    ids = dict(line.split("|") for line in psql(
        args, "SELECT email, id FROM users WHERE email LIKE 'learner%@bench.test'").splitlines())
    state = {
        "base": args.base,
        "course": course["id"],
        "instructor": {"access": inst["access_token"], "refresh": inst["refresh_token"]},
        "learners": [{"email": f"learner{i}@bench.test", "id": ids[f"learner{i}@bench.test"],
                      "access": l["access_token"], "refresh": l["refresh_token"]}
                     for i, l in enumerate(learners)],
        "tokens_at": time.time(),
        "counts": {},
    }
    save_state(d, state)
    write_tokens(d, state)
    psql(args, "CREATE TABLE IF NOT EXISTS bench_targets (kind text NOT NULL, n integer NOT NULL,"
               " attempt_id uuid NOT NULL, user_id uuid NOT NULL, PRIMARY KEY (kind, n))")
    print(f"setup: {args.learners} learners enrolled in course {course['id']}")


def write_tokens(d, state):
    lines = [f"{i} {l['access']}" for i, l in enumerate(state["learners"])]
    (Path(d) / "tokens.txt").write_text("\n".join(lines) + "\n")


def cmd_tokens(args):
    refresh_tokens(Path(args.dir), args.max_age)


def refresh_tokens(d, max_age):
    """New access tokens (they live 15 minutes) if the current ones are older than max_age s."""
    state = load_state(d)
    if time.time() - state["tokens_at"] < max_age:
        return
    api = Api(state["base"])
    people = [state["instructor"]] + state["learners"]

    def refresh(p):
        pair = api.call("POST", "/v1/auth/refresh", {"refresh_token": p["refresh"]})
        p["access"], p["refresh"] = pair["access_token"], pair["refresh_token"]

    with cf.ThreadPoolExecutor(4) as ex:
        list(ex.map(refresh, people))
    state["tokens_at"] = time.time()
    save_state(d, state)
    write_tokens(d, state)


def cmd_attempts(args):
    """Starts `count` attempts (rounded up to whole assignments: one attempt per learner each)
    and appends them to the target file of `kind`:
      b   resume targets: 4 of the 8 questions answered; `b.txt` lines `attempt learner`, and
          bench_targets rows kind 'b' for pgbench
      c   quizd answer targets: `c.txt` lines `attempt question_id option_id learner`, one per
          (attempt, question): every line is a fresh question
      p   pgbench answer targets: bench_targets rows kind 'p' (attempt, user), nothing answered
      t   one fully answered attempt whose rows give pgbench its answers (see pg-answers)
    """
    d = Path(args.dir)
    refresh_tokens(d, max_age=300)
    state = load_state(d)
    api = Api(state["base"])
    inst = state["instructor"]["access"]
    learners = state["learners"]
    n_assign = max(1, math.ceil(args.count / len(learners)))
    rng = random.Random(args.seed)
    started = time.time()

    def new_assignment(_):
        return api.call("POST", f"/v1/courses/{state['course']}/assignments",
                        {"quiz": SLUG, "policy": {"feedback": "immediate"}}, token=inst)["id"]

    def start(task):
        assignment, li = task
        a = api.call("POST", f"/v1/assignments/{assignment}/attempts", {"locale": args.locale},
                     token=learners[li]["access"])
        if a["state"] != "in_progress" or any(q.get("response") for q in a["questions"]):
            raise SystemExit(f"attempt {a['id']} is not fresh")
        return a, li

    def answer(a, li, upto):
        for q in a["questions"][:upto]:
            opt = q["options"][rng.randrange(len(q["options"]))]["id"]
            api.call("PUT", f"/v1/attempts/{a['id']}/responses/{q['id']}", {"selected": [opt]},
                     token=learners[li]["access"])

    with cf.ThreadPoolExecutor(args.threads) as ex:
        assignments = list(ex.map(new_assignment, range(n_assign)))
        tasks = [(a, li) for a in assignments for li in range(len(learners))]
        attempts = list(ex.map(start, tasks))
        if args.kind == "b":
            list(ex.map(lambda t: answer(t[0], t[1], 4), attempts))
        elif args.kind == "t":
            answer(*attempts[0], 8)

    if args.kind == "c":
        with open(d / "c.txt", "a") as f:
            for a, li in attempts:
                for q in a["questions"]:
                    opt = q["options"][rng.randrange(len(q["options"]))]["id"]
                    f.write(f"{a['id']} {q['id']} {opt} {li}\n")
    elif args.kind == "b":
        with open(d / "b.txt", "a") as f:
            for a, li in attempts:
                f.write(f"{a['id']} {li}\n")
    elif args.kind == "t":
        (d / "template.txt").write_text(attempts[0][0]["id"] + "\n")
    if args.kind in ("b", "p"):
        kind = args.kind
        base = state["counts"].get("pg_" + kind, 0)
        rows = "\n".join(f"{kind}\t{base + i + 1}\t{a['id']}\t{learners[li]['id']}"
                         for i, (a, li) in enumerate(attempts))
        psql(args, "COPY bench_targets (kind, n, attempt_id, user_id) FROM STDIN", stdin=rows + "\n")
        state["counts"]["pg_" + kind] = base + len(attempts)
    key = {"b": "b", "c": "c_lines", "p": "p", "t": "t"}[args.kind]
    state["counts"][key] = state["counts"].get(key, 0) + len(attempts) * (8 if args.kind == "c" else 1)
    save_state(d, state)
    took = time.time() - started
    print(f"attempts: {len(attempts)} ({args.kind}) in {took:.1f} s")


def cmd_count(args):
    print(load_state(args.dir)["counts"].get(args.key, 0))


def cmd_pg_answers(args):
    """-D arguments for answer.sql: question key, answer, points, max points and correctness of
    each of the 8 questions, as quizd recorded them for the template attempt."""
    template = (Path(args.dir) / "template.txt").read_text().strip()
    rows = psql(args, "SELECT question_key, answer::text, points, max_points, correct "
                      f"FROM responses WHERE attempt_id = '{template}' ORDER BY question_key")
    rows = [r.split("|") for r in rows.splitlines()]
    if len(rows) != 8:
        raise SystemExit(f"the template attempt has {len(rows)} responses, not 8")
    out = []
    for k, (key, answer, points, max_points, correct) in enumerate(rows):
        out += ["-D", f"q{k}={key}", "-D", f"a{k}={answer}", "-D", f"p{k}={points}",
                "-D", f"m{k}={max_points}", "-D", f"c{k}={'true' if correct == 't' else 'false'}"]
    print("\0".join(out), end="")


# The parts of the answer statement, one at a time: bench/run with BENCH_ANSWER_PARTS=1 runs
# pgbench on answer.sql with a part taken out, to see what each costs PostgreSQL.
ANSWER_PARTS = {
    # the attempt's row lock (the foreign key's check on the response insert still takes one)
    "lock": (r"\n\s*FOR SHARE OF t\n", "\n"),
    # the outbox row written with the response
    "outbox": (r"\), event AS \(\s*INSERT INTO outbox.*?FROM ins WHERE EXISTS \(SELECT 1 FROM event_consumers WHERE topic = 'response\.recorded'\)\s*\)", ")"),
    # the previous answer's time (for the seconds spent on this question)
    "previous": (r"SELECT max\(answered_at\) AS at FROM responses WHERE attempt_id = :attempt_id",
                 "SELECT NULL::timestamptz AS at"),
}


def cmd_answer_variant(args):
    """Writes answer.sql with the named parts taken out; fails if a part is not found in every
    branch (the statement changed: change the pattern with it)."""
    text = Path(args.sql).read_text()
    branches = text.count("-- quizd: attempts::store::record_response")
    for part in args.drop:
        pattern, repl = ANSWER_PARTS[part]
        text, n = re.subn(pattern, repl, text, flags=re.S)
        if n != branches:
            raise SystemExit(f"answer-variant: '{part}' matched {n} times, not {branches}")
    Path(args.out).write_text(text)


# ---------------------------------------------------------------------------------------------
# pgbench


def percentile(sorted_values, p):
    """Nearest-rank percentile."""
    if not sorted_values:
        return float("nan")
    k = max(0, math.ceil(p / 100 * len(sorted_values)) - 1)
    return sorted_values[k]


def cmd_pgbench(args):
    """Runs pgbench (arguments after --), logs every transaction, and appends one JSON result."""
    logdir = Path(args.dir) / "pglog"
    logdir.mkdir(exist_ok=True)
    for f in logdir.iterdir():
        f.unlink()
    cmd = [args.pgbench] + args.rest + ["--log", f"--log-prefix={logdir}/tx"]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=logdir)
    text = out.stdout + out.stderr
    (Path(args.dir) / "pgbench.last.txt").write_text(" ".join(cmd) + "\n\n" + text)
    tps = re.search(r"tps = ([0-9.]+) \(without initial connection time\)", text)
    processed = re.search(r"number of transactions actually processed: (\d+)", text)
    failed = re.search(r"number of failed transactions: (\d+)", text)
    if out.returncode != 0 or not tps or not processed:
        sys.stderr.write(text)
        raise SystemExit(f"pgbench failed (exit {out.returncode}); see {args.dir}/pgbench.last.txt")
    # Log lines: client transaction time script epoch usec [lag]. With -R, `time` counts from
    # the scheduled start and `lag` is how late the transaction started: time - lag is the
    # latency from the moment it was sent, as wrk measures it.
    lat, lat_sched = [], []
    for f in logdir.iterdir():
        for line in f.read_text().splitlines():
            parts = line.split()
            if len(parts) >= 6:
                lag = int(parts[6]) if len(parts) >= 7 else 0
                lat.append(int(parts[2]) - lag)
                lat_sched.append(int(parts[2]))
    lat.sort()
    lat_sched.sort()
    rate = args.rest[args.rest.index("-R") + 1] if "-R" in args.rest else None
    res = {
        "scenario": args.scenario, "system": "pgbench", "phase": args.phase, "run": args.run,
        "rate": float(rate) if rate else None,
        "rps": float(tps.group(1)), "requests": int(processed.group(1)),
        "errors": int(failed.group(1)) if failed else 0,
        "p50_ms": percentile(lat, 50) / 1000, "p99_ms": percentile(lat, 99) / 1000,
        "max_ms": (lat[-1] / 1000) if lat else float("nan"), "logged": len(lat),
        "p99_from_schedule_ms": percentile(lat_sched, 99) / 1000,
    }
    with open(Path(args.dir) / "results.jsonl", "a") as f:
        f.write(json.dumps(res) + "\n")
    print(f"  pgbench {args.scenario} {args.phase} {args.run}: {res['rps']:.0f} tps, "
          f"p50 {res['p50_ms']:.2f} ms, p99 {res['p99_ms']:.2f} ms, errors {res['errors']}")



# ---------------------------------------------------------------------------------------------
# CPU accounting: where the 2 cores went during a measurement


def proc_stat(pid):
    """(ppid, comm, utime+stime, cutime+cstime) in clock ticks, or None if gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    comm = raw[raw.index("(") + 1:raw.rindex(")")]
    f = raw[raw.rindex(")") + 2:].split()
    return int(f[1]), comm, int(f[11]) + int(f[12]), int(f[13]) + int(f[14])


def all_procs():
    procs = {}
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            st = proc_stat(p.name)
            if st:
                procs[int(p.name)] = st
    return procs


def machine_ticks():
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    vals = [int(x) for x in fields[:8]]
    return sum(vals) - vals[3] - vals[4], sum(vals)


def tree_ticks(procs, root):
    """CPU of `root` and its live descendants, with the children they have reaped (a finished
    wrk or pgbench is in its parent's cutime)."""
    children = {}
    for pid, st in procs.items():
        children.setdefault(st[0], []).append(pid)
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        if pid in procs:
            total += procs[pid][2] + procs[pid][3]
        todo.extend(children.get(pid, []))
    return total


FOREIGN_LIMIT = 0.10  # cores used by processes that are not the benchmark's: above, "disturbed"


def cpu_snapshot(quizd_pid, server_pid, root_pid):
    """Ticks used so far by the measured server, by quizd's PostgreSQL (the postmaster, its live
    children, and the children it has reaped, such as pgbench's backends), by the benchmark's
    whole process tree, and by the machine."""
    procs = all_procs()
    server = procs.get(server_pid, (0, "", 0, 0))[2]
    pg = sum(tree_ticks(procs, pid) for pid, st in procs.items()
             if st[0] == quizd_pid and st[1] == "postgres")
    busy, total = machine_ticks()
    return {"server": server, "pg": pg, "own": tree_ticks(procs, root_pid), "busy": busy,
            "all": total, "t": time.time()}


def cmd_cpu_snap(args):
    print(json.dumps(cpu_snapshot(args.pid, args.server, args.root)))


def cmd_cpu_annotate(args):
    """Adds to the last result line the CPU time per request of the server, PostgreSQL and the
    rest (the load generator, the kernel's threads, anything else), how busy the machine was,
    and how many cores processes outside the benchmark used meanwhile."""
    before = json.loads(Path(args.before).read_text())
    after = cpu_snapshot(args.pid, args.server, args.root)
    hz = os.sysconf("SC_CLK_TCK")
    path = Path(args.dir) / "results.jsonl"
    lines = path.read_text().splitlines()
    r = json.loads(lines[-1])
    n = max(1, r["requests"])
    d = {k: after[k] - before[k] for k in ("server", "pg", "own", "busy", "all")}
    us = lambda ticks: round(ticks / hz * 1e6 / n, 1)
    r["cpu_us"] = {"server": us(d["server"]), "postgres": us(d["pg"]),
                   "other": us(d["busy"] - d["server"] - d["pg"]), "total": us(d["busy"])}
    r["cpu_busy"] = round(d["busy"] / d["all"], 3) if d["all"] else None
    secs = max(0.1, after["t"] - before["t"])
    r["foreign_cores"] = round(max(0, d["busy"] - d["own"]) / hz / secs, 2)
    r["disturbed"] = r["foreign_cores"] > FOREIGN_LIMIT
    lines[-1] = json.dumps(r)
    path.write_text("\n".join(lines) + "\n")


def cmd_wait_quiet(args):
    """Returns once processes outside the benchmark have used < FOREIGN_LIMIT cores for
    `seconds` one-second windows in a row (at most 30 minutes)."""
    hz = os.sysconf("SC_CLK_TCK")
    quiet, waited = 0, 0
    prev = (machine_ticks()[0], tree_ticks(all_procs(), args.root))
    while quiet < args.seconds and waited < 1800:
        time.sleep(1)
        waited += 1
        cur = (machine_ticks()[0], tree_ticks(all_procs(), args.root))
        foreign = ((cur[0] - prev[0]) - (cur[1] - prev[1])) / hz
        prev = cur
        quiet = quiet + 1 if foreign < FOREIGN_LIMIT else 0
    if waited > args.seconds:
        print(f"  (waited {waited} s for other work on the machine to stop)", file=sys.stderr)


# ---------------------------------------------------------------------------------------------
# The SQL drift check


def rust_string_after(src, anchor, start=0):
    """The first Rust string literal ("…", no raw strings) after `anchor` in `src`."""
    i = src.index(anchor, start)
    j = src.index('"', i)
    out, k = [], j + 1
    while src[k] != '"':
        if src[k] == "\\":
            nxt = src[k + 1]
            if nxt == "\n":  # line continuation: skip the newline and leading spaces
                k += 2
                while src[k] in " \t":
                    k += 1
                continue
            out.append({"n": "\n", "t": "\t", '"': '"', "\\": "\\"}.get(nxt, nxt))
            k += 2
            continue
        out.append(src[k])
        k += 1
    return "".join(out)


def norm(sql):
    return re.sub(r"\s+", " ", sql).strip().rstrip(";").strip()


def quizd_statements(root):
    """The statements of src/ the yardsticks copy, by name."""
    store = (root / "src/attempts/store.rs").read_text()
    resume = rust_string_after(store, "sqlx::query_as(",
                               store.index("pub async fn status_and_responses("))
    fn = store.index("pub async fn record_response(")
    # The free-navigation statement (the benchmark's policy): an answer replaces the one on
    # record unless the assignment's feedback is immediate at that moment (the benchmark's
    # feedback), decided in the statement; no sequential-navigation turn check.
    replace = rust_string_after(store, "const REPLACE_UNLESS_IMMEDIATE: &str =")
    record = rust_string_after(store, "format!(", fn)
    for part, text in (("{turn}", ""), ("{turn_from}", ""), ("{turn_where}", ""),
                       ("{in_turn}", "true"), ("{on_conflict}", replace)):
        if part not in record:
            raise SystemExit(f"check-sql: record_response no longer has {part}")
        record = record.replace(part, text)
    return {
        "attempts::store::status_and_responses": resume,
        "attempts::store::record_response": record,
    }


def script_statements(path):
    """(source function, parameter map, SQL) for each statement in a pgbench script marked
    `-- quizd: <function> $1=:var $2=:var …`."""
    out, cur = [], None
    for line in Path(path).read_text().splitlines():
        m = re.match(r"--\s*quizd:\s*(\S+)\s*(.*)$", line.strip())
        if m:
            params = dict(p.split("=", 1) for p in m.group(2).split())
            cur = [m.group(1), params, []]
            continue
        if cur is None:
            continue
        if line.startswith("\\") or line.strip().startswith("--"):
            if cur[2]:
                raise SystemExit(f"check-sql: {path}: statement of {cur[0]} not ended by ';'")
            continue
        cur[2].append(line)
        if line.rstrip().endswith(";"):
            out.append((cur[0], cur[1], "\n".join(cur[2])))
            cur = None
    return out


def cmd_check_sql(args):
    root = Path(args.root)
    ours = quizd_statements(root)
    seen, bad = set(), []
    for script in sorted((root / "bench/sql").glob("*.sql")):
        for name, params, sql in script_statements(script):
            if name not in ours:
                bad.append(f"{script.name}: unknown source {name}")
                continue
            # Put quizd's placeholders back, longest variable first.
            for ph, var in sorted(params.items(), key=lambda kv: -len(kv[1])):
                # `:var::type` declares the type of a parameter pgbench could not infer (see
                # answer.sql): the same parameter type quizd binds.
                sql = re.sub(re.escape(var) + r"(::(uuid|text|jsonb|timestamptz|boolean|float8))?(?![A-Za-z0-9_])",
                             ph.replace("\\", "\\\\"), sql)
            if norm(sql) != norm(ours[name]):
                bad.append(f"{script.name}: the copy of {name} differs from src/:\n"
                           f"  bench: {norm(sql)}\n  src:   {norm(ours[name])}")
            seen.add(name)
    missing = set(ours) - seen
    if missing:
        bad.append("no copy of " + ", ".join(sorted(missing)))
    if bad:
        raise SystemExit("check-sql: bench/sql drifted from src/attempts/store.rs:\n" + "\n".join(bad))
    print(f"check-sql: bench/sql matches src/ ({', '.join(sorted(seen))})")


# ---------------------------------------------------------------------------------------------
# Report

SCEN = {
    "a": ("(a) GET /v1/quizzes/{slug}?lang=bn", "plain actix-web JSON handler", 0.5),
    "b": ("(b) GET /v1/attempts/{id} (resume)", "pgbench -M prepared, same SQL", 0.5),
    "c": ("(c) PUT /v1/attempts/{id}/responses/{q}", "pgbench -M prepared, same SQL", 0.8),
}


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def cmd_report(args):
    d = Path(args.dir)
    rows = [json.loads(l) for l in (d / "results.jsonl").read_text().splitlines() if l.strip()]
    meta = json.loads((d / "meta.json").read_text())
    mem = {m["when"]: m for m in rows if m.get("kind") == "rss"}
    res = [r for r in rows if r.get("kind") != "rss"]

    def pick(scen, system, phase):
        return [r for r in res if r["scenario"] == scen and r["system"] == system
                and r["phase"] == phase]

    def fmt(x, nd=0):
        return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:,.{nd}f}"

    lines, verdicts = [], []
    lines.append(f"Date: {meta['date']} · commit `{meta['commit']}`{meta['dirty']} · "
                 f"{meta['runs']} runs × {meta['seconds']} s (median), warm-up {meta['warmup']} s · "
                 f"{meta['cpus']} CPUs ({meta['cpu_model']}) · quizd --workers {meta['workers']} "
                 f"--db-pool-size {meta['pool']} · wrk -t{meta['threads']} -c{meta['connections']} · "
                 f"pgbench -M prepared -c{meta['pool']} -j{meta['threads']}")
    lines.append("")
    lines.append("| scenario | system | req/s (median) | p50 ms | p99 ms | errors | CPU µs/request: server + PostgreSQL + load generator | quizd / yardstick | target | met |")
    lines.append("|---|---|---:|---:|---:|---:|---|---:|---|---|")

    def cpu(rs):
        xs = [r["cpu_us"] for r in rs if r.get("cpu_us")]
        if not xs:
            return "n/a"
        q, p, o = (med([x[k] for x in xs]) for k in ("server", "postgres", "other"))
        return f"{q:.0f} + {p:.0f} + {o:.0f}"

    for s, (title, yard, target) in SCEN.items():
        q = pick(s, "quizd", "max")
        ysys = "plain" if s == "a" else "pgbench"
        y = pick(s, ysys, "max")
        if not q:
            continue
        qr, yr = med([r["rps"] for r in q]), med([r["rps"] for r in y])
        ratio = qr / yr if y and yr else float("nan")
        ok = ratio >= target
        verdicts.append((f"({s}) throughput ≥ {target} × yardstick", ok, f"{ratio:.2f} ×"))
        lines.append(f"| {title} | quizd | {fmt(qr)} | {fmt(med([r['p50_ms'] for r in q]), 2)} | "
                     f"{fmt(med([r['p99_ms'] for r in q]), 2)} | {sum(r['errors'] for r in q)} | {cpu(q)} | "
                     f"**{ratio:.2f}** | ≥ {target} | {'yes' if ok else '**no**'} |")
        lines.append(f"| | {yard} | {fmt(yr)} | {fmt(med([r['p50_ms'] for r in y]), 2)} | "
                     f"{fmt(med([r['p99_ms'] for r in y]), 2)} | {sum(r['errors'] for r in y)} | {cpu(y)} | | | |")
    ins, qc = pick("c", "insert", "max"), pick("c", "quizd", "max")
    if ins and qc:
        ir = med([r["rps"] for r in ins])
        lines.append(f"| (c) the same PUT, against the cheapest durable HTTP write | plain actix-web + sqlx, one "
                     f"durable single-row INSERT | {fmt(ir)} | {fmt(med([r['p50_ms'] for r in ins]), 2)} | "
                     f"{fmt(med([r['p99_ms'] for r in ins]), 2)} | {sum(r['errors'] for r in ins)} | {cpu(ins)} | "
                     f"**{med([r['rps'] for r in qc]) / ir:.2f}** | (≥ 0.5 asked) | "
                     f"{'yes' if med([r['rps'] for r in qc]) / ir >= 0.5 else '**no**'} |")
    c304, qa, pa = pick("a", "304", "max"), pick("a", "quizd", "max"), pick("a", "plain", "max")
    if c304 and qa:
        r304 = med([r["rps"] for r in c304])

        def per_response(rs):
            return med([r["bytes"] / r["requests"] for r in rs if r["requests"]])

        vs_plain = f"; {r304 / med([r['rps'] for r in pa]):.2f} × the plain handler's 200" if pa else ""
        lines.append(f"| (a) the same GET from a client holding the current copy (If-None-Match) | quizd, 304 "
                     f"({per_response(c304):,.0f} bytes a response against {per_response(qa):,.0f}) | {fmt(r304)} | "
                     f"{fmt(med([r['p50_ms'] for r in c304]), 2)} | {fmt(med([r['p99_ms'] for r in c304]), 2)} | "
                     f"{sum(r['errors'] for r in c304)} | {cpu(c304)} | "
                     f"**{r304 / med([r['rps'] for r in qa]):.2f}** × quizd's 200{vs_plain} | (measured) | |")
    lines.append("")
    lines.append("At half the maximum throughput (each system paced at half of its own median maximum; medians of the runs; target for quizd: p99 ≤ 5 × p50, no errors):")
    lines.append("")
    lines.append("| scenario | system | offered req/s | achieved req/s | p50 ms | p99 ms | p99 / p50 | errors | met |")
    lines.append("|---|---|---:|---:|---:|---:|---:|---:|---|")
    for s, (title, yard, _) in SCEN.items():
        for system in ("quizd", "plain" if s == "a" else "pgbench"):
            h = pick(s, system, "half")
            if not h:
                continue
            p50, p99 = med([r["p50_ms"] for r in h]), med([r["p99_ms"] for r in h])
            errors = sum(r["errors"] for r in h)
            ratio = p99 / p50 if p50 else float("nan")
            ok = ratio <= 5 and errors == 0
            if system == "quizd":
                verdicts.append((f"({s}) at half load: p99 ≤ 5 × p50, zero errors", ok,
                                 f"p99 = {ratio:.1f} × p50, {errors} errors"))
            lines.append(f"| {title if system == 'quizd' else ''} | {'quizd' if system == 'quizd' else yard + ' (reference)'} | "
                         f"{fmt(h[0].get('rate'))} | {fmt(med([r['rps'] for r in h]))} | "
                         f"{fmt(p50, 2)} | {fmt(p99, 2)} | {ratio:.1f} | {errors} | "
                         f"{('yes' if ok else '**no**') if system == 'quizd' else ''} |")
    lines.append("")
    lines.append("quizd memory (its own process; PostgreSQL not included), target: peak RSS under load ≤ 100 MiB:")
    lines.append("")
    lines.append("| when | RSS MiB | peak RSS (VmHWM) MiB |")
    lines.append("|---|---:|---:|")
    for when, m in mem.items():
        lines.append(f"| {when} | {m['rss_kib'] / 1024:.1f} | {m['hwm_kib'] / 1024:.1f} |")
    if mem:
        peak = max(m["hwm_kib"] for m in mem.values()) / 1024
        ok = peak <= 100
        verdicts.append(("quizd peak RSS ≤ 100 MiB", ok, f"{peak:.1f} MiB"))
    lines.append("")
    lines.append("| target | met | measured |")
    lines.append("|---|---|---|")
    for name, ok, val in verdicts:
        lines.append(f"| {name} | {'yes' if ok else '**no**'} | {val} |")
    lines.append("")
    counted = [r for r in res if r["phase"] in ("max", "half")]
    disturbed = [f"{r['scenario']} {r['system']} {r['phase']} {r['run']} ({r['foreign_cores']} cores)"
                 for r in counted if r.get("disturbed")]
    worst = max((r.get("foreign_cores", 0) for r in counted), default=0)
    lines.append(f"Other load (CPU of processes outside the benchmark during the counted runs; "
                 f"limit {FOREIGN_LIMIT} cores): "
                 + (f"**disturbed: {', '.join(disturbed)}**" if disturbed else f"none above the limit (at most {worst} cores)")
                 + (f"; {len([r for r in res if r['phase'].endswith('-disturbed')])} disturbed runs were measured again" if any(r['phase'].endswith('-disturbed') for r in res) else "")
                 + ".")
    table = "\n".join(lines)
    print(table)

    raw = ["# quizd benchmark run", "", table, "", "## Every measurement", "",
           "| scenario | system | phase | run | offered req/s | req/s | requests | p50 ms | p99 ms | max ms | errors | CPU µs/req server+PG+other | machine busy | notes |",
           "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---|"]
    for r in res:
        notes = []
        if "written" in r:
            notes.append(f"rows written {r['written']}")
        if r.get("exhausted"):
            notes.append("TARGETS EXHAUSTED")
        if r.get("disturbed"):
            notes.append(f"**other processes used {r['foreign_cores']} cores meanwhile**")
        c = r.get("cpu_us")
        cpu_s = f"{c['server']:.0f} + {c['postgres']:.0f} + {c['other']:.0f}" if c else "n/a"
        busy = f"{r['cpu_busy'] * 100:.0f}%" if r.get("cpu_busy") is not None else "n/a"
        raw.append(f"| {r['scenario']} | {r['system']} | {r['phase']} | {r['run']} | {fmt(r.get('rate'))} | "
                   f"{fmt(r['rps'])} | {r['requests']} | {fmt(r['p50_ms'], 2)} | {fmt(r['p99_ms'], 2)} | "
                   f"{fmt(r.get('max_ms'), 2)} | {r['errors']} | {cpu_s} | {busy} | {'; '.join(notes)} |")
    raw += ["", "CPU: ticks of quizd's process, of its PostgreSQL (postmaster, backends, and reaped "
            "backends such as pgbench's), and the rest of the machine's busy time (the load "
            "generator and anything else), divided by the requests; for pgbench rows the server "
            "column is quizd idling (pgbench itself is in the last column).", ""]
    for f in sorted(d.glob("perf-*.txt")):
        raw += ["", f.read_text()]
    raw += ["", "## Environment", "", "```", json.dumps(meta, indent=1), "```", ""]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(raw))
    print(f"\nraw results: {out}", file=sys.stderr)


# ---------------------------------------------------------------------------------------------


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)

    def common(sp, db=False):
        sp.add_argument("--dir", required=True)
        if db:
            sp.add_argument("--psql", default="psql")
            sp.add_argument("--socket", required=True)

    sp = sub.add_parser("setup")
    common(sp, db=True)
    sp.add_argument("--base", required=True)
    sp.add_argument("--learners", type=int, default=32)
    sp.set_defaults(fn=cmd_setup)

    sp = sub.add_parser("tokens")
    common(sp)
    sp.add_argument("--max-age", type=float, default=0)
    sp.set_defaults(fn=cmd_tokens)

    sp = sub.add_parser("attempts")
    common(sp, db=True)
    sp.add_argument("--kind", choices=["b", "c", "p", "t"], required=True)
    sp.add_argument("--count", type=int, required=True)
    sp.add_argument("--locale", default="bn")
    sp.add_argument("--threads", type=int, default=4)
    sp.add_argument("--seed", type=int, default=int(time.time()))
    sp.set_defaults(fn=cmd_attempts)

    sp = sub.add_parser("count")
    common(sp)
    sp.add_argument("key")
    sp.set_defaults(fn=cmd_count)

    sp = sub.add_parser("pg-answers")
    common(sp, db=True)
    sp.set_defaults(fn=cmd_pg_answers)

    sp = sub.add_parser("pgbench")
    common(sp)
    sp.add_argument("--pgbench", default="pgbench")
    sp.add_argument("--scenario", required=True)
    sp.add_argument("--phase", required=True)
    sp.add_argument("--run", default="1")
    sp.add_argument("rest", nargs=argparse.REMAINDER)
    sp.set_defaults(fn=cmd_pgbench)

    sp = sub.add_parser("answer-variant")
    sp.add_argument("--sql", required=True)
    sp.add_argument("--out", required=True)
    sp.add_argument("--drop", nargs="*", choices=sorted(ANSWER_PARTS), default=[])
    sp.set_defaults(fn=cmd_answer_variant)

    sp = sub.add_parser("cpu-snap")
    sp.add_argument("--pid", type=int, required=True)
    sp.add_argument("--server", type=int, required=True)
    sp.add_argument("--root", type=int, required=True)
    sp.set_defaults(fn=cmd_cpu_snap)

    sp = sub.add_parser("cpu-annotate")
    common(sp)
    sp.add_argument("--pid", type=int, required=True)
    sp.add_argument("--server", type=int, required=True)
    sp.add_argument("--root", type=int, required=True)
    sp.add_argument("--before", required=True)
    sp.set_defaults(fn=cmd_cpu_annotate)

    sp = sub.add_parser("wait-quiet")
    sp.add_argument("--root", type=int, required=True)
    sp.add_argument("--seconds", type=int, required=True)
    sp.set_defaults(fn=cmd_wait_quiet)

    sp = sub.add_parser("check-sql")
    sp.add_argument("--root", required=True)
    sp.set_defaults(fn=cmd_check_sql)

    sp = sub.add_parser("report")
    common(sp)
    sp.add_argument("--out", required=True)
    sp.set_defaults(fn=cmd_report)

    args = p.parse_args()
    if getattr(args, "rest", None) and args.rest[0] == "--":
        args.rest = args.rest[1:]
    args.fn(args)


if __name__ == "__main__":
    main()
