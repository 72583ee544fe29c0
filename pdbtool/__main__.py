"""``python -m pdbtool``: the pdbtool command."""

from pdbtool.cli import command

command()
