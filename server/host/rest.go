package host

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"reflect"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agiraph/agiraph/hooks"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/memory"
	"github.com/agiraph/agiraph/nodes/store"
	"github.com/agiraph/agiraph/nodes/triggers"
	"github.com/agiraph/agiraph/nodes/workspace"
)

// An agent at rest — no run in progress — costs the host no open file and no goroutine: its
// squad is closed, and what the API shows of it is read from its files (nodes.Files). Its squad
// is opened by what needs it — a run, for as long as it lasts; a request on the run in progress;
// a trigger coming due — and closed when the last of them lets it go (release). The agents'
// next trigger times are kept by one alarm (triggers.Alarm), which opens an agent's squad when
// its time comes: the squad's scheduler fires what is due (a firing wakes the agent's run
// through nodes.WithWake, as before), and the squad closes again unless a run took it.

// Agent is one agent of a host (see [Host.Agent]): its files, its squad while it is open, its run
// goroutine. Its methods are safe for concurrent use.
type Agent struct {
	host  *Host
	id    string
	home  workspace.Home
	files *nodes.Files // reads the agent's files, whether its squad is open or not
	alarm *triggers.Alarm
	// upSince is when the host took the agent up, on its trigger clock: its triggers that
	// came due since then fire as on time (nodes.WithUpSince).
	upSince time.Time
	now     func() time.Time
	log     *slog.Logger
	created time.Time // when the agent was made (meta.Created, which does not change)

	// mu guards what follows; it is held for no write to the disk (nor a squad's or a run's work),
	// so that reading an agent never waits for one. saveMu orders the writes of agent.json.
	saveMu  sync.Mutex
	mu      sync.Mutex
	meta    meta
	running bool
	pausing bool          // the run in progress is being paused (Pause)
	gone    bool          // deleted or closed: no more runs
	done    chan struct{} // closed when the run goroutine ends
	cancel  context.CancelFunc

	// The squad, open while refs > 0; nil at rest. busy is closed when an open or a close
	// under way ends; moved is closed (and replaced) whenever the squad opened or closed.
	squad *nodes.Squad
	refs  int
	busy  chan struct{}
	moved chan struct{}
	// forgotten is closed when Delete forgets the agent: its event streams end.
	forgotten chan struct{}

	// damaged says why the agent's files could not be opened, or its squad made; such an
	// agent has no squad, is listed with its error, and answers nothing else (a.mu).
	damaged string
	checked sync.Once       // the agent's files were checked (check)
	ready   chan struct{}   // closed once the squad is made (or could not be)
	ended   *nodes.Snapshot // the board of the last run, read once it is not in progress (a.mu)
	starts  int             // the runs started, so that a board read before one is not kept (a.mu)

	scanMu   sync.Mutex
	scanned  int64           // the offset in events.jsonl up to which scan read
	restSeen chan struct{}   // the moved of the squad's last closing, once scan read the last event since
	asking   string          // the coordinator's question waiting for the human, if any
	approval *hooks.Approval // the tool call asking asks to approve, if it does
	stalled  string          // what the run waits on, while the last event is an agent.waiting
	lastTime time.Time       // the time of the last event

	// In a fleet, the agent's lease (fleet.go), held while its squad is open or a run is in
	// progress here: leaseRefs holders, under generation leaseGen, renewed until keepStop.
	// leaseLost is set by the heartbeat, without leaseMu (unhold holds it while it stops the
	// heartbeat).
	leaseMu   sync.Mutex
	leaseRefs int
	leaseGen  int64
	leaseLost atomic.Bool
	keepStop  func()
}

// newAgent returns the agent id of the host, with meta m, at rest.
func (h *Host) newAgent(id string, m meta) *Agent {
	a := &Agent{host: h, id: id, home: workspace.Home(h.agentDir(id)), now: h.cfg.now, log: h.cfg.logger.With("agent", id),
		created: m.Created, meta: m, moved: make(chan struct{}), forgotten: make(chan struct{}), ready: closed()}
	a.files = nodes.ReadFiles(h.squadOptions(a, m)...)
	clock := a.files.TriggerClock()
	a.alarm = h.alarmFor(clock)
	a.upSince = clock.Now()
	return a
}

// damage returns why the agent is damaged; "" when it is not.
func (a *Agent) damage() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.damaged
}

// markDamaged records the damage err of the agent's files: it is listed as damaged with the
// error, runs no more, and answers nothing else. Its agent.json is left as it is, for a host
// started after a repair.
func (a *Agent) markDamaged(err error) {
	msg := fmt.Sprintf("%v (repair or remove the file, then restart; deleting the agent forgets it)", err)
	a.log.Error("agent damaged; the others are served", "err", err)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.damaged, a.gone = msg, true
	a.meta.Status, a.meta.Error = StatusDamaged, msg
}

