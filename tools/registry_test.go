package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agiraph/agiraph/tools"
)

func okHandler(ctx context.Context, args json.RawMessage) (string, error) { return "ok", nil }

func rawTool(name string) tools.Tool {
	return tools.Tool{Name: name, Description: "d", Schema: json.RawMessage(`{"type":"object"}`), Handler: okHandler}
}

func TestRegistryErrors(t *testing.T) {
	t.Parallel()
	withSchema := func(s string) tools.Tool { tl := rawTool("schemed"); tl.Schema = json.RawMessage(s); return tl }
	tests := []struct {
		name  string
		tools []tools.Tool
		want  string
	}{
		{"duplicate", []tools.Tool{rawTool("a"), rawTool("b"), rawTool("a")}, `"a": a tool with this name is already registered`},
		{"empty name", []tools.Tool{rawTool("")}, "empty name"},
		{"bad name", []tools.Tool{rawTool("has space")}, `"has space": name must be`},
		{"nil handler", []tools.Tool{{Name: "h", Schema: json.RawMessage(`{"type":"object"}`)}}, `"h": nil handler`},
		{"schema not JSON", []tools.Tool{withSchema(`{"type":`)}, `"schemed": schema is not valid JSON`},
		{"no schema", []tools.Tool{withSchema(``)}, `"schemed": schema is empty`},
		{"schema root not object", []tools.Tool{withSchema(`{"type":"string"}`)}, `"schemed": schema root must have "type":"object"`},
		{"schema keyword malformed", []tools.Tool{withSchema(`{"type":"object","properties":{"a":{"maxItems":"x"}}}`)}, `"schemed": schema.properties.a.maxItems: must be a non-negative integer`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := tools.NewRegistry(tt.tools)
			if r != nil || !errors.Is(err, tools.ErrInvalidTool) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, %v; want an ErrInvalidTool containing %q", r, err, tt.want)
			}
		})
	}
}

func TestRegistryAccessors(t *testing.T) {
	t.Parallel()
	c := rawTool("c")
	c.Guidance = "  Use c last.\n"
	a := rawTool("a")
	a.Guidance = "Use a first."
	r, err := tools.NewRegistry([]tools.Tool{c, rawTool("b")})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Add(a); err != nil {
		t.Fatal(err)
	}
	if err := r.Add(rawTool("b")); !errors.Is(err, tools.ErrInvalidTool) {
		t.Errorf("Add duplicate: %v", err)
	}
	var names []string
	for _, tl := range r.Tools() {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "a,b,c" {
		t.Errorf("Tools order %v", names)
	}
	got, ok := r.Get("a")
	if !ok || got.Guidance != "Use a first." || string(got.Schema) != `{"type":"object"}` {
		t.Errorf("Get(a) = %+v, %v", got, ok)
	}
	got.Schema[0] = 'X' // the registry's copy is not shared
	if again, _ := r.Get("a"); string(again.Schema) != `{"type":"object"}` {
		t.Errorf("schema shared with caller: %s", again.Schema)
	}
	if _, ok := r.Get("zzz"); ok {
		t.Error("Get of unknown tool succeeded")
	}
	want := "## Tool: a\nUse a first.\n\n## Tool: c\nUse c last."
	if g := r.Guidance(); g != want {
		t.Errorf("Guidance:\n%q\nwant\n%q", g, want)
	}
	empty, _ := tools.NewRegistry(nil)
	if empty.Guidance() != "" || len(empty.Tools()) != 0 {
		t.Error("empty registry not empty")
	}
}
