package providertest

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// File is an image or a document a request carried, as a fake read it from the body, whatever
// the API's spelling: Anthropic's image and document blocks, Chat Completions' image_url and
// file parts, the Responses API's input_image and input_file, Gemini's inlineData and fileData.
type File struct {
	MediaType string // as the request gave it, or as a data URL's header said
	Name      string // the file's name or title, where the API carries one
	Data      []byte // the decoded bytes (nil for a URL or a file id)
	URL       string // the URL the provider would fetch (or a file id)
}

// Files returns the files of the request, in the order of its messages and parts. Files a fake
// refused never reach a Func or the script.
func (r Request) Files() []File {
	files, _, _ := r.media()
	return files
}

// media reads the request's files for its API, and the first problem the API refuses the
// request for ("" when none) with where it is (for OpenAI's param).
func (r Request) media() (files []File, problem, param string) {
	fail := func(p, msg string) {
		if problem == "" {
			problem, param = msg, p
		}
	}
	switch {
	case r.Path == "/v1/messages":
		for i, m := range r.Messages() {
			for j, b := range objects(m["content"]) {
				at := fmt.Sprintf("messages.%d.content.%d", i, j)
				files = anthropicFile(files, b, at, fail)
				if b["type"] == "tool_result" {
					for k, c := range objects(b["content"]) {
						files = anthropicFile(files, c, fmt.Sprintf("%s.content.%d", at, k), fail)
					}
				}
			}
		}
	case r.Path == "/v1/chat/completions":
		for i, m := range r.Messages() {
			for j, p := range objects(m["content"]) {
				files = chatFile(files, p, m["role"], fmt.Sprintf("messages[%d].content[%d]", i, j), fail)
			}
		}
	case r.Path == "/v1/responses":
		for i, item := range r.Input() {
			for j, p := range objects(item["content"]) {
				files = responsesFile(files, p, fmt.Sprintf("input[%d].content[%d]", i, j), fail)
			}
		}
	case geminiPath.MatchString(r.Path):
		for i, c := range objects(r.JSON["contents"]) {
			for j, p := range objects(c["parts"]) {
				files = geminiFile(files, p, fmt.Sprintf("contents[%d].parts[%d]", i, j), fail)
			}
		}
	}
	return files, problem, param
}

// imageTypes are the image types every API takes.
var imageTypes = []string{"image/png", "image/jpeg", "image/gif", "image/webp"}

// sniffed returns the media type the bytes are, as a server would detect it.
func sniffed(data []byte) string {
	t, _, _ := strings.Cut(http.DetectContentType(data), ";")
	return t
}

// decode64 decodes standard base64, as the APIs take it.
func decode64(s string) ([]byte, bool) {
	b, err := base64.StdEncoding.DecodeString(s)
	return b, err == nil && len(b) > 0
}

// dataURL splits a data URL "data:TYPE;base64,DATA" into its type and decoded bytes.
func dataURL(s string) (string, []byte, bool) {
	rest, ok := strings.CutPrefix(s, "data:")
	if !ok {
		return "", nil, false
	}
	typ, data, ok := strings.Cut(rest, ";base64,")
	if !ok {
		return "", nil, false
	}
	b, ok := decode64(data)
	return typ, b, ok
}

// webURL reports whether s is an http(s) URL.
func webURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != ""
}

