// Package filebridge connects a CLI agent's message files to its mailbox, for runtimes whose
// agents talk through files in their working folder: the messages that arrive for the agent are
// appended to _inbox.md, and the blocks the agent writes to _outbox.md are sent. A block is a
// line "TO: name", the message, and a line holding only "---":
//
//	TO: coordinator
//	The tests pass; the report is in report.md.
//	---
//
// A block without a TO: line, or one the mailbox refuses, is not sent: a note in _inbox.md says
// why. Every block is sent once: the part of the outbox already read is remembered, and if the
// agent rewrites the file (it no longer starts with that part) reading starts again from the
// top of the new content.
package filebridge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agiraph/agiraph/internal/osfile"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/adapter"
)

// The files of the protocol, in the agent's working folder.
const (
	InboxFile  = "_inbox.md"
	OutboxFile = "_outbox.md"
	// CheckpointFile is where an agent writes a summary to end a stage of its work without
	// publishing; the runtimes that speak this protocol read it.
	CheckpointFile = "_checkpoint.md"
)

// Bridge carries one run's messages between its mailbox and its files. Its steps must run one
// at a time.
type Bridge struct {
	a        runtime.Assignment
	inbox    string
	outbox   string
	emit     func(runtime.Event)
	consumed []byte // the prefix of the outbox already turned into blocks
}

// New returns the bridge of assignment a, whose files are in dir, reporting to emit. It creates
// _inbox.md if it is missing, and counts the complete blocks already in _outbox.md as sent (an
// agent resumed from an earlier run does not send them again).
func New(a runtime.Assignment, dir string, emit func(runtime.Event)) (*Bridge, error) {
	b := &Bridge{a: a, inbox: filepath.Join(dir, InboxFile), outbox: filepath.Join(dir, OutboxFile), emit: emit}
	f, err := os.OpenFile(b.inbox, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("filebridge: %w", err)
	}
	_ = f.Close() // only created: nothing written
	if _, err := os.Stat(b.outbox); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("filebridge: %w", err)
	}
	b.blocks(false)
	return b, nil
}

// Step sends the outbox's new complete blocks, then appends the messages that arrived to
// _inbox.md. final says the agent has ended: an unfinished last block is sent too (and closed
// in the file with a "---" line, so that a later run does not send it again), and no message is
// taken from the mailbox — it waits there for the agent's next run. Without a mailbox Step does
// nothing.
func (b *Bridge) Step(ctx context.Context, final bool) {
	if b.a.Mailbox == nil {
		return
	}
	var notes []string
	for _, m := range b.blocks(final) {
		if m.to == "" {
			notes = append(notes, fmt.Sprintf("[Message from runtime]: this block of %s was not sent: it has no \"TO: name\" line:\n%s", OutboxFile, m.raw))
			continue
		}
		if err := b.a.Mailbox.Send(ctx, "", m.to, m.body); err != nil {
			notes = append(notes, fmt.Sprintf("[Message from runtime]: your message to %s was not sent: %v", m.to, err))
			continue
		}
		b.emit(runtime.Event{Kind: runtime.MessageSent, Message: &runtime.Message{From: b.a.Worker, To: m.to, Body: m.body, Time: time.Now()}})
	}
	var msgs []runtime.Message
	if !final {
		msgs = b.a.Mailbox.Receive("")
	}
	paragraphs := notes
	if len(msgs) > 0 {
		paragraphs = append(paragraphs, adapter.FormatMessages(msgs))
	}
	if len(paragraphs) > 0 {
		if err := b.appendInbox(strings.Join(paragraphs, "\n\n")); err != nil {
			b.emit(runtime.Event{Kind: runtime.Output, Text: fmt.Sprintf("filebridge: could not write %s: %v", InboxFile, err)})
		}
	}
	for _, n := range notes {
		b.emit(runtime.Event{Kind: runtime.Output, Text: n})
	}
	for i := range msgs {
		b.emit(runtime.Event{Kind: runtime.MessageReceived, Message: &msgs[i]})
	}
}

// block is one message of the outbox.
type block struct {
	to, body string
	raw      string // the block as written, for notes
}

// blocks reads the outbox and returns the blocks not returned before. A block is complete when
// a line holding only "---" follows it, or, when final, at the end of the file; a final
// unfinished block is then closed in the file.
func (b *Bridge) blocks(final bool) []block {
	data, err := osfile.ReadFile(b.outbox)
	if err != nil {
		return nil
	}
	if !bytes.HasPrefix(data, b.consumed) {
		b.consumed = nil
	}
	rest := data[len(b.consumed):]
	var out []block
	for len(rest) > 0 {
		end, next := -1, -1
		for i := 0; i < len(rest); {
			j := bytes.IndexByte(rest[i:], '\n')
			line, lineEnd := rest[i:], len(rest)
			if j >= 0 {
				line, lineEnd = rest[i:i+j], i+j+1
			}
			if strings.TrimSpace(string(line)) == "---" && (j >= 0 || final) {
				end, next = i, lineEnd
				break
			}
			i = lineEnd
		}
		unfinished := end < 0
		if unfinished {
			if !final {
				break
			}
			end, next = len(rest), len(rest)
		}
		m, ok := parseBlock(string(rest[:end]))
		if ok {
			out = append(out, m)
		}
		b.consumed = data[:len(data)-len(rest)+next]
		rest = rest[next:]
		if ok && unfinished { // close it in the file, and count the closing line as read
			if end, err := closeBlock(b.outbox, data); err == nil {
				b.consumed = append(bytes.Clone(b.consumed), end...)
			}
		}
	}
	b.consumed = bytes.Clone(b.consumed)
	return out
}

// parseBlock parses one block: blank lines, "TO: name", the body. A block without a TO: line
// has an empty to; a block of blank lines is no block.
func parseBlock(s string) (block, bool) {
	raw := strings.TrimSpace(strings.ReplaceAll(s, "\r\n", "\n"))
	if raw == "" {
		return block{}, false
	}
	first, body, _ := strings.Cut(raw, "\n")
	if len(first) >= 3 && strings.EqualFold(first[:3], "to:") {
		return block{to: strings.TrimSpace(first[3:]), body: strings.TrimSpace(body), raw: raw}, true
	}
	return block{body: raw, raw: raw}, true
}

// appendInbox appends paragraphs to _inbox.md, a blank line apart from what it holds.
func (b *Bridge) appendInbox(text string) error {
	if info, err := os.Stat(b.inbox); err == nil && info.Size() > 0 {
		text = "\n" + text
	}
	return appendFile(b.inbox, text+"\n")
}

// closeBlock ends the unfinished last block of the outbox at path, whose content is data, with
// a "---" line, and returns what it appended.
func closeBlock(path string, data []byte) (string, error) {
	end := "---\n"
	if len(data) > 0 && data[len(data)-1] != '\n' {
		end = "\n" + end
	}
	return end, appendFile(path, end)
}

// appendFile appends text to the file at path, creating it.
func appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
