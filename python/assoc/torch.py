"""A compiled kernel as a PyTorch operator (torch.library.custom_op), with
a fake implementation that gives the outputs' shapes and dtypes, so that
torch.compile traces through it.

    op = assoc.torch.register(spec.compile("cpu"), name="mylib::softmax")
    lse, y = op(x)                     # spec.inputs (element, column, row), then params

Importing this module imports torch; `import assoc` alone does not."""
import torch as _torch

from . import _arrays, plan

# outputs' types: float8_e4m3fn, an input type only, is not in every torch
_TYPES = {k: getattr(_torch, v) for k, v in _arrays.TORCH_TYPES.items() if hasattr(_torch, v)}


def schema(kernel):
    """The operator's schema: the spec's inputs as Tensors (spec.inputs'
    order: element, column, row) and its params as ints (integer params) or floats; the outputs as a Tensor or a tuple."""
    spec = kernel.spec
    if spec.params is None:
        raise RuntimeError("this libassoc lacks assoc_param_count: rebuild it to register operators")
    # an integer param as an int: a float would round an i64 past 2^53 before the package could refuse it
    args = ["Tensor %s" % a.name for a in spec.inputs] + ["%s %s" % ("int" if t in ("i32", "i64") else "float", p)
                                                          for p, t in spec.params.items()]
    parse = getattr(_torch._C, "parse_schema", None)
    for arg in args if parse else ():
        # a name the schema language keeps for itself (def, None, True)
        # would fail in torch's parser with the whole schema quoted
        try:
            parse("f(%s) -> Tensor" % arg)
        except RuntimeError:
            what = "input" if arg.startswith("Tensor ") else "param"
            raise ValueError("%s: %s %r cannot be an argument of a torch operator (the schema language reserves "
                             "the word): rename it in the spec" % (spec.name, what, arg.split(" ", 1)[1])) from None
    n = len(spec.outputs)
    ret = "Tensor" if n == 1 else "(" + ", ".join(["Tensor"] * n) + ")"
    return "(%s) -> %s" % (", ".join(args), ret)


def register(kernel, name, heads=None, kv_heads=None):
    """Register kernel as the custom op name ("namespace::op") and return
    it.  The op takes the spec's inputs in spec.inputs' order (element
    inputs, then columns, then row inputs: attention's q, a row input,
    comes after k and v), then its params, positionally or by name (by
    name is safer), and returns its outputs in the spec's order (one tensor where
    there is one).  heads/kv_heads as for Kernel.__call__ (told from the
    inputs' ranks where not given)."""
    spec = kernel.spec
    ins = [a.name for a in spec.inputs]
    pars = list(spec.params or ())
    outs = spec.outputs
    # a "gpu" kernel also takes host tensors (the driver copies them)
    device_types = ("cpu", "cuda") if kernel.device == "gpu" else ("cpu",)

    def run(*args):
        kw = dict(zip(ins, args[:len(ins)]))
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

    return op
