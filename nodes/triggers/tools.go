package triggers

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/agiraph/agiraph/tools"
)

// scheduleArgs are the arguments of the schedule tool.
type scheduleArgs struct {
	Type            string            `json:"type" jsonschema:"enum=delayed,enum=at_time,enum=scheduled,enum=heartbeat,enum=on_event,enum=on_idle" jsonschema_description:"What makes the trigger fire: delayed (once, after delay_seconds), at_time (once, at 'at'), scheduled (recurring, on 'cron'), heartbeat (every interval_seconds), on_event (each event matching 'pattern' and 'filter'), on_idle (after idle_seconds without activity)."`
	Cron            string            `json:"cron,omitempty" jsonschema_description:"scheduled: a cron expression, five fields 'minute hour day-of-month month day-of-week' (e.g. '0 9 * * MON', '*/15 * * * *') or a descriptor (@hourly, @daily, @weekly, @every 90m)."`
	TZ              string            `json:"tz,omitempty" jsonschema_description:"scheduled: the IANA time zone of the cron expression, e.g. 'America/New_York'. Default UTC."`
	DelaySeconds    float64           `json:"delay_seconds,omitempty" jsonschema_description:"delayed: seconds from now until it fires."`
	At              string            `json:"at,omitempty" jsonschema_description:"at_time: when to fire, RFC 3339 ('2026-02-12T09:00:00Z' or with an offset); without an offset the time is read in 'tz' (default UTC)."`
	IntervalSeconds float64           `json:"interval_seconds,omitempty" jsonschema_description:"heartbeat: seconds between firings (at least 1)."`
	Pattern         string            `json:"pattern,omitempty" jsonschema_description:"on_event: a glob on the event type, e.g. 'node.completed', 'node.*', 'message.received'."`
	Filter          map[string]string `json:"filter,omitempty" jsonschema_description:"on_event: fields the event must have. Keys: node, worker, run, agent (equal), text (substring), data.<key> (a field of the event's data, compared as text)."`
	IdleSeconds     float64           `json:"idle_seconds,omitempty" jsonschema_description:"on_idle: seconds without any activity before it fires (at least 1)."`
	Action          string            `json:"action,omitempty" jsonschema_description:"What you will do when it fires: the task you are woken with. Required unless you give 'to' and 'message'."`
	To              string            `json:"to,omitempty" jsonschema_description:"To send a message instead of waking you: the recipient. Give 'message' too."`
	Message         string            `json:"message,omitempty" jsonschema_description:"The text of the message to send to 'to' when it fires."`
	Node            string            `json:"node,omitempty" jsonschema_description:"To run a work node again instead of waking you: its id. The node goes back on the board when it fires."`
}

// cancelArgs are the arguments of the cancel_trigger tool.
type cancelArgs struct {
	TriggerID string `json:"trigger_id" jsonschema_description:"The id of the trigger to cancel, as list_triggers shows it (e.g. 't3')."`
}

type listArgs struct{}

const scheduleGuidance = `Use schedule to act later or on a condition — you are not running all the time; triggers wake you.
- Pick the type: delayed (a reminder: delay_seconds), at_time (an alarm: at, RFC 3339), scheduled (recurring on cron, in tz, default UTC), heartbeat (a periodic check-in: interval_seconds; often you will find nothing to do), on_event (react to an event: pattern such as "node.completed", and filter such as {"node": "n2"}), on_idle (a dead man's switch: idle_seconds without activity).
- action is the task you will be woken with: write it so that you will know what to do without remembering why, e.g. "Check whether the build of n4 finished; if it failed, reassign it." To send a message instead, give to and message; to put a work node back on the board (run it again), give node.
- Give only the fields of the type you picked. Examples: {"type":"delayed","delay_seconds":1800,"action":"Check the build."}; {"type":"scheduled","cron":"0 9 * * MON","tz":"Europe/Paris","action":"Write the weekly report."}; {"type":"on_event","pattern":"node.completed","filter":{"node":"n2"},"action":"Start the synthesis."}.
- Recurring triggers keep firing until you cancel them: use list_triggers to see yours and cancel_trigger when one is no longer needed.`

// Tools returns the tools an agent uses to manage its triggers: schedule, list_triggers and
// cancel_trigger. Triggers made by schedule record by as their creator.
func (s *Scheduler) Tools(by string) []tools.Tool { return s.ToolsFor(by, "") }

