package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agiraph/agiraph/tools"
)

func handlerTool(name string, safe bool, h tools.Handler) tools.Tool {
	return tools.Tool{Name: name, Schema: json.RawMessage(`{"type":"object"}`), Safe: safe, Handler: h}
}

func mustRegistry(t *testing.T, opts []tools.RegistryOption, ts ...tools.Tool) *tools.Registry {
	t.Helper()
	r, err := tools.NewRegistry(ts, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

type echoArgs struct {
	Text string `json:"text" jsonschema:"description=Text to echo"`
	N    int    `json:"n,omitempty" jsonschema:"minimum=0"`
}

func echoTool() tools.Tool {
	return tools.Func("echo", "Echo text.", func(ctx context.Context, a echoArgs) (string, error) {
		return strings.Repeat(a.Text, max(a.N, 1)), nil
	}, tools.Safe())
}

func TestRunResults(t *testing.T) {
	t.Parallel()
	r := mustRegistry(t, nil,
		echoTool(),
		handlerTool("fail", false, func(ctx context.Context, args json.RawMessage) (string, error) {
			return "ignored", errors.New("disk full: free some space and retry")
		}),
		handlerTool("boom", true, func(ctx context.Context, args json.RawMessage) (string, error) {
			var m map[string]int
			m["x"] = 1 //nolint:staticcheck // a nil map write: the panic is what the test runs
			return "", nil
		}),
	)
	calls := []tools.Call{
		{ID: "1", Name: "echo", Args: json.RawMessage(`{"text":"hi","n":2}`)},
		{ID: "2", Name: "nope", Args: json.RawMessage(`{}`)},
		{ID: "3", Name: "echo", Args: json.RawMessage(`{"txt":"hi","n":-1}`)},
		{ID: "4", Name: "echo", Args: json.RawMessage(`{"text":`)},
		{ID: "5", Name: "fail"},
		{ID: "6", Name: "boom", Args: json.RawMessage(``)},
		{ID: "7", Name: "echo", Args: json.RawMessage(`{"text":"last"}`)},
	}
	want := []tools.Result{
		{CallID: "1", Name: "echo", Content: "hihi"},
		{CallID: "2", Name: "nope", IsError: true, Content: `unknown tool "nope"; available tools: boom, echo, fail`},
		{CallID: "3", Name: "echo", IsError: true, Content: "invalid arguments for tool \"echo\"; fix these and call it again:\n" +
			"- args.text: missing required property\n" +
			"- args.n: -1 is less than minimum 0\n" +
			"- args.txt: unknown property (allowed: n, text)"},
		{CallID: "4", Name: "echo", IsError: true, Content: `invalid arguments for tool "echo": arguments are not valid JSON (unexpected end of JSON input): "{\"text\":"; send the arguments as one JSON object matching the tool's schema`},
		{CallID: "5", Name: "fail", IsError: true, Content: "disk full: free some space and retry"},
		{CallID: "6", Name: "boom", IsError: true, Content: `tool "boom" failed with an internal error (panic: assignment to entry in nil map)`},
		{CallID: "7", Name: "echo", Content: "last"},
	}
	got := r.Run(context.Background(), calls)
	if len(got) != len(want) {
		t.Fatalf("got %d results, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("result %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
	if res := r.Run(context.Background(), nil); len(res) != 0 {
		t.Errorf("no calls gave %v", res)
	}
}

func TestRunOutputCap(t *testing.T) {
	t.Parallel()
	out := strings.Repeat("a", 9) + "€€" // 9 + 3 + 3 bytes; a cap of 10 falls inside the first €
	r := mustRegistry(t, []tools.RegistryOption{tools.WithMaxOutput(10)},
		handlerTool("big", false, func(ctx context.Context, args json.RawMessage) (string, error) { return out, nil }),
		handlerTool("bigerr", false, func(ctx context.Context, args json.RawMessage) (string, error) { return "", errors.New(out) }),
		handlerTool("fits", false, func(ctx context.Context, args json.RawMessage) (string, error) { return "0123456789", nil }),
	)
	res := r.Run(context.Background(), []tools.Call{{ID: "a", Name: "big"}, {ID: "b", Name: "bigerr"}, {ID: "c", Name: "fits"}})
	want := strings.Repeat("a", 9) + "\n[output truncated: 6 of 15 bytes cut]"
	for i, rs := range res[:2] {
		if rs.Content != want || !rs.Truncated || !utf8.ValidString(rs.Content) {
			t.Errorf("result %d: %+v, want content %q truncated", i, rs, want)
		}
	}
	if res[1].IsError != true {
		t.Error("truncated error lost IsError")
	}
	if res[2].Content != "0123456789" || res[2].Truncated {
		t.Errorf("output at the cap: %+v", res[2])
	}

	unlimited := mustRegistry(t, []tools.RegistryOption{tools.WithMaxOutput(0)},
		handlerTool("huge", false, func(ctx context.Context, args json.RawMessage) (string, error) {
			return strings.Repeat("x", 100<<10), nil
		}))
	if rs := unlimited.Run(context.Background(), []tools.Call{{Name: "huge"}})[0]; len(rs.Content) != 100<<10 || rs.Truncated {
		t.Errorf("no cap: %d bytes, truncated %v", len(rs.Content), rs.Truncated)
	}
	def := mustRegistry(t, nil,
		handlerTool("huge", false, func(ctx context.Context, args json.RawMessage) (string, error) {
			return strings.Repeat("x", 100<<10), nil
		}))
	if rs := def.Run(context.Background(), []tools.Call{{Name: "huge"}})[0]; !rs.Truncated || !strings.HasPrefix(rs.Content, strings.Repeat("x", tools.DefaultMaxOutput)+"\n[output truncated: ") {
		t.Errorf("default cap: %d bytes, truncated %v", len(rs.Content), rs.Truncated)
	}
}

// TestRunSafeCallsOverlap proves two safe calls run at the same time: each waits until the
// other has started.
func TestRunSafeCallsOverlap(t *testing.T) {
	t.Parallel()
	var started sync.WaitGroup
	started.Add(2)
	barrier := func(ctx context.Context, args json.RawMessage) (string, error) {
		started.Done()
		done := make(chan struct{})
		go func() { started.Wait(); close(done) }()
		select {
		case <-done:
			return "met", nil
		case <-time.After(10 * time.Second):
			return "", errors.New("the other safe call never started: safe calls did not overlap")
		}
	}
	r := mustRegistry(t, nil, handlerTool("wait", true, barrier))
	res := r.Run(context.Background(), []tools.Call{{ID: "1", Name: "wait"}, {ID: "2", Name: "wait"}})
	for _, rs := range res {
		if rs.IsError || rs.Content != "met" {
			t.Errorf("%+v", rs)
		}
	}
}

// TestRunUnsafeCallsAlone checks an unsafe call never overlaps another call and runs after every
// call before it has finished, while the safe calls between unsafe ones still run together.
func TestRunUnsafeCallsAlone(t *testing.T) {
	t.Parallel()
	var running, maxRunning atomic.Int32
	var unsafeActive, overlap atomic.Bool
	var mu sync.Mutex
	var events []string // "start N" / "end N", N the call's ID
	record := func(e string) { mu.Lock(); events = append(events, e); mu.Unlock() }
	// Each batch of safe calls meets at its own barrier, so they must overlap to finish.
	barriers := map[string]*sync.WaitGroup{"a": {}, "b": {}}
	barriers["a"].Add(3)
	barriers["b"].Add(2)

	type args struct {
		ID    string `json:"id"`
		Batch string `json:"batch,omitempty"`
	}
	safe := tools.Func("safe", "", func(ctx context.Context, a args) (string, error) {
		n := running.Add(1)
		for m := maxRunning.Load(); n > m && !maxRunning.CompareAndSwap(m, n); m = maxRunning.Load() {
		}
		if unsafeActive.Load() {
			overlap.Store(true)
		}
		record("start " + a.ID)
		wg := barriers[a.Batch]
		wg.Done()
		wg.Wait()
		record("end " + a.ID)
		running.Add(-1)
		return a.ID, nil
	}, tools.Safe())
	unsafe := tools.Func("unsafe", "", func(ctx context.Context, a args) (string, error) {
		unsafeActive.Store(true)
		if running.Add(1) != 1 {
			overlap.Store(true)
		}
		record("start " + a.ID)
		record("end " + a.ID)
		running.Add(-1)
		unsafeActive.Store(false)
		return a.ID, nil
	})
	r := mustRegistry(t, nil, safe, unsafe)
	call := func(name, id, batch string) tools.Call {
		b, _ := json.Marshal(args{ID: id, Batch: batch})
		return tools.Call{ID: id, Name: name, Args: b}
	}
	calls := []tools.Call{
		call("unsafe", "0", ""),
		call("safe", "1", "a"), call("safe", "2", "a"), call("safe", "3", "a"),
		call("unsafe", "4", ""),
		call("unsafe", "5", ""),
		call("safe", "6", "b"), call("safe", "7", "b"),
		call("unsafe", "8", ""),
	}
	res := r.Run(context.Background(), calls)
	for i, c := range calls {
		if res[i].CallID != c.ID || res[i].Content != c.ID || res[i].IsError {
			t.Errorf("result %d = %+v, want content %q", i, res[i], c.ID)
		}
	}
	if overlap.Load() {
		t.Error("an unsafe call overlapped another call")
	}
	if maxRunning.Load() != 3 {
		t.Errorf("at most %d calls ran at once, want 3", maxRunning.Load())
	}
	// Every unsafe call starts after all calls before it ended and ends before any call after it
	// starts.
	pos := map[string]int{}
	for i, e := range events {
		pos[e] = i
	}
	for _, u := range []int{0, 4, 5, 8} {
		for j := range calls {
			if j < u && pos[fmt.Sprint("end ", j)] > pos[fmt.Sprint("start ", u)] {
				t.Errorf("call %d ended after unsafe call %d started: %v", j, u, events)
			}
			if j > u && pos[fmt.Sprint("start ", j)] < pos[fmt.Sprint("end ", u)] {
				t.Errorf("call %d started before unsafe call %d ended: %v", j, u, events)
			}
		}
	}
}

func TestRunContextCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	var ran atomic.Int32
	r := mustRegistry(t, nil,
		handlerTool("cancel", false, func(ctx context.Context, args json.RawMessage) (string, error) {
			ran.Add(1)
			cancel()
			return "cancelled the run", nil
		}),
		handlerTool("other", true, func(ctx context.Context, args json.RawMessage) (string, error) {
			ran.Add(1)
			return "ran", nil
		}),
	)
	res := r.Run(ctx, []tools.Call{{ID: "1", Name: "cancel"}, {ID: "2", Name: "other"}, {ID: "3", Name: "nope"}})
	if res[0].IsError || res[0].Content != "cancelled the run" {
		t.Errorf("first call: %+v", res[0])
	}
	for i, name := range []string{"other", "nope"} {
		rs := res[i+1]
		want := fmt.Sprintf("tool %q was not run: context canceled", name)
		if !rs.IsError || rs.Content != want || rs.Name != name || rs.CallID != fmt.Sprint(i+2) {
			t.Errorf("call %d: %+v, want error %q", i+2, rs, want)
		}
	}
	if ran.Load() != 1 {
		t.Errorf("%d handlers ran, want 1", ran.Load())
	}
	// A context already done runs nothing.
	res = r.Run(ctx, []tools.Call{{ID: "x", Name: "other"}})
	if !res[0].IsError || ran.Load() != 1 {
		t.Errorf("done context: %+v", res[0])
	}
}

func TestRunConcurrentUse(t *testing.T) {
	t.Parallel()
	r := mustRegistry(t, nil, echoTool())
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if i%2 == 0 {
				_ = r.Add(rawTool(fmt.Sprintf("t%d", i)))
			}
			res := r.Run(context.Background(), []tools.Call{{Name: "echo", Args: json.RawMessage(`{"text":"x"}`)}, {Name: "echo", Args: json.RawMessage(`{"text":"y"}`)}})
			if res[0].Content != "x" || res[1].Content != "y" {
				t.Errorf("concurrent run: %+v", res)
			}
			_ = r.Tools()
			_ = r.Guidance()
		})
	}
	wg.Wait()
	if len(r.Tools()) != 5 {
		t.Errorf("%d tools, want 5", len(r.Tools()))
	}
}

func TestHandlersSeeTheirCall(t *testing.T) {
	t.Parallel()
	var seen []string
	var mu sync.Mutex
	tool := tools.Func("who", "Say the call ID.", func(ctx context.Context, _ struct{}) (string, error) {
		c, ok := tools.CallFrom(ctx)
		if !ok {
			return "", errors.New("no call in the context")
		}
		mu.Lock()
		seen = append(seen, c.ID)
		mu.Unlock()
		return c.ID, nil
	}, tools.Safe())
	reg, err := tools.NewRegistry([]tools.Tool{tool})
	if err != nil {
		t.Fatal(err)
	}
	rs := reg.Run(context.Background(), []tools.Call{{ID: "a", Name: "who"}, {ID: "b", Name: "who"}})
	if rs[0].Content != "a" || rs[1].Content != "b" || len(seen) != 2 {
		t.Fatalf("results %+v, seen %v", rs, seen)
	}
	if _, ok := tools.CallFrom(context.Background()); ok {
		t.Fatal("CallFrom found a call in a bare context")
	}
}
