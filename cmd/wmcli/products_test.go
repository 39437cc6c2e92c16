package wmcli

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// wm products records a small model's step and prints its products by the
// op that asked for them: a summary, rows naming a site of the ops with
// its shape and times, and one row for the sites beyond --top. Bad input
// exits 2 and names the flag.
func TestProducts(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"products"}, "give --pattern"},
		{[]string{"products", "--pattern", "(SX)1"}, "unknown letter"},
		{[]string{"products", "--pattern", "(SM)1", "--steps", "0"}, "--steps 0"},
		{[]string{"products", "--pattern", "(SM)1", "--batch", "3", "--shards", "2"}, "--shards 2"},
	} {
		var out, errb bytes.Buffer
		if code := Run(c.args, &out, &errb); code != 2 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%q: exit %d, %q; want 2 and %q", c.args, code, errb.String(), c.want)
		}
	}
	// Training, every site printed (--top 0): the backward's products are
	// among them, and no row stands for others.
	md := runProductsOK(t, "--top", "0")
	if !strings.Contains(md, "(SM)1 AM d_model 32, seq_len 64, batch 2, 2 shard(s)") || !strings.Contains(md, "training") ||
		!strings.Contains(md, "Mean of 2 recorded steps") {
		t.Errorf("training: the title or summary is wrong:\n%s", md)
	}
	if !strings.Contains(md, "attnBackward") || !strings.Contains(md, "weightGrad") {
		t.Errorf("training: no site of attention's backward or of a weight gradient:\n%s", md)
	}
	if strings.Contains(md, "other sites") {
		t.Errorf("training with --top 0 leaves sites out:\n%s", md)
	}
	// Evaluation, three rows and one for the rest; no backward.
	md = runProductsOK(t, "--top", "3", "--eval")
	if !strings.Contains(md, "evaluation") {
		t.Errorf("evaluation: the title does not say so:\n%s", md)
	}
	if n := len(siteRow.FindAllString(md, -1)); n != 3 {
		t.Errorf("evaluation: %d site rows, want --top's 3:\n%s", n, md)
	}
	if !regexp.MustCompile(`(?m)^\| \d+ other sites \|`).MatchString(md) {
		t.Errorf("evaluation: no row for the sites beyond --top:\n%s", md)
	}
	if strings.Contains(md, "Backward") || strings.Contains(md, "weightGrad") {
		t.Errorf("an evaluation step lists a backward's products:\n%s", md)
	}
}

// siteRow matches a row of wm products' table that names one site.
var siteRow = regexp.MustCompile(`(?m)^\| [a-zA-Z(][^|]* \| \d+ × \d+ × \d+ \| aᵀ?, bᵀ? \|`)

// runProductsOK runs wm products on a small (SM)1 AM with two shards, two
// recorded steps and the extra flags, and returns its table.
func runProductsOK(t *testing.T, extra ...string) string {
	t.Helper()
	args := append([]string{"products", "--pattern", "(SM)1 AM", "--d-model", "32", "--seq-len", "64", "--batch", "2", "--shards", "2",
		"--warm", "1", "--steps", "2"}, extra...)
	var out, errb bytes.Buffer
	if code := Run(args, &out, &errb); code != 0 {
		t.Fatalf("%q: exit %d: %s", args, code, errb.String())
	}
	if n := len(siteRow.FindAllString(out.String(), -1)); n == 0 {
		t.Fatalf("%q: no site rows:\n%s", args, out.String())
	}
	return out.String()
}
