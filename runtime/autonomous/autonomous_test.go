//go:build unix

package autonomous_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/internal/leaktest"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/autonomous"
	"github.com/agiraph/agiraph/runtime/runtimetest"
)

func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m)
}

// fast are the options the tests run with: quick polls, a short grace.
var fast = []autonomous.Option{autonomous.WithPollInterval(20 * time.Millisecond), autonomous.WithStopGrace(200 * time.Millisecond)}

// script writes a shell script agent and returns the command that runs it.
func script(t *testing.T, body string) []string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "agent.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{"/bin/sh", p}
}

func assignment(t *testing.T, task string) runtime.Assignment {
	t.Helper()
	return runtime.Assignment{
		ID: "a1", Run: "r1", Node: "n1", Worker: "alice", Task: task,
		Dir: runtime.NodeDir(filepath.Join(t.TempDir(), "n1")),
	}
}

// recorder collects events and checks they never arrive concurrently.
type recorder struct {
	in     atomic.Int32
	mu     sync.Mutex
	events []runtime.Event
	t      *testing.T
}

func (r *recorder) sink(e runtime.Event) {
	if r.in.Add(1) != 1 {
		r.t.Errorf("events reported concurrently")
	}
	defer r.in.Add(-1)
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) kinds(skipOutput bool) []runtime.Kind {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ks []runtime.Kind
	for _, e := range r.events {
		if !skipOutput || e.Kind != runtime.Output {
			ks = append(ks, e.Kind)
		}
	}
	return ks
}

func (r *recorder) of(k runtime.Kind) []runtime.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var es []runtime.Event
	for _, e := range r.events {
		if e.Kind == k {
			es = append(es, e)
		}
	}
	return es
}

// mailbox is a runtimetest.Mailbox that answers every message sent with reply (when set), from
// its recipient; the answer comes with the next Receive. (realcli_test.go uses it too, and
// sentMessages.)
type mailbox struct {
	runtimetest.Mailbox
	reply string
}

func (m *mailbox) Send(ctx context.Context, key, to, body string) error {
	if err := m.Mailbox.Send(ctx, key, to, body); err != nil {
		return err
	}
	if m.reply != "" {
		m.Deliver(to, m.reply)
	}
	return nil
}

func (m *mailbox) sentMessages() []runtime.Message { return m.Sent() }

