package eventlog_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes/eventlog"
)

// ReadFile reads what Read reads, without the Log; Scan goes on from where it stopped and
// leaves a line not complete yet for later; Last reads the last event from the end.
func TestReadingTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	none, err := eventlog.ReadFile(path, 0, 0)
	require.NoError(t, err)
	assert.Empty(t, none, "a missing file has no events")
	_, ok, err := eventlog.Last(path)
	require.NoError(t, err)
	assert.False(t, ok)

	now, _ := clock()
	l := open(t, path, eventlog.WithClock(now))
	defer l.Close()
	appendN(t, l, 10)
	for _, page := range []struct {
		after int64
		limit int
	}{{0, 0}, {3, 0}, {3, 4}, {9, 5}, {10, 0}, {42, 0}} {
		want, err := l.Read(page.after, page.limit)
		require.NoError(t, err)
		got, err := eventlog.ReadFile(path, page.after, page.limit)
		require.NoError(t, err)
		assert.Equal(t, want, got, "after %d, limit %d", page.after, page.limit)
	}

	var seen []int64
	collect := func(e eventlog.Event) bool { seen = append(seen, e.Seq); return true }
	off, err := eventlog.Scan(path, 0, collect)
	require.NoError(t, err)
	appendN(t, l, 2)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"seq":13,"time":"2025-03-01T12:00:13Z","type":"node.comp`) // a write under way
	require.NoError(t, err)
	off, err = eventlog.Scan(path, off, collect)
	require.NoError(t, err)
	assert.Equal(t, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, seen)
	last, ok, err := eventlog.Last(path)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, int64(12), last.Seq, "the line under way is not the last event yet")
	_, err = f.WriteString("leted\"}\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	_, err = eventlog.Scan(path, off, collect)
	require.NoError(t, err)
	assert.Equal(t, int64(13), seen[len(seen)-1])
	last, ok, err = eventlog.Last(path)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, int64(13), last.Seq)
}

// Last finds a last line longer than what it first reads from the end, and skips blank lines.
func TestLastOfLongLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	l := open(t, path)
	_, err := l.Append(eventlog.Event{Type: eventlog.NodeCompleted, Text: strings.Repeat("a", 100<<10)})
	require.NoError(t, err)
	_, err = l.Append(eventlog.Event{Type: eventlog.NodeCompleted, Text: strings.Repeat("b", 200<<10)})
	require.NoError(t, err)
	require.NoError(t, l.Close())
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("\n  \n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	last, ok, err := eventlog.Last(path)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, int64(2), last.Seq)
	assert.Len(t, last.Text, 200<<10)
}

// A damaged line is an error naming the file and the line; so is a seq out of order.
func TestScanDamage(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"corrupt": `{"seq":1,"time":"2025-03-01T12:00:01Z","type":"node.completed"}` + "\ngarbage\n",
		"out of order": `{"seq":2,"time":"2025-03-01T12:00:01Z","type":"node.completed"}` + "\n" +
			`{"seq":1,"time":"2025-03-01T12:00:01Z","type":"node.completed"}` + "\n",
	} {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".jsonl")
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
		_, err := eventlog.Scan(path, 0, func(eventlog.Event) bool { return true })
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), path, name)
		assert.Contains(t, err.Error(), "line 2", name)
	}
}
