package claudecode

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agiraph/agiraph/runtime"
)

// bridge carries messages between a run's Mailbox and its _inbox.md and _outbox.md. Its steps
// run one at a time.
type bridge struct {
	a    runtime.Assignment
	rep  *runtime.Reporter
	dir  string
	sent int // the outbox blocks already handled
}

// newBridge prepares the protocol files of a run: it creates _inbox.md if it is missing, removes
// a _checkpoint.md an earlier run left, and counts the blocks already in _outbox.md as sent.
func newBridge(ctx context.Context, a runtime.Assignment, rep *runtime.Reporter) (*bridge, error) {
	b := &bridge{a: a, rep: rep, dir: a.Dir.Scratch()}
	f, err := os.OpenFile(b.path(InboxFile), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	f.Close()
	if err := os.Remove(b.path(CheckpointFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	data, err := os.ReadFile(b.path(OutboxFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	complete, _ := parseOutbox(string(data))
	b.sent = len(complete)
	return b, nil
}

func (b *bridge) path(name string) string { return filepath.Join(b.dir, name) }

// step delivers the messages that arrived to _inbox.md and sends the new complete blocks of
// _outbox.md. The final step, once the agent has exited, also sends an unfinished last block
// (and closes it in the file with a "---" line, so that a later run does not send it again).
func (b *bridge) step(ctx context.Context, final bool) {
	if b.a.Mailbox == nil {
		return
	}
	if msgs := b.a.Mailbox.Receive(); len(msgs) > 0 {
		if err := b.appendInbox(runtime.FormatMessages(msgs)); err != nil {
			b.rep.Emit(runtime.Event{Kind: runtime.Output, Text: fmt.Sprintf("claudecode: %d message(s) could not be written to %s: %v", len(msgs), InboxFile, err)})
		}
		for i := range msgs {
			b.rep.Emit(runtime.Event{Kind: runtime.MessageReceived, Message: &msgs[i]})
		}
	}
	data, err := os.ReadFile(b.path(OutboxFile))
	if err != nil {
		return // not written yet
	}
	complete, rest := parseOutbox(string(data))
	if final {
		if m, ok := block2msg([]string{rest}); ok && m.to != "" {
			if err := b.closeOutbox(data); err == nil {
				complete = append(complete, m)
			}
		}
	}
	for ; b.sent < len(complete); b.sent++ {
		m := complete[b.sent]
		if m.to == "" {
			b.rep.Emit(runtime.Event{Kind: runtime.Output, Text: fmt.Sprintf("claudecode: %s block %d has no TO: line; not sent: %s", OutboxFile, b.sent+1, truncate(m.body, 200))})
			b.appendInbox(fmt.Sprintf("[Message from agiraph]: block %d of %s has no \"TO: <recipient>\" line, so it was not sent.", b.sent+1, OutboxFile))
			continue
		}
		if err := b.a.Mailbox.Send(ctx, m.to, m.body); err != nil {
			b.rep.Emit(runtime.Event{Kind: runtime.Output, Text: fmt.Sprintf("claudecode: message to %s not sent: %v", m.to, err)})
			b.appendInbox(fmt.Sprintf("[Message from agiraph]: your message to %s could not be sent: %v", m.to, err))
			continue
		}
		b.rep.Emit(runtime.Event{Kind: runtime.MessageSent, Message: &runtime.Message{From: b.a.Worker, To: m.to, Body: m.body}})
	}
}

// closeOutbox ends the unfinished last block of an outbox whose content is data.
func (b *bridge) closeOutbox(data []byte) error {
	f, err := os.OpenFile(b.path(OutboxFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	end := "---\n"
	if len(data) > 0 && data[len(data)-1] != '\n' {
		end = "\n" + end
	}
	_, err = f.WriteString(end)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// appendInbox appends a paragraph to _inbox.md.
func (b *bridge) appendInbox(text string) error {
	f, err := os.OpenFile(b.path(InboxFile), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if info, err := f.Stat(); err == nil && info.Size() > 0 {
		text = "\n" + text
	}
	_, err = f.WriteString(text + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// outMessage is one block of _outbox.md.
type outMessage struct{ to, body string }

// parseOutbox splits an outbox into its complete blocks (each ended by a line "---") and the
// rest, an unfinished block. Blank blocks are skipped. A block's first non-blank line names the
// recipient ("TO: name", case-insensitive); a block without one has an empty to.
func parseOutbox(s string) (complete []outMessage, rest string) {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	var cur []string
	lines := strings.SplitAfter(s, "\n")
	for _, line := range lines {
		if strings.HasSuffix(line, "\n") && strings.TrimSpace(line) == "---" {
			if m, ok := block2msg(cur); ok {
				complete = append(complete, m)
			}
			cur = nil
			continue
		}
		cur = append(cur, line)
	}
	return complete, strings.Join(cur, "")
}

func block2msg(lines []string) (outMessage, bool) {
	text := strings.TrimSpace(strings.Join(lines, ""))
	if text == "" {
		return outMessage{}, false
	}
	first, body, _ := strings.Cut(text, "\n")
	if len(first) >= 3 && strings.EqualFold(first[:3], "to:") {
		return outMessage{to: strings.TrimSpace(first[3:]), body: strings.TrimSpace(body)}, true
	}
	return outMessage{body: text}, true
}
