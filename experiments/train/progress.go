package train

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// progress draws a bar with rate and ETA on a terminal, or writes a plain
// line about twenty times a run otherwise.
type progress struct {
	w     io.Writer
	tty   bool
	total int
	start int
	began time.Time
	every int
}

func newProgress(w io.Writer, total, start int) *progress {
	p := &progress{w: w, total: total, start: start, began: time.Now(), every: max(1, total/20)}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

func (p *progress) update(step int, m Metrics) {
	if p.w == nil {
		return
	}
	done := step - p.start
	el := time.Since(p.began)
	rate := float64(done) / el.Seconds()
	eta := time.Duration(float64(p.total-step)/rate) * time.Second
	val := ""
	if m.ValPPL != nil {
		val = fmt.Sprintf(" val_ppl %.2f", *m.ValPPL)
	}
	if p.tty {
		const width = 30
		fill := width * step / p.total
		fmt.Fprintf(p.w, "\r[%s%s] %d/%d loss %.4f%s %.2f steps/s ETA %s ", strings.Repeat("=", fill),
			strings.Repeat(" ", width-fill), step, p.total, m.CE, val, rate, eta.Round(time.Second))
		return
	}
	if step%p.every == 0 || step == p.total || m.ValPPL != nil {
		fmt.Fprintf(p.w, "step %d/%d loss %.4f lr %.2e grad_norm %.3f%s %.0f tokens/s ETA %s\n",
			step, p.total, m.CE, m.LR, m.GradNorm, val, m.TokensPerS, eta.Round(time.Second))
	}
}

func (p *progress) done() {
	if p.w != nil && p.tty {
		fmt.Fprintln(p.w)
	}
}
