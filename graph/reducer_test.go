package graph_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agiraph/agiraph/graph"
)

type redInner struct{ A, B int }

// redState has a field of every kind the default reducer treats differently.
type redState struct {
	Name    string
	Count   int
	Flag    bool
	Ptr     *int
	Inner   redInner
	Plain   []string // untagged slice: replaced
	PlainM  map[string]int
	Log     []string       `graph:"append"`
	Tags    map[string]int `graph:"merge"`
	Skip    string         `graph:"-"`
	private int            `graph:"-"` //nolint:unused // an ignored unexported field compiles
}

func redIntPtr(v int) *int { return &v }

// redRun runs START -> node -> END where node returns update, from input, and returns the final
// state and the state the node saw.
func redRun[S any](t *testing.T, input, update S) (final, seen S) {
	t.Helper()
	g := graph.New[S]()
	g.AddNode("node", func(_ context.Context, s S) (S, error) {
		seen = s
		return update, nil
	})
	g.AddEdge(graph.START, "node")
	g.AddEdge("node", graph.END)
	c := engCompile(t, g)
	final, err := c.Invoke(context.Background(), input)
	if err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	return final, seen
}

func TestReducerDefaultTags(t *testing.T) {
	tests := []struct {
		name   string
		input  redState
		update redState
		want   redState
	}{
		{
			name:   "append adds the update's elements",
			input:  redState{Log: []string{"a"}},
			update: redState{Log: []string{"b", "c"}},
			want:   redState{Log: []string{"a", "b", "c"}},
		},
		{
			name:   "append to nothing",
			update: redState{Log: []string{"b"}},
			want:   redState{Log: []string{"b"}},
		},
		{
			name:   "append of nothing keeps the slice",
			input:  redState{Log: []string{"a"}},
			update: redState{},
			want:   redState{Log: []string{"a"}},
		},
		{
			name:   "append of an empty, non-nil slice keeps the slice",
			input:  redState{Log: []string{"a"}},
			update: redState{Log: []string{}},
			want:   redState{Log: []string{"a"}},
		},
		{
			name:   "merge adds and replaces entries",
			input:  redState{Tags: map[string]int{"a": 1, "b": 2}},
			update: redState{Tags: map[string]int{"b": 3, "c": 4}},
			want:   redState{Tags: map[string]int{"a": 1, "b": 3, "c": 4}},
		},
		{
			name:   "merge into nothing",
			update: redState{Tags: map[string]int{"x": 1}},
			want:   redState{Tags: map[string]int{"x": 1}},
		},
		{
			name:   "merge of nothing keeps the map",
			input:  redState{Tags: map[string]int{"a": 1}},
			update: redState{Name: "n"},
			want:   redState{Tags: map[string]int{"a": 1}, Name: "n"},
		},
		{
			name:   "merge can set an entry to its zero value",
			input:  redState{Tags: map[string]int{"a": 1}},
			update: redState{Tags: map[string]int{"a": 0}},
			want:   redState{Tags: map[string]int{"a": 0}},
		},
		{
			name:   "untagged fields are replaced by non-zero values",
			input:  redState{Name: "old", Count: 1, Flag: false, Inner: redInner{A: 1, B: 2}},
			update: redState{Name: "new", Count: 2, Flag: true, Inner: redInner{A: 9}},
			want:   redState{Name: "new", Count: 2, Flag: true, Inner: redInner{A: 9}},
		},
		{
			name:   "untagged fields are kept when the update's value is zero",
			input:  redState{Name: "keep", Count: 7, Flag: true, Inner: redInner{A: 1}, Ptr: redIntPtr(3)},
			update: redState{},
			want:   redState{Name: "keep", Count: 7, Flag: true, Inner: redInner{A: 1}, Ptr: redIntPtr(3)},
		},
		{
			name:   "untagged slice and map are replaced, not appended or merged",
			input:  redState{Plain: []string{"a"}, PlainM: map[string]int{"a": 1}},
			update: redState{Plain: []string{"b"}, PlainM: map[string]int{"b": 2}},
			want:   redState{Plain: []string{"b"}, PlainM: map[string]int{"b": 2}},
		},
		{
			name:   "a pointer field sets a zero value",
			input:  redState{Ptr: redIntPtr(5)},
			update: redState{Ptr: redIntPtr(0)},
			want:   redState{Ptr: redIntPtr(0)},
		},
		{
			name:   "a nil pointer keeps the value",
			input:  redState{Ptr: redIntPtr(5)},
			update: redState{Name: "x"},
			want:   redState{Ptr: redIntPtr(5), Name: "x"},
		},
		{
			name:   `a graph:"-" field is not part of the state`,
			input:  redState{Skip: "from input"},
			update: redState{Skip: "from update", Count: 1},
			want:   redState{Count: 1},
		},
		{
			name:   "every kind at once",
			input:  redState{Name: "n", Log: []string{"1"}, Tags: map[string]int{"k": 1}, Count: 3},
			update: redState{Log: []string{"2"}, Tags: map[string]int{"j": 2}, Count: 4},
			want:   redState{Name: "n", Log: []string{"1", "2"}, Tags: map[string]int{"k": 1, "j": 2}, Count: 4},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := redRun(t, tc.input, tc.update)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", redShow(got), redShow(tc.want))
			}
		})
	}
}

