package data

import (
	"github.com/pkg/errors"
)

// Tokenizer turns text into token ids and back.
type Tokenizer interface {
	// Name identifies the tokenizer in configs ("byte", "bpe-4096").
	Name() string
	// VocabSize is the number of ids, specials included.
	VocabSize() int
	Encode(text string) []int
	// Decode turns ids back into text; ids it does not know are an error.
	Decode(ids []int) (string, error)
}

// Byte-level special tokens, after the 256 byte values.
const (
	// BOS marks the start of a document.
	BOS = 256
	// EOS marks the end of a document.
	EOS = 257
	// PAD fills a sequence (targets at PAD are ignored).
	PAD = 258
	// UNK is reserved (the byte tokenizer never needs it).
	UNK = 259
	// ByteVocab is 256 bytes + 4 specials (SPEC §6: "vocab 256 + specials").
	ByteVocab = 260
)

// ByteTokenizer maps each UTF-8 byte to its value (SPEC §6's default).
type ByteTokenizer struct{}

// Name is "byte".
func (ByteTokenizer) Name() string { return "byte" }

// VocabSize is ByteVocab.
func (ByteTokenizer) VocabSize() int { return ByteVocab }

// Encode returns the bytes of text.
func (ByteTokenizer) Encode(text string) []int {
	ids := make([]int, len(text))
	for i := 0; i < len(text); i++ {
		ids[i] = int(text[i])
	}
	return ids
}

// Decode returns the text of byte ids; specials are dropped.
func (ByteTokenizer) Decode(ids []int) (string, error) {
	b := make([]byte, 0, len(ids))
	for i, id := range ids {
		switch {
		case id >= 0 && id < 256:
			b = append(b, byte(id))
		case id >= 256 && id < ByteVocab:
		default:
			return "", errors.Errorf("decode: id %d at %d is outside the byte vocabulary [0, %d)", id, i, ByteVocab)
		}
	}
	return string(b), nil
}
