package ui_test

// The web UI in a real browser: Debian's Chromium, headless, driven over the DevTools protocol
// (chromedp) against a server on loopback with a scripted team. The tests skip, saying so, where
// no Chromium is installed; CI installs it. Screenshots are kept in $AGIRAPH_UI_ARTIFACTS (by
// default a folder under the system's temporary folder, logged); AGIRAPH_UI_README=1 also
// writes the screenshot docs/server.md shows, docs/ui.png.

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/internal/testenv"
	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/server"
	"github.com/agiraph/agiraph/server/host"
	"github.com/agiraph/agiraph/tools"
)

// wait bounds every wait for the page: generous, never a timed assertion.
const wait = 60 * time.Second

// xss is model output that would run script if the page ever treated it as markup.
const xss = `<img src=x onerror="document.title='pwned'"><script>window.pwned=1</script> [click](javascript:window.pwned=2) **bold**`

// chromium returns the browser's path, or skips the test (internal/testenv).
func chromium(t *testing.T) string {
	t.Helper()
	testenv.Need(t, "Chromium")
	for _, name := range []string{os.Getenv("AGIRAPH_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	testenv.Missing(t, "no Chromium installed (apt-get install chromium, or set AGIRAPH_CHROMIUM): the browser tests need one")
	return ""
}

// browser starts a headless Chromium with a fresh profile and returns a tab's context.
func browser(t *testing.T) context.Context {
	t.Helper()
	// The profile is not a t.TempDir: the browser's helper processes may still write to it for a
	// moment after the browser is gone, which fails the removal of a TempDir.
	profile, err := os.MkdirTemp("", "agiraph-chromium-")
	require.NoError(t, err)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(profile),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.WindowSize(1400, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	// This chromedp's protocol tables predate some of the browser's values; it says so for every
	// event that carries one, which is noise here.
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithErrorf(func(format string, args ...any) {
		if msg := fmt.Sprintf(format, args...); !strings.Contains(msg, "could not unmarshal event") {
			t.Logf("chromedp: %s", msg)
		}
	}))
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
		removeProfile(t, profile)
	})
	require.NoError(t, chromedp.Run(ctx)) // start the browser now, so that its start is not a step's
	// The page's errors and console lines go to the test's log.
	chromedp.ListenTarget(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *cdpruntime.EventExceptionThrown:
			t.Logf("page exception: %s", ev.ExceptionDetails.Error())
		case *cdpruntime.EventConsoleAPICalled:
			var args []string
			for _, a := range ev.Args {
				args = append(args, string(a.Value)+a.Description)
			}
			t.Logf("page console.%s: %s", ev.Type, strings.Join(args, " "))
		}
	})
	return ctx
}

