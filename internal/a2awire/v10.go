package a2awire

import (
	"encoding/json"
	"strings"
)

// The shapes of A2A 1.0 (the JSON of its protocol buffers), each with its conversions to and
// from the package's types.

type part10 struct {
	Text      string          `json:"text,omitempty"`
	Raw       []byte          `json:"raw,omitempty"`
	URL       string          `json:"url,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	Filename  string          `json:"filename,omitempty"`
	MediaType string          `json:"mediaType,omitempty"`
}

func parts10From(ps []Part) []part10 {
	out := make([]part10, 0, len(ps))
	for _, p := range ps {
		switch p.Kind {
		case "file":
			if p.File != nil {
				out = append(out, part10{Raw: p.File.Bytes, URL: p.File.URI, Filename: p.File.Name, MediaType: p.File.MimeType})
			}
		case "data":
			out = append(out, part10{Data: p.Data, MediaType: "application/json"})
		default:
			out = append(out, part10{Text: p.Text})
		}
	}
	return out
}

func parts(ps []part10) []Part {
	out := make([]Part, 0, len(ps))
	for _, p := range ps {
		switch {
		case p.Raw != nil || p.URL != "":
			out = append(out, Part{Kind: "file", File: &File{Name: p.Filename, MimeType: p.MediaType, Bytes: p.Raw, URI: p.URL}})
		case p.Data != nil:
			out = append(out, Part{Kind: "data", Data: p.Data})
		default:
			out = append(out, Part{Kind: "text", Text: p.Text})
		}
	}
	return out
}

type message10 struct {
	MessageID string         `json:"messageId"`
	ContextID string         `json:"contextId,omitempty"`
	TaskID    string         `json:"taskId,omitempty"`
	Role      string         `json:"role"`
	Parts     []part10       `json:"parts"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

func message10From(m Message) message10 {
	return message10{MessageID: m.MessageID, ContextID: m.ContextID, TaskID: m.TaskID,
		Role: "ROLE_" + strings.ToUpper(m.Role), Parts: parts10From(m.Parts), Metadata: m.Metadata}
}

func (m message10) message() Message {
	return Message{MessageID: m.MessageID, ContextID: m.ContextID, TaskID: m.TaskID, Kind: "message",
		Role: strings.ToLower(strings.TrimPrefix(m.Role, "ROLE_")), Parts: parts(m.Parts), Metadata: m.Metadata}
}

type status10 struct {
	State     string     `json:"state"`
	Message   *message10 `json:"message,omitempty"`
	Timestamp string     `json:"timestamp,omitempty"`
}

// A state in 1.0 is TASK_STATE_ and the 0.3 name ("input-required": TASK_STATE_INPUT_REQUIRED).
const statePrefix = "TASK_STATE_"

func status10From(s Status) status10 {
	state := statePrefix + strings.ToUpper(strings.ReplaceAll(s.State, "-", "_"))
	if s.State == StateUnknown {
		state = statePrefix + "UNSPECIFIED"
	}
	out := status10{State: state, Timestamp: s.Timestamp}
	if s.Message != nil {
		m := message10From(*s.Message)
		out.Message = &m
	}
	return out
}

func (s status10) status() Status {
	state := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(s.State, statePrefix), "_", "-"))
	if state == "unspecified" {
		state = StateUnknown
	}
	out := Status{State: state, Timestamp: s.Timestamp}
	if s.Message != nil {
		m := s.Message.message()
		out.Message = &m
	}
	return out
}

type artifact10 struct {
	ArtifactID  string   `json:"artifactId"`
	Name        string   `json:"name,omitempty"`
	Description string   `json:"description,omitempty"`
	Parts       []part10 `json:"parts"`
}

func artifact10From(a Artifact) artifact10 {
	return artifact10{ArtifactID: a.ArtifactID, Name: a.Name, Description: a.Description, Parts: parts10From(a.Parts)}
}

func (a artifact10) artifact() Artifact {
	return Artifact{ArtifactID: a.ArtifactID, Name: a.Name, Description: a.Description, Parts: parts(a.Parts)}
}

type task10 struct {
	ID        string       `json:"id"`
	ContextID string       `json:"contextId,omitempty"`
	Status    status10     `json:"status"`
	Artifacts []artifact10 `json:"artifacts,omitempty"`
	History   []message10  `json:"history,omitempty"`
}

