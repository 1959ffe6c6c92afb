"""libassoc.so through ctypes: where it is found, and the C API's types
and prototypes (compiler/lib/assoc.h)."""
import ctypes
import ctypes.util
import os
import sys

from .errors import LibraryError

OK, EINVAL, ESPEC, ELAWS, EDEVICE, ECOMPILE, ESIZE, ENOMEM = range(8)
ROLES = ("element", "column", "row", "finalize", "map")


class AssocArray(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("role", ctypes.c_int), ("type", ctypes.c_char_p),
                ("width", ctypes.c_int), ("is_output", ctypes.c_int)]


class AssocBuffer(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("data", ctypes.c_void_p), ("bytes", ctypes.c_size_t)]


class AssocPaged(ctypes.Structure):
    _fields_ = [("batch", ctypes.c_int64), ("page_size", ctypes.c_int64), ("pages", ctypes.c_int64),
                ("max_pages", ctypes.c_int64), ("block_table", ctypes.c_void_p), ("seq_lens", ctypes.c_void_p),
                ("cu_seqlens_q", ctypes.c_void_p), ("rows", ctypes.c_int64)]


class AssocValue(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("value", ctypes.c_double)]


def candidates():
    """The paths tried, in order: ASSOC_LIBRARY, the checkout's build/,
    the dynamic linker's search, then the installed prefixes."""
    paths = []
    env = os.environ.get("ASSOC_LIBRARY")
    if env:
        paths.append(env)
    here = os.path.dirname(os.path.abspath(__file__))
    paths.append(os.path.normpath(os.path.join(here, "..", "..", "build", "libassoc.so")))
    found = ctypes.util.find_library("assoc")
    if found:
        paths.append(found)
    for prefix in (sys.prefix, "/usr/local", "/usr"):
        paths.append(os.path.join(prefix, "lib", "libassoc.so"))
    return paths


_P = ctypes.POINTER
_vp = ctypes.c_void_p
_i64 = ctypes.c_int64
_PROTOTYPES = {
    "assoc_strerror": (ctypes.c_char_p, [ctypes.c_int]),
    "assoc_spec_load": (ctypes.c_int, [_P(_vp), ctypes.c_char_p, _P(AssocValue), ctypes.c_int]),
    "assoc_spec_load_text": (ctypes.c_int, [_P(_vp), ctypes.c_char_p, ctypes.c_size_t, _P(AssocValue), ctypes.c_int]),
    "assoc_spec_error": (ctypes.c_char_p, [_vp]),
    "assoc_spec_name": (ctypes.c_char_p, [_vp]),
    "assoc_spec_check": (ctypes.c_int, [_vp, ctypes.c_int, ctypes.c_uint64]),
    "assoc_spec_trust_merge": (ctypes.c_int, [_vp, ctypes.c_int]),
    "assoc_array_count": (ctypes.c_int, [_vp]),
    "assoc_array_info": (ctypes.c_int, [_vp, ctypes.c_int, _P(AssocArray)]),
    "assoc_array_bytes": (ctypes.c_size_t, [_vp, ctypes.c_int, _i64, _i64]),
    "assoc_array_bytes_heads": (ctypes.c_size_t, [_vp, ctypes.c_int, _i64, _i64, _i64, _i64]),
    "assoc_spec_free": (None, [_vp]),
    "assoc_compile": (ctypes.c_int, [_vp, ctypes.c_char_p, ctypes.c_int, _P(_vp)]),
    "assoc_kernel_error": (ctypes.c_char_p, [_vp]),
    "assoc_run_heads": (ctypes.c_int, [_vp, _i64, _i64, _i64, _i64, _P(AssocBuffer), ctypes.c_int,
                                       _P(AssocValue), ctypes.c_int]),
    "assoc_kernel_free": (None, [_vp]),
}
# present in newer libraries only: looked up when used
_OPTIONAL = {
    "assoc_param_count": (ctypes.c_int, [_vp]),
    "assoc_param_name": (ctypes.c_char_p, [_vp, ctypes.c_int]),
    "assoc_param_type": (ctypes.c_char_p, [_vp, ctypes.c_int]),
    "assoc_kernel_device": (ctypes.c_char_p, [_vp]),
    "assoc_kernel_verdicts": (ctypes.c_int64, [_vp]),
    "assoc_spec_verdict": (ctypes.c_char_p, [_vp]),
    "assoc_spec_warnings": (ctypes.c_char_p, [_vp]),
    "assoc_run_device": (ctypes.c_int, [_vp, _i64, _i64, _i64, _i64, _P(AssocBuffer), ctypes.c_int,
                                        _P(AssocValue), ctypes.c_int, _vp]),
    "assoc_run_paged": (ctypes.c_int, [_vp, _i64, _i64, _P(AssocPaged), _P(AssocBuffer), ctypes.c_int,
                                       _P(AssocValue), ctypes.c_int]),
    "assoc_run_paged_device": (ctypes.c_int, [_vp, _i64, _i64, _P(AssocPaged), _P(AssocBuffer), ctypes.c_int,
                                              _P(AssocValue), ctypes.c_int, _vp]),
}

