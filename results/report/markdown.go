package report

import (
	"html"
	"html/template"
	"regexp"
	"strings"
)

// markdownHTML renders the subset of Markdown the column documentation
// (aggregate.ColumnsDoc) uses — headings, paragraphs, fenced code, pipe
// tables, inline code and bold — as HTML for the report page, so that a
// reader gets its tables as tables. Everything is escaped first; only the
// tags made here are markup.
func markdownHTML(md string) template.HTML {
	var b strings.Builder
	lines := strings.Split(md, "\n")
	var para []string
	flush := func() {
		if len(para) > 0 {
			b.WriteString("<p>" + inline(strings.Join(para, " ")) + "</p>\n")
			para = nil
		}
	}
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(t, "```"):
			flush()
			var code []string
			for i++; i < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i]), "```"); i++ {
				code = append(code, lines[i])
			}
			b.WriteString("<pre>" + html.EscapeString(strings.Join(code, "\n")) + "</pre>\n")
		case strings.HasPrefix(t, "#"):
			flush()
			level := len(t) - len(strings.TrimLeft(t, "#"))
			tag := []string{"h3", "h3", "h4", "h5", "h6", "h6", "h6"}[min(level, 6)]
			b.WriteString("<" + tag + ">" + inline(strings.TrimSpace(t[level:])) + "</" + tag + ">\n")
		case strings.HasPrefix(t, "|"):
			flush()
			b.WriteString("<table class=\"doc\">\n")
			row := 0
			for ; i < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i]), "|"); i++ {
				cells := splitRow(strings.TrimSpace(lines[i]))
				if row == 1 && isSeparator(cells) {
					row++
					continue
				}
				tag := "td"
				if row == 0 {
					tag = "th"
				}
				b.WriteString("<tr>")
				for _, c := range cells {
					b.WriteString("<" + tag + ">" + inline(c) + "</" + tag + ">")
				}
				b.WriteString("</tr>\n")
				row++
			}
			i--
			b.WriteString("</table>\n")
		case t == "":
			flush()
		default:
			para = append(para, t)
		}
	}
	flush()
	return template.HTML(b.String())
}

// splitRow splits a pipe-table row into its cells; a pipe inside `code`
// does not split.
func splitRow(row string) []string {
	row = strings.TrimSuffix(strings.TrimPrefix(row, "|"), "|")
	var cells []string
	var cur strings.Builder
	inCode := false
	for _, r := range row {
		switch {
		case r == '`':
			inCode = !inCode
			cur.WriteRune(r)
		case r == '|' && !inCode:
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteRune(r)
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

func isSeparator(cells []string) bool {
	for _, c := range cells {
		if strings.Trim(c, "-: ") != "" {
			return false
		}
	}
	return true
}

var (
	codeRE = regexp.MustCompile("`([^`]+)`")
	boldRE = regexp.MustCompile(`\*\*([^*]+)\*\*`)
)

// inline escapes s and renders `code` and **bold**.
func inline(s string) string {
	var b strings.Builder
	last := 0
	for _, m := range codeRE.FindAllStringSubmatchIndex(s, -1) {
		b.WriteString(boldRE.ReplaceAllString(html.EscapeString(s[last:m[0]]), "<strong>$1</strong>"))
		b.WriteString("<code>" + html.EscapeString(s[m[2]:m[3]]) + "</code>")
		last = m[1]
	}
	b.WriteString(boldRE.ReplaceAllString(html.EscapeString(s[last:]), "<strong>$1</strong>"))
	// Bold around code (**`inf`**): the code was split out first.
	out := strings.ReplaceAll(b.String(), "**<code>", "<strong><code>")
	return strings.ReplaceAll(out, "</code>**", "</code></strong>")
}
