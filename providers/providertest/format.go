package providertest

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Format is a request for structured output as a fake read it from the body, whatever the
// API's spelling: Anthropic's output_config.format, Chat Completions' response_format,
// the Responses API's text.format, Gemini's generationConfig.responseJsonSchema (or
// responseSchema).
type Format struct {
	Name   string         // the schema's name (OpenAI's APIs; "" elsewhere)
	Schema map[string]any // the JSON Schema
	Strict bool           // strict: true (OpenAI's APIs)
}

// Format returns the request's structured-output format, or nil when it asks for none (or for
// JSON without a schema). Read it in a Func to answer in kind, or afterwards to check what a
// client sent.
func (r Request) Format() *Format {
	var f map[string]any
	switch {
	case r.Path == "/v1/messages":
		f = object(object(r.JSON["output_config"])["format"])
	case r.Path == "/v1/chat/completions":
		if rf := object(r.JSON["response_format"]); rf["type"] == "json_schema" {
			f = object(rf["json_schema"])
		}
	case r.Path == "/v1/responses":
		if tf := object(object(r.JSON["text"])["format"]); tf["type"] == "json_schema" {
			f = tf
		}
	case geminiPath.MatchString(r.Path):
		gc := object(r.JSON["generationConfig"])
		if s := object(gc["responseJsonSchema"]); s != nil {
			return &Format{Schema: s}
		}
		if s := object(gc["responseSchema"]); s != nil {
			return &Format{Schema: s}
		}
	}
	schema := object(f["schema"])
	if schema == nil {
		return nil
	}
	name, _ := f["name"].(string)
	strict, _ := f["strict"].(bool)
	return &Format{Name: name, Schema: schema, Strict: strict}
}

// object returns v as a decoded JSON object (nil if it is not one).
func object(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// openAIFormatName is what OpenAI takes as a schema's name.
var openAIFormatName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// openAIFormatProblem returns what the OpenAI APIs refuse in a structured-output format, f,
// spelt at param ("response_format" for Chat Completions, "text.format" for Responses): ""
// when it is fine. A json_schema format has a valid name and an object schema; a strict one
// closes every object (additionalProperties false) and requires all its properties, as the
// API enforces.
func openAIFormatProblem(f map[string]any, param string) string {
	switch f["type"] {
	case "text", "json_object":
		return ""
	case "json_schema":
	default:
		return fmt.Sprintf("Invalid value: %s. Supported values are: 'text', 'json_object', and 'json_schema'.", short(f["type"]))
	}
	name, _ := f["name"].(string)
	if !openAIFormatName.MatchString(name) {
		return fmt.Sprintf("Invalid '%s.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.", param)
	}
	schema := object(f["schema"])
	if schema == nil {
		return fmt.Sprintf("Missing required parameter: '%s.schema'.", param)
	}
	if strict, _ := f["strict"].(bool); strict {
		if p := strictProblem(schema, nil); p != "" {
			return fmt.Sprintf("Invalid schema for response_format '%s': %s", name, p)
		}
	}
	return ""
}

// strictProblem returns the first thing strict mode refuses in schema, at path.
func strictProblem(schema map[string]any, path []string) string {
	context := "context=(" + strings.Join(path, ", ") + ")"
	if schema["type"] == "object" || schema["properties"] != nil {
		if schema["additionalProperties"] != false {
			return "In " + context + ", 'additionalProperties' is required to be supplied and to be false."
		}
		props := object(schema["properties"])
		keys := make([]string, 0, len(props))
		for k := range props {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		required, _ := schema["required"].([]any)
		for _, k := range keys {
			if !slices.Contains(required, any(k)) {
				return "In " + context + ", 'required' is required to be supplied and to be an array including every key in properties. Missing '" + k + "'."
			}
		}
		for _, k := range keys {
			if p := strictProblem(object(props[k]), append(path, "properties", k)); p != "" {
				return p
			}
		}
	}
	if items := object(schema["items"]); items != nil {
		return strictProblem(items, append(path, "items"))
	}
	return ""
}

// anthropicFormatProblem returns what the Messages API refuses in output_config.format: ""
// when it is fine or absent. The format is {"type":"json_schema","schema":{...}}, and every
// object of the schema is closed (additionalProperties false).
func anthropicFormatProblem(body map[string]any) string {
	oc, ok := body["output_config"]
	if !ok {
		return ""
	}
	f, ok := object(oc)["format"]
	if !ok {
		return ""
	}
	format := object(f)
	if format == nil {
		return "output_config.format: Input should be an object"
	}
	if format["type"] != "json_schema" {
		return fmt.Sprintf("output_config.format.type: Input should be 'json_schema', got %s", short(format["type"]))
	}
	schema := object(format["schema"])
	if schema == nil {
		return "output_config.format.schema: Field required"
	}
	if p := closedProblem(schema); p != "" {
		return "output_config.format.schema: " + p
	}
	return ""
}

// closedProblem returns "" when every object of schema has additionalProperties false.
func closedProblem(schema map[string]any) string {
	if (schema["type"] == "object" || schema["properties"] != nil) && schema["additionalProperties"] != false {
		return "For 'object' type, 'additionalProperties' must be explicitly set to false"
	}
	for _, p := range object(schema["properties"]) {
		if s := closedProblem(object(p)); s != "" {
			return s
		}
	}
	if items := object(schema["items"]); items != nil {
		return closedProblem(items)
	}
	return ""
}

// geminiFormatProblem returns what the Gemini API refuses in generationConfig's structured
// output: a schema (responseSchema or responseJsonSchema, not both) needs the responseMimeType
// application/json.
func geminiFormatProblem(body map[string]any) string {
	gc := object(body["generationConfig"])
	_, schema := gc["responseSchema"]
	_, jsonSchema := gc["responseJsonSchema"]
	if schema && jsonSchema {
		return "* GenerateContentRequest.generation_config: only one of response_schema and response_json_schema may be set.\n"
	}
	if (schema || jsonSchema) && gc["responseMimeType"] != "application/json" {
		return "* GenerateContentRequest.generation_config.response_mime_type: a response schema needs response_mime_type \"application/json\".\n"
	}
	return ""
}

// short renders a decoded JSON value for an error message.
func short(v any) string {
	if v == nil {
		return "null"
	}
	return fmt.Sprintf("%v", v)
}
