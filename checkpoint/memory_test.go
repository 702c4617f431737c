package checkpoint_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agiraph/agiraph/checkpoint"
)

func memCP(id, parent string, step int) checkpoint.Checkpoint {
	return checkpoint.Checkpoint{
		ID: id, ParentID: parent, Step: step, Source: checkpoint.SourceLoop, RunID: "run",
		State: []byte(fmt.Sprintf(`{"step":%d}`, step)),
		Next:  []checkpoint.Task{{ID: "0", Node: "n", Arg: []byte(`"arg"`), Push: true}},
		Joins: map[string][]string{"j": {"a", "b"}},
		Meta:  map[string]string{"k": "v"},
		// A fixed time keeps the checkpoint comparable.
		CreatedAt: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC),
	}
}

func memPut(t *testing.T, m *checkpoint.Memory, cfg checkpoint.Config, cps ...checkpoint.Checkpoint) {
	t.Helper()
	for _, cp := range cps {
		got, err := m.Put(context.Background(), cfg, cp)
		if err != nil {
			t.Fatalf("put %s: %v", cp.ID, err)
		}
		if got.ThreadID != cfg.ThreadID || got.NS != cfg.NS || got.CheckpointID != cp.ID {
			t.Fatalf("put %s returned config %+v", cp.ID, got)
		}
	}
}

func memIDs(ts []checkpoint.Tuple) []string {
	var ids []string
	for _, t := range ts {
		ids = append(ids, t.Checkpoint.ID)
	}
	return ids
}

func TestMemory_PutAndGet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var m checkpoint.Memory // the zero value is ready to use
	cfg := checkpoint.Config{ThreadID: "t"}
	c1, c2 := memCP("c1", "", 0), memCP("c2", "c1", 1)
	memPut(t, &m, cfg, c1, c2)

	latest, err := m.Get(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if latest.Config != (checkpoint.Config{ThreadID: "t", CheckpointID: "c2"}) {
		t.Fatalf("latest config %+v", latest.Config)
	}
	if !cpEqual(latest.Checkpoint, c2) {
		t.Fatalf("latest = %+v, want %+v", latest.Checkpoint, c2)
	}
	byID, err := m.Get(ctx, checkpoint.Config{ThreadID: "t", CheckpointID: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	if !cpEqual(byID.Checkpoint, c1) || byID.Config.CheckpointID != "c1" {
		t.Fatalf("get c1 = %+v", byID)
	}

	// Putting an existing ID replaces the checkpoint but keeps its place and its writes.
	if err := m.PutWrites(ctx, checkpoint.Config{ThreadID: "t", CheckpointID: "c1"}, []checkpoint.Write{{TaskID: "0", Kind: checkpoint.WriteUpdate, Value: []byte("1")}}); err != nil {
		t.Fatal(err)
	}
	replaced := memCP("c1", "", 0)
	replaced.Meta = map[string]string{"k": "replaced"}
	memPut(t, &m, cfg, replaced)
	got, err := m.Get(ctx, checkpoint.Config{ThreadID: "t", CheckpointID: "c1"})
	if err != nil || got.Checkpoint.Meta["k"] != "replaced" || len(got.Writes) != 1 {
		t.Fatalf("after replacing c1: %+v, %v", got, err)
	}
	if latest, _ := m.Get(ctx, cfg); latest.Checkpoint.ID != "c2" {
		t.Fatalf("replacing c1 made it the latest")
	}
	list, _ := m.List(ctx, cfg, checkpoint.ListOptions{})
	if !slices.Equal(memIDs(list), []string{"c2", "c1"}) {
		t.Fatalf("list after replacing %v", memIDs(list))
	}

	// Put needs a thread and an ID.
	if _, err := m.Put(ctx, checkpoint.Config{}, memCP("x", "", 0)); err == nil {
		t.Fatal("put without a thread succeeded")
	}
	if _, err := m.Put(ctx, cfg, checkpoint.Checkpoint{}); err == nil {
		t.Fatal("put without a checkpoint ID succeeded")
	}
}

func cpEqual(a, b checkpoint.Checkpoint) bool {
	return fmt.Sprintf("%+v", a) == fmt.Sprintf("%+v", b)
}

func TestMemory_NotFound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := checkpoint.NewMemory()
	memPut(t, m, checkpoint.Config{ThreadID: "t", NS: "ns"}, memCP("c1", "", 0))
	for _, cfg := range []checkpoint.Config{
		{ThreadID: "nobody"},
		{ThreadID: "t"},            // the root namespace of t has nothing
		{ThreadID: "t", NS: "ns2"}, // nor has another namespace
		{ThreadID: "t", NS: "ns", CheckpointID: "c9"},
	} {
		if tu, err := m.Get(ctx, cfg); !errors.Is(err, checkpoint.ErrNotFound) || tu != nil {
			t.Errorf("get %+v: %v, %v; want ErrNotFound", cfg, tu, err)
		}
	}
	if list, err := m.List(ctx, checkpoint.Config{ThreadID: "nobody"}, checkpoint.ListOptions{}); err != nil || len(list) != 0 {
		t.Errorf("list of an unknown thread: %v, %v", list, err)
	}
	err := m.PutWrites(ctx, checkpoint.Config{ThreadID: "t", NS: "ns", CheckpointID: "c9"}, []checkpoint.Write{{TaskID: "0", Kind: checkpoint.WriteUpdate}})
	if !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("writes for an unknown checkpoint: %v, want ErrNotFound", err)
	}
	err = m.PutWrites(ctx, checkpoint.Config{ThreadID: "other", CheckpointID: "c1"}, []checkpoint.Write{{TaskID: "0", Kind: checkpoint.WriteUpdate}})
	if !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("writes for a checkpoint of an unknown thread: %v, want ErrNotFound", err)
	}
}

