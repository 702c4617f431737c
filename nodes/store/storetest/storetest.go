// Package storetest is the conformance suite of store.Store: every store must pass Run.
//
// A store's test calls Run with a constructor of fresh, empty stores:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store {
//			s, err := mystore.Open(filepath.Join(t.TempDir(), "state.db"))
//			require.NoError(t, err)
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
// The contract, as the suite checks it:
//   - A Change applies whole or not at all: one that is not valid (a document without a key, an
//     event of an unknown type) changes nothing and fails naming what is wrong.
//   - Documents: a later put of a key replaces it, also within one change, unless it has a Version
//     not greater than the stored one's; a delete removes it; Docs lists a prefix's documents in
//     byte-wise key order; Doc of a missing key has a nil Value. Docs of several prefixes reads
//     them at one moment: a change that put under two of them is seen whole or not at all.
//   - Events and lines get Seq 1, 2, 3… in commit order, with no gaps between those that
//     committed; a keyed one whose key is there is not added again; they come back as they were
//     put (an event's Data compacted); paging with after and limit.
//   - A change committed by a graph task (store.Commit inside a node) is saved with the task's
//     output: it is there once the task finished, never when the task failed, and once only when
//     the failed run is resumed and the task runs again.
//   - Outside a task, store.Commit applies the change at once.
//   - A store is safe for concurrent use: concurrent changes each get their own Seqs.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/graph"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/store"
)

// Run checks that the stores newStore makes follow the contract of store.Store. newStore is called
// once per property and must return a new, empty store; it may register its cleanup with
// t.Cleanup.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Helper()
	for _, p := range []struct {
		name string
		test func(t *testing.T, s store.Store)
	}{
		{"Docs", testDocs},
		{"DocsAtOneMoment", testDocsAtOneMoment},
		{"Versions", testVersions},
		{"Events", testEvents},
		{"Lines", testLines},
		{"Keyed", testKeyed},
		{"Invalid", testInvalid},
		{"CommitWithTask", testCommitWithTask},
		{"CommitOutsideTask", testCommitOutsideTask},
		{"Concurrent", testConcurrent},
	} {
		t.Run(p.name, func(t *testing.T) {
			s := newStore(t)
			require.NotNil(t, s, "storetest: newStore returned nil")
			p.test(t, s)
		})
	}
}

var ctx = context.Background()

func apply(t *testing.T, s store.Store, ch store.Change) {
	t.Helper()
	require.NoError(t, s.Apply(ctx, ch))
}

func put(t *testing.T, ch *store.Change, key string, v any) {
	t.Helper()
	require.NoError(t, ch.Put(key, v))
}

func keys(docs []store.Doc) []string {
	var ks []string
	for _, d := range docs {
		ks = append(ks, d.Key)
	}
	return ks
}

func testDocs(t *testing.T, s store.Store) {
	got, err := s.Doc(ctx, "run/r1")
	require.NoError(t, err)
	assert.Nil(t, got.Value, "a missing document")

	var ch store.Change
	put(t, &ch, "run/r1", map[string]any{"goal": "first"})
	put(t, &ch, "node/r1/n2", map[string]any{"id": "n2"})
	put(t, &ch, "node/r1/n10", map[string]any{"id": "n10"})
	put(t, &ch, "node/r10/n1", map[string]any{"id": "other run"})
	put(t, &ch, "node/r1/é", map[string]any{"id": "non-ASCII"})
	put(t, &ch, "run/r1", map[string]any{"goal": "second"}) // the later one wins
	apply(t, s, ch)

	got, err = s.Doc(ctx, "run/r1")
	require.NoError(t, err)
	assert.JSONEq(t, `{"goal":"second"}`, string(got.Value))

	docs, err := s.Docs(ctx, "node/r1/")
	require.NoError(t, err)
	assert.Equal(t, []string{"node/r1/n10", "node/r1/n2", "node/r1/é"}, keys(docs), "byte-wise key order, only the prefix's")
	assert.JSONEq(t, `{"id":"n10"}`, string(docs[0].Value))

	all, err := s.Docs(ctx, "")
	require.NoError(t, err)
	assert.Len(t, all, 5)

	ch = store.Change{}
	ch.Delete("node/r1/n2")
	ch.Delete("node/r1/missing") // deleting what is not there is no error
	apply(t, s, ch)
	docs, err = s.Docs(ctx, "node/r1/")
	require.NoError(t, err)
	assert.Equal(t, []string{"node/r1/n10", "node/r1/é"}, keys(docs))
}

