package ops

// topK writes into idx the indices of the k largest values of s, largest
// first; equal values keep the lower index first (torch.topk's order on the
// papers' reference inputs, which have no ties). k <= len(s) <= cap is small,
// so a selection pass per slot is faster than sorting.
func topK[T floats](idx []int, s []T, k int) {
	for slot := 0; slot < k; slot++ {
		best := -1
		for i, v := range s {
			if taken(idx[:slot], i) {
				continue
			}
			if best < 0 || v > s[best] {
				best = i
			}
		}
		idx[slot] = best
	}
}

func taken(idx []int, i int) bool {
	for _, j := range idx {
		if j == i {
			return true
		}
	}
	return false
}
