//go:build unix

// The comparison runs LangGraph's server in a process group of its own, to be stopped whole.

package langgraphapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/graph"
	"github.com/agiraph/agiraph/internal/clitest"
	"github.com/agiraph/agiraph/nodes/store"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/server/langgraphapi"
)

// kept are the differences from LangGraph's server kept on purpose, each with its reason (and
// in docs/langgraph-api.md): a pattern of the paths where the answers differ, its segments
// separated by "/", each matched as path.Match does (so "*" is any one segment), and a last "**"
// stands for any rest. A kept
// difference that no longer differs fails the test too, so that the list stays true.
var kept = []struct{ path, why string }{
	{"assistants.getGraph/nodes/*/data", "the start and end nodes are named, not drawn as JSON schemas"},
	{"assistants.getGraph/nodes/*/data/id/*", "a node is an Agiraph graph node, not a LangChain runnable"},
	{"runs.create.first/kwargs/*", "a run's record keeps what the client asked; LangGraph adds the config it derives, context and resumable"},
	{"runs.create.first/metadata/*", "a run's metadata is the client's; LangGraph adds the assistant's, the graph's and the thread's"},
	{"runs.get/kwargs/*", "as runs.create.first/kwargs"},
	{"runs.get/metadata/*", "as runs.create.first/metadata"},
	{"runs.list/*/kwargs/*", "as runs.create.first/kwargs"},
	{"runs.list/*/metadata/*", "as runs.create.first/metadata"},
	{"runs.create.reject/error/*", "a run on a busy thread under reject is refused with 409 (LangGraph's JS server: 422)"},
	{"runs.wait.invalid-command/error/*", "an invalid command is refused with 422 before a run is made; LangGraph's makes the run, which fails"},
	{"runs.wait.unknown-thread/error/*", "a run on an unknown thread is 404 (LangGraph's JS server: 422, as if busy)"},
	{"threads.get.unknown/error/body", `errors are JSON, {"detail": ...}, as LangGraph's Python server answers (its JS server: text)`},
	{"runs.stream.checkpoints/**", "the engine has no step -1: the input's checkpoint is step 0, so a run has one checkpoint less; events carry the checkpoint's address, parent and tasks"},
	{"runs.stream.debug/**", "as runs.stream.checkpoints, and a checkpoint's config is its address, without LangGraph's run config"},
	{"runs.stream.events/**", "no chat model events (nodes call no LangChain model; their text streams in the messages modes), and chains carry little metadata"},
	{"runs.stream.messages/*/data/0/type", `chunks are typed "AIMessageChunk", as LangGraph's Python server sends them (its JS server: "ai"); the SDK reads both`},
	{"runs.stream.messages-tuple/*/data/0/type", "as runs.stream.messages/*/data/0/type"},
	{"runs.stream.messages/*/data/*/metadata/*", "a message's metadata names the node, step, task, model, thread, run and graph; LangChain's tracing fields and the deployment's are not sent"},
	{"runs.stream.messages-tuple/*/data/1/*", "as runs.stream.messages/*/data/*/metadata"},
	{"runs.stream.tasks/*/data/metadata", "a task's start carries no run config metadata"},
	{"runs.stream.values/3/data/[^_]*", "the last values event carries the state beside __interrupt__"},
	{"runs.wait.interrupt/[^_]*", "a paused run's answer carries the state beside __interrupt__"},
	{"threads.create/values", "a thread always shows its values and interrupts, empty on a new thread"},
	{"threads.create/interrupts", "as threads.create/values"},
	{"threads.get.new/values", "as threads.create/values"},
	{"threads.get.new/interrupts", "as threads.create/values"},
	{"threads.*/config/configurable", "the client's User-Agent is not recorded in the thread's config"},
	{"threads.search/*/config/configurable", "as threads.*/config/configurable"},
	{"threads.getState.*/checkpoint/checkpoint_map", "checkpoint_map, a field of LangGraph's JS server only, is not sent"},
	{"threads.getState.*/parent_checkpoint/checkpoint_map", "as threads.getState.*/checkpoint/checkpoint_map"},
	{"threads.getState.*/interrupts", "a state lists its pending interrupts, as LangGraph's Python server's does"},
	{"threads.getState.*/metadata", "a checkpoint's metadata is its source, step, run and what was patched in; LangGraph adds its run config's metadata"},
	{"threads.getState.*/metadata/*", "as threads.getState.*/metadata"},
	{"threads.getHistory.*/1/metadata/source", "the engine has no step -1 (calls.mjs leaves LangGraph's out): step 0 is the input's checkpoint, with no parent"},
	{"threads.getHistory.*/1/parent_checkpoint", "as threads.getHistory.*/1/metadata/source"},
	{"threads.getHistory.*/*/checkpoint/checkpoint_map", "as threads.getState.*/checkpoint/checkpoint_map"},
	{"threads.getHistory.*/*/parent_checkpoint/checkpoint_map", "as threads.getState.*/checkpoint/checkpoint_map"},
	{"threads.getHistory.*/*/interrupts", "as threads.getState.*/interrupts"},
	{"threads.getHistory.*/*/metadata/*", "as threads.getState.*/metadata"},
}

