from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class BatchRequest(_message.Message):
    __slots__ = ("id", "request", "items")
    ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    id: int
    request: SolveRequest
    items: _containers.RepeatedCompositeFieldContainer[BatchItem]
    def __init__(self, id: _Optional[int] = ..., request: _Optional[_Union[SolveRequest, _Mapping]] = ..., items: _Optional[_Iterable[_Union[BatchItem, _Mapping]]] = ...) -> None: ...

class BatchItem(_message.Message):
    __slots__ = ("id", "request")
    ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    id: int
    request: SolveRequest
    def __init__(self, id: _Optional[int] = ..., request: _Optional[_Union[SolveRequest, _Mapping]] = ...) -> None: ...

class BatchError(_message.Message):
    __slots__ = ("code", "message", "limit", "refused")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    REFUSED_FIELD_NUMBER: _ClassVar[int]
    code: str
    message: str
    limit: str
    refused: bool
    def __init__(self, code: _Optional[str] = ..., message: _Optional[str] = ..., limit: _Optional[str] = ..., refused: bool = ...) -> None: ...

class BatchResult(_message.Message):
    __slots__ = ("id", "result", "error", "results")
    ID_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    id: int
    result: SolveResult
    error: BatchError
    results: _containers.RepeatedCompositeFieldContainer[BatchResult]
    def __init__(self, id: _Optional[int] = ..., result: _Optional[_Union[SolveResult, _Mapping]] = ..., error: _Optional[_Union[BatchError, _Mapping]] = ..., results: _Optional[_Iterable[_Union[BatchResult, _Mapping]]] = ...) -> None: ...

class SolveRequest(_message.Message):
    __slots__ = ("tiles", "goal", "node_budget", "progress_ms", "algorithm", "weight", "tt_size", "max_memory", "rows", "cols")
    TILES_FIELD_NUMBER: _ClassVar[int]
    GOAL_FIELD_NUMBER: _ClassVar[int]
    NODE_BUDGET_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_MS_FIELD_NUMBER: _ClassVar[int]
    ALGORITHM_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    TT_SIZE_FIELD_NUMBER: _ClassVar[int]
    MAX_MEMORY_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    COLS_FIELD_NUMBER: _ClassVar[int]
    tiles: _containers.RepeatedScalarFieldContainer[int]
    goal: str
    node_budget: int
    progress_ms: int
    algorithm: str
    weight: float
    tt_size: int
    max_memory: int
    rows: int
    cols: int
    def __init__(self, tiles: _Optional[_Iterable[int]] = ..., goal: _Optional[str] = ..., node_budget: _Optional[int] = ..., progress_ms: _Optional[int] = ..., algorithm: _Optional[str] = ..., weight: _Optional[float] = ..., tt_size: _Optional[int] = ..., max_memory: _Optional[int] = ..., rows: _Optional[int] = ..., cols: _Optional[int] = ...) -> None: ...

class Iteration(_message.Message):
    __slots__ = ("bound", "nodes")
    BOUND_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    bound: int
    nodes: int
    def __init__(self, bound: _Optional[int] = ..., nodes: _Optional[int] = ...) -> None: ...

