package wmcli

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/pkg/errors"

	"github.com/wonderful-matrices/wonderful-matrices-go/internal/atomicfile"
)

// wm bench's journal. A full `wm bench --rounds 5` takes most of an hour;
// with --out F, each finished round of a configuration (wm's and the
// peer's measurements) and each measurement of the BLAS's rate is appended
// to F.journal as one JSON line, synced to disk before the next starts. A
// run that is killed loses at most the round under way: `wm bench --resume`
// with the same flags and the same wm binary reads the journal back,
// measures only the rounds it lacks, and makes each row from its rounds in
// order exactly as an uninterrupted run would have. A run that finishes
// writes F and renames the journal F.rounds.jsonl: every round of both
// sides and every rate measurement, kept beside the report for whoever
// needs more than each side's best (which side moved in a row whose rounds
// straddle a target). Without --resume an existing journal is an error,
// never discarded. A finished run can be given more rounds: --resume with
// a larger --rounds, the same other flags and the same binary starts the
// journal from its F.rounds.jsonl (extendFinished).

// journalSuffix names the journal beside the --out file.
const journalSuffix = ".journal"

// roundsSuffix names the finished run's journal beside the --out file.
const roundsSuffix = ".rounds.jsonl"

// journalSettings are what the measurements of a journal depend on; a
// resumed run must have the same, or its rows would mix two setups.
type journalSettings struct {
	Binary   string      `json:"binary"` // sha256 of the wm executable
	Patterns []string    `json:"patterns"`
	Sizes    []benchSize `json:"sizes"`
	SSDSizes []benchSize `json:"ssd_sizes"`
	Procs    []int       `json:"procs"`
	Experts  int         `json:"experts"`
	Reps     int         `json:"reps"`
	Rounds   int         `json:"rounds"`
	Peer     string      `json:"peer"` // the python, "" for none
	// PeerMalloc is the peer's allocator ("jemalloc", "glibc"; "" for no
	// peer, and in journals written before there was a choice, when the
	// peer ran with glibc's malloc).
	PeerMalloc string `json:"peer_malloc,omitempty"`
	// PeerATen are the ATen kernel sets each peer layout ran with
	// (ATEN_CPU_CAPABILITY, "" for torch's own choice; none in journals
	// written before there was a choice).
	PeerATen []string `json:"peer_aten,omitempty"`
	Torch    string   `json:"torch"` // its torch version
	Pin      bool     `json:"pin"`   // each side confined to its row's cores
}

// journalRound is one round of one configuration: what measureRoundOf keeps
// from it.
type journalRound struct {
	Pattern  string      `json:"pattern"`
	Size     benchSize   `json:"size"`
	Threads  int         `json:"threads"`
	Round    int         `json:"round"`
	WM       benchResult `json:"wm"`
	WMShards int         `json:"wm_shards"`
	// WMShardThreads caps each shard's loops in that layout (0: none, as
	// in journals written before wm tried the cap).
	WMShardThreads int          `json:"wm_shard_threads,omitempty"`
	Peer           *benchResult `json:"peer,omitempty"` // nil without a peer
	PeerLayout     string       `json:"peer_layout,omitempty"`
}

// journalRate is one measurement of the BLAS's rate on Threads threads,
// and of the cores' multiply-add peak beside it (0 in journals written
// before wm measured it, or where it could not).
type journalRate struct {
	Threads int     `json:"threads"`
	GFLOPs  float64 `json:"gflops"`
	FMAPeak float64 `json:"fma_peak_gflops,omitempty"`
}

// journalLine is one line of the journal: exactly one field is set, and
// the first line holds the settings.
type journalLine struct {
	Settings *journalSettings `json:"settings,omitempty"`
	Rate     *journalRate     `json:"rate,omitempty"`
	Round    *journalRound    `json:"round,omitempty"`
}

// roundKey finds a configuration's round in the journal.
type roundKey struct {
	pattern string
	size    benchSize
	threads int
	round   int
}

// benchJournal is an open journal: the rounds and rates read back from it
// and the file further lines are appended to.
type benchJournal struct {
	path   string
	f      *os.File
	rounds map[roundKey]journalRound
	rates  []journalRate
	added  int // rounds this process has added
	// extends is the rounds of the finished run this one adds rounds to
	// (extendFinished), 0 when it does not.
	extends int
}