// removeProfile removes a browser's profile folder once its last helper process has stopped
// writing to it, trying for a few seconds.
func removeProfile(t *testing.T, dir string) {
	var err error
	for range 50 {
		if err = os.RemoveAll(dir); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("the browser's profile was not removed: %v", err)
}

// step runs actions with the generous deadline, failing the test with what was being done.
func step(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := chromedp.Run(sctx, actions...); err != nil {
		shot(t, ctx, "failed-"+strings.ReplaceAll(what, " ", "-"))
		var body string
		_ = chromedp.Run(ctx, chromedp.Text("body", &body, chromedp.ByQuery))
		if onFailure != nil {
			onFailure()
		}
		t.Fatalf("%s: %v\npage text:\n%s", what, err, body)
	}
}

// onFailure, when set, logs what the server knows when a step fails.
var onFailure func()

// shot saves a screenshot of the page as an artifact.
func shot(t *testing.T, ctx context.Context, name string) string {
	t.Helper()
	dir := os.Getenv("AGIRAPH_UI_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "agiraph-ui-artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return ""
	}
	var png []byte
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := chromedp.Run(sctx, chromedp.FullScreenshot(&png, 100)); err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return ""
	}
	p := filepath.Join(dir, t.Name()+"-"+name+".png")
	p = strings.ReplaceAll(p, "/", string(filepath.Separator))
	if err := os.WriteFile(filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_")+"-"+name+".png"), png, 0o644); err != nil {
		t.Logf("screenshot %s: %v", name, err)
	}
	t.Logf("screenshot: %s", filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_")+"-"+name+".png"))
	return p
}

// team is a scripted squad: the coordinator says what it will do, spawns Dana and gives her a
// node; Dana asks the human a question, writes a report holding the answer and model output that
// tries to run script, and publishes it; the coordinator answers a human message ("ping") with
// "pong" in plain text, and finishes with Dana's report once the stage is done.
func team(string) []nodes.Option {
	coord := scripted.NewFunc("ui-coordinator", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		text, results := scripted.Last(req)
		switch {
		case len(req.Messages) == 1:
			return turn(req, "I will ask Dana to write the report. "+xss,
				scripted.Call("spawn_worker", map[string]any{"name": "Dana", "role": "writer"}),
				scripted.Call("create_work_node", map[string]any{"task": "Write report.md in your scratch folder, then publish.", "worker": "Dana"})), nil
		case strings.Contains(text, "ping"):
			return turn(req, pong), nil
		case len(results) == 1 && results[0].Name == "read_file":
			return turn(req, "Done.", scripted.Call("finish", map[string]string{"output": results[0].Content})), nil
		case strings.Contains(text, "Stage 1 is complete"):
			return turn(req, "", scripted.Call("read_file", map[string]string{"path": "nodes/n1/published/report.md"})), nil
		}
		return turn(req, "", scripted.Call("wait", map[string]string{})), nil
	})
	worker := scripted.NewFunc("ui-worker", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		seen := scripted.Results(req)
		if said, ok := seen["ask_human"]; !ok {
			return turn(req, "", scripted.Call("ask_human", map[string]string{"question": "Which colour should the report use?"})), nil
		} else if _, ok := seen["write_file"]; !ok {
			report := "# The report\n\nColour: " + said + "\n\n" + xss + "\n"
			return turn(req, "Writing the report.", scripted.Call("write_file", map[string]string{"path": "nodes/n1/scratch/report.md", "content": report})), nil
		}
		return turn(req, "", scripted.Call("publish", map[string]string{"summary": "report.md"})), nil
	})
	gated := &gatedModel{Model: coord}
	return []nodes.Option{
		nodes.WithCoordinatorModel(coord.Name()), nodes.WithModel(worker.Name()),
		nodes.WithModelOptions(models.WithModels(gated, worker), models.WithoutRetry()),
		nodes.WithTick(20 * time.Millisecond),
	}
}

// modelGate holds the coordinator's first answer half-written: once listening is closed (the
// page follows the agent) the model streams its first words, and it finishes when release is
// closed.
type modelGate struct {
	listening, release chan struct{}
	once               sync.Once
}

// gate is the gate of the test that set one, for the first answer after it was set; nil for
// the other tests.
var gate atomic.Pointer[modelGate]

// gatedModel is a model whose first answer after a gate was set streams through it.
type gatedModel struct{ providers.Model }

func (m *gatedModel) Generate(ctx context.Context, req providers.Request) (providers.Response, error) {
	g, first := gate.Load(), false
	if g != nil {
		g.once.Do(func() { first = true })
	}
	if first && req.OnText != nil {
		for _, ch := range []chan struct{}{g.listening, g.release} {
			select {
			case <-ch:
			case <-ctx.Done():
				return providers.Response{}, ctx.Err()
			}
			if ch == g.listening {
				req.OnText("Let me think about this… ")
			}
		}
	}
	return m.Model.Generate(ctx, req)
}

// pong is the coordinator's reply in plain text: a turn of the model and a message to the human.
// It is longer than the 500 bytes of a turn the log keeps.
var pong = "pong from the coordinator." + strings.Repeat(" And some more words.", 30)

var callSeq atomic.Int64

func turn(_ providers.Request, text string, calls ...tools.Call) scripted.Turn {
	for i := range calls {
		calls[i].ID = fmt.Sprintf("call_%d", callSeq.Add(1))
	}
	// Every turn costs something, so that the page has tokens and cost to show.
	return scripted.Turn{Text: text, Calls: calls, Usage: providers.Usage{InputTokens: 1000, OutputTokens: 100, CostUSD: 0.0025}}
}

// site is a server on a fixed loopback address, which can be stopped and started again there.
type site struct {
	t    *testing.T
	root string
	team func(string) []nodes.Option     // the agents' squad options (default: team)
	opts []server.Option                 // the server's other options
	wrap func(http.Handler) http.Handler // set: what stands between the browser and the server
	addr string
	srv  *server.Server
	hs   *httptest.Server
}