func TestMemory_ListNewestFirstWithLimitAndBefore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := checkpoint.NewMemory()
	cfg := checkpoint.Config{ThreadID: "t"}
	for i := range 5 {
		parent := ""
		if i > 0 {
			parent = fmt.Sprint("c", i-1)
		}
		memPut(t, m, cfg, memCP(fmt.Sprint("c", i), parent, i))
	}
	cases := []struct {
		opts checkpoint.ListOptions
		want []string
	}{
		{checkpoint.ListOptions{}, []string{"c4", "c3", "c2", "c1", "c0"}},
		{checkpoint.ListOptions{Limit: 2}, []string{"c4", "c3"}},
		{checkpoint.ListOptions{Before: "c3"}, []string{"c2", "c1", "c0"}},
		{checkpoint.ListOptions{Before: "c3", Limit: 2}, []string{"c2", "c1"}},
		{checkpoint.ListOptions{Before: "c0"}, nil},
		{checkpoint.ListOptions{Limit: 10}, []string{"c4", "c3", "c2", "c1", "c0"}},
	}
	for _, tc := range cases {
		list, err := m.List(ctx, cfg, tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := memIDs(list); !slices.Equal(got, tc.want) {
			t.Errorf("list %+v = %v, want %v", tc.opts, got, tc.want)
		}
		for _, tu := range list {
			if tu.Config != (checkpoint.Config{ThreadID: "t", CheckpointID: tu.Checkpoint.ID}) {
				t.Errorf("listed config %+v", tu.Config)
			}
		}
	}
}

