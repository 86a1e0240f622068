// Checks one PromQL expression against the catalog: walks Prometheus' AST, computing the labels
// each sub-expression's result can carry, so every label a query names (matchers, grouping,
// vector matching, label_replace sources, legends, annotations) is one that really exists. Pure.
package main

import (
	"fmt"
	"regexp"

	"github.com/prometheus/prometheus/promql/parser"
)

// checked is one expression of a rule file or dashboard, with the labels its output must carry
// (a legend's {{label}}, an annotation's $labels.label).
type checked struct {
	where   string
	expr    string
	printed []string
	// labelOf, when set, is a label the expression's result must carry (label_values).
	labelOf string
}

var promql = parser.NewParser(parser.Options{})

// Grafana's interval variables cannot be parsed as PromQL; any real duration stands in for them.
var grafanaIntervals = regexp.MustCompile(`\$(__rate_interval|__interval|__range)\b|\$\{(__rate_interval|__interval|__range)\}`)

// labelSet holds the label names a result can carry; nil means unknown (an error was already
// reported below it), so nothing above it is reported again.
type labelSet map[string]bool

func (c *catalog) check(e checked) []string {
	expr, err := promql.ParseExpr(grafanaIntervals.ReplaceAllString(e.expr, "5m"))
	if err != nil {
		return []string{fmt.Sprintf("does not parse: %v", err)}
	}
	w := walker{catalog: c}
	out := w.labels(expr)
	if out == nil {
		return w.problems
	}
	for _, l := range e.printed {
		if !out[l] {
			w.problem("prints label %q, which the result does not carry (it has %v)", l, sorted(out))
		}
	}
	if e.labelOf != "" && !out[e.labelOf] {
		w.problem("asks for values of label %q, which the series do not carry (they have %v)", e.labelOf, sorted(out))
	}
	return w.problems
}

type walker struct {
	catalog  *catalog
	problems []string
}

func (w *walker) problem(format string, args ...any) {
	w.problems = append(w.problems, fmt.Sprintf(format, args...))
}

// labels returns the label names the result of node can carry, recording every unknown name.
func (w *walker) labels(node parser.Node) labelSet {
	switch n := node.(type) {
	case *parser.VectorSelector:
		return w.selector(n)
	case *parser.MatrixSelector:
		return w.labels(n.VectorSelector)
	case *parser.SubqueryExpr:
		return w.labels(n.Expr)
	case *parser.ParenExpr:
		return w.labels(n.Expr)
	case *parser.UnaryExpr:
		return w.labels(n.Expr)
	case *parser.StepInvariantExpr:
		return w.labels(n.Expr)
	case *parser.NumberLiteral, *parser.StringLiteral:
		return labelSet{}
	case *parser.AggregateExpr:
		return w.aggregate(n)
	case *parser.BinaryExpr:
		return w.binary(n)
	case *parser.Call:
		return w.call(n)
	}
	w.problem("unsupported expression %T", node)
	return labelSet{}
}

func (w *walker) selector(n *parser.VectorSelector) labelSet {
	name := n.Name
	for _, m := range n.LabelMatchers {
		if m.Name == "__name__" && name == "" {
			name = m.Value
		}
	}
	s := w.catalog.series[name]
	if s == nil {
		w.problem("metric %q is not exported%s", name, w.catalog.unsampled(name))
		return nil
	}
	for _, m := range n.LabelMatchers {
		if m.Name != "__name__" && !s.labels[m.Name] {
			w.problem("metric %q has no label %q (it has %v)", name, m.Name, sorted(s.labels))
		}
	}
	return copySet(s.labels)
}

func (w *walker) aggregate(n *parser.AggregateExpr) labelSet {
	inner := w.labels(n.Expr)
	if n.Param != nil {
		w.labels(n.Param)
	}
	if inner == nil {
		return nil
	}
	for _, l := range n.Grouping {
		if !inner[l] {
			w.problem("%s groups by %q, which %s does not carry (it has %v)", n.Op, l, n.Expr, sorted(inner))
		}
	}
	out := labelSet{}
	switch {
	case n.Without:
		out = copySet(inner)
		for _, l := range n.Grouping {
			delete(out, l)
		}
	case n.Op == parser.TOPK || n.Op == parser.BOTTOMK || n.Op == parser.LIMITK || n.Op == parser.LIMIT_RATIO:
		out = copySet(inner)
	default:
		for _, l := range n.Grouping {
			out[l] = true
		}
	}
	if n.Op == parser.COUNT_VALUES {
		if s, ok := n.Param.(*parser.StringLiteral); ok {
			out[s.Val] = true
		}
	}
	return out
}

func (w *walker) binary(n *parser.BinaryExpr) labelSet {
	lhs, rhs := w.labels(n.LHS), w.labels(n.RHS)
	if lhs == nil || rhs == nil {
		return nil
	}
	if m := n.VectorMatching; m != nil && n.LHS.Type() == parser.ValueTypeVector && n.RHS.Type() == parser.ValueTypeVector {
		for _, l := range m.MatchingLabels {
			if m.On && (!lhs[l] || !rhs[l]) {
				w.problem("matches on %q, which both sides do not carry (%v / %v)", l, sorted(lhs), sorted(rhs))
			}
			if !m.On && !lhs[l] && !rhs[l] {
				w.problem("ignores %q, which neither side carries", l)
			}
		}
		one := rhs
		if m.Card == parser.CardOneToMany {
			one = lhs
		}
		for _, l := range m.Include {
			if !one[l] {
				w.problem("group_left/right copies %q, which that side does not carry (it has %v)", l, sorted(one))
			}
		}
	}
	switch {
	case n.Op == parser.LOR:
		return union(lhs, rhs)
	case n.LHS.Type() != parser.ValueTypeVector:
		return rhs
	default:
		out := copySet(lhs)
		if m := n.VectorMatching; m != nil {
			for _, l := range m.Include {
				out[l] = true
			}
		}
		return out
	}
}

func (w *walker) call(n *parser.Call) labelSet {
	var args []labelSet
	for _, a := range n.Args {
		l := w.labels(a)
		if l == nil {
			return nil
		}
		args = append(args, l)
	}
	str := func(i int) string {
		if i < len(n.Args) {
			if s, ok := n.Args[i].(*parser.StringLiteral); ok {
				return s.Val
			}
		}
		return ""
	}
	switch n.Func.Name {
	case "label_replace":
		if src := str(3); src != "" && !args[0][src] {
			w.problem("label_replace reads %q, which its input does not carry", src)
		}
		return union(args[0], labelSet{str(1): true})
	case "label_join":
		for i := 3; i < len(n.Args); i++ {
			if !args[0][str(i)] {
				w.problem("label_join reads %q, which its input does not carry", str(i))
			}
		}
		return union(args[0], labelSet{str(1): true})
	case "histogram_quantile", "histogram_fraction":
		v := args[len(args)-1]
		if !v["le"] {
			w.problem("%s needs the le label, which its input does not carry (it has %v)", n.Func.Name, sorted(v))
		}
		out := copySet(v)
		delete(out, "le")
		return out
	}
	out := labelSet{}
	for i, a := range n.Args {
		if t := a.Type(); t == parser.ValueTypeVector || t == parser.ValueTypeMatrix {
			out = union(out, args[i])
		}
	}
	return out
}

func copySet(s labelSet) labelSet {
	out := make(labelSet, len(s))
	for k := range s {
		out[k] = true
	}
	return out
}

func union(a, b labelSet) labelSet {
	out := copySet(a)
	for k := range b {
		out[k] = true
	}
	return out
}
