package anthropic

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/packages/param"

	"github.com/agiraph/agiraph/providers"
)

// params translates a canonical request into the SDK's request.
func (m *Model) params(req providers.Request) (sdk.MessageNewParams, error) {
	if err := fileLimits.CheckMessages(providerName, m.model, req.Messages); err != nil {
		return sdk.MessageNewParams{}, err
	}
	msgs, err := m.messages(req.Messages)
	if err != nil {
		return sdk.MessageNewParams{}, err
	}
	p := sdk.MessageNewParams{
		Model:         sdk.Model(m.model),
		MaxTokens:     int64(m.cfg.maxTokens),
		Messages:      msgs,
		Tools:         m.tools(req.Tools),
		StopSequences: req.Stop,
	}
	if req.MaxTokens > 0 {
		p.MaxTokens = int64(req.MaxTokens)
	}
	if req.System != "" {
		p.System = []sdk.TextBlockParam{{Text: req.System}}
	}
	if req.Temperature != nil {
		p.Temperature = param.NewOpt(*req.Temperature)
	}
	if len(p.Tools) > 0 {
		p.ToolChoice = toolChoice(req.Choice)
	}
	if o := req.Output; o != nil {
		var schema map[string]any
		if err := json.Unmarshal(o.Schema, &schema); err != nil || schema == nil {
			return sdk.MessageNewParams{}, &providers.Error{
				Provider: providerName, Model: m.model, Kind: providers.ErrBadRequest,
				Message: fmt.Sprintf("the schema of output %s is not a JSON object", o.ResultName()),
			}
		}
		p.OutputConfig = sdk.OutputConfigParam{Format: sdk.JSONOutputFormatParam{Schema: schema}}
	}
	if !m.cfg.noCaching {
		setCacheBreakpoints(&p)
	}
	return p, nil
}

// messages translates the conversation. Consecutive messages of one role are merged, as the API
// wants roles to alternate; messages left without blocks are dropped.
func (m *Model) messages(in []providers.Message) ([]sdk.MessageParam, error) {
	var out []sdk.MessageParam
	for _, msg := range in {
		blocks, err := m.blocks(msg.Parts)
		if err != nil {
			return nil, err
		}
		if len(blocks) == 0 {
			continue
		}
		role := sdk.MessageParamRoleUser
		if msg.Role == providers.Assistant {
			role = sdk.MessageParamRoleAssistant
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Content = append(out[n-1].Content, blocks...)
			continue
		}
		out = append(out, sdk.MessageParam{Role: role, Content: blocks})
	}
	return out, nil
}

// blocks translates the parts of one message into content blocks.
func (m *Model) blocks(parts []providers.Part) ([]sdk.ContentBlockParamUnion, error) {
	var out []sdk.ContentBlockParamUnion
	for _, p := range parts {
		switch {
		case p.Type == providers.TextPart && p.Text != "": // the API refuses empty text blocks
			out = append(out, sdk.NewTextBlock(p.Text))
		case p.Type == providers.ToolCallPart && p.ToolCall != nil:
			c := p.ToolCall
			out = append(out, sdk.NewToolUseBlock(c.ID, toolInput(c.Args), c.Name))
		case p.Type == providers.ToolResultPart && p.ToolResult != nil:
			out = append(out, toolResult(p.ToolResult.CallID, p.ToolResult.Content, p.ToolResult.IsError))
		case p.Type == providers.FilePart:
			out = append(out, file(p.File))
		case p.Type == providers.OpaquePart && p.Provider == providerName && len(p.Raw) > 0:
			if !json.Valid(p.Raw) {
				return nil, &providers.Error{
					Provider: providerName, Model: m.model, Kind: providers.ErrBadRequest,
					Message: fmt.Sprintf("an opaque anthropic part is not valid JSON: %.80q", p.Raw),
				}
			}
			out = append(out, param.Override[sdk.ContentBlockParamUnion](json.RawMessage(p.Raw)))
		}
	}
	return out, nil
}

// fileLimits are the files the Messages API takes: images of up to 5 MB and PDFs within the
// 32 MB a request may have, both counted base64-encoded, as bytes or from a URL.
var fileLimits = providers.FileLimits{
	Images: true, PDFs: true, ImageURLs: true, PDFURLs: true,
	MaxImage: 5 << 20 / 4 * 3, MaxPDF: 32 << 20 / 4 * 3,
}

