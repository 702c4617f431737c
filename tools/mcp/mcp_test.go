package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/tools"
	"github.com/agiraph/agiraph/tools/mcp"
)

// connect connects to s, closing the set when the test ends.
func connect(t *testing.T, s mcp.Server) *mcp.Set {
	t.Helper()
	set, err := mcp.Connect(context.Background(), s)
	require.NoError(t, err)
	t.Cleanup(set.Close)
	return set
}

// registry returns a registry of the set's tools, capping output at 1000 bytes.
func registry(t *testing.T, set *mcp.Set) *tools.Registry {
	t.Helper()
	reg, err := tools.NewRegistry(set.Tools(), tools.WithMaxOutput(1000))
	require.NoError(t, err)
	return reg
}

// run makes one call through reg.
func run(reg *tools.Registry, name string, args any) tools.Result {
	raw, err := json.Marshal(args)
	if err != nil {
		panic(err)
	}
	return reg.Run(context.Background(), []tools.Call{{ID: "c1", Name: name, Args: raw}})[0]
}

// transports runs f on the test server over stdio and over streamable HTTP.
func transports(t *testing.T, f func(t *testing.T, s mcp.Server)) {
	t.Run("stdio", func(t *testing.T) { f(t, stdio(t, "tools", t.Name())) })
	t.Run("http", func(t *testing.T) {
		f(t, mcp.Server{Name: "t", URL: overHTTP(t), Headers: map[string]string{"Authorization": "Bearer s3cret"}})
	})
}

func TestToolsAreListedWithTheirSchemas(t *testing.T) {
	t.Parallel()
	transports(t, func(t *testing.T, s mcp.Server) {
		ts := connect(t, s).Tools()
		var names []string
		for _, tool := range ts {
			names = append(names, tool.Name)
		}
		want := []string{"t__big", "t__echo", "t__fail", "t__mixed", "t__sleep", "t__spawn"}
		if s.URL == "" {
			want = append(want, "t__crash")
		}
		assert.ElementsMatch(t, want, names, "every page of tools, prefixed with the server's name")

		echo := ts[slices.IndexFunc(ts, func(tool tools.Tool) bool { return tool.Name == "t__echo" })]
		assert.Equal(t, "Say the text back.", echo.Description)
		assert.True(t, echo.Safe, "a read-only tool may run alongside others")
		var schema struct {
			Type       string
			Required   []string
			Properties map[string]struct{ Type, Description string }
		}
		require.NoError(t, json.Unmarshal(echo.Schema, &schema))
		assert.Equal(t, "object", schema.Type)
		assert.Equal(t, []string{"text"}, schema.Required)
		assert.Equal(t, "string", schema.Properties["text"].Type)
		assert.Equal(t, "the text to say back", schema.Properties["text"].Description)

		fail := ts[slices.IndexFunc(ts, func(tool tools.Tool) bool { return tool.Name == "t__fail" })]
		assert.False(t, fail.Safe)
	})
}

func TestCalls(t *testing.T) {
	t.Parallel()
	transports(t, func(t *testing.T, s mcp.Server) {
		s.Timeout = 300 * time.Millisecond
		reg := registry(t, connect(t, s))

		r := run(reg, "t__echo", map[string]string{"text": "hello"})
		assert.False(t, r.IsError, r.Content)
		assert.Equal(t, "echo: hello", r.Content)

		r = run(reg, "t__echo", map[string]any{"text": 7})
		assert.True(t, r.IsError, "the schema is checked before the call")
		assert.Contains(t, r.Content, "text")

		r = run(reg, "t__fail", struct{}{})
		assert.True(t, r.IsError)
		assert.Contains(t, r.Content, "the disk is full")
		assert.Contains(t, r.Content, `tool "fail" of MCP server "t"`)

		r = run(reg, "t__mixed", struct{}{})
		assert.False(t, r.IsError, r.Content)
		assert.Equal(t, strings.Join([]string{
			"a picture:",
			"[image: image/png, 1234 bytes]",
			"[audio: audio/wav, 10 bytes]",
			"[resource link: notes, file:///notes.md, text/markdown]",
			"[resource: file:///a.txt, text/plain]",
			"embedded text",
		}, "\n"), r.Content)

		r = run(reg, "t__big", map[string]int{"n": 5000})
		assert.False(t, r.IsError, r.Content)
		assert.True(t, r.Truncated, "the registry caps the output as it caps every tool's")
		assert.Equal(t, strings.Repeat("x", 1000), r.Content[:1000])
		assert.Contains(t, r.Content, "[output truncated: 4000 of 5000 bytes cut]")

		r = run(reg, "t__sleep", struct{}{})
		assert.True(t, r.IsError)
		assert.Contains(t, r.Content, `tool "sleep" of MCP server "t" did not answer within 300ms`)

		r = run(reg, "t__echo", map[string]string{"text": "still there"})
		assert.Equal(t, "echo: still there", r.Content, "a call that timed out leaves the session usable")
	})
}

