package memory

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agiraph/agiraph/internal/osfile"
	"github.com/agiraph/agiraph/tools/files"
)

// Rewind undoes writes, given in the order they were made, from the last back: the text of an
// append is taken out of its file (where it last is), and a replacement puts back the content
// it replaced (see [Write.Before]), or removes the file it made. When nothing but writes changed
// the files since they were made, memory is then as it was before them. A write it cannot undo
// — one recorded without its text or the content it replaced, or an append whose text its file
// no longer holds — is an error naming the file; the writes after it are undone by then. The
// observer is not told, nor the index (it notices the files changed when it next reads them).
func (s *Store) Rewind(writes []Write) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(writes) - 1; i >= 0; i-- {
		if err := s.undo(writes[i]); err != nil {
			return fmt.Errorf("memory: rewind %s: %w", writes[i].Path, err)
		}
	}
	return nil
}

// undo undoes one write (see Rewind). s.mu must be held for writing.
func (s *Store) undo(w Write) error {
	t, err := s.resolve(w.Path)
	if err != nil {
		return err
	}
	root, err := s.openRoot(t)
	if err != nil {
		return err
	}
	defer root.Close()
	if !w.Append {
		switch {
		case w.Created:
			return files.Cause(root.Remove(t.real))
		case w.Before == nil:
			return errors.New("the write was recorded without the content it replaced")
		}
		_, err := replaceFile(root, t.real, *w.Before)
		return files.Cause(err)
	}
	if w.Text == "" {
		return errors.New("the append was recorded without its text")
	}
	data, err := osfile.ReadIn(root, t.real)
	if err != nil {
		return files.Cause(err)
	}
	i := strings.LastIndex(string(data), w.Text)
	if i < 0 {
		return fmt.Errorf("the file no longer holds the text appended (%d bytes): it was changed otherwise since", len(w.Text))
	}
	rest := string(data[:i]) + string(data[i+len(w.Text):])
	if w.Created && rest == "" {
		return files.Cause(root.Remove(t.real))
	}
	_, err = replaceFile(root, t.real, rest)
	return files.Cause(err)
}
