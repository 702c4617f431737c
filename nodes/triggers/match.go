package triggers

import (
	"bytes"
	"encoding/json"
	"path"
	"strings"

	"github.com/agiraph/agiraph/nodes/eventlog"
)

// matches reports whether e fires the on_event trigger t.
func matches(t *Trigger, e *eventlog.Event) bool {
	if ok, _ := path.Match(t.Pattern, string(e.Type)); !ok {
		return false
	}
	var data map[string]json.RawMessage
	dataRead := false
	for k, want := range t.Filter {
		switch k {
		case "agent":
			if e.Agent != want {
				return false
			}
		case "node":
			if e.Node != want {
				return false
			}
		case "worker":
			if e.Worker != want {
				return false
			}
		case "run":
			if e.Run != want {
				return false
			}
		case "text":
			if !strings.Contains(e.Text, want) {
				return false
			}
		default:
			key, ok := strings.CutPrefix(k, "data.")
			if !ok {
				return false
			}
			if !dataRead {
				dataRead = true
				_ = json.Unmarshal(e.Data, &data) // not an object: nothing matches
			}
			got, ok := dataValue(data, key)
			if !ok || got != want {
				return false
			}
		}
	}
	return true
}

// dataValue returns the string form of the value at the dotted key in obj: a JSON string's
// text, any other value's compact JSON.
func dataValue(obj map[string]json.RawMessage, key string) (string, bool) {
	parts := strings.Split(key, ".")
	for i, p := range parts {
		raw, ok := obj[p]
		if !ok {
			return "", false
		}
		if i < len(parts)-1 {
			obj = nil
			if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
				return "", false
			}
			continue
		}
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			return s, true
		}
		var b bytes.Buffer
		if err := json.Compact(&b, raw); err != nil {
			return "", false
		}
		return b.String(), true
	}
	return "", false
}
