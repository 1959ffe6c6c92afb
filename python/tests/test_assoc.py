"""The assoc package on NumPy arrays: load, check, compile, run, and the
errors of each.  Run from the repository root with PYTHONPATH=python
(tests/python.sh does), against build/libassoc.so."""
import os
import pathlib
import re
import time
import unittest

import numpy as np

import assoc

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def setUpModule():
    os.chdir(ROOT)  # the specs' paths, and the diagnostics' file names, from the root


SCALED = """carrier: scaled
dims: {d: 4}
params: {scale: f32}
element: {x: 'f32[d]'}
state: {s: 'f32[d]'}
identity: {s: 0}
lift: {s: x}
merge: {s: a.s + b.s}
finalize: {out: s * scale}
reference: {out: sum(x) * scale}
laws: [commutative]
"""

DIFFERENCE = """carrier: difference
element: {x: f32}
state: {s: f32}
identity: {s: 0}
lift: {s: x}
merge: {s: a.s - b.s}
finalize: {out: s}
"""


def read(path):
    with open(path) as f:
        return f.read()


def softmax_ref(x):
    x = x.astype(np.float64)
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - m)
    return np.log(e.sum(-1)) + m[..., 0], e / e.sum(-1, keepdims=True)


def bf16_bits(x):
    """float32 values as bfloat16's 16-bit patterns, rounded to nearest even."""
    u = np.ascontiguousarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7fff + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_values(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def attention_ref(q, k, v, scale):
    """Causal attention per head, query head h on key/value head h / (H / G)."""
    H, G = q.shape[0], k.shape[0]
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    out = np.zeros((H, q.shape[1], v.shape[2]))
    lse = np.zeros((H, q.shape[1]))
    for h in range(H):
        g = h // (H // G)
        s = q[h] @ k[g].T * scale
        s[np.triu_indices(q.shape[1], 1, s.shape[1])] = -np.inf
        m = s.max(1, keepdims=True)
        w = np.exp(s - m)
        out[h] = w @ v[g] / w.sum(1, keepdims=True)
        lse[h] = np.log(w.sum(1)) + m[:, 0]
    return out, lse


class Library(unittest.TestCase):
    def test_library_is_found(self):
        path = assoc.library_path()
        self.assertTrue(os.path.exists(path), path)
        self.assertTrue(path.endswith("libassoc.so"), path)

    def test_missing_library_lists_what_was_tried(self):
        from assoc import _lib
        saved, env, candidates = _lib._lib, os.environ.get("ASSOC_LIBRARY"), _lib.candidates
        try:
            _lib._lib = None
            os.environ["ASSOC_LIBRARY"] = "/nonexistent/libassoc.so"
            paths = _lib.candidates()
            self.assertEqual(paths[0], "/nonexistent/libassoc.so")
            self.assertTrue(paths[1].endswith(os.path.join("build", "libassoc.so")), paths)
            del os.environ["ASSOC_LIBRARY"]  # the fallbacks alone: a named library that fails is an error
            _lib.candidates = lambda: ["/nonexistent/libassoc.so", "/nonexistent/lib/libassoc.so"]
            with self.assertRaisesRegex(assoc.LibraryError, r"tried: /nonexistent/libassoc.so \(no such file\); "
                                                            r"/nonexistent/lib/libassoc.so"):
                assoc.load("specs/sum.yaml")
        finally:
            _lib._lib, _lib.candidates = saved, candidates
            if env is None:
                os.environ.pop("ASSOC_LIBRARY", None)
            else:
                os.environ["ASSOC_LIBRARY"] = env

    def test_a_named_library_that_does_not_load_is_an_error(self):
        # not the checkout's library loaded in its place without a word
        from assoc import _lib
        saved, env = _lib._lib, os.environ.get("ASSOC_LIBRARY")
        try:
            for path, why in (("/nope.so", "no such file"), ("/etc/passwd", "invalid ELF header|file too short"),
                              ("/lib/x86_64-linux-gnu/libc.so.6", "not libassoc")):
                if why == "not libassoc" and not os.path.exists(path):
                    continue
                _lib._lib = None
                os.environ["ASSOC_LIBRARY"] = path
                with self.assertRaisesRegex(assoc.LibraryError, r"ASSOC_LIBRARY=%s does not load: .*(%s)" % (
                        re.escape(path), why)):
                    assoc.load("specs/sum.yaml")
        finally:
            _lib._lib = saved
            if env is None:
                os.environ.pop("ASSOC_LIBRARY", None)
            else:
                os.environ["ASSOC_LIBRARY"] = env


class Softmax(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.spec = assoc.load("specs/online_softmax.yaml")
        cls.k = cls.spec.compile(device="cpu", threads=2)

    def test_spec_lists_arrays(self):
        self.assertEqual(self.spec.name, "online_softmax")
        self.assertEqual([(a.name, a.role, a.type, a.is_output) for a in self.spec.arrays],
                         [("x", "element", "f32", False), ("lse", "finalize", "f32", True),
                          ("y", "map", "f32", True)])
        self.assertEqual(self.spec.params, {})
        self.assertEqual(self.k.device, "cpu")

    def test_matches_numpy(self):
        x = np.random.default_rng(1).standard_normal((5, 300)).astype(np.float32) * 4
        out = self.k(x=x)
        self.assertEqual(sorted(out), ["lse", "y"])
        self.assertEqual(out["lse"].shape, (5,))
        self.assertEqual(out["y"].shape, (5, 300))
        self.assertEqual(out["y"].dtype, np.float32)
        lse, y = softmax_ref(x)
        np.testing.assert_allclose(out["lse"], lse, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(out["y"], y, rtol=1e-4, atol=1e-7)

    def test_output_shapes_name_a_missing_or_unknown_input(self):
        self.assertEqual(self.k.output_shapes({"x": (2, 5)}), {"lse": [2], "y": [2, 5]})
        with self.assertRaisesRegex(ValueError, r"^online_softmax: shapes lack the input 'x'; its inputs are x$"):
            self.k.output_shapes({})
        with self.assertRaisesRegex(ValueError, r"^online_softmax: shapes name no input 'X'; its inputs are x$"):
            self.k.output_shapes({"x": (2, 5), "X": (2, 5)})

    def test_zero_rows(self):
        out = self.k(x=np.zeros((0, 8), np.float32))
        self.assertEqual(out["lse"].shape, (0,))
        self.assertEqual(out["y"].shape, (0, 8))
        # an empty head axis is named as such, not "0 heads on 1 key/value heads" of a carrier with none
        with self.assertRaisesRegex(ValueError, r"^input 'x' has heads 0 \(its leading axis\): a head axis holds 1 "
                                                r"or more; a run of no rows takes rows 0 instead"):
            self.k(x=np.zeros((0, 2, 8), np.float32))
        attn = assoc.load("specs/attention.yaml", dims={"d": 4, "dv": 4}).compile("interp")
        with self.assertRaisesRegex(ValueError, r"^input 'k' has kv_heads 0 \(its leading axis\)"):
            attn(q=np.ones((2, 3, 4), np.float16), k=np.ones((0, 5, 4), np.float16), v=np.ones((0, 5, 4), np.float16),
                 scale=0.5)

    def test_lists_become_arrays_of_the_spec_type(self):
        out = self.k(x=[[0.0, 0.0, 0.0, 0.0]])
        self.assertAlmostEqual(float(out["lse"][0]), np.log(4), places=6)

    def test_dtype_is_checked(self):
        with self.assertRaisesRegex(ValueError, r"input 'x' has dtype float64; the spec's 'x' is f32"):
            self.k(x=np.zeros((2, 3)))

    def test_shape_is_checked(self):
        with self.assertRaisesRegex(ValueError, r"input 'x' has 4 axes"):
            self.k(x=np.zeros((1, 2, 3, 4), np.float32))
        with self.assertRaisesRegex(ValueError, r"input 'x' has 1 axes; an element input of width 1 has"):
            self.k(x=np.zeros(3, np.float32))

    def test_contiguity_is_checked(self):
        x = np.zeros((4, 8), np.float32)[:, ::2]
        with self.assertRaisesRegex(ValueError, r"input 'x' is not C-contiguous"):
            self.k(x=x)

    def test_inputs_that_are_not_arrays_are_named(self):
        with self.assertRaisesRegex(TypeError, r"input 'x' is None, not an array: an element input has \[rows\]\[len\]"):
            self.k(x=None)
        with self.assertRaisesRegex(TypeError, r"^input 'x': "):
            self.k(x=object())
        with self.assertRaisesRegex(ValueError, r"^input 'x': "):
            self.k(x=[["a", "b"]])
        with self.assertRaisesRegex(ValueError, r"^input 'x': "):
            self.k(x=[[1.0, 2.0], [3.0]])
        with self.assertRaisesRegex(TypeError, r"dims: the name of a dim is a str, not 3"):
            assoc.load("specs/online_softmax.yaml", dims={3: 4})
        # not "'list' object has no attribute 'items'"
        with self.assertRaisesRegex(TypeError, r"^dims must be a dict of the dims' names to ints \(\{'d': 128\}\), "
                                               r"not list"):
            assoc.load("specs/attention.yaml", dims=[("d", 8)])

    def test_big_endian_arrays_are_refused_saying_so(self):
        x = np.arange(8, dtype=">f4").reshape(2, 4)
        with self.assertRaisesRegex(ValueError, r"input 'x' has dtype >f4, of the other byte order than this "
                                                r"machine's; the spec's 'x' is f32"):
            self.k(x=x)
        out = self.k(x=x.astype(x.dtype.newbyteorder("=")))
        np.testing.assert_allclose(out["lse"], np.log(np.exp(np.arange(8.0).reshape(2, 4)).sum(1)), rtol=1e-6)

    def test_masked_numpy_arrays_are_refused(self):
        x = np.ma.masked_array(np.array([[1, 2, 3]], np.float32), mask=[[False, True, False]])
        with self.assertRaisesRegex(ValueError, r"input 'x' is a masked NumPy array \(numpy.ma\) with elements masked"):
            self.k(x=x)
        # nothing masked: its data is the array
        out = self.k(x=np.ma.masked_array(np.array([[1, 2, 3]], np.float32)))
        self.assertAlmostEqual(float(out["lse"][0]), float(np.log(np.exp([1.0, 2.0, 3.0]).sum())), places=5)

    def test_misaligned_arrays_are_refused(self):
        x = np.frombuffer(bytearray(8 * 4 + 1), np.float32, offset=1, count=8).reshape(2, 4)
        self.assertFalse(x.flags.aligned)
        with self.assertRaisesRegex(ValueError, r"buffer 'x' at 0x[0-9a-f]+ is not aligned to its elements \(f32, 4 "
                                                r"bytes\)"):
            self.k(x=x)

    def test_counts_are_ints_in_range(self):
        # ctypes cut 2**40 to 0 (every core, check's default trials) and int() 2.7 to 2, without a word
        for bad in (2.7, "2", None, True):
            with self.assertRaisesRegex(TypeError, r"threads must be an int, not %s" % re.escape(repr(bad))):
                self.spec.compile("cpu", threads=bad)
        with self.assertRaisesRegex(ValueError, r"threads = 1099511627776 is out of range \(a C int"):
            self.spec.compile("cpu", threads=2**40)
        with self.assertRaisesRegex(ValueError, r"trials = 1099511627776 is out of range"):
            self.spec.check(trials=2**40)
        with self.assertRaisesRegex(TypeError, r"trials must be an int, not 1.5"):
            self.spec.check(trials=1.5)
        with self.assertRaisesRegex(TypeError, r"seed must be an int, not 1.5"):
            self.spec.check(trials=10, seed=1.5)
        # ctypes took 2**70 and -1 as their low 64 bits, unsaid
        for bad in (2**64, 2**70, -1):
            with self.assertRaisesRegex(ValueError, r"seed %d is out of range \(0 to 2\^64 - 1\)" % bad):
                self.spec.check(trials=10, seed=bad)
        self.assertTrue(self.spec.check(trials=10, seed=2**64 - 1).ok)
        # C reads a string up to its first NUL: the rest would go unseen
        # (a path checked by its suffix, a device named "cpu\0...")
        for call, what in ((lambda: assoc.load("specs/sum.yaml" + "\0/etc/passwd"), "path"),
                           (lambda: assoc.load(pathlib.Path("specs/sum.yaml\0x")), "path"),
                           (lambda: assoc.loads("carrier: x\0"), "spec text"),
                           (lambda: assoc.load("specs/sum.yaml", dims={"d\0x": 4}), "dims: a dim's name"),
                           (lambda: self.spec.compile("cpu\0gpu"), "device")):
            with self.assertRaisesRegex(ValueError, r"^%s: embedded null byte at index" % re.escape(what)):
                call()
        with self.assertRaisesRegex(TypeError, r"device must be a str"):
            self.spec.compile(None)
        self.assertEqual(self.spec.compile("cpu", threads=np.int64(1)).device, "cpu")

    def test_readonly_and_zero_length_inputs(self):
        x = np.ones((2, 3), np.float32)
        x.flags.writeable = False
        np.testing.assert_allclose(self.k(x=x)["y"], np.full((2, 3), 1 / 3, np.float32), rtol=1e-6)
        out = self.k(x=np.zeros((3, 0), np.float32))
        self.assertEqual(out["y"].shape, (3, 0))
        self.assertTrue(np.all(np.isneginf(out["lse"])), out["lse"])

    def test_names_are_checked(self):
        with self.assertRaisesRegex(ValueError, r"needs the input 'x'"):
            self.k()
        with self.assertRaisesRegex(ValueError, r"no input or param 'z'"):
            self.k(x=np.zeros((1, 2), np.float32), z=1)
        with self.assertRaisesRegex(ValueError, r"'y' is an output"):
            self.k(x=np.zeros((1, 2), np.float32), y=np.zeros((1, 2), np.float32))
        # positionally the array would be taken for heads=
        with self.assertRaisesRegex(TypeError, r"online_softmax takes its inputs and params by name, not 1 "
                                               r"positional argument: call it as kernel\(x=\.\.\.\)"):
            self.k(np.zeros((1, 2), np.float32))

    def test_numbers_where_arrays_go_and_the_reverse(self):
        with self.assertRaisesRegex(ValueError, r"input 'x' is a float, not an array: an element input has "
                                                r"\[rows\]\[len\]"):
            self.k(x=3.0)
        with self.assertRaisesRegex(ValueError, r"input 'x' is a 0-dimensional array, not an array"):
            self.k(x=np.float32(3.0).reshape(()))
        for h in (0, -1, 1.5, True):
            with self.assertRaisesRegex(ValueError, r"heads=%s: the number of query heads, a positive integer"
                                        % re.escape(repr(h))):
                self.k(x=np.zeros((1, 2), np.float32), heads=h)
        with self.assertRaisesRegex(ValueError, r"kv_heads=0: the number of key/value heads"):
            self.k(x=np.zeros((1, 2), np.float32), kv_heads=0)
        k = assoc.loads(SCALED, dims={"d": 3}).compile("cpu", threads=1)
        x = np.ones((2, 4, 3), np.float32)
        for bad in ("abc", "0.5", b"0.5", None, [0.5]):
            with self.assertRaisesRegex(ValueError, r"param 'scale' of .* takes a number, not %s"
                                        % re.escape(repr(bad))):
                k(x=x, scale=bad)
        np.testing.assert_array_equal(k(x=x, scale=np.float32(0.5))["out"], np.full((2, 3), 2, np.float32))

    def test_threads_share_a_kernel(self):
        import threading
        # two shapes in turn: each call writes its own pointers into its shape's plan
        xs = [np.full((2, 50 + i % 2 * 7), i, np.float32) + np.arange(50 + i % 2 * 7, dtype=np.float32)
              for i in range(8)]
        got = [None] * len(xs)

        def work(i):
            for _ in range(20):
                got[i] = self.k(x=xs[i])["lse"]

        ts = [threading.Thread(target=work, args=(i,)) for i in range(len(xs))]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        for i, x in enumerate(xs):
            np.testing.assert_allclose(got[i], softmax_ref(x)[0], rtol=1e-5)

    def test_device_arrays_need_a_gpu_kernel(self):
        class DeviceArray:  # what CuPy and Numba hand over: a pointer in device memory
            __module__ = "devicelib"
            __cuda_array_interface__ = {"shape": (2, 5), "typestr": "<f4", "data": (4096, False), "version": 3,
                                        "strides": None}

        with self.assertRaisesRegex(ValueError, r"input 'x' is devicelib on cuda:0: device arrays need a kernel "
                                                r"compiled for \"gpu\" \(this one runs on cpu\)"):
            self.k(x=DeviceArray())
        with self.assertRaisesRegex(ValueError, r"input 'x' has dtype float64"):
            DeviceArray.__cuda_array_interface__ = dict(DeviceArray.__cuda_array_interface__, typestr="<f8")
            self.k(x=DeviceArray())

    def test_interp_agrees(self):
        x = np.random.default_rng(2).standard_normal((3, 17)).astype(np.float32)
        out = self.spec.compile(device="interp")(x=x)
        lse, y = softmax_ref(x)
        np.testing.assert_allclose(out["lse"], lse, rtol=1e-5)
        np.testing.assert_allclose(out["y"], y, rtol=1e-5, atol=1e-7)


class Specs(unittest.TestCase):
    def test_bad_spec_file_carries_its_position(self):
        want = read("tests/bad/expr_arity.err").strip()  # tests/bad/expr_arity.yaml:6:6: error: ...
        with self.assertRaises(assoc.SpecError) as cm:
            assoc.load("tests/bad/expr_arity.yaml")
        self.assertTrue(str(cm.exception).startswith(want), str(cm.exception))
        self.assertIsInstance(cm.exception, ValueError)
        self.assertIsInstance(cm.exception, assoc.Error)

    def test_a_path_that_is_no_path_is_a_type_error(self):
        # not the file "None" looked for
        for bad in (None, 3):
            with self.assertRaisesRegex(TypeError, r"path must be a str or os.PathLike, not %r" % bad):
                assoc.load(bad)
        import pathlib
        self.assertEqual(assoc.load(pathlib.Path("specs/sum.yaml")).name, "sum")

    def test_spec_text_that_is_no_text_is_a_type_error(self):
        # bytes(5) was five NULs ("embedded null byte"), bytes(a path) its name read as the spec
        for bad, said in ((5, "int"), (None, "NoneType"), ([1, 2], "list"),
                          (pathlib.Path("specs/sum.yaml"), "PosixPath: assoc.load\\(path\\) reads a spec's file")):
            with self.assertRaisesRegex(TypeError, r"^text must be a str or bytes, the spec's text, not %s" % said):
                assoc.loads(bad)
        with open("specs/sum.yaml") as f:
            with self.assertRaisesRegex(TypeError, r"not TextIOWrapper: assoc.load\(path\) reads a spec's file"):
                assoc.loads(f)
        self.assertEqual(assoc.loads(read("specs/sum.yaml").encode()).name, "sum")
        self.assertEqual(assoc.loads(bytearray(read("specs/sum.yaml").encode())).name, "sum")

    def test_bad_spec_text_carries_its_position(self):
        text = read("tests/bad/expr_arity.yaml")
        with self.assertRaisesRegex(assoc.SpecError, r"^spec:6:6: error: 'exp' takes 1 argument, got 2"):
            assoc.loads(text)

    def test_missing_file(self):
        with self.assertRaisesRegex(assoc.SpecError, r"no/such\.yaml"):
            assoc.load("no/such.yaml")

    def test_dims_and_params(self):
        spec = assoc.loads(SCALED, dims={"d": 3})
        self.assertEqual(spec.params, {"scale": "f32"})
        self.assertEqual(spec.arrays[0].width, 3, "the dim given overrides the spec's 4")
        k = spec.compile("cpu", threads=1)
        x = np.arange(24, dtype=np.float32).reshape(2, 4, 3)
        out = k(x=x, scale=0.5)["out"]
        self.assertEqual(out.shape, (2, 3))
        np.testing.assert_array_equal(out, x.sum(1) * 0.5)
        with self.assertRaisesRegex(ValueError, r"needs the param 'scale'"):
            k(x=x)
        for bad in ("3", None, True):
            with self.assertRaisesRegex(TypeError, r"dim 'd' takes an int, not %s" % re.escape(repr(bad))):
                assoc.loads(SCALED, dims={"d": bad})
        with self.assertRaisesRegex(ValueError, r"input 'x' has 4 components per element; the spec's 'x' has 3"):
            k(x=np.zeros((2, 4, 4), np.float32), scale=1)

    def test_check_report(self):
        r = assoc.load("specs/welford.yaml").check(trials=200, seed=3)
        self.assertTrue(r.ok)
        self.assertIn("welford: ok", r.text)
        bad = assoc.loads(DIFFERENCE)
        r = bad.check(trials=200)
        self.assertFalse(r.ok)
        self.assertRegex(r.text, r"identity fails|not associative")
        self.assertTrue(r.text.startswith(bad.name + ": FAILED ("), r.text)

    def test_check_report_says_what_holds(self):
        # no reference: not said to hold
        no_ref = assoc.loads(SCALED.replace("reference: {out: sum(x) * scale}\n", ""))
        r = no_ref.check(trials=200)
        self.assertTrue(r.ok)
        self.assertIn("no reference given", r.text)
        self.assertNotIn("reference hold", r.text)
        # every law unknown to the prover: named so, not said to be proved
        hyp = assoc.loads("carrier: hyp\nelement: {x: f32}\nstate: {s: f32}\nidentity: {s: 0}\nlift: {s: abs(x)}\n"
                          "merge: {s: 'sqrt(a.s * a.s + b.s * b.s)'}\nlaws: [commutative]\n")
        r = hyp.check(trials=200)
        self.assertTrue(r.ok)
        self.assertIn("identity, associative, commutative unknown to the prover, held in the trials", r.text)
        self.assertNotIn("proved", r.text)
        r = assoc.load("specs/welford.yaml").check(trials=200)
        self.assertIn("the results match the reference on", r.text)

    def test_check_report_carries_the_float32_accuracy_warning(self):
        # o_lse's lse kept in float32 is beyond run's tolerance on a row of one value repeated
        r = assoc.load("specs/o_lse.yaml").check(trials=200)
        self.assertTrue(r.ok)
        self.assertIn("; float32 accuracy: out[0] is ", r.text)
        acc = [w for w in r.warnings if w.startswith("float32 accuracy: ")]
        self.assertEqual(len(acc), 1, r.warnings)
        self.assertRegex(acc[0], r"^float32 accuracy: out\[0\] is .* times the tolerance of assoc run")
        # a max is exact in float32
        r = assoc.load("specs/max.yaml").check(trials=200)
        self.assertNotIn("float32 accuracy", r.text)
        self.assertEqual(r.warnings, [])

    def test_failed_laws_refuse_the_compile(self):
        bad = assoc.loads(DIFFERENCE)
        with self.assertRaisesRegex(assoc.LawError, r"identity fails|not associative"):
            bad.compile("cpu")
        k = bad.trust_merge().compile("interp")
        out = k(x=np.array([[5, 2]], np.float32))["out"]
        self.assertEqual(out.shape, (1,))

    def test_params_where_the_laws_fail_refuse_the_call(self):
        # lawful for p >= 0 only: a call at p = -1 raises, as run --param refuses
        spec = assoc.loads("carrier: abs_scaled\nparams: {p: f32}\nelement: {x: f32}\nstate: {s: f32}\n"
                           "identity: {s: 0}\nlift: {s: abs(x) * p}\nmerge: {s: abs(a.s + b.s)}\n"
                           "finalize: {out: s}\nlaws: [commutative]\n")
        k = spec.compile("interp")
        x = np.array([[1, -2, 3, -4]], np.float32)
        self.assertAlmostEqual(float(k(x=x, p=0.5)["out"][0]), 5.0, places=5)
        with self.assertRaisesRegex(assoc.LawError, r"identity fails.*p=-1"):
            k(x=x, p=-1.0)

    def test_new_param_values_reach_no_verdict_where_the_laws_are_proved_for_all(self):
        verdicts = assoc._lib.optional("assoc_kernel_verdicts")
        if verdicts is None:
            self.skipTest("this libassoc has no assoc_kernel_verdicts")
        # attention's lift reads scale, and the prover proves its laws whatever scale is: after the first
        # verdict, 40 new values (past the 16 kept) are held to nothing but assume
        k = assoc.load("specs/attention.yaml", dims={"d": 4, "dv": 4}).compile("interp")
        q = np.linspace(-1, 1, 8, dtype=np.float32).astype(np.float16).reshape(2, 4)
        for i in range(40):
            self.assertEqual(k(q=q, k=q, v=q, scale=0.05 + i / 64)["out"].shape, (2, 4))
        self.assertEqual(verdicts(k._h), 1)
        # a part of assume over params alone still refuses a value that breaks it
        spec = assoc.loads("carrier: softmax_temp\nparams: {temp: f32}\nassume: temp > 0\nelement: {x: f32}\n"
                           "let:\n  z: x / temp\nstate: {m: f32, l: f32}\nidentity: {m: -inf, l: 0}\n"
                           "lift: {m: z, l: 1}\nmerge:\n  m: max(a.m, b.m)\n"
                           "  l: a.l * exp(a.m - m) + b.l * exp(b.m - m)\nfinalize: {lse: m + log(l)}\n"
                           "reference:\n  lse: log(sum(exp(z)))\nlaws: [commutative]\n")
        k = spec.compile("interp")
        x = np.ones((2, 3), np.float32)
        for i in range(20):
            self.assertEqual(k(x=x, temp=1.0 + i)["lse"].shape, (2,))
        self.assertEqual(verdicts(k._h), 1)
        with self.assertRaisesRegex(ValueError, r"param temp = -1 breaks 'assume' \(temp > 0\)"):
            k(x=x, temp=-1.0)
        # lawful for p >= 0 only, which the prover cannot show for every p: each new value is judged
        spec = assoc.loads("carrier: abs_scaled\nparams: {p: f32}\nelement: {x: f32}\nstate: {s: f32}\n"
                           "identity: {s: 0}\nlift: {s: abs(x) * p}\nmerge: {s: abs(a.s + b.s)}\n"
                           "finalize: {out: s}\nlaws: [commutative]\n")
        k = spec.compile("interp")
        x = np.array([[1, -2, 3, -4]], np.float32)
        for i in range(3):
            k(x=x, p=0.5 + i)
        self.assertEqual(verdicts(k._h), 3)
        with self.assertRaisesRegex(assoc.LawError, r"identity fails.*p=-1"):
            k(x=x, p=-1.0)

    def test_a_param_that_breaks_assume_is_a_value_error(self):
        # a bad argument named as run names it, not a LawError ("could not draw inputs where 'assume' holds")
        spec = assoc.loads("carrier: softmax_temp\nparams: {temp: f32}\nassume: temp > 0\nelement: {x: f32}\n"
                           "let:\n  z: x / temp\nstate: {m: f32, l: f32}\nidentity: {m: -inf, l: 0}\n"
                           "lift: {m: z, l: 1}\nmerge:\n  m: max(a.m, b.m)\n"
                           "  l: a.l * exp(a.m - m) + b.l * exp(b.m - m)\nfinalize: {lse: m + log(l)}\n"
                           "reference:\n  lse: log(sum(exp(z)))\nlaws: [commutative]\n")
        k = spec.compile("cpu")
        x = np.ones((2, 3), np.float32)
        with self.assertRaisesRegex(ValueError, r"param temp = -1 breaks 'assume' \(temp > 0\)") as cm:
            k(x=x, temp=-1.0)
        self.assertNotIsInstance(cm.exception, assoc.LawError)
        self.assertNotIn("could not draw", str(cm.exception))
        self.assertEqual(k(x=x, temp=2.0)["lse"].shape, (2,))

    def test_a_nan_param_that_leaves_every_state_nan_is_a_value_error(self):
        # no law fails, and the spec has no assume: the param is named, not "could not draw inputs where
        # 'assume' holds" in a LawError
        spec = assoc.loads("carrier: scaled\nparams: {sc: f64}\nelement: {x: f32}\nstate: {s: f64}\n"
                           "identity: {s: 0}\nlift: {s: x * sc}\nmerge: {s: a.s + b.s}\n"
                           "reference: {s: sum(x * sc)}\nlaws: [commutative]\n")
        k = spec.compile("interp")
        x = np.ones((2, 3), np.float32)
        # the package refuses a param that is not finite before the library judges it: named, not a LawError
        for bad in (float("nan"), float("inf"), -float("inf"), np.float32("nan")):
            with self.assertRaisesRegex(ValueError, r"param 'sc' of scaled is %s: a param is a finite number"
                                        % re.escape(repr(float(bad)))) as cm:
                k(x=x, sc=bad)
            self.assertNotIsInstance(cm.exception, assoc.LawError)
            self.assertNotIn("assume", str(cm.exception))
        self.assertEqual(list(k(x=x, sc=2.0)["s"]), [6.0, 6.0])

    def test_a_param_that_overflows_the_scores_is_named_not_a_law_error(self):
        k = assoc.load("specs/attention.yaml", dims={"d": 4, "dv": 4}).compile("interp")
        q = np.ones((1, 2, 4), np.float16)
        for bad in (float("inf"), float("nan")):
            with self.assertRaisesRegex(ValueError, r"param 'scale' of attention is %s: a param is a finite number"
                                        % re.escape(repr(bad))) as cm:
                k(q=q, k=q, v=q, scale=bad)
            self.assertNotIsInstance(cm.exception, assoc.LawError)

    def test_an_f32_param_is_rounded_to_f32_on_every_device(self):
        # x >= c with x = c = float32(0.7): interp compared with the double 0.7 (above float32's), and an
        # assume x >= c refused x on every device
        spec = assoc.loads("carrier: pcmp\nparams: {c: f32}\nassume: x >= c\nelement: {x: f32}\n"
                           "state: {n: i32}\nidentity: {n: 0}\nlift: {n: 'where(x >= c, 1, 0)'}\n"
                           "merge: {n: a.n + b.n}\nlaws: [commutative]\n")
        x = np.full((1, 3), np.float32(0.7), np.float32)
        for device in ("cpu", "interp"):
            self.assertEqual(list(spec.compile(device, threads=1)(x=x, c=0.7)["n"]), [3], device)

    def test_a_list_whose_values_the_input_type_would_change_is_refused(self):
        # NumPy's cast would cut 1.5 to 1, wrap 2**32 to 0, read "2" as 2 and make 1e39 an f32 infinity
        k = assoc.loads("carrier: isum\nelement: {x: i32}\nstate: {s: i64}\nidentity: {s: 0}\nlift: {s: x}\n"
                        "merge: {s: a.s + b.s}\nlaws: [commutative]\n").compile("interp")
        self.assertEqual(list(k(x=[[1, 2.0, -3]])["s"]), [0])
        for bad, said in (([[1.5, 2]], r"1\.5, which is not an i32 \(a whole number from -2147483648 to 2147483647\)"),
                          ([[2**32, 2]], r"4294967296, which is not an i32"), ([[1, 2**70]], r"1180591620717411303424, "
                                                                                 r"which is not an i32"),
                          ([[float("nan")]], r"nan, which is not an i32"), ([["2"]], r"strings, not real numbers"),
                          ([[1j]], r"complex numbers, not real numbers")):
            with self.assertRaisesRegex(ValueError, r"^input 'x': it holds " + said):
                k(x=bad)
        with self.assertRaisesRegex(TypeError, r"^input 'x': it holds None, which is no number"):
            k(x=[[1, None]])
        f = assoc.load("specs/sum.yaml").compile("interp")
        with self.assertRaisesRegex(ValueError, r"^input 'x': it holds 1e\+39, which is beyond f32's range"):
            f(x=[[1, 1e39]])
        self.assertEqual(list(f(x=[[float("inf"), 2**70]])["s"]), [float("inf")])

    def test_subclasses_of_numpy_arrays_go_with_numpy_arrays(self):
        # a subclass of a program's own was "__main__ on the host", refused beside a plain array
        class Tagged(np.ndarray):
            pass

        k = assoc.load("specs/cross_entropy.yaml").compile("interp")
        x = np.array([[1, 2, 3], [0, 0, 0]], np.float32)
        label = np.array([2, 0], np.int32)
        want = k(x=x, label=label)["loss"]
        for xs, ls in ((x.view(Tagged), label), (x, label.view(Tagged)), (x.view(Tagged), label.view(Tagged))):
            out = k(x=xs, label=ls)["loss"]
            self.assertIs(type(out), np.ndarray)
            np.testing.assert_array_equal(out, want)

    def test_a_copy_of_a_kernel_or_spec_is_the_object_itself(self):
        import copy
        import gc
        import pickle
        spec = assoc.load("specs/online_softmax.yaml")
        k = spec.compile("cpu", threads=1)
        x = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
        want = k(x=x)["lse"]
        # a second object over the same handle freed it when collected, under the first
        for obj in (k, spec):
            for c in (copy.copy(obj), copy.deepcopy(obj), copy.deepcopy({"m": [obj]})["m"][0]):
                self.assertIs(c, obj)
            del c
        gc.collect()
        np.testing.assert_array_equal(k(x=x)["lse"], want)
        self.assertEqual(spec.compile("interp").spec.name, "online_softmax")
        with self.assertRaisesRegex(TypeError, r"an assoc.Kernel cannot be pickled: its code is compiled into this "
                                               r"process; load the spec and compile it again"):
            pickle.dumps(k)
        with self.assertRaisesRegex(TypeError, r"an assoc.Spec cannot be pickled: .* load it again"):
            pickle.dumps(spec)

    def test_a_cpu_kernel_of_two_threads_runs_and_is_freed_in_a_forked_child(self):
        import signal
        import sys
        if not hasattr(os, "fork"):
            self.skipTest("no os.fork here")
        k = assoc.load("specs/online_softmax.yaml").compile("cpu", threads=2)
        x = np.random.default_rng(0).standard_normal((64, 4096)).astype(np.float32)
        want = k(x=x)["lse"]
        sys.stdout.flush(), sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child's run and its free waited on the parent's workers, which it has not
            code = 1
            try:
                signal.alarm(60)
                code = 0 if np.array_equal(k(x=x)["lse"], want) else 3
                del k
            finally:
                os._exit(code)
        for _ in range(600):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.05)
        else:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            self.fail("the forked child's run or free did not return in 30 s")
        self.assertEqual(os.waitstatus_to_exitcode(status), 0)
        np.testing.assert_array_equal(k(x=x)["lse"], want)

    def test_gpu_without_a_driver_says_why(self):
        saved = os.environ.get("ASSOC_LIBCUDA")
        os.environ["ASSOC_LIBCUDA"] = "build/no-such-libcuda.so.1"
        try:
            spec = assoc.load("specs/sum.yaml")
            with self.assertRaisesRegex(assoc.DeviceError, r"gpu: no CUDA driver: cannot load build/no-such"):
                spec.compile("gpu")
            k = spec.compile("auto")
            self.assertIn(k.device, ("cpu", "emu", "interp"))
            with self.assertRaisesRegex(assoc.DeviceError, r"unknown device 'tpu'"):
                spec.compile("tpu")
        finally:
            if saved is None:
                del os.environ["ASSOC_LIBCUDA"]
            else:
                os.environ["ASSOC_LIBCUDA"] = saved

    def test_bf16_needs_torch_or_its_bits(self):
        k = assoc.load("specs/layer_norm.yaml").compile("interp")
        with self.assertRaisesRegex(ValueError, r"'x' has dtype float16; the spec's 'x' is bf16 "
                                                r"\(a torch.bfloat16 tensor, or numpy.uint16 holding bfloat16's bit "
                                                r"patterns"):
            k(x=np.zeros((1, 4), np.float16), gamma=np.ones(4, np.float32), beta=np.zeros(4, np.float32),
              eps=1e-5)
        # uint16 is an f16 or bf16 input's bits only: an f32 input refuses it
        with self.assertRaisesRegex(ValueError, r"'gamma' has dtype uint16; the spec's 'gamma' is f32"):
            k(x=np.zeros((1, 4), np.uint16), gamma=np.ones(4, np.uint16), beta=np.zeros(4, np.float32), eps=1e-5)

    def test_bf16_as_numpy_uint16_bits(self):
        # x's values are whole bfloat16 numbers: the bits are their float32 bits' top half
        x = (np.random.default_rng(8).standard_normal((3, 257)) * 2 + 1).astype(np.float32)
        x = bf16_values(bf16_bits(x))
        gamma, beta = np.linspace(0.5, 1.5, 257, dtype=np.float32), np.linspace(-1, 1, 257, dtype=np.float32)
        for device in ("interp", "cpu"):
            out = assoc.load("specs/layer_norm.yaml").compile(device, threads=1)(
                x=bf16_bits(x), gamma=gamma, beta=beta, eps=1e-5)
            x64 = x.astype(np.float64)
            mean, var = x64.mean(1, keepdims=True), x64.var(1, keepdims=True)
            np.testing.assert_allclose(out["mean"], mean[:, 0], rtol=1e-5, atol=1e-6, err_msg=device)
            np.testing.assert_allclose(out["y"], (x64 - mean) / np.sqrt(var + 1e-5) * gamma + beta, rtol=1e-3,
                                       atol=1e-3, err_msg=device)

    def test_f8e4m3_as_numpy_uint8_bits(self):
        # every pattern but the two NaNs, in rows of odd lengths; the
        # values decoded here from the fields, apart from the library's
        codes = np.array([b for b in range(256) if b & 0x7f != 0x7f], np.uint8)
        e, m = (codes >> 3) & 15, (codes & 7).astype(np.float64)
        vals = np.where(e == 0, m * 2.0 ** -9, (8 + m) * 2.0 ** (e.astype(np.float64) - 10))
        vals = np.where(codes & 0x80, -vals, vals)
        x = np.random.default_rng(12).permutation(codes)[:3 * 37].reshape(3, 37)
        xv = vals[np.searchsorted(codes, x)]
        text = read("specs/online_softmax.yaml").replace("element: {x: f32}", "element: {x: f8e4m3}")
        for device in ("interp", "cpu"):
            out = assoc.loads(text).compile(device, threads=1)(x=x)
            lse, y = softmax_ref(xv)
            np.testing.assert_allclose(out["lse"], lse, rtol=1e-6, err_msg=device)
            np.testing.assert_allclose(out["y"], y, rtol=1e-5, atol=1e-7, err_msg=device)
        k = assoc.loads(text).compile("interp")
        with self.assertRaisesRegex(ValueError, r"'x' has dtype float32; the spec's 'x' is f8e4m3 "
                                                r"\(a torch.float8_e4m3fn tensor, or numpy.uint8 holding "
                                                r"float8_e4m3fn's bit patterns: NumPy has no 8-bit float\)"):
            k(x=xv.astype(np.float32))
        with self.assertRaisesRegex(ValueError, r"'x' has dtype uint16; the spec's 'x' is f8e4m3"):
            k(x=x.astype(np.uint16))

    def test_f16_as_numpy_uint16_bits_is_the_same_run(self):
        k = assoc.load("specs/attention.yaml", dims={"d": 16, "dv": 16}).compile("cpu", threads=1)
        r = np.random.default_rng(9)
        q, kk, v = (r.standard_normal(s).astype(np.float16) for s in ((2, 5, 16), (1, 7, 16), (1, 7, 16)))
        ref = k(q=q, k=kk, v=v, scale=0.25)
        bits = k(q=q.view(np.uint16), k=kk.view(np.uint16), v=v.view(np.uint16), scale=0.25)
        np.testing.assert_array_equal(bits["out"], ref["out"])
        np.testing.assert_array_equal(bits["lse"], ref["lse"])


class Statistics(unittest.TestCase):
    def test_welford_on_cpu(self):
        x = np.random.default_rng(4).standard_normal((6, 1000)).astype(np.float32) + 3
        out = assoc.load("specs/welford.yaml").compile("cpu", threads=2)(x=x)
        np.testing.assert_allclose(out["mean"], x.astype(np.float64).mean(1), rtol=1e-5)
        np.testing.assert_allclose(out["var"], x.astype(np.float64).var(1), rtol=1e-4)

    def test_rows_and_len_must_agree(self):
        spec = assoc.load("specs/layer_norm.yaml")
        k = spec.compile("interp")
        self.assertEqual(spec.params, {"eps": "f32"})
        self.assertEqual(k.device, "interp")
        # x is bf16, which NumPy lacks: the shapes alone, as a run checks them
        with self.assertRaisesRegex(ValueError, r"input 'gamma' has len 5, but 'x' has 4"):
            assoc.plan(spec, {"x": (2, 4), "gamma": (5,), "beta": (4,)})
        self.assertEqual(assoc.plan(spec, {"x": (2, 4), "gamma": (4,), "beta": (4,)})[5],
                         {"mean": [2], "rstd": [2], "y": [2, 4]})


class Attention(unittest.TestCase):
    H, G, ROWS, LEN, D = 4, 2, 5, 9, 16

    def inputs(self, seed):
        r = np.random.default_rng(seed)
        q = r.standard_normal((self.H, self.ROWS, self.D)).astype(np.float16)
        k = r.standard_normal((self.G, self.LEN, self.D)).astype(np.float16)
        v = r.standard_normal((self.G, self.LEN, self.D)).astype(np.float16)
        return q, k, v

    def run_on(self, device):
        spec = assoc.load("specs/attention.yaml", dims={"d": self.D, "dv": self.D})
        kern = spec.compile(device=device, threads=2)
        q, k, v = self.inputs(5)
        scale = self.D ** -0.5
        out = kern(q=q, k=k, v=v, scale=scale)  # heads told from the ranks
        self.assertEqual(out["out"].shape, (self.H, self.ROWS, self.D))
        self.assertEqual(out["lse"].shape, (self.H, self.ROWS))
        ref_out, ref_lse = attention_ref(q, k, v, scale)
        # P is rounded to f16 before P.V, as the kernels do
        np.testing.assert_allclose(out["out"], ref_out, rtol=2e-2, atol=2e-3)
        np.testing.assert_allclose(out["lse"], ref_lse, rtol=1e-3, atol=1e-3)
        return kern, q, k, v, scale

    def test_heads_on_cpu(self):
        kern, q, k, v, scale = self.run_on("cpu")
        same = kern(q=q, k=k, v=v, scale=scale, heads=self.H, kv_heads=self.G)
        ref = kern(q=q, k=k, v=v, scale=scale)
        np.testing.assert_array_equal(same["out"], ref["out"])
        with self.assertRaisesRegex(ValueError, r"input 'q' has heads 4, but 'heads=' has 3"):
            kern(q=q, k=k, v=v, scale=scale, heads=3)
        with self.assertRaisesRegex(ValueError, r"heads must be a positive multiple of kv_heads"):
            kern(q=q[:3], k=k, v=v, scale=scale)
        one = kern(q=q[0], k=k[0], v=v[0], scale=scale)  # no head axis: one head
        np.testing.assert_allclose(one["out"], ref["out"][0], rtol=1e-3, atol=1e-4)

    def test_heads_on_emu(self):
        self.run_on("emu")

    def test_emu_runs_keep_no_memory(self):
        # the emulator loads its module for each run and unloads it after;
        # what the module allocated (attention's dynamic shared memory, a
        # megabyte at head dim 64) goes with it
        kern = assoc.load("specs/attention.yaml").compile(device="emu")
        r = np.random.default_rng(2)
        q = r.standard_normal((2, 5, 64)).astype(np.float16)
        k = r.standard_normal((2, 100, 64)).astype(np.float16)

        def resident_mb():
            with open("/proc/self/statm") as f:
                return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20

        for _ in range(3):
            kern(q=q, k=k, v=k, scale=0.125)
        before = resident_mb()
        for _ in range(24):
            kern(q=q, k=k, v=k, scale=0.125)
        self.assertLess(resident_mb() - before, 8, "24 runs kept their memory")


class Paged(unittest.TestCase):
    """A batch over a paged key/value cache: each sequence's result is the
    unpaged run of its own keys, gathered here by hand, its queries at the
    last positions of a whole prefill (the causal mask aligned
    bottom-right)."""
    H, G, D, P = 4, 2, 16, 16

    def test_batch_matches_each_sequence_unpaged(self):
        spec = assoc.load("specs/attention.yaml", dims={"d": self.D, "dv": self.D})
        kern = spec.compile(device="cpu", threads=2)
        r = np.random.default_rng(3)
        lens = np.array([37, 0, 5, 16], np.int32)
        cu = np.array([0, 3, 4, 6, 7], np.int32)
        max_pages, pages = 3, 7
        pool_k = r.standard_normal((pages, self.P, self.G, self.D)).astype(np.float16)
        pool_v = r.standard_normal((pages, self.P, self.G, self.D)).astype(np.float16)
        table = np.full((4, max_pages), -1, np.int32)
        order = iter([6, 2, 4, 0, 5])  # shuffled, page 1 and 3 unread
        for b in range(4):
            for t in range((lens[b] + self.P - 1) // self.P):
                table[b, t] = next(order)
        q = r.standard_normal((int(cu[-1]), self.H, self.D)).astype(np.float16)
        scale = self.D ** -0.5
        out = kern(q=q, k=pool_k, v=pool_v, scale=scale, block_table=table, seq_lens=lens, page_size=self.P,
                   cu_seqlens_q=cu)
        self.assertEqual(out["out"].shape, (int(cu[-1]), self.H, self.D))
        self.assertEqual(out["lse"].shape, (int(cu[-1]), self.H))
        for b in range(4):
            n = int(lens[b])
            if n == 0:
                continue
            slots = [(table[b, j // self.P], j % self.P) for j in range(n)]
            k = np.stack([pool_k[p, s] for p, s in slots], 1)  # [G][len][d]
            v = np.stack([pool_v[p, s] for p, s in slots], 1)
            m = int(cu[b + 1] - cu[b])
            qs = np.zeros((self.H, n, self.D), np.float16)  # [H][len][d]: the sequence's queries last
            qs[:, n - m:] = q[cu[b]:cu[b + 1]].transpose(1, 0, 2)
            one = kern(q=qs, k=np.ascontiguousarray(k), v=np.ascontiguousarray(v), scale=scale)
            # a run of other row counts may take rows side by side as lanes: float32 sums in another order
            np.testing.assert_allclose(out["out"][cu[b]:cu[b + 1]], one["out"][:, n - m:].transpose(1, 0, 2),
                                       rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(out["lse"][cu[b]:cu[b + 1]], one["lse"][:, n - m:].transpose(1, 0),
                                       rtol=1e-5, atol=1e-6)
        bad = table.copy()
        bad[0, 2] = pages
        with self.assertRaisesRegex(ValueError, r"block_table\[0\]\[2\] = 7"):
            kern(q=q, k=pool_k, v=pool_v, scale=scale, block_table=bad, seq_lens=lens, page_size=self.P,
                 cu_seqlens_q=cu)
        with self.assertRaisesRegex(ValueError, r"pages hold 16 keys, but page_size is 32"):
            kern(q=q, k=pool_k, v=pool_v, scale=scale, block_table=table, seq_lens=lens, page_size=32,
                 cu_seqlens_q=cu)
        with self.assertRaisesRegex(ValueError, r"cu_seqlens_q of shape \(4,\): a 1-dimensional int32 array of shape \[5\]"):
            kern(q=q, k=pool_k, v=pool_v, scale=scale, block_table=table, seq_lens=lens, page_size=self.P,
                 cu_seqlens_q=cu[:4])
        with self.assertRaisesRegex(ValueError, r"block_table of shape \(3, 3\): a 2-dimensional int32 array of "
                                                r"shape \[4\]\[any\]"):
            kern(q=q, k=pool_k, v=pool_v, scale=scale, block_table=table[:3], seq_lens=lens, page_size=self.P,
                 cu_seqlens_q=cu)
        # what was given is said beside what is taken
        with self.assertRaisesRegex(ValueError, r"^seq_lens is ndarray of dtype int64 and shape \(4,\): a "
                                                r"1-dimensional numpy.int32 array"):
            kern(q=q, k=pool_k, v=pool_v, scale=scale, block_table=table, seq_lens=lens.astype(np.int64),
                 page_size=self.P, cu_seqlens_q=cu)
        with self.assertRaisesRegex(ValueError, r"^block_table is a list: a 2-dimensional numpy.int32 array"):
            kern(q=q, k=pool_k, v=pool_v, scale=scale, block_table=table.tolist(), seq_lens=lens,
                 page_size=self.P, cu_seqlens_q=cu)
        # heads and kv_heads, where given, are the shapes' (not ignored), page_size an int, named where
        # it is not; max_seqlen_q a NumPy integer as well
        with self.assertRaisesRegex(ValueError, r"heads=7, but input 'q' \[rows\]\[heads\] has %d" % q.shape[1]):
            kern(q=q, k=pool_k, v=pool_v, scale=scale, block_table=table, seq_lens=lens, page_size=self.P,
                 cu_seqlens_q=cu, heads=7)
        with self.assertRaisesRegex(ValueError, r"kv_heads=%d, but the pool \[pages\]\[page_size\]\[kv_heads\] "
                                                r"has %d" % (self.G + 1, self.G)):
            kern(q=q, k=pool_k, v=pool_v, scale=scale, block_table=table, seq_lens=lens, page_size=self.P,
                 cu_seqlens_q=cu, kv_heads=self.G + 1)
        for bad in (16.0, "16"):
            with self.assertRaisesRegex(TypeError, r"page_size must be an int, not %s" % re.escape(repr(bad))):
                kern(q=q, k=pool_k, v=pool_v, scale=scale, block_table=table, seq_lens=lens, page_size=bad,
                     cu_seqlens_q=cu)
        again = kern(q=q, k=pool_k, v=pool_v, scale=scale, block_table=table, seq_lens=lens, page_size=self.P,
                     cu_seqlens_q=cu, max_seqlen_q=np.diff(cu).max(), heads=q.shape[1], kv_heads=np.int64(self.G))
        np.testing.assert_array_equal(again["out"], out["out"])
        # a max_seqlen_q short of a sequence's queries, which would plan a device's launch short of
        # them, is caught on host arrays, where the offsets are in hand
        most = int(np.diff(cu).max())
        with self.assertRaisesRegex(ValueError, r"max_seqlen_q is %d, but sequence %d has %d queries" % (
                most - 1, int(np.diff(cu).argmax()), most)):
            kern(q=q, k=pool_k, v=pool_v, scale=scale, block_table=table, seq_lens=lens, page_size=self.P,
                 cu_seqlens_q=cu, max_seqlen_q=most - 1)

    def test_bf16_batch_as_numpy_uint16_bits(self):
        # the bf16 carrier, paged, on bits: each sequence as its unpaged run on the same bits
        spec = assoc.load("tests/attention/causal_bf16.yaml", dims={"d": self.D, "dv": self.D})
        r = np.random.default_rng(6)
        lens = np.array([20, 3], np.int32)
        table = np.array([[1, 2], [0, -1]], np.int32)
        pool_k = bf16_bits(r.standard_normal((3, self.P, self.G, self.D)))
        pool_v = bf16_bits(r.standard_normal((3, self.P, self.G, self.D)))
        q = bf16_bits(r.standard_normal((2, self.H, self.D)))
        for device in ("interp", "cpu"):
            kern = spec.compile(device=device, threads=2)
            out = kern(q=q, k=pool_k, v=pool_v, scale=0.25, block_table=table, seq_lens=lens, page_size=self.P)
            self.assertEqual(out["out"].dtype, np.float32)
            self.assertEqual(out["out"].shape, (2, self.H, self.D))
            for b in range(2):
                n = int(lens[b])
                slots = [(table[b, j // self.P], j % self.P) for j in range(n)]
                k = np.ascontiguousarray(np.stack([pool_k[p, s] for p, s in slots], 1))  # [G][len][d]
                v = np.ascontiguousarray(np.stack([pool_v[p, s] for p, s in slots], 1))
                qs = np.zeros((self.H, n, self.D), np.uint16)
                qs[:, n - 1] = q[b]
                one = kern(q=qs, k=k, v=v, scale=0.25)
                np.testing.assert_allclose(out["out"][b], one["out"][:, n - 1], rtol=1e-5, atol=1e-6,
                                           err_msg="%s sequence %d" % (device, b))
                np.testing.assert_allclose(out["lse"][b], one["lse"][:, n - 1], rtol=1e-5, atol=1e-6)
                ref_out, ref_lse = attention_ref(bf16_values(qs), bf16_values(k), bf16_values(v), 0.25)
                np.testing.assert_allclose(out["out"][b], ref_out[:, n - 1], rtol=2e-2, atol=1e-2)
                np.testing.assert_allclose(out["lse"][b], ref_lse[:, n - 1], rtol=1e-3, atol=1e-3)


class Wording(unittest.TestCase):
    """Errors in the caller's terms: the array or param that is wrong, as
    Python passes it."""

    SCALE = """carrier: colscale
params: {n: i32, on: bool}
element: {x: f32}
column: {gamma: f32}
state: {s: f32}
identity: {s: 0}
lift:
  s: where(on, x * gamma * n, x)
merge: {s: a.s + b.s}
finalize: {t: s}
reference:
  t: sum(where(on, x * gamma * n, x))
laws: [commutative]
"""

    @classmethod
    def setUpClass(cls):
        cls.k = assoc.loads(cls.SCALE).compile("interp")
        cls.x, cls.g = np.ones((2, 5), np.float32), np.ones(5, np.float32)

    def test_the_array_with_an_extra_axis_is_named(self):
        with self.assertRaisesRegex(ValueError, r"input 'gamma' has shape \(1, 5\), 2 axes: a column input of width 1 "
                                                r"is \[len\], or \[kv_heads\]\[len\] with a leading head axis; but "
                                                r"input 'x' has shape \(2, 5\), \[rows\]\[len\] without one"):
            self.k(x=self.x, gamma=self.g.reshape(1, 5), n=2, on=True)

    def test_params_are_held_to_their_type_in_python_terms(self):
        out = self.k(x=self.x, gamma=self.g, n=2, on=True)
        np.testing.assert_allclose(out["t"], [10, 10])
        for bad in (2.5, 1e10, float("nan")):
            with self.assertRaisesRegex(ValueError, r"param 'n' = %s is not an integer in range \('n' of colscale is "
                                                    r"i32: a whole number from -2147483648 to 2147483647\)"
                                        % re.escape(repr(bad))):
                self.k(x=self.x, gamma=self.g, n=bad, on=True)
        wide = assoc.loads("carrier: p64\nparams: {n: i64}\nelement: {x: i64}\nstate: {s: i64}\nidentity: {s: 0}\n"
                           "lift: {s: x + n}\nmerge: {s: a.s + b.s}\nlaws: [commutative]\n").compile("interp")
        ones = np.ones((1, 3), np.int64)
        for bad, near in ((2**53 + 1, 2**53), (2**63 - 1, 2**63)):  # another integer as a double
            with self.assertRaisesRegex(ValueError, r"param 'n' = %d is an i64 past 2\^53, which params \(doubles\) "
                                                    r"hold only rounded \(to %d\)" % (bad, near)):
                wide(x=ones, n=bad)
        self.assertEqual(int(wide(x=ones, n=2**53 + 2)["s"][0]), 3 * (2**53 + 3))
        for bad in ("False", 2, 0.5, None):
            with self.assertRaisesRegex(ValueError, r"param 'on' of colscale is a bool: True, False, 0 or 1, not %s"
                                        % re.escape(repr(bad))):
                self.k(x=self.x, gamma=self.g, n=2, on=bad)
        out = self.k(x=self.x, gamma=self.g, n=2, on=0)
        np.testing.assert_allclose(out["t"], [5, 5])
        with self.assertRaisesRegex(ValueError, r"param 'n' of colscale takes a number, not 'two'"):
            self.k(x=self.x, gamma=self.g, n="two", on=True)

    def test_names_that_are_keywords_of_the_call_are_refused_at_compile(self):
        for name in assoc.CALL_KEYWORDS:
            spec = assoc.loads(self.SCALE.replace("gamma", name))
            if name == "self":  # the method's own argument
                with self.assertRaisesRegex(ValueError, r"colscale: 'self' is the name of the kernel's own argument "
                                                        r"in its call, so it could not be passed: rename it"):
                    spec.compile("interp")
                continue
            with self.assertRaisesRegex(ValueError, r"colscale: '%s' is the name of a keyword of the kernel's call "
                                                    r"\(heads=, kv_heads=, .*\), so it could not be passed: rename "
                                                    r"it in the spec" % name):
                spec.compile("interp")
        spec = assoc.loads(self.SCALE.replace("n: i32", "heads: i32").replace("* n", "* heads"))
        with self.assertRaisesRegex(ValueError, r"'heads' is the name of a keyword"):
            spec.compile("interp")


if __name__ == "__main__":
    unittest.main()
