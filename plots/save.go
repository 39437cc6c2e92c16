package plots

import (
	"io"
	"os"
	"path/filepath"

	"github.com/pkg/errors"
	"gonum.org/v1/plot"

	"github.com/wonderful-matrices/wonderful-matrices-go/internal/atomicfile"
)

// save renders p as PNG and SVG next to each other, each written atomically.
func save(p *plot.Plot, base string) ([]string, error) {
	if err := os.MkdirAll(filepath.Dir(base), 0o755); err != nil {
		return nil, errors.Wrap(err, "plot")
	}
	var paths []string
	for _, ext := range []string{"png", "svg"} {
		wt, err := p.WriterTo(Width, Height, ext)
		if err != nil {
			return nil, errors.Wrapf(err, "plot %s.%s", base, ext)
		}
		path := base + "." + ext
		if err := atomicfile.Write(path, func(w io.Writer) error { _, err := wt.WriteTo(w); return err }); err != nil {
			return nil, errors.Wrapf(err, "plot %s", path)
		}
		paths = append(paths, path)
	}
	return paths, nil
}
