"""Partial JSON: the `plan_write` arguments reader (the standard library's JSON decoder, jiter
telling a value cut short from a malformed one, parsed when read) against the hand-written
incremental decoder it replaced, kept below as the reference and measured in the same run.

A plan of about 20 KB (`bench_streaming.make_plan`, `json.dumps` with and without
`ensure_ascii`) is fed in 4-character deltas, read three ways:

- every delta: `content_so_far` read after each delta (the worst case: a parse per delta);
- as the server reads it: the model stream's reader is asked for `plan_filename` after
  every delta (agent/model_stream.py), the draft's reader for `content_so_far` once per 8
  deltas (a fast model's 32 characters per 1/60 s edit interval, plan/coalescer.py);
- feed only, then one read at the end.

Reported: the time of each reader and the ratio new / reference; both must decode the same
content at every read. `--size` grows the plan to show how the cost scales.

Run: .venv/bin/python tests/bench/bench_partial_json.py [--quick] [--smoke] [--size N]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Callable

from _bench_util import Result, emit_results, fmt, median, print_table
from bench_streaming import make_plan

from plan_lsp.plan.streaming import PartialArgumentsReader

DELTA = 4
READ_EVERY = 8

# -- the reference: the hand-written incremental decoder, as it was ---------------------------

_WHITESPACE = " \t\r\n"
_SIMPLE_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n",
                   "r": "\r", "t": "\t"}  # fmt: skip
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
_STRING_STOP = re.compile(r'["\\]')


class _StringDecoder:
    """Decodes one JSON string body fed in pieces; `parts` hold only complete characters.

    A `\\uD800`-`\\uDBFF` escape is held back until the input says whether a low surrogate
    escape follows (then the pair is one character, as `json.loads` decodes it).
    """

    def __init__(self) -> None:
        self.parts: list[str] = []
        self._pending = ""  # the start of an escape whose end has not arrived yet
        self._high: str | None = None  # a decoded high surrogate waiting for its pair
        self.closed = False
        self.error: str | None = None

    def _flush_high(self) -> None:
        if self._high is not None:
            self.parts.append(self._high)
            self._high = None

    def _emit(self, text: str) -> None:
        if text:
            self._flush_high()
            self.parts.append(text)

    def feed(self, chunk: str, index: int) -> int:
        """Consume from `chunk[index:]`; return the index after the closing quote (or end)."""
        if self._pending:
            # An escape never needs more than 6 characters; complete it from this chunk.
            escape = self._pending + chunk[index : index + 6 - len(self._pending)]
            used = self._decode_escape(escape)
            if used == 0:  # still incomplete: the chunk is used up
                self._pending = escape
                return len(chunk)
            index += used - len(self._pending)
            self._pending = ""
        while index < len(chunk) and self.error is None:
            stop = _STRING_STOP.search(chunk, index)
            if stop is None:
                self._emit(chunk[index:])
                return len(chunk)
            self._emit(chunk[index : stop.start()])
            index = stop.start()
            if chunk[index] == '"':
                self._flush_high()
                self.closed = True
                return index + 1
            used = self._decode_escape(chunk[index : index + 6])
            if used == 0:
                self._pending = chunk[index:]
                return len(chunk)
            index += used
        return len(chunk) if self.error is not None else index

    def _decode_escape(self, escape: str) -> int:
        """Decode the escape `escape` starts with (a backslash, maybe cut short).

        Returns the characters consumed, or 0 when more input is needed.
        """
        if len(escape) < 2:
            return 0
        kind = escape[1]
        if kind in _SIMPLE_ESCAPES:
            self._emit(_SIMPLE_ESCAPES[kind])
            return 2
        if kind != "u":
            self.error = f"invalid escape \\{kind}"
            return 2
        digits = escape[2:6]
        if any(digit not in _HEX_DIGITS for digit in digits):
            self.error = "invalid \\u escape"
            return len(escape)
        if len(digits) < 4:
            return 0
        code = int(digits, 16)
        if 0xDC00 <= code <= 0xDFFF and self._high is not None:
            high = ord(self._high)
            self._high = None
            self.parts.append(chr(0x10000 + ((high - 0xD800) << 10) + (code - 0xDC00)))
        elif 0xD800 <= code <= 0xDBFF:
            self._flush_high()
            self._high = chr(code)
        else:
            self._emit(chr(code))
        return 6

    def text(self) -> str:
        # Compacting on read keeps repeated reads of a growing draft to one copy each.
        if len(self.parts) > 1:
            self.parts[:] = ["".join(self.parts)]
        return self.parts[0] if self.parts else ""


class ReferenceReader:
    """Reads the `plan_write` arguments JSON as it streams, in pieces of any size.

    `content_so_far` is the decoded `content` string so far (complete escapes only, so every
    value is a prefix of the next); `plan_filename` is set once that string is complete.
    Other keys are skipped, whatever their values. A repeated key restarts its value, as
    `json.loads` keeps the last. Malformed input sets `error` and stops reading; the final
    arguments are still parsed by the caller with `json.loads`.
    """

    CONTENT_KEY = "content"
    FILENAME_KEY = "plan_filename"

    def __init__(self) -> None:
        self._state = "start"
        self._key: _StringDecoder | None = None
        self._value: _StringDecoder | None = None
        self._current_key = ""
        self._content: _StringDecoder | None = None
        self._skip_depth = 0
        self._skip_in_string = False
        self._skip_escape = False
        self.plan_filename: str | None = None
        self.content_started = False
        self.content_complete = False
        self.done = False
        self.error: str | None = None

    @property
    def content_so_far(self) -> str:
        return "" if self._content is None else self._content.text()

    def _fail(self, message: str) -> None:
        self.error = message
        self._state = "failed"

    def feed(self, chunk: str) -> None:
        index = 0
        while index < len(chunk) and self._state not in ("failed", "done"):
            index = self._step(chunk, index)
        if self._state == "done":
            self.done = True

    def _step(self, chunk: str, index: int) -> int:
        state = self._state
        if state in ("key", "value"):
            decoder = self._key if state == "key" else self._value
            assert decoder is not None
            index = decoder.feed(chunk, index)
            if decoder.error is not None:
                self._fail(decoder.error)
            elif decoder.closed:
                self._string_closed(state, decoder)
            return index
        if state == "skip":
            return self._skip(chunk, index)
        if state == "scalar":
            while index < len(chunk) and chunk[index] not in ",}" + _WHITESPACE:
                index += 1
            if index < len(chunk):
                self._state = "after_value"
            return index
        char = chunk[index]
        if char in _WHITESPACE:
            return index + 1
        if state == "start":
            if char == "{":
                self._state = "key_or_end"
            else:
                self._fail("arguments are not a JSON object")
        elif state == "key_or_end":
            self._expect_key(char)
        elif state == "colon":
            if char == ":":
                self._state = "value_start"
            else:
                self._fail("expected ':' after a key")
        elif state == "value_start":
            self._start_value(char)
            return index if self._state == "scalar" else index + 1
        elif state == "after_value":
            if char == ",":
                self._state = "key_required"
            elif char == "}":
                self._state = "done"
            else:
                self._fail("expected ',' or '}' after a value")
        elif state == "key_required":
            if char == '"':
                self._key = _StringDecoder()
                self._state = "key"
            else:
                self._fail("expected a key")
        return index + 1

    def _expect_key(self, char: str) -> None:
        if char == '"':
            self._key = _StringDecoder()
            self._state = "key"
        elif char == "}":
            self._state = "done"
        else:
            self._fail("expected a key or '}'")

    def _start_value(self, char: str) -> None:
        if char == '"':
            self._value = _StringDecoder()
            if self._current_key == self.CONTENT_KEY:
                self._content = self._value  # a repeated key restarts, like json.loads
                self.content_started = True
                self.content_complete = False
            self._state = "value"
        elif char in "{[":
            self._skip_depth = 1
            self._skip_in_string = False
            self._skip_escape = False
            self._state = "skip"
        else:
            if self._current_key == self.FILENAME_KEY:
                self.plan_filename = None  # null (or a non-string) means the default name
            self._state = "scalar"

    def _string_closed(self, state: str, decoder: _StringDecoder) -> None:
        if state == "key":
            self._current_key = decoder.text()
            self._state = "colon"
            return
        if self._current_key == self.CONTENT_KEY:
            self.content_complete = True
        elif self._current_key == self.FILENAME_KEY:
            self.plan_filename = decoder.text()
        self._value = None
        self._state = "after_value"

    def _skip(self, chunk: str, index: int) -> int:
        """Skip a nested object/array value, minding strings and escapes inside it."""
        while index < len(chunk):
            char = chunk[index]
            index += 1
            if self._skip_in_string:
                if self._skip_escape:
                    self._skip_escape = False
                elif char == "\\":
                    self._skip_escape = True
                elif char == '"':
                    self._skip_in_string = False
            elif char == '"':
                self._skip_in_string = True
            elif char in "{[":
                self._skip_depth += 1
            elif char in "}]":
                self._skip_depth -= 1
                if self._skip_depth == 0:
                    self._state = "after_value"
                    return index
        return index


# -- the measurement ---------------------------------------------------------------------------

Reader = PartialArgumentsReader | ReferenceReader


def run_pattern(
    make: Callable[[], Reader], raw: str, pattern: str
) -> tuple[float, list[tuple[int, str]], str]:
    """Seconds to feed `raw` in deltas read as `pattern` says, what each read gave (length and
    end: a long plan's every copy would not fit in memory), and the last content read."""
    deltas = [raw[i : i + DELTA] for i in range(0, len(raw), DELTA)]
    seen: list[str] = []
    shown: list[tuple[int, str]] = []

    def keep(content: str) -> None:
        shown.append((len(content), content[-8:]))
        seen[:] = [content]

    start = time.perf_counter()
    if pattern == "every delta":
        reader = make()
        for delta in deltas:
            reader.feed(delta)
            keep(reader.content_so_far)
    elif pattern == "as the server reads":
        stream, draft = make(), make()
        for number, delta in enumerate(deltas, start=1):
            stream.feed(delta)
            _ = stream.plan_filename
            draft.feed(delta)
            if number % READ_EVERY == 0:
                keep(draft.content_so_far)
        keep(draft.content_so_far)
    else:
        reader = make()
        for delta in deltas:
            reader.feed(delta)
        keep(reader.content_so_far)
    seconds = time.perf_counter() - start
    return seconds, shown, seen[-1]


PATTERNS = ("every delta", "as the server reads", "feed only")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--quick", action="store_true", help="fewer repetitions")
    ap.add_argument("--smoke", action="store_true", help="a tiny plan, once (checks it works)")
    ap.add_argument("--size", type=int, default=20_000, help="plan size in characters")
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args(argv)
    size = 2_000 if args.smoke else args.size
    reps = 1 if args.smoke else (3 if args.quick else args.reps)
    plan = make_plan(size, seed=1)
    cases = {
        "ascii escapes": json.dumps({"content": plan, "plan_filename": "plan.md"}),
        "utf-8": json.dumps({"plan_filename": "plan.md", "content": plan}, ensure_ascii=False),
    }
    rows: list[tuple[str, ...]] = []
    results: list[Result] = []
    all_equal = True
    for case, raw in cases.items():
        for pattern in PATTERNS:
            new_s: list[float] = []
            ref_s: list[float] = []
            for _ in range(reps):  # alternate, so both see the same machine load
                seconds, shown_new, last_new = run_pattern(PartialArgumentsReader, raw, pattern)
                new_s.append(seconds)
                seconds, shown_ref, last_ref = run_pattern(ReferenceReader, raw, pattern)
                ref_s.append(seconds)
                all_equal &= shown_new == shown_ref and last_new == last_ref == plan
            new, ref = median(new_s), median(ref_s)
            rows.append((case, pattern, fmt(ref * 1000), fmt(new * 1000), fmt(new / ref)))
            if case == "ascii escapes":
                target = "(info)" if pattern == "every delta" else "≤ 2x"
                met = None if pattern == "every delta" else new / ref <= 2
                results.append(
                    Result(f"partial JSON {pattern}: jiter / reference", new / ref, "x",
                           target, met)
                )  # fmt: skip
    print(
        f"plan {fmt(len(plan))} characters, {DELTA}-character deltas, medians of {reps} run(s) each"
    )
    print_table(["arguments", "reads", "reference (ms)", "jiter (ms)", "ratio"], rows, left=2)
    if not all_equal:
        print("ERROR: the readers decoded different contents", file=sys.stderr)
    results.append(
        Result("partial JSON: same content as the reference", float(all_equal), "", "1",
               all_equal)
    )  # fmt: skip
    emit_results(results)
    return 0 if all_equal else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