// TestCompare makes the same calls of the official client (testdata/compare/calls.mjs) of our
// server and of LangGraph's own (@langchain/langgraph-api, run by langgraphjs dev), each serving
// the graph "compare" (serveCompare here, testdata/compare/graph.mjs there), and compares the
// answers field by field once what must differ is normalized (IDs, times, the order of the
// lists whose order each server chooses). Each difference not
// kept on purpose fails the test with its path.
func TestCompare(t *testing.T) {
	sdk := filepath.Join(clitest.LangGraphSDK.Dir(t), "dist", "index.js")
	gates := t.TempDir()
	theirsGate, oursGate := filepath.Join(gates, "theirs"), filepath.Join(gates, "ours")
	theirs := calls(t, startLangGraphDev(t, theirsGate), sdk, theirsGate)
	ours := calls(t, serveCompare(t, oursGate), sdk, oursGate)
	for _, r := range []map[string]any{ours, theirs} {
		sortBy(r["runs.list"], "created_at")
		if g, ok := r["assistants.getGraph"].(map[string]any); ok {
			sortBy(g["edges"], "source", "target")
		}
	}

	var diffs []string
	diff(&diffs, "", normalize(ours), normalize(theirs))
	seen := make([]bool, len(kept))
	for _, d := range diffs {
		at, _, _ := strings.Cut(d, ": ")
		i := slices.IndexFunc(kept, func(k struct{ path, why string }) bool { return matchPath(k.path, at) })
		if i < 0 {
			t.Errorf("differs: %s", d)
			continue
		}
		seen[i] = true
	}
	for i, k := range kept {
		assert.True(t, seen[i], "kept difference %s (%s) no longer differs", k.path, k.why)
	}
}

