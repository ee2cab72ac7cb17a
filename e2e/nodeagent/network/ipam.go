// Package network gives each Pod its own network namespace, a veth on the node's bridge and an
// address of the node's pod CIDR.
package network

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
)

// IPAM hands out addresses of a /24-ish pod CIDR, one per Pod UID, and persists them in a JSON file
// so that a restarted agent gives running pods the same address. Like CNI's host-local plugin it
// goes round-robin, so a freed address is not handed out again at once (etcd peers may still be
// talking to the member that had it).
type IPAM struct {
	mu     sync.Mutex
	prefix netip.Prefix
	file   string
	byUID  map[string]netip.Addr
	last   netip.Addr
}

// ipamFile is the persisted form.
type ipamFile struct {
	Last  string            `json:"last,omitempty"`
	ByUID map[string]string `json:"byUID"`
}

// NewIPAM loads the allocations kept in file (missing file: none yet).
func NewIPAM(cidr, file string) (*IPAM, error) {
	prefix, err := netip.ParsePrefix(cidr)
	if err != nil || !prefix.Addr().Is4() {
		return nil, fmt.Errorf("pod CIDR %q: want an IPv4 prefix: %v", cidr, err)
	}
	m := &IPAM{prefix: prefix.Masked(), file: file, byUID: map[string]netip.Addr{}}
	data, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return nil, err
	}
	var saved ipamFile
	if err := json.Unmarshal(data, &saved); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	for uid, s := range saved.ByUID {
		if a, err := netip.ParseAddr(s); err == nil && m.prefix.Contains(a) {
			m.byUID[uid] = a
		}
	}
	if a, err := netip.ParseAddr(saved.Last); err == nil && m.prefix.Contains(a) {
		m.last = a
	}
	return m, nil
}

// Allocate returns the address of uid, choosing the lowest free one on first use.
func (m *IPAM) Allocate(uid string) (netip.Addr, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if a, ok := m.byUID[uid]; ok {
		return a, nil
	}
	used := map[netip.Addr]bool{}
	for _, a := range m.byUID {
		used[a] = true
	}
	a := m.last
	if !a.IsValid() {
		a = m.prefix.Addr()
	}
	size := 1 << (32 - m.prefix.Bits())
	for i := 0; i < size; i++ {
		if a = a.Next(); !m.prefix.Contains(a) {
			a = m.prefix.Addr()
		}
		if reserved(a) || used[a] {
			continue
		}
		m.byUID[uid] = a
		prevLast := m.last
		m.last = a
		if err := m.save(); err != nil {
			delete(m.byUID, uid)
			m.last = prevLast
			return netip.Addr{}, err
		}
		return a, nil
	}
	return netip.Addr{}, fmt.Errorf("pod CIDR %s is exhausted", m.prefix)
}

// Release frees the address of uid.
func (m *IPAM) Release(uid string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.byUID[uid]; !ok {
		return nil
	}
	delete(m.byUID, uid)
	return m.save()
}

// Retain releases the addresses of every UID not in live (pods deleted while no agent ran).
func (m *IPAM) Retain(live map[string]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	changed := false
	for uid := range m.byUID {
		if !live[uid] {
			delete(m.byUID, uid)
			changed = true
		}
	}
	if changed {
		_ = m.save()
	}
}

// reserved are .0 (network), .1 (the node itself) and .255 (broadcast of a /24).
func reserved(a netip.Addr) bool {
	last := a.As4()[3]
	return last == 0 || last == 1 || last == 255
}

func (m *IPAM) save() error {
	out := ipamFile{ByUID: make(map[string]string, len(m.byUID))}
	for uid, a := range m.byUID {
		out.ByUID[uid] = a.String()
	}
	if m.last.IsValid() {
		out.Last = m.last.String()
	}
	data, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(m.file), 0o700); err != nil {
		return err
	}
	tmp := m.file + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, m.file)
}
