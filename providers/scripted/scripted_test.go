package scripted_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/tools"
)

func TestScriptPlaysTurnsInOrder(t *testing.T) {
	ctx := context.Background()
	call := tools.Call{ID: "c1", Name: "read_file", Args: json.RawMessage(`{"path":"a.txt"}`)}
	m := scripted.New("demo",
		scripted.Turn{Text: "let me look", Calls: []tools.Call{call}, Usage: providers.Usage{InputTokens: 10, OutputTokens: 3}},
		scripted.Turn{Text: "done"},
	)
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
	const n = 50
	turns := make([]scripted.Turn, n)
	for i := range turns {
		turns[i] = scripted.Turn{Text: "t"}
	}
	m := scripted.New("many", turns...)
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
