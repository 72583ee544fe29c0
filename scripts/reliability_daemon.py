"""The reliability cases against `pdbd serve` and `pdbd web` (findings 1-5 of the second probe, the
bar, and the daemon's unclear message of item 7). scripts/reliability.py runs them."""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import functools
import os
import resource
import shutil
import signal
import socket
import statistics
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from reliability_harness import (
    BIN,
    TABLE,
    Case,
    Log,
    fd_limit,
    fds,
    in_dir,
    pdbd,
    rss_mib,
    served_dir,
    spawn,
    stop,
    table_mappings,
    table_source,
    within,
)
from serving import never_sending

from pdbd.client import SolverClient
from pdbd.v1 import solver_pb2 as pb
from pdbd.v1 import solver_pb2_grpc as pb_grpc
from pdbtool.errors import PdbError
from pdbtool.search.algorithms import Algorithm

EASY15 = tuple(range(1, 14)) + (0, 14, 15)  # two moves from the blank-last goal
# Two of the 80-move positions (the most any 15-puzzle needs): minutes with 15/6-6-3.
HARD = ((0, 12, 9, 13, 15, 11, 10, 14, 3, 7, 2, 5, 4, 8, 6, 1),
        (0, 12, 10, 13, 15, 11, 14, 9, 3, 7, 2, 5, 4, 8, 6, 1))
SERVING = health_pb2.HealthCheckResponse.SERVING
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
OWN_CONNECTION = [("grpc.use_local_subchannel_pool", 1)]  # not shared with other channels


def channel(address: str) -> grpc.Channel:
    return grpc.insecure_channel(address, options=OWN_CONNECTION)


class Holders:
    """``n`` calls of ``path`` that never send their request, each opened again whenever
    the server ends it (the attack of finding 1), on a channel of their own."""

    def __init__(self, address: str, path: str, n: int):
        self.channel = channel(address)
        self.stop = threading.Event()
        self.renewed = 0
        self.threads = [threading.Thread(target=self._hold, args=(path,), daemon=True)
                        for _ in range(n)]
        for t in self.threads:
            t.start()

    def _hold(self, path: str) -> None:
        while not self.stop.is_set():
            f = never_sending(self.channel, path, self.stop, timeout=120)
            while not f.done() and not self.stop.is_set():
                time.sleep(0.02)
            f.cancel()
            self.renewed += 1

    def __enter__(self):
        time.sleep(1.0)  # let the calls open
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join(10)
        self.channel.close()


def health(address: str, timeout: float) -> str:
    with channel(address) as ch:
        try:
            r = health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(),
                                                     timeout=timeout)
            return "SERVING" if r.status == SERVING else str(r.status)
        except grpc.RpcError as e:
            return e.code().name


def answered(address: str, board=EASY15, deadline: float = 10.0) -> bool:
    return attempt(address, board, deadline) is None


def attempt(address: str, board=EASY15, deadline: float = 10.0, client=None) -> str | None:
    """None if the board is answered, else the error, shortened."""
    try:
        with SolverClient(address) as c:
            c.solve(board, deadline=deadline, on_behalf=client)
        return None
    except PdbError as e:
        return str(e)[:100]


def counters(address: str) -> dict:
    with SolverClient(address) as c:
        return c.info()["counters"]


# -- finding 1: idle calls and connections --------------------------------------------------

def idle_health(tmp: Path) -> tuple[str, bool]:
    with pdbd(served_dir(tmp), "--request-timeout", "2") as d, \
            Holders(d.address, "/grpc.health.v1.Health/Check", 8) as h:
        ok = 0
        with channel(d.address) as ch:
            stub = health_pb2_grpc.HealthStub(ch)
            for _ in range(100):
                try:
                    ok += stub.Check(health_pb2.HealthCheckRequest(), timeout=0.1).status == SERVING
                except grpc.RpcError:
                    pass
                time.sleep(0.05)
        return f"{ok}/100 SERVING within 100 ms ({h.renewed} idle calls renewed)", ok >= 95


