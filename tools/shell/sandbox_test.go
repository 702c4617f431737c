//go:build linux

package shell_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/internal/testenv"
	"github.com/agiraph/agiraph/sandbox"
	"github.com/agiraph/agiraph/tools"
	"github.com/agiraph/agiraph/tools/shell"
)

// enforced skips the test unless the sandbox is enforced here: bubblewrap runs, and the
// fallback was not asked for; and under -short (internal/testenv).
func enforced(t *testing.T) {
	t.Helper()
	testenv.Need(t, "bubblewrap")
	if os.Getenv("AGIRAPH_CONTAIN") == "group" {
		t.Skip("containment without bubblewrap was asked for")
	}
	if exec.Command("bwrap", "--unshare-pid", "--ro-bind", "/", "/", "--unshare-net", "true").Run() != nil {
		t.Skip("bubblewrap is missing or cannot run here")
	}
}

// By default a command writes only in its working directory and a /tmp of its own.
func TestSandboxKeepsWritesInScope(t *testing.T) {
	enforced(t)
	dir, elsewhere := t.TempDir(), t.TempDir()
	visible, err := os.MkdirTemp("/var/tmp", "readonly-") // outside /tmp, so the command sees it
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(visible) })
	tool := shell.Bash(shell.Dir(dir))
	out := mustRun(t, tool, fmt.Sprintf(`echo in > in.txt && echo tmp > /tmp/private.txt && cat /tmp/private.txt; echo out > %s/out.txt; echo out > %s/out.txt`, visible, elsewhere))
	assert.Contains(t, out, "tmp\n")
	assert.Contains(t, out, visible+"/out.txt: Read-only file system")
	assert.FileExists(t, filepath.Join(dir, "in.txt"))
	assert.NoFileExists(t, filepath.Join(visible, "out.txt"))
	assert.NoFileExists(t, filepath.Join(elsewhere, "out.txt"), "another folder of /tmp is not even there")
	assert.NoFileExists(t, "/tmp/private.txt", "the command's /tmp is its own")

	// More writable paths, or the sandbox off.
	mustRun(t, shell.Bash(shell.Dir(dir), shell.Sandbox(sandbox.Policy{Writable: []string{dir, elsewhere}})), fmt.Sprintf(`echo out > %s/a.txt`, elsewhere))
	assert.FileExists(t, filepath.Join(elsewhere, "a.txt"))
	mustRun(t, shell.Bash(shell.Dir(dir), shell.Sandbox(sandbox.Policy{Off: true})), fmt.Sprintf(`echo out > %s/b.txt`, elsewhere))
	assert.FileExists(t, filepath.Join(elsewhere, "b.txt"))
}

// A command cut off the network cannot reach a server on the host, even on loopback; with the
// network it can.
func TestSandboxNetwork(t *testing.T) {
	enforced(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	dial := fmt.Sprintf(`(echo > /dev/tcp/127.0.0.1/%d) 2>/dev/null && echo reached || echo unreachable`, ln.Addr().(*net.TCPAddr).Port)
	dir := t.TempDir()
	assert.Equal(t, "reached\n", mustRun(t, shell.Bash(shell.Dir(dir)), dial))
	assert.Equal(t, "unreachable\n", mustRun(t, shell.Bash(shell.Dir(dir), shell.Sandbox(sandbox.Policy{Writable: []string{dir}, NoNetwork: true})), dial))
}

// The environment loses what looks like a secret, unless the policy keeps it or it was given
// with shell.Env — wherever the command runs, bubblewrap or not.
func TestSandboxEnvironment(t *testing.T) {
	t.Setenv("SOME_API_KEY", "secret-value")
	t.Setenv("SOME_SETTING", "plain")
	dir := t.TempDir()
	show := `echo "${SOME_API_KEY:-none} ${SOME_SETTING:-none} ${GIVEN_TOKEN:-none}"`
	line := func(tool tools.Tool) string { return strings.SplitN(mustRun(t, tool, show), "\n", 2)[0] }
	assert.Equal(t, "none plain none", line(shell.Bash(shell.Dir(dir))))
	assert.Equal(t, "none plain given", line(shell.Bash(shell.Dir(dir), shell.Env([]string{"GIVEN_TOKEN=given"}))))
	kept := shell.Bash(shell.Dir(dir), shell.Sandbox(sandbox.Policy{Writable: []string{dir}, KeepEnv: []string{"SOME_API_KEY"}}))
	assert.Equal(t, "secret-value plain none", line(kept))
	assert.Equal(t, "secret-value plain none", line(shell.Bash(shell.Dir(dir), shell.Sandbox(sandbox.Policy{Off: true}))))
}

// The tool's guidance tells the model where its commands may write, where that is enforced.
func TestSandboxIsExplained(t *testing.T) {
	dir := t.TempDir()
	tool := shell.Bash(shell.Dir(dir))
	if os.Getenv("AGIRAPH_CONTAIN") == "group" || exec.Command("bwrap", "--unshare-pid", "--ro-bind", "/", "/", "true").Run() != nil {
		assert.NotContains(t, tool.Guidance, "may write only")
		return
	}
	assert.Contains(t, tool.Guidance, "Commands may write only in "+dir+" and /tmp")
	assert.Contains(t, shell.Bash(shell.Dir(dir), shell.Sandbox(sandbox.Policy{NoNetwork: true})).Guidance, "may write only in /tmp, which is your own and starts empty at every call; the rest of the file system is read-only. They have no network.")
	assert.NotContains(t, shell.Bash(shell.Dir(dir), shell.Sandbox(sandbox.Policy{Off: true})).Guidance, "may write only")
}
