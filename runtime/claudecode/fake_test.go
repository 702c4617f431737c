package claudecode_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/claudecode"
	"github.com/agiraph/agiraph/runtime/runtimetest"
)

// Lines of a stream, as the real CLI prints them (trimmed of fields the adapter does not read).
const (
	initLine   = `{"type":"system","subtype":"init","cwd":"/w","session_id":"sess-1","tools":["Bash","Write"],"model":"claude-sonnet-4-5","permissionMode":"bypassPermissions","claude_code_version":"2.1.330"}`
	resultLine = `{"type":"result","subtype":"success","is_error":false,"num_turns":2,"result":"All done.","session_id":"sess-1","total_cost_usd":0.0123,"usage":{"input_tokens":10,"output_tokens":5,"cache_read_input_tokens":7,"cache_creation_input_tokens":3},"permission_denials":[]}`
)

// echo returns shell lines that print each line verbatim.
func echo(lines ...string) string {
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "cat <<'EOF'\n%s\nEOF\n", l)
	}
	return b.String()
}

//nolint:staticcheck // Run's results first, as Run returns them, then what the sink recorded
func run(t *testing.T, rt *claudecode.Runtime, a runtime.Assignment) (runtime.Outcome, error, *recorder) {
	t.Helper()
	rec := newRecorder(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	o, err := rt.Run(ctx, a, rec.sink)
	if all := rec.all(); len(all) == 0 || all[len(all)-1].Kind != runtime.Ended || all[len(all)-1].Status != o.Status {
		t.Errorf("the last event is not Ended with the outcome's status: %s", rec.kinds())
	}
	return o, err, rec
}

func TestEventsFromStream(t *testing.T) {
	bin := fakeCLI(t, echo(initLine,
		`{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":600,"error_status":529,"error":"overloaded","session_id":"sess-1"}`,
		`{"type":"assistant","message":{"id":"msg_1","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Let me look."}],"usage":{"input_tokens":4,"output_tokens":1,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}},"session_id":"sess-1"}`,
		`{"type":"assistant","message":{"id":"msg_1","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"tu_1","name":"Bash","input":{"command":"ls"}}],"usage":{"input_tokens":4,"output_tokens":1}},"session_id":"sess-1"}`,
		`{"type":"user","message":{"role":"user","content":[{"tool_use_id":"tu_1","type":"tool_result","content":"ls: cannot open","is_error":true}]},"session_id":"sess-1"}`,
		`{"type":"system","subtype":"compact_boundary","compact_metadata":{"trigger":"auto"}}`,
		`{"type":"rate_limit_event","info":{"status":"allowed"}}`,
		`{"type":"assistant","message":{"id":"msg_2","content":[{"type":"tool_use","id":"tu_2","name":"Read","input":{"file_path":"/x"}}]},"session_id":"sess-1"}`,
		`{"type":"user","message":{"role":"user","content":[{"tool_use_id":"tu_2","type":"tool_result","content":[{"type":"text","text":"line one"},{"type":"text","text":"line two"}]}]},"session_id":"sess-1"}`,
		`{"type":"assistant","message":{"id":"msg_3","content":[{"type":"text","text":"All done."}]},"session_id":"sess-1"}`,
		resultLine)+"echo written > out.txt\n")
	a := assignment(t, "Look around.")
	o, err, rec := run(t, claudecode.New(claudecode.WithBinary(bin)), a)
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "kinds", rec.kinds(), "started retrying model_turn tool_called tool_result compacted output model_turn tool_called tool_result model_turn ended")
	ev := rec.all()
	contains(t, "started", ev[0].Text, "claude-sonnet-4-5")
	contains(t, "started", ev[0].Text, "sess-1")
	contains(t, "started", ev[0].Text, "Bash, Write")
	contains(t, "retrying", ev[1].Text, "529")
	contains(t, "retrying", ev[1].Text, "attempt 1 of 10")
	eq(t, "turn text", ev[2].Text, "Let me look.")
	if ev[2].Usage == nil || ev[2].Usage.InputTokens != 4 {
		t.Errorf("turn usage %+v", ev[2].Usage)
	}
	eq(t, "call", ev[3].Tool.ID+" "+ev[3].Tool.Name+" "+string(ev[3].Tool.Args), `tu_1 Bash {"command":"ls"}`)
	eq(t, "result", fmt.Sprint(ev[4].Tool.ID, ev[4].Tool.Name, ev[4].Tool.Result, ev[4].Tool.IsError), "tu_1Bashls: cannot opentrue")
	contains(t, "output", ev[6].Text, "rate_limit_event")
	eq(t, "array result", ev[9].Tool.Result, "line one\nline two")
	eq(t, "array result name", ev[9].Tool.Name, "Read")
	eq(t, "status", o.Status, runtime.Published)
	eq(t, "summary", o.Summary, "All done.")
	eq(t, "session", o.Session, "sess-1")
	eq(t, "turns", o.Turns, 2)
	eq(t, "usage", fmt.Sprint(o.Usage), "{10 5 7 3 0.0123}")
	eq(t, "published", strings.Join(o.Published, ","), "out.txt")
	if ev[len(ev)-1].Usage == nil || ev[len(ev)-1].Usage.CostUSD != 0.0123 {
		t.Errorf("ended usage %+v", ev[len(ev)-1].Usage)
	}
}

