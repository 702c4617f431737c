package nodes

import (
	"context"
	"slices"
	"sync"
)

// pool runs assignments in the background: each on its own goroutine, cancellable, and
// reported as done (by id) with its outcome once the outcome is saved (or could not be).
type pool struct {
	// hold keeps an assignment that ended running, for what asks, until a point of the tick
	// takes its end (release): under a Sequencer, which decides when that is.
	hold     bool
	mu       sync.Mutex
	live     map[string]context.CancelFunc
	done     []string
	ended    map[string]bool // every assignment that ended in this process
	outcomes map[string]outcomeRecord
	wake     chan struct{}
	wg       sync.WaitGroup
}

// newPool returns a pool that holds what ended when hold is set (see pool.hold).
func newPool(hold bool) *pool {
	return &pool{hold: hold, live: map[string]context.CancelFunc{}, ended: map[string]bool{}, outcomes: map[string]outcomeRecord{}, wake: make(chan struct{}, 1)}
}

// start runs fn for assignment id unless it is already running; ctx is cancelled by cancel.
// What fn returns is the assignment's outcome (see outcome).
func (p *pool) start(ctx context.Context, id string, fn func(ctx context.Context) outcomeRecord) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.live[id]; ok {
		return false
	}
	ctx, cancel := context.WithCancel(ctx)
	p.live[id] = cancel
	delete(p.ended, id)
	delete(p.outcomes, id)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		rec := fn(ctx)
		cancel()
		p.finish(id, &rec)
	}()
	return true
}

// finish reports id as done, once, with its outcome when there is one in memory.
func (p *pool) finish(id string, rec *outcomeRecord) {
	p.mu.Lock()
	if !p.hold {
		delete(p.live, id)
	}
	if rec != nil {
		p.outcomes[id] = *rec
	}
	if !p.ended[id] && (!p.hold || !slices.Contains(p.done, id)) {
		p.ended[id] = !p.hold
		p.done = append(p.done, id)
	}
	p.mu.Unlock()
	p.signal()
}

// release has the assignments ids, whose ends a point of the tick took, end (see hold).
func (p *pool) release(ids []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, id := range ids {
		p.end(id)
	}
}

// end has id end: it is no longer running. p.mu is held.
func (p *pool) end(id string) {
	delete(p.live, id)
	p.ended[id] = true
}

// outcome returns the outcome of assignment id if it ended in this process.
func (p *pool) outcome(id string) (outcomeRecord, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	rec, ok := p.outcomes[id]
	return rec, ok
}

// hasEnded reports whether id ended in this process and was not started again since.
func (p *pool) hasEnded(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ended[id]
}

func (p *pool) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// running reports whether assignment id is running.
func (p *pool) running(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.live[id]
	return ok
}

// size returns how many assignments are running.
func (p *pool) size() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.live)
}

// drain returns the assignments that ended since the last drain.
func (p *pool) drain() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	d := p.done
	p.done = nil
	return d
}

// cancelAll cancels every running assignment.
func (p *pool) cancelAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.live {
		c()
	}
}

// wait waits for every assignment to return.
func (p *pool) wait() { p.wg.Wait() }
