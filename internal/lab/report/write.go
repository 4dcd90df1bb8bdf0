package report

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Write writes into out (created if needed): report.md, report.html (self-
// contained: the plots are embedded as base64 SVG), and plots/NAME.png and
// plots/NAME.svg for every plot (see the package doc). It fails only on
// I/O or when runs is empty; whatever a run's Report lacks is shown as
// n/a.
func Write(out string, runs []Run) error {
	if len(runs) == 0 {
		return ErrNoRuns
	}
	labels := runLabels(runs)
	cols := columns(runs, labels)
	tabs := tables(runs)
	figs, err := writeFigures(out, charts(runs, labels, cols))
	if err != nil {
		return err
	}
	// A sweep plot left by an earlier report into out would pass for this
	// one's.
	for _, name := range sweepPlotNames {
		if slices.ContainsFunc(figs, func(f figure) bool { return f.name == name }) {
			continue
		}
		for _, ext := range []string{"png", "svg"} {
			path := filepath.Join(out, "plots", name+"."+ext)
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("report: remove stale %s: %w", path, err)
			}
		}
	}
	return writePages(out, "cosla measure: "+strings.Join(labels, " vs "), measureIntro, tabs, figs)
}

// measureIntro opens the report of Write.
const measureIntro = "Consumer-side consistency after Wada et al. (CIDR'11) and the Gamma metric (Golab et al.; CPQ 2). " +
	"\"n/a\" marks a figure a run does not have."

// writePages writes out/report.md and out/report.html: the title, the
// intro, the tables and the plots.
func writePages(out, title, intro string, tabs []table, figs []figure) error {
	if err := writeFileAtomic(filepath.Join(out, "report.md"), markdown(title, intro, tabs, figs)); err != nil {
		return err
	}
	page, err := htmlPage(title, intro, tabs, figs)
	if err != nil {
		return fmt.Errorf("report: write %s: %w", filepath.Join(out, "report.html"), err)
	}
	return writeFileAtomic(filepath.Join(out, "report.html"), page)
}

// writeFigures renders the charts, then writes out/plots/NAME.png and
// .svg of each figure; it returns the figures.
func writeFigures(out string, charts []chart) ([]figure, error) {
	figs := make([]figure, 0, len(charts))
	for _, c := range charts {
		fig, err := render(c)
		if err != nil {
			return nil, err
		}
		figs = append(figs, fig)
	}
	for _, fig := range figs {
		for ext, data := range map[string][]byte{"png": fig.png, "svg": fig.svg} {
			if err := writeFileAtomic(filepath.Join(out, "plots", fig.name+"."+ext), data); err != nil {
				return nil, err
			}
		}
	}
	return figs, nil
}

// markdown renders the tables and links the PNG plots.
func markdown(title, intro string, tabs []table, figs []figure) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s\n\n%s\n", markdownCell(title), markdownCell(intro))
	for _, t := range tabs {
		fmt.Fprintf(&b, "\n## %s\n\n", markdownCell(t.title))
		if t.note != "" {
			fmt.Fprintf(&b, "%s\n\n", markdownCell(t.note))
		}
		cells := make([]string, len(t.header))
		for i, h := range t.header {
			cells[i] = markdownCell(h)
		}
		fmt.Fprintf(&b, "| %s |\n", strings.Join(cells, " | "))
		fmt.Fprintf(&b, "|%s\n", strings.Repeat(" --- |", len(t.header)))
		for _, r := range t.rows {
			if r.section != "" {
				// Markdown tables have no spanning cells: a bold first cell.
				empty := strings.Repeat(" |", len(t.header)-1)
				fmt.Fprintf(&b, "| **%s** |%s\n", markdownCell(r.section), empty)
				continue
			}
			for i, c := range r.cells {
				cells[i] = markdownCell(c)
			}
			fmt.Fprintf(&b, "| %s |\n", strings.Join(cells[:len(r.cells)], " | "))
		}
	}
	b.WriteString("\n## Plots\n")
	for _, f := range figs {
		fmt.Fprintf(&b, "\n### %s\n\n![%s](plots/%s.png)\n\n[SVG](plots/%s.svg)", markdownCell(f.title), markdownCell(f.title), f.name, f.name)
		if f.caption != "" {
			fmt.Fprintf(&b, " %s", markdownCell(f.caption))
		}
		b.WriteString("\n")
	}
	return b.Bytes()
}

// htmlTable and htmlFigure are what the page template sees.
type htmlTable struct {
	ID, Title, Note string
	Header          []string
	Rows            []row
	Span            int
}

type htmlFigure struct {
	Name, Title, Caption string
	// Src is a data: URL built here from the plot's own SVG, not from a
	// run's strings (the SVG escapes those), so it is safe as a URL.
	Src template.URL
}

// Sections of a table reach the template through these methods, as row's
// fields are unexported.
func (r row) Section() string { return r.section }
func (r row) Cells() []string { return r.cells }

var pageTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.Title}}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: left; vertical-align: top; }
thead th { background: #f0f0f0; }
th.section { background: #e4ecf7; }
figure { margin: 1.5em 0; }
figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption, p.note { color: #555; font-size: 0.9em; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p>{{.Intro}}</p>
{{range .Tables}}
<h2 id="{{.ID}}">{{.Title}}</h2>
{{if .Note}}<p class="note">{{.Note}}</p>{{end}}
<table>
<thead><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>
{{- $span := .Span}}
{{range .Rows}}{{if .Section}}<tr><th class="section" colspan="{{$span}}">{{.Section}}</th></tr>
{{else}}<tr>{{range .Cells}}<td>{{.}}</td>{{end}}</tr>
{{end}}{{end}}</tbody>
</table>
{{end}}
<h2 id="plots">Plots</h2>
{{range .Figures}}
<figure id="plot-{{.Name}}">
<img src="{{.Src}}" alt="{{.Title}}">
<figcaption>{{.Title}}{{if .Caption}}. {{.Caption}}{{end}} Files: plots/{{.Name}}.png, plots/{{.Name}}.svg.</figcaption>
</figure>
{{end}}
</body>
</html>
`))

// htmlPage renders the tables and embeds the SVG plots. html/template
// escapes every string, so a run named "<script>" stays text.
func htmlPage(title, intro string, tabs []table, figs []figure) ([]byte, error) {
	data := struct {
		Title, Intro string
		Tables       []htmlTable
		Figures      []htmlFigure
	}{Title: title, Intro: intro}
	for _, t := range tabs {
		data.Tables = append(data.Tables, htmlTable{ID: t.id, Title: t.title, Note: t.note, Header: t.header, Rows: t.rows, Span: len(t.header)})
	}
	for _, f := range figs {
		data.Figures = append(data.Figures, htmlFigure{Name: f.name, Title: f.title, Caption: f.caption,
			Src: template.URL("data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString(f.svg))})
	}
	var b bytes.Buffer
	if err := pageTemplate.Execute(&b, data); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
