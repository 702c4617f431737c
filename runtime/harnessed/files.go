package harnessed

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/tools"
)

// withFiles returns the conversation as the model is sent it: each message whose tool results
// attached files (view_file) gets the files' bytes as file parts after its parts. The saved
// conversation holds only the references (path and digest); the bytes are read when first
// sent and kept for the worker's later turns in w.files, by digest, so that a file changed
// during the run still shows the model what it saw. A file read again — after a restart —
// that has vanished or no longer matches its digest is shown as a note saying so, for the
// model to view it again; so is a file the model refused (see generateShowing).
func (w *worker) withFiles(conv []providers.Message) []providers.Message {
	var out []providers.Message
	kept := map[string][]byte{}
	for i, m := range conv {
		var parts []providers.Part
		for _, p := range m.Parts {
			if p.Type != providers.ToolResultPart || p.ToolResult == nil || p.ToolResult.Attachment == nil {
				continue
			}
			a := p.ToolResult.Attachment
			if reason, ok := w.refused[a.SHA256]; ok {
				parts = append(parts, providers.Text(fmt.Sprintf("[%s cannot be shown: %s.]", a.Name, reason)))
				continue
			}
			data, err := w.fileBytes(a)
			if err != nil {
				parts = append(parts, providers.Text(fmt.Sprintf("[A file attached earlier cannot be shown: %v. Call view_file again to see it as it is now.]", err)))
				continue
			}
			kept[a.SHA256] = data
			parts = append(parts, providers.FileData(a.MediaType, a.Name, data))
		}
		if len(parts) == 0 {
			continue
		}
		if out == nil {
			out = slices.Clone(conv)
		}
		out[i].Parts = slices.Concat(m.Parts, parts)
	}
	w.files = kept
	if out == nil {
		return conv
	}
	return out
}

// fileBytes returns the bytes of an attached file: those kept from an earlier turn, or the
// file's, read again (see tools.Attachment.Read).
func (w *worker) fileBytes(a *tools.Attachment) ([]byte, error) {
	if data, ok := w.files[a.SHA256]; ok {
		return data, nil
	}
	return a.Read()
}

// generateShowing asks the model for req, whose messages are conv with its files. When the
// model refuses an attached file (a *providers.FileError naming it: a type it does not take, a
// file over its size limit), the file is shown as a note saying why, in this call and later
// ones, and the model is asked again.
func (w *worker) generateShowing(ctx context.Context, req providers.Request, conv []providers.Message) (providers.Response, error) {
	for {
		resp, err := w.rt.model.Generate(ctx, req)
		var fe *providers.FileError
		if !errors.As(err, &fe) || !w.refuse(conv, fe) {
			return resp, err
		}
		req.Messages = w.withFiles(conv)
	}
}

// refuse records that the model refused the attached file fe names, and reports whether it
// was one not refused before.
func (w *worker) refuse(conv []providers.Message, fe *providers.FileError) bool {
	for _, m := range conv {
		for _, p := range m.Parts {
			if p.Type != providers.ToolResultPart || p.ToolResult == nil || p.ToolResult.Attachment == nil {
				continue
			}
			a := p.ToolResult.Attachment
			if _, done := w.refused[a.SHA256]; a.Name == fe.Name && !done {
				if w.refused == nil {
					w.refused = map[string]string{}
				}
				w.refused[a.SHA256] = fe.Reason
				return true
			}
		}
	}
	return false
}