// TestArgsEnvAndDir checks the command line, working directory, environment and stdin.
func TestArgsEnvAndDir(t *testing.T) {
	bin := fakeCLI(t, `for a in "$@"; do printf '%s\n<ARG>\n' "$a"; done > _args.txt
pwd > _cwd.txt
env > _env.txt
cat | wc -c > _stdin.txt
`+echo(initLine, resultLine))
	a := assignment(t, "Do the thing.")
	a.Session = "sess-0"
	a.Answer = "Use metric units."
	rt := claudecode.New(claudecode.WithBinary(bin), claudecode.WithModel("opus"), claudecode.WithMaxTurns(7),
		claudecode.WithEnv([]string{"ANTHROPIC_BASE_URL=http://127.0.0.1:9", "AGIRAPH_TEST_VAR=yes"}), claudecode.WithoutMCP())
	o, err, _ := run(t, rt, a)
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "status", o.Status, runtime.Published) // the underscore files stay in scratch
	eq(t, "published", len(o.Published), 0)
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(a.Dir.Scratch(), name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	args := strings.Split(strings.TrimSuffix(read("_args.txt"), "\n<ARG>\n"), "\n<ARG>\n")
	sys := claudecode.SystemPrompt(a)
	want := []string{"-p", "--output-format", "stream-json", "--verbose", "--include-partial-messages", "--model", "opus",
		"--append-system-prompt", sys, "--permission-mode", "bypassPermissions", "--max-turns", "7",
		"--resume", "sess-0", "--", claudecode.Prompt(a)}
	eq(t, "args", strings.Join(args, " | "), strings.Join(want, " | "))
	contains(t, "system prompt", sys, "You are Ada, a careful analyst.")
	for _, f := range []string{"_inbox.md", "_outbox.md", "_checkpoint.md", "TO: ", "---", a.Dir.Scratch()} {
		contains(t, "system prompt", sys, f)
	}
	contains(t, "prompt", claudecode.Prompt(a), "Do the thing.")
	contains(t, "prompt", claudecode.Prompt(a), "Use metric units.")
	eq(t, "cwd", strings.TrimSpace(read("_cwd.txt")), a.Dir.Scratch())
	env := read("_env.txt")
	contains(t, "env", env, "ANTHROPIC_BASE_URL=http://127.0.0.1:9\n")
	contains(t, "env", env, "AGIRAPH_TEST_VAR=yes\n")
	contains(t, "env", env, "PATH="+os.Getenv("PATH")+"\n")
	if os.Geteuid() == 0 {
		contains(t, "env as root", env, "IS_SANDBOX=1\n")
	}
	eq(t, "stdin bytes", strings.TrimSpace(read("_stdin.txt")), "0")
	if _, err := os.Stat(filepath.Join(a.Dir.Scratch(), "_inbox.md")); err != nil {
		t.Errorf("_inbox.md was not created: %v", err)
	}

	// An allow-list: dontAsk, the tools after --allowedTools (the work tools' MCP server among
	// them), "--" before the prompt; no IS_SANDBOX. The work tools come over MCP: --mcp-config
	// names the assignment's endpoint, and the system prompt says so.
	a2 := assignment(t, "-starts with a dash")
	rt2 := claudecode.New(claudecode.WithBinary(bin), claudecode.WithAllowedTools([]string{"Read", "Bash(git *)"}))
	if _, err, _ := run(t, rt2, a2); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(a2.Dir.Scratch(), "_args.txt"))
	got := strings.Split(strings.TrimSuffix(string(b), "\n<ARG>\n"), "\n<ARG>\n")
	tailArgs := strings.Join(got[len(got)-10:], " | ")
	require.Regexp(t, `^--permission-mode \| dontAsk \| --mcp-config \| \{"mcpServers":\{"agiraph":\{"headers":\{"Authorization":"Bearer [0-9a-f]{48}"\},"type":"http","url":"http://127\.0\.0\.1:\d+/mcp"\}\}\} \| --allowedTools \| Read \| Bash\(git \*\) \| mcp__agiraph \| -- \| -starts with a dash$`, tailArgs)
	assert.Contains(t, strings.Join(got, "\n"), `The MCP server "agiraph" gives you the tools of this run`)
	b, _ = os.ReadFile(filepath.Join(a2.Dir.Scratch(), "_env.txt"))
	if strings.Contains(string(b), "IS_SANDBOX=1\n") && os.Getenv("IS_SANDBOX") != "1" {
		t.Error("IS_SANDBOX=1 set without bypassPermissions")
	}
}

