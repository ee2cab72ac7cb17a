package network

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
)

// GatewayIP is the bridge address every pod routes through.
const GatewayIP = "10.244.0.1"

// Names derives the per-pod namespace and host-side veth names from the pod UID.
type Names struct {
	Netns string // <prefix><12 hex>
	Veth  string // v<12 hex>, host side
}

// NamesFor returns the names of the pod with uid.
func NamesFor(prefix, uid string) Names {
	id := strings.ReplaceAll(uid, "-", "")
	if len(id) > 12 {
		id = id[:12]
	}
	return Names{Netns: prefix + id, Veth: "v" + id}
}

// Config says how pods attach to the node.
type Config struct {
	Bridge    string // bridge in the agent's netns
	PrefixLen int    // length of the bridge subnet (16 for lcbr0's 10.244.0.0/16)
	Gateway   string
}

// Setup creates the pod's netns and veth pair; it is idempotent so a restarted agent can call it again.
func (c Config) Setup(ctx context.Context, n Names, ip netip.Addr) error {
	if !Exists(n.Netns) {
		if err := run(ctx, "ip", "netns", "add", n.Netns); err != nil {
			return err
		}
	}
	if !linkExists(ctx, "", n.Veth) {
		// A stale pod-side end can only be in the pod netns; recreate the pair from scratch.
		_ = run(ctx, "ip", "-n", n.Netns, "link", "del", "eth0")
		if err := run(ctx, "ip", "link", "add", n.Veth, "type", "veth", "peer", "name", "eth0", "netns", n.Netns); err != nil {
			return err
		}
	}
	steps := [][]string{
		{"ip", "link", "set", n.Veth, "master", c.Bridge},
		{"ip", "link", "set", n.Veth, "up"},
		{"ip", "-n", n.Netns, "link", "set", "lo", "up"},
		{"ip", "-n", n.Netns, "addr", "replace", fmt.Sprintf("%s/%d", ip, c.PrefixLen), "dev", "eth0"},
		{"ip", "-n", n.Netns, "link", "set", "eth0", "up"},
		{"ip", "-n", n.Netns, "route", "replace", "default", "via", c.Gateway},
	}
	for _, s := range steps {
		if err := run(ctx, s[0], s[1:]...); err != nil {
			return err
		}
	}
	return nil
}

// Teardown deletes the pod's netns; its veth pair goes with it.
func Teardown(ctx context.Context, n Names) error {
	if linkExists(ctx, "", n.Veth) {
		_ = run(ctx, "ip", "link", "del", n.Veth)
	}
	if !Exists(n.Netns) {
		return nil
	}
	return run(ctx, "ip", "netns", "del", n.Netns)
}

// Exists reports whether the named netns exists.
func Exists(name string) bool {
	_, err := os.Stat("/run/netns/" + name)
	return err == nil
}

func linkExists(ctx context.Context, netns, link string) bool {
	args := []string{"link", "show", "dev", link}
	if netns != "" {
		args = append([]string{"-n", netns}, args...)
	}
	return exec.CommandContext(ctx, "ip", args...).Run() == nil
}

func run(ctx context.Context, name string, args ...string) error {
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return nil
}
