"""Arrays of NumPy, PyTorch and CuPy seen alike: their library, device,
data pointer, element type (as the spec names it), shape and layout; and
outputs allocated in the same library on the same device.  Neither torch
nor cupy is imported unless an array of theirs comes in.  Arrays of any
other library that exposes __cuda_array_interface__ are "cuda": they run
on the stream their interface names, and their outputs are made by the
allocator registered for their type (register_cuda_array)."""
import ctypes
import sys

NUMPY_TYPES = {"f32": "float32", "f64": "float64", "f16": "float16", "i32": "int32", "i64": "int64",
               "bool": "bool"}
TORCH_TYPES = dict(NUMPY_TYPES, bf16="bfloat16", f8e4m3="float8_e4m3fn")
# f16 and bf16 also as their 16-bit patterns in NumPy uint16, f8e4m3 as its
# 8-bit ones in uint8 (as the C API and the CLI's .npy files take them):
# NumPy has neither bfloat16 nor an 8-bit float
BITS_TYPES = {"f16": "uint16", "bf16": "uint16", "f8e4m3": "uint8"}
# what a NumPy user passes for a type NumPy lacks
NO_NUMPY = {"bf16": "a torch.bfloat16 tensor, or numpy.uint16 holding bfloat16's bit patterns: NumPy has no bfloat16",
            "f8e4m3": "a torch.float8_e4m3fn tensor, or numpy.uint8 holding float8_e4m3fn's bit patterns: NumPy "
                      "has no 8-bit float"}


class View:
    """kind: "numpy", "torch", "cupy" or "cuda" (another library's
    __cuda_array_interface__); device: None for host memory,
    else ("cuda", index); type: the spec's name of its element type (None
    for one the spec has no name for, dtype then says what it is)."""

    def __init__(self, obj, kind, device, ptr, type_, dtype, shape, contiguous):
        self.obj, self.kind, self.device, self.ptr = obj, kind, device, ptr
        self.type, self.dtype, self.shape, self.contiguous = type_, dtype, tuple(shape), contiguous
        self.masked = False  # a CUDA array whose interface has a mask, a numpy.ma array with one set

    def library(self):
        """The top module of the array's type: "numpy", "torch", "cupy", or
        the one of a "cuda" array (a subclass of a NumPy array, np.memmap's
        or a program's own, is "numpy": its memory is one)."""
        if self.kind == "numpy":
            return "numpy"
        return type(self.obj).__module__.split(".")[0]

    def where(self):
        if self.device is None:
            return "%s on the host" % self.library()
        return "%s on %s:%d" % (self.library(), self.device[0], self.device[1])


_by_dtype = {}  # a library's dtype object -> the spec's type name (None: none)


def _type_of(dtype, table):
    t = _by_dtype.get(dtype, 0)
    if t == 0:
        s = str(dtype).replace("torch.", "")
        t = next((k for k, v in table.items() if v == s), None)
        _by_dtype[dtype] = t
    return t


def _torch_strided():
    import torch
    return torch.strided


def _is_torch(obj):
    return type(obj).__module__.split(".")[0] == "torch" and hasattr(obj, "data_ptr")


_c_char_at = ctypes.c_char.from_buffer


def host_pointer(a):
    """The address of a NumPy array's data: through the buffer protocol,
    a sixth of what a.ctypes.data costs a call; that path refuses read-only
    and empty arrays, which take the slower one."""
    try:
        return ctypes.addressof(_c_char_at(a))
    except (TypeError, ValueError, BufferError):
        return a.ctypes.data


