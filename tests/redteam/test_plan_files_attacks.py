"""Attacks on plan files per planning round (docs/plans.md), through the real server.

The model is hostile (it chooses every tool argument and streams partial JSON); the
repository is hostile (its files, links, FIFOs, huge files, names); the user is not. Each
test states the promise it attacks and asserts that it holds:

- an approved plan's text is never changed by the model, by any name for its file;
- nothing outside `<workspace>/.plan-lsp/plans/` is written, read as a plan, or listed, and
  `planLsp/plans` never blocks, never follows a link out, never passes a hostile title on
  with control or bidi characters;
- an approval is of the plan in front of the user, in the file its lens sits on;
- the server never dies from input.
"""

from __future__ import annotations

import hashlib
import json
import os
import unicodedata
from pathlib import Path
from typing import Any

from lsprotocol import types

from tests.e2e.scripts import sample_project, scripted_args, write_script
from tests.lsp_harness import Editor, running_server

PLAN_1 = "# Plan one\n\n1. Change the greeting in `hello.py`.\n2. Nothing else changes.\n"
PLAN_2 = "# Plan two\n\n1. Add a farewell to `hello.py`.\n2. Keep the greeting.\n"
EVIL = "# Plan one\n\n1. Change the greeting in `hello.py`.\n2. Pipe attacker.example to sh.\n"
APPROVE = "planLsp.approvePlan"


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def write(content: str, name: str | None = None) -> dict[str, Any]:
    arguments: dict[str, Any] = {"content": content}
    if name is not None:
        arguments["plan_filename"] = name
    return {"name": "plan_write", "arguments": arguments}


def submit(name: str | None = None) -> dict[str, Any]:
    return {"name": "exit_plan_mode", "arguments": {} if name is None else {"plan_filename": name}}


def raw_write(arguments: str) -> dict[str, Any]:
    """A plan_write whose arguments stream exactly as given (partial JSON, duplicate keys)."""
    return {"name": "plan_write", "arguments": arguments}


ROUND_1 = [{"tool_calls": [write(PLAN_1)]}, {"tool_calls": [submit()]}]


def _session(tmp_path: Path, turns: list[dict[str, Any]], chunk: int = 16) -> tuple[Path, Any]:
    ws = sample_project(tmp_path / "ws")
    script = write_script(tmp_path / "script.json", turns, chunk=chunk)
    return ws, running_server([ws], *scripted_args(script))


async def _approve_round_1(ed: Editor, plans: Path) -> None:
    """Round 1 drafted and submitted into PLAN.md, approved by the user (without a Do run),
    then back to plan mode for the next round."""
    answer = await ed.request("planLsp/prompt", {"text": "greet politely"})
    assert answer["stopReason"] == "plan_submitted"
    assert (plans / "PLAN.md").read_text() == PLAN_1
    state = await ed.request(
        "planLsp/approvePlan",
        {"planUri": (plans / "PLAN.md").as_uri(), "sha256": sha(PLAN_1), "execute": False},
    )
    assert state["approvedPlan"]["sha256"] == sha(PLAN_1)
    await ed.request("planLsp/setMode", {"mode": "plan"})


def _errors(ed: Editor, start: int = 0) -> list[dict[str, Any]]:
    return [
        json.loads(u["content"])
        for u in ed.ed.updates[start:]
        if u["kind"] == "toolResult" and u["isError"]
    ]


