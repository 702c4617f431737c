package memory

import (
	"context"
)

// Index ranks memory's sections for a query, in place of [Store.Search]'s keyword matching, for a
// store opened [WithIndex]. Package nodes/memory/index has one: SQLite full-text search (BM25)
// with the vectors of an embedder if one is given.
//
// The memory files are the truth and the index a copy that may lag: the store calls Put after
// every write, and Sync with all the memory files before every search that does not return all
// memory, so an index lost, damaged or older than the files is brought up to date then.
// Implementations are safe for concurrent use.
type Index interface {
	// Put indexes file, new or changed, leaving the other files as they are. It makes no call
	// over the network.
	Put(ctx context.Context, file File) error
	// Sync brings the index up to date with files, all the memory files: it indexes those
	// that are new or changed and forgets those that files does not name.
	Sync(ctx context.Context, files []File) error
	// Search returns at most limit sections for q, best first.
	Search(ctx context.Context, q Query, limit int) (Ranking, error)
}

// File is a memory file as an [Index] sees it: its path, as [Store.Read] takes it, and its
// sections, as [Store.Search] splits them.
type File struct {
	Path     string
	Sections []Section
}

// Section is one part of a memory file: the text before the first "## " or "### " header, or a
// header line and what follows it up to the next.
type Section struct {
	// Header is the header line's text without the #s; "" for the text before the first header.
	Header string
	// Text is the header line and the body, without trailing blank lines.
	Text string
}

// Query is what an [Index] searches for: the text as the searcher wrote it, and its keywords
// (lower-cased words without stop-words, as [Store.Search] describes them).
type Query struct {
	Text     string
	Keywords []string
}

// Ranking is what an [Index] found.
type Ranking struct {
	// Hits are the sections found, best first.
	Hits []Hit
	// Method says how they were ranked, for the reader: "full-text ranking (BM25)".
	Method string
	// Note says what the reader should know of this search, such as an embedder that failed;
	// "" when there is nothing to say.
	Note string
}

// Hit is a section an [Index] found, with the path of its file.
type Hit struct {
	Path string
	Section
}

// WithIndex has [Store.Search] rank sections with ix when memory is larger than the budget, and
// tells ix of every write (see [Index]). A search whose index fails falls back to keyword
// matching and says so in its result.
func WithIndex(ix Index) Option {
	return func(c *config) { c.index = ix }
}

// sectionsOf returns the file rel with content as an Index sees it.
func sectionsOf(rel, content string) File {
	return File{Path: rel, Sections: splitSections(content)}
}

// reindex tells the index, if any, that the file rel was written. A failure is left for the
// next search's Sync to mend: the write itself succeeded.
func (s *Store) reindex(rel string) {
	if s.cfg.index == nil || rel == IndexFile {
		return
	}
	content, err := s.Read(rel)
	if err != nil {
		return
	}
	_ = s.cfg.index.Put(context.Background(), sectionsOf(rel, content)) // mended by the next Sync
}
