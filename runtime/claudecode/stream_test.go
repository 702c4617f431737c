package claudecode

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/adapter"
	"github.com/agiraph/agiraph/tools"
)

// The corpus: testdata/<Claude Code version>/<scenario>.jsonl, the standard output of the real
// CLI run against providertest's fake Messages API (recorded by TestCapture in capture_test.go).
// A folder <version>+partial holds the output with --include-partial-messages, as Run asks for
// (recorded with CLAUDE_CODE_INCLUDE_PARTIAL_MESSAGES=1, the variable the CLI reads for the flag);
// the others, without it, show what a CLI that prints no stream events gives.
const corpus = "testdata/*/*.jsonl"

// corpusLines returns every line of the corpus.
func corpusLines(t testing.TB) [][]byte {
	files, err := filepath.Glob(corpus)
	require.NoError(t, err)
	var lines [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for l := range bytes.Lines(b) {
			lines = append(lines, bytes.TrimSpace(l))
		}
	}
	return lines
}

// testStream returns a stream whose events are appended to *events; *killed says whether it
// killed the process.
func testStream(events *[]runtime.Event, killed *bool) *stream {
	rep := adapter.NewEmitter(runtime.Assignment{}, func(e runtime.Event) { *events = append(*events, e) })
	return &stream{rep: rep, tools: map[string]string{}, turns: map[string]bool{}, kill: func() { *killed = true }}
}

