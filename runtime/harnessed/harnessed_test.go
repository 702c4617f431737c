package harnessed_test

import (
	"context"
	"encoding/json"
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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/checkpoint/sqlite"
	"github.com/agiraph/agiraph/internal/leaktest"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/adapter"
	"github.com/agiraph/agiraph/runtime/harnessed"
	"github.com/agiraph/agiraph/runtime/runtimetest"
	"github.com/agiraph/agiraph/tools"
	"github.com/agiraph/agiraph/tools/files"
	"github.com/agiraph/agiraph/tools/shell"
)

func TestMain(m *testing.M) { leaktest.VerifyTestMain(m) }

// call makes a tool call with JSON arguments.
func call(id, name string, args any) tools.Call {
	raw, err := json.Marshal(args)
	if err != nil {
		panic(err)
	}
	return tools.Call{ID: id, Name: name, Args: raw}
}

// assignment returns an assignment whose worker may read and write its scratch directory and
// run bash there.
func assignment(t *testing.T, id, task string) runtime.Assignment {
	t.Helper()
	dir := runtime.NodeDir(filepath.Join(t.TempDir(), id))
	if err := dir.Create(); err != nil {
		t.Fatal(err)
	}
	scope := files.Scope{Root: dir.Scratch(), Read: []string{""}, Write: []string{""}}
	return runtime.Assignment{
		ID: id, Run: "r1", Node: "n1", Worker: "alice", Task: task, System: "You are Alice.", Dir: dir,
		Tools: append(scope.Tools(), shell.Bash(shell.Dir(dir.Scratch()))),
	}
}

// recorder collects events.
type recorder struct {
	mu     sync.Mutex
	events []runtime.Event
}

func (r *recorder) sink(e runtime.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) kinds() []runtime.Kind {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ks []runtime.Kind
	for _, e := range r.events {
		ks = append(ks, e.Kind)
	}
	return ks
}

// turnUsages returns the usages of the model_turn events; every one must carry one.
func (r *recorder) turnUsages(t *testing.T) []providers.Usage {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var us []providers.Usage
	for _, e := range r.events {
		if e.Kind == runtime.ModelTurn {
			require.NotNil(t, e.Usage, "model_turn without usage")
			us = append(us, *e.Usage)
		}
	}
	return us
}

func (r *recorder) tools(kind runtime.Kind) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var names []string
	for _, e := range r.events {
		if e.Kind == kind && e.Tool != nil {
			names = append(names, e.Tool.Name)
		}
	}
	return names
}

// lastResult returns the content of the tool results in the last message of req.
func lastResults(req providers.Request) []tools.Result {
	last := req.Messages[len(req.Messages)-1]
	var rs []tools.Result
	for _, p := range last.Parts {
		if p.ToolResult != nil {
			rs = append(rs, *p.ToolResult)
		}
	}
	return rs
}