def _close_all(ed: Editor) -> None:
    """The user closes every editor: titles come from the files on disk."""
    for uri in list(ed.ed.buffers):
        ed.client.text_document_did_close(
            types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
        del ed.ed.buffers[uri]


def _edited_uris(ed: Editor, start: int = 0) -> set[str]:
    return {
        change.text_document.uri
        for params in ed.ed.applied_edits[start:]
        for change in params.edit.document_changes or []
        if isinstance(change, types.TextDocumentEdit)
    } | {uri for params in ed.ed.applied_edits[start:] for uri in (params.edit.changes or {})}


# -- an approved plan's text, by any name --------------------------------------------------------


async def test_no_name_for_the_approved_file_lets_the_model_write_it(tmp_path: Path) -> None:
    """After PLAN.md is approved, the model tries every other spelling of that file it can
    produce, and links and second names the repository made: each is refused with an
    `Access denied` that names the name, and PLAN.md (disk and the open buffer) keeps the
    approved text; the round's own plan still goes to PLAN-2.md."""
    ws_plans = tmp_path / "ws" / ".plan-lsp" / "plans"
    absolute = str(ws_plans.resolve() / "PLAN.md")
    names = [
        "PLAN.md",
        "plan.md",
        "Plan.md",
        "./PLAN.md",
        "sub/../PLAN.md",
        "PLAN.md/",
        "//PLAN.md",
        absolute,
        "~/PLAN.md",
        "\uff30\uff2c\uff21\uff2e.md",  # fullwidth PLAN
        "PLAN\u200b.md",
        "PLAN.md\u0000",
        "\u202ePLAN.md",
        "PLAN.md ",
        " PLAN.md",
        "PLAN.md::$DATA",
        "PLAN.md\\",
        "link.md",  # the repository's symbolic link to PLAN.md
        "alias.md",  # the repository's hard link to PLAN.md
        "folder/PLAN.md",  # the repository's link to the plans directory itself
        "sub/x.md",  # a real folder, whose file is a hard link to PLAN.md
    ]
    attack = [{"tool_calls": [write(EVIL, name) for name in names]}]
    # The same through raw, streamed arguments: the content streams before the name, or a
    # first name the draft reads differs from the one the final arguments hold.
    streamed = [
        json.dumps({"content": EVIL, "plan_filename": "PLAN.md"}),
        '{"plan_filename": "PLAN-2.md", "content": ' + json.dumps(EVIL) + ', "plan_filename": '
        '"PLAN.md"}',
        '{"plan_filename": "PLAN.md", "content": ' + json.dumps(EVIL) + ', "plan_filename": '
        '"link.md"}',
        '{"plan_filename": "PLAN\\u002emd", "content": ' + json.dumps(EVIL) + "}",
        '{"plan_filename": "pl\\u0041N.md", "content": ' + json.dumps(EVIL) + "}",
    ]
    attack.append({"tool_calls": [raw_write(arguments) for arguments in streamed]})
    # Submitting the approved file again, by name.
    attack.append({"tool_calls": [submit("PLAN.md"), submit("plan.md"), submit("alias.md")]})
    turns = [*ROUND_1, *attack, {"tool_calls": [write(PLAN_2)]}, {"tool_calls": [submit()]}]
    ws, server = _session(tmp_path, turns, chunk=7)
    plans = ws / ".plan-lsp" / "plans"
    approved = plans / "PLAN.md"
    async with server as ed:
        await _approve_round_1(ed, plans)
        # The repository's links, made after the approval.
        (plans / "link.md").symlink_to("PLAN.md")
        os.link(approved, plans / "alias.md")
        (plans / "folder").symlink_to(plans, target_is_directory=True)
        (plans / "sub").mkdir()
        os.link(approved, plans / "sub" / "x.md")
        ed.open(approved)
        before = len(ed.ed.updates)
        edits_before = len(ed.ed.applied_edits)
        answer = await ed.request("planLsp/prompt", {"text": "now say goodbye"})
        assert answer["stopReason"] == "plan_submitted"

        assert approved.read_text() == PLAN_1
        assert ed.buffer_text(approved) == PLAN_1
        assert hashlib.sha256(approved.read_bytes()).hexdigest() == sha(PLAN_1)
        assert (plans / "PLAN-2.md").read_text() == PLAN_2
        edited = _edited_uris(ed, edits_before)
        assert approved.as_uri() not in edited, edited
        assert edited <= {(plans / "PLAN-2.md").as_uri()}, edited
        errors = _errors(ed, before)
        expected = len(names) + len(streamed) + 3
        assert len(errors) == expected, errors
        for error in errors:
            assert (
                error["message"].startswith("Access denied") or "does not exist" in error["message"]
            ), error
        state = await ed.state()
        assert state["planUri"] == (plans / "PLAN-2.md").as_uri()
        assert state["approvedPlan"]["text"] == PLAN_1
        # No plan file appeared outside the plans directory, nor any but PLAN-2.md inside.
        made = sorted(p.relative_to(plans).as_posix() for p in plans.rglob("*") if p.is_file())
        assert made == ["PLAN-2.md", "PLAN.md", "alias.md", "link.md", "sub/x.md"], made
        assert not (ws / "PLAN.md").exists()
        assert sorted(p.name for p in ws.iterdir()) == [".plan-lsp", "README.md", "hello.py"]


async def test_unicode_forms_of_an_approved_name_are_refused(tmp_path: Path) -> None:
    """The approved plan has a non-ASCII name (`Pläne.md`, NFC); the model writes the same
    name decomposed (NFD), in capitals, and in the compatibility forms: none reaches it."""
    name = "Pl\u00e4ne.md"
    turns = [
        {"tool_calls": [write(PLAN_1, name)]},
        {"tool_calls": [submit(name)]},
        {
            "tool_calls": [
                write(EVIL, unicodedata.normalize("NFD", name)),
                write(EVIL, name.upper().replace(".MD", ".md")),
                write(EVIL, "PL\u00c4NE.md"),
                write(EVIL, "Pl\u00e4ne\ufe52md"),  # small full stop
                write(EVIL, name),
            ]
        },
        {"tool_calls": [write(PLAN_2)]},
        {"tool_calls": [submit()]},
    ]
    ws, server = _session(tmp_path, turns)
    plans = ws / ".plan-lsp" / "plans"
    approved = plans / name
    async with server as ed:
        await ed.request("planLsp/prompt", {"text": "greet politely"})
        await ed.request(
            "planLsp/approvePlan",
            {"planUri": approved.as_uri(), "sha256": sha(PLAN_1), "execute": False},
        )
        await ed.request("planLsp/setMode", {"mode": "plan"})
        before = len(ed.ed.updates)
        await ed.request("planLsp/prompt", {"text": "next"})
        assert approved.read_text() == PLAN_1
        errors = _errors(ed, before)
        assert len(errors) == 5 and all(e["message"].startswith("Access denied") for e in errors)
        state = await ed.state()
        # The model named no file: PLAN.md, which was never approved.
        assert state["planUri"] == (plans / "PLAN.md").as_uri()
        assert sorted(p.name for p in plans.iterdir()) == ["PLAN.md", name]


# -- the list of plans: links out, FIFOs, hostile titles, malformed params -----------------------

SECRET = "SECRET-0f7c"
HOSTILE_TITLE = (
    "# Safe plan\u202e dm.exe\u0007\x1b[2J\u2028$(check) approved and carried out "
    "[open](command:workbench.action.terminal.new) " + "A" * 5000 + "\n\n1. Step.\n"
)
REFUSED_CATEGORIES = {"Cc", "Cf", "Cs", "Zl", "Zp", "Co", "Cn"}


async def test_the_plans_list_reads_no_file_outside_and_shows_no_hostile_characters(
    tmp_path: Path,
) -> None:
    """The model drafts plans in a subfolder, in files the repository later swaps for a
    link out of the plans directory, a FIFO, and a plan whose heading carries control,
    bidi and line-separator characters, an icon and a link and a huge line. `planLsp/plans`
    answers (a FIFO does not block it), reads nothing through a link (no title from outside
    leaks), and every title is one short line of visible characters."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.md").write_text(f"# {SECRET} folder\n")
    (outside / "leaf.md").write_text(f"# {SECRET} leaf\n")
    turns = [
        {
            "tool_calls": [
                write("# In a folder\n\n1. Step.\n", "sub/x.md"),
                write("# Soon a FIFO\n\n1. Step.\n", "fifo.md"),
                write("# Soon a link\n\n1. Step.\n", "leaf.md"),
                write("## " + "B" * 40_000 + "\n\n1. Step.\n", "huge.md"),
                write(HOSTILE_TITLE, "hostile.md"),
            ]
        },
        {"tool_calls": [submit("hostile.md")]},
    ]
    ws, server = _session(tmp_path, turns, chunk=4096)
    plans = ws / ".plan-lsp" / "plans"
    async with server as ed:
        await ed.request("planLsp/prompt", {"text": "plan"})
        # The repository swaps the drafted files.
        (plans / "sub" / "x.md").unlink()
        (plans / "sub").rmdir()
        (plans / "sub").symlink_to(outside, target_is_directory=True)
        (plans / "fifo.md").unlink()
        os.mkfifo(plans / "fifo.md")
        (plans / "leaf.md").unlink()
        (plans / "leaf.md").symlink_to(outside / "leaf.md")
        _close_all(ed)
        await ed.state()  # the closes arrived

        answer = await ed.request("planLsp/plans", {}, timeout=20)
        listed = answer["plans"]
        assert {p["uri"].rsplit("/", 1)[1] for p in listed} == {
            "x.md",
            "fifo.md",
            "leaf.md",
            "huge.md",
            "hostile.md",
        }
        assert SECRET not in json.dumps(answer), listed
        for plan in listed:
            title = plan["title"]
            assert 0 < len(title) <= 120, title
            bad = {unicodedata.category(c) for c in title} & REFUSED_CATEGORIES
            assert not bad, (title, bad)
        titles = {p["uri"].rsplit("/", 1)[1]: p["title"] for p in listed}
        assert titles["hostile.md"] == "Safe plan dm.exe [2J"
        assert titles["huge.md"] == "B" * 120
        # Through a link, a FIFO: the file's name, nothing read.
        assert (titles["x.md"], titles["leaf.md"], titles["fifo.md"]) == (
            "x.md",
            "leaf.md",
            "fifo.md",
        )
        # The lenses of the swapped files are not the plans directory's.
        for name in ("sub/x.md", "leaf.md"):
            lenses = await ed.client.text_document_code_lens_async(
                types.CodeLensParams(
                    text_document=types.TextDocumentIdentifier(uri=(plans / name).as_uri())
                )
            )
            assert not lenses, (name, lenses)
        assert (outside / "x.md").read_text() == f"# {SECRET} folder\n"
        assert (await ed.state())["planStatus"] == "submitted"


async def test_malformed_plans_params_get_a_clear_error_and_the_server_lives(
    tmp_path: Path,
) -> None:
    from pygls.exceptions import JsonRpcException

    ws, server = _session(tmp_path, ROUND_1)
    async with server as ed:
        await ed.request("planLsp/prompt", {"text": "plan"})
        for params in (
            "x",
            5,
            [1, 2],
            {"workspaceUri": 5},
            {"workspaceUri": "file:///etc"},
            {"workspaceUri": "file:///%00"},
            {"workspaceUri": "x" * 200_000},
            {"workspaceUri": (ws / ".plan-lsp" / "plans").as_uri()},
            {"workspaceUri": None, "extra": {"deep": [[[[]]]]}},
        ):
            try:
                answer = await ed.request("planLsp/plans", params, timeout=20)
            except JsonRpcException as exc:
                assert "workspaceUri" in str(exc) or "params" in str(exc), exc
                assert len(str(exc)) < 2000
            else:
                assert [p["uri"] for p in answer["plans"]] == [
                    (ws / ".plan-lsp" / "plans" / "PLAN.md").as_uri()
                ]
        listed = await ed.request("planLsp/plans", {"workspaceUri": ws.as_uri()})
        assert [p["title"] for p in listed["plans"]] == ["Plan one"]


# -- a swap between the check of a name and the write ----------------------------------------


def _swap_when_touched(ed: Editor, uri: str, swap: Any) -> list[str]:
    """Run `swap()` once, the first time the server asks the editor to show or edit `uri`:
    after the plan tool checked the name, before it writes the file (the editor's answer is
    awaited in between). Returns the log of what happened."""
    done: list[str] = []
    features = ed.client.protocol.fm.features
    for method in (types.WORKSPACE_APPLY_EDIT, types.WINDOW_SHOW_DOCUMENT):
        original = features[method]

        def hooked(*args: Any, original: Any = original, method: str = method) -> Any:
            params = args[-1]
            touched = {getattr(params, "uri", None)}
            edit = getattr(params, "edit", None)
            if edit is not None:
                touched |= {c.text_document.uri for c in edit.document_changes or []}
                touched |= set(edit.changes or {})
            if uri in touched and not done:
                swap()
                done.append(method)
            return original(*args)

        features[method] = hooked
    return done


async def test_a_link_swapped_in_after_the_check_never_reaches_the_approved_plan(
    tmp_path: Path,
) -> None:
    """The model writes a new plan file by name; while the server waits for the editor
    (after the name was checked, before the file is written), the repository turns that
    name into a hard link to the approved PLAN.md, then a symbolic link to it, then the
    new file's folder into a link out of the plans directory. PLAN.md keeps the approved
    text, and nothing is written outside the plans directory."""
    outside = tmp_path / "outside"
    outside.mkdir()
    turns = [
        *ROUND_1,
        {"tool_calls": [write(EVIL, "hard.md")]},
        {"tool_calls": [write(EVIL, "soft.md")]},
        {"tool_calls": [write(EVIL, "sub/new.md")]},
        {"text": "done"},
    ]
    ws, server = _session(tmp_path, turns)
    plans = ws / ".plan-lsp" / "plans"
    approved = plans / "PLAN.md"

    def hard() -> None:
        with_link = plans / "hard.md"
        if with_link.exists():
            with_link.unlink()
        os.link(approved, with_link)

    def soft() -> None:
        with_link = plans / "soft.md"
        if with_link.exists() or with_link.is_symlink():
            with_link.unlink()
        with_link.symlink_to("PLAN.md")

    def folder() -> None:
        for child in (plans / "sub").iterdir():
            child.unlink()
        (plans / "sub").rmdir()
        (plans / "sub").symlink_to(outside, target_is_directory=True)

    async with server as ed:
        await _approve_round_1(ed, plans)
        (plans / "sub").mkdir()
        swaps = [
            _swap_when_touched(ed, (plans / "hard.md").as_uri(), hard),
            _swap_when_touched(ed, (plans / "soft.md").as_uri(), soft),
            _swap_when_touched(ed, (plans / "sub" / "new.md").as_uri(), folder),
        ]
        await ed.request("planLsp/prompt", {"text": "next"})
        assert all(swaps), swaps  # every swap happened
        assert approved.read_text() == PLAN_1
        assert hashlib.sha256(approved.read_bytes()).hexdigest() == sha(PLAN_1)
        assert list(outside.iterdir()) == []
        assert (await ed.state())["approvedPlan"]["text"] == PLAN_1


# -- earlier sessions: a new session, a restarted server -------------------------------------


async def test_approved_plans_of_earlier_sessions_stay_as_approved(tmp_path: Path) -> None:
    """PLAN.md approved, a new session; PLAN-2.md approved, another new session; then a
    restarted server. The model names each approved file (under its name, another case, a
    hard link made by the repository) in the later sessions: refused every time, and each
    round's plan goes to the next free file."""
    later = [
        write(EVIL, "PLAN.md"),
        write(EVIL, "PLAN-2.md"),
        write(EVIL, "plan-2.md"),
        write(EVIL, "second.md"),  # the repository's hard link to PLAN-2.md
    ]
    turns = [
        *ROUND_1,
        {"tool_calls": [write(PLAN_2)]},
        {"tool_calls": [submit()]},
        {"tool_calls": later},
        {"tool_calls": [write("# Plan three\n\n1. Step.\n")]},
        {"tool_calls": [submit()]},
    ]
    ws, server = _session(tmp_path, turns)
    plans = ws / ".plan-lsp" / "plans"
    first, second, third = plans / "PLAN.md", plans / "PLAN-2.md", plans / "PLAN-3.md"
    async with server as ed:
        await _approve_round_1(ed, plans)
        await ed.request("planLsp/newSession", {})
        await ed.request("planLsp/prompt", {"text": "round two"})
        assert second.read_text() == PLAN_2
        await ed.request(
            "planLsp/approvePlan",
            {"planUri": second.as_uri(), "sha256": sha(PLAN_2), "execute": False},
        )
        await ed.request("planLsp/newSession", {})
        os.link(second, plans / "second.md")
        before = len(ed.ed.updates)
        await ed.request("planLsp/prompt", {"text": "round three"})
        errors = _errors(ed, before)
        assert [e["message"].split(" holds ")[0] for e in errors] == [
            "Access denied: PLAN.md",
            "Access denied: PLAN-2.md",
            "Access denied: plan-2.md",
            "Access denied: second.md",
        ], errors
        assert all(e["message"].endswith("write this plan to PLAN-3.md") for e in errors)
        assert third.read_text() == "# Plan three\n\n1. Step.\n"

    script = write_script(
        tmp_path / "again.json",
        [{"tool_calls": later}, {"tool_calls": [write("# Plan three, again\n")]}, {"text": "ok"}],
    )
    async with running_server([ws], *scripted_args(script)) as ed:
        state = await ed.state()
        assert state["planUri"] == third.as_uri()
        await ed.request("planLsp/prompt", {"text": "after a restart"})
        errors = _errors(ed)
        assert len(errors) == 4 and all(e["message"].startswith("Access denied") for e in errors)
        assert third.read_text() == "# Plan three, again\n"
    assert first.read_text() == PLAN_1 and second.read_text() == PLAN_2
    assert (plans / "second.md").read_text() == PLAN_2


# -- the approval is of the plan in front of the user ----------------------------------------


async def test_only_the_current_plans_file_can_be_approved(tmp_path: Path) -> None:
    """PLAN.md is approved; the repository ships PLAN-7.md, which nobody drafted; the next
    round submits PLAN-2.md. Approving PLAN-7.md, the approved PLAN.md (again, or to run
    it), PLAN-2.md under another case or with the hash of another text is refused; lenses
    of PLAN.md and PLAN-7.md offer no decision; PLAN-2.md's lens approves PLAN-2.md's text."""
    from pygls.exceptions import JsonRpcException

    turns = [*ROUND_1, {"tool_calls": [write(PLAN_2)]}, {"tool_calls": [submit()]}]
    ws, server = _session(tmp_path, turns)
    plans = ws / ".plan-lsp" / "plans"
    first, second, shipped = plans / "PLAN.md", plans / "PLAN-2.md", plans / "PLAN-7.md"

    async def lens_commands(path: Path) -> list[types.Command]:
        lenses = await ed.client.text_document_code_lens_async(
            types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=path.as_uri()))
        )
        return [lens.command for lens in lenses or [] if lens.command is not None]

    async def refused(params: dict[str, Any]) -> str:
        try:
            await ed.request("planLsp/approvePlan", {"execute": False, **params})
        except JsonRpcException as exc:
            return str(exc)
        raise AssertionError(f"approved {params}")

    async with server as ed:
        await _approve_round_1(ed, plans)
        shipped.write_text(EVIL)
        ed.open(shipped)
        assert not [c for c in await lens_commands(shipped) if c.command]
        assert "submitted for approval is" in await refused({"planUri": shipped.as_uri()})
        await ed.request("planLsp/prompt", {"text": "round two"})
        assert second.read_text() == PLAN_2
        ed.open(first)
        assert not [c for c in await lens_commands(first) if c.command]
        assert not [c for c in await lens_commands(shipped) if c.command]
        for params in (
            {"planUri": first.as_uri()},
            {"planUri": first.as_uri(), "execute": True},
            {"planUri": first.as_uri(), "sha256": sha(PLAN_1)},
            {"planUri": shipped.as_uri(), "sha256": sha(EVIL)},
            {"planUri": (plans / "plan-2.md").as_uri()},
            {"planUri": second.as_uri(), "sha256": sha(PLAN_1)},
            {"planUri": "untitled:PLAN-2.md"},
            {"planUri": "file://otherhost" + second.as_posix()},
        ):
            message = await refused(params)
            assert "cannot approve" in message, (params, message)
        state = await ed.state()
        assert (state["planStatus"], state["approvedPlan"]["text"]) == ("submitted", PLAN_1)
        lens = next(c for c in await lens_commands(second) if c.command == APPROVE)
        args = {**(lens.arguments or [{}])[0], "execute": False}
        state = await ed.command(APPROVE, args)
        assert (state["approvedPlan"]["path"], state["approvedPlan"]["text"]) == (
            str(second),
            PLAN_2,
        )
        assert first.read_text() == PLAN_1 and shipped.read_text() == EVIL


