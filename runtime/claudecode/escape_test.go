//go:build linux

package claudecode_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/providertest"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/claudecode"
	"github.com/agiraph/agiraph/tools"
)

// sleepers returns the live processes running `sleep <tag>` for any of tags. /proc shows the
// processes of every PID namespace of this one.
func sleepers(tags []string) []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		for _, tag := range tags {
			if strings.Contains(string(cmdline), "sleep\x00"+tag+"\x00") {
				if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && !strings.Contains(string(stat), ") Z ") {
					found = append(found, e.Name()+":"+tag)
				}
			}
		}
	}
	return found
}

// The real CLI runs a Bash command that backgrounds, nohups, setsids and double-forks sleeps,
// and finishes (or is cancelled while another command runs): no sleep of the run is left.
func TestRealCLIProcessesDieWithTheRun(t *testing.T) {
	bin := claudeBinary(t)
	for _, cancelled := range []bool{false, true} {
		t.Run(map[bool]string{false: "finished", true: "cancelled"}[cancelled], func(t *testing.T) {
			base := time.Now().UnixNano() % 100000
			tags := []string{fmt.Sprintf("301.%d", base), fmt.Sprintf("302.%d", base), fmt.Sprintf("303.%d", base), fmt.Sprintf("304.%d", base)}
			escape := fmt.Sprintf(`(sleep %s &); nohup sleep %s >/dev/null 2>&1 & setsid sleep %s & (setsid bash -c 'sleep %s &' &); sleep 0.3; echo spawned`, tags[0], tags[1], tags[2], tags[3])
			if cancelled {
				escape += "; sleep 600"
			}
			args, _ := json.Marshal(map[string]string{"command": escape, "description": "Start helpers"})
			usage := providers.Usage{InputTokens: 100, OutputTokens: 20}
			var spawned atomic.Bool // the command ran: its result came back
			fake := providertest.NewAnthropicFunc(t, func(r providertest.Request) providertest.Reply {
				if last := lastMessage(r); strings.Contains(last, `"tool_use_id":"toolu_escape"`) {
					spawned.Store(strings.Contains(last, "spawned"))
					return providertest.Reply{Text: "Done.", Usage: usage}
				}
				return providertest.Reply{Calls: []tools.Call{{ID: "toolu_escape", Name: "Bash", Args: args}}, Usage: usage}
			})
			rt := claudecode.New(claudecode.WithBinary(bin), claudecode.WithModel("claude-sonnet-4-5"),
				claudecode.WithEnv(offlineEnv(t, fake.URL())), claudecode.WithMaxTurns(5))
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			if cancelled {
				go func() {
					for ctx.Err() == nil && len(sleepers(tags)) < len(tags) {
						time.Sleep(20 * time.Millisecond)
					}
					spawned.Store(ctx.Err() == nil)
					cancel()
				}()
			}
			o, err := rt.Run(ctx, assignment(t, "Start the helpers."), nil)
			if cancelled {
				require.Error(t, err)
				assert.Equal(t, runtime.Cancelled, o.Status)
			} else {
				require.NoError(t, err, "outcome %+v", o)
				assert.Equal(t, runtime.Published, o.Status)
			}
			require.True(t, spawned.Load(), "the escapes ran (else the test proves nothing)")
			for end := time.Now().Add(5 * time.Second); len(sleepers(tags)) > 0 && time.Now().Before(end); {
				time.Sleep(20 * time.Millisecond)
			}
			assert.Empty(t, sleepers(tags), "processes the run started are left")
		})
	}
}

// The real CLI's Bash command writes in its scratch folder, and cannot write beside it, in its
// home folder, in this package's folder, or see a secret of the server's environment; it
// reaches its model with its own key. (What it writes elsewhere under /tmp goes to a /tmp of
// its own, gone with it.)
func TestRealCLISandbox(t *testing.T) {
	bin := claudeBinary(t)
	t.Setenv("AGIRAPH_TEST_SERVER_TOKEN", "s3cret")
	a := assignment(t, "Try the walls.")
	env := offlineEnv(t, "")
	home, _ := strings.CutPrefix(env[0], "HOME=")
	wd, err := os.Getwd()
	require.NoError(t, err)
	walls := []string{filepath.Join(filepath.Dir(a.Dir.Scratch()), "outside.txt"), filepath.Join(home, "evil.txt"), filepath.Join(wd, "evil.txt")}
	t.Cleanup(func() { os.Remove(walls[2]) })
	command := fmt.Sprintf(`echo in > inside.txt && echo wrote inside; for f in %q %q %q; do echo x > "$f" 2>/dev/null && echo "wrote $f" || echo "refused $f"; done; echo "secret=[$AGIRAPH_TEST_SERVER_TOKEN]"`,
		walls[0], walls[1], walls[2])
	args, _ := json.Marshal(map[string]string{"command": command, "description": "Try the walls"})
	var result atomic.Value
	fake := providertest.NewAnthropicFunc(t, func(r providertest.Request) providertest.Reply {
		if last := lastMessage(r); strings.Contains(last, `"tool_use_id":"toolu_walls"`) {
			result.Store(last)
			return providertest.Reply{Text: "Done."}
		}
		return providertest.Reply{Calls: []tools.Call{{ID: "toolu_walls", Name: "Bash", Args: args}}}
	})
	env = append(offlineEnv(t, fake.URL()), "HOME="+home)
	rec := newRecorder(t)
	rt := claudecode.New(claudecode.WithBinary(bin), claudecode.WithModel("claude-sonnet-4-5"),
		claudecode.WithEnv(env), claudecode.WithMaxTurns(5))
	o, err := rt.Run(context.Background(), a, rec.sink)
	require.NoError(t, err, "outcome %+v", o)
	got, _ := result.Load().(string)
	require.Contains(t, got, "wrote inside", "the command ran")
	assert.Contains(t, got, "secret=[]", "a secret of the server's environment reached the agent")
	started := rec.all()[0]
	require.Equal(t, runtime.Started, started.Kind)
	assert.Contains(t, started.Text, "sandbox: writes only "+a.Dir.Scratch()+", "+filepath.Join(home, ".claude"))
	if strings.Contains(started.Text, "containment is weaker") {
		t.Log("no bubblewrap here: only the environment is sandboxed")
		return
	}
	for _, w := range walls {
		assert.NoFileExists(t, w)
		if !strings.HasPrefix(w, "/tmp/") {
			assert.Contains(t, got, "refused "+w)
		}
	}
	assert.Equal(t, []string{"inside.txt"}, o.Published)
}
