package ops

import (
	"fmt"

	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Conv1DCausal is the depthwise causal convolution over time of Mamba2 (and of
// the `conv1d+D` SSD variant, Wonderful Matrices Table 1): x [b,t,c],
// w [c,k], optional bias [c] (nil for none),
// y[t,c] = bias[c] + Σ_i w[c,i] * x[t-k+1+i, c], zeros before the start.
// Decoding keeps the last k-1 inputs and convolves them with the new one.
func Conv1DCausal(x, w, bias *G.Node) (*G.Node, error) {
	xs, ws := x.Shape(), w.Shape()
	if xs.Dims() != 3 || ws.Dims() != 2 || ws[0] != xs[2] || ws[1] < 1 {
		return nil, errors.Errorf("conv1d_causal: want x [b,t,c] and w [c,k], got x %v, w %v", xs, ws)
	}
	k := conv1dKernel{x: xs.Clone(), k: ws[1], bias: bias != nil}
	if bias == nil {
		return apply(k, x, w)
	}
	if bs := bias.Shape(); bs.Dims() != 1 || bs[0] != xs[2] {
		return nil, errors.Errorf("conv1d_causal: bias must be [c]=[%d], got %v", xs[2], bs)
	}
	return apply(k, x, w, bias)
}

type conv1dKernel struct {
	x    tensor.Shape
	k    int
	bias bool
}

func (k conv1dKernel) name() string  { return "conv1d_causal" }
func (k conv1dKernel) attrs() string { return fmt.Sprintf("k=%d,bias=%v", k.k, k.bias) }
func (k conv1dKernel) inShapes() []tensor.Shape {
	s := []tensor.Shape{k.x, {k.x[2], k.k}}
	if k.bias {
		s = append(s, tensor.Shape{k.x[2]})
	}
	return s
}
func (k conv1dKernel) outShape() tensor.Shape { return k.x }
func (k conv1dKernel) diffWRT() []bool {
	if k.bias {
		return []bool{true, true, true}
	}
	return []bool{true, true}
}

func (k conv1dKernel) forward(in []any, out any) error {
	switch y := out.(type) {
	case []float32:
		conv1dForward(y, as[float32](in), k)
	case []float64:
		conv1dForward(y, as[float64](in), k)
	}
	return nil
}

func (k conv1dKernel) backward(in []any, out, dOut any, dIn []any) error {
	switch dy := dOut.(type) {
	case []float32:
		conv1dBackward(as[float32](dIn), dy, as[float32](in), k)
	case []float64:
		conv1dBackward(as[float64](dIn), dy, as[float64](in), k)
	}
	return nil
}

func conv1dForward[T floats](y []T, in [][]T, k conv1dKernel) {
	x, w := in[0], in[1]
	t, c := k.x[1], k.x[2]
	parallelFor(k.x[0], func(b int) {
		for s := 0; s < t; s++ {
			yr := y[(b*t+s)*c : (b*t+s+1)*c]
			if k.bias {
				copy(yr, in[2])
			}
			for i := 0; i < k.k; i++ {
				src := s - k.k + 1 + i
				if src < 0 {
					continue
				}
				xr := x[(b*t+src)*c : (b*t+src+1)*c]
				for ch := range yr {
					yr[ch] += w[ch*k.k+i] * xr[ch]
				}
			}
		}
	})
}

// conv1dBackward: dx[s] = Σ_i w[:,i] dy[s+k-1-i]; dw[:,i] = Σ dy[s] x[s-k+1+i];
// dbias = Σ dy.
func conv1dBackward[T floats](dIn [][]T, dy []T, in [][]T, k conv1dKernel) {
	x, w := in[0], in[1]
	B, t, c := k.x[0], k.x[1], k.x[2]
	parts := make([][]float64, B)
	parallelFor(B, func(b int) {
		dw := make([]float64, c*(k.k+1))
		for s := 0; s < t; s++ {
			dyr := dy[(b*t+s)*c : (b*t+s+1)*c]
			for ch, g := range dyr {
				dw[c*k.k+ch] += float64(g)
			}
			for i := 0; i < k.k; i++ {
				src := s - k.k + 1 + i
				if src < 0 {
					continue
				}
				xr := x[(b*t+src)*c : (b*t+src+1)*c]
				dxr := dIn[0][(b*t+src)*c : (b*t+src+1)*c]
				for ch, g := range dyr {
					dxr[ch] += w[ch*k.k+i] * g
					dw[ch*k.k+i] += float64(g) * float64(xr[ch])
				}
			}
		}
		parts[b] = dw
	})
	for _, p := range parts {
		for j := 0; j < c*k.k; j++ {
			dIn[1][j] += T(p[j])
		}
		if k.bias {
			for ch := 0; ch < c; ch++ {
				dIn[2][ch] += T(p[c*k.k+ch])
			}
		}
	}
}
