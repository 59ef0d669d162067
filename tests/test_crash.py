"""Crash suite (issue 8): ``kill -9`` the daemon at random points under load, then restart it
on the same HOOKD_HOME and check what was acknowledged.

"Acknowledged": a hook client got a 200 from the daemon or wrote its spool file (the
generated bash client always does one or the other, then exits 0; its stdout is what
reached the agent), an API call got its 2xx. Checked after every round:

- every hook invocation is stored exactly once (live, or from the spool at restart: the
  delivery id makes a live + spooled copy one row), each question has one
  ``question_pending`` and one ``question_resolved``, one interaction per tool_use_id;
- every acknowledged inbox message exists once; no message reaches an agent twice unless an
  ``inbox_delivered`` event names it ``redelivered``;
- every acknowledged async ask exists, every acknowledged answer is recorded with its
  response_id;
- no event is duplicated (per kind and subject), seqs strictly increase.

And a PermissionRequest hook held for a remote answer when the daemon dies fails open in
time (exit 0, empty stdout, long before its deadline); after the restart the interaction is
still pending, held by no one, and the desk's answer resolves it once.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest

from hookd.config import Home
from hookd.daemonproc import DaemonProcess, wait_until

from .conftest import TUI, hookd_run, settings_command

pytestmark = [pytest.mark.daemon, pytest.mark.slow, pytest.mark.exec_daemon]  # a new interpreter per start: the crash and restart are the point

ROUNDS = int(os.environ.get("HOOKD_CRASH_ROUNDS", "10"))
PRE = json.loads((TUI / "007-PreToolUse.json").read_bytes())
POST = json.loads((TUI / "010-PostToolUse.json").read_bytes())
PERM = json.loads((TUI / "008-PermissionRequest.json").read_bytes())
BASH = json.loads((TUI / "004-PreToolUse.json").read_bytes())
MARK = re.compile(rb"\[human msg (m-\d+) ")
RESULTS = Path(__file__).resolve().parent.parent / "bench" / "results" / "crash.json"


def _payload(base: dict[str, Any], session: str, tool_use_id: str | None) -> bytes:
    d = dict(base, session_id=session)
    if tool_use_id is not None:
        d["tool_use_id"] = tool_use_id
    return json.dumps(d).encode()


def _uds(home: Path, timeout: float = 5) -> httpx.Client:
    return httpx.Client(transport=httpx.HTTPTransport(uds=os.fspath(Home.resolve(home).socket_path)),
                        base_url="http://hookd", timeout=timeout)


def _all_events(home: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    with _uds(home, 30) as c:
        while True:
            r = c.get("/v1/events", params={"after": out[-1]["seq"] if out else 0, "limit": 5000})
            batch = [json.loads(line) for line in r.content.splitlines() if line.strip()]
            if not batch:
                return out
            out += batch


class Ledger:
    """What the load generators were told (acknowledged) and what they saw."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.hooks: list[str] = []          # tool_use_ids of bash-client invocations that exited 0
        self.raw_acked: list[str] = []      # tool_use_ids of raw HTTP hooks answered 200
        self.raw_tried: list[str] = []
        self.stdouts: list[bytes] = []      # what the hooks printed (reached the agent)
        self.messages: list[str] = []       # idempotency keys of messages acknowledged 201/200
        self.asks: list[str] = []           # interaction ids of async asks acknowledged 201
        self.answers: dict[str, str] = {}   # interaction id -> response_id acknowledged 200
        self.errors: list[str] = []
        self.delivered = 0                  # messages that reached an agent (in a hook's stdout)

    def add(self, name: str, value: Any) -> None:
        with self.lock:
            getattr(self, name).append(value)


def _hook_worker(w: int, rnd: int, commands: dict[str, str], cwd: Path, ledger: Ledger, stop: threading.Event) -> None:
    """A simulated agent: AskUserQuestion PreToolUse then PostToolUse through the generated
    command (``sh -c``), a fresh tool_use_id each time."""
    session = f"crash-r{rnd}-w{w}"
    i = 0
    while not stop.is_set():
        tid = f"toolu_crash_r{rnd}_w{w}_{i}"
        for event, base in (("PreToolUse", PRE), ("PostToolUse", POST)):
            r = subprocess.run(["sh", "-c", commands[event]], input=_payload(base, session, tid), cwd=cwd,
                               capture_output=True, timeout=30)
            if r.returncode != 0 or r.stderr:
                ledger.add("errors", f"{event} {tid}: exit {r.returncode} {r.stderr[:200]!r}")
            ledger.add("stdouts", r.stdout)
        ledger.add("hooks", tid)
        i += 1


