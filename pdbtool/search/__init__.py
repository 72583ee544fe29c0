"""Searching a prepared board: the data types every search speaks (control), the solver
and its serial IDA* (solver), IDA* on threads (threads), the other algorithms
(algorithms), traces (trace), Ctrl-C and timers (interrupts, alarms), and compiling the
kernels ahead of a search (warm)."""
