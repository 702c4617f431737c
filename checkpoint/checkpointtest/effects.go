package checkpointtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/checkpoint"
)

// A Handler is an effect handler as the suite gives it to a saver: each saver's test adapts it to
// the handler its WithEffects takes, and calls it from there with the thread and the write.
type Handler func(threadID string, w checkpoint.Write) error

// An effectProperty is one subtest of RunEffects.
type effectProperty struct {
	name string
	test func(t *testing.T, s checkpoint.Saver, r *recorder)
}

var effectProperties = []effectProperty{
	{"AppliedWithTheWrites", testEffectsApplied},
	{"AppliedWithTheStep", testEffectsStep},
	{"AppliedOnce", testEffectsOnce},
	{"HandlerErrorSavesNothing", testEffectsHandlerError},
	{"UnknownCheckpoint", testEffectsUnknownCheckpoint},
	{"Concurrent", testEffectsConcurrent},
}

// RunEffects checks that the savers newSaver makes apply WriteEffect writes as
// checkpoint.WriteEffect documents: newSaver returns a new, empty saver whose effect handler calls
// h. That a saver without a handler refuses them is checked by Run.
//
//   - The handler gets each effect write whose key the checkpoint does not have, with the thread
//     and the write as put, in the order of the writes, once: a key put again, in the same call
//     or a later one, is not applied again.
//   - Get and List return an effect write with its key and a nil Value, in its place among the
//     writes.
//   - A handler's error fails the call with an error that wraps it, and nothing of the call is
//     saved: not its writes, not the checkpoint of a step, not its effects' keys.
//   - A call whose checkpoint does not exist fails with checkpoint.ErrNotFound and applies nothing.
//   - Concurrent calls that put the same keys apply each once.
func RunEffects(t *testing.T, newSaver func(t *testing.T, h Handler) checkpoint.Saver) {
	t.Helper()
	for _, p := range effectProperties {
		t.Run(p.name, func(t *testing.T) {
			r := &recorder{}
			s := newSaver(t, r.handle)
			require.NotNil(t, s, "checkpointtest: newSaver returned nil")
			p.test(t, s, r)
		})
	}
}

// A recorder is the suite's effect handler: it keeps what it was given, and fails a write
// whose Value is failValue.
type recorder struct {
	mu      sync.Mutex
	applied []applied
}

// applied is an effect write as the handler got it.
type applied struct {
	Thread, Task string
	Idx          int
	Value        string
}

// failValue is the Value of an effect write the recorder refuses, with errEffect.
const failValue = "fail"

var errEffect = errors.New("checkpointtest: the effect handler refused the write")

