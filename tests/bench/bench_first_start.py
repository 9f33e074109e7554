"""The VS Code extension's first start, as it runs it: from an interpreter that cannot import
plan_lsp to the server's first useful answer. The steps and their argv come from the
extension's own code (client-vscode/out/serverInstall.js: `parseBundle`, `installPlan`;
out/serverLaunch.js: `probeInterpreter`, run by node) against the vsix's `server/` folder as
`npm run package` stages it
(client-vscode/server/: the plan-lsp wheel, the dependencies' wheels, pip's wheel):

- venv: `python3 -I -m venv --clear [--without-pip] DIR`;
- install: pip run from its bundled wheel (or uv, when on PATH) with `--no-index --find-links`;
- first answer: `DIR/bin/python -I -m plan_lsp serve --stdio` answering `initialize`, then
  `planLsp/state` (the state the chat's first card is drawn from), on its first run after the
  install (`--no-compile`: Python compiles what the server imports then).

Side by side in the same run, rounds interleaved:

- reference: a bare `python3 -I -m venv --clear DIR` (with pip, as `python -m venv` is usually
  run) — the ratios are against it;
- before: the previous first start (venv with ensurepip, then `python -m pip install` from the
  same wheels), for the gain.

Nothing here reaches a package index: every install has `--no-index` (pip's configuration and
PIP_* variables are left out). Needs `npm run build` (client-vscode/out/) and a staged
client-vscode/server/ (`npm run package`, or `node scripts/stage-server.mjs`).

Run: .venv/bin/python tests/bench/bench_first_start.py [--quick] [--smoke] [--rounds N]
     [--server DIR]   (another staged server/ folder, e.g. an unpacked vsix's extension/server)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _bench_util import REPO, Result, emit_results, fmt, median, print_table
from bench_startup import Server, start_once

CLIENT = REPO / "client-vscode"
SERVER_DIR = CLIENT / "server"
LAUNCH_JS = CLIENT / "out" / "serverLaunch.js"
INSTALL_JS = CLIENT / "out" / "serverInstall.js"
# The first start's budget: trusting the folder → the setup card (the chat's first state).
TARGET_S = 30.0

PLAN_JS = """
const s = { ...require(process.argv[1]), ...require(process.argv[2]) };
const fs = require('node:fs');
const path = require('node:path');
const [server, python, venv] = process.argv.slice(3);
(async () => {
  const meta = fs.readFileSync(path.join(server, 'bundle.json'), 'utf8');
  const bundle = s.parseBundle(meta, server, fs.existsSync);
  if (!bundle) throw new Error('no server bundle in ' + server);
  const probe = await s.probeInterpreter(python);
  const uv = process.env.BENCH_UV || null;
  const plan = s.installPlan(bundle, probe, venv, { windows: process.platform === 'win32', uv });
  const launch = [s.venvPython(venv, process.platform === 'win32'), ...s.serverArguments([])];
  console.log(JSON.stringify({ plan, launch, probe }));
})().catch((e) => { console.error(String(e)); process.exit(1); });
"""


def offline_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
    return {**env, "PIP_CONFIG_FILE": os.devnull, "PLAN_LSP_CONFIG": os.devnull}


def extension_plan(server: Path, python: str, venv: Path, uv: str | None) -> dict[str, object]:
    env = {**os.environ, **({"BENCH_UV": uv} if uv else {})}
    done = subprocess.run(
        ["node", "-e", PLAN_JS, str(LAUNCH_JS), str(INSTALL_JS), str(server), python, str(venv)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"the extension's install plan failed: {done.stderr.strip()}")
    parsed: dict[str, object] = json.loads(done.stdout)
    return parsed


def timed(argv: list[str], cwd: Path) -> float:
    # uv's cache starts empty every time, as on a first start (pip keeps no cache of wheels
    # installed from a folder).
    env = {**offline_env(), "UV_CACHE_DIR": str(cwd / f"uv-cache-{time.monotonic_ns()}")}
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return elapsed


def first_answer(launch: list[str], workspace: Path) -> float:
    _initialized, useful, _rss, answer = start_once(
        Server("plan-lsp (private venv)", launch), workspace, offline_env()
    )
    if not isinstance(answer, dict) or "mode" not in answer:
        raise SystemExit(f"planLsp/state answered without a mode: {answer!r}")
    return useful


def first_start(
    server: Path, python: str, work: Path, workspace: Path, uv: str | None
) -> dict[str, float]:
    """The extension's steps, timed: venv, install, the first answer."""
    venv = work / "venv"
    shutil.rmtree(venv, ignore_errors=True)
    spec = extension_plan(server, python, venv, uv)
    plan = spec["plan"]
    assert isinstance(plan, dict)
    if plan["source"] != "bundled":
        raise SystemExit(f"the staged wheels do not cover {python}: {plan['reason']}")
    install = plan["install"]
    assert isinstance(install, dict)
    times = {"venv": timed([python, *plan["venv"]], work)}
    times["install"] = timed([install["command"], *install["args"]], work)
    launch = spec["launch"]
    assert isinstance(launch, list)
    times["first answer"] = first_answer([str(a) for a in launch], workspace)
    times["total"] = times["venv"] + times["install"] + times["first answer"]
    return times


