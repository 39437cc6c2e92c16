package data

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"unicode"

	"github.com/pkg/errors"

	"github.com/wonderful-matrices/wonderful-matrices-go/internal/atomicfile"
)

// BPE is a byte-level byte-pair-encoding tokenizer (Sennrich et al. 2016,
// on bytes as GPT-2 does): ids 0–255 are bytes, 256–259 the specials (BOS,
// EOS, PAD, UNK, as the byte tokenizer's), and id 260+i is merges[i], the
// concatenation of two earlier tokens. Text is first split into words, a
// word being a run of letters/digits or of other non-space characters with
// the spaces before it attached; merges never cross a word. Encode keeps a
// cache of words, so a BPE is not safe for concurrent use.
type BPE struct {
	merges [][2]int
	rank   map[[2]int]int // pair → index of its merge
	pieces [][]byte       // bytes of every id
	cache  map[string][]int
}

// BPEFile is the JSON form of a BPE tokenizer (tokenizer.json).
type BPEFile struct {
	Type      string   `json:"type"`
	VocabSize int      `json:"vocab_size"`
	Merges    [][2]int `json:"merges"`
}

// TrainBPE learns merges on texts until the vocabulary reaches vocabSize
// (at least ByteVocab), or no pair occurs twice. Ties between equally
// frequent pairs go to the smaller pair, so training is deterministic.
func TrainBPE(texts []string, vocabSize int) (*BPE, error) {
	if vocabSize < ByteVocab {
		return nil, errors.Errorf("bpe: vocabulary size %d is smaller than the %d bytes and specials", vocabSize, ByteVocab)
	}
	pc := newPairCounter(texts)
	var merges [][2]int
	for next := ByteVocab; next < vocabSize; next++ {
		best, n := pc.mostFrequent()
		if n < 2 {
			break
		}
		merges = append(merges, best)
		pc.merge(best, next)
	}
	return newBPE(merges)
}

// bpeWord is a distinct word of the training text as symbols, and its count.
type bpeWord struct {
	syms []int
	n    int
}

// pairCounter counts adjacent symbol pairs over the words, weighted by the
// words' counts, and knows which words hold each pair.
type pairCounter struct {
	words  []bpeWord
	counts map[[2]int]int
	where  map[[2]int]map[int]bool
}

func newPairCounter(texts []string) *pairCounter {
	freq := map[string]int{}
	for _, t := range texts {
		for _, w := range splitWords(t) {
			freq[w]++
		}
	}
	pc := &pairCounter{counts: map[[2]int]int{}, where: map[[2]int]map[int]bool{}}
	for w, n := range freq {
		syms := make([]int, len(w))
		for i := 0; i < len(w); i++ {
			syms[i] = int(w[i])
		}
		pc.words = append(pc.words, bpeWord{syms, n})
	}
	for wi := range pc.words {
		pc.add(wi, 1)
	}
	return pc
}

// add counts (sign 1) or uncounts (sign −1) the pairs of word wi.
func (pc *pairCounter) add(wi int, sign int) {
	s := pc.words[wi].syms
	for i := 0; i+1 < len(s); i++ {
		p := [2]int{s[i], s[i+1]}
		pc.counts[p] += sign * pc.words[wi].n
		if sign > 0 {
			if pc.where[p] == nil {
				pc.where[p] = map[int]bool{}
			}
			pc.where[p][wi] = true
		}
	}
}

// mostFrequent is the pair with the highest count, ties to the smallest
// pair, so that merges do not depend on map order; n < 2 when no pair
// occurs twice.
func (pc *pairCounter) mostFrequent() (best [2]int, n int) {
	n = 1
	for p, c := range pc.counts {
		if c > n || (c == n && c > 1 && less(p, best)) {
			best, n = p, c
		}
	}
	return best, n
}

// merge replaces the pair by the symbol id in every word that holds it.
func (pc *pairCounter) merge(pair [2]int, id int) {
	for wi := range pc.where[pair] {
		pc.add(wi, -1)
		pc.words[wi].syms = mergePair(pc.words[wi].syms, pair, id)
		pc.add(wi, 1)
	}
	delete(pc.counts, pair)
	delete(pc.where, pair)
}

func less(a, b [2]int) bool { return a[0] < b[0] || (a[0] == b[0] && a[1] < b[1]) }

// mergePair replaces every (p[0], p[1]) in syms by id, left to right.
func mergePair(syms []int, p [2]int, id int) []int {
	out := syms[:0:0]
	for i := 0; i < len(syms); i++ {
		if i+1 < len(syms) && syms[i] == p[0] && syms[i+1] == p[1] {
			out = append(out, id)
			i++
			continue
		}
		out = append(out, syms[i])
	}
	return out
}

