// Where the checked expressions come from: Prometheus rule files (alerts and recording rules,
// with the labels their annotations print) and Grafana dashboard JSON (panel targets with the
// labels their legends print, and `label_values` template variables). I/O: reads the files.
package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
)

var (
	annotationLabel = regexp.MustCompile(`\$labels\.([A-Za-z_][A-Za-z0-9_]*)`)
	legendLabel     = regexp.MustCompile(`\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}`)
	labelValues     = regexp.MustCompile(`^\s*label_values\((.*),\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$`)
)

func ruleExpressions(file string) ([]checked, error) {
	groups, errs := rulefmt.ParseFile(file, false, model.UTF8Validation, promql, slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s: %v", file, errs)
	}
	var out []checked
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			name := r.Alert
			if name == "" {
				name = r.Record
			}
			e := checked{where: fmt.Sprintf("%s: rule %s", filepath.Base(file), name), expr: r.Expr}
			for _, text := range r.Annotations {
				for _, m := range annotationLabel.FindAllStringSubmatch(text, -1) {
					e.printed = append(e.printed, m[1])
				}
			}
			out = append(out, e)
		}
	}
	return out, nil
}

func dashboardExpressions(file string) ([]checked, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var dash map[string]any
	if err := json.Unmarshal(data, &dash); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	base := filepath.Base(file)
	var out []checked
	var panels func(list any)
	panels = func(list any) {
		items, _ := list.([]any)
		for _, item := range items {
			p, _ := item.(map[string]any)
			title, _ := p["title"].(string)
			targets, _ := p["targets"].([]any)
			for _, t := range targets {
				target, _ := t.(map[string]any)
				expr, _ := target["expr"].(string)
				if expr == "" {
					continue
				}
				ref, _ := target["refId"].(string)
				e := checked{where: fmt.Sprintf("%s: panel %q target %s", base, title, ref), expr: expr}
				legend, _ := target["legendFormat"].(string)
				for _, m := range legendLabel.FindAllStringSubmatch(legend, -1) {
					e.printed = append(e.printed, m[1])
				}
				out = append(out, e)
			}
			panels(p["panels"]) // rows hold panels of their own
		}
	}
	panels(dash["panels"])

	templating, _ := dash["templating"].(map[string]any)
	vars, _ := templating["list"].([]any)
	for _, v := range vars {
		variable, _ := v.(map[string]any)
		if variable["type"] != "query" {
			continue
		}
		query, _ := variable["query"].(string)
		if q, ok := variable["query"].(map[string]any); ok {
			query, _ = q["query"].(string)
		}
		m := labelValues.FindStringSubmatch(query)
		if m == nil {
			out = append(out, checked{where: fmt.Sprintf("%s: variable %v", base, variable["name"]), expr: "label_values form expected: " + query})
			continue
		}
		out = append(out, checked{
			where:   fmt.Sprintf("%s: variable %v", base, variable["name"]),
			expr:    strings.TrimSpace(m[1]),
			labelOf: m[2],
		})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no PromQL expressions found", file)
	}
	return out, nil
}
