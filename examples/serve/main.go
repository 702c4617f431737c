// Command serve serves the local HTTP API of package server: agents to create, talk to and
// watch, for a web UI, a CLI or another program.
//
//	go run ./examples/serve -addr 127.0.0.1:8080 -root .agiraph/server
//
// With no API key (or with -offline) every agent plays the deterministic offline demo team, so
// it runs anywhere; when the server runs in a terminal the team takes its time (-pace), so that
// a person can follow it in the web UI. With ANTHROPIC_API_KEY, OPENAI_API_KEY,
// OPENROUTER_API_KEY or GEMINI_API_KEY set, or -model, agents use real models (a request may
// name only the models -models allows, and the server's own).
//
// Every request needs the server's token: made on first start and kept in <root>/token (or
// given with -token or AGIRAPH_TOKEN), printed at start with a URL that logs a browser in. Only
// requests for localhost, 127.0.0.1 and ::1 are served unless -allow-host names more, and only
// pages of the server's own origin or of -allow-origin may send them (see docs/security.md).
//
// Workers' commands and CLI agents run sandboxed where bubblewrap runs (see
// docs/runtimes.md): -sandbox=false turns that off, -no-network cuts harnessed workers' commands
// off the network, -keep-env NAME keeps a variable that looks like a secret in their
// environment.
//
// Ctrl-C (or SIGTERM) pauses the runs in progress and stops the server; started again on the
// same root, it finds its agents again and resumes the runs it paused, or that were in progress
// when it was killed (-resume=false leaves them for POST /agents/{id}/resume). It logs to its
// standard error; with -addr 127.0.0.1:0 it listens on a free port, which it prints.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/demo"
	_ "github.com/agiraph/agiraph/providers/anthropic" // anthropic/ models
	_ "github.com/agiraph/agiraph/providers/langchain" // openai/, openrouter/, ollama/ and gemini/ models
	"github.com/agiraph/agiraph/sandbox"
	"github.com/agiraph/agiraph/server"
	"github.com/agiraph/agiraph/server/host"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		os.Exit(1)
	}
}

// options are the command's flags.
type options struct {
	addr, root, model, token string
	embedder                 string // memory search by meaning, as provider/model
	offline, resume          bool
	record                   bool // -record: every run into a cassette
	hosts, origins, models   list
	maxRuns, maxText         int
	pace                     time.Duration // the offline team's
	paceSet                  bool          // -pace was given
	// the sandbox of the agents' workers
	sandbox, noNetwork bool
	keepEnv            list
	// questions to the human
	webhook        string
	webhookPrivate bool
	answerTimeout  time.Duration
}

// list is a flag that may be given several times, or as a comma-separated list.
type list []string

func (l *list) String() string { return strings.Join(*l, ",") }

func (l *list) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

func parse(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.addr, "addr", "127.0.0.1:8080", "the address to listen on")
	fs.StringVar(&o.root, "root", ".agiraph/server", "the folder agents live in (<root>/agents/<id>/)")
	fs.StringVar(&o.model, "model", "", "the agents' model, as provider/model (default: chosen from the API keys set, else the offline team)")
	fs.BoolVar(&o.offline, "offline", false, "play the offline team even when a model is available")
	fs.StringVar(&o.embedder, "embedder", "", "the embedder the agents' memory search ranks by meaning with, as provider/model (openai/text-embedding-3-small, ollama/nomic-embed-text; default: none, full-text ranking)")
	fs.DurationVar(&o.pace, "pace", 0, fmt.Sprintf("how long the offline team takes for each answer, so that a person can follow it (default: %v when standard output is a terminal, else 0)", demo.Pace))
	fs.BoolVar(&o.record, "record", false, "record every new run into a cassette, <root>/agents/<id>/recordings/<run>.cassette, served at GET /agents/<id>/runs/<run>/cassette (see docs/replay.md)")
	fs.BoolVar(&o.resume, "resume", true, "resume, on start, the runs that were in progress when the server stopped")
	fs.StringVar(&o.token, "token", "", "the token requests must carry (default: $AGIRAPH_TOKEN, else the one kept in <root>/token)")
	fs.Var(&o.hosts, "allow-host", "a host name (or name:port) the server is reached under besides localhost; repeatable")
	fs.Var(&o.origins, "allow-origin", "an origin (https://app.example) whose pages may call the API; repeatable")
	fs.Var(&o.models, "models", "models (provider/model) a request may name for its agent, besides the server's own; repeatable")
	fs.IntVar(&o.maxRuns, "max-runs", host.DefaultMaxRuns, "runs in progress at once; more are queued")
	fs.IntVar(&o.maxText, "max-text", server.DefaultMaxText, "the largest goal, message or answer, in bytes")
	fs.BoolVar(&o.sandbox, "sandbox", true, "sandbox the workers' commands and CLI agents (where bubblewrap runs): write only their scope, no secrets in their environment")
	fs.BoolVar(&o.noNetwork, "no-network", false, "cut the bash commands of harnessed workers off the network (CLI workers need it for their model)")
	fs.Var(&o.keepEnv, "keep-env", "an environment variable kept in the workers' sandbox although it looks like a secret; repeatable")
	fs.StringVar(&o.webhook, "webhook", "", "a URL each question to the human is posted to as well, as JSON (nodes.Question); the answer comes back through POST /agents/{id}/respond")
	fs.BoolVar(&o.webhookPrivate, "webhook-private", false, "let -webhook be on a loopback or private address")
	fs.DurationVar(&o.answerTimeout, "answer-timeout", 0, "how long a question to the human waits before it ends with \"no answer within\" it (default: as long as it takes)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	fs.Visit(func(f *flag.Flag) { o.paceSet = o.paceSet || f.Name == "pace" })
	return o, nil
}

