package langgraphapi

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/agiraph/agiraph/graph"
)

// streamModes are the stream modes a run may ask for.
var streamModes = map[string]bool{
	"values": true, "updates": true, "custom": true, "debug": true, "tasks": true,
	"checkpoints": true, "events": true, "messages": true, "messages-tuple": true,
}

// translator turns a graph's stream into the API's events.
type translator struct {
	graphID   string
	modes     map[string]bool
	subgraphs bool
	runMeta   map[string]any         // the run's IDs, in the metadata of its messages
	values    any                    // the latest state of the root graph
	states    map[string]any         // namespace → the latest state of the graph, a task's input
	finished  map[string]graph.Event // namespace NUL task ID → the task's end, sent with its update
	texts     map[string]string      // message ID → its text so far, for the messages mode
}

func newTranslator(graphID string, r run, modes []string, subgraphs bool) *translator {
	t := &translator{graphID: graphID, modes: map[string]bool{}, subgraphs: subgraphs, states: map[string]any{}, finished: map[string]graph.Event{}, texts: map[string]string{},
		runMeta: map[string]any{"graph_id": graphID, "assistant_id": r.AssistantID, "run_id": r.RunID, "thread_id": r.ThreadID}}
	for _, m := range modes {
		t.modes[m] = true
	}
	return t
}

// graphModes is what the run streams: values always (a wait answers the last state).
func (t *translator) graphModes() graph.Mode {
	m := graph.ModeValues
	if t.modes["updates"] || t.modes["tasks"] || t.modes["debug"] || t.modes["events"] {
		m |= graph.ModeUpdates | graph.ModeTasks
	}
	if t.modes["custom"] {
		m |= graph.ModeCustom
	}
	if t.modes["checkpoints"] || t.modes["debug"] {
		m |= graph.ModeCheckpoints
	}
	if t.modes["messages"] || t.modes["messages-tuple"] {
		m |= graph.ModeMessages
	}
	return m
}

type emitFunc func(name string, data any)

// rootChain is the name of the run's own chain in events mode, LangGraph's name of a compiled
// graph.
const rootChain = "LangGraph"

// begin and end frame the run in events mode, as the graph's own chain.
func (t *translator) begin(emit emitFunc, runID string, input json.RawMessage) {
	if t.modes["events"] {
		emit("events", chainEvent("on_chain_start", rootChain, runID, nil, map[string]any{"input": input}))
	}
}

func (t *translator) end(emit emitFunc, runID string) {
	if t.modes["events"] {
		emit("events", chainEvent("on_chain_end", rootChain, runID, nil, map[string]any{"output": t.values}))
	}
}

func chainEvent(kind, name, runID string, metadata map[string]any, data map[string]any) map[string]any {
	if metadata == nil {
		metadata = map[string]any{}
	}
	return map[string]any{"event": kind, "name": name, "run_id": runID, "tags": []string{}, "metadata": metadata, "data": data}
}

// event emits the API's events for one event of the graph.
func (t *translator) event(ev graph.Event, emit emitFunc) {
	suffix := ""
	if ev.Namespace != "" {
		if !t.subgraphs {
			return
		}
		suffix = "|" + strings.ReplaceAll(ev.Namespace, "/", "|")
	}
	send := func(mode, name string, data any) {
		if t.modes[mode] {
			emit(name+suffix, data)
		}
	}
	out := func(mode string, data any) { send(mode, mode, data) }
	switch ev.Mode {
	case graph.ModeValues:
		if ev.Namespace == "" {
			t.values = ev.Data
		}
		t.states[ev.Namespace] = ev.Data
		out("values", ev.Data)
	case graph.ModeUpdates:
		out("updates", map[string]any{ev.Node: ev.Data})
		if end, ok := t.finished[ev.Namespace+"\x00"+ev.TaskID]; ok {
			delete(t.finished, ev.Namespace+"\x00"+ev.TaskID)
			t.taskResult(end, end.Data.(graph.TaskEvent), written(ev.Data), out)
		}
	case graph.ModeCustom:
		out("custom", ev.Data)
	case graph.ModeMessages:
		mc, _ := ev.Data.(graph.MessageChunk)
		t.message(ev, mc, send)
	case graph.ModeTasks:
		te, _ := ev.Data.(graph.TaskEvent)
		t.task(ev, te, out)
	case graph.ModeCheckpoints:
		ce, _ := ev.Data.(graph.CheckpointEvent)
		cp := map[string]any{
			"config":        map[string]any{"configurable": refOf(ce.Config)},
			"parent_config": nil,
			"checkpoint":    refOf(ce.Config),
			"values":        t.values,
			"metadata":      map[string]any{"source": string(ce.Source), "step": ev.Step},
			"next":          append([]string{}, ce.Next...),
			"tasks":         []any{},
		}
		out("checkpoints", cp)
		out("debug", map[string]any{"type": "checkpoint", "timestamp": now(), "step": ev.Step, "payload": cp})
	}
}

