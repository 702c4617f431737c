// Package a2a serves the agents of a host (package host) over the Agent2Agent protocol (A2A,
// JSON-RPC binding, versions 1.0 and 0.3 on the same endpoint): each agent has an agent card
// that announces both, and takes the JSON-RPC methods of 1.0 (SendMessage,
// SendStreamingMessage, GetTask, CancelTask, SubscribeToTask, and Create, Get, List and
// DeleteTaskPushNotificationConfig) and of 0.3 (message/send, message/stream, tasks/get,
// tasks/cancel, tasks/resubscribe, tasks/pushNotificationConfig/set, get, list and delete),
// each answered in its version's shapes. A request's A2A-Version header, when it has one,
// names the version; without it, the method's name does.
//
// A task is a run of the agent: its id is the run's id (and so is its context's), and it
// survives a restart of the host. A message without a task id starts a new run toward its
// text; a message on the task in progress goes to its coordinator, or answers the question the
// squad put to the human — a task waiting for that answer is "input-required", the question its
// status message. Cancelling a task pauses its run. The squad's events come as status updates,
// its published files and its output as artifacts.
//
// NewGraph serves a compiled graph as an agent the same way: a task is a thread of the graph,
// a message runs the graph on it, an interrupt is "input-required" until the next message
// resumes it, and the final state's output is the task's artifact.
//
// Push notifications go to no loopback, link-local, private or unspecified address unless
// WithPrivatePush: the URL is checked as it is set, and the address it resolves to as each
// notification is posted.
//
// The package speaks the protocol only; who may call it is the embedding server's concern
// (package server mounts it behind its token).
package a2a
