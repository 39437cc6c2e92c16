package webui

import (
	"html"
	"path"
	"regexp"
	"strings"
)

// Markdown renders the Markdown that wm writes (table.md, findings.md,
// docs) as HTML: headings, paragraphs, lists, block quotes, pipe tables,
// fenced code, images, links, bold, italics and code spans. Everything is
// escaped first, so nothing in a file can inject markup or script; image
// and link targets relative to the file (dir, with slashes, under the
// results root) become /files/ URLs, and only http(s) links leave it.
func Markdown(src, dir string) string {
	var b strings.Builder
	lines := strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n")
	var para []string
	flush := func() {
		if len(para) > 0 {
			b.WriteString("<p>" + inline(strings.Join(para, " "), dir) + "</p>\n")
			para = nil
		}
	}
	for i := 0; i < len(lines); i++ {
		t := strings.TrimSpace(lines[i])
		switch {
		case t == "":
			flush()
		case strings.HasPrefix(t, "```"):
			flush()
			i = fence(&b, lines, i)
		case strings.HasPrefix(t, "#"):
			flush()
			heading(&b, t, dir)
		case strings.HasPrefix(t, "|"):
			flush()
			rows, next := run(lines, i, func(u string) bool { return strings.HasPrefix(u, "|") })
			b.WriteString(table(rows, dir))
			i = next - 1
		case strings.HasPrefix(t, "- ") || strings.HasPrefix(t, "* "):
			flush()
			items, next := run(lines, i, func(u string) bool { return strings.HasPrefix(u, "- ") || strings.HasPrefix(u, "* ") })
			b.WriteString("<ul>\n")
			for _, u := range items {
				b.WriteString("<li>" + inline(u[2:], dir) + "</li>\n")
			}
			b.WriteString("</ul>\n")
			i = next - 1
		case strings.HasPrefix(t, ">"):
			flush()
			q, next := run(lines, i, func(u string) bool { return strings.HasPrefix(u, ">") })
			for k := range q {
				q[k] = strings.TrimSpace(strings.TrimPrefix(q[k], ">"))
			}
			b.WriteString("<blockquote>" + inline(strings.Join(q, " "), dir) + "</blockquote>\n")
			i = next - 1
		default:
			para = append(para, t)
		}
	}
	flush()
	return b.String()
}

// run is the trimmed lines from i on while in holds, and the index after.
func run(lines []string, i int, in func(string) bool) ([]string, int) {
	var out []string
	for ; i < len(lines); i++ {
		t := strings.TrimSpace(lines[i])
		if !in(t) {
			break
		}
		out = append(out, t)
	}
	return out, i
}

// fence writes the fenced code block opening at line i, escaped, and
// returns the index of its closing fence.
func fence(b *strings.Builder, lines []string, i int) int {
	b.WriteString("<pre><code>")
	for i++; i < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i]), "```"); i++ {
		b.WriteString(html.EscapeString(lines[i]) + "\n")
	}
	b.WriteString("</code></pre>\n")
	return i
}

// heading writes a #…#### heading.
func heading(b *strings.Builder, t, dir string) {
	n := min(len(t)-len(strings.TrimLeft(t, "#")), 4)
	tag := "h" + string(rune('0'+n))
	b.WriteString("<" + tag + ">" + inline(strings.TrimSpace(strings.TrimLeft(t, "#")), dir) + "</" + tag + ">\n")
}

// table renders pipe-table rows; the second row, if it is the |---|
// separator, makes the first a header.
func table(rows []string, dir string) string {
	cells := func(r string) []string {
		r = strings.TrimSuffix(strings.TrimPrefix(r, "|"), "|")
		out := strings.Split(r, "|")
		for i := range out {
			out[i] = strings.TrimSpace(out[i])
		}
		return out
	}
	var b strings.Builder
	b.WriteString("<div class=\"table\"><table>\n")
	body := rows
	if len(rows) > 1 && separatorRow.MatchString(rows[1]) {
		b.WriteString("<thead><tr>")
		for _, c := range cells(rows[0]) {
			b.WriteString("<th>" + inline(c, dir) + "</th>")
		}
		b.WriteString("</tr></thead>\n")
		body = rows[2:]
	}
	b.WriteString("<tbody>\n")
	for _, r := range body {
		b.WriteString("<tr>")
		for _, c := range cells(r) {
			b.WriteString("<td>" + inline(c, dir) + "</td>")
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</tbody></table></div>\n")
	return b.String()
}

var (
	separatorRow = regexp.MustCompile(`^\|(\s*:?-{3,}:?\s*\|)+$`)
	imageRe      = regexp.MustCompile(`!\[([^\]]*)\]\(([^)\s]+)\)`)
	linkRe       = regexp.MustCompile(`\[([^\]]+)\]\(([^)\s]+)\)`)
	codeRe       = regexp.MustCompile("`([^`]+)`")
	boldRe       = regexp.MustCompile(`\*\*([^*]+)\*\*`)
	italicRe     = regexp.MustCompile(`(^|[^*\w])\*([^*\s][^*]*)\*`)
)

// inline escapes s and renders its code spans, images, links, bold and
// italics. Code spans are set aside first so that nothing inside them is
// read as markup.
func inline(s, dir string) string {
	s = html.EscapeString(s)
	var codes []string
	s = codeRe.ReplaceAllStringFunc(s, func(m string) string {
		codes = append(codes, "<code>"+codeRe.FindStringSubmatch(m)[1]+"</code>")
		return "\x00" + string(rune(len(codes)-1+'0')) + "\x00"
	})
	s = imageRe.ReplaceAllStringFunc(s, func(m string) string {
		g := imageRe.FindStringSubmatch(m)
		u, ok := target(g[2], dir)
		if !ok {
			return g[1]
		}
		return `<img alt="` + g[1] + `" src="` + u + `">`
	})
	s = linkRe.ReplaceAllStringFunc(s, func(m string) string {
		g := linkRe.FindStringSubmatch(m)
		u, ok := target(g[2], dir)
		if !ok {
			return g[1]
		}
		return `<a href="` + u + `">` + g[1] + `</a>`
	})
	s = boldRe.ReplaceAllString(s, "<strong>$1</strong>")
	s = italicRe.ReplaceAllString(s, "$1<em>$2</em>")
	for i, c := range codes {
		s = strings.Replace(s, "\x00"+string(rune(i+'0'))+"\x00", c, 1)
	}
	return s
}

// target is a link or image target as a URL the page may use: http(s) as
// it is, a path relative to dir as /files/PATH when it stays under the
// results root; ok is false for anything else (javascript:, absolute
// paths, ../ out of the root).
func target(u, dir string) (string, bool) {
	raw := html.UnescapeString(u)
	if strings.HasPrefix(raw, "https://") || strings.HasPrefix(raw, "http://") {
		return u, true
	}
	if strings.Contains(raw, ":") || strings.HasPrefix(raw, "/") || strings.ContainsAny(raw, "\\\x00") {
		return "", false
	}
	p := path.Clean(path.Join(dir, raw))
	if p == ".." || strings.HasPrefix(p, "../") {
		return "", false
	}
	return html.EscapeString("/files/" + p), true
}
