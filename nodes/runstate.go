package nodes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agiraph/agiraph/hooks"
	"github.com/agiraph/agiraph/nodes/store"
	"github.com/agiraph/agiraph/nodes/workspace"
)

// runState is what a run knows beyond its nodes and workers: its goal, its stage and contract,
// and how far the coordinator got. It is the one place these facts live: in the squad's store,
// the document "run/<id>". updateRun changes it in memory at once and in the store with the
// step that changed it (see Squad.commit), so a step run again after a crash finds it as the
// step found it the first time.
type runState struct {
	Goal     string   `json:"goal"`
	Stage    int      `json:"stage"` // 0 until intake has run
	Contract Contract `json:"contract"`
	// Announced is the last stage the coordinator was told is complete.
	Announced int `json:"announced,omitempty"`
	// Finished is set by finish; in an infinite run it is cleared when the cycle is closed.
	Finished bool   `json:"finished,omitempty"`
	Output   string `json:"output,omitempty"` // the latest output: of the run, or of the last cycle
	// Result is the latest output's result, valid against the squad's output schema.
	Result json.RawMessage `json:"result,omitempty"`
	Cycle  int             `json:"cycle,omitempty"` // the cycles an infinite run has closed
	// Question is the coordinator's question to the human, and Answer the human's answer
	// until the coordinator has it.
	Question string `json:"question,omitempty"`
	Answer   string `json:"answer,omitempty"`
	// Approval is the tool call the question asks the human to approve, when it is one.
	Approval *hooks.Approval `json:"approval,omitempty"`
	// Asked is the key of the coordinator's last question, which keys the answer's record.
	Asked string `json:"asked,omitempty"`
	// AnswerBy is when the question ends without an answer (WithAnswerTimeout), with Default
	// when the coordinator gave one.
	AnswerBy time.Time `json:"answer_by,omitzero"`
	Default  string    `json:"default,omitempty"`
	// CoordModel is the coordinator's model in this run, when it is not the squad's (a fork
	// given another: see ForkWithCoordinatorModel).
	CoordModel string `json:"coordinator_model,omitempty"`
	// Until is what the coordinator's wait asked to be woken by ("" any news; untilStage not
	// the nodes that complete), until its next turn.
	Until string `json:"until,omitempty"`
	// Home is the id of the home the run last opened in (see homeID): the folder of the run
	// another home kept is behind the store.
	Home string `json:"home,omitempty"`
	// Updated is when the state last changed.
	Updated time.Time `json:"updated"`
}

// runFile is where a run's state was kept before the store held it; a run that has no state in
// the store has it read from there.
const runFile = "_run.json"

// runKey is the store's key of run id's state.
func runKey(id string) string { return "run/" + id }

// readRunState reads a run's state from the store, with its version; a run without one has the
// zero state.
func readRunState(ctx context.Context, st store.Store, dir workspace.Run) (runState, int64, error) {
	d, err := st.Doc(ctx, runKey(dir.ID()))
	if err != nil {
		return runState{}, 0, fmt.Errorf("nodes: run %s: %w", dir.ID(), err)
	}
	return decodeRunState(d, dir)
}

// decodeRunState reads the run's state from d, its document in the store, or, when the store
// has none (d.Value is nil), from the run's _run.json.
func decodeRunState(d store.Doc, dir workspace.Run) (runState, int64, error) {
	var rs runState
	if d.Value != nil {
		if err := json.Unmarshal(d.Value, &rs); err != nil {
			return runState{}, 0, fmt.Errorf("nodes: run %s: its state in the store is damaged: %w", dir.ID(), err)
		}
		return rs, d.Version, nil
	}
	err := workspace.ReadJSON(filepath.Join(string(dir), runFile), &rs)
	if errors.Is(err, os.ErrNotExist) {
		return runState{}, 0, nil
	}
	if err != nil {
		return runState{}, 0, fmt.Errorf("nodes: run %s: %w (repair the file, or restore it from a backup, then resume)", dir.ID(), err)
	}
	return rs, 0, nil
}

// runState returns the run's state.
func (b *board) runState() runState {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.state
}

// updateRun changes the run's state with fn: in memory, and in the store with ctx's step (see
// Squad.commit), versioned as the board's changes are (see board.change); when the change cannot
// be committed (or attached to the step), the state stays as it was. It returns the state as it
// is afterwards.
func (r *run) updateRun(ctx context.Context, fn func(st *runState)) (runState, error) {
	b := r.board
	b.wmu.Lock()
	defer b.wmu.Unlock()
	old := b.runState()
	st := old
	fn(&st)
	st.Updated = r.cfg.now().UTC()
	b.version++
	var ch store.Change
	if err := ch.PutVersion(runKey(r.id), b.version, st); err != nil {
		return old, err
	}
	recorded, err := b.record(&ch)
	if err != nil {
		return old, err
	}
	b.setState(st)
	if err := b.save(ctx, ch, recorded); err != nil {
		b.setState(old)
		return old, err
	}
	return st, nil
}

// setState sets the run's state in memory; b.wmu is held.
func (b *board) setState(st runState) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.state = st
}
