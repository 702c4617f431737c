package claudecode_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/providertest"
	"github.com/agiraph/agiraph/tools"
)

// A scenario is one recorded run of the real CLI: a prompt and how the fake API answers.
type scenario struct {
	name   string
	prompt string
	// mode is the CLI's permission mode; bypassPermissions when empty.
	mode string
	// reply answers a request; n counts the requests that carried the prompt's conversation.
	reply func(scratch string, n int, last string) providertest.Reply
}

var captureUsage = providers.Usage{InputTokens: 1000, OutputTokens: 200, CacheReadTokens: 300, CacheWriteTokens: 50}

var scenarios = []scenario{
	{
		name:   "tools",
		prompt: "Make the report about the widgets.",
		reply: func(scratch string, n int, last string) providertest.Reply {
			switch {
			case strings.Contains(last, `"tool_use_id":"toolu_bash"`):
				args, _ := json.Marshal(map[string]string{"file_path": filepath.Join(scratch, "report.md"), "content": "# Widgets\n\nThere are 3 widgets.\n"})
				return providertest.Reply{Text: "Now the report.", Calls: []tools.Call{{ID: "toolu_write", Name: "Write", Args: args}}, Usage: captureUsage}
			case strings.Contains(last, `"tool_use_id":"toolu_write"`):
				return providertest.Reply{Text: "Wrote report.md and out.txt.", Usage: captureUsage}
			}
			return providertest.Reply{Text: "Counting widgets.", Calls: []tools.Call{{ID: "toolu_bash", Name: "Bash", Args: json.RawMessage(`{"command":"echo hi > out.txt","description":"Write out.txt"}`)}}, Usage: captureUsage}
		},
	},
	{
		name:   "retry",
		prompt: "Say hello.",
		reply: func(scratch string, n int, last string) providertest.Reply {
			if n == 1 {
				return providertest.Reply{Status: http.StatusInternalServerError}
			}
			return providertest.Reply{Text: "Hello.", Usage: captureUsage}
		},
	},
	{
		name:   "denied",
		prompt: "Count the widgets.",
		mode:   "dontAsk",
		reply: func(scratch string, n int, last string) providertest.Reply {
			if strings.Contains(last, `"tool_use_id":"toolu_bash"`) {
				return providertest.Reply{Text: "Bash was denied.", Usage: captureUsage}
			}
			return providertest.Reply{Text: "Counting widgets.", Calls: []tools.Call{{ID: "toolu_bash", Name: "Bash", Args: json.RawMessage(`{"command":"echo hi > out.txt","description":"Write out.txt"}`)}}, Usage: captureUsage}
		},
	},
	{
		name:   "api400",
		prompt: "Say hello.",
		reply: func(scratch string, n int, last string) providertest.Reply {
			return providertest.Reply{Status: http.StatusBadRequest}
		},
	},
	{
		name:   "auth401",
		prompt: "Say hello.",
		reply: func(scratch string, n int, last string) providertest.Reply {
			return providertest.Reply{Status: http.StatusUnauthorized}
		},
	},
	{
		name:   "auth403",
		prompt: "Say hello.",
		reply: func(scratch string, n int, last string) providertest.Reply {
			return providertest.Reply{Status: http.StatusForbidden}
		},
	},
}

// TestCapture records the real CLI's stream-json output, with partial messages as the adapter
// asks for them, into testdata/<version>+partial/<scenario>.jsonl, the corpus TestCorpus and
// FuzzStream read (the folders without +partial hold recordings without them, as older
// adapters ran the CLI). It runs only when asked to:
//
//	AGIRAPH_CAPTURE=1 [CLAUDE_BIN=path/to/claude] go test -run TestCapture ./runtime/claudecode/
//
// The scratch and home directories in the output are replaced by /scratch and /home.
func TestCapture(t *testing.T) {
	if os.Getenv("AGIRAPH_CAPTURE") == "" {
		t.Skip("set AGIRAPH_CAPTURE=1 to record the corpus")
	}
	bin := claudeBinary(t)
	out, err := exec.Command(bin, "--version").Output()
	require.NoError(t, err)
	version := strings.Fields(string(out))[0]
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			lines := capture(t, bin, sc)
			dir := filepath.Join("testdata", version+"+partial")
			require.NoError(t, os.MkdirAll(dir, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, sc.name+".jsonl"), lines, 0o644))
		})
	}
}

// capture runs bin for sc against a fake API and returns its standard output.
func capture(t *testing.T, bin string, sc scenario) []byte {
	scratch, home := t.TempDir(), t.TempDir()
	var mu sync.Mutex
	n := 0
	fake := providertest.NewAnthropicFunc(t, func(r providertest.Request) providertest.Reply {
		last := lastMessage(r)
		if !strings.Contains(string(r.Body), sc.prompt) {
			return providertest.Reply{Text: "OK", Usage: captureUsage} // the CLI's own side requests
		}
		mu.Lock()
		n++
		i := n
		mu.Unlock()
		return sc.reply(scratch, i, last)
	})
	target, _ := url.Parse(fake.URL())
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/messages" {
			proxy.ServeHTTP(w, r)
			return
		}
		http.NotFound(w, r)
	}))
	defer front.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	mode := sc.mode
	if mode == "" {
		mode = "bypassPermissions"
	}
	cmd := exec.CommandContext(ctx, bin, "-p", "--output-format", "stream-json", "--verbose", "--include-partial-messages",
		"--model", "claude-sonnet-4-5", "--permission-mode", mode, "--max-turns", "10", "--", sc.prompt)
	cmd.Dir = scratch
	cmd.Env = append(os.Environ(), "IS_SANDBOX=1")
	cmd.Env = append(cmd.Env, offlineEnv(t, front.URL)...)
	cmd.Env = append(cmd.Env, "HOME="+home)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	t.Logf("%s: exit %v, %d requests; stderr: %s", sc.name, err, len(fake.Requests()), stderr.String())
	return []byte(strings.NewReplacer(scratch, "/scratch", home, "/home").Replace(string(out)))
}
