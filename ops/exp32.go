package ops

import "math"

// exp32 is e^x computed in float32: Cody–Waite range reduction x = n·ln2 + r
// with |r| ≤ ln2/2 and the degree-6 minimax polynomial of Cephes' expf
// (Moshier, Cephes Math Library, expf.c), whose relative error is about
// 1 ulp of float32. It overflows to +Inf above 88.72, flushes to 0 below
// −103.97 and returns subnormals between, like math.Exp rounded to float32,
// and NaN for NaN. The activations of every layer (SiLU, sigmoid) and the
// attention softmax call it once per element; math.Exp through float64 was
// 8% of a training step at d_model 256.
//
// Its only branches clamp x to [−104, 89] (NaN passes through them), and 2^n is applied as two
// factors 2^⌊n/2⌋·2^(n−⌊n/2⌋), each a normal float32 for every n in
// [−150, 129], so that overflow and subnormal results round once, in the
// last multiplication.
func exp32(x float32) float32 {
	const (
		log2e = 1.44269504088896341
		c1    = 0.693359375
		c2    = -2.12194440e-4
		// round is 1.5·2^23: adding and subtracting it rounds a float32 of
		// magnitude below 2^22 to the nearest integer, without a call.
		round = 12582912
	)
	if x < -104 {
		x = -104
	}
	if x > 89 {
		x = 89
	}
	n := (x*log2e + round) - round
	r := x - n*c1
	r -= n * c2
	p := ((((((1.9875691500e-4*r+1.3981999507e-3)*r+8.3334519073e-3)*r+4.1665795894e-2)*r+1.6666665459e-1)*r+5.0000001201e-1)*r*r + r) + 1
	e := int32(n)
	h := e >> 1
	return p * math.Float32frombits(uint32(h+127)<<23) * math.Float32frombits(uint32(e-h+127)<<23)
}

// sigmoid32 is 1/(1+e^−x) in float32.
func sigmoid32(x float32) float32 { return 1 / (1 + exp32(-x)) }

// sigmoidPair32 returns σ(x) and 1−σ(x) = σ(−x), the second computed as
// e^−x·σ(x) so that it keeps its precision where σ(x) is close to 1.
func sigmoidPair32(x float32) (s, oneMinus float32) {
	e := exp32(-x)
	if e > math.MaxFloat32 {
		return 0, 1 // x < −88.7: e^−x overflows, and Inf·0 would be NaN
	}
	s = 1 / (1 + e)
	return s, e * s
}