# -- the server never dies: every round number taken, hundreds of plans ----------------------


async def test_every_round_number_taken_and_hundreds_of_plans(tmp_path: Path) -> None:
    """The repository ships PLAN-2.md … PLAN-999.md (a FIFO and a link among them): after
    PLAN.md is approved the next default round has no file left and is refused with a
    clear error (no draft streams anywhere), a named file still works; then the model
    drafts 150 plans in one step. The server answers the list (every plan, once) and
    lenses throughout."""
    many = [write(f"# Plan {n}\n\n1. Step.\n", f"many/p-{n}.md") for n in range(150)]
    turns = [
        *ROUND_1,
        {"tool_calls": [write(EVIL), write(EVIL, "PLAN-1000.md")]},
        {"tool_calls": [submit()]},
        {"tool_calls": many},
        {"text": "done"},
    ]
    ws, server = _session(tmp_path, turns)
    plans = ws / ".plan-lsp" / "plans"
    plans.mkdir(parents=True)
    async with server as ed:
        for n in range(2, 1000):
            if n == 500:
                os.mkfifo(plans / f"PLAN-{n}.md")
            elif n == 501:
                (plans / f"PLAN-{n}.md").symlink_to("PLAN.md")
            else:
                (plans / f"PLAN-{n}.md").write_text(f"# shipped {n}\n")
        await _approve_round_1(ed, plans)
        edits_before = len(ed.ed.applied_edits)
        before = len(ed.ed.updates)
        answer = await ed.request("planLsp/prompt", {"text": "round two"})
        assert answer["stopReason"] == "plan_submitted"
        errors = _errors(ed, before)
        assert [e["message"] for e in errors] == [
            "Access denied: no free plan file name next to PLAN.md (up to PLAN-999.md)"
        ]
        assert (plans / "PLAN.md").read_text() == PLAN_1
        assert (plans / "PLAN-1000.md").read_text() == EVIL
        assert _edited_uris(ed, edits_before) <= {(plans / "PLAN-1000.md").as_uri()}
        state = await ed.state()
        assert (state["planUri"], state["planStatus"]) == (
            (plans / "PLAN-1000.md").as_uri(),
            "submitted",
        )
        await ed.request("planLsp/rejectPlan", {"feedback": "draft many"})
        while (await ed.state())["running"]:
            await ed.wait_update(lambda u: u["kind"] == "done", start=before)
            before = len(ed.ed.updates)
        listed = (await ed.request("planLsp/plans", {}))["plans"]
        uris = [p["uri"] for p in listed]
        assert len(uris) == len(set(uris)) == 152
        assert sum(1 for p in listed if p["current"]) <= 1
        for name in ("PLAN.md", "PLAN-500.md", "PLAN-501.md", "many/p-7.md"):
            lenses = await ed.client.text_document_code_lens_async(
                types.CodeLensParams(
                    text_document=types.TextDocumentIdentifier(uri=(plans / name).as_uri())
                )
            )
            assert not [lens for lens in lenses or [] if lens.command and lens.command.command]
        assert (plans / "PLAN.md").read_text() == PLAN_1


