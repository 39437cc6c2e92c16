package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestInfoListsOps(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"info"}, &out, &errb); code != 0 {
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
	if code := run([]string{"frobnicate"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), `unknown command "frobnicate"`) {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
}
