package triggers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/agiraph/agiraph/internal/osfile"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/workspace"
)

// ErrClosed is returned by the methods of a closed [Scheduler].
var ErrClosed = errors.New("triggers: scheduler is closed")

// ErrUnknownTrigger is wrapped by the error [Scheduler.Cancel] returns for an id it does not
// know.
var ErrUnknownTrigger = errors.New("unknown trigger")

// ErrNotActive is wrapped by the error [Scheduler.Cancel] returns for a trigger that has
// already fired (a one-shot) or been cancelled.
var ErrNotActive = errors.New("trigger is not active")

// maxWait caps how long the loop sleeps before it looks at the clock again, so that a change
// of the wall clock (a suspended machine, a corrected clock) delays a firing by at most this.
const maxWait = time.Minute

type config struct {
	clock   Clock
	upSince time.Time
	keeper  Keeper
}

// A Keeper keeps a scheduler's triggers, saved whole (as JSON) at each change: the file at the
// path Open is given by default; WithKeeper gives another, such as a squad's store.
type Keeper interface {
	// Load returns what Save saved last; nil when nothing was.
	Load() ([]byte, error)
	// Save keeps data in place of what was saved before, durably, before it returns.
	Save(data []byte) error
}

// WithKeeper makes the scheduler keep its triggers with k instead of in the file at its path,
// which then only names them in errors.
func WithKeeper(k Keeper) Option {
	return func(cfg *config) { cfg.keeper = k }
}

// fileKeeper keeps triggers in a file, written atomically and durably.
type fileKeeper string

func (f fileKeeper) Load() ([]byte, error) {
	b, err := osfile.ReadFile(string(f))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

func (f fileKeeper) Save(data []byte) error {
	if dir := filepath.Dir(string(f)); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	return workspace.WriteFile(string(f), data)
}

// Option configures a [Scheduler].
type Option func(*config)

// WithClock makes the scheduler read time from c instead of the system clock.
func WithClock(c Clock) Option {
	return func(cfg *config) { cfg.clock = c }
}

// WithUpSince says that the program has kept the agent since t, on the scheduler's clock,
// opening its scheduler only when a trigger comes due ([Scheduler.Next], [Alarm]): [Scheduler.Start]
// counts as late ([Firing.Late]) only the triggers that came due before t — while the program
// was down — and fires those that came due since as on time. By default, and for a t after
// Start, late means due before Start.
func WithUpSince(t time.Time) Option {
	return func(cfg *config) { cfg.upSince = t }
}

// fileState is the content of triggers.json.
type fileState struct {
	NextID   int       `json:"next_id"` // the number of the next trigger id
	Triggers []Trigger `json:"triggers"`
}

// queued is an on_event firing waiting for the loop.
type queued struct {
	id string
	at time.Time
	ev eventlog.Event
}

// Scheduler holds an agent's triggers, persists them and fires them. Its methods are safe for
// concurrent use.
type Scheduler struct {
	path    string
	keeper  Keeper
	fire    func(Firing)
	clock   Clock
	upSince time.Time

	mu       sync.Mutex
	triggers []*Trigger // in the order they were added
	byID     map[string]*Trigger
	scheds   map[string]cron.Schedule // of the scheduled triggers
	nextID   int
	queue    []queued        // on_event firings not yet handed out
	late     map[string]bool // triggers that came due while the process was down
	loaded   map[string]bool // triggers read from the file by Open
	dirty    bool            // activity moved an on_idle trigger since the last save
	err      error           // the first error saving from the loop
	started  bool
	closed   bool

	// For Settle: pokes counts the changes the loop must look at; seen is pokes as of the
	// loop's last look; waiting says the loop is blocked until waitUntil (zero: no deadline);
	// waited is closed (and replaced) each time the loop begins to wait.
	pokes, seen uint64
	waiting     bool
	waitUntil   time.Time
	waited      chan struct{}

	wake   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
}

// Open loads the triggers in path (an agent's triggers.json; a missing file is an empty set, and
// the file and its directory are created on the first save) and returns a scheduler that calls
// fire for each [Firing] — one at a time, in the order of their due times, from its own
// goroutine once [Scheduler.Start] has been called. fire may call the scheduler's methods, except
// Close and Settle.
func Open(path string, fire func(Firing), opts ...Option) (*Scheduler, error) {
	if fire == nil {
		return nil, errors.New("triggers: Open: nil fire function")
	}
	cfg := config{clock: RealClock()}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.keeper == nil {
		cfg.keeper = fileKeeper(path)
	}
	s := &Scheduler{
		path:    path,
		keeper:  cfg.keeper,
		fire:    fire,
		clock:   cfg.clock,
		upSince: cfg.upSince.Round(0),
		byID:    map[string]*Trigger{},
		scheds:  map[string]cron.Schedule{},
		late:    map[string]bool{},
		loaded:  map[string]bool{},
		nextID:  1,
		wake:    make(chan struct{}, 1),
		waited:  make(chan struct{}),
	}
	var st fileState
	data, err := s.keeper.Load()
	if err != nil {
		return nil, fmt.Errorf("triggers: %s: %w", path, err)
	}
	if data != nil {
		if err := json.Unmarshal(data, &st); err != nil {
			return nil, fmt.Errorf("triggers: %s: %w", path, err)
		}
	}
	if st.NextID > s.nextID {
		s.nextID = st.NextID
	}
	for i := range st.Triggers {
		t := st.Triggers[i]
		if t.ID == "" || s.byID[t.ID] != nil {
			return nil, fmt.Errorf("triggers: %s: trigger %d has a missing or repeated id %q", path, i+1, t.ID)
		}
		if t.Status == Active && t.Type == Scheduled {
			sched, err := schedule(t.Cron, t.TZ)
			if err != nil {
				return nil, fmt.Errorf("triggers: %s: trigger %s: %w", path, t.ID, err)
			}
			s.scheds[t.ID] = sched
		}
		if n := idNumber(t.ID); n >= s.nextID {
			s.nextID = n + 1
		}
		s.triggers = append(s.triggers, &t)
		s.byID[t.ID] = &t
		s.loaded[t.ID] = true
	}
	return s, nil
}

// now reads the clock, without a monotonic reading, so that times compare the same before and
// after they have been saved.
func (s *Scheduler) now() time.Time { return s.clock.Now().Round(0) }

// Start starts the loop that fires triggers; it runs until ctx ends or Close is called. Triggers
// read by Open that came due while the process was down (before Start, or before the time of
// [WithUpSince]) fire once, at once, with [Firing.Late] set; recurring ones then continue from
// now. (A trigger added since Open is never late, even an at_time one whose At had passed.)
// Calling Start again, or after Close, does nothing.
func (s *Scheduler) Start(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.closed {
		return
	}
	s.started = true
	down := s.now() // triggers due before it came due while the process was down
	if !s.upSince.IsZero() && s.upSince.Before(down) {
		down = s.upSince
	}
	for _, t := range s.triggers {
		if s.loaded[t.ID] && t.Status == Active && t.Type.timed() && !t.Next.IsZero() && t.Next.Before(down) {
			s.late[t.ID] = true
		}
	}
	ctx, s.cancel = context.WithCancel(ctx)
	s.done = make(chan struct{})
	go s.loop(ctx)
}

// Close stops the loop and waits for it (a firing in progress is finished), then saves activity
// not yet saved. It returns the first error the scheduler met saving its file while it ran, if
// any. Close must not be called from the fire function.
func (s *Scheduler) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	cancel, done := s.cancel, s.done
	s.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dirty {
		s.noteErr(s.saveLocked())
	}
	return s.err
}

