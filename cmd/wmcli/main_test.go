package wmcli

import (
	"bytes"
	"strings"
	"testing"
)

func TestInfoListsOps(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Run([]string{"info"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"BLAS:", "ssd", "attention", "cdmoe", "coca_scores"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("wm info does not mention %q:\n%s", want, out.String())
		}
	}
}

func TestUnknownCommandFails(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Run([]string{"frobnicate"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), `unknown command "frobnicate"`) {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
}

func TestParams(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Run([]string{"params", "--arch", "cheems", "--d-model", "64", "--experts", "64"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"SESESESESESESEIE", "ssd(rope)", "cdmoe", "ifa(dm=paper)", "**total**"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("wm params does not mention %q:\n%s", want, out.String())
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"params", "--pattern", "(SE)7 IX"}, "position 8"},
		{[]string{"params", "--arch", "llama", "--heads", "3"}, "config.heads"},
		{[]string{"params", "--arch", "cheems", "--experts", "1000"}, "config.cdmoe.experts"},
		{[]string{"params"}, "arch or pattern is required"},
	} {
		out.Reset()
		errb.Reset()
		if code := Run(c.args, &out, &errb); code != 2 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, errb.String(), c.want)
		}
	}
}
