package ops

// topK writes into idx the indices of the k largest values of s, largest
// first; equal values keep the lower index first (torch.topk's order on the
// papers' reference inputs, which have no ties). It keeps the best k so far
// sorted and inserts into it, O(len(s)) for the small k of expert retrieval.
func topK[T floats](idx []int, s []T, k int) {
	n := 0
	for i, v := range s {
		if n == k && !(v > s[idx[k-1]]) {
			continue
		}
		j := n
		if n < k {
			n++
		} else {
			j = k - 1
		}
		for j > 0 && v > s[idx[j-1]] {
			idx[j] = idx[j-1]
			j--
		}
		idx[j] = i
	}
}
