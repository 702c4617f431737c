// Package checkpointtest is the conformance suite of checkpoint.Saver: every Saver must pass [Run],
// and a Saver that takes an effect handler [RunEffects] too.
//
// A Saver's test calls Run with a constructor of fresh, empty savers:
//
//	func TestConformance(t *testing.T) {
//		checkpointtest.Run(t, func(t *testing.T) checkpoint.Saver {
//			s, err := mystore.Open(filepath.Join(t.TempDir(), "db"))
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
// Each property of the contract is a subtest with a saver of its own. The contract the suite
// checks, beyond what package checkpoint documents, is in docs/checkpoints.md (Writing a saver).
package checkpointtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agiraph/agiraph/checkpoint"
)

// A property is one subtest of the suite.
type property struct {
	name string
	test func(t *testing.T, s checkpoint.Saver)
}

var properties = []property{
	{"RoundTrip", testRoundTrip},
	{"EmptyValues", testEmptyValues},
	{"PutReplaces", testPutReplaces},
	{"PutNeedsThreadAndID", testPutNeedsThreadAndID},
	{"NotFound", testNotFound},
	{"LatestFollowsIDOrder", testLatestFollowsIDOrder},
	{"ListLimitBefore", testListLimitBefore},
	{"ListBeforeUnknownID", testListBeforeUnknownID},
	{"ListFilters", testListFilters},
	{"WritesOrder", testWritesOrder},
	{"WritesIdempotent", testWritesIdempotent},
	{"WritesBelongToTheirCheckpoint", testWritesBelongToTheirCheckpoint},
	{"WritesUnknownCheckpoint", testWritesUnknownCheckpoint},
	{"Namespaces", testNamespaces},
	{"DeleteThread", testDeleteThread},
	{"ReturnsCopies", testReturnsCopies},
	{"CancelledContext", testCancelledContext},
	{"Concurrent", testConcurrent},
	{"LargeValues", testLargeValues},
	{"PutStep", testPutStep},
	{"PatchMetadata", testPatchMetadata},
	{"EffectsRefused", testEffectsRefused},
}

// Run checks that the savers newSaver makes follow the contract of checkpoint.Saver. newSaver is
// called once per property and must return a new, empty saver; it may register its cleanup with
// t.Cleanup.
func Run(t *testing.T, newSaver func(t *testing.T) checkpoint.Saver) {
	t.Helper()
	for _, p := range properties {
		t.Run(p.name, func(t *testing.T) {
			s := newSaver(t)
			if s == nil {
				t.Fatal("checkpointtest: newSaver returned nil")
			}
			p.test(t, s)
		})
	}
}

// created is a fixed creation time with sub-millisecond digits and a zone that is not UTC.
var created = time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.FixedZone("UTC+1", 3600))

// allBytes holds every byte value, so that savers cannot rely on byte slices being text.
var allBytes = func() []byte {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}()

// fullCP returns a checkpoint with every field set.
func fullCP(id, parent string, step int) checkpoint.Checkpoint {
	return checkpoint.Checkpoint{
		ID:       id,
		ParentID: parent,
		Step:     step,
		Source:   checkpoint.SourceLoop,
		RunID:    "run-ü",
		State:    append([]byte(fmt.Sprintf(`{"step":%d}`, step)), allBytes...),
		Next: []checkpoint.Task{
			{ID: "task-0", Node: "naïve-节点"},
			{ID: "task-1", Node: "send", Arg: append([]byte(`"arg"`), allBytes...), Push: true},
			{ID: "task-2", Node: "send", Arg: []byte{}, Push: true},
		},
		Joins:     map[string][]string{"join:a,b→c": {"a", "b"}, "x": {"y"}},
		Meta:      map[string]string{"who": `ünïcode "quoted"` + "\n\ttext", "empty": "", "step": fmt.Sprint(step)},
		Format:    7,
		CreatedAt: created.Add(time.Duration(step) * time.Second),
	}
}

// minimalCP returns a checkpoint with only an ID: no state, no frontier, no time.
func minimalCP(id string) checkpoint.Checkpoint { return checkpoint.Checkpoint{ID: id} }

func put(t *testing.T, s checkpoint.Saver, cfg checkpoint.Config, cps ...checkpoint.Checkpoint) {
	t.Helper()
	for _, cp := range cps {
		got, err := s.Put(context.Background(), cfg, cp)
		if err != nil {
			t.Fatalf("Put %s in %+v: %v", cp.ID, cfg, err)
		}
		want := checkpoint.Config{ThreadID: cfg.ThreadID, NS: cfg.NS, CheckpointID: cp.ID}
		if got != want {
			t.Fatalf("Put %s returned config %+v, want %+v", cp.ID, got, want)
		}
	}
}

func putWrites(t *testing.T, s checkpoint.Saver, cfg checkpoint.Config, ws ...checkpoint.Write) {
	t.Helper()
	if err := s.PutWrites(context.Background(), cfg, ws); err != nil {
		t.Fatalf("PutWrites %+v: %v", cfg, err)
	}
}

func get(t *testing.T, s checkpoint.Saver, cfg checkpoint.Config) *checkpoint.Tuple {
	t.Helper()
	tu, err := s.Get(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Get %+v: %v", cfg, err)
	}
	if tu == nil {
		t.Fatalf("Get %+v returned a nil tuple and no error", cfg)
	}
	return tu
}

func list(t *testing.T, s checkpoint.Saver, cfg checkpoint.Config, opts checkpoint.ListOptions) []checkpoint.Tuple {
	t.Helper()
	l, err := s.List(context.Background(), cfg, opts)
	if err != nil {
		t.Fatalf("List %+v %+v: %v", cfg, opts, err)
	}
	return l
}

func ids(ts []checkpoint.Tuple) []string {
	out := []string{}
	for _, t := range ts {
		out = append(out, t.Checkpoint.ID)
	}
	return out
}

func at(cfg checkpoint.Config, id string) checkpoint.Config {
	cfg.CheckpointID = id
	return cfg
}

func write(task string, kind checkpoint.WriteKind, idx int, value string) checkpoint.Write {
	return checkpoint.Write{TaskID: task, Node: "node-" + task, Kind: kind, Idx: idx, Value: []byte(value)}
}