func TestErrorsWrapWhatHappened(t *testing.T) {
	t.Parallel()
	s := stdio(t, "tools", t.Name())
	s.Timeout = 200 * time.Millisecond
	set := connect(t, s)
	handler := func(name string) tools.Handler {
		for _, tool := range set.Tools() {
			if tool.Name == name {
				return tool.Handler
			}
		}
		t.Fatalf("no tool %s", name)
		return nil
	}
	_, err := handler("t__fail")(context.Background(), json.RawMessage(`{}`))
	assert.ErrorIs(t, err, mcp.ErrToolError)
	_, err = handler("t__sleep")(context.Background(), json.RawMessage(`{}`))
	assert.ErrorIs(t, err, mcp.ErrTimeout)

	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("the run was stopped"))
	_, err = handler("t__echo")(ctx, json.RawMessage(`{"text":"x"}`))
	require.Error(t, err)
	assert.NotErrorIs(t, err, mcp.ErrTimeout)
	assert.Contains(t, err.Error(), "the run was stopped")
}

func TestServerCrashingMidCall(t *testing.T) {
	t.Parallel()
	reg := registry(t, connect(t, stdio(t, "tools", t.Name())))
	r := run(reg, "t__crash", struct{}{})
	assert.True(t, r.IsError)
	assert.Contains(t, r.Content, `tool "crash" of MCP server "t" failed`)
	assert.Contains(t, r.Content, "exit status 3")
	assert.Contains(t, r.Content, "crashing now", "the end of its stderr")

	r = run(reg, "t__echo", map[string]string{"text": "anyone?"})
	assert.True(t, r.IsError)
	assert.Contains(t, r.Content, `tool "echo" of MCP server "t" cannot run: the server exited (exit status 3)`)
}

func TestServersThatDoNotStart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		s    func(t *testing.T) mcp.Server
		want []string
		is   error
	}{
		{"hangs on initialize", func(t *testing.T) mcp.Server {
			s := stdio(t, "hang", t.Name())
			s.InitTimeout = 300 * time.Millisecond
			return s
		}, []string{`mcp: server "t" did not start within 300ms`}, mcp.ErrTimeout},
		{"exits", func(t *testing.T) mcp.Server { return stdio(t, "exit", t.Name()) },
			[]string{`mcp: server "t" could not start`, "exit status 2", "boom: no configuration file"}, nil},
		{"missing command", func(*testing.T) mcp.Server {
			return mcp.Server{Name: "t", Command: []string{"agiraph-no-such-mcp-server"}}
		}, []string{`mcp: server "t": starting agiraph-no-such-mcp-server`, "not found"}, nil},
		{"missing folder", func(t *testing.T) mcp.Server {
			s := stdio(t, "tools", t.Name())
			s.Dir = "/no/such/folder"
			return s
		}, []string{`mcp: server "t": starting`, "/no/such/folder"}, nil},
		{"bad schema", func(t *testing.T) mcp.Server { return stdio(t, "badschema", t.Name()) },
			[]string{`mcp: server "t": tool "odd" cannot be used`, `unknown type "anything"`}, nil},
		{"refused over HTTP", func(t *testing.T) mcp.Server { return mcp.Server{Name: "t", URL: overHTTP(t)} },
			[]string{`mcp: server "t" could not start`, "Unauthorized"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			good := stdio(t, "tools", t.Name())
			good.Name = "good"
			set, err := mcp.Connect(context.Background(), good, tc.s(t))
			require.Error(t, err)
			assert.Nil(t, set)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
			if tc.is != nil {
				assert.ErrorIs(t, err, tc.is)
			}
			assert.NotContains(t, err.Error(), `"good"`, "only the server that failed is named")
			noneLeft(t, t.Name())
		})
	}
}

func TestConfigurationErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		servers []mcp.Server
		want    string
	}{
		{[]mcp.Server{{Name: "", Command: []string{"x"}}}, `server name ""`},
		{[]mcp.Server{{Name: "9lives", Command: []string{"x"}}}, "starting with a letter"},
		{[]mcp.Server{{Name: "a.b", Command: []string{"x"}}}, "A-Z a-z 0-9 _ -"},
		{[]mcp.Server{{Name: strings.Repeat("a", 33), Command: []string{"x"}}}, "1 to 32 characters"},
		{[]mcp.Server{{Name: "a"}}, `server "a": set Command`},
		{[]mcp.Server{{Name: "a", Command: []string{"x"}, URL: "http://h/mcp"}}, "not both"},
		{[]mcp.Server{{Name: "a", URL: "ftp://h/mcp"}}, "not an http or https URL"},
		{[]mcp.Server{{Name: "a", Command: []string{"x"}}, {Name: "a", Command: []string{"y"}}}, `two servers are named "a"`},
	} {
		_, err := mcp.Connect(context.Background(), tc.servers...)
		require.Error(t, err)
		assert.Contains(t, err.Error(), tc.want)
	}
}

func TestToolNames(t *testing.T) {
	t.Parallel()
	valid := regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	assert.Equal(t, "fs__read_file", mcp.ToolName("fs", "read_file"))
	seen := map[string]string{}
	for _, tool := range []string{
		"read_file", "read.file", "read/file", "read file", "读取", strings.Repeat("long", 20),
		strings.Repeat("long", 20) + "x", strings.Repeat("a", 60), strings.Repeat("a", 61),
	} {
		name := mcp.ToolName("fs", tool)
		assert.Regexp(t, valid, name, tool)
		assert.Equal(t, name, mcp.ToolName("fs", tool), "the same name every time")
		assert.True(t, strings.HasPrefix(name, "fs__"), name)
		if other, dup := seen[name]; dup {
			t.Errorf("%q and %q both become %q", other, tool, name)
		}
		seen[name] = tool
	}
	assert.Regexp(t, `^fs__read_file_[0-9a-f]{8}$`, mcp.ToolName("fs", "read.file"))
	assert.Len(t, mcp.ToolName("fs", strings.Repeat("a", 61)), 64)
}

func TestTwoServers(t *testing.T) {
	t.Parallel()
	a := stdio(t, "tools", t.Name())
	b := mcp.Server{Name: "web", URL: overHTTP(t), Headers: map[string]string{"Authorization": "Bearer s3cret"}}
	set, err := mcp.Connect(context.Background(), a, b)
	require.NoError(t, err)
	defer set.Close()
	reg := registry(t, set)
	rs := reg.Run(context.Background(), []tools.Call{
		{ID: "1", Name: "t__echo", Args: json.RawMessage(`{"text":"one"}`)},
		{ID: "2", Name: "web__echo", Args: json.RawMessage(`{"text":"two"}`)},
	})
	assert.Equal(t, "echo: one", rs[0].Content)
	assert.Equal(t, "echo: two", rs[1].Content)
	assert.Len(t, set.Tools(), 2*len(testTools)+1)
}

func TestClosedSet(t *testing.T) {
	t.Parallel()
	set, err := mcp.Connect(context.Background(), stdio(t, "tools", t.Name()))
	require.NoError(t, err)
	reg := registry(t, set)
	set.Close()
	set.Close() // again
	r := run(reg, "t__echo", map[string]string{"text": "late"})
	assert.True(t, r.IsError)
	assert.Equal(t, `tool "echo" of MCP server "t" cannot run: the connection to the server was closed`, r.Content)
	noneLeft(t, t.Name())
}

func ExampleToolName() {
	fmt.Println(mcp.ToolName("github", "create_issue"))
	fmt.Println(mcp.ToolName("docs", "search.pages"))
	// Output:
	// github__create_issue
	// docs__search_pages_fd4225f0
}

func TestCloseDuringACall(t *testing.T) {
	t.Parallel()
	transports(t, func(t *testing.T, s mcp.Server) {
		set, err := mcp.Connect(context.Background(), s)
		require.NoError(t, err)
		reg := registry(t, set)
		result := make(chan tools.Result)
		go func() { result <- run(reg, "t__sleep", struct{}{}) }()
		// The call may not have started yet when the set closes; either way it fails.
		require.Equal(t, "echo: ready", run(reg, "t__echo", map[string]string{"text": "ready"}).Content)
		set.Close()
		r := <-result
		assert.True(t, r.IsError, "a call still running when the set closes fails")
		assert.Contains(t, r.Content, `tool "sleep" of MCP server "t"`)
	})
}
