// Package a2awire holds the wire types of the Agent2Agent protocol (A2A, the JSON-RPC binding)
// that the project's server (server/a2a) and its worker adapter (runtime/a2aworker) share: the
// agent card, tasks, messages, artifacts, stream events, push notification configs, and the
// JSON-RPC envelope with A2A's error codes. The types are shaped as version 0.3 sends them; a
// Version converts them to and from 1.0's shapes and method names.
package a2awire

import (
	"encoding/json"
	"strings"
)

// ProtocolVersion is the version of A2A of a card's url (the 0.3 field); its
// supportedInterfaces name each version an agent speaks.
const ProtocolVersion = "0.3.0"

// The states of a task.
const (
	StateSubmitted     = "submitted"
	StateWorking       = "working"
	StateInputRequired = "input-required"
	StateCompleted     = "completed"
	StateCanceled      = "canceled"
	StateFailed        = "failed"
	StateUnknown       = "unknown"
)

// Final reports whether a task in state ends a stream: it ended, or it waits for the client.
func Final(state string) bool { return state != StateSubmitted && state != StateWorking }

// Terminal reports whether a task in state has ended for good.
func Terminal(state string) bool {
	return state == StateCompleted || state == StateCanceled || state == StateFailed
}

// The JSON-RPC error codes: JSON-RPC's own and A2A's.
const (
	CodeParse           = -32700
	CodeInvalidRequest  = -32600
	CodeMethodNotFound  = -32601
	CodeInvalidParams   = -32602
	CodeInternal        = -32603
	CodeTaskNotFound    = -32001
	CodeNotCancelable   = -32002
	CodePushUnsupported = -32003
	CodeUnsupported     = -32004
)

// AgentCard describes an agent to its clients.
type AgentCard struct {
	ProtocolVersion    string                    `json:"protocolVersion"`
	Name               string                    `json:"name"`
	Description        string                    `json:"description"`
	URL                string                    `json:"url"`
	PreferredTransport string                    `json:"preferredTransport"`
	Version            string                    `json:"version"`
	Capabilities       Capabilities              `json:"capabilities"`
	SecuritySchemes    map[string]SecurityScheme `json:"securitySchemes,omitempty"`
	Security           []map[string][]string     `json:"security,omitempty"`
	DefaultInputModes  []string                  `json:"defaultInputModes"`
	DefaultOutputModes []string                  `json:"defaultOutputModes"`
	Skills             []Skill                   `json:"skills"`
	// SupportedInterfaces and SecurityRequirements are the card's fields in 1.0: the
	// interfaces in the order of preference, each with its version.
	SupportedInterfaces  []Interface           `json:"supportedInterfaces,omitempty"`
	SecurityRequirements []SecurityRequirement `json:"securityRequirements,omitempty"`
}

// Interface is where an agent speaks a version of A2A over a binding ("JSONRPC").
type Interface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	ProtocolVersion string `json:"protocolVersion"`
}

// Endpoint returns the URL of card's JSON-RPC interface in the newest version it announces
// that the package speaks, and that version: its 0.3 url when it announces no other.
func (card AgentCard) Endpoint() (string, Version) {
	for _, v := range []Version{V10, V03} {
		for _, i := range card.SupportedInterfaces {
			if got, err := ParseVersion(i.ProtocolVersion); err == nil && got == v && strings.EqualFold(i.ProtocolBinding, "JSONRPC") {
				return i.URL, v
			}
		}
	}
	return card.URL, V03
}

// SecurityRequirement is a 1.0 card's security requirement: the schemes it needs, each with
// its scopes.
type SecurityRequirement struct {
	Schemes map[string]StringList `json:"schemes"`
}

// StringList is a list of strings, as 1.0 sends one in a map.
type StringList struct {
	List []string `json:"list"`
}

// Capabilities says what of the protocol an agent supports.
type Capabilities struct {
	Streaming              bool `json:"streaming"`
	PushNotifications      bool `json:"pushNotifications"`
	StateTransitionHistory bool `json:"stateTransitionHistory"`
}

// SecurityScheme is a way a client authenticates (OpenAPI's security scheme, as 0.3 sends
// it), with HTTPAuth the same scheme as 1.0 sends it.
type SecurityScheme struct {
	Type        string    `json:"type"`
	Scheme      string    `json:"scheme,omitempty"`
	Description string    `json:"description,omitempty"`
	HTTPAuth    *HTTPAuth `json:"httpAuthSecurityScheme,omitempty"`
}