func (r *recorder) handle(threadID string, w checkpoint.Write) error {
	if w.Kind != checkpoint.WriteEffect {
		return fmt.Errorf("checkpointtest: the effect handler got a write of kind %q", w.Kind)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if string(w.Value) == failValue {
		return errEffect
	}
	r.applied = append(r.applied, applied{threadID, w.TaskID, w.Idx, string(w.Value)})
	return nil
}

// take returns what was applied since the last take.
func (r *recorder) take() []applied {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := r.applied
	r.applied = nil
	return a
}

func effect(task string, idx int, value string) checkpoint.Write {
	return write(task, checkpoint.WriteEffect, idx, value)
}

// kept is w as a saver keeps it: an effect write without its Value.
func kept(ws ...checkpoint.Write) []checkpoint.Write {
	out := make([]checkpoint.Write, len(ws))
	for i, w := range ws {
		if w.Kind == checkpoint.WriteEffect {
			w.Value = nil
		}
		out[i] = w
	}
	return out
}

// requireWrites checks the writes of the checkpoint cfg addresses, by Get and by List.
func requireWrites(t *testing.T, s checkpoint.Saver, cfg checkpoint.Config, want []checkpoint.Write) {
	t.Helper()
	tu, err := s.Get(context.Background(), cfg)
	require.NoError(t, err)
	assert.Equal(t, want, nilValues(tu.Writes), "Get")
	l, err := s.List(context.Background(), cfg, checkpoint.ListOptions{})
	require.NoError(t, err)
	for _, tu := range l {
		if tu.Checkpoint.ID == cfg.CheckpointID {
			assert.Equal(t, want, nilValues(tu.Writes), "List")
		}
	}
}

// nilValues returns ws with empty Values made nil (Write.Value need only keep its bytes), and
// nil for no writes.
func nilValues(ws []checkpoint.Write) []checkpoint.Write {
	if len(ws) == 0 {
		return nil
	}
	out := make([]checkpoint.Write, len(ws))
	for i, w := range ws {
		if len(w.Value) == 0 {
			w.Value = nil
		}
		out[i] = w
	}
	return out
}

// testEffectsApplied: PutWrites gives its effects to the handler in order and keeps their keys
// among its writes.
func testEffectsApplied(t *testing.T, s checkpoint.Saver, r *recorder) {
	ctx := context.Background()
	cfg := checkpoint.Config{ThreadID: "t-ü", NS: "ns"}
	put(t, s, cfg, fullCP("c1", "", 0))
	ws := []checkpoint.Write{
		write("task-0", checkpoint.WriteUpdate, 0, "out"),
		effect("task-0", 0, "card added"),
		effect("task-0", 1, string(allBytes)),
		write("task-1", checkpoint.WriteUpdate, 0, "out 1"),
		effect("task-1", 0, "message sent"),
	}
	require.NoError(t, s.PutWrites(ctx, at(cfg, "c1"), ws))
	assert.Equal(t, []applied{
		{"t-ü", "task-0", 0, "card added"}, {"t-ü", "task-0", 1, string(allBytes)}, {"t-ü", "task-1", 0, "message sent"},
	}, r.take())
	requireWrites(t, s, at(cfg, "c1"), kept(ws...))

	// A call of one effect write alone.
	require.NoError(t, s.PutWrites(ctx, at(cfg, "c1"), []checkpoint.Write{effect("task-2", 0, "alone")}))
	assert.Equal(t, []applied{{"t-ü", "task-2", 0, "alone"}}, r.take())
	requireWrites(t, s, at(cfg, "c1"), kept(append(ws, effect("task-2", 0, "alone"))...))
}

// testEffectsStep: a step's effects are applied with its writes, and its checkpoint is stored.
func testEffectsStep(t *testing.T, s checkpoint.Saver, r *recorder) {
	ctx := context.Background()
	cfg := checkpoint.Config{ThreadID: "t"}
	put(t, s, cfg, fullCP("c1", "", 0))
	ws := []checkpoint.Write{write("task-0", checkpoint.WriteUpdate, 0, "out"), effect("task-0", 0, "a"), effect("task-0", 1, "b")}
	got, err := checkpoint.PutStep(ctx, s, at(cfg, "c1"), ws, cfg, fullCP("c2", "c1", 1))
	require.NoError(t, err)
	assert.Equal(t, at(cfg, "c2"), got)
	assert.Equal(t, []applied{{"t", "task-0", 0, "a"}, {"t", "task-0", 1, "b"}}, r.take())
	requireWrites(t, s, at(cfg, "c1"), kept(ws...))
	checkCP(t, "the step's checkpoint", get(t, s, at(cfg, "c2")).Checkpoint, fullCP("c2", "c1", 1))

	// An effect alone in a step.
	_, err = checkpoint.PutStep(ctx, s, at(cfg, "c2"), []checkpoint.Write{effect("task-1", 0, "c")}, cfg, fullCP("c3", "c2", 2))
	require.NoError(t, err)
	assert.Equal(t, []applied{{"t", "task-1", 0, "c"}}, r.take())
	requireWrites(t, s, at(cfg, "c2"), kept(effect("task-1", 0, "c")))
}

// testEffectsOnce: a key put again, in a later call or the same one, is not applied again, nor
// is its new value kept; the same key of another checkpoint is another effect.
func testEffectsOnce(t *testing.T, s checkpoint.Saver, r *recorder) {
	ctx := context.Background()
	cfg := checkpoint.Config{ThreadID: "t"}
	put(t, s, cfg, minimalCP("c1"), minimalCP("c2"))
	first := []checkpoint.Write{write("task-0", checkpoint.WriteUpdate, 0, "out"), effect("task-0", 0, "a")}
	require.NoError(t, s.PutWrites(ctx, at(cfg, "c1"), first))
	assert.Len(t, r.take(), 1)

	again := []checkpoint.Write{effect("task-0", 0, "a, again"), effect("task-0", 1, "b"), effect("task-0", 1, "b, twice in a call")}
	require.NoError(t, s.PutWrites(ctx, at(cfg, "c1"), again))
	assert.Equal(t, []applied{{"t", "task-0", 1, "b"}}, r.take())
	_, err := checkpoint.PutStep(ctx, s, at(cfg, "c1"), first, cfg, minimalCP("c3"))
	require.NoError(t, err)
	assert.Empty(t, r.take(), "a retried step")
	requireWrites(t, s, at(cfg, "c1"), kept(first[0], first[1], again[1]))

	require.NoError(t, s.PutWrites(ctx, at(cfg, "c2"), first[1:]))
	assert.Equal(t, []applied{{"t", "task-0", 0, "a"}}, r.take(), "the key of another checkpoint")
}

// testEffectsHandlerError: a handler's error fails the call, which saves nothing; the call
// retried applies its effects.
func testEffectsHandlerError(t *testing.T, s checkpoint.Saver, r *recorder) {
	ctx := context.Background()
	cfg := checkpoint.Config{ThreadID: "t"}
	put(t, s, cfg, minimalCP("c1"))
	before := []checkpoint.Write{write("task-0", checkpoint.WriteUpdate, 0, "before")}
	require.NoError(t, s.PutWrites(ctx, at(cfg, "c1"), before))

	ws := []checkpoint.Write{write("task-1", checkpoint.WriteUpdate, 0, "out"), effect("task-1", 0, "a"), effect("task-1", 1, failValue), write("task-2", checkpoint.WriteUpdate, 0, "after")}
	err := s.PutWrites(ctx, at(cfg, "c1"), ws)
	require.ErrorIs(t, err, errEffect)
	requireWrites(t, s, at(cfg, "c1"), before)
	_, err = checkpoint.PutStep(ctx, s, at(cfg, "c1"), ws, cfg, minimalCP("c2"))
	require.ErrorIs(t, err, errEffect, "PutStep")
	requireWrites(t, s, at(cfg, "c1"), before)
	_, err = s.Get(ctx, at(cfg, "c2"))
	require.ErrorIs(t, err, checkpoint.ErrNotFound, "the failed step's checkpoint is not stored")
	r.take()

	ws[2] = effect("task-1", 1, "b")
	_, err = checkpoint.PutStep(ctx, s, at(cfg, "c1"), ws, cfg, minimalCP("c2"))
	require.NoError(t, err)
	assert.Equal(t, []applied{{"t", "task-1", 0, "a"}, {"t", "task-1", 1, "b"}}, r.take(), "the retried step applies every effect")
	requireWrites(t, s, at(cfg, "c1"), kept(append(before, ws...)...))
}

// testEffectsUnknownCheckpoint: writes of a checkpoint that does not exist apply nothing.
func testEffectsUnknownCheckpoint(t *testing.T, s checkpoint.Saver, r *recorder) {
	ctx := context.Background()
	cfg := checkpoint.Config{ThreadID: "t"}
	put(t, s, cfg, minimalCP("c1"))
	for _, ws := range [][]checkpoint.Write{
		{effect("task-0", 0, "a")},
		{write("task-0", checkpoint.WriteUpdate, 0, "out"), effect("task-0", 0, "a")},
	} {
		require.ErrorIs(t, s.PutWrites(ctx, at(cfg, "c0-missing"), ws), checkpoint.ErrNotFound)
		_, err := checkpoint.PutStep(ctx, s, at(cfg, "c0-missing"), ws, cfg, minimalCP("c2"))
		require.ErrorIs(t, err, checkpoint.ErrNotFound)
	}
	assert.Empty(t, r.take())
	_, err := s.Get(ctx, at(cfg, "c2"))
	require.ErrorIs(t, err, checkpoint.ErrNotFound)
}

// testEffectsConcurrent: goroutines that put the effects of tasks, two for each task and two
// threads, apply each once.
func testEffectsConcurrent(t *testing.T, s checkpoint.Saver, r *recorder) {
	ctx := context.Background()
	const tasks = 8
	threads := []string{"a", "b"}
	writesOf := func(task int) []checkpoint.Write {
		id := fmt.Sprint("task-", task)
		return []checkpoint.Write{write(id, checkpoint.WriteUpdate, 0, "out"), effect(id, 0, id+"/0"), effect(id, 1, id+"/1")}
	}
	for _, th := range threads {
		put(t, s, checkpoint.Config{ThreadID: th}, minimalCP("c1"))
	}
	var wg sync.WaitGroup
	for _, th := range threads {
		for task := range tasks {
			for try := range 2 {
				wg.Go(func() {
					cfg := checkpoint.Config{ThreadID: th, CheckpointID: "c1"}
					var err error
					if try == 0 {
						err = s.PutWrites(ctx, cfg, writesOf(task))
					} else {
						_, err = checkpoint.PutStep(ctx, s, cfg, writesOf(task), checkpoint.Config{ThreadID: th}, minimalCP(fmt.Sprint("c2-", task)))
					}
					assert.NoError(t, err)
				})
			}
		}
	}
	wg.Wait()
	count := map[applied]int{}
	for _, a := range r.take() {
		count[a]++
	}
	want := map[applied]int{}
	for _, th := range threads {
		for task := range tasks {
			for _, w := range writesOf(task)[1:] {
				want[applied{th, w.TaskID, w.Idx, string(w.Value)}] = 1
			}
		}
		tu := get(t, s, checkpoint.Config{ThreadID: th, CheckpointID: "c1"})
		assert.Len(t, tu.Writes, 3*tasks, "writes of thread %s", th)
	}
	assert.Equal(t, want, count)
}

// testEffectsRefused (in Run): a saver without an effect handler refuses a call that carries an
// effect write, and saves nothing of it.
func testEffectsRefused(t *testing.T, s checkpoint.Saver) {
	ctx := context.Background()
	cfg := checkpoint.Config{ThreadID: "t"}
	put(t, s, cfg, minimalCP("c1"))
	ws := []checkpoint.Write{write("task-0", checkpoint.WriteUpdate, 0, "out"), effect("task-0", 0, "a")}
	err := s.PutWrites(ctx, at(cfg, "c1"), ws)
	require.ErrorIs(t, err, checkpoint.ErrNoEffectHandler)
	assert.ErrorContains(t, err, "an effect write needs a saver with an effect handler (WithEffects)")
	require.ErrorIs(t, s.PutWrites(ctx, at(cfg, "c1"), ws[1:]), checkpoint.ErrNoEffectHandler, "an effect write alone")
	_, err = checkpoint.PutStep(ctx, s, at(cfg, "c1"), ws, cfg, minimalCP("c2"))
	require.ErrorIs(t, err, checkpoint.ErrNoEffectHandler, "PutStep")
	requireWrites(t, s, at(cfg, "c1"), nil)
	_, err = s.Get(ctx, at(cfg, "c2"))
	require.ErrorIs(t, err, checkpoint.ErrNotFound, "the refused step's checkpoint is not stored")
}
