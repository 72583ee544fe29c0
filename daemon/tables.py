"""What a daemon serves: one heuristic per board side, and the artifacts they came from.

Loading is the only step that touches artifact files, so it is kept here, apart from the
server, which takes a ready ``Tables`` (tests may build one from table-free heuristics).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pdbtool import artifact, pdb
from pdbtool.errors import ArtifactError
from pdbtool.heuristics import Heuristic


@dataclass(frozen=True)
class Tables:
    heuristics: dict[int, Heuristic]  # side -> the heuristic that serves it
    artifacts: tuple = field(default=())  # ArtifactMeta of every artifact loaded

    @property
    def sides(self) -> list[int]:
        return sorted(self.heuristics)


def load(directory) -> Tables:
    """Verify and memory-map every artifact in the directory.

    Any artifact that fails (missing, truncated, checksum, unknown format) raises
    ArtifactError naming the file and the check: the daemon never falls back to a weaker
    heuristic without saying so.
    """
    d = Path(directory)
    if not d.is_dir():
        raise ArtifactError(f"{d}: no such directory")
    paths = artifact.find_artifacts(d)
    if not paths:
        raise ArtifactError(f"{d}: no artifacts (*.h5) to serve; build one with "
                            f"`pdbtool build 15/5-5-5 --out {d}`")
    heuristics = pdb.load_directory(d, verify=True)
    metas = tuple(artifact.read_meta(p) for p in paths)
    return Tables(heuristics, metas)

