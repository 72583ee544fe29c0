"""`pdbd query / info / health` as a user meets them: exit codes, text, JSON, one-line errors."""

import json

from reference import free_port, korf_shortest
from serving import EASY8, HARD, run_cli


def test_query_exit_codes_and_json(served, slow, capsys):
    server = ["--server", served.address]
    code, out, _ = run_cli(capsys, "query", *server, "--json", *map(str, EASY8))
    assert code == 0 and json.loads(out)["length"] == 2
    code, out, _ = run_cli(capsys, "query", *server, "1,2,3,4,5,6,0,7,8")
    assert code == 0 and "length 2  moves 7 8" in out
    code, out, err = run_cli(capsys, "query", *server, "1", "2", "3")
    assert code == 2 and "not a square board" in err
    code, out, err = run_cli(capsys, "query", *server, "--json", "1", "2", "3")
    assert code == 2 and json.loads(out)["exit_code"] == 2
    code, _, err = run_cli(capsys, "query", *server, *map(str, [1, 2, 3, 4, 5, 6, 8, 7, 0]))
    assert code == 3 and "unsolvable" in err
    code, _, err = run_cli(capsys, "query", "--server", slow.address, "--goal", "blank-first",
                           "--deadline", "0.2", *map(str, HARD))
    assert code == 4 and "deadline" in err
    code, _, err = run_cli(capsys, "query", "--server", slow.address, "--goal", "blank-first",
                           "--budget", "100000", *map(str, HARD))
    assert code == 4 and "budget" in err
    code, _, err = run_cli(capsys, "query", "--server", f"127.0.0.1:{free_port()}", *map(str, EASY8))
    assert code == 1 and "cannot reach pdbd" in err and "Traceback" not in err


def test_query_stream_and_info(served, capsys):
    _, optimum, board = korf_shortest(1)[0]
    code, out, err = run_cli(capsys, "query", "--server", served.address, "--stream", "--json",
                             "--goal", "blank-first", *map(str, board))
    assert code == 0 and json.loads(out)["length"] == optimum
    code, out, _ = run_cli(capsys, "info", "--server", served.address, "--json")
    assert code == 0 and json.loads(out)["sizes"][1]["size"] == 4
    code, out, _ = run_cli(capsys, "info", "--server", served.address)
    assert code == 0 and "serves 4x4" in out and "sha256" in out


def test_health_and_waiting_for_serving(served, capsys):
    code, out, _ = run_cli(capsys, "health", "--server", served.address)
    assert code == 0 and out.strip() == "SERVING"
    code, out, _ = run_cli(capsys, "health", "--server", served.address, "--wait", "5")
    assert code == 0 and out.strip() == "SERVING"
    code, out, err = run_cli(capsys, "health", "--server", f"127.0.0.1:{free_port()}",
                             "--wait", "0.3")
    assert code == 1 and out == "" and "not serving after 0.3 s" in err
