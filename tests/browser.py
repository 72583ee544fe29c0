"""Headless Chromium for the page tests: load a file or URL, let its script run, read the
DOM it leaves or take a screenshot. No driver package: Chromium's own command line
(--dump-dom, --screenshot) with a virtual-time budget, which also waits for the page's
network requests (the live page's solve) before it counts down.

Chromium is Debian's ``chromium`` package (``apt-get install chromium``; scripts/test
installs it where it can). Where none is found, the tests that need it skip and say so.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser

NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
MISSING = ("headless Chromium not found (tried $CHROMIUM, " + ", ".join(NAMES) + "): install "
           "Debian's chromium package (apt-get install chromium; scripts/test does it as root) "
           "to run the browser tests")
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}


def find_chromium() -> str | None:
    for name in filter(None, (os.environ.get("CHROMIUM"), *NAMES)):
        path = shutil.which(name)
        if path:
            return path
    return None


def run_chromium(exe: str, url: str, *flags: str, budget_ms: int = 3000,
                 timeout: float = 180) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        p = subprocess.run(
            [exe, "--headless", "--disable-gpu", "--no-sandbox", "--disable-dev-shm-usage",
             "--no-first-run", "--hide-scrollbars", f"--user-data-dir={profile}",
             f"--virtual-time-budget={budget_ms}", *flags, url],
            capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, f"chromium failed ({p.returncode}): {p.stderr[-2000:]}"
    return p


def dump_dom(exe: str, url: str, budget_ms: int = 3000) -> "Dom":
    """The DOM after the page's script ran (and its virtual-time budget passed)."""
    return Dom(run_chromium(exe, url, "--dump-dom", budget_ms=budget_ms).stdout)


def screenshot(exe: str, url: str, path, budget_ms: int = 3000, size: str = "1400,1300"):
    run_chromium(exe, url, f"--screenshot={path}", f"--window-size={size}", budget_ms=budget_ms)
    assert os.path.getsize(path) > 10_000, f"{path}: screenshot missing or empty"
    print(f"screenshot: {path}")
    return path


class Dom(HTMLParser):
    """Just enough of a dumped DOM: every element with its attributes, the ids of the
    elements it is inside, and the text of each element that has an id."""

    def __init__(self, html: str):
        super().__init__(convert_charrefs=True)
        self.html = html
        self.elements: list[tuple[str, dict, tuple[str, ...]]] = []
        self.text: dict[str, str] = {}
        self._open: list[tuple[str, str | None]] = []
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        a = {k: v or "" for k, v in attrs}
        self.elements.append((tag, a, tuple(i for _, i in self._open if i)))
        if tag not in VOID:
            self._open.append((tag, a.get("id")))
            if a.get("id"):
                self.text.setdefault(a["id"], "")

    def handle_endtag(self, tag):
        for k in range(len(self._open) - 1, -1, -1):
            if self._open[k][0] == tag:
                del self._open[k:]
                return

    def handle_data(self, data):
        for _, i in self._open:
            if i:
                self.text[i] += data

    def by_id(self, ident: str) -> dict:
        found = [a for _, a, _ in self.elements if a.get("id") == ident]
        assert len(found) == 1, f"{len(found)} elements with id {ident!r}"
        return found[0]

    def inside(self, ident: str, cls: str | None = None, tag: str | None = None) -> list[dict]:
        """Attributes of the elements inside #ident, optionally of a class or tag."""
        return [a for t, a, ids in self.elements if ident in ids
                and (cls is None or cls in a.get("class", "").split()) and (tag is None or t == tag)]

    def board(self, ident: str) -> tuple[int, ...]:
        """The board a BoardView shows, read from where its tiles are placed."""
        tiles = {int(a["data-cell"]): int(a["data-tile"]) for a in self.inside(ident, "tile")}
        n = len(tiles) + 1
        blank = [int(a["data-cell"]) for a in self.inside(ident, "blank")]
        assert len(blank) == 1 and set(tiles) | set(blank) == set(range(n)), (tiles, blank)
        return tuple(tiles.get(c, 0) for c in range(n))
