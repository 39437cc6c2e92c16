package ops

import (
	"fmt"
	"math/rand"
	"testing"
)

// Add's and Mul's float32 kernels in this build (C under the openblas tag)
// give the bits of their Go loops, over lengths with and without a tail
// after a vector's width, over values of very different scales.
func TestBinaryKernelsMatchGo(t *testing.T) {
	r := rand.New(rand.NewSource(14))
	for _, n := range []int{1, 7, 8, 33, 1000} {
		a, b, g := spreadFloat32s(r, n), spreadFloat32s(r, n), spreadFloat32s(r, n)
		y, want := make([]float32, n), make([]float32, n)
		addVec(y, a, b)
		addVecGo(want, a, b)
		assertSame32(t, fmt.Sprintf("n=%d add", n), y, want)
		mulVec(y, a, b)
		mulVecGo(want, a, b)
		assertSame32(t, fmt.Sprintf("n=%d mul", n), y, want)
		da, db, wantDa, wantDb := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
		mulGradVec(da, db, g, a, b)
		mulGradVecGo(wantDa, wantDb, g, a, b)
		assertSame32(t, fmt.Sprintf("n=%d mul grad a", n), da, wantDa)
		assertSame32(t, fmt.Sprintf("n=%d mul grad b", n), db, wantDb)
	}
}
