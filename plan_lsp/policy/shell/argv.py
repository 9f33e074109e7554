"""`sandboxed`: apply what the program database (`programs.toml`) knows of a command to its
arguments: options, values, subcommands and wrappers that show what it would change. The
words are walked as for `classified` (`argwalk.py`); here an unknown option is harmless."""

from __future__ import annotations

from typing import Protocol

from plan_lsp.policy.shell.argwalk import ArgWalk, Stop
from plan_lsp.policy.shell.database import Effect, Program, Wrapper, database
from plan_lsp.policy.shell.model import Findings, caps_text
from plan_lsp.policy.shell.scripts import check_script
from plan_lsp.policy.shell.words import Word

_ENV = frozenset({"modify:environment"})
_EXEC = frozenset({"execute:subprocess"})
_STDIN_ARGS = Word("<arguments read from stdin>", None)
# Flags that hand a checked command its script instead of the first operand.
_SCRIPT_FLAGS = {"sed": frozenset({"-e", "--expression"}), "awk": frozenset[str]()}


class CommandWalker(Protocol):
    """Where a command's arguments are checked (`walker.Walker`)."""

    @property
    def f(self) -> Findings: ...

    def simple(self, name: Word, args: list[Word]) -> None:
        """Check the command a wrapper runs."""

    def shell_string(self, source: str) -> None:
        """Check a string another program hands to a shell."""

    def local_names(self, names: list[Word], cmd: str) -> None:
        """Check the names of variables a command assigns."""


def classify_argv(cmd: str, args: list[Word], w: CommandWalker) -> None:
    prof = database().programs.get(cmd)
    if prof is None:
        w.f.unproven(f"`{cmd}` is not a command this checker knows, so it is not allowed")
        return
    _Apply(cmd, prof, args, w).run()