// diffCheckpoint describes how got differs from want under the suite's rules, or returns "".
func diffCheckpoint(got, want checkpoint.Checkpoint) string {
	var d []string
	add := func(format string, args ...any) { d = append(d, fmt.Sprintf(format, args...)) }
	if got.ID != want.ID {
		add("ID %q, want %q", got.ID, want.ID)
	}
	if got.ParentID != want.ParentID {
		add("ParentID %q, want %q", got.ParentID, want.ParentID)
	}
	if got.Step != want.Step {
		add("Step %d, want %d", got.Step, want.Step)
	}
	if got.Source != want.Source {
		add("Source %q, want %q", got.Source, want.Source)
	}
	if got.RunID != want.RunID {
		add("RunID %q, want %q", got.RunID, want.RunID)
	}
	if got.Format != want.Format {
		add("Format %d, want %d", got.Format, want.Format)
	}
	if s := diffBytes(got.State, want.State); s != "" {
		add("State: %s", s)
	}
	if len(got.Next) != len(want.Next) {
		add("Next has %d tasks %+v, want %d %+v", len(got.Next), got.Next, len(want.Next), want.Next)
	} else {
		for i, g := range got.Next {
			w := want.Next[i]
			if g.ID != w.ID || g.Node != w.Node || g.Push != w.Push {
				add("Next[%d] = {ID:%q Node:%q Push:%v}, want {ID:%q Node:%q Push:%v}", i, g.ID, g.Node, g.Push, w.ID, w.Node, w.Push)
			}
			if s := diffBytes(g.Arg, w.Arg); s != "" {
				add("Next[%d].Arg: %s", i, s)
			}
		}
	}
	if len(got.Joins) != len(want.Joins) {
		add("Joins %v, want %v", got.Joins, want.Joins)
	} else {
		for k, w := range want.Joins {
			if g, ok := got.Joins[k]; !ok || !slices.Equal(g, w) {
				add("Joins[%q] = %q (present: %v), want %q", k, g, ok, w)
			}
		}
	}
	if !maps.Equal(got.Meta, want.Meta) {
		add("Meta %q, want %q", got.Meta, want.Meta)
	}
	switch {
	case want.CreatedAt.IsZero():
		if !got.CreatedAt.IsZero() {
			add("CreatedAt %v, want the zero time", got.CreatedAt)
		}
	case !got.CreatedAt.Truncate(time.Millisecond).Equal(want.CreatedAt.Truncate(time.Millisecond)):
		add("CreatedAt %v, want %v (to the millisecond)", got.CreatedAt, want.CreatedAt)
	}
	return strings.Join(d, "; ")
}

// diffBytes compares byte slices keeping nil and empty apart.
func diffBytes(got, want []byte) string {
	switch {
	case (got == nil) != (want == nil):
		return fmt.Sprintf("nil: %v, want nil: %v (len %d, want %d)", got == nil, want == nil, len(got), len(want))
	case !bytes.Equal(got, want):
		return fmt.Sprintf("%d bytes %s, want %d bytes %s", len(got), short(got), len(want), short(want))
	}
	return ""
}

func short(b []byte) string {
	if len(b) > 40 {
		return fmt.Sprintf("%q...", b[:40])
	}
	return fmt.Sprintf("%q", b)
}

func checkCP(t *testing.T, what string, got, want checkpoint.Checkpoint) {
	t.Helper()
	if d := diffCheckpoint(got, want); d != "" {
		t.Errorf("%s: %s", what, d)
	}
}

// checkWrites compares writes field by field, in order.
func checkWrites(t *testing.T, what string, got, want []checkpoint.Write) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d writes %s, want %d %s", what, len(got), fmtWrites(got), len(want), fmtWrites(want))
		return
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.TaskID != w.TaskID || g.Node != w.Node || g.Kind != w.Kind || g.Idx != w.Idx || !bytes.Equal(g.Value, w.Value) {
			t.Errorf("%s: write %d = %s, want %s", what, i, fmtWrites(got[i:i+1]), fmtWrites(want[i:i+1]))
		}
	}
}

