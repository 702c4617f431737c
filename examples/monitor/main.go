// Command monitor runs an agent that lives on: every cycle it looks at a folder, reports the
// files that are new since it last looked, remembers what it reported, and sleeps until its
// heartbeat wakes it again.
//
//	go run ./examples/monitor -dir ./inbox -every 30s
//
// It shows the long-running side of a squad: infinite mode (finish ends a cycle, not the run),
// a heartbeat trigger the agent schedules for itself, and long-term memory that keeps it from
// reporting a file twice — across cycles and across restarts. With no API key it plays an
// offline coordinator; with one (or -model) a real model does the same with the same tools.
// Ctrl-C stops it; run it again and it remembers what it has reported.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/tools"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "monitor:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer, getenv func(string) string) (err error) {
	fs := flag.NewFlagSet("monitor", flag.ContinueOnError)
	fs.SetOutput(stdout)
	dir := fs.String("dir", ".", "the folder to watch")
	every := fs.Duration("every", 30*time.Second, "how often the agent wakes up (at least 1s)")
	cycles := fs.Int("cycles", 0, "stop after this many cycles (0: until Ctrl-C)")
	home := fs.String("home", ".agiraph/monitor", "the agent's home folder: memory, triggers, runs")
	model := fs.String("model", "", "the coordinator's model, as provider/model (default: the offline coordinator)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if *every < time.Second {
		return fmt.Errorf("-every %s: the heartbeat is at least 1s", *every)
	}
	watched, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	opts := []nodes.Option{nodes.WithHome(*home), nodes.WithMode(nodes.Infinite), nodes.WithCoordinatorTools(listFolder(watched))}
	name := *model
	if name == "" {
		coord := offlineCoordinator(*every)
		name = coord.Name()
		opts = append(opts, nodes.WithModelOptions(models.WithModels(coord)))
	}
	opts = append(opts, nodes.WithModel(name))
	squad, err := nodes.New(opts...)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, squad.Close()) }()

	events, unsubscribe := squad.Subscribe(lastEvent(squad))
	defer unsubscribe()
	goal := fmt.Sprintf("Watch the folder %s. Every %s, report the files that appeared since your last report; never report a file twice.", watched, *every)
	r, err := squad.Start(ctx, goal)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Watching %s every %s with %s (Ctrl-C to stop)\n", watched, *every, name)
	n := 0
	for {
		select {
		case <-r.Done():
			_, err := r.Wait()
			if ctx.Err() != nil {
				return nil
			}
			return err
		case e := <-events:
			if e.Type != eventlog.CycleCompleted {
				continue
			}
			n++
			fmt.Fprintf(stdout, "%s  %s\n", e.Time.Format("15:04:05"), strings.TrimPrefix(e.Text, fmt.Sprintf("cycle %d: ", n)))
			if *cycles > 0 && n >= *cycles {
				if err := r.Pause(); err != nil {
					return err
				}
				_, err := r.Wait()
				return err
			}
		}
	}
}

func lastEvent(s *nodes.Squad) int64 {
	evs, _ := s.Events(0, 0)
	if len(evs) == 0 {
		return 0
	}
	return evs[len(evs)-1].Seq
}

// listFolder is the tool the agent looks at the folder with.
func listFolder(dir string) tools.Tool {
	return tools.Func("list_folder", "List the files in the watched folder.", func(context.Context, struct{}) (string, error) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return "", err
		}
		var names []string
		for _, e := range entries {
			if !e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
				names = append(names, e.Name())
			}
		}
		if len(names) == 0 {
			return "(no files)", nil
		}
		return strings.Join(names, "\n"), nil
	}, tools.Safe(), tools.WithGuidance("list_folder shows the watched folder's files, one per line."))
}

// reportedFile is where the agent keeps what it reported, in its memory.
const reportedFile = "knowledge/reported-files.md"

// offlineCoordinator plays the agent without a model: at each wake-up it lists the folder and
// reads its memory of what it reported, reports and remembers the new files, and finishes the
// cycle; at its first wake-up it schedules its heartbeat unless one is there already.
func offlineCoordinator(every time.Duration) *scripted.Model {
	return scripted.NewFunc("monitor", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		last := req.Messages[len(req.Messages)-1]
		results := map[string]string{} // the successful results of the last turn's calls
		for _, p := range last.Parts {
			if p.ToolResult != nil && !p.ToolResult.IsError {
				results[p.ToolResult.Name] = p.ToolResult.Content
			}
		}
		called := map[string]bool{}
		for _, m := range req.Messages {
			for _, c := range m.ToolCalls() {
				called[c.Name] = true
			}
		}
		turn := 0
		for _, m := range req.Messages {
			if m.Role == providers.Assistant {
				turn++
			}
		}
		id := func(i int) string { return fmt.Sprintf("t%d_%d", turn, i) }
		switch {
		case strings.Contains(last.Text(), "The run is ending"):
			return scripted.Turn{Text: "Noted."}, nil
		case results["list_folder"] != "":
			seen := map[string]bool{}
			for _, l := range strings.Split(results["memory_read"], "\n") {
				if i := strings.Index(l, "- "); i >= 0 {
					seen[strings.TrimSpace(l[i+2:])] = true
				}
			}
			var fresh []string
			for _, f := range strings.Split(results["list_folder"], "\n") {
				if f != "(no files)" && f != "" && !seen[f] {
					fresh = append(fresh, f)
				}
			}
			slices.Sort(fresh)
			report := "No new files."
			var calls []tools.Call
			if _, listed := results["list_triggers"]; listed && !strings.Contains(results["list_triggers"], "heartbeat") {
				calls = append(calls, call(id(len(calls)), "schedule", map[string]any{"type": "heartbeat", "interval_seconds": every.Seconds(), "action": "Look at the folder again."}))
			}
			if len(fresh) > 0 {
				report = "New files: " + strings.Join(fresh, ", ")
				calls = append(calls, call(id(len(calls)), "memory_write", map[string]string{"path": reportedFile, "content": "- " + strings.Join(fresh, "\n- ")}))
			}
			calls = append(calls, call(id(len(calls)), "finish", map[string]string{"output": report}))
			return scripted.Turn{Calls: calls}, nil
		case len(req.Messages) == 1 || strings.Contains(last.Text(), "[trigger"):
			calls := []tools.Call{
				call(id(0), "list_folder", struct{}{}),
				call(id(1), "memory_read", map[string]string{"path": reportedFile}),
			}
			if !called["schedule"] { // is the heartbeat, from this run or an earlier one, there?
				calls = append(calls, call(id(2), "list_triggers", struct{}{}))
			}
			return scripted.Turn{Calls: calls}, nil
		}
		return scripted.Turn{Calls: []tools.Call{call(id(0), "wait", struct{}{})}}, nil
	})
}

func call(id, name string, args any) tools.Call {
	raw, _ := json.Marshal(args)
	return tools.Call{ID: id, Name: name, Args: raw}
}
