package triggers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/triggers"
	"github.com/agiraph/agiraph/tools"
)

func call(t *testing.T, reg *tools.Registry, name, args string) tools.Result {
	t.Helper()
	res := reg.Run(context.Background(), []tools.Call{{ID: "c1", Name: name, Args: json.RawMessage(args)}})
	if len(res) != 1 {
		t.Fatalf("%d results", len(res))
	}
	return res[0]
}

func TestTools(t *testing.T) {
	h := newHarness(t)
	reg, err := tools.NewRegistry(h.s.Tools("coordinator"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"schedule", "list_triggers", "cancel_trigger"} {
		tl, ok := reg.Get(name)
		if !ok || tl.Guidance == "" || tl.Description == "" {
			t.Fatalf("tool %s: present %v, guidance %q", name, ok, tl.Guidance)
		}
	}
	if g := reg.Guidance(); !strings.Contains(g, "schedule") || !strings.Contains(g, "cancel_trigger") {
		t.Fatalf("registry guidance: %s", g)
	}

	calls := []string{
		`{"type":"delayed","delay_seconds":1800,"action":"Check if the build finished."}`,
		`{"type":"at_time","at":"2026-03-02T12:00:00Z","action":"Start the weekly analysis."}`,
		`{"type":"scheduled","cron":"0 9 * * MON","tz":"America/New_York","action":"Write the weekly report."}`,
		`{"type":"heartbeat","interval_seconds":1800,"action":"HEARTBEAT: check the inbox."}`,
		`{"type":"on_event","pattern":"node.completed","filter":{"node":"n2"},"action":"Start the synthesis."}`,
		`{"type":"on_idle","idle_seconds":3600,"to":"human","message":"I have been idle for an hour."}`,
		`{"type":"at_time","at":"2026-03-02T08:30:00","tz":"America/New_York","action":"Local time."}`,
	}
	for i, args := range calls {
		res := call(t, reg, "schedule", args)
		if res.IsError || !strings.Contains(res.Content, fmt.Sprintf("t%d", i+1)) {
			t.Fatalf("schedule %s: %+v", args, res)
		}
	}
	byID := map[string]triggers.Trigger{}
	for _, tr := range h.s.List() {
		byID[tr.ID] = tr
		if tr.By != "coordinator" || tr.Status != triggers.Active {
			t.Fatalf("%s: by %q status %s", tr.ID, tr.By, tr.Status)
		}
	}
	check := func(id string, ok bool) {
		t.Helper()
		if !ok {
			t.Errorf("%s: %+v", id, byID[id])
		}
	}
	tr := byID["t1"]
	check("t1", tr.Type == triggers.Delayed && tr.Delay.D() == 30*time.Minute && tr.Action == triggers.Action{Kind: triggers.Wake, Task: "Check if the build finished."})
	tr = byID["t2"]
	check("t2", tr.Type == triggers.AtTime && tr.At.Equal(base.Add(2*time.Hour)))
	tr = byID["t3"]
	check("t3", tr.Type == triggers.Scheduled && tr.Cron == "0 9 * * MON" && tr.TZ == "America/New_York" &&
		tr.Next.Equal(time.Date(2026, 3, 2, 14, 0, 0, 0, time.UTC))) // 9:00 EST today
	tr = byID["t4"]
	check("t4", tr.Type == triggers.Heartbeat && tr.Interval.D() == 30*time.Minute)
	tr = byID["t5"]
	check("t5", tr.Type == triggers.OnEvent && tr.Pattern == "node.completed" && tr.Filter["node"] == "n2")
	tr = byID["t6"]
	check("t6", tr.Type == triggers.OnIdle && tr.Idle.D() == time.Hour && tr.Action.Kind == triggers.Message && tr.Action.To == "human" && tr.Action.Body == "I have been idle for an hour.")
	tr = byID["t7"]
	check("t7", tr.At.Equal(time.Date(2026, 3, 2, 13, 30, 0, 0, time.UTC)) && tr.TZ == "")

	list := call(t, reg, "list_triggers", `{}`)
	if list.IsError {
		t.Fatal(list.Content)
	}
	for _, want := range []string{"7 active", "t1 (delayed 30m0s)", "in 30m0s", `"0 9 * * MON" in America/New_York`, `node="n2"`, "message to human", "every 30m0s"} {
		if !strings.Contains(list.Content, want) {
			t.Errorf("list_triggers lacks %q:\n%s", want, list.Content)
		}
	}

	if res := call(t, reg, "cancel_trigger", `{"trigger_id":"t4"}`); res.IsError || !strings.Contains(res.Content, "t4") {
		t.Fatalf("cancel: %+v", res)
	}
	if got, _ := h.s.Get("t4"); got.Status != triggers.Cancelled {
		t.Fatalf("t4 is %s after cancel_trigger", got.Status)
	}
	if res := call(t, reg, "cancel_trigger", `{"trigger_id":"t4"}`); !res.IsError || !strings.Contains(res.Content, "already cancelled") {
		t.Fatalf("cancel twice: %+v", res)
	}
	if res := call(t, reg, "cancel_trigger", `{"trigger_id":"t99"}`); !res.IsError || !strings.Contains(res.Content, `"t99"`) {
		t.Fatalf("cancel unknown: %+v", res)
	}
	list = call(t, reg, "list_triggers", `{}`)
	if !strings.Contains(list.Content, "6 active") || !strings.Contains(list.Content, "t4 (heartbeat every 30m0s), cancelled") {
		t.Fatalf("list after cancel:\n%s", list.Content)
	}

	// The triggers the tool made fire like any other.
	h.s.Observe(eventlog.Event{Type: eventlog.NodeCompleted, Node: "n2"})
	h.one(h.drain(), "t5", base, "on_event made by the tool")
	f := h.one(h.advance(30*time.Minute), "t1", base.Add(30*time.Minute), "delayed made by the tool")
	if f.Trigger.By != "coordinator" {
		t.Fatalf("firing by %q", f.Trigger.By)
	}
}

func TestScheduleToolErrors(t *testing.T) {
	h := newHarness(t)
	reg, err := tools.NewRegistry(h.s.Tools("w1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ args, want string }{
		{`{"type":"delayed","action":"x"}`, "delay_seconds"},
		{`{"type":"heartbeat","interval_seconds":0.1,"action":"x"}`, "interval_seconds"},
		{`{"type":"on_idle","action":"x"}`, "idle_seconds"},
		{`{"type":"delayed","delay_seconds":-5,"action":"x"}`, "delay_seconds"},
		{`{"type":"scheduled","cron":"every day","action":"x"}`, "cron"},
		{`{"type":"scheduled","cron":"@daily","tz":"Nowhere/Town","action":"x"}`, "tz"},
		{`{"type":"at_time","at":"next tuesday","action":"x"}`, "at"},
		{`{"type":"delayed","delay_seconds":60}`, "action"},
		{`{"type":"delayed","delay_seconds":60,"to":"human"}`, "message"},
		{`{"type":"delayed","delay_seconds":60,"message":"hi"}`, "to"},
		{`{"type":"delayed","delay_seconds":60,"cron":"@daily","action":"x"}`, "cron"},
		{`{"type":"on_event","pattern":"node.*","filter":{"node_id":"n1"},"action":"x"}`, "filter.node_id"},
		{`{"type":"weekly","action":"x"}`, "type"},
	} {
		res := call(t, reg, "schedule", c.args)
		if !res.IsError || !strings.Contains(res.Content, c.want) {
			t.Errorf("schedule %s: %+v, want an error naming %q", c.args, res, c.want)
		}
	}
	if n := len(h.s.List()); n != 0 {
		t.Fatalf("%d triggers made by failed calls", n)
	}
	if res := call(t, reg, "list_triggers", `{}`); res.Content != "No active triggers." {
		t.Fatalf("empty list: %q", res.Content)
	}
}

// A schedule call repeated (after a crash, the same call runs again) finds its trigger.
func TestScheduleCallRepeatedSchedulesOnce(t *testing.T) {
	clock := triggers.NewFakeClock(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC))
	s, err := triggers.Open(filepath.Join(t.TempDir(), "triggers.json"), func(triggers.Firing) {}, triggers.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	reg, err := tools.NewRegistry(s.ToolsFor("coordinator", "run1.coordinator"))
	if err != nil {
		t.Fatal(err)
	}
	call := tools.Call{ID: "c7", Name: "schedule", Args: json.RawMessage(`{"type":"delayed","delay_seconds":60,"action":"Check."}`)}
	first := reg.Run(context.Background(), []tools.Call{call})[0]
	again := reg.Run(context.Background(), []tools.Call{call})[0]
	if first.IsError || again.IsError || len(s.List()) != 1 {
		t.Fatalf("results %q / %q; %d triggers, want 1", first.Content, again.Content, len(s.List()))
	}
	call.ID = "c8"
	reg.Run(context.Background(), []tools.Call{call})
	if n := len(s.List()); n != 2 {
		t.Fatalf("a new call made %d triggers in all, want 2", n)
	}
}
