package ops

// Small vector loops of the gather-heavy kernels (CDMoE's experts, the
// attention softmax gradient), unrolled by four with independent float64
// accumulators: a single accumulator makes each iteration wait for the
// previous add (about 4 cycles), which was most of CDMoE's time.

// dot is Σ a[i]·b[i] over len(a) in float64; b must be at least as long.
func dot[T floats](a, b []T) float64 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += float64(a[i]) * float64(b[i])
		s1 += float64(a[i+1]) * float64(b[i+1])
		s2 += float64(a[i+2]) * float64(b[i+2])
		s3 += float64(a[i+3]) * float64(b[i+3])
	}
	for ; i < len(a); i++ {
		s0 += float64(a[i]) * float64(b[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// sum64 is Σ a in float64, in four interleaved partial sums (the order is
// fixed, so the result repeats to the bit; the partial sums keep the adds
// from waiting on each other).
func sum64[T floats](a []T) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += float64(a[i])
		s1 += float64(a[i+1])
		s2 += float64(a[i+2])
		s3 += float64(a[i+3])
	}
	for ; i < len(a); i++ {
		s0 += float64(a[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// axpy sets y[i] += alpha·x[i] over len(x); y must be at least as long.
func axpy[T floats](alpha T, x, y []T) {
	y = y[:len(x)]
	i := 0
	for ; i+4 <= len(x); i += 4 {
		y[i] += alpha * x[i]
		y[i+1] += alpha * x[i+1]
		y[i+2] += alpha * x[i+2]
		y[i+3] += alpha * x[i+3]
	}
	for ; i < len(x); i++ {
		y[i] += alpha * x[i]
	}
}