func newSite(t *testing.T) *site {
	s := &site{t: t, root: t.TempDir(), team: team}
	s.start()
	t.Cleanup(s.stop)
	return s
}

func (s *site) start() {
	s.t.Helper()
	srv, err := server.New(append([]server.Option{server.WithHost(host.WithRoot(s.root), host.WithSquadOptions(s.team))}, s.opts...)...)
	require.NoError(s.t, err)
	var handler http.Handler = srv
	if s.wrap != nil {
		handler = s.wrap(srv)
	}
	hs := httptest.NewUnstartedServer(handler)
	if s.addr != "" {
		var l net.Listener
		for i := 0; ; i++ { // the old listener's port may take a moment to be free
			if l, err = net.Listen("tcp", s.addr); err == nil || i == 100 {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		require.NoError(s.t, err)
		hs.Listener.Close()
		hs.Listener = l
	}
	hs.Start()
	s.addr = hs.Listener.Addr().String()
	s.srv, s.hs = srv, hs
}

func (s *site) stop() {
	if s.hs == nil {
		return
	}
	s.hs.CloseClientConnections()
	s.hs.Close()
	assert.NoError(s.t, s.srv.Close())
	s.hs = nil
}

func (s *site) url(path string) string { return "http://" + s.addr + path }

// awaitAgent polls agent id until done accepts its summary, and returns that summary; the agent
// failing, or within passing first, fails the test.
func (s *site) awaitAgent(id string, within time.Duration, done func(host.Summary) bool) host.Summary {
	s.t.Helper()
	end := time.Now().Add(within)
	for {
		var sum host.Summary
		require.Equal(s.t, http.StatusOK, s.api("GET", "/agents/"+id, nil, &sum))
		if done(sum) {
			return sum
		}
		require.NotEqual(s.t, host.StatusFailed, sum.Status, sum.Error)
		require.True(s.t, time.Now().Before(end), "agent %s is %s", id, sum.Status)
		time.Sleep(20 * time.Millisecond)
	}
}

// reached is a test of an agent's summary for status, for awaitAgent.
func reached(status string) func(host.Summary) bool {
	return func(sum host.Summary) bool { return sum.Status == status }
}

// api sends a request to the server with its token.
func (s *site) api(method, path string, body any, out any) int {
	s.t.Helper()
	var r *strings.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = strings.NewReader(string(b))
	} else {
		r = strings.NewReader("")
	}
	req, err := http.NewRequest(method, s.url(path), r)
	require.NoError(s.t, err)
	req.Header.Set("Authorization", "Bearer "+s.srv.Token())
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(s.t, err)
	defer resp.Body.Close()
	if out != nil {
		require.NoError(s.t, json.NewDecoder(resp.Body).Decode(out))
	}
	return resp.StatusCode
}

// A person opens the page without the token, gives it, starts an agent, watches it work, talks
// to the coordinator, answers the worker's question, reads the published report (whose script
// stays text), and sees the stream carry on across a server restart.
func TestBrowser(t *testing.T) {
	g := &modelGate{listening: make(chan struct{}), release: make(chan struct{})}
	gate.Store(g)
	t.Cleanup(func() { gate.Store(nil) })
	s := newSite(t)
	ctx := browser(t)
	onFailure = func() {
		var agents struct{ Agents []host.Summary }
		s.api("GET", "/agents", nil, &agents)
		for _, a := range agents.Agents {
			var evs struct {
				Events []struct {
					Seq                      int64
					Type, Worker, Node, Text string
				}
			}
			s.api("GET", "/agents/"+a.ID+"/events?limit=100000", nil, &evs)
			t.Logf("agent %s: %s", a.ID, a.Status)
			for _, e := range evs.Events {
				t.Logf("  %d %s worker=%s node=%s %.120q", e.Seq, e.Type, e.Worker, e.Node, e.Text)
			}
		}
	}
	t.Cleanup(func() { onFailure = nil })

	// No token: the page asks for it.
	step(t, ctx, "open without the token",
		chromedp.Navigate(s.url("/")),
		chromedp.WaitVisible("#token-dialog", chromedp.ByQuery))
	shot(t, ctx, "token")
	step(t, ctx, "give the token",
		chromedp.SendKeys("#token-input", s.srv.Token(), chromedp.ByQuery),
		chromedp.Click("#token-form button[type=submit]", chromedp.ByQuery),
		chromedp.WaitVisible(".welcome", chromedp.ByQuery))

	// A new agent, from the form.
	step(t, ctx, "start an agent",
		chromedp.Click("#new-agent", chromedp.ByQuery),
		chromedp.WaitVisible("#new-goal", chromedp.ByQuery),
		chromedp.SendKeys("#new-goal", "Write a colourful report.", chromedp.ByQuery),
		chromedp.Click("form.new-agent button[type=submit]", chromedp.ByQuery),
		chromedp.WaitVisible(`.view-head h2`, chromedp.ByQuery))
	var agents struct{ Agents []host.Summary }
	s.api("GET", "/agents", nil, &agents)
	require.Len(t, agents.Agents, 1)
	id := agents.Agents[0].ID

	// The coordinator's words appear as the model writes them.
	step(t, ctx, "follow the agent", waitAttr("body", "stream", "live"))
	close(g.listening)
	step(t, ctx, "see the words as they come", waitText(".bubble.streaming", "Let me think about this"))
	shot(t, ctx, "streaming")
	close(g.release)

	// The run is seen live: the coordinator's words (its markup inert), Dana in the sidebar, her
	// question as a toast.
	step(t, ctx, "watch the coordinator",
		waitText(".timeline", "I will ask Dana"),
		chromedp.WaitVisible(`#sidebar a[href$="/w/dana"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`.toast`, chromedp.ByQuery))
	noScriptRan(t, ctx)

	// A message to the coordinator, and its reply, shown once — as it comes, and read again.
	step(t, ctx, "message the coordinator",
		chromedp.SendKeys(".composer textarea", "ping", chromedp.ByQuery),
		chromedp.Click(".composer button[type=submit]", chromedp.ByQuery),
		waitText(".timeline", pong))
	replied := s.eventSeq(id, func(e event) bool { return e.Type == "message.sent" && strings.HasPrefix(e.Text, "pong from") })
	step(t, ctx, "see the reply's message", waitSeq(replied))
	assert.Equal(t, 1, bubblesWith(t, ctx, "pong from"), "the coordinator's reply, live")
	shot(t, ctx, "coordinator")
	step(t, ctx, "read the conversation again", chromedp.Reload(), waitAttr("body", "stream", "live"), waitSeq(replied), waitText(".timeline", pong))
	assert.Equal(t, 1, bubblesWith(t, ctx, "pong from"), "the coordinator's reply, read from the log (all of it)")

	// The server stops and starts again on the same address while Dana waits: the page notices,
	// reconnects, and goes on from the last event it saw.
	s.stop()
	step(t, ctx, "notice the drop", waitAttr("body", "stream", "reconnecting"))
	s.start()
	step(t, ctx, "reconnect", waitAttr("body", "stream", "live"))

	// Dana's question, answered in her view. Her header is drawn when the view opens and again
	// as she goes back to work; its node's spec comes from the server, here held until both draws
	// asked for it, and the first one's answered first: her header shows one spec, the latest.
	step(t, ctx, "hold the node's spec", chromedp.Evaluate(holdSpecs, nil))
	step(t, ctx, "answer Dana",
		follow(`#sidebar a[href$="/w/dana"]`),
		chromedp.WaitVisible(`.bubble.question textarea`, chromedp.ByQuery),
		chromedp.SendKeys(`.bubble.question textarea`, "Teal", chromedp.ByQuery),
		chromedp.Click(`.bubble.question form button[type=submit]`, chromedp.ByQuery),
		waitText(".timeline", "Answered: Teal"))
	step(t, ctx, "draw Dana's header twice", chromedp.Poll(`window.heldSpecs.length >= 2`, nil,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(wait)))
	step(t, ctx, "answer the first draw", chromedp.Evaluate(`releaseFirstSpec()`, nil), chromedp.Poll(`window.firstSpecRead`, nil,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(wait)))
	step(t, ctx, "answer the others", chromedp.Evaluate(`releaseSpecs()`, nil), waitText(".worker-info", "Write report.md"))
	var specs []string
	step(t, ctx, "read Dana's header", chromedp.Evaluate(`[...document.querySelectorAll('.worker-info details')].map((d) => d.textContent)`, &specs))
	assert.Len(t, specs, 1, "specs in Dana's header: %q", specs)
	assert.NotContains(t, strings.Join(specs, " "), "an old spec")
	step(t, ctx, "see the agent no longer waits", chromedp.Poll(`!document.querySelector('.view-head [data-status]').textContent.includes('waiting')`, nil,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(wait)))
	shot(t, ctx, "worker")

	// The run completes: the node on the board, the output in the coordinator's view.
	step(t, ctx, "see the board",
		follow(`#sidebar a[href$="/board"]`),
		chromedp.WaitVisible(`g.node[data-node="n1"]`, chromedp.ByQuery),
		waitText(".board", "completed"))
	var panel string
	step(t, ctx, "open the node",
		chromedp.Click(`g.node[data-node="n1"]`, chromedp.ByQuery),
		waitText(".node-panel", "Published"),
		chromedp.Text(".node-panel", &panel, chromedp.ByQuery))
	assert.Contains(t, panel, "report.md")
	assert.NotContains(t, panel, "null")
	assert.NotContains(t, panel, "undefined")
	shot(t, ctx, "board")
	step(t, ctx, "see the output",
		follow(`#sidebar details[data-agent] ul a`),
		waitText(".output", "The human answered: Teal"))

	// Tokens and cost: the run's in the head, the node's in its panel.
	var usage string
	step(t, ctx, "read the run's usage", chromedp.Text(".view-head [data-usage=run]", &usage, chromedp.ByQuery))
	assert.Regexp(t, `^[\d,]+ in · [\d,]+ out · \$\d+\.\d{4}$`, usage)
	// The run's current stage, in the head: Dana's report ended stage 1.
	step(t, ctx, "read the run's stage", waitText(".view-head [data-stage]", "stage 1"))

	// Every event of the server's log reached the page once, across the restart.
	var all struct{ Events []struct{ Seq int64 } }
	s.api("GET", "/agents/"+id+"/events?limit=100000", nil, &all)
	last := all.Events[len(all.Events)-1].Seq
	step(t, ctx, "catch up", waitAttr("body", "lastSeq", fmt.Sprint(last)))
	var count int
	step(t, ctx, "count the page's events", chromedp.Evaluate(`Number(document.body.dataset.events)`, &count))
	assert.Equal(t, len(all.Events), count, "events the page took, against the server's log")

	// The published report, previewed: markdown rendered, the script shown as text.
	step(t, ctx, "preview the report",
		chromedp.Navigate(s.url("/#/a/"+id+"/files/nodes/n1/published/report.md")),
		waitText(".preview", "The report"),
		waitText(".preview", `onerror="document.title='pwned'"`))
	var imgs, links int
	step(t, ctx, "count markup in the preview",
		chromedp.Evaluate(`document.querySelectorAll('.preview img, .preview script, .preview [onerror]').length`, &imgs),
		chromedp.Evaluate(`[...document.querySelectorAll('.preview a')].filter(a => a.href.startsWith('javascript')).length`, &links))
	assert.Zero(t, imgs, "markup from model output became elements")
	assert.Zero(t, links, "a javascript: link became a link")
	noScriptRan(t, ctx)
	shot(t, ctx, "preview")

	// Memory: the agent's files, previewed.
	step(t, ctx, "preview a memory file",
		chromedp.Navigate(s.url("/#/a/"+id+"/memory")),
		chromedp.WaitVisible(".tree a", chromedp.ByQuery),
		chromedp.Click(".tree a", chromedp.ByQuery),
		chromedp.WaitVisible(".preview h3", chromedp.ByQuery))

	// The keyboard reaches everything: every control has a name; the sidebar's links and the
	// board's nodes work with Enter, and arrows move between nodes.
	var unnamed []string
	step(t, ctx, "name the controls", chromedp.Navigate(s.url("/#/a/"+id)), chromedp.WaitVisible(".composer", chromedp.ByQuery),
		chromedp.Evaluate(`[...document.querySelectorAll('button, input, textarea, select, a[href], [role=button]')]
			.filter((e) => !(e.getAttribute('aria-label') || e.textContent.trim() || (e.id && document.querySelector('label[for="' + e.id + '"]'))))
			.map((e) => e.outerHTML.slice(0, 80))`, &unnamed))
	assert.Empty(t, unnamed, "controls without a name")
	var hash string
	step(t, ctx, "go to the board by keyboard",
		pressEnter(`#sidebar a[href$="/board"]`, hasText(`g.node[data-node="n1"]`, "")),
		pressEnter(`g.node[data-node="n1"]`, hasText(".node-panel", "Spec")),
		chromedp.Evaluate(`location.hash`, &hash))
	assert.Equal(t, "#/a/"+id+"/board/n1", hash)

	// Control: a new run from the head, then stop it.
	step(t, ctx, "start a new run",
		chromedp.SendKeys(`.new-run input`, "Write another report.", chromedp.ByQuery),
		chromedp.Click(`.new-run button`, chromedp.ByQuery),
		chromedp.Poll(`document.querySelector('.view-head .status').textContent !== 'completed'`, nil,
			chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(wait)))
	var after host.Summary
	s.api("GET", "/agents/"+id, nil, &after)
	assert.Equal(t, "Write another report.", after.Goal)
	step(t, ctx, "stop it", chromedp.Click(`.view-head .controls button`, chromedp.ByQuery))
	var failed []string
	step(t, ctx, "read the notices", chromedp.Evaluate(`[...document.querySelectorAll('.toast')].map((t) => t.textContent).filter((t) => /^(Stop|Resume|New run):/.test(t))`, &failed))
	assert.Empty(t, failed, "a control failed")

	// The first render of an agent's page, measured (reported, not asserted).
	var firstRender float64
	step(t, ctx, "first render", chromedp.Navigate(s.url("/#/a/"+id)), chromedp.WaitVisible(".timeline .bubble", chromedp.ByQuery),
		chromedp.Evaluate(`window.agiraphFirstRender`, &firstRender))
	t.Logf("first render of the agent's page: %.0f ms after navigation", firstRender)
	if os.Getenv("AGIRAPH_UI_README") != "" {
		var png []byte
		step(t, ctx, "README screenshot", chromedp.Navigate(s.url("/#/a/"+id+"/board/n1")), waitText(".node-panel", "Spec"), chromedp.FullScreenshot(&png, 100))
		require.NoError(t, os.WriteFile(filepath.Join("..", "..", "docs", "ui.png"), png, 0o644))
	}
}

// holdSpecs makes the page's requests for node n1 wait, in window.heldSpecs, until the test
// answers them: releaseFirstSpec answers the first with an old spec, and sets firstSpecRead once
// the page has read it and done what it does with it (a task runs after the promise reactions
// that follow); releaseSpecs sends the others, and those to come, to the server.
const holdSpecs = `(() => {
	const fetch0 = window.fetch;
	window.heldSpecs = [];
	let holding = true;
	window.fetch = (url, init) => {
		if (!holding || !/\/board\/n1$/.test(String(url))) return fetch0(url, init);
		return new Promise((resolve) => window.heldSpecs.push({ url, init, resolve }));
	};
	window.releaseFirstSpec = () => {
		const res = new Response(JSON.stringify({ node: { id: 'n1' }, spec: 'an old spec' }), { headers: { 'Content-Type': 'application/json' } });
		const text = res.text.bind(res);
		res.text = async () => {
			const t = await text();
			setTimeout(() => { window.firstSpecRead = true; });
			return t;
		};
		window.heldSpecs[0].resolve(res);
	};
	window.releaseSpecs = () => {
		holding = false;
		for (const r of window.heldSpecs.slice(1)) r.resolve(fetch0(r.url, r.init));
	};
})()`

// event is an event of the server's log, as the tests read it.
type event struct {
	Seq        int64
	Type, Text string
}

// eventSeq waits until agent id has logged an event that matches, and returns its number.
func (s *site) eventSeq(id string, match func(event) bool) int64 {
	s.t.Helper()
	for end := time.Now().Add(wait); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		var evs struct{ Events []event }
		s.api("GET", "/agents/"+id+"/events?limit=100000", nil, &evs)
		for _, e := range evs.Events {
			if match(e) {
				return e.Seq
			}
		}
	}
	s.t.Fatal("the event never came")
	return 0
}

// waitSeq waits until the page has taken the server's events up to seq.
func waitSeq(seq int64) chromedp.Action {
	return chromedp.Poll(fmt.Sprintf(`Number(document.body.dataset.lastSeq) >= %d`, seq), nil,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(wait))
}

// bubblesWith counts the timeline's bubbles that hold text, once the list has drawn what it has
// (it draws with the next animation frame).
func bubblesWith(t *testing.T, ctx context.Context, text string) int {
	t.Helper()
	var n int
	count := fmt.Sprintf(`new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(() =>
		done([...document.querySelectorAll('.timeline .bubble')].filter((b) => b.textContent.includes(%q)).length))))`, text)
	step(t, ctx, "count the bubbles with "+text, chromedp.Evaluate(count, &n, func(p *cdpruntime.EvaluateParams) *cdpruntime.EvaluateParams {
		return p.WithAwaitPromise(true)
	}))
	return n
}

// noScriptRan fails the test if model output ran script in the page.
func noScriptRan(t *testing.T, ctx context.Context) {
	t.Helper()
	var title string
	var pwned bool
	step(t, ctx, "check no script ran", chromedp.Title(&title), chromedp.Evaluate(`window.pwned !== undefined`, &pwned))
	assert.NotEqual(t, "pwned", title)
	assert.False(t, pwned, "script from model output ran")
}

// follow clicks the link that matches sel once it is there, from inside the page: the sidebar
// may be drawn again between finding a link and clicking it.
func follow(sel string) chromedp.Action {
	return chromedp.Poll(fmt.Sprintf(`(() => { const a = document.querySelector(%q); if (a) a.click(); return !!a; })()`, sel), nil,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(wait))
}

// waitText waits until the element matching sel holds text.
func waitText(sel, text string) chromedp.Action {
	return chromedp.Poll(hasText(sel, text), nil, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(wait))
}

// hasText is the expression that the element matching sel is there and holds text (any, for "").
func hasText(sel, text string) string {
	return fmt.Sprintf(`(() => { const e = document.querySelector(%q); return !!e && e.textContent.includes(%q); })()`, sel, text)
}

// pressEnter focuses the element matching sel and presses Enter on it, until the expression
// done is true. The page may draw the element again (the board does, as its events come): one
// focused just before is then gone, and the focus and the key are given again. The element is
// found and focused in the page, in one go, so that a redraw cannot leave a stale reference.
func pressEnter(sel, done string) chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		focus := fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e) return false; e.focus(); return document.activeElement === e; })()`, sel)
		for {
			var focused bool
			if err := chromedp.Evaluate(focus, &focused).Do(ctx); err != nil {
				return err
			}
			if focused {
				if err := chromedp.KeyEvent("\r").Do(ctx); err != nil {
					return err
				}
				tctx, cancel := context.WithTimeout(ctx, time.Second)
				err := chromedp.Poll(done, nil, chromedp.WithPollingInterval(50*time.Millisecond)).Do(tctx)
				cancel()
				if err == nil {
					return nil
				}
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("Enter on %s: %w", sel, ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
}

// waitAttr waits until the element matching sel has data-<key> = value.
func waitAttr(sel, key, value string) chromedp.Action {
	return chromedp.Poll(fmt.Sprintf(`(() => { const e = document.querySelector(%q); return !!e && e.dataset[%q] === %q; })()`, sel, key, value), nil,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(wait))
}

// The page has an icon, served from the UI's own files, and a browser that opens it makes no
// request that fails: no 404 for /favicon.ico in its console.
func TestIcon(t *testing.T) {
	s := newSite(t)
	resp, err := http.Get(s.url("/ui/favicon.svg"))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "image/svg+xml", resp.Header.Get("Content-Type"))

	ctx := browser(t)
	var (
		mu     sync.Mutex
		failed []string
		icon   = make(chan string, 1) // the first answer to a request for an icon
	)
	chromedp.ListenTarget(ctx, func(ev any) {
		got, ok := ev.(*network.EventResponseReceived)
		if !ok {
			return
		}
		r := got.Response
		mu.Lock()
		defer mu.Unlock()
		if r.Status >= 400 {
			failed = append(failed, fmt.Sprintf("%d %s", r.Status, r.URL))
		}
		if strings.Contains(r.URL, "favicon") {
			select {
			case icon <- fmt.Sprintf("%d %s", r.Status, r.URL):
			default:
			}
		}
	})
	step(t, ctx, "open the page", chromedp.Navigate(s.srv.LoginURL(s.url(""))), chromedp.WaitVisible(".welcome", chromedp.ByQuery))
	select {
	case got := <-icon:
		assert.Equal(t, "200 "+s.url("/ui/favicon.svg"), got)
	case <-time.After(wait):
		t.Fatal("the browser asked for no icon")
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, failed, "requests that failed")
}
