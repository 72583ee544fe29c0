"""The animation page as a file (no browser here: test_browser.py runs it) and the commands
that write traces and pages: `pdbtool solve --trace`, `pdbtool animate`."""

import json
import re

import pytest

from pdbtool.cli import animate, main as cli
from pdbtool.heuristics.table_free import table_free
from pdbtool.search import trace
from pdbtool.search.solver import Solver

BOARD = "8 6 7 2 5 4 3 0 1"


def run(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def inlined(html: str) -> dict | None:
    m = re.search(r'<script id="trace-data" type="application/json">(.*?)</script>', html, re.S)
    return json.loads(m.group(1))


def test_page_is_self_contained_and_carries_the_trace():
    t = trace.record(Solver(table_free("manhattan", 3)), (1, 2, 3, 4, 5, 6, 0, 7, 8))
    t.note = "a note with </script><!-- in it"
    html = animate.page(t)
    assert inlined(html) == json.loads(json.dumps(t.to_dict()))
    # Nothing is fetched: no external script, style, font or image; inline only.
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=", html)
    assert not re.search(r"url\(|@import|https?://(?!www\.w3\.org/2000/svg)", html)
    assert html.count("</script>") == 2 and 'data-mode="file"' in html
    live = animate.page(None, live=True)
    assert inlined(live) is None and 'data-mode="live"' in live


def test_solve_trace_writes_the_result_and_nodes(tmp_path, capsys):
    path = tmp_path / "t.json"
    code, out, err = run(capsys, "solve", "--heuristic", "manhattan", "--json", "--trace", str(path), BOARD)
    assert code == 0 and f"wrote {path}: all 16,184 nodes recorded" in err
    t = trace.load(path)
    assert t.result == json.loads(out) and t.complete
    assert [i["nodes"] for i in t.result["iterations"]] == [5, 63, 355, 2436, 10640, 2685]
    code, _, err = run(capsys, "solve", "--heuristic", "manhattan", "--trace", str(path), "--trace-cap", "10",
                       "--threads", "2", "--force", BOARD)
    assert code == 0 and "2 threads" in err and trace.load(path).events is None


def test_animate_from_a_board_and_from_a_trace(tmp_path, capsys):
    page = tmp_path / "solve.html"
    code, out, _ = run(capsys, "animate", "--heuristic", "manhattan", "--trace-cap", "1000", "-o", str(page), BOARD)
    assert code == 0 and f"wrote {page}: 31 moves, 6 iterations, the first 1,000 of 16,184" in out
    d = inlined(page.read_text())
    assert d["events_recorded"] == 1000 and d["result"]["length"] == 31
    t = tmp_path / "t.json"
    run(capsys, "solve", "--heuristic", "manhattan", "--goal", "blank-first", "--trace", str(t), "--quiet",
        "1 2 3 4 5 6 7 8 0 9 10 11 12 13 14 15")
    code, out, _ = run(capsys, "animate", "--json", "--trace", str(t), "-o", str(page), "--force")
    d = json.loads(out)  # the search's result as solve --json gives it, as the trace holds it
    assert code == 0 and d["events_recorded"] == inlined(page.read_text())["events_recorded"]
    assert d["result"] == trace.load(t).result and d["path"] == str(page)
    assert inlined(page.read_text())["result"]["size"] == 4


def test_refusals_are_bad_input(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # animate's page is ./solve.html, which the demo leaves
    (tmp_path / "solve.html").write_text("the demo's page")  # (a bad trace is said first)
    not_json = tmp_path / "x.json"
    not_json.write_text("[]")
    boards = tmp_path / "boards.txt"
    boards.write_text(BOARD + "\n")
    for argv, message in (
            (["animate"], "no board"),
            (["animate", "--trace", str(not_json)], "not a pdbtool trace"),
            (["animate", "--trace", str(not_json), BOARD], "either a BOARD or --trace"),
            (["animate", "1 2 3"], "not a square board"),
            (["animate", "-o", "-", BOARD], "not standard output"),  # (a file named "-")
            (["solve", "--trace", "-", BOARD], "not standard output"),
            (["solve", "--file", str(boards), "--trace", "t.json"], "--trace records one board"),
            (["solve", "--heuristic", "manhattan", "--trace", str(tmp_path / "t.json"),
              "--trace-cap", "100000000000", BOARD], "a trace records at most 10,000,000")):
        code, _, err = run(capsys, *argv)
        assert code == 2 and message in err, (argv, err)
    assert not (tmp_path / "-").exists()


def test_traces_and_pages_never_overwrite_by_surprise(tmp_path, capsys, art_dir):
    """--trace and animate's page: an existing file only with --force, never a table the
    command may read, its --trace input, a link or a special file; nothing half-written."""
    table = tmp_path / "8-full.h5"
    table.symlink_to(art_dir / "8-full.h5")
    before = (art_dir / "8-full.h5").read_bytes()
    board = "8 6 7 2 5 4 3 0 1"
    t = tmp_path / "t.json"
    code, _, _ = run(capsys, "solve", "--artifact", str(art_dir / "8-full.h5"), "--trace",
                     str(t), "--quiet", board)
    assert code == 0 and trace.load(t).result["length"] == 31
    written = t.read_bytes()
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me")
    link = tmp_path / "link.json"
    link.symlink_to(precious)
    for argv, message in (
            (["solve", "--trace", str(t), board], "t.json exists: give --force"),
            (["solve", "--artifact", str(art_dir / "8-full.h5"), "--trace",
              str(art_dir / "8-full.h5"), "--force", board], "is the input"),
            (["solve", "--artifacts", str(tmp_path), "--trace", str(table), "--force", board],
             "refusing"),
            (["solve", "--trace", str(link), "--force", board], "is a symbolic link"),
            (["animate", "--trace", str(t), "-o", str(t), "--force"], "is the input"),
            (["animate", "--trace", str(t), "-o", str(t.with_name("x.html")), "--force",
              "--artifacts", str(art_dir)], "--artifacts would change nothing"),  # none read
            (["animate", "--trace", str(t), "-o", str(t.with_name("x.html")), "--force"], None),
            (["animate", "--trace", str(t), "-o", str(t.with_name("x.html"))], "exists: give --force")):
        code, _, err = run(capsys, *argv)
        if message is None:
            assert code == 0, err
        else:
            assert code == 2 and message in err, (argv, err)
    assert t.read_bytes() == written and precious.read_text() == "keep me"
    assert (art_dir / "8-full.h5").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "8-full.h5", "link.json", "precious.txt", "t.json", "x.html"]


def test_a_trace_or_page_never_replaces_a_table(tmp_path, capsys, art_dir, monkeypatch):
    """Not the default ./artifacts' tables (read when no table is named), not any other
    table or pack (an HDF5 file), even with --force; a missing directory is said before
    the search."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "artifacts").mkdir()
    table = tmp_path / "artifacts" / "8-full.h5"
    table.write_bytes((art_dir / "8-full.h5").read_bytes())
    other = tmp_path / "other.h5"
    other.write_bytes(table.read_bytes())
    before = table.read_bytes()
    (tmp_path / "artifacts" / "8-full.h5.verified").write_text("{}")
    for argv, message in (
            (["animate", "-o", "artifacts/8-full.h5.verified", "--force", BOARD],
             "is the verification stamp of the table artifacts/8-full.h5"),
            (["solve", "--trace", "artifacts/8-full.h5.verified", "--force", BOARD],
             "is the verification stamp"),
            (["solve", "--trace", str(table), "--force", BOARD], "is the input"),
            (["animate", "-o", "artifacts/8-full.h5", "--force", BOARD], "is the input"),
            (["solve", "--heuristic", "manhattan", "--trace", str(other), "--force", BOARD],
             "other.h5 is an HDF5 file (a table or a pack): refusing to write over it"),
            (["animate", "--heuristic", "manhattan", "-o", str(other), "--force", BOARD],
             "is an HDF5 file"),
            (["solve", "--trace", "nodir/t.json", BOARD], "nodir/t.json: no such directory nodir")):
        code, out, err = run(capsys, *argv)
        assert code == 2 and message in err and not out, (argv, err)
    assert table.read_bytes() == before and other.read_bytes() == before
    assert (tmp_path / "artifacts" / "8-full.h5.verified").read_text() == "{}"


@pytest.mark.parametrize("edit, says", [
    (lambda d: d["result"].pop("nodes_generated"), "belong: result.nodes_generated"),
    (lambda d: d.update(events_cap="abc"), "belong: events_cap"),
    (lambda d: d["result"].update(iterations=5), "belong: result.iterations"),
    (lambda d: d["events"]["h"].__setitem__(0, 1.5), "belong: events"),
    (lambda d: d["events"].update(g=5), "events are not columns"),
    (lambda d: d["result"].update(goal=5), "the trace's result is damaged"),
    (lambda d: d["result"]["moves"].reverse(), "its tiles moved are not those moves"),
    # whole numbers out of their range: the page was written and failed in the browser
    (lambda d: d["events"].update(outcome=[7] * len(d["events"]["outcome"])),
     "events' outcome reaches 7, beyond 2"),
    (lambda d: d["events"].update(blank=[99] * len(d["events"]["blank"])),
     "events' blank reaches 99, beyond 8"),
    (lambda d: d["events"].update(iteration=[50] * len(d["events"]["iteration"])),
     "events' iteration reaches 50"),
    (lambda d: d["result"].update(path_h=["<script>"]), "path_h is not the h of each board"),
    (lambda d: d["result"].update(nodes_generated=3), "50 events of a search that generated 3")])
def test_a_damaged_trace_is_refused_by_name(tmp_path, capsys, edit, says):
    t = trace.record(Solver(table_free("manhattan", 3)), tuple(map(int, BOARD.split())), cap=50)
    d = json.loads(json.dumps(t.to_dict()))
    edit(d)
    path = tmp_path / "t.json"
    path.write_text(json.dumps(d))
    code, out, err = run(capsys, "animate", "--trace", str(path), "-o", str(tmp_path / "p.html"))
    assert code == 2 and says in err and "Traceback" not in err, err
    assert not (tmp_path / "p.html").exists()


def test_a_trace_that_is_no_file_or_nested_too_deep_is_refused(tmp_path, capsys):
    """A FIFO given as the trace waited for a writer for good; JSON nested past Python's
    limit was a RecursionError's traceback."""
    import os

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    for path, says in ((fifo, "fifo: not a regular file: a FIFO"),
                       (deep, "deep.json: not a pdbtool trace (lists or objects nested too deep)")):
        code, out, err = run(capsys, "animate", "--trace", str(path), "-o", str(tmp_path / "p.html"))
        assert code == 2 and says in err and "Traceback" not in err, err
    assert not (tmp_path / "p.html").exists()


def test_a_traced_search_counts_its_recorded_nodes_in_its_memory():
    """The recorded nodes are held by the search: 100,000 of them (2.3 MB) were left out of
    its peak memory, which said only the plain search's arrays."""
    from pdbtool.kernels.ida import EVENT_FIELDS

    solver = Solver(table_free("manhattan", 3))
    board = tuple(int(t) for t in BOARD.split())
    plain = trace.record(solver, board, cap=0).result["peak_memory_bytes"]
    traced = trace.record(solver, board, cap=100_000).result["peak_memory_bytes"]
    assert traced == plain + 100_000 * EVENT_FIELDS * 4
