//go:build openblas

package ops

import (
	"math"
	"math/rand"
	"testing"
)

// CDMoE's C kernels take a token's experts in blocks, dots and activations
// first: the outputs and every gradient must be the bits of the experts
// taken one at a time in order, at each kernel level, with more experts
// than a block (a second, partial block) and experts chosen twice.
func TestCDMoEExpertBlocksMatchOneAtATime(t *testing.T) {
	defer setKernelLevel(levelAVX512)
	const nExperts, d, half, nc, heads = 49, 24, 5, 150, 3
	r := rand.New(rand.NewSource(23))
	fill := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		return v
	}
	phi, g, Edown, Eup := fill(d), fill(d), fill(nExperts*d), fill(nExperts*d)
	q, keys := fill(2*heads*half), fill(heads*7*2*half)
	e, s, off := make([]int32, nc), fill(nc), make([]int32, 4*nc)
	for c := range e {
		e[c] = int32(r.Intn(nExperts)) // repeats: the same rows updated twice
		hh := r.Intn(heads)
		for p := 0; p < 2; p++ {
			off[4*c+2*p] = int32((p*heads + hh) * half)
			off[4*c+2*p+1] = int32(((hh*7+r.Intn(7))*2 + p) * half)
		}
	}
	run := func(oneAtATime bool) [][]float32 {
		y, dEdown, dEup, dphi, dq, dkeys := make([]float32, d), make([]float32, nExperts*d), make([]float32, nExperts*d),
			make([]float32, d), make([]float32, len(q)), make([]float32, len(keys))
		bufs := func(lo, hi int) cdmoeTokenBufs {
			return cdmoeTokenBufs{phi: phi, Edown: Edown, Eup: Eup, e: e[lo:hi], s: s[lo:hi], q: q, keys: keys, off: off[4*lo : 4*hi], half: half}
		}
		step := nc
		if oneAtATime {
			step = 1
		}
		for lo := 0; lo < nc; lo += step {
			f := bufs(lo, lo+step)
			f.y = y
			cdmoeExpertsC(f)
			b := bufs(lo, lo+step)
			b.g, b.dEdown, b.dEup, b.dphi, b.dq, b.dkeys = g, dEdown, dEup, dphi, dq, dkeys
			cdmoeExpertsC(b)
		}
		return [][]float32{y, dEdown, dEup, dphi, dq, dkeys}
	}
	names := []string{"y", "dEdown", "dEup", "dphi", "dq", "dkeys"}
	for _, level := range []int{levelAVX2, levelSSE2} {
		if setKernelLevel(level) != level {
			continue
		}
		blocked, single := run(false), run(true)
		for i, name := range names {
			for j := range single[i] {
				if math.Float32bits(blocked[i][j]) != math.Float32bits(single[i][j]) {
					t.Fatalf("level %d: %s[%d] = %v in blocks, %v one expert at a time", level, name, j, blocked[i][j], single[i][j])
				}
			}
		}
	}
}
