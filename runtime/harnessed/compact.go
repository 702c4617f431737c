package harnessed

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agiraph/agiraph/internal/osfile"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/runtime"
)

// over reports whether the conversation of s followed by add has reached the share of the
// context limit at which it is compacted. The size is the larger of what the provider reported
// for the latest call and an estimate of four characters per token over the system prompt, the
// tools and the conversation (whose characters s counts: see state.Chars).
func (w *worker) over(s state, add []providers.Message) bool {
	if len(s.Conversation)+len(add) <= w.rt.cfg.keepMessages+1 {
		return false // nothing a compaction could drop
	}
	chars := len(w.prompt) + s.chars() + conversationChars(add)
	for _, t := range w.specs {
		chars += len(t.Name) + len(t.Description) + len(t.Schema)
	}
	size := max(chars/4, s.LastContext)
	return float64(size) >= w.rt.cfg.compactAt*float64(w.rt.cfg.contextLimit)
}

// conversationChars counts the characters of msgs that over estimates tokens from.
func conversationChars(msgs []providers.Message) int {
	n := 0
	for _, m := range msgs {
		n += messageChars(m)
	}
	return n
}

func messageChars(m providers.Message) int {
	n := 0
	for _, p := range m.Parts {
		n += len(p.Text) + len(p.Raw)
		if p.ToolCall != nil {
			n += len(p.ToolCall.Name) + len(p.ToolCall.Args)
		}
		if p.ToolResult != nil {
			n += len(p.ToolResult.Content)
		}
	}
	return n
}

// compact archives conv in the node folder and returns the conversation that replaces it: one
// message with the task, where the archive is and what the scratch directory holds, followed by
// the latest messages (from the first of the last keepMessages that starts a user turn without
// tool results, so no tool result is separated from its call).
func (w *worker) compact(s state, conv []providers.Message) ([]providers.Message, error) {
	archive, err := w.archive(s.Compactions+1, conv)
	if err != nil {
		return nil, err
	}
	var tail []providers.Message
	for i := max(len(conv)-w.rt.cfg.keepMessages, 1); i < len(conv); i++ {
		if conv[i].Role == providers.User && !hasToolResults(conv[i]) {
			tail = conv[i:]
			break
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n---\nThis conversation was compacted: the earlier turns are archived in %s.\n", w.a.Task, archive)
	b.WriteString("Your scratch directory holds:\n")
	b.WriteString(fileSummaries(w.a.Dir.Scratch()))
	b.WriteString("Read your notes there to pick up where you left off.")
	out := append([]providers.Message{providers.UserText(b.String())}, tail...)
	w.rep.Emit(runtime.Event{Kind: runtime.Compacted, Text: archive})
	return out, nil
}

func hasToolResults(m providers.Message) bool {
	for _, p := range m.Parts {
		if p.Type == providers.ToolResultPart {
			return true
		}
	}
	return false
}

// archive writes conv, a message per line, to _archive/<assignment>.NNN.jsonl in the node
// folder and returns the file's path. Archives are never overwritten.
func (w *worker) archive(n int, conv []providers.Message) (string, error) {
	dir := w.a.Dir.Path("_archive")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("harnessed: archive: %w", err)
	}
	name := strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == os.PathSeparator {
			return '_'
		}
		return r
	}, w.a.ID)
	path := filepath.Join(dir, fmt.Sprintf("%s.%03d.jsonl", name, n))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", fmt.Errorf("harnessed: archive: %w", err)
	}
	bw := bufio.NewWriter(f)
	enc := json.NewEncoder(bw)
	for _, m := range conv {
		if err := enc.Encode(m); err != nil {
			_ = f.Close() // the error before is the one to report
			return "", fmt.Errorf("harnessed: archive: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		_ = f.Close() // as above
		return "", fmt.Errorf("harnessed: archive: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("harnessed: archive: %w", err)
	}
	return path, nil
}

// fileSummaries lists the files under dir, a line each: path, size and first line.
func fileSummaries(dir string) string {
	var b strings.Builder
	_ = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error { // nil: it skips what it cannot read
		if err != nil || e.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := e.Info()
		if err != nil {
			return nil
		}
		fmt.Fprintf(&b, "- %s (%d bytes)", filepath.ToSlash(rel), info.Size())
		if first := firstLine(p); first != "" {
			fmt.Fprintf(&b, ": %s", first)
		}
		b.WriteString("\n")
		return nil
	})
	if b.Len() == 0 {
		return "(no files)\n"
	}
	return b.String()
}

func firstLine(path string) string {
	f, err := osfile.Open(path)
	if err != nil {
		return ""
	}
	defer func() { _ = f.Close() }() // read only
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 4096), 4096)
	if sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if len(line) > 120 {
			line = line[:120] + "…"
		}
		return line
	}
	return ""
}

// writeFailureNotes writes failure_notes.md into the node folder: the error and the
// conversation, so whoever picks the node up next can see what happened.
func (w *worker) writeFailureNotes(req providers.Request, cause error) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Failure notes\n\nAssignment %s (worker %s, node %s) failed: the model call failed.\n\nError: %v\n\n## Conversation\n", w.a.ID, w.a.Worker, w.a.Node, cause)
	for _, m := range req.Messages {
		fmt.Fprintf(&b, "\n### %s\n", m.Role)
		for _, p := range m.Parts {
			switch p.Type {
			case providers.TextPart:
				fmt.Fprintf(&b, "%s\n", p.Text)
			case providers.ToolCallPart:
				fmt.Fprintf(&b, "→ %s(%s) [%s]\n", p.ToolCall.Name, p.ToolCall.Args, p.ToolCall.ID)
			case providers.ToolResultPart:
				status := "result"
				if p.ToolResult.IsError {
					status = "error"
				}
				fmt.Fprintf(&b, "← %s %s [%s]:\n%s\n", p.ToolResult.Name, status, p.ToolResult.CallID, p.ToolResult.Content)
			case providers.FilePart:
				fmt.Fprintf(&b, "[file %s: %s, %d bytes]\n", p.File.Name, p.File.MediaType, len(p.File.Data))
			}
		}
	}
	if err := os.WriteFile(w.a.Dir.Path("failure_notes.md"), []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("harnessed: failure notes: %w", err)
	}
	return nil
}