def idle_solve(tmp: Path) -> tuple[str, bool]:
    with pdbd(served_dir(tmp), "--request-timeout", "2") as d, \
            Holders(d.address, "/pdbd.v1.Solver/Solve", 42) as h:
        errors = [e for e in (attempt(d.address, deadline=2) for _ in range(20)) if e]
        return (f"{20 - len(errors)}/20 easy solves answered ({h.renewed} idle calls renewed)"
                + (f"; first refusal: {errors[0]}" if errors else "")), not errors


def held_watch(tmp: Path) -> tuple[str, bool]:
    with pdbd(served_dir(tmp)) as d, channel(d.address) as attacker:
        stub = health_pb2_grpc.HealthStub(attacker)
        streams = [stub.Watch(health_pb2.HealthCheckRequest(), timeout=120) for _ in range(8)]
        firsts = []
        for s in streams:
            try:
                firsts.append(next(s).status == SERVING)
            except grpc.RpcError as e:
                firsts.append(e.code().name)
        check = health(d.address, 1.0)
        with channel(d.address) as ch:
            ninth = health_pb2_grpc.HealthStub(ch).Watch(health_pb2.HealthCheckRequest(),
                                                         timeout=3)
            try:
                outcome = "answered" if next(ninth).status == SERVING else "other"
            except grpc.RpcError as e:
                outcome = e.code().name
        for s in streams:
            s.cancel()
        held = sum(f is True for f in firsts)
        return (f"{held} Watch streams held; Check: {check}; a 9th Watch: {outcome}",
                check == "SERVING" and outcome != "DEADLINE_EXCEEDED")


def raw_connections(address: str, n: int) -> list[socket.socket]:
    host, port = address.rsplit(":", 1)
    out = []
    for _ in range(n):
        s = socket.create_connection((host, int(port)), timeout=5)
        s.sendall(PREFACE)
        out.append(s)
    return out


def closed_by_server(s: socket.socket) -> bool:
    s.setblocking(False)
    try:
        while True:
            data = s.recv(65536)
            if not data:
                return True
    except BlockingIOError:
        return False
    except OSError:
        return True


def idle_connections(tmp: Path) -> tuple[str, bool]:
    with pdbd(served_dir(tmp), "--idle-timeout", "3") as d:
        socks = raw_connections(d.address, 50)
        took = within(lambda: all(closed_by_server(s) for s in socks), 30, step=0.5)
        closed = sum(closed_by_server(s) for s in socks)
        for s in socks:
            s.close()
        return (f"{closed}/50 idle connections closed by the server"
                + (f" within {took:.0f} s" if took is not None else " within 30 s")), closed == 50


def surplus_connections(tmp: Path) -> tuple[str, bool]:
    with pdbd(served_dir(tmp), preexec_fn=fd_limit(1024)) as d:
        socks = raw_connections(d.address, 1100)
        try:
            times = []
            for _ in range(5):
                t = time.monotonic()
                state = health(d.address, 2.0)
                times.append((state, time.monotonic() - t))
            ok = sum(s == "SERVING" for s, _ in times)
            limit = Path(f"/proc/{d.pid}/limits").read_text()
            soft = next(line.split()[3] for line in limit.splitlines()
                        if line.startswith("Max open files"))
        finally:
            for s in socks:
                s.close()
        return (f"{ok}/5 health checks SERVING within 2 s beside 1,100 open connections "
                f"(daemon started with 1,024 fds, now {soft})"), ok == 5


def budget_log(tmp: Path) -> tuple[str, bool]:
    """A daemon whose hard fd limit is 512 (a budget of 384 connections): 500 connections,
    closed, then 500 again within the minute: gRPC closes those beyond the budget without
    a word; pdbd's log says so once."""
    def hard_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (512, 512))

    with pdbd(served_dir(tmp), preexec_fn=hard_limit) as d:
        mark = len(d.log.lines)
        for _ in range(2):
            socks = []
            try:
                for _ in range(500):
                    with contextlib.suppress(OSError):
                        socks.extend(raw_connections(d.address, 1))
                time.sleep(3)  # the daemon looks every second
            finally:
                for s in socks:
                    s.close()
            time.sleep(2)
        said = [line for line in d.log.lines[mark:] if "at the budget" in line]
    first = said[0].split(" pdbd ", 1)[-1][:90] if said else "none"
    return (f"{len(said)} line(s) in 2 rounds of 500 connections against a budget of 384: "
            f"'{first}...'"), len(said) == 1