func fmtWrites(ws []checkpoint.Write) string {
	var parts []string
	for _, w := range ws {
		parts = append(parts, fmt.Sprintf("{%s %s %s %d %s}", w.TaskID, w.Node, w.Kind, w.Idx, short(w.Value)))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// testRoundTrip: every field comes back as it was put, from Get by ID, Get latest and List.
func testRoundTrip(t *testing.T, s checkpoint.Saver) {
	cfg := checkpoint.Config{ThreadID: "thread-ü/1", NS: "sub:näme|1"}
	c1, c2 := fullCP("c1", "", 0), fullCP("c2", "c1", 1)
	c2.Source, c2.RunID, c2.Step, c2.Format = checkpoint.SourceUpdate, "run-2", -1, 0
	put(t, s, cfg, c1, c2)

	tu := get(t, s, at(cfg, "c1"))
	if tu.Config != at(cfg, "c1") {
		t.Errorf("Get c1: config %+v, want %+v", tu.Config, at(cfg, "c1"))
	}
	checkCP(t, "Get c1", tu.Checkpoint, c1)
	if len(tu.Writes) != 0 {
		t.Errorf("Get c1: writes %s before any were put", fmtWrites(tu.Writes))
	}

	latest := get(t, s, cfg)
	if latest.Config != at(cfg, "c2") {
		t.Errorf("Get latest: config %+v, want %+v", latest.Config, at(cfg, "c2"))
	}
	checkCP(t, "Get latest", latest.Checkpoint, c2)

	// The parent chain can be walked with Get.
	parent := get(t, s, at(cfg, latest.Checkpoint.ParentID))
	checkCP(t, "Get the parent of the latest", parent.Checkpoint, c1)

	l := list(t, s, cfg, checkpoint.ListOptions{})
	if got := ids(l); !slices.Equal(got, []string{"c2", "c1"}) {
		t.Fatalf("List = %v, want [c2 c1]", got)
	}
	for i, want := range []checkpoint.Checkpoint{c2, c1} {
		if l[i].Config != at(cfg, want.ID) {
			t.Errorf("List[%d]: config %+v, want %+v", i, l[i].Config, at(cfg, want.ID))
		}
		checkCP(t, fmt.Sprintf("List[%d]", i), l[i].Checkpoint, want)
	}
}

// testEmptyValues: nil stays nil for State and Task.Arg, empty stays empty, and a checkpoint with
// nothing but an ID round-trips.
func testEmptyValues(t *testing.T, s checkpoint.Saver) {
	cfg := checkpoint.Config{ThreadID: "t"}
	minimal := minimalCP("a")
	empty := checkpoint.Checkpoint{
		ID:    "b",
		State: []byte{},
		Next:  []checkpoint.Task{{ID: "0", Node: "n", Arg: []byte{}, Push: true}, {ID: "1", Node: "n", Push: true}},
		Joins: map[string][]string{},
		Meta:  map[string]string{},
	}
	put(t, s, cfg, minimal, empty)
	checkCP(t, "Get of a checkpoint with only an ID", get(t, s, at(cfg, "a")).Checkpoint, minimal)
	checkCP(t, "Get of a checkpoint with empty values", get(t, s, at(cfg, "b")).Checkpoint, empty)
	for _, tu := range list(t, s, cfg, checkpoint.ListOptions{}) {
		want := minimal
		if tu.Checkpoint.ID == "b" {
			want = empty
		}
		checkCP(t, "List", tu.Checkpoint, want)
	}
	// Empty write values and empty keys.
	w := []checkpoint.Write{{TaskID: "", Kind: checkpoint.WriteError, Value: []byte{}}, {TaskID: "1", Kind: checkpoint.WriteUpdate}}
	putWrites(t, s, at(cfg, "b"), w...)
	checkWrites(t, "writes with empty values", get(t, s, at(cfg, "b")).Writes, w)
}

// testPutReplaces: a Put of an existing ID replaces the checkpoint, keeps its writes and its place.
func testPutReplaces(t *testing.T, s checkpoint.Saver) {
	cfg := checkpoint.Config{ThreadID: "t"}
	put(t, s, cfg, fullCP("c1", "", 0), fullCP("c2", "c1", 1))
	w := write("task-0", checkpoint.WriteUpdate, 0, "out")
	putWrites(t, s, at(cfg, "c1"), w)

	replaced := fullCP("c1", "", 0)
	replaced.Meta = map[string]string{"k": "replaced"}
	replaced.State = nil
	replaced.Next = replaced.Next[:1]
	replaced.Source = checkpoint.SourceFork
	put(t, s, cfg, replaced)

	tu := get(t, s, at(cfg, "c1"))
	checkCP(t, "Get of the replaced checkpoint", tu.Checkpoint, replaced)
	checkWrites(t, "writes of the replaced checkpoint", tu.Writes, []checkpoint.Write{w})
	if latest := get(t, s, cfg); latest.Checkpoint.ID != "c2" {
		t.Errorf("after replacing c1 the latest is %s, want c2", latest.Checkpoint.ID)
	}
	if got := ids(list(t, s, cfg, checkpoint.ListOptions{})); !slices.Equal(got, []string{"c2", "c1"}) {
		t.Errorf("List after replacing c1 = %v, want [c2 c1]", got)
	}
}

// testPutNeedsThreadAndID: Put refuses a checkpoint without an ID or a config without a thread.
func testPutNeedsThreadAndID(t *testing.T, s checkpoint.Saver) {
	ctx := context.Background()
	if _, err := s.Put(ctx, checkpoint.Config{}, fullCP("c1", "", 0)); err == nil {
		t.Error("Put without a thread ID succeeded")
	}
	if _, err := s.Put(ctx, checkpoint.Config{ThreadID: "t"}, checkpoint.Checkpoint{Step: 1}); err == nil {
		t.Error("Put without a checkpoint ID succeeded")
	}
	if _, err := s.Get(ctx, checkpoint.Config{ThreadID: "t"}); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("a refused Put stored something: Get returned %v", err)
	}
}

// testNotFound: Get fails with ErrNotFound for an unknown thread, namespace or ID.
func testNotFound(t *testing.T, s checkpoint.Saver) {
	ctx := context.Background()
	put(t, s, checkpoint.Config{ThreadID: "t", NS: "ns"}, fullCP("c1", "", 0))
	put(t, s, checkpoint.Config{ThreadID: "u"}, fullCP("c2", "", 0))
	for _, cfg := range []checkpoint.Config{
		{ThreadID: "nobody"},
		{ThreadID: "nobody", CheckpointID: "c1"},
		{ThreadID: "t"},            // the root namespace of t has nothing
		{ThreadID: "t", NS: "ns2"}, // nor has another namespace
		{ThreadID: "t", NS: "ns", CheckpointID: "c9"},
		{ThreadID: "t", NS: "ns", CheckpointID: "c2"}, // c2 exists, in another thread
		{ThreadID: "u", CheckpointID: "c1"},           // c1 exists, in another thread
		{ThreadID: "t", CheckpointID: "c1"},           // c1 exists, in another namespace
	} {
		tu, err := s.Get(ctx, cfg)
		if !errors.Is(err, checkpoint.ErrNotFound) {
			t.Errorf("Get %+v: error %v, want ErrNotFound", cfg, err)
		}
		if tu != nil {
			t.Errorf("Get %+v returned a tuple %+v with its error", cfg, tu.Config)
		}
	}
	for _, cfg := range []checkpoint.Config{{ThreadID: "nobody"}, {ThreadID: "t", NS: "ns2"}} {
		if l, err := s.List(ctx, cfg, checkpoint.ListOptions{}); err != nil || len(l) != 0 {
			t.Errorf("List %+v = %v, %v; want nothing and no error", cfg, ids(l), err)
		}
	}
}

// testLatestFollowsIDOrder: "latest" and "newest first" are by ID, not by the order of the Puts.
func testLatestFollowsIDOrder(t *testing.T, s checkpoint.Saver) {
	cfg := checkpoint.Config{ThreadID: "t"}
	put(t, s, cfg, minimalCP("c3"), minimalCP("c1"), minimalCP("c2"))
	if got := get(t, s, cfg).Checkpoint.ID; got != "c3" {
		t.Errorf("latest after putting c3, c1, c2 is %s, want c3", got)
	}
	if got := ids(list(t, s, cfg, checkpoint.ListOptions{})); !slices.Equal(got, []string{"c3", "c2", "c1"}) {
		t.Errorf("List after putting c3, c1, c2 = %v, want [c3 c2 c1]", got)
	}

	// Time-ordered UUIDs, as the graph package makes them, put in a shuffled order.
	cfg = checkpoint.Config{ThreadID: "uuids"}
	var want []string
	for range 20 {
		want = append(want, uuid.Must(uuid.NewV7()).String())
	}
	if !sort.StringsAreSorted(want) {
		t.Fatalf("UUIDv7s are not increasing: %v", want)
	}
	shuffled := slices.Clone(want)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	for _, id := range shuffled {
		put(t, s, cfg, minimalCP(id))
	}
	if got := get(t, s, cfg).Checkpoint.ID; got != want[len(want)-1] {
		t.Errorf("latest UUID is %s, want %s", got, want[len(want)-1])
	}
	slices.Reverse(want)
	if got := ids(list(t, s, cfg, checkpoint.ListOptions{})); !slices.Equal(got, want) {
		t.Errorf("List of UUIDs = %v, want %v", got, want)
	}
}

// testListLimitBefore: Limit and Before (exclusive), alone and together.
func testListLimitBefore(t *testing.T, s checkpoint.Saver) {
	cfg := checkpoint.Config{ThreadID: "t"}
	for i := range 5 {
		put(t, s, cfg, fullCP(fmt.Sprint("c", i), "", i))
	}
	for _, tc := range []struct {
		opts checkpoint.ListOptions
		want []string
	}{
		{checkpoint.ListOptions{}, []string{"c4", "c3", "c2", "c1", "c0"}},
		{checkpoint.ListOptions{Limit: 1}, []string{"c4"}},
		{checkpoint.ListOptions{Limit: 2}, []string{"c4", "c3"}},
		{checkpoint.ListOptions{Limit: 5}, []string{"c4", "c3", "c2", "c1", "c0"}},
		{checkpoint.ListOptions{Limit: 10}, []string{"c4", "c3", "c2", "c1", "c0"}},
		{checkpoint.ListOptions{Before: "c4"}, []string{"c3", "c2", "c1", "c0"}},
		{checkpoint.ListOptions{Before: "c3"}, []string{"c2", "c1", "c0"}},
		{checkpoint.ListOptions{Before: "c3", Limit: 2}, []string{"c2", "c1"}},
		{checkpoint.ListOptions{Before: "c1", Limit: 2}, []string{"c0"}},
		{checkpoint.ListOptions{Before: "c0"}, nil},
	} {
		l := list(t, s, cfg, tc.opts)
		if got := ids(l); !slices.Equal(got, tc.want) {
			t.Errorf("List %+v = %v, want %v", tc.opts, got, tc.want)
		}
		for _, tu := range l {
			if tu.Config != at(cfg, tu.Checkpoint.ID) {
				t.Errorf("List %+v: config %+v of %s", tc.opts, tu.Config, tu.Checkpoint.ID)
			}
		}
	}
	// Paging with Before and Limit visits every checkpoint once.
	var paged []string
	for before := ""; ; {
		page := list(t, s, cfg, checkpoint.ListOptions{Before: before, Limit: 2})
		if len(page) == 0 {
			break
		}
		paged = append(paged, ids(page)...)
		before = page[len(page)-1].Checkpoint.ID
		if len(paged) > 5 {
			break
		}
	}
	if !slices.Equal(paged, []string{"c4", "c3", "c2", "c1", "c0"}) {
		t.Errorf("paging by 2 = %v", paged)
	}
}

// testListBeforeUnknownID: Before is a position in the order of IDs, not a stored checkpoint:
// "only checkpoints older than this ID" keeps the smaller IDs even when no checkpoint has it (it
// was deleted, or it was taken from another namespace).
func testListBeforeUnknownID(t *testing.T, s checkpoint.Saver) {
	cfg := checkpoint.Config{ThreadID: "t"}
	put(t, s, cfg, minimalCP("c1"), minimalCP("c3"), minimalCP("c5"))
	for _, tc := range []struct {
		before string
		want   []string
	}{
		{"c4", []string{"c3", "c1"}},
		{"c9", []string{"c5", "c3", "c1"}},
		{"c0", nil},
		{"c3a", []string{"c3", "c1"}},
	} {
		if got := ids(list(t, s, cfg, checkpoint.ListOptions{Before: tc.before})); !slices.Equal(got, tc.want) {
			t.Errorf("List Before %s = %v, want %v", tc.before, got, tc.want)
		}
	}
}

// testListFilters: Source, RunID and Meta filters, combined with each other, Before and Limit; the
// limit counts matching checkpoints.
func testListFilters(t *testing.T, s checkpoint.Saver) {
	cfg := checkpoint.Config{ThreadID: "t"}
	sources := []checkpoint.Source{checkpoint.SourceInput, checkpoint.SourceLoop, checkpoint.SourceLoop, checkpoint.SourceUpdate}
	for i := range 12 {
		cp := minimalCP(fmt.Sprintf("c%02d", i))
		cp.Source = sources[i%len(sources)]
		cp.RunID = fmt.Sprint("run", i/6) // run0: c00..c05, run1: c06..c11
		cp.Meta = map[string]string{"parity": []string{"even", "odd"}[i%2], "step": fmt.Sprint(i)}
		if i%3 == 0 {
			cp.Meta["third"] = ""
		}
		put(t, s, cfg, cp)
	}
	for _, tc := range []struct {
		opts checkpoint.ListOptions
		want []string
	}{
		{checkpoint.ListOptions{Source: checkpoint.SourceLoop}, []string{"c10", "c09", "c06", "c05", "c02", "c01"}},
		{checkpoint.ListOptions{Source: checkpoint.SourceLoop, Limit: 3}, []string{"c10", "c09", "c06"}},
		{checkpoint.ListOptions{Source: checkpoint.SourceFork}, nil},
		{checkpoint.ListOptions{RunID: "run0"}, []string{"c05", "c04", "c03", "c02", "c01", "c00"}},
		{checkpoint.ListOptions{RunID: "run0", Limit: 2}, []string{"c05", "c04"}},
		{checkpoint.ListOptions{RunID: "run9"}, nil},
		{checkpoint.ListOptions{Meta: map[string]string{"parity": "odd"}}, []string{"c11", "c09", "c07", "c05", "c03", "c01"}},
		{checkpoint.ListOptions{Meta: map[string]string{"parity": "odd"}, Limit: 2}, []string{"c11", "c09"}},
		{checkpoint.ListOptions{Meta: map[string]string{"parity": "odd", "step": "3"}}, []string{"c03"}},
		{checkpoint.ListOptions{Meta: map[string]string{"parity": "odd", "step": "4"}}, nil},
		{checkpoint.ListOptions{Meta: map[string]string{"third": ""}}, []string{"c09", "c06", "c03", "c00"}}, // an empty value must be present
		{checkpoint.ListOptions{Meta: map[string]string{"nothere": ""}}, nil},
		{checkpoint.ListOptions{Meta: map[string]string{}}, []string{"c11", "c10", "c09", "c08", "c07", "c06", "c05", "c04", "c03", "c02", "c01", "c00"}},
		{checkpoint.ListOptions{Source: checkpoint.SourceLoop, RunID: "run1", Meta: map[string]string{"parity": "even"}}, []string{"c10", "c06"}},
		{checkpoint.ListOptions{Source: checkpoint.SourceLoop, RunID: "run1", Meta: map[string]string{"parity": "even"}, Limit: 1}, []string{"c10"}},
		{checkpoint.ListOptions{Source: checkpoint.SourceLoop, Before: "c09", Limit: 2}, []string{"c06", "c05"}},
		{checkpoint.ListOptions{Meta: map[string]string{"parity": "even"}, Before: "c04", Limit: 1}, []string{"c02"}},
	} {
		if got := ids(list(t, s, cfg, tc.opts)); !slices.Equal(got, tc.want) {
			t.Errorf("List %+v = %v, want %v", tc.opts, got, tc.want)
		}
	}
}

// testWritesOrder: writes come back in the order they were put, across calls, from Get and List.
func testWritesOrder(t *testing.T, s checkpoint.Saver) {
	cfg := checkpoint.Config{ThreadID: "t"}
	put(t, s, cfg, fullCP("c1", "", 0))
	ws := []checkpoint.Write{
		write("task-2", checkpoint.WriteUpdate, 0, "two"),
		write("task-0", checkpoint.WriteInterrupt, 0, "ask"),
		write("task-1", checkpoint.WriteError, 0, "boom"),
		write("task-0", checkpoint.WriteResume, -1, "before"),
		write("task-0", checkpoint.WriteResume, 0, "answer"),
		{TaskID: "task-3", Node: "bytes", Kind: checkpoint.WriteUpdate, Value: allBytes},
		write("a", checkpoint.WriteUpdate, 0, "last, although its task ID sorts first"),
		write("0190a6f2-7c1e-7e5b-9b3a-2d4c6e8f0a1b", checkpoint.WriteInput, 0, "the input that made a child"),
	}
	putWrites(t, s, at(cfg, "c1"), ws[0])
	putWrites(t, s, at(cfg, "c1"), ws[1:4]...)
	putWrites(t, s, at(cfg, "c1")) // nothing
	putWrites(t, s, at(cfg, "c1"), ws[4:]...)
	checkWrites(t, "Get by ID", get(t, s, at(cfg, "c1")).Writes, ws)
	checkWrites(t, "Get latest", get(t, s, cfg).Writes, ws)
	if l := list(t, s, cfg, checkpoint.ListOptions{}); len(l) != 1 {
		t.Errorf("List = %v, want [c1]", ids(l))
	} else {
		checkWrites(t, "List", l[0].Writes, ws)
	}
}

// testWritesIdempotent: (TaskID, Kind, Idx) is the key of a write; the first one put is kept.
func testWritesIdempotent(t *testing.T, s checkpoint.Saver) {
	cfg := checkpoint.Config{ThreadID: "t"}
	put(t, s, cfg, fullCP("c1", "", 0))
	c1 := at(cfg, "c1")
	first := write("0", checkpoint.WriteUpdate, 0, "first")
	putWrites(t, s, c1, first)
	putWrites(t, s, c1, write("0", checkpoint.WriteUpdate, 0, "second")) // same key: ignored
	dup := write("0", checkpoint.WriteUpdate, 0, "third")
	dup.Node = "another node" // the node is not part of the key
	putWrites(t, s, c1, dup)
	checkWrites(t, "after putting the same key three times", get(t, s, c1).Writes, []checkpoint.Write{first})
	putWrites(t, s, c1,
		write("1", checkpoint.WriteResume, 0, "answer"),
		write("1", checkpoint.WriteResume, 0, "again"),  // duplicate in one batch
		write("1", checkpoint.WriteResume, 1, "idx 1"),  // another Idx
		write("1", checkpoint.WriteInterrupt, 0, "ask"), // another Kind
		write("2", checkpoint.WriteResume, 0, "task 2"), // another task
		write("0", checkpoint.WriteUpdate, 0, "fourth"), // the first key again
	)
	putWrites(t, s, c1, first) // a retried save
	want := []checkpoint.Write{
		first,
		write("1", checkpoint.WriteResume, 0, "answer"),
		write("1", checkpoint.WriteResume, 1, "idx 1"),
		write("1", checkpoint.WriteInterrupt, 0, "ask"),
		write("2", checkpoint.WriteResume, 0, "task 2"),
	}
	checkWrites(t, "writes", get(t, s, c1).Writes, want)
}

// testWritesBelongToTheirCheckpoint: a new checkpoint starts with no writes; older checkpoints keep
// theirs.
func testWritesBelongToTheirCheckpoint(t *testing.T, s checkpoint.Saver) {
	cfg := checkpoint.Config{ThreadID: "t"}
	put(t, s, cfg, fullCP("c1", "", 0))
	w1 := []checkpoint.Write{write("task-0", checkpoint.WriteUpdate, 0, "c1 out"), write("task-1", checkpoint.WriteUpdate, 0, "c1 out 2")}
	putWrites(t, s, at(cfg, "c1"), w1...)

	put(t, s, cfg, fullCP("c2", "c1", 1))
	latest := get(t, s, cfg)
	if latest.Checkpoint.ID != "c2" || len(latest.Writes) != 0 {
		t.Fatalf("the new latest checkpoint %s has writes %s, want c2 with none", latest.Checkpoint.ID, fmtWrites(latest.Writes))
	}
	checkWrites(t, "the older checkpoint by ID", get(t, s, at(cfg, "c1")).Writes, w1)

	// The same task IDs in the next checkpoint are other writes.
	w2 := []checkpoint.Write{write("task-0", checkpoint.WriteUpdate, 0, "c2 out")}
	putWrites(t, s, at(cfg, "c2"), w2...)
	checkWrites(t, "c2", get(t, s, cfg).Writes, w2)
	checkWrites(t, "c1 after writes to c2", get(t, s, at(cfg, "c1")).Writes, w1)

	put(t, s, cfg, fullCP("c3", "c2", 2))
	l := list(t, s, cfg, checkpoint.ListOptions{})
	if !slices.Equal(ids(l), []string{"c3", "c2", "c1"}) {
		t.Fatalf("List = %v", ids(l))
	}
	checkWrites(t, "List c3", l[0].Writes, nil)
	checkWrites(t, "List c2", l[1].Writes, w2)
	checkWrites(t, "List c1", l[2].Writes, w1)

	// Writes put to several checkpoints in turn, and to another thread's checkpoint of the same
	// ID, come back with their own checkpoint in a page of List, in the order they were put.
	w1 = append(w1, write("c3", checkpoint.WriteInput, 0, "the input that made c3"))
	putWrites(t, s, at(cfg, "c1"), w1[len(w1)-1])
	other := checkpoint.Config{ThreadID: "u"}
	put(t, s, other, fullCP("c2", "", 0))
	putWrites(t, s, at(other, "c2"), write("task-1", checkpoint.WriteUpdate, 0, "another thread's"))
	w2 = append(w2, write("task-1", checkpoint.WriteUpdate, 0, "c2 out 2"))
	putWrites(t, s, at(cfg, "c2"), w2[len(w2)-1])
	l = list(t, s, cfg, checkpoint.ListOptions{Before: "c3", Limit: 2})
	if !slices.Equal(ids(l), []string{"c2", "c1"}) {
		t.Fatalf("List before c3 = %v", ids(l))
	}
	checkWrites(t, "page c2", l[0].Writes, w2)
	checkWrites(t, "page c1", l[1].Writes, w1)
}

// testWritesUnknownCheckpoint: PutWrites for a checkpoint that does not exist fails with
// ErrNotFound and stores nothing.
func testWritesUnknownCheckpoint(t *testing.T, s checkpoint.Saver) {
	ctx := context.Background()
	cfg := checkpoint.Config{ThreadID: "t", NS: "ns"}
	put(t, s, cfg, fullCP("c1", "", 0))
	w := []checkpoint.Write{write("0", checkpoint.WriteUpdate, 0, "x")}
	for _, bad := range []checkpoint.Config{
		{ThreadID: "t", NS: "ns", CheckpointID: "c9"},
		{ThreadID: "other", NS: "ns", CheckpointID: "c1"},
		{ThreadID: "t", NS: "", CheckpointID: "c1"},
	} {
		if err := s.PutWrites(ctx, bad, w); !errors.Is(err, checkpoint.ErrNotFound) {
			t.Errorf("PutWrites to %+v: %v, want an error wrapping ErrNotFound", bad, err)
		}
	}
	// Nothing was kept for later: a checkpoint put afterwards under that ID has no writes.
	put(t, s, cfg, fullCP("c9", "c1", 1))
	if tu := get(t, s, at(cfg, "c9")); len(tu.Writes) != 0 {
		t.Errorf("a failed PutWrites left writes %s", fmtWrites(tu.Writes))
	}
	if tu := get(t, s, at(cfg, "c1")); len(tu.Writes) != 0 {
		t.Errorf("writes to other addresses reached c1: %s", fmtWrites(tu.Writes))
	}
}

// testNamespaces: the same ID in two namespaces of a thread are two checkpoints.
func testNamespaces(t *testing.T, s checkpoint.Saver) {
	root := checkpoint.Config{ThreadID: "t"}
	sub := checkpoint.Config{ThreadID: "t", NS: "sub:1.0"}
	rootCP, subCP := fullCP("c1", "", 0), fullCP("c1", "", 5)
	subCP.Meta = map[string]string{"in": "sub"}
	put(t, s, root, rootCP, fullCP("c2", "c1", 1))
	put(t, s, sub, subCP)
	rootW, subW := write("0", checkpoint.WriteUpdate, 0, "root"), write("0", checkpoint.WriteUpdate, 0, "sub")
	putWrites(t, s, at(root, "c1"), rootW)
	putWrites(t, s, at(sub, "c1"), subW)

	r, sb := get(t, s, at(root, "c1")), get(t, s, at(sub, "c1"))
	checkCP(t, "root c1", r.Checkpoint, rootCP)
	checkCP(t, "sub c1", sb.Checkpoint, subCP)
	checkWrites(t, "root c1", r.Writes, []checkpoint.Write{rootW})
	checkWrites(t, "sub c1", sb.Writes, []checkpoint.Write{subW})
	if sb.Config != at(sub, "c1") {
		t.Errorf("sub c1: config %+v", sb.Config)
	}
	if got := get(t, s, sub); got.Checkpoint.ID != "c1" || got.Config.NS != sub.NS {
		t.Errorf("latest of sub: %+v", got.Config)
	}
	if got := get(t, s, root).Checkpoint.ID; got != "c2" {
		t.Errorf("latest of root: %s, want c2", got)
	}
	if _, err := s.Get(context.Background(), at(sub, "c2")); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("root's c2 found in sub: %v", err)
	}
	if got := ids(list(t, s, root, checkpoint.ListOptions{})); !slices.Equal(got, []string{"c2", "c1"}) {
		t.Errorf("List root = %v", got)
	}
	if got := ids(list(t, s, sub, checkpoint.ListOptions{})); !slices.Equal(got, []string{"c1"}) {
		t.Errorf("List sub = %v", got)
	}
}

