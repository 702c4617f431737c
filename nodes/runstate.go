package nodes

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/agiraph/agiraph/runtime/workspace"
)

// runState is what a run knows beyond its nodes and workers: its goal, its stage and contract,
// and how far the coordinator got. It is the one place these facts live. It is kept in the
// run's folder beside the board (_run.json) and changed only through keyed updates
// (board.updateRun), so a tick step or a coordinator's tool call that is run again after a
// crash changes nothing twice, and nothing the first run changed rolls back.
type runState struct {
	Goal     string   `json:"goal"`
	Stage    int      `json:"stage"` // 0 until intake has run
	Contract Contract `json:"contract"`
	// Announced is the last stage the coordinator was told is complete.
	Announced int `json:"announced,omitempty"`
	// Finished is set by finish; in an infinite run it is cleared when the cycle is closed.
	Finished bool   `json:"finished,omitempty"`
	Output   string `json:"output,omitempty"` // the latest output: of the run, or of the last cycle
	Cycle    int    `json:"cycle,omitempty"`  // the cycles an infinite run has closed
	// Question is the coordinator's question to the human, and Answer the human's answer
	// until the coordinator has it.
	Question string `json:"question,omitempty"`
	Answer   string `json:"answer,omitempty"`
	// Asked is the key of the coordinator's last question, which keys the answer's record.
	Asked string `json:"asked,omitempty"`
	// Applied are the keys of the latest updates made (appliedKept of them), so that none is
	// made twice.
	Applied []string `json:"applied,omitempty"`
}

const runFile = "_run.json"

// appliedKept is how many keys of updates made the run's state keeps. An update is made again only
// when a crash cut short what made it, which is the latest of the run's work: the keys of an
// infinite run's cycles long closed need not be kept, and _run.json stays small however long it
// runs.
const appliedKept = 256

// readRunState reads a run's state from its folder; a run without one has the zero state.
func readRunState(dir workspace.Run) (runState, error) {
	var st runState
	err := workspace.ReadJSON(filepath.Join(string(dir), runFile), &st)
	if errors.Is(err, os.ErrNotExist) {
		return runState{}, nil
	}
	if err != nil {
		return runState{}, fmt.Errorf("nodes: run %s: %w (repair the file, or restore it from a backup, then resume)", dir.ID(), err)
	}
	return st, nil
}

// runState returns the run's state.
func (b *board) runState() runState {
	b.mu.RLock()
	defer b.mu.RUnlock()
	st := b.state
	st.Applied = nil
	return st
}

// updateRun changes the run's state with fn and writes it through. A non-empty key makes the
// update happen once: when an update with that key was made before (in this process or
// before a restart), fn is not called. It returns the state as it is afterwards, and whether
// fn was applied.
func (b *board) updateRun(key string, fn func(st *runState)) (runState, bool, error) {
	var (
		st      runState
		applied bool
	)
	err := b.locked(func() (p *pending, err error) {
		st, applied, p, err = b.updateRunLocked(key, fn)
		return p, err
	})
	if err != nil {
		return b.runState(), false, err
	}
	st.Applied = nil
	return st, applied, nil
}

// updateRunLocked is updateRun; b.wmu is held. The state is on disk once the change returned is
// placed (none when the update was made before).
func (b *board) updateRunLocked(key string, fn func(st *runState)) (runState, bool, *pending, error) {
	if err := b.failed(); err != nil {
		return runState{}, false, nil, err
	}
	if key != "" && slices.Contains(b.state.Applied, key) {
		return b.state, false, nil, nil
	}
	st := b.state
	st.Applied = slices.Clone(b.state.Applied)
	fn(&st)
	if key != "" {
		st.Applied = append(st.Applied, key)
		st.Applied = st.Applied[max(len(st.Applied)-appliedKept, 0):]
	}
	var batch workspace.Batch
	if err := batch.AddJSON(filepath.Join(string(b.run), runFile), st); err != nil {
		return runState{}, false, nil, err
	}
	p := b.pend(&batch)
	b.set(func() { b.state = st })
	return st, true, p, nil
}
