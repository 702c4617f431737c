package providertest

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/agiraph/agiraph/providers"
)

// NewResponses starts a fake OpenAI Responses API (POST /v1/responses, the API Codex speaks)
// that answers with replies, one per request, in order. Give a client URL() as its base URL
// (it ends in /v1, as Codex's model_providers.<id>.base_url and the OpenAI SDKs expect).
//
// A reply's text becomes a message output item and each call a function_call item after it
// (call_id: the call's ID, or a generated one); Reply.Blocks are ignored. Reply.Stop
// "max_output_tokens" or "content_filter" ends the response as incomplete with that reason;
// any other stop is a completed response. A MidStream error is a response.failed event.
func NewResponses(t T, replies ...Reply) *Server {
	t.Helper()
	return newServer(t, "responses", "/v1", replies, nil, serveResponses)
}

// NewResponsesFunc starts a fake OpenAI Responses API that answers every request with fn. fn
// runs on the server's goroutines, possibly concurrently.
func NewResponsesFunc(t T, fn func(Request) Reply) *Server {
	t.Helper()
	return newServer(t, "responses", "/v1", nil, fn, serveResponses)
}

// Input returns the Responses API body's "input" items (nil if absent or a plain string), each
// as decoded JSON: messages, function_call and function_call_output items, reasoning items.
func (r Request) Input() []map[string]any {
	return objects(r.JSON["input"])
}

// objects returns the objects of a decoded JSON array.
func objects(v any) []map[string]any {
	arr, _ := v.([]any)
	var out []map[string]any
	for _, m := range arr {
		if mm, ok := m.(map[string]any); ok {
			out = append(out, mm)
		}
	}
	return out
}

type responsesUsage struct {
	InputTokens         int            `json:"input_tokens"`
	InputTokensDetails  map[string]int `json:"input_tokens_details"`
	OutputTokens        int            `json:"output_tokens"`
	OutputTokensDetails map[string]int `json:"output_tokens_details"`
	TotalTokens         int            `json:"total_tokens"`
}

type responsesOutputText struct {
	Type        string `json:"type"`
	Annotations []any  `json:"annotations"`
	Logprobs    []any  `json:"logprobs"`
	Text        string `json:"text"`
}

type responsesMessage struct {
	ID      string                `json:"id"`
	Type    string                `json:"type"`
	Status  string                `json:"status"`
	Content []responsesOutputText `json:"content"`
	Role    string                `json:"role"`
}