// testDeleteThread: every namespace of the thread goes, other threads stay, unknown threads are
// fine, and the thread starts afresh afterwards.
func testDeleteThread(t *testing.T, s checkpoint.Saver) {
	ctx := context.Background()
	w := write("0", checkpoint.WriteUpdate, 0, "x")
	for _, cfg := range []checkpoint.Config{
		{ThreadID: "t"}, {ThreadID: "t", NS: "a"}, {ThreadID: "t", NS: "a/b"},
		{ThreadID: "keep"}, {ThreadID: "keep", NS: "a"}, {ThreadID: "t2"}, {ThreadID: "tt"},
	} {
		put(t, s, cfg, fullCP("c1", "", 0))
		putWrites(t, s, at(cfg, "c1"), w)
	}
	if err := s.DeleteThread(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"", "a", "a/b"} {
		cfg := checkpoint.Config{ThreadID: "t", NS: ns}
		if _, err := s.Get(ctx, cfg); !errors.Is(err, checkpoint.ErrNotFound) {
			t.Errorf("namespace %q survived DeleteThread: %v", ns, err)
		}
		if _, err := s.Get(ctx, at(cfg, "c1")); !errors.Is(err, checkpoint.ErrNotFound) {
			t.Errorf("c1 of namespace %q survived DeleteThread: %v", ns, err)
		}
		if l := list(t, s, cfg, checkpoint.ListOptions{}); len(l) != 0 {
			t.Errorf("namespace %q still lists %v", ns, ids(l))
		}
		if err := s.PutWrites(ctx, at(cfg, "c1"), []checkpoint.Write{w}); !errors.Is(err, checkpoint.ErrNotFound) {
			t.Errorf("PutWrites to a deleted checkpoint: %v, want ErrNotFound", err)
		}
	}
	for _, cfg := range []checkpoint.Config{{ThreadID: "keep"}, {ThreadID: "keep", NS: "a"}, {ThreadID: "t2"}, {ThreadID: "tt"}} {
		tu, err := s.Get(ctx, cfg)
		if err != nil {
			t.Errorf("%+v was deleted with thread t: %v", cfg, err)
			continue
		}
		checkWrites(t, fmt.Sprintf("writes of %+v", cfg), tu.Writes, []checkpoint.Write{w})
	}
	if err := s.DeleteThread(ctx, "never-existed"); err != nil {
		t.Errorf("DeleteThread of an unknown thread: %v", err)
	}
	if err := s.DeleteThread(ctx, "t"); err != nil {
		t.Errorf("DeleteThread twice: %v", err)
	}
	// The thread can be used again, and old writes do not come back under a reused ID.
	fresh := minimalCP("c1")
	put(t, s, checkpoint.Config{ThreadID: "t"}, fresh)
	tu := get(t, s, checkpoint.Config{ThreadID: "t"})
	checkCP(t, "reused thread", tu.Checkpoint, fresh)
	checkWrites(t, "reused thread", tu.Writes, nil)
}

