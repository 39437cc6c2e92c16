package ops

// Dot8 is Σ a[q]·b[q] over len(a) in float64 in dot8's order: eight lanes,
// lane l summing the products at q ≡ l mod 8 in order of q (the last
// len(a) mod 8 going to lanes 0, 1, …), the lanes added as
// ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)). The order is fixed, so the result
// is the same bits on every CPU level and core count; float32 runs in C
// under the openblas build. b must be at least as long as a. The trainer's
// gradient-clipping norm sums each parameter's ‖g‖² as Dot8(g, g).
func Dot8[T float32 | float64](a, b []T) float64 {
	if a32, ok := any(a).([]float32); ok {
		return dot8F32(a32, any(b).([]float32))
	}
	return dot8(a, b)
}
