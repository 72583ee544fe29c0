"""The ``pdbtool`` command line (main; the table commands in tables, the --cluster options
in cluster), what both command lines share for running commands and printing (console,
also used by pdbd), and the animated page (animate, animation.html)."""

PROG = "pdbtool"  # the command's name in its messages