// serveCompare serves the graph "compare" on a server of its own and returns its URL. It is the
// Go twin of testdata/compare/graph.mjs: write asks a scripted model about the topic, streaming
// its answer word by word, and emits the topic as a custom event (on the topic "hold" it first
// waits until the file gate exists); review asks "publish?" with an interrupt.
func serveCompare(t *testing.T, gate string) string {
	st := store.NewMemory()
	h := langgraphapi.New(st)
	model := scripted.NewFunc("writer", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		return scripted.Turn{Text: "once upon a " + req.Messages[0].Parts[0].Text}, nil
	})
	b := graph.New[chat]()
	b.AddNode("write", func(ctx context.Context, s chat) (chat, error) {
		for s.Topic == "hold" {
			if _, err := os.Stat(gate); err == nil {
				break
			}
			select {
			case <-ctx.Done():
				return chat{}, ctx.Err()
			case <-time.After(10 * time.Millisecond):
			}
		}
		graph.Emit(ctx, map[string]string{"greeting": s.Topic})
		resp, err := model.Generate(ctx, providers.Request{Messages: []providers.Message{providers.UserText(s.Topic)}, OnText: graph.OnText(ctx, model.Name())})
		if err != nil {
			return chat{}, err
		}
		return chat{Messages: []string{resp.Message.Parts[0].Text}}, nil
	})
	b.AddNode("review", review)
	b.AddEdge(graph.START, "write")
	b.AddEdge("write", "review")
	b.AddEdge("review", graph.END)
	c, err := b.Compile(graph.WithCheckpointer(st.Saver()))
	require.NoError(t, err)
	require.NoError(t, langgraphapi.Register(h, "compare", c, st.Saver()))
	require.NoError(t, langgraphapi.Register(h, "fanout", fanOut(t, st.Saver()), st.Saver()))
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.Close()
		assert.NoError(t, h.Close())
	})
	return srv.URL
}

// startLangGraphDev starts LangGraph's server (langgraphjs dev, offline, in memory) on
// testdata/compare/graph.mjs, whose runs on the topic "hold" wait for the file gate, and returns
// its URL once it answers. It is stopped when the test ends.
func startLangGraphDev(t *testing.T, gate string) string {
	clitest.LangGraphAPI.Dir(t)
	cli := filepath.Join(clitest.LangGraphCLI.Dir(t), "dist", "cli", "cli.mjs")
	// The project folder: the graph, its langgraph.json and the packages it imports (the CLI
	// writes a .gitignore there too).
	dir := t.TempDir()
	for _, f := range []string{"graph.mjs", "langgraph.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", "compare", f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), b, 0o644))
	}
	modules := filepath.Join(clitest.RepoRoot(t), ".cache", clitest.LangGraphCLI.Folder, "node_modules")
	require.NoError(t, os.Symlink(modules, filepath.Join(dir, "node_modules")))

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())

	node, err := exec.LookPath("node")
	require.NoError(t, err)
	cmd := exec.Command(node, cli, "dev", "--port", fmt.Sprint(port), "--host", "127.0.0.1", "--no-browser", "--no-reload")
	cmd.Dir = dir
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "BROWSER=none",
		"LANGGRAPH_CLI_NO_ANALYTICS=1", "LANGSMITH_TRACING=false", "LANGCHAIN_TRACING_V2=false",
		"COMPARE_GATE=" + gate,
	}
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	// Its own process group: the CLI runs the server in children, stopped with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})

	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.After(2 * time.Minute)
	for {
		resp, err := http.Get(url + "/ok")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return url
			}
		}
		select {
		case <-exited:
			t.Fatalf("langgraphjs dev exited:\n%s", log.String())
		case <-deadline:
			t.Fatalf("langgraphjs dev did not answer at %s:\n%s", url, log.String())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// calls runs testdata/compare/calls.mjs against the server at url and returns its record of
// the answers; gate is the file the graph's runs on the topic "hold" wait for.
func calls(t *testing.T, url, sdk, gate string) map[string]any {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join("testdata", "compare", "calls.mjs"))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "LANGGRAPH_API_URL=" + url, "LANGGRAPH_SDK=" + sdk, "COMPARE_GATE=" + gate}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "calls.mjs against %s:\n%s", url, stderr.String())
	var record map[string]any
	require.NoError(t, json.Unmarshal(out, &record))
	return record
}

// sortBy sorts a list of objects by the values of keys, for the lists whose order the servers
// choose differently.
func sortBy(list any, keys ...string) {
	l, _ := list.([]any)
	key := func(v any) string {
		m, _ := v.(map[string]any)
		var k strings.Builder
		for _, name := range keys {
			fmt.Fprint(&k, m[name], "\x00")
		}
		return k.String()
	}
	sort.SliceStable(l, func(i, j int) bool { return key(l[i]) < key(l[j]) })
}