// testDocsAtOneMoment: while changes put the same value under two prefixes, a read of both
// prefixes never sees them differ; overlapping prefixes list a document once.
func testDocsAtOneMoment(t *testing.T, s store.Store) {
	none, err := s.Docs(ctx)
	require.NoError(t, err)
	assert.Empty(t, none, "no prefix, no documents")

	const changes = 200
	done, reading := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		<-reading // the changes start once the reads have: a quick store could make them all first
		for i := range changes {
			var ch store.Change
			if err := ch.Put("node/r1/n1", i); err != nil {
				t.Error(err)
				return
			}
			if err := ch.Put("worker/r1/w1", i); err != nil {
				t.Error(err)
				return
			}
			if err := s.Apply(ctx, ch); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for reads := 0; ; reads++ {
		select {
		case <-done:
			docs, err := s.Docs(ctx, "worker/r1/", "node/r1/", "node/")
			require.NoError(t, err)
			assert.Equal(t, []string{"node/r1/n1", "worker/r1/w1"}, keys(docs), "in key order, each once")
			return
		default:
		}
		docs, err := s.Docs(ctx, "node/r1/", "worker/r1/")
		if reads == 0 {
			close(reading)
		}
		require.NoError(t, err)
		if len(docs) == 0 {
			continue // before the first change
		}
		require.Len(t, docs, 2)
		require.JSONEq(t, string(docs[0].Value), string(docs[1].Value), "read %d saw the two documents of different changes", reads)
	}
}

// testVersions: a versioned put replaces an older version only; 0 replaces any.
func testVersions(t *testing.T, s store.Store) {
	version := func(v int64, value string) {
		var ch store.Change
		require.NoError(t, ch.PutVersion("run/r1", v, value))
		apply(t, s, ch)
	}
	read := func() store.Doc {
		d, err := s.Doc(ctx, "run/r1")
		require.NoError(t, err)
		return d
	}
	version(2, "two")
	version(1, "one, committed late")
	assert.JSONEq(t, `"two"`, string(read().Value), "an older version does not replace a newer")
	assert.Equal(t, int64(2), read().Version)
	version(2, "two again")
	assert.JSONEq(t, `"two"`, string(read().Value), "nor does the same one")
	version(3, "three")
	assert.JSONEq(t, `"three"`, string(read().Value))
	docs, err := s.Docs(ctx, "run/")
	require.NoError(t, err)
	require.Len(t, docs, 1)
	assert.Equal(t, int64(3), docs[0].Version)
	version(0, "unversioned")
	assert.JSONEq(t, `"unversioned"`, string(read().Value))
}

func testEvents(t *testing.T, s store.Store) {
	none, err := s.LastEvent(ctx)
	require.NoError(t, err)
	assert.Zero(t, none.Seq, "no event yet")
	when := time.Date(2026, 11, 27, 10, 0, 0, 123000000, time.UTC)
	apply(t, s, store.Change{Events: []eventlog.Event{
		{Type: eventlog.AgentStarted, Time: when, Run: "r1", Text: "goal"},
		{Type: eventlog.NodeCreated, Time: when, Run: "r1", Node: "n1", Data: json.RawMessage(`{ "a" : [1, 2] }`)},
	}})
	apply(t, s, store.Change{Events: []eventlog.Event{{Type: "x.custom", Time: when, Seq: 99, Text: "seq is the store's"}}})

	evs, err := s.Events(ctx, 0, 0)
	require.NoError(t, err)
	require.Len(t, evs, 3)
	for i, e := range evs {
		assert.Equal(t, int64(i+1), e.Seq)
		assert.True(t, e.Time.Equal(when), "time kept: %v", e.Time)
	}
	assert.Equal(t, eventlog.AgentStarted, evs[0].Type)
	assert.Equal(t, "goal", evs[0].Text)
	assert.Equal(t, "n1", evs[1].Node)
	assert.Equal(t, `{"a":[1,2]}`, string(evs[1].Data), "data compacted")
	assert.Equal(t, "seq is the store's", evs[2].Text)

	evs, err = s.Events(ctx, 1, 1)
	require.NoError(t, err)
	require.Len(t, evs, 1)
	assert.Equal(t, int64(2), evs[0].Seq)
	evs, err = s.Events(ctx, 3, 0)
	require.NoError(t, err)
	assert.Empty(t, evs)
	last, err := s.LastEvent(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(3), last.Seq)
	assert.Equal(t, "seq is the store's", last.Text)
}

func testLines(t *testing.T, s store.Store) {
	apply(t, s, store.Change{Lines: []store.Line{
		{Run: "r1", From: "human", To: "coordinator", Content: "hello\nthere", Time: time.Unix(100, 0).UTC()},
		{Run: "r1", From: "coordinator", To: "human", Content: "hi"},
	}})
	lines, err := s.Lines(ctx, 0, 0)
	require.NoError(t, err)
	require.Len(t, lines, 2)
	assert.Equal(t, int64(1), lines[0].Seq)
	assert.Equal(t, "hello\nthere", lines[0].Content)
	assert.True(t, lines[0].Time.Equal(time.Unix(100, 0)))
	assert.Equal(t, int64(2), lines[1].Seq)
	lines, err = s.Lines(ctx, 1, 5)
	require.NoError(t, err)
	require.Len(t, lines, 1)
	assert.Equal(t, "hi", lines[0].Content)
}

func testKeyed(t *testing.T, s store.Store) {
	ch := store.Change{
		Events: []eventlog.Event{{Type: eventlog.AgentStarted, Key: "r1/started"}, {Type: eventlog.AgentStarted, Key: "r1/started"}},
		Lines:  []store.Line{{From: "a", To: "b", Content: "once", Key: "k"}},
	}
	apply(t, s, ch)
	apply(t, s, ch)
	apply(t, s, store.Change{Events: []eventlog.Event{{Type: eventlog.AgentCompleted}}})
	evs, err := s.Events(ctx, 0, 0)
	require.NoError(t, err)
	require.Len(t, evs, 2, "one event per key, ever")
	assert.Equal(t, []int64{1, 2}, []int64{evs[0].Seq, evs[1].Seq}, "no gaps")
	assert.Equal(t, []string{"r1/started", ""}, []string{evs[0].Key, evs[1].Key}, "the events' keys")
	lines, err := s.Lines(ctx, 0, 0)
	require.NoError(t, err)
	require.Len(t, lines, 1)
	assert.Equal(t, "k", lines[0].Key)
	apply(t, s, store.Change{Events: []eventlog.Event{{Type: eventlog.AgentStarted, Key: "r2/started"}}})
	last, err := s.LastEvent(ctx)
	require.NoError(t, err)
	assert.Equal(t, "r2/started", last.Key)
}

func testInvalid(t *testing.T, s store.Store) {
	for name, ch := range map[string]store.Change{
		"document without a key": {Events: []eventlog.Event{{Type: eventlog.AgentStarted}}, Docs: []store.Doc{{Value: json.RawMessage(`1`)}}},
		"unknown event type":     {Docs: []store.Doc{{Key: "a", Value: json.RawMessage(`1`)}}, Events: []eventlog.Event{{Type: "nonsense"}}},
		"line without sender":    {Docs: []store.Doc{{Key: "a", Value: json.RawMessage(`1`)}}, Lines: []store.Line{{To: "b"}}},
		"document not JSON":      {Docs: []store.Doc{{Key: "a", Value: json.RawMessage(`{`)}}},
	} {
		err := s.Apply(ctx, ch)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "store", name)
	}
	got, err := s.Doc(ctx, "a")
	require.NoError(t, err)
	assert.Nil(t, got.Value, "nothing of a refused change is applied")
	evs, err := s.Events(ctx, 0, 0)
	require.NoError(t, err)
	assert.Empty(t, evs)
}

