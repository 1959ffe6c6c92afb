"""The assoc package under a thread pool: kernels of one spec and of
another run at once from 8 threads, with PyTorch tensors where torch
imports (NumPy arrays where not), and give what the same calls give one
after another."""
import concurrent.futures
import os
import unittest

import numpy as np

import assoc

try:
    import torch
except ImportError:  # the package itself needs no torch
    torch = None

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

# lawful for p >= 0 only: each call at a new p reaches the verdict at it,
# building terms into its kernel's carrier
ABS_SCALED = """carrier: abs_scaled
params: {p: f32}
element: {x: f32}
state: {s: f32}
identity: {s: 0}
lift: {s: abs(x) * p}
merge: {s: abs(a.s + b.s)}
finalize: {out: s}
reference: {out: sum(abs(x) * p)}
laws: [commutative]
"""

CALLS = 48


def setUpModule():
    os.chdir(ROOT)


def kernels():
    """Two cpu kernels of one spec (one and two threads of their own) and
    one of another spec."""
    scaled = assoc.loads(ABS_SCALED)
    softmax = assoc.load("specs/online_softmax.yaml")
    return [scaled.compile("cpu", threads=1), scaled.compile("cpu", threads=2), softmax.compile("cpu", threads=2)]


def inputs(i):
    """Call i's kernel (an index into kernels()) and its arguments."""
    rng = np.random.default_rng(i)
    x = (rng.standard_normal((1 + i % 7, 5 + 13 * i)) * 3).astype(np.float32)
    if torch is not None:
        x = torch.from_numpy(x)
    if i % 3 == 2:
        return 2, {"x": x}
    return i % 3, {"x": x, "p": 0.25 + (i % 4) / 8}


def call(ks, i):
    which, kw = inputs(i)
    return {name: np.asarray(v) for name, v in ks[which](**kw).items()}


class ThreadPool(unittest.TestCase):
    def test_kernels_of_two_specs_from_eight_threads(self):
        alone = kernels()
        want = [call(alone, i) for i in range(CALLS)]
        ks = kernels()
        with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
            got = list(pool.map(lambda i: call(ks, i), range(CALLS)))
        for i in range(CALLS):
            self.assertEqual(sorted(got[i]), sorted(want[i]))
            for name in want[i]:
                np.testing.assert_array_equal(got[i][name], want[i][name], "call %d, output %s" % (i, name))

    def test_a_kernel_freed_while_its_sibling_runs(self):
        scaled = assoc.loads(ABS_SCALED)
        keep, drop = scaled.compile("cpu", threads=2), scaled.compile("cpu", threads=1)
        del scaled  # the kernels keep the spec
        x = np.linspace(-3, 3, 4 * 999, dtype=np.float32).reshape(4, 999)
        want = np.abs(x.astype(np.float64)).sum(1) * 0.5

        def runs():
            for _ in range(20):
                np.testing.assert_allclose(keep(x=x, p=0.5)["out"], want, rtol=1e-5)

        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            running = pool.submit(runs)
            drop(x=x, p=0.5)
            del drop  # freed on this thread while keep runs on the other
            running.result()


if __name__ == "__main__":
    unittest.main()
