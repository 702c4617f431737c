package langchain

import (
	"io"
	"strings"
	"testing"
)

// TestStreamedCalls feeds the transport's body reader streams that langchaingo v0.1.14
// assembles wrongly (it appends arguments to the last call, ignoring the index, and keeps the
// finish reason of the last chunk). The fake server of providertest streams calls one after the
// other, so these shapes are only reachable here.
func TestStreamedCalls(t *testing.T) {
	cases := []struct {
		name   string
		chunks []string
		want   [][3]string // id, name, arguments
		finish string
	}{
		{"interleaved indexes", []string{
			`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"f","arguments":""}},{"index":1,"id":"b","type":"function","function":{"name":"g","arguments":""}}]}}]}`,
			`{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"x\":"}}]}}]}`,
			`{"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"y\":2}"}}]}}]}`,
			`{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}}]}`,
			`{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}`,
		}, [][3]string{{"a", "f", `{"x":1}`}, {"b", "g", `{"y":2}`}}, "tool_calls"},
		{"every call index 0", []string{
			`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{}"}}]}}]}`,
			`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"b","function":{"name":"g","arguments":"{\"y\":2}"}}]}}]}`,
			`{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}`,
		}, [][3]string{{"a", "f", `{}`}, {"b", "g", `{"y":2}`}}, "tool_calls"},
		{"no type, no index", []string{
			`{"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"f","arguments":"{\"x\":1}"}}]}}]}`,
			`{"choices":[{"delta":{"tool_calls":[{"id":"b","function":{"name":"g","arguments":"{}"}}]}}]}`,
			`{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}`,
			`{"choices":[{"delta":{},"finish_reason":null}],"usage":null}`,
		}, [][3]string{{"a", "f", `{"x":1}`}, {"b", "g", `{}`}}, "tool_calls"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var sse strings.Builder
			sse.WriteString(": keep-alive\n\n")
			for _, ch := range c.chunks {
				sse.WriteString("data: " + ch + "\n\n")
			}
			sse.WriteString("data: [DONE]\n\n")
			rec := &recorder{}
			body := &sniffer{ReadCloser: io.NopCloser(&smallReads{r: strings.NewReader(sse.String())}), rec: rec, stream: true}
			if _, err := io.ReadAll(body); err != nil {
				t.Fatal(err)
			}
			body.Close()
			calls, finish := rec.streamed()
			if finish != c.finish {
				t.Errorf("finish = %q, want %q", finish, c.finish)
			}
			if len(calls) != len(c.want) {
				t.Fatalf("calls = %+v, want %d", calls, len(c.want))
			}
			for i, w := range c.want {
				if got := [3]string{calls[i].ID, calls[i].Name, string(calls[i].Args)}; got != w {
					t.Errorf("call %d = %q, want %q", i, got, w)
				}
			}
		})
	}
}

// smallReads returns at most 7 bytes a read, so lines are split across reads.
type smallReads struct{ r io.Reader }

func (s *smallReads) Read(p []byte) (int, error) { return s.r.Read(p[:min(len(p), 7)]) }
