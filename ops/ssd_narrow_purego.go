//go:build !openblas

package ops

// Without the openblas build tag (no cgo), SSDNarrow's row passes are the
// Go loops of ssd_narrow.go.

func narrowSplit32(B, C, dt, all, bias []float32, gn int) { narrowSplitGo(B, C, dt, all, bias, gn) }
func narrowJoin32(dst, B, C, dt []float32, gn int)        { narrowJoinGo(dst, B, C, dt, gn) }
