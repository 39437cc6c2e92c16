package experiments

import (
	"sync"

	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/train"
)

// Task is what the runner does with an arm: where its data comes from, how
// its batches are made, what is measured and how. An arm holds a Task
// value; the built-in ones are LMTask (TaskLM: the KJV), MQARTask,
// ExtrapolationTask, ThroughputTask and ParamsTask. A package of one's own
// may define another: implement TrainingTask (the runner trains the arm's
// model on the data it gives, then calls its Measure) or MeasuringTask (the
// runner calls Measure on the untrained arm).
type Task interface {
	// Name is the task's name in messages and config.json ("lm", "mqar").
	Name() string
	// Measures lists the measure keys its results have, and the prefixes
	// of those measured at several lengths ("ppl" for "ppl@1024"), so that
	// Definition.Check can refuse a column or plot of no measure.
	Measures() (keys, prefixes []string)
	// Check finds, before any work, the arm's settings that would fail
	// mid-sweep (a length that cannot hold the task's examples).
	Check(a Arm) error
}

// TrainingTask is a Task that trains the arm's model.
type TrainingTask interface {
	Task
	// Data names the data in config.json ("kjv/byte"): runs whose data
	// differ never share a folder, so it must change whenever the data do.
	Data(a Arm) string
	// Prepare gives run its training, validation and (when the task has
	// one) test data, and, to measure the trained model, its Measure. seed
	// is the arm's seed; data that a sweep reuses across arms can be kept
	// in cache.
	Prepare(run *train.Run, a Arm, seed int, cache *Cache) error
}

// MeasuringTask is a Task that measures a model without training it.
type MeasuringTask interface {
	Task
	// Settings are the task's settings as config.json records them (nil
	// for none).
	Settings() any
	// Measure measures arm a (seed draws whatever is random).
	Measure(a Arm, seed int) (train.Result, error)
}

// trainingMeasures are the keys every training task's result has.
var trainingMeasures = []string{"val_ppl", "val_loss", "test_ppl", "test_loss", "train_loss", "tokens_per_s", "steps_per_s", "params", "active_params"}

// TrainingMeasures are the measure keys every training run's result has
// (validation and test perplexity and loss, training loss, speed,
// parameters), for a TrainingTask's Measures to extend with its own.
func TrainingMeasures() []string { return append([]string{}, trainingMeasures...) }

// Cache keeps data a sweep builds once and its arms share (token streams,
// packed sequences), by key. It is safe for concurrent use, and a value's
// make may itself Get other keys.
type Cache struct {
	mu sync.Mutex
	m  map[string]*cacheEntry
}

type cacheEntry struct {
	once sync.Once
	v    any
	err  error
}

// NewCache returns an empty cache.
func NewCache() *Cache { return &Cache{m: map[string]*cacheEntry{}} }

// Get returns the value of key, made by make the first time; an error is
// returned to every caller of that key and make is not tried again in this
// cache.
func (c *Cache) Get(key string, make func() (any, error)) (any, error) {
	c.mu.Lock()
	e, ok := c.m[key]
	if !ok {
		e = &cacheEntry{}
		c.m[key] = e
	}
	c.mu.Unlock()
	e.once.Do(func() { e.v, e.err = make() })
	return e.v, e.err
}
