package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agiraph/agiraph/nodes/memory"
	"github.com/agiraph/agiraph/nodes/workspace"
	"github.com/agiraph/agiraph/tools"
)

// clock is a settable fake clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

func open(t *testing.T, opts ...memory.Option) (*memory.Store, workspace.Home) {
	t.Helper()
	home := workspace.Home(filepath.Join(t.TempDir(), "agent"))
	s, err := memory.Open(home, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s, home
}

func mustWrite(t *testing.T, s *memory.Store, path, content string, appendMode bool) {
	t.Helper()
	if err := s.Write("tester", path, content, appendMode); err != nil {
		t.Fatalf("Write(%q): %v", path, err)
	}
}

func mustRead(t *testing.T, s *memory.Store, path string) string {
	t.Helper()
	got, err := s.Read(path)
	if err != nil {
		t.Fatalf("Read(%q): %v", path, err)
	}
	return got
}

func TestOpenCreatesLayout(t *testing.T) {
	s, home := open(t)
	for _, d := range []string{"", "knowledge", "experiences", "preferences"} {
		st, err := os.Stat(filepath.Join(home.MemoryDir(), d))
		if err != nil || !st.IsDir() {
			t.Errorf("memory/%s: not a folder (%v)", d, err)
		}
	}
	idx := mustRead(t, s, "index.md")
	if !strings.Contains(idx, "# Memory index") {
		t.Errorf("index.md = %q, want a titled index", idx)
	}
	if _, err := os.Stat(home.Memory()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open created MEMORY.md (stat err %v)", err)
	}
	// Opening again keeps an edited index.
	if err := os.WriteFile(filepath.Join(home.MemoryDir(), "index.md"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s2, err := memory.Open(home)
	if err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, s2, "index.md"); got != "mine\n" {
		t.Errorf("index.md after reopening = %q, want it kept", got)
	}
}

func TestWriteReadRoundTrip(t *testing.T) {
	s, home := open(t)
	mustWrite(t, s, "knowledge/go.md", "# Go\n\n## Channels\nUnbuffered channels synchronise.\n", false)
	if got := mustRead(t, s, "knowledge/go.md"); got != "# Go\n\n## Channels\nUnbuffered channels synchronise.\n" {
		t.Errorf("after replace: %q", got)
	}
	mustWrite(t, s, "knowledge/go.md", "## Maps\nNot safe for concurrent writes.", true)
	want := "# Go\n\n## Channels\nUnbuffered channels synchronise.\n## Maps\nNot safe for concurrent writes.\n"
	if got := mustRead(t, s, "knowledge/go.md"); got != want {
		t.Errorf("after append: %q, want %q", got, want)
	}
	// A file without a final newline: the append starts on a new line.
	mustWrite(t, s, "experiences/x.md", "no newline", false)
	mustWrite(t, s, "experiences/x.md", "second", true)
	if got := mustRead(t, s, "experiences/x.md"); got != "no newline\nsecond\n" {
		t.Errorf("append after no newline: %q", got)
	}
	// Replace overwrites.
	mustWrite(t, s, "knowledge/go.md", "short", false)
	if got := mustRead(t, s, "knowledge/go.md"); got != "short" {
		t.Errorf("after second replace: %q", got)
	}
	// Append creates the file and its parent folders; "memory/" prefix is accepted.
	mustWrite(t, s, "memory/knowledge/deep/nested.md", "## A\nb", true)
	if data, err := os.ReadFile(filepath.Join(home.MemoryDir(), "knowledge", "deep", "nested.md")); err != nil || string(data) != "## A\nb\n" {
		t.Errorf("nested file: %q, %v", data, err)
	}
	// Empty append is refused.
	if err := s.Write("tester", "knowledge/go.md", "  ", true); err == nil {
		t.Error("appending nothing: no error")
	}
	// No temporary files are left behind.
	entries, _ := os.ReadDir(filepath.Join(home.MemoryDir(), "knowledge"))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("left behind %s", e.Name())
		}
	}
}

