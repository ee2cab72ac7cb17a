package metrics

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const operationsDoc = repoRoot + "/docs/operations.md"

// TestMetricsTableMatchesTheCollector: the metrics table of docs/operations.md lists exactly the
// metrics this package's collector exports, each with its labels: a metric added, renamed or
// relabelled without the doc fails here.
func TestMetricsTableMatchesTheCollector(t *testing.T) {
	documented := documentedMetrics(t)
	exported := exportedLabels(t)
	for name, labels := range exported {
		doc, ok := documented[name]
		switch {
		case !ok:
			t.Errorf("%s is exported but not in the metrics table of %s", name, operationsDoc)
		case !slices.Equal(doc, labels):
			t.Errorf("%s: the table says labels %v, the collector exports %v", name, doc, labels)
		}
	}
	for name := range documented {
		if _, ok := exported[name]; !ok {
			t.Errorf("%s is in the metrics table but not exported", name)
		}
	}
}

var backticked = regexp.MustCompile("`([^`]+)`")

// documentedMetrics reads the table rows under "### Metrics": metric names in the first
// cell, their labels (sorted) in the second.
func documentedMetrics(t *testing.T) map[string][]string {
	t.Helper()
	data, err := os.ReadFile(operationsDoc)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n### Metrics\n")
	if !ok {
		t.Fatalf("%s has no Metrics section", operationsDoc)
	}
	out := map[string][]string{}
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "## ") {
			break
		}
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.Contains(cells[1], "`"+Prefix) {
			continue
		}
		var labels []string
		for _, m := range backticked.FindAllStringSubmatch(cells[2], -1) {
			labels = append(labels, m[1])
		}
		slices.Sort(labels)
		for _, m := range backticked.FindAllStringSubmatch(cells[1], -1) {
			out[m[1]] = labels
		}
	}
	if len(out) == 0 {
		t.Fatal("no metric rows read")
	}
	return out
}

// exportedLabels are the collector's metrics for a cluster with every kind of series, each
// with its sorted label names.
func exportedLabels(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, mf := range gatherAll(t) {
		var labels []string
		for _, l := range mf.GetMetric()[0].GetLabel() {
			labels = append(labels, l.GetName())
		}
		slices.Sort(labels)
		out[mf.GetName()] = labels
	}
	return out
}
