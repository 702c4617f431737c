package a2a

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/agiraph/agiraph/internal/a2awire"
)

// stream is message/stream, or tasks/resubscribe: it answers a stream of server-sent events,
// each a JSON-RPC response: the task as it is, then its updates until it reaches a final
// state (it ended, or waits for the client's answer) or the client goes.
func (c *call) stream(w http.ResponseWriter, r *http.Request, raw json.RawMessage, resubscribe bool) {
	var d delivered
	var err error
	if resubscribe {
		var p a2awire.TaskParams
		if err = c.params(raw, &p); err == nil {
			d.run = p.ID
			if d.state, _, _, err = c.a.status(p.ID); err == nil {
				d.after, err = c.a.cursor(p.ID)
			}
		}
	} else {
		var p a2awire.SendParams
		if err = c.params(raw, &p); err == nil {
			d, err = c.deliver(r.Context(), p)
		}
	}
	var t Task
	if err == nil {
		t, err = taskNow(c.a, d.run, nil)
	}
	if err != nil {
		reply(w, http.StatusOK, a2awire.Response{ID: c.id, Error: asRPC(err)})
		return
	}
	if !resubscribe && d.state == StateInputRequired { // answered: the squad is at it again
		t.Status = Status{State: StateWorking, Timestamp: now()}
	}
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	send := func(v any) bool {
		data, err := json.Marshal(a2awire.Response{JSONRPC: "2.0", ID: c.id, Result: c.v.Event(v)})
		if err != nil {
			return false
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", data); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send(t) || a2awire.Final(t.Status.State) {
		return
	}
	c.a.watch(r.Context(), d.run, d.after, t.Status.State, send)
}
