package harnessed_test

import (
	"context"
	"testing"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/adapter"
	"github.com/agiraph/agiraph/runtime/harnessed"
	"github.com/agiraph/agiraph/runtime/runtimetest"
	"github.com/agiraph/agiraph/tools"
	"github.com/agiraph/agiraph/tools/files"
)

func TestConformance(t *testing.T) { runtimetest.Run(t, behaviors{}) }

// behaviors are harnessed runtimes over scripted models: each model plays its part turn by turn,
// by the turns of the conversation it is shown, so one model serves any number of assignments.
type behaviors struct{}

// Prepare gives the worker tools to read and write its scratch directory.
func (behaviors) Prepare(_ *testing.T, a *runtime.Assignment) {
	a.Tools = files.Scope{Root: a.Dir.Scratch(), Read: []string{""}, Write: []string{""}}.Tools()
}

func (behaviors) Publishes(_ *testing.T, file, content, summary string) runtime.Runtime {
	return harnessed.New(plays(
		call("w", "write_file", files.WriteArgs{Path: file, Content: content}),
		call("p", "publish", adapter.PublishArgs{Summary: summary}),
	))
}

func (behaviors) Checkpoints(_ *testing.T, file, content, summary string) runtime.Runtime {
	return harnessed.New(plays(
		call("w", "write_file", files.WriteArgs{Path: file, Content: content}),
		call("c", "checkpoint", adapter.CheckpointArgs{Summary: summary}),
	))
}

func (behaviors) SendsThenPublishes(_ *testing.T, to, body, summary string) runtime.Runtime {
	return harnessed.New(plays(
		call("s", "send_message", adapter.SendArgs{To: to, Content: body}),
		call("p", "publish", adapter.PublishArgs{Summary: summary}),
	))
}

// Hangs: the model's first answer never comes.
func (behaviors) Hangs(*testing.T) runtime.Runtime {
	return harnessed.New(scripted.NewFunc("hangs", func(ctx context.Context, _ providers.Request) (scripted.Turn, error) {
		<-ctx.Done()
		return scripted.Turn{}, ctx.Err()
	}))
}

// plays returns a model that makes the calls one per turn: the n-th of its answers in a
// conversation makes the n-th call.
func plays(calls ...tools.Call) *scripted.Model {
	return scripted.NewFunc("plays", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		n := 0
		for _, m := range req.Messages {
			if m.Role == providers.Assistant {
				n++
			}
		}
		if n >= len(calls) {
			return scripted.Turn{Text: "I have nothing more to do."}, nil
		}
		return scripted.Turn{Calls: []tools.Call{calls[n]}}, nil
	})
}
