"""The tables as data: the catalogues of partitions (catalogue, catalogues/*.cat), the HDF5
artifact format (artifact), its metadata as HDF5 parses it (metadata: in a child process
for a file without a seal) and the seal every file begins with (seal), output files written
whole or not at all (files), the builder (builder, over kernels.build), packing for shipping
(packing), verification stamps and the open file's guard (trust, lease), and how much of
a table is in memory (residency). Nothing here runs the verifier or a search: loading.py,
above both, decides when a table is checked."""