func task10From(t Task) task10 {
	out := task10{ID: t.ID, ContextID: t.ContextID, Status: status10From(t.Status)}
	for _, a := range t.Artifacts {
		out.Artifacts = append(out.Artifacts, artifact10From(a))
	}
	for _, m := range t.History {
		out.History = append(out.History, message10From(m))
	}
	return out
}

func (t task10) task() Task {
	out := Task{ID: t.ID, ContextID: t.ContextID, Kind: "task", Status: t.Status.status()}
	for _, a := range t.Artifacts {
		out.Artifacts = append(out.Artifacts, a.artifact())
	}
	for _, m := range t.History {
		out.History = append(out.History, m.message())
	}
	return out
}

type statusUpdate10 struct {
	TaskID    string         `json:"taskId"`
	ContextID string         `json:"contextId"`
	Status    status10       `json:"status"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

type artifactUpdate10 struct {
	TaskID    string     `json:"taskId"`
	ContextID string     `json:"contextId"`
	Artifact  artifact10 `json:"artifact"`
	Append    bool       `json:"append,omitempty"`
	LastChunk bool       `json:"lastChunk,omitempty"`
}

// stream10 is StreamResponse (and SendMessageResponse): one of its members is set.
type stream10 struct {
	Task           *task10           `json:"task,omitempty"`
	Message        *message10        `json:"message,omitempty"`
	StatusUpdate   *statusUpdate10   `json:"statusUpdate,omitempty"`
	ArtifactUpdate *artifactUpdate10 `json:"artifactUpdate,omitempty"`
}

type auth10 struct {
	Scheme      string `json:"scheme"`
	Credentials string `json:"credentials,omitempty"`
}

// push10 is TaskPushNotificationConfig: a config with its task's id, flat.
type push10 struct {
	ID             string  `json:"id,omitempty"`
	TaskID         string  `json:"taskId"`
	URL            string  `json:"url"`
	Token          string  `json:"token,omitempty"`
	Authentication *auth10 `json:"authentication,omitempty"`
}

func push10From(c TaskPushConfig) push10 {
	out := push10{ID: c.Config.ID, TaskID: c.TaskID, URL: c.Config.URL, Token: c.Config.Token}
	if a := c.Config.Authentication; a != nil && len(a.Schemes) > 0 {
		out.Authentication = &auth10{Scheme: a.Schemes[0], Credentials: a.Credentials}
	}
	return out
}

func (c push10) config() TaskPushConfig {
	out := TaskPushConfig{TaskID: c.TaskID, Config: PushConfig{ID: c.ID, URL: c.URL, Token: c.Token}}
	if a := c.Authentication; a != nil {
		out.Config.Authentication = &PushAuth{Schemes: []string{a.Scheme}, Credentials: a.Credentials}
	}
	return out
}

type sendConfig10 struct {
	AcceptedOutputModes []string `json:"acceptedOutputModes,omitempty"`
	Push                *push10  `json:"taskPushNotificationConfig,omitempty"`
	HistoryLength       *int     `json:"historyLength,omitempty"`
	ReturnImmediately   bool     `json:"returnImmediately,omitempty"`
}

type send10 struct {
	Message       message10     `json:"message"`
	Configuration *sendConfig10 `json:"configuration,omitempty"`
}

func send10From(p SendParams) send10 {
	out := send10{Message: message10From(p.Message)}
	if c := p.Configuration; c != nil {
		out.Configuration = &sendConfig10{HistoryLength: c.HistoryLength, ReturnImmediately: c.Blocking != nil && !*c.Blocking}
		if c.Push != nil {
			pc := push10From(TaskPushConfig{TaskID: p.Message.TaskID, Config: *c.Push})
			out.Configuration.Push = &pc
		}
	}
	return out
}

func (s send10) params() SendParams {
	out := SendParams{Message: s.Message.message()}
	if c := s.Configuration; c != nil {
		blocking := !c.ReturnImmediately
		out.Configuration = &SendConfig{HistoryLength: c.HistoryLength, Blocking: &blocking}
		if c.Push != nil {
			pc := c.Push.config().Config
			out.Configuration.Push = &pc
		}
	}
	return out
}

// taskParams10 are the params of GetTask, CancelTask, SubscribeToTask (id) and of the push
// config methods (taskId, and the config's id).
type taskParams10 struct {
	ID            string `json:"id,omitempty"`
	TaskID        string `json:"taskId,omitempty"`
	HistoryLength *int   `json:"historyLength,omitempty"`
}
