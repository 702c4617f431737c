package nodes_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/checkpoint/sqlite"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/demo"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/store"
	"github.com/agiraph/agiraph/nodes/workspace"
)

// Files reads, without a squad, what a squad shows of the agent: the board, the conversation,
// the events, the next trigger; Check finds damage New would meet, and CheckAll damage in the
// middle of the event log written with WithEventsFile too.
func TestFiles(t *testing.T) {
	home := t.TempDir()
	s := newSquad(t, nodes.WithHome(home), nodes.WithEventsFile())
	res := run(t, s, "AI chips")
	board, err := s.ReadBoard(res.RunID)
	require.NoError(t, err)
	evs, err := s.Events(0, 0)
	require.NoError(t, err)
	conv, total, err := s.Conversation(0, 0)
	require.NoError(t, err)
	require.NoError(t, s.Close())

	f := nodes.ReadFiles(nodes.WithHome(home))
	assert.Equal(t, home, string(f.Home()))
	got, err := f.Board(res.RunID)
	require.NoError(t, err)
	assert.Equal(t, board, got)
	gotEvs, err := f.Events(0, 0)
	require.NoError(t, err)
	assert.Equal(t, evs, gotEvs)
	page, err := f.Events(2, 3)
	require.NoError(t, err)
	assert.Equal(t, evs[2:5], page)
	last, ok, err := f.LastEvent()
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, evs[len(evs)-1], last)
	gotConv, gotTotal, err := f.Conversation(0, 0)
	require.NoError(t, err)
	assert.Equal(t, conv, gotConv)
	assert.Equal(t, total, gotTotal)
	next, err := f.NextTrigger()
	require.NoError(t, err)
	assert.True(t, next.IsZero(), "no trigger")
	mem, err := f.Memory()
	require.NoError(t, err)
	_, err = mem.List()
	require.NoError(t, err)
	require.NoError(t, f.Check())
	require.NoError(t, f.CheckAll())

	// Damage in the middle of events.jsonl: only CheckAll reads it.
	events := filepath.Join(home, "events.jsonl")
	data, err := os.ReadFile(events)
	require.NoError(t, err)
	lines := strings.SplitAfter(string(data), "\n")
	lines[2] = "garbage\n"
	require.NoError(t, os.WriteFile(events, []byte(strings.Join(lines, "")), 0o644))
	require.NoError(t, f.Check())
	err = f.CheckAll()
	require.Error(t, err)
	assert.Contains(t, err.Error(), events)
	assert.Contains(t, err.Error(), "line 3")

	// A damaged conversation, and a state.db that is not a database.
	convPath := filepath.Join(home, "conversation.jsonl")
	require.NoError(t, os.WriteFile(convPath, append([]byte("garbage\n"), mustRead(t, convPath)...), 0o644))
	err = f.Check()
	require.Error(t, err)
	assert.Contains(t, err.Error(), convPath)
	require.NoError(t, os.WriteFile(convPath, nil, 0o644))
	db := filepath.Join(home, "state.db")
	h, err := os.OpenFile(db, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = h.WriteAt([]byte("not a database!!"), 0)
	require.NoError(t, err)
	require.NoError(t, h.Close())
	err = f.Check()
	require.ErrorIs(t, err, sqlite.ErrNotDatabase)
	assert.Contains(t, err.Error(), db)
	_, err = nodes.New(append(demo.Team(), nodes.WithHome(home))...)
	require.ErrorIs(t, err, sqlite.ErrNotDatabase, "New meets what Check found")
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return data
}

// Files given a store that has no events yet reads them from the home's events.jsonl — a log
// from before the store, which its squad copies into it as it opens — page after page.
func TestFilesReadEventsFromBeforeTheStore(t *testing.T) {
	home := t.TempDir()
	log, err := eventlog.Open(workspace.Home(home).Events())
	require.NoError(t, err)
	for _, text := range []string{"one", "two", "three"} {
		_, err := log.Append(eventlog.Event{Type: eventlog.AgentStarted, Text: text})
		require.NoError(t, err)
	}
	require.NoError(t, log.Close())
	f := nodes.ReadFiles(nodes.WithHome(home), nodes.WithStore(store.NewMemory()))
	first, err := f.Events(0, 2)
	require.NoError(t, err)
	require.Len(t, first, 2)
	rest, err := f.Events(first[1].Seq, 0)
	require.NoError(t, err)
	require.Len(t, rest, 1)
	assert.Equal(t, "three", rest[0].Text)
}
