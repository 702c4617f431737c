package triggers_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agiraph/agiraph/nodes/triggers"
)

func TestAddValidation(t *testing.T) {
	h := newHarness(t)
	w := wake("x")
	hour := triggers.Duration(time.Hour)
	for _, c := range []struct {
		name  string
		tr    triggers.Trigger
		field string
	}{
		{"no type", triggers.Trigger{Action: w}, "type"},
		{"unknown type", triggers.Trigger{Type: "weekly", Action: w}, "type"},
		{"no cron", triggers.Trigger{Type: triggers.Scheduled, Action: w}, "cron"},
		{"bad cron", triggers.Trigger{Type: triggers.Scheduled, Cron: "every monday", Action: w}, "cron"},
		{"cron out of range", triggers.Trigger{Type: triggers.Scheduled, Cron: "61 * * * *", Action: w}, "cron"},
		{"six fields", triggers.Trigger{Type: triggers.Scheduled, Cron: "0 0 9 * * *", Action: w}, "cron"},
		{"never due", triggers.Trigger{Type: triggers.Scheduled, Cron: "0 0 30 2 *", Action: w}, "cron"},
		{"bad tz", triggers.Trigger{Type: triggers.Scheduled, Cron: "@daily", TZ: "Mars/Olympus", Action: w}, "tz"},
		{"two tz", triggers.Trigger{Type: triggers.Scheduled, Cron: "TZ=UTC @daily", TZ: "Europe/Paris", Action: w}, "tz"},
		{"zero delay", triggers.Trigger{Type: triggers.Delayed, Action: w}, "delay"},
		{"negative delay", triggers.Trigger{Type: triggers.Delayed, Delay: -1, Action: w}, "delay"},
		{"no at", triggers.Trigger{Type: triggers.AtTime, Action: w}, "at"},
		{"zero interval", triggers.Trigger{Type: triggers.Heartbeat, Action: w}, "interval"},
		{"no pattern", triggers.Trigger{Type: triggers.OnEvent, Action: w}, "pattern"},
		{"bad pattern", triggers.Trigger{Type: triggers.OnEvent, Pattern: "node.[", Action: w}, "pattern"},
		{"bad filter key", triggers.Trigger{Type: triggers.OnEvent, Pattern: "*", Filter: map[string]string{"node_id": "n1"}, Action: w}, "filter.node_id"},
		{"empty data key", triggers.Trigger{Type: triggers.OnEvent, Pattern: "*", Filter: map[string]string{"data.": "n1"}, Action: w}, "filter.data."},
		{"zero idle", triggers.Trigger{Type: triggers.OnIdle, Action: w}, "idle"},
		{"field of another type", triggers.Trigger{Type: triggers.Delayed, Delay: hour, Cron: "@daily", Action: w}, "cron"},
		{"interval on idle", triggers.Trigger{Type: triggers.OnIdle, Idle: hour, Interval: hour, Action: w}, "interval"},
		{"no action", triggers.Trigger{Type: triggers.Delayed, Delay: hour}, "action.kind"},
		{"unknown action", triggers.Trigger{Type: triggers.Delayed, Delay: hour, Action: triggers.Action{Kind: "email"}}, "action.kind"},
		{"wake without task", triggers.Trigger{Type: triggers.Delayed, Delay: hour, Action: triggers.Action{Kind: triggers.Wake, Task: "  "}}, "action.task"},
		{"run_node without node", triggers.Trigger{Type: triggers.Delayed, Delay: hour, Action: triggers.Action{Kind: triggers.RunNode}}, "action.node"},
		{"message without to", triggers.Trigger{Type: triggers.Delayed, Delay: hour, Action: triggers.Action{Kind: triggers.Message, Body: "hi"}}, "action.to"},
		{"message without body", triggers.Trigger{Type: triggers.Delayed, Delay: hour, Action: triggers.Action{Kind: triggers.Message, To: "human"}}, "action.body"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := h.s.Add(c.tr)
			var fe *triggers.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Add: %v, want a *FieldError", err)
			}
			if fe.Field != c.field || !strings.Contains(err.Error(), c.field+":") {
				t.Fatalf("Add: %v (field %q), want field %q", err, fe.Field, c.field)
			}
		})
	}
	if n := len(h.s.List()); n != 0 {
		t.Fatalf("%d invalid triggers were added", n)
	}
	// The first valid one still gets t1.
	if tr := h.add(triggers.Trigger{Type: triggers.Scheduled, Cron: "TZ=Europe/Paris 0 9 * * MON-FRI", Action: w}); tr.ID != "t1" {
		t.Fatalf("id %s, want t1", tr.ID)
	}
}

func TestListOrder(t *testing.T) {
	h := newHarness(t)
	hour := triggers.Duration(time.Hour)
	h.add(triggers.Trigger{Type: triggers.OnEvent, Pattern: "*", Action: wake("t1")})
	h.add(triggers.Trigger{Type: triggers.Delayed, Delay: 3 * hour, Action: wake("t2")})
	h.add(triggers.Trigger{Type: triggers.Heartbeat, Interval: hour, Action: wake("t3")})
	h.add(triggers.Trigger{Type: triggers.Delayed, Delay: 2 * hour, Action: wake("t4")})
	h.add(triggers.Trigger{Type: triggers.AtTime, At: base.Add(time.Minute), Action: wake("t5")})
	if err := h.s.Cancel("t4"); err != nil {
		t.Fatal(err)
	}
	h.advance(time.Minute) // t5 fires
	var got []string
	for _, tr := range h.s.List() {
		got = append(got, tr.ID)
	}
	if want := "t3 t2 t1 t4 t5"; strings.Join(got, " ") != want {
		t.Fatalf("List order %v, want %s", got, want)
	}
}
