"""`plan-lsp` command line: the only place that parses argv."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from plan_lsp import __version__
from plan_lsp.logs import setup_logging


def _serve_parser(sub: Any) -> None:
    p = sub.add_parser("serve", help="run the language server (stdio by default)")
    transport = p.add_mutually_exclusive_group()
    transport.add_argument("--stdio", action="store_true", help="talk over stdin/stdout")
    transport.add_argument("--tcp", metavar="HOST:PORT", help="listen on a TCP address")
    p.add_argument("--workspace", type=Path, help="workspace folder when the client names none")
    _model_arguments(p)
    p = sub.add_parser(
        "acp", help="run as an Agent Client Protocol agent over stdio (Zed, JetBrains, …)"
    )
    _model_arguments(p)
    p.add_argument(
        "--setup", action="store_true", help="set up the model server in this terminal, then exit"
    )


def _model_arguments(p: argparse.ArgumentParser) -> None:
    """The model and policy flags `serve` and `acp` share."""
    p.add_argument("--provider", choices=["scripted", "openai", "anthropic"])
    p.add_argument("--model")
    p.add_argument("--base-url")
    p.add_argument("--script", type=Path, help="script for the scripted provider")
    p.add_argument("--transcript", type=Path, help="append every model request here (JSONL)")
    p.add_argument("--permission-mode", choices=["ask", "auto_edit", "yolo", "strict"])
    p.add_argument("--plan-shell", choices=["off", "classified", "sandboxed"])
    p.add_argument("--max-steps", type=int)
    p.add_argument("--context-window", type=int, help="the model's context window (tokens)")
    p.add_argument("--log-level", choices=["debug", "info", "warning", "error"])
    p.add_argument("--log-file", type=Path)


def _check_parser(sub: Any) -> None:
    p = sub.add_parser("check", help="classify a shell command or a plan path")
    p.add_argument("what", choices=["command", "plan-path"])
    p.add_argument("rest", nargs=argparse.REMAINDER)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="plan-lsp", description="A language server hosting a coding agent with plan mode."
    )
    parser.add_argument("--version", action="version", version=f"plan-lsp {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    _serve_parser(sub)
    demo = sub.add_parser("demo", help="a complete plan → approve → do session, offline")
    demo.add_argument("--keep", action="store_true", help="keep the temporary project")
    demo.add_argument("--quiet", action="store_true", help="print only the summary")
    _check_parser(sub)
    return parser


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    overrides: dict[str, Any] = {
        "provider": args.provider,
        "model": args.model,
        "base_url": args.base_url,
        "script": args.script,
        "transcript": args.transcript,
        "permission_mode": args.permission_mode,
        "plan_shell": args.plan_shell,
        "max_steps": args.max_steps,
        "context_window": args.context_window,
        "log_level": args.log_level,
        "workspace": getattr(args, "workspace", None),
    }
    return {k: v for k, v in overrides.items() if v is not None}


def serve_acp(args: argparse.Namespace) -> int:
    if args.setup:
        from plan_lsp.acp.setup import run_setup

        return run_setup()
    from plan_lsp.acp import serve as serve_acp_stdio
    from plan_lsp.config import trusted_log_level
    from plan_lsp.policy import sandbox_probe

    # The sandbox self-test starts now, in a process of its own (as for `serve`).
    sandbox_probe.start()
    setup_logging(args.log_level or trusted_log_level() or "info", args.log_file)
    serve_acp_stdio(_overrides(args))
    return 0


def serve(args: argparse.Namespace) -> int:
    from plan_lsp import startup
    from plan_lsp.policy import sandbox_probe

    startup.begin()

    # Every workspace's state reports the sandbox, and build mode uses it too: prove it in a
    # process of its own while this one imports and initializes (policy/sandbox_probe.py).
    sandbox_probe.start()
    from plan_lsp.config import trusted_log_level

    # The command line wins; else the environment or the user's config file. A client's
    # `initializationOptions.logLevel` applies from `initialize` on.
    setup_logging(args.log_level or trusted_log_level() or "info", args.log_file)
    from plan_lsp.server import create_server

    server = create_server(_overrides(args))
    if args.tcp:
        host, _, port = args.tcp.rpartition(":")
        if not host or not port.isdigit():
            print("plan-lsp: --tcp expects HOST:PORT, e.g. 127.0.0.1:2087", file=sys.stderr)
            return 2
        server.start_tcp(host, int(port))
    else:
        server.start_io()
    return 0


def _check_command_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="plan-lsp check command",
        description="Classify shell commands the way plan mode does.",
    )
    p.add_argument(
        "--protection",
        choices=["classified", "sandboxed"],
        default=None,
        help="the rule set: `classified` (strict allow-list, no sandbox) or `sandboxed` "
        "(runs in the sandbox unless it shows an intent to change things); default: what "
        "this machine would use",
    )
    p.add_argument(
        "--stdin-jsonl",
        action="store_true",
        help='read one {"cmd": ...} JSON object per line from stdin',
    )
    p.add_argument("cmd", nargs="?", help="the command line to classify")
    return p


def check(args: argparse.Namespace) -> int:
    if args.what == "command":
        parser = _check_command_parser()
        opts = parser.parse_args(list(args.rest))
        if opts.stdin_jsonl and opts.cmd is not None:
            parser.error("give either CMD or --stdin-jsonl, not both")
        if not opts.stdin_jsonl and opts.cmd is None:
            parser.error("give a command to classify, or --stdin-jsonl")
        from plan_lsp.policy.shell.check_cli import check_command

        return check_command(opts.cmd, stdin_jsonl=opts.stdin_jsonl, protection=opts.protection)
    from plan_lsp.policy.plan_paths import check_plan_path_main

    return check_plan_path_main(list(args.rest))


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "acp":
        return serve_acp(args)
    if args.command == "serve":
        return serve(args)
    if args.command == "check":
        return check(args)
    if args.command == "demo":
        from plan_lsp.demo import run_demo

        return run_demo(keep=args.keep, quiet=args.quiet)
    return 2


if __name__ == "__main__":
    sys.exit(main())
