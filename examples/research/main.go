// Command research runs a squad on a research goal: a coordinator grows a work board, workers
// research in parallel and publish their findings, a synthesis node writes the report, and
// the coordinator finishes with it in _output.md. Progress is printed as it happens.
//
//	go run ./examples/research "the state of AI chips"
//
// With no API key it plays a deterministic offline team, so it runs anywhere; at a terminal the
// team takes its time (-pace), so that a person can follow it, talk to it and stop it. With
// ANTHROPIC_API_KEY, OPENAI_API_KEY, OPENROUTER_API_KEY or GEMINI_API_KEY set, a reachable
// Ollama, or -model, it uses real models (and real web search when BRAVE_API_KEY,
// SERPER_API_KEY, TAVILY_API_KEY or SEARXNG_URL is set). Lines typed while it runs go to the
// coordinator ("@name text" to a worker). Ctrl-C stops it; the same command with -run <id>
// resumes it.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agiraph/agiraph/internal/cmdline"
	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/demo"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/replay"
	"github.com/agiraph/agiraph/providers/anthropic"
	_ "github.com/agiraph/agiraph/providers/langchain" // openai/, openrouter/, ollama/ and gemini/ models
	"github.com/agiraph/agiraph/tools/web"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "research:", err)
		os.Exit(1)
	}
}

// options are the command's flags.
type options struct {
	home, model, coordModel, runID string
	record                         string // -record: the cassette to write
	workers                        int
	offline, quiet                 bool
	timeout                        time.Duration
	pace                           time.Duration // the offline team's; see paced
	paceSet                        bool          // -pace was given
}

