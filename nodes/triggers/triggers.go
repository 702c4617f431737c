// Package triggers gives an agent temporal agency: triggers that wake it, run a node or send
// a message at some later time or on some condition, kept so that they survive a restart, and
// the tools an agent uses to manage its own triggers.
//
// A trigger is [Scheduled] (cron), [Delayed], [AtTime], [Heartbeat], [OnEvent] or [OnIdle]. A
// [Scheduler] holds one agent's triggers: [Open] loads them (from triggers.json, or a [Keeper]),
// [Scheduler.Start] fires each when it comes due, and [Scheduler.Tools] gives the agent
// schedule, list_triggers and cancel_trigger. An [Alarm] waits for the next due time of any
// number of agents at rest on one goroutine. Tests drive time with a [FakeClock].
//
// The trigger types, missed due times, the file's format and agents at rest are in
// docs/squad.md (Triggers).
package triggers

import (
	"encoding/json"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	_ "time/tzdata" // time zones for cron triggers, also where the system has no zoneinfo

	"github.com/robfig/cron/v3"

	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/workspace"
)

// Type is the kind of a trigger.
type Type string

// The trigger types.
const (
	Scheduled Type = "scheduled" // recurring, on a cron expression
	Delayed   Type = "delayed"   // once, a delay after creation
	AtTime    Type = "at_time"   // once, at a wall-clock time
	Heartbeat Type = "heartbeat" // recurring, every interval
	OnEvent   Type = "on_event"  // on every matching event
	OnIdle    Type = "on_idle"   // after a period without activity
)

// Types returns the trigger types in a fixed order.
func Types() []Type { return []Type{Scheduled, Delayed, AtTime, Heartbeat, OnEvent, OnIdle} }

// Valid reports whether t is one of [Types].
func (t Type) Valid() bool {
	switch t {
	case Scheduled, Delayed, AtTime, Heartbeat, OnEvent, OnIdle:
		return true
	}
	return false
}

// timed reports whether triggers of type t fire at a time (Next), rather than on an event.
func (t Type) timed() bool { return t != OnEvent }

// ActionKind is what a trigger does when it fires.
type ActionKind string

// The action kinds.
const (
	Wake    ActionKind = "wake"     // wake the agent with Action.Task
	RunNode ActionKind = "run_node" // run the work node Action.Node
	Message ActionKind = "message"  // send Action.Body to Action.To
)

// Action is what a trigger does when it fires. The scheduler does not carry it out: it hands it
// to the fire function in a [Firing].
type Action struct {
	Kind ActionKind `json:"kind"`
	Task string     `json:"task,omitempty"` // wake: what to do (for a message: an optional note)
	Node string     `json:"node,omitempty"` // run_node: the node to run
	To   string     `json:"to,omitempty"`   // message: the recipient
	Body string     `json:"body,omitempty"` // message: the text to send
}

// Status is where a trigger is in its life.
type Status string

// The statuses.
const (
	Active    Status = "active"    // waiting to fire (again)
	Fired     Status = "fired"     // a one-shot trigger that has fired
	Cancelled Status = "cancelled" // cancelled before it was done
)

// Duration is a [time.Duration] that is written to JSON as a number of seconds (fractions
// allowed: 1.5 is 1500ms). It reads a number of seconds or a Go duration string ("90m", "1h30m").
type Duration time.Duration

// D returns d as a [time.Duration].
func (d Duration) D() time.Duration { return time.Duration(d) }

// String formats d like a [time.Duration].
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes d as a number of seconds.
func (d Duration) MarshalJSON() ([]byte, error) {
	return []byte(strconv.FormatFloat(time.Duration(d).Seconds(), 'f', -1, 64)), nil
}

// UnmarshalJSON reads a number of seconds or a Go duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("duration %q: want seconds or a duration like \"90m\"", s)
		}
		*d = Duration(v)
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("duration %s: want seconds or a duration like \"90m\"", b)
	}
	*d = Duration(f * float64(time.Second))
	return nil
}

