package a2awire_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/internal/a2awire"
)

// TestRoundTrip sends the package's types in each version and reads them back as the other
// end does: nothing is lost.
func TestRoundTrip(t *testing.T) {
	msg := a2awire.Message{Role: "agent", Kind: "message", MessageID: "m", TaskID: "t", ContextID: "c",
		Metadata: map[string]any{"to": "x"}, Parts: []a2awire.Part{
			{Kind: "text", Text: "hello"},
			{Kind: "file", File: &a2awire.File{Name: "a.md", MimeType: "text/markdown", Bytes: []byte("# A")}},
			{Kind: "data", Data: json.RawMessage(`{"n":1}`)},
		}}
	status := a2awire.Status{State: a2awire.StateInputRequired, Message: &msg, Timestamp: "2026-11-27T00:00:00Z"}
	art := a2awire.Artifact{ArtifactID: "a", Name: "a.md", Parts: msg.Parts}
	events := []any{
		a2awire.Task{ID: "t", ContextID: "c", Kind: "task", Status: status, History: []a2awire.Message{msg}, Artifacts: []a2awire.Artifact{art}},
		msg,
		a2awire.StatusUpdate{TaskID: "t", ContextID: "c", Kind: "status-update", Status: status, Final: true},
		a2awire.ArtifactUpdate{TaskID: "t", ContextID: "c", Kind: "artifact-update", Artifact: art, LastChunk: true},
	}
	for _, v := range []a2awire.Version{a2awire.V03, a2awire.V10} {
		for _, e := range events {
			raw, err := json.Marshal(v.Event(e))
			require.NoError(t, err)
			got, err := v.DecodeEvent(raw)
			require.NoError(t, err, "%s: %s", v, raw)
			assert.Equal(t, e, got, "%s: %s", v, raw)
		}
		no, history := false, 3
		params := []struct {
			method string
			p      any
		}{
			{"message/send", a2awire.SendParams{Message: msg, Configuration: &a2awire.SendConfig{Blocking: &no, HistoryLength: &history,
				Push: &a2awire.PushConfig{ID: "p", URL: "https://h.example/", Token: "k", Authentication: &a2awire.PushAuth{Schemes: []string{"Bearer"}, Credentials: "c"}}}}},
			{"tasks/get", a2awire.TaskParams{ID: "t", HistoryLength: &history}},
			{"tasks/pushNotificationConfig/get", a2awire.TaskParams{ID: "t", PushID: "p"}},
			{"tasks/pushNotificationConfig/set", a2awire.TaskPushConfig{TaskID: "t", Config: a2awire.PushConfig{ID: "p", URL: "https://h.example/"}}},
		}
		for _, c := range params {
			raw, err := json.Marshal(v.Params(c.method, c.p))
			require.NoError(t, err)
			switch want := c.p.(type) {
			case a2awire.SendParams:
				var got a2awire.SendParams
				require.NoError(t, v.DecodeParams(c.method, raw, &got))
				assert.Equal(t, want, got, "%s: %s", v, raw)
			case a2awire.TaskParams:
				var got a2awire.TaskParams
				require.NoError(t, v.DecodeParams(c.method, raw, &got))
				assert.Equal(t, want, got, "%s: %s", v, raw)
			case a2awire.TaskPushConfig:
				var got a2awire.TaskPushConfig
				require.NoError(t, v.DecodeParams(c.method, raw, &got))
				assert.Equal(t, want, got, "%s: %s", v, raw)
			}
		}
	}
}

func TestMethodsAndVersions(t *testing.T) {
	m, v, ok := a2awire.MethodOf("SubscribeToTask")
	assert.True(t, ok)
	assert.Equal(t, "tasks/resubscribe", m)
	assert.Equal(t, a2awire.V10, v)
	assert.Equal(t, "SubscribeToTask", v.Method(m))
	m, v, ok = a2awire.MethodOf("tasks/resubscribe")
	assert.True(t, ok)
	assert.Equal(t, a2awire.V03, v)
	assert.Equal(t, "tasks/resubscribe", v.Method(m))
	_, _, ok = a2awire.MethodOf("tasks/bogus")
	assert.False(t, ok)
	for s, want := range map[string]a2awire.Version{"0.3": a2awire.V03, "0.3.0": a2awire.V03, "1.0": a2awire.V10, "1.0.2": a2awire.V10} {
		got, err := a2awire.ParseVersion(s)
		require.NoError(t, err)
		assert.Equal(t, want, got, s)
	}
	_, err := a2awire.ParseVersion("2.0")
	assert.ErrorContains(t, err, `"2.0"`)

	card := a2awire.AgentCard{URL: "https://old.example/", SupportedInterfaces: []a2awire.Interface{
		{URL: "https://grpc.example/", ProtocolBinding: "GRPC", ProtocolVersion: "1.0"},
		{URL: "https://old.example/", ProtocolBinding: "JSONRPC", ProtocolVersion: "0.3"},
		{URL: "https://new.example/", ProtocolBinding: "JSONRPC", ProtocolVersion: "1.0"},
	}}
	url, v := card.Endpoint()
	assert.Equal(t, "https://new.example/", url)
	assert.Equal(t, a2awire.V10, v)
	url, v = a2awire.AgentCard{URL: "https://old.example/"}.Endpoint()
	assert.Equal(t, "https://old.example/", url)
	assert.Equal(t, a2awire.V03, v)
}