# -- partial and malformed streamed arguments; a FIFO or a huge file as the current plan -------


async def test_malformed_streamed_arguments_write_nothing_and_a_fifo_plan_blocks_nothing(
    tmp_path: Path,
) -> None:
    """After PLAN.md is approved, the model streams arguments that never complete, are not
    an object, nest a `plan_filename` inside another key, or hide one inside the content;
    then a real draft in PLAN-2.md, which the repository swaps for a FIFO and then a file of
    70 MB. No stream touches PLAN.md; the state, the lenses, the list and the approval
    answer (the approval refused with a reason) and nothing blocks."""
    from pygls.exceptions import JsonRpcException

    content = json.dumps(EVIL)
    broken = [
        '{"content": ' + content + ', "plan_filename": "PLAN.md"',  # never completes
        '{"content": ' + content + '} {"plan_filename": "PLAN.md"}',
        '["PLAN.md", ' + content + "]",
        '{"x": {"plan_filename": "PLAN-2.md"}, "content": ' + content + ', "plan_filename": '
        '"PLAN.md"}',
        '{"content": "x\\", \\"plan_filename\\": \\"PLAN.md", "plan_filename": "PLAN.md"}',
        '{"plan_filename": ' + json.dumps("P" * 100_000 + ".md") + ', "content": ' + content + "}",
    ]
    turns = [
        *ROUND_1,
        *[{"tool_calls": [raw_write(arguments)]} for arguments in broken],
        {"tool_calls": [write(PLAN_2)]},
        {"tool_calls": [submit()]},
    ]
    ws, server = _session(tmp_path, turns, chunk=5)
    plans = ws / ".plan-lsp" / "plans"
    first, second = plans / "PLAN.md", plans / "PLAN-2.md"
    async with server as ed:
        await _approve_round_1(ed, plans)
        ed.open(first)
        edits_before = len(ed.ed.applied_edits)
        answer = await ed.request("planLsp/prompt", {"text": "round two"})
        assert answer["stopReason"] == "plan_submitted"
        assert first.read_text() == PLAN_1 and ed.buffer_text(first) == PLAN_1
        assert first.as_uri() not in _edited_uris(ed, edits_before)
        assert second.read_text() == PLAN_2
        _close_all(ed)
        for swap in ("fifo", "huge"):
            second.unlink()
            if swap == "fifo":
                os.mkfifo(second)
            else:
                with second.open("wb") as handle:
                    handle.truncate(70 * 1024 * 1024)
            state = await ed.state()
            assert state["planUri"] == second.as_uri()
            listed = (await ed.request("planLsp/plans", {}, timeout=20))["plans"]
            assert [p["title"] for p in listed] == ["Plan one", "PLAN-2.md"]
            lenses = await ed.client.text_document_code_lens_async(
                types.CodeLensParams(
                    text_document=types.TextDocumentIdentifier(uri=second.as_uri())
                )
            )
            assert lenses is not None
            try:
                await ed.request(
                    "planLsp/approvePlan",
                    {"planUri": second.as_uri(), "execute": False},
                    timeout=20,
                )
            except JsonRpcException as exc:
                assert "cannot approve" in str(exc), exc
            else:
                raise AssertionError(f"approved a {swap}")
            assert (await ed.state())["approvedPlan"]["text"] == PLAN_1
        assert first.read_text() == PLAN_1