// splitWords cuts text into words: spaces attach to the run that follows;
// a run is letters and digits, or other non-space characters.
func splitWords(text string) []string {
	var out []string
	start := 0
	class := func(r rune) int {
		switch {
		case unicode.IsSpace(r):
			return 0
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			return 1
		}
		return 2
	}
	prev := -1
	for i, r := range text {
		c := class(r)
		if i > start && c != prev && prev != 0 {
			out = append(out, text[start:i])
			start = i
		}
		prev = c
	}
	if start < len(text) {
		out = append(out, text[start:])
	}
	return out
}

func newBPE(merges [][2]int) (*BPE, error) {
	b := &BPE{merges: merges, rank: map[[2]int]int{}, cache: map[string][]int{}}
	for i := 0; i < 256; i++ {
		b.pieces = append(b.pieces, []byte{byte(i)})
	}
	for i := 256; i < ByteVocab; i++ {
		b.pieces = append(b.pieces, nil)
	}
	for i, m := range merges {
		id := ByteVocab + i
		for _, s := range m {
			if s < 0 || s >= id || (s >= 256 && s < ByteVocab) {
				return nil, errors.Errorf("bpe: merge %d joins %v, not two earlier non-special tokens", i, m)
			}
		}
		if _, dup := b.rank[m]; dup {
			return nil, errors.Errorf("bpe: merge %d (%v) appears twice", i, m)
		}
		b.rank[m] = i
		b.pieces = append(b.pieces, append(append([]byte{}, b.pieces[m[0]]...), b.pieces[m[1]]...))
	}
	return b, nil
}

// Name is "bpe-N" with N the vocabulary size.
func (b *BPE) Name() string { return fmt.Sprintf("bpe-%d", b.VocabSize()) }

// VocabSize is the bytes, the specials and the merges.
func (b *BPE) VocabSize() int { return ByteVocab + len(b.merges) }

// Encode splits text into words and applies the merges to each, lowest
// rank first, as training made them.
func (b *BPE) Encode(text string) []int {
	var ids []int
	for _, w := range splitWords(text) {
		if c, ok := b.cache[w]; ok {
			ids = append(ids, c...)
			continue
		}
		syms := make([]int, len(w))
		for i := 0; i < len(w); i++ {
			syms[i] = int(w[i])
		}
		for len(syms) > 1 {
			best, at := -1, -1
			for i := 0; i+1 < len(syms); i++ {
				if r, ok := b.rank[[2]int{syms[i], syms[i+1]}]; ok && (best < 0 || r < best) {
					best, at = r, i
				}
			}
			if at < 0 {
				break
			}
			syms = mergePair(syms, b.merges[best], ByteVocab+best)
		}
		if len(b.cache) < 1<<16 {
			b.cache[w] = syms
		}
		ids = append(ids, syms...)
	}
	return ids
}

// Decode joins the bytes of ids; specials are dropped, unknown ids are an
// error.
func (b *BPE) Decode(ids []int) (string, error) {
	var sb strings.Builder
	for i, id := range ids {
		if id < 0 || id >= len(b.pieces) {
			return "", errors.Errorf("decode: id %d at %d is outside the vocabulary [0, %d)", id, i, len(b.pieces))
		}
		sb.Write(b.pieces[id])
	}
	return sb.String(), nil
}

// TokenizerFile is the name of a run's tokenizer, beside config.json.
const TokenizerFile = "tokenizer.json"

// JSON is the tokenizer as Save writes it.
func (b *BPE) JSON() ([]byte, error) {
	j, err := json.MarshalIndent(BPEFile{Type: "bpe", VocabSize: b.VocabSize(), Merges: b.merges}, "", " ")
	return append(j, '\n'), errors.Wrap(err, "bpe")
}

// Save writes the tokenizer as JSON to path, atomically.
func (b *BPE) Save(path string) error {
	j, err := b.JSON()
	if err != nil {
		return err
	}
	return atomicfile.WriteBytes(path, j)
}

// LoadBPE reads a tokenizer written by Save, checking every merge.
func LoadBPE(path string) (*BPE, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, errors.Wrap(err, "bpe")
	}
	var f BPEFile
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, errors.Wrapf(err, "bpe %s", path)
	}
	if f.Type != "bpe" || f.VocabSize != ByteVocab+len(f.Merges) {
		return nil, errors.Errorf("bpe %s: type %q and vocab_size %d with %d merges (want \"bpe\" and %d)", path, f.Type, f.VocabSize, len(f.Merges), ByteVocab+len(f.Merges))
	}
	b, err := newBPE(f.Merges)
	return b, errors.Wrapf(err, "bpe %s", path)
}
