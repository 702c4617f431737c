package web

import (
	"bytes"
	"fmt"
	"net/url"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// htmlToMarkdown converts an HTML document to markdown-like text, resolving links against
// base (or the document's <base href>). It returns the document's title separately.
func htmlToMarkdown(body []byte, base *url.URL) (title, text string) {
	doc, err := html.Parse(bytes.NewReader(body))
	if err != nil { // html.Parse only fails on read errors
		return "", strings.ToValidUTF8(string(body), "\uFFFD")
	}
	r := &mdRenderer{base: base}
	if b := findFirst(doc, atom.Base); b != nil {
		if href := attr(b, "href"); href != "" {
			if u, err := base.Parse(href); err == nil {
				r.base = u
			}
		}
	}
	if t := findFirst(doc, atom.Title); t != nil {
		title = collapse(textContent(t))
	}
	r.walk(doc)
	r.endBlock()
	var sb strings.Builder
	for i, b := range r.blocks {
		if i > 0 {
			if prev := r.blocks[i-1]; b.tight && prev.tight && b.group == prev.group {
				sb.WriteString("\n")
			} else {
				sb.WriteString("\n\n")
			}
		}
		sb.WriteString(b.text)
	}
	return title, sb.String()
}

type mdBlock struct {
	text  string
	tight bool // list items and table rows: joined to a preceding tight block by one newline
	group int  // the outermost list or table the block belongs to
}

type mdList struct {
	ordered bool
	n       int
}

type mdRenderer struct {
	base   *url.URL
	blocks []mdBlock
	inline strings.Builder
	lists  []mdList
	prefix string // list marker waiting for the first block of a list item
	inItem bool   // inside a list item or table row
	group  int    // counts outermost lists and tables
}

// skipped are elements whose content is not text worth reading.
var skipped = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Nav: true, atom.Footer: true, atom.Svg: true,
	atom.Noscript: true, atom.Template: true, atom.Iframe: true, atom.Head: true, atom.Object: true,
	atom.Embed: true, atom.Canvas: true, atom.Button: true, atom.Select: true, atom.Math: true,
}

var blockElems = map[atom.Atom]bool{
	atom.P: true, atom.Div: true, atom.Section: true, atom.Article: true, atom.Main: true,
	atom.Header: true, atom.Aside: true, atom.Blockquote: true, atom.Figure: true,
	atom.Figcaption: true, atom.Table: true, atom.Thead: true, atom.Tbody: true, atom.Tfoot: true,
	atom.Dl: true, atom.Dt: true, atom.Dd: true, atom.Form: true, atom.Fieldset: true,
	atom.Address: true, atom.Details: true, atom.Summary: true, atom.Caption: true, atom.Body: true,
	atom.Html: true,
}

func (r *mdRenderer) walk(n *html.Node) {
	switch n.Type {
	case html.TextNode:
		r.text(n.Data)
		return
	case html.ElementNode:
	default:
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			r.walk(c)
		}
		return
	}
	if _, hidden := getAttr(n, "hidden"); hidden || skipped[n.DataAtom] || attr(n, "aria-hidden") == "true" {
		return
	}
	switch a := n.DataAtom; {
	case a == atom.H1 || a == atom.H2 || a == atom.H3 || a == atom.H4 || a == atom.H5 || a == atom.H6:
		r.endBlock()
		r.children(n)
		level := int(n.Data[1] - '0')
		r.emitWith(strings.Repeat("#", level) + " ")
	case a == atom.Ul || a == atom.Ol:
		r.endBlock()
		if len(r.lists) == 0 {
			r.group++
		}
		r.lists = append(r.lists, mdList{ordered: a == atom.Ol})
		r.children(n)
		r.endBlock()
		r.lists = r.lists[:len(r.lists)-1]
	case a == atom.Li:
		r.endBlock()
		depth := max(len(r.lists), 1)
		marker := "- "
		if len(r.lists) > 0 && r.lists[len(r.lists)-1].ordered {
			l := &r.lists[len(r.lists)-1]
			l.n++
			marker = fmt.Sprintf("%d. ", l.n)
		}
		saved, savedItem := r.prefix, r.inItem
		r.prefix, r.inItem = strings.Repeat("  ", depth-1)+marker, true
		r.children(n)
		r.endBlock()
		r.prefix, r.inItem = saved, savedItem
	case a == atom.Tr:
		r.endBlock()
		saved := r.inItem
		r.inItem = true
		r.children(n)
		r.endBlock()
		r.inItem = saved
	case a == atom.Td || a == atom.Th:
		if strings.TrimSpace(r.inline.String()) != "" {
			r.inline.WriteString(" | ")
		}
		r.children(n)
	case a == atom.Pre:
		r.endBlock()
		lang := ""
		for _, el := range []*html.Node{n, findFirst(n, atom.Code)} {
			if el == nil {
				continue
			}
			for _, cl := range strings.Fields(attr(el, "class")) {
				if l, ok := strings.CutPrefix(cl, "language-"); ok && lang == "" {
					lang = l
				}
			}
		}
		code := strings.TrimRight(strings.ToValidUTF8(textContent(n), "\uFFFD"), "\n ")
		fence := "```"
		for strings.Contains(code, fence) {
			fence += "`"
		}
		r.blocks = append(r.blocks, mdBlock{text: fence + lang + "\n" + code + "\n" + fence})
	case a == atom.Code || a == atom.Kbd || a == atom.Samp:
		code := collapse(textContent(n))
		if code != "" {
			r.text("`" + code + "`")
		}
	case a == atom.A:
		text, href := r.inlineText(n), attr(n, "href")
		link := r.resolve(href)
		switch {
		case text == "":
		case link == "":
			r.text(text)
		default:
			r.text("[" + text + "](" + link + ")")
		}
	case a == atom.Img:
		if alt := collapse(attr(n, "alt")); alt != "" {
			if src := r.resolve(attr(n, "src")); src != "" {
				r.text("![" + alt + "](" + src + ")")
			} else {
				r.text(alt)
			}
		}
	case a == atom.Br:
		r.inline.WriteString("\n")
	case a == atom.Hr:
		r.endBlock()
		r.blocks = append(r.blocks, mdBlock{text: "---"})
	case blockElems[a]:
		r.endBlock()
		if a == atom.Table {
			r.group++
		}
		r.children(n)
		r.endBlock()
	default:
		r.children(n)
	}
}

