"""assoc from Python: load a carrier spec, check its laws, compile it for
a device and run it on NumPy arrays, PyTorch tensors (CPU or CUDA) or
CuPy arrays.

    spec = assoc.load("specs/online_softmax.yaml")
    k = spec.compile(device="cpu")
    out = k(x=x)          # {"lse": ..., "y": ...}

A pure-Python layer over libassoc.so (compiler/lib/assoc.h) through
ctypes; the library is loaded on first use (see assoc._lib.candidates).
"""
import ctypes
import math
import numbers
import os
import threading
from collections import namedtuple
from collections.abc import Mapping

from . import _arrays, _lib
from ._arrays import register_cuda_array
from .errors import CompileError, DeviceError, Error, LawError, LibraryError, RunError, SpecError

__all__ = ["load", "loads", "Spec", "Kernel", "Report", "ArrayInfo", "Error", "LibraryError", "SpecError",
           "LawError", "DeviceError", "CompileError", "RunError", "library_path", "register_cuda_array"]

ArrayInfo = namedtuple("ArrayInfo", "name role type width is_output")
ArrayInfo.__doc__ = ("An input or output of a spec: role is 'element', 'column', 'row', 'finalize' or 'map'; "
                     "type the storage type ('f32', 'f16', 'bf16', 'f8e4m3', 'f64', 'i32', 'i64', 'bool'); "
                     "width the components of each element (1 for a scalar).")


def library_path():
    """The path of the libassoc.so in use (loading it if need be)."""
    return _lib.lib().path


def _dims(dims):
    if dims is not None and not isinstance(dims, Mapping):
        raise TypeError("dims must be a dict of the dims' names to ints ({'d': 128}), not %s" % type(dims).__name__)
    for name, value in (dims or {}).items():
        if not isinstance(name, str):
            raise TypeError("dims: the name of a dim is a str, not %r" % (name,))
        # float() would read "8" as 8 and say nothing of which dim None was
        if isinstance(value, (bool, str, bytes)) or not isinstance(value, numbers.Real):
            raise TypeError("dim '%s' takes an int, not %r" % (name, value))
    return _lib.values(sorted((dims or {}).items()), "dims: a dim's name")


