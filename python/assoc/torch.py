"""A compiled kernel as a PyTorch operator (torch.library.custom_op), with
a fake implementation that gives the outputs' shapes and dtypes, so that
torch.compile traces through it.

    op = assoc.torch.register(spec.compile("cpu"), name="mylib::softmax")
    lse, y = op(x)                     # spec.inputs (element, column, row), then params

Importing this module imports torch; `import assoc` alone does not."""
import itertools
import re

import torch as _torch
import torch._dynamo  # noqa: F401 (assume_constant_result)
import torch._library.custom_ops  # noqa: F401

from . import _arrays, plan

# outputs' types: float8_e4m3fn, an input type only, is not in every torch
_TYPES = {k: getattr(_torch, v) for k, v in _arrays.TORCH_TYPES.items() if hasattr(_torch, v)}


def _float_param(t):
    return t in ("f32", "f64", "f16", "bf16")


def schema(kernel):
    """The operator's schema: the spec's inputs as Tensors (spec.inputs'
    order: element, column, row) and its params: a float param as a 0-d
    Tensor (a new value is then no new constant to torch.compile, which
    specializes on a float argument), an integer param as an int, a bool
    param as a float (0 or 1); the outputs as a Tensor or a tuple."""
    spec = kernel.spec
    if spec.params is None:
        raise RuntimeError("this libassoc lacks assoc_param_count: rebuild it to register operators")
    # an integer param as an int: a float would round an i64 past 2^53 before the package could refuse it
    args = ["Tensor %s" % a.name for a in spec.inputs] + [
        "%s %s" % ("int" if t in ("i32", "i64") else "Tensor" if _float_param(t) else "float", p)
        for p, t in spec.params.items()]
    parse = getattr(_torch._C, "parse_schema", None)
    for arg in args if parse else ():
        # a name the schema language keeps for itself (def, None, True)
        # would fail in torch's parser with the whole schema quoted
        try:
            parse("f(%s) -> Tensor" % arg)
        except RuntimeError:
            what = "param" if arg.split(" ", 1)[1] in spec.params else "input"
            raise ValueError("%s: %s %r cannot be an argument of a torch operator (the schema language reserves "
                             "the word): rename it in the spec" % (spec.name, what, arg.split(" ", 1)[1])) from None
    n = len(spec.outputs)
    ret = "Tensor" if n == 1 else "(" + ", ".join(["Tensor"] * n) + ")"
    return "(%s) -> %s" % (", ".join(args), ret)


def _no_grad_error(names):
    return ValueError("%s requires grad, and assoc's kernels have no backward: run under torch.no_grad() or "
                      "torch.inference_mode(), or pass %s.detach()" % (names[0], names[0].split("'")[1]))


def _prepare(spec, names, floats, args, kwargs):
    """args and kwargs with each float param given as a number made a 0-d
    float64 tensor (the schema's), and a ValueError for a tensor that
    requires grad while grad mode is on, naming it."""
    args = [_torch.scalar_tensor(a, dtype=_torch.float64) if i < len(names) and names[i] in floats and
            not isinstance(a, _torch.Tensor) and not isinstance(a, (str, bytes)) else a for i, a in enumerate(args)]
    kwargs = {k: _torch.scalar_tensor(a, dtype=_torch.float64) if k in floats and not isinstance(a, _torch.Tensor)
              and not isinstance(a, (str, bytes)) else a for k, a in kwargs.items()}
    if _torch.is_grad_enabled():
        named = list(zip(names, args)) + list(kwargs.items())
        for n, a in named:
            if isinstance(a, _torch.Tensor) and a.requires_grad:
                raise _no_grad_error(["%s '%s'" % ("param" if n in (spec.params or ()) else "input", n)])
    return args, kwargs


class AssocOp(_torch._library.custom_ops.CustomOpDef):
    """The operator register() returns: a torch.library.custom_op whose
    call also takes a float param as a number (made the 0-d tensor of its
    schema), and refuses a tensor that requires grad while grad mode is
    on, naming it."""

    def __call__(self, *args, **kwargs):
        args, kwargs = _prepare(self._assoc_spec, self._assoc_names, self._assoc_floats, args, kwargs)
        return super().__call__(*args, **kwargs)


