"""The animation page: one self-contained HTML file (script, styles and data inline; no
network) that replays a solve: the board along the solution with play/pause/step/speed,
g, h and f at each step, charts of the nodes per iteration and of h along the path, and,
for a trace with recorded nodes (trace.py), the search itself node by node.

The page is ``animation.html``, a package data file: its script draws everything (SVG) from
the trace JSON inlined into it. ``pdbd web`` serves the same page in live mode, where it
solves through the daemon and loads the result the same way.

Query parameters of the page: ``step=K`` (the move shown first), ``event=J`` (the search
node shown first), ``play=1`` (start playing); live mode also takes ``board``, ``goal`` and
``solve=1``.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

from pdbtool.search.trace import Trace
from pdbtool.tables.files import atomic_output

TEMPLATE = "animation.html"


def template() -> str:
    return resources.files(__package__).joinpath(TEMPLATE).read_text(encoding="utf-8")


def page(trace: Trace | None, live: bool = False) -> str:
    """The page as HTML text: the trace inlined (None: nothing to show until a live solve)."""
    data = "null" if trace is None else json.dumps(trace.to_dict(), separators=(",", ":"))
    # Inside <script>, "</script>" or "<!--" in a string would end or confuse the element:
    # JSON allows "<" as \u003c, which the script's JSON.parse reads back unchanged.
    data = data.replace("<", "\\u003c")
    html = template()
    return (html.replace("__MODE__", "live" if live else "file", 1)
                .replace("__TRACE__", data, 1))


def write(trace: Trace, path) -> Path:
    """Write the page for ``trace`` to ``path``, whole or not at all; return the path."""
    with atomic_output(path) as tmp:
        Path(tmp).write_text(page(trace), encoding="utf-8")
    return Path(path)
