"""Shared fixtures: an exact 8-puzzle oracle and small artifacts built once per session."""

from collections import deque
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent / "data"  # copies of shared/bench


def bfs_distances(goal):
    """Exact distance of every state reachable from ``goal`` (plain BFS, no project code)."""
    side = int(len(goal) ** 0.5)
    dist = {tuple(goal): 0}
    queue = deque([tuple(goal)])
    while queue:
        s = queue.popleft()
        b = s.index(0)
        r, c = divmod(b, side)
        for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1)):
            if 0 <= r + dr < side and 0 <= c + dc < side:
                nb = (r + dr) * side + c + dc
                t = list(s)
                t[b], t[nb] = t[nb], 0
                t = tuple(t)
                if t not in dist:
                    dist[t] = dist[s] + 1
                    queue.append(t)
    return dist


@pytest.fixture(scope="session")
def oracle8():
    """Exact distances of all 181,440 8-puzzle states to the blank-first goal."""
    d = bfs_distances(tuple(range(9)))
    assert len(d) == 181440
    return d


@pytest.fixture(scope="session")
def oracle8_last():
    return bfs_distances((1, 2, 3, 4, 5, 6, 7, 8, 0))


@pytest.fixture(scope="session")
def art_dir(tmp_path_factory):
    """8/full and 15/5-5-5 artifacts (a second or two to build)."""
    from pdbtool.build import build

    d = tmp_path_factory.mktemp("artifacts")
    build("8/full", d, progress=False)
    build("15/5-5-5", d, progress=False)
    return d


def korf100():
    rows = []
    for line in (BENCH / "korf100.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            f = line.split()
            rows.append((int(f[0]), int(f[1]), tuple(int(x) for x in f[2:])))
    return rows