// HTTPAuth is an HTTP authentication scheme ("bearer"), as 1.0 sends it.
type HTTPAuth struct {
	Scheme      string `json:"scheme"`
	Description string `json:"description,omitempty"`
}

// Skill is something an agent can do.
type Skill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
}

// Task is a run of an agent.
type Task struct {
	ID        string     `json:"id"`
	ContextID string     `json:"contextId"`
	Status    Status     `json:"status"`
	History   []Message  `json:"history,omitempty"`
	Artifacts []Artifact `json:"artifacts,omitempty"`
	Kind      string     `json:"kind"` // "task"
}

// Status is a task's state, with a message from the agent.
type Status struct {
	State     string   `json:"state"`
	Message   *Message `json:"message,omitempty"`
	Timestamp string   `json:"timestamp,omitempty"`
}

// Message is what the client ("user") or the agent ("agent") said.
type Message struct {
	Role      string         `json:"role"`
	Parts     []Part         `json:"parts"`
	MessageID string         `json:"messageId"`
	TaskID    string         `json:"taskId,omitempty"`
	ContextID string         `json:"contextId,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
	Kind      string         `json:"kind"` // "message"
}

// Part is a piece of a message or an artifact: text ("text"), a file ("file") or data ("data").
type Part struct {
	Kind string          `json:"kind"`
	Text string          `json:"text,omitempty"`
	File *File           `json:"file,omitempty"`
	Data json.RawMessage `json:"data,omitempty"`
}

// File is a file part's file, its content in base64 (Bytes) or at a URI.
type File struct {
	Name     string `json:"name,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
	Bytes    []byte `json:"bytes,omitempty"`
	URI      string `json:"uri,omitempty"`
}

// Artifact is something a task made: its output, or a file the squad published.
type Artifact struct {
	ArtifactID  string `json:"artifactId"`
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	Parts       []Part `json:"parts"`
}

// StatusUpdate is the event of a task's status, in a stream.
type StatusUpdate struct {
	TaskID    string         `json:"taskId"`
	ContextID string         `json:"contextId"`
	Kind      string         `json:"kind"` // "status-update"
	Status    Status         `json:"status"`
	Final     bool           `json:"final"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// ArtifactUpdate is the event of a task's artifact, in a stream.
type ArtifactUpdate struct {
	TaskID    string   `json:"taskId"`
	ContextID string   `json:"contextId"`
	Kind      string   `json:"kind"` // "artifact-update"
	Artifact  Artifact `json:"artifact"`
	Append    bool     `json:"append,omitempty"`
	LastChunk bool     `json:"lastChunk"`
}

// PushConfig is where a task's updates are posted.
type PushConfig struct {
	ID             string    `json:"id,omitempty"`
	URL            string    `json:"url"`
	Token          string    `json:"token,omitempty"`
	Authentication *PushAuth `json:"authentication,omitempty"`
}

// PushAuth is how the server authenticates to the client's push URL.
type PushAuth struct {
	Schemes     []string `json:"schemes"`
	Credentials string   `json:"credentials,omitempty"`
}

// TaskPushConfig is a task's push notification config.
type TaskPushConfig struct {
	TaskID string     `json:"taskId"`
	Config PushConfig `json:"pushNotificationConfig"`
}

// SendParams are the parameters of message/send and message/stream.
type SendParams struct {
	Message       Message     `json:"message"`
	Configuration *SendConfig `json:"configuration,omitempty"`
}

// SendConfig is how message/send answers.
type SendConfig struct {
	HistoryLength *int        `json:"historyLength,omitempty"`
	Push          *PushConfig `json:"pushNotificationConfig,omitempty"`
	Blocking      *bool       `json:"blocking,omitempty"`
}

// TaskParams are the parameters of the tasks/ methods.
type TaskParams struct {
	ID            string `json:"id"`
	HistoryLength *int   `json:"historyLength,omitempty"`
	// PushID is the config of tasks/pushNotificationConfig/get and delete.
	PushID string `json:"pushNotificationConfigId,omitempty"`
}

// Request is a JSON-RPC Request.
type Request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// Error is a JSON-RPC error.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Message }

// Response is a JSON-RPC Response.
type Response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}