def register(kernel, name, heads=None, kv_heads=None):
    """Register kernel as the custom op name ("namespace::op") and return
    it.  The op takes the spec's inputs in spec.inputs' order (element
    inputs, then columns, then row inputs: attention's q, a row input,
    comes after k and v), then its params, positionally or by name (by
    name is safer), and returns its outputs in the spec's order (one tensor where
    there is one).  A float param is a 0-d tensor (of any float dtype, on
    the CPU or the inputs' device) or a number.  Inputs of any strides are
    taken (copied contiguous where they are not).  heads/kv_heads as for
    Kernel.__call__ (told from the inputs' ranks where not given)."""
    spec = kernel.spec
    ins = [a.name for a in spec.inputs]
    pars = list(spec.params or ())
    outs = spec.outputs
    # a "gpu" kernel also takes host tensors (the driver copies them)
    device_types = ("cpu", "cuda") if kernel.device == "gpu" else ("cpu",)

    def run(*args):
        # torch.compile chooses the strides of what it passes: made contiguous here, not refused
        kw = {n: t.contiguous() for n, t in zip(ins, args[:len(ins)])}
        kw.update(zip(pars, args[len(ins):]))
        got = kernel._run(heads, kv_heads, kw, True)
        res = tuple(got[a.name] for a in outs)
        return res[0] if len(res) == 1 else res

    op = _torch.library.custom_op(name, run, mutates_args=(), device_types=device_types, schema=schema(kernel))

    @op.register_fake
    def _(*args):
        tensors = args[:len(ins)]
        shapes = {n: tuple(t.shape) for n, t in zip(ins, tensors)}
        out_shapes = plan(spec, shapes, heads, kv_heads)[5]
        like = tensors[0]
        res = tuple(like.new_empty(out_shapes[a.name], dtype=_TYPES[a.type]) for a in outs)
        return res[0] if len(res) == 1 else res

    def setup_context(ctx, inputs, output):
        pass

    def backward(ctx, *grads):
        # reached through torch.ops.NAMESPACE.OP, whose call AssocOp.__call__ does not check
        names = [("input '%s'" if i < len(ins) else "param '%s'") % n
                 for i, (n, need) in enumerate(zip(ins + pars, ctx.needs_input_grad)) if need]
        raise RuntimeError("%s: %s" % (name, _no_grad_error(names or ["input '%s'" % ins[0]])))

    op.register_autograd(backward, setup_context=setup_context)
    op.__class__ = AssocOp
    op._assoc_spec, op._assoc_names = spec, ins + pars
    op._assoc_floats = frozenset(p for p, t in (spec.params or {}).items() if _float_param(t))
    return op


_count = itertools.count()


def _op_for(kernel, heads, kv_heads):
    """The name, in the namespace assoc_kernels, of the op registered for
    kernel at heads and kv_heads, registered on first use."""
    ops = kernel.__dict__.setdefault("_torch_ops", {})
    key = (heads, kv_heads)
    if key not in ops:
        name = "%s_%d" % (re.sub(r"\W", "_", kernel.spec.name), next(_count))
        register(kernel, "assoc_kernels::" + name, heads, kv_heads)
        ops[key] = name
    return ops[key]


# run as it is while torch.compile traces a call: its result, a name, is a constant of the trace
_traced_op_for = _torch._dynamo.assume_constant_result(_op_for)


def traced_call(kernel, heads, kv_heads, kw):
    """Kernel.__call__ under torch.compile: through the op registered for
    the kernel (_op_for), which the trace can hold; the outputs in a dict
    as the call gives them."""
    spec = kernel.spec
    ins = [a.name for a in spec.inputs]
    pars = list(spec.params or ())
    stray = [k for k in kw if k not in ins and k not in pars]
    if stray:
        raise ValueError("%s has no input or param '%s' (inputs: %s; params: %s)" % (
            spec.name, stray[0], ", ".join(ins) or "none", ", ".join(pars) or "none"))
    missing = [n for n in ins + pars if n not in kw]
    if missing:
        raise ValueError("%s needs the %s %s" % (spec.name, "input" if missing[0] in ins else "param",
                                                 ", ".join("'%s'" % m for m in missing)))
    name = _traced_op_for(kernel, heads, kv_heads)
    op = getattr(getattr(_torch.ops, "assoc_kernels"), name).default
    floats = {p for p, t in spec.params.items() if _float_param(t)}
    args, _ = _prepare(spec, ins + pars, floats, [kw[n] for n in ins + pars], {})
    res = op(*args)
    res = res if isinstance(res, tuple) else (res,)
    return {a.name: r for a, r in zip(spec.outputs, res)}
