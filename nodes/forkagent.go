package nodes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/memory"
	"github.com/agiraph/agiraph/nodes/store"
	"github.com/agiraph/agiraph/nodes/store/sqlitestore"
	"github.com/agiraph/agiraph/nodes/workspace"
)

// ForkAgent makes a new agent, in the home folder home (which must not exist, or be empty),
// holding a fork of run id at tick n, as Fork makes one with opts, and returns the fork's run
// id; the agent's own home is not changed. Besides the fork's run (its store, checkpoints and
// folder, as Fork makes them), the new agent has the agent's event log and its conversation
// with the human as they were when the tick ended (the events and lines numbered as they were),
// its memory (MEMORY.md and memory/) as it was then — the writes made after the tick undone
// (see memory.Store.Rewind) — and its SOUL.md and GOAL.md. Open it with New (WithHome) and
// Resume the run to go on; answer the question pending at the tick then (Run.Answer):
// ForkWithAnswer is refused here.
//
// The agent's store must be in its home (the default one, not WithStore's), and no run may be
// in progress (ErrRunning). A tick saved before the squad recorded how far the event log was
// cannot be forked into a new agent.
func (s *Squad) ForkAgent(ctx context.Context, id string, n int, home string, opts ...ForkOption) (string, error) {
	to := workspace.Home(filepath.Clean(home))
	c := newForkConfig(id, n, to, opts)
	if err := workspace.ValidID(c.id); err != nil {
		return "", fmt.Errorf("nodes: fork's run id: %w", err)
	}
	if c.answer != nil {
		return "", errors.New("nodes: ForkAgent takes no ForkWithAnswer: answer once the new agent resumes the run (Run.Answer)")
	}
	s.mu.Lock() // no run starts meanwhile, nor writes the memory being copied
	defer s.mu.Unlock()
	if cur := s.cur.Load(); cur != nil {
		return "", fmt.Errorf("%w: run %s; wait for it to end, or pause it, before forking", ErrRunning, cur.id)
	}
	if err := s.forkAgent(ctx, id, n, c, to); err != nil {
		return "", fmt.Errorf("nodes: fork run %s at tick %d into the new agent %s: %w", id, n, home, err)
	}
	return c.id, nil
}

// forkAgent makes the new agent of ForkAgent in a folder beside home, which takes home's place
// once whole: a fork cut short leaves no agent.
func (s *Squad) forkAgent(ctx context.Context, id string, n int, c forkConfig, home workspace.Home) error {
	if !s.owned {
		return errors.New("the agent's store was given (WithStore) and is not in its home, which alone a new agent's home can be made from: fork in the agent itself")
	}
	if entries, err := os.ReadDir(string(home)); err == nil && len(entries) > 0 || err != nil && !errors.Is(err, fs.ErrNotExist) {
		return errors.Join(err, fmt.Errorf("%s is there and not an empty folder: give a new agent a home of its own", home))
	}
	at, err := s.endOfTick(ctx, id, n)
	if err != nil {
		return err
	}
	if at.Values.Events == 0 {
		return errors.New("the tick was saved without how far the event log was, by an older version of the squad: fork it in the agent itself")
	}
	tmp := workspace.Home(filepath.Join(filepath.Dir(string(home)), "."+filepath.Base(string(home))+".fork"))
	if err := os.RemoveAll(string(tmp)); err != nil {
		return err
	}
	err = s.fillAgent(ctx, at.Values, tmp, func(st store.Store) error {
		return s.fork(ctx, id, at, c, st, tmp)
	})
	if err == nil {
		err = os.Rename(string(tmp), string(home))
	}
	if err != nil {
		return errors.Join(err, os.RemoveAll(string(tmp)))
	}
	return nil
}