func TestCuratedFile(t *testing.T) {
	s, home := open(t)
	mustWrite(t, s, "MEMORY.md", "# Essentials\nThe human prefers short reports.\n", false)
	data, err := os.ReadFile(home.Memory())
	if err != nil || string(data) != "# Essentials\nThe human prefers short reports.\n" {
		t.Fatalf("MEMORY.md on disk = %q, %v", data, err)
	}
	mustWrite(t, s, "MEMORY.md", "- Reports go in markdown.", true)
	if got := mustRead(t, s, "MEMORY.md"); !strings.HasSuffix(got, "short reports.\n- Reports go in markdown.\n") {
		t.Errorf("MEMORY.md = %q", got)
	}
	if _, err := os.Stat(filepath.Join(home.MemoryDir(), "MEMORY.md")); err == nil {
		t.Error("MEMORY.md was written inside memory/")
	}
	if idx := mustRead(t, s, "index.md"); strings.Contains(idx, "MEMORY.md") {
		t.Errorf("index lists MEMORY.md: %q", idx)
	}
}

func TestIndexGainsLinesOnce(t *testing.T) {
	s, _ := open(t)
	mustWrite(t, s, "knowledge/python-asyncio.md", "# Python asyncio\n\n## Event loops\n...", false)
	mustWrite(t, s, "knowledge/python-asyncio.md", "## Tasks\n...", true)
	mustWrite(t, s, "knowledge/python-asyncio.md", "# Python asyncio\nrewritten", false)
	mustWrite(t, s, "asyncio.md", "top-level file whose name is a suffix of another", true)
	mustWrite(t, s, "preferences/human-notes.md", "likes tables", true)
	mustWrite(t, s, "2026-02-11.md", "- 10:00 a daily log written directly", true)
	idx := mustRead(t, s, "index.md")
	for _, p := range []string{"knowledge/python-asyncio.md", "asyncio.md", "preferences/human-notes.md"} {
		n := 0
		for _, line := range strings.Split(idx, "\n") {
			if strings.HasPrefix(line, "- "+p) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("index lists %s %d times, want once:\n%s", p, n, idx)
		}
	}
	if !strings.Contains(idx, "- knowledge/python-asyncio.md: Python asyncio") {
		t.Errorf("index line lacks the file's title:\n%s", idx)
	}
	if strings.Contains(idx, "2026-02-11.md\n") || strings.Contains(idx, "- 2026-02-11") {
		t.Errorf("index lists a daily log:\n%s", idx)
	}
	// A file the agent lists itself in the index gets no second line.
	mustWrite(t, s, "index.md", "# Index\n- experiences/coding.md — what worked in Go\n", false)
	mustWrite(t, s, "experiences/coding.md", "## Tests first", true)
	if got := mustRead(t, s, "index.md"); got != "# Index\n- experiences/coding.md — what worked in Go\n" {
		t.Errorf("index after writing a listed file: %q", got)
	}
}

func TestPathEscapesRefused(t *testing.T) {
	s, home := open(t)
	outside := filepath.Join(filepath.Dir(string(home)), "outside")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret.md"), []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(home.MemoryDir(), "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.md"), filepath.Join(home.MemoryDir(), "knowledge", "secret.md")); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ path, want string }{
		{"../x.md", "outside memory/"},
		{"/etc/passwd", "absolute"},
		{"knowledge/../../x.md", "outside memory/"},
		{"link/secret.md", "symbolic link"},
		{"link/new.md", "symbolic link"},
		{"knowledge/secret.md", "symbolic link"},
		{"notes.txt", "not a markdown file"},
		{"knowledge/go", "not a markdown file"},
		{"knowledge/.hidden.md", "dot"},
		{"", "no path"},
	}
	for _, c := range cases {
		werr := s.Write("tester", c.path, "x", true)
		_, rerr := s.Read(c.path)
		for op, err := range map[string]error{"Write": werr, "Read": rerr} {
			if err == nil {
				t.Errorf("%s(%q): no error", op, c.path)
				continue
			}
			if !strings.Contains(err.Error(), c.want) || (c.path != "" && !strings.Contains(err.Error(), fmt.Sprintf("%q", c.path))) {
				t.Errorf("%s(%q) error = %q, want it to name the path and say %q", op, c.path, err, c.want)
			}
		}
	}
	if data, _ := os.ReadFile(filepath.Join(outside, "secret.md")); string(data) != "secret" {
		t.Errorf("file outside memory changed: %q", data)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Errorf("files created outside memory: %v", entries)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(string(home)), "x.md")); err == nil {
		t.Error("../x.md was created")
	}
	// Search skips the symlinked file and folder.
	out, err := s.Search("secret", 0)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "secret.md") {
		t.Errorf("search reached through a symlink:\n%s", out)
	}
	// Inside paths that merely use ".." are fine.
	mustWrite(t, s, "knowledge/../experiences/ok.md", "fine", false)
	if got := mustRead(t, s, "experiences/ok.md"); got != "fine" {
		t.Errorf("experiences/ok.md = %q", got)
	}
}

