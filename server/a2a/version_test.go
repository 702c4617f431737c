package a2a_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestVersion10 calls the agent in A2A 1.0's method names and shapes, and checks the version
// a request names in its A2A-Version header.
func TestVersion10(t *testing.T) {
	f := start(t, "")
	f.agent("ada")
	msg := map[string]any{"message": map[string]any{"messageId": "m-1", "role": "ROLE_USER",
		"parts": []map[string]string{{"text": "Research the history of the kite."}}}}
	var sent struct {
		Task struct {
			ID     string
			Kind   *string
			Status struct{ State string }
			// Artifacts' parts: a published file as raw bytes, the output as text.
			Artifacts []struct {
				Name  string
				Parts []struct {
					Text, Filename, MediaType string
					Raw                       []byte
				}
			}
			History []struct{ Role string }
		}
	}
	require.Nil(t, f.call("ada", "SendMessage", msg, &sent))
	task := sent.Task
	require.NotEmpty(t, task.ID, "the result is {\"task\": …}")
	assert.Nil(t, task.Kind, "1.0 has no kind")
	assert.Equal(t, "TASK_STATE_COMPLETED", task.Status.State)
	assert.Equal(t, "ROLE_USER", task.History[0].Role)
	files := map[string]string{}
	for _, art := range task.Artifacts {
		files[art.Name] = art.Parts[0].Text + string(art.Parts[0].Raw)
		if art.Name == "n1/findings.md" {
			assert.Equal(t, "n1/findings.md", art.Parts[0].Filename)
			assert.Equal(t, "text/markdown; charset=utf-8", art.Parts[0].MediaType)
		}
	}
	assert.Contains(t, files["n1/findings.md"], "#")
	assert.Contains(t, files["output"], "# Report")

	var got struct {
		ID      string
		Status  struct{ State string }
		History []json.RawMessage
	}
	require.Nil(t, f.call("ada", "GetTask", map[string]any{"id": task.ID, "historyLength": 1}, &got))
	assert.Equal(t, "TASK_STATE_COMPLETED", got.Status.State)
	assert.Len(t, got.History, 1)

	// Push notification configs: flat, with their task's id; a list is {"configs": […]}.
	cfg := map[string]any{"taskId": task.ID, "id": "hook", "url": "https://hooks.example/a2a", "token": "t",
		"authentication": map[string]string{"scheme": "Bearer", "credentials": "c"}}
	var set map[string]any
	require.Nil(t, f.call("ada", "CreateTaskPushNotificationConfig", cfg, &set))
	assert.Equal(t, cfg["url"], set["url"])
	assert.Equal(t, task.ID, set["taskId"])
	require.Nil(t, f.call("ada", "GetTaskPushNotificationConfig", map[string]any{"taskId": task.ID, "id": "hook"}, &set))
	assert.Equal(t, map[string]any{"scheme": "Bearer", "credentials": "c"}, set["authentication"])
	var list struct{ Configs []map[string]any }
	require.Nil(t, f.call("ada", "ListTaskPushNotificationConfigs", map[string]any{"taskId": task.ID}, &list))
	require.Len(t, list.Configs, 1)
	assert.Equal(t, "hook", list.Configs[0]["id"])
	var deleted map[string]any
	require.Nil(t, f.call("ada", "DeleteTaskPushNotificationConfig", map[string]any{"taskId": task.ID, "id": "hook"}, &deleted))
	assert.Empty(t, deleted)

	// A stream's events are {"task": …}, {"statusUpdate": …}, {"artifactUpdate": …}.
	events := f.stream("ada", "SendStreamingMessage", msg)
	var members []string
	for _, raw := range events {
		var e map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(raw, &e))
		for k := range e {
			members = append(members, k)
		}
	}
	assert.Equal(t, "task", members[0])
	assert.Equal(t, "statusUpdate", members[len(members)-1])
	assert.Contains(t, members, "artifactUpdate")

	// The A2A-Version header names the version: a method of the other one is not found, a
	// version not spoken is refused.
	f.version = "1.0"
	e := f.call("ada", "tasks/get", map[string]any{"id": task.ID}, nil)
	require.NotNil(t, e)
	assert.Equal(t, -32601, e.Code)
	assert.Contains(t, e.Message, "GetTask")
	f.version = "0.3"
	var old struct {
		Kind   string
		Status struct{ State string }
	}
	require.Nil(t, f.call("ada", "tasks/get", map[string]any{"id": task.ID}, &old))
	assert.Equal(t, "task", old.Kind)
	assert.Equal(t, "completed", old.Status.State)
	f.version = "0.5"
	e = f.call("ada", "GetTask", map[string]any{"id": task.ID}, nil)
	require.NotNil(t, e)
	assert.Equal(t, -32009, e.Code)
	assert.Contains(t, e.Message, `"0.5"`)
}