// A line that is not JSON (a CLI printing a warning on stdout) is reported as Output and the run
// goes on to its result.
func TestNotJSON(t *testing.T) {
	bin := fakeCLI(t, echo(initLine)+`echo 'Warning: something went sideways'
`+echo(resultLine))
	o, err, rec := run(t, claudecode.New(claudecode.WithBinary(bin)), assignment(t, "x"))
	if err != nil {
		t.Fatalf("err = %v", err)
	}
	eq(t, "status", o.Status, runtime.Published)
	var warned bool
	for _, e := range rec.of(runtime.Output) {
		warned = warned || strings.Contains(e.Text, "not JSON") && strings.Contains(e.Text, "Warning: something went sideways")
	}
	if !warned {
		t.Errorf("no Output event names the line: %s", rec.kinds())
	}
}

func TestCrashMidStream(t *testing.T) {
	bin := fakeCLI(t, echo(initLine, `{"type":"assistant","message":{"id":"msg_1","content":[{"type":"text","text":"Working."}],"usage":{"input_tokens":40,"output_tokens":2}},"session_id":"sess-1"}`)+`
echo "TypeError: cannot read properties of undefined (reading 'map')" >&2
exit 1
`)
	o, err, rec := run(t, claudecode.New(claudecode.WithBinary(bin)), assignment(t, "x"))
	if !errors.Is(err, runtime.ErrNoResult) {
		t.Fatalf("err = %v, want ErrNoResult", err)
	}
	eq(t, "status", o.Status, runtime.Failed)
	contains(t, "error", err.Error(), "exit status 1")
	contains(t, "error", err.Error(), "TypeError: cannot read properties of undefined")
	eq(t, "session", o.Session, "sess-1")
	eq(t, "usage of the turns seen", o.Usage.InputTokens, 40)
	eq(t, "turns seen", o.Turns, 1)
	eq(t, "kinds", rec.kinds(), "started model_turn ended")
	contains(t, "ended text", rec.all()[2].Text, "TypeError")
}

func TestExitWithoutResult(t *testing.T) {
	bin := fakeCLI(t, echo(initLine))
	o, err, _ := run(t, claudecode.New(claudecode.WithBinary(bin)), assignment(t, "x"))
	if !errors.Is(err, runtime.ErrNoResult) {
		t.Fatalf("err = %v, want ErrNoResult", err)
	}
	eq(t, "status", o.Status, runtime.Failed)
	contains(t, "error", err.Error(), "status 0")
	contains(t, "error", err.Error(), "system/init")

	// A binary that does not exist fails too.
	o, err = claudecode.New(claudecode.WithBinary(filepath.Join(t.TempDir(), "nope"))).Run(context.Background(), assignment(t, "x"), nil)
	if err == nil || o.Status != runtime.Failed {
		t.Errorf("missing binary: %v %v", o.Status, err)
	}
}

