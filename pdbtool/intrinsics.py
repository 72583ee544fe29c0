"""Two machine instructions numba does not expose: popcount and atomic OR."""

from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def popcount(typingctx, x):
    """Number of set bits of an integer (one POPCNT instruction)."""
    def codegen(context, builder, sig, args):
        return builder.ctpop(args[0])
    return x(x), codegen


@intrinsic
def atomic_or(typingctx, ary, idx, val):
    """ary[idx] |= val as one atomic read-modify-write; returns the old value.

    The builder's threads OR blank-cell bits into shared masks; a plain |= could lose a
    concurrent update, and a lost bit would make a table entry too large (inadmissible).
    """
    def codegen(context, builder, sig, args):
        aryty = sig.args[0]
        arr = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, arr, [args[1]])
        value = context.cast(builder, args[2], sig.args[2], aryty.dtype)
        return builder.atomic_rmw("or", ptr, value, "monotonic")
    return ary.dtype(ary, idx, val), codegen
