package runtimetest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agiraph/agiraph/internal/leaktest"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/adapter"
	"github.com/agiraph/agiraph/runtime/runtimetest"
)

func TestMain(m *testing.M) { leaktest.VerifyTestMain(m) }

// The suite passes a minimal runtime that keeps the contract: its agent is a Go function.
func TestRunOnAMinimalRuntime(t *testing.T) { runtimetest.Run(t, funcBehaviors{}) }

// agent does an assignment's work, reporting to rep, and says how it ended: Published or
// Checkpointed, and a summary.
type agent func(ctx context.Context, a runtime.Assignment, rep *adapter.Emitter) (runtime.Status, string, error)

// funcRuntime runs an agent function.
type funcRuntime struct{ agent agent }

func (r funcRuntime) Run(ctx context.Context, a runtime.Assignment, sink runtime.Sink) (runtime.Outcome, error) {
	rep := adapter.NewEmitter(a, sink)
	fail := func(err error) (runtime.Outcome, error) {
		return rep.End(runtime.Outcome{Status: runtime.StatusOf(ctx, err), Summary: err.Error()}, err)
	}
	if err := ctx.Err(); err != nil {
		return fail(fmt.Errorf("not started: %w", err))
	}
	rep.Emit(runtime.Event{Kind: runtime.Started})
	status, summary, err := r.agent(ctx, a, rep)
	if err != nil {
		return fail(err)
	}
	o := runtime.Outcome{Status: status, Summary: summary}
	if status == runtime.Published {
		if o.Published, err = a.Dir.Publish(); err != nil {
			return fail(err)
		}
	}
	return rep.End(o, nil)
}

type funcBehaviors struct{}

func (funcBehaviors) Prepare(*testing.T, *runtime.Assignment) {}

func (funcBehaviors) Publishes(_ *testing.T, file, content, summary string) runtime.Runtime {
	return funcRuntime{func(_ context.Context, a runtime.Assignment, _ *adapter.Emitter) (runtime.Status, string, error) {
		return runtime.Published, summary, os.WriteFile(filepath.Join(a.Dir.Scratch(), file), []byte(content), 0o644)
	}}
}

func (funcBehaviors) Checkpoints(_ *testing.T, file, content, summary string) runtime.Runtime {
	return funcRuntime{func(_ context.Context, a runtime.Assignment, _ *adapter.Emitter) (runtime.Status, string, error) {
		return runtime.Checkpointed, summary, os.WriteFile(filepath.Join(a.Dir.Scratch(), file), []byte(content), 0o644)
	}}
}

func (funcBehaviors) SendsThenPublishes(_ *testing.T, to, body, summary string) runtime.Runtime {
	return funcRuntime{func(ctx context.Context, a runtime.Assignment, rep *adapter.Emitter) (runtime.Status, string, error) {
		if err := a.Mailbox.Send(ctx, a.ID+"/send", to, body); err != nil {
			return "", "", err
		}
		rep.Emit(runtime.Event{Kind: runtime.MessageSent, Message: &runtime.Message{From: a.Worker, To: to, Body: body}})
		return runtime.Published, summary, nil
	}}
}

func (funcBehaviors) Hangs(*testing.T) runtime.Runtime {
	return funcRuntime{func(ctx context.Context, _ runtime.Assignment, _ *adapter.Emitter) (runtime.Status, string, error) {
		<-ctx.Done()
		return "", "", ctx.Err()
	}}
}
