"""The names of the wire contract that both ends of pdbd's service use (the contract
itself: protos/pdbd/v1/solver.proto): the service's name, the metadata keys, and the
refusal of an empty board, which the client gives before a call as the server would."""

from .v1 import solver_pb2 as pb

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["Solver"].full_name
LIMIT_KEY = "pdbd-limit"  # trailing metadata telling the RESOURCE_EXHAUSTED cases apart
REFUSED_KEY = "pdbd-refused"  # trailing metadata: an UNAVAILABLE of pdbd's own, not the channel's
CLIENT_KEY = "pdbd-client"  # metadata: the client a trusted proxy calls for
EMPTY_BOARD = "empty board: give the tiles row by row, 0 for the blank"