def _raw_worker(rnd: int, home: Path, ledger: Ledger, stop: threading.Event) -> None:
    """Hooks over raw HTTP (Unix socket, keep-alive): acknowledged when answered 200."""
    i = 0
    c = _uds(home, 5)
    while not stop.is_set():
        tid = f"toolu_raw_r{rnd}_{i}"
        ledger.add("raw_tried", tid)
        try:
            r = c.post("/v1/hooks/claude-code/b1", content=_payload(BASH, f"raw-r{rnd}", tid),
                       headers={"X-Hookd-Delivery": f"raw-{rnd}-{i}"})
            if r.status_code == 200:
                ledger.add("raw_acked", tid)
                ledger.add("stdouts", r.content)
        except httpx.HTTPError:
            time.sleep(0.005)
        i += 1
    c.close()


def _api_worker(rnd: int, home: Path, ledger: Ledger, stop: threading.Event) -> None:
    """Messages for the builders, async asks and their answers."""
    i = 0
    c = _uds(home, 5)
    while not stop.is_set():
        try:
            key = f"k-r{rnd}-{i}"
            r = c.post(f"/v1/builders/b{i % 3}/messages", json={"text": f"message {key}", "id": key})
            if r.status_code in (200, 201):
                ledger.add("messages", key)
            r = c.post("/v1/builders/b1/asks", json={"question": f"q r{rnd} {i}?", "options": ["yes", "no"]})
            if r.status_code == 201:
                iid = r.json()["interaction"]["id"]
                ledger.add("asks", iid)
                rid = f"resp-{iid}"
                a = c.post(f"/v1/interactions/{iid}/answer", json={"answers": {f"q r{rnd} {i}?": "yes"},
                                                                   "response_id": rid})
                if a.status_code == 200:
                    with ledger.lock:
                        ledger.answers[iid] = rid
        except httpx.HTTPError:
            time.sleep(0.005)
        i += 1
    c.close()


def _check(home: Path, ledger: Ledger, spooled_total: list[int]) -> None:
    assert ledger.errors == []
    evs = _all_events(home)
    seqs = [e["seq"] for e in evs]
    assert seqs == sorted(set(seqs))
    by = Counter()
    for e in evs:
        d = e["data"] or {}
        subject = d.get("tool_use_id") or d.get("id")
        if e["kind"] in ("question_pending", "question_resolved", "human_input_requested", "interaction_answered",
                         "inbox_queued", "permission_pending"):
            by[(e["kind"], subject)] += 1
    dups = {k: n for k, n in by.items() if n > 1}
    assert dups == {}, f"duplicated events: {list(dups)[:10]}"
    received = Counter(e["data"].get("tool_use_id") for e in evs if e["kind"] == "hook_received")
    # every bash-client hook is stored exactly once (PreToolUse + PostToolUse)
    lost = [t for t in ledger.hooks if received[t] != 2]
    assert lost == [], f"{len(lost)} hook pairs not stored exactly once: {[(t, received[t]) for t in lost[:5]]}"
    pend = Counter(e["data"].get("tool_use_id") for e in evs if e["kind"] == "question_pending")
    res = Counter(e["data"].get("tool_use_id") for e in evs if e["kind"] == "question_resolved")
    assert all(pend[t] == 1 and res[t] == 1 for t in ledger.hooks)
    # raw HTTP: acknowledged ones stored once; none of the others more than once
    assert [t for t in ledger.raw_acked if received[t] != 1] == []
    assert [t for t in ledger.raw_tried if received[t] > 1] == []
    with _uds(home, 30) as c:
        msgs = c.get("/v1/messages", params={"limit": 100000}).json()
        keys = Counter(m["idem_key"] for m in msgs)
        assert [k for k in ledger.messages if keys[k] != 1] == []
        assert all(n == 1 for k, n in keys.items() if k is not None)  # (answers to asks have no key)
        qs = c.get("/v1/questions", params={"state": "all", "limit": 100_000}).json()  # (default: the newest 1,000)
        ids = Counter(q["id"] for q in qs)
        assert all(n == 1 for n in ids.values())
        tuids = Counter(q["tool_use_id"] for q in qs if q["tool_use_id"])
        assert all(n == 1 for n in tuids.values())
        by_id = {q["id"]: q for q in qs}
        assert [a for a in ledger.asks if a not in by_id] == []
        for iid, rid in ledger.answers.items():
            assert by_id[iid]["state"] == "answered" and by_id[iid]["response_id"] == rid, by_id[iid]
        st = c.get("/v1/status").json()
        assert st["counts"]["spooled"] == 0
    # no message reached an agent twice without a redelivery reason
    seen = Counter(m.decode() for out in ledger.stdouts for m in MARK.findall(out))
    redelivered = {i for e in evs if e["kind"] == "inbox_delivered" for i in e["data"].get("redelivered", [])}
    twice = {m: n for m, n in seen.items() if n > 1 and m not in redelivered}
    assert twice == {}, twice
    ledger.delivered = sum(seen.values())
    delivered_ids = Counter(i for e in evs if e["kind"] == "inbox_delivered" for i in e["data"]["ids"])
    assert all(n == 1 or i in redelivered for i, n in delivered_ids.items())