func TestReadMissingListsFiles(t *testing.T) {
	s, _ := open(t)
	mustWrite(t, s, "knowledge/go.md", "## Go", true)
	_, err := s.Read("knowledge/rust.md")
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{`"knowledge/rust.md" does not exist`, "knowledge/go.md", "index.md"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestSearchLoadAll(t *testing.T) {
	s, _ := open(t)
	mustWrite(t, s, "MEMORY.md", "# Essentials\nAlways cite sources.", false)
	mustWrite(t, s, "knowledge/chips.md", "## TPUs\nGoogle's accelerators.", false)
	mustWrite(t, s, "preferences/human-notes.md", "## Style\nBullet points.", false)
	out, err := s.Search("completely unrelated", 5)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"**MEMORY.md**\n# Essentials\nAlways cite sources.",
		"**knowledge/chips.md**\n## TPUs\nGoogle's accelerators.",
		"**preferences/human-notes.md**\n## Style\nBullet points.",
		"**index.md**\n# Memory index",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("load-all result lacks %q:\n%s", want, out)
		}
	}
	if _, err := s.Search("  ", 0); err == nil {
		t.Error("empty query: no error")
	}
}

// bigStore fills a store with about 30 KB of notes.
func bigStore(t *testing.T) *memory.Store {
	t.Helper()
	s, home := open(t)
	filler := strings.Repeat("Unrelated filler text about gardening and weather. ", 10)
	for i := range 50 {
		var b strings.Builder
		fmt.Fprintf(&b, "# Notes %d\n\n", i)
		for j := range 2 {
			fmt.Fprintf(&b, "## Topic %d-%d\n%s\n\n", i, j, filler)
		}
		mustWrite(t, s, fmt.Sprintf("knowledge/filler-%02d.md", i), b.String(), false)
	}
	mustWrite(t, s, "knowledge/python-asyncio.md", "# Python asyncio\n\nIntro text before sections.\n\n"+
		"## Event loops\nThe asyncio event loop runs coroutines; one loop per thread.\nasyncio.run starts a loop.\n\n"+
		"## Unrelated\nNothing here but tea.\n", false)
	mustWrite(t, s, "experiences/coding.md", "## Tests\nWrite the test first.\n\n### Async tests\nUse an async test runner for asyncio code.\n", false)
	mustWrite(t, s, "knowledge/rust.md", "## Async in Rust\nRust async needs an executor such as tokio.\n", false)
	// Two files with equally good matches: the newer one comes first.
	mustWrite(t, s, "knowledge/old.md", "## Zebra facts\nzebra stripes.\n", false)
	mustWrite(t, s, "knowledge/new.md", "## Zebra notes\nzebra herds.\n", false)
	past := time.Now().Add(-48 * time.Hour)
	if err := os.Chtimes(filepath.Join(home.MemoryDir(), "knowledge", "old.md"), past, past); err != nil {
		t.Fatal(err)
	}
	return s
}

func blocks(out string) []string { return strings.Split(out, "\n\n---\n\n")[1:] }

