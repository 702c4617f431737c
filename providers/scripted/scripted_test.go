package scripted_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/tools"
)

func TestScriptPlaysTurnsInOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	call := tools.Call{ID: "c1", Name: "read_file", Args: json.RawMessage(`{"path":"a.txt"}`)}
	m := scripted.New("demo",
		scripted.Turn{Text: "let me look", Calls: []tools.Call{call}, Usage: providers.Usage{InputTokens: 10, OutputTokens: 3}},
		scripted.Turn{Text: "done"},
	).KeepRequests()
	if m.Name() != "scripted/demo" {
		t.Errorf("name %q", m.Name())
	}
	var streamed []string
	r1, err := m.Generate(ctx, providers.Request{Messages: []providers.Message{providers.UserText("hi")}, OnText: func(d string) { streamed = append(streamed, d) }})
	if err != nil {
		t.Fatal(err)
	}
	if r1.StopReason != providers.StopToolUse || r1.Message.Text() != "let me look" || !slices.EqualFunc(r1.Message.ToolCalls(), []tools.Call{call}, func(a, b tools.Call) bool {
		return a.ID == b.ID && a.Name == b.Name && string(a.Args) == string(b.Args)
	}) || r1.Usage.InputTokens != 10 || r1.Model != "scripted/demo" {
		t.Errorf("first answer %+v", r1)
	}
	if strings.Join(streamed, "") != "let me look" || len(streamed) != 3 {
		t.Errorf("streamed %q, want the text word by word", streamed)
	}
	r2, err := m.Generate(ctx, providers.Request{})
	if err != nil || r2.StopReason != providers.StopEnd || r2.Message.Text() != "done" {
		t.Errorf("second answer %+v, %v", r2, err)
	}
	if _, err := m.Generate(ctx, providers.Request{}); !errors.Is(err, scripted.ErrScriptEnded) {
		t.Errorf("third call: err %v, want ErrScriptEnded", err)
	}
	if reqs := m.Requests(); len(reqs) != 3 || reqs[0].Messages[0].Text() != "hi" {
		t.Errorf("requests %+v", reqs)
	}
}

func TestScriptedErrorsAndCancellation(t *testing.T) {
	t.Parallel()
	limited := &providers.Error{Provider: "scripted", Model: "demo", Status: 429, Kind: providers.ErrRateLimit}
	m := scripted.New("demo", scripted.Turn{Err: limited}, scripted.Turn{Text: "ok"})
	_, err := m.Generate(context.Background(), providers.Request{})
	if !errors.Is(err, providers.ErrRateLimit) || !providers.Retryable(err) {
		t.Errorf("err %v, want a retryable rate limit", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Generate(ctx, providers.Request{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err %v", err)
	}
	if m.Remaining() != 1 {
		t.Errorf("a cancelled call used a turn: %d left", m.Remaining())
	}
}

func TestScriptedFuncSeesTheConversation(t *testing.T) {
	t.Parallel()
	m := scripted.NewFunc("echo", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		last := req.Messages[len(req.Messages)-1]
		return scripted.Turn{Text: "you said: " + last.Text()}, nil
	})
	r, err := m.Generate(context.Background(), providers.Request{Messages: []providers.Message{providers.UserText("ping")}})
	if err != nil || r.Message.Text() != "you said: ping" {
		t.Errorf("%+v, %v", r, err)
	}
}

func TestScriptedConcurrentUse(t *testing.T) {
	t.Parallel()
	const n = 50
	turns := make([]scripted.Turn, n)
	for i := range turns {
		turns[i] = scripted.Turn{Text: "t"}
	}
	m := scripted.New("many", turns...).KeepRequests()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			_, err := m.Generate(context.Background(), providers.Request{})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if m.Remaining() != 0 || len(m.Requests()) != n {
		t.Errorf("%d turns left, %d requests", m.Remaining(), len(m.Requests()))
	}
}

func TestRecorderReplays(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	real := scripted.NewFunc("real", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		if len(req.Messages) == 1 {
			return scripted.Turn{Calls: []tools.Call{{ID: "1", Name: "now", Args: json.RawMessage(`{}`)}}}, nil
		}
		return scripted.Turn{Text: "it is noon", Usage: providers.Usage{OutputTokens: 4}}, nil
	})
	rec := scripted.Record(real)
	convo := []providers.Message{providers.UserText("time?")}
	first, _ := rec.Generate(ctx, providers.Request{Messages: convo})
	convo = append(convo, first.Message, providers.ToolResults([]tools.Result{{CallID: "1", Name: "now", Content: "12:00"}}))
	second, _ := rec.Generate(ctx, providers.Request{Messages: convo})

	b, err := json.Marshal(rec.Script())
	if err != nil {
		t.Fatal(err)
	}
	var script []scripted.Turn
	if err := json.Unmarshal(b, &script); err != nil {
		t.Fatal(err)
	}
	replay := scripted.New("replay", script...)
	for i, want := range []providers.Response{first, second} {
		got, err := replay.Generate(ctx, providers.Request{})
		if err != nil || got.StopReason != want.StopReason || got.Message.Text() != want.Message.Text() || len(got.Message.ToolCalls()) != len(want.Message.ToolCalls()) || got.Usage != want.Usage {
			t.Errorf("replayed answer %d = %+v, want %+v", i, got, want)
		}
	}
}

// panicValue runs f and returns what it panicked with, or nil.
func panicValue(f func()) (v any) {
	defer func() { v = recover() }()
	f()
	return nil
}

// heapAfter returns the live heap after fn ran and a full collection; keep is held alive past the
// measurement.
func heapAfter(fn func(), keep any) uint64 {
	fn()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	runtime.KeepAlive(keep)
	return ms.HeapAlloc
}

// A model keeps no requests unless asked: many large requests leave the heap as it was, and
// Requests says how to ask instead of answering with an empty list.
func TestModelKeepsNoRequestsByDefault(t *testing.T) {
	t.Parallel()
	const (
		calls   = 200
		payload = 64 << 10
	)
	ok := func(context.Context, providers.Request) (scripted.Turn, error) { return scripted.Turn{Text: "ok"}, nil }
	play := func(m *scripted.Model) func() {
		return func() {
			for range calls {
				big := providers.Request{Messages: []providers.Message{providers.UserText(strings.Repeat("x", payload))}}
				_, err := m.Generate(context.Background(), big)
				require.NoError(t, err)
			}
		}
	}
	growth := func(m *scripted.Model) int64 {
		before := heapAfter(func() {}, m)
		return int64(heapAfter(play(m), m)) - int64(before)
	}

	plain := scripted.NewFunc("plain", ok)
	assert.Less(t, growth(plain), int64(10*payload), "a model not asked to keep requests held on to them")
	msg := fmt.Sprint(panicValue(func() { plain.Requests() }))
	assert.Contains(t, msg, "scripted/plain")
	assert.Contains(t, msg, "KeepRequests()", "the panic should say how to ask for the requests")

	// The measurement can see kept requests: the same calls on a keeping model grow the heap.
	keeping := scripted.NewFunc("keeping", ok).KeepRequests()
	assert.GreaterOrEqual(t, growth(keeping), int64(calls*payload))
	assert.Len(t, keeping.Requests(), calls)
}

// KeepRequests returns the model it was called on and keeps requests from then on.
func TestKeepRequestsFromThenOn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := scripted.New("late", scripted.Turn{Text: "one"}, scripted.Turn{Text: "two"})
	_, err := m.Generate(ctx, providers.Request{System: "before"})
	require.NoError(t, err)
	require.Same(t, m, m.KeepRequests())
	_, err = m.Generate(ctx, providers.Request{System: "after"})
	require.NoError(t, err)
	reqs := m.Requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, "after", reqs[0].System)
}

