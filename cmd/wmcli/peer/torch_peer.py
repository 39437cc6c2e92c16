"""PyTorch peer of wonderful-matrices-go for `wm bench`: the same layers
(pre-norm residual sublayers S SSD, A attention, I inner-function attention
with the paper's dynamic mask, M SwiGLU MLP, E CDMoE), the same shapes and
defaults, timed the same way (one warm-up, then reps training steps with
AdamW, and reps forward passes without gradients), in float32 on the CPU.

Prints one JSON line: {"train": tokens/s, "eval": tokens/s, "rss_mb": peak,
"blas_core": OpenBLAS's kernels, "sched": the scheduling policy, ...}.
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


def rope(x, base=10000.0):
    """Rotate-half RoPE over the last dim of x [b, t, heads, dim]."""
    t, dim = x.shape[1], x.shape[-1]
    inv = base ** (-torch.arange(0, dim, 2, dtype=torch.float32) / dim)
    ang = torch.arange(t, dtype=torch.float32)[:, None] * inv[None]
    cos = torch.cat([ang.cos(), ang.cos()], -1)[None, :, None]
    sin = torch.cat([ang.sin(), ang.sin()], -1)[None, :, None]
    x1, x2 = x[..., : dim // 2], x[..., dim // 2:]
    return x * cos + torch.cat([-x2, x1], -1) * sin


def segsum(x):
    """Stable segment sums of x [..., T] -> [..., T, T] (-inf above the diagonal)."""
    T = x.size(-1)
    x = x[..., None].expand(*x.shape, T)
    x = x.masked_fill(~torch.tril(torch.ones(T, T, dtype=torch.bool), -1), 0)
    s = torch.cumsum(x, dim=-2)
    return s.masked_fill(~torch.tril(torch.ones(T, T, dtype=torch.bool), 0), -math.inf)


def ssd_scan(X, A, B, C, L):
    """Chunked SSD (Mamba2 listing): X [b,t,h,p] (times dt), A [b,t,h] (times dt), B, C [b,t,h,n]."""
    b, t, h, p = X.shape
    n = B.shape[-1]
    pad = (-t) % L
    if pad:
        X, A, B, C = (F.pad(v, (0, 0) * (v.dim() - 2) + (0, pad)) for v in (X, A, B, C))
    c = X.shape[1] // L
    X, B, C = X.reshape(b, c, L, h, p), B.reshape(b, c, L, h, n), C.reshape(b, c, L, h, n)
    A = A.reshape(b, c, L, h).permute(0, 3, 1, 2)  # b h c l
    Acs = torch.cumsum(A, -1)
    Ld = torch.exp(segsum(A))
    Y_diag = torch.einsum("bclhn,bcshn,bhcls,bcshp->bclhp", C, B, Ld, X)
    decay = torch.exp(Acs[..., -1:] - Acs)
    states = torch.einsum("bclhn,bhcl,bclhp->bchpn", B, decay, X)
    states = torch.cat([torch.zeros_like(states[:, :1]), states], 1)
    dchunk = torch.exp(segsum(F.pad(Acs[..., -1], (1, 0))))
    states = torch.einsum("bhzc,bchpn->bzhpn", dchunk, states)[:, :-1]
    Y_off = torch.einsum("bclhn,bchpn,bhcl->bclhp", C, states, torch.exp(Acs))
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
        B = rope(self.B_proj(x).reshape(b, t, 1, self.n)).expand(b, t, self.h, self.n)
        C = rope(self.C_proj(x).reshape(b, t, 1, self.n)).expand(b, t, self.h, self.n)
        dt = F.softplus(self.dt_proj(x) + self.dt_bias)
        A = -torch.exp(self.A_log)
        y = ssd_scan(X * dt[..., None], A * dt, B, C, self.chunk) + X * self.D[:, None]
        return self.out_proj(y.reshape(b, t, -1))


def causal_attention(q, k, v, gain=None):
    """q, k, v [b, t, h, dh]; gain [h, t] multiplies the softmax weights per key (dynamic mask)."""
    t, dh = q.shape[1], q.shape[-1]
    s = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(dh)
    s = s.masked_fill(~torch.tril(torch.ones(t, t, dtype=torch.bool)), -math.inf)
    w = torch.softmax(s, -1)
    if gain is not None:
        w = w * gain[None, :, None, :t]
    return torch.einsum("bhqk,bkhd->bqhd", w, v)


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
        s = (vx[..., :, None] + vy[..., None, :]).flatten(-2)
        e = (ix[..., :, None] * self.nk + iy[..., None, :]).flatten(-2)
        s, pick = s.topk(self.topk, -1)
        e = e.gather(-1, pick).reshape(b * t, -1)  # (b t) (h k)
        # One gather of the chosen experts' rows each (F.embedding: a dense
        # index_add backward), then batched products per token.
        down, up = F.embedding(e, self.down_embed), F.embedding(e, self.up_embed)  # (b t) (h k) d
        z = torch.bmm(down, phi.reshape(b * t, d, 1)).squeeze(-1)  # (b t) (h k)
        w = F.silu(z * s.reshape(b * t, -1))
        return torch.bmm(w.unsqueeze(1), up).reshape(b, t, d) + phi


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
    out = {}
    for name, grad in (("train", True), ("eval", False)):
        elapsed = 0.0
        for i in range(a.reps + 1):
            t0 = time.perf_counter()
            if grad:
                loss = m(ids, tg)
                loss.backward()
                opt.step()
                opt.zero_grad(set_to_none=True)
            else:
                with torch.no_grad():
                    m(ids, tg)
            if i > 0:
                elapsed += time.perf_counter() - t0
        out[name] = a.batch * a.seq_len * a.reps / elapsed
    out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["params"] = sum(p.numel() for p in m.parameters())
    out["torch"] = torch.__version__
    out["blas_core"] = openblas_core()
    out["sched"] = sched_policy()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
