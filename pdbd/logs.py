"""The daemon's log lines, one formatter for all of them (`pdbd serve` and `pdbd web`,
pdbd's own loggers, pdbtool's, gRPC's Python side, uvicorn's, and Python warnings).

Every line has its time (UTC, ISO 8601, milliseconds) and level. ``text``: ``TIME LEVEL
LOGGER message``; ``json``: one object a line with ``time``, ``level``, ``logger``,
``message``, the fields a call passed with ``extra=`` (per request: ``method``, ``peer``,
``code``, ``seconds``, ``nodes``, ...) and ``exception`` (the traceback) if there is one.
Loads neither numba nor grpc.
"""

from __future__ import annotations

import json
import logging
import sys
import time

FORMATS = ("text", "json")
LEVELS = ("debug", "info", "warning", "error")

# What every LogRecord has: anything else on a record came with ``extra=``.
_STANDARD = (set(vars(logging.LogRecord("", 0, "", 0, "", (), None)))
             | {"message", "asctime", "color_message"})  # uvicorn's coloured copy


class Formatter(logging.Formatter):
    """``text`` or ``json`` lines, each with the time and the level."""

    def __init__(self, style: str = "text"):
        if style not in FORMATS:
            raise ValueError(f"log format {style!r}: expected one of {', '.join(FORMATS)}")
        super().__init__()
        self.style_name = style

    def formatTime(self, record, datefmt=None) -> str:
        t = time.gmtime(record.created)
        return time.strftime("%Y-%m-%dT%H:%M:%S", t) + f".{int(record.msecs):03d}Z"

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        when = self.formatTime(record)
        error = self.formatException(record.exc_info) if record.exc_info else None
        if self.style_name == "json":
            line = {"time": when, "level": record.levelname, "logger": record.name,
                    "message": message}
            line.update((k, v) for k, v in vars(record).items()
                        if k not in _STANDARD and not k.startswith("_"))
            if error:
                line["exception"] = error
            return json.dumps(line, default=str)
        text = f"{when} {record.levelname} {record.name} {message}"
        return f"{text}\n{error}" if error else text


class Stderr(logging.StreamHandler):
    """A handler writing to whatever sys.stderr is when a line is written (as logging's
    last resort does), not the stream it was at set-up."""

    def __init__(self):
        logging.Handler.__init__(self)

    @property
    def stream(self):
        return sys.stderr


def setup(style: str = "text", level: str = "info", stream=None, force: bool = False) -> None:
    """Send every log line of this process through one handler on stderr (or ``stream``)
    with the Formatter of ``style``: pdbd's and pdbtool's at ``level`` and above, other
    libraries' from WARNING; Python warnings too. As logging.basicConfig, nothing is done
    if the root logger has handlers already (a host program's, a test runner's) unless
    ``force``; a handler of an earlier call is replaced."""
    root = logging.getLogger()
    if not force and any(not getattr(h, "pdbd", False) for h in root.handlers):
        return
    handler = logging.StreamHandler(stream) if stream else Stderr()
    handler.setFormatter(Formatter(style))
    handler.pdbd = True
    for old in list(root.handlers):
        if getattr(old, "pdbd", False):
            root.removeHandler(old)
    root.addHandler(handler)
    numeric = getattr(logging, level.upper())
    root.setLevel(max(numeric, logging.WARNING))
    for name in ("pdbd", "pdbtool"):
        logging.getLogger(name).setLevel(numeric)
    logging.captureWarnings(True)


def take_ray_lines() -> None:
    """Ray's lines become the daemon's log lines (not Ray's own format among them, nor lines
    that are not JSON with ``--log-format json``); called once Ray is imported and before
    ``ray.init``, whose listener for the raylets' errors prints from its start (and first
    what the head's autoscaler reported before). Two sources:

    * what Ray's driver prints of its raylets' reports (a worker killed, the head's
      autoscaler stopped with its traceback) straight on stderr (``ray._private.worker.
      print_to_stdstream``): warnings of the logger ``pdbd.ray``, one a message;
    * Ray's own loggers (``ray`` and below: the autoscaler's error read at connection,
      the listener's failures), which Ray's handler printed itself: passed on to the
      daemon's handler instead, from WARNING as other libraries' are.

    Nothing if Ray is not imported; the first is skipped if Ray no longer has that
    function."""
    worker = sys.modules.get("ray._private.worker")
    if worker is None:
        return
    ray_logger = logging.getLogger("ray")
    for handler in list(ray_logger.handlers):  # Ray's own, set when it was imported
        ray_logger.removeHandler(handler)
    ray_logger.propagate = True
    ray_logger.setLevel(logging.WARNING)
    if not callable(getattr(worker, "print_to_stdstream", None)):
        return
    ray_log = logging.getLogger("pdbd.ray")

    def to_log(data, ignore_prefix=False):
        for line in data.get("lines") or ():
            ray_log.warning("(%s) %s", data.get("pid", "?"), str(line).rstrip())

    worker.print_to_stdstream = to_log


def request_fields(method: str, peer: str, code: str, seconds: float, nodes: int, **more) -> dict:
    """The ``extra=`` of a log line about one call (JSON fields; the text line has its own)."""
    return {"method": method, "peer": peer, "code": code, "seconds": round(seconds, 6),
            "nodes": nodes, **more}


def artifact_text(artifact: str | None) -> str:
    """A solve's text log field ' artifact=...', or nothing for a table-free search (it
    said 'artifact=None')."""
    return f" artifact={artifact}" if artifact else ""


def report_error(prog: str, args, message: str, code: int, where: str = "") -> None:
    """pdbtool.cli.console.report_error for a command whose log is JSON: its last line, why
    it failed, is a log record too (level ERROR, with its ``exit_code``), so that every line
    of its stderr parses; the log is set up first if the command failed before it did."""
    if not any(getattr(h, "pdbd", False) for h in logging.getLogger().handlers):
        setup("json")
    prefix = f"{where}: " if where else ""
    logging.getLogger(prog).error(f"{prefix}{message}", extra={"exit_code": code})