// task emits a task's start, and its end: at once for a task that failed or paused, with its
// update (which the graph sends after the end) for one that finished.
func (t *translator) task(ev graph.Event, te graph.TaskEvent, out func(string, any)) {
	if te.Finished {
		if te.Err == nil && len(te.Interrupts) == 0 {
			t.finished[ev.Namespace+"\x00"+ev.TaskID] = ev
			return
		}
		t.taskResult(ev, te, nil, out)
		return
	}
	input := t.states[ev.Namespace]
	if te.Push {
		input = te.Input
	}
	p := map[string]any{"id": ev.TaskID, "name": ev.Node, "input": input, "triggers": taskTriggers(ev.Node, te.Push), "interrupts": []any{}}
	out("tasks", p)
	out("debug", map[string]any{"type": "task", "timestamp": now(), "step": ev.Step, "payload": p})
	out("events", chainEvent("on_chain_start", ev.Node, ev.TaskID, taskMeta(ev, te.Push), map[string]any{"input": input}))
}

func (t *translator) taskResult(ev graph.Event, te graph.TaskEvent, result any, out func(string, any)) {
	if result == nil {
		result = map[string]any{} // a task that failed or paused wrote nothing
	}
	var errText *string
	if te.Err != nil {
		s := te.Err.Error()
		errText = &s
	}
	p := map[string]any{"id": ev.TaskID, "name": ev.Node, "error": errText, "result": result, "interrupts": interruptsJSON(te.Interrupts)}
	out("tasks", p)
	out("debug", map[string]any{"type": "task_result", "timestamp": now(), "step": ev.Step, "payload": p})
	if len(te.Interrupts) == 0 { // a paused task's chain does not end, as in LangGraph
		out("events", chainEvent("on_chain_end", ev.Node, ev.TaskID, taskMeta(ev, te.Push), map[string]any{"output": result}))
	}
}

// taskMeta is the metadata of a task's chain in events mode.
func taskMeta(ev graph.Event, push bool) map[string]any {
	return map[string]any{"langgraph_step": ev.Step, "langgraph_node": ev.Node, "langgraph_task_id": ev.TaskID, "langgraph_triggers": taskTriggers(ev.Node, push)}
}

// taskTriggers is what made a task run, as LangGraph names it: the node's branch, or a Send.
func taskTriggers(node string, push bool) []string {
	if push {
		return []string{"__pregel_push"}
	}
	return []string{"branch:to:" + node}
}

// message emits a piece of a model's answer: in messages-tuple mode as the chunk and its
// metadata ("messages"), in messages mode as the metadata of a new message ("messages/metadata")
// and the message so far ("messages/partial"), as LangGraph's server frames them.
func (t *translator) message(ev graph.Event, mc graph.MessageChunk, send func(mode, name string, data any)) {
	ns := ev.Node + ":" + ev.TaskID
	if ev.Namespace != "" {
		ns = strings.ReplaceAll(ev.Namespace, "/", "|") + "|" + ns
	}
	meta := map[string]any{
		"tags": []string{}, "name": mc.Model, "ls_model_name": mc.Model,
		"langgraph_step": ev.Step, "langgraph_node": ev.Node, "langgraph_task_id": ev.TaskID,
		"langgraph_triggers": taskTriggers(ev.Node, false), "langgraph_path": []string{"__pregel_pull", ev.Node},
		"langgraph_checkpoint_ns": ns, "checkpoint_ns": ns,
	}
	for k, v := range t.runMeta {
		meta[k] = v
	}
	send("messages-tuple", "messages", []any{aiChunk(mc.ID, mc.Text), meta})
	if !t.modes["messages"] {
		return
	}
	text, seen := t.texts[mc.ID]
	if !seen {
		send("messages", "messages/metadata", map[string]any{mc.ID: map[string]any{"metadata": meta}})
	}
	t.texts[mc.ID] = text + mc.Text
	send("messages", "messages/partial", []any{aiChunk(mc.ID, text+mc.Text)})
}

// aiChunk is a piece of a model's answer as LangChain serializes an AIMessageChunk.
func aiChunk(id, text string) map[string]any {
	return map[string]any{
		"type": "AIMessageChunk", "id": id, "content": text,
		"additional_kwargs": map[string]any{}, "response_metadata": map[string]any{},
		"tool_calls": []any{}, "invalid_tool_calls": []any{}, "tool_call_chunks": []any{},
	}
}

// interrupted emits what a run that paused for input ends with, and returns the state with its
// pending interrupts under "__interrupt__", as LangGraph's runs end.
func (t *translator) interrupted(in []graph.InterruptInfo, emit emitFunc) any {
	pending := interruptsJSON(in)
	if t.modes["updates"] {
		emit("updates", map[string]any{"__interrupt__": pending})
	}
	values, ok := asMap(t.values).(map[string]any)
	if !ok {
		values = map[string]any{}
	}
	values["__interrupt__"] = pending
	if t.modes["values"] {
		emit("values", values)
	}
	return values
}

func now() string { return time.Now().UTC().Format(time.RFC3339Nano) }
