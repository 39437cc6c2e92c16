package data

import (
	"math/rand"
	"strings"
	"testing"
)

func TestPasskey(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	for _, n := range []int{512, 2048} {
		ex, err := Passkey(r, n)
		if err != nil {
			t.Fatal(err)
		}
		if len(ex.Prompt) > n || len(ex.Prompt) < n-len(passkeyFiller) {
			t.Errorf("length %d for a request of %d", len(ex.Prompt), n)
		}
		if len(ex.Key) != 5 || strings.Count(ex.Prompt, ex.Key) != 2 {
			t.Errorf("key %q appears %d times", ex.Key, strings.Count(ex.Prompt, ex.Key))
		}
		if !strings.HasSuffix(ex.Prompt, "What is the passkey?") || !strings.HasPrefix(ex.Prompt, "There is an important info") {
			t.Errorf("prompt does not follow listing 1")
		}
	}
	if _, err := Passkey(r, 50); err == nil {
		t.Error("a 50-byte passkey prompt was made")
	}
}
