"""Sequence-parallel attention across MPI ranks, over the assoc package.

The keys and values are sharded across the ranks, each rank holding a
contiguous block of positions.  Every rank runs attention of all the
queries against its own block (its partial output and log-sum-exp), rank 0
gathers the ranks' (out, lse) and merges them with the o_lse carrier
(specs/o_lse.yaml: the split-KV combine, whose merge the prover proves), in
rank order, and compares the result with one process's attention over all
the keys.

    make build/libassoc.so
    PYTHONPATH=python mpirun -np 2 python3 examples/mpi_attention.py [QUERIES KEYS]

MPI comes from mpi4py where it imports; otherwise from the MPI library
itself through ctypes (Open MPI, or an MPICH-compatible one).  Exit 0 when
every output is within tolerance of the one-process run; 2 with the reason
when NumPy, MPI or the library is missing.
"""

import ctypes
import ctypes.util
import os
import sys

D = 32

# Without a causal mask: a shard's positions are numbered from 0 within it.
SPEC = """carrier: attention_full
dims: {d: 32}
params: {scale: f32}
row:
  q: f32[d]
column:
  k: f32[d]
  v: f32[d]
let:
  s: dot(q, k) * scale
state:
  m: f32
  l: f32
  o: f32[d]
identity: {m: -inf, l: 0, o: 0}
lift: {m: s, l: 1, o: v}
merge:
  m: max(a.m, b.m)
  l: a.l * exp(a.m - m) + b.l * exp(b.m - m)
  o: a.o * exp(a.m - m) + b.o * exp(b.m - m)
finalize: {out: o / l, lse: m + log(l)}
reference:
  out: sum(exp(s) * v) / sum(exp(s))
  lse: log(sum(exp(s)))
laws: [commutative]
"""

HERE = os.path.dirname(os.path.abspath(__file__))


def missing(why):
    print("mpi_attention.py: %s" % why, file=sys.stderr)
    sys.exit(2)


class CtypesMpi:
    """The few MPI calls the example makes, on the MPI library through
    ctypes: MPI_COMM_WORLD and the datatypes are Open MPI's predefined
    objects (their addresses), or MPICH's integer handles."""

    MPICH = {"comm_world": 0x44000000, "float": 0x4c00040a, "int": 0x4c000405, "max": 0x58000001}

    def __init__(self):
        path = os.environ.get("ASSOC_LIBMPI") or ctypes.util.find_library("mpi")
        if not path:
            raise OSError("no MPI library (libmpi) on the linker's path")
        # global: Open MPI's components resolve their symbols in it
        self.lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        try:
            def obj(name):
                return ctypes.c_void_p(ctypes.addressof(ctypes.c_char.in_dll(self.lib, name)))
            self.world, self.float, self.int, self.max = (
                obj("ompi_mpi_comm_world"), obj("ompi_mpi_float"), obj("ompi_mpi_int"), obj("ompi_mpi_op_max"))
            self.handle = ctypes.c_void_p
            self.flavor = "Open MPI"
        except ValueError:
            self.world, self.float, self.int, self.max = (
                ctypes.c_int(self.MPICH[k]) for k in ("comm_world", "float", "int", "max"))
            self.handle = ctypes.c_int
            self.flavor = "MPICH ABI"
        self.lib.MPI_Init(None, None)
        r, n = ctypes.c_int(), ctypes.c_int()
        self.lib.MPI_Comm_rank(self.world, ctypes.byref(r))
        self.lib.MPI_Comm_size(self.world, ctypes.byref(n))
        self.rank, self.size = r.value, n.value
        self.name = "MPI through ctypes (%s, %s)" % (self.flavor, os.path.basename(path))

    def gather(self, np, a):
        """Every rank's float32 array a, stacked in rank order on rank 0."""
        a = np.ascontiguousarray(a, np.float32)
        out = np.empty((self.size,) + a.shape, np.float32) if self.rank == 0 else np.empty(1, np.float32)
        rc = self.lib.MPI_Gather(a.ctypes.data_as(ctypes.c_void_p), ctypes.c_int(a.size), self.float,
                                 out.ctypes.data_as(ctypes.c_void_p), ctypes.c_int(a.size), self.float,
                                 ctypes.c_int(0), self.world)
        if rc:
            raise RuntimeError("MPI_Gather failed (%d)" % rc)
        return out if self.rank == 0 else None

    def worst(self, v):
        """The largest of every rank's integer v, on every rank."""
        mine, top = ctypes.c_int(v), ctypes.c_int(0)
        self.lib.MPI_Allreduce(ctypes.byref(mine), ctypes.byref(top), ctypes.c_int(1), self.int, self.max, self.world)
        return top.value

    def finalize(self):
        self.lib.MPI_Finalize()