// errOnce fails a node's first run.
var errOnce = errors.New("the first run fails")

func testCommitWithTask(t *testing.T, s store.Store) {
	var runs, done int
	fail := true
	var seen store.Doc
	g := graph.New[int]()
	g.AddNode("step", func(ctx context.Context, n int) (int, error) {
		runs++
		var ch store.Change
		if err := ch.Put("run/r1", map[string]int{"n": n + 1}); err != nil {
			return 0, err
		}
		ch.Events = []eventlog.Event{{Type: eventlog.StageStarted, Text: fmt.Sprint("run ", runs)}}
		if err := store.Commit(ctx, s, ch, func() { done++ }); err != nil {
			return 0, err
		}
		// Not visible before the task's writes are saved.
		seen, _ = s.Doc(ctx, "run/r1")
		if fail {
			return 0, errOnce
		}
		return n + 1, nil
	})
	g.AddNode("after", func(ctx context.Context, n int) (int, error) {
		got, err := s.Doc(ctx, "run/r1")
		if err != nil {
			return 0, err
		}
		if got.Value == nil {
			return 0, errors.New("the step's change is not there when the next step runs")
		}
		return n, nil
	})
	g.AddEdge(graph.START, "step")
	g.AddEdge("step", "after")
	g.AddEdge("after", graph.END)
	c, err := g.Compile(graph.WithCheckpointer(s.Saver()), graph.WithThread("t1"))
	require.NoError(t, err)

	_, err = c.Invoke(ctx, 1)
	require.ErrorIs(t, err, errOnce)
	assert.Nil(t, seen.Value, "a task's change is not applied before its writes are saved")
	got, err := s.Doc(ctx, "run/r1")
	require.NoError(t, err)
	assert.Nil(t, got.Value, "a failed task's change is not applied")
	assert.Zero(t, done, "nor is its done called")

	fail = false
	out, err := c.Resume(ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, 2, out)
	assert.Equal(t, 2, runs)
	assert.Equal(t, 1, done)
	got, err = s.Doc(ctx, "run/r1")
	require.NoError(t, err)
	assert.JSONEq(t, `{"n":2}`, string(got.Value))
	evs, err := s.Events(ctx, 0, 0)
	require.NoError(t, err)
	require.Len(t, evs, 1, "the run that saved its writes applied its change, once")
	assert.Equal(t, "run 2", evs[0].Text)
}

