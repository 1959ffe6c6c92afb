"""The assoc package on PyTorch tensors: CPU tensors in and out in place,
bf16, heads, the custom op under torch.compile; CUDA tensors where a GPU
and a libassoc with assoc_run_device are here.  Each test skips, saying
why, where torch does not import."""
import os
import unittest

import numpy as np

import assoc

try:
    import torch
    import assoc.torch as assoc_torch
    WHY_NO_TORCH = None
except ImportError as e:  # the package itself needs no torch
    torch = None
    WHY_NO_TORCH = "torch does not import here (%s)" % e

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def setUpModule():
    os.chdir(ROOT)


@unittest.skipIf(torch is None, WHY_NO_TORCH)
class TorchCpu(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.softmax = assoc.load("specs/online_softmax.yaml").compile("cpu", threads=2)

    def test_a_negative_view_is_read_with_its_sign(self):
        x = torch.randn(6, 10)
        neg = torch._neg_view(x)
        self.assertTrue(neg.is_neg())
        torch.testing.assert_close(self.softmax(x=neg)["lse"], torch.logsumexp(-x, 1), rtol=1e-5, atol=1e-5)
        im = torch.complex(torch.zeros(1, 1), torch.tensor([[2.0]])).conj().imag  # public calls, the bit set
        self.assertTrue(im.is_neg())
        torch.testing.assert_close(self.softmax(x=im)["lse"], torch.tensor([-2.0]))

    def test_meta_sparse_and_nested_tensors_are_named(self):
        x = torch.randn(3, 4)
        with self.assertRaisesRegex(ValueError, r"input 'x': a tensor on the meta device: a kernel runs on CPU or "
                                                r"CUDA memory; a meta tensor, .* goes through the op that "
                                                r"assoc.torch.register makes"):
            self.softmax(x=torch.empty(3, 4, device="meta"))
        with self.assertRaisesRegex(ValueError, r"input 'x': a tensor of layout torch.sparse_coo: a kernel reads "
                                                r"dense memory; pass .to_dense\(\)"):
            self.softmax(x=x.to_sparse())
        nested = torch.nested.nested_tensor([torch.randn(4), torch.randn(5)], layout=torch.jagged)
        with self.assertRaisesRegex(ValueError, r"input 'x': a nested tensor: a kernel reads one dense array"):
            self.softmax(x=nested)

    def test_a_kernel_in_a_module_survives_deepcopy(self):
        import copy

        class M(torch.nn.Module):
            def __init__(self, k):
                super().__init__()
                self.k = k

        m = M(self.softmax)
        m2 = copy.deepcopy(m)
        self.assertIs(m2.k, self.softmax)
        del m2
        x = torch.randn(2, 8)
        torch.testing.assert_close(m.k(x=x)["lse"], torch.logsumexp(x, 1), rtol=1e-5, atol=1e-5)

    def test_a_dataloader_worker_runs_a_kernel_of_two_threads(self):
        import multiprocessing
        ctx = multiprocessing.get_context("fork")
        k = self.softmax
        x = torch.randn(64, 4096)

        class Rows(torch.utils.data.Dataset):
            def __len__(self):
                return 2

            def __getitem__(self, i):
                return k(x=x)["lse"]

        want = k(x=x)["lse"]
        loader = torch.utils.data.DataLoader(Rows(), num_workers=1, timeout=30, multiprocessing_context=ctx)
        for got in loader:
            torch.testing.assert_close(got[0], want)

    def test_tensors_in_and_out(self):
        x = torch.randn(4, 100) * 3
        out = self.softmax(x=x)
        self.assertIsInstance(out["y"], torch.Tensor)
        self.assertEqual(out["y"].device.type, "cpu")
        self.assertEqual(tuple(out["lse"].shape), (4,))
        torch.testing.assert_close(out["lse"], torch.logsumexp(x, 1), rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(out["y"], torch.softmax(x, 1), rtol=1e-4, atol=1e-7)

    def test_tensors_are_read_in_place(self):
        base = torch.randn(4, 64)
        view = base[1:3]  # contiguous rows of a larger tensor: read at its own offset
        out = self.softmax(x=view)
        torch.testing.assert_close(out["lse"], torch.logsumexp(base[1:3], 1), rtol=1e-5, atol=1e-5)
        with self.assertRaisesRegex(ValueError, r"input 'x' is not C-contiguous"):
            self.softmax(x=base.t())
        with self.assertRaisesRegex(ValueError, r"input 'x' has dtype torch.float64; the spec's 'x' is f32 "
                                                r"\(torch.float32\)"):
            self.softmax(x=base.double())

    def test_inputs_that_require_grad(self):
        # a kernel has no backward: outputs cut off from the graph would lose the gradient silently
        x = torch.randn(2, 8, requires_grad=True)
        with self.assertRaisesRegex(ValueError, r"input 'x' requires grad, and assoc's kernels have no backward: "
                                                r"run under torch.no_grad\(\)"):
            self.softmax(x=x)
        with torch.no_grad():
            torch.testing.assert_close(self.softmax(x=x)["lse"], torch.logsumexp(x, 1), rtol=1e-5, atol=1e-5)
        self.assertEqual(self.softmax(x=x.detach())["y"].shape, (2, 8))
        # the registered op refuses it so too; through torch.ops its backward names it
        op = assoc_torch.register(self.softmax, name="assoc_test::softmax_grad")
        with self.assertRaisesRegex(ValueError, r"input 'x' requires grad, and assoc's kernels have no backward"):
            op(x)
        lse, y = torch.ops.assoc_test.softmax_grad(x)
        torch.testing.assert_close(lse, torch.logsumexp(x.detach(), 1), rtol=1e-5, atol=1e-5)
        with self.assertRaisesRegex(RuntimeError, r"assoc_test::softmax_grad: input 'x' requires grad, and assoc's "
                                                  r"kernels have no backward: run under torch.no_grad\(\)"):
            y.sum().backward()
        with torch.no_grad():
            torch.testing.assert_close(op(x)[0], torch.logsumexp(x, 1), rtol=1e-5, atol=1e-5)

    def test_a_param_that_requires_grad(self):
        k = assoc.load("specs/layer_norm.yaml").compile("cpu", threads=1)
        op = assoc_torch.register(k, name="assoc_test::ln_grad")
        x, gamma, beta = torch.randn(2, 8).bfloat16(), torch.ones(8), torch.zeros(8)
        eps = torch.tensor(1e-5, requires_grad=True)
        for f in (lambda: k(x=x, gamma=gamma, beta=beta, eps=eps), lambda: op(x, gamma, beta, eps)):
            with self.assertRaisesRegex(ValueError, r"param 'eps' requires grad, and assoc's kernels have no "
                                                    r"backward: .* or pass eps.detach\(\)"):
                f()
        with torch.no_grad():
            self.assertEqual(k(x=x, gamma=gamma, beta=beta, eps=eps)["y"].shape, (2, 8))

    def test_inputs_share_one_library(self):
        k = assoc.load("specs/layer_norm.yaml").compile("cpu", threads=1)
        with self.assertRaisesRegex(ValueError, r"input 'gamma' is numpy on the host, but 'x' is torch"):
            k(x=torch.zeros(2, 4, dtype=torch.bfloat16), gamma=np.ones(4, np.float32),
              beta=np.zeros(4, np.float32), eps=1e-5)

    def test_f8e4m3_tensors(self):
        if not hasattr(torch, "float8_e4m3fn"):
            self.skipTest("this torch (%s) has no float8_e4m3fn" % torch.__version__)
        with open("specs/online_softmax.yaml") as f:
            text = f.read().replace("element: {x: f32}", "element: {x: f8e4m3}")
        k = assoc.loads(text).compile("cpu", threads=1)
        x = (torch.randn(3, 37) * 4).to(torch.float8_e4m3fn)
        out = k(x=x)
        torch.testing.assert_close(out["lse"], torch.logsumexp(x.float(), 1), rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(out["y"], torch.softmax(x.float(), 1), rtol=1e-4, atol=1e-7)
        # the same bytes as NumPy uint8 bit patterns: the same run
        bits = k(x=x.view(torch.uint8).numpy())
        np.testing.assert_array_equal(bits["lse"], out["lse"].numpy())
        with self.assertRaisesRegex(ValueError, r"input 'x' has dtype torch.float16; the spec's 'x' is f8e4m3 "
                                                r"\(torch.float8_e4m3fn\)"):
            k(x=x.half())

    def test_layer_norm_in_bf16(self):
        x = (torch.randn(3, 257) * 2 + 1).to(torch.bfloat16)
        gamma, beta = torch.rand(257) + 0.5, torch.randn(257)
        out = assoc.load("specs/layer_norm.yaml").compile("cpu", threads=1)(x=x, gamma=gamma, beta=beta, eps=1e-5)
        ref = torch.nn.functional.layer_norm(x.float(), (257,), gamma, beta, eps=1e-5)
        self.assertEqual(out["y"].dtype, torch.float32)
        torch.testing.assert_close(out["y"], ref, rtol=1e-3, atol=1e-3)
        torch.testing.assert_close(out["mean"], x.float().mean(1), rtol=1e-5, atol=1e-5)

    def test_paged_bf16_on_cpu_tensors(self):
        # a paged run on torch CPU tensors gives torch tensors, the same
        # bits as the run on NumPy uint16 arrays of the same patterns
        D, P = 32, 16
        k = assoc.load("tests/attention/causal_bf16.yaml", dims={"d": D, "dv": D}).compile("cpu", threads=2)
        g = torch.Generator().manual_seed(4)
        pool = torch.randn(2, P, 2, D, generator=g).to(torch.bfloat16)
        vpool = torch.randn(2, P, 2, D, generator=g).to(torch.bfloat16)
        q = torch.randn(1, 4, D, generator=g).to(torch.bfloat16)
        bt, sl = torch.tensor([[0, 1]], dtype=torch.int32), np.array([20], np.int32)
        out = k(q=q, k=pool, v=vpool, scale=0.2, block_table=bt, seq_lens=sl, page_size=P)
        self.assertIsInstance(out["out"], torch.Tensor)
        self.assertEqual(tuple(out["out"].shape), (1, 4, D))

        def bits(t):
            return t.view(torch.int16).numpy().view(np.uint16)

        ref = k(q=bits(q), k=bits(pool), v=bits(vpool), scale=0.2, block_table=bt.numpy(), seq_lens=sl,
                page_size=P)
        np.testing.assert_array_equal(out["out"].numpy(), ref["out"])
        np.testing.assert_array_equal(out["lse"].numpy(), ref["lse"])
        keys = torch.cat([pool[0], pool[1]])[:20].float().transpose(0, 1)  # [kv_heads][keys][d]
        vals = torch.cat([vpool[0], vpool[1]])[:20].float().transpose(0, 1)
        sdpa = torch.nn.functional.scaled_dot_product_attention(
            q[0].float().unsqueeze(1), keys.repeat_interleave(2, 0), vals.repeat_interleave(2, 0), scale=0.2)
        torch.testing.assert_close(out["out"][0], sdpa[:, 0], rtol=2e-2, atol=1e-2)

    def test_attention_heads(self):
        H, G, R, L, D = 4, 2, 6, 11, 16
        k = assoc.load("specs/attention.yaml", dims={"d": D, "dv": D}).compile("cpu", threads=2)
        q = torch.randn(H, R, D, dtype=torch.float16)
        kk = torch.randn(G, L, D, dtype=torch.float16)
        v = torch.randn(G, L, D, dtype=torch.float16)
        out = k(q=q, k=kk, v=v, scale=D ** -0.5)
        mask = torch.ones(R, L, dtype=torch.bool).tril()
        ref = torch.nn.functional.scaled_dot_product_attention(
            q.float(), kk.float().repeat_interleave(H // G, 0), v.float().repeat_interleave(H // G, 0),
            attn_mask=mask)
        self.assertEqual(tuple(out["out"].shape), (H, R, D))
        torch.testing.assert_close(out["out"], ref, rtol=2e-2, atol=2e-3)


@unittest.skipIf(torch is None, WHY_NO_TORCH)
class CustomOp(unittest.TestCase):
    def test_schema(self):
        k = assoc.load("specs/layer_norm.yaml").compile("interp")
        self.assertEqual(assoc_torch.schema(k), "(Tensor x, Tensor gamma, Tensor beta, Tensor eps) -> "
                                                "(Tensor, Tensor, Tensor)")

    def test_a_reserved_name_is_refused_by_name(self):
        text = open("specs/sum.yaml").read().replace("{x: f32}", "{def: f32}").replace(
            "lift: {s: x}", "lift: {s: def}").replace("sum(x)", "sum(def)")
        k = assoc.loads(text).compile("cpu", threads=1)
        with self.assertRaisesRegex(ValueError, "input 'def' cannot be an argument of a torch operator"):
            assoc_torch.register(k, name="assoc_tests::sum_def")
        # out, input and dtype are names the schema language takes
        k = assoc.loads(text.replace("def", "input")).compile("cpu", threads=1)
        op = assoc_torch.register(k, name="assoc_tests::sum_input")
        torch.testing.assert_close(op(torch.ones(2, 3)), torch.full((2,), 3.0))

    def test_op_under_torch_compile(self):
        k = assoc.load("specs/online_softmax.yaml").compile("cpu", threads=1)
        op = assoc_torch.register(k, name="assoc_tests::softmax")
        x = torch.randn(3, 40)
        lse, y = op(x)
        torch.testing.assert_close(lse, torch.logsumexp(x, 1), rtol=1e-5, atol=1e-5)
        # the fake implementation gives the shapes and dtypes the trace needs
        from torch._subclasses.fake_tensor import FakeTensorMode
        with FakeTensorMode() as mode:
            fl, fy = op(mode.from_tensor(x))
            self.assertEqual((tuple(fl.shape), tuple(fy.shape), fy.dtype), ((3,), (3, 40), torch.float32))
        torch.library.opcheck(op, (x,))

        def f(x):
            lse, y = op(x * 2)
            return y.sum(1) + lse

        try:
            compiled = torch.compile(f, fullgraph=True)
            got = compiled(x)
        except Exception as e:  # torch.compile needs a C++ compiler for its own kernels
            if "compiler" in str(e).lower() and "InvalidCxxCompiler" in type(e).__name__:
                self.skipTest("torch.compile has no C++ compiler here: %s" % e)
            raise
        torch.testing.assert_close(got, 1 + torch.logsumexp(x * 2, 1), rtol=1e-5, atol=1e-5)

    def test_an_i64_param_past_2_53_is_refused_by_the_op_as_by_the_call(self):
        k = assoc.loads("carrier: p64\nparams: {n: i64}\nelement: {x: i64}\nstate: {s: i64}\nidentity: {s: 0}\n"
                        "lift: {s: x + n}\nmerge: {s: a.s + b.s}\nlaws: [commutative]\n").compile("cpu", threads=1)
        op = assoc_torch.register(k, name="assoc_tests::p64")
        self.assertEqual(assoc_torch.schema(k), "(Tensor x, int n) -> Tensor")
        ones = torch.ones(1, 3, dtype=torch.int64)
        for f in (lambda n: k(x=ones, n=n)["s"], lambda n: op(x=ones, n=n)):
            with self.assertRaisesRegex(ValueError, r"param 'n' = 9007199254740993 is an i64 past 2\^53"):
                f(2**53 + 1)
            self.assertEqual(f(2**52 + 1).tolist(), [3 * (2**52 + 2)])

    def test_a_param_passed_as_a_tensor_compiles_once(self):
        import torch._dynamo.testing
        k = assoc.load("specs/layer_norm.yaml").compile("cpu", threads=1)
        op = assoc_torch.register(k, name="assoc_tests::ln_eps")
        self.assertEqual(assoc_torch.schema(k), "(Tensor x, Tensor gamma, Tensor beta, Tensor eps) -> "
                                                "(Tensor, Tensor, Tensor)")
        y_at = [a.name for a in k.spec.outputs].index("y")
        x, gamma, beta = torch.randn(3, 64).bfloat16(), torch.rand(64) + 0.5, torch.randn(64)

        def want(eps):
            return torch.nn.functional.layer_norm(x.float(), (64,), gamma, beta, eps=eps)

        # a 0-d tensor of any float dtype, and a number, eagerly; a tensor of another shape or dtype is named
        for eps in (0.25, torch.tensor(0.25), torch.tensor(0.25, dtype=torch.float64),
                    torch.tensor(0.25, dtype=torch.bfloat16)):
            torch.testing.assert_close(op(x, gamma, beta, eps)[y_at], want(0.25), rtol=1e-3, atol=1e-3)
            torch.testing.assert_close(k(x=x, gamma=gamma, beta=beta, eps=eps)["y"], want(0.25), rtol=1e-3,
                                       atol=1e-3)
        with self.assertRaisesRegex(ValueError, r"param 'eps' of layer_norm is a tensor of shape \(1,\): a param "
                                                r"is a number or a 0-d tensor"):
            k(x=x, gamma=gamma, beta=beta, eps=torch.tensor([0.25]))
        with self.assertRaisesRegex(ValueError, r"param 'eps' of layer_norm is a tensor of dtype torch.int64; the "
                                                r"param is f32: a 0-d tensor of a floating dtype"):
            op(x, gamma, beta, torch.tensor(1))
        counts = {}
        for name, make, dynamic in (("tensor", torch.tensor, None), ("float", float, True),
                                    ("direct call", torch.tensor, None)):
            torch._dynamo.reset()
            cnt = torch._dynamo.testing.CompileCounter()
            if name == "direct call":
                def f(x, eps):
                    return k(x=x, gamma=gamma, beta=beta, eps=eps)["y"] * 2 - 1
            else:
                def f(x, eps):
                    return op(x=x, gamma=gamma, beta=beta, eps=eps)[y_at] * 2 - 1
            compiled = torch.compile(f, fullgraph=True, backend=cnt, dynamic=dynamic)
            for i in range(10):
                eps = 0.05 * (i + 1)
                torch.testing.assert_close(compiled(x, make(eps)), want(eps) * 2 - 1, rtol=1e-3, atol=1e-3)
            counts[name] = cnt.frame_count
        # a float is a constant to the first compile, dynamic from the second value on (automatic dynamic),
        # or from the first under dynamic=True
        self.assertEqual(counts, {"tensor": 1, "float": 1, "direct call": 1})

    def test_the_op_takes_any_strides(self):
        k = assoc.load("specs/online_softmax.yaml").compile("cpu", threads=1)
        op = assoc_torch.register(k, name="assoc_tests::softmax_strides")
        xt = torch.randn(40, 3).t()
        self.assertFalse(xt.is_contiguous())
        lse, y = op(xt)
        torch.testing.assert_close(lse, torch.logsumexp(xt, 1), rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(y, torch.softmax(xt, 1), rtol=1e-4, atol=1e-7)
        compiled = torch.compile(lambda x: op(x.t())[0], fullgraph=True, backend="aot_eager")
        torch.testing.assert_close(compiled(xt.t().contiguous()), torch.logsumexp(xt, 1), rtol=1e-5, atol=1e-5)
        # the direct call keeps its error
        with self.assertRaisesRegex(ValueError, r"input 'x' is not C-contiguous"):
            k(x=xt)

    def test_a_direct_call_under_torch_compile_goes_through_an_op(self):
        k = assoc.load("specs/online_softmax.yaml").compile("cpu", threads=1)
        x = torch.randn(3, 40)

        def f(x):
            out = k(x=x * 2)
            return out["y"].sum(1) + out["lse"]

        compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
        torch.testing.assert_close(compiled(x), 1 + torch.logsumexp(x * 2, 1), rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(compiled(x + 1), 1 + torch.logsumexp(x * 2 + 2, 1), rtol=1e-5, atol=1e-5)
        with self.assertRaisesRegex(Exception, r"online_softmax has no input or param 'z'"):
            torch.compile(lambda x: k(z=x)["y"], fullgraph=True, backend="aot_eager")(x)

    def test_op_with_params_and_heads(self):
        D = 16
        k = assoc.load("specs/attention.yaml", dims={"d": D, "dv": D}).compile("cpu", threads=1)
        op = assoc_torch.register(k, name="assoc_tests::attention")
        # the spec's order: element, column, row inputs, then params
        self.assertEqual(assoc_torch.schema(k), "(Tensor k, Tensor v, Tensor q, Tensor scale) -> (Tensor, Tensor)")
        q = torch.randn(2, 5, D, dtype=torch.float16)
        kv = torch.randn(1, 7, D, dtype=torch.float16)
        out, lse = op(q=q, k=kv, v=kv, scale=D ** -0.5)
        self.assertEqual((tuple(out.shape), tuple(lse.shape)), ((2, 5, D), (2, 5)))
        torch.testing.assert_close(op(kv, kv, q, D ** -0.5)[0], out)
        compiled = torch.compile(lambda q, k, v: op(q=q, k=k, v=v, scale=D ** -0.5)[0], fullgraph=True)
        torch.testing.assert_close(compiled(q, kv, kv), out)


def cuda_why_not():
    if torch is None:
        return WHY_NO_TORCH
    if not torch.cuda.is_available():
        return "no CUDA device for torch here"
    from assoc import _lib
    if _lib.optional("assoc_run_device") is None:
        return "this libassoc has no assoc_run_device"
    return None


@unittest.skipIf(cuda_why_not() is not None, cuda_why_not())
class TorchCuda(unittest.TestCase):
    def test_cuda_tensors_stay_on_the_device(self):
        spec = assoc.load("specs/online_softmax.yaml")
        k = spec.compile("gpu")
        x = torch.randn(8, 1000, device="cuda")
        out = k(x=x)
        self.assertEqual(out["y"].device, x.device)
        torch.testing.assert_close(out["y"], torch.softmax(x, 1), rtol=1e-4, atol=1e-6)
        torch.testing.assert_close(out["lse"], torch.logsumexp(x, 1), rtol=1e-5, atol=1e-5)
        with self.assertRaisesRegex(ValueError, r"need a kernel compiled for \"gpu\""):
            spec.compile("cpu")(x=x)

    def test_attention_on_cuda_tensors_matches_sdpa(self):
        H, G, R, L, D = 8, 2, 100, 777, 64
        k = assoc.load("specs/attention.yaml", dims={"d": D, "dv": D}).compile("gpu")
        q = torch.randn(H, R, D, dtype=torch.bfloat16, device="cuda")
        kk = torch.randn(G, L, D, dtype=torch.bfloat16, device="cuda")
        v = torch.randn(G, L, D, dtype=torch.bfloat16, device="cuda")
        out = k(q=q, k=kk, v=v, scale=D ** -0.5)["out"]
        self.assertEqual(out.device, q.device)
        self.assertEqual(tuple(out.shape), (H, R, D))
        # the spec's causal mask of query i over key j: j <= i
        mask = torch.ones(R, L, dtype=torch.bool, device="cuda").tril()
        ref = torch.nn.functional.scaled_dot_product_attention(
            q.float(), kk.float().repeat_interleave(H // G, 0), v.float().repeat_interleave(H // G, 0),
            attn_mask=mask)
        torch.testing.assert_close(out.float(), ref, rtol=2e-2, atol=2e-2)

    def test_paged_decoding_on_cuda_tensors(self):
        from assoc import _lib
        if _lib.optional("assoc_run_paged_device") is None:
            self.skipTest("this libassoc has no assoc_run_paged_device")
        H, G, D, P, B = 8, 2, 64, 16, 3
        spec = assoc.load("specs/attention.yaml", dims={"d": D, "dv": D})
        gpu, cpu = spec.compile("gpu"), spec.compile("cpu", threads=2)
        lens = torch.tensor([40, 0, 17], dtype=torch.int32)
        table = torch.tensor([[4, 0, 2], [-1, -1, -1], [1, 3, -1]], dtype=torch.int32)
        kp = torch.randn(5, P, G, D, dtype=torch.float16)
        vp = torch.randn(5, P, G, D, dtype=torch.float16)
        q = torch.randn(B, H, D, dtype=torch.float16)
        args = dict(scale=D ** -0.5, page_size=P)
        want = cpu(q=q.numpy(), k=kp.numpy(), v=vp.numpy(), block_table=table.numpy(), seq_lens=lens.numpy(),
                   **args)
        got = gpu(q=q.cuda(), k=kp.cuda(), v=vp.cuda(), block_table=table.cuda(), seq_lens=lens.cuda(), **args)
        self.assertEqual(got["out"].device.type, "cuda")
        self.assertEqual(tuple(got["out"].shape), (B, H, D))
        # decoding under the causal mask sees every key of its sequence
        for b in (0, 2):
            torch.testing.assert_close(got["out"][b].float().cpu(), torch.from_numpy(want["out"][b]).float(),
                                       rtol=2e-3, atol=2e-3)
        with self.assertRaisesRegex(ValueError, r"seq_lens is torch on the host"):
            gpu(q=q.cuda(), k=kp.cuda(), v=vp.cuda(), block_table=table.cuda(), seq_lens=lens, **args)

    def test_paged_prefill_on_cuda_tensors(self):
        from assoc import _lib
        if _lib.optional("assoc_run_paged_device") is None:
            self.skipTest("this libassoc has no assoc_run_paged_device")
        H, G, D, B = 8, 2, 64, 4
        spec = assoc.load("specs/attention.yaml", dims={"d": D, "dv": D})
        gpu, cpu = spec.compile("gpu"), spec.compile("cpu", threads=2)
        for P in (16, 256):
            # chunked prefill packed as serving systems pack it: q and out
            # [rows][heads][d], sequence after sequence; a sequence of no
            # keys, one of no queries, lengths off the tile, and one with
            # more queries than keys (its first see none under the mask)
            lens = torch.tensor([300, 0, 37, 5], dtype=torch.int32)
            cu = torch.tensor([0, 17, 20, 20, 29], dtype=torch.int32)
            per = (300 + P - 1) // P
            pages = 1 + per + (37 + P - 1) // P + 1
            order = torch.randperm(pages, dtype=torch.int32)
            table = torch.full((B, per), -1, dtype=torch.int32)
            used = 0
            for b in range(B):
                n = (int(lens[b]) + P - 1) // P
                table[b, :n] = order[used:used + n]
                used += n
            kp = torch.randn(pages, P, G, D, dtype=torch.float16)
            vp = torch.randn(pages, P, G, D, dtype=torch.float16)
            q = torch.randn(int(cu[-1]), H, D, dtype=torch.float16)
            args = dict(scale=D ** -0.5, page_size=P)
            want = cpu(q=q.numpy(), k=kp.numpy(), v=vp.numpy(), block_table=table.numpy(), seq_lens=lens.numpy(),
                       cu_seqlens_q=cu.numpy(), **args)
            got = gpu(q=q.cuda(), k=kp.cuda(), v=vp.cuda(), block_table=table.cuda(), seq_lens=lens.cuda(),
                      cu_seqlens_q=cu.cuda(), max_seqlen_q=17, **args)
            self.assertEqual(tuple(got["out"].shape), (int(cu[-1]), H, D))
            for name in ("out", "lse"):
                w = torch.from_numpy(want[name]).float()
                g = got[name].float().cpu()
                keep = torch.isfinite(w)
                self.assertTrue(torch.equal(keep, torch.isfinite(g)), "%s: the same rows without keys" % name)
                torch.testing.assert_close(g[keep], w[keep], rtol=2e-3, atol=2e-3, msg="%s, pages of %d" % (name, P))
        with self.assertRaisesRegex(ValueError, r"needs max_seqlen_q="):
            gpu(q=q.cuda(), k=kp.cuda(), v=vp.cuda(), block_table=table.cuda(), seq_lens=lens.cuda(),
                cu_seqlens_q=cu.cuda(), **args)


if __name__ == "__main__":
    unittest.main()
