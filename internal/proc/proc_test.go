//go:build linux

package proc

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/internal/testenv"
	"github.com/agiraph/agiraph/sandbox"
)

// off is the policy of the tests of containment alone.
var off = sandbox.Policy{Off: true}

// escapes starts children every way a command can try to outlive its caller: in the
// background, nohup'd, in a session of its own, and double-forked into one.
const escapes = `(sleep 300 &); nohup sleep 301 >/dev/null 2>&1 & setsid sleep 302 & (setsid bash -c 'sleep 303 & sleep 304' &) ; echo started`

// marked returns the pids of the live processes that carry p's mark.
func marked(p *Process) []string {
	var pids []string
	want := []byte(MarkEnv + "=" + p.mark + "\x00")
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(append(env, 0), want) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && bytes.Contains(st, []byte(") Z ")) {
			continue // a zombie: dead, waiting for its parent to reap it
		}
		pids = append(pids, e.Name())
	}
	return pids
}

// escaped waits until the five sleeps of escapes run (the shells that start them come and go)
// and returns how many do, at most 5s later.
func escaped(p *Process) int {
	n := 0
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		n = 0
		for _, pid := range marked(p) {
			if comm, err := os.ReadFile(filepath.Join("/proc", pid, "comm")); err == nil && string(bytes.TrimSpace(comm)) == "sleep" {
				n++
			}
		}
		if n >= 5 {
			break
		}
	}
	return n
}

// gone waits until no process of p is left, and fails the test if some still are after 5s.
func gone(t *testing.T, p *Process) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if len(marked(p)) == 0 {
			return
		}
	}
	t.Fatalf("processes of the run are left: %v", marked(p))
}

// modes runs f with a PID namespace (when bwrap works here) and with the fallback.
func modes(t *testing.T, f func(t *testing.T, wantContained bool)) {
	t.Run("namespace", func(t *testing.T) {
		needNamespaces(t)
		f(t, true)
	})
	t.Run("group", func(t *testing.T) {
		t.Setenv(ContainEnv, "group")
		f(t, false)
	})
}

// What a command started is gone once it ended and was killed, however it tried to escape.
func TestNothingOutlivesAnEndedCommand(t *testing.T) {
	modes(t, func(t *testing.T, wantContained bool) {
		var out bytes.Buffer
		cmd := exec.Command("bash", "-c", escapes)
		cmd.Stdout = &out
		p, err := Start(cmd, off)
		require.NoError(t, err)
		assert.Equal(t, wantContained, p.Contained)
		assert.Equal(t, wantContained, p.Weakness() == "")
		if !wantContained { // the escapes run (else the test proves nothing)
			require.GreaterOrEqual(t, escaped(p), 5, "the escapes started")
		}
		require.NoError(t, p.Wait())
		assert.Equal(t, "started\n", out.String())
		gone(t, p)
	})
}

// A command killed while it runs takes everything it started with it.
func TestKillTakesEverything(t *testing.T) {
	modes(t, func(t *testing.T, _ bool) {
		cmd := exec.Command("bash", "-c", escapes+"; sleep 305")
		p, err := Start(cmd, off)
		require.NoError(t, err)
		require.GreaterOrEqual(t, escaped(p), 5, "the escapes started")
		p.Kill()
		_ = p.Wait()
		gone(t, p)
	})
}

// The command runs as given: its directory, environment, arguments and exit status.
func TestTheCommandRunsAsGiven(t *testing.T) {
	modes(t, func(t *testing.T, _ bool) {
		dir := t.TempDir()
		var out bytes.Buffer
		cmd := exec.Command("bash", "-c", `pwd; echo "$GREETING" "$1"; exit 3`, "bash", "arg one")
		cmd.Dir, cmd.Env, cmd.Stdout = dir, []string{"GREETING=hello", "PATH=" + os.Getenv("PATH")}, &out
		p, err := Start(cmd, off)
		require.NoError(t, err)
		err = p.Wait()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit)
		assert.Equal(t, 3, exit.ExitCode())
		assert.Equal(t, dir+"\nhello arg one\n", out.String())
	})
}

// A command that cannot start is an error, as with exec.
func TestMissingCommand(t *testing.T) {
	modes(t, func(t *testing.T, _ bool) {
		_, err := Start(exec.Command("no-such-command-anywhere"), off)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "no-such-command-anywhere")
	})
}

// Under a policy, /tmp is the process's own, but its program and the files its arguments name
// there stay visible, read-only, and TMPDIR points at the private /tmp.
func TestSandboxShowsTheProgram(t *testing.T) {
	needNamespaces(t)
	dir := t.TempDir() // under /tmp, as `go test` makes it
	require.True(t, filepath.IsAbs(dir))
	script := filepath.Join(dir, "agent.sh")
	require.NoError(t, os.WriteFile(script, []byte("echo \"ran in $TMPDIR\"; echo x > "+filepath.Join(dir, "mine")+" && echo wrote; echo y > \"$TMPDIR/scratch\" && echo temp\n"), 0o755))
	work := t.TempDir()
	for _, argv := range [][]string{{script}, {"sh", script}} {
		var out bytes.Buffer
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir, cmd.Stdout, cmd.Stderr = work, &out, &out
		p, err := Start(cmd, sandbox.Policy{Writable: []string{work}})
		require.NoError(t, err)
		require.NoError(t, p.Wait(), out.String())
		assert.Contains(t, out.String(), "ran in /tmp\n")
		assert.NotContains(t, out.String(), "wrote", "the program's folder is read-only")
		assert.Contains(t, out.String(), "temp\n")
		assert.NoFileExists(t, filepath.Join(dir, "mine"))
	}
}

// needNamespaces skips a test that needs bubblewrap's PID namespace where it is not used: with
// AGIRAPH_CONTAIN=group, or without a bwrap that runs, and under -short (internal/testenv: under
// CI, which installs it, a bwrap that is missing or cannot run fails the test).
func needNamespaces(t *testing.T) {
	t.Helper()
	testenv.Need(t, "bubblewrap")
	switch {
	case os.Getenv(ContainEnv) == "group":
		t.Skip("AGIRAPH_CONTAIN=group: the process-group fallback is tested")
	case namespaces() == "":
		testenv.Missing(t, "bwrap is missing or cannot run here (apt-get install bubblewrap)")
	}
}
