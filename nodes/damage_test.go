package nodes_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/checkpoint/sqlite"
	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/demo"
	"github.com/agiraph/agiraph/nodes/workspace"
)

// openHome opens a squad playing the demo team on home, failing the test if New does not
// return within a few seconds.
func openHome(t *testing.T, home string, opts ...nodes.Option) (*nodes.Squad, error) {
	t.Helper()
	type opened struct {
		s   *nodes.Squad
		err error
	}
	done := make(chan opened, 1)
	go func() {
		s, err := nodes.New(append(append(demo.Team(), nodes.WithHome(home), nodes.WithModelOptions(models.WithoutRetry())), opts...)...)
		done <- opened{s, err}
	}()
	select {
	case o := <-done:
		if o.s != nil {
			t.Cleanup(func() { o.s.Close() })
		}
		return o.s, o.err
	case <-time.After(10 * time.Second):
		t.Fatal("nodes.New hangs")
		return nil, nil
	}
}

const twoEntries = `{"seq":1,"time":"2026-02-11T09:00:00Z","from":"human","to":"coordinator","content":"hello"}
{"seq":2,"time":"2026-02-11T09:01:00Z","from":"coordinator","to":"human","content":"hi"}
`

// A last line cut short by a crash in the middle of an append is dropped: the squad opens, the
// conversation holds the entries before it, and the next entry lands on a line of its own.
func TestConversationTornLastLine(t *testing.T) {
	home := t.TempDir()
	path := workspace.Home(home).Conversation()
	require.NoError(t, os.WriteFile(path, []byte(twoEntries+`{"seq":3,"time":"2026-02-11T09:0`), 0o644))

	s, err := openHome(t, home)
	require.NoError(t, err)
	all, total, err := s.Conversation(0, 0)
	require.NoError(t, err)
	assert.Equal(t, 2, total)
	require.Len(t, all, 2)
	assert.Equal(t, "hi", all[1].Content)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, twoEntries, string(data), "the torn line is not truncated away")

	run(t, s, "next goal")
	data, err = os.ReadFile(path)
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(string(data), "\n"))
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		var e nodes.Entry
		require.NoError(t, json.Unmarshal([]byte(line), &e), "line %d: %s", i+1, line)
		assert.Equal(t, int64(i+1), e.Seq, "line %d", i+1)
	}
	all, total, err = s.Conversation(0, 0)
	require.NoError(t, err)
	assert.Greater(t, total, 2)
	assert.Equal(t, "next goal", all[2].Content)
}

// A line that is not an entry before the last is damage: New fails, naming the file, the line
// and how to repair it, and leaves the file as it is.
func TestConversationDamagedLineIsNamed(t *testing.T) {
	for _, c := range []struct {
		name, content string
		line          int
	}{
		{"middle", "{\"seq\":1}\ngarbage\n{\"seq\":3}\n", 2},
		{"complete last", "{\"seq\":1}\ngarbage\n", 2},
		{"after a blank line", "{\"seq\":1}\n\n{\"seq\":2,\n{\"seq\":3}\n", 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			home := t.TempDir()
			path := workspace.Home(home).Conversation()
			require.NoError(t, os.WriteFile(path, []byte(c.content), 0o644))
			_, err := openHome(t, home)
			require.Error(t, err)
			assert.Contains(t, err.Error(), path)
			assert.Contains(t, err.Error(), fmt.Sprintf("line %d is damaged", c.line))
			assert.Contains(t, err.Error(), fmt.Sprintf("remove or fix line %d", c.line))
			data, _ := os.ReadFile(path)
			assert.Equal(t, c.content, string(data), "the file was changed")
		})
	}
}

// A state.db whose header is garbage makes New fail at once, naming the file.
func TestDamagedStateDBIsNamed(t *testing.T) {
	home := t.TempDir()
	s, err := openHome(t, home)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	path := filepath.Join(home, "state.db")
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte(strings.Repeat("garbage!", 13)[:100]), 0)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	_, err = openHome(t, home)
	require.Error(t, err)
	assert.Contains(t, err.Error(), path)
	assert.ErrorIs(t, err, sqlite.ErrNotDatabase)
}

// A line of events.jsonl (WithEventsFile) that is not an event, before the last, makes New fail
// naming the file and the line.
func TestDamagedEventLogIsNamed(t *testing.T) {
	home := t.TempDir()
	s, err := openHome(t, home, nodes.WithEventsFile())
	require.NoError(t, err)
	require.NoError(t, s.Close())
	path := workspace.Home(home).Events()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	first, rest, ok := strings.Cut(string(data), "\n")
	require.True(t, ok)
	require.NoError(t, os.WriteFile(path, []byte(first+"\ngarbage\n"+rest), 0o644))

	_, err = openHome(t, home, nodes.WithEventsFile())
	require.Error(t, err)
	assert.Contains(t, err.Error(), path)
	assert.Contains(t, err.Error(), "line 2")
}