func TestMemory_PutWritesKeepsTheFirstOfEachKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := checkpoint.NewMemory()
	cfg := checkpoint.Config{ThreadID: "t"}
	memPut(t, m, cfg, memCP("c1", "", 0))
	at := checkpoint.Config{ThreadID: "t", CheckpointID: "c1"}
	w := func(task string, kind checkpoint.WriteKind, idx int, v string) checkpoint.Write {
		return checkpoint.Write{TaskID: task, Node: "n" + task, Kind: kind, Idx: idx, Value: []byte(v)}
	}
	batches := [][]checkpoint.Write{
		{w("0", checkpoint.WriteUpdate, 0, "first"), w("1", checkpoint.WriteInterrupt, 0, "ask")},
		{w("0", checkpoint.WriteUpdate, 0, "second")},                                             // same key: ignored
		{w("1", checkpoint.WriteResume, 0, "answer"), w("1", checkpoint.WriteResume, 0, "again")}, // duplicate in one batch
		{w("1", checkpoint.WriteInterrupt, 1, "ask2"), w("1", checkpoint.WriteResume, -1, "before")},
	}
	for _, b := range batches {
		if err := m.PutWrites(ctx, at, b); err != nil {
			t.Fatal(err)
		}
	}
	got, err := m.Get(ctx, at)
	if err != nil {
		t.Fatal(err)
	}
	want := []checkpoint.Write{
		w("0", checkpoint.WriteUpdate, 0, "first"),
		w("1", checkpoint.WriteInterrupt, 0, "ask"),
		w("1", checkpoint.WriteResume, 0, "answer"),
		w("1", checkpoint.WriteInterrupt, 1, "ask2"),
		w("1", checkpoint.WriteResume, -1, "before"),
	}
	if len(got.Writes) != len(want) {
		t.Fatalf("writes %+v, want %+v", got.Writes, want)
	}
	for i := range want {
		g := got.Writes[i]
		if g.TaskID != want[i].TaskID || g.Node != want[i].Node || g.Kind != want[i].Kind || g.Idx != want[i].Idx || string(g.Value) != string(want[i].Value) {
			t.Errorf("write %d = %+v (%s), want %+v (%s)", i, g, g.Value, want[i], want[i].Value)
		}
	}
	// Writes belong to their checkpoint: the latest (another one) has none.
	memPut(t, m, cfg, memCP("c2", "c1", 1))
	if latest, _ := m.Get(ctx, cfg); len(latest.Writes) != 0 {
		t.Fatalf("the new checkpoint has writes %+v", latest.Writes)
	}
}

func TestMemory_NamespacesAreSeparate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := checkpoint.NewMemory()
	root := checkpoint.Config{ThreadID: "t"}
	sub := checkpoint.Config{ThreadID: "t", NS: "sub:1.0"}
	memPut(t, m, root, memCP("r1", "", 0), memCP("r2", "r1", 1))
	memPut(t, m, sub, memCP("s1", "", 0))

	if tu, err := m.Get(ctx, sub); err != nil || tu.Checkpoint.ID != "s1" || tu.Config.NS != "sub:1.0" {
		t.Fatalf("latest of sub: %+v, %v", tu, err)
	}
	if tu, err := m.Get(ctx, root); err != nil || tu.Checkpoint.ID != "r2" {
		t.Fatalf("latest of root: %+v, %v", tu, err)
	}
	// A checkpoint is found only in its own namespace.
	if _, err := m.Get(ctx, checkpoint.Config{ThreadID: "t", NS: "sub:1.0", CheckpointID: "r1"}); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("root checkpoint found in sub: %v", err)
	}
	if err := m.PutWrites(ctx, checkpoint.Config{ThreadID: "t", CheckpointID: "s1"}, []checkpoint.Write{{TaskID: "0"}}); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("writes for sub's checkpoint through the root namespace: %v", err)
	}
	rootList, _ := m.List(ctx, root, checkpoint.ListOptions{})
	subList, _ := m.List(ctx, sub, checkpoint.ListOptions{})
	if !slices.Equal(memIDs(rootList), []string{"r2", "r1"}) || !slices.Equal(memIDs(subList), []string{"s1"}) {
		t.Fatalf("lists: root %v, sub %v", memIDs(rootList), memIDs(subList))
	}
}

