package replay

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/workspace"
)

// Facts are what a replay must reproduce of a run: its output, its board, its messages and its
// published files. Times are left out: they are the clock's, not the run's.
type Facts struct {
	Output   string `json:"output"`
	Finished bool   `json:"finished"`
	// Board is the run's board (nodes and workers) without its times.
	Board json.RawMessage `json:"board"`
	// Messages are the run's messages as "from → to: body", sorted: workers running at once
	// send theirs in an order the scheduler picks.
	Messages []string `json:"messages"`
	// Files are the published files, by path in the run's folder, with their contents.
	Files map[string]string `json:"files"`
}

// factsOf reads the facts of the run res ended in the agent's home.
func factsOf(home workspace.Home, res nodes.Result) (Facts, error) {
	f := Facts{Output: res.Output, Finished: res.Finished, Files: map[string]string{}}
	board, err := withoutTimes(res.Board)
	if err != nil {
		return Facts{}, err
	}
	f.Board = board
	msgs, err := nodes.ReadFiles(nodes.WithHome(string(home))).Messages(res.RunID)
	if err != nil {
		return Facts{}, err
	}
	for _, m := range msgs {
		f.Messages = append(f.Messages, fmt.Sprintf("%s → %s: %s", m.From, m.To, m.Body))
	}
	slices.Sort(f.Messages)
	dir := home.Run(res.RunID)
	for _, n := range res.Board.Nodes {
		for _, p := range n.Published {
			path := filepath.Join(dir.Node(n.ID).Published(), p)
			b, err := os.ReadFile(path)
			if err != nil {
				return Facts{}, fmt.Errorf("replay: a published file: %w", err)
			}
			rel, _ := filepath.Rel(string(dir), path)
			f.Files[filepath.ToSlash(rel)] = string(b)
		}
	}
	return f, nil
}

// withoutTimes returns v as JSON without its times: the values of keys named "created",
// "updated", "time" or ending in "_at".
func withoutTimes(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		return nil, err
	}
	var strip func(x any)
	strip = func(x any) {
		switch x := x.(type) {
		case map[string]any:
			for k, v := range x {
				if k == "created" || k == "updated" || k == "time" || strings.HasSuffix(k, "_at") {
					delete(x, k)
					continue
				}
				strip(v)
			}
		case []any:
			for _, v := range x {
				strip(v)
			}
		}
	}
	strip(x)
	return json.Marshal(x)
}