# -- finding 2: rollouts ----------------------------------------------------------------------

def rollouts(tmp: Path) -> tuple[str, bool]:
    from pdbtool.loading import install
    from pdbtool.tables.packing import pack

    d = served_dir(tmp)
    packed = tmp / "15-6-6-3.pdbpack"
    pack(d / TABLE, packed)
    before_failed, after_failed, sizes = 0, 0, []
    with pdbd(d) as daemon:
        for _ in range(10):
            install(packed, d / TABLE, force=True)  # unpacked, verified, renamed over it
            before_failed += not answered(daemon.address)
            mark = len(daemon.log.lines)
            os.kill(daemon.pid, signal.SIGHUP)
            daemon.log.wait_for("reload", 60, mark)
            within(lambda mark=mark: any("reloaded" in x or "refused" in x
                                         for x in daemon.log.lines[mark:]), 60)
            after_failed += not answered(daemon.address)
            sizes.append((fds(daemon.pid), rss_mib(daemon.pid)))
    grew = sizes[-1][0] - sizes[1][0], sizes[-1][1] - sizes[1][1]
    return (f"queries failed: {before_failed} before SIGHUP, {after_failed} after; fds "
            f"{sizes[1][0]} -> {sizes[-1][0]}, RSS {sizes[1][1]:.0f} -> {sizes[-1][1]:.0f} MiB "
            "(rounds 2 to 10)"), (before_failed == after_failed == 0 and grew[0] <= 2
                                  and grew[1] <= 32)


def metadata_changes(tmp: Path) -> tuple[str, bool]:
    d = served_dir(tmp)
    with pdbd(d) as daemon:
        results = {}
        os.chmod(d / TABLE, 0o600)
        results["chmod"] = answered(daemon.address)
        os.utime(d / TABLE)
        results["touch"] = answered(daemon.address) or answered(daemon.address)
        os.link(d / TABLE, tmp / "another-name.h5")
        results["ln"] = answered(daemon.address)
    return (", ".join(f"{k}: {'answered' if v else 'FAILED'}" for k, v in results.items()),
            all(results.values()))


def refused_reload(tmp: Path) -> tuple[str, bool]:
    from reference import flip_byte

    from pdbtool.tables import artifact

    d = served_dir(tmp)
    with pdbd(d) as daemon:
        bad = d / "15-6-6-3-bad.h5"
        shutil.copy(table_source(), bad)
        flip_byte(bad, artifact.read_meta(bad).data_offset + 4321)
        mark = len(daemon.log.lines)
        os.kill(daemon.pid, signal.SIGHUP)
        refused = daemon.log.wait_for("reload refused", 60, mark)
        ok = sum(answered(daemon.address) for _ in range(5))
    return (f"reload {'refused' if refused else 'NOT refused'}; {ok}/5 queries answered "
            "afterwards"), refused and ok == 5


# -- finding 3: leaks ---------------------------------------------------------------------------

def reload_leak(tmp: Path) -> tuple[str, bool]:
    with pdbd(served_dir(tmp)) as d:
        answered(d.address)
        start = fds(d.pid), table_mappings(d.pid), rss_mib(d.pid)
        for _ in range(20):
            mark = len(d.log.lines)
            os.kill(d.pid, signal.SIGHUP)
            d.log.wait_for("reloaded", 60, mark)
            answered(d.address)
        time.sleep(1)
        end = fds(d.pid), table_mappings(d.pid), rss_mib(d.pid)
    return (f"after 20 reloads: fds {start[0]} -> {end[0]}, table mappings {start[1]} -> "
            f"{end[1]}, RSS {start[2]:.0f} -> {end[2]:.0f} MiB"), (
        end[0] <= start[0] + 2 and end[1] <= start[1] and end[2] <= start[2] + 32)