var (
	uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	hexRE  = regexp.MustCompile(`^[0-9a-f]{32}$`)
	runRE  = regexp.MustCompile(`\b(lc_)?run-+<id>`) // LangChain's message IDs
	timeRE = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$`)
)

// idKeys are the fields whose values are IDs each server makes its own way.
var idKeys = map[string]bool{
	"thread_id": true, "run_id": true, "assistant_id": true, "checkpoint_id": true,
	"parent_checkpoint_id": true, "id": true, "task_id": true, "langgraph_checkpoint_ns": true,
	"checkpoint_ns": true, "langgraph_task_id": true,
}

// normalize replaces what must differ between two servers by placeholders: IDs (by field name,
// any UUID within a string, LangChain's "run-<uuid>" message IDs), times, and map keys that are
// IDs.
func normalize(v any) any {
	return normalizeIn("", v)
}

func normalizeIn(key string, v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			if key == "interrupts" { // a thread's, by task ID
				k = "<id>"
			}
			out[normalizeString(k)] = normalizeIn(k, x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = normalizeIn("", x)
		}
		return out
	case string:
		if idKeys[key] && v != "" {
			return "<id>"
		}
		return normalizeString(v)
	}
	return v
}

func normalizeString(s string) string {
	switch {
	case timeRE.MatchString(s):
		return "<time>"
	case hexRE.MatchString(s):
		return "<id>"
	}
	return runRE.ReplaceAllString(uuidRE.ReplaceAllString(s, "<id>"), "<id>")
}

// diff appends to diffs each path where ours and theirs differ, with both values.
func diff(diffs *[]string, path string, ours, theirs any) {
	switch o := ours.(type) {
	case map[string]any:
		th, ok := theirs.(map[string]any)
		if !ok {
			break
		}
		keys := map[string]bool{}
		for k := range o {
			keys[k] = true
		}
		for k := range th {
			keys[k] = true
		}
		names := make([]string, 0, len(keys))
		for k := range keys {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			x, inOurs := o[k]
			y, inTheirs := th[k]
			switch {
			case !inOurs:
				*diffs = append(*diffs, fmt.Sprintf("%s/%s: missing in ours, theirs %s", path, k, show(y)))
			case !inTheirs:
				*diffs = append(*diffs, fmt.Sprintf("%s/%s: ours %s, missing in theirs", path, k, show(x)))
			default:
				diff(diffs, path+"/"+k, x, y)
			}
		}
		return
	case []any:
		th, ok := theirs.([]any)
		if !ok {
			break
		}
		for i := range max(len(o), len(th)) {
			p := fmt.Sprintf("%s/%d", path, i)
			switch {
			case i >= len(o):
				*diffs = append(*diffs, fmt.Sprintf("%s: missing in ours, theirs %s", p, show(th[i])))
			case i >= len(th):
				*diffs = append(*diffs, fmt.Sprintf("%s: ours %s, missing in theirs", p, show(o[i])))
			default:
				diff(diffs, p, o[i], th[i])
			}
		}
		return
	default:
		if fmt.Sprint(ours) == fmt.Sprint(theirs) && fmt.Sprintf("%T", ours) == fmt.Sprintf("%T", theirs) {
			return
		}
	}
	*diffs = append(*diffs, fmt.Sprintf("%s: ours %s, theirs %s", path, show(ours), show(theirs)))
}

func show(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}

// matchPath tells whether path (its segments after a leading "/") matches pattern (see kept).
func matchPath(pattern, at string) bool {
	ps := strings.Split(pattern, "/")
	ss := strings.Split(strings.TrimPrefix(at, "/"), "/")
	for i, p := range ps {
		if p == "**" && i == len(ps)-1 {
			return true
		}
		if i >= len(ss) {
			return false
		}
		if ok, _ := path.Match(p, ss[i]); !ok {
			return false
		}
	}
	return len(ps) == len(ss)
}
