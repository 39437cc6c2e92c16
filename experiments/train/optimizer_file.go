package train

import (
	"bytes"
	"crypto/sha256"
	"encoding/gob"
	"io"
	"os"

	"github.com/pkg/errors"

	"github.com/wonderful-matrices/wonderful-matrices-go/internal/atomicfile"
	"github.com/wonderful-matrices/wonderful-matrices-go/layers"
)

const optimizerFile = "optimizer.gob"

// saveOptimizer writes the AdamW state (gob) followed by its SHA-256.
func saveOptimizer(path string, o *AdamW) error {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(o); err != nil {
		return errors.Wrap(err, "optimizer state")
	}
	sum := sha256.Sum256(buf.Bytes())
	return atomicfile.Write(path, func(w io.Writer) error {
		if _, err := w.Write(buf.Bytes()); err != nil {
			return err
		}
		_, err := w.Write(sum[:])
		return err
	})
}

// loadOptimizer reads the state into o and checks it fits params.
func loadOptimizer(path string, o *AdamW, params layers.Params) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return errors.Wrap(err, "optimizer state")
	}
	if len(b) < sha256.Size {
		return errors.Errorf("optimizer state %s: %d bytes, cut off", path, len(b))
	}
	body, sum := b[:len(b)-sha256.Size], b[len(b)-sha256.Size:]
	if got := sha256.Sum256(body); !bytes.Equal(got[:], sum) {
		return errors.Errorf("optimizer state %s: SHA-256 mismatch, the file is corrupted or cut off", path)
	}
	var s AdamW
	if err := gob.NewDecoder(bytes.NewReader(body)).Decode(&s); err != nil {
		return errors.Wrapf(err, "optimizer state %s", path)
	}
	if len(s.M) != len(params) {
		return errors.Errorf("optimizer state %s: %d tensors, the model has %d parameters", path, len(s.M), len(params))
	}
	if len(s.Names) == 0 { // written before names were kept: the model's order
		for _, p := range params {
			s.Names = append(s.Names, p.Name)
		}
	}
	for i, p := range params {
		if s.Names[i] != p.Name {
			return errors.Errorf("optimizer state %s: tensor %d is %s, the model's parameter %d is %s", path, i, s.Names[i], i, p.Name)
		}
		if len(s.M[i]) != p.Size() || len(s.V[i]) != p.Size() {
			return errors.Errorf("optimizer state %s: tensor %d has %d values, %s has %d", path, i, len(s.M[i]), p.Name, p.Size())
		}
	}
	*o = s
	return nil
}
