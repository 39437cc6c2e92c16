package train

import "testing"

// BenchmarkSSDSizes times the training (train/) and evaluation (eval/)
// steps of the sizes `wm bench` adds for the SSD and MLP pattern alone (its
// --ssd-sizes: d_model 256 at t 512, batch 8, and at t 4096, batch 1), as
// BenchmarkTrainStep and BenchmarkEvalStep time theirs. At batch 1 there is
// one shard whatever the threads, so a step on two cores is as fast as the
// ops' own loops make it: compare -cpu 1 and -cpu 2.
func BenchmarkSSDSizes(b *testing.B) {
	for _, withGrad := range []bool{true, false} {
		name := "eval"
		if withGrad {
			name = "train"
		}
		b.Run(name, func(b *testing.B) {
			for _, z := range []stepSize{{256, 512, 8}, {256, 4096, 1}} {
				benchOne(b, "(SM)4", z, Layout{Shards: 1}, withGrad)
			}
		})
	}
}
