package nodes

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/store"
)

// commit commits ch with the graph task ctx runs in — so that a step's events, conversation
// lines and state commit with the step, or not at all — or, outside a task, alone. The events
// noted before (see note) commit first. Once ch has committed, after (when not nil) is called,
// and the views (conversation.jsonl, events.jsonl with WithEventsFile) and the subscribers get
// what it added soon.
func (s *Squad) commit(ctx context.Context, ch store.Change, after func()) error {
	if len(ch.Events) > 0 {
		s.flushNotes()
	}
	for i := range ch.Events {
		s.stamp(&ch.Events[i])
	}
	if m, ok := ctx.Value(stepMarksKey{}).(*stepMarks); ok {
		m.note(ch)
	}
	events, lines := len(ch.Events) > 0, len(ch.Lines) > 0
	return store.Commit(ctx, s.store, ch, func() {
		if after != nil {
			after()
		}
		s.changed(events, lines)
	})
}

// logged returns the Seq of the last event of the agent's event log and of the last line of
// its conversation, the events noted so far committed first.
func (s *Squad) logged(ctx context.Context) (events, lines int64, err error) {
	s.flushNotes()
	last, err := s.store.LastEvent(ctx)
	if err != nil {
		return 0, 0, err
	}
	lines = s.conv.lastSeq()
	ls, err := s.store.Lines(ctx, lines, 0)
	if len(ls) > 0 {
		lines = ls[len(ls)-1].Seq
	}
	return last.Seq, lines, err
}

// logMark names an event or a line of the conversation by its time and key, to find it among
// those after a Seq (see logCut).
type logMark struct {
	Time time.Time `json:"time"`
	Key  string    `json:"key,omitempty"`
}

// is reports whether m names an entry of that time and key.
func (m *logMark) is(t time.Time, key string) bool { return m.Time.Equal(t) && m.Key == key }

// stepMarks keeps the marks of the last event and line committed with a step (see
// withStepMarks).
type stepMarks struct {
	mu          sync.Mutex
	event, line *logMark
}

type stepMarksKey struct{}

// withStepMarks returns ctx, for a step, with the marks Squad.commit keeps of what it commits
// with ctx (or one derived from it).
func withStepMarks(ctx context.Context) (context.Context, *stepMarks) {
	m := new(stepMarks)
	return context.WithValue(ctx, stepMarksKey{}, m), m
}

// note marks the last event and line of ch.
func (m *stepMarks) note(ch store.Change) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n := len(ch.Events); n > 0 {
		m.event = &logMark{Time: ch.Events[n-1].Time, Key: ch.Events[n-1].Key}
	}
	if n := len(ch.Lines); n > 0 {
		m.line = &logMark{Time: ch.Lines[n-1].Time, Key: ch.Lines[n-1].Key}
	}
}

// last returns the marks of the last event and line noted, nil where there was none.
func (m *stepMarks) last() (event, line *logMark) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.event, m.line
}

// changed tells the squad's writer that events or lines committed, for the views.
func (s *Squad) changed(events, lines bool) {
	if events {
		s.newEvents.Store(true)
	}
	if lines {
		s.newLines.Store(true)
	}
	if events || lines {
		s.poke()
	}
}

// note logs e, an event that only tells what happens (a worker's model turn, a tool call, a
// message delivered), soon: the squad's writer commits the events noted meanwhile together, in
// the order noted, before any event committed after them. A crash may lose the last ones noted.
// A live event (eventlog.TextDelta: a piece of a model's answer, never logged) is noted too, so
// that subscribers get it in its place among them.
func (s *Squad) note(e eventlog.Event) {
	s.stamp(&e)
	s.notesMu.Lock()
	s.notes = append(s.notes, e)
	s.notesMu.Unlock()
	s.poke()
}

// stamp gives e the time it happened, when it has none: the store keeps it.
func (s *Squad) stamp(e *eventlog.Event) {
	if e.Time.IsZero() {
		e.Time = s.cfg.now().UTC()
	}
}