// Seed scenario 1: write a program, run it with bash, read its output, publish.
func TestWriteRunReadPublish(t *testing.T) {
	a := assignment(t, "a1", "Write hello.py that prints 42, run it, and report the output.")
	var sawOutput atomic.Bool
	model := scripted.NewFunc("coder", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		turn := 0
		for _, m := range req.Messages {
			if m.Role == providers.Assistant {
				turn++
			}
		}
		switch turn {
		case 0:
			return scripted.Turn{Text: "I'll write it.", Calls: []tools.Call{call("c1", "write_file", files.WriteArgs{Path: "hello.py", Content: "print(6*7)\n"})}}, nil
		case 1:
			return scripted.Turn{Calls: []tools.Call{call("c2", "bash", shell.Args{Command: "python3 hello.py > out.txt || echo 42 > out.txt"})}}, nil
		case 2:
			return scripted.Turn{Calls: []tools.Call{call("c3", "read_file", files.ReadArgs{Path: "out.txt"})}}, nil
		case 3:
			if rs := lastResults(req); len(rs) == 1 && strings.Contains(rs[0].Content, "42") {
				sawOutput.Store(true)
			}
			return scripted.Turn{Calls: []tools.Call{call("c4", "publish", adapter.PublishArgs{Summary: "hello.py prints 42"})}}, nil
		}
		return scripted.Turn{}, fmt.Errorf("unexpected turn %d", turn)
	}).KeepRequests()
	var rec recorder
	o, err := harnessed.New(model).Run(context.Background(), a, rec.sink)
	if err != nil {
		t.Fatal(err)
	}
	if o.Status != runtime.Published || o.Summary != "hello.py prints 42" || o.Turns != 4 {
		t.Fatalf("outcome %+v", o)
	}
	if want := []string{"hello.py", "out.txt"}; !slices.Equal(o.Published, want) {
		t.Fatalf("published %v, want %v", o.Published, want)
	}
	if b, err := os.ReadFile(filepath.Join(a.Dir.Published(), "out.txt")); err != nil || strings.TrimSpace(string(b)) != "42" {
		t.Fatalf("published out.txt = %q, %v", b, err)
	}
	if !sawOutput.Load() {
		t.Fatal("the model never saw the program's output")
	}
	if want := []string{"write_file", "bash", "read_file", "publish"}; !slices.Equal(rec.tools(runtime.ToolResult), want) {
		t.Fatalf("tool results %v, want %v", rec.tools(runtime.ToolResult), want)
	}
	ks := rec.kinds()
	if ks[0] != runtime.Started || ks[len(ks)-1] != runtime.Ended {
		t.Fatalf("events %v: want started first and ended last", ks)
	}
	// The system prompt carries the assignment's, the protocol and the tools' guidance.
	sys := model.Requests()[0].System
	for _, want := range []string{"You are Alice.", a.Dir.Scratch(), "call publish"} {
		if !strings.Contains(sys, want) {
			t.Errorf("system prompt lacks %q", want)
		}
	}
}

// A message that arrives while a tool runs is shown at the next yield point: after the turn's
// tool results, in the same message, before the next model call.
func TestMessageArrivingMidLoopIsSeenAtTheNextYieldPoint(t *testing.T) {
	a := assignment(t, "a2", "Research, then publish.")
	mb := &runtimetest.Mailbox{}
	a.Mailbox = mb
	slow := tools.Func("survey", "Survey the field.", func(context.Context, struct{}) (string, error) {
		mb.Deliver("bob", "use the 2024 numbers")
		return "surveyed", nil
	})
	a.Tools = append(a.Tools, slow)
	model := scripted.New("w",
		scripted.Turn{Calls: []tools.Call{call("c1", "survey", struct{}{}), call("c2", "write_file", files.WriteArgs{Path: "notes.md", Content: "n"})}},
		scripted.Turn{Calls: []tools.Call{call("c3", "publish", adapter.PublishArgs{Summary: "done"})}},
	).KeepRequests()
	var rec recorder
	if _, err := harnessed.New(model).Run(context.Background(), a, rec.sink); err != nil {
		t.Fatal(err)
	}
	second := model.Requests()[1].Messages
	last := second[len(second)-1]
	if len(last.Parts) != 3 || last.Parts[0].ToolResult == nil || last.Parts[1].ToolResult == nil {
		t.Fatalf("last message %+v: want both tool results first", last)
	}
	if last.Parts[2].Text != "[Message from bob]: use the 2024 numbers" {
		t.Fatalf("message shown as %q", last.Parts[2].Text)
	}
	if !slices.Contains(rec.kinds(), runtime.MessageReceived) {
		t.Fatal("no message_received event")
	}
	// A message waiting before a model call is shown before it.
	b := assignment(t, "a2b", "Reply to mail.")
	mb2 := &runtimetest.Mailbox{}
	mb2.Deliver("coordinator", "hurry")
	b.Mailbox = mb2
	m2 := scripted.New("w", scripted.Turn{Calls: []tools.Call{call("c1", "checkpoint", adapter.CheckpointArgs{Summary: "ok"})}}).KeepRequests()
	o, err := harnessed.New(m2).Run(context.Background(), b, nil)
	if err != nil || o.Status != runtime.Checkpointed {
		t.Fatalf("outcome %+v, %v", o, err)
	}
	if msgs := m2.Requests()[0].Messages; len(msgs) != 2 || msgs[1].Text() != "[Message from coordinator]: hurry" {
		t.Fatalf("first request %+v", msgs)
	}
}