// sandboxOption is the workers' sandbox the flags ask for (see policy).
func (o options) sandboxOption() nodes.Option {
	return nodes.WithSandbox(func(w nodes.Worker, _ nodes.Node, p sandbox.Policy) sandbox.Policy { return o.policy(w, p) })
}

// policy is worker w's sandbox, from the squad's default p: off with -sandbox=false; without
// network for a harnessed worker with -no-network; keeping -keep-env's variables.
func (o options) policy(w nodes.Worker, p sandbox.Policy) sandbox.Policy {
	if !o.sandbox {
		return sandbox.Policy{Off: true}
	}
	p.NoNetwork = o.noNetwork && w.Kind == nodes.Harnessed
	p.KeepEnv = append(p.KeepEnv, o.keepEnv...)
	return p
}

// newServer returns the API server the options describe, logging to log, and what team its
// agents play.
func newServer(o options, getenv func(string) string, log *slog.Logger, extra ...server.Option) (*server.Server, string, error) {
	model := o.model
	if model == "" && !o.offline {
		model = models.Default(getenv)
	}
	team := "the offline demo team"
	agentOpts := demo.Team(demo.WithPace(o.pace))
	if model != "" {
		team = model
		agentOpts = []nodes.Option{nodes.WithModel(model)}
	}
	if o.embedder != "" {
		if _, err := models.NewEmbedder(o.embedder); err != nil {
			return nil, "", fmt.Errorf("-embedder: %w", err)
		}
		agentOpts = append(agentOpts, nodes.WithEmbedder(o.embedder))
	}
	agentOpts = append(agentOpts, o.sandboxOption())
	if o.answerTimeout > 0 {
		agentOpts = append(agentOpts, nodes.WithAnswerTimeout(o.answerTimeout))
	}
	squadOpts := func(string) []nodes.Option { return agentOpts }
	allowed := slices.Clone(o.models)
	if model != "" {
		allowed = append(allowed, model)
	}
	token := o.token
	if token == "" {
		token = getenv("AGIRAPH_TOKEN")
	}
	hostOpts := []host.Option{host.WithRoot(o.root), host.WithSquadOptions(squadOpts), host.WithLogger(log), host.WithMaxRuns(o.maxRuns)}
	if !o.resume {
		hostOpts = append(hostOpts, host.WithoutResume())
	}
	if o.record {
		hostOpts = append(hostOpts, host.WithRecordRuns())
	}
	if o.webhook != "" {
		hostOpts = append(hostOpts, host.WithWebhook(nodes.Webhook{URL: o.webhook, AllowPrivate: o.webhookPrivate}))
	}
	opts := []server.Option{server.WithHost(hostOpts...), server.WithToken(token), server.WithAllowedHosts(o.hosts...),
		server.WithAllowedOrigins(o.origins...), server.WithModels(allowed...), server.WithMaxText(o.maxText)}
	srv, err := server.New(append(opts, extra...)...)
	return srv, team, err
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	o, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if stderr == nil {
		stderr = io.Discard
	}
	if !o.paceSet {
		o.pace = demo.PaceAt(stdout)
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return err
	}
	srv, team, err := newServer(o, getenv, slog.New(slog.NewTextHandler(stderr, nil)), server.WithAddr(ln.Addr().String()))
	if err != nil {
		_ = ln.Close() // the error before is the one to report
		return err
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	url := "http://" + ln.Addr().String()
	fmt.Fprintf(stdout, "Serving agents (%s) from %s on %s\n", team, o.root, url)
	fmt.Fprintf(stdout, "Open in a browser: %s\n", srv.LoginURL(url))
	auth := `-H "Authorization: Bearer ` + srv.Token() + `"`
	fmt.Fprintf(stdout, "Try:\n  curl -s %s -H 'Content-Type: application/json' -X POST %s/agents -d '{\"goal\": \"the state of AI chips\"}'\n  curl -s %s %s/agents\n  curl -N %s %s/agents/<id>/events/stream\n", auth, url, auth, url, auth, url)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err = <-served:
	case <-ctx.Done():
	}
	// Pause the runs and end the event streams first, then the connections.
	cerr := srv.Close()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return errors.Join(err, cerr)
}
