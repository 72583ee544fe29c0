"""Searching a prepared board: the data types every search speaks (control), the solver
and its serial IDA* (solver), IDA* on threads (threads), resumable searches (checkpoint),
the other algorithms (algorithms; SMA*, frontier and bidirectional search in best_first),
traces (trace), Ctrl-C and timers (interrupts, alarms), and compiling the kernels ahead of
a search (warm, and its child process precompile)."""
