package memory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// DefaultLimit is the default number of sections [Store.Search] returns.
const DefaultLimit = 10

// separator goes between the files or sections Search returns.
const separator = "\n\n---\n\n"

// stopWords are left out of search keywords.
var stopWords = map[string]bool{
	"a": true, "an": true, "the": true, "and": true, "or": true, "of": true, "to": true,
	"in": true, "on": true, "at": true, "for": true, "with": true, "by": true, "from": true,
	"is": true, "are": true, "was": true, "were": true, "be": true, "been": true, "it": true,
	"its": true, "this": true, "that": true, "these": true, "those": true, "what": true,
	"which": true, "who": true, "how": true, "why": true, "when": true, "where": true,
	"do": true, "does": true, "did": true, "i": true, "me": true, "my": true, "we": true,
	"our": true, "you": true, "your": true, "about": true, "into": true, "as": true,
	"not": true, "no": true, "can": true, "should": true, "would": true, "any": true,
	"all": true, "some": true, "there": true, "than": true, "then": true, "if": true,
}

// Search is [Store.SearchContext] with a context that never ends.
func (s *Store) Search(query string, limit int) (string, error) {
	return s.SearchContext(context.Background(), query, limit)
}

// SearchContext searches memory (MEMORY.md and memory/**/*.md) for query.
//
// When all memory is no larger than the budget (see [WithBudget]) it returns all of it, each
// file headed by its path, whatever the query, and the reader searches by reading.
// Otherwise it splits every file into sections at "## " and "### " headers (the text before
// the first header is a section too) and ranks them; index.md, which names every file, is not
// searched this way. A store opened [WithIndex] ranks them with its [Index] (full-text ranking,
// and meaning when the index has an embedder). Otherwise, or when the index fails, it scores
// each section by the query's keywords: lower-cased words, without stop-words, each matching at
// the start of a word ("async" matches "asyncio"; a plural keyword matches its singular), in
// the section or its file's path. Sections matching more distinct keywords rank first, then
// those with more occurrences, then those of more recently modified files. The best whole
// sections are returned, each headed by its path and starting with its header line: at most
// limit of them (default [DefaultLimit] when limit <= 0) and, past the first, no more than the
// budget in bytes.
//
// When nothing matches the result is a text beginning "no memory matches", not an error. A
// query without any word is an error, and so is a memory/ or a MEMORY.md that is a symbolic
// link (nothing is searched through it).
func (s *Store) SearchContext(ctx context.Context, query string, limit int) (string, error) {
	if limit <= 0 {
		limit = DefaultLimit
	}
	kws := keywords(query)
	if len(kws) == 0 {
		return "", errors.New(`memory: search needs a query with some words, like "python asyncio event loop"`)
	}
	s.mu.RLock()
	files, err := s.files(true)
	s.mu.RUnlock()
	if err != nil {
		return "", fmt.Errorf("memory: search: %w", err)
	}
	total := 0
	for _, f := range files {
		total += len(f.content)
	}

	if total == 0 {
		return fmt.Sprintf("no memory matches %q: memory is empty, nothing has been written to it yet.", query), nil
	}
	if total <= s.cfg.budget {
		var b strings.Builder
		fmt.Fprintf(&b, "All memory (%d files, %d bytes: small enough to read whole; look in it for %q):", len(files), total, query)
		for _, f := range files {
			b.WriteString(separator)
			b.WriteString("**" + f.rel + "**\n")
			if strings.TrimSpace(f.content) == "" {
				b.WriteString("(empty)")
			} else {
				b.WriteString(strings.TrimRight(f.content, "\n"))
			}
		}
		return b.String(), nil
	}

	var docs []File
	nsec := 0
	for _, f := range files {
		if f.rel != IndexFile { // it names every file: it would match every query
			docs = append(docs, sectionsOf(f.rel, f.content))
			nsec += len(docs[len(docs)-1].Sections)
		}
	}
	large := fmt.Sprintf("Memory is large (%d bytes in %d files), so these are the sections best matching %q", total, len(files), query)
	note := ""
	if ix := s.cfg.index; ix != nil {
		r, err := rank(ctx, ix, docs, Query{Text: query, Keywords: kws}, limit)
		if err == nil {
			if len(r.Hits) == 0 {
				return withNote(fmt.Sprintf("no memory matches %q: none of the %d sections of the %d memory files matches it by %s. Try other words, or memory_read index.md to see what is stored.",
					query, nsec, len(files), r.Method), r.Note), nil
			}
			return s.present(large+" by "+r.Method, r.Hits, limit, false, r.Note), nil
		}
		if ctx.Err() != nil {
			return "", fmt.Errorf("memory: search: %w", ctx.Err())
		}
		note = fmt.Sprintf("(The search index failed, so sections were matched by keyword: %v.)", err)
	}

	hits := keywordHits(files, docs, kws)
	if len(hits) == 0 {
		return withNote(fmt.Sprintf("no memory matches %q: none of the %d sections of the %d memory files contains %s. Try other words, or memory_read index.md to see what is stored.",
			query, nsec, len(files), quoteList(kws)), note), nil
	}
	return s.present(large+fmt.Sprintf(" (keywords: %s)", strings.Join(kws, ", ")), hits, limit, true, note), nil
}

// rank brings ix up to date with docs and asks it for q's sections.
func rank(ctx context.Context, ix Index, docs []File, q Query, limit int) (Ranking, error) {
	if err := ix.Sync(ctx, docs); err != nil {
		return Ranking{}, err
	}
	return ix.Search(ctx, q, limit)
}

