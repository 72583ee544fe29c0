"""The --cluster option of pdbtool's commands: its help, and the Ray cluster it names
(pdbtool.cluster.driver; Ray is imported only when a cluster is used)."""

import argparse
import contextlib
import sys

from pdbtool.cli import PROG
from pdbtool.cli.console import arg_path, results_apart, terminate_like_ctrl_c


@contextlib.contextmanager
def open_cluster(args):
    """The Ray cluster the options name (pdbtool.cluster.driver; Ray is imported only now),
    closed at the end. SIGTERM then stops the command as Ctrl-C does, and exits 143
    (console); meanwhile what Ray prints to stdout goes to stderr, stdout keeps the
    results (console.results_apart)."""
    from pdbtool.cluster.driver import Cluster

    terminate_like_ctrl_c()
    with results_apart(), Cluster(
            args.cluster, cache_dir=getattr(args, "cluster_cache", None),
            shared=getattr(args, "cluster_shared", None),
            notify=lambda text: print(f"{PROG}: {text}", file=sys.stderr, flush=True)) as cluster:
        yield cluster


def cluster_address(text: str) -> str:
    """--cluster's value: 'local' or an address (pdbtool.cluster.messages.split_address);
    anything else is an argparse error (exit 2)."""
    from pdbtool.cluster.messages import split_address
    from pdbtool.errors import BadInput

    try:
        split_address(text)
    except BadInput as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix(f"--cluster {text!r}: ")) from None
    return text


def add_cluster_option(p, help: str) -> None:
    """--cluster ADDRESS (pdbtool solve and build, pdbd serve): ``help`` says what it does,
    the values are said here."""
    p.add_argument("--cluster", metavar="ADDRESS", type=cluster_address,
                   help=f"{help}; ADDRESS: the head node's HOST:PORT (as `ray start --head` "
                        "prints it), 'local' (start Ray on this machine) or 'auto' (the head "
                        "Ray finds: $RAY_ADDRESS, else the last `ray start --head` here); "
                        "needs the cluster extra: pip install 'pdbtool[cluster]'")


def add_shipping_options(p) -> None:
    """How the tables reach a cluster's nodes: --cluster-shared and --cluster-cache (pdbtool
    solve, pdbd serve; a build sends no tables)."""
    for flag, text in (
            ("--cluster-shared", "ship the tables through DIR, a directory every node sees, "
                                 "instead of Ray's object store"),
            ("--cluster-cache", "where each node keeps the tables it received, by version "
                                "(default $PDBTOOL_CLUSTER_CACHE or <tmp>/pdbtool-cluster-<uid>)")):
        p.add_argument(flag, metavar="DIR", type=arg_path, help=f"with --cluster: {text}")
