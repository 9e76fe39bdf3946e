"""`zverify compare --mpi`: one comparison shared by the ranks of an MPI job.

plan.py cuts the key space (canonical path order) into ranges; session.py starts the job
and ends it (a verdict, or an abort); worker.py walks ranges on ranks 1..N-1 with the same
C core as a single-node run; coordinator.py, on rank 0, hands the ranges out and feeds the
single-node engine in key order, so the result is the single-node result byte for byte;
devices.py makes st_dev mean the same filesystem on every node.  Design and cluster model:
docs/design/mpi.md.
"""
