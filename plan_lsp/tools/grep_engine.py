"""Where a model's grep pattern is matched: never by a backtracking engine in the server.

The pattern comes from the model, which a file it read may have prompt-injected: Python's
`re` backtracks, and `(a+)+$` against forty `a`s and a `!` runs for hours. So:

- open buffers (the text the user sees) are searched by ripgrep reading the text on its
  standard input: the same linear-time engine and dialect as the search on disk;
- without ripgrep, the whole Python search (disk files and buffers) runs in a child
  interpreter that is killed after `SEARCH_TIMEOUT_S`: a pattern that never ends costs that
  child, never the server's event loop or its other threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# One hit: file, 1-based line number, line text.
Match = tuple[Path, int, str]

SEARCH_TIMEOUT_S = 20.0


class GrepFailed(Exception):
    pass


async def _communicate(command: list[str], data: bytes, what: str) -> tuple[int, bytes, bytes]:
    process = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(data), SEARCH_TIMEOUT_S)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
        raise GrepFailed(
            f"{what} took longer than {SEARCH_TIMEOUT_S:g} s and was stopped; "
            "use a simpler pattern (no nested repetition) or a narrower path"
        ) from None
    finally:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
    return process.returncode or 0, out, err


async def rg_texts(
    rg: str, pattern: str, ignore_case: bool, texts: dict[Path, str], cap: int
) -> list[Match]:
    """Matches in in-memory texts, by ripgrep on its standard input, in path order."""
    found: list[Match] = []
    for path in sorted(texts, key=lambda p: p.as_posix()):
        command = [rg, "--json", "--no-config", *(["-i"] if ignore_case else []), "-e", pattern]
        code, out, err = await _communicate([*command, "-"], texts[path].encode(), "the search")
        if code == 2:
            first = err.decode("utf-8", "replace").strip().splitlines()[:1] or ["ripgrep failed"]
            raise GrepFailed(first[0])
        for raw in out.splitlines():
            event = json.loads(raw)
            if event.get("type") != "match":
                continue
            line = event["data"]["lines"].get("text")
            if line is not None:
                found.append((path, int(event["data"]["line_number"]), line.rstrip("\r\n")))
        if len(found) > cap:
            break
    return found


async def python_search(
    pattern: str,
    ignore_case: bool,
    files: list[Path],
    roots: Sequence[Path],
    texts: dict[Path, str],
    cap: int,
) -> list[Match]:
    """The search without ripgrep, in a child interpreter (see the module's doc): `files`
    read from disk as the tool reads them, `texts` as given; matches in that order."""
    request = {
        "pattern": pattern,
        "ignore_case": ignore_case,
        "files": [str(f) for f in files],
        "roots": [str(r) for r in roots],
        "texts": [[str(p), t] for p, t in texts.items()],
        "cap": cap,
    }
    command = [sys.executable, "-I", "-m", "plan_lsp.tools.grep_engine"]
    code, out, err = await _communicate(command, json.dumps(request).encode(), "the search")
    if code != 0:
        last = err.decode("utf-8", "replace").strip().splitlines()[-1:] or ["the search failed"]
        raise GrepFailed(last[0])
    answer = json.loads(out)
    if "error" in answer:
        raise GrepFailed(answer["error"])
    return [(Path(p), int(n), line) for p, n, line in answer["matches"]]


def _grep_text(path: Path, text: str, regex: re.Pattern[str], limit: int) -> list[Match]:
    found: list[Match] = []
    for number, line in enumerate(text.splitlines(), 1):
        if regex.search(line):
            found.append((path, number, line))
            if len(found) >= limit:
                break
    return found


def search_in_process(request: dict[str, Any]) -> dict[str, Any]:
    """What the child does (never called by the server itself)."""
    from plan_lsp.tools.fs_common import GREP_MAX_FILE_BYTES, looks_binary, open_workspace_file
    from plan_lsp.tools.paths import PathRefused

    try:
        flags = re.IGNORECASE if request["ignore_case"] else 0
        regex = re.compile(request["pattern"], flags)
    except re.error as exc:
        return {"error": f"{request['pattern']!r} is not a valid regex: {exc}"}
    cap = int(request["cap"])
    roots = [Path(r) for r in request["roots"]]
    found: list[Match] = []
    for name in request["files"]:
        path = Path(name)
        try:
            with open_workspace_file(path, roots, max_bytes=GREP_MAX_FILE_BYTES) as handle:
                if looks_binary(handle):
                    continue
                text = handle.read(GREP_MAX_FILE_BYTES + 1).decode("utf-8", errors="replace")
        except (OSError, PathRefused):
            continue
        found.extend(_grep_text(path, text, regex, cap + 1 - len(found)))
        if len(found) > cap:
            break
    for name, text in request["texts"]:
        found.extend(_grep_text(Path(name), text, regex, cap + 1))
    return {"matches": [[str(p), n, line] for p, n, line in found]}


def main() -> None:
    request = json.loads(sys.stdin.buffer.read())
    sys.stdout.write(json.dumps(search_in_process(request)))


if __name__ == "__main__":
    main()
