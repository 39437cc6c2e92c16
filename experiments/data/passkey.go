package data

import (
	"math/rand"
	"strconv"
	"strings"

	"github.com/pkg/errors"
)

// Passkey prompt parts, CoCA appendix B.1 listing 1 (after Mohtashami and
// Jaggi 2023), kept verbatim, "Remeber" included.
const (
	passkeyIntro  = "There is an important info hidden inside a lot of irrelevant text. Find it and memorize them. I will quiz you about the important information there.\n"
	passkeyFiller = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again.\n"
	passkeyLine   = "The passkey is %s. Remeber it. %s is the passkey.\n"
	passkeyAsk    = "What is the passkey?"
	// PasskeyAnswerPrefix is what a model trained on the task should say
	// before the key; the key follows it.
	PasskeyAnswerPrefix = " The passkey is "
)

// PasskeyExample is one prompt and its 5-digit key.
type PasskeyExample struct {
	Prompt string
	Key    string
	// Depth is where the key line sits, in filler lines before it.
	Depth int
}

// Passkey builds a prompt of about length bytes (the byte tokenizer's
// tokens) with a key in [10000, 99999] at a random depth among the filler
// lines (CoCA appendix B.1).
func Passkey(r *rand.Rand, length int) (PasskeyExample, error) {
	fixed := len(passkeyIntro) + len(passkeyLine) - 4 + 10 + len(passkeyAsk)
	lines := (length - fixed) / len(passkeyFiller)
	if lines < 1 {
		return PasskeyExample{}, errors.Errorf("passkey: length %d too short (at least %d)", length, fixed+len(passkeyFiller))
	}
	key := strconv.Itoa(10000 + r.Intn(90000))
	depth := r.Intn(lines + 1)
	var sb strings.Builder
	sb.WriteString(passkeyIntro)
	for i := 0; i < lines; i++ {
		if i == depth {
			sb.WriteString(strings.ReplaceAll(passkeyLine, "%s", key))
		}
		sb.WriteString(passkeyFiller)
	}
	if depth == lines {
		sb.WriteString(strings.ReplaceAll(passkeyLine, "%s", key))
	}
	sb.WriteString(passkeyAsk)
	return PasskeyExample{Prompt: sb.String(), Key: key, Depth: depth}, nil
}

// Text is the whole training text of the example: the prompt, the answer
// prefix, the key and a period.
func (ex PasskeyExample) Text() string {
	return ex.Prompt + PasskeyAnswerPrefix + ex.Key + "."
}

// PasskeyCorrect says whether generated text (after the prompt) contains
// the key (CoCA B.1 examines the next 64 tokens for it).
func PasskeyCorrect(generated, key string) bool { return strings.Contains(generated, key) }