func TestResultIsError(t *testing.T) {
	bin := fakeCLI(t, echo(initLine,
		`{"type":"result","subtype":"success","is_error":true,"num_turns":1,"result":"Invalid API key · Fix external API key","api_error_status":401,"session_id":"sess-1","total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0},"permission_denials":[]}`)+
		"echo 'published?' > out.txt\nexit 1\n")
	a := assignment(t, "x")
	o, err, _ := run(t, claudecode.New(claudecode.WithBinary(bin)), a)
	if err == nil {
		t.Fatal("no error")
	}
	if errors.Is(err, runtime.ErrNoResult) {
		t.Errorf("err %v wraps ErrNoResult, but there was a result", err)
	}
	eq(t, "status", o.Status, runtime.Failed)
	// The result's subtype, "success", is no label of a failure.
	assert.Contains(t, err.Error(), " failed: Invalid API key · Fix external API key (API status 401)")
	assert.NotContains(t, err.Error(), "success")
	eq(t, "published", len(o.Published), 0)
	if _, err := os.Stat(filepath.Join(a.Dir.Scratch(), "out.txt")); err != nil {
		t.Errorf("a failed run's files should stay in scratch: %v", err)
	}

	// error_* subtypes fail, with their errors.
	bin = fakeCLI(t, echo(initLine,
		`{"type":"result","subtype":"error_max_turns","is_error":false,"num_turns":7,"session_id":"sess-1","errors":["Reached maximum number of turns (7)"],"usage":{"input_tokens":70,"output_tokens":7}}`))
	o, err, _ = run(t, claudecode.New(claudecode.WithBinary(bin)), assignment(t, "x"))
	if err == nil || o.Status != runtime.Failed {
		t.Fatalf("max turns: %v %v", o.Status, err)
	}
	contains(t, "error", err.Error(), "error_max_turns")
	contains(t, "error", err.Error(), "maximum number of turns")
	eq(t, "turns", o.Turns, 7)
	eq(t, "usage", o.Usage.InputTokens, 70)
}

func TestPermissionDenials(t *testing.T) {
	bin := fakeCLI(t, "echo partial > notes.md\n"+echo(initLine,
		`{"type":"result","subtype":"success","is_error":false,"num_turns":3,"result":"I could not run the tests.","session_id":"sess-1","total_cost_usd":0.01,"usage":{"input_tokens":1,"output_tokens":1},"permission_denials":[{"tool_name":"Bash","tool_use_id":"tu_1","tool_input":{"command":"go test ./..."}},{"tool_name":"WebFetch","tool_use_id":"tu_2","tool_input":{"url":"https://example.com"}}]}`))
	o, err, _ := run(t, claudecode.New(claudecode.WithBinary(bin), claudecode.WithAllowedTools([]string{"Read", "Write"})), assignment(t, "x"))
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "status", o.Status, runtime.Published)
	contains(t, "summary", o.Summary, "I could not run the tests.")
	contains(t, "summary", o.Summary, "Permission denied")
	contains(t, "summary", o.Summary, `Bash {"command":"go test ./..."}`)
	contains(t, "summary", o.Summary, "WebFetch")
}

func TestCheckpoint(t *testing.T) {
	bin := fakeCLI(t, `test -e _checkpoint.md && { echo "stale checkpoint" >&2; exit 2; }
echo draft > draft.md
printf 'Stage 1 done: drafted the outline.\nNext: write section 2.\n' > _checkpoint.md
`+echo(initLine, resultLine))
	a := assignment(t, "x")
	// A checkpoint left by an earlier run does not end this one.
	os.WriteFile(filepath.Join(a.Dir.Scratch(), "_checkpoint.md"), []byte("old"), 0o644)
	o, err, _ := run(t, claudecode.New(claudecode.WithBinary(bin)), a)
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "status", o.Status, runtime.Checkpointed)
	eq(t, "summary", o.Summary, "Stage 1 done: drafted the outline.\nNext: write section 2.")
	eq(t, "published", len(o.Published), 0)
	if _, err := os.Stat(filepath.Join(a.Dir.Scratch(), "draft.md")); err != nil {
		t.Errorf("draft.md should stay in scratch: %v", err)
	}
	if ents, _ := os.ReadDir(a.Dir.Published()); len(ents) != 0 {
		t.Errorf("published/ has %d entries", len(ents))
	}
}

