package etcdaccess

import (
	"bufio"
	"strings"
	"testing"
)

func TestParseCommitted(t *testing.T) {
	text := "# HELP etcd_server_proposals_committed_total The total number of consensus proposals committed.\n" +
		"# TYPE etcd_server_proposals_committed_total gauge\n" +
		"etcd_server_proposals_committed_total 4242\n" + "etcd_server_proposals_applied_total 4241\n"
	got, err := parseCommitted(bufio.NewScanner(strings.NewReader(text)))
	if err != nil || got != 4242 {
		t.Errorf("got %d, %v; want 4242", got, err)
	}
	if _, err := parseCommitted(bufio.NewScanner(strings.NewReader("other 1\n"))); err == nil {
		t.Error("no metric: no error")
	}
}
