"""CUDA arrays through the package: a "gpu" kernel called with objects that
expose __cuda_array_interface__ runs on assoc_run_device, on the arrays'
stream, with no host copy and no wait.  The driver is the fake one
(build/libfakecuda.so, named by ASSOC_LIBCUDA): its allocations are host
memory and its kernels compute nothing, so these tests check the calls it
counts (launches, their stream, copies, synchronizations), the outputs'
types and shapes and the errors, never the outputs' values."""
import ctypes
import os
import shutil
import sys
import tempfile
import types
import unittest

import numpy as np

import assoc

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
FAKE = os.path.join(ROOT, "build", "libfakecuda.so")
_ENV = ("ASSOC_LIBCUDA", "XDG_CACHE_HOME", "FAKECUDA")


class Fake:
    """The fake driver, loaded as the library loads it (the same file, so
    the same counters)."""

    def __init__(self):
        self.lib = ctypes.CDLL(FAKE)
        self.lib.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_ulonglong), ctypes.c_size_t]
        self.lib.cuMemFree_v2.argtypes = [ctypes.c_ulonglong]
        self.lib.fakecuda_last.argtypes = [ctypes.POINTER(ctypes.c_void_p)] * 2 + [ctypes.POINTER(ctypes.c_int)] * 2
        self.lib.fakecuda_syncs.argtypes = [ctypes.POINTER(ctypes.c_int)] * 2
        # the program's CUDA runtime (CuPy's, PyTorch's) holds the primary
        # context and makes it current, where its arrays are allocated
        self.lib.cuDevicePrimaryCtxRetain.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int]
        self.lib.cuCtxSetCurrent.argtypes = [ctypes.c_void_p]
        ctx = ctypes.c_void_p()
        if self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) or self.lib.cuCtxSetCurrent(ctx):
            raise RuntimeError("the fake driver gave no primary context")

    def alloc(self, nbytes):
        p = ctypes.c_ulonglong()
        if self.lib.cuMemAlloc_v2(ctypes.byref(p), max(nbytes, 1)) != 0:
            raise MemoryError("fake cuMemAlloc failed")
        return p.value

    def launches(self):
        return self.lib.fakecuda_launches()

    def copies_syncs(self):
        c, s = ctypes.c_int(), ctypes.c_int()
        self.lib.fakecuda_syncs(ctypes.byref(c), ctypes.byref(s))
        return c.value, s.value

    def last_stream(self):
        st, ctx, a, f = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_int(), ctypes.c_int()
        self.lib.fakecuda_last(ctypes.byref(st), ctypes.byref(ctx), ctypes.byref(a), ctypes.byref(f))
        return st.value


fake = None


class DeviceArray:
    """What CuPy or Numba hand over, here over the fake driver's memory:
    a pointer, shape, typestr and the stream the array is ordered on
    (version 3 of the interface; CuPy gives its current stream's pointer,
    1 for the legacy default stream)."""

    def __init__(self, shape, typestr="<f4", stream=0x5150):
        n = int(np.prod(shape, dtype=np.int64)) * np.dtype(typestr).itemsize
        self.ptr = fake.alloc(n)
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": typestr, "data": (self.ptr, False),
                                         "version": 3, "strides": None, "stream": stream}

    def __del__(self):
        if fake is not None:
            fake.lib.cuMemFree_v2(self.ptr)


class Registered(DeviceArray):
    __module__ = "devlib"
    made = []  # (shape, dtype, device) of every output made through the hook


def make_registered(shape, dtype, device):
    Registered.made.append((shape, dtype, device))
    return Registered(shape, dtype.str)


class Unknown(DeviceArray):
    __module__ = "otherlib"


class CupyLike(DeviceArray):
    """A CuPy array as the package sees one: its type's module is cupy's,
    its pointer is also data.ptr."""
    __module__ = "cupy._core.core"

    def __init__(self, shape, typestr="<f4", stream=0x7070):
        super().__init__(shape, typestr, stream)
        self.data = types.SimpleNamespace(ptr=self.ptr)


