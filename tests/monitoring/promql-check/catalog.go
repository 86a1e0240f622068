// The metrics a live target exports: series names and their label names, read from a real
// scrape with Prometheus' own exposition parser. I/O: HTTP GET of the /metrics URL.
package main

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"time"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
)

// series is what one exported series name offers to a query.
type series struct {
	labels map[string]bool // label names seen on samples, target labels included
	source string          // the URL it was scraped from
}

type catalog struct {
	series    map[string]*series
	families  map[string]string // family name (TYPE line) -> URL, to explain series never sampled
	exemplars map[string]int    // URL -> exemplars with a trace_id label that the parser accepted
}

func newCatalog() *catalog {
	return &catalog{series: map[string]*series{}, families: map[string]string{}, exemplars: map[string]int{}}
}

// Series that Prometheus itself adds to every target.
var synthetic = []string{"up", "scrape_duration_seconds", "scrape_samples_scraped"}

func (c *catalog) scrape(url string, target []string) error {
	client := http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %s", resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	p, err := textparse.New(body, resp.Header.Get("Content-Type"), labels.NewSymbolTable(),
		textparse.ParserOptions{OpenMetricsSkipSTSeries: true, FallbackContentType: "text/plain"})
	if p == nil {
		return fmt.Errorf("no parser for content type %q: %v", resp.Header.Get("Content-Type"), err)
	}
	add := func(name string, names []string) {
		s := c.series[name]
		if s == nil {
			s = &series{labels: map[string]bool{}, source: url}
			for _, l := range target {
				s.labels[l] = true
			}
			c.series[name] = s
		}
		for _, l := range names {
			s.labels[l] = true
		}
	}
	for _, name := range synthetic {
		add(name, nil)
	}
	samples := 0
	for {
		entry, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("parse: %w", err)
		}
		switch entry {
		case textparse.EntryType:
			name, _ := p.Type()
			c.families[string(name)] = url
		case textparse.EntrySeries, textparse.EntryHistogram:
			var lbls labels.Labels
			p.Labels(&lbls)
			var names []string
			lbls.Range(func(l labels.Label) {
				if l.Name != labels.MetricName {
					names = append(names, l.Name)
				}
			})
			add(lbls.Get(labels.MetricName), names)
			samples++
			var e exemplar.Exemplar
			for p.Exemplar(&e) {
				if e.Labels.Get("trace_id") != "" {
					c.exemplars[url]++
				}
				e = exemplar.Exemplar{}
			}
		}
	}
	if samples == 0 {
		return fmt.Errorf("no samples")
	}
	return nil
}

// unsampled explains a series name the scrape did not show: a family with no series yet.
func (c *catalog) unsampled(name string) string {
	for family, url := range c.families {
		for _, suffix := range []string{"", "_total", "_bucket", "_sum", "_count"} {
			if family+suffix == name {
				return fmt.Sprintf(" (family %s is declared by %s but had no series: the test must exercise it)", family, url)
			}
		}
	}
	return ""
}

func sorted(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