// testReturnsCopies: what is put and what is returned are copies.
func testReturnsCopies(t *testing.T, s checkpoint.Saver) {
	ctx := context.Background()
	cfg := checkpoint.Config{ThreadID: "t"}
	c1 := at(cfg, "c1")
	cp := fullCP("c1", "", 0)
	put(t, s, cfg, cp)
	writes := []checkpoint.Write{write("0", checkpoint.WriteUpdate, 0, "value")}
	putWrites(t, s, c1, writes...)
	want, wantW := fullCP("c1", "", 0), []checkpoint.Write{write("0", checkpoint.WriteUpdate, 0, "value")}

	// Changing what was put changes nothing stored.
	cp.State[0] = 'X'
	cp.Next[0].Node = "changed"
	cp.Next[1].Arg[0] = 'X'
	cp.Joins["x"][0] = "changed"
	cp.Meta["who"] = "changed"
	writes[0].Value[0] = 'X'
	writes[0].TaskID = "changed"
	check := func(when string) {
		t.Helper()
		tu := get(t, s, c1)
		checkCP(t, when, tu.Checkpoint, want)
		checkWrites(t, when, tu.Writes, wantW)
	}
	check("after changing what was put")

	// Changing what is returned changes nothing stored.
	for _, f := range []struct {
		name string
		get  func() checkpoint.Tuple
	}{
		{"Get", func() checkpoint.Tuple { return *get(t, s, c1) }},
		{"Get latest", func() checkpoint.Tuple { return *get(t, s, cfg) }},
		{"List", func() checkpoint.Tuple {
			l, err := s.List(ctx, cfg, checkpoint.ListOptions{})
			if err != nil || len(l) != 1 {
				t.Fatalf("List: %v, %v", ids(l), err)
			}
			return l[0]
		}},
	} {
		tu := f.get()
		tu.Checkpoint.State[0] = 'Y'
		tu.Checkpoint.Next[0].Node = "mutated"
		tu.Checkpoint.Next[1].Arg[0] = 'Y'
		tu.Checkpoint.Next = append(tu.Checkpoint.Next, checkpoint.Task{ID: "extra"})
		tu.Checkpoint.Joins["x"][0] = "mutated"
		tu.Checkpoint.Joins["new"] = nil
		tu.Checkpoint.Meta["who"] = "mutated"
		tu.Checkpoint.Meta["new"] = "mutated"
		tu.Writes[0].Value[0] = 'Y'
		tu.Writes[0].TaskID = "mutated"
		check("after changing the tuple from " + f.name)
	}
}

