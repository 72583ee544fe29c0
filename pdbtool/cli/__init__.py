"""The ``pdbtool`` command line (main), what both command lines share for running commands
and printing (console, also used by pdbd), and the animated page (animate)."""

PROG = "pdbtool"  # the command's name in its messages
