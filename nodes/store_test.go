package nodes_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/checkpoint/sqlite"
	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/bus"
	"github.com/agiraph/agiraph/nodes/demo"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/store"
)

// The store keeps when each event happened: events.jsonl, a view of the store, says the same
// times when it is written again from it.
func TestStoreKeepsTheTimesOfEvents(t *testing.T) {
	st := store.NewMemory()
	home := t.TempDir()
	open := func() *nodes.Squad {
		s, err := nodes.New(append(demo.Team(), nodes.WithHome(home), nodes.WithStore(st), nodes.WithModelOptions(models.WithoutRetry()),
			nodes.WithTick(20*time.Millisecond), nodes.WithEventsFile())...)
		require.NoError(t, err)
		return s
	}
	s := open()
	run(t, s, "AI chips")
	viewed, err := s.Events(0, 0)
	require.NoError(t, err)
	require.NoError(t, s.Close())

	stored, err := st.Events(context.Background(), 0, 0)
	require.NoError(t, err)
	require.Len(t, stored, len(viewed))
	for i, e := range stored {
		require.False(t, e.Time.IsZero(), "event %d (%s) has no time in the store", e.Seq, e.Type)
		assert.True(t, e.Time.Equal(viewed[i].Time), "event %d: the view says %v, the store %v", e.Seq, viewed[i].Time, e.Time)
	}

	require.NoError(t, os.Remove(filepath.Join(home, "events.jsonl")))
	s = open()
	defer s.Close()
	again, err := s.Events(0, 0)
	require.NoError(t, err)
	require.Len(t, again, len(viewed))
	for i, e := range again {
		assert.True(t, e.Time.Equal(viewed[i].Time), "event %d written again with another time", e.Seq)
	}
}

// The agent's events are in the store only, unless WithEventsFile asks for events.jsonl: a
// subscriber catching up reads them there, as Events and Files do; a squad opened with the
// option then writes the file with every event the store has.
func TestEventsAreInTheStore(t *testing.T) {
	home := t.TempDir()
	s := newSquad(t, nodes.WithHome(home))
	run(t, s, "AI chips")
	evs, err := s.Events(0, 0)
	require.NoError(t, err)
	require.Greater(t, len(evs), 10)
	assert.NoFileExists(t, filepath.Join(home, "events.jsonl"))
	ch, stop := s.Subscribe(2)
	var caught []eventlog.Event
	for e := range ch {
		caught = append(caught, e)
		if len(caught) == len(evs)-2 {
			break
		}
	}
	stop()
	assert.Equal(t, evs[2:], caught, "a subscriber's catching up")
	require.NoError(t, s.Close())
	read, err := nodes.ReadFiles(nodes.WithHome(home)).Events(0, 0)
	require.NoError(t, err)
	assert.Equal(t, evs, read)

	s, err = nodes.New(append(demo.Team(), nodes.WithHome(home), nodes.WithEventsFile())...)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	written, err := eventlog.ReadFile(filepath.Join(home, "events.jsonl"), 0, 0)
	require.NoError(t, err)
	assert.Equal(t, evs, written, "the file brought up to the store")
}

// A view that has more than its store — the store was restored from a backup, or another one
// given — is kept beside, not deleted, and written again from the store.
func TestViewAheadOfTheStoreIsKeptBeside(t *testing.T) {
	home := t.TempDir()
	s, err := nodes.New(append(demo.Team(), nodes.WithHome(home), nodes.WithModelOptions(models.WithoutRetry()),
		nodes.WithTick(20*time.Millisecond), nodes.WithEventsFile())...)
	require.NoError(t, err)
	run(t, s, "AI chips")
	require.NoError(t, s.Close())
	before, err := os.ReadFile(filepath.Join(home, "events.jsonl"))
	require.NoError(t, err)

	older := store.NewMemory() // a store from before the run: it has the agent's first event only
	require.NoError(t, older.Apply(context.Background(), store.Change{Events: []eventlog.Event{{Type: eventlog.AgentCreated, Text: "restored"}}}))
	s, err = nodes.New(append(demo.Team(), nodes.WithHome(home), nodes.WithStore(older), nodes.WithEventsFile())...)
	require.NoError(t, err)
	defer s.Close()
	kept, err := filepath.Glob(filepath.Join(home, "events.jsonl.ahead-*"))
	require.NoError(t, err)
	require.Len(t, kept, 1)
	got, err := os.ReadFile(kept[0])
	require.NoError(t, err)
	assert.Equal(t, string(before), string(got))
	evs, err := s.Events(0, 0)
	require.NoError(t, err)
	require.Len(t, evs, 1, "the store's events only")
	assert.Equal(t, "restored", evs[0].Text)
}