// Add validates t, gives it an ID ("t1", "t2"..., continuing across restarts), Created (now),
// Status active and its first Next, saves it and returns it. The ID, Status, Created, Next,
// LastFired and Fired passed in are ignored. An invalid trigger gets a [*FieldError] naming the
// field. An at_time trigger whose At is in the past fires at once.
func (s *Scheduler) Add(t Trigger) (Trigger, error) {
	t = t.clone()
	sched, err := validate(&t)
	if err != nil {
		return Trigger{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Trigger{}, ErrClosed
	}
	if t.Key != "" {
		for _, old := range s.triggers {
			if old.Key == t.Key {
				return old.clone(), nil
			}
		}
	}
	now := s.now()
	t.ID = fmt.Sprintf("t%d", s.nextID)
	t.Status = Active
	t.Created = now
	t.LastFired = time.Time{}
	t.Fired = 0
	t.Next = time.Time{}
	switch t.Type {
	case Scheduled:
		t.Next = sched.Next(now)
		if t.Next.IsZero() {
			return Trigger{}, fieldErr("cron", "%q never comes due", t.Cron)
		}
	case Delayed:
		t.Next = now.Add(t.Delay.D())
	case AtTime:
		t.Next = t.At
	case Heartbeat:
		t.Next = now.Add(t.Interval.D())
	case OnIdle:
		t.Next = now.Add(t.Idle.D())
	}
	p := &t
	s.triggers = append(s.triggers, p)
	s.byID[t.ID] = p
	if sched != nil {
		s.scheds[t.ID] = sched
	}
	s.nextID++
	if err := s.saveLocked(); err != nil {
		s.triggers = s.triggers[:len(s.triggers)-1]
		delete(s.byID, t.ID)
		delete(s.scheds, t.ID)
		s.nextID--
		return Trigger{}, err
	}
	s.pokeLocked()
	return t.clone(), nil
}

// Cancel cancels the active trigger id and saves the change. An unknown id is an error wrapping
// [ErrUnknownTrigger]; a trigger that has fired (a one-shot) or is already cancelled is one
// wrapping [ErrNotActive].
func (s *Scheduler) Cancel(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	t := s.byID[id]
	if t == nil {
		return fmt.Errorf("triggers: %w %q", ErrUnknownTrigger, id)
	}
	if t.Status != Active {
		return fmt.Errorf("triggers: %w: %q is %s", ErrNotActive, id, t.Status)
	}
	old := *t
	t.Status = Cancelled
	t.Next = time.Time{}
	if err := s.saveLocked(); err != nil {
		*t = old
		return err
	}
	delete(s.late, id)
	delete(s.scheds, id)
	s.pokeLocked()
	return nil
}

// Next returns when the earliest active trigger that fires at a time comes due; zero when
// none does (on_event triggers fire on events, not at a time).
func (s *Scheduler) Next() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.earliestLocked()
}

