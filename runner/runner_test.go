package runner_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agiraph/agiraph/graph"
	"github.com/agiraph/agiraph/internal/pgtest"
	"github.com/agiraph/agiraph/runner"
)

func TestMain(m *testing.M) {
	if url := os.Getenv(childEnv); url != "" {
		os.Exit(child(url))
	}
	code := pgtest.Run(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// quick are the options of the tests' Runners: short leases, fast polling.
var quick = []runner.Option{
	runner.WithLease(2*time.Second, 300*time.Millisecond),
	runner.WithWatchInterval(250 * time.Millisecond),
	runner.WithPollInterval(20 * time.Millisecond),
}

// open makes a Runner on url for the test, closed when it ends.
func open(t *testing.T, url string, opts ...runner.Option) *runner.Runner {
	t.Helper()
	r, err := runner.Open(context.Background(), url, append(quick, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, r.Close()) })
	return r
}

type doc struct {
	Topic string   `json:"topic"`
	Log   []string `json:"log" graph:"append"`
}

// steps returns a graph running the nodes named, one after the other, each logging its name;
// a node named in fns runs that function instead.
func steps(t *testing.T, names []string, fns map[string]graph.NodeFunc[doc]) *graph.Compiled[doc] {
	t.Helper()
	g := graph.New[doc]()
	prev := graph.START
	for _, name := range names {
		fn := fns[name]
		if fn == nil {
			fn = func(context.Context, doc) (doc, error) { return doc{Log: []string{name}}, nil }
		}
		g.AddNode(name, fn)
		g.AddEdge(prev, name)
		prev = name
	}
	g.AddEdge(prev, graph.END)
	c, err := g.Compile()
	require.NoError(t, err)
	return c
}

// TestInvoke: a run enqueued by a process that does not execute runs is executed by one that
// does, and its result is read back by the first.
func TestInvoke(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Start(t)
	client, worker := open(t, url), open(t, url)
	g, err := runner.Register(client, "write", steps(t, []string{"draft", "edit"}, nil))
	require.NoError(t, err)
	_, err = runner.Register(worker, "write", steps(t, []string{"draft", "edit"}, nil))
	require.NoError(t, err)
	require.NoError(t, worker.Start(ctx))

	require.NoError(t, g.Invoke(ctx, "t1", doc{Topic: "graphs"}))
	final, err := g.Wait(ctx, "t1")
	require.NoError(t, err)
	assert.Equal(t, doc{Topic: "graphs", Log: []string{"draft", "edit"}}, final)

	res, err := g.Result(ctx, "t1")
	require.NoError(t, err)
	assert.Equal(t, runner.StatusDone, res.Status)
	assert.Equal(t, final, res.State)
	assert.Nil(t, res.Err)

	// A second invocation of the thread merges its input into the state, as Invoke does.
	require.NoError(t, g.Invoke(ctx, "t1", doc{Log: []string{"again"}}))
	final, err = g.Wait(ctx, "t1")
	require.NoError(t, err)
	assert.Equal(t, []string{"draft", "edit", "again", "draft", "edit"}, final.Log)
}

// TestInterruptResume: a run that asks for input is interrupted; a Resume enqueued with the
// answer continues it, in whichever process.
func TestInterruptResume(t *testing.T) {
	ctx := context.Background()
	r := open(t, pgtest.Start(t))
	g, err := runner.Register(r, "approve", steps(t, []string{"draft", "ask", "publish"}, map[string]graph.NodeFunc[doc]{
		"ask": func(ctx context.Context, s doc) (doc, error) {
			answer, err := graph.Interrupt[string](ctx, "publish "+s.Topic+"?")
			return doc{Log: []string{"answer: " + answer}}, err
		},
	}))
	require.NoError(t, err)
	require.NoError(t, r.Start(ctx))

	require.NoError(t, g.Invoke(ctx, "t", doc{Topic: "graphs"}))
	state, err := g.Wait(ctx, "t")
	var it *graph.Interrupted
	require.ErrorAs(t, err, &it)
	require.Len(t, it.Interrupts, 1)
	assert.Equal(t, "publish graphs?", it.Interrupts[0].Value)
	assert.Equal(t, "ask", it.Interrupts[0].Node)
	assert.Equal(t, []string{"draft"}, state.Log)
	res, err := g.Result(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, runner.StatusInterrupted, res.Status)
	assert.Equal(t, it.Interrupts, res.Interrupts)

	require.NoError(t, g.Resume(ctx, "t", "yes"))
	final, err := g.Wait(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, []string{"draft", "answer: yes", "publish"}, final.Log)

	err = g.Resume(ctx, "t", "again")
	require.ErrorIs(t, err, graph.ErrNothingToResume)
	assert.ErrorContains(t, err, `graph "approve" thread "t"`)
}

// TestFailure: a failing run's error comes back as text naming the graph, the thread and the
// node; the state so far is kept, and Resume continues the thread once the cause is gone.
func TestFailure(t *testing.T) {
	ctx := context.Background()
	r := open(t, pgtest.Start(t))
	var broken atomic.Bool
	broken.Store(true)
	g, err := runner.Register(r, "fragile", steps(t, []string{"draft", "check"}, map[string]graph.NodeFunc[doc]{
		"check": func(context.Context, doc) (doc, error) {
			if broken.Load() {
				return doc{}, errors.New("the checker is down")
			}
			return doc{Log: []string{"checked"}}, nil
		},
	}))
	require.NoError(t, err)
	require.NoError(t, r.Start(ctx))

	require.NoError(t, g.Invoke(ctx, "t", doc{}))
	_, err = g.Wait(ctx, "t")
	var failed *runner.Error
	require.ErrorAs(t, err, &failed)
	assert.Equal(t, "fragile", failed.Graph)
	assert.Equal(t, "t", failed.Thread)
	assert.Contains(t, failed.Text, `node "check"`)
	assert.Contains(t, failed.Text, "the checker is down")
	res, err := g.Result(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, runner.StatusFailed, res.Status)

	broken.Store(false)
	require.NoError(t, g.Resume(ctx, "t", nil))
	final, err := g.Wait(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, []string{"draft", "checked"}, final.Log)
}

// TestErrors: the mistakes of callers are refused with errors naming the graph and the thread.
func TestErrors(t *testing.T) {
	ctx := context.Background()
	r := open(t, pgtest.Start(t))
	release := make(chan struct{})
	slow, err := runner.Register(r, "slow", steps(t, []string{"wait"}, map[string]graph.NodeFunc[doc]{
		"wait": func(ctx context.Context, _ doc) (doc, error) {
			select {
			case <-release:
				return doc{}, nil
			case <-ctx.Done():
				return doc{}, ctx.Err()
			}
		},
	}))
	require.NoError(t, err)
	other, err := runner.Register(r, "other", steps(t, []string{"x"}, nil))
	require.NoError(t, err)

	_, err = runner.Register(r, "slow", steps(t, []string{"x"}, nil))
	assert.ErrorContains(t, err, `graph "slow": the name is taken`)
	_, err = runner.Lookup[doc](r, "nope")
	require.ErrorIs(t, err, runner.ErrUnknownGraph)
	assert.ErrorContains(t, err, `graph "nope"`)
	_, err = runner.Lookup[string](r, "slow")
	assert.ErrorContains(t, err, `graph "slow" has another state type`)
	found, err := runner.Lookup[doc](r, "slow")
	require.NoError(t, err)
	assert.Same(t, slow, found)

	_, err = slow.Result(ctx, "never")
	require.ErrorIs(t, err, runner.ErrUnknownThread)
	assert.ErrorContains(t, err, `graph "slow" thread "never"`)
	err = slow.Resume(ctx, "never", nil)
	require.ErrorIs(t, err, graph.ErrNothingToResume)

	require.NoError(t, slow.Invoke(ctx, "busy", doc{})) // queued: nothing runs it yet
	err = slow.Invoke(ctx, "busy", doc{})
	require.ErrorIs(t, err, runner.ErrBusy)
	assert.ErrorContains(t, err, `graph "slow" thread "busy"`)
	err = other.Invoke(ctx, "busy", doc{})
	assert.ErrorContains(t, err, `graph "other" thread "busy": invoke: the thread belongs to graph "slow"`)

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = slow.Wait(cancelled, "busy")
	require.ErrorIs(t, err, context.Canceled)
	assert.ErrorContains(t, err, `graph "slow" thread "busy"`)
	err = slow.Invoke(cancelled, "another", doc{})
	require.ErrorIs(t, err, context.Canceled)
	assert.ErrorContains(t, err, `graph "slow" thread "another"`)

	require.NoError(t, r.Start(ctx))
	require.ErrorIs(t, slow.Invoke(ctx, "busy", doc{}), runner.ErrBusy) // running now, or still queued
	close(release)
	_, err = slow.Wait(ctx, "busy")
	require.NoError(t, err)
}

// TestHandover: a Runner stopped while it runs a graph hands the thread over at once: another
// process resumes it from its checkpoint, and the finished steps do not run again.
func TestHandover(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Start(t)
	first, second := open(t, url), open(t, url)
	var drafts, attempts atomic.Int32
	started := make(chan struct{}, 1)
	build := func() *graph.Compiled[doc] {
		return steps(t, []string{"draft", "review"}, map[string]graph.NodeFunc[doc]{
			"draft": func(context.Context, doc) (doc, error) {
				drafts.Add(1)
				return doc{Log: []string{"draft"}}, nil
			},
			"review": func(ctx context.Context, _ doc) (doc, error) {
				if attempts.Add(1) == 1 {
					started <- struct{}{}
					<-ctx.Done() // the first attempt runs until its Runner stops
					return doc{}, ctx.Err()
				}
				return doc{Log: []string{"review"}}, nil
			},
		})
	}
	g, err := runner.Register(first, "write", build())
	require.NoError(t, err)
	_, err = runner.Register(second, "write", build())
	require.NoError(t, err)
	require.NoError(t, first.Start(ctx))
	require.NoError(t, g.Invoke(ctx, "t", doc{}))
	<-started

	stopping, cancel := context.WithCancel(ctx)
	cancel() // do not wait for the run
	require.NoError(t, first.Stop(stopping))
	res, err := g.Result(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, runner.StatusQueued, res.Status)

	require.NoError(t, second.Start(ctx))
	final, err := g.Wait(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, []string{"draft", "review"}, final.Log)
	assert.Equal(t, int32(1), drafts.Load())
	assert.Equal(t, int32(2), attempts.Load())
}

// A graph.ResumeCommand enqueued answers the interrupt, merges its update into the state the
// paused task sees, and adds its Goto nodes to the step, as Compiled.Resume does in-process.
func TestResumeCommand(t *testing.T) {
	ctx := context.Background()
	r := open(t, pgtest.Start(t))
	g := graph.New[doc]()
	g.AddNode("ask", func(ctx context.Context, s doc) (doc, error) {
		answer, err := graph.Interrupt[string](ctx, "title?")
		return doc{Log: []string{"answer: " + answer + " on " + s.Topic}}, err
	})
	g.AddNode("note", func(context.Context, doc) (doc, error) { return doc{Log: []string{"note"}}, nil })
	g.AddEdge(graph.START, "ask")
	g.AddEdge("ask", graph.END)
	g.AddEdge("note", graph.END)
	// note runs only when a ResumeCommand goes there; the router declares it reachable.
	g.AddRouter(graph.START, func(context.Context, doc) graph.Next[doc] { return graph.Goto[doc]() }, "note")
	c, err := g.Compile()
	require.NoError(t, err)
	rg, err := runner.Register(r, "cmd", c)
	require.NoError(t, err)
	require.NoError(t, r.Start(ctx))

	require.NoError(t, rg.Invoke(ctx, "t", doc{Topic: "graphs"}))
	_, err = rg.Wait(ctx, "t")
	var it *graph.Interrupted
	require.ErrorAs(t, err, &it)
	require.NoError(t, rg.Resume(ctx, "t", graph.ResumeCommand[doc]{Value: "Engines", Update: doc{Topic: "state graphs"}, Goto: []string{"note"}}))
	final, err := rg.Wait(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, "state graphs", final.Topic)
	assert.ElementsMatch(t, []string{"answer: Engines on state graphs", "note"}, final.Log)
}
