package adapter_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/adapter"
	"github.com/agiraph/agiraph/runtime/runtimetest"
	"github.com/agiraph/agiraph/tools"
)

var calls atomic.Int64

func run(t *testing.T, reg *tools.Registry, name string, args any) tools.Result {
	t.Helper()
	raw, _ := json.Marshal(args)
	id := fmt.Sprint(calls.Add(1))
	return reg.Run(context.Background(), []tools.Call{{ID: id, Name: name, Args: raw}})[0]
}

func TestWorkToolsReportTheEnd(t *testing.T) {
	d := runtime.NodeDir(t.TempDir())
	require.NoError(t, d.Create())
	require.NoError(t, os.WriteFile(filepath.Join(d.Scratch(), "findings.md"), []byte("found"), 0o644))
	mb := &runtimetest.Mailbox{}
	mb.Deliver("bob", "hi")
	var events []runtime.Event
	a := runtime.Assignment{ID: "a1", Node: "n1", Worker: "alice", Dir: d, Mailbox: mb}
	rep := adapter.NewEmitter(a, func(e runtime.Event) { events = append(events, e) })
	report := adapter.NewReport(runtime.Outcome{})
	reg, err := tools.NewRegistry(adapter.WorkTools(a, report, rep))
	if err != nil {
		t.Fatal(err)
	}

	if r := run(t, reg, "suggest_next", adapter.SuggestArgs{Suggestion: "check AMD too"}); r.IsError {
		t.Fatal(r.Content)
	}
	if r := run(t, reg, "create_work_node", adapter.SubNodeArgs{Task: "benchmark", Refs: map[string]string{"in": "n1/published/findings.md"}}); r.IsError {
		t.Fatal(r.Content)
	}
	if r := run(t, reg, "create_work_node", adapter.SubNodeArgs{Task: "  "}); !r.IsError {
		t.Fatal("an empty sub-task was accepted")
	}
	if r := run(t, reg, "send_message", adapter.SendArgs{To: "coordinator", Content: "halfway"}); r.IsError {
		t.Fatal(r.Content)
	}
	if r := run(t, reg, "check_messages", adapter.NoArgs{}); r.Content != "[Message from bob]: hi" {
		t.Fatalf("check_messages = %q", r.Content)
	}
	if r := run(t, reg, "check_messages", adapter.NoArgs{}); r.Content != "No new messages." {
		t.Fatalf("second check_messages = %q", r.Content)
	}
	if report.Done() {
		t.Fatal("done before publishing")
	}
	if r := run(t, reg, "publish", adapter.PublishArgs{Summary: "all found"}); r.IsError || !strings.Contains(r.Content, "findings.md") {
		t.Fatalf("publish = %+v", r)
	}
	if r := run(t, reg, "checkpoint", adapter.CheckpointArgs{Summary: "again"}); !r.IsError {
		t.Fatal("checkpoint after publish was accepted")
	}

	o := report.Outcome()
	want := runtime.Outcome{
		Status: runtime.Published, Summary: "all found", Published: []string{"findings.md"},
		Suggestions: []string{"check AMD too"},
		SubNodes:    []runtime.SubNode{{Task: "benchmark", Refs: map[string]string{"in": "n1/published/findings.md"}}},
	}
	if !reflect.DeepEqual(o, want) {
		t.Fatalf("outcome %+v\nwant    %+v", o, want)
	}
	if sent := mb.Sent(); len(sent) != 1 || sent[0].To != "coordinator" {
		t.Fatalf("sent %+v", sent)
	}
	var kinds []runtime.Kind
	for _, e := range events {
		kinds = append(kinds, e.Kind)
		if e.Assignment != "a1" || e.Node != "n1" || e.Worker != "alice" || e.Time.IsZero() {
			t.Errorf("event not stamped: %+v", e)
		}
	}
	if want := []runtime.Kind{runtime.MessageSent, runtime.MessageReceived}; !reflect.DeepEqual(kinds, want) {
		t.Fatalf("events %v, want %v", kinds, want)
	}

	// A worker that resumes starts from what it reported.
	again := adapter.NewReport(o)
	if !again.Done() || !reflect.DeepEqual(again.Outcome(), o) {
		t.Fatalf("NewReport lost the earlier report: %+v", again.Outcome())
	}
}