// TestBridge: the agent asks the coordinator through _outbox.md, waits for the answer in
// _inbox.md, writes it to a file and, as it exits, leaves one more block without its closing line.
func TestBridge(t *testing.T) {
	bin := fakeCLI(t, echo(initLine)+`printf 'TO: coordinator\nWhat is the figure?\n---\n' >> _outbox.md
i=0
until grep -q 'the figure is 42' _inbox.md; do
  i=$((i+1)); [ $i -gt 3000 ] && { echo "no answer in _inbox.md" >&2; exit 3; }
  sleep 0.01
done
cp _inbox.md answer.txt
printf 'TO: human\nAll done; the figure was 42.' >> _outbox.md
`+echo(resultLine))
	mb := &runtimetest.Mailbox{}
	mb.OnSend(func(m runtime.Message) error { // the coordinator answers
		if m.To == "coordinator" {
			mb.Deliver("coordinator", "the figure is 42")
		}
		return nil
	})
	mb.Deliver("bob", "hello from bob")
	a := assignment(t, "x")
	a.Mailbox = mb
	o, err, rec := run(t, claudecode.New(claudecode.WithBinary(bin), claudecode.WithBridgeInterval(20*time.Millisecond)), a)
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "status", o.Status, runtime.Published)
	sent := mb.Sent()
	eq(t, "sent", fmt.Sprint(sent), fmt.Sprint([]runtime.Message{{To: "coordinator", Body: "What is the figure?"}, {To: "human", Body: "All done; the figure was 42."}}))
	var sentEv []string
	for _, e := range rec.of(runtime.MessageSent) {
		sentEv = append(sentEv, e.Message.From+">"+e.Message.To+": "+e.Message.Body)
	}
	eq(t, "sent events", strings.Join(sentEv, " | "), "ada>coordinator: What is the figure? | ada>human: All done; the figure was 42.")
	var recvEv []string
	for _, e := range rec.of(runtime.MessageReceived) {
		recvEv = append(recvEv, e.Message.From+": "+e.Message.Body)
	}
	eq(t, "received events", strings.Join(recvEv, " | "), "bob: hello from bob | coordinator: the figure is 42")
	eq(t, "published", strings.Join(o.Published, ","), "answer.txt")
	b, _ := os.ReadFile(filepath.Join(a.Dir.Published(), "answer.txt"))
	eq(t, "the agent's inbox", string(b), "[Message from bob]: hello from bob\n\n[Message from coordinator]: the figure is 42\n")
	outbox, _ := os.ReadFile(filepath.Join(a.Dir.Scratch(), "_outbox.md"))
	if !strings.HasSuffix(string(outbox), "42.\n---\n") {
		t.Errorf("the last block was not closed: %q", outbox)
	}

	// A later run of the same node does not send the old blocks again.
	bin2 := fakeCLI(t, `printf 'TO: coordinator\nStage 2 starts.\n---\n' >> _outbox.md
`+echo(initLine, resultLine))
	mb2 := &runtimetest.Mailbox{}
	a.Mailbox = mb2
	if _, err, _ := run(t, claudecode.New(claudecode.WithBinary(bin2), claudecode.WithBridgeInterval(20*time.Millisecond)), a); err != nil {
		t.Fatal(err)
	}
	eq(t, "second run sent", fmt.Sprint(mb2.Sent()), fmt.Sprint([]runtime.Message{{To: "coordinator", Body: "Stage 2 starts."}}))
}

