"""What numba does not expose: popcount, atomic OR, add and max (machine instructions),
a prefetch hint, a class attribute of an argument as a compile-time constant, and array
indexing without the wraparound of negative indices."""

from llvmlite import ir
from llvmlite.binding import llvm_version_info
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, overload


@intrinsic
def popcount(typingctx, x):
    """Number of set bits of an integer (one POPCNT instruction)."""
    def codegen(context, builder, sig, args):
        return builder.ctpop(args[0])
    return x(x), codegen


def _read_modify_write(op: str):
    """Code for ary[idx] = ary[idx] <op> val, atomically, returning the old value."""
    def codegen(context, builder, sig, args):
        aryty = sig.args[0]
        arr = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, arr, [args[1]])
        value = context.cast(builder, args[2], sig.args[2], aryty.dtype)
        return builder.atomic_rmw(op, ptr, value, "monotonic")
    return codegen


@intrinsic
def atomic_or(typingctx, ary, idx, val):
    """ary[idx] |= val as one atomic read-modify-write; returns the old value.

    The builder's threads OR blank-cell bits into shared masks; a plain |= could lose a
    concurrent update, and a lost bit would make a table entry too large (inadmissible).
    """
    return ary.dtype(ary, idx, val), _read_modify_write("or")


@intrinsic
def atomic_add(typingctx, ary, idx, val):
    """ary[idx] += val as one atomic read-modify-write; returns the old value.

    The threads of one parallel IDA* iteration claim the subtrees at the split depth
    from a shared counter (kernels.tasks.search_tasks): each is searched exactly once.
    """
    return ary.dtype(ary, idx, val), _read_modify_write("add")


@intrinsic
def atomic_max(typingctx, ary, idx, val):
    """ary[idx] = max(ary[idx], val) (signed) as one atomic read-modify-write; returns the
    old value. A thread that finds a node over the bound moves the threads' shared counter
    past every task below it at once (kernels.tasks.search_tasks), and never back."""
    return ary.dtype(ary, idx, val), _read_modify_write("max")


def class_constant(obj, name: str):
    """The attribute ``name`` of obj's class. In a kernel it is a compile-time constant
    (``name`` must be a string literal): numba types a NamedTuple by its class, so a kernel
    compiled for one class runs only that class's branches (kernels.heuristic.kind_of).
    The other branches are still typed, and what they call compiled, before LLVM drops
    them: kernels.heuristic.init_of_kind chooses a whole function by class instead."""
    return getattr(type(obj), name)


@overload(class_constant, inline="always", prefer_literal=True)
def _class_constant_in_kernels(obj, name):
    value = getattr(obj.instance_class, name.literal_value)
    return lambda obj, name: value


# LLVM names the intrinsic by its pointer type: typed pointers before LLVM 15.
_PREFETCH = "llvm.prefetch.p0" if llvm_version_info >= (15,) else "llvm.prefetch.p0i8"


@intrinsic
def prefetch(typingctx, ary, idx):
    """Start loading the cache line of ary[idx] (of the row ary[idx] of a 2-D array): a
    hint, with no value and no fault. IDA*+TT loads a child's slot of the table this way
    before it evaluates the child's heuristic (kernels.ida.dfs_loop)."""
    def codegen(context, builder, sig, args):
        aryty = sig.args[0]
        arr = context.make_array(aryty)(context, builder, args[0])
        zero = context.get_constant(sig.args[1], 0)
        ptr = cgutils.get_item_pointer(context, builder, aryty, arr,
                                       [args[1]] + [zero] * (aryty.ndim - 1))
        i32, byte_ptr = ir.IntType(32), ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(ir.VoidType(), [byte_ptr, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, _PREFETCH)
        builder.call(fn, [builder.bitcast(ptr, byte_ptr), i32(0), i32(3), i32(1)])  # read,
        # keep in every cache level, data
        return context.get_dummy_value()
    return types.none(ary, idx), codegen


@intrinsic
def ix(typingctx, i):
    """``i`` as an unsigned array index: ``a[ix(i)]`` is ``a[i]`` for i >= 0.

    numba indexes with a signed integer as Python does, so every access with one costs a
    wraparound (i < 0 selects i + length: three instructions and a reload of the length);
    with an unsigned one it costs nothing. The search's hot kernels index this way where an
    index is non-negative by construction (a negative one would read far out of bounds, not
    wrap): 1.2x on 24/small, on 1 and 2 threads (BENCHMARKS, "Levers for the hour", fourth
    session). Only ever an index: numba computes uint64 mixed with int64 in float64.
    An intrinsic (a cast in the caller's code), not a function that numba inlines: that
    ran numba's passes again at each of its calls, most of h_update's 12 s of compiling
    on a slow machine; the machine code is the same."""
    if not isinstance(i, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        return context.cast(builder, args[0], sig.args[0], types.uint64)
    return types.uint64(i), codegen
