"""PyTorch peer of wonderful-matrices-go for `wm bench`: the same layers
(pre-norm residual sublayers S SSD, A attention, I inner-function attention
with the paper's dynamic mask, M SwiGLU MLP, E CDMoE), the same shapes and
defaults, timed the same way (one warm-up, then reps training steps with
AdamW, and reps forward passes without gradients), in float32 on the CPU.

Written as PyTorch is fastest on the CPU, so that wm's ratios measure wm:
constant tables (RoPE's angles, causal masks) made once; attention's scale
and mask inside one baddbmm; the SSD's C·Bᵀ once per chunk for all heads and
its segment sums as differences of one cumulative sum; CDMoE's experts as
dense products; the routed MoE's experts as one padded batched product. No
Python loop runs over tokens, heads or experts. (Debian's torch 1.13 has no
fused attention, and its TorchScript fuser has no LLVM backend: a traced
model trains no faster than this one.) Evaluation is timed both eagerly and
in the form PyTorch's inference path makes of the model (traced, frozen and
torch.jit.optimize_for_inference), and the faster counts: that form was
3–12% faster at d_model 64 on an Intel Xeon, and no faster at 256.

Prints one JSON line: {"train": tokens/s, "eval": tokens/s, "eval_form":
"eager" or "optimized" (the faster), "rss_mb": the peak of training and
eager evaluation, "blas_core": OpenBLAS's kernels, "aten": ATen's kernels
(AVX2, AVX512), "sched": the scheduling policy, "cores": the CPUs it could
run on, ...}.
Run by `wm bench` with /usr/bin/python3 (Debian's python3-torch); not part
of the library.
"""
import argparse
import json
import math
import os
import re
import resource
import time
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F


def expand(pattern):
    """(SM)3 AM -> "SMSMSMAM", as graph.ExpandPattern."""
    p = pattern.replace(" ", "")
    while "(" in p:
        p = re.sub(r"\(([A-Z]+)\)(\d+)", lambda m: m.group(1) * int(m.group(2)), p)
    return p