// ToolsFor is Tools for an agent whose tool calls may be repeated after a crash: schedule keys
// each trigger by scope and the call's ID (tools.CallFrom), so a repeated call finds the
// trigger its first run made. scope must name the conversation the call IDs come from (its
// assignment, say), since IDs are unique only within one.
func (s *Scheduler) ToolsFor(by, scope string) []tools.Tool {
	scheduleTool := tools.Func("schedule",
		"Schedule a future action: a one-off reminder (delayed, at_time), a recurring one (scheduled cron, heartbeat), or a reaction to an event (on_event) or to inactivity (on_idle).",
		func(ctx context.Context, a scheduleArgs) (string, error) {
			t, err := a.trigger(by)
			if err != nil {
				return "", err
			}
			if c, ok := tools.CallFrom(ctx); ok && scope != "" && c.ID != "" {
				t.Key = scope + "/" + c.ID
			}
			added, err := s.Add(t)
			if err != nil {
				return "", toolError(err)
			}
			return "Scheduled " + describe(added, s.now()), nil
		}, tools.WithGuidance(scheduleGuidance))
	list := tools.Func("list_triggers",
		"List your triggers: the active ones with when they fire next, then recent ones that have fired or been cancelled.",
		func(ctx context.Context, _ listArgs) (string, error) {
			return s.listText(), nil
		}, tools.Safe(), tools.WithGuidance("Use list_triggers before scheduling something you may already have scheduled, and to find the id to cancel."))
	cancel := tools.Func("cancel_trigger",
		"Cancel one of your triggers by its id.",
		func(ctx context.Context, a cancelArgs) (string, error) {
			id := strings.TrimSpace(a.TriggerID)
			if err := s.Cancel(id); err != nil {
				switch {
				case errors.Is(err, ErrUnknownTrigger):
					return "", fmt.Errorf("there is no trigger %q; list_triggers shows the ids", id)
				case errors.Is(err, ErrNotActive):
					t, _ := s.Get(id)
					return "", fmt.Errorf("trigger %s is already %s; nothing to cancel", id, t.Status)
				}
				return "", err
			}
			return fmt.Sprintf("Cancelled trigger %s.", id), nil
		}, tools.WithGuidance("Cancel a recurring trigger (scheduled, heartbeat, on_event, on_idle) once it has served its purpose; one-off triggers end by themselves after firing."))
	return []tools.Tool{scheduleTool, list, cancel}
}

// argNames maps the fields of a Trigger to the schedule tool's arguments.
var argNames = map[string]string{
	"delay":       "delay_seconds",
	"interval":    "interval_seconds",
	"idle":        "idle_seconds",
	"action.task": "action",
	"action.to":   "to",
	"action.body": "message",
}

// toolError rephrases Add's errors in terms of the tool's arguments.
func toolError(err error) error {
	var fe *FieldError
	if !errors.As(err, &fe) {
		return err
	}
	field := fe.Field
	if n, ok := argNames[field]; ok {
		field = n
	}
	return fmt.Errorf("%s: %s", field, fe.Problem)
}

// seconds converts a number of seconds from a tool call.
func seconds(field string, v float64) (Duration, error) {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > math.MaxInt64/float64(time.Second) {
		return 0, fmt.Errorf("%s: %v is not a usable number of seconds", field, v)
	}
	return Duration(v * float64(time.Second)), nil
}

// trigger builds the trigger the arguments describe.
func (a scheduleArgs) trigger(by string) (Trigger, error) {
	t := Trigger{
		Type:    Type(strings.TrimSpace(a.Type)),
		Cron:    strings.TrimSpace(a.Cron),
		TZ:      strings.TrimSpace(a.TZ),
		Pattern: strings.TrimSpace(a.Pattern),
		Filter:  a.Filter,
		By:      by,
	}
	var err error
	if t.Delay, err = seconds("delay_seconds", a.DelaySeconds); err != nil {
		return Trigger{}, err
	}
	if t.Interval, err = seconds("interval_seconds", a.IntervalSeconds); err != nil {
		return Trigger{}, err
	}
	if t.Idle, err = seconds("idle_seconds", a.IdleSeconds); err != nil {
		return Trigger{}, err
	}
	if t.Type == Heartbeat && a.IntervalSeconds > 0 && a.IntervalSeconds < 1 {
		return Trigger{}, errors.New("interval_seconds: at least 1")
	}
	if t.Type == OnIdle && a.IdleSeconds > 0 && a.IdleSeconds < 1 {
		return Trigger{}, errors.New("idle_seconds: at least 1")
	}
	if at := strings.TrimSpace(a.At); at != "" {
		if t.At, err = parseAt(at, t.TZ); err != nil {
			return Trigger{}, err
		}
		if t.Type == AtTime {
			t.TZ = "" // used to read at; tz belongs to scheduled triggers
		}
	}
	switch {
	case strings.TrimSpace(a.Node) != "":
		if a.To != "" || a.Message != "" {
			return Trigger{}, errors.New("node: give either node (run a node) or to and message (send a message), not both")
		}
		t.Action = Action{Kind: RunNode, Node: strings.TrimSpace(a.Node), Task: a.Action}
	case a.To != "" || a.Message != "":
		if strings.TrimSpace(a.To) == "" {
			return Trigger{}, errors.New("to: required with message: who gets the message")
		}
		if strings.TrimSpace(a.Message) == "" {
			return Trigger{}, errors.New("message: required with to: the text to send")
		}
		t.Action = Action{Kind: Message, To: strings.TrimSpace(a.To), Body: a.Message, Task: a.Action}
	default:
		if strings.TrimSpace(a.Action) == "" {
			return Trigger{}, errors.New("action: required: the task you will be woken with (or give to and message to send a message)")
		}
		t.Action = Action{Kind: Wake, Task: a.Action}
	}
	return t, nil
}

