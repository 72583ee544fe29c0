"""Searches, batches and builds on a Ray cluster (the optional ``cluster`` extra): what
travels (messages), the node's actor (node) and its ordered thread pool (ordered_pool), a
job's run (run), the root's frontier of subtrees (frontier), and the driver the command
lines use (driver.Cluster). Ray is
imported only when a cluster is used."""
