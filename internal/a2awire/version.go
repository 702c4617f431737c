package a2awire

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Version is a version of A2A, as Major.Minor. The package's types are one model of the
// protocol, shaped as 0.3 sends it; a Version converts them to and from its own shapes at the
// edge: its method names, its params, its results and stream events.
type Version string

// The versions spoken.
const (
	V03 Version = "0.3"
	V10 Version = "1.0"
)

// VersionHeader is the HTTP header in which a request names its version.
const VersionHeader = "A2A-Version"

// CodeVersionUnsupported is the JSON-RPC error of a version that is not spoken.
const CodeVersionUnsupported = -32009

// ParseVersion returns the version s names ("0.3", "1.0"; a patch number is ignored), or an
// error that names it.
func ParseVersion(s string) (Version, error) {
	mm := s
	if i := strings.IndexByte(s, '.'); i >= 0 {
		if j := strings.IndexByte(s[i+1:], '.'); j >= 0 {
			mm = s[:i+1+j]
		}
	}
	switch Version(strings.TrimSpace(mm)) {
	case V03:
		return V03, nil
	case V10:
		return V10, nil
	}
	return "", &Error{Code: CodeVersionUnsupported, Message: fmt.Sprintf("A2A version %q is not spoken here: use 1.0 or 0.3", s)}
}

// Methods are the methods of the JSON-RPC binding, by their 0.3 names.
var Methods = []string{"message/send", "message/stream", "tasks/get", "tasks/cancel", "tasks/resubscribe",
	"tasks/pushNotificationConfig/set", "tasks/pushNotificationConfig/get", "tasks/pushNotificationConfig/list",
	"tasks/pushNotificationConfig/delete"}

// methods10 names the methods in 1.0, by their 0.3 names.
var methods10 = map[string]string{
	"message/send":                        "SendMessage",
	"message/stream":                      "SendStreamingMessage",
	"tasks/get":                           "GetTask",
	"tasks/cancel":                        "CancelTask",
	"tasks/resubscribe":                   "SubscribeToTask",
	"tasks/pushNotificationConfig/set":    "CreateTaskPushNotificationConfig",
	"tasks/pushNotificationConfig/get":    "GetTaskPushNotificationConfig",
	"tasks/pushNotificationConfig/list":   "ListTaskPushNotificationConfigs",
	"tasks/pushNotificationConfig/delete": "DeleteTaskPushNotificationConfig",
}

// Method returns the name in v of method, named as in 0.3.
func (v Version) Method(method string) string {
	if v == V10 {
		return methods10[method]
	}
	return method
}

// MethodOf returns the 0.3 name of the method called name, and the version that calls it so;
// false for a method neither version has.
func MethodOf(name string) (string, Version, bool) {
	if _, ok := methods10[name]; ok {
		return name, V03, true
	}
	for old, new := range methods10 {
		if new == name {
			return old, V10, true
		}
	}
	return "", "", false
}

// Params returns p (SendParams, TaskParams or TaskPushConfig), the params of method, as v
// sends them.
func (v Version) Params(method string, p any) any {
	if v != V10 {
		return p
	}
	switch p := p.(type) {
	case SendParams:
		return send10From(p)
	case TaskParams:
		if strings.HasPrefix(method, "tasks/pushNotificationConfig/") {
			return taskParams10{TaskID: p.ID, ID: p.PushID}
		}
		return taskParams10{ID: p.ID, HistoryLength: p.HistoryLength}
	case TaskPushConfig:
		return push10From(p)
	}
	return p
}