// openBenchJournal opens the journal beside out for a run with settings s,
// making out's folder first if it does not exist (the report and its
// rounds go there too). Without resume an existing journal is an error;
// with it, its lines are read back (a last line cut short by a crash is
// dropped) and must have been written with the same settings.
func openBenchJournal(out string, s journalSettings, resume bool) (*benchJournal, error) {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return nil, errors.Wrapf(err, "bench --out %s: its folder", out)
	}
	j := &benchJournal{path: out + journalSuffix, rounds: map[roundKey]journalRound{}}
	data, err := os.ReadFile(j.path)
	switch {
	case os.IsNotExist(err):
		data = nil
		if resume {
			if data, err = j.extendFinished(out+roundsSuffix, s); err != nil {
				return nil, err
			}
		}
	case err != nil:
		return nil, errors.Wrap(err, "bench journal")
	case !resume:
		return nil, errors.Errorf("%s holds the measurements of an unfinished run: pass --resume to continue it, or remove the file to start again", j.path)
	}
	good, err := j.read(data, s)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(j.path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, errors.Wrap(err, "bench journal")
	}
	// Drop a torn last line, and start a new journal with its settings.
	if err := f.Truncate(int64(good)); err != nil {
		f.Close()
		return nil, errors.Wrapf(err, "bench journal %s", j.path)
	}
	if _, err := f.Seek(int64(good), io.SeekStart); err != nil {
		f.Close()
		return nil, errors.Wrapf(err, "bench journal %s", j.path)
	}
	j.f = f
	if good == 0 {
		if err := j.append(journalLine{Settings: &s}); err != nil {
			f.Close()
			return nil, err
		}
	}
	return j, nil
}

// extendFinished starts this run's journal from the finished run beside
// out (its F.rounds.jsonl, at path) when that run had the same settings
// but fewer rounds: --resume with a larger --rounds adds rounds to a
// finished report rather than measuring it all again, as a noisy host's
// report cut short at four rounds gets its fifth. The finished run's lines
// are copied, under a settings line with this run's rounds, into a new
// journal synced to disk before anything is measured; F.rounds.jsonl is
// left as it is until the new run finishes and replaces it. It returns the
// journal's bytes, nil when there is no such finished run (then the run
// starts from nothing, as without it).
func (j *benchJournal) extendFinished(path string, s journalSettings) ([]byte, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, errors.Wrap(err, "bench: the finished run beside --out")
	}
	first, rest, _ := bytes.Cut(data, []byte("\n"))
	var l journalLine
	if json.Unmarshal(first, &l) != nil || l.Settings == nil {
		return nil, errors.Errorf("bench: %s line 1: not a run's settings (move the file away to start a new run)", path)
	}
	was := *l.Settings
	if was.Rounds >= s.Rounds {
		return nil, nil // a new run, not more rounds of that one
	}
	was.Rounds = s.Rounds
	if settingsDiff(was, s) != "" {
		return nil, nil
	}
	j.extends = l.Settings.Rounds
	head, err := json.Marshal(journalLine{Settings: &s})
	if err != nil {
		return nil, errors.Wrap(err, "bench journal")
	}
	data = append(append(head, '\n'), rest...)
	if data[len(data)-1] != '\n' { // lines appended next start on a line of their own
		data = append(data, '\n')
	}
	if err := atomicfile.WriteBytes(j.path, data); err != nil {
		return nil, errors.Wrapf(err, "bench journal from %s", path)
	}
	return data, nil
}

