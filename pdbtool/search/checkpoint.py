"""Resumable IDA*: a search's progress saved to a small file now and then, and a search
started again with the same file resumed where the last save left it.

An iteration of the threads' IDA* is a list of independent tasks (the subtrees at the split
depth, kernels/tasks.py), so its progress is the bound, which tasks are finished and what
each gave (its next bound and nodes: ``Tasks.results``), the order the tasks are claimed
in and how close each came to the goal (the next iteration's order), and what the
iterations before counted. Resuming re-searches only the unfinished tasks of the saved
bound, so the answer is the same and the node counts are those of a run without the
interruption (a task cut off by the kill is searched again from its start and counted
once). A checkpoint names what it belongs to (``Identity``: the board as searched, the
goal, the heuristic and its table's content version, the algorithm, move pruning) and is
refused, naming the difference, for another search. It is written to a temporary file
beside it, synced and renamed over it (tables.files.atomic_output), so a kill at any
moment leaves the last complete save.

The cluster's IDA* (pdbtool.cluster.run) saves the same way: its tasks are batches of
frontier nodes consecutive in the iteration's order (``order`` and ``closest`` as the
threads'), ``split`` is the frontier's size target, a finished batch is keyed by its first
place in the order and its row carries the batch's length too (so a search resumed on a
cluster of another size re-batches only the rest), and its identity's
algorithm is ``CLUSTER_ALGORITHM``: a thread search's checkpoint is refused by the cluster
and the other way round.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import hashlib
import json
import logging
import math
import os
import re
import socket
import struct
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from pdbtool import puzzle
from pdbtool.errors import BadInput, LimitReached, PdbError
from pdbtool.kernels.ida import MAX_DEPTH
from pdbtool.kernels.tasks import FAR
from pdbtool.tables.files import (atomic_output, partial_name, refuse_special,
                                  remove_stale_partials)

if TYPE_CHECKING:
    from pdbtool.puzzle import Frame
    from pdbtool.search.control import PreparedBoard
    from pdbtool.search.solver import Solver

FORMAT = "pdbtool-checkpoint-2"  # with the digest of its content ("sha256")
UNDIGESTED = "pdbtool-checkpoint-1"  # the first, without: refused (nothing to check it by,
# and its tasks' counts are not this version's: the walks' nodes were added since)
MOST = (1 << 63) - 1  # a count beyond int64 (the kernels' counters) is no count of a search
CLUSTER_ALGORITHM = "ida on a cluster"
DEFAULT_EVERY = 60.0  # seconds between saves

log = logging.getLogger("pdbtool")


class Identity(NamedTuple):
    """What a checkpoint belongs to: a checkpoint of another search is refused."""

    board: tuple[int, ...]   # as the kernels search it (the goal's image)
    goal: str
    heuristic: str
    table_version: str | None  # the table's content version (None: a table-free heuristic)
    algorithm: str
    prune: bool


@dataclasses.dataclass
class Checkpoint:
    """A search's progress at one moment (see the module's docstring)."""

    identity: Identity
    split: int              # the tasks' depth below the root
    bound: int              # the iteration in progress
    expanded: int           # nodes of the iterations before it
    generated: int
    iterations: list        # {"bound", "nodes"} of the iterations before it
    order: list             # the iteration's order of the tasks
    closest: list           # per task: the smallest h expanded in it (FAR if none)
    finished: dict          # task -> [next bound, expanded, generated], finished tasks only
                            # (the cluster's: first place in the order -> the same + length)
    seconds: float          # the search's time so far, all sittings together

    def to_json(self) -> str:
        d = dataclasses.asdict(self)
        d["identity"] = self.identity._asdict()
        d["finished"] = {str(k): v for k, v in self.finished.items()}
        return json.dumps({"format": FORMAT, **d, "sha256": digest(d)})

    @classmethod
    def from_json(cls, text: str) -> Checkpoint:
        """The checkpoint in ``text``; ValueError naming the first field that is not what
        this program writes, or a digest that does not match the rest (a damaged file, or
        one edited without its digest made again, is never searched from: one flipped bit
        of a bound gave an answer two moves too long, said optimal). The digest is no
        seal: a file edited and digested again is taken as the user's own."""
        d = json.loads(text)
        written = d.pop("format", None) if isinstance(d, dict) else None
        if written == UNDIGESTED:
            raise ValueError("written by an older pdbtool, without a digest to check it by, "
                             "and counting its tasks' nodes otherwise")
        if written != FORMAT:
            raise ValueError("not a pdbtool checkpoint of this version")
        if d.pop("sha256", None) != digest(d):
            raise ValueError("its content does not match its digest: it is damaged, or "
                             "was edited")
        ident = d.pop("identity")
        if not (isinstance(ident, dict) and isinstance(ident.get("board"), list)
                and all(type(x) is int for x in ident["board"])):
            raise ValueError("identity is not an object whose board is a list of tiles")
        ident["board"] = tuple(ident["board"])
        if not isinstance(d.get("finished"), dict):
            raise ValueError("finished is not an object of task -> [next bound, expanded, "
                             "generated]")
        d["finished"] = {int(k): v for k, v in d["finished"].items()}
        saved = cls(identity=Identity(**ident), **d)
        saved.check()
        return saved

    def check(self) -> None:
        """ValueError unless every field has the type and range a search writes, and the
        bounds follow one another as IDA*'s do."""
        def count(name, x, low=0):
            if type(x) is not int or not low <= x <= MOST:
                raise ValueError(f"{name} is {x!r}, not an integer from {low} to 2^63 - 1")

        count("split", self.split, 1)
        count("bound", self.bound)
        if self.bound > MAX_DEPTH:
            raise ValueError(f"bound is {self.bound}, beyond the depth limit ({MAX_DEPTH})")
        count("expanded", self.expanded)
        count("generated", self.generated)
        if type(self.seconds) not in (int, float) or not 0 <= self.seconds < float("inf"):
            raise ValueError(f"seconds is {self.seconds!r}, not a finite number >= 0")
        if not isinstance(self.iterations, list) or not all(
                isinstance(i, dict) and set(i) == {"bound", "nodes"} for i in self.iterations):
            raise ValueError("iterations is not a list of {bound, nodes}")
        for i in self.iterations:
            count("an iteration's bound", i["bound"])
            count("an iteration's nodes", i["nodes"])
        bounds = [i["bound"] for i in self.iterations] + [self.bound]
        if any(a >= b for a, b in zip(bounds, bounds[1:])):
            raise ValueError(f"the iterations' bounds {bounds} do not rise, as IDA*'s do")
        if not isinstance(self.order, list) or not all(type(x) is int for x in self.order) \
                or sorted(self.order) != list(range(len(self.order))):
            raise ValueError("order is not an order of the tasks (each of 0 .. n - 1 once)")
        n = len(self.order)
        if not isinstance(self.closest, list) or len(self.closest) != n:
            raise ValueError(f"closest does not list the {n} tasks of order")
        for c in self.closest:
            count("a task's closest h", c)
            if MAX_DEPTH < c != FAR:
                raise ValueError(f"a task's closest h is {c}: neither an h within the depth "
                                 f"limit ({MAX_DEPTH}) nor FAR ({FAR})")
        if self.identity.algorithm == CLUSTER_ALGORITHM and 0 < n < self.split:  # the
            # frontier grows to the first level of at least split nodes: an edited target
            # would have the resumed search expand one of that size before it said so
            raise ValueError(f"split is {self.split}, more than the {n} nodes of the frontier")
        # a cluster's saved before it searched closest first has no order: its batches are
        # keyed by places in the frontier, checked against it (cluster.run.SearchRun.batches)
        unordered = n == 0 and self.identity.algorithm == CLUSTER_ALGORITHM
        for k, row in self.finished.items():
            if not 0 <= k < (float("inf") if unordered else n):
                raise ValueError(f"finished names task {k}, of {n}")
            if self.identity.algorithm == CLUSTER_ALGORITHM:  # a batch: and its length
                if not isinstance(row, list) or len(row) != 4:
                    raise ValueError(f"finished batch {k}: {row!r} is not [next bound, "
                                     "expanded, generated, length]")
            elif not isinstance(row, list) or len(row) != 3:
                raise ValueError(f"finished task {k}: {row!r} is not [next bound, expanded, "
                                 "generated]")
            for x in row:
                count(f"finished task {k}'s figures", x)
            if row[0] <= self.bound:  # a task's next bound is above the one it was searched to
                raise ValueError(f"finished task {k}'s next bound is {row[0]}, not above the "
                                 f"bound {self.bound}")
        for name, column, before in (("expanded", 1, self.expanded),
                                     ("generated", 2, self.generated)):
            total = before + sum(row[column] for row in self.finished.values())
            if total > MOST:  # (each count within it, their sum a search's counter)
                raise ValueError(f"{name}, the finished tasks' included, is {total}: beyond "
                                 "2^63 - 1")