def view(obj, spec_type):
    """A View of obj; anything that is not an array of the three libraries
    (a list, a number) becomes a NumPy array of spec_type."""
    np = sys.modules.get("numpy")
    if np is not None and type(obj) is np.ndarray and obj.dtype.isnative:  # the common case first
        return View(obj, "numpy", None, host_pointer(obj), _type_of(obj.dtype, NUMPY_TYPES), obj.dtype, obj.shape,
                    obj.flags.c_contiguous)
    if _is_torch(obj):
        # neither has one block of memory in the layout a kernel reads (a nested tensor has not even a shape)
        if obj.is_nested:
            raise ValueError("a nested tensor: a kernel reads one dense array; pass each of its tensors in a run "
                             "of its own, or .to_padded_tensor()")
        if obj.layout is not _torch_strided():
            raise ValueError("a tensor of layout %s: a kernel reads dense memory; pass .to_dense()" % (obj.layout,))
        dev = obj.device
        if dev.type not in ("cpu", "cuda"):
            raise ValueError("a tensor on the %s device: a kernel runs on CPU or CUDA memory%s" % (
                dev.type, "; a meta tensor, which has no data, goes through the op that assoc.torch.register "
                          "makes (its fake implementation gives the outputs' shapes)" if dev.type == "meta" else ""))
        # a view whose negative (or conjugate) bit is set holds its values un-negated in memory
        if obj.is_neg() or obj.is_conj():
            obj = obj.resolve_conj().resolve_neg()
        device = None if dev.type == "cpu" else (dev.type, dev.index if dev.index is not None else 0)
        return View(obj, "torch", device, obj.data_ptr(), _type_of(obj.dtype, TORCH_TYPES), obj.dtype,
                    tuple(obj.shape), obj.is_contiguous())
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        import numpy as np
        dtype = np.dtype(cai["typestr"])
        shape = tuple(cai["shape"])
        strides = cai.get("strides")
        contiguous = strides is None or _is_c_contiguous(shape, tuple(strides), dtype.itemsize)
        dev = getattr(obj, "device", None)
        index = getattr(dev, "id", 0) if dev is not None else 0
        kind = "cupy" if type(obj).__module__.split(".")[0] == "cupy" else "cuda"
        v = View(obj, kind, ("cuda", index), cai["data"][0], _type_of(dtype, NUMPY_TYPES), dtype, shape,
                 contiguous)
        v.masked = cai.get("mask") is not None
        return v
    import numpy as np
    # a masked array's data holds whatever lies under the mask
    masked = isinstance(obj, np.ma.MaskedArray) and bool(np.ma.getmaskarray(obj).any())
    if not isinstance(obj, np.ndarray):
        if spec_type not in NUMPY_TYPES:
            raise TypeError("a %s array must be %s, not %s" % (spec_type, NO_NUMPY[spec_type], type(obj).__name__))
        obj = _from_values(np, obj, spec_type)
    t = _type_of(obj.dtype, NUMPY_TYPES) if obj.dtype.isnative else None
    v = View(obj, "numpy", None, host_pointer(obj), t, obj.dtype, obj.shape, obj.flags.c_contiguous)
    v.masked = masked
    return v


def _from_values(np, obj, spec_type):
    """obj (a list, a memoryview) as a C-contiguous NumPy array of
    spec_type, or a ValueError where that type would not hold its values:
    NumPy's cast cuts 1.5 to 1 and wraps 2**32 to 0 in an integer type,
    reads "2" as a number and takes a finite 1e39 to an f32 infinity,
    each without a word."""
    import numbers
    want = np.dtype(NUMPY_TYPES[spec_type])
    got = np.asarray(obj)
    if got.dtype.kind == "O":
        # Python ints past int64, which NumPy keeps as objects, or things that are no numbers
        bad = [e for e in got.flat if not isinstance(e, numbers.Real)][:1]
        if bad:
            raise TypeError("it holds %r, which is no number" % (bad[0],))
    elif got.dtype.kind not in "biuf":
        raise ValueError("it holds %s, not real numbers" % {"U": "strings", "S": "bytes", "c": "complex numbers"}.get(
            got.dtype.kind, "values of dtype %s" % got.dtype))
    if got.size and want.kind in "ib":
        lo, hi = (0, 1) if want.kind == "b" else (int(np.iinfo(want).min), int(np.iinfo(want).max))
        flat = got.ravel()
        if got.dtype.kind == "O":
            ok = np.array([e == e and lo <= e <= hi and e == int(e) for e in flat], bool)
        else:
            with np.errstate(invalid="ignore"):
                ok = (flat >= lo) & (flat <= hi) & (flat == np.floor(flat) if got.dtype.kind == "f" else True)
        if not ok.all():
            e = flat[int(np.argmin(ok))]
            raise ValueError("it holds %r, which is not %s" % (
                e.item() if hasattr(e, "item") else e, "a bool (True, False, 0 or 1)" if want.kind == "b" else
                "an %s (a whole number from %d to %d)" % (spec_type, lo, hi)))
    with np.errstate(over="ignore"):  # said below, naming the value
        a = np.ascontiguousarray(got, dtype=want)
    if want.kind == "f" and got.size:
        wide = got.astype(np.float64) if got.dtype.kind == "O" else got
        bad = np.isinf(a) & np.isfinite(wide)
        if bad.any():
            raise ValueError("it holds %r, which is beyond %s's range" % (wide[bad].flat[0].item(), spec_type))
    return a


