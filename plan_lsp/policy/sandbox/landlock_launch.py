"""Landlock launcher: restrict this process, then exec the command. Runs as the child's argv
(`python -I -S landlock_launch.py OPTIONS -- ARGV...`), never in the threaded server; light
standard modules only. OPTIONS come from `landlock.py`; `--filesystem-only` (inside
bubblewrap) adds no network rules, scoping or seccomp. Any failure exits 126 without running
the command. Capabilities are dropped (a root server's child would keep CAP_SYS_PTRACE).
"""

from __future__ import annotations

# The C module: `signal` imports enum, a third of this launcher's start-up time.
import _signal  # type: ignore[import-not-found]
import ctypes
import os
import resource
import struct
import sys

SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 24, 47, 4
CAPABILITY_VERSION_3 = 0x20080522

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
TRUNCATE, IOCTL_DEV = 1 << 14, 1 << 15
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1

# Syscalls denied with EACCES, by group and machine (why each: docs/security.md, Landlock).
# io_uring_setup, fchmodat2, setxattrat, removexattrat, file_setattr: one number everywhere.
_NEW_METADATA = (425, 452, 463, 466, 469)


def _numbers(text: str) -> tuple[int, ...]:
    return tuple(int(n) for n in text.split())


AUDIT_ARCHES = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
SYSCALL_GROUPS: dict[str, dict[str, tuple[int, ...]]] = {
    "x86_64": {
        "sockets": (41,),
        # chmod fchmod chown fchown lchown utime setxattr lsetxattr fsetxattr removexattr
        # lremovexattr fremovexattr utimes fchownat futimesat fchmodat utimensat
        "metadata": (
            *_numbers("90 91 92 93 94 132 188 189 190 197 198 199 235 260 261 268 280"),
            *_NEW_METADATA,
        ),
        "keyrings": (248, 249, 250),
        "ioctls": (16,),
        "io_uring": (425,),
        # shmget shmat shmctl semget semop semctl shmdt msgget msgsnd msgrcv msgctl
        # semtimedop mq_open mq_unlink mq_timedsend mq_timedreceive mq_notify mq_getsetattr
        "sysv_ipc": _numbers("29 30 31 64 65 66 67 68 69 70 71 220 240 241 242 243 244 245"),
    },
    "aarch64": {
        "sockets": (198,),
        "metadata": (5, 6, 7, 14, 15, 16, 52, 53, 54, 55, 88, *_NEW_METADATA),
        "keyrings": (217, 218, 219),
        "ioctls": (29,),
        "io_uring": (425,),
        "sysv_ipc": tuple(range(180, 198)),  # mq_open .. shmdt
    },
}
# Syscalls that change another process of the same user (Landlock does not scope them):
# allowed only when the `(argument index, value)` pairs name the caller itself. prlimit64,
# sched_setparam, sched_setscheduler, sched_setaffinity, sched_setattr (pid 0), setpriority
# (PRIO_PROCESS, 0), ioprio_set (IOPRIO_WHO_PROCESS, 0).
_SELF_PID = ((0, 0),)
OWN_PROCESS_ONLY: dict[str, dict[int, tuple[tuple[int, int], ...]]] = {
    "x86_64": {
        302: _SELF_PID, 142: _SELF_PID, 144: _SELF_PID, 203: _SELF_PID, 314: _SELF_PID,
        141: ((0, 0), (1, 0)), 251: ((0, 1), (1, 0)),
    },
    "aarch64": {
        261: _SELF_PID, 118: _SELF_PID, 119: _SELF_PID, 122: _SELF_PID, 274: _SELF_PID,
        140: ((0, 0), (1, 0)), 30: ((0, 1), (1, 0)),
    },
}  # fmt: skip
# (socket, socketpair) by machine, for the unix_sockets group.
SOCKET_CALLS = {"x86_64": (41, 53), "aarch64": (198, 199)}
AF_UNIX, SOCK_DGRAM, SOCK_TYPE_MASK = 1, 2, 0xF
# The ioctl requests still allowed (the same on x86_64 and aarch64): they only read, or
# change the caller's own descriptor.
HARMLESS_IOCTLS: dict[str, int] = {
    # terminals (the sandbox has none, but isatty() and the window size are asked everywhere)
    "TCGETS": 0x5401, "TCGETA": 0x5405, "TCGETS2": 0x802C542A, "TIOCGWINSZ": 0x5413,
    "TIOCGPGRP": 0x540F, "TIOCGSID": 0x5429, "TIOCOUTQ": 0x5411,
    # the descriptor itself
    "FIONREAD": 0x541B, "FIONBIO": 0x5421, "FIOASYNC": 0x5452, "FIOCLEX": 0x5451,
    "FIONCLEX": 0x5450, "FIOQSIZE": 0x5460,
    # reading a file's attributes and layout
    "FIGETBSZ": 0x2, "FS_IOC_GETFLAGS": 0x80086601, "FS_IOC32_GETFLAGS": 0x80046601,
    "FS_IOC_GETVERSION": 0x80087601, "FS_IOC32_GETVERSION": 0x80047601,
    "FS_IOC_FSGETXATTR": 0x801C581F, "FS_IOC_FIEMAP": 0xC020660B,
    "FS_IOC_GETFSLABEL": 0x81009431,
    # network interfaces, read (only reachable with the network allowed)
    "SIOCGIFNAME": 0x8910, "SIOCGIFCONF": 0x8912, "SIOCGIFFLAGS": 0x8913,
    "SIOCGIFADDR": 0x8915, "SIOCGIFBRDADDR": 0x8919, "SIOCGIFNETMASK": 0x891B,
    "SIOCGIFMTU": 0x8921, "SIOCGIFHWADDR": 0x8927, "SIOCGIFINDEX": 0x8933,
}  # fmt: skip
EACCES = 13