// fillAgent makes, in home, an agent whose event log, conversation, memory, SOUL.md and GOAL.md
// are the squad's as they were when tick t ended, and whose store fork fills with the fork's run.
func (s *Squad) fillAgent(ctx context.Context, t tick, home workspace.Home, fork func(store.Store) error) (err error) {
	if err := home.Create(); err != nil {
		return err
	}
	st, err := sqlitestore.Open(filepath.Join(string(home), "state.db"))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, st.Close()) }()
	later, err := s.copyLogs(ctx, st, t)
	if err != nil {
		return err
	}
	if err := fork(st); err != nil {
		return err
	}
	for _, p := range []string{s.home.Soul(), s.home.Goal(), s.home.Memory()} {
		if err := copyTree(p, filepath.Join(string(home), filepath.Base(p)), func(string) bool { return true }); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	// Hidden files in memory/ are the index's (rebuilt from the files) and a write's temporary ones.
	if err := copyTree(s.home.MemoryDir(), home.MemoryDir(), func(rel string) bool { return !strings.HasPrefix(filepath.Base(rel), ".") || rel == "." }); err != nil {
		return err
	}
	m, err := memory.Open(home)
	if err != nil {
		return err
	}
	return m.Rewind(later)
}

// logPage is how many events or lines a fork into a new agent reads at a time.
const logPage = 1000

// logCut returns how far the agent's event log and conversation were once tick t ended: past
// where they were as decide_next ended, up to the last event and line it committed with the
// tick's checkpoint, which commits after those of others meanwhile (see tick.Events).
func (s *Squad) logCut(ctx context.Context, t tick) (events, lines int64, err error) {
	events, lines = t.Events, t.Lines
	if t.LastEvent != nil {
		events, err = seqOf(events, func(after int64) ([]eventlog.Event, error) { return s.store.Events(ctx, after, logPage) },
			func(e eventlog.Event) (int64, bool) { return e.Seq, t.LastEvent.is(e.Time, e.Key) })
	}
	if t.LastLine != nil && err == nil {
		lines, err = seqOf(lines, func(after int64) ([]store.Line, error) { return s.store.Lines(ctx, after, logPage) },
			func(l store.Line) (int64, bool) { return l.Seq, t.LastLine.is(l.Time, l.Key) })
	}
	return events, lines, err
}

// seqOf returns the Seq of the first entry after after that mark names (it returns each
// entry's Seq, and whether it names it), reading them a page at a time; after when none does.
func seqOf[T any](after int64, page func(after int64) ([]T, error), mark func(T) (int64, bool)) (int64, error) {
	for from := after; ; {
		entries, err := page(from)
		if err != nil || len(entries) == 0 {
			return after, err
		}
		for _, e := range entries {
			seq, ok := mark(e)
			if ok {
				return seq, nil
			}
			from = seq
		}
	}
}

// copyLogs copies into st the events and the conversation's lines the squad's store had when
// tick t ended (see logCut), numbered as they were, and returns the memory writes logged since,
// in order.
func (s *Squad) copyLogs(ctx context.Context, st store.Store, t tick) ([]memory.Write, error) {
	var err error
	if t.Events, t.Lines, err = s.logCut(ctx, t); err != nil {
		return nil, err
	}
	for after := int64(0); after < t.Lines; {
		ls, err := s.store.Lines(ctx, after, logPage)
		if err != nil {
			return nil, err
		}
		if ls = slices.DeleteFunc(ls, func(l store.Line) bool { return l.Seq > t.Lines }); len(ls) == 0 {
			break // the check below tells
		}
		after = ls[len(ls)-1].Seq
		if err := st.Apply(ctx, store.Change{Lines: ls}); err != nil {
			return nil, err
		}
	}
	var later []memory.Write
	for after := int64(0); ; {
		evs, err := s.store.Events(ctx, after, logPage)
		if err != nil {
			return nil, err
		}
		if len(evs) == 0 {
			break
		}
		after = evs[len(evs)-1].Seq
		var ch store.Change
		for _, e := range evs {
			if e.Seq <= t.Events {
				ch.Events = append(ch.Events, e)
			} else if e.Type == eventlog.MemoryWritten {
				var w memory.Write
				if err := json.Unmarshal(e.Data, &w); err != nil {
					return nil, fmt.Errorf("the memory write of event %d is damaged: %w", e.Seq, err)
				}
				later = append(later, w)
			}
		}
		if err := st.Apply(ctx, ch); err != nil {
			return nil, err
		}
	}
	last, err := st.LastEvent(ctx)
	if err != nil {
		return nil, err
	}
	lines, err := st.Lines(ctx, max(t.Lines-1, 0), 1)
	if err == nil && (last.Seq != t.Events || t.Lines > 0 && (len(lines) == 0 || lines[0].Seq != t.Lines)) {
		err = errors.New("the event log or the conversation skips numbers: the copies would not be numbered as they were")
	}
	return later, err
}