// A worker stopped in the middle of its conversation continues from its last saved step when
// run again: finished tool calls are not repeated and answered turns are not asked again.
func TestResumeContinuesTheConversation(t *testing.T) {
	saver, err := sqlite.Open(filepath.Join(t.TempDir(), "w.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer saver.Close()
	a := assignment(t, "a3", "Count twice, then publish.")
	var counted atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	count := tools.Func("count", "Count.", func(context.Context, struct{}) (string, error) {
		return fmt.Sprint(counted.Add(1)), nil
	})
	block := tools.Func("block", "Wait.", func(ctx context.Context, _ struct{}) (string, error) {
		cancel() // the process is stopped while this tool runs
		<-ctx.Done()
		return "", ctx.Err()
	})
	a.Tools = append(a.Tools, count, block)
	first := scripted.New("w",
		scripted.Turn{Calls: []tools.Call{call("c1", "count", struct{}{})}},
		scripted.Turn{Calls: []tools.Call{call("c2", "count", struct{}{}), call("c3", "block", struct{}{})}},
	)
	o, err := harnessed.New(first, harnessed.WithSaver(saver)).Run(ctx, a, nil)
	if !errors.Is(err, context.Canceled) || o.Status != runtime.Cancelled || o.Turns != 2 {
		t.Fatalf("first run: outcome %+v, err %v; want cancelled after 2 turns", o, err)
	}

	// A new process: a new runtime over the same database, a model that knows only the rest.
	var unblocked atomic.Bool
	a.Tools[len(a.Tools)-1] = tools.Func("block", "Wait.", func(context.Context, struct{}) (string, error) {
		unblocked.Store(true)
		return "unblocked", nil
	})
	rest := scripted.New("w", scripted.Turn{Calls: []tools.Call{call("c4", "publish", adapter.PublishArgs{Summary: "counted"})}}).KeepRequests()
	var rec recorder
	o, err = harnessed.New(rest, harnessed.WithSaver(saver)).Run(context.Background(), a, rec.sink)
	if err != nil || o.Status != runtime.Published || o.Turns != 3 {
		t.Fatalf("resumed run: outcome %+v, err %v", o, err)
	}
	if n := counted.Load(); n != 2 {
		t.Fatalf("count ran %d times, want 2 (the finished call is not repeated)", n)
	}
	if !unblocked.Load() {
		t.Fatal("the interrupted call did not run again")
	}
	req := rest.Requests()[0]
	if n := len(req.Messages); n != 5 {
		t.Fatalf("the resumed model got %d messages, want the 5 of the conversation so far", n)
	}
	if rs := lastResults(req); len(rs) != 2 || rs[0].Content != "2" || rs[1].Content != "unblocked" {
		t.Fatalf("results of the interrupted turn: %+v", rs)
	}
	if got := rec.kinds()[0]; got != runtime.Started || !strings.Contains(rec.events[0].Text, "resumed after 2 turns") {
		t.Fatalf("first event %+v", rec.events[0])
	}

	// Run again once it ended: the outcome, without a model call.
	o2, err := harnessed.New(scripted.New("none"), harnessed.WithSaver(saver)).Run(context.Background(), a, nil)
	if err != nil || o2.Status != runtime.Published || o2.Summary != "counted" {
		t.Fatalf("finished assignment run again: %+v, %v", o2, err)
	}
}

// ask_human stops the assignment with the question; run again with the answer, the worker gets
// it as the tool's result, and calls before it in the same turn are not repeated.
func TestAskHumanWaitsForTheAnswer(t *testing.T) {
	a := assignment(t, "a4", "Pick a colour.")
	var counted atomic.Int32
	a.Tools = append(a.Tools, tools.Func("count", "Count.", func(context.Context, struct{}) (string, error) {
		return fmt.Sprint(counted.Add(1)), nil
	}))
	model := scripted.New("w",
		scripted.Turn{Calls: []tools.Call{call("c1", "count", struct{}{}), call("c2", "ask_human", map[string]string{"question": "Red or blue?"})}},
		scripted.Turn{Calls: []tools.Call{call("c3", "checkpoint", adapter.CheckpointArgs{Summary: "chose"})}},
	).KeepRequests()
	rt := harnessed.New(model)
	var rec recorder
	o, err := rt.Run(context.Background(), a, rec.sink)
	if err != nil || o.Status != runtime.Waiting || o.Question != "Red or blue?" {
		t.Fatalf("outcome %+v, err %v; want waiting with the question", o, err)
	}
	if !slices.Contains(rec.kinds(), runtime.AskedHuman) {
		t.Fatal("no asked_human event")
	}
	// Without an answer it keeps waiting.
	if o, err := rt.Run(context.Background(), a, nil); err != nil || o.Status != runtime.Waiting {
		t.Fatalf("run without answer: %+v, %v", o, err)
	}
	a.Answer = "Blue"
	o, err = rt.Run(context.Background(), a, nil)
	if err != nil || o.Status != runtime.Checkpointed {
		t.Fatalf("answered: %+v, %v", o, err)
	}
	rs := lastResults(model.Requests()[1])
	if len(rs) != 2 || rs[1].Content != "The human answered: Blue" {
		t.Fatalf("results %+v", rs)
	}
	if counted.Load() != 1 {
		t.Fatalf("count ran %d times, want 1", counted.Load())
	}
}

// Compaction: on a small context limit the worker is asked to save notes, the conversation is
// archived and rebuilt, and the worker still finishes with its notes intact.
func TestCompactionKeepsNotesAndFinishes(t *testing.T) {
	a := assignment(t, "a5", "Collect five facts into notes.md, then publish.")
	big := strings.Repeat("x", 2000)
	a.Tools = append(a.Tools, tools.Func("fetch", "Fetch a fact.", func(_ context.Context, args struct {
		N int `json:"n"`
	}) (string, error) {
		return fmt.Sprintf("fact %d: %s", args.N, big), nil
	}))
	var compactedSeen atomic.Bool
	fetched := 0
	model := scripted.NewFunc("w", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		last := req.Messages[len(req.Messages)-1]
		first := req.Messages[0].Text()
		if strings.Contains(first, "This conversation was compacted") {
			compactedSeen.Store(true)
		}
		switch {
		case strings.Contains(last.Text(), "about to be compacted"):
			return scripted.Turn{Calls: []tools.Call{call("n", "write_file", files.WriteArgs{Path: "notes.md", Content: fmt.Sprintf("facts 1-%d collected\n", fetched)})}}, nil
		case fetched < 5:
			fetched++
			return scripted.Turn{Calls: []tools.Call{call(fmt.Sprint("f", fetched), "fetch", map[string]int{"n": fetched})}}, nil
		}
		return scripted.Turn{Calls: []tools.Call{call("p", "publish", adapter.PublishArgs{Summary: "five facts"})}}, nil
	}).KeepRequests()
	var rec recorder
	o, err := harnessed.New(model, harnessed.WithContextLimit(3000), harnessed.WithKeepMessages(2)).Run(context.Background(), a, rec.sink)
	if err != nil || o.Status != runtime.Published {
		t.Fatalf("outcome %+v, err %v", o, err)
	}
	if !slices.Contains(rec.kinds(), runtime.Compacted) || !compactedSeen.Load() {
		t.Fatalf("no compaction: events %v", rec.kinds())
	}
	if !slices.Contains(o.Published, "notes.md") {
		t.Fatalf("notes not published: %v", o.Published)
	}
	archives, _ := filepath.Glob(a.Dir.Path("_archive/a5.*.jsonl"))
	if len(archives) == 0 {
		t.Fatal("no archive of the old conversation")
	}
	b, _ := os.ReadFile(archives[0])
	if !strings.Contains(string(b), "fact 1:") {
		t.Fatal("the archive lacks the first fact")
	}
	// Every request after the first compaction is smaller than the limit allows.
	for i, req := range model.Requests() {
		size := 0
		for _, m := range req.Messages {
			size += len(m.Text())
			for _, r := range lastResults(providers.Request{Messages: []providers.Message{m}}) {
				size += len(r.Content)
			}
		}
		if size > 4*3000 {
			t.Errorf("request %d carries %d characters, over the context limit", i, size)
		}
	}
}

// The loop calls a model that failed only once: a bare model fails the assignment at its first
// failure, writing failure_notes.md; a model with retrying retries on its own, reported as
// Retrying events.
func TestModelFailure(t *testing.T) {
	boom := &providers.Error{Provider: "scripted", Model: "w", Kind: providers.ErrServer, Status: 500}
	a := assignment(t, "a6", "Work.")
	model := scripted.New("w",
		scripted.Turn{Calls: []tools.Call{call("c1", "write_file", files.WriteArgs{Path: "a.md", Content: "a"})}},
		scripted.Turn{Err: boom},
		scripted.Turn{Calls: []tools.Call{call("c2", "checkpoint", adapter.CheckpointArgs{Summary: "never"})}},
	)
	var rec recorder
	o, err := harnessed.New(model).Run(context.Background(), a, rec.sink)
	require.ErrorIs(t, err, providers.ErrServer)
	assert.Equal(t, runtime.Failed, o.Status)
	assert.Equal(t, 1, o.Turns)
	assert.Equal(t, 1, model.Remaining(), "the failed call was made again")
	notes, err := os.ReadFile(a.Dir.Path("failure_notes.md"))
	require.NoError(t, err)
	assert.Contains(t, string(notes), "write_file")
	assert.Contains(t, string(notes), "HTTP 500")
	assert.NotContains(t, rec.kinds(), runtime.Retrying)

	b := assignment(t, "a6b", "Work.")
	once := scripted.New("w", scripted.Turn{Err: boom}, scripted.Turn{Calls: []tools.Call{call("c1", "checkpoint", adapter.CheckpointArgs{Summary: "ok"})}})
	fast := providers.Retry{InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}
	rec = recorder{}
	o, err = harnessed.New(providers.WithRetry(once, fast)).Run(context.Background(), b, rec.sink)
	require.NoError(t, err)
	assert.Equal(t, runtime.Checkpointed, o.Status)
	assert.Equal(t, 1, count(rec.kinds(), runtime.Retrying))
	assert.NoFileExists(t, b.Dir.Path("failure_notes.md"))
}

// A fallback chain's move to its next model is reported as a Retrying event naming both models.
func TestModelFallbackReported(t *testing.T) {
	a := assignment(t, "a6c", "Work.")
	down := scripted.New("down", scripted.Turn{Err: &providers.Error{Provider: "scripted", Model: "down", Kind: providers.ErrOverloaded, Status: 529}})
	up := scripted.New("up", scripted.Turn{Calls: []tools.Call{call("c1", "checkpoint", adapter.CheckpointArgs{Summary: "ok"})}})
	var rec recorder
	o, err := harnessed.New(providers.Fallback(providers.FallbackOn{}, down, up)).Run(context.Background(), a, rec.sink)
	require.NoError(t, err)
	assert.Equal(t, runtime.Checkpointed, o.Status)
	var texts []string
	for _, e := range rec.events {
		if e.Kind == runtime.Retrying {
			texts = append(texts, e.Text)
		}
	}
	require.Len(t, texts, 1)
	assert.Contains(t, texts[0], "scripted/down failed, falling back to scripted/up: ")
	assert.Contains(t, texts[0], "overloaded")
}

func count[T comparable](s []T, v T) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}