// file translates a file that fileLimits took into an image block or a PDF document block
// (titled with the file's name), of its URL or its bytes base64-encoded.
func file(f *providers.File) sdk.ContentBlockParamUnion {
	data := base64.StdEncoding.EncodeToString(f.Data)
	switch {
	case f.IsImage() && f.URL != "":
		return sdk.NewImageBlock(sdk.URLImageSourceParam{URL: f.URL})
	case f.IsImage():
		return sdk.NewImageBlockBase64(f.MediaType, data)
	}
	b := sdk.NewDocumentBlock(sdk.Base64PDFSourceParam{Data: data})
	if f.URL != "" {
		b = sdk.NewDocumentBlock(sdk.URLPDFSourceParam{URL: f.URL})
	}
	if f.Name != "" {
		b.OfDocument.Title = param.NewOpt(f.Name)
	}
	return b
}

// toolInput returns a call's arguments as the tool_use input: {} when empty or not JSON (the
// API wants an object).
func toolInput(args json.RawMessage) json.RawMessage {
	if args = bytes.TrimSpace(args); len(args) == 0 || !json.Valid(args) {
		return json.RawMessage("{}")
	}
	return args
}

// toolResult makes a tool_result block. Empty content is left out, since the API refuses an
// empty text block.
func toolResult(callID, content string, isError bool) sdk.ContentBlockParamUnion {
	b := sdk.ToolResultBlockParam{ToolUseID: callID}
	if content != "" {
		b.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: content}}}
	}
	if isError {
		b.IsError = param.NewOpt(true)
	}
	return sdk.ContentBlockParamUnion{OfToolResult: &b}
}

// tools translates the tool specs, adding the server web search tool when configured.
func (m *Model) tools(specs []providers.ToolSpec) []sdk.ToolUnionParam {
	var out []sdk.ToolUnionParam
	for _, s := range specs {
		t := sdk.ToolParam{Name: s.Name}
		if s.Description != "" {
			t.Description = param.NewOpt(s.Description)
		}
		if schema := bytes.TrimSpace(s.Schema); len(schema) > 0 {
			t.InputSchema = param.Override[sdk.ToolInputSchemaParam](json.RawMessage(schema))
		}
		out = append(out, sdk.ToolUnionParam{OfTool: &t})
	}
	if ws := m.cfg.webSearch; ws != nil {
		t := sdk.WebSearchTool20250305Param{AllowedDomains: ws.AllowedDomains, BlockedDomains: ws.BlockedDomains}
		if ws.MaxUses > 0 {
			t.MaxUses = param.NewOpt(int64(ws.MaxUses))
		}
		out = append(out, sdk.ToolUnionParam{OfWebSearchTool20250305: &t})
	}
	return out
}

// toolChoice translates a tool choice.
func toolChoice(c providers.ToolChoice) sdk.ToolChoiceUnionParam {
	switch c.Mode {
	case providers.ChooseAny:
		return sdk.ToolChoiceUnionParam{OfAny: &sdk.ToolChoiceAnyParam{}}
	case providers.ChooseNone:
		return sdk.ToolChoiceUnionParam{OfNone: &sdk.ToolChoiceNoneParam{}}
	case providers.ChooseTool:
		return sdk.ToolChoiceUnionParam{OfTool: &sdk.ToolChoiceToolParam{Name: c.Name}}
	}
	return sdk.ToolChoiceUnionParam{OfAuto: &sdk.ToolChoiceAutoParam{}}
}

// setCacheBreakpoints marks the system prompt, the last tool and the last message for prompt
// caching: three of the four breakpoints the API allows. In the last message the mark goes on
// the last block that can carry one; opaque blocks are sent unchanged and so are skipped.
func setCacheBreakpoints(p *sdk.MessageNewParams) {
	ephemeral := sdk.NewCacheControlEphemeralParam()
	if n := len(p.System); n > 0 {
		p.System[n-1].CacheControl = ephemeral
	}
	if n := len(p.Tools); n > 0 {
		if cc := p.Tools[n-1].GetCacheControl(); cc != nil {
			*cc = ephemeral
		}
	}
	if n := len(p.Messages); n > 0 {
		blocks := p.Messages[n-1].Content
		for i := len(blocks) - 1; i >= 0; i-- {
			if cc := blocks[i].GetCacheControl(); cc != nil {
				*cc = ephemeral
				return
			}
		}
	}
}