def load(path, dims=None):
    """The spec at path, with dims overriding the spec's (`-D d=128`);
    SpecError with the library's diagnostic when it does not load."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError("path must be a str or os.PathLike, not %r" % (path,))
    vals, n, keep = _dims(dims)
    h = ctypes.c_void_p()
    st = _lib.lib().assoc_spec_load(ctypes.byref(h), _lib.cstr(os.fsencode(path), "path"), vals, n)
    return Spec._made(h, st, keep)


def loads(text, dims=None):
    """The spec written in text, a str or bytes (its diagnostics name the
    file "spec")."""
    if not isinstance(text, (str, bytes, bytearray)):
        # bytes() of an int is that many NULs, of a path its name, of a list its numbers as characters
        raise TypeError("text must be a str or bytes, the spec's text, not %s%s" % (
            type(text).__name__, ": assoc.load(path) reads a spec's file" if isinstance(text, os.PathLike) or
            hasattr(text, "read") else ""))
    data = _lib.cstr(text, "spec text")
    vals, n, keep = _dims(dims)
    h = ctypes.c_void_p()
    st = _lib.lib().assoc_spec_load_text(ctypes.byref(h), data, len(data), vals, n)
    return Spec._made(h, st, keep)


# the keywords of Kernel.__call__ besides the inputs and params: a spec's
# name among them would be taken by the call (self too: the method's own)
CALL_KEYWORDS = ("heads", "kv_heads", "block_table", "seq_lens", "page_size", "cu_seqlens_q", "max_seqlen_q", "self")


class Report:
    """The verdict of Spec.check: ok, text (the line that says which law
    or reference fails, or what holds: the laws proved, those only the
    trials hold, and the reference, or that there is none, with a clause
    for each warning), and warnings (each warning of a verdict that holds
    as `assoc check` prints it, "float32 accuracy: ...", with its
    witness's detail; empty where there is none)."""

    def __init__(self, ok, text, warnings=()):
        self.ok, self.text, self.warnings = ok, text, list(warnings)

    def __bool__(self):
        return self.ok

    def __repr__(self):
        return "Report(ok=%r, text=%r, warnings=%r)" % (self.ok, self.text, self.warnings)


class _Handle:
    """An object holding one C handle, freed when it is collected: a copy
    would hold the same handle, and the first of the two collected would
    free it under the other, so a copy is the object itself (a Kernel's
    lock lets threads share it); pickling says what to do instead."""

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        raise TypeError(self._no_pickle)


class Spec(_Handle):
    """A loaded carrier spec: its name, arrays and params."""

    def __init__(self):
        raise TypeError("specs come from assoc.load() or assoc.loads()")

    @classmethod
    def _made(cls, h, st, keep):
        L = _lib.lib()
        if st != _lib.OK:
            msg = _lib.text(L.assoc_spec_error(h)) if h.value else None
            L.assoc_spec_free(h)
            if st == _lib.ESPEC:
                raise SpecError(msg or _lib.strerror(st))
            if st == _lib.ENOMEM:
                raise MemoryError("assoc: out of memory loading the spec")
            raise ValueError("assoc: %s%s" % (_lib.strerror(st), ": " + msg if msg else ""))
        self = object.__new__(cls)
        self._h, self._L = h, L
        self._lock = threading.Lock()  # a handle is used by one thread at a time (assoc.h)
        self.name = _lib.text(L.assoc_spec_name(h))
        self.arrays = []
        info = _lib.AssocArray()
        for i in range(L.assoc_array_count(h)):
            L.assoc_array_info(h, i, ctypes.byref(info))
            self.arrays.append(ArrayInfo(_lib.text(info.name), _lib.ROLES[info.role], _lib.text(info.type),
                                         info.width, bool(info.is_output)))
        self._inputs = [a for a in self.arrays if not a.is_output]
        self._outputs = [a for a in self.arrays if a.is_output]
        count = _lib.optional("assoc_param_count")
        if count is not None:
            self.params = {_lib.text(L.assoc_param_name(h, i)): _lib.text(L.assoc_param_type(h, i))
                           for i in range(count(h))}
        else:
            self.params = None  # an older library: the run checks the names
        # a finalize output per position (a scan) or per row
        self._per_pos = {a.name: a.role == "map" or (a.role == "finalize" and L.assoc_array_bytes(h, i, 1, 2) ==
                                                     2 * L.assoc_array_bytes(h, i, 1, 1))
                         for i, a in enumerate(self.arrays)}
        return self

    @property
    def inputs(self):
        """The arrays a run reads, in the library's order (element, column, row)."""
        return self._inputs

    @property
    def outputs(self):
        """The arrays a run returns (finalize, then map outputs)."""
        return self._outputs

    def __repr__(self):
        return "<assoc.Spec %s: inputs %s, outputs %s>" % (
            self.name, ", ".join(a.name for a in self.inputs), ", ".join(a.name for a in self.outputs))

    def __del__(self):
        h = getattr(self, "_h", None)
        if h is not None and h.value:
            self._L.assoc_spec_free(h)
            self._h = None

    _no_pickle = ("an assoc.Spec cannot be pickled: it is a handle to a spec loaded in this process; load it "
                  "again with assoc.load() or assoc.loads() where it is needed")

    def check(self, trials=0, seed=1):
        """The verdict `assoc check` reaches (trials: randomized trials of
        each law, 0 for check's 20000).  A failed law is a Report with ok
        False, not an exception.  The verdict stands for compile(): a spec
        that fails here is refused at every param value, even one whose
        laws a run alone would judge at the values it is given."""
        trials = _c_int("trials", trials)
        if trials < 0:
            raise ValueError("trials must be 0 (the default) or more, got %d" % trials)
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
            raise TypeError("seed must be an int, not %r" % (seed,))
        if not 0 <= seed < 2**64:  # the library's uint64_t, which would take -1 as 2^64 - 1 unsaid
            raise ValueError("seed %d is out of range (0 to 2^64 - 1)" % seed)
        line = _lib.optional("assoc_spec_verdict")
        warned = _lib.optional("assoc_spec_warnings")
        with self._lock:
            st = self._L.assoc_spec_check(self._h, int(trials), int(seed))
            why = _lib.text(self._L.assoc_spec_error(self._h))
            said = _lib.text(line(self._h)) if line is not None else None
            warnings = _lib.text(warned(self._h)) if warned is not None else ""
        if st == _lib.OK:
            # an older library says only that nothing failed
            return Report(True, said or "%s: ok (no law and no reference failed)" % self.name,
                          warnings.splitlines())
        if st == _lib.ELAWS:
            # the verdict's line, as for one that holds: "NAME: FAILED (why)"
            return Report(False, said or why)
        raise Error("assoc check: %s: %s" % (_lib.strerror(st), why))

    def trust_merge(self, trust=True):
        """Compile whatever the verdict (the command line's --trust-merge)."""
        with self._lock:
            self._L.assoc_spec_trust_merge(self._h, 1 if trust else 0)
        return self

    def compile(self, device="cpu", threads=0):
        """A Kernel for device ("cpu", "gpu", "emu", "interp" or "auto");
        threads (cpu): 0 for every core the process may use.  LawError for
        a carrier whose verdict fails, DeviceError for a device not usable
        here, CompileError when code generation fails."""
        clash = [n for n in [a.name for a in self.inputs] + list(self.params or ()) if n in CALL_KEYWORDS]
        if clash:
            raise ValueError("%s: '%s' is the name of %s, so it could not be passed: rename it in the spec" % (
                self.name, clash[0], "the kernel's own argument in its call" if clash[0] == "self" else
                "a keyword of the kernel's call (%s)" % ", ".join(k + "=" for k in CALL_KEYWORDS if k != "self")))
        threads = _c_int("threads", threads)
        if not isinstance(device, str):
            raise TypeError("device must be a str (\"cpu\", \"gpu\", \"emu\", \"interp\" or \"auto\"), not %r"
                            % (device,))
        h = ctypes.c_void_p()
        with self._lock:
            st = self._L.assoc_compile(self._h, _lib.cstr(device, "device"), threads, ctypes.byref(h))
        if st != _lib.OK:
            why = _lib.text(self._L.assoc_kernel_error(h)) if h.value else _lib.strerror(st)
            self._L.assoc_kernel_free(h)
            exc = {_lib.ELAWS: LawError, _lib.EDEVICE: DeviceError, _lib.ECOMPILE: CompileError,
                   _lib.EINVAL: ValueError, _lib.ENOMEM: MemoryError}.get(st, Error)
            raise exc(why)
        return Kernel(self, h, str(device))


_INT_RANGE = {"i32": (-2**31, 2**31 - 1), "i64": (-2**63, 2**63 - 1)}


def _c_int(name, value):
    """value as the C int an argument of the library takes: an int in its
    range, since ctypes would cut 2**40 to 0 and int() 2.7 to 2 without a word."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError("%s must be an int, not %r" % (name, value))
    lo, hi = _INT_RANGE["i32"]
    if not lo <= value <= hi:
        raise ValueError("%s = %d is out of range (a C int, %d to %d)" % (name, value, lo, hi))
    return int(value)


_FLOAT_PARAMS = ("f32", "f64", "f16", "bf16")


def _param_tensor(spec, key, value, t):
    """A param given as a torch tensor: 0-d, of a floating dtype for a
    float param (an integer or bool one for the others), on the CPU or a
    CUDA device (the inputs', which the run checks), and not requiring
    grad while grad mode is on; ValueError naming it otherwise."""
    import torch
    if value.ndim != 0:
        raise ValueError("param '%s' of %s is a tensor of shape %s: a param is a number or a 0-d tensor" % (
            key, spec.name, tuple(value.shape)))
    floating = value.is_floating_point()
    if value.is_complex() or (t in _FLOAT_PARAMS and not floating) or (t not in _FLOAT_PARAMS and t and floating):
        raise ValueError("param '%s' of %s is a tensor of dtype %s; the param is %s: a 0-d tensor of %s dtype" % (
            key, spec.name, value.dtype, t, "a floating" if t in _FLOAT_PARAMS else "an integer or bool"))
    if value.device.type not in ("cpu", "cuda"):
        raise ValueError("param '%s' of %s is a tensor on %s: a param tensor lies on the CPU or the inputs' "
                         "device" % (key, spec.name, value.device))
    if value.requires_grad and torch.is_grad_enabled():
        raise ValueError("param '%s' requires grad, and assoc's kernels have no backward: run under "
                         "torch.no_grad() or torch.inference_mode(), or pass %s.detach()" % (key, key))
    return value.item()


def _param_devices(spec, kw, first):
    """ValueError for a param given as a CUDA tensor on another device
    than the inputs' (a CPU tensor goes with any inputs)."""
    for key, value in kw.items():
        if key in (spec.params or ()) and _arrays._is_torch(value) and value.device.type == "cuda":
            if first[1].kind != "torch" or first[1].device != ("cuda", value.device.index):
                raise ValueError("param '%s' is a tensor on %s, but input '%s' is %s: a param tensor lies on the "
                                 "CPU or the inputs' device" % (key, value.device, first[0], first[1].where()))


def _param_value(spec, key, value):
    """The number a param is passed as, held to the param's type."""
    t = spec.params.get(key) if spec.params else None
    if _arrays.torch_loaded() and _arrays._is_torch(value):
        value = _param_tensor(spec, key, value, t)
    v = None
    if not isinstance(value, (str, bytes)):
        try:
            v = float(value)
        except (TypeError, ValueError):
            pass
    if t == "bool":
        if v not in (0.0, 1.0):  # a string 'False' is true to Python: no strings
            raise ValueError("param '%s' of %s is a bool: True, False, 0 or 1, not %r" % (key, spec.name, value))
        return v
    if v is None:  # a string too: float() would read "0.5", which is no number
        raise ValueError("param '%s' of %s takes a number, not %r" % (key, spec.name, value))
    if t in _INT_RANGE:
        lo, hi = _INT_RANGE[t]
        if isinstance(value, numbers.Integral) and lo <= int(value) <= hi and int(value) != int(v):
            # params reach the library as doubles: past 2^53 another integer than the one given
            raise ValueError("param '%s' = %d is an i64 past 2^53, which params (doubles) hold only rounded (to %d)"
                             % (key, int(value), int(v)))
        if not (math.isfinite(v) and v == int(v) and lo <= v <= hi):
            raise ValueError("param '%s' = %r is not an integer in range ('%s' of %s is %s: a whole number from %d "
                             "to %d)" % (key, value, key, spec.name, t, lo, hi))
    elif not math.isfinite(v):
        # refused here, before the laws are judged at it: a LawError would blame the spec for the value
        raise ValueError("param '%s' of %s is %r: a param is a finite number" % (key, spec.name, v))
    return v


def _base_shape(spec, a, rows, length):
    """The shape of one head of array a, its width axis dropped when 1."""
    if a.role == "column":
        s = [length]
    elif a.role == "row" or (a.role == "finalize" and not spec._per_pos[a.name]):
        s = [rows]
    else:
        s = [rows, length]
    return s + ([a.width] if a.width > 1 else [])


def _article(word):
    return "an" if word[:1] in "aeiou" else "a"


def _base_rank(spec, a):
    return len(_base_shape(spec, a, 0, 0))


def plan(spec, shapes, heads=None, kv_heads=None):
    """(heads, kv_heads, rows, len, with_heads, {output: shape}) from the
    inputs' shapes (a dict name -> shape), checked to agree; ValueError
    naming the input that does not."""
    ins = spec.inputs
    for name, n in (("heads", heads), ("kv_heads", kv_heads)):
        if n is not None and (isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1):
            raise ValueError("%s=%r: the number of %s, a positive integer" % (
                name, n, "query heads" if name == "heads" else "key/value heads"))
    with_heads = heads is not None or kv_heads is not None
    headed_by = None  # the first input with a head axis, where heads= and kv_heads= say nothing
    for a in ins:
        r = len(shapes[a.name])
        if r == _base_rank(spec, a) + 1:
            headed_by = headed_by or (None if with_heads else a)
            with_heads = True
        elif r != _base_rank(spec, a):
            raise ValueError("input '%s' has %d axes; %s %s input of width %d has %s" % (
                a.name, r, _article(a.role), a.role, a.width, _axes_text(spec, a)))
    H, G, rows, length = heads, kv_heads, None, None
    seen = {}

    def agree(what, value, name):
        prev = seen.get(what)
        if prev is None:
            seen[what] = (value, name)
        elif prev[0] != value:
            raise ValueError("input '%s' has %s %d, but '%s' has %d" % (name, what, value, prev[1], prev[0]))

    if heads is not None:
        seen["heads"] = (int(heads), "heads=")
    if kv_heads is not None:
        seen["kv_heads"] = (int(kv_heads), "kv_heads=")
    for a in ins:
        s = list(shapes[a.name])
        if len(s) != _base_rank(spec, a) + with_heads and headed_by is not None:
            # which of the two is wrong the shapes cannot say: the one with the extra axis is named first
            b = headed_by
            raise ValueError("input '%s' has shape %s, %d axes: %s %s input of width %d is %s, or %s with a leading "
                             "head axis; but input '%s' has shape %s, %s without one (every input has its head "
                             "axis, or none)" % (
                                 b.name, tuple(shapes[b.name]), len(shapes[b.name]), _article(b.role), b.role,
                                 b.width, _axes_text(spec, b), _axes_text(spec, b, True), a.name,
                                 tuple(shapes[a.name]), _axes_text(spec, a)))
        if len(s) != _base_rank(spec, a) + with_heads:
            raise ValueError("input '%s' has %d axes; with heads %s %s input of width %d has %s" % (
                a.name, len(s), _article(a.role), a.role, a.width, _axes_text(spec, a, True)))
        if with_heads:
            agree("kv_heads" if a.role == "column" else "heads", s.pop(0), a.name)
        if a.width > 1 and s[-1] != a.width:
            raise ValueError("input '%s' has %d components per element; the spec's '%s' has %d" % (
                a.name, s[-1], a.name, a.width))
        if a.role == "column":
            agree("len", s[0], a.name)
        elif a.role == "row":
            agree("rows", s[0], a.name)
        else:
            agree("rows", s[0], a.name)
            agree("len", s[1], a.name)
    if "rows" not in seen or "len" not in seen:
        raise ValueError("the shape of %s cannot be told from the inputs" %
                         ("rows" if "rows" not in seen else "len"))
    for what in ("heads", "kv_heads"):
        if what in seen and seen[what][0] < 1:
            # said of the input, not as "0 heads on 1 key/value heads" of a carrier that may have none
            raise ValueError("input '%s' has %s 0 (its leading axis): a head axis holds 1 or more; a run of no rows "
                             "takes rows 0 instead" % (seen[what][1], what))
    rows, length = seen["rows"][0], seen["len"][0]
    H = seen["heads"][0] if "heads" in seen else 1
    G = seen["kv_heads"][0] if "kv_heads" in seen else (H if any(a.role == "column" for a in ins) else 1)
    if "heads" not in seen and "kv_heads" in seen:
        H = G
    if H < 1 or G < 1 or H % G:
        raise ValueError("%d heads on %d key/value heads: heads must be a positive multiple of kv_heads" % (H, G))
    outs = {a.name: ([H] if with_heads else []) + _base_shape(spec, a, rows, length) for a in spec.outputs}
    return H, G, rows, length, with_heads, outs


def _axes_text(spec, a, heads=False):
    names = {"column": ["len"], "row": ["rows"]}.get(a.role, ["rows", "len"])
    if a.width > 1:
        names = names + [str(a.width)]
    if heads:
        names = ["kv_heads" if a.role == "column" else "heads"] + names
    return "[" + "][".join(names) + "]"


class Kernel(_Handle):
    """A spec compiled for a device; call it with the inputs (and params)
    as keyword arguments, get a dict of the outputs."""

    def __init__(self, spec, h, device):
        self.spec, self._h, self._L = spec, h, spec._L
        got = _lib.optional("assoc_kernel_device")
        self.device = _lib.text(got(h)) if got is not None else (device if device != "auto" else None)
        # what every call needs, made once: the buffers' names, element sizes, plans by shape
        arrays = spec.arrays
        self._names = [a.name.encode() for a in arrays]
        self._by_name = {a.name: a for a in arrays}
        self._by_index = [a.name for a in arrays]
        self._itemsize = [_ITEMSIZE[a.type] for a in arrays]
        self._bufs_type = _lib.AssocBuffer * len(arrays)
        self._plans = {}
        self._lock = threading.Lock()  # a run at a time: the handle keeps the last error

    def __del__(self):
        h = getattr(self, "_h", None)
        if h is not None and h.value:
            self._L.assoc_kernel_free(h)
            self._h = None

    _no_pickle = ("an assoc.Kernel cannot be pickled: its code is compiled into this process; load the spec "
                  "and compile it again where it is needed (assoc.load(path).compile(device))")

    def __repr__(self):
        return "<assoc.Kernel %s on %s>" % (self.spec.name, self.device)

    def _split(self, kw):
        spec = self.spec
        names = self._by_name
        arrays, params = {}, []
        for key, value in kw.items():
            a = names.get(key)
            if a is not None and a.is_output:
                raise ValueError("'%s' is an output of %s: outputs are returned, not passed" % (key, spec.name))
            if a is not None:
                arrays[key] = value
            elif spec.params is None or key in spec.params:
                params.append((key, _param_value(spec, key, value)))
            else:
                raise ValueError("%s has no input or param '%s' (inputs: %s; params: %s)" % (
                    spec.name, key, ", ".join(a.name for a in spec.inputs) or "none",
                    ", ".join(spec.params) or "none"))
        missing = [a.name for a in spec.inputs if a.name not in arrays]
        if missing:
            raise ValueError("%s needs the input%s %s" % (spec.name, "s" if len(missing) > 1 else "",
                                                          ", ".join("'%s'" % m for m in missing)))
        if spec.params is not None:
            given = {n for n, _ in params}
            missing = [p for p in spec.params if p not in given]
            if missing:
                raise ValueError("%s needs the param%s %s" % (spec.name, "s" if len(missing) > 1 else "",
                                                              ", ".join("'%s'" % m for m in missing)))
        return arrays, params

    def __call__(self, *args, heads=None, kv_heads=None, block_table=None, seq_lens=None, page_size=None,
                 cu_seqlens_q=None, max_seqlen_q=None, **kw):
        """Run on the inputs given by name, params by name (eps=1e-5);
        heads/kv_heads for arrays with a leading head axis (told from the
        arrays' ranks where not given).  Returns {output: array} in the
        inputs' library and device.  With page_size, block_table and
        seq_lens (and cu_seqlens_q where sequences have their own numbers
        of queries): a batch over a paged key/value cache, see paged().
        An f16 or bf16 input also takes a NumPy uint16 array, read as the
        type's 16-bit patterns (NumPy has no bfloat16), and an f8e4m3
        input a uint8 array of its 8-bit ones (or a torch.float8_e4m3fn
        tensor), as the C API and the CLI's .npy files take them; a bf16
        output of NumPy inputs is then uint16 too."""
        if args:
            # taken positionally, an array would land in heads= (or block_table=) and be refused for
            # what it is not
            raise TypeError("%s takes its inputs and params by name, not %d positional argument%s: call it as "
                            "kernel(%s)" % (self.spec.name, len(args), "s" if len(args) > 1 else "",
                                            ", ".join("%s=..." % n for n in [a.name for a in self.spec.inputs] +
                                                      list(self.spec.params or ()))))
        paged = (page_size is not None or block_table is not None or seq_lens is not None or
                 cu_seqlens_q is not None or max_seqlen_q is not None)
        if _arrays.torch_loaded() and _compiling():
            # torch.compile traces this call: ctypes cannot be traced, the op
            # registered for the kernel can
            if paged:
                raise RuntimeError("%s: a paged call cannot be traced by torch.compile; call it outside the compiled "
                                   "function" % self.spec.name)
            from . import torch as _torch_ops
            return _torch_ops.traced_call(self, heads, kv_heads, kw)
        if paged:
            return self.paged(block_table, seq_lens, page_size, cu_seqlens_q, max_seqlen_q, heads=heads,
                              kv_heads=kv_heads, **kw)
        return self._run(heads, kv_heads, kw, False)

    def _run(self, heads, kv_heads, kw, in_op):
        """__call__ on host or device arrays; in_op: called by an operator
        that assoc.torch registered, where torch's dispatcher answers for
        autograd, so inputs that require grad are its business."""
        spec = self.spec
        arrays, params = self._split(kw)
        views, first = _input_views(spec, arrays)
        _param_devices(spec, kw, first)
        if not in_op:
            _refuse_grad(views)
        key = (tuple(v.shape for v in views.values()), heads, kv_heads)
        planned = self._plans.get(key)
        if planned is None:
            planned = self._plan(key, views, heads, kv_heads)
        H, G, rows, length, outputs, bufs = planned
        kind, device = first[1].kind, first[1].device
        if device is not None and self.device != "gpu":
            raise ValueError("input '%s' is %s: device arrays need a kernel compiled for \"gpu\" (this one runs "
                             "on %s)" % (first[0], first[1].where(), self.device))
        if device is not None:
            run_device = _lib.optional("assoc_run_device")
            if run_device is None:
                raise RunError("this libassoc (%s) has no assoc_run_device: CUDA arrays need a newer build; pass "
                               "host arrays (the \"gpu\" kernel copies them)" % _lib.lib().path)
        ptrs = [None] * len(spec.arrays)
        for i, name in enumerate(self._by_index):
            v = views.get(name)
            if v is not None:
                ptrs[i] = v.ptr or None
        outs = {}
        for i, name, shape, type_ in outputs:
            outs[name], ptr = _arrays.allocate(first[1], shape, type_, name)
            ptrs[i] = ptr or None
        pv, np_, keep_p = _lib.values(params, "a param's name")
        stream = _arrays.cuda_stream(first[1]) if device is not None else None
        # the plan's buffer table is shared by the kernel's calls: its pointers are written under the lock
        with self._lock:
            for i, ptr in enumerate(ptrs):
                bufs[i].data = ptr
            if device is None:
                st = self._L.assoc_run_heads(self._h, H, G, rows, length, bufs, len(spec.arrays), pv, np_)
            else:
                st = run_device(self._h, H, G, rows, length, bufs, len(spec.arrays), pv, np_, stream)
            why = _lib.text(self._L.assoc_kernel_error(self._h)) if st else None
        if st != _lib.OK:
            exc = {_lib.EINVAL: ValueError, _lib.ESIZE: ValueError, _lib.ENOMEM: MemoryError,
                   _lib.EDEVICE: DeviceError, _lib.ECOMPILE: CompileError, _lib.ELAWS: LawError}.get(st, RunError)
            raise exc("%s: %s" % (spec.name, why))
        return outs

    def _plan(self, key, views, heads, kv_heads):
        """What every call on inputs of these shapes shares: the heads, rows
        and length, the outputs (index, name, shape, type) and a table of
        the buffers with their names and sizes (their pointers are each
        call's)."""
        spec = self.spec
        H, G, rows, length, with_heads, shapes = plan(spec, {n: v.shape for n, v in views.items()}, heads,
                                                      kv_heads)
        bufs = self._bufs_type()
        outputs = []
        for i, a in enumerate(spec.arrays):
            shape = shapes[a.name] if a.is_output else views[a.name].shape
            if a.is_output:
                outputs.append((i, a.name, shape, a.type))
            n = self._itemsize[i]
            for d in shape:
                n *= d
            bufs[i].name, bufs[i].bytes = self._names[i], n
        planned = H, G, rows, length, outputs, bufs
        if len(self._plans) > 64:
            self._plans.clear()
        self._plans[key] = planned
        return planned

    def paged(self, block_table, seq_lens, page_size, cu_seqlens_q=None, max_seqlen_q=None, heads=None,
              kv_heads=None, **kw):
        """A batch of sequences over a paged key/value cache
        (assoc_run_paged): column inputs (k, v) are the pool
        [pages][page_size][kv_heads][d], block_table [batch][max_pages] and
        seq_lens [batch] int32 say where each sequence's keys lie and how
        many it has, cu_seqlens_q [batch + 1] int32 its queries (else as
        many each); row inputs (q) and the outputs are [rows][heads][...],
        sequence after sequence.  A sequence's queries are its last
        positions (the causal mask aligned bottom-right).  On NumPy arrays
        or torch CPU tensors (the layout arrays int32 of either; outputs in
        the inputs' library); or, for a kernel compiled for "gpu", on CUDA arrays (torch, CuPy)
        in the same layout with the layout arrays on the same device,
        decoding or chunked prefill (with cu_seqlens_q, max_seqlen_q the
        most queries of a sequence), enqueued on the arrays' current
        stream with no copy (assoc_run_paged_device).  heads and kv_heads,
        where given, must be those of the row inputs' and the pool's
        shapes.  Returns {output: array}."""
        spec = self.spec
        if block_table is None or seq_lens is None or page_size is None:
            raise ValueError("a paged run needs block_table=, seq_lens= and page_size=")
        page_size = _c_int("page_size", page_size)
        if max_seqlen_q is not None:
            max_seqlen_q = _c_int("max_seqlen_q", max_seqlen_q)
        arrays, params = self._split(kw)
        views, first = _input_views(spec, arrays)
        _param_devices(spec, kw, first)
        _refuse_grad(views)
        for a in spec.inputs:
            v = views[a.name]
            want = 3 + (a.width > 1) if a.role == "column" else 2 + (a.width > 1)
            if a.role not in ("column", "row") or len(v.shape) != want:
                raise ValueError("input '%s' (%s) of shape %s: a paged run takes column inputs "
                                 "[pages][page_size][kv_heads]%s and row inputs [rows][heads]%s" % (
                                     a.name, a.role, tuple(v.shape), "[width]" if a.width > 1 else "",
                                     "[width]" if a.width > 1 else ""))
        if first is None:
            raise ValueError("%s: a paged run needs column (keys) and row (queries) inputs" % spec.name)
        device = first[1].device
        if device is None and first[1].kind not in ("numpy", "torch"):
            raise ValueError("input '%s' is %s: a paged run takes NumPy arrays or torch CPU tensors, or CUDA "
                             "arrays for a \"gpu\" kernel" % (first[0], first[1].where()))
        if device is not None and self.device != "gpu":
            raise ValueError("input '%s' is %s: device arrays need a kernel compiled for \"gpu\" (this one runs "
                             "on %s)" % (first[0], first[1].where(), self.device))
        run_paged = _lib.optional("assoc_run_paged" if device is None else "assoc_run_paged_device")
        if run_paged is None:
            raise RunError("this libassoc (%s) has no %s: paged runs%s need a newer build" % (
                _lib.lib().path, "assoc_run_paged" if device is None else "assoc_run_paged_device",
                "" if device is None else " on CUDA arrays"))
        seq_lens = _check_int32("seq_lens", seq_lens, (None,), first[1])
        batch = seq_lens.shape[0]
        block_table = _check_int32("block_table", block_table, (batch, None), first[1])
        if cu_seqlens_q is not None:
            cu_seqlens_q = _check_int32("cu_seqlens_q", cu_seqlens_q, (batch + 1,), first[1])
        cols = [views[a.name] for a in spec.inputs if a.role == "column"]
        rows_in = [views[a.name] for a in spec.inputs if a.role == "row"]
        if not cols or not rows_in:
            raise ValueError("%s: a paged run needs column (keys) and row (queries) inputs" % spec.name)
        pages, psize, G = cols[0].shape[:3]
        total, H = rows_in[0].shape[:2]
        if psize != page_size:
            raise ValueError("the pool's pages hold %d keys, but page_size is %d" % (psize, page_size))
        row_name = [a.name for a in spec.inputs if a.role == "row"][0]
        for name, given, has, where in (("heads", heads, H, "input '%s' [rows][heads]" % row_name),
                                        ("kv_heads", kv_heads, G, "the pool [pages][page_size][kv_heads]")):
            if given is not None and _c_int(name, given) != has:
                raise ValueError("%s=%d, but %s has %d" % (name, given, where, has))
        if cu_seqlens_q is None and batch and total % batch:
            raise ValueError("%d query rows are not the same number for each of %d sequences (give "
                             "cu_seqlens_q=)" % (total, batch))
        rows = total // batch if batch and cu_seqlens_q is None else 0
        if max_seqlen_q is not None:
            if max_seqlen_q < 1:
                raise ValueError("max_seqlen_q must be 1 or more, got %d" % max_seqlen_q)
            if cu_seqlens_q is None and max_seqlen_q != rows:
                raise ValueError("max_seqlen_q is %d, but without cu_seqlens_q every sequence has %d queries" % (
                    max_seqlen_q, rows))
            if cu_seqlens_q is not None and device is None and batch:
                # on host arrays the offsets are in hand: a value that would
                # plan a launch short of a sequence's queries on a device is
                # caught here, where the same call is tried first
                import numpy as np
                counts = np.diff(cu_seqlens_q.keep.astype(np.int64))
                most = int(counts.argmax())
                if max_seqlen_q < counts[most]:
                    raise ValueError("max_seqlen_q is %d, but sequence %d has %d queries (cu_seqlens_q)" % (
                        max_seqlen_q, most, counts[most]))
        if device is not None and cu_seqlens_q is not None:
            # the offsets stay on the device: the most queries of a
            # sequence, which the launch is planned for, comes from the caller
            if max_seqlen_q is None:
                raise ValueError("on CUDA arrays with cu_seqlens_q a paged run needs max_seqlen_q= (the most "
                                 "queries of a sequence, as FlashAttention's varlen takes it)")
            rows = max_seqlen_q
        pg = _lib.AssocPaged(batch, page_size, pages, block_table.shape[1] if batch else 0,
                             block_table.ptr, seq_lens.ptr, cu_seqlens_q.ptr if cu_seqlens_q is not None else None,
                             rows)
        outs = {}
        bufs = self._bufs_type()
        n = 0
        for i, a in enumerate(spec.arrays):
            if a.role not in ("column", "row", "finalize"):
                continue
            if a.is_output:
                shape = (total, H) + ((a.width,) if a.width > 1 else ())
                outs[a.name], ptr = _arrays.allocate(rows_in[0], shape, a.type, a.name)
            else:
                shape, ptr = views[a.name].shape, views[a.name].ptr
            size = self._itemsize[i]
            for d in shape:
                size *= d
            bufs[n].name, bufs[n].data, bufs[n].bytes = self._names[i], ptr or None, size
            n += 1
        pv, np_, keep_p = _lib.values(params, "a param's name")
        with self._lock:
            if device is None:
                st = run_paged(self._h, H, G, ctypes.byref(pg), bufs, n, pv, np_)
            else:
                st = run_paged(self._h, H, G, ctypes.byref(pg), bufs, n, pv, np_, _arrays.cuda_stream(first[1]))
            why = _lib.text(self._L.assoc_kernel_error(self._h)) if st else None
        if st != _lib.OK:
            exc = {_lib.EINVAL: ValueError, _lib.ESIZE: ValueError, _lib.ENOMEM: MemoryError,
                   _lib.EDEVICE: DeviceError, _lib.ECOMPILE: CompileError, _lib.ELAWS: LawError}.get(st, RunError)
            raise exc("%s: %s" % (spec.name, why))
        return outs

    def output_shapes(self, shapes, heads=None, kv_heads=None):
        """{output: shape} for inputs of these shapes ({name: shape})."""
        spec = self.spec
        missing = [a.name for a in spec.inputs if a.name not in shapes]
        stray = [n for n in shapes if n not in {a.name for a in spec.inputs}]
        if missing or stray:
            # plan() would raise KeyError('x'), or leave a misspelt name unsaid
            raise ValueError("%s: shapes %s; its inputs are %s" % (
                spec.name, "name no input '%s'" % stray[0] if stray else "lack the input '%s'" % missing[0],
                ", ".join(a.name for a in spec.inputs)))
        return plan(spec, shapes, heads, kv_heads)[5]


_ITEMSIZE = {"f32": 4, "f16": 2, "bf16": 2, "f8e4m3": 1, "f64": 8, "i32": 4, "i64": 8, "bool": 1}


def _input_views(spec, arrays):
    """A View of each input of spec in arrays, by name, and (name, View) of
    the first: every input in one library on one device, of the spec's
    type, unmasked and C-contiguous, or a ValueError naming it."""
    views = {}
    first = None
    for a in spec.inputs:
        obj = arrays[a.name]
        if obj is None:
            raise TypeError("input '%s' is None, not an array: %s %s input has %s" % (
                a.name, _article(a.role), a.role, _axes_text(spec, a)))
        if isinstance(obj, numbers.Number) or getattr(obj, "ndim", None) == 0:
            raise ValueError("input '%s' is %s, not an array: %s %s input has %s" % (
                a.name, "a 0-dimensional array" if getattr(obj, "ndim", None) == 0 else "a " + type(obj).__name__,
                _article(a.role), a.role, _axes_text(spec, a)))
        try:
            v = _arrays.view(obj, a.type)
        except (TypeError, ValueError, OverflowError) as e:
            # NumPy's own words on a list it cannot convert say nothing of which input it was
            raise (ValueError if isinstance(e, OverflowError) else type(e))("input '%s': %s" % (a.name, e)) from None
        if v.masked:
            raise ValueError("input '%s' is %s: a kernel reads every element, so pass its data with the masked "
                             "elements filled" % (a.name, "a masked CUDA array (its __cuda_array_interface__ has a "
                                                  "mask)" if v.device is not None else
                                                  "a masked NumPy array (numpy.ma) with elements masked"))
        if first is None:
            first = (a.name, v)
        elif (v.kind, v.device, v.library()) != (first[1].kind, first[1].device, first[1].library()):
            raise ValueError("input '%s' is %s, but '%s' is %s: all inputs of a run share one library and "
                             "device" % (a.name, v.where(), first[0], first[1].where()))
        if v.type != a.type and not _arrays.holds_bits(v, a.type):
            swapped = v.kind == "numpy" and not v.dtype.isnative
            raise ValueError("input '%s' has dtype %s%s; the spec's '%s' is %s (%s%s)" % (
                a.name, v.dtype, ", of the other byte order than this machine's" if swapped else "", a.name, a.type,
                _want_dtype(v.kind, a.type), ": %s.astype(%s.dtype.newbyteorder('='))" % (a.name, a.name)
                if swapped else ""))
        if not v.contiguous:
            raise ValueError("input '%s' is not C-contiguous (row-major): pass a contiguous copy" % a.name)
        views[a.name] = v
    return views, first


def _compiling():
    import torch
    compiler = getattr(torch, "compiler", None)
    return compiler is not None and hasattr(compiler, "is_compiling") and compiler.is_compiling()


def _refuse_grad(views):
    """A ValueError for a torch input that requires grad while grad mode is
    on: a kernel has no backward, and outputs cut off from the graph would
    lose the gradient without a word."""
    if not _arrays.torch_loaded():
        return
    import torch
    if not torch.is_grad_enabled():
        return
    for name, v in views.items():
        if v.kind == "torch" and v.obj.requires_grad:
            raise ValueError("input '%s' requires grad, and assoc's kernels have no backward: run under "
                             "torch.no_grad() or torch.inference_mode(), or pass %s.detach()" % (name, name))


def _check_int32(name, arr, shape, first):
    """The View of a paged layout array: int32, of shape (None: any
    length), C-contiguous, in the library and on the device of the run's
    first input (a View); a NumPy array copied contiguous where it is
    not.  ValueError naming what is wrong."""
    import numpy as np
    if first.device is None:
        if _arrays._is_torch(arr) and arr.device.type == "cpu" and str(arr.dtype) == "torch.int32":
            arr = arr.contiguous().numpy()  # the same memory, read as NumPy
        if not isinstance(arr, np.ndarray) or arr.dtype != np.int32:
            raise ValueError("%s is %s: a %d-dimensional numpy.int32 array (or torch.int32 CPU tensor)" % (
                name, _given(arr), len(shape)))
        arr = np.ascontiguousarray(arr)
    v = _arrays.view(arr, "i32")
    if first.device is not None and (v.device != first.device or v.kind != first.kind or v.type != "i32"):
        raise ValueError("%s is %s of dtype %s: with inputs of %s, an int32 array of the same library and device"
                         % (name, v.where(), v.dtype, first.where()))
    if len(v.shape) != len(shape) or any(w is not None and d != w for d, w in zip(v.shape, shape)):
        raise ValueError("%s of shape %s: a %d-dimensional int32 array of shape [%s]" % (
            name, tuple(v.shape), len(shape), "][".join("any" if w is None else str(w) for w in shape)))
    if not v.contiguous:
        raise ValueError("%s is not C-contiguous (row-major): pass a contiguous copy" % name)
    v.keep = arr
    return v


def _given(obj):
    """What obj is, in a few words: an array's dtype and shape, else its type."""
    dtype, shape = getattr(obj, "dtype", None), getattr(obj, "shape", None)
    if dtype is not None and shape is not None:
        return "%s of dtype %s and shape %s" % (type(obj).__name__, dtype, tuple(shape))
    return "a " + type(obj).__name__


def _want_dtype(kind, t):
    if kind == "torch":
        return "torch." + _arrays.TORCH_TYPES[t]
    if t in _arrays.NO_NUMPY:
        return _arrays.NO_NUMPY[t]
    return ("cupy." if kind == "cupy" else "numpy.") + _arrays.NUMPY_TYPES[t]
