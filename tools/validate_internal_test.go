package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A schema is compiled once: registries made again from the same tools share its node tree; a
// schema that cannot be used fails each time; once the cache is full, schemas are compiled
// each time, and still checked.
func TestSchemasAreCompiledOnce(t *testing.T) {
	t.Parallel()
	schema := json.RawMessage(`{"type":"object","properties":{"q":{"type":"string","minLength":2}},"required":["q"]}`)
	first, err := compileSchema(schema)
	require.NoError(t, err)
	again, err := compileSchema(json.RawMessage(string(schema)))
	require.NoError(t, err)
	assert.Same(t, first, again)
	assert.Error(t, again.validate(json.RawMessage(`{"q":"x"}`)))

	bad := json.RawMessage(`{"type":"object","properties":{"q":{"minLength":"two"}}}`)
	_, err1 := compileSchema(bad)
	_, err2 := compileSchema(bad)
	require.Error(t, err1)
	assert.Equal(t, err1, err2)

	compiledMu.Lock()
	saved := compiledSchemas
	compiledSchemas = make(map[string]compiledSchema, maxCompiled)
	for i := range maxCompiled {
		compiledSchemas[fmt.Sprint(i)] = compiledSchema{}
	}
	compiledMu.Unlock()
	defer func() {
		compiledMu.Lock()
		compiledSchemas = saved
		compiledMu.Unlock()
	}()
	full := json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)
	one, err := compileSchema(full)
	require.NoError(t, err)
	two, err := compileSchema(full)
	require.NoError(t, err)
	assert.NotSame(t, one, two, "a schema was kept beyond the cache's size")
	assert.Error(t, two.validate(json.RawMessage(`{"n":"x"}`)))
}

// BenchmarkNewRegistry makes a worker's registry of ten tools, as each assignment does.
func BenchmarkNewRegistry(b *testing.B) {
	type args struct {
		Path    string `json:"path" jsonschema_description:"A file"`
		Content string `json:"content,omitempty"`
		Offset  int    `json:"offset,omitempty"`
	}
	var ts []Tool
	for _, name := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"} {
		ts = append(ts, Func(name, "a tool", func(_ context.Context, a args) (string, error) { return a.Path, nil }))
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := NewRegistry(ts); err != nil {
			b.Fatal(err)
		}
	}
}
