"""pdbtool: optimal sliding-tile puzzle solving with additive pattern databases."""

__version__ = "0.1.0"