// testCancelledContext: every method fails with context.Canceled.
func testCancelledContext(t *testing.T, s checkpoint.Saver) {
	cfg := checkpoint.Config{ThreadID: "t"}
	put(t, s, cfg, fullCP("c1", "", 0))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Put(ctx, cfg, fullCP("c2", "c1", 1)); !errors.Is(err, context.Canceled) {
		t.Errorf("Put: %v, want context.Canceled", err)
	}
	if err := s.PutWrites(ctx, at(cfg, "c1"), []checkpoint.Write{write("0", checkpoint.WriteUpdate, 0, "x")}); !errors.Is(err, context.Canceled) {
		t.Errorf("PutWrites: %v, want context.Canceled", err)
	}
	if _, err := s.Get(ctx, at(cfg, "c1")); !errors.Is(err, context.Canceled) {
		t.Errorf("Get: %v, want context.Canceled", err)
	}
	if _, err := s.Get(ctx, cfg); !errors.Is(err, context.Canceled) {
		t.Errorf("Get latest: %v, want context.Canceled", err)
	}
	if _, err := s.List(ctx, cfg, checkpoint.ListOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("List: %v, want context.Canceled", err)
	}
	if err := s.DeleteThread(ctx, "t"); !errors.Is(err, context.Canceled) {
		t.Errorf("DeleteThread: %v, want context.Canceled", err)
	}
	// Nothing changed.
	tu := get(t, s, cfg)
	if tu.Checkpoint.ID != "c1" || len(tu.Writes) != 0 {
		t.Errorf("after cancelled calls the latest is %s with writes %s, want c1 with none", tu.Checkpoint.ID, fmtWrites(tu.Writes))
	}
}