func redShow(s redState) string {
	ptr := "nil"
	if s.Ptr != nil {
		ptr = fmt.Sprintf("&%d", *s.Ptr)
	}
	return fmt.Sprintf("{Name:%q Count:%d Flag:%v Ptr:%s Inner:%+v Plain:%q PlainM:%v Log:%q Tags:%v Skip:%q}",
		s.Name, s.Count, s.Flag, ptr, s.Inner, s.Plain, s.PlainM, s.Log, s.Tags, s.Skip)
}

// The merge reducer makes a new map: neither the state's map nor the update's map changes.
func TestReducerMergeLeavesOriginalsUntouched(t *testing.T) {
	input := map[string]int{"a": 1}
	update := map[string]int{"b": 2}
	var seenByA, seenByB map[string]int
	g := graph.New[redState]()
	g.AddNode("a", func(_ context.Context, s redState) (redState, error) {
		seenByA = s.Tags
		return redState{Tags: update}, nil
	})
	g.AddNode("b", func(_ context.Context, s redState) (redState, error) {
		seenByB = s.Tags
		return redState{Tags: map[string]int{"c": 3, "a": 10}}, nil
	})
	g.AddEdge(graph.START, "a")
	g.AddEdge("a", "b")
	g.AddEdge("b", graph.END)
	final, err := engCompile(t, g).Invoke(context.Background(), redState{Tags: input})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{"a": 10, "b": 2, "c": 3}; !maps.Equal(final.Tags, want) {
		t.Errorf("final Tags = %v, want %v", final.Tags, want)
	}
	if want := map[string]int{"a": 1}; !maps.Equal(input, want) {
		t.Errorf("the input map changed to %v", input)
	}
	if want := map[string]int{"b": 2}; !maps.Equal(update, want) {
		t.Errorf("the update map changed to %v", update)
	}
	if want := map[string]int{"a": 1}; !maps.Equal(seenByA, want) {
		t.Errorf("the state node a saw changed to %v", seenByA)
	}
	if want := map[string]int{"a": 1, "b": 2}; !maps.Equal(seenByB, want) {
		t.Errorf("the state node b saw changed to %v", seenByB)
	}
	// The final map is a map of its own: changing it changes none of the others.
	final.Tags["zzz"] = 1
	for _, m := range []map[string]int{input, update, seenByA, seenByB} {
		if _, ok := m["zzz"]; ok {
			t.Errorf("the final map shares storage with %v", m)
		}
	}
}

// The slices a node sees and the input's slices are not changed by later appends.
func TestReducerAppendLeavesOriginalsUntouched(t *testing.T) {
	input := make([]string, 1, 16) // spare capacity that an in-place append would write into
	input[0] = "in"
	spare := input[:2]
	var seen []string
	g := graph.New[redState]()
	g.AddNode("a", func(_ context.Context, s redState) (redState, error) {
		seen = s.Log
		return redState{Log: []string{"a"}}, nil
	})
	g.AddEdge(graph.START, "a")
	g.AddEdge("a", graph.END)
	final, err := engCompile(t, g).Invoke(context.Background(), redState{Log: input})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"in", "a"}; !slices.Equal(final.Log, want) {
		t.Errorf("final Log = %q, want %q", final.Log, want)
	}
	if spare[1] != "" {
		t.Errorf("the input slice's backing array was written: %q", spare)
	}
	if want := []string{"in"}; !slices.Equal(seen, want) {
		t.Errorf("node a saw %q, want %q", seen, want)
	}
}

// A state with the reducer doing the merging sees each update once, in order.
func TestReducerNodeSeesMergedState(t *testing.T) {
	final, seen := redRun(t, redState{Name: "in", Log: []string{"x"}}, redState{Log: []string{"y"}})
	if seen.Name != "in" || !slices.Equal(seen.Log, []string{"x"}) {
		t.Errorf("the node saw %+v, want the input", redShow(seen))
	}
	if !slices.Equal(final.Log, []string{"x", "y"}) {
		t.Errorf("final Log = %q", final.Log)
	}
}

