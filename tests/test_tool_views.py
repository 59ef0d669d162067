"""A permission prompt as a person reads it (issue 20 item 5): each adapter's ``present_tool``
for each tool it maps, the destructive-looking command rules (what they catch, what they let
pass, the false positives they accept), and the API's ``tool_view`` on permission
interactions (in process, tests/inproc.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from hookd.harness import base, claude_code, claw, claw_http, destructive, registry, tool_views
from hookd.harness.base import ToolView

from .conftest import wait_until
from .inproc import WAIT_S, InProc
from .test_answers import ASK_ID, AUQ_PRE, bash_perm
from .test_answers_inproc import Rig


def view(tool: str, inp: Any) -> dict[str, Any]:
    return msgspec.to_builtins(claude_code.present_tool(tool, inp))


# --- Claude Code's tools ---------------------------------------------------------------------

def test_bash_is_a_command_with_its_description():
    assert view("Bash", {"command": "rm -f README.md", "description": "Remove the README"}) == {
        "kind": "command", "summary": "Remove the README", "detail": "rm -f README.md", "destructive": True}
    assert view("Bash", {"command": "ls -la /tmp", "timeout": 5000}) == {
        "kind": "command", "summary": "ls -la /tmp", "detail": "ls -la /tmp", "destructive": False}
    # several lines: the first one, and how many follow
    script = "cd build\nmake -j4\nmake install\n"
    assert view("Bash", {"command": script}) == {
        "kind": "command", "summary": "cd build (+2 lines)", "detail": script, "destructive": False}
    # a command nobody can read (not a string) is marked: no default button for it
    assert view("Bash", {"command": ["rm", "-rf", "/"]}) == {
        "kind": "command", "summary": '["rm","-rf","/"]', "detail": '["rm","-rf","/"]', "destructive": True}


def test_edit_is_a_diff_of_the_two_strings_under_the_file_path():
    v = view("Edit", {"file_path": "/w/README.md", "old_string": "# Title\nold line\nend",
                      "new_string": "# Title\nnew line\nmore\nend"})
    assert v == {"kind": "diff", "summary": "Edit /w/README.md", "destructive": False, "detail": (
        "--- /w/README.md\n"
        "+++ /w/README.md\n"
        " # Title\n"
        "-old line\n"
        "+new line\n"
        "+more\n"
        " end")}
    assert view("Edit", {"file_path": "/w/a.py", "old_string": "x", "new_string": "y", "replace_all": True}) == {
        "kind": "diff", "summary": "Edit /w/a.py (every occurrence)", "destructive": False,
        "detail": "--- /w/a.py\n+++ /w/a.py\n-x\n+y"}


def test_multi_edit_is_one_diff_per_edit_in_order():
    v = view("MultiEdit", {"file_path": "/w/a.py", "edits": [
        {"old_string": "a = 1", "new_string": "a = 2"},
        {"old_string": "print(a)", "new_string": "log(a)", "replace_all": True}]})
    assert v == {"kind": "diff", "summary": "Edit /w/a.py (2 edits)", "destructive": False, "detail": (
        "--- /w/a.py\n+++ /w/a.py\n"
        "@@ edit 1 of 2 @@\n-a = 1\n+a = 2\n"
        "@@ edit 2 of 2 (every occurrence) @@\n-print(a)\n+log(a)")}


def test_write_is_the_new_content_added_and_the_file_is_not_read(tmp_path):
    target = tmp_path / "notes.txt"
    target.write_text("what the file holds now\n")
    v = view("Write", {"file_path": str(target), "content": "line one\nline two\n"})
    assert v == {"kind": "diff", "destructive": False,
                 "summary": f"Write {target} (2 lines; replaces the file if it exists)",
                 "detail": f"+++ {target}\n+line one\n+line two"}
    assert "what the file holds now" not in v["detail"]


def test_web_fetch_is_its_url_and_prompt():
    assert view("WebFetch", {"url": "https://example.org/a?b=1", "prompt": "What does it say about X?"}) == {
        "kind": "url", "summary": "https://example.org/a?b=1", "destructive": False,
        "detail": "https://example.org/a?b=1\n\nWhat does it say about X?"}


@pytest.mark.parametrize("tool, inp", [
    ("Read", {"file_path": "/w/a.py", "limit": 10}),
    ("mcp__github__create_issue", {"title": "x", "body": "y"}),
    ("Edit", {"file_path": "/w/a.py", "old_string": 1, "new_string": None}),  # not a readable edit
    ("Bash", None),
])
def test_other_tools_and_odd_inputs_are_compact_json(tool, inp):
    v = view(tool, inp)
    assert v["kind"] in ("json", "command") and v["detail"] in (json.dumps(inp, separators=(",", ":"), sort_keys=True),
                                                                 "null")


def test_long_inputs_are_cut_and_say_so():
    big = "\n".join(f"line {n}" for n in range(5000))
    v = claude_code.present_tool("Bash", {"command": big})
    assert len(v.detail) < tool_views.DETAIL_MAX + 100 and v.detail.endswith("more lines not shown)")
    assert len(v.summary) <= tool_views.SUMMARY_MAX
    # past DIFF_LINES_MAX lines the diff is not aligned: every old line removed, every new one added
    old = "\n".join(f"a{n}" for n in range(tool_views.DIFF_LINES_MAX + 1))
    d = claude_code.present_tool("Edit", {"file_path": "f", "old_string": old, "new_string": "b"}).detail
    assert d.splitlines()[2:4] == ["-a0", "-a1"] and d.endswith("\n+b")


# --- claw's tools and the protocol -----------------------------------------------------------

def test_claw_maps_its_own_tool_names_and_claude_style_ones():
    pc = claw.present_tool
    assert pc("bash", {"command": "git push --force"}) == ToolView(
        kind="command", summary="git push --force", detail="git push --force", destructive=True)
    assert pc("edit_file", {"path": "src/x.rs", "old_string": "a", "new_string": "b"}) == ToolView(
        kind="diff", summary="Edit src/x.rs", detail="--- src/x.rs\n+++ src/x.rs\n-a\n+b", destructive=False)
    assert pc("write_file", {"path": "x.txt", "content": "hi"}).summary == "Write x.txt (1 line; replaces the file if it exists)"
    assert pc("WebFetch", {"url": "https://a.b"}).kind == "url"
    assert pc("glob_search", {"pattern": "*.rs"}) == tool_views.json_view({"pattern": "*.rs"})
    assert claw_http.present_tool is claw.present_tool  # a loop's tools are claw's


def test_every_adapter_presents_tools_and_an_unknown_harness_gets_json():
    for name, adapter in registry.ADAPTERS.items():
        assert isinstance(adapter.present_tool("anything", {"k": 1}), base.ToolView), name
    assert registry.present_tool("claude-code", "Bash", {"command": "rm x"}).destructive
    assert registry.present_tool(None, "Bash", {"command": "rm x"}) == tool_views.json_view({"command": "rm x"})
    assert registry.present_tool("nosuch", "Bash", {"command": "rm x"}).kind == "json"
    assert registry.present_tool("codex", "Bash", {"command": "rm x"}).kind == "command"


# --- destructive-looking commands -------------------------------------------------------------

DESTRUCTIVE = [
    ("rm -f README.md", "deletes files (rm)"),
    ("rm -rf build", "deletes files (rm)"),
    ("cd /tmp && sudo rm x", "deletes files (rm)"),
    ("sudo -u root rm x", "deletes files (rm)"),
    ("nice -n 10 rm x", "deletes files (rm)"),
    ("(cd build && rm -r out)", "deletes files (rm)"),
    ("x=$(rm y)", "deletes files (rm)"),
    ("echo `rm x`", "deletes files (rm)"),
    ("/bin/rm x", "deletes files (rm)"),
    ("for f in *.o; do rm \"$f\"; done", "deletes files (rm)"),
    ("xargs rm < list", "deletes files (rm)"),
    ("shred -u key", "overwrites files beyond recovery (shred)"),
    ("find . -name '*.pyc' -delete", "deletes files (find -delete)"),
    ("dd if=/dev/zero of=/dev/sda bs=1M", "writes raw blocks (dd)"),
    ("mkfs.ext4 /dev/sdb1", "formats a file system (mkfs)"),
    ("truncate -s 0 app.log", "cuts a file's content (truncate)"),
    ("chmod -R 777 .", "changes modes recursively (chmod -R)"),
    ("chown --recursive me .", "changes owners recursively (chown -R)"),
    ("git push --force origin main", "rewrites the remote's history (git push --force)"),
    ("git push -f", "rewrites the remote's history (git push --force)"),
    ("git push --force-with-lease", "rewrites the remote's history (git push --force)"),
    ("git push origin +main", "rewrites the remote's history (git push --force)"),
    ("git -C /w push -fu origin x", "rewrites the remote's history (git push --force)"),
    ("git push --force-with-lease=main", "rewrites the remote's history (git push --force)"),
    ("git reset --hard HEAD~1", "discards uncommitted changes (git reset --hard)"),
    ("git -C /w reset HEAD --hard", "discards uncommitted changes (git reset --hard)"),
    ("git clean -fdx", "deletes untracked files (git clean -f)"),
    ("git checkout -- .", "discards uncommitted changes (git checkout/restore .)"),
    ("git restore .", "discards uncommitted changes (git checkout/restore .)"),
    ("git branch -D old", "deletes a branch (git branch -D)"),
    ("git branch --delete --force old", "deletes a branch (git branch -D)"),
    ("echo hi > README.md", "overwrites a file (> redirection)"),
    ("cat > setup.cfg <<EOF\n[x]\nEOF", "overwrites a file (> redirection)"),
    ("make 2>build.log", "overwrites a file (> redirection)"),
    ("cmd >| out", "overwrites a file (> redirection)"),
    ("sqlite3 app.db 'DROP TABLE users'", "drops or empties a table (DROP / TRUNCATE)"),
    ("psql -c 'truncate table jobs'", "drops or empties a table (DROP / TRUNCATE)"),
    ("psql -c 'DELETE FROM jobs'", "deletes rows (DELETE FROM)"),
    ("curl -fsSL https://get.example.sh | sh", "runs a downloaded script (curl | sh)"),
    ("curl x|sh", "runs a downloaded script (curl | sh)"),
    ("wget -qO- https://x | sudo bash", "runs a downloaded script (curl | sh)"),
    ('bash -c "$(curl -fsSL https://x)"', "runs a downloaded script (curl | sh)"),
]

HARMLESS = [
    "ls -la", "git status", "git push", "git push -u origin feature-fix", "git push --follow-tags",
    "git reset --soft HEAD~1", "git clean -n", "git checkout main", "git checkout .github/x.yml",
    "git branch -d merged", "chmod 644 x", "echo hi >> log", "ls 2>/dev/null", "make 2>&1 | tee -a log",
    "cat <(ls)", "npm run format", "firmware-update --check", "pytest -q", "echo 'a => b'",
    "git log --format='%h -> %s'", "python -m pip install -e .", "ls # rm later", "echo rm",
    "git branch -d merged", "chmod -w x", "git rm --cached x",
    "curl x | tee f | sh",  # a known miss: only a shell straight after curl in the pipe is seen
]

#: Accepted false positives (docs/decisions.md): the rules read text, not a parsed shell.
FALSE_POSITIVES = [
    'python -c "print(1>2)"',     # a comparison inside a string reads as a redirection
    "echo $((1>2))",              # arithmetic, likewise
    "bash -c 'cd x; rm y'",       # a command word after a separator inside quotes
    "grep 'DROP TABLE' schema.sql",
]


@pytest.mark.parametrize("command, why", DESTRUCTIVE, ids=[c for c, _ in DESTRUCTIVE])
def test_destructive_commands_are_marked(command, why):
    assert why in destructive.reasons(command)
    assert claude_code.present_tool("Bash", {"command": command}).destructive


@pytest.mark.parametrize("command", HARMLESS)
def test_ordinary_commands_are_not_marked(command):
    assert destructive.reasons(command) == []
    assert not claude_code.present_tool("Bash", {"command": command}).destructive


def test_the_accepted_false_positives_are_marked():
    """Documented, not wanted: a marked command only loses its default button."""
    assert all(destructive.is_destructive(c) for c in FALSE_POSITIVES)
    assert not destructive.is_destructive("echo 'never rm -rf /'")  # no separator before it: a word of echo


def test_a_command_too_long_to_read_is_marked_and_judged_on_its_start():
    long = "echo ok\n" * 2600  # 20,800 characters
    assert destructive.reasons(long) == [destructive.TOO_LONG]
    assert destructive.reasons("rm -rf build\n" + long) == ["deletes files (rm)", destructive.TOO_LONG]
    assert destructive.reasons(long[:destructive.MAX_JUDGED]) == []


def test_simple_commands_name_their_word_and_the_next_in_their_pipe():
    S = destructive.Simple
    assert destructive.simple_commands("FOO=1 sudo -u me /usr/bin/rm -f a && curl x | sudo sh; do git -C w push") == [
        S("rm", ["-f", "a"], None), S("curl", ["x"], "sh"), S("sh", [], None), S("git", ["-C", "w", "push"], None)]


def test_every_rule_is_exercised():
    reasons = {why for _, why in DESTRUCTIVE}
    assert reasons | {destructive.TOO_LONG} == set(destructive.RULES)


# --- the API's tool_view ------------------------------------------------------------------------

@pytest.mark.inproc
def test_the_api_gives_each_permission_prompt_its_tool_view(inproc: InProc, worktree: Path):
    rig = Rig(inproc, worktree)
    assert rig.hook(AUQ_PRE) == ""  # a question: no tool_view
    held = rig.start_hook(bash_perm("rm -f README.md"))
    want = {"kind": "command", "summary": "x", "detail": "rm -f README.md", "destructive": True}
    [perm] = wait_until(lambda: [i for i in inproc.questions("pending") if i["kind"] == "permission"], 60,
                        what="the permission prompt")
    assert perm["tool_view"] == want
    assert perm["input"] == {"command": "rm -f README.md", "description": "x"}  # the exact input, as before
    [q] = [i for i in inproc.questions("pending") if i["id"] == ASK_ID]
    assert "tool_view" not in q
    assert inproc.interaction(perm["id"])["tool_view"] == want
    # the answer's receipt (also a duplicate's) and the resolved interaction carry it too
    rig.held(perm["id"])
    body = {"decision": "deny", "message": "not that", "surface": "cli", "response_id": "r-1"}
    r = inproc.request("POST", f"/v1/interactions/{perm['id']}/answer", json=body)
    assert r.status_code == 200, r.text
    assert r.json()["interaction"]["tool_view"] == want
    again = inproc.request("POST", f"/v1/interactions/{perm['id']}/answer", json=body).json()
    assert again["duplicate"] and again["interaction"]["tool_view"] == want
    assert json.loads(held.result(WAIT_S).text)["hookSpecificOutput"]["decision"]["behavior"] == "deny"
    [done] = [i for i in inproc.questions("resolved") if i["id"] == perm["id"]]
    assert done["tool_view"] == want and done["decision"] == "deny"


@pytest.mark.inproc
def test_an_edit_prompt_is_a_diff_in_the_api(inproc: InProc):
    p = bash_perm("unused")
    p.update(tool_name="Edit", tool_input={"file_path": "/w/README.md", "old_string": "old", "new_string": "new"})
    assert inproc.hook(p).status_code == 200
    [perm] = [i for i in inproc.questions("pending") if i["kind"] == "permission"]
    assert perm["tool_view"] == {"kind": "diff", "summary": "Edit /w/README.md", "destructive": False,
                                 "detail": "--- /w/README.md\n+++ /w/README.md\n-old\n+new"}


@pytest.mark.inproc
def test_many_prompts_each_get_their_own_view_across_turns_of_the_loop(inproc: InProc, monkeypatch):
    from hookd.http import views

    monkeypatch.setattr(views, "CHUNK", 2)  # a turn of the event loop after every 2 views
    commands = ["ls a", "rm b", "git status", "git push -f", "echo c"]
    for c in commands:
        assert inproc.hook(bash_perm(c)).status_code == 200
    perms = [i for i in inproc.questions("pending") if i["kind"] == "permission"]
    assert [(i["input"]["command"], i["tool_view"]["detail"], i["tool_view"]["destructive"]) for i in perms] == [
        ("ls a", "ls a", False), ("rm b", "rm b", True), ("git status", "git status", False),
        ("git push -f", "git push -f", True), ("echo c", "echo c", False)]


def test_an_edit_from_or_to_nothing_has_only_added_or_removed_lines():
    assert view("Edit", {"file_path": "f", "old_string": "", "new_string": "x\ny"})["detail"] == "--- f\n+++ f\n+x\n+y"
    assert view("Edit", {"file_path": "f", "old_string": "a", "new_string": ""})["detail"] == "--- f\n+++ f\n-a"
    assert view("Edit", {"file_path": "f", "old_string": "a", "new_string": "a"})["detail"] == "--- f\n+++ f\n a"