def fs_rights(abi: int) -> int:
    """Every filesystem access right this ABI can restrict."""
    rights = (1 << 13) - 1  # EXECUTE .. MAKE_SYM (ABI 1)
    if abi >= 2:
        rights |= 1 << 13  # REFER
    if abi >= 3:
        rights |= TRUNCATE
    if abi >= 5:
        rights |= IOCTL_DEV
    return rights


def file_rights(abi: int) -> int:
    """The rights that apply to a non-directory."""
    return fs_rights(abi) & (EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV)


class LaunchError(Exception):
    pass


def _check(result: int, what: str) -> int:
    if result < 0:
        raise LaunchError(f"{what}: {os.strerror(ctypes.get_errno())}")
    return result


def _add_rule(libc: ctypes.CDLL, ruleset: int, path: str, rights: int, abi: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # vanished since the spec was written: nothing to grant
    try:
        if not os.path.isdir(path):
            rights &= file_rights(abi)
        if not rights:
            return
        attr = struct.pack("=Qi", rights, fd)  # struct landlock_path_beneath_attr, packed
        buf = ctypes.create_string_buffer(attr, len(attr))
        _check(libc.syscall(SYS_ADD_RULE, ruleset, RULE_PATH_BENEATH, buf, 0), f"rule {path}")
    finally:
        os.close(fd)


# Classic BPF: load word at offset, jump if equal / greater or equal, return.
_LD, _JEQ, _JGE, _RET, _AND = 0x20, 0x15, 0x35, 0x06, 0x54
_ALLOW, _DENY, _KILL = 0x7FFF0000, 0x00050000 | EACCES, 0x80000000
# struct seccomp_data: nr at 0, arch at 4, args[i] at 16 + 8 i (the low word first on these
# little-endian machines; the kernel reads an ioctl request as 32 bits).
_NR, _ARCH, _ARGS, _IOCTL_REQUEST = 0, 4, 16, 24
Insn = tuple[int, "int | str", "int | str", int]


def _assemble(code: list[Insn | str]) -> list[tuple[int, int, int, int]]:
    """Resolve label names (strings in `code`) to the forward jump offsets BPF wants."""
    labels: dict[str, int] = {}
    insns: list[Insn] = []
    for item in code:
        if isinstance(item, str):
            labels[item] = len(insns)
        else:
            insns.append(item)

    def offset(at: int, target: int | str) -> int:
        if isinstance(target, int):
            return target
        jump = labels[target] - at - 1
        if not 0 <= jump <= 255:
            raise LaunchError(f"seccomp jump out of range: {jump}")
        return jump

    return [(op, offset(i, jt), offset(i, jf), k) for i, (op, jt, jf, k) in enumerate(insns)]


def seccomp_program(machine: str, groups: list[str]) -> list[tuple[int, int, int, int]]:
    """A classic BPF filter: EACCES for the syscalls of `groups` (and the x32 ABI), the
    process killed on a foreign architecture, everything else allowed. With the `ioctls`
    group, ioctl is allowed only for the requests in HARMLESS_IOCTLS."""
    if machine not in AUDIT_ARCHES:
        raise LaunchError(f"no seccomp filter for {machine}")
    table = SYSCALL_GROUPS[machine]
    denied = [nr for group in groups if group in table and group != "ioctls" for nr in table[group]]
    own = OWN_PROCESS_ONLY[machine] if "other_processes" in groups else {}
    unix = SOCKET_CALLS[machine] if "unix_sockets" in groups else None
    code: list[Insn | str] = [
        (_LD, 0, 0, _ARCH),
        (_JEQ, 0, "kill", AUDIT_ARCHES[machine]),
        (_LD, 0, 0, _NR),
        (_JGE, "deny", 0, 0x40000000),  # the x32 ABI
        *((_JEQ, "deny", 0, nr) for nr in denied),
        *((_JEQ, f"own{nr}", 0, nr) for nr in own),
    ]
    if unix is not None:
        code += [(_JEQ, "unix_socket", 0, unix[0]), (_JEQ, "unix_pair", 0, unix[1])]
    if "ioctls" in groups:
        code += [
            (_JEQ, 0, "allow", table["ioctls"][0]),
            (_LD, 0, 0, _IOCTL_REQUEST),
            *((_JEQ, "allow", 0, request) for request in HARMLESS_IOCTLS.values()),
            (_RET, 0, 0, _DENY),
        ]
    code.append((_RET, 0, 0, _ALLOW))
    for nr, required in own.items():
        code.append(f"own{nr}")
        for n, (index, value) in enumerate(required):
            # The low word: the kernel reads these arguments (pid_t, int) as 32 bits.
            code.append((_LD, 0, 0, _ARGS + 8 * index))
            last = n == len(required) - 1
            code.append((_JEQ, "allow" if last else 0, "deny", value))
    if unix is not None:
        # socket(domain, ...): the domain is an int (low word); socketpair(domain, type,
        # ...): the type carries SOCK_CLOEXEC / SOCK_NONBLOCK above its low four bits.
        code += [
            "unix_socket", (_LD, 0, 0, _ARGS), (_JEQ, "deny", "allow", AF_UNIX),
            "unix_pair", (_LD, 0, 0, _ARGS + 8), (_AND, 0, 0, SOCK_TYPE_MASK),
            (_JEQ, "deny", "allow", SOCK_DGRAM),
        ]  # fmt: skip
    code += ["allow", (_RET, 0, 0, _ALLOW), "deny", (_RET, 0, 0, _DENY)]
    code += ["kill", (_RET, 0, 0, _KILL)]
    return _assemble(code)


def seccomp_bytes(machine: str, groups: list[str]) -> bytes:
    """The filter as the kernel (and bwrap --seccomp) takes it: struct sock_filter[]."""
    return b"".join(struct.pack("=HBBI", *insn) for insn in seccomp_program(machine, groups))


def _seccomp_filter(libc: ctypes.CDLL, network: bool) -> None:
    groups = ["metadata", "keyrings", "ioctls", "other_processes", "unix_sockets", "sysv_ipc"]
    groups += [] if network else ["sockets"]
    raw = seccomp_bytes(os.uname().machine, groups)
    filters = ctypes.create_string_buffer(raw, len(raw))
    prog = struct.pack("=HxxxxxxQ", len(raw) // 8, ctypes.addressof(filters))
    prog_buf = ctypes.create_string_buffer(prog, len(prog))
    _check(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, prog_buf, 0, 0), "seccomp")


class Options:
    def __init__(self) -> None:
        self.read: list[str] = []
        self.write: list[str] = []
        self.devices: list[str] = []
        self.network = False
        self.filesystem_only = False
        self.chdir: str | None = None
        self.limits: dict[str, int] = {}


_PATH_OPTIONS = {"--read": "read", "--write": "write", "--device": "devices"}
_LIMIT_OPTIONS = {
    "--cpu": "RLIMIT_CPU",
    "--fsize": "RLIMIT_FSIZE",
    "--nproc": "RLIMIT_NPROC",
    "--data": "RLIMIT_DATA",
}


def parse(args: list[str]) -> tuple[Options, list[str]]:
    options = Options()
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--":
            if i + 1 >= len(args):
                raise LaunchError("no command after --")
            return options, args[i + 1 :]
        if word in ("--network", "--filesystem-only"):
            setattr(options, word[2:].replace("-", "_"), True)
            i += 1
            continue
        if i + 1 >= len(args):
            raise LaunchError(f"{word} needs a value")
        if word == "--chdir":
            options.chdir = args[i + 1]
        elif word in _PATH_OPTIONS:
            getattr(options, _PATH_OPTIONS[word]).append(args[i + 1])
        elif word in _LIMIT_OPTIONS:
            options.limits[_LIMIT_OPTIONS[word]] = int(args[i + 1])
        else:
            raise LaunchError(f"unknown option {word}")
        i += 2
    raise LaunchError("no -- before the command")


def _drop_capabilities(libc: ctypes.CDLL) -> None:
    """Empty bounding, ambient and current capability sets (a no-op for most users)."""
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            last = int(f.read())
    except (OSError, ValueError):
        last = 63
    for cap in range(last + 1):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)  # EPERM without CAP_SETPCAP: nothing held
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = ctypes.create_string_buffer(struct.pack("=Ii", CAPABILITY_VERSION_3, 0), 8)
    data = ctypes.create_string_buffer(bytes(24), 24)  # two empty __user_cap_data_struct
    _check(libc.capset(header, data), "capset")


