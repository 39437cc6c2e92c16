package mylab

import (
	_ "embed"
	"strings"

	"github.com/pkg/errors"

	"github.com/wonderful-matrices/wonderful-matrices-go/experiments"
	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/data"
	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/eval"
	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/train"
	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
)

//go:embed corpus/sums.txt
var sumsText string

// SumsTask is the lab's own task: a byte-level language model of the lines
// "a+b=c" of corpus/sums.txt, whose answer is measured too. Lines 8 and 9
// of every ten are the validation and the test split; the measure
// answer_accuracy is the share of test lines whose every digit of c (and
// the newline after it) is the model's argmax, given the line before and
// "a+b=" (teacher forced).
type SumsTask struct{}

// Name is "sums".
func (SumsTask) Name() string { return "sums" }

// Measures add answer_accuracy to the training measures.
func (SumsTask) Measures() (keys, prefixes []string) {
	return append(experiments.TrainingMeasures(), "answer_accuracy"), nil
}

// Data names the corpus.
func (SumsTask) Data(experiments.Arm) string { return "mylab sums.txt/byte" }

// Check needs sequences long enough for a few lines and the byte vocabulary.
func (SumsTask) Check(a experiments.Arm) error {
	if a.Train.SeqLen < 16 || a.Model.Vocab < data.ByteVocab {
		return errors.Errorf("sums: seq_len %d (need >= 16) and model.vocab %d (need >= %d)", a.Train.SeqLen, a.Model.Vocab, data.ByteVocab)
	}
	return nil
}

// sumsSplit is every tenth line's split: 0–7 train, 8 validation, 9 test.
func sumsSplit() (train, valid, test []string) {
	for i, l := range strings.Split(strings.TrimSpace(sumsText), "\n") {
		switch i % 10 {
		case 8:
			valid = append(valid, l)
		case 9:
			test = append(test, l)
		default:
			train = append(train, l)
		}
	}
	return train, valid, test
}

// Prepare packs the three splits into sequences of the arm's length and
// measures the answer accuracy on the test lines.
func (SumsTask) Prepare(run *train.Run, a experiments.Arm, _ int, _ *experiments.Cache) error {
	tr, va, te := sumsSplit()
	tok := data.ByteTokenizer{}
	var err error
	pack := func(lines []string) data.Sequences {
		if err != nil {
			return data.Sequences{}
		}
		var s data.Sequences
		s, err = data.Pack(tok.Encode(strings.Join(lines, "\n")+"\n"), a.Train.SeqLen)
		return s
	}
	run.Train, run.Valid, run.Test = pack(tr), pack(va), pack(te)
	run.Measure = func(m *graph.Model) (map[string]float64, error) {
		acc, err := answerAccuracy(m, te)
		return map[string]float64{"answer_accuracy": acc}, err
	}
	return err
}

// answerAccuracy feeds each test line after the one before it and checks
// the argmax at every byte of its answer and the newline.
func answerAccuracy(m *graph.Model, lines []string) (float64, error) {
	tok := data.ByteTokenizer{}
	right := 0
	for i, l := range lines {
		q, ans, _ := strings.Cut(l, "=")
		prev := ""
		if i > 0 {
			prev = lines[i-1] + "\n"
		}
		ok, err := eval.Continues(m, tok.Encode(prev+q+"="), tok.Encode(ans+"\n"))
		if err != nil {
			return 0, errors.Wrapf(err, "sums: test line %d", i)
		}
		if ok {
			right++
		}
	}
	return float64(right) / float64(len(lines)), nil
}