// Trigger is one of an agent's triggers. Which of the type-specific fields are used depends on
// Type; the others must be empty.
type Trigger struct {
	ID     string `json:"id"`           // "t1", "t2"..., assigned by Add
	Type   Type   `json:"type"`         // what makes it fire
	Action Action `json:"action"`       // what it does
	Status Status `json:"status"`       // active, fired or cancelled
	By     string `json:"by,omitempty"` // who created it
	// Key, when set, makes Add idempotent: adding a trigger with the key of an existing one
	// returns that one. Tools set it from the call that asks, so a call repeated after a crash
	// does not schedule twice.
	Key string `json:"key,omitempty"`

	Cron string `json:"cron,omitempty"` // Scheduled: the cron expression
	TZ   string `json:"tz,omitempty"`   // Scheduled: IANA time zone of Cron (default UTC)

	Delay Duration  `json:"delay,omitzero"` // Delayed: fires at Created+Delay
	At    time.Time `json:"at,omitzero"`    // AtTime: fires at At

	Interval Duration `json:"interval,omitzero"` // Heartbeat: fires every Interval

	// OnEvent: Pattern is a glob (path.Match syntax) on the event type: "node.*",
	// "message.received", "*". Filter narrows the events further; every entry must match. Keys:
	// "agent", "node", "worker", "run" (equal to the event's field), "text" (a substring of the
	// event's text) and "data.<key>" (the value at <key> in the event's Data object — a dotted
	// key walks into nested objects — compared as its string form: a JSON string's text, any
	// other value's compact JSON, such as 3, true or null).
	Pattern string            `json:"pattern,omitempty"`
	Filter  map[string]string `json:"filter,omitempty"`

	Idle Duration `json:"idle,omitzero"` // OnIdle: fires after Idle without activity

	Created   time.Time `json:"created"`             // when it was added
	Next      time.Time `json:"next,omitzero"`       // when it is due next (zero: on_event, or done)
	LastFired time.Time `json:"last_fired,omitzero"` // when it last fired
	Fired     int       `json:"fired,omitempty"`     // how many times it has fired
}

// clone returns a copy of t that shares no map with it.
func (t Trigger) clone() Trigger {
	if t.Filter != nil {
		f := make(map[string]string, len(t.Filter))
		for k, v := range t.Filter {
			f[k] = v
		}
		t.Filter = f
	}
	return t
}

// Firing is one firing of a trigger, handed to the fire function.
type Firing struct {
	Trigger Trigger         // the trigger as it is after this firing (Fired, LastFired, Next, Status updated)
	At      time.Time       // when it was due (for on_event: when the event was observed)
	Late    bool            // it came due while the process was down
	Event   *eventlog.Event // the matching event, for on_event
}

// FieldError is the error Add returns for an invalid trigger: Field names the offending field
// by its JSON name ("cron", "delay", "action.task", "filter.node"...).
type FieldError struct {
	Field   string
	Problem string
}

// Error returns "triggers: <field>: <problem>".
func (e *FieldError) Error() string { return "triggers: " + e.Field + ": " + e.Problem }

func fieldErr(field, format string, a ...any) error {
	return &FieldError{Field: field, Problem: fmt.Sprintf(format, a...)}
}