def holds_bits(v, spec_type):
    """Whether the View v is a host NumPy array of the unsigned integers
    that an f16 or bf16 (uint16) or f8e4m3 (uint8) input takes as the
    type's bit patterns."""
    return (spec_type in BITS_TYPES and v.kind == "numpy" and v.dtype.isnative
            and v.dtype.name == BITS_TYPES[spec_type])


def _is_c_contiguous(shape, strides, itemsize):
    """Row-major with no gaps; the stride of an axis of length 1 (and any,
    in an empty array) is never used, so libraries write what they like."""
    if 0 in shape:
        return True
    return all(n == 1 or st == want for n, st, want in zip(shape, strides, _c_strides(shape, itemsize)))


def _c_strides(shape, itemsize):
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


def numpy_type_for(spec_type, name):
    if spec_type not in NUMPY_TYPES:
        raise ValueError("'%s' is %s, which NumPy has no type for: pass torch.%s tensors" % (
            name, spec_type, TORCH_TYPES[spec_type]))
    return NUMPY_TYPES[spec_type]


def _host_numpy_type(spec_type, name):
    """A host NumPy output's dtype: bf16 as uint16, its bit patterns."""
    return "uint16" if spec_type == "bf16" else numpy_type_for(spec_type, name)


_allocators = {}  # a type of a "cuda" array -> allocate(shape, numpy dtype, device index)


def register_cuda_array(cls, allocate):
    """Outputs for inputs of type cls (or a subclass), a library's array
    with __cuda_array_interface__ that assoc does not know: allocate(shape,
    dtype, device) returns a new C-contiguous array of that shape and NumPy
    dtype on CUDA device index device, exposing __cuda_array_interface__."""
    if not isinstance(cls, type) or not callable(allocate):
        raise TypeError("register_cuda_array(cls, allocate): a type and a callable")
    _allocators[cls] = allocate


def _allocator(obj):
    for c in type(obj).__mro__:
        if c in _allocators:
            return _allocators[c]
    return None


def allocate(first, shape, spec_type, name):
    """(array, data pointer) of a new output in the library of first (the
    View of the run's first input) on its device."""
    kind, device = first.kind, first.device
    if kind == "numpy":
        import numpy as np
        a = np.empty(shape, dtype=_host_numpy_type(spec_type, name))
        return a, host_pointer(a)
    if kind == "torch":
        import torch
        dev = "cpu" if device is None else "%s:%d" % device
        t = torch.empty(shape, dtype=getattr(torch, TORCH_TYPES[spec_type]), device=dev)
        return t, t.data_ptr()
    if kind == "cupy":
        import cupy
        with cupy.cuda.Device(device[1]):
            a = cupy.empty(shape, dtype=numpy_type_for(spec_type, name))
        return a, a.data.ptr
    lib = "%s.%s" % (type(first.obj).__module__, type(first.obj).__qualname__)
    make = _allocator(first.obj)
    if make is None:
        raise ValueError("no way to make the output '%s' for %s inputs (CUDA arrays of a library assoc does not know): "
                         "assoc.register_cuda_array(%s, allocate) says how" % (name, lib, type(first.obj).__name__))
    import numpy as np
    dtype = np.dtype(numpy_type_for(spec_type, name))
    a = make(tuple(shape), dtype, device[1])
    cai = getattr(a, "__cuda_array_interface__", None)
    ok = cai is not None and tuple(cai["shape"]) == tuple(shape) and np.dtype(cai["typestr"]) == dtype and (
        cai.get("strides") is None or _is_c_contiguous(tuple(shape), tuple(cai["strides"]), dtype.itemsize))
    if not ok:
        raise ValueError("the allocator registered for %s gave '%s' as %r, not a C-contiguous CUDA array of shape %s "
                         "and dtype %s" % (lib, name, cai if cai is not None else a, tuple(shape), dtype))
    return a, cai["data"][0]


def cuda_stream(first):
    """The CUDA stream of a run whose first input is the View first: the
    current one of its library on its device, as a pointer (a "cuda"
    array's interface names it: None for the legacy default stream, 1 and
    2 are CU_STREAM_LEGACY and CU_STREAM_PER_THREAD, which the driver takes
    as they are)."""
    kind, device = first.kind, first.device
    if kind == "torch":
        import torch
        return torch.cuda.current_stream(device[1]).cuda_stream
    if kind == "cuda":
        return first.obj.__cuda_array_interface__.get("stream") or None
    import cupy
    with cupy.cuda.Device(device[1]):
        return cupy.cuda.get_current_stream().ptr


def torch_loaded():
    return "torch" in sys.modules
