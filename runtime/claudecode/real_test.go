package claudecode_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agiraph/agiraph/internal/clitest"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/providertest"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/claudecode"
	"github.com/agiraph/agiraph/runtime/runtimetest"
	"github.com/agiraph/agiraph/tools"
)

// offlineEnv is the environment that points the real CLI at a fake API and keeps it offline
// and away from this machine's configuration.
func offlineEnv(t *testing.T, baseURL string) []string { return clitest.ClaudeEnv(t, baseURL) }

// lastMessage returns the JSON of a request's last message.
func lastMessage(r providertest.Request) string {
	msgs := r.Messages()
	if len(msgs) == 0 {
		return ""
	}
	b, _ := json.Marshal(msgs[len(msgs)-1])
	return string(b)
}

// TestRealCLI runs each version of the real Claude Code CLI against the fake Messages API: it
// runs a Bash command, writes a file with its Write tool and finishes; the adapter publishes
// both files.
func TestRealCLI(t *testing.T) {
	for i, v := range claudeVersions {
		t.Run(v.Version, func(t *testing.T) {
			if i == 0 {
				realCLI(t, claudeBinary(t)) // $CLAUDE_BIN may stand for it
				return
			}
			realCLI(t, v.Bin(t, "claude", ""))
		})
	}
}