func TestMemory_DeleteThread(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := checkpoint.NewMemory()
	memPut(t, m, checkpoint.Config{ThreadID: "t"}, memCP("r1", "", 0))
	memPut(t, m, checkpoint.Config{ThreadID: "t", NS: "a"}, memCP("a1", "", 0))
	memPut(t, m, checkpoint.Config{ThreadID: "t", NS: "a/b"}, memCP("b1", "", 0))
	memPut(t, m, checkpoint.Config{ThreadID: "keep"}, memCP("k1", "", 0))

	if err := m.DeleteThread(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"", "a", "a/b"} {
		if _, err := m.Get(ctx, checkpoint.Config{ThreadID: "t", NS: ns}); !errors.Is(err, checkpoint.ErrNotFound) {
			t.Errorf("namespace %q survived the delete: %v", ns, err)
		}
		if list, _ := m.List(ctx, checkpoint.Config{ThreadID: "t", NS: ns}, checkpoint.ListOptions{}); len(list) != 0 {
			t.Errorf("namespace %q still lists %v", ns, memIDs(list))
		}
	}
	if tu, err := m.Get(ctx, checkpoint.Config{ThreadID: "keep"}); err != nil || tu.Checkpoint.ID != "k1" {
		t.Fatalf("another thread was deleted too: %v", err)
	}
	if err := m.DeleteThread(ctx, "never-existed"); err != nil {
		t.Fatalf("deleting an unknown thread: %v", err)
	}
	// The thread can be used again afterwards.
	memPut(t, m, checkpoint.Config{ThreadID: "t"}, memCP("new", "", 0))
	if tu, err := m.Get(ctx, checkpoint.Config{ThreadID: "t"}); err != nil || tu.Checkpoint.ID != "new" {
		t.Fatalf("reused thread: %+v, %v", tu, err)
	}
}

func TestMemory_ReturnsCopies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := checkpoint.NewMemory()
	cfg := checkpoint.Config{ThreadID: "t"}
	at := checkpoint.Config{ThreadID: "t", CheckpointID: "c1"}
	cp := memCP("c1", "", 0)
	memPut(t, m, cfg, cp)
	writes := []checkpoint.Write{{TaskID: "0", Kind: checkpoint.WriteUpdate, Value: []byte("value")}}
	if err := m.PutWrites(ctx, at, writes); err != nil {
		t.Fatal(err)
	}
	// What was put is copied: changing the caller's values afterwards changes nothing stored.
	cp.State[0] = 'X'
	cp.Next[0].Node = "changed"
	cp.Next[0].Arg[0] = 'X'
	cp.Joins["j"][0] = "changed"
	cp.Meta["k"] = "changed"
	writes[0].Value[0] = 'X'

	check := func(when string) {
		t.Helper()
		tu, err := m.Get(ctx, at)
		if err != nil {
			t.Fatal(err)
		}
		want := memCP("c1", "", 0)
		if !cpEqual(tu.Checkpoint, want) || string(tu.Writes[0].Value) != "value" {
			t.Fatalf("%s: stored checkpoint became %+v with write %q", when, tu.Checkpoint, tu.Writes[0].Value)
		}
	}
	check("after changing what was put")

	// What is returned is a copy: changing it changes nothing stored.
	for _, get := range []func() checkpoint.Tuple{
		func() checkpoint.Tuple { tu, _ := m.Get(ctx, at); return *tu },
		func() checkpoint.Tuple { l, _ := m.List(ctx, cfg, checkpoint.ListOptions{}); return l[0] },
	} {
		tu := get()
		tu.Checkpoint.State[0] = 'Y'
		tu.Checkpoint.Next[0].Node = "mutated"
		tu.Checkpoint.Next[0].Arg[0] = 'Y'
		tu.Checkpoint.Next = append(tu.Checkpoint.Next, checkpoint.Task{ID: "extra"})
		tu.Checkpoint.Joins["j"][1] = "mutated"
		tu.Checkpoint.Joins["new"] = nil
		tu.Checkpoint.Meta["k"] = "mutated"
		tu.Writes[0].Value[0] = 'Y'
		tu.Writes[0].TaskID = "mutated"
		check("after changing a returned tuple")
	}
}