// Get returns the trigger id, if there is one.
func (s *Scheduler) Get(id string) (Trigger, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.byID[id]
	if t == nil {
		return Trigger{}, false
	}
	return t.clone(), true
}

// List returns all the triggers: the active ones first, by Next (on_event ones, which have no
// Next, after the timed ones), then the others, oldest first.
func (s *Scheduler) List() []Trigger {
	s.mu.Lock()
	out := make([]Trigger, len(s.triggers))
	for i, t := range s.triggers {
		out[i] = t.clone()
	}
	s.mu.Unlock()
	sort.SliceStable(out, func(i, j int) bool {
		a, b := &out[i], &out[j]
		if (a.Status == Active) != (b.Status == Active) {
			return a.Status == Active
		}
		if a.Status == Active && !a.Next.Equal(b.Next) {
			if a.Next.IsZero() || b.Next.IsZero() {
				return b.Next.IsZero()
			}
			return a.Next.Before(b.Next)
		}
		return idNumber(a.ID) < idNumber(b.ID)
	})
	return out
}

// Observes reports whether Observe has anything to do: whether an active on_event or on_idle
// trigger is there to see the events.
func (s *Scheduler) Observes() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.triggers {
		if t.Status == Active && (t.Type == OnEvent || t.Type == OnIdle) {
			return true
		}
	}
	return false
}

// Observe feeds an event to the scheduler: every active on_event trigger whose pattern and
// filter match it fires (at the time it is observed, by the clock), and the event counts as
// activity for on_idle triggers.
func (s *Scheduler) Observe(e eventlog.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	now := s.now()
	s.activityLocked(now)
	n := len(s.queue)
	for _, t := range s.triggers {
		if t.Status == Active && t.Type == OnEvent && matches(t, &e) {
			s.queue = append(s.queue, queued{id: t.ID, at: now, ev: e})
		}
	}
	if len(s.queue) > n {
		s.pokeLocked()
	}
}

// Activity records activity at the given time (zero: now) that came with no event: on_idle
// triggers count their idle time from the latest activity.
func (s *Scheduler) Activity(at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if at.IsZero() {
		at = s.now()
	}
	s.activityLocked(at.Round(0))
}

func (s *Scheduler) activityLocked(at time.Time) {
	for _, t := range s.triggers {
		if t.Status != Active || t.Type != OnIdle {
			continue
		}
		if next := at.Add(t.Idle.D()); next.After(t.Next) {
			t.Next = next
			s.dirty = true
			delete(s.late, t.ID)
		}
	}
}

// Settle waits until the loop has fired everything due at the clock's current time (each
// firing's fire function returned) and is waiting for the next due time or change. Tests with a
// [FakeClock] advance the clock, Settle, then look at what fired; a program that opened the
// scheduler because a trigger came due Settles before it closes it again. It returns an error if
// the scheduler is not started, stops, or ctx ends first. Settle must not be called from the
// fire function.
func (s *Scheduler) Settle(ctx context.Context) error {
	s.mu.Lock()
	started, done := s.started, s.done
	s.mu.Unlock()
	if !started || done == nil {
		return errors.New("triggers: Settle: the scheduler is not running")
	}
	for {
		s.mu.Lock()
		ok := s.waiting && s.seen == s.pokes && (s.waitUntil.IsZero() || s.waitUntil.After(s.now()))
		waited := s.waited
		s.mu.Unlock()
		if ok {
			return nil
		}
		// Whatever keeps it from being settled — a change, a due time reached — wakes the loop,
		// which closes waited when it next waits.
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-done:
			return ErrClosed
		case <-waited:
		}
	}
}