// retry401 is an api_retry line of 2.1.330 after a 401.
const retry401 = `{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":581,"error_status":401,"error":"authentication_failed","session_id":"s"}`

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		warning string // a part of the warning; "" for none
		fatal   error  // the fatal error's kind; nil for none
		check   func(t *testing.T, e *event)
	}{{
		name: "a fractional retry delay (2.1.197)",
		line: `{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":619.6007536683462,"error_status":500,"error":"server_error","session_id":"s","uuid":"u"}`,
		check: func(t *testing.T, e *event) {
			assert.InDelta(t, 619.6007536683462, e.RetryDelayMS, 1e-9)
			assert.Equal(t, "server_error", e.errorText())
		},
	}, {
		name: "numbers with exponents and fractions",
		line: `{"type":"result","subtype":"success","num_turns":3e0,"api_error_status":4.29E2,"total_cost_usd":1.5E-2,"usage":{"input_tokens":1e3,"output_tokens":2.0E2,"cache_read_input_tokens":7.0,"cache_creation_input_tokens":0}}`,
		check: func(t *testing.T, e *event) {
			assert.Equal(t, 3, e.NumTurns)
			require.NotNil(t, e.APIErrorStatus)
			assert.Equal(t, 429, *e.APIErrorStatus)
			assert.Equal(t, providers.Usage{InputTokens: 1000, OutputTokens: 200, CacheReadTokens: 7}, e.Usage.canonical())
		},
	}, {
		name: "unknown fields",
		line: `{"type":"assistant","brand_new":{"x":[1,2.5,null]},"message":{"id":"m","content":[{"type":"text","text":"hi","citations":null}],"usage":{"input_tokens":1,"iterations":[]}},"parent_tool_use_id":null}`,
		check: func(t *testing.T, e *event) {
			assert.Equal(t, "hi", textOf(e.Message.Content))
		},
	}, {
		name: "an unknown event type",
		line: `{"type":"rate_limit_event","rate_limit_info":{"status":"allowed","resetsAt":1.7e9}}`,
		check: func(t *testing.T, e *event) {
			assert.Equal(t, "rate_limit_event", e.Type)
		},
	}, {
		name: "a field of an unexpected type",
		line: `{"type":"system","subtype":"init","tools":"Bash","model":"claude-sonnet-4-5"}`, warning: "field tools is a JSON string",
		check: func(t *testing.T, e *event) {
			assert.Equal(t, "claude-sonnet-4-5", e.Model, "the other fields are read")
			assert.Empty(t, e.Tools)
		},
	}, {
		name: "an error that is an object",
		line: `{"type":"system","subtype":"api_retry","attempt":2,"max_retries":10,"retry_delay_ms":1200,"error_status":529,"error":{"type":"overloaded_error"}}`,
		check: func(t *testing.T, e *event) {
			assert.Equal(t, `{"type":"overloaded_error"}`, e.errorText())
		},
	}, {
		name: "an object cut short", line: `{"type":"assistant","message":{"id":"msg_1","content":[{"type":"te`, warning: "not valid JSON",
	}, {
		name: "an array", line: `[{"type":"result"}]`, warning: "not a JSON object",
	}, {
		name: "a string", line: `"hello"`, warning: "not a JSON object",
	}, {
		name: "null", line: `null`, warning: "not a JSON object",
	}, {
		name: "text", line: `Error: something went sideways`, warning: "not JSON",
	}, {
		name: "blank", line: " \t ",
	}, {
		name: "a retry after 401",
		line: retry401, fatal: providers.ErrAuth,
	}, {
		name: "a retry after 403",
		line: `{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":581,"error_status":403.0,"error":"permission_error"}`, fatal: providers.ErrAuth,
	}, {
		name: "a retry naming authentication without a status",
		line: `{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":581,"error_status":null,"error":"authentication_error: invalid x-api-key"}`, fatal: providers.ErrAuth,
	}, {
		name: "a retry after 529",
		line: `{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":581,"error_status":529,"error":"overloaded"}`,
	}, {
		name: "an assistant message naming authentication",
		line: `{"type":"assistant","message":{"id":"x","model":"<synthetic>","content":[{"type":"text","text":"Invalid API key · Fix external API key"}]},"error":"authentication_failed"}`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := parse([]byte(tt.line))
			if tt.warning == "" {
				assert.Empty(t, p.warning)
			} else {
				assert.Contains(t, p.warning, tt.warning)
				assert.Contains(t, p.warning, "could not read a line")
			}
			if tt.fatal == nil {
				assert.NoError(t, p.fatal)
			} else {
				assert.ErrorIs(t, p.fatal, tt.fatal)
			}
			if tt.check != nil {
				require.NotNil(t, p.event)
				tt.check(t, p.event)
			}
		})
	}

	p := parse([]byte(retry401))
	require.Error(t, p.fatal)
	assert.Equal(t, "authentication failed: the API answered status 401 authentication_failed; stopped Claude Code instead of letting it retry", p.fatal.Error())
}

// TestStream feeds lines to a stream: an unreadable line is a warning and the run goes on; an
// authentication failure kills the process and leaves an error result.
func TestStream(t *testing.T) {
	var events []runtime.Event
	var killed bool
	s := testStream(&events, &killed)
	s.read(strings.NewReader(strings.Join([]string{
		`{"type":"system","subtype":"init","session_id":"s1","model":"m","claude_code_version":"9.9.9"}`,
		`{"type":"assistant","message":{"id":"msg_1","content":[{"type":"te`,
		`{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":619.6007536683462,"error_status":500,"error":"server_error"}`,
		`{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"Done.","session_id":"s1"}`,
	}, "\n")))
	assert.False(t, killed)
	require.Len(t, events, 3)
	assert.Equal(t, runtime.Output, events[1].Kind)
	assert.Contains(t, events[1].Text, "could not read a line")
	assert.Equal(t, runtime.Retrying, events[2].Kind)
	assert.Equal(t, "API call failed (status 500 server_error); attempt 1 of 10 in 620ms", events[2].Text)
	require.NotNil(t, s.result)
	assert.Equal(t, "Done.", s.result.Result)

	events, killed = nil, false
	s = testStream(&events, &killed)
	s.read(strings.NewReader(strings.Join([]string{
		`{"type":"system","subtype":"init","session_id":"s1","model":"m","claude_code_version":"9.9.9"}`,
		`{"type":"assistant","message":{"id":"msg_1","content":[{"type":"text","text":"Hi."}],"usage":{"input_tokens":5}}}`,
		`{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":581,"error_status":401,"error":"authentication_failed"}`,
		`{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"not read","session_id":"s1"}`,
	}, "\n")))
	assert.True(t, killed)
	require.NotNil(t, s.result)
	assert.True(t, s.result.IsError)
	assert.Equal(t, "s1", s.result.SessionID)
	assert.Equal(t, 1, s.result.NumTurns)
	assert.Contains(t, s.result.Result, "authentication failed: the API answered status 401")
	assert.Equal(t, 5, s.usage().InputTokens)
	assert.Len(t, events, 2, "started and the model turn; no retrying")
}

