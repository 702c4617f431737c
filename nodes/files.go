package nodes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/agiraph/agiraph/checkpoint/sqlite"
	"github.com/agiraph/agiraph/internal/osfile"
	"github.com/agiraph/agiraph/nodes/bus"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/memory"
	"github.com/agiraph/agiraph/nodes/store"
	"github.com/agiraph/agiraph/nodes/store/sqlitestore"
	"github.com/agiraph/agiraph/nodes/triggers"
	"github.com/agiraph/agiraph/nodes/workspace"
	"github.com/agiraph/agiraph/runtime"
)

// Files reads an agent's home without opening its squad: it holds no file open between calls
// and runs no goroutine. A program that keeps many agents reads those at rest through it, and
// opens a Squad only to run one, or when its next trigger comes due (NextTrigger) — as package
// server does. Its methods are safe for concurrent use, also with a squad open on the home.
type Files struct {
	cfg  config
	home workspace.Home
}

// ReadFiles returns the Files of the home of the squad New would open with opts (of which the
// home, the clock and the trigger clock matter). It reads nothing yet.
func ReadFiles(opts ...Option) *Files {
	c := newConfig(opts)
	return &Files{cfg: c, home: workspace.Home(c.home)}
}

// Home returns the agent's home folder.
func (f *Files) Home() workspace.Home { return f.home }

// TriggerClock returns the clock the agent's triggers run on (WithTriggerClock).
func (f *Files) TriggerClock() triggers.Clock { return f.cfg.triggerClock }

// Check returns the first damage it finds in the agent's files, naming the file and how to
// repair it — what would keep New from opening the squad — reading what a listing of many
// agents can afford: conversation.jsonl, the triggers (in the store, or the triggers.json of a
// home from before), the header of state.db (of the squad's own store) and the last line of
// events.jsonl. CheckAll reads every line of events.jsonl too,
// as New does. A missing file is no damage, nor is a torn last line of a log (what a crash
// leaves).
func (f *Files) Check() error {
	if _, err := (&conversation{path: f.home.Conversation()}).scan(func(Entry) bool { return true }); err != nil {
		return err
	}
	if f.cfg.store == nil {
		if err := checkSQLite(filepath.Join(string(f.home), "state.db")); err != nil {
			return err
		}
	}
	if err := f.withTriggers(func(*triggers.Scheduler) {}); err != nil {
		return err
	}
	if _, _, err := eventlog.Last(f.home.Events()); err != nil {
		return fmt.Errorf("nodes: %w", err)
	}
	return nil
}

// CheckAll is Check, reading every line of events.jsonl.
func (f *Files) CheckAll() error {
	if err := f.Check(); err != nil {
		return err
	}
	if _, err := eventlog.Scan(f.home.Events(), 0, func(eventlog.Event) bool { return true }); err != nil {
		return fmt.Errorf("nodes: %w", err)
	}
	return nil
}

// sqliteHeader begins every SQLite database file.
const sqliteHeader = "SQLite format 3\x00"

// checkSQLite returns an error unless the file at path is missing, empty or begins as a SQLite
// database does.
func checkSQLite(path string) error {
	fh, err := osfile.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("nodes: %w", err)
	}
	defer func() { _ = fh.Close() }() // read only
	head := make([]byte, len(sqliteHeader))
	n, err := io.ReadFull(fh, head)
	switch {
	case n == 0 && (err == io.EOF || err == nil):
		return nil // a new database
	case err != nil && err != io.ErrUnexpectedEOF:
		return fmt.Errorf("nodes: %s: %w", path, err)
	case string(head[:n]) != sqliteHeader:
		return fmt.Errorf("nodes: %s is damaged: %w (its header is not SQLite's; restore it from a backup, or remove it to lose the checkpoints of the agent's runs)", path, sqlite.ErrNotDatabase)
	}
	return nil
}

// Board reads the board of the agent's run runID.
func (f *Files) Board(runID string) (snap Snapshot, err error) {
	err = f.withStore(func(st store.Store) error {
		b, err := openBoard(context.Background(), st, f.home.Run(runID), f.cfg.now)
		if err == nil {
			snap = b.Snapshot()
		}
		return err
	})
	return snap, err
}

// Began reports whether the agent's run runID began: its goal is saved, in the store or in
// the run's folder. A home that lacks the folder of a run its store has (another machine's)
// gets it back when the run is resumed.
func (f *Files) Began(runID string) (began bool, err error) {
	err = f.withStore(func(st store.Store) error {
		rs, _, err := readRunState(context.Background(), st, f.home.Run(runID))
		began = rs.Goal != ""
		return err
	})
	return began, err
}

// Messages reads every message of the agent's run runID, in the order they were sent.
func (f *Files) Messages(runID string) (msgs []runtime.Message, err error) {
	dir := f.home.Run(runID).Messages()
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil // no such run
	}
	err = f.withStore(func(st store.Store) error {
		j, err := runJournal(st, dir, runID)
		if err != nil {
			return err
		}
		b, err := bus.Open(dir, bus.WithJournal(j))
		if err != nil {
			return fmt.Errorf("nodes: run %s: %w", runID, err)
		}
		defer func() { _ = b.Close() }() // read only
		msgs, err = b.Messages()
		return err
	})
	return msgs, err
}