// pokeLocked tells the loop that something changed.
func (s *Scheduler) pokeLocked() {
	s.pokes++
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Scheduler) noteErr(err error) {
	if err != nil && s.err == nil {
		s.err = err
	}
}

// saveLocked writes all the triggers to the file, atomically.
func (s *Scheduler) saveLocked() error {
	st := fileState{NextID: s.nextID, Triggers: make([]Trigger, len(s.triggers))}
	for i, t := range s.triggers {
		st.Triggers[i] = *t
	}
	data, err := json.MarshalIndent(st, "", "  ")
	if err == nil {
		err = s.keeper.Save(append(data, '\n'))
	}
	if err != nil {
		return fmt.Errorf("triggers: saving %s: %w", s.path, err)
	}
	s.dirty = false
	return nil
}

func (s *Scheduler) loop(ctx context.Context) {
	defer close(s.done)
	for {
		if ctx.Err() != nil {
			return
		}
		s.mu.Lock()
		s.seen = s.pokes
		now := s.now()
		if f, ok := s.takeDueLocked(now); ok {
			s.mu.Unlock()
			s.fire(f)
			continue
		}
		var timer <-chan time.Time
		deadline := s.earliestLocked()
		if !deadline.IsZero() {
			if deadline.Sub(now) > maxWait {
				deadline = now.Add(maxWait)
			}
			timer = s.clock.At(deadline)
		}
		s.waiting, s.waitUntil = true, deadline
		close(s.waited)
		s.waited = make(chan struct{})
		s.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-timer:
		case <-s.wake:
		}
		s.mu.Lock()
		s.waiting = false
		s.mu.Unlock()
	}
}

// earliestLocked returns the earliest Next of the active timed triggers, or zero.
func (s *Scheduler) earliestLocked() time.Time {
	var min time.Time
	for _, t := range s.triggers {
		if t.Status == Active && t.Type.timed() && !t.Next.IsZero() && (min.IsZero() || t.Next.Before(min)) {
			min = t.Next
		}
	}
	return min
}

// takeDueLocked takes the earliest firing due at now, if any, updates its trigger and saves.
func (s *Scheduler) takeDueLocked(now time.Time) (Firing, bool) {
	var best *Trigger
	for _, t := range s.triggers {
		if t.Status != Active || !t.Type.timed() || t.Next.IsZero() || t.Next.After(now) {
			continue
		}
		if best == nil || t.Next.Before(best.Next) {
			best = t
		}
	}
	for len(s.queue) > 0 {
		if t := s.byID[s.queue[0].id]; t != nil && t.Status == Active {
			break
		}
		s.queue = s.queue[1:]
	}
	if len(s.queue) > 0 && (best == nil || !best.Next.Before(s.queue[0].at)) {
		q := s.queue[0]
		s.queue = s.queue[1:]
		t := s.byID[q.id]
		t.Fired++
		t.LastFired = now
		s.noteErr(s.saveLocked())
		ev := q.ev
		return Firing{Trigger: t.clone(), At: q.at, Event: &ev}, true
	}
	if best == nil {
		return Firing{}, false
	}
	t := best
	due := t.Next
	late := s.late[t.ID]
	delete(s.late, t.ID)
	t.Fired++
	t.LastFired = now
	// next returns the due time after this one: step from due, or — when the trigger came
	// due while the process was down, or the loop fell behind by a whole step — from now.
	next := func(step func(time.Time) time.Time) time.Time {
		if late {
			return step(now)
		}
		if n := step(due); n.After(now) {
			return n
		}
		return step(now)
	}
	switch t.Type {
	case Delayed, AtTime:
		t.Status = Fired
		t.Next = time.Time{}
	case Scheduled:
		sched := s.scheds[t.ID]
		if sched == nil { // cannot happen: Open and Add parse every active scheduled trigger
			sched, _ = schedule(t.Cron, t.TZ)
		}
		if sched == nil {
			t.Status, t.Next = Fired, time.Time{}
			break
		}
		t.Next = next(func(from time.Time) time.Time { return sched.Next(from) })
		if t.Next.IsZero() { // the expression has no further time
			t.Status = Fired
		}
	case Heartbeat:
		t.Next = next(func(from time.Time) time.Time { return from.Add(t.Interval.D()) })
	case OnIdle:
		t.Next = next(func(from time.Time) time.Time { return from.Add(t.Idle.D()) })
	}
	s.noteErr(s.saveLocked())
	return Firing{Trigger: t.clone(), At: due, Late: late}, true
}
