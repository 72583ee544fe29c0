"""Generated gRPC stubs, one subpackage per proto package (regenerate with scripts/gen-protos)."""