// read parses the journal's bytes, checks its settings against s and keeps
// its rounds and rates. It returns the length of the complete lines: a
// last line without its newline is one a crash cut short, and is dropped.
func (j *benchJournal) read(data []byte, s journalSettings) (good int, err error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if good+len(line) == len(data) && (len(data) == 0 || data[len(data)-1] != '\n') {
			break // torn: no newline after it
		}
		var l journalLine
		if err := json.Unmarshal(line, &l); err != nil {
			return 0, errors.Errorf("bench journal %s line %d: %v (remove the file to start again)", j.path, n, err)
		}
		switch {
		case n == 1 && l.Settings == nil:
			return 0, errors.Errorf("bench journal %s line 1: not the run's settings (remove the file to start again)", j.path)
		case l.Settings != nil:
			if n != 1 {
				return 0, errors.Errorf("bench journal %s line %d: settings after line 1 (remove the file to start again)", j.path, n)
			}
			if diff := settingsDiff(*l.Settings, s); diff != "" {
				return 0, errors.Errorf("bench journal %s was written by a run with other settings (%s): run with the same flags and wm binary, or remove the file to start again", j.path, diff)
			}
		case l.Rate != nil:
			j.rates = append(j.rates, *l.Rate)
		case l.Round != nil:
			r := *l.Round
			j.rounds[roundKey{r.Pattern, r.Size, r.Threads, r.Round}] = r
		default:
			return 0, errors.Errorf("bench journal %s line %d: neither settings, a rate nor a round (remove the file to start again)", j.path, n)
		}
		good += len(line) + 1
	}
	if err := sc.Err(); err != nil {
		return 0, errors.Wrapf(err, "bench journal %s", j.path)
	}
	return good, nil
}

// settingsDiff names the settings that differ between a journal's (was)
// and this run's (now), "" when none do.
func settingsDiff(was, now journalSettings) string {
	var diffs []string
	wv, nv, t := reflect.ValueOf(was), reflect.ValueOf(now), reflect.TypeOf(was)
	for i := 0; i < t.NumField(); i++ {
		if !reflect.DeepEqual(wv.Field(i).Interface(), nv.Field(i).Interface()) {
			name := strings.Split(t.Field(i).Tag.Get("json"), ",")[0]
			if name == "binary" {
				diffs = append(diffs, "another wm binary")
				continue
			}
			diffs = append(diffs, fmt.Sprintf("%s %v, now %v", name, wv.Field(i).Interface(), nv.Field(i).Interface()))
		}
	}
	return strings.Join(diffs, "; ")
}

// append writes one line and syncs it to disk.
func (j *benchJournal) append(l journalLine) error {
	b, err := json.Marshal(l)
	if err != nil {
		return errors.Wrap(err, "bench journal")
	}
	if _, err := j.f.Write(append(b, '\n')); err != nil {
		return errors.Wrapf(err, "bench journal %s", j.path)
	}
	return errors.Wrapf(j.f.Sync(), "bench journal %s", j.path)
}

// round returns the journal's record of a configuration's round.
func (j *benchJournal) round(pat string, z benchSize, p, round int) (journalRound, bool) {
	if j == nil {
		return journalRound{}, false
	}
	r, ok := j.rounds[roundKey{pat, z, p, round}]
	return r, ok
}

// addRound records a finished round.
func (j *benchJournal) addRound(r journalRound) error {
	if j == nil {
		return nil
	}
	j.added++
	return j.append(journalLine{Round: &r})
}

// addRate records a measurement of the BLAS's rate on p threads and of
// the cores' multiply-add peak (0: not measured).
func (j *benchJournal) addRate(p int, gflops, fmaPeak float64) error {
	if j == nil {
		return nil
	}
	return j.append(journalLine{Rate: &journalRate{Threads: p, GFLOPs: gflops, FMAPeak: fmaPeak}})
}

// finish closes the journal and, when the run is done (its report
// written), renames it from F.journal to F.rounds.jsonl (replacing an
// earlier run's). Calls after the first do nothing.
func (j *benchJournal) finish(done bool) error {
	if j == nil || j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f = nil
	if done && err == nil {
		err = os.Rename(j.path, strings.TrimSuffix(j.path, journalSuffix)+roundsSuffix)
	}
	return errors.Wrapf(err, "bench journal %s", j.path)
}

// discard closes and removes the journal (nil: none), as after a failed
// host check when it holds no round (hasNoRounds), only its settings and
// BLAS rates.
func (j *benchJournal) discard() error {
	if j == nil || j.f == nil {
		return nil
	}
	j.f.Close()
	j.f = nil
	return errors.Wrap(os.Remove(j.path), "bench journal")
}

// hasNoRounds says whether the journal holds no round, read back or added
// (true for none, nil).
func (j *benchJournal) hasNoRounds() bool { return j == nil || len(j.rounds)+j.added == 0 }

// executableHash is the sha256 of the running wm binary: a resumed run
// must be the same build as the one that wrote the journal.
func executableHash(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", errors.Wrap(err, "hashing the wm binary")
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", errors.Wrap(err, "hashing the wm binary")
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
