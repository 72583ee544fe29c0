"""What numba does not expose: popcount, atomic OR and atomic add (machine instructions),
and a class attribute of an argument as a compile-time constant."""

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
    from a shared counter (search_kernel.dfs_loop): each is searched exactly once.
    """
    return ary.dtype(ary, idx, val), _read_modify_write("add")


def class_constant(obj, name: str):
    """The attribute ``name`` of obj's class. In a kernel it is a compile-time constant
    (``name`` must be a string literal): numba types a NamedTuple by its class, so a kernel
    compiled for one class sees only that class's branches (heuristic_kernels.kind_of)."""
    return getattr(type(obj), name)


@overload(class_constant, inline="always", prefer_literal=True)
def _class_constant_in_kernels(obj, name):
    value = getattr(obj.instance_class, name.literal_value)
    return lambda obj, name: value
