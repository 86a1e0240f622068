// promql-check: fails when a shipped dashboard or alert rule names a metric or label that a live
// mcp-runtime or mcp-operator does not export.
//
// It scrapes the given /metrics URLs (I/O: HTTP GETs to them), parses every PromQL expression of
// the rule files and Grafana dashboards with Prometheus' own parser, and checks each vector
// selector's metric and matcher labels, every `by`/`without`/`on`/`ignoring`/`group_*` label,
// the labels that legends and alert annotations print, and `label_values` template variables.
//
// Usage: promql-check -scrape URL[|LABEL,...] ... -rules FILE ... -dashboard FILE ...
// The labels after `|` are the ones a Prometheus scrape of that target adds (target labels).
// It prints `# exemplars URL N`: the exemplars with a `trace_id` each scrape held.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	var scrapes, rules, dashboards listFlag
	flag.Var(&scrapes, "scrape", "a /metrics URL, optionally followed by |LABEL,... (target labels); repeatable")
	flag.Var(&rules, "rules", "a Prometheus rule file; repeatable")
	flag.Var(&dashboards, "dashboard", "a Grafana dashboard JSON file; repeatable")
	flag.Parse()
	if len(scrapes) == 0 || len(rules)+len(dashboards) == 0 {
		fmt.Fprintln(os.Stderr, "usage: promql-check -scrape URL[|LABEL,...] ... (-rules FILE | -dashboard FILE) ...")
		os.Exit(2)
	}

	catalog := newCatalog()
	for _, s := range scrapes {
		url, labels, _ := strings.Cut(s, "|")
		var target []string
		if labels != "" {
			target = strings.Split(labels, ",")
		}
		if err := catalog.scrape(url, target); err != nil {
			fmt.Fprintf(os.Stderr, "scrape %s: %v\n", url, err)
			os.Exit(1)
		}
		// Exemplars (OpenMetrics), as Prometheus' parser read them: a trace link per bucket.
		fmt.Printf("# exemplars %s %d\n", url, catalog.exemplars[url])
	}

	var exprs []checked
	for _, file := range rules {
		found, err := ruleExpressions(file)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%v\n", err)
			os.Exit(1)
		}
		exprs = append(exprs, found...)
	}
	for _, file := range dashboards {
		found, err := dashboardExpressions(file)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%v\n", err)
			os.Exit(1)
		}
		exprs = append(exprs, found...)
	}

	failed := 0
	for _, e := range exprs {
		problems := catalog.check(e)
		if len(problems) == 0 {
			fmt.Printf("ok - %s\n", e.where)
			continue
		}
		failed++
		fmt.Printf("not ok - %s\n    expr: %s\n", e.where, e.expr)
		for _, p := range problems {
			fmt.Printf("    %s\n", p)
		}
	}
	fmt.Printf("%d passed, %d failed\n", len(exprs)-failed, failed)
	if failed > 0 || len(exprs) == 0 {
		os.Exit(1)
	}
}