// TestPartialMessages: with stream events, a model turn is reported when its message ends, with
// the usage of its message_delta, whatever other lines come between; one only started is
// dropped; one cut short by the end of the output is reported; the text deltas are reported as
// they come (those of a message cut short too), the other deltas and status lines make no events.
func TestPartialMessages(t *testing.T) {
	se := func(event string) string {
		return `{"type":"stream_event","event":` + event + `,"session_id":"s1","parent_tool_use_id":null}`
	}
	var events []runtime.Event
	var killed bool
	s := testStream(&events, &killed)
	s.read(strings.NewReader(strings.Join([]string{
		`{"type":"system","subtype":"init","session_id":"s1","model":"m","claude_code_version":"9.9.9"}`,
		`{"type":"system","subtype":"status","status":"requesting","session_id":"s1"}`,
		se(`{"type":"message_start","message":{"id":"m1","content":[],"usage":{"input_tokens":10,"cache_read_input_tokens":3,"cache_creation_input_tokens":2,"output_tokens":1}}}`),
		se(`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
		se(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me "}}`),
		se(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"look."}}`),
		`{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"Let me look."}],"usage":{"input_tokens":10,"output_tokens":1}}}`,
		se(`{"type":"content_block_stop","index":0}`),
		se(`{"type":"ping"}`),
		`{"type":"stream_event"}`,
		`{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"tu_1","name":"Bash","input":{"command":"ls"}}],"usage":{"input_tokens":10,"output_tokens":1}}}`,
		`{"type":"rate_limit_event","rate_limit_info":{"status":"allowed"}}`, // Output; the message goes on
		// As the CLI reads it: input and cache counts replace the start's when above zero.
		se(`{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"input_tokens":0,"cache_read_input_tokens":null,"output_tokens":25}}`),
		se(`{"type":"message_stop"}`),
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"tu_1","content":"a b"}]}}`,
		// An assistant event of a message already reported: its text and calls, at once.
		`{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"Also."},{"type":"tool_use","id":"tu_2","name":"Read","input":{}}],"usage":{"input_tokens":10,"output_tokens":1}}}`,
		// A stream cut short that the CLI tries again: dropped.
		se(`{"type":"message_start","message":{"id":"m_cut","content":[],"usage":{"input_tokens":99,"output_tokens":1}}}`),
		se(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Do"}}`),
		se(`{"type":"message_start","message":{"id":"m2","content":[],"usage":{"input_tokens":20,"output_tokens":1}}}`),
		`{"type":"assistant","message":{"id":"m2","content":[{"type":"text","text":"Done."}],"usage":{"input_tokens":20,"output_tokens":1}}}`,
		se(`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":21,"output_tokens":7}}`),
		// The output ends before message_stop and the result.
	}, "\n")))
	assert.False(t, killed)
	assert.Nil(t, s.result)
	var all []string
	for _, e := range events {
		all = append(all, string(e.Kind))
	}
	require.Equal(t, "started text_delta text_delta output model_turn tool_called tool_result model_turn tool_called text_delta model_turn", strings.Join(all, " "))
	var kinds, deltas []string
	for _, e := range events {
		if e.Kind == runtime.TextDelta {
			deltas = append(deltas, e.Text)
			continue
		}
		kinds = append(kinds, string(e.Kind))
	}
	assert.Equal(t, []string{"Let me ", "look.", "Do"}, deltas)
	events = slices.DeleteFunc(events, func(e runtime.Event) bool { return e.Kind == runtime.TextDelta })
	require.Equal(t, "started output model_turn tool_called tool_result model_turn tool_called model_turn", strings.Join(kinds, " "))
	assert.Contains(t, events[1].Text, "rate_limit_event")
	events = events[1:]
	assert.Equal(t, "Let me look.", events[1].Text)
	require.NotNil(t, events[1].Usage)
	assert.Equal(t, providers.Usage{InputTokens: 10, OutputTokens: 25, CacheReadTokens: 3, CacheWriteTokens: 2}, *events[1].Usage)
	assert.Equal(t, "tu_1:Bash", events[2].Tool.ID+":"+events[2].Tool.Name)
	assert.Equal(t, "Bash", events[3].Tool.Name)
	assert.Equal(t, "Also.", events[4].Text)
	assert.Nil(t, events[4].Usage, "the message's usage was reported")
	assert.Equal(t, "tu_2:Read", events[5].Tool.ID+":"+events[5].Tool.Name)
	assert.Equal(t, "Done.", events[6].Text)
	require.NotNil(t, events[6].Usage)
	assert.Equal(t, providers.Usage{InputTokens: 21, OutputTokens: 7}, *events[6].Usage)
	assert.Equal(t, providers.Usage{InputTokens: 31, OutputTokens: 32, CacheReadTokens: 3, CacheWriteTokens: 2}, s.usage(), "no result: the turns' sum")
	assert.Len(t, s.perMsg, 2)
	assert.Equal(t, "stream_event/message_delta", s.lastKind())
}

