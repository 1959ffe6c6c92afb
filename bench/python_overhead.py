#!/usr/bin/env python3
"""python_overhead.py: what one Python call of a small compiled kernel
costs on the host: online softmax of ROWS x LEN (default 1 x 32) on the
cpu device through the assoc package, beside NumPy's and (where torch
imports) PyTorch's softmax of the same array, timed in the same run.  At
this size the arithmetic is nothing: the figures are the calls' overhead
(the package's checks, output allocation, ctypes, the library's binding
of buffers and the thread pool's dispatch).

    PYTHONPATH=python python3 bench/python_overhead.py [ROWS LEN]

Median of 7 batches of calls, microseconds per call."""
import os
import statistics
import sys
import timeit

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))

import numpy as np  # noqa: E402

import assoc  # noqa: E402


def per_call_us(fn, number):
    return statistics.median(timeit.repeat(fn, number=number, repeat=7)) / number * 1e6


def main():
    rows, length = (int(a) for a in sys.argv[1:3]) if len(sys.argv) > 2 else (1, 32)
    spec = assoc.load(os.path.join(ROOT, "specs", "online_softmax.yaml"))
    k1 = spec.compile("cpu", threads=1)
    kall = spec.compile("cpu")
    x = np.random.default_rng(1).standard_normal((rows, length)).astype(np.float32)

    def np_softmax():
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return np.log(e.sum(axis=1)), e / e.sum(axis=1, keepdims=True)

    got = k1(x=x)
    lse, y = np_softmax()
    assert np.allclose(got["y"], y, rtol=1e-4, atol=1e-7), "the kernel disagrees with NumPy"
    n = 2000
    # the C call alone, its buffers made once: what the package adds is the rest
    from assoc import _lib
    L = _lib.lib()
    bufs = (_lib.AssocBuffer * 3)()
    for i, (name, a) in enumerate((("x", x), ("lse", got["lse"]), ("y", got["y"]))):
        bufs[i].name, bufs[i].data, bufs[i].bytes = name.encode(), a.ctypes.data, a.nbytes
    lines = [("assoc_run_heads alone (ctypes, 1 thread)",
              per_call_us(lambda: L.assoc_run_heads(k1._h, 1, 1, rows, length, bufs, 3, None, 0), n)),
             ("assoc cpu, 1 thread (numpy in/out)", per_call_us(lambda: k1(x=x), n)),
             ("assoc cpu, every core (numpy in/out)", per_call_us(lambda: kall(x=x), n)),
             ("numpy softmax + logsumexp", per_call_us(np_softmax, n))]
    try:
        import torch
    except ImportError as e:
        torch = None
        why = str(e)
    if torch is not None:
        torch.set_num_threads(1)
        t = torch.from_numpy(x)
        lines.insert(2, ("assoc cpu, 1 thread (torch in/out)", per_call_us(lambda: k1(x=t), n)))
        lines.append(("torch.softmax + logsumexp (1 thread)",
                      per_call_us(lambda: (torch.logsumexp(t, 1), torch.softmax(t, 1)), n)))
        lines.append(("torch.softmax alone (1 thread)", per_call_us(lambda: torch.softmax(t, 1), n)))
    print("online softmax, %d x %d f32, host overhead per Python call (median of 7 x %d calls)" % (rows, length, n))
    print("%-40s %10s" % ("call", "us/call"))
    for name, us in lines:
        print("%-40s %10.2f" % (name, us))
    if torch is None:
        print("(no torch here: %s)" % why)


if __name__ == "__main__":
    main()
