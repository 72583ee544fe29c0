"""Heuristics as the searches take them (Heuristic: arrays for kernels.heuristic): the
table-free ones (table_free), the pattern databases read from a table (pattern_db), the
move-pruning automaton (move_pruning), and the node counts a heuristic predicts
(prediction)."""