func (r *mdRenderer) children(n *html.Node) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		r.walk(c)
	}
}

// inlineText renders n's content into a string of its own, without touching the current
// block.
func (r *mdRenderer) inlineText(n *html.Node) string {
	saved := r.inline.String()
	r.inline.Reset()
	r.children(n)
	s := collapse(r.inline.String())
	r.inline.Reset()
	r.inline.WriteString(saved)
	return s
}

// resolve makes href absolute; it returns "" for fragments, javascript: links and unparsable
// references.
func (r *mdRenderer) resolve(href string) string {
	href = strings.TrimSpace(href)
	if href == "" || strings.HasPrefix(href, "#") {
		return ""
	}
	u, err := r.base.Parse(href)
	if err != nil || strings.EqualFold(u.Scheme, "javascript") {
		return ""
	}
	return u.String()
}

// text appends inline text, collapsing runs of whitespace into one space.
func (r *mdRenderer) text(s string) {
	if s == "" {
		return
	}
	cur := r.inline.String() // no copy
	atStart := cur == "" || strings.HasSuffix(cur, " ") || strings.HasSuffix(cur, "\n")
	body := strings.Join(strings.Fields(s), " ")
	if isSpace(s[0]) && !atStart {
		r.inline.WriteByte(' ')
	}
	if body == "" {
		return
	}
	r.inline.WriteString(body)
	if isSpace(s[len(s)-1]) {
		r.inline.WriteByte(' ')
	}
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == '\f' }

// endBlock turns the pending inline text into a block.
func (r *mdRenderer) endBlock() { r.emitWith("") }

func (r *mdRenderer) emitWith(marker string) {
	raw := r.inline.String()
	r.inline.Reset()
	var lines []string
	for _, l := range strings.Split(raw, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return
	}
	indent := ""
	if r.inItem && r.prefix == "" && len(r.lists) > 0 {
		indent = strings.Repeat("  ", len(r.lists))
	}
	first := marker + strings.Join(lines, "\n"+indent)
	if r.prefix != "" {
		first = r.prefix + first
		indent = strings.Repeat(" ", len(r.prefix))
		first = strings.ReplaceAll(first, "\n", "\n"+indent)
		r.prefix = ""
	} else {
		first = indent + first
	}
	r.blocks = append(r.blocks, mdBlock{text: first, tight: r.inItem, group: r.group})
}

func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

func textContent(n *html.Node) string {
	var sb strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			sb.WriteString(n.Data)
		}
		if n.Type == html.ElementNode && n.DataAtom == atom.Br {
			sb.WriteString("\n")
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return sb.String()
}

func findFirst(n *html.Node, a atom.Atom) *html.Node {
	if n.Type == html.ElementNode && n.DataAtom == a {
		return n
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if f := findFirst(c, a); f != nil {
			return f
		}
	}
	return nil
}

func getAttr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Namespace == "" && strings.EqualFold(a.Key, key) {
			return a.Val, true
		}
	}
	return "", false
}

func attr(n *html.Node, key string) string { v, _ := getAttr(n, key); return v }