func TestSearchSections(t *testing.T) {
	s := bigStore(t)
	out, err := s.Search("python async event loop", 3)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "All memory") {
		t.Fatalf("searched a 30 KB store by loading all:\n%.300s", out)
	}
	bs := blocks(out)
	if len(bs) != 3+1 { // three sections and the "more not shown" note
		t.Fatalf("got %d blocks, want 3 sections and a note:\n%s", len(bs), out)
	}
	wantFirst := "**knowledge/python-asyncio.md**\n## Event loops\nThe asyncio event loop runs coroutines; one loop per thread.\nasyncio.run starts a loop."
	if bs[0] != wantFirst {
		t.Errorf("best section = %q, want the whole Event loops section %q", bs[0], wantFirst)
	}
	for _, b := range bs[:3] {
		if strings.Contains(b, "gardening") {
			t.Errorf("a filler section matched: %.100s", b)
		}
	}
	if !strings.Contains(out, "more matching sections not shown") {
		t.Errorf("no note of the sections left out:\n%s", out)
	}

	// Limit 1: only the best.
	out, _ = s.Search("python async event loop", 1)
	if bs := blocks(out); len(bs) < 1 || bs[0] != wantFirst {
		t.Errorf("limit 1: %q", out)
	}

	// Default limit is 10 and the output stays within the budget.
	out, _ = s.Search("filler gardening", 0)
	if bs := blocks(out); len(bs) != 11 {
		t.Errorf("default limit: %d blocks, want 10 and a note", len(bs))
	}
	if len(out) > memory.DefaultBudget+1000 {
		t.Errorf("result is %d bytes, over the budget", len(out))
	}

	// Ties: the newer file first.
	out, _ = s.Search("zebra", 5)
	bs = blocks(out)
	if len(bs) != 2 || !strings.HasPrefix(bs[0], "**knowledge/new.md**") || !strings.HasPrefix(bs[1], "**knowledge/old.md**") {
		t.Errorf("zebra: want new.md then old.md:\n%s", out)
	}

	// Stop-words are ignored: "the" and "of" do not pull in every section.
	out, _ = s.Search("the tokio of", 5)
	bs = blocks(out)
	if len(bs) != 1 || !strings.HasPrefix(bs[0], "**knowledge/rust.md**\n## Async in Rust") {
		t.Errorf("tokio: %s", out)
	}

	// Nothing matches.
	out, err = s.Search("kubernetes helm", 5)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "no memory matches") || !strings.Contains(out, "kubernetes") {
		t.Errorf("no match: %q", out)
	}
}

func TestSearchBudgetCapsSections(t *testing.T) {
	s, _ := open(t, memory.WithBudget(500))
	for i := range 6 {
		mustWrite(t, s, fmt.Sprintf("knowledge/n%d.md", i), "## Widget\n"+strings.Repeat("widget ", 40), false)
	}
	out, err := s.Search("widget", 10)
	if err != nil {
		t.Fatal(err)
	}
	bs := blocks(out)
	// Each section is about 300 bytes: only one fits in 500 (the first always comes back).
	if len(bs) != 2 || !strings.Contains(bs[1], "5 more matching sections") {
		t.Errorf("budget 500: %d blocks:\n%s", len(bs), out)
	}
	if !strings.HasSuffix(bs[0], strings.Repeat("widget ", 39)+"widget") {
		t.Errorf("section not whole: %q", bs[0])
	}
}

func TestLogAndRecent(t *testing.T) {
	c := &clock{t: time.Date(2026, 2, 9, 9, 5, 0, 0, time.UTC)}
	s, home := open(t, memory.WithClock(c.now))
	if got := s.Recent(2); got != "" {
		t.Errorf("Recent with no logs = %q", got)
	}
	if err := s.Log("coord", "started the chip survey"); err != nil {
		t.Fatal(err)
	}
	c.set(time.Date(2026, 2, 10, 14, 30, 0, 0, time.UTC))
	if err := s.Log("w1", "found three vendors\nand a fourth"); err != nil {
		t.Fatal(err)
	}
	c.set(time.Date(2026, 2, 11, 8, 0, 0, 0, time.UTC))
	if err := s.Log("", "human asked for a table"); err != nil {
		t.Fatal(err)
	}
	if err := s.Log("coord", "sent the table"); err != nil {
		t.Fatal(err)
	}
	if err := s.Log("coord", " "); err == nil {
		t.Error("empty entry: no error")
	}
	data, err := os.ReadFile(filepath.Join(home.MemoryDir(), "2026-02-11.md"))
	if err != nil || string(data) != "- 08:00 human asked for a table\n- 08:00 coord: sent the table\n" {
		t.Errorf("2026-02-11.md = %q, %v", data, err)
	}
	if got := mustRead(t, s, "2026-02-10.md"); got != "- 14:30 w1: found three vendors\n  and a fourth\n" {
		t.Errorf("2026-02-10.md = %q", got)
	}
	r2 := s.Recent(2)
	want := "### 2026-02-10\n- 14:30 w1: found three vendors\n  and a fourth\n\n### 2026-02-11\n- 08:00 human asked for a table\n- 08:00 coord: sent the table"
	if r2 != want {
		t.Errorf("Recent(2) = %q, want %q", r2, want)
	}
	r3 := s.Recent(3)
	if !strings.HasPrefix(r3, "### 2026-02-09\n- 09:05 coord: started the chip survey\n\n### 2026-02-10") {
		t.Errorf("Recent(3) = %q", r3)
	}
	if got := s.Recent(0); got != "" {
		t.Errorf("Recent(0) = %q", got)
	}
	if idx := mustRead(t, s, "index.md"); strings.Contains(idx, "2026-02") {
		t.Errorf("daily logs listed in index:\n%s", idx)
	}
}