// TestCorpus reads the recorded transcripts of every CLI version: no line gets a warning, and
// the result, usage, tool calls, retries and each model turn's usage come out of each.
func TestCorpus(t *testing.T) {
	type want struct {
		result  string
		isError bool
		status  int // the result's api_error_status
		turns   int
		usage   providers.Usage
		texts   string // the model turns' texts, "|" between turns
		kinds   string // the events' kinds
		calls   string // "id:name ..."
		retries int    // Retrying events
		auth    int    // when non-zero, the run stops at the first api_retry, with this status
		// turn is each model turn's usage: what the fake API charged with --include-partial-messages;
		// without it, output_tokens is message_start's 1 (the CLI prints nothing later).
		turn providers.Usage
		// own: the model turns are the CLI's own making, which no API streamed (no text deltas)
		own bool
		// outputs is the number of Output events: one per tool call the CLI denied
		outputs int
	}
	turn := providers.Usage{InputTokens: 1000, OutputTokens: 200, CacheReadTokens: 300, CacheWriteTokens: 50}
	wants := map[string]want{
		"tools": {result: "Wrote report.md and out.txt.", turns: 3, calls: "toolu_bash:Bash toolu_write:Write",
			texts: "Counting widgets.|Now the report.|Wrote report.md and out.txt.", turn: turn,
			kinds: "started model_turn tool_called tool_result model_turn tool_called tool_result model_turn",
			usage: providers.Usage{InputTokens: 3000, OutputTokens: 600, CacheReadTokens: 900, CacheWriteTokens: 150, CostUSD: 0.0188325}},
		"retry": {result: "Hello.", turns: 1, retries: 1, texts: "Hello.", turn: turn, kinds: "started retrying model_turn",
			usage: providers.Usage{InputTokens: 1000, OutputTokens: 200, CacheReadTokens: 300, CacheWriteTokens: 50, CostUSD: 0.0062775}},
		// The CLI denies Bash in dontAsk mode; the model answers without it.
		"denied": {result: "Bash was denied.", turns: 2, calls: "toolu_bash:Bash", outputs: 1,
			texts: "Counting widgets.|Bash was denied.", turn: turn,
			kinds: "started model_turn tool_called output tool_result model_turn",
			usage: providers.Usage{InputTokens: 2000, OutputTokens: 400, CacheReadTokens: 600, CacheWriteTokens: 100, CostUSD: 0.012555}},
		// A 400 is not retried; the CLI's error is a model turn of its own making.
		"api400": {result: "API Error: 400 Invalid request", isError: true, status: 400, turns: 1, kinds: "started model_turn", own: true,
			texts: "API Error: 400 Invalid request"},
		"auth401": {result: "Invalid API key · Fix external API key", isError: true, status: 401, turns: 1, auth: 401},
		// The CLI does not retry a 403; its error is a model turn of its own making, of no cost.
		"auth403": {result: "Failed to authenticate. API Error: 403 Your API key does not have permission to use the specified resource.",
			isError: true, status: 403, turns: 1, kinds: "started model_turn", own: true, texts: "Failed to authenticate. API Error: 403 Your API key does not have permission to use the specified resource."},
	}
	files, err := filepath.Glob(corpus)
	require.NoError(t, err)
	versions := map[string]bool{}
	for _, f := range files {
		dir, scenario := filepath.Base(filepath.Dir(f)), strings.TrimSuffix(filepath.Base(f), ".jsonl")
		versions[dir] = true
		version, flags, _ := strings.Cut(dir, "+")
		t.Run(dir+"/"+scenario, func(t *testing.T) {
			w, ok := wants[scenario]
			require.True(t, ok, "no expectations for the scenario %s", scenario)
			b, err := os.ReadFile(f)
			require.NoError(t, err)

			// Line by line: no warnings; only an api_retry with an authentication status is fatal.
			var last *event
			sc := bufio.NewScanner(bytes.NewReader(b))
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				p := parse(sc.Bytes())
				assert.Empty(t, p.warning)
				require.NotNil(t, p.event, "%s", sc.Text())
				if w.auth != 0 && p.event.Subtype == "api_retry" {
					assert.ErrorIs(t, p.fatal, providers.ErrAuth)
				} else {
					assert.NoError(t, p.fatal)
				}
				last = p.event
			}
			require.NoError(t, sc.Err())
			require.NotNil(t, last)
			assert.Equal(t, "result", last.Type, "the last line")
			assert.Equal(t, w.isError, last.IsError)
			assert.Equal(t, w.turns, last.NumTurns)
			if w.result != "" {
				assert.Equal(t, w.result, last.Result)
			}
			if w.status != 0 {
				require.NotNil(t, last.APIErrorStatus)
				assert.Equal(t, w.status, *last.APIErrorStatus)
			} else {
				assert.Nil(t, last.APIErrorStatus)
			}

			// The whole transcript through a stream.
			var events []runtime.Event
			var killed bool
			s := testStream(&events, &killed)
			s.read(bytes.NewReader(b))
			assert.NoError(t, s.readErr)
			require.NotNil(t, s.result)
			// The text deltas, with --include-partial-messages: before each model turn, its text.
			var kinds, calls, streamed []string
			var delta strings.Builder
			outputs := 0
			for _, e := range events {
				switch e.Kind {
				case runtime.TextDelta:
					delta.WriteString(e.Text)
					continue
				case runtime.ModelTurn:
					streamed = append(streamed, delta.String())
					delta.Reset()
				}
				kinds = append(kinds, string(e.Kind))
				if e.Kind == runtime.ToolCalled {
					calls = append(calls, e.Tool.ID+":"+e.Tool.Name)
				}
				if e.Kind == runtime.Output {
					outputs++
					assert.Contains(t, e.Text, "Claude Code denied ")
				}
			}
			assert.Equal(t, w.outputs, outputs, "Output events")
			require.NotEmpty(t, events)
			assert.Equal(t, runtime.Started, events[0].Kind)
			assert.Contains(t, events[0].Text, "Claude Code "+version+": model claude-sonnet-4-5")
			if w.auth != 0 {
				assert.True(t, killed)
				assert.True(t, s.result.IsError)
				assert.Contains(t, s.result.Result, "authentication failed: the API answered status "+strconv.Itoa(w.auth))
				assert.Equal(t, s.session, s.result.SessionID)
				assert.Equal(t, "started", strings.Join(kinds, " "), "nothing after the first retry")
				return
			}
			assert.False(t, killed)
			assert.Equal(t, w.result, s.result.Result)
			assert.Equal(t, w.turns, s.result.NumTurns)
			assert.Equal(t, last.SessionID, s.session)
			u := s.usage()
			assert.InDelta(t, w.usage.CostUSD, u.CostUSD, 1e-12)
			u.CostUSD = w.usage.CostUSD
			assert.Equal(t, w.usage, u)
			assert.Equal(t, w.calls, strings.Join(calls, " "))
			assert.Equal(t, w.retries, strings.Count(strings.Join(kinds, " "), string(runtime.Retrying)))

			// One model turn per message, before its tool calls, with what it cost.
			assert.Equal(t, w.kinds, strings.Join(kinds, " "))
			wantTurn := w.turn
			if flags != "partial" && wantTurn.OutputTokens > 0 {
				wantTurn.OutputTokens = 1
			}
			var texts []string
			var sum providers.Usage
			for _, e := range events {
				if e.Kind != runtime.ModelTurn {
					continue
				}
				texts = append(texts, e.Text)
				require.NotNil(t, e.Usage, "model turn %d", len(texts))
				assert.Equal(t, wantTurn, *e.Usage, "model turn %d", len(texts))
				sum = sum.Add(*e.Usage)
			}
			assert.Equal(t, w.texts, strings.Join(texts, "|"))
			if flags == "partial" && !w.own {
				assert.Equal(t, texts, streamed, "the text deltas of each turn")
			} else {
				assert.Empty(t, strings.Join(streamed, ""), "text deltas without stream events")
			}
			assert.Empty(t, delta.String(), "text deltas after the last turn")
			assert.Len(t, s.perMsg, w.turns)
			if flags == "partial" {
				// The turns add up to the result, which a run without a result falls back on.
				s.result = nil
				assert.Equal(t, sum, s.usage())
				w.usage.CostUSD = 0
				assert.Equal(t, w.usage, sum)
			}
			var results []runtime.Event
			for _, e := range events {
				if e.Kind == runtime.ToolResult {
					results = append(results, e)
				}
			}
			require.Len(t, results, len(calls))
			for i, r := range results {
				assert.Equal(t, calls[i], r.Tool.ID+":"+r.Tool.Name)
				assert.Equal(t, w.outputs > 0, r.Tool.IsError, "a denied call's result is an error")
			}
		})
	}
	assert.Contains(t, versions, "2.1.330", "the version CI runs")
	assert.Contains(t, versions, "2.1.330+partial", "the version CI runs, as Run runs it")
	assert.Contains(t, versions, "2.1.197", "the version that printed a fractional retry_delay_ms")
}