func parse(args []string, stderr io.Writer) (options, string, error) {
	fs := flag.NewFlagSet("research", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.home, "home", ".agiraph/research", "the agent's home folder: runs, events, memory and checkpoints live here")
	fs.StringVar(&o.model, "model", "", "the model of the coordinator and the workers, as provider/model (default: chosen from the API keys set, else the offline team)")
	fs.StringVar(&o.coordModel, "coordinator-model", "", "a different model for the coordinator")
	fs.StringVar(&o.runID, "run", "", "resume the run with this id instead of starting one")
	fs.StringVar(&o.record, "record", "", "record the run into this cassette file, to replay it offline in tests (see docs/replay.md)")
	fs.IntVar(&o.workers, "workers", 4, "how many assignments run at once")
	fs.BoolVar(&o.offline, "offline", false, "play the offline team even when a model is available")
	fs.BoolVar(&o.quiet, "quiet", false, "print only the result")
	fs.DurationVar(&o.timeout, "timeout", 0, "stop after this long (0: no limit); resume later with -run")
	fs.DurationVar(&o.pace, "pace", 0, fmt.Sprintf("how long the offline team takes for each answer, so that a person can follow it (default: %v when stdin and stdout are a terminal, else 0)", demo.Pace))
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: research [flags] \"goal\"\n       research [flags] -run <id>\n\n")
		fmt.Fprintf(stderr, "Runs a squad of agents on a research goal and writes the report to _output.md.\n")
		fmt.Fprintf(stderr, "Without an API key (or with -offline) a scripted offline team plays the run.\n\n")
		fmt.Fprintf(stderr, "flags (before or after the goal's words; \"--\" ends them):\n")
		fs.PrintDefaults()
	}
	words, err := cmdline.Parse(fs, args)
	if err != nil {
		return o, "", err
	}
	fs.Visit(func(f *flag.Flag) { o.paceSet = o.paceSet || f.Name == "pace" })
	goal := strings.TrimSpace(strings.Join(words, " "))
	if goal == "" && o.runID == "" {
		fs.Usage()
		return o, "", errors.New("give a goal, or -run <id> to resume")
	}
	if o.record != "" && o.runID != "" {
		return o, "", errors.New("-record records a new run from its start; it cannot record a resumed one (-run)")
	}
	return o, goal, nil
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer, getenv func(string) string) (err error) {
	o, goal, err := parse(args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	model := o.model
	if model == "" && !o.offline {
		model = models.Default(getenv)
	}
	opts := []nodes.Option{nodes.WithHome(o.home), nodes.WithMaxConcurrent(o.workers)}
	team := "offline team"
	if model == "" {
		opts = append(opts, demo.Team(demo.WithPace(o.paced(stdin, stdout)))...)
	} else {
		team = model
		opts = append(opts, nodes.WithModel(model))
		if _, err := web.BackendFromEnv(getenv); err != nil && strings.HasPrefix(model, "anthropic/") {
			// No search backend: let Claude search the web with Anthropic's own server tool.
			opts = append(opts, nodes.WithModelOptions(models.WithProvider("anthropic", anthropic.Provider(anthropic.WithWebSearch(anthropic.WebSearch{MaxUses: 5})))))
			team += " with Anthropic web search"
		}
		if o.coordModel != "" {
			opts = append(opts, nodes.WithCoordinatorModel(o.coordModel))
			team += ", coordinator " + o.coordModel
		}
	}
	var rec *replay.Recorder
	if o.record != "" {
		if rec, err = replay.Record(o.record); err != nil {
			return err
		}
		opts = append(opts, nodes.WithRecorder(rec))
	}
	squad, err := nodes.New(opts...)
	if err != nil {
		if rec != nil {
			err = errors.Join(err, rec.Close())
		}
		return err
	}
	defer func() { err = errors.Join(err, squad.Close()) }()

	last, _ := squad.Events(0, 0)
	var after int64
	if len(last) > 0 {
		after = last[len(last)-1].Seq
	}
	events, unsubscribe := squad.Subscribe(after)
	var seen atomic.Int64 // the last event printed
	progress, printed := make(chan struct{}, 1), make(chan struct{})
	go func() {
		defer close(printed)
		for e := range events {
			if e.Type == eventlog.TextDelta {
				continue // the models' text as it comes: the events printed say enough
			}
			if !o.quiet {
				printEvent(stdout, e)
			}
			seen.Store(e.Seq)
			select {
			case progress <- struct{}{}:
			default:
			}
		}
	}()

	var r *nodes.Run
	if o.runID != "" {
		fmt.Fprintf(stdout, "Resuming run %s (%s) in %s\n", o.runID, team, o.home)
		r, err = squad.Resume(ctx, o.runID)
	} else {
		fmt.Fprintf(stdout, "Goal: %s (%s) in %s\n", goal, team, o.home)
		r, err = squad.Start(ctx, goal)
	}
	var res nodes.Result
	if err == nil {
		go forwardInput(stdin, r)
		res, err = r.Wait()
	}
	// Print every event up to the run's last before the result.
	if evs, _ := squad.Events(after, 0); len(evs) > 0 {
	wait:
		for last := evs[len(evs)-1].Seq; seen.Load() < last; {
			select {
			case <-progress:
			case <-printed:
				break wait
			}
		}
	}
	unsubscribe()
	<-printed
	if rec != nil && err == nil {
		err = rec.Finish(squad, res)
		if err == nil {
			fmt.Fprintf(stdout, "Recorded the run in %s\n", o.record)
		}
	}
	if rec != nil && err != nil {
		err = errors.Join(err, rec.Close())
	}
	if err != nil {
		if ctx.Err() != nil && res.RunID != "" {
			fmt.Fprintf(stdout, "\nStopped. Resume with: go run ./examples/research -home %s -run %s\n", o.home, res.RunID)
			return nil
		}
		return err
	}
	fmt.Fprintf(stdout, "\nRun %s finished: %s\n\n%s\n", res.RunID, res.OutputPath, res.Output)
	if res.Usage.InputTokens+res.Usage.OutputTokens > 0 {
		fmt.Fprintf(stdout, "\nTokens: %d in, %d out; cost $%.4f\n", res.Usage.InputTokens, res.Usage.OutputTokens, res.Usage.CostUSD)
	}
	return nil
}

// paced returns the offline team's pace: -pace's, else demo.Pace when the command talks to a
// person at a terminal, else none (scripts and tests get their result at once).
func (o options) paced(stdin io.Reader, stdout io.Writer) time.Duration {
	if o.paceSet {
		return o.pace
	}
	return demo.PaceAt(stdin, stdout)
}

// forwardInput sends each line typed to the run's coordinator, or to a worker with "@name text".
func forwardInput(stdin io.Reader, r *nodes.Run) {
	if stdin == nil {
		return
	}
	sc := bufio.NewScanner(stdin)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		to := ""
		if strings.HasPrefix(line, "@") {
			name, rest, _ := strings.Cut(line[1:], " ")
			to, line = name, strings.TrimSpace(rest)
		}
		if err := r.Send(to, line); err != nil {
			fmt.Fprintln(os.Stderr, "research:", err)
		}
	}
}

// printEvent prints the events a person follows a run by.
func printEvent(w io.Writer, e eventlog.Event) {
	who := e.Worker
	if e.Node != "" {
		who = strings.TrimSpace(e.Node + " " + e.Worker)
	}
	text := strings.ReplaceAll(strings.TrimSpace(e.Text), "\n", " ")
	if len(text) > 140 {
		text = text[:140] + "…"
	}
	switch e.Type {
	case eventlog.AgentStarted, eventlog.AgentResumed, eventlog.AgentPaused, eventlog.AgentCompleted,
		eventlog.StageStarted, eventlog.StageReconvened,
		eventlog.NodeCreated, eventlog.NodeStarted, eventlog.NodeCompleted, eventlog.NodeFailed,
		eventlog.WorkerSpawned, eventlog.HumanQuestion, eventlog.HumanResponse:
		fmt.Fprintf(w, "%s  %-17s %-12s %s\n", e.Time.Format("15:04:05"), e.Type, who, text)
	case eventlog.MessageSent:
		var m struct{ From, To string }
		_ = e.Decode(&m)
		fmt.Fprintf(w, "%s  %-17s %-12s → %s: %s\n", e.Time.Format("15:04:05"), "message", m.From, m.To, text)
	case eventlog.ToolCalled:
		fmt.Fprintf(w, "%s  %-17s %-12s %s\n", e.Time.Format("15:04:05"), "tool", who, text)
	}
}
