package etcdaccess

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cozystack/etcd-operator/operator/internal/topology"
)

// committedMetric is the gauge etcd exports with its committed raft index.
const committedMetric = "etcd_server_proposals_committed_total"

func committedIndex(ctx context.Context, dial topology.DialFunc, url string) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	hc := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) { return dial(ctx, network, addr) },
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s: %s", url, resp.Status)
	}
	return parseCommitted(bufio.NewScanner(resp.Body))
}

// parseCommitted finds the committed index in Prometheus text exposition.
func parseCommitted(sc *bufio.Scanner) (uint64, error) {
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, committedMetric+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return 0, err
			}
			return uint64(f), nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no %s in the metrics", committedMetric)
}