// FuzzStream: parse never panics, a line of valid JSON is fatal only when it is an api_retry with
// an authentication failure, and a stream reading any line never panics.
func FuzzStream(f *testing.F) {
	for _, l := range corpusLines(f) {
		f.Add(l)
	}
	for _, l := range []string{
		``, `{}`, `[]`, `null`, `0`, `"x"`, `{"type":5}`, `{"type":"system","subtype":"api_retry","error_status":-1e308}`,
		`{"type":"result","num_turns":1e400}`, `{"type":"assistant","message":{"content":"plain"}}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","content":{"a":1}}]}}`,
		`{"type":"assistant","message":{"id":"m","content":[{"type":"tool_use","id":"t","name":"Bash","input":"x"}]}}`,
		`{"type":"system","subtype":"api_retry","error":["authentication"]}`, `{"type":"sys`, "Error: x\n{}",
	} {
		f.Add([]byte(l))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		p := parse(line)
		if json.Valid(line) && p.fatal != nil {
			require.ErrorIs(t, p.fatal, providers.ErrAuth)
			require.NotNil(t, p.event)
			require.Equal(t, "system/api_retry", p.event.Type+"/"+p.event.Subtype)
		}
		if p.fatal == nil && len(bytes.TrimSpace(line)) > 0 {
			require.True(t, p.event != nil || p.warning != "", "a line neither read nor warned about")
		}
		var events []runtime.Event
		var killed bool
		s := testStream(&events, &killed)
		s.read(bytes.NewReader(line))
		s.usage()
		s.lastKind()
		if s.result != nil {
			s.result.denials()
		}
	})
}