// withStore calls fn with the agent's store, to read: the one its options give, or its state.db
// opened to read for the call (none yet: an empty one). Its changes are refused, so that what
// a squad would copy into the store as it opens (a board, triggers from before) is read where it
// is, and Files writes nothing.
func (f *Files) withStore(fn func(st store.Store) error) error {
	if f.cfg.store != nil {
		return fn(unwritable{f.cfg.store})
	}
	db, err := sqlitestore.OpenReader(filepath.Join(string(f.home), "state.db"))
	if errors.Is(err, fs.ErrNotExist) {
		return fn(unwritable{store.NewMemory()})
	}
	if err != nil {
		return fmt.Errorf("nodes: %w", err)
	}
	defer func() { _ = db.Close() }() // read only
	return fn(unwritable{db})
}

// unwritable is a store whose changes are refused (store.ErrReadOnly).
type unwritable struct{ store.Store }

func (unwritable) Apply(context.Context, store.Change) error {
	return fmt.Errorf("nodes: %w", store.ErrReadOnly)
}

// Conversation reads a page of the agent's conversation, as Squad.Conversation does: from the
// store its options give (see Events), else from conversation.jsonl.
func (f *Files) Conversation(after, limit int) ([]Entry, int, error) {
	var out []Entry
	total := 0
	page := func(e Entry) bool {
		total = max(total, int(e.Seq))
		if e.Seq > int64(after) && (limit <= 0 || len(out) < limit) {
			out = append(out, e)
		}
		return true
	}
	if f.cfg.store != nil {
		all, err := f.cfg.store.Lines(context.Background(), 0, 0)
		if err != nil || len(all) > 0 {
			for _, e := range all {
				page(e)
			}
			return out, total, err
		}
		// none: a conversation from before the store, which the squad copies into it as it opens
	}
	_, err := (&conversation{path: f.home.Conversation()}).scan(page)
	return out, total, err
}

// Events reads the logged events after seq, up to limit (0: all), as Squad.Events does: from
// the store its options give, which another machine's squad may have written (events.jsonl
// being this home's view of it), else from events.jsonl.
func (f *Files) Events(after int64, limit int) ([]eventlog.Event, error) {
	if f.cfg.store != nil {
		ctx := context.Background()
		evs, err := f.cfg.store.Events(ctx, after, limit)
		if err != nil || len(evs) > 0 {
			return evs, err
		}
		if after > 0 { // none after: the store has the log, or it has none
			if evs, err = f.cfg.store.Events(ctx, 0, 1); err != nil || len(evs) > 0 {
				return nil, err
			}
		}
		// none at all: a log from before the store, which the squad copies into it as it opens
	}
	return eventlog.ReadFile(f.home.Events(), after, limit)
}

// EventsFrom reads the events logged from byte offset off of events.jsonl on, and returns the
// offset to read the next ones from (see eventlog.Scan): to follow the agent's events whether
// its squad is open or not.
func (f *Files) EventsFrom(off int64, fn func(eventlog.Event) bool) (int64, error) {
	return eventlog.Scan(f.home.Events(), off, fn)
}

// LastEvent returns the agent's last logged event; false when it has none.
func (f *Files) LastEvent() (eventlog.Event, bool, error) {
	return eventlog.Last(f.home.Events())
}

// Store calls fn with the agent's store, to read and write, while its squad is closed: the one
// its options give, or the one in its home's state.db, opened for the call (a squad that opens
// on the home meanwhile opens it too; SQLite orders their writes). An embedder keeps documents
// of its own there, under keys of their own (see Squad.Store).
func (f *Files) Store(fn func(st store.Store) error) error {
	if f.cfg.store != nil {
		return fn(f.cfg.store)
	}
	st, err := sqlitestore.Open(filepath.Join(string(f.home), "state.db"))
	if err != nil {
		return fmt.Errorf("nodes: %w", err)
	}
	err = fn(st)
	if cerr := st.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("nodes: %w", cerr)
	}
	return err
}

// Memory returns the agent's long-term memory (see memory.Open).
func (f *Files) Memory() (*memory.Store, error) {
	return memory.Open(f.home, memory.WithClock(f.cfg.now))
}

// NextTrigger returns when the agent's next trigger that fires at a time comes due, as saved
// in the store (a squad saves them as it closes); zero when none does. A trigger that fires on
// an event fires only while the squad is open, for only a run logs events.
func (f *Files) NextTrigger() (next time.Time, err error) {
	err = f.withTriggers(func(sched *triggers.Scheduler) { next = sched.Next() })
	return next, err
}

// Triggers returns the agent's triggers, as saved in the store.
func (f *Files) Triggers() (ts []triggers.Trigger, err error) {
	err = f.withTriggers(func(sched *triggers.Scheduler) { ts = sched.List() })
	return ts, err
}

// withTriggers calls fn with a scheduler of the agent's triggers that fires none.
func (f *Files) withTriggers(fn func(sched *triggers.Scheduler)) error {
	return f.withStore(func(st store.Store) error {
		sched, err := triggers.Open(f.home.Triggers(), func(triggers.Firing) {}, triggers.WithClock(f.cfg.triggerClock),
			triggers.WithKeeper(triggerKeeper{st: st, file: f.home.Triggers()}))
		if err != nil {
			return fmt.Errorf("nodes: %w", err)
		}
		fn(sched)
		return sched.Close()
	})
}