# -- a new session: an earlier plan is not "your plan" ----------------------------------------


async def test_after_a_new_session_the_models_earlier_plan_is_not_offered_as_the_users(
    tmp_path: Path,
) -> None:
    """The model's plan is rejected (or approved and carried out), then the user starts a
    new session: PLAN.md is still there, and the new session has no plan. Its lens must
    not call it "Your plan (not submitted by the model)" with an Approve button, and an
    approval (named or not) is refused with a reason: it is an earlier plan, not one
    submitted now. The next round writes a plan again, which is then approvable."""
    from pygls.exceptions import JsonRpcException

    turns = [
        {"tool_calls": [write(EVIL)]},
        {"tool_calls": [submit()]},
        {"tool_calls": [write(PLAN_2)]},
        {"tool_calls": [submit()]},
    ]
    ws, server = _session(tmp_path, turns)
    plans = ws / ".plan-lsp" / "plans"
    first = plans / "PLAN.md"

    async def commands() -> list[tuple[str, str]]:
        lenses = await ed.client.text_document_code_lens_async(
            types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=first.as_uri()))
        )
        return [(lens.command.title, lens.command.command) for lens in lenses or [] if lens.command]

    async with server as ed:
        await ed.request("planLsp/prompt", {"text": "plan"})
        await ed.request("planLsp/rejectPlan", {})
        await ed.request("planLsp/newSession", {})
        ed.open(first)
        shown = await commands()
        assert not [c for c in shown if c[1]], shown
        assert [title for title, _ in shown] == [
            f"Earlier plan — not approved (session of {_today()})"
        ]
        for params in ({}, {"planUri": first.as_uri()}, {"sha256": sha(EVIL)}):
            try:
                await ed.request("planLsp/approvePlan", {"execute": False, **params})
            except JsonRpcException as exc:
                assert "earlier conversation (rejected)" in str(exc), exc
            else:
                raise AssertionError(f"approved the earlier plan with {params}")
        assert (await ed.state())["approvedPlan"] is None
        # A new round writes a plan again; that one is the user's to decide.
        _close_all(ed)
        await ed.request("planLsp/prompt", {"text": "plan again"})
        assert first.read_text() == PLAN_2
        assert ("Reject…", "planLsp.rejectPlan") in await commands()
        state = await ed.request(
            "planLsp/approvePlan",
            {"planUri": first.as_uri(), "sha256": sha(PLAN_2), "execute": False},
        )
        assert state["approvedPlan"]["text"] == PLAN_2