// anthropicFile reads an image or document block b at "at"; other blocks pass.
func anthropicFile(files []File, b map[string]any, at string, fail func(string, string)) []File {
	typ, _ := b["type"].(string)
	if typ != "image" && typ != "document" {
		return files
	}
	src := object(b["source"])
	at += "." + typ + ".source"
	title, _ := b["title"].(string)
	switch src["type"] {
	case "url":
		u, _ := src["url"].(string)
		if !webURL(u) {
			fail(at, at+".url: Input should be a valid URL")
			return files
		}
		return append(files, File{Name: title, URL: u})
	case "base64":
	default:
		fail(at, fmt.Sprintf("%s: Input tag %s found using 'type' does not match any of the expected tags: 'base64', 'url', 'file'", at, short(src["type"])))
		return files
	}
	mt, _ := src["media_type"].(string)
	data, ok := decode64(fmt.Sprint(src["data"]))
	switch {
	case typ == "image" && !slices.Contains(imageTypes, mt):
		fail(at, fmt.Sprintf("%s.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'", at))
	case typ == "document" && mt != "application/pdf":
		fail(at, fmt.Sprintf("%s.base64.media_type: Input should be 'application/pdf'", at))
	case !ok:
		fail(at, at+".base64.data: Input should be a valid base64 string")
	case typ == "image" && base64.StdEncoding.EncodedLen(len(data)) > 5<<20:
		fail(at, fmt.Sprintf("%s.base64.data: image exceeds 5 MB maximum: %d bytes > %d bytes", at, base64.StdEncoding.EncodedLen(len(data)), 5<<20))
	case typ == "image" && sniffed(data) != mt:
		fail(at, fmt.Sprintf("%s.base64.data: Image does not match the provided media type %s", at, mt))
	case typ == "document" && !bytes.HasPrefix(data, []byte("%PDF-")):
		fail(at, "The PDF specified was not valid.")
	default:
		return append(files, File{MediaType: mt, Name: title, Data: data})
	}
	return files
}

// chatFile reads an image_url or file part p of a Chat Completions message of role; text parts
// pass, and types the API does not know are refused.
func chatFile(files []File, p map[string]any, role any, at string, fail func(string, string)) []File {
	switch p["type"] {
	case "text", "refusal", "input_audio", "audio":
		return files
	case "image_url", "file":
	default:
		fail(at+".type", fmt.Sprintf("Invalid value: %s. Supported values are: 'text', 'image_url', 'input_audio', 'refusal', 'audio', and 'file'.", short(p["type"])))
		return files
	}
	if role != "user" {
		fail(at, fmt.Sprintf("Invalid '%s': a %s part is only allowed in messages with role 'user', got %s.", at, p["type"], short(role)))
		return files
	}
	if p["type"] == "image_url" {
		u, _ := object(p["image_url"])["url"].(string)
		return imageURL(files, u, at+".image_url.url", fail)
	}
	f := object(p["file"])
	name, _ := f["filename"].(string)
	if id, _ := f["file_id"].(string); id != "" {
		return append(files, File{Name: name, URL: id})
	}
	return fileData(files, f["file_data"], name, at+".file", fail)
}

// responsesFile reads an input_image or input_file part p of a Responses API input item.
func responsesFile(files []File, p map[string]any, at string, fail func(string, string)) []File {
	switch p["type"] {
	case "input_image":
		if id, _ := p["file_id"].(string); id != "" {
			return append(files, File{URL: id})
		}
		u, _ := p["image_url"].(string)
		return imageURL(files, u, at+".image_url", fail)
	case "input_file":
		name, _ := p["filename"].(string)
		id, _ := p["file_id"].(string)
		u, _ := p["file_url"].(string)
		switch {
		case id != "":
			return append(files, File{Name: name, URL: id})
		case u != "":
			if !webURL(u) {
				fail(at+".file_url", fmt.Sprintf("Invalid '%s.file_url': Expected a valid URL.", at))
				return files
			}
			return append(files, File{Name: name, URL: u})
		}
		return fileData(files, p["file_data"], name, at, fail)
	}
	return files
}

// imageURL reads an OpenAI image URL: an http(s) URL, or a data URL of an image.
func imageURL(files []File, u, at string, fail func(string, string)) []File {
	if webURL(u) {
		return append(files, File{URL: u})
	}
	typ, data, ok := dataURL(u)
	if !ok || !slices.Contains(imageTypes, typ) {
		fail(at, fmt.Sprintf("Invalid '%s'. Expected a base64-encoded data URL with an image MIME type (e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), but got %s.", at, shortURL(u)))
		return files
	}
	return append(files, File{MediaType: typ, Data: data})
}

