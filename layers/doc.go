// Package layers holds the parameterised modules of SPEC §3: SSD with its
// positional switches, the Mamba2 block, QCAtn, InnerFuncAttn, CoCA
// attention, the SwiGLU MLP, CDMoE, the routed MoE and MoE-SEI.
//
// # Overview
//
// A layer owns its parameters (Param: a name, a shape, an initialiser and,
// once initialised, a value) and builds its part of an expression graph from
// the ops of package ops. Every layer is a Sublayer: it maps x [b,t,d_model]
// to y [b,t,d_model] and the model adds y to its residual stream.
//
// Building happens inside Builder.Run: deep in a layer an op that rejects its
// input panics with a private error type, and Run turns it back into an
// error with the layer's name (STYLE §6, after text/tabwriter's handlePanic).
//
// # Decoding
//
// Forward takes an optional *State. With nil it is the training forward
// pass. With a State it continues from the tokens already seen: SSD layers
// from their recurrent state and the last conv inputs (constant size), the
// attention layers from their key/value caches. After the graph runs,
// State.Commit stores what the step produced for the next one.
//
// # Invariants
//
//   - Parameters are created in a fixed order from one seeded random source,
//     so the same config and seed give the same weights to the bit.
//   - A layer's parameter shapes exist without values (a nil Init), so
//     parameter counts cost no memory.
//
// Package layers imports ops and nothing higher.
package layers
