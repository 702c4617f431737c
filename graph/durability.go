package graph

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/agiraph/agiraph/checkpoint"
)

// Durability says when a run's checkpoints and task writes reach the saver.
type Durability uint8

// The durability modes.
const (
	// DurabilitySync saves every task write and checkpoint before the run goes on: a crash loses at
	// most the tasks that were running. The default.
	DurabilitySync Durability = iota
	// DurabilityAsync saves them in order from a background writer while the run goes on; all are
	// saved before the run returns. A crash may lose the last few steps, never the order.
	DurabilityAsync
	// DurabilityExit saves only the run's last position (with a full snapshot of the state), when
	// the run ends, fails, pauses or is cancelled. A crash loses the whole run.
	DurabilityExit
)

// WithDurability chooses when checkpoints are saved (default DurabilitySync).
func WithDurability(d Durability) Option { return func(c *config) { c.durability = d } }

// flushTimeout bounds the final saves of a run whose context was cancelled.
const flushTimeout = 30 * time.Second

// WithInputSavedAside has a new thread's first checkpoint, the one its input makes, saved while
// the first step runs rather than before it (with DurabilitySync, the default; other modes save it
// as they save any): the step's own save waits for it, and reports its failure. A crash before it
// is saved leaves the thread without checkpoints, to be run from its input again — what a crash
// during the first step leaves otherwise, since that step's task runs again from the input. It
// takes a commit off the run's path, which shows when the first step is quick.
func WithInputSavedAside() Option { return func(c *config) { c.inputAside = true } }

// writer is a run's way to the saver, honouring its durability mode.
type writer struct {
	saver checkpoint.Saver
	mode  Durability

	// WithInputSavedAside: closed once the input's checkpoint is saved, with asideErr set.
	aside    chan struct{}
	asideErr error

	// DurabilityAsync: operations run in order by one goroutine.
	ops  chan func(context.Context) error
	done chan struct{}

	mu  sync.Mutex
	err error // the first failure of an asynchronous save
	// DurabilityExit: the latest checkpoint and the writes of tasks, not saved yet.
	pending   *checkpoint.Checkpoint
	pendingNS checkpoint.Config
	writes    []checkpoint.Write
	savedID   string // the newest checkpoint of this run's namespace that is in the saver
}

func newWriter(saver checkpoint.Saver, mode Durability) *writer {
	return &writer{saver: saver, mode: mode}
}

// putAside saves cp, a new thread's first checkpoint, under ns in the background (see
// WithInputSavedAside) and returns the config addressing it; the writer's next save waits for it.
func (w *writer) putAside(ctx context.Context, ns checkpoint.Config, cp checkpoint.Checkpoint) checkpoint.Config {
	w.aside = make(chan struct{})
	go func() {
		defer close(w.aside)
		if _, err := w.saver.Put(ctx, ns, cp); err != nil {
			w.asideErr = err
		}
	}()
	return checkpoint.Config{ThreadID: ns.ThreadID, NS: ns.NS, CheckpointID: cp.ID}
}

// waitAside waits for the checkpoint putAside saves, if any, and returns its error.
func (w *writer) waitAside() error {
	if w.aside == nil {
		return nil
	}
	<-w.aside
	return w.asideErr
}

// put saves cp under ns (thread and namespace) and returns the config addressing it.
func (w *writer) put(ctx context.Context, ns checkpoint.Config, cp checkpoint.Checkpoint) (checkpoint.Config, error) {
	cfg := checkpoint.Config{ThreadID: ns.ThreadID, NS: ns.NS, CheckpointID: cp.ID}
	if err := w.waitAside(); err != nil {
		return checkpoint.Config{}, err
	}
	switch w.mode {
	case DurabilityAsync:
		return cfg, w.enqueue(func(ctx context.Context) error {
			_, err := w.saver.Put(ctx, ns, cp)
			return err
		})
	case DurabilityExit:
		w.mu.Lock()
		w.pending, w.pendingNS, w.writes = &cp, ns, nil
		w.mu.Unlock()
		return cfg, nil
	}
	saved, err := w.saver.Put(ctx, ns, cp)
	if err == nil {
		w.savedID = cp.ID
	}
	return saved, err
}