def test_kill_9_under_load_loses_and_duplicates_nothing_acknowledged(tmp_path: Path) -> None:
    home = tmp_path / "home"
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    rng = random.Random(8)  # fixed: the same kill points in every run
    commands: dict[str, str] = {}
    for b in ("b0", "b1", "b2"):
        assert hookd_run(home, "spawn", b, "--settings-file", os.fspath(tmp_path / f"{b}.json"),
                         "--hold", "0").returncode == 0
    for event in ("PreToolUse", "PostToolUse"):
        commands[event] = settings_command(tmp_path / "b0.json", event)
    ledger = Ledger()
    d = DaemonProcess(home)
    spooled_total: list[int] = []
    kill_points = []
    try:
        d.start()  # each round restarts it after the kill
        for rnd in range(ROUNDS):
            # the daemon about to be killed is the one serving (a second `serve` would refuse
            # and leave the old one running: no kill at all)
            assert _uds(home).get("/v1/status").json()["pid"] == d.proc.pid
            stop = threading.Event()
            workers = [threading.Thread(target=_hook_worker, args=(w, rnd, commands, cwd, ledger, stop)) for w in range(3)]
            workers.append(threading.Thread(target=_raw_worker, args=(rnd, home, ledger, stop)))
            workers.append(threading.Thread(target=_api_worker, args=(rnd, home, ledger, stop)))
            for t in workers:
                t.start()
            at = rng.uniform(0.05, 0.8)
            kill_points.append(round(at, 3))
            time.sleep(at)  # a random point under load (not a synchronisation: any point will do)
            os.kill(d.proc.pid, signal.SIGKILL)
            d.proc.wait()
            # the load goes on against the dead daemon for a while: hook clients spool
            n0 = len(ledger.hooks)
            wait_until(lambda: len(ledger.hooks) >= n0 + 3, 30, what="hooks run while the daemon is down")
            stop.set()
            for t in workers:
                t.join(60)
            spooled_total.append(len(list(Home.resolve(home).spool_root.glob("*/*.json"))))
            d.start()  # same home: ingests the spool
            wait_until(lambda: _uds(home).get("/v1/status").json()["counts"]["spooled"] == 0, 30,
                       what="the spool to be ingested")
            _check(home, ledger, spooled_total)
    finally:
        d.stop()
        d.kill()
    assert sum(spooled_total) > 0, "no round exercised the spool path"
    assert len(ledger.hooks) > 10 * ROUNDS and len(ledger.raw_acked) > 0 and len(ledger.messages) > 0
    assert ledger.delivered > 0 and ledger.answers
    summary = {"date": time.strftime("%Y-%m-%d %H:%M:%S %z"), "rounds": ROUNDS, "kill_points_s": kill_points,
               "hook_pairs_via_generated_client": len(ledger.hooks), "raw_hooks_acked": len(ledger.raw_acked),
               "messages_acked": len(ledger.messages), "messages_delivered": ledger.delivered,
               "asks_acked": len(ledger.asks), "answers_acked": len(ledger.answers),
               "spooled_then_ingested": sum(spooled_total), "lost": 0, "duplicated": 0}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(summary, indent=2) + "\n")
    print(f"crash suite: {ROUNDS} kill -9 rounds at {kill_points} s; {len(ledger.hooks)} hook pairs, "
          f"{len(ledger.raw_acked)} raw hooks, {len(ledger.messages)} messages ({ledger.delivered} delivered), "
          f"{len(ledger.asks)} asks, {len(ledger.answers)} answers acknowledged; {sum(spooled_total)} payloads "
          "spooled and ingested; nothing lost or duplicated")