func realCLI(t *testing.T, bin string) {
	a := assignment(t, "Make the report about the widgets.")
	a.System = "You are Ada. Codeword: PERIWINKLE."
	scratch := a.Dir.Scratch()
	usage := providers.Usage{InputTokens: 1000, OutputTokens: 200, CacheReadTokens: 300, CacheWriteTokens: 50}
	var mu sync.Mutex
	var unexpected []string
	fake := providertest.NewAnthropicFunc(t, func(r providertest.Request) providertest.Reply {
		last := lastMessage(r)
		switch {
		case strings.Contains(last, `"tool_use_id":"toolu_bash"`):
			args, _ := json.Marshal(map[string]string{"file_path": filepath.Join(scratch, "report.md"), "content": "# Widgets\n\nThere are 3 widgets.\n"})
			return providertest.Reply{Text: "Now the report.", Calls: []tools.Call{{ID: "toolu_write", Name: "Write", Args: args}}, Usage: usage}
		case strings.Contains(last, `"tool_use_id":"toolu_write"`):
			return providertest.Reply{Text: "Wrote report.md and out.txt.", Usage: usage}
		case strings.Contains(last, `"tool_use_id":"toolu_outbox"`):
			args, _ := json.Marshal(map[string]string{"file_path": filepath.Join(scratch, "_checkpoint.md"), "content": "Stage 2: told the coordinator; waiting for review.\n"})
			return providertest.Reply{Calls: []tools.Call{{ID: "toolu_checkpoint", Name: "Write", Args: args}}, Usage: usage}
		case strings.Contains(last, `"tool_use_id":"toolu_checkpoint"`):
			return providertest.Reply{Text: "Checkpointed.", Usage: usage}
		case strings.Contains(last, "Tell the coordinator."):
			args, _ := json.Marshal(map[string]string{"file_path": filepath.Join(scratch, "_outbox.md"), "content": "TO: coordinator\nThe widget report is published.\n---\n"})
			return providertest.Reply{Calls: []tools.Call{{ID: "toolu_outbox", Name: "Write", Args: args}}, Usage: usage}
		case strings.Contains(last, "Make the report about the widgets."):
			return providertest.Reply{Text: "Counting widgets.", Calls: []tools.Call{{ID: "toolu_bash", Name: "Bash", Args: json.RawMessage(`{"command":"echo hi > out.txt","description":"Write out.txt"}`)}}, Usage: usage}
		}
		mu.Lock()
		unexpected = append(unexpected, last)
		mu.Unlock()
		return providertest.Reply{Text: "OK", Usage: usage}
	})
	// Only POST /v1/messages reaches the fake; anything else the CLI asks for is logged and
	// answered 404 (the fake would fail the test on it).
	target, _ := url.Parse(fake.URL())
	proxy := httputil.NewSingleHostReverseProxy(target)
	var others []string
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/messages" {
			proxy.ServeHTTP(w, r)
			return
		}
		mu.Lock()
		others = append(others, r.Method+" "+r.URL.String())
		mu.Unlock()
		http.NotFound(w, r)
	}))
	defer front.Close()

	rec := newRecorder(t)
	env := offlineEnv(t, front.URL)
	rt := claudecode.New(claudecode.WithBinary(bin), claudecode.WithModel("claude-sonnet-4-5"),
		claudecode.WithEnv(env), claudecode.WithMaxTurns(10), claudecode.WithBridgeInterval(50*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	o, err := rt.Run(ctx, a, rec.sink)
	if err != nil {
		t.Fatalf("Run: %v\noutcome %+v\nevents %s\nrequests %d", err, o, rec.kinds(), len(fake.Requests()))
	}
	mu.Lock()
	t.Logf("requests: %d to /v1/messages, others: %v, unexpected messages: %d", len(fake.Requests()), others, len(unexpected))
	mu.Unlock()

	eq(t, "status", o.Status, runtime.Published)
	eq(t, "published", strings.Join(o.Published, ","), "out.txt,report.md")
	eq(t, "summary", o.Summary, "Wrote report.md and out.txt.")
	eq(t, "turns", o.Turns, 3)
	if o.Session == "" {
		t.Error("no session id")
	}
	if b, err := os.ReadFile(filepath.Join(a.Dir.Published(), "out.txt")); err != nil || string(b) != "hi\n" {
		t.Errorf("published/out.txt = %q, %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(a.Dir.Published(), "report.md")); err != nil || !strings.Contains(string(b), "3 widgets") {
		t.Errorf("published/report.md = %q, %v", b, err)
	}
	// Usage: the three turns' tokens; the CLI prices claude-sonnet-4-5 itself.
	eq(t, "input tokens", o.Usage.InputTokens, 3*usage.InputTokens)
	eq(t, "output tokens", o.Usage.OutputTokens, 3*usage.OutputTokens)
	eq(t, "cache read", o.Usage.CacheReadTokens, 3*usage.CacheReadTokens)
	eq(t, "cache write", o.Usage.CacheWriteTokens, 3*usage.CacheWriteTokens)
	if o.Usage.CostUSD <= 0 {
		t.Errorf("cost = %v, want > 0", o.Usage.CostUSD)
	}

	// Events.
	started := rec.of(runtime.Started)
	if len(started) != 1 || !strings.Contains(started[0].Text, "claude-sonnet-4-5") || !strings.Contains(started[0].Text, o.Session) {
		t.Errorf("started events %+v", started)
	}
	var called []string
	for _, e := range rec.of(runtime.ToolCalled) {
		called = append(called, e.Tool.ID+":"+e.Tool.Name)
	}
	eq(t, "tool calls", strings.Join(called, " "), "toolu_bash:Bash toolu_write:Write")
	results := rec.of(runtime.ToolResult)
	if len(results) != 2 || results[0].Tool.Name != "Bash" || results[1].Tool.Name != "Write" || results[0].Tool.IsError || results[1].Tool.IsError {
		t.Errorf("tool results %+v", results)
	} else {
		contains(t, "Write result", results[1].Tool.Result, "report.md")
	}
	var texts []string
	for _, e := range rec.of(runtime.ModelTurn) {
		if e.Text != "" {
			texts = append(texts, e.Text)
		}
	}
	eq(t, "model turns", strings.Join(texts, "|"), "Counting widgets.|Now the report.|Wrote report.md and out.txt.")
	all := rec.all()
	if last := all[len(all)-1]; last.Kind != runtime.Ended || last.Status != runtime.Published || last.Usage == nil || last.Usage.CostUSD != o.Usage.CostUSD {
		t.Errorf("last event %+v", last)
	}
	for _, e := range all {
		if e.Assignment != "a1" || e.Node != "n1" || e.Worker != "ada" {
			t.Errorf("event not stamped: %+v", e)
		}
	}

	// What the fake API got: the model asked for, our system prompt, the tool results.
	var sawBash, sawWrite, sawSystem bool
	for _, r := range fake.Requests() {
		eq(t, "model", r.Model, "claude-sonnet-4-5")
		sys, _ := json.Marshal(r.JSON["system"])
		if strings.Contains(string(sys), "PERIWINKLE") && strings.Contains(string(sys), "_outbox.md") && strings.Contains(string(sys), "_checkpoint.md") {
			sawSystem = true
		}
		last := lastMessage(r)
		sawBash = sawBash || strings.Contains(last, `"tool_use_id":"toolu_bash"`)
		sawWrite = sawWrite || strings.Contains(last, `"tool_use_id":"toolu_write"`) && strings.Contains(last, "report.md")
	}
	if !sawSystem || !sawBash || !sawWrite {
		t.Errorf("requests: system prompt with protocol %v, Bash result %v, Write result %v", sawSystem, sawBash, sawWrite)
	}

	// Resuming the session: the CLI sends the earlier conversation; the agent messages the
	// coordinator through _outbox.md and checkpoints with _checkpoint.md.
	before := len(fake.Requests())
	b := a
	b.Task, b.Session = "Tell the coordinator.", o.Session
	mb := &runtimetest.Mailbox{}
	b.Mailbox = mb
	rec2 := newRecorder(t)
	o2, err := rt.Run(ctx, b, rec2.sink)
	if err != nil {
		t.Fatalf("resumed Run: %v\nevents %s", err, rec2.kinds())
	}
	eq(t, "resumed status", o2.Status, runtime.Checkpointed)
	eq(t, "resumed summary", o2.Summary, "Stage 2: told the coordinator; waiting for review.")
	eq(t, "resumed session", o2.Session, o.Session)
	eq(t, "sent", fmt.Sprint(mb.Sent()), fmt.Sprint([]runtime.Message{{To: "coordinator", Body: "The widget report is published."}}))
	eq(t, "message events", len(rec2.of(runtime.MessageSent)), 1)
	reqs := fake.Requests()[before:]
	if len(reqs) == 0 {
		t.Fatal("the resumed run made no request")
	}
	first, _ := json.Marshal(reqs[0].Messages())
	contains(t, "resumed conversation", string(first), "Counting widgets.")
	contains(t, "resumed conversation", string(first), "Tell the coordinator.")
}