// Each model_turn event carries the usage of its turn, cache and cost included, and the outcome
// their sum.
func TestModelTurnUsage(t *testing.T) {
	u1 := providers.Usage{InputTokens: 1200, OutputTokens: 85, CacheReadTokens: 300, CacheWriteTokens: 40, CostUSD: 0.0061}
	u2 := providers.Usage{InputTokens: 90, OutputTokens: 412, CacheReadTokens: 1500, CostUSD: 0.0074}
	a := assignment(t, "a14", "Work.")
	model := scripted.New("w",
		scripted.Turn{Calls: []tools.Call{call("c1", "write_file", files.WriteArgs{Path: "a.md", Content: "a"})}, Usage: u1},
		scripted.Turn{Calls: []tools.Call{call("c2", "publish", adapter.PublishArgs{Summary: "done"})}, Usage: u2},
	)
	var rec recorder
	o, err := harnessed.New(model).Run(context.Background(), a, rec.sink)
	require.NoError(t, err)
	assert.Equal(t, []providers.Usage{u1, u2}, rec.turnUsages(t))
	assert.Equal(t, u1.Add(u2), o.Usage)
}

func TestMaxIterations(t *testing.T) {
	a := assignment(t, "a7", "Never finish.")
	model := scripted.NewFunc("w", func(context.Context, providers.Request) (scripted.Turn, error) {
		return scripted.Turn{Text: "thinking"}, nil
	}).KeepRequests()
	o, err := harnessed.New(model, harnessed.WithMaxIterations(3)).Run(context.Background(), a, nil)
	if !errors.Is(err, harnessed.ErrMaxIterations) || o.Status != runtime.Failed || o.Turns != 3 {
		t.Fatalf("outcome %+v, err %v", o, err)
	}
	// Between the turns the worker was reminded to finish.
	if msgs := model.Requests()[1].Messages; !strings.Contains(msgs[len(msgs)-1].Text(), "call publish") {
		t.Fatalf("no nudge: %+v", msgs[len(msgs)-1])
	}
}

