package langgraphapi_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes/store/sqlitestore"
	"github.com/agiraph/agiraph/server/langgraphapi"
)

// The child process of TestKilledServer serves the test graphs on the SQLite store in the file
// childDB names; with childRelease set, the slow graph's node does not wait.
const (
	childDB      = "LANGGRAPHAPI_CHILD_DB"
	childRelease = "LANGGRAPHAPI_CHILD_RELEASE"
)

// TestKilledServer kills a server process while its run is in a node, starts another on the same
// store, and finds the run continued to its end.
func TestKilledServer(t *testing.T) {
	db := filepath.Join(t.TempDir(), "api.db")
	first, url := startChild(t, db, false)
	a := &api{t: t, url: url}
	thread := a.must(200, "POST", "/threads", nil)["thread_id"].(string)
	run := a.must(200, "POST", "/threads/"+thread+"/runs", obj{"assistant_id": "slow", "input": obj{"topic": "first"}})["run_id"].(string)
	a.must(204, "GET", "/__test/entered", nil)
	require.NoError(t, first.Process.Kill())
	_ = first.Wait() // killed

	_, url = startChild(t, db, true)
	a.url = url
	out := a.must(200, "GET", "/threads/"+thread+"/runs/"+run+"/join", nil)
	assert.Equal(t, obj{"messages": []any{"done first"}, "topic": "first"}, out)
	assert.Equal(t, "success", a.must(200, "GET", "/threads/"+thread+"/runs/"+run, nil)["status"])
	assert.Equal(t, "idle", a.must(200, "GET", "/threads/"+thread, nil)["status"])
}

// startChild runs this test binary as a server on db and returns the process and its URL.
func startChild(t *testing.T, db string, release bool) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildServer$")
	cmd.Env = append(os.Environ(), childDB+"="+db)
	if release {
		cmd.Env = append(cmd.Env, childRelease+"=1")
	}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait() // killed
	})
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if url, ok := strings.CutPrefix(lines.Text(), "listening on "); ok {
			go func() { _, _ = io.Copy(io.Discard, out) }() // the rest of the child's output
			return cmd, url
		}
	}
	t.Fatalf("the child process ended without its address: %v", lines.Err())
	return nil, ""
}

// TestChildServer is the server process of TestKilledServer; it serves until it is killed.
func TestChildServer(t *testing.T) {
	path := os.Getenv(childDB)
	if path == "" {
		t.Skip("the child process of TestKilledServer")
	}
	st, err := sqlitestore.Open(path)
	require.NoError(t, err)
	g := newGate()
	if os.Getenv(childRelease) != "" {
		g.open()
	}
	h := langgraphapi.New(st)
	register(t, h, st, g)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	fmt.Printf("listening on http://%s\n", ln.Addr())
	t.Error(http.Serve(ln, withGate(h, g)))
}
