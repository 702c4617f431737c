package langgraphapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// runLog keeps the events of a run, for its streams and for clients that join it later or come
// back after losing their connection (Last-Event-ID), and what waiting for it answers.
type runLog struct {
	mu     sync.Mutex
	events []sseEvent // events[i] has ID i+1
	ended  bool
	result json.RawMessage
	wake   chan struct{} // closed when an event is added or the run ends
}

type sseEvent struct {
	name string
	data json.RawMessage
}

func newRunLog() *runLog { return &runLog{wake: make(chan struct{})} }

// add appends an event whose data is v's JSON.
func (l *runLog) add(name string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		name, data = "error", mustJSON(errorJSON(fmt.Errorf("the %s event cannot be encoded: %w", name, err)))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, sseEvent{name, data})
	close(l.wake)
	l.wake = make(chan struct{})
}

// end marks the run ended with the answer of a wait.
func (l *runLog) end(result json.RawMessage) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		return
	}
	l.ended, l.result = true, result
	close(l.wake)
}

// since returns the events after the first n, whether the run has ended, and a channel closed
// when there is more.
func (l *runLog) since(n int) ([]sseEvent, bool, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n = min(max(n, 0), len(l.events))
	return l.events[n:len(l.events):len(l.events)], l.ended, l.wake
}

// len is the number of events so far.
func (l *runLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.events)
}

// stream writes the log's events after the first from as server-sent events until the run ends
// or the client goes away; gone is called in that case.
func (l *runLog) stream(w http.ResponseWriter, r *http.Request, from int, gone func()) {
	startStream(w)
	if !l.pump(w, r, from, strconv.Itoa, nil) && gone != nil {
		gone()
	}
}

// startStream begins an answer of server-sent events.
func startStream(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	flush(w)
}

// pump writes the log's events after the first from, the nth with the ID id(n), leaving out
// those whose names keep refuses (keep nil keeps all), until the run ends (true) or the client
// goes away (false).
func (l *runLog) pump(w http.ResponseWriter, r *http.Request, from int, id func(int) string, keep func(string) bool) bool {
	for {
		evs, ended, wake := l.since(from)
		for _, ev := range evs {
			from++
			if keep != nil && !keep(ev.name) {
				continue
			}
			if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\nid: %s\n\n", ev.name, ev.data, id(from)); err != nil {
				return false
			}
		}
		flush(w)
		if ended {
			return true
		}
		select {
		case <-wake:
		case <-r.Context().Done():
			return false
		}
	}
}

// wait writes what the run answers once it ends, with a newline every second before (JSON
// readers skip them) so that proxies keep the connection. When the client goes away first, gone
// is called.
func (l *runLog) wait(w http.ResponseWriter, r *http.Request, gone func()) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	flush(w)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		_, ended, wake := l.since(0)
		if ended {
			l.mu.Lock()
			result := l.result
			l.mu.Unlock()
			_, _ = w.Write(append(result, '\n')) // the client went away
			return
		}
		select {
		case <-wake:
		case <-tick.C:
			_, _ = w.Write([]byte("\n"))
			flush(w)
		case <-r.Context().Done():
			if gone != nil {
				gone()
			}
			return
		}
	}
}

// lastEventID reads the Last-Event-ID header: the number of events the client has, or -1 when
// it has not said.
func lastEventID(r *http.Request) int {
	v := r.Header.Get("Last-Event-ID")
	if v == "" {
		return -1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// flush sends what was written so far, through writers that wrap w (Unwrap) too.
func flush(w http.ResponseWriter) {
	_ = http.NewResponseController(w).Flush() // a writer that cannot flush sends at the end; a gone client is seen on the next write
}

// errorJSON is an error as the API's error events and wait answers carry it.
func errorJSON(err error) map[string]string {
	name := fmt.Sprintf("%T", err)
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '.' || name[i] == '*' {
			name = name[i+1:]
			break
		}
	}
	return map[string]string{"error": name, "message": err.Error()}
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only called with maps of strings and JSON values
	}
	return b
}