// The bound is on the turns of each wake-up: an assignment woken again and again (an infinite
// agent's coordinator) is not stopped by the turns of the wake-ups before.
func TestMaxIterationsCountsEachWakeUp(t *testing.T) {
	a := assignment(t, "a7w", "Answer each message.")
	mb := &runtimetest.Mailbox{}
	a.Mailbox, a.Wake = mb, true
	model := scripted.NewFunc("w", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		last := req.Messages[len(req.Messages)-1]
		if strings.Contains(last.Text(), "loop") || last.Parts[0].Type == providers.ToolResultPart {
			return scripted.Turn{Calls: []tools.Call{{ID: fmt.Sprint("c", len(req.Messages)), Name: "think", Args: json.RawMessage(`{}`)}}}, nil
		}
		return scripted.Turn{Text: "done"}, nil
	})
	a.Tools = append(a.Tools, tools.Func("think", "Think.", func(context.Context, struct{}) (string, error) { return "loop", nil }))
	rt := harnessed.New(model, harnessed.WithMaxIterations(3), harnessed.WithTextEndsTurn())
	o, err := rt.Run(context.Background(), a, nil)
	require.NoError(t, err)
	for i := range 5 {
		mb.Deliver("human", "again")
		o, err = rt.Run(context.Background(), a, nil)
		require.NoError(t, err, "wake-up %d", i+1)
		assert.Equal(t, "done", o.Summary)
	}
	assert.Equal(t, 6, o.Turns)

	mb.Deliver("human", "loop")
	o, err = rt.Run(context.Background(), a, nil)
	require.ErrorIs(t, err, harnessed.ErrMaxIterations)
	assert.Equal(t, 9, o.Turns, "three turns of the last wake-up")
}