var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseCron parses a cron expression as scheduled triggers take it: five fields ("minute hour
// day-of-month month day-of-week") or a descriptor like @hourly, in time zone tz (an IANA name;
// "" is UTC unless the expression starts with TZ= or CRON_TZ=). Its errors are *FieldError.
func ParseCron(expr, tz string) (cron.Schedule, error) { return schedule(expr, tz) }

// schedule parses the cron expression of t in its time zone.
func schedule(expr, tz string) (cron.Schedule, error) {
	expr = strings.TrimSpace(expr)
	if expr == "" {
		return nil, fieldErr("cron", "required for a scheduled trigger (for example \"0 9 * * MON\" or \"@hourly\")")
	}
	hasTZ := strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=")
	if tz != "" {
		if hasTZ {
			return nil, fieldErr("tz", "given both as the tz field and as a TZ= prefix of the cron expression; give one")
		}
		if _, err := time.LoadLocation(tz); err != nil {
			return nil, fieldErr("tz", "unknown time zone %q (want an IANA name like \"Europe/Paris\")", tz)
		}
		expr = "CRON_TZ=" + tz + " " + expr
	} else if !hasTZ {
		expr = "CRON_TZ=UTC " + expr
	}
	s, err := cronParser.Parse(expr)
	if err != nil {
		return nil, fieldErr("cron", "%v (want five fields \"minute hour day-of-month month day-of-week\", or a descriptor like @hourly)", err)
	}
	return s, nil
}

// filterKeys are the filter keys besides "data.<key>".
var filterKeys = []string{"agent", "node", "worker", "run", "text"}

// validate checks t, an incoming trigger, and returns its cron schedule for a scheduled one.
func validate(t *Trigger) (cron.Schedule, error) {
	if t.Type == "" {
		return nil, fieldErr("type", "required: one of %s", typeList())
	}
	if !t.Type.Valid() {
		return nil, fieldErr("type", "unknown type %q: want one of %s", t.Type, typeList())
	}
	if err := validateAction(t.Action); err != nil {
		return nil, err
	}
	// Fields of other types must be empty, so that a mistaken type is caught.
	unused := []struct {
		field string
		owner Type
		set   bool
	}{
		{"cron", Scheduled, t.Cron != ""},
		{"tz", Scheduled, t.TZ != ""},
		{"delay", Delayed, t.Delay != 0},
		{"at", AtTime, !t.At.IsZero()},
		{"interval", Heartbeat, t.Interval != 0},
		{"pattern", OnEvent, t.Pattern != ""},
		{"filter", OnEvent, len(t.Filter) > 0},
		{"idle", OnIdle, t.Idle != 0},
	}
	for _, u := range unused {
		if u.set && u.owner != t.Type {
			return nil, fieldErr(u.field, "only for %s triggers, not %s", u.owner, t.Type)
		}
	}
	switch t.Type {
	case Scheduled:
		return schedule(t.Cron, t.TZ)
	case Delayed:
		if t.Delay <= 0 {
			return nil, fieldErr("delay", "must be positive, got %s", t.Delay)
		}
	case AtTime:
		if t.At.IsZero() {
			return nil, fieldErr("at", "required for an at_time trigger")
		}
	case Heartbeat:
		if t.Interval <= 0 {
			return nil, fieldErr("interval", "must be positive, got %s", t.Interval)
		}
	case OnEvent:
		if t.Pattern == "" {
			return nil, fieldErr("pattern", "required for an on_event trigger (a glob on the event type, like \"node.*\")")
		}
		if _, err := path.Match(t.Pattern, ""); err != nil {
			return nil, fieldErr("pattern", "bad glob %q: %v", t.Pattern, err)
		}
		for k := range t.Filter {
			if !validFilterKey(k) {
				return nil, fieldErr("filter."+k, "unknown filter key %q: want one of %s or data.<key>", k, strings.Join(filterKeys, ", "))
			}
		}
	case OnIdle:
		if t.Idle <= 0 {
			return nil, fieldErr("idle", "must be positive, got %s", t.Idle)
		}
	}
	return nil, nil
}

func validFilterKey(k string) bool {
	for _, f := range filterKeys {
		if k == f {
			return true
		}
	}
	rest, ok := strings.CutPrefix(k, "data.")
	if !ok || rest == "" {
		return false
	}
	for _, part := range strings.Split(rest, ".") {
		if part == "" {
			return false
		}
	}
	return true
}

func validateAction(a Action) error {
	switch a.Kind {
	case "":
		return fieldErr("action.kind", "required: wake, run_node or message")
	case Wake:
		if strings.TrimSpace(a.Task) == "" {
			return fieldErr("action.task", "required for a wake action: what to do when woken")
		}
	case RunNode:
		if strings.TrimSpace(a.Node) == "" {
			return fieldErr("action.node", "required for a run_node action: the node to run")
		}
	case Message:
		if strings.TrimSpace(a.To) == "" {
			return fieldErr("action.to", "required for a message action: the recipient")
		}
		if strings.TrimSpace(a.Body) == "" {
			return fieldErr("action.body", "required for a message action: the text to send")
		}
	default:
		return fieldErr("action.kind", "unknown action %q: want wake, run_node or message", a.Kind)
	}
	return nil
}

func typeList() string {
	var s []string
	for _, t := range Types() {
		s = append(s, string(t))
	}
	return strings.Join(s, ", ")
}

// idNumber returns n for an id "t<n>", or 0.
func idNumber(id string) int {
	n, _ := workspace.Number(id, "t")
	return n
}