def astar_memory(tmp: Path) -> tuple[str, bool]:
    with pdbd(served_dir(tmp), "--max-search-memory", "256M", "--threads", "2") as d:
        answered(d.address)
        base = rss_mib(d.pid)
        peak = [base]
        outcomes = []

        def search(board):
            try:
                with SolverClient(d.address) as c:
                    c.solve(board, deadline=120, algorithm=Algorithm("astar", max_memory=256 << 20))
                outcomes.append("solved")
            except PdbError as e:
                outcomes.append(type(e).__name__)

        threads = [threading.Thread(target=search, args=(b,)) for b in HARD]
        for t in threads:
            t.start()
        while any(t.is_alive() for t in threads):
            peak.append(rss_mib(d.pid))
            time.sleep(0.1)
        freed = within(lambda: rss_mib(d.pid) <= base + 64, 5, step=0.1)
        now = rss_mib(d.pid)
    return (f"{', '.join(outcomes)}; RSS {base:.0f} MiB before, {max(peak):.0f} at the peak, "
            f"{now:.0f} MiB " + (f"{freed:.1f} s after they ended" if freed is not None
                                  else "5 s after they ended (not freed)")),\
        freed is not None and max(peak) > base + 128


# -- finding 4: pdbd web -------------------------------------------------------------------------

def web(address: str):
    from reference import free_port

    port = free_port()
    proc = spawn(BIN / "pdbd", "web", "--server", address, "--listen", f"127.0.0.1:{port}")
    log = Log(proc)
    url = f"http://127.0.0.1:{port}"

    def up():
        try:
            urllib.request.urlopen(url + "/", timeout=2).read()
            return True
        except OSError:
            return False

    if within(up, 60, step=0.2) is None:
        stop(proc)
        raise RuntimeError(f"pdbd web did not start: {log.text()[-300:]}")
    return proc, url, port