def restrict(options: Options) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    limits = {"RLIMIT_CORE": 0, **options.limits}
    for name, value in limits.items():
        try:
            resource.setrlimit(getattr(resource, name), (value, value))
        except (ValueError, OSError):
            pass  # a lower hard limit is already in force
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    _drop_capabilities(libc)
    abi = libc.syscall(SYS_CREATE_RULESET, None, 0, CREATE_RULESET_VERSION)
    if abi < 1:
        raise LaunchError("landlock is not available")
    network = options.network or options.filesystem_only
    handled_net = 0 if network or abi < 4 else NET_BIND_TCP | NET_CONNECT_TCP
    scoped = SCOPE_SIGNAL if abi >= 6 and not options.filesystem_only else 0
    if abi >= 6 and not network:
        scoped |= SCOPE_ABSTRACT_UNIX_SOCKET
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    attr = struct.pack("=QQQ", fs_rights(abi), handled_net, scoped)[:size]
    attr_buf = ctypes.create_string_buffer(attr, size)
    ruleset = _check(libc.syscall(SYS_CREATE_RULESET, attr_buf, size, 0), "ruleset")
    for path in options.read:
        _add_rule(libc, ruleset, path, EXECUTE | READ_FILE | READ_DIR, abi)
    for path in options.write:
        _add_rule(libc, ruleset, path, fs_rights(abi), abi)
    for path in options.devices:
        _add_rule(libc, ruleset, path, READ_FILE | WRITE_FILE | TRUNCATE | IOCTL_DEV, abi)
    if not options.filesystem_only:
        _seccomp_filter(libc, network)
    _check(libc.syscall(SYS_RESTRICT_SELF, ruleset, 0), "restrict_self")
    os.close(ruleset)


def main(args: list[str]) -> int:
    try:
        options, argv = parse(args)
        if options.chdir is not None:
            os.chdir(options.chdir)
        restrict(options)
    except (LaunchError, ValueError, OSError) as exc:
        print(f"plan-lsp sandbox: not running the command: {exc}", file=sys.stderr)
        return 126
    # Python ignores these at start-up, and an ignored signal stays ignored across exec.
    for signum in (_signal.SIGPIPE, _signal.SIGXFSZ):
        _signal.signal(signum, _signal.SIG_DFL)
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        print(f"plan-lsp sandbox: {argv[0]}: {exc.strerror}", file=sys.stderr)
        return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