func TestPrompt(t *testing.T) {
	c := &clock{t: time.Date(2026, 2, 9, 9, 0, 0, 0, time.UTC)}
	s, _ := open(t, memory.WithClock(c.now))
	if got := s.Prompt(); got != "" {
		t.Errorf("Prompt of a fresh memory = %q, want empty", got)
	}
	if err := s.Log("coord", "an old entry"); err != nil {
		t.Fatal(err)
	}
	c.set(time.Date(2026, 2, 11, 10, 0, 0, 0, time.UTC))
	if err := s.Log("coord", "today's entry"); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, s, "MEMORY.md", "The human is Ada; she wants weekly summaries.", false)
	mustWrite(t, s, "knowledge/chips.md", "# AI chips\n## TPUs\n...", false)
	p := s.Prompt()
	for _, want := range []string{
		"## Long-term memory (MEMORY.md)\n\nThe human is Ada; she wants weekly summaries.",
		"## Memory index (memory/index.md)",
		"- knowledge/chips.md: AI chips",
		"## Recent daily logs",
		"### 2026-02-11\n- 10:00 coord: today's entry",
	} {
		if !strings.Contains(p, want) {
			t.Errorf("Prompt lacks %q:\n%s", want, p)
		}
	}
	if strings.Contains(p, "an old entry") {
		t.Errorf("Prompt has a log older than two days:\n%s", p)
	}
	if strings.Contains(p, "## TPUs") {
		t.Errorf("Prompt carries knowledge files whole:\n%s", p)
	}
}

func TestObserver(t *testing.T) {
	var mu sync.Mutex
	var seen []memory.Write
	c := &clock{t: time.Date(2026, 2, 11, 10, 0, 0, 0, time.UTC)}
	s, _ := open(t, memory.WithClock(c.now), memory.WithObserver(func(w memory.Write) {
		mu.Lock()
		seen = append(seen, w)
		mu.Unlock()
	}))
	mustWrite(t, s, "knowledge/go.md", "## Go\n", false)
	if err := s.Write("w2", "MEMORY.md", "essentials", true); err != nil {
		t.Fatal(err)
	}
	if err := s.Log("coord", "did things"); err != nil {
		t.Fatal(err)
	}
	_ = s.Write("w2", "../x.md", "no", true) // refused: not observed
	want := []memory.Write{
		{Path: "knowledge/go.md", Bytes: 6, Append: false, By: "tester", Created: true},
		{Path: "index.md", Bytes: len("- knowledge/go.md: Go\n"), Append: true, By: "tester", Text: "- knowledge/go.md: Go\n"},
		{Path: "MEMORY.md", Bytes: len("essentials\n"), Append: true, By: "w2", Text: "essentials\n", Created: true},
		{Path: "2026-02-11.md", Bytes: len("- 10:00 coord: did things\n"), Append: true, By: "coord", Text: "- 10:00 coord: did things\n", Created: true},
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Errorf("observed %v\nwant     %v", seen, want)
	}
}

func runTool(t *testing.T, reg *tools.Registry, name string, args any) tools.Result {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	res := reg.Run(context.Background(), []tools.Call{{ID: "c1", Name: name, Args: raw}})
	if len(res) != 1 {
		t.Fatalf("%d results", len(res))
	}
	return res[0]
}