class Mpi4py:
    def __init__(self):
        from mpi4py import MPI
        self.MPI, self.comm = MPI, MPI.COMM_WORLD
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()
        self.name = "mpi4py"

    def gather(self, np, a):
        a = np.ascontiguousarray(a, np.float32)
        out = np.empty((self.size,) + a.shape, np.float32) if self.rank == 0 else None
        self.comm.Gather(a, out, root=0)
        return out

    def worst(self, v):
        return self.comm.allreduce(v, op=self.MPI.MAX)

    def finalize(self):
        pass


def mpi():
    try:
        return Mpi4py()
    except ImportError:
        pass
    try:
        return CtypesMpi()
    except OSError as e:
        missing("no MPI: mpi4py does not import and %s" % e)


def main(argv):
    try:
        import numpy as np
    except ImportError:
        missing("no NumPy")
    try:
        import assoc
    except (ImportError, OSError) as e:
        missing("no assoc package or libassoc.so (%s): make build/libassoc.so, PYTHONPATH=python" % e)
    rows, length = (int(argv[1]), int(argv[2])) if len(argv) > 2 else (64, 4096)
    comm = mpi()
    if rows < 1 or length < comm.size:
        if comm.rank == 0:
            print("mpi_attention.py: need at least 1 query and as many keys as ranks", file=sys.stderr)
        comm.finalize()
        return 2
    # every rank draws the same arrays, and keeps its block of keys
    g = np.random.default_rng(42)
    q = g.uniform(-1, 1, (rows, D)).astype(np.float32)
    k = g.uniform(-1, 1, (length, D)).astype(np.float32)
    v = g.uniform(-1, 1, (length, D)).astype(np.float32)
    lo, hi = comm.rank * length // comm.size, (comm.rank + 1) * length // comm.size
    scale = 1 / np.sqrt(D)
    attn = assoc.loads(SPEC).compile("cpu")
    part = attn(q=q, k=np.ascontiguousarray(k[lo:hi]), v=np.ascontiguousarray(v[lo:hi]), scale=scale)
    outs, lses = comm.gather(np, part["out"]), comm.gather(np, part["lse"])
    rc = 0
    if comm.rank == 0:
        # rank r's partial result of query i is position r of row i
        merge = assoc.load(os.path.join(HERE, "..", "specs", "o_lse.yaml"), dims={"dv": D}).compile("cpu")
        got = merge(po=np.ascontiguousarray(outs.transpose(1, 0, 2)), plse=np.ascontiguousarray(lses.T))
        one = attn(q=q, k=k, v=v, scale=scale)
        worst = max(float(np.max(np.abs(got["out"] - one["out"]))),
                    float(np.max(np.abs(got["lse"] - one["lse"]) / np.maximum(1, np.abs(one["lse"])))))
        # a few float32 ulps: the merge order differs, the sums do not
        ok = worst < 1e-5
        print("mpi_attention.py: %d queries x %d keys on %d ranks (%s), merged by %s: largest difference from "
              "one process %.3g: %s" % (rows, length, comm.size, comm.name, merge.spec.name, worst,
                                         "ok" if ok else "FAILED"))
        rc = 0 if ok else 1
    rc = comm.worst(rc)
    comm.finalize()
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv))