// fileData reads an OpenAI file's file_data, a data URL of a PDF, which needs a filename.
func fileData(files []File, v any, name, at string, fail func(string, string)) []File {
	s, _ := v.(string)
	typ, data, ok := dataURL(s)
	switch {
	case s == "":
		fail(at, fmt.Sprintf("Missing required parameter: '%s.file_data' (or file_id).", at))
	case !ok || typ != "application/pdf" || !bytes.HasPrefix(data, []byte("%PDF-")):
		fail(at+".file_data", fmt.Sprintf("Invalid '%s.file_data': expected a base64-encoded PDF data URL ('data:application/pdf;base64,...'), but got %s.", at, shortURL(s)))
	case name == "":
		fail(at+".filename", fmt.Sprintf("Missing required parameter: '%s.filename'.", at))
	default:
		return append(files, File{MediaType: typ, Name: name, Data: data})
	}
	return files
}

// geminiFile reads an inlineData or fileData part p of a Gemini content.
func geminiFile(files []File, p map[string]any, at string, fail func(string, string)) []File {
	if fd := object(p["fileData"]); fd != nil {
		mt, _ := fd["mimeType"].(string)
		uri, _ := fd["fileUri"].(string)
		if uri == "" {
			fail(at, fmt.Sprintf("* GenerateContentRequest.%s.file_data.file_uri: file_uri is required.\n", at))
			return files
		}
		return append(files, File{MediaType: mt, URL: uri})
	}
	in := object(p["inlineData"])
	if in == nil {
		return files
	}
	mt, _ := in["mimeType"].(string)
	data, ok := decode64(fmt.Sprint(in["data"]))
	switch {
	case mt == "":
		fail(at, fmt.Sprintf("* GenerateContentRequest.%s.inline_data.mime_type: mime_type is required.\n", at))
	case !ok:
		fail(at, fmt.Sprintf("Invalid value at '%s.inline_data.data' (TYPE_BYTES), Base64 decoding failed", at))
	case !slices.Contains(imageTypes, mt) && mt != "application/pdf" && !strings.HasPrefix(mt, "text/"):
		fail(at, fmt.Sprintf("Unsupported MIME type: %s", mt))
	default:
		return append(files, File{MediaType: mt, Data: data})
	}
	return files
}

// shortURL renders a URL for an error message, its data cut short.
func shortURL(s string) string {
	if len(s) > 40 {
		return "'" + s[:40] + "...'"
	}
	return "'" + s + "'"
}

// mediaDetail is the OpenAI error of a request's first refused file, or nil.
func mediaDetail(req Request) *openAIErrDetail {
	_, p, param := req.media()
	if p == "" {
		return nil
	}
	return &openAIErrDetail{Type: "invalid_request_error", Param: strp(param), Code: strp("invalid_value"), Message: p}
}

// PNG and PDF are the bytes of small valid files of their types (a 1×1 grey image, a one-page
// document), for tests that show a model files.
var (
	PNG = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x00\x00\x00\x00\x3a\x7e\x9b\x55" +
		"\x00\x00\x00\nIDAT\x78\x9c\x63\x60\x00\x00\x00\x02\x00\x01\x48\xaf\xa4\x71\x00\x00\x00\x00IEND\xae\x42\x60\x82")
	PDF = []byte("%PDF-1.4\n1 0 obj <</Type /Catalog /Pages 2 0 R>> endobj\n2 0 obj <</Type /Pages /Kids [3 0 R] /Count 1>> endobj\n" +
		"3 0 obj <</Type /Page /Parent 2 0 R /MediaBox [0 0 72 72]>> endobj\ntrailer <</Root 1 0 R>>\n%%EOF\n")
)
