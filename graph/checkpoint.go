package graph

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"

	"github.com/pkg/errors"
	"gorgonia.org/tensor"

	"github.com/wonderful-matrices/wonderful-matrices-go/internal/atomicfile"
)

// Checkpoint files inside a checkpoint folder.
const (
	// WeightsFile holds the weights in safetensors format, with the config
	// and a SHA-256 of the data in its metadata. It alone is loaded.
	WeightsFile = "model.safetensors"
	// ConfigFile is the resolved config as JSON, for people and tools.
	ConfigFile = "config.json"
)

// Metadata keys of WeightsFile.
const (
	metaFormat = "format"
	metaConfig = "config"
	metaSHA    = "sha256"
	formatName = "wonderful-matrices-go/1"
)

// maxHeader bounds the safetensors header, as the reference reader does.
const maxHeader = 100 << 20

type stEntry struct {
	Dtype   string   `json:"dtype"`
	Shape   []int    `json:"shape"`
	Offsets [2]int64 `json:"data_offsets"`
}

// Save writes m's weights and config to the folder dir (created if needed):
// WeightsFile in the safetensors format (8-byte little-endian header size,
// JSON header, raw little-endian data), with meta (e.g. the training step)
// and the config in its __metadata__, and ConfigFile. Each file is written
// to a temporary name, synced and renamed (SPEC §8): a crash leaves the
// previous checkpoint whole.
func Save(dir string, m *Model, meta map[string]string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return errors.Wrap(err, "save checkpoint")
	}
	cfg, err := m.Config.MarshalIndent()
	if err != nil {
		return errors.Wrap(err, "save checkpoint: config")
	}
	dtype, elem := "F32", 4
	if m.Dtype() == tensor.Float64 {
		dtype, elem = "F64", 8
	}
	header := map[string]any{}
	var off int64
	sum := sha256.New()
	for _, p := range m.Params() {
		if p.Value == nil {
			return errors.Errorf("save checkpoint: parameter %s has no value", p.Name)
		}
		n := int64(p.Size() * elem)
		header[p.Name] = stEntry{Dtype: dtype, Shape: []int(p.Shape), Offsets: [2]int64{off, off + n}}
		off += n
		sum.Write(encode(p.Data()))
	}
	md := map[string]string{}
	for k, v := range meta {
		md[k] = v
	}
	md[metaFormat], md[metaConfig], md[metaSHA] = formatName, string(cfg), hex.EncodeToString(sum.Sum(nil))
	header["__metadata__"] = md
	hj, err := json.Marshal(header)
	if err != nil {
		return errors.Wrap(err, "save checkpoint: header")
	}
	for len(hj)%8 != 0 { // the format pads the header with spaces to 8 bytes
		hj = append(hj, ' ')
	}
	err = atomicfile.Write(filepath.Join(dir, WeightsFile), func(w io.Writer) error {
		if err := binary.Write(w, binary.LittleEndian, uint64(len(hj))); err != nil {
			return err
		}
		if _, err := w.Write(hj); err != nil {
			return err
		}
		for _, p := range m.Params() {
			if _, err := w.Write(encode(p.Data())); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return errors.Wrap(err, "save checkpoint")
	}
	return errors.Wrap(atomicfile.WriteBytes(filepath.Join(dir, ConfigFile), append(cfg, '\n')), "save checkpoint")
}

// encode returns the little-endian bytes of a []float32 or []float64.
func encode(data any) []byte {
	switch d := data.(type) {
	case []float32:
		b := make([]byte, 4*len(d))
		for i, v := range d {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
		return b
	case []float64:
		b := make([]byte, 8*len(d))
		for i, v := range d {
			binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(v))
		}
		return b
	}
	panic("graph: encode of a non-float buffer")
}

// Load reads the checkpoint in dir and returns the model and the metadata
// Save was given. A file cut short, a header that does not parse, data whose
// SHA-256 differs from the one recorded, or weights that do not fit the
// config are errors naming the file.
func Load(dir string) (*Model, map[string]string, error) {
	path := filepath.Join(dir, WeightsFile)
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, errors.Wrap(err, "load checkpoint")
	}
	return decodeCheckpoint(raw, path)
}

