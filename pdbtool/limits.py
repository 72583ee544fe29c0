"""Node budgets, time limits and memory sizes: one validation for every entry point.

``pdbtool solve``, ``pdbd query``, the gRPC client, the server and ``SearchControl`` all take
a budget and a number of seconds through here, so the same value is accepted or refused
with the same message everywhere. Loads neither numba nor grpc.
"""

from __future__ import annotations

import math
import os
import re
import resource

from pdbtool.errors import BadInput

MAX_BUDGET = (1 << 63) - 1  # the kernels count nodes in int64
MAX_SECONDS = 2e6           # about 23 days: gRPC takes its durations in milliseconds in a
                            # 32-bit integer (at most 24.8 days); larger limits crashed pdbd
MAX_THREADS = 1024          # more would only queue: a thread each, and the split depth grows
                            # with them (10^8 threads asked for gigabytes before a node)


def budget(value, what: str = "node budget") -> int:
    """A node budget: a whole number from 1 to 2^63 - 1."""
    n = whole_number(value, what)
    if not 1 <= n <= MAX_BUDGET:
        raise BadInput(f"{what} must be from 1 to {MAX_BUDGET:,} (2^63 - 1), not {n:,}")
    return n


def threads(value, what: str = "threads") -> int:
    """A number of threads: a whole number from 1 to MAX_THREADS."""
    n = whole_number(value, what)
    if not 1 <= n <= MAX_THREADS:
        raise BadInput(f"{what} must be from 1 to {MAX_THREADS}, not {n:,}")
    return n


def whole_number(value, what: str) -> int:
    """``value`` (an int, or its digits as text) as an int; BadInput for a fraction, a
    float that is not whole, or anything else."""
    try:
        n = int(value)
        if n != value and not isinstance(value, str):
            raise ValueError
    except (TypeError, ValueError, OverflowError):
        raise BadInput(f"{what} must be a whole number, not {value!r}") from None
    return n


def seconds(value, what: str = "timeout") -> float:
    """A time limit in seconds: a finite number above 0 and at most MAX_SECONDS."""
    try:
        s = float(value)
    except (TypeError, ValueError, OverflowError):
        raise BadInput(f"{what} must be a number of seconds, not {value!r}") from None
    if not (math.isfinite(s) and 0 < s <= MAX_SECONDS):
        raise BadInput(f"{what} must be more than 0 and at most {MAX_SECONDS:g} seconds, not {value}")
    return s


def size(text, what: str = "size") -> int:
    """Bytes from '512M', '2G', '1.5GiB', '100000' (binary units)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*", str(text), re.I)
    if not m:
        raise BadInput(f"{what}: not a size: {text!r} (e.g. 512M, 2G)")
    return int(float(m.group(1)) * 1024 ** " kmgt".index(m.group(2).lower() or " "))


def memory_caps() -> list[tuple[str, int]]:
    """What bounds the memory of one process here, each in words and bytes: the machine's
    physical memory and, when set, what this process may take (``ulimit -v``). A need
    beyond one of them cannot be met: the caller refuses it before any work."""
    caps = [("this machine has", os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))]
    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    if soft != resource.RLIM_INFINITY:
        caps.append(("this process may take (ulimit -v)", soft))
    return caps


FIRST_TRY_BYTES = 64 << 20  # a keyed search's first room (about 1.5 M states of A*)


def memory_tries(budget_bytes: int, first: int = FIRST_TRY_BYTES) -> list[int]:
    """The memory a search that keys its states in a hash table tries in turn, each 8x the
    one before, up to ``budget_bytes``: a table sized for the whole budget is touched at
    random (with transparent huge pages, 2 MiB a touch), so an easy search given 30 GiB
    took 8.6 GB and 19 s where 64 MiB served in 0.15 s. A try that fills up starts the
    search again with the next (at most 8/7 of the work the last try alone does)."""
    tries = []
    room = min(first, budget_bytes)
    while room < budget_bytes:
        tries.append(room)
        room *= 8
    return tries + [budget_bytes]


def hashed_states(budget_bytes: int, bytes_per_state: int, most: int) -> tuple[int, int]:
    """(states, slots): the most states, at most ``most`` (at least 16), that fit in
    ``budget_bytes`` at ``bytes_per_state`` each beside their hash table of ``slots`` int32
    slots, a power of two at least twice the states (so 8 to 16 bytes a state: the search
    that held only what ``bytes_per_state`` plus 8 allowed took up to 1.2x its memory)."""
    states = max(16, min(budget_bytes // (bytes_per_state + 16), most))
    slots = 1 << (2 * states - 1).bit_length()
    room = (budget_bytes - 4 * slots) // bytes_per_state  # the same table holds up to slots / 2
    return max(states, min(slots // 2, room, most)), slots