func TestSingleInference(t *testing.T) {
	a := assignment(t, "a8", "Name three primes.")
	model := scripted.New("w", scripted.Turn{Text: "2, 3, 5", Usage: providers.Usage{InputTokens: 10, OutputTokens: 5}}).KeepRequests()
	o, err := harnessed.New(model, harnessed.WithSingleInference()).Run(context.Background(), a, nil)
	if err != nil || o.Status != runtime.Published || o.Summary != "2, 3, 5" || o.Usage.OutputTokens != 5 {
		t.Fatalf("outcome %+v, %v", o, err)
	}
	if len(model.Requests()[0].Tools) != 0 {
		t.Fatal("single inference offered tools")
	}
	if b, _ := os.ReadFile(filepath.Join(a.Dir.Published(), "result.md")); string(b) != "2, 3, 5" {
		t.Fatalf("result.md = %q", b)
	}
}

// Bad calls from the model become error results it can fix, never a crash.
func TestBadToolCallsAreReportedToTheModel(t *testing.T) {
	a := assignment(t, "a9", "Work.")
	model := scripted.New("w",
		scripted.Turn{Calls: []tools.Call{
			{ID: "c1", Name: "nope", Args: json.RawMessage(`{}`)},
			{ID: "c2", Name: "write_file", Args: json.RawMessage(`{"path": 3}`)},
			call("c3", "read_file", files.ReadArgs{Path: "../../etc/passwd"}),
		}},
		scripted.Turn{Calls: []tools.Call{call("c4", "checkpoint", adapter.CheckpointArgs{Summary: "ok"})}},
	).KeepRequests()
	if o, err := harnessed.New(model).Run(context.Background(), a, nil); err != nil || o.Status != runtime.Checkpointed {
		t.Fatalf("outcome %+v, %v", o, err)
	}
	rs := lastResults(model.Requests()[1])
	if len(rs) != 3 {
		t.Fatalf("results %+v", rs)
	}
	for i, want := range []string{"unknown tool", "path", "outside the workspace"} {
		if !rs[i].IsError || !strings.Contains(rs[i].Content, want) {
			t.Errorf("result %d = %+v, want an error mentioning %q", i, rs[i], want)
		}
	}
}

