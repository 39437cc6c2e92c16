package ops

// OpInfo names one op of SPEC §2 and says what it computes.
type OpInfo struct{ Name, What string }

// Catalog lists the ops this package provides, by the names their nodes and
// the golden cases use.
var Catalog = []OpInfo{
	{"rope", "rotary embedding, rotate-half, dynamic NTK, position offset (WM listing B.1)"},
	{"logn", "log-n query scaling max(1, log(m+1)/log(L_train)) (TransXSSM app. A)"},
	{"ssd", "chunked state-space-duality scan, final state, one-token step (WM listing 3)"},
	{"conv1d_causal", "depthwise causal convolution over time (Mamba2)"},
	{"attention", "causal attention; paper dynamic mask, doge bias, logn, GQA (WM eq. 4)"},
	{"inner_func_value", "top-k inner-function value V = x ⊙ Σ E[idx] (WM eq. 3)"},
	{"coca_scores", "collinear constrained attention scores (CoCA eq. 10)"},
	{"causal_softmax", "softmax over visible keys, zero after"},
	{"weighted_values", "attention probabilities applied to values"},
	{"cdmoe", "cross-domain MoE with product-key experts (WM listing 8)"},
	{"rmsnorm", "x / sqrt(mean(x²)+eps) * w"},
	{"cross_entropy", "fused stable language-model loss, ignore index"},
	{"embedding", "row gather with scatter-add gradient"},
	{"silu", "x*sigmoid(x)"},
	{"softplus", "log(1+e^x)"},
	{"relu", "max(x, 0)"},
	{"add", "x + y, same shapes (residual connections)"},
	{"residual_add", "x + y closing a pre-norm block; x's two gradients summed in its rmsnorm's backward (SPEC §4)"},
	{"mul", "x ⊙ y, same shapes"},
	{"gated_silu", "x ⊙ silu(z), the SwiGLU and Mamba2 gate"},
	{"linear", "bias-free projection x W over any leading axes"},
	{"linear_cat", "x [W_1 | W_2 | …], several projections of x in one product (SSD's B, C, dt)"},
	{"columns", "x's columns [lo, hi) along the last axis, one part of linear_cat"},
	{"add_bias", "x + b along the last axis (SSD dt_bias)"},
	{"ssd_narrow", "SSD's B, C (RoPE) and dt = softplus(· + dt_bias) taken from linear_cat in one pass (WM listing 4)"},
	{"repeat_heads", "B, C groups repeated to heads (WM listing 4)"},
	{"doge_bias", "exp(A * softplus(dt)), the doge dynamic mask"},
	{"topk_gates", "softmax router kept at the top-k experts (DeepSeekMoE eq. 4-5)"},
	{"load_balance_loss", "expert-level balance loss sum f_i P_i (DeepSeekMoE eq. 12-14)"},
	{"moe_experts", "routed SwiGLU experts, each on its own tokens"},
	{"swiglu", "the MLP (silu(x W1) ⊙ x W3) W2 by blocks of rows (SPEC §3)"},
	{"linear_cross_entropy", "the LM head and its loss, cross_entropy(x W), by blocks of rows (SPEC §2, §4)"},
}