func testCommitOutsideTask(t *testing.T, s store.Store) {
	var done bool
	var ch store.Change
	put(t, &ch, "k", 1)
	require.NoError(t, store.Commit(ctx, s, ch, func() { done = true }))
	assert.True(t, done)
	got, err := s.Doc(ctx, "k")
	require.NoError(t, err)
	assert.JSONEq(t, `1`, string(got.Value))
}

func testConcurrent(t *testing.T, s store.Store) {
	const writers, each = 8, 20
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				var ch store.Change
				if err := ch.Put(fmt.Sprintf("w%d/%d", w, i), i); err != nil {
					t.Error(err)
					return
				}
				ch.Events = []eventlog.Event{{Type: "x.write", Text: fmt.Sprint(w)}, {Type: "x.write", Text: fmt.Sprint(w)}}
				if err := s.Apply(ctx, ch); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	evs, err := s.Events(ctx, 0, 0)
	require.NoError(t, err)
	require.Len(t, evs, writers*each*2)
	for i, e := range evs {
		require.Equal(t, int64(i+1), e.Seq)
		if i%2 == 1 {
			assert.Equal(t, evs[i-1].Text, e.Text, "a change's events are consecutive")
		}
	}
	docs, err := s.Docs(ctx, "w")
	require.NoError(t, err)
	assert.Len(t, docs, writers*each)
}