// started waits for the agent to write name in the scratch directory: it has started what
// the test looks for.
func started(t *testing.T, a runtime.Assignment, name string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if data, err := os.ReadFile(filepath.Join(a.Dir.Scratch(), name)); err == nil && strings.HasSuffix(string(data), "\n") {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the agent never wrote %s", name)
}

// runs returns the live processes of assignment a: those whose environment carries its
// AGIRAPH_SCRATCH (a folder of this test alone; assignment ids repeat across tests and
// packages). It reads /proc, which shows the processes of every PID namespace of this one, so
// it finds them whether the agent ran in a namespace of its own or not.
func runs(a runtime.Assignment) []string {
	var pids []string
	want := "\x00AGIRAPH_SCRATCH=" + a.Dir.Scratch() + "\x00"
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !strings.Contains("\x00"+string(env), want) {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && !strings.Contains(string(stat), ") Z ") {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

// assertGone fails unless every process of a is gone (a process reparented to init may take a
// moment to be reaped, hence the patience).
func assertGone(t *testing.T, a runtime.Assignment) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(runs(a)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("processes %v of %s are still running", runs(a), a.ID)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestMessagesBothWaysThenPublish(t *testing.T) {
	cmd := script(t, `
grep -q 'What is the answer' _task.md || { echo "the task is missing"; exit 5; }
grep -q 'TO: coordinator' _task.md || { echo "the protocol is missing"; exit 5; }
printf 'TO: coordinator\nWhat is the answer?\nPlease hurry.\n---\n' >> _outbox.md
n=0
until grep -q '^\[Message from coordinator\]' _inbox.md; do
  n=$((n+1)); [ $n -gt 600 ] && { echo "no reply came"; exit 6; }
  sleep 0.05
done
sed -n 's/^\[Message from coordinator\]: //p' _inbox.md > answer.md
echo "working on it"
printf 'Answered the question.\n' > _result.md.tmp
mv _result.md.tmp _result.md
`)
	rt := autonomous.New(cmd, fast...)
	if err := rt.Err(); err != nil {
		t.Fatal(err)
	}
	a := assignment(t, "Find out: What is the answer?")
	mb := &mailbox{reply: "42"}
	a.Mailbox = mb
	rec := &recorder{t: t}
	o, err := rt.Run(context.Background(), a, rec.sink)
	if err != nil {
		t.Fatalf("Run: %v (%+v)", err, o)
	}
	if o.Status != runtime.Published || o.Summary != "Answered the question." {
		t.Errorf("outcome = %+v", o)
	}
	if !slices.Equal(o.Published, []string{"answer.md"}) {
		t.Errorf("Published = %v", o.Published)
	}
	if got := strings.TrimSpace(readFile(t, filepath.Join(a.Dir.Published(), "answer.md"))); got != "42" {
		t.Errorf("answer.md = %q", got)
	}
	sent := mb.Sent()
	if len(sent) != 1 || sent[0].To != "coordinator" || sent[0].Body != "What is the answer?\nPlease hurry." {
		t.Errorf("sent = %+v", sent)
	}
	if got, want := rec.kinds(true), []runtime.Kind{runtime.Started, runtime.MessageSent, runtime.MessageReceived, runtime.Ended}; !slices.Equal(got, want) {
		t.Errorf("events = %v, want %v", got, want)
	}
	if e := rec.of(runtime.MessageSent); len(e) == 1 && (e[0].Message.From != "alice" || e[0].Message.To != "coordinator") {
		t.Errorf("MessageSent = %+v", e[0].Message)
	}
	if e := rec.of(runtime.MessageReceived); len(e) == 1 && e[0].Message.Body != "42" {
		t.Errorf("MessageReceived = %+v", e[0].Message)
	}
	if e := rec.of(runtime.Ended); len(e) == 1 && (e[0].Status != runtime.Published || e[0].Text != o.Summary) {
		t.Errorf("Ended = %+v", e[0])
	}
	outputs := rec.of(runtime.Output)
	if !slices.ContainsFunc(outputs, func(e runtime.Event) bool { return e.Text == "working on it" }) {
		t.Errorf("no Output event for the agent's line: %+v", outputs)
	}
	// The protocol files stay in scratch/.
	for _, name := range []string{autonomous.TaskFile, autonomous.ContextFile, autonomous.InboxFile, autonomous.OutboxFile, autonomous.ResultFile} {
		if _, err := os.Stat(filepath.Join(a.Dir.Scratch(), name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestExitWithoutResultFails(t *testing.T) {
	cmd := script(t, `
echo "first line"
echo "complaint on stderr" >&2
echo "last words"
exit 3
`)
	rec := &recorder{t: t}
	o, err := autonomous.New(cmd, fast...).Run(context.Background(), assignment(t, "anything"), rec.sink)
	if o.Status != runtime.Failed {
		t.Errorf("status = %s", o.Status)
	}
	if !errors.Is(err, runtime.ErrNoResult) {
		t.Fatalf("err = %v, want ErrNoResult", err)
	}
	for _, want := range []string{"exit status 3", "first line", "complaint on stderr", "last words"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err %q does not mention %q", err, want)
		}
	}
	if len(o.Published) != 0 {
		t.Errorf("published %v", o.Published)
	}
	if e := rec.of(runtime.Ended); len(e) != 1 || e[0].Status != runtime.Failed {
		t.Errorf("Ended = %+v", e)
	}
}

func TestOutputTailIsBounded(t *testing.T) {
	cmd := script(t, `
i=0
while [ $i -lt 200 ]; do echo "line number $i"; i=$((i+1)); done
exit 1
`)
	_, err := autonomous.New(cmd, append(fast, autonomous.WithOutputTail(64))...).Run(context.Background(), assignment(t, "x"), nil)
	if err == nil || !strings.Contains(err.Error(), "line number 199") || strings.Contains(err.Error(), "line number 150") {
		t.Errorf("err = %v", err)
	}
}

func TestHangingAgentStalls(t *testing.T) {
	cmd := script(t, `
sleep 1000 &
echo $! > _child.tmp && mv _child.tmp _child
echo $$ > _pid.tmp && mv _pid.tmp _pid
wait
`)
	a := assignment(t, "hang")
	rt := runtime.Watch(autonomous.New(cmd, fast...), 300*time.Millisecond)
	o, err := rt.Run(context.Background(), a, nil)
	if o.Status != runtime.Stalled || !errors.Is(err, runtime.ErrStalled) {
		t.Fatalf("outcome %+v, err %v; want stalled", o, err)
	}
	started(t, a, "_pid")
	started(t, a, "_child")
	assertGone(t, a)
}

func TestResultStopsRunningAgent(t *testing.T) {
	for _, tc := range []struct{ name, trap string }{
		{"terminates", ""},
		{"ignores SIGTERM", "trap '' TERM"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := script(t, tc.trap+`
echo $$ > _pid.tmp && mv _pid.tmp _pid
echo "the report" > report.md
mkdir -p data && echo 1 > data/one.txt
echo "Wrote the report." > _result.md
sleep 1000
`)
			a := assignment(t, "report")
			o, err := autonomous.New(cmd, fast...).Run(context.Background(), a, nil)
			if err != nil {
				t.Fatal(err)
			}
			if o.Status != runtime.Published || o.Summary != "Wrote the report." {
				t.Errorf("outcome = %+v", o)
			}
			if !slices.Equal(o.Published, []string{"data/one.txt", "report.md"}) {
				t.Errorf("Published = %v", o.Published)
			}
			if got := readFile(t, filepath.Join(a.Dir.Published(), "report.md")); got != "the report\n" {
				t.Errorf("report.md = %q", got)
			}
			started(t, a, "_pid")
			assertGone(t, a)
		})
	}
}

func TestCheckpointPublishesNothing(t *testing.T) {
	cmd := script(t, `
echo "draft" > draft.md
echo "Stage one done; stage two remains." > _checkpoint.md
sleep 1000
`)
	a := assignment(t, "stage")
	o, err := autonomous.New(cmd, fast...).Run(context.Background(), a, nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.Status != runtime.Checkpointed || o.Summary != "Stage one done; stage two remains." || len(o.Published) != 0 {
		t.Errorf("outcome = %+v", o)
	}
	if entries, _ := os.ReadDir(a.Dir.Published()); len(entries) != 0 {
		t.Errorf("published/ holds %v", entries)
	}
	if _, err := os.Stat(filepath.Join(a.Dir.Scratch(), "draft.md")); err != nil {
		t.Errorf("the draft left scratch/: %v", err)
	}

	// The next run of the node starts where the checkpoint left off, without the stale file.
	cmd2 := script(t, `
grep -q 'Stage one done' _task.md || { echo "no previous stage in _task.md"; exit 4; }
[ ! -e _checkpoint.md ] || { echo "stale checkpoint"; exit 4; }
grep -q 'Use the blue one' _task.md || { echo "no answer in _task.md"; exit 4; }
echo "Finished." > _result.md
`)
	a.Answer = "Use the blue one."
	o, err = autonomous.New(cmd2, fast...).Run(context.Background(), a, nil)
	if err != nil || o.Status != runtime.Published || !slices.Equal(o.Published, []string{"draft.md"}) {
		t.Errorf("second stage: %+v, %v", o, err)
	}
}

func TestCancelStopsAgent(t *testing.T) {
	cmd := script(t, `
echo $$ > _pid.tmp && mv _pid.tmp _pid
sleep 1000
`)
	a := assignment(t, "wait forever")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		o   runtime.Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		o, err := autonomous.New(cmd, fast...).Run(ctx, a, nil)
		done <- result{o, err}
	}()
	started(t, a, "_pid")
	cancel()
	r := <-done
	if r.o.Status != runtime.Cancelled || !errors.Is(r.err, context.Canceled) {
		t.Errorf("outcome %+v, err %v; want cancelled", r.o, r.err)
	}
	assertGone(t, a)
}

func TestDeadlineTimesOut(t *testing.T) {
	cmd := script(t, "sleep 1000\n")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	o, err := autonomous.New(cmd, fast...).Run(ctx, assignment(t, "x"), nil)
	if o.Status != runtime.TimedOut || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("outcome %+v, err %v; want timed out", o, err)
	}
}

func TestTemplate(t *testing.T) {
	rt := autonomous.New([]string{"agent", "--task={{.TaskFile}}", "{{.Bogus}} {{.Worker}} {{$.Nope}}"})
	err := rt.Err()
	if !errors.Is(err, autonomous.ErrTemplate) {
		t.Fatalf("Err = %v, want ErrTemplate", err)
	}
	for _, want := range []string{"{{.Bogus}}", "{{.Nope}}", "{{.TaskFile}}"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not mention %s", err, want)
		}
	}
	rec := &recorder{t: t}
	a := assignment(t, "x")
	o, runErr := rt.Run(context.Background(), a, rec.sink)
	if o.Status != runtime.Failed || !errors.Is(runErr, autonomous.ErrTemplate) {
		t.Errorf("Run = %+v, %v", o, runErr)
	}
	if got := rec.kinds(false); !slices.Equal(got, []runtime.Kind{runtime.Ended}) {
		t.Errorf("events = %v", got)
	}
	if _, err := os.Stat(string(a.Dir)); err == nil {
		t.Errorf("a bad template still created the node folder")
	}

	for _, bad := range [][]string{nil, {}, {"agent", "{{.Task"}, {"agent", "{{.Task.Size}}"}, {"agent", "{{nosuchfunc}}"}} {
		if err := autonomous.New(bad).Err(); !errors.Is(err, autonomous.ErrTemplate) {
			t.Errorf("New(%q).Err() = %v, want ErrTemplate", bad, err)
		}
	}
	for _, good := range [][]string{autonomous.Codex(), autonomous.Gemini(), autonomous.Aider(), autonomous.Script("/bin/true")} {
		if err := autonomous.New(good).Err(); err != nil {
			t.Errorf("New(%q).Err() = %v", good, err)
		}
	}
}

func TestTemplateRendersAssignment(t *testing.T) {
	p := filepath.Join(t.TempDir(), "agent.sh")
	if err := os.WriteFile(p, []byte(`#!/bin/sh
printf '%s\n' "$@" > args.txt
echo "$AGIRAPH_NODE $AGIRAPH_WORKER $EXTRA" > env.txt
pwd > pwd.txt
echo done > _result.md
`), 0o755); err != nil {
		t.Fatal(err)
	}
	rt := autonomous.New([]string{p, "{{.TaskFile}}", "{{.Worker}}@{{.Node}}", "{{.Task}}", "{{if .Run}}run={{.Run}}{{end}}", "{{.Prompt}}"},
		append(fast, autonomous.WithEnv([]string{"EXTRA=yes"}))...)
	a := assignment(t, "do the thing")
	o, err := rt.Run(context.Background(), a, nil)
	if err != nil {
		t.Fatal(err)
	}
	scratch, _ := filepath.Abs(a.Dir.Scratch())
	args := strings.Split(strings.TrimSuffix(readFile(t, filepath.Join(a.Dir.Published(), "args.txt")), "\n"), "\n")
	want := []string{filepath.Join(scratch, "_task.md"), "alice@n1", "do the thing", "run=r1", autonomous.Prompt}
	if !slices.Equal(args, want) {
		t.Errorf("args = %q, want %q", args, want)
	}
	if got := readFile(t, filepath.Join(a.Dir.Published(), "env.txt")); got != "n1 alice yes\n" {
		t.Errorf("env = %q", got)
	}
	if got := strings.TrimSpace(readFile(t, filepath.Join(a.Dir.Published(), "pwd.txt"))); got != scratch {
		t.Errorf("working directory = %q, want %q", got, scratch)
	}
	if len(o.Published) != 3 {
		t.Errorf("Published = %v", o.Published)
	}
}

func TestTaskAndContextFiles(t *testing.T) {
	cmd := script(t, "cp _task.md task.copy; cp _context.json context.copy; echo ok > _result.md\n")
	a := assignment(t, "Write a poem.")
	a.System = "You are a careful poet."
	a.Mailbox = &runtimetest.Mailbox{}
	if err := a.Dir.Create(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(a.Dir.Path("_refs.json"), []byte(`{"data": "nodes/n0/published/data.csv"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := autonomous.New(cmd, fast...).Run(context.Background(), a, nil); err != nil {
		t.Fatal(err)
	}
	task := readFile(t, filepath.Join(a.Dir.Published(), "task.copy"))
	for _, want := range []string{"Write a poem.", "You are a careful poet.", "_result.md", "_checkpoint.md", "TO:", "---", "[Message from"} {
		if !strings.Contains(task, want) {
			t.Errorf("_task.md lacks %q:\n%s", want, task)
		}
	}
	ctxt := readFile(t, filepath.Join(a.Dir.Published(), "context.copy"))
	for _, want := range []string{`"assignment": "a1"`, `"worker": "alice"`, `"node": "n1"`, `"scratch"`, `nodes/n0/published/data.csv`} {
		if !strings.Contains(ctxt, want) {
			t.Errorf("_context.json lacks %q:\n%s", want, ctxt)
		}
	}
}

func TestOutboxBlocks(t *testing.T) {
	// Two blocks in one write, a block without TO:, and an unterminated last block that is
	// sent when the agent exits.
	cmd := script(t, `
printf 'TO: bob\nfirst\n---\n\nTO: carol\nsecond\n---\nno recipient here\n---\n' >> _outbox.md
n=0
until grep -q 'not sent' _inbox.md; do
  n=$((n+1)); [ $n -gt 600 ] && { echo "no note"; exit 6; }
  sleep 0.05
done
printf 'TO: *\nbye' >> _outbox.md
echo done > _result.md
`)
	mb := &runtimetest.Mailbox{}
	a := assignment(t, "talk")
	a.Mailbox = mb
	rec := &recorder{t: t}
	if _, err := autonomous.New(cmd, fast...).Run(context.Background(), a, rec.sink); err != nil {
		t.Fatal(err)
	}
	want := []runtime.Message{{To: "bob", Body: "first"}, {To: "carol", Body: "second"}, {To: "*", Body: "bye"}}
	if got := mb.Sent(); !slices.Equal(got, want) {
		t.Errorf("sent = %+v, want %+v", got, want)
	}
	if n := len(rec.of(runtime.MessageSent)); n != 3 {
		t.Errorf("%d MessageSent events", n)
	}
}

func TestWithoutMailboxOutboxIsIgnored(t *testing.T) {
	cmd := script(t, `
grep -q '_outbox.md' _task.md && { echo "messages offered without a mailbox"; exit 4; }
printf 'TO: bob\nhello\n---\n' >> _outbox.md
echo done > _result.md
`)
	rec := &recorder{t: t}
	o, err := autonomous.New(cmd, fast...).Run(context.Background(), assignment(t, "alone"), rec.sink)
	if err != nil || o.Status != runtime.Published {
		t.Fatalf("%+v, %v", o, err)
	}
	if n := len(rec.of(runtime.MessageSent)); n != 0 {
		t.Errorf("%d MessageSent events without a mailbox", n)
	}
}

func TestConcurrentAssignments(t *testing.T) {
	cmd := script(t, `
sleep 0.1
echo "$AGIRAPH_NODE" > out.txt
echo "node $AGIRAPH_NODE done" > _result.md
`)
	rt := autonomous.New(cmd, fast...)
	base := t.TempDir()
	const n = 6
	var wg sync.WaitGroup
	outcomes := make([]runtime.Outcome, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			node := fmt.Sprintf("n%d", i)
			a := runtime.Assignment{ID: "a" + node, Node: node, Worker: "w", Task: "t", Dir: runtime.NodeDir(filepath.Join(base, node))}
			outcomes[i], errs[i] = rt.Run(context.Background(), a, nil)
		})
	}
	wg.Wait()
	for i := range n {
		node := fmt.Sprintf("n%d", i)
		if errs[i] != nil || outcomes[i].Status != runtime.Published || outcomes[i].Summary != "node "+node+" done" {
			t.Errorf("%s: %+v, %v", node, outcomes[i], errs[i])
			continue
		}
		if got := readFile(t, filepath.Join(base, node, "published", "out.txt")); got != node+"\n" {
			t.Errorf("%s: out.txt = %q", node, got)
		}
	}
}

func TestRewrittenOutboxIsReadAfresh(t *testing.T) {
	// The agent replaces its outbox after the first message went out (it got the reply):
	// the new content is sent, the old block not again.
	cmd := script(t, `
printf 'TO: bob\nfirst\n---\n' >> _outbox.md
n=0
until grep -q 'Message from bob' _inbox.md; do
  n=$((n+1)); [ $n -gt 600 ] && { echo "no reply"; exit 6; }
  sleep 0.05
done
printf 'TO: bob\nsecond\n---\n' > _outbox.md
sleep 0.2
echo done > _result.md
`)
	mb := &mailbox{reply: "ok"}
	a := assignment(t, "talk")
	a.Mailbox = mb
	if _, err := autonomous.New(cmd, fast...).Run(context.Background(), a, nil); err != nil {
		t.Fatal(err)
	}
	want := []runtime.Message{{To: "bob", Body: "first"}, {To: "bob", Body: "second"}}
	if got := mb.Sent(); !slices.Equal(got, want) {
		t.Errorf("sent = %+v, want %+v", got, want)
	}
}

func TestLongOutputLinesAreCut(t *testing.T) {
	cmd := script(t, `
i=0
while [ $i -lt 1000 ]; do printf 'xxxxxxxxxx'; i=$((i+1)); done
exit 1
`)
	rec := &recorder{t: t}
	if _, err := autonomous.New(cmd, fast...).Run(context.Background(), assignment(t, "x"), rec.sink); !errors.Is(err, runtime.ErrNoResult) {
		t.Fatalf("err = %v", err)
	}
	total := 0
	for _, e := range rec.of(runtime.Output) {
		if len(e.Text) > 4<<10 {
			t.Errorf("an Output event of %d bytes", len(e.Text))
		}
		total += len(e.Text)
	}
	if total != 10000 {
		t.Errorf("Output events carry %d bytes, want 10000", total)
	}
}

func TestConformance(t *testing.T) { runtimetest.Run(t, scriptBehaviors{}) }

// scriptBehaviors are runtimes over shell script agents that do their part in their working
// directory through the file protocol.
type scriptBehaviors struct{}

func (scriptBehaviors) Prepare(*testing.T, *runtime.Assignment) {}

func (b scriptBehaviors) Publishes(t *testing.T, file, content, summary string) runtime.Runtime {
	return autonomous.New(script(t, b.write(file, content)+b.finish(autonomous.ResultFile, summary)), fast...)
}

func (b scriptBehaviors) Checkpoints(t *testing.T, file, content, summary string) runtime.Runtime {
	return autonomous.New(script(t, b.write(file, content)+b.finish(autonomous.CheckpointFile, summary)), fast...)
}

func (b scriptBehaviors) SendsThenPublishes(t *testing.T, to, body, summary string) runtime.Runtime {
	send := fmt.Sprintf("printf 'TO: %%s\\n%%s\\n---\\n' %s %s >> %s\n", b.quote(to), b.quote(body), autonomous.OutboxFile)
	return autonomous.New(script(t, send+b.finish(autonomous.ResultFile, summary)), fast...)
}

func (scriptBehaviors) Hangs(t *testing.T) runtime.Runtime {
	return autonomous.New(script(t, "sleep 1000 &\nwait\n"), fast...)
}

// write returns the shell line that writes content to the file name.
func (b scriptBehaviors) write(name, content string) string {
	return fmt.Sprintf("printf '%%s' %s > %s\n", b.quote(content), b.quote(name))
}

// finish returns the shell line that writes summary to the protocol file name, whole, by a
// rename.
func (b scriptBehaviors) finish(name, summary string) string {
	return fmt.Sprintf("printf '%%s\\n' %s > %s.tmp && mv %s.tmp %s\n", b.quote(summary), name, name, name)
}

// quote quotes s for the shell.
func (scriptBehaviors) quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// A run that ends without a result, or is stopped (its deadline, a stall, a cancellation),
// fails naming the agent's last three errors: lines of text that say so, the message of a JSON
// event of type error or *.failed (Codex's), a repeated one once; not other JSON lines, whatever
// they quote.
func TestFailureNamesLastErrors(t *testing.T) {
	const output = `
echo "fatal: an early error, one too many"
echo "Starting."
echo '{"type":"thread.started","thread_id":"t1"}'
echo "Attempt 1 failed. Retrying with backoff... Error: fetch failed sending request" >&2
echo '{"type":"item.completed","item":{"type":"command_execution","aggregated_output":"error: from the command itself"}}'
echo '{"type":"error","message":"Reconnecting... waiting for network (Connection failed: error sending request)"}'
echo '{"type":"turn.failed","error":{"message":"stream disconnected before completion"}}'
echo '{"type":"error","message":"Reconnecting... waiting for network (Connection failed: error sending request)"}'
echo "    at retryWithBackoff (file:///bundle/chunk.js:1:1)"
`
	const want = "; the agent's last errors: Attempt 1 failed. Retrying with backoff... Error: fetch failed sending request" +
		" | stream disconnected before completion | Reconnecting... waiting for network (Connection failed: error sending request)"

	t.Run("exited", func(t *testing.T) {
		_, err := autonomous.New(script(t, output+"exit 1\n"), fast...).Run(context.Background(), assignment(t, "x"), nil)
		require.ErrorIs(t, err, runtime.ErrNoResult)
		assert.Contains(t, err.Error(), "the agent exited with exit status 1"+want+"; last output:")
	})
	t.Run("stopped", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		rec := &recorder{t: t}
		sink := func(e runtime.Event) {
			rec.sink(e)
			if e.Kind == runtime.Output && e.Text == "ready" {
				cancel(context.DeadlineExceeded)
			}
		}
		_, err := autonomous.New(script(t, output+"echo ready\nexec sleep 1000\n"), fast...).Run(ctx, assignment(t, "x"), sink)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, "autonomous: agent stopped: context deadline exceeded"+want, err.Error())
	})
}

// A result the agent made that is not a regular file — a FIFO, whose read would wait for a
// writer for ever — fails the assignment, naming the file, instead of hanging the worker.
func TestResultThatIsNotAFile(t *testing.T) {
	type ended struct {
		o   runtime.Outcome
		err error
	}
	done := make(chan ended, 1)
	go func() {
		o, err := autonomous.New(script(t, "mkfifo "+autonomous.ResultFile+"\n"), fast...).Run(context.Background(), assignment(t, "x"), nil)
		done <- ended{o, err}
	}()
	select {
	case got := <-done:
		require.Error(t, got.err)
		assert.Equal(t, runtime.Failed, got.o.Status)
		assert.Contains(t, got.err.Error(), autonomous.ResultFile)
		assert.Contains(t, got.err.Error(), "not a regular file")
	case <-time.After(time.Minute): // only a guard against the hang this test is about
		t.Fatal("the run waits on the FIFO")
	}
}

// An error the failure names is cut at a whole character: the failure stays valid UTF-8.
func TestFailureCutsALongErrorAtACharacter(t *testing.T) {
	line := "error: " + strings.Repeat("é", 400) // 807 bytes; 500 of them end inside an é
	_, err := autonomous.New(script(t, "echo '"+line+"'\nexit 1\n"), fast...).Run(context.Background(), assignment(t, "x"), nil)
	require.ErrorIs(t, err, runtime.ErrNoResult)
	assert.True(t, utf8.ValidString(err.Error()), "not UTF-8: %q", err.Error())
	assert.Contains(t, err.Error(), "; the agent's last error: error: "+strings.Repeat("é", 246)+"…; ")
}

// A JSON event whose message is an object, not a string (Claude Code's stream-json: the
// model's message), is no error, whatever its text quotes.
func TestFailureNamesNoJSONMessageObject(t *testing.T) {
	const output = `echo '{"type":"assistant","message":{"content":[{"type":"text","text":"The error was in parse.go; fixed."}]}}'
exit 1
`
	_, err := autonomous.New(script(t, output), fast...).Run(context.Background(), assignment(t, "x"), nil)
	require.ErrorIs(t, err, runtime.ErrNoResult)
	assert.NotContains(t, err.Error(), "the agent's last error")
}

// A JSON line longer than an Output event (reported in pieces) is read whole for what it says:
// a command's long output that quotes an error is none; a long error event is named.
func TestFailureReadsALongJSONLineWhole(t *testing.T) {
	long := strings.Repeat("y", 10<<10)
	t.Run("output", func(t *testing.T) {
		output := `echo '{"type":"item.completed","item":{"type":"command_execution","aggregated_output":"error: from the command itself ` + long + ` failed"}}'
exit 1
`
		_, err := autonomous.New(script(t, output), fast...).Run(context.Background(), assignment(t, "x"), nil)
		require.ErrorIs(t, err, runtime.ErrNoResult)
		assert.NotContains(t, err.Error(), "the agent's last error")
	})
	t.Run("error", func(t *testing.T) {
		output := `echo '{"type":"error","message":"Connection failed: ` + long + `"}'
exit 1
`
		_, err := autonomous.New(script(t, output), fast...).Run(context.Background(), assignment(t, "x"), nil)
		require.ErrorIs(t, err, runtime.ErrNoResult)
		assert.Contains(t, err.Error(), "; the agent's last error: Connection failed: yyy")
	})
}
