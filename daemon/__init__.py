"""pdbd: the gRPC solver daemon over pdbtool's memory-mapped pattern databases.

Imports go one way: daemon uses pdbtool, pdbtool never imports daemon or grpc.
"""