type responsesFunctionCall struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Status    string `json:"status"`
	Arguments string `json:"arguments"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
}

type responsesError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// responsesObject is the Response object: the answer of a request without a stream, and what
// the stream's response.* lifecycle events carry.
type responsesObject struct {
	ID                 string          `json:"id"`
	Object             string          `json:"object"`
	CreatedAt          int64           `json:"created_at"`
	Status             string          `json:"status"`
	Background         bool            `json:"background"`
	Error              *responsesError `json:"error"`
	IncompleteDetails  map[string]any  `json:"incomplete_details"`
	Instructions       any             `json:"instructions"`
	MaxOutputTokens    any             `json:"max_output_tokens"`
	Model              string          `json:"model"`
	Output             []any           `json:"output"`
	ParallelToolCalls  bool            `json:"parallel_tool_calls"`
	PreviousResponseID any             `json:"previous_response_id"`
	PromptCacheKey     any             `json:"prompt_cache_key"`
	Reasoning          any             `json:"reasoning"`
	ServiceTier        string          `json:"service_tier"`
	Store              bool            `json:"store"`
	Temperature        float64         `json:"temperature"`
	Text               any             `json:"text"`
	ToolChoice         any             `json:"tool_choice"`
	Tools              any             `json:"tools"`
	TopP               float64         `json:"top_p"`
	Truncation         string          `json:"truncation"`
	Usage              *responsesUsage `json:"usage"`
	User               any             `json:"user"`
	Metadata           any             `json:"metadata"`
}

// responsesErrorOf returns the status and error of an error reply: Chat Completions' errors,
// but with the Responses API's own words for a context window or a bad input.
func responsesErrorOf(r Reply) (int, openAIErrDetail) {
	status, d := openAIErrorOf(r)
	switch {
	case r.ErrorMessage != "" || r.Status != 0:
	case errors.Is(r.Err, providers.ErrContextWindow):
		d.Param, d.Message = strp("input"), "Your input exceeds the context window of this model. Please adjust your input and try again."
	case errors.Is(r.Err, providers.ErrBadRequest):
		d.Param, d.Message = strp("input"), "No tool output found for function call call_test_0001_0."
	}
	return status, d
}

// responsesFailure is the error a response.failed event carries for an error reply.
func responsesFailure(r Reply) *responsesError {
	_, d := responsesErrorOf(r)
	code := d.Type
	switch {
	case r.ErrorCode != "":
		code = r.ErrorCode
	case errors.Is(r.Err, providers.ErrOverloaded):
		code = "server_is_overloaded"
	case d.Code != nil:
		code = *d.Code
	}
	return &responsesError{Code: code, Message: d.Message}
}

func serveResponses(s *Server, w http.ResponseWriter, r *http.Request, req Request) {
	missing := func(req Request) *openAIErrDetail {
		if _, ok := req.JSON["model"]; !ok {
			return &openAIErrDetail{Type: "invalid_request_error", Param: strp("model"), Code: strp("missing_required_parameter"),
				Message: "Missing required parameter: 'model'."}
		}
		if f, ok := object(req.JSON["text"])["format"]; ok {
			if p := openAIFormatProblem(object(f), "text.format"); p != "" {
				return &openAIErrDetail{Type: "invalid_request_error", Param: strp("text.format"), Message: p}
			}
		}
		return mediaDetail(req)
	}
	reply, h, ok := openAIAccept(s, w, r, req, "/v1/responses", missing, responsesErrorOf)
	if !ok {
		return
	}
	resp, ok := responsesBuild(s, req, reply)
	if !ok {
		openAIFail(w, req, 500, openAIErrDetail{Type: "server_error", Message: "providertest: a scripted tool call has invalid JSON arguments"}, nil)
		return
	}
	if !req.Stream {
		writeJSON(w, http.StatusOK, resp, h)
		return
	}
	responsesStream(w, resp, reply, h)
}

// responsesBuild makes the final Response object of a successful reply, echoing the request's
// settings as the API does.
func responsesBuild(s *Server, req Request, r Reply) (responsesObject, bool) {
	model := r.Model
	if model == "" {
		model = req.Model
	}
	n := idNum(req)
	output := []any{}
	if r.Text != "" {
		output = append(output, responsesMessage{ID: "msg_test_" + n, Type: "message", Status: "completed", Role: "assistant",
			Content: []responsesOutputText{{Type: "output_text", Annotations: []any{}, Logprobs: []any{}, Text: r.Text}}})
	}
	for i, call := range r.Calls {
		a, ok := args(call)
		if !ok {
			s.t.Errorf("providertest: reply %d: tool call %q has invalid JSON arguments %q", req.Index+1, call.Name, call.Args)
			return responsesObject{}, false
		}
		id := call.ID
		if id == "" {
			id = "call_test_" + n + "_" + strconv.Itoa(i)
		}
		output = append(output, responsesFunctionCall{ID: "fc_test_" + n + "_" + strconv.Itoa(i), Type: "function_call",
			Status: "completed", Arguments: string(a), CallID: id, Name: call.Name})
	}
	input := r.Usage.InputTokens + r.Usage.CacheReadTokens
	format := any(map[string]any{"type": "text"})
	if f, ok := object(req.JSON["text"])["format"]; ok {
		format = f
	}
	o := responsesObject{
		ID: "resp_test_" + n, Object: "response", CreatedAt: time.Now().Unix(), Status: "completed",
		Model: model, Output: output, ServiceTier: "default", Truncation: "disabled",
		ParallelToolCalls: true, Store: true, Temperature: 1, TopP: 1, ToolChoice: "auto", Tools: []any{},
		Reasoning: map[string]any{"effort": nil, "summary": nil},
		Text:      map[string]any{"format": format, "verbosity": "medium"},
		Metadata:  map[string]any{},
		Usage: &responsesUsage{
			InputTokens: input, InputTokensDetails: map[string]int{"cached_tokens": r.Usage.CacheReadTokens},
			OutputTokens: r.Usage.OutputTokens, OutputTokensDetails: map[string]int{"reasoning_tokens": 0},
			TotalTokens: input + r.Usage.OutputTokens,
		},
	}
	echo := func(field string, into *any) {
		if v, ok := req.JSON[field]; ok {
			*into = v
		}
	}
	echo("instructions", &o.Instructions)
	echo("max_output_tokens", &o.MaxOutputTokens)
	echo("previous_response_id", &o.PreviousResponseID)
	echo("prompt_cache_key", &o.PromptCacheKey)
	echo("reasoning", &o.Reasoning)
	echo("text", &o.Text)
	echo("tool_choice", &o.ToolChoice)
	echo("tools", &o.Tools)
	echo("user", &o.User)
	echo("metadata", &o.Metadata)
	if v, ok := req.JSON["parallel_tool_calls"].(bool); ok {
		o.ParallelToolCalls = v
	}
	if v, ok := req.JSON["store"].(bool); ok {
		o.Store = v
	}
	if v, ok := req.JSON["temperature"].(float64); ok {
		o.Temperature = v
	}
	if v, ok := req.JSON["top_p"].(float64); ok {
		o.TopP = v
	}
	if r.Stop == "max_output_tokens" || r.Stop == "content_filter" {
		o.Status, o.IncompleteDetails = "incomplete", map[string]any{"reason": r.Stop}
	}
	return o, true
}

// responsesStream sends resp as the Responses API's event stream: response.created and
// response.in_progress, each output item's events, then response.completed (or
// response.incomplete, or response.failed for a MidStream error).
func responsesStream(w http.ResponseWriter, resp responsesObject, r Reply, h http.Header) {
	ev := startSSE(w, h)
	seq := 0
	send := func(typ string, fields map[string]any) {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		ev.event(typ, fields)
	}
	start := resp
	start.Status, start.Output, start.Usage, start.IncompleteDetails = "in_progress", []any{}, nil, nil
	send("response.created", map[string]any{"response": start})
	send("response.in_progress", map[string]any{"response": start})
	if r.isError() { // MidStream
		if errors.Is(r.Err, providers.ErrConnection) {
			abort()
		}
		failed := start
		failed.Status, failed.Error = "failed", responsesFailure(r)
		send("response.failed", map[string]any{"response": failed})
		return
	}
	for i, item := range resp.Output {
		switch it := item.(type) {
		case responsesMessage:
			added := it
			added.Status, added.Content = "in_progress", []responsesOutputText{}
			send("response.output_item.added", map[string]any{"output_index": i, "item": added})
			part := responsesOutputText{Type: "output_text", Annotations: []any{}, Logprobs: []any{}}
			send("response.content_part.added", map[string]any{"item_id": it.ID, "output_index": i, "content_index": 0, "part": part})
			text := it.Content[0].Text
			for _, w := range words(text) {
				send("response.output_text.delta", map[string]any{"item_id": it.ID, "output_index": i, "content_index": 0, "delta": w, "logprobs": []any{}})
			}
			send("response.output_text.done", map[string]any{"item_id": it.ID, "output_index": i, "content_index": 0, "text": text, "logprobs": []any{}})
			part.Text = text
			send("response.content_part.done", map[string]any{"item_id": it.ID, "output_index": i, "content_index": 0, "part": part})
		case responsesFunctionCall:
			added := it
			added.Status, added.Arguments = "in_progress", ""
			send("response.output_item.added", map[string]any{"output_index": i, "item": added})
			for _, p := range pieces(it.Arguments, 3) {
				send("response.function_call_arguments.delta", map[string]any{"item_id": it.ID, "output_index": i, "delta": p})
			}
			send("response.function_call_arguments.done", map[string]any{"item_id": it.ID, "output_index": i, "name": it.Name, "arguments": it.Arguments})
		}
		send("response.output_item.done", map[string]any{"output_index": i, "item": item})
	}
	end := "response.completed"
	if resp.Status == "incomplete" {
		end = "response.incomplete"
	}
	send(end, map[string]any{"response": resp})
}
