package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/agiraph/agiraph/tools"
)

type fileSpec struct {
	Path string `json:"path" jsonschema:"description=Path of the file"`
	Mode string `json:"mode,omitempty" jsonschema:"enum=r,enum=w"`
}

type writeArgs struct {
	Target  fileSpec   `json:"target"`
	Extra   []fileSpec `json:"extra,omitempty"`
	Count   int        `json:"count" jsonschema:"minimum=1,maximum=5"`
	Verbose bool       `json:"verbose,omitempty"`
	Hidden  string     `json:"-"`
}

func TestFuncSchema(t *testing.T) {
	t.Parallel()
	tool := tools.Func("write", "Write files.", func(ctx context.Context, a writeArgs) (string, error) { return "", nil })
	want := `{"properties":{` +
		`"target":{"properties":{"path":{"type":"string","description":"Path of the file"},"mode":{"type":"string","enum":["r","w"]}},"additionalProperties":false,"type":"object","required":["path"]},` +
		`"extra":{"items":{"properties":{"path":{"type":"string","description":"Path of the file"},"mode":{"type":"string","enum":["r","w"]}},"additionalProperties":false,"type":"object","required":["path"]},"type":"array"},` +
		`"count":{"type":"integer","maximum":5,"minimum":1},` +
		`"verbose":{"type":"boolean"}},` +
		`"additionalProperties":false,"type":"object","required":["target","count"]}`
	if string(tool.Schema) != want {
		t.Errorf("schema:\n got %s\nwant %s", tool.Schema, want)
	}
	if tool.Name != "write" || tool.Description != "Write files." || tool.Safe || tool.Guidance != "" {
		t.Errorf("tool fields: %+v", tool)
	}
}

func TestFuncOptions(t *testing.T) {
	t.Parallel()
	tool := tools.Func("t", "d", func(ctx context.Context, a struct{}) (string, error) { return "ok", nil },
		tools.Safe(), tools.WithGuidance("use it well"))
	if !tool.Safe || tool.Guidance != "use it well" {
		t.Errorf("options not applied: %+v", tool)
	}
	if string(tool.Schema) != `{"properties":{},"additionalProperties":false,"type":"object"}` {
		t.Errorf("empty struct schema: %s", tool.Schema)
	}
	out, err := tool.Handler(context.Background(), nil) // empty args mean {}
	if err != nil || out != "ok" {
		t.Errorf("handler with empty args: %q, %v", out, err)
	}
}

func TestFuncDecodesArgs(t *testing.T) {
	t.Parallel()
	var got writeArgs
	tool := tools.Func("write", "", func(ctx context.Context, a writeArgs) (string, error) { got = a; return "done", nil })
	out, err := tool.Handler(context.Background(), json.RawMessage(`{"target":{"path":"a.txt","mode":"w"},"count":2,"extra":[{"path":"b"}]}`))
	if err != nil || out != "done" {
		t.Fatalf("handler: %q, %v", out, err)
	}
	want := writeArgs{Target: fileSpec{Path: "a.txt", Mode: "w"}, Count: 2, Extra: []fileSpec{{Path: "b"}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decoded %+v, want %+v", got, want)
	}
}

func TestFuncPointerArgs(t *testing.T) {
	t.Parallel()
	var got *fileSpec
	tool := tools.Func("p", "", func(ctx context.Context, a *fileSpec) (string, error) { got = a; return a.Path, nil })
	out, err := tool.Handler(context.Background(), json.RawMessage(`{"path":"x"}`))
	if err != nil || out != "x" || got == nil || got.Path != "x" {
		t.Fatalf("pointer args: %q, %v, %+v", out, err, got)
	}
	if !strings.Contains(string(tool.Schema), `"required":["path"]`) {
		t.Errorf("pointer schema: %s", tool.Schema)
	}
}

func TestFuncHandlerValidates(t *testing.T) {
	t.Parallel()
	called := false
	tool := tools.Func("write", "", func(ctx context.Context, a writeArgs) (string, error) { called = true; return "", nil })
	_, err := tool.Handler(context.Background(), json.RawMessage(`{"count":9}`))
	var ve *tools.ValidationError
	if !errors.As(err, &ve) || called {
		t.Fatalf("want a ValidationError and no call, got %v (called %v)", err, called)
	}
}

func TestFuncRejectsNonStruct(t *testing.T) {
	t.Parallel()
	for name, def := range map[string]func(){
		"string": func() { tools.Func("bad", "", func(ctx context.Context, a string) (string, error) { return "", nil }) },
		"map": func() {
			tools.Func("bad", "", func(ctx context.Context, a map[string]any) (string, error) { return "", nil })
		},
		"pointer to int": func() { tools.Func("bad", "", func(ctx context.Context, a *int) (string, error) { return "", nil }) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				v := recover()
				msg, _ := v.(string)
				if !strings.Contains(msg, `"bad"`) || !strings.Contains(msg, "must be a struct") {
					t.Errorf("panic value %v", v)
				}
			}()
			def()
			t.Error("no panic")
		})
	}
}

func TestFuncDescriptionWithCommas(t *testing.T) {
	t.Parallel()
	type args struct {
		A string `json:"a" jsonschema:"description=one\\, two,minLength=1"`
		B string `json:"b" jsonschema_description:"three, four"`
	}
	tool := tools.Func("c", "", func(ctx context.Context, a args) (string, error) { return "", nil })
	want := `{"properties":{"a":{"type":"string","minLength":1,"description":"one, two"},"b":{"type":"string","description":"three, four"}},"additionalProperties":false,"type":"object","required":["a","b"]}`
	if string(tool.Schema) != want {
		t.Errorf("schema:\n got %s\nwant %s", tool.Schema, want)
	}
}

// Tools made from the same argument type share its reflection, not their schemas: each tool's
// schema is its own to change.
func TestFuncReflectsATypeOnce(t *testing.T) {
	noop := func(context.Context, writeArgs) (string, error) { return "", nil }
	a, b := tools.Func("a", "A.", noop), tools.Func("b", "B.", noop)
	want := string(tools.SchemaFor(reflect.TypeFor[writeArgs]()))
	if string(a.Schema) != want || string(b.Schema) != want {
		t.Fatalf("schemas differ: %s / %s / %s", a.Schema, b.Schema, want)
	}
	a.Schema[0] = 'X'
	if string(b.Schema) != want || string(tools.SchemaFor(reflect.TypeFor[writeArgs]())) != want {
		t.Fatal("changing one tool's schema changed another's")
	}
	if allocs := testing.AllocsPerRun(10, func() { tools.Func("c", "C.", noop) }); allocs > 20 {
		t.Errorf("making a tool of a type reflected before: %.0f allocations", allocs)
	}
}