// decodeCheckpoint reads the bytes of a model.safetensors file (path names
// it in errors): Load without the file system, for the fuzz test.
func decodeCheckpoint(raw []byte, path string) (*Model, map[string]string, error) {
	header, data, md, err := decodeHeader(raw)
	if err != nil {
		return nil, nil, errors.Wrapf(err, "load checkpoint %s", path)
	}
	cfg, err := ParseConfig([]byte(md[metaConfig]))
	if err != nil {
		return nil, nil, errors.Wrapf(err, "load checkpoint %s", path)
	}
	m, err := New(cfg)
	if err != nil {
		return nil, nil, errors.Wrapf(err, "load checkpoint %s", path)
	}
	if err := loadParams(m, header, data); err != nil {
		return nil, nil, errors.Wrapf(err, "load checkpoint %s", path)
	}
	delete(md, metaFormat)
	delete(md, metaConfig)
	delete(md, metaSHA)
	return m, md, nil
}

// decodeHeader splits a safetensors file into its tensor entries, its data
// and its metadata, checking the size, the format name and the data's
// SHA-256.
func decodeHeader(raw []byte) (header map[string]json.RawMessage, data []byte, md map[string]string, err error) {
	if len(raw) < 8 {
		return nil, nil, nil, errors.Errorf("%d bytes, too short for a safetensors file (cut off mid-write?)", len(raw))
	}
	hn := binary.LittleEndian.Uint64(raw)
	if hn > maxHeader || hn > uint64(len(raw)-8) {
		return nil, nil, nil, errors.Errorf("the header says %d bytes but the file has %d after the size (cut off mid-write?)", hn, len(raw)-8)
	}
	if err := json.Unmarshal(raw[8:8+hn], &header); err != nil {
		return nil, nil, nil, errors.Errorf("the header is not valid JSON (%v)", err)
	}
	data = raw[8+hn:]
	if err := json.Unmarshal(header["__metadata__"], &md); err != nil || md[metaFormat] != formatName {
		return nil, nil, nil, errors.Errorf("no %q metadata: not a checkpoint of this framework", formatName)
	}
	delete(header, "__metadata__")
	if got := sha256.Sum256(data); hex.EncodeToString(got[:]) != md[metaSHA] {
		return nil, nil, nil, errors.Errorf("the data's SHA-256 does not match the header's (%d data bytes): the file is corrupted or cut off", len(data))
	}
	return header, data, md, nil
}

// loadParams sets every parameter of m from its header entry and data: one
// dtype for all, shapes as the config gives them, offsets inside the data,
// and no tensor the config has no parameter for.
func loadParams(m *Model, header map[string]json.RawMessage, data []byte) error {
	var dtype tensor.Dtype
	seen := map[string]bool{}
	for _, p := range m.Params() {
		var e stEntry
		if err := json.Unmarshal(header[p.Name], &e); err != nil || header[p.Name] == nil {
			return errors.Errorf("parameter %s is missing", p.Name)
		}
		seen[p.Name] = true
		dt, elem := tensor.Float32, 4
		switch e.Dtype {
		case "F32":
		case "F64":
			dt, elem = tensor.Float64, 8
		default:
			return errors.Errorf("parameter %s has dtype %s, want F32 or F64", p.Name, e.Dtype)
		}
		if dtype == (tensor.Dtype{}) {
			dtype = dt
		} else if dt != dtype {
			return errors.Errorf("parameter %s is %s, earlier ones %v: mixed dtypes", p.Name, e.Dtype, dtype)
		}
		if !tensor.Shape(e.Shape).Eq(p.Shape) {
			return errors.Errorf("parameter %s has shape %v, the config gives %v", p.Name, e.Shape, p.Shape)
		}
		lo, hi := e.Offsets[0], e.Offsets[1]
		if lo < 0 || hi > int64(len(data)) || hi-lo != int64(p.Size()*elem) {
			return errors.Errorf("parameter %s has data offsets [%d,%d] outside the %d data bytes", p.Name, lo, hi, len(data))
		}
		p.Value = decode(data[lo:hi], dtype, p.Shape)
	}
	var extra []string
	for name := range header {
		if !seen[name] {
			extra = append(extra, name)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return errors.Errorf("tensors the config has no parameter for: %v", extra)
	}
	return nil
}

// decode reads little-endian floats into a new tensor.
func decode(b []byte, dtype tensor.Dtype, s tensor.Shape) *tensor.Dense {
	if dtype == tensor.Float64 {
		d := make([]float64, len(b)/8)
		for i := range d {
			d[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
		}
		return tensor.New(tensor.WithShape(s.Clone()...), tensor.WithBacking(d))
	}
	d := make([]float32, len(b)/4)
	for i := range d {
		d[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return tensor.New(tensor.WithShape(s.Clone()...), tensor.WithBacking(d))
}