def default_dff(d):
    return (8 * d // 3 + 7) // 8 * 8


class RMSNorm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.w = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.w


_TABLES = {}


def table(key, make):
    """A constant tensor (RoPE's angles, a causal mask) made once per shape
    and kept, as wm keeps its own: nothing a step recomputes."""
    if key not in _TABLES:
        _TABLES[key] = make()
    return _TABLES[key]


def rope_tables(t, dim, base):
    inv = base ** (-torch.arange(0, dim, 2, dtype=torch.float32) / dim)
    ang = torch.arange(t, dtype=torch.float32)[:, None] * inv[None]
    cos = torch.cat([ang.cos(), ang.cos()], -1)[None, :, None].contiguous()
    sin = torch.cat([ang.sin(), ang.sin()], -1)[None, :, None].contiguous()
    return cos, sin


def rope(x, base=10000.0):
    """Rotate-half RoPE over the last dim of x [b, t, heads, dim]."""
    t, dim = x.shape[1], x.shape[-1]
    cos, sin = table(("rope", t, dim, base), lambda: rope_tables(t, dim, base))
    x1, x2 = x[..., : dim // 2], x[..., dim // 2:]
    return x * cos + torch.cat([-x2, x1], -1) * sin


def causal_bias(t):
    """[t, t]: 0 on and below the diagonal, -inf above (an additive mask)."""
    return table(("bias", t), lambda: torch.full((t, t), -math.inf).triu(1))


def segsum(x):
    """Segment sums of x [..., T] -> [..., T, T]: s[i, j] = x[j+1] + ... + x[i]
    for i >= j, -inf above the diagonal. Formed as differences of one
    cumulative sum (cs[i] - cs[j]) plus the causal mask, which costs O(T²)
    elementwise work where the listing's masked cumulative sum over a
    [T, T] expansion costs a cumsum of T² values and a flip in its
    backward. The difference carries an absolute error of about |cs|·2⁻²⁴
    in the exponent (3·10⁻⁶ where a chunk of 64 decays to e⁻⁴⁴), the order
    of the listing's own rounding in its sums of up to T terms."""
    cs = torch.cumsum(x, -1)
    return cs[..., :, None] - cs[..., None, :] + causal_bias(x.size(-1))


def ssd_scan(X, A, B, C, L):
    """Chunked SSD (Mamba2 listing 1), X [b,t,h,p] (times dt), A [b,t,h]
    (times dt), B, C [b,t,n] shared by the heads (one group, as wm's).
    C·Bᵀ is formed once per chunk, not once per head, and every einsum is
    one batched product."""
    b, t, h, p = X.shape
    n = B.shape[-1]
    pad = (-t) % L
    if pad:
        X, A, B, C = (F.pad(v, (0, 0) * (v.dim() - 2) + (0, pad)) for v in (X, A, B, C))
    c = X.shape[1] // L
    X, B, C = X.reshape(b, c, L, h, p), B.reshape(b, c, L, n), C.reshape(b, c, L, n)
    A = A.reshape(b, c, L, h).permute(0, 3, 1, 2)  # b h c l
    Acs = torch.cumsum(A, -1)
    M = torch.exp(segsum(A)) * torch.einsum("bcln,bcsn->bcls", C, B)[:, None]  # b h c l s
    Y_diag = torch.einsum("bhcls,bcshp->bclhp", M, X)
    decay = torch.exp(Acs[..., -1:] - Acs)  # b h c l
    states = torch.einsum("bcln,bclhp->bchpn", B, X * decay.permute(0, 2, 3, 1)[..., None])
    states = torch.cat([torch.zeros_like(states[:, :1]), states], 1)
    dchunk = torch.exp(segsum(F.pad(Acs[..., -1], (1, 0))))
    states = torch.einsum("bhzc,bchpn->bzhpn", dchunk, states)[:, :-1]
    Y_off = torch.einsum("bcln,bchpn->bclhp", C, states) * torch.exp(Acs).permute(0, 2, 3, 1)[..., None]
    return (Y_diag + Y_off).reshape(b, c * L, h, p)[:, :t]


class SSD(nn.Module):
    def __init__(self, d, heads, n=16, chunk=64):
        super().__init__()
        self.h, self.p, self.n, self.chunk = heads, d // heads, n, chunk
        self.x_proj = nn.Linear(d, d, bias=False)
        self.B_proj = nn.Linear(d, n, bias=False)
        self.C_proj = nn.Linear(d, n, bias=False)
        self.dt_proj = nn.Linear(d, heads, bias=False)
        self.dt_bias = nn.Parameter(torch.zeros(heads))
        self.A_log = nn.Parameter(torch.zeros(heads))
        self.D = nn.Parameter(torch.ones(heads))
        self.out_proj = nn.Linear(d, d, bias=False)

    def forward(self, x):
        b, t, _ = x.shape
        X = self.x_proj(x).reshape(b, t, self.h, self.p)
        B = rope(self.B_proj(x).reshape(b, t, 1, self.n)).reshape(b, t, self.n)
        C = rope(self.C_proj(x).reshape(b, t, 1, self.n)).reshape(b, t, self.n)
        dt = F.softplus(self.dt_proj(x) + self.dt_bias)
        A = -torch.exp(self.A_log)
        y = ssd_scan(X * dt[..., None], A * dt, B, C, self.chunk) + X * self.D[:, None]
        return self.out_proj(y.reshape(b, t, -1))


def causal_attention(q, k, v, gain=None):
    """q, k, v [b, t, h, dh]; gain [h, t] multiplies the softmax weights per
    key (dynamic mask). The scores come from one baddbmm that adds the
    causal mask and scales by 1/√dh inside the product (no separate pass
    over the [t, t] scores for either, nor in the backward)."""
    b, t, h, dh = q.shape
    qh = q.transpose(1, 2).reshape(b * h, t, dh)
    kh = k.transpose(1, 2).reshape(b * h, t, dh)
    s = torch.baddbmm(causal_bias(t), qh, kh.transpose(1, 2), alpha=1 / math.sqrt(dh))
    w = torch.softmax(s, -1)
    if gain is not None:
        w = (w.view(b, h, t, t) * gain[None, :, None, :t]).view(b * h, t, t)
    o = torch.bmm(w, v.transpose(1, 2).reshape(b * h, t, dh))
    return o.view(b, h, t, dh).transpose(1, 2)


class Attention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.h = heads
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = (nn.Linear(d, d, bias=False) for _ in range(4))

    def forward(self, x):
        b, t, d = x.shape
        q = rope(self.q_proj(x).reshape(b, t, self.h, -1))
        k = rope(self.k_proj(x).reshape(b, t, self.h, -1))
        v = self.v_proj(x).reshape(b, t, self.h, -1)
        return self.o_proj(causal_attention(q, k, v).reshape(b, t, d))


class InnerFuncAttn(nn.Module):
    def __init__(self, d, heads, max_pos, values=64, ret=32, topk=1):
        super().__init__()
        self.h, self.topk = heads, topk
        self.q_proj, self.k_proj, self.o_proj = (nn.Linear(d, d, bias=False) for _ in range(3))
        self.v_queries = nn.Linear(d, ret, bias=False)
        self.v_keys = nn.Parameter(torch.randn(values, ret) * 0.02)
        self.v_embed = nn.Parameter(torch.randn(values, d))
        self.dynamic_mask = nn.Parameter(torch.ones(heads, max_pos))

    def forward(self, x):
        b, t, d = x.shape
        q = rope(self.q_proj(x).reshape(b, t, self.h, -1))
        k = rope(self.k_proj(x).reshape(b, t, self.h, -1))
        idx = torch.topk(self.v_queries(x) @ self.v_keys.t(), self.topk, -1).indices
        # F.embedding gathers the chosen rows; its backward is one dense
        # index_add (advanced indexing's is an index_put with accumulate).
        V = (x * F.embedding(idx, self.v_embed).sum(-2)).reshape(b, t, self.h, -1)
        return self.o_proj(causal_attention(q, k, V, self.dynamic_mask).reshape(b, t, d))


class MLP(nn.Module):
    def __init__(self, d, f=None):
        super().__init__()
        f = f or default_dff(d)
        self.w1, self.w3 = nn.Linear(d, f, bias=False), nn.Linear(d, f, bias=False)
        self.w2 = nn.Linear(f, d, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


def pair_candidates(k):
    """Index lists I, J of the pairs (i, j), i-major, with (i+1)(j+1) <= k."""
    pairs = [(i, j) for i in range(k) for j in range(k) if (i + 1) * (j + 1) <= k]
    return torch.tensor([p[0] for p in pairs]), torch.tensor([p[1] for p in pairs])


class CDMoE(nn.Module):
    def __init__(self, d, experts, heads=4, topk=8, ret=64):
        super().__init__()
        self.nk, self.heads, self.topk, self.ret = int(math.isqrt(experts)), heads, topk, ret
        f = default_dff(d)
        self.w_up, self.w_down = nn.Linear(d, f, bias=False), nn.Linear(f, d, bias=False)
        self.queries = nn.Linear(d, heads * ret, bias=False)
        self.keys = nn.Parameter(torch.randn(heads, self.nk, 2, ret // 2) * 0.02)
        self.down_embed = nn.Parameter(torch.randn(experts, d) * 0.02)
        self.up_embed = nn.Parameter(torch.randn(experts, d) * 0.02)

    def forward(self, x):
        b, t, d = x.shape
        phi = self.w_down(F.silu(self.w_up(x)))
        q = self.queries(phi).reshape(b, t, 2, self.heads, self.ret // 2)
        sx = torch.einsum("bthr,hkr->bthk", q[:, :, 0], self.keys[:, :, 0])
        sy = torch.einsum("bthr,hkr->bthk", q[:, :, 1], self.keys[:, :, 1])
        vx, ix = sx.topk(self.topk, -1)
        vy, iy = sy.topk(self.topk, -1)
        # Only pairs (i, j) of the two sorted top-k lists with (i+1)(j+1) <= k
        # can be among the k best sums (each other pair has at least k pairs
        # above it), as wm's search prunes them: 20 candidates at k = 8, not 64.
        I, J = table(("pairs", self.topk), lambda: pair_candidates(self.topk))
        s = vx[..., I] + vy[..., J]
        e = ix[..., I] * self.nk + iy[..., J]
        s, pick = s.topk(self.topk, -1)
        e = e.gather(-1, pick).reshape(b * t, -1)  # (b t) (h k)
        # Every expert's down-projection of every token by one product, the
        # chosen ones gathered; the outputs' weights scattered (added: two
        # heads may choose one expert) into a dense [tokens, experts] matrix
        # and multiplied by the up rows. These products do experts/(heads·k)
        # times the arithmetic of gathering the chosen rows, but they run at
        # BLAS speed: at d_model 64 and 256 this peer trains 1.3x and 2.2x
        # faster than with F.embedding gathers and per-token bmm.
        z = (phi.reshape(b * t, d) @ self.down_embed.t()).gather(-1, e)
        w = F.silu(z * s.reshape(b * t, -1))
        W = w.new_zeros(b * t, self.down_embed.shape[0]).scatter_add(-1, e, w)
        return (W @ self.up_embed).reshape(b, t, d) + phi


class MoE(nn.Module):
    """Routed MoE (R) and MoE-SEI (H) as wm's layers/moe.go: a softmax
    router, the top-k probabilities as gates (not renormalised), SwiGLU
    experts of width (default_dff(d)/k rounded up to 8), the load-balancing
    loss weighted 0.01, and for MoE-SEI one always-on SwiGLU of width
    shared·f. The experts run as one padded batched product: each token's
    assignments are sorted by expert into [experts, capacity, d] (capacity =
    the busiest expert's count, nothing dropped), so there is no Python loop
    over tokens or experts."""

    def __init__(self, d, experts=8, topk=2, shared=0):
        super().__init__()
        self.e, self.k = experts, topk
        f = (default_dff(d) // topk + 7) // 8 * 8
        self.router = nn.Linear(d, experts, bias=False)
        self.w1 = nn.Parameter(torch.randn(experts, d, f) * 0.02)
        self.w3 = nn.Parameter(torch.randn(experts, d, f) * 0.02)
        self.w2 = nn.Parameter(torch.randn(experts, f, d) * 0.02)
        self.shared = MLP(d, shared * f) if shared else None
        self.aux = None

    def forward(self, x):
        b, t, d = x.shape
        n, xf = b * t, x.reshape(b * t, d)
        probs = torch.softmax(self.router(xf), -1)
        g, e = probs.topk(self.k, -1)  # n k
        flat = e.reshape(-1)
        counts = torch.bincount(flat, minlength=self.e)
        order = flat.argsort(stable=True)
        sorted_e = flat[order]
        cap = int(counts.max())
        start = torch.cumsum(counts, 0) - counts
        slot = sorted_e * cap + (torch.arange(n * self.k) - start[sorted_e])
        tok = order // self.k
        X = xf.new_zeros(self.e * cap, d).index_copy(0, slot, xf.index_select(0, tok)).view(self.e, cap, d)
        H = F.silu(torch.bmm(X, self.w1)) * torch.bmm(X, self.w3)
        Y = torch.bmm(H, self.w2).view(self.e * cap, d).index_select(0, slot)
        y = xf.new_zeros(n, d).index_add(0, tok, Y * g.reshape(-1)[order, None])
        # Balance loss (DeepSeekMoE eq. 12–14): f_i = N/(kT)·count_i, P_i = mean prob.
        self.aux = 0.01 * (self.e / (self.k * n) * counts.to(x.dtype) * probs.mean(0)).sum()
        y = y.reshape(b, t, d)
        return y + self.shared(x) if self.shared is not None else y


class Model(nn.Module):
    def __init__(self, pattern, vocab, d, heads, max_pos, experts):
        super().__init__()
        make = {
            "S": lambda: SSD(d, heads), "A": lambda: Attention(d, heads),
            "I": lambda: InnerFuncAttn(d, heads, max_pos), "M": lambda: MLP(d),
            "E": lambda: CDMoE(d, experts), "R": lambda: MoE(d), "H": lambda: MoE(d, shared=1),
        }
        self.embed = nn.Embedding(vocab, d)
        self.norms = nn.ModuleList(RMSNorm(d) for _ in expand(pattern))
        self.blocks = nn.ModuleList(make[c]() for c in expand(pattern))
        self.norm, self.head = RMSNorm(d), nn.Linear(d, vocab, bias=False)

    def forward(self, ids, targets):
        x = self.embed(ids)
        for n, blk in zip(self.norms, self.blocks):
            x = x + blk(n(x))
        logits = self.head(self.norm(x))
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        for blk in self.blocks:
            if getattr(blk, "aux", None) is not None:
                loss = loss + blk.aux
        return loss


def sched_policy():
    """The process's scheduling policy, named as wm bench-one names its own
    (it inherits wm bench's, SCHED_BATCH unless WM_SCHED=normal)."""
    names = {os.SCHED_OTHER: "normal", os.SCHED_BATCH: "batch", os.SCHED_IDLE: "idle",
             os.SCHED_FIFO: "fifo", os.SCHED_RR: "rr"}
    p = os.sched_getscheduler(0) & ~0x40000000  # SCHED_RESET_ON_FORK
    return names.get(p, "policy %d" % p)


def openblas_core():
    """The kernels OpenBLAS chose (openblas_get_corename), as wm bench-one
    reports its own: torch's products go to the same Debian libopenblas, and
    both sides must run the same ones. "" when torch uses another BLAS."""
    try:
        import ctypes
        lib = ctypes.CDLL("libopenblas.so.0")
        lib.openblas_get_corename.restype = ctypes.c_char_p
        return lib.openblas_get_corename().decode()
    except (OSError, AttributeError):
        return ""


def aten_kernels():
    """The instruction set of ATen's kernels torch runs ("AVX2", "AVX512",
    "NO AVX"), as torch.__config__.show() names it: its own choice, or the
    one ATEN_CPU_CAPABILITY names. "" when torch does not say."""
    m = re.search(r"CPU capability usage: ([^\n]+)", torch.__config__.show())
    return m.group(1).strip() if m else ""


def inference_form(m, ids, tg):
    """m as PyTorch's inference path runs it: traced, frozen (parameters
    folded in as constants) and torch.jit.optimize_for_inference'd (which
    may move products to oneDNN and fuses what it can), checked to give
    m's loss on the batch it will be timed on."""
    m.eval()
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the tracer's notes on Python ints
        f = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.trace(m, (ids, tg), check_trace=False)))
        want, got = m(ids, tg).item(), f(ids, tg).item()
    if not math.isclose(want, got, rel_tol=1e-4):
        raise SystemExit("torch_peer: the optimized evaluation form's loss %r differs from the model's %r" % (got, want))
    return f


def tokens_per_second(step, tokens, reps):
    """Tokens/s of step over reps timed calls after one warm-up."""
    elapsed = 0.0
    for i in range(reps + 1):
        t0 = time.perf_counter()
        step()
        if i > 0:
            elapsed += time.perf_counter() - t0
    return tokens * reps / elapsed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pattern", required=True)
    ap.add_argument("--d-model", type=int, required=True)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--seq-len", type=int, required=True)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--experts", type=int, default=1024)
    ap.add_argument("--vocab", type=int, default=256)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(a.threads)
    m = Model(a.pattern, a.vocab, a.d_model, a.heads, a.seq_len, a.experts)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4, weight_decay=0.01)
    ids = torch.randint(0, a.vocab, (a.batch, a.seq_len))
    tg = torch.randint(0, a.vocab, (a.batch, a.seq_len))
    tokens = a.batch * a.seq_len

    def train_step():
        loss = m(ids, tg)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    def eval_step(f):
        with torch.no_grad():
            f(ids, tg)

    out = {"train": tokens_per_second(train_step, tokens, a.reps)}
    eager = tokens_per_second(lambda: eval_step(m), tokens, a.reps)
    # The peak before the inference form is made, so that its copy of the
    # weights and its tracing count for nothing.
    out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    f = inference_form(m, ids, tg)
    optimized = tokens_per_second(lambda: eval_step(f), tokens, a.reps)
    out["eval"], out["eval_form"] = max((eager, "eager"), (optimized, "optimized"))
    out["params"] = sum(p.numel() for p in m.parameters())
    out["torch"] = torch.__version__
    out["blas_core"] = openblas_core()
    out["aten"] = aten_kernels()
    out["sched"] = sched_policy()
    out["cores"] = len(os.sched_getaffinity(0))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