// flushNotes commits the events noted so far and hands the live ones among them to the
// subscribers, each after the logged events noted before it. Events that cannot be committed
// are kept, in order, for the next flush.
func (s *Squad) flushNotes() {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	s.notesMu.Lock()
	evs := s.notes
	s.notes = nil
	s.notesMu.Unlock()
	for len(evs) > 0 {
		logged := 0
		for logged < len(evs) && evs[logged].Type != eventlog.TextDelta {
			logged++
		}
		if logged > 0 {
			if err := s.store.Apply(context.Background(), store.Change{Events: evs[:logged]}); err != nil {
				s.cfg.logger.Error("events not logged yet", "events", logged, "err", err)
				s.notesMu.Lock()
				s.notes = append(evs, s.notes...)
				s.notesMu.Unlock()
				return
			}
			s.newEvents.Store(true)
		}
		live := logged
		for live < len(evs) && evs[live].Type == eventlog.TextDelta {
			live++
		}
		if live > logged {
			s.publish(s.newEvents.Swap(false), false)
			for _, e := range evs[logged:live] {
				s.log.Broadcast(e)
			}
		}
		evs = evs[live:]
	}
}

// poke wakes the squad's writer (see write).
func (s *Squad) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// viewsDue tells the squad's writer that changes of b committed whose views are to be written.
func (s *Squad) viewsDue(b *board) {
	s.boardsMu.Lock()
	if s.boardsDue == nil {
		s.boardsDue = map[*board]bool{}
	}
	s.boardsDue[b] = true
	s.boardsMu.Unlock()
	s.poke()
}

// viewLag is how long the squad's writer lets commits and noted events gather before it brings
// the views up to the store: one transaction commits the events noted meanwhile, one query reads
// back what many commits added, and a view that changed many times is written once. Subscribers
// and the views are that much behind the store (what it saves against 2 ms: docs/performance.md).
const viewLag = 10 * time.Millisecond

// write is the squad's writer: when poked, it commits the events noted and brings the views up
// to the store, viewLag later, until stop is closed.
func (s *Squad) write(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	for {
		select {
		case <-stop:
			return
		case <-s.wake:
		}
		select {
		case <-stop:
			return
		case <-time.After(viewLag):
		}
		s.settle()
	}
}

// settle commits the events noted and brings the views up to the store, now: the events, the
// conversation and the boards' (see viewsDue).
func (s *Squad) settle() {
	s.boardsMu.Lock()
	boards := s.boardsDue
	s.boardsDue = nil
	s.boardsMu.Unlock()
	for b := range boards {
		b.flushViews()
	}
	s.flushNotes()
	s.publish(s.newEvents.Swap(false), s.newLines.Swap(false))
}

// publish brings the views up to the store: the events (to the subscribers, events.jsonl and
// the triggers) and the conversation lines committed since the views' last. Commits may finish
// in any order; the views follow the store's order. What cannot be read or written now is tried
// again at the next settle.
func (s *Squad) publish(events, lines bool) {
	s.pub.Lock()
	defer s.pub.Unlock()
	ctx := context.Background()
	if events && (s.sched == nil || !s.sched.Observes()) {
		// No trigger watches the events: unless someone subscribes, they need not be read back.
		last, err := s.store.LastEvent(ctx)
		events = err != nil || !s.log.Advance(last.Seq)
	}
	if events {
		evs, err := s.store.Events(ctx, s.log.Last(), 0)
		if err != nil {
			s.cfg.logger.Error("events not shown", "err", err)
			s.newEvents.Store(true)
		}
		for _, e := range evs {
			e, err := s.log.Put(e)
			if err != nil {
				s.cfg.logger.Error("event not written to its view", "file", s.log.Path(), "err", err)
				s.newEvents.Store(true)
				break
			}
			if s.sched != nil {
				s.sched.Observe(e)
			}
		}
	}
	if lines {
		ls, err := s.store.Lines(ctx, s.conv.lastSeq(), 0)
		if err != nil {
			s.cfg.logger.Error("conversation not shown", "err", err)
			s.newLines.Store(true)
		}
		for _, l := range ls {
			if err := s.conv.put(l); err != nil {
				s.cfg.logger.Error("conversation line not written to its view", "file", s.conv.path, "err", err)
				s.newLines.Store(true)
				break
			}
		}
	}
}