// ioFailure reports whether err is a failure of the disk that passes — no space left, a quota
// reached, an I/O error, a write that failed — rather than damage to the agent's files (one
// that cannot be decoded, a corrupted checkpoint): what it failed can be done again once the
// disk is fixed, and the agent is not damaged.
func ioFailure(err error) bool {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EIO) {
		return true
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && (pe.Op == "write" || pe.Op == "sync") {
		return true
	}
	var coded interface{ Code() int } // an SQLite error (checkpoint/sqlite), by its primary code
	if errors.As(err, &coded) {
		switch coded.Code() & 0xff {
		case sqliteIOErr, sqliteFull:
			return true
		}
	}
	return false
}

// The primary result codes of SQLite that ioFailure takes for a failure of the disk.
const (
	sqliteIOErr = 10 // SQLITE_IOERR
	sqliteFull  = 13 // SQLITE_FULL
)

// failure describes err, which failed agent id's run or set-up, for its summary: an I/O
// failure says that it is no damage, and how to go on.
func failure(id string, err error) string {
	if ioFailure(err) {
		return fmt.Sprintf("%v (an I/O failure, not damage: once the disk is fixed — space freed, say — resuming the run (POST /agents/%s/resume) continues it)", err, id)
	}
	return err.Error()
}

// check checks the agent's files (nodes.Files.Check), once: before it is first shown, used or
// opened, rather than as the host starts, whose start-up then costs no more than reading
// each agent's agent.json and triggers.
func (a *Agent) check() {
	a.checked.Do(func() {
		if a.damage() != "" {
			return
		}
		if err := a.files.Check(); err != nil && !ioFailure(err) {
			a.markDamaged(err)
		}
	})
}

// acquire returns the agent's squad, opening it if it is at rest, and holds it open until the
// matching release.
func (a *Agent) acquire() (*nodes.Squad, error) {
	a.mu.Lock()
	for a.squad == nil && a.busy != nil {
		busy := a.busy
		a.mu.Unlock()
		<-busy
		a.mu.Lock()
	}
	if a.squad != nil {
		a.refs++
		sq := a.squad
		a.mu.Unlock()
		return sq, nil
	}
	busy := make(chan struct{})
	a.busy = busy
	a.mu.Unlock()
	err := a.hold() // in a fleet, one replica at a time opens the agent's squad
	a.mu.Lock()
	m := a.meta
	if err == nil {
		a.alarm.Set(a.id, time.Time{}) // while the squad is open, its own scheduler fires its triggers
		a.mu.Unlock()
		var sq *nodes.Squad
		sq, err = nodes.New(a.host.squadOptions(a, m)...)
		a.mu.Lock()
		a.squad = sq
		if err != nil {
			a.mu.Unlock()
			a.unhold()
			a.mu.Lock()
		}
	}
	defer a.mu.Unlock()
	a.busy = nil
	close(busy)
	if err != nil {
		return nil, err
	}
	a.refs = 1
	a.movedLocked()
	return a.squad, nil
}

// acquireChecked is acquire for a run or a trigger: should the squad not open, the agent's
// files are checked in full, and a damage found makes the agent damaged (ErrDamaged).
func (a *Agent) acquireChecked() (*nodes.Squad, error) {
	sq, err := a.acquire()
	if err == nil || errors.Is(err, errLeased) {
		return sq, err
	}
	if derr := a.files.CheckAll(); derr != nil && !ioFailure(derr) {
		a.markDamaged(derr)
		return nil, fmt.Errorf("%w: %s", ErrDamaged, a.damage())
	}
	return nil, fmt.Errorf("the agent's squad could not be opened: %w", err)
}

// borrow returns the agent's squad held open, as acquire does, if it is open; nil at rest.
func (a *Agent) borrow() *nodes.Squad {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.squad == nil {
		return nil
	}
	a.refs++
	return a.squad
}