def before(python: str, work: Path, wheel: Path, wheels: Path) -> float:
    """The previous first start's venv + install (ensurepip, then pip from the venv)."""
    venv = work / "venv-before"
    shutil.rmtree(venv, ignore_errors=True)
    seconds = timed([python, "-I", "-m", "venv", "--clear", str(venv)], work)
    pip = [str(venv / "bin" / "python"), "-I", "-m", "pip", "install", "--no-input"]
    pip += ["--no-compile", "--no-index", "--find-links", str(wheels), str(wheel)]
    return seconds + timed(pip, work)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--quick", action="store_true", help="2 rounds")
    ap.add_argument("--smoke", action="store_true", help="1 round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--python", default="python3", help="the interpreter the extension finds")
    ap.add_argument("--server", type=Path, default=SERVER_DIR, help="the staged server/ folder")
    args = ap.parse_args(argv)
    rounds = 1 if args.smoke else (2 if args.quick else args.rounds)
    for needed, how in (
        (LAUNCH_JS, "cd client-vscode && npm run build"),
        (INSTALL_JS, "cd client-vscode && npm run build"),
        (args.server / "bundle.json", "cd client-vscode && npm run package"),
    ):
        if not needed.exists():
            print(f"{needed} is missing: run `{how}`", file=sys.stderr)
            return 2
    server = args.server.resolve()
    meta = json.loads((server / "bundle.json").read_text())
    wheel = server / meta["wheel"]
    wheels = server / "wheels"
    uv = shutil.which("uv")
    work = Path(tempfile.mkdtemp(prefix="plan-lsp-bench-first-start-"))
    workspace = work / "workspace"
    workspace.mkdir()
    runs: dict[str, list[float]] = {}
    try:
        for _ in range(rounds):
            reference = work / "venv-reference"
            shutil.rmtree(reference, ignore_errors=True)
            runs.setdefault("reference: python3 -m venv", []).append(
                timed([args.python, "-I", "-m", "venv", "--clear", str(reference)], work)
            )
            for step, seconds in first_start(server, args.python, work, workspace, None).items():
                runs.setdefault(f"first start (pip): {step}", []).append(seconds)
            if uv:
                for step, seconds in first_start(server, args.python, work, workspace, uv).items():
                    runs.setdefault(f"first start (uv): {step}", []).append(seconds)
            runs.setdefault("before: venv + pip install", []).append(
                before(args.python, work, wheel, wheels)
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"first start of the VS Code extension, {rounds} round(s), interpreter {args.python}")
    print(f"wheels: {len(list(wheels.glob('*.whl')))} in {wheels}; uv: {uv or 'not on PATH'}")
    print_table(
        ["step", "median s", "min s", "max s"],
        [(name, fmt(median(v)), fmt(min(v)), fmt(max(v))) for name, v in runs.items()],
    )
    reference_s = median(runs["reference: python3 -m venv"])
    total = median(runs["first start (pip): total"])
    install = median(runs["first start (pip): venv"]) + median(runs["first start (pip): install"])
    results = [
        Result("first start: venv + install + first answer", total, "s", f"≤ {TARGET_S:g} s",
               total <= TARGET_S),
        Result("first start: venv + install", install, "s", "(info)", None),
        Result("first start / bare python3 -m venv", total / reference_s, "x", "(info)", None),
        Result("previous venv + install / this one",
               median(runs["before: venv + pip install"]) / install, "x", "(info)", None),
    ]  # fmt: skip
    if uv:
        uv_install = sum(median(runs[f"first start (uv): {step}"]) for step in ("venv", "install"))
        ratio = install / uv_install
        results.append(Result("venv + install: pip / uv", ratio, "x", "(info)", None))
    emit_results(results)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
