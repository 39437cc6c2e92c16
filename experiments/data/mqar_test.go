package data

import (
	"math/rand"
	"testing"
)

func TestMQAR(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for _, c := range []struct{ T, pairs, want int }{{64, 0, 16}, {256, 0, 64}, {64, 4, 4}, {128, 8, 8}} {
		T, pairs := c.T, c.want
		ids, targets, err := MQAR(r, T, MQARVocab, c.pairs)
		if err != nil {
			t.Fatal(err)
		}
		value := map[int]int{}
		seenV := map[int]bool{}
		for i := 0; i < pairs; i++ {
			k, v := ids[2*i], ids[2*i+1]
			if k < 1 || k >= MQARVocab/2 || v < MQARVocab/2 || v >= MQARVocab {
				t.Fatalf("pair %d = (%d, %d) outside the key/value ranges", i, k, v)
			}
			if _, dup := value[k]; dup || seenV[v] {
				t.Fatalf("key %d or value %d repeated", k, v)
			}
			value[k], seenV[v] = v, true
		}
		labelled := 0
		for i, tg := range targets {
			if tg == Ignore {
				continue
			}
			labelled++
			if i < 2*pairs || (i-2*pairs)%2 != 0 {
				t.Errorf("label at %d: not an even offset after the context", i)
			}
			if value[ids[i]] != tg {
				t.Errorf("query %d: key %d, target %d, want its value %d", i, ids[i], tg, value[ids[i]])
			}
		}
		if labelled != pairs {
			t.Errorf("%d labels, want %d", labelled, pairs)
		}
		if acc := MQARAccuracy(targets, targets); acc != 1 {
			t.Errorf("accuracy of the targets themselves %v", acc)
		}
	}
	if _, _, err := MQAR(r, 2, MQARVocab, 0); err == nil {
		t.Error("length 2 accepted")
	}
	if _, _, err := MQAR(r, 64, MQARVocab, 17); err == nil {
		t.Error("17 pairs in 64 tokens accepted")
	}
}