type (
	redBadTag struct {
		Fine  int
		Wrong []int `graph:"appendd"`
	}
	redAppendOnInt struct {
		Total int `graph:"append"`
	}
	redMergeOnSlice struct {
		List []string `graph:"merge"`
	}
	redAppendOnMap struct {
		Index map[string]int `graph:"append"`
	}
	redUnexported struct {
		Public string
		secret int //nolint:unused // what the reducer must refuse
	}
	redUnexportedIgnored struct {
		Public string
		secret int `graph:"-"` //nolint:unused // what the reducer must ignore
	}
)

// redCompile compiles a minimal valid graph over S and returns the error of Compile.
func redCompile[S any](custom graph.Reducer[S]) error {
	g := graph.New[S]()
	if custom != nil {
		g.SetReducer(custom)
	}
	g.AddNode("n", func(_ context.Context, s S) (S, error) { return s, nil })
	g.AddEdge(graph.START, "n")
	g.AddEdge("n", graph.END)
	_, err := g.Compile()
	return err
}

func TestReducerCompileErrors(t *testing.T) {
	tests := []struct {
		name    string
		compile func() error
		want    []string // empty: Compile succeeds
	}{
		{"unknown tag", func() error { return redCompile[redBadTag](nil) }, []string{"Wrong", "appendd", "unknown tag"}},
		{"append on an int", func() error { return redCompile[redAppendOnInt](nil) }, []string{"Total", `"append"`, "not a slice"}},
		{"merge on a slice", func() error { return redCompile[redMergeOnSlice](nil) }, []string{"List", `"merge"`, "not a map"}},
		{"append on a map", func() error { return redCompile[redAppendOnMap](nil) }, []string{"Index", "not a slice"}},
		{"unexported field", func() error { return redCompile[redUnexported](nil) }, []string{"secret", "unexported"}},
		{"unexported field tagged -", func() error { return redCompile[redUnexportedIgnored](nil) }, nil},
		{"every field kind", func() error { return redCompile[redState](nil) }, nil},
		{"a custom reducer replaces the tag checks", func() error {
			return redCompile(func(cur, _ redUnexported) redUnexported { return cur })
		}, nil},
		{"bad tag and a custom reducer", func() error {
			return redCompile(func(cur, _ redBadTag) redBadTag { return cur })
		}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.compile()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Compile: %v", err)
				}
				return
			}
			engContainsAll(t, err, tc.want...)
		})
	}
}

type redCounter struct {
	total int
	trail []string
}

func TestReducerCustom(t *testing.T) {
	var calls int
	g := graph.New[redCounter]()
	g.SetReducer(func(cur, u redCounter) redCounter {
		calls++
		return redCounter{total: cur.total + u.total, trail: append(slices.Clone(cur.trail), u.trail...)}
	})
	for _, name := range []string{"a", "b", "c"} {
		g.AddNode(name, func(_ context.Context, s redCounter) (redCounter, error) {
			return redCounter{total: 10, trail: []string{name}}, nil
		})
	}
	g.AddNode("d", func(_ context.Context, s redCounter) (redCounter, error) {
		return redCounter{total: s.total, trail: []string{"d"}}, nil // doubles the total
	})
	g.AddEdge(graph.START, "a")
	g.AddEdge(graph.START, "b")
	g.AddEdge(graph.START, "c")
	for _, name := range []string{"a", "b", "c"} {
		g.AddEdge(name, "d")
	}
	g.AddEdge("d", graph.END)
	out, err := engCompile(t, g).Invoke(context.Background(), redCounter{total: 1, trail: []string{"in"}})
	if err != nil {
		t.Fatal(err)
	}
	// 1 + 3×10 = 31, doubled by d: 62.
	if out.total != 62 {
		t.Errorf("total = %d, want 62", out.total)
	}
	if want := []string{"in", "a", "b", "c", "d"}; !slices.Equal(out.trail, want) {
		t.Errorf("trail = %q, want %q", out.trail, want)
	}
	// The input, three updates in step 1, one in step 2.
	if calls != 5 {
		t.Errorf("the reducer ran %d times, want 5", calls)
	}
}

// A custom reducer also merges zero values, which the default reducer skips.
func TestReducerCustomSeesZeroUpdates(t *testing.T) {
	type st struct{ N int }
	g := graph.New[st]()
	g.SetReducer(func(_, u st) st { return u }) // plain replacement
	g.AddNode("zero", func(context.Context, st) (st, error) { return st{}, nil })
	g.AddEdge(graph.START, "zero")
	g.AddEdge("zero", graph.END)
	out, err := engCompile(t, g).Invoke(context.Background(), st{N: 5})
	if err != nil {
		t.Fatal(err)
	}
	if out.N != 0 {
		t.Errorf("N = %d, want 0", out.N)
	}
}