// savesSteps reports whether the saver saves a step's writes and checkpoint in one call, so
// that a run keeps a step's last writes for it.
func (w *writer) savesSteps() bool {
	_, ok := w.saver.(checkpoint.StepSaver)
	return ok && w.mode != DurabilityExit
}

// putStep saves writes of the checkpoint parent addresses, then cp under ns: in one call when the
// saver is a checkpoint.StepSaver.
func (w *writer) putStep(ctx context.Context, parent checkpoint.Config, writes []checkpoint.Write, ns checkpoint.Config, cp checkpoint.Checkpoint) (checkpoint.Config, error) {
	if err := w.waitAside(); err != nil {
		return checkpoint.Config{}, err
	}
	if len(writes) == 0 || !w.savesSteps() {
		if len(writes) > 0 {
			if err := w.putWrites(ctx, parent, writes); err != nil {
				return checkpoint.Config{}, err
			}
		}
		return w.put(ctx, ns, cp)
	}
	if w.mode == DurabilityAsync {
		return checkpoint.Config{ThreadID: ns.ThreadID, NS: ns.NS, CheckpointID: cp.ID}, w.enqueue(func(ctx context.Context) error {
			_, err := checkpoint.PutStep(ctx, w.saver, parent, writes, ns, cp)
			return err
		})
	}
	saved, err := checkpoint.PutStep(ctx, w.saver, parent, writes, ns, cp)
	if err == nil {
		w.savedID = cp.ID
	}
	return saved, err
}

// putWrites saves writes of tasks of the checkpoint cfg addresses.
func (w *writer) putWrites(ctx context.Context, cfg checkpoint.Config, writes []checkpoint.Write) error {
	if err := w.waitAside(); err != nil {
		return err
	}
	switch w.mode {
	case DurabilityAsync:
		return w.enqueue(func(ctx context.Context) error { return w.saver.PutWrites(ctx, cfg, writes) })
	case DurabilityExit:
		w.mu.Lock()
		w.writes = append(w.writes, writes...)
		w.mu.Unlock()
		return nil
	}
	return w.saver.PutWrites(ctx, cfg, writes)
}

func (w *writer) enqueue(op func(context.Context) error) error {
	w.mu.Lock()
	if w.err != nil {
		w.mu.Unlock()
		return w.err
	}
	if w.ops == nil {
		w.ops, w.done = make(chan func(context.Context) error, 1024), make(chan struct{})
		go w.drain(w.ops, w.done)
	}
	ops := w.ops
	w.mu.Unlock()
	ops <- op // waits while the queue is full; flush closes it only after the run's last save
	return nil
}

// drain runs the queued operations in order; after a failure it skips the rest, so the saved
// checkpoints are always a consistent prefix of the run.
func (w *writer) drain(ops <-chan func(context.Context) error, done chan<- struct{}) {
	defer close(done)
	ctx := context.Background()
	var failed error
	for op := range ops {
		if failed != nil {
			continue
		}
		if failed = op(ctx); failed != nil {
			w.mu.Lock()
			w.err = fmt.Errorf("graph: background save: %w", failed)
			w.mu.Unlock()
		}
	}
}

// failed returns the error of a background save, if one failed.
func (w *writer) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// flush saves what is still unsaved when the run returns; state encodes the run's current state
// (the state of its latest checkpoint) for DurabilityExit.
func (w *writer) flush(ctx context.Context, latest checkpoint.Config, state func() ([]byte, error)) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
	defer cancel()
	if err := w.waitAside(); err != nil {
		return err
	}
	switch w.mode {
	case DurabilityAsync:
		w.mu.Lock()
		ops, done := w.ops, w.done
		w.ops = nil
		w.mu.Unlock()
		if ops != nil {
			close(ops)
			<-done
		}
		return w.failed()
	case DurabilityExit:
		w.mu.Lock()
		cp, ns, writes := w.pending, w.pendingNS, w.writes
		w.pending, w.writes = nil, nil
		w.mu.Unlock()
		if cp != nil {
			if cp.State == nil {
				b, err := state()
				if err != nil {
					return err
				}
				cp.State = b
			}
			cp.ParentID = w.savedID
			if _, err := w.saver.Put(ctx, ns, *cp); err != nil {
				return err
			}
			w.savedID = cp.ID
		}
		if len(writes) > 0 && latest.CheckpointID == w.savedID {
			return w.saver.PutWrites(ctx, latest, writes)
		}
	}
	return nil
}