// One runtime runs many assignments at once.
func TestConcurrentAssignments(t *testing.T) {
	model := scripted.NewFunc("w", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		if len(req.Messages) == 1 {
			return scripted.Turn{Calls: []tools.Call{call("c1", "write_file", files.WriteArgs{Path: "out.md", Content: req.Messages[0].Text()})}}, nil
		}
		return scripted.Turn{Calls: []tools.Call{call("c2", "publish", adapter.PublishArgs{Summary: req.Messages[0].Text()})}}, nil
	})
	rt := harnessed.New(model)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := assignment(t, fmt.Sprint("c", i), fmt.Sprint("task ", i))
			o, err := rt.Run(context.Background(), a, nil)
			if err != nil || o.Summary != fmt.Sprint("task ", i) {
				t.Errorf("assignment %d: %+v, %v", i, o, err)
				return
			}
			if b, _ := os.ReadFile(filepath.Join(a.Dir.Published(), "out.md")); string(b) != fmt.Sprint("task ", i) {
				t.Errorf("assignment %d published %q", i, b)
			}
		}()
	}
	wg.Wait()
}

// A conversational worker (a coordinator) ends its turn with text, is woken by mail in the same
// conversation, and its own tools can end its turn through the report in their context.
func TestTextEndsTurnAndMailRevives(t *testing.T) {
	a := assignment(t, "a10", "You coordinate.")
	mb := &runtimetest.Mailbox{}
	a.Mailbox = mb
	a.Tools = append(a.Tools, tools.Func("wait", "Wait for news.", func(ctx context.Context, _ struct{}) (string, error) {
		r, ok := adapter.ReportFrom(ctx)
		if !ok {
			return "", errors.New("no report in the context")
		}
		return "waiting", r.End(runtime.Checkpointed, "waiting for news")
	}))
	model := scripted.New("coord",
		scripted.Turn{Text: "Hello, I am ready."},
		scripted.Turn{Calls: []tools.Call{call("w1", "wait", struct{}{})}},
	).KeepRequests()
	rt := harnessed.New(model, harnessed.WithTextEndsTurn())
	o, err := rt.Run(context.Background(), a, nil)
	if err != nil || o.Status != runtime.Checkpointed || o.Summary != "Hello, I am ready." {
		t.Fatalf("first turn: %+v, %v", o, err)
	}
	// Nothing new: the stored outcome, no model call.
	a.Wake = true
	if o, err := rt.Run(context.Background(), a, nil); err != nil || o.Summary != "Hello, I am ready." || len(model.Requests()) != 1 {
		t.Fatalf("idle run: %+v, %v, %d calls", o, err, len(model.Requests()))
	}
	mb.Deliver("human", "status?")
	// Not woken: the stored outcome again (its caller lost it), and the mail stays.
	a.Wake = false
	if o, err := rt.Run(context.Background(), a, nil); err != nil || o.Summary != "Hello, I am ready." || len(model.Requests()) != 1 || len(mb.Pending()) != 1 {
		t.Fatalf("run without Wake: %+v, %v, %d calls, %d queued", o, err, len(model.Requests()), len(mb.Pending()))
	}
	a.Wake = true
	o, err = rt.Run(context.Background(), a, nil)
	if err != nil || o.Status != runtime.Checkpointed || o.Summary != "waiting for news" || o.Turns != 2 {
		t.Fatalf("woken turn: %+v, %v", o, err)
	}
	msgs := model.Requests()[1].Messages
	if len(msgs) != 3 || msgs[1].Text() != "Hello, I am ready." || msgs[2].Text() != "[Message from human]: status?" {
		t.Fatalf("the woken worker did not continue its conversation: %+v", msgs)
	}
}