func TestToolsPermission(t *testing.T) {
	s, home := open(t)
	reg, err := tools.NewRegistry(s.Tools(memory.ToolOptions{By: "w1", CanWrite: false}))
	if err != nil {
		t.Fatal(err)
	}
	res := runTool(t, reg, "memory_write", map[string]string{"path": "knowledge/a.md", "content": "## A\nfact"})
	if !res.IsError || !strings.Contains(res.Content, "coordinator's permission") {
		t.Errorf("memory_write without permission: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(home.MemoryDir(), "knowledge", "a.md")); err == nil {
		t.Error("refused write created the file")
	}
	// Reading and searching need no permission.
	if res := runTool(t, reg, "memory_read", map[string]string{"path": "index.md"}); res.IsError {
		t.Errorf("memory_read: %+v", res)
	}

	reg, err = tools.NewRegistry(s.Tools(memory.ToolOptions{By: "coord", CanWrite: true}))
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range reg.Tools() {
		if tl.Guidance == "" {
			t.Errorf("%s has no guidance", tl.Name)
		}
	}
	if g := reg.Guidance(); !strings.Contains(g, "knowledge/") || !strings.Contains(g, "experiences/") ||
		!strings.Contains(g, "preferences/") || !strings.Contains(g, "MEMORY.md") || !strings.Contains(g, "## ") {
		t.Errorf("guidance does not say what goes where:\n%s", g)
	}
	res = runTool(t, reg, "memory_write", map[string]string{"path": "knowledge/a.md", "content": "## A\nfact"})
	if res.IsError || !strings.Contains(res.Content, "knowledge/a.md") || !strings.Contains(res.Content, "index.md") {
		t.Errorf("memory_write: %+v", res)
	}
	res = runTool(t, reg, "memory_write", map[string]string{"path": "knowledge/a.md", "content": "## B\nmore"})
	if res.IsError || strings.Contains(res.Content, "index.md") {
		t.Errorf("second memory_write (append by default): %+v", res)
	}
	res = runTool(t, reg, "memory_read", map[string]string{"path": "knowledge/a.md"})
	if res.IsError || res.Content != "## A\nfact\n## B\nmore\n" {
		t.Errorf("memory_read: %+v", res)
	}
	res = runTool(t, reg, "memory_write", map[string]string{"path": "knowledge/a.md", "content": "## C\nonly", "mode": "replace"})
	if res.IsError {
		t.Errorf("replace: %+v", res)
	}
	if got := mustRead(t, s, "knowledge/a.md"); got != "## C\nonly" {
		t.Errorf("after replace: %q", got)
	}
	res = runTool(t, reg, "memory_write", map[string]string{"path": "knowledge/a.md", "content": "x", "mode": "overwrite"})
	if !res.IsError {
		t.Errorf("unknown mode accepted: %+v", res)
	}
	res = runTool(t, reg, "memory_write", map[string]string{"path": "../a.md", "content": "x"})
	if !res.IsError || !strings.Contains(res.Content, `"../a.md"`) {
		t.Errorf("escape through the tool: %+v", res)
	}
}

// TestSearchAcrossRuns: run 1 writes a note, run 2 (a new store on the same home, with a
// memory too big to load whole) finds it.
func TestSearchAcrossRuns(t *testing.T) {
	home := workspace.Home(filepath.Join(t.TempDir(), "agent"))
	s1, err := memory.Open(home)
	if err != nil {
		t.Fatal(err)
	}
	reg1, _ := tools.NewRegistry(s1.Tools(memory.ToolOptions{By: "coord", CanWrite: true}))
	note := "# Python asyncio\n\n## Event loops\nOne event loop per thread; asyncio.run creates and closes it.\n\n## Cancellation\nCancelled tasks raise CancelledError.\n"
	if res := runTool(t, reg1, "memory_write", map[string]string{"path": "knowledge/python-asyncio.md", "content": note, "mode": "replace"}); res.IsError {
		t.Fatal(res.Content)
	}
	filler := strings.Repeat("Notes on gardening, soil and weather. ", 20)
	for i := range 40 {
		if res := runTool(t, reg1, "memory_write", map[string]string{"path": fmt.Sprintf("knowledge/garden-%d.md", i), "content": "## Soil\n" + filler}); res.IsError {
			t.Fatal(res.Content)
		}
	}

	s2, err := memory.Open(home)
	if err != nil {
		t.Fatal(err)
	}
	reg2, _ := tools.NewRegistry(s2.Tools(memory.ToolOptions{By: "coord"}))
	res := runTool(t, reg2, "memory_search", map[string]any{"query": "python async"})
	if res.IsError {
		t.Fatal(res.Content)
	}
	if strings.Contains(res.Content, "All memory") {
		t.Fatalf("memory was small enough to load whole; the test wants section search")
	}
	if !strings.Contains(res.Content, "**knowledge/python-asyncio.md**\n## Event loops\nOne event loop per thread") {
		t.Errorf("memory_search did not find the note:\n%s", res.Content)
	}
	if strings.Contains(res.Content, "gardening") {
		t.Errorf("memory_search returned unrelated notes:\n%s", res.Content)
	}
	res = runTool(t, reg2, "memory_search", map[string]any{"query": "python async", "limit": 1})
	if bs := blocks(res.Content); res.IsError || len(bs) != 2 { // one section and the note of the rest
		t.Errorf("limit 1: %+v", res)
	}
}

func TestConcurrentAppends(t *testing.T) {
	var count int
	var mu sync.Mutex
	s, _ := open(t, memory.WithObserver(func(w memory.Write) {
		mu.Lock()
		count++
		mu.Unlock()
	}))
	const writers, lines = 8, 50
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range lines {
				line := fmt.Sprintf("writer %d line %d %s", w, i, strings.Repeat("x", 200))
				if err := s.Write(fmt.Sprint(w), "experiences/shared.md", line, true); err != nil {
					t.Error(err)
				}
				if i%10 == 0 {
					if _, err := s.Search("writer", 3); err != nil {
						t.Error(err)
					}
				}
			}
		}()
	}
	wg.Wait()
	got := mustRead(t, s, "experiences/shared.md")
	seen := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
		var w, i int
		var xs string
		if n, err := fmt.Sscanf(l, "writer %d line %d %s", &w, &i, &xs); n != 3 || err != nil || xs != strings.Repeat("x", 200) {
			t.Fatalf("damaged line %q", l)
		}
		seen[l] = true
	}
	if len(seen) != writers*lines {
		t.Errorf("%d distinct lines, want %d", len(seen), writers*lines)
	}
	idx := mustRead(t, s, "index.md")
	if strings.Count(idx, "experiences/shared.md") != 1 {
		t.Errorf("index lists the shared file %d times", strings.Count(idx, "experiences/shared.md"))
	}
	mu.Lock()
	defer mu.Unlock()
	if count != writers*lines+1 {
		t.Errorf("observer saw %d writes, want %d", count, writers*lines+1)
	}
}