class _Apply(ArgWalk[Word]):
    def __init__(self, label: str, prof: Program, args: list[Word], w: CommandWalker) -> None:
        super().__init__(prof, args)
        self.label = label
        self.prof = prof
        self.w = w
        self.drops: set[str] = set()
        self.scripts: list[Word] = []

    def run(self) -> None:
        prof, w = self.prof, self.w
        if prof.exact and all(a.value is not None and not a.glob for a in self.args):
            values = tuple(a.value for a in self.args)
            if values in prof.exact:
                self.base(prof.exact_caps, "with these arguments only prints information")
                return
        if prof.anything:
            w.f.add(
                _EXEC,
                f"`{self.label}` {prof.why}; the sandbox contains it (execute:subprocess)",
            )
            return
        if prof.wrapper is not None:
            self.wrapper(prof.wrapper)
            return
        positionals = self.parse()
        if positionals is None:
            return
        self.base(prof.caps - self.drops, prof.why)
        self.check_positionals(positionals)

    def base(self, caps: frozenset[str] | set[str], why: str) -> None:
        needs = caps_text(caps) if caps else "no capabilities"
        text = f"`{self.label}` {why} ({needs})" if why else f"`{self.label}` needs {needs}"
        self.w.f.add(frozenset(caps), text)

    # Options ------------------------------------------------------------------------
    def parse(self) -> list[Word] | None:
        """Walk the arguments; returns the positionals, or None when a subcommand took over
        (or an option not allowed stopped the walk)."""
        args = self.args
        i = 0
        first = args[0] if args else None
        try:
            if self.prof.old_style and first is not None and first.value and not first.glob:
                if not first.value.startswith("-"):
                    # `tar tzf A`: the letters are flags; those taking a value take the next
                    # words.
                    i = 1
                    for letter in first.value:
                        i = self.option("-" + letter, None, i, first.value)
            positionals, sub_at = self.walk(i)
        except Stop:
            return None
        if sub_at is not None:
            self.subcommand(args[sub_at], sub_at + 1)
            return None
        return positionals

    # The walk's questions (argwalk.py) ------------------------------------------------
    def static(self, word: Word) -> str | None:
        return None if word.glob else word.value

    def run_time_word(self, word: Word, ended: bool) -> None:
        if self.prof.risky and not word.operand_safe and not ended:
            self.w.f.unproven(
                f"`{word.text}` is only known at run time and could turn into a flag of "
                f"`{self.label}` that changes things; quote it, give it a fixed "
                "directory prefix, or put it after `--`"
            )

    def takes_rest(self, name: str) -> bool:
        return _takes_value(self.prof, name)

    def lookup(self, name: str) -> tuple[str, Effect | None, bool, bool]:
        """(canonical name, effect, takes a value, known)."""
        prof = self.prof
        spec = prof.effects.get(name)
        if spec is not None:
            return name, spec, spec.value, True
        option = prof.options.get(name)
        if option is not None:
            return name, None, option.takes_next, True
        if name.startswith("--") and len(name) > 3:
            # GNU getopt and git accept unambiguous prefixes: `--out` is `--output`.
            matches = [f for f in prof.long_names if f.startswith(name)]
            for match in matches:
                if match in prof.effects:
                    found = prof.effects[match]
                    return match, found, found.value, True
            if matches and not prof.closed:
                return matches[0], None, _takes_value(prof, matches[0]), True
        return name, None, False, False

    def option(self, name: str, attached: str | None, i: int, word: str) -> int:
        canonical, spec, takes, known = self.lookup(name)
        if not known and self.prof.closed:
            self.w.f.unproven(
                f"`{name}` is not an option of `{self.label}` known to be harmless, "
                "so it is not allowed"
            )
            raise Stop
        self.seen.add(canonical)
        value: Word | None = None
        if takes:
            if attached is not None:
                value = Word(attached, attached)
            elif i < len(self.args):
                nxt = self.args[i]
                # A value that looks like a flag is also checked as one on risky commands:
                # a mistaken belief that an option takes a value must not hide `-delete`.
                looks_like_flag = (nxt.value or "-").startswith("-") and nxt.value != "-"
                if not (self.prof.risky and looks_like_flag):
                    value = nxt
                    i += 1
        if self.prof.script is not None and canonical in _SCRIPT_FLAGS[self.prof.script]:
            if value is not None:
                self.scripts.append(value)
        if spec is None:
            return i
        # With `ok_values`, only those values drop capabilities; any other adds the effect's.
        by_value = takes and bool(spec.ok_values)
        if not by_value or (value is not None and value.value in spec.ok_values):
            self.drops |= spec.drop
            if by_value:
                return i
        if spec.caps:
            shown = f"{name} {value.text if value is not None else ''}" if by_value else name
            alias = "" if name == canonical else f" (short for `{canonical}`)"
            self.w.f.add(
                spec.caps,
                f"`{shown}`{alias} makes `{self.label}` {spec.why} ({caps_text(spec.caps)})",
            )
        return i

    # Positionals and subcommands ----------------------------------------------------
    def subcommand(self, word: Word, i: int) -> None:
        prof, w = self.prof, self.w
        name = word.value
        if name is None or word.glob:
            w.f.unproven(
                f"the subcommand of `{self.label}` in `{word.text}` is only known at run time"
            )
            return
        sub = prof.subcommands.get(name)
        label = f"{self.label} {name}"
        if sub is None:
            if prof.other_sub is None:
                w.f.unproven(f"`{label}` is not a subcommand of `{self.label}` this checker knows")
            elif prof.other_sub:
                w.f.add(
                    prof.other_sub, f"`{label}` {prof.other_sub_why} ({caps_text(prof.other_sub)})"
                )
            return
        _Apply(label, sub, self.args[i:], w).run()

    def check_positionals(self, positionals: list[Word]) -> None:
        prof, w = self.prof, self.w
        if prof.subcommands and not positionals:
            return
        if prof.assigns_names:
            w.local_names(positionals, self.label)
        if prof.url_schemes:
            for p in positionals:
                self.check_url(p)
        if prof.script is not None:
            script = self.scripts or positionals[:1]
            if not script:
                w.f.unproven(f"`{self.label}` without a script reads it from somewhere unchecked")
            for word in script:
                if word.value is None:
                    w.f.unproven(
                        f"the `{self.label}` script `{word.text}` is only known at run time"
                    )
                else:
                    problem = check_script(prof.script, word.value)
                    if problem is not None:
                        w.f.add(
                            problem[0],
                            f"the `{self.label}` script {problem[1]} ({caps_text(problem[0])})",
                        )
        if prof.max_positionals is not None and len(positionals) > prof.max_positionals:
            if not any(f in self.seen for f in prof.positional_ok_with):
                extra = positionals[prof.max_positionals]
                caps = prof.positional_caps
                w.f.add(
                    caps,
                    f"`{extra.text}` makes `{self.label}` {prof.positional_why} "
                    f"({caps_text(caps)})",
                )

    def check_url(self, word: Word) -> None:
        if word.value is None:
            self.w.f.unproven(f"the URL `{word.text}` of `{self.label}` is only known at run time")
            return
        scheme, sep, _ = word.value.partition("://")
        if sep and scheme.lower() not in self.prof.url_schemes:
            self.w.f.add(
                frozenset({"write:network"}),
                f"`{word.text}` makes `{self.label}` speak `{scheme}`, which can send "
                "arbitrary data (write:network)",
            )

    # Exec wrappers ------------------------------------------------------------------
    def wrapper(self, wr: Wrapper) -> None:
        args, w = self.args, self.w
        i = 0
        while i < len(args):
            a = args[i]
            v = a.value
            if v is None or a.glob:
                w.f.unproven(f"`{a.text}` after `{self.label}` is only known at run time")
                return
            if v == "--":
                i += 1
                break
            if not v.startswith("-") or v == "-":
                if "=" in v and not wr.shell_string:
                    w.f.add(
                        _ENV,
                        f"`{v}` makes `{self.label}` change the environment of the command "
                        "it runs (modify:environment)",
                    )
                    i += 1
                    continue
                break
            step = self.wrapper_flag(wr, v)
            if step == 0:
                w.f.unproven(
                    f"`{v}` is not an option of `{self.label}` known to be harmless, "
                    "so it is not allowed"
                )
                return
            i += step
        self.base(self.prof.caps, self.prof.why)
        rest = args[i + wr.skip :]
        if not rest:
            return
        if wr.shell_string:
            if any(r.value is None for r in rest):
                w.f.unproven(f"the command `{self.label}` runs is only known at run time")
                return
            w.shell_string(" ".join(r.value or "" for r in rest))
            return
        if wr.appends_args:
            rest = [*rest, _STDIN_ARGS]
        w.simple(rest[0], rest[1:])

    def known(self, name: str) -> bool:
        return name in self.prof.options or name in self.prof.effects

    def wrapper_flag(self, wr: Wrapper, v: str) -> int:
        """How many words the option takes up (0: not a known option)."""
        if v.startswith("--"):
            name, eq, _ = v.partition("=")
            if _takes_value(self.prof, name):
                return 1 if eq else 2
            return 1 if self.known(v) else 0
        for j in range(1, len(v)):
            name = "-" + v[j]
            if _takes_value(self.prof, name):
                return 1 if j + 1 < len(v) else 2
            if not self.known(name):
                return 0
        return 1


def _takes_value(prog: Program, name: str) -> bool:
    effect = prog.effects.get(name)
    if effect is not None:
        return effect.value
    option = prog.options.get(name)
    return option is not None and option.takes_next
