"""A small progress line for long work: redrawn in place on a terminal, one line per
update in a log. Goes to stderr so --json output on stdout stays clean."""

import sys
import time


def fmt_seconds(s: float) -> str:
    s = int(s)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


class Progress:
    def __init__(self, label: str, total: int, enabled: bool = True, stream=None):
        self.label, self.total, self.enabled = label, total, enabled
        self.stream = stream or sys.stderr
        self.tty = self.enabled and self.stream.isatty()
        self.start = time.perf_counter()

    def update(self, done: int, text: str = "") -> None:
        if not self.enabled:
            return
        elapsed = time.perf_counter() - self.start
        rate = done / elapsed if elapsed > 0 else 0.0
        frac = done / self.total if self.total else 1.0
        eta = (self.total - done) / rate if rate > 0 else 0.0
        width = 24
        bar = "#" * int(width * frac) + "-" * (width - int(width * frac))
        line = (f"{self.label} [{bar}] {100 * frac:5.1f}% {done:,}/{self.total:,} {text} "
                f"{rate / 1e6:.2f}M/s elapsed {fmt_seconds(elapsed)} eta {fmt_seconds(eta)}")
        if self.tty:
            self.stream.write("\r\x1b[K" + line)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def close(self, text: str = "") -> None:
        if not self.enabled:
            return
        if self.tty:
            self.stream.write("\n")
        if text:
            self.stream.write(text + "\n")
        self.stream.flush()