_lib = None


def lib():
    """The loaded library, its prototypes set; LibraryError saying what
    was tried when none loads."""
    global _lib
    if _lib is not None:
        return _lib
    tried = []
    env = os.environ.get("ASSOC_LIBRARY")
    for path in candidates():
        why = None
        if os.path.sep in path and not os.path.exists(path):
            why = "no such file"
        else:
            try:
                cdll = ctypes.CDLL(path)
            except OSError as e:
                why = str(e)
            else:
                if not hasattr(cdll, "assoc_spec_load"):
                    why = "not libassoc: no assoc_spec_load"
        if why is not None and env and path == env:
            # the library asked for by name, not a fallback behind the caller's back
            raise LibraryError("ASSOC_LIBRARY=%s does not load: %s (unset it to use the checkout's or the "
                               "installed library)" % (env, why))
        if why is not None:
            tried.append("%s (%s)" % (path, why))
            continue
        for name, (res, args) in _PROTOTYPES.items():
            f = getattr(cdll, name)
            f.restype, f.argtypes = res, args
        for name, (res, args) in _OPTIONAL.items():
            f = getattr(cdll, name, None)
            if f is not None:
                f.restype, f.argtypes = res, args
        cdll.path = path
        _lib = cdll
        return cdll
    raise LibraryError("libassoc.so not found (build it with `make build/libassoc.so`, or set ASSOC_LIBRARY); "
                       "tried: " + "; ".join(tried))


def optional(name):
    """A function of newer libraries, or None where this one lacks it."""
    return getattr(lib(), name, None)


def text(b):
    return b.decode("utf-8", "replace") if b is not None else None


def strerror(status):
    return text(lib().assoc_strerror(status))


def cstr(data, what):
    """data (str, or bytes as they are) as the bytes of a C string;
    ValueError where it holds a NUL, at which C would end it and go on
    with what comes before (a path checked by the caller would not be the
    path opened), as Python's own open() refuses one."""
    b = data.encode() if isinstance(data, str) else bytes(data)
    if b"\0" in b:
        raise ValueError("%s: embedded null byte at index %d%s" % (
            what, b.index(b"\0"), ": %r" % (data,) if len(b) <= 200 else ""))
    return b


def values(pairs, what="name"):
    """(array, count, keepalive) of AssocValue from (name, number) pairs."""
    if not pairs:
        return None, 0, None
    names = [cstr(n, what) for n, _ in pairs]
    arr = (AssocValue * len(pairs))()
    for i, (n, v) in enumerate(pairs):
        arr[i].name = names[i]
        arr[i].value = float(v)
    return arr, len(pairs), names