// openViews opens the views of the store's events — for the subscribers, and events.jsonl
// with WithEventsFile — and conversation.jsonl, the view of its conversation, and brings them
// up to it. A home whose store has none of them yet but whose files do (made before the store
// held them) has them copied into the store first; a file ahead of its store (the store
// replaced, say) is written again from the store.
func (s *Squad) openViews(ctx context.Context) error {
	last, err := s.store.LastEvent(ctx)
	if err != nil {
		return err
	}
	if last.Seq == 0 {
		old, err := eventlog.ReadFile(s.home.Events(), 0, 0)
		if err != nil {
			return fmt.Errorf("nodes: %w", err)
		}
		if len(old) > 0 {
			if err := s.store.Apply(ctx, store.Change{Events: old}); err != nil {
				return fmt.Errorf("nodes: copy %s into the store: %w", s.home.Events(), err)
			}
			if last, err = s.store.LastEvent(ctx); err != nil {
				return err
			}
		}
	}
	if s.cfg.eventsFile {
		if s.log, err = eventlog.Open(s.home.Events(), eventlog.WithClock(s.cfg.now)); err != nil {
			return fmt.Errorf("nodes: %w", err)
		}
	} else {
		s.log = eventlog.NewView(func(after int64, limit int) ([]eventlog.Event, error) {
			return s.store.Events(context.Background(), after, limit)
		}, last.Seq, eventlog.WithClock(s.cfg.now))
	}
	conv, err := openConversation(s.home.Conversation())
	if err != nil {
		return err
	}
	s.conv = conv
	lines, err := s.store.Lines(ctx, 0, 1)
	if err != nil {
		return err
	}
	if len(lines) == 0 && conv.lastSeq() > 0 {
		old, _, err := conv.page(0, 0)
		if err != nil {
			return err
		}
		if err := s.store.Apply(ctx, store.Change{Lines: old}); err != nil {
			return fmt.Errorf("nodes: copy %s into the store: %w", conv.path, err)
		}
	}
	if err := s.rewriteAhead(ctx); err != nil {
		return err
	}
	s.publish(true, true)
	return nil
}

// rewriteAhead starts a file view again when it has entries past its store's last (the store
// was restored from a backup, or replaced): the file is kept beside, renamed with the time, and
// the view is written again from the store.
func (s *Squad) rewriteAhead(ctx context.Context) error {
	if n := s.log.Last(); n > 0 && s.cfg.eventsFile {
		evs, err := s.store.Events(ctx, n-1, 1)
		if err != nil {
			return err
		}
		if len(evs) == 0 || evs[0].Seq != n {
			if err := s.log.Close(); err != nil {
				return err
			}
			if err := s.setAside(s.home.Events()); err != nil {
				return err
			}
			if s.log, err = eventlog.Open(s.home.Events(), eventlog.WithClock(s.cfg.now)); err != nil {
				return fmt.Errorf("nodes: %w", err)
			}
		}
	}
	if n := s.conv.lastSeq(); n > 0 {
		ls, err := s.store.Lines(ctx, n-1, 1)
		if err != nil {
			return err
		}
		if len(ls) == 0 || ls[0].Seq != n {
			if err := s.setAside(s.home.Conversation()); err != nil {
				return err
			}
			if s.conv, err = openConversation(s.home.Conversation()); err != nil {
				return err
			}
		}
	}
	return nil
}

// setAside renames the view at path to one named with the time, and says so.
func (s *Squad) setAside(path string) error {
	aside := path + ".ahead-" + s.cfg.now().UTC().Format("20060102T150405Z")
	if err := os.Rename(path, aside); err != nil {
		return fmt.Errorf("nodes: %w", err)
	}
	s.cfg.logger.Warn("a view had more than the store; it is kept beside, and written again from the store", "file", path, "kept", aside)
	return nil
}
