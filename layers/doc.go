// Package layers will hold the parameterised modules of SPEC §3 (SSD and its
// positional variants, the Mamba2 block, QCAtn, InnerFuncAttn, CoCA
// attention, MLP, CDMoE, routed MoE and MoE-SEI). A layer owns its
// parameters and builds its part of an expression graph from the ops in
// package ops. It imports ops and nothing higher.
package layers