def cupy_stand_in(stream, calls):
    """A module named cupy with what the package asks of it: empty(),
    cuda.Device(i) as a context and cuda.get_current_stream().ptr."""
    class Device:
        def __init__(self, i):
            self.i = i

        def __enter__(self):
            calls.append(("device", self.i))

        def __exit__(self, *exc):
            return False

    def empty(shape, dtype):
        calls.append(("empty", tuple(shape), str(dtype)))
        return CupyLike(shape, np.dtype(dtype).str, stream)

    m = types.ModuleType("cupy")
    m.empty = empty
    m.cuda = types.SimpleNamespace(Device=Device, get_current_stream=lambda: types.SimpleNamespace(ptr=stream))
    return m


def setUpModule():
    global fake
    os.chdir(ROOT)
    if not os.path.exists(FAKE):
        raise unittest.SkipTest("no build/libfakecuda.so (make build/libfakecuda.so)")
    fake = Fake()
    assoc.register_cuda_array(Registered, make_registered)


def tearDownModule():
    global fake
    fake = None


class DeviceRun(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.saved = {k: os.environ.get(k) for k in _ENV}
        cls.cache = tempfile.mkdtemp(prefix="assoc-pydev-")
        os.environ["ASSOC_LIBCUDA"] = FAKE
        os.environ["XDG_CACHE_HOME"] = cls.cache  # the tuning cache: the test's own
        os.environ.pop("FAKECUDA", None)
        try:
            cls.k = assoc.load("specs/online_softmax.yaml").compile("gpu")
            cls.lr = assoc.load("specs/linear_recurrence.yaml").compile("gpu")
        except assoc.DeviceError as e:
            cls.tearDownClass()
            if "NVRTC" in str(e):
                raise unittest.SkipTest("no NVRTC here: %s" % e)
            raise

    @classmethod
    def tearDownClass(cls):
        for k, v in cls.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        shutil.rmtree(cls.cache, ignore_errors=True)

    def setUp(self):
        Registered.made.clear()

    def test_launches_on_the_arrays_stream_without_copies_or_waits(self):
        x = Registered((2, 5), stream=0x5150)
        before, (copies, syncs) = fake.launches(), fake.copies_syncs()
        out = self.k(x=x)
        self.assertGreaterEqual(fake.launches() - before, 1, "assoc_run_device launched")
        self.assertEqual(fake.last_stream(), 0x5150, "on the stream of the input's interface")
        self.assertEqual(fake.copies_syncs(), (copies, syncs), "no host copy, no synchronization")
        self.assertEqual(sorted(out), ["lse", "y"])
        for name, shape in (("lse", (2,)), ("y", (2, 5))):
            self.assertIs(type(out[name]), Registered, name)
            cai = out[name].__cuda_array_interface__
            self.assertEqual((cai["shape"], cai["typestr"]), (shape, "<f4"), name)
        self.assertEqual(sorted(Registered.made), [((2,), np.dtype("float32"), 0), ((2, 5), np.dtype("float32"), 0)])

    def test_paged_decoding_launches_once_without_copies_or_waits(self):
        k = assoc.load("specs/attention.yaml").compile("gpu")
        q, pool = Registered((3, 4, 64), "<f2"), ((8, 16, 2, 64), "<f2")
        kp, vp = Registered(*pool), Registered(*pool)
        table, lens = Registered((3, 4), "<i4"), Registered((3,), "<i4")
        before, (copies, syncs) = fake.launches(), fake.copies_syncs()
        out = k(q=q, k=kp, v=vp, scale=0.125, block_table=table, seq_lens=lens, page_size=16)
        self.assertEqual(fake.launches() - before, 1, "the batch in one launch")
        self.assertEqual(fake.last_stream(), 0x5150, "on the stream of the inputs' interface")
        self.assertEqual(fake.copies_syncs(), (copies, syncs), "no host copy, no synchronization")
        for name, shape in (("out", (3, 4, 64)), ("lse", (3, 4))):
            self.assertIs(type(out[name]), Registered, name)
            self.assertEqual(out[name].__cuda_array_interface__["shape"], shape, name)
        with self.assertRaisesRegex(ValueError, r"needs max_seqlen_q="):
            k(q=q, k=kp, v=vp, scale=0.125, block_table=table, seq_lens=lens, page_size=16,
              cu_seqlens_q=Registered((4,), "<i4"))
        with self.assertRaisesRegex(ValueError, r"seq_lens is devlib on cuda:0 of dtype int64"):
            k(q=q, k=kp, v=vp, scale=0.125, block_table=table, seq_lens=Registered((3,), "<i8"), page_size=16)
        with self.assertRaisesRegex(ValueError, r"block_table of shape \(2, 4\)"):
            k(q=q, k=kp, v=vp, scale=0.125, block_table=Registered((2, 4), "<i4"), seq_lens=lens, page_size=16)

    def test_paged_prefill_launches_once_in_the_serving_layout(self):
        k = assoc.load("specs/attention.yaml").compile("gpu")
        pool = ((8, 16, 2, 64), "<f2")
        kp, vp = Registered(*pool), Registered(*pool)
        table, lens = Registered((3, 4), "<i4"), Registered((3,), "<i4")
        # 7 queries in all, [rows][heads][d], the most of a sequence 4
        q, cu = Registered((7, 4, 64), "<f2"), Registered((4,), "<i4")
        before, (copies, syncs) = fake.launches(), fake.copies_syncs()
        out = k(q=q, k=kp, v=vp, scale=0.125, block_table=table, seq_lens=lens, page_size=16, cu_seqlens_q=cu,
                max_seqlen_q=4)
        self.assertEqual(fake.launches() - before, 1, "the batch in one launch")
        self.assertEqual(fake.copies_syncs(), (copies, syncs), "no host copy, no synchronization")
        for name, shape in (("out", (7, 4, 64)), ("lse", (7, 4))):
            self.assertEqual(out[name].__cuda_array_interface__["shape"], shape, name)
        # the same number of queries each: no offsets, no max_seqlen_q
        before = fake.launches()
        k(q=Registered((6, 4, 64), "<f2"), k=kp, v=vp, scale=0.125, block_table=table, seq_lens=lens, page_size=16)
        self.assertEqual(fake.launches() - before, 1, "two queries a sequence in one launch")
        with self.assertRaisesRegex(ValueError, r"max_seqlen_q must be 1 or more, got 0"):
            k(q=q, k=kp, v=vp, scale=0.125, block_table=table, seq_lens=lens, page_size=16, cu_seqlens_q=cu,
              max_seqlen_q=0)

    def test_no_stream_is_the_legacy_default(self):
        for given in (None, 1, 2):  # none: the legacy default; 1, 2: CU_STREAM_LEGACY, CU_STREAM_PER_THREAD
            before = fake.launches()
            self.k(x=Registered((3, 4), stream=given))
            self.assertGreater(fake.launches(), before)
            self.assertEqual(fake.last_stream(), given)

    def test_two_inputs_and_their_errors_name_the_input(self):
        w, x = Registered((2, 7)), Registered((2, 7))
        before = fake.launches()
        out = self.lr(w=w, x=x)
        self.assertGreater(fake.launches(), before)
        self.assertEqual(fake.last_stream(), 0x5150)
        want = self.lr.output_shapes({"w": (2, 7), "x": (2, 7)})
        self.assertEqual(sorted(out), ["A", "B"])
        for name, v in out.items():
            self.assertIs(type(v), Registered, name)
            self.assertEqual(v.__cuda_array_interface__["shape"], tuple(want[name]), name)
        before = fake.launches()
        with self.assertRaisesRegex(ValueError, r"input 'x' has len 6, but 'w' has 7"):
            self.lr(w=w, x=Registered((2, 6)))
        with self.assertRaisesRegex(ValueError, r"input 'x' has dtype float64; the spec's 'x' is f32"):
            self.lr(w=w, x=Registered((2, 7), "<f8"))
        with self.assertRaisesRegex(ValueError, r"input 'x' is numpy on the host, but 'w' is devlib on cuda:0"):
            self.lr(w=w, x=np.zeros((2, 7), np.float32))
        with self.assertRaisesRegex(ValueError, r"input 'x' is otherlib on cuda:0, but 'w' is devlib on cuda:0"):
            self.lr(w=w, x=Unknown((2, 7)))
        self.assertEqual(fake.launches(), before, "nothing launched for a bad input")

    def test_layouts_and_masks(self):
        def with_(shape, **cai):
            a = Registered(shape)
            a.__cuda_array_interface__.update(cai)
            return a

        before = fake.launches()
        with self.assertRaisesRegex(ValueError, r"input 'x' is not C-contiguous"):
            self.k(x=with_((2, 5), strides=(4, 8)))
        with self.assertRaisesRegex(ValueError, r"input 'x' is a masked CUDA array"):
            self.k(x=with_((2, 5), mask=Registered((2, 5), "|b1")))
        self.assertEqual(fake.launches(), before, "nothing launched for a bad input")
        # row-major, written out: an axis of length 1 may have any stride
        for strides in ((20, 4), (4, 4)):
            out = self.k(x=with_((1, 5), strides=strides))
            self.assertEqual(out["y"].__cuda_array_interface__["shape"], (1, 5), strides)
        self.assertEqual(fake.launches() - before, 2)

    def test_a_library_without_an_allocator_is_refused(self):
        before = fake.launches()
        with self.assertRaisesRegex(ValueError, r"no way to make the output 'lse' for otherlib\.Unknown inputs .*"
                                                r"assoc\.register_cuda_array\(Unknown, allocate\)"):
            self.k(x=Unknown((2, 5)))
        self.assertEqual(fake.launches(), before)

    def test_an_allocator_that_gives_the_wrong_array_is_refused(self):
        class Wrong(DeviceArray):
            pass

        assoc.register_cuda_array(Wrong, lambda shape, dtype, device: Wrong((1,) + tuple(shape), dtype.str))
        with self.assertRaisesRegex(ValueError, r"the allocator registered for .*Wrong gave 'lse' as .*not a "
                                                r"C-contiguous CUDA array of shape \(2,\) and dtype float32"):
            self.k(x=Wrong((2, 5)))
        with self.assertRaisesRegex(TypeError, r"a type and a callable"):
            assoc.register_cuda_array(Wrong, None)

    def test_the_drivers_error_is_the_kernels(self):
        os.environ["FAKECUDA"] = "launch=700"
        try:
            with self.assertRaisesRegex(assoc.Error, r"online_softmax: .*illegal memory access"):
                self.k(x=Registered((2, 5)))
        finally:
            os.environ.pop("FAKECUDA", None)

    def test_cupy_arrays_run_on_cupys_stream_and_get_cupy_outputs(self):
        try:
            import cupy  # noqa: F401
            self.skipTest("CuPy imports here: its arrays need a real device, not the fake driver")
        except ImportError:
            pass
        calls = []
        sys.modules["cupy"] = cupy_stand_in(0x8080, calls)
        try:
            before, (copies, syncs) = fake.launches(), fake.copies_syncs()
            out = self.k(x=CupyLike((2, 5), stream=0x7070))
            self.assertGreaterEqual(fake.launches() - before, 1)
            self.assertEqual(fake.last_stream(), 0x8080, "on CuPy's current stream, as CuPy's own calls")
            self.assertEqual(fake.copies_syncs(), (copies, syncs))
            self.assertEqual(sorted(c for c in calls if c[0] == "empty"),
                             [("empty", (2,), "float32"), ("empty", (2, 5), "float32")])
            self.assertIn(("device", 0), calls)
            self.assertTrue(all(type(v) is CupyLike for v in out.values()), out)
            self.assertEqual(Registered.made, [], "cupy's own allocation, not a registered hook")
        finally:
            del sys.modules["cupy"]

    def test_a_host_kernel_refuses_cuda_arrays(self):
        kernels = [assoc.load("specs/online_softmax.yaml").compile("interp")]
        try:
            kernels.append(assoc.load("specs/online_softmax.yaml").compile("cpu", threads=1))
        except assoc.DeviceError as e:
            cpu_missing = str(e)
        else:
            cpu_missing = None
        before = fake.launches()
        for k in kernels:
            with self.assertRaisesRegex(ValueError, r"input 'x' is devlib on cuda:0: device arrays need a kernel "
                                                    r"compiled for \"gpu\" \(this one runs on %s\)" % k.device):
                k(x=Registered((2, 5)))
        self.assertEqual(fake.launches(), before)
        self.assertEqual(Registered.made, [], "no output made for a refused run")
        if cpu_missing is not None:
            self.skipTest("interp refused them; no cpu kernel here: %s" % cpu_missing)


if __name__ == "__main__":
    unittest.main()
