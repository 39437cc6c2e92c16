package wmcli

import (
	"os"

	"github.com/wonderful-matrices/wonderful-matrices-go/ops"
)

// peerBLASEnv is the environment that gives the peer the OpenBLAS kernels
// wm runs where wm chose them in place of OpenBLAS's SSE3 fallback
// (ops.BLASCoreReplaced): torch's products go to the same Debian OpenBLAS,
// which falls back the same way on a CPU it does not know, and a peer on
// those kernels would run slower than its framework allows (Debian's torch
// multiplied 1024² matrices at 43 GFLOP/s on one core of an Emerald Rapids
// Xeon with them, 268 with the AVX-512 ones). Nil otherwise: the peer's
// OpenBLAS then chooses as wm's did, or reads the OPENBLAS_CORETYPE both
// inherit.
func peerBLASEnv() []string {
	if _, named := os.LookupEnv("OPENBLAS_CORETYPE"); named || ops.BLASCoreReplaced() == "" {
		return nil
	}
	return []string{"OPENBLAS_CORETYPE=" + ops.BLASCore()}
}

// peerBLASChooser says who chose the kernels of a report's two sides
// (blasCoreNote): blasChooser's words for wm's, and for the peer's where
// wm bench named them to it (peerBLASEnv).
func peerBLASChooser() string {
	if env := peerBLASEnv(); env != nil {
		return blasChooser() + "; the peer's named to it by wm bench, " + env[0]
	}
	return blasChooser()
}