// Results says which tools a conversation called and what each answered last.
func TestResults(t *testing.T) {
	t.Parallel()
	call := func(id, name string) providers.Part {
		return providers.Part{Type: providers.ToolCallPart, ToolCall: &tools.Call{ID: id, Name: name}}
	}
	result := func(id, name, content string) providers.Part {
		return providers.Part{Type: providers.ToolResultPart, ToolResult: &tools.Result{CallID: id, Name: name, Content: content}}
	}
	req := providers.Request{Messages: []providers.Message{
		{Role: providers.User, Parts: []providers.Part{providers.Text("go")}},
		{Role: providers.Assistant, Parts: []providers.Part{call("1", "ask_human")}},
		{Role: providers.User, Parts: []providers.Part{result("1", "ask_human", "teal")}},
		{Role: providers.Assistant, Parts: []providers.Part{call("2", "search"), call("3", "write_file")}},
		{Role: providers.User, Parts: []providers.Part{result("2", "search", "first")}},
		{Role: providers.Assistant, Parts: []providers.Part{call("4", "search")}},
		{Role: providers.User, Parts: []providers.Part{result("4", "search", "second")}},
	}}
	assert.Equal(t, map[string]string{"ask_human": "teal", "search": "second", "write_file": ""}, scripted.Results(req))
	assert.Empty(t, scripted.Results(providers.Request{}))
}

// A paced model waits before each answer; an unpaced one answers at once. Time is the bubble's
// fake clock: the waits are exact and take no real time.
func TestPaced(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := scripted.New("quick", scripted.Turn{Text: "at once"}).Generate(ctx, providers.Request{})
		require.NoError(t, err, "an unpaced model waits for nothing")

		slow := scripted.New("slow", scripted.Turn{Text: "later"}).Paced(time.Hour)
		_, err = slow.Generate(ctx, providers.Request{})
		require.ErrorIs(t, err, context.DeadlineExceeded, "the pace outlasts the context")
		assert.Equal(t, 1, slow.Remaining(), "a call that ended while the model waited used no turn")

		start := time.Now()
		r, err := scripted.New("paced", scripted.Turn{Text: "after two seconds"}).Paced(2*time.Second).Generate(context.Background(), providers.Request{})
		require.NoError(t, err)
		assert.Equal(t, "after two seconds", r.Message.Text())
		assert.Equal(t, 2*time.Second, time.Since(start))
	})
}

// Cancelling a call while the model waits its pace ends the call at once, with the context's
// error, and leaves the script where it was.
func TestPacedCancel(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		m := scripted.New("paced", scripted.Turn{Text: "never"}).Paced(time.Hour)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		start := time.Now()
		go func() {
			_, err := m.Generate(ctx, providers.Request{})
			done <- err
		}()
		synctest.Wait() // the call waits its pace
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
		assert.Zero(t, time.Since(start), "the call waited on after the cancel")
		assert.Equal(t, 1, m.Remaining())
	})
}
