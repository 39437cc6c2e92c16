package ops

// The float32 activations in Go, through exp32: the kernels of the pure-Go
// build (activations_purego.go) and the reference the C kernels of the
// openblas build are tested against.

// siluGo32 sets dst[i] = x[i]·σ(x[i]) (times scale[i]) in float32.
func siluGo32(dst, x, scale []float32) {
	x = x[:len(dst)]
	if scale == nil {
		for i, v := range x {
			dst[i] = v * sigmoid32(v)
		}
		return
	}
	scale = scale[:len(dst)]
	for i, v := range x {
		dst[i] = v * sigmoid32(v) * scale[i]
	}
}

// siluGradGo32 sets dst[i] = σ(x)(1 + x(1−σ(x))) at x[i] (times scale[i]).
func siluGradGo32(dst, x, scale []float32) {
	x = x[:len(dst)]
	for i, v := range x {
		s, c := sigmoidPair32(v)
		g := s * (1 + v*c)
		if scale != nil {
			g *= scale[i]
		}
		dst[i] = g
	}
}

// gatedSiLUGo32 sets y = x·z·σ(z).
func gatedSiLUGo32(y, x, z []float32) {
	x, z = x[:len(y)], z[:len(y)]
	for i := range y {
		y[i] = x[i] * z[i] * sigmoid32(z[i])
	}
}

// gatedSiLUGradGo32 sets dx = g·silu(z) and dz = g·x·σ(z)(1 + z(1−σ(z))).
func gatedSiLUGradGo32(dx, dz, g, x, z []float32) {
	dx, dz, x, z = dx[:len(g)], dz[:len(g)], x[:len(g)], z[:len(g)]
	for i, gi := range g {
		s, c := sigmoidPair32(z[i])
		dx[i] = gi * z[i] * s
		dz[i] = gi * x[i] * s * (1 + z[i]*c)
	}
}

// expShiftGo32 sets row[i] = e^(row[i]−m).
func expShiftGo32(row []float32, m float32) {
	for i, v := range row {
		row[i] = exp32(v - m)
	}
}