// parseAt reads an RFC 3339 time; one without an offset is read in tz (default UTC).
func parseAt(s, tz string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	loc := time.UTC
	if tz != "" {
		l, err := time.LoadLocation(tz)
		if err != nil {
			return time.Time{}, fmt.Errorf("tz: unknown time zone %q (want an IANA name like \"Europe/Paris\")", tz)
		}
		loc = l
	}
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("at: %q is not an RFC 3339 time like \"2026-02-12T09:00:00Z\"", s)
}

// describe says in one line what a trigger is and when it fires.
func describe(t Trigger, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s", t.ID, t.Type)
	switch t.Type {
	case Scheduled:
		fmt.Fprintf(&b, " %q", t.Cron)
		if t.TZ != "" {
			fmt.Fprintf(&b, " in %s", t.TZ)
		}
	case Delayed:
		fmt.Fprintf(&b, " %s", t.Delay)
	case Heartbeat:
		fmt.Fprintf(&b, " every %s", t.Interval)
	case OnEvent:
		fmt.Fprintf(&b, " %q", t.Pattern)
		if len(t.Filter) > 0 {
			keys := make([]string, 0, len(t.Filter))
			for k := range t.Filter {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for i, k := range keys {
				if i == 0 {
					b.WriteString(" where ")
				} else {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "%s=%q", k, t.Filter[k])
			}
		}
	case OnIdle:
		fmt.Fprintf(&b, " after %s idle", t.Idle)
	}
	b.WriteString(")")
	switch {
	case t.Status != Active:
		fmt.Fprintf(&b, ", %s", t.Status)
		if !t.LastFired.IsZero() {
			fmt.Fprintf(&b, " at %s", t.LastFired.UTC().Format(time.RFC3339))
		}
	case t.Type == OnEvent:
		b.WriteString(", fires on each matching event")
	case !t.Next.IsZero():
		when := t.Next.UTC().Format(time.RFC3339)
		if d := t.Next.Sub(now); d > 0 {
			fmt.Fprintf(&b, ", next at %s (in %s)", when, d.Round(time.Second))
		} else {
			fmt.Fprintf(&b, ", due now (%s)", when)
		}
	}
	if t.Fired > 0 && t.Status == Active {
		fmt.Fprintf(&b, ", fired %d×", t.Fired)
	}
	switch t.Action.Kind {
	case Wake:
		fmt.Fprintf(&b, "; wake: %s", t.Action.Task)
	case RunNode:
		fmt.Fprintf(&b, "; run node %s", t.Action.Node)
	case Message:
		fmt.Fprintf(&b, "; message to %s: %s", t.Action.To, t.Action.Body)
	}
	return b.String()
}

// maxInactiveListed caps how many fired or cancelled triggers list_triggers shows.
const maxInactiveListed = 10

func (s *Scheduler) listText() string {
	all := s.List()
	now := s.now()
	var active, inactive []Trigger
	for _, t := range all {
		if t.Status == Active {
			active = append(active, t)
		} else {
			inactive = append(inactive, t)
		}
	}
	var b strings.Builder
	if len(active) == 0 {
		b.WriteString("No active triggers.")
	} else {
		fmt.Fprintf(&b, "%d active trigger(s):", len(active))
		for _, t := range active {
			b.WriteString("\n- " + describe(t, now))
		}
	}
	if len(inactive) > 0 {
		shown := inactive
		if len(shown) > maxInactiveListed {
			shown = shown[len(shown)-maxInactiveListed:]
		}
		fmt.Fprintf(&b, "\nDone (%d", len(inactive))
		if len(shown) < len(inactive) {
			fmt.Fprintf(&b, ", latest %d shown", len(shown))
		}
		b.WriteString("):")
		for _, t := range shown {
			b.WriteString("\n- " + describe(t, now))
		}
	}
	return b.String()
}