def http(url: str, data=None, headers=None, method=None):
    req = urllib.request.Request(url, data=data, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.headers, r.read()  # headers: case-insensitive
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def web_bind(tmp: Path) -> tuple[str, bool]:
    proc = spawn(BIN / "pdbd", "web", "--listen", "0.0.0.0:0")
    try:
        _, err = proc.communicate(timeout=30)
    finally:
        stop(proc)
    line = err.strip().splitlines()[-1] if err.strip() else ""
    return f"exit {proc.returncode}: {line}", proc.returncode not in (0, None) and "refusing" in line


def web_body(tmp: Path) -> tuple[str, bool]:
    with pdbd(served_dir(tmp)) as d:
        proc, url, port = web(d.address)
        try:
            base = rss_mib(proc.pid)
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall((f"POST /api/solve HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: {url}\r\n"
                       "Content-Type: application/json\r\nContent-Length: 104857600\r\n\r\n")
                      .encode())
            sent = 0
            status = b""
            s.settimeout(0.05)
            end = time.monotonic() + 20
            while time.monotonic() < end and sent < 100 << 20:
                try:
                    status = s.recv(200)
                    if status:
                        break
                except TimeoutError:
                    pass
                try:
                    sent += s.send(b"x" * 65536)
                except OSError:
                    break
            s.close()
            grown = rss_mib(proc.pid) - base
        finally:
            stop(proc)
    code = status.split(b" ")[1].decode() if status.count(b" ") else "none"
    return (f"HTTP {code} after {sent / 2**20:.1f} MiB of the 100 MiB sent; pdbd web grew "
            f"{grown:.0f} MiB"), code == "413" and grown < 20


def web_cross_origin(tmp: Path) -> tuple[str, bool]:
    with pdbd(served_dir(tmp)) as d:
        proc, url, _ = web(d.address)
        try:
            before = counters(d.address)["requests"]
            board = " ".join(map(str, EASY15))
            code, _, _ = http(url + "/api/solve", data=f'{{"board": "{board}"}}'.encode(),
                              headers={"Origin": "http://evil.example",
                                       "Content-Type": "text/plain"})
            host, _, _ = http(url + "/", headers={"Host": "evil.example"})
            _, headers, _ = http(url + "/")
            after = counters(d.address)["requests"]
        finally:
            stop(proc)
    csp = headers.get("Content-Security-Policy", "")
    framed = "frame-ancestors 'none'" in csp and headers.get("X-Frame-Options") == "DENY"
    return (f"cross-origin text/plain POST: HTTP {code}, searches started {after - before}; "
            f"Host: evil.example: HTTP {host}; frame-ancestors 'none' and X-Frame-Options DENY: "
            f"{'yes' if framed else 'no'}"), (code in (403, 415) and after == before
                                              and 400 <= host < 500 and framed)


def web_per_client(tmp: Path) -> tuple[str, bool]:
    with pdbd(served_dir(tmp)) as d:
        proc, url, _ = web(d.address)
        try:
            board = " ".join(map(str, HARD[0]))
            body = f'{{"board": "{board}", "deadline": 8}}'.encode()
            headers = {"Origin": url, "Content-Type": "application/json"}
            with cf.ThreadPoolExecutor(8) as pool:
                codes = list(pool.map(lambda _: http(url + "/api/solve", body, headers)[0],
                                      range(8)))
        finally:
            stop(proc)
    refused = codes.count(429)
    return f"8 searches from one browser: HTTP {sorted(codes)}", refused >= 4


def web_log_flood(tmp: Path) -> tuple[str, bool]:
    """pdbd web out of file descriptors (a 64-fd limit, 300 connections held open): its
    log stays small (the probe saw 738 MB in 100 s under a 1,024-fd limit)."""
    from reference import free_port

    with pdbd(served_dir(tmp)) as d:
        port = free_port()
        proc = spawn(BIN / "pdbd", "web", "--server", d.address, "--listen",
                     f"127.0.0.1:{port}", preexec_fn=fd_limit(64))
        log = Log(proc)
        try:
            if within(lambda: "pdbd web on" in log.text(), 60, 0.2) is None:
                return f"pdbd web did not start: {log.text()[-200:]}", False
            mark = len(log.lines)
            socks = []
            end = time.monotonic() + 10
            while len(socks) < 300 and time.monotonic() < end:
                try:
                    socks.append(socket.create_connection(("127.0.0.1", port), timeout=1))
                except OSError:
                    time.sleep(0.01)
            time.sleep(5)
            for s in socks:
                s.close()
            time.sleep(2)
        finally:
            stop(proc)
            log.thread.join(10)
    flood = log.lines[mark:]
    size = sum(len(x) for x in flood)
    common = Counter(flood).most_common(1)[0][0][:120].strip() if flood else ""
    return (f"{len(socks)} connections held 5 s against 64 fds, then closed: {size:,} bytes "
            f"of log in {len(flood):,} lines" + (f", mostly '{common}'" if common else "")), \
        size < 50_000


# -- finding 5: fairness ------------------------------------------------------------------------

def hard_searches(address: str, client: str, n: int, deadline: float):
    pool = cf.ThreadPoolExecutor(n)

    def one(k):
        try:
            with SolverClient(address) as c:
                c.solve(HARD[k % 2], deadline=deadline, on_behalf=client)
            return "solved"
        except PdbError as e:
            return getattr(e, "limit", None) or type(e).__name__

    return pool, [pool.submit(one, k) for k in range(n)]


def fair_easy(tmp: Path) -> tuple[str, bool]:
    with pdbd(served_dir(tmp), "--threads", "2", "--trusted-proxy", "127.0.0.1") as d:
        answered(d.address)
        pool, _ = hard_searches(d.address, "hard-client", 2, 40)
        within(lambda: counters(d.address)["running"] >= 2, 10)
        times, errors = [], []
        for _ in range(10):
            t = time.monotonic()
            error = attempt(d.address, deadline=30, client="easy-client")
            times.append(time.monotonic() - t)
            if error:
                errors.append(error)
        pool.shutdown(wait=False, cancel_futures=True)
    return (f"easy queries behind 2 hard searches of another client: median "
            f"{statistics.median(times) * 1000:.0f} ms, max {max(times) * 1000:.0f} ms, "
            f"{len(errors)} failed" + (f" ({errors[0]})" if errors else "")), \
        max(times) <= 0.2 and not errors


def client_share(tmp: Path) -> tuple[str, bool]:
    with pdbd(served_dir(tmp), "--threads", "2", "--trusted-proxy", "127.0.0.1") as d:
        pool, futures = hard_searches(d.address, "greedy-client", 40, 20)
        time.sleep(3)
        done = [f.result() for f in futures if f.done()]
        held = counters(d.address)["in_flight"]
        other = attempt(d.address, deadline=10, client="other-client")
        pool.shutdown(wait=False, cancel_futures=True)
    return (f"one client of 40 concurrent searches holds {held} slots (threads 2 + queue 32), "
            f"{len(done)} refused at once; another client's easy query "
            + ("answered" if other is None else f"NOT answered ({other})")), \
        held <= 8 and other is None


# -- item 7: the daemon's message -----------------------------------------------------------------

def stream_deadline(tmp: Path) -> tuple[str, bool]:
    with pdbd(served_dir(tmp), "--threads", "1") as d:
        mark = len(d.log.lines)
        with channel(d.address) as ch:
            events = pb_grpc.SolverStub(ch).SolveStream(pb.SolveRequest(tiles=HARD[0]), timeout=1.5)
            try:
                for _ in events:
                    pass
                code = "OK"
            except grpc.RpcError as e:
                code = e.code().name
        time.sleep(1.5)
        lines = [x.strip().split(" ", 3)[-1] for x in d.log.lines[mark:]
                 if "stream" in x or "deadline" in x]
    return (f"client saw {code}; log: {' | '.join(lines) or 'nothing'}"), \
        any("deadline" in x for x in lines) and not any("abandoned" in x for x in lines)


def cases(tmp: Path) -> list[Case]:
    c = functools.partial(in_dir, tmp)

    return [
        c("idle-health", "1, bar", ">= 95/100 health checks SERVING within 100 ms beside 8 "
          "never-sending Check calls, renewed", idle_health),
        c("idle-solve", "1, bar", "20/20 easy solves answered beside 42 never-sending Solve "
          "calls, renewed", idle_solve),
        c("held-watch", "1", "8 held Watch streams: Check still SERVING; a 9th Watch answered "
          "or refused at once (the same address), never left hanging", held_watch),
        c("idle-connections", "1", "--idle-timeout 3: 50/50 idle connections closed", idle_connections),
        c("surplus-connections", "1", "1,100 connections under a 1,024-fd start: health still "
          "SERVING within 2 s", surplus_connections),
        c("budget-log", "1", "connections beyond the budget (a 512-fd daemon, 500 "
          "connections, twice within a minute): logged once", budget_log),
        c("rollout-rename", "2, bar", "10 rollouts (unpack --force: verify, rename over the "
          "served file): every query answered before and after each SIGHUP; fds and RSS flat",
          rollouts, 400),
        c("metadata-changes", "2", "chmod, touch, ln of a served file: queries answered",
          metadata_changes),
        c("refused-reload", "2", "a reload refused (a corrupt file) keeps every size serving",
          refused_reload),
        c("reload-leak", "3", "20 SIGHUPs: fds, table mappings and RSS flat", reload_leak),
        c("astar-memory", "3, bar", "two A* searches stopped at 256M give their memory back "
          "within 5 s, no other traffic", astar_memory),
        c("web-bind", "4", "pdbd web --listen 0.0.0.0 without HTTPS or --insecure: refused, "
          "saying why", web_bind),
        c("web-body", "4, bar", "a 100 MB body refused (413) without being read", web_body),
        c("web-cross-origin", "4, bar", "cross-origin text/plain POST refused (403/415), no "
          "search; a foreign Host refused; never framed", web_cross_origin),
        c("web-per-client", "4", "one browser's searches capped (--max-per-client 4: 429 "
          "beyond)", web_per_client),
        c("web-log-flood", "4", "pdbd web out of fds (64, 300 connections): its log stays "
          "under 50 KB", web_log_flood),
        c("fair-easy", "5", "an easy query waits <= 200 ms behind two hard searches of "
          "another client", fair_easy),
        c("client-share", "5", "one client holds a small share of the slots (<= 8 of 34)",
          client_share),
        c("stream-deadline-log", "7-msg", "a stream's deadline is logged as a deadline, not "
          "'abandoned'", stream_deadline),
    ]