class SolveResult(_message.Message):
    __slots__ = ("board", "size", "goal", "length", "moves", "blank_moves", "nodes_expanded", "nodes_generated", "seconds", "initial_h", "heuristic", "artifact_version", "iterations", "threads", "note", "queue_seconds", "path_h", "algorithm", "optimal", "bound", "peak_memory_bytes", "rows", "cols", "dropped", "reexpanded")
    BOARD_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    GOAL_FIELD_NUMBER: _ClassVar[int]
    LENGTH_FIELD_NUMBER: _ClassVar[int]
    MOVES_FIELD_NUMBER: _ClassVar[int]
    BLANK_MOVES_FIELD_NUMBER: _ClassVar[int]
    NODES_EXPANDED_FIELD_NUMBER: _ClassVar[int]
    NODES_GENERATED_FIELD_NUMBER: _ClassVar[int]
    SECONDS_FIELD_NUMBER: _ClassVar[int]
    INITIAL_H_FIELD_NUMBER: _ClassVar[int]
    HEURISTIC_FIELD_NUMBER: _ClassVar[int]
    ARTIFACT_VERSION_FIELD_NUMBER: _ClassVar[int]
    ITERATIONS_FIELD_NUMBER: _ClassVar[int]
    THREADS_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    QUEUE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    PATH_H_FIELD_NUMBER: _ClassVar[int]
    ALGORITHM_FIELD_NUMBER: _ClassVar[int]
    OPTIMAL_FIELD_NUMBER: _ClassVar[int]
    BOUND_FIELD_NUMBER: _ClassVar[int]
    PEAK_MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    COLS_FIELD_NUMBER: _ClassVar[int]
    DROPPED_FIELD_NUMBER: _ClassVar[int]
    REEXPANDED_FIELD_NUMBER: _ClassVar[int]
    board: _containers.RepeatedScalarFieldContainer[int]
    size: int
    goal: str
    length: int
    moves: _containers.RepeatedScalarFieldContainer[int]
    blank_moves: str
    nodes_expanded: int
    nodes_generated: int
    seconds: float
    initial_h: int
    heuristic: str
    artifact_version: str
    iterations: _containers.RepeatedCompositeFieldContainer[Iteration]
    threads: int
    note: str
    queue_seconds: float
    path_h: _containers.RepeatedScalarFieldContainer[int]
    algorithm: str
    optimal: bool
    bound: float
    peak_memory_bytes: int
    rows: int
    cols: int
    dropped: int
    reexpanded: int
    def __init__(self, board: _Optional[_Iterable[int]] = ..., size: _Optional[int] = ..., goal: _Optional[str] = ..., length: _Optional[int] = ..., moves: _Optional[_Iterable[int]] = ..., blank_moves: _Optional[str] = ..., nodes_expanded: _Optional[int] = ..., nodes_generated: _Optional[int] = ..., seconds: _Optional[float] = ..., initial_h: _Optional[int] = ..., heuristic: _Optional[str] = ..., artifact_version: _Optional[str] = ..., iterations: _Optional[_Iterable[_Union[Iteration, _Mapping]]] = ..., threads: _Optional[int] = ..., note: _Optional[str] = ..., queue_seconds: _Optional[float] = ..., path_h: _Optional[_Iterable[int]] = ..., algorithm: _Optional[str] = ..., optimal: bool = ..., bound: _Optional[float] = ..., peak_memory_bytes: _Optional[int] = ..., rows: _Optional[int] = ..., cols: _Optional[int] = ..., dropped: _Optional[int] = ..., reexpanded: _Optional[int] = ...) -> None: ...

class Progress(_message.Message):
    __slots__ = ("bound", "nodes_generated", "nodes_expanded", "nodes_per_second", "elapsed_seconds", "queued")
    BOUND_FIELD_NUMBER: _ClassVar[int]
    NODES_GENERATED_FIELD_NUMBER: _ClassVar[int]
    NODES_EXPANDED_FIELD_NUMBER: _ClassVar[int]
    NODES_PER_SECOND_FIELD_NUMBER: _ClassVar[int]
    ELAPSED_SECONDS_FIELD_NUMBER: _ClassVar[int]
    QUEUED_FIELD_NUMBER: _ClassVar[int]
    bound: int
    nodes_generated: int
    nodes_expanded: int
    nodes_per_second: float
    elapsed_seconds: float
    queued: bool
    def __init__(self, bound: _Optional[int] = ..., nodes_generated: _Optional[int] = ..., nodes_expanded: _Optional[int] = ..., nodes_per_second: _Optional[float] = ..., elapsed_seconds: _Optional[float] = ..., queued: bool = ...) -> None: ...

class SolveEvent(_message.Message):
    __slots__ = ("progress", "result")
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    progress: Progress
    result: SolveResult
    def __init__(self, progress: _Optional[_Union[Progress, _Mapping]] = ..., result: _Optional[_Union[SolveResult, _Mapping]] = ...) -> None: ...

class InfoRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Table(_message.Message):
    __slots__ = ("name", "sha256", "entries")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    name: str
    sha256: str
    entries: int
    def __init__(self, name: _Optional[str] = ..., sha256: _Optional[str] = ..., entries: _Optional[int] = ...) -> None: ...

class Artifact(_message.Message):
    __slots__ = ("path", "partition", "size", "version", "tables", "bytes", "resident_bytes", "locked", "cols", "refused")
    PATH_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    TABLES_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    RESIDENT_BYTES_FIELD_NUMBER: _ClassVar[int]
    LOCKED_FIELD_NUMBER: _ClassVar[int]
    COLS_FIELD_NUMBER: _ClassVar[int]
    REFUSED_FIELD_NUMBER: _ClassVar[int]
    path: str
    partition: str
    size: int
    version: str
    tables: _containers.RepeatedCompositeFieldContainer[Table]
    bytes: int
    resident_bytes: int
    locked: bool
    cols: int
    refused: str
    def __init__(self, path: _Optional[str] = ..., partition: _Optional[str] = ..., size: _Optional[int] = ..., version: _Optional[str] = ..., tables: _Optional[_Iterable[_Union[Table, _Mapping]]] = ..., bytes: _Optional[int] = ..., resident_bytes: _Optional[int] = ..., locked: bool = ..., cols: _Optional[int] = ..., refused: _Optional[str] = ...) -> None: ...

