"""Server logs: to stderr or a file, bounded records, level changeable at run time."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

# Untrusted input (a method name, a params dump) must not blow up the log.
MAX_LOG_RECORD = 2000


def _bounded_record(record: logging.LogRecord) -> bool:
    message = record.getMessage()
    if len(message) > MAX_LOG_RECORD:
        record.msg = message[:MAX_LOG_RECORD] + f"… ({len(message)} characters)"
        record.args = None
    if record.exc_info and record.exc_text is None:
        text = logging.Formatter().formatException(record.exc_info)
        record.exc_text = text if len(text) <= 20_000 else text[:20_000] + "…"
    return True


def set_log_level(level: str) -> None:
    logging.getLogger().setLevel(level.upper())
    # pygls logs every message body at INFO; keep that out unless debugging.
    quiet = logging.DEBUG if level == "debug" else logging.WARNING
    logging.getLogger("pygls").setLevel(quiet)
    logging.getLogger("watchfiles").setLevel(quiet)


def setup_logging(level: str, log_file: Path | None) -> None:
    handler: logging.Handler = (
        logging.FileHandler(log_file) if log_file else logging.StreamHandler(sys.stderr)
    )
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(_bounded_record)
    logging.getLogger().handlers[:] = [handler]
    set_log_level(level)