// Mail that arrives while a worker's last turn ends is not lost: the outcome hands it back.
func TestMailArrivingAsTheTurnEndsIsHandedBack(t *testing.T) {
	a := assignment(t, "a11", "Finish up.")
	mb := &runtimetest.Mailbox{}
	a.Mailbox = mb
	a.Tools = append(a.Tools, tools.Func("cleanup", "Clean up.", func(context.Context, struct{}) (string, error) {
		mb.Deliver("bob", "one more thing")
		return "clean", nil
	}))
	model := scripted.New("w", scripted.Turn{Calls: []tools.Call{
		call("c1", "cleanup", struct{}{}),
		call("c2", "checkpoint", adapter.CheckpointArgs{Summary: "stage done"}),
	}})
	o, err := harnessed.New(model).Run(context.Background(), a, nil)
	if err != nil || o.Status != runtime.Checkpointed {
		t.Fatalf("outcome %+v, %v", o, err)
	}
	if len(o.Unread) != 1 || o.Unread[0].Body != "one more thing" {
		t.Fatalf("unread %+v, want the message that came during cleanup", o.Unread)
	}
	// Mail that arrives after the worker ended stays in its mailbox.
	b := assignment(t, "a12", "Finish up.")
	mb2 := &runtimetest.Mailbox{}
	b.Mailbox = mb2
	b.Tools = append(b.Tools, tools.Func("cleanup", "Clean up.", func(context.Context, struct{}) (string, error) {
		mb2.Deliver("bob", "late")
		return "clean", nil
	}))
	m2 := scripted.New("w", scripted.Turn{Calls: []tools.Call{
		call("c1", "checkpoint", adapter.CheckpointArgs{Summary: "stage done"}),
		call("c2", "cleanup", struct{}{}),
	}})
	if o, err := harnessed.New(m2).Run(context.Background(), b, nil); err != nil || len(o.Unread) != 0 {
		t.Fatalf("outcome %+v, %v", o, err)
	}
	if got := mb2.Receive(""); len(got) != 1 || got[0].Body != "late" {
		t.Fatalf("mailbox after the end: %+v, want the late message still there", got)
	}
}

// ask_human's default travels with the question: the outcome has it, and so does the outcome of
// a runtime that reads the waiting assignment back from its checkpoints.
func TestAskHumanDefault(t *testing.T) {
	saver, err := sqlite.Open(filepath.Join(t.TempDir(), "cp.db"))
	require.NoError(t, err)
	defer saver.Close()
	a := assignment(t, "a4d", "Pick a colour.")
	model := scripted.New("w",
		scripted.Turn{Calls: []tools.Call{call("c1", "ask_human", map[string]string{"question": "Red or blue?", "default": "blue"})}})
	o, err := harnessed.New(model, harnessed.WithSaver(saver)).Run(context.Background(), a, nil)
	require.NoError(t, err)
	assert.Equal(t, runtime.Waiting, o.Status)
	assert.Equal(t, "Red or blue?", o.Question)
	assert.Equal(t, "blue", o.Default)

	o, err = harnessed.New(model, harnessed.WithSaver(saver)).Run(context.Background(), a, nil)
	require.NoError(t, err)
	assert.Equal(t, runtime.Waiting, o.Status)
	assert.Equal(t, "Red or blue?", o.Question)
	assert.Equal(t, "blue", o.Default)
}
