package memory

import (
	"errors"
	"fmt"
	"slices"
	"strings"
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

// Search searches memory (MEMORY.md and memory/**/*.md) for query.
//
// When all memory is no larger than the budget (see [WithBudget]) it returns all of it, each
// file headed by its path, whatever the query, and the reader searches by reading.
// Otherwise it splits every file into sections at "## " and "### " headers (the text before
// the first header is a section too) and scores each section by the query's keywords:
// lower-cased words, without stop-words, each matching at the start of a word ("async"
// matches "asyncio"; a plural keyword matches its singular), in the section or its file's
// path. index.md, which names every file, is not searched this way. Sections matching more
// distinct keywords rank first, then those with more occurrences, then those of more
// recently modified files. The best whole sections are returned, each headed by its path
// and starting with its header line: at most limit of them (default [DefaultLimit] when
// limit <= 0) and, past the first, no more than the budget in bytes.
//
// When nothing matches the result is a text beginning "no memory matches", not an error. A
// query without any word is an error, and so is a memory/ or a MEMORY.md that is a symbolic
// link (nothing is searched through it).
func (s *Store) Search(query string, limit int) (string, error) {
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
	contents := make([]string, len(files))
	total := 0
	for i, f := range files {
		contents[i] = f.content
		total += len(contents[i])
	}

	if total == 0 {
		return fmt.Sprintf("no memory matches %q: memory is empty, nothing has been written to it yet.", query), nil
	}
	if total <= s.cfg.budget {
		var b strings.Builder
		fmt.Fprintf(&b, "All memory (%d files, %d bytes: small enough to read whole; look in it for %q):", len(files), total, query)
		for i, f := range files {
			b.WriteString(separator)
			b.WriteString("**" + f.rel + "**\n")
			if strings.TrimSpace(contents[i]) == "" {
				b.WriteString("(empty)")
			} else {
				b.WriteString(strings.TrimRight(contents[i], "\n"))
			}
		}
		return b.String(), nil
	}

	type hit struct {
		file, idx   int
		sec         section
		distinct    int
		occurrences int
	}
	var hits []hit
	nsec := 0
	for fi, f := range files {
		if f.rel == IndexFile { // it names every file: it would match every query
			continue
		}
		path := strings.ToLower(f.rel)
		for si, sec := range splitSections(contents[fi]) {
			nsec++
			text := strings.ToLower(sec.text)
			h := hit{file: fi, idx: si, sec: sec}
			for _, kw := range kws {
				n := countWordPrefix(text, kw)
				if n == 0 && countWordPrefix(path, kw) == 0 {
					continue
				}
				h.distinct++
				h.occurrences += n
			}
			if h.distinct > 0 {
				hits = append(hits, h)
			}
		}
	}
	if len(hits) == 0 {
		return fmt.Sprintf("no memory matches %q: none of the %d sections of the %d memory files contains %s. Try other words, or memory_read index.md to see what is stored.",
			query, nsec, len(files), quoteList(kws)), nil
	}
	slices.SortStableFunc(hits, func(a, b hit) int {
		switch {
		case a.distinct != b.distinct:
			return b.distinct - a.distinct
		case a.occurrences != b.occurrences:
			return b.occurrences - a.occurrences
		}
		if c := files[b.file].mod.Compare(files[a.file].mod); c != 0 {
			return c
		}
		if c := strings.Compare(files[a.file].rel, files[b.file].rel); c != 0 {
			return c
		}
		return a.idx - b.idx
	})

	var blocks []string
	used := 0
	for _, h := range hits {
		if len(blocks) == limit {
			break
		}
		head := "**" + files[h.file].rel + "**"
		if h.sec.header == "" {
			head += " (beginning of the file)"
		}
		block := head + "\n" + h.sec.text
		if len(blocks) > 0 && used+len(block) > s.cfg.budget {
			break
		}
		blocks = append(blocks, block)
		used += len(block)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Memory is large (%d bytes in %d files), so these are the sections best matching %q (keywords: %s): %d of %d matching sections, best first.",
		total, len(files), query, strings.Join(kws, ", "), len(blocks), len(hits))
	for _, bl := range blocks {
		b.WriteString(separator)
		b.WriteString(bl)
	}
	if rest := len(hits) - len(blocks); rest > 0 {
		fmt.Fprintf(&b, "%s(%d more matching sections not shown: use more precise keywords, or memory_read a file.)", separator, rest)
	}
	return b.String(), nil
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

// section is one chunk of a markdown file.
type section struct {
	header string // the header line's text without the #s; "" for the text before the first header
	text   string // the header line and the body, without trailing blank lines
}

// splitSections splits markdown into sections at "## " and "### " header lines (outside
// fenced code blocks). The text before the first header is a section too. Sections with
// nothing but white space are left out.
func splitSections(text string) []section {
	var out []section
	cur := section{}
	var lines []string
	flush := func() {
		body := strings.TrimRight(strings.Join(lines, "\n"), " \t\r\n")
		if strings.TrimSpace(body) != "" {
			cur.text = strings.TrimLeft(body, "\r\n")
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
			cur = section{header: strings.TrimSpace(strings.TrimLeft(line, "#"))}
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