func TestCancel(t *testing.T) {
	pidDir := t.TempDir()
	bin := fakeCLI(t, `echo $$ > "$PIDDIR/pid"
`+echo(initLine)+`sleep 600 &
echo $! > "$PIDDIR/child"
wait
`)
	a := assignment(t, "x")
	rt := claudecode.New(claudecode.WithBinary(bin), claudecode.WithEnv([]string{"PIDDIR=" + pidDir}), writable(pidDir))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type res struct {
		o   runtime.Outcome
		err error
	}
	done := make(chan res, 1)
	rec := newRecorder(t)
	go func() {
		o, err := rt.Run(ctx, a, rec.sink)
		done <- res{o, err}
	}()
	// The CLI has started its child, unless Run returned before: then say with what.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(filepath.Join(pidDir, "child")); err == nil && len(b) > 0 {
			break
		}
		select {
		case r := <-done:
			t.Fatalf("Run returned before the CLI started its child: %+v, %v; events %v", r.o, r.err, rec.kinds())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the CLI started no child")
		}
	}
	cancel()
	var r res
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	eq(t, "status", r.o.Status, runtime.Cancelled)
	if !errors.Is(r.err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", r.err)
	}
	assertGone(t, filepath.Join(pidDir, "pid"))
	assertGone(t, filepath.Join(pidDir, "child"))

	// A deadline: TimedOut.
	pidDir2 := t.TempDir()
	rt = claudecode.New(claudecode.WithBinary(bin), claudecode.WithEnv([]string{"PIDDIR=" + pidDir2}), writable(pidDir2))
	dctx, dcancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer dcancel()
	o, err := rt.Run(dctx, assignment(t, "x"), nil)
	eq(t, "status", o.Status, runtime.TimedOut)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want DeadlineExceeded", err)
	}
	assertGone(t, filepath.Join(pidDir2, "child"))

	// Watch's stall: Stalled.
	pidDir3 := t.TempDir()
	rt = claudecode.New(claudecode.WithBinary(bin), claudecode.WithEnv([]string{"PIDDIR=" + pidDir3}), writable(pidDir3))
	o, err = runtime.Watch(rt, 300*time.Millisecond).Run(context.Background(), assignment(t, "x"), nil)
	eq(t, "status", o.Status, runtime.Stalled)
	if !errors.Is(err, runtime.ErrStalled) {
		t.Errorf("err = %v, want ErrStalled", err)
	}
	assertGone(t, filepath.Join(pidDir3, "child"))
}

// TestConcurrent runs many assignments on one Runtime at once.
func TestConcurrent(t *testing.T) {
	bin := fakeCLI(t, `printf 'TO: coordinator\nhi from %s\n---\n' "$(basename "$(dirname "$PWD")")" >> _outbox.md
echo "$PWD" > where.txt
`+echo(initLine, resultLine))
	rt := claudecode.New(claudecode.WithBinary(bin), claudecode.WithBridgeInterval(5*time.Millisecond))
	const n = 8
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := assignment(t, "x")
			a.Dir = runtime.NodeDir(filepath.Join(filepath.Dir(string(a.Dir)), fmt.Sprintf("node%d", i)))
			mb := &runtimetest.Mailbox{}
			a.Mailbox = mb
			o, err := rt.Run(context.Background(), a, newRecorder(t).sink)
			if err != nil || o.Status != runtime.Published {
				t.Errorf("run %d: %v %v", i, o.Status, err)
				return
			}
			b, _ := os.ReadFile(filepath.Join(a.Dir.Published(), "where.txt"))
			eq(t, "where", strings.TrimSpace(string(b)), a.Dir.Scratch())
			eq(t, "sent", fmt.Sprint(mb.Sent()), fmt.Sprintf("[{  coordinator hi from node%d 0001-01-01 00:00:00 +0000 UTC}]", i))
		}()
	}
	wg.Wait()
}

// TestStragglersKilled: a process the agent left running in the background (holding its
// stdout) is killed when the CLI exits, and does not hold the run up.
func TestStragglersKilled(t *testing.T) {
	pidDir := t.TempDir()
	bin := fakeCLI(t, echo(initLine)+`sleep 600 &
echo $! > "$PIDDIR/child"
`+echo(resultLine))
	a := assignment(t, "x")
	o, err, _ := run(t, claudecode.New(claudecode.WithBinary(bin), claudecode.WithEnv([]string{"PIDDIR=" + pidDir}), writable(pidDir)), a)
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "status", o.Status, runtime.Published)
	assertGone(t, filepath.Join(pidDir, "child"))
}