// BenchmarkStream reads the tools transcript with stream events, most of them content block
// deltas, through a stream.
func BenchmarkStream(b *testing.B) {
	data, err := os.ReadFile("testdata/2.1.330+partial/tools.jsonl")
	require.NoError(b, err)
	lines := bytes.Count(data, []byte("\n"))
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		var events []runtime.Event
		var killed bool
		testStream(&events, &killed).read(bytes.NewReader(data))
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*lines), "ns/line")
}

// A call of a work tool over MCP that runs before the output shows it is reported as it runs,
// before its model turn, and not again when the output shows it; a permission_denied line read
// while its message is being read comes after the message's calls.
func TestCallsBeforeTheirMessageEnds(t *testing.T) {
	var events []runtime.Event
	var killed bool
	s := testStream(&events, &killed)
	s.mcpCall(tools.Call{ID: "toolu_send", Name: "send_message", Args: json.RawMessage(`{"to":"coordinator","content":"hi"}`)})
	s.read(strings.NewReader(strings.Join([]string{
		`{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":5,"output_tokens":1}}}}`,
		`{"type":"assistant","message":{"id":"msg_1","content":[{"type":"tool_use","id":"toolu_send","name":"mcp__agiraph__send_message","input":{"to":"coordinator","content":"hi"}}]}}`,
		`{"type":"assistant","message":{"id":"msg_1","content":[{"type":"tool_use","id":"toolu_bash","name":"Bash","input":{"command":"ls"}}]}}`,
		`{"type":"system","subtype":"permission_denied","tool_name":"Bash","tool_use_id":"toolu_bash","decision_reason_type":"mode","message":"Permission to use Bash has been denied."}`,
		`{"type":"stream_event","event":{"type":"message_delta","usage":{"output_tokens":9}}}`,
		`{"type":"stream_event","event":{"type":"message_stop"}}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_send","content":"Sent to coordinator."}]}}`,
	}, "\n")))
	s.mcpCall(tools.Call{ID: "toolu_send", Name: "send_message"}) // a call the output showed: nothing
	var got []string
	for _, e := range events {
		switch e.Kind {
		case runtime.ToolCalled, runtime.ToolResult:
			got = append(got, string(e.Kind)+" "+e.Tool.ID+" "+e.Tool.Name)
		case runtime.Output:
			got = append(got, string(e.Kind)+" "+e.Text)
		default:
			got = append(got, string(e.Kind))
		}
	}
	assert.Equal(t, []string{
		"tool_called toolu_send mcp__agiraph__send_message",
		"model_turn",
		"tool_called toolu_bash Bash",
		"output Claude Code denied Bash (toolu_bash) by mode: Permission to use Bash has been denied.",
		"tool_result toolu_send mcp__agiraph__send_message",
	}, got)
	assert.JSONEq(t, `{"to":"coordinator","content":"hi"}`, string(events[0].Tool.Args))
}
