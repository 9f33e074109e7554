"""`classified`: one simple command against `programs.toml`: a `read_only` program and
subcommand, every option listed with its exact arity, every operand in its role. Names match
exactly, so a long-option prefix getopt_long would expand (`--out`) is refused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from plan_lsp.policy.shell.argwalk import ArgWalk, Stop
from plan_lsp.policy.shell.database import Option, Program, database
from plan_lsp.policy.shell.model import Findings, caps_text
from plan_lsp.policy.shell.paths import OBJECT_NAME_PLACEHOLDER
from plan_lsp.policy.shell.programs import program_problem
from plan_lsp.policy.shell.valuecheck import check_value

if TYPE_CHECKING:
    from plan_lsp.policy.shell.lexer import SWord
    from plan_lsp.policy.shell.paths import PathPolicy

# Wrappers may wrap wrappers, but not without end.
MAX_WRAP = 4
_PATH_ROLES = frozenset({"path", "file", "rev"})
# Programs that walk the working directory when given no file or folder: always, or with one
# of these options. Where that directory holds a place plan mode hides (a root that is the
# home), they must be given the folders to walk (`walk_check`).
_WALK_ALWAYS = frozenset({"rg", "fd", "fdfind", "tree", "du", "git grep"})
_RECURSIVE_GREP = frozenset({"-r", "--recursive", "-R", "--dereference-recursive", "-d",
                             "--directories"})  # fmt: skip
_WALK_WITH = {"ls": frozenset({"-R", "--recursive"})} | dict.fromkeys(
    ("grep", "egrep", "fgrep", "zgrep"), _RECURSIVE_GREP
)
# Options naming a folder to walk instead of the working directory.
_FOLDER_OPTIONS = frozenset({"--search-path"})


class ArgCheck:
    def __init__(self, findings: Findings, policy: PathPolicy) -> None:
        self.f = findings
        self.policy = policy
        self.table = database()

    def simple(self, words: list[SWord], depth: int = 0) -> None:
        name = words[0]
        cmd = name.value
        if name.glob:
            self.f.unproven(f"the command name `{name.text}` is a glob")
            return
        if "/" in cmd:
            self.f.unproven(
                f"`{cmd}` names a program by path; only allow-listed programs found on PATH run"
            )
            return
        self.f.programs.add(cmd)
        prog = self.table.programs.get(cmd)
        if prog is None or not prog.read_only:
            self.f.unproven(f"`{cmd}` is not in the allow-list of read-only programs")
            return
        self._hijack(cmd)
        if cmd == "find":
            from plan_lsp.policy.shell.find import check_find

            check_find(self.f, self.policy, prog, words[1:])
            return
        try:
            _Program(self, prog, words[1:], depth, self.policy.cwd).run()
        except Stop:
            pass

    def _hijack(self, cmd: str) -> None:
        problem = program_problem(cmd, self.policy)
        if problem is not None:
            self.f.unproven(problem)


class _Program(ArgWalk["SWord"]):
    def __init__(
        self,
        owner: ArgCheck,
        prog: Program,
        args: list[SWord],
        depth: int,
        base: str,
        seen: frozenset[str] = frozenset(),
    ) -> None:
        super().__init__(prog, args)
        self.o = owner
        self.f = owner.f
        self.depth = depth
        # The directory relative paths start from (`git -C DIR` moves it).
        self.base = base
        # Options seen so far, the parent command's included (`pip --flag list`).
        self.seen |= seen
        # A file or folder to read was named (else a walker walks the working directory).
        self.folders_named = False

    def refuse(self, reason: str) -> Stop:
        self.f.unproven(reason)
        return Stop()

    def run(self) -> None:
        prog = self.prog
        self.f.programs.add(prog.label)
        for other in prog.runs:
            self.o._hijack(other)
        if prog.old_style and self.args and not self.args[0].value.startswith("-"):
            self.args = self.unbundle(self.args)
        if prog.exact and all(not a.glob for a in self.args):
            if tuple(a.value for a in self.args) in prog.exact:
                shown = " ".join(a.text for a in self.args)
                self.f.add(prog.caps, f"`{prog.label} {shown}` only prints information")
                return
        if prog.exact_only:
            forms = " or ".join(f"`{prog.label} {' '.join(form)}`" for form in prog.exact)
            raise self.refuse(f"`{prog.label}` is allowed only as {forms}")
        operands, rest_at = self.walk()
        if prog.subcommands and rest_at is not None:
            self.subcommand(rest_at)
            return
        if prog.subcommands and prog.sub_required:
            names = ", ".join(sorted(prog.subcommands))
            raise self.refuse(f"`{prog.label}` needs one of its listed subcommands ({names})")
        if prog.requires and not self.seen & prog.requires:
            need = " or ".join(f"`{n}`" for n in sorted(prog.requires))
            raise self.refuse(f"`{prog.label}` is allowed only with {need}: {prog.requires_why}")
        caps = prog.caps - prog.drops(self.seen)
        self.f.add(caps, f"`{prog.label}` {prog.why} ({caps_text(caps) or 'no capabilities'})")
        for word in operands:
            self.prefix_check(word)
        self.operands(operands)
        self.walk_check()
        if prog.verify is not None:
            from plan_lsp.policy.shell.verify import verify_command

            problem = verify_command(prog.verify, self.o.policy, self.base, self.seen, operands)
            if problem is not None:
                raise self.refuse(problem)

    def walk_check(self) -> None:
        """A program that walks the working directory when no folder is named (`rg PATTERN`,
        `grep -r PATTERN`, `tree`) may not, where that directory holds a hidden place."""
        label = self.prog.label
        walks = label in _WALK_ALWAYS or bool(self.seen & _WALK_WITH.get(label, frozenset()))
        if walks and not self.folders_named:
            problem = self.o.policy.walk_problem(label, self.base)
            if problem is not None:
                raise self.refuse(problem)

    def unbundle(self, args: list[SWord]) -> list[SWord]:
        """`tar tzf A B` is `tar -t -z -f A B`: each letter of the first word is an option,
        and the letters that take a value take the next words, in order."""
        from plan_lsp.policy.shell.lexer import SWord

        bundle = args[0]
        if bundle.glob:
            self.unexpanded(bundle, "as a bundle of options")
        out: list[SWord] = []
        k = 1
        for letter in bundle.value:
            name = "-" + letter
            opt = self.prog.options.get(name)
            if opt is None:
                raise self.refuse(self.unknown(name, bundle.value))
            out.append(SWord(name, bundle.start, bundle.end, name))
            if opt.arity in ("required", "pair"):
                take = 1 if opt.arity == "required" else 2
                if k + take > len(args):
                    raise self.refuse(f"`{name}` in `{bundle.text}` has no value after it")
                for nxt in args[k : k + take]:
                    if nxt.value.startswith("-"):
                        raise self.refuse(
                            f"`{nxt.text}`: the value of `{name}` in `{bundle.text}` looks "
                            "like an option"
                        )
                    out.append(nxt)
                k += take
            elif opt.arity != "none":
                raise self.refuse(
                    f"`{name}` in `{bundle.text}` takes an optional value, which a bundle "
                    "cannot give"
                )
        return out + args[k:]

    def prefix_check(self, word: SWord) -> None:
        """Words the program reads as something else (`@FILE`: more options from FILE)."""
        prefixes = self.prog.refuse_prefixes
        if not prefixes:
            return
        if word.value.startswith(prefixes):
            raise self.refuse(
                f"`{word.text}` as an operand: `{self.prog.label}` reads a word starting with "
                f"`{word.value[0]}` as something other than a file name"
            )
        if word.glob:
            matches = self.o.policy.expand(word.pattern, self.base)
            for shown, _ in matches or []:
                if shown.startswith(prefixes):
                    raise self.refuse(
                        f"`{word.text}` matches `{shown}`, which `{self.prog.label}` would "
                        "not read as a file name"
                    )

    # -- options (the walk is argwalk.py's) ---------------------------------------------------
    def static(self, word: SWord) -> str:
        return word.value

    def option_glob(self, word: SWord) -> None:
        self.unexpanded(word, "in the place of an option")

    def takes_rest(self, name: str) -> bool:
        opt = self.prog.options.get(name)
        return opt is not None and opt.arity != "none"

    def option(self, name: str, attached: str | None, i: int, word: str) -> int:
        prog = self.prog
        opt = prog.options.get(name)
        if opt is None:
            raise self.refuse(self.unknown(name, word))
        if attached is not None and opt.arity == "none" and not prog.cluster:
            if not word.startswith("--"):
                raise self.refuse(
                    f"`{word}`: `{prog.label}` does not accept short options written together"
                )
        return self.take(name, opt, attached, i, word)

    def unknown(self, name: str, word: str) -> str:
        within = "" if name == word else f" (in `{word}`)"
        hint = ""
        if name.startswith("--") and any(o.startswith(name) for o in self.prog.options):
            hint = " (abbreviations of listed options are not accepted either)"
        return (
            f"`{name}`{within} is not an option of `{self.prog.label}` that the allow-list "
            f"knows to be read-only{hint}"
        )

    def take(self, name: str, opt: Option, attached: str | None, i: int, word: str) -> int:
        """Apply option `name`; returns the index of the next word."""
        self.seen.add(name)
        arity = opt.arity
        value: str | None = None
        if arity == "none":
            if attached is not None:
                raise self.refuse(f"`{word}`: `{name}` of `{self.prog.label}` takes no value")
            return i
        if arity == "pair":
            if attached is not None:
                raise self.refuse(f"`{word}`: `{name}` takes the next two words, not `=`")
            for nxt in self.args[i : i + 2]:
                if nxt.glob:
                    self.unexpanded(nxt, f"as a value of `{name}`")
            return i + 2
        if attached is not None:
            value = attached
        elif arity == "required" and i < len(self.args):
            nxt = self.args[i]
            if nxt.glob:
                self.unexpanded(nxt, f"as the value of `{name}`")
            value = nxt.value
            i += 1
        elif arity == "attached":
            raise self.refuse(
                f"`{name}` of `{self.prog.label}` needs its value attached (`{name}=…`)"
            )
        if value is not None:
            if self.prog.refuse_prefixes and value.startswith(self.prog.refuse_prefixes):
                raise self.refuse(
                    f"`{word} {value}`: `{self.prog.label}` reads a value starting with "
                    f"`{value[0]}` as something else"
                )
            self.option_value(name, opt, value)
        return i

    def option_value(self, name: str, opt: Option, value: str) -> None:
        if opt.kind == "path":
            problem = self.o.policy.read_problem(value, self.base)
            if problem is not None:
                raise self.refuse(f"`{name} {value}`: {problem}")
            if name in _FOLDER_OPTIONS:
                self.folders_named = True
        elif opt.kind == "chdir":
            problem = self.o.policy.read_problem(value, self.base, moving=True)
            if problem is not None:
                raise self.refuse(f"`{name} {value}`: {problem}")
            self.base = self.o.policy.resolve(value, self.base)
        if opt.check is not None:
            problem = check_value(opt.check, value)
            if problem is not None:
                raise self.refuse(f"`{name} {value}`: {problem}")

    # -- subcommands and operands ------------------------------------------------------------
    def subcommand(self, at: int) -> None:
        word = self.args[at]
        if self.prog.label == "git":
            self.f.git_dirs.add(self.base)
            problem = self.o.policy.git_problem(self.base)
            if problem is not None:
                raise self.refuse(problem)
        sub = self.prog.subcommands.get(word.value)
        if word.glob:
            self.unexpanded(word, "as a subcommand")
        if sub is None or not sub.read_only:
            raise self.refuse(
                f"`{self.prog.label} {word.value}` is not a subcommand the allow-list knows "
                "to be read-only"
            )
        _Program(
            self.o, sub, self.args[at + 1 :], self.depth, self.base, frozenset(self.seen)
        ).run()

    def operands(self, operands: list[SWord]) -> None:
        prog = self.prog
        if operands and prog.operands_need and not (self.seen & prog.operands_need):
            need = " or ".join(f"`{n}`" for n in sorted(prog.operands_need))
            raise self.refuse(
                f"`{operands[0].text}`: `{prog.label}` takes operands only together with {need} "
                "(without it, the operand names something to change)"
            )
        roles = prog.roles
        if roles and self.seen & prog.drops_first:
            roles = roles[1:]
        r = 0
        for k, word in enumerate(operands):
            if r >= len(roles):
                raise self.refuse(
                    f"`{word.text}` is one operand too many for `{prog.label}` "
                    "(an extra operand can name a file it writes)"
                )
            role = roles[r]
            variadic = role.count in ("*", "+")
            if role.name == "command":
                self.wrapped(operands[k:])
                return
            expands = variadic and r == len(roles) - 1 and role.name in _PATH_ROLES
            if word.glob and not expands:
                self.unexpanded(word, f"where `{prog.label}` expects {_describe(role.name)}")
            self.operand(role.name, word, expands)
            if not variadic:
                r += 1

    def unexpanded(self, word: SWord, where: str) -> None:
        """A glob outside a list of input files passes only while it matches nothing (bash
        then passes it on as written)."""
        if self.o.policy.glob_matches(word.pattern, self.base):
            raise self.refuse(
                f"`{word.text}` is an unquoted glob {where}, and it matches files here, so "
                "bash would replace it with any number of words; quote it"
            )

    def operand(self, role: str, word: SWord, expands: bool) -> None:
        policy = self.o.policy
        if role == "rev" and OBJECT_NAME_PLACEHOLDER in word.value and not word.glob:
            # An object name from a substitution: git reads it as a revision (a file of
            # that name too would make git stop at the ambiguity).
            return
        if role in _PATH_ROLES:
            prog = self.prog
            for char, why in prog.refuse_in_paths.items():
                if char in word.value:
                    raise self.refuse(f"`{word.text}` contains `{char}`: {why}")
            for suffix in ("", *(prog.derives if word.value != "-" else ())):
                if word.glob and expands:
                    problem = policy.glob_problem(word.pattern + suffix, word.text, self.base)
                else:
                    problem = policy.read_problem(
                        word.value + suffix, self.base, file_only=role == "file"
                    )
                if problem is not None and suffix:
                    problem = (
                        f"`{prog.label}` opens `{word.text}{suffix}` when `{word.text}` is "
                        f"missing: {problem}"
                    )
                if problem is not None:
                    raise self.refuse(problem)
            self.folders_named = True
        elif role != "text":
            problem = check_value(role, word.value)
            if problem is not None:
                raise self.refuse(f"`{word.text}`: {problem}")

    def wrapped(self, words: list[SWord]) -> None:
        if self.depth >= MAX_WRAP:
            raise self.refuse("wrappers are nested too deeply to check")
        self.o.simple(words, self.depth + 1)


def _describe(role: str) -> str:
    return {
        "text": "a single word",
        "path": "a file",
        "file": "a file",
        "rev": "a revision or path",
    }.get(role, f"a {role}")
