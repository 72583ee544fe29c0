"""Progress of long work on stderr (a table build, a pack): a tqdm bar on a terminal, a
plain line now and then in a log. Below everything that reports progress, library and
command lines alike."""

from __future__ import annotations

import sys
import time

LOG_EVERY = 10.0  # seconds between progress lines in a log, where every line stays


def fmt_seconds(s: float) -> str:
    s = int(s)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def fmt_bytes(n: int) -> str:
    """A size as people read it: "64 KiB", "1.5 GiB", "512 MiB"."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            v = n / (1 << shift)
            return f"{v:,.0f} {unit}" if v >= 100 or v == int(v) else f"{v:.1f} {unit}"
    return f"{n} bytes"


class Progress:
    """Progress of long work on stderr: a tqdm bar on a terminal, a plain line per step
    (at most every LOG_EVERY seconds) in a log. Disabled, it prints nothing; a stderr that
    is closed or cannot be written (a pipe whose reader left) disables it, and the work
    goes on: the progress is lost, not the build or the pack."""

    def __init__(self, label: str, total: int, enabled: bool = True, unit: str = "it"):
        self.label, self.total = label, total
        self.enabled = enabled and sys.stderr is not None
        self.start = time.perf_counter()
        self._last = float("-inf")
        self._bar = None
        if self.enabled and self._written(sys.stderr.isatty):
            from tqdm import tqdm
            self._bar = self._written(lambda: tqdm(total=total, desc=label, unit=unit,
                                                   unit_scale=True, file=sys.stderr,
                                                   leave=True, dynamic_ncols=True))

    def update(self, done: int, text: str = "") -> None:
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.n = done
            self._bar.set_postfix_str(text, refresh=False)
            self._written(self._bar.refresh)
            return
        now = time.perf_counter()
        if now - self._last < LOG_EVERY and done < self.total:
            return
        self._last = now
        elapsed = now - self.start
        pct = 100 * done / self.total if self.total else 100.0
        self._line(f"{self.label}: {pct:5.1f}% {done:,}/{self.total:,} {text} "
                   f"elapsed {fmt_seconds(elapsed)}")

    def close(self, text: str = "") -> None:
        if self._bar is not None:
            self._written(self._bar.close)
        if self.enabled and text:
            self._line(text)

    def _line(self, text: str) -> None:
        self._written(lambda: print(text, file=sys.stderr, flush=True))

    def _written(self, write):
        """``write()``'s value; None, and no more progress, if stderr failed it."""
        try:
            return write()
        except (OSError, ValueError):  # EPIPE, EBADF; ValueError: a closed file object
            self.enabled, self._bar = False, None
            return None