def digest(content: dict) -> str:
    """The sha256 of a checkpoint's content (its fields but the format and the digest)."""
    text = json.dumps(content, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def identity(solver: Solver, prepared: PreparedBoard, algorithm: str = "ida") -> Identity:
    """What a checkpoint of this search is saved for."""
    h = solver.heuristic
    name = h.name if h.shape.square else f"{h.name} ({h.shape})"  # 3x4 and 4x3 share tiles
    return Identity(tuple(prepared.image), prepared.goal, name, h.artifact, algorithm,
                    solver.prune)


def goal_tiles(goal, frame: Frame) -> tuple[int, ...] | None:
    """The board of a goal's text (puzzle.check_goal's: blank-first, blank-last or the tiles
    joined by commas) on the board of ``frame``, None if it is none of them: a checkpoint
    saved toward blank-first is resumed toward --goal '0 1 2 ... 15'."""
    cells = len(frame.target)
    if goal == "blank-first":
        return tuple(range(cells))
    if goal == "blank-last":
        return tuple(range(1, cells)) + (0,)
    try:
        return tuple(int(t) for t in str(goal).split(","))
    except ValueError:
        return None


def typed_board(saved: Identity, frame: Frame) -> tuple[int, ...]:
    """The board of a saved identity as the user typed it: through the frame of its own shape
    (a rectangle's is named in its heuristic's name, as ``identity`` writes it; else the
    search's ``frame`` if the board is of its size, or a square) and goal; as saved if none
    applies."""
    board = saved.board
    if sorted(board) != list(range(len(board))):
        return board  # (edited: not a board)
    named = re.search(r"\((\d+x\d+)\)$", saved.heuristic)
    if not named and len(board) == len(frame.target):
        return frame.board(board)
    try:
        own = puzzle.frame(named.group(1) if named else math.isqrt(len(board)), saved.goal)
        return own.board(board) if len(own.target) == len(board) else board
    except (BadInput, KeyError, ValueError):
        return board


class Checkpointing:
    """Where and how often a search saves its progress (``SearchControl.checkpoint``)."""

    watching = True  # saved now and then while the search runs (and when it stops short)
    empty = False  # the file may hold a saved search: load() reads it

    def __init__(self, path, every: float = DEFAULT_EVERY, on_resume=None):
        if not isinstance(path, (str, os.PathLike)) or not str(path):
            raise BadInput(f"a checkpoint is saved in a file: give its name, not {path!r:.60}")
        try:  # (a bool is no number of seconds)
            seconds = float(every) if not isinstance(every, bool) else float("nan")
        except (TypeError, ValueError):
            seconds = float("nan")
        if not 0 < seconds < float("inf"):  # (nan too: it never saved)
            raise BadInput("the checkpoint's interval (--checkpoint-every) must be a positive "
                           f"number of seconds, not {every!r:.60}")
        self.path, self.every = Path(path), seconds
        self.on_resume = on_resume  # called with the path when a saved search is first accepted
        self._owner: int | None = None  # the thread holding the file (holding()), which
        self._held = 0  # may hold it again: the command line holds it before the search
        try:
            self._check_place()
        except OSError as e:  # (a name too long for the system: is_dir() raises)
            error = BadInput if e.errno == errno.ENAMETOOLONG else PdbError
            raise error(f"{self.path}: cannot save the checkpoint there ({e.strerror}: "
                        f"a save writes {partial_name(self.path).name} first)") from None
        self._last = time.monotonic()
        self.saves = 0

    def _check_place(self) -> None:
        """BadInput or PdbError unless a save can be written where the file is to be."""
        if self.path.is_dir():
            raise BadInput(f"{self.path} is a directory: give the checkpoint's file name")
        refuse_special(self.path)  # a link, a FIFO, a device: its first save (a minute into
        # the search) would refuse it, and reading a FIFO would wait for a writer for ever
        parent = self.path.parent
        if not parent.is_dir():
            raise BadInput(f"{self.path}: no such directory {parent} for the checkpoint")
        if not os.access(parent, os.W_OK | os.X_OK):  # said before the search, not at its
            # first save (nor after its answer)
            raise PdbError(f"{self.path}: cannot save the checkpoint there, its directory "
                           f"{parent} is not writable")
        probe = partial_name(self.path)  # the name a save writes first (too long, a
        try:  # read-only disk: its first save, a minute in, said so)
            os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            os.unlink(probe)
        except FileExistsError:
            pass

    def load(self, identity: Identity, max_split: int | None = None,
             frame: Frame | None = None) -> Checkpoint | None:
        """The saved progress of this search, or None if there is no file yet. BadInput
        naming the difference for a checkpoint of another search (its board as the user
        typed it, through ``frame``, the search's), or a file that is not a checkpoint, or
        whose split is over ``max_split`` (the threads' split depth, whose nodes a kernel
        that nothing stops would list)."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError as e:
            raise BadInput(f"{self.path}: cannot read the checkpoint ({e.strerror})") from None
        except UnicodeDecodeError:  # (a table, an image...: never a checkpoint, kept)
            raise BadInput(f"{self.path} is not a pdbtool checkpoint (not UTF-8 text); give "
                           "the checkpoint another file name") from None
        if not text:  # made empty for it (CP=$(mktemp)): a save is never empty, even cut
            return None  # short (each is written beside it and renamed over it whole)
        try:
            saved = Checkpoint.from_json(text)
        except (ValueError, TypeError, KeyError, RecursionError) as e:
            written = text.startswith(f'{{"format": "{FORMAT.rsplit("-", 1)[0]}')
            raise BadInput(f"{self.path} is not a pdbtool checkpoint ({e}); " + (
                "give another file, or remove it to start afresh" if written  # damaged
                else "give the checkpoint another file name")) from None  # someone's file
        shown = saved.identity
        if frame and shown.goal != identity.goal and goal_tiles(shown.goal, frame) == frame.target:
            identity = identity._replace(goal=shown.goal)  # one goal, named or as its tiles
        if frame and shown.goal == identity.goal and shown.board != identity.board:
            # each board as the user typed it (a saved one of another size through its own
            # frame; one edited beyond its tiles as saved)
            shown = shown._replace(board=typed_board(shown, frame))
            identity = identity._replace(board=frame.board(identity.board))
        mine = identity._asdict()
        if shown.goal != identity.goal:  # each board is its goal's image: the goal is the
            del mine["board"]  # difference to name (the images were named as boards)
        differs = [f"{name} {getattr(shown, name)!r}, not {value!r}"
                   for name, value in mine.items() if getattr(shown, name) != value]
        if differs:
            raise BadInput(f"{self.path} is the checkpoint of another search: its "
                           f"{'; '.join(differs)}; give another file, or remove it to start "
                           "afresh")
        if max_split is not None and saved.split > max_split:
            raise BadInput(f"{self.path}: the checkpoint's tasks lie {saved.split} moves deep, "
                           "deeper than any search of this program splits; it is damaged")
        if self.on_resume:  # once (the command line may look before the search does)
            said, self.on_resume = self.on_resume, None
            said(self.path)
        return saved

    def due(self) -> bool:
        return time.monotonic() - self._last >= self.every

    def save(self, checkpoint: Checkpoint) -> None:
        """Replace the file with ``checkpoint``, whole or not at all; PdbError naming the
        file, the cause and what the file holds meanwhile if it cannot be written."""
        cause = self._write(checkpoint)
        if cause:
            kept = ("its last save there is whole: run the same command to resume from it"
                    if self.has_save() else "there is no earlier save to resume from")
            raise PdbError(f"{self.path}: cannot save the search's progress ({cause}); {kept}")

    def save_if_due(self, make) -> None:
        """Save ``make()`` if the interval has passed since the last save. A save that fails
        here is a warning and the search goes on (tried again an interval later; the file
        keeps its last save): a full disk costs the progress since, not the search."""
        if not self.due():
            return
        cause = self._write(make())
        if cause:
            self._last = time.monotonic()
            log.warning("%s: cannot save the search's progress (%s); the search goes on and "
                        "tries again in %s s", self.path, cause, f"{self.every:g}")

    def _write(self, checkpoint: Checkpoint) -> str | None:
        """Write the save; why it could not be written (the file keeps the last), or None."""
        try:
            with atomic_output(self.path) as tmp:
                Path(tmp).write_text(checkpoint.to_json())
        except PdbError as e:  # (a full disk: the file's own words, without their advice)
            return str(e).removeprefix(f"{self.path}: ").split("; nothing was left")[0]
        self._last = time.monotonic()
        self.saves += 1
        return None

    def remove(self) -> None:
        forget(self.path)

    @contextlib.contextmanager
    def holding(self):
        """The file held for one search (search.control.envelope): another search given
        it meanwhile on this machine is refused, naming the process that holds it (two
        searches saving over each other would each resume the other's progress). The hold
        is a listening socket in Linux's abstract namespace named for the file's path: no
        file to leave behind, and it ends with the search or its process, a kill too.
        Held already by this thread (the command line holds it before it reads the file
        and starts a cluster; Solver.search before its kernels compile), it is held on;
        another thread is refused as another process is. A search stopped short (its
        limits, Ctrl-C, SIGTERM, a cluster lost) with its progress in the file says so in a
        note on the exception, which the command's last line gives."""
        me = threading.get_ident()
        hold = claim(self.path) if self._owner != me else None
        self._owner = me
        self._held += 1
        try:
            yield
        except BaseException as e:
            stopped = (isinstance(e, LimitReached) or not isinstance(e, Exception)  # Ctrl-C
                       or getattr(e, "stops_a_search", False))  # (a cluster's head lost)
            if hold is not None and stopped and self.has_save():
                e.add_note(f"the progress is saved in {self.path}: given it again, the "
                           "search resumes there")
            raise
        finally:
            self._held -= 1
            if hold is not None:
                self._owner = None
                hold.close()

    def has_save(self) -> bool:
        """Does the file hold a save (an empty one, made for it, does not)?"""
        try:
            return self.path.stat().st_size > 0
        except OSError:
            return False


def forget(path) -> None:
    """A checkpoint's file gone (its answer is out), and what a save killed half way left
    beside it (``<name>.<pid>.<machine>.partial``: removed before only by a later save)."""
    Path(path).unlink(missing_ok=True)
    remove_stale_partials(path)


def claim(path: Path) -> socket.socket:
    """Hold ``path`` for this process (see Checkpointing.holding); BadInput if a search
    holds it already."""
    where = os.fsencode(path.parent.resolve() / path.name)
    name = b"\0pdbtool-checkpoint-" + hashlib.sha256(where).hexdigest()[:48].encode()
    hold = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        hold.bind(name)
        hold.listen(socket.SOMAXCONN)  # (never accepted: each probe below waits in it)
    except OSError as e:
        hold.close()
        if e.errno != errno.EADDRINUSE:
            raise
        raise BadInput(f"{path} is the checkpoint of a search running now ({holder(name)}); "
                       "wait for it to end, or give another file") from None
    return hold


def holder(name: bytes) -> str:
    """Who holds the checkpoint named ``name``: its process, as its socket says."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.setblocking(False)  # the holder accepts none: its backlog may be full
        try:
            probe.connect(name)
            pid, _, _ = struct.unpack("3i", probe.getsockopt(
                socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
        except OSError:  # (its backlog full of earlier probes)
            return "its process not said"
    return "in this process" if pid == os.getpid() else f"process {pid}"


class Held:
    """A search's progress kept in memory, saved only when the search stops short (its
    node budget, a halt), never while it runs; a search given the same Held later resumes
    there (``SearchControl.checkpoint``). The search runs as one without a checkpoint (on
    one thread: on the caller's, without a hand-off an iteration); so pdbd's fast lane
    hands a search past its nodes to the worker pool without it being searched again from
    the start (pdbd.jobs.FastLane)."""

    watching = False
    path = "the progress held in memory"  # named in the errors of a damaged checkpoint

    def __init__(self):
        self.saved: Checkpoint | None = None

    @property
    def empty(self) -> bool:
        """Nothing saved yet (load() would say None whatever the search)."""
        return self.saved is None

    def load(self, identity: Identity, max_split: int | None = None,
             frame: Frame | None = None) -> Checkpoint | None:
        """The progress saved for this search (None: none, or another search's)."""
        saved = self.saved
        return saved if saved is not None and saved.identity == identity else None

    def due(self) -> bool:
        return False

    def save_if_due(self, make) -> None:
        pass  # saved only when the search stops short

    def save(self, checkpoint: Checkpoint) -> None:
        self.saved = checkpoint

    def holding(self):
        return contextlib.nullcontext()  # in memory: nothing another search could share


def finished_rows(results: np.ndarray) -> dict:
    """The finished tasks of ``Tasks.results`` (a copy taken while threads write: a row
    counts once its bound is set, and its nodes were set before it)."""
    rows = results.copy()
    done = np.flatnonzero((rows >= 0).all(axis=1))
    return {int(i): [int(x) for x in rows[i]] for i in done}