// keywordHits returns the sections of docs matching kws, best first (see [Store.SearchContext]);
// files are the memory files docs were made of, for their modification times.
func keywordHits(files []memFile, docs []File, kws []string) []Hit {
	mod := make(map[string]time.Time, len(files))
	for _, f := range files {
		mod[f.rel] = f.mod
	}
	type scored struct {
		Hit
		idx         int
		distinct    int
		occurrences int
	}
	var found []scored
	for _, d := range docs {
		path := strings.ToLower(d.Path)
		for si, sec := range d.Sections {
			text := strings.ToLower(sec.Text)
			h := scored{Hit: Hit{Path: d.Path, Section: sec}, idx: si}
			for _, kw := range kws {
				n := countWordPrefix(text, kw)
				if n == 0 && countWordPrefix(path, kw) == 0 {
					continue
				}
				h.distinct++
				h.occurrences += n
			}
			if h.distinct > 0 {
				found = append(found, h)
			}
		}
	}
	slices.SortStableFunc(found, func(a, b scored) int {
		switch {
		case a.distinct != b.distinct:
			return b.distinct - a.distinct
		case a.occurrences != b.occurrences:
			return b.occurrences - a.occurrences
		}
		if c := mod[b.Path].Compare(mod[a.Path]); c != 0 {
			return c
		}
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return a.idx - b.idx
	})
	hits := make([]Hit, len(found))
	for i, h := range found {
		hits[i] = h.Hit
	}
	return hits
}

// present writes the best whole hits, each headed by its path: at most limit of them and, past
// the first, no more than the budget in bytes; intro says what they are, counted among the
// hits when all are matching sections, and note, if any, follows it.
func (s *Store) present(intro string, hits []Hit, limit int, all bool, note string) string {
	var blocks []string
	used := 0
	for _, h := range hits {
		if len(blocks) == limit {
			break
		}
		head := "**" + h.Path + "**"
		if h.Header == "" {
			head += " (beginning of the file)"
		}
		block := head + "\n" + h.Text
		if len(blocks) > 0 && used+len(block) > s.cfg.budget {
			break
		}
		blocks = append(blocks, block)
		used += len(block)
	}
	count := fmt.Sprintf("%d of %d matching sections", len(blocks), len(hits))
	switch {
	case !all && len(blocks) == 1:
		count = "1 section"
	case !all:
		count = fmt.Sprintf("%d sections", len(blocks))
	}
	var b strings.Builder
	b.WriteString(withNote(fmt.Sprintf("%s: %s, best first.", intro, count), note))
	for _, bl := range blocks {
		b.WriteString(separator)
		b.WriteString(bl)
	}
	if rest := len(hits) - len(blocks); rest > 0 {
		fmt.Fprintf(&b, "%s(%d more matching sections not shown: use more precise keywords, or memory_read a file.)", separator, rest)
	}
	return b.String()
}

// withNote returns msg followed by note, if any.
func withNote(msg, note string) string {
	if note == "" {
		return msg
	}
	return msg + " " + note
}

// keywords splits query into distinct lower-cased words, leaving out stop-words and
// one-letter words (unless nothing else is left) and turning plurals into their stem.
func keywords(query string) []string {
	words := strings.FieldsFunc(strings.ToLower(query), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	var kws []string
	for _, w := range words {
		if stopWords[w] || utf8.RuneCountInString(w) < 2 {
			continue
		}
		if len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") {
			w = w[:len(w)-1]
		}
		if !slices.Contains(kws, w) {
			kws = append(kws, w)
		}
	}
	if len(kws) == 0 { // only stop-words or single letters: search for them after all
		for _, w := range words {
			if !slices.Contains(kws, w) {
				kws = append(kws, w)
			}
		}
	}
	return kws
}

// countWordPrefix counts the occurrences of kw in text that start a word.
func countWordPrefix(text, kw string) int {
	n := 0
	for i := 0; ; {
		j := strings.Index(text[i:], kw)
		if j < 0 {
			return n
		}
		start := i + j
		if start == 0 {
			n++
		} else if r, _ := utf8.DecodeLastRuneInString(text[:start]); !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			n++
		}
		i = start + len(kw)
	}
}

// splitSections splits markdown into sections at "## " and "### " header lines (outside
// fenced code blocks). The text before the first header is a section too. Sections with
// nothing but white space are left out.
func splitSections(text string) []Section {
	var out []Section
	cur := Section{}
	var lines []string
	flush := func() {
		body := strings.TrimRight(strings.Join(lines, "\n"), " \t\r\n")
		if strings.TrimSpace(body) != "" {
			cur.Text = strings.TrimLeft(body, "\r\n")
			out = append(out, cur)
		}
	}
	fenced := false
	for line := range strings.SplitSeq(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fenced = !fenced
		}
		if !fenced && (strings.HasPrefix(line, "## ") || strings.HasPrefix(line, "### ")) {
			flush()
			cur = Section{Header: strings.TrimSpace(strings.TrimLeft(line, "#"))}
			lines = []string{line}
			continue
		}
		lines = append(lines, line)
	}
	flush()
	return out
}

func quoteList(ws []string) string {
	q := make([]string, len(ws))
	for i, w := range ws {
		q[i] = fmt.Sprintf("%q", w)
	}
	if len(q) == 1 {
		return q[0]
	}
	return "any of " + strings.Join(q, ", ")
}