class SizeServed(_message.Message):
    __slots__ = ("size", "heuristic", "artifact_version", "rows", "cols")
    SIZE_FIELD_NUMBER: _ClassVar[int]
    HEURISTIC_FIELD_NUMBER: _ClassVar[int]
    ARTIFACT_VERSION_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    COLS_FIELD_NUMBER: _ClassVar[int]
    size: int
    heuristic: str
    artifact_version: str
    rows: int
    cols: int
    def __init__(self, size: _Optional[int] = ..., heuristic: _Optional[str] = ..., artifact_version: _Optional[str] = ..., rows: _Optional[int] = ..., cols: _Optional[int] = ...) -> None: ...

class Counters(_message.Message):
    __slots__ = ("requests", "solved", "failed", "cancelled", "rejected", "in_flight", "running", "undecodable", "abandoned")
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    SOLVED_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    CANCELLED_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    IN_FLIGHT_FIELD_NUMBER: _ClassVar[int]
    RUNNING_FIELD_NUMBER: _ClassVar[int]
    UNDECODABLE_FIELD_NUMBER: _ClassVar[int]
    ABANDONED_FIELD_NUMBER: _ClassVar[int]
    requests: int
    solved: int
    failed: int
    cancelled: int
    rejected: int
    in_flight: int
    running: int
    undecodable: int
    abandoned: int
    def __init__(self, requests: _Optional[int] = ..., solved: _Optional[int] = ..., failed: _Optional[int] = ..., cancelled: _Optional[int] = ..., rejected: _Optional[int] = ..., in_flight: _Optional[int] = ..., running: _Optional[int] = ..., undecodable: _Optional[int] = ..., abandoned: _Optional[int] = ...) -> None: ...

class InfoReply(_message.Message):
    __slots__ = ("version", "artifacts", "sizes", "counters", "threads", "max_queue", "uptime_seconds", "max_search_seconds", "max_nodes", "per_client", "overloaded", "max_search_memory", "cluster")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    ARTIFACTS_FIELD_NUMBER: _ClassVar[int]
    SIZES_FIELD_NUMBER: _ClassVar[int]
    COUNTERS_FIELD_NUMBER: _ClassVar[int]
    THREADS_FIELD_NUMBER: _ClassVar[int]
    MAX_QUEUE_FIELD_NUMBER: _ClassVar[int]
    UPTIME_SECONDS_FIELD_NUMBER: _ClassVar[int]
    MAX_SEARCH_SECONDS_FIELD_NUMBER: _ClassVar[int]
    MAX_NODES_FIELD_NUMBER: _ClassVar[int]
    PER_CLIENT_FIELD_NUMBER: _ClassVar[int]
    OVERLOADED_FIELD_NUMBER: _ClassVar[int]
    MAX_SEARCH_MEMORY_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    version: str
    artifacts: _containers.RepeatedCompositeFieldContainer[Artifact]
    sizes: _containers.RepeatedCompositeFieldContainer[SizeServed]
    counters: Counters
    threads: int
    max_queue: int
    uptime_seconds: float
    max_search_seconds: float
    max_nodes: int
    per_client: int
    overloaded: bool
    max_search_memory: int
    cluster: ClusterInfo
    def __init__(self, version: _Optional[str] = ..., artifacts: _Optional[_Iterable[_Union[Artifact, _Mapping]]] = ..., sizes: _Optional[_Iterable[_Union[SizeServed, _Mapping]]] = ..., counters: _Optional[_Union[Counters, _Mapping]] = ..., threads: _Optional[int] = ..., max_queue: _Optional[int] = ..., uptime_seconds: _Optional[float] = ..., max_search_seconds: _Optional[float] = ..., max_nodes: _Optional[int] = ..., per_client: _Optional[int] = ..., overloaded: bool = ..., max_search_memory: _Optional[int] = ..., cluster: _Optional[_Union[ClusterInfo, _Mapping]] = ...) -> None: ...

class ClusterInfo(_message.Message):
    __slots__ = ("address", "nodes", "cpus", "busy", "above", "delegated", "error")
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    CPUS_FIELD_NUMBER: _ClassVar[int]
    BUSY_FIELD_NUMBER: _ClassVar[int]
    ABOVE_FIELD_NUMBER: _ClassVar[int]
    DELEGATED_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    address: str
    nodes: int
    cpus: int
    busy: int
    above: int
    delegated: int
    error: str
    def __init__(self, address: _Optional[str] = ..., nodes: _Optional[int] = ..., cpus: _Optional[int] = ..., busy: _Optional[int] = ..., above: _Optional[int] = ..., delegated: _Optional[int] = ..., error: _Optional[str] = ...) -> None: ...