func TestSearchSectionBoundaries(t *testing.T) {
	s, home := open(t, memory.WithBudget(300))
	mustWrite(t, s, "knowledge/shell.md", "Preamble about quokka habits.\n\n## Scripts\nA quokka script:\n```\n## not a header, inside a fence\necho quokka\n```\nend of scripts.\n\n### Other\nnothing\n", false)
	mustWrite(t, s, "knowledge/pad.md", "## Pad\n"+strings.Repeat("padding ", 50), false)
	out, err := s.Search("quokka", 5)
	if err != nil {
		t.Fatal(err)
	}
	bs := blocks(out)
	if len(bs) != 2 {
		t.Fatalf("want 2 sections:\n%s", out)
	}
	if !strings.HasPrefix(bs[0], "**knowledge/shell.md**\n## Scripts\n") || !strings.HasSuffix(bs[0], "end of scripts.") {
		t.Errorf("fenced section split or cut: %q", bs[0])
	}
	if bs[1] != "**knowledge/shell.md** (beginning of the file)\nPreamble about quokka habits." {
		t.Errorf("preamble section: %q", bs[1])
	}
	// A MEMORY.md that is a symbolic link (here to SOUL.md) is refused.
	if err := os.WriteFile(home.Soul(), []byte("soul"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(home.Soul(), home.Memory()); err != nil {
		t.Fatal(err)
	}
	if err := s.Write("x", "MEMORY.md", "overwrite the soul", false); err == nil || !strings.Contains(err.Error(), `"MEMORY.md"`) {
		t.Errorf("write through a MEMORY.md symlink: %v", err)
	}
	if data, _ := os.ReadFile(home.Soul()); string(data) != "soul" {
		t.Errorf("SOUL.md changed: %q", data)
	}
}