// A run's messages are kept in the store, not in a log of the bus's own; those of a run from
// before, kept in its _messages/log.jsonl, are read from there.
func TestMessagesAreKeptInTheStore(t *testing.T) {
	s := newSquad(t)
	res := run(t, s, "AI chips")
	dir := filepath.Join(string(s.Home()), "runs", res.RunID, "_messages")
	assert.NoFileExists(t, filepath.Join(dir, bus.LogFile))
	msgs, err := nodes.ReadFiles(nodes.WithHome(string(s.Home()))).Messages(res.RunID)
	require.NoError(t, err)
	require.NotEmpty(t, msgs)
	md, err := filepath.Glob(filepath.Join(dir, "0*_*.md"))
	require.NoError(t, err)
	assert.NotEmpty(t, md, "each message still has its file for people")

	// A run from before: its bus's log in its folder, the store without it.
	home := t.TempDir()
	old := filepath.Join(home, "runs", "r1", "_messages")
	b, err := bus.Open(old)
	require.NoError(t, err)
	_, err = b.Send(context.Background(), bus.Human, bus.Coordinator, "kept in the file")
	require.NoError(t, err)
	require.NoError(t, b.Close())
	s2, err := nodes.New(append(demo.Team(), nodes.WithHome(home))...)
	require.NoError(t, err)
	require.NoError(t, s2.Close())
	files := nodes.ReadFiles(nodes.WithHome(home))
	msgs, err = files.Messages("r1")
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	assert.Equal(t, "kept in the file", msgs[0].Body)
}

// Reading an agent at rest writes nothing: a home without a store gets none made, and one with
// a store is read as it is.
func TestFilesWriteNothing(t *testing.T) {
	home := t.TempDir()
	files := nodes.ReadFiles(nodes.WithHome(home))
	board, err := files.Board("r1")
	require.NoError(t, err)
	assert.Empty(t, board.Nodes)
	next, err := files.NextTrigger()
	require.NoError(t, err)
	assert.True(t, next.IsZero())
	msgs, err := files.Messages("r1")
	require.NoError(t, err)
	assert.Empty(t, msgs)
	assert.NoFileExists(t, filepath.Join(home, "state.db"))
	assert.NoDirExists(t, filepath.Join(home, "runs"))
}

// An agent from before the store — a state.db of checkpoints only, triggers.json, a bus log
// with a torn last line — reads at rest as it did, and reading it changes no file; once a squad
// opens it, its triggers are in the store, and triggers.json is set aside.
func TestAgentFromBeforeTheStore(t *testing.T) {
	home := t.TempDir()
	saver, err := sqlite.Open(filepath.Join(home, "state.db"))
	require.NoError(t, err)
	require.NoError(t, saver.Close())
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	trig := fmt.Sprintf(`{"next_id": 2, "triggers": [{"id": "t1", "type": "at_time", "action": {"kind": "wake", "task": "Look."},
		"status": "active", "at": %q, "created": %q, "next": %q}]}`, at.Format(time.RFC3339), at.Format(time.RFC3339), at.Format(time.RFC3339))
	require.NoError(t, os.WriteFile(filepath.Join(home, "triggers.json"), []byte(trig), 0o644))
	msgs := filepath.Join(home, "runs", "r1", "_messages")
	require.NoError(t, os.MkdirAll(msgs, 0o755))
	log := `{"type":"send","n":1,"to":"coordinator","messages":[{"id":"m0001","from":"human","to":"coordinator","body":"hi","time":"2026-01-01T00:00:00Z"}]}` + "\n" + `{"type":"rec`
	require.NoError(t, os.WriteFile(filepath.Join(msgs, bus.LogFile), []byte(log), 0o644))

	files := nodes.ReadFiles(nodes.WithHome(home))
	require.NoError(t, files.Check())
	next, err := files.NextTrigger()
	require.NoError(t, err)
	assert.True(t, next.Equal(at), "next trigger %v", next)
	got, err := files.Messages("r1")
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, "hi", got[0].Body)
	after, err := os.ReadFile(filepath.Join(msgs, bus.LogFile))
	require.NoError(t, err)
	assert.Equal(t, log, string(after), "reading changed the log")

	s, err := nodes.New(append(demo.Team(), nodes.WithHome(home))...)
	require.NoError(t, err)
	ts, err := s.Triggers()
	require.NoError(t, err)
	require.Len(t, ts, 1)
	require.NoError(t, s.Close())
	assert.NoFileExists(t, filepath.Join(home, "triggers.json"))
	require.NoError(t, os.WriteFile(filepath.Join(home, "triggers.json.copied"), []byte("{damaged"), 0o644))
	require.NoError(t, files.Check(), "the triggers are read from the store")
	ts, err = files.Triggers()
	require.NoError(t, err)
	require.Len(t, ts, 1)
	assert.Equal(t, "t1", ts[0].ID)
}