func TestWorkToolsWithoutMailboxHaveNoMessaging(t *testing.T) {
	a := runtime.Assignment{Dir: runtime.NodeDir(t.TempDir())}
	for _, tool := range adapter.WorkTools(a, adapter.NewReport(runtime.Outcome{}), adapter.NewEmitter(a, nil)) {
		if tool.Name == "send_message" || tool.Name == "check_messages" {
			t.Fatalf("%s offered without a mailbox", tool.Name)
		}
	}
}

func TestReportTravelsInTheContext(t *testing.T) {
	r := adapter.NewReport(runtime.Outcome{})
	got, ok := adapter.ReportFrom(adapter.WithReport(context.Background(), r))
	if !ok || got != r {
		t.Fatal("ReportFrom lost the report")
	}
	if err := got.End(runtime.Checkpointed, "done"); err != nil || !r.Done() {
		t.Fatalf("End: %v", err)
	}
	if err := got.End(runtime.Published, "again"); err == nil {
		t.Fatal("a second End was accepted")
	}
	if _, ok := adapter.ReportFrom(context.Background()); ok {
		t.Fatal("ReportFrom found a report in a bare context")
	}
}

func TestWorkToolSchemasKeepTheirDescriptions(t *testing.T) {
	a := runtime.Assignment{Dir: runtime.NodeDir(t.TempDir()), Mailbox: &runtimetest.Mailbox{}}
	for _, tool := range adapter.WorkTools(a, adapter.NewReport(runtime.Outcome{}), adapter.NewEmitter(a, nil)) {
		switch tool.Name {
		case "create_work_node":
			if !strings.Contains(string(tool.Schema), "by name (default: whoever is free)") {
				t.Errorf("create_work_node schema cut: %s", tool.Schema)
			}
		case "send_message":
			if !strings.Contains(string(tool.Schema), "or * for everyone") {
				t.Errorf("send_message schema cut: %s", tool.Schema)
			}
		}
	}
}

func TestReportAsk(t *testing.T) {
	r := adapter.NewReport(runtime.Outcome{})
	if err := r.Ask("Which colour?"); err != nil {
		t.Fatal(err)
	}
	if o := r.Outcome(); o.Status != runtime.Waiting || o.Question != "Which colour?" {
		t.Fatalf("outcome %+v", o)
	}
	if err := r.End(runtime.Checkpointed, "later"); err != nil {
		t.Fatal(err)
	}
	if err := r.Ask("Again?"); err == nil {
		t.Fatal("a report that ended took a question")
	}
}

// publish refuses a result that does not match the node's output schema in its handler too, so
// a runtime that calls tools without a registry cannot publish one; nothing is published then.
func TestPublishHandlerChecksTheResult(t *testing.T) {
	d := runtime.NodeDir(t.TempDir())
	require.NoError(t, d.Create())
	require.NoError(t, os.WriteFile(filepath.Join(d.Scratch(), "notes.md"), []byte("n"), 0o644))
	a := runtime.Assignment{ID: "a1", Node: "n1", Dir: d,
		OutputSchema: json.RawMessage(`{"type":"object","required":["ok"],"properties":{"ok":{"type":"boolean"}}}`)}
	report := adapter.NewReport(runtime.Outcome{})
	var publish tools.Tool
	for _, tl := range adapter.WorkTools(a, report, adapter.NewEmitter(a, nil)) {
		if tl.Name == "publish" {
			publish = tl
		}
	}
	_, err := publish.Handler(context.Background(), json.RawMessage(`{"summary":"s","result":{"ok":"yes"}}`))
	require.EqualError(t, err, "the result does not match the output schema: result.ok: expected boolean, got string. Fix it and call publish again")
	files, err := d.PublishedFiles()
	require.NoError(t, err)
	require.Empty(t, files)
	require.False(t, report.Done())

	out, err := publish.Handler(context.Background(), json.RawMessage(`{"summary":"s","result":{ "ok": true }}`))
	require.NoError(t, err)
	require.Equal(t, "Published: notes.md, result.json", out)
	require.Equal(t, `{"ok":true}`, string(report.Outcome().Result))
}