// testConcurrent: 8 goroutines put 50 checkpoints each, with writes and reads in between; each has
// a thread of its own, and every fifth checkpoint of each goes to a thread they all share.
// Afterwards everything is there.
func testConcurrent(t *testing.T, s checkpoint.Saver) {
	ctx := context.Background()
	const workers, perWorker = 8, 50
	threadOf := func(w, i int) string {
		if i%5 == 4 {
			return "shared"
		}
		return fmt.Sprint("own-", w)
	}
	idOf := func(w, i int) string { return fmt.Sprintf("w%d-%03d", w, i) }
	writesOf := func(id string) []checkpoint.Write {
		return []checkpoint.Write{write("0", checkpoint.WriteUpdate, 0, id+"/0"), write("1", checkpoint.WriteUpdate, 0, id+"/1")}
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			errs <- func() error {
				parent := ""
				for i := range perWorker {
					cfg := checkpoint.Config{ThreadID: threadOf(w, i)}
					id := idOf(w, i)
					cp := minimalCP(id)
					cp.ParentID, cp.Step, cp.State = parent, i, []byte(id)
					addr, err := s.Put(ctx, cfg, cp)
					if err != nil {
						return fmt.Errorf("put %s: %w", id, err)
					}
					ws := writesOf(id)
					if err := s.PutWrites(ctx, addr, ws[:1]); err != nil {
						return fmt.Errorf("put writes of %s: %w", id, err)
					}
					tu, err := s.Get(ctx, addr)
					if err != nil {
						return fmt.Errorf("get %s: %w", id, err)
					}
					if tu.Checkpoint.ID != id || string(tu.Checkpoint.State) != id || len(tu.Writes) != 1 {
						return fmt.Errorf("get %s: got %s with state %q and %d writes", id, tu.Checkpoint.ID, tu.Checkpoint.State, len(tu.Writes))
					}
					if err := s.PutWrites(ctx, addr, []checkpoint.Write{ws[1], ws[0]}); err != nil {
						return fmt.Errorf("put writes of %s: %w", id, err)
					}
					latest, err := s.Get(ctx, cfg)
					if err != nil {
						return fmt.Errorf("get latest after %s: %w", id, err)
					}
					if cfg.ThreadID != "shared" && latest.Checkpoint.ID != id {
						return fmt.Errorf("latest of %s after putting %s is %s", cfg.ThreadID, id, latest.Checkpoint.ID)
					}
					if i%10 == 0 {
						if _, err := s.List(ctx, cfg, checkpoint.ListOptions{Limit: 3}); err != nil {
							return fmt.Errorf("list: %w", err)
						}
					}
					parent = id
				}
				return nil
			}()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if t.Failed() {
		return
	}
	want := map[string][]string{}
	for w := range workers {
		for i := range perWorker {
			want[threadOf(w, i)] = append(want[threadOf(w, i)], idOf(w, i))
		}
	}
	for thread, wantIDs := range want {
		slices.Sort(wantIDs)
		slices.Reverse(wantIDs)
		l := list(t, s, checkpoint.Config{ThreadID: thread}, checkpoint.ListOptions{})
		if got := ids(l); !slices.Equal(got, wantIDs) {
			t.Errorf("thread %s has %d checkpoints, want %d: %v", thread, len(got), len(wantIDs), got)
			continue
		}
		for _, tu := range l {
			id := tu.Checkpoint.ID
			if string(tu.Checkpoint.State) != id {
				t.Errorf("%s has state %q", id, tu.Checkpoint.State)
			}
			checkWrites(t, "writes of "+id, tu.Writes, writesOf(id))
		}
	}
}

// testLargeValues: a 1 MiB state, a 256 KiB write and a 64 KiB Send argument round-trip.
func testLargeValues(t *testing.T, s checkpoint.Saver) {
	r := rand.New(rand.NewPCG(3, 4))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	cfg := checkpoint.Config{ThreadID: "t"}
	cp := fullCP("c1", "", 0)
	cp.State = random(1 << 20)
	cp.Next[1].Arg = random(64 << 10)
	put(t, s, cfg, cp, fullCP("c2", "c1", 1))
	ws := []checkpoint.Write{
		{TaskID: "task-0", Node: "n", Kind: checkpoint.WriteUpdate, Value: random(256 << 10)},
		{TaskID: "task-1", Node: "n", Kind: checkpoint.WriteUpdate, Value: []byte("small")},
	}
	putWrites(t, s, at(cfg, "c1"), ws...)
	tu := get(t, s, at(cfg, "c1"))
	checkCP(t, "Get", tu.Checkpoint, cp)
	checkWrites(t, "Get", tu.Writes, ws)
	l := list(t, s, cfg, checkpoint.ListOptions{Before: "c2"})
	if len(l) != 1 {
		t.Fatalf("List = %v", ids(l))
	}
	checkCP(t, "List", l[0].Checkpoint, cp)
	checkWrites(t, "List", l[0].Writes, ws)
}

// testPutStep: a StepSaver's PutStep is PutWrites on the parent and Put of the child, at once.
func testPutStep(t *testing.T, s checkpoint.Saver) {
	ss, ok := s.(checkpoint.StepSaver)
	if !ok {
		t.Skip("the saver is not a checkpoint.StepSaver")
	}
	ctx := context.Background()
	cfg := checkpoint.Config{ThreadID: "t", NS: "ns"}
	put(t, s, cfg, fullCP("c1", "", 0))
	first := write("task-0", checkpoint.WriteUpdate, 0, "out")
	putWrites(t, s, at(cfg, "c1"), first)
	ws := []checkpoint.Write{
		write("task-1", checkpoint.WriteUpdate, 0, "one"),
		write("task-0", checkpoint.WriteUpdate, 0, "again: ignored"),
		{TaskID: "task-2", Node: "bytes", Kind: checkpoint.WriteInput, Value: allBytes},
	}
	got, err := ss.PutStep(ctx, at(cfg, "c1"), ws, cfg, fullCP("c2", "c1", 1))
	if err != nil {
		t.Fatalf("PutStep: %v", err)
	}
	if got != at(cfg, "c2") {
		t.Errorf("PutStep returned %+v, want %+v", got, at(cfg, "c2"))
	}
	checkWrites(t, "the parent's writes", get(t, s, at(cfg, "c1")).Writes, []checkpoint.Write{first, ws[0], ws[2]})
	latest := get(t, s, cfg)
	checkCP(t, "the step's checkpoint", latest.Checkpoint, fullCP("c2", "c1", 1))
	if len(latest.Writes) != 0 {
		t.Errorf("the new checkpoint has writes %v, want none", latest.Writes)
	}
	// No writes: a Put.
	if _, err := ss.PutStep(ctx, at(cfg, "c2"), nil, cfg, fullCP("c3", "c2", 2)); err != nil {
		t.Fatalf("PutStep without writes: %v", err)
	}
	checkCP(t, "a step without writes", get(t, s, cfg).Checkpoint, fullCP("c3", "c2", 2))

	// An unknown parent: nothing is stored.
	_, err = ss.PutStep(ctx, at(cfg, "c0-missing"), ws[:1], cfg, fullCP("c4", "c0-missing", 3))
	if !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("PutStep with an unknown parent: err = %v, want ErrNotFound", err)
	}
	if _, err := s.Get(ctx, at(cfg, "c4")); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("PutStep with an unknown parent stored its checkpoint (Get: %v)", err)
	}
	stopped, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := ss.PutStep(stopped, at(cfg, "c3"), ws[:1], cfg, fullCP("c5", "c3", 4)); !errors.Is(err, context.Canceled) {
		t.Errorf("PutStep with a cancelled context: err = %v, want context.Canceled", err)
	}
}

