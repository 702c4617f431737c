package replay

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/runtime"
)

// Runs records the runs it is asked to of a squad that stays open across runs, as a server's
// does: give it to the squad with nodes.WithRecorder when the squad opens, call Record with a
// run's id and a cassette's path before the run starts, and Finish when it ends. Other runs go
// through it unrecorded. The squad's runs are recorded one at a time: a run that starts while
// another is recorded is not. Its methods are safe for concurrent use.
type Runs struct {
	mu     sync.Mutex
	want   map[string]string // the cassette's path of each run to record, by id, until it begins
	cur    *Recorder         // the run's being recorded, if one is
	curID  string
	failed map[string]error // why a run asked for is not recorded, by id
}

// Record has the run id, when it starts, recorded into the cassette at path.
func (rs *Runs) Record(id, path string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.want == nil {
		rs.want = map[string]string{}
	}
	rs.want[id] = path
}

// Begin starts the run's recording, if Record asked for one (nodes.Recorder).
func (rs *Runs) Begin(info nodes.RunInfo) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	path, ok := rs.want[info.ID]
	delete(rs.want, info.ID)
	if !ok {
		return
	}
	if rs.failed == nil {
		rs.failed = map[string]error{}
	}
	if rs.cur != nil {
		rs.failed[info.ID] = fmt.Errorf("replay: run %s is not recorded in %s: it began while run %s was recorded", info.ID, path, rs.curID)
		return
	}
	rec, err := Record(path)
	if err != nil {
		rs.failed[info.ID] = err
		return
	}
	rec.Begin(info)
	rs.cur, rs.curID = rec, info.ID
}

// current returns the recorder of the run being recorded, or nil.
func (rs *Runs) current() *Recorder {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.cur
}

// Model wraps m so that its calls in a recorded run are recorded (nodes.Recorder).
func (rs *Runs) Model(m providers.Model) providers.Model { return runsModel{m, rs} }

type runsModel struct {
	providers.Model
	rs *Runs
}

func (m runsModel) Generate(ctx context.Context, req providers.Request) (providers.Response, error) {
	if rec := m.rs.current(); rec != nil {
		return rec.Model(m.Model).Generate(ctx, req)
	}
	return m.Model.Generate(ctx, req)
}

// Runtime wraps rt so that its assignments in a recorded run are recorded (nodes.Recorder).
func (rs *Runs) Runtime(kind string, rt runtime.Runtime) runtime.Runtime {
	return runtimeFunc(func(ctx context.Context, a runtime.Assignment, sink runtime.Sink) (runtime.Outcome, error) {
		if rec := rs.current(); rec != nil {
			return rec.Runtime(kind, rt).Run(ctx, a, sink)
		}
		return rt.Run(ctx, a, sink)
	})
}

// SequencerOf returns the recorder of run id if it is the run being recorded, which notes the
// points of its ticks and its answers; nil for another run, which runs as without a Sequencer
// (nodes.RunSequencer).
func (rs *Runs) SequencerOf(id string) nodes.Sequencer {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.cur == nil || rs.curID != id {
		return nil
	}
	return rs.cur
}

// Finish ends the recording of run id of squad s, if it was asked for: with the run's result
// res when the run finished (see Recorder.Finish); a run that failed (runErr), or was paused or
// interrupted, leaves no cassette, since a cassette replays a whole run. It returns an error
// when the recording failed, or could not start.
func (rs *Runs) Finish(s *nodes.Squad, id string, res nodes.Result, runErr error) error {
	rs.mu.Lock()
	rec := rs.cur
	asked := rs.curID == id
	if asked {
		rs.cur, rs.curID = nil, ""
	}
	path, pending := rs.want[id]
	delete(rs.want, id)
	failed := rs.failed[id]
	delete(rs.failed, id)
	rs.mu.Unlock()
	switch {
	case failed != nil:
		return failed
	case pending:
		return fmt.Errorf("replay: run %s did not begin, and is not recorded in %s", id, path)
	case !asked:
		return nil
	case runErr != nil || !res.Finished:
		return errors.Join(rec.Close(), os.Remove(rec.path))
	}
	return rec.Finish(s, res)
}

var _ nodes.RunSequencer = (*Runs)(nil)