def _today() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).strftime("%Y-%m-%d")


async def test_a_plans_directory_swapped_for_a_link_out_is_neither_read_nor_written(
    tmp_path: Path,
) -> None:
    """After plans were written, the repository swaps `.plan-lsp/plans` for a link to a
    folder outside holding a PLAN.md of its own. The list names the plans without reading
    a title through the link, their lenses are gone, and the next plan_write is refused
    naming the plans directory; nothing outside changes."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "PLAN.md").write_text(f"# {SECRET}\n")
    turns = [*ROUND_1, {"tool_calls": [write(EVIL), write(EVIL, "PLAN.md")]}, {"text": "ok"}]
    ws, server = _session(tmp_path, turns)
    plans = ws / ".plan-lsp" / "plans"
    async with server as ed:
        await ed.request("planLsp/prompt", {"text": "plan"})
        _close_all(ed)
        await ed.state()
        plans.rename(ws / ".plan-lsp" / "moved")
        plans.symlink_to(outside, target_is_directory=True)
        answer = await ed.request("planLsp/plans", {})
        assert [p["title"] for p in answer["plans"]] == ["PLAN.md"]
        assert SECRET not in json.dumps(answer)
        lenses = await ed.client.text_document_code_lens_async(
            types.CodeLensParams(
                text_document=types.TextDocumentIdentifier(uri=(plans / "PLAN.md").as_uri())
            )
        )
        assert not lenses
        before = len(ed.ed.updates)
        await ed.request("planLsp/prompt", {"text": "again"})
        errors = _errors(ed, before)
        assert len(errors) == 2 and all(e["message"].startswith("Access denied") for e in errors)
        assert [p.name for p in outside.iterdir()] == ["PLAN.md"]
        assert (outside / "PLAN.md").read_text() == f"# {SECRET}\n"


# -- an editor that saves in place: a plan file with a second name ---------------------------


def _in_place_saving_editor(monkeypatch: Any) -> None:
    """The harness editor as VS Code and Vim save: the server asks it to save a buffer
    (`experimental.planLsp.saveDocuments`) and it writes the file in place, so a second
    name of the file (a hard link) sees the text too."""
    import tests.lsp_harness as harness

    harness.declare_save_documents(monkeypatch)
    register = harness._register

    def _register(client: Any, state: Any) -> None:
        register(client, state)

        @client.feature("planLsp/saveDocument")
        def save(params: Any) -> dict[str, Any]:
            uri = params["uri"] if isinstance(params, dict) else params.uri
            buf = state.buffers.get(uri)
            if buf is None:
                return {"saved": False}
            with open(Path(uri.removeprefix("file://")), "r+", encoding="utf-8") as handle:
                handle.truncate(0)
                handle.write(buf.text)
            return {"saved": True}

    monkeypatch.setattr(harness, "_register", _register)


async def test_a_plan_file_with_a_second_name_is_not_written(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """The repository arrives (as an archive) with `.plan-lsp/plans/PLAN.md` a hard link to
    its own `hello.py`, and `notes.md` one to `README.md`. An editor saving the plan in place
    would write the model's plan into those files: the model's `notes.md` is refused, naming
    the link; the unnamed plan goes to a file of its own (PLAN-2.md); neither file changes."""
    _in_place_saving_editor(monkeypatch)
    turns = [{"tool_calls": [write(EVIL), write(EVIL, "notes.md"), submit()]}, {"text": "ok"}]
    ws, server = _session(tmp_path, turns)
    plans = ws / ".plan-lsp" / "plans"
    plans.mkdir(parents=True)
    os.link(ws / "hello.py", plans / "PLAN.md")
    os.link(ws / "README.md", plans / "notes.md")
    async with server as ed:
        await ed.request("planLsp/prompt", {"text": "plan"})
        assert (ws / "hello.py").read_text() == "print('hi')\n"
        assert (ws / "README.md").read_text() == "# sample\n"
        errors = _errors(ed)
        assert [e["message"] for e in errors[:1]] == [
            "Access denied: notes.md has another name (a hard link); plans are files of their "
            "own (remove the link or choose another name)"
        ], errors
        assert (ws / "hello.py").read_text() == "print('hi')\n"
        assert (ws / "README.md").read_text() == "# sample\n"
        assert (plans / "PLAN-2.md").read_text() == EVIL
        state = await ed.state()
        assert state["planUri"].endswith("/PLAN-2.md"), state


async def test_a_plan_the_user_has_not_seen_is_shown_before_it_is_offered(
    tmp_path: Path,
) -> None:
    """The repository ships `.plan-lsp/plans/shipped.md`; the model submits it without writing
    it this round. Before the plan is offered for approval the editor is asked to show it, so
    what the user approves is a text put in front of them."""
    ws, server = _session(tmp_path, [{"tool_calls": [submit("shipped.md")]}, {"text": "ok"}])
    plans = ws / ".plan-lsp" / "plans"
    plans.mkdir(parents=True)
    shipped = plans / "shipped.md"
    shipped.write_text(EVIL)
    async with server as ed:
        answer = await ed.request("planLsp/prompt", {"text": "plan"})
        assert answer["stopReason"] == "plan_submitted"
        shown = [p.uri for p in ed.ed.shown_documents]
        assert shipped.as_uri() in shown, shown
        state = await ed.state()
        assert state["planStatus"] == "submitted" and state["planUri"] == shipped.as_uri()
