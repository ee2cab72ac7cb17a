//go:build e2e

package reliability

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// tableEnv names a file the campaigns' table is also written to (`make soak` prints it).
const tableEnv = "RELIABILITY_TABLE"

// row is what one campaign reports.
type row struct {
	Campaign          string
	Faults, Ops       int
	Unknown, Lost     int
	Linearizable      bool
	Slowest           time.Duration
	Checked, Complete bool
}

func (r row) String() string {
	return fmt.Sprintf("%d faults, %d operations, %d unknown outcomes, linearizable %s, %d acknowledged writes lost, slowest convergence %s",
		r.Faults, r.Ops, r.Unknown, r.linearizable(), r.Lost, r.Slowest.Round(100*time.Millisecond))
}

// linearizable says yes or no, or why there is no verdict.
func (r row) linearizable() string {
	switch {
	case !r.Checked:
		return "not checked (failed before)"
	case !r.Linearizable:
		return "NO"
	case !r.Complete:
		return "yes (so far; failed later)"
	}
	return "yes"
}

// table collects the campaigns' rows for TestMain.
type table struct {
	mu   sync.Mutex
	rows []row
}

var results table

func (t *table) add(r row) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rows = append(t.rows, r)
}

// markdown renders the rows; empty when no campaign ran.
func (t *table) markdown() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.rows) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("| campaign | faults injected | operations | unknown outcomes | linearizable | acknowledged writes lost | max time to converge |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, r := range t.rows {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %s | %d | %s |\n",
			r.Campaign, r.Faults, r.Ops, r.Unknown, r.linearizable(), r.Lost, r.Slowest.Round(100*time.Millisecond))
	}
	return b.String()
}

// report prints the table, and writes it to $RELIABILITY_TABLE when set.
func (t *table) report() error {
	md := t.markdown()
	if md == "" {
		return nil
	}
	faults := "each campaign's short count"
	if n := os.Getenv(faultsEnv); n != "" {
		faults = faultsEnv + "=" + n
	}
	fmt.Printf("\nreliability campaigns (%s):\n\n%s\n", faults, md)
	if path := os.Getenv(tableEnv); path != "" {
		return os.WriteFile(path, []byte(md), 0o644)
	}
	return nil
}
