package nodes_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/demo"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/tools"
)

// verdict is the run's typed result in TestPublishAndFinishTypedResults.
type verdict struct {
	Score   int    `json:"score"`
	Summary string `json:"summary"`
}

// A node with an output schema gets a result from its worker, refused until it matches, saved
// on the board and published as result.json for the node that reads it through a ref; the
// squad's output schema does the same for finish, and Result carries the result.
func TestPublishAndFinishTypedResults(t *testing.T) {
	rating := map[string]any{"type": "object", "additionalProperties": false, "required": []string{"score"},
		"properties": map[string]any{"score": map[string]any{"type": "integer", "minimum": 1, "maximum": 5}}}
	coord := scripted.NewFunc("typed-coordinator", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		text, _ := scripted.Last(req)
		finishes := scResults(req, "finish")
		switch {
		case len(req.Messages) == 1:
			return scTurn(req,
				scripted.Call("create_work_node", map[string]any{"task": "Rate the draft from 1 to 5.", "output_schema": rating}),
				scripted.Call("create_work_node", map[string]any{"task": "Report the rating.", "deps": []string{"n1"},
					"refs": map[string]string{"rating": "nodes/n1/published/result.json"}}),
			), nil
		case len(finishes) == 1 && finishes[0].IsError:
			return scTurn(req, scripted.Call("finish", map[string]any{"output": "Rated 4.", "result": verdict{Score: 4, Summary: "clear"}})), nil
		case strings.Contains(text, "Stage 1 is complete"):
			return scTurn(req, scripted.Call("finish", map[string]any{"output": "Rated 4.", "result": map[string]any{"score": "four"}})), nil
		}
		return scTurn(req, scripted.Call("wait", map[string]string{})), nil
	}).KeepRequests()
	worker := scripted.NewFunc("typed-worker", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		called := scCalled(req)
		if scNode(req) == "n1" {
			if called["publish"] == 0 {
				return scTurn(req, scripted.Call("publish", map[string]any{"summary": "rated", "result": map[string]any{"score": 9}})), nil
			}
			return scTurn(req, scripted.Call("publish", map[string]any{"summary": "rated", "result": map[string]any{"score": 4}})), nil
		}
		if called["read_file"] == 0 {
			return scTurn(req, scripted.Call("read_file", map[string]string{"path": "nodes/n1/published/result.json"})), nil
		}
		return scTurn(req,
			scripted.Call("write_file", map[string]string{"path": "nodes/n2/scratch/report.md", "content": scStrip(scResults(req, "read_file")[0].Content)}),
			scripted.Call("publish", map[string]string{"summary": "reported"})), nil
	}).KeepRequests()
	schema, err := providers.SchemaFor(reflect.TypeFor[verdict]())
	require.NoError(t, err)
	s := scSquad(t, coord, []providers.Model{worker}, nodes.WithOutputSchema(schema))
	res := scRun(t, s, "Rate the draft.")

	require.True(t, res.Finished, "output %q", res.Output)
	var v verdict
	require.NoError(t, res.Decode(&v))
	assert.Equal(t, verdict{Score: 4, Summary: "clear"}, v)

	n1, _ := res.Board.Node("n1")
	assert.JSONEq(t, `{"score": 4}`, string(n1.Result))
	assert.JSONEq(t, mustJSON(t, rating), string(n1.OutputSchema))
	assert.Contains(t, n1.Published, "result.json")
	report := scRead(t, scRunDir(s, res)+"/nodes/n2/published/report.md")
	assert.JSONEq(t, `{"score": 4}`, report, "the dependent node read the result through its ref")

	refused := func(m *scripted.Model, tool string) tools.Result {
		for _, req := range m.Requests() {
			for _, r := range scResults(req, tool) {
				if r.IsError {
					return r
				}
			}
		}
		return tools.Result{}
	}
	assert.Contains(t, refused(worker, "publish").Content, "result.score: 9 is greater than maximum 5")
	assert.Contains(t, refused(coord, "finish").Content, "result.score: expected integer, got string")
}

// A squad's output schema must be usable; a node's too.
func TestOutputSchemaMistakes(t *testing.T) {
	_, err := nodes.New(append(demo.Team(), nodes.WithHome(t.TempDir()), nodes.WithOutputSchema(json.RawMessage(`{"type":"array"}`)))...)
	assert.ErrorContains(t, err, `nodes: WithOutputSchema: the schema must be a JSON object with "type":"object" at its root`)

	coord := scripted.NewFunc("bad-schema-coordinator", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		if len(req.Messages) == 1 {
			return scTurn(req, scripted.Call("create_work_node", map[string]any{"task": "Rate.", "output_schema": map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "bogus"}}}})), nil
		}
		if _, results := scripted.Last(req); len(results) == 1 && results[0].Name == "create_work_node" {
			return scTurn(req, scripted.Call("finish", map[string]string{"output": results[0].Content})), nil
		}
		return scripted.Turn{Text: "Nothing to remember."}, nil
	})
	s := scSquad(t, coord, []providers.Model{coord})
	res := scRun(t, s, "Rate.")
	assert.Contains(t, res.Output, `output_schema: schema.properties.a.type: unknown type "bogus"`)
	assert.Empty(t, res.Board.Nodes)
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