// testPatchMetadata: a MetadataPatcher merges into one checkpoint's Meta (the latest when the
// config names none) and changes nothing else; what it patched is listed and filtered by.
func testPatchMetadata(t *testing.T, s checkpoint.Saver) {
	mp, ok := s.(checkpoint.MetadataPatcher)
	if !ok {
		t.Skip("the saver is not a checkpoint.MetadataPatcher")
	}
	ctx := context.Background()
	cfg := checkpoint.Config{ThreadID: "t", NS: "ns"}
	put(t, s, cfg, fullCP("c1", "", 0), minimalCP("c2"))
	w := write("task-0", checkpoint.WriteUpdate, 0, "out")
	putWrites(t, s, at(cfg, "c1"), w)

	if err := mp.PatchMetadata(ctx, at(cfg, "c1"), map[string]string{"who": "ann", "new": "ünï\n"}); err != nil {
		t.Fatalf("PatchMetadata c1: %v", err)
	}
	want := fullCP("c1", "", 0)
	want.Meta["who"], want.Meta["new"] = "ann", "ünï\n"
	got := get(t, s, at(cfg, "c1"))
	checkCP(t, "the patched checkpoint", got.Checkpoint, want)
	checkWrites(t, "the patched checkpoint's writes", got.Writes, []checkpoint.Write{w})

	// The latest, which had no metadata.
	if err := mp.PatchMetadata(ctx, cfg, map[string]string{"tag": "t"}); err != nil {
		t.Fatalf("PatchMetadata of the latest: %v", err)
	}
	c2 := minimalCP("c2")
	c2.Meta = map[string]string{"tag": "t"}
	checkCP(t, "the patched latest", get(t, s, cfg).Checkpoint, c2)
	checkCP(t, "the other checkpoint", get(t, s, at(cfg, "c1")).Checkpoint, want)
	if got := ids(list(t, s, cfg, checkpoint.ListOptions{Meta: map[string]string{"tag": "t"}})); !slices.Equal(got, []string{"c2"}) {
		t.Errorf("List by the patched metadata = %v, want [c2]", got)
	}
	if got := ids(list(t, s, cfg, checkpoint.ListOptions{Meta: map[string]string{"who": "ann"}})); !slices.Equal(got, []string{"c1"}) {
		t.Errorf("List by the patched metadata = %v, want [c1]", got)
	}

	for _, missing := range []checkpoint.Config{at(cfg, "c9"), {ThreadID: "t", NS: "other"}, {ThreadID: "nobody"}} {
		if err := mp.PatchMetadata(ctx, missing, map[string]string{"x": "y"}); !errors.Is(err, checkpoint.ErrNotFound) {
			t.Errorf("PatchMetadata %+v: err = %v, want ErrNotFound", missing, err)
		}
	}
	stopped, cancel := context.WithCancel(ctx)
	cancel()
	if err := mp.PatchMetadata(stopped, cfg, map[string]string{"x": "y"}); !errors.Is(err, context.Canceled) {
		t.Errorf("PatchMetadata with a cancelled context: err = %v, want context.Canceled", err)
	}
	checkCP(t, "the latest after failed patches", get(t, s, cfg).Checkpoint, c2)
}