// release lets the squad go: the last holder closes it (its runs, triggers and logs are then
// all saved) and sets the alarm to the agent's next trigger.
func (a *Agent) release() {
	a.mu.Lock()
	if a.refs--; a.refs > 0 {
		a.mu.Unlock()
		return
	}
	sq := a.squad
	a.squad = nil
	busy := make(chan struct{})
	a.busy = busy
	gone := a.gone
	a.mu.Unlock()
	err := sq.Close()
	a.unhold()
	if err != nil {
		a.log.Error("cannot close the agent's squad", "err", err)
		a.host.closeError(fmt.Errorf("agent %q: %w", a.id, err))
	}
	var next time.Time
	if !gone {
		if next, err = a.files.NextTrigger(); err != nil {
			a.log.Error("cannot read the agent's triggers: they will not wake it", "err", err)
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !next.IsZero() && !a.gone {
		a.alarm.Set(a.id, next)
	}
	a.busy = nil
	close(busy)
	a.movedLocked()
}

// movedLocked tells those who wait for the squad to open or close (event streams) that it did;
// the caller holds a.mu.
func (a *Agent) movedLocked() {
	close(a.moved)
	a.moved = make(chan struct{})
}

// waitClosed waits until the agent's squad is closed.
func (a *Agent) waitClosed() {
	for {
		a.mu.Lock()
		if a.squad == nil && a.busy == nil {
			a.mu.Unlock()
			return
		}
		moved := a.moved
		a.mu.Unlock()
		<-moved
	}
}

// clockAlarm is the host's alarm on one trigger clock.
type clockAlarm struct {
	clock triggers.Clock
	alarm *triggers.Alarm
}

// alarmFor returns the host's alarm on clock, made on first use: one for every agent whose
// triggers run on it — all of them, unless a program gives some a clock of their own
// (nodes.WithTriggerClock).
func (h *Host) alarmFor(clock triggers.Clock) *triggers.Alarm {
	h.alarmMu.Lock()
	defer h.alarmMu.Unlock()
	for _, ca := range h.alarms {
		if sameClock(ca.clock, clock) {
			return ca.alarm
		}
	}
	al := triggers.NewAlarm(clock, h.due)
	if h.alarmsClosed {
		al.Close()
	}
	h.alarms = append(h.alarms, clockAlarm{clock: clock, alarm: al})
	return al
}

// sameClock reports whether x and y are the same clock (false for clocks that cannot be
// compared).
func sameClock(x, y triggers.Clock) bool {
	tx := reflect.TypeOf(x)
	return tx == reflect.TypeOf(y) && tx != nil && tx.Comparable() && x == y
}

// closeAlarms closes the alarms: no trigger opens a squad any more.
func (h *Host) closeAlarms() {
	h.alarmMu.Lock()
	h.alarmsClosed = true
	alarms := h.alarms
	h.alarmMu.Unlock()
	for _, ca := range alarms {
		ca.alarm.Close()
	}
}

// due is called by an alarm when a trigger of agent id comes due while its squad is at rest: it
// opens the squad, whose scheduler fires what is due (into the agent's latest run, which the
// host then resumes: see wake), and lets it go.
func (h *Host) due(id string) {
	h.mu.Lock()
	a, ok := h.agents[id]
	if !ok || h.closed {
		h.mu.Unlock()
		return
	}
	h.wg.Add(1)
	h.mu.Unlock()
	go func() {
		defer h.wg.Done()
		a.check()
		a.mu.Lock()
		gone := a.gone
		a.mu.Unlock()
		if gone {
			return
		}
		sq, err := a.acquireChecked()
		if errors.Is(err, errLeased) { // the replica holding the agent fires its triggers
			a.alarm.Set(a.id, a.files.TriggerClock().Now().Add(h.fleet.heartbeat)) // should it die first
			return
		}
		if err != nil {
			a.log.Error("a trigger came due, and the agent's squad could not be opened", "err", err)
			return
		}
		defer a.release()
		if err := sq.SettleTriggers(h.ctx); err != nil && h.ctx.Err() == nil {
			a.log.Error("the agent's triggers did not settle", "err", err)
		}
	}()
}

// closeError keeps an error met closing a squad while the host closes, for Close to return.
func (h *Host) closeError(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		h.closeErrs = append(h.closeErrs, err)
	}
}

// Events returns the agent's logged events after seq, up to limit (0: all): from its open
// squad's log, or from the file.
func (a *Agent) Events(after int64, limit int) ([]eventlog.Event, error) {
	if sq := a.borrow(); sq != nil {
		defer a.release()
		evs, err := sq.Events(after, limit)
		if !errors.Is(err, eventlog.ErrClosed) {
			return evs, err
		}
	}
	return a.files.Events(after, limit)
}

// Memory calls fn with the agent's memory: its open squad's, or one opened on its home.
func (a *Agent) Memory(fn func(*memory.Store) error) error {
	if sq := a.borrow(); sq != nil {
		defer a.release()
		return fn(sq.Memory())
	}
	mem, err := a.files.Memory()
	if err != nil {
		return err
	}
	return fn(mem)
}

// Store calls fn with the agent's store (package nodes/store): its open squad's, or the one its
// files are kept in (in a fleet, the fleet's store of the agent, which every replica reads). An
// embedder keeps documents of its own there, under keys of their own (the A2A server's: "a2a/…").
func (a *Agent) Store(fn func(store.Store) error) error {
	if sq := a.borrow(); sq != nil {
		defer a.release()
		return fn(sq.Store())
	}
	return a.files.Store(fn)
}

// subscribe returns the agent's events after seq as they are logged, while its squad is open;
// at rest, a nil channel. moved is closed when the squad next opens or closes.
func (a *Agent) subscribe(after int64) (events <-chan eventlog.Event, stop func(), moved <-chan struct{}) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.squad == nil {
		return nil, func() {}, a.moved
	}
	events, stop = a.squad.Subscribe(after)
	return events, stop, a.moved
}