func TestMemory_ContextErrors(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m := checkpoint.NewMemory()
	cfg := checkpoint.Config{ThreadID: "t", CheckpointID: "c1"}
	if _, err := m.Put(ctx, cfg, memCP("c1", "", 0)); !errors.Is(err, context.Canceled) {
		t.Errorf("put: %v", err)
	}
	if err := m.PutWrites(ctx, cfg, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("put writes: %v", err)
	}
	if _, err := m.Get(ctx, cfg); !errors.Is(err, context.Canceled) {
		t.Errorf("get: %v", err)
	}
	if _, err := m.List(ctx, cfg, checkpoint.ListOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("list: %v", err)
	}
	if err := m.DeleteThread(ctx, "t"); !errors.Is(err, context.Canceled) {
		t.Errorf("delete: %v", err)
	}
}

func TestMemory_Concurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := checkpoint.NewMemory()
	const workers, perWorker = 20, 30
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Half the workers share a thread, the others have their own.
			thread := fmt.Sprint("own-", w)
			if w%2 == 0 {
				thread = "shared"
			}
			cfg := checkpoint.Config{ThreadID: thread}
			for i := range perWorker {
				id := fmt.Sprintf("w%02d-%03d", w, i)
				at, err := m.Put(ctx, cfg, memCP(id, "", i))
				if err != nil {
					errs <- err
					return
				}
				for k := range 3 {
					// The same key twice: only the first counts.
					ws := []checkpoint.Write{{TaskID: fmt.Sprint(k), Kind: checkpoint.WriteUpdate, Value: []byte(id)}}
					if err := m.PutWrites(ctx, at, append(ws, ws...)); err != nil {
						errs <- err
						return
					}
				}
				tu, err := m.Get(ctx, at)
				if err != nil || tu.Checkpoint.ID != id || len(tu.Writes) != 3 {
					errs <- fmt.Errorf("get %s: %+v, %v", id, tu, err)
					return
				}
				if _, err := m.Get(ctx, cfg); err != nil {
					errs <- err
					return
				}
				if _, err := m.List(ctx, cfg, checkpoint.ListOptions{Limit: 3}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	shared, err := m.List(ctx, checkpoint.Config{ThreadID: "shared"}, checkpoint.ListOptions{})
	if err != nil || len(shared) != workers/2*perWorker {
		t.Fatalf("shared thread has %d checkpoints (%v), want %d", len(shared), err, workers/2*perWorker)
	}
	for _, tu := range shared {
		if len(tu.Writes) != 3 {
			t.Fatalf("checkpoint %s has %d writes, want 3", tu.Checkpoint.ID, len(tu.Writes))
		}
	}
	own, err := m.List(ctx, checkpoint.Config{ThreadID: "own-1"}, checkpoint.ListOptions{})
	if err != nil || len(own) != perWorker {
		t.Fatalf("own thread: %d checkpoints (%v), want %d", len(own), err, perWorker)
	}
	if newest := own[0].Checkpoint.ID; newest != fmt.Sprintf("w01-%03d", perWorker-1) {
		t.Fatalf("own thread's newest checkpoint is %s", newest)
	}
}

func TestJSONSerializer(t *testing.T) {
	t.Parallel()
	type s struct {
		A int
		B []string
	}
	var j checkpoint.JSON
	b, err := j.Marshal(s{A: 1, B: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	var back s
	if err := j.Unmarshal(b, &back); err != nil || back.A != 1 || !slices.Equal(back.B, []string{"x"}) {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
	if _, err := j.Marshal(make(chan int)); err == nil {
		t.Fatal("a channel was encoded")
	}
	if err := j.Unmarshal([]byte("{not json"), &back); err == nil {
		t.Fatal("garbage was decoded")
	}
}