// A reducer that panics fails the run with an error naming the update it was merging.
func TestReducerPanicIsAnError(t *testing.T) {
	type st struct{ N int }
	g := graph.New[st]()
	g.SetReducer(func(cur, u st) st {
		if u.N == 13 {
			panic("unlucky")
		}
		return st{N: cur.N + u.N}
	})
	g.AddNode("unlucky", func(context.Context, st) (st, error) { return st{N: 13}, nil })
	g.AddEdge(graph.START, "unlucky")
	g.AddEdge("unlucky", graph.END)
	c := engCompile(t, g)
	_, err := c.Invoke(context.Background(), st{N: 1})
	var pe *graph.PanicError
	if !errors.As(err, &pe) || pe.Value != "unlucky" {
		t.Fatalf("err = %v, want a PanicError with the panic value", err)
	}
	if !strings.Contains(err.Error(), `node "unlucky" (step 1)`) {
		t.Errorf("err = %v, want it to name the node and step", err)
	}
	if _, err := c.Invoke(context.Background(), st{N: 13}); err == nil || !strings.Contains(err.Error(), "the input") {
		t.Errorf("err = %v, want a reducer error about the input", err)
	}
}

func TestReducerNonStructStates(t *testing.T) {
	t.Run("int: replaced by non-zero updates", func(t *testing.T) {
		g := graph.New[int]()
		g.AddNode("zero", func(context.Context, int) (int, error) { return 0, nil })
		g.AddNode("double", func(_ context.Context, s int) (int, error) { return s * 2, nil })
		g.AddEdge(graph.START, "zero")
		g.AddEdge("zero", "double")
		g.AddEdge("double", graph.END)
		out, err := engCompile(t, g).Invoke(context.Background(), 5)
		if err != nil {
			t.Fatal(err)
		}
		if out != 10 {
			t.Errorf("got %d, want 10 (0 keeps 5, then doubled)", out)
		}
	})
	t.Run("string: replaced", func(t *testing.T) {
		out, _ := redRun(t, "old", "new")
		if out != "new" {
			t.Errorf("got %q, want new", out)
		}
		out, _ = redRun(t, "old", "")
		if out != "old" {
			t.Errorf("an empty update gave %q, want old", out)
		}
	})
	t.Run("map: merged", func(t *testing.T) {
		input := map[string]int{"a": 1, "b": 2}
		update := map[string]int{"b": 20, "c": 3}
		out, seen := redRun(t, input, update)
		if want := map[string]int{"a": 1, "b": 20, "c": 3}; !maps.Equal(out, want) {
			t.Errorf("got %v, want %v", out, want)
		}
		if want := map[string]int{"a": 1, "b": 2}; !maps.Equal(input, want) || !maps.Equal(seen, want) {
			t.Errorf("input %v / seen %v changed", input, seen)
		}
		if want := map[string]int{"b": 20, "c": 3}; !maps.Equal(update, want) {
			t.Errorf("update changed to %v", update)
		}
	})
	t.Run("slice: appended in frontier order", func(t *testing.T) {
		g := graph.New[[]string]()
		for _, n := range []string{"a", "b", "c"} {
			g.AddNode(n, func(context.Context, []string) ([]string, error) { return []string{n}, nil })
			g.AddEdge(graph.START, n)
			g.AddEdge(n, "tail")
		}
		g.AddNode("tail", func(_ context.Context, s []string) ([]string, error) {
			return []string{strings.Join(s, "+")}, nil
		})
		g.AddEdge("tail", graph.END)
		out, err := engCompile(t, g).Invoke(context.Background(), []string{"in"})
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"in", "a", "b", "c", "in+a+b+c"}; !slices.Equal(out, want) {
			t.Errorf("got %q, want %q", out, want)
		}
	})
	t.Run("interface: replaced by non-nil, nil keeps the value", func(t *testing.T) {
		out, _ := redRun[any](t, 1, "two")
		if out != "two" {
			t.Errorf("got %v, want two", out)
		}
		out, _ = redRun[any](t, 1, nil)
		if out != 1 {
			t.Errorf("a nil update gave %v, want 1", out)
		}
		out, seen := redRun[any](t, nil, nil)
		if out != nil || seen != nil {
			t.Errorf("nil input and update gave %v (node saw %v), want nil", out, seen)
		}
		out, _ = redRun[any](t, nil, []int{1})
		if s, ok := out.([]int); !ok || !slices.Equal(s, []int{1}) {
			t.Errorf("got %#v, want []int{1}", out)
		}
	})
	t.Run("pointer: replaced by non-nil", func(t *testing.T) {
		out, _ := redRun(t, redIntPtr(1), redIntPtr(0))
		if out == nil || *out != 0 {
			t.Errorf("got %v, want pointer to 0", out)
		}
		out, _ = redRun(t, redIntPtr(1), nil)
		if out == nil || *out != 1 {
			t.Errorf("a nil update gave %v, want pointer to 1", out)
		}
	})
}
