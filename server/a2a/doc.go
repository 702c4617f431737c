// Package a2a serves the agents of a host (package host) over the Agent2Agent protocol (A2A,
// version 0.3, JSON-RPC binding): each agent has an agent card and takes the JSON-RPC methods
// message/send, message/stream, tasks/get, tasks/cancel, tasks/resubscribe and
// tasks/pushNotificationConfig/set, get, list and delete.
//
// A task is a run of the agent: its id is the run's id (and so is its context's), and it
// survives a restart of the host. A message without a task id starts a new run toward its
// text; a message on the task in progress goes to its coordinator, or answers the question the
// squad put to the human — a task waiting for that answer is "input-required", the question its
// status message. Cancelling a task pauses its run. The squad's events come as status updates,
// its published files and its output as artifacts.
//
// The package speaks the protocol only; who may call it is the embedding server's concern
// (package server mounts it behind its token).
package a2a
