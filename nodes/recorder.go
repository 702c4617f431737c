package nodes

import (
	"time"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/runtime"
)

// Recorder sees, or stands in for, what a run depends on beyond the squad's own code: the models
// it calls and the runtimes its coordinator and workers run on (their tools and streams go
// through them). WithRecorder installs one; package nodes/replay records a run into a cassette
// with one and plays the cassette back with another. One that is also a Sequencer sees, or
// decides, when what runs at once reaches the run's tick; one that is a RunSequencer does so
// for the runs it gives a Sequencer for.
type Recorder interface {
	// Begin is told of each new run as it starts (not as it resumes).
	Begin(info RunInfo)
	// Model wraps each model the squad resolves by name.
	Model(m providers.Model) providers.Model
	// Runtime wraps the runtime of each assignment, the coordinator's included; kind is the
	// worker's kind (Harnessed for the coordinator).
	Runtime(kind string, rt runtime.Runtime) runtime.Runtime
}

// RunInfo is what a Recorder is told of a run as it starts: its id and goal, the clock's reading
// its id was made of, and the squad's options that shape it.
type RunInfo struct {
	ID string `json:"id"`
	// Home is the agent's home folder, as the squad was given it.
	Home             string            `json:"home"`
	Goal             string            `json:"goal"`
	Started          time.Time         `json:"started"`
	Model            string            `json:"model"`
	CoordinatorModel string            `json:"coordinator_model"`
	RoleModels       map[string]string `json:"role_models,omitempty"`
	MaxConcurrent    int               `json:"max_concurrent"`
	Mode             Mode              `json:"mode"`
	// Clock is the squad's clock (WithClock's), which a recorder reads to note when what it
	// records happened.
	Clock func() time.Time `json:"-"`
}

// WithRecorder has rec see the squad's models and runtimes (see Recorder).
func WithRecorder(rec Recorder) Option { return func(c *config) { c.recorder = rec } }

// recorded returns rt wrapped by the squad's recorder, if it has one.
func (c config) recorded(kind string, rt runtime.Runtime) runtime.Runtime {
	if c.recorder == nil {
		return rt
	}
	return c.recorder.Runtime(kind, rt)
}
