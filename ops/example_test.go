package ops_test

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/wonderful-matrices/wonderful-matrices-go/ops"
)

// The loss of uniform logits over 4 classes is log 4, and its gradient with
// respect to each logit is (1/4 - onehot) / tokens.
func ExampleCrossEntropy() {
	g := G.NewGraph()
	logits := G.NewTensor(g, tensor.Float64, 2, G.WithName("logits"), G.WithShape(2, 4), G.WithInit(G.Zeroes()))
	targets := G.NewTensor(g, tensor.Float64, 1, G.WithName("targets"),
		G.WithValue(tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{1, 3}))))
	loss, err := ops.CrossEntropy(logits, targets, ops.ReduceMean)
	if err != nil {
		fmt.Println(err)
		return
	}
	grads, err := G.Grad(loss, logits)
	if err != nil {
		fmt.Println(err)
		return
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("loss %.4f\n", loss.Value().Data())
	fmt.Printf("grad %.3f\n", grads[0].Value().Data())
	// Output:
	// loss 1.3863
	// grad [0.125 -0.375 0.125 0.125 0.125 0.125 0.125 -0.375]
}