// DecodeParams decodes raw, the params of method as v sends them, into p (a *SendParams,
// *TaskParams or *TaskPushConfig).
func (v Version) DecodeParams(method string, raw json.RawMessage, p any) error {
	if v != V10 {
		return json.Unmarshal(raw, p)
	}
	switch p := p.(type) {
	case *SendParams:
		var s send10
		if err := json.Unmarshal(raw, &s); err != nil {
			return err
		}
		*p = s.params()
	case *TaskParams:
		var t taskParams10
		if err := json.Unmarshal(raw, &t); err != nil {
			return err
		}
		*p = TaskParams{ID: t.ID, HistoryLength: t.HistoryLength}
		if strings.HasPrefix(method, "tasks/pushNotificationConfig/") {
			*p = TaskParams{ID: t.TaskID, PushID: t.ID}
		}
	case *TaskPushConfig:
		var c push10
		if err := json.Unmarshal(raw, &c); err != nil {
			return err
		}
		*p = c.config()
	default:
		return json.Unmarshal(raw, p)
	}
	return nil
}

// Result returns r, the result of method (a Task, a TaskPushConfig, a list of them, or nil),
// as v answers it.
func (v Version) Result(method string, r any) any {
	if v != V10 {
		return r
	}
	switch r := r.(type) {
	case Task:
		if method == "message/send" {
			return v.Event(r)
		}
		return task10From(r)
	case TaskPushConfig:
		return push10From(r)
	case []TaskPushConfig:
		out := struct {
			Configs []push10 `json:"configs"`
		}{Configs: []push10{}}
		for _, c := range r {
			out.Configs = append(out.Configs, push10From(c))
		}
		return out
	case nil:
		return struct{}{}
	}
	return r
}

// Event returns e (a Task, Message, StatusUpdate or ArtifactUpdate) as v sends it in a stream,
// a push notification or the result of message/send.
func (v Version) Event(e any) any {
	if v != V10 {
		return e
	}
	var s stream10
	switch e := e.(type) {
	case Task:
		t := task10From(e)
		s.Task = &t
	case Message:
		m := message10From(e)
		s.Message = &m
	case StatusUpdate:
		s.StatusUpdate = &statusUpdate10{TaskID: e.TaskID, ContextID: e.ContextID, Status: status10From(e.Status), Metadata: e.Metadata}
	case ArtifactUpdate:
		s.ArtifactUpdate = &artifactUpdate10{TaskID: e.TaskID, ContextID: e.ContextID, Artifact: artifact10From(e.Artifact), Append: e.Append, LastChunk: e.LastChunk}
	default:
		return e
	}
	return s
}

// DecodeEvent decodes raw, an event of a stream or the result of message/send as v sends it,
// into a Task, Message, StatusUpdate or ArtifactUpdate.
func (v Version) DecodeEvent(raw json.RawMessage) (any, error) {
	if v == V10 {
		var s stream10
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		switch {
		case s.Task != nil:
			return s.Task.task(), nil
		case s.Message != nil:
			return s.Message.message(), nil
		case s.StatusUpdate != nil:
			u := s.StatusUpdate
			st := u.Status.status()
			return StatusUpdate{TaskID: u.TaskID, ContextID: u.ContextID, Kind: "status-update", Status: st, Final: Final(st.State), Metadata: u.Metadata}, nil
		case s.ArtifactUpdate != nil:
			u := s.ArtifactUpdate
			return ArtifactUpdate{TaskID: u.TaskID, ContextID: u.ContextID, Kind: "artifact-update", Artifact: u.Artifact.artifact(), Append: u.Append, LastChunk: u.LastChunk}, nil
		}
		return nil, fmt.Errorf("an A2A 1.0 event with none of task, message, statusUpdate, artifactUpdate: %s", raw)
	}
	var k struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(raw, &k); err != nil {
		return nil, err
	}
	switch k.Kind {
	case "task":
		return decodeAs[Task](raw)
	case "message":
		return decodeAs[Message](raw)
	case "status-update":
		return decodeAs[StatusUpdate](raw)
	case "artifact-update":
		return decodeAs[ArtifactUpdate](raw)
	}
	return nil, fmt.Errorf("an A2A 0.3 event of kind %q", k.Kind)
}

func decodeAs[T any](raw json.RawMessage) (any, error) {
	var v T
	err := json.Unmarshal(raw, &v)
	return v, err
}
