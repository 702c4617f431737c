package memory

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/agiraph/agiraph/internal/osfile"
	"github.com/agiraph/agiraph/tools/files"
)

// dateLayout names the daily logs: memory/2006-01-02.md.
const dateLayout = "2006-01-02"

// DailyLog returns the path of the daily log of the day of t, relative to memory/
// ("2026-02-11.md").
func DailyLog(t time.Time) string { return t.Format(dateLayout) + ".md" }

// Log appends "- HH:MM by: entry" to today's daily log, memory/YYYY-MM-DD.md, with the date
// and time read from the store's clock. Lines after the first of a multi-line entry are
// indented so the entry stays one list item. An empty by leaves out "by: "; an empty entry
// is an error.
func (s *Store) Log(by, entry string) error {
	return s.log(by, entry, false)
}

// LogOnce is Log for an entry that is made once: it appends nothing when the entry (by the
// same by) is already in the daily log of today or yesterday — a step run again after a
// crash logs nothing twice.
func (s *Store) LogOnce(by, entry string) error {
	return s.log(by, entry, true)
}

func (s *Store) log(by, entry string, once bool) error {
	entry = strings.TrimSpace(entry)
	if entry == "" {
		return errors.New("memory: log: the entry is empty")
	}
	now := s.cfg.now()
	name := DailyLog(now)
	text := ""
	if by != "" {
		text = by + ": "
	}
	text += strings.ReplaceAll(strings.ReplaceAll(entry, "\r\n", "\n"), "\n", "\n  ") + "\n"
	line := "- " + now.Format("15:04") + " " + text

	var w Write
	err := func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		root, err := s.openDir()
		if err != nil {
			return fmt.Errorf("memory: log: %w", err)
		}
		defer root.Close()
		if once {
			for _, day := range []time.Time{now, now.AddDate(0, 0, -1)} {
				if strings.Contains(readPlain(root, DailyLog(day))+"\n", " "+text) {
					return nil
				}
			}
		}
		if w, err = appendFile(root, name, line); err != nil {
			return fmt.Errorf("memory: log to %s: %v", name, files.Cause(err))
		}
		w.Path, w.By = name, by
		return nil
	}()
	if err != nil || w.Path == "" {
		return err
	}
	s.notify([]Write{w})
	return nil
}

// Recent returns the daily logs of the last days days, today (by the store's clock)
// included, oldest first, each headed by "### YYYY-MM-DD". Days without a log are left out;
// it returns "" when there are none, and when memory/ is a symbolic link (see [Open]).
func (s *Store) Recent(days int) string {
	now := s.cfg.now()
	s.mu.RLock()
	defer s.mu.RUnlock()
	dir, err := s.openDir()
	if err != nil {
		return ""
	}
	defer dir.Close()
	return recent(dir, now, days)
}

// recent is [Store.Recent] on memory/ opened as dir.
func recent(dir *os.Root, now time.Time, days int) string {
	var parts []string
	for d := days - 1; d >= 0; d-- {
		day := now.AddDate(0, 0, -d)
		text := readPlain(dir, DailyLog(day))
		if text == "" {
			continue
		}
		parts = append(parts, "### "+day.Format(dateLayout)+"\n"+text)
	}
	return strings.Join(parts, "\n\n")
}

// Prompt returns the memory that goes into a coordinator's system prompt at session start:
// MEMORY.md, memory/index.md and the daily logs of today and yesterday, each in a section
// headed "## ...". Empty files, and an index.md still as [Open] created it, are left out; it
// returns "" when all are. A memory/ or a MEMORY.md that is a symbolic link is left out too.
func (s *Store) Prompt() string {
	now := s.cfg.now()
	var curated, index, logs string
	s.mu.RLock()
	if home, err := s.openHome(); err == nil {
		curated = readPlain(home, CuratedFile)
		home.Close()
	}
	if dir, err := s.openDir(); err == nil {
		index = readPlain(dir, IndexFile)
		logs = recent(dir, now, 2)
		dir.Close()
	}
	s.mu.RUnlock()
	if index == strings.TrimSpace(indexTemplate) {
		index = ""
	}
	var parts []string
	if curated != "" {
		parts = append(parts, "## Long-term memory (MEMORY.md)\n\n"+curated)
	}
	if index != "" {
		parts = append(parts, "## Memory index (memory/index.md)\n\nSearch these with memory_search, or read one with memory_read.\n\n"+index)
	}
	if logs != "" {
		parts = append(parts, "## Recent daily logs (memory/YYYY-MM-DD.md)\n\n"+logs)
	}
	return strings.Join(parts, "\n\n")
}

// readPlain returns the trimmed content of the regular file name in root (not a symbolic
// link), or "".
func readPlain(root *os.Root, name string) string {
	st, err := root.Lstat(name)
	if err != nil || !st.Mode().IsRegular() {
		return ""
	}
	data, err := osfile.ReadIn(root, name)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}