def test_held_permission_request_fails_open_in_time_and_is_reconciled(tmp_path: Path) -> None:
    home = tmp_path / "home"
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    settings = tmp_path / "b1.json"
    assert hookd_run(home, "spawn", "b1", "--settings-file", os.fspath(settings), "--hold", "30").returncode == 0
    d = DaemonProcess(home).start()
    try:
        sess, tid = "held-session", "toolu_held_1"
        r = subprocess.run(["sh", "-c", settings_command(settings, "PreToolUse")], input=_payload(PRE, sess, tid),
                           cwd=cwd, capture_output=True, timeout=30)
        assert r.returncode == 0
        hold_cmd = settings_command(settings, "PermissionRequest")
        assert hold_cmd.split("#")[0].rstrip().endswith("30000 hold")
        p = subprocess.Popen(["sh", "-c", hold_cmd], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, cwd=cwd)
        p.stdin.write(_payload(PERM, sess, None))
        p.stdin.close()
        p.stdin = None  # (communicate below must not flush it)
        wait_until(lambda: d.client().get("/v1/status")["held"], 60, what="the hook to be held")
        t0 = time.monotonic()
        os.kill(d.proc.pid, signal.SIGKILL)
        d.proc.wait()
        out, err = p.communicate(timeout=30)
        elapsed = time.monotonic() - t0
        assert (p.returncode, out, err) == (0, b"", b"")
        assert elapsed < 5, f"the held hook took {elapsed:.1f} s to fail open (deadline 30 s)"
        print(f"held PermissionRequest hook: exit 0, empty stdout, {elapsed * 1000:.0f} ms after kill -9 (deadline 30 s)")
        # its payload was spooled (no reply): the same delivery the daemon stored, so once
        assert len(list(Home.resolve(home).spool_dir("b1").glob("*.json"))) == 1
        d.start()
        wait_until(lambda: d.client().get("/v1/status")["counts"]["spooled"] == 0, 30, what="spool ingestion")
        st = d.client().get("/v1/status")
        assert st["held"] == [] and st["counts"]["pending_interactions"] == 1
        [q] = d.client().get("/v1/questions", state="all")
        assert (q["id"], q["state"]) == (tid, "pending")
        # the desk answers after the restart: resolved once
        r = subprocess.run(["sh", "-c", settings_command(settings, "PostToolUse")], input=_payload(POST, sess, tid),
                           cwd=cwd, capture_output=True, timeout=30)
        assert r.returncode == 0
        [q] = d.client().get("/v1/questions", state="all")
        assert q["state"] == "answered" and q["answers"] == {"Which color do you prefer?": "Blue"}
        evs = _all_events(home)
        kinds = Counter(e["kind"] for e in evs if (e["data"] or {}).get("tool_use_id") == tid
                        or (e["data"] or {}).get("id") == tid)
        assert kinds["question_pending"] == 1 and kinds["question_resolved"] == 1
        assert Counter(e["data"].get("hook_event_name") for e in evs if e["kind"] == "hook_received") == {
            "PreToolUse": 1, "PermissionRequest": 1, "PostToolUse": 1}
    finally:
        d.stop()
        d.kill()
